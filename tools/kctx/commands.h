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

#endif /* KCTX_TOOL_COMMANDS_H */
