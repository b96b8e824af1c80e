/*
 * bench_util.h — shared helpers of the kctx benchmark programs.
 *
 * Every benchmark prints its figures on stdout, one per line, in the format
 * of docs/benchmarks.md:
 *
 *   metric <name> value=<number> unit=<unit> [baseline=<number>|none] [ratio=<number>] [n=<repeats>]
 *
 * and its progress on stderr. Nothing else goes to stdout.
 */
#ifndef KCTX_BENCH_UTIL_H
#define KCTX_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KB_PRINTF(fmt_idx, first_arg) __attribute__((format(printf, fmt_idx, first_arg)))
#define KB_NORETURN __attribute__((noreturn))
#else
#define KB_PRINTF(fmt_idx, first_arg)
#define KB_NORETURN
#endif

/* ---- time -------------------------------------------------------------- */

/* Monotonic clock (CLOCK_MONOTONIC), nanoseconds. */
uint64_t kb_now_ns(void);

/* ---- statistics -------------------------------------------------------- */

/* Median of n values (n >= 1); the mean of the two middle values when n is
 * even. `values` is left unchanged. Returns NaN for n == 0. */
double kb_median(const double *values, size_t n);
/* Smallest of n values (n >= 1); NaN for n == 0. */
double kb_min(const double *values, size_t n);
/* calloc'd array of `count` doubles, zeroed (fatal on failure). */
double *kb_doubles(int count);

/* ---- output ------------------------------------------------------------ */

typedef enum kb_baseline_kind {
    KB_BASELINE_OMIT = 0,  /* no baseline field */
    KB_BASELINE_VALUE = 1, /* baseline=<number> */
    KB_BASELINE_NONE = 2   /* baseline=none (the baseline could not be measured) */
} kb_baseline_kind;

typedef struct kb_metric {
    const char *name; /* [A-Za-z0-9_.-]+ */
    double value;
    const char *unit; /* [A-Za-z0-9_/%.-]+ */
    kb_baseline_kind baseline_kind;
    double baseline; /* used with KB_BASELINE_VALUE */
    int has_ratio;
    double ratio; /* a time ratio, kctx / baseline */
    int repeats;  /* n=<repeats> when > 0 */
} kb_metric;

/* Print one metric line on stdout (and flush it). Returns 0, or -1 (and
 * prints nothing on stdout, a message on stderr) when a field is invalid:
 * a bad name or unit, or a number that is not finite. */
int kb_metric_print(const kb_metric *m);

/* Convenience for the common "kctx against a baseline" figure: prints
 * value, baseline and ratio = value / baseline when baseline_available and
 * baseline > 0; otherwise value and baseline=none, no ratio. */
int kb_metric_print_compared(const char *name, double value, const char *unit,
                             int baseline_available, double baseline, int repeats);

/* Format a number the way metric lines carry it (plain decimal, no
 * exponent for ordinary magnitudes). Returns buf. */
char *kb_format_number(char *buf, size_t buf_size, double v);

/* Progress and diagnostics on stderr, prefixed with "[<program>] ". */
void kb_set_program_name(const char *name);
void kb_progress(const char *fmt, ...) KB_PRINTF(1, 2);
/* "<program>: error: <message>" on stderr. */
void kb_error(const char *fmt, ...) KB_PRINTF(1, 2);
/* kb_error, then exit(EXIT_FAILURE). */
KB_NORETURN void kb_fatal(const char *fmt, ...) KB_PRINTF(1, 2);

/* ---- command line ------------------------------------------------------ */

typedef struct kb_options {
    int quick;         /* --quick */
    int repeats;       /* --repeats R (default: the benchmark's, 3 with --quick) */
    long n;            /* --n N: operations per measurement */
    int baseline_only; /* --baseline-only: measure only the baseline side */
    int kctx_only;     /* --no-baseline: skip the baseline (baseline=none) */
    /* --strategy resident|host-ordered: the execution strategy of the
     * kernel contexts a benchmark creates, as a kctx_strategy value (1
     * resident, 2 host-ordered); 0 when not given (KCTX_STRATEGY, else the
     * platform's default; launch_overhead and task_dispatch then measure
     * both). Benchmarks without a kernel context ignore it. */
    int strategy;
} kb_options;

/* "resident" / "host-ordered" for 1 / 2, "default" for 0. */
const char *kb_strategy_name(int strategy);

/* Parse the common options. Defaults: repeats/n, or quick_repeats/quick_n
 * with --quick; explicit --repeats/--n win over either. Returns 0 to run,
 * 1 when --help was printed (exit 0), -1 on a bad command line (a message
 * was printed; exit non-zero). */
int kb_parse_options(int argc, char **argv, kb_options *opts, int repeats, long n,
                     int quick_repeats, long quick_n);

#ifdef __cplusplus
}
#endif
#endif /* KCTX_BENCH_UTIL_H */
