/*
 * main.c — the conformance runner for the sim:
 *
 *   kctx_conformance [--images DIR] [--seed N] [--list] [PROBE...]
 *
 * Runs every probe (or the ones named) in table order and prints one line
 * per probe, then
 *   probes: P passed, F failed, N not applicable
 *   P passed, F failed[, N skipped]
 * (the last line is the convention of the project's test programs,
 * tests/common: an N/A probe is counted as skipped, never as passed). A
 * probe that passes with a sub-check it could not make here (a counter the
 * build lacks) says "NOT CHECKED: ..." on its line, and the probes: line
 * counts those passes. Exit status: 0 when every probe run passed, 1 when
 * one failed, 77 when none failed but one was N/A (ctest's
 * SKIP_RETURN_CODE: the probe's test is reported SKIPPED), 2 on a usage
 * error.
 *
 * --images: where the example callables' images are (default: the build's
 * examples/callables). --seed: the seed of the pseudo-random replay order
 * (printed by the probe that uses it).
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
    fprintf(stderr, "usage: %s [--images DIR] [--seed N] [--list] [PROBE...]\n", argv0);
    return 2;
}

int main(int argc, char **argv) {
    probe_env env;
    memset(&env, 0, sizeof env);
    env.fw = fw_sim_driver();
    env.images_dir = KCTX_CONFORMANCE_IMAGES;
    env.seed = DEFAULT_SEED;
    env.out = stdout;
    env.allocs = hostalloc_counter();

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
            printf("%-52s [rule %s]%s  %s\n", all[i].name, all[i].rule,
                   all[i].threads ? " (threads)" : "", all[i].summary);
        free(chosen);
        return 0;
    }
    if (nchosen == 0)
        for (size_t i = 0; i < count; i++) chosen[nchosen++] = &all[i];

    printf("conformance: platform %s, driver %s, images %s\n", env.fw->platform, env.fw->name,
           env.images_dir);
    suite_totals totals = {0, 0, 0, 0};
    for (size_t i = 0; i < nchosen; i++) suite_run_one(&env, chosen[i], &totals);
    printf("probes: %u passed, %u failed, %u not applicable", totals.passed, totals.failed,
           totals.not_applicable);
    if (totals.partial)
        printf(" (%u of the passed with sub-checks NOT CHECKED here)", totals.partial);
    printf("\n");
    free(chosen);
    return ktc_summary(stdout, totals.passed, totals.failed, totals.not_applicable);
}
