/*
 * mlp.cu — the CUDA C variant of mlp.c (kctx/cuda.h's task form): the MLP
 * block's bias and ReLU steps.
 */
#include "cuda_common.cuh"

/* (C, bias: tensor; M, N: scalar): C[r][c] += bias[c] */
KCTX_CUDA_TASK(k_bias_rows) {
    if (nargs != 4) return CALLABLE_ERR_PARAMS;
    float *C = CALLABLE_PTR(float *, arg[0]);
    const float *bias = CALLABLE_PTR(const float *, arg[1]);
    uint64_t M = arg[2], N = arg[3];
    for (uint64_t e = CUDA_GID; e < M * N; e += CUDA_THREADS) C[e] += bias[e % N];
    return 0;
}

/* (X: tensor; M, N: scalar): X = max(X, 0) */
KCTX_CUDA_TASK(k_relu) {
    if (nargs != 3) return CALLABLE_ERR_PARAMS;
    float *X = CALLABLE_PTR(float *, arg[0]);
    uint64_t n = arg[1] * arg[2];
    for (uint64_t i = CUDA_GID; i < n; i += CUDA_THREADS)
        if (X[i] < 0.0f) X[i] = 0.0f;
    return 0;
}
