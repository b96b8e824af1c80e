/*
 * cmd_trace.h — what the parts of `kctx trace` share: cmd_trace.c (the
 * command: options, arguments, reading the file), cmd_trace_summarize.c
 * (`summarize`: numbers, text or JSON) and cmd_trace_render.c (`render`: the
 * SVG swimlane picture, also used by `kctx demo`).
 */
#ifndef KCTX_TOOL_CMD_TRACE_H
#define KCTX_TOOL_CMD_TRACE_H

#include "trace_read.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The host record kinds' names, indexed by kctx_dfx_host_kind (0: "?"). */
extern const char *const trace_host_kind_names[6];

/* "950 ns", "12.345 us", "1.500 ms", "2.000 s"; returns buf. */
const char *trace_fmt_ns(char *buf, size_t n, uint64_t ns);

/* The UTF-8 sequence at s: its length (1..4) with the code point in *cp,
 * or 0 when the bytes there are not well-formed UTF-8 (a stray or missing
 * continuation byte, an overlong form, a surrogate, above U+10FFFF). */
size_t trace_utf8_next(const char *s, uint32_t *cp);

/* Print a name read from a trace (untrusted) for a terminal: printable
 * characters as they are; a backslash as "\\"; control characters (C0,
 * DEL, C1), zero-width and bidirectional formatting characters as "\xNN"
 * or "\uNNNN"; a byte that is not well-formed UTF-8 as "\xNN". At most
 * `max` columns (0: no limit), a longer name cut with "...". Returns the
 * columns written (one per character, an escape its length). */
size_t trace_put_text(FILE *out, const char *s, size_t max);

/* summarize: print the summary of trace f (read from path) on stdout, as
 * text or as one JSON document; returns a CLI exit status. */
int trace_summarize(const char *path, const kctx_dfx_trace_file *f, int as_json);

/* render: write trace f as an SVG swimlane picture `width` pixels wide to
 * path ("-": stdout), atomically; returns a CLI exit status. */
int trace_write_svg(const char *path, const kctx_dfx_trace_file *f, unsigned width);
/* The same picture as a PNG, through rsvg-convert (an error naming the
 * package when it is missing). */
int trace_write_png(const char *path, const kctx_dfx_trace_file *f, unsigned width);

#endif /* KCTX_TOOL_CMD_TRACE_H */
