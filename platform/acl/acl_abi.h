/*
 * acl_abi.h — kctx's own declarations of the subset of Ascend's ACL runtime
 * API (libascendcl.so, CANN) that the acl platform's adapter, its driver
 * double (platform/acl/double) and the double's rule tests use: handle types,
 * flag and enum values, error codes, one function-pointer type per entry,
 * and X-macro tables of the entry names for the counted loader
 * (platform/common/loader.h).
 *
 * Why kctx's own. CANN's headers (acl/acl_rt.h, acl/acl_base_rt.h,
 * acl/error_codes/rt_error_codes.h) are licensed for use in systems with
 * Huawei AI processors only, so nothing built or run on kctx's development
 * and CI machines compiles against them and the project never fetches or
 * ships them. Everything here is written from the documented facts gathered
 * in the design note acl-platform.md (§A.1-A.7: hiascend.com API pages and
 * the open-source CANN runtime's public API reference; "RT:n" below is a
 * line of that runtime's include/external/acl/acl_rt.h at 681ef761, ACL
 * 1.17.0), the way torch_npu's run-time loader resolves entries by name. A
 * value or layout those facts do not give is marked "inferred, not
 * verified". Where a CANN toolkit is installed (a machine with an NPU), the
 * board check (scripts/npu-check.sh, issue 25 item 7) compares every
 * declaration here with the vendor's prototype; nothing here ran on an NPU.
 *
 * Naming. Every identifier is kctx-prefixed (KACL_*, kacl_*) so that this
 * header and the vendor's can be included together by that check: KACL_X
 * mirrors ACL's X (KACL_ERROR_RT_CAPTURE_DEPENDENCY is
 * ACL_ERROR_RT_CAPTURE_DEPENDENCY, kacl_stream is aclrtStream), and a
 * function-pointer type is kacl_fn_<ACL entry name>. Entries are resolved
 * by their ACL names. ACL enum arguments are declared int (an ACL enum is
 * int-sized on the 64-bit ABIs CANN supports; inferred).
 *
 * The entry tables (X-macro lists; X(name, return type, (parameters))):
 *  - KACL_REQUIRED: what the adapter needs for kernel mode; a library
 *    missing one of them is not a usable ACL runtime.
 *  - KACL_OPTIONAL: entries absent from some CANN releases or products
 *    (the capture family, Ex events, the destroy callback, the 107024
 *    escape...): resolve them one by one (kctx__loader_sym); a missing one
 *    turns its capability off (acl-platform.md §A.1).
 *  - KACL_NOT_KERNEL_MODE: typed entries kernel mode never calls on its
 *    launch path or at all (synchronising queries, the non-Ex event path,
 *    synchronous device-wide calls): the double implements them and the
 *    rule tests call them; an adapter lists them among its never-call
 *    entries so that their zero counts are answers (K19).
 *  - KACL_NEVER: names only (acl-platform.md §A.6, device and process
 *    lifecycle and device-global knobs): never resolved by the adapter,
 *    listed so that their counters exist (K4).
 */
#ifndef KCTX_PLATFORM_ACL_ACL_ABI_H
#define KCTX_PLATFORM_ACL_ACL_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ---- handle types and status (acl_base_rt.h:46-62) ------------------------ */

typedef void *kacl_stream;                 /* aclrtStream; NULL is the default stream */
typedef void *kacl_event;                  /* aclrtEvent */
typedef void *kacl_context;                /* aclrtContext */
typedef void *kacl_model;                  /* aclmdlRI: a captured model running instance */
typedef void *kacl_bin;                    /* aclrtBinHandle: a loaded device binary */
typedef void *kacl_func;                   /* aclrtFuncHandle: a kernel of a loaded binary */
typedef int kacl_error;                    /* aclError; KACL_SUCCESS is 0 */
typedef void (*kacl_callback)(void *user); /* aclrtCallback (the destroy callback's
                                              type; inferred: one void* argument,
                                              as RT:4926 describes it) */

/* ---- stream flags (RT:36-41) and failure modes (RT:48-49) ---------------- */

#define KACL_STREAM_FAST_LAUNCH 0x1u
#define KACL_STREAM_FAST_SYNC 0x2u
#define KACL_STREAM_PERSISTENT 0x4u
#define KACL_STREAM_HUGE 0x8u
#define KACL_STREAM_CPU_SCHEDULE 0x10u
#define KACL_STREAM_DEVICE_USE_ONLY 0x20u

#define KACL_CONTINUE_ON_FAILURE 0
#define KACL_STOP_ON_FAILURE 1

/* aclrtStreamStatus (RT:134-136) */
#define KACL_STREAM_STATUS_COMPLETE 0
#define KACL_STREAM_STATUS_NOT_READY 1

/* ---- events (RT:28-33, 100-103, 123-124) ---------------------------------- */

/* aclrtCreateEventExWithFlag / aclrtCreateEventWithFlag flags */
#define KACL_EVENT_SYNC 0x1u
#define KACL_EVENT_CAPTURE_STREAM_PROGRESS 0x2u
#define KACL_EVENT_TIME_LINE 0x8u
#define KACL_EVENT_DEVICE_USE_ONLY 0x10u
#define KACL_EVENT_EXTERNAL 0x20u
#define KACL_EVENT_IPC 0x40u
/* aclrtRecordEventWithFlag: an "ACL graph external record" */
#define KACL_EVENT_RECORD_EXTERNAL 0x1u
/* aclrtStreamWaitEventWithFlag: wait inside a capture on a record made
 * outside it (the documented escape from 107024; its timeout must be 0) */
#define KACL_EVENT_WAIT_EXTERNAL 0x1u
/* aclrtEventRecordedStatus (note: the reverse of the deprecated
 * aclrtQueryEvent's ACL_EVENT_STATUS_COMPLETE 0) */
#define KACL_EVENT_RECORDED_STATUS_NOT_READY 0
#define KACL_EVENT_RECORDED_STATUS_COMPLETE 1

/* ---- memory (RT:145-152, 178-185) ------------------------------------------ */

/* aclrtMemcpyKind */
#define KACL_MEMCPY_HOST_TO_HOST 0
#define KACL_MEMCPY_HOST_TO_DEVICE 1
#define KACL_MEMCPY_DEVICE_TO_HOST 2
#define KACL_MEMCPY_DEVICE_TO_DEVICE 3
#define KACL_MEMCPY_DEFAULT 4
/* aclrtMemMallocPolicy */
#define KACL_MEM_MALLOC_HUGE_FIRST 0
#define KACL_MEM_MALLOC_HUGE_ONLY 1
#define KACL_MEM_MALLOC_NORMAL_ONLY 2
#define KACL_MEM_MALLOC_HUGE_FIRST_P2P 3
#define KACL_MEM_MALLOC_HUGE1G_ONLY_P2P 7

/* ---- devices (RT:393-397) and last-error level (RT:470-472) -------------- */

/* aclrtDeviceStatus */
#define KACL_RT_DEVICE_STATUS_NORMAL 0
#define KACL_RT_DEVICE_STATUS_ABNORMAL 1
/* aclrtLastErrLevel (its only value in the facts) */
#define KACL_RT_THREAD_LEVEL 0

/* ---- capture (RT:407-417) -------------------------------------------------- */

/* aclmdlRICaptureMode */
#define KACL_MODEL_RI_CAPTURE_MODE_GLOBAL 0
#define KACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL 1
#define KACL_MODEL_RI_CAPTURE_MODE_RELAXED 2
/* aclmdlRICaptureStatus */
#define KACL_MODEL_RI_CAPTURE_STATUS_NONE 0
#define KACL_MODEL_RI_CAPTURE_STATUS_ACTIVE 1
#define KACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED 2

/* ---- kernel launch (RT:522-570, 5209) --------------------------------------
 * aclrtLaunchKernelWithHostArgs(func, numBlocks, stream, cfg, hostArgs,
 * argsSize, placeHolderArray, placeHolderNum) copies hostArgs at enqueue.
 * The layouts below are inferred, not verified: the facts say only that
 * aclrtLaunchKernelCfg carries an attribute array (aclrtLaunchKernelAttrId)
 * and that placeholders name places in the argument block. kctx passes cfg
 * NULL and no placeholders (placeHolderNum 0), so that neither layout is
 * ever read by a real runtime on kctx's behalf. */
typedef struct kacl_launch_attr {
    int id;         /* aclrtLaunchKernelAttrId (inferred) */
    uint64_t value; /* the attribute's value (inferred: a union in CANN) */
} kacl_launch_attr;
typedef struct kacl_launch_cfg {
    kacl_launch_attr *attrs; /* inferred */
    size_t num_attrs;        /* inferred */
} kacl_launch_cfg;
typedef struct kacl_placeholder {
    uint32_t addr_offset; /* inferred: where in hostArgs the device address goes */
    uint32_t data_offset; /* inferred: where the data it points to starts */
} kacl_placeholder;
/* aclrtBinaryLoadFromData's options (inferred: kctx passes NULL, which the
 * facts allow, "options|NULL") */
typedef struct kacl_bin_load_options kacl_bin_load_options;

/* ---- error codes (acl-platform.md §A.7) ----------------------------------- */

#define KACL_SUCCESS 0 /* ACL_SUCCESS = ACL_ERROR_NONE = ACL_RT_SUCCESS */
/* ACL layer (acl_base_rt.h:65-136) */
#define KACL_ERROR_INVALID_PARAM 100000
#define KACL_ERROR_UNINITIALIZE 100001
#define KACL_ERROR_REPEAT_INITIALIZE 100002
#define KACL_ERROR_BAD_ALLOC 200000
#define KACL_ERROR_API_NOT_SUPPORT 200001
#define KACL_ERROR_INVALID_DEVICE 200002
#define KACL_ERROR_FEATURE_UNSUPPORTED 200006
#define KACL_ERROR_INTERNAL_ERROR 500000
#define KACL_ERROR_FAILURE 500001
#define KACL_ERROR_RT_FAILURE 500003
/* runtime 107xxx (rt_error_codes.h:20-67) */
#define KACL_ERROR_RT_PARAM_INVALID 107000
#define KACL_ERROR_RT_INVALID_DEVICEID 107001
#define KACL_ERROR_RT_CONTEXT_NULL 107002
#define KACL_ERROR_RT_STREAM_CONTEXT 107003
#define KACL_ERROR_RT_WAIT_TIMEOUT 107019
#define KACL_ERROR_RT_TASK_TIMEOUT 107020
#define KACL_ERROR_RT_DEVICE_TASK_ABORT 107022
#define KACL_ERROR_RT_STREAM_ABORT 107023
#define KACL_ERROR_RT_CAPTURE_DEPENDENCY 107024
#define KACL_ERROR_RT_STREAM_UNJOINED 107025
#define KACL_ERROR_RT_MODEL_CAPTURED 107026
#define KACL_ERROR_RT_STREAM_CAPTURED 107027
#define KACL_ERROR_RT_EVENT_CAPTURED 107028
#define KACL_ERROR_RT_STREAM_NOT_CAPTURED 107029
#define KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT 107030
#define KACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT 107031
#define KACL_ERROR_STREAM_CAPTURE_CONFLICT 107032 /* no RT_ in ACL's name */
#define KACL_ERROR_RT_TASK_GROUP_STATUS 107033
#define KACL_ERROR_RT_TASK_GROUP_INTERRUPTED 107034
#define KACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED 107036
#define KACL_ERROR_RT_MODEL_RUNNING 107037
#define KACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD 107038
#define KACL_ERROR_RT_MODEL_UPDATE_FAILED 107040
#define KACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC 107041
#define KACL_ERROR_RT_SUB_ACLGRAPH_IS_CAPTURING 107045
/* runtime 207xxx (rt_error_codes.h:69-88) */
#define KACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define KACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define KACL_ERROR_RT_RESOURCE_ALLOC_FAIL 207005
#define KACL_ERROR_RT_NO_EVENT_RESOURCE 207007
#define KACL_ERROR_RT_NO_STREAM_RESOURCE 207008
#define KACL_ERROR_RT_DEVICE_OOM 207018
/* runtime 507xxx (rt_error_codes.h:102-154; 507000 is the internal
 * RT_ERROR_STREAM_INVALID's external code, acl-platform.md A.2 "Flag trap";
 * 507046/507047 are A.2's sync timeouts) */
#define KACL_ERROR_RT_INTERNAL_ERROR 507000 /* name inferred; the code is sourced */
#define KACL_ERROR_RT_LOST_HEARTBEAT 507010
#define KACL_ERROR_RT_AICORE_EXCEPTION 507015
#define KACL_ERROR_RT_AICPU_EXCEPTION 507018
#define KACL_ERROR_RT_STREAM_SYNC_TIMEOUT 507046
#define KACL_ERROR_RT_EVENT_SYNC_TIMEOUT 507047
#define KACL_ERROR_RT_DEVICE_MEM_ERROR 507053        /* name inferred ("memory ECC") */
#define KACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR 507054 /* name inferred ("HBM ECC") */
#define KACL_ERROR_RT_DRV_INTERNAL_ERROR 507899
#define KACL_ERROR_RT_AICPU_INTERNAL_ERROR 507900
#define KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED 507903

/* ---- the entries ------------------------------------------------------------
 * X(name, return type, (parameters)) per entry; the type of a pointer to it
 * is kacl_fn_<name> (KACL_DECLARE_TYPES below). Parameter names and order
 * are the facts' (acl-platform.md A.2-A.5, "in words"). */

typedef struct kacl_exception_info kacl_exception_info; /* aclrtExceptionInfo, opaque */
typedef void (*kacl_exception_callback)(kacl_exception_info *info);

// clang-format off
#define KACL_REQUIRED(X)                                                                         \
    /* devices and the borrowed context (A.2) */                                                 \
    X(aclrtGetDevice, kacl_error, (int32_t *device_id))                                          \
    X(aclrtGetCurrentContext, kacl_error, (kacl_context *context))                               \
    X(aclrtGetDeviceCount, kacl_error, (uint32_t *count))                                        \
    X(aclrtGetSocName, const char *, (void))                                                     \
    /* streams */                                                                                \
    X(aclrtCreateStreamWithConfig, kacl_error, (kacl_stream *stream, uint32_t priority,          \
                                                uint32_t flag))                                  \
    X(aclrtDestroyStream, kacl_error, (kacl_stream stream))                                      \
    X(aclrtSynchronizeStreamWithTimeout, kacl_error, (kacl_stream stream, int32_t timeout_ms))   \
    X(aclrtStreamQuery, kacl_error, (kacl_stream stream, int *status))                           \
    X(aclrtSetStreamFailureMode, kacl_error, (kacl_stream stream, uint64_t mode))                \
    /* events */                                                                                 \
    X(aclrtDestroyEvent, kacl_error, (kacl_event event))                                         \
    X(aclrtRecordEvent, kacl_error, (kacl_event event, kacl_stream stream))                      \
    X(aclrtStreamWaitEvent, kacl_error, (kacl_stream stream, kacl_event event))                  \
    /* memory */                                                                                 \
    X(aclrtMalloc, kacl_error, (void **dev_ptr, size_t size, int policy))                        \
    X(aclrtFree, kacl_error, (void *dev_ptr))                                                    \
    X(aclrtMemcpy, kacl_error, (void *dst, size_t dest_max, const void *src, size_t count,       \
                                int kind))                                                       \
    X(aclrtMemcpyAsync, kacl_error, (void *dst, size_t dest_max, const void *src, size_t count,  \
                                     int kind, kacl_stream stream))                              \
    X(aclrtMemsetAsync, kacl_error, (void *dev_ptr, size_t max_count, int32_t value,             \
                                     size_t count, kacl_stream stream))                          \
    /* binaries, functions and launch (A.4) */                                                   \
    X(aclrtBinaryLoadFromData, kacl_error, (const void *data, size_t length,                     \
                                            const kacl_bin_load_options *options,                \
                                            kacl_bin *bin))                                      \
    X(aclrtBinaryUnLoad, kacl_error, (kacl_bin bin))                                             \
    X(aclrtBinaryGetFunction, kacl_error, (kacl_bin bin, const char *kernel_name,                \
                                           kacl_func *func))                                     \
    X(aclrtLaunchKernelWithHostArgs, kacl_error, (kacl_func func, uint32_t num_blocks,           \
                                                  kacl_stream stream, kacl_launch_cfg *cfg,      \
                                                  void *host_args, size_t args_size,             \
                                                  kacl_placeholder *placeholders,                \
                                                  size_t placeholder_num))                       \
    /* errors (A.5) */                                                                           \
    X(aclGetRecentErrMsg, const char *, (void))                                                  \
    X(aclrtGetLastError, kacl_error, (int level))                                                \
    X(aclrtPeekAtLastError, kacl_error, (int level))

#define KACL_OPTIONAL(X)                                                                         \
    /* Ex events: without them, no capture (207000 for the non-Ex path) */                       \
    X(aclrtCreateEventExWithFlag, kacl_error, (kacl_event *event, uint32_t flag))                \
    /* capture (A.3); aclmdlRICaptureGetInfo is absent on some products (A.1) */                 \
    X(aclmdlRICaptureBegin, kacl_error, (kacl_stream stream, int mode))                          \
    X(aclmdlRICaptureEnd, kacl_error, (kacl_stream stream, kacl_model *model))                   \
    X(aclmdlRICaptureGetInfo, kacl_error, (kacl_stream stream, int *status, kacl_model *model))  \
    X(aclmdlRICaptureThreadExchangeMode, kacl_error, (int *mode))                                \
    X(aclmdlRIExecuteAsync, kacl_error, (kacl_model model, kacl_stream stream))                  \
    X(aclmdlRIDestroy, kacl_error, (kacl_model model))                                           \
    X(aclmdlRIGetId, kacl_error, (kacl_model model, uint32_t *model_id)) /* out type inferred */ \
    /* K25's lifetime tokens (A.2 graph_attach_hook) */                                          \
    X(aclmdlRIDestroyRegisterCallback, kacl_error, (kacl_model model, kacl_callback fn,          \
                                                    void *user))                                 \
    X(aclmdlRIDestroyUnregisterCallback, kacl_error, (kacl_model model, kacl_callback fn))       \
    /* the 107024 escape; not in every release's headers */                                      \
    X(aclrtStreamWaitEventWithFlag, kacl_error, (kacl_stream stream, kacl_event event,           \
                                                 int32_t timeout, uint32_t flag))                \
    X(aclrtRecordEventWithFlag, kacl_error, (kacl_event event, kacl_stream stream,               \
                                             uint32_t flag)) /* argument order inferred */       \
    /* AICPU functions and device addresses of kernels (A.4, A.2) */                             \
    X(aclrtRegisterCpuFunc, kacl_error, (kacl_bin bin, const char *func_name,                    \
                                         const char *kernel_name, kacl_func *func))              \
    X(aclrtGetFunctionAddr, kacl_error, (kacl_func func, void **aic_addr, void **aiv_addr))      \
    /* device facts and health (A.2 device_info) */                                              \
    X(aclrtGetDeviceInfo, kacl_error, (uint32_t device_id, int attr, int64_t *value))            \
    X(aclrtQueryDeviceStatus, kacl_error, (int32_t device_id, int *status))                      \
    X(aclrtGetStreamResLimit, kacl_error, (kacl_stream stream, int type, uint32_t *value))       \
    /* the exception channel that allows several callbacks (A.5) */                              \
    X(aclrtExceptionInfoCallbackRegister, kacl_error, (kacl_exception_callback fn))              \
    X(aclrtExceptionInfoCallbackUnregister, kacl_error, (kacl_exception_callback fn))

/* Typed, but not kernel mode's (see the opening comment): */
#define KACL_NOT_KERNEL_MODE(X)                                                                  \
    X(aclrtCreateStream, kacl_error, (kacl_stream *stream))                                      \
    X(aclrtDestroyStreamForce, kacl_error, (kacl_stream stream))                                 \
    X(aclrtSynchronizeStream, kacl_error, (kacl_stream stream))                                  \
    X(aclrtCreateEvent, kacl_error, (kacl_event *event))                                         \
    X(aclrtCreateEventWithFlag, kacl_error, (kacl_event *event, uint32_t flag))                  \
    X(aclrtQueryEventStatus, kacl_error, (kacl_event event, int *status))                        \
    X(aclrtSynchronizeEvent, kacl_error, (kacl_event event))                                     \
    X(aclrtSynchronizeEventWithTimeout, kacl_error, (kacl_event event, int32_t timeout_ms))      \
    X(aclrtMemset, kacl_error, (void *dev_ptr, size_t max_count, int32_t value, size_t count))   \
    X(aclrtLaunchKernel, kacl_error, (kacl_func func, uint32_t num_blocks, const void *args,     \
                                      size_t args_size, kacl_stream stream))                     \
    X(aclmdlRIExecute, kacl_error, (kacl_model model, int32_t timeout_ms))

/* Names only: device and process lifecycle, device-wide synchronisation
 * and device-global knobs (A.6; the facts name aclrtSetOpExecuteTimeOut's
 * variants only as "aclrtSetOpExecuteTimeOut*", so the base name alone is
 * listed). Never resolved by the adapter. */
#define KACL_NEVER(X)                                                                            \
    X(aclInit) X(aclFinalize) X(aclFinalizeReference) X(aclrtSetDevice) X(aclrtResetDevice)      \
    X(aclrtResetDeviceForce) X(rtDeviceReset) X(rtSetDevice) X(aclrtSetCurrentContext)           \
    X(aclrtCreateContext) X(aclrtDestroyContext) X(aclrtSynchronizeDevice)                       \
    X(aclrtSynchronizeDeviceWithTimeout) X(aclrtSetOpExecuteTimeOut)                             \
    X(aclrtSetOpWaitTimeout) X(aclrtSetDeviceSatMode)          \
    X(aclrtSetDeviceResLimit) X(aclrtResetDeviceResLimit) X(aclrtSetExceptionInfoCallback)       \
    X(rtEventWorkModeSet)
// clang-format on

/* kacl_fn_<name>: the type of a pointer to each typed entry. */
#define KACL_FN_TYPE_(name, ret, params) typedef ret(*kacl_fn_##name) params;
KACL_REQUIRED(KACL_FN_TYPE_)
KACL_OPTIONAL(KACL_FN_TYPE_)
KACL_NOT_KERNEL_MODE(KACL_FN_TYPE_)
#undef KACL_FN_TYPE_

/* Helpers for a table in the loader's shape (platform/common/loader.h):
 * KACL_REQUIRED(KACL_NAME_) KACL_NEVER(KACL_NEVER_NAME_) give the "name",
 * strings of the loader's names array. */
#define KACL_NAME_(name, ...) #name,
#define KACL_NEVER_NAME_(name) #name,

#endif
