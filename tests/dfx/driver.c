/*
 * driver.c — runs `kctx trace` (tools/kctx/cmd_trace.c) without the kctx
 * tool's dispatcher, so the command is tested before and independently of
 * its registration in tools/kctx/main.c:
 *
 *   dfx_trace_tool_test trace ARGS...   ==   kctx trace ARGS...
 *
 * It applies main.c's rule that unwritable standard output is a failure.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* Declared here as well as in commands.h, so the driver builds before and
 * after the command's registration. */
extern const cli_command kctx_cmd_trace;

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], kctx_cmd_trace.name) != 0) {
        fprintf(stderr, "usage: %s trace ARGS...\n", argv[0]);
        return CLI_EXIT_USAGE;
    }
    int rc = kctx_cmd_trace.run(&kctx_cmd_trace, argc - 1, argv + 1);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "kctx: error writing to standard output\n");
        if (rc == CLI_EXIT_OK) rc = CLI_EXIT_FAILURE;
    }
    return rc;
}
