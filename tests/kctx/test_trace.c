/*
 * test_trace.c — trace collection from init to close (K32): resident
 * buffers only when enabled, captured launches traced on every replay, a
 * full ring drops and counts, a flushed ring wraps (the consumer index is
 * written back), copy-back before release, write failures in
 * the teardown slot, flush, and the fault sweep over the trace's creation
 * and copy-back.
 */
#include "kt.h"

/* The runtime image's layout (the device ring's indices), read here from
 * device memory as the device programs see it. */
#include <kctx/rt_layout.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void trace_path(char *buf, size_t n, const char *tag) {
    snprintf(buf, n, "/tmp/kctx-test-trace-%d-%s.json", (int)getpid(), tag);
    unlink(buf);
}

static kctx_kernel_config trace_config(const char *path, uint32_t device_records) {
    kctx_kernel_config cfg = kt_config(10000);
    cfg.flags = KCTX_TRACE_ENABLE;
    cfg.trace_path = path;
    cfg.trace_device_records = device_records;
    return cfg;
}

static void launch_noop(kctx_context c, uint64_t id, sim_stream s) {
    CHECK_OK(kctx_launch(c, id, NULL, 0, s));
}

KT_TEST(tracing_off_allocates_nothing_and_launches_make_the_same_platform_calls) { /* K32, K11 */
    kt_image noop = kt_image_noop();
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    uint64_t calls[2] = {0, 0}, allocs[2] = {0, 0};
    char path[128];
    trace_path(path, sizeof path, "calls");
    for (int on = 0; on < 2; on++) {
        kctx_context c = kt_create();
        REQUIRE(c);
        kctx_kernel_config cfg = on ? trace_config(path, 1024) : kt_config(10000);
        uint64_t before = 0, after = 0;
        CHECK_SIM_OK(sim_mem_stats(0, &before, NULL));
        REQUIRE_OK(kctx_kernel_init(c, &cfg));
        CHECK_SIM_OK(sim_mem_stats(0, &after, NULL));
        allocs[on] = after - before;
        REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
        launch_noop(c, 1, s); /* warm */
        CHECK_SIM_OK(sim_stream_synchronize(s));
        sim_thread_calls_reset();
        launch_noop(c, 1, s);
        calls[on] = sim_thread_calls(SIM_OP_ANY);
        CHECK_SIM_OK(sim_stream_synchronize(s));
        kt_finish(c);
    }
    /* tracing adds exactly one resident device allocation (the ring) and no
     * platform call to a launch */
    CHECK_EQ(allocs[1], allocs[0] + 1);
    CHECK_EQ(calls[1], calls[0]);
    CHECK_SIM_OK(sim_stream_destroy(s));
    unlink(path);
}

KT_TEST(a_captured_launch_replayed_n_times_shows_n_device_runs) { /* K32 */
    kt_image noop = kt_image_noop();
    char path[128];
    trace_path(path, sizeof path, "replay");
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = trace_config(path, 4096);
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    REQUIRE_OK(kctx_prepare(c, 7, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_graph g = 0;
    sim_graph_exec x = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    launch_noop(c, 7, s);
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    CHECK_SIM_OK(sim_graph_instantiate(&x, g));
    enum {
        REPLAYS = 5
    };
    for (int i = 0; i < REPLAYS; i++) CHECK_SIM_OK(sim_graph_launch(x, s));
    launch_noop(c, 7, s); /* and one eager launch */
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c); /* close writes the file after CLOSED */
    char *json = kt_read_text(path);
    REQUIRE(json != NULL);
    CHECK(strstr(json, "\"traceEvents\"") != NULL);
    CHECK_EQ(kt_count(json, "\"name\":\"scheduler\""),
             REPLAYS + 1);                              /* every replay is a launch on the device */
    CHECK_EQ(kt_count(json, "\"name\":\"launch\""), 2); /* two host enqueues */
    CHECK_EQ(kt_count(json, "\"name\":\"task 0 f0/b0\""), REPLAYS + 1);
    CHECK_EQ(kt_count(json, "\"name\":\"init\""), 1);
    CHECK_EQ(kt_count(json, "\"name\":\"prepare\""), 1);
    CHECK_EQ(kt_count(json, "\"name\":\"close\""), 1);
    CHECK(strstr(json, "\"dev_dropped\":0") != NULL);
    free(json);
    unlink(path);
}

KT_TEST(a_full_device_ring_drops_the_newest_records_and_counts_them) { /* K32 */
    kt_image noop = kt_image_noop();
    char path[128];
    trace_path(path, sizeof path, "overflow");
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = trace_config(path, 3); /* each launch writes 2 records */
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    for (int i = 0; i < 5; i++) launch_noop(c, 1, s);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
    char *json = kt_read_text(path);
    REQUIRE(json != NULL);
    CHECK(strstr(json, "\"device_records\":3") != NULL);
    CHECK(strstr(json, "\"dev_dropped\":7") != NULL);
    CHECK(strstr(json, "\"name\":\"dropped\"") != NULL);
    free(json);
    unlink(path);
}

/* A u32 field of the context's runtime image, as the device reads it. */
static uint32_t image_word(kctx_context c, size_t offset) {
    uint32_t v = UINT32_MAX;
    CHECK_SIM_OK(sim_atomic_read_u32(kt_resources(c).runtime_image + offset, &v));
    return v;
}

/* Kills: a flush that never writes the ring's consumer index back
 * (src/core/trace.c, kctx__trace_collect's "atomic_write(trace tail)"):
 * the device writers then see a ring that never empties. K32: the device
 * ring is circular with a device-visible consumer index; a flush consumes
 * the committed records and moves that index, so a ring of 8 records that
 * was flushed after 6 takes 6 more (it wraps) without the device dropping
 * any. The host buffer holds as many device records as the ring (kctx.h:
 * trace_device_records), so the host counts what it has no room for:
 * 6 + 2 kept, 4 counted as dropped, none of them by the device. */
KT_TEST(a_flushed_ring_wraps_and_the_device_drops_nothing) { /* K32 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    char path[128];
    trace_path(path, sizeof path, "wrap");
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = trace_config(path, 8); /* each launch writes 2 records */
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    const size_t tail = offsetof(kctx_rt_image, trace_tail);
    const size_t dropped = offsetof(kctx_rt_image, trace_dropped);
    for (int i = 0; i < 3; i++) launch_noop(c, 1, s);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(image_word(c, tail), 0);
    CHECK_OK(kctx_trace_flush(c));
    CHECK_EQ(image_word(c, tail), 6); /* the consumer index, written back */
    /* 6 more: the ring wraps (records 8..11 in slots 0..3) */
    for (int i = 0; i < 3; i++) launch_noop(c, 1, s);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(image_word(c, dropped), 0); /* the device had room for every record */
    CHECK_OK(kctx_trace_flush(c));
    CHECK_EQ(image_word(c, tail), 12);
    CHECK_EQ(image_word(c, dropped), 0);
    char *json = kt_read_text(path);
    REQUIRE(json != NULL);
    CHECK_EQ(kt_count(json, "\"name\":\"flush\""), 2);
    CHECK(strstr(json, "\"dev_dropped\":4") != NULL); /* the host's buffer was full */
    free(json);
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
    unlink(path);
}

KT_TEST(a_trace_write_failure_goes_to_the_teardown_slot_and_close_stays_done) { /* K32, K10 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = trace_config("/nonexistent-kctx-dir/trace.json", 64);
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    CHECK_OK(kctx_close(c));
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    kctx_status td = KCTX_OK;
    char msg[256] = "";
    CHECK_OK(kctx_teardown_error(c, &td, msg, sizeof msg));
    CHECK(td != KCTX_OK);
    CHECK(strstr(msg, "trace") != NULL);
    CHECK_OK(kctx_close(c)); /* idempotent */
    /* closed with tracing on: flush is a phase error, not "tracing off"
     * (kctx_trace_flush's order: tracing off is a property of the config) */
    CHECK_K(kctx_trace_flush(c), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(c), "CLOSED") != NULL);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(flush_writes_what_was_collected_so_far) { /* K32 */
    kt_image noop = kt_image_noop();
    char path[128];
    trace_path(path, sizeof path, "flush");
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_context off = kt_create();
    REQUIRE(off);
    kctx_kernel_config cfg = trace_config(path, 1024);
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    for (int i = 0; i < 3; i++) launch_noop(c, 1, s);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_OK(kctx_trace_flush(c));
    char *json = kt_read_text(path);
    REQUIRE(json != NULL);
    CHECK_EQ(kt_count(json, "\"name\":\"scheduler\""), 3);
    CHECK_EQ(kt_count(json, "\"name\":\"flush\""), 1);
    free(json);
    for (int i = 0; i < 2; i++) launch_noop(c, 1, s);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    /* flush is refused during capture */
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    launch_noop(c, 1, s);
    CHECK_K(kctx_trace_flush(c), KCTX_CAPTURE_ACTIVE);
    sim_graph g = 0;
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
    json = kt_read_text(path);
    REQUIRE(json != NULL);
    CHECK_EQ(kt_count(json, "\"name\":\"scheduler\""), 5); /* nothing lost, nothing counted twice */
    free(json);
    unlink(path);
    /* tracing off: flush is UNSUPPORTED */
    kctx_kernel_config plain = kt_config(10000);
    REQUIRE_OK(kctx_kernel_init(off, &plain));
    CHECK_K(kctx_trace_flush(off), KCTX_UNSUPPORTED);
    kt_finish(off);
}

/* Fault sweep over the trace's creation (init) and copy-back (close): fail
 * each platform call once; the context ends back at the baseline. */
KT_TEST(fault_sweep_covers_the_trace_buffers) { /* K32, K7, K26 */
    kt_image noop = kt_image_noop();
    char path[128];
    trace_path(path, sizeof path, "sweep");
    kt_snap base = kt_snap_take(0);
    kctx_kernel_config cfg = trace_config(path, 256);
    /* count the calls of init and of close */
    kctx_context c = kt_create();
    REQUIRE(c);
    sim_thread_calls_reset();
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    uint64_t init_calls = sim_thread_calls(SIM_OP_ANY);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_thread_calls_reset();
    REQUIRE_OK(kctx_close(c));
    uint64_t close_calls = sim_thread_calls(SIM_OP_ANY);
    CHECK_OK(kctx_destroy(c));
    printf("fault-sweep trace: init %llu platform calls, close %llu\n",
           (unsigned long long)init_calls, (unsigned long long)close_calls);
    for (int scenario = 0; scenario < 2; scenario++) {
        uint64_t n = scenario ? close_calls : init_calls;
        for (uint64_t k = 1; k <= n; k++) {
            c = kt_create();
            REQUIRE(c);
            sim_fault f = SIM_FAULT_INIT;
            f.this_thread_only = 1;
            f.nth = k;
            int fid = -1;
            if (scenario == 1) {
                REQUIRE_OK(kctx_kernel_init(c, &cfg));
                REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
            }
            CHECK_SIM_OK(sim_fault_arm(&f, &fid));
            kctx_status st = scenario ? kctx_close(c) : kctx_kernel_init(c, &cfg);
            sim_fault_clear_all();
            sim_capture_mode m = SIM_CAPTURE_MODE_GLOBAL;
            sim_thread_exchange_capture_mode(&m); /* a failed mode restore may leave it relaxed */
            kctx_phase p = kt_phase(c);
            if (p == KCTX_PHASE_CLOSING || p == KCTX_PHASE_READY) {
                sim_stream cpu = kt_aicpu_stream(c);
                if (cpu) sim_stream_synchronize(cpu);
            }
            if (st != KCTX_OK || p != KCTX_PHASE_CLOSED)
                CHECK_OK(kctx_close(c)); /* retry releases the rest */
            CHECK_PHASE(c, KCTX_PHASE_CLOSED);
            CHECK_OK(kctx_destroy(c));
            kt_snap now = kt_snap_take(0);
            if (!CHECK_SNAP(base, now)) {
                printf("  trace sweep %s call %llu: %s\n", scenario ? "close" : "init",
                       (unsigned long long)k, kctx_status_name(st));
                break;
            }
        }
    }
    unlink(path);
}

KT_TEST(a_context_whose_task_failed_still_closes_with_tracing_on) { /* K32, K26 */
    /* a child kernel that reports a device-side error: its stream's error
     * is sticky, so the device ring cannot be copied back through it; close
     * must still complete, write the host spans and say so */
    char path[128];
    trace_path(path, sizeof path, "failed");
    kt_image mod = kt_test_kernels_module();
    kctx_image_builder *b = kctx_image_builder_new("fails");
    uint32_t fid = 0;
    kctx_image_builder_child(b, "fail", "t_report_error", &fid);
    kctx_image_builder_child_param(b, "code", KCTX_PARAM_SCALAR);
    kctx_image_builder_child_param(b, "detail", KCTX_PARAM_SCALAR);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, mod.bytes, mod.size);
    kctx_image_builder_task(b, fid, 1, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_IMMEDIATE, 0, 7);
    kctx_image_builder_bind(b, KCTX_BIND_IMMEDIATE, 0, 9);
    void *img = NULL;
    size_t size = 0;
    int built = kctx_image_builder_finish(b, &img, &size, NULL, 0) == KCTX_BUILD_OK;
    kctx_image_builder_free(b);
    REQUIRE(built);
    kctx_context c = kt_create();
    kctx_kernel_config cfg = trace_config(path, 256);
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    REQUIRE_OK(kctx_prepare(c, 1, img, size));
    free(img);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, s));
    CHECK_SIM(sim_stream_synchronize(s), SIM_KERNEL_ERROR);
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_K(kctx_check(c, &rep), KCTX_DEVICE_ERROR);
    CHECK_EQ(rep.error_detail, 0); /* task 0 */
    CHECK_OK(kctx_close(c));
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
    char *json = kt_read_text(path);
    REQUIRE(json != NULL);
    CHECK(strstr(json, "\"name\":\"launch\"") != NULL);
    free(json);
    unlink(path);
    CHECK_SIM_OK(sim_stream_destroy(s));
}
