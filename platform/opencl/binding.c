/*
 * binding.c — the opencl platform's public API (platform/opencl/include/kctx/opencl.h):
 * lending (context, device) pairs to kctx (kctx_opencl_bind,
 * kctx_opencl_bind_queue, kctx_opencl_bound), what kctx holds on a pair
 * (kctx_opencl_live_objects) and the adapter's OpenCL call counts
 * (kctx_opencl_driver_calls). The ops table is adapter.c's; what both
 * share, ocl_internal.h.
 */
#include "ocl_internal.h"
#include "services.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

int kctx__ocl_lookup_pair(cl_context ctx, cl_device_id dev) {
    int n = atomic_load(&kctx__ocl_ndevs);
    for (int i = 0; i < n; i++)
        if (kctx__ocl_devs[i].ctx == ctx && kctx__ocl_devs[i].dev == dev) return i;
    return -1;
}

static kctx_status device_facts(cl_device_id dev, kctx_device_info *info) {
    cl_device_svm_capabilities svm = 0;
    cl_int err = KCTX_CL(GetDeviceInfo, dev, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
    if (err)
        return kctx__svc_fail(KCTX_UNSUPPORTED,
                              "kctx_opencl_bind: the device reports no SVM capabilities (%s): kctx "
                              "needs OpenCL 2.0 fine-grained buffer SVM with atomics",
                              kctx__opencl_error_name(err));
    if (!(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) || !(svm & CL_DEVICE_SVM_ATOMICS))
        return kctx__svc_fail(
            KCTX_UNSUPPORTED,
            "kctx_opencl_bind: the device lacks fine-grained buffer SVM with atomics "
            "(capabilities 0x%llx): kctx's runtime image is shared with the host",
            (unsigned long long)svm);
    cl_uint cus = 0, align_bits = 0;
    size_t params = 0;
    cl_ulong mem = 0;
    err = KCTX_CL(GetDeviceInfo, dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    if (!err)
        err =
            KCTX_CL(GetDeviceInfo, dev, CL_DEVICE_MAX_PARAMETER_SIZE, sizeof params, &params, NULL);
    if (!err) err = KCTX_CL(GetDeviceInfo, dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    if (!err)
        err = KCTX_CL(GetDeviceInfo, dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits,
                      &align_bits, NULL);
    if (!err)
        err = KCTX_CL(GetDeviceInfo, dev, CL_DEVICE_NAME, sizeof info->name, info->name, NULL);
    if (err)
        return kctx__svc_fail(KCTX_PLATFORM_ERROR,
                              "kctx_opencl_bind: clGetDeviceInfo failed with %s",
                              kctx__opencl_error_name(err));
    info->name[sizeof info->name - 1] = 0;
    info->size = sizeof *info;
    info->aicore_count = cus ? cus : 1;
    info->max_params_size = params < OCL_MAX_PARAMS_SIZE ? (uint32_t)params : OCL_MAX_PARAMS_SIZE;
    info->memory_capacity = mem;
    info->word_size = 4;
    info->alloc_alignment = align_bits >= 8 ? align_bits / 8 : 8;
    info->has_epoch = 0;
    info->can_check_ranges = 0;
    return KCTX_OK;
}

kctx_status kctx_opencl_bind(struct _cl_context *context, struct _cl_device_id *device,
                             int *kctx_device) {
    if (!context) {
        kctx__ocl_bound = -1;
        return KCTX_OK;
    }
    if (!kctx__opencl_loaded())
        return kctx__svc_fail(KCTX_UNSUPPORTED, "kctx_opencl_bind: %s", kctx__opencl_api_error());
    if (!device) return kctx__svc_fail(KCTX_INVALID_ARGUMENT, "kctx_opencl_bind: device is NULL");
    int i = kctx__ocl_lookup_pair(context, device);
    if (i < 0) {
        /* the device must be one of the context's */
        cl_device_id devs[64];
        size_t n = 0;
        cl_int err = KCTX_CL(GetContextInfo, context, CL_CONTEXT_DEVICES, sizeof devs, devs, &n);
        if (err == CL_INVALID_CONTEXT)
            return kctx__svc_fail(KCTX_INVALID_ARGUMENT, "kctx_opencl_bind: not an OpenCL context");
        if (err)
            return kctx__svc_fail(KCTX_PLATFORM_ERROR,
                                  "kctx_opencl_bind: clGetContextInfo(DEVICES) failed with %s",
                                  kctx__opencl_error_name(err));
        bool found = false;
        for (size_t j = 0; j < n / sizeof devs[0]; j++) found |= devs[j] == device;
        if (!found)
            return kctx__svc_fail(KCTX_INVALID_ARGUMENT,
                                  "kctx_opencl_bind: the device is not a device of the context");
        kctx_device_info info = {0};
        kctx_status st = device_facts(device, &info);
        if (st) return st;
        pthread_mutex_lock(&kctx__ocl_mu);
        i = kctx__ocl_lookup_pair(context, device);
        if (i < 0) {
            i = atomic_load(&kctx__ocl_ndevs);
            if (i == KCTX_OPENCL_MAX_DEVICES) {
                pthread_mutex_unlock(&kctx__ocl_mu);
                return kctx__svc_fail(
                    KCTX_CAPACITY, "kctx_opencl_bind: %d (context, device) pairs are lent already",
                    KCTX_OPENCL_MAX_DEVICES);
            }
            kctx__ocl_devs[i] = (ocl_dev){context, device, info};
            atomic_store(&kctx__ocl_ndevs, i + 1);
        }
        pthread_mutex_unlock(&kctx__ocl_mu);
    }
    kctx__ocl_bound = i;
    if (kctx_device) *kctx_device = i;
    return KCTX_OK;
}

kctx_status kctx_opencl_bind_queue(struct _cl_command_queue *queue, int *kctx_device) {
    if (!kctx__opencl_loaded())
        return kctx__svc_fail(KCTX_UNSUPPORTED, "kctx_opencl_bind_queue: %s",
                              kctx__opencl_api_error());
    if (!queue)
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT, "kctx_opencl_bind_queue: queue is NULL");
    cl_context ctx;
    cl_device_id dev;
    cl_int err = KCTX_CL(GetCommandQueueInfo, queue, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
    if (!err) err = KCTX_CL(GetCommandQueueInfo, queue, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    if (err == CL_INVALID_COMMAND_QUEUE)
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT, "kctx_opencl_bind_queue: not a command queue");
    if (err)
        return kctx__svc_fail(KCTX_PLATFORM_ERROR,
                              "kctx_opencl_bind_queue: clGetCommandQueueInfo failed with %s",
                              kctx__opencl_error_name(err));
    return kctx_opencl_bind(ctx, dev, kctx_device);
}

kctx_status kctx_opencl_bound(struct _cl_context **context, struct _cl_device_id **device,
                              int *kctx_device) {
    if (kctx__ocl_bound < 0)
        return kctx__svc_fail(KCTX_INVALID_STATE,
                              "kctx_opencl_bound: the calling thread lent no OpenCL device");
    if (context) *context = kctx__ocl_devs[kctx__ocl_bound].ctx;
    if (device) *device = kctx__ocl_devs[kctx__ocl_bound].dev;
    if (kctx_device) *kctx_device = kctx__ocl_bound;
    return KCTX_OK;
}

kctx_status kctx_opencl_live_objects(int kctx_device, kctx_opencl_live *out) {
    if (!out || out->size != sizeof *out)
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT,
                              "kctx_opencl_live_objects: out is NULL or its size is not "
                              "sizeof(kctx_opencl_live) (set it with KCTX_OPENCL_LIVE_INIT)");
    if (kctx_device < 0 || kctx_device >= atomic_load(&kctx__ocl_ndevs))
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT,
                              "kctx_opencl_live_objects: %d is not a lent pair's number",
                              kctx_device);
    const ocl_counts *c = &kctx__ocl_counts[kctx_device];
    *out = (kctx_opencl_live){sizeof *out,
                              atomic_load(&c->queues),
                              atomic_load(&c->events),
                              atomic_load(&c->programs),
                              atomic_load(&c->kernels),
                              atomic_load(&c->allocations),
                              atomic_load(&c->bytes),
                              atomic_load(&c->total_allocations),
                              atomic_load(&c->enqueues)};
    return KCTX_OK;
}

kctx_status kctx_opencl_driver_calls(const char *entry, uint64_t *count) {
    if (!entry || !count)
        return kctx__svc_fail(KCTX_INVALID_ARGUMENT, "kctx_opencl_driver_calls: %s is NULL",
                              entry ? "count" : "entry");
    if (!kctx__opencl_loaded())
        return kctx__svc_fail(KCTX_UNSUPPORTED, "kctx_opencl_driver_calls: %s",
                              kctx__opencl_api_error());
    long long n = kctx__opencl_calls(entry);
    if (n < 0)
        return kctx__svc_fail(
            KCTX_NOT_FOUND,
            "kctx_opencl_driver_calls: '%s' is not an entry of the opencl adapter's "
            "table",
            entry);
    *count = (uint64_t)n;
    return KCTX_OK;
}
