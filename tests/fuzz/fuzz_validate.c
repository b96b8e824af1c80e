/*
 * fuzz_validate.c — libFuzzer target over the image validator and view.
 *
 * Each input is validated twice: as given (so the checksum rule is in
 * play), and after kctx_image_reseal (so that mutations reach the
 * structural rules instead of dying at the checksum). Whenever an input
 * validates, the whole view is walked through every accessor and the
 * content is rebuilt through the builder, which must give back the very
 * same bytes (one encoding per content). Any disagreement aborts.
 *
 * The input is copied into a buffer of exactly its size (so ASan sees any
 * read past the end) from malloc (so it is 8-byte aligned).
 *
 * Built as a libFuzzer binary when clang's -fsanitize=fuzzer links, and
 * always as kctx_image_fuzz_replay, which runs the checked-in corpus in
 * every test flavour (replay_main.c).
 */
#include <kctx/image.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_testlib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_validate: %s: %s\n", what, detail ? detail : "");
    abort();
}

static void use(const uint8_t *buf, size_t size) {
    kctx_image_view v;
    kctx_image_error err;
    kctx_image_reason r = kctx_image_view_open(&v, buf, size, &err);
    if (err.reason != r) fuzz_fail("err.reason differs from the result", err.message);
    if (kctx_image_validate(buf, size, NULL) != r) fuzz_fail("a second validation disagrees", NULL);
    if (r != KCTX_IMAGE_OK) {
        if (v.base != NULL) fuzz_fail("a rejected image left a view", NULL);
        if (err.offset > size) fuzz_fail("offset beyond the image", err.message);
        if (memchr(err.message, 0, sizeof err.message) == NULL)
            fuzz_fail("message not terminated", NULL);
        return;
    }
    const char *problem = NULL;
    if (walk_view(&v, &problem) == 0) fuzz_fail("valid image, bad view", problem);
    void *again = NULL;
    size_t again_size = 0;
    char msg[256];
    int rb = rebuild_from_view(&v, &again, &again_size, msg, sizeof msg);
    if (rb < 0) fuzz_fail("valid image does not rebuild", msg);
    if (rb == 0 && (again_size != size || memcmp(again, buf, size) != 0))
        fuzz_fail("valid image rebuilds to different bytes", NULL);
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size ? size : 1);
    if (buf == NULL) return 0;
    if (size != 0) memcpy(buf, data, size);
    use(buf, size);
    if (kctx_image_reseal(buf, size) == 0) use(buf, size);
    free(buf);
    return 0;
}
