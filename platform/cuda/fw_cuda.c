/*
 * fw_cuda.c — the framework driver for the cuda platform: the suite's
 * framework side through the CUDA driver API, the way a CUDA framework
 * (PyTorch, CuPy) owns its streams, memory and captures. The driver is
 * loaded by the adapter's own loader (platform/common/loader.h,
 * platform/cuda/driver_table.h): dlopen(KCTX_CUDA_DRIVER, default
 * "libcuda.so.1"), every entry through cuGetProcAddress_v2 at
 * KCTX_CUDA_DRIVER_ABI, every call counted; the two share the loaded
 * library.
 *
 * REQUIRED and CAPTURE entries are plain CUDA calls (streams are
 * non-blocking; the framework's bounded stream wait is a query poll).
 *
 * Test hooks: a real driver has none of them (holds, live-object counts,
 * device call counters, lifecycle counters): they are NULL there. With the
 * CUDA driver double (platform/cuda/double, recognised by its
 * kctx_cuda_double_calls symbol), which runs on the sim, the holds and the
 * counters are the sim's (the suite's hooks over the sim's API,
 * src/conformance/fw_simdev.h: the double's handles are the sim's), and
 * the K4 lifecycle counters are the double's counts of the context and
 * device lifecycle entries, and graph_stream_nodes is the sim's graph
 * inspection (a real CUgraph does not record the streams its nodes were
 * captured on). The graph memory pool is the suite's framework
 * arena over cuMemAlloc (fw_pool.c), on the double and on a real driver.
 * Fatal devices and owner resets
 * stay NULL on CUDA: without a device epoch a quarantined context can
 * never close (K30), which those probes need (expected_na.c).
 */
#include "fw.h"
#include "fw_simdev.h" /* the hooks of the double, which runs on the sim */

#include <cuda.h>
#include <kctx/cuda.h>

#include "driver_table.h"
#include "fault_control.h" /* src/conformance: the failing layer's control table */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// clang-format off
#define FW_CU(X)                                                                          \
    X(cuInit, (unsigned int))                                                             \
    X(cuGetErrorName, (CUresult, const char **))                                          \
    X(cuGetErrorString, (CUresult, const char **))                                        \
    X(cuDeviceGetCount, (int *))                                                          \
    X(cuDeviceGetName, (char *, int, CUdevice))                                           \
    X(cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))                        \
    X(cuCtxGetDevice, (CUdevice *))                                                       \
    X(cuCtxSetCurrent, (CUcontext))                                                       \
    X(cuCtxCreate, (CUcontext *, CUctxCreateParams *, unsigned int, CUdevice))            \
    X(cuCtxDestroy, (CUcontext))                                                          \
    X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                  \
    X(cuDevicePrimaryCtxRelease, (CUdevice))                                              \
    X(cuDevicePrimaryCtxReset, (CUdevice))                                                \
    X(cuStreamCreate, (CUstream *, unsigned int))                                         \
    X(cuStreamDestroy, (CUstream))                                                        \
    X(cuStreamQuery, (CUstream))                                                          \
    X(cuStreamGetCaptureInfo, (CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, \
                               const CUgraphNode **, const CUgraphEdgeData **, size_t *)) \
    X(cuStreamBeginCapture, (CUstream, CUstreamCaptureMode))                              \
    X(cuStreamEndCapture, (CUstream, CUgraph *))                                          \
    X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *))                         \
    X(cuEventCreate, (CUevent *, unsigned int))                                           \
    X(cuEventDestroy, (CUevent))                                                          \
    X(cuEventRecord, (CUevent, CUstream))                                                 \
    X(cuStreamWaitEvent, (CUstream, CUevent, unsigned int))                               \
    X(cuMemAlloc, (CUdeviceptr *, size_t))                                                \
    X(cuMemFree, (CUdeviceptr))                                                           \
    X(cuMemcpyHtoD, (CUdeviceptr, const void *, size_t))                                  \
    X(cuMemcpyDtoH, (void *, CUdeviceptr, size_t))                                        \
    X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                    \
    X(cuMemcpyDtoDAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                    \
    X(cuGraphInstantiate, (CUgraphExec *, CUgraph, unsigned long long))                   \
    X(cuGraphLaunch, (CUgraphExec, CUstream))                                             \
    X(cuGraphDestroy, (CUgraph))                                                          \
    X(cuGraphExecDestroy, (CUgraphExec))                                                  \
    X(cuGraphGetNodes, (CUgraph, CUgraphNode *, size_t *))
// clang-format on

#define T_(name, args) typedef CUresult(CUDAAPI *f_##name) args;
FW_CU(T_)
#undef T_
static struct {
#define M_(name, args) f_##name p_##name;
    FW_CU(M_)
#undef M_
} g_cu;

/* The counted table (platform/common/loader.h), resolved as the adapter
 * resolves its own (platform/cuda/driver_table.h). */
KCTX_LOADER_TABLE(FW_CU);
#define C(name, ...) \
    (kctx__loader_count(&kctx_loader_table, KCTX_LE_##name), g_cu.p_##name(__VA_ARGS__))

static char g_load_error[300];
static uint64_t (*g_double_calls)(const char *); /* the double's counters, or NULL */
static kfl_control_fn g_layer; /* the failing layer's control, when it is the driver */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local char tl_msg[400];

static void load(void) {
    char why[200];
    if (kctx__loader_open(&kctx_loader_table, "KCTX_CUDA_DRIVER", "libcuda.so.1", why,
                          sizeof why)) {
        snprintf(g_load_error, sizeof g_load_error, "fw_cuda: driver not found: %s", why);
        return;
    }
    kctx_cuda_getproc getproc = kctx__cuda_getproc(&kctx_loader_table);
    int bad =
        getproc ? kctx__loader_resolve(&kctx_loader_table, kctx__cuda_find, &getproc, NULL) : -1;
    if (!getproc || bad >= 0) {
        snprintf(g_load_error, sizeof g_load_error, "fw_cuda: %s: cannot resolve %s",
                 kctx_loader_table.path,
                 getproc ? kctx_loader_table_names[bad] : "cuGetProcAddress_v2");
        return;
    }
#define S_(name, args) *(void **)&g_cu.p_##name = kctx_loader_table_fns[KCTX_LE_##name];
    FW_CU(S_)
#undef S_
    *(void **)&g_double_calls = kctx__loader_sym(&kctx_loader_table, "kctx_cuda_double_calls");
    *(void **)&g_layer = kctx__loader_sym(&kctx_loader_table, "kctx_fault_layer_control");
    CUresult st = C(cuInit, 0); /* the framework initialises the driver */
    if (st != CUDA_SUCCESS) {
        snprintf(g_load_error, sizeof g_load_error, "fw_cuda: cuInit: CUresult %d", (int)st);
        memset(&g_cu, 0, sizeof g_cu);
    }
}

static int ready(void) {
    pthread_once(&g_once, load);
    if (g_cu.p_cuInit) return 1;
    snprintf(tl_msg, sizeof tl_msg, "%s", g_load_error);
    return 0;
}

static fw_status map(CUresult st, const char *what) {
    if (st == CUDA_SUCCESS) return FW_OK;
    const char *name = NULL, *str = NULL;
    if (C(cuGetErrorName, st, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_?";
    if (C(cuGetErrorString, st, &str) != CUDA_SUCCESS || !str) str = "";
    snprintf(tl_msg, sizeof tl_msg, "%s: %s (%d): %s", what, name, (int)st, str);
    switch (st) {
    case CUDA_ERROR_TIMEOUT:
        return FW_TIMEOUT;
    case CUDA_ERROR_NOT_READY:
        return FW_NOT_READY;
    case CUDA_ERROR_INVALID_HANDLE:
        return FW_INVALID_HANDLE;
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
        return FW_CAPTURE_ISOLATION;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
        return FW_CAPTURE_INVALIDATED;
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
        return FW_CAPTURE_UNJOINED;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
        return FW_CAPTURE_UNSUPPORTED;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
        return FW_DEVICE_LOST;
    default:
        return FW_ERROR;
    }
}
/* (g_cu.p_##name, not C(name...): an argument passed on would be
 * macro-expanded first, and cuda.h maps cuMemAlloc to cuMemAlloc_v2.) */
#define CALL(name, ...)                                                     \
    (ready() ? map((kctx__loader_count(&kctx_loader_table, KCTX_LE_##name), \
                    g_cu.p_##name(__VA_ARGS__)),                            \
                   #name)                                                   \
             : FW_ERROR)

#define S(s) ((CUstream)(uintptr_t)(s))
#define E(e) ((CUevent)(uintptr_t)(e))

static const char *c_last_error(void) { return tl_msg; }

static fw_status c_current_device(int *d) {
    CUdevice dev = 0;
    fw_status st = CALL(cuCtxGetDevice, &dev);
    if (st == FW_OK) *d = (int)dev;
    return st;
}
/* As a CUDA runtime does: the device's primary context, made current. */
static fw_status c_set_device(int d) {
    CUcontext ctx = NULL;
    fw_status st = CALL(cuDevicePrimaryCtxRetain, &ctx, (CUdevice)d);
    if (st == FW_OK) st = CALL(cuCtxSetCurrent, ctx);
    return st;
}
static fw_status c_stream_create(fw_stream *s) {
    CUstream h = NULL;
    fw_status st = CALL(cuStreamCreate, &h, CU_STREAM_NON_BLOCKING);
    if (st == FW_OK) *s = (fw_stream)(uintptr_t)h;
    return st;
}
static fw_status c_stream_destroy(fw_stream s) { return CALL(cuStreamDestroy, S(s)); }
static fw_status c_stream_query(fw_stream s) { return CALL(cuStreamQuery, S(s)); }
static fw_status c_stream_sync(fw_stream s, uint32_t ms) {
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        fw_status st = c_stream_query(s);
        if (st != FW_NOT_READY) return st;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t el = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000u +
                      (uint64_t)((now.tv_nsec - t0.tv_nsec) / 1000000);
        if (el >= ms) {
            snprintf(tl_msg, sizeof tl_msg, "stream still busy after %u ms", ms);
            return FW_TIMEOUT;
        }
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
    }
}
static fw_status c_mem_alloc(size_t n, fw_devptr *p) {
    CUdeviceptr d = 0;
    fw_status st = CALL(cuMemAlloc, &d, n);
    if (st == FW_OK) *p = (fw_devptr)d;
    return st;
}
static fw_status c_mem_free(fw_devptr p) { return CALL(cuMemFree, (CUdeviceptr)p); }
static fw_status c_upload(fw_devptr dst, const void *src, size_t n) {
    return CALL(cuMemcpyHtoD, (CUdeviceptr)dst, src, n);
}
static fw_status c_download(void *dst, fw_devptr src, size_t n) {
    return CALL(cuMemcpyDtoH, dst, (CUdeviceptr)src, n);
}
static fw_status c_fill_async(fw_devptr dst, uint8_t v, size_t n, fw_stream s) {
    return CALL(cuMemsetD8Async, (CUdeviceptr)dst, v, n, S(s));
}
static fw_status c_copy_async(fw_devptr dst, fw_devptr src, size_t n, fw_stream s) {
    return CALL(cuMemcpyDtoDAsync, (CUdeviceptr)dst, (CUdeviceptr)src, n, S(s));
}
static fw_status c_event_create(fw_event *e) {
    CUevent h = NULL;
    fw_status st = CALL(cuEventCreate, &h, CU_EVENT_DISABLE_TIMING);
    if (st == FW_OK) *e = (fw_event)(uintptr_t)h;
    return st;
}
static fw_status c_event_destroy(fw_event e) { return CALL(cuEventDestroy, E(e)); }
static fw_status c_event_record(fw_event e, fw_stream s) { return CALL(cuEventRecord, E(e), S(s)); }
static fw_status c_stream_wait_event(fw_stream s, fw_event e) {
    return CALL(cuStreamWaitEvent, S(s), E(e), 0);
}

_Static_assert((int)FW_CAPTURE_GLOBAL == (int)CU_STREAM_CAPTURE_MODE_GLOBAL &&
                   (int)FW_CAPTURE_THREAD_LOCAL == (int)CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                   (int)FW_CAPTURE_RELAXED == (int)CU_STREAM_CAPTURE_MODE_RELAXED,
               "fw and CUDA capture modes agree");
static fw_status c_begin_capture_mode(fw_stream s, fw_capture_mode mode) {
    return CALL(cuStreamBeginCapture, S(s), (CUstreamCaptureMode)mode);
}
static fw_status c_begin_capture(fw_stream s) { return c_begin_capture_mode(s, FW_CAPTURE_GLOBAL); }
static fw_status c_exchange_capture_mode(fw_capture_mode *mode) {
    CUstreamCaptureMode m = (CUstreamCaptureMode)*mode;
    fw_status st = CALL(cuThreadExchangeStreamCaptureMode, &m);
    if (st == FW_OK) *mode = (fw_capture_mode)m;
    return st;
}
static fw_status c_end_capture(fw_stream s, fw_graph *g) {
    CUgraph h = NULL;
    fw_status st = CALL(cuStreamEndCapture, S(s), &h);
    if (st == FW_OK) *g = (fw_graph)(uintptr_t)h;
    return st;
}
static fw_status c_capture_status(fw_stream s, int *capturing) {
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    fw_status st = CALL(cuStreamGetCaptureInfo, S(s), &cs, NULL, NULL, NULL, NULL, NULL);
    if (st == FW_OK) *capturing = cs != CU_STREAM_CAPTURE_STATUS_NONE;
    return st;
}
static fw_status c_graph_instantiate(fw_graph g, fw_exec *x) {
    CUgraphExec h = NULL;
    fw_status st = CALL(cuGraphInstantiate, &h, (CUgraph)(uintptr_t)g, 0);
    if (st == FW_OK) *x = (fw_exec)(uintptr_t)h;
    return st;
}
static fw_status c_graph_launch(fw_exec x, fw_stream s) {
    return CALL(cuGraphLaunch, (CUgraphExec)(uintptr_t)x, S(s));
}
static fw_status c_graph_destroy(fw_graph g) { return CALL(cuGraphDestroy, (CUgraph)(uintptr_t)g); }
static fw_status c_exec_destroy(fw_exec x) {
    return CALL(cuGraphExecDestroy, (CUgraphExec)(uintptr_t)x);
}
static fw_status c_graph_node_count(fw_graph g, size_t *n) {
    return CALL(cuGraphGetNodes, (CUgraph)(uintptr_t)g, NULL, n);
}
/* The graph memory pool: the framework arena (fw_pool.c) over cuMemAlloc,
 * the way torch's CUDA caching allocator serves a graph's private pool.
 * (CUDA's own graph allocations, cuMemAllocAsync inside a capture, would
 * add allocation nodes to the graph; the driver double implements no
 * stream-ordered allocation, so they are not used.) */
static fw_status c_pool_create(size_t bytes, fw_pool *pool) {
    return fw_arena_create(c_mem_alloc, c_mem_free, bytes, pool);
}

static fw_status c_device_info(int device, char *name, size_t name_size, unsigned *cores) {
    int sms = 0;
    fw_status st = CALL(cuDeviceGetName, name, (int)name_size, (CUdevice)device);
    if (st == FW_OK)
        st = CALL(cuDeviceGetAttribute, &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                  (CUdevice)device);
    if (st == FW_OK) *cores = (unsigned)sms;
    return st;
}

static int c_device_count(void) {
    int n = 0;
    return CALL(cuDeviceGetCount, &n) == FW_OK ? n : 0;
}

/* ---- the double's K4 counters ---- */

static const char *const k_lc_entries[] = {"cuInit",
                                           "cuCtxSetCurrent",
                                           "cuCtxCreate",
                                           "cuCtxDestroy",
                                           "cuDevicePrimaryCtxRetain",
                                           "cuDevicePrimaryCtxRelease",
                                           "cuDevicePrimaryCtxReset"};
#define N_LC (sizeof k_lc_entries / sizeof k_lc_entries[0])

static int c_lc_counts(int device, uint64_t *out) {
    (void)device; /* the double counts per process */
    for (size_t i = 0; i < N_LC; i++) {
        out[i] = g_double_calls(k_lc_entries[i]);
        if (out[i] == UINT64_MAX) return -1;
    }
    return 0;
}

static int c_lc_prove(int device, char *why, size_t why_size) {
    CUcontext primary = NULL, made = NULL;
    const char *step = "cuInit";
    CUresult st = C(cuInit, 0);
    if (!st) step = "cuDevicePrimaryCtxRetain", st = C(cuDevicePrimaryCtxRetain, &primary, device);
    if (!st) step = "cuDevicePrimaryCtxReset", st = C(cuDevicePrimaryCtxReset, device);
    if (!st) step = "cuCtxCreate", st = C(cuCtxCreate, &made, NULL, 0, device);
    if (!st) step = "cuCtxDestroy", st = C(cuCtxDestroy, made);
    if (!st) step = "cuDevicePrimaryCtxRelease", st = C(cuDevicePrimaryCtxRelease, device);
    if (!st) step = "cuCtxSetCurrent", st = C(cuCtxSetCurrent, primary);
    if (!st) return 0;
    map(st, step);
    snprintf(why, why_size, "%s", tl_msg);
    return -1;
}

static const fw_lifecycle k_double_lifecycle = {
    N_LC,
    {"init", "set current", "create context", "destroy context", "retain primary",
     "release primary", "reset primary"},
    c_lc_counts,
    c_lc_prove,
};

static fw_driver g_driver;
static pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;

static const kfl_control *c_fault_layer(void) { return ready() && g_layer ? g_layer() : NULL; }

static void make_driver(void) {
    g_driver = (fw_driver){
        .name = "cuda-driver", /* the expected N/A list keys its hook-less N/As on it */
        .platform = "cuda",
        .last_error = c_last_error,
        .current_device = c_current_device,
        .set_device = c_set_device,
        .stream_create = c_stream_create,
        .stream_destroy = c_stream_destroy,
        .stream_sync = c_stream_sync,
        .stream_query = c_stream_query,
        .mem_alloc = c_mem_alloc,
        .mem_free = c_mem_free,
        .upload = c_upload,
        .download = c_download,
        .fill_async = c_fill_async,
        .copy_async = c_copy_async,
        .event_create = c_event_create,
        .event_destroy = c_event_destroy,
        .event_record = c_event_record,
        .stream_wait_event = c_stream_wait_event,
        .begin_capture = c_begin_capture,
        .end_capture = c_end_capture,
        .capture_status = c_capture_status,
        .graph_instantiate = c_graph_instantiate,
        .graph_launch = c_graph_launch,
        .graph_destroy = c_graph_destroy,
        .exec_destroy = c_exec_destroy,
        .graph_node_count = c_graph_node_count,
        .pool_create = c_pool_create,
        .pool_alloc = fw_arena_alloc,
        .pool_free = fw_arena_free,
        .pool_destroy = fw_arena_destroy,
        .pool_last_error = fw_arena_last_error,
        .device_info = c_device_info,
        .device_count = c_device_count,
        .begin_capture_mode = c_begin_capture_mode,
        .exchange_capture_mode = c_exchange_capture_mode,
        .task_failure_leaves_streams_ok = 1, /* kctx/cuda.h: the CUDA task ABI */
        .fault_layer = c_fault_layer,
    };
    /* KCTX_FW_CUDA_AS_DRIVER=1 plays a real driver on the double (no test
     * hooks), to rehearse what a GPU run reports */
    const char *as_driver = getenv("KCTX_FW_CUDA_AS_DRIVER");
    if (ready() && g_double_calls && !(as_driver && *as_driver == '1')) {
        /* the double runs on the sim: its holds and counters are the sim's
         * (the suite's hooks over the sim's API, fw_simdev.h) */
        g_driver.name = "cuda-double";
        g_driver.hold_arm = fw_simdev_hold_arm;
        g_driver.hold_wait_reached = fw_simdev_hold_wait_reached;
        g_driver.hold_release = fw_simdev_hold_release;
        g_driver.hold_release_all = fw_simdev_hold_release_all;
        g_driver.live_counts = fw_simdev_live_counts;
        g_driver.device_allocs = fw_simdev_device_allocs;
        g_driver.device_enqueues = fw_simdev_device_enqueues;
        /* the double's graphs and streams are the sim's: it can tell which
         * stream each node came from (a real CUgraph cannot) */
        g_driver.graph_stream_nodes = fw_simdev_graph_stream_nodes;
        g_driver.lifecycle = &k_double_lifecycle;
    }
}

const fw_driver *fw_cuda_driver(void);
const fw_driver *fw_cuda_driver(void) {
    pthread_once(&g_driver_once, make_driver);
    return &g_driver;
}
