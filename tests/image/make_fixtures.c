/*
 * make_fixtures.c — generates the checked-in fixture images of
 * tests/image/fixtures/ and their manifest, expected.txt.
 *
 *   kctx_image_make_fixtures DIR           write every fixture into DIR
 *   kctx_image_make_fixtures --check DIR   compare DIR with what would be
 *                                          written (exit 1 on a difference)
 *
 * Each fixture is an example image broken in exactly one way, either by
 * patching bytes (then resealing the checksum, so the rule under test is
 * what rejects it) or, for content-level defects, by the builder's
 * unvalidated finish, which lays out anything canonically. The expected
 * reason and offset come from this file's own knowledge of what it broke
 * and where, never from running the validator. See fixtures/README.md.
 */
#include <kctx/image.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_internal.h"
#include "image_testlib.h"
#include "kctx_test_common.h"

typedef unsigned long long ull;

typedef struct fixture {
    char name[64];
    kctx_image_reason reason;
    uint64_t offset;
    unsigned shift; /* load this many bytes past an aligned address */
    uint8_t *bytes;
    size_t size;
} fixture;

#define MAX_FIXTURES 128
static fixture fixtures[MAX_FIXTURES];
static int n_fixtures;

static void die(const char *what) {
    fprintf(stderr, "make_fixtures: %s\n", what);
    exit(2);
}

/* ---- raw little-endian access (independent of the library's reader) ---- */

static uint32_t get32(const uint8_t *p, uint64_t at) {
    return (uint32_t)p[at] | (uint32_t)p[at + 1] << 8 | (uint32_t)p[at + 2] << 16 |
           (uint32_t)p[at + 3] << 24;
}
static uint64_t get64(const uint8_t *p, uint64_t at) {
    return (uint64_t)get32(p, at) | (uint64_t)get32(p, at + 4) << 32;
}
static void put16(uint8_t *p, uint64_t at, uint16_t v) {
    p[at] = (uint8_t)v;
    p[at + 1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint64_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) p[at + i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t at, uint64_t v) {
    for (int i = 0; i < 8; i++) p[at + i] = (uint8_t)(v >> (8 * i));
}

/* Sections (header count i at 36 + 4i, offset i at 72 + 8i). */
enum {
    PARAMS,
    CHILDREN,
    CHILD_PARAMS,
    VARIANTS,
    TASKS,
    BINDINGS,
    DEPS,
    STRTAB,
    BLOBS
};
static const uint64_t entry_size[] = {8, 24, 8, 24, 24, 16, 4, 1};

static uint32_t count_of(const uint8_t *img, int sec) { return get32(img, 36 + 4u * sec); }
static uint64_t off_of(const uint8_t *img, int sec) { return get64(img, 72 + 8u * sec); }
static uint64_t entry(const uint8_t *img, int sec, uint64_t i) {
    return off_of(img, sec) + i * entry_size[sec];
}
static uint64_t strtab_end(const uint8_t *img) {
    return off_of(img, STRTAB) + count_of(img, STRTAB);
}

/* ---- building blocks ---------------------------------------------------- */

typedef struct image {
    uint8_t *bytes;
    size_t size;
} image;

static image base(int which) {
    image im;
    void *p = NULL;
    if (example_build(which, &p, &im.size) != KCTX_BUILD_OK) die("cannot build an example");
    im.bytes = p;
    return im;
}

static image resized(image im, size_t size) {
    uint8_t *p = calloc(1, size ? size : 1);
    if (p == NULL) die("out of memory");
    memcpy(p, im.bytes, im.size < size ? im.size : size);
    free(im.bytes);
    im.bytes = p;
    im.size = size;
    return im;
}

/* Records a fixture; takes ownership of im. reseal: recompute the checksum
 * first (so that only the intended rule can object). */
static void add(const char *name, image im, int reseal, kctx_image_reason reason, uint64_t offset,
                unsigned shift) {
    if (n_fixtures == MAX_FIXTURES) die("too many fixtures");
    if (reseal) kctx_image_reseal(im.bytes, im.size);
    fixture *f = &fixtures[n_fixtures++];
    if (snprintf(f->name, sizeof f->name, "%s.kimg", name) >= (int)sizeof f->name)
        die("fixture name too long");
    f->reason = reason;
    f->offset = offset;
    f->shift = shift;
    f->bytes = im.bytes;
    f->size = im.size;
}

typedef void (*content_fn)(kctx_image_builder *b);

/* The canonical layout of content that breaks a rule. */
static image unvalidated(const char *callable, content_fn fn) {
    kctx_image_builder *b = kctx_image_builder_new(callable);
    if (b == NULL) die("out of memory");
    fn(b);
    void *p = NULL;
    image im;
    char msg[256];
    if (kctx_image_builder_finish_unvalidated(b, &p, &im.size, msg, sizeof msg) != KCTX_BUILD_OK)
        die(msg);
    kctx_image_builder_free(b);
    im.bytes = p;
    return im;
}

static const uint8_t blob5[5] = {0x7F, 'E', 'L', 'F', 2};

static void c_empty_param_name(kctx_image_builder *b) {
    kctx_image_builder_param(b, "x", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_param(b, "", KCTX_PARAM_SCALAR);
}
static void c_nothing(kctx_image_builder *b) { (void)b; }
static void c_empty_blob(kctx_image_builder *b) {
    kctx_image_builder_child(b, "k", "kctx_k", NULL);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, NULL, 0);
}
static void c_empty_ascend_blob(kctx_image_builder *b) {
    kctx_image_builder_child(b, "k", "kctx_k", NULL);
    kctx_image_builder_variant(b, KCTX_VARIANT_ASCEND_BIN, NULL, 0);
}
static void c_no_variant(kctx_image_builder *b) {
    kctx_image_builder_child(b, "k", "kctx_k", NULL);
    kctx_image_builder_child(b, "k2", "kctx_k2", NULL);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, blob5, sizeof blob5);
}
static void c_short_bindings(kctx_image_builder *b) {
    kctx_image_builder_param(b, "x", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_child(b, "k", "kctx_k", NULL);
    kctx_image_builder_child_param(b, "x", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, blob5, sizeof blob5);
    kctx_image_builder_task(b, 0, 1, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, 0);
}

/* One scalar parameter "n", bound by the only task: the callable is named
 * "a", so the string table holds "a", "n", then the child's name "k" at
 * offset 4, and the params section (one entry) is followed at once by the
 * child entry, whose name field (offset 4 in it) lies where a parameter
 * entry's kind would: parameter index 1 (== the count) would read the
 * child's name offset, 4 = KCTX_PARAM_SCALAR, as its kind. */
static void c_scalar_bound_once(kctx_image_builder *b) {
    kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_child(b, "k", "kctx_k", NULL);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, blob5, sizeof blob5);
    kctx_image_builder_task(b, 0, 1, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_SCALAR, 0, 0);
}

/* ---- the fixtures ------------------------------------------------------- */

static void make_all(void) {
    image im;
    const int VA = EXAMPLE_VECTOR_ADD;

    /* class 1: the buffer (a NULL pointer cannot be a file; test_validate
     * covers it) */
    im = resized(base(VA), 100);
    add("c1_too_small", im, 0, KCTX_IMAGE_TOO_SMALL, 100, 0);
    add("c1_misaligned", base(VA), 0, KCTX_IMAGE_MISALIGNED, 0, 1);

    /* class 2: identity */
    im = base(VA), im.bytes[0] = 'k';
    add("c2_bad_magic", im, 1, KCTX_IMAGE_BAD_MAGIC, 0, 0);
    im = base(VA), put16(im.bytes, 8, 2);
    add("c2_major_version", im, 1, KCTX_IMAGE_BAD_VERSION, 8, 0);
    im = base(VA), put16(im.bytes, 10, KCTX_IMAGE_VERSION_MINOR + 1);
    add("c2_newer_minor_version", im, 1, KCTX_IMAGE_BAD_VERSION, 10, 0);
    im = base(VA), put32(im.bytes, 12, 152);
    add("c2_header_size", im, 1, KCTX_IMAGE_BAD_HEADER_SIZE, 12, 0);
    im = base(VA), put32(im.bytes, 28, 1);
    add("c2_flags", im, 1, KCTX_IMAGE_BAD_FLAGS, 28, 0);
    im = base(VA), put32(im.bytes, 68, 0x100);
    add("c2_reserved", im, 1, KCTX_IMAGE_BAD_FLAGS, 68, 0);

    /* class 3: length */
    im = base(VA), im = resized(im, im.size + 1);
    add("c3_trailing_byte", im, 1, KCTX_IMAGE_SIZE_MISMATCH, 16, 0);
    im = base(VA), im = resized(im, im.size - 1);
    add("c3_truncated", im, 0, KCTX_IMAGE_SIZE_MISMATCH, 16, 0);
    im = base(VA), put64(im.bytes, 16, im.size - 64);
    add("c3_total_size_short", im, 0, KCTX_IMAGE_SIZE_MISMATCH, 16, 0);

    /* class 4: limits (header counts, then per-entry counts) */
    static const struct {
        const char *name;
        int sec;
        uint32_t value;
    } over[] = {{"c4_params", PARAMS, KCTX_IMAGE_MAX_PARAMS + 1},
                {"c4_children", CHILDREN, KCTX_IMAGE_MAX_CHILDREN + 1},
                {"c4_child_params", CHILD_PARAMS,
                 KCTX_IMAGE_MAX_CHILDREN * KCTX_IMAGE_MAX_CHILD_PARAMS + 1},
                {"c4_variants", VARIANTS, KCTX_IMAGE_MAX_CHILDREN * KCTX_IMAGE_MAX_VARIANTS + 1},
                {"c4_tasks", TASKS, KCTX_IMAGE_MAX_TASKS + 1},
                {"c4_bindings", BINDINGS, KCTX_IMAGE_MAX_TASKS * KCTX_IMAGE_MAX_CHILD_PARAMS + 1},
                {"c4_deps", DEPS, KCTX_IMAGE_MAX_TASKS * KCTX_IMAGE_MAX_DEPS + 1},
                {"c4_strtab", STRTAB, KCTX_IMAGE_MAX_STRTAB + 1},
                {"c4_count_all_ones", TASKS, 0xFFFFFFFFu}};
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        im = base(VA), put32(im.bytes, 36 + 4u * over[i].sec, over[i].value);
        add(over[i].name, im, 1, KCTX_IMAGE_LIMIT_EXCEEDED, 36 + 4u * over[i].sec, 0);
    }
    uint64_t child0, task0;
    im = base(VA), child0 = entry(im.bytes, CHILDREN, 0);
    put16(im.bytes, child0 + 16, KCTX_IMAGE_MAX_CHILD_PARAMS + 1);
    add("c4_child_param_count", im, 1, KCTX_IMAGE_LIMIT_EXCEEDED, child0 + 16, 0);
    im = base(VA), put16(im.bytes, child0 + 18, KCTX_IMAGE_MAX_VARIANTS + 1);
    add("c4_child_variant_count", im, 1, KCTX_IMAGE_LIMIT_EXCEEDED, child0 + 18, 0);
    im = base(VA), task0 = entry(im.bytes, TASKS, 0);
    put32(im.bytes, task0 + 12, KCTX_IMAGE_MAX_CHILD_PARAMS + 1);
    add("c4_task_binding_count", im, 1, KCTX_IMAGE_LIMIT_EXCEEDED, task0 + 12, 0);
    im = base(VA), put32(im.bytes, task0 + 20, KCTX_IMAGE_MAX_DEPS + 1);
    add("c4_task_dep_count", im, 1, KCTX_IMAGE_LIMIT_EXCEEDED, task0 + 20, 0);

    /* class 5: sections, padding, table ranges */
    im = base(VA), put64(im.bytes, 72, off_of(im.bytes, PARAMS) + 8);
    add("c5_offset_not_canonical", im, 1, KCTX_IMAGE_SECTION_NOT_CANONICAL, 72, 0);
    im = base(VA), put64(im.bytes, 72 + 8 * TASKS, UINT64_MAX - 15);
    add("c5_offset_out_of_range", im, 1, KCTX_IMAGE_SECTION_RANGE, 72 + 8 * TASKS, 0);
    im = base(VA), put64(im.bytes, 72 + 8 * BLOBS, off_of(im.bytes, BLOBS) + 64);
    add("c5_blobs_off", im, 1, KCTX_IMAGE_SECTION_NOT_CANONICAL, 72 + 8 * BLOBS, 0);
    im = base(VA);
    uint64_t pad = strtab_end(im.bytes);
    if (pad % 64 == 0) die("vector_add has no padding after its string table");
    im.bytes[pad] = 0x5A;
    add("c5_padding_after_strtab", im, 1, KCTX_IMAGE_SECTION_NOT_CANONICAL, pad, 0);
    im = base(EXAMPLE_DAG);
    pad = off_of(im.bytes, DEPS) + 4u * count_of(im.bytes, DEPS);
    if (pad % 8 == 0) die("dag has no padding after its dependencies");
    im.bytes[pad + 1] = 0x01;
    add("c5_padding_after_deps", im, 1, KCTX_IMAGE_SECTION_NOT_CANONICAL, pad + 1, 0);
    im = base(VA), put32(im.bytes, child0 + 12, 1);
    add("c5_range_not_consecutive", im, 1, KCTX_IMAGE_SECTION_NOT_CANONICAL, child0 + 12, 0);
    im = base(VA), put16(im.bytes, child0 + 16, 5);
    add("c5_range_past_table", im, 1, KCTX_IMAGE_SECTION_RANGE, child0 + 16, 0);
    im = base(VA), put32(im.bytes, task0 + 12, 3);
    add("c5_unowned_bindings", im, 1, KCTX_IMAGE_SECTION_NOT_CANONICAL, 36 + 4 * BINDINGS, 0);
    im = base(EXAMPLE_EMPTY);
    size_t end = im.size;
    im = resized(im, end + 8), put64(im.bytes, 16, end + 8);
    add("c5_bytes_after_strtab", im, 1, KCTX_IMAGE_SECTION_NOT_CANONICAL, end, 0);

    /* class 6: strings */
    im = base(VA), put32(im.bytes, 32, 1);
    add("c6_reference_order", im, 1, KCTX_IMAGE_BAD_STRING, 32, 0);
    im = base(VA);
    uint64_t last = strtab_end(im.bytes) - 1; /* the final NUL */
    im.bytes[last] = 'x';
    add("c6_unterminated", im, 1, KCTX_IMAGE_BAD_STRING, last - 1, 0); /* the string "n" */
    im = unvalidated("empty_name", c_empty_param_name);
    add("c6_empty_name", im, 1, KCTX_IMAGE_BAD_STRING,
        off_of(im.bytes, STRTAB) + strlen("empty_name") + 1 + strlen("x") + 1, 0);
    char long_name[KCTX_IMAGE_MAX_NAME + 2];
    memset(long_name, 'L', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    im = unvalidated(long_name, c_nothing);
    add("c6_name_too_long", im, 1, KCTX_IMAGE_BAD_STRING, off_of(im.bytes, STRTAB), 0);
    im = base(EXAMPLE_EMPTY);
    end = im.size;
    im = resized(im, end + 8);
    put64(im.bytes, 16, end + 8);
    put32(im.bytes, 36 + 4 * STRTAB, count_of(im.bytes, STRTAB) + 8);
    put64(im.bytes, 72 + 8 * BLOBS, end + 8);
    add("c6_unreferenced_bytes", im, 1, KCTX_IMAGE_BAD_STRING, end, 0);

    /* Only a header: every table empty, so the callable name's reference
     * (0, where it must be) points past the empty string table. */
    im = resized(base(EXAMPLE_EMPTY), 144);
    put64(im.bytes, 16, 144);
    put32(im.bytes, 36 + 4 * STRTAB, 0);
    put64(im.bytes, 72 + 8 * BLOBS, 144);
    add("c6_reference_past_table", im, 1, KCTX_IMAGE_BAD_STRING, 32, 0);

    /* class 7: the signature */
    uint64_t p0, p1, p2, p3;
    im = base(VA), p0 = entry(im.bytes, PARAMS, 0), p1 = entry(im.bytes, PARAMS, 1);
    p2 = entry(im.bytes, PARAMS, 2), p3 = entry(im.bytes, PARAMS, 3);
    im.bytes[p0 + 4] = 9;
    add("c7_unknown_kind", im, 1, KCTX_IMAGE_BAD_PARAM_KIND, p0 + 4, 0);
    im = base(VA), im.bytes[p0 + 4] = KCTX_PARAM_TENSOR;
    add("c7_child_only_kind", im, 1, KCTX_IMAGE_BAD_PARAM_KIND, p0 + 4, 0);
    im = base(VA), im.bytes[p1 + 6] = 1;
    add("c7_reserved_byte", im, 1, KCTX_IMAGE_BAD_PARAM_KIND, p1 + 6, 0);
    im = base(VA), im.bytes[p2 + 4] = KCTX_PARAM_SCALAR, im.bytes[p3 + 4] = KCTX_PARAM_TENSOR_OUT;
    add("c7_tensor_after_scalar", im, 1, KCTX_IMAGE_TENSOR_AFTER_SCALAR, p3 + 4, 0);

    /* class 8: children */
    uint64_t v0, cp0;
    im = base(VA), put32(im.bytes, child0, 1);
    add("c8_func_id_out_of_range", im, 1, KCTX_IMAGE_BAD_FUNC_ID, child0, 0);
    im = base(EXAMPLE_MATMUL);
    uint64_t child1 = entry(im.bytes, CHILDREN, 1);
    put32(im.bytes, child1, 0);
    add("c8_func_id_repeated", im, 1, KCTX_IMAGE_BAD_FUNC_ID, child1, 0);
    im = base(VA), v0 = entry(im.bytes, VARIANTS, 0),
    put32(im.bytes, v0, KCTX_VARIANT_ASCEND_BIN + 1);
    add("c8_variant_kind", im, 1, KCTX_IMAGE_BAD_VARIANT_KIND, v0, 0);
    /* Format 1.1: ASCEND_BIN. A 1.0 image cannot carry it; a 1.1 image
     * must (the version is the lowest the content needs). */
    im = base(VA), put32(im.bytes, v0, KCTX_VARIANT_ASCEND_BIN);
    add("c8_variant_kind_newer_than_image", im, 1, KCTX_IMAGE_BAD_VARIANT_KIND, v0, 0);
    im = base(EXAMPLE_ASCEND);
    uint64_t av1 = entry(im.bytes, VARIANTS, 1); /* child 0's ascend_bin */
    if (get32(im.bytes, av1) != KCTX_VARIANT_ASCEND_BIN || im.bytes[10] != 1)
        die("ascend: variant 1 is not ASCEND_BIN in a 1.1 image");
    put16(im.bytes, 10, 0);
    add("c8_ascend_bin_in_1_0_image", im, 1, KCTX_IMAGE_BAD_VARIANT_KIND, av1, 0);
    im = base(VA), put16(im.bytes, 10, 1);
    add("c8_minor_above_content", im, 1, KCTX_IMAGE_BAD_VERSION, 10, 0);
    im = base(EXAMPLE_ASCEND), put32(im.bytes, av1 + 4, 1);
    add("c8_ascend_bin_reserved", im, 1, KCTX_IMAGE_BAD_VARIANT_KIND, av1 + 4, 0);
    im = base(EXAMPLE_ASCEND), put64(im.bytes, av1 + 8, get64(im.bytes, av1 + 8) + 64);
    add("c8_ascend_bin_blob_not_canonical", im, 1, KCTX_IMAGE_BAD_BLOB, av1 + 8, 0);
    im = unvalidated("empty_ascend_blob", c_empty_ascend_blob);
    add("c8_ascend_bin_blob_empty", im, 1, KCTX_IMAGE_BAD_BLOB, entry(im.bytes, VARIANTS, 0) + 16,
        0);
    im = base(VA), put32(im.bytes, v0, 0);
    add("c8_variant_kind_zero", im, 1, KCTX_IMAGE_BAD_VARIANT_KIND, v0, 0);
    im = base(VA), put32(im.bytes, v0 + 4, 1);
    add("c8_variant_reserved", im, 1, KCTX_IMAGE_BAD_VARIANT_KIND, v0 + 4, 0);
    im = base(EXAMPLE_MATMUL);
    uint64_t v1 = entry(im.bytes, VARIANTS, 1);
    put64(im.bytes, v1 + 8, get64(im.bytes, v1 + 8) + 64);
    add("c8_blob_not_canonical", im, 1, KCTX_IMAGE_BAD_BLOB, v1 + 8, 0);
    im = base(EXAMPLE_MATMUL);
    uint64_t blob0_end = get64(im.bytes, entry(im.bytes, VARIANTS, 0) + 8) +
                         get64(im.bytes, entry(im.bytes, VARIANTS, 0) + 16);
    if (blob0_end % 64 == 0) die("matmul's first blob has no padding");
    im.bytes[blob0_end + 2] = 0xEE;
    add("c8_blob_padding", im, 1, KCTX_IMAGE_BAD_BLOB, blob0_end + 2, 0);
    im = base(VA), put64(im.bytes, v0 + 16, get64(im.bytes, v0 + 16) - 1);
    add("c8_last_blob_short", im, 1, KCTX_IMAGE_BAD_BLOB, v0 + 16, 0);
    im = base(VA), put64(im.bytes, v0 + 16, get64(im.bytes, v0 + 16) + 1);
    add("c8_blob_past_end", im, 1, KCTX_IMAGE_BAD_BLOB, v0 + 16, 0);
    im = unvalidated("empty_blob", c_empty_blob);
    add("c8_blob_empty", im, 1, KCTX_IMAGE_BAD_BLOB, entry(im.bytes, VARIANTS, 0) + 16, 0);
    im = unvalidated("no_variant", c_no_variant);
    add("c8_no_variant", im, 1, KCTX_IMAGE_NO_VARIANT, entry(im.bytes, CHILDREN, 0) + 18, 0);
    im = base(VA), cp0 = entry(im.bytes, CHILD_PARAMS, 0), im.bytes[cp0 + 4] = KCTX_PARAM_TENSOR_IN;
    add("c8_child_param_kind", im, 1, KCTX_IMAGE_BAD_CHILD_PARAM, cp0 + 4, 0);
    im = base(VA), im.bytes[cp0 + 7] = 1;
    add("c8_child_param_reserved", im, 1, KCTX_IMAGE_BAD_CHILD_PARAM, cp0 + 7, 0);

    /* class 9: tasks */
    uint64_t b0, b3;
    im = base(VA), put32(im.bytes, task0, 1);
    add("c9_unknown_func", im, 1, KCTX_IMAGE_UNKNOWN_FUNC, task0, 0);
    im = base(VA), put32(im.bytes, task0 + 4, 0);
    add("c9_block_dim_zero", im, 1, KCTX_IMAGE_BAD_BLOCK_DIM, task0 + 4, 0);
    im = base(VA), put32(im.bytes, task0 + 4, KCTX_IMAGE_MAX_BLOCK_DIM + 1);
    add("c9_block_dim_too_big", im, 1, KCTX_IMAGE_BAD_BLOCK_DIM, task0 + 4, 0);
    im = unvalidated("short_bindings", c_short_bindings);
    add("c9_binding_count", im, 1, KCTX_IMAGE_BAD_BINDING, entry(im.bytes, TASKS, 0) + 12, 0);
    im = base(VA), b0 = entry(im.bytes, BINDINGS, 0), b3 = entry(im.bytes, BINDINGS, 3);
    im.bytes[b0] = 4;
    add("c9_binding_kind_unknown", im, 1, KCTX_IMAGE_BAD_BINDING, b0, 0);
    im = base(VA), im.bytes[b3] = KCTX_BIND_TENSOR;
    add("c9_binding_kind_mismatch", im, 1, KCTX_IMAGE_BAD_BINDING, b3, 0);
    im = base(VA), im.bytes[b0 + 2] = 1;
    add("c9_binding_reserved", im, 1, KCTX_IMAGE_BAD_BINDING, b0 + 2, 0);
    im = base(VA), put32(im.bytes, b0 + 4, 4);
    add("c9_binding_param_range", im, 1, KCTX_IMAGE_BAD_BINDING, b0 + 4, 0);
    im = base(VA), put32(im.bytes, b0 + 4, 3);
    add("c9_tensor_binding_to_scalar", im, 1, KCTX_IMAGE_BAD_BINDING, b0 + 4, 0);
    /* The parameter index equal to the count, isolated: the bytes where a
     * parameter entry of that index would lie hold a SCALAR kind, so the
     * kind check after the bound check would pass, and only the bound
     * (index < count) refuses it. */
    im = unvalidated("a", c_scalar_bound_once);
    uint64_t sb = entry(im.bytes, BINDINGS, 0);
    if (count_of(im.bytes, PARAMS) != 1 || get32(im.bytes, sb + 4) != 0)
        die("scalar_bound_once: not one parameter bound at index 0");
    if (entry(im.bytes, PARAMS, 1) != entry(im.bytes, CHILDREN, 0) ||
        im.bytes[entry(im.bytes, PARAMS, 1) + 4] != KCTX_PARAM_SCALAR)
        die("scalar_bound_once: parameter entry 1 would not read as SCALAR");
    if (kctx_image_validate(im.bytes, im.size, NULL) != KCTX_IMAGE_OK)
        die("scalar_bound_once: the unbroken image is not valid"); /* a precondition only */
    put32(im.bytes, sb + 4, 1);
    add("c9_binding_param_equals_count", im, 1, KCTX_IMAGE_BAD_BINDING, sb + 4, 0);
    im = base(VA), put64(im.bytes, b3 + 8, 1);
    add("c9_scalar_binding_value", im, 1, KCTX_IMAGE_BAD_BINDING, b3 + 8, 0);
    /* The DAG: task 1 has an immediate (binding 2) and depends on task 0;
     * task 4 depends on tasks 1 and 2. */
    im = base(EXAMPLE_DAG);
    uint64_t t1 = entry(im.bytes, TASKS, 1), t4 = entry(im.bytes, TASKS, 4);
    uint64_t imm = entry(im.bytes, BINDINGS, get32(im.bytes, t1 + 8) + 2ull);
    uint64_t t1_dep = entry(im.bytes, DEPS, get32(im.bytes, t1 + 16));
    uint64_t t4_dep1 = entry(im.bytes, DEPS, get32(im.bytes, t4 + 16) + 1ull);
    if (im.bytes[imm] != KCTX_BIND_IMMEDIATE) die("dag: task 1 binding 2 is not an immediate");
    put32(im.bytes, imm + 4, 1);
    add("c9_immediate_param", im, 1, KCTX_IMAGE_BAD_BINDING, imm + 4, 0);
    im = base(EXAMPLE_DAG), put32(im.bytes, t1_dep, 1);
    add("c9_dep_on_itself", im, 1, KCTX_IMAGE_BAD_DEPENDENCY, t1_dep, 0);
    im = base(EXAMPLE_DAG), put32(im.bytes, t1_dep, 5);
    add("c9_dep_on_later_task", im, 1, KCTX_IMAGE_BAD_DEPENDENCY, t1_dep, 0);
    im = base(EXAMPLE_DAG), put32(im.bytes, t4_dep1, get32(im.bytes, t4_dep1 - 4));
    add("c9_dep_duplicate", im, 1, KCTX_IMAGE_BAD_DEPENDENCY, t4_dep1, 0);

    /* class 10: the checksum (not resealed, of course) */
    im = base(VA), im.bytes[im.size - 100] ^= 0x10;
    add("c10_blob_byte", im, 0, KCTX_IMAGE_CHECKSUM_MISMATCH, 24, 0);
    im = base(VA), im.bytes[off_of(im.bytes, STRTAB)] = 'V';
    add("c10_name_byte", im, 0, KCTX_IMAGE_CHECKSUM_MISMATCH, 24, 0);
    im = base(VA), im.bytes[24] ^= 0x01;
    add("c10_checksum_field", im, 0, KCTX_IMAGE_CHECKSUM_MISMATCH, 24, 0);

    /* valid images: the examples themselves */
    for (int i = 0; i < EXAMPLE_COUNT; i++) {
        char name[64];
        snprintf(name, sizeof name, "valid_%s", example_name(i));
        add(name, base(i), 0, KCTX_IMAGE_OK, 0, 0);
    }
}

/* ---- output --------------------------------------------------------------- */

static char *manifest(size_t *len) {
    size_t cap = 256 + (size_t)n_fixtures * 128;
    char *m = malloc(cap);
    if (m == NULL) die("out of memory");
    size_t at = (size_t)snprintf(m, cap,
                                 "# Generated by tests/image/make_fixtures.c; see README.md.\n"
                                 "# file reason offset shift  (shift: load that many bytes past "
                                 "an aligned address)\n");
    for (int i = 0; i < n_fixtures; i++)
        at += (size_t)snprintf(m + at, cap - at, "%s %s 0x%llx %u\n", fixtures[i].name,
                               kctx_image_reason_name(fixtures[i].reason), (ull)fixtures[i].offset,
                               fixtures[i].shift);
    *len = at;
    return m;
}

static int write_file(const char *dir, const char *name, const void *bytes, size_t size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(bytes, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "make_fixtures: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* 0 when the file holds exactly these bytes. */
static int same_file(const char *dir, const char *name, const void *bytes, size_t size) {
    char path[4096], why[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t got = 0;
    uint8_t *buf = ktc_read_file(path, &got, why, sizeof why);
    if (buf == NULL) {
        fprintf(stderr, "missing: %s\n", why);
        return -1;
    }
    int same = got == size && memcmp(buf, bytes, size) == 0;
    free(buf);
    if (!same) fprintf(stderr, "differs: %s\n", path);
    return same ? 0 : -1;
}

int main(int argc, char **argv) {
    int check = argc == 3 && strcmp(argv[1], "--check") == 0;
    if (!(argc == 2 && argv[1][0] != '-') && !check) {
        fprintf(stderr, "usage: %s DIR | --check DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[argc - 1];
    make_all();
    size_t mlen;
    char *m = manifest(&mlen);
    int bad = 0;
    for (int i = 0; i < n_fixtures; i++) {
        const fixture *f = &fixtures[i];
        if (check)
            bad |= same_file(dir, f->name, f->bytes, f->size);
        else
            bad |= write_file(dir, f->name, f->bytes, f->size);
    }
    bad |=
        check ? same_file(dir, "expected.txt", m, mlen) : write_file(dir, "expected.txt", m, mlen);
    if (check && bad)
        fprintf(stderr, "the fixtures in %s are out of date: regenerate them (see README.md)\n",
                dir);
    else if (!check)
        printf("wrote %d fixtures and expected.txt to %s\n", n_fixtures, dir);
    else
        printf("%d fixtures in %s are current\n", n_fixtures, dir);
    for (int i = 0; i < n_fixtures; i++) free(fixtures[i].bytes);
    free(m);
    return bad ? 1 : 0;
}
