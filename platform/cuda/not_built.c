/*
 * not_built.c — kctx_cuda_driver_calls (kctx/cuda.h) in a library built
 * without the cuda platform (the declaration's NOT_BUILT_SOURCES,
 * platform/cuda/platform.cmake): every entry is NOT_FOUND, with the
 * registry's reason.
 */
#include <kctx/cuda.h>

#include "services.h"

kctx_status kctx_cuda_driver_calls(const char *entry, uint64_t *count) {
    if (!entry || !count)
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT, "kctx_cuda_driver_calls: %s is NULL",
                              entry ? "count" : "entry");
    return kctx__svc_not_built(KCTX_NOT_FOUND, "kctx_cuda_driver_calls", "cuda");
}
