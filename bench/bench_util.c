/*
 * bench_util.c — timer, statistics, metric lines and options shared by the
 * kctx benchmarks (files: tests/common). See bench_util.h.
 */
#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *kb_program = "kctx_bench";

uint64_t kb_now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) kb_fatal("clock_gettime(CLOCK_MONOTONIC) failed");
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int kb_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double *kb_doubles(int count) {
    double *d = calloc(count > 0 ? (size_t)count : 1, sizeof *d);
    if (d == NULL) kb_fatal("out of memory");
    return d;
}

double kb_median(const double *values, size_t n) {
    if (n == 0) return NAN;
    double *tmp = malloc(n * sizeof *tmp);
    if (tmp == NULL) kb_fatal("out of memory computing a median of %zu values", n);
    memcpy(tmp, values, n * sizeof *tmp);
    qsort(tmp, n, sizeof *tmp, kb_cmp_double);
    double m = (n % 2 == 1) ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2.0;
    free(tmp);
    return m;
}

double kb_min(const double *values, size_t n) {
    if (n == 0) return NAN;
    double m = values[0];
    for (size_t i = 1; i < n; i++)
        if (values[i] < m) m = values[i];
    return m;
}

char *kb_format_number(char *buf, size_t buf_size, double v) {
    double a = fabs(v);
    if (v == 0.0)
        snprintf(buf, buf_size, "0");
    else if (a >= 1e6)
        snprintf(buf, buf_size, "%.0f", v);
    else if (a >= 1e-4)
        snprintf(buf, buf_size, "%.6g", v);
    else
        snprintf(buf, buf_size, "%.3e", v);
    return buf;
}

static int kb_token_ok(const char *s, const char *extra) {
    if (s == NULL || *s == '\0') return 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 (c != '\0' && strchr(extra, c) != NULL);
        if (!ok) return 0;
    }
    return 1;
}

int kb_metric_print(const kb_metric *m) {
    if (m == NULL || !kb_token_ok(m->name, "_.-")) {
        kb_error("metric: invalid name \"%s\"", m && m->name ? m->name : "(null)");
        return -1;
    }
    if (!kb_token_ok(m->unit, "_/%.-")) {
        kb_error("metric %s: invalid unit \"%s\"", m->name, m->unit ? m->unit : "(null)");
        return -1;
    }
    if (!isfinite(m->value) || (m->baseline_kind == KB_BASELINE_VALUE && !isfinite(m->baseline)) ||
        (m->has_ratio && !isfinite(m->ratio))) {
        kb_error("metric %s: a number is not finite", m->name);
        return -1;
    }
    if (m->baseline_kind != KB_BASELINE_OMIT && m->baseline_kind != KB_BASELINE_VALUE &&
        m->baseline_kind != KB_BASELINE_NONE) {
        kb_error("metric %s: invalid baseline kind %d", m->name, (int)m->baseline_kind);
        return -1;
    }
    char line[512], num[64];
    size_t len = 0;
    int w = snprintf(line, sizeof line, "metric %s value=%s unit=%s", m->name,
                     kb_format_number(num, sizeof num, m->value), m->unit);
    if (w < 0 || (size_t)w >= sizeof line) goto too_long;
    len = (size_t)w;
    if (m->baseline_kind == KB_BASELINE_VALUE)
        w = snprintf(line + len, sizeof line - len, " baseline=%s",
                     kb_format_number(num, sizeof num, m->baseline));
    else if (m->baseline_kind == KB_BASELINE_NONE)
        w = snprintf(line + len, sizeof line - len, " baseline=none");
    else
        w = 0;
    if (w < 0 || (size_t)w >= sizeof line - len) goto too_long;
    len += (size_t)w;
    if (m->has_ratio) {
        w = snprintf(line + len, sizeof line - len, " ratio=%s",
                     kb_format_number(num, sizeof num, m->ratio));
        if (w < 0 || (size_t)w >= sizeof line - len) goto too_long;
        len += (size_t)w;
    }
    if (m->repeats > 0) {
        w = snprintf(line + len, sizeof line - len, " n=%d", m->repeats);
        if (w < 0 || (size_t)w >= sizeof line - len) goto too_long;
        len += (size_t)w;
    }
    if (printf("%s\n", line) < 0 || fflush(stdout) != 0) {
        kb_error("metric %s: writing stdout failed", m->name);
        return -1;
    }
    return 0;
too_long:
    kb_error("metric %s: line too long", m->name);
    return -1;
}

int kb_metric_print_compared(const char *name, double value, const char *unit,
                             int baseline_available, double baseline, int repeats) {
    kb_metric m = {name, value, unit, KB_BASELINE_NONE, 0.0, 0, 0.0, repeats};
    if (baseline_available && isfinite(baseline) && baseline > 0.0) {
        m.baseline_kind = KB_BASELINE_VALUE;
        m.baseline = baseline;
        m.has_ratio = 1;
        m.ratio = value / baseline;
    }
    return kb_metric_print(&m);
}

void kb_set_program_name(const char *name) {
    if (name == NULL || *name == '\0') return;
    const char *slash = strrchr(name, '/');
    kb_program = slash ? slash + 1 : name;
}

void kb_progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%s] ", kb_program);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void kb_verror(const char *fmt, va_list ap) {
    fflush(stdout);
    fprintf(stderr, "%s: error: ", kb_program);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void kb_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kb_verror(fmt, ap);
    va_end(ap);
}

void kb_fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kb_verror(fmt, ap);
    va_end(ap);
    exit(EXIT_FAILURE);
}

static int kb_parse_long(const char *opt, const char *s, long min, long max, long *out) {
    char *end = NULL;
    errno = 0;
    long v = (s != NULL) ? strtol(s, &end, 10) : 0;
    if (s == NULL || *s == '\0' || end == NULL || *end != '\0' || errno != 0 || v < min ||
        v > max) {
        kb_error("%s expects an integer in [%ld, %ld], got \"%s\"", opt, min, max, s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

const char *kb_strategy_name(int strategy) {
    return strategy == 1 ? "resident" : strategy == 2 ? "host-ordered" : "default";
}

int kb_parse_options(int argc, char **argv, kb_options *opts, int repeats, long n,
                     int quick_repeats, long quick_n) {
    long rep = -1, ops = -1;
    memset(opts, 0, sizeof *opts);
    if (argc > 0) kb_set_program_name(argv[0]);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0) {
            opts->quick = 1;
        } else if (strcmp(a, "--repeats") == 0 || strcmp(a, "--n") == 0) {
            long *dst = (a[2] == 'r') ? &rep : &ops;
            long max = (a[2] == 'r') ? 1000 : 100000000;
            if (i + 1 >= argc) {
                kb_error("%s needs a value", a);
                return -1;
            }
            if (kb_parse_long(a, argv[++i], 1, max, dst) != 0) return -1;
        } else if (strcmp(a, "--strategy") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (v && strcmp(v, "resident") == 0) {
                opts->strategy = 1;
            } else if (v && strcmp(v, "host-ordered") == 0) {
                opts->strategy = 2;
            } else {
                kb_error("--strategy wants resident or host-ordered%s%s%s", v ? ", not \"" : "",
                         v ? v : "", v ? "\"" : "");
                return -1;
            }
        } else if (strcmp(a, "--baseline-only") == 0) {
            opts->baseline_only = 1;
        } else if (strcmp(a, "--no-baseline") == 0) {
            opts->kctx_only = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("usage: %s [--quick] [--repeats R] [--n N] [--baseline-only | --no-baseline]\n"
                   "       [--strategy resident|host-ordered]\n"
                   "  --quick          %d repeats of %ld operations (default %d of %ld)\n"
                   "  --repeats R      interleaved repeats (median reported)\n"
                   "  --n N            operations per measurement\n"
                   "  --baseline-only  measure only the baseline\n"
                   "  --no-baseline    skip the baseline (baseline=none)\n"
                   "  --strategy S     the kernel contexts' execution strategy (default:\n"
                   "                   KCTX_STRATEGY, else the platform's; the benchmarks\n"
                   "                   that report a figure per strategy measure both)\n"
                   "Metric lines go to stdout, progress to stderr.\n",
                   kb_program, quick_repeats, quick_n, repeats, n);
            return 1;
        } else {
            kb_error("unknown option \"%s\" (try --help)", a);
            return -1;
        }
    }
    if (opts->baseline_only && opts->kctx_only) {
        kb_error("--baseline-only and --no-baseline exclude each other");
        return -1;
    }
    opts->repeats = (int)(rep > 0 ? rep : (opts->quick ? quick_repeats : repeats));
    opts->n = ops > 0 ? ops : (opts->quick ? quick_n : n);
    return 0;
}
