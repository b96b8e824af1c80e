/*
 * OpenCL C variants of kernels/elementwise.c: the same entries, the same
 * parameters in the same order (tensors as __global pointers with the
 * binding's offset applied by the launcher, scalars as ulong; see
 * callable_abi.h). Any NDRange computes the whole result.
 *
 * Task kernels (kctx/task_abi_opencl.h, which kctx puts before this source):
 * KCTX_TASK gives each the task header and the ABI marker; the gate skips
 * the body once the launch's context has a device error; a shape the kernel
 * cannot compute fails the task (KCTX_TASK_FAIL), as the sim variant's
 * report_error does.
 */

/* (a, b, c: tensor; n: scalar): c[i] = a[i] + b[i] for i < n. */
KCTX_TASK(k_vadd, __global const float *a, __global const float *b, __global float *c,
                     ulong n) {
    KCTX_TASK_GATE();
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) c[i] = a[i] + b[i];
}

/* (x, y: tensor; n, alpha: scalar): y[i] = alpha * x[i]; alpha is a float
 * in the low 32 bits of its scalar. */
KCTX_TASK(k_scale, __global const float *x, __global float *y, ulong n, ulong alpha_bits) {
    KCTX_TASK_GATE();
    float alpha = as_float((uint)alpha_bits);
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = alpha * x[i];
}
