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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
                trace_fmt_ns(a, sizeof a, b->busy));
    }
    xml_text(cv->out, sp->name);
    fprintf(cv->out, " at %s for %s", trace_fmt_ns(a, sizeof a, sp->ts),
            trace_fmt_ns(d, sizeof d, sp->dur));
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
        if (kinds_seen[k]) legend_item(out, &x, y, host_colors[k], trace_host_kind_names[k]);
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
