/*
 * cuda_launch_overhead — launch_overhead on the cuda platform
 * (docs/benchmarks.md, "Launch overhead on every platform"): host time of
 * one steady-state kctx_launch onto a CUDA framework's stream against the
 * same launch's driver calls written by hand, side by side in one run
 * (the harness: bench/hand_launch.c). HOST_ORDERED, the platform's
 * one strategy.
 *
 * The hand chain, per launch: cuCtxGetDevice (the current-device read),
 * then 5 cuEventRecord, 4 cuStreamWaitEvent and 3 cuLaunchKernel (acquire
 * <<<1,1>>>, the task <<<blocks, KCTX_CUDA_TASK_THREADS>>>, finalize
 * <<<1,1>>>) on the framework's caller stream and two streams of its own,
 * each kernel's parameter block passed by value at its own size (24 bytes
 * a step, 32 + 8 per binding a task; kctx passes its fixed
 * KCTX_CUDA_PARAMS_SIZE block). Holds: cuLaunchHostFunc on the caller
 * stream.
 *
 * The driver: KCTX_CUDA_DRIVER, else libcuda.so.1, as the adapter loads it
 * (the same library in the process). On a GPU the kernels are
 * hand_kernels.cu's fatbin (KCTX_BENCH_CUDA_FATBIN); on the CUDA driver
 * double (recognised by its kctx_cuda_double_calls symbol), which runs no
 * CUDA code, the sim test kernels: every hand kernel is k_noop, and the
 * callables carry the sim module under the cuda_fatbin kind (as the
 * double's test images do). Without a usable driver: "not measured".
 */
#include "hand_launch.h"
#include "kctx_test_common.h" /* ktc_read_file */
#include "launch_common.h"

#include <cuda.h>
#include <kctx/cuda.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KCTX_BENCH_CUDA_FATBIN
#error "KCTX_BENCH_CUDA_FATBIN (path of hand_kernels.cu's fatbin) must be defined"
#endif

// clang-format off
#define HC_ENTRIES(X)                                                                          \
    X(cuGetErrorName, (CUresult, const char **))                                               \
    X(cuCtxGetDevice, (CUdevice *))                                                            \
    X(cuEventRecord, (CUevent, CUstream))                                                      \
    X(cuStreamWaitEvent, (CUstream, CUevent, unsigned int))                                    \
    X(cuLaunchKernel, (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,     \
                       unsigned int, unsigned int, unsigned int, CUstream, void **, void **))  \
    X(cuLaunchHostFunc, (CUstream, CUhostFn, void *))                                          \
    X(cuModuleLoadData, (CUmodule *, const void *))                                            \
    X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))                             \
    X(cuModuleUnload, (CUmodule))
// clang-format on

#define HC_MEMBER_(name, args) CUresult(CUDAAPI *name) args;
static struct { HC_ENTRIES(HC_MEMBER_) } g_cu;
#undef HC_MEMBER_

static void *g_lib;
static CUmodule g_module;
static void *g_fatbin; /* the GPU's module bytes (ktc_read_file) */

/* The hand kernels by the parameter block's size. */
static struct hand_fns { CUfunction step, task0, task4; } g_fns;

static int load(char *why, size_t why_size) {
    const char *path = getenv("KCTX_CUDA_DRIVER");
    if (!path || !*path) path = "libcuda.so.1";
    g_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) return snprintf(why, why_size, "dlopen %s: %s", path, dlerror()), -1;
    typedef CUresult(CUDAAPI * getproc_fn)(const char *, void **, int, cuuint64_t,
                                           CUdriverProcAddressQueryResult *);
    getproc_fn gp = NULL;
    *(void **)&gp = dlsym(g_lib, "cuGetProcAddress_v2");
    if (!gp) return snprintf(why, why_size, "%s has no cuGetProcAddress_v2", path), -1;
#define HC_RESOLVE_(name, args)                                                               \
    {                                                                                         \
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;          \
        if (gp(#name, (void **)&g_cu.name, KCTX_CUDA_DRIVER_ABI, CU_GET_PROC_ADDRESS_DEFAULT, \
               &found) != CUDA_SUCCESS ||                                                     \
            found != CU_GET_PROC_ADDRESS_SUCCESS || !g_cu.name)                               \
            return snprintf(why, why_size, "the driver has no %s", #name), -1;                \
    }
    HC_ENTRIES(HC_RESOLVE_)
#undef HC_RESOLVE_
    return 0;
}

static const char *status_name(int st) {
    const char *s = NULL;
    if (!g_cu.cuGetErrorName || g_cu.cuGetErrorName((CUresult)st, &s) != CUDA_SUCCESS || !s)
        return "(unknown CUDA status)";
    return s;
}

static int get_function(CUfunction *f, const char *name, char *why, size_t why_size) {
    CUresult st = g_cu.cuModuleGetFunction(f, g_module, name);
    if (st != CUDA_SUCCESS)
        return snprintf(why, why_size, "cuModuleGetFunction(%s): %s", name, status_name(st)), -1;
    return 0;
}

static int hc_open(const void **module, size_t *size, char *why, size_t why_size) {
    if (load(why, why_size) != 0) return -1;
    const int on_double = dlsym(g_lib, "kctx_cuda_double_calls") != NULL;
    if (on_double) {
        lb_kernels_module(module, size); /* the sim test kernels */
    } else {
        if ((g_fatbin = ktc_read_file(KCTX_BENCH_CUDA_FATBIN, size, why, why_size)) == NULL)
            return -1;
        *module = g_fatbin;
    }
    CUresult st = g_cu.cuModuleLoadData(&g_module, *module);
    if (st != CUDA_SUCCESS)
        return snprintf(why, why_size, "cuModuleLoadData: %s", status_name(st)), -1;
    if (on_double) {
        if (get_function(&g_fns.step, "k_noop", why, why_size)) return -1;
        g_fns.task0 = g_fns.task4 = g_fns.step;
    } else if (get_function(&g_fns.step, "hand_step", why, why_size) ||
               get_function(&g_fns.task0, "hand_task0", why, why_size) ||
               get_function(&g_fns.task4, "hand_task4", why, why_size)) {
        return -1;
    }
    kb_progress("driver %s%s; hand kernels from %s",
                getenv("KCTX_CUDA_DRIVER") ? getenv("KCTX_CUDA_DRIVER") : "libcuda.so.1",
                on_double ? " (the CUDA driver double)" : "",
                on_double ? "the sim test kernels (k_noop)" : KCTX_BENCH_CUDA_FATBIN);
    return 0;
}

static void hc_close(void) {
    if (g_module) g_cu.cuModuleUnload(g_module);
    g_module = NULL;
    free(g_fatbin);
    g_fatbin = NULL;
}

/* ---- the hand table (thin wrappers, like the adapter's) ------------------------- */

__attribute__((noinline)) static int w_current_device(int *d) {
    CUdevice dev = 0;
    CUresult st = g_cu.cuCtxGetDevice(&dev);
    if (st == CUDA_SUCCESS) *d = (int)dev;
    return (int)st;
}
__attribute__((noinline)) static int w_event_record(kctx_pevent e, kctx_pstream s) {
    return (int)g_cu.cuEventRecord((CUevent)(uintptr_t)e, (CUstream)(uintptr_t)s);
}
__attribute__((noinline)) static int w_stream_wait_event(kctx_pstream s, kctx_pevent e) {
    return (int)g_cu.cuStreamWaitEvent((CUstream)(uintptr_t)s, (CUevent)(uintptr_t)e, 0);
}
__attribute__((noinline)) static int w_launch(kctx_pstream s, kctx_pfunction fn,
                                              kctx_ptarget target, uint32_t block_dim,
                                              const void *params, size_t size) {
    const struct hand_fns *h = (const struct hand_fns *)(uintptr_t)fn;
    CUfunction f = size == 24 ? h->step : size == 32 ? h->task0 : size == 64 ? h->task4 : NULL;
    if (!f) return (int)CUDA_ERROR_INVALID_VALUE;
    void *block = (void *)(uintptr_t)params; /* the driver copies it at the call */
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, block, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    const int cpu = target == KCTX_PTARGET_AICPU;
    return (int)g_cu.cuLaunchKernel(f, cpu ? 1 : block_dim, 1, 1, cpu ? 1 : KCTX_CUDA_TASK_THREADS,
                                    1, 1, 0, (CUstream)(uintptr_t)s, NULL, extra);
}

static kctx_platform_ops g_ops = {
    .size = sizeof(kctx_platform_ops),
    .current_device = w_current_device,
    .event_record = w_event_record,
    .stream_wait_event = w_stream_wait_event,
    .launch = w_launch,
};

static kctx_pfunction hand_function(void) { return (kctx_pfunction)(uintptr_t)&g_fns; }

static int host_func(uint64_t stream, void (*fn)(void *), void *arg) {
    return (int)g_cu.cuLaunchHostFunc((CUstream)(uintptr_t)stream, fn, arg);
}

int main(int argc, char **argv) {
    static const hl_platform p = {
        .name = "cuda",
        .metric = "cuda_launch_overhead",
        .variant = KCTX_VARIANT_CUDA_FATBIN,
        .open = hc_open,
        .close = hc_close,
        .ops = &g_ops,
        .hand_function = hand_function,
        .host_func = host_func,
        .status_name = status_name,
    };
    return hl_main(&p, argc, argv);
}
