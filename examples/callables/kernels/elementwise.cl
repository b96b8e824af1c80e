/*
 * OpenCL C variants of kernels/elementwise.c: the same entries, the same
 * parameters in the same order (tensors as __global pointers with the
 * binding's offset applied by the launcher, scalars as ulong; see
 * callable_abi.h). Any NDRange computes the whole result.
 */

/* (a, b, c: tensor; n: scalar): c[i] = a[i] + b[i] for i < n. */
__kernel void k_vadd(__global const float *a, __global const float *b, __global float *c,
                     ulong n) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) c[i] = a[i] + b[i];
}

/* (x, y: tensor; n, alpha: scalar): y[i] = alpha * x[i]; alpha is a float
 * in the low 32 bits of its scalar. */
__kernel void k_scale(__global const float *x, __global float *y, ulong n, ulong alpha_bits) {
    float alpha = as_float((uint)alpha_bits);
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = alpha * x[i];
}
