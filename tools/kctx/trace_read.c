/*
 * trace_read.c — a kctx Chrome trace file back into lanes and spans
 * (trace_read.h). This file walks the outer object and the traceEvents
 * array itself and has Jansson decode one value at a time (a key, an
 * event, otherData), so memory grows with the spans kept, not with a DOM
 * of the whole file (Jansson's costs about 2 KB per event). It checks the
 * shape of what kctx writes and trusts nothing else: every field it uses
 * is checked for presence and type before use, and any mismatch rejects
 * the file.
 */
#include "trace_read.h"
#include "trace.h" /* src/dfx: kctx_dfx_span_kind, the host span kinds the writer writes */

#include <jansson.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errsz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errsz, const char *fmt, ...) {
    if (err != NULL && errsz > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errsz, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

/* An identifier: a non-negative JSON integer, or a string of decimal
 * digits (how kctx writes values above 2^53). */
static int get_id(const json_t *v, uint64_t *out) {
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0) return -1;
        *out = (uint64_t)i;
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (s[0] < '0' || s[0] > '9') return -1;
        errno = 0;
        char *end = NULL;
        unsigned long long x = strtoull(s, &end, 10);
        if (errno != 0 || *end != '\0') return -1;
        *out = (uint64_t)x;
        return 0;
    }
    return -1;
}

/* Microseconds (integer or decimal) to nanoseconds, rounded. */
static int get_us_as_ns(const json_t *v, uint64_t *out) {
    if (!json_is_number(v)) return -1;
    double us = json_number_value(v);
    if (!isfinite(us) || us < 0 || us * 1000.0 >= 18446744073709549568.0) return -1;
    *out = (uint64_t)llround(us * 1000.0);
    return 0;
}

static int get_int(const json_t *v, int64_t *out) {
    if (!json_is_integer(v)) return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* "PREFIX N" with N all decimal digits. */
static int numbered(const char *name, const char *prefix, uint64_t *n) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0 || name[pl] < '0' || name[pl] > '9') return 0;
    errno = 0;
    char *end = NULL;
    unsigned long long x = strtoull(name + pl, &end, 10);
    if (errno != 0 || *end != '\0') return 0;
    *n = (uint64_t)x;
    return 1;
}

static void classify_lane(kctx_dfx_lane *l) {
    if (strcmp(l->name, "AICPU") == 0)
        l->kind = KCTX_DFX_LANE_AICPU;
    else if (numbered(l->name, "core ", &l->number))
        l->kind = KCTX_DFX_LANE_CORE;
    else if (numbered(l->name, "host thread ", &l->number))
        l->kind = KCTX_DFX_LANE_HOST;
    else
        l->kind = KCTX_DFX_LANE_OTHER;
}

static int cmp_lane_order(const void *a, const void *b) {
    const kctx_dfx_lane *x = a, *y = b;
    if (x->pid != y->pid) return (x->pid > y->pid) - (x->pid < y->pid);
    if (x->sort_index != y->sort_index)
        return (x->sort_index > y->sort_index) - (x->sort_index < y->sort_index);
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* ---- the reader's state ---------------------------------------------------- */

typedef struct reader {
    kctx_dfx_trace_file *f;
    char *err;
    size_t errsz;
    const char *text; /* the whole file */
    size_t len, off;  /* and the cursor */
    size_t lanes_cap, spans_cap;
    size_t *index; /* open addressing over f->lanes by (pid, tid): lane + 1, 0 empty */
    size_t index_cap;
} reader;

static size_t hash_key(int64_t pid, int64_t tid) {
    uint64_t h = (uint64_t)pid * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)tid;
    h ^= h >> 31;
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    return (size_t)(h ^ (h >> 29));
}

static int index_rebuild(reader *r, size_t cap) {
    size_t *idx = calloc(cap, sizeof *idx);
    if (idx == NULL) return -1;
    for (size_t i = 0; i < r->f->nlanes; i++) {
        size_t h = hash_key(r->f->lanes[i].pid, r->f->lanes[i].tid) & (cap - 1);
        while (idx[h] != 0) h = (h + 1) & (cap - 1);
        idx[h] = i + 1;
    }
    free(r->index);
    r->index = idx;
    r->index_cap = cap;
    return 0;
}

/* The lane of (pid, tid), created on first sight; SIZE_MAX when out of
 * memory. */
static size_t lane_get(reader *r, int64_t pid, int64_t tid) {
    kctx_dfx_trace_file *f = r->f;
    if (r->index_cap == 0 && index_rebuild(r, 64) != 0) return SIZE_MAX;
    size_t h = hash_key(pid, tid) & (r->index_cap - 1);
    for (; r->index[h] != 0; h = (h + 1) & (r->index_cap - 1)) {
        kctx_dfx_lane *l = &f->lanes[r->index[h] - 1];
        if (l->pid == pid && l->tid == tid) return r->index[h] - 1;
    }
    if (f->nlanes == r->lanes_cap) {
        size_t cap = r->lanes_cap ? r->lanes_cap * 2 : 16;
        kctx_dfx_lane *nl = realloc(f->lanes, cap * sizeof *nl);
        if (nl == NULL) return SIZE_MAX;
        f->lanes = nl;
        r->lanes_cap = cap;
    }
    f->lanes[f->nlanes] = (kctx_dfx_lane){.pid = pid, .tid = tid, .sort_index = tid};
    r->index[h] = ++f->nlanes;
    /* Keep the index at most half full. */
    if (2 * f->nlanes > r->index_cap && index_rebuild(r, r->index_cap * 2) != 0) return SIZE_MAX;
    return f->nlanes - 1;
}

static kctx_dfx_span *span_new(reader *r) {
    kctx_dfx_trace_file *f = r->f;
    if (f->nspans == r->spans_cap) {
        size_t cap = r->spans_cap ? r->spans_cap * 2 : 256;
        kctx_dfx_span *ns = realloc(f->spans, cap * sizeof *ns);
        if (ns == NULL) return NULL;
        f->spans = ns;
        r->spans_cap = cap;
    }
    return &f->spans[f->nspans];
}

static int event_pid_tid(reader *r, size_t i, const json_t *ev, int64_t *pid, int64_t *tid) {
    const json_t *p = json_object_get(ev, "pid"), *t = json_object_get(ev, "tid");
    *pid = *tid = 0;
    if (p != NULL && get_int(p, pid) != 0)
        return fail(r->err, r->errsz, "event %zu: \"pid\" is not an integer", i);
    if (t != NULL && get_int(t, tid) != 0)
        return fail(r->err, r->errsz, "event %zu: \"tid\" is not an integer", i);
    return 0;
}

static const char *event_ph(const json_t *ev) {
    const json_t *ph = json_object_get(ev, "ph");
    return json_is_string(ph) ? json_string_value(ph) : NULL;
}

static int read_id_arg(reader *r, size_t i, const json_t *args, const char *key, int *has,
                       uint64_t *v) {
    const json_t *a = args ? json_object_get(args, key) : NULL;
    *has = 0;
    if (a == NULL) return 0;
    if (get_id(a, v) != 0)
        return fail(r->err, r->errsz, "event %zu: args.%s is not a non-negative integer", i, key);
    *has = 1;
    return 0;
}

static int read_u32_arg(reader *r, size_t i, const json_t *args, const char *key, int *has,
                        uint32_t *v) {
    uint64_t x = 0;
    if (read_id_arg(r, i, args, key, has, &x) != 0) return -1;
    if (*has && x > UINT32_MAX)
        return fail(r->err, r->errsz, "event %zu: args.%s is above 2^32-1", i, key);
    *v = (uint32_t)x;
    return 0;
}

static int read_span(reader *r, size_t i, const json_t *ev, size_t lane, kctx_dfx_span *s) {
    memset(s, 0, sizeof *s);
    s->lane = lane;
    const json_t *name = json_object_get(ev, "name");
    if (!json_is_string(name))
        return fail(r->err, r->errsz, "event %zu: \"name\" is missing or not a string", i);
    if (get_us_as_ns(json_object_get(ev, "ts"), &s->ts) != 0)
        return fail(r->err, r->errsz, "event %zu: \"ts\" is missing, negative or not a number", i);
    if (get_us_as_ns(json_object_get(ev, "dur"), &s->dur) != 0)
        return fail(r->err, r->errsz, "event %zu: \"dur\" is missing, negative or not a number", i);
    if (s->ts > UINT64_MAX - s->dur)
        return fail(r->err, r->errsz, "event %zu: ends beyond 2^64 ns", i);
    const json_t *args = json_object_get(ev, "args");
    if (args != NULL && !json_is_object(args))
        return fail(r->err, r->errsz, "event %zu: \"args\" is not an object", i);
    const json_t *catv = json_object_get(ev, "cat");
    const char *cat = json_is_string(catv) ? json_string_value(catv) : "";
    const char *n = json_string_value(name);

    int has_block = 0, has_func = 0;
    if (read_id_arg(r, i, args, "callable", &s->has_callable, &s->callable) != 0 ||
        read_id_arg(r, i, args, "launch", &s->has_launch, &s->launch) != 0 ||
        read_u32_arg(r, i, args, "status", &s->has_status, &s->status) != 0 ||
        read_u32_arg(r, i, args, "task", &s->has_task, &s->task) != 0 ||
        read_u32_arg(r, i, args, "func_id", &has_func, &s->func_id) != 0 ||
        read_u32_arg(r, i, args, "block", &has_block, &s->block) != 0)
        return -1;

    static const char *const host_names[] = {NULL, "init", "prepare", "launch", "close", "flush"};
    s->cls = KCTX_DFX_SPAN_OTHER;
    if (strcmp(cat, "host") == 0) {
        for (uint32_t k = KCTX_DFX_INIT; k <= KCTX_DFX_FLUSH; k++)
            if (strcmp(n, host_names[k]) == 0) {
                s->cls = KCTX_DFX_SPAN_HOST;
                s->host_kind = k;
            }
    } else if (strcmp(n, "scheduler") == 0) {
        s->cls = KCTX_DFX_SPAN_SCHED;
    } else if (strcmp(n, "refused replay") == 0) {
        s->cls = KCTX_DFX_SPAN_REFUSED;
    } else if (strncmp(n, "task ", 5) == 0) {
        if (!s->has_task || !has_func)
            return fail(r->err, r->errsz, "event %zu: task span without args.task and args.func_id",
                        i);
        s->cls = KCTX_DFX_SPAN_TASK;
    }
    s->name = dup_str(n);
    if (s->name == NULL) return fail(r->err, r->errsz, "out of memory");
    /* optional names (a kctx writer with the callables' names) */
    static const char *const keys[3] = {"callable_name", "kernel", "status_name"};
    char **dst[3] = {&s->callable_name, &s->kernel, &s->status_name};
    for (int k = 0; k < 3; k++) {
        const json_t *v = args ? json_object_get(args, keys[k]) : NULL;
        if (v == NULL) continue;
        if (!json_is_string(v))
            return fail(r->err, r->errsz, "event %zu: args.%s is not a string", i, keys[k]);
        if ((*dst[k] = dup_str(json_string_value(v))) == NULL)
            return fail(r->err, r->errsz, "out of memory");
    }
    return 0;
}

static void callable_names_free(kctx_dfx_callable_names *c) {
    for (uint32_t k = 0; c->kernels && k < c->nkernels; k++) free(c->kernels[k]);
    free(c->kernels);
    free(c->name);
}

static int cmp_callable_id(const void *a, const void *b) {
    uint64_t x = ((const kctx_dfx_callable_names *)a)->id,
             y = ((const kctx_dfx_callable_names *)b)->id;
    return (x > y) - (x < y);
}

/* One entry of otherData.callables into `c` (left empty on failure). */
static int read_callable(reader *r, size_t i, const json_t *e, kctx_dfx_callable_names *c) {
    memset(c, 0, sizeof *c);
    if (!json_is_object(e))
        return fail(r->err, r->errsz, "otherData.callables[%zu] is not an object", i);
    if (get_id(json_object_get(e, "id"), &c->id) != 0)
        return fail(r->err, r->errsz,
                    "otherData.callables[%zu].id is missing or not a non-negative integer", i);
    const json_t *name = json_object_get(e, "name");
    if (!json_is_string(name))
        return fail(r->err, r->errsz, "otherData.callables[%zu].name is missing or not a string",
                    i);
    const json_t *ks = json_object_get(e, "kernels");
    if (ks != NULL && !json_is_array(ks))
        return fail(r->err, r->errsz, "otherData.callables[%zu].kernels is not an array", i);
    size_t nk = ks ? json_array_size(ks) : 0;
    if (nk > UINT32_MAX)
        return fail(r->err, r->errsz, "otherData.callables[%zu] has more than 2^32-1 kernels", i);
    for (size_t k = 0; k < nk; k++)
        if (!json_is_string(json_array_get(ks, k)))
            return fail(r->err, r->errsz, "otherData.callables[%zu].kernels[%zu] is not a string",
                        i, k);
    c->name = dup_str(json_string_value(name));
    c->kernels = calloc(nk ? nk : 1, sizeof *c->kernels);
    int ok = c->name && c->kernels;
    for (size_t k = 0; ok && k < nk; k++, c->nkernels++)
        ok = (c->kernels[k] = dup_str(json_string_value(json_array_get(ks, k)))) != NULL;
    if (!ok) {
        callable_names_free(c);
        memset(c, 0, sizeof *c);
        return fail(r->err, r->errsz, "out of memory");
    }
    return 0;
}

/* otherData.callables: the callables' names, sorted by id. */
static int read_callables(reader *r, const json_t *cs) {
    kctx_dfx_trace_file *f = r->f;
    if (!json_is_array(cs)) return fail(r->err, r->errsz, "otherData.callables is not an array");
    size_t n = json_array_size(cs);
    if (n == 0) return 0;
    f->callables = calloc(n, sizeof *f->callables);
    if (f->callables == NULL) return fail(r->err, r->errsz, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (read_callable(r, i, json_array_get(cs, i), &f->callables[i]) != 0) return -1;
        f->ncallables++;
    }
    qsort(f->callables, n, sizeof *f->callables, cmp_callable_id);
    for (size_t i = 1; i < n; i++)
        if (f->callables[i].id == f->callables[i - 1].id)
            return fail(r->err, r->errsz, "otherData.callables lists callable %" PRIu64 " twice",
                        f->callables[i].id);
    return 0;
}

static int read_other_data(reader *r, const json_t *od) {
    kctx_dfx_trace_file *f = r->f;
    if (od == NULL) return 0;
    if (!json_is_object(od)) return fail(r->err, r->errsz, "\"otherData\" is not an object");
    const json_t *hd = json_object_get(od, "host_dropped"),
                 *dd = json_object_get(od, "dev_dropped");
    if ((hd != NULL) != (dd != NULL))
        return fail(r->err, r->errsz, "otherData has only one of the drop counts");
    if (hd != NULL) {
        if (get_id(hd, &f->host_dropped) != 0 || get_id(dd, &f->dev_dropped) != 0)
            return fail(r->err, r->errsz, "otherData: a drop count is not a non-negative integer");
        f->has_drops = 1;
    }
    const json_t *base = json_object_get(od, "base_ns");
    if (base != NULL) {
        if (get_id(base, &f->base_ns) != 0)
            return fail(r->err, r->errsz, "otherData.base_ns is not a non-negative integer");
        f->has_base = 1;
    }
    const json_t *na = json_object_get(od, "device_lanes");
    if (na != NULL) {
        if (!json_is_string(na))
            return fail(r->err, r->errsz, "otherData.device_lanes is not a string");
        if ((f->device_na = dup_str(json_string_value(na))) == NULL)
            return fail(r->err, r->errsz, "out of memory");
    }
    const json_t *cc = json_object_get(od, "core_count");
    if (cc != NULL) {
        uint64_t n = 0;
        if (get_id(cc, &n) != 0 || n > UINT32_MAX)
            return fail(r->err, r->errsz,
                        "otherData.core_count is not a 32-bit non-negative integer");
        f->core_count = (uint32_t)n;
    }
    const json_t *cs = json_object_get(od, "callables");
    if (cs != NULL && read_callables(r, cs) != 0) return -1;
    return 0;
}

/* Metadata (names, order) and the drop counts. */
static int read_meta(reader *r, size_t i, const json_t *ev, const char *ph, kctx_dfx_lane *lane) {
    kctx_dfx_trace_file *f = r->f;
    const json_t *name = json_object_get(ev, "name");
    const json_t *args = json_object_get(ev, "args");
    const char *n = json_is_string(name) ? json_string_value(name) : "";
    if (strcmp(ph, "M") == 0) {
        if (strcmp(n, "thread_name") == 0 || strcmp(n, "process_name") == 0) {
            const json_t *v = json_is_object(args) ? json_object_get(args, "name") : NULL;
            if (!json_is_string(v))
                return fail(r->err, r->errsz, "event %zu: %s without a string args.name", i, n);
            char *copy = dup_str(json_string_value(v));
            if (copy == NULL) return fail(r->err, r->errsz, "out of memory");
            char **slot = n[0] == 't' ? &lane->name : &f->process_name;
            free(*slot);
            *slot = copy;
        } else if (strcmp(n, "thread_sort_index") == 0) {
            const json_t *v = json_is_object(args) ? json_object_get(args, "sort_index") : NULL;
            if (get_int(v, &lane->sort_index) != 0)
                return fail(r->err, r->errsz,
                            "event %zu: thread_sort_index without an integer args.sort_index", i);
        }
        return 0;
    }
    if ((strcmp(ph, "i") == 0 || strcmp(ph, "I") == 0) && strcmp(n, "dropped") == 0) {
        const json_t *hd = json_is_object(args) ? json_object_get(args, "host_dropped") : NULL;
        const json_t *dd = json_is_object(args) ? json_object_get(args, "dev_dropped") : NULL;
        if (get_id(hd, &f->host_dropped) != 0 || get_id(dd, &f->dev_dropped) != 0)
            return fail(
                r->err, r->errsz,
                "event %zu: \"dropped\" without integer args.host_dropped and args.dev_dropped", i);
        f->has_drops = 1;
    }
    return 0;
}

/* Lanes into display order (pid, sort index, tid); spans follow. */
typedef struct lane_move {
    kctx_dfx_lane lane;
    size_t old;
} lane_move;

static int cmp_move(const void *a, const void *b) {
    return cmp_lane_order(&((const lane_move *)a)->lane, &((const lane_move *)b)->lane);
}

static int sort_lanes(reader *r) {
    kctx_dfx_trace_file *f = r->f;
    size_t nl = f->nlanes;
    lane_move *m = malloc((nl ? nl : 1) * sizeof *m);
    size_t *to = malloc((nl ? nl : 1) * sizeof *to);
    if (m == NULL || to == NULL) {
        free(m);
        free(to);
        return fail(r->err, r->errsz, "out of memory");
    }
    for (size_t i = 0; i < nl; i++) m[i] = (lane_move){f->lanes[i], i};
    qsort(m, nl, sizeof *m, cmp_move);
    for (size_t i = 0; i < nl; i++) {
        f->lanes[i] = m[i].lane;
        to[m[i].old] = i;
    }
    for (size_t i = 0; i < f->nspans; i++) f->spans[i].lane = to[f->spans[i].lane];
    free(m);
    free(to);
    return 0;
}

/* One event of traceEvents (index i). */
static int read_event(reader *r, size_t i, const json_t *ev) {
    kctx_dfx_trace_file *f = r->f;
    if (!json_is_object(ev)) return fail(r->err, r->errsz, "event %zu is not an object", i);
    const char *ph = event_ph(ev);
    if (ph == NULL)
        return fail(r->err, r->errsz, "event %zu: \"ph\" is missing or not a string", i);
    int64_t pid, tid;
    if (event_pid_tid(r, i, ev, &pid, &tid) != 0) return -1;
    if (strcmp(ph, "X") == 0) {
        size_t lane = lane_get(r, pid, tid);
        kctx_dfx_span *s = lane == SIZE_MAX ? NULL : span_new(r);
        if (s == NULL) return fail(r->err, r->errsz, "out of memory");
        if (read_span(r, i, ev, lane, s) != 0) { /* not counted: its strings are freed here */
            free(s->name);
            free(s->callable_name);
            free(s->kernel);
            free(s->status_name);
            return -1;
        }
        f->nspans++;
        return 0;
    }
    /* Lanes are threads: process-level metadata (process_name, tid 0) and
     * instants do not make one. */
    kctx_dfx_lane scratch = {0};
    kctx_dfx_lane *lane = &scratch;
    const json_t *name = json_object_get(ev, "name");
    if (strcmp(ph, "M") == 0 && json_is_string(name) &&
        strncmp(json_string_value(name), "thread_", 7) == 0) {
        size_t l = lane_get(r, pid, tid);
        if (l == SIZE_MAX) return fail(r->err, r->errsz, "out of memory");
        lane = &f->lanes[l];
    }
    int rc = read_meta(r, i, ev, ph, lane);
    int used = strcmp(ph, "M") == 0 ||
               (json_is_string(name) && strcmp(json_string_value(name), "dropped") == 0 &&
                (strcmp(ph, "i") == 0 || strcmp(ph, "I") == 0));
    if (!used) f->ignored++;
    return rc;
}

/* ---- walking the text -------------------------------------------------------- */

static void skip_ws(reader *r) {
    while (r->off < r->len && (r->text[r->off] == ' ' || r->text[r->off] == '\t' ||
                               r->text[r->off] == '\n' || r->text[r->off] == '\r'))
        r->off++;
}

/* Line and column (from 1) of byte `at`. */
static void where(const reader *r, size_t at, size_t *line, size_t *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at && i < r->len; i++) {
        if (r->text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

static int syntax(reader *r, size_t at, const char *what) {
    size_t line, col;
    where(r, at, &line, &col);
    return fail(r->err, r->errsz, "not valid JSON: line %zu, column %zu: %s", line, col, what);
}

/* The next JSON value at the cursor, decoded by Jansson; NULL after
 * reporting a syntax error. */
static json_t *next_value(reader *r) {
    skip_ws(r);
    if (r->off >= r->len) {
        syntax(r, r->off, "unexpected end of input");
        return NULL;
    }
    json_error_t je;
    json_t *v = json_loadb(r->text + r->off, r->len - r->off,
                           JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
    if (v == NULL) {
        /* je.position counts the bytes Jansson read: the last is the culprit. */
        syntax(r, r->off + (je.position > 0 ? (size_t)je.position - 1 : 0), je.text);
        return NULL;
    }
    r->off += (size_t)je.position;
    return v;
}

/* Consume `c` (after white space); else a syntax error naming `what`. */
static int expect(reader *r, char c, const char *what) {
    skip_ws(r);
    if (r->off < r->len && r->text[r->off] == c) {
        r->off++;
        return 0;
    }
    return syntax(r, r->off, what);
}

/* After a value in a container: 1 for ',', 0 for `close`. */
static int separator(reader *r, char close, const char *what) {
    skip_ws(r);
    if (r->off < r->len && (r->text[r->off] == ',' || r->text[r->off] == close))
        return r->text[r->off++] == ',';
    return syntax(r, r->off, what);
}

static int read_events(reader *r) {
    skip_ws(r);
    if (r->off >= r->len || r->text[r->off] != '[')
        return fail(r->err, r->errsz, "not a Chrome trace: \"traceEvents\" is not an array");
    r->off++;
    skip_ws(r);
    if (r->off < r->len && r->text[r->off] == ']') {
        r->off++;
        return 0;
    }
    for (size_t i = 0;; i++) {
        json_t *ev = next_value(r);
        if (ev == NULL) return -1;
        int rc = read_event(r, i, ev);
        json_decref(ev);
        if (rc != 0) return -1;
        int more = separator(r, ']', "expected ',' or ']' after an event");
        if (more < 0) return -1;
        if (!more) return 0;
    }
}

static int read_outer_object(reader *r) {
    int seen_events = 0, seen_other = 0;
    r->off++; /* '{' */
    skip_ws(r);
    if (r->off < r->len && r->text[r->off] == '}') {
        r->off++;
        return fail(r->err, r->errsz, "not a Chrome trace: no \"traceEvents\" array");
    }
    for (;;) {
        json_t *key = next_value(r);
        if (key == NULL) return -1;
        if (!json_is_string(key)) {
            json_decref(key);
            return syntax(r, r->off, "expected a string key");
        }
        int is_events = strcmp(json_string_value(key), "traceEvents") == 0;
        int is_other = strcmp(json_string_value(key), "otherData") == 0;
        json_decref(key);
        if ((is_events && seen_events++) || (is_other && seen_other++))
            return fail(r->err, r->errsz, "duplicate \"%s\" key",
                        is_events ? "traceEvents" : "otherData");
        if (expect(r, ':', "expected ':' after a key") != 0) return -1;
        if (is_events) {
            if (read_events(r) != 0) return -1;
        } else {
            json_t *v = next_value(r);
            if (v == NULL) return -1;
            int rc = is_other ? read_other_data(r, v) : 0;
            json_decref(v);
            if (rc != 0) return -1;
        }
        int more = separator(r, '}', "expected ',' or '}' after a value");
        if (more < 0) return -1;
        if (!more) break;
    }
    if (!seen_events) return fail(r->err, r->errsz, "not a Chrome trace: no \"traceEvents\" array");
    return 0;
}

/* Names for unnamed lanes, kinds, display order. */
static int finish(reader *r) {
    kctx_dfx_trace_file *f = r->f;
    for (size_t i = 0; i < f->nlanes; i++) {
        kctx_dfx_lane *l = &f->lanes[i];
        if (l->name == NULL) {
            char buf[64];
            snprintf(buf, sizeof buf, "pid %" PRId64 " tid %" PRId64, l->pid, l->tid);
            l->name = dup_str(buf);
            if (l->name == NULL) return fail(r->err, r->errsz, "out of memory");
        }
        classify_lane(l);
    }
    if (sort_lanes(r) != 0) return -1;
    if (f->core_count == 0)
        for (size_t i = 0; i < f->nlanes; i++)
            if (f->lanes[i].kind == KCTX_DFX_LANE_CORE) f->core_count++;
    return 0;
}

/* ---- entry points ---------------------------------------------------------- */

const kctx_dfx_callable_names *kctx_dfx_trace_callable(const kctx_dfx_trace_file *f, uint64_t id) {
    if (f == NULL || f->ncallables == 0) return NULL;
    kctx_dfx_callable_names key = {.id = id};
    return bsearch(&key, f->callables, f->ncallables, sizeof key, cmp_callable_id);
}

void kctx_dfx_trace_file_free(kctx_dfx_trace_file *f) {
    if (f == NULL) return;
    for (size_t i = 0; i < f->ncallables; i++) callable_names_free(&f->callables[i]);
    free(f->callables);
    for (size_t i = 0; i < f->nlanes; i++) free(f->lanes[i].name);
    for (size_t i = 0; i < f->nspans; i++) {
        free(f->spans[i].name);
        free(f->spans[i].callable_name);
        free(f->spans[i].kernel);
        free(f->spans[i].status_name);
    }
    free(f->device_na);
    free(f->lanes);
    free(f->spans);
    free(f->process_name);
    memset(f, 0, sizeof *f);
}

int kctx_dfx_trace_parse(const char *text, size_t len, kctx_dfx_trace_file *out, char *err,
                         size_t errsz) {
    memset(out, 0, sizeof *out);
    if (err != NULL && errsz > 0) err[0] = '\0';
    reader r = {.f = out, .err = err, .errsz = errsz, .text = text, .len = len};
    int rc;
    skip_ws(&r);
    if (r.off < len && text[r.off] == '{')
        rc = read_outer_object(&r);
    else if (r.off < len && text[r.off] == '[')
        rc = read_events(&r); /* the array form */
    else if (r.off >= len)
        rc = syntax(&r, r.off, "empty input");
    else
        rc = fail(err, errsz, "not a Chrome trace: expected an object or an array");
    if (rc == 0) {
        skip_ws(&r);
        if (r.off < len) rc = syntax(&r, r.off, "unexpected data after the trace");
    }
    if (rc == 0) rc = finish(&r);
    free(r.index);
    if (rc != 0) kctx_dfx_trace_file_free(out);
    return rc;
}

int kctx_dfx_trace_read(const char *path, kctx_dfx_trace_file *out, char *err, size_t errsz) {
    memset(out, 0, sizeof *out);
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (in == NULL) return fail(err, errsz, "cannot open: %s", strerror(errno));
    size_t cap = 1u << 16, len = 0;
    char *buf = malloc(cap);
    int rc = 0;
    while (buf != NULL) {
        if (len == cap) {
            char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (nb == NULL) break;
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, in);
        len += got;
        if (got == 0) break;
    }
    if (buf == NULL || (len == cap && !feof(in)))
        rc = fail(err, errsz, "out of memory reading the file");
    else if (ferror(in))
        rc = fail(err, errsz, "cannot read: %s", strerror(errno));
    if (in != stdin) fclose(in);
    if (rc == 0) rc = kctx_dfx_trace_parse(buf, len, out, err, errsz);
    free(buf);
    return rc;
}
