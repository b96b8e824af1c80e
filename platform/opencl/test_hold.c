/*
 * test_hold.c — the opencl platform's test support (kctx/opencl.h,
 * kctx_opencl_test_hold*): a hold on the next task kernel a launch
 * enqueues on a pair, which waits for a caller's user event. The launch
 * (adapter.c) asks kctx__ocl_take_hold only while a hold is armed
 * (kctx__ocl_hold_armed, one relaxed load on the launch path).
 */
#include "ocl_internal.h"
#include "services.h"

_Atomic int kctx__ocl_hold_armed; /* 1: the next task kernel on g_hold_dev takes the gate */
static int g_hold_dev;
static cl_event g_hold_gate;   /* retained while armed */
static cl_event g_hold_before; /* a marker just before the held kernel (retained) */
static pthread_mutex_t g_hold_mu = PTHREAD_MUTEX_INITIALIZER;

cl_event kctx__ocl_take_hold(kctx_pstream s) {
    if (!atomic_load_explicit(&kctx__ocl_hold_armed, memory_order_acquire)) return NULL;
    ocl_stream *o = kctx__ocl_own_stream(s);
    pthread_mutex_lock(&g_hold_mu);
    cl_event gate = NULL;
    if (atomic_load(&kctx__ocl_hold_armed) && o && o->dev == g_hold_dev) {
        if (KCTX_CL(EnqueueMarkerWithWaitList, o->q, 0, NULL, &g_hold_before) == CL_SUCCESS) {
            gate = g_hold_gate; /* the kernel's wait list; released by clear */
            atomic_store(&kctx__ocl_hold_armed, 0);
            KCTX_CL(Flush, o->q);
        }
    }
    pthread_mutex_unlock(&g_hold_mu);
    return gate;
}

kctx_status kctx_opencl_test_hold(int kctx_device, struct _cl_event *gate) {
    if (!kctx__opencl_loaded())
        return kctx__svc_fail(KCTX_UNSUPPORTED, "kctx_opencl_test_hold: %s",
                              kctx__opencl_api_error());
    if (!gate) return kctx__svc_fail(KCTX_INVALID_ARGUMENT, "kctx_opencl_test_hold: gate is NULL");
    if (kctx_device < 0 || kctx_device >= atomic_load(&kctx__ocl_ndevs))
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT,
                              "kctx_opencl_test_hold: %d is not a lent pair's number", kctx_device);
    pthread_mutex_lock(&g_hold_mu);
    if (atomic_load(&kctx__ocl_hold_armed) || g_hold_gate) {
        pthread_mutex_unlock(&g_hold_mu);
        return kctx__svc_fail(KCTX_BUSY, "kctx_opencl_test_hold: a hold is armed or held already");
    }
    KCTX_CL(RetainEvent, gate);
    g_hold_gate = gate;
    g_hold_dev = kctx_device;
    atomic_store_explicit(&kctx__ocl_hold_armed, 1, memory_order_release);
    pthread_mutex_unlock(&g_hold_mu);
    return KCTX_OK;
}

kctx_status kctx_opencl_test_hold_reached(int *reached) {
    if (!reached)
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT,
                              "kctx_opencl_test_hold_reached: reached is NULL");
    pthread_mutex_lock(&g_hold_mu);
    cl_event before = g_hold_before;
    if (before) KCTX_CL(RetainEvent, before);
    pthread_mutex_unlock(&g_hold_mu);
    *reached = 0;
    if (!before) return KCTX_OK;
    cl_int state = CL_QUEUED;
    cl_int err = KCTX_CL(GetEventInfo, before, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state,
                         &state, NULL);
    KCTX_CL(ReleaseEvent, before);
    if (err)
        return kctx__svc_fail(KCTX_PLATFORM_ERROR,
                              "kctx_opencl_test_hold_reached: clGetEventInfo: %s",
                              kctx__opencl_error_name(err));
    *reached = state == CL_COMPLETE;
    return KCTX_OK;
}

kctx_status kctx_opencl_test_hold_clear(void) {
    if (!kctx__opencl_loaded()) return KCTX_OK;
    pthread_mutex_lock(&g_hold_mu);
    atomic_store(&kctx__ocl_hold_armed, 0);
    cl_event gate = g_hold_gate, before = g_hold_before;
    g_hold_gate = g_hold_before = NULL;
    pthread_mutex_unlock(&g_hold_mu);
    if (gate) KCTX_CL(ReleaseEvent, gate);
    if (before) KCTX_CL(ReleaseEvent, before);
    return KCTX_OK;
}
