/*
 * ocl_common.h — shared pieces of the OpenCL benchmarks (bench/opencl/):
 * PoCL's CPU device opened the way a framework opens it (its own
 * cl_context and in-order queues), OpenCL and kctx checks, programs built
 * from source, the counting task kernel in both forms (kctx's OpenCL C task
 * ABI and the hand-written baseline's plain kernel) and callable images made
 * with the kctx_image builder.
 *
 * The benchmarks link the ICD loader (-lOpenCL) themselves for their
 * baselines; libkctx loads the same loader at run time (dlopen), so both
 * sides run on the same PoCL objects. Every helper that fails prints
 * "<program>: error: ..." and exits (kb_fatal): a benchmark never prints a
 * figure after a failure.
 */
#ifndef KCTX_BENCH_OCL_COMMON_H
#define KCTX_BENCH_OCL_COMMON_H

#include "bench_util.h"

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <kctx/image.h>
#include <kctx/kctx.h>
#include <kctx/opencl.h>

#include <stddef.h>
#include <stdint.h>

/* ---- checks ------------------------------------------------------------ */

const char *oc_error_name(cl_int e);
/* Fatal unless e is CL_SUCCESS; the message names `what`. */
void oc_check(cl_int e, const char *what);
/* Fatal unless s is KCTX_OK; the message names `what` and kctx's detail. */
void oc_kctx_check(kctx_status s, const char *what);

/* ---- PoCL -------------------------------------------------------------- */

typedef struct oc_env {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    char platform_name[256];
    char device_name[256];
    cl_uint compute_units;
} oc_env;

/* Open PoCL's CPU device and a context on it. Returns 1 when open; 0 when
 * this machine has no PoCL platform, no CPU device or no fine-grained SVM
 * with atomics (`why` says which: the benchmark then reports "not
 * measured"); any other failure is fatal. */
int oc_open(oc_env *env, char *why, size_t why_size);
void oc_close(oc_env *env);

/* An in-order command queue of env's context, no profiling. */
cl_command_queue oc_queue(const oc_env *env);

/* Build `source` for env's device (fatal with the build log on failure). */
cl_program oc_program(const oc_env *env, const char *source);
cl_kernel oc_kernel(cl_program prog, const char *name);

/* Fine-grained SVM of env's context, zeroed (fatal on failure). */
void *oc_svm_alloc(const oc_env *env, size_t bytes);

/* ---- the counting task -------------------------------------------------- */

/* kctx's task kernel (OpenCL C, kctx puts task_abi_opencl.h before it):
 * t_count(counter, value): counter[0] += value, after the task gate. */
extern const char oc_task_source[];
/* The baseline's kernels (no task ABI): count(counter, value), the same
 * work; acquire(step) and finalize(step), a launch guard like kctx's
 * runtime steps (a 64-bit compare-and-swap on a word in SVM). */
extern const char oc_baseline_source[];

/* The by-value parameter block of the baseline's acquire and finalize: 24
 * bytes like kctx's step parameters. */
typedef struct oc_step {
    uint64_t guard; /* SVM address of the 64-bit guard word */
    uint64_t id;
    uint32_t flags, reserved;
} oc_step;

/* ---- images -------------------------------------------------------------- */

typedef struct oc_image {
    void *bytes;
    size_t size;
    uint32_t tasks;
} oc_image;

/* The counting DAG callable (one parameter, counts: tensor_inout, 4 bytes
 * per task; task t runs t_count on counts[t] with value 1): one root,
 * `width` tasks depending on it, ceil(width / 64) joins (at most 64
 * dependencies per task) and one sink depending on the joins; width 0 is
 * the root alone. The OPENCL_C variant is oc_task_source. */
oc_image oc_image_dag(uint32_t width);
void oc_image_free(oc_image *img);

/* The DAG's shape, for the baseline: task t depends on deps[dep_off[t] ..
 * dep_off[t + 1]) (earlier tasks only). */
typedef struct oc_dag {
    uint32_t ntasks;
    uint32_t *dep_off;
    uint32_t *deps;
} oc_dag;
void oc_dag_build(oc_dag *d, uint32_t width);
void oc_dag_free(oc_dag *d);

/* ---- kctx ------------------------------------------------------------------ */

/* Lend `queue`'s context and device to the calling thread, create an
 * "opencl" kernel context and kernel-init it (HOST_ORDERED, the platform's
 * only strategy). Returns 0, or -1 with `why` when kctx's opencl platform is
 * not available in this build or process (not measured); other failures
 * are fatal. */
int oc_kctx_open(cl_command_queue queue, kctx_context *ctx, char *why, size_t why_size);

/* The set-up every OpenCL benchmark starts with: the environment (its
 * platform and device named on stderr), a queue of it, and a kernel
 * context lent that queue. 1 when ready; 0 when there is nothing to
 * measure here (no OpenCL, no device, or kctx's opencl platform
 * unavailable): "<name>: not measured: <why>" is said on stderr and
 * whatever was opened is closed again. */
int oc_bench_open(const char *name, oc_env *env, cl_command_queue *q, kctx_context *ctx);
/* kctx_check must be OK; then close and destroy. */
void oc_kctx_close(kctx_context ctx);

/* calloc'd array of count doubles (fatal on failure). */
double *oc_doubles(int count);

#endif
