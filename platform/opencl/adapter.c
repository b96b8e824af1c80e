/*
 * adapter.c — the opencl platform for kctx: fills the platform tables
 * (include/kctx/platform.h) with the OpenCL API of whatever ICD loader this
 * process has (cl_api.c loads it at run time); binding.c implements the
 * OpenCL-specific API of platform/opencl/include/kctx/opencl.h. docs/opencl.md is the
 * guide; what follows is how each op maps.
 *
 *  - Devices: OpenCL has no current device. A thread lends a (cl_context,
 *    cl_device_id) pair with kctx_opencl_bind; the pairs are numbered in
 *    the order first bound (kctx__ocl_devs) and the thread's binding is the
 *    platform's bound_device.
 *  - Streams are in-order cl_command_queues of the pair's context. kctx's
 *    own are created here; a caller's is identified by its context and
 *    device (stream_info: three queries at every launch onto it; kctx
 *    never holds or remembers a caller's queue).
 *  - Events: OpenCL's events are one-shot (every enqueue makes a new one).
 *    A kctx event is an adapter object holding the cl_event of its latest
 *    record (a marker); a wait is a barrier on it, after a flush of the
 *    record's queue when the wait is on another queue. Kernels and
 *    barriers return no event. The cl_events are the driver's
 *    bookkeeping; the adapter allocates nothing per launch. A steady-state
 *    launch makes 24 OpenCL calls (docs/opencl.md, "What a launch calls").
 *  - Memory: fine-grained buffer SVM with atomics. The host reads and
 *    writes device words with C11 atomics on the shared address.
 *  - Modules: OPENCL_C sources, built for the pair's device after the
 *    task ABI (include/kctx/task_abi_opencl.h). Every OpenCL error that
 *    means the program or a kernel of it cannot be loaded on this device
 *    (a build failure, a missing kernel, no compiler) is BAD_MODULE:
 *    prepare's INCOMPATIBLE_IMAGE, with the error's name (and build log).
 *    A function remembers how its arguments are set: a task kernel (kctx_task_header, then one argument
 *    per binding) or a kernel with one by-value parameter block (the
 *    runtime's programs).
 *  - Waits with a timeout (stream_sync) and queries read an event's status:
 *    on kctx's own queues the latest event enqueued there (a record's, a
 *    copy's), which covers the stream's work unless kernels or barriers
 *    came after it (then a marker is added), on a caller's queue a
 *    marker's (sync polls it: OpenCL's waits have no timeout).
 *  - Kernel arguments: a task's binding arguments are set only when they
 *    differ from those the kernel object holds.
 *  - No capture, no epoch (quarantine is terminal), no range checks (the
 *    caller's SVM allocations are the framework's), HOST_ORDERED only, no
 *    program mode.
 *  - Every OpenCL call goes through cl_api.h's counted table (KCTX_CL), so
 *    kctx_opencl_driver_calls answers how often each entry was called and
 *    a zero is an answer (a launch's calls are pinned by test_opencl.c).
 *
 * The platform is three files by authority: this one, the ops table (what
 * the core calls); binding.c, the public API of kctx/opencl.h (lending
 * pairs, counters); test_hold.c, the test support (a hold on the next task
 * kernel), which the launch reaches only when a test armed it. What they
 * share is ocl_internal.h. This file stays one (about 1,000 lines, over the
 * wing's ~800): it is one ops table whose streams, events, allocations and
 * modules share the pair list, the own-stream list and their locks, and
 * splitting it further would spread one table's locking rules over files.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include "cl_api.h"

#include <kctx/image.h>
#include <kctx/opencl.h>
#include <kctx/platform.h>
#include <kctx/rt_layout.h>
#include <kctx/task_abi.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"
#include "services.h"

const kctx_platform_entry *kctx_opencl_platform_entry(void);

extern const unsigned char kctx_rt_opencl_programs[];
extern const size_t kctx_rt_opencl_programs_size;
extern const unsigned char kctx_task_abi_opencl[];
extern const size_t kctx_task_abi_opencl_size;

/* The words the OpenCL C task ABI addresses by offset (task_abi_opencl.h). */
_Static_assert(offsetof(kctx_task_rt, error) == 4, "task_abi_opencl.h: KCTX_TASK_RT_ERROR");
_Static_assert(offsetof(kctx_task_rt, error_detail) == 8,
               "task_abi_opencl.h: KCTX_TASK_RT_ERROR_DETAIL");
_Static_assert(sizeof(kctx_task_header) == 32, "task_abi_opencl.h: kctx_task_header");
_Static_assert(sizeof(kctx_rt_step_params) == 24, "rt_programs.cl: kctx_rt_step_params");

/* ------------------------------------------------------------------ */
/* statuses: OpenCL's codes (<= 0) and the adapter's own (> 0)          */

enum {
    OCL_NOT_READY = 1,     /* a queue still has work */
    OCL_TIMEOUT = 2,       /* a bounded wait gave up */
    OCL_NOT_BOUND = 3,     /* the calling thread lent no device */
    OCL_FOREIGN_QUEUE = 4, /* a queue of a context/device no thread lent */
    OCL_EXEC_FAILED = 5,   /* a command failed on the device */
    OCL_BAD_SIGNATURE = 6, /* a kernel the adapter cannot launch */
    OCL_BAD_PARAMS = 7,    /* a parameter block that does not fit the kernel */
    OCL_UNKNOWN_POINTER = 8,
    OCL_NO_LIBRARY = 9,
    OCL_OUT_OF_ORDER = 10, /* an out-of-order queue */
    OCL_HOST_OOM = 11,
    OCL_BAD_DEVICE = 12,   /* a device number no pair has */
    OCL_BUILD_FAILED = 13, /* a source that does not build (log in the message) */
    OCL_NOT_A_QUEUE = 14,  /* a handle OpenCL does not know as a queue */
};

/* The thread's message is the adapters' one buffer
 * (platform/common/services.h): kctx__svc_msgf(st, ...) sets it and
 * returns st. */

/* An OpenCL call's failure: keep its code and say which call. */
static int clfail(cl_int err, const char *call) {
    return kctx__svc_msgf((int)err, "%s returned %s (%d)", call, kctx__opencl_error_name(err),
                          (int)err);
}

/* ------------------------------------------------------------------ */
/* event references the adapter failed to release                       */

/* A clReleaseEvent that fails where the op cannot keep the reference for
 * a retry of its own (a stream's replaced latest event, a record's
 * replaced marker, a sync's or query's own reference): the op still
 * reports the failure (naming clReleaseEvent), and the reference waits
 * here until the next stream_destroy releases it (grave_drain). kctx's
 * close destroys its streams last, so a close that finishes leaves none
 * behind; a drain that fails fails that stream_destroy, whose retry drains
 * again. */
#define OCL_GRAVE 64
static cl_event g_grave[OCL_GRAVE];
static int g_ngrave; /* under g_grave_mu */
static pthread_mutex_t g_grave_mu = PTHREAD_MUTEX_INITIALIZER;

/* Release one reference to ev; on failure it goes to the grave and the
 * failure is the thread's message (what: whose reference). */
static int release_event(cl_event ev, const char *what) {
    cl_int err = KCTX_CL(ReleaseEvent, ev);
    if (err == CL_SUCCESS) return 0;
    pthread_mutex_lock(&g_grave_mu);
    const int kept = g_ngrave < OCL_GRAVE;
    if (kept) g_grave[g_ngrave++] = ev;
    pthread_mutex_unlock(&g_grave_mu);
    return kctx__svc_msgf((int)err, "clReleaseEvent(%s) returned %s (%d)%s", what,
                          kctx__opencl_error_name(err), (int)err,
                          kept ? "; released again at the next stream_destroy"
                               : "; the reference is lost (64 failed releases pending)");
}

/* Release the grave's references (stream_destroy). */
static int grave_drain(void) {
    int st = 0;
    pthread_mutex_lock(&g_grave_mu);
    while (g_ngrave > 0 && !st) {
        cl_int err = KCTX_CL(ReleaseEvent, g_grave[g_ngrave - 1]);
        if (err)
            st = clfail(err, "clReleaseEvent(a reference whose release failed earlier)");
        else
            g_ngrave--;
    }
    pthread_mutex_unlock(&g_grave_mu);
    return st;
}

static kctx_pclass o_classify(int st) {
    switch (st) {
    case CL_SUCCESS:
        return KCTX_PCLASS_OK;
    case OCL_NOT_READY:
        return KCTX_PCLASS_NOT_READY;
    case OCL_TIMEOUT:
        return KCTX_PCLASS_TIMEOUT;
    case OCL_EXEC_FAILED:
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return KCTX_PCLASS_DEVICE_ERROR;
    case OCL_HOST_OOM:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_OUT_OF_RESOURCES:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return KCTX_PCLASS_NO_MEMORY;
    case OCL_NO_LIBRARY:
        return KCTX_PCLASS_UNSUPPORTED;
    /* this program or kernel cannot be loaded on this device: the image's
     * fault (prepare answers INCOMPATIBLE_IMAGE) */
    case OCL_BUILD_FAILED:
    case OCL_BAD_SIGNATURE:
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE:
    case CL_COMPILER_NOT_AVAILABLE:
    case CL_LINKER_NOT_AVAILABLE:
    case CL_INVALID_BINARY:
    case CL_INVALID_PROGRAM_EXECUTABLE:
    case CL_INVALID_KERNEL_NAME:
    case CL_INVALID_KERNEL_DEFINITION:
    case CL_KERNEL_ARG_INFO_NOT_AVAILABLE:
        return KCTX_PCLASS_BAD_MODULE;
    case CL_DEVICE_NOT_AVAILABLE:
        return KCTX_PCLASS_DEVICE_LOST;
    default:
        return st > 0 || st < 0 ? KCTX_PCLASS_INVALID : KCTX_PCLASS_OTHER;
    }
}

static const char *o_status_name(int st) {
    switch (st) {
    case OCL_NOT_READY:
        return "KCTX_OPENCL_NOT_READY";
    case OCL_TIMEOUT:
        return "KCTX_OPENCL_TIMEOUT";
    case OCL_NOT_BOUND:
        return "KCTX_OPENCL_NOT_BOUND";
    case OCL_FOREIGN_QUEUE:
        return "KCTX_OPENCL_FOREIGN_QUEUE";
    case OCL_EXEC_FAILED:
        return "KCTX_OPENCL_EXEC_FAILED";
    case OCL_BAD_SIGNATURE:
        return "KCTX_OPENCL_BAD_SIGNATURE";
    case OCL_BAD_PARAMS:
        return "KCTX_OPENCL_BAD_PARAMS";
    case OCL_UNKNOWN_POINTER:
        return "KCTX_OPENCL_UNKNOWN_POINTER";
    case OCL_NO_LIBRARY:
        return "KCTX_OPENCL_NO_LIBRARY";
    case OCL_OUT_OF_ORDER:
        return "KCTX_OPENCL_OUT_OF_ORDER_QUEUE";
    case OCL_HOST_OOM:
        return "KCTX_OPENCL_HOST_OOM";
    case OCL_BAD_DEVICE:
        return "KCTX_OPENCL_BAD_DEVICE";
    case OCL_BUILD_FAILED:
        return "KCTX_OPENCL_BUILD_FAILED";
    case OCL_NOT_A_QUEUE:
        return "KCTX_OPENCL_NOT_A_QUEUE";
    default:
        return kctx__opencl_error_name((cl_int)st);
    }
}

static const char *o_last_message(void) { return kctx__svc_msg(); }

/* ------------------------------------------------------------------ */
/* the lent (context, device) pairs                                     */

pthread_mutex_t kctx__ocl_mu = PTHREAD_MUTEX_INITIALIZER;
ocl_dev kctx__ocl_devs[KCTX_OPENCL_MAX_DEVICES];
ocl_counts kctx__ocl_counts[KCTX_OPENCL_MAX_DEVICES];
_Atomic int kctx__ocl_ndevs;
_Thread_local int kctx__ocl_bound = -1;

static int bound(int *device) {
    if (kctx__ocl_bound < 0)
        return kctx__svc_msgf(OCL_NOT_BOUND, "no OpenCL device is lent to this thread: call "
                                             "kctx_opencl_bind or kctx_opencl_bind_queue first");
    *device = kctx__ocl_bound;
    return 0;
}

static int bound_pair(const ocl_dev **d) {
    int i = -1;
    int st = bound(&i);
    if (st) return st;
    *d = &kctx__ocl_devs[i];
    return 0;
}

static int o_bound_device(int *device) { return bound(device); }

static int o_device_count(int *n) {
    *n = atomic_load(&kctx__ocl_ndevs);
    return 0;
}

static int o_device_info(int device, kctx_device_info *info) {
    if (device < 0 || device >= atomic_load(&kctx__ocl_ndevs))
        return kctx__svc_msgf(OCL_BAD_DEVICE, "device %d: no such lent OpenCL device", device);
    *info = kctx__ocl_devs[device].info;
    return 0;
}

/* ------------------------------------------------------------------ */
/* streams: in-order command queues                                     */

/* kctx's own streams. A query or a sync of one reports the state of the
 * real commands enqueued there, without enqueueing anything in the usual
 * case: `last` is the event of the latest command there that returned one,
 * and it covers the stream's work when no command without an event came
 * after it (`plain` counts those: kernels and barriers). A launch's
 * kernels and barriers return no event (an event per command, and the
 * release of the one it replaced, was most of the adapter's calls per
 * launch); every launch ends each own stream with a record (AICORE_DONE,
 * AICPU_DONE), whose marker's event is `last` without a reference of the
 * stream's own: the kctx event holds it, and hands it to the stream
 * (hand_over) instead of releasing it while the stream still needs it.
 * Copies and fills return their event (the stream's own reference). When
 * plain commands follow the latest event (a launch that failed before its
 * records), a query or sync enqueues a marker; a query then gives it up to
 * 1 ms, as on a caller's queue. (Asking for a marker at every query was
 * measured and dropped earlier: a marker just enqueued is not complete yet,
 * so the first query after any work said "busy".) Commands that return an
 * event are enqueued under the stream's lock, which keeps `last` the
 * latest; a plain command counts itself after its enqueue, and an
 * event-returning one reads the count before its own, so `covered` never
 * counts a command enqueued after `last`. Every stream handle is the
 * cl_command_queue itself (what kctx_get_resources reports is a queue a
 * framework can use); the own ones are found in g_own, a short list (three
 * per kernel context) read without a lock. */
#define OCL_MAX_OWN (8 * KCTX_OPENCL_MAX_DEVICES)
static _Atomic(ocl_stream *) g_own[OCL_MAX_OWN]; /* slots written under kctx__ocl_mu */
static _Atomic int g_own_hi;                     /* slots in use are below it */

ocl_stream *kctx__ocl_own_stream(kctx_pstream s) {
    const int hi = atomic_load_explicit(&g_own_hi, memory_order_acquire);
    for (int i = 0; i < hi; i++) {
        ocl_stream *o = atomic_load_explicit(&g_own[i], memory_order_acquire);
        if (o && (uint64_t)(uintptr_t)o->q == s) return o;
    }
    return NULL;
}

/* Under kctx__ocl_mu: o is still an own stream (not destroyed). */
static bool own_registered(const ocl_stream *o) {
    const int hi = atomic_load(&g_own_hi);
    for (int i = 0; i < hi; i++)
        if (atomic_load(&g_own[i]) == o) return true;
    return false;
}

static cl_command_queue queue_of(kctx_pstream s) { return (cl_command_queue)(uintptr_t)s; }

/* Counts an enqueue on s (a caller's queue: on the calling thread's pair);
 * the own stream, or NULL for a caller's queue. */
static ocl_stream *count_enqueue(kctx_pstream s) {
    ocl_stream *o = kctx__ocl_own_stream(s);
    int dev = o ? o->dev : kctx__ocl_bound;
    if (dev >= 0) atomic_fetch_add(&kctx__ocl_counts[dev].enqueues, 1);
    return o;
}

/* After a plain command (no event) was enqueued on an own stream. */
static void plain_done(ocl_stream *o) {
    if (o) atomic_fetch_add_explicit(&o->plain, 1, memory_order_release);
}

/* Around an event-returning command on an own stream: the lock, and the
 * plain commands its event covers (those counted before its enqueue). */
static uint64_t event_begin(ocl_stream *o) {
    pthread_mutex_lock(&o->mu);
    return atomic_load_explicit(&o->plain, memory_order_acquire);
}

/* ev (NULL: the enqueue failed) becomes the stream's latest; `owned`: the
 * stream holds a reference of its own, else a record's kctx event does.
 * An own reference it replaces is released after unlocking: the release's
 * failure is returned (the reference goes to the grave). */
static int event_end(ocl_stream *o, cl_event ev, uint64_t covered, int owned) {
    cl_event drop = NULL;
    if (ev) {
        if (o->last_owned) drop = o->last;
        o->last = ev;
        o->last_owned = owned;
        o->covered = covered;
    }
    pthread_mutex_unlock(&o->mu);
    return drop ? release_event(drop, "the stream's replaced latest event") : 0;
}

/* A caller's queue is checked on every launch (stream_info's three
 * queries) and never retained or remembered: kctx never stores the
 * caller's stream, and once a launch has returned the caller may release
 * its queue with no later call of kctx naming it (docs/kernel-mode.md,
 * "Launch, capture and replay"). A cache of checked queues would have to
 * hold a reference (else a released handle's address could come to name
 * another queue), which is exactly that: measured, it saved 3 of 27 calls
 * per launch (docs/benchmarks.md, opencl_launch_calls). */

static int o_stream_create(kctx_pstream *s) {
    const ocl_dev *d;
    int st = bound_pair(&d);
    if (st) return st;
    ocl_stream *o = calloc(1, sizeof *o);
    if (!o) return kctx__svc_msgf(OCL_HOST_OOM, "stream_create: host allocation failed");
    cl_int err = CL_SUCCESS;
    o->q = KCTX_CL(CreateCommandQueueWithProperties, d->ctx, d->dev, NULL, &err);
    if (!o->q) {
        free(o);
        return clfail(err, "clCreateCommandQueueWithProperties");
    }
    pthread_mutex_init(&o->mu, NULL);
    o->dev = (int)(d - kctx__ocl_devs);
    pthread_mutex_lock(&kctx__ocl_mu);
    int slot = -1;
    for (int i = 0; i < OCL_MAX_OWN && slot < 0; i++)
        if (!atomic_load(&g_own[i])) slot = i;
    if (slot >= 0) {
        atomic_store(&g_own[slot], o);
        if (slot >= atomic_load(&g_own_hi)) atomic_store(&g_own_hi, slot + 1);
        atomic_fetch_add(&kctx__ocl_counts[o->dev].queues, 1);
    }
    pthread_mutex_unlock(&kctx__ocl_mu);
    if (slot < 0) {
        KCTX_CL(ReleaseCommandQueue, o->q);
        pthread_mutex_destroy(&o->mu);
        free(o);
        return kctx__svc_msgf(OCL_HOST_OOM, "stream_create: kctx holds %d queues already",
                              OCL_MAX_OWN);
    }
    *s = (kctx_pstream)(uintptr_t)o->q;
    return 0;
}

/* Three releases, each done once: the grave's references, the stream's
 * own reference to its latest event, the queue. A failure returns with the
 * rest undone, and a retry makes exactly the calls that remain (K26). */
static int o_stream_destroy(kctx_pstream s) {
    ocl_stream *o = kctx__ocl_own_stream(s);
    if (!o) return kctx__svc_msgf(OCL_BAD_PARAMS, "stream_destroy: not a stream kctx created");
    int st = grave_drain();
    if (st) return st;
    pthread_mutex_lock(&o->mu);
    cl_int err = CL_SUCCESS;
    if (o->last && o->last_owned) {
        err = KCTX_CL(ReleaseEvent, o->last);
        if (!err) o->last = NULL;
    }
    pthread_mutex_unlock(&o->mu);
    if (err) return clfail(err, "clReleaseEvent(the stream's latest event)");
    err = KCTX_CL(ReleaseCommandQueue, o->q);
    if (err) return clfail(err, "clReleaseCommandQueue");
    pthread_mutex_lock(&kctx__ocl_mu);
    for (int i = 0; i < OCL_MAX_OWN; i++)
        if (atomic_load(&g_own[i]) == o) atomic_store(&g_own[i], NULL);
    atomic_fetch_sub(&kctx__ocl_counts[o->dev].queues, 1);
    pthread_mutex_unlock(&kctx__ocl_mu);
    pthread_mutex_destroy(&o->mu);
    free(o);
    return 0;
}

/* The event that completes when everything enqueued on s so far has
 * (retained; NULL: an own stream that never had work); *fresh when it was
 * just enqueued (a marker). Own stream: its latest event when that covers
 * its work, else a marker, which becomes the latest. */
static int completion_event(kctx_pstream s, cl_event *ev, bool *fresh) {
    ocl_stream *o = kctx__ocl_own_stream(s);
    *ev = NULL;
    *fresh = false;
    if (o) {
        uint64_t plain = event_begin(o);
        if (plain == o->covered) {
            cl_int err = o->last ? KCTX_CL(RetainEvent, o->last) : CL_SUCCESS;
            if (!err) *ev = o->last;
            pthread_mutex_unlock(&o->mu);
            return err ? clfail(err, "clRetainEvent(the stream's latest event)") : 0;
        }
        count_enqueue(s);
        cl_event m = NULL;
        cl_int err = KCTX_CL(EnqueueMarkerWithWaitList, o->q, 0, NULL, &m);
        /* the caller's reference; the stream keeps its own */
        cl_int rerr = err ? CL_SUCCESS : KCTX_CL(RetainEvent, m);
        int st = event_end(o, err ? NULL : m, plain, 1);
        if (err) return clfail(err, "clEnqueueMarkerWithWaitList");
        if (rerr) return clfail(rerr, "clRetainEvent(a marker)");
        if (st) {
            (void)release_event(m, "a marker's second reference");
            return st;
        }
        *ev = m;
        *fresh = true;
        return 0;
    }
    cl_int err = KCTX_CL(EnqueueMarkerWithWaitList, queue_of(s), 0, NULL, ev);
    if (err) return clfail(err, "clEnqueueMarkerWithWaitList");
    err = KCTX_CL(Flush, queue_of(s));
    if (err) {
        int st = clfail(err, "clFlush");
        (void)release_event(*ev, "a marker on a caller's queue");
        *ev = NULL;
        return st;
    }
    *fresh = true;
    return 0;
}

static int event_state(cl_event ev, cl_int *state) {
    cl_int err =
        KCTX_CL(GetEventInfo, ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof *state, state, NULL);
    return err ? clfail(err, "clGetEventInfo(EXECUTION_STATUS)") : 0;
}

static int state_status(cl_int state, const char *what) {
    if (state == CL_COMPLETE) return 0;
    if (state < 0)
        return kctx__svc_msgf(OCL_EXEC_FAILED, "%s: work on the queue failed on the device (%s)",
                              what, kctx__opencl_error_name(state));
    return kctx__svc_msgf(OCL_NOT_READY, "%s: the queue still has work", what);
}

/* Poll ev until it completes or timeout_ms passes, pausing 2 us doubling to
 * about 1 ms (kctx__svc_poll; OpenCL's waits have no timeout). */
typedef struct event_poll {
    cl_event ev;
    int st;
    cl_int state;
} event_poll;

static bool event_done(void *arg) {
    event_poll *p = arg;
    p->st = event_state(p->ev, &p->state);
    return p->st || p->state <= CL_COMPLETE;
}

static int wait_event(cl_event ev, uint32_t timeout_ms, const char *what) {
    event_poll p = {ev, 0, CL_QUEUED};
    if (kctx__svc_poll(event_done, &p, timeout_ms, 2000))
        return p.st ? p.st : state_status(p.state, what);
    return kctx__svc_msgf(OCL_TIMEOUT, "%s: the queue's work did not finish within %u ms", what,
                          timeout_ms);
}

static int o_stream_sync(kctx_pstream s, uint32_t timeout_ms) {
    cl_event ev;
    bool fresh;
    int st = completion_event(s, &ev, &fresh);
    if (st || !ev) return st;
    cl_int err = KCTX_CL(Flush, queue_of(s));
    st = err ? clfail(err, "clFlush") : wait_event(ev, timeout_ms, "stream_sync");
    int rst = release_event(ev, "stream_sync's");
    return st ? st : rst;
}

/* A query reads the state of the latest event once; a marker it had to
 * enqueue (a caller's queue, an own stream with plain commands last) is
 * given up to 1 ms to complete (a marker after finished work completes in
 * microseconds). An own stream is flushed first (records do not flush:
 * its commands must reach the device to complete). */
static int o_stream_query(kctx_pstream s) {
    cl_event ev;
    bool fresh;
    int st = completion_event(s, &ev, &fresh);
    if (st || !ev) return st;
    cl_int err = kctx__ocl_own_stream(s) ? KCTX_CL(Flush, queue_of(s)) : CL_SUCCESS;
    if (err) {
        st = clfail(err, "clFlush");
    } else if (!fresh) {
        cl_int state;
        st = event_state(ev, &state);
        if (!st) st = state_status(state, "stream_query");
    } else {
        st = wait_event(ev, 1, "stream_query");
        if (st == OCL_TIMEOUT)
            st = kctx__svc_msgf(OCL_NOT_READY, "stream_query: the queue still has work");
    }
    int rst = release_event(ev, "stream_query's");
    return st ? st : rst;
}

/* A caller's queue: the three queries (K5, K18), on every launch. kctx's
 * own: its pair. */
static int o_stream_info(kctx_pstream s, int *device, kctx_pcapture_status *status, uint64_t *id,
                         kctx_pgraph *graph) {
    cl_command_queue q = queue_of(s);
    const ocl_stream *o = kctx__ocl_own_stream(s);
    int i = o ? o->dev : -1;
    if (!o) {
        cl_context ctx;
        cl_device_id dev;
        cl_command_queue_properties props;
        cl_int err = KCTX_CL(GetCommandQueueInfo, q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
        if (err == CL_INVALID_COMMAND_QUEUE)
            return kctx__svc_msgf(OCL_NOT_A_QUEUE, "stream 0x%llx is not an OpenCL command queue",
                                  (unsigned long long)s);
        if (!err) err = KCTX_CL(GetCommandQueueInfo, q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
        if (!err)
            err = KCTX_CL(GetCommandQueueInfo, q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
        if (err) return clfail(err, "clGetCommandQueueInfo");
        if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
            return kctx__svc_msgf(OCL_OUT_OF_ORDER,
                                  "stream 0x%llx is an out-of-order queue: kctx orders a "
                                  "launch after the queue's earlier work, which needs an "
                                  "in-order queue",
                                  (unsigned long long)s);
        i = kctx__ocl_lookup_pair(ctx, dev);
        if (i < 0)
            return kctx__svc_msgf(OCL_FOREIGN_QUEUE,
                                  "stream 0x%llx is a queue of a cl_context/device that no "
                                  "thread lent (kctx_opencl_bind)",
                                  (unsigned long long)s);
    }
    if (device) *device = i;
    if (status) *status = KCTX_PCAPTURE_NONE;
    if (id) *id = 0;
    if (graph) *graph = 0;
    return 0;
}

/* ------------------------------------------------------------------ */
/* events: the latest record's marker                                   */

/* A kctx event holds the one reference to its latest record's marker
 * event. Recorded on an own stream, that event is also the stream's
 * latest (`rec_on`), without a reference of the stream's: when the event
 * is recorded again elsewhere or destroyed while the stream still has it
 * as its latest, the reference is handed to the stream instead of being
 * released. The marker's queue is flushed when a command of another queue
 * first waits on it (`unflushed`; the spec's rule for an event another
 * queue waits on), not at the record: a record nothing waits on from
 * another queue (SERIAL_TAIL) is not flushed by kctx. kctx's core waits on
 * a record of a caller's queue only in the launch that recorded it, while
 * that queue is live. No lock: the seam calls the ops naming one event one
 * at a time (include/kctx/platform.h, "Locking": an event belongs to one
 * context, whose lock the core holds for each of them). */
typedef struct ocl_event {
    int dev;                    /* the pair of the thread that created it */
    cl_event ev;                /* NULL until recorded */
    ocl_stream *rec_on;         /* the own stream it was recorded on, or NULL */
    cl_command_queue unflushed; /* the record's queue, until flushed for a wait */
} ocl_event;

/* ev, the latest event of own stream o maybe, is about to be released by
 * its kctx event: if o still has it as its latest, o takes the reference
 * over (NULL returned), else ev is the caller's to release. */
static cl_event hand_over(ocl_stream *o, cl_event ev) {
    pthread_mutex_lock(&kctx__ocl_mu); /* o cannot be destroyed meanwhile */
    if (own_registered(o)) {
        pthread_mutex_lock(&o->mu);
        if (o->last == ev && !o->last_owned) {
            o->last_owned = 1;
            ev = NULL;
        }
        pthread_mutex_unlock(&o->mu);
    }
    pthread_mutex_unlock(&kctx__ocl_mu);
    return ev;
}

static int o_event_create(kctx_pevent *e) {
    int dev = -1;
    int st = bound(&dev);
    if (st) return st;
    ocl_event *x = calloc(1, sizeof *x);
    if (!x) return kctx__svc_msgf(OCL_HOST_OOM, "event_create: host allocation failed");
    x->dev = dev;
    atomic_fetch_add(&kctx__ocl_counts[dev].events, 1);
    *e = (kctx_pevent)(uintptr_t)x;
    return 0;
}

/* A failed release keeps the event whole: the retry hands over or
 * releases its reference again (K26). */
static int o_event_destroy(kctx_pevent e) {
    ocl_event *x = (ocl_event *)(uintptr_t)e;
    cl_event ev = x->ev;
    if (ev && x->rec_on) ev = hand_over(x->rec_on, ev);
    if (ev) {
        cl_int err = KCTX_CL(ReleaseEvent, ev);
        if (err) return clfail(err, "clReleaseEvent(event_destroy)");
    }
    atomic_fetch_sub(&kctx__ocl_counts[x->dev].events, 1);
    free(x);
    return 0;
}

/* A marker returning its event, which replaces the kctx event's (and, on
 * an own stream, becomes the stream's latest, under the stream's lock).
 * Once the marker is enqueued the record has happened; a release after it
 * that fails (the stream's replaced latest, the event's previous record)
 * is still the record's error, its reference in the grave. */
static int o_event_record(kctx_pevent e, kctx_pstream s) {
    ocl_event *x = (ocl_event *)(uintptr_t)e;
    ocl_stream *o = count_enqueue(s);
    cl_event ev = NULL;
    cl_int err;
    int st = 0;
    if (o) {
        uint64_t covered = event_begin(o);
        err = KCTX_CL(EnqueueMarkerWithWaitList, o->q, 0, NULL, &ev);
        st = event_end(o, err ? NULL : ev, covered, 0);
    } else {
        err = KCTX_CL(EnqueueMarkerWithWaitList, queue_of(s), 0, NULL, &ev);
    }
    if (err) return clfail(err, "clEnqueueMarkerWithWaitList(event record)");
    cl_event old = x->ev;
    ocl_stream *old_on = x->rec_on;
    x->ev = ev;
    x->rec_on = o;
    x->unflushed = queue_of(s);
    /* recorded on the same own stream: that stream's latest is ev now */
    if (old && old_on && old_on != o) old = hand_over(old_on, old);
    int rst = old ? release_event(old, "the event's previous record") : 0;
    return st ? st : rst;
}

static int o_stream_wait_event(kctx_pstream s, kctx_pevent e) {
    ocl_event *x = (ocl_event *)(uintptr_t)e;
    if (!x->ev) return 0; /* never recorded: nothing to wait for (as CUDA) */
    cl_int err = CL_SUCCESS;
    if (x->unflushed && x->unflushed != queue_of(s)) {
        err = KCTX_CL(Flush, x->unflushed);
        if (err) return clfail(err, "clFlush(the queue of the event waited for)");
        x->unflushed = NULL;
    }
    ocl_stream *o = count_enqueue(s);
    err = KCTX_CL(EnqueueBarrierWithWaitList, queue_of(s), 1, &x->ev, NULL);
    if (!err) plain_done(o);
    return err ? clfail(err, "clEnqueueBarrierWithWaitList(event wait)") : 0;
}

/* ------------------------------------------------------------------ */
/* memory: fine-grained SVM                                             */

typedef struct ocl_alloc {
    void *p;
    size_t size;
    int dev;
    cl_context ctx;
    struct ocl_alloc *next;
} ocl_alloc;

static ocl_alloc *g_allocs; /* under kctx__ocl_mu */

static int o_mem_alloc(size_t size, kctx_pdevptr *ptr) {
    const ocl_dev *d;
    int st = bound_pair(&d);
    if (st) return st;
    ocl_alloc *a = malloc(sizeof *a);
    if (!a) return kctx__svc_msgf(OCL_HOST_OOM, "mem_alloc: host allocation failed");
    a->p = KCTX_CL(SVMAlloc, d->ctx,
                   CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER | CL_MEM_SVM_ATOMICS, size, 0);
    if (!a->p) {
        free(a);
        return kctx__svc_msgf(CL_MEM_OBJECT_ALLOCATION_FAILURE,
                              "clSVMAlloc of %zu bytes (fine-grained, atomics) failed", size);
    }
    a->ctx = d->ctx;
    a->size = size;
    a->dev = (int)(d - kctx__ocl_devs);
    atomic_fetch_add(&kctx__ocl_counts[a->dev].allocations, 1);
    atomic_fetch_add(&kctx__ocl_counts[a->dev].total_allocations, 1);
    atomic_fetch_add(&kctx__ocl_counts[a->dev].bytes, size);
    pthread_mutex_lock(&kctx__ocl_mu);
    a->next = g_allocs;
    g_allocs = a;
    pthread_mutex_unlock(&kctx__ocl_mu);
    *ptr = (kctx_pdevptr)(uintptr_t)a->p;
    return 0;
}

static int o_mem_free(kctx_pdevptr ptr) {
    pthread_mutex_lock(&kctx__ocl_mu);
    ocl_alloc **pp = &g_allocs;
    while (*pp && (*pp)->p != (void *)(uintptr_t)ptr) pp = &(*pp)->next;
    ocl_alloc *a = *pp;
    if (a) *pp = a->next;
    pthread_mutex_unlock(&kctx__ocl_mu);
    if (!a)
        return kctx__svc_msgf(OCL_UNKNOWN_POINTER,
                              "mem_free: 0x%llx is not an allocation of this platform",
                              (unsigned long long)ptr);
    KCTX_CL(SVMFree, a->ctx, a->p);
    atomic_fetch_sub(&kctx__ocl_counts[a->dev].allocations, 1);
    atomic_fetch_sub(&kctx__ocl_counts[a->dev].bytes, a->size);
    free(a);
    return 0;
}

/* Copies and fills return their event on an own stream (its latest, the
 * stream's own reference); on a caller's queue none. */
typedef struct copy_step {
    ocl_stream *o;
    cl_event ev;
    uint64_t covered;
} copy_step;

static copy_step copy_begin(kctx_pstream s) {
    copy_step c = {count_enqueue(s), NULL, 0};
    if (c.o) c.covered = event_begin(c.o);
    return c;
}

static int copy_end(copy_step *c, cl_int err, const char *what) {
    int st = c->o ? event_end(c->o, err ? NULL : c->ev, c->covered, 1) : 0;
    return err ? clfail(err, what) : st;
}

static int o_memcpy_htod_async(kctx_pdevptr dst, const void *src, size_t size, kctx_pstream s) {
    copy_step c = copy_begin(s);
    cl_int err = KCTX_CL(EnqueueSVMMemcpy, queue_of(s), CL_FALSE, (void *)(uintptr_t)dst, src, size,
                         0, NULL, c.o ? &c.ev : NULL);
    return copy_end(&c, err, "clEnqueueSVMMemcpy(host to device)");
}

static int o_memset_async(kctx_pdevptr dst, uint8_t value, size_t size, kctx_pstream s) {
    copy_step c = copy_begin(s);
    cl_int err = KCTX_CL(EnqueueSVMMemFill, queue_of(s), (void *)(uintptr_t)dst, &value, 1, size, 0,
                         NULL, c.o ? &c.ev : NULL);
    return copy_end(&c, err, "clEnqueueSVMMemFill");
}

static int o_memcpy_dtoh_async(void *dst, kctx_pdevptr src, size_t size, kctx_pstream s) {
    copy_step c = copy_begin(s);
    cl_int err = KCTX_CL(EnqueueSVMMemcpy, queue_of(s), CL_FALSE, dst, (const void *)(uintptr_t)src,
                         size, 0, NULL, c.o ? &c.ev : NULL);
    return copy_end(&c, err, "clEnqueueSVMMemcpy(device to host)");
}

/* Fine-grained SVM with atomics: the host's atomics are the device's. */
static int o_atomic_read_u32(kctx_pdevptr ptr, uint32_t *value) {
    if (!ptr || ptr % 4)
        return kctx__svc_msgf(OCL_UNKNOWN_POINTER, "atomic_read_u32: 0x%llx is not an aligned word",
                              (unsigned long long)ptr);
    *value = atomic_load((_Atomic uint32_t *)(uintptr_t)ptr);
    return 0;
}

static int o_atomic_write_u32(kctx_pdevptr ptr, uint32_t value) {
    if (!ptr || ptr % 4)
        return kctx__svc_msgf(OCL_UNKNOWN_POINTER,
                              "atomic_write_u32: 0x%llx is not an aligned word",
                              (unsigned long long)ptr);
    atomic_store((_Atomic uint32_t *)(uintptr_t)ptr, value);
    return 0;
}

/* ------------------------------------------------------------------ */
/* modules and kernels                                                  */

#define OCL_MAX_ARGS 65 /* the header and 64 bindings (the image format's child limit) */

typedef enum ocl_fn_kind {
    FN_NOARGS = 0, /* a kernel without arguments (the task ABI marker) */
    FN_BLOCK = 1,  /* one by-value parameter: the whole block (the runtime's programs) */
    FN_TASK = 2    /* kctx_task_header, then one argument per binding */
} ocl_fn_kind;

/* A kernel object keeps the arguments last set on it (OpenCL copies them
 * at each enqueue), and only the adapter sets this one's, in launch, which
 * the seam calls for one function at a time (include/kctx/platform.h,
 * "Locking"), so setting the arguments and enqueueing is one step without
 * a lock: a binding argument (a tensor's address, a scalar) whose value is
 * the one set last is not set again. The header and the parameter blocks carry the
 * launch's identity and are set at every launch. */
typedef struct ocl_fn {
    int dev;
    cl_kernel k;
    ocl_fn_kind kind;
    cl_uint nargs;
    uint8_t is_ptr[OCL_MAX_ARGS];
    uint8_t arg_set[OCL_MAX_ARGS]; /* 1: argument i holds arg_value[i] */
    uint64_t arg_value[OCL_MAX_ARGS];
    struct ocl_fn *next;
} ocl_fn;

typedef struct ocl_module {
    cl_program prog;
    int dev;
    pthread_mutex_t mu;
    ocl_fn *fns;
} ocl_module;

/* The build options: argument information for classifying kernels. */
#define OCL_BUILD_OPTIONS "-cl-kernel-arg-info"

/* A build log made short: "<driver's temporary file>.cl:12:5: error" becomes
 * "line 12:5: error" (the source's own lines: kctx's preamble ends with
 * #line 1), and line breaks become spaces. */
static void compact_log(char *log) {
    char *w = log;
    for (const char *r = log; *r;) {
        const char *tok = r;
        while (*tok && *tok != ' ' && *tok != '\n' && *tok != '\t') tok++;
        /* [r, tok) is one word: a path ending in ".cl:" loses its path */
        const char *cl = NULL;
        for (const char *p = r; p + 3 < tok; p++)
            if (p[0] == '.' && p[1] == 'c' && p[2] == 'l' && p[3] == ':') cl = p;
        if (cl && cl > r) {
            memcpy(w, "line ", 5); /* never longer than what it replaces: ".cl:" and a path */
            w += 5;
            r = cl + 4;
        }
        while (r < tok) *w++ = *r++;
        if (*r) *w++ = *r == '\n' ? ' ' : *r, r++;
    }
    *w = 0;
}

static int build_failed(cl_program prog, cl_device_id dev, cl_int err) {
    size_t n = 0;
    KCTX_CL(GetProgramBuildInfo, prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char log[1536] = "";
    if (n > 0) {
        char *full = malloc(n + 1);
        if (full && !KCTX_CL(GetProgramBuildInfo, prog, dev, CL_PROGRAM_BUILD_LOG, n, full, NULL)) {
            full[n] = 0;
            snprintf(log, sizeof log, "%s", full);
        }
        free(full);
    }
    compact_log(log);
    return kctx__svc_msgf(OCL_BUILD_FAILED,
                          "the OpenCL C source does not build for this device (%s): %s",
                          kctx__opencl_error_name(err), log[0] ? log : "no build log");
}

static int o_module_load(const void *bytes, size_t size, kctx_pmodule *module) {
    const ocl_dev *d;
    int st = bound_pair(&d);
    if (st) return st;
    if (!bytes || !size) return kctx__svc_msgf(OCL_BAD_PARAMS, "module_load: an empty source");
    /* the task ABI, then the source numbered from its own line 1 */
    const char *src[3] = {(const char *)kctx_task_abi_opencl, "\n#line 1\n", (const char *)bytes};
    size_t len[3] = {kctx_task_abi_opencl_size, 9, size};
    cl_int err = CL_SUCCESS;
    cl_program prog = KCTX_CL(CreateProgramWithSource, d->ctx, 3, src, len, &err);
    if (!prog) return clfail(err, "clCreateProgramWithSource");
    err = KCTX_CL(BuildProgram, prog, 1, &d->dev, OCL_BUILD_OPTIONS, NULL, NULL);
    if (err) {
        /* the program's fault (the build log says why), or another failure
         * in its own class (no memory) */
        st = o_classify(err) == KCTX_PCLASS_BAD_MODULE ? build_failed(prog, d->dev, err)
                                                       : clfail(err, "clBuildProgram");
        KCTX_CL(ReleaseProgram, prog);
        return st;
    }
    ocl_module *m = calloc(1, sizeof *m);
    if (!m) {
        KCTX_CL(ReleaseProgram, prog);
        return kctx__svc_msgf(OCL_HOST_OOM, "module_load: host allocation failed");
    }
    m->prog = prog;
    m->dev = (int)(d - kctx__ocl_devs);
    atomic_fetch_add(&kctx__ocl_counts[m->dev].programs, 1);
    pthread_mutex_init(&m->mu, NULL);
    *module = (kctx_pmodule)(uintptr_t)m;
    return 0;
}

static void fn_free(ocl_fn *f) {
    KCTX_CL(ReleaseKernel, f->k);
    atomic_fetch_sub(&kctx__ocl_counts[f->dev].kernels, 1);
    free(f);
}

/* The kernels one at a time, then the program: a failure returns with
 * the rest kept, and a retry releases exactly what remains (K26). */
static int o_module_unload(kctx_pmodule module) {
    ocl_module *m = (ocl_module *)(uintptr_t)module;
    while (m->fns) {
        ocl_fn *f = m->fns;
        cl_int err = KCTX_CL(ReleaseKernel, f->k);
        if (err) return clfail(err, "clReleaseKernel");
        m->fns = f->next;
        atomic_fetch_sub(&kctx__ocl_counts[f->dev].kernels, 1);
        free(f);
    }
    cl_int err = KCTX_CL(ReleaseProgram, m->prog);
    if (err) return clfail(err, "clReleaseProgram");
    atomic_fetch_sub(&kctx__ocl_counts[m->dev].programs, 1);
    pthread_mutex_destroy(&m->mu);
    free(m);
    return 0;
}

/* How the adapter sets a kernel's arguments, from their declarations. */
static int classify_kernel(ocl_fn *f, const char *name) {
    cl_int err = KCTX_CL(GetKernelInfo, f->k, CL_KERNEL_NUM_ARGS, sizeof f->nargs, &f->nargs, NULL);
    if (err) return clfail(err, "clGetKernelInfo(NUM_ARGS)");
    if (f->nargs == 0) {
        f->kind = FN_NOARGS;
        return 0;
    }
    if (f->nargs > OCL_MAX_ARGS)
        return kctx__svc_msgf(OCL_BAD_SIGNATURE, "kernel %s has %u arguments (at most %d)", name,
                              f->nargs, OCL_MAX_ARGS);
    for (cl_uint i = 0; i < f->nargs; i++) {
        cl_kernel_arg_address_qualifier q;
        err =
            KCTX_CL(GetKernelArgInfo, f->k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q, NULL);
        if (err) return clfail(err, "clGetKernelArgInfo(ADDRESS_QUALIFIER)");
        if (q == CL_KERNEL_ARG_ADDRESS_LOCAL)
            return kctx__svc_msgf(OCL_BAD_SIGNATURE,
                                  "kernel %s: argument %u is __local (kctx passes "
                                  "tensors as __global pointers and scalars as ulong)",
                                  name, i);
        f->is_ptr[i] = q == CL_KERNEL_ARG_ADDRESS_GLOBAL || q == CL_KERNEL_ARG_ADDRESS_CONSTANT;
    }
    char type0[64] = "";
    err = KCTX_CL(GetKernelArgInfo, f->k, 0, CL_KERNEL_ARG_TYPE_NAME, sizeof type0, type0, NULL);
    if (err && err != CL_INVALID_VALUE) return clfail(err, "clGetKernelArgInfo(TYPE_NAME)");
    if (strstr(type0, "kctx_task_header") && !f->is_ptr[0]) {
        f->kind = FN_TASK;
        return 0;
    }
    if (f->nargs == 1 && !f->is_ptr[0]) {
        f->kind = FN_BLOCK;
        return 0;
    }
    return kctx__svc_msgf(
        OCL_BAD_SIGNATURE,
        "kernel %s: kctx launches task kernels (a kctx_task_header, then one argument "
        "per binding: see kctx/task_abi_opencl.h's KCTX_TASK) and kernels with one "
        "by-value parameter block; its first argument is '%s'",
        name, type0);
}

static int o_module_function(kctx_pmodule module, const char *name, kctx_pfunction *fn) {
    ocl_module *m = (ocl_module *)(uintptr_t)module;
    cl_int err = CL_SUCCESS;
    cl_kernel k = KCTX_CL(CreateKernel, m->prog, name, &err);
    if (!k && err == CL_INVALID_KERNEL_NAME)
        return kctx__svc_msgf(
            err,
            "clCreateKernel(%s) returned CL_INVALID_KERNEL_NAME (%d): the program has "
            "no kernel named '%s'%s",
            name, (int)err, name,
            strncmp(name, KCTX_TASK_MARKER_PREFIX, strlen(KCTX_TASK_MARKER_PREFIX))
                ? ""
                : " (the task ABI marker: write the task kernel with KCTX_TASK, "
                  "kctx/task_abi_opencl.h)");
    if (!k)
        return kctx__svc_msgf(err, "clCreateKernel(%s) returned %s (%d)", name,
                              kctx__opencl_error_name(err), (int)err);
    ocl_fn *f = calloc(1, sizeof *f);
    if (!f) {
        KCTX_CL(ReleaseKernel, k);
        return kctx__svc_msgf(OCL_HOST_OOM, "module_function: host allocation failed");
    }
    f->k = k;
    f->dev = m->dev;
    atomic_fetch_add(&kctx__ocl_counts[f->dev].kernels, 1);
    int st = classify_kernel(f, name);
    if (st) {
        fn_free(f);
        return st;
    }
    pthread_mutex_lock(&m->mu);
    f->next = m->fns;
    m->fns = f;
    pthread_mutex_unlock(&m->mu);
    *fn = (kctx_pfunction)(uintptr_t)f;
    return 0;
}

static int set_task_args(ocl_fn *f, const void *params, size_t size) {
    kctx_task_header h;
    if (size < sizeof h)
        return kctx__svc_msgf(OCL_BAD_PARAMS, "launch: a task's parameter block of %zu bytes",
                              size);
    memcpy(&h, params, sizeof h);
    if ((size_t)h.nbindings + 1 != f->nargs || size != sizeof h + 8u * h.nbindings)
        return kctx__svc_msgf(
            OCL_BAD_PARAMS,
            "launch: the task kernel takes %u bindings; the block carries %u (%zu bytes)",
            f->nargs - 1, h.nbindings, size);
    const char *call = "clSetKernelArg(task header)";
    cl_int err = KCTX_CL(SetKernelArg, f->k, 0, sizeof h, &h);
    const unsigned char *b = (const unsigned char *)params + sizeof h;
    for (cl_uint i = 1; !err && i < f->nargs; i++, b += 8) {
        uint64_t v;
        memcpy(&v, b, 8);
        if (f->arg_set[i] && f->arg_value[i] == v) continue; /* the kernel holds it already */
        f->arg_set[i] = 0;
        call = f->is_ptr[i] ? "clSetKernelArgSVMPointer" : "clSetKernelArg";
        err = f->is_ptr[i] ? KCTX_CL(SetKernelArgSVMPointer, f->k, i, (const void *)(uintptr_t)v)
                           : KCTX_CL(SetKernelArg, f->k, i, 8, &v);
        if (!err) f->arg_set[i] = 1, f->arg_value[i] = v;
    }
    return err ? clfail(err, call) : 0;
}

static int o_launch(kctx_pstream s, kctx_pfunction fn, kctx_ptarget target, uint32_t block_dim,
                    const void *params, size_t params_size) {
    ocl_fn *f = (ocl_fn *)(uintptr_t)fn;
    size_t global = target == KCTX_PTARGET_AICPU ? 1 : (block_dim ? block_dim : 1);
    int st = 0;
    if (f->kind == FN_TASK)
        st = set_task_args(f, params, params_size);
    else if (f->kind == FN_BLOCK) {
        cl_int err = KCTX_CL(SetKernelArg, f->k, 0, params_size, params);
        if (err) st = clfail(err, "clSetKernelArg(parameter block)");
    }
    if (!st) {
        /* test support (test_hold.c): one relaxed load unless a test armed
         * a hold; only a launch that enqueues takes it */
        cl_event gate =
            f->kind == FN_TASK && atomic_load_explicit(&kctx__ocl_hold_armed, memory_order_relaxed)
                ? kctx__ocl_take_hold(s)
                : NULL;
        ocl_stream *o = count_enqueue(s);
        cl_int err = KCTX_CL(EnqueueNDRangeKernel, queue_of(s), f->k, 1, NULL, &global, NULL,
                             gate ? 1 : 0, gate ? &gate : NULL, NULL);
        if (err)
            st = clfail(err, "clEnqueueNDRangeKernel");
        else
            plain_done(o);
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* the tables                                                          */

static const kctx_platform_ops k_ops = {
    .size = sizeof(kctx_platform_ops),
    .version = KCTX_PLATFORM_VERSION,
    .classify = o_classify,
    .status_name = o_status_name,
    .last_message = o_last_message,
    .device_count = o_device_count,
    .device_info = o_device_info,
    .stream_create = o_stream_create,
    .stream_destroy = o_stream_destroy,
    .stream_sync = o_stream_sync,
    .stream_query = o_stream_query,
    .stream_info = o_stream_info,
    .event_create = o_event_create,
    .event_destroy = o_event_destroy,
    .event_record = o_event_record,
    .stream_wait_event = o_stream_wait_event,
    .mem_alloc = o_mem_alloc,
    .mem_free = o_mem_free,
    .memcpy_htod_async = o_memcpy_htod_async,
    .memset_async = o_memset_async,
    .memcpy_dtoh_async = o_memcpy_dtoh_async,
    .atomic_read_u32 = o_atomic_read_u32,
    .atomic_write_u32 = o_atomic_write_u32,
    .module_load = o_module_load,
    .module_unload = o_module_unload,
    .module_function = o_module_function,
    .launch = o_launch,
    .current_device = NULL, /* no thread-current device: bound_device */
    .device_epoch = NULL,   /* no epoch: quarantine is terminal */
    .mem_range_check = NULL,
    .function_address = NULL, /* HOST_ORDERED only */
    .exchange_capture_mode = NULL,
    .graph_attach_hook = NULL,
    .bound_device = o_bound_device,
};

static kctx_platform_desc g_desc;
static kctx_platform_entry g_entry;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
/* The runtime's programs: the #defines of their offsets, then rt_programs.cl
 * (static: the registry's one-time set-up allocates nothing on the heap). */
static char g_programs[16384];
static size_t g_programs_size;

static void programs_init(void) {
    char defs[1024];
    int n = snprintf(defs, sizeof defs,
                     "#define KCTX_RT_ARCH_RUNTIME_IMAGE %zu\n#define KCTX_RT_HOLDER %zu\n"
                     "#define KCTX_RT_REFUSED %zu\n#define KCTX_RT_CONCURRENT %zu\n"
                     "#define KCTX_RT_ABORT_LAUNCH %zu\n#define KCTX_RT_ERR_NONE %uu\n"
                     "#define KCTX_RT_ERR_CONCURRENT_LAUNCH %uu\n",
                     offsetof(kctx_rt_arch, runtime_image), offsetof(kctx_rt_image, holder),
                     offsetof(kctx_rt_image, refused_replays),
                     offsetof(kctx_rt_image, concurrent_launches),
                     offsetof(kctx_rt_image, abort_launch), (unsigned)KCTX_RT_ERR_NONE,
                     (unsigned)KCTX_RT_ERR_CONCURRENT_LAUNCH);
    if (n < 0 || (size_t)n + kctx_rt_opencl_programs_size > sizeof g_programs) return;
    memcpy(g_programs, defs, (size_t)n);
    memcpy(g_programs + n, kctx_rt_opencl_programs, kctx_rt_opencl_programs_size);
    g_programs_size = (size_t)n + kctx_rt_opencl_programs_size;
}

static int o_available(char *why, size_t why_size) {
    if (!kctx__opencl_loaded()) {
        snprintf(why, why_size, "%s", kctx__opencl_api_error());
        return 0;
    }
    if (!g_programs_size) {
        snprintf(why, why_size, "the runtime's OpenCL C programs do not fit their buffer");
        return 0;
    }
    return 1;
}

static void desc_init(void) {
    programs_init();
    g_desc = (kctx_platform_desc){
        .size = sizeof(kctx_platform_desc),
        .version = KCTX_PLATFORM_VERSION,
        .name = "opencl",
        .ops = &k_ops,
        .variant_kind = KCTX_VARIANT_OPENCL_C,
        .programs = g_programs,
        .programs_size = g_programs_size,
        .strategies = KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED),
        .default_strategy = KCTX_STRATEGY_HOST_ORDERED,
        .max_params_size = OCL_MAX_PARAMS_SIZE,
        .has_capture = 0,      /* no stream capture on OpenCL */
        .has_null_stream = 0,  /* every caller queue is a real queue */
        .has_epoch = 0,        /* no owner-reset signal: quarantine is terminal */
        .can_check_ranges = 0, /* the caller's SVM allocations are the framework's */
        .device_trace_na = "OpenCL C has no device clock: task kernels and the runtime's "
                           "programs write no timed records (the host spans, launches "
                           "included, are complete)",
    };
    g_entry = (kctx_platform_entry){
        .size = sizeof(kctx_platform_entry),
        .version = KCTX_PLATFORM_VERSION,
        .name = "opencl",
        .available = o_available,
        .desc = &g_desc,
        .lifecycle = NULL, /* program mode is UNSUPPORTED on OpenCL */
    };
}

const kctx_platform_entry *kctx_opencl_platform_entry(void) {
    pthread_once(&g_once, desc_init);
    return &g_entry;
}
