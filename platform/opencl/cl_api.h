/*
 * cl_api.h — the OpenCL entry points the opencl platform uses, loaded at run
 * time (cl_api.c): libkctx never links OpenCL, so it loads and runs where
 * OpenCL is not installed (the platform is then unavailable, with the
 * reason). OpenCL's headers give the types only.
 */
#ifndef KCTX_OPENCL_CL_API_H
#define KCTX_OPENCL_CL_API_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

/* X(name): the entry cl<name>. */
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

typedef struct kctx__cl_api {
#define KCTX_CL_MEMBER_(name) __typeof__(&cl##name) name;
    KCTX_CL_ENTRIES(KCTX_CL_MEMBER_)
#undef KCTX_CL_MEMBER_
} kctx__cl_api;

/* The loaded entries (loaded once per process, on first use), or NULL when
 * the library or an entry is missing: kctx__opencl_api_error says which. */
const kctx__cl_api *kctx__opencl_api(void);
const char *kctx__opencl_api_error(void);

/* "CL_INVALID_VALUE", ... ("CL_ERROR" for a code it does not know). */
const char *kctx__opencl_error_name(cl_int err);

#endif
