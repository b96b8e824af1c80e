/*
 * test_checksum_large.c — the whole-image checksum of images of every size
 * class, above 1 MiB included (docs/image-format.md, "Checksum": CRC32C of
 * bytes [header_size, total_size), checked last).
 *
 * The example images of test_validate.c are a few KiB, so nothing else
 * proves that a large image's checksum is computed: a validator that
 * skipped it would pass every other test (and look infinitely fast in the
 * validate_throughput benchmark). Each image here is built with the builder
 * (one child carrying one blob that ends the image), then one byte is
 * flipped at a time:
 *
 *   - the first byte of the checksummed region (offset header_size): a
 *     structure byte, so the image must be refused (for whatever reason the
 *     structure rules find first);
 *   - the first character of the callable's name, and the first, middle
 *     and last byte of the blob (the image's last byte): content only the
 *     checksum covers, so the reason must be CHECKSUM_MISMATCH (at offset
 *     24) — and after kctx_image_reseal the same bytes must validate, which
 *     proves that the checksum was the only thing refusing them.
 */
#include <kctx/image.h>

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kctx_test_image.h"

/* Total sizes: below, at and just above 1 MiB, and well above it. */
static const size_t k_sizes[] = {
    64u << 10, (1u << 20) - 1, 1u << 20, (1u << 20) + 1, (4u << 20) + 3, 16u << 20,
};

typedef struct image {
    uint8_t *bytes;
    size_t size, blob_off, name_off;
} image;

static int make(image *im, size_t total) {
    char why[256];
    void *bytes = NULL;
    memset(im, 0, sizeof *im);
    if (!CHECK(ktc_image_with_blob("checksum_large", total, 0x9E3779B97F4A7C15ull ^ total, &bytes,
                                   &im->blob_off, why, sizeof why) == 0,
               "building a %zu-byte image: %s", total, why))
        return 0;
    im->bytes = bytes;
    im->size = total;
    kctx_image_view v;
    if (!CHECK(kctx_image_view_open(&v, bytes, total, NULL) == KCTX_IMAGE_OK)) return 0;
    const char *name = kctx_image_name(&v);
    im->name_off = (size_t)((const uint8_t *)name - im->bytes);
    return CHECK(im->blob_off > im->name_off && im->name_off > KCTX_IMAGE_HEADER_SIZE);
}

/* Flips `mask` in byte `at` of a copy; the copy must be refused for the
 * checksum and accepted once resealed. */
static void expect_checksum_refusal(const image *im, uint8_t *copy, size_t at, uint8_t mask,
                                    const char *where) {
    memcpy(copy, im->bytes, im->size);
    copy[at] ^= mask;
    kctx_image_error err;
    kctx_image_reason r = kctx_image_validate(copy, im->size, &err);
    CHECK(r == KCTX_IMAGE_CHECKSUM_MISMATCH && err.offset == 24,
          "%zu-byte image, %s (offset %zu) ^ 0x%02x: %s at %llu (%s), expected "
          "KCTX_IMAGE_CHECKSUM_MISMATCH at 24",
          im->size, where, at, mask, kctx_image_reason_name(r), (unsigned long long)err.offset,
          err.message);
    CHECK(kctx_image_reseal(copy, im->size) == 0 &&
              kctx_image_validate(copy, im->size, &err) == KCTX_IMAGE_OK,
          "%zu-byte image, %s (offset %zu) ^ 0x%02x: not valid once resealed: %s", im->size, where,
          at, mask, err.message);
}

static void test_a_flipped_byte_is_refused_by_the_checksum_at_every_size(void) {
    for (size_t s = 0; s < sizeof k_sizes / sizeof k_sizes[0]; s++) {
        image im;
        if (!make(&im, k_sizes[s])) {
            free(im.bytes);
            continue;
        }
        uint8_t *copy = malloc(im.size);
        REQUIRE(copy != NULL);
        kctx_image_error err;
        CHECK(kctx_image_validate(im.bytes, im.size, &err) == KCTX_IMAGE_OK,
              "the %zu-byte image as built: %s", im.size, err.message);

        /* The checksummed region's first byte is structure (the params
         * table): refused, by whichever rule sees it first. */
        memcpy(copy, im.bytes, im.size);
        copy[KCTX_IMAGE_HEADER_SIZE] ^= 0x01;
        CHECK(kctx_image_validate(copy, im.size, NULL) != KCTX_IMAGE_OK,
              "%zu-byte image: the first checksummed byte flipped is accepted", im.size);

        size_t blob_size = im.size - im.blob_off;
        const struct {
            size_t at;
            const char *where;
        } content[] = {
            {im.name_off, "the name's first character"},
            {im.blob_off, "the blob's first byte"},
            {im.blob_off + blob_size / 2, "the blob's middle byte"},
            {im.size - 1, "the image's last byte"},
        };
        for (size_t i = 0; i < sizeof content / sizeof content[0]; i++) {
            expect_checksum_refusal(&im, copy, content[i].at, 0x01, content[i].where);
            /* Any blob byte is content; a name stays a name only with
             * printable characters ('c' ^ 0x01 is 'b'). */
            if (content[i].at != im.name_off)
                expect_checksum_refusal(&im, copy, content[i].at, 0x80, content[i].where);
        }
        printf("     %zu bytes (blob at %zu, %zu bytes): every flip refused by the checksum\n",
               im.size, im.blob_off, blob_size);
        free(copy);
        free(im.bytes);
    }
}

/* The validator's verdict does not depend on where in memory the image
 * sits or on earlier calls (no caching by address or size): the same large
 * image, valid then corrupted then valid again, in one buffer. */
static void test_the_same_buffer_is_checked_afresh_each_time(void) {
    image im;
    if (!make(&im, (16u << 20) + 64)) {
        free(im.bytes);
        return;
    }
    size_t at = im.blob_off + (im.size - im.blob_off) / 3;
    for (int round = 0; round < 3; round++) {
        CHECK(kctx_image_validate(im.bytes, im.size, NULL) == KCTX_IMAGE_OK);
        im.bytes[at] ^= 0x10;
        CHECK(kctx_image_validate(im.bytes, im.size, NULL) == KCTX_IMAGE_CHECKSUM_MISMATCH,
              "round %d: a byte changed in place is not seen", round);
        im.bytes[at] ^= 0x10;
    }
    free(im.bytes);
}

int main(int argc, char **argv) {
    if (check_select(argc, argv) != 0) return 2;
    RUN(test_a_flipped_byte_is_refused_by_the_checksum_at_every_size);
    RUN(test_the_same_buffer_is_checked_afresh_each_time);
    return check_summary();
}
