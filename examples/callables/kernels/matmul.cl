/*
 * OpenCL C variants of kernels/matmul.c: the same entries, the same
 * parameters in the same order (tensors as __global pointers, scalars as
 * ulong; see callable_abi.h). Row-major float32: A is M x K, B is K x N,
 * C is M x N. Any NDRange computes the whole result.
 *
 * Task kernels (kctx/task_abi_opencl.h, which kctx puts before this source):
 * KCTX_TASK gives each the task header and the ABI marker; the gate skips
 * the body once the launch's context has a device error; a shape the kernel
 * cannot compute fails the task (KCTX_TASK_FAIL), as the sim variant's
 * report_error does.
 */

/* Tile (ti, tj) of C = A * B with the output split into tiles_m x tiles_n
 * tiles; the tile's rows are shared by the work-items. */
KCTX_TASK(k_matmul_tile, __global const float *A, __global const float *B, __global float *C,
                            ulong M, ulong N, ulong K, ulong tiles_m, ulong tiles_n, ulong ti,
                            ulong tj) {
    KCTX_TASK_GATE();
    if (tiles_m == 0 || ti >= tiles_m || tiles_n == 0 || tj >= tiles_n) {
        KCTX_TASK_FAIL();
        return;
    }
    ulong r0 = ti * M / tiles_m, r1 = (ti + 1) * M / tiles_m;
    ulong c0 = tj * N / tiles_n, c1 = (tj + 1) * N / tiles_n;
    for (ulong r = r0 + get_global_id(0); r < r1; r += get_global_size(0)) {
        for (ulong c = c0; c < c1; c++) {
            float acc = 0.0f;
            for (ulong k = 0; k < K; k++) acc += A[r * K + k] * B[k * N + c];
            C[r * N + c] = acc;
        }
    }
}

/* s[i] = sum of row i of C, for i < M. */
KCTX_TASK(k_rowsum, __global const float *C, __global float *s, ulong M, ulong N) {
    KCTX_TASK_GATE();
    for (ulong r = get_global_id(0); r < M; r += get_global_size(0)) {
        float acc = 0.0f;
        for (ulong c = 0; c < N; c++) acc += C[r * N + c];
        s[r] = acc;
    }
}
