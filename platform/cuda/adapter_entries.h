/*
 * adapter_entries.h — every CUDA driver entry the cuda adapter calls, with
 * its type at KCTX_CUDA_DRIVER_ABI: the adapter's counted table
 * (platform/cuda/adapter.c) and the tests' failing layer in front of the
 * driver (platform/cuda/double/fault_layer.c, which must wrap each of them)
 * are generated from this one list. (cuda.h maps some names to versioned
 * symbols, cuMemAlloc -> cuMemAlloc_v2; the tables paste and stringify the
 * plain names, which is what cuGetProcAddress takes.)
 */
#ifndef KCTX_PLATFORM_CUDA_ADAPTER_ENTRIES_H
#define KCTX_PLATFORM_CUDA_ADAPTER_ENTRIES_H

#include <cuda.h>

// clang-format off
#define CU_ENTRIES(X)                                                                    \
    X(cuInit, (unsigned int))                                                            \
    X(cuDriverGetVersion, (int *))                                                       \
    X(cuGetErrorName, (CUresult, const char **))                                         \
    X(cuGetErrorString, (CUresult, const char **))                                       \
    X(cuDeviceGetCount, (int *))                                                         \
    X(cuDeviceGet, (CUdevice *, int))                                                    \
    X(cuDeviceGetName, (char *, int, CUdevice))                                          \
    X(cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))                       \
    X(cuDeviceTotalMem, (size_t *, CUdevice))                                            \
    X(cuCtxGetCurrent, (CUcontext *))                                                    \
    X(cuCtxGetDevice, (CUdevice *))                                                      \
    X(cuStreamCreate, (CUstream *, unsigned int))                                        \
    X(cuStreamDestroy, (CUstream))                                                       \
    X(cuStreamQuery, (CUstream))                                                         \
    X(cuStreamGetDevice, (CUstream, CUdevice *))                                         \
    X(cuStreamGetCaptureInfo, (CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, \
                               const CUgraphNode **, const CUgraphEdgeData **, size_t *)) \
    X(cuEventCreate, (CUevent *, unsigned int))                                          \
    X(cuEventDestroy, (CUevent))                                                         \
    X(cuEventRecord, (CUevent, CUstream))                                                \
    X(cuStreamWaitEvent, (CUstream, CUevent, unsigned int))                              \
    X(cuMemAlloc, (CUdeviceptr *, size_t))                                               \
    X(cuMemFree, (CUdeviceptr))                                                          \
    X(cuMemcpyHtoDAsync, (CUdeviceptr, const void *, size_t, CUstream))                  \
    X(cuMemcpyDtoHAsync, (void *, CUdeviceptr, size_t, CUstream))                        \
    X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                   \
    X(cuModuleLoadData, (CUmodule *, const void *))                                      \
    X(cuModuleUnload, (CUmodule))                                                        \
    X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))                       \
    X(cuLaunchKernel, (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, \
                       unsigned int, unsigned int, unsigned int, CUstream, void **, void **)) \
    X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *))                        \
    X(cuUserObjectCreate, (CUuserObject *, void *, CUhostFn, unsigned int, unsigned int)) \
    X(cuUserObjectRelease, (CUuserObject, unsigned int))                                 \
    X(cuGraphRetainUserObject, (CUgraph, CUuserObject, unsigned int, unsigned int))
// clang-format on

#endif
