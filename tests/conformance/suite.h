/*
 * suite.h — the capture conformance suite: named probes, each checking one
 * behaviour of kctx's kernel mode against a framework driver (fw.h).
 *
 * A probe returns PASS, FAIL or N/A with a one-line detail and names the
 * contract rule it checks (docs: kernel-mode-contract.md, K1..K36). N/A
 * means the driver cannot express what the probe needs (an optional hook is
 * missing), and the detail says which — never a silent pass.
 *
 * The runner (suite.c) is separate from the executable's main (main.c) so
 * that the same table can later back the user-facing `kctx probe`.
 */
#ifndef KCTX_CONFORMANCE_SUITE_H
#define KCTX_CONFORMANCE_SUITE_H

#include "fw.h"

#include <stdint.h>
#include <stdio.h>

typedef enum probe_result {
    PROBE_PASS = 0,
    PROBE_FAIL = 1,
    PROBE_NA = 2
} probe_result;

/* Counts host allocation calls made directly from libkctx's code, where the
 * executable can observe them (hostalloc.c); absent (NULL) where it cannot. */
typedef struct probe_host_allocs {
    /* Why the counter is unavailable, or NULL when it is available. */
    const char *unavailable;
    void (*begin)(void);
    /* Stops counting: calls from libkctx and from everything else. */
    void (*end)(uint64_t *kctx_calls, uint64_t *other_calls);
} probe_host_allocs;

/* What every probe runs against. */
typedef struct probe_env {
    const fw_driver *fw;
    const char *images_dir;          /* where <callable>.kctx images live */
    const probe_host_allocs *allocs; /* may be NULL */
    uint64_t seed;                   /* pseudo-random order of replays (printed) */
    FILE *out;                       /* per-probe progress lines (fault sweep) */
} probe_env;

typedef struct probe probe;
typedef void (*probe_fn)(probe *p);

typedef struct probe_def {
    const char *name;
    probe_fn fn;
    const char *rule;    /* "K23" */
    int threads;         /* host threads or overlapping device work: label "concurrency" */
    const char *summary; /* what it checks, one line */
} probe_def;

/* The table (probe_list.h), in order. */
const probe_def *suite_probes(size_t *count);
const probe_def *suite_find(const char *name);

typedef struct suite_totals {
    unsigned passed, failed, not_applicable;
    unsigned partial; /* of the passed: with a sub-check NOT CHECKED (pr_dropped) */
} suite_totals;

/* Run one probe and print its line:
 *   probe <name> PASS|FAIL|N/A  <detail>   [rule Kxx]              */
probe_result suite_run_one(const probe_env *env, const probe_def *def, suite_totals *totals);

#endif
