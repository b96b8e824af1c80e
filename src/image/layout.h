/*
 * layout.h — the byte layout of format 1.1 (and 1.0) as the validator, the view and
 * the builder share it: field positions, section order, entry sizes, the
 * limit of every count, and the canonical placement of the sections. One
 * definition, so the writer and the reader cannot disagree about where
 * anything goes. docs/image-format.md is the normative text.
 */
#ifndef KCTX_IMAGE_LAYOUT_H
#define KCTX_IMAGE_LAYOUT_H

#include <kctx/image.h>

#include <stdbool.h>
#include <stdint.h>

/* KCTX_GEN_BINARY_KINDS(X): the variant kinds the platforms declare
 * (BINARY_KINDS, cmake/BinaryKinds.cmake), generated into the build. */
#include "kctx_gen_binary_kinds.h"

/* Header fields (absolute offsets). */
enum {
    HDR_MAGIC = 0,
    HDR_VERSION_MAJOR = 8,
    HDR_VERSION_MINOR = 10,
    HDR_HEADER_SIZE = 12,
    HDR_TOTAL_SIZE = 16,
    HDR_CHECKSUM = 24,
    HDR_FLAGS = 28,
    HDR_NAME = 32,
    HDR_COUNTS = 36, /* SEC_COUNT u32 counts, the last one strtab_size */
    HDR_RESERVED = 68,
    HDR_OFFSETS = 72 /* SEC_COUNT + 1 u64 offsets, the last one blobs_off */
};

/* Sections, in canonical order; the index of a count (HDR_COUNTS + 4 * i)
 * and of an offset (HDR_OFFSETS + 8 * i). The blob area is offset index
 * SEC_BLOBS and has no count of its own. */
enum {
    SEC_PARAMS = 0,
    SEC_CHILDREN = 1,
    SEC_CHILD_PARAMS = 2,
    SEC_VARIANTS = 3,
    SEC_TASKS = 4,
    SEC_BINDINGS = 5,
    SEC_DEPS = 6,
    SEC_STRTAB = 7,
    SEC_COUNT = 8,
    SEC_BLOBS = 8
};

/* Entry fields (offsets inside an entry). */
enum {
    PARAM_NAME = 0,
    PARAM_KIND = 4,
    PARAM_RESERVED = 5,
    CHILD_FUNC_ID = 0,
    CHILD_NAME = 4,
    CHILD_ENTRY = 8,
    CHILD_FIRST_PARAM = 12,
    CHILD_PARAM_COUNT = 16,
    CHILD_VARIANT_COUNT = 18,
    CHILD_FIRST_VARIANT = 20,
    VARIANT_KIND = 0,
    VARIANT_RESERVED = 4,
    VARIANT_BLOB_OFF = 8,
    VARIANT_BLOB_SIZE = 16,
    TASK_FUNC_ID = 0,
    TASK_BLOCK_DIM = 4,
    TASK_FIRST_BINDING = 8,
    TASK_BINDING_COUNT = 12,
    TASK_FIRST_DEP = 16,
    TASK_DEP_COUNT = 20,
    BIND_KIND = 0,
    BIND_RESERVED = 1,
    BIND_PARAM = 4,
    BIND_VALUE = 8
};

/* The public enum kctx_variant_kind (image.h, hand-written: it is installed
 * and compiles without the build tree) has every declared kind, under its
 * declared name in upper case, with its declared number; and no declared
 * kind needs a minor this reader does not know. (That the enum has no
 * member the declarations lack is tests/image/check_binary_kinds.py's.) */
#define IMG_CHECK_KIND(name, NAME, number, minor)                                               \
    _Static_assert(KCTX_VARIANT_##NAME == (number),                                             \
                   "KCTX_VARIANT_" #NAME " in kctx/image.h is not the declared number " #number \
                   " (BINARY_KINDS " #name "=" #number ":" #minor ")");                         \
    _Static_assert((minor) <= KCTX_IMAGE_VERSION_MINOR,                                         \
                   "binary kind " #name " needs format minor " #minor                           \
                   ", above KCTX_IMAGE_VERSION_MINOR");
KCTX_GEN_BINARY_KINDS(IMG_CHECK_KIND)
#undef IMG_CHECK_KIND

/* The lowest format minor that has variant `kind` (its declaration's);
 * UINT32_MAX for a kind no platform declares. */
static inline uint32_t img_variant_kind_minor(uint32_t kind) {
    switch (kind) {
#define IMG_KIND_MINOR(name, NAME, number, minor) \
    case (number):                                \
        return (minor);
        KCTX_GEN_BINARY_KINDS(IMG_KIND_MINOR)
#undef IMG_KIND_MINOR
    default:
        return UINT32_MAX;
    }
}

static inline uint64_t hdr_count_pos(int sec) { return HDR_COUNTS + 4u * (uint64_t)sec; }
static inline uint64_t hdr_offset_pos(int sec) { return HDR_OFFSETS + 8u * (uint64_t)sec; }

/* Bytes per entry of each counted section (the string table counts bytes). */
static const uint32_t kctx_sec_entry_size[SEC_COUNT] = {
    KCTX_IMAGE_PARAM_SIZE,       KCTX_IMAGE_CHILD_SIZE,
    KCTX_IMAGE_CHILD_PARAM_SIZE, KCTX_IMAGE_VARIANT_SIZE,
    KCTX_IMAGE_TASK_SIZE,        KCTX_IMAGE_BINDING_SIZE,
    KCTX_IMAGE_DEP_SIZE,         1u};

/* The hard limit of each header count. Tables that hold per-child or
 * per-task ranges are bounded by the per-entry limit times the entries
 * (products far below 2^32). */
static const uint64_t kctx_sec_limit[SEC_COUNT] = {
    KCTX_IMAGE_MAX_PARAMS,
    KCTX_IMAGE_MAX_CHILDREN,
    (KCTX_IMAGE_MAX_CHILDREN * KCTX_IMAGE_MAX_CHILD_PARAMS),
    (KCTX_IMAGE_MAX_CHILDREN * KCTX_IMAGE_MAX_VARIANTS),
    KCTX_IMAGE_MAX_TASKS,
    (KCTX_IMAGE_MAX_TASKS * KCTX_IMAGE_MAX_CHILD_PARAMS),
    (KCTX_IMAGE_MAX_TASKS * KCTX_IMAGE_MAX_DEPS),
    KCTX_IMAGE_MAX_STRTAB};

/* The header's name for each count field. */
static const char *const kctx_count_field_name[SEC_COUNT] = {
    "param_count", "child_count",   "child_param_count", "variant_count",
    "task_count",  "binding_count", "dep_count",         "strtab_size"};

static const char *const kctx_sec_name[SEC_COUNT + 1] = {"params",   "children", "child_params",
                                                         "variants", "tasks",    "bindings",
                                                         "deps",     "strtab",   "blobs"};

/* Round up to a power-of-two alignment; false on overflow. */
static inline bool img_align_up(uint64_t v, uint64_t align, uint64_t *out) {
    uint64_t r;
    if (__builtin_add_overflow(v, align - 1, &r)) return false;
    *out = r & ~(align - 1);
    return true;
}

/* The canonical placement for these counts: offs[i] for every section and
 * the blob area, and *strtab_end. Sections follow the header in order, each
 * at the next 8-aligned offset; the first blob sits at the next 64-aligned
 * offset after the string table, or, with no variants, the (empty) blob
 * area starts right at the end of the string table, which is then the end
 * of the image. Returns false on arithmetic overflow (impossible for counts
 * within their limits, but checked all the same). */
static inline bool kctx_image_canonical_layout(const uint32_t counts[SEC_COUNT],
                                               uint64_t offs[SEC_COUNT + 1], uint64_t *strtab_end) {
    uint64_t at = KCTX_IMAGE_HEADER_SIZE;
    for (int i = 0; i < SEC_COUNT; i++) {
        uint64_t bytes, end;
        if (!img_align_up(at, KCTX_IMAGE_SECTION_ALIGN, &offs[i])) return false;
        if (__builtin_mul_overflow((uint64_t)counts[i], (uint64_t)kctx_sec_entry_size[i], &bytes))
            return false;
        if (__builtin_add_overflow(offs[i], bytes, &end)) return false;
        at = end;
    }
    *strtab_end = at;
    if (counts[SEC_VARIANTS] == 0) {
        offs[SEC_BLOBS] = at;
        return true;
    }
    return img_align_up(at, KCTX_IMAGE_BLOB_ALIGN, &offs[SEC_BLOBS]);
}

#endif /* KCTX_IMAGE_LAYOUT_H */
