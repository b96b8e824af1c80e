/*
 * view.c — read-only access to a validated image.
 *
 * kctx_image_view_open is the only way to get a view, and it validates
 * first, so every accessor decodes bytes that passed every rule: ranges are
 * consecutive and in bounds, strings are terminated, kinds are known. The
 * accessors still go through the bounded reader and bounds-check the
 * caller's indices (an index past a count gives a zeroed result), so a
 * wrong index is a wrong answer, never a wild read.
 */
#include <kctx/image.h>

#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "reader.h"

static bool view_ok(const kctx_image_view *v) { return v != NULL && v->base != NULL; }

static img_reader view_reader(const kctx_image_view *v) {
    return img_reader_make(v->base, v->total_size);
}

static uint64_t vpos(const kctx_image_view *v, int sec, uint64_t index) {
    return v->offs[sec] + index * kctx_sec_entry_size[sec];
}

static const char *vstring(const kctx_image_view *v, img_reader *r, uint64_t ref_pos) {
    uint32_t ref = img_u32(r, ref_pos);
    if (ref >= v->counts[SEC_STRTAB]) return NULL;
    return (const char *)v->base + v->offs[SEC_STRTAB] + ref;
}

kctx_image_reason kctx_image_view_open(kctx_image_view *view, const void *bytes, size_t size,
                                       kctx_image_error *err) {
    if (view == NULL) {
        if (err != NULL) {
            err->reason = KCTX_IMAGE_NULL_IMAGE;
            err->offset = 0;
            snprintf(err->message, sizeof err->message, "view pointer is NULL");
        }
        return KCTX_IMAGE_NULL_IMAGE;
    }
    memset(view, 0, sizeof *view);
    view->size = sizeof *view;
    kctx_image_reason r = kctx_image_validate(bytes, size, err);
    if (r != KCTX_IMAGE_OK) return r;
    img_reader rd = img_reader_make(bytes, size);
    for (int i = 0; i < SEC_COUNT; i++) view->counts[i] = img_u32(&rd, hdr_count_pos(i));
    for (int i = 0; i <= SEC_COUNT; i++) view->offs[i] = img_u64(&rd, hdr_offset_pos(i));
    view->total_size = size;
    view->base = bytes;
    return KCTX_IMAGE_OK;
}

const char *kctx_image_name(const kctx_image_view *v) {
    if (!view_ok(v)) return NULL;
    img_reader r = view_reader(v);
    return vstring(v, &r, HDR_NAME);
}

uint32_t kctx_image_param_count(const kctx_image_view *v) {
    return view_ok(v) ? v->counts[SEC_PARAMS] : 0;
}

static kctx_image_param read_param(const kctx_image_view *v, int sec, uint64_t index) {
    kctx_image_param p = {NULL, (kctx_param_kind)0};
    img_reader r = view_reader(v);
    uint64_t e = vpos(v, sec, index);
    p.name = vstring(v, &r, e + PARAM_NAME);
    p.kind = (kctx_param_kind)img_u8(&r, e + PARAM_KIND);
    return p;
}

kctx_image_param kctx_image_param_at(const kctx_image_view *v, uint32_t i) {
    kctx_image_param none = {NULL, (kctx_param_kind)0};
    if (!view_ok(v) || i >= v->counts[SEC_PARAMS]) return none;
    return read_param(v, SEC_PARAMS, i);
}

uint32_t kctx_image_child_count(const kctx_image_view *v) {
    return view_ok(v) ? v->counts[SEC_CHILDREN] : 0;
}

kctx_image_child kctx_image_child_at(const kctx_image_view *v, uint32_t i) {
    kctx_image_child c;
    memset(&c, 0, sizeof c);
    if (!view_ok(v) || i >= v->counts[SEC_CHILDREN]) {
        c.index = UINT32_MAX;
        return c;
    }
    img_reader r = view_reader(v);
    uint64_t e = vpos(v, SEC_CHILDREN, i);
    c.func_id = img_u32(&r, e + CHILD_FUNC_ID);
    c.name = vstring(v, &r, e + CHILD_NAME);
    c.entry = vstring(v, &r, e + CHILD_ENTRY);
    c.param_count = img_u16(&r, e + CHILD_PARAM_COUNT);
    c.variant_count = img_u16(&r, e + CHILD_VARIANT_COUNT);
    c.index = i;
    return c;
}

kctx_image_child kctx_image_child_by_id(const kctx_image_view *v, uint32_t func_id) {
    /* Linear in the children (at most MAX_CHILDREN); the view keeps no map
     * so that it stays a plain value. */
    uint32_t n = kctx_image_child_count(v);
    if (n == 0) return kctx_image_child_at(NULL, 0);
    img_reader r = view_reader(v);
    for (uint32_t i = 0; i < n; i++)
        if (img_u32(&r, vpos(v, SEC_CHILDREN, i) + CHILD_FUNC_ID) == func_id)
            return kctx_image_child_at(v, i);
    return kctx_image_child_at(NULL, 0);
}

/* first_x and x_count of child `child`'s range in table `table`. */
static bool child_range(const kctx_image_view *v, uint32_t child, int table, uint32_t *first,
                        uint32_t *count) {
    if (!view_ok(v) || child >= v->counts[SEC_CHILDREN]) return false;
    img_reader r = view_reader(v);
    uint64_t e = vpos(v, SEC_CHILDREN, child);
    if (table == SEC_CHILD_PARAMS) {
        *first = img_u32(&r, e + CHILD_FIRST_PARAM);
        *count = img_u16(&r, e + CHILD_PARAM_COUNT);
    } else {
        *first = img_u32(&r, e + CHILD_FIRST_VARIANT);
        *count = img_u16(&r, e + CHILD_VARIANT_COUNT);
    }
    return true;
}

kctx_image_param kctx_image_child_param_at(const kctx_image_view *v, uint32_t child, uint32_t i) {
    kctx_image_param none = {NULL, (kctx_param_kind)0};
    uint32_t first, count;
    if (!child_range(v, child, SEC_CHILD_PARAMS, &first, &count) || i >= count) return none;
    return read_param(v, SEC_CHILD_PARAMS, (uint64_t)first + i);
}

kctx_image_variant kctx_image_variant_at(const kctx_image_view *v, uint32_t child, uint32_t i) {
    kctx_image_variant out;
    memset(&out, 0, sizeof out);
    uint32_t first, count;
    if (!child_range(v, child, SEC_VARIANTS, &first, &count) || i >= count) return out;
    img_reader r = view_reader(v);
    uint64_t e = vpos(v, SEC_VARIANTS, (uint64_t)first + i);
    out.kind = (kctx_variant_kind)img_u32(&r, e + VARIANT_KIND);
    out.blob_offset = img_u64(&r, e + VARIANT_BLOB_OFF);
    out.blob_size = img_u64(&r, e + VARIANT_BLOB_SIZE);
    out.blob = img_span(&r, out.blob_offset, out.blob_size);
    return out;
}

int kctx_image_find_variant(const kctx_image_view *v, uint32_t child, kctx_variant_kind kind,
                            kctx_image_variant *out) {
    uint32_t first, count;
    if (!child_range(v, child, SEC_VARIANTS, &first, &count)) return -1;
    for (uint32_t i = 0; i < count; i++) {
        kctx_image_variant var = kctx_image_variant_at(v, child, i);
        if (var.kind == kind) {
            if (out != NULL) *out = var;
            return 0;
        }
    }
    return -1;
}

uint32_t kctx_image_task_count(const kctx_image_view *v) {
    return view_ok(v) ? v->counts[SEC_TASKS] : 0;
}

kctx_image_task kctx_image_task_at(const kctx_image_view *v, uint32_t t) {
    kctx_image_task out;
    memset(&out, 0, sizeof out);
    if (!view_ok(v) || t >= v->counts[SEC_TASKS]) return out;
    img_reader r = view_reader(v);
    uint64_t e = vpos(v, SEC_TASKS, t);
    out.func_id = img_u32(&r, e + TASK_FUNC_ID);
    out.block_dim = img_u32(&r, e + TASK_BLOCK_DIM);
    out.binding_count = img_u32(&r, e + TASK_BINDING_COUNT);
    out.dep_count = img_u32(&r, e + TASK_DEP_COUNT);
    return out;
}

/* first_x and x_count of task t's bindings or dependencies. */
static bool task_range(const kctx_image_view *v, uint32_t t, int table, uint32_t *first,
                       uint32_t *count) {
    if (!view_ok(v) || t >= v->counts[SEC_TASKS]) return false;
    img_reader r = view_reader(v);
    uint64_t e = vpos(v, SEC_TASKS, t);
    bool bindings = table == SEC_BINDINGS;
    *first = img_u32(&r, e + (bindings ? TASK_FIRST_BINDING : TASK_FIRST_DEP));
    *count = img_u32(&r, e + (bindings ? TASK_BINDING_COUNT : TASK_DEP_COUNT));
    return true;
}

kctx_image_binding kctx_image_binding_at(const kctx_image_view *v, uint32_t t, uint32_t i) {
    kctx_image_binding out;
    memset(&out, 0, sizeof out);
    uint32_t first, count;
    if (!task_range(v, t, SEC_BINDINGS, &first, &count) || i >= count) return out;
    img_reader r = view_reader(v);
    uint64_t e = vpos(v, SEC_BINDINGS, (uint64_t)first + i);
    out.kind = (kctx_binding_kind)img_u8(&r, e + BIND_KIND);
    out.param = img_u32(&r, e + BIND_PARAM);
    out.value = img_u64(&r, e + BIND_VALUE);
    return out;
}

uint32_t kctx_image_dep_at(const kctx_image_view *v, uint32_t t, uint32_t i) {
    uint32_t first, count;
    if (!task_range(v, t, SEC_DEPS, &first, &count) || i >= count) return UINT32_MAX;
    img_reader r = view_reader(v);
    return img_u32(&r, vpos(v, SEC_DEPS, (uint64_t)first + i));
}
