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

/* The host record kinds' names, indexed by kctx_dfx_host_kind (0: "?"). */
extern const char *const trace_host_kind_names[6];

/* "950 ns", "12.345 us", "1.500 ms", "2.000 s"; returns buf. */
const char *trace_fmt_ns(char *buf, size_t n, uint64_t ns);

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
