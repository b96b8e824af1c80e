/*
 * commands.h — the kctx subcommands. Each lives in its own cmd_*.c file and
 * is listed in the dispatch table of main.c; adding a command is adding a
 * file, a line here and a line there.
 */
#ifndef KCTX_TOOL_COMMANDS_H
#define KCTX_TOOL_COMMANDS_H

#include "cli.h"

extern const cli_command kctx_cmd_pack;
extern const cli_command kctx_cmd_inspect;
extern const cli_command kctx_cmd_demo;
extern const cli_command kctx_cmd_probe;
extern const cli_command kctx_cmd_bench;
extern const cli_command kctx_cmd_platforms;
extern const cli_command kctx_cmd_trace;

/* Render a trace file (Chrome JSON written by kctx) as a swimlane SVG;
 * returns 0 or prints the error and returns non-zero (cmd_trace_render.c). */
int kctx_trace_render_file(const char *trace_path, const char *svg_path);

#endif /* KCTX_TOOL_COMMANDS_H */
