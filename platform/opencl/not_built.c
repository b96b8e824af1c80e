/*
 * not_built.c — kctx/opencl.h in a library built without the opencl
 * platform (the declaration's NOT_BUILT_SOURCES, platform/opencl/
 * platform.cmake): every entry is UNSUPPORTED with the registry's reason.
 */
#include <kctx/opencl.h>

#include "services.h" /* kctx__svc_not_built */

kctx_status kctx_opencl_bind(struct _cl_context *context, struct _cl_device_id *device,
                             int *kctx_device) {
    (void)context, (void)device, (void)kctx_device;
    return kctx__svc_not_built(KCTX_UNSUPPORTED, "kctx_opencl_bind", "opencl");
}
kctx_status kctx_opencl_bind_queue(struct _cl_command_queue *queue, int *kctx_device) {
    (void)queue, (void)kctx_device;
    return kctx__svc_not_built(KCTX_UNSUPPORTED, "kctx_opencl_bind_queue", "opencl");
}
kctx_status kctx_opencl_bound(struct _cl_context **context, struct _cl_device_id **device,
                              int *kctx_device) {
    (void)context, (void)device, (void)kctx_device;
    return kctx__svc_not_built(KCTX_UNSUPPORTED, "kctx_opencl_bound", "opencl");
}
kctx_status kctx_opencl_live_objects(int kctx_device, kctx_opencl_live *out) {
    (void)kctx_device, (void)out;
    return kctx__svc_not_built(KCTX_UNSUPPORTED, "kctx_opencl_live_objects", "opencl");
}
kctx_status kctx_opencl_driver_calls(const char *entry, uint64_t *count) {
    (void)entry, (void)count;
    return kctx__svc_not_built(KCTX_UNSUPPORTED, "kctx_opencl_driver_calls", "opencl");
}
kctx_status kctx_opencl_test_hold(int kctx_device, struct _cl_event *gate) {
    (void)kctx_device, (void)gate;
    return kctx__svc_not_built(KCTX_UNSUPPORTED, "kctx_opencl_test_hold", "opencl");
}
kctx_status kctx_opencl_test_hold_reached(int *reached) {
    (void)reached;
    return kctx__svc_not_built(KCTX_UNSUPPORTED, "kctx_opencl_test_hold_reached", "opencl");
}
kctx_status kctx_opencl_test_hold_clear(void) {
    return kctx__svc_not_built(KCTX_UNSUPPORTED, "kctx_opencl_test_hold_clear", "opencl");
}
