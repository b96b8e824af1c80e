/*
 * Elementwise float32 kernels of the example callables (vector_add,
 * scale_add_chain). Parameter blocks follow callable_abi.h: one u64 per
 * child parameter, in the order listed with each kernel. Blocks share the
 * elements round-robin (element i goes to block i % block_dim).
 */
#include <kctx/sim_kernel.h>
#include <kctx/task_abi.h>

#include "callable_abi.h"

/* (a, b, c: tensor; n: scalar): c[i] = a[i] + b[i] for i < n. */
KCTX_TASK(k_vadd) {
    if (!callable_check(ctx, nargs, 4)) return;
    const float *a = CALLABLE_PTR(const float *, arg[0]);
    const float *b = CALLABLE_PTR(const float *, arg[1]);
    float *c = CALLABLE_PTR(float *, arg[2]);
    uint64_t n = arg[3];
    for (uint64_t i = ctx->block_idx; i < n; i += ctx->block_dim) c[i] = a[i] + b[i];
}

/* (x, y: tensor; n, alpha: scalar): y[i] = alpha * x[i] for i < n; alpha
 * is a float32 carried in the low 32 bits of its scalar. */
KCTX_TASK(k_scale) {
    if (!callable_check(ctx, nargs, 4)) return;
    const float *x = CALLABLE_PTR(const float *, arg[0]);
    float *y = CALLABLE_PTR(float *, arg[1]);
    uint64_t n = arg[2];
    float alpha = callable_f32(arg[3]);
    for (uint64_t i = ctx->block_idx; i < n; i += ctx->block_dim) y[i] = alpha * x[i];
}
