/*
 * opencl_failing_library.c — an "OpenCL library" for tests (never
 * installed): the real ICD loader with a switch in front of three entries,
 * so that a test makes them answer an error no driver here produces on
 * demand (CL_COMPILER_NOT_AVAILABLE, CL_INVALID_KERNEL_DEFINITION, ...).
 * libkctx loads it through KCTX_OPENCL_LIBRARY; every other entry its loader
 * resolves is found in this library's dependency, the real loader
 * (libOpenCL.so.1, which it links), so everything else runs on the real
 * driver. The test reaches the switch by dlopen of the same file
 * (opencl_failing_arm).
 *
 * Switched: clBuildProgram (the program is not built), clCreateKernel
 * (returns NULL) and clGetKernelArgInfo.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#define API __attribute__((visibility("default")))

/* The entry that fails ("" none) and its error. */
static char g_entry[64];
static _Atomic cl_int g_code;

API void opencl_failing_arm(const char *entry, cl_int code);
API void opencl_failing_arm(const char *entry, cl_int code) {
    atomic_store(&g_code, 0);
    strncpy(g_entry, entry ? entry : "", sizeof g_entry - 1);
    atomic_store(&g_code, code);
}

static cl_int armed(const char *entry) {
    cl_int code = atomic_load(&g_code);
    return code && strcmp(g_entry, entry) == 0 ? code : CL_SUCCESS;
}

/* The real entry, from the real loader. */
static void *real(const char *entry) {
    static void *lib;
    if (!lib) lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    return lib ? dlsym(lib, entry) : NULL;
}

API cl_int clBuildProgram(cl_program program, cl_uint ndev, const cl_device_id *devs,
                          const char *options, void(CL_CALLBACK *notify)(cl_program, void *),
                          void *user) {
    cl_int code = armed("clBuildProgram");
    if (code) return code;
    __typeof__(&clBuildProgram) f = (__typeof__(&clBuildProgram))real("clBuildProgram");
    return f ? f(program, ndev, devs, options, notify, user) : CL_INVALID_OPERATION;
}

API cl_kernel clCreateKernel(cl_program program, const char *name, cl_int *err) {
    cl_int code = armed("clCreateKernel");
    if (code) {
        if (err) *err = code;
        return NULL;
    }
    __typeof__(&clCreateKernel) f = (__typeof__(&clCreateKernel))real("clCreateKernel");
    if (!f && err) *err = CL_INVALID_OPERATION;
    return f ? f(program, name, err) : NULL;
}

API cl_int clGetKernelArgInfo(cl_kernel kernel, cl_uint index, cl_kernel_arg_info what, size_t size,
                              void *value, size_t *ret) {
    cl_int code = armed("clGetKernelArgInfo");
    if (code) return code;
    __typeof__(&clGetKernelArgInfo) f = (__typeof__(&clGetKernelArgInfo))real("clGetKernelArgInfo");
    return f ? f(kernel, index, what, size, value, ret) : CL_INVALID_OPERATION;
}
