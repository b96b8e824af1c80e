/*
 * validate_throughput.c — kctx_bench_validate_throughput: how fast
 * kctx_image_validate checks an image, against memcpy of the same bytes
 * into a preallocated buffer (docs/benchmarks.md, `validate_throughput`).
 *
 * For images of about 64 KiB, 1 MiB and 16 MiB (one child carrying one big
 * blob, so the time is the whole-image checksum plus the table checks) it
 * times validation and memcpy alternately, A B A B, and prints the medians:
 *
 *   metric validate_throughput_16m value=<GB/s> unit=GB/s baseline=<memcpy GB/s>
 *          ratio=<validate time / memcpy time> n=<repeats>
 *
 * Goal: ratio <= 2.0 for 16 MiB. Options: --quick, --repeats R.
 */
#include <kctx/image.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static void *build_image_with_blob(size_t blob_size, size_t *size) {
    kctx_image_builder *b = kctx_image_builder_new("validate_throughput");
    if (b == NULL) kb_fatal("out of memory");
    uint8_t *blob = malloc(blob_size);
    if (blob == NULL) kb_fatal("out of memory");
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < blob_size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        blob[i] = (uint8_t)x;
    }
    kctx_image_builder_param(b, "data", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_child(b, "big", "kctx_big", NULL);
    kctx_image_builder_child_param(b, "data", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, blob, blob_size);
    kctx_image_builder_task(b, 0, 1, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, 0);
    kctx_image_builder_bind(b, KCTX_BIND_SCALAR, 1, 0);
    void *img = NULL;
    char msg[256];
    if (kctx_image_builder_finish(b, &img, size, msg, sizeof msg) != KCTX_BUILD_OK)
        kb_fatal("building the image: %s", msg);
    kctx_image_builder_free(b);
    free(blob);
    return img;
}

/* An image of exactly `target` bytes: the tables and strings take a few
 * hundred bytes, the blob the rest. */
static void *build_image(size_t target, size_t *size) {
    void *probe = build_image_with_blob(1, size);
    size_t overhead = *size - 1;
    free(probe);
    return build_image_with_blob(target - overhead, size);
}

/* Keeps the compiler from dropping a copy whose result is never read. */
static void clobber(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static double time_validate(const void *img, size_t size, int inner) {
    uint64_t t0 = kb_now_ns();
    for (int i = 0; i < inner; i++) {
        kctx_image_error err;
        if (kctx_image_validate(img, size, &err) != KCTX_IMAGE_OK)
            kb_fatal("the benchmark image does not validate: %s", err.message);
    }
    return (double)(kb_now_ns() - t0);
}

static double time_memcpy(void *dst, const void *src, size_t size, int inner) {
    uint64_t t0 = kb_now_ns();
    for (int i = 0; i < inner; i++) {
        memcpy(dst, src, size);
        clobber(dst);
    }
    return (double)(kb_now_ns() - t0);
}

int main(int argc, char **argv) {
    kb_options opts;
    int rc = kb_parse_options(argc, argv, &opts, 21, 0, 5, 0);
    if (rc != 0) return rc > 0 ? 0 : 2;
    static const struct {
        const char *label;
        size_t bytes;
    } sizes[] = {{"64k", 64u << 10}, {"1m", 1u << 20}, {"16m", 16u << 20}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = 0;
        void *img = build_image(sizes[s].bytes, &size);
        void *dst = malloc(size);
        double *tv = malloc(sizeof(double) * (size_t)opts.repeats);
        double *tm = malloc(sizeof(double) * (size_t)opts.repeats);
        if (dst == NULL || tv == NULL || tm == NULL) kb_fatal("out of memory");
        /* Enough calls per sample that a sample lasts about a millisecond
         * or more, whatever the size. */
        int inner = (int)((32u << 20) / size);
        if (inner < 1) inner = 1;
        kb_progress("%s: image of %zu bytes, %d repeats of %d calls", sizes[s].label, size,
                    opts.repeats, inner);
        memset(dst, 1, size); /* fault the pages in before timing */
        time_validate(img, size, inner);
        time_memcpy(dst, img, size, inner);
        for (int r = 0; r < opts.repeats; r++) {
            tv[r] = time_validate(img, size, inner);
            tm[r] = time_memcpy(dst, img, size, inner);
        }
        double v = kb_median(tv, (size_t)opts.repeats), m = kb_median(tm, (size_t)opts.repeats);
        double bytes = (double)size * inner;
        char name[64];
        snprintf(name, sizeof name, "validate_throughput_%s", sizes[s].label);
        kb_metric metric = {name,      bytes / v, "GB/s", KB_BASELINE_VALUE,
                            bytes / m, 1,         v / m,  opts.repeats};
        if (kb_metric_print(&metric) != 0) return 1;
        free(tm);
        free(tv);
        free(dst);
        free(img);
    }
    return 0;
}
