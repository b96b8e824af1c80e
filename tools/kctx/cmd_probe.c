/*
 * cmd_probe.c — `kctx probe`: the capture conformance suite
 * (tests/conformance) and the tool's own lifecycle and fault-sweep probes
 * (probe_extra.c) as a user-facing report, one line per probe:
 *
 *   probe <name> PASS|FAIL|N/A  <detail>   [rule Kxx]
 *
 * then `probes: N passed, N failed, N not applicable`.
 *
 * The runner is this file's (the suite's main.c is its test executable's):
 * it runs each probe against the platform's framework driver, keeps the
 * probes' progress lines off stdout (stderr with --verbose), and prints
 * text or JSON.
 */
#include "cli.h"
#include "commands.h"
#include "hostalloc.h"
#include "json.h"
#include "paths.h"
#include "platforms.h"
#include "probe_extra.h"
#include "support.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_PLATFORM = 1,
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
#define MAX_PROBES 256

typedef struct probe_row {
    const probe_def *def;
    probe_result result;
    char detail[640];
} probe_row;

static const char *const k_words[] = {"PASS", "FAIL", "N/A"};

/* The suite's probes, then the tool's own, in run order. */
static size_t all_probes(const probe_def **out, size_t cap) {
    size_t n = 0, ns = 0, ne = 0;
    const probe_def *suite = suite_probes(&ns);
    const probe_def *extra = probe_extra_probes(&ne);
    for (size_t i = 0; i < ns && n < cap; i++) out[n++] = &suite[i];
    for (size_t i = 0; i < ne && n < cap; i++) out[n++] = &extra[i];
    return n;
}

static const probe_def *find_probe(const probe_def **all, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

static void run_one(const probe_env *env, probe_row *row) {
    probe p;
    memset(&p, 0, sizeof p);
    p.env = env;
    p.fw = env->fw;
    p.def = row->def;
    row->def->fn(&p);
    row->result = p.failures ? PROBE_FAIL : (p.na ? PROBE_NA : PROBE_PASS);
    const char *detail =
        row->result == PROBE_PASS ? (p.note[0] ? p.note : row->def->summary) : p.detail;
    if (row->result == PROBE_FAIL && p.failures > 1)
        snprintf(row->detail, sizeof row->detail, "%s (+%u more)", detail, p.failures - 1);
    else
        snprintf(row->detail, sizeof row->detail, "%s", detail);
}

static void print_json(const char *platform, const fw_driver *fw, const char *images, uint64_t seed,
                       const probe_row *rows, size_t n, const unsigned *totals) {
    json_writer w;
    json_init(&w, stdout);
    json_object_begin(&w, NULL);
    json_string(&w, "platform", platform);
    json_string(&w, "driver", fw->name);
    json_string(&w, "images", images);
    json_u64(&w, "seed", seed);
    json_array_begin(&w, "probes");
    for (size_t i = 0; i < n; i++) {
        json_object_begin(&w, NULL);
        json_string(&w, "name", rows[i].def->name);
        json_string(&w, "result", k_words[rows[i].result]);
        json_string(&w, "detail", rows[i].detail);
        json_string(&w, "rule", rows[i].def->rule);
        json_string(&w, "summary", rows[i].def->summary);
        json_object_end(&w);
    }
    json_array_end(&w);
    json_u64(&w, "passed", totals[PROBE_PASS]);
    json_u64(&w, "failed", totals[PROBE_FAIL]);
    json_u64(&w, "not_applicable", totals[PROBE_NA]);
    json_object_end(&w);
}

static int run_probe(const cli_command *cmd, int argc, char **argv) {
    cli_parser p;
    cli_parser_init(&p, cmd, argc, argv);
    const char *platform_opt = NULL, *images_opt = NULL;
    int json = 0, list = 0, verbose = 0;
    uint64_t seed = DEFAULT_SEED;
    const probe_def *all[MAX_PROBES];
    size_t nall = all_probes(all, MAX_PROBES);
    const probe_def *chosen[MAX_PROBES];
    size_t nchosen = 0;
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
            cli_print_help(cmd, stdout);
            return CLI_EXIT_OK;
        case CLI_BAD:
            return CLI_EXIT_USAGE;
        case CLI_POSITIONAL:
            return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
        case OPT_PLATFORM:
            platform_opt = p.value;
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
                return cli_usage_error(cmd, "--seed wants an unsigned number, not '%s'", p.value);
            break;
        }
        case OPT_ONLY: {
            const probe_def *d = find_probe(all, nall, p.value);
            if (d == NULL)
                return cli_usage_error(cmd, "no probe named '%s' (--list shows them)", p.value);
            if (nchosen < MAX_PROBES) chosen[nchosen++] = d;
            break;
        }
        }
    }
    if (list) {
        for (size_t i = 0; i < nall; i++) {
            char rule[48];
            snprintf(rule, sizeof rule, "[rule %s]", all[i]->rule);
            printf("%-50s %-16s %s\n", all[i]->name, rule, all[i]->summary);
        }
        return CLI_EXIT_OK;
    }

    const char *name = platforms_default(platform_opt);
    const tool_platform *pl = platforms_find(name);
    if (pl == NULL) {
        fprintf(stderr, "kctx probe: error: unknown platform '%s' (known: %s)\n", name,
                platforms_names());
        return CLI_EXIT_FAILURE;
    }
    char why[256];
    if (!platforms_built(pl, why, sizeof why)) {
        fprintf(stderr, "kctx probe: error: platform '%s' is %s\n", name, why);
        return CLI_EXIT_FAILURE;
    }
    if (pl->driver == NULL) {
        fprintf(stderr,
                "kctx probe: error: platform '%s' is built, but this tool has no framework driver "
                "for it (tests/conformance/fw.h), so no probe can play the framework\n",
                name);
        return CLI_EXIT_FAILURE;
    }
    char *tried = NULL;
    char *images =
        paths_find_build_dir(images_opt, "examples/callables", "vector_add.kctx", &tried);
    if (images == NULL) {
        fprintf(stderr,
                "kctx probe: error: cannot find the example callables' images (vector_add.kctx); "
                "looked in %s; build the project or pass --images DIR\n",
                tried ? tried : "(nowhere)");
        free(tried);
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
            return CLI_EXIT_FAILURE;
        }
        fclose(f);
        free(probe_file);
    }
    if (nchosen == 0) {
        for (size_t i = 0; i < nall; i++) chosen[i] = all[i];
        nchosen = nall;
    }

    FILE *sink = verbose ? stderr : fopen("/dev/null", "w");
    if (sink == NULL) sink = stderr;
    probe_env env;
    memset(&env, 0, sizeof env);
    env.fw = pl->driver();
    env.images_dir = images;
    env.allocs = hostalloc_counter();
    env.seed = seed;
    env.out = sink;
    probe_extra_set_lifecycle(pl->lifecycle);

    probe_row *rows = calloc(nchosen, sizeof *rows);
    if (rows == NULL) {
        fprintf(stderr, "kctx probe: error: out of memory\n");
        if (sink != stderr) fclose(sink);
        free(images);
        return CLI_EXIT_FAILURE;
    }
    int tty = isatty(STDERR_FILENO);
    unsigned totals[3] = {0, 0, 0};
    if (!json)
        printf("kctx probe: platform %s, driver %s, images %s\n", name, env.fw->name, images);
    fflush(stdout);
    for (size_t i = 0; i < nchosen; i++) {
        rows[i].def = chosen[i];
        if (tty)
            fprintf(stderr, "\r\033[Kkctx probe: [%zu/%zu] %s", i + 1, nchosen, chosen[i]->name);
        if (verbose)
            fprintf(stderr, "%skctx probe: running %s\n", tty ? "\n" : "", chosen[i]->name);
        run_one(&env, &rows[i]);
        totals[rows[i].result]++;
        if (!json) {
            printf("probe %s %s  %s   [rule %s]\n", chosen[i]->name, k_words[rows[i].result],
                   rows[i].detail, chosen[i]->rule);
            fflush(stdout);
        }
    }
    if (tty) fputs("\r\033[K", stderr);
    if (json)
        print_json(name, env.fw, images, seed, rows, nchosen, totals);
    else
        printf("probes: %u passed, %u failed, %u not applicable\n", totals[PROBE_PASS],
               totals[PROBE_FAIL], totals[PROBE_NA]);
    if (sink != stderr) fclose(sink);
    free(rows);
    free(images);
    return totals[PROBE_FAIL] ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

const cli_command kctx_cmd_probe = {
    "probe",
    "Check a platform against the kernel-mode contract (conformance probes)",
    "[--platform NAME] [--json] [--only NAME]... [--list] [--images DIR] [--seed N] [-v]",
    "Runs the capture conformance suite (tests/conformance: capture and replay,\n"
    "the launch guard, graph lifetimes, poison and quarantine, resident\n"
    "resources, correctness, launch fault sweeps) and this tool's own probes\n"
    "(zero device lifecycle calls over a kernel lifecycle, K4; fault sweeps of\n"
    "kernel init, prepare and close) against the platform, playing the framework\n"
    "through the platform's own runtime API. One line per probe on stdout:\n"
    "\n"
    "  probe <name> PASS|FAIL|N/A  <detail>   [rule Kxx]\n"
    "\n"
    "then `probes: N passed, N failed, N not applicable`. N/A means the platform\n"
    "cannot express what the probe needs, and the detail says what. Exit status 0\n"
    "only if no probe failed; 1 if one did, or the platform is unknown or not\n"
    "built.\n",
    k_options,
    run_probe,
};
