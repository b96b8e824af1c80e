/*
 * fw_opencl.c — the framework driver for the opencl platform: the suite's
 * framework side through OpenCL itself, the way an OpenCL framework owns
 * its context, devices and queues and lends them to kctx
 * (platform/opencl/include/kctx/opencl.h). OpenCL is loaded at run time with the
 * platforms' counted loader (platform/common/loader.h: the framework's own
 * table of the entries it calls, FW_CL; the same library as libkctx's
 * adapter, KCTX_OPENCL_LIBRARY else libOpenCL.so.1), so the kctx tool that
 * links the suite needs no OpenCL, and the adapter's counters
 * (kctx_opencl_driver_calls) count the adapter's calls only.
 *
 * Devices: every OpenCL device with fine-grained buffer SVM and atomics, on
 * every platform, one cl_context each, in enumeration order. The driver
 * lends them all to kctx once, in that order, so driver device i is kctx's
 * pair number i; set_device(i) binds pair i to the calling thread (OpenCL's
 * stand-in for a current device).
 *
 * What OpenCL cannot do, the driver leaves out (the probes that need it are
 * N/A, listed in expected_na.c): capture and graphs (no stream capture on
 * OpenCL), a fatal device and an owner's reset, the device lifecycle
 * counters (OpenCL has no device lifecycle calls), and the holds other than
 * the first task kernel of a launch, which kctx's test support holds with a
 * user event (kctx_opencl_test_hold).
 *
 * Counters: live objects and enqueues are kctx's (kctx_opencl_live_objects)
 * plus the driver's own.
 */
#include "fw.h"
#include "kctx_gen_suite.h" /* fw_opencl_driver, declared by the platform (FW_DRIVERS) */

#include <kctx/opencl.h>

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include "cl_errors.h"     /* kctx__opencl_error_name */
#include "fault_control.h" /* src/conformance: the failing layer's control table */
#include "loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FW_CL_MAX_DEVICES 8

typedef struct fw_cl_dev {
    cl_context ctx;
    cl_device_id dev;
    char name[64];
    unsigned cores;
    _Atomic uint64_t queues, events, allocations, bytes, total_allocations, enqueues;
} fw_cl_dev;

/* The framework's OpenCL entries, counted (loader.h). */
#define FW_CL(X)                          \
    X(clGetPlatformIDs)                   \
    X(clGetDeviceIDs)                     \
    X(clGetDeviceInfo)                    \
    X(clCreateContext)                    \
    X(clReleaseContext)                   \
    X(clGetCommandQueueInfo)              \
    X(clCreateCommandQueueWithProperties) \
    X(clReleaseCommandQueue)              \
    X(clFlush)                            \
    X(clEnqueueMarkerWithWaitList)        \
    X(clEnqueueBarrierWithWaitList)       \
    X(clGetEventInfo)                     \
    X(clRetainEvent)                      \
    X(clReleaseEvent)                     \
    X(clCreateUserEvent)                  \
    X(clSetUserEventStatus)               \
    X(clSVMAlloc)                         \
    X(clSVMFree)                          \
    X(clEnqueueSVMMemcpy)                 \
    X(clEnqueueSVMMemFill)
KCTX_LOADER_TABLE(FW_CL);
static struct {
#define FW_CL_MEMBER_(name) __typeof__(&name) name;
    FW_CL(FW_CL_MEMBER_)
#undef FW_CL_MEMBER_
} g_cl;
/* One counted call: KCTX_CL(Flush, queue) is clFlush(queue). */
#define KCTX_CL(name, ...) \
    (kctx__loader_count(&kctx_loader_table, KCTX_LE_cl##name), g_cl.cl##name(__VA_ARGS__))

static fw_cl_dev g_dev[FW_CL_MAX_DEVICES];
static int g_ndev;
static char g_init_error[512];
static kfl_control_fn g_layer; /* the failing layer's control, when it is the library */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local char tl_err[512];
static _Thread_local int tl_dev = -1;

static fw_status fw_fail(fw_status s, const char *fmt, const char *a, cl_int err) {
    snprintf(tl_err, sizeof tl_err, fmt, a, kctx__opencl_error_name(err));
    return s;
}
#define CLFAIL(call, err) fw_fail(FW_ERROR, "%s: %s", call, err)

static void init_devices(void) {
    char why[300];
    if (kctx__loader_open(&kctx_loader_table, "KCTX_OPENCL_LIBRARY", "libOpenCL.so.1", why,
                          sizeof why)) {
        snprintf(g_init_error, sizeof g_init_error,
                 "the OpenCL library is not installed or not loadable (%s)", why);
        return;
    }
    int bad = kctx__loader_resolve(&kctx_loader_table, NULL, NULL, NULL);
    if (bad >= 0) {
        snprintf(g_init_error, sizeof g_init_error, "%s has no %s", kctx_loader_table.path,
                 kctx_loader_table_names[bad]);
        return;
    }
#define FW_CL_SET_(name) *(void **)&g_cl.name = kctx_loader_table_fns[KCTX_LE_##name];
    FW_CL(FW_CL_SET_)
#undef FW_CL_SET_
    *(void **)&g_layer = kctx__loader_sym(&kctx_loader_table, "kctx_fault_layer_control");
    cl_platform_id plats[8];
    cl_uint np = 0;
    if (KCTX_CL(GetPlatformIDs, 8, plats, &np) != CL_SUCCESS || np == 0) {
        snprintf(g_init_error, sizeof g_init_error, "no OpenCL platform (ICD) is installed");
        return;
    }
    for (cl_uint p = 0; p < np && p < 8; p++) {
        cl_device_id devs[FW_CL_MAX_DEVICES];
        cl_uint nd = 0;
        if (KCTX_CL(GetDeviceIDs, plats[p], CL_DEVICE_TYPE_ALL, FW_CL_MAX_DEVICES, devs, &nd))
            continue;
        for (cl_uint d = 0; d < nd && d < FW_CL_MAX_DEVICES && g_ndev < FW_CL_MAX_DEVICES; d++) {
            cl_device_svm_capabilities svm = 0;
            KCTX_CL(GetDeviceInfo, devs[d], CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
            if (!(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) || !(svm & CL_DEVICE_SVM_ATOMICS))
                continue;
            cl_int err = CL_SUCCESS;
            cl_context ctx = KCTX_CL(CreateContext, NULL, 1, &devs[d], NULL, NULL, &err);
            if (!ctx) continue;
            fw_cl_dev *x = &g_dev[g_ndev];
            x->ctx = ctx;
            x->dev = devs[d];
            cl_uint cus = 1;
            KCTX_CL(GetDeviceInfo, devs[d], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
            KCTX_CL(GetDeviceInfo, devs[d], CL_DEVICE_NAME, sizeof x->name, x->name, NULL);
            x->name[sizeof x->name - 1] = 0;
            x->cores = cus;
            int num = -1;
            if (kctx_opencl_bind(ctx, devs[d], &num) != KCTX_OK || num != g_ndev) {
                snprintf(g_init_error, sizeof g_init_error,
                         "lending device %d to kctx gave pair number %d (%s): the driver must be "
                         "the process's first to lend OpenCL devices",
                         g_ndev, num, kctx_thread_last_error());
                KCTX_CL(ReleaseContext, ctx);
                kctx_opencl_bind(NULL, NULL, NULL);
                return;
            }
            g_ndev++;
        }
    }
    kctx_opencl_bind(NULL, NULL, NULL); /* the init thread lends nothing until it asks */
    if (g_ndev == 0)
        snprintf(g_init_error, sizeof g_init_error,
                 "no OpenCL device with fine-grained buffer SVM and atomics");
}

static int ready(void) {
    pthread_once(&g_once, init_devices);
    if (g_ndev > 0) return 1;
    snprintf(tl_err, sizeof tl_err, "%s", g_init_error);
    return 0;
}

static fw_cl_dev *cur(void) {
    if (!ready()) return NULL;
    if (tl_dev < 0) {
        snprintf(tl_err, sizeof tl_err, "no device is current for this thread (set_device)");
        return NULL;
    }
    return &g_dev[tl_dev];
}

static const char *o_last_error(void) { return tl_err; }

/* A kctx call of the driver failed: its message. */
static fw_status kctx_fail_msg(void) {
    snprintf(tl_err, sizeof tl_err, "%s", kctx_thread_last_error());
    return FW_ERROR;
}

static fw_status o_current_device(int *device) {
    if (!ready()) return FW_NA;
    if (tl_dev < 0) {
        /* the framework's default: device 0, lent to the thread */
        if (kctx_opencl_bind(g_dev[0].ctx, g_dev[0].dev, NULL) != KCTX_OK) return kctx_fail_msg();
        tl_dev = 0;
    }
    *device = tl_dev;
    return FW_OK;
}

static fw_status o_set_device(int device) {
    if (!ready()) return FW_NA;
    if (device < 0 || device >= g_ndev) {
        snprintf(tl_err, sizeof tl_err, "device %d does not exist (%d OpenCL devices)", device,
                 g_ndev);
        return FW_INVALID_HANDLE;
    }
    if (kctx_opencl_bind(g_dev[device].ctx, g_dev[device].dev, NULL) != KCTX_OK)
        return kctx_fail_msg();
    tl_dev = device;
    return FW_OK;
}

/* ---- streams ---- */

static int dev_of_queue(cl_command_queue q) {
    cl_context ctx = NULL;
    if (KCTX_CL(GetCommandQueueInfo, q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL)) return -1;
    for (int i = 0; i < g_ndev; i++)
        if (g_dev[i].ctx == ctx) return i;
    return -1;
}

static void count_enqueue(cl_command_queue q) {
    int d = dev_of_queue(q);
    if (d >= 0) atomic_fetch_add(&g_dev[d].enqueues, 1);
}

static fw_status o_stream_create(fw_stream *s) {
    fw_cl_dev *d = cur();
    if (!d) return FW_ERROR;
    cl_int err = CL_SUCCESS;
    cl_command_queue q = KCTX_CL(CreateCommandQueueWithProperties, d->ctx, d->dev, NULL, &err);
    if (!q) return CLFAIL("clCreateCommandQueueWithProperties", err);
    atomic_fetch_add(&d->queues, 1);
    *s = (fw_stream)(uintptr_t)q;
    return FW_OK;
}

static fw_status o_stream_destroy(fw_stream s) {
    cl_command_queue q = (cl_command_queue)(uintptr_t)s;
    int d = dev_of_queue(q);
    cl_int err = KCTX_CL(ReleaseCommandQueue, q);
    if (err == CL_INVALID_COMMAND_QUEUE)
        return fw_fail(FW_INVALID_HANDLE, "%s: %s", "clReleaseCommandQueue", err);
    if (err) return CLFAIL("clReleaseCommandQueue", err);
    if (d >= 0) atomic_fetch_sub(&g_dev[d].queues, 1);
    return FW_OK;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for a marker after everything enqueued on s so far, at most ms. */
static fw_status marker_wait(fw_stream s, uint32_t ms) {
    cl_command_queue q = (cl_command_queue)(uintptr_t)s;
    cl_event ev;
    cl_int err = KCTX_CL(EnqueueMarkerWithWaitList, q, 0, NULL, &ev);
    if (err == CL_INVALID_COMMAND_QUEUE)
        return fw_fail(FW_INVALID_HANDLE, "%s: %s", "clEnqueueMarkerWithWaitList", err);
    if (err) return CLFAIL("clEnqueueMarkerWithWaitList", err);
    KCTX_CL(Flush, q);
    const uint64_t deadline = now_ms() + ms;
    fw_status st = FW_OK;
    for (;;) {
        cl_int state = CL_QUEUED;
        err = KCTX_CL(GetEventInfo, ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state,
                      NULL);
        if (err) {
            st = CLFAIL("clGetEventInfo", err);
            break;
        }
        if (state == CL_COMPLETE) break;
        if (state < 0) {
            st = fw_fail(FW_DEVICE_ERROR, "%s: %s", "a command on the queue failed", state);
            break;
        }
        if (now_ms() >= deadline) {
            snprintf(tl_err, sizeof tl_err, "the queue's work did not finish within %u ms", ms);
            st = FW_TIMEOUT;
            break;
        }
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    KCTX_CL(ReleaseEvent, ev);
    return st;
}

static fw_status o_stream_sync(fw_stream s, uint32_t ms) { return marker_wait(s, ms); }

/* Idle means a marker after the queue's work completes; it is given 50 ms
 * (a marker after finished work completes in microseconds; the margin is
 * for loaded machines). */
static fw_status o_stream_query(fw_stream s) {
    fw_status st = marker_wait(s, 50);
    return st == FW_TIMEOUT ? FW_NOT_READY : st;
}

/* ---- memory: fine-grained SVM of the current device's context ---- */

#define FW_CL_MAX_ALLOCS 4096
typedef struct fw_alloc {
    void *p;
    size_t bytes;
    int dev;
} fw_alloc;
static fw_alloc g_allocs[FW_CL_MAX_ALLOCS];
static pthread_mutex_t g_alloc_mu = PTHREAD_MUTEX_INITIALIZER;

static fw_status o_mem_alloc(size_t bytes, fw_devptr *p) {
    fw_cl_dev *d = cur();
    if (!d) return FW_ERROR;
    void *m = KCTX_CL(SVMAlloc, d->ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, bytes, 0);
    if (!m) {
        snprintf(tl_err, sizeof tl_err, "clSVMAlloc of %zu bytes failed", bytes);
        return FW_ERROR;
    }
    pthread_mutex_lock(&g_alloc_mu);
    int slot = -1;
    for (int i = 0; i < FW_CL_MAX_ALLOCS && slot < 0; i++)
        if (!g_allocs[i].p) slot = i;
    if (slot >= 0) g_allocs[slot] = (fw_alloc){m, bytes, (int)(d - g_dev)};
    pthread_mutex_unlock(&g_alloc_mu);
    if (slot < 0) {
        KCTX_CL(SVMFree, d->ctx, m);
        snprintf(tl_err, sizeof tl_err, "the driver tracks at most %d allocations",
                 FW_CL_MAX_ALLOCS);
        return FW_ERROR;
    }
    atomic_fetch_add(&d->allocations, 1);
    atomic_fetch_add(&d->total_allocations, 1);
    atomic_fetch_add(&d->bytes, bytes);
    *p = (fw_devptr)(uintptr_t)m;
    return FW_OK;
}

static fw_status o_mem_free(fw_devptr p) {
    pthread_mutex_lock(&g_alloc_mu);
    fw_alloc a = {0};
    for (int i = 0; i < FW_CL_MAX_ALLOCS; i++)
        if (g_allocs[i].p && g_allocs[i].p == (void *)(uintptr_t)p) {
            a = g_allocs[i];
            g_allocs[i].p = NULL;
            break;
        }
    pthread_mutex_unlock(&g_alloc_mu);
    if (!a.p) {
        snprintf(tl_err, sizeof tl_err, "0x%llx is not an allocation of this driver",
                 (unsigned long long)p);
        return FW_INVALID_HANDLE;
    }
    KCTX_CL(SVMFree, g_dev[a.dev].ctx, a.p);
    atomic_fetch_sub(&g_dev[a.dev].allocations, 1);
    atomic_fetch_sub(&g_dev[a.dev].bytes, a.bytes);
    return FW_OK;
}

/* Fine-grained SVM is the host's memory: synchronous copies are memcpy. */
static fw_status o_upload(fw_devptr dst, const void *src, size_t bytes) {
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return FW_OK;
}
static fw_status o_download(void *dst, fw_devptr src, size_t bytes) {
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return FW_OK;
}

static fw_status o_fill_async(fw_devptr dst, uint8_t value, size_t bytes, fw_stream s) {
    cl_command_queue q = (cl_command_queue)(uintptr_t)s;
    cl_int err =
        KCTX_CL(EnqueueSVMMemFill, q, (void *)(uintptr_t)dst, &value, 1, bytes, 0, NULL, NULL);
    if (err) return CLFAIL("clEnqueueSVMMemFill", err);
    count_enqueue(q);
    return FW_OK;
}

static fw_status o_copy_async(fw_devptr dst, fw_devptr src, size_t bytes, fw_stream s) {
    cl_command_queue q = (cl_command_queue)(uintptr_t)s;
    cl_int err = KCTX_CL(EnqueueSVMMemcpy, q, CL_FALSE, (void *)(uintptr_t)dst,
                         (const void *)(uintptr_t)src, bytes, 0, NULL, NULL);
    if (err) return CLFAIL("clEnqueueSVMMemcpy", err);
    count_enqueue(q);
    return FW_OK;
}

/* ---- events: the latest record's marker ---- */

typedef struct fw_cl_event {
    pthread_mutex_t mu;
    cl_event ev;
    int dev;
} fw_cl_event;

static fw_status o_event_create(fw_event *e) {
    fw_cl_dev *d = cur();
    if (!d) return FW_ERROR;
    fw_cl_event *x = calloc(1, sizeof *x);
    if (!x) {
        snprintf(tl_err, sizeof tl_err, "out of host memory");
        return FW_ERROR;
    }
    pthread_mutex_init(&x->mu, NULL);
    x->dev = (int)(d - g_dev);
    atomic_fetch_add(&d->events, 1);
    *e = (fw_event)(uintptr_t)x;
    return FW_OK;
}

static fw_status o_event_destroy(fw_event e) {
    fw_cl_event *x = (fw_cl_event *)(uintptr_t)e;
    if (x->ev) KCTX_CL(ReleaseEvent, x->ev);
    atomic_fetch_sub(&g_dev[x->dev].events, 1);
    pthread_mutex_destroy(&x->mu);
    free(x);
    return FW_OK;
}

static fw_status o_event_record(fw_event e, fw_stream s) {
    fw_cl_event *x = (fw_cl_event *)(uintptr_t)e;
    cl_command_queue q = (cl_command_queue)(uintptr_t)s;
    cl_event ev;
    cl_int err = KCTX_CL(EnqueueMarkerWithWaitList, q, 0, NULL, &ev);
    if (err) return CLFAIL("clEnqueueMarkerWithWaitList", err);
    count_enqueue(q);
    pthread_mutex_lock(&x->mu);
    cl_event old = x->ev;
    x->ev = ev;
    pthread_mutex_unlock(&x->mu);
    if (old) KCTX_CL(ReleaseEvent, old);
    return FW_OK;
}

static fw_status o_stream_wait_event(fw_stream s, fw_event e) {
    fw_cl_event *x = (fw_cl_event *)(uintptr_t)e;
    pthread_mutex_lock(&x->mu);
    cl_event ev = x->ev;
    if (ev) KCTX_CL(RetainEvent, ev);
    pthread_mutex_unlock(&x->mu);
    if (!ev) return FW_OK;
    cl_command_queue q = (cl_command_queue)(uintptr_t)s;
    cl_int err = KCTX_CL(EnqueueBarrierWithWaitList, q, 1, &ev, NULL);
    KCTX_CL(ReleaseEvent, ev);
    if (err) return CLFAIL("clEnqueueBarrierWithWaitList", err);
    count_enqueue(q);
    return FW_OK;
}

/* ---- the first-task hold (kctx's test support) ---- */

static cl_event g_gate; /* the armed or held hold's user event */
static pthread_mutex_t g_hold_mu = PTHREAD_MUTEX_INITIALIZER;

static fw_status o_hold_arm(fw_hold_point point, int device, kctx_context ctx, int *hold) {
    (void)ctx;
    if (point != FW_HOLD_FIRST_TASK) {
        snprintf(tl_err, sizeof tl_err,
                 "OpenCL kernels cannot be paused from outside: only the first task kernel of a "
                 "launch is held (through kctx's test support)");
        return FW_NA;
    }
    if (!ready()) return FW_ERROR;
    if (device < 0 || device >= g_ndev) return FW_INVALID_HANDLE;
    pthread_mutex_lock(&g_hold_mu);
    fw_status st = FW_OK;
    if (g_gate) {
        snprintf(tl_err, sizeof tl_err, "one hold at a time");
        st = FW_ERROR;
    } else {
        cl_int err = CL_SUCCESS;
        g_gate = KCTX_CL(CreateUserEvent, g_dev[device].ctx, &err);
        if (!g_gate)
            st = CLFAIL("clCreateUserEvent", err);
        else if (kctx_opencl_test_hold(device, g_gate) != KCTX_OK) {
            snprintf(tl_err, sizeof tl_err, "kctx_opencl_test_hold: %s", kctx_thread_last_error());
            KCTX_CL(SetUserEventStatus, g_gate, CL_COMPLETE);
            KCTX_CL(ReleaseEvent, g_gate);
            g_gate = NULL;
            st = FW_ERROR;
        }
    }
    pthread_mutex_unlock(&g_hold_mu);
    if (st == FW_OK) *hold = 1;
    return st;
}

static fw_status o_hold_wait_reached(int hold, uint32_t ms) {
    if (hold != 1) return FW_INVALID_HANDLE;
    const uint64_t deadline = now_ms() + ms;
    for (;;) {
        int reached = 0;
        if (kctx_opencl_test_hold_reached(&reached) != KCTX_OK) {
            snprintf(tl_err, sizeof tl_err, "%s", kctx_thread_last_error());
            return FW_ERROR;
        }
        if (reached) return FW_OK;
        if (now_ms() >= deadline) {
            snprintf(tl_err, sizeof tl_err, "the held kernel was not reached within %u ms", ms);
            return FW_TIMEOUT;
        }
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

static fw_status o_hold_release(int hold) {
    if (hold != 1) return FW_INVALID_HANDLE;
    pthread_mutex_lock(&g_hold_mu);
    cl_event gate = g_gate;
    g_gate = NULL;
    pthread_mutex_unlock(&g_hold_mu);
    kctx_opencl_test_hold_clear();
    if (!gate) return FW_INVALID_HANDLE;
    KCTX_CL(SetUserEventStatus, gate, CL_COMPLETE);
    KCTX_CL(ReleaseEvent, gate);
    return FW_OK;
}

static fw_status o_hold_release_all(void) {
    pthread_mutex_lock(&g_hold_mu);
    int held = g_gate != NULL;
    pthread_mutex_unlock(&g_hold_mu);
    if (held) return o_hold_release(1);
    kctx_opencl_test_hold_clear();
    return FW_OK;
}

/* ---- counters and device information ---- */

static fw_status o_live_counts(int device, fw_counts *c) {
    if (!ready()) return FW_ERROR;
    if (device < 0 || device >= g_ndev) return FW_INVALID_HANDLE;
    kctx_opencl_live k = KCTX_OPENCL_LIVE_INIT;
    if (kctx_opencl_live_objects(device, &k) != KCTX_OK) {
        snprintf(tl_err, sizeof tl_err, "%s", kctx_thread_last_error());
        return FW_ERROR;
    }
    const fw_cl_dev *d = &g_dev[device];
    memset(c, 0, sizeof *c);
    c->streams = k.queues + atomic_load(&d->queues);
    c->events = k.events + atomic_load(&d->events);
    c->modules = k.programs;
    c->allocations = k.allocations + atomic_load(&d->allocations);
    c->bytes = k.bytes + atomic_load(&d->bytes);
    return FW_OK;
}

static fw_status o_device_allocs(int device, uint64_t *n) {
    kctx_opencl_live k = KCTX_OPENCL_LIVE_INIT;
    if (!ready() || device < 0 || device >= g_ndev || kctx_opencl_live_objects(device, &k))
        return FW_ERROR;
    *n = k.total_allocations + atomic_load(&g_dev[device].total_allocations);
    return FW_OK;
}

static fw_status o_device_enqueues(int device, uint64_t *n) {
    kctx_opencl_live k = KCTX_OPENCL_LIVE_INIT;
    if (!ready() || device < 0 || device >= g_ndev || kctx_opencl_live_objects(device, &k))
        return FW_ERROR;
    *n = k.enqueues + atomic_load(&g_dev[device].enqueues);
    return FW_OK;
}

static fw_status o_device_info(int device, char *name, size_t name_size, unsigned *cores) {
    if (!ready()) return FW_ERROR;
    if (device < 0 || device >= g_ndev) return FW_INVALID_HANDLE;
    snprintf(name, name_size, "%s", g_dev[device].name);
    *cores = g_dev[device].cores;
    return FW_OK;
}

static int o_device_count(void) { return ready() ? g_ndev : 0; }

/* The library both sides loaded (KCTX_OPENCL_LIBRARY) is the failing layer
 * (platform/opencl/tests/opencl_fault_layer.c): its control. The driver's own calls go
 * through it too, unwatched: the layer knows the framework's objects as
 * not kctx's. */
static const kfl_control *o_fault_layer(void) { return ready() && g_layer ? g_layer() : NULL; }

static const fw_driver k_opencl_driver = {
    .name = "opencl",
    .platform = "opencl",
    .last_error = o_last_error,
    .current_device = o_current_device,
    .set_device = o_set_device,
    .stream_create = o_stream_create,
    .stream_destroy = o_stream_destroy,
    .stream_sync = o_stream_sync,
    .stream_query = o_stream_query,
    .mem_alloc = o_mem_alloc,
    .mem_free = o_mem_free,
    .upload = o_upload,
    .download = o_download,
    .fill_async = o_fill_async,
    .copy_async = o_copy_async,
    .event_create = o_event_create,
    .event_destroy = o_event_destroy,
    .event_record = o_event_record,
    .stream_wait_event = o_stream_wait_event,
    /* CAPTURE: none on OpenCL */
    .hold_arm = o_hold_arm,
    .hold_wait_reached = o_hold_wait_reached,
    .hold_release = o_hold_release,
    .hold_release_all = o_hold_release_all,
    .make_fatal = NULL,  /* OpenCL cannot make a device lost on purpose */
    .owner_reset = NULL, /* nor reset one */
    .live_counts = o_live_counts,
    .device_allocs = o_device_allocs,
    .device_enqueues = o_device_enqueues,
    .lifecycle = NULL,                   /* OpenCL has no device lifecycle calls */
    .task_failure_leaves_streams_ok = 1, /* an OpenCL kernel cannot fail its command */
    .device_info = o_device_info,
    .device_count = o_device_count,
    .fault_layer = o_fault_layer,
};

const fw_driver *fw_opencl_driver(void) { return &k_opencl_driver; }
