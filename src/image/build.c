/*
 * build.c — the builder, the only writer of images.
 *
 * Content is collected in growable host arrays, in the order the calls
 * arrive; because child parameters and variants always extend the most
 * recent child (and bindings and dependencies the most recent task), every
 * range is consecutive by construction. finish() places everything where
 * layout.h's canonical layout says, writes it into one zeroed buffer (so
 * padding is zero and identical content gives identical bytes), seals the
 * checksum and runs the validator on the result: the builder emits nothing
 * the validator would refuse, and the validator is the single statement of
 * the rules.
 */
#include <kctx/image.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_internal.h"
#include "layout.h"
#include "reader.h"

typedef unsigned long long ull;

typedef struct vec {
    void *data;
    size_t len, cap;
} vec;

typedef struct bparam {
    char *name;
    uint32_t kind;
} bparam;

typedef struct bchild {
    char *name, *entry;
    size_t first_param, param_count;
    size_t first_variant, variant_count;
} bchild;

typedef struct bvariant {
    uint32_t kind;
    uint8_t *blob;
    size_t size;
} bvariant;

typedef struct btask {
    uint32_t func_id, block_dim;
    size_t first_binding, binding_count;
    size_t first_dep, dep_count;
} btask;

typedef struct bbinding {
    uint32_t kind, param;
    uint64_t value;
} bbinding;

struct kctx_image_builder {
    kctx_build_status status; /* sticky: the first failure */
    char message[200];
    char *name;
    vec params, children, child_params, variants, tasks, bindings, deps;
};

static bool vec_push(vec *v, size_t elem, const void *item) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        if (cap < v->cap || cap > SIZE_MAX / elem) return false;
        void *data = realloc(v->data, cap * elem);
        if (data == NULL) return false;
        v->data = data;
        v->cap = cap;
    }
    memcpy((uint8_t *)v->data + v->len * elem, item, elem);
    v->len++;
    return true;
}

#define VEC_AT(v, type, i) (((type *)(v).data)[i])

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c != NULL) memcpy(c, s, n);
    return c;
}

#if defined(__GNUC__)
#define IMG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define IMG_PRINTF(a, b)
#endif

/* Records the builder's first (sticky) failure. */
IMG_PRINTF(3, 4)
static kctx_build_status set_failure(kctx_image_builder *b, kctx_build_status status,
                                     const char *fmt, ...) {
    va_list ap;
    b->status = status;
    va_start(ap, fmt);
    vsnprintf(b->message, sizeof b->message, fmt, ap);
    va_end(ap);
    return status;
}

static kctx_build_status no_memory(kctx_image_builder *b) {
    return set_failure(b, KCTX_BUILD_NO_MEMORY, "out of memory");
}

kctx_image_builder *kctx_image_builder_new(const char *callable_name) {
    if (callable_name == NULL) return NULL;
    kctx_image_builder *b = calloc(1, sizeof *b);
    if (b == NULL) return NULL;
    b->name = copy_string(callable_name);
    if (b->name == NULL) {
        free(b);
        return NULL;
    }
    b->status = KCTX_BUILD_OK;
    return b;
}

void kctx_image_builder_free(kctx_image_builder *b) {
    if (b == NULL) return;
    for (size_t i = 0; i < b->params.len; i++) free(VEC_AT(b->params, bparam, i).name);
    for (size_t i = 0; i < b->child_params.len; i++) free(VEC_AT(b->child_params, bparam, i).name);
    for (size_t i = 0; i < b->children.len; i++) {
        free(VEC_AT(b->children, bchild, i).name);
        free(VEC_AT(b->children, bchild, i).entry);
    }
    for (size_t i = 0; i < b->variants.len; i++) free(VEC_AT(b->variants, bvariant, i).blob);
    vec *all[] = {&b->params, &b->children, &b->child_params, &b->variants,
                  &b->tasks,  &b->bindings, &b->deps};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->data);
    free(b->name);
    free(b);
}

static kctx_build_status push_param(kctx_image_builder *b, vec *table, const char *name,
                                    kctx_param_kind kind, const char *what) {
    if (name == NULL) return set_failure(b, KCTX_BUILD_INVALID, "%s name is NULL", what);
    if ((int)kind < 0 || (int)kind > 255)
        return set_failure(b, KCTX_BUILD_INVALID, "%s \"%s\": kind %d does not fit the format",
                           what, name, (int)kind);
    bparam p = {copy_string(name), (uint32_t)kind};
    if (p.name == NULL) return no_memory(b);
    if (!vec_push(table, sizeof p, &p)) {
        free(p.name);
        return no_memory(b);
    }
    return KCTX_BUILD_OK;
}

kctx_build_status kctx_image_builder_param(kctx_image_builder *b, const char *name,
                                           kctx_param_kind kind) {
    if (b == NULL) return KCTX_BUILD_INVALID;
    if (b->status != KCTX_BUILD_OK) return b->status;
    return push_param(b, &b->params, name, kind, "parameter");
}

kctx_build_status kctx_image_builder_child(kctx_image_builder *b, const char *name,
                                           const char *entry, uint32_t *func_id) {
    if (b == NULL) return KCTX_BUILD_INVALID;
    if (b->status != KCTX_BUILD_OK) return b->status;
    if (name == NULL || entry == NULL)
        return set_failure(b, KCTX_BUILD_INVALID, "child %zu: name or entry is NULL",
                           b->children.len);
    if (b->children.len >= UINT32_MAX)
        return set_failure(b, KCTX_BUILD_INVALID, "too many children");
    bchild c = {copy_string(name), copy_string(entry), b->child_params.len, 0, b->variants.len, 0};
    if (c.name == NULL || c.entry == NULL || !vec_push(&b->children, sizeof c, &c)) {
        free(c.name);
        free(c.entry);
        return no_memory(b);
    }
    if (func_id != NULL) *func_id = (uint32_t)(b->children.len - 1);
    return KCTX_BUILD_OK;
}

static bchild *last_child(kctx_image_builder *b) {
    return b->children.len ? &VEC_AT(b->children, bchild, b->children.len - 1) : NULL;
}

kctx_build_status kctx_image_builder_child_param(kctx_image_builder *b, const char *name,
                                                 kctx_param_kind kind) {
    if (b == NULL) return KCTX_BUILD_INVALID;
    if (b->status != KCTX_BUILD_OK) return b->status;
    bchild *c = last_child(b);
    if (c == NULL)
        return set_failure(b, KCTX_BUILD_INVALID, "child parameter \"%s\" before any child",
                           name ? name : "(null)");
    if (c->param_count >= UINT16_MAX)
        return set_failure(b, KCTX_BUILD_INVALID, "child \"%s\": too many parameters", c->name);
    kctx_build_status s = push_param(b, &b->child_params, name, kind, "child parameter");
    if (s == KCTX_BUILD_OK) c->param_count++;
    return s;
}

kctx_build_status kctx_image_builder_variant(kctx_image_builder *b, kctx_variant_kind kind,
                                             const void *blob, size_t blob_size) {
    if (b == NULL) return KCTX_BUILD_INVALID;
    if (b->status != KCTX_BUILD_OK) return b->status;
    bchild *c = last_child(b);
    if (c == NULL) return set_failure(b, KCTX_BUILD_INVALID, "variant before any child");
    if (blob == NULL && blob_size != 0)
        return set_failure(b, KCTX_BUILD_INVALID, "child \"%s\": variant blob is NULL", c->name);
    if (c->variant_count >= UINT16_MAX)
        return set_failure(b, KCTX_BUILD_INVALID, "child \"%s\": too many variants", c->name);
    bvariant var = {(uint32_t)kind, NULL, blob_size};
    if (blob_size != 0) {
        var.blob = malloc(blob_size);
        if (var.blob == NULL) return no_memory(b);
        memcpy(var.blob, blob, blob_size);
    }
    if (!vec_push(&b->variants, sizeof var, &var)) {
        free(var.blob);
        return no_memory(b);
    }
    c->variant_count++;
    return KCTX_BUILD_OK;
}

kctx_build_status kctx_image_builder_task(kctx_image_builder *b, uint32_t func_id,
                                          uint32_t block_dim, uint32_t *task) {
    if (b == NULL) return KCTX_BUILD_INVALID;
    if (b->status != KCTX_BUILD_OK) return b->status;
    if (b->tasks.len >= UINT32_MAX) return set_failure(b, KCTX_BUILD_INVALID, "too many tasks");
    btask t = {func_id, block_dim, b->bindings.len, 0, b->deps.len, 0};
    if (!vec_push(&b->tasks, sizeof t, &t)) return no_memory(b);
    if (task != NULL) *task = (uint32_t)(b->tasks.len - 1);
    return KCTX_BUILD_OK;
}

static btask *last_task(kctx_image_builder *b) {
    return b->tasks.len ? &VEC_AT(b->tasks, btask, b->tasks.len - 1) : NULL;
}

kctx_build_status kctx_image_builder_bind(kctx_image_builder *b, kctx_binding_kind kind,
                                          uint32_t param, uint64_t value) {
    if (b == NULL) return KCTX_BUILD_INVALID;
    if (b->status != KCTX_BUILD_OK) return b->status;
    btask *t = last_task(b);
    if (t == NULL) return set_failure(b, KCTX_BUILD_INVALID, "binding before any task");
    if ((int)kind < 0 || (int)kind > 255)
        return set_failure(b, KCTX_BUILD_INVALID,
                           "task %zu: binding kind %d does not fit the format", b->tasks.len - 1,
                           (int)kind);
    bbinding bd = {(uint32_t)kind, param, value};
    if (!vec_push(&b->bindings, sizeof bd, &bd)) return no_memory(b);
    t->binding_count++;
    return KCTX_BUILD_OK;
}

kctx_build_status kctx_image_builder_dep(kctx_image_builder *b, uint32_t earlier_task) {
    if (b == NULL) return KCTX_BUILD_INVALID;
    if (b->status != KCTX_BUILD_OK) return b->status;
    btask *t = last_task(b);
    if (t == NULL) return set_failure(b, KCTX_BUILD_INVALID, "dependency before any task");
    if (!vec_push(&b->deps, sizeof earlier_task, &earlier_task)) return no_memory(b);
    t->dep_count++;
    return KCTX_BUILD_OK;
}

/* ---- finish ------------------------------------------------------------- */

static bool add_u64(uint64_t *acc, uint64_t v) { return !__builtin_add_overflow(*acc, v, acc); }

/* Bytes of the string table: every string with its NUL, in reference order. */
static bool strtab_bytes(const kctx_image_builder *b, uint64_t *out) {
    uint64_t n = 0;
    bool ok = add_u64(&n, strlen(b->name) + 1);
    for (size_t i = 0; ok && i < b->params.len; i++)
        ok = add_u64(&n, strlen(VEC_AT(b->params, bparam, i).name) + 1);
    for (size_t i = 0; ok && i < b->children.len; i++) {
        const bchild *c = &VEC_AT(b->children, bchild, i);
        ok = add_u64(&n, strlen(c->name) + 1) && add_u64(&n, strlen(c->entry) + 1);
    }
    for (size_t i = 0; ok && i < b->child_params.len; i++)
        ok = add_u64(&n, strlen(VEC_AT(b->child_params, bparam, i).name) + 1);
    *out = n;
    return ok;
}

typedef struct strwriter {
    uint8_t *table; /* the string table in the output */
    uint32_t at;    /* next free byte, relative to the table */
} strwriter;

/* Appends s (with its NUL) and returns its reference. */
static uint32_t put_string(strwriter *w, const char *s) {
    size_t n = strlen(s) + 1;
    uint32_t ref = w->at;
    memcpy(w->table + ref, s, n);
    w->at += (uint32_t)n;
    return ref;
}

static void write_param(uint8_t *e, strwriter *w, const bparam *p) {
    img_put32(e + PARAM_NAME, put_string(w, p->name));
    e[PARAM_KIND] = (uint8_t)p->kind;
}

/* Writes the whole image into `img` (zeroed, `total` bytes). */
static void write_image(const kctx_image_builder *b, uint8_t *img, const uint32_t counts[SEC_COUNT],
                        const uint64_t offs[SEC_COUNT + 1], uint64_t total) {
    memcpy(img + HDR_MAGIC, KCTX_IMAGE_MAGIC, 8);
    img_put16(img + HDR_VERSION_MAJOR, KCTX_IMAGE_VERSION_MAJOR);
    /* The lowest minor the content needs (docs/image-format.md "Versions");
     * a kind no minor defines adds nothing (the validator refuses it). */
    uint32_t minor = 0;
    for (size_t i = 0; i < b->variants.len; i++) {
        uint32_t m = img_variant_kind_minor(VEC_AT(b->variants, bvariant, i).kind);
        if (m != UINT32_MAX && m > minor) minor = m;
    }
    img_put16(img + HDR_VERSION_MINOR, (uint16_t)minor);
    img_put32(img + HDR_HEADER_SIZE, KCTX_IMAGE_HEADER_SIZE);
    img_put64(img + HDR_TOTAL_SIZE, total);
    for (int i = 0; i < SEC_COUNT; i++) img_put32(img + hdr_count_pos(i), counts[i]);
    for (int i = 0; i <= SEC_COUNT; i++) img_put64(img + hdr_offset_pos(i), offs[i]);

#define ENTRY(sec, i) (img + offs[sec] + (uint64_t)(i)*kctx_sec_entry_size[sec])
    /* Strings go in reference order, which is the order below. */
    strwriter w = {img + offs[SEC_STRTAB], 0};
    img_put32(img + HDR_NAME, put_string(&w, b->name));
    for (size_t i = 0; i < b->params.len; i++)
        write_param(ENTRY(SEC_PARAMS, i), &w, &VEC_AT(b->params, bparam, i));
    uint64_t blob_at = offs[SEC_BLOBS];
    for (size_t i = 0; i < b->children.len; i++) {
        const bchild *c = &VEC_AT(b->children, bchild, i);
        uint8_t *e = ENTRY(SEC_CHILDREN, i);
        img_put32(e + CHILD_FUNC_ID, (uint32_t)i);
        img_put32(e + CHILD_NAME, put_string(&w, c->name));
        img_put32(e + CHILD_ENTRY, put_string(&w, c->entry));
        img_put32(e + CHILD_FIRST_PARAM, (uint32_t)c->first_param);
        img_put16(e + CHILD_PARAM_COUNT, (uint16_t)c->param_count);
        img_put16(e + CHILD_VARIANT_COUNT, (uint16_t)c->variant_count);
        img_put32(e + CHILD_FIRST_VARIANT, (uint32_t)c->first_variant);
        for (size_t k = 0; k < c->param_count; k++)
            write_param(ENTRY(SEC_CHILD_PARAMS, c->first_param + k), &w,
                        &VEC_AT(b->child_params, bparam, c->first_param + k));
        for (size_t k = 0; k < c->variant_count; k++) {
            const bvariant *var = &VEC_AT(b->variants, bvariant, c->first_variant + k);
            uint8_t *ve = ENTRY(SEC_VARIANTS, c->first_variant + k);
            blob_at =
                (blob_at + KCTX_IMAGE_BLOB_ALIGN - 1) & ~(uint64_t)(KCTX_IMAGE_BLOB_ALIGN - 1);
            img_put32(ve + VARIANT_KIND, var->kind);
            img_put64(ve + VARIANT_BLOB_OFF, blob_at);
            img_put64(ve + VARIANT_BLOB_SIZE, var->size);
            if (var->size != 0) memcpy(img + blob_at, var->blob, var->size);
            blob_at += var->size;
        }
    }
    for (size_t i = 0; i < b->tasks.len; i++) {
        const btask *t = &VEC_AT(b->tasks, btask, i);
        uint8_t *e = ENTRY(SEC_TASKS, i);
        img_put32(e + TASK_FUNC_ID, t->func_id);
        img_put32(e + TASK_BLOCK_DIM, t->block_dim);
        img_put32(e + TASK_FIRST_BINDING, (uint32_t)t->first_binding);
        img_put32(e + TASK_BINDING_COUNT, (uint32_t)t->binding_count);
        img_put32(e + TASK_FIRST_DEP, (uint32_t)t->first_dep);
        img_put32(e + TASK_DEP_COUNT, (uint32_t)t->dep_count);
    }
    for (size_t i = 0; i < b->bindings.len; i++) {
        const bbinding *bd = &VEC_AT(b->bindings, bbinding, i);
        uint8_t *e = ENTRY(SEC_BINDINGS, i);
        e[BIND_KIND] = (uint8_t)bd->kind;
        img_put32(e + BIND_PARAM, bd->param);
        img_put64(e + BIND_VALUE, bd->value);
    }
    for (size_t i = 0; i < b->deps.len; i++)
        img_put32(ENTRY(SEC_DEPS, i), VEC_AT(b->deps, uint32_t, i));
#undef ENTRY
    kctx_image_reseal(img, total);
}

static void copy_message(char *dst, size_t size, const char *src) {
    if (dst != NULL && size != 0) snprintf(dst, size, "%s", src);
}

static kctx_build_status finish(kctx_image_builder *b, void **out, size_t *out_size, char *message,
                                size_t message_size, bool validate) {
    if (out != NULL) *out = NULL;
    if (out_size != NULL) *out_size = 0;
    if (b == NULL || out == NULL || out_size == NULL) {
        copy_message(message, message_size, "builder, out or out_size is NULL");
        return KCTX_BUILD_INVALID;
    }
    if (b->status != KCTX_BUILD_OK) {
        copy_message(message, message_size, b->message);
        return b->status;
    }
    kctx_build_status s = KCTX_BUILD_OK;
    /* Everything must be representable before it is placed; the rules
     * proper (limits included) are the validator's to apply below. */
    const size_t lens[SEC_COUNT - 1] = {b->params.len,   b->children.len, b->child_params.len,
                                        b->variants.len, b->tasks.len,    b->bindings.len,
                                        b->deps.len};
    uint32_t counts[SEC_COUNT];
    uint64_t strtab = 0;
    for (int i = 0; i < SEC_COUNT - 1; i++) {
        if (lens[i] > kctx_sec_limit[i]) {
            s = set_failure(b, KCTX_BUILD_INVALID,
                            "KCTX_IMAGE_LIMIT_EXCEEDED: %s would be %zu, above the limit of %llu",
                            kctx_count_field_name[i], lens[i], (ull)kctx_sec_limit[i]);
            goto failed;
        }
        counts[i] = (uint32_t)lens[i];
    }
    if (!strtab_bytes(b, &strtab) || strtab > UINT32_MAX) {
        s = set_failure(b, KCTX_BUILD_INVALID, "the names need more than 4 GiB");
        goto failed;
    }
    counts[SEC_STRTAB] = (uint32_t)strtab;
    uint64_t offs[SEC_COUNT + 1], strtab_end, total;
    if (!kctx_image_canonical_layout(counts, offs, &strtab_end)) {
        s = set_failure(b, KCTX_BUILD_INVALID, "section sizes overflow");
        goto failed;
    }
    total = offs[SEC_BLOBS];
    for (size_t i = 0; i < b->variants.len; i++) {
        uint64_t at;
        if (!img_align_up(total, KCTX_IMAGE_BLOB_ALIGN, &at) ||
            !add_u64(&at, VEC_AT(b->variants, bvariant, i).size) || at > KCTX_IMAGE_MAX_SIZE) {
            s = set_failure(b, KCTX_BUILD_INVALID, "the image would be larger than %llu bytes",
                            (ull)KCTX_IMAGE_MAX_SIZE);
            goto failed;
        }
        total = at;
    }
    if (b->variants.len == 0) total = strtab_end;
    if (total > SIZE_MAX) {
        s = no_memory(b);
        goto failed;
    }

    void *img = NULL;
    /* 64-byte aligned: blobs are then 64-byte aligned in memory too. */
    if (posix_memalign(&img, KCTX_IMAGE_BLOB_ALIGN, (size_t)total) != 0) {
        s = no_memory(b);
        goto failed;
    }
    memset(img, 0, (size_t)total);
    write_image(b, img, counts, offs, total);

    kctx_image_error err;
    kctx_image_reason r = validate ? kctx_image_validate(img, (size_t)total, &err) : KCTX_IMAGE_OK;
    if (r != KCTX_IMAGE_OK) {
        free(img);
        s = set_failure(b, KCTX_BUILD_INVALID, "%s: %s", kctx_image_reason_name(r), err.message);
        goto failed;
    }
    *out = img;
    *out_size = (size_t)total;
    copy_message(message, message_size, "ok");
    return KCTX_BUILD_OK;

failed:
    copy_message(message, message_size, b->message);
    return s;
}

kctx_build_status kctx_image_builder_finish(kctx_image_builder *b, void **out, size_t *out_size,
                                            char *message, size_t message_size) {
    return finish(b, out, out_size, message, message_size, true);
}

kctx_build_status kctx_image_builder_finish_unvalidated(kctx_image_builder *b, void **out,
                                                        size_t *out_size, char *message,
                                                        size_t message_size) {
    return finish(b, out, out_size, message, message_size, false);
}

int kctx_image_reseal(void *bytes, size_t size) {
    if (bytes == NULL || size < HDR_CHECKSUM + 4u) return -1;
    img_reader r = img_reader_make(bytes, size);
    uint32_t header_size = img_u32(&r, HDR_HEADER_SIZE);
    uint64_t total = img_u64(&r, HDR_TOTAL_SIZE);
    if (header_size < HDR_CHECKSUM + 4u || header_size > total || total > size) return -1;
    uint8_t *p = bytes;
    img_put32(p + HDR_CHECKSUM, kctx_crc32c(p + header_size, (size_t)(total - header_size)));
    return 0;
}
