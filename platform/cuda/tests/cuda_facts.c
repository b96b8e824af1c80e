/*
 * cuda_facts.c — three facts of the CUDA driver the kernel-mode contract
 * relies on, checked on whatever driver KCTX_CUDA_DRIVER (default
 * libcuda.so.1) names; scripts/gpu-check.sh runs it on a GPU, ctest runs it
 * on the driver double. One line per fact:
 *
 *   fact 1 (K21): a wait inside a capture on an event recorded before the
 *          capture began gives 905 (CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
 *          what the capture's status and its end are afterwards;
 *   fact 2 (K25): a user object moved to a graph has its destructor run
 *          only after the graph and its executable graph are destroyed AND
 *          their launches completed;
 *   fact 3 (K36): whether cuCtxGetId of the primary context changes after
 *          cuDevicePrimaryCtxReset (a device epoch candidate).
 *
 * Exit status 0 when facts 1 and 2 hold (fact 3 is reported, either answer
 * is information), 1 otherwise, 2 when the driver cannot be used.
 */
#include <cuda.h>

#include "driver_table.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// clang-format off
#define FACT_CU(X)                                                                        \
    X(cuInit, (unsigned int))                                                             \
    X(cuDeviceGet, (CUdevice *, int))                                                     \
    X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                  \
    X(cuDevicePrimaryCtxRelease, (CUdevice))                                              \
    X(cuDevicePrimaryCtxReset, (CUdevice))                                                \
    X(cuCtxSetCurrent, (CUcontext))                                                       \
    X(cuStreamCreate, (CUstream *, unsigned int))                                         \
    X(cuStreamDestroy, (CUstream))                                                        \
    X(cuStreamQuery, (CUstream))                                                          \
    X(cuStreamSynchronize, (CUstream))                                                    \
    X(cuStreamGetCaptureInfo, (CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, \
                               const CUgraphNode **, const CUgraphEdgeData **, size_t *)) \
    X(cuStreamBeginCapture, (CUstream, CUstreamCaptureMode))                              \
    X(cuStreamEndCapture, (CUstream, CUgraph *))                                          \
    X(cuEventCreate, (CUevent *, unsigned int))                                           \
    X(cuEventDestroy, (CUevent))                                                          \
    X(cuEventRecord, (CUevent, CUstream))                                                 \
    X(cuStreamWaitEvent, (CUstream, CUevent, unsigned int))                               \
    X(cuMemAlloc, (CUdeviceptr *, size_t))                                                \
    X(cuMemFree, (CUdeviceptr))                                                           \
    X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                    \
    X(cuGraphInstantiate, (CUgraphExec *, CUgraph, unsigned long long))                   \
    X(cuGraphLaunch, (CUgraphExec, CUstream))                                             \
    X(cuGraphDestroy, (CUgraph))                                                          \
    X(cuGraphExecDestroy, (CUgraphExec))                                                  \
    X(cuUserObjectCreate, (CUuserObject *, void *, CUhostFn, unsigned int, unsigned int)) \
    X(cuGraphRetainUserObject, (CUgraph, CUuserObject, unsigned int, unsigned int))
// clang-format on

#define T_(name, args) typedef CUresult(CUDAAPI *f_##name) args;
FACT_CU(T_)
#undef T_
static struct {
#define M_(name, args) f_##name p_##name;
    FACT_CU(M_)
#undef M_
} cu;
typedef CUresult(CUDAAPI *f_ctxid)(CUcontext, unsigned long long *);
static f_ctxid p_cuCtxGetId; /* optional: CUDA 12.0+ */

/* The counted table (platform/common/loader.h), resolved as the cuda
 * adapter resolves its own (platform/cuda/driver_table.h). */
KCTX_LOADER_TABLE(FACT_CU);

static int load(void) {
    char why[300];
    if (kctx__loader_open(&kctx_loader_table, "KCTX_CUDA_DRIVER", "libcuda.so.1", why,
                          sizeof why)) {
        printf("cuda facts: driver not found: %s\n", why);
        return -1;
    }
    kctx_cuda_getproc gp = kctx__cuda_getproc(&kctx_loader_table);
    if (!gp) {
        printf("cuda facts: %s has no cuGetProcAddress_v2\n", kctx_loader_table.path);
        return -1;
    }
    int bad = kctx__loader_resolve(&kctx_loader_table, kctx__cuda_find, &gp, NULL);
    if (bad >= 0) {
        printf("cuda facts: cannot resolve %s\n", kctx_loader_table_names[bad]);
        return -1;
    }
#define S_(name, args) *(void **)&cu.p_##name = kctx_loader_table_fns[KCTX_LE_##name];
    FACT_CU(S_)
#undef S_
    void *id = NULL;
    p_cuCtxGetId = kctx__cuda_find(&gp, "cuCtxGetId", &id) == 0 ? (f_ctxid)id : NULL;
    CUresult st = cu.p_cuInit(0);
    if (st) {
        printf("cuda facts: cuInit: %d\n", (int)st);
        return -1;
    }
    return 0;
}

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Fact 1: K21's premise. */
static int fact_isolation(void) {
    CUstream a = NULL, b = NULL;
    CUevent e = NULL;
    CUgraph g = NULL;
    if (cu.p_cuStreamCreate(&a, CU_STREAM_NON_BLOCKING) ||
        cu.p_cuStreamCreate(&b, CU_STREAM_NON_BLOCKING) ||
        cu.p_cuEventCreate(&e, CU_EVENT_DISABLE_TIMING)) {
        printf("fact 1 (K21 isolation): SETUP FAILED\n");
        return 0;
    }
    cu.p_cuEventRecord(e, b); /* recorded before the capture began */
    cu.p_cuStreamSynchronize(b);
    CUresult begin = cu.p_cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUresult wait = cu.p_cuStreamWaitEvent(a, e, 0);
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    cu.p_cuStreamGetCaptureInfo(a, &cs, NULL, NULL, NULL, NULL, NULL);
    CUresult end = cu.p_cuStreamEndCapture(a, &g);
    int holds = begin == CUDA_SUCCESS && wait == CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    printf("fact 1 (K21 isolation): %s: the wait gave %d (905 expected); the capture's status "
           "after it %d (0 none, 1 active, 2 invalidated); its end gave %d%s\n",
           holds ? "HOLDS" : "DIFFERS", (int)wait, (int)cs, (int)end,
           g ? " with a graph" : " and no graph");
    if (g) cu.p_cuGraphDestroy(g);
    cu.p_cuEventDestroy(e);
    cu.p_cuStreamDestroy(a);
    cu.p_cuStreamDestroy(b);
    return holds;
}

/* Fact 2: K25's premise. */
static _Atomic int g_destroyed;
static void CUDA_CB on_destroy(void *p) {
    (void)p;
    atomic_store(&g_destroyed, 1);
}

static int fact_user_object(void) {
    /* 128 fills of 1 GiB (tens of ms on a GPU: still running after the
     * destroys); 16 MiB where 1 GiB is not there (the double) */
    size_t big = (size_t)1 << 30;
    CUstream s = NULL;
    CUdeviceptr d = 0;
    CUgraph g = NULL;
    CUgraphExec x = NULL;
    CUuserObject o = NULL;
    if (cu.p_cuMemAlloc(&d, big)) big = (size_t)16 << 20, d = 0;
    if (cu.p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || (!d && cu.p_cuMemAlloc(&d, big)) ||
        cu.p_cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL)) {
        printf("fact 2 (K25 user objects): SETUP FAILED\n");
        return 0;
    }
    for (int i = 0; i < 128; i++) cu.p_cuMemsetD8Async(d, (unsigned char)i, big, s);
    CUstreamCaptureStatus cs;
    cu.p_cuStreamGetCaptureInfo(s, &cs, NULL, &g, NULL, NULL, NULL);
    int ok =
        cu.p_cuUserObjectCreate(&o, NULL, on_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC) == 0 &&
        cu.p_cuGraphRetainUserObject(g, o, 1, CU_GRAPH_USER_OBJECT_MOVE) == 0;
    g = NULL;
    ok = ok && cu.p_cuStreamEndCapture(s, &g) == 0 && cu.p_cuGraphInstantiate(&x, g, 0) == 0 &&
         cu.p_cuGraphLaunch(x, s) == 0;
    if (!ok) {
        printf("fact 2 (K25 user objects): SETUP FAILED\n");
        return 0;
    }
    int after_graph = (cu.p_cuGraphDestroy(g), nap_ms(5), atomic_load(&g_destroyed));
    int running = cu.p_cuStreamQuery(s) == CUDA_ERROR_NOT_READY;
    cu.p_cuGraphExecDestroy(x);
    nap_ms(5);
    int after_exec = atomic_load(&g_destroyed);
    int still_running = cu.p_cuStreamQuery(s) == CUDA_ERROR_NOT_READY;
    cu.p_cuStreamSynchronize(s);
    int waited = 0;
    while (!atomic_load(&g_destroyed) && waited < 2000) nap_ms(10), waited += 10;
    int at_end = atomic_load(&g_destroyed);
    /* it holds when the destructor had not run while the launch was in
     * flight (when it was observably in flight), and ran after */
    int holds = !after_graph && (!still_running || !after_exec) && at_end;
    printf("fact 2 (K25 user objects): %s: destructor run after the graph's destroy %d, after "
           "the exec's destroy %d (launch still running then: %s), after the launch completed "
           "%d (within %d ms)\n",
           holds ? "HOLDS" : "DIFFERS", after_graph, after_exec,
           still_running ? "yes" : (running ? "no, it finished early" : "no"), at_end, waited);
    cu.p_cuMemFree(d);
    cu.p_cuStreamDestroy(s);
    return holds;
}

/* Fact 3: is cuCtxGetId a device epoch? */
static void fact_ctx_id(void) {
    if (!p_cuCtxGetId) {
        printf("fact 3 (K36 epoch): NOT AVAILABLE: the driver has no cuCtxGetId\n");
        return;
    }
    CUdevice dev = 0;
    CUcontext c = NULL;
    unsigned long long before = 0, after = 0;
    CUresult st = cu.p_cuDeviceGet(&dev, 0);
    if (!st) st = cu.p_cuDevicePrimaryCtxRetain(&c, dev);
    if (!st) st = cu.p_cuCtxSetCurrent(c);
    if (!st) st = p_cuCtxGetId(c, &before);
    if (!st) st = cu.p_cuDevicePrimaryCtxReset(dev);
    CUcontext c2 = NULL;
    if (!st) st = cu.p_cuDevicePrimaryCtxRetain(&c2, dev);
    if (!st) st = cu.p_cuCtxSetCurrent(c2);
    if (!st) st = p_cuCtxGetId(c2, &after);
    if (st) {
        printf("fact 3 (K36 epoch): FAILED: CUresult %d\n", (int)st);
        return;
    }
    printf("fact 3 (K36 epoch): cuCtxGetId %s after cuDevicePrimaryCtxReset (%llu -> %llu; the "
           "handle %s)\n",
           before != after ? "CHANGES" : "does NOT change", before, after,
           c == c2 ? "is the same" : "changed");
    cu.p_cuDevicePrimaryCtxRelease(dev);
    cu.p_cuDevicePrimaryCtxRelease(dev);
}

int main(void) {
    if (load()) return 2;
    CUdevice dev = 0;
    CUcontext c = NULL;
    if (cu.p_cuDeviceGet(&dev, 0) || cu.p_cuDevicePrimaryCtxRetain(&c, dev) ||
        cu.p_cuCtxSetCurrent(c)) {
        printf("cuda facts: no usable device 0\n");
        return 2;
    }
    int passed = fact_isolation();
    passed += fact_user_object();
    fact_ctx_id(); /* information: either answer */
    printf("cuda facts: %d passed, %d failed\n", passed, 2 - passed);
    return passed == 2 ? 0 : 1;
}
