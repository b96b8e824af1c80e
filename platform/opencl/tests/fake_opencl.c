/*
 * fake_opencl.c — an "OpenCL library" for tests (never installed): it
 * exports every entry libkctx's loader resolves (platform/opencl/cl_api.h)
 * and describes one context with one device that has NO fine-grained SVM,
 * which no real driver on the test machines offers. Built twice: as is
 * (libkctx_fake_opencl.so) and with -DFAKE_WITHOUT_SVM_ALLOC
 * (libkctx_fake_opencl_old.so, an OpenCL 1.2-era library without
 * clSVMAlloc). Used through KCTX_OPENCL_LIBRARY by opencl_fake_driver.c.
 *
 * Only the queries the tested paths make are real; every other entry
 * answers CL_INVALID_OPERATION and is never reached by the tests.
 */
#include <stdint.h>
#include <string.h>

/* OpenCL's types and the few codes used, as OpenCL's headers define them
 * (the headers are not included: their prototypes are not what most
 * entries below are). */
typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_bitfield;
typedef struct _cl_context *cl_context;
typedef struct _cl_device_id *cl_device_id;
#define CL_SUCCESS 0
#define CL_INVALID_VALUE (-30)
#define CL_INVALID_DEVICE (-33)
#define CL_INVALID_CONTEXT (-34)
#define CL_INVALID_OPERATION (-59)
#define CL_DEVICE_SVM_CAPABILITIES 0x1053
#define CL_CONTEXT_DEVICES 0x1081
#define CL_DEVICE_SVM_COARSE_GRAIN_BUFFER ((cl_bitfield)1)

#define FAKE_CONTEXT ((cl_context)(uintptr_t)0x1000)
#define FAKE_DEVICE ((cl_device_id)(uintptr_t)0x2000)

#define API __attribute__((visibility("default")))

API cl_int clGetContextInfo(cl_context c, cl_uint what, size_t size, void *value, size_t *ret);
API cl_int clGetContextInfo(cl_context c, cl_uint what, size_t size, void *value, size_t *ret) {
    if (c != FAKE_CONTEXT) return CL_INVALID_CONTEXT;
    if (what != CL_CONTEXT_DEVICES) return CL_INVALID_VALUE;
    cl_device_id d = FAKE_DEVICE;
    if (ret) *ret = sizeof d;
    if (value && size >= sizeof d) memcpy(value, &d, sizeof d);
    return CL_SUCCESS;
}

API cl_int clGetDeviceInfo(cl_device_id d, cl_uint what, size_t size, void *value, size_t *ret);
API cl_int clGetDeviceInfo(cl_device_id d, cl_uint what, size_t size, void *value, size_t *ret) {
    if (d != FAKE_DEVICE) return CL_INVALID_DEVICE;
    if (what == CL_DEVICE_SVM_CAPABILITIES) {
        cl_bitfield caps = CL_DEVICE_SVM_COARSE_GRAIN_BUFFER; /* coarse only */
        if (ret) *ret = sizeof caps;
        if (value && size >= sizeof caps) memcpy(value, &caps, sizeof caps);
        return CL_SUCCESS;
    }
    return CL_INVALID_VALUE;
}

/* The rest: present, never reached by the tests. */
#define FAKE_ENTRY(name)   \
    API cl_int name(void); \
    API cl_int name(void) { return CL_INVALID_OPERATION; }
FAKE_ENTRY(clGetPlatformIDs)
FAKE_ENTRY(clGetCommandQueueInfo)
FAKE_ENTRY(clCreateCommandQueueWithProperties)
FAKE_ENTRY(clReleaseCommandQueue)
FAKE_ENTRY(clFlush)
FAKE_ENTRY(clEnqueueMarkerWithWaitList)
FAKE_ENTRY(clEnqueueBarrierWithWaitList)
FAKE_ENTRY(clGetEventInfo)
FAKE_ENTRY(clRetainEvent)
FAKE_ENTRY(clReleaseEvent)
#ifndef FAKE_WITHOUT_SVM_ALLOC
FAKE_ENTRY(clSVMAlloc)
#endif
FAKE_ENTRY(clSVMFree)
FAKE_ENTRY(clEnqueueSVMMemcpy)
FAKE_ENTRY(clEnqueueSVMMemFill)
FAKE_ENTRY(clCreateProgramWithSource)
FAKE_ENTRY(clBuildProgram)
FAKE_ENTRY(clGetProgramBuildInfo)
FAKE_ENTRY(clReleaseProgram)
FAKE_ENTRY(clCreateKernel)
FAKE_ENTRY(clReleaseKernel)
FAKE_ENTRY(clGetKernelInfo)
FAKE_ENTRY(clGetKernelArgInfo)
FAKE_ENTRY(clSetKernelArg)
FAKE_ENTRY(clSetKernelArgSVMPointer)
FAKE_ENTRY(clEnqueueNDRangeKernel)
FAKE_ENTRY(clGetDeviceIDs)
FAKE_ENTRY(clCreateContext)
FAKE_ENTRY(clReleaseContext)
FAKE_ENTRY(clCreateUserEvent)
FAKE_ENTRY(clSetUserEventStatus)
FAKE_ENTRY(clFinish)
