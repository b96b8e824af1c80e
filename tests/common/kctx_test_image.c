/*
 * kctx_test_image.c — see kctx_test_image.h.
 */
#include "kctx_test_image.h"

#include <kctx/image.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *build(const char *name, size_t blob_size, uint64_t seed, size_t *size, char *why,
                   size_t why_size) {
    kctx_image_builder *b = kctx_image_builder_new(name);
    uint8_t *blob = malloc(blob_size ? blob_size : 1);
    if (b == NULL || blob == NULL) {
        kctx_image_builder_free(b);
        free(blob);
        snprintf(why, why_size, "out of memory building a %zu-byte blob", blob_size);
        return NULL;
    }
    uint64_t x = seed | 1; /* xorshift64: never zero */
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
    char msg[256] = "";
    kctx_build_status st = kctx_image_builder_finish(b, &img, size, msg, sizeof msg);
    kctx_image_builder_free(b);
    free(blob);
    if (st != KCTX_BUILD_OK) {
        snprintf(why, why_size, "the builder refused a %zu-byte blob (%d): %s", blob_size, (int)st,
                 msg);
        return NULL;
    }
    return img;
}

int ktc_image_with_blob(const char *name, size_t total, uint64_t seed, void **out, size_t *blob_off,
                        char *why, size_t why_size) {
    char dummy[8];
    if (why == NULL || why_size == 0) why = dummy, why_size = sizeof dummy;
    /* The overhead does not depend on the blob's size (one blob, the
     * image's last section): measure it with a 1-byte blob. */
    size_t size = 0;
    void *probe = build(name, 1, seed, &size, why, why_size);
    if (probe == NULL) return -1;
    free(probe);
    size_t overhead = size - 1;
    if (total <= overhead) {
        snprintf(why, why_size, "an image of %zu bytes cannot hold a blob (the rest takes %zu)",
                 total, overhead);
        return -1;
    }
    void *img = build(name, total - overhead, seed, &size, why, why_size);
    if (img == NULL) return -1;
    kctx_image_view v;
    kctx_image_error err;
    if (size != total || kctx_image_view_open(&v, img, size, &err) != KCTX_IMAGE_OK) {
        snprintf(why, why_size, "built %zu bytes for %zu: %s", size, total,
                 size != total ? "wrong size" : err.message);
        free(img);
        return -1;
    }
    kctx_image_variant var = kctx_image_variant_at(&v, 0, 0);
    if (var.blob_offset + var.blob_size != total) {
        snprintf(why, why_size, "the blob [%llu, +%llu) does not end the %zu-byte image",
                 (unsigned long long)var.blob_offset, (unsigned long long)var.blob_size, total);
        free(img);
        return -1;
    }
    *out = img;
    if (blob_off != NULL) *blob_off = (size_t)var.blob_offset;
    return 0;
}
