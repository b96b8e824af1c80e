/*
 * cmd_platforms.c — `kctx platforms`: the platforms this kctx knows, which
 * are built into libkctx, and the devices and properties of those built.
 */
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "platforms.h"

#include <stdlib.h>

enum {
    OPT_JSON = 1
};

static const cli_option k_options[] = {
    {OPT_JSON, "json", 0, NULL, "print a JSON document instead of text"},
    {0, NULL, 0, NULL, NULL},
};

static int run_platforms(const cli_command *cmd, int argc, char **argv) {
    cli_parser p;
    cli_parser_init(&p, cmd, argc, argv);
    int json = 0;
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
            cli_print_help(cmd, stdout);
            return CLI_EXIT_OK;
        case CLI_BAD:
            return CLI_EXIT_USAGE;
        case CLI_POSITIONAL:
            return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
        case OPT_JSON:
            json = 1;
            break;
        }
    }
    size_t n = 0;
    const tool_platform *all = platforms_all(&n);
    const char *env = getenv("KCTX_PLATFORM");
    const char *def = platforms_default(NULL);
    int rc = CLI_EXIT_OK;
    json_writer jw;
    if (json) {
        json_init(&jw, stdout);
        json_object_begin(&jw, NULL);
        json_string(&jw, "default", def);
        json_array_begin(&jw, "platforms");
    }
    for (size_t i = 0; i < n; i++) {
        const tool_platform *pl = &all[i];
        char why[256] = "";
        int built = platforms_built(pl, why, sizeof why);
        if (json) {
            json_object_begin(&jw, NULL);
            json_string(&jw, "name", pl->name);
            json_string(&jw, "summary", pl->summary);
            json_bool(&jw, "built", built);
            if (!built) json_string(&jw, "reason", why);
            json_bool(&jw, "probe_driver", pl->driver != NULL);
            if (built && pl->devices && pl->devices(stdout, &jw) != 0) rc = CLI_EXIT_FAILURE;
            json_object_end(&jw);
        } else {
            printf("platform %-7s %-10s %s\n", pl->name, built ? "built" : "not built",
                   pl->summary);
            if (!built) {
                printf("  %s\n", why);
            } else if (pl->devices == NULL) {
                printf("  (this tool cannot list its devices)\n");
            } else if (pl->devices(stdout, NULL) != 0) {
                rc = CLI_EXIT_FAILURE;
            }
        }
    }
    if (json) {
        json_array_end(&jw);
        json_object_end(&jw);
    } else {
        printf("default platform: %s (%s)\n", def,
               env && env[0] ? "from KCTX_PLATFORM" : "KCTX_PLATFORM is not set");
    }
    return rc;
}

const cli_command kctx_cmd_platforms = {
    "platforms",
    "List the platforms built in, their devices and properties",
    "[--json]",
    "Lists every platform kctx knows (sim, opencl, cuda). For each, whether this\n"
    "libkctx was built with it (asked of the library: kctx_context_create), and\n"
    "for a built platform its devices and their properties, read through the\n"
    "platform's own runtime API (for the sim: sim.h). A platform that is built\n"
    "but has no device lists none; that is not an error. The last line names the\n"
    "default platform (KCTX_PLATFORM, else sim).\n",
    k_options,
    run_platforms,
};
