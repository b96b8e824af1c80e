/*
 * rt_programs.cu — the kctx runtime's device programs for CUDA, the
 * HOST_ORDERED strategy's two steps (kernel-mode contract §0b), compiled by
 * nvcc into a fatbin (cmake/CudaPlatform.cmake) that libkctx embeds and
 * loads at kernel init (K11):
 *
 *   kctx_rt_ho_acquire   refuses a poisoned context's run (K35: counted) or
 *                        takes the launch guard, only when it is free (K23)
 *   kctx_rt_ho_finalize  the holder's trace record; releases the guard
 *
 * They follow the guard steps G1-G5 of kctx/rt_layout.h (the one
 * specification the sim's and OpenCL's programs follow too); layouts are
 * kctx/rt_layout.h. Each is launched
 * <<<1, 1>>> with one by-value kctx_cuda_params block (kctx/cuda.h) whose
 * prefix is a kctx_rt_step_params. Words the host reads or writes while
 * they run (the error word, the guard) are accessed with device atomics and
 * volatile loads; the host reaches them with 4-byte copies (atomic for an
 * aligned word).
 */
#define _Static_assert static_assert /* rt_layout.h is C11; this is C++ */
#include <kctx/cuda.h>

#include <kctx/rt_layout.h>

#define DEV(T, a) ((T)(uintptr_t)(a))

__device__ static unsigned int ld32(const uint32_t *p) { return *(const volatile uint32_t *)p; }

__device__ static const kctx_rt_step_params *step(const kctx_cuda_params &p) {
    return (const kctx_rt_step_params *)p.bytes;
}

/* Acquire: a context whose device error word holds anything but a
 * concurrent launch refuses the run (K35, counted); otherwise the guard is
 * taken only when it is free ("free -> taken": two executable copies of one
 * graph carry the same launch id). A refused acquire writes
 * CONCURRENT_LAUNCH, which closes every task gate, the holder's too (K23). */
extern "C" __global__ void kctx_rt_ho_acquire(kctx_cuda_params params) {
    const kctx_rt_step_params *p = step(params);
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    const bool tracing = (p->flags & KCTX_RT_FLAG_TRACE) != 0;
    unsigned long long now = kctx_cuda_clock_ns();
    uint32_t err = ld32(&rt->error);
    if (err != KCTX_RT_ERR_NONE && err != KCTX_RT_ERR_CONCURRENT_LAUNCH) {
        atomicAdd((unsigned int *)&rt->refused_replays, 1u);
        if (tracing)
            kctx_cuda_trace_append((kctx_task_rt *)rt, KCTX_RT_TRACE_REFUSED, now,
                                   kctx_cuda_clock_ns(), p->launch_id, UINT32_MAX, 0, 0, 0);
        return;
    }
    /* K24: the host aborted this launch: take nothing */
    if (ld32(&rt->abort_launch) == (uint32_t)p->launch_id) return;
    unsigned long long *holder = (unsigned long long *)&rt->holder;
    unsigned long long seen = atomicCAS(holder, 0ull, p->launch_id);
    bool got = seen == 0;
    if (!got && (uint32_t)seen == ld32(&rt->abort_launch))
        got = atomicCAS(holder, seen, p->launch_id) == seen;
    if (got) {
        *(volatile uint64_t *)&rt->run_t0 = now;
        __threadfence_system();
        return;
    }
    atomicAdd((unsigned int *)&rt->concurrent_launches, 1u);
    if (atomicCAS((unsigned int *)&rt->error, KCTX_RT_ERR_NONE, KCTX_RT_ERR_CONCURRENT_LAUNCH) ==
        KCTX_RT_ERR_NONE)
        *(volatile uint64_t *)&rt->error_detail = p->launch_id;
    __threadfence_system();
}

/* Finalize: the guard holder's run is over (its tasks ran or were gated):
 * write its trace record and release the guard. */
extern "C" __global__ void kctx_rt_ho_finalize(kctx_cuda_params params) {
    const kctx_rt_step_params *p = step(params);
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    unsigned long long *holder = (unsigned long long *)&rt->holder;
    if (*(volatile unsigned long long *)holder != p->launch_id) return; /* refused: not ours */
    if (p->flags & KCTX_RT_FLAG_TRACE)
        kctx_cuda_trace_append((kctx_task_rt *)rt, KCTX_RT_TRACE_SCHED,
                               *(volatile uint64_t *)&rt->run_t0, kctx_cuda_clock_ns(),
                               p->launch_id, UINT32_MAX, 0, 0, 0);
    atomicCAS(holder, (unsigned long long)p->launch_id, 0ull);
    __threadfence_system();
}
