/*
 * kctx/task_abi_opencl.h — the task ABI (kctx/task_abi.h) in OpenCL C.
 *
 * This file is OpenCL C, not C: the opencl platform puts it before every
 * source it builds (a callable's OPENCL_C variant, and the runtime's own
 * device programs), so kernel sources use what it defines without including
 * it.
 *
 * A task kernel receives the task header by value, then one argument per
 * binding, in the child's parameter order: a `__global` pointer for a tensor
 * (the SVM address with the binding's offset applied), a `ulong` for a
 * scalar. Write it with KCTX_TASK, which also defines the task ABI marker
 * kernel prepare looks for (KCTX_TASK_MARKER_PREFIX + name), and start the
 * body with KCTX_TASK_GATE() (a host-ordered launch skips the body once the
 * context's device error word is set: a poisoned or quarantined context, a
 * concurrent launch, or an earlier failed task, K23/K35):
 *
 *     KCTX_TASK(k_vadd, __global const float *a, __global const float *b,
 *               __global float *c, ulong n) {
 *         KCTX_TASK_GATE();
 *         for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
 *             c[i] = a[i] + b[i];
 *     }
 *
 * The launch's block_dim is the NDRange's global size (one work-item per
 * block: get_global_id(0) is the block index). A kernel that finds its
 * input unusable calls KCTX_TASK_FAIL(): the launch's later tasks are
 * skipped and kctx_check reports DEVICE_ERROR naming the task.
 *
 * Trace (K32): OpenCL C has no device clock, so task kernels write no trace
 * records on OpenCL (docs/opencl.md says what the trace shows instead).
 */
#ifndef KCTX_TASK_ABI_OPENCL_H
#define KCTX_TASK_ABI_OPENCL_H

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

/* kctx/task_abi.h's kctx_task_header, field for field (32 bytes). */
typedef struct kctx_task_header {
    ulong runtime_image;
    ulong launch_id;
    uint flags;
    uint task;
    uint func_id;
    uint nbindings;
} kctx_task_header;

#define KCTX_TASK_TRACE 1u
#define KCTX_TASK_GATED 2u

#define KCTX_TASK_ERR_NONE 0u
#define KCTX_TASK_ERR_CONCURRENT_LAUNCH 1u
#define KCTX_TASK_ERR_TASK_FAILED 2u
#define KCTX_TASK_ERR_POISONED 3u
#define KCTX_TASK_ERR_QUARANTINED 4u
#define KCTX_TASK_ERR_BAD_LAUNCH 5u

/* Byte offsets of the runtime image's words a task kernel uses (task_abi.h's
 * kctx_task_rt: error, error_detail). */
#define KCTX_TASK_RT_ERROR 4
#define KCTX_TASK_RT_ERROR_DETAIL 8

/* The context's device error word, or 0 when the header names no runtime
 * image (a launcher outside kctx). */
__global volatile uint *kctx_task_error_word(kctx_task_header h) {
    return h.runtime_image ? (__global volatile uint *)(h.runtime_image + KCTX_TASK_RT_ERROR) : 0;
}

/* 1 when a host-ordered launch must skip this task's body. */
int kctx_task_closed(kctx_task_header h) {
    __global volatile uint *w = kctx_task_error_word(h);
    return (h.flags & KCTX_TASK_GATED) && w && *w != KCTX_TASK_ERR_NONE;
}

/* Record that this task failed (the first failure names its task) and close
 * the gates of the launch's later tasks. */
void kctx_task_fail(kctx_task_header h) {
    __global volatile uint *w = kctx_task_error_word(h);
    if (!w) return;
    if (atomic_cmpxchg(w, KCTX_TASK_ERR_NONE, KCTX_TASK_ERR_TASK_FAILED) == KCTX_TASK_ERR_NONE)
        *(__global volatile ulong *)(h.runtime_image + KCTX_TASK_RT_ERROR_DETAIL) = h.task;
}

#define KCTX_TASK(name, ...)                    \
    __kernel void kctx_task_v1__##name(void) {} \
    __kernel void name(kctx_task_header kctx_task_h, __VA_ARGS__)

#define KCTX_TASK_GATE()                           \
    do {                                           \
        if (kctx_task_closed(kctx_task_h)) return; \
    } while (0)

#define KCTX_TASK_FAIL() kctx_task_fail(kctx_task_h)

#endif /* KCTX_TASK_ABI_OPENCL_H */
