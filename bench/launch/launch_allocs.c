/*
 * launch_allocs — allocations made by kctx's own code during N = 10,000
 * launches (K11: the goal is zero), and the platform's beside them.
 *
 * Host heap: this executable interposes the C allocator (alloc_track.c) and
 * attributes each call to the library it came from. Device: the sim's
 * sim_malloc call counter (only kctx could call it during the window).
 *
 * The launches are of a vector-add callable (3 tensors and a scalar, so the
 * per-tensor preflight runs too) on one caller stream, eagerly, in batches
 * of 100 followed by a synchronise of the caller stream (the benchmark's,
 * not kctx's, call). 100 launches and a synchronise warm everything first.
 *
 *   metric launch_allocs value=<kctx host allocations + device allocations> unit=count n=<launches>
 *   metric platform_allocs value=<host allocations by libkctx_sim.so> unit=count n=<launches>
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

int main(int argc, char **argv) {
    kb_options opt;
    int measured = at_available();
    if (measured && at_init() != 0)
        kb_fatal("cannot attribute allocations: libkctx.so or libkctx_sim.so not found");
    int rc = kb_parse_options(argc, argv, &opt, 1, DEFAULT_N, 1, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    const long n = opt.n;

    kctx_context ctx = lb_context_open((uint32_t)opt.strategy);
    lb_image img = lb_image_vadd(4);
    lb_kctx_check(kctx_prepare(ctx, 1, img.bytes, img.size), "kctx_prepare(vector_add)");
    lb_image_free(&img);

    const size_t bytes = VADD_N * sizeof(float);
    sim_devptr a = 0, b = 0, c = 0;
    sim_stream s = 0;
    lb_sim_check(sim_malloc(&a, bytes), "sim_malloc");
    lb_sim_check(sim_malloc(&b, bytes), "sim_malloc");
    lb_sim_check(sim_malloc(&c, bytes), "sim_malloc");
    lb_sim_check(sim_stream_create(&s), "sim_stream_create");
    lb_sim_check(sim_memset_async(a, 0, bytes, s), "sim_memset_async");
    lb_sim_check(sim_memset_async(b, 0, bytes, s), "sim_memset_async");
    const kctx_arg args[4] = {KCTX_TENSOR(a, bytes), KCTX_TENSOR(b, bytes), KCTX_TENSOR(c, bytes),
                              KCTX_SCALAR(VADD_N)};

    for (int i = 0; i < BATCH; i++)
        lb_kctx_check(kctx_launch(ctx, 1, args, 4, s), "kctx_launch (warm-up)");
    lb_sim_check(sim_stream_synchronize(s), "sim_stream_synchronize");

    kb_progress(
        "%ld launches of vector_add in batches of %d, each batch followed by a synchronise%s", n,
        BATCH, opt.quick ? " (quick)" : "");
    at_counts before, after;
    at_snapshot(&before);
    uint64_t dev_alloc0 = sim_calls(SIM_OP_MALLOC, -1), dev_free0 = sim_calls(SIM_OP_FREE, -1);
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        kctx_status st = kctx_launch(ctx, 1, args, 4, s);
        if (st != KCTX_OK) lb_kctx_check(st, "kctx_launch");
        if ((i + 1) % BATCH == 0 || i + 1 == n)
            lb_sim_check(sim_stream_synchronize(s), "sim_stream_synchronize");
    }
    uint64_t t1 = kb_now_ns();
    uint64_t dev_allocs = sim_calls(SIM_OP_MALLOC, -1) - dev_alloc0;
    uint64_t dev_frees = sim_calls(SIM_OP_FREE, -1) - dev_free0;
    at_snapshot(&after);

    lb_sim_check(sim_stream_destroy(s), "sim_stream_destroy");
    lb_context_close(ctx);
    lb_sim_check(sim_free(a), "sim_free");
    lb_sim_check(sim_free(b), "sim_free");
    lb_sim_check(sim_free(c), "sim_free");

    kb_progress("%.0f ns per launch + execution (batches of %d)", (double)(t1 - t0) / (double)n,
                BATCH);
    kb_progress("device: %llu allocations, %llu frees", (unsigned long long)dev_allocs,
                (unsigned long long)dev_frees);
    if (!measured) {
        kb_progress("launch_allocs: not measured: %s; platform_allocs skipped too",
                    at_unavailable_reason());
        return EXIT_SUCCESS;
    }
    static const char *names[AT_OWNERS] = {"other", "libkctx.so", "libkctx_sim.so"};
    for (int o = 0; o < AT_OWNERS; o++)
        kb_progress("host, %s: %llu allocations, %llu frees", names[o],
                    (unsigned long long)(after.allocs[o] - before.allocs[o]),
                    (unsigned long long)(after.frees[o] - before.frees[o]));
    uint64_t kctx_allocs = after.allocs[AT_KCTX] - before.allocs[AT_KCTX];
    uint64_t sim_allocs = after.allocs[AT_SIM] - before.allocs[AT_SIM];
    kb_metric m1 = {
        "launch_allocs", (double)(kctx_allocs + dev_allocs), "count", KB_BASELINE_OMIT, 0.0, 0, 0.0,
        (int)n};
    kb_metric m2 = {
        "platform_allocs", (double)sim_allocs, "count", KB_BASELINE_OMIT, 0.0, 0, 0.0, (int)n};
    int bad = kb_metric_print(&m1) != 0;
    bad |= kb_metric_print(&m2) != 0;
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
