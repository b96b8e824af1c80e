/*
 * cli.h — the skeleton every `kctx` subcommand shares: the command table
 * entry, a small option parser, generated `--help` text and the exit
 * status convention.
 *
 * Exit status of every command: 0 success, 1 failure (the command ran and
 * something was wrong: a bad manifest, a rejected image, a failed probe),
 * 2 usage error (the command line itself was wrong; one line on stderr).
 *
 * A command is one `cli_command` value in its own file, listed in the table
 * of main.c. Its `run` receives argv with argv[0] set to the command's name
 * and walks the rest with cli_next(), which knows the command's options
 * from its option table, handles `--help`, `--`, `--opt=VALUE` and
 * `-o VALUE`, and reports unknown options as usage errors.
 */
#ifndef KCTX_TOOL_CLI_H
#define KCTX_TOOL_CLI_H

#include <stdio.h>

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1,
    CLI_EXIT_USAGE = 2
};

typedef struct cli_option {
    int id;                /* returned by cli_next; > 0 */
    const char *long_name; /* without the leading "--" */
    char short_name;       /* 0 when the option has no short form */
    const char *arg;       /* placeholder of the value ("FILE"); NULL for a flag */
    const char *help;      /* one line */
} cli_option;

typedef struct cli_command cli_command;
struct cli_command {
    const char *name;          /* "pack" */
    const char *summary;       /* one line, for `kctx --help` */
    const char *synopsis;      /* the arguments after `kctx NAME` */
    const char *description;   /* paragraphs for `kctx NAME --help`; may be NULL */
    const cli_option *options; /* terminated by an entry with id 0 */
    int (*run)(const cli_command *cmd, int argc, char **argv);
};

/* cli_next results besides an option id. */
enum {
    CLI_END = 0,         /* no more arguments */
    CLI_POSITIONAL = -1, /* a positional argument: parser.value */
    CLI_HELP = -2,       /* --help or -h was given */
    CLI_BAD = -3         /* usage error, already reported on stderr */
};

typedef struct cli_parser {
    const cli_command *cmd;
    int argc;
    char **argv;
    int next;          /* index of the next argument to look at */
    int options_done;  /* after "--" everything is positional */
    const char *value; /* the option's value or the positional argument */
} cli_parser;

void cli_parser_init(cli_parser *p, const cli_command *cmd, int argc, char **argv);
/* The next option id, or one of the CLI_* results above. */
int cli_next(cli_parser *p);

/* Print "kctx NAME: MESSAGE (see 'kctx NAME --help')" on stderr and return
 * CLI_EXIT_USAGE. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Print the command's help (usage, description, options) on `out`. */
void cli_print_help(const cli_command *cmd, FILE *out);

#endif /* KCTX_TOOL_CLI_H */
