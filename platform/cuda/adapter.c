/*
 * adapter.c — the cuda platform for kctx (docs/cuda.md, kctx/cuda.h): fills
 * the platform tables (kctx/platform.h) with the CUDA driver API, loaded at
 * run time and reached only through this file's counted table.
 *
 * Loading. dlopen(KCTX_CUDA_DRIVER, default "libcuda.so.1"), then
 * cuGetProcAddress_v2 resolves every entry at KCTX_CUDA_DRIVER_ABI (cuda.h
 * gives the types only; libkctx has no link-time dependency on libcuda).
 * available() (once per process, before any context) loads, checks the
 * driver's version and calls cuInit(0), the driver's own once-per-process
 * initialisation, which a framework has already made (it initialises no
 * device and is not a device lifecycle call; it is counted like every
 * other entry).
 *
 * The mapping (kernel-mode contract rules in brackets):
 *  - current_device: cuCtxGetCurrent + cuCtxGetDevice (the borrow, K4/K5);
 *    no current context is an error with that reason.
 *  - streams: cuStreamCreate(CU_STREAM_NON_BLOCKING) (never ordered with
 *    the legacy stream); stream_sync is a bounded cuStreamQuery poll (a
 *    timed wait CUDA does not have); stream_info is cuStreamGetDevice plus
 *    cuStreamGetCaptureInfo (v3: status, id, graph; legal on a capturing
 *    stream).
 *  - events: cuEventCreate(CU_EVENT_DISABLE_TIMING).
 *  - uploads and copy-back: cuMemcpyHtoDAsync / cuMemcpyDtoHAsync on the
 *    stream the core names (prepare's: the context's private upload stream,
 *    K16; never the synchronous copies, which use the legacy stream).
 *  - atomic word access (the error word, K35; check's reads; the abort
 *    word, K24): a 4-byte copy (atomic for an aligned word) on the CUDA
 *    context's word stream, which the adapter creates with the context's
 *    first kctx stream (kernel init) and destroys with its last (close), so
 *    that no word access of a context with kctx streams creates a stream
 *    (K19: the launch's failure path makes word accesses; a context with
 *    none, before init or after close, gets a stream of its own per copy); in the relaxed capture mode so that another
 *    thread's global-mode capture survives it; waited for with a bounded
 *    query poll of the word stream (the host buffer must outlive the copy,
 *    and a write must be visible at once, platform.h). Not ordered with any
 *    other stream. Those polls are the only stream queries of a failure
 *    path (docs/cuda.md, "K19 on failure paths").
 *  - kernels: cuModuleLoadData / cuModuleGetFunction / cuLaunchKernel with
 *    the fixed parameter block of kctx/cuda.h (AICPU programs <<<1,1>>>,
 *    task kernels <<<block_dim, KCTX_CUDA_TASK_THREADS>>>).
 *  - capture: cuThreadExchangeStreamCaptureMode; graph lifetime hooks are
 *    user objects (cuUserObjectCreate + cuGraphRetainUserObject with
 *    CU_GRAPH_USER_OBJECT_MOVE): the driver runs the destructor once the
 *    graph, its executable graphs and their launches are gone (K25).
 *  - no device epoch (has_epoch 0: quarantine is terminal, K30), no range
 *    checks, no program mode (no lifecycle table), HOST_ORDERED only.
 *
 * Statuses are CUresult values; the adapter's own refusals use CUDA codes
 * too (CUDA_ERROR_INVALID_CONTEXT for "no current context",
 * CUDA_ERROR_TIMEOUT for a bounded wait that gave up).
 *
 * One file (about 870 lines, over the wing's ~800): one ops table and the
 * word streams its word accesses share with stream creation; the driver
 * table's X-macro list is a tenth of it.
 */
#include <cuda.h>

#include <kctx/cuda.h>
#include <kctx/image.h>
#include <kctx/platform.h>

#include "driver_table.h" /* the counted driver table (platform/common/loader.h) */
#include "services.h"     /* kctx__svc_fail: the thread's last error for kctx_cuda_driver_calls */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char kctx_rt_cuda_programs[];
extern const size_t kctx_rt_cuda_programs_size;
const kctx_platform_entry *kctx_cuda_platform_entry(void);

/* ---- the driver table ----------------------------------------------------
 * Every entry the adapter calls: CU_ENTRIES (adapter_entries.h). */
#include "adapter_entries.h"

// clang-format off
/* Entries the adapter must never call (K4: device and context lifecycle;
 * K19 and K25: synchronising calls it replaces with bounded polls). Listed
 * so that their counters exist and a zero is an answer; not resolved. */
#define CU_NEVER(X)                                                                      \
    X(cuCtxSetCurrent) X(cuCtxCreate) X(cuCtxDestroy) X(cuCtxPushCurrent)                \
    X(cuCtxPopCurrent) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)          \
    X(cuDevicePrimaryCtxReset) X(cuCtxSynchronize) X(cuStreamSynchronize)                \
    X(cuEventSynchronize) X(cuEventQuery) X(cuMemcpyHtoD) X(cuMemcpyDtoH)
// clang-format on

#define E_ENUM_(name, args) E_##name,
#define E_NEVER_(name) E_##name,
enum {
    CU_ENTRIES(E_ENUM_) E_RESOLVED_,
    E_NEVER_BASE_ = E_RESOLVED_ - 1, /* the never-call entries follow the resolved ones */
    CU_NEVER(E_NEVER_) E_COUNT_
};
#undef E_ENUM_
#undef E_NEVER_

#define E_NAME_(name, args) #name,
#define E_NEVER_NAME_(name) #name,
static const char *const k_entry_names[E_COUNT_] = {CU_ENTRIES(E_NAME_) CU_NEVER(E_NEVER_NAME_)};
#undef E_NAME_
#undef E_NEVER_NAME_

#define E_TYPE_(name, args) typedef CUresult(CUDAAPI *t_##name) args;
CU_ENTRIES(E_TYPE_)
#undef E_TYPE_

typedef struct driver {
#define E_MEMBER_(name, args) t_##name p_##name;
    CU_ENTRIES(E_MEMBER_)
#undef E_MEMBER_
} driver;

static driver g_drv;
static void *g_fns[E_RESOLVED_];
static _Atomic uint64_t g_calls[E_COUNT_];
/* The counted table (platform/common/loader.h). */
static kctx_loader g_ld = KCTX_LOADER_INIT(k_entry_names, E_RESOLVED_, E_COUNT_, g_fns, g_calls);
static char g_unavailable[200]; /* "" once loaded and initialised */
static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;

/* Every driver call of the adapter: counted, then made. */
#define CU(name, ...) (kctx__loader_count(&g_ld, E_##name), g_drv.p_##name(__VA_ARGS__))

/* ---- messages ---------------------------------------------------------------
 * The thread's message is the adapters' one buffer (platform/common/services.h). */

static const char *code_name(int st) {
    const char *s = NULL;
    if (g_drv.p_cuGetErrorName && CU(cuGetErrorName, (CUresult)st, &s) == CUDA_SUCCESS && s)
        return s;
    switch (st) {
    case CUDA_ERROR_STUB_LIBRARY:
        return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_TIMEOUT:
        return "CUDA_ERROR_TIMEOUT";
    case CUDA_ERROR_INVALID_CONTEXT:
        return "CUDA_ERROR_INVALID_CONTEXT";
    default:
        return "CUDA_ERROR_UNKNOWN_CODE";
    }
}

/* Record a failed call's message for last_message(); returns st. */
static int note(int st, const char *what) {
    if (st == CUDA_SUCCESS) return st;
    const char *s = NULL;
    if (!g_drv.p_cuGetErrorString || CU(cuGetErrorString, (CUresult)st, &s) != CUDA_SUCCESS || !s)
        s = "";
    kctx__svc_msgf(0, "%s: %s (%d)%s%s", what, code_name(st), st, *s ? ": " : "", s);
    return st;
}

/* ---- loading ---------------------------------------------------------------- */

static void load(void) {
    char why[160];
    if (kctx__loader_open(&g_ld, "KCTX_CUDA_DRIVER", "libcuda.so.1", why, sizeof why) != 0) {
        snprintf(g_unavailable, sizeof g_unavailable, "driver not found: %s", why);
        return;
    }
    const char *path = g_ld.path;
    kctx_cuda_getproc getproc = kctx__cuda_getproc(&g_ld);
    if (!getproc) {
        snprintf(g_unavailable, sizeof g_unavailable,
                 "%s has no cuGetProcAddress_v2 (a CUDA 12 or newer driver is needed)", path);
        kctx__loader_close(&g_ld);
        return;
    }
    int code = 0;
    int bad = kctx__loader_resolve(&g_ld, kctx__cuda_find, &getproc, &code);
    if (bad >= 0) {
        if (code == CUDA_ERROR_STUB_LIBRARY)
            snprintf(g_unavailable, sizeof g_unavailable,
                     "%s is the toolkit's stub library (CUDA_ERROR_STUB_LIBRARY): no driver "
                     "is installed",
                     path);
        else
            snprintf(g_unavailable, sizeof g_unavailable,
                     "%s: cuGetProcAddress_v2(%s, ABI %d) failed (CUresult %d, query result "
                     "%d): the driver is too old or not a CUDA driver",
                     path, k_entry_names[bad], KCTX_CUDA_DRIVER_ABI,
                     code >= KCTX_CUDA_FIND_NOT_FOUND ? 0 : code,
                     code >= KCTX_CUDA_FIND_NOT_FOUND ? code - KCTX_CUDA_FIND_NOT_FOUND
                                                      : (int)CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
        kctx__loader_close(&g_ld);
        return;
    }
#define E_SET_(name, args) *(void **)&g_drv.p_##name = g_fns[E_##name];
    CU_ENTRIES(E_SET_)
#undef E_SET_
    int version = 0;
    CUresult st = CU(cuDriverGetVersion, &version);
    if (st == CUDA_SUCCESS && version < KCTX_CUDA_DRIVER_ABI) {
        snprintf(g_unavailable, sizeof g_unavailable,
                 "the CUDA driver is version %d.%d; kctx needs %d.%d or newer", version / 1000,
                 version % 1000 / 10, KCTX_CUDA_DRIVER_ABI / 1000,
                 KCTX_CUDA_DRIVER_ABI % 1000 / 10);
        return;
    }
    if (st == CUDA_SUCCESS) st = CU(cuInit, 0);
    if (st == CUDA_ERROR_STUB_LIBRARY)
        snprintf(g_unavailable, sizeof g_unavailable,
                 "%s is the toolkit's stub library (CUDA_ERROR_STUB_LIBRARY): no driver is "
                 "installed",
                 path);
    else if (st == CUDA_ERROR_NO_DEVICE)
        snprintf(g_unavailable, sizeof g_unavailable,
                 "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)");
    else if (st != CUDA_SUCCESS)
        snprintf(g_unavailable, sizeof g_unavailable, "cuInit failed: %s (%d)", code_name(st),
                 (int)st);
}

static int a_available(char *why, size_t why_size) {
    pthread_once(&g_load_once, load);
    if (!g_unavailable[0]) return 1;
    snprintf(why, why_size, "%s", g_unavailable);
    return 0;
}

/* ---- status vocabulary ------------------------------------------------------ */

static kctx_pclass a_classify(int st) {
    if (st >= 900 && st <= 908) return KCTX_PCLASS_CAPTURE; /* stream capture rules */
    switch (st) {
    case CUDA_SUCCESS:
        return KCTX_PCLASS_OK;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return KCTX_PCLASS_NO_MEMORY;
    case CUDA_ERROR_NOT_READY:
        return KCTX_PCLASS_NOT_READY;
    case CUDA_ERROR_TIMEOUT:
        return KCTX_PCLASS_TIMEOUT;
    /* sticky for the process's context: only a reset recovers (K29) */
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEINITIALIZED:
        return KCTX_PCLASS_DEVICE_LOST;
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_SUPPORTED:
        return KCTX_PCLASS_UNSUPPORTED;
    /* A module the driver cannot load for this device, or a kernel entry
     * the module lacks: the image's fault (prepare: INCOMPATIBLE_IMAGE).
     * cuda.h: cuModuleLoadData answers 200, 209, 218, 221, 222 (and 300
     * for device code that does not compile or link, 223 with the JIT
     * disabled); cuModuleGetFunction answers 500 for a name the module
     * does not export, and no other entry of this table can. kctx's own
     * runtime programs are the library's, not an image's: a_module_load
     * reports their load as UNSUPPORTED. */
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_NOT_FOUND:
        return KCTX_PCLASS_BAD_MODULE;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_ILLEGAL_STATE:
        return KCTX_PCLASS_INVALID;
    default:
        return KCTX_PCLASS_OTHER;
    }
}

static const char *a_status_name(int st) { return code_name(st); }
static const char *a_last_message(void) { return kctx__svc_msg(); }

/* ---- devices ---------------------------------------------------------------- */

static int a_device_count(int *n) { return note(CU(cuDeviceGetCount, n), "cuDeviceGetCount"); }

/* The borrow (K4, K5): the calling thread's current context's device. */
static int a_current_device(int *d) {
    CUcontext ctx = NULL;
    int st = note(CU(cuCtxGetCurrent, &ctx), "cuCtxGetCurrent");
    if (st) return st;
    if (!ctx) {
        kctx__svc_msgf(0,
                       "no CUDA context is current on this thread: the framework makes its context "
                       "current (kctx borrows it and never sets one)");
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    CUdevice dev = 0;
    st = note(CU(cuCtxGetDevice, &dev), "cuCtxGetDevice");
    if (!st) *d = (int)dev;
    return st;
}

static int a_device_info(int d, kctx_device_info *info) {
    CUdevice dev = 0;
    int sms = 0;
    size_t mem = 0;
    char name[sizeof info->name] = "";
    int st = note(CU(cuDeviceGet, &dev, d), "cuDeviceGet");
    if (!st) st = note(CU(cuDeviceGetName, name, (int)sizeof name, dev), "cuDeviceGetName");
    if (!st)
        st = note(CU(cuDeviceGetAttribute, &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
                  "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
    if (!st) st = note(CU(cuDeviceTotalMem, &mem, dev), "cuDeviceTotalMem");
    if (st) return st;
    memcpy(info->name, name, sizeof info->name);
    info->name[sizeof info->name - 1] = 0;
    info->aicore_count = sms > 0 ? (uint32_t)sms : 1u;
    info->max_params_size = KCTX_CUDA_PARAMS_SIZE;
    info->memory_capacity = mem;
    info->word_size = 4;
    info->alloc_alignment = 256; /* cuMemAlloc aligns to at least 256 bytes */
    info->has_epoch = 0;
    info->can_check_ranges = 0;
    return CUDA_SUCCESS;
}

/* ---- streams ---------------------------------------------------------------- */

#define AS_STREAM(s) ((CUstream)(uintptr_t)(s))

/* The word stream (K19): the device word accesses (atomic_read_u32 /
 * atomic_write_u32) run on one stream per CUDA context that the adapter
 * creates with the first kctx stream of that context (kernel init) and
 * destroys with its last (close), so that no word access — the launch's
 * failure path makes some: the K35 poison, the K24 abort word — creates or
 * destroys a stream. Each kctx stream records its context's slot. */
#define MAX_WORD_HOMES 64
typedef struct word_home {
    CUcontext ctx;
    CUstream s;
    unsigned refs; /* kctx streams of the context, plus word accesses under way */
} word_home;
typedef struct owned_stream {
    CUstream s;
    int home;
    int released; /* its word-stream reference is released; destroying s failed */
    struct owned_stream *next;
} owned_stream;
static word_home g_homes[MAX_WORD_HOMES];
static owned_stream *g_owned;
static pthread_mutex_t g_home_lock = PTHREAD_MUTEX_INITIALIZER;

/* g_home_lock held. The slot of `ctx`'s word stream, or -1. */
static int home_find(CUcontext ctx) {
    for (int i = 0; i < MAX_WORD_HOMES; i++)
        if (g_homes[i].refs && g_homes[i].ctx == ctx) return i;
    return -1;
}

/* g_home_lock held. One reference less; the last destroys the stream. A
 * failed destroy keeps the last reference (and the stream): whoever
 * released it retries (stream_destroy's retry, K26), or the context's next
 * kctx stream takes the stream over. */
static int home_release(int i) {
    if (g_homes[i].refs > 1) {
        g_homes[i].refs--;
        return CUDA_SUCCESS;
    }
    int st = note(CU(cuStreamDestroy, g_homes[i].s), "cuStreamDestroy(word stream)");
    if (st) return st;
    g_homes[i] = (word_home){NULL, NULL, 0};
    return CUDA_SUCCESS;
}

/* Streams the adapter made and could not destroy where no caller holds
 * them any more (a rollback inside stream_create, a word access's own
 * stream): destroyed again at the next stream_create or stream_destroy, so
 * that a non-fatal failure leaks nothing (each is destroyed by exactly one
 * successful call). */
#define MAX_GRAVE 16
static CUstream g_grave[MAX_GRAVE];
static unsigned g_grave_n;

/* g_home_lock held. */
static void grave_add(CUstream s) {
    if (g_grave_n < MAX_GRAVE) g_grave[g_grave_n++] = s;
}
static void grave_drain(void) {
    pthread_mutex_lock(&g_home_lock);
    for (unsigned i = 0; i < g_grave_n;)
        if (CU(cuStreamDestroy, g_grave[i]) == CUDA_SUCCESS)
            g_grave[i] = g_grave[--g_grave_n];
        else
            i++;
    pthread_mutex_unlock(&g_home_lock);
}

/* Record kctx stream `h` of the current context, creating the context's
 * word stream with its first. */
static int home_attach(CUstream h) {
    CUcontext ctx = NULL;
    int st = note(CU(cuCtxGetCurrent, &ctx), "cuCtxGetCurrent");
    if (st) return st;
    owned_stream *o = malloc(sizeof *o);
    if (!o) {
        kctx__svc_msgf(0, "stream_create: out of host memory");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&g_home_lock);
    int i = home_find(ctx);
    if (i < 0) {
        for (i = 0; i < MAX_WORD_HOMES && g_homes[i].refs; i++) continue;
        if (i == MAX_WORD_HOMES) {
            kctx__svc_msgf(0, "stream_create: kctx contexts on more than %d CUDA contexts at once",
                           MAX_WORD_HOMES);
            st = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            CUstream w = NULL;
            st =
                note(CU(cuStreamCreate, &w, CU_STREAM_NON_BLOCKING), "cuStreamCreate(word stream)");
            if (!st) g_homes[i] = (word_home){ctx, w, 0};
        }
    }
    if (!st) {
        g_homes[i].refs++;
        *o = (owned_stream){h, i, 0, g_owned};
        g_owned = o;
    }
    pthread_mutex_unlock(&g_home_lock);
    if (st) free(o);
    return st;
}

/* g_home_lock held. The record of kctx stream `h`, or NULL. */
static owned_stream **owned_find(CUstream h) {
    for (owned_stream **p = &g_owned; *p; p = &(*p)->next)
        if ((*p)->s == h) return p;
    return NULL;
}

/* Release kctx stream `h`'s word-stream reference (its context's last
 * destroys the word stream), once: the record stays, marked released,
 * until h itself is destroyed (home_forget). */
static int home_detach(CUstream h) {
    int st = CUDA_SUCCESS;
    pthread_mutex_lock(&g_home_lock);
    owned_stream **p = owned_find(h);
    if (p && !(*p)->released) {
        st = home_release((*p)->home);
        if (!st) (*p)->released = 1;
    }
    pthread_mutex_unlock(&g_home_lock);
    return st;
}

/* h is destroyed: forget its record. */
static void home_forget(CUstream h) {
    pthread_mutex_lock(&g_home_lock);
    owned_stream **p = owned_find(h);
    if (p) {
        owned_stream *o = *p;
        *p = o->next;
        free(o);
    }
    pthread_mutex_unlock(&g_home_lock);
}

static int a_stream_create(kctx_pstream *s) {
    grave_drain();
    CUstream h = NULL;
    int st = note(CU(cuStreamCreate, &h, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    if (!st) {
        st = home_attach(h);
        if (st && CU(cuStreamDestroy, h) != CUDA_SUCCESS) {
            pthread_mutex_lock(&g_home_lock);
            grave_add(h);
            pthread_mutex_unlock(&g_home_lock);
        }
    }
    if (!st) *s = (kctx_pstream)(uintptr_t)h;
    return st;
}

/* Retryable (K26): the stream's word-stream reference goes first (with
 * the context's last kctx stream, the word stream itself), then the
 * stream. Either failure returns with the rest undone, and the retry
 * makes exactly the calls that remain: a released reference is not
 * released again, so each handle is destroyed by exactly one successful
 * call and never named after it. */
static int a_stream_destroy(kctx_pstream s) {
    CUstream h = AS_STREAM(s);
    grave_drain();
    int st = home_detach(h);
    if (!st) st = note(CU(cuStreamDestroy, h), "cuStreamDestroy");
    if (!st) home_forget(h);
    return st;
}

/* A bounded wait: poll cuStreamQuery, pausing 20 us doubling to about 1 ms
 * between polls, for at most timeout_ms (kctx__svc_poll).
 * CUDA_ERROR_TIMEOUT when it gave up (the work goes on). */
typedef struct stream_poll {
    CUstream s;
    int st;
} stream_poll;

static bool stream_done(void *arg) {
    stream_poll *p = arg;
    p->st = CU(cuStreamQuery, p->s);
    return p->st != CUDA_ERROR_NOT_READY;
}

static int poll_stream(CUstream s, uint32_t timeout_ms, const char *what) {
    stream_poll p = {s, CUDA_SUCCESS};
    if (kctx__svc_poll(stream_done, &p, timeout_ms, 20000)) return note(p.st, what);
    return kctx__svc_msgf(CUDA_ERROR_TIMEOUT, "%s: still running after %u ms (bounded wait)", what,
                          timeout_ms);
}

static int a_stream_sync(kctx_pstream s, uint32_t ms) {
    return poll_stream(AS_STREAM(s), ms, "cuStreamQuery (stream_sync)");
}
static int a_stream_query(kctx_pstream s) {
    int st = CU(cuStreamQuery, AS_STREAM(s));
    return st == CUDA_ERROR_NOT_READY ? st : note(st, "cuStreamQuery");
}
static int a_stream_info(kctx_pstream s, int *device, kctx_pcapture_status *status, uint64_t *id,
                         kctx_pgraph *graph) {
    CUdevice dev = 0;
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t cid = 0;
    CUgraph g = NULL;
    int st = note(CU(cuStreamGetDevice, AS_STREAM(s), &dev), "cuStreamGetDevice");
    if (!st)
        st = note(CU(cuStreamGetCaptureInfo, AS_STREAM(s), &cs, &cid, &g, NULL, NULL, NULL),
                  "cuStreamGetCaptureInfo");
    if (st) return st;
    /* A default stream (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) is for
     * eager launches: a launch captured through one is refused, nothing
     * enqueued (kctx/cuda.h). */
    if (s <= (kctx_pstream)(uintptr_t)CU_STREAM_PER_THREAD && cs != CU_STREAM_CAPTURE_STATUS_NONE) {
        kctx__svc_msgf(
            0,
            "stream %llu is a default stream and is capturing: kctx takes default streams "
            "for eager launches only; launch on the capture's own stream",
            (unsigned long long)s);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (cs == CU_STREAM_CAPTURE_STATUS_NONE) cid = 0, g = NULL;
    if (device) *device = (int)dev;
    if (status) *status = (kctx_pcapture_status)cs;
    if (id) *id = cid;
    if (graph) *graph = (kctx_pgraph)(uintptr_t)g;
    return CUDA_SUCCESS;
}

/* ---- events ----------------------------------------------------------------- */

#define AS_EVENT(e) ((CUevent)(uintptr_t)(e))

static int a_event_create(kctx_pevent *e) {
    CUevent h = NULL;
    int st = note(CU(cuEventCreate, &h, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    if (!st) *e = (kctx_pevent)(uintptr_t)h;
    return st;
}
static int a_event_destroy(kctx_pevent e) {
    return note(CU(cuEventDestroy, AS_EVENT(e)), "cuEventDestroy");
}
static int a_event_record(kctx_pevent e, kctx_pstream s) {
    return note(CU(cuEventRecord, AS_EVENT(e), AS_STREAM(s)), "cuEventRecord");
}
static int a_stream_wait_event(kctx_pstream s, kctx_pevent e) {
    return note(CU(cuStreamWaitEvent, AS_STREAM(s), AS_EVENT(e), 0), "cuStreamWaitEvent");
}

/* ---- memory ----------------------------------------------------------------- */

static int a_mem_alloc(size_t size, kctx_pdevptr *p) {
    CUdeviceptr d = 0;
    int st = note(CU(cuMemAlloc, &d, size), "cuMemAlloc");
    if (!st) *p = (kctx_pdevptr)d;
    return st;
}
static int a_mem_free(kctx_pdevptr p) { return note(CU(cuMemFree, (CUdeviceptr)p), "cuMemFree"); }
static int a_memcpy_htod_async(kctx_pdevptr dst, const void *src, size_t size, kctx_pstream s) {
    return note(CU(cuMemcpyHtoDAsync, (CUdeviceptr)dst, src, size, AS_STREAM(s)),
                "cuMemcpyHtoDAsync");
}
static int a_memset_async(kctx_pdevptr dst, uint8_t v, size_t size, kctx_pstream s) {
    return note(CU(cuMemsetD8Async, (CUdeviceptr)dst, v, size, AS_STREAM(s)), "cuMemsetD8Async");
}
static int a_memcpy_dtoh_async(void *dst, kctx_pdevptr src, size_t size, kctx_pstream s) {
    return note(CU(cuMemcpyDtoHAsync, dst, (CUdeviceptr)src, size, AS_STREAM(s)),
                "cuMemcpyDtoHAsync");
}

/* How long a word access may take (it waits for nothing but itself). */
#define WORD_TIMEOUT_MS 10000u

/* One aligned 4-byte copy between host and device, on the current
 * context's word stream (non-blocking: never ordered with the legacy
 * stream or any other; a stream of its own, created and destroyed around
 * the copy, where the context has no kctx stream), in the relaxed capture
 * mode (legal during another thread's global capture). The copy is waited
 * for with a bounded poll of that stream: the host buffer must outlive the
 * copy, and platform.h asks a write to be visible at once. That poll is
 * the one stream query a launch's failure path makes (docs/cuda.md, "K19
 * on failure paths"); it never queries a caller's or a capturing stream. */
static int word_copy(kctx_pdevptr ptr, uint32_t *host, int to_device) {
    if (ptr % 4) {
        kctx__svc_msgf(0, "device word 0x%llx is not 4-byte aligned", (unsigned long long)ptr);
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUcontext ctx = NULL;
    int st = note(CU(cuCtxGetCurrent, &ctx), "cuCtxGetCurrent(word access)");
    if (st) return st;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    st = note(CU(cuThreadExchangeStreamCaptureMode, &mode), "cuThreadExchangeStreamCaptureMode");
    if (st) return st;
    CUstream s = NULL;
    pthread_mutex_lock(&g_home_lock);
    int home = home_find(ctx);
    if (home >= 0) {
        g_homes[home].refs++; /* the stream outlives this access */
        s = g_homes[home].s;
    }
    pthread_mutex_unlock(&g_home_lock);
    if (home < 0)
        st = note(CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING), "cuStreamCreate(word access)");
    if (!st) {
        st = to_device ? note(CU(cuMemcpyHtoDAsync, (CUdeviceptr)ptr, host, 4, s),
                              "cuMemcpyHtoDAsync(device word)")
                       : note(CU(cuMemcpyDtoHAsync, host, (CUdeviceptr)ptr, 4, s),
                              "cuMemcpyDtoHAsync(device word)");
        /* the copy reads or writes `host`: it must be done before we return */
        int wst = poll_stream(s, WORD_TIMEOUT_MS, "cuStreamQuery(device word)");
        if (!st) st = wst;
        /* The access is done either way: a stream that cannot be destroyed
         * now goes to the grave (destroyed at the next stream op). */
        if (home < 0) {
            if (CU(cuStreamDestroy, s) != CUDA_SUCCESS) {
                pthread_mutex_lock(&g_home_lock);
                grave_add(s);
                pthread_mutex_unlock(&g_home_lock);
            }
        } else {
            pthread_mutex_lock(&g_home_lock);
            if (home_release(home) != CUDA_SUCCESS) {
                /* the context's last kctx stream went during the access:
                 * the word stream is nobody's now */
                grave_add(g_homes[home].s);
                g_homes[home] = (word_home){NULL, NULL, 0};
            }
            pthread_mutex_unlock(&g_home_lock);
        }
    }
    /* The thread's mode is the framework's: a failed restore is tried once
     * more before it is reported. */
    CUstreamCaptureMode back = mode;
    int rst = CU(cuThreadExchangeStreamCaptureMode, &back);
    if (rst != CUDA_SUCCESS) back = mode, rst = CU(cuThreadExchangeStreamCaptureMode, &back);
    if (!st) st = note(rst, "cuThreadExchangeStreamCaptureMode(restore)");
    return st;
}

static int a_atomic_read_u32(kctx_pdevptr p, uint32_t *v) {
    uint32_t w = 0;
    int st = word_copy(p, &w, 0);
    if (!st) *v = w;
    return st;
}
static int a_atomic_write_u32(kctx_pdevptr p, uint32_t v) { return word_copy(p, &v, 1); }

/* ---- modules and kernels ---------------------------------------------------- */

static int a_module_load(const void *bytes, size_t size, kctx_pmodule *m) {
    (void)size; /* the driver reads the image's own header */
    CUmodule h = NULL;
    const int programs = bytes == (const void *)kctx_rt_cuda_programs;
    int st = note(CU(cuModuleLoadData, &h, bytes),
                  programs ? "cuModuleLoadData(kctx's runtime programs)" : "cuModuleLoadData");
    if (!st) *m = (kctx_pmodule)(uintptr_t)h;
    if (st && programs && a_classify(st) == KCTX_PCLASS_BAD_MODULE) {
        /* This library's own fatbin has no code the device can run (its
         * KCTX_CUDA_ARCHS): the device is unsupported by this build, which
         * is not the fault of any image. The driver's code stays in the
         * message. */
        kctx__svc_msg_append(
            0, "; this libkctx's runtime fatbin has no code for this device (rebuild with its "
               "architecture in KCTX_CUDA_ARCHS)");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return st;
}
static int a_module_unload(kctx_pmodule m) {
    return note(CU(cuModuleUnload, (CUmodule)(uintptr_t)m), "cuModuleUnload");
}
static int a_module_function(kctx_pmodule m, const char *name, kctx_pfunction *fn) {
    CUfunction f = NULL;
    int st = CU(cuModuleGetFunction, &f, (CUmodule)(uintptr_t)m, name);
    if (st) {
        note(st, "cuModuleGetFunction");
        kctx__svc_msg_append(0, " (kernel '%s')", name);
        return st;
    }
    *fn = (kctx_pfunction)(uintptr_t)f;
    return CUDA_SUCCESS;
}

/* The kernel ABI of kctx/cuda.h: one fixed-size by-value block. */
static int a_launch(kctx_pstream s, kctx_pfunction fn, kctx_ptarget target, uint32_t block_dim,
                    const void *params, size_t size) {
    if (size > KCTX_CUDA_PARAMS_SIZE) {
        kctx__svc_msgf(0, "parameter block of %zu bytes exceeds %u (kctx/cuda.h)", size,
                       KCTX_CUDA_PARAMS_SIZE);
        return CUDA_ERROR_INVALID_VALUE;
    }
    kctx_cuda_params block;
    if (size) memcpy(block.bytes, params, size);
    memset(block.bytes + size, 0, sizeof block.bytes - size);
    size_t bytes = sizeof block;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &block, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                     CU_LAUNCH_PARAM_END};
    const int cpu = target == KCTX_PTARGET_AICPU;
    return note(CU(cuLaunchKernel, (CUfunction)(uintptr_t)fn, cpu ? 1u : block_dim, 1, 1,
                   cpu ? 1u : KCTX_CUDA_TASK_THREADS, 1, 1, 0, AS_STREAM(s), NULL, extra),
                "cuLaunchKernel");
}

/* ---- capture ---------------------------------------------------------------- */

static int a_exchange_capture_mode(kctx_pcapture_mode *mode) {
    CUstreamCaptureMode m = (CUstreamCaptureMode)*mode;
    int st = note(CU(cuThreadExchangeStreamCaptureMode, &m), "cuThreadExchangeStreamCaptureMode");
    if (!st) *mode = (kctx_pcapture_mode)m;
    return st;
}

/* A graph lifetime hook as a user object: its destructor runs once the
 * graph (which holds the only reference, moved to it) and everything made
 * from it are gone. */
typedef struct hook {
    kctx_phook_fn fn;
    void *user;
    _Atomic int cancelled; /* the attach failed: the destructor only frees */
} hook;

static void CUDA_CB hook_destroy(void *p) {
    hook *h = p;
    if (!atomic_load(&h->cancelled)) h->fn(h->user);
    free(h);
}

static int a_graph_attach_hook(kctx_pgraph g, kctx_phook_fn fn, void *user) {
    hook *h = malloc(sizeof *h);
    if (!h) {
        kctx__svc_msgf(0, "graph lifetime hook: out of host memory");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->fn = fn;
    h->user = user;
    atomic_init(&h->cancelled, 0);
    CUuserObject o = NULL;
    int st = CU(cuUserObjectCreate, &o, h, hook_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
    if (st) {
        free(h);
        return note(st, "cuUserObjectCreate");
    }
    st = CU(cuGraphRetainUserObject, (CUgraph)(uintptr_t)g, o, 1, CU_GRAPH_USER_OBJECT_MOVE);
    if (st) {
        note(st, "cuGraphRetainUserObject");
        atomic_store(&h->cancelled, 1);
        (void)CU(cuUserObjectRelease, o, 1); /* frees h (at once or later) */
    }
    return st;
}

static const kctx_platform_ops k_ops = {
    .size = sizeof(kctx_platform_ops),
    .version = KCTX_PLATFORM_VERSION,
    .classify = a_classify,
    .status_name = a_status_name,
    .last_message = a_last_message,
    .device_count = a_device_count,
    .device_info = a_device_info,
    .stream_create = a_stream_create,
    .stream_destroy = a_stream_destroy,
    .stream_sync = a_stream_sync,
    .stream_query = a_stream_query,
    .stream_info = a_stream_info,
    .event_create = a_event_create,
    .event_destroy = a_event_destroy,
    .event_record = a_event_record,
    .stream_wait_event = a_stream_wait_event,
    .mem_alloc = a_mem_alloc,
    .mem_free = a_mem_free,
    .memcpy_htod_async = a_memcpy_htod_async,
    .memset_async = a_memset_async,
    .memcpy_dtoh_async = a_memcpy_dtoh_async,
    .atomic_read_u32 = a_atomic_read_u32,
    .atomic_write_u32 = a_atomic_write_u32,
    .module_load = a_module_load,
    .module_unload = a_module_unload,
    .module_function = a_module_function,
    .launch = a_launch,
    .current_device = a_current_device,
    .device_epoch = NULL,     /* no epoch: quarantine is terminal (K30) */
    .mem_range_check = NULL,  /* no cheap range lookup */
    .function_address = NULL, /* HOST_ORDERED only */
    .exchange_capture_mode = a_exchange_capture_mode,
    .graph_attach_hook = a_graph_attach_hook,
    .bound_device = NULL, /* CUDA has a thread-current context */
};

static kctx_platform_desc g_desc;
static kctx_platform_entry g_entry;
static pthread_once_t g_desc_once = PTHREAD_ONCE_INIT;

static void desc_init(void) {
    g_desc = (kctx_platform_desc){
        .size = sizeof(kctx_platform_desc),
        .version = KCTX_PLATFORM_VERSION,
        .name = "cuda",
        .ops = &k_ops,
        .variant_kind = KCTX_VARIANT_CUDA_FATBIN,
        .programs = kctx_rt_cuda_programs,
        .programs_size = kctx_rt_cuda_programs_size,
        .strategies = KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED),
        .default_strategy = KCTX_STRATEGY_HOST_ORDERED,
        .max_params_size = KCTX_CUDA_PARAMS_SIZE,
        .has_capture = 1,
        .has_null_stream = 1, /* 0 (legacy) and CU_STREAM_PER_THREAD, eager only */
        .has_epoch = 0,
        .can_check_ranges = 0,
    };
    g_entry = (kctx_platform_entry){
        .size = sizeof(kctx_platform_entry),
        .version = KCTX_PLATFORM_VERSION,
        .name = "cuda",
        .available = a_available,
        .desc = &g_desc,
        .lifecycle = NULL, /* program mode is not offered on CUDA */
    };
}

const kctx_platform_entry *kctx_cuda_platform_entry(void) {
    pthread_once(&g_desc_once, desc_init);
    return &g_entry;
}

kctx_status kctx_cuda_driver_calls(const char *entry, uint64_t *count) {
    if (!entry || !count)
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT, "kctx_cuda_driver_calls: %s is NULL",
                              entry ? "count" : "entry");
    long long n = kctx__loader_calls(&g_ld, entry);
    if (n >= 0) {
        *count = (uint64_t)n;
        return KCTX_OK;
    }
    return kctx__svc_fail(
        KCTX_NOT_FOUND, "kctx_cuda_driver_calls: '%s' is not an entry of the cuda adapter's table",
        entry);
}
