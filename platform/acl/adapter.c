/*
 * adapter.c — the acl platform for kctx (docs/acl.md): fills the platform
 * tables (kctx/platform.h) with Ascend's ACL runtime API, declared by kctx
 * itself (acl_abi.h: no CANN header is compiled), loaded at run time and
 * reached only through this file's counted table
 * (platform/common/loader.h).
 *
 * Loading. dlopen(KCTX_ACL_LIBRARY, default "libascendcl.so"); every entry
 * of KACL_REQUIRED is resolved by name (a library missing one is not a
 * usable ACL runtime: unavailable, with the entry's name); each entry of
 * KACL_OPTIONAL is resolved on its own, and a missing capture entry
 * (aclmdlRICaptureGetInfo, aclmdlRICaptureThreadExchangeMode,
 * aclrtCreateEventExWithFlag, aclmdlRIDestroyRegisterCallback) turns
 * capture off (has_capture 0: K25's graph hooks are required with
 * capture). KACL_NOT_KERNEL_MODE and KACL_NEVER are never resolved: their
 * counters exist so that their zero is an answer (K4, K19).
 * available() calls nothing but dlopen/dlsym: a framework owns aclInit.
 *
 * The mapping (acl-platform.md §A.2; contract rules in brackets):
 *  - current_device: aclrtGetDevice (the borrow, K4/K5).
 *  - device_info: aclrtGetSocName, and the core count of a stream the
 *    adapter creates and destroys for it (aclrtGetStreamResLimit, type 0,
 *    init only; one it cannot destroy goes to a grave, below) — ACL has no
 *    documented attribute id for it (aclrtGetDeviceInfo's ids are not in
 *    the facts); only the calling thread's current device is described.
 *  - streams: aclrtCreateStreamWithConfig(priority 0, flag 0): no AICPU- or
 *    persistent-class flag, which cannot join a capture (507000);
 *    stream_sync is aclrtSynchronizeStreamWithTimeout; stream_query is
 *    aclrtStreamQuery; stream_info is aclrtGetDevice (an ACL stream
 *    belongs to the current context) and aclmdlRICaptureGetInfo (legal
 *    during capture: the one query a launch makes, K34); graph and id are
 *    the model handle (ids of aclmdlRIGetId are reused after destroy).
 *  - events: aclrtCreateEventExWithFlag(ACL_EVENT_SYNC) (non-Ex events get
 *    207000 inside a capture).
 *  - memory: aclrtMalloc(HUGE_FIRST), aclrtFree, aclrtMemcpyAsync,
 *    aclrtMemsetAsync; the word accesses are 4-byte synchronous aclrtMemcpy
 *    in the RELAXED capture mode of the calling thread (legal during a
 *    global capture of another thread, 107030 otherwise); they are made
 *    only on a launch's failure path (K19, K24, K35).
 *  - kernels: aclrtBinaryLoadFromData / aclrtBinaryGetFunction (AICore) or
 *    aclrtRegisterCpuFunc (AICPU, for the runtime's *_acquire, *_finalize
 *    and scheduler programs) / aclrtLaunchKernelWithHostArgs (host args
 *    copied at enqueue; cfg NULL, no placeholders); function_address is
 *    aclrtGetFunctionAddr's AICore address (RESIDENT's workers).
 *  - capture: aclmdlRICaptureThreadExchangeMode; graph hooks through
 *    aclmdlRIDestroyRegisterCallback (K25).
 *  - no device epoch (has_epoch 0: quarantine is terminal, K30), no range
 *    checks, no program mode (no lifecycle table).
 *
 * The runtime's device programs are the shared sim_elf build
 * (kctx_rt_elf_programs, platform/common/rt_programs_elf.h): what runs where
 * they load, which is the driver double (platform/acl/double, built on the
 * sim). A real runtime refuses them; kernel init is then
 * UNSUPPORTED, naming what is missing (runtime programs built with CANN's
 * compilers, which kctx does not build). Callables load their
 * KCTX_VARIANT_ASCEND_BIN variant (image format 1.1): the blob goes to
 * aclrtBinaryLoadFromData as it is, and the child's entry is an AICore
 * kernel (aclrtBinaryGetFunction). AICPU functions (aclrtRegisterCpuFunc)
 * are only the runtime's own programs, told apart by name
 * (is_aicpu_program): the format has no per-variant flag for the target.
 * On the double, the ascend_bin blobs are sim modules.
 *
 * Statuses are ACL codes; the adapter's own refusals use its private
 * negative codes below (never INT_MIN).
 */
#include <kctx/image.h>
#include <kctx/platform.h>

#include "acl_abi.h"
#include "loader.h"
#include "rt_programs_elf.h"
#include "services.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const kctx_platform_entry *kctx_acl_platform_entry(void);

/* ---- the entry table ---------------------------------------------------- */

#define E_ENUM_(name, ...) E_##name,
#define E_NEVER_ENUM_(name) E_##name,
enum {
    KACL_REQUIRED(E_ENUM_) E_NREQ_,
    E_OPT_BASE_ = E_NREQ_ - 1,
    KACL_OPTIONAL(E_ENUM_) E_RESOLVED_,
    E_NKM_BASE_ = E_RESOLVED_ - 1,
    KACL_NOT_KERNEL_MODE(E_ENUM_) KACL_NEVER(E_NEVER_ENUM_) E_COUNT_
};
#undef E_ENUM_
#undef E_NEVER_ENUM_

static const char *const k_names[E_COUNT_] = {KACL_REQUIRED(KACL_NAME_) KACL_OPTIONAL(
    KACL_NAME_) KACL_NOT_KERNEL_MODE(KACL_NAME_) KACL_NEVER(KACL_NEVER_NAME_)};

static struct {
#define E_MEMBER_(name, ...) kacl_fn_##name p_##name;
    KACL_REQUIRED(E_MEMBER_)
    KACL_OPTIONAL(E_MEMBER_)
#undef E_MEMBER_
} g_acl;

static void *g_fns[E_RESOLVED_];
static _Atomic uint64_t g_calls[E_COUNT_];
static kctx_loader g_ld = KCTX_LOADER_INIT(k_names, E_RESOLVED_, E_COUNT_, g_fns, g_calls);
static char g_unavailable[300]; /* "" once loaded */
static char g_no_capture[200];  /* "" when capture is offered, else why not */
static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;

/* Every ACL call of the adapter: counted, then made. */
#define ACL(name, ...) (kctx__loader_count(&g_ld, E_##name), g_acl.p_##name(__VA_ARGS__))

/* The adapter's own statuses (negative: no ACL code is). */
#define ACLA_BAD_MODULE (-1)     /* a module or kernel the runtime refused (the image's fault) */
#define ACLA_NO_PROGRAMS (-2)    /* kctx's runtime programs do not load here */
#define ACLA_INVALID (-3)        /* an argument the adapter refuses */
#define ACLA_NO_HOST_MEMORY (-4) /* host allocation failed */
#define ACLA_UNSUPPORTED (-5)    /* an optional entry this runtime lacks */

/* The largest host-args block: the double's (the sim's 4096 less the
 * 8-byte entry its launch prepends); a real NPU's is not in the facts. */
#define ACL_MAX_PARAMS_SIZE 4088u

/* ---- status vocabulary --------------------------------------------------- */

// clang-format off
#define ACL_CODES(X)                                                                             \
    X(KACL_SUCCESS, "ACL_SUCCESS")                                                               \
    X(KACL_ERROR_INVALID_PARAM, "ACL_ERROR_INVALID_PARAM")                                       \
    X(KACL_ERROR_UNINITIALIZE, "ACL_ERROR_UNINITIALIZE")                                         \
    X(KACL_ERROR_BAD_ALLOC, "ACL_ERROR_BAD_ALLOC")                                               \
    X(KACL_ERROR_API_NOT_SUPPORT, "ACL_ERROR_API_NOT_SUPPORT")                                   \
    X(KACL_ERROR_INVALID_DEVICE, "ACL_ERROR_INVALID_DEVICE")                                     \
    X(KACL_ERROR_FEATURE_UNSUPPORTED, "ACL_ERROR_FEATURE_UNSUPPORTED")                           \
    X(KACL_ERROR_INTERNAL_ERROR, "ACL_ERROR_INTERNAL_ERROR")                                     \
    X(KACL_ERROR_FAILURE, "ACL_ERROR_FAILURE")                                                   \
    X(KACL_ERROR_RT_FAILURE, "ACL_ERROR_RT_FAILURE")                                             \
    X(KACL_ERROR_RT_PARAM_INVALID, "ACL_ERROR_RT_PARAM_INVALID")                                 \
    X(KACL_ERROR_RT_INVALID_DEVICEID, "ACL_ERROR_RT_INVALID_DEVICEID")                           \
    X(KACL_ERROR_RT_CONTEXT_NULL, "ACL_ERROR_RT_CONTEXT_NULL")                                   \
    X(KACL_ERROR_RT_STREAM_CONTEXT, "ACL_ERROR_RT_STREAM_CONTEXT")                               \
    X(KACL_ERROR_RT_WAIT_TIMEOUT, "ACL_ERROR_RT_WAIT_TIMEOUT")                                   \
    X(KACL_ERROR_RT_TASK_TIMEOUT, "ACL_ERROR_RT_TASK_TIMEOUT")                                   \
    X(KACL_ERROR_RT_DEVICE_TASK_ABORT, "ACL_ERROR_RT_DEVICE_TASK_ABORT")                         \
    X(KACL_ERROR_RT_STREAM_ABORT, "ACL_ERROR_RT_STREAM_ABORT")                                   \
    X(KACL_ERROR_RT_CAPTURE_DEPENDENCY, "ACL_ERROR_RT_CAPTURE_DEPENDENCY")                       \
    X(KACL_ERROR_RT_STREAM_UNJOINED, "ACL_ERROR_RT_STREAM_UNJOINED")                             \
    X(KACL_ERROR_RT_MODEL_CAPTURED, "ACL_ERROR_RT_MODEL_CAPTURED")                               \
    X(KACL_ERROR_RT_STREAM_CAPTURED, "ACL_ERROR_RT_STREAM_CAPTURED")                             \
    X(KACL_ERROR_RT_EVENT_CAPTURED, "ACL_ERROR_RT_EVENT_CAPTURED")                               \
    X(KACL_ERROR_RT_STREAM_NOT_CAPTURED, "ACL_ERROR_RT_STREAM_NOT_CAPTURED")                     \
    X(KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT")           \
    X(KACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT, "ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT")             \
    X(KACL_ERROR_STREAM_CAPTURE_CONFLICT, "ACL_ERROR_STREAM_CAPTURE_CONFLICT")                   \
    X(KACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED, "ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED")           \
    X(KACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD, "ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD")     \
    X(KACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC, "ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC")           \
    X(KACL_ERROR_RT_SUB_ACLGRAPH_IS_CAPTURING, "ACL_ERROR_RT_SUB_ACLGRAPH_IS_CAPTURING")         \
    X(KACL_ERROR_RT_FEATURE_NOT_SUPPORT, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT")                     \
    X(KACL_ERROR_RT_MEMORY_ALLOCATION, "ACL_ERROR_RT_MEMORY_ALLOCATION")                         \
    X(KACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "ACL_ERROR_RT_RESOURCE_ALLOC_FAIL")                     \
    X(KACL_ERROR_RT_NO_EVENT_RESOURCE, "ACL_ERROR_RT_NO_EVENT_RESOURCE")                         \
    X(KACL_ERROR_RT_NO_STREAM_RESOURCE, "ACL_ERROR_RT_NO_STREAM_RESOURCE")                       \
    X(KACL_ERROR_RT_DEVICE_OOM, "ACL_ERROR_RT_DEVICE_OOM")                                       \
    X(KACL_ERROR_RT_INTERNAL_ERROR, "ACL_ERROR_RT_INTERNAL_ERROR")                               \
    X(KACL_ERROR_RT_LOST_HEARTBEAT, "ACL_ERROR_RT_LOST_HEARTBEAT")                               \
    X(KACL_ERROR_RT_AICORE_EXCEPTION, "ACL_ERROR_RT_AICORE_EXCEPTION")                           \
    X(KACL_ERROR_RT_AICPU_EXCEPTION, "ACL_ERROR_RT_AICPU_EXCEPTION")                             \
    X(KACL_ERROR_RT_STREAM_SYNC_TIMEOUT, "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT")                     \
    X(KACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT")                       \
    X(KACL_ERROR_RT_DEVICE_MEM_ERROR, "ACL_ERROR_RT_DEVICE_MEM_ERROR")                           \
    X(KACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR, "ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR")             \
    X(KACL_ERROR_RT_DRV_INTERNAL_ERROR, "ACL_ERROR_RT_DRV_INTERNAL_ERROR")                       \
    X(KACL_ERROR_RT_AICPU_INTERNAL_ERROR, "ACL_ERROR_RT_AICPU_INTERNAL_ERROR")                   \
    X(KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED, "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED")       \
    X(ACLA_BAD_MODULE, "kctx-acl: module refused")                                               \
    X(ACLA_NO_PROGRAMS, "kctx-acl: runtime programs do not load")                                \
    X(ACLA_INVALID, "kctx-acl: invalid argument")                                                \
    X(ACLA_NO_HOST_MEMORY, "kctx-acl: out of host memory")                                       \
    X(ACLA_UNSUPPORTED, "kctx-acl: not offered by this runtime")
// clang-format on

static const char *a_status_name(int st) {
    switch (st) {
#define N_(code, name) \
    case code:         \
        return name;
        ACL_CODES(N_)
#undef N_
    default:
        return "ACL_ERROR_(unknown code)";
    }
}

/* acl-platform.md §A.7 onto kctx's classes (docs/acl.md, "Error mapping"). */
static kctx_pclass a_classify(int st) {
    switch (st) {
    case KACL_SUCCESS:
        return KCTX_PCLASS_OK;
    /* capture rules broken (CAPTURE_BROKEN) */
    case KACL_ERROR_RT_CAPTURE_DEPENDENCY:
    case KACL_ERROR_RT_STREAM_UNJOINED:
    case KACL_ERROR_RT_MODEL_CAPTURED:
    case KACL_ERROR_RT_STREAM_CAPTURED:
    case KACL_ERROR_RT_EVENT_CAPTURED:
    case KACL_ERROR_RT_STREAM_NOT_CAPTURED:
    case KACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT:
    case KACL_ERROR_STREAM_CAPTURE_CONFLICT:
    case KACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED:
    case KACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD:
    case KACL_ERROR_RT_SUB_ACLGRAPH_IS_CAPTURING:
    case KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED:
    /* the capture mode forbids the call (kctx's capture class too) */
    case KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT:
    case KACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC:
        return KCTX_PCLASS_CAPTURE;
    /* resource exhaustion: OUT_OF_MEMORY, the ACL code in the message */
    case KACL_ERROR_BAD_ALLOC:
    case KACL_ERROR_RT_MEMORY_ALLOCATION:
    case KACL_ERROR_RT_RESOURCE_ALLOC_FAIL:
    case KACL_ERROR_RT_NO_EVENT_RESOURCE:
    case KACL_ERROR_RT_NO_STREAM_RESOURCE:
    case KACL_ERROR_RT_DEVICE_OOM:
    case ACLA_NO_HOST_MEMORY:
        return KCTX_PCLASS_NO_MEMORY;
    case KACL_ERROR_RT_WAIT_TIMEOUT:
    case KACL_ERROR_RT_TASK_TIMEOUT:
    case KACL_ERROR_RT_STREAM_SYNC_TIMEOUT:
    case KACL_ERROR_RT_EVENT_SYNC_TIMEOUT:
        return KCTX_PCLASS_TIMEOUT;
    /* fatal: the device needs its owner's reset (K29) */
    case KACL_ERROR_RT_LOST_HEARTBEAT:
    case KACL_ERROR_RT_AICORE_EXCEPTION:
    case KACL_ERROR_RT_AICPU_EXCEPTION:
    case KACL_ERROR_RT_DEVICE_MEM_ERROR:
    case KACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR:
    case KACL_ERROR_RT_DRV_INTERNAL_ERROR:
    case KACL_ERROR_RT_AICPU_INTERNAL_ERROR:
        return KCTX_PCLASS_DEVICE_LOST;
    /* the task or stream was aborted: a failure on the device, not fatal */
    case KACL_ERROR_RT_DEVICE_TASK_ABORT:
    case KACL_ERROR_RT_STREAM_ABORT:
        return KCTX_PCLASS_DEVICE_ERROR;
    case KACL_ERROR_RT_FEATURE_NOT_SUPPORT:
    case KACL_ERROR_API_NOT_SUPPORT:
    case KACL_ERROR_FEATURE_UNSUPPORTED:
    case ACLA_NO_PROGRAMS:
    case ACLA_UNSUPPORTED:
        return KCTX_PCLASS_UNSUPPORTED;
    case ACLA_BAD_MODULE:
        return KCTX_PCLASS_BAD_MODULE;
    case KACL_ERROR_INVALID_PARAM:
    case KACL_ERROR_INVALID_DEVICE:
    case KACL_ERROR_RT_PARAM_INVALID:
    case KACL_ERROR_RT_INVALID_DEVICEID:
    case KACL_ERROR_RT_CONTEXT_NULL:
    case KACL_ERROR_RT_STREAM_CONTEXT:
    case ACLA_INVALID:
        return KCTX_PCLASS_INVALID;
    default:
        return KCTX_PCLASS_OTHER; /* 507000 (a flagged stream in a capture) among them */
    }
}

static const char *a_last_message(void) { return kctx__svc_msg(); }

/* Record a failed call's message, with the runtime's recent error text
 * (aclGetRecentErrMsg), for last_message(); returns st. */
static int note(int st, const char *what) {
    if (st == KACL_SUCCESS) return st;
    const char *m = g_acl.p_aclGetRecentErrMsg ? ACL(aclGetRecentErrMsg) : NULL;
    kctx__svc_msgf(st, "%s: %s (ACL %d)%s%s", what, a_status_name(st), st, m && *m ? ": " : "",
                   m ? m : "");
    return st;
}

/* ---- loading ---------------------------------------------------------------- */

static void load(void) {
    char why[200];
    if (kctx__loader_open(&g_ld, "KCTX_ACL_LIBRARY", "libascendcl.so", why, sizeof why) != 0) {
        snprintf(g_unavailable, sizeof g_unavailable, "ACL runtime not found: %s", why);
        return;
    }
    for (int i = 0; i < E_RESOLVED_; i++) {
        g_fns[i] = kctx__loader_sym(&g_ld, k_names[i]);
        if (!g_fns[i] && i < E_NREQ_) {
            snprintf(g_unavailable, sizeof g_unavailable,
                     "%s has no %s: not an ACL runtime kctx can use (acl_abi.h, KACL_REQUIRED)",
                     g_ld.path, k_names[i]);
            kctx__loader_close(&g_ld);
            return;
        }
    }
#define E_SET_(name, ...) *(void **)&g_acl.p_##name = g_fns[E_##name];
    KACL_REQUIRED(E_SET_)
    KACL_OPTIONAL(E_SET_)
#undef E_SET_
    static const int k_capture[] = {E_aclmdlRICaptureGetInfo, E_aclmdlRICaptureThreadExchangeMode,
                                    E_aclrtCreateEventExWithFlag,
                                    E_aclmdlRIDestroyRegisterCallback};
    for (size_t i = 0; i < sizeof k_capture / sizeof k_capture[0]; i++)
        if (!g_fns[k_capture[i]] && !g_no_capture[0])
            snprintf(g_no_capture, sizeof g_no_capture,
                     "%s has no %s: capture is off (K25's graph hooks need it)", g_ld.path,
                     k_names[k_capture[i]]);
}

static int loaded(void) {
    pthread_once(&g_load_once, load);
    return !g_unavailable[0];
}

static int a_available(char *why, size_t why_size) {
    if (loaded()) return 1;
    snprintf(why, why_size, "%s", g_unavailable);
    return 0;
}

static int has_capture(void) { return loaded() && !g_no_capture[0]; }

/* ---- streams nobody holds --------------------------------------------------------- */

/* Streams the adapter made for itself and could not destroy (device_info's
 * temporary stream, after two failed destroys): destroyed again at the
 * next stream_create, stream_destroy or device_info, so that a failure
 * leaks nothing (each stream is destroyed by exactly one successful call). */
#define MAX_GRAVE 16
static pthread_mutex_t g_grave_lock = PTHREAD_MUTEX_INITIALIZER;
static kacl_stream g_grave[MAX_GRAVE];
static unsigned g_grave_n;

static void grave_add(kacl_stream s) {
    pthread_mutex_lock(&g_grave_lock);
    if (g_grave_n < MAX_GRAVE) g_grave[g_grave_n++] = s;
    pthread_mutex_unlock(&g_grave_lock);
}
static void grave_drain(void) {
    pthread_mutex_lock(&g_grave_lock);
    for (unsigned i = 0; i < g_grave_n;)
        if (ACL(aclrtDestroyStream, g_grave[i]) == KACL_SUCCESS)
            g_grave[i] = g_grave[--g_grave_n];
        else
            i++;
    pthread_mutex_unlock(&g_grave_lock);
}

/* ---- devices ------------------------------------------------------------------ */

static int a_current_device(int *d) {
    int32_t dev = 0;
    int st = note(ACL(aclrtGetDevice, &dev), "aclrtGetDevice");
    if (!st) *d = dev;
    return st;
}
static int a_device_count(int *n) {
    uint32_t c = 0;
    int st = note(ACL(aclrtGetDeviceCount, &c), "aclrtGetDeviceCount");
    if (!st) *n = (int)c;
    return st;
}
static int a_device_info(int device, kctx_device_info *info) {
    int cur = 0;
    int st = a_current_device(&cur);
    if (st) return st;
    if (device != cur)
        return kctx__svc_msgf(ACLA_INVALID,
                              "device_info: device %d is not the calling thread's current device "
                              "(%d): ACL describes the current device only",
                              device, cur);
    if (!g_acl.p_aclrtGetStreamResLimit)
        return kctx__svc_msgf(ACLA_UNSUPPORTED,
                              "device_info: %s has no aclrtGetStreamResLimit "
                              "(the AICore count)",
                              g_ld.path);
    /* on a stream of its own (not the default stream, which the runtime
     * would create for it); streams of earlier calls that could not be
     * destroyed go first */
    grave_drain();
    uint32_t cores = 0;
    kacl_stream tmp = NULL;
    st = note(ACL(aclrtCreateStreamWithConfig, &tmp, 0, 0), "aclrtCreateStreamWithConfig");
    if (st) return st;
    st = note(ACL(aclrtGetStreamResLimit, tmp, 0, &cores), "aclrtGetStreamResLimit(AICore)");
    /* The stream is nobody's but this call's: a failed destroy is tried
     * once more, then the stream goes to the grave (destroyed at the next
     * stream op), and the answer stands (the count was read or not). */
    if (ACL(aclrtDestroyStream, tmp) != KACL_SUCCESS &&
        ACL(aclrtDestroyStream, tmp) != KACL_SUCCESS)
        grave_add(tmp);
    if (st) return st;
    const char *soc = ACL(aclrtGetSocName);
    snprintf(info->name, sizeof info->name, "%s", soc ? soc : "Ascend");
    info->aicore_count = cores;
    info->max_params_size = ACL_MAX_PARAMS_SIZE;
    info->memory_capacity = 0; /* not queried (no aclrtGetMemInfo in acl_abi.h) */
    info->word_size = 4;
    info->alloc_alignment = 32; /* aclrtMalloc rounds sizes to 32 bytes (§A.2) */
    info->has_epoch = 0;
    info->can_check_ranges = 0;
    return KACL_SUCCESS;
}

/* ---- streams --------------------------------------------------------------------- */

#define AS_STREAM(s) ((kacl_stream)(uintptr_t)(s))
#define AS_EVENT(e) ((kacl_event)(uintptr_t)(e))

static int a_stream_create(kctx_pstream *s) {
    grave_drain();
    kacl_stream h = NULL;
    /* flag 0: no AICPU- or persistent-class stream (507000 in a capture) */
    int st = note(ACL(aclrtCreateStreamWithConfig, &h, 0, 0), "aclrtCreateStreamWithConfig");
    if (!st) *s = (kctx_pstream)(uintptr_t)h;
    return st;
}
static int a_stream_destroy(kctx_pstream s) {
    grave_drain();
    return note(ACL(aclrtDestroyStream, AS_STREAM(s)), "aclrtDestroyStream");
}
static int a_stream_sync(kctx_pstream s, uint32_t ms) {
    int32_t t = ms > (uint32_t)INT32_MAX ? INT32_MAX : (int32_t)ms;
    return note(ACL(aclrtSynchronizeStreamWithTimeout, AS_STREAM(s), t),
                "aclrtSynchronizeStreamWithTimeout");
}
/* Not-ready has no ACL status: the adapter answers it with the timeout
 * code's class's neighbour, a private status of the NOT_READY class. */
#define ACLA_NOT_READY (-6)
static int a_stream_query(kctx_pstream s) {
    int status = KACL_STREAM_STATUS_COMPLETE;
    int st = note(ACL(aclrtStreamQuery, AS_STREAM(s), &status), "aclrtStreamQuery");
    if (st) return st;
    return status == KACL_STREAM_STATUS_NOT_READY ? ACLA_NOT_READY : KACL_SUCCESS;
}
static kctx_pclass classify(int st) {
    return st == ACLA_NOT_READY ? KCTX_PCLASS_NOT_READY : a_classify(st);
}
static const char *status_name(int st) {
    return st == ACLA_NOT_READY ? "kctx-acl: stream not ready" : a_status_name(st);
}

static void hooks_observe(kacl_stream s, int cs, kacl_model m);
static _Thread_local kacl_stream tl_info_stream;
static _Thread_local kacl_model tl_info_model;

static int a_stream_info(kctx_pstream s, int *device, kctx_pcapture_status *status, uint64_t *id,
                         kctx_pgraph *graph) {
    int32_t dev = 0;
    int st = note(ACL(aclrtGetDevice, &dev), "aclrtGetDevice");
    if (st) return st;
    int cs = KACL_MODEL_RI_CAPTURE_STATUS_NONE;
    kacl_model m = NULL;
    if (has_capture()) {
        st = note(ACL(aclmdlRICaptureGetInfo, AS_STREAM(s), &cs, &m), "aclmdlRICaptureGetInfo");
        if (st) return st;
    }
    if (cs == KACL_MODEL_RI_CAPTURE_STATUS_NONE) m = NULL;
    if (has_capture()) {
        hooks_observe(AS_STREAM(s), cs, m);
        /* the first stream seen in a capture (a launch asks its caller
         * stream first, then maybe the AICPU stream) */
        if (m && m != tl_info_model) {
            tl_info_stream = AS_STREAM(s);
            tl_info_model = m;
        }
    }
    if (device) *device = dev;
    if (status) *status = (kctx_pcapture_status)cs;
    if (id) *id = (uint64_t)(uintptr_t)m;
    if (graph) *graph = (kctx_pgraph)(uintptr_t)m;
    return KACL_SUCCESS;
}

/* ---- events -------------------------------------------------------------------- */

static int a_event_create(kctx_pevent *e) {
    if (!g_acl.p_aclrtCreateEventExWithFlag)
        return kctx__svc_msgf(ACLA_UNSUPPORTED,
                              "event_create: %s has no "
                              "aclrtCreateEventExWithFlag",
                              g_ld.path);
    kacl_event h = NULL;
    int st = note(ACL(aclrtCreateEventExWithFlag, &h, KACL_EVENT_SYNC),
                  "aclrtCreateEventExWithFlag(ACL_EVENT_SYNC)");
    if (!st) *e = (kctx_pevent)(uintptr_t)h;
    return st;
}
static int a_event_destroy(kctx_pevent e) {
    return note(ACL(aclrtDestroyEvent, AS_EVENT(e)), "aclrtDestroyEvent");
}
static int a_event_record(kctx_pevent e, kctx_pstream s) {
    return note(ACL(aclrtRecordEvent, AS_EVENT(e), AS_STREAM(s)), "aclrtRecordEvent");
}
static int a_stream_wait_event(kctx_pstream s, kctx_pevent e) {
    return note(ACL(aclrtStreamWaitEvent, AS_STREAM(s), AS_EVENT(e)), "aclrtStreamWaitEvent");
}

/* ---- memory ------------------------------------------------------------------------ */

static int a_mem_alloc(size_t size, kctx_pdevptr *p) {
    void *d = NULL;
    int st = note(ACL(aclrtMalloc, &d, size, KACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    if (!st) *p = (kctx_pdevptr)(uintptr_t)d;
    return st;
}
static int a_mem_free(kctx_pdevptr p) {
    return note(ACL(aclrtFree, (void *)(uintptr_t)p), "aclrtFree");
}
static int a_memcpy_htod_async(kctx_pdevptr dst, const void *src, size_t size, kctx_pstream s) {
    return note(ACL(aclrtMemcpyAsync, (void *)(uintptr_t)dst, size, src, size,
                    KACL_MEMCPY_HOST_TO_DEVICE, AS_STREAM(s)),
                "aclrtMemcpyAsync(host to device)");
}
static int a_memcpy_dtoh_async(void *dst, kctx_pdevptr src, size_t size, kctx_pstream s) {
    return note(ACL(aclrtMemcpyAsync, dst, size, (const void *)(uintptr_t)src, size,
                    KACL_MEMCPY_DEVICE_TO_HOST, AS_STREAM(s)),
                "aclrtMemcpyAsync(device to host)");
}
static int a_memset_async(kctx_pdevptr dst, uint8_t v, size_t size, kctx_pstream s) {
    return note(ACL(aclrtMemsetAsync, (void *)(uintptr_t)dst, size, v, size, AS_STREAM(s)),
                "aclrtMemsetAsync");
}

/* One aligned 4-byte synchronous copy in the calling thread's RELAXED
 * capture mode (never restricted by a capture, §A.3); the previous mode is
 * restored. Whether a 4-byte aclrtMemcpy is single-copy atomic against
 * running device code is not documented (acl-platform.md D.2). */
static int word_copy(kctx_pdevptr ptr, uint32_t *host, int to_device) {
    if (ptr % 4)
        return kctx__svc_msgf(ACLA_INVALID, "device word 0x%llx is not 4-byte aligned",
                              (unsigned long long)ptr);
    int mode = KACL_MODEL_RI_CAPTURE_MODE_RELAXED;
    const int relax = g_acl.p_aclmdlRICaptureThreadExchangeMode != NULL;
    int st = relax ? note(ACL(aclmdlRICaptureThreadExchangeMode, &mode),
                          "aclmdlRICaptureThreadExchangeMode(word access)")
                   : KACL_SUCCESS;
    if (st) return st;
    void *dev = (void *)(uintptr_t)ptr;
    st = to_device ? note(ACL(aclrtMemcpy, dev, 4, host, 4, KACL_MEMCPY_HOST_TO_DEVICE),
                          "aclrtMemcpy(device word)")
                   : note(ACL(aclrtMemcpy, host, 4, dev, 4, KACL_MEMCPY_DEVICE_TO_HOST),
                          "aclrtMemcpy(device word)");
    if (relax) {
        int rst = ACL(aclmdlRICaptureThreadExchangeMode, &mode);
        if (!st) st = note(rst, "aclmdlRICaptureThreadExchangeMode(restore)");
    }
    return st;
}
static int a_atomic_read_u32(kctx_pdevptr p, uint32_t *v) {
    uint32_t w = 0;
    int st = word_copy(p, &w, 0);
    if (!st) *v = w;
    return st;
}
static int a_atomic_write_u32(kctx_pdevptr p, uint32_t v) { return word_copy(p, &v, 1); }

/* ---- modules and kernels ------------------------------------------------------------ */

/* A loaded binary and whether it is kctx's runtime programs (whose
 * AICPU programs get AICPU functions). */
typedef struct abin {
    kacl_bin bin;
    int programs;
} abin;

/* A function: the ACL handle and its target. */
typedef struct afunc {
    kacl_func fn;
    int cpu;
    struct afunc *next;
} afunc;

static int a_module_load(const void *bytes, size_t size, kctx_pmodule *m) {
    const int programs = bytes == (const void *)kctx_rt_elf_programs;
    abin *b = calloc(1, sizeof *b);
    if (!b) return kctx__svc_msgf(ACLA_NO_HOST_MEMORY, "module_load: out of host memory");
    int st = ACL(aclrtBinaryLoadFromData, bytes, size, NULL, &b->bin);
    if (st) {
        free(b);
        note(st, programs ? "aclrtBinaryLoadFromData(kctx's runtime programs)"
                          : "aclrtBinaryLoadFromData");
        /* A lost device, exhaustion, a timeout or a device error is that,
         * also for the runtime programs (K29: a fatal code must reach the
         * core as one); any other refusal of them is the missing build. */
        const kctx_pclass cls = a_classify(st);
        if (programs && cls != KCTX_PCLASS_DEVICE_LOST && cls != KCTX_PCLASS_NO_MEMORY &&
            cls != KCTX_PCLASS_TIMEOUT && cls != KCTX_PCLASS_DEVICE_ERROR) {
            kctx__svc_msg_append(
                0, "; kctx's runtime programs are built for the sim only: this ACL runtime "
                   "needs them built with CANN's compilers for its AICPU/AICore (not built by "
                   "kctx), so kernel mode is unsupported here (docs/acl.md)");
            return ACLA_NO_PROGRAMS;
        }
        if (!programs && cls == KCTX_PCLASS_INVALID) {
            kctx__svc_msg_append(0, "; the runtime refused the module (ACL %d)", st);
            return ACLA_BAD_MODULE;
        }
        return st;
    }
    b->programs = programs;
    *m = (kctx_pmodule)(uintptr_t)b;
    return KACL_SUCCESS;
}

/* Functions are freed with their module (kept on a list per module). */
typedef struct amod_fns {
    abin *bin;
    afunc *fns;
    struct amod_fns *next;
} amod_fns;
static pthread_mutex_t g_fn_lock = PTHREAD_MUTEX_INITIALIZER;
static amod_fns *g_mod_fns;

static int a_module_unload(kctx_pmodule m) {
    abin *b = (abin *)(uintptr_t)m;
    int st = note(ACL(aclrtBinaryUnLoad, b->bin), "aclrtBinaryUnLoad");
    if (st) return st;
    pthread_mutex_lock(&g_fn_lock);
    for (amod_fns **p = &g_mod_fns; *p; p = &(*p)->next)
        if ((*p)->bin == b) {
            amod_fns *e = *p;
            *p = e->next;
            while (e->fns) {
                afunc *f = e->fns;
                e->fns = f->next;
                free(f);
            }
            free(e);
            break;
        }
    pthread_mutex_unlock(&g_fn_lock);
    free(b);
    return KACL_SUCCESS;
}

/* The runtime's AICPU programs (platform.h, desc.programs). */
static int is_aicpu_program(const char *name) {
    static const char *const k[] = {"kctx_rt_acquire", "kctx_rt_scheduler", "kctx_rt_ho_acquire",
                                    "kctx_rt_ho_finalize"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(name, k[i]) == 0) return 1;
    return 0;
}

static int a_module_function(kctx_pmodule m, const char *name, kctx_pfunction *fn) {
    abin *b = (abin *)(uintptr_t)m;
    afunc *f = calloc(1, sizeof *f);
    amod_fns *e = NULL;
    if (!f) return kctx__svc_msgf(ACLA_NO_HOST_MEMORY, "module_function: out of host memory");
    f->cpu = b->programs && is_aicpu_program(name);
    int st;
    if (f->cpu && g_acl.p_aclrtRegisterCpuFunc)
        st = ACL(aclrtRegisterCpuFunc, b->bin, name, name, &f->fn);
    else
        st = ACL(aclrtBinaryGetFunction, b->bin, name, &f->fn);
    if (st) {
        note(st, f->cpu ? "aclrtRegisterCpuFunc" : "aclrtBinaryGetFunction");
        free(f);
        kctx__svc_msg_append(0, " (kernel '%s')", name);
        return a_classify(st) == KCTX_PCLASS_INVALID ? ACLA_BAD_MODULE : st;
    }
    pthread_mutex_lock(&g_fn_lock);
    for (e = g_mod_fns; e && e->bin != b; e = e->next) {
    }
    if (!e && (e = calloc(1, sizeof *e)) != NULL) {
        e->bin = b;
        e->next = g_mod_fns;
        g_mod_fns = e;
    }
    if (e) {
        f->next = e->fns;
        e->fns = f;
    }
    pthread_mutex_unlock(&g_fn_lock);
    if (!e) {
        free(f);
        return kctx__svc_msgf(ACLA_NO_HOST_MEMORY, "module_function: out of host memory");
    }
    *fn = (kctx_pfunction)(uintptr_t)f;
    return KACL_SUCCESS;
}

static int a_function_address(kctx_pfunction fn, uint64_t *addr) {
    if (!g_acl.p_aclrtGetFunctionAddr)
        return kctx__svc_msgf(ACLA_UNSUPPORTED, "function_address: %s has no aclrtGetFunctionAddr",
                              g_ld.path);
    void *aic = NULL, *aiv = NULL;
    int st = note(ACL(aclrtGetFunctionAddr, ((afunc *)(uintptr_t)fn)->fn, &aic, &aiv),
                  "aclrtGetFunctionAddr");
    if (!st) *addr = (uint64_t)(uintptr_t)aic;
    return st;
}

static int a_launch(kctx_pstream s, kctx_pfunction fn, kctx_ptarget target, uint32_t block_dim,
                    const void *params, size_t size) {
    afunc *f = (afunc *)(uintptr_t)fn;
    if (size > ACL_MAX_PARAMS_SIZE)
        return kctx__svc_msgf(ACLA_INVALID, "parameter block of %zu bytes exceeds %u", size,
                              ACL_MAX_PARAMS_SIZE);
    const int cpu = target == KCTX_PTARGET_AICPU;
    return note(ACL(aclrtLaunchKernelWithHostArgs, f->fn, cpu ? 1u : block_dim, AS_STREAM(s), NULL,
                    (void *)(uintptr_t)params, size, NULL, 0),
                "aclrtLaunchKernelWithHostArgs");
}

/* ---- capture ------------------------------------------------------------------------- */

static int a_exchange_capture_mode(kctx_pcapture_mode *mode) {
    int m = (int)*mode;
    int st = note(ACL(aclmdlRICaptureThreadExchangeMode, &m), "aclmdlRICaptureThreadExchangeMode");
    if (!st) *mode = (kctx_pcapture_mode)m;
    return st;
}

/* A graph lifetime hook: one record per attach, registered with
 * aclmdlRIDestroyRegisterCallback (K25: it runs once, when the model is
 * destroyed). Open question D.1 (acl-platform.md): whether the runtime also
 * runs it when the capture is discarded (507903) is not known, and if it
 * does not, a token attached during a capture that ends discarded would
 * never be released. So the adapter keeps every record whose model is still
 * capturing on a list, with the stream it was attached through (the caller
 * stream of the launch, from that thread's stream_info just before), and
 * whenever stream_info sees that stream again:
 *  - INVALIDATED with that model (the capture can only end discarded): the
 *    adapter unregisters the callback (aclmdlRIDestroyUnregisterCallback,
 *    the model still exists) and runs the hook itself, once;
 *  - not capturing that model any more (the capture ended): the record
 *    leaves the list (the runtime's callback owns it from then on).
 * Not covered (docs/acl.md): a capture invalidated and ended with no kctx
 * call on its stream in between, on a runtime that answers D.1 "never". */
typedef struct hook {
    kctx_phook_fn fn;
    void *user;
    kacl_model model;
    kacl_stream stream;
    int tracked; /* on g_hooks (g_hook_lock) */
    struct hook *next;
} hook;

static pthread_mutex_t g_hook_lock = PTHREAD_MUTEX_INITIALIZER;
static hook *g_hooks;
/* (tl_info_stream, tl_info_model: the last stream_info of the thread) */

static void untrack(hook *h) { /* g_hook_lock held */
    for (hook **p = &g_hooks; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            break;
        }
    h->tracked = 0;
}

static void hook_fire(void *p) {
    hook *h = p;
    pthread_mutex_lock(&g_hook_lock);
    if (h->tracked) untrack(h);
    pthread_mutex_unlock(&g_hook_lock);
    h->fn(h->user);
    free(h);
}

/* stream_info saw stream `s` in capture status `cs` with model `m`. */
static void hooks_observe(kacl_stream s, int cs, kacl_model m) {
    hook *doomed = NULL;
    pthread_mutex_lock(&g_hook_lock);
    for (hook **p = &g_hooks; *p;) {
        hook *h = *p;
        if (h->stream != s || (cs != KACL_MODEL_RI_CAPTURE_STATUS_NONE && h->model == m &&
                               cs == KACL_MODEL_RI_CAPTURE_STATUS_ACTIVE)) {
            p = &h->next;
            continue;
        }
        *p = h->next;
        h->tracked = 0;
        if (cs == KACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED && h->model == m &&
            g_acl.p_aclmdlRIDestroyUnregisterCallback &&
            ACL(aclmdlRIDestroyUnregisterCallback, h->model, hook_fire) == KACL_SUCCESS) {
            h->next = doomed; /* ours to run now */
            doomed = h;
        }
    }
    pthread_mutex_unlock(&g_hook_lock);
    while (doomed) {
        hook *h = doomed;
        doomed = h->next;
        h->fn(h->user);
        free(h);
    }
}

static int a_graph_attach_hook(kctx_pgraph g, kctx_phook_fn fn, void *user) {
    hook *h = calloc(1, sizeof *h);
    if (!h) return kctx__svc_msgf(ACLA_NO_HOST_MEMORY, "graph lifetime hook: out of host memory");
    h->fn = fn;
    h->user = user;
    h->model = (kacl_model)(uintptr_t)g;
    h->stream = tl_info_model == h->model ? tl_info_stream : NULL;
    pthread_mutex_lock(&g_hook_lock);
    int st = ACL(aclmdlRIDestroyRegisterCallback, h->model, hook_fire, h);
    if (!st && h->stream) {
        h->tracked = 1;
        h->next = g_hooks;
        g_hooks = h;
    }
    pthread_mutex_unlock(&g_hook_lock);
    if (st) {
        free(h);
        return note(st, "aclmdlRIDestroyRegisterCallback");
    }
    return KACL_SUCCESS;
}

static const kctx_platform_ops k_ops = {
    .size = sizeof(kctx_platform_ops),
    .version = KCTX_PLATFORM_VERSION,
    .classify = classify,
    .status_name = status_name,
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
    .device_epoch = NULL,    /* no epoch: quarantine is terminal (K30) */
    .mem_range_check = NULL, /* aclrtPointerGetAttributes gives no extent */
    .function_address = a_function_address,
    .exchange_capture_mode = a_exchange_capture_mode,
    .graph_attach_hook = a_graph_attach_hook,
    .bound_device = NULL, /* ACL has a thread-current device */
};

/* The same without capture (a runtime lacking a capture entry). */
static kctx_platform_ops g_ops_nocapture;

static kctx_platform_desc g_desc;
static kctx_platform_entry g_entry;
static pthread_once_t g_desc_once = PTHREAD_ONCE_INIT;

static void desc_init(void) {
    const int cap = has_capture();
    g_ops_nocapture = k_ops;
    g_ops_nocapture.exchange_capture_mode = NULL;
    g_ops_nocapture.graph_attach_hook = NULL;
    g_desc = (kctx_platform_desc){
        .size = sizeof(kctx_platform_desc),
        .version = KCTX_PLATFORM_VERSION,
        .name = "acl",
        .ops = cap || !loaded() ? &k_ops : &g_ops_nocapture,
        .variant_kind = KCTX_VARIANT_ASCEND_BIN, /* AICore kernels (docs/acl.md) */
        .programs = kctx_rt_elf_programs,
        .programs_size = kctx_rt_elf_programs_size,
        .strategies = KCTX_STRATEGY_BIT(KCTX_STRATEGY_RESIDENT) |
                      KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED),
        .default_strategy = KCTX_STRATEGY_RESIDENT,
        .max_params_size = ACL_MAX_PARAMS_SIZE,
        .has_capture = cap || !loaded(),
        .has_null_stream = 0, /* stream 0 names no stream (ACL's default stream is not taken) */
        .has_epoch = 0,
        .can_check_ranges = 0,
        .device_trace_na = NULL,
        .note = "runs only where kctx's runtime programs load (they are built for the sim: here, "
                "the ACL driver double; a real NPU needs them built with CANN's compilers, "
                "docs/acl.md)",
    };
    g_entry = (kctx_platform_entry){
        .size = sizeof(kctx_platform_entry),
        .version = KCTX_PLATFORM_VERSION,
        .name = "acl",
        .available = a_available,
        .desc = &g_desc,
        .lifecycle = NULL, /* program mode is not offered on ACL */
    };
}

const kctx_platform_entry *kctx_acl_platform_entry(void) {
    pthread_once(&g_desc_once, desc_init);
    return &g_entry;
}
