/*
 * driver_table.h — how a CUDA driver table is resolved with the counted
 * loader (platform/common/loader.h): every entry through the driver's
 * cuGetProcAddress_v2 at KCTX_CUDA_DRIVER_ABI (kctx/cuda.h), so that a
 * plain name (cuMemAlloc) gives the entry of that ABI (cuMemAlloc_v2).
 * Shared by the cuda adapter and the tests' framework drivers
 * (platform/cuda/fw_cuda.c, platform/cuda/tests/cuda_facts.c).
 */
#ifndef KCTX_PLATFORM_CUDA_DRIVER_TABLE_H
#define KCTX_PLATFORM_CUDA_DRIVER_TABLE_H

#include <cuda.h>
#include <kctx/cuda.h>

#include "loader.h"

typedef CUresult(CUDAAPI *kctx_cuda_getproc)(const char *, void **, int, cuuint64_t,
                                             CUdriverProcAddressQueryResult *);

/* The open driver's cuGetProcAddress_v2, or NULL (not a CUDA 12+ driver). */
static inline kctx_cuda_getproc kctx__cuda_getproc(const kctx_loader *l) {
    kctx_cuda_getproc gp = NULL;
    *(void **)&gp = kctx__loader_sym(l, "cuGetProcAddress_v2");
    return gp;
}

/* A kctx_loader_find: cookie points to the kctx_cuda_getproc. Codes: the
 * CUresult, or KCTX_CUDA_FIND_NOT_FOUND + the query result when the call
 * succeeded and found nothing. */
#define KCTX_CUDA_FIND_NOT_FOUND 100000
static inline int kctx__cuda_find(void *cookie, const char *name, void **fn) {
    kctx_cuda_getproc gp = *(kctx_cuda_getproc *)cookie;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult st = gp(name, fn, KCTX_CUDA_DRIVER_ABI, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (st != CUDA_SUCCESS) return (int)st;
    if (found != CU_GET_PROC_ADDRESS_SUCCESS || !*fn) return KCTX_CUDA_FIND_NOT_FOUND + (int)found;
    return 0;
}

#endif
