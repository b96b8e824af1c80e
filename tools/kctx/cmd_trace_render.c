/*
 * cmd_trace_render.c — `kctx trace render FILE -o OUT.svg`: a kctx trace
 * as an SVG swimlane picture; kctx_trace_render_file() is the same for
 * `kctx demo`. The command itself is cmd_trace.c.
 */
#include "cli.h"
#include "cmd_trace.h"
#include "commands.h"
#include "util.h"

#include "trace.h"
#include "trace_read.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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

/* A kernel named in the trace keeps one colour wherever it appears,
 * whatever its function id in a callable: the colour of its index in the
 * picture's sorted list of kernel names (g_kernels, set by render). */
static const char **g_kernels;
static size_t g_nkernels;

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static uint32_t kernel_index(const char *name) {
    const char **hit =
        g_nkernels ? bsearch(&name, g_kernels, g_nkernels, sizeof *g_kernels, cmp_str) : NULL;
    return hit ? (uint32_t)(hit - g_kernels) : 0;
}

static void kernel_color(char *buf, size_t n, const kctx_dfx_span *sp) {
    if (sp->kernel)
        task_color(buf, n, kernel_index(sp->kernel));
    else
        task_color(buf, n, sp->func_id);
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
        kernel_color(buf, n, sp);
        break;
    case KCTX_DFX_SPAN_REFUSED:
        snprintf(buf, n, REFUSED_COLOR);
        break;
    default:
        snprintf(buf, n, OTHER_COLOR);
        break;
    }
}

/* One character of untrusted text as XML character data (the file says
 * UTF-8): markup characters as entities, a byte that is not well-formed
 * UTF-8 as U+FFFD, and what XML 1.0 forbids even escaped (most C0
 * controls, U+FFFE, U+FFFF) or discourages (DEL, C1 controls) as '?'.
 * Returns the bytes of s consumed. */
static size_t xml_char(FILE *out, const char *s) {
    uint32_t c = 0;
    size_t n = trace_utf8_next(s, &c);
    if (n == 0) {
        fputs("&#xFFFD;", out);
        return 1;
    }
    switch (c) {
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
        if ((c < 0x20 && c != '\t' && c != '\n') || (c >= 0x7f && c <= 0x9f) || c == 0xfffe ||
            c == 0xffff)
            fputc('?', out);
        else
            fwrite(s, 1, n, out);
    }
    return n;
}

/* Characters (not bytes) in s, counting a malformed byte as one. */
static size_t text_chars(const char *s) {
    size_t count = 0;
    uint32_t c;
    for (size_t n; *s != '\0'; s += n ? n : 1, count++) n = trace_utf8_next(s, &c);
    return count;
}

/* s as XML text, at most `max` characters (0: all), a longer one cut with
 * "..."; returns the characters written (for the label's width). */
static size_t xml_text_max(FILE *out, const char *s, size_t max) {
    size_t total = text_chars(s);
    size_t room = max == 0 || total <= max ? total : max > 3 ? max - 3 : 0;
    for (size_t i = 0; i < room; i++) s += xml_char(out, s);
    if (room < total) fputs("...", out);
    return room < total ? room + 3 : total;
}

static void xml_text(FILE *out, const char *s) { xml_text_max(out, s, 0); }

/* Longest name shown: in a tooltip, on a box or in the legend. */
enum {
    NAME_TIP = 200,
    NAME_LABEL = 40
};

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
                trace_fmt_ns(a, sizeof a, b->busy));
    }
    if (sp->kernel) {
        xml_text_max(cv->out, sp->kernel, NAME_TIP);
        fputs(" (", cv->out);
        xml_text_max(cv->out, sp->name, NAME_TIP);
        fputs(")", cv->out);
    } else {
        xml_text_max(cv->out, sp->name, NAME_TIP);
    }
    fprintf(cv->out, " at %s for %s", trace_fmt_ns(a, sizeof a, sp->ts),
            trace_fmt_ns(d, sizeof d, sp->dur));
    if (sp->callable_name) {
        fputs(", callable ", cv->out);
        xml_text_max(cv->out, sp->callable_name, NAME_TIP);
        if (sp->has_callable) fprintf(cv->out, " (id %" PRIu64 ")", sp->callable);
    } else if (sp->has_callable) {
        fprintf(cv->out, ", callable %" PRIu64, sp->callable);
    }
    if (sp->has_launch) fprintf(cv->out, ", launch %" PRIu64, sp->launch);
    if (sp->status_name) {
        fputs(", ", cv->out);
        xml_text_max(cv->out, sp->status_name, NAME_TIP);
    } else if (sp->has_status) {
        fprintf(cv->out, ", status %" PRIu32, sp->status);
    }
    fputs("</title></rect>\n", cv->out);
    /* A label when it fits (about 6.2 px per character at 11 px): the
     * kernel's name for a task; "launch NAME" / "prepare NAME" for a span
     * of a callable the trace names, "launch ID" for one it does not; else
     * the span's name alone, which may fit where the longer one does not. */
    if (b->count != 1) return;
    const char *first = sp->kernel ? sp->kernel : sp->name, *second = NULL;
    char id[32] = "";
    if (!sp->kernel && sp->callable_name)
        second = sp->callable_name;
    else if (!sp->kernel && sp->has_callable)
        snprintf(id, sizeof id, "%" PRIu64, sp->callable), second = id;
    size_t n1 = text_chars(first), n2 = second ? text_chars(second) : 0;
    n1 = n1 > NAME_LABEL ? NAME_LABEL : n1;
    n2 = n2 > NAME_LABEL ? NAME_LABEL : n2;
    size_t len = n1 + (second ? 1 + n2 : 0);
    if (w < 6.2 * (double)len + 8 && (sp->kernel || second)) {
        first = sp->name; /* the short name may fit */
        second = NULL;
        len = n1 = text_chars(first) > NAME_LABEL ? NAME_LABEL : text_chars(first);
    }
    if (w < 6.2 * (double)len + 8) return;
    fprintf(cv->out, "<text x=\"%.2f\" y=\"%.1f\" fill=\"#000\" pointer-events=\"none\">",
            b->x0 + 4, y + SVG_LANE_H / 2 + 4);
    xml_text_max(cv->out, first, NAME_LABEL);
    if (second) {
        fputc(' ', cv->out);
        xml_text_max(cv->out, second, NAME_LABEL);
    }
    fputs("</text>\n", cv->out);
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
    size_t chars = xml_text_max(out, label, NAME_LABEL);
    fputs("</text>\n", out);
    *x += 18 + 6.2 * (double)chars + 16;
}

/* The width of legend_callable's entry, in pixels. */
static double legend_callable_w(uint64_t id, const char *name) {
    char digits[24];
    size_t chars = (size_t)snprintf(digits, sizeof digits, "%" PRIu64, id);
    if (name) {
        size_t n = text_chars(name);
        chars += 1 + (n > NAME_LABEL ? NAME_LABEL : n);
    }
    return 6.2 * (double)chars + 16;
}

/* A legend entry without a swatch: "ID NAME" (the name cut to fit), or the
 * id alone. */
static void legend_callable(FILE *out, double *x, double y, uint64_t id, const char *name) {
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%" PRIu64, *x, y, id);
    if (name) {
        fputc(' ', out);
        xml_text_max(out, name, NAME_LABEL);
    }
    fputs("</text>\n", out);
    *x += legend_callable_w(id, name);
}

/* ---- phases ------------------------------------------------------------ */

/* What the context was doing, from its spans: init, prepare, eager
 * launches, captures (launch spans whose launch id ran on the device other
 * than exactly once: a graph's replays carry the captured launch's id),
 * replays (the device runs of those ids), flush, close. */
enum {
    PH_INIT,
    PH_PREPARE,
    PH_EAGER,
    PH_CAPTURE,
    PH_REPLAY,
    PH_FLUSH,
    PH_CLOSE,
    PH_COUNT
};
static const char *const phase_names[PH_COUNT] = {
    "init", "prepare", "eager launches", "capture", "graph replays", "flush", "close"};
static const char *const phase_colors[PH_COUNT] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1",
                                                   "#ff9da7", "#edc948", "#76b7b2"};

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Device runs (scheduler spans) of launch id `id` in the sorted runs. */
static size_t runs_of(const uint64_t *runs, size_t n, uint64_t id) {
    const uint64_t *hit = bsearch(&id, runs, n, sizeof id, cmp_u64);
    if (!hit) return 0;
    const uint64_t *lo = hit, *hi = hit;
    while (lo > runs && lo[-1] == id) lo--;
    while (hi + 1 < runs + n && hi[1] == id) hi++;
    return (size_t)(hi - lo) + 1;
}

static int span_phase(const kctx_dfx_span *sp, const uint64_t *runs, size_t nruns,
                      int device_records) {
    if (sp->cls == KCTX_DFX_SPAN_HOST) {
        switch (sp->host_kind) {
        case KCTX_DFX_INIT:
            return PH_INIT;
        case KCTX_DFX_PREPARE:
            return PH_PREPARE;
        case KCTX_DFX_FLUSH:
            return PH_FLUSH;
        case KCTX_DFX_CLOSE:
            return PH_CLOSE;
        case KCTX_DFX_LAUNCH:
            return device_records && sp->has_launch && runs_of(runs, nruns, sp->launch) != 1
                       ? PH_CAPTURE
                       : PH_EAGER;
        default:
            return -1;
        }
    }
    if (sp->cls == KCTX_DFX_SPAN_SCHED && sp->has_launch && runs_of(runs, nruns, sp->launch) > 1)
        return PH_REPLAY;
    return -1;
}

/* One band: each phase's spans merged where they are closer than 3 px,
 * labelled where the label fits; a tooltip gives the count and time. */
static void draw_phases(canvas *cv, double y, const uint64_t *runs, size_t nruns,
                        int device_records, int seen[PH_COUNT]) {
    const kctx_dfx_trace_file *f = cv->f;
    for (int ph = 0; ph < PH_COUNT; ph++) {
        double x0 = 0, x1 = 0;
        size_t count = 0;
        uint64_t busy = 0;
        int open = 0;
        /* spans in time order within the phase: order by start (the file's
         * order is per lane; a phase comes from one kind of span) */
        for (size_t i = 0; i <= f->nspans; i++) {
            const kctx_dfx_span *sp = i < f->nspans ? &f->spans[i] : NULL;
            if (sp && span_phase(sp, runs, nruns, device_records) != ph) continue;
            double a = sp ? xpos(cv, sp->ts) : 0, b = sp ? xpos(cv, sp->ts + sp->dur) : 0;
            if (open && sp && a <= x1 + 3 && a >= x0) {
                if (b > x1) x1 = b;
                count++;
                busy += sp->dur;
                continue;
            }
            if (open) {
                char t[32];
                double w = x1 - x0 < 1 ? 1 : x1 - x0;
                fprintf(
                    cv->out,
                    "<rect class=\"phase\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" "
                    "fill=\"%s\" opacity=\"0.85\"><title>%s: %zu span%s, %s busy</title></rect>\n",
                    x0, y, w, phase_colors[ph], phase_names[ph], count, count == 1 ? "" : "s",
                    trace_fmt_ns(t, sizeof t, busy));
                if (w >= 6.2 * (double)strlen(phase_names[ph]) + 8)
                    fprintf(cv->out,
                            "<text x=\"%.2f\" y=\"%.1f\" pointer-events=\"none\">%s</text>\n",
                            x0 + 4, y + 11, phase_names[ph]);
                seen[ph] = 1;
            }
            if (!sp) break;
            open = 1;
            x0 = a;
            x1 = b;
            count = 1;
            busy = sp->dur;
        }
    }
}

enum {
    LEGEND_CALLABLES = 16
};

/* Whether an entry fits at x, leaving room for "and N more callables". */
static int legend_fits(double x, uint64_t id, const char *name, double xmax) {
    return x + legend_callable_w(id, name) + 6.2 * 24 <= xmax;
}

/* The callables row: "ID NAME" for each callable of the trace's names
 * table (otherData.callables), or, for a trace without one, the ids its
 * prepare and launch spans carry, alone; as many as fit left of xmax (at
 * most LEGEND_CALLABLES), then "and N more callables". Returns -1 when out
 * of memory. */
static int legend_callables(FILE *out, double *x, double y, const kctx_dfx_trace_file *f,
                            double xmax) {
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#444\">callables:</text>\n", *x, y);
    *x += 70;
    size_t shown = 0, total = 0;
    if (f->ncallables) {
        total = f->ncallables;
        for (const kctx_dfx_callable_names *c = f->callables;
             shown < total && shown < LEGEND_CALLABLES && legend_fits(*x, c->id, c->name, xmax);
             shown++, c++)
            legend_callable(out, x, y, c->id, c->name);
    } else {
        uint64_t *ids = malloc((f->nspans ? f->nspans : 1) * sizeof *ids);
        if (ids == NULL) return -1;
        size_t m = 0;
        for (size_t i = 0; i < f->nspans; i++)
            if (f->spans[i].cls == KCTX_DFX_SPAN_HOST && f->spans[i].has_callable)
                ids[m++] = f->spans[i].callable;
        qsort(ids, m, sizeof *ids, cmp_u64);
        for (size_t i = 0; i < m; i++) {
            if (i > 0 && ids[i] == ids[i - 1]) continue;
            if (shown == total && shown < LEGEND_CALLABLES && legend_fits(*x, ids[i], NULL, xmax))
                legend_callable(out, x, y, ids[i], NULL), shown++;
            total++;
        }
        free(ids);
    }
    if (total > shown)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">and %zu more callables</text>\n", *x, y,
                total - shown);
    else if (total == 0)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">none named</text>\n", *x, y);
    return 0;
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
    /* device runs per launch id (the phases), busy time per lane, and the
     * kernels named in the trace (the legend) */
    uint64_t *runs = malloc((n ? n : 1) * sizeof *runs);
    uint64_t *busy = calloc(f->nlanes ? f->nlanes : 1, sizeof *busy);
    const char **kernels = malloc((n ? n : 1) * sizeof *kernels);
    if (!runs || !busy || !kernels) {
        free(order);
        free(funcs);
        free(runs);
        free(busy);
        free(kernels);
        return -1;
    }
    size_t nruns = 0, nkernels = 0;
    int device_records = 0;
    for (size_t i = 0; i < n; i++) {
        const kctx_dfx_span *sp = &f->spans[i];
        if (sp->lane < f->nlanes) busy[sp->lane] += sp->dur;
        if (sp->cls == KCTX_DFX_SPAN_SCHED && sp->has_launch) runs[nruns++] = sp->launch;
        device_records |= sp->cls == KCTX_DFX_SPAN_SCHED || sp->cls == KCTX_DFX_SPAN_TASK;
        if (sp->cls == KCTX_DFX_SPAN_TASK && sp->kernel) kernels[nkernels++] = sp->kernel;
    }
    qsort(runs, nruns, sizeof *runs, cmp_u64);
    qsort(kernels, nkernels, sizeof *kernels, cmp_str);
    size_t nk = 0;
    for (size_t i = 0; i < nkernels; i++)
        if (nk == 0 || strcmp(kernels[nk - 1], kernels[i]) != 0) kernels[nk++] = kernels[i];
    g_kernels = kernels;
    g_nkernels = nk;
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
    double phases_y = SVG_HEADER_H;
    double lanes_y = SVG_HEADER_H + 22;
    double lanes_h = (double)f->nlanes * (SVG_LANE_H + SVG_LANE_GAP);
    double legend_y = lanes_y + lanes_h + 24;
    double height = legend_y + 5 * SVG_LEGEND_ROW + SVG_MARGIN;

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
            SVG_MARGIN, n, f->nlanes, trace_fmt_ns(a, sizeof a, t1 - t0));
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
    if (f->device_na) {
        fprintf(out, "<text x=\"%d\" y=\"50\" fill=\"#444\">device lanes: ", SVG_MARGIN);
        xml_text(out, f->device_na);
        fputs("</text>\n", out);
    }

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
                x, axis_y - 4, x, axis_y, x, phases_y, x, lanes_y + lanes_h, x, axis_y - 7, lbl);
        if (t > UINT64_MAX - step) break;
    }

    /* The phases band. */
    int phase_seen[PH_COUNT] = {0};
    fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-weight=\"bold\">phases</text>\n", SVG_MARGIN,
            phases_y + 11);
    draw_phases(&cv, phases_y, runs, nruns, device_records, phase_seen);

    /* Lanes (`order` is sorted by lane, then time), each with the share of
     * the trace's span it was busy. */
    size_t pos = 0;
    for (size_t l = 0; l < f->nlanes; l++) {
        double y = lanes_y + (double)l * (SVG_LANE_H + SVG_LANE_GAP);
        fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>\n",
                cv.x0, y, cv.w, SVG_LANE_H, l % 2 ? "#f4f4f4" : "#fafafa");
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-weight=\"bold\">", SVG_MARGIN,
                y + SVG_LANE_H / 2 + 4);
        xml_text(out, f->lanes[l].name);
        fputs("</text>\n", out);
        double util = 100.0 * (double)busy[l] / (double)cv.range;
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">%.*f%%<title>busy "
                "%.2f%% of the trace's span</title></text>\n",
                cv.x0 - 8, y + SVG_LANE_H / 2 + 4, util < 10 ? 1 : 0, util > 100 ? 100 : util,
                util);
        draw_lane(&cv, l, y, order, n, &pos);
    }

    /* Legend: the kinds present, then one swatch per function id. */
    double x = SVG_MARGIN, y = legend_y;
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">legend</text>\n", x, y);
    x += 60;
    for (uint32_t k = KCTX_DFX_INIT; k <= KCTX_DFX_FLUSH; k++)
        if (kinds_seen[k]) legend_item(out, &x, y, host_colors[k], trace_host_kind_names[k]);
    if (sched_seen) legend_item(out, &x, y, SCHED_COLOR, "scheduler (AICPU)");
    if (refused_seen) legend_item(out, &x, y, REFUSED_COLOR, "refused replay");
    if (other_seen) legend_item(out, &x, y, OTHER_COLOR, "other");
    x = SVG_MARGIN + 60;
    y += SVG_LEGEND_ROW;
    if (nk) { /* the kernels by name (a kctx trace with the callables' names) */
        for (size_t i = 0; i < nk && i < 16; i++) {
            char col[32];
            task_color(col, sizeof col, (uint32_t)i);
            legend_item(out, &x, y, col, kernels[i]);
        }
        if (nk > 16)
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">and %zu more kernels</text>\n", x, y,
                    nk - 16);
    } else {
        for (size_t i = 0; i < nf && i < 24; i++) {
            char col[32], lbl[32];
            task_color(col, sizeof col, funcs[i]);
            snprintf(lbl, sizeof lbl, "task f%" PRIu32, funcs[i]);
            legend_item(out, &x, y, col, lbl);
        }
        if (nf > 24)
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">and %zu more functions</text>\n", x, y,
                    nf - 24);
    }
    x = SVG_MARGIN + 60;
    y += SVG_LEGEND_ROW;
    int names_ok = legend_callables(out, &x, y, f, (double)width - SVG_MARGIN) == 0;
    x = SVG_MARGIN + 60;
    y += SVG_LEGEND_ROW;
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#444\">phases:</text>\n", x, y);
    x += 52;
    for (int ph = 0; ph < PH_COUNT; ph++)
        if (phase_seen[ph]) legend_item(out, &x, y, phase_colors[ph], phase_names[ph]);
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
    free(runs);
    free(busy);
    free(kernels);
    g_kernels = NULL;
    g_nkernels = 0;
    return ferror(out) || !names_ok ? -1 : 0;
}

int trace_write_svg(const char *path, const kctx_dfx_trace_file *f, unsigned width) {
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

/* A PNG of the picture: the SVG is rendered to a temporary file beside
 * `path` and converted by rsvg-convert (Debian: librsvg2-bin), found on
 * PATH; without it, an error that says so. */
int trace_write_png(const char *path, const kctx_dfx_trace_file *f, unsigned width) {
    size_t n = strlen(path) + 16;
    char *svg = malloc(n);
    if (!svg) return CLI_EXIT_FAILURE;
    snprintf(svg, n, "%s.tmp.svg", path);
    int rc = trace_write_svg(svg, f, width);
    if (rc != CLI_EXIT_OK) {
        free(svg);
        return rc;
    }
    char *const argv[] = {"rsvg-convert", "-o", (char *)path, svg, NULL};
    pid_t pid;
    int spawn = posix_spawnp(&pid, "rsvg-convert", NULL, NULL, argv, environ);
    int status = 0;
    if (spawn == 0 && waitpid(pid, &status, 0) < 0) spawn = errno;
    unlink(svg);
    free(svg);
    if (spawn != 0) {
        fprintf(stderr,
                "%s: error: a PNG needs rsvg-convert (Debian: librsvg2-bin), which did not run "
                "(%s); write an SVG instead (-o FILE.svg)\n",
                path, strerror(spawn));
        return CLI_EXIT_FAILURE;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: error: rsvg-convert failed (status %d)\n", path, status);
        return CLI_EXIT_FAILURE;
    }
    return CLI_EXIT_OK;
}

int kctx_trace_render_file(const char *trace_path, const char *svg_path) {
    kctx_dfx_trace_file f;
    char err[512];
    if (kctx_dfx_trace_read(trace_path, &f, err, sizeof err) != 0) {
        fprintf(stderr, "%s: error: %s\n", trace_path, err);
        return CLI_EXIT_FAILURE;
    }
    int rc = trace_write_svg(svg_path, &f, 1600);
    kctx_dfx_trace_file_free(&f);
    return rc;
}
