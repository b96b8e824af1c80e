/*
 * launch_instructions — instructions executed on the calling thread by one
 * steady-state kctx_launch on the sim, against the raw platform chain of
 * launch_overhead's baseline, counted by callgrind (a deterministic
 * counterpart of launch_overhead's times: instruction counts do not move
 * with the machine's load).
 *
 * The program runs itself under `valgrind --tool=callgrind` once per
 * strategy (a child run), with instrumentation and collection off at start
 * (--instr-atstart=no --collect-atstart=no), and reads the counts back from
 * callgrind's dump files. In the child run, per strategy, the same objects
 * as launch_overhead: a kernel context with the empty callable and vector
 * add, a caller stream, and the baseline chain (lb_chain_enqueue /
 * lb_chain_enqueue_ho with the current-device read, through lb_sim_ops, on
 * plain sim streams and events). Each measurement holds the device like
 * launch_overhead does (a sim hold on the first acquire / k_noop, reached
 * before the counted launches), so only the host path runs; collection is
 * switched on (CALLGRIND_TOGGLE_COLLECT) on the calling thread alone, around
 * the N launches only, and the counters are dumped under the measurement's
 * name (CALLGRIND_DUMP_STATS_AT). The sim's and kctx's own threads are never
 * collected (collection is per thread, off at start).
 *
 * Warming: both sides make the same unheld launches first (WARMUP of each
 * callable), then one held, uncounted round of every measurement, so that
 * neither side is the first to draw the heap's fresh memory while held (the
 * 16 % first-side artefact of docs/benchmarks.md); then R counted rounds in
 * alternating order (kctx first on even rounds, the baseline first on odd
 * ones). Figures: the median over the R rounds of Ir / N.
 *
 * Lines (RESIDENT; the same ending in _host_ordered for HOST_ORDERED):
 *   metric launch_overhead_instructions value=<Ir> unit=instructions
 *          baseline=<Ir> ratio=<kctx/baseline> n=<R>
 *   metric launch_overhead_instructions_args4 ...   (vector add, 4 args)
 * Without valgrind on PATH (or $KCTX_VALGRIND), in a build without
 * valgrind/callgrind.h, or in a sanitizer build, it prints
 * "launch_overhead_instructions: not measured: <why>" on stderr, no metric
 * line, and exits 0.
 */
#include "launch_common.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LI_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LI_SANITIZER 1
#endif

#if defined(KCTX_HAVE_CALLGRIND_H) && !defined(LI_SANITIZER)
#include <valgrind/callgrind.h>
#define LI_MEASURABLE 1
#endif

enum {
    DEFAULT_REPEATS = 5,
    QUICK_REPEATS = 3,
    WARMUP = 64,
    VADD_N = 1024,
    NMEAS = 4
};
#define DEFAULT_N 100L
#define QUICK_N 100L

static const char *not_measured_reason(void) {
#if defined(LI_SANITIZER)
    return "a sanitizer build (valgrind cannot run it)";
#elif !defined(KCTX_HAVE_CALLGRIND_H)
    return "built without valgrind/callgrind.h (install valgrind and reconfigure)";
#else
    return NULL;
#endif
}

#ifdef LI_MEASURABLE

/* The four measurements of a strategy, in the order of an even round. */
static const char *const k_meas[NMEAS] = {"kctx_empty", "base_empty", "kctx_args4", "base_args4"};

/* ---- the child run: the measured program, under callgrind -------------------- */

typedef struct child {
    kctx_strategy strategy;
    kctx_context ctx;
    sim_stream caller, bcaller;
    sim_function acquire;
    lb_chain chain;
    const kctx_platform_ops *ops;
    sim_devptr a, b, c;
    kctx_arg vargs[4];
    int device;
} child;

static void hold_release(int h, sim_stream s) {
    lb_sim_check(sim_hold_release(h), "sim_hold_release");
    lb_sim_check(sim_stream_synchronize(s), "sim_stream_synchronize");
}

static int base_chain(child *C, uint32_t nargs) {
    if (C->strategy == KCTX_STRATEGY_HOST_ORDERED)
        return lb_chain_enqueue_ho(&C->chain, C->ops, C->bcaller, 1, nargs ? 4 : 1, nargs, 1);
    return lb_chain_enqueue(&C->chain, C->ops, C->bcaller, nargs, nargs ? 4 : 1, 1);
}

/* One held measurement `m` (index into k_meas) of n launches; counted and
 * dumped under its name when `count`. */
static void measure_one(child *C, int m, long n, int count) {
    const int kside = m == 0 || m == 2;
    const uint32_t nargs = m >= 2 ? 4 : 0;
    const uint64_t id = m >= 2 ? 2 : 1;
    const kctx_arg *args = nargs ? C->vargs : NULL;
    int h = lb_hold_arm(C->device, kside ? C->acquire : C->chain.noop);
    if (kside)
        kb_kctx_check(kctx_launch(C->ctx, id, args, nargs, C->caller), "kctx_launch (hold)");
    else
        lb_sim_check((sim_status)base_chain(C, nargs), "baseline chain (hold)");
    lb_sim_check(sim_hold_wait_reached(h, 10000), "sim_hold_wait_reached");
    int bad = 0;
    if (count) CALLGRIND_TOGGLE_COLLECT;
    if (kside) {
        for (long i = 0; i < n; i++) bad |= kctx_launch(C->ctx, id, args, nargs, C->caller) != 0;
    } else {
        for (long i = 0; i < n; i++) bad |= base_chain(C, nargs) != 0;
    }
    if (count) CALLGRIND_TOGGLE_COLLECT;
    hold_release(h, kside ? C->caller : C->bcaller);
    if (bad) kb_fatal("%s: a launch failed", k_meas[m]);
    if (count) CALLGRIND_DUMP_STATS_AT(k_meas[m]);
}

static void child_setup(child *C, kctx_strategy strategy) {
    const int ho = strategy == KCTX_STRATEGY_HOST_ORDERED;
    memset(C, 0, sizeof *C);
    C->strategy = strategy;
    lb_sim_check(sim_get_device(&C->device), "sim_get_device");
    C->ops = lb_sim_ops();
    C->ctx = lb_context_open(strategy);
    if (lb_context_strategy(C->ctx) != strategy)
        kb_fatal("the context runs the %s strategy, not %s",
                 kctx_strategy_name(lb_context_strategy(C->ctx)), kctx_strategy_name(strategy));
    lb_image noop = lb_image_noop("empty"), vadd = lb_image_vadd(4);
    kb_kctx_check(kctx_prepare(C->ctx, 1, noop.bytes, noop.size), "kctx_prepare(empty)");
    kb_kctx_check(kctx_prepare(C->ctx, 2, vadd.bytes, vadd.size), "kctx_prepare(vector_add)");
    lb_image_free(&noop);
    lb_image_free(&vadd);
    const size_t vbytes = VADD_N * sizeof(float);
    lb_sim_check(sim_malloc(&C->a, vbytes), "sim_malloc");
    lb_sim_check(sim_malloc(&C->b, vbytes), "sim_malloc");
    lb_sim_check(sim_malloc(&C->c, vbytes), "sim_malloc");
    C->vargs[0] = KCTX_TENSOR(C->a, vbytes);
    C->vargs[1] = KCTX_TENSOR(C->b, vbytes);
    C->vargs[2] = KCTX_TENSOR(C->c, vbytes);
    C->vargs[3] = KCTX_SCALAR(VADD_N);
    lb_sim_check(sim_stream_create(&C->caller), "sim_stream_create(caller)");
    lb_sim_check(sim_stream_create(&C->bcaller), "sim_stream_create(baseline caller)");
    kctx_resource_info info;
    memset(&info, 0, sizeof info); /* KCTX_RESOURCE_INFO_INIT trips -Wmissing-field-initializers */
    info.size = sizeof info;
    kb_kctx_check(kctx_get_resources(C->ctx, &info), "kctx_get_resources");
    const char *acquire = ho ? "kctx_rt_ho_acquire" : "kctx_rt_acquire";
    lb_sim_check(sim_module_get_function(&C->acquire, info.programs_module, acquire),
                 "sim_module_get_function(acquire program)");
    lb_chain_open(&C->chain);
}

static void child_teardown(child *C) {
    lb_chain_close(&C->chain);
    lb_sim_check(sim_stream_destroy(C->caller), "sim_stream_destroy");
    lb_sim_check(sim_stream_destroy(C->bcaller), "sim_stream_destroy");
    kb_kctx_close(C->ctx);
    lb_sim_check(sim_free(C->a), "sim_free");
    lb_sim_check(sim_free(C->b), "sim_free");
    lb_sim_check(sim_free(C->c), "sim_free");
}

static int child_main(kctx_strategy strategy, int R, long n) {
    child C;
    child_setup(&C, strategy);
    for (int i = 0; i < WARMUP; i++) {
        kb_kctx_check(kctx_launch(C.ctx, 1, NULL, 0, C.caller), "kctx_launch (warm-up)");
        lb_sim_check((sim_status)base_chain(&C, 0), "baseline chain (warm-up)");
        kb_kctx_check(kctx_launch(C.ctx, 2, C.vargs, 4, C.caller), "kctx_launch (warm-up)");
        lb_sim_check((sim_status)base_chain(&C, 4), "baseline chain (warm-up)");
    }
    lb_sim_check(sim_stream_synchronize(C.caller), "sim_stream_synchronize");
    lb_sim_check(sim_stream_synchronize(C.bcaller), "sim_stream_synchronize");
    CALLGRIND_START_INSTRUMENTATION;
    for (int m = 0; m < NMEAS; m++) measure_one(&C, m, n, 0); /* held, uncounted */
    CALLGRIND_ZERO_STATS;
    for (int r = 0; r < R; r++)
        for (int k = 0; k < NMEAS; k++) {
            /* even rounds: kctx then baseline per callable; odd: reversed */
            int m = r % 2 == 0 ? k : NMEAS - 1 - k;
            measure_one(&C, m, n, 0); /* the heap as this measurement leaves it */
            measure_one(&C, m, n, 1);
        }
    CALLGRIND_STOP_INSTRUMENTATION;
    child_teardown(&C);
    return EXIT_SUCCESS;
}

/* ---- the parent: runs the child under callgrind and reads its dumps ---------- */

/* The valgrind to run: $KCTX_VALGRIND, else `valgrind` on PATH; NULL when
 * there is none. */
static const char *find_valgrind(char *buf, size_t size) {
    const char *env = getenv("KCTX_VALGRIND");
    if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
    const char *path = getenv("PATH");
    if (path == NULL) return NULL;
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && (size_t)snprintf(buf, size, "%.*s/valgrind", (int)len, path) < size &&
            access(buf, X_OK) == 0)
            return buf;
        path += len;
        if (*path == ':') path++;
    }
    return NULL;
}

/* The totals of one callgrind dump file: its trigger name (after "Client
 * Request: ") and its Ir total. Returns 0, or -1 when the file lacks them. */
static int read_dump(const char *file, char *name, size_t nsize, double *ir) {
    FILE *f = fopen(file, "r");
    if (f == NULL) return -1;
    char line[512];
    int have_name = 0, have_ir = 0;
    const char *trig = "desc: Trigger: Client Request: ";
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, trig, strlen(trig)) == 0) {
            snprintf(name, nsize, "%.60s", line + strlen(trig));
            have_name = 1;
        } else if (strncmp(line, "totals: ", 8) == 0 || strncmp(line, "summary: ", 9) == 0) {
            char *end;
            double v = strtod(strchr(line, ' ') + 1, &end);
            if (end != strchr(line, ' ') + 1) *ir = v, have_ir = 1;
        }
    }
    fclose(f);
    return have_name && have_ir ? 0 : -1;
}

/* Run one strategy's child under callgrind in `dir`; fill ir[m][r] (per
 * launch). Fatal on failure. */
static void run_child(const char *valgrind, const char *self, const char *dir,
                      kctx_strategy strategy, int R, long n, double *ir[NMEAS]) {
    char out[1024], log[1024], rs[32], ns[32];
    snprintf(out, sizeof out, "--callgrind-out-file=%s/cg.out", dir);
    snprintf(log, sizeof log, "--log-file=%s/vg.log", dir);
    snprintf(rs, sizeof rs, "%d", R);
    snprintf(ns, sizeof ns, "%ld", n);
    const char *sname = strategy == KCTX_STRATEGY_HOST_ORDERED ? "host-ordered" : "resident";
    char *argv[] = {(char *)valgrind,
                    "--tool=callgrind",
                    "--instr-atstart=no",
                    "--collect-atstart=no",
                    "--dump-line=no",
                    "--compress-strings=no",
                    out,
                    log,
                    (char *)self,
                    "--instructions-child",
                    (char *)sname,
                    rs,
                    ns,
                    NULL};
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) kb_fatal("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(STDERR_FILENO, STDOUT_FILENO); /* stdout carries only this program's metric lines */
        execv(valgrind, argv);
        fprintf(stderr, "cannot run %s: %s\n", valgrind, strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "cat '%s/vg.log' >&2", dir);
        if (system(cmd) != 0) kb_progress("(no valgrind log)");
        kb_fatal("the %s child run under callgrind failed (status 0x%x)", sname, status);
    }
    int seen[NMEAS] = {0};
    for (int d = 1; d <= R * NMEAS; d++) {
        char file[1024], name[64] = "";
        double total = 0;
        snprintf(file, sizeof file, "%s/cg.out.%d", dir, d);
        if (read_dump(file, name, sizeof name, &total) != 0)
            kb_fatal("callgrind dump %s is missing or has no totals", file);
        int m = 0;
        while (m < NMEAS && strcmp(name, k_meas[m]) != 0) m++;
        if (m == NMEAS || seen[m] >= R)
            kb_fatal("unexpected callgrind dump '%s' in %s", name, file);
        if (!(total > 0))
            kb_fatal("callgrind counted no instruction in %s (%s): collection never switched on",
                     file, name);
        ir[m][seen[m]++] = total / (double)n;
        unlink(file);
    }
    char file[1024];
    snprintf(file, sizeof file, "%s/cg.out", dir);
    unlink(file);
    snprintf(file, sizeof file, "%s/vg.log", dir);
    unlink(file);
}

static int print_pair(const char *base, kctx_strategy s, const double *k, const double *b, int R) {
    char name[96];
    lb_metric_name(name, sizeof name, base, s);
    double kv = kb_median(k, (size_t)R), bv = kb_median(b, (size_t)R);
    kb_metric m = {name, kv,     "instructions",       KB_BASELINE_VALUE,
                   bv,   bv > 0, bv > 0 ? kv / bv : 0, R};
    return kb_metric_print(&m) != 0;
}

/* The child runs' directory, removed with what is in it at exit (also
 * after a fatal error). */
static char g_dir[512];

static void remove_dir(void) {
    if (g_dir[0] == '\0') return;
    DIR *dp = opendir(g_dir);
    if (dp) {
        char file[1024];
        for (struct dirent *e; (e = readdir(dp)) != NULL;)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                snprintf(file, sizeof file, "%s/%s", g_dir, e->d_name);
                unlink(file);
            }
        closedir(dp);
    }
    rmdir(g_dir);
    g_dir[0] = '\0';
}

static int parent_main(const kb_options *opt, const char *self) {
    char vbuf[4096];
    const char *valgrind = find_valgrind(vbuf, sizeof vbuf);
    if (valgrind == NULL) {
        kb_progress("launch_overhead_instructions: not measured: valgrind not found");
        return EXIT_SUCCESS;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/kctx-instr.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(g_dir) == NULL) kb_fatal("mkdtemp(%s): %s", g_dir, strerror(errno));
    atexit(remove_dir);
    const char *d = g_dir;
    kctx_strategy strategies[2];
    int ns = lb_strategies(opt->strategy, strategies);
    int bad = 0;
    for (int i = 0; i < ns; i++) {
        double *ir[NMEAS];
        for (int m = 0; m < NMEAS; m++) ir[m] = kb_doubles(opt->repeats);
        run_child(valgrind, self, d, strategies[i], opt->repeats, opt->n, ir);
        for (int r = 0; r < opt->repeats; r++)
            kb_progress("%s: round %d/%d: empty kctx %.1f, baseline %.1f; 4 args kctx %.1f, "
                        "baseline %.1f instructions per launch",
                        kctx_strategy_name(strategies[i]), r + 1, opt->repeats, ir[0][r], ir[1][r],
                        ir[2][r], ir[3][r]);
        bad |=
            print_pair("launch_overhead_instructions", strategies[i], ir[0], ir[1], opt->repeats);
        bad |= print_pair("launch_overhead_instructions_args4", strategies[i], ir[2], ir[3],
                          opt->repeats);
        for (int m = 0; m < NMEAS; m++) free(ir[m]);
    }
    remove_dir();
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* LI_MEASURABLE */

int main(int argc, char **argv) {
    kb_set_program_name("kctx_bench_launch_instructions");
#ifdef LI_MEASURABLE
    if (argc == 5 && strcmp(argv[1], "--instructions-child") == 0) {
        kctx_strategy s = strcmp(argv[2], "host-ordered") == 0 ? KCTX_STRATEGY_HOST_ORDERED
                                                               : KCTX_STRATEGY_RESIDENT;
        return child_main(s, atoi(argv[3]), atol(argv[4]));
    }
#endif
    kb_options opt;
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    if (opt.baseline_only || opt.kctx_only)
        kb_progress("both sides are always counted: --baseline-only / --no-baseline ignored");
    const char *why = not_measured_reason();
    if (why) {
        kb_progress("launch_overhead_instructions: not measured: %s", why);
        return EXIT_SUCCESS;
    }
#ifdef LI_MEASURABLE
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) kb_fatal("readlink(/proc/self/exe): %s", strerror(errno));
    self[len] = '\0';
    return parent_main(&opt, self);
#else
    return EXIT_SUCCESS;
#endif
}
