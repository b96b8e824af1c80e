/*
 * replay_protocol — replay + synchronise time of a graph holding one launch
 * of an empty callable, against the same graph shape built from empty
 * kernels: what kctx's device protocol (acquire step, scheduler, workers,
 * mailboxes) costs on top of the bare topology. Replay runs no kctx host
 * code, so there is no goal: the figure is reported.
 *
 * kctx side (value): on a caller stream, capture one kctx_launch of a
 * callable with one task running the empty kernel k_noop (block_dim 1, no
 * arguments); instantiate. One measurement: M x (sim_graph_launch, then
 * sim_stream_synchronize of the caller stream), divided by M.
 *
 * Baseline: on another caller stream, capture the K20 sequence with plain
 * sim streams and events and k_noop for every program (record, wait, AICPU
 * kernel, record, wait, AICore kernel of one block (kctx's worker launch
 * for the one-block empty callable), record,
 * AICPU kernel, wait, record, wait, record: the same 12 nodes and edges, the
 * same parameter sizes); instantiate; time it the same way.
 *
 * R repeats, the two sides' order alternating (kctx then baseline, baseline
 * then kctx, ...); medians. Every replay's status is checked, and after the
 * last one the kctx side's device report too (kctx_check: device OK, no
 * refused replay, no concurrent launch — a replay the device protocol
 * skipped or refused would show there), so the figure is of work done.
 *   metric replay_protocol value=<ns per replay+sync> unit=ns baseline=<ns> ratio=<kctx/base> n=<R>
 */
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DEFAULT_REPEATS = 11,
    QUICK_REPEATS = 3,
    WARMUP = 20
};
#define DEFAULT_N 500L
#define QUICK_N 50L

static sim_graph_exec capture(sim_stream s, void (*body)(void *), void *arg, const char *what) {
    sim_graph g = 0;
    sim_graph_exec x = 0;
    lb_sim_check(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_THREAD_LOCAL),
                 "sim_stream_begin_capture");
    body(arg);
    lb_sim_check(sim_stream_end_capture(s, &g), what);
    lb_sim_check(sim_graph_instantiate(&x, g), "sim_graph_instantiate");
    lb_sim_check(sim_graph_destroy(g), "sim_graph_destroy");
    return x;
}

typedef struct kside {
    kctx_context ctx;
    sim_stream s;
} kside;

typedef struct bside {
    lb_chain chain;
    sim_stream s;
} bside;

static void kctx_body(void *arg) {
    kside *k = arg;
    kb_kctx_check(kctx_launch(k->ctx, 1, NULL, 0, k->s), "kctx_launch (captured)");
}

static void base_body(void *arg) {
    bside *b = arg;
    lb_sim_check((sim_status)lb_chain_enqueue(&b->chain, lb_sim_ops(), b->s, 0, 1, 0),
                 "baseline chain (captured)");
}

static double replay(sim_graph_exec x, sim_stream s, long m) {
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < m; i++) {
        sim_status st = sim_graph_launch(x, s);
        if (st == SIM_OK) st = sim_stream_synchronize(s);
        if (st != SIM_OK) lb_sim_check(st, "replay + synchronise");
    }
    return (double)(kb_now_ns() - t0) / (double)m;
}

int main(int argc, char **argv) {
    kb_options opt;
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    const int R = opt.repeats;
    const long m = opt.n;
    const int run_k = !opt.baseline_only, run_b = !opt.kctx_only;

    kside K = {0, 0};
    bside Bs;
    memset(&Bs, 0, sizeof Bs);
    K.ctx = lb_context_open((uint32_t)opt.strategy);
    lb_image img = lb_image_noop("empty");
    kb_kctx_check(kctx_prepare(K.ctx, 1, img.bytes, img.size), "kctx_prepare(empty)");
    lb_image_free(&img);
    lb_sim_check(sim_stream_create(&K.s), "sim_stream_create");
    lb_sim_check(sim_stream_create(&Bs.s), "sim_stream_create");
    lb_chain_open(&Bs.chain);

    sim_graph_exec kx = capture(K.s, kctx_body, &K, "sim_stream_end_capture (kctx launch)");
    sim_graph_exec bx = capture(Bs.s, base_body, &Bs, "sim_stream_end_capture (baseline chain)");
    (void)replay(kx, K.s, WARMUP);
    (void)replay(bx, Bs.s, WARMUP);

    kb_progress("%d interleaved repeats of %ld replays + synchronise per side (%u cores)%s", R, m,
                Bs.chain.cores, opt.quick ? " (quick)" : "");
    double *kv = kb_doubles(R), *bv = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        /* The sides alternate which goes first: kctx, baseline in even
         * repeats; baseline, kctx in odd ones. */
        const int base_first = r % 2 == 1;
        if (run_b && base_first) bv[r] = replay(bx, Bs.s, m);
        if (run_k) kv[r] = replay(kx, K.s, m);
        if (run_b && !base_first) bv[r] = replay(bx, Bs.s, m);
        kb_progress("repeat %d/%d (%s first): kctx graph %.0f ns, baseline graph %.0f ns", r + 1, R,
                    base_first ? "baseline" : "kctx", kv[r], bv[r]);
    }

    if (run_k) { /* every replay ran the protocol: none refused, none overlapped */
        kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
        kb_kctx_check(kctx_check(K.ctx, &rep), "kctx_check after the replays");
        if (rep.device_status != KCTX_OK || rep.refused_replays != 0 ||
            rep.concurrent_launches != 0) {
            fprintf(stderr,
                    "replay_protocol: error: after the replays the device reports %s, %u refused "
                    "replays, %u concurrent launches\n",
                    kctx_status_name(rep.device_status), rep.refused_replays,
                    rep.concurrent_launches);
            return EXIT_FAILURE;
        }
    }
    lb_sim_check(sim_graph_exec_destroy(kx), "sim_graph_exec_destroy");
    lb_sim_check(sim_graph_exec_destroy(bx), "sim_graph_exec_destroy");
    lb_chain_close(&Bs.chain);
    lb_sim_check(sim_stream_destroy(K.s), "sim_stream_destroy");
    lb_sim_check(sim_stream_destroy(Bs.s), "sim_stream_destroy");
    kb_kctx_close(K.ctx);

    int bad = 0;
    if (run_k)
        bad |= kb_metric_print_compared("replay_protocol", kb_median(kv, (size_t)R), "ns", run_b,
                                        kb_median(bv, (size_t)R), R) != 0;
    else {
        kb_metric mb = {"replay_protocol_baseline",
                        kb_median(bv, (size_t)R),
                        "ns",
                        KB_BASELINE_OMIT,
                        0.0,
                        0,
                        0.0,
                        R};
        bad |= kb_metric_print(&mb) != 0;
    }
    free(kv), free(bv);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
