/*
 * cmd_trace.c — `kctx trace summarize FILE [--json]` and `kctx trace render
 * FILE -o OUT.svg`: a kctx trace (Chrome trace-event JSON, docs/tracing.md)
 * as numbers or as a swimlane picture. This file is the command (options,
 * arguments, reading the file) and what both views share (cmd_trace.h);
 * the views are cmd_trace_summarize.c and cmd_trace_render.c. The file is
 * read by the tool's reader (trace_read.c), which rejects anything
 * malformed before either view sees it.
 */
#include "cmd_trace.h"
#include "commands.h"

#include "trace.h"
#include "trace_read.h"

#include <errno.h>
#include <inttypes.h>
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
    {OPT_OUTPUT, "output", 'o', "OUT.svg",
     "render: where to write the picture (\"-\": stdout; a name ending in .png: a PNG, through "
     "rsvg-convert)"},
    {OPT_WIDTH, "width", 0, "PX", "render: picture width in pixels (400..20000; default 1600)"},
    {0, NULL, 0, NULL, NULL}};

const char *const trace_host_kind_names[6] = {"?", "init", "prepare", "launch", "close", "flush"};

/* "950 ns", "12.345 us", "1.500 ms", "2.000 s". */
const char *trace_fmt_ns(char *buf, size_t n, uint64_t ns) {
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

/* ---- untrusted text --------------------------------------------------------- */

size_t trace_utf8_next(const char *s, uint32_t *cp) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = p[0] < 0x80                    ? 1
               : p[0] >= 0xc2 && p[0] <= 0xdf ? 2
               : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                              : 0;
    if (n == 0) return 0;
    uint32_t c = n == 1 ? p[0] : p[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
        c = c << 6 | (p[i] & 0x3fu);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return n;
}

/* Characters a terminal would act on or that reorder or hide text: C0/C1
 * controls, DEL, zero-width and bidirectional formatting, the BOM. */
static int term_unsafe(uint32_t c) {
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || (c >= 0x200b && c <= 0x200f) ||
           (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

/* One character of s as the terminal sees it: its bytes (*n of them) go
 * out as they are when esc is left empty, else esc is written; returns its
 * width in columns. */
static size_t term_char(const char *s, size_t *n, char esc[16]) {
    uint32_t c = 0;
    size_t len = trace_utf8_next(s, &c);
    esc[0] = '\0';
    *n = len ? len : 1;
    if (len == 0) return (size_t)snprintf(esc, 16, "\\x%02x", (unsigned)(unsigned char)*s);
    if (c == '\\') return (size_t)snprintf(esc, 16, "\\\\");
    if (term_unsafe(c))
        return (size_t)snprintf(esc, 16, c < 0x100 ? "\\x%02x" : "\\u%04x", (unsigned)c);
    return 1;
}

size_t trace_put_text(FILE *out, const char *s, size_t max) {
    char esc[16];
    size_t n, total = 0;
    if (s == NULL) s = "";
    for (const char *p = s; *p != '\0'; p += n) total += term_char(p, &n, esc);
    /* Too long: as many whole characters as fit before "...". */
    size_t room = max == 0 || total <= max ? total : max > 3 ? max - 3 : 0;
    size_t cols = 0;
    for (const char *p = s; *p != '\0'; p += n) {
        size_t w = term_char(p, &n, esc);
        if (cols + w > room) break;
        if (esc[0] != '\0')
            fputs(esc, out);
        else
            fwrite(p, 1, n, out);
        cols += w;
    }
    if (room < total) {
        fputs("...", out);
        cols += 3;
    }
    return cols;
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
    size_t olen = output ? strlen(output) : 0;
    int png = is_render && olen > 4 && strcmp(output + olen - 4, ".png") == 0;
    int rc = !is_render ? trace_summarize(path, &f, as_json)
             : png      ? trace_write_png(output, &f, width)
                        : trace_write_svg(output, &f, width);
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
                   "summarize prints, per callable (by the callable id of its launches, with\n"
                   "the image name when the trace has the names), the host enqueue and device\n"
                   "(scheduler) durations; per task (callable, task index, function id, kernel\n"
                   "name), the per-block durations: count, min, median, max;\n"
                   "the number of launches and refused replays; the busy time and utilisation\n"
                   "of each lane (AICPU, every core, every host thread) over the trace's span;\n"
                   "and the dropped record counts. --json prints the same as one JSON document\n"
                   "(durations in ns, utilisation in parts per million).\n"
                   "\n"
                   "render writes an SVG swimlane picture: a band of the context's phases\n"
                   "(init, prepare, eager launches, capture, graph replays, flush, close), then\n"
                   "one lane per host thread, the AICPU and each core, each with its\n"
                   "utilisation; a box per span (tasks coloured and labelled by kernel name,\n"
                   "launches by callable name, when the trace has the names; a tooltip with\n"
                   "the details and the status name), a time axis and a legend (with the\n"
                   "callables by id and name). The file is\n"
                   "written atomically. -o FILE.png writes a PNG instead, through rsvg-convert\n"
                   "(Debian: librsvg2-bin).\n",
    .options = trace_options,
    .run = run_trace,
};
