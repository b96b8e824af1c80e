/*
 * fault_layer.c — the failing layer in front of the ACL driver double
 * (tests only; tests/common/fault_layer.h says what a failing layer is):
 * build/platform/acl/double/libkctx_acl_fault_layer.so. KCTX_ACL_LIBRARY names
 * it (kctx's adapter and the suite's framework driver, fw_acl.c, load it as
 * libascendcl), KCTX_FAULT_LAYER_UNDER names the library behind it (the
 * double).
 *
 * It exports, by their ACL names and with acl_abi.h's types (checked at
 * compile time, below), every entry the adapter resolves (KACL_REQUIRED and
 * KACL_OPTIONAL, platform/acl/adapter.c) and the framework driver's own
 * (aclInit, aclrtSetDevice and the context entries), each a wrapper over
 * the double's entry (dlsym): kfl_enter counts a watched call and may fail
 * it (the double is then not called; the code is returned as the aclError,
 * and the two entries that return a string, aclrtGetSocName and
 * aclGetRecentErrMsg, return NULL). The wrappers report what they make
 * (streams, events, allocations, binaries and their functions, models,
 * contexts), destroy and name. ACL has no destroy for a function handle: a
 * function made from a binary is gone with the binary's unload, and a call
 * naming it afterwards is a violation. The framework's calls (capture,
 * models, its streams and memory) pass through the same wrappers unwatched:
 * neither counted nor failed.
 *
 * After a failure it made, the layer's text is the thread's next
 * aclGetRecentErrMsg (the double's would be a stale one). The double's test
 * hooks (kacl_double_calls, kacl_double_calls_reset) are passed through, so
 * fw_acl.c still recognises the double behind the layer.
 */
#include "fault_layer.h"

#include "acl_abi.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define API __attribute__((visibility("default")))

/* The framework driver's entries that are not the adapter's (fw_acl.c). */
typedef kacl_error (*kacl_fn_aclInit)(const char *config);
typedef kacl_error (*kacl_fn_aclrtSetDevice)(int32_t device);
typedef kacl_error (*kacl_fn_aclrtCreateContext)(kacl_context *context, int32_t device);
typedef kacl_error (*kacl_fn_aclrtDestroyContext)(kacl_context context);
typedef kacl_error (*kacl_fn_aclrtSetCurrentContext)(kacl_context context);

// clang-format off
#define LAYER_FW(X)                                                                              \
    X(aclInit, kacl_error, (const char *config))                                                 \
    X(aclrtSetDevice, kacl_error, (int32_t device))                                              \
    X(aclrtCreateContext, kacl_error, (kacl_context *context, int32_t device))                   \
    X(aclrtDestroyContext, kacl_error, (kacl_context context))                                   \
    X(aclrtSetCurrentContext, kacl_error, (kacl_context context))
// clang-format on

/* Every wrapped entry: exported with ACL's name and acl_abi.h's type. */
#define LAYER_ENTRIES(X) KACL_REQUIRED(X) KACL_OPTIONAL(X) LAYER_FW(X)

#define DECL_(name, ret, params) API ret name params;
LAYER_ENTRIES(DECL_)
#undef DECL_

/* The double's entries behind the wrappers. */
static struct {
#define M_(name, ret, params) kacl_fn_##name name;
    LAYER_ENTRIES(M_)
#undef M_
} g_real;

static void *g_under;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void resolve(void) {
    const char *path = getenv("KCTX_FAULT_LAYER_UNDER");
    if (!path || !*path) return;
    g_under = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g_under) return;
#define R_(name, ret, params) *(void **)&g_real.name = dlsym(g_under, #name);
    LAYER_ENTRIES(R_)
#undef R_
}

/* The failure the layer made last on this thread, for aclGetRecentErrMsg. */
static _Thread_local char tl_msg[200];
static _Thread_local int tl_has_msg;

static int injected(const char *entry, int code) {
    snprintf(tl_msg, sizeof tl_msg, "kctx fault layer: %s failed with %d (injected)", entry, code);
    tl_has_msg = 1;
    return code;
}

/* Count the call; fail it when armed (the double is not called). An entry
 * the library behind lacks answers 200001 (the layer exports it anyway). */
#define ENTER(name)                                          \
    do {                                                     \
        pthread_once(&g_once, resolve);                      \
        int code_ = kfl_enter(#name);                        \
        if (code_) return injected(#name, code_);            \
        if (!g_real.name) return KACL_ERROR_API_NOT_SUPPORT; \
    } while (0)
/* The same for the entries that return a string: a failure is NULL. */
#define ENTER_STR(name)                                       \
    do {                                                      \
        pthread_once(&g_once, resolve);                       \
        int code_ = kfl_enter(#name);                         \
        if (code_) return (void)injected(#name, code_), NULL; \
        if (!g_real.name) return NULL;                        \
    } while (0)
#define H(x) ((uint64_t)(uintptr_t)(x))

/* ---- function handles: gone with their binary ----------------------------- */

#define MAX_FUNCS 4096
static pthread_mutex_t g_fn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uint64_t fn, bin; } g_fns[MAX_FUNCS];
static size_t g_nfns;

/* A call made function f of binary b. */
static void func_made(kacl_func f, kacl_bin b, const char *entry) {
    pthread_mutex_lock(&g_fn_lock);
    size_t i = 0;
    while (i < g_nfns && g_fns[i].fn != H(f)) i++;
    if (i == g_nfns && g_nfns < MAX_FUNCS) g_nfns++;
    if (i < g_nfns) {
        g_fns[i].fn = H(f);
        g_fns[i].bin = H(b);
    }
    pthread_mutex_unlock(&g_fn_lock);
    kfl_made(H(f), KFL_OBJECT, entry);
}

/* Binary b was unloaded: its functions are gone. */
static void funcs_gone(kacl_bin b) {
    pthread_mutex_lock(&g_fn_lock);
    for (size_t i = 0; i < g_nfns;) {
        if (g_fns[i].bin != H(b)) {
            i++;
            continue;
        }
        kfl_gone(g_fns[i].fn);
        g_fns[i] = g_fns[--g_nfns];
    }
    pthread_mutex_unlock(&g_fn_lock);
}

/* ---- devices, contexts, errors (no handle of kctx's) ------------------------ */

kacl_error aclInit(const char *config) {
    ENTER(aclInit);
    return g_real.aclInit(config);
}
kacl_error aclrtSetDevice(int32_t device) {
    ENTER(aclrtSetDevice);
    return g_real.aclrtSetDevice(device);
}
kacl_error aclrtCreateContext(kacl_context *context, int32_t device) {
    ENTER(aclrtCreateContext);
    kacl_error st = g_real.aclrtCreateContext(context, device);
    if (st == KACL_SUCCESS && context) kfl_made(H(*context), KFL_OBJECT, "aclrtCreateContext");
    return st;
}
kacl_error aclrtDestroyContext(kacl_context context) {
    ENTER(aclrtDestroyContext);
    kfl_destroying(H(context), "aclrtDestroyContext");
    kacl_error st = g_real.aclrtDestroyContext(context);
    if (st == KACL_SUCCESS) kfl_gone(H(context));
    return st;
}
kacl_error aclrtSetCurrentContext(kacl_context context) {
    ENTER(aclrtSetCurrentContext);
    kfl_use(H(context), "aclrtSetCurrentContext");
    return g_real.aclrtSetCurrentContext(context);
}
kacl_error aclrtGetDevice(int32_t *device_id) {
    ENTER(aclrtGetDevice);
    return g_real.aclrtGetDevice(device_id);
}
kacl_error aclrtGetCurrentContext(kacl_context *context) {
    ENTER(aclrtGetCurrentContext);
    return g_real.aclrtGetCurrentContext(context);
}
kacl_error aclrtGetDeviceCount(uint32_t *count) {
    ENTER(aclrtGetDeviceCount);
    return g_real.aclrtGetDeviceCount(count);
}
const char *aclrtGetSocName(void) {
    ENTER_STR(aclrtGetSocName);
    return g_real.aclrtGetSocName();
}
kacl_error aclrtGetDeviceInfo(uint32_t device_id, int attr, int64_t *value) {
    ENTER(aclrtGetDeviceInfo);
    return g_real.aclrtGetDeviceInfo(device_id, attr, value);
}
kacl_error aclrtQueryDeviceStatus(int32_t device_id, int *status) {
    ENTER(aclrtQueryDeviceStatus);
    return g_real.aclrtQueryDeviceStatus(device_id, status);
}
const char *aclGetRecentErrMsg(void) {
    ENTER_STR(aclGetRecentErrMsg);
    if (tl_has_msg) {
        tl_has_msg = 0;
        return tl_msg;
    }
    return g_real.aclGetRecentErrMsg();
}
kacl_error aclrtGetLastError(int level) {
    ENTER(aclrtGetLastError);
    return g_real.aclrtGetLastError(level);
}
kacl_error aclrtPeekAtLastError(int level) {
    ENTER(aclrtPeekAtLastError);
    return g_real.aclrtPeekAtLastError(level);
}
kacl_error aclrtExceptionInfoCallbackRegister(kacl_exception_callback fn) {
    ENTER(aclrtExceptionInfoCallbackRegister);
    return g_real.aclrtExceptionInfoCallbackRegister(fn);
}
kacl_error aclrtExceptionInfoCallbackUnregister(kacl_exception_callback fn) {
    ENTER(aclrtExceptionInfoCallbackUnregister);
    return g_real.aclrtExceptionInfoCallbackUnregister(fn);
}

/* ---- streams ---------------------------------------------------------------- */

kacl_error aclrtCreateStreamWithConfig(kacl_stream *stream, uint32_t priority, uint32_t flag) {
    ENTER(aclrtCreateStreamWithConfig);
    kacl_error st = g_real.aclrtCreateStreamWithConfig(stream, priority, flag);
    if (st == KACL_SUCCESS && stream)
        kfl_made(H(*stream), KFL_STREAM, "aclrtCreateStreamWithConfig");
    return st;
}
kacl_error aclrtDestroyStream(kacl_stream stream) {
    ENTER(aclrtDestroyStream);
    kfl_destroying(H(stream), "aclrtDestroyStream");
    kacl_error st = g_real.aclrtDestroyStream(stream);
    if (st == KACL_SUCCESS) kfl_gone(H(stream));
    return st;
}
kacl_error aclrtSynchronizeStreamWithTimeout(kacl_stream stream, int32_t timeout_ms) {
    ENTER(aclrtSynchronizeStreamWithTimeout);
    kfl_use(H(stream), "aclrtSynchronizeStreamWithTimeout");
    return g_real.aclrtSynchronizeStreamWithTimeout(stream, timeout_ms);
}
kacl_error aclrtStreamQuery(kacl_stream stream, int *status) {
    ENTER(aclrtStreamQuery);
    kfl_use(H(stream), "aclrtStreamQuery");
    return g_real.aclrtStreamQuery(stream, status);
}
kacl_error aclrtSetStreamFailureMode(kacl_stream stream, uint64_t mode) {
    ENTER(aclrtSetStreamFailureMode);
    kfl_use(H(stream), "aclrtSetStreamFailureMode");
    return g_real.aclrtSetStreamFailureMode(stream, mode);
}
kacl_error aclrtGetStreamResLimit(kacl_stream stream, int type, uint32_t *value) {
    ENTER(aclrtGetStreamResLimit);
    kfl_use(H(stream), "aclrtGetStreamResLimit");
    return g_real.aclrtGetStreamResLimit(stream, type, value);
}

/* ---- events ------------------------------------------------------------------ */

kacl_error aclrtCreateEventExWithFlag(kacl_event *event, uint32_t flag) {
    ENTER(aclrtCreateEventExWithFlag);
    kacl_error st = g_real.aclrtCreateEventExWithFlag(event, flag);
    if (st == KACL_SUCCESS && event) kfl_made(H(*event), KFL_EVENT, "aclrtCreateEventExWithFlag");
    return st;
}
kacl_error aclrtDestroyEvent(kacl_event event) {
    ENTER(aclrtDestroyEvent);
    kfl_destroying(H(event), "aclrtDestroyEvent");
    kacl_error st = g_real.aclrtDestroyEvent(event);
    if (st == KACL_SUCCESS) kfl_gone(H(event));
    return st;
}
kacl_error aclrtRecordEvent(kacl_event event, kacl_stream stream) {
    ENTER(aclrtRecordEvent);
    kfl_use(H(event), "aclrtRecordEvent");
    kfl_use(H(stream), "aclrtRecordEvent");
    return g_real.aclrtRecordEvent(event, stream);
}
kacl_error aclrtRecordEventWithFlag(kacl_event event, kacl_stream stream, uint32_t flag) {
    ENTER(aclrtRecordEventWithFlag);
    kfl_use(H(event), "aclrtRecordEventWithFlag");
    kfl_use(H(stream), "aclrtRecordEventWithFlag");
    return g_real.aclrtRecordEventWithFlag(event, stream, flag);
}
kacl_error aclrtStreamWaitEvent(kacl_stream stream, kacl_event event) {
    ENTER(aclrtStreamWaitEvent);
    kfl_use(H(stream), "aclrtStreamWaitEvent");
    kfl_use(H(event), "aclrtStreamWaitEvent");
    return g_real.aclrtStreamWaitEvent(stream, event);
}
kacl_error aclrtStreamWaitEventWithFlag(kacl_stream stream, kacl_event event, int32_t timeout,
                                        uint32_t flag) {
    ENTER(aclrtStreamWaitEventWithFlag);
    kfl_use(H(stream), "aclrtStreamWaitEventWithFlag");
    kfl_use(H(event), "aclrtStreamWaitEventWithFlag");
    return g_real.aclrtStreamWaitEventWithFlag(stream, event, timeout, flag);
}

/* ---- memory: the device side of a copy is named (a host address may be
 * anything, a freed device one's among them) ---------------------------------- */

kacl_error aclrtMalloc(void **dev_ptr, size_t size, int policy) {
    ENTER(aclrtMalloc);
    kacl_error st = g_real.aclrtMalloc(dev_ptr, size, policy);
    if (st == KACL_SUCCESS && dev_ptr) kfl_made(H(*dev_ptr), KFL_MEMORY, "aclrtMalloc");
    return st;
}
kacl_error aclrtFree(void *dev_ptr) {
    ENTER(aclrtFree);
    kfl_destroying(H(dev_ptr), "aclrtFree");
    kacl_error st = g_real.aclrtFree(dev_ptr);
    if (st == KACL_SUCCESS) kfl_gone(H(dev_ptr));
    return st;
}
static void copy_uses(void *dst, const void *src, int kind, const char *entry) {
    if (kind == KACL_MEMCPY_HOST_TO_DEVICE || kind == KACL_MEMCPY_DEVICE_TO_DEVICE)
        kfl_use(H(dst), entry);
    if (kind == KACL_MEMCPY_DEVICE_TO_HOST || kind == KACL_MEMCPY_DEVICE_TO_DEVICE)
        kfl_use(H(src), entry);
}
kacl_error aclrtMemcpy(void *dst, size_t dest_max, const void *src, size_t count, int kind) {
    ENTER(aclrtMemcpy);
    copy_uses(dst, src, kind, "aclrtMemcpy");
    return g_real.aclrtMemcpy(dst, dest_max, src, count, kind);
}
kacl_error aclrtMemcpyAsync(void *dst, size_t dest_max, const void *src, size_t count, int kind,
                            kacl_stream stream) {
    ENTER(aclrtMemcpyAsync);
    copy_uses(dst, src, kind, "aclrtMemcpyAsync");
    kfl_use(H(stream), "aclrtMemcpyAsync");
    return g_real.aclrtMemcpyAsync(dst, dest_max, src, count, kind, stream);
}
kacl_error aclrtMemsetAsync(void *dev_ptr, size_t max_count, int32_t value, size_t count,
                            kacl_stream stream) {
    ENTER(aclrtMemsetAsync);
    kfl_use(H(dev_ptr), "aclrtMemsetAsync");
    kfl_use(H(stream), "aclrtMemsetAsync");
    return g_real.aclrtMemsetAsync(dev_ptr, max_count, value, count, stream);
}

/* ---- binaries, functions, launches ------------------------------------------- */

kacl_error aclrtBinaryLoadFromData(const void *data, size_t length,
                                   const kacl_bin_load_options *options, kacl_bin *bin) {
    ENTER(aclrtBinaryLoadFromData);
    kacl_error st = g_real.aclrtBinaryLoadFromData(data, length, options, bin);
    if (st == KACL_SUCCESS && bin) kfl_made(H(*bin), KFL_MODULE, "aclrtBinaryLoadFromData");
    return st;
}
kacl_error aclrtBinaryUnLoad(kacl_bin bin) {
    ENTER(aclrtBinaryUnLoad);
    kfl_destroying(H(bin), "aclrtBinaryUnLoad");
    kacl_error st = g_real.aclrtBinaryUnLoad(bin);
    if (st == KACL_SUCCESS) {
        funcs_gone(bin);
        kfl_gone(H(bin));
    }
    return st;
}
kacl_error aclrtBinaryGetFunction(kacl_bin bin, const char *kernel_name, kacl_func *func) {
    ENTER(aclrtBinaryGetFunction);
    kfl_use(H(bin), "aclrtBinaryGetFunction");
    kacl_error st = g_real.aclrtBinaryGetFunction(bin, kernel_name, func);
    if (st == KACL_SUCCESS && func) func_made(*func, bin, "aclrtBinaryGetFunction");
    return st;
}
kacl_error aclrtRegisterCpuFunc(kacl_bin bin, const char *func_name, const char *kernel_name,
                                kacl_func *func) {
    ENTER(aclrtRegisterCpuFunc);
    kfl_use(H(bin), "aclrtRegisterCpuFunc");
    kacl_error st = g_real.aclrtRegisterCpuFunc(bin, func_name, kernel_name, func);
    if (st == KACL_SUCCESS && func) func_made(*func, bin, "aclrtRegisterCpuFunc");
    return st;
}
kacl_error aclrtGetFunctionAddr(kacl_func func, void **aic_addr, void **aiv_addr) {
    ENTER(aclrtGetFunctionAddr);
    kfl_use(H(func), "aclrtGetFunctionAddr");
    return g_real.aclrtGetFunctionAddr(func, aic_addr, aiv_addr);
}
kacl_error aclrtLaunchKernelWithHostArgs(kacl_func func, uint32_t num_blocks, kacl_stream stream,
                                         kacl_launch_cfg *cfg, void *host_args, size_t args_size,
                                         kacl_placeholder *placeholders, size_t placeholder_num) {
    ENTER(aclrtLaunchKernelWithHostArgs);
    kfl_use(H(func), "aclrtLaunchKernelWithHostArgs");
    kfl_use(H(stream), "aclrtLaunchKernelWithHostArgs");
    return g_real.aclrtLaunchKernelWithHostArgs(func, num_blocks, stream, cfg, host_args, args_size,
                                                placeholders, placeholder_num);
}

/* ---- capture and models (the framework's; kctx names them in its graph
 * hooks and capture queries) ------------------------------------------------- */

kacl_error aclmdlRICaptureBegin(kacl_stream stream, int mode) {
    ENTER(aclmdlRICaptureBegin);
    kfl_use(H(stream), "aclmdlRICaptureBegin");
    return g_real.aclmdlRICaptureBegin(stream, mode);
}
kacl_error aclmdlRICaptureEnd(kacl_stream stream, kacl_model *model) {
    ENTER(aclmdlRICaptureEnd);
    kfl_use(H(stream), "aclmdlRICaptureEnd");
    kacl_error st = g_real.aclmdlRICaptureEnd(stream, model);
    if (st == KACL_SUCCESS && model) kfl_made(H(*model), KFL_OBJECT, "aclmdlRICaptureEnd");
    return st;
}
kacl_error aclmdlRICaptureGetInfo(kacl_stream stream, int *status, kacl_model *model) {
    ENTER(aclmdlRICaptureGetInfo);
    kfl_use(H(stream), "aclmdlRICaptureGetInfo");
    return g_real.aclmdlRICaptureGetInfo(stream, status, model);
}
kacl_error aclmdlRICaptureThreadExchangeMode(int *mode) {
    ENTER(aclmdlRICaptureThreadExchangeMode);
    return g_real.aclmdlRICaptureThreadExchangeMode(mode);
}
kacl_error aclmdlRIExecuteAsync(kacl_model model, kacl_stream stream) {
    ENTER(aclmdlRIExecuteAsync);
    kfl_use(H(model), "aclmdlRIExecuteAsync");
    kfl_use(H(stream), "aclmdlRIExecuteAsync");
    return g_real.aclmdlRIExecuteAsync(model, stream);
}
kacl_error aclmdlRIDestroy(kacl_model model) {
    ENTER(aclmdlRIDestroy);
    kfl_destroying(H(model), "aclmdlRIDestroy");
    kacl_error st = g_real.aclmdlRIDestroy(model);
    if (st == KACL_SUCCESS) kfl_gone(H(model));
    return st;
}
kacl_error aclmdlRIGetId(kacl_model model, uint32_t *model_id) {
    ENTER(aclmdlRIGetId);
    kfl_use(H(model), "aclmdlRIGetId");
    return g_real.aclmdlRIGetId(model, model_id);
}
kacl_error aclmdlRIDestroyRegisterCallback(kacl_model model, kacl_callback fn, void *user) {
    ENTER(aclmdlRIDestroyRegisterCallback);
    kfl_use(H(model), "aclmdlRIDestroyRegisterCallback");
    return g_real.aclmdlRIDestroyRegisterCallback(model, fn, user);
}
kacl_error aclmdlRIDestroyUnregisterCallback(kacl_model model, kacl_callback fn) {
    ENTER(aclmdlRIDestroyUnregisterCallback);
    kfl_use(H(model), "aclmdlRIDestroyUnregisterCallback");
    return g_real.aclmdlRIDestroyUnregisterCallback(model, fn);
}

/* Every wrapper has its entry's type (acl_abi.h): a missing or mistyped
 * one does not compile. */
#define TYPED_(name, ret, params) \
    static const kacl_fn_##name chk_##name __attribute__((unused)) = name;
LAYER_ENTRIES(TYPED_)
#undef TYPED_

/* ---- the double's test hooks, passed through ----------------------------------- */

API uint64_t kacl_double_calls(const char *name);
API uint64_t kacl_double_calls(const char *name) {
    pthread_once(&g_once, resolve);
    uint64_t (*fn)(const char *) = NULL;
    if (g_under) *(void **)&fn = dlsym(g_under, "kacl_double_calls");
    return fn ? fn(name) : UINT64_MAX;
}
API void kacl_double_calls_reset(void);
API void kacl_double_calls_reset(void) {
    pthread_once(&g_once, resolve);
    void (*fn)(void) = NULL;
    if (g_under) *(void **)&fn = dlsym(g_under, "kacl_double_calls_reset");
    if (fn) fn();
}

/* ---- the control table ---------------------------------------------------------- */

/* ACL_ERROR_RT_FAILURE: class "other", KCTX_PLATFORM_ERROR (docs/acl.md);
 * ACL_ERROR_RT_LOST_HEARTBEAT: class fatal, KCTX_DEVICE_LOST (K29). */
API const kfl_control *kctx_fault_layer_control(void);
API const kfl_control *kctx_fault_layer_control(void) {
    return kfl_control_of("acl", KACL_ERROR_RT_FAILURE, KACL_ERROR_RT_LOST_HEARTBEAT);
}
