/*
 * rt_programs.cl — the kctx runtime's device programs for the opencl
 * platform (OpenCL C), HOST_ORDERED only (the only strategy OpenCL can run:
 * no forward progress between kernels, so no resident scheduler):
 *
 *   kctx_rt_ho_acquire   refuses a poisoned context's run (K35) or takes the
 *                        launch guard only when it is free (K23)
 *   kctx_rt_ho_finalize  releases the guard its launch holds
 *
 * They follow the guard steps G1-G5 of kctx/rt_layout.h (the one
 * specification the sim's and CUDA's programs follow too). The
 * adapter (adapter.c) builds this source after kctx/task_abi_opencl.h and a
 * block of #defines it generates from kctx/rt_layout.h with offsetof,
 * so the byte offsets below cannot drift from the host's layout:
 *   KCTX_RT_ARCH_RUNTIME_IMAGE, KCTX_RT_HOLDER, KCTX_RT_REFUSED,
 *   KCTX_RT_CONCURRENT, KCTX_RT_ABORT_LAUNCH, KCTX_RT_ERR_* .
 * No trace records: OpenCL C has no device clock (docs/opencl.md).
 */

/* kctx/rt_layout.h's kctx_rt_step_params (24 bytes). */
typedef struct kctx_rt_step_params {
    ulong arch;
    ulong launch_id;
    uint flags;
    uint reserved;
} kctx_rt_step_params;

#define W32(base, off) ((__global volatile uint *)((base) + (off)))
#define W64(base, off) ((__global volatile ulong *)((base) + (off)))

ulong kctx_rt_image_of(kctx_rt_step_params p) {
    return *(__global const ulong *)(p.arch + KCTX_RT_ARCH_RUNTIME_IMAGE);
}

__kernel void kctx_rt_ho_acquire(kctx_rt_step_params p) {
    ulong rt = kctx_rt_image_of(p);
    uint err = *W32(rt, KCTX_TASK_RT_ERROR);
    if (err != KCTX_RT_ERR_NONE && err != KCTX_RT_ERR_CONCURRENT_LAUNCH) {
        atomic_inc(W32(rt, KCTX_RT_REFUSED)); /* K35 */
        return;
    }
    /* K24: the host aborted this launch: take nothing */
    if (*W32(rt, KCTX_RT_ABORT_LAUNCH) == (uint)p.launch_id) return;
    ulong old = atom_cmpxchg(W64(rt, KCTX_RT_HOLDER), 0ul, p.launch_id);
    int got = old == 0;
    if (!got && (uint)old == *W32(rt, KCTX_RT_ABORT_LAUNCH))
        got = atom_cmpxchg(W64(rt, KCTX_RT_HOLDER), old, p.launch_id) == old;
    if (got) return;
    atomic_inc(W32(rt, KCTX_RT_CONCURRENT));
    if (atomic_cmpxchg(W32(rt, KCTX_TASK_RT_ERROR), KCTX_RT_ERR_NONE,
                       KCTX_RT_ERR_CONCURRENT_LAUNCH) == KCTX_RT_ERR_NONE)
        *W64(rt, KCTX_TASK_RT_ERROR_DETAIL) = p.launch_id;
}

__kernel void kctx_rt_ho_finalize(kctx_rt_step_params p) {
    ulong rt = kctx_rt_image_of(p);
    atom_cmpxchg(W64(rt, KCTX_RT_HOLDER), p.launch_id, 0ul);
}
