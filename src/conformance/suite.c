/*
 * suite.c — the probe table, the drivers, strategies, and the runner the
 * ctest executable (main.c) and `kctx probe` share. The probes themselves
 * live in probes_*.c, grouped by subject; their list, order, rules and needs
 * are in probe_list.h; the expected N/A list in expected_na.c.
 */
#include "suite.h"

#include "probes.h"

#include <stdlib.h>
#include <string.h>

/* the `needs` column of probe_list.h */
#define EAGER 0u
#define CAPTURE PROBE_NEEDS_CAPTURE
#define LAYER PROBE_NEEDS_FAULT_LAYER
#define LAYER_CAPTURE (PROBE_NEEDS_FAULT_LAYER | PROBE_NEEDS_CAPTURE)

static const probe_def k_probes[] = {
#define PROBE(name, rule, threads, needs, summary) \
    {#name, probe_##name, rule, threads, needs, summary},
#include "probe_list.h"
#undef PROBE
};

#undef EAGER
#undef CAPTURE
#undef LAYER
#undef LAYER_CAPTURE

const probe_def *suite_probes(size_t *count) {
    *count = sizeof k_probes / sizeof k_probes[0];
    return k_probes;
}

const probe_def *suite_find(const char *name) {
    for (size_t i = 0; i < sizeof k_probes / sizeof k_probes[0]; i++)
        if (strcmp(k_probes[i].name, name) == 0) return &k_probes[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* platforms and strategies                                            */

/* The framework drivers, generated from the platform declarations
 * (platform/<name>/platform.cmake, FW_DRIVERS; cmake/Platforms.cmake): the
 * first one of a platform is its driver; the others are variants for tests. */
#include "kctx_gen_suite.h"

static const struct {
    const char *platform;
    const char *name;
    const fw_driver *(*driver)(void);
} k_drivers[] = {
#define DRIVER_(platform, name, fn) {platform, name, fn},
    KCTX_GEN_FW_DRIVERS(DRIVER_)
#undef DRIVER_
};
#define NDRIVERS (sizeof k_drivers / sizeof k_drivers[0])

const fw_driver *suite_driver(const char *platform) {
    for (size_t i = 0; platform && i < NDRIVERS; i++)
        if (strcmp(k_drivers[i].platform, platform) == 0) return k_drivers[i].driver();
    return NULL;
}

const fw_driver *suite_driver_named(const char *name) {
    for (size_t i = 0; name && i < NDRIVERS; i++)
        if (strcmp(k_drivers[i].name, name) == 0) return k_drivers[i].driver();
    return NULL;
}

kctx_strategy suite_strategy_parse(const char *name) {
    if (name && strcmp(name, "resident") == 0) return KCTX_STRATEGY_RESIDENT;
    if (name && strcmp(name, "host-ordered") == 0) return KCTX_STRATEGY_HOST_ORDERED;
    return KCTX_STRATEGY_DEFAULT;
}

int suite_strategy_resolve(const char *platform, const char *given, kctx_strategy *out, char *why,
                           size_t why_size) {
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    kctx_status st = kctx_get_platform_caps(platform, &caps);
    if (st != KCTX_OK) {
        snprintf(why, why_size, "platform '%s': kctx_get_platform_caps: %s (%s)",
                 platform ? platform : "(default)", kctx_status_name(st), kctx_thread_last_error());
        return -1;
    }
    const char *env = getenv("KCTX_STRATEGY");
    const char *name = given ? given : (env && *env ? env : NULL);
    kctx_strategy s = (kctx_strategy)caps.default_strategy;
    if (name) {
        s = suite_strategy_parse(name);
        if (s == KCTX_STRATEGY_DEFAULT) {
            snprintf(why, why_size, "%s'%s' names no strategy (resident or host-ordered)",
                     given ? "" : "KCTX_STRATEGY=", name);
            return -1;
        }
    }
    if (s != KCTX_STRATEGY_RESIDENT && s != KCTX_STRATEGY_HOST_ORDERED) {
        snprintf(why, why_size, "platform '%s' declares no default strategy (%s)", caps.name,
                 caps.reason && *caps.reason ? caps.reason : "not available");
        return -1;
    }
    if (!(caps.strategies & KCTX_STRATEGY_BIT(s))) {
        snprintf(why, why_size, "platform '%s' does not offer the %s strategy", caps.name,
                 kctx_strategy_name(s));
        return -1;
    }
    *out = s;
    return 0;
}

/* ------------------------------------------------------------------ */
/* running                                                             */

const char *suite_result_word(probe_result r) {
    static const char *const words[] = {"PASS", "FAIL", "N/A"};
    return (unsigned)r < 3 ? words[r] : "?";
}

void suite_run(const probe_env *env, const probe_def *def, suite_outcome *o) {
    memset(o, 0, sizeof *o);
    /* listed for the platform, or for this framework driver of it (a
     * driver without a platform's test hooks: cuda-driver, the real CUDA
     * driver) */
    const char *listed = suite_expected_na(env->platform, env->strategy, def->name);
    if (!listed) listed = suite_expected_na(env->fw->name, env->strategy, def->name);
    const char *strategy = kctx_strategy_name(env->strategy);
    probe p;
    memset(&p, 0, sizeof p);
    p.env = env;
    p.fw = env->fw;
    p.def = def;
    int capability_na = 0;
    /* the checks' failures, from here to the result, are the probe's */
    ktc_set_failure_sink(pr_record_failure, &p);
    if ((def->needs & PROBE_NEEDS_CAPTURE) && !fw_has_capture(env->fw)) {
        /* implied by what the platform declares: not run at all */
        pr_na(&p,
              "no capture: the %s framework driver has none (this probe replays captured graphs)",
              env->fw->name);
        capability_na = 1;
    } else if ((def->needs & PROBE_NEEDS_FAULT_LAYER) &&
               !(env->fw->fault_layer && env->fw->fault_layer())) {
        const char *required = getenv("KCTX_FAULT_LAYER_REQUIRED");
        if (required && *required == '1') {
            FAIL("KCTX_FAULT_LAYER_REQUIRED=1, but the %s framework driver finds no failing "
                 "layer in front of the runtime (fw.h, fault_layer)",
                 env->fw->name);
        } else {
            /* a user's runtime: nothing below the adapter can be failed */
            pr_na(&p, "no failing layer below the adapter (a test build's fault layer, "
                      "tests/common/fault_layer.h); the seam's fault sweeps still run");
            capability_na = 1;
        }
    } else {
        def->fn(&p);
    }
    ktc_set_failure_sink(NULL, NULL);
    probe_result res = p.failures ? PROBE_FAIL : (p.na ? PROBE_NA : PROBE_PASS);
    const char *detail = res == PROBE_PASS ? (p.note[0] ? p.note : def->summary) : p.detail;
    if (res == PROBE_FAIL && p.failures > 1)
        snprintf(o->detail, sizeof o->detail, "%s (+%u more)", detail, p.failures - 1);
    else
        snprintf(o->detail, sizeof o->detail, "%s", detail);
    char head[300] = "";
    if (res == PROBE_NA && !capability_na && !listed) {
        /* a hook went missing, or a probe gave up: never a quiet skip */
        snprintf(head, sizeof head,
                 "N/A, but the expected N/A list (expected_na.c) has no entry for %s/%s: ",
                 env->platform, strategy);
        res = PROBE_FAIL;
    } else if (res != PROBE_NA && listed) {
        snprintf(head, sizeof head,
                 "listed as N/A for %s/%s (%.120s), but it ran (%s): the list is stale; ",
                 env->platform, strategy, listed, suite_result_word(res));
        res = PROBE_FAIL;
    }
    if (head[0]) {
        /* the reason first, then what the probe said (truncated) */
        size_t lh = strlen(head), ld = strlen(o->detail);
        if (lh + ld >= sizeof o->detail) ld = sizeof o->detail - lh - 1;
        memmove(o->detail + lh, o->detail, ld);
        memcpy(o->detail, head, lh);
        o->detail[lh + ld] = '\0';
    }
    o->result = res;
    o->expected_na = res == PROBE_NA;
    o->partial = res == PROBE_PASS && p.dropped[0] != '\0';
}

void suite_print_line(FILE *out, const probe_def *def, const suite_outcome *o) {
    fprintf(out, "probe %s %s  %s   [rule %s]\n", def->name, suite_result_word(o->result),
            o->detail, def->rule);
    fflush(out);
}

void suite_count(suite_totals *t, const suite_outcome *o) {
    if (o->result == PROBE_PASS) {
        t->passed++;
        if (o->partial) t->partial++;
    } else if (o->result == PROBE_FAIL) {
        t->failed++;
    } else {
        t->not_applicable++;
    }
}
