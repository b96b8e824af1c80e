/*
 * prepare_dedup — preparing identical image bytes under 1,000 ids: the
 * device bytes they add after the first prepare (K14: identical bytes share
 * one upload, so the goal is 0) and the time of such a prepare against the
 * first one.
 *
 * One measurement, on a fresh kernel context: prepare the empty callable
 * (one task of k_noop) under id 1 — the first prepare: validate, load the
 * child's module, resolve its entry, upload the device table and wait for
 * it — then prepare a copy of the same bytes (another buffer) under ids
 * 2..1001. Device bytes are the sim's live allocation bytes of the device
 * (sim_mem_stats) after the first prepare and after the last; the context
 * must report 1 upload and 1,001 callables. R measurements (each on its own
 * context); medians.
 *
 *   metric prepare_dedup value=<device bytes after 1,001 ids - after the first> unit=B n=<R>
 *   metric prepare_dedup_time value=<ns per dedup prepare> unit=ns baseline=<ns of the first prepare> ratio=<..> n=<R>
 */
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DEFAULT_REPEATS = 7,
    QUICK_REPEATS = 3
};
#define DEFAULT_N 1000L
#define QUICK_N 1000L

static uint64_t device_bytes(int device) {
    uint64_t count = 0, bytes = 0;
    lb_sim_check(sim_mem_stats(device, &count, &bytes), "sim_mem_stats");
    return bytes;
}

int main(int argc, char **argv) {
    kb_options opt;
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    const int R = opt.repeats;
    const long n = opt.n;
    int device = 0;
    lb_sim_check(sim_get_device(&device), "sim_get_device");

    lb_image img = lb_image_noop("empty");
    void *copy = malloc(img.size);
    if (copy == NULL) kb_fatal("out of memory");
    memcpy(copy, img.bytes, img.size);

    kb_progress(
        "%d measurements: first prepare of a %zu-byte image, then %ld prepares of the same bytes%s",
        R, img.size, n, opt.quick ? " (quick)" : "");
    double *first = kb_doubles(R), *dedup = kb_doubles(R), *delta = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        kctx_context ctx = lb_context_open((uint32_t)opt.strategy);
        uint64_t t0 = kb_now_ns();
        kb_kctx_check(kctx_prepare(ctx, 1, img.bytes, img.size), "kctx_prepare (first)");
        uint64_t t1 = kb_now_ns();
        uint64_t bytes1 = device_bytes(device);
        uint64_t t2 = kb_now_ns();
        for (long i = 0; i < n; i++) {
            kctx_status st = kctx_prepare(ctx, 2 + (uint64_t)i, copy, img.size);
            if (st != KCTX_OK) kb_kctx_check(st, "kctx_prepare (identical bytes)");
        }
        uint64_t t3 = kb_now_ns();
        uint64_t bytesn = device_bytes(device);
        kctx_resource_info info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        kb_kctx_check(kctx_get_resources(ctx, &info), "kctx_get_resources");
        if (info.uploads != 1 || info.callables != (uint32_t)n + 1)
            kb_fatal(
                "after %ld identical prepares: %u uploads and %u callables (expected 1 and %ld)",
                n + 1, info.uploads, info.callables, n + 1);
        kb_kctx_close(ctx);
        first[r] = (double)(t1 - t0);
        dedup[r] = (double)(t3 - t2) / (double)n;
        delta[r] = (double)bytesn - (double)bytes1;
        kb_progress("measurement %d/%d: first %.0f ns, identical %.0f ns each, device bytes %+.0f "
                    "(upload %llu B)",
                    r + 1, R, first[r], dedup[r], delta[r], (unsigned long long)info.upload_bytes);
    }
    free(copy);
    lb_image_free(&img);

    kb_metric m = {
        "prepare_dedup", kb_median(delta, (size_t)R), "B", KB_BASELINE_OMIT, 0.0, 0, 0.0, R};
    int bad = kb_metric_print(&m) != 0;
    bad |= kb_metric_print_compared("prepare_dedup_time", kb_median(dedup, (size_t)R), "ns", 1,
                                    kb_median(first, (size_t)R), R) != 0;
    free(first), free(dedup), free(delta);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
