/*
 * demo_model.c — weights, inputs and the host reference of the demo's MLP
 * block (see demo_model.h for the tolerance).
 */
#include "demo_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t demo_rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float demo_rng_float(uint64_t *state, float lo, float hi) {
    /* 24 random bits: every value is exact in float */
    float u = (float)(demo_rng_next(state) >> 40) / 16777216.0f;
    return lo + (hi - lo) * u;
}

int demo_model_init(demo_model *m, uint32_t D, uint32_t H, uint32_t O, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->D = D;
    m->H = H;
    m->O = O;
    m->W1 = malloc((size_t)D * H * sizeof(float));
    m->b1 = malloc((size_t)H * sizeof(float));
    m->W2 = malloc((size_t)H * O * sizeof(float));
    m->b2 = malloc((size_t)O * sizeof(float));
    if (!m->W1 || !m->b1 || !m->W2 || !m->b2) {
        demo_model_free(m);
        return -1;
    }
    uint64_t rng = seed ^ 0x4D4C50424C4F434Bull; /* "MLPBLOCK": weights differ from inputs */
    float s1 = 1.0f / sqrtf((float)D), s2 = 1.0f / sqrtf((float)H);
    for (size_t i = 0; i < (size_t)D * H; i++) m->W1[i] = demo_rng_float(&rng, -s1, s1);
    for (size_t i = 0; i < H; i++) m->b1[i] = demo_rng_float(&rng, -0.1f, 0.1f);
    for (size_t i = 0; i < (size_t)H * O; i++) m->W2[i] = demo_rng_float(&rng, -s2, s2);
    for (size_t i = 0; i < O; i++) m->b2[i] = demo_rng_float(&rng, -0.1f, 0.1f);
    return 0;
}

void demo_model_free(demo_model *m) {
    free(m->W1);
    free(m->b1);
    free(m->W2);
    free(m->b2);
    m->W1 = m->b1 = m->W2 = m->b2 = NULL;
}

void demo_model_inputs(const demo_model *m, uint64_t *rng, float *x, uint32_t rows) {
    for (size_t i = 0; i < (size_t)rows * m->D; i++) x[i] = demo_rng_float(rng, -1.0f, 1.0f);
}

/* gamma_n of Higham's bound for float32. */
static double gamma_f32(uint32_t n) {
    const double u = 0x1p-24;
    return n * u / (1.0 - n * u);
}

uint64_t demo_model_check(const demo_model *m, const float *x, const float *y, uint32_t rows,
                          double *scratch, demo_check *c) {
    const uint32_t D = m->D, H = m->H, O = m->O;
    const double g1 = gamma_f32(D + 1), g2 = gamma_f32(H + 1);
    double *h = scratch, *e = scratch + H;
    uint64_t bad = 0;
    for (uint32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * D;
        for (uint32_t j = 0; j < H; j++) {
            double acc = m->b1[j], mag = fabs((double)m->b1[j]);
            for (uint32_t k = 0; k < D; k++) {
                double t = (double)xr[k] * (double)m->W1[(size_t)k * H + j];
                acc += t;
                mag += fabs(t);
            }
            h[j] = acc > 0.0 ? acc : 0.0;
            e[j] = g1 * mag;
        }
        for (uint32_t o = 0; o < O; o++) {
            double acc = m->b2[o], mag = fabs((double)m->b2[o]), carried = 0.0;
            for (uint32_t j = 0; j < H; j++) {
                double w = m->W2[(size_t)j * O + o];
                acc += h[j] * w;
                mag += (fabs(h[j]) + e[j]) * fabs(w);
                carried += e[j] * fabs(w);
            }
            double bound = g2 * mag + carried;
            double got = y[(size_t)r * O + o];
            double err = fabs(got - acc);
            c->elements++;
            if (err > c->max_error || isnan(err)) c->max_error = isnan(err) ? INFINITY : err;
            double ratio = bound > 0.0 ? err / bound : (err > 0.0 ? INFINITY : 0.0);
            if (ratio > c->max_ratio || isnan(ratio))
                c->max_ratio = isnan(ratio) ? INFINITY : ratio;
            if (!(err <= bound)) { /* NaN fails too */
                if (c->bad == 0) {
                    c->bad_row = r;
                    c->bad_col = o;
                    c->bad_got = got;
                    c->bad_want = acc;
                    c->bad_bound = bound;
                }
                c->bad++;
                bad++;
            }
        }
    }
    return bad;
}
