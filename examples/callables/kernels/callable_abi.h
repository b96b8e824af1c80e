/*
 * callable_abi.h — how a task's kernel receives its arguments: the
 * convention between the example callables' kernels and the code that
 * launches callables.
 *
 * KERNEL PARAMETER BLOCK = THE TASK ABI'S HEADER (kctx/task_abi.h), THEN ONE
 * u64 PER CHILD PARAMETER, IN ORDER. Sim kernels are written with KCTX_TASK,
 * which hands the body the u64 array (`arg`) and its length (`nargs`).
 *
 * A child (kernel) declares an ordered parameter list in the callable's
 * manifest and image; each task binds every child parameter. At launch,
 * the launcher builds the task's parameter block as an array of uint64_t,
 * element i for child parameter i:
 *
 *   binding                            block[i]
 *   tensor param P, byte offset OFF    device address of P + OFF
 *   scalar param P                     the 64-bit value given for P
 *   immediate V                        V
 *
 * and launches the child's entry with params = the task header followed by
 * block, block_dim = the task's block count. So a kernel with child
 * parameters (a, b, c, n) reads arg[0..3].
 *
 * Scalars are raw 64-bit values: an integer is itself; a 32-bit float
 * travels as its IEEE-754 bit pattern in the low 32 bits (the manifest's
 * `imm_f32: 2.5` writes exactly that), read with callable_f32().
 *
 * A sim kernel checks the binding count first (callable_check) and reports
 * CALLABLE_ERR_PARAMS through the device's error service on a mismatch, so
 * a launcher bug shows up as a kernel error rather than as a wild read.
 *
 * The OpenCL C variants of the same kernels take the same parameters, in
 * the same order, as kernel arguments: a tensor as a `__global` pointer
 * (the launcher applies the binding's byte offset), a scalar as `ulong`.
 * Work is split the same way: a sim kernel strides by block over
 * ctx->block_idx / ctx->block_dim, an OpenCL kernel by get_global_id(0) /
 * get_global_size(0), so any launch shape computes the whole result.
 *
 * This header is usable by kernel code (no libc) and by host code.
 */
#ifndef KCTX_EXAMPLES_CALLABLE_ABI_H
#define KCTX_EXAMPLES_CALLABLE_ABI_H

#include <stddef.h>
#include <stdint.h>

#define CALLABLE_ABI_VERSION 1u

/* Bytes of the parameter block of a child with `param_count` parameters. */
#define CALLABLE_PARAMS_SIZE(param_count) ((size_t)(param_count) * sizeof(uint64_t))

/* Device error codes the example kernels report (detail in parentheses). */
#define CALLABLE_ERR_PARAMS 0x100u /* wrong params_size (the size received) */
#define CALLABLE_ERR_SHAPE 0x101u  /* impossible shape, e.g. zero tiles (the parameter index) */

/* A device address carried in a u64 slot, as a typed pointer. */
#define CALLABLE_PTR(T, u64) ((T)(uintptr_t)(u64))

/* The float whose bit pattern is in the low 32 bits of a scalar. */
static inline float callable_f32(uint64_t scalar) {
    union {
        uint32_t u;
        float f;
    } v;
    v.u = (uint32_t)scalar;
    return v.f;
}

/* The scalar that carries float `f` (the inverse of callable_f32). */
static inline uint64_t callable_f32_scalar(float f) {
    union {
        uint32_t u;
        float f;
    } v;
    v.f = f;
    return v.u;
}

#ifdef KCTX_SIM_KERNEL_H
/* In a sim task kernel (KCTX_TASK, kctx/task_abi.h, which hands the body
 * its bindings as `arg` and their count as `nargs`): whether the task has
 * the `count` bindings the kernel expects; reports CALLABLE_ERR_PARAMS
 * (detail: the count received) when it does not. */
static inline int callable_check(const sim_kernel_ctx *ctx, uint32_t nargs, uint32_t count) {
    if (nargs != count) {
        ctx->svc->report_error(CALLABLE_ERR_PARAMS, nargs);
        return 0;
    }
    return 1;
}
#endif

#endif /* KCTX_EXAMPLES_CALLABLE_ABI_H */
