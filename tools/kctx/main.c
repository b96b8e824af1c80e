/*
 * kctx — the command-line tool: `kctx <command> [options] [arguments]`.
 *
 * main() only dispatches: the table below lists every command; each command
 * parses its own options (cli.h) and returns the exit status (0 success,
 * 1 failure, 2 usage error).
 */
#include "cli.h"
#include "commands.h"

#include <stdio.h>
#include <string.h>

#ifndef KCTX_TOOL_VERSION
#error "KCTX_TOOL_VERSION comes from tools/kctx/CMakeLists.txt"
#endif

/* One command per line (a new command is a new line). */
/* clang-format off */
static const cli_command *const commands[] = {
    &kctx_cmd_pack,
    &kctx_cmd_inspect,
    &kctx_cmd_demo,
    &kctx_cmd_probe,
    &kctx_cmd_bench,
    &kctx_cmd_platforms,
    &kctx_cmd_trace,
};
/* clang-format on */
enum {
    COMMAND_COUNT = sizeof commands / sizeof commands[0]
};

static const cli_command *find_command(const char *name) {
    for (int i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

static void print_overview(FILE *out) {
    fprintf(out, "usage: kctx <command> [options] [arguments]\n"
                 "       kctx <command> --help\n"
                 "       kctx --help | --version\n"
                 "\n"
                 "kctx runs accelerator task graphs (callables) in kernel mode, inside a host\n"
                 "framework that owns the device and its streams. This tool builds, checks and\n"
                 "exercises them.\n"
                 "\n"
                 "commands:\n");
    for (int i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(out, "\n"
                 "options:\n"
                 "  -h, --help     show this help (or a command's, after the command) and exit\n"
                 "      --version  print the version and exit\n"
                 "\n"
                 "exit status: 0 success, 1 failure, 2 usage error. See docs/cli.md.\n");
}

static int usage_error(const char *fmt, const char *arg) {
    fputs("kctx: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (see 'kctx --help')\n", stderr);
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv) {
    int rc;
    if (argc < 2) return usage_error("missing command%s", "");
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        if (argc > 2) return usage_error("unexpected argument '%s' after --help", argv[2]);
        print_overview(stdout);
        rc = CLI_EXIT_OK;
    } else if (strcmp(first, "--version") == 0) {
        if (argc > 2) return usage_error("unexpected argument '%s' after --version", argv[2]);
        printf("kctx %s\n", KCTX_TOOL_VERSION);
        rc = CLI_EXIT_OK;
    } else if (strcmp(first, "help") == 0) { /* `kctx help [COMMAND]` */
        if (argc > 3) return usage_error("unexpected argument '%s'", argv[3]);
        if (argc == 2) {
            print_overview(stdout);
        } else {
            const cli_command *cmd = find_command(argv[2]);
            if (cmd == NULL) return usage_error("unknown command '%s'", argv[2]);
            cli_print_help(cmd, stdout);
        }
        rc = CLI_EXIT_OK;
    } else if (first[0] == '-') {
        return usage_error("unknown option '%s'", first);
    } else {
        const cli_command *cmd = find_command(first);
        if (cmd == NULL) return usage_error("unknown command '%s'", first);
        rc = cmd->run(cmd, argc - 1, argv + 1);
    }
    /* Output that could not be written is a failure (a full disk, a closed
     * pipe), not a silent success. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "kctx: error writing to standard output\n");
        if (rc == CLI_EXIT_OK) rc = CLI_EXIT_FAILURE;
    }
    return rc;
}
