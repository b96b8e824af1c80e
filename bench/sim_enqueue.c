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
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
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
#define POCL_PLATFORM_NAME "Portable Computing Language"

typedef struct cl_side {
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    char platform[256];
    char device[256];
} cl_side;

static const char *cl_error_name(cl_int e) {
    switch (e) {
#define CL_NAME_(c) \
    case c:         \
        return #c;
        CL_NAME_(CL_SUCCESS)
        CL_NAME_(CL_DEVICE_NOT_FOUND)
        CL_NAME_(CL_DEVICE_NOT_AVAILABLE)
        CL_NAME_(CL_COMPILER_NOT_AVAILABLE)
        CL_NAME_(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        CL_NAME_(CL_OUT_OF_RESOURCES)
        CL_NAME_(CL_OUT_OF_HOST_MEMORY)
        CL_NAME_(CL_BUILD_PROGRAM_FAILURE)
        CL_NAME_(CL_INVALID_VALUE)
        CL_NAME_(CL_INVALID_DEVICE_TYPE)
        CL_NAME_(CL_INVALID_PLATFORM)
        CL_NAME_(CL_INVALID_DEVICE)
        CL_NAME_(CL_INVALID_CONTEXT)
        CL_NAME_(CL_INVALID_QUEUE_PROPERTIES)
        CL_NAME_(CL_INVALID_COMMAND_QUEUE)
        CL_NAME_(CL_INVALID_PROGRAM)
        CL_NAME_(CL_INVALID_PROGRAM_EXECUTABLE)
        CL_NAME_(CL_INVALID_KERNEL_NAME)
        CL_NAME_(CL_INVALID_KERNEL)
        CL_NAME_(CL_INVALID_KERNEL_ARGS)
        CL_NAME_(CL_INVALID_WORK_DIMENSION)
        CL_NAME_(CL_INVALID_WORK_GROUP_SIZE)
        CL_NAME_(CL_INVALID_GLOBAL_WORK_SIZE)
        CL_NAME_(CL_INVALID_OPERATION)
#undef CL_NAME_
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return "CL_(unknown error)";
    }
}

static void cl_check(cl_int e, const char *what) {
    if (e != CL_SUCCESS) kb_fatal("%s failed: %s (%d)", what, cl_error_name(e), (int)e);
}

/* Open PoCL's CPU device. Returns 1 when open, 0 when no PoCL platform or
 * no CPU device is present (the baseline is then reported as none); any
 * other failure is fatal. */
static int cl_side_open(cl_side *side) {
    const char *source = "__kernel void noop(void) {}\n";
    cl_uint nplat = 0;
    cl_platform_id plats[16];
    cl_platform_id plat = NULL;
    cl_device_id dev = NULL;
    cl_int e;

    memset(side, 0, sizeof *side);
    e = clGetPlatformIDs(16, plats, &nplat);
    if (e == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (e == CL_SUCCESS && nplat == 0)) {
        kb_progress("no OpenCL platform found: baseline=none");
        return 0;
    }
    cl_check(e, "clGetPlatformIDs");
    if (nplat > 16) nplat = 16;
    for (cl_uint i = 0; i < nplat && plat == NULL; i++) {
        char name[256] = {0};
        cl_check(clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name - 1, name, NULL),
                 "clGetPlatformInfo(CL_PLATFORM_NAME)");
        if (strstr(name, POCL_PLATFORM_NAME) != NULL) {
            plat = plats[i];
            snprintf(side->platform, sizeof side->platform, "%s", name);
        }
    }
    if (plat == NULL) {
        kb_progress("no \"%s\" (PoCL) OpenCL platform among %u: baseline=none", POCL_PLATFORM_NAME,
                    (unsigned)nplat);
        return 0;
    }
    cl_uint ndev = 0;
    e = clGetDeviceIDs(plat, CL_DEVICE_TYPE_CPU, 1, &dev, &ndev);
    if (e == CL_DEVICE_NOT_FOUND || (e == CL_SUCCESS && ndev == 0)) {
        kb_progress("PoCL has no CPU device: baseline=none");
        return 0;
    }
    cl_check(e, "clGetDeviceIDs(CL_DEVICE_TYPE_CPU)");
    cl_check(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof side->device - 1, side->device, NULL),
             "clGetDeviceInfo(CL_DEVICE_NAME)");

    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    side->context = clCreateContext(props, 1, &dev, NULL, NULL, &e);
    cl_check(e, "clCreateContext");
    side->queue = clCreateCommandQueue(side->context, dev, 0 /* in order, no profiling */, &e);
    cl_check(e, "clCreateCommandQueue");
    side->program = clCreateProgramWithSource(side->context, 1, &source, NULL, &e);
    cl_check(e, "clCreateProgramWithSource");
    e = clBuildProgram(side->program, 1, &dev, "", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[4096] = {0};
        if (clGetProgramBuildInfo(side->program, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                                  NULL) == CL_SUCCESS)
            kb_error("OpenCL build log:\n%s", log);
        cl_check(e, "clBuildProgram");
    }
    side->kernel = clCreateKernel(side->program, "noop", &e);
    cl_check(e, "clCreateKernel(noop)");

    const size_t global = 1;
    for (int i = 0; i < WARMUP_OPS; i++)
        cl_check(clEnqueueNDRangeKernel(side->queue, side->kernel, 1, NULL, &global, NULL, 0, NULL,
                                        NULL),
                 "clEnqueueNDRangeKernel (warm-up)");
    cl_check(clFinish(side->queue), "clFinish (warm-up)");
    return 1;
}

static sample cl_side_run(const cl_side *side, long n) {
    const size_t global = 1;
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        cl_int e = clEnqueueNDRangeKernel(side->queue, side->kernel, 1, NULL, &global, NULL, 0,
                                          NULL, NULL);
        if (e != CL_SUCCESS) cl_check(e, "clEnqueueNDRangeKernel");
    }
    uint64_t t1 = kb_now_ns();
    cl_check(clFinish(side->queue), "clFinish");
    uint64_t t2 = kb_now_ns();
    sample r = {(double)(t2 - t0) / (double)n, (double)(t1 - t0) / (double)n};
    return r;
}

static void cl_side_close(cl_side *side) {
    cl_check(clReleaseKernel(side->kernel), "clReleaseKernel");
    cl_check(clReleaseProgram(side->program), "clReleaseProgram");
    cl_check(clReleaseCommandQueue(side->queue), "clReleaseCommandQueue");
    cl_check(clReleaseContext(side->context), "clReleaseContext");
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
            kb_progress("baseline: OpenCL platform \"%s\", device \"%s\"", cl.platform, cl.device);
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
