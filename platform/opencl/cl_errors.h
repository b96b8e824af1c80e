/*
 * cl_errors.h — OpenCL's error codes by name (cl_errors.c).
 */
#ifndef KCTX_OPENCL_CL_ERRORS_H
#define KCTX_OPENCL_CL_ERRORS_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

/* "CL_INVALID_VALUE", ... ("CL_ERROR" for a code it does not know). */
const char *kctx__opencl_error_name(cl_int err);

#endif
