/*
 * pocl.h — PoCL's CPU device for the benchmarks' OpenCL baselines
 * (sim_enqueue, sim_roundtrip, platform/opencl/bench/): found and opened the way a
 * framework opens it (its platform by name, its CPU device, a context of
 * its own), OpenCL error names and checks, in-order queues, programs built
 * from source. Compiled only when the build found OpenCL (library
 * kctx_bench_pocl, which defines KCTX_HAVE_OPENCL for its users). Every
 * failure other than "this machine has no PoCL" is fatal (kb_fatal): a
 * benchmark never prints a figure after one.
 */
#ifndef KCTX_BENCH_POCL_H
#define KCTX_BENCH_POCL_H

#include "bench_util.h"

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <stddef.h>

/* "CL_INVALID_VALUE", ...; "CL_(unknown error)" for a code it does not know. */
const char *kb_cl_error_name(cl_int e);
/* Fatal unless e is CL_SUCCESS; the message names `what`. */
void kb_cl_check(cl_int e, const char *what);

typedef struct kb_pocl {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    char platform_name[256];
    char device_name[256];
    cl_uint compute_units;
} kb_pocl;

/* Open PoCL's CPU device and a context on it. Returns 1 when open; 0 when
 * this machine has no OpenCL platform, no PoCL platform or no CPU device
 * (`why` says which; the benchmark then reports its baseline as none or
 * itself as not measured). */
int kb_pocl_open(kb_pocl *p, char *why, size_t why_size);
void kb_pocl_close(kb_pocl *p);
/* An in-order command queue of p's context, no profiling. */
cl_command_queue kb_pocl_queue(const kb_pocl *p);
/* Build `source` for p's device (fatal with the build log on failure). */
cl_program kb_pocl_program(const kb_pocl *p, const char *source);
cl_kernel kb_pocl_kernel(cl_program prog, const char *name);

#endif /* KCTX_BENCH_POCL_H */
