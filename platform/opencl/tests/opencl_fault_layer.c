/*
 * opencl_fault_layer.c — the failing layer in front of the OpenCL ICD
 * loader (tests only, never installed; tests/common/fault_layer.h says what
 * a failing layer is): build/tests/kctx/libkctx_opencl_fault_layer.so.
 * KCTX_OPENCL_LIBRARY names it (kctx's adapter, cl_api.c, and the suite's
 * framework driver, fw_opencl.c, both load it as "the OpenCL library"),
 * KCTX_FAULT_LAYER_UNDER names the library behind it (default
 * libOpenCL.so.1, the ICD loader, with PoCL behind that).
 *
 * It exports every entry kctx's adapter resolves (platform/opencl/cl_api.h,
 * KCTX_CL_ENTRIES; the framework driver's are among them), each a typed
 * wrapper: kfl_enter counts the call and, when armed, fails it (a cl_int
 * entry returns the code; a creator sets *errcode_ret and returns NULL;
 * clSVMAlloc returns NULL) without calling the runtime; otherwise the call
 * passes through and the wrapper reports the handles it makes (queues,
 * events, programs, kernels, SVM allocations, contexts), retains, releases
 * and names. OpenCL's objects are reference-counted: clRetainEvent is
 * kfl_retain, and a clRelease* drops one reference (kfl_gone), the last
 * ending the handle.
 *
 * clSVMFree returns nothing: OpenCL gives it no way to fail. It is counted
 * (a call kctx makes) and, armed, still passes through: the sweep's step
 * there fails nothing (its log names it all the same).
 *
 * SVM pointers are followed where they are always SVM (clSVMAlloc,
 * clSVMFree, clEnqueueSVMMemFill's destination, clSetKernelArgSVMPointer);
 * clEnqueueSVMMemcpy's are not named (one side is host memory, whose
 * address a freed allocation's may be again).
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include "fault_layer.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define API __attribute__((visibility("default")))

// clang-format off
#define LAYER_ENTRIES(X)                 \
    X(clGetPlatformIDs)                  \
    X(clGetDeviceIDs)                    \
    X(clGetDeviceInfo)                   \
    X(clCreateContext)                   \
    X(clReleaseContext)                  \
    X(clGetContextInfo)                  \
    X(clGetCommandQueueInfo)             \
    X(clCreateCommandQueueWithProperties) \
    X(clReleaseCommandQueue)             \
    X(clFlush)                           \
    X(clFinish)                          \
    X(clEnqueueMarkerWithWaitList)       \
    X(clEnqueueBarrierWithWaitList)      \
    X(clGetEventInfo)                    \
    X(clRetainEvent)                     \
    X(clReleaseEvent)                    \
    X(clCreateUserEvent)                 \
    X(clSetUserEventStatus)              \
    X(clSVMAlloc)                        \
    X(clSVMFree)                         \
    X(clEnqueueSVMMemcpy)                \
    X(clEnqueueSVMMemFill)               \
    X(clCreateProgramWithSource)         \
    X(clBuildProgram)                    \
    X(clGetProgramBuildInfo)             \
    X(clReleaseProgram)                  \
    X(clCreateKernel)                    \
    X(clReleaseKernel)                   \
    X(clGetKernelInfo)                   \
    X(clGetKernelArgInfo)                \
    X(clSetKernelArg)                    \
    X(clSetKernelArgSVMPointer)          \
    X(clEnqueueNDRangeKernel)
// clang-format on

/* The runtime's entries behind the wrappers. */
static struct {
#define M_(name) __typeof__(&name) name;
    LAYER_ENTRIES(M_)
#undef M_
} g_real;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void resolve(void) {
    const char *path = getenv("KCTX_FAULT_LAYER_UNDER");
    void *lib = dlopen(path && *path ? path : "libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return; /* every entry then answers CL_INVALID_OPERATION */
#define R_(name) *(void **)&g_real.name = dlsym(lib, #name);
    LAYER_ENTRIES(R_)
#undef R_
}

#define H(x) ((uint64_t)(uintptr_t)(x))

/* A cl_int entry: count the call; fail it when armed (the runtime is then
 * not called). */
#define ENTER(name)                                    \
    pthread_once(&g_once, resolve);                    \
    do {                                               \
        int code_ = kfl_enter(#name);                  \
        if (code_) return (cl_int)code_;               \
        if (!g_real.name) return CL_INVALID_OPERATION; \
    } while (0)

/* A creator (errcode_ret, NULL on failure). */
#define ENTER_MAKE(name, errp)                                    \
    pthread_once(&g_once, resolve);                               \
    do {                                                          \
        int code_ = kfl_enter(#name);                             \
        if (!code_ && !g_real.name) code_ = CL_INVALID_OPERATION; \
        if (code_) {                                              \
            if (errp) *(errp) = (cl_int)code_;                    \
            return NULL;                                          \
        }                                                         \
    } while (0)

static void use_list(cl_uint n, const cl_event *list, const char *entry) {
    for (cl_uint i = 0; list && i < n; i++) kfl_use(H(list[i]), entry);
}

/* ---- platforms, devices, contexts (the framework's) ---------------------- */

API cl_int clGetPlatformIDs(cl_uint n, cl_platform_id *p, cl_uint *np) {
    ENTER(clGetPlatformIDs);
    return g_real.clGetPlatformIDs(n, p, np);
}

API cl_int clGetDeviceIDs(cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id *d,
                          cl_uint *nd) {
    ENTER(clGetDeviceIDs);
    return g_real.clGetDeviceIDs(p, t, n, d, nd);
}

API cl_int clGetDeviceInfo(cl_device_id d, cl_device_info what, size_t size, void *value,
                           size_t *ret) {
    ENTER(clGetDeviceInfo);
    return g_real.clGetDeviceInfo(d, what, size, value, ret);
}

API cl_context clCreateContext(const cl_context_properties *props, cl_uint n,
                               const cl_device_id *devs,
                               void(CL_CALLBACK *notify)(const char *, const void *, size_t,
                                                         void *),
                               void *user, cl_int *err) {
    ENTER_MAKE(clCreateContext, err);
    cl_context c = g_real.clCreateContext(props, n, devs, notify, user, err);
    kfl_made(H(c), KFL_OBJECT, "clCreateContext");
    return c;
}

API cl_int clReleaseContext(cl_context c) {
    ENTER(clReleaseContext);
    kfl_destroying(H(c), "clReleaseContext");
    cl_int err = g_real.clReleaseContext(c);
    if (err == CL_SUCCESS) kfl_gone(H(c));
    return err;
}

API cl_int clGetContextInfo(cl_context c, cl_context_info what, size_t size, void *value,
                            size_t *ret) {
    ENTER(clGetContextInfo);
    kfl_use(H(c), "clGetContextInfo");
    return g_real.clGetContextInfo(c, what, size, value, ret);
}

/* ---- command queues ------------------------------------------------------ */

API cl_int clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info what, size_t size,
                                 void *value, size_t *ret) {
    ENTER(clGetCommandQueueInfo);
    kfl_use(H(q), "clGetCommandQueueInfo");
    return g_real.clGetCommandQueueInfo(q, what, size, value, ret);
}

API cl_command_queue clCreateCommandQueueWithProperties(cl_context c, cl_device_id d,
                                                        const cl_queue_properties *props,
                                                        cl_int *err) {
    ENTER_MAKE(clCreateCommandQueueWithProperties, err);
    cl_command_queue q = g_real.clCreateCommandQueueWithProperties(c, d, props, err);
    kfl_made(H(q), KFL_STREAM, "clCreateCommandQueueWithProperties");
    return q;
}

API cl_int clReleaseCommandQueue(cl_command_queue q) {
    ENTER(clReleaseCommandQueue);
    kfl_destroying(H(q), "clReleaseCommandQueue");
    cl_int err = g_real.clReleaseCommandQueue(q);
    if (err == CL_SUCCESS) kfl_gone(H(q));
    return err;
}

API cl_int clFlush(cl_command_queue q) {
    ENTER(clFlush);
    kfl_use(H(q), "clFlush");
    return g_real.clFlush(q);
}

API cl_int clFinish(cl_command_queue q) {
    ENTER(clFinish);
    kfl_use(H(q), "clFinish");
    return g_real.clFinish(q);
}

/* ---- events -------------------------------------------------------------- */

API cl_int clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint n, const cl_event *list,
                                       cl_event *ev) {
    ENTER(clEnqueueMarkerWithWaitList);
    kfl_use(H(q), "clEnqueueMarkerWithWaitList");
    use_list(n, list, "clEnqueueMarkerWithWaitList");
    cl_int err = g_real.clEnqueueMarkerWithWaitList(q, n, list, ev);
    if (err == CL_SUCCESS && ev) kfl_made(H(*ev), KFL_EVENT, "clEnqueueMarkerWithWaitList");
    return err;
}

API cl_int clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint n, const cl_event *list,
                                        cl_event *ev) {
    ENTER(clEnqueueBarrierWithWaitList);
    kfl_use(H(q), "clEnqueueBarrierWithWaitList");
    use_list(n, list, "clEnqueueBarrierWithWaitList");
    cl_int err = g_real.clEnqueueBarrierWithWaitList(q, n, list, ev);
    if (err == CL_SUCCESS && ev) kfl_made(H(*ev), KFL_EVENT, "clEnqueueBarrierWithWaitList");
    return err;
}

API cl_int clGetEventInfo(cl_event e, cl_event_info what, size_t size, void *value, size_t *ret) {
    ENTER(clGetEventInfo);
    kfl_use(H(e), "clGetEventInfo");
    return g_real.clGetEventInfo(e, what, size, value, ret);
}

API cl_int clRetainEvent(cl_event e) {
    ENTER(clRetainEvent);
    cl_int err = g_real.clRetainEvent(e);
    if (err == CL_SUCCESS) kfl_retain(H(e), "clRetainEvent");
    return err;
}

API cl_int clReleaseEvent(cl_event e) {
    ENTER(clReleaseEvent);
    kfl_destroying(H(e), "clReleaseEvent");
    cl_int err = g_real.clReleaseEvent(e);
    if (err == CL_SUCCESS) kfl_gone(H(e));
    return err;
}

API cl_event clCreateUserEvent(cl_context c, cl_int *err) {
    ENTER_MAKE(clCreateUserEvent, err);
    cl_event e = g_real.clCreateUserEvent(c, err);
    kfl_made(H(e), KFL_EVENT, "clCreateUserEvent");
    return e;
}

API cl_int clSetUserEventStatus(cl_event e, cl_int status) {
    ENTER(clSetUserEventStatus);
    kfl_use(H(e), "clSetUserEventStatus");
    return g_real.clSetUserEventStatus(e, status);
}

/* ---- shared virtual memory ------------------------------------------------ */

API void *clSVMAlloc(cl_context c, cl_svm_mem_flags flags, size_t size, cl_uint align) {
    pthread_once(&g_once, resolve);
    if (kfl_enter("clSVMAlloc") || !g_real.clSVMAlloc) return NULL; /* its only failure */
    void *p = g_real.clSVMAlloc(c, flags, size, align);
    kfl_made(H(p), KFL_MEMORY, "clSVMAlloc");
    return p;
}

API void clSVMFree(cl_context c, void *p) {
    pthread_once(&g_once, resolve);
    (void)kfl_enter("clSVMFree"); /* counted; it cannot fail (see the top) */
    if (!g_real.clSVMFree) return;
    kfl_destroying(H(p), "clSVMFree");
    g_real.clSVMFree(c, p);
    kfl_gone(H(p));
}

API cl_int clEnqueueSVMMemcpy(cl_command_queue q, cl_bool blocking, void *dst, const void *src,
                              size_t size, cl_uint n, const cl_event *list, cl_event *ev) {
    ENTER(clEnqueueSVMMemcpy);
    kfl_use(H(q), "clEnqueueSVMMemcpy");
    use_list(n, list, "clEnqueueSVMMemcpy");
    cl_int err = g_real.clEnqueueSVMMemcpy(q, blocking, dst, src, size, n, list, ev);
    if (err == CL_SUCCESS && ev) kfl_made(H(*ev), KFL_EVENT, "clEnqueueSVMMemcpy");
    return err;
}

API cl_int clEnqueueSVMMemFill(cl_command_queue q, void *dst, const void *pattern, size_t psize,
                               size_t size, cl_uint n, const cl_event *list, cl_event *ev) {
    ENTER(clEnqueueSVMMemFill);
    kfl_use(H(q), "clEnqueueSVMMemFill");
    kfl_use(H(dst), "clEnqueueSVMMemFill");
    use_list(n, list, "clEnqueueSVMMemFill");
    cl_int err = g_real.clEnqueueSVMMemFill(q, dst, pattern, psize, size, n, list, ev);
    if (err == CL_SUCCESS && ev) kfl_made(H(*ev), KFL_EVENT, "clEnqueueSVMMemFill");
    return err;
}

/* ---- programs and kernels -------------------------------------------------- */

API cl_program clCreateProgramWithSource(cl_context c, cl_uint count, const char **src,
                                         const size_t *len, cl_int *err) {
    ENTER_MAKE(clCreateProgramWithSource, err);
    cl_program p = g_real.clCreateProgramWithSource(c, count, src, len, err);
    kfl_made(H(p), KFL_MODULE, "clCreateProgramWithSource");
    return p;
}

API cl_int clBuildProgram(cl_program p, cl_uint n, const cl_device_id *devs, const char *options,
                          void(CL_CALLBACK *notify)(cl_program, void *), void *user) {
    ENTER(clBuildProgram);
    kfl_use(H(p), "clBuildProgram");
    return g_real.clBuildProgram(p, n, devs, options, notify, user);
}

API cl_int clGetProgramBuildInfo(cl_program p, cl_device_id d, cl_program_build_info what,
                                 size_t size, void *value, size_t *ret) {
    ENTER(clGetProgramBuildInfo);
    kfl_use(H(p), "clGetProgramBuildInfo");
    return g_real.clGetProgramBuildInfo(p, d, what, size, value, ret);
}

API cl_int clReleaseProgram(cl_program p) {
    ENTER(clReleaseProgram);
    kfl_destroying(H(p), "clReleaseProgram");
    cl_int err = g_real.clReleaseProgram(p);
    if (err == CL_SUCCESS) kfl_gone(H(p));
    return err;
}

API cl_kernel clCreateKernel(cl_program p, const char *name, cl_int *err) {
    ENTER_MAKE(clCreateKernel, err);
    kfl_use(H(p), "clCreateKernel");
    cl_kernel k = g_real.clCreateKernel(p, name, err);
    kfl_made(H(k), KFL_OBJECT, "clCreateKernel");
    return k;
}

API cl_int clReleaseKernel(cl_kernel k) {
    ENTER(clReleaseKernel);
    kfl_destroying(H(k), "clReleaseKernel");
    cl_int err = g_real.clReleaseKernel(k);
    if (err == CL_SUCCESS) kfl_gone(H(k));
    return err;
}

API cl_int clGetKernelInfo(cl_kernel k, cl_kernel_info what, size_t size, void *value,
                           size_t *ret) {
    ENTER(clGetKernelInfo);
    kfl_use(H(k), "clGetKernelInfo");
    return g_real.clGetKernelInfo(k, what, size, value, ret);
}

API cl_int clGetKernelArgInfo(cl_kernel k, cl_uint i, cl_kernel_arg_info what, size_t size,
                              void *value, size_t *ret) {
    ENTER(clGetKernelArgInfo);
    kfl_use(H(k), "clGetKernelArgInfo");
    return g_real.clGetKernelArgInfo(k, i, what, size, value, ret);
}

API cl_int clSetKernelArg(cl_kernel k, cl_uint i, size_t size, const void *value) {
    ENTER(clSetKernelArg);
    kfl_use(H(k), "clSetKernelArg");
    return g_real.clSetKernelArg(k, i, size, value);
}

API cl_int clSetKernelArgSVMPointer(cl_kernel k, cl_uint i, const void *p) {
    ENTER(clSetKernelArgSVMPointer);
    kfl_use(H(k), "clSetKernelArgSVMPointer");
    kfl_use(H(p), "clSetKernelArgSVMPointer");
    return g_real.clSetKernelArgSVMPointer(k, i, p);
}

API cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dim,
                                  const size_t *offset, const size_t *global, const size_t *local,
                                  cl_uint n, const cl_event *list, cl_event *ev) {
    ENTER(clEnqueueNDRangeKernel);
    kfl_use(H(q), "clEnqueueNDRangeKernel");
    kfl_use(H(k), "clEnqueueNDRangeKernel");
    use_list(n, list, "clEnqueueNDRangeKernel");
    cl_int err = g_real.clEnqueueNDRangeKernel(q, k, dim, offset, global, local, n, list, ev);
    if (err == CL_SUCCESS && ev) kfl_made(H(*ev), KFL_EVENT, "clEnqueueNDRangeKernel");
    return err;
}

/* ---- the control table ------------------------------------------------------ */

/* Non-fatal: CL_OUT_OF_HOST_MEMORY (any entry may answer it; the adapter
 * classifies it NO_MEMORY). Fatal: CL_DEVICE_NOT_AVAILABLE, the one code
 * the adapter classifies DEVICE_LOST (o_classify). */
API const kfl_control *kctx_fault_layer_control(void);
API const kfl_control *kctx_fault_layer_control(void) {
    return kfl_control_of("opencl", CL_OUT_OF_HOST_MEMORY, CL_DEVICE_NOT_AVAILABLE);
}
