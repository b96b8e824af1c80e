/*
 * cmd_trace_summarize.c — `kctx trace summarize FILE [--json]`: a kctx
 * trace as numbers (per callable, per task, per host record kind, per
 * lane), as text or as one JSON document. The command itself is
 * cmd_trace.c.
 */
#include "cli.h"
#include "cmd_trace.h"
#include "json.h"

#include "trace.h"
#include "trace_read.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *lane_kind_name(kctx_dfx_lane_kind k) {
    switch (k) {
    case KCTX_DFX_LANE_HOST:
        return "host";
    case KCTX_DFX_LANE_AICPU:
        return "aicpu";
    case KCTX_DFX_LANE_CORE:
        return "core";
    default:
        return "other";
    }
}

/* ---- statistics ----------------------------------------------------------- */

/* One duration under a group key; groups are runs of equal keys after a
 * sort, durations ascending inside a group. */
typedef struct sample {
    uint64_t k[4];
    uint64_t dur;
} sample;

static int cmp_sample(const void *a, const void *b) {
    const sample *x = a, *y = b;
    for (int i = 0; i < 4; i++)
        if (x->k[i] != y->k[i]) return (x->k[i] > y->k[i]) - (x->k[i] < y->k[i]);
    return (x->dur > y->dur) - (x->dur < y->dur);
}

typedef struct stats {
    size_t count;
    uint64_t min, median, max, total;
} stats;

/* Stats of the group starting at s[i]; returns the index after it. */
static size_t group_stats(const sample *s, size_t n, size_t i, stats *st) {
    size_t j = i;
    while (j < n && memcmp(s[j].k, s[i].k, sizeof s[i].k) == 0) j++;
    size_t c = j - i;
    st->count = c;
    st->min = s[i].dur;
    st->max = s[j - 1].dur;
    /* Even count: the mean of the two middle values. */
    uint64_t lo = s[i + (c - 1) / 2].dur, hi = s[i + c / 2].dur;
    st->median = lo + (hi - lo) / 2;
    st->total = 0;
    for (size_t k = i; k < j; k++) st->total += s[k].dur;
    return j;
}

typedef struct sample_set {
    sample *s;
    size_t n;
} sample_set;

/* The launch -> callable map, from the host launch spans. */
typedef struct launch_map {
    uint64_t launch, callable;
} launch_map;

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_launch(const void *a, const void *b) {
    uint64_t x = ((const launch_map *)a)->launch, y = ((const launch_map *)b)->launch;
    return (x > y) - (x < y);
}

typedef struct lane_use {
    size_t spans;
    uint64_t busy; /* union of the lane's spans */
} lane_use;

typedef struct summary {
    const kctx_dfx_trace_file *f;
    uint64_t t_min, t_max; /* first start, last end */
    size_t by_class[5];
    sample_set host;    /* k: host kind */
    sample_set enqueue; /* k: unknown?, callable (launch spans) */
    sample_set device;  /* k: unknown?, callable (scheduler spans) */
    sample_set tasks;   /* k: unknown?, callable, task, func_id */
    lane_use *lanes;
    size_t distinct_launches;
} summary;

typedef struct interval {
    size_t lane;
    uint64_t t0, t1;
} interval;

static int cmp_interval(const void *a, const void *b) {
    const interval *x = a, *y = b;
    if (x->lane != y->lane) return (x->lane > y->lane) - (x->lane < y->lane);
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

static void summary_free(summary *s) {
    free(s->host.s);
    free(s->enqueue.s);
    free(s->device.s);
    free(s->tasks.s);
    free(s->lanes);
}

static int summarize(const kctx_dfx_trace_file *f, summary *s) {
    memset(s, 0, sizeof *s);
    s->f = f;
    size_t n = f->nspans, cap = n ? n : 1;
    s->host.s = malloc(cap * sizeof(sample));
    s->enqueue.s = malloc(cap * sizeof(sample));
    s->device.s = malloc(cap * sizeof(sample));
    s->tasks.s = malloc(cap * sizeof(sample));
    s->lanes = calloc(f->nlanes ? f->nlanes : 1, sizeof *s->lanes);
    launch_map *map = malloc(cap * sizeof *map);
    interval *iv = malloc(cap * sizeof *iv);
    uint64_t *launches = malloc(cap * sizeof *launches);
    if (!s->host.s || !s->enqueue.s || !s->device.s || !s->tasks.s || !s->lanes || !map || !iv ||
        !launches) {
        free(map);
        free(iv);
        free(launches);
        summary_free(s);
        return -1;
    }
    size_t nmap = 0, nlaunches = 0;
    s->t_min = n ? UINT64_MAX : 0;
    for (size_t i = 0; i < n; i++) {
        const kctx_dfx_span *sp = &f->spans[i];
        uint64_t end = sp->ts + sp->dur;
        if (sp->ts < s->t_min) s->t_min = sp->ts;
        if (end > s->t_max) s->t_max = end;
        s->by_class[sp->cls]++;
        iv[i] = (interval){sp->lane, sp->ts, end};
        s->lanes[sp->lane].spans++;
        if (sp->cls == KCTX_DFX_SPAN_HOST) {
            s->host.s[s->host.n++] = (sample){{sp->host_kind, 0, 0, 0}, sp->dur};
            if (sp->host_kind == KCTX_DFX_LAUNCH) {
                s->enqueue.s[s->enqueue.n++] =
                    (sample){{!sp->has_callable, sp->callable, 0, 0}, sp->dur};
                if (sp->has_callable && sp->has_launch)
                    map[nmap++] = (launch_map){sp->launch, sp->callable};
            }
        }
        if (sp->cls == KCTX_DFX_SPAN_SCHED && sp->has_launch) launches[nlaunches++] = sp->launch;
    }
    qsort(map, nmap, sizeof *map, cmp_launch);
    qsort(launches, nlaunches, sizeof *launches, cmp_u64);
    for (size_t i = 0; i < nlaunches; i++)
        if (i == 0 || launches[i] != launches[i - 1]) s->distinct_launches++;

    /* Device spans take their callable from the launch that ran them: a
     * captured launch replayed N times is N scheduler spans of one id. */
    for (size_t i = 0; i < n; i++) {
        const kctx_dfx_span *sp = &f->spans[i];
        if (sp->cls != KCTX_DFX_SPAN_SCHED && sp->cls != KCTX_DFX_SPAN_TASK) continue;
        launch_map key = {sp->launch, 0};
        const launch_map *m =
            sp->has_launch ? bsearch(&key, map, nmap, sizeof key, cmp_launch) : NULL;
        uint64_t unknown = m == NULL, callable = m ? m->callable : 0;
        if (sp->cls == KCTX_DFX_SPAN_SCHED)
            s->device.s[s->device.n++] = (sample){{unknown, callable, 0, 0}, sp->dur};
        else
            s->tasks.s[s->tasks.n++] =
                (sample){{unknown, callable, sp->task, sp->func_id}, sp->dur};
    }
    qsort(s->host.s, s->host.n, sizeof(sample), cmp_sample);
    qsort(s->enqueue.s, s->enqueue.n, sizeof(sample), cmp_sample);
    qsort(s->device.s, s->device.n, sizeof(sample), cmp_sample);
    qsort(s->tasks.s, s->tasks.n, sizeof(sample), cmp_sample);

    /* Busy time per lane: the union of its spans (nested or overlapping
     * spans are counted once). */
    qsort(iv, n, sizeof *iv, cmp_interval);
    for (size_t i = 0; i < n;) {
        size_t lane = iv[i].lane;
        uint64_t a = iv[i].t0, b = iv[i].t1;
        for (i++; i < n && iv[i].lane == lane; i++) {
            if (iv[i].t0 > b) {
                s->lanes[lane].busy += b - a;
                a = iv[i].t0;
                b = iv[i].t1;
            } else if (iv[i].t1 > b) {
                b = iv[i].t1;
            }
        }
        s->lanes[lane].busy += b - a;
    }
    free(map);
    free(iv);
    free(launches);
    return 0;
}

static uint64_t span_ns(const summary *s) { return s->t_max - s->t_min; }

/* Busy share in parts per million, rounded. */
static uint64_t ppm(uint64_t busy, uint64_t span) {
    if (span == 0) return 0;
    return (uint64_t)((long double)busy * 1000000.0L / (long double)span + 0.5L);
}

/* ---- summarize: text ------------------------------------------------------ */

static void print_stats_cols(const stats *st) {
    char a[32], b[32], c[32];
    printf("%12s %12s %12s", trace_fmt_ns(a, sizeof a, st->min),
           trace_fmt_ns(b, sizeof b, st->median), trace_fmt_ns(c, sizeof c, st->max));
}

enum {
    CALLABLE_COL = 32, /* "ID NAME" */
    KERNEL_COL = 40
};

/* The callable's image name from the trace's names table, else NULL. */
static const char *callable_name(const kctx_dfx_trace_file *f, const sample *sm) {
    const kctx_dfx_callable_names *c = sm->k[0] ? NULL : kctx_dfx_trace_callable(f, sm->k[1]);
    return c ? c->name : NULL;
}

/* Function `func_id`'s kernel (entry) name in the callable, else NULL. */
static const char *kernel_name(const kctx_dfx_trace_file *f, const sample *sm) {
    const kctx_dfx_callable_names *c = sm->k[0] ? NULL : kctx_dfx_trace_callable(f, sm->k[1]);
    return c && sm->k[3] < c->nkernels ? c->kernels[sm->k[3]] : NULL;
}

/* The callable column: "ID NAME" (the name escaped and cut to fit), the id
 * alone when the trace has no names, "(unknown)" without a launch span. */
static void print_callable(const kctx_dfx_trace_file *f, const sample *sm) {
    int cols;
    if (sm->k[0]) {
        cols = printf("  %s", "(unknown)") - 2;
    } else {
        cols = printf("  %" PRIu64, sm->k[1]) - 2;
        const char *name = callable_name(f, sm);
        if (name && cols + 1 < CALLABLE_COL) {
            fputc(' ', stdout);
            cols += 1 + (int)trace_put_text(stdout, name, (size_t)(CALLABLE_COL - cols - 1));
        }
    }
    printf("%*s", cols < CALLABLE_COL ? CALLABLE_COL - cols : 0, "");
}

/* Order of the callable groupings: known ids ascending, unknown last. */
static int cmp_callable_key(const sample *x, const sample *y) {
    if (x->k[0] != y->k[0]) return (x->k[0] > y->k[0]) - (x->k[0] < y->k[0]);
    return (x->k[1] > y->k[1]) - (x->k[1] < y->k[1]);
}

static void print_text(const char *path, const summary *s) {
    const kctx_dfx_trace_file *f = s->f;
    char a[32];
    printf("trace %s\n", path);
    fputs("  process   ", stdout);
    trace_put_text(stdout, f->process_name ? f->process_name : "(unnamed)", 0);
    fputc('\n', stdout);
    printf("  span      %s, %zu spans on %zu lanes\n", trace_fmt_ns(a, sizeof a, span_ns(s)),
           f->nspans, f->nlanes);
    printf("  spans     %zu host, %zu scheduler, %zu task, %zu refused replay, %zu other\n",
           s->by_class[KCTX_DFX_SPAN_HOST], s->by_class[KCTX_DFX_SPAN_SCHED],
           s->by_class[KCTX_DFX_SPAN_TASK], s->by_class[KCTX_DFX_SPAN_REFUSED],
           s->by_class[KCTX_DFX_SPAN_OTHER]);
    if (!f->has_drops)
        printf("  dropped   unknown (the file has no drop counts: not written by kctx?)\n");
    else
        printf("  dropped   %" PRIu64 " host spans, %" PRIu64 " device records%s\n",
               f->host_dropped, f->dev_dropped,
               f->host_dropped || f->dev_dropped
                   ? "  WARNING: buffers were full, the trace is incomplete"
                   : "");

    printf("\nlaunches: %zu enqueued on the host, %zu run on the device (%zu distinct launch ids), "
           "%zu refused "
           "replay%s\n",
           s->enqueue.n, s->device.n, s->distinct_launches, s->by_class[KCTX_DFX_SPAN_REFUSED],
           s->by_class[KCTX_DFX_SPAN_REFUSED] == 1 ? "" : "s");

    printf("\nhost spans:\n  %-20s %8s %12s %12s %12s\n", "kind", "count", "min", "median", "max");
    for (size_t i = 0; i < s->host.n;) {
        stats st;
        uint64_t k = s->host.s[i].k[0];
        i = group_stats(s->host.s, s->host.n, i, &st);
        printf("  %-20s %8zu ", trace_host_kind_names[k], st.count);
        print_stats_cols(&st);
        printf("\n");
    }

    printf("\ncallables (host enqueue per launch; device = scheduler span per run):\n");
    printf("  %-*s %8s %12s %12s %12s %8s %12s %12s %12s\n", CALLABLE_COL, "callable", "launches",
           "enq min", "enq median", "enq max", "runs", "dev min", "dev median", "dev max");
    /* Merge the two sorted groupings by key. */
    size_t i = 0, j = 0;
    while (i < s->enqueue.n || j < s->device.n) {
        stats e = {0}, d = {0};
        int c;
        if (i >= s->enqueue.n)
            c = 1;
        else if (j >= s->device.n)
            c = -1;
        else
            c = cmp_callable_key(&s->enqueue.s[i], &s->device.s[j]);
        const sample *key = c <= 0 ? &s->enqueue.s[i] : &s->device.s[j];
        print_callable(f, key);
        if (c <= 0) {
            i = group_stats(s->enqueue.s, s->enqueue.n, i, &e);
            printf(" %8zu ", e.count);
            print_stats_cols(&e);
        } else {
            printf(" %8s %12s %12s %12s", "-", "-", "-", "-");
        }
        if (c >= 0) {
            j = group_stats(s->device.s, s->device.n, j, &d);
            printf(" %8zu ", d.count);
            print_stats_cols(&d);
        } else {
            printf(" %8s %12s %12s %12s", "-", "-", "-", "-");
        }
        printf("\n");
    }

    printf("\ntasks (one span per block and run):\n  %-*s %6s %6s %8s %12s %12s %12s  %s\n",
           CALLABLE_COL, "callable", "task", "func", "spans", "min", "median", "max", "kernel");
    for (size_t k = 0; k < s->tasks.n;) {
        stats st;
        const sample *key = &s->tasks.s[k];
        k = group_stats(s->tasks.s, s->tasks.n, k, &st);
        print_callable(f, key);
        printf(" %6" PRIu64 " %6" PRIu64 " %8zu ", key->k[2], key->k[3], st.count);
        print_stats_cols(&st);
        const char *kernel = kernel_name(f, key);
        fputs("  ", stdout);
        if (kernel)
            trace_put_text(stdout, kernel, KERNEL_COL);
        else
            fputc('-', stdout);
        printf("\n");
    }

    printf("\nlanes (busy time / trace span %s):\n  %-20s %8s %12s %12s\n",
           trace_fmt_ns(a, sizeof a, span_ns(s)), "lane", "spans", "busy", "utilisation");
    for (size_t l = 0; l < f->nlanes; l++) {
        uint64_t p = ppm(s->lanes[l].busy, span_ns(s));
        fputs("  ", stdout);
        size_t cols = trace_put_text(stdout, f->lanes[l].name, 60);
        printf("%*s %8zu %12s %11" PRIu64 ".%01" PRIu64 "%%\n", cols < 20 ? 20 - (int)cols : 0, "",
               s->lanes[l].spans, trace_fmt_ns(a, sizeof a, s->lanes[l].busy), p / 10000,
               (p / 1000) % 10);
    }
}

/* ---- summarize: JSON ------------------------------------------------------ */

static void json_stats(json_writer *w, const char *key, const stats *st) {
    json_object_begin(w, key);
    json_u64(w, "count", st->count);
    json_u64(w, "min_ns", st->min);
    json_u64(w, "median_ns", st->median);
    json_u64(w, "max_ns", st->max);
    json_u64(w, "total_ns", st->total);
    json_object_end(w);
}

/* Callable stats of one grouping, keyed like print_text's merge. */
static void json_callable_groups(json_writer *w, const kctx_dfx_trace_file *f, const char *key,
                                 const sample_set *set) {
    json_array_begin(w, key);
    for (size_t i = 0; i < set->n;) {
        stats st;
        const sample *k = &set->s[i];
        i = group_stats(set->s, set->n, i, &st);
        json_object_begin(w, NULL);
        if (!k->k[0]) json_u64(w, "callable", k->k[1]);
        json_bool(w, "callable_known", !k->k[0]);
        const char *name = callable_name(f, k);
        if (name) json_string(w, "name", name);
        json_stats(w, "duration", &st);
        json_object_end(w);
    }
    json_array_end(w);
}

static void print_json(const char *path, const summary *s) {
    const kctx_dfx_trace_file *f = s->f;
    json_writer w;
    json_init(&w, stdout);
    json_object_begin(&w, NULL);
    json_string(&w, "file", path);
    if (f->process_name) json_string(&w, "process", f->process_name);
    json_u64(&w, "span_ns", span_ns(s));
    if (f->has_base) json_u64(&w, "base_ns", f->base_ns);
    json_u64(&w, "core_count", f->core_count);

    json_object_begin(&w, "spans");
    json_u64(&w, "total", f->nspans);
    json_u64(&w, "host", s->by_class[KCTX_DFX_SPAN_HOST]);
    json_u64(&w, "scheduler", s->by_class[KCTX_DFX_SPAN_SCHED]);
    json_u64(&w, "task", s->by_class[KCTX_DFX_SPAN_TASK]);
    json_u64(&w, "refused_replay", s->by_class[KCTX_DFX_SPAN_REFUSED]);
    json_u64(&w, "other", s->by_class[KCTX_DFX_SPAN_OTHER]);
    json_u64(&w, "ignored_events", f->ignored);
    json_object_end(&w);

    json_object_begin(&w, "dropped");
    json_bool(&w, "known", f->has_drops);
    json_u64(&w, "host", f->host_dropped);
    json_u64(&w, "device", f->dev_dropped);
    json_object_end(&w);

    json_object_begin(&w, "launches");
    json_u64(&w, "enqueued", s->enqueue.n);
    json_u64(&w, "device_runs", s->device.n);
    json_u64(&w, "distinct_launch_ids", s->distinct_launches);
    json_u64(&w, "refused_replays", s->by_class[KCTX_DFX_SPAN_REFUSED]);
    json_object_end(&w);

    json_array_begin(&w, "host_spans");
    for (size_t i = 0; i < s->host.n;) {
        stats st;
        uint64_t k = s->host.s[i].k[0];
        i = group_stats(s->host.s, s->host.n, i, &st);
        json_object_begin(&w, NULL);
        json_string(&w, "kind", trace_host_kind_names[k]);
        json_stats(&w, "duration", &st);
        json_object_end(&w);
    }
    json_array_end(&w);

    json_object_begin(&w, "callables");
    json_callable_groups(&w, f, "enqueue", &s->enqueue);
    json_callable_groups(&w, f, "device", &s->device);
    json_object_end(&w);

    /* The trace's names table (otherData.callables), empty without one. */
    json_array_begin(&w, "callable_names");
    for (size_t i = 0; i < f->ncallables; i++) {
        const kctx_dfx_callable_names *c = &f->callables[i];
        json_object_begin(&w, NULL);
        json_u64(&w, "id", c->id);
        json_string(&w, "name", c->name);
        json_array_begin(&w, "kernels");
        for (uint32_t k = 0; k < c->nkernels; k++) json_string(&w, NULL, c->kernels[k]);
        json_array_end(&w);
        json_object_end(&w);
    }
    json_array_end(&w);

    json_array_begin(&w, "tasks");
    for (size_t i = 0; i < s->tasks.n;) {
        stats st;
        const sample *k = &s->tasks.s[i];
        i = group_stats(s->tasks.s, s->tasks.n, i, &st);
        json_object_begin(&w, NULL);
        if (!k->k[0]) json_u64(&w, "callable", k->k[1]);
        json_bool(&w, "callable_known", !k->k[0]);
        const char *name = callable_name(f, k), *kernel = kernel_name(f, k);
        if (name) json_string(&w, "callable_name", name);
        json_u64(&w, "task", k->k[2]);
        json_u64(&w, "func_id", k->k[3]);
        if (kernel) json_string(&w, "kernel", kernel);
        json_stats(&w, "duration", &st);
        json_object_end(&w);
    }
    json_array_end(&w);

    json_array_begin(&w, "lanes");
    for (size_t l = 0; l < f->nlanes; l++) {
        json_object_begin(&w, NULL);
        json_string(&w, "name", f->lanes[l].name);
        json_string(&w, "kind", lane_kind_name(f->lanes[l].kind));
        json_u64(&w, "spans", s->lanes[l].spans);
        json_u64(&w, "busy_ns", s->lanes[l].busy);
        json_u64(&w, "utilisation_ppm", ppm(s->lanes[l].busy, span_ns(s)));
        json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    fputc('\n', stdout);
}

/* ---- summarize: the entry point ------------------------------------------- */

int trace_summarize(const char *path, const kctx_dfx_trace_file *f, int as_json) {
    summary s;
    if (summarize(f, &s) != 0) {
        fprintf(stderr, "kctx trace: out of memory\n");
        return CLI_EXIT_FAILURE;
    }
    if (as_json)
        print_json(path, &s);
    else
        print_text(path, &s);
    summary_free(&s);
    return CLI_EXIT_OK;
}
