/*
 * sim_roundtrip — one-task launch + synchronise on the sim, against a real
 * OpenCL runtime's round trip: PoCL's one warm kernel enqueue + clFinish
 * (issue 17: the sim's latency is the product's latency for a user's first
 * contact).
 *
 * kctx side (value): L x (kctx_launch of a one-task callable — the counting
 * task of task_dispatch's DAG alone: k_add_u32 adding 1 to a counter in sim
 * device memory — onto a caller stream, sim_stream_synchronize of that
 * stream); time / L. Everything of a launch is in it: the host launch, the
 * sim's stream threads handing the chain's kernels and events to each other
 * (RESIDENT: acquire, workers, scheduler; HOST_ORDERED: acquire, the task
 * kernel, finalize) and the wake-up of the synchronising thread.
 *
 * Baseline (when the build found OpenCL and PoCL is installed): L x (one
 * clEnqueueNDRangeKernel of a warm kernel doing the same work — adding 1 to
 * a counter in a buffer — on an in-order queue, clFinish); time / L.
 *
 * Both sides verify their counters after every measurement (equal to the
 * number of runs), or the program fails without a figure. Each strategy is
 * measured in its own phase with its own context; R repeats, the order of
 * the sides alternating; medians. Without --strategy both, RESIDENT first:
 *   metric sim_roundtrip value=<ns> unit=ns baseline=<ns>|none [ratio=<sim/pocl>] n=<R>
 *   metric sim_roundtrip_host_ordered ...
 *   metric sim_roundtrip_chain value=<ns> unit=ns n=<R>   (and _host_ordered)
 *       the same round trip made of the strategy's platform operations
 *       alone (launch_common's baseline chain: the records, waits and
 *       kernels of one launch on plain sim streams, k_noop for every kernel,
 *       then a synchronise): what the sim's hand-offs cost without kctx
 *       (information)
 * Goal (issue 17): ratio <= 1.0.
 */
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KCTX_HAVE_OPENCL
#include "pocl.h"
#endif

enum {
    DEFAULT_REPEATS = 11,
    QUICK_REPEATS = 3,
    WARMUP = 20
};
#define DEFAULT_N 200L /* round trips per measurement */
#define QUICK_N 30L

/* ---- the sim side -------------------------------------------------------- */
typedef struct sim_side {
    kctx_context ctx;
    sim_stream s;
    sim_devptr counter;
    kctx_arg arg;
    uint64_t runs;
} sim_side;

static void sim_open(sim_side *S, kctx_strategy strategy) {
    memset(S, 0, sizeof *S);
    S->ctx = lb_context_open(strategy);
    if (lb_context_strategy(S->ctx) != strategy)
        kb_fatal("the context runs the %s strategy, not %s",
                 kctx_strategy_name(lb_context_strategy(S->ctx)), kctx_strategy_name(strategy));
    lb_image img = lb_image_dag(0);
    kb_kctx_check(kctx_prepare(S->ctx, 1, img.bytes, img.size), "kctx_prepare(counted task)");
    lb_image_free(&img);
    lb_sim_check(sim_malloc(&S->counter, sizeof(uint32_t)), "sim_malloc(counter)");
    lb_sim_check(sim_stream_create(&S->s), "sim_stream_create");
    lb_sim_check(sim_memset_async(S->counter, 0, sizeof(uint32_t), S->s), "sim_memset_async");
    lb_sim_check(sim_stream_synchronize(S->s), "sim_stream_synchronize");
    S->arg = KCTX_TENSOR(S->counter, sizeof(uint32_t));
}

static double sim_run(sim_side *S, long n) {
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        kctx_status st = kctx_launch(S->ctx, 1, &S->arg, 1, S->s);
        if (st != KCTX_OK) kb_kctx_check(st, "kctx_launch");
        sim_status ss = sim_stream_synchronize(S->s);
        if (ss != SIM_OK) lb_sim_check(ss, "sim_stream_synchronize");
    }
    uint64_t t1 = kb_now_ns();
    S->runs += (uint64_t)n;
    uint32_t got = 0;
    lb_sim_check(
        sim_memcpy(&got, (void *)(uintptr_t)S->counter, sizeof got, SIM_COPY_DEVICE_TO_HOST),
        "sim_memcpy(counter)");
    if (got != (uint32_t)S->runs)
        kb_fatal("sim: the task ran %u times in %llu launches", got, (unsigned long long)S->runs);
    return (double)(t1 - t0) / (double)n;
}

/* The strategy's chain of plain sim operations + a synchronise, per round
 * trip (no kctx logic; k_noop kernels). */
static double chain_run(lb_chain *ch, sim_stream s, kctx_strategy strategy, long n) {
    const kctx_platform_ops *ops = lb_sim_ops();
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        int st = strategy == KCTX_STRATEGY_HOST_ORDERED
                     ? lb_chain_enqueue_ho(ch, ops, s, 1, 1, 2, 1)
                     : lb_chain_enqueue(ch, ops, s, 1, 1, 1);
        if (st) lb_sim_check((sim_status)st, "baseline chain");
        sim_status ss = sim_stream_synchronize(s);
        if (ss != SIM_OK) lb_sim_check(ss, "sim_stream_synchronize");
    }
    return (double)(kb_now_ns() - t0) / (double)n;
}

static void sim_close(sim_side *S) {
    lb_sim_check(sim_stream_destroy(S->s), "sim_stream_destroy");
    kb_kctx_close(S->ctx);
    lb_sim_check(sim_free(S->counter), "sim_free");
}

/* ---- the PoCL side ------------------------------------------------------- */
#ifdef KCTX_HAVE_OPENCL
typedef struct cl_side {
    kb_pocl pocl;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem counter;
    uint64_t runs;
} cl_side;

/* 1 when PoCL's CPU device is open, 0 when this machine has none. */
static int cl_open(cl_side *C) {
    char why[256];
    cl_int e;
    memset(C, 0, sizeof *C);
    if (!kb_pocl_open(&C->pocl, why, sizeof why)) {
        kb_progress("%s: baseline=none", why);
        return 0;
    }
    C->queue = kb_pocl_queue(&C->pocl);
    C->program = kb_pocl_program(
        &C->pocl, "__kernel void count(__global uint *counter) { counter[0] += 1u; }\n");
    C->kernel = kb_pocl_kernel(C->program, "count");
    const cl_uint zero = 0;
    C->counter = clCreateBuffer(C->pocl.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                sizeof zero, (void *)&zero, &e);
    kb_cl_check(e, "clCreateBuffer");
    kb_cl_check(clSetKernelArg(C->kernel, 0, sizeof C->counter, &C->counter), "clSetKernelArg");
    return 1;
}

static double cl_run(cl_side *C, long n) {
    const size_t global = 1;
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        cl_int e =
            clEnqueueNDRangeKernel(C->queue, C->kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
        if (e == CL_SUCCESS) e = clFinish(C->queue);
        if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueNDRangeKernel + clFinish");
    }
    uint64_t t1 = kb_now_ns();
    C->runs += (uint64_t)n;
    cl_uint got = 0;
    kb_cl_check(
        clEnqueueReadBuffer(C->queue, C->counter, CL_TRUE, 0, sizeof got, &got, 0, NULL, NULL),
        "clEnqueueReadBuffer");
    if (got != (cl_uint)C->runs)
        kb_fatal("PoCL: the kernel ran %u times in %llu enqueues", got,
                 (unsigned long long)C->runs);
    return (double)(t1 - t0) / (double)n;
}

static void cl_close(cl_side *C) {
    kb_cl_check(clReleaseMemObject(C->counter), "clReleaseMemObject");
    kb_cl_check(clReleaseKernel(C->kernel), "clReleaseKernel");
    kb_cl_check(clReleaseProgram(C->program), "clReleaseProgram");
    kb_cl_check(clReleaseCommandQueue(C->queue), "clReleaseCommandQueue");
    kb_pocl_close(&C->pocl);
}
#else
typedef struct cl_side {
    int unused;
} cl_side;
static int cl_open(cl_side *C) {
    (void)C;
    kb_progress("built without OpenCL: baseline=none");
    return 0;
}
static double cl_run(cl_side *C, long n) {
    (void)C, (void)n;
    return 0.0;
}
static void cl_close(cl_side *C) { (void)C; }
#endif

/* ---- one strategy's phase ------------------------------------------------- */
static int measure(kctx_strategy strategy, const kb_options *opt, cl_side *C, int run_b) {
    const int R = opt->repeats;
    const long n = opt->n;
    const int run_k = !opt->baseline_only;
    const char *sname = kctx_strategy_name(strategy);
    sim_side S;
    lb_chain ch;
    sim_stream cs = 0;
    if (run_k) {
        sim_open(&S, strategy);
        (void)sim_run(&S, WARMUP);
        lb_chain_open(&ch);
        lb_sim_check(sim_stream_create(&cs), "sim_stream_create");
        (void)chain_run(&ch, cs, strategy, WARMUP);
    }
    if (run_b) (void)cl_run(C, WARMUP);
    kb_progress("%s: %d interleaved repeats of %ld round trips per side%s", sname, R, n,
                opt->quick ? " (quick)" : "");
    double *kv = kb_doubles(R), *bv = kb_doubles(R), *cv = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        const int base_first = r % 2 == 1;
        if (run_b && base_first) bv[r] = cl_run(C, n);
        if (run_k) kv[r] = sim_run(&S, n);
        if (run_b && !base_first) bv[r] = cl_run(C, n);
        if (run_k) cv[r] = chain_run(&ch, cs, strategy, n);
        kb_progress("%s: repeat %d/%d (%s first): sim launch + sync %.1f us, PoCL enqueue + "
                    "finish %.1f us; the platform chain alone + sync %.1f us",
                    sname, r + 1, R, base_first ? "PoCL" : "sim", kv[r] / 1000.0, bv[r] / 1000.0,
                    cv[r] / 1000.0);
    }
    if (run_k) {
        sim_close(&S);
        lb_sim_check(sim_stream_destroy(cs), "sim_stream_destroy");
        lb_chain_close(&ch);
    }
    int bad = 0;
    if (run_k) {
        bad |= lb_print_compared("sim_roundtrip", strategy, kv, run_b, bv, R);
        bad |= lb_print_value("sim_roundtrip_chain", strategy, cv, "ns", R);
    }
    free(kv), free(bv), free(cv);
    return bad;
}

int main(int argc, char **argv) {
    kb_options opt;
    kb_set_program_name("kctx_bench_sim_roundtrip");
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    cl_side C;
    memset(&C, 0, sizeof C);
    int run_b = !opt.kctx_only && cl_open(&C);
    if (opt.baseline_only && !run_b) kb_fatal("--baseline-only, but no PoCL baseline is available");
    kctx_strategy strategies[2];
    int ns = lb_strategies(opt.strategy, strategies);
    int bad = 0;
    for (int i = 0; i < ns; i++) bad |= measure(strategies[i], &opt, &C, run_b);
    if (run_b) cl_close(&C);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
