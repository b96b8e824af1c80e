/*
 * fault_layer.c — the failing layer in front of the CUDA driver double
 * (tests only; tests/common/fault_layer.h says what a failing layer is):
 * build/platform/cuda/double/libkctx_cuda_fault_layer.so. KCTX_CUDA_DRIVER
 * names it (kctx's adapter and the suite's framework driver load it as the
 * driver), KCTX_FAULT_LAYER_UNDER names the driver behind it (the double).
 *
 * Its cuGetProcAddress_v2 hands out a wrapper for every entry kctx's adapter
 * calls (platform/cuda/adapter.c, CU_ENTRIES) and the driver's own entry for
 * everything else (the framework's captures and graphs pass straight
 * through). A wrapper counts and may fail the call (kfl_enter: the driver is
 * then not called), and reports the handles it makes, names and destroys.
 * The double's test hook kctx_cuda_double_calls is passed through, so the
 * framework driver still recognises the double behind the layer.
 */
#include "fault_layer.h"

#include <cuda.h>
#include <kctx/cuda.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

/* The ABI the adapter resolves its entries at (KCTX_CUDA_DRIVER_ABI). */
#define KCTX_LAYER_CUDA_ABI KCTX_CUDA_DRIVER_ABI

static void *g_under;
static getproc_fn g_getproc;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void open_under(void) {
    const char *path = getenv("KCTX_FAULT_LAYER_UNDER");
    if (!path || !*path) return;
    g_under = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (g_under) *(void **)&g_getproc = dlsym(g_under, "cuGetProcAddress_v2");
}

/* The driver's own entry `name` (resolved once, at the adapter's ABI). */
static void *under(const char *name) {
    void *fn = NULL;
    if (g_getproc) (void)g_getproc(name, &fn, KCTX_LAYER_CUDA_ABI, 0, NULL);
    return fn;
}

/* Exactly the entries the adapter calls (platform/cuda/adapter_entries.h):
 * an entry added there without a wrapper here does not compile. */
#include "adapter_entries.h"
#define LAYER_ENTRIES CU_ENTRIES

#define T_(name, args) typedef CUresult(CUDAAPI *t_##name) args;
LAYER_ENTRIES(T_)
#undef T_

/* The driver's entries behind the wrappers. */
static struct {
#define M_(name, args) t_##name name;
    LAYER_ENTRIES(M_)
#undef M_
} g_real;

static void resolve(void) {
    open_under();
#define R_(name, args) *(void **)&g_real.name = under(#name);
    LAYER_ENTRIES(R_)
#undef R_
}

/* Count the call; fail it when armed (the driver is not called). */
#define ENTER(name)                                    \
    do {                                               \
        int code_ = kfl_enter(#name);                  \
        if (code_) return (CUresult)code_;             \
        if (!g_real.name) return CUDA_ERROR_NOT_FOUND; \
    } while (0)
#define H(x) ((uint64_t)(uintptr_t)(x))

/* ---- pass-through entries (no handle of kctx's) -------------------------- */

static CUresult w_cuInit(unsigned int f) {
    ENTER(cuInit);
    return g_real.cuInit(f);
}
static CUresult w_cuDriverGetVersion(int *v) {
    ENTER(cuDriverGetVersion);
    return g_real.cuDriverGetVersion(v);
}
static CUresult w_cuGetErrorName(CUresult st, const char **s) {
    ENTER(cuGetErrorName);
    return g_real.cuGetErrorName(st, s);
}
static CUresult w_cuGetErrorString(CUresult st, const char **s) {
    ENTER(cuGetErrorString);
    return g_real.cuGetErrorString(st, s);
}
static CUresult w_cuDeviceGetCount(int *n) {
    ENTER(cuDeviceGetCount);
    return g_real.cuDeviceGetCount(n);
}
static CUresult w_cuDeviceGet(CUdevice *d, int i) {
    ENTER(cuDeviceGet);
    return g_real.cuDeviceGet(d, i);
}
static CUresult w_cuDeviceGetName(char *n, int len, CUdevice d) {
    ENTER(cuDeviceGetName);
    return g_real.cuDeviceGetName(n, len, d);
}
static CUresult w_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    ENTER(cuDeviceGetAttribute);
    return g_real.cuDeviceGetAttribute(v, a, d);
}
static CUresult w_cuDeviceTotalMem(size_t *b, CUdevice d) {
    ENTER(cuDeviceTotalMem);
    return g_real.cuDeviceTotalMem(b, d);
}
static CUresult w_cuCtxGetCurrent(CUcontext *c) {
    ENTER(cuCtxGetCurrent);
    return g_real.cuCtxGetCurrent(c);
}
static CUresult w_cuCtxGetDevice(CUdevice *d) {
    ENTER(cuCtxGetDevice);
    return g_real.cuCtxGetDevice(d);
}
static CUresult w_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *m) {
    ENTER(cuThreadExchangeStreamCaptureMode);
    return g_real.cuThreadExchangeStreamCaptureMode(m);
}

/* ---- streams and events -------------------------------------------------- */

static CUresult w_cuStreamCreate(CUstream *s, unsigned int f) {
    ENTER(cuStreamCreate);
    CUresult st = g_real.cuStreamCreate(s, f);
    if (st == CUDA_SUCCESS) kfl_made(H(*s), KFL_STREAM, "cuStreamCreate");
    return st;
}
static CUresult w_cuStreamDestroy(CUstream s) {
    ENTER(cuStreamDestroy);
    kfl_destroying(H(s), "cuStreamDestroy");
    CUresult st = g_real.cuStreamDestroy(s);
    if (st == CUDA_SUCCESS) kfl_gone(H(s));
    return st;
}
static CUresult w_cuStreamQuery(CUstream s) {
    ENTER(cuStreamQuery);
    kfl_use(H(s), "cuStreamQuery");
    return g_real.cuStreamQuery(s);
}
static CUresult w_cuStreamGetDevice(CUstream s, CUdevice *d) {
    ENTER(cuStreamGetDevice);
    kfl_use(H(s), "cuStreamGetDevice");
    return g_real.cuStreamGetDevice(s, d);
}
static CUresult w_cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *cs, cuuint64_t *id,
                                         CUgraph *g, const CUgraphNode **deps,
                                         const CUgraphEdgeData **edges, size_t *n) {
    ENTER(cuStreamGetCaptureInfo);
    kfl_use(H(s), "cuStreamGetCaptureInfo");
    return g_real.cuStreamGetCaptureInfo(s, cs, id, g, deps, edges, n);
}
static CUresult w_cuEventCreate(CUevent *e, unsigned int f) {
    ENTER(cuEventCreate);
    CUresult st = g_real.cuEventCreate(e, f);
    if (st == CUDA_SUCCESS) kfl_made(H(*e), KFL_EVENT, "cuEventCreate");
    return st;
}
static CUresult w_cuEventDestroy(CUevent e) {
    ENTER(cuEventDestroy);
    kfl_destroying(H(e), "cuEventDestroy");
    CUresult st = g_real.cuEventDestroy(e);
    if (st == CUDA_SUCCESS) kfl_gone(H(e));
    return st;
}
static CUresult w_cuEventRecord(CUevent e, CUstream s) {
    ENTER(cuEventRecord);
    kfl_use(H(e), "cuEventRecord");
    kfl_use(H(s), "cuEventRecord");
    return g_real.cuEventRecord(e, s);
}
static CUresult w_cuStreamWaitEvent(CUstream s, CUevent e, unsigned int f) {
    ENTER(cuStreamWaitEvent);
    kfl_use(H(s), "cuStreamWaitEvent");
    kfl_use(H(e), "cuStreamWaitEvent");
    return g_real.cuStreamWaitEvent(s, e, f);
}

/* ---- memory ------------------------------------------------------------- */

static CUresult w_cuMemAlloc(CUdeviceptr *p, size_t n) {
    ENTER(cuMemAlloc);
    CUresult st = g_real.cuMemAlloc(p, n);
    if (st == CUDA_SUCCESS) kfl_made(H(*p), KFL_MEMORY, "cuMemAlloc");
    return st;
}
static CUresult w_cuMemFree(CUdeviceptr p) {
    ENTER(cuMemFree);
    kfl_destroying(H(p), "cuMemFree");
    CUresult st = g_real.cuMemFree(p);
    if (st == CUDA_SUCCESS) kfl_gone(H(p));
    return st;
}
static CUresult w_cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) {
    ENTER(cuMemcpyHtoDAsync);
    kfl_use(H(s), "cuMemcpyHtoDAsync");
    return g_real.cuMemcpyHtoDAsync(d, h, n, s);
}
static CUresult w_cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s) {
    ENTER(cuMemcpyDtoHAsync);
    kfl_use(H(s), "cuMemcpyDtoHAsync");
    return g_real.cuMemcpyDtoHAsync(h, d, n, s);
}
static CUresult w_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
    ENTER(cuMemsetD8Async);
    kfl_use(H(s), "cuMemsetD8Async");
    return g_real.cuMemsetD8Async(d, v, n, s);
}

/* ---- modules and kernels -------------------------------------------------- */

static CUresult w_cuModuleLoadData(CUmodule *m, const void *image) {
    ENTER(cuModuleLoadData);
    CUresult st = g_real.cuModuleLoadData(m, image);
    if (st == CUDA_SUCCESS) kfl_made(H(*m), KFL_MODULE, "cuModuleLoadData");
    return st;
}
static CUresult w_cuModuleUnload(CUmodule m) {
    ENTER(cuModuleUnload);
    kfl_destroying(H(m), "cuModuleUnload");
    CUresult st = g_real.cuModuleUnload(m);
    if (st == CUDA_SUCCESS) kfl_gone(H(m));
    return st;
}
static CUresult w_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    ENTER(cuModuleGetFunction);
    kfl_use(H(m), "cuModuleGetFunction");
    return g_real.cuModuleGetFunction(f, m, name);
}
static CUresult w_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                 unsigned int bx, unsigned int by, unsigned int bz,
                                 unsigned int shared, CUstream s, void **params, void **extra) {
    ENTER(cuLaunchKernel);
    kfl_use(H(s), "cuLaunchKernel");
    return g_real.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
}

/* ---- graph lifetime hooks: a user object is kctx's until it is moved to
 * the graph (cuGraphRetainUserObject with CU_GRAPH_USER_OBJECT_MOVE) or
 * released. ---------------------------------------------------------------- */

static CUresult w_cuUserObjectCreate(CUuserObject *o, void *p, CUhostFn fn, unsigned int n,
                                     unsigned int flags) {
    ENTER(cuUserObjectCreate);
    CUresult st = g_real.cuUserObjectCreate(o, p, fn, n, flags);
    if (st == CUDA_SUCCESS) kfl_made(H(*o), KFL_OBJECT, "cuUserObjectCreate");
    return st;
}
static CUresult w_cuUserObjectRelease(CUuserObject o, unsigned int n) {
    ENTER(cuUserObjectRelease);
    kfl_destroying(H(o), "cuUserObjectRelease");
    CUresult st = g_real.cuUserObjectRelease(o, n);
    if (st == CUDA_SUCCESS) kfl_gone(H(o));
    return st;
}
static CUresult w_cuGraphRetainUserObject(CUgraph g, CUuserObject o, unsigned int n,
                                          unsigned int flags) {
    ENTER(cuGraphRetainUserObject);
    kfl_use(H(o), "cuGraphRetainUserObject");
    CUresult st = g_real.cuGraphRetainUserObject(g, o, n, flags);
    if (st == CUDA_SUCCESS && (flags & CU_GRAPH_USER_OBJECT_MOVE)) kfl_gone(H(o));
    return st;
}

static const struct {
    const char *name;
    void *fn;
} k_wrapped[] = {
#define W_(name, args) {#name, (void *)w_##name},
    LAYER_ENTRIES(W_)
#undef W_
};

API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *found);
API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *found) {
    pthread_once(&g_once, resolve);
    if (!g_getproc) {
        if (pfn) *pfn = NULL;
        if (found) *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND; /* KCTX_FAULT_LAYER_UNDER names no driver */
    }
    CUresult st = g_getproc(symbol, pfn, version, flags, found);
    if (st != CUDA_SUCCESS || !symbol || !pfn) return st;
    for (size_t i = 0; i < sizeof k_wrapped / sizeof k_wrapped[0]; i++)
        if (strcmp(k_wrapped[i].name, symbol) == 0) *pfn = k_wrapped[i].fn;
    return st;
}

/* The double's test hook, passed through (fw_cuda.c recognises the double
 * by it). */
API uint64_t kctx_cuda_double_calls(const char *entry);
API uint64_t kctx_cuda_double_calls(const char *entry) {
    pthread_once(&g_once, resolve);
    uint64_t (*fn)(const char *) = NULL;
    if (g_under) *(void **)&fn = dlsym(g_under, "kctx_cuda_double_calls");
    return fn ? fn(entry) : 0;
}

API const kfl_control *kctx_fault_layer_control(void);
API const kfl_control *kctx_fault_layer_control(void) {
    return kfl_control_of("cuda", CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_LAUNCH_FAILED);
}
