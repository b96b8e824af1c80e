/*
 * Blocked matrix multiply kernels of the example callable blocked_matmul.
 * Row-major float32 matrices: A is M x K, B is K x N, C is M x N.
 * Parameter blocks follow callable_abi.h: one u64 per child parameter, in
 * the order listed with each kernel.
 */
#include <kctx/sim_kernel.h>
#include <kctx/task_abi.h>

#include "callable_abi.h"

/* Tile (ti, tj) of C = A * B, the output split into tiles_m x tiles_n
 * tiles: rows [ti*M/tiles_m, (ti+1)*M/tiles_m), columns likewise with N.
 * The tile's rows are shared round-robin by the blocks.
 * (A, B, C: tensor; M, N, K, tiles_m, tiles_n, ti, tj: scalar) */
KCTX_TASK(k_matmul_tile) {
    if (!callable_check(ctx, nargs, 10)) return;
    const float *A = CALLABLE_PTR(const float *, arg[0]);
    const float *B = CALLABLE_PTR(const float *, arg[1]);
    float *C = CALLABLE_PTR(float *, arg[2]);
    uint64_t M = arg[3], N = arg[4], K = arg[5];
    uint64_t tiles_m = arg[6], tiles_n = arg[7], ti = arg[8], tj = arg[9];
    if (tiles_m == 0 || ti >= tiles_m) {
        ctx->svc->report_error(CALLABLE_ERR_SHAPE, 6);
        return;
    }
    if (tiles_n == 0 || tj >= tiles_n) {
        ctx->svc->report_error(CALLABLE_ERR_SHAPE, 7);
        return;
    }
    uint64_t r0 = ti * M / tiles_m, r1 = (ti + 1) * M / tiles_m;
    uint64_t c0 = tj * N / tiles_n, c1 = (tj + 1) * N / tiles_n;
    for (uint64_t r = r0 + ctx->block_idx; r < r1; r += ctx->block_dim) {
        for (uint64_t c = c0; c < c1; c++) {
            float acc = 0.0f;
            for (uint64_t k = 0; k < K; k++) acc += A[r * K + k] * B[k * N + c];
            C[r * N + c] = acc;
        }
    }
}

/* s[i] = sum of row i of C, for i < M; rows shared round-robin by blocks.
 * (C, s: tensor; M, N: scalar) */
KCTX_TASK(k_rowsum) {
    if (!callable_check(ctx, nargs, 4)) return;
    const float *C = CALLABLE_PTR(const float *, arg[0]);
    float *s = CALLABLE_PTR(float *, arg[1]);
    uint64_t M = arg[2], N = arg[3];
    for (uint64_t r = ctx->block_idx; r < M; r += ctx->block_dim) {
        float acc = 0.0f;
        for (uint64_t c = 0; c < N; c++) acc += C[r * N + c];
        s[r] = acc;
    }
}
