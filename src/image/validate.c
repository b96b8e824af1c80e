/*
 * validate.c — kctx_image_validate: every rule of docs/image-format.md, in
 * class order, on bytes that are trusted for nothing.
 *
 * Shape (after Lua's lundump.c): all reads go through the bounded reader;
 * the header is checked first (buffer, identity, length), then every count
 * against its limit before the count is used, then the placement of every
 * section (computed from the counts with checked arithmetic, compared with
 * the header and with the image size), then the content of the tables, and
 * the checksum last. Each pass is linear in the table sizes and allocates
 * nothing; the only per-call state is a few hundred bytes on the stack.
 * Blobs are read only by the checksum (and their <= 63 padding bytes).
 */
#include <kctx/image.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "layout.h"
#include "reader.h"

#if defined(__GNUC__)
#define IMG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define IMG_PRINTF(a, b)
#endif

typedef unsigned long long ull;

typedef struct vstate {
    img_reader r;
    kctx_image_error *err;
    uint64_t size;
    uint32_t n[SEC_COUNT];       /* header counts (n[SEC_STRTAB] = strtab_size) */
    uint64_t off[SEC_COUNT + 1]; /* section offsets, canonical once class 5 passed */
    uint64_t strtab_end;
    uint32_t minor;        /* the image's version_minor (class 2) */
    uint32_t needed_minor; /* the lowest minor its variant kinds need (class 8) */
    /* func id -> position in the child table (class 8, used by class 9). */
    uint16_t child_of_func[KCTX_IMAGE_MAX_CHILDREN];
    /* deps of the current task, as a bitmap over earlier task indices. */
    uint64_t dep_seen[KCTX_IMAGE_MAX_TASKS / 64];
} vstate;

IMG_PRINTF(4, 5)
static kctx_image_reason fail(vstate *v, kctx_image_reason reason, uint64_t offset, const char *fmt,
                              ...) {
    if (v->err != NULL) {
        va_list ap;
        v->err->reason = reason;
        v->err->offset = offset;
        va_start(ap, fmt);
        vsnprintf(v->err->message, sizeof v->err->message, fmt, ap);
        va_end(ap);
    }
    return reason;
}

static uint64_t entry_pos(const vstate *v, int sec, uint64_t index) {
    return v->off[sec] + index * kctx_sec_entry_size[sec];
}

/* ---- class 1: the buffer ------------------------------------------------ */

static kctx_image_reason check_buffer(vstate *v, const void *bytes, size_t size) {
    if (bytes == NULL) return fail(v, KCTX_IMAGE_NULL_IMAGE, 0, "image pointer is NULL");
    if (size < KCTX_IMAGE_HEADER_SIZE)
        return fail(v, KCTX_IMAGE_TOO_SMALL, size,
                    "image is %zu bytes, smaller than the %u-byte header", size,
                    KCTX_IMAGE_HEADER_SIZE);
    if (((uintptr_t)bytes & (KCTX_IMAGE_BASE_ALIGN - 1)) != 0)
        return fail(v, KCTX_IMAGE_MISALIGNED, 0, "image starts at %p, which is not %u-byte aligned",
                    bytes, KCTX_IMAGE_BASE_ALIGN);
    return KCTX_IMAGE_OK;
}

/* ---- class 2: identity -------------------------------------------------- */

static kctx_image_reason check_identity(vstate *v) {
    const uint8_t *magic = img_span(&v->r, HDR_MAGIC, 8);
    if (magic == NULL || memcmp(magic, KCTX_IMAGE_MAGIC, 8) != 0)
        return fail(v, KCTX_IMAGE_BAD_MAGIC, HDR_MAGIC, "magic at 0x0 is not \"KCTXIMG\\0\"");
    uint16_t major = img_u16(&v->r, HDR_VERSION_MAJOR);
    uint16_t minor = img_u16(&v->r, HDR_VERSION_MINOR);
    if (major != KCTX_IMAGE_VERSION_MAJOR)
        return fail(v, KCTX_IMAGE_BAD_VERSION, HDR_VERSION_MAJOR,
                    "format version %u.%u at 0x8: major version %u is not supported (this reader "
                    "reads %u.0 to %u.%u)",
                    major, minor, major, KCTX_IMAGE_VERSION_MAJOR, KCTX_IMAGE_VERSION_MAJOR,
                    KCTX_IMAGE_VERSION_MINOR);
    if (minor > KCTX_IMAGE_VERSION_MINOR)
        return fail(v, KCTX_IMAGE_BAD_VERSION, HDR_VERSION_MINOR,
                    "format version %u.%u at 0xa: minor version %u is newer than this reader's "
                    "%u.%u",
                    major, minor, minor, KCTX_IMAGE_VERSION_MAJOR, KCTX_IMAGE_VERSION_MINOR);
    v->minor = minor;
    uint32_t header_size = img_u32(&v->r, HDR_HEADER_SIZE);
    if (header_size != KCTX_IMAGE_HEADER_SIZE)
        return fail(v, KCTX_IMAGE_BAD_HEADER_SIZE, HDR_HEADER_SIZE,
                    "header_size at 0xc is %u; format %u.%u headers are %u bytes", header_size,
                    KCTX_IMAGE_VERSION_MAJOR, KCTX_IMAGE_VERSION_MINOR, KCTX_IMAGE_HEADER_SIZE);
    uint32_t flags = img_u32(&v->r, HDR_FLAGS);
    if (flags != 0)
        return fail(v, KCTX_IMAGE_BAD_FLAGS, HDR_FLAGS,
                    "flags at 0x1c are 0x%x; no flags are defined", flags);
    uint32_t reserved = img_u32(&v->r, HDR_RESERVED);
    if (reserved != 0)
        return fail(v, KCTX_IMAGE_BAD_FLAGS, HDR_RESERVED, "reserved field at 0x44 is 0x%x, not 0",
                    reserved);
    return KCTX_IMAGE_OK;
}

/* ---- class 3: length ---------------------------------------------------- */

static kctx_image_reason check_length(vstate *v) {
    uint64_t total = img_u64(&v->r, HDR_TOTAL_SIZE);
    if (total != v->size)
        return fail(v, KCTX_IMAGE_SIZE_MISMATCH, HDR_TOTAL_SIZE,
                    "total_size at 0x10 is %llu but the image given is %llu bytes (%s)", (ull)total,
                    (ull)v->size, total < v->size ? "trailing bytes" : "truncated");
    return KCTX_IMAGE_OK;
}

/* ---- class 4: header counts against their limits ------------------------ */

static kctx_image_reason check_limits(vstate *v) {
    if (v->size > KCTX_IMAGE_MAX_SIZE)
        return fail(v, KCTX_IMAGE_LIMIT_EXCEEDED, HDR_TOTAL_SIZE,
                    "total_size at 0x10 is %llu, above the limit of %llu bytes", (ull)v->size,
                    (ull)KCTX_IMAGE_MAX_SIZE);
    for (int i = 0; i < SEC_COUNT; i++) {
        uint64_t pos = hdr_count_pos(i);
        v->n[i] = img_u32(&v->r, pos);
        if (v->n[i] > kctx_sec_limit[i])
            return fail(v, KCTX_IMAGE_LIMIT_EXCEEDED, pos,
                        "%s at 0x%llx is %u, above the limit of %llu", kctx_count_field_name[i],
                        (ull)pos, v->n[i], (ull)kctx_sec_limit[i]);
    }
    return KCTX_IMAGE_OK;
}

/* ---- class 5: sections, padding and table ranges ------------------------ */

static kctx_image_reason check_zero_bytes(vstate *v, uint64_t from, uint64_t to,
                                          kctx_image_reason reason, const char *what) {
    const uint8_t *p = img_span(&v->r, from, to - from);
    if (p == NULL)
        return fail(v, KCTX_IMAGE_SECTION_RANGE, from, "%s at 0x%llx lies outside the image", what,
                    (ull)from);
    for (uint64_t i = 0; i < to - from; i++)
        if (p[i] != 0)
            return fail(v, reason, from + i, "%s byte at 0x%llx is 0x%02x, not 0", what,
                        (ull)(from + i), p[i]);
    return KCTX_IMAGE_OK;
}

static kctx_image_reason check_section_offsets(vstate *v) {
    uint64_t canon[SEC_COUNT + 1];
    if (!kctx_image_canonical_layout(v->n, canon, &v->strtab_end))
        return fail(v, KCTX_IMAGE_SECTION_RANGE, HDR_COUNTS, "section sizes overflow");
    for (int i = 0; i <= SEC_COUNT; i++) {
        uint64_t pos = hdr_offset_pos(i);
        uint64_t off = img_u64(&v->r, pos);
        uint64_t bytes = i < SEC_COUNT ? (uint64_t)v->n[i] * kctx_sec_entry_size[i] : 0;
        if (!img_span_ok(&v->r, off, bytes))
            return fail(v, KCTX_IMAGE_SECTION_RANGE, pos,
                        "%s section at 0x%llx (%llu bytes) lies outside the %llu-byte image",
                        kctx_sec_name[i], (ull)off, (ull)bytes, (ull)v->size);
        if (off != canon[i])
            return fail(v, KCTX_IMAGE_SECTION_NOT_CANONICAL, pos,
                        "%s_off at 0x%llx is 0x%llx; the canonical offset is 0x%llx",
                        kctx_sec_name[i], (ull)pos, (ull)off, (ull)canon[i]);
        v->off[i] = off;
    }
    /* Alignment padding between sections is zero. */
    for (int i = 1; i <= SEC_COUNT; i++) {
        uint64_t prev_end = v->off[i - 1] + (uint64_t)v->n[i - 1] * kctx_sec_entry_size[i - 1];
        kctx_image_reason r =
            check_zero_bytes(v, prev_end, v->off[i], KCTX_IMAGE_SECTION_NOT_CANONICAL, "padding");
        if (r != KCTX_IMAGE_OK) return r;
    }
    if (v->n[SEC_VARIANTS] == 0 && v->size != v->strtab_end)
        return fail(v, KCTX_IMAGE_SECTION_NOT_CANONICAL, v->strtab_end,
                    "image has no blobs but continues for %llu bytes after its string table "
                    "(at 0x%llx)",
                    (ull)(v->size - v->strtab_end), (ull)v->strtab_end);
    return KCTX_IMAGE_OK;
}

/* One table range (first, count) of an entry: starts where the previous
 * range ended, and stays inside its table. */
static kctx_image_reason check_range(vstate *v, const char *owner, uint32_t index,
                                     uint64_t first_pos, uint64_t count_pos, uint32_t first,
                                     uint32_t count, uint64_t *running, int table) {
    if (first != *running)
        return fail(v, KCTX_IMAGE_SECTION_NOT_CANONICAL, first_pos,
                    "%s %u: first %s entry at 0x%llx is %u; ranges are consecutive, so it must be "
                    "%llu",
                    owner, index, kctx_sec_name[table], (ull)first_pos, first, (ull)*running);
    *running += count;
    if (*running > v->n[table])
        return fail(v, KCTX_IMAGE_SECTION_RANGE, count_pos,
                    "%s %u: %s range [%u, %llu) runs past the %u-entry table", owner, index,
                    kctx_sec_name[table], first, (ull)*running, v->n[table]);
    return KCTX_IMAGE_OK;
}

static kctx_image_reason check_entry_limit(vstate *v, const char *owner, uint32_t index,
                                           uint64_t pos, uint32_t value, uint32_t limit,
                                           const char *what) {
    if (value > limit)
        return fail(v, KCTX_IMAGE_LIMIT_EXCEEDED, pos,
                    "%s %u: %s at 0x%llx is %u, above the limit of %u", owner, index, what,
                    (ull)pos, value, limit);
    return KCTX_IMAGE_OK;
}

static kctx_image_reason check_table_ranges(vstate *v) {
    kctx_image_reason r;
    uint64_t run_p = 0, run_v = 0, run_b = 0, run_d = 0;
    for (uint32_t c = 0; c < v->n[SEC_CHILDREN]; c++) {
        uint64_t e = entry_pos(v, SEC_CHILDREN, c);
        uint32_t pc = img_u16(&v->r, e + CHILD_PARAM_COUNT);
        uint32_t vc = img_u16(&v->r, e + CHILD_VARIANT_COUNT);
        /* Per-entry counts meet their limits before they are used. */
        if ((r = check_entry_limit(v, "child", c, e + CHILD_PARAM_COUNT, pc,
                                   KCTX_IMAGE_MAX_CHILD_PARAMS, "param_count")) != KCTX_IMAGE_OK ||
            (r = check_entry_limit(v, "child", c, e + CHILD_VARIANT_COUNT, vc,
                                   KCTX_IMAGE_MAX_VARIANTS, "variant_count")) != KCTX_IMAGE_OK)
            return r;
        if ((r = check_range(v, "child", c, e + CHILD_FIRST_PARAM, e + CHILD_PARAM_COUNT,
                             img_u32(&v->r, e + CHILD_FIRST_PARAM), pc, &run_p,
                             SEC_CHILD_PARAMS)) != KCTX_IMAGE_OK ||
            (r = check_range(v, "child", c, e + CHILD_FIRST_VARIANT, e + CHILD_VARIANT_COUNT,
                             img_u32(&v->r, e + CHILD_FIRST_VARIANT), vc, &run_v, SEC_VARIANTS)) !=
                KCTX_IMAGE_OK)
            return r;
    }
    for (uint32_t t = 0; t < v->n[SEC_TASKS]; t++) {
        uint64_t e = entry_pos(v, SEC_TASKS, t);
        uint32_t bc = img_u32(&v->r, e + TASK_BINDING_COUNT);
        uint32_t dc = img_u32(&v->r, e + TASK_DEP_COUNT);
        if ((r = check_entry_limit(v, "task", t, e + TASK_BINDING_COUNT, bc,
                                   KCTX_IMAGE_MAX_CHILD_PARAMS, "binding_count")) !=
                KCTX_IMAGE_OK ||
            (r = check_entry_limit(v, "task", t, e + TASK_DEP_COUNT, dc, KCTX_IMAGE_MAX_DEPS,
                                   "dep_count")) != KCTX_IMAGE_OK)
            return r;
        if ((r = check_range(v, "task", t, e + TASK_FIRST_BINDING, e + TASK_BINDING_COUNT,
                             img_u32(&v->r, e + TASK_FIRST_BINDING), bc, &run_b, SEC_BINDINGS)) !=
                KCTX_IMAGE_OK ||
            (r = check_range(v, "task", t, e + TASK_FIRST_DEP, e + TASK_DEP_COUNT,
                             img_u32(&v->r, e + TASK_FIRST_DEP), dc, &run_d, SEC_DEPS)) !=
                KCTX_IMAGE_OK)
            return r;
    }
    /* Every table entry belongs to exactly one range. */
    const struct {
        int table;
        uint64_t used;
        const char *owners;
    } use[] = {{SEC_CHILD_PARAMS, run_p, "children"},
               {SEC_VARIANTS, run_v, "children"},
               {SEC_BINDINGS, run_b, "tasks"},
               {SEC_DEPS, run_d, "tasks"}};
    for (size_t i = 0; i < sizeof use / sizeof use[0]; i++)
        if (use[i].used != v->n[use[i].table])
            return fail(v, KCTX_IMAGE_SECTION_NOT_CANONICAL, hdr_count_pos(use[i].table),
                        "the %s use %llu of the %u %s entries; the rest belong to no one",
                        use[i].owners, (ull)use[i].used, v->n[use[i].table],
                        kctx_sec_name[use[i].table]);
    return KCTX_IMAGE_OK;
}

/* ---- class 6: strings --------------------------------------------------- */

/* What a string reference belongs to, for messages. */
typedef enum strref {
    REF_CALLABLE,
    REF_PARAM,
    REF_CHILD_NAME,
    REF_CHILD_ENTRY,
    REF_CHILD_PARAM
} strref;

static const char *describe_ref(char *buf, size_t size, strref ref, uint32_t i, uint32_t j) {
    switch (ref) {
    case REF_CALLABLE:
        snprintf(buf, size, "callable name");
        break;
    case REF_PARAM:
        snprintf(buf, size, "parameter %u name", i);
        break;
    case REF_CHILD_NAME:
        snprintf(buf, size, "child %u name", i);
        break;
    case REF_CHILD_ENTRY:
        snprintf(buf, size, "child %u entry", i);
        break;
    case REF_CHILD_PARAM:
        snprintf(buf, size, "child %u parameter %u name", i, j);
        break;
    }
    return buf;
}

/* One string reference: it must point exactly where the previous string
 * ended (*cursor, relative to the table), and the string there must be
 * non-empty, at most MAX_NAME bytes and NUL-terminated inside the table. */
static kctx_image_reason check_string(vstate *v, uint64_t *cursor, uint64_t ref_pos, strref what,
                                      uint32_t i, uint32_t j) {
    char d[48];
    uint32_t ref = img_u32(&v->r, ref_pos);
    uint64_t table_size = v->n[SEC_STRTAB];
    if (ref != *cursor)
        return fail(v, KCTX_IMAGE_BAD_STRING, ref_pos,
                    "%s: reference at 0x%llx is %u; strings are stored in reference order, so it "
                    "must be %llu",
                    describe_ref(d, sizeof d, what, i, j), (ull)ref_pos, ref, (ull)*cursor);
    if (ref >= table_size)
        return fail(v, KCTX_IMAGE_BAD_STRING, ref_pos,
                    "%s: reference at 0x%llx is %u, past the end of the %llu-byte string table",
                    describe_ref(d, sizeof d, what, i, j), (ull)ref_pos, ref, (ull)table_size);
    uint64_t start = v->off[SEC_STRTAB] + ref;
    uint64_t avail = table_size - ref;
    uint64_t scan = avail < KCTX_IMAGE_MAX_NAME + 1u ? avail : KCTX_IMAGE_MAX_NAME + 1u;
    const uint8_t *s = img_span(&v->r, start, scan);
    const uint8_t *nul = s != NULL ? memchr(s, 0, scan) : NULL;
    if (nul == NULL) {
        if (avail <= KCTX_IMAGE_MAX_NAME)
            return fail(v, KCTX_IMAGE_BAD_STRING, start,
                        "%s: string at 0x%llx is not NUL-terminated inside the string table",
                        describe_ref(d, sizeof d, what, i, j), (ull)start);
        return fail(v, KCTX_IMAGE_BAD_STRING, start, "%s: string at 0x%llx is longer than %u bytes",
                    describe_ref(d, sizeof d, what, i, j), (ull)start, KCTX_IMAGE_MAX_NAME);
    }
    uint64_t len = (uint64_t)(nul - s);
    if (len == 0)
        return fail(v, KCTX_IMAGE_BAD_STRING, start, "%s: string at 0x%llx is empty",
                    describe_ref(d, sizeof d, what, i, j), (ull)start);
    *cursor = ref + len + 1;
    return KCTX_IMAGE_OK;
}

static kctx_image_reason check_strings(vstate *v) {
    kctx_image_reason r;
    uint64_t cursor = 0;
    if ((r = check_string(v, &cursor, HDR_NAME, REF_CALLABLE, 0, 0)) != KCTX_IMAGE_OK) return r;
    for (uint32_t p = 0; p < v->n[SEC_PARAMS]; p++)
        if ((r = check_string(v, &cursor, entry_pos(v, SEC_PARAMS, p) + PARAM_NAME, REF_PARAM, p,
                              0)) != KCTX_IMAGE_OK)
            return r;
    for (uint32_t c = 0; c < v->n[SEC_CHILDREN]; c++) {
        uint64_t e = entry_pos(v, SEC_CHILDREN, c);
        if ((r = check_string(v, &cursor, e + CHILD_NAME, REF_CHILD_NAME, c, 0)) != KCTX_IMAGE_OK ||
            (r = check_string(v, &cursor, e + CHILD_ENTRY, REF_CHILD_ENTRY, c, 0)) != KCTX_IMAGE_OK)
            return r;
        uint32_t first = img_u32(&v->r, e + CHILD_FIRST_PARAM);
        uint32_t count = img_u16(&v->r, e + CHILD_PARAM_COUNT);
        for (uint32_t k = 0; k < count; k++) {
            uint64_t pe = entry_pos(v, SEC_CHILD_PARAMS, (uint64_t)first + k);
            if ((r = check_string(v, &cursor, pe + PARAM_NAME, REF_CHILD_PARAM, c, k)) !=
                KCTX_IMAGE_OK)
                return r;
        }
    }
    if (cursor != v->n[SEC_STRTAB])
        return fail(v, KCTX_IMAGE_BAD_STRING, v->off[SEC_STRTAB] + cursor,
                    "string table has %llu unreferenced bytes after its last string (at 0x%llx)",
                    (ull)(v->n[SEC_STRTAB] - cursor), (ull)(v->off[SEC_STRTAB] + cursor));
    return KCTX_IMAGE_OK;
}

/* ---- class 7: the signature --------------------------------------------- */

/* Offset of the first non-zero byte in [from, to), or UINT64_MAX. */
static uint64_t first_nonzero(vstate *v, uint64_t from, uint64_t to) {
    for (uint64_t at = from; at < to; at++)
        if (img_u8(&v->r, at) != 0) return at;
    return UINT64_MAX;
}

static const char *param_kind_name(uint32_t kind) {
    switch (kind) {
    case KCTX_PARAM_TENSOR_IN:
        return "TENSOR_IN";
    case KCTX_PARAM_TENSOR_OUT:
        return "TENSOR_OUT";
    case KCTX_PARAM_TENSOR_INOUT:
        return "TENSOR_INOUT";
    case KCTX_PARAM_SCALAR:
        return "SCALAR";
    case KCTX_PARAM_TENSOR:
        return "TENSOR";
    default:
        return "unknown";
    }
}

static bool is_callable_tensor(uint32_t kind) {
    return kind == KCTX_PARAM_TENSOR_IN || kind == KCTX_PARAM_TENSOR_OUT ||
           kind == KCTX_PARAM_TENSOR_INOUT;
}

static kctx_image_reason check_signature(vstate *v) {
    uint32_t first_scalar = UINT32_MAX;
    for (uint32_t p = 0; p < v->n[SEC_PARAMS]; p++) {
        uint64_t e = entry_pos(v, SEC_PARAMS, p);
        uint32_t kind = img_u8(&v->r, e + PARAM_KIND);
        if (!is_callable_tensor(kind) && kind != KCTX_PARAM_SCALAR)
            return fail(v, KCTX_IMAGE_BAD_PARAM_KIND, e + PARAM_KIND,
                        "parameter %u: kind at 0x%llx is %u (%s); callable parameters are "
                        "TENSOR_IN, TENSOR_OUT, TENSOR_INOUT or SCALAR",
                        p, (ull)(e + PARAM_KIND), kind, param_kind_name(kind));
        uint64_t nz = first_nonzero(v, e + PARAM_RESERVED, e + KCTX_IMAGE_PARAM_SIZE);
        if (nz != UINT64_MAX)
            return fail(v, KCTX_IMAGE_BAD_PARAM_KIND, nz,
                        "parameter %u: reserved byte at 0x%llx after the kind is not 0", p,
                        (ull)nz);
        if (kind == KCTX_PARAM_SCALAR) {
            if (first_scalar == UINT32_MAX) first_scalar = p;
        } else if (first_scalar != UINT32_MAX) {
            return fail(v, KCTX_IMAGE_TENSOR_AFTER_SCALAR, e + PARAM_KIND,
                        "parameter %u (kind at 0x%llx) is a tensor after scalar parameter %u; all "
                        "tensors come first",
                        p, (ull)(e + PARAM_KIND), first_scalar);
        }
    }
    return KCTX_IMAGE_OK;
}

/* ---- class 8: children -------------------------------------------------- */

static kctx_image_reason check_child_variants(vstate *v, uint32_t c, uint32_t first, uint32_t count,
                                              uint64_t *blob_at) {
    for (uint32_t k = 0; k < count; k++) {
        uint64_t e = entry_pos(v, SEC_VARIANTS, (uint64_t)first + k);
        uint32_t kind = img_u32(&v->r, e + VARIANT_KIND);
        uint32_t kind_minor = img_variant_kind_minor(kind);
        if (kind_minor == UINT32_MAX)
            return fail(v, KCTX_IMAGE_BAD_VARIANT_KIND, e + VARIANT_KIND,
                        "child %u variant %u: kind at 0x%llx is %u, not a known variant kind", c, k,
                        (ull)(e + VARIANT_KIND), kind);
        if (kind_minor > v->minor)
            return fail(v, KCTX_IMAGE_BAD_VARIANT_KIND, e + VARIANT_KIND,
                        "child %u variant %u: kind at 0x%llx is %u, which format %u.%u lacks (it "
                        "needs %u.%u)",
                        c, k, (ull)(e + VARIANT_KIND), kind, KCTX_IMAGE_VERSION_MAJOR, v->minor,
                        KCTX_IMAGE_VERSION_MAJOR, kind_minor);
        if (kind_minor > v->needed_minor) v->needed_minor = kind_minor;
        uint32_t reserved = img_u32(&v->r, e + VARIANT_RESERVED);
        if (reserved != 0)
            return fail(v, KCTX_IMAGE_BAD_VARIANT_KIND, e + VARIANT_RESERVED,
                        "child %u variant %u: reserved field at 0x%llx is 0x%x, not 0", c, k,
                        (ull)(e + VARIANT_RESERVED), reserved);
        uint64_t off = img_u64(&v->r, e + VARIANT_BLOB_OFF);
        uint64_t size = img_u64(&v->r, e + VARIANT_BLOB_SIZE);
        uint64_t canon = 0;
        if (!img_align_up(*blob_at, KCTX_IMAGE_BLOB_ALIGN, &canon) || off != canon)
            return fail(v, KCTX_IMAGE_BAD_BLOB, e + VARIANT_BLOB_OFF,
                        "child %u variant %u: blob_off at 0x%llx is 0x%llx; blobs are packed in "
                        "variant order at 64-byte boundaries, so it must be 0x%llx",
                        c, k, (ull)(e + VARIANT_BLOB_OFF), (ull)off, (ull)canon);
        if (off > v->size)
            return fail(v, KCTX_IMAGE_BAD_BLOB, e + VARIANT_BLOB_OFF,
                        "child %u variant %u: blob at 0x%llx starts past the end of the image", c,
                        k, (ull)off);
        if (size == 0)
            return fail(v, KCTX_IMAGE_BAD_BLOB, e + VARIANT_BLOB_SIZE,
                        "child %u variant %u: blob_size at 0x%llx is 0; blobs are not empty", c, k,
                        (ull)(e + VARIANT_BLOB_SIZE));
        if (size > v->size - off)
            return fail(v, KCTX_IMAGE_BAD_BLOB, e + VARIANT_BLOB_SIZE,
                        "child %u variant %u: blob [0x%llx, +%llu) runs past the end of the "
                        "%llu-byte image",
                        c, k, (ull)off, (ull)size, (ull)v->size);
        /* Padding after the previous blob (empty before the first blob: the
         * padding after the string table is a class-5 matter). */
        kctx_image_reason r =
            check_zero_bytes(v, *blob_at, off, KCTX_IMAGE_BAD_BLOB, "blob padding");
        if (r != KCTX_IMAGE_OK) return r;
        *blob_at = off + size;
    }
    return KCTX_IMAGE_OK;
}

static kctx_image_reason check_children(vstate *v) {
    kctx_image_reason r;
    const uint16_t absent = UINT16_MAX;
    for (uint32_t i = 0; i < v->n[SEC_CHILDREN]; i++) v->child_of_func[i] = absent;
    uint64_t blob_at = v->off[SEC_BLOBS];
    uint64_t last_size_pos = 0;
    for (uint32_t c = 0; c < v->n[SEC_CHILDREN]; c++) {
        uint64_t e = entry_pos(v, SEC_CHILDREN, c);
        uint32_t id = img_u32(&v->r, e + CHILD_FUNC_ID);
        if (id >= v->n[SEC_CHILDREN])
            return fail(v, KCTX_IMAGE_BAD_FUNC_ID, e + CHILD_FUNC_ID,
                        "child %u: func_id at 0x%llx is %u, not below the child count %u", c,
                        (ull)(e + CHILD_FUNC_ID), id, v->n[SEC_CHILDREN]);
        if (v->child_of_func[id] != absent)
            return fail(v, KCTX_IMAGE_BAD_FUNC_ID, e + CHILD_FUNC_ID,
                        "child %u: func_id at 0x%llx is %u, already used by child %u", c,
                        (ull)(e + CHILD_FUNC_ID), id, v->child_of_func[id]);
        v->child_of_func[id] = (uint16_t)c;
        uint32_t pc = img_u16(&v->r, e + CHILD_PARAM_COUNT);
        uint32_t vc = img_u16(&v->r, e + CHILD_VARIANT_COUNT);
        if (vc == 0)
            return fail(v, KCTX_IMAGE_NO_VARIANT, e + CHILD_VARIANT_COUNT,
                        "child %u: variant_count at 0x%llx is 0; every child has a variant", c,
                        (ull)(e + CHILD_VARIANT_COUNT));
        uint32_t first_param = img_u32(&v->r, e + CHILD_FIRST_PARAM);
        for (uint32_t k = 0; k < pc; k++) {
            uint64_t pe = entry_pos(v, SEC_CHILD_PARAMS, (uint64_t)first_param + k);
            uint32_t kind = img_u8(&v->r, pe + PARAM_KIND);
            if (kind != KCTX_PARAM_TENSOR && kind != KCTX_PARAM_SCALAR)
                return fail(v, KCTX_IMAGE_BAD_CHILD_PARAM, pe + PARAM_KIND,
                            "child %u parameter %u: kind at 0x%llx is %u (%s); child parameters "
                            "are TENSOR or SCALAR",
                            c, k, (ull)(pe + PARAM_KIND), kind, param_kind_name(kind));
            uint64_t nz = first_nonzero(v, pe + PARAM_RESERVED, pe + KCTX_IMAGE_PARAM_SIZE);
            if (nz != UINT64_MAX)
                return fail(v, KCTX_IMAGE_BAD_CHILD_PARAM, nz,
                            "child %u parameter %u: reserved byte at 0x%llx is not 0", c, k,
                            (ull)nz);
        }
        uint32_t first_variant = img_u32(&v->r, e + CHILD_FIRST_VARIANT);
        if ((r = check_child_variants(v, c, first_variant, vc, &blob_at)) != KCTX_IMAGE_OK)
            return r;
        last_size_pos =
            entry_pos(v, SEC_VARIANTS, (uint64_t)first_variant + vc - 1) + VARIANT_BLOB_SIZE;
    }
    /* The last blob ends the image (with no variants, class 5 checked that
     * the string table does). */
    if (v->n[SEC_VARIANTS] != 0 && blob_at != v->size)
        return fail(v, KCTX_IMAGE_BAD_BLOB, last_size_pos,
                    "the last blob ends at 0x%llx but the image continues to 0x%llx", (ull)blob_at,
                    (ull)v->size);
    /* One encoding per content: the version is the lowest the content
     * needs (known only now, from the variant kinds; higher minors than
     * this reader's were refused in class 2). */
    if (v->minor != v->needed_minor)
        return fail(v, KCTX_IMAGE_BAD_VERSION, HDR_VERSION_MINOR,
                    "format version %u.%u at 0xa: the content needs only %u.%u, and images carry "
                    "the lowest version their content needs",
                    KCTX_IMAGE_VERSION_MAJOR, v->minor, KCTX_IMAGE_VERSION_MAJOR, v->needed_minor);
    return KCTX_IMAGE_OK;
}

/* ---- class 9: tasks ------------------------------------------------------ */

static kctx_image_reason check_binding(vstate *v, uint32_t t, uint32_t k, uint64_t e,
                                       uint32_t child_kind) {
    uint32_t kind = img_u8(&v->r, e + BIND_KIND);
    uint64_t nz = first_nonzero(v, e + BIND_RESERVED, e + BIND_PARAM);
    if (nz != UINT64_MAX)
        return fail(v, KCTX_IMAGE_BAD_BINDING, nz,
                    "task %u binding %u: reserved byte at 0x%llx is not 0", t, k, (ull)nz);
    uint32_t param = img_u32(&v->r, e + BIND_PARAM);
    uint64_t value = img_u64(&v->r, e + BIND_VALUE);
    uint32_t want_child = kind == KCTX_BIND_TENSOR ? KCTX_PARAM_TENSOR : KCTX_PARAM_SCALAR;
    switch (kind) {
    case KCTX_BIND_TENSOR:
    case KCTX_BIND_SCALAR:
    case KCTX_BIND_IMMEDIATE:
        break;
    default:
        return fail(v, KCTX_IMAGE_BAD_BINDING, e + BIND_KIND,
                    "task %u binding %u: kind at 0x%llx is %u, not TENSOR, SCALAR or IMMEDIATE", t,
                    k, (ull)(e + BIND_KIND), kind);
    }
    if (child_kind != want_child)
        return fail(v, KCTX_IMAGE_BAD_BINDING, e + BIND_KIND,
                    "task %u binding %u: a %s binding (kind at 0x%llx) for child parameter %u, "
                    "which is %s",
                    t, k,
                    kind == KCTX_BIND_TENSOR   ? "TENSOR"
                    : kind == KCTX_BIND_SCALAR ? "SCALAR"
                                               : "IMMEDIATE",
                    (ull)(e + BIND_KIND), k, param_kind_name(child_kind));
    if (kind == KCTX_BIND_IMMEDIATE) {
        if (param != 0)
            return fail(v, KCTX_IMAGE_BAD_BINDING, e + BIND_PARAM,
                        "task %u binding %u: an immediate's param field at 0x%llx is %u, not 0", t,
                        k, (ull)(e + BIND_PARAM), param);
        return KCTX_IMAGE_OK;
    }
    if (param >= v->n[SEC_PARAMS])
        return fail(v, KCTX_IMAGE_BAD_BINDING, e + BIND_PARAM,
                    "task %u binding %u: parameter index at 0x%llx is %u; the callable has %u "
                    "parameters",
                    t, k, (ull)(e + BIND_PARAM), param, v->n[SEC_PARAMS]);
    uint32_t pkind = img_u8(&v->r, entry_pos(v, SEC_PARAMS, param) + PARAM_KIND);
    if (kind == KCTX_BIND_TENSOR && !is_callable_tensor(pkind))
        return fail(v, KCTX_IMAGE_BAD_BINDING, e + BIND_PARAM,
                    "task %u binding %u: TENSOR binding (param at 0x%llx) names parameter %u, "
                    "which is %s",
                    t, k, (ull)(e + BIND_PARAM), param, param_kind_name(pkind));
    if (kind == KCTX_BIND_SCALAR) {
        if (pkind != KCTX_PARAM_SCALAR)
            return fail(v, KCTX_IMAGE_BAD_BINDING, e + BIND_PARAM,
                        "task %u binding %u: SCALAR binding (param at 0x%llx) names parameter "
                        "%u, which is %s",
                        t, k, (ull)(e + BIND_PARAM), param, param_kind_name(pkind));
        if (value != 0)
            return fail(v, KCTX_IMAGE_BAD_BINDING, e + BIND_VALUE,
                        "task %u binding %u: a SCALAR binding's value at 0x%llx is %llu, not 0", t,
                        k, (ull)(e + BIND_VALUE), (ull)value);
    }
    return KCTX_IMAGE_OK;
}

static kctx_image_reason check_deps(vstate *v, uint32_t t, uint32_t first, uint32_t count) {
    kctx_image_reason r = KCTX_IMAGE_OK;
    uint32_t k = 0;
    for (; k < count; k++) {
        uint64_t pos = entry_pos(v, SEC_DEPS, (uint64_t)first + k);
        uint32_t dep = img_u32(&v->r, pos);
        if (dep >= t) {
            r = fail(v, KCTX_IMAGE_BAD_DEPENDENCY, pos,
                     "task %u dependency %u (at 0x%llx): task %u is not an earlier task", t, k,
                     (ull)pos, dep);
            break;
        }
        uint64_t bit = 1ull << (dep % 64);
        if (v->dep_seen[dep / 64] & bit) {
            r = fail(v, KCTX_IMAGE_BAD_DEPENDENCY, pos,
                     "task %u dependency %u (at 0x%llx): task %u is listed twice", t, k, (ull)pos,
                     dep);
            break;
        }
        v->dep_seen[dep / 64] |= bit;
    }
    /* Clear what this task set: O(deps), never O(tasks). */
    for (uint32_t j = 0; j < k; j++)
        v->dep_seen[img_u32(&v->r, entry_pos(v, SEC_DEPS, (uint64_t)first + j)) / 64] = 0;
    return r;
}

static kctx_image_reason check_tasks(vstate *v) {
    kctx_image_reason r;
    memset(v->dep_seen, 0, sizeof v->dep_seen);
    for (uint32_t t = 0; t < v->n[SEC_TASKS]; t++) {
        uint64_t e = entry_pos(v, SEC_TASKS, t);
        uint32_t id = img_u32(&v->r, e + TASK_FUNC_ID);
        if (id >= v->n[SEC_CHILDREN])
            return fail(v, KCTX_IMAGE_UNKNOWN_FUNC, e + TASK_FUNC_ID,
                        "task %u: func_id at 0x%llx is %u, not below the child count %u", t,
                        (ull)(e + TASK_FUNC_ID), id, v->n[SEC_CHILDREN]);
        uint32_t block_dim = img_u32(&v->r, e + TASK_BLOCK_DIM);
        if (block_dim == 0 || block_dim > KCTX_IMAGE_MAX_BLOCK_DIM)
            return fail(v, KCTX_IMAGE_BAD_BLOCK_DIM, e + TASK_BLOCK_DIM,
                        "task %u: block_dim at 0x%llx is %u, not in 1..%u", t,
                        (ull)(e + TASK_BLOCK_DIM), block_dim, KCTX_IMAGE_MAX_BLOCK_DIM);
        uint64_t ce = entry_pos(v, SEC_CHILDREN, v->child_of_func[id]);
        uint32_t child_params = img_u16(&v->r, ce + CHILD_PARAM_COUNT);
        uint32_t first_child_param = img_u32(&v->r, ce + CHILD_FIRST_PARAM);
        uint32_t bc = img_u32(&v->r, e + TASK_BINDING_COUNT);
        if (bc != child_params)
            return fail(v, KCTX_IMAGE_BAD_BINDING, e + TASK_BINDING_COUNT,
                        "task %u: binding_count at 0x%llx is %u but function %u takes %u "
                        "parameters",
                        t, (ull)(e + TASK_BINDING_COUNT), bc, id, child_params);
        uint32_t first_binding = img_u32(&v->r, e + TASK_FIRST_BINDING);
        for (uint32_t k = 0; k < bc; k++) {
            uint64_t be = entry_pos(v, SEC_BINDINGS, (uint64_t)first_binding + k);
            uint32_t child_kind =
                img_u8(&v->r, entry_pos(v, SEC_CHILD_PARAMS, (uint64_t)first_child_param + k) +
                                  PARAM_KIND);
            if ((r = check_binding(v, t, k, be, child_kind)) != KCTX_IMAGE_OK) return r;
        }
        if ((r = check_deps(v, t, img_u32(&v->r, e + TASK_FIRST_DEP),
                            img_u32(&v->r, e + TASK_DEP_COUNT))) != KCTX_IMAGE_OK)
            return r;
    }
    return KCTX_IMAGE_OK;
}

/* ---- class 10: checksum -------------------------------------------------- */

static kctx_image_reason check_checksum(vstate *v) {
    uint32_t stored = img_u32(&v->r, HDR_CHECKSUM);
    const uint8_t *p = img_span(&v->r, KCTX_IMAGE_HEADER_SIZE, v->size - KCTX_IMAGE_HEADER_SIZE);
    if (p == NULL) /* unreachable: class 1 checked size >= header */
        return fail(v, KCTX_IMAGE_TOO_SMALL, v->size, "image is smaller than its header");
    uint32_t actual = kctx_crc32c(p, v->size - KCTX_IMAGE_HEADER_SIZE);
    if (stored != actual)
        return fail(v, KCTX_IMAGE_CHECKSUM_MISMATCH, HDR_CHECKSUM,
                    "checksum at 0x18 is 0x%08x but the content's CRC32C is 0x%08x", stored,
                    actual);
    return KCTX_IMAGE_OK;
}

kctx_image_reason kctx_image_validate(const void *bytes, size_t size, kctx_image_error *err) {
    vstate v;
    v.err = err;
    v.minor = 0;
    v.needed_minor = 0;
    v.size = size;
    v.r = img_reader_make(bytes, size);
    kctx_image_reason r;
    if ((r = check_buffer(&v, bytes, size)) != KCTX_IMAGE_OK ||
        (r = check_identity(&v)) != KCTX_IMAGE_OK || (r = check_length(&v)) != KCTX_IMAGE_OK ||
        (r = check_limits(&v)) != KCTX_IMAGE_OK ||
        (r = check_section_offsets(&v)) != KCTX_IMAGE_OK ||
        (r = check_table_ranges(&v)) != KCTX_IMAGE_OK || (r = check_strings(&v)) != KCTX_IMAGE_OK ||
        (r = check_signature(&v)) != KCTX_IMAGE_OK || (r = check_children(&v)) != KCTX_IMAGE_OK ||
        (r = check_tasks(&v)) != KCTX_IMAGE_OK)
        return r;
    /* Defence in depth: a read the rules above did not bound means a bug in
     * this file; refuse rather than trust what it read (see reader.h). */
    if (v.r.broken)
        return fail(&v, KCTX_IMAGE_SECTION_RANGE, v.r.broken_at,
                    "internal: a field at 0x%llx was read outside the image", (ull)v.r.broken_at);
    if ((r = check_checksum(&v)) != KCTX_IMAGE_OK) return r;
    if (err != NULL) {
        err->reason = KCTX_IMAGE_OK;
        err->offset = 0;
        snprintf(err->message, sizeof err->message, "valid");
    }
    return KCTX_IMAGE_OK;
}
