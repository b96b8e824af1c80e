/*
 * task_dispatch — time per task through kctx's scheduler and the sim's
 * cores for a wide DAG of counting kernels, against the same DAG run by a plain
 * pthread pool with condition variables and as many threads as the device
 * has cores.
 *
 * The DAG (both sides): one root; W = 256 independent tasks depending on it;
 * ceil(W / 64) join tasks (an image allows at most 64 dependencies per task)
 * each depending on 64 of them; one sink depending on the joins: 262 tasks.
 * Each task's work is the least that proves it ran: it adds 1 to its own
 * counter (kctx: one block of k_add_u32 on counts[t] in device memory; pool:
 * an increment of counts[t] through a function pointer). After every
 * measurement each side's counters must all equal its number of runs —
 * every task ran exactly once per run — or the program fails without a
 * figure: a scheduler that skipped tasks would otherwise look fast.
 *
 * kctx side (value): L x (kctx_launch of the DAG callable, synchronise the
 * caller stream); time / (L x tasks). Everything of a launch is included.
 * RESIDENT: the host launch, the acquire step, the workers reporting in,
 * dispatch through the ready queue, completion and exit. HOST_ORDERED: the
 * host launch enqueueing one kernel per task in topological order (each
 * with its by-value block), the acquire and finalize steps, and the AICore
 * stream running the task kernels one after another.
 *
 * Baseline: a pool of `cores` threads, started once, sharing a FIFO of
 * ready tasks under one mutex with a condition variable. Per run the
 * measuring thread pays what a launch + synchronise makes it pay: it submits
 * the run (pool_submit: posts it under the mutex and signals a worker, then
 * returns without waiting, like kctx_launch) and then waits for the run's
 * completion signal (pool_wait: a condition variable, like the stream
 * synchronise). The worker that takes the run sets it up (every task's
 * pending count) and makes the root ready; a worker runs a task (its
 * counter's increment, called through a pointer), then releases its
 * successors (pushing and signalling those that became ready); the worker
 * that finishes the last task signals the completion. L runs;
 * time / (L x tasks).
 *
 * Each strategy is measured in its own phase, with its own context, against
 * the same pool: R repeats, the two sides' order alternating (kctx then
 * pool, pool then kctx, ...); medians. Without --strategy both
 * are measured, RESIDENT first; the RESIDENT figures keep their names, the
 * HOST_ORDERED ones end in _host_ordered. Goal (RESIDENT): ratio <= 1.5.
 *   metric task_dispatch value=<ns per task> unit=ns baseline=<ns per task> ratio=<kctx/pool> n=<R>
 *   metric task_dispatch_one_task value=<ns per launch + synchronise of a 1-task callable> unit=ns n=<R>
 *       (the 1-task callable is the DAG's root alone, counted the same way)
 *       (information: the fixed cost of a launch that the DAG's figure includes)
 *   metric task_dispatch_host_ordered ... and task_dispatch_one_task_host_ordered ...
 */
#include "launch_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DEFAULT_REPEATS = 11,
    QUICK_REPEATS = 3,
    WIDTH = 256,
    PER_JOIN = 64,
    WARMUP = 5
};
#define DEFAULT_N 40L /* DAG runs per measurement */
#define QUICK_N 5L

/* ---- the DAG, as successor lists ------------------------------------------ */
typedef struct dag {
    uint32_t ntasks;
    uint32_t *ndeps;    /* per task */
    uint32_t *succ_off; /* CSR: successors of t are succ[succ_off[t] .. succ_off[t+1]) */
    uint32_t *succ;
} dag;

static void dag_build(dag *d, uint32_t width) {
    uint32_t joins = (width + PER_JOIN - 1) / PER_JOIN;
    uint32_t n = 1 + width + joins + 1, sink = n - 1;
    d->ntasks = n;
    d->ndeps = calloc(n, sizeof *d->ndeps);
    d->succ_off = calloc(n + 1, sizeof *d->succ_off);
    d->succ = calloc((size_t)width * 2 + joins, sizeof *d->succ);
    if (!d->ndeps || !d->succ_off || !d->succ) kb_fatal("out of memory");
    uint32_t k = 0;
    d->succ_off[0] = 0; /* root -> every middle task */
    for (uint32_t i = 0; i < width; i++) d->succ[k++] = 1 + i;
    for (uint32_t i = 0; i < width; i++) { /* middle i -> its join */
        d->succ_off[1 + i] = k;
        d->succ[k++] = 1 + width + i / PER_JOIN;
        d->ndeps[1 + i] = 1;
    }
    for (uint32_t j = 0; j < joins; j++) { /* join -> sink */
        d->succ_off[1 + width + j] = k;
        d->succ[k++] = sink;
        d->ndeps[1 + width + j] = (j + 1) * PER_JOIN <= width ? PER_JOIN : width - j * PER_JOIN;
    }
    d->succ_off[sink] = k;
    d->succ_off[n] = k;
    d->ndeps[sink] = joins;
}

static void dag_free(dag *d) {
    free(d->ndeps);
    free(d->succ_off);
    free(d->succ);
}

/* ---- the pthread pool ---------------------------------------------------------- */
typedef struct pool {
    pthread_mutex_t lock;
    pthread_cond_t work, done_cv;
    pthread_t *threads;
    int nthreads;
    const dag *d;
    uint32_t *pending;
    uint32_t *queue;  /* FIFO of ready tasks: each task enters once per run */
    uint32_t *counts; /* runs of each task (the tasks' work) */
    uint32_t head, tail, done;
    uint64_t submitted; /* runs submitted by the measuring thread */
    uint64_t started;   /* runs a worker has taken from the submission slot */
    uint64_t completed; /* runs whose every task is done */
    int quit;
    void (*volatile body)(uint32_t *count);
} pool;

/* A task's work: count its run (only the worker running task t writes
 * counts[t]; the main thread reads them after the run's done handshake). */
__attribute__((noinline)) static void count_task(uint32_t *count) { ++*count; }

static void *pool_worker(void *arg) {
    pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->quit && p->started == p->submitted && p->head == p->tail)
            pthread_cond_wait(&p->work, &p->lock);
        if (p->quit) break;
        if (p->started < p->submitted) {
            /* A submitted run: this worker sets it up (every task's pending
             * count, an empty FIFO) and makes the root ready, as a launch's
             * acquire step does on the device. */
            p->started++;
            memcpy(p->pending, p->d->ndeps, p->d->ntasks * sizeof *p->pending);
            p->head = p->tail = p->done = 0;
            p->queue[p->tail++] = 0; /* the root */
            continue;
        }
        uint32_t t = p->queue[p->head++];
        pthread_mutex_unlock(&p->lock);
        p->body(&p->counts[t]);
        pthread_mutex_lock(&p->lock);
        for (uint32_t i = p->d->succ_off[t]; i < p->d->succ_off[t + 1]; i++) {
            uint32_t s = p->d->succ[i];
            if (--p->pending[s] == 0) {
                p->queue[p->tail++] = s;
                pthread_cond_signal(&p->work);
            }
        }
        if (++p->done == p->d->ntasks) { /* the run's completion signal */
            p->completed++;
            pthread_cond_broadcast(&p->done_cv);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void pool_start(pool *p, const dag *d, int nthreads) {
    memset(p, 0, sizeof *p);
    p->d = d;
    p->nthreads = nthreads;
    p->body = count_task;
    p->pending = calloc(d->ntasks, sizeof *p->pending);
    p->queue = calloc(d->ntasks, sizeof *p->queue);
    p->counts = calloc(d->ntasks, sizeof *p->counts);
    p->threads = calloc((size_t)nthreads, sizeof *p->threads);
    if (!p->pending || !p->queue || !p->counts || !p->threads) kb_fatal("out of memory");
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&p->threads[i], NULL, pool_worker, p) != 0)
            kb_fatal("pthread_create failed");
}

/* Submission (the pool's kctx_launch): post one run and return without
 * waiting for it; a worker takes it up. */
static void pool_submit(pool *p) {
    pthread_mutex_lock(&p->lock);
    p->submitted++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
}

/* Completion wait (the pool's stream synchronise): block until every run
 * submitted so far has completed. A run that completed without all its
 * tasks done, or more completions than submissions, fails the program. */
static void pool_wait(pool *p) {
    pthread_mutex_lock(&p->lock);
    while (p->completed < p->submitted) pthread_cond_wait(&p->done_cv, &p->lock);
    uint64_t completed = p->completed, submitted = p->submitted;
    uint32_t done = p->done;
    pthread_mutex_unlock(&p->lock);
    if (completed != submitted || done != p->d->ntasks)
        kb_fatal("pool: %llu runs completed of %llu submitted, %u of %u tasks done in the last: "
                 "the completion signal is wrong",
                 (unsigned long long)completed, (unsigned long long)submitted, done, p->d->ntasks);
}

static void pool_stop(pool *p) {
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done_cv);
    pthread_mutex_destroy(&p->lock);
    free(p->pending);
    free(p->queue);
    free(p->counts);
    free(p->threads);
}

/* ---- checking the work ------------------------------------------------------------- */
/* Every task ran exactly `runs` times: counts[0 .. ntasks) all equal runs. */
static void check_counts(const uint32_t *counts, uint32_t ntasks, long runs, const char *side) {
    for (uint32_t t = 0; t < ntasks; t++)
        if (counts[t] != (uint32_t)runs)
            kb_fatal("%s: task %u of %u ran %u times in %ld runs: the dispatch did not do its "
                     "work",
                     side, t, ntasks, counts[t], runs);
}

/* The kctx side's counters: device memory, zeroed before a measurement and
 * read back after it (outside the timing). */
typedef struct counted {
    uint64_t id;
    uint32_t ntasks;
    sim_devptr counts;
    uint32_t *host;
    kctx_arg arg;
} counted;

static void counted_open(counted *c, kctx_context ctx, uint64_t id, uint32_t width) {
    lb_image img = lb_image_dag(width);
    kb_kctx_check(kctx_prepare(ctx, id, img.bytes, img.size), "kctx_prepare(counting DAG)");
    c->id = id;
    c->ntasks = img.tasks;
    lb_image_free(&img);
    size_t bytes = (size_t)c->ntasks * sizeof(uint32_t);
    lb_sim_check(sim_malloc(&c->counts, bytes), "sim_malloc(counts)");
    c->host = calloc(c->ntasks, sizeof *c->host);
    if (c->host == NULL) kb_fatal("out of memory");
    c->arg = KCTX_TENSOR(c->counts, bytes);
}

static void counted_zero(counted *c, sim_stream s) {
    lb_sim_check(sim_memset_async(c->counts, 0, (size_t)c->ntasks * sizeof(uint32_t), s),
                 "sim_memset_async(counts)");
    lb_sim_check(sim_stream_synchronize(s), "sim_stream_synchronize");
}

static void counted_check(counted *c, long runs, const char *side) {
    lb_sim_check(sim_memcpy(c->host, (void *)(uintptr_t)c->counts,
                            (size_t)c->ntasks * sizeof(uint32_t), SIM_COPY_DEVICE_TO_HOST),
                 "sim_memcpy(counts)");
    check_counts(c->host, c->ntasks, runs, side);
}

static void counted_close(counted *c) {
    lb_sim_check(sim_free(c->counts), "sim_free(counts)");
    free(c->host);
}

/* ---- measurements ------------------------------------------------------------------ */
/* ns per task of `runs` launches (each followed by a synchronise), with
 * every task's run checked. */
static double run_kctx(kctx_context ctx, counted *c, sim_stream s, long runs, const char *side) {
    counted_zero(c, s);
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < runs; i++) {
        kctx_status st = kctx_launch(ctx, c->id, &c->arg, 1, s);
        if (st != KCTX_OK) kb_kctx_check(st, "kctx_launch");
        sim_status ss = sim_stream_synchronize(s);
        if (ss != SIM_OK) lb_sim_check(ss, "sim_stream_synchronize");
    }
    double ns = (double)(kb_now_ns() - t0) / ((double)runs * c->ntasks);
    counted_check(c, runs, side);
    return ns;
}

static double run_pool(pool *p, long runs) {
    memset(p->counts, 0, p->d->ntasks * sizeof *p->counts);
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < runs; i++) {
        pool_submit(p);
        pool_wait(p);
    }
    double ns = (double)(kb_now_ns() - t0) / ((double)runs * p->d->ntasks);
    check_counts(p->counts, p->d->ntasks, runs, "pool");
    return ns;
}

/* One strategy's phase against the pool: its own context and counted
 * callables. Returns non-zero when a line could not be printed. */
static int measure(kctx_strategy strategy, const kb_options *opt, pool *p, uint32_t cores) {
    const int R = opt->repeats;
    const long runs = opt->n;
    const int run_k = !opt->baseline_only, run_b = !opt->kctx_only;
    const char *sname = kctx_strategy_name(strategy);
    char side[64], side1[64];
    snprintf(side, sizeof side, "kctx (%s)", sname);
    snprintf(side1, sizeof side1, "kctx (%s), 1 task", sname);

    kctx_context ctx = lb_context_open(strategy);
    if (lb_context_strategy(ctx) != strategy)
        kb_fatal("the context runs the %s strategy, not %s",
                 kctx_strategy_name(lb_context_strategy(ctx)), sname);
    counted wide, one;
    counted_open(&wide, ctx, 1, WIDTH);
    counted_open(&one, ctx, 2, 0);
    const uint32_t ntasks = wide.ntasks;
    if (p->d->ntasks != ntasks)
        kb_fatal("DAG mismatch: %u tasks in the image, %u in the pool's", ntasks, p->d->ntasks);
    sim_stream s = 0;
    lb_sim_check(sim_stream_create(&s), "sim_stream_create");

    (void)run_kctx(ctx, &wide, s, WARMUP, side);
    (void)run_kctx(ctx, &one, s, WARMUP, side1);
    (void)run_pool(p, WARMUP);
    kb_progress("%s: DAG of %u counting tasks (1 root, %d wide, %u joins, 1 sink), %u cores / pool "
                "threads; %d interleaved repeats of %ld runs per side%s",
                sname, ntasks, WIDTH, ntasks - WIDTH - 2, cores, R, runs,
                opt->quick ? " (quick)" : "");
    double *kv = kb_doubles(R), *bv = kb_doubles(R), *ov = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        /* The sides alternate which goes first: kctx, pool in even repeats;
         * pool, kctx in odd ones. The 1-task figure (information) follows. */
        const int pool_first = r % 2 == 1;
        if (run_b && pool_first) bv[r] = run_pool(p, runs);
        if (run_k) kv[r] = run_kctx(ctx, &wide, s, runs, side);
        if (run_b && !pool_first) bv[r] = run_pool(p, runs);
        if (run_k) ov[r] = run_kctx(ctx, &one, s, runs, side1);
        kb_progress("%s: repeat %d/%d (%s first): kctx %.0f ns/task (%.1f us/launch; a 1-task "
                    "launch %.1f us), pool %.0f ns/task",
                    sname, r + 1, R, pool_first ? "pool" : "kctx", kv[r], kv[r] * ntasks / 1000.0,
                    ov[r] / 1000.0, bv[r]);
    }

    lb_sim_check(sim_stream_destroy(s), "sim_stream_destroy");
    kb_kctx_close(ctx);
    counted_close(&wide);
    counted_close(&one);
    kb_progress("%s: every task ran exactly once per run on every side measured (%d repeats)",
                sname, R);

    int bad = 0;
    if (run_k) {
        bad |= lb_print_compared("task_dispatch", strategy, kv, run_b, bv, R);
        bad |= lb_print_value("task_dispatch_one_task", strategy, ov, "ns", R);
    }
    free(kv), free(bv), free(ov);
    return bad;
}

int main(int argc, char **argv) {
    kb_options opt;
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;

    const uint32_t cores = lb_core_count();
    dag d;
    dag_build(&d, WIDTH);
    pool p;
    pool_start(&p, &d, (int)cores);
    kctx_strategy strategies[2];
    int ns = lb_strategies(opt.strategy, strategies);
    int bad = 0;
    for (int i = 0; i < ns; i++) bad |= measure(strategies[i], &opt, &p, cores);
    pool_stop(&p);
    dag_free(&d);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
