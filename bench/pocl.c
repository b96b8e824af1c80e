/*
 * pocl.c — see pocl.h.
 */
#include "pocl.h"

#include <stdio.h>
#include <string.h>

#define POCL_PLATFORM_NAME "Portable Computing Language"

/* ---- checks ------------------------------------------------------------ */

const char *kb_cl_error_name(cl_int e) {
    switch (e) {
#define CL_NAME_(c) \
    case c:         \
        return #c;
        CL_NAME_(CL_SUCCESS)
        CL_NAME_(CL_DEVICE_NOT_FOUND)
        CL_NAME_(CL_DEVICE_NOT_AVAILABLE)
        CL_NAME_(CL_COMPILER_NOT_AVAILABLE)
        CL_NAME_(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        CL_NAME_(CL_OUT_OF_RESOURCES)
        CL_NAME_(CL_OUT_OF_HOST_MEMORY)
        CL_NAME_(CL_BUILD_PROGRAM_FAILURE)
        CL_NAME_(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        CL_NAME_(CL_INVALID_VALUE)
        CL_NAME_(CL_INVALID_DEVICE_TYPE)
        CL_NAME_(CL_INVALID_PLATFORM)
        CL_NAME_(CL_INVALID_DEVICE)
        CL_NAME_(CL_INVALID_CONTEXT)
        CL_NAME_(CL_INVALID_QUEUE_PROPERTIES)
        CL_NAME_(CL_INVALID_COMMAND_QUEUE)
        CL_NAME_(CL_INVALID_PROGRAM)
        CL_NAME_(CL_INVALID_PROGRAM_EXECUTABLE)
        CL_NAME_(CL_INVALID_KERNEL_NAME)
        CL_NAME_(CL_INVALID_KERNEL)
        CL_NAME_(CL_INVALID_ARG_INDEX)
        CL_NAME_(CL_INVALID_ARG_VALUE)
        CL_NAME_(CL_INVALID_ARG_SIZE)
        CL_NAME_(CL_INVALID_KERNEL_ARGS)
        CL_NAME_(CL_INVALID_WORK_DIMENSION)
        CL_NAME_(CL_INVALID_WORK_GROUP_SIZE)
        CL_NAME_(CL_INVALID_GLOBAL_WORK_SIZE)
        CL_NAME_(CL_INVALID_EVENT_WAIT_LIST)
        CL_NAME_(CL_INVALID_EVENT)
        CL_NAME_(CL_INVALID_OPERATION)
#undef CL_NAME_
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return "CL_(unknown error)";
    }
}

void kb_cl_check(cl_int e, const char *what) {
    if (e != CL_SUCCESS) kb_fatal("%s failed: %s (%d)", what, kb_cl_error_name(e), (int)e);
}

/* ---- PoCL -------------------------------------------------------------- */

int kb_pocl_open(kb_pocl *p, char *why, size_t why_size) {
    cl_uint nplat = 0;
    cl_platform_id plats[16];
    cl_int e;

    memset(p, 0, sizeof *p);
    e = clGetPlatformIDs(16, plats, &nplat);
    if (e == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (e == CL_SUCCESS && nplat == 0)) {
        snprintf(why, why_size, "no OpenCL platform is installed");
        return 0;
    }
    kb_cl_check(e, "clGetPlatformIDs");
    if (nplat > 16) nplat = 16;
    for (cl_uint i = 0; i < nplat && p->platform == NULL; i++) {
        char name[256] = {0};
        kb_cl_check(clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name - 1, name, NULL),
                    "clGetPlatformInfo(CL_PLATFORM_NAME)");
        if (strstr(name, POCL_PLATFORM_NAME) != NULL) {
            p->platform = plats[i];
            snprintf(p->platform_name, sizeof p->platform_name, "%s", name);
        }
    }
    if (p->platform == NULL) {
        snprintf(why, why_size, "no \"%s\" (PoCL) platform among %u OpenCL platforms",
                 POCL_PLATFORM_NAME, (unsigned)nplat);
        return 0;
    }
    cl_uint ndev = 0;
    e = clGetDeviceIDs(p->platform, CL_DEVICE_TYPE_CPU, 1, &p->device, &ndev);
    if (e == CL_DEVICE_NOT_FOUND || (e == CL_SUCCESS && ndev == 0)) {
        snprintf(why, why_size, "PoCL has no CPU device");
        return 0;
    }
    kb_cl_check(e, "clGetDeviceIDs(CL_DEVICE_TYPE_CPU)");
    kb_cl_check(
        clGetDeviceInfo(p->device, CL_DEVICE_NAME, sizeof p->device_name - 1, p->device_name, NULL),
        "clGetDeviceInfo(CL_DEVICE_NAME)");
    kb_cl_check(clGetDeviceInfo(p->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof p->compute_units,
                                &p->compute_units, NULL),
                "clGetDeviceInfo(CL_DEVICE_MAX_COMPUTE_UNITS)");
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)p->platform, 0};
    p->context = clCreateContext(props, 1, &p->device, NULL, NULL, &e);
    kb_cl_check(e, "clCreateContext");
    return 1;
}

void kb_pocl_close(kb_pocl *p) {
    if (p->context) kb_cl_check(clReleaseContext(p->context), "clReleaseContext");
    memset(p, 0, sizeof *p);
}

cl_command_queue kb_pocl_queue(const kb_pocl *p) {
    cl_int e = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueueWithProperties(p->context, p->device, NULL, &e);
    kb_cl_check(e, "clCreateCommandQueueWithProperties");
    return q;
}

cl_program kb_pocl_program(const kb_pocl *p, const char *source) {
    cl_int e = CL_SUCCESS;
    cl_program prog = clCreateProgramWithSource(p->context, 1, &source, NULL, &e);
    kb_cl_check(e, "clCreateProgramWithSource");
    e = clBuildProgram(prog, 1, &p->device, "", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[4096] = {0};
        if (clGetProgramBuildInfo(prog, p->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                                  NULL) == CL_SUCCESS)
            kb_error("OpenCL build log:\n%s", log);
        kb_cl_check(e, "clBuildProgram");
    }
    return prog;
}

cl_kernel kb_pocl_kernel(cl_program prog, const char *name) {
    cl_int e = CL_SUCCESS;
    cl_kernel k = clCreateKernel(prog, name, &e);
    if (e != CL_SUCCESS)
        kb_fatal("clCreateKernel(%s) failed: %s (%d)", name, kb_cl_error_name(e), e);
    return k;
}
