/*
 * cl_api.c — loads the OpenCL ICD loader at run time (cl_api.h): dlopen of
 * the file KCTX_OPENCL_LIBRARY names, else "libOpenCL.so.1" (the ICD
 * loader's SONAME), and dlsym of every entry the platform uses, through
 * the counted loader (platform/common/loader.h). The ICD
 * loader dispatches each call through the object it is given, so objects a
 * framework created through another loader (PyOpenCL's wheel carries its
 * own) work with this one when both reach the same driver. Every call is
 * counted per entry (KCTX_CL, g_calls).
 */
#include "cl_api.h"

#include "loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

static kctx__cl_api g_api;
static const kctx__cl_api *g_loaded;
static char g_error[512];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define KCTX_CL_NAME_(name) "cl" #name,
static const char *const k_names[KCTX_CL_E_COUNT_] = {KCTX_CL_ENTRIES(KCTX_CL_NAME_)
                                                          KCTX_CL_NEVER(KCTX_CL_NAME_)};
#undef KCTX_CL_NAME_
static void *g_fns[KCTX_CL_E_RESOLVED_];
static _Atomic uint64_t g_calls[KCTX_CL_E_COUNT_];
/* The counted table (platform/common/loader.h). */
static kctx_loader g_ld =
    KCTX_LOADER_INIT(k_names, KCTX_CL_E_RESOLVED_, KCTX_CL_E_COUNT_, g_fns, g_calls);

static void load(void) {
    char why[300];
    if (kctx__loader_open(&g_ld, "KCTX_OPENCL_LIBRARY", "libOpenCL.so.1", why, sizeof why)) {
        snprintf(g_error, sizeof g_error,
                 "the OpenCL library is not installed or not loadable (%s): install an ICD "
                 "loader and a driver (Debian: ocl-icd-libopencl1 pocl-opencl-icd), or set "
                 "KCTX_OPENCL_LIBRARY",
                 why);
        return;
    }
    int bad = kctx__loader_resolve(&g_ld, NULL, NULL, NULL);
    if (bad >= 0) {
        snprintf(g_error, sizeof g_error,
                 "%s has no %s: kctx needs an OpenCL 2.0 (or newer) ICD loader", g_ld.path,
                 k_names[bad]);
        kctx__loader_close(&g_ld);
        return;
    }
#define KCTX_CL_SET_(name) *(void **)&g_api.name = g_fns[KCTX_CL_E_##name];
    KCTX_CL_ENTRIES(KCTX_CL_SET_)
#undef KCTX_CL_SET_
    g_loaded = &g_api; /* the library stays loaded for the life of the process */
}

int kctx__opencl_loaded(void) {
    pthread_once(&g_once, load);
    return g_loaded != NULL;
}

const kctx__cl_api *kctx__opencl_counted(int entry) {
    kctx__loader_count(&g_ld, entry);
    return g_loaded;
}

long long kctx__opencl_calls(const char *entry) { return kctx__loader_calls(&g_ld, entry); }

const char *kctx__opencl_api_error(void) {
    pthread_once(&g_once, load);
    return g_loaded ? "" : g_error;
}
