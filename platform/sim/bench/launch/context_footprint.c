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
 * The host bytes per callable, split: "binary" is the copy of the image
 * kctx keeps per distinct upload (K14 compares later images with it byte
 * for byte): the image's size rounded up to 8; "other" is the rest. The
 * same measurement on images padded with PAD bytes (a variant the sim never
 * loads) gives "other" again: it must not depend on the image's size. Then
 * copies of the first n images under n more ids (K14: identical bytes share
 * the upload and its copy): host bytes per such id. The program fails if
 * "other" differs by more than 64 B between the two sizes or an id of
 * identical bytes holds more than a quarter of the image.
 *
 *   metric context_footprint_device value=<bytes, 1 callable> unit=B
 *   metric context_footprint_device_100 value=<bytes, 100 callables> unit=B
 *   metric context_footprint_device_per_callable value=<(100 - 1) / 99> unit=B
 *   metric context_footprint_host value=<bytes, 1 callable> unit=B
 *   metric context_footprint_host_100 value=<bytes, 100 callables> unit=B
 *   metric context_footprint_host_per_callable value=<(100 - 1) / 99> unit=B
 *   metric context_footprint_host_per_callable_binary value=<image bytes kept> unit=B
 *   metric context_footprint_host_per_callable_other value=<per callable - binary> unit=B
 *   metric context_footprint_host_per_callable_other_padded value=<the same, padded> unit=B
 *     image=<padded image bytes>
 *   metric context_footprint_host_per_identical value=<per id sharing an upload> unit=B
 */
#include "alloc_track.h"
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    CALLABLES = 100,
    PAD = 64 * 1024 /* bytes added to each image of the padded measurement */
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

/* The empty callable under `name`, with `pad` more bytes in an OpenCL C
 * variant (never loaded on the sim) when pad > 0. */
static lb_image image_named(const char *name, size_t pad) {
    if (pad == 0) return lb_image_noop(name);
    kctx_image_builder *b = kctx_image_builder_new(name);
    if (b) {
        uint32_t fid = lb_add_noop_child(b);
        unsigned char *p = malloc(pad);
        if (p == NULL) kb_fatal("out of memory");
        for (size_t i = 0; i < pad; i++) p[i] = (unsigned char)(i * 131u + 7u);
        kctx_image_builder_variant(b, KCTX_VARIANT_OPENCL_C, p, pad);
        free(p);
        kctx_image_builder_task(b, fid, 1, NULL);
    }
    return lb_image_finish(b, name, 1);
}

typedef struct footprint {
    reading base, ready, one, all, shared, closed;
    double binary;     /* image bytes kept per callable of 2..n (rounded up to 8) */
    size_t image_size; /* of the first image */
    kctx_resource_info info;
} footprint;

static footprint measure(long n, size_t pad, uint32_t strategy, int device) {
    footprint f;
    memset(&f, 0, sizeof f);
    lb_image *imgs = calloc((size_t)n, sizeof *imgs);
    void **copies = calloc((size_t)n, sizeof *copies);
    if (imgs == NULL || copies == NULL) kb_fatal("out of memory");
    double kept = 0;
    for (long i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "empty_%04ld", i);
        imgs[i] = image_named(name, pad);
        copies[i] = malloc(imgs[i].size);
        if (copies[i] == NULL) kb_fatal("out of memory");
        memcpy(copies[i], imgs[i].bytes, imgs[i].size);
        if (i > 0) kept += (double)((imgs[i].size + 7) & ~(size_t)7);
    }
    f.binary = kept / (double)(n - 1);
    f.image_size = imgs[0].size;

    f.base = read_now(device);
    kctx_context ctx = lb_context_open(strategy);
    f.ready = read_now(device);
    kb_kctx_check(kctx_prepare(ctx, 1, imgs[0].bytes, imgs[0].size), "kctx_prepare");
    f.one = read_now(device);
    for (long i = 1; i < n; i++)
        kb_kctx_check(kctx_prepare(ctx, 1 + (uint64_t)i, imgs[i].bytes, imgs[i].size),
                      "kctx_prepare");
    f.all = read_now(device);
    /* K14: the same bytes (other buffers) under n more ids share the uploads */
    for (long i = 0; i < n; i++)
        kb_kctx_check(kctx_prepare(ctx, 1 + (uint64_t)(n + i), copies[i], imgs[i].size),
                      "kctx_prepare (identical bytes)");
    f.shared = read_now(device);
    memset(&f.info, 0, sizeof f.info);
    f.info.size = sizeof f.info;
    kb_kctx_check(kctx_get_resources(ctx, &f.info), "kctx_get_resources");
    if (f.info.uploads != (uint32_t)n || f.info.callables != 2 * (uint32_t)n)
        kb_fatal("%u uploads and %u callables, expected %ld and %ld", f.info.uploads,
                 f.info.callables, n, 2 * n);
    kb_kctx_close(ctx);
    f.closed = read_now(device);
    for (long i = 0; i < n; i++) {
        lb_image_free(&imgs[i]);
        free(copies[i]);
    }
    free(imgs);
    free(copies);
    return f;
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

    footprint f = measure(n, 0, (uint32_t)opt.strategy, device);
    footprint g = measure(n, PAD, (uint32_t)opt.strategy, device);

    report("READY, no callable", &f.ready, &f.base, measured);
    report("1 callable", &f.one, &f.base, measured);
    char what[64];
    snprintf(what, sizeof what, "%ld callables", n);
    report(what, &f.all, &f.base, measured);
    snprintf(what, sizeof what, "and %ld ids of identical bytes", n);
    report(what, &f.shared, &f.base, measured);
    report("after close", &f.closed, &f.base, measured);
    snprintf(what, sizeof what, "%ld padded callables (+%d B each)", n, PAD);
    report(what, &g.all, &g.base, measured);
    kb_progress(
        "resident: runtime image %llu B, architecture table %llu B, kernel-args block %llu B; "
        "%u uploads hold %llu B",
        (unsigned long long)f.info.runtime_image_bytes, (unsigned long long)f.info.arch_table_bytes,
        (unsigned long long)f.info.args_block_bytes, f.info.uploads,
        (unsigned long long)f.info.upload_bytes);
    const footprint *both[2] = {&f, &g};
    for (int i = 0; i < 2; i++) {
        const footprint *x = both[i];
        if (x->closed.device_bytes != x->base.device_bytes ||
            (measured && x->closed.host_bytes != x->base.host_bytes))
            kb_fatal("close left %lld device bytes and %lld host bytes of libkctx.so behind",
                     (long long)(x->closed.device_bytes - x->base.device_bytes),
                     (long long)(x->closed.host_bytes - x->base.host_bytes));
    }

    const double k = (double)(n - 1);
    char name[64];
    int bad = print("context_footprint_device", (double)(f.one.device_bytes - f.base.device_bytes));
    snprintf(name, sizeof name, "context_footprint_device_%ld", n);
    bad |= print(name, (double)(f.all.device_bytes - f.base.device_bytes));
    bad |= print("context_footprint_device_per_callable",
                 (double)(f.all.device_bytes - f.one.device_bytes) / k);
    if (measured) {
        const double per = (double)(f.all.host_bytes - f.one.host_bytes) / k;
        const double per_padded = (double)(g.all.host_bytes - g.one.host_bytes) / k;
        bad |= print("context_footprint_host", (double)(f.one.host_bytes - f.base.host_bytes));
        snprintf(name, sizeof name, "context_footprint_host_%ld", n);
        bad |= print(name, (double)(f.all.host_bytes - f.base.host_bytes));
        bad |= print("context_footprint_host_per_callable", per);
        bad |= print("context_footprint_host_per_callable_binary", f.binary);
        bad |= print("context_footprint_host_per_callable_other", per - f.binary);
        /* the padded image's size as an extra field (the parser reads name,
         * value and unit) */
        char vb[64];
        printf(
            "metric context_footprint_host_per_callable_other_padded value=%s unit=B image=%zu\n",
            kb_format_number(vb, sizeof vb, per_padded - g.binary), g.image_size);
        fflush(stdout);
        bad |= print("context_footprint_host_per_identical",
                     (double)(f.shared.host_bytes - f.all.host_bytes) / (double)n);
        kb_progress("host per callable: %.0f B with %zu-byte images (%.0f B of it the image), "
                    "%.0f B with %zu-byte images (%.0f B)",
                    per, f.image_size, f.binary, per_padded, g.image_size, g.binary);
        /* the program's own verification */
        const double other = per - f.binary, other_padded = per_padded - g.binary;
        const double per_identical = (double)(f.shared.host_bytes - f.all.host_bytes) / (double)n;
        if (other_padded - other > 64 || other - other_padded > 64)
            kb_fatal("host bytes per callable other than the image: %.0f B with %zu-byte images, "
                     "%.0f B with %zu-byte images: they grow with the image",
                     other, f.image_size, other_padded, g.image_size);
        if (per_identical > (double)f.image_size / 4)
            kb_fatal("an id of identical bytes holds %.0f B of host memory (the image is %zu B): "
                     "K14's identical bytes must share the upload's one copy",
                     per_identical, f.image_size);
    } else {
        kb_progress("context_footprint_host: not measured: %s", at_unavailable_reason());
    }
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
