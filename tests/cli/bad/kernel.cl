/* A variant file for the broken manifests next to it: real, tiny, valid. */
__kernel void k_fill(__global float *y, ulong n) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = 1.0f;
}
