/*
 * suite.h — the conformance suite: named probes, each checking one
 * behaviour of kctx's kernel mode against a framework driver (fw.h), run
 * once per (platform, execution strategy).
 *
 * A probe returns PASS, FAIL or N/A with a one-line detail and names the
 * contract rule it checks (docs/kernel-mode.md, "The rules, one line each": K1..K36). N/A
 * means the platform cannot express what the probe needs — it has no
 * capture (a probe that needs capture says so in its table entry), or an
 * optional driver hook is missing — and the detail says which, never a
 * silent pass. Every N/A must be expected: listed for its platform and
 * strategy with the reason (expected_na.c, as IREE's HAL CTS lists the
 * tests a backend cannot run), or implied by a capability the platform
 * declares it lacks (capture). An N/A the list does not expect, and a probe
 * the list expects to be N/A that runs, are failures: the list can neither
 * hide a regression nor go stale.
 *
 * This is a library (libkctx_conformance): the ctest runner (main.c) and
 * the user-facing `kctx probe` (tools/kctx/cmd_probe.c) run the same table
 * through the same functions; only their option parsing and output differ.
 */
#ifndef KCTX_CONFORMANCE_SUITE_H
#define KCTX_CONFORMANCE_SUITE_H

#include "fw.h"

#include <kctx/kctx.h>

#include <stddef.h>
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
    const char *platform;            /* the kctx platform name (fw->platform) */
    kctx_strategy strategy;          /* RESIDENT or HOST_ORDERED: every context a probe creates */
    const char *images_dir;          /* where <callable>.kctx images live */
    const probe_host_allocs *allocs; /* may be NULL */
    uint64_t seed;                   /* pseudo-random order of replays (printed) */
    FILE *out;                       /* per-probe progress lines (fault sweeps) */
} probe_env;

typedef struct probe probe;
typedef void (*probe_fn)(probe *p);

/* What a probe needs of the platform beyond the required driver entries. */
#define PROBE_NEEDS_CAPTURE 1u /* graphs: capture, instantiate, replay */
/* a failing layer below the adapter (fw.h, fault_layer): the driver sweeps */
#define PROBE_NEEDS_FAULT_LAYER 2u

typedef struct probe_def {
    const char *name;
    probe_fn fn;
    const char *rule;    /* "K23" */
    int threads;         /* host threads or overlapping device work: label "concurrency" */
    unsigned needs;      /* PROBE_NEEDS_* */
    const char *summary; /* what it checks, one line */
} probe_def;

/* The table (probe_list.h), in order. */
const probe_def *suite_probes(size_t *count);
const probe_def *suite_find(const char *name);

/* ---- platforms and strategies ------------------------------------------ */

/* The framework driver of a kctx platform; NULL when the suite has none. */
const fw_driver *suite_driver(const char *platform);
/* A driver by its name, variants included ("sim-nocapture": the sim's
 * driver without capture, fw.h); NULL when there is none. */
const fw_driver *suite_driver_named(const char *name);

/* "resident" / "host-ordered" -> the strategy; KCTX_STRATEGY_DEFAULT for
 * any other name. */
kctx_strategy suite_strategy_parse(const char *name);

/* The strategy a run uses: `given` (a name) when not NULL, else
 * KCTX_STRATEGY from the environment when set, else the platform's default
 * (kctx_get_platform_caps). Returns 0, or -1 with the reason in why (a name
 * that is no strategy, a strategy the platform does not offer, a platform
 * libkctx does not know). */
int suite_strategy_resolve(const char *platform, const char *given, kctx_strategy *out, char *why,
                           size_t why_size);

/* The reason probe `name` is expected to be N/A on (platform, strategy), from
 * the list in expected_na.c; NULL when it is expected to run. `platform` may
 * also be a framework driver's name (the runner asks for both). */
const char *suite_expected_na(const char *platform, kctx_strategy strategy, const char *name);

/* ---- running ------------------------------------------------------------ */

typedef struct suite_outcome {
    probe_result result;
    int partial;      /* PASS with a sub-check NOT CHECKED here (pr_dropped) */
    int expected_na;  /* N/A, and expected (listed, or a capability the platform lacks) */
    char detail[800]; /* the line's detail */
} suite_outcome;

/* Run one probe against env; prints nothing but the probe's progress lines
 * (env->out). An N/A that is not expected, and an expected N/A that did
 * not happen, are turned into FAIL with the reason. */
void suite_run(const probe_env *env, const probe_def *def, suite_outcome *out);

/* The probe's line:
 *   probe <name> PASS|FAIL|N/A  <detail>   [rule Kxx]                  */
void suite_print_line(FILE *out, const probe_def *def, const suite_outcome *o);

/* "PASS", "FAIL", "N/A". */
const char *suite_result_word(probe_result r);

typedef struct suite_totals {
    unsigned passed, failed, not_applicable;
    unsigned partial; /* of the passed: with a sub-check NOT CHECKED (pr_dropped) */
} suite_totals;

void suite_count(suite_totals *t, const suite_outcome *o);

#endif
