/*
 * cmd_platforms.c — `kctx platforms`: the platforms this kctx knows, which
 * are built into libkctx, and the devices and properties of those built.
 */
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "platforms.h"

#include <kctx/kctx.h>

#include <stdio.h>
#include <stdlib.h>

enum {
    OPT_JSON = 1
};

static const cli_option k_options[] = {
    {OPT_JSON, "json", 0, NULL, "print a JSON document instead of text"},
    {0, NULL, 0, NULL, NULL},
};

/* "resident, host-ordered" */
static const char *strategy_names(uint32_t set, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t s = KCTX_STRATEGY_RESIDENT; s <= KCTX_STRATEGY_HOST_ORDERED; s++)
        if (set & KCTX_STRATEGY_BIT(s) && n < size)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
                                  kctx_strategy_name((kctx_strategy)s));
    return buf;
}

static const char *yes_no(int v) { return v ? "yes" : "no"; }

static void print_caps_text(const kctx_platform_caps *c) {
    char names[64];
    printf("  strategies     %s (default %s)\n", strategy_names(c->strategies, names, sizeof names),
           kctx_strategy_name((kctx_strategy)c->default_strategy));
    printf("  capture        %s; null stream %s; device epochs %s; range checks %s\n",
           yes_no(c->has_capture), yes_no(c->has_null_stream), yes_no(c->has_epoch),
           yes_no(c->can_check_ranges));
    printf("  parameters     blocks up to %u bytes\n", c->max_params_size);
    printf("  program mode   %s\n", yes_no(c->program_mode));
}

static void print_caps_json(json_writer *jw, const kctx_platform_caps *c) {
    json_object_begin(jw, "capabilities");
    json_array_begin(jw, "strategies");
    for (uint32_t s = KCTX_STRATEGY_RESIDENT; s <= KCTX_STRATEGY_HOST_ORDERED; s++)
        if (c->strategies & KCTX_STRATEGY_BIT(s))
            json_string(jw, NULL, kctx_strategy_name((kctx_strategy)s));
    json_array_end(jw);
    json_string(jw, "default_strategy", kctx_strategy_name((kctx_strategy)c->default_strategy));
    json_bool(jw, "has_capture", c->has_capture);
    json_bool(jw, "has_null_stream", c->has_null_stream);
    json_bool(jw, "has_epoch", c->has_epoch);
    json_bool(jw, "can_check_ranges", c->can_check_ranges);
    json_u64(jw, "max_params_bytes", c->max_params_size);
    json_bool(jw, "program_mode", c->program_mode);
    json_object_end(jw);
}

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
        /* The registry's facts, through the public capability query. */
        kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
        kctx_status st = kctx_get_platform_caps(pl->name, &caps);
        if (st != KCTX_OK) {
            fprintf(stderr, "kctx platforms: error: kctx_get_platform_caps(%s): %s (%s)\n",
                    pl->name, kctx_status_name(st), kctx_thread_last_error());
            rc = CLI_EXIT_FAILURE;
            continue;
        }
        if (json) {
            json_object_begin(&jw, NULL);
            json_string(&jw, "name", caps.name);
            json_bool(&jw, "built", caps.built);
            json_bool(&jw, "available", caps.available);
            json_string(&jw, "reason", caps.reason);
            json_string(&jw, "note", caps.note ? caps.note : "");
            if (caps.available) print_caps_json(&jw, &caps);
            json_bool(&jw, "probe_driver", pl->driver != NULL);
            if (caps.available && platforms_devices(pl, stdout, &jw) < 0) rc = CLI_EXIT_FAILURE;
            json_object_end(&jw);
        } else {
            printf("platform %-7s %-10s %s%s%s\n", caps.name, caps.built ? "built" : "not built",
                   caps.available ? "available" : "not available", caps.reason[0] ? "  " : "",
                   caps.reason);
            if (caps.note && caps.note[0]) printf("  note           %s\n", caps.note);
            if (!caps.available) continue;
            print_caps_text(&caps);
            int listed = platforms_devices(pl, stdout, NULL);
            if (listed > 0)
                printf("  (this tool cannot list its devices)\n");
            else if (listed < 0)
                rc = CLI_EXIT_FAILURE;
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
    "List the platforms libkctx knows: built, available, why not; capabilities and devices",
    "[--json]",
    "Lists every platform libkctx's registry knows, in its order, exactly as the\n"
    "library reports it through its capability query (kctx_get_platform_caps):\n"
    "its name, whether this libkctx was built with it, whether it is available on\n"
    "this machine, and if not, why. For an available platform, its declared\n"
    "capabilities (strategies, capture, null stream, device epochs, range checks,\n"
    "parameter-block limit, program mode) and its devices and their properties,\n"
    "read through the platform's own runtime API (for the sim: sim.h). A platform\n"
    "that is available but has no device lists none; that is not an error. The\n"
    "last line names the default platform (KCTX_PLATFORM, else sim).\n",
    k_options,
    run_platforms,
};
