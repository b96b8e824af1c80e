/*
 * image_testlib.h — example images and view helpers shared by the image
 * tests, the fixture generator and the fuzz target.
 */
#ifndef KCTX_TESTS_IMAGE_TESTLIB_H
#define KCTX_TESTS_IMAGE_TESTLIB_H

#include <kctx/image.h>

#include <stddef.h>
#include <stdint.h>

/* The example callables, built with the builder:
 *   vector_add  c = a + b: 3 tensors and a scalar n; 1 child, 1 task
 *   dag         a scale-and-add chain, fan-out/fan-in: 2 children, 6 tasks
 *   matmul      a blocked matrix multiply: 3 children with 1-4 variants of
 *               every kind and odd blob sizes, 8 tasks
 *   empty       no parameters, children or tasks (no blobs at all)
 *   ascend      format 1.1: 2 children, one with a SIM_ELF and an ASCEND_BIN
 *               variant, one with only an ASCEND_BIN variant; 2 tasks
 * All but `ascend` are format 1.0 images. */
enum {
    EXAMPLE_VECTOR_ADD,
    EXAMPLE_DAG,
    EXAMPLE_MATMUL,
    EXAMPLE_EMPTY,
    EXAMPLE_ASCEND,
    EXAMPLE_COUNT
};

const char *example_name(int which);
/* Builds example `which`: *out is malloc'd (free()). Returns the builder's
 * status; on failure prints the builder's message on stderr. */
kctx_build_status example_build(int which, void **out, size_t *size);

/* Deterministic pseudo-random bytes (a blob's content), seeded by `seed`. */
void example_fill(uint8_t *buf, size_t n, uint32_t seed);

/* Reads everything a view offers through every accessor (strings to their
 * NUL, every blob byte, out-of-range indices, lookups by id and kind) and
 * returns a digest of it, so nothing can be optimised away. Returns 0 and
 * sets *problem to a description when an accessor answers something a
 * validated image cannot contain (NULL string, unknown kind, dangling
 * index...). */
uint64_t walk_view(const kctx_image_view *v, const char **problem);

/* Rebuilds the view's content through the builder. Returns 0 and the new
 * image in *out (free()), 1 when the content is not expressible through
 * the builder (function ids that are not 0, 1, 2... in table order), or -1
 * when the builder refused (message in msg). A valid image must rebuild to
 * identical bytes: that is what "one encoding per content" means. */
int rebuild_from_view(const kctx_image_view *v, void **out, size_t *size, char *msg,
                      size_t msg_size);

/* Copies `size` bytes into a fresh buffer whose start is `shift` bytes past
 * a 64-byte boundary; *block receives what to free(). */
uint8_t *copy_shifted(const void *bytes, size_t size, size_t shift, void **block);

#endif /* KCTX_TESTS_IMAGE_TESTLIB_H */
