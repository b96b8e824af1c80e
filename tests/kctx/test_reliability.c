/*
 * test_reliability.c — the bugs an outside torture run found (issue 11),
 * one test each, every one of which failed before its fix, and the pinned
 * platform-call sequence of a launch (K19).
 */
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Arm a fault on the calling thread that fails with `error`. */
static int fault_with(sim_op op, uint64_t nth, int persistent, sim_status error) {
    sim_fault f = SIM_FAULT_INIT;
    f.op = (int)op;
    f.this_thread_only = 1;
    f.nth = nth;
    f.persistent = persistent;
    f.error = error;
    int id = -1;
    CHECK_SIM_OK(sim_fault_arm(&f, &id));
    return id;
}

/* A kernel context on the calling thread's current device under an explicit
 * strategy (tests whose subject exists under one strategy only pin it, so
 * that KCTX_STRATEGY does not change what they test). */
static kctx_context ctx_with(kctx_strategy strategy) {
    kctx_context c = kt_create();
    if (!c) return 0;
    kctx_kernel_config cfg = kt_config(0);
    cfg.strategy = strategy;
    if (!CHECK_OK(kctx_kernel_init(c, &cfg))) {
        kctx_destroy(c);
        return 0;
    }
    return c;
}

static uint64_t epoch_of(int device) {
    uint64_t e = 0;
    CHECK_SIM_OK(sim_device_epoch(device, &e));
    return e;
}

/* ---- 1. close never frees under a trace copy that may still run ------------------------ */

KT_TEST(close_refuses_while_the_trace_copy_back_may_still_run) { /* K25, K26, K32 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    char path[128];
    snprintf(path, sizeof path, "/tmp/kctx-test-rel-%d-held.json", (int)getpid());
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(100);
    cfg.flags = KCTX_TRACE_ENABLE;
    cfg.trace_path = path;
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    for (int i = 0; i < 3; i++) CHECK_OK(kctx_launch(c, 1, NULL, 0, s));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    /* the next copy on the device is close's copy-back of the trace ring */
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_COPY;
    int hold = -1;
    REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
    kctx_resource_info r0 = kt_resources(c);
    kt_snap s0 = kt_snap_take(0);
    CHECK_K(kctx_close(c), KCTX_BUSY); /* its wait timed out: the copy may still run */
    CHECK(strstr(kctx_last_error(c), "trace copy-back") != NULL);
    /* READY, nothing released (the copy it enqueued is the only change) */
    CHECK_PHASE(c, KCTX_PHASE_READY);
    kctx_resource_info r1 = kt_resources(c);
    CHECK(memcmp(&r0, &r1, sizeof r0) == 0);
    CHECK_DEVICE_AT(0, s0);
    CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000));
    CHECK_SIM_OK(sim_hold_release(hold));
    CHECK_SIM_OK(sim_stream_synchronize(kt_resources(c).upload_stream));
    CHECK_OK(kctx_close(c)); /* the retry collects again and completes */
    CHECK_OK(kctx_destroy(c));
    char *json = kt_read_text(path);
    REQUIRE(json != NULL);
    CHECK_EQ(kt_count(json, "\"name\":\"scheduler\""), 3); /* nothing lost, nothing twice */
    free(json);
    unlink(path);
    CHECK_SIM_OK(sim_stream_destroy(s));
}

/* ---- 2. program mode: run checks the device; recovery resets its own device ---------------- */

KT_TEST(program_run_checks_the_current_device_and_recovery_resets_only_its_own) { /* K31 K5 */
    REQUIRE_DEVICES(2);
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context k = kt_kernel_ctx(); /* a framework's kernel context on device 0 */
    REQUIRE(k);
    kctx_context p = kt_create();
    REQUIRE(p);
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    pcfg.device = 1;
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(1, SIM_LIFECYCLE_SET_DEVICE, 1);
    REQUIRE_OK(kctx_program_init(p, &pcfg)); /* makes device 1 current */
    REQUIRE_OK(kctx_prepare(p, 1, noop.bytes, noop.size));
    CHECK_OK(kctx_run(p, 1, NULL, 0));
    kt_set_device(0);
    CHECK_REFUSED(p, kctx_run(p, 1, NULL, 0), KCTX_INVALID_STATE); /* K5 */
    kt_set_device(1);
    uint64_t e0 = epoch_of(0), e1 = epoch_of(1);
    CHECK_SIM_OK(sim_device_make_fatal(1));
    kt_expect_lifecycle(1, SIM_LIFECYCLE_RESET_DEVICE, 1);
    CHECK_K(kctx_run(p, 1, NULL, 0), KCTX_DEVICE_LOST);
    CHECK_EQ(epoch_of(1), e1 + 1); /* its own device was reset */
    CHECK_EQ(epoch_of(0), e0);     /* the other device was not */
    CHECK_PHASE(p, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(p));
    kt_set_device(0);
    CHECK_PHASE(k, KCTX_PHASE_READY); /* the framework's context kept its handles */
    CHECK_OK(kctx_prepare(k, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_OK(kctx_launch(k, 1, NULL, 0, s));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(k);
}

/* ---- 3. K24 when the compensation fails too ------------------------------------------------ */

KT_TEST(a_launch_whose_scheduler_and_abort_both_fail_still_comes_back_promptly) { /* K24 */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    /* launch-kernel calls of one launch: acquire, worker, scheduler; from
     * the scheduler on every one fails, the abort included */
    kt_fault(SIM_OP_LAUNCH_KERNEL, 3, 1);
    CHECK_K(kctx_launch(c, 1, NULL, 0, s), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_POISONED);
    CHECK(strstr(kctx_last_error(c), "compensation also failed") != NULL);
    /* the chain is back on the caller stream at once (not after the
     * workers' 120 s watchdog) */
    CHECK_SIM_OK(sim_stream_synchronize_timeout(s, 5000));
    /* and every core is free again: a framework kernel on all cores runs */
    sim_device_props props = SIM_DEVICE_PROPS_INIT;
    CHECK_SIM_OK(sim_device_get_props(0, &props));
    sim_module mod = 0;
    sim_function fn = 0;
    REQUIRE_SIM_OK(kt_load_kernel("k_noop", &mod, &fn));
    CHECK_SIM_OK(
        sim_launch_kernel(s, fn, SIM_TARGET_AICORE, (uint32_t)props.aicore_count, NULL, 0));
    CHECK_SIM_OK(sim_stream_synchronize_timeout(s, 5000));
    CHECK_OK(kctx_close(c)); /* nothing left running on the context's streams */
    CHECK_OK(kctx_destroy(c));
    CHECK_SIM_OK(sim_module_unload(mod));
    CHECK_SIM_OK(sim_stream_destroy(s));
}

/* ---- 4. program mode: a fatal wait in prepare leaks nothing -------------------------------- */

KT_TEST(program_prepare_whose_wait_is_fatal_keeps_no_upload) { /* K31, K17 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context p = kt_create();
    REQUIRE(p);
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    pcfg.strategy = KCTX_STRATEGY_RESIDENT; /* host-ordered prepare uploads nothing */
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_SET_DEVICE, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_RESET_DEVICE, 1); /* the recovery */
    REQUIRE_OK(kctx_program_init(p, &pcfg));
    fault_with(SIM_OP_STREAM_SYNCHRONIZE, 1, 0, SIM_DEVICE_LOST);
    CHECK_K(kctx_prepare(p, 1, noop.bytes, noop.size), KCTX_DEVICE_LOST);
    sim_fault_clear_all();
    CHECK_PHASE(p, KCTX_PHASE_CLOSED);
    kctx_resource_info r = kt_resources(p);
    CHECK_EQ(r.uploads, 0); /* the upload died with the reset: not listed, not kept */
    CHECK_EQ(r.callables, 0);
    CHECK_OK(kctx_destroy(p)); /* LeakSanitizer proves the host side went too */
}

/* ---- 5. flush while replays run -------------------------------------------------------------- */

typedef struct replayer {
    sim_graph_exec x;
    sim_stream s;
    int n;
} replayer;

static void *replay_thread(void *arg) {
    replayer *r = arg;
    kt_set_device(0);
    for (int i = 0; i < r->n; i++) {
        CHECK_SIM_OK(sim_graph_launch(r->x, r->s));
        if (i % 8 == 7) CHECK_SIM_OK(sim_stream_synchronize(r->s));
    }
    CHECK_SIM_OK(sim_stream_synchronize(r->s));
    return NULL;
}

KT_TEST(flush_while_replays_run_loses_nothing_and_counts_nothing_twice) { /* K32 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    char path[128];
    snprintf(path, sizeof path, "/tmp/kctx-test-rel-%d-flush.json", (int)getpid());
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(10000);
    cfg.flags = KCTX_TRACE_ENABLE;
    cfg.trace_path = path;
    cfg.trace_device_records = 128; /* small: the ring wraps many times */
    cfg.trace_host_records = 4096;
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream cap = 0, rs = 0;
    REQUIRE_SIM_OK(sim_stream_create(&cap));
    REQUIRE_SIM_OK(sim_stream_create(&rs));
    sim_graph g = 0;
    sim_graph_exec x = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(cap, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, cap));
    CHECK_SIM_OK(sim_stream_end_capture(cap, &g));
    REQUIRE_SIM_OK(sim_graph_instantiate(&x, g));
    enum {
        REPLAYS = 120
    };
    replayer r = {x, rs, REPLAYS};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, replay_thread, &r) == 0);
    /* flush again and again while the replays write the ring */
    int flushes = 0;
    for (int i = 0; i < 400; i++) {
        if (CHECK_OK(kctx_trace_flush(c))) flushes++;
        kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
        if (i % 16 == 0) CHECK_OK(kctx_check(c, &rep));
        usleep(200);
    }
    pthread_join(t, NULL);
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_SIM_OK(sim_graph_destroy(g));
    kt_finish(c);
    char *json = kt_read_text(path);
    REQUIRE(json != NULL);
    /* a record is dropped only when the device ring is full between two
     * flushes; those are counted, so records seen + dropped = runs */
    unsigned seen = kt_count(json, "\"name\":\"scheduler\"");
    const char *d = strstr(json, "\"dev_dropped\":");
    unsigned long dropped = d ? strtoul(d + strlen("\"dev_dropped\":"), NULL, 10) : 0;
    CHECK(d != NULL);
    unsigned tasks = kt_count(json, "\"name\":\"task 0 f0/b0\"");
    /* every run writes one scheduler and one task record */
    CHECK_EQ(seen + tasks + dropped, 2u * REPLAYS);
    CHECK(seen <= REPLAYS && tasks <= REPLAYS);
    printf("    %d flushes during %d replays: %u scheduler + %u task records, %lu dropped\n",
           flushes, REPLAYS, seen, tasks, dropped);
    free(json);
    unlink(path);
    CHECK_SIM_OK(sim_stream_destroy(cap));
    CHECK_SIM_OK(sim_stream_destroy(rs));
}

/* ---- 6. a framework stream's error does not silently disable the context ------------------ */

KT_TEST(an_error_imported_from_a_caller_stream_is_reported_by_check_and_poisons) { /* K35 K10 */
    kt_image append = kt_image_append();
    REQUIRE(append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, append.bytes, append.size));
    sim_devptr log = 0;
    REQUIRE_SIM_OK(sim_malloc(&log, 256));
    static const uint8_t zeros[256];
    CHECK_SIM_OK(sim_memcpy((void *)(uintptr_t)log, zeros, sizeof zeros, SIM_COPY_HOST_TO_DEVICE));
    sim_stream a = 0, b = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    sim_module mod = 0;
    sim_function fail = 0;
    REQUIRE_SIM_OK(kt_load_kernel("k_report_error", &mod, &fail));
    struct {
        uint32_t code, pad;
        uint64_t detail;
    } ep = {5, 0, 1};
    CHECK_SIM_OK(sim_launch_kernel(a, fail, SIM_TARGET_AICPU, 1, &ep, sizeof ep));
    kctx_arg arg = KCTX_TENSOR(log, 256);
    CHECK_OK(kctx_launch(c, 1, &arg, 1, a)); /* fine: the error is A's */
    CHECK(sim_stream_synchronize(a) != SIM_OK);
    CHECK_OK(kctx_launch(c, 1, &arg, 1, b)); /* submitted; it cannot compute any more */
    (void)sim_stream_synchronize(b);
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_K(kctx_check(c, &rep), KCTX_DEVICE_ERROR); /* never a silent OK */
    CHECK_K(rep.device_status, KCTX_DEVICE_ERROR);
    CHECK_PHASE(c, KCTX_PHASE_POISONED);
    CHECK_K(kt_runtime_error(c), KCTX_DEVICE_ERROR);
    CHECK_REFUSED(c, kctx_launch(c, 1, &arg, 1, b), KCTX_POISONED);
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
    CHECK_SIM_OK(sim_module_unload(mod));
    CHECK_SIM_OK(sim_free(log));
    (void)sim_stream_destroy(a);
    (void)sim_stream_destroy(b);
}

/* ---- 7. DEVICE_LOST during close's releases quarantines and stops ------------------------- */

KT_TEST(a_fatal_error_during_close_quarantines_and_stops_releasing) { /* K29, K30 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = ctx_with(KCTX_STRATEGY_RESIDENT); /* its first release: the callable table */
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    fault_with(SIM_OP_FREE, 1, 1, SIM_DEVICE_LOST); /* the first release is a mem_free */
    uint64_t rel = kt_release_calls();
    CHECK_K(kctx_close(c), KCTX_DEVICE_LOST);
    CHECK_EQ(kt_release_calls() - rel, 1); /* no release after the fatal one */
    CHECK_PHASE(c, KCTX_PHASE_QUARANTINED);
    CHECK_K(kt_runtime_error(c), KCTX_DEVICE_LOST);
    CHECK_K(kctx_close(c), KCTX_DEVICE_LOST); /* K30: still nothing released */
    CHECK_EQ(kt_release_calls() - rel, 1);
    CHECK_K(kctx_destroy(c), KCTX_BUSY);
    sim_fault_clear_all();
    kt_owner_reset();                       /* K36: the owner's reset is the way out */
    uint64_t calls = kt_injectable_calls(); /* all but the epoch read */
    CHECK_OK(kctx_close(c));
    CHECK_EQ(kt_injectable_calls(), calls);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(a_fatal_error_during_init_quarantines_without_rollback_calls) { /* K29, K30, K7 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    fault_with(SIM_OP_MALLOC, 2, 0, SIM_DEVICE_LOST);
    uint64_t rel = kt_release_calls();
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_DEVICE_LOST);
    sim_fault_clear_all();
    CHECK_EQ(kt_release_calls(), rel); /* a lost device cannot honour releases */
    CHECK_PHASE(c, KCTX_PHASE_QUARANTINED);
    kctx_context other = kt_create(); /* the claim is kept (K7) */
    REQUIRE(other);
    CHECK_K(kctx_kernel_init(other, &cfg), KCTX_BUSY);
    CHECK_OK(kctx_destroy(other));
    kt_owner_reset();
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
}

/* ---- 8. a refused captured launch holds no lifetime token --------------------------------- */

KT_TEST(a_captured_launch_refused_before_enqueueing_holds_no_token) { /* K9, K25 */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    kt_fault(SIM_OP_EVENT_RECORD, 1, 0); /* the first enqueue: record START */
    CHECK_K(kctx_launch(c, 1, NULL, 0, s), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_READY);
    CHECK_EQ(kt_resources(c).tokens_in_use, 0);
    sim_graph g = 0;
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    size_t nodes = 99;
    CHECK_SIM_OK(sim_graph_node_count(g, &nodes));
    CHECK_EQ(nodes, 0);
    CHECK_OK(kctx_close(c)); /* the empty graph does not hold the context */
    CHECK_OK(kctx_destroy(c));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_stream_destroy(s));
}

KT_TEST(a_failed_token_attach_after_the_first_enqueue_breaks_the_capture) { /* K24, K25 */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    kt_fault(SIM_OP_GRAPH_ATTACH_HOOK, 1, 0);
    CHECK_K(kctx_launch(c, 1, NULL, 0, s), KCTX_CAPTURE_BROKEN);
    sim_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_POISONED);
    CHECK_EQ(kt_resources(c).tokens_in_use, 0);
    sim_graph g = 0;
    (void)sim_stream_end_capture(s, &g); /* the caller discards that capture */
    if (g) CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
    CHECK_SIM_OK(sim_stream_destroy(s));
}

/* ---- 9. a platform failure of the caller-stream query is a platform error ------------------ */

KT_TEST(a_failing_caller_stream_query_is_mapped_by_class) { /* K18, K9 */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    fault_with(SIM_OP_GET_CAPTURE_INFO, 1, 0, SIM_OUT_OF_MEMORY); /* the caller's query */
    CHECK_REFUSED(c, kctx_launch(c, 1, NULL, 0, s), KCTX_OUT_OF_MEMORY);
    sim_fault_clear_all();
    /* a handle the platform rejects is still a bad argument */
    CHECK_REFUSED(c, kctx_launch(c, 1, NULL, 0, 0x12345678u), KCTX_INVALID_ARGUMENT);
    CHECK_OK(kctx_launch(c, 1, NULL, 0, s));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
}

/* ---- 11-13. queries, names, limits ------------------------------------------------------------ */

KT_TEST(queries_check_the_handle_before_their_arguments) { /* section 0: check order */
    const kctx_context bad = 0x4b00000000000001ull;
    CHECK_K(kctx_get_phase(bad, NULL), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_get_mode(bad, NULL), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_get_device(bad, NULL), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_get_resources(bad, NULL), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_platform_calls(bad, NULL), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_runtime_error(bad, NULL, NULL, 4), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_teardown_error(bad, NULL, NULL, 4), KCTX_INVALID_HANDLE);
    kctx_context c = kt_create(); /* a live handle: now the argument decides */
    REQUIRE(c);
    CHECK_K(kctx_get_phase(c, NULL), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_get_mode(c, NULL), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_get_device(c, NULL), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_get_resources(c, NULL), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_platform_calls(c, NULL), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_runtime_error(c, NULL, NULL, 0), KCTX_INVALID_ARGUMENT);
    kctx_status st = KCTX_OK;
    CHECK_K(kctx_teardown_error(c, &st, NULL, 4), KCTX_INVALID_ARGUMENT);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(an_empty_platform_name_is_not_found) { /* section 0: platform choice */
    kctx_context c = 0;
    CHECK_K(kctx_context_create("", &c), KCTX_NOT_FOUND);
    CHECK_EQ(c, 0);
    CHECK(strstr(kctx_thread_last_error(), "''") != NULL);
}

KT_TEST(creating_more_than_the_documented_number_of_contexts_is_capacity) { /* kctx.h */
    kctx_context *hs = calloc(KCTX_MAX_CONTEXTS + 1, sizeof *hs);
    REQUIRE(hs != NULL);
    int n = 0;
    kctx_status st = KCTX_OK;
    while (n <= KCTX_MAX_CONTEXTS && (st = kctx_context_create(NULL, &hs[n])) == KCTX_OK) n++;
    CHECK_K(st, KCTX_CAPACITY);
    CHECK_EQ(n, KCTX_MAX_CONTEXTS); /* no other context is live during this test */
    for (int i = 0; i < n; i++) CHECK_OK(kctx_destroy(hs[i]));
    /* the slots come back, with handles that never validate again */
    kctx_context again = 0;
    CHECK_OK(kctx_context_create(NULL, &again));
    kctx_phase ph;
    for (int i = 0; i < n; i++)
        if (hs[i] != again) CHECK_K(kctx_get_phase(hs[i], &ph), KCTX_INVALID_HANDLE);
    CHECK(again != hs[0]);
    CHECK_OK(kctx_destroy(again));
    free(hs);
}

/* ---- K19: the exact platform calls of a launch ------------------------------------------------ */

/* A captured launch on a stream of its own, its capture ended and its graph
 * destroyed: the context's streams have been in a capture since its last
 * launch (K34's query is then made once more). */
static void captured_launch_before(kctx_context c) {
    sim_stream s = 0;
    sim_graph g = 0;
    CHECK_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, s));
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    if (g) CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_stream_destroy(s));
}

/* Fail call k of a launch (k = 1, 2, ...) and read which call it was from
 * the message; stops at the first k the launch does not reach. `captured`:
 * 0 an eager launch on a fresh context, 1 a captured one, 2 an eager one
 * after a captured launch (captured_launch_before). */
static int launch_sequence(kctx_strategy strategy, int captured, char seq[][48], int max) {
    kt_image noop = kt_image_noop();
    int n = 0;
    for (uint64_t k = 1; n < max; k++) {
        kctx_context c = ctx_with(strategy);
        if (!c || !noop.bytes) return -1;
        CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
        if (captured == 2) captured_launch_before(c);
        sim_stream s = 0;
        CHECK_SIM_OK(sim_stream_create(&s));
        if (captured == 1) CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
        int f = kt_fault(SIM_OP_ANY, k, 0);
        kctx_status st = kctx_launch(c, 1, NULL, 0, s);
        uint64_t hits = 0;
        sim_fault_hits(f, &hits);
        sim_fault_clear_all();
        char msg[256];
        snprintf(msg, sizeof msg, "%s", kctx_last_error(c));
        if (captured == 1) {
            sim_graph g = 0;
            (void)sim_stream_end_capture(s, &g);
            if (g) CHECK_SIM_OK(sim_graph_destroy(g));
        }
        (void)sim_stream_synchronize(s);
        CHECK_SIM_OK(sim_stream_destroy(s));
        kt_finish(c);
        if (!hits) {
            CHECK_OK(st);
            return n;
        }
        CHECK(st != KCTX_OK);
        /* "platform sim: <what> failed with ..." */
        const char *w = strstr(msg, "platform sim: ");
        const char *e = w ? strstr(w, " failed with") : NULL;
        if (!w || !e) {
            snprintf(seq[n++], 48, "?");
            continue;
        }
        w += strlen("platform sim: ");
        snprintf(seq[n++], 48, "%.*s", (int)(e - w), w);
    }
    return n;
}

static void check_sequence(kctx_strategy strategy, int captured, const char *const *want,
                           int nwant) {
    char got[40][48];
    int n = launch_sequence(strategy, captured, got, 40);
    int same = CHECK_EQ(n, nwant);
    for (int i = 0; same && i < n; i++) same = CHECK(strcmp(got[i], want[i]) == 0);
    if (!same)
        for (int i = 0; i < n; i++) fprintf(stderr, "    call %d: %s\n", i + 1, got[i]);
}

/* The eager sequence, then the captured one: the same calls with the graph
 * lifetime token attached right after the first enqueue (K9, K25); then an
 * eager launch after a captured one: the AICPU stream's capture query comes
 * right after the caller stream's (K34: only kctx's captured launches pull
 * its streams into a capture, so only then is it asked). */
static void check_both_sequences(kctx_strategy strategy, const char *const *eager, int n) {
    const char *captured[40], *after[40];
    if (!CHECK(n >= 3 && n < 39)) return;
    for (int i = 0, j = 0; i < n; i++) {
        captured[j++] = eager[i];
        if (i == 1) captured[j++] = "graph_attach_hook(lifetime token)";
    }
    for (int i = 0, j = 0; i < n; i++) {
        after[j++] = eager[i];
        if (i == 0) after[j++] = "stream_info(AICPU)";
    }
    check_sequence(strategy, 0, eager, n);
    check_sequence(strategy, 1, captured, n + 1);
    check_sequence(strategy, 2, after, n + 1);
}

KT_TEST(an_eager_and_a_captured_launch_make_exactly_the_pinned_platform_calls) { /* K19 */
    /* (the current-device read cannot be failed on the sim; it is counted
     * by kctx_platform_calls, checked below) */
    static const char *const eager[] = {
        "stream_info(caller)",
        "event_record(START, caller)",
        "stream_wait_event(AICPU, START)",
        "launch(acquire)",
        "event_record(AICORE_START, AICPU)",
        "stream_wait_event(AICore, AICORE_START)",
        "launch(worker)",
        "event_record(AICORE_DONE, AICore)",
        "launch(scheduler)",
        "stream_wait_event(AICPU, AICORE_DONE)",
        "event_record(AICPU_DONE, AICPU)",
        "stream_wait_event(caller, AICPU_DONE)",
        "event_record(SERIAL_TAIL, caller)",
    };
    check_both_sequences(KCTX_STRATEGY_RESIDENT, eager, (int)(sizeof eager / sizeof *eager));
    /* and kctx's own count: the sequence plus the current-device read; the
     * same after a captured launch, once the AICPU stream answered NONE */
    kt_image noop = kt_image_noop();
    kctx_context c = ctx_with(KCTX_STRATEGY_RESIDENT);
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    uint64_t a = 0, b = 0;
    CHECK_OK(kctx_platform_calls(c, &a));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, s));
    CHECK_OK(kctx_platform_calls(c, &b));
    CHECK_EQ(b - a, sizeof eager / sizeof *eager + 1);
    captured_launch_before(c);
    CHECK_OK(kctx_platform_calls(c, &a));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, s));
    CHECK_OK(kctx_platform_calls(c, &b));
    CHECK_EQ(b - a, sizeof eager / sizeof *eager + 2);
    CHECK_OK(kctx_platform_calls(c, &a));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, s));
    CHECK_OK(kctx_platform_calls(c, &b));
    CHECK_EQ(b - a, sizeof eager / sizeof *eager + 1);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
}

KT_TEST(a_host_ordered_launch_makes_exactly_the_pinned_platform_calls) { /* K19, section 0b */
    /* the noop callable has one task: acquire, the task kernel, finalize */
    static const char *const eager[] = {
        "stream_info(caller)",
        "event_record(START, caller)",
        "stream_wait_event(AICPU, START)",
        "launch(acquire)",
        "event_record(AICORE_START, AICPU)",
        "stream_wait_event(AICore, AICORE_START)",
        "launch(task)",
        "event_record(AICORE_DONE, AICore)",
        "stream_wait_event(AICPU, AICORE_DONE)",
        "launch(finalize)",
        "event_record(AICPU_DONE, AICPU)",
        "stream_wait_event(caller, AICPU_DONE)",
        "event_record(SERIAL_TAIL, caller)",
    };
    check_both_sequences(KCTX_STRATEGY_HOST_ORDERED, eager, (int)(sizeof eager / sizeof *eager));
}

/* What a user learns where when a framework kernel fails just before a
 * launch (kctx.h, "Errors carried between streams"), for a graph replay:
 * the graph's nodes run on the replay stream, not on the context's streams,
 * so the replay stream reports the failure, the captured launch computes
 * nothing, and no context stream holds the error: kctx_check stays OK and
 * the context READY (the eager case is the test above: DEVICE_ERROR and
 * poisoned). Afterwards an eager launch computes again. Checks the
 * header's statement against the sim. */
KT_TEST(a_framework_failure_before_a_captured_launch_is_reported_by_the_replay_stream_only) {
    /* K35, K10 */
    kt_image append = kt_image_append();
    REQUIRE(append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, append.bytes, append.size));
    sim_devptr log = 0;
    REQUIRE_SIM_OK(sim_malloc(&log, 256));
    static const uint8_t zeros[256];
    CHECK_SIM_OK(sim_memcpy((void *)(uintptr_t)log, zeros, sizeof zeros, SIM_COPY_HOST_TO_DEVICE));
    sim_stream cap = 0, rs = 0, eager = 0;
    REQUIRE_SIM_OK(sim_stream_create(&cap));
    REQUIRE_SIM_OK(sim_stream_create(&rs));
    REQUIRE_SIM_OK(sim_stream_create(&eager));
    sim_module mod = 0;
    sim_function fail = 0;
    REQUIRE_SIM_OK(kt_load_kernel("k_report_error", &mod, &fail));
    struct {
        uint32_t code, pad;
        uint64_t detail;
    } ep = {5, 0, 1};
    kctx_arg arg = KCTX_TENSOR(log, 256);
    REQUIRE_SIM_OK(sim_stream_begin_capture(cap, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_SIM_OK(sim_launch_kernel(cap, fail, SIM_TARGET_AICPU, 1, &ep, sizeof ep));
    CHECK_OK(kctx_launch(c, 1, &arg, 1, cap));
    sim_graph g = 0;
    sim_graph_exec x = 0;
    REQUIRE_SIM_OK(sim_stream_end_capture(cap, &g));
    REQUIRE_SIM_OK(sim_graph_instantiate(&x, g));
    CHECK_SIM_OK(sim_graph_launch(x, rs));
    CHECK(sim_stream_synchronize(rs) != SIM_OK); /* the replay stream reports it */
    uint32_t count = 1;
    CHECK_SIM_OK(
        sim_memcpy(&count, (const void *)(uintptr_t)log, sizeof count, SIM_COPY_DEVICE_TO_HOST));
    CHECK_EQ(count, 0); /* the captured launch computed nothing */
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(c, &rep)); /* no context stream holds the error */
    CHECK_K(rep.device_status, KCTX_OK);
    CHECK_PHASE(c, KCTX_PHASE_READY);
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_OK(kctx_launch(c, 1, &arg, 1, eager)); /* the context computes again */
    CHECK_SIM_OK(sim_stream_synchronize(eager));
    CHECK_SIM_OK(
        sim_memcpy(&count, (const void *)(uintptr_t)log, sizeof count, SIM_COPY_DEVICE_TO_HOST));
    CHECK_EQ(count, 1);
    CHECK_OK(kctx_check(c, &rep));
    kt_finish(c);
    CHECK_SIM_OK(sim_module_unload(mod));
    CHECK_SIM_OK(sim_free(log));
    (void)sim_stream_destroy(cap);
    (void)sim_stream_destroy(rs);
    CHECK_SIM_OK(sim_stream_destroy(eager));
}
