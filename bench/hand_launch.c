/*
 * hand_launch.c — see hand_launch.h.
 *
 * Per strategy the platform offers (or the one --strategy names), with its
 * own kernel context, caller streams and hand chain:
 *  - kctx side (value): N launches of a prepared callable onto the
 *    framework's caller stream, timed, / N. The empty callable (one task of
 *    t_noop, no arguments) and vector add (3 tensors + 1 scalar, 4 blocks).
 *  - baseline: the strategy's platform operations of one launch plus one
 *    current-device read (lb_chain_enqueue / _ho), through the platform's
 *    hand table on the framework's own streams and events, N times, / N.
 *  - held: before each measurement a host function that blocks until
 *    released is enqueued on the measured caller stream and reached; every
 *    command of either side waits behind it (the chain begins with a record
 *    on the caller stream that the other streams wait for), so only the
 *    host path is timed. After the timing: released, and the caller stream
 *    synchronised (the framework's bounded wait).
 *  - R repeats, the sides' order alternating (kctx first on even repeats);
 *    medians.
 * Verified: every call succeeds, every hold is reached and released in
 * time, and the context's kctx_check is OK at the end.
 */
#include "hand_launch.h"

#include "fw.h"
#include "launch_common.h"
#include "suite.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    DEFAULT_REPEATS = 11,
    QUICK_REPEATS = 3,
    WARMUP = 32,
    VADD_N = 1024,
    SYNC_MS = 60000,
    REACH_MS = 10000,
    HOLD_MS = 30000 /* a hold gives up (and the benchmark fails) after this */
};
#define DEFAULT_N 100L
#define QUICK_N 50L

/* ---- holds --------------------------------------------------------------- */

typedef enum {
    GATE_ARMED,
    GATE_REACHED,
    GATE_RELEASED,
    GATE_GAVE_UP
} gate_state;

typedef struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    gate_state state;
} gate;

static void deadline_in(struct timespec *t, int ms) {
    clock_gettime(CLOCK_REALTIME, t);
    t->tv_sec += ms / 1000;
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) t->tv_sec++, t->tv_nsec -= 1000000000L;
}

/* The host function: reached, then blocks its stream until released (at
 * most HOLD_MS: a launch that blocks while the stream is held, a full
 * device queue, must not hang the benchmark). */
static void gate_fn(void *arg) {
    gate *g = arg;
    struct timespec until;
    deadline_in(&until, HOLD_MS);
    pthread_mutex_lock(&g->m);
    g->state = GATE_REACHED;
    pthread_cond_broadcast(&g->c);
    while (g->state == GATE_REACHED)
        if (pthread_cond_timedwait(&g->c, &g->m, &until) == ETIMEDOUT) g->state = GATE_GAVE_UP;
    pthread_mutex_unlock(&g->m);
}

typedef struct bench {
    const hl_platform *p;
    const fw_driver *fw;
    kctx_strategy strategy;
    kctx_context ctx;
    fw_stream caller;  /* kctx's caller stream */
    fw_stream bcaller; /* the hand chain's caller stream */
    lb_chain chain;
    fw_devptr a, b, c;
    kctx_arg vargs[4];
    gate g;
} bench;

static void fw_check(const bench *B, fw_status st, const char *what) {
    if (st != FW_OK) kb_fatal("%s failed: %s (%s)", what, fw_status_name(st), B->fw->last_error());
}

static void platform_check(const bench *B, int st, const char *what) {
    if (st != 0) kb_fatal("%s failed: %d %s", what, st, B->p->status_name(st));
}

static void hold(bench *B, fw_stream s) {
    struct timespec until;
    B->g.state = GATE_ARMED;
    platform_check(B, B->p->host_func(s, gate_fn, &B->g), "the hold's host function");
    deadline_in(&until, REACH_MS);
    pthread_mutex_lock(&B->g.m);
    while (B->g.state == GATE_ARMED)
        if (pthread_cond_timedwait(&B->g.c, &B->g.m, &until) == ETIMEDOUT) break;
    gate_state st = B->g.state;
    pthread_mutex_unlock(&B->g.m);
    if (st != GATE_REACHED)
        kb_fatal("the hold on the caller stream was not reached in %d ms", REACH_MS);
}

static void release(bench *B, fw_stream s) {
    pthread_mutex_lock(&B->g.m);
    gate_state st = B->g.state;
    B->g.state = GATE_RELEASED;
    pthread_cond_broadcast(&B->g.c);
    pthread_mutex_unlock(&B->g.m);
    if (st == GATE_GAVE_UP)
        kb_fatal("a hold gave up after %d ms: the held launches blocked the host (fewer with --n)",
                 HOLD_MS);
    fw_check(B, B->fw->stream_sync(s, SYNC_MS), "synchronising the caller stream");
}

/* ---- the two sides ---------------------------------------------------------- */

static int base_chain(bench *B, uint32_t nargs) {
    if (B->strategy == KCTX_STRATEGY_HOST_ORDERED)
        return lb_chain_enqueue_ho(&B->chain, B->p->ops, B->bcaller, 1, nargs ? 4 : 1, nargs, 1);
    return lb_chain_enqueue(&B->chain, B->p->ops, B->bcaller, nargs, nargs ? 4 : 1, 1);
}

static double run_kctx(bench *B, uint64_t id, const kctx_arg *args, uint32_t nargs, long n) {
    hold(B, B->caller);
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        kctx_status s = kctx_launch(B->ctx, id, args, nargs, B->caller);
        if (s != KCTX_OK) kb_kctx_check(s, "kctx_launch");
    }
    uint64_t t1 = kb_now_ns();
    release(B, B->caller);
    return (double)(t1 - t0) / (double)n;
}

static double run_base(bench *B, uint32_t nargs, long n) {
    hold(B, B->bcaller);
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        int st = base_chain(B, nargs);
        if (st) platform_check(B, st, "the hand chain");
    }
    uint64_t t1 = kb_now_ns();
    release(B, B->bcaller);
    return (double)(t1 - t0) / (double)n;
}

/* ---- one strategy ------------------------------------------------------------- */

static void open_objects(bench *B, int device) {
    const fw_driver *fw = B->fw;
    const size_t vbytes = VADD_N * sizeof(float);
    unsigned cores = 0;
    char dname[64];
    fw_check(B, fw->device_info(device, dname, sizeof dname, &cores), "the device's description");
    fw_check(B, fw->stream_create(&B->caller), "creating kctx's caller stream");
    fw_check(B, fw->stream_create(&B->bcaller), "creating the hand chain's caller stream");
    fw_check(B, fw->stream_create(&B->chain.cpu), "creating the hand chain's AICPU stream");
    fw_check(B, fw->stream_create(&B->chain.core), "creating the hand chain's AICore stream");
    for (int i = 0; i < 5; i++) fw_check(B, fw->event_create(&B->chain.ev[i]), "creating an event");
    B->chain.noop = B->p->hand_function();
    B->chain.cores = cores ? cores : 1;
    fw_check(B, fw->mem_alloc(vbytes, &B->a), "allocating a tensor");
    fw_check(B, fw->mem_alloc(vbytes, &B->b), "allocating a tensor");
    fw_check(B, fw->mem_alloc(vbytes, &B->c), "allocating a tensor");
    fw_check(B, fw->fill_async(B->a, 0, vbytes, B->caller), "filling a tensor");
    fw_check(B, fw->fill_async(B->b, 0, vbytes, B->caller), "filling a tensor");
    B->vargs[0] = KCTX_TENSOR(B->a, vbytes);
    B->vargs[1] = KCTX_TENSOR(B->b, vbytes);
    B->vargs[2] = KCTX_TENSOR(B->c, vbytes);
    B->vargs[3] = KCTX_SCALAR(VADD_N);
}

static void close_objects(bench *B) {
    const fw_driver *fw = B->fw;
    fw_check(B, fw->stream_sync(B->caller, SYNC_MS), "synchronising kctx's caller stream");
    fw_check(B, fw->stream_sync(B->bcaller, SYNC_MS), "synchronising the chain's caller stream");
    fw_check(B, fw->stream_sync(B->chain.cpu, SYNC_MS), "synchronising the chain's streams");
    fw_check(B, fw->stream_sync(B->chain.core, SYNC_MS), "synchronising the chain's streams");
    kb_kctx_close(B->ctx); /* kctx_check must be OK */
    for (int i = 0; i < 5; i++)
        fw_check(B, fw->event_destroy(B->chain.ev[i]), "destroying an event");
    fw_check(B, fw->stream_destroy(B->chain.core), "destroying a stream");
    fw_check(B, fw->stream_destroy(B->chain.cpu), "destroying a stream");
    fw_check(B, fw->stream_destroy(B->bcaller), "destroying a stream");
    fw_check(B, fw->stream_destroy(B->caller), "destroying a stream");
    fw_check(B, fw->mem_free(B->a), "freeing a tensor");
    fw_check(B, fw->mem_free(B->b), "freeing a tensor");
    fw_check(B, fw->mem_free(B->c), "freeing a tensor");
}

/* Returns 0, 1 when a line could not be printed, -1 when the platform
 * refused the strategy's kernel init as UNSUPPORTED (not measured). */
static int measure(bench *B, int device, const kb_options *opt) {
    const int R = opt->repeats, run_k = !opt->baseline_only, run_b = !opt->kctx_only;
    const long n = opt->n;
    const char *sname = kctx_strategy_name(B->strategy);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = B->strategy;
    kb_kctx_check(kctx_context_create(B->p->name, &B->ctx), "kctx_context_create");
    kctx_status s = kctx_kernel_init(B->ctx, &cfg);
    if (s == KCTX_UNSUPPORTED) {
        fprintf(stderr, "%s: not measured: kernel init (%s) is UNSUPPORTED here: %s\n",
                B->p->metric, sname, kctx_last_error(B->ctx));
        kb_kctx_check(kctx_destroy(B->ctx), "kctx_destroy");
        return -1;
    }
    kb_kctx_check(s, "kctx_kernel_init");
    lb_image noop = lb_image_noop("empty"), vadd = lb_image_vadd(4);
    kb_kctx_check(kctx_prepare(B->ctx, 1, noop.bytes, noop.size), "kctx_prepare(empty)");
    kb_kctx_check(kctx_prepare(B->ctx, 2, vadd.bytes, vadd.size), "kctx_prepare(vector_add)");
    lb_image_free(&noop);
    lb_image_free(&vadd);
    open_objects(B, device);

    uint64_t calls0 = 0, calls1 = 0;
    kb_kctx_check(kctx_platform_calls(B->ctx, &calls0), "kctx_platform_calls");
    for (int i = 0; i < WARMUP; i++) {
        kb_kctx_check(kctx_launch(B->ctx, 1, NULL, 0, B->caller), "kctx_launch (warm-up)");
        platform_check(B, base_chain(B, 0), "the hand chain (warm-up)");
    }
    kb_kctx_check(kctx_platform_calls(B->ctx, &calls1), "kctx_platform_calls");
    for (int i = 0; i < WARMUP; i++) {
        kb_kctx_check(kctx_launch(B->ctx, 2, B->vargs, 4, B->caller), "kctx_launch (warm-up)");
        platform_check(B, base_chain(B, 4), "the hand chain (warm-up)");
    }
    fw_check(B, B->fw->stream_sync(B->caller, SYNC_MS), "synchronising kctx's caller stream");
    fw_check(B, B->fw->stream_sync(B->bcaller, SYNC_MS), "synchronising the chain's caller");
    kb_progress("%s: kctx makes %.1f platform calls per launch of the empty callable (the hand "
                "chain: 13, one of them the current-device read)",
                sname, (double)(calls1 - calls0) / WARMUP);
    kb_progress("%s: %d alternated repeats of %ld held launches per side%s", sname, R, n,
                opt->quick ? " (quick)" : "");

    double *k0 = kb_doubles(R), *b0 = kb_doubles(R), *k4 = kb_doubles(R), *b4 = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        if (r % 2 == 0) {
            if (run_k) k0[r] = run_kctx(B, 1, NULL, 0, n);
            if (run_b) b0[r] = run_base(B, 0, n);
            if (run_k) k4[r] = run_kctx(B, 2, B->vargs, 4, n);
            if (run_b) b4[r] = run_base(B, 4, n);
        } else {
            if (run_b) b4[r] = run_base(B, 4, n);
            if (run_k) k4[r] = run_kctx(B, 2, B->vargs, 4, n);
            if (run_b) b0[r] = run_base(B, 0, n);
            if (run_k) k0[r] = run_kctx(B, 1, NULL, 0, n);
        }
        kb_progress("%s: repeat %d/%d: empty kctx %.0f ns, by hand %.0f ns; 4 args kctx %.0f ns, "
                    "by hand %.0f ns",
                    sname, r + 1, R, k0[r], b0[r], k4[r], b4[r]);
    }
    close_objects(B);

    int bad = 0;
    char name[96];
    snprintf(name, sizeof name, "%s_args4", B->p->metric);
    if (run_k) {
        bad |= lb_print_compared(B->p->metric, B->strategy, k0, run_b, b0, R);
        bad |= lb_print_compared(name, B->strategy, k4, run_b, b4, R);
    } else {
        bad |= lb_print_value(B->p->metric, B->strategy, b0, "ns", R);
        bad |= lb_print_value(name, B->strategy, b4, "ns", R);
    }
    free(k0), free(b0), free(k4), free(b4);
    return bad;
}

int hl_main(const hl_platform *p, int argc, char **argv) {
    kb_options opt;
    kb_set_program_name(p->metric);
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;

    kctx_platform_caps caps;
    memset(&caps, 0, sizeof caps); /* the INIT macro trips -Wmissing-field-initializers */
    caps.size = sizeof caps;
    kb_kctx_check(kctx_get_platform_caps(p->name, &caps), "kctx_get_platform_caps");
    if (!caps.available) {
        fprintf(stderr, "%s: not measured: platform %s is %s: %s\n", p->metric, p->name,
                caps.built ? "unavailable here" : "not built", caps.reason ? caps.reason : "");
        return EXIT_SUCCESS;
    }

    bench B;
    memset(&B, 0, sizeof B);
    B.p = p;
    B.fw = suite_driver(p->name);
    if (!B.fw) kb_fatal("platform %s has no framework driver", p->name);
    pthread_mutex_init(&B.g.m, NULL);
    pthread_cond_init(&B.g.c, NULL);
    const int device = 0;
    fw_check(&B, B.fw->set_device(device), "making device 0 current (the framework's)");
    const void *module = NULL;
    size_t module_size = 0;
    char why[512] = "";
    int opened = p->open(&module, &module_size, why, sizeof why);
    if (opened > 0) {
        fprintf(stderr, "%s: not measured: %s\n", p->metric, why);
        return EXIT_SUCCESS;
    }
    if (opened < 0) kb_fatal("loading the hand chain's kernels: %s", why);
    lb_set_variant(p->variant, module, module_size);

    kctx_strategy strategies[2];
    int ns = 0;
    if (opt.strategy) {
        strategies[ns++] = (kctx_strategy)opt.strategy;
    } else {
        if (caps.strategies & KCTX_STRATEGY_BIT(KCTX_STRATEGY_RESIDENT))
            strategies[ns++] = KCTX_STRATEGY_RESIDENT;
        if (caps.strategies & KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED))
            strategies[ns++] = KCTX_STRATEGY_HOST_ORDERED;
    }
    int bad = 0;
    for (int i = 0; i < ns; i++) {
        B.strategy = strategies[i];
        memset(&B.chain, 0, sizeof B.chain);
        int r = measure(&B, device, &opt);
        if (r < 0) break; /* not measured: said why */
        bad |= r;
    }
    p->close();
    pthread_cond_destroy(&B.g.c);
    pthread_mutex_destroy(&B.g.m);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
