/*
 * replay_vs_eager — time per launch replayed from a graph against eager
 * launches of the same work.
 *
 * The work: a vector-add callable (c = a + b over 4096 floats, one task of
 * 4 blocks; k_vadd_f32 of the sim test kernels), args fixed.
 *
 * kctx side (value): a graph captured from one kctx_launch on the caller
 * stream, replayed with sim_graph_launch. Baseline: kctx_launch, eagerly, on
 * the same stream with the same args. Two shapes, both sides alike:
 *  - batched (headline): B = 100 launches, then one synchronise of the caller
 *    stream; time / B;
 *  - synchronised: each launch followed by a synchronise; time per launch.
 * The output is checked against the host sum once, before timing.
 *
 * R repeats, the sides' order alternating (replay first, then eager first);
 * medians. After the repeats the output is checked again. Each strategy in
 * its own phase with its own context (without --strategy both, RESIDENT
 * first; the HOST_ORDERED lines end in _host_ordered):
 *   metric replay_vs_eager value=<ns per replay> unit=ns baseline=<ns per eager launch> ratio=<..> n=<R>
 *   metric replay_vs_eager_sync value=<ns per replay+sync> unit=ns baseline=<ns per launch+sync> ratio=<..> n=<R>
 *   metric replay_vs_eager_host_ordered ... and replay_vs_eager_sync_host_ordered ...
 */
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DEFAULT_REPEATS = 7,
    QUICK_REPEATS = 3,
    ELEMS = 4096,
    BATCH = 100
};
#define DEFAULT_N 10L /* batches per measurement */
#define QUICK_N 2L

typedef struct work {
    kctx_context ctx;
    sim_stream s;
    kctx_arg args[4];
    sim_graph_exec exec;
} work;

static void eager(work *w) {
    kctx_status st = kctx_launch(w->ctx, 1, w->args, 4, w->s);
    if (st != KCTX_OK) kb_kctx_check(st, "kctx_launch");
}

static void replayed(work *w) {
    sim_status st = sim_graph_launch(w->exec, w->s);
    if (st != SIM_OK) lb_sim_check(st, "sim_graph_launch");
}

static void sync_stream(work *w) {
    sim_status st = sim_stream_synchronize(w->s);
    if (st != SIM_OK) lb_sim_check(st, "sim_stream_synchronize");
}

/* ns per launch: `batches` x (B launches, one sync), or with sync_each a
 * sync after every launch. */
static double measure(work *w, void (*one)(work *), long batches, int sync_each) {
    uint64_t t0 = kb_now_ns();
    for (long b = 0; b < batches; b++) {
        for (int i = 0; i < BATCH; i++) {
            one(w);
            if (sync_each) sync_stream(w);
        }
        if (!sync_each) sync_stream(w);
    }
    return (double)(kb_now_ns() - t0) / (double)(batches * BATCH);
}

static void check_output(sim_devptr c, const float *a, const float *b) {
    float *got = malloc(ELEMS * sizeof *got);
    if (got == NULL) kb_fatal("out of memory");
    lb_sim_check(
        sim_memcpy(got, (const void *)(uintptr_t)c, ELEMS * sizeof *got, SIM_COPY_DEVICE_TO_HOST),
        "sim_memcpy (result)");
    for (int i = 0; i < ELEMS; i++)
        if (got[i] != a[i] + b[i])
            kb_fatal("vector add: c[%d] = %g, expected %g", i, got[i], a[i] + b[i]);
    free(got);
}

/* One strategy's phase: its own context, graph and buffers; R repeats, the
 * sides' order alternating (replay first on even repeats, eager first on
 * odd ones); its two metric lines. Returns non-zero when a line could not
 * be printed. */
static int run_strategy(kctx_strategy strategy, const kb_options *opt) {
    const int R = opt->repeats;
    const long batches = opt->n;
    const int run_k = !opt->baseline_only, run_b = !opt->kctx_only;
    const char *sname = kctx_strategy_name(strategy);

    work w;
    memset(&w, 0, sizeof w);
    w.ctx = lb_context_open(strategy);
    if (lb_context_strategy(w.ctx) != strategy)
        kb_fatal("the context runs the %s strategy, not %s",
                 kctx_strategy_name(lb_context_strategy(w.ctx)), sname);
    lb_image img = lb_image_vadd(4);
    kb_kctx_check(kctx_prepare(w.ctx, 1, img.bytes, img.size), "kctx_prepare(vector_add)");
    lb_image_free(&img);
    lb_sim_check(sim_stream_create(&w.s), "sim_stream_create");

    const size_t bytes = ELEMS * sizeof(float);
    float *ha = malloc(bytes), *hb = malloc(bytes);
    if (ha == NULL || hb == NULL) kb_fatal("out of memory");
    for (int i = 0; i < ELEMS; i++) ha[i] = (float)i, hb[i] = (float)(2 * i + 1);
    sim_devptr a = 0, b = 0, c = 0;
    lb_sim_check(sim_malloc(&a, bytes), "sim_malloc");
    lb_sim_check(sim_malloc(&b, bytes), "sim_malloc");
    lb_sim_check(sim_malloc(&c, bytes), "sim_malloc");
    lb_sim_check(sim_memcpy((void *)(uintptr_t)a, ha, bytes, SIM_COPY_HOST_TO_DEVICE),
                 "sim_memcpy");
    lb_sim_check(sim_memcpy((void *)(uintptr_t)b, hb, bytes, SIM_COPY_HOST_TO_DEVICE),
                 "sim_memcpy");
    w.args[0] = KCTX_TENSOR(a, bytes);
    w.args[1] = KCTX_TENSOR(b, bytes);
    w.args[2] = KCTX_TENSOR(c, bytes);
    w.args[3] = KCTX_SCALAR(ELEMS);

    /* the graph, and one check of each side's output */
    sim_graph g = 0;
    lb_sim_check(sim_stream_begin_capture(w.s, SIM_CAPTURE_MODE_THREAD_LOCAL),
                 "sim_stream_begin_capture");
    kb_kctx_check(kctx_launch(w.ctx, 1, w.args, 4, w.s), "kctx_launch (captured)");
    lb_sim_check(sim_stream_end_capture(w.s, &g), "sim_stream_end_capture");
    lb_sim_check(sim_graph_instantiate(&w.exec, g), "sim_graph_instantiate");
    lb_sim_check(sim_graph_destroy(g), "sim_graph_destroy");
    eager(&w);
    sync_stream(&w);
    check_output(c, ha, hb);
    lb_sim_check(sim_memset_async(c, 0, bytes, w.s), "sim_memset_async");
    replayed(&w);
    sync_stream(&w);
    check_output(c, ha, hb);
    (void)measure(&w, eager, 1, 0);
    (void)measure(&w, replayed, 1, 0);

    kb_progress("%s: %d repeats of %ld x %d launches per side, batched and synchronised, the "
                "sides' order alternating%s",
                sname, R, batches, BATCH, opt->quick ? " (quick)" : "");
    double *rb = kb_doubles(R), *bb = kb_doubles(R), *ks = kb_doubles(R), *bs = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        if (r % 2 == 0) {
            if (run_k) rb[r] = measure(&w, replayed, batches, 0);
            if (run_b) bb[r] = measure(&w, eager, batches, 0);
            if (run_b) bs[r] = measure(&w, eager, batches, 1);
            if (run_k) ks[r] = measure(&w, replayed, batches, 1);
        } else {
            if (run_b) bb[r] = measure(&w, eager, batches, 0);
            if (run_k) rb[r] = measure(&w, replayed, batches, 0);
            if (run_k) ks[r] = measure(&w, replayed, batches, 1);
            if (run_b) bs[r] = measure(&w, eager, batches, 1);
        }
        kb_progress("%s: repeat %d/%d: batched replay %.0f ns, eager %.0f ns; synchronised "
                    "replay %.0f ns, eager %.0f ns",
                    sname, r + 1, R, rb[r], bb[r], ks[r], bs[r]);
    }
    /* the repeats left the right sum (a launch or replay writing anything else would show) */
    check_output(c, ha, hb);

    lb_sim_check(sim_graph_exec_destroy(w.exec), "sim_graph_exec_destroy");
    lb_sim_check(sim_stream_destroy(w.s), "sim_stream_destroy");
    kb_kctx_close(w.ctx);
    lb_sim_check(sim_free(a), "sim_free");
    lb_sim_check(sim_free(b), "sim_free");
    lb_sim_check(sim_free(c), "sim_free");
    free(ha), free(hb);

    int bad = 0;
    if (run_k) {
        bad |= lb_print_compared("replay_vs_eager", strategy, rb, run_b, bb, R);
        bad |= lb_print_compared("replay_vs_eager_sync", strategy, ks, run_b, bs, R);
    }
    free(rb), free(bb), free(ks), free(bs);
    return bad;
}

int main(int argc, char **argv) {
    kb_options opt;
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    kctx_strategy strategies[2];
    int ns = lb_strategies(opt.strategy, strategies);
    int bad = 0;
    for (int i = 0; i < ns; i++) bad |= run_strategy(strategies[i], &opt);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
