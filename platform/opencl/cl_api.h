/*
 * cl_api.h — the OpenCL entry points the opencl platform uses, loaded at run
 * time (cl_api.c): libkctx never links OpenCL, so it loads and runs where
 * OpenCL is not installed (the platform is then unavailable, with the
 * reason). OpenCL's headers give the types only.
 *
 * Every call is counted: the table is reached only through KCTX_CL(name,
 * args...), which adds one to the entry's counter and makes the call, so a
 * count of zero is an answer (kctx_opencl_driver_calls in libkctx). The
 * table is the counted loader's (platform/common/loader.h); the conformance
 * framework (platform/opencl/fw_opencl.c) has a table of its own.
 */
#ifndef KCTX_OPENCL_CL_API_H
#define KCTX_OPENCL_CL_API_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

/* X(name): the entry cl<name>, resolved at load. (GetPlatformIDs,
 * GetDeviceIDs, CreateContext, ReleaseContext, CreateUserEvent,
 * SetUserEventStatus and Finish were the conformance framework's when it
 * shared this table: the adapter never calls them (K4, K19), and they stay
 * resolved and counted so that their zero counts remain answers.) */
#define KCTX_CL_ENTRIES(X)              \
    X(GetPlatformIDs)                   \
    X(GetDeviceInfo)                    \
    X(GetContextInfo)                   \
    X(GetCommandQueueInfo)              \
    X(CreateCommandQueueWithProperties) \
    X(ReleaseCommandQueue)              \
    X(Flush)                            \
    X(EnqueueMarkerWithWaitList)        \
    X(EnqueueBarrierWithWaitList)       \
    X(GetEventInfo)                     \
    X(RetainEvent)                      \
    X(ReleaseEvent)                     \
    X(SVMAlloc)                         \
    X(SVMFree)                          \
    X(EnqueueSVMMemcpy)                 \
    X(EnqueueSVMMemFill)                \
    X(CreateProgramWithSource)          \
    X(BuildProgram)                     \
    X(GetProgramBuildInfo)              \
    X(ReleaseProgram)                   \
    X(CreateKernel)                     \
    X(ReleaseKernel)                    \
    X(GetKernelInfo)                    \
    X(GetKernelArgInfo)                 \
    X(SetKernelArg)                     \
    X(SetKernelArgSVMPointer)           \
    X(EnqueueNDRangeKernel)             \
    X(GetDeviceIDs)                     \
    X(CreateContext)                    \
    X(ReleaseContext)                   \
    X(CreateUserEvent)                  \
    X(SetUserEventStatus)               \
    X(Finish)

/* Entries never resolved, never called: listed so that their counters exist
 * and a zero is an answer (K19: OpenCL's host waits; clRetainCommandQueue:
 * kctx never holds a caller's queue). */
#define KCTX_CL_NEVER(X) X(WaitForEvents) X(RetainCommandQueue)

/* The counters' indices: KCTX_CL_E_<name>. */
enum {
#define KCTX_CL_INDEX_(name) KCTX_CL_E_##name,
    KCTX_CL_ENTRIES(KCTX_CL_INDEX_) KCTX_CL_E_RESOLVED_,
    KCTX_CL_E_NEVER_BASE_ = KCTX_CL_E_RESOLVED_ - 1, /* the never-call entries follow */
    KCTX_CL_NEVER(KCTX_CL_INDEX_) KCTX_CL_E_COUNT_
#undef KCTX_CL_INDEX_
};

typedef struct kctx__cl_api {
#define KCTX_CL_MEMBER_(name) __typeof__(&cl##name) name;
    KCTX_CL_ENTRIES(KCTX_CL_MEMBER_)
#undef KCTX_CL_MEMBER_
} kctx__cl_api;

/* 1 once the library and every entry are loaded (once per process, on first
 * use), 0 when the library or an entry is missing: kctx__opencl_api_error
 * says which. */
int kctx__opencl_loaded(void);
const char *kctx__opencl_api_error(void);

/* Counts one call of entry KCTX_CL_E_<name> and gives the loaded table
 * (only after kctx__opencl_loaded answered 1). Use KCTX_CL. */
const kctx__cl_api *kctx__opencl_counted(int entry);

/* One counted OpenCL call: KCTX_CL(Flush, queue) is clFlush(queue). */
#define KCTX_CL(name, ...) (kctx__opencl_counted(KCTX_CL_E_##name)->name(__VA_ARGS__))

/* The calls made so far of "cl<name>" (an entry of either list), or -1 for a
 * name in neither. */
long long kctx__opencl_calls(const char *entry);

#include "cl_errors.h" /* kctx__opencl_error_name */

#endif
