/*
 * test_guard.c — the launch guard against a second executable copy of one
 * captured graph (K23): both copies carry the same launch identity, so the
 * guard alone cannot tell them apart. Under both execution strategies:
 *  - RESIDENT: the run is claimed once (the second copy's scheduler finds
 *    the run taken), so the launch runs exactly once;
 *  - HOST_ORDERED: the guard is taken only when free, so the second copy's
 *    acquire is refused and writes CONCURRENT_LAUNCH, which closes every
 *    task gate: both runs stop at their next task (the launch runs zero
 *    times), nothing is corrupted, nothing hangs (section 0b).
 */
#include "kt.h"

#include <string.h>

static void two_copies(kctx_strategy strategy) {
    kt_image append = kt_image_append();
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    cfg.strategy = strategy;
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    const int ho = strategy == KCTX_STRATEGY_HOST_ORDERED;
    REQUIRE_OK(kctx_prepare(c, 1, append.bytes, append.size));
    sim_devptr log = 0;
    REQUIRE_SIM_OK(sim_malloc(&log, 4096));
    static const uint8_t zero[4096];
    CHECK_SIM_OK(sim_memcpy((void *)(uintptr_t)log, zero, sizeof zero, SIM_COPY_HOST_TO_DEVICE));
    sim_stream s = 0, sa = 0, sb = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_stream_create(&sa));
    REQUIRE_SIM_OK(sim_stream_create(&sb));
    kctx_arg arg = KCTX_TENSOR(log, 4096);
    sim_graph g = 0;
    sim_graph_exec x1 = 0, x2 = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_OK(kctx_launch(c, 1, &arg, 1, s));
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    CHECK_SIM_OK(sim_graph_instantiate(&x1, g));
    CHECK_SIM_OK(sim_graph_instantiate(&x2, g));
    /* Hold each copy's AICore work (resident: its workers; host-ordered:
     * its task kernel, the second kernel it runs after its acquire): copy 1
     * then holds the guard (its acquire ran first) while copy 2 runs its
     * acquire step. */
    kctx_resource_info info = kt_resources(c);
    sim_function worker = 0;
    if (!ho) CHECK_SIM_OK(sim_module_get_function(&worker, info.programs_module, "kctx_rt_worker"));
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_KERNEL;
    h.fn = worker;
    h.nth = ho ? 2 : 1;
    h.device = 0;
    int h1 = -1, h2 = -1;
    CHECK_SIM_OK(sim_hold_arm(&h, &h1));
    CHECK_SIM_OK(sim_graph_launch(x1, sa));
    CHECK_SIM_OK(sim_hold_wait_reached(h1, 10000));
    CHECK_SIM_OK(sim_hold_arm(&h, &h2));
    CHECK_SIM_OK(sim_graph_launch(x2, sb));
    CHECK_SIM_OK(sim_hold_wait_reached(h2, 10000));
    CHECK_SIM_OK(sim_hold_release(h1));
    CHECK_SIM_OK(sim_hold_release(h2));
    /* no hang */
    CHECK_SIM_OK(sim_stream_synchronize_timeout(sa, 10000));
    CHECK_SIM_OK(sim_stream_synchronize_timeout(sb, 10000));
    /* resident: the launch ran exactly once (copy 2 was refused); host-
     * ordered: the overlap closed every gate, both runs stopped; nothing
     * corrupted either way */
    uint32_t runs = 0;
    CHECK_SIM_OK(sim_atomic_read_u32(log, &runs));
    CHECK_EQ(runs, ho ? 0 : 1);
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_K(kctx_check(c, &rep), KCTX_CONCURRENT_LAUNCH);
    CHECK_EQ(rep.concurrent_launches, 1);
    CHECK_SIM_OK(sim_graph_exec_destroy(x1));
    CHECK_SIM_OK(sim_graph_exec_destroy(x2));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_stream_destroy(sa));
    CHECK_SIM_OK(sim_stream_destroy(sb));
    CHECK_SIM_OK(sim_free(log));
    kt_finish(c);
}

KT_TEST(two_copies_of_one_graph_replayed_unordered_run_the_launch_once_and_never_hang) { /* K23 */
    two_copies(KCTX_STRATEGY_RESIDENT);
}

KT_TEST(two_copies_of_one_graph_unordered_stop_both_runs_at_their_gates) { /* K23, section 0b */
    two_copies(KCTX_STRATEGY_HOST_ORDERED);
}
