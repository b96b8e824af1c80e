/*
 * context_footprint — host and device bytes of one READY kernel context
 * with 1 and with 100 prepared distinct callables.
 *
 * The callables are the empty callable (one task of k_noop) under 100
 * different names, so 100 distinct images and 100 uploads. All images are
 * built before the first reading. Readings, each the difference to the
 * reading taken before the context was created:
 *  - device: the sim's live allocation bytes of the device (sim_mem_stats):
 *    the resident memory (runtime image, architecture table, kernel-args
 *    block) and one callable table per upload. Modules' code is not device
 *    memory in the sim and is not counted;
 *  - host: live heap bytes allocated by libkctx.so itself (allocator
 *    interposition, alloc_track.c), skipped in sanitizer builds.
 * After close, both must be back to the first reading (a leak check).
 *
 *   metric context_footprint_device value=<bytes, 1 callable> unit=B
 *   metric context_footprint_device_100 value=<bytes, 100 callables> unit=B
 *   metric context_footprint_device_per_callable value=<(100 - 1) / 99> unit=B
 *   metric context_footprint_host value=<bytes, 1 callable> unit=B
 *   metric context_footprint_host_100 value=<bytes, 100 callables> unit=B
 *   metric context_footprint_host_per_callable value=<(100 - 1) / 99> unit=B
 */
#include "alloc_track.h"
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    CALLABLES = 100
};

typedef struct reading {
    uint64_t device_bytes, device_allocs;
    int64_t host_bytes, sim_host_bytes;
    uint64_t host_blocks;
} reading;

static reading read_now(int device) {
    reading r;
    at_counts c;
    memset(&r, 0, sizeof r);
    lb_sim_check(sim_mem_stats(device, &r.device_allocs, &r.device_bytes), "sim_mem_stats");
    at_snapshot(&c);
    r.host_bytes = c.live_bytes[AT_KCTX];
    r.host_blocks = c.live_blocks[AT_KCTX];
    r.sim_host_bytes = c.live_bytes[AT_SIM];
    return r;
}

static void report(const char *what, const reading *r, const reading *base, int measured) {
    if (measured)
        kb_progress(
            "%s: device %lld B in %lld allocations; host (libkctx.so) %lld B in %lld blocks; "
            "host (libkctx_sim.so) %+lld B",
            what, (long long)(r->device_bytes - base->device_bytes),
            (long long)(r->device_allocs - base->device_allocs),
            (long long)(r->host_bytes - base->host_bytes),
            (long long)(r->host_blocks - base->host_blocks),
            (long long)(r->sim_host_bytes - base->sim_host_bytes));
    else
        kb_progress("%s: device %lld B in %lld allocations", what,
                    (long long)(r->device_bytes - base->device_bytes),
                    (long long)(r->device_allocs - base->device_allocs));
}

static int print(const char *name, double v) {
    kb_metric m = {name, v, "B", KB_BASELINE_OMIT, 0.0, 0, 0.0, 0};
    return kb_metric_print(&m) != 0;
}

int main(int argc, char **argv) {
    kb_options opt;
    int measured = at_available();
    if (measured && at_init() != 0)
        kb_fatal("cannot attribute allocations: libkctx.so or libkctx_sim.so not found");
    int rc = kb_parse_options(argc, argv, &opt, 1, CALLABLES, 1, CALLABLES);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    const long n = opt.n;
    if (n < 2 || n > 4000) kb_fatal("--n must be in 2..4000 (callables)");
    int device = 0;
    lb_sim_check(sim_get_device(&device), "sim_get_device");

    lb_image *imgs = calloc((size_t)n, sizeof *imgs);
    if (imgs == NULL) kb_fatal("out of memory");
    for (long i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "empty_%04ld", i);
        imgs[i] = lb_image_noop(name);
    }

    reading base = read_now(device);
    kctx_context ctx = lb_context_open((uint32_t)opt.strategy);
    reading ready = read_now(device);
    kb_kctx_check(kctx_prepare(ctx, 1, imgs[0].bytes, imgs[0].size), "kctx_prepare");
    reading one = read_now(device);
    for (long i = 1; i < n; i++)
        kb_kctx_check(kctx_prepare(ctx, 1 + (uint64_t)i, imgs[i].bytes, imgs[i].size),
                      "kctx_prepare");
    reading all = read_now(device);
    kctx_resource_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    kb_kctx_check(kctx_get_resources(ctx, &info), "kctx_get_resources");
    if (info.uploads != (uint32_t)n || info.callables != (uint32_t)n)
        kb_fatal("%u uploads and %u callables, expected %ld of each", info.uploads, info.callables,
                 n);
    kb_kctx_close(ctx);
    reading closed = read_now(device);
    for (long i = 0; i < n; i++) lb_image_free(&imgs[i]);
    free(imgs);

    report("READY, no callable", &ready, &base, measured);
    report("1 callable", &one, &base, measured);
    char what[48];
    snprintf(what, sizeof what, "%ld callables", n);
    report(what, &all, &base, measured);
    report("after close", &closed, &base, measured);
    kb_progress(
        "resident: runtime image %llu B, architecture table %llu B, kernel-args block %llu B; "
        "%u uploads hold %llu B",
        (unsigned long long)info.runtime_image_bytes, (unsigned long long)info.arch_table_bytes,
        (unsigned long long)info.args_block_bytes, info.uploads,
        (unsigned long long)info.upload_bytes);
    if (closed.device_bytes != base.device_bytes ||
        (measured && closed.host_bytes != base.host_bytes))
        kb_fatal("close left %lld device bytes and %lld host bytes of libkctx.so behind",
                 (long long)(closed.device_bytes - base.device_bytes),
                 (long long)(closed.host_bytes - base.host_bytes));

    const double k = (double)(n - 1);
    char name[64];
    int bad = print("context_footprint_device", (double)(one.device_bytes - base.device_bytes));
    snprintf(name, sizeof name, "context_footprint_device_%ld", n);
    bad |= print(name, (double)(all.device_bytes - base.device_bytes));
    bad |= print("context_footprint_device_per_callable",
                 (double)(all.device_bytes - one.device_bytes) / k);
    if (measured) {
        bad |= print("context_footprint_host", (double)(one.host_bytes - base.host_bytes));
        snprintf(name, sizeof name, "context_footprint_host_%ld", n);
        bad |= print(name, (double)(all.host_bytes - base.host_bytes));
        bad |= print("context_footprint_host_per_callable",
                     (double)(all.host_bytes - one.host_bytes) / k);
    } else {
        kb_progress("context_footprint_host: not measured: %s", at_unavailable_reason());
    }
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
