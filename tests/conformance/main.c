/*
 * main.c — the conformance runner of the test suite (ctest):
 *
 *   kctx_conformance [--platform NAME | --driver NAME]
 *                    [--strategy resident|host-ordered]
 *                    [--images DIR] [--seed N] [--list] [PROBE...]
 *
 * Runs every probe (or the ones named) in table order against the
 * platform's framework driver under one execution strategy, and prints
 *   platform <name> strategy <strategy>
 *   conformance: driver <driver>, images <dir>
 * then one line per probe, then
 *   probes: P passed, F failed, N not applicable
 *   P passed, F failed[, N skipped]
 * (the last line is the convention of the project's test programs,
 * tests/common: an N/A probe is counted as skipped, never as passed). A
 * probe that passes with a sub-check it could not make here (a counter the
 * build lacks) says "NOT CHECKED: ..." on its line, and the probes: line
 * counts those passes. Exit status: 0 when every probe run passed, 1 when
 * one failed (an N/A that the platform's expected list does not name is a
 * failure, suite.h), 77 when none failed but one was an expected N/A
 * (ctest's SKIP_RETURN_CODE: the probe's test is reported SKIPPED), 2 on a
 * usage error or a platform or strategy that cannot run here.
 *
 * --platform: the kctx platform (default: KCTX_PLATFORM, else sim; the
 * suite has a framework driver for the sim only). --driver: a driver by
 * name instead, variants included: "sim-nocapture" plays a platform without
 * capture on the sim (ctest's conformance_sim_without_capture). --strategy:
 * default
 * KCTX_STRATEGY, else the platform's default; every context a probe creates
 * is initialised with it explicitly. --images: where the example callables'
 * images are (default: the build's examples/callables). --seed: the seed of
 * the pseudo-random replay order (printed by the probe that uses it).
 */
#include "hostalloc.h"
#include "kctx_test_common.h"
#include "suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KCTX_CONFORMANCE_IMAGES
#define KCTX_CONFORMANCE_IMAGES "examples/callables"
#endif
#define DEFAULT_SEED 0x5EED0005ull

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--platform NAME | --driver NAME] [--strategy resident|host-ordered] "
            "[--images DIR] "
            "[--seed N] [--list] [PROBE...]\n",
            argv0);
    return 2;
}

int main(int argc, char **argv) {
    probe_env env;
    memset(&env, 0, sizeof env);
    env.images_dir = KCTX_CONFORMANCE_IMAGES;
    env.seed = DEFAULT_SEED;
    env.out = stdout;
    env.allocs = hostalloc_counter();
    const char *platform = NULL, *strategy = NULL, *driver = NULL;

    size_t count = 0;
    const probe_def *all = suite_probes(&count);
    const probe_def **chosen = calloc(count + (size_t)argc, sizeof *chosen);
    if (!chosen) return 2;
    size_t nchosen = 0;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--images") == 0 && i + 1 < argc) {
            env.images_dir = argv[++i];
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            env.seed = strtoull(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--platform") == 0 && i + 1 < argc) {
            platform = argv[++i];
        } else if (strcmp(argv[i], "--driver") == 0 && i + 1 < argc) {
            driver = argv[++i];
        } else if (strcmp(argv[i], "--strategy") == 0 && i + 1 < argc) {
            strategy = argv[++i];
        } else if (strcmp(argv[i], "--list") == 0) {
            list = 1;
        } else if (argv[i][0] == '-') {
            free(chosen);
            return usage(argv[0]);
        } else {
            const probe_def *d = suite_find(argv[i]);
            if (!d) {
                fprintf(stderr, "%s: no probe named '%s' (--list shows them)\n", argv[0], argv[i]);
                free(chosen);
                return 2;
            }
            chosen[nchosen++] = d;
        }
    }
    if (list) {
        for (size_t i = 0; i < count; i++)
            printf("%-52s [rule %s]%s%s  %s\n", all[i].name, all[i].rule,
                   all[i].threads ? " (threads)" : "",
                   all[i].needs & PROBE_NEEDS_CAPTURE ? " (capture)" : "", all[i].summary);
        free(chosen);
        return 0;
    }
    if (nchosen == 0)
        for (size_t i = 0; i < count; i++) chosen[nchosen++] = &all[i];

    if (!platform) {
        const char *env_platform = getenv("KCTX_PLATFORM");
        platform = env_platform && *env_platform ? env_platform : "sim";
    }
    env.fw = driver ? suite_driver_named(driver) : suite_driver(platform);
    if (!env.fw) {
        fprintf(stderr, "%s: the suite has no framework driver %s '%s'\n", argv[0],
                driver ? "named" : "for platform", driver ? driver : platform);
        free(chosen);
        return 2;
    }
    env.platform = env.fw->platform;
    char why[256];
    if (suite_strategy_resolve(env.platform, strategy, &env.strategy, why, sizeof why) != 0) {
        fprintf(stderr, "%s: %s\n", argv[0], why);
        free(chosen);
        return 2;
    }

    printf("platform %s strategy %s\n", env.platform, kctx_strategy_name(env.strategy));
    printf("conformance: driver %s, images %s\n", env.fw->name, env.images_dir);
    suite_totals totals = {0, 0, 0, 0};
    for (size_t i = 0; i < nchosen; i++) {
        suite_outcome o;
        suite_run(&env, chosen[i], &o);
        suite_print_line(stdout, chosen[i], &o);
        suite_count(&totals, &o);
    }
    printf("probes: %u passed, %u failed, %u not applicable", totals.passed, totals.failed,
           totals.not_applicable);
    if (totals.partial)
        printf(" (%u of the passed with sub-checks NOT CHECKED here)", totals.partial);
    printf("\n");
    free(chosen);
    return ktc_summary(stdout, totals.passed, totals.failed, totals.not_applicable);
}
