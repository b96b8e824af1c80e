/*
 * fw_acl.c — the framework driver for the acl platform: the suite's
 * framework side through the ACL runtime API, the way torch_npu owns its
 * NPU streams, memory and ACL graphs. The library is the adapter's:
 * dlopen(KCTX_ACL_LIBRARY, default "libascendcl.so") through the counted
 * loader (platform/common/loader.h), with kctx's own declarations
 * (acl_abi.h).
 *
 * REQUIRED and CAPTURE entries are plain ACL calls. A graph is the model
 * aclmdlRICaptureEnd returns; ACL has no separate executable graph, so an
 * "exec" is the same model with a reference of its own, and the model is
 * destroyed (aclmdlRIDestroy) when the graph and every exec made from it
 * are destroyed (the fw.h lifetimes, CUDA's).
 *
 * Test hooks: a real runtime has none. With the ACL driver double
 * (platform/acl/double, recognised by its kacl_double_calls symbol), which runs
 * on the sim, the copy and first-task holds and the counters are the sim's
 * (the suite's hooks over the sim's API, src/conformance/fw_simdev.h:
 * the double's device memory and objects are sim objects), and the K4 lifecycle counters are the double's counts of ACL's
 * lifecycle entries. The scheduler hold is not available (every launch of
 * the double runs its own device program, so a hold cannot name kctx's
 * scheduler); fatal devices and owner resets are not either (no device
 * epoch: quarantine is terminal, K30), nor which stream a model's tasks
 * came from (graph_stream_nodes). The graph memory pool is the suite's
 * framework arena over aclrtMalloc (fw_pool.c). expected_na.inc lists
 * what that leaves N/A.
 *
 * When the library is the failing layer in front of the double
 * (platform/acl/double/fault_layer.c, which passes the double's hooks through),
 * fault_layer is its control table (the driver sweeps, probes_driver.c).
 */
#include "fw.h"
#include "fw_simdev.h" /* the hooks of the double, which runs on the sim */

#include "acl_abi.h"
#include "fault_control.h" /* src/conformance: the failing layer's control table */
#include "loader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// clang-format off
#define FW_ACL(X)                                                                                \
    X(aclInit) X(aclrtSetDevice) X(aclrtGetDevice) X(aclrtGetDeviceCount)    \
    X(aclrtGetSocName) X(aclrtGetStreamResLimit) X(aclrtCreateContext) X(aclrtDestroyContext)    \
    X(aclrtSetCurrentContext) X(aclrtCreateStreamWithConfig) X(aclrtDestroyStream)               \
    X(aclrtSynchronizeStreamWithTimeout) X(aclrtStreamQuery) X(aclrtMalloc) X(aclrtFree)         \
    X(aclrtMemcpy) X(aclrtMemcpyAsync) X(aclrtMemsetAsync) X(aclrtCreateEventExWithFlag)         \
    X(aclrtDestroyEvent) X(aclrtRecordEvent) X(aclrtStreamWaitEvent) X(aclmdlRICaptureBegin)     \
    X(aclmdlRICaptureEnd) X(aclmdlRICaptureGetInfo) X(aclmdlRICaptureThreadExchangeMode)         \
    X(aclmdlRIExecuteAsync) X(aclmdlRIDestroy) X(aclGetRecentErrMsg)
// clang-format on

typedef kacl_error (*fn_aclInit)(const char *);
typedef kacl_error (*fn_aclrtSetDevice)(int32_t);
typedef kacl_error (*fn_aclrtCreateContext)(kacl_context *, int32_t);
typedef kacl_error (*fn_aclrtDestroyContext)(kacl_context);
typedef kacl_error (*fn_aclrtSetCurrentContext)(kacl_context);
#define FT_(name) typedef kacl_fn_##name fn_##name;
// clang-format off
#define FW_TYPED(X)                                                                              \
    X(aclrtGetDevice) X(aclrtGetDeviceCount) X(aclrtGetSocName) X(aclrtGetStreamResLimit)       \
    X(aclrtCreateStreamWithConfig) X(aclrtDestroyStream) X(aclrtSynchronizeStreamWithTimeout)   \
    X(aclrtStreamQuery) X(aclrtMalloc) X(aclrtFree) X(aclrtMemcpy) X(aclrtMemcpyAsync)          \
    X(aclrtMemsetAsync) X(aclrtCreateEventExWithFlag) X(aclrtDestroyEvent) X(aclrtRecordEvent)  \
    X(aclrtStreamWaitEvent) X(aclmdlRICaptureBegin) X(aclmdlRICaptureEnd)                       \
    X(aclmdlRICaptureGetInfo) X(aclmdlRICaptureThreadExchangeMode) X(aclmdlRIExecuteAsync)      \
    X(aclmdlRIDestroy) X(aclGetRecentErrMsg)
// clang-format on
FW_TYPED(FT_)
#undef FT_

static struct {
#define M_(name) fn_##name p_##name;
    FW_ACL(M_)
#undef M_
} g_a;

KCTX_LOADER_TABLE(FW_ACL);
#define C(name, ...) \
    (kctx__loader_count(&kctx_loader_table, KCTX_LE_##name), g_a.p_##name(__VA_ARGS__))

static char g_load_error[300];
static uint64_t (*g_double_calls)(const char *); /* the double's counters, or NULL */
static kfl_control_fn g_layer; /* the failing layer's control, when it is the library */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local char tl_msg[600];

static void load(void) {
    char why[200];
    if (kctx__loader_open(&kctx_loader_table, "KCTX_ACL_LIBRARY", "libascendcl.so", why,
                          sizeof why)) {
        snprintf(g_load_error, sizeof g_load_error, "fw_acl: ACL runtime not found: %s", why);
        return;
    }
    int bad = kctx__loader_resolve(&kctx_loader_table, NULL, NULL, NULL);
    if (bad >= 0) {
        snprintf(g_load_error, sizeof g_load_error, "fw_acl: %s has no %s", kctx_loader_table.path,
                 kctx_loader_table_names[bad]);
        return;
    }
#define S_(name) *(void **)&g_a.p_##name = kctx_loader_table_fns[KCTX_LE_##name];
    FW_ACL(S_)
#undef S_
    *(void **)&g_double_calls = kctx__loader_sym(&kctx_loader_table, "kacl_double_calls");
    *(void **)&g_layer = kctx__loader_sym(&kctx_loader_table, "kctx_fault_layer_control");
    kacl_error st = C(aclInit, NULL); /* the framework initialises ACL */
    if (st != KACL_SUCCESS && st != KACL_ERROR_REPEAT_INITIALIZE) {
        snprintf(g_load_error, sizeof g_load_error, "fw_acl: aclInit: ACL %d", st);
        memset(&g_a, 0, sizeof g_a);
    }
}

static int ready(void) {
    pthread_once(&g_once, load);
    if (g_a.p_aclInit) return 1;
    snprintf(tl_msg, sizeof tl_msg, "%s", g_load_error);
    return 0;
}

static fw_status map(kacl_error st, const char *what) {
    if (st == KACL_SUCCESS) return FW_OK;
    const char *m = C(aclGetRecentErrMsg);
    snprintf(tl_msg, sizeof tl_msg, "%s: ACL %d%s%s", what, st, m && *m ? ": " : "", m ? m : "");
    switch (st) {
    case KACL_ERROR_RT_STREAM_SYNC_TIMEOUT:
    case KACL_ERROR_RT_EVENT_SYNC_TIMEOUT:
        return FW_TIMEOUT;
    case KACL_ERROR_RT_CAPTURE_DEPENDENCY:
        return FW_CAPTURE_ISOLATION;
    case KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED:
        return FW_CAPTURE_INVALIDATED;
    case KACL_ERROR_RT_STREAM_UNJOINED:
        return FW_CAPTURE_UNJOINED;
    case KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT:
    case KACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC:
    case KACL_ERROR_RT_STREAM_CAPTURED:
    case KACL_ERROR_RT_EVENT_CAPTURED:
        return FW_CAPTURE_UNSUPPORTED;
    case KACL_ERROR_RT_LOST_HEARTBEAT:
    case KACL_ERROR_RT_AICORE_EXCEPTION:
    case KACL_ERROR_RT_AICPU_EXCEPTION:
    case KACL_ERROR_RT_DRV_INTERNAL_ERROR:
        return FW_DEVICE_LOST;
    default:
        return FW_ERROR;
    }
}
#define CALL(name, ...) (ready() ? map(C(name, __VA_ARGS__), #name) : FW_ERROR)

#define S(s) ((kacl_stream)(uintptr_t)(s))
#define E(e) ((kacl_event)(uintptr_t)(e))
#define P(p) ((void *)(uintptr_t)(p))

static const char *a_last_error(void) { return tl_msg; }

static fw_status a_current_device(int *d) {
    int32_t dev = 0;
    fw_status st = CALL(aclrtGetDevice, &dev);
    if (st == FW_OK) *d = dev;
    return st;
}
static fw_status a_set_device(int d) { return CALL(aclrtSetDevice, d); }
static fw_status a_stream_create(fw_stream *s) {
    kacl_stream h = NULL;
    fw_status st = CALL(aclrtCreateStreamWithConfig, &h, 0, 0);
    if (st == FW_OK) *s = (fw_stream)(uintptr_t)h;
    return st;
}
static fw_status a_stream_destroy(fw_stream s) { return CALL(aclrtDestroyStream, S(s)); }
static fw_status a_stream_sync(fw_stream s, uint32_t ms) {
    return CALL(aclrtSynchronizeStreamWithTimeout, S(s),
                (int32_t)(ms > INT32_MAX ? INT32_MAX : ms));
}
static fw_status a_stream_query(fw_stream s) {
    int status = KACL_STREAM_STATUS_COMPLETE;
    fw_status st = CALL(aclrtStreamQuery, S(s), &status);
    if (st == FW_OK && status == KACL_STREAM_STATUS_NOT_READY) return FW_NOT_READY;
    return st;
}
static fw_status a_mem_alloc(size_t n, fw_devptr *p) {
    void *d = NULL;
    fw_status st = CALL(aclrtMalloc, &d, n, KACL_MEM_MALLOC_HUGE_FIRST);
    if (st == FW_OK) *p = (fw_devptr)(uintptr_t)d;
    return st;
}
static fw_status a_mem_free(fw_devptr p) { return CALL(aclrtFree, P(p)); }
static fw_status a_upload(fw_devptr dst, const void *src, size_t n) {
    return CALL(aclrtMemcpy, P(dst), n, src, n, KACL_MEMCPY_HOST_TO_DEVICE);
}
static fw_status a_download(void *dst, fw_devptr src, size_t n) {
    return CALL(aclrtMemcpy, dst, n, P(src), n, KACL_MEMCPY_DEVICE_TO_HOST);
}
static fw_status a_fill_async(fw_devptr dst, uint8_t v, size_t n, fw_stream s) {
    return CALL(aclrtMemsetAsync, P(dst), n, v, n, S(s));
}
static fw_status a_copy_async(fw_devptr dst, fw_devptr src, size_t n, fw_stream s) {
    return CALL(aclrtMemcpyAsync, P(dst), n, P(src), n, KACL_MEMCPY_DEVICE_TO_DEVICE, S(s));
}
static fw_status a_event_create(fw_event *e) {
    kacl_event h = NULL;
    fw_status st = CALL(aclrtCreateEventExWithFlag, &h, KACL_EVENT_SYNC);
    if (st == FW_OK) *e = (fw_event)(uintptr_t)h;
    return st;
}
static fw_status a_event_destroy(fw_event e) { return CALL(aclrtDestroyEvent, E(e)); }
static fw_status a_event_record(fw_event e, fw_stream s) {
    return CALL(aclrtRecordEvent, E(e), S(s));
}
static fw_status a_stream_wait_event(fw_stream s, fw_event e) {
    return CALL(aclrtStreamWaitEvent, S(s), E(e));
}

_Static_assert((int)FW_CAPTURE_GLOBAL == KACL_MODEL_RI_CAPTURE_MODE_GLOBAL &&
                   (int)FW_CAPTURE_THREAD_LOCAL == KACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL &&
                   (int)FW_CAPTURE_RELAXED == KACL_MODEL_RI_CAPTURE_MODE_RELAXED,
               "fw and ACL capture modes agree");
static fw_status a_begin_capture_mode(fw_stream s, fw_capture_mode mode) {
    return CALL(aclmdlRICaptureBegin, S(s), (int)mode);
}
static fw_status a_begin_capture(fw_stream s) { return a_begin_capture_mode(s, FW_CAPTURE_GLOBAL); }
static fw_status a_exchange_capture_mode(fw_capture_mode *mode) {
    int m = (int)*mode;
    fw_status st = CALL(aclmdlRICaptureThreadExchangeMode, &m);
    if (st == FW_OK) *mode = (fw_capture_mode)m;
    return st;
}
static fw_status a_capture_status(fw_stream s, int *capturing) {
    int cs = KACL_MODEL_RI_CAPTURE_STATUS_NONE;
    kacl_model m = NULL;
    fw_status st = CALL(aclmdlRICaptureGetInfo, S(s), &cs, &m);
    if (st == FW_OK) *capturing = cs != KACL_MODEL_RI_CAPTURE_STATUS_NONE;
    return st;
}

/* Model references: the graph's and one per exec. */
typedef struct mref {
    kacl_model m;
    unsigned refs;
    int has_exec;
    struct mref *next;
} mref;
static pthread_mutex_t g_mlock = PTHREAD_MUTEX_INITIALIZER;
static mref *g_mrefs;

static fw_status model_ref(kacl_model m, int delta) {
    pthread_mutex_lock(&g_mlock);
    mref **p = &g_mrefs;
    while (*p && (*p)->m != m) p = &(*p)->next;
    if (!*p && delta > 0) {
        mref *r = calloc(1, sizeof *r);
        if (!r) {
            pthread_mutex_unlock(&g_mlock);
            snprintf(tl_msg, sizeof tl_msg, "fw_acl: out of host memory");
            return FW_ERROR;
        }
        r->m = m;
        r->next = g_mrefs;
        g_mrefs = r;
        p = &g_mrefs;
    }
    if (!*p) {
        pthread_mutex_unlock(&g_mlock);
        snprintf(tl_msg, sizeof tl_msg, "fw_acl: not a live graph or exec");
        return FW_INVALID_HANDLE;
    }
    int last = 0;
    if (delta > 0) {
        (*p)->refs++;
    } else if (--(*p)->refs == 0) {
        mref *r = *p;
        *p = r->next;
        free(r);
        last = 1;
    }
    pthread_mutex_unlock(&g_mlock);
    return last ? CALL(aclmdlRIDestroy, m) : FW_OK;
}

static fw_status a_end_capture(fw_stream s, fw_graph *g) {
    kacl_model m = NULL;
    fw_status st = CALL(aclmdlRICaptureEnd, S(s), &m);
    if (st == FW_OK) st = model_ref(m, 1);
    if (st == FW_OK) *g = (fw_graph)(uintptr_t)m;
    return st;
}
/* The model is its one executable: a second instantiation is FW_NA. */
static fw_status a_graph_instantiate(fw_graph g, fw_exec *x) {
    pthread_mutex_lock(&g_mlock);
    mref *r = g_mrefs;
    while (r && r->m != (kacl_model)(uintptr_t)g) r = r->next;
    int again = r && r->has_exec;
    if (r) r->has_exec = 1;
    pthread_mutex_unlock(&g_mlock);
    if (again) {
        snprintf(tl_msg, sizeof tl_msg,
                 "fw_acl: an ACL model is its one executable: no second executable copy");
        return FW_NA;
    }
    fw_status st = model_ref((kacl_model)(uintptr_t)g, 1);
    if (st == FW_OK) *x = (fw_exec)g;
    return st;
}
static fw_status a_graph_launch(fw_exec x, fw_stream s) {
    return CALL(aclmdlRIExecuteAsync, (kacl_model)(uintptr_t)x, S(s));
}
static fw_status a_graph_destroy(fw_graph g) { return model_ref((kacl_model)(uintptr_t)g, -1); }
static fw_status a_exec_destroy(fw_exec x) { return model_ref((kacl_model)(uintptr_t)x, -1); }

static fw_status a_device_info(int device, char *name, size_t name_size, unsigned *cores) {
    int cur = 0;
    fw_status st = a_current_device(&cur);
    if (st == FW_OK && cur != device) st = a_set_device(device);
    uint32_t n = 0;
    if (st == FW_OK) st = CALL(aclrtGetStreamResLimit, NULL, 0, &n);
    if (st == FW_OK) {
        const char *soc = C(aclrtGetSocName);
        snprintf(name, name_size, "%s", soc ? soc : "Ascend");
        *cores = n;
    }
    if (cur != device) (void)a_set_device(cur);
    return st;
}
static int a_device_count(void) {
    uint32_t n = 0;
    return CALL(aclrtGetDeviceCount, &n) == FW_OK ? (int)n : 0;
}

/* ---- the double's hooks ---- */

static fw_status a_hold_arm(fw_hold_point point, int device, kctx_context ctx, int *hold) {
    if (point == FW_HOLD_SCHEDULER) {
        snprintf(tl_msg, sizeof tl_msg,
                 "fw_acl: the ACL driver double runs every launch through its own device "
                 "program, so a hold cannot name kctx's scheduler");
        return FW_NA;
    }
    return fw_simdev_hold_arm(point, device, ctx, hold);
}

/* The sim's count less the double's own enqueue per replay (a host
 * function that observes the replay's end, platform/acl/double/double.c):
 * what the framework and kctx enqueued. The double counts per process, so
 * this is exact on one device at a time, as the probes use it. */
static fw_status a_device_enqueues(int device, uint64_t *n) {
    fw_status st = fw_simdev_device_enqueues(device, n);
    if (st == FW_OK)
        *n -= g_double_calls("aclmdlRIExecuteAsync") + g_double_calls("aclmdlRIExecute");
    return st;
}

/* The graph memory pool: the framework arena (fw_pool.c) over aclrtMalloc,
 * the way torch_npu's NPUGraph serves a graph's private pool (its caching
 * allocator sub-allocates blocks of segments reserved before the capture;
 * acl-platform.md, torch_npu). */
static fw_status a_pool_create(size_t bytes, fw_pool *pool) {
    return fw_arena_create(a_mem_alloc, a_mem_free, bytes, pool);
}

static const char *const k_lc_entries[] = {"aclInit", "aclrtSetDevice", "aclrtCreateContext",
                                           "aclrtDestroyContext", "aclrtSetCurrentContext"};
#define N_LC (sizeof k_lc_entries / sizeof k_lc_entries[0])

static int a_lc_counts(int device, uint64_t *out) {
    (void)device; /* the double counts per process */
    for (size_t i = 0; i < N_LC; i++) {
        out[i] = g_double_calls(k_lc_entries[i]);
        if (out[i] == UINT64_MAX) return -1;
    }
    return 0;
}

/* Every op once, as the device's owner. aclrtResetDevice and aclFinalize
 * are not proved here (a reset also drops the double's own device program,
 * which its next launch reloads: the probe's leak check would count it; a
 * finalize ends every object of the process): the adapter never resolves
 * either (K4 by construction), and platform/acl/tests checks their zero
 * counts on the double. */
static int a_lc_prove(int device, char *why, size_t why_size) {
    kacl_context c = NULL;
    const char *step = "aclInit";
    kacl_error st = C(aclInit, NULL);
    if (st == KACL_ERROR_REPEAT_INITIALIZE) st = KACL_SUCCESS;
    if (!st) step = "aclrtSetDevice", st = C(aclrtSetDevice, device);
    if (!st) step = "aclrtCreateContext", st = C(aclrtCreateContext, &c, device);
    if (!st) step = "aclrtSetCurrentContext", st = C(aclrtSetCurrentContext, c);
    if (!st) step = "aclrtDestroyContext", st = C(aclrtDestroyContext, c);
    if (!st) return 0;
    map(st, step);
    snprintf(why, why_size, "%s", tl_msg);
    return -1;
}

static const fw_lifecycle k_double_lifecycle = {
    N_LC,
    {"init", "set device", "create context", "destroy context", "set context"},
    a_lc_counts,
    a_lc_prove,
};

static fw_driver g_driver;
static pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;

static const kfl_control *a_fault_layer(void) { return ready() && g_layer ? g_layer() : NULL; }

static void make_driver(void) {
    g_driver = (fw_driver){
        .name = "acl-runtime", /* the expected N/A list keys its hook-less N/As on it */
        .platform = "acl",
        .last_error = a_last_error,
        .current_device = a_current_device,
        .set_device = a_set_device,
        .stream_create = a_stream_create,
        .stream_destroy = a_stream_destroy,
        .stream_sync = a_stream_sync,
        .stream_query = a_stream_query,
        .mem_alloc = a_mem_alloc,
        .mem_free = a_mem_free,
        .upload = a_upload,
        .download = a_download,
        .fill_async = a_fill_async,
        .copy_async = a_copy_async,
        .event_create = a_event_create,
        .event_destroy = a_event_destroy,
        .event_record = a_event_record,
        .stream_wait_event = a_stream_wait_event,
        .begin_capture = a_begin_capture,
        .end_capture = a_end_capture,
        .capture_status = a_capture_status,
        .graph_instantiate = a_graph_instantiate,
        .graph_launch = a_graph_launch,
        .graph_destroy = a_graph_destroy,
        .exec_destroy = a_exec_destroy,
        .pool_create = a_pool_create,
        .pool_alloc = fw_arena_alloc,
        .pool_free = fw_arena_free,
        .pool_destroy = fw_arena_destroy,
        .pool_last_error = fw_arena_last_error,
        /* graph_stream_nodes: NULL. A model (aclmdlRI) is opaque to the
         * framework; CANN's aclmdlRIGetStreams is not resolved (the double
         * does not implement it, and no task-per-stream count was checked
         * against a real runtime): the probe is an expected N/A. */
        .device_info = a_device_info,
        .device_count = a_device_count,
        .begin_capture_mode = a_begin_capture_mode,
        .exchange_capture_mode = a_exchange_capture_mode,
        /* a kctx task's failure lives in the error word; the double's device
         * program absorbs a kernel's report, so no stream takes an error */
        .task_failure_leaves_streams_ok = 1,
        .fault_layer = a_fault_layer,
    };
    if (ready() && g_double_calls) {
        g_driver.name = "acl-double";
        g_driver.hold_arm = a_hold_arm;
        g_driver.hold_wait_reached = fw_simdev_hold_wait_reached;
        g_driver.hold_release = fw_simdev_hold_release;
        g_driver.hold_release_all = fw_simdev_hold_release_all;
        g_driver.live_counts = fw_simdev_live_counts;
        g_driver.device_allocs = fw_simdev_device_allocs;
        g_driver.device_enqueues = a_device_enqueues;
        g_driver.lifecycle = &k_double_lifecycle;
    }
}

const fw_driver *fw_acl_driver(void);
const fw_driver *fw_acl_driver(void) {
    pthread_once(&g_driver_once, make_driver);
    return &g_driver;
}
