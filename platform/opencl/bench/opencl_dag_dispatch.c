/*
 * opencl_dag_dispatch — time per task of a 262-task DAG callable launched
 * through kctx on the opencl platform (PoCL's CPU device), against the same
 * DAG enqueued by hand with event wait lists on one queue.
 *
 * The DAG (both sides, task_dispatch's shape): one root; W = 256 tasks
 * depending on it; ceil(W / 64) = 4 joins (an image allows at most 64
 * dependencies per task) each depending on 64 of them; one sink depending on
 * the joins: 262 tasks. Each task adds 1 to its own counter (counts[t], in
 * fine-grained SVM): after every measurement every counter of each side
 * must equal that side's number of runs so far — every task ran exactly
 * once per run — or the program fails without a figure.
 *
 * kctx side (value): L x (kctx_launch of the DAG callable onto the caller's
 * in-order queue, clFinish of that queue); time / (L x tasks). The task
 * kernel is t_count in OpenCL C with kctx's task ABI (header by value, the
 * task gate), built at prepare from the image's OPENCL_C variant. A launch
 * is HOST_ORDERED: the acquire step, the 262 task kernels in the image's
 * topological order on kctx's AICore queue (each with its header and
 * bindings set per call), the finalize step, and the 5 markers and 4
 * barriers that join kctx's queues to the caller's.
 *
 * Baseline (by hand): per run, the 262 kernels of a plain count kernel (the
 * same work, no task ABI) enqueued in the same order on one in-order queue
 * of the same context, each with the events of the tasks it depends on as
 * its wait list (the root none, a middle task the root's, a join 64, the
 * sink 4) and returning its own event; clFinish; the 262 events released.
 * L runs; time / (L x tasks).
 *
 * R repeats, the order of the sides alternating (kctx first on even
 * repeats, the baseline on odd ones); medians:
 *   metric opencl_dag_dispatch value=<ns per task> unit=ns baseline=<ns per task> ratio=<kctx/hand> n=<R>
 *   metric opencl_dag_dispatch_submit value=<ns per task> unit=ns baseline=<ns per task> ratio=<..> n=<R>
 *       the host time of the submission alone, per task (kctx_launch; the
 *       hand loop of 262 enqueues), each run enqueued behind a barrier on a
 *       user event that is completed after it, so that nothing executes
 *       meanwhile (information: what the runs' submission costs without
 *       PoCL's workers competing for the CPUs)
 *   metric opencl_dag_dispatch_one_task value=<ns> unit=ns baseline=<ns> ratio=<..> n=<R>
 *       the DAG's root alone (a 1-task callable) through kctx, launch +
 *       clFinish, against one kernel + clFinish by hand (information: the
 *       fixed cost of a launch)
 * Without PoCL (or kctx's opencl platform) it prints
 * "opencl_dag_dispatch: not measured: ..." on stderr and exits 0.
 */
#include "ocl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DEFAULT_REPEATS = 11,
    QUICK_REPEATS = 3,
    WIDTH = 256,
    WARMUP = 3
};
#define DEFAULT_N 20L /* DAG runs per measurement */
#define QUICK_N 3L

typedef struct side {
    uint32_t ntasks;
    uint32_t *counts;
    uint64_t runs;
} side;

typedef struct bench {
    oc_env env;
    /* kctx */
    cl_command_queue q;
    kctx_context ctx;
    side kwide, kone;
    /* baseline */
    cl_command_queue bq;
    cl_program bprog;
    cl_kernel count;
    oc_dag dag;
    cl_event *ev;
    cl_event *wait;
    side bwide, bone;
} bench;

static void side_open(const bench *B, side *s, uint32_t ntasks) {
    s->ntasks = ntasks;
    s->counts = oc_svm_alloc(&B->env, (size_t)ntasks * sizeof(uint32_t));
    s->runs = 0;
}

static void side_verify(const side *s, const char *what) {
    for (uint32_t t = 0; t < s->ntasks; t++)
        if (s->counts[t] != (uint32_t)s->runs)
            kb_fatal("%s: task %u ran %u times in %llu runs", what, t, s->counts[t],
                     (unsigned long long)s->runs);
}

/* ---- kctx ------------------------------------------------------------------ */

/* One measurement: ns per task of the whole runs, and of their submission
 * calls alone (kctx_launch; the hand loop of enqueues). */
typedef struct sample {
    double total, submit;
} sample;

/* A barrier on a new user event at the end of q: nothing enqueued after it
 * runs before unhold. */
static cl_event hold(const bench *B, cl_command_queue q) {
    cl_int e = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(B->env.context, &e);
    kb_cl_check(e, "clCreateUserEvent");
    kb_cl_check(clEnqueueBarrierWithWaitList(q, 1, &gate, NULL),
                "clEnqueueBarrierWithWaitList(gate)");
    return gate;
}

static void unhold(cl_event gate) {
    kb_cl_check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
    kb_cl_check(clReleaseEvent(gate), "clReleaseEvent(gate)");
}

/* L x (launch of callable `id` on counts, clFinish). Held: every launch is
 * enqueued behind a hold released after it (only the submission is
 * meaningful then). */
static sample run_kctx(bench *B, side *s, uint64_t id, long runs, const char *what, int held) {
    kctx_arg arg = KCTX_TENSOR((uint64_t)(uintptr_t)s->counts, s->ntasks * sizeof(uint32_t));
    uint64_t submit = 0;
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < runs; i++) {
        cl_event gate = held ? hold(B, B->q) : NULL;
        uint64_t ts = kb_now_ns();
        kctx_status st = kctx_launch(B->ctx, id, &arg, 1, (uint64_t)(uintptr_t)B->q);
        submit += kb_now_ns() - ts;
        if (gate) unhold(gate);
        if (st != KCTX_OK) kb_kctx_check(st, "kctx_launch");
        cl_int e = clFinish(B->q);
        if (e != CL_SUCCESS) kb_cl_check(e, "clFinish");
    }
    uint64_t t1 = kb_now_ns();
    s->runs += (uint64_t)runs;
    side_verify(s, what);
    const double tasks = (double)runs * s->ntasks;
    return (sample){(double)(t1 - t0) / tasks, (double)submit / tasks};
}

/* ---- the baseline ------------------------------------------------------------ */

/* One run of the DAG's first `ntasks` tasks on counts, enqueued by hand;
 * returns the ns of the enqueues. */
static uint64_t base_run(bench *B, side *s, int held) {
    const size_t global = 1;
    const cl_ulong one = 1;
    const oc_dag *d = &B->dag;
    cl_event gate = held ? hold(B, B->bq) : NULL;
    uint64_t ts = kb_now_ns();
    cl_int e = clSetKernelArg(B->count, 1, sizeof one, &one);
    if (e != CL_SUCCESS) kb_cl_check(e, "clSetKernelArg(value)");
    for (uint32_t t = 0; t < s->ntasks; t++) {
        cl_uint nw = d->dep_off[t + 1] - d->dep_off[t];
        for (cl_uint i = 0; i < nw; i++) B->wait[i] = B->ev[d->deps[d->dep_off[t] + i]];
        e = clSetKernelArgSVMPointer(B->count, 0, &s->counts[t]);
        if (e != CL_SUCCESS) kb_cl_check(e, "clSetKernelArgSVMPointer(counter)");
        e = clEnqueueNDRangeKernel(B->bq, B->count, 1, NULL, &global, NULL, nw, nw ? B->wait : NULL,
                                   &B->ev[t]);
        if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueNDRangeKernel");
    }
    uint64_t submit = kb_now_ns() - ts;
    if (gate) unhold(gate);
    e = clFinish(B->bq);
    if (e != CL_SUCCESS) kb_cl_check(e, "clFinish");
    for (uint32_t t = 0; t < s->ntasks; t++) {
        e = clReleaseEvent(B->ev[t]);
        if (e != CL_SUCCESS) kb_cl_check(e, "clReleaseEvent");
    }
    return submit;
}

static sample run_base(bench *B, side *s, long runs, const char *what, int held) {
    uint64_t submit = 0;
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < runs; i++) submit += base_run(B, s, held);
    uint64_t t1 = kb_now_ns();
    s->runs += (uint64_t)runs;
    side_verify(s, what);
    const double tasks = (double)runs * s->ntasks;
    return (sample){(double)(t1 - t0) / tasks, (double)submit / tasks};
}

int main(int argc, char **argv) {
    kb_options opt;
    kb_set_program_name("kctx_bench_opencl_dag_dispatch");
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    const int R = opt.repeats;
    const long runs = opt.n, runs1 = opt.n * 16;
    const int run_k = !opt.baseline_only, run_b = !opt.kctx_only;

    bench B;
    memset(&B, 0, sizeof B);
    if (!oc_bench_open("opencl_dag_dispatch", &B.env, &B.q, &B.ctx)) return EXIT_SUCCESS;
    oc_image wide = oc_image_dag(WIDTH), one = oc_image_dag(0);
    const uint32_t ntasks = wide.tasks;
    kb_kctx_check(kctx_prepare(B.ctx, 1, wide.bytes, wide.size), "kctx_prepare(wide DAG)");
    kb_kctx_check(kctx_prepare(B.ctx, 2, one.bytes, one.size), "kctx_prepare(one task)");
    oc_image_free(&wide);
    oc_image_free(&one);
    side_open(&B, &B.kwide, ntasks);
    side_open(&B, &B.kone, 1);

    B.bq = kb_pocl_queue(&B.env);
    B.bprog = kb_pocl_program(&B.env, oc_baseline_source);
    B.count = kb_pocl_kernel(B.bprog, "count");
    oc_dag_build(&B.dag, WIDTH);
    if (B.dag.ntasks != ntasks)
        kb_fatal("the baseline's DAG has %u tasks, kctx's %u", B.dag.ntasks, ntasks);
    B.ev = calloc(ntasks, sizeof *B.ev);
    B.wait = calloc(KCTX_IMAGE_MAX_DEPS, sizeof *B.wait);
    if (!B.ev || !B.wait) kb_fatal("out of memory");
    side_open(&B, &B.bwide, ntasks);
    side_open(&B, &B.bone, 1);

    /* warm both sides (PoCL's kernel cache, kctx's first launches) */
    (void)run_kctx(&B, &B.kwide, 1, WARMUP, "kctx (warm-up)", 0);
    (void)run_base(&B, &B.bwide, WARMUP, "baseline (warm-up)", 0);
    (void)run_kctx(&B, &B.kone, 2, WARMUP, "kctx one task (warm-up)", 0);
    (void)run_base(&B, &B.bone, WARMUP, "baseline one task (warm-up)", 0);
    kb_progress("DAG of %u tasks (root, %d wide, %u joins, sink); %d interleaved repeats of %ld "
                "runs per side (one-task figure: %ld runs)%s",
                ntasks, WIDTH, ntasks - WIDTH - 2, R, runs, runs1, opt.quick ? " (quick)" : "");

    double *kv = kb_doubles(R), *bv = kb_doubles(R), *k1 = kb_doubles(R), *b1 = kb_doubles(R);
    double *ks = kb_doubles(R), *bs = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        const int base_first = r % 2 == 1;
        if (run_b && base_first) bv[r] = run_base(&B, &B.bwide, runs, "baseline", 0).total;
        if (run_k) kv[r] = run_kctx(&B, &B.kwide, 1, runs, "kctx", 0).total;
        if (run_b && !base_first) bv[r] = run_base(&B, &B.bwide, runs, "baseline", 0).total;
        if (run_b && base_first) bs[r] = run_base(&B, &B.bwide, runs, "baseline held", 1).submit;
        if (run_k) ks[r] = run_kctx(&B, &B.kwide, 1, runs, "kctx held", 1).submit;
        if (run_b && !base_first) bs[r] = run_base(&B, &B.bwide, runs, "baseline held", 1).submit;
        if (run_b && base_first) b1[r] = run_base(&B, &B.bone, runs1, "baseline one task", 0).total;
        if (run_k) k1[r] = run_kctx(&B, &B.kone, 2, runs1, "kctx one task", 0).total;
        if (run_b && !base_first)
            b1[r] = run_base(&B, &B.bone, runs1, "baseline one task", 0).total;
        kb_progress(
            "repeat %d/%d (%s first): kctx %.0f ns/task (%.1f us/run, held submit %.0f "
            "ns/task), hand %.0f ns/task (%.1f us/run, held submit %.0f ns/task); one task: "
            "kctx %.1f us, hand %.1f us",
            r + 1, R, base_first ? "hand" : "kctx", kv[r], kv[r] * ntasks / 1000.0, ks[r], bv[r],
            bv[r] * ntasks / 1000.0, bs[r], k1[r] / 1000.0, b1[r] / 1000.0);
    }
    kb_progress("every task ran exactly once per run on every side measured (kctx %llu runs, "
                "hand %llu runs of %u tasks)",
                (unsigned long long)B.kwide.runs, (unsigned long long)B.bwide.runs, ntasks);

    kb_kctx_close(B.ctx);
    kb_cl_check(clReleaseKernel(B.count), "clReleaseKernel");
    kb_cl_check(clReleaseProgram(B.bprog), "clReleaseProgram");
    side *sides[4] = {&B.kwide, &B.kone, &B.bwide, &B.bone};
    for (int i = 0; i < 4; i++) clSVMFree(B.env.context, sides[i]->counts);
    kb_cl_check(clReleaseCommandQueue(B.q), "clReleaseCommandQueue");
    kb_cl_check(clReleaseCommandQueue(B.bq), "clReleaseCommandQueue");
    kb_kctx_check(kctx_opencl_bind(NULL, NULL, NULL), "kctx_opencl_bind(NULL)");
    kb_pocl_close(&B.env);
    oc_dag_free(&B.dag);
    free(B.ev);
    free(B.wait);

    int bad = 0;
    if (run_k) {
        bad |= kb_metric_print_compared("opencl_dag_dispatch", kb_median(kv, (size_t)R), "ns",
                                        run_b, kb_median(bv, (size_t)R), R) != 0;
        bad |= kb_metric_print_compared("opencl_dag_dispatch_submit", kb_median(ks, (size_t)R),
                                        "ns", run_b, kb_median(bs, (size_t)R), R) != 0;
        bad |= kb_metric_print_compared("opencl_dag_dispatch_one_task", kb_median(k1, (size_t)R),
                                        "ns", run_b, kb_median(b1, (size_t)R), R) != 0;
    }
    free(kv), free(bv), free(k1), free(b1), free(ks), free(bs);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
