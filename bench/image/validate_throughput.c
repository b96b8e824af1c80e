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
 *
 * It checks its own work, before and after timing each size: the image
 * with one blob byte flipped (first, middle, last) must be refused for its
 * checksum, or the program fails without a figure (a validator that
 * skipped the checksum would otherwise look infinitely fast).
 */
#include <kctx/image.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "kctx_test_image.h"

/* An image of exactly `target` bytes: the tables and strings take a few
 * hundred bytes, one blob the rest (tests/common). *blob_off: where the
 * blob starts; it ends the image. */
static void *build_image(size_t target, size_t *size, size_t *blob_off) {
    void *img = NULL;
    char why[256];
    if (ktc_image_with_blob("validate_throughput", target, 0x9E3779B97F4A7C15ull, &img, blob_off,
                            why, sizeof why) != 0)
        kb_fatal("building the %zu-byte image: %s", target, why);
    *size = target;
    return img;
}

/* The benchmark checks its own work: a validator that skipped the checksum
 * (of large images, say) would look fast. One byte of the blob flipped —
 * the first, the middle and the last, content only the checksum covers —
 * must be refused with KCTX_IMAGE_CHECKSUM_MISMATCH, and the image must be
 * valid again once the byte is restored. `img` is left as it was. */
static void check_corruption_is_refused(uint8_t *img, size_t size, size_t blob_off) {
    const size_t at[3] = {blob_off, blob_off + (size - blob_off) / 2, size - 1};
    for (int i = 0; i < 3; i++) {
        kctx_image_error err;
        img[at[i]] ^= 0x01;
        kctx_image_reason r = kctx_image_validate(img, size, &err);
        img[at[i]] ^= 0x01;
        if (r != KCTX_IMAGE_CHECKSUM_MISMATCH)
            kb_fatal("the %zu-byte image with byte %zu flipped: %s (%s), expected "
                     "KCTX_IMAGE_CHECKSUM_MISMATCH: the validator does not check what is timed",
                     size, at[i], kctx_image_reason_name(r), err.message);
        if (kctx_image_validate(img, size, &err) != KCTX_IMAGE_OK)
            kb_fatal("the %zu-byte image does not validate once restored: %s", size, err.message);
    }
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
        size_t size = 0, blob_off = 0;
        void *img = build_image(sizes[s].bytes, &size, &blob_off);
        check_corruption_is_refused(img, size, blob_off);
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
        /* And once more after the timing: the same validator that was timed
         * still refuses a corrupted copy. */
        check_corruption_is_refused(img, size, blob_off);
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
