/*
 * manifest.c — load a callable manifest (YAML, parsed with libyaml's
 * document API) into the resolved model of manifest.h.
 *
 * The walk is schema-driven: each mapping is read through a field table
 * (read_fields) that rejects unknown and duplicate keys and reports missing
 * required ones, and each value through a typed getter. The first error
 * stops the load; its message carries the YAML node's line and column.
 */
#include "manifest.h"
#include "util.h"

#include "kctx_gen_binary_kinds.h"

#include <yaml.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct loader {
    const char *path;
    yaml_document_t *doc;
    char *err;
    size_t err_size;
} loader;

typedef struct kind_name {
    const char *name;
    int value;
} kind_name;

static const kind_name callable_param_kinds[] = {{"tensor_in", KCTX_PARAM_TENSOR_IN},
                                                 {"tensor_out", KCTX_PARAM_TENSOR_OUT},
                                                 {"tensor_inout", KCTX_PARAM_TENSOR_INOUT},
                                                 {"scalar", KCTX_PARAM_SCALAR},
                                                 {NULL, 0}};
static const kind_name child_param_kinds[] = {
    {"tensor", KCTX_PARAM_TENSOR}, {"scalar", KCTX_PARAM_SCALAR}, {NULL, 0}};
/* The variant kinds' manifest names are their declared names (the
 * platforms' BINARY_KINDS, cmake/BinaryKinds.cmake). */
#define MANIFEST_VARIANT_KIND(name, NAME, number, minor) {#name, KCTX_VARIANT_##NAME},
static const kind_name variant_kinds[] = {KCTX_GEN_BINARY_KINDS(MANIFEST_VARIANT_KIND){NULL, 0}};
#undef MANIFEST_VARIANT_KIND

static const char *kind_to_name(const kind_name *table, int value) {
    for (const kind_name *k = table; k->name != NULL; k++)
        if (k->value == value) return k->name;
    return "unknown";
}

const char *manifest_param_kind_name(kctx_param_kind kind) {
    if (kind == KCTX_PARAM_TENSOR) return "tensor";
    return kind_to_name(callable_param_kinds, (int)kind);
}

const char *manifest_variant_kind_name(kctx_variant_kind kind) {
    return kind_to_name(variant_kinds, (int)kind);
}

const char *manifest_binding_kind_name(kctx_binding_kind kind) {
    switch (kind) {
    case KCTX_BIND_TENSOR:
        return "tensor";
    case KCTX_BIND_SCALAR:
        return "scalar";
    case KCTX_BIND_IMMEDIATE:
        return "immediate";
    }
    return "unknown";
}

/* ---- errors ---------------------------------------------------------- */

static mf_mark to_mark(yaml_mark_t m) {
    mf_mark r = {(unsigned)m.line + 1, (unsigned)m.column + 1};
    return r;
}

__attribute__((format(printf, 3, 4))) static int fail(loader *L, const yaml_node_t *at,
                                                      const char *fmt, ...) {
    mf_mark m = at ? to_mark(at->start_mark) : (mf_mark){1, 1};
    int n = snprintf(L->err, L->err_size, "%s:%u:%u: error: ", L->path, m.line, m.column);
    if (n >= 0 && (size_t)n < L->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->err + n, L->err_size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int out_of_memory(loader *L, const yaml_node_t *at) { return fail(L, at, "out of memory"); }

static void *alloc_array(size_t count, size_t size) { return calloc(count ? count : 1, size); }

/* ---- typed access to nodes ------------------------------------------- */

static yaml_node_t *node(loader *L, yaml_node_item_t id) {
    return yaml_document_get_node(L->doc, id);
}

static const char *node_type_name(const yaml_node_t *n) {
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "empty";
    }
}

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

static int is_null(const yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE) return 0;
    if (n->tag != NULL && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0) return 1;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *v = scalar(n);
    return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* A non-empty string of at most `max_len` bytes without NUL bytes. */
static int get_string(loader *L, const yaml_node_t *n, const char *what, size_t max_len,
                      const char **out) {
    if (is_null(n)) return fail(L, n, "%s has no value", what);
    if (n->type != YAML_SCALAR_NODE)
        return fail(L, n, "%s must be a string, not %s", what, node_type_name(n));
    size_t len = n->data.scalar.length;
    if (len == 0) return fail(L, n, "%s must not be empty", what);
    if (strlen(scalar(n)) != len) return fail(L, n, "%s contains a NUL byte", what);
    if (len > max_len)
        return fail(L, n, "%s is %zu bytes long; the limit is %zu", what, len, max_len);
    *out = scalar(n);
    return 0;
}

static int get_name(loader *L, const yaml_node_t *n, const char *what, const char **out) {
    return get_string(L, n, what, KCTX_IMAGE_MAX_NAME, out);
}

/* A non-negative integer: decimal without leading zeros, or 0x hex. */
static int get_u64(loader *L, const yaml_node_t *n, const char *what, uint64_t *out) {
    if (is_null(n)) return fail(L, n, "%s has no value", what);
    if (n->type != YAML_SCALAR_NODE)
        return fail(L, n, "%s must be an integer, not %s", what, node_type_name(n));
    const char *s = scalar(n);
    unsigned base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    } else if (s[0] == '0' && s[1] != '\0') {
        return fail(L, n, "%s '%s': leading zeros are ambiguous (write decimal or 0x hex)", what,
                    scalar(n));
    }
    if (*s == '\0') goto bad;
    uint64_t v = 0;
    for (; *s != '\0'; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (base == 16 && *s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            goto bad;
        if (v > (UINT64_MAX - d) / base)
            return fail(L, n, "%s '%s' does not fit in 64 bits", what, scalar(n));
        v = v * base + d;
    }
    *out = v;
    return 0;
bad:
    return fail(L, n, "%s must be a non-negative integer (decimal or 0x hex), not '%s'", what,
                scalar(n));
}

/* A finite number, stored as its IEEE-754 binary32 bit pattern. */
static int get_f32_bits(loader *L, const yaml_node_t *n, const char *what, uint64_t *out) {
    if (is_null(n)) return fail(L, n, "%s has no value", what);
    if (n->type != YAML_SCALAR_NODE)
        return fail(L, n, "%s must be a number, not %s", what, node_type_name(n));
    const char *s = scalar(n);
    char *end = NULL;
    errno = 0;
    float f = strtof(s, &end);
    if (s[0] == '\0' || end == NULL || *end != '\0' || !isfinite(f) || errno == ERANGE)
        return fail(L, n, "%s must be a finite 32-bit float, not '%s'", what, s);
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    *out = bits;
    return 0;
}

static int get_kind(loader *L, const yaml_node_t *n, const char *what, const kind_name *table,
                    int *out) {
    const char *s;
    if (get_string(L, n, what, 64, &s) != 0) return -1;
    for (const kind_name *k = table; k->name != NULL; k++) {
        if (strcmp(k->name, s) == 0) {
            *out = k->value;
            return 0;
        }
    }
    char expected[160] = "";
    size_t used = 0;
    for (const kind_name *k = table; k->name != NULL; k++) {
        int w =
            snprintf(expected + used, sizeof expected - used, "%s%s", used ? ", " : "", k->name);
        if (w < 0 || (size_t)w >= sizeof expected - used) break;
        used += (size_t)w;
    }
    return fail(L, n, "unknown %s '%s' (expected one of: %s)", what, s, expected);
}

/* A list (or, when `optional`, a null meaning the empty list). */
static int get_list(loader *L, const yaml_node_t *n, const char *what, int optional,
                    yaml_node_item_t **items, uint32_t *count) {
    *items = NULL; /* set on every path (gcc cannot tell fail() returns -1) */
    *count = 0;
    if (optional && is_null(n)) return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(L, n, "%s must be a list, not %s", what, node_type_name(n));
    ptrdiff_t len = n->data.sequence.items.top - n->data.sequence.items.start;
    if (len < 0 || len > (ptrdiff_t)UINT32_MAX) return fail(L, n, "%s is too long", what);
    *items = n->data.sequence.items.start;
    *count = (uint32_t)len;
    return 0;
}

/* ---- mappings through field tables ----------------------------------- */

typedef struct field {
    const char *key;
    int required;
    yaml_node_t *value; /* out: NULL when absent */
} field;

static int read_fields(loader *L, const yaml_node_t *map, const char *what, field *fields,
                       size_t nfields) {
    for (size_t i = 0; i < nfields; i++) fields[i].value = NULL;
    if (map->type != YAML_MAPPING_NODE)
        return fail(L, map, "%s must be a mapping, not %s", what, node_type_name(map));
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node(L, p->key), *v = node(L, p->value);
        if (k == NULL || v == NULL) return fail(L, map, "%s: malformed mapping", what);
        if (k->type != YAML_SCALAR_NODE)
            return fail(L, k, "%s: keys must be strings, not %s", what, node_type_name(k));
        size_t i = 0;
        while (i < nfields && strcmp(fields[i].key, scalar(k)) != 0) i++;
        if (i == nfields) {
            char expected[160] = "";
            size_t used = 0;
            for (size_t j = 0; j < nfields; j++) {
                int w = snprintf(expected + used, sizeof expected - used, "%s%s", used ? ", " : "",
                                 fields[j].key);
                if (w < 0 || (size_t)w >= sizeof expected - used) break;
                used += (size_t)w;
            }
            return fail(L, k, "unknown key '%s' in %s (expected: %s)", scalar(k), what, expected);
        }
        if (fields[i].value != NULL)
            return fail(L, k, "duplicate key '%s' in %s (first given at line %u)", scalar(k), what,
                        to_mark(fields[i].value->start_mark).line);
        fields[i].value = v;
    }
    for (size_t i = 0; i < nfields; i++)
        if (fields[i].required && fields[i].value == NULL)
            return fail(L, map, "%s is missing the required key '%s'", what, fields[i].key);
    return 0;
}

/* ---- parameters ------------------------------------------------------ */

/* `where` is "params" or "children[3].params"; `callable` selects the
 * callable's kinds (and the tensors-before-scalars rule) or a child's. */
static int load_params(loader *L, const yaml_node_t *list, const char *where, int callable,
                       mf_param **out, uint32_t *out_count) {
    yaml_node_item_t *items;
    uint32_t count;
    char what[128];
    if (get_list(L, list, where, 1, &items, &count) != 0) return -1;
    uint32_t limit = callable ? KCTX_IMAGE_MAX_PARAMS : KCTX_IMAGE_MAX_CHILD_PARAMS;
    if (count > limit)
        return fail(L, list, "%s has %u parameters; the limit is %u", where, count, limit);
    mf_param *params = alloc_array(count, sizeof *params);
    if (params == NULL) return out_of_memory(L, list);
    *out = params;
    *out_count = count;

    const mf_param *last_scalar = NULL;
    for (uint32_t i = 0; i < count; i++) {
        yaml_node_t *item = node(L, items[i]);
        field f[] = {{"name", 1, NULL}, {"kind", 1, NULL}};
        snprintf(what, sizeof what, "%s[%u]", where, i);
        if (read_fields(L, item, what, f, 2) != 0) return -1;
        mf_param *p = &params[i];
        int kind;
        snprintf(what, sizeof what, "%s[%u].name", where, i);
        if (get_name(L, f[0].value, what, &p->name) != 0) return -1;
        if (get_kind(L, f[1].value, "parameter kind",
                     callable ? callable_param_kinds : child_param_kinds, &kind) != 0)
            return -1;
        p->kind = (kctx_param_kind)kind;
        p->mark = to_mark(item->start_mark);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(params[j].name, p->name) == 0)
                return fail(L, f[0].value, "duplicate parameter name '%s' in %s (first at line %u)",
                            p->name, where, params[j].mark.line);
        if (p->kind == KCTX_PARAM_SCALAR) {
            last_scalar = p;
        } else if (callable && last_scalar != NULL) {
            return fail(L, item,
                        "tensor parameter '%s' follows scalar parameter '%s' (all tensors must "
                        "come before all scalars)",
                        p->name, last_scalar->name);
        }
    }
    return 0;
}

static int find_param(const mf_param *params, uint32_t count, const char *name) {
    for (uint32_t i = 0; i < count; i++)
        if (strcmp(params[i].name, name) == 0) return (int)i;
    return -1;
}

static int is_tensor(kctx_param_kind k) { return k != KCTX_PARAM_SCALAR; }

/* ---- children -------------------------------------------------------- */

static int load_variants(loader *L, const yaml_node_t *list, uint32_t ci, mf_child *c) {
    yaml_node_item_t *items;
    uint32_t count;
    char what[128];
    snprintf(what, sizeof what, "children[%u].variants", ci);
    if (get_list(L, list, what, 0, &items, &count) != 0) return -1;
    if (count == 0)
        return fail(L, list, "child '%s' has no variants (it needs at least one)", c->name);
    if (count > KCTX_IMAGE_MAX_VARIANTS)
        return fail(L, list, "child '%s' has %u variants; the limit is %u", c->name, count,
                    KCTX_IMAGE_MAX_VARIANTS);
    c->variants = alloc_array(count, sizeof *c->variants);
    if (c->variants == NULL) return out_of_memory(L, list);
    c->variant_count = count;
    for (uint32_t i = 0; i < count; i++) {
        yaml_node_t *item = node(L, items[i]);
        field f[] = {{"kind", 1, NULL}, {"file", 1, NULL}};
        mf_variant *v = &c->variants[i];
        int kind;
        snprintf(what, sizeof what, "children[%u].variants[%u]", ci, i);
        if (read_fields(L, item, what, f, 2) != 0) return -1;
        if (get_kind(L, f[0].value, "variant kind", variant_kinds, &kind) != 0) return -1;
        v->kind = (kctx_variant_kind)kind;
        snprintf(what, sizeof what, "children[%u].variants[%u].file", ci, i);
        if (get_string(L, f[1].value, what, 4096, &v->file) != 0) return -1;
        v->mark = to_mark(f[1].value->start_mark);
    }
    return 0;
}

static int load_children(loader *L, const yaml_node_t *list, manifest *m) {
    yaml_node_item_t *items;
    uint32_t count;
    char what[128];
    if (get_list(L, list, "children", 0, &items, &count) != 0) return -1;
    if (count == 0) return fail(L, list, "'children' is empty (a callable needs at least one)");
    if (count > KCTX_IMAGE_MAX_CHILDREN)
        return fail(L, list, "%u children; the limit is %u", count, KCTX_IMAGE_MAX_CHILDREN);
    m->children = alloc_array(count, sizeof *m->children);
    if (m->children == NULL) return out_of_memory(L, list);
    m->child_count = count;
    for (uint32_t i = 0; i < count; i++) {
        yaml_node_t *item = node(L, items[i]);
        field f[] = {
            {"name", 1, NULL}, {"entry", 0, NULL}, {"params", 0, NULL}, {"variants", 1, NULL}};
        mf_child *c = &m->children[i];
        snprintf(what, sizeof what, "children[%u]", i);
        if (read_fields(L, item, what, f, 4) != 0) return -1;
        c->mark = to_mark(item->start_mark);
        snprintf(what, sizeof what, "children[%u].name", i);
        if (get_name(L, f[0].value, what, &c->name) != 0) return -1;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(m->children[j].name, c->name) == 0)
                return fail(L, f[0].value, "duplicate child name '%s' (first at line %u)", c->name,
                            m->children[j].mark.line);
        c->entry = c->name;
        snprintf(what, sizeof what, "children[%u].entry", i);
        if (f[1].value != NULL && get_name(L, f[1].value, what, &c->entry) != 0) return -1;
        snprintf(what, sizeof what, "children[%u].params", i);
        if (f[2].value != NULL &&
            load_params(L, f[2].value, what, 0, &c->params, &c->param_count) != 0)
            return -1;
        if (load_variants(L, f[3].value, i, c) != 0) return -1;
    }
    return 0;
}

/* ---- tasks ----------------------------------------------------------- */

static int load_binding(loader *L, const manifest *m, const mf_task *t, const mf_child *c,
                        uint32_t bi, const yaml_node_t *item, mf_binding *b) {
    char what[160];
    field f[] = {{"tensor", 0, NULL},
                 {"offset", 0, NULL},
                 {"scalar", 0, NULL},
                 {"imm", 0, NULL},
                 {"imm_f32", 0, NULL}};
    snprintf(what, sizeof what, "binding %u of task '%s'", bi, t->id);
    if (read_fields(L, item, what, f, 5) != 0) return -1;
    int forms =
        (f[0].value != NULL) + (f[2].value != NULL) + (f[3].value != NULL) + (f[4].value != NULL);
    if (forms != 1)
        return fail(
            L, item,
            "%s must have exactly one of 'tensor', 'scalar', 'imm' or 'imm_f32' (it has %d)", what,
            forms);
    if (f[1].value != NULL && f[0].value == NULL)
        return fail(L, f[1].value, "%s: 'offset' applies only to a tensor binding", what);

    const mf_param *cp = &c->params[bi];
    b->mark = to_mark(item->start_mark);
    b->param = 0;
    b->value = 0;
    if (is_tensor(cp->kind) != (f[0].value != NULL))
        return fail(L, item, "%s: child '%s' parameter '%s' is a %s, so it needs %s", what, c->name,
                    cp->name, is_tensor(cp->kind) ? "tensor" : "scalar",
                    is_tensor(cp->kind) ? "{tensor: NAME}" : "{scalar: NAME} or an immediate");

    if (f[0].value != NULL || f[2].value != NULL) {
        const yaml_node_t *ref = f[0].value ? f[0].value : f[2].value;
        const char *name;
        if (get_name(L, ref, what, &name) != 0) return -1;
        int pi = find_param(m->params, m->param_count, name);
        if (pi < 0)
            return fail(L, ref, "%s names '%s', which is not a parameter of the callable", what,
                        name);
        const mf_param *p = &m->params[pi];
        if (f[0].value != NULL && !is_tensor(p->kind))
            return fail(L, ref, "%s: callable parameter '%s' is a scalar, not a tensor", what,
                        name);
        if (f[2].value != NULL && is_tensor(p->kind))
            return fail(L, ref, "%s: callable parameter '%s' is a tensor, not a scalar", what,
                        name);
        b->param = (uint32_t)pi;
        if (f[0].value != NULL) {
            b->kind = KCTX_BIND_TENSOR;
            if (f[1].value != NULL && get_u64(L, f[1].value, "offset", &b->value) != 0) return -1;
        } else {
            b->kind = KCTX_BIND_SCALAR;
        }
        return 0;
    }
    b->kind = KCTX_BIND_IMMEDIATE;
    if (f[3].value != NULL) return get_u64(L, f[3].value, "imm", &b->value);
    return get_f32_bits(L, f[4].value, "imm_f32", &b->value);
}

static int find_task(const mf_task *tasks, uint32_t count, const char *id) {
    for (uint32_t i = 0; i < count; i++)
        if (tasks[i].id != NULL && strcmp(tasks[i].id, id) == 0) return (int)i;
    return -1;
}

static field *task_fields(field f[5]) {
    static const field proto[5] = {{"id", 1, NULL},
                                   {"child", 1, NULL},
                                   {"block_dim", 0, NULL},
                                   {"bind", 0, NULL},
                                   {"after", 0, NULL}};
    memcpy(f, proto, sizeof proto);
    return f;
}

static int load_task(loader *L, manifest *m, uint32_t ti, const yaml_node_t *item) {
    field f[5];
    char what[128];
    mf_task *t = &m->tasks[ti];
    snprintf(what, sizeof what, "tasks[%u]", ti);
    if (read_fields(L, item, what, task_fields(f), 5) != 0) return -1;

    const char *child_name;
    if (get_name(L, f[1].value, "child", &child_name) != 0) return -1;
    uint32_t ci = 0;
    while (ci < m->child_count && strcmp(m->children[ci].name, child_name) != 0) ci++;
    if (ci == m->child_count)
        return fail(L, f[1].value, "task '%s' names unknown child '%s'", t->id, child_name);
    const mf_child *c = &m->children[ci];
    t->child = ci;

    uint64_t block_dim = 1;
    if (f[2].value != NULL && get_u64(L, f[2].value, "block_dim", &block_dim) != 0) return -1;
    if (block_dim < 1 || block_dim > KCTX_IMAGE_MAX_BLOCK_DIM)
        return fail(L, f[2].value, "task '%s': block_dim %llu is out of range (1..%u)", t->id,
                    (unsigned long long)block_dim, KCTX_IMAGE_MAX_BLOCK_DIM);
    t->block_dim = (uint32_t)block_dim;

    yaml_node_item_t *items = NULL;
    uint32_t count = 0;
    snprintf(what, sizeof what, "bind of task '%s'", t->id);
    if (f[3].value != NULL && get_list(L, f[3].value, what, 1, &items, &count) != 0) return -1;
    if (count != c->param_count)
        return fail(L, f[3].value ? f[3].value : item,
                    "task '%s' binds %u parameter%s but child '%s' has %u (one binding per child "
                    "parameter, in order)",
                    t->id, count, count == 1 ? "" : "s", c->name, c->param_count);
    t->bindings = alloc_array(count, sizeof *t->bindings);
    if (t->bindings == NULL) return out_of_memory(L, item);
    t->binding_count = count;
    for (uint32_t i = 0; i < count; i++)
        if (load_binding(L, m, t, c, i, node(L, items[i]), &t->bindings[i]) != 0) return -1;

    snprintf(what, sizeof what, "after of task '%s'", t->id);
    if (f[4].value != NULL && get_list(L, f[4].value, what, 1, &items, &count) != 0) return -1;
    if (f[4].value == NULL) count = 0;
    if (count > KCTX_IMAGE_MAX_DEPS)
        return fail(L, f[4].value, "task '%s' has %u dependencies; the limit is %u", t->id, count,
                    KCTX_IMAGE_MAX_DEPS);
    t->deps = alloc_array(count, sizeof *t->deps);
    if (t->deps == NULL) return out_of_memory(L, item);
    t->dep_count = count;
    for (uint32_t i = 0; i < count; i++) {
        const yaml_node_t *d = node(L, items[i]);
        const char *id;
        if (get_name(L, d, "dependency", &id) != 0) return -1;
        int di = find_task(m->tasks, m->task_count, id);
        if (di < 0) return fail(L, d, "task '%s' depends on unknown task '%s'", t->id, id);
        if ((uint32_t)di == ti) return fail(L, d, "task '%s' depends on itself", t->id);
        if ((uint32_t)di > ti)
            return fail(L, d,
                        "task '%s' depends on '%s', which comes later (a task may depend only on "
                        "tasks listed before it)",
                        t->id, id);
        for (uint32_t j = 0; j < i; j++)
            if (t->deps[j] == (uint32_t)di)
                return fail(L, d, "task '%s' lists dependency '%s' twice", t->id, id);
        t->deps[i] = (uint32_t)di;
    }
    return 0;
}

static int load_tasks(loader *L, const yaml_node_t *list, manifest *m) {
    yaml_node_item_t *items;
    uint32_t count;
    char what[64];
    if (get_list(L, list, "tasks", 0, &items, &count) != 0) return -1;
    if (count == 0) return fail(L, list, "'tasks' is empty (a callable needs at least one)");
    if (count > KCTX_IMAGE_MAX_TASKS)
        return fail(L, list, "%u tasks; the limit is %u", count, KCTX_IMAGE_MAX_TASKS);
    m->tasks = alloc_array(count, sizeof *m->tasks);
    if (m->tasks == NULL) return out_of_memory(L, list);
    m->task_count = count;

    /* Pass 1: every id, so that a dependency on a later task is told apart
     * from one on a task that does not exist. */
    for (uint32_t i = 0; i < count; i++) {
        yaml_node_t *item = node(L, items[i]);
        field f[5];
        snprintf(what, sizeof what, "tasks[%u]", i);
        if (read_fields(L, item, what, task_fields(f), 5) != 0) return -1;
        snprintf(what, sizeof what, "tasks[%u].id", i);
        const char *id;
        if (get_name(L, f[0].value, what, &id) != 0) return -1;
        int prev = find_task(m->tasks, i, id);
        if (prev >= 0)
            return fail(L, f[0].value, "duplicate task id '%s' (first at line %u)", id,
                        m->tasks[prev].mark.line);
        m->tasks[i].id = id;
        m->tasks[i].mark = to_mark(item->start_mark);
    }
    for (uint32_t i = 0; i < count; i++)
        if (load_task(L, m, i, node(L, items[i])) != 0) return -1;
    return 0;
}

/* ---- the document ---------------------------------------------------- */

static int load_root(loader *L, const yaml_node_t *root, manifest *m) {
    field f[] = {{"name", 1, NULL}, {"params", 0, NULL}, {"children", 1, NULL}, {"tasks", 1, NULL}};
    if (read_fields(L, root, "the manifest", f, 4) != 0) return -1;
    if (get_name(L, f[0].value, "name", &m->name) != 0) return -1;
    if (f[1].value != NULL &&
        load_params(L, f[1].value, "params", 1, &m->params, &m->param_count) != 0)
        return -1;
    if (load_children(L, f[2].value, m) != 0) return -1;
    return load_tasks(L, f[3].value, m);
}

static int syntax_error(loader *L, const yaml_parser_t *p) {
    const char *problem = p->problem ? p->problem : "unknown problem";
    if (p->error == YAML_MEMORY_ERROR) {
        snprintf(L->err, L->err_size, "%s: error: out of memory while parsing", L->path);
    } else if (p->error == YAML_READER_ERROR) {
        snprintf(L->err, L->err_size, "%s: error: cannot decode the manifest at byte %zu: %s",
                 L->path, p->problem_offset, problem);
    } else {
        mf_mark at = to_mark(p->problem_mark);
        int n = snprintf(L->err, L->err_size, "%s:%u:%u: error: YAML syntax error: %s", L->path,
                         at.line, at.column, problem);
        if (p->context != NULL && n >= 0 && (size_t)n < L->err_size) {
            mf_mark cm = to_mark(p->context_mark);
            snprintf(L->err + n, L->err_size - (size_t)n, " (%s at line %u, column %u)", p->context,
                     cm.line, cm.column);
        }
    }
    return -1;
}

void manifest_free(manifest *m) {
    for (uint32_t i = 0; m->children != NULL && i < m->child_count; i++) {
        free(m->children[i].params);
        free(m->children[i].variants);
    }
    for (uint32_t i = 0; m->tasks != NULL && i < m->task_count; i++) {
        free(m->tasks[i].bindings);
        free(m->tasks[i].deps);
    }
    free(m->children);
    free(m->tasks);
    free(m->params);
    free(m->dir);
    if (m->doc != NULL) {
        yaml_document_delete(m->doc);
        free(m->doc);
    }
    const char *path = m->path;
    memset(m, 0, sizeof *m);
    m->path = path;
}

int manifest_load(const char *path, manifest *m, char *err, size_t err_size) {
    loader L = {path, NULL, err, err_size};
    void *text = NULL;
    size_t size = 0;
    yaml_parser_t parser;
    int rc = -1;

    memset(m, 0, sizeof *m);
    m->path = path;
    if (util_read_file(path, MANIFEST_MAX_FILE_SIZE, &text, &size) != 0) {
        snprintf(err, err_size, "%s: error: cannot read the manifest: %s", path,
                 errno == EFBIG ? "larger than 16 MiB" : strerror(errno));
        return -1;
    }
    m->dir = util_dirname(path);
    m->doc = calloc(1, sizeof(yaml_document_t));
    if (m->dir == NULL || m->doc == NULL || !yaml_parser_initialize(&parser)) {
        snprintf(err, err_size, "%s: error: out of memory", path);
        free(text);
        manifest_free(m);
        return -1;
    }
    yaml_parser_set_input_string(&parser, text, size);
    L.doc = m->doc;
    if (!yaml_parser_load(&parser, L.doc)) {
        /* libyaml has already released the half-built document. */
        free(m->doc);
        m->doc = NULL;
        syntax_error(&L, &parser);
        goto out;
    }
    yaml_node_t *root = yaml_document_get_root_node(L.doc);
    if (root == NULL) {
        snprintf(err, err_size, "%s:1:1: error: the manifest is empty", path);
        goto out;
    }
    yaml_document_t extra;
    if (!yaml_parser_load(&parser, &extra)) {
        syntax_error(&L, &parser);
        goto out;
    }
    yaml_node_t *extra_root = yaml_document_get_root_node(&extra);
    if (extra_root != NULL) {
        mf_mark at = to_mark(extra_root->start_mark);
        snprintf(err, err_size, "%s:%u:%u: error: a manifest is one YAML document; found another",
                 path, at.line, at.column);
        yaml_document_delete(&extra);
        goto out;
    }
    yaml_document_delete(&extra);
    rc = load_root(&L, root, m);
out:
    yaml_parser_delete(&parser);
    free(text);
    if (rc != 0) manifest_free(m);
    return rc;
}
