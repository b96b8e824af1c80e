/*
 * opencl_driver_errors.c — the OpenCL errors that mean "this program or
 * kernel cannot be loaded on this device", each through kctx_prepare on the
 * opencl platform (issue 23 item 5): each is the image's fault, platform.h's
 * BAD_MODULE, so prepare answers INCOMPATIBLE_IMAGE naming the error, keeps
 * nothing and leaves the id free; an error of another kind (no memory, a bad
 * build option) keeps its own class. PoCL produces few of them on demand
 * (test_opencl.c builds real sources that fail), so ctest runs this with
 * KCTX_OPENCL_LIBRARY naming opencl_failing_library.c, the real loader with
 * a switch in front of clBuildProgram, clCreateKernel and clGetKernelArgInfo.
 * Skips (77) without an OpenCL device with fine-grained SVM, and without the
 * switch (run by hand without KCTX_OPENCL_LIBRARY).
 */
#include "kt.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <kctx/image.h>
#include <kctx/opencl.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*arm_fn)(const char *entry, cl_int code);

typedef struct env {
    arm_fn arm;
    cl_context ctx;
    cl_command_queue q;
    int kdev;
} env;

/* The switch, and one context on a device with fine-grained SVM, lent. */
static int env_open(env *e) {
    memset(e, 0, sizeof *e);
    const char *lib = getenv("KCTX_OPENCL_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    e->arm = h ? (arm_fn)(uintptr_t)dlsym(h, "opencl_failing_arm") : NULL;
    if (!e->arm) {
        kt_skip("KCTX_OPENCL_LIBRARY does not name opencl_failing_library (ctest sets it)");
        return 0;
    }
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_OK(kctx_get_platform_caps("opencl", &caps));
    if (!caps.available && strstr(caps.reason ? caps.reason : "", lib)) {
        /* the switch library itself does not load as an OpenCL library */
        CHECK(caps.available);
        fprintf(stderr, "    %s\n", caps.reason);
        return 0;
    }
    if (!caps.available) {
        kt_skip("the opencl platform: %s", caps.reason ? caps.reason : "?");
        return 0;
    }
    cl_platform_id plats[4];
    cl_uint np = 0;
    cl_device_id dev = NULL;
    if (clGetPlatformIDs(4, plats, &np) != CL_SUCCESS) np = 0;
    for (cl_uint p = 0; p < np && !dev; p++) {
        cl_device_id devs[4];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 4, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd && !dev; d++) {
            cl_device_svm_capabilities svm = 0;
            clGetDeviceInfo(devs[d], CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
            if ((svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) && (svm & CL_DEVICE_SVM_ATOMICS))
                dev = devs[d];
        }
    }
    if (!dev) {
        kt_skip("no OpenCL device with fine-grained SVM and atomics");
        return 0;
    }
    cl_int err = CL_SUCCESS;
    e->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (!CHECK(e->ctx != NULL)) return 0;
    e->q = clCreateCommandQueueWithProperties(e->ctx, dev, NULL, &err);
    if (!CHECK(e->q != NULL)) return 0;
    return CHECK_OK(kctx_opencl_bind_queue(e->q, &e->kdev));
}

static void env_close(env *e) {
    if (e->arm) e->arm("", 0);
    kctx_opencl_bind(NULL, NULL, NULL);
    if (e->q) clReleaseCommandQueue(e->q);
    if (e->ctx) clReleaseContext(e->ctx);
}

static const char k_copy[] = "KCTX_TASK(k_copy, __global const float *x, __global float *y) {\n"
                             "    KCTX_TASK_GATE();\n"
                             "    y[get_global_id(0)] = x[get_global_id(0)];\n"
                             "}\n";

/* A one-task image of k_copy (x, y: tensors), its source ending in a
 * comment naming `id`, so that no two images share bytes (K14 would share
 * the first one's build); *out malloc'd. */
static int copy_image(uint64_t id, void **out, size_t *size) {
    char source[sizeof k_copy + 32];
    snprintf(source, sizeof source, "%s// image %llu\n", k_copy, (unsigned long long)id);
    kctx_image_builder *b = kctx_image_builder_new("driver_errors");
    kctx_image_builder_param(b, "x", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "y", KCTX_PARAM_TENSOR_OUT);
    uint32_t fid = 0;
    kctx_image_builder_child(b, "copy", "k_copy", &fid);
    kctx_image_builder_child_param(b, "x", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "y", KCTX_PARAM_TENSOR);
    kctx_image_builder_variant(b, KCTX_VARIANT_OPENCL_C, source, strlen(source));
    kctx_image_builder_task(b, fid, 1, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, 0);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 1, 0);
    char msg[256] = "";
    kctx_build_status bs = kctx_image_builder_finish(b, out, size, msg, sizeof msg);
    kctx_image_builder_free(b);
    if (bs != KCTX_BUILD_OK) fprintf(stderr, "    image: %s\n", msg);
    return CHECK(bs == KCTX_BUILD_OK);
}

/* `entry` answers `code` during one prepare: the status and message are
 * `want` and the code's name; nothing is kept; disarmed, the same id
 * prepares. */
static void prepare_refused(const env *e, kctx_context c, const char *entry, cl_int code,
                            const char *name, kctx_status want) {
    static uint64_t next_id = 1;
    const uint64_t id = next_id++;
    void *img = NULL;
    size_t size = 0;
    if (!copy_image(id, &img, &size)) return;
    kctx_opencl_live base = KCTX_OPENCL_LIVE_INIT, now = KCTX_OPENCL_LIVE_INIT;
    CHECK_OK(kctx_opencl_live_objects(e->kdev, &base));
    e->arm(entry, code);
    kctx_status st = kctx_prepare(c, id, img, size);
    e->arm("", 0);
    if (!CHECK_EQ(st, want) || !CHECK(strstr(kctx_thread_last_error(), name) != NULL))
        fprintf(stderr, "    %s answering %s: %s: %s\n", entry, name, kctx_status_name(st),
                kctx_thread_last_error());
    CHECK_OK(kctx_opencl_live_objects(e->kdev, &now));
    CHECK(now.programs == base.programs && now.kernels == base.kernels);
    CHECK_PHASE(c, KCTX_PHASE_READY); /* neither the image's fault nor these poison */
    CHECK_OK(kctx_prepare(c, id, img, size));
    free(img);
}

static kctx_context kernel_ctx(void) {
    kctx_context c = 0;
    if (!CHECK_OK(kctx_context_create("opencl", &c))) return 0;
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    if (!CHECK_OK(kctx_kernel_init(c, &cfg))) {
        kctx_destroy(c);
        return 0;
    }
    return c;
}

#define REFUSED(entry, code, want) prepare_refused(&e, c, entry, code, #code, want)

/* The program cannot be built for this device (clBuildProgram). */
KT_TEST(bad_module_build_errors_are_incompatible_images) {
    env e;
    if (!env_open(&e)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    REFUSED("clBuildProgram", CL_BUILD_PROGRAM_FAILURE, KCTX_INCOMPATIBLE_IMAGE);
    REFUSED("clBuildProgram", CL_COMPILER_NOT_AVAILABLE, KCTX_INCOMPATIBLE_IMAGE);
    REFUSED("clBuildProgram", CL_LINKER_NOT_AVAILABLE, KCTX_INCOMPATIBLE_IMAGE);
    REFUSED("clBuildProgram", CL_INVALID_BINARY, KCTX_INCOMPATIBLE_IMAGE);
    REFUSED("clBuildProgram", CL_COMPILE_PROGRAM_FAILURE, KCTX_INCOMPATIBLE_IMAGE);
    REFUSED("clBuildProgram", CL_LINK_PROGRAM_FAILURE, KCTX_INCOMPATIBLE_IMAGE);
    /* not the program's fault: their own classes */
    REFUSED("clBuildProgram", CL_OUT_OF_HOST_MEMORY, KCTX_OUT_OF_MEMORY);
    REFUSED("clBuildProgram", CL_INVALID_BUILD_OPTIONS, KCTX_PLATFORM_ERROR);
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
done:
    env_close(&e);
}

/* The program has no such kernel, or no usable one (clCreateKernel). */
KT_TEST(bad_module_kernel_errors_are_incompatible_images) {
    env e;
    if (!env_open(&e)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    REFUSED("clCreateKernel", CL_INVALID_KERNEL_NAME, KCTX_INCOMPATIBLE_IMAGE);
    REFUSED("clCreateKernel", CL_INVALID_KERNEL_DEFINITION, KCTX_INCOMPATIBLE_IMAGE);
    REFUSED("clCreateKernel", CL_INVALID_PROGRAM_EXECUTABLE, KCTX_INCOMPATIBLE_IMAGE);
    REFUSED("clCreateKernel", CL_OUT_OF_RESOURCES, KCTX_OUT_OF_MEMORY);
    /* the device keeps no argument information: kctx cannot tell how to
     * pass the bindings, so it cannot launch the kernel */
    REFUSED("clGetKernelArgInfo", CL_KERNEL_ARG_INFO_NOT_AVAILABLE, KCTX_INCOMPATIBLE_IMAGE);
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
done:
    env_close(&e);
}
