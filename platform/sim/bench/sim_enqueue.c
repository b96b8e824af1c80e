/*
 * sim_enqueue — time per operation of N enqueues of a warm, empty, 1-block
 * kernel on one sim stream followed by one synchronise, divided by N.
 *
 * Baseline (when the build found OpenCL and PoCL is installed): the same
 * with OpenCL — N clEnqueueNDRangeKernel of a warm empty kernel (global size
 * 1) on one in-order queue, then one clFinish.
 *
 * The two sides are interleaved A B A B for R repeats and the medians are
 * reported (docs/benchmarks.md):
 *
 *   metric sim_enqueue value=<sim ns/op> unit=ns baseline=<pocl ns/op>|none [ratio=<sim/pocl>] n=<R>
 *   metric sim_enqueue_submit ...   host time of the N enqueue calls alone, per op
 *   metric sim_enqueue_pocl ...     the baseline's absolute time per op
 *
 * Metric lines are printed only after everything was released successfully;
 * any API failure prints a message and exits non-zero.
 */
#include "bench_util.h"
#include "kctx_test_sim.h"

#include <kctx/sim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KCTX_HAVE_OPENCL
#include "pocl.h"
#endif

#ifndef KCTX_BENCH_KERNEL_MODULE
#error "KCTX_BENCH_KERNEL_MODULE (path of the sim_test_kernels module) must be defined"
#endif

enum {
    DEFAULT_REPEATS = 7,
    QUICK_REPEATS = 3,
    WARMUP_OPS = 64
};
#define DEFAULT_N 10000L
#define QUICK_N 2000L

/* One measurement: nanoseconds per operation, total and enqueue-only. */
typedef struct sample {
    double total_ns_per_op;
    double submit_ns_per_op;
} sample;

/* ------------------------------------------------------------------------
 * The sim side
 * ---------------------------------------------------------------------- */
typedef struct sim_side {
    sim_module module;
    sim_function fn;
    sim_stream stream;
} sim_side;

static void sim_check(sim_status s, const char *what) {
    if (s != SIM_OK)
        kb_fatal("%s failed: %s (%s)", what, sim_status_name(s), sim_last_error_message());
}

static void sim_side_open(sim_side *side) {
    char why[1024];
    sim_status st = SIM_INVALID_VALUE;
    memset(side, 0, sizeof *side);
    if (ktc_sim_module_load_file(&side->module, KCTX_BENCH_KERNEL_MODULE, &st, why, sizeof why) !=
            0 ||
        st != SIM_OK)
        kb_fatal("the sim kernel module: %s", why);
    sim_check(sim_module_get_function(&side->fn, side->module, "k_noop"),
              "sim_module_get_function(k_noop)");
    sim_check(sim_stream_create(&side->stream), "sim_stream_create");
    for (int i = 0; i < WARMUP_OPS; i++)
        sim_check(sim_launch_kernel(side->stream, side->fn, SIM_TARGET_AICORE, 1, NULL, 0),
                  "sim_launch_kernel (warm-up)");
    sim_check(sim_stream_synchronize(side->stream), "sim_stream_synchronize (warm-up)");
}

static sample sim_side_run(const sim_side *side, long n) {
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        sim_status s = sim_launch_kernel(side->stream, side->fn, SIM_TARGET_AICORE, 1, NULL, 0);
        if (s != SIM_OK) sim_check(s, "sim_launch_kernel");
    }
    uint64_t t1 = kb_now_ns();
    sim_check(sim_stream_synchronize(side->stream), "sim_stream_synchronize");
    uint64_t t2 = kb_now_ns();
    sample r = {(double)(t2 - t0) / (double)n, (double)(t1 - t0) / (double)n};
    return r;
}

static void sim_side_close(sim_side *side) {
    sim_check(sim_stream_destroy(side->stream), "sim_stream_destroy");
    sim_check(sim_module_unload(side->module), "sim_module_unload");
    memset(side, 0, sizeof *side);
}

/* ------------------------------------------------------------------------
 * The OpenCL (PoCL) side
 * ---------------------------------------------------------------------- */
#ifdef KCTX_HAVE_OPENCL
typedef struct cl_side {
    kb_pocl pocl;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
} cl_side;

/* Open PoCL's CPU device and warm an empty kernel. Returns 1 when open, 0
 * when no PoCL CPU device is present (the baseline is then reported as
 * none); any other failure is fatal. */
static int cl_side_open(cl_side *side) {
    char why[256];
    memset(side, 0, sizeof *side);
    if (!kb_pocl_open(&side->pocl, why, sizeof why)) {
        kb_progress("%s: baseline=none", why);
        return 0;
    }
    side->queue = kb_pocl_queue(&side->pocl);
    side->program = kb_pocl_program(&side->pocl, "__kernel void noop(void) {}\n");
    side->kernel = kb_pocl_kernel(side->program, "noop");
    const size_t global = 1;
    for (int i = 0; i < WARMUP_OPS; i++)
        kb_cl_check(clEnqueueNDRangeKernel(side->queue, side->kernel, 1, NULL, &global, NULL, 0,
                                           NULL, NULL),
                    "clEnqueueNDRangeKernel (warm-up)");
    kb_cl_check(clFinish(side->queue), "clFinish (warm-up)");
    return 1;
}

static sample cl_side_run(const cl_side *side, long n) {
    const size_t global = 1;
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        cl_int e = clEnqueueNDRangeKernel(side->queue, side->kernel, 1, NULL, &global, NULL, 0,
                                          NULL, NULL);
        if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueNDRangeKernel");
    }
    uint64_t t1 = kb_now_ns();
    kb_cl_check(clFinish(side->queue), "clFinish");
    uint64_t t2 = kb_now_ns();
    sample r = {(double)(t2 - t0) / (double)n, (double)(t1 - t0) / (double)n};
    return r;
}

static void cl_side_close(cl_side *side) {
    kb_cl_check(clReleaseKernel(side->kernel), "clReleaseKernel");
    kb_cl_check(clReleaseProgram(side->program), "clReleaseProgram");
    kb_cl_check(clReleaseCommandQueue(side->queue), "clReleaseCommandQueue");
    kb_pocl_close(&side->pocl);
    memset(side, 0, sizeof *side);
}
#endif /* KCTX_HAVE_OPENCL */

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    kb_options opt;
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;

    const int run_sim = !opt.baseline_only;
    int run_cl = !opt.kctx_only;
    const int R = opt.repeats;
    const long n = opt.n;

    double *sim_total = calloc((size_t)R, sizeof(double));
    double *sim_submit = calloc((size_t)R, sizeof(double));
    double *cl_total = calloc((size_t)R, sizeof(double));
    double *cl_submit = calloc((size_t)R, sizeof(double));
    if (!sim_total || !sim_submit || !cl_total || !cl_submit) kb_fatal("out of memory");

    sim_side sim;
    memset(&sim, 0, sizeof sim);
    if (run_sim) {
        kb_progress("sim: loading %s, k_noop on AICORE, block_dim 1", KCTX_BENCH_KERNEL_MODULE);
        sim_side_open(&sim);
    }
#ifdef KCTX_HAVE_OPENCL
    cl_side cl;
    memset(&cl, 0, sizeof cl);
    if (run_cl) {
        run_cl = cl_side_open(&cl);
        if (run_cl)
            kb_progress("baseline: OpenCL platform \"%s\", device \"%s\"", cl.pocl.platform_name,
                        cl.pocl.device_name);
    }
#else
    if (run_cl) kb_progress("built without OpenCL: baseline=none");
    run_cl = 0;
#endif
    if (!run_sim && !run_cl)
        kb_fatal("--baseline-only, but no OpenCL (PoCL) baseline is available");

    kb_progress("%d interleaved repeats of %ld enqueues + 1 synchronise%s", R, n,
                opt.quick ? " (quick)" : "");
    for (int r = 0; r < R; r++) {
        char a[96] = "", b[96] = "";
        if (run_sim) {
            sample s = sim_side_run(&sim, n);
            sim_total[r] = s.total_ns_per_op;
            sim_submit[r] = s.submit_ns_per_op;
            snprintf(a, sizeof a, " sim %.1f ns/op (enqueue %.1f)", s.total_ns_per_op,
                     s.submit_ns_per_op);
        }
#ifdef KCTX_HAVE_OPENCL
        if (run_cl) {
            sample s = cl_side_run(&cl, n);
            cl_total[r] = s.total_ns_per_op;
            cl_submit[r] = s.submit_ns_per_op;
            snprintf(b, sizeof b, " pocl %.1f ns/op (enqueue %.1f)", s.total_ns_per_op,
                     s.submit_ns_per_op);
        }
#endif
        kb_progress("repeat %d/%d:%s%s", r + 1, R, a, b);
    }

    if (run_sim) sim_side_close(&sim);
#ifdef KCTX_HAVE_OPENCL
    if (run_cl) cl_side_close(&cl);
#endif

    int bad = 0;
    if (run_sim) {
        double v = kb_median(sim_total, (size_t)R);
        double vs = kb_median(sim_submit, (size_t)R);
        double b = run_cl ? kb_median(cl_total, (size_t)R) : 0.0;
        double bs = run_cl ? kb_median(cl_submit, (size_t)R) : 0.0;
        bad |= kb_metric_print_compared("sim_enqueue", v, "ns", run_cl, b, R) != 0;
        bad |= kb_metric_print_compared("sim_enqueue_submit", vs, "ns", run_cl, bs, R) != 0;
    }
    if (run_cl) {
        kb_metric m = {"sim_enqueue_pocl",
                       kb_median(cl_total, (size_t)R),
                       "ns",
                       KB_BASELINE_OMIT,
                       0.0,
                       0,
                       0.0,
                       R};
        bad |= kb_metric_print(&m) != 0;
    }
    free(sim_total);
    free(sim_submit);
    free(cl_total);
    free(cl_submit);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
