/*
 * Kernels of the MLP block callables (mlp_block_narrow, mlp_block_wide)
 * besides the matrix multiply, which is k_matmul_tile of matmul.c: a bias
 * added to every row, and the ReLU activation. Both work in place on a
 * row-major float32 M x N matrix. Parameter blocks follow callable_abi.h:
 * one u64 per child parameter, in the order listed with each kernel.
 */
#include <kctx/sim_kernel.h>
#include <kctx/task_abi.h>

#include "callable_abi.h"

/* C[r][c] += bias[c] for r < M, c < N; rows shared round-robin by the
 * blocks. (C, bias: tensor; M, N: scalar) */
KCTX_TASK(k_bias_rows) {
    if (!callable_check(ctx, nargs, 4)) return;
    float *C = CALLABLE_PTR(float *, arg[0]);
    const float *bias = CALLABLE_PTR(const float *, arg[1]);
    uint64_t M = arg[2], N = arg[3];
    for (uint64_t r = ctx->block_idx; r < M; r += ctx->block_dim)
        for (uint64_t c = 0; c < N; c++) C[r * N + c] += bias[c];
}

/* X[i] = max(X[i], 0) for the M x N elements of X; elements shared
 * round-robin by the blocks. NaN stays NaN (a NaN input is a bug to see,
 * not to hide). (X: tensor; M, N: scalar) */
KCTX_TASK(k_relu) {
    if (!callable_check(ctx, nargs, 3)) return;
    float *X = CALLABLE_PTR(float *, arg[0]);
    uint64_t n = arg[1] * arg[2];
    for (uint64_t i = ctx->block_idx; i < n; i += ctx->block_dim)
        if (X[i] < 0.0f) X[i] = 0.0f;
}
