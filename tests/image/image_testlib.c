/*
 * image_testlib.c — see image_testlib.h.
 */
#include "image_testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void example_fill(uint8_t *buf, size_t n, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)(x >> 24);
    }
}

/* Adds a variant of `size` pseudo-random bytes. */
static kctx_build_status add_blob(kctx_image_builder *b, kctx_variant_kind kind, size_t size,
                                  uint32_t seed) {
    uint8_t *blob = malloc(size ? size : 1);
    if (blob == NULL) return KCTX_BUILD_NO_MEMORY;
    example_fill(blob, size, seed);
    kctx_build_status s = kctx_image_builder_variant(b, kind, blob, size);
    free(blob);
    return s;
}

static void bind_t(kctx_image_builder *b, uint32_t param, uint64_t offset) {
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, param, offset);
}
static void bind_s(kctx_image_builder *b, uint32_t param) {
    kctx_image_builder_bind(b, KCTX_BIND_SCALAR, param, 0);
}
static void bind_i(kctx_image_builder *b, uint64_t value) {
    kctx_image_builder_bind(b, KCTX_BIND_IMMEDIATE, 0, value);
}

static void build_vector_add(kctx_image_builder *b) {
    uint32_t f;
    kctx_image_builder_param(b, "a", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "b", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "c", KCTX_PARAM_TENSOR_OUT);
    kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_child(b, "vadd", "kctx_vadd", &f);
    kctx_image_builder_child_param(b, "a", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "b", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "c", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    add_blob(b, KCTX_VARIANT_SIM_ELF, 333, 1);
    kctx_image_builder_task(b, f, 4, NULL);
    bind_t(b, 0, 0);
    bind_t(b, 1, 0);
    bind_t(b, 2, 0);
    bind_s(b, 3);
}

/* y = ((x * alpha) fanned out to three scaled copies, summed pairwise):
 *   t0 scale x -> tmp[0]
 *   t1, t2, t3 scale tmp[0] -> tmp[1], tmp[2], tmp[3]    (after t0)
 *   t4 add tmp[1] + tmp[2] -> tmp[4]                     (after t1, t2)
 *   t5 add tmp[3] + tmp[4] -> y                          (after t3, t4) */
static void build_dag(kctx_image_builder *b) {
    const uint64_t chunk = 4096;
    uint32_t scale, add, t;
    kctx_image_builder_param(b, "x", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "y", KCTX_PARAM_TENSOR_OUT);
    kctx_image_builder_param(b, "tmp", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_param(b, "alpha", KCTX_PARAM_SCALAR);
    kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_child(b, "scale", "kctx_scale", &scale);
    kctx_image_builder_child_param(b, "in", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "out", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "factor", KCTX_PARAM_SCALAR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    add_blob(b, KCTX_VARIANT_SIM_ELF, 517, 2);
    add_blob(b, KCTX_VARIANT_OPENCL_C, 95, 3);
    kctx_image_builder_child(b, "add", "kctx_add", &add);
    kctx_image_builder_child_param(b, "a", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "b", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "out", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    add_blob(b, KCTX_VARIANT_SIM_ELF, 129, 4);

    kctx_image_builder_task(b, scale, 2, &t); /* t0 */
    bind_t(b, 0, 0), bind_t(b, 2, 0), bind_s(b, 3), bind_s(b, 4);
    for (uint32_t k = 1; k <= 3; k++) { /* t1..t3 */
        kctx_image_builder_task(b, scale, 1, &t);
        bind_t(b, 2, 0), bind_t(b, 2, k * chunk), bind_i(b, k + 1), bind_s(b, 4);
        kctx_image_builder_dep(b, 0);
    }
    kctx_image_builder_task(b, add, 2, &t); /* t4 */
    bind_t(b, 2, 1 * chunk), bind_t(b, 2, 2 * chunk), bind_t(b, 2, 4 * chunk), bind_s(b, 4);
    kctx_image_builder_dep(b, 1);
    kctx_image_builder_dep(b, 2);
    kctx_image_builder_task(b, add, 2, &t); /* t5 */
    bind_t(b, 2, 3 * chunk), bind_t(b, 2, 4 * chunk), bind_t(b, 1, 0), bind_s(b, 4);
    kctx_image_builder_dep(b, 4);
    kctx_image_builder_dep(b, 3);
}

/* C (2x2 blocks) = A B: zero two accumulators, four block products, two
 * accumulations. */
static void build_matmul(kctx_image_builder *b) {
    uint32_t gemm, zero, acc;
    kctx_image_builder_param(b, "A", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "B", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "C", KCTX_PARAM_TENSOR_OUT);
    kctx_image_builder_param(b, "work", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_param(b, "M", KCTX_PARAM_SCALAR);
    kctx_image_builder_param(b, "N", KCTX_PARAM_SCALAR);
    kctx_image_builder_param(b, "K", KCTX_PARAM_SCALAR);
    kctx_image_builder_child(b, "gemm_block", "kctx_gemm_block", &gemm);
    kctx_image_builder_child_param(b, "a", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "b", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "c", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "m", KCTX_PARAM_SCALAR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_child_param(b, "k", KCTX_PARAM_SCALAR);
    kctx_image_builder_child_param(b, "block", KCTX_PARAM_SCALAR);
    add_blob(b, KCTX_VARIANT_SIM_ELF, 1001, 10);
    add_blob(b, KCTX_VARIANT_CUDA_PTX, 77, 11);
    add_blob(b, KCTX_VARIANT_CUDA_CUBIN, 129, 12);
    add_blob(b, KCTX_VARIANT_OPENCL_C, 63, 13);
    kctx_image_builder_child(b, "zero_block", "kctx_zero_block", &zero);
    kctx_image_builder_child_param(b, "c", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "bytes", KCTX_PARAM_SCALAR);
    add_blob(b, KCTX_VARIANT_SIM_ELF, 1, 14);
    kctx_image_builder_child(b, "accumulate", "kctx_accumulate", &acc);
    kctx_image_builder_child_param(b, "partial", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "c", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    add_blob(b, KCTX_VARIANT_SIM_ELF, 65, 15);
    add_blob(b, KCTX_VARIANT_CUDA_FATBIN, 200, 16);

    const uint64_t blk = 1u << 16;
    for (uint32_t i = 0; i < 2; i++) { /* t0, t1: zero the two work halves */
        kctx_image_builder_task(b, zero, 1, NULL);
        bind_t(b, 3, i * 2 * blk), bind_i(b, 2 * blk);
    }
    for (uint32_t i = 0; i < 4; i++) { /* t2..t5: block products into work */
        kctx_image_builder_task(b, gemm, 16, NULL);
        bind_t(b, 0, (i / 2) * blk), bind_t(b, 1, (i % 2) * blk), bind_t(b, 3, i * blk);
        bind_s(b, 4), bind_s(b, 5), bind_s(b, 6), bind_i(b, i);
        kctx_image_builder_dep(b, i / 2);
    }
    kctx_image_builder_task(b, acc, 8, NULL); /* t6 */
    bind_t(b, 3, 0), bind_t(b, 2, 0), bind_s(b, 5);
    kctx_image_builder_dep(b, 2);
    kctx_image_builder_dep(b, 3);
    kctx_image_builder_task(b, acc, 8, NULL); /* t7 */
    bind_t(b, 3, 2 * blk), bind_t(b, 2, 2 * blk), bind_s(b, 5);
    kctx_image_builder_dep(b, 5);
    kctx_image_builder_dep(b, 4);
    kctx_image_builder_dep(b, 6);
}

/* An image for two platforms, one of them Ascend (format 1.1):
 *   t0 scale x -> y    (sim_elf and ascend_bin variants)
 *   t1 sum y -> s      (ascend_bin only; after t0) */
static void build_ascend(kctx_image_builder *b) {
    uint32_t scale, sum;
    kctx_image_builder_param(b, "x", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "y", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_param(b, "s", KCTX_PARAM_TENSOR_OUT);
    kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_child(b, "scale", "kctx_scale", &scale);
    kctx_image_builder_child_param(b, "in", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "out", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    add_blob(b, KCTX_VARIANT_SIM_ELF, 211, 20);
    add_blob(b, KCTX_VARIANT_ASCEND_BIN, 300, 21);
    kctx_image_builder_child(b, "sum", "kctx_sum", &sum);
    kctx_image_builder_child_param(b, "in", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "out", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    add_blob(b, KCTX_VARIANT_ASCEND_BIN, 97, 22);
    kctx_image_builder_task(b, scale, 8, NULL);
    bind_t(b, 0, 0), bind_t(b, 1, 0), bind_s(b, 3);
    kctx_image_builder_task(b, sum, 1, NULL);
    bind_t(b, 1, 0), bind_t(b, 2, 0), bind_s(b, 3);
    kctx_image_builder_dep(b, 0);
}

static const char *const example_names[EXAMPLE_COUNT] = {"vector_add", "dag", "matmul", "empty",
                                                         "ascend"};

const char *example_name(int which) {
    return which >= 0 && which < EXAMPLE_COUNT ? example_names[which] : "?";
}

kctx_build_status example_build(int which, void **out, size_t *size) {
    char msg[256];
    kctx_image_builder *b = kctx_image_builder_new(example_name(which));
    if (b == NULL) return KCTX_BUILD_NO_MEMORY;
    switch (which) {
    case EXAMPLE_VECTOR_ADD:
        build_vector_add(b);
        break;
    case EXAMPLE_DAG:
        build_dag(b);
        break;
    case EXAMPLE_MATMUL:
        build_matmul(b);
        break;
    case EXAMPLE_ASCEND:
        build_ascend(b);
        break;
    default:
        break;
    }
    kctx_build_status s = kctx_image_builder_finish(b, out, size, msg, sizeof msg);
    if (s != KCTX_BUILD_OK) fprintf(stderr, "example %s: %s\n", example_name(which), msg);
    kctx_image_builder_free(b);
    return s;
}

/* ---- walking a view ----------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ull; }

static uint64_t mix_string(uint64_t h, const char *s) {
    for (; *s; s++) h = mix(h, (unsigned char)*s);
    return mix(h, 0);
}

#define PROBLEM(text)                           \
    do {                                        \
        if (problem != NULL) *problem = (text); \
        return 0;                               \
    } while (0)

uint64_t walk_view(const kctx_image_view *v, const char **problem) {
    uint64_t h = 0xCBF29CE484222325ull;
    if (problem != NULL) *problem = NULL;
    const char *name = kctx_image_name(v);
    if (name == NULL || *name == '\0') PROBLEM("callable name is NULL or empty");
    h = mix_string(h, name);
    uint32_t np = kctx_image_param_count(v);
    for (uint32_t i = 0; i < np; i++) {
        kctx_image_param p = kctx_image_param_at(v, i);
        if (p.name == NULL || p.kind < KCTX_PARAM_TENSOR_IN || p.kind > KCTX_PARAM_SCALAR)
            PROBLEM("bad callable parameter");
        h = mix(mix_string(h, p.name), (uint64_t)p.kind);
    }
    if (kctx_image_param_at(v, np).name != NULL) PROBLEM("param_at past the end answered");

    uint32_t nc = kctx_image_child_count(v);
    for (uint32_t c = 0; c < nc; c++) {
        kctx_image_child ch = kctx_image_child_at(v, c);
        if (ch.name == NULL || ch.entry == NULL || ch.index != c || ch.func_id >= nc ||
            ch.variant_count == 0)
            PROBLEM("bad child");
        kctx_image_child by_id = kctx_image_child_by_id(v, ch.func_id);
        if (by_id.index != c) PROBLEM("child_by_id disagrees with child_at");
        h = mix(mix_string(mix_string(h, ch.name), ch.entry), ch.func_id);
        for (uint32_t k = 0; k < ch.param_count; k++) {
            kctx_image_param p = kctx_image_child_param_at(v, c, k);
            if (p.name == NULL || (p.kind != KCTX_PARAM_TENSOR && p.kind != KCTX_PARAM_SCALAR))
                PROBLEM("bad child parameter");
            h = mix(mix_string(h, p.name), (uint64_t)p.kind);
        }
        if (kctx_image_child_param_at(v, c, ch.param_count).name != NULL)
            PROBLEM("child_param_at past the end answered");
        for (uint32_t k = 0; k < ch.variant_count; k++) {
            kctx_image_variant var = kctx_image_variant_at(v, c, k);
            if (var.blob == NULL || var.blob_size == 0 || var.kind < KCTX_VARIANT_SIM_ELF ||
                var.kind > KCTX_VARIANT_ASCEND_BIN || var.blob_offset % KCTX_IMAGE_BLOB_ALIGN != 0)
                PROBLEM("bad variant");
            const uint8_t *blob = var.blob;
            for (uint64_t i = 0; i < var.blob_size; i++) h = mix(h, blob[i]);
            kctx_image_variant found;
            if (kctx_image_find_variant(v, c, var.kind, &found) != 0 || found.kind != var.kind)
                PROBLEM("find_variant misses a variant");
        }
        if (kctx_image_variant_at(v, c, ch.variant_count).blob != NULL)
            PROBLEM("variant_at past the end answered");
    }
    if (kctx_image_child_at(v, nc).name != NULL) PROBLEM("child_at past the end answered");
    if (kctx_image_child_by_id(v, nc).name != NULL) PROBLEM("child_by_id of a missing id answered");

    uint32_t nt = kctx_image_task_count(v);
    for (uint32_t t = 0; t < nt; t++) {
        kctx_image_task task = kctx_image_task_at(v, t);
        kctx_image_child ch = kctx_image_child_by_id(v, task.func_id);
        if (ch.name == NULL || task.block_dim == 0 || task.binding_count != ch.param_count)
            PROBLEM("bad task");
        h = mix(mix(h, task.func_id), task.block_dim);
        for (uint32_t k = 0; k < task.binding_count; k++) {
            kctx_image_binding bd = kctx_image_binding_at(v, t, k);
            if (bd.kind < KCTX_BIND_TENSOR || bd.kind > KCTX_BIND_IMMEDIATE) PROBLEM("bad binding");
            if (bd.kind != KCTX_BIND_IMMEDIATE && bd.param >= np) PROBLEM("binding param range");
            h = mix(mix(mix(h, (uint64_t)bd.kind), bd.param), bd.value);
        }
        for (uint32_t k = 0; k < task.dep_count; k++) {
            uint32_t dep = kctx_image_dep_at(v, t, k);
            if (dep >= t) PROBLEM("dependency not earlier");
            h = mix(h, dep);
        }
        if (kctx_image_dep_at(v, t, task.dep_count) != UINT32_MAX)
            PROBLEM("dep_at past the end answered");
    }
    if (kctx_image_task_at(v, nt).block_dim != 0) PROBLEM("task_at past the end answered");
    return h | 1u; /* never 0: 0 means a problem */
}

/* ---- rebuilding --------------------------------------------------------- */

int rebuild_from_view(const kctx_image_view *v, void **out, size_t *size, char *msg,
                      size_t msg_size) {
    uint32_t nc = kctx_image_child_count(v);
    for (uint32_t c = 0; c < nc; c++)
        if (kctx_image_child_at(v, c).func_id != c) return 1;
    kctx_image_builder *b = kctx_image_builder_new(kctx_image_name(v));
    if (b == NULL) return -1;
    for (uint32_t i = 0; i < kctx_image_param_count(v); i++) {
        kctx_image_param p = kctx_image_param_at(v, i);
        kctx_image_builder_param(b, p.name, p.kind);
    }
    for (uint32_t c = 0; c < nc; c++) {
        kctx_image_child ch = kctx_image_child_at(v, c);
        kctx_image_builder_child(b, ch.name, ch.entry, NULL);
        for (uint32_t k = 0; k < ch.param_count; k++) {
            kctx_image_param p = kctx_image_child_param_at(v, c, k);
            kctx_image_builder_child_param(b, p.name, p.kind);
        }
        for (uint32_t k = 0; k < ch.variant_count; k++) {
            kctx_image_variant var = kctx_image_variant_at(v, c, k);
            kctx_image_builder_variant(b, var.kind, var.blob, (size_t)var.blob_size);
        }
    }
    for (uint32_t t = 0; t < kctx_image_task_count(v); t++) {
        kctx_image_task task = kctx_image_task_at(v, t);
        kctx_image_builder_task(b, task.func_id, task.block_dim, NULL);
        for (uint32_t k = 0; k < task.binding_count; k++) {
            kctx_image_binding bd = kctx_image_binding_at(v, t, k);
            kctx_image_builder_bind(b, bd.kind, bd.param, bd.value);
        }
        for (uint32_t k = 0; k < task.dep_count; k++)
            kctx_image_builder_dep(b, kctx_image_dep_at(v, t, k));
    }
    kctx_build_status s = kctx_image_builder_finish(b, out, size, msg, msg_size);
    kctx_image_builder_free(b);
    return s == KCTX_BUILD_OK ? 0 : -1;
}

uint8_t *copy_shifted(const void *bytes, size_t size, size_t shift, void **block) {
    void *p = NULL;
    if (posix_memalign(&p, 64, size + shift + 1) != 0) return NULL;
    *block = p;
    uint8_t *start = (uint8_t *)p + shift;
    if (size != 0) memcpy(start, bytes, size);
    return start;
}
