/*
 * launch_allocs — allocations made by kctx's own code during N = 10,000
 * launches (K11: the goal is zero), and the platform's beside them.
 *
 * Host heap: this executable interposes the C allocator (alloc_track.c) and
 * attributes each call to the library it came from. Device: the sim's
 * sim_malloc call counter (only kctx could call it during the window).
 *
 * The launches are of a vector-add callable (3 tensors and a scalar) on one
 * caller stream, eagerly, in batches of 100 followed by a synchronise of the
 * caller stream (the benchmark's, not kctx's, call). Before each batch the
 * benchmark frees one spare device allocation of its own (made before the
 * window), so the batch's first launch looks its three tensor ranges up
 * again and remembers them (K18's cache; the program fails unless it made
 * exactly 3 lookups per batch). 100 launches and a synchronise warm
 * everything first. Each strategy in its own phase with its own context
 * (both without --strategy, RESIDENT first; HOST_ORDERED's lines end in
 * _host_ordered):
 *
 *   metric launch_allocs value=<kctx host allocations + device allocations> unit=count n=<launches>
 *   metric platform_allocs value=<host allocations by libkctx_sim.so> unit=count n=<launches>
 *   metric launch_allocs_host_ordered ... and platform_allocs_host_ordered ...
 *
 * A sanitizer build cannot interpose the allocator: both lines are then
 * skipped with a note on stderr ("launch_allocs: not measured ...").
 */
#include "alloc_track.h"
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    BATCH = 100,
    VADD_N = 1024
};
#define DEFAULT_N 10000L
#define QUICK_N 1000L

/* One strategy's phase. Returns 1 when a line could not be printed, 0
 * otherwise (also when the host side is not measured). */
static int run_strategy(kctx_strategy strategy, const kb_options *opt, int measured) {
    const long n = opt->n;
    const long nbatches = (n + BATCH - 1) / BATCH;
    const char *sname = kctx_strategy_name(strategy);
    kctx_context ctx = lb_context_open(strategy);
    if (lb_context_strategy(ctx) != strategy)
        kb_fatal("the context runs the %s strategy, not %s",
                 kctx_strategy_name(lb_context_strategy(ctx)), sname);
    lb_image img = lb_image_vadd(4);
    kb_kctx_check(kctx_prepare(ctx, 1, img.bytes, img.size), "kctx_prepare(vector_add)");
    lb_image_free(&img);

    const size_t bytes = VADD_N * sizeof(float);
    sim_devptr a = 0, b = 0, c = 0;
    sim_stream s = 0;
    lb_sim_check(sim_malloc(&a, bytes), "sim_malloc");
    lb_sim_check(sim_malloc(&b, bytes), "sim_malloc");
    lb_sim_check(sim_malloc(&c, bytes), "sim_malloc");
    /* one spare allocation per batch, freed before the batch: the device's
     * free counter moves, so the batch's first launch looks its three
     * tensor ranges up again (the path that remembers them runs too) */
    sim_devptr *spare = calloc((size_t)nbatches, sizeof *spare);
    if (spare == NULL) kb_fatal("out of memory");
    for (long i = 0; i < nbatches; i++) lb_sim_check(sim_malloc(&spare[i], 64), "sim_malloc");
    lb_sim_check(sim_stream_create(&s), "sim_stream_create");
    lb_sim_check(sim_memset_async(a, 0, bytes, s), "sim_memset_async");
    lb_sim_check(sim_memset_async(b, 0, bytes, s), "sim_memset_async");
    const kctx_arg args[4] = {KCTX_TENSOR(a, bytes), KCTX_TENSOR(b, bytes), KCTX_TENSOR(c, bytes),
                              KCTX_SCALAR(VADD_N)};

    for (int i = 0; i < BATCH; i++)
        kb_kctx_check(kctx_launch(ctx, 1, args, 4, s), "kctx_launch (warm-up)");
    lb_sim_check(sim_stream_synchronize(s), "sim_stream_synchronize");

    kb_progress("%s: %ld launches of vector_add in batches of %d, each batch after a free on the "
                "device and followed by a synchronise%s",
                sname, n, BATCH, opt->quick ? " (quick)" : "");
    at_counts before, after;
    at_snapshot(&before);
    uint64_t dev_alloc0 = sim_calls(SIM_OP_MALLOC, -1), dev_free0 = sim_calls(SIM_OP_FREE, -1);
    uint64_t lookups0 = kctx_thread_platform_calls(KCTX_POP_MEM_RANGE_CHECK);
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        if (i % BATCH == 0) lb_sim_check(sim_free(spare[i / BATCH]), "sim_free (spare)");
        kctx_status st = kctx_launch(ctx, 1, args, 4, s);
        if (st != KCTX_OK) kb_kctx_check(st, "kctx_launch");
        if ((i + 1) % BATCH == 0 || i + 1 == n)
            lb_sim_check(sim_stream_synchronize(s), "sim_stream_synchronize");
    }
    uint64_t t1 = kb_now_ns();
    uint64_t lookups = kctx_thread_platform_calls(KCTX_POP_MEM_RANGE_CHECK) - lookups0;
    uint64_t dev_allocs = sim_calls(SIM_OP_MALLOC, -1) - dev_alloc0;
    uint64_t dev_frees = sim_calls(SIM_OP_FREE, -1) - dev_free0;
    at_snapshot(&after);

    lb_sim_check(sim_stream_destroy(s), "sim_stream_destroy");
    kb_kctx_close(ctx);
    lb_sim_check(sim_free(a), "sim_free");
    lb_sim_check(sim_free(b), "sim_free");
    lb_sim_check(sim_free(c), "sim_free");
    free(spare);

    if (lookups != 3 * (uint64_t)nbatches)
        kb_fatal("%s: %llu tensor range lookups, expected 3 per batch (%ld batches)", sname,
                 (unsigned long long)lookups, nbatches);
    kb_progress("%s: %.0f ns per launch + execution (batches of %d); %llu range lookups", sname,
                (double)(t1 - t0) / (double)n, BATCH, (unsigned long long)lookups);
    kb_progress("%s: device: %llu allocations, %llu frees (the benchmark's %ld spares)", sname,
                (unsigned long long)dev_allocs, (unsigned long long)dev_frees, nbatches);
    if (!measured) {
        kb_progress("launch_allocs: not measured: %s; platform_allocs skipped too",
                    at_unavailable_reason());
        return 0;
    }
    static const char *names[AT_OWNERS] = {"other", "libkctx.so", "libkctx_sim.so"};
    for (int o = 0; o < AT_OWNERS; o++)
        kb_progress("%s: host, %s: %llu allocations, %llu frees", sname, names[o],
                    (unsigned long long)(after.allocs[o] - before.allocs[o]),
                    (unsigned long long)(after.frees[o] - before.frees[o]));
    uint64_t kctx_allocs = after.allocs[AT_KCTX] - before.allocs[AT_KCTX];
    uint64_t sim_allocs = after.allocs[AT_SIM] - before.allocs[AT_SIM];
    char n1[96], n2[96];
    kb_metric m1 = {lb_metric_name(n1, sizeof n1, "launch_allocs", strategy),
                    (double)(kctx_allocs + dev_allocs),
                    "count",
                    KB_BASELINE_OMIT,
                    0.0,
                    0,
                    0.0,
                    (int)n};
    kb_metric m2 = {lb_metric_name(n2, sizeof n2, "platform_allocs", strategy),
                    (double)sim_allocs,
                    "count",
                    KB_BASELINE_OMIT,
                    0.0,
                    0,
                    0.0,
                    (int)n};
    int bad = kb_metric_print(&m1) != 0;
    bad |= kb_metric_print(&m2) != 0;
    return bad;
}

int main(int argc, char **argv) {
    kb_options opt;
    int measured = at_available();
    if (measured && at_init() != 0)
        kb_fatal("cannot attribute allocations: libkctx.so or libkctx_sim.so not found");
    int rc = kb_parse_options(argc, argv, &opt, 1, DEFAULT_N, 1, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    kctx_strategy strategies[2];
    int ns = lb_strategies(opt.strategy, strategies);
    int bad = 0;
    for (int i = 0; i < ns; i++) bad |= run_strategy(strategies[i], &opt, measured);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
