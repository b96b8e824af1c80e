/*
 * test_caller_stream.c — the caller's stream is an argument of kctx_launch,
 * never state of the context (K18, docs/kernel-mode.md "Launch").
 *
 * The framework owns its streams: once a launch has returned and the
 * framework has synchronised the stream, it may destroy it. Nothing kctx
 * does afterwards on that context — prepare another callable, launch on a
 * new stream, kctx_check, kctx_trace_flush, close — may name the destroyed
 * handle. The sim's handle watch (sim_handle_watch) counts every sim call
 * whose arguments name it, from the moment kctx_launch returns; the only
 * calls allowed are the test's own (the framework's), counted with OWN().
 * The same holds after a captured launch whose capture stream is destroyed
 * while its graph is still replayed on another stream.
 */
#include "kt.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* architecture rule: the caller stream is an argument, never state; K18 */

static uint64_t g_own; /* the framework's own calls naming the watched stream */
#define OWN(call) (g_own++, (call))

static void watch(sim_stream s) {
    g_own = 0;
    sim_handle_watch(s);
}

/* Every call since watch() that named the stream was the framework's own. */
static void check_never_named_by_kctx(int line) {
    uint64_t n = sim_handle_watch_count();
    CHECK_AT(__FILE__, line, n == g_own,
             "kctx named the caller's destroyed stream in %llu sim call(s)",
             (unsigned long long)(n - g_own));
    sim_handle_watch(0);
}
#define CHECK_NEVER_NAMED_BY_KCTX() check_never_named_by_kctx(__LINE__)

/* Wait for the context's own streams to go idle (a launch's chain ends on
 * them after it reached the caller stream). */
static void drain(kctx_context c) {
    kctx_resource_info r = kt_resources(c);
    CHECK_SIM_OK(sim_stream_synchronize(r.aicpu_stream));
    CHECK_SIM_OK(sim_stream_synchronize(r.aicore_stream));
}

/* Bounded wait until no graph lifetime token is in use (graph hooks run on
 * sim threads once the graph, its executable graphs and their launches are
 * gone). */
static int wait_tokens_released(kctx_context c) {
    for (int i = 0; i < 5000; i++) {
        if (kt_resources(c).tokens_in_use == 0) return 1;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return CHECK_EQ(kt_resources(c).tokens_in_use, 0);
}

/* What a context does after its caller's stream is gone: prepare another
 * callable, check, flush the trace (when traced) and close — with the
 * destroyed stream still the last one a launch was given — or, with
 * `launch_again`, launch both callables on a new stream first. None of it
 * may name the old stream. The context is closed on return (not
 * destroyed). */
static void later_calls(kctx_context c, int traced, int launch_again) {
    kt_image append = kt_image_append();
    REQUIRE(append.bytes);
    CHECK_OK(kctx_prepare(c, 2, append.bytes, append.size));
    sim_stream next = 0;
    sim_devptr log = 0;
    if (launch_again) {
        REQUIRE_SIM_OK(sim_stream_create(&next));
        REQUIRE_SIM_OK(sim_malloc(&log, 256));
        CHECK_SIM_OK(sim_memset_async(log, 0, 256, next));
        kctx_arg arg = KCTX_TENSOR(log, 256);
        CHECK_OK(kctx_launch(c, 1, NULL, 0, next));
        CHECK_OK(kctx_launch(c, 2, &arg, 1, next));
        CHECK_SIM_OK(sim_stream_synchronize(next));
        drain(c);
    }
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(c, &rep));
    CHECK_EQ(rep.device_status, KCTX_OK);
    if (traced) CHECK_OK(kctx_trace_flush(c));
    CHECK_OK(kctx_close(c));
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    if (next) CHECK_SIM_OK(sim_stream_destroy(next));
    if (log) CHECK_SIM_OK(sim_free(log));
}

static kctx_context traced_ctx(char *path, size_t n) {
    snprintf(path, n, "/tmp/kctx-test-caller-stream-%d.json", (int)getpid());
    unlink(path);
    kctx_context c = kt_create();
    if (!c) return 0;
    kctx_kernel_config cfg = kt_config(0);
    cfg.flags = KCTX_TRACE_ENABLE;
    cfg.trace_path = path;
    if (!CHECK_OK(kctx_kernel_init(c, &cfg))) return 0;
    return c;
}

/* An eager launch, then the framework synchronises and destroys its
 * stream; then the later calls. */
static void eager_then_destroyed(int traced, int launch_again) {
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    char path[128] = "";
    kctx_context c = traced ? traced_ctx(path, sizeof path) : kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, caller));
    watch(caller); /* from here on, only the framework may name it */
    CHECK_SIM_OK(OWN(sim_stream_synchronize(caller)));
    drain(c);
    CHECK_SIM_OK(OWN(sim_stream_destroy(caller)));
    later_calls(c, traced, launch_again);
    CHECK_NEVER_NAMED_BY_KCTX();
    CHECK_OK(kctx_destroy(c));
    if (traced) CHECK(unlink(path) == 0); /* close wrote the trace */
}

KT_TEST(destroyed_caller_stream_is_never_named_after_an_eager_launch) { /* K18 */
    eager_then_destroyed(0, 0);
    eager_then_destroyed(0, 1);
}

KT_TEST(destroyed_caller_stream_is_never_named_by_a_traced_context) { /* K18, K32 */
    eager_then_destroyed(1, 0);
    eager_then_destroyed(1, 1);
}

static void capture_stream_destroyed_before_replay(int launch_again) {
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream caller = 0, replay = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    REQUIRE_SIM_OK(sim_stream_create(&replay));
    REQUIRE_SIM_OK(sim_stream_begin_capture(caller, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, caller));
    watch(caller);
    sim_graph g = 0;
    sim_graph_exec x = 0;
    REQUIRE_SIM_OK(OWN(sim_stream_end_capture(caller, &g)));
    CHECK_SIM_OK(OWN(sim_stream_destroy(caller))); /* the capture stream is gone */
    REQUIRE_SIM_OK(sim_graph_instantiate(&x, g));
    /* The graph replays without it, on another stream. */
    for (int i = 0; i < 3; i++) CHECK_SIM_OK(sim_graph_launch(x, replay));
    CHECK_SIM_OK(sim_stream_synchronize(replay));
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(c, &rep));
    CHECK_EQ(rep.device_status, KCTX_OK);
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_stream_destroy(replay));
    wait_tokens_released(c);
    drain(c);
    later_calls(c, 0, launch_again);
    CHECK_NEVER_NAMED_BY_KCTX();
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(destroyed_capture_stream_is_never_named_while_its_graph_replays_and_after) { /* K18 */
    capture_stream_destroyed_before_replay(0);
    capture_stream_destroyed_before_replay(1);
}

/* Replays on the capture stream itself, the graph objects destroyed, then
 * the stream; then the later calls. */
static void capture_stream_destroyed_after_its_graph(int launch_again) {
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    REQUIRE_SIM_OK(sim_stream_begin_capture(caller, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, caller));
    watch(caller);
    sim_graph g = 0;
    sim_graph_exec x = 0;
    REQUIRE_SIM_OK(OWN(sim_stream_end_capture(caller, &g)));
    REQUIRE_SIM_OK(sim_graph_instantiate(&x, g));
    CHECK_SIM_OK(OWN(sim_graph_launch(x, caller)));
    CHECK_SIM_OK(OWN(sim_graph_launch(x, caller)));
    CHECK_SIM_OK(OWN(sim_stream_synchronize(caller)));
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(OWN(sim_stream_destroy(caller)));
    wait_tokens_released(c);
    drain(c);
    later_calls(c, 0, launch_again);
    CHECK_NEVER_NAMED_BY_KCTX();
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(destroyed_capture_stream_is_never_named_after_its_graph_is_gone) { /* K18 */
    capture_stream_destroyed_after_its_graph(0);
    capture_stream_destroyed_after_its_graph(1);
}

KT_TEST(the_watch_sees_a_call_that_names_the_destroyed_stream) {
    /* The ruler itself: a framework (or a kctx) that named the destroyed
     * stream again would be counted, refused as it is. */
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    watch(s);
    CHECK_SIM_OK(OWN(sim_stream_destroy(s)));
    CHECK_EQ(sim_handle_watch_count(), 1);
    CHECK_SIM(sim_stream_query(s), SIM_INVALID_HANDLE); /* not OWN: must be seen */
    CHECK_EQ(sim_handle_watch_count(), 2);
    sim_handle_watch(0);
}
