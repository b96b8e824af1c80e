/*
 * kctx_test_image.h — images of a chosen size for the tests and the
 * benchmarks (tests/common, library kctx_test_image: the image builder of
 * include/kctx/image.h, nothing else).
 */
#ifndef KCTX_TESTS_COMMON_IMAGE_H
#define KCTX_TESTS_COMMON_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A valid image of exactly `total` bytes, built with the builder: the
 * callable `name` with params (data: tensor_inout, n: scalar), one child
 * "big" (entry kctx_big; params data: tensor, n: scalar) whose only variant
 * (kind SIM_ELF, never loaded) is one blob of pseudo-random bytes (seeded
 * by `seed`) filling the rest, and one task binding data and n. The tables
 * and strings take a few hundred bytes; `total` must leave at least one
 * blob byte. The blob is the image's last section: it spans
 * [*blob_off, total), content the validator can only check through the
 * whole-image checksum. *out is malloc'd (free()). Returns 0, or -1 with
 * the reason in why. */
int ktc_image_with_blob(const char *name, size_t total, uint64_t seed, void **out, size_t *blob_off,
                        char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif /* KCTX_TESTS_COMMON_IMAGE_H */
