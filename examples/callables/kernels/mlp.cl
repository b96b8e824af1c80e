/*
 * OpenCL C variants of kernels/mlp.c: the same entries, the same parameters
 * in the same order (tensors as __global pointers, scalars as ulong; see
 * callable_abi.h). Row-major float32, in place. Any NDRange computes the
 * whole result.
 *
 * Task kernels (kctx/task_abi_opencl.h, which kctx puts before this source):
 * KCTX_TASK gives each the task header and the ABI marker; the gate skips
 * the body once the launch's context has a device error; a shape the kernel
 * cannot compute fails the task (KCTX_TASK_FAIL), as the sim variant's
 * report_error does.
 */

/* C[r][c] += bias[c] for r < M, c < N. */
KCTX_TASK(k_bias_rows, __global float *C, __global const float *bias, ulong M, ulong N) {
    KCTX_TASK_GATE();
    for (ulong r = get_global_id(0); r < M; r += get_global_size(0))
        for (ulong c = 0; c < N; c++) C[r * N + c] += bias[c];
}

/* X[i] = max(X[i], 0) for the M x N elements of X (NaN stays NaN). */
KCTX_TASK(k_relu, __global float *X, ulong M, ulong N) {
    KCTX_TASK_GATE();
    ulong n = M * N;
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0))
        if (X[i] < 0.0f) X[i] = 0.0f;
}
