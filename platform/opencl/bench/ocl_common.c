/*
 * ocl_common.c — see ocl_common.h.
 */
#include "ocl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- checks ------------------------------------------------------------ */

/* ---- PoCL -------------------------------------------------------------- */

int oc_open(oc_env *env, char *why, size_t why_size) {
    if (!kb_pocl_open(env, why, why_size)) return 0;
    cl_device_svm_capabilities svm = 0;
    cl_int e = clGetDeviceInfo(env->device, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
    if (e != CL_SUCCESS || !(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) ||
        !(svm & CL_DEVICE_SVM_ATOMICS)) {
        snprintf(why, why_size, "PoCL's device has no fine-grained buffer SVM with atomics");
        kb_pocl_close(env);
        return 0;
    }
    return 1;
}

void *oc_svm_alloc(const oc_env *env, size_t bytes) {
    void *p = clSVMAlloc(env->context, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, bytes, 0);
    if (p == NULL) kb_fatal("clSVMAlloc of %zu bytes (fine-grained) failed", bytes);
    memset(p, 0, bytes);
    return p;
}

/* ---- the counting task -------------------------------------------------- */

const char oc_task_source[] = "KCTX_TASK(t_count, __global uint *counter, ulong value) {\n"
                              "    KCTX_TASK_GATE();\n"
                              "    counter[0] += (uint)value;\n"
                              "}\n";

const char oc_baseline_source[] =
    "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
    "typedef struct step_params { ulong guard; ulong id; uint flags; uint reserved; } "
    "step_params;\n"
    "__kernel void count(__global uint *counter, ulong value) {\n"
    "    counter[0] += (uint)value;\n"
    "}\n"
    "__kernel void acquire(step_params p) {\n"
    "    atom_cmpxchg((__global volatile ulong *)p.guard, 0ul, p.id);\n"
    "}\n"
    "__kernel void finalize(step_params p) {\n"
    "    atom_cmpxchg((__global volatile ulong *)p.guard, p.id, 0ul);\n"
    "}\n";

/* ---- images -------------------------------------------------------------- */

/* Task `t` of the counting DAG: t_count on counts[t], value 1. */
static void add_counting_task(kctx_image_builder *b, uint32_t fid, uint32_t t) {
    kctx_image_builder_task(b, fid, 1, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, (uint64_t)t * sizeof(uint32_t));
    kctx_image_builder_bind(b, KCTX_BIND_IMMEDIATE, 0, 1);
}

oc_image oc_image_dag(uint32_t width) {
    if (width > 4000) kb_fatal("DAG width %u out of range 0..4000", width);
    const uint32_t per_join = KCTX_IMAGE_MAX_DEPS;
    const uint32_t joins = (width + per_join - 1) / per_join;
    const uint32_t ntasks = width == 0 ? 1 : 1 + width + joins + 1;
    const char *name = width == 0 ? "counted_task_cl" : "wide_dag_cl";
    kctx_image_builder *b = kctx_image_builder_new(name);
    if (b == NULL) kb_fatal("kctx_image_builder_new(%s): out of memory", name);
    uint32_t fid = 0, t = 0;
    kctx_image_builder_param(b, "counts", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_child(b, "count", "t_count", &fid);
    kctx_image_builder_child_param(b, "counter", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "value", KCTX_PARAM_SCALAR);
    kctx_image_builder_variant(b, KCTX_VARIANT_OPENCL_C, oc_task_source, sizeof oc_task_source - 1);
    add_counting_task(b, fid, t++); /* the root */
    for (uint32_t i = 0; i < width; i++) {
        add_counting_task(b, fid, t++);
        kctx_image_builder_dep(b, 0);
    }
    const uint32_t first_join = 1 + width;
    for (uint32_t j = 0; j < joins; j++) {
        add_counting_task(b, fid, t++);
        for (uint32_t i = j * per_join; i < width && i < (j + 1) * per_join; i++)
            kctx_image_builder_dep(b, 1 + i);
    }
    if (width > 0) {
        add_counting_task(b, fid, t++); /* the sink */
        for (uint32_t j = 0; j < joins; j++) kctx_image_builder_dep(b, first_join + j);
    }
    if (t != ntasks) kb_fatal("DAG of %u tasks, %u expected", t, ntasks);
    oc_image img = {NULL, 0, ntasks};
    char msg[160] = "";
    kctx_build_status s = kctx_image_builder_finish(b, &img.bytes, &img.size, msg, sizeof msg);
    kctx_image_builder_free(b);
    if (s != KCTX_BUILD_OK) kb_fatal("building the %s image failed (%d): %s", name, (int)s, msg);
    return img;
}

void oc_image_free(oc_image *img) {
    free(img->bytes);
    memset(img, 0, sizeof *img);
}

void oc_dag_build(oc_dag *d, uint32_t width) {
    const uint32_t per_join = KCTX_IMAGE_MAX_DEPS;
    const uint32_t joins = (width + per_join - 1) / per_join;
    const uint32_t n = width == 0 ? 1 : 1 + width + joins + 1;
    d->ntasks = n;
    d->dep_off = calloc(n + 1, sizeof *d->dep_off);
    d->deps = calloc((size_t)width * 2 + joins + 1, sizeof *d->deps);
    if (!d->dep_off || !d->deps) kb_fatal("out of memory");
    uint32_t k = 0, t = 0;
    d->dep_off[t++] = k; /* the root: none */
    for (uint32_t i = 0; i < width; i++) {
        d->dep_off[t++] = k;
        d->deps[k++] = 0;
    }
    for (uint32_t j = 0; j < joins; j++) {
        d->dep_off[t++] = k;
        for (uint32_t i = j * per_join; i < width && i < (j + 1) * per_join; i++)
            d->deps[k++] = 1 + i;
    }
    if (width > 0) {
        d->dep_off[t++] = k;
        for (uint32_t j = 0; j < joins; j++) d->deps[k++] = 1 + width + j;
    }
    d->dep_off[t] = k;
    if (t != n) kb_fatal("DAG of %u tasks, %u expected", t, n);
}

void oc_dag_free(oc_dag *d) {
    free(d->dep_off);
    free(d->deps);
    memset(d, 0, sizeof *d);
}

/* ---- kctx ------------------------------------------------------------------ */

int oc_kctx_open(cl_command_queue queue, kctx_context *ctx, char *why, size_t why_size) {
    kctx_status s = kctx_opencl_bind_queue(queue, NULL);
    if (s == KCTX_UNSUPPORTED) {
        snprintf(why, why_size, "kctx's opencl platform: %s", kctx_thread_last_error());
        return -1;
    }
    kb_kctx_check(s, "kctx_opencl_bind_queue");
    s = kctx_context_create("opencl", ctx);
    if (s == KCTX_NOT_FOUND || s == KCTX_UNSUPPORTED) {
        snprintf(why, why_size, "kctx's opencl platform: %s", kctx_thread_last_error());
        return -1;
    }
    kb_kctx_check(s, "kctx_context_create(opencl)");
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    kb_kctx_check(kctx_kernel_init(*ctx, &cfg), "kctx_kernel_init");
    return 0;
}

int oc_bench_open(const char *name, oc_env *env, cl_command_queue *q, kctx_context *ctx) {
    char why[512] = "";
    if (!oc_open(env, why, sizeof why)) {
        kb_progress("%s: not measured: %s", name, why);
        return 0;
    }
    kb_progress("OpenCL platform \"%s\", device \"%s\" (%u compute units)", env->platform_name,
                env->device_name, (unsigned)env->compute_units);
    *q = kb_pocl_queue(env);
    if (oc_kctx_open(*q, ctx, why, sizeof why) != 0) {
        kb_cl_check(clReleaseCommandQueue(*q), "clReleaseCommandQueue");
        kb_pocl_close(env);
        kb_progress("%s: not measured: %s", name, why);
        return 0;
    }
    return 1;
}
