/*
 * cmd_bench.c — `kctx bench`: runs the benchmarks of docs/benchmarks.md
 * that this build has, as subprocesses.
 *
 * The benchmarks are separate programs (bench/, kctx_bench_<name>, one per
 * figure family, each printing `metric ...` lines on stdout and progress on
 * stderr); the tool finds them in the build's bench directory next to it
 * (paths.h), runs them one after another (so their timings do not disturb
 * each other), passes their metric lines through to stdout, and their other
 * output to stderr. Running them as processes keeps each benchmark's own
 * process-wide setup (allocator interposition, sim environment) out of the
 * tool.
 *
 * Strategies: launch_overhead and task_dispatch report a figure per
 * execution strategy (the host-ordered ones end in _host_ordered), each
 * measured side by side with its own baseline. --strategy passes
 * `--strategy NAME` to every benchmark: those two then measure only that
 * strategy, and every other benchmark's kernel contexts use it.
 *
 * Platforms: a benchmark runs on one platform, by its name's prefix (each
 * platform's declaration, BENCH_PREFIX and BENCHMARKS, generated into
 * kctx_gen_tool.h): in this tree the opencl_* ones (kctx on PoCL against the
 * same OpenCL calls by hand) on opencl, every other on the sim (its
 * baselines are the sim's own operations, or PoCL's for sim_enqueue and
 * sim_roundtrip). Without --platform (and without KCTX_PLATFORM) every
 * benchmark built runs (PoCL is a required package; on a machine without it
 * the OpenCL ones say "not measured"); --platform NAME (or KCTX_PLATFORM)
 * runs only NAME's. The opencl benchmarks run host-ordered, the platform's
 * only strategy, whatever --strategy says.
 */
#include "cli.h"
#include "commands.h"
#include "paths.h"
#include "platforms.h"
#include "suite.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    OPT_QUICK = 1,
    OPT_ONLY,
    OPT_LIST,
    OPT_BENCH_DIR,
    OPT_TIMEOUT,
    OPT_STRATEGY,
    OPT_PLATFORM
};

static const cli_option k_options[] = {
    {OPT_QUICK, "quick", 'q', NULL, "a reduced run of every benchmark (seconds in all)"},
    {OPT_ONLY, "only", 0, "NAME", "run only this benchmark (repeatable), e.g. sim_enqueue"},
    {OPT_LIST, "list", 0, NULL, "list the benchmarks found and exit"},
    {OPT_BENCH_DIR, "bench-dir", 0, "DIR",
     "where the kctx_bench_* programs are (default: the build's)"},
    {OPT_TIMEOUT, "timeout", 0, "SECONDS",
     "kill a benchmark running longer (default 600; 60 with --quick)"},
    {OPT_STRATEGY, "strategy", 's', "NAME",
     "execution strategy of the benchmarks' kernel contexts: resident or host-ordered (default: "
     "launch_overhead and task_dispatch measure both; the others use $KCTX_STRATEGY, else the "
     "platform's default)"},
    {OPT_PLATFORM, "platform", 'p', "NAME",
     "run only this platform's benchmarks (the ones named with its prefix; default: "
     "$KCTX_PLATFORM, else every benchmark built)"},
    {0, NULL, 0, NULL, NULL},
};

#define PREFIX "kctx_bench_"
#define MAX_BENCHES 64

/* The benchmark programs of docs/benchmarks.md (a program may print several
 * figures). A name outside this list is a usage error; one in it that the
 * build lacks is a failure. */
#include "kctx_gen_tool.h" /* generated from the platform declarations */

static const char *const k_known[] = {
#define BENCH_(name) name,
    KCTX_GEN_BENCHMARKS(BENCH_)
#undef BENCH_
};

/* The platforms with benchmarks and the prefix of theirs (each platform's
 * declaration, BENCH_PREFIX; "" for the one that runs every other). */
static const struct {
    const char *platform;
    const char *prefix;
} k_bench_platforms[] = {
#define BENCH_PLATFORM_(name, prefix) {name, prefix},
    KCTX_GEN_BENCH_PLATFORMS(BENCH_PLATFORM_)
#undef BENCH_PLATFORM_
};
#define NBENCH_PLATFORMS (sizeof k_bench_platforms / sizeof k_bench_platforms[0])

/* The platform a benchmark runs on: the one whose prefix its name starts
 * with (the longest), else the one whose prefix is "". */
static const char *bench_platform(const char *name) {
    const char *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < NBENCH_PLATFORMS; i++) {
        size_t n = strlen(k_bench_platforms[i].prefix);
        if (strncmp(name, k_bench_platforms[i].prefix, n) == 0 && (!best || n > best_len)) {
            best = k_bench_platforms[i].platform;
            best_len = n;
        }
    }
    return best ? best : "(none)";
}

/* Whether any benchmark runs on the platform. */
static int has_benchmarks(const char *platform) {
    for (size_t i = 0; i < NBENCH_PLATFORMS; i++)
        if (strcmp(k_bench_platforms[i].platform, platform) == 0) return 1;
    return 0;
}

/* The platforms with benchmarks, ", "-separated (static buffer). */
static const char *bench_platform_names(void) {
    static char buf[256];
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NBENCH_PLATFORMS && n < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " and " : "",
                              k_bench_platforms[i].platform);
    return buf;
}

static int is_known(const char *name) {
    for (size_t i = 0; i < sizeof k_known / sizeof k_known[0]; i++)
        if (strcmp(k_known[i], name) == 0) return 1;
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The benchmark names (without the prefix) of the executables in dir,
 * sorted; malloc'd strings. Returns the count, or -1 (errno set). */
static int scan(const char *dir, char **names, int cap) {
    DIR *dp = opendir(dir);
    if (dp == NULL) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dp)) != NULL && n < cap;) {
        if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0 || e->d_name[strlen(PREFIX)] == '\0')
            continue;
        char *path = util_path_join(dir, e->d_name);
        struct stat st;
        int ok = path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
        free(path);
        if (ok && (names[n] = util_strdup(e->d_name + strlen(PREFIX))) != NULL) n++;
    }
    closedir(dp);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    return n;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* `metric <name> value=<v> unit=<u> ...` (docs/benchmarks.md). */
static int is_metric_line(const char *line) {
    if (strncmp(line, "metric ", 7) != 0) return 0;
    const char *name = line + 7;
    size_t nlen = strcspn(name, " ");
    if (nlen == 0) return 0;
    const char *rest = name + nlen;
    return strncmp(rest, " value=", 7) == 0 && strstr(rest, " unit=") != NULL;
}

typedef struct run_result {
    int metrics, malformed;
    int failed, unmeasured;
    char why[160];
} run_result;

/* Handle one complete line of the benchmark's stdout. */
static void take_line(const char *name, char *line, run_result *r) {
    if (strncmp(line, "metric ", 7) == 0) {
        if (is_metric_line(line)) {
            printf("%s\n", line);
            fflush(stdout);
            r->metrics++;
        } else {
            fprintf(stderr, "kctx bench: %s: malformed metric line: %s\n", name, line);
            r->malformed++;
        }
    } else if (line[0] != '\0') {
        fprintf(stderr, "  %s: %s\n", name, line);
    }
}

static void run_bench(const char *dir, const char *name, int quick, const char *strategy,
                      double timeout_s, run_result *r) {
    memset(r, 0, sizeof *r);
    char file[256];
    snprintf(file, sizeof file, PREFIX "%s", name);
    char *path = util_path_join(dir, file);
    int fds[2];
    if (path == NULL || pipe(fds) != 0) {
        r->failed = 1;
        snprintf(r->why, sizeof r->why, "cannot start: %s", strerror(errno));
        free(path);
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        char *args[5] = {path, NULL, NULL, NULL, NULL};
        int na = 1;
        if (quick) args[na++] = "--quick";
        if (strategy) {
            args[na++] = "--strategy";
            args[na++] = (char *)strategy;
        }
        execv(path, args);
        fprintf(stderr, "kctx bench: cannot run %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        r->failed = 1;
        snprintf(r->why, sizeof r->why, "cannot start: %s", strerror(errno));
        free(path);
        return;
    }
    char buf[4096];
    size_t len = 0;
    int timed_out = 0;
    double deadline = now_s() + timeout_s;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pfd = {fds[0], POLLIN, 0};
        int pr = poll(&pfd, 1, left > 1.0 ? 1000 : (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) continue;
        ssize_t n = read(fds[0], buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
        buf[len] = '\0';
        char *start = buf, *nl;
        while ((nl = strchr(start, '\n')) != NULL) {
            *nl = '\0';
            take_line(name, start, r);
            start = nl + 1;
        }
        len = strlen(start);
        memmove(buf, start, len + 1);
        if (len == sizeof buf - 1) { /* an overlong line: pass it on as it is */
            take_line(name, buf, r);
            len = 0;
        }
    }
    if (len > 0 && !timed_out) take_line(name, buf, r);
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    free(path);
    if (timed_out) {
        r->failed = 1;
        snprintf(r->why, sizeof r->why, "killed after the %.0f s timeout", timeout_s);
    } else if (WIFSIGNALED(status)) {
        r->failed = 1;
        snprintf(r->why, sizeof r->why, "killed by signal %d", WTERMSIG(status));
    } else if (WEXITSTATUS(status) != 0) {
        r->failed = 1;
        snprintf(r->why, sizeof r->why, "exited with status %d", WEXITSTATUS(status));
    } else if (r->malformed) {
        r->failed = 1;
        snprintf(r->why, sizeof r->why, "%d malformed metric lines", r->malformed);
    } else if (r->metrics == 0) {
        /* a figure this build cannot measure (an allocation count under a
         * sanitizer, which owns the allocator): the benchmark says why */
        r->unmeasured = 1;
        snprintf(r->why, sizeof r->why,
                 "printed no metric line (not measured in this build; its "
                 "output above says why)");
    }
}

static int run_bench_cmd(const cli_command *cmd, int argc, char **argv) {
    cli_parser p;
    cli_parser_init(&p, cmd, argc, argv);
    int quick = 0, list = 0;
    double timeout_s = 0;
    const char *dir_opt = NULL, *strategy_opt = NULL, *platform_opt = NULL;
    const char *only[MAX_BENCHES];
    int nonly = 0;
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
            cli_print_help(cmd, stdout);
            return CLI_EXIT_OK;
        case CLI_BAD:
            return CLI_EXIT_USAGE;
        case CLI_POSITIONAL:
            return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
        case OPT_QUICK:
            quick = 1;
            break;
        case OPT_LIST:
            list = 1;
            break;
        case OPT_BENCH_DIR:
            dir_opt = p.value;
            break;
        case OPT_STRATEGY:
            if (suite_strategy_parse(p.value) == KCTX_STRATEGY_DEFAULT)
                return cli_usage_error(cmd, "--strategy wants resident or host-ordered, not '%s'",
                                       p.value);
            strategy_opt = p.value;
            break;
        case OPT_PLATFORM:
            platform_opt = p.value;
            break;
        case OPT_TIMEOUT: {
            char *end = NULL;
            timeout_s = strtod(p.value, &end);
            if (end == p.value || *end != '\0' || !(timeout_s > 0 && timeout_s <= 86400))
                return cli_usage_error(cmd, "--timeout wants seconds (0 < s <= 86400), not '%s'",
                                       p.value);
            break;
        }
        case OPT_ONLY:
            if (!is_known(p.value))
                return cli_usage_error(cmd,
                                       "no benchmark named '%s' in docs/benchmarks.md (--list "
                                       "shows those built)",
                                       p.value);
            if (nonly < MAX_BENCHES) only[nonly++] = p.value;
            break;
        }
    }
    if (timeout_s == 0) timeout_s = quick ? 60 : 600;

    /* the platform and the strategy in effect: an explicit platform
     * (--platform or KCTX_PLATFORM) runs only its benchmarks */
    const char *env_platform = getenv("KCTX_PLATFORM");
    const int platform_explicit = platform_opt != NULL || (env_platform && *env_platform);
    const char *platform = platforms_default(platform_opt);
    const tool_platform *pl = platforms_find(platform);
    char why[256];
    kctx_strategy strategy = KCTX_STRATEGY_DEFAULT;
    if (pl == NULL) {
        fprintf(stderr, "kctx bench: error: unknown platform '%s' (known: %s)\n", platform,
                platforms_names());
        return CLI_EXIT_FAILURE;
    }
    if (!platforms_built(pl, why, sizeof why)) {
        fprintf(stderr, "kctx bench: error: platform '%s' is %s\n", platform, why);
        return CLI_EXIT_FAILURE;
    }
    if (!has_benchmarks(platform)) {
        fprintf(stderr,
                "kctx bench: error: platform '%s' is built, but no benchmark runs on it (the "
                "benchmarks run on %s)\n",
                platform, bench_platform_names());
        return CLI_EXIT_FAILURE;
    }
    for (int j = 0; j < nonly && platform_explicit; j++)
        if (strcmp(bench_platform(only[j]), platform) != 0) {
            fprintf(stderr, "kctx bench: error: benchmark '%s' runs on %s, not on %s\n", only[j],
                    bench_platform(only[j]), platform);
            return CLI_EXIT_FAILURE;
        }
    if (suite_strategy_resolve(platform, strategy_opt, &strategy, why, sizeof why) != 0) {
        fprintf(stderr, "kctx bench: error: %s\n", why);
        return CLI_EXIT_FAILURE;
    }

    char *tried = NULL;
    char *dir = paths_find_build_dir(dir_opt, "bench", NULL, &tried);
    if (dir == NULL) {
        fprintf(stderr,
                "kctx bench: error: cannot find the build's bench directory; looked in %s; build "
                "the project or pass --bench-dir DIR\n",
                tried ? tried : "(nowhere)");
        free(tried);
        return CLI_EXIT_FAILURE;
    }
    char *names[MAX_BENCHES];
    int n = scan(dir, names, MAX_BENCHES);
    if (n < 0) {
        fprintf(stderr, "kctx bench: error: cannot read %s: %s\n", dir, strerror(errno));
        free(dir);
        return CLI_EXIT_FAILURE;
    }
    if (platform_explicit) { /* only the platform's benchmarks */
        int kept = 0;
        for (int i = 0; i < n; i++) {
            if (strcmp(bench_platform(names[i]), platform) == 0)
                names[kept++] = names[i];
            else
                free(names[i]);
        }
        n = kept;
    }
    int rc = CLI_EXIT_OK;
    if (n == 0) {
        fprintf(stderr, "kctx bench: error: no " PREFIX "* programs%s%s in %s\n",
                platform_explicit ? " for platform " : "", platform_explicit ? platform : "", dir);
        rc = CLI_EXIT_FAILURE;
    }
    if (list) {
        for (int i = 0; i < n; i++) printf("%s\n", names[i]);
    } else if (rc == CLI_EXIT_OK) {
        /* the run list: every benchmark, or those asked for (each must exist) */
        const char *run[MAX_BENCHES];
        int nrun = 0;
        if (nonly == 0) {
            for (int i = 0; i < n; i++) run[nrun++] = names[i];
        } else {
            for (int j = 0; j < nonly; j++) {
                int found = 0;
                for (int i = 0; i < n && !found; i++) found = strcmp(names[i], only[j]) == 0;
                if (!found) {
                    fprintf(stderr,
                            "kctx bench: error: benchmark '%s' is not built (no %s/" PREFIX "%s)\n",
                            only[j], dir, only[j]);
                    rc = CLI_EXIT_FAILURE;
                }
                run[nrun++] = only[j];
            }
        }
        if (!platform_explicit) {
            fprintf(stderr, "kctx bench: every benchmark built, each on its platform:");
            for (size_t i = 0; i < NBENCH_PLATFORMS; i++)
                fprintf(stderr, "%s %s%s on %s", i ? ";" : "", k_bench_platforms[i].prefix,
                        k_bench_platforms[i].prefix[0] ? "*" : "the others",
                        k_bench_platforms[i].platform);
            fprintf(stderr, "\n");
        }
        if (strategy_opt)
            fprintf(stderr, "kctx bench: platform %s, strategy %s (--strategy)\n", platform,
                    kctx_strategy_name(strategy));
        else
            fprintf(stderr, "kctx bench: platform %s, strategy %s (%s)%s\n", platform,
                    kctx_strategy_name(strategy),
                    getenv("KCTX_STRATEGY") && *getenv("KCTX_STRATEGY") ? "KCTX_STRATEGY"
                                                                        : "the platform's default",
                    strcmp(bench_platform("launch_overhead"), platform) == 0
                        ? "; launch_overhead and task_dispatch measure resident and "
                          "host-ordered side by side"
                        : "");
        double t0 = now_s();
        int metrics = 0, failed = 0, unmeasured = 0;
        for (int i = 0; i < nrun && rc == CLI_EXIT_OK; i++) {
            fprintf(stderr, "kctx bench: [%d/%d] %s%s\n", i + 1, nrun, run[i],
                    quick ? " --quick" : "");
            run_result r;
            run_bench(dir, run[i], quick, strategy_opt, timeout_s, &r);
            metrics += r.metrics;
            if (r.failed) {
                failed++;
                fprintf(stderr, "kctx bench: %s FAILED: %s\n", run[i], r.why);
            } else if (r.unmeasured) {
                unmeasured++;
                fprintf(stderr, "kctx bench: %s %s\n", run[i], r.why);
            }
        }
        if (rc == CLI_EXIT_OK) {
            fprintf(
                stderr,
                "kctx bench: %d benchmarks, %d metric lines, %d not measured, %d failed, %.1f s "
                "(%s)\n",
                nrun, metrics, unmeasured, failed, now_s() - t0, dir);
            if (failed) rc = CLI_EXIT_FAILURE;
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(dir);
    return rc;
}

const cli_command kctx_cmd_bench = {
    "bench",
    "Run the benchmarks (metric lines on stdout)",
    "[--quick] [--only NAME]... [--list] [--bench-dir DIR] [--timeout SECONDS]\n"
    "       [--strategy resident|host-ordered] [--platform NAME]",
    "Runs the benchmark programs of docs/benchmarks.md that the build made\n"
    "(<build>/bench/kctx_bench_NAME), one after another, and prints their\n"
    "`metric <name> value=... unit=... [baseline=...] [ratio=...] [n=...]` lines\n"
    "on stdout; everything else they print, and a progress line per benchmark,\n"
    "goes to stderr. --quick passes --quick to each (a reduced run: seconds in\n"
    "all). launch_overhead and task_dispatch report their figures for both\n"
    "execution strategies (the host-ordered ones end in _host_ordered), each side\n"
    "by side with its own baseline; --strategy restricts them to one and sets the\n"
    "strategy of every benchmark's kernel contexts. The platform and the strategy\n"
    "in effect are printed on stderr first.\n"
    "Each benchmark runs on one platform, by its name's prefix (each platform's\n"
    "declaration: opencl_* on opencl, the others on the sim in this tree); every\n"
    "benchmark built runs unless --platform (or KCTX_PLATFORM) names\n"
    "one platform, whose benchmarks alone then run (--list lists them).\n"
    "A benchmark that exits 0 without a metric line could not measure in\n"
    "this build (it says why); that is reported, not a failure. Exit status 1 if\n"
    "a benchmark fails, is killed or times out, prints a malformed metric line,\n"
    "or is asked for with --only but not built.\n",
    k_options,
    run_bench_cmd,
};
