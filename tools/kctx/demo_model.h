/*
 * demo_model.h — the model `kctx demo` serves: one MLP block
 *
 *     Y = relu(X * W1 + b1) * W2 + b2     (row-major float32)
 *
 * X is rows x D, W1 D x H, W2 H x O. This file owns the weights (seeded,
 * reproducible), the inputs of a request, and the host reference every
 * device output is checked against.
 *
 * Tolerance. The reference is computed in double precision. Each device
 * output element is accepted when |got - ref| is within the worst-case
 * rounding error of float32 arithmetic for that element (Higham's forward
 * error bound for dot products, gamma_n = n u / (1 - n u), u = 2^-24):
 *   hidden j:  e_j = gamma_{D+1} (sum_k |x_k W1_kj| + |b1_j|)
 *   output o:  gamma_{H+1} (sum_j (|h_j| + e_j) |W2_jo| + |b2_o|) + sum_j e_j |W2_jo|
 * (ReLU is 1-Lipschitz and exact.) The bound holds whatever the summation
 * order or tiling of the kernels, with or without fused multiply-add; a
 * wrong kernel, a stale buffer or a missing task misses it by orders of
 * magnitude.
 */
#ifndef KCTX_TOOL_DEMO_MODEL_H
#define KCTX_TOOL_DEMO_MODEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct demo_model {
    uint32_t D, H, O;
    float *W1, *b1, *W2, *b2; /* D*H, H, H*O, O */
} demo_model;

/* Weights uniform in (-1, 1) / sqrt(fan-in), biases in (-0.1, 0.1), from
 * `seed`. Returns 0, or -1 when out of memory (nothing to free then). */
int demo_model_init(demo_model *m, uint32_t D, uint32_t H, uint32_t O, uint64_t seed);
void demo_model_free(demo_model *m);

/* Deterministic pseudo-random numbers (splitmix64). */
uint64_t demo_rng_next(uint64_t *state);
/* Uniform in [lo, hi). */
float demo_rng_float(uint64_t *state, float lo, float hi);

/* Fill rows x D inputs uniform in (-1, 1). */
void demo_model_inputs(const demo_model *m, uint64_t *rng, float *x, uint32_t rows);

typedef struct demo_check {
    uint64_t elements; /* output elements compared */
    uint64_t bad;      /* outside their bound */
    double max_error;  /* largest |got - ref| */
    double max_ratio;  /* largest |got - ref| / bound */
    /* The first element outside its bound. */
    uint32_t bad_row, bad_col;
    double bad_got, bad_want, bad_bound;
} demo_check;

/* Compare `rows` rows of device outputs `y` (rows x O) for inputs `x` with
 * the reference, accumulating into *c. `scratch` holds 2*H doubles.
 * Returns the number of elements outside their bound in this call. */
uint64_t demo_model_check(const demo_model *m, const float *x, const float *y, uint32_t rows,
                          double *scratch, demo_check *c);

#endif /* KCTX_TOOL_DEMO_MODEL_H */
