/*
 * cl_errors.c — OpenCL's error codes by name (cl_errors.h), for the opencl
 * adapter's messages and the conformance suite's framework driver
 * (platform/opencl/fw_opencl.c): stateless, compiled into both.
 */
#include "cl_errors.h"

const char *kctx__opencl_error_name(cl_int err) {
    switch (err) {
#define N_(code) \
    case code:   \
        return #code;
        N_(CL_SUCCESS)
        N_(CL_DEVICE_NOT_FOUND)
        N_(CL_DEVICE_NOT_AVAILABLE)
        N_(CL_COMPILER_NOT_AVAILABLE)
        N_(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        N_(CL_OUT_OF_RESOURCES)
        N_(CL_OUT_OF_HOST_MEMORY)
        N_(CL_BUILD_PROGRAM_FAILURE)
        N_(CL_COMPILE_PROGRAM_FAILURE)
        N_(CL_LINKER_NOT_AVAILABLE)
        N_(CL_LINK_PROGRAM_FAILURE)
        N_(CL_INVALID_COMPILER_OPTIONS)
        N_(CL_INVALID_LINKER_OPTIONS)
        N_(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        N_(CL_INVALID_VALUE)
        N_(CL_INVALID_DEVICE)
        N_(CL_INVALID_CONTEXT)
        N_(CL_INVALID_QUEUE_PROPERTIES)
        N_(CL_INVALID_COMMAND_QUEUE)
        N_(CL_INVALID_MEM_OBJECT)
        N_(CL_INVALID_BINARY)
        N_(CL_INVALID_BUILD_OPTIONS)
        N_(CL_INVALID_PROGRAM)
        N_(CL_INVALID_PROGRAM_EXECUTABLE)
        N_(CL_INVALID_KERNEL_NAME)
        N_(CL_INVALID_KERNEL_DEFINITION)
        N_(CL_INVALID_KERNEL)
        N_(CL_INVALID_ARG_INDEX)
        N_(CL_INVALID_ARG_VALUE)
        N_(CL_INVALID_ARG_SIZE)
        N_(CL_INVALID_KERNEL_ARGS)
        N_(CL_INVALID_WORK_DIMENSION)
        N_(CL_INVALID_WORK_GROUP_SIZE)
        N_(CL_INVALID_GLOBAL_WORK_SIZE)
        N_(CL_INVALID_EVENT_WAIT_LIST)
        N_(CL_INVALID_EVENT)
        N_(CL_INVALID_OPERATION)
        N_(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
#undef N_
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return "CL_ERROR";
    }
}
