/* Variant file of features.yaml: fill y[0..n) with the float in the low
 * 32 bits of `value`. */
__kernel void fill(__global float *y, ulong n, ulong value) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = as_float((uint)value);
}

__kernel void k_noop(void) {}
