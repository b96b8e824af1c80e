/*
 * double.c — an ACL (Ascend CANN runtime) driver test double (tests only,
 * never installed): <build>/platform/acl/double/libascendcl.so, a lookalike
 * of libascendcl built on the sim (platform/sim/include/kctx/sim.h), so that the acl
 * platform's adapter and an ACL framework's side run without an NPU:
 * KCTX_ACL_LIBRARY=<this file> makes them load it instead of libascendcl.so.
 * docs/acl.md, "The driver double", is its user's description.
 *
 * It exports the ACL entries of platform/acl/acl_abi.h by their ACL names
 * (plain C functions, resolved with dlsym), with the types declared there,
 * ACL's codes, and CANN's documented capture rules (acl-platform.md §A.3,
 * §A.7) where they differ from the sim's, which are CUDA's. The double keeps
 * its own state where the two differ and checks CANN's rule before the sim
 * sees the call, so that a rule CANN answers with a refusal refuses without
 * invalidating the capture (the sim would invalidate it):
 *
 *   107024  a capturing stream waits (aclrtStreamWaitEvent) on an event whose
 *           last record is outside this capture (before it, in an ended
 *           capture); aclrtStreamWaitEventWithFlag(KACL_EVENT_WAIT_EXTERNAL,
 *           timeout 0) is the escape: the wait is captured and, on replay,
 *           waits for the event's records issued by then (below).
 *   107028  aclrtQueryEventStatus / aclrtSynchronizeEvent[WithTimeout] on an
 *           event last recorded in an active capture.
 *   107027  aclrtDestroyStream[Force], aclrtStreamQuery,
 *           aclrtSynchronizeStream[WithTimeout] of a capturing stream.
 *   107025  aclmdlRICaptureEnd with a stream that joined the capture and was
 *           not joined back (no model).
 *   107031  the default stream (NULL) in a capture: aclmdlRICaptureBegin on
 *           it, or it joining one (a wait on an event recorded in a capture).
 *   507903  aclmdlRICaptureEnd of an invalidated capture (no model).
 *   207000  aclrtRecordEvent into a capture of, or a capturing stream's
 *           wait on, an event of the non-Ex path (aclrtCreateEvent,
 *           aclrtCreateEventWithFlag) not created KACL_EVENT_EXTERNAL.
 *   507000  a stream created with KACL_STREAM_PERSISTENT or
 *           KACL_STREAM_CPU_SCHEDULE (the "AICPU/persistent-class" flags;
 *           the ACL-to-runtime flag mapping is inferred) in a capture:
 *           aclmdlRICaptureBegin on it, or it joining one.
 *   107030  aclrtMemcpy / aclrtMemset while a capture restricts the thread:
 *           the thread's mode (aclmdlRICaptureThreadExchangeMode, GLOBAL at
 *           first) is GLOBAL and a GLOBAL capture is active anywhere, or the
 *           thread began a non-RELAXED capture. RELAXED is never restricted.
 *
 * Which errors invalidate a capture is not documented for CANN. The
 * double's choice (the sim's, CUDA's): the illegal-in-capture calls that the
 * sim refuses itself, 107027 for a query or sync and 107028, invalidate
 * their capture (its end gives 507903); the refusals checked by the double
 * (107024, 107031, 207000, 507000, 107030, 107027 for a destroy) leave it
 * as it was.
 *
 * Models (aclmdlRI): one per capture, made at aclmdlRICaptureBegin (so that
 * aclmdlRICaptureGetInfo returns it during the capture) and returned by a
 * successful end, which instantiates the captured sim graph. aclmdlRIGetId
 * gives the lowest id no live model has: ids are reused after destroy (as
 * HCCL notes CANN's are). aclmdlRIDestroyRegisterCallback's callbacks run
 * once: after aclmdlRIDestroy, when every replay enqueued before it has
 * completed (at once when none is pending; otherwise on a sim thread,
 * where the callback must not call this API), in registration order.
 * Open question D.1 of acl-platform.md (does the callback fire for a capture
 * discarded at its end, 507903 or 107025?) has a switch:
 * KCTX_ACL_DOUBLE_DISCARD_FIRES (read at each such end) — unset or "1": the
 * callbacks registered during the capture run at that end, before it
 * returns; "0": they never run. Either way the model's handle is gone.
 *
 * Binaries: aclrtBinaryLoadFromData takes an x86-64 ELF sim kernel module
 * (what kctx's sim-built runtime programs and the callable images' ascend_bin
 * variants are here); anything else is refused (107000: the double runs sim
 * modules only). KCTX_ACL_DOUBLE_REFUSE_RT=1 plays a real runtime: a
 * module holding kctx's runtime programs (it names kctx_rt_ho_acquire) is
 * refused with 107000, so that kernel init can be shown to fail the way it
 * would on an NPU without CANN-built runtime programs.
 * aclrtBinaryGetFunction gives an AICore function, aclrtRegisterCpuFunc an
 * AICPU one (its kernelName is not used); a launch of an AICPU function
 * must have 1 block. Every launch runs through the double's device program
 * (tests/common/double_call.c), which absorbs a kernel's reported error, as a kctx task's
 * failure lives in its error word and the stream runs on.
 *
 * What the double cannot follow (docs/acl.md): AICore/AICPU exceptions
 * (507015/507018: a sim kernel cannot trap; only a lost sim device, 507899,
 * is sticky); aclrtSetStreamFailureMode is accepted and has no effect;
 * pageable vs pinned host memory (every async copy is safe in a capture);
 * 107024 case (b) (a wait on a never-recorded event is a no-op, not an error
 * at capture end); 107041; device attributes (aclrtGetDeviceInfo gives
 * 207000: the attribute ids are not in the facts); a thread always has a
 * current device (the sim's, device 0 at first) and a context.
 *
 * Test hooks (not ACL): kacl_double_calls(name) — the calls of entry `name`
 * received so far (every exported entry is counted, failed calls too), or
 * UINT64_MAX for a name the double does not export; kacl_double_calls_reset;
 * kacl_double_thread_calls() — every entry served to the calling thread
 * (K28: a kernel context's destroy is served none).
 */
#include "acl_abi.h"

#include "kctx_test_common.h" /* ktc_read_file */
#include <kctx/sim.h>

#include <elf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

/* ---- call counters (test hook) --------------------------------------------- */

// clang-format off
#define D_ENTRIES(X)                                                                             \
    X(aclInit) X(aclFinalize) X(aclrtSetDevice) X(aclrtResetDevice) X(aclrtResetDeviceForce)     \
    X(aclrtSetCurrentContext) X(aclrtCreateContext) X(aclrtDestroyContext)                       \
    X(aclrtSynchronizeDevice) X(aclrtSynchronizeDeviceWithTimeout)                               \
    X(aclrtSetExceptionInfoCallback)                                                             \
    X(aclrtGetDevice) X(aclrtGetCurrentContext) X(aclrtGetDeviceCount) X(aclrtGetSocName)        \
    X(aclrtGetDeviceInfo) X(aclrtQueryDeviceStatus) X(aclrtGetStreamResLimit)                    \
    X(aclrtCreateStream) X(aclrtCreateStreamWithConfig) X(aclrtDestroyStream)                    \
    X(aclrtDestroyStreamForce) X(aclrtSynchronizeStream) X(aclrtSynchronizeStreamWithTimeout)    \
    X(aclrtStreamQuery) X(aclrtSetStreamFailureMode)                                             \
    X(aclrtCreateEvent) X(aclrtCreateEventWithFlag) X(aclrtCreateEventExWithFlag)                \
    X(aclrtDestroyEvent) X(aclrtRecordEvent) X(aclrtRecordEventWithFlag)                         \
    X(aclrtStreamWaitEvent) X(aclrtStreamWaitEventWithFlag) X(aclrtQueryEventStatus)             \
    X(aclrtSynchronizeEvent) X(aclrtSynchronizeEventWithTimeout)                                 \
    X(aclrtMalloc) X(aclrtFree) X(aclrtMemcpy) X(aclrtMemset) X(aclrtMemcpyAsync)                \
    X(aclrtMemsetAsync)                                                                          \
    X(aclrtBinaryLoadFromData) X(aclrtBinaryUnLoad) X(aclrtBinaryGetFunction)                    \
    X(aclrtRegisterCpuFunc) X(aclrtGetFunctionAddr) X(aclrtLaunchKernelWithHostArgs)             \
    X(aclrtLaunchKernel) X(aclrtLaunchHostFunc)                                                  \
    X(aclmdlRICaptureBegin) X(aclmdlRICaptureEnd) X(aclmdlRICaptureGetInfo)                      \
    X(aclmdlRICaptureThreadExchangeMode) X(aclmdlRIExecuteAsync) X(aclmdlRIExecute)              \
    X(aclmdlRIDestroy) X(aclmdlRIGetId) X(aclmdlRIDestroyRegisterCallback)                       \
    X(aclmdlRIDestroyUnregisterCallback)                                                         \
    X(aclGetRecentErrMsg) X(aclrtGetLastError) X(aclrtPeekAtLastError)                           \
    X(aclrtExceptionInfoCallbackRegister) X(aclrtExceptionInfoCallbackUnregister)
// clang-format on

#define C_ENUM_(name) C_##name,
enum {
    D_ENTRIES(C_ENUM_) C_COUNT_
};
#undef C_ENUM_
#define C_NAME_(name) #name,
static const char *const k_counted[C_COUNT_] = {D_ENTRIES(C_NAME_)};
#undef C_NAME_
static _Atomic uint64_t g_counts[C_COUNT_];
static _Thread_local uint64_t tl_served; /* entries served to this thread */
/* The first statement of every exported ACL entry (D_ENTRIES). */
#define COUNT(name) \
    (tl_served++, atomic_fetch_add_explicit(&g_counts[C_##name], 1, memory_order_relaxed))

API uint64_t kacl_double_calls(const char *name);
API uint64_t kacl_double_calls(const char *name) {
    for (int i = 0; name && i < C_COUNT_; i++)
        if (strcmp(k_counted[i], name) == 0) return atomic_load(&g_counts[i]);
    return UINT64_MAX;
}
API void kacl_double_calls_reset(void);
API void kacl_double_calls_reset(void) {
    for (int i = 0; i < C_COUNT_; i++) atomic_store(&g_counts[i], 0);
}
/* Entries of D_ENTRIES served to the calling thread so far, failed and
 * refused calls too (K28's ruler: a kernel context's destroy calls none).
 * Not reset by kacl_double_calls_reset: a test compares two readings. */
API uint64_t kacl_double_thread_calls(void);
API uint64_t kacl_double_thread_calls(void) { return tl_served; }

/* ---- the thread's last error ------------------------------------------------ */

static _Thread_local char tl_msg[320];
static _Thread_local int tl_has_msg;
static _Thread_local kacl_error tl_last;

static kacl_error fail(kacl_error code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static kacl_error fail(kacl_error code, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(tl_msg, sizeof tl_msg, "EE9999: [ACL driver double] %s (error %d)", what, code);
    tl_has_msg = 1;
    tl_last = code;
    return code;
}

/* A sim status as an ACL code; `capture` is the code of the call's
 * illegal-in-capture refusal (the sim's SIM_CAPTURE_UNSUPPORTED). */
static kacl_error code_of(sim_status st, kacl_error capture) {
    switch (st) {
    case SIM_OK:
        return KACL_SUCCESS;
    case SIM_INVALID_VALUE:
    case SIM_INVALID_HANDLE:
    case SIM_INVALID_ADDRESS:
    case SIM_DOUBLE_FREE:
    case SIM_FOREIGN_FREE:
    case SIM_NOT_FOUND:
    case SIM_INVALID_MODULE:
        return KACL_ERROR_RT_PARAM_INVALID;
    case SIM_OUT_OF_MEMORY:
        return KACL_ERROR_RT_MEMORY_ALLOCATION;
    case SIM_DEVICE_LOST:
        return KACL_ERROR_RT_DRV_INTERNAL_ERROR;
    case SIM_NOT_SUPPORTED:
    case SIM_NOT_PERMITTED:
        return KACL_ERROR_RT_FEATURE_NOT_SUPPORT;
    case SIM_TIMEOUT:
        return KACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
    case SIM_CAPTURE_UNSUPPORTED:
        return capture;
    case SIM_CAPTURE_INVALIDATED:
        return KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED;
    case SIM_CAPTURE_MERGE:
        return KACL_ERROR_STREAM_CAPTURE_CONFLICT;
    case SIM_CAPTURE_UNMATCHED:
        return KACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED;
    case SIM_CAPTURE_UNJOINED:
        return KACL_ERROR_RT_STREAM_UNJOINED;
    case SIM_CAPTURE_ISOLATION:
        return KACL_ERROR_RT_CAPTURE_DEPENDENCY;
    case SIM_CAPTURED_EVENT:
        return KACL_ERROR_RT_EVENT_CAPTURED;
    case SIM_CAPTURE_WRONG_THREAD:
        return KACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD;
    default:
        return KACL_ERROR_RT_FAILURE;
    }
}

/* Map a sim status (its message kept for aclGetRecentErrMsg). */
static kacl_error sim_done(sim_status st, kacl_error capture, const char *what) {
    if (st == SIM_OK) return KACL_SUCCESS;
    return fail(code_of(st, capture), "%s: %s", what, sim_last_error_message());
}
#define DONE(st, what) sim_done((st), KACL_ERROR_RT_FEATURE_NOT_SUPPORT, (what))

/* ---- objects ------------------------------------------------------------------ */

#define MAX_DEVICES 64
#define REFUSED_FLAGS (KACL_STREAM_PERSISTENT | KACL_STREAM_CPU_SCHEDULE)

typedef struct dstream {
    sim_stream h;
    uint32_t flags;
    int is_default;
} dstream;

typedef struct devent {
    sim_event h;
    int ex;            /* made by aclrtCreateEventExWithFlag */
    uint32_t flags;    /* creation flags */
    int recorded;      /* recorded at least once */
    uint64_t last_cap; /* sim capture id of the last record, 0: outside any capture */
    /* external-wait bookkeeping (g_ext_lock): records issued outside a
     * capture, and how many of them have executed */
    uint64_t issued, done;
    _Atomic int refs;
} devent;

typedef struct cbreg {
    kacl_callback fn;
    void *user;
} cbreg;

typedef struct dmodel {
    struct dmodel *next; /* g_models: every live model */
    uint64_t cid;        /* the sim capture id (while capturing) */
    int capturing;
    int mode;
    const void *owner; /* the beginning thread's token */
    dstream *origin;
    sim_graph graph;
    sim_graph_exec exec;
    uint32_t id;
    cbreg *cbs;
    size_t ncbs, capcbs;
    devent **ext; /* events of captured external waits (one reference each) */
    size_t n_ext, capext;
    _Atomic int refs; /* 1 while the handle lives, +1 per replay pending */
} dmodel;

typedef struct dbin {
    sim_module m;
    struct dfunc **fns;
    size_t nfns, capfns;
} dbin;

typedef struct dfunc {
    sim_function fn;
    int cpu;
} dfunc;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static dmodel *g_models;
static dstream g_default[MAX_DEVICES];
static char g_ctx[MAX_DEVICES];     /* device d's one context is &g_ctx[d] (never written) */
static _Thread_local char tl_token; /* the thread's identity (its address) */
static _Thread_local int tl_mode;   /* the thread's capture mode (GLOBAL) */
static _Thread_local sim_capture_mode relax_m_; /* RELAXED's saved mode */
static pthread_mutex_t g_ext_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_ext_cond = PTHREAD_COND_INITIALIZER;

static sim_status set_default_stream(int d) {
    sim_status st = SIM_OK;
    if (!g_default[d].h) {
        st = sim_stream_create(&g_default[d].h);
        g_default[d].is_default = 1;
    }
    return st;
}

/* The dstream a kacl_stream names (NULL: the current device's default). */
static kacl_error stream_of(kacl_stream s, dstream **out) {
    if (s) {
        *out = s;
        return KACL_SUCCESS;
    }
    int d = 0;
    sim_status st = sim_get_device(&d);
    if (!st && (d < 0 || d >= MAX_DEVICES)) st = SIM_INVALID_VALUE;
    if (!st) {
        pthread_mutex_lock(&g_lock);
        st = set_default_stream(d);
        pthread_mutex_unlock(&g_lock);
    }
    if (st) return DONE(st, "the default stream");
    *out = &g_default[d];
    return KACL_SUCCESS;
}
#define STREAM(var, s)                        \
    dstream *var = NULL;                      \
    do {                                      \
        kacl_error e_ = stream_of((s), &var); \
        if (e_) return e_;                    \
    } while (0)

/* The stream's capture: status (sim) and id. */
static sim_status cap_info(const dstream *s, sim_capture_status *cs, uint64_t *cid) {
    return sim_stream_get_capture_info(s->h, cs, cid, NULL);
}

/* The live capturing model with sim capture id `cid` (g_lock held). */
static dmodel *capture_model(uint64_t cid) {
    for (dmodel *m = g_models; m; m = m->next)
        if (m->capturing && m->cid == cid) return m;
    return NULL;
}

/* RELAXED(call): `call` with the thread's sim capture mode RELAXED (the sim restricts
 * calls CANN does not: malloc, free, module load and unload). */
static sim_capture_mode relax(void) {
    sim_capture_mode m = SIM_CAPTURE_MODE_RELAXED;
    (void)sim_thread_exchange_capture_mode(&m);
    return m;
}
static sim_status unrelax(sim_capture_mode m, sim_status st) {
    (void)sim_thread_exchange_capture_mode(&m);
    return st;
}
#define RELAXED(call) (relax_m_ = relax(), unrelax(relax_m_, (call)))

/* Does a capture restrict this thread's unsafe calls (107030)? */
static int restricted(void) {
    if (tl_mode == KACL_MODEL_RI_CAPTURE_MODE_RELAXED) return 0;
    int r = 0;
    pthread_mutex_lock(&g_lock);
    for (dmodel *m = g_models; m && !r; m = m->next) {
        if (!m->capturing) continue;
        int own = m->owner == &tl_token && m->mode != KACL_MODEL_RI_CAPTURE_MODE_RELAXED;
        int global = tl_mode == KACL_MODEL_RI_CAPTURE_MODE_GLOBAL &&
                     m->mode == KACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
        r = own || global;
    }
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* ---- lifecycle (never called by kernel mode; counted) ----------------------- */

static sim_status call_fn(int device, sim_function *fn);
API kacl_error aclInit(const char *config);
API kacl_error aclInit(const char *config) {
    (void)config;
    COUNT(aclInit);
    sim_status st = sim_init();
    /* the double's device program on every device now (as the CUDA double
     * does at cuInit), so that no later launch adds a module a framework's
     * leak check would count */
    int n = 0;
    if (!st) st = sim_device_count(&n);
    for (int d = 0; !st && d < n && d < MAX_DEVICES; d++) {
        sim_function fn = 0;
        st = call_fn(d, &fn);
    }
    return DONE(st, "aclInit");
}
API kacl_error aclFinalize(void);
API kacl_error aclFinalize(void) {
    COUNT(aclFinalize);
    return DONE(sim_finalize(), "aclFinalize");
}
API kacl_error aclrtSetDevice(int32_t d);
API kacl_error aclrtSetDevice(int32_t d) {
    COUNT(aclrtSetDevice);
    return DONE(sim_set_device(d), "aclrtSetDevice");
}
static kacl_error reset_device(int32_t d) {
    int cur = 0;
    sim_status st = sim_get_device(&cur);
    if (!st && cur != d) st = sim_set_device(d);
    if (!st) {
        st = sim_device_reset();
        if (d >= 0 && d < MAX_DEVICES) {
            pthread_mutex_lock(&g_lock);
            g_default[d].h = 0; /* the reset destroyed it */
            pthread_mutex_unlock(&g_lock);
        }
    }
    if (cur != d) (void)sim_set_device(cur);
    return DONE(st, "aclrtResetDevice");
}
API kacl_error aclrtResetDevice(int32_t d);
API kacl_error aclrtResetDevice(int32_t d) {
    COUNT(aclrtResetDevice);
    return reset_device(d);
}
API kacl_error aclrtResetDeviceForce(int32_t d);
API kacl_error aclrtResetDeviceForce(int32_t d) {
    COUNT(aclrtResetDeviceForce);
    return reset_device(d);
}
API kacl_error aclrtSetCurrentContext(kacl_context c);
API kacl_error aclrtSetCurrentContext(kacl_context c) {
    COUNT(aclrtSetCurrentContext);
    if (!c) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtSetCurrentContext: NULL context");
    return DONE(sim_set_device((int)((char *)c - g_ctx)), "aclrtSetCurrentContext");
}
API kacl_error aclrtCreateContext(kacl_context *c, int32_t d);
API kacl_error aclrtCreateContext(kacl_context *c, int32_t d) {
    COUNT(aclrtCreateContext);
    if (!c || d < 0 || d >= MAX_DEVICES)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtCreateContext: bad argument");
    *c = &g_ctx[d]; /* the double has one context per device */
    return DONE(sim_set_device(d), "aclrtCreateContext");
}
API kacl_error aclrtDestroyContext(kacl_context c);
API kacl_error aclrtDestroyContext(kacl_context c) {
    (void)c;
    COUNT(aclrtDestroyContext);
    return KACL_SUCCESS;
}
API kacl_error aclrtSynchronizeDevice(void);
API kacl_error aclrtSynchronizeDevice(void) {
    COUNT(aclrtSynchronizeDevice);
    return sim_done(sim_device_synchronize(), KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
                    "aclrtSynchronizeDevice");
}
API kacl_error aclrtSynchronizeDeviceWithTimeout(int32_t ms);
API kacl_error aclrtSynchronizeDeviceWithTimeout(int32_t ms) {
    (void)ms; /* the sim has no bounded device-wide wait */
    COUNT(aclrtSynchronizeDeviceWithTimeout);
    return sim_done(sim_device_synchronize(), KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
                    "aclrtSynchronizeDeviceWithTimeout");
}
API kacl_error aclrtSetExceptionInfoCallback(kacl_exception_callback fn);
API kacl_error aclrtSetExceptionInfoCallback(kacl_exception_callback fn) {
    (void)fn; /* the double raises no exceptions */
    COUNT(aclrtSetExceptionInfoCallback);
    return KACL_SUCCESS;
}

/* ---- devices and context ------------------------------------------------------ */

API kacl_error aclrtGetDevice(int32_t *d);
API kacl_error aclrtGetDevice(int32_t *d) {
    COUNT(aclrtGetDevice);
    if (!d) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtGetDevice: NULL");
    int dev = 0;
    sim_status st = sim_get_device(&dev);
    if (!st) *d = dev;
    return DONE(st, "aclrtGetDevice");
}
API kacl_error aclrtGetCurrentContext(kacl_context *c);
API kacl_error aclrtGetCurrentContext(kacl_context *c) {
    COUNT(aclrtGetCurrentContext);
    if (!c) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtGetCurrentContext: NULL");
    int d = 0;
    sim_status st = sim_get_device(&d);
    if (st) return DONE(st, "aclrtGetCurrentContext");
    if (d < 0 || d >= MAX_DEVICES) return fail(KACL_ERROR_RT_CONTEXT_NULL, "no context");
    *c = &g_ctx[d];
    return KACL_SUCCESS;
}
API kacl_error aclrtGetDeviceCount(uint32_t *n);
API kacl_error aclrtGetDeviceCount(uint32_t *n) {
    COUNT(aclrtGetDeviceCount);
    if (!n) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtGetDeviceCount: NULL");
    int c = 0;
    sim_status st = sim_device_count(&c);
    if (!st) *n = (uint32_t)c;
    return DONE(st, "aclrtGetDeviceCount");
}
API const char *aclrtGetSocName(void);
API const char *aclrtGetSocName(void) {
    COUNT(aclrtGetSocName);
    return "Ascend-sim (ACL driver double)";
}
API kacl_error aclrtGetDeviceInfo(uint32_t d, int attr, int64_t *v);
API kacl_error aclrtGetDeviceInfo(uint32_t d, int attr, int64_t *v) {
    (void)d;
    (void)v;
    COUNT(aclrtGetDeviceInfo);
    return fail(KACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                "aclrtGetDeviceInfo: attribute %d: the double knows no device attribute ids "
                "(use aclrtGetStreamResLimit)",
                attr);
}
API kacl_error aclrtQueryDeviceStatus(int32_t d, int *status);
API kacl_error aclrtQueryDeviceStatus(int32_t d, int *status) {
    COUNT(aclrtQueryDeviceStatus);
    if (!status) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtQueryDeviceStatus: NULL");
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    sim_status st = sim_device_get_props(d, &p);
    if (st == SIM_DEVICE_LOST) {
        *status = KACL_RT_DEVICE_STATUS_ABNORMAL;
        return KACL_SUCCESS;
    }
    if (!st) *status = KACL_RT_DEVICE_STATUS_NORMAL;
    return DONE(st, "aclrtQueryDeviceStatus");
}
/* Types (inferred, not in the facts): 0 the AICore (cube) cores, 1 the
 * vector cores; the sim has one kind, its AICore count, for both. */
API kacl_error aclrtGetStreamResLimit(kacl_stream s, int type, uint32_t *v);
API kacl_error aclrtGetStreamResLimit(kacl_stream s, int type, uint32_t *v) {
    COUNT(aclrtGetStreamResLimit);
    STREAM(h, s);
    if (!v || type < 0 || type > 1)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtGetStreamResLimit: type %d", type);
    int d = 0;
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    sim_status st = sim_stream_get_device(h->h, &d);
    if (!st) st = sim_device_get_props(d, &p);
    if (!st) *v = (uint32_t)p.aicore_count;
    return DONE(st, "aclrtGetStreamResLimit");
}

/* ---- streams -------------------------------------------------------------------- */

static kacl_error create_stream(kacl_stream *s, uint32_t priority, uint32_t flag) {
    if (!s) return fail(KACL_ERROR_RT_PARAM_INVALID, "create stream: NULL");
    if (priority > 7) return fail(KACL_ERROR_RT_PARAM_INVALID, "priority %u not 0..7", priority);
    dstream *d = calloc(1, sizeof *d);
    if (!d) return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "create stream: out of host memory");
    sim_status st = sim_stream_create(&d->h);
    if (st) {
        free(d);
        return sim_done(st, KACL_ERROR_RT_FEATURE_NOT_SUPPORT, "create stream");
    }
    d->flags = flag;
    *s = d;
    return KACL_SUCCESS;
}
API kacl_error aclrtCreateStream(kacl_stream *s);
API kacl_error aclrtCreateStream(kacl_stream *s) {
    COUNT(aclrtCreateStream);
    return create_stream(s, 0, 0);
}
API kacl_error aclrtCreateStreamWithConfig(kacl_stream *s, uint32_t priority, uint32_t flag);
API kacl_error aclrtCreateStreamWithConfig(kacl_stream *s, uint32_t priority, uint32_t flag) {
    COUNT(aclrtCreateStreamWithConfig);
    return create_stream(s, priority, flag);
}

static kacl_error destroy_stream(kacl_stream s, const char *what) {
    if (!s) return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: the default stream", what);
    dstream *d = s;
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    sim_status st = cap_info(d, &cs, NULL);
    if (st) return DONE(st, what);
    if (cs != SIM_CAPTURE_STATUS_NONE)
        return fail(KACL_ERROR_RT_STREAM_CAPTURED, "%s: Stream destruction of a capturing stream",
                    what);
    st = sim_stream_destroy(d->h);
    if (st) return DONE(st, what);
    free(d);
    return KACL_SUCCESS;
}
API kacl_error aclrtDestroyStream(kacl_stream s);
API kacl_error aclrtDestroyStream(kacl_stream s) {
    COUNT(aclrtDestroyStream);
    return destroy_stream(s, "aclrtDestroyStream");
}
API kacl_error aclrtDestroyStreamForce(kacl_stream s);
API kacl_error aclrtDestroyStreamForce(kacl_stream s) {
    COUNT(aclrtDestroyStreamForce);
    return destroy_stream(s, "aclrtDestroyStreamForce");
}
static kacl_error sync_stream(kacl_stream s, int32_t timeout_ms, const char *what) {
    STREAM(d, s);
    sim_status st = timeout_ms < 0 ? sim_stream_synchronize(d->h)
                                   : sim_stream_synchronize_timeout(d->h, (uint32_t)timeout_ms);
    return sim_done(st, KACL_ERROR_RT_STREAM_CAPTURED, what);
}
API kacl_error aclrtSynchronizeStream(kacl_stream s);
API kacl_error aclrtSynchronizeStream(kacl_stream s) {
    COUNT(aclrtSynchronizeStream);
    return sync_stream(s, -1, "aclrtSynchronizeStream");
}
API kacl_error aclrtSynchronizeStreamWithTimeout(kacl_stream s, int32_t ms);
API kacl_error aclrtSynchronizeStreamWithTimeout(kacl_stream s, int32_t ms) {
    COUNT(aclrtSynchronizeStreamWithTimeout);
    return sync_stream(s, ms, "aclrtSynchronizeStreamWithTimeout");
}
API kacl_error aclrtStreamQuery(kacl_stream s, int *status);
API kacl_error aclrtStreamQuery(kacl_stream s, int *status) {
    COUNT(aclrtStreamQuery);
    STREAM(d, s);
    if (!status) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtStreamQuery: NULL");
    sim_status st = sim_stream_query(d->h);
    if (st == SIM_NOT_READY) {
        *status = KACL_STREAM_STATUS_NOT_READY;
        return KACL_SUCCESS;
    }
    if (!st) *status = KACL_STREAM_STATUS_COMPLETE;
    return sim_done(st, KACL_ERROR_RT_STREAM_CAPTURED, "aclrtStreamQuery: Querying a stream");
}
API kacl_error aclrtSetStreamFailureMode(kacl_stream s, uint64_t mode);
API kacl_error aclrtSetStreamFailureMode(kacl_stream s, uint64_t mode) {
    COUNT(aclrtSetStreamFailureMode);
    if (!s || mode > KACL_STOP_ON_FAILURE)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtSetStreamFailureMode: bad argument");
    return KACL_SUCCESS; /* no effect: the double's kernels never fail their stream */
}

/* ---- events ---------------------------------------------------------------------- */

static kacl_error create_event(kacl_event *e, uint32_t flag, int ex, const char *what) {
    if (!e) return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: NULL", what);
    devent *d = calloc(1, sizeof *d);
    if (!d) return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of host memory", what);
    sim_status st = sim_event_create(
        &d->h, (flag & KACL_EVENT_TIME_LINE) ? SIM_EVENT_DEFAULT : SIM_EVENT_DISABLE_TIMING);
    if (st) {
        free(d);
        return DONE(st, what);
    }
    d->ex = ex;
    d->flags = flag;
    atomic_init(&d->refs, 1);
    *e = d;
    return KACL_SUCCESS;
}
static void event_put(devent *e) {
    if (atomic_fetch_sub(&e->refs, 1) == 1) free(e);
}
API kacl_error aclrtCreateEvent(kacl_event *e);
API kacl_error aclrtCreateEvent(kacl_event *e) {
    COUNT(aclrtCreateEvent);
    return create_event(e, KACL_EVENT_SYNC, 0, "aclrtCreateEvent");
}
API kacl_error aclrtCreateEventWithFlag(kacl_event *e, uint32_t flag);
API kacl_error aclrtCreateEventWithFlag(kacl_event *e, uint32_t flag) {
    COUNT(aclrtCreateEventWithFlag);
    return create_event(e, flag, 0, "aclrtCreateEventWithFlag");
}
API kacl_error aclrtCreateEventExWithFlag(kacl_event *e, uint32_t flag);
API kacl_error aclrtCreateEventExWithFlag(kacl_event *e, uint32_t flag) {
    COUNT(aclrtCreateEventExWithFlag);
    return create_event(e, flag, 1, "aclrtCreateEventExWithFlag");
}
API kacl_error aclrtDestroyEvent(kacl_event e);
API kacl_error aclrtDestroyEvent(kacl_event e) {
    COUNT(aclrtDestroyEvent);
    if (!e) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyEvent: NULL");
    devent *d = e;
    sim_status st = sim_event_destroy(d->h);
    if (st) return DONE(st, "aclrtDestroyEvent");
    event_put(d);
    return KACL_SUCCESS;
}

/* After each record outside a capture: the record has executed. */
static void record_done(void *user, sim_status status) {
    (void)status;
    devent *e = user;
    pthread_mutex_lock(&g_ext_lock);
    e->done++;
    pthread_cond_broadcast(&g_ext_cond);
    pthread_mutex_unlock(&g_ext_lock);
    event_put(e);
}

static kacl_error record(kacl_event ev, kacl_stream s, const char *what) {
    if (!ev) return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: NULL event", what);
    devent *e = ev;
    STREAM(d, s);
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    uint64_t cid = 0;
    sim_status st = cap_info(d, &cs, &cid);
    if (st) return DONE(st, what);
    if (cs != SIM_CAPTURE_STATUS_NONE) {
        if (d->flags & REFUSED_FLAGS)
            return fail(KACL_ERROR_RT_INTERNAL_ERROR,
                        "%s: a stream created with flags 0x%x cannot record in a capture", what,
                        d->flags);
        if (!e->ex && !(e->flags & KACL_EVENT_EXTERNAL))
            return fail(KACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        "%s: an event of the non-Ex create path cannot be recorded in a capture "
                        "(use aclrtCreateEventExWithFlag)",
                        what);
    }
    if (cs == SIM_CAPTURE_STATUS_NONE) {
        /* count the record for captured external waits: a host function
         * just before the record (in stream order its completion is the
         * record's point), so that the record stays the stream's last work
         * and a stream whose record a framework waited for is idle, as on
         * a real stream (a trailing host function made close after the
         * caller's sync see kctx's streams busy) */
        pthread_mutex_lock(&g_ext_lock);
        e->issued++;
        pthread_mutex_unlock(&g_ext_lock);
        atomic_fetch_add(&e->refs, 1);
        st = sim_launch_host_func(d->h, record_done, e);
        if (st) {
            record_done(e, SIM_OK); /* nothing to wait for then */
            return DONE(st, what);
        }
    }
    pthread_mutex_lock(&g_lock);
    st = sim_event_record(e->h, d->h);
    if (!st) {
        e->recorded = 1;
        e->last_cap = cs == SIM_CAPTURE_STATUS_NONE ? 0 : cid;
    }
    pthread_mutex_unlock(&g_lock);
    if (st) return DONE(st, what);
    return KACL_SUCCESS;
}
/* aclrtLaunchHostFunc (CANN 8.3+: a host task in stream order that blocks
 * the stream's later work until it returns; not inside a capture): the
 * function on the sim stream's thread. kctx never calls it; the acl
 * benchmarks hold a stream with it (platform/acl/bench). */
typedef struct host_op {
    void (*fn)(void *);
    void *user;
} host_op;

static void host_run(void *user, sim_status status) {
    (void)status;
    host_op *h = user;
    h->fn(h->user);
    free(h);
}

API kacl_error aclrtLaunchHostFunc(kacl_stream s, void (*fn)(void *), void *user);
API kacl_error aclrtLaunchHostFunc(kacl_stream s, void (*fn)(void *), void *user) {
    COUNT(aclrtLaunchHostFunc);
    if (!fn) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtLaunchHostFunc: fn is NULL");
    STREAM(d, s);
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    uint64_t cid = 0;
    sim_status st = cap_info(d, &cs, &cid);
    if (st) return DONE(st, "aclrtLaunchHostFunc");
    if (cs != SIM_CAPTURE_STATUS_NONE)
        return fail(KACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    "aclrtLaunchHostFunc: not supported while the stream is captured");
    host_op *op = malloc(sizeof *op);
    if (!op)
        return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtLaunchHostFunc: out of host memory");
    *op = (host_op){fn, user};
    st = sim_launch_host_func(d->h, host_run, op);
    if (st) free(op);
    return st ? DONE(st, "aclrtLaunchHostFunc") : KACL_SUCCESS;
}
API kacl_error aclrtRecordEvent(kacl_event e, kacl_stream s);
API kacl_error aclrtRecordEvent(kacl_event e, kacl_stream s) {
    COUNT(aclrtRecordEvent);
    return record(e, s, "aclrtRecordEvent");
}
API kacl_error aclrtRecordEventWithFlag(kacl_event e, kacl_stream s, uint32_t flag);
API kacl_error aclrtRecordEventWithFlag(kacl_event e, kacl_stream s, uint32_t flag) {
    COUNT(aclrtRecordEventWithFlag);
    if (flag & ~KACL_EVENT_RECORD_EXTERNAL)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtRecordEventWithFlag: flag 0x%x", flag);
    return record(e, s, "aclrtRecordEventWithFlag");
}

/* A captured external wait, at replay: wait (at most 10 s) until the
 * event's records issued by now have executed. */
static void ext_wait(void *user, sim_status status) {
    (void)status;
    devent *e = user;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&g_ext_lock);
    uint64_t target = e->issued;
    while (e->done < target)
        if (pthread_cond_timedwait(&g_ext_cond, &g_ext_lock, &until) != 0) break;
    pthread_mutex_unlock(&g_ext_lock);
}

static kacl_error wait_event(kacl_stream s, kacl_event ev, uint32_t flag, const char *what) {
    if (!ev) return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: NULL event", what);
    devent *e = ev;
    STREAM(d, s);
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    uint64_t cid = 0;
    sim_status st = cap_info(d, &cs, &cid);
    if (st) return DONE(st, what);
    pthread_mutex_lock(&g_lock);
    int recorded = e->recorded;
    uint64_t last = e->last_cap;
    dmodel *in = last ? capture_model(last) : NULL; /* the event's record is in this capture */
    dmodel *mine = cs != SIM_CAPTURE_STATUS_NONE ? capture_model(cid) : NULL;
    pthread_mutex_unlock(&g_lock);
    if (cs != SIM_CAPTURE_STATUS_NONE) {
        if (d->flags & REFUSED_FLAGS)
            return fail(KACL_ERROR_RT_INTERNAL_ERROR,
                        "%s: a stream created with flags 0x%x cannot wait in a capture", what,
                        d->flags);
        if (!e->ex && !(e->flags & KACL_EVENT_EXTERNAL))
            return fail(KACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                        "%s: a capturing stream cannot wait on an event of the non-Ex create path",
                        what);
        if (recorded && (!last || !in) && (flag & KACL_EVENT_WAIT_EXTERNAL)) {
            /* the escape: a captured wait on the outside records */
            if (!mine) return fail(KACL_ERROR_RT_FAILURE, "%s: no model for the capture", what);
            pthread_mutex_lock(&g_lock);
            if (mine->n_ext == mine->capext) {
                size_t n = mine->capext ? mine->capext * 2 : 4;
                devent **p = realloc(mine->ext, n * sizeof *p);
                if (!p) {
                    pthread_mutex_unlock(&g_lock);
                    return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of host memory", what);
                }
                mine->ext = p;
                mine->capext = n;
            }
            st = sim_launch_host_func(d->h, ext_wait, e);
            if (!st) {
                atomic_fetch_add(&e->refs, 1);
                mine->ext[mine->n_ext++] = e;
            }
            pthread_mutex_unlock(&g_lock);
            return DONE(st, what);
        }
        if (recorded && last != cid && !in)
            return fail(KACL_ERROR_RT_CAPTURE_DEPENDENCY,
                        "%s: the capturing stream waits on an event last recorded outside the "
                        "capture (record and wait inside one capture, or wait with "
                        "ACL_EVENT_WAIT_EXTERNAL)",
                        what);
    } else if (in) {
        /* the wait would make the stream join a capture */
        if (d->is_default)
            return fail(KACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT,
                        "%s: default stream cannot be used in the ACL Graph", what);
        if (d->flags & REFUSED_FLAGS)
            return fail(KACL_ERROR_RT_INTERNAL_ERROR,
                        "%s: a stream created with flags 0x%x cannot join a capture", what,
                        d->flags);
    }
    return DONE(sim_stream_wait_event(d->h, e->h), what);
}
API kacl_error aclrtStreamWaitEvent(kacl_stream s, kacl_event e);
API kacl_error aclrtStreamWaitEvent(kacl_stream s, kacl_event e) {
    COUNT(aclrtStreamWaitEvent);
    return wait_event(s, e, 0, "aclrtStreamWaitEvent");
}
API kacl_error aclrtStreamWaitEventWithFlag(kacl_stream s, kacl_event e, int32_t timeout,
                                            uint32_t flag);
API kacl_error aclrtStreamWaitEventWithFlag(kacl_stream s, kacl_event e, int32_t timeout,
                                            uint32_t flag) {
    COUNT(aclrtStreamWaitEventWithFlag);
    if ((flag & ~KACL_EVENT_WAIT_EXTERNAL) || ((flag & KACL_EVENT_WAIT_EXTERNAL) && timeout != 0))
        return fail(KACL_ERROR_RT_PARAM_INVALID,
                    "aclrtStreamWaitEventWithFlag: flag 0x%x, timeout %d (ACL_EVENT_WAIT_EXTERNAL "
                    "needs timeout 0)",
                    flag, timeout);
    return wait_event(s, e, flag, "aclrtStreamWaitEventWithFlag");
}
API kacl_error aclrtQueryEventStatus(kacl_event e, int *status);
API kacl_error aclrtQueryEventStatus(kacl_event e, int *status) {
    COUNT(aclrtQueryEventStatus);
    if (!e || !status) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtQueryEventStatus: NULL");
    sim_status st = sim_event_query(((devent *)e)->h);
    if (st == SIM_NOT_READY || st == SIM_OK) {
        *status = st ? KACL_EVENT_RECORDED_STATUS_NOT_READY : KACL_EVENT_RECORDED_STATUS_COMPLETE;
        return KACL_SUCCESS;
    }
    return DONE(st, "aclrtQueryEventStatus");
}
API kacl_error aclrtSynchronizeEvent(kacl_event e);
API kacl_error aclrtSynchronizeEvent(kacl_event e) {
    COUNT(aclrtSynchronizeEvent);
    if (!e) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtSynchronizeEvent: NULL");
    return DONE(sim_event_synchronize(((devent *)e)->h), "aclrtSynchronizeEvent");
}
/* The sim has no bounded event wait: polled every millisecond. */
API kacl_error aclrtSynchronizeEventWithTimeout(kacl_event e, int32_t ms);
API kacl_error aclrtSynchronizeEventWithTimeout(kacl_event e, int32_t ms) {
    COUNT(aclrtSynchronizeEventWithTimeout);
    if (!e) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtSynchronizeEventWithTimeout: NULL");
    if (ms < 0) return DONE(sim_event_synchronize(((devent *)e)->h), "aclrtSynchronizeEvent");
    for (int32_t t = 0;; t++) {
        sim_status st = sim_event_query(((devent *)e)->h);
        if (st != SIM_NOT_READY) return DONE(st, "aclrtSynchronizeEventWithTimeout");
        if (t >= ms)
            return fail(KACL_ERROR_RT_EVENT_SYNC_TIMEOUT,
                        "aclrtSynchronizeEventWithTimeout: %d ms passed", ms);
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* ---- memory ------------------------------------------------------------------------ */

API kacl_error aclrtMalloc(void **p, size_t size, int policy);
API kacl_error aclrtMalloc(void **p, size_t size, int policy) {
    COUNT(aclrtMalloc);
    if (!p || size == 0 || policy < 0 || policy > KACL_MEM_MALLOC_HUGE1G_ONLY_P2P)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtMalloc: bad argument");
    sim_devptr d = 0;
    sim_status st = RELAXED(sim_malloc(&d, size));
    if (!st) *p = (void *)(uintptr_t)d;
    return DONE(st, "aclrtMalloc");
}
API kacl_error aclrtFree(void *p);
API kacl_error aclrtFree(void *p) {
    COUNT(aclrtFree);
    return DONE(RELAXED(sim_free((sim_devptr)(uintptr_t)p)), "aclrtFree");
}

/* The sim copy kind of an ACL kind (DEFAULT: by looking the addresses up). */
static int copy_kind(int kind, const void *dst, const void *src, size_t n, sim_copy_kind *out) {
    if (kind == KACL_MEMCPY_DEFAULT) {
        int d = 0;
        (void)sim_get_device(&d);
        int dd = sim_mem_lookup(d, (sim_devptr)(uintptr_t)dst, n, NULL, NULL) == SIM_OK;
        int sd = sim_mem_lookup(d, (sim_devptr)(uintptr_t)src, n, NULL, NULL) == SIM_OK;
        kind = dd && sd ? KACL_MEMCPY_DEVICE_TO_DEVICE
               : dd     ? KACL_MEMCPY_HOST_TO_DEVICE
               : sd     ? KACL_MEMCPY_DEVICE_TO_HOST
                        : KACL_MEMCPY_HOST_TO_HOST;
    }
    switch (kind) {
    case KACL_MEMCPY_HOST_TO_DEVICE:
        *out = SIM_COPY_HOST_TO_DEVICE;
        return 1;
    case KACL_MEMCPY_DEVICE_TO_HOST:
        *out = SIM_COPY_DEVICE_TO_HOST;
        return 1;
    case KACL_MEMCPY_DEVICE_TO_DEVICE:
        *out = SIM_COPY_DEVICE_TO_DEVICE;
        return 1;
    case KACL_MEMCPY_HOST_TO_HOST:
        return 0;
    default:
        return -1;
    }
}

static kacl_error unsafe(const char *what) {
    return fail(KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
                "%s is an unsafe call while a capture restricts this thread (capture mode %d; use "
                "ACL_MODEL_RI_CAPTURE_MODE_RELAXED)",
                what, tl_mode);
}

/* aclrtMemcpy: synchronous. An aligned 4-byte host<->device copy is one
 * atomic access of the device word (as kctx's word reads and writes need,
 * and as a DMA of an aligned word is); other copies wait for the device's
 * work first (the sim's synchronous copy). */
API kacl_error aclrtMemcpy(void *dst, size_t max, const void *src, size_t n, int kind);
API kacl_error aclrtMemcpy(void *dst, size_t max, const void *src, size_t n, int kind) {
    COUNT(aclrtMemcpy);
    if (!dst || !src || n > max)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtMemcpy: bad argument");
    if (restricted()) return unsafe("aclrtMemcpy");
    sim_copy_kind k;
    int c = copy_kind(kind, dst, src, n, &k);
    if (c < 0) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtMemcpy: kind %d", kind);
    if (c == 0) {
        memmove(dst, src, n);
        return KACL_SUCCESS;
    }
    int word = n == 4 && (uintptr_t)dst % 4 == 0 && (uintptr_t)src % 4 == 0;
    if (word && k == SIM_COPY_HOST_TO_DEVICE)
        return DONE(sim_atomic_write_u32((sim_devptr)(uintptr_t)dst, *(const uint32_t *)src),
                    "aclrtMemcpy");
    if (word && k == SIM_COPY_DEVICE_TO_HOST)
        return DONE(sim_atomic_read_u32((sim_devptr)(uintptr_t)src, (uint32_t *)dst),
                    "aclrtMemcpy");
    return DONE(RELAXED(sim_memcpy(dst, src, n, k)), "aclrtMemcpy");
}
API kacl_error aclrtMemset(void *p, size_t max, int32_t value, size_t n);
API kacl_error aclrtMemset(void *p, size_t max, int32_t value, size_t n) {
    COUNT(aclrtMemset);
    if (!p || n > max) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtMemset: bad argument");
    if (restricted()) return unsafe("aclrtMemset");
    if (n == 0) return KACL_SUCCESS;
    unsigned char *b = malloc(n);
    if (!b) return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMemset: out of host memory");
    memset(b, value & 0xff, n);
    sim_status st = RELAXED(sim_memcpy(p, b, n, SIM_COPY_HOST_TO_DEVICE));
    free(b);
    return DONE(st, "aclrtMemset");
}
API kacl_error aclrtMemcpyAsync(void *dst, size_t max, const void *src, size_t n, int kind,
                                kacl_stream s);
API kacl_error aclrtMemcpyAsync(void *dst, size_t max, const void *src, size_t n, int kind,
                                kacl_stream s) {
    COUNT(aclrtMemcpyAsync);
    STREAM(d, s);
    if (!dst || !src || n > max)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtMemcpyAsync: bad argument");
    sim_copy_kind k;
    if (copy_kind(kind, dst, src, n, &k) != 1)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtMemcpyAsync: kind %d", kind);
    return DONE(sim_memcpy_async(dst, src, n, k, d->h), "aclrtMemcpyAsync");
}
API kacl_error aclrtMemsetAsync(void *p, size_t max, int32_t value, size_t n, kacl_stream s);
API kacl_error aclrtMemsetAsync(void *p, size_t max, int32_t value, size_t n, kacl_stream s) {
    COUNT(aclrtMemsetAsync);
    STREAM(d, s);
    if (!p || n > max) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtMemsetAsync: bad argument");
    return DONE(sim_memset_async((sim_devptr)(uintptr_t)p, (uint8_t)value, n, d->h),
                "aclrtMemsetAsync");
}

/* ---- binaries and launches ---------------------------------------------------------- */

#ifndef KACL_DOUBLE_CALL_SIM
#error "KACL_DOUBLE_CALL_SIM: the path of the double's device program (tests/common/double_call.c)"
#endif

API kacl_error aclrtBinaryLoadFromData(const void *data, size_t len,
                                       const kacl_bin_load_options *opts, kacl_bin *bin);
API kacl_error aclrtBinaryLoadFromData(const void *data, size_t len,
                                       const kacl_bin_load_options *opts, kacl_bin *bin) {
    (void)opts;
    COUNT(aclrtBinaryLoadFromData);
    const unsigned char *b = data;
    if (!b || !bin || len < SELFMAG)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtBinaryLoadFromData: bad argument");
    if (len < EI_NIDENT || memcmp(b, ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64)
        return fail(KACL_ERROR_RT_PARAM_INVALID,
                    "aclrtBinaryLoadFromData: not a binary for this device (the driver double "
                    "loads x86-64 ELF sim kernel modules only)");
    const char *refuse = getenv("KCTX_ACL_DOUBLE_REFUSE_RT");
    if (refuse && *refuse == '1' && memmem(b, len, "kctx_rt_ho_acquire", 18))
        return fail(KACL_ERROR_RT_PARAM_INVALID,
                    "aclrtBinaryLoadFromData: the binary is not built for this NPU (kctx's "
                    "runtime programs built for the sim; KCTX_ACL_DOUBLE_REFUSE_RT=1)");
    dbin *d = calloc(1, sizeof *d);
    if (!d) return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtBinaryLoadFromData: out of memory");
    sim_status st = RELAXED(sim_module_load(&d->m, data, len));
    if (st) {
        free(d);
        return DONE(st, "aclrtBinaryLoadFromData");
    }
    *bin = d;
    return KACL_SUCCESS;
}
API kacl_error aclrtBinaryUnLoad(kacl_bin bin);
API kacl_error aclrtBinaryUnLoad(kacl_bin bin) {
    COUNT(aclrtBinaryUnLoad);
    if (!bin) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtBinaryUnLoad: NULL");
    dbin *d = bin;
    sim_status st = RELAXED(sim_module_unload(d->m));
    if (st) return DONE(st, "aclrtBinaryUnLoad");
    for (size_t i = 0; i < d->nfns; i++) free(d->fns[i]);
    free(d->fns);
    free(d);
    return KACL_SUCCESS;
}
static kacl_error get_function(kacl_bin bin, const char *name, kacl_func *f, int cpu,
                               const char *what) {
    if (!bin || !name || !f) return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: NULL", what);
    dbin *d = bin;
    dfunc *fn = calloc(1, sizeof *fn);
    if (!fn) return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of host memory", what);
    sim_status st = sim_module_get_function(&fn->fn, d->m, name);
    pthread_mutex_lock(&g_lock);
    if (!st && d->nfns == d->capfns) {
        size_t n = d->capfns ? d->capfns * 2 : 8;
        dfunc **p = realloc(d->fns, n * sizeof *p);
        if (p) {
            d->fns = p;
            d->capfns = n;
        } else {
            st = SIM_OUT_OF_MEMORY;
        }
    }
    if (!st) d->fns[d->nfns++] = fn;
    pthread_mutex_unlock(&g_lock);
    if (st) {
        free(fn);
        return DONE(st, what);
    }
    fn->cpu = cpu;
    *f = fn;
    return KACL_SUCCESS;
}
API kacl_error aclrtBinaryGetFunction(kacl_bin bin, const char *name, kacl_func *f);
API kacl_error aclrtBinaryGetFunction(kacl_bin bin, const char *name, kacl_func *f) {
    COUNT(aclrtBinaryGetFunction);
    return get_function(bin, name, f, 0, "aclrtBinaryGetFunction");
}
API kacl_error aclrtRegisterCpuFunc(kacl_bin bin, const char *func_name, const char *kernel_name,
                                    kacl_func *f);
API kacl_error aclrtRegisterCpuFunc(kacl_bin bin, const char *func_name, const char *kernel_name,
                                    kacl_func *f) {
    (void)kernel_name;
    COUNT(aclrtRegisterCpuFunc);
    return get_function(bin, func_name, f, 1, "aclrtRegisterCpuFunc");
}
API kacl_error aclrtGetFunctionAddr(kacl_func f, void **aic, void **aiv);
API kacl_error aclrtGetFunctionAddr(kacl_func f, void **aic, void **aiv) {
    COUNT(aclrtGetFunctionAddr);
    if (!f || !aic) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtGetFunctionAddr: NULL");
    uint64_t a = 0;
    sim_status st = sim_function_address(((dfunc *)f)->fn, &a);
    if (st) return DONE(st, "aclrtGetFunctionAddr");
    *aic = (void *)(uintptr_t)a; /* a sim kernel has one entry: no vector-core address */
    if (aiv) *aiv = NULL;
    return KACL_SUCCESS;
}

/* The device program (tests/common/double_call.c) on each device, loaded on first use and
 * again after a reset (its epoch). */
static struct {
    sim_module module;
    sim_function fn;
    uint64_t epoch;
    int loaded;
} g_call[MAX_DEVICES];
static unsigned char *g_call_bytes;
static size_t g_call_size;
static pthread_once_t g_call_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_call_lock = PTHREAD_MUTEX_INITIALIZER;

static void call_read(void) {
    g_call_bytes =
        ktc_read_file(KACL_DOUBLE_CALL_SIM, &g_call_size, NULL, 0); /* NULL: reported at use */
}

static sim_status call_fn(int device, sim_function *fn) {
    if (device < 0 || device >= MAX_DEVICES) return SIM_INVALID_VALUE;
    pthread_once(&g_call_once, call_read);
    if (!g_call_bytes) return SIM_INVALID_MODULE;
    uint64_t epoch = 0;
    sim_status st = sim_device_epoch(device, &epoch);
    pthread_mutex_lock(&g_call_lock);
    if (!st && (!g_call[device].loaded || g_call[device].epoch != epoch)) {
        int cur = 0;
        st = sim_get_device(&cur);
        if (!st && cur != device) st = sim_set_device(device);
        sim_module m = 0;
        sim_function f = 0;
        if (!st) st = RELAXED(sim_module_load(&m, g_call_bytes, g_call_size));
        if (!st) st = sim_module_get_function(&f, m, "kctx_double_call");
        if (!st) {
            g_call[device].module = m;
            g_call[device].fn = f;
            g_call[device].epoch = epoch;
            g_call[device].loaded = 1;
        }
        if (cur != device) (void)sim_set_device(cur);
    }
    if (!st) *fn = g_call[device].fn;
    pthread_mutex_unlock(&g_call_lock);
    return st;
}

static kacl_error launch(kacl_func f, uint32_t blocks, kacl_stream s, const void *args, size_t size,
                         const char *what) {
    if (!f) return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: NULL function", what);
    STREAM(d, s);
    dfunc *fn = f;
    if (size && !args) return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: no arguments", what);
    if (blocks == 0 || (fn->cpu && blocks != 1))
        return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: %u blocks for an %s function", what, blocks,
                    fn->cpu ? "AICPU" : "AICore");
    int dev = 0;
    uint64_t entry = 0;
    sim_function call = 0;
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    sim_status st = sim_stream_get_device(d->h, &dev);
    if (!st) st = sim_device_get_props(dev, &p);
    if (!st && size + sizeof entry > p.max_params_size)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: %zu argument bytes (at most %u)", what, size,
                    (unsigned)(p.max_params_size - sizeof entry));
    if (!st) st = sim_function_address(fn->fn, &entry);
    if (!st) st = call_fn(dev, &call);
    if (st) return DONE(st, what);
    unsigned char *block = malloc(sizeof entry + size);
    if (!block) return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of host memory", what);
    memcpy(block, &entry, sizeof entry);
    if (size) memcpy(block + sizeof entry, args, size);
    st = sim_launch_kernel(d->h, call, fn->cpu ? SIM_TARGET_AICPU : SIM_TARGET_AICORE, blocks,
                           block, sizeof entry + size); /* copied at enqueue */
    free(block);
    return DONE(st, what);
}
/* cfg is not read (the double has no launch attributes); placeholders are
 * not supported (207000). */
API kacl_error aclrtLaunchKernelWithHostArgs(kacl_func f, uint32_t blocks, kacl_stream s,
                                             kacl_launch_cfg *cfg, void *args, size_t size,
                                             kacl_placeholder *ph, size_t nph);
API kacl_error aclrtLaunchKernelWithHostArgs(kacl_func f, uint32_t blocks, kacl_stream s,
                                             kacl_launch_cfg *cfg, void *args, size_t size,
                                             kacl_placeholder *ph, size_t nph) {
    (void)cfg;
    (void)ph;
    COUNT(aclrtLaunchKernelWithHostArgs);
    if (nph)
        return fail(KACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                    "aclrtLaunchKernelWithHostArgs: the double has no placeholders");
    return launch(f, blocks, s, args, size, "aclrtLaunchKernelWithHostArgs");
}
API kacl_error aclrtLaunchKernel(kacl_func f, uint32_t blocks, const void *args, size_t size,
                                 kacl_stream s);
API kacl_error aclrtLaunchKernel(kacl_func f, uint32_t blocks, const void *args, size_t size,
                                 kacl_stream s) {
    COUNT(aclrtLaunchKernel);
    return launch(f, blocks, s, args, size, "aclrtLaunchKernel");
}

/* ---- capture and models ----------------------------------------------------------------- */

#define MAX_MODEL_IDS 4096
static uint8_t g_ids[MAX_MODEL_IDS]; /* g_lock */

/* Free a model whose handle and replays are all gone: its callbacks (when
 * `fire`) in registration order, its references. Not under g_lock. */
static void model_free(dmodel *m, int fire) {
    for (size_t i = 0; fire && i < m->ncbs; i++) m->cbs[i].fn(m->cbs[i].user);
    for (size_t i = 0; i < m->n_ext; i++) event_put(m->ext[i]);
    free(m->ext);
    free(m->cbs);
    free(m);
}
static void model_put(dmodel *m) {
    if (atomic_fetch_sub(&m->refs, 1) == 1) model_free(m, 1);
}
/* Unlink (g_lock held) and release the id. */
static void model_unlink(dmodel *m) {
    for (dmodel **p = &g_models; *p; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            break;
        }
    g_ids[m->id] = 0;
}

API kacl_error aclmdlRICaptureBegin(kacl_stream s, int mode);
API kacl_error aclmdlRICaptureBegin(kacl_stream s, int mode) {
    COUNT(aclmdlRICaptureBegin);
    STREAM(d, s);
    if (mode < KACL_MODEL_RI_CAPTURE_MODE_GLOBAL || mode > KACL_MODEL_RI_CAPTURE_MODE_RELAXED)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclmdlRICaptureBegin: mode %d", mode);
    if (d->is_default)
        return fail(KACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT,
                    "aclmdlRICaptureBegin: default stream cannot be used in the ACL Graph");
    if (d->flags & REFUSED_FLAGS)
        return fail(KACL_ERROR_RT_INTERNAL_ERROR,
                    "aclmdlRICaptureBegin: a stream created with flags 0x%x cannot be captured",
                    d->flags);
    dmodel *m = calloc(1, sizeof *m);
    if (!m) return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "aclmdlRICaptureBegin: out of memory");
    pthread_mutex_lock(&g_lock);
    uint32_t id = 0;
    while (id < MAX_MODEL_IDS && g_ids[id]) id++;
    sim_status st = id == MAX_MODEL_IDS ? SIM_OUT_OF_MEMORY : SIM_OK;
    if (!st) st = sim_stream_begin_capture(d->h, (sim_capture_mode)mode);
    if (!st) st = sim_stream_get_capture_info(d->h, NULL, &m->cid, NULL);
    if (st) {
        pthread_mutex_unlock(&g_lock);
        free(m);
        if (st == SIM_ILLEGAL_STATE)
            return fail(KACL_ERROR_RT_STREAM_CAPTURED,
                        "aclmdlRICaptureBegin: the stream is already in a capture");
        return DONE(st, "aclmdlRICaptureBegin");
    }
    g_ids[id] = 1;
    m->id = id;
    m->capturing = 1;
    m->mode = mode;
    m->owner = &tl_token;
    m->origin = d;
    atomic_init(&m->refs, 1);
    m->next = g_models;
    g_models = m;
    pthread_mutex_unlock(&g_lock);
    return KACL_SUCCESS;
}

API kacl_error aclmdlRICaptureEnd(kacl_stream s, kacl_model *model);
API kacl_error aclmdlRICaptureEnd(kacl_stream s, kacl_model *model) {
    COUNT(aclmdlRICaptureEnd);
    STREAM(d, s);
    if (!model) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclmdlRICaptureEnd: NULL");
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    uint64_t cid = 0;
    sim_status st = cap_info(d, &cs, &cid);
    if (st) return DONE(st, "aclmdlRICaptureEnd");
    pthread_mutex_lock(&g_lock);
    dmodel *m = cs != SIM_CAPTURE_STATUS_NONE ? capture_model(cid) : NULL;
    pthread_mutex_unlock(&g_lock);
    if (!m)
        return fail(KACL_ERROR_RT_STREAM_NOT_CAPTURED, "aclmdlRICaptureEnd: the stream is not "
                                                       "capturing");
    sim_graph g = 0;
    st = sim_stream_end_capture(d->h, &g);
    if (st == SIM_CAPTURE_UNMATCHED || st == SIM_CAPTURE_WRONG_THREAD || st == SIM_ILLEGAL_STATE)
        return DONE(st, "aclmdlRICaptureEnd"); /* the capture goes on */
    sim_graph_exec x = 0;
    if (!st) {
        st = sim_graph_instantiate(&x, g);
        if (st) (void)sim_graph_destroy(g);
    }
    pthread_mutex_lock(&g_lock);
    m->capturing = 0;
    if (!st) {
        m->graph = g;
        m->exec = x;
    } else {
        model_unlink(m);
    }
    pthread_mutex_unlock(&g_lock);
    if (st) {
        /* discarded: acl-platform.md D.1, the switch */
        const char *fires = getenv("KCTX_ACL_DOUBLE_DISCARD_FIRES");
        kacl_error code = code_of(st, KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED);
        char why[256];
        snprintf(why, sizeof why, "%s", sim_last_error_message());
        model_free(m, !(fires && *fires == '0'));
        return fail(code, "aclmdlRICaptureEnd: %s (the model is discarded)", why);
    }
    *model = m;
    return KACL_SUCCESS;
}

API kacl_error aclmdlRICaptureGetInfo(kacl_stream s, int *status, kacl_model *model);
API kacl_error aclmdlRICaptureGetInfo(kacl_stream s, int *status, kacl_model *model) {
    COUNT(aclmdlRICaptureGetInfo);
    STREAM(d, s);
    if (!status) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclmdlRICaptureGetInfo: NULL");
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    uint64_t cid = 0;
    sim_status st = cap_info(d, &cs, &cid);
    if (st) return DONE(st, "aclmdlRICaptureGetInfo");
    pthread_mutex_lock(&g_lock);
    dmodel *m = cs != SIM_CAPTURE_STATUS_NONE ? capture_model(cid) : NULL;
    pthread_mutex_unlock(&g_lock);
    *status = cs == SIM_CAPTURE_STATUS_NONE     ? KACL_MODEL_RI_CAPTURE_STATUS_NONE
              : cs == SIM_CAPTURE_STATUS_ACTIVE ? KACL_MODEL_RI_CAPTURE_STATUS_ACTIVE
                                                : KACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED;
    if (model) *model = m;
    return KACL_SUCCESS;
}

API kacl_error aclmdlRICaptureThreadExchangeMode(int *mode);
API kacl_error aclmdlRICaptureThreadExchangeMode(int *mode) {
    COUNT(aclmdlRICaptureThreadExchangeMode);
    if (!mode || *mode < KACL_MODEL_RI_CAPTURE_MODE_GLOBAL ||
        *mode > KACL_MODEL_RI_CAPTURE_MODE_RELAXED)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclmdlRICaptureThreadExchangeMode: bad mode");
    sim_capture_mode m = (sim_capture_mode)*mode; /* the sim's mode follows (its own checks) */
    sim_status st = sim_thread_exchange_capture_mode(&m);
    if (st) return DONE(st, "aclmdlRICaptureThreadExchangeMode");
    int old = tl_mode;
    tl_mode = *mode;
    *mode = old;
    return KACL_SUCCESS;
}

static void replay_done(void *user, sim_status status) {
    (void)status;
    model_put(user);
}

static kacl_error execute(kacl_model model, dstream *d, const char *what) {
    dmodel *m = model;
    if (!m) return fail(KACL_ERROR_RT_PARAM_INVALID, "%s: NULL model", what);
    pthread_mutex_lock(&g_lock);
    int capturing = m->capturing;
    pthread_mutex_unlock(&g_lock);
    if (capturing)
        return fail(KACL_ERROR_RT_MODEL_CAPTURED, "%s: the model is being captured", what);
    sim_status st = sim_graph_launch(m->exec, d->h);
    if (st) return DONE(st, what);
    atomic_fetch_add(&m->refs, 1);
    st = sim_launch_host_func(d->h, replay_done, m);
    if (st) {
        model_put(m); /* the replay is enqueued; its end is not observed */
        return DONE(st, what);
    }
    return KACL_SUCCESS;
}
API kacl_error aclmdlRIExecuteAsync(kacl_model model, kacl_stream s);
API kacl_error aclmdlRIExecuteAsync(kacl_model model, kacl_stream s) {
    COUNT(aclmdlRIExecuteAsync);
    STREAM(d, s);
    return execute(model, d, "aclmdlRIExecuteAsync");
}
API kacl_error aclmdlRIExecute(kacl_model model, int32_t ms);
API kacl_error aclmdlRIExecute(kacl_model model, int32_t ms) {
    COUNT(aclmdlRIExecute);
    STREAM(d, NULL);
    kacl_error e = execute(model, d, "aclmdlRIExecute");
    if (e) return e;
    sim_status st =
        ms < 0 ? sim_stream_synchronize(d->h) : sim_stream_synchronize_timeout(d->h, (uint32_t)ms);
    return DONE(st, "aclmdlRIExecute");
}
API kacl_error aclmdlRIDestroy(kacl_model model);
API kacl_error aclmdlRIDestroy(kacl_model model) {
    COUNT(aclmdlRIDestroy);
    dmodel *m = model;
    if (!m) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclmdlRIDestroy: NULL");
    pthread_mutex_lock(&g_lock);
    int capturing = m->capturing;
    if (!capturing) model_unlink(m);
    pthread_mutex_unlock(&g_lock);
    if (capturing)
        return fail(KACL_ERROR_RT_MODEL_CAPTURED, "aclmdlRIDestroy: the model is being captured");
    sim_status st = sim_graph_exec_destroy(m->exec);
    sim_status st2 = sim_graph_destroy(m->graph);
    model_put(m);
    return DONE(st ? st : st2, "aclmdlRIDestroy");
}
API kacl_error aclmdlRIGetId(kacl_model model, uint32_t *id);
API kacl_error aclmdlRIGetId(kacl_model model, uint32_t *id) {
    COUNT(aclmdlRIGetId);
    if (!model || !id) return fail(KACL_ERROR_RT_PARAM_INVALID, "aclmdlRIGetId: NULL");
    *id = ((dmodel *)model)->id;
    return KACL_SUCCESS;
}
API kacl_error aclmdlRIDestroyRegisterCallback(kacl_model model, kacl_callback fn, void *user);
API kacl_error aclmdlRIDestroyRegisterCallback(kacl_model model, kacl_callback fn, void *user) {
    COUNT(aclmdlRIDestroyRegisterCallback);
    dmodel *m = model;
    if (!m || !fn)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclmdlRIDestroyRegisterCallback: NULL");
    pthread_mutex_lock(&g_lock);
    if (m->ncbs == m->capcbs) {
        size_t n = m->capcbs ? m->capcbs * 2 : 4;
        cbreg *p = realloc(m->cbs, n * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&g_lock);
            return fail(KACL_ERROR_RT_MEMORY_ALLOCATION, "aclmdlRIDestroyRegisterCallback");
        }
        m->cbs = p;
        m->capcbs = n;
    }
    m->cbs[m->ncbs++] = (cbreg){fn, user};
    pthread_mutex_unlock(&g_lock);
    return KACL_SUCCESS;
}
API kacl_error aclmdlRIDestroyUnregisterCallback(kacl_model model, kacl_callback fn);
API kacl_error aclmdlRIDestroyUnregisterCallback(kacl_model model, kacl_callback fn) {
    COUNT(aclmdlRIDestroyUnregisterCallback);
    dmodel *m = model;
    if (!m || !fn)
        return fail(KACL_ERROR_RT_PARAM_INVALID, "aclmdlRIDestroyUnregisterCallback: NULL");
    pthread_mutex_lock(&g_lock);
    size_t i = 0;
    while (i < m->ncbs && m->cbs[i].fn != fn) i++;
    int found = i < m->ncbs;
    if (found) {
        memmove(&m->cbs[i], &m->cbs[i + 1], (m->ncbs - i - 1) * sizeof *m->cbs);
        m->ncbs--;
    }
    pthread_mutex_unlock(&g_lock);
    return found ? KACL_SUCCESS
                 : fail(KACL_ERROR_RT_PARAM_INVALID,
                        "aclmdlRIDestroyUnregisterCallback: the callback is not registered");
}

/* ---- errors ------------------------------------------------------------------------------- */

API const char *aclGetRecentErrMsg(void);
API const char *aclGetRecentErrMsg(void) {
    COUNT(aclGetRecentErrMsg);
    return tl_has_msg ? tl_msg : NULL;
}
API kacl_error aclrtGetLastError(int level);
API kacl_error aclrtGetLastError(int level) {
    COUNT(aclrtGetLastError);
    if (level != KACL_RT_THREAD_LEVEL) return KACL_ERROR_RT_PARAM_INVALID;
    kacl_error e = tl_last;
    tl_last = KACL_SUCCESS;
    return e;
}
API kacl_error aclrtPeekAtLastError(int level);
API kacl_error aclrtPeekAtLastError(int level) {
    COUNT(aclrtPeekAtLastError);
    if (level != KACL_RT_THREAD_LEVEL) return KACL_ERROR_RT_PARAM_INVALID;
    return tl_last;
}
/* Accepted; the double raises no exceptions, so they are never called. */
API kacl_error aclrtExceptionInfoCallbackRegister(kacl_exception_callback fn);
API kacl_error aclrtExceptionInfoCallbackRegister(kacl_exception_callback fn) {
    COUNT(aclrtExceptionInfoCallbackRegister);
    return fn ? KACL_SUCCESS
              : fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtExceptionInfoCallbackRegister: NULL");
}
API kacl_error aclrtExceptionInfoCallbackUnregister(kacl_exception_callback fn);
API kacl_error aclrtExceptionInfoCallbackUnregister(kacl_exception_callback fn) {
    COUNT(aclrtExceptionInfoCallbackUnregister);
    return fn ? KACL_SUCCESS
              : fail(KACL_ERROR_RT_PARAM_INVALID, "aclrtExceptionInfoCallbackUnregister: NULL");
}
