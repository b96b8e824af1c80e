/*
 * cli.c — option parsing and help text for the kctx subcommands.
 */
#include "cli.h"

#include <stdarg.h>
#include <string.h>

void cli_parser_init(cli_parser *p, const cli_command *cmd, int argc, char **argv) {
    p->cmd = cmd;
    p->argc = argc;
    p->argv = argv;
    p->next = 1; /* argv[0] is the command's name */
    p->options_done = 0;
    p->value = NULL;
}

static const cli_option *find_long(const cli_command *cmd, const char *name, size_t len) {
    for (const cli_option *o = cmd->options; o && o->id != 0; o++)
        if (strlen(o->long_name) == len && strncmp(o->long_name, name, len) == 0) return o;
    return NULL;
}

static const cli_option *find_short(const cli_command *cmd, char c) {
    for (const cli_option *o = cmd->options; o && o->id != 0; o++)
        if (o->short_name != 0 && o->short_name == c) return o;
    return NULL;
}

/* Takes the value of `o` from `inline_value` (the text after '=' or after
 * the short option letter) or from the next argument. */
static int take_value(cli_parser *p, const cli_option *o, const char *inline_value,
                      const char *spelled) {
    if (o->arg == NULL) {
        if (inline_value != NULL) {
            cli_usage_error(p->cmd, "option '%s' takes no value", spelled);
            return CLI_BAD;
        }
        p->value = NULL;
        return o->id;
    }
    if (inline_value != NULL) {
        p->value = inline_value;
        return o->id;
    }
    if (p->next >= p->argc) {
        cli_usage_error(p->cmd, "option '%s' needs a value (%s)", spelled, o->arg);
        return CLI_BAD;
    }
    p->value = p->argv[p->next++];
    return o->id;
}

int cli_next(cli_parser *p) {
    p->value = NULL;
    if (p->next >= p->argc) return CLI_END;
    const char *arg = p->argv[p->next++];

    if (p->options_done || arg[0] != '-' || arg[1] == '\0') { /* "-" is a positional */
        p->value = arg;
        return CLI_POSITIONAL;
    }
    if (strcmp(arg, "--") == 0) {
        p->options_done = 1;
        return cli_next(p);
    }
    if (arg[1] == '-') {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 4 && strncmp(name, "help", 4) == 0 && eq == NULL) return CLI_HELP;
        const cli_option *o = find_long(p->cmd, name, len);
        if (o == NULL) {
            cli_usage_error(p->cmd, "unknown option '--%.*s'", (int)len, name);
            return CLI_BAD;
        }
        char spelled[64];
        snprintf(spelled, sizeof spelled, "--%s", o->long_name);
        return take_value(p, o, eq ? eq + 1 : NULL, spelled);
    }
    if (arg[1] == 'h' && arg[2] == '\0') return CLI_HELP;
    const cli_option *o = find_short(p->cmd, arg[1]);
    if (o == NULL) {
        cli_usage_error(p->cmd, "unknown option '-%c'", arg[1]);
        return CLI_BAD;
    }
    char spelled[3] = {'-', arg[1], '\0'};
    return take_value(p, o, arg[2] != '\0' ? arg + 2 : NULL, spelled);
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "kctx %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'kctx %s --help')\n", cmd->name);
    return CLI_EXIT_USAGE;
}

static void print_option(FILE *out, char short_name, const char *long_name, const char *arg,
                         const char *help) {
    char left[64];
    int n;
    if (short_name != 0)
        n = snprintf(left, sizeof left, "-%c, --%s", short_name, long_name);
    else
        n = snprintf(left, sizeof left, "    --%s", long_name);
    if (arg != NULL && n > 0 && (size_t)n < sizeof left)
        snprintf(left + n, sizeof left - (size_t)n, " %s", arg);
    fprintf(out, "  %-26s %s\n", left, help);
}

void cli_print_help(const cli_command *cmd, FILE *out) {
    fprintf(out, "usage: kctx %s %s\n\n%s.\n", cmd->name, cmd->synopsis, cmd->summary);
    if (cmd->description != NULL) fprintf(out, "\n%s", cmd->description);
    fprintf(out, "\noptions:\n");
    for (const cli_option *o = cmd->options; o && o->id != 0; o++)
        print_option(out, o->short_name, o->long_name, o->arg, o->help);
    print_option(out, 'h', "help", NULL, "show this help and exit");
    fprintf(out, "\nexit status: 0 success, 1 failure, 2 usage error. See docs/cli.md.\n");
}
