/*
 * cmd_probe.c — `kctx probe`: the conformance suite (src/conformance, the
 * kctx_conformance_suite library: capture and replay, the launch guard,
 * poison and quarantine, resident resources, correctness, the lifecycle and
 * the fault sweeps) as a user-facing report for one platform and execution
 * strategy:
 *
 *   platform <name> strategy <strategy>
 *   kctx probe: driver <driver>, images <dir>
 *   probe <name> PASS|FAIL|N/A  <detail>   [rule Kxx]
 *   ...
 *   probes: N passed, N failed, N not applicable
 *
 * The table, the probes and the running of each (suite_run: the expected
 * N/A list, the capability check) are the library's, shared with the ctest
 * runner (tests/conformance/main.c); this file parses the options, keeps
 * the probes' progress lines off stdout (stderr with --verbose), and prints
 * text or JSON.
 */
#include "cli.h"
#include "commands.h"
#include "hostalloc.h"
#include "json.h"
#include "paths.h"
#include "platforms.h"
#include "suite.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_PLATFORM = 1,
    OPT_STRATEGY,
    OPT_JSON,
    OPT_ONLY,
    OPT_LIST,
    OPT_IMAGES,
    OPT_SEED,
    OPT_VERBOSE
};

static const cli_option k_options[] = {
    {OPT_PLATFORM, "platform", 'p', "NAME",
     "platform to probe (default: $KCTX_PLATFORM, else sim)"},
    {OPT_STRATEGY, "strategy", 's', "NAME",
     "execution strategy: resident or host-ordered (default: $KCTX_STRATEGY, else the "
     "platform's default)"},
    {OPT_JSON, "json", 0, NULL, "print a JSON document instead of text"},
    {OPT_ONLY, "only", 0, "NAME", "run only this probe (repeatable)"},
    {OPT_LIST, "list", 0, NULL, "list the probes (name, rule, what it checks) and exit"},
    {OPT_IMAGES, "images", 0, "DIR",
     "where the example callables' images are (default: the build's)"},
    {OPT_SEED, "seed", 0, "N", "seed of the pseudo-random replay order (default 0x5eed0005)"},
    {OPT_VERBOSE, "verbose", 'v', NULL, "the probes' progress lines on stderr"},
    {0, NULL, 0, NULL, NULL},
};

#define DEFAULT_SEED 0x5EED0005ull

typedef struct probe_row {
    const probe_def *def;
    suite_outcome o;
} probe_row;

static void print_json(const probe_env *env, const probe_row *rows, size_t n,
                       const suite_totals *t) {
    json_writer w;
    json_init(&w, stdout);
    json_object_begin(&w, NULL);
    json_string(&w, "platform", env->platform);
    json_string(&w, "strategy", kctx_strategy_name(env->strategy));
    json_string(&w, "driver", env->fw->name);
    json_string(&w, "images", env->images_dir);
    json_u64(&w, "seed", env->seed);
    json_array_begin(&w, "probes");
    for (size_t i = 0; i < n; i++) {
        json_object_begin(&w, NULL);
        json_string(&w, "name", rows[i].def->name);
        json_string(&w, "result", suite_result_word(rows[i].o.result));
        json_string(&w, "detail", rows[i].o.detail);
        json_string(&w, "rule", rows[i].def->rule);
        json_string(&w, "summary", rows[i].def->summary);
        json_bool(&w, "needs_capture", (rows[i].def->needs & PROBE_NEEDS_CAPTURE) != 0);
        json_object_end(&w);
    }
    json_array_end(&w);
    json_u64(&w, "passed", t->passed);
    json_u64(&w, "failed", t->failed);
    json_u64(&w, "not_applicable", t->not_applicable);
    json_object_end(&w);
}

static int run_probe(const cli_command *cmd, int argc, char **argv) {
    cli_parser p;
    cli_parser_init(&p, cmd, argc, argv);
    const char *platform_opt = NULL, *strategy_opt = NULL, *images_opt = NULL;
    int json = 0, list = 0, verbose = 0;
    uint64_t seed = DEFAULT_SEED;
    size_t nall = 0;
    const probe_def *all = suite_probes(&nall);
    const probe_def **chosen = calloc(nall + (size_t)argc, sizeof *chosen);
    if (chosen == NULL) {
        fprintf(stderr, "kctx probe: error: out of memory\n");
        return CLI_EXIT_FAILURE;
    }
    size_t nchosen = 0;
    int rc = CLI_EXIT_OK;
    for (int id; rc == CLI_EXIT_OK && (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
            cli_print_help(cmd, stdout);
            free(chosen);
            return CLI_EXIT_OK;
        case CLI_BAD:
            rc = CLI_EXIT_USAGE;
            break;
        case CLI_POSITIONAL:
            rc = cli_usage_error(cmd, "unexpected argument '%s'", p.value);
            break;
        case OPT_PLATFORM:
            platform_opt = p.value;
            break;
        case OPT_STRATEGY:
            if (suite_strategy_parse(p.value) == KCTX_STRATEGY_DEFAULT)
                rc = cli_usage_error(cmd, "--strategy wants resident or host-ordered, not '%s'",
                                     p.value);
            strategy_opt = p.value;
            break;
        case OPT_JSON:
            json = 1;
            break;
        case OPT_LIST:
            list = 1;
            break;
        case OPT_IMAGES:
            images_opt = p.value;
            break;
        case OPT_VERBOSE:
            verbose = 1;
            break;
        case OPT_SEED: {
            char *end = NULL;
            errno = 0;
            seed = strtoull(p.value, &end, 0);
            if (p.value[0] == '\0' || p.value[0] == '-' || *end != '\0' || errno != 0)
                rc = cli_usage_error(cmd, "--seed wants an unsigned number, not '%s'", p.value);
            break;
        }
        case OPT_ONLY: {
            const probe_def *d = suite_find(p.value);
            if (d == NULL)
                rc = cli_usage_error(cmd, "no probe named '%s' (--list shows them)", p.value);
            else
                chosen[nchosen++] = d;
            break;
        }
        }
    }
    if (rc != CLI_EXIT_OK) {
        free(chosen);
        return rc;
    }
    if (list) {
        for (size_t i = 0; i < nall; i++) {
            char rule[48];
            snprintf(rule, sizeof rule, "[rule %s]", all[i].rule);
            printf("%-50s %-16s %-8s %s\n", all[i].name, rule,
                   all[i].needs & PROBE_NEEDS_CAPTURE ? "capture" : "eager", all[i].summary);
        }
        free(chosen);
        return CLI_EXIT_OK;
    }

    const char *name = platforms_default(platform_opt);
    const tool_platform *pl = platforms_find(name);
    char why[256];
    probe_env env;
    memset(&env, 0, sizeof env);
    if (pl == NULL) {
        fprintf(stderr, "kctx probe: error: unknown platform '%s' (known: %s)\n", name,
                platforms_names());
    } else if (!platforms_built(pl, why, sizeof why)) {
        fprintf(stderr, "kctx probe: error: platform '%s' is %s\n", name, why);
    } else if ((env.fw = suite_driver(name)) == NULL) {
        fprintf(stderr,
                "kctx probe: error: platform '%s' is built, but the conformance suite has no "
                "framework driver for it (src/conformance/fw.h), so no probe can play the "
                "framework\n",
                name);
    } else if (suite_strategy_resolve(name, strategy_opt, &env.strategy, why, sizeof why) != 0) {
        fprintf(stderr, "kctx probe: error: %s\n", why);
        env.fw = NULL;
    }
    if (env.fw == NULL) {
        free(chosen);
        return CLI_EXIT_FAILURE;
    }
    env.platform = env.fw->platform;
    char *tried = NULL;
    char *images =
        paths_find_build_dir(images_opt, "examples/callables", "vector_add.kctx", &tried);
    if (images == NULL) {
        fprintf(stderr,
                "kctx probe: error: cannot find the example callables' images (vector_add.kctx); "
                "looked in %s; build the project or pass --images DIR\n",
                tried ? tried : "(nowhere)");
        free(tried);
        free(chosen);
        return CLI_EXIT_FAILURE;
    }
    if (images_opt != NULL) {
        char *probe_file = util_path_join(images, "vector_add.kctx");
        FILE *f = probe_file ? fopen(probe_file, "rb") : NULL;
        if (f == NULL) {
            fprintf(stderr, "kctx probe: error: cannot open %s: %s\n",
                    probe_file ? probe_file : images, strerror(errno));
            free(probe_file);
            free(images);
            free(chosen);
            return CLI_EXIT_FAILURE;
        }
        fclose(f);
        free(probe_file);
    }
    if (nchosen == 0)
        for (size_t i = 0; i < nall; i++) chosen[nchosen++] = &all[i];

    FILE *sink = verbose ? stderr : fopen("/dev/null", "w");
    if (sink == NULL) sink = stderr;
    env.images_dir = images;
    env.allocs = hostalloc_counter();
    env.seed = seed;
    env.out = sink;

    probe_row *rows = calloc(nchosen, sizeof *rows);
    if (rows == NULL) {
        fprintf(stderr, "kctx probe: error: out of memory\n");
        if (sink != stderr) fclose(sink);
        free(images);
        free(chosen);
        return CLI_EXIT_FAILURE;
    }
    int tty = isatty(STDERR_FILENO);
    suite_totals totals = {0, 0, 0, 0};
    if (!json) {
        printf("platform %s strategy %s\n", env.platform, kctx_strategy_name(env.strategy));
        printf("kctx probe: driver %s, images %s\n", env.fw->name, images);
    }
    fflush(stdout);
    for (size_t i = 0; i < nchosen; i++) {
        rows[i].def = chosen[i];
        if (tty)
            fprintf(stderr, "\r\033[Kkctx probe: [%zu/%zu] %s", i + 1, nchosen, chosen[i]->name);
        if (verbose)
            fprintf(stderr, "%skctx probe: running %s\n", tty ? "\n" : "", chosen[i]->name);
        suite_run(&env, chosen[i], &rows[i].o);
        suite_count(&totals, &rows[i].o);
        if (!json) suite_print_line(stdout, chosen[i], &rows[i].o);
    }
    if (tty) fputs("\r\033[K", stderr);
    if (json)
        print_json(&env, rows, nchosen, &totals);
    else
        printf("probes: %u passed, %u failed, %u not applicable\n", totals.passed, totals.failed,
               totals.not_applicable);
    if (sink != stderr) fclose(sink);
    free(rows);
    free(images);
    free(chosen);
    return totals.failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

const cli_command kctx_cmd_probe = {
    "probe",
    "Check a platform against the kernel-mode contract (conformance probes)",
    "[--platform NAME] [--strategy resident|host-ordered] [--json] [--only NAME]... [--list]\n"
    "       [--images DIR] [--seed N] [-v]",
    "Runs the conformance suite (src/conformance: capture and replay, the launch\n"
    "guard, graph lifetimes, poison and quarantine, resident resources,\n"
    "correctness, zero device lifecycle calls over a kernel lifecycle (K4), and\n"
    "fault sweeps of kernel init, prepare, close and launch) against the platform\n"
    "under one execution strategy, playing the framework through the platform's\n"
    "own runtime API. The first line names the platform and the strategy in\n"
    "effect (`platform <name> strategy <strategy>`); then one line per probe:\n"
    "\n"
    "  probe <name> PASS|FAIL|N/A  <detail>   [rule Kxx]\n"
    "\n"
    "then `probes: N passed, N failed, N not applicable`. N/A means the platform\n"
    "cannot express what the probe needs, and the detail says what; an N/A the\n"
    "platform's expected list (docs/conformance.md) does not name is a failure.\n"
    "Exit status 0 only if no probe failed; 1 if one did, or the platform is\n"
    "unknown, not built, or does not offer the strategy.\n",
    k_options,
    run_probe,
};
