/*
 * cmd_trace.c — `kctx trace summarize FILE [--json]` and `kctx trace render
 * FILE -o OUT.svg`: a kctx trace (Chrome trace-event JSON, docs/tracing.md)
 * as numbers or as a swimlane picture. The file is read by src/dfx's
 * reader, which rejects anything malformed before either view sees it.
 */
#include "commands.h"
#include "json.h"
#include "util.h"

#include "trace.h"
#include "trace_read.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_JSON = 1,
    OPT_OUTPUT,
    OPT_WIDTH
};

static const cli_option trace_options[] = {
    {OPT_JSON, "json", 0, NULL, "summarize: print a JSON document instead of text"},
    {OPT_OUTPUT, "output", 'o', "OUT.svg", "render: where to write the picture (\"-\": stdout)"},
    {OPT_WIDTH, "width", 0, "PX", "render: picture width in pixels (400..20000; default 1600)"},
    {0, NULL, 0, NULL, NULL}};

static const char *const host_kind_names[] = {"?", "init", "prepare", "launch", "close", "flush"};

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

/* "950 ns", "12.345 us", "1.500 ms", "2.000 s". */
static const char *fmt_ns(char *buf, size_t n, uint64_t ns) {
    if (ns < 1000)
        snprintf(buf, n, "%" PRIu64 " ns", ns);
    else if (ns < 1000000)
        snprintf(buf, n, "%.3f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
    else
        snprintf(buf, n, "%.3f s", (double)ns / 1e9);
    return buf;
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
    printf("%12s %12s %12s", fmt_ns(a, sizeof a, st->min), fmt_ns(b, sizeof b, st->median),
           fmt_ns(c, sizeof c, st->max));
}

static void print_callable(const sample *sm) {
    if (sm->k[0])
        printf("  %-20s", "(unknown)");
    else
        printf("  %-20" PRIu64, sm->k[1]);
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
    printf("  process   %s\n", f->process_name ? f->process_name : "(unnamed)");
    printf("  span      %s, %zu spans on %zu lanes\n", fmt_ns(a, sizeof a, span_ns(s)), f->nspans,
           f->nlanes);
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
        printf("  %-20s %8zu ", host_kind_names[k], st.count);
        print_stats_cols(&st);
        printf("\n");
    }

    printf("\ncallables (host enqueue per launch; device = scheduler span per run):\n");
    printf("  %-20s %8s %12s %12s %12s %8s %12s %12s %12s\n", "callable", "launches", "enq min",
           "enq median", "enq max", "runs", "dev min", "dev median", "dev max");
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
        print_callable(key);
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

    printf("\ntasks (one span per block and run):\n  %-20s %6s %6s %8s %12s %12s %12s\n",
           "callable", "task", "func", "spans", "min", "median", "max");
    for (size_t k = 0; k < s->tasks.n;) {
        stats st;
        const sample *key = &s->tasks.s[k];
        k = group_stats(s->tasks.s, s->tasks.n, k, &st);
        print_callable(key);
        printf(" %6" PRIu64 " %6" PRIu64 " %8zu ", key->k[2], key->k[3], st.count);
        print_stats_cols(&st);
        printf("\n");
    }

    printf("\nlanes (busy time / trace span %s):\n  %-20s %8s %12s %12s\n",
           fmt_ns(a, sizeof a, span_ns(s)), "lane", "spans", "busy", "utilisation");
    for (size_t l = 0; l < f->nlanes; l++) {
        uint64_t p = ppm(s->lanes[l].busy, span_ns(s));
        printf("  %-20s %8zu %12s %11" PRIu64 ".%01" PRIu64 "%%\n", f->lanes[l].name,
               s->lanes[l].spans, fmt_ns(a, sizeof a, s->lanes[l].busy), p / 10000,
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
static void json_callable_groups(json_writer *w, const char *key, const sample_set *set) {
    json_array_begin(w, key);
    for (size_t i = 0; i < set->n;) {
        stats st;
        const sample *k = &set->s[i];
        i = group_stats(set->s, set->n, i, &st);
        json_object_begin(w, NULL);
        if (!k->k[0]) json_u64(w, "callable", k->k[1]);
        json_bool(w, "callable_known", !k->k[0]);
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
        json_string(&w, "kind", host_kind_names[k]);
        json_stats(&w, "duration", &st);
        json_object_end(&w);
    }
    json_array_end(&w);

    json_object_begin(&w, "callables");
    json_callable_groups(&w, "enqueue", &s->enqueue);
    json_callable_groups(&w, "device", &s->device);
    json_object_end(&w);

    json_array_begin(&w, "tasks");
    for (size_t i = 0; i < s->tasks.n;) {
        stats st;
        const sample *k = &s->tasks.s[i];
        i = group_stats(s->tasks.s, s->tasks.n, i, &st);
        json_object_begin(&w, NULL);
        if (!k->k[0]) json_u64(&w, "callable", k->k[1]);
        json_bool(&w, "callable_known", !k->k[0]);
        json_u64(&w, "task", k->k[2]);
        json_u64(&w, "func_id", k->k[3]);
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

/* ---- render --------------------------------------------------------------- */

enum {
    SVG_MARGIN = 12,
    SVG_LABEL_W = 150,
    SVG_HEADER_H = 74,
    SVG_LANE_H = 22,
    SVG_LANE_GAP = 6,
    SVG_LEGEND_ROW = 18
};

static const char *const host_colors[] = {"#9e9e9e", "#4e79a7", "#f28e2b",
                                          "#59a14f", "#76b7b2", "#edc948"};
#define SCHED_COLOR "#9c755f"
#define REFUSED_COLOR "#e15759"
#define OTHER_COLOR "#bab0ac"

/* Tasks: one hue per function id (golden-angle steps keep neighbours
 * apart), away from the fixed colours' lightness. */
static void task_color(char *buf, size_t n, uint32_t func_id) {
    double h = fmod(200.0 + (double)func_id * 137.508, 360.0);
    snprintf(buf, n, "hsl(%.0f,55%%,62%%)", h);
}

static void span_color(char *buf, size_t n, const kctx_dfx_span *sp) {
    switch (sp->cls) {
    case KCTX_DFX_SPAN_HOST:
        snprintf(buf, n, "%s", host_colors[sp->host_kind <= KCTX_DFX_FLUSH ? sp->host_kind : 0]);
        break;
    case KCTX_DFX_SPAN_SCHED:
        snprintf(buf, n, SCHED_COLOR);
        break;
    case KCTX_DFX_SPAN_TASK:
        task_color(buf, n, sp->func_id);
        break;
    case KCTX_DFX_SPAN_REFUSED:
        snprintf(buf, n, REFUSED_COLOR);
        break;
    default:
        snprintf(buf, n, OTHER_COLOR);
        break;
    }
}

static void xml_text(FILE *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            /* XML 1.0 forbids most control characters, even escaped. */
            fputc((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' ? '?' : *s, out);
        }
    }
}

/* The tick step: 1, 2 or 5 times a power of ten, giving at most ~12 ticks. */
static uint64_t tick_step(uint64_t range) {
    uint64_t step = 1;
    for (;;) {
        static const uint64_t m[] = {1, 2, 5};
        for (int i = 0; i < 3; i++)
            if (range / (step * m[i]) <= 12) return step * m[i];
        if (step > UINT64_MAX / 100) return step * 10;
        step *= 10;
    }
}

static void tick_label(char *buf, size_t n, uint64_t t, uint64_t step) {
    const char *unit = "ns";
    double div = 1;
    if (step >= 1000000000) {
        unit = "s";
        div = 1e9;
    } else if (step >= 1000000) {
        unit = "ms";
        div = 1e6;
    } else if (step >= 1000) {
        unit = "us";
        div = 1e3;
    }
    snprintf(buf, n, "%g %s", (double)t / div, unit);
}

/* A box on a lane: one span, or several merged below pixel resolution.
 * A merged box is drawn in the colour that holds most of its busy time
 * (of the first BOX_COLORS colours met; rarer ones only count in `busy`). */
enum {
    BOX_COLORS = 8
};
typedef struct box {
    double x0, x1;
    size_t first; /* span index */
    size_t count;
    uint64_t busy;
    int ncolors;
    char color[BOX_COLORS][32];
    uint64_t color_busy[BOX_COLORS];
} box;

static void box_add_color(box *b, const char *color, uint64_t busy) {
    for (int i = 0; i < b->ncolors; i++)
        if (strcmp(b->color[i], color) == 0) {
            b->color_busy[i] += busy;
            return;
        }
    if (b->ncolors == BOX_COLORS) return;
    snprintf(b->color[b->ncolors], sizeof b->color[0], "%s", color);
    b->color_busy[b->ncolors++] = busy;
}

static const char *box_color(const box *b) {
    int best = 0;
    for (int i = 1; i < b->ncolors; i++)
        if (b->color_busy[i] > b->color_busy[best]) best = i;
    return b->color[best];
}

typedef struct canvas {
    FILE *out;
    const kctx_dfx_trace_file *f;
    double x0, w; /* plot area */
    uint64_t t0, range;
    size_t merged; /* spans drawn inside another box (below pixel resolution) */
} canvas;

static double xpos(const canvas *cv, uint64_t t) {
    return cv->x0 + (double)(t - cv->t0) * cv->w / (double)cv->range;
}

static void put_box(canvas *cv, const box *b, double y) {
    const kctx_dfx_span *sp = &cv->f->spans[b->first];
    char a[32], d[32];
    double w = b->x1 - b->x0 < 0.5 ? 0.5 : b->x1 - b->x0;
    fprintf(cv->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"", b->x0,
            y, w, SVG_LANE_H, box_color(b));
    /* Refused replays stand out; wide neighbours keep a visible border. */
    if (b->count == 1 && sp->cls == KCTX_DFX_SPAN_REFUSED)
        fputs(" stroke=\"#7f0000\" stroke-width=\"1\"", cv->out);
    else if (w >= 4)
        fputs(" stroke=\"#ffffff\" stroke-width=\"0.6\"", cv->out);
    fputs("><title>", cv->out);
    if (b->count > 1) {
        fprintf(cv->out, "%zu spans below pixel resolution, busy %s; first: ", b->count,
                fmt_ns(a, sizeof a, b->busy));
    }
    xml_text(cv->out, sp->name);
    fprintf(cv->out, " at %s for %s", fmt_ns(a, sizeof a, sp->ts), fmt_ns(d, sizeof d, sp->dur));
    if (sp->has_callable) fprintf(cv->out, ", callable %" PRIu64, sp->callable);
    if (sp->has_launch) fprintf(cv->out, ", launch %" PRIu64, sp->launch);
    if (sp->has_status) fprintf(cv->out, ", status %" PRIu32, sp->status);
    fputs("</title></rect>\n", cv->out);
    /* A label when it fits (about 6.2 px per character at 11 px). */
    size_t len = strlen(sp->name);
    if (b->count == 1 && w >= 6.2 * (double)len + 8) {
        fprintf(cv->out, "<text x=\"%.2f\" y=\"%.1f\" fill=\"#000\" pointer-events=\"none\">",
                b->x0 + 4, y + SVG_LANE_H / 2 + 4);
        xml_text(cv->out, sp->name);
        fputs("</text>\n", cv->out);
    }
}

/* One lane's spans, in time order. Boxes narrower than two pixels that
 * touch are merged (whatever their kinds: a pixel cannot show several), so
 * a long trace stays a picture a browser can open. */
static void draw_lane(canvas *cv, size_t lane, double y, const size_t *order, size_t n,
                      size_t *pos) {
    box cur;
    int have = 0;
    for (; *pos < n && cv->f->spans[order[*pos]].lane == lane; ++*pos) {
        size_t k = *pos;
        const kctx_dfx_span *sp = &cv->f->spans[order[k]];
        char color[32];
        span_color(color, sizeof color, sp);
        double x0 = xpos(cv, sp->ts), x1 = xpos(cv, sp->ts + sp->dur);
        if (have && x1 - x0 < 2 && cur.x1 - cur.x0 < 2 && x0 <= cur.x1 + 1) {
            if (x1 > cur.x1) cur.x1 = x1;
            box_add_color(&cur, color, sp->dur);
            cur.count++;
            cur.busy += sp->dur;
            cv->merged++;
            continue;
        }
        if (have) put_box(cv, &cur, y);
        cur.x0 = x0;
        cur.x1 = x1;
        cur.first = order[k];
        cur.count = 1;
        cur.busy = sp->dur;
        cur.ncolors = 0;
        box_add_color(&cur, color, sp->dur);
        have = 1;
    }
    if (have) put_box(cv, &cur, y);
}

static const kctx_dfx_span *g_sort_spans; /* qsort has no context argument */
static int cmp_span_order(const void *a, const void *b) {
    const kctx_dfx_span *x = &g_sort_spans[*(const size_t *)a],
                        *y = &g_sort_spans[*(const size_t *)b];
    if (x->lane != y->lane) return (x->lane > y->lane) - (x->lane < y->lane);
    if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
    /* Longer first: a parent under its children. */
    if (x->dur != y->dur) return (x->dur < y->dur) - (x->dur > y->dur);
    return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void legend_item(FILE *out, double *x, double y, const char *color, const char *label) {
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" fill=\"%s\"/>", *x, y - 10,
            color);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", *x + 18, y);
    xml_text(out, label);
    fputs("</text>\n", out);
    *x += 18 + 6.2 * (double)strlen(label) + 16;
}

static int render(FILE *out, const kctx_dfx_trace_file *f, unsigned width) {
    size_t n = f->nspans;
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    uint32_t *funcs = malloc((n ? n : 1) * sizeof *funcs);
    if (order == NULL || funcs == NULL) {
        free(order);
        free(funcs);
        return -1;
    }
    uint64_t t0 = n ? UINT64_MAX : 0, t1 = 0;
    size_t nfuncs = 0;
    int kinds_seen[KCTX_DFX_FLUSH + 1] = {0}, sched_seen = 0, refused_seen = 0, other_seen = 0;
    for (size_t i = 0; i < n; i++) {
        const kctx_dfx_span *sp = &f->spans[i];
        order[i] = i;
        if (sp->ts < t0) t0 = sp->ts;
        if (sp->ts + sp->dur > t1) t1 = sp->ts + sp->dur;
        if (sp->cls == KCTX_DFX_SPAN_TASK) funcs[nfuncs++] = sp->func_id;
        if (sp->cls == KCTX_DFX_SPAN_HOST) kinds_seen[sp->host_kind] = 1;
        sched_seen |= sp->cls == KCTX_DFX_SPAN_SCHED;
        refused_seen |= sp->cls == KCTX_DFX_SPAN_REFUSED;
        other_seen |= sp->cls == KCTX_DFX_SPAN_OTHER;
    }
    g_sort_spans = f->spans;
    qsort(order, n, sizeof *order, cmp_span_order);
    qsort(funcs, nfuncs, sizeof *funcs, cmp_u32);
    size_t nf = 0;
    for (size_t i = 0; i < nfuncs; i++)
        if (nf == 0 || funcs[nf - 1] != funcs[i]) funcs[nf++] = funcs[i];

    canvas cv = {out,
                 f,
                 SVG_MARGIN + SVG_LABEL_W,
                 (double)width - 2 * SVG_MARGIN - SVG_LABEL_W - 8,
                 t0,
                 t1 > t0 ? t1 - t0 : 1000,
                 0};
    double lanes_y = SVG_HEADER_H;
    double lanes_h = (double)f->nlanes * (SVG_LANE_H + SVG_LANE_GAP);
    double legend_y = lanes_y + lanes_h + 24;
    double height = legend_y + 3 * SVG_LEGEND_ROW + SVG_MARGIN;

    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%.0f\" viewBox=\"0 0 "
            "%u %.0f\" "
            "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"11\">\n",
            width, height, width, height);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%.0f\" fill=\"#ffffff\"/>\n", width,
            height);

    /* Title and the drop counts (never silent). */
    char a[32];
    fprintf(out, "<text x=\"%d\" y=\"20\" font-size=\"14\" font-weight=\"bold\">", SVG_MARGIN);
    xml_text(out, f->process_name ? f->process_name : "kctx trace");
    fprintf(out,
            "</text>\n<text x=\"%d\" y=\"36\" fill=\"#444\">%zu spans on %zu lanes, %s</text>\n",
            SVG_MARGIN, n, f->nlanes, fmt_ns(a, sizeof a, t1 - t0));
    if (!f->has_drops)
        fprintf(out,
                "<text x=\"%d\" y=\"36\" dx=\"360\" fill=\"#b00\">drop counts unknown</text>\n",
                SVG_MARGIN);
    else if (f->host_dropped || f->dev_dropped)
        fprintf(out,
                "<text x=\"%d\" y=\"36\" dx=\"360\" fill=\"#b00\" font-weight=\"bold\">WARNING: "
                "%" PRIu64 " host spans and %" PRIu64
                " device records dropped (buffers full): the trace is incomplete</text>\n",
                SVG_MARGIN, f->host_dropped, f->dev_dropped);
    else
        fprintf(out, "<text x=\"%d\" y=\"36\" dx=\"360\" fill=\"#444\">nothing dropped</text>\n",
                SVG_MARGIN);

    /* Time axis: ticks and grid lines across the lanes. */
    uint64_t step = tick_step(cv.range);
    double axis_y = SVG_HEADER_H - 10;
    fprintf(out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#000\"/>\n", cv.x0,
            axis_y, cv.x0 + cv.w, axis_y);
    for (uint64_t t = 0; t <= cv.range; t += step) {
        double x = xpos(&cv, t0 + t);
        char lbl[32];
        tick_label(lbl, sizeof lbl, t, step);
        fprintf(out,
                "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#000\"/>"
                "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>"
                "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x, axis_y - 4, x, axis_y, x, lanes_y, x, lanes_y + lanes_h, x, axis_y - 7, lbl);
        if (t > UINT64_MAX - step) break;
    }

    /* Lanes (`order` is sorted by lane, then time). */
    size_t pos = 0;
    for (size_t l = 0; l < f->nlanes; l++) {
        double y = lanes_y + (double)l * (SVG_LANE_H + SVG_LANE_GAP);
        fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>\n",
                cv.x0, y, cv.w, SVG_LANE_H, l % 2 ? "#f4f4f4" : "#fafafa");
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-weight=\"bold\">", SVG_MARGIN,
                y + SVG_LANE_H / 2 + 4);
        xml_text(out, f->lanes[l].name);
        fputs("</text>\n", out);
        draw_lane(&cv, l, y, order, n, &pos);
    }

    /* Legend: the kinds present, then one swatch per function id. */
    double x = SVG_MARGIN, y = legend_y;
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">legend</text>\n", x, y);
    x += 60;
    for (uint32_t k = KCTX_DFX_INIT; k <= KCTX_DFX_FLUSH; k++)
        if (kinds_seen[k]) legend_item(out, &x, y, host_colors[k], host_kind_names[k]);
    if (sched_seen) legend_item(out, &x, y, SCHED_COLOR, "scheduler (AICPU)");
    if (refused_seen) legend_item(out, &x, y, REFUSED_COLOR, "refused replay");
    if (other_seen) legend_item(out, &x, y, OTHER_COLOR, "other");
    x = SVG_MARGIN + 60;
    y += SVG_LEGEND_ROW;
    for (size_t i = 0; i < nf && i < 24; i++) {
        char col[32], lbl[32];
        task_color(col, sizeof col, funcs[i]);
        snprintf(lbl, sizeof lbl, "task f%" PRIu32, funcs[i]);
        legend_item(out, &x, y, col, lbl);
    }
    if (nf > 24)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">and %zu more functions</text>\n", x, y, nf - 24);
    y += SVG_LEGEND_ROW;
    fprintf(out, "<text x=\"%d\" y=\"%.1f\" fill=\"#666\">hover a box for its details",
            SVG_MARGIN + 60, y);
    if (cv.merged)
        fprintf(out,
                "; %zu spans narrower than a pixel are merged into their neighbours (coloured by "
                "the kind with "
                "the most busy time)",
                cv.merged);
    fputs("; open the JSON in Perfetto to zoom</text>\n</svg>\n", out);
    free(order);
    free(funcs);
    return ferror(out) ? -1 : 0;
}

static int write_svg(const char *path, const kctx_dfx_trace_file *f, unsigned width) {
    char *buf = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&buf, &size);
    if (mem == NULL) {
        fprintf(stderr, "kctx trace: out of memory\n");
        return CLI_EXIT_FAILURE;
    }
    int rc = render(mem, f, width);
    if (fclose(mem) != 0 || rc != 0) {
        free(buf);
        fprintf(stderr, "kctx trace: out of memory rendering the picture\n");
        return CLI_EXIT_FAILURE;
    }
    if (strcmp(path, "-") == 0) {
        fwrite(buf, 1, size, stdout);
        free(buf);
        return CLI_EXIT_OK;
    }
    const char *what = NULL;
    if (util_write_file_atomic(path, buf, size, &what) != 0) {
        fprintf(stderr, "%s: error: cannot %s: %s\n", path, what ? what : "write", strerror(errno));
        free(buf);
        return CLI_EXIT_FAILURE;
    }
    free(buf);
    return CLI_EXIT_OK;
}

int kctx_trace_render_file(const char *trace_path, const char *svg_path) {
    kctx_dfx_trace_file f;
    char err[512];
    if (kctx_dfx_trace_read(trace_path, &f, err, sizeof err) != 0) {
        fprintf(stderr, "%s: error: %s\n", trace_path, err);
        return CLI_EXIT_FAILURE;
    }
    int rc = write_svg(svg_path, &f, 1600);
    kctx_dfx_trace_file_free(&f);
    return rc;
}

/* ---- the command ----------------------------------------------------------- */

static int run_trace(const cli_command *cmd, int argc, char **argv) {
    const char *action = NULL, *path = NULL, *output = NULL;
    int as_json = 0;
    unsigned width = 1600;
    cli_parser p;
    int opt;
    cli_parser_init(&p, cmd, argc, argv);
    while ((opt = cli_next(&p)) != CLI_END) {
        switch (opt) {
        case CLI_HELP:
            cli_print_help(cmd, stdout);
            return CLI_EXIT_OK;
        case CLI_BAD:
            return CLI_EXIT_USAGE;
        case OPT_JSON:
            as_json = 1;
            break;
        case OPT_OUTPUT:
            output = p.value;
            break;
        case OPT_WIDTH: {
            char *end = NULL;
            errno = 0;
            unsigned long v = strtoul(p.value, &end, 10);
            if (errno != 0 || end == p.value || *end != '\0' || v < 400 || v > 20000)
                return cli_usage_error(
                    cmd, "--width must be a number of pixels in 400..20000, not '%s'", p.value);
            width = (unsigned)v;
            break;
        }
        case CLI_POSITIONAL:
            if (action == NULL)
                action = p.value;
            else if (path == NULL)
                path = p.value;
            else
                return cli_usage_error(cmd, "unexpected argument '%s' (one FILE only)", p.value);
            break;
        default:
            return cli_usage_error(cmd, "internal error: option %d", opt);
        }
    }
    if (action == NULL) return cli_usage_error(cmd, "missing the action (summarize or render)");
    int is_summary = strcmp(action, "summarize") == 0, is_render = strcmp(action, "render") == 0;
    if (!is_summary && !is_render)
        return cli_usage_error(cmd, "unknown action '%s' (summarize or render)", action);
    if (path == NULL) return cli_usage_error(cmd, "missing FILE");
    if (is_summary && output != NULL) return cli_usage_error(cmd, "-o/--output is for render");
    if (is_render && as_json) return cli_usage_error(cmd, "--json is for summarize");
    if (is_render && output == NULL) return cli_usage_error(cmd, "render needs -o OUT.svg");

    kctx_dfx_trace_file f;
    char err[512];
    if (kctx_dfx_trace_read(path, &f, err, sizeof err) != 0) {
        fprintf(stderr, "%s: error: %s\n", path, err);
        return CLI_EXIT_FAILURE;
    }
    int rc = CLI_EXIT_OK;
    if (is_render) {
        rc = write_svg(output, &f, width);
    } else {
        summary s;
        if (summarize(&f, &s) != 0) {
            fprintf(stderr, "kctx trace: out of memory\n");
            rc = CLI_EXIT_FAILURE;
        } else {
            if (as_json)
                print_json(path, &s);
            else
                print_text(path, &s);
            summary_free(&s);
        }
    }
    kctx_dfx_trace_file_free(&f);
    return rc;
}

const cli_command kctx_cmd_trace = {
    .name = "trace",
    .summary = "Summarize a kctx trace or render it as a swimlane picture",
    .synopsis = "summarize FILE [--json] | render FILE -o OUT.svg [--width PX]",
    .description = "FILE is a trace kctx wrote (Chrome trace-event JSON; see docs/tracing.md);\n"
                   "\"-\" reads standard input. An unreadable or malformed file prints\n"
                   "    FILE: error: MESSAGE\n"
                   "on stderr and exits 1.\n"
                   "\n"
                   "summarize prints, per callable (by the callable id of its launches), the\n"
                   "host enqueue and device (scheduler) durations; per task (callable, task\n"
                   "index, function id), the per-block durations: count, min, median, max;\n"
                   "the number of launches and refused replays; the busy time and utilisation\n"
                   "of each lane (AICPU, every core, every host thread) over the trace's span;\n"
                   "and the dropped record counts. --json prints the same as one JSON document\n"
                   "(durations in ns, utilisation in parts per million).\n"
                   "\n"
                   "render writes an SVG swimlane picture: one lane per host thread, the AICPU\n"
                   "and each core; a box per span (coloured by kind, tasks by function id,\n"
                   "with a tooltip), a time axis and a legend. The file is written atomically.\n",
    .options = trace_options,
    .run = run_trace,
};
