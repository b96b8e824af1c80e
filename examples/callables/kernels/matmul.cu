/*
 * matmul.cu — the CUDA C variant of matmul.c (kctx/cuda.h's task form):
 * one tile of C = A * B (rows over the task's threads), and row sums.
 */
#include "cuda_common.cuh"

/* (A, B, C: tensor; M, N, K, tiles_m, tiles_n, ti, tj: scalar) */
KCTX_CUDA_TASK(k_matmul_tile) {
    if (nargs != 10) return CALLABLE_ERR_PARAMS;
    const float *A = CALLABLE_PTR(const float *, arg[0]);
    const float *B = CALLABLE_PTR(const float *, arg[1]);
    float *C = CALLABLE_PTR(float *, arg[2]);
    uint64_t M = arg[3], N = arg[4], K = arg[5];
    uint64_t tiles_m = arg[6], tiles_n = arg[7], ti = arg[8], tj = arg[9];
    if (tiles_m == 0 || ti >= tiles_m || tiles_n == 0 || tj >= tiles_n) return CALLABLE_ERR_SHAPE;
    uint64_t r0 = ti * M / tiles_m, r1 = (ti + 1) * M / tiles_m;
    uint64_t c0 = tj * N / tiles_n, c1 = (tj + 1) * N / tiles_n;
    uint64_t cols = c1 - c0;
    for (uint64_t e = CUDA_GID; e < (r1 - r0) * cols; e += CUDA_THREADS) {
        uint64_t r = r0 + e / cols, c = c0 + e % cols;
        float acc = 0.0f;
        for (uint64_t k = 0; k < K; k++) acc += A[r * K + k] * B[k * N + c];
        C[r * N + c] = acc;
    }
    return 0;
}

/* (C, s: tensor; M, N: scalar): s[r] = sum of row r of C */
KCTX_CUDA_TASK(k_rowsum) {
    if (nargs != 4) return CALLABLE_ERR_PARAMS;
    const float *C = CALLABLE_PTR(const float *, arg[0]);
    float *s = CALLABLE_PTR(float *, arg[1]);
    uint64_t M = arg[2], N = arg[3];
    for (uint64_t r = CUDA_GID; r < M; r += CUDA_THREADS) {
        float acc = 0.0f;
        for (uint64_t c = 0; c < N; c++) acc += C[r * N + c];
        s[r] = acc;
    }
    return 0;
}
