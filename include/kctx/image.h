/*
 * kctx/image.h — callable images: the byte format, the validator, a
 * read-only view over a validated image, and the builder (the only writer).
 *
 * A callable is a small task graph of compute kernels with a typed
 * signature, packed into one flat, relocatable, versioned image. The
 * normative description of the bytes is docs/image-format.md; this header
 * mirrors it. Everything here is pure: bytes in, verdict and views out; no
 * platform, no global state, and no allocation on the validation and view
 * paths. Every function is safe to call from any thread on distinct
 * objects; a view may be read from many threads at once.
 *
 * Format version 1.1, in brief (all integers little-endian):
 *
 *   offset  size  field
 *   0       8     magic "KCTXIMG\0"
 *   8       2     version_major (1: readers refuse any other)
 *   10      2     version_minor (0 or 1: the lowest minor the content needs;
 *                 readers refuse higher minors they do not know)
 *   12      4     header_size (144)
 *   16      8     total_size (exactly the image's length)
 *   24      4     checksum: CRC32C (Castagnoli) of bytes [header_size, total_size)
 *   28      4     flags (0)
 *   32      4     name (string reference: offset into the string table)
 *   36      4     param_count        callable parameters   (8-byte entries)
 *   40      4     child_count        children (kernels)     (24-byte entries)
 *   44      4     child_param_count  children's parameters  (8-byte entries)
 *   48      4     variant_count      binary variants        (24-byte entries)
 *   52      4     task_count         tasks                  (24-byte entries)
 *   56      4     binding_count      task bindings          (16-byte entries)
 *   60      4     dep_count          task dependencies      (4-byte entries)
 *   64      4     strtab_size        string table bytes
 *   68      4     reserved (0)
 *   72      8     params_off
 *   80      8     children_off
 *   88      8     child_params_off
 *   96      8     variants_off
 *   104     8     tasks_off
 *   112     8     bindings_off
 *   120     8     deps_off
 *   128     8     strtab_off
 *   136     8     blobs_off
 *
 * Canonical packing: sections follow the header in the order above, each at
 * the next 8-byte aligned offset after the previous one ends (padding bytes
 * are zero); blobs follow the string table, each at the next 64-byte
 * aligned offset, in variant order; total_size is the end of the last blob.
 * With no variants (no children), blobs_off and total_size are both the end
 * of the string table. Strings are stored
 * NUL-terminated, back to back, in reference order (callable name, then per
 * parameter, then per child: name, entry, then per child parameter), with no
 * sharing, so the table holds exactly the referenced strings. Every table
 * range of a child or task (first_x, x_count) starts where the previous
 * one ended, and the ranges use every table entry. Reserved bytes, the value
 * of a SCALAR binding and the param of an IMMEDIATE binding are zero. Hence
 * identical content has exactly one encoding.
 */
#ifndef KCTX_IMAGE_H
#define KCTX_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KCTX_IMAGE_API __attribute__((visibility("default")))
#else
#define KCTX_IMAGE_API
#endif

#define KCTX_IMAGE_MAGIC "KCTXIMG\0"
#define KCTX_IMAGE_VERSION_MAJOR 1u
/* The newest minor this reader knows. Each image carries the lowest minor
 * its content needs: 1 when a variant is ASCEND_BIN, else 0 (so 1.0 images
 * read unchanged and keep their bytes); a reader refuses any other minor. */
#define KCTX_IMAGE_VERSION_MINOR 1u
#define KCTX_IMAGE_HEADER_SIZE 144u
#define KCTX_IMAGE_SECTION_ALIGN 8u
#define KCTX_IMAGE_BLOB_ALIGN 64u
/* Images must start at an 8-byte aligned address (malloc, Python bytes). */
#define KCTX_IMAGE_BASE_ALIGN 8u

/* Hard limits (inclusive), checked before a count is used for anything.
 * The header's table totals are bounded by them too: child_param_count <=
 * MAX_CHILDREN * MAX_CHILD_PARAMS, variant_count <= MAX_CHILDREN *
 * MAX_VARIANTS, binding_count <= MAX_TASKS * MAX_CHILD_PARAMS, dep_count <=
 * MAX_TASKS * MAX_DEPS. */
#define KCTX_IMAGE_MAX_PARAMS 64u
#define KCTX_IMAGE_MAX_CHILDREN 256u
#define KCTX_IMAGE_MAX_CHILD_PARAMS 64u /* per child (and bindings per task) */
#define KCTX_IMAGE_MAX_VARIANTS 8u      /* per child */
#define KCTX_IMAGE_MAX_TASKS 4096u
#define KCTX_IMAGE_MAX_DEPS 64u  /* per task */
#define KCTX_IMAGE_MAX_NAME 255u /* bytes, without the NUL */
#define KCTX_IMAGE_MAX_BLOCK_DIM 65536u
#define KCTX_IMAGE_MAX_STRTAB (1u << 20)
#define KCTX_IMAGE_MAX_SIZE (1ull << 32) /* 4 GiB */

/* Entry sizes (bytes). */
#define KCTX_IMAGE_PARAM_SIZE 8u
#define KCTX_IMAGE_CHILD_SIZE 24u
#define KCTX_IMAGE_CHILD_PARAM_SIZE 8u
#define KCTX_IMAGE_VARIANT_SIZE 24u
#define KCTX_IMAGE_TASK_SIZE 24u
#define KCTX_IMAGE_BINDING_SIZE 16u
#define KCTX_IMAGE_DEP_SIZE 4u

/* Parameter entry (callable and child), 8 bytes:
 *   0 u32 name; 4 u8 kind; 5 u8[3] zero */
typedef enum kctx_param_kind {
    KCTX_PARAM_TENSOR_IN = 1,    /* callable only */
    KCTX_PARAM_TENSOR_OUT = 2,   /* callable only */
    KCTX_PARAM_TENSOR_INOUT = 3, /* callable only */
    KCTX_PARAM_SCALAR = 4,       /* 64-bit; callable and child */
    KCTX_PARAM_TENSOR = 5        /* child only: a device address */
} kctx_param_kind;

/* Child entry, 24 bytes (the func_ids of all children are a permutation of
 * 0..child_count-1; the builder assigns them in table order):
 *   0 u32 func_id (< child_count, unique); 4 u32 name; 8 u32 entry (symbol);
 *   12 u32 first_param; 16 u16 param_count; 18 u16 variant_count (>= 1);
 *   20 u32 first_variant */

/* Variant entry, 24 bytes:
 *   0 u32 kind; 4 u32 zero; 8 u64 blob_off (from the image start);
 *   16 u64 blob_size (> 0). Kinds 1-5 are format 1.0, kind 6 needs 1.1.
 * The kinds are declared, with these numbers, by the platforms that run
 * them (BINARY_KINDS in platform/<name>/platform.cmake); the build and a
 * test check this enum against the declarations (docs/platforms.md, "How
 * to add a platform"). A number is never reused. */
typedef enum kctx_variant_kind {
    KCTX_VARIANT_SIM_ELF = 1,  /* x86-64 ELF shared object for the sim */
    KCTX_VARIANT_OPENCL_C = 2, /* OpenCL C source */
    KCTX_VARIANT_CUDA_FATBIN = 3,
    KCTX_VARIANT_CUDA_CUBIN = 4,
    KCTX_VARIANT_CUDA_PTX = 5,
    /* Format 1.1: an Ascend binary, the bytes aclrtBinaryLoadFromData
     * loads (built with CANN's compilers); the child's entry is its AICore
     * kernel (aclrtBinaryGetFunction). docs/image-format.md, docs/acl.md. */
    KCTX_VARIANT_ASCEND_BIN = 6
} kctx_variant_kind;

/* Task entry, 24 bytes:
 *   0 u32 func_id; 4 u32 block_dim (1..MAX_BLOCK_DIM); 8 u32 first_binding;
 *   12 u32 binding_count (= the child's param_count); 16 u32 first_dep;
 *   20 u32 dep_count (<= MAX_DEPS; each dep < the task's index, no
 *   duplicates) */

/* Binding entry, 16 bytes: how one child parameter gets its value:
 *   0 u8 kind; 1 u8[3] zero; 4 u32 param (callable parameter index, 0 for
 *   immediates); 8 u64 value (tensor: byte offset into the tensor;
 *   immediate: the value; scalar: 0) */
typedef enum kctx_binding_kind {
    KCTX_BIND_TENSOR = 1,   /* child TENSOR <- callable tensor param + offset */
    KCTX_BIND_SCALAR = 2,   /* child SCALAR <- callable scalar param */
    KCTX_BIND_IMMEDIATE = 3 /* child SCALAR <- constant */
} kctx_binding_kind;

/* ------------------------------------------------------------------------
 * Validation. One list of rejection reasons, grouped by class (the class is
 * the hundreds digit).
 * ---------------------------------------------------------------------- */
#define KCTX_IMAGE_REASON_MAP(X)                                                               \
    X(OK, 0, "valid")                                                                          \
    /* 1: buffer */                                                                            \
    X(NULL_IMAGE, 101, "image pointer is NULL")                                                \
    X(TOO_SMALL, 102, "size is smaller than the header")                                       \
    X(MISALIGNED, 103, "image start is not 8-byte aligned")                                    \
    /* 2: identity */                                                                          \
    X(BAD_MAGIC, 201, "wrong magic")                                                           \
    X(BAD_VERSION, 202, "unsupported format version, or not the lowest the content needs")     \
    X(BAD_HEADER_SIZE, 203, "unknown header size")                                             \
    X(BAD_FLAGS, 204, "unknown flags or non-zero reserved field")                              \
    /* 3: length */                                                                            \
    X(SIZE_MISMATCH, 301, "total_size differs from the size given")                            \
    /* 4: limits */                                                                            \
    X(LIMIT_EXCEEDED, 401, "a count or length is above its hard limit")                        \
    /* 5: sections */                                                                          \
    X(SECTION_RANGE, 501, "a section lies outside the image or overflows")                     \
    X(SECTION_NOT_CANONICAL, 502,                                                              \
      "a section, padding or table range is not at its canonical place")                       \
    /* 6: strings */                                                                           \
    X(BAD_STRING, 601,                                                                         \
      "a string is outside the table, unterminated, empty, too long or not canonical")         \
    /* 7: signature */                                                                         \
    X(BAD_PARAM_KIND, 701, "unknown parameter kind")                                           \
    X(TENSOR_AFTER_SCALAR, 702, "a tensor parameter follows a scalar")                         \
    /* 8: children */                                                                          \
    X(BAD_FUNC_ID, 801, "function id out of range or repeated")                                \
    X(BAD_VARIANT_KIND, 802, "unknown variant kind")                                           \
    X(BAD_BLOB, 803, "variant blob outside the image, not canonical, or empty")                \
    X(NO_VARIANT, 804, "child has no variant")                                                 \
    X(BAD_CHILD_PARAM, 805, "child parameter kind is not TENSOR or SCALAR")                    \
    /* 9: tasks */                                                                             \
    X(UNKNOWN_FUNC, 901, "task names an unknown function id")                                  \
    X(BAD_BINDING, 902, "binding kind, parameter index or kind mismatch")                      \
    X(BAD_DEPENDENCY, 903, "dependency on a task that is not strictly earlier, or duplicated") \
    X(BAD_BLOCK_DIM, 904, "block count zero or above the limit")                               \
    /* 10: checksum */                                                                         \
    X(CHECKSUM_MISMATCH, 1001, "checksum mismatch")

typedef enum kctx_image_reason {
#define KCTX_IMAGE_REASON_ENUM_(name, num, msg) KCTX_IMAGE_##name = (num),
    KCTX_IMAGE_REASON_MAP(KCTX_IMAGE_REASON_ENUM_)
#undef KCTX_IMAGE_REASON_ENUM_
} kctx_image_reason;

typedef struct kctx_image_error {
    kctx_image_reason reason;
    uint64_t offset;   /* byte offset of the offending field (docs/image-format.md
                          lists it per reason; TOO_SMALL gives the size) */
    char message[160]; /* what exactly, always NUL-terminated, e.g. "task 1
                          dependency 0 (at 0x380): task 5 is not an earlier task" */
} kctx_image_error;

KCTX_IMAGE_API const char *kctx_image_reason_name(kctx_image_reason r); /* "KCTX_IMAGE_BAD_MAGIC" */
KCTX_IMAGE_API const char *kctx_image_reason_string(kctx_image_reason r); /* one line */

/* Validate an image completely: every rule of docs/image-format.md, in the
 * class order above (structure first, the checksum last; per-child and
 * per-task counts are checked against their limits when their entry is
 * first read, in class 5, before they are used; whether the minor is the
 * lowest the content needs is known only from the variant kinds, so that
 * BAD_VERSION comes after the children). Pure and allocation-free;
 * linear in the table sizes; reads nothing outside [bytes, bytes + size)
 * and blobs only for the checksum. Returns KCTX_IMAGE_OK or the first
 * rejection; `err` (may be NULL) receives reason, offset and message (for
 * OK: offset 0, message "valid"). */
KCTX_IMAGE_API kctx_image_reason kctx_image_validate(const void *bytes, size_t size,
                                                     kctx_image_error *err);

/* CRC32C (Castagnoli, reflected, init/xorout 0xFFFFFFFF) of a buffer;
 * CRC32C("123456789") = 0xE3069283. `data` may be NULL when size is 0.
 * Uses the SSE4.2 crc32 instruction when the CPU has it. */
KCTX_IMAGE_API uint32_t kctx_crc32c(const void *data, size_t size);

/* ------------------------------------------------------------------------
 * View: read-only access to a validated image. The view keeps a pointer to
 * the caller's bytes, which must stay unchanged while the view is used.
 * Accessors never re-check the bytes: they are only reachable through a
 * view that validation produced. They do check the caller's indices: an
 * index past its count (or a view that did not open) gives a zeroed result
 * (NULL names and blobs, kind 0; kctx_image_child.index UINT32_MAX;
 * kctx_image_dep_at UINT32_MAX). `child` arguments are positions in the
 * child table, not function ids. Returned strings and blobs point into the
 * image.
 * ---------------------------------------------------------------------- */
typedef struct kctx_image_view {
    size_t size; /* sizeof(kctx_image_view), set by kctx_image_view_open */
    const uint8_t *base;
    uint64_t total_size;
    uint32_t
        counts[8]; /* params, children, child params, variants, tasks, bindings, deps, strtab */
    uint64_t offs[9];
} kctx_image_view;

typedef struct kctx_image_param {
    const char *name;
    kctx_param_kind kind;
} kctx_image_param;

typedef struct kctx_image_variant {
    kctx_variant_kind kind;
    const void *blob;
    uint64_t blob_size;
    uint64_t blob_offset;
} kctx_image_variant;

typedef struct kctx_image_child {
    uint32_t func_id;
    const char *name;
    const char *entry;
    uint32_t param_count;
    uint32_t variant_count;
    uint32_t index; /* position in the child table */
} kctx_image_child;

typedef struct kctx_image_binding {
    kctx_binding_kind kind;
    uint32_t param;
    uint64_t value;
} kctx_image_binding;

typedef struct kctx_image_task {
    uint32_t func_id;
    uint32_t block_dim;
    uint32_t binding_count;
    uint32_t dep_count;
} kctx_image_task;

/* Validate, then fill `view`. On rejection returns the reason and leaves
 * view->base NULL. A NULL `view` gives KCTX_IMAGE_NULL_IMAGE. */
KCTX_IMAGE_API kctx_image_reason kctx_image_view_open(kctx_image_view *view, const void *bytes,
                                                      size_t size, kctx_image_error *err);
KCTX_IMAGE_API const char *kctx_image_name(const kctx_image_view *v);
KCTX_IMAGE_API uint32_t kctx_image_param_count(const kctx_image_view *v);
KCTX_IMAGE_API kctx_image_param kctx_image_param_at(const kctx_image_view *v, uint32_t i);
KCTX_IMAGE_API uint32_t kctx_image_child_count(const kctx_image_view *v);
KCTX_IMAGE_API kctx_image_child kctx_image_child_at(const kctx_image_view *v, uint32_t i);
/* The child with function id `func_id` (ids are a permutation of
 * 0..child_count-1); linear in the children. */
KCTX_IMAGE_API kctx_image_child kctx_image_child_by_id(const kctx_image_view *v, uint32_t func_id);
KCTX_IMAGE_API kctx_image_param kctx_image_child_param_at(const kctx_image_view *v, uint32_t child,
                                                          uint32_t i);
KCTX_IMAGE_API kctx_image_variant kctx_image_variant_at(const kctx_image_view *v, uint32_t child,
                                                        uint32_t i);
/* The child's first variant of `kind`; returns 0 and fills *out, or -1. */
KCTX_IMAGE_API int kctx_image_find_variant(const kctx_image_view *v, uint32_t child,
                                           kctx_variant_kind kind, kctx_image_variant *out);
KCTX_IMAGE_API uint32_t kctx_image_task_count(const kctx_image_view *v);
KCTX_IMAGE_API kctx_image_task kctx_image_task_at(const kctx_image_view *v, uint32_t t);
KCTX_IMAGE_API kctx_image_binding kctx_image_binding_at(const kctx_image_view *v, uint32_t t,
                                                        uint32_t i);
KCTX_IMAGE_API uint32_t kctx_image_dep_at(const kctx_image_view *v, uint32_t t, uint32_t i);

/* ------------------------------------------------------------------------
 * Builder: the only writer. Produces canonical images. Opaque; every call
 * after the first failure is a no-op returning that failure, so callers can
 * check once at kctx_image_builder_finish. The calls themselves only refuse
 * what the format cannot represent (a NULL name or blob, a kind that does
 * not fit its field, a child parameter, variant, binding or dependency
 * before any child or task) with KCTX_BUILD_INVALID; every rule of the
 * format is applied by finish, through kctx_image_validate. A NULL builder
 * gives KCTX_BUILD_INVALID. Not thread-safe: one builder, one thread.
 * ---------------------------------------------------------------------- */
typedef struct kctx_image_builder kctx_image_builder;

typedef enum kctx_build_status {
    KCTX_BUILD_OK = 0,
    KCTX_BUILD_NO_MEMORY = 1,
    KCTX_BUILD_INVALID = 2 /* the content would not validate; see the message */
} kctx_build_status;

/* NULL when callable_name is NULL or memory runs out. Names are copied. */
KCTX_IMAGE_API kctx_image_builder *kctx_image_builder_new(const char *callable_name);
KCTX_IMAGE_API void kctx_image_builder_free(kctx_image_builder *b);
/* Callable parameters, in order (tensors first). */
KCTX_IMAGE_API kctx_build_status kctx_image_builder_param(kctx_image_builder *b, const char *name,
                                                          kctx_param_kind kind);
/* Add a child; returns its function id through *func_id (ids are assigned
 * 0, 1, 2, ... in order). Child parameters then variants follow with the
 * two calls below, for the most recently added child. */
KCTX_IMAGE_API kctx_build_status kctx_image_builder_child(kctx_image_builder *b, const char *name,
                                                          const char *entry, uint32_t *func_id);
KCTX_IMAGE_API kctx_build_status kctx_image_builder_child_param(kctx_image_builder *b,
                                                                const char *name,
                                                                kctx_param_kind kind);
/* The blob is copied. */
KCTX_IMAGE_API kctx_build_status kctx_image_builder_variant(kctx_image_builder *b,
                                                            kctx_variant_kind kind,
                                                            const void *blob, size_t blob_size);
/* Add a task; bindings then dependencies follow for the most recent task.
 * Returns the task index through *task (may be NULL). */
KCTX_IMAGE_API kctx_build_status kctx_image_builder_task(kctx_image_builder *b, uint32_t func_id,
                                                         uint32_t block_dim, uint32_t *task);
KCTX_IMAGE_API kctx_build_status kctx_image_builder_bind(kctx_image_builder *b,
                                                         kctx_binding_kind kind, uint32_t param,
                                                         uint64_t value);
KCTX_IMAGE_API kctx_build_status kctx_image_builder_dep(kctx_image_builder *b,
                                                        uint32_t earlier_task);
/* Produce the image: *out is allocated with posix_memalign (64-byte
 * aligned, so blobs are 64-byte aligned in memory too; free with free()),
 * *out_size its length. The result is validated before it is returned;
 * content that would not validate gives KCTX_BUILD_INVALID, no output, and
 * the validator's reason name and message in `message` (may be NULL), e.g.
 * "KCTX_IMAGE_TENSOR_AFTER_SCALAR: parameter 1 ...". After a successful
 * finish the builder stays usable: more content may be added, and the
 * same content always gives the same bytes. */
KCTX_IMAGE_API kctx_build_status kctx_image_builder_finish(kctx_image_builder *b, void **out,
                                                           size_t *out_size, char *message,
                                                           size_t message_size);

/* Test support: recompute and store the checksum of an image whose header
 * is intact enough to give header_size and total_size (mutation tests and
 * the fuzzer use it so that structural rules, not the checksum, are what
 * gets tested). Stores CRC32C of [header_size, total_size) at offset 24.
 * Returns 0, or -1 (changing nothing) when bytes is NULL, size < 28,
 * header_size < 28, header_size > total_size or total_size > size. */
KCTX_IMAGE_API int kctx_image_reseal(void *bytes, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* KCTX_IMAGE_H */
