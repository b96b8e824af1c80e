/*
 * suite.c — the probe table and the runner. The probes themselves live in
 * probes_*.c, grouped by subject; their list, order and rules are in
 * probe_list.h.
 */
#include "suite.h"

#include "probes.h"

#include <string.h>

static const probe_def k_probes[] = {
#define PROBE(name, rule, threads, summary) {#name, probe_##name, rule, threads, summary},
#include "probe_list.h"
#undef PROBE
};

const probe_def *suite_probes(size_t *count) {
    *count = sizeof k_probes / sizeof k_probes[0];
    return k_probes;
}

const probe_def *suite_find(const char *name) {
    for (size_t i = 0; i < sizeof k_probes / sizeof k_probes[0]; i++)
        if (strcmp(k_probes[i].name, name) == 0) return &k_probes[i];
    return NULL;
}

probe_result suite_run_one(const probe_env *env, const probe_def *def, suite_totals *totals) {
    probe p;
    memset(&p, 0, sizeof p);
    p.env = env;
    p.fw = env->fw;
    p.def = def;
    def->fn(&p);
    probe_result res = p.failures ? PROBE_FAIL : (p.na ? PROBE_NA : PROBE_PASS);
    static const char *const words[] = {"PASS", "FAIL", "N/A"};
    const char *detail = res == PROBE_PASS ? (p.note[0] ? p.note : def->summary) : p.detail;
    if (res == PROBE_FAIL && p.failures > 1) {
        size_t n = strlen(p.detail);
        snprintf(p.detail + n, sizeof p.detail - n, " (+%u more)", p.failures - 1);
    }
    FILE *out = env->out ? env->out : stdout;
    fprintf(out, "probe %s %s  %s   [rule %s]\n", def->name, words[res], detail, def->rule);
    fflush(out);
    if (totals) {
        if (res == PROBE_PASS) {
            totals->passed++;
            if (p.dropped[0]) totals->partial++;
        } else if (res == PROBE_FAIL)
            totals->failed++;
        else
            totals->not_applicable++;
    }
    return res;
}
