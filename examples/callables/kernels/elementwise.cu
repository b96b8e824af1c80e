/*
 * elementwise.cu — the CUDA C variant of elementwise.c (the same kernels,
 * the same bindings; kctx/cuda.h's task form). A body returns 0, or the
 * callable_abi.h error code it would report on the sim.
 */
#include "cuda_common.cuh"

/* (a, b, c: tensor; n: scalar): c = a + b over n floats */
KCTX_CUDA_TASK(k_vadd) {
    if (nargs != 4) return CALLABLE_ERR_PARAMS;
    const float *a = CALLABLE_PTR(const float *, arg[0]);
    const float *b = CALLABLE_PTR(const float *, arg[1]);
    float *c = CALLABLE_PTR(float *, arg[2]);
    uint64_t n = arg[3];
    for (uint64_t i = CUDA_GID; i < n; i += CUDA_THREADS) c[i] = a[i] + b[i];
    return 0;
}

/* (x, y: tensor; n: scalar; alpha: f32 scalar): y = alpha * x */
KCTX_CUDA_TASK(k_scale) {
    if (nargs != 4) return CALLABLE_ERR_PARAMS;
    const float *x = CALLABLE_PTR(const float *, arg[0]);
    float *y = CALLABLE_PTR(float *, arg[1]);
    uint64_t n = arg[2];
    float alpha = cuda_f32(arg[3]);
    for (uint64_t i = CUDA_GID; i < n; i += CUDA_THREADS) y[i] = alpha * x[i];
    return 0;
}
