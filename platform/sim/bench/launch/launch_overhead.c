/*
 * launch_overhead — host time of one kctx_launch on the sim, steady state,
 * with device execution held so that only the host path is timed, under
 * each execution strategy.
 *
 * kctx side (value): N launches of a prepared callable on a caller stream,
 * timed on the host, divided by N. Before the timing, a sim hold is armed on
 * the first execution of the context's acquire program (the first kernel of
 * its AICPU stream: kctx_rt_acquire under RESIDENT, kctx_rt_ho_acquire under
 * HOST_ORDERED), one launch is made and the hold is waited for: from then on
 * nothing of the context runs, so the N launches only enqueue. The hold is
 * released and the caller stream synchronised after every repeat (a held
 * device queue grows: N = 500 keeps the sim's allocator, which serves ~17
 * host blocks per held launch, from dominating both sides).
 *
 * Baseline: the platform operations of the strategy's launch, plus one
 * current-device read, issued through a platform table of thin sim wrappers
 * on plain sim streams and events, held the same way. RESIDENT: the K20
 * sequence — 5 event records, 4 waits, 3 kernel launches with kctx's
 * parameter sizes (16 B, 40 B, 48 B + 16 B per arg). HOST_ORDERED (section
 * 0b): 5 records, 4 waits, the acquire and finalize kernels (24 B) and one
 * kernel per task with the task ABI's block (32 B + 8 B per binding).
 * libkctx's own sim table is internal to the library (hidden), so the
 * benchmark carries a copy of its shape (lb_sim_ops).
 *
 * Each strategy is measured in its own phase, with its own context and its
 * own baseline: A B A B for R repeats (the order reversed on odd repeats);
 * medians. Without --strategy both strategies are measured, RESIDENT first;
 * the RESIDENT figures keep their names, the HOST_ORDERED ones end in
 * _host_ordered. Lines (per strategy):
 *   metric launch_overhead value=<ns> unit=ns baseline=<ns> ratio=<kctx/base> n=<R>
 *       an empty callable (one task of the empty kernel, no arguments)
 *   metric launch_overhead_args4 value=<ns> unit=ns baseline=<ns> ratio=<..> n=<R>
 *       vector add: 3 tensors + 1 scalar (its tensor ranges were looked up
 *       at the warm-up and are trusted since: no allocation was freed)
 *   metric launch_overhead_queries value=<ns> unit=ns n=<R>
 *       the baseline plus the one platform query kctx's launch makes
 *       besides the launch's sequence and the current-device read (the
 *       caller stream's device and capture state): the difference to
 *       launch_overhead is kctx's own logic.
 */
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DEFAULT_REPEATS = 21,
    QUICK_REPEATS = 3,
    WARMUP = 64,
    VADD_N = 1024
};
#define DEFAULT_N 500L
#define QUICK_N 300L

typedef struct bench {
    kctx_strategy strategy;
    kctx_context ctx;
    sim_stream caller;  /* kctx's caller stream */
    sim_stream bcaller; /* the baseline's caller stream */
    sim_function acquire;
    lb_chain chain;
    const kctx_platform_ops *ops;
    sim_devptr a, b, c;
    kctx_arg vargs[4];
    int device;
} bench;

static void hold_wait(int id) {
    lb_sim_check(sim_hold_wait_reached(id, 10000), "sim_hold_wait_reached");
}

static void hold_release(int id, sim_stream s) {
    lb_sim_check(sim_hold_release(id), "sim_hold_release");
    lb_sim_check(sim_stream_synchronize(s), "sim_stream_synchronize");
}

/* kctx: ns per launch of callable `id` with `args`. */
static double run_kctx(bench *B, uint64_t id, const kctx_arg *args, uint32_t nargs, long n) {
    int h = lb_hold_arm(B->device, B->acquire);
    kb_kctx_check(kctx_launch(B->ctx, id, args, nargs, B->caller), "kctx_launch (hold)");
    hold_wait(h);
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        kctx_status s = kctx_launch(B->ctx, id, args, nargs, B->caller);
        if (s != KCTX_OK) kb_kctx_check(s, "kctx_launch");
    }
    uint64_t t1 = kb_now_ns();
    hold_release(h, B->caller);
    return (double)(t1 - t0) / (double)n;
}

/* One launch's platform operations, the strategy's way (the empty callable:
 * one task of one block, no binding; vector add: one task of 4 blocks, 4
 * bindings). */
static int base_chain(bench *B, uint32_t nargs) {
    if (B->strategy == KCTX_STRATEGY_HOST_ORDERED)
        return lb_chain_enqueue_ho(&B->chain, B->ops, B->bcaller, 1, nargs ? 4 : 1, nargs, 1);
    return lb_chain_enqueue(&B->chain, B->ops, B->bcaller, nargs, nargs ? 4 : 1, 1);
}

/* The platform query of kctx's launch besides K20 and the current-device
 * read: the caller stream's device and capture state, in one call (the
 * sim adapter's stream_info). kctx asks the AICPU stream's capture state
 * only after a captured launch, and looks a tensor range up only once while
 * no allocation of the device is freed: neither happens here. */
static int queries(bench *B) {
    int dev = -1;
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    uint64_t cid = 0;
    sim_graph g = 0;
    return sim_stream_get_info(B->bcaller, &dev, &cs, &cid, &g);
}

/* Baseline: ns per K20 sequence (+ one current-device read, + the launch's
 * queries when `with_queries`). */
static double run_base(bench *B, uint32_t nargs, int with_queries, long n) {
    int h = lb_hold_arm(B->device, B->chain.noop);
    lb_sim_check((sim_status)base_chain(B, nargs), "baseline chain (hold)");
    hold_wait(h);
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        int st = with_queries ? queries(B) : 0;
        if (!st) st = base_chain(B, nargs);
        if (st) lb_sim_check((sim_status)st, "baseline chain");
    }
    uint64_t t1 = kb_now_ns();
    hold_release(h, B->bcaller);
    return (double)(t1 - t0) / (double)n;
}

/* One strategy's phase: its own context, callables, streams and baseline
 * chain; R interleaved repeats; its metric lines. Returns non-zero when a
 * line could not be printed. */
static int measure(kctx_strategy strategy, const kb_options *opt) {
    const int R = opt->repeats;
    const long n = opt->n;
    const int run_k = !opt->baseline_only, run_b = !opt->kctx_only;
    const int ho = strategy == KCTX_STRATEGY_HOST_ORDERED;
    const char *sname = kctx_strategy_name(strategy);

    bench B;
    memset(&B, 0, sizeof B);
    B.strategy = strategy;
    lb_sim_check(sim_get_device(&B.device), "sim_get_device");
    B.ops = lb_sim_ops();
    B.ctx = lb_context_open(strategy);
    if (lb_context_strategy(B.ctx) != strategy)
        kb_fatal("the context runs the %s strategy, not %s",
                 kctx_strategy_name(lb_context_strategy(B.ctx)), sname);
    lb_image noop = lb_image_noop("empty"), vadd = lb_image_vadd(4);
    kb_kctx_check(kctx_prepare(B.ctx, 1, noop.bytes, noop.size), "kctx_prepare(empty)");
    kb_kctx_check(kctx_prepare(B.ctx, 2, vadd.bytes, vadd.size), "kctx_prepare(vector_add)");
    lb_image_free(&noop);
    lb_image_free(&vadd);
    const size_t vbytes = VADD_N * sizeof(float);
    lb_sim_check(sim_malloc(&B.a, vbytes), "sim_malloc");
    lb_sim_check(sim_malloc(&B.b, vbytes), "sim_malloc");
    lb_sim_check(sim_malloc(&B.c, vbytes), "sim_malloc");
    B.vargs[0] = KCTX_TENSOR(B.a, vbytes);
    B.vargs[1] = KCTX_TENSOR(B.b, vbytes);
    B.vargs[2] = KCTX_TENSOR(B.c, vbytes);
    B.vargs[3] = KCTX_SCALAR(VADD_N);
    lb_sim_check(sim_stream_create(&B.caller), "sim_stream_create(caller)");
    lb_sim_check(sim_stream_create(&B.bcaller), "sim_stream_create(baseline caller)");
    lb_sim_check(sim_memset_async(B.a, 0, vbytes, B.caller), "sim_memset_async");
    lb_sim_check(sim_memset_async(B.b, 0, vbytes, B.caller), "sim_memset_async");
    kctx_resource_info info;
    memset(&info, 0, sizeof info); /* KCTX_RESOURCE_INFO_INIT trips -Wmissing-field-initializers */
    info.size = sizeof info;
    kb_kctx_check(kctx_get_resources(B.ctx, &info), "kctx_get_resources");
    const char *acquire = ho ? "kctx_rt_ho_acquire" : "kctx_rt_acquire";
    lb_sim_check(sim_module_get_function(&B.acquire, info.programs_module, acquire),
                 "sim_module_get_function(acquire program)");
    lb_chain_open(&B.chain);

    /* warm both sides (and count kctx's platform calls per launch) */
    uint64_t calls0 = 0, calls1 = 0;
    kb_kctx_check(kctx_platform_calls(B.ctx, &calls0), "kctx_platform_calls");
    for (int i = 0; i < WARMUP; i++) {
        kb_kctx_check(kctx_launch(B.ctx, 1, NULL, 0, B.caller), "kctx_launch (warm-up)");
        lb_sim_check((sim_status)base_chain(&B, 0), "baseline chain (warm-up)");
    }
    kb_kctx_check(kctx_platform_calls(B.ctx, &calls1), "kctx_platform_calls");
    for (int i = 0; i < WARMUP; i++) {
        kb_kctx_check(kctx_launch(B.ctx, 2, B.vargs, 4, B.caller), "kctx_launch (warm-up)");
        lb_sim_check((sim_status)base_chain(&B, 4), "baseline chain (warm-up)");
    }
    lb_sim_check(sim_stream_synchronize(B.caller), "sim_stream_synchronize");
    lb_sim_check(sim_stream_synchronize(B.bcaller), "sim_stream_synchronize");
    kb_progress("%s: kctx makes %.1f platform calls per launch of the empty callable (baseline: "
                "13; +queries: 14)",
                sname, (double)(calls1 - calls0) / WARMUP);
    kb_progress("%s: %d interleaved repeats of %ld held launches per side%s", sname, R, n,
                opt->quick ? " (quick)" : "");

    double *k0 = kb_doubles(R), *b0 = kb_doubles(R), *k4 = kb_doubles(R), *b4 = kb_doubles(R),
           *q0 = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        /* A B on even repeats, B A on odd ones: neither side always runs
         * right after the other's release and synchronise. */
        if (r % 2 == 0) {
            if (run_k) k0[r] = run_kctx(&B, 1, NULL, 0, n);
            if (run_b) b0[r] = run_base(&B, 0, 0, n);
            if (run_b) q0[r] = run_base(&B, 0, 1, n);
            if (run_k) k4[r] = run_kctx(&B, 2, B.vargs, 4, n);
            if (run_b) b4[r] = run_base(&B, 4, 0, n);
        } else {
            if (run_b) b4[r] = run_base(&B, 4, 0, n);
            if (run_k) k4[r] = run_kctx(&B, 2, B.vargs, 4, n);
            if (run_b) q0[r] = run_base(&B, 0, 1, n);
            if (run_b) b0[r] = run_base(&B, 0, 0, n);
            if (run_k) k0[r] = run_kctx(&B, 1, NULL, 0, n);
        }
        kb_progress("%s: repeat %d/%d: empty kctx %.0f ns, baseline %.0f ns (+queries %.0f ns); "
                    "4 args kctx %.0f ns, baseline %.0f ns",
                    sname, r + 1, R, k0[r], b0[r], q0[r], k4[r], b4[r]);
    }

    lb_chain_close(&B.chain);
    lb_sim_check(sim_stream_destroy(B.caller), "sim_stream_destroy");
    lb_sim_check(sim_stream_destroy(B.bcaller), "sim_stream_destroy");
    kb_kctx_close(B.ctx);
    lb_sim_check(sim_free(B.a), "sim_free");
    lb_sim_check(sim_free(B.b), "sim_free");
    lb_sim_check(sim_free(B.c), "sim_free");

    int bad = 0;
    if (run_k) {
        bad |= lb_print_compared("launch_overhead", strategy, k0, run_b, b0, R);
        bad |= lb_print_compared("launch_overhead_args4", strategy, k4, run_b, b4, R);
    }
    if (run_b) bad |= lb_print_value("launch_overhead_queries", strategy, q0, "ns", R);
    free(k0), free(b0), free(k4), free(b4), free(q0);
    return bad;
}

int main(int argc, char **argv) {
    kb_options opt;
    kb_set_program_name("kctx_bench_launch_overhead");
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    kctx_strategy strategies[2];
    int ns = lb_strategies(opt.strategy, strategies);
    int bad = 0;
    for (int i = 0; i < ns; i++) bad |= measure(strategies[i], &opt);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
