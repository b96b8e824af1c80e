/*
 * registry.c — the platforms built into this library, by name. One
 * instance per platform per process.
 */
#include "internal.h"

#include <string.h>

const kctx_platform_desc *kctx_sim_platform(void);

const kctx_platform_desc *kctx_platform_find(const char *name) {
    if (strcmp(name, "sim") == 0) return kctx_sim_platform();
    /* "opencl" and "cuda" are planned (see docs/platforms.md); until they
     * are built, asking for them is NOT_FOUND like any unknown name. */
    return NULL;
}
