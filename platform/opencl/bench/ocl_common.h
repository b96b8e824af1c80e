/*
 * ocl_common.h — shared pieces of the OpenCL benchmarks (platform/opencl/bench/):
 * PoCL's CPU device (pocl.h) with fine-grained SVM, kctx checks, the
 * counting task kernel in both forms (kctx's OpenCL C task
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

#include "bench_kctx.h"
#include "bench_util.h"
#include "pocl.h"

#include <kctx/image.h>
#include <kctx/kctx.h>
#include <kctx/opencl.h>

#include <stddef.h>
#include <stdint.h>

/* ---- checks ------------------------------------------------------------ */

/* ---- PoCL -------------------------------------------------------------- */

/* PoCL's CPU device and context (pocl.h: kb_pocl_close, kb_pocl_queue,
 * kb_pocl_program, kb_pocl_kernel serve it). */
typedef kb_pocl oc_env;

/* kb_pocl_open, and also 0 when the device has no fine-grained buffer SVM
 * with atomics (`why` says which: the benchmark then reports "not
 * measured"); any other failure is fatal. */
int oc_open(oc_env *env, char *why, size_t why_size);

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

#endif
