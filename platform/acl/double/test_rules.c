/*
 * test_rules.c — CANN's capture rules, each with its negative control,
 * written against the ACL API only (no kctx kernel, no kctx context), on
 * the library KCTX_ACL_LIBRARY names (default: the built driver double,
 * platform/acl/double/double.c). The same binary replays against a real
 * libascendcl on an NPU (scripts/npu-check.sh), to show where the double
 * is wrong: assertions marked "double:" are the double's own documented
 * choices where CANN's behaviour is not documented (docs/acl.md); on another
 * library they are printed as observations, not checked.
 *
 * Entries are resolved by name through the counted loader
 * (platform/common/loader.h) with kctx's declarations (acl_abi.h). One test
 * per rule; `--list` names them, arguments run only those named. Exit status
 * and summary line: tests/common (77 when something was skipped).
 */
#include "acl_abi.h"
#include "kctx_test_check.h"
#include "kctx_test_common.h"
#include "loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KACL_DOUBLE_PATH
#error "KACL_DOUBLE_PATH: the built double"
#endif
#ifndef KACL_RULES_MODULE
#error "KACL_RULES_MODULE: the sim kernel module of test_kernels.c"
#endif

/* ---- the table --------------------------------------------------------------- */

#define T_INDEX_(name, ret, params) E_##name,
enum {
    KACL_REQUIRED(T_INDEX_) KACL_OPTIONAL(T_INDEX_) KACL_NOT_KERNEL_MODE(T_INDEX_) E_COUNT_
};
#undef T_INDEX_
static const char *const k_names[E_COUNT_] = {KACL_REQUIRED(KACL_NAME_) KACL_OPTIONAL(KACL_NAME_)
                                                  KACL_NOT_KERNEL_MODE(KACL_NAME_)};
static void *g_fns[E_COUNT_];
static _Atomic uint64_t g_calls[E_COUNT_];
static kctx_loader g_ld = KCTX_LOADER_INIT(k_names, E_COUNT_, E_COUNT_, g_fns, g_calls);
static struct {
#define T_MEMBER_(name, ret, params) kacl_fn_##name name;
    KACL_REQUIRED(T_MEMBER_) KACL_OPTIONAL(T_MEMBER_) KACL_NOT_KERNEL_MODE(T_MEMBER_)
#undef T_MEMBER_
} acl;
/* Every ACL call of the tests: counted, then made. */
#define A(name, ...) (kctx__loader_count(&g_ld, E_##name), acl.name(__VA_ARGS__))

/* The double's test hook, when the library is the double. */
typedef uint64_t (*calls_fn)(const char *);
static calls_fn g_double_calls;
#define IS_DOUBLE (g_double_calls != NULL)

/* ---- the harness ---------------------------------------------------------------- */

/* The checks are src/check/kctx_test_check.h's; every failure's report
 * adds the library's recent error message (main: ktc_failure_note). */
static unsigned g_passed, g_failed, g_skipped;
static const char *recent_message(void) {
    return acl.aclGetRecentErrMsg ? acl.aclGetRecentErrMsg() : NULL;
}
/* The double's documented choice: checked on the double, reported elsewhere. */
#define DOUBLE_CHECK(cond)                                                              \
    do {                                                                                \
        if (IS_DOUBLE)                                                                  \
            CHECK(cond);                                                                \
        else                                                                            \
            printf("  observed (double's choice, not checked here): %s is %s\n", #cond, \
                   (cond) ? "true" : "false");                                          \
    } while (0)
static int g_skip;
#define SKIP_IF(cond, why)                  \
    do {                                    \
        if (cond) {                         \
            printf("  SKIPPED: %s\n", why); \
            g_skip = 1;                     \
            return;                         \
        }                                   \
    } while (0)
#define NEED(name) SKIP_IF(!acl.name, "the library has no " #name)

/* Helpers. */
static kacl_stream stream(uint32_t flags) {
    kacl_stream s = NULL;
    CHECK_EQ(A(aclrtCreateStreamWithConfig, &s, 0, flags), KACL_SUCCESS);
    return s;
}
static kacl_event ex_event(void) {
    kacl_event e = NULL;
    CHECK_EQ(A(aclrtCreateEventExWithFlag, &e, KACL_EVENT_SYNC), KACL_SUCCESS);
    return e;
}
static int capture_status(kacl_stream s) {
    int st = -1;
    kacl_model m = NULL;
    CHECK_EQ(A(aclmdlRICaptureGetInfo, s, &st, &m), KACL_SUCCESS);
    return st;
}
static void *g_dev; /* 4 KiB of device memory every test may fill */
static void fill(kacl_stream s) {
    CHECK_EQ(A(aclrtMemsetAsync, g_dev, 4096, 7, 4096, s), KACL_SUCCESS);
}
static void destroy_model(kacl_model m) {
    if (m) CHECK_EQ(A(aclmdlRIDestroy, m), KACL_SUCCESS);
}
static void sync_destroy(kacl_stream s) {
    CHECK_EQ(A(aclrtSynchronizeStream, s), KACL_SUCCESS);
    CHECK_EQ(A(aclrtDestroyStream, s), KACL_SUCCESS);
}
#define CAPTURE_NEEDED()                  \
    do {                                  \
        NEED(aclmdlRICaptureBegin);       \
        NEED(aclmdlRICaptureEnd);         \
        NEED(aclmdlRICaptureGetInfo);     \
        NEED(aclrtCreateEventExWithFlag); \
        NEED(aclmdlRIDestroy);            \
    } while (0)

/* ---- the rules ---------------------------------------------------------------------- */

/* 107024 (K21): a capturing stream waiting on an event recorded outside
 * the capture is refused. Controls: record and wait inside one capture;
 * the WAIT_EXTERNAL escape. */
static void t_107024_wait_on_outside_record(void) {
    CAPTURE_NEEDED();
    kacl_stream a = stream(0), b = stream(0), c = stream(0);
    kacl_event e = ex_event(), f = ex_event();
    kacl_model m = NULL;
    CHECK_EQ(A(aclrtRecordEvent, e, b), KACL_SUCCESS); /* before the capture */
    CHECK_EQ(A(aclrtSynchronizeStream, b), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, e), KACL_ERROR_RT_CAPTURE_DEPENDENCY);
    DOUBLE_CHECK(capture_status(a) == KACL_MODEL_RI_CAPTURE_STATUS_ACTIVE);
    /* control: a record inside the capture, waited on by a joining stream
     * and joined back */
    fill(a);
    CHECK_EQ(A(aclrtRecordEvent, f, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, c, f), KACL_SUCCESS);
    fill(c);
    CHECK_EQ(A(aclrtRecordEvent, f, c), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, f), KACL_SUCCESS);
    if (acl.aclrtStreamWaitEventWithFlag) /* control: the documented escape */
        CHECK_EQ(A(aclrtStreamWaitEventWithFlag, a, e, 0, KACL_EVENT_WAIT_EXTERNAL), KACL_SUCCESS);
    else
        printf("  (no aclrtStreamWaitEventWithFlag: the escape is not checked)\n");
    kacl_error end = A(aclmdlRICaptureEnd, a, &m);
    DOUBLE_CHECK(end == KACL_SUCCESS && m != NULL);
    if (m) {
        /* a replay: the external wait is on a record that executed */
        CHECK_EQ(A(aclrtRecordEvent, e, b), KACL_SUCCESS);
        CHECK_EQ(A(aclmdlRIExecuteAsync, m, a), KACL_SUCCESS);
        CHECK_EQ(A(aclrtSynchronizeStream, a), KACL_SUCCESS);
    }
    destroy_model(m);
    A(aclrtDestroyEvent, e), A(aclrtDestroyEvent, f);
    sync_destroy(a), sync_destroy(b), sync_destroy(c);
}

/* 107028 (K19: no completion query on a capture's events): an event query
 * or sync on an event recorded in an active capture is refused. Controls:
 * the same queries on an event recorded outside, during the capture, and on
 * the captured event once the capture ended. */
static void t_107028_event_query_in_capture(void) {
    CAPTURE_NEEDED();
    kacl_stream a = stream(0), b = stream(0);
    kacl_event e = ex_event(), out = ex_event();
    int st = -1;
    kacl_model m = NULL;
    CHECK_EQ(A(aclrtRecordEvent, out, b), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, e, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtSynchronizeEvent, out), KACL_SUCCESS); /* control */
    CHECK_EQ(A(aclrtQueryEventStatus, out, &st), KACL_SUCCESS);
    CHECK(st == KACL_EVENT_RECORDED_STATUS_COMPLETE);
    CHECK_EQ(A(aclrtQueryEventStatus, e, &st), KACL_ERROR_RT_EVENT_CAPTURED);
    CHECK_EQ(A(aclrtSynchronizeEvent, e), KACL_ERROR_RT_EVENT_CAPTURED);
    if (acl.aclrtSynchronizeEventWithTimeout)
        CHECK_EQ(A(aclrtSynchronizeEventWithTimeout, e, 10), KACL_ERROR_RT_EVENT_CAPTURED);
    kacl_error end = A(aclmdlRICaptureEnd, a, &m);
    DOUBLE_CHECK(end == KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED && m == NULL);
    destroy_model(m);
    m = NULL;
    /* control: a capture that ended; its event queries again */
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    fill(a);
    CHECK_EQ(A(aclrtRecordEvent, e, a), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS);
    CHECK_EQ(A(aclrtQueryEventStatus, e, &st), KACL_SUCCESS);
    destroy_model(m);
    A(aclrtDestroyEvent, e), A(aclrtDestroyEvent, out);
    sync_destroy(a), sync_destroy(b);
}

/* 107027 (K34: stream_info is aclmdlRICaptureGetInfo, never a query):
 * destroy, query and sync of a capturing stream are refused. Control: the
 * same calls once the capture ended; GetInfo during it. */
static void t_107027_capturing_stream_ops(void) {
    CAPTURE_NEEDED();
    kacl_stream a = stream(0);
    kacl_model m = NULL;
    int st = -1;
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK(capture_status(a) == KACL_MODEL_RI_CAPTURE_STATUS_ACTIVE); /* control: legal */
    CHECK_EQ(A(aclrtDestroyStream, a), KACL_ERROR_RT_STREAM_CAPTURED);
    DOUBLE_CHECK(capture_status(a) == KACL_MODEL_RI_CAPTURE_STATUS_ACTIVE);
    CHECK_EQ(A(aclrtStreamQuery, a, &st), KACL_ERROR_RT_STREAM_CAPTURED);
    CHECK_EQ(A(aclrtSynchronizeStream, a), KACL_ERROR_RT_STREAM_CAPTURED);
    CHECK_EQ(A(aclrtSynchronizeStreamWithTimeout, a, 10), KACL_ERROR_RT_STREAM_CAPTURED);
    kacl_error end = A(aclmdlRICaptureEnd, a, &m);
    CHECK(end == KACL_SUCCESS || end == KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED);
    destroy_model(m);
    CHECK(capture_status(a) == KACL_MODEL_RI_CAPTURE_STATUS_NONE);
    CHECK_EQ(A(aclrtStreamQuery, a, &st), KACL_SUCCESS); /* control */
    CHECK_EQ(A(aclrtSynchronizeStreamWithTimeout, a, 1000), KACL_SUCCESS);
    CHECK_EQ(A(aclrtDestroyStream, a), KACL_SUCCESS);
}

/* 107025: a stream forked into a capture and not joined back fails the
 * capture's end (no model). Control: the same fork joined back. */
static void t_107025_unjoined_fork(void) {
    CAPTURE_NEEDED();
    kacl_stream a = stream(0), b = stream(0);
    kacl_event e = ex_event(), j = ex_event();
    kacl_model m = NULL;
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, e, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, b, e), KACL_SUCCESS); /* b joins */
    fill(b);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_ERROR_RT_STREAM_UNJOINED);
    CHECK(m == NULL);
    destroy_model(m);
    m = NULL;
    CHECK(capture_status(b) == KACL_MODEL_RI_CAPTURE_STATUS_NONE);
    /* control */
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, e, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, b, e), KACL_SUCCESS);
    fill(b);
    CHECK_EQ(A(aclrtRecordEvent, j, b), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, j), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS);
    CHECK(m != NULL);
    destroy_model(m);
    A(aclrtDestroyEvent, e), A(aclrtDestroyEvent, j);
    sync_destroy(a), sync_destroy(b);
}

/* 107031: the default stream (NULL) cannot be used in a capture: not as
 * its origin, not joined into one. Control: a created stream (flag 0) does
 * both. */
static void t_107031_default_stream(void) {
    CAPTURE_NEEDED();
    kacl_stream a = stream(0), b = stream(0);
    kacl_event e = ex_event(), j = ex_event();
    kacl_model m = NULL;
    CHECK_EQ(A(aclmdlRICaptureBegin, NULL, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL),
             KACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT);
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, e, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, NULL, e), KACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT);
    CHECK_EQ(A(aclrtStreamWaitEvent, b, e), KACL_SUCCESS); /* control */
    CHECK_EQ(A(aclrtRecordEvent, j, b), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, j), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS);
    destroy_model(m);
    A(aclrtDestroyEvent, e), A(aclrtDestroyEvent, j);
    sync_destroy(a), sync_destroy(b);
}

/* 507903 (K25: an invalidated capture has no model): the end of an
 * invalidated capture fails and returns no model. Control: a clean capture
 * ends with one. */
static void t_507903_invalidated_capture(void) {
    CAPTURE_NEEDED();
    kacl_stream a = stream(0);
    kacl_model m = NULL;
    int st = -1;
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    fill(a);
    CHECK_EQ(A(aclrtStreamQuery, a, &st), KACL_ERROR_RT_STREAM_CAPTURED);
    int status = capture_status(a);
    DOUBLE_CHECK(status == KACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED);
    kacl_error end = A(aclmdlRICaptureEnd, a, &m);
    if (status == KACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED) {
        CHECK(end == KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED);
        CHECK(m == NULL);
    }
    destroy_model(m);
    m = NULL;
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    fill(a);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS); /* control */
    CHECK(m != NULL);
    destroy_model(m);
    sync_destroy(a);
}

/* 207000: events of the non-Ex path cannot be recorded into (or waited on
 * inside) a capture. Control: an Ex event recorded and waited inside the
 * same capture. */
static void t_207000_non_ex_events(void) {
    CAPTURE_NEEDED();
    NEED(aclrtCreateEvent);
    NEED(aclrtCreateEventWithFlag);
    kacl_stream a = stream(0), b = stream(0);
    kacl_event plain = NULL, flagged = NULL, e = ex_event();
    kacl_model m = NULL;
    CHECK_EQ(A(aclrtCreateEvent, &plain), KACL_SUCCESS);
    CHECK_EQ(A(aclrtCreateEventWithFlag, &flagged, KACL_EVENT_SYNC), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, plain, b), KACL_SUCCESS); /* legal outside */
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, plain, a), KACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_EQ(A(aclrtRecordEvent, flagged, a), KACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, plain), KACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    fill(a);
    CHECK_EQ(A(aclrtRecordEvent, e, a), KACL_SUCCESS); /* control */
    CHECK_EQ(A(aclrtStreamWaitEvent, b, e), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, e, b), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, e), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS);
    destroy_model(m);
    A(aclrtDestroyEvent, plain), A(aclrtDestroyEvent, flagged), A(aclrtDestroyEvent, e);
    sync_destroy(a), sync_destroy(b);
}

/* 507000: streams with AICPU/persistent-class flags cannot be in a
 * capture (origin or joined). Controls: flag 0 and ACL_STREAM_FAST_SYNC
 * streams join. */
static void t_507000_flagged_streams(void) {
    CAPTURE_NEEDED();
    kacl_stream a = stream(0), per = stream(KACL_STREAM_PERSISTENT),
                cpu = stream(KACL_STREAM_CPU_SCHEDULE), plain = stream(0),
                fast = stream(KACL_STREAM_FAST_SYNC);
    kacl_event e = ex_event(), j = ex_event();
    kacl_model m = NULL;
    CHECK_EQ(A(aclmdlRICaptureBegin, per, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL),
             KACL_ERROR_RT_INTERNAL_ERROR);
    CHECK_EQ(A(aclmdlRICaptureBegin, cpu, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL),
             KACL_ERROR_RT_INTERNAL_ERROR);
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, e, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, per, e), KACL_ERROR_RT_INTERNAL_ERROR);
    CHECK_EQ(A(aclrtStreamWaitEvent, cpu, e), KACL_ERROR_RT_INTERNAL_ERROR);
    CHECK_EQ(A(aclrtStreamWaitEvent, plain, e), KACL_SUCCESS); /* controls */
    CHECK_EQ(A(aclrtStreamWaitEvent, fast, e), KACL_SUCCESS);
    fill(plain);
    CHECK_EQ(A(aclrtRecordEvent, j, plain), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, j), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRecordEvent, j, fast), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, j), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS);
    CHECK(m != NULL);
    destroy_model(m);
    A(aclrtDestroyEvent, e), A(aclrtDestroyEvent, j);
    sync_destroy(a), sync_destroy(per), sync_destroy(cpu), sync_destroy(plain), sync_destroy(fast);
}

/* 107030: a synchronous copy or fill while a capture restricts the thread
 * (GLOBAL anywhere, or the thread's own THREAD_LOCAL capture) is refused.
 * Controls: RELAXED (aclmdlRICaptureThreadExchangeMode) allows it; another
 * thread beside a THREAD_LOCAL capture is not restricted. */
struct copy_arg {
    kacl_error got;
};
static void *copy_thread(void *p) {
    uint32_t w = 5;
    ((struct copy_arg *)p)->got =
        A(aclrtMemcpy, g_dev, 4096, &w, sizeof w, KACL_MEMCPY_HOST_TO_DEVICE);
    return NULL;
}
static void t_107030_unsafe_sync_copy(void) {
    CAPTURE_NEEDED();
    NEED(aclmdlRICaptureThreadExchangeMode);
    NEED(aclrtMemset);
    kacl_stream a = stream(0);
    kacl_model m = NULL;
    unsigned char host[64] = {1};
    for (int mode = KACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
         mode <= KACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL; mode++) {
        CHECK_EQ(A(aclmdlRICaptureBegin, a, mode), KACL_SUCCESS);
        fill(a);
        CHECK_EQ(A(aclrtMemcpy, g_dev, 4096, host, sizeof host, KACL_MEMCPY_HOST_TO_DEVICE),
                 KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
        CHECK_EQ(A(aclrtMemset, g_dev, 4096, 0, 64), KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT);
        struct copy_arg other = {-1};
        pthread_t t;
        CHECK(pthread_create(&t, NULL, copy_thread, &other) == 0);
        pthread_join(t, NULL);
        CHECK(other.got == (mode == KACL_MODEL_RI_CAPTURE_MODE_GLOBAL
                                ? KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
                                : KACL_SUCCESS));
        int old = KACL_MODEL_RI_CAPTURE_MODE_RELAXED; /* control */
        CHECK_EQ(A(aclmdlRICaptureThreadExchangeMode, &old), KACL_SUCCESS);
        CHECK(old == KACL_MODEL_RI_CAPTURE_MODE_GLOBAL);
        CHECK_EQ(A(aclrtMemcpy, g_dev, 4096, host, sizeof host, KACL_MEMCPY_HOST_TO_DEVICE),
                 KACL_SUCCESS);
        CHECK_EQ(A(aclrtMemset, g_dev, 4096, 0, 64), KACL_SUCCESS);
        CHECK_EQ(A(aclmdlRICaptureThreadExchangeMode, &old), KACL_SUCCESS);
        CHECK(old == KACL_MODEL_RI_CAPTURE_MODE_RELAXED);
        kacl_error end = A(aclmdlRICaptureEnd, a, &m);
        DOUBLE_CHECK(end == KACL_SUCCESS && m != NULL);
        destroy_model(m);
        m = NULL;
    }
    CHECK_EQ(A(aclrtMemcpy, g_dev, 4096, host, sizeof host, KACL_MEMCPY_HOST_TO_DEVICE),
             KACL_SUCCESS); /* control: no capture */
    sync_destroy(a);
}

/* K25 (model identity): two live models have different ids; an id may be
 * reused once its model is destroyed (the double reuses it: the lowest free
 * id), so an id is never a process-unique key. */
static kacl_model small_model(kacl_stream a) {
    kacl_model m = NULL;
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    fill(a);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS);
    return m;
}
static void t_model_ids_reused(void) {
    CAPTURE_NEEDED();
    NEED(aclmdlRIGetId);
    kacl_stream a = stream(0);
    kacl_model x = small_model(a), y = small_model(a);
    uint32_t ix = 0, iy = 0, iz = 0;
    CHECK_EQ(A(aclmdlRIGetId, x, &ix), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRIGetId, y, &iy), KACL_SUCCESS);
    CHECK(ix != iy);
    destroy_model(x);
    kacl_model z = small_model(a);
    CHECK_EQ(A(aclmdlRIGetId, z, &iz), KACL_SUCCESS);
    CHECK(iz != iy);
    DOUBLE_CHECK(iz == ix);
    printf("  ids: %u, %u; after destroying the first: %u\n", ix, iy, iz);
    destroy_model(y);
    destroy_model(z);
    sync_destroy(a);
}

/* K25 (lifetime tokens): a destroy callback registered on a model (during
 * its capture, through GetInfo, or after) runs once, after aclmdlRIDestroy,
 * never before; an unregistered one never runs. */
static _Atomic int g_cb_a, g_cb_b, g_cb_c;
static void cb_a(void *u) { atomic_fetch_add((_Atomic int *)u, 1); }
static void cb_b(void *u) { atomic_fetch_add((_Atomic int *)u, 1); }
static void cb_c(void *u) { atomic_fetch_add((_Atomic int *)u, 1); }
static void t_destroy_callback(void) {
    CAPTURE_NEEDED();
    NEED(aclmdlRIDestroyRegisterCallback);
    NEED(aclmdlRIDestroyUnregisterCallback);
    NEED(aclmdlRIExecuteAsync);
    atomic_store(&g_cb_a, 0), atomic_store(&g_cb_b, 0), atomic_store(&g_cb_c, 0);
    kacl_stream a = stream(0), r = stream(0);
    kacl_model during = NULL, m = NULL;
    int st = -1;
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    fill(a);
    CHECK_EQ(A(aclmdlRICaptureGetInfo, a, &st, &during), KACL_SUCCESS);
    CHECK(st == KACL_MODEL_RI_CAPTURE_STATUS_ACTIVE && during != NULL);
    CHECK_EQ(A(aclmdlRIDestroyRegisterCallback, during, cb_a, (void *)&g_cb_a), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS);
    CHECK(m == during); /* the model GetInfo gave is the capture's */
    CHECK_EQ(A(aclmdlRIDestroyRegisterCallback, m, cb_b, (void *)&g_cb_b), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRIDestroyRegisterCallback, m, cb_c, (void *)&g_cb_c), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRIDestroyUnregisterCallback, m, cb_c), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRIDestroyUnregisterCallback, m, cb_c), KACL_ERROR_RT_PARAM_INVALID);
    CHECK_EQ(A(aclmdlRIExecuteAsync, m, r), KACL_SUCCESS);
    CHECK_EQ(A(aclrtSynchronizeStream, r), KACL_SUCCESS);
    CHECK(atomic_load(&g_cb_a) == 0 && atomic_load(&g_cb_b) == 0); /* control: not yet */
    CHECK_EQ(A(aclmdlRIExecuteAsync, m, r), KACL_SUCCESS);
    destroy_model(m);
    CHECK_EQ(A(aclrtSynchronizeStream, r), KACL_SUCCESS);
    CHECK(atomic_load(&g_cb_a) == 1 && atomic_load(&g_cb_b) == 1);
    CHECK(atomic_load(&g_cb_c) == 0);
    sync_destroy(a), sync_destroy(r);
}

/* acl-platform.md D.1 (K25: no token leaks either way): does a callback
 * registered during a capture run when the capture ends discarded (507903)?
 * On the double, KCTX_ACL_DOUBLE_DISCARD_FIRES chooses; both answers are
 * checked. Elsewhere the answer is printed. */
static void t_discard_callback_d1(void) {
    CAPTURE_NEEDED();
    NEED(aclmdlRIDestroyRegisterCallback);
    kacl_stream a = stream(0);
    const char *answers[] = {"1", "0"};
    for (int k = 0; k < (IS_DOUBLE ? 2 : 1); k++) {
        if (IS_DOUBLE) setenv("KCTX_ACL_DOUBLE_DISCARD_FIRES", answers[k], 1);
        atomic_store(&g_cb_a, 0);
        kacl_model during = NULL, m = NULL;
        int st = -1;
        CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
        fill(a);
        CHECK_EQ(A(aclmdlRICaptureGetInfo, a, &st, &during), KACL_SUCCESS);
        CHECK(during != NULL);
        if (during)
            CHECK_EQ(A(aclmdlRIDestroyRegisterCallback, during, cb_a, (void *)&g_cb_a),
                     KACL_SUCCESS);
        CHECK_EQ(A(aclrtStreamQuery, a, &st), KACL_ERROR_RT_STREAM_CAPTURED); /* invalidates */
        kacl_error end = A(aclmdlRICaptureEnd, a, &m);
        printf("  D.1%s: the end gave %d; the callback ran %d time(s)\n",
               IS_DOUBLE ? (k ? " (switch 0)" : " (switch 1)") : "", end, atomic_load(&g_cb_a));
        DOUBLE_CHECK(end == KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED && m == NULL);
        DOUBLE_CHECK(atomic_load(&g_cb_a) == (k == 0 ? 1 : 0));
        CHECK(atomic_load(&g_cb_a) <= 1);
        destroy_model(m);
    }
    if (IS_DOUBLE) unsetenv("KCTX_ACL_DOUBLE_DISCARD_FIRES");
    sync_destroy(a);
}

/* K-message (last_message): the thread's last failure is described by
 * aclGetRecentErrMsg; aclrtGetLastError returns and clears its code,
 * aclrtPeekAtLastError does not clear it. Control: a success in between
 * does not change the last error. */
static void t_recent_error_message(void) {
    CAPTURE_NEEDED();
    kacl_stream a = stream(0), b = stream(0);
    kacl_event e = ex_event();
    kacl_model m = NULL;
    (void)A(aclrtGetLastError, KACL_RT_THREAD_LEVEL);
    CHECK_EQ(A(aclrtRecordEvent, e, b), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtStreamWaitEvent, a, e), KACL_ERROR_RT_CAPTURE_DEPENDENCY);
    const char *msg = A(aclGetRecentErrMsg);
    CHECK(msg != NULL && *msg);
    if (msg) printf("  message: %s\n", msg);
    DOUBLE_CHECK(msg && strstr(msg, "107024") && strstr(msg, "WAIT_EXTERNAL"));
    fill(a); /* control: a success */
    CHECK_EQ(A(aclrtPeekAtLastError, KACL_RT_THREAD_LEVEL), KACL_ERROR_RT_CAPTURE_DEPENDENCY);
    CHECK_EQ(A(aclrtGetLastError, KACL_RT_THREAD_LEVEL), KACL_ERROR_RT_CAPTURE_DEPENDENCY);
    CHECK_EQ(A(aclrtGetLastError, KACL_RT_THREAD_LEVEL), KACL_SUCCESS);
    (void)A(aclmdlRICaptureEnd, a, &m);
    destroy_model(m);
    A(aclrtDestroyEvent, e);
    sync_destroy(a), sync_destroy(b);
}

/* ---- the double's own (sim modules; skipped on a real runtime) ------------------ */

static void *read_module(const char *path, size_t *size) {
    char why[200];
    void *b = ktc_read_file(path, size, why, sizeof why);
    if (!b) printf("  %s\n", why);
    return b;
}

/* Issue 25 item 4: KCTX_ACL_DOUBLE_REFUSE_RT=1 refuses kctx's sim-built
 * runtime programs as a real runtime would; other modules still load.
 * Control: without the switch they load. */
static void t_refuse_runtime_programs(void) {
    SKIP_IF(!IS_DOUBLE, "the switch is the double's (a real runtime loads no sim module)");
    size_t n = 0, k = 0;
    unsigned char *rt = read_module(KACL_RT_ELF_PROGRAMS, &n);
    unsigned char *mod = read_module(KACL_RULES_MODULE, &k);
    CHECK(rt && mod);
    if (!rt || !mod) {
        free(rt), free(mod);
        return;
    }
    kacl_bin b = NULL;
    setenv("KCTX_ACL_DOUBLE_REFUSE_RT", "1", 1);
    CHECK_EQ(A(aclrtBinaryLoadFromData, rt, n, NULL, &b), KACL_ERROR_RT_PARAM_INVALID);
    const char *msg = A(aclGetRecentErrMsg);
    CHECK(msg && strstr(msg, "KCTX_ACL_DOUBLE_REFUSE_RT"));
    CHECK_EQ(A(aclrtBinaryLoadFromData, mod, k, NULL, &b), KACL_SUCCESS);
    if (b) CHECK_EQ(A(aclrtBinaryUnLoad, b), KACL_SUCCESS);
    unsetenv("KCTX_ACL_DOUBLE_REFUSE_RT");
    b = NULL;
    CHECK_EQ(A(aclrtBinaryLoadFromData, rt, n, NULL, &b), KACL_SUCCESS); /* control */
    if (b) CHECK_EQ(A(aclrtBinaryUnLoad, b), KACL_SUCCESS);
    unsigned char junk[64] = {0x7f, 'E', 'L', 'F', 1}; /* a 32-bit ELF: not for this device */
    CHECK_EQ(A(aclrtBinaryLoadFromData, junk, sizeof junk, NULL, &b), KACL_ERROR_RT_PARAM_INVALID);
    free(rt), free(mod);
}

/* Launches (kctx's launch contract: host args copied at enqueue): an
 * AICore launch of 3 blocks adds 3x, an AICPU one 1x; a captured launch
 * replays with the args of its capture; the 4-byte synchronous copies are
 * the word reads. */
static void t_launch_and_replay(void) {
    SKIP_IF(!IS_DOUBLE, "the module is a sim module");
    NEED(aclrtRegisterCpuFunc);
    size_t k = 0;
    unsigned char *mod = read_module(KACL_RULES_MODULE, &k);
    CHECK(mod != NULL);
    if (!mod) return;
    kacl_stream a = stream(0);
    kacl_bin b = NULL;
    kacl_func core = NULL, cpu = NULL;
    kacl_model m = NULL;
    CHECK_EQ(A(aclrtBinaryLoadFromData, mod, k, NULL, &b), KACL_SUCCESS);
    CHECK_EQ(A(aclrtBinaryGetFunction, b, "kacl_test_add", &core), KACL_SUCCESS);
    CHECK_EQ(A(aclrtRegisterCpuFunc, b, "kacl_test_add", "add", &cpu), KACL_SUCCESS);
    uint32_t zero = 0, got = 0;
    CHECK_EQ(A(aclrtMemcpy, g_dev, 4, &zero, 4, KACL_MEMCPY_HOST_TO_DEVICE), KACL_SUCCESS);
    struct {
        uint64_t addr;
        uint32_t value, pad;
    } args = {(uint64_t)(uintptr_t)g_dev, 1, 0};
    CHECK_EQ(A(aclrtLaunchKernelWithHostArgs, core, 3, a, NULL, &args, sizeof args, NULL, 0),
             KACL_SUCCESS);
    args.value = 10; /* copied at enqueue: the first launch adds 1 per block */
    CHECK_EQ(A(aclrtLaunchKernelWithHostArgs, cpu, 1, a, NULL, &args, sizeof args, NULL, 0),
             KACL_SUCCESS);
    CHECK_EQ(A(aclrtLaunchKernelWithHostArgs, cpu, 2, a, NULL, &args, sizeof args, NULL, 0),
             KACL_ERROR_RT_PARAM_INVALID);
    CHECK_EQ(A(aclrtSynchronizeStream, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtMemcpy, &got, 4, g_dev, 4, KACL_MEMCPY_DEVICE_TO_HOST), KACL_SUCCESS);
    CHECK(got == 13);
    args.value = 100;
    CHECK_EQ(A(aclmdlRICaptureBegin, a, KACL_MODEL_RI_CAPTURE_MODE_GLOBAL), KACL_SUCCESS);
    CHECK_EQ(A(aclrtLaunchKernelWithHostArgs, core, 2, a, NULL, &args, sizeof args, NULL, 0),
             KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRICaptureEnd, a, &m), KACL_SUCCESS);
    args.value = 1000;
    CHECK_EQ(A(aclrtMemcpy, &got, 4, g_dev, 4, KACL_MEMCPY_DEVICE_TO_HOST), KACL_SUCCESS);
    CHECK(got == 13); /* captured, not run */
    CHECK_EQ(A(aclmdlRIExecuteAsync, m, a), KACL_SUCCESS);
    CHECK_EQ(A(aclmdlRIExecuteAsync, m, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtSynchronizeStream, a), KACL_SUCCESS);
    CHECK_EQ(A(aclrtMemcpy, &got, 4, g_dev, 4, KACL_MEMCPY_DEVICE_TO_HOST), KACL_SUCCESS);
    CHECK(got == 413);
    void *aic = NULL, *aiv = (void *)1;
    CHECK_EQ(A(aclrtGetFunctionAddr, core, &aic, &aiv), KACL_SUCCESS);
    CHECK(aic != NULL && aiv == NULL);
    destroy_model(m);
    CHECK_EQ(A(aclrtBinaryUnLoad, b), KACL_SUCCESS);
    sync_destroy(a);
    free(mod);
}

/* K4 (the counters): every entry the double receives is counted, the
 * never-call lifecycle entries included; an unknown name is UINT64_MAX. */
static void t_double_counts_calls(void) {
    SKIP_IF(!IS_DOUBLE, "the counters are the double's");
    uint64_t before = g_double_calls("aclrtCreateStreamWithConfig");
    uint64_t set = g_double_calls("aclrtSetDevice");
    kacl_stream s = stream(0);
    CHECK(g_double_calls("aclrtCreateStreamWithConfig") == before + 1);
    CHECK(g_double_calls("aclrtSetDevice") == set && set >= 1); /* main's, once */
    CHECK(g_double_calls("aclrtNoSuchEntry") == UINT64_MAX);
    CHECK(g_double_calls("aclrtCreateStreamWithConfig") ==
          (uint64_t)kctx__loader_calls(&g_ld, "aclrtCreateStreamWithConfig"));
    sync_destroy(s);
}

/* ---- main ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    void (*fn)(void);
} k_tests[] = {
#define T(f) \
    { &#f[2], f }
    T(t_107024_wait_on_outside_record),
    T(t_107028_event_query_in_capture),
    T(t_107027_capturing_stream_ops),
    T(t_107025_unjoined_fork),
    T(t_107031_default_stream),
    T(t_507903_invalidated_capture),
    T(t_207000_non_ex_events),
    T(t_507000_flagged_streams),
    T(t_107030_unsafe_sync_copy),
    T(t_model_ids_reused),
    T(t_destroy_callback),
    T(t_discard_callback_d1),
    T(t_recent_error_message),
    T(t_refuse_runtime_programs),
    T(t_launch_and_replay),
    T(t_double_counts_calls),
#undef T
};
#define NTESTS (sizeof k_tests / sizeof k_tests[0])

typedef kacl_error (*init_fn)(const char *);
typedef kacl_error (*set_device_fn)(int32_t);

/* Every typed entry by name (NULL where the library has none). */
static void resolve(void) {
#define T_SET_(name, ret, params) \
    *(void **)&acl.name = g_fns[E_##name] = kctx__loader_sym(&g_ld, #name);
    // clang-format off
    KACL_REQUIRED(T_SET_) KACL_OPTIONAL(T_SET_) KACL_NOT_KERNEL_MODE(T_SET_)
    // clang-format on
#undef T_SET_
        * (void **)&g_double_calls = kctx__loader_sym(&g_ld, "kacl_double_calls");
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < NTESTS; i++) printf("%s\n", k_tests[i].name);
        return 0;
    }
    char why[300];
    if (kctx__loader_open(&g_ld, "KCTX_ACL_LIBRARY", KACL_DOUBLE_PATH, why, sizeof why)) {
        printf("acl rules: cannot load the ACL library: %s\n", why);
        return ktc_summary(stdout, 0, 1, 0);
    }
    printf("acl rules on %s\n", g_ld.path);
    resolve();
    ktc_failure_note(recent_message);
    /* what every test uses */
    const char *needed[] = {"aclrtCreateStreamWithConfig",
                            "aclrtDestroyStream",
                            "aclrtSynchronizeStream",
                            "aclrtMalloc",
                            "aclrtFree",
                            "aclrtMemsetAsync",
                            "aclrtMemcpy",
                            "aclrtRecordEvent",
                            "aclrtStreamWaitEvent",
                            "aclrtDestroyEvent",
                            "aclGetRecentErrMsg",
                            "aclrtGetLastError",
                            "aclrtPeekAtLastError",
                            "aclrtStreamQuery",
                            "aclrtQueryEventStatus",
                            "aclrtSynchronizeEvent",
                            "aclrtSynchronizeStreamWithTimeout",
                            "aclrtBinaryLoadFromData",
                            "aclrtBinaryUnLoad",
                            "aclrtBinaryGetFunction",
                            "aclrtLaunchKernelWithHostArgs",
                            "aclrtGetFunctionAddr"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if (!kctx__loader_sym(&g_ld, needed[i])) {
            printf("acl rules: the library has no %s\n", needed[i]);
            return ktc_summary(stdout, 0, 1, 0);
        }
    /* the framework's side: process and device set-up (never kctx's) */
    init_fn init = NULL;
    set_device_fn set_device = NULL;
    *(void **)&init = kctx__loader_sym(&g_ld, "aclInit");
    *(void **)&set_device = kctx__loader_sym(&g_ld, "aclrtSetDevice");
    if (!init || !set_device || init(NULL) != KACL_SUCCESS || set_device(0) != KACL_SUCCESS) {
        printf("acl rules: aclInit / aclrtSetDevice(0) failed\n");
        return ktc_summary(stdout, 0, 1, 0);
    }
    if (A(aclrtMalloc, &g_dev, 4096, KACL_MEM_MALLOC_HUGE_FIRST) != KACL_SUCCESS) {
        printf("acl rules: aclrtMalloc failed\n");
        return ktc_summary(stdout, 0, 1, 0);
    }
    for (size_t i = 0; i < NTESTS; i++) {
        int run = argc < 2;
        for (int a = 1; a < argc; a++) run |= strcmp(argv[a], k_tests[i].name) == 0;
        if (!run) continue;
        printf("%s\n", k_tests[i].name);
        ktc_test_begin();
        g_skip = 0;
        k_tests[i].fn();
        if (ktc_test_failures())
            g_failed++;
        else if (g_skip)
            g_skipped++;
        else
            g_passed++;
    }
    A(aclrtFree, g_dev);
    return ktc_summary(stdout, g_passed, g_failed, g_skipped);
}
