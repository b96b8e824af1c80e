/*
 * kctx/cuda.h — what is specific to the "cuda" platform (docs/cuda.md):
 * how a CUDA framework passes its streams and buffers, the kernel ABI of
 * task kernels written in CUDA C (with the gate prologue), and the
 * adapter's driver-call counters.
 *
 * The platform. libkctx loads the CUDA driver at run time:
 * dlopen(KCTX_CUDA_DRIVER, default "libcuda.so.1"), then every entry point
 * through cuGetProcAddress_v2 at the pinned ABI version
 * KCTX_CUDA_DRIVER_ABI (so libkctx has no link-time dependency on libcuda).
 * A machine without the driver, with only the toolkit's stub library, or
 * with no device reports which in `kctx platforms`; creating a context of
 * the platform then fails with UNSUPPORTED and the reason.
 *
 * Borrowing. Kernel init borrows the calling thread's current context
 * (cuCtxGetCurrent, cuCtxGetDevice): the framework made it current (for
 * example PyTorch's primary context). kctx never creates, sets, resets or
 * destroys a context (K4; kctx_cuda_driver_calls proves it).
 *
 * Streams and buffers. A caller stream is the CUstream value as an integer
 * (PyTorch: torch.cuda.current_stream().cuda_stream; CuPy: stream.ptr).
 * 0 (the legacy default stream) and 2 (CU_STREAM_PER_THREAD) are accepted
 * for eager launches only: a launch through a capturing default stream is
 * INVALID_ARGUMENT with the reason, and while a capture holds the
 * context's streams any other launch is CAPTURE_ACTIVE (K34). A tensor
 * argument is its CUdeviceptr.
 *
 * What the platform offers: the HOST_ORDERED strategy only (the resident
 * strategy needs device function addresses callable across modules, which
 * CUDA does not have), capture (stream capture into CUDA graphs; graph
 * lifetime tokens are CUDA user objects), no device epoch (a sticky CUDA
 * error, 700-series, is fatal for the process's context: quarantine is
 * terminal, K30), no tensor range checks, no program mode.
 *
 * Callable images carry CUDA kernels as variant kind KCTX_VARIANT_CUDA_FATBIN
 * (a fatbin or cubin accepted by cuModuleLoadData).
 */
#ifndef KCTX_CUDA_H
#define KCTX_CUDA_H

#include <kctx/task_abi.h>

#include <stddef.h>
#include <stdint.h>

/* The driver ABI every entry point is resolved at (cuGetProcAddress_v2's
 * cudaVersion): CUDA 12.8, the first with cuStreamGetDevice. An older
 * driver makes the platform unavailable, with that reason. */
#define KCTX_CUDA_DRIVER_ABI 12080

/* ---- the kernel ABI ------------------------------------------------------
 *
 * Every kernel kctx launches (the runtime's programs and task kernels)
 * takes exactly one by-value parameter of KCTX_CUDA_PARAMS_SIZE bytes:
 * the launch's parameter block, zero-padded. (cuLaunchKernel passes it with
 * CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE; a fixed size means the adapter
 * never needs the kernel's own declaration.) A task kernel's block is the
 * task ABI's (kctx/task_abi.h): kctx_task_header, then one u64 binding per
 * child parameter.
 *
 * Grid: a task of block_dim blocks is launched as <<<block_dim,
 * KCTX_CUDA_TASK_THREADS>>> (one CUDA block per kctx block; blockIdx.x is
 * the block index); the runtime's programs as <<<1, 1>>>. */
#define KCTX_CUDA_PARAMS_SIZE 2048u
#define KCTX_CUDA_TASK_THREADS 128u

typedef struct kctx_cuda_params {
    unsigned char bytes[KCTX_CUDA_PARAMS_SIZE];
} kctx_cuda_params;

#if defined(__CUDACC__)
/* ---- a task kernel in CUDA C ---------------------------------------------
 *
 *     #include <kctx/cuda.h>
 *     KCTX_CUDA_TASK(k_vadd) {        // (a, b, c: tensor; n: scalar)
 *         if (nargs != 4) return 1;   // nonzero: the task failed
 *         float *c = (float *)arg[2]; ...
 *         return 0;
 *     }
 *
 * The body runs on every thread of every block with `arg` (the bindings)
 * and `nargs`, and returns 0, or nonzero for a failure. The wrapper is the
 * gate prologue: when the launch is gated (host-ordered) and the runtime
 * image's error word is set (poisoned, quarantined, a concurrent launch, a
 * failed task), the body does not run (K23, K35); the word is read once per
 * block (thread 0, then a barrier), so a block's threads decide alike. A failure is recorded in
 * the error word (TASK_FAILED, detail: the task index), which closes every
 * later gate; the kernel still returns normally (a CUDA kernel has no
 * non-fatal error). Trace records (K32) are written by thread 0 of each
 * block with the device's global timer. The marker kernel
 * kctx_task_v1__<name> is what prepare looks for (KCTX_TASK_MARKER_PREFIX). */
__device__ static inline unsigned long long kctx_cuda_clock_ns(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ static inline void kctx_cuda_trace_append(kctx_task_rt *rt, uint32_t kind, uint64_t t0,
                                                     uint64_t t1, uint64_t launch, uint32_t core,
                                                     uint32_t task, uint32_t func, uint32_t block) {
    if (!rt->trace_ring) return;
    const uint64_t cap = rt->trace_capacity;
    unsigned long long *head = (unsigned long long *)&rt->trace_head;
    unsigned long long i = *(volatile unsigned long long *)head;
    for (;;) {
        uint32_t tail = *(volatile uint32_t *)&rt->trace_tail;
        if ((uint32_t)i - tail >= cap) {
            atomicAdd((unsigned int *)&rt->trace_dropped, 1u);
            return;
        }
        unsigned long long got = atomicCAS(head, i, i + 1);
        if (got == i) break;
        i = got;
    }
    kctx_task_trace_rec *r = (kctx_task_trace_rec *)(uintptr_t)rt->trace_ring + i % cap;
    r->t0 = t0;
    r->t1 = t1;
    r->launch_id = launch;
    r->kind = kind;
    r->core = core;
    r->task = task;
    r->func_id = func;
    r->block = block;
    __threadfence_system();
    *(volatile uint32_t *)&r->commit = (uint32_t)(i + 1);
}

#define KCTX_CUDA_TASK(name)                                                                   \
    __device__ static int name##__kctx_body(const uint64_t *arg, uint32_t nargs);              \
    extern "C" __global__ void kctx_task_v1__##name(kctx_cuda_params p) { (void)p; }           \
    extern "C" __global__ void name(kctx_cuda_params p) {                                      \
        const kctx_task_header *h = (const kctx_task_header *)p.bytes;                         \
        kctx_task_rt *rt = (kctx_task_rt *)(uintptr_t)h->runtime_image;                        \
        const bool gated = (h->flags & KCTX_TASK_GATED) && rt;                                 \
        /* one read of the gate per block, so that every thread decides alike */               \
        __shared__ int kctx_closed_;                                                           \
        if (threadIdx.x == 0)                                                                  \
            kctx_closed_ = gated && *(volatile uint32_t *)&rt->error != KCTX_TASK_ERR_NONE;    \
        __syncthreads();                                                                       \
        if (kctx_closed_) return;                                                              \
        unsigned long long t0 = kctx_cuda_clock_ns();                                          \
        int failed = name##__kctx_body((const uint64_t *)(h + 1), h->nbindings);               \
        if (failed && gated &&                                                                 \
            atomicCAS((unsigned int *)&rt->error, KCTX_TASK_ERR_NONE,                          \
                      KCTX_TASK_ERR_TASK_FAILED) == KCTX_TASK_ERR_NONE)                        \
            *(volatile uint64_t *)&rt->error_detail = h->task;                                 \
        __syncthreads(); /* the block's span ends when its last thread is done */              \
        if ((h->flags & KCTX_TASK_TRACE) && rt && threadIdx.x == 0)                            \
            kctx_cuda_trace_append(rt, KCTX_TASK_TRACE_TASK, t0, kctx_cuda_clock_ns(),         \
                                   h->launch_id, blockIdx.x, h->task, h->func_id, blockIdx.x); \
    }                                                                                          \
    __device__ static int name##__kctx_body(const uint64_t *arg, uint32_t nargs)
#endif /* __CUDACC__ */

#if !defined(__CUDACC__)
#include <kctx/kctx.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Test support (K4, K19): how many times the cuda adapter has called the
 * driver entry point `entry` ("cuCtxSetCurrent", "cuStreamSynchronize",
 * ...) in this process, through its own table (every driver call of the
 * adapter goes through it), into *count. The table also holds the
 * lifecycle entries the adapter must never call (cuCtxSetCurrent,
 * cuCtxCreate, cuCtxDestroy, cuCtxPushCurrent, cuCtxPopCurrent,
 * cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease,
 * cuDevicePrimaryCtxReset), so their zero counts are answers.
 * Errors: INVALID_ARGUMENT (entry or count NULL), NOT_FOUND (no such entry
 * in the table, or the cuda platform is not built into this library: the
 * message says which). Any thread. */
KCTX_API kctx_status kctx_cuda_driver_calls(const char *entry, uint64_t *count);

#ifdef __cplusplus
}
#endif
#endif /* !__CUDACC__ */

#endif /* KCTX_CUDA_H */
