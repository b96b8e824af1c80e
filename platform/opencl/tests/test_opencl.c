/*
 * test_opencl.c — the opencl platform on a real driver (PoCL here and in
 * CI): what is OpenCL-specific (platform/opencl/include/kctx/opencl.h, docs/opencl.md).
 * The contract's rules themselves run on OpenCL in the conformance suite
 * (`kctx probe --platform opencl`); this file checks the OpenCL-only inputs
 * and behaviour: lending a device per thread (K4), which queues a launch
 * accepts (K5), OpenCL C sources that do not build or cannot be launched,
 * a failing task (K35 through the device error word), and that close
 * releases every OpenCL object kctx made (K25).
 *
 * Every test skips (exit 77) when the opencl platform is not built or no
 * OpenCL device with fine-grained SVM is found.
 *
 * Without the OpenCL library: opencl_no_library.c.
 */
#include "kt.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <kctx/image.h>
#include <kctx/opencl.h>

#include "../cl_api.h" /* the adapter's entries: KCTX_CL_ENTRIES */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One OpenCL context on the first device with fine-grained SVM + atomics. */
typedef struct ocl {
    cl_platform_id plat;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    int kdev; /* kctx's number for (ctx, dev) */
} ocl;

static int ocl_open(ocl *o) {
    memset(o, 0, sizeof *o);
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    if (kctx_get_platform_caps("opencl", &caps) != KCTX_OK || !caps.available) {
        kt_skip("the opencl platform: %s", caps.reason ? caps.reason : "?");
        return 0;
    }
    cl_platform_id plats[4];
    cl_uint np = 0;
    if (clGetPlatformIDs(4, plats, &np) != CL_SUCCESS || np == 0) {
        kt_skip("no OpenCL platform installed");
        return 0;
    }
    for (cl_uint p = 0; p < np && !o->dev; p++) {
        cl_device_id devs[4];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 4, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd && !o->dev; d++) {
            cl_device_svm_capabilities svm = 0;
            clGetDeviceInfo(devs[d], CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, NULL);
            if ((svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) && (svm & CL_DEVICE_SVM_ATOMICS)) {
                o->plat = plats[p];
                o->dev = devs[d];
            }
        }
    }
    if (!o->dev) {
        kt_skip("no OpenCL device with fine-grained SVM and atomics");
        return 0;
    }
    cl_int err = CL_SUCCESS;
    o->ctx = clCreateContext(NULL, 1, &o->dev, NULL, NULL, &err);
    if (!CHECK(o->ctx != NULL)) return 0;
    o->q = clCreateCommandQueueWithProperties(o->ctx, o->dev, NULL, &err);
    if (!CHECK(o->q != NULL)) return 0;
    return CHECK_OK(kctx_opencl_bind(o->ctx, o->dev, &o->kdev));
}

static void ocl_close(ocl *o) {
    kctx_opencl_bind(NULL, NULL, NULL);
    if (o->q) clReleaseCommandQueue(o->q);
    if (o->ctx) clReleaseContext(o->ctx);
}

static float *svm(const ocl *o, size_t n) {
    return clSVMAlloc(o->ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, n * sizeof(float),
                      0);
}

/* An image of one task running `entry` of `source` with (x: tensor,
 * y: tensor, n: scalar); *out malloc'd. */
static int image(const char *source, const char *entry, void **out, size_t *size) {
    kctx_image_builder *b = kctx_image_builder_new("ocl_test");
    kctx_image_builder_param(b, "x", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "y", KCTX_PARAM_TENSOR_OUT);
    kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
    uint32_t fid = 0;
    kctx_image_builder_child(b, "k", entry, &fid);
    kctx_image_builder_child_param(b, "x", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "y", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_variant(b, KCTX_VARIANT_OPENCL_C, source, strlen(source));
    kctx_image_builder_task(b, fid, 2, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, 0);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 1, 0);
    kctx_image_builder_bind(b, KCTX_BIND_SCALAR, 2, 0);
    char msg[256] = "";
    kctx_build_status bs = kctx_image_builder_finish(b, out, size, msg, sizeof msg);
    kctx_image_builder_free(b);
    if (bs != KCTX_BUILD_OK) fprintf(stderr, "    image: %s\n", msg);
    return CHECK(bs == KCTX_BUILD_OK);
}

/* Prepare `source`'s `entry` (the image above) under `id`; must be OK. */
static int prepare_source(kctx_context c, uint64_t id, const char *source, const char *entry) {
    void *img = NULL;
    size_t size = 0;
    int ok = image(source, entry, &img, &size) && CHECK_OK(kctx_prepare(c, id, img, size));
    free(img);
    return ok;
}

static const char k_double[] =
    "KCTX_TASK(k_double, __global const float *x, __global float *y, ulong n) {\n"
    "    KCTX_TASK_GATE();\n"
    "    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = 2.0f * x[i];\n"
    "}\n";

/* A context kernel-initialised on the thread's binding. */
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

static void finish(kctx_context c) {
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
}

static kctx_opencl_live live(int kdev) {
    kctx_opencl_live l = KCTX_OPENCL_LIVE_INIT;
    CHECK_OK(kctx_opencl_live_objects(kdev, &l));
    return l;
}

/* ------------------------------------------------------------------ */

KT_TEST(bind_refuses_what_is_not_a_lent_device) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    int n = -1;
    CHECK_K(kctx_opencl_bind(o.ctx, NULL, &n), KCTX_INVALID_ARGUMENT);
    CHECK_CONTAINS(kctx_thread_last_error(), "device is NULL");
    CHECK_K(kctx_opencl_bind_queue(NULL, &n), KCTX_INVALID_ARGUMENT);
    CHECK_CONTAINS(kctx_thread_last_error(), "queue is NULL");
    /* a device of another context: a sub-device is not one of o.ctx's */
    cl_device_partition_property props[] = {CL_DEVICE_PARTITION_EQUALLY, 1, 0};
    cl_device_id sub = NULL;
    cl_uint nsub = 0;
    if (clCreateSubDevices(o.dev, props, 1, &sub, &nsub) == CL_SUCCESS && nsub >= 1) {
        CHECK_K(kctx_opencl_bind(o.ctx, sub, &n), KCTX_INVALID_ARGUMENT);
        CHECK_CONTAINS(kctx_thread_last_error(), "not a device of the context");
        clReleaseDevice(sub);
    } else {
        fprintf(stderr, "    (this device cannot be partitioned: the foreign-device case is not "
                        "checked here)\n");
    }
    CHECK_EQ(n, -1); /* nothing written on error */
    /* the binding is unchanged by the refusals */
    cl_context bc = NULL;
    int bn = -1;
    CHECK_OK(kctx_opencl_bound(&bc, NULL, &bn));
    CHECK(bc == o.ctx && bn == o.kdev);
    /* binding the same pair again gives the same number; from its queue too */
    CHECK_OK(kctx_opencl_bind_queue(o.q, &n));
    CHECK_EQ(n, o.kdev);
    /* unbinding: the thread has lent nothing */
    CHECK_OK(kctx_opencl_bind(NULL, NULL, NULL));
    CHECK_K(kctx_opencl_bound(NULL, NULL, NULL), KCTX_INVALID_STATE);
    CHECK_CONTAINS(kctx_thread_last_error(), "lent no OpenCL device");
done:
    ocl_close(&o);
}

/* K4: kernel init borrows the thread's binding; without one it is refused
 * with the way out, and nothing is created. */
KT_TEST(kernel_init_needs_a_lent_device_and_borrows_it) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_opencl_live base = live(o.kdev);
    kctx_opencl_bind(NULL, NULL, NULL);
    kctx_context c = 0;
    REQUIRE_OK(kctx_context_create("opencl", &c));
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_PLATFORM_ERROR);
    CHECK_CONTAINS(kctx_thread_last_error(), "kctx_opencl_bind");
    CHECK_PHASE(c, KCTX_PHASE_NEW);
    kctx_opencl_live now = live(o.kdev);
    CHECK_EQ(now.queues, base.queues);
    CHECK_EQ(now.allocations, base.allocations);
    /* bound: init borrows exactly that pair */
    REQUIRE_OK(kctx_opencl_bind(o.ctx, o.dev, NULL));
    CHECK_OK(kctx_kernel_init(c, &cfg));
    int dev = -1;
    CHECK_OK(kctx_get_device(c, &dev));
    CHECK_EQ(dev, o.kdev);
    now = live(o.kdev);
    CHECK_EQ(now.queues, base.queues + 3); /* AICPU, AICore, upload */
    CHECK_EQ(now.events, base.events + 5); /* K11: the five sync events */
    CHECK_EQ(now.programs, base.programs + 1);
    finish(c);
    now = live(o.kdev);
    CHECK(now.queues == base.queues && now.events == base.events && now.programs == base.programs &&
          now.kernels == base.kernels && now.allocations == base.allocations &&
          now.bytes == base.bytes);
done:
    ocl_close(&o);
}

/* K5 / caller streams: a queue of another context, an out-of-order queue
 * and a thread bound to another pair are each refused before anything is
 * enqueued; the right queue computes. */
KT_TEST(launch_accepts_only_in_order_queues_of_the_lent_pair) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    if (!prepare_source(c, 1, k_double, "k_double")) goto close;
    const size_t n = 1000;
    float *x = svm(&o, n), *y = svm(&o, n);
    REQUIRE(x && y);
    for (size_t i = 0; i < n; i++) x[i] = (float)i, y[i] = -1.0f;
    const kctx_arg args[3] = {KCTX_TENSOR((uintptr_t)x, n * 4), KCTX_TENSOR((uintptr_t)y, n * 4),
                              KCTX_SCALAR(n)};
    cl_int err = CL_SUCCESS;
    /* a queue of a context no thread lent */
    cl_context other = clCreateContext(NULL, 1, &o.dev, NULL, NULL, &err);
    cl_command_queue oq = clCreateCommandQueueWithProperties(other, o.dev, NULL, &err);
    CHECK_K(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)oq), KCTX_INVALID_ARGUMENT);
    CHECK_CONTAINS(kctx_thread_last_error(), "no thread lent");
    /* an out-of-order queue of the lent context */
    cl_queue_properties ooo[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    cl_command_queue oo = clCreateCommandQueueWithProperties(o.ctx, o.dev, ooo, &err);
    if (oo) {
        CHECK_K(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)oo), KCTX_INVALID_ARGUMENT);
        CHECK_CONTAINS(kctx_thread_last_error(), "out-of-order");
        clReleaseCommandQueue(oo);
    }
    /* the other context lent too (a second pair), its queue given while the
     * thread is bound to the context's pair: another device for kctx (K5) */
    int other_num = -1;
    REQUIRE_OK(kctx_opencl_bind(other, o.dev, &other_num));
    CHECK(other_num != o.kdev);
    REQUIRE_OK(kctx_opencl_bind(o.ctx, o.dev, NULL));
    CHECK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)oq) != KCTX_OK);
    /* the calling thread bound to the other pair: the context's device is
     * not the thread's (K5) */
    REQUIRE_OK(kctx_opencl_bind(other, o.dev, NULL));
    CHECK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q) != KCTX_OK);
    REQUIRE_OK(kctx_opencl_bind(o.ctx, o.dev, NULL));
    CHECK(y[0] == -1.0f && y[n - 1] == -1.0f); /* nothing ran */
    /* the lent queue: computes */
    for (int r = 0; r < 10; r++) CHECK_OK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q));
    clFinish(o.q);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += y[i] != 2.0f * (float)i;
    CHECK_EQ(bad, 0);
    clReleaseCommandQueue(oq);
    clReleaseContext(other);
    clSVMFree(o.ctx, x);
    clSVMFree(o.ctx, y);
close:
    finish(c);
done:
    ocl_close(&o);
}

/* A source that does not compile and a kernel kctx cannot launch are the
 * image's fault: INCOMPATIBLE_IMAGE with the reason (the build log), and
 * nothing kept. */
KT_TEST(sources_that_do_not_build_or_launch_are_incompatible_images) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    kctx_opencl_live base = live(o.kdev);
    void *img = NULL;
    size_t size = 0;
    if (image("KCTX_TASK(k_bad, __global float *x, __global float *y, ulong n) {\n"
              "    this_is_not_opencl_c;\n}\n",
              "k_bad", &img, &size)) {
        CHECK_K(kctx_prepare(c, 1, img, size), KCTX_INCOMPATIBLE_IMAGE);
        CHECK_CONTAINS(kctx_thread_last_error(), "does not build");
        CHECK_CONTAINS(kctx_thread_last_error(), "CL_BUILD_PROGRAM_FAILURE");
        CHECK_CONTAINS(kctx_thread_last_error(),
                       "this_is_not_opencl_c"); /* the build log names the culprit */
    }
    free(img);
    img = NULL;
    /* a plain kernel without the task header: it builds, but kctx cannot
     * pass it a task's bindings */
    if (image("__kernel void k_plain(__global float *x, __global float *y, ulong n) {}\n"
              "__kernel void kctx_task_v1__k_plain(void) {}\n",
              "k_plain", &img, &size)) {
        CHECK_K(kctx_prepare(c, 2, img, size), KCTX_INCOMPATIBLE_IMAGE);
        CHECK_CONTAINS(kctx_thread_last_error(), "kctx_task_header");
    }
    free(img);
    kctx_opencl_live now = live(o.kdev);
    CHECK(now.programs == base.programs && now.kernels == base.kernels);
    CHECK_PHASE(c, KCTX_PHASE_READY); /* the image's fault poisons nothing */
    finish(c);
done:
    ocl_close(&o);
}

/* Issue 23 item 5: a program the device cannot load a kernel from is the
 * image's fault, one class for every way (platform.h's BAD_MODULE, prepare's
 * INCOMPATIBLE_IMAGE), never UNSUPPORTED or PLATFORM_ERROR; the message keeps
 * OpenCL's error name; nothing is kept and the id stays free. */
static void refused_as_incompatible(const ocl *o, kctx_context c, const char *source,
                                    const char *entry, const char *cl_error, const char *detail) {
    static uint64_t next_id = 100;
    const uint64_t id = next_id++;
    kctx_opencl_live base = live(o->kdev);
    void *img = NULL;
    size_t size = 0;
    if (image(source, entry, &img, &size)) {
        CHECK_K(kctx_prepare(c, id, img, size), KCTX_INCOMPATIBLE_IMAGE);
        CHECK_CONTAINS(kctx_thread_last_error(), cl_error);
        CHECK_CONTAINS(kctx_thread_last_error(), detail);
    }
    free(img);
    kctx_opencl_live now = live(o->kdev);
    CHECK(now.programs == base.programs && now.kernels == base.kernels);
    CHECK_PHASE(c, KCTX_PHASE_READY);
    /* the id is free: a good image takes it */
    prepare_source(c, id, k_double, "k_double");
}

KT_TEST(bad_module_a_kernel_entry_the_program_lacks_is_an_incompatible_image) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    /* the child names k_missing; the program defines k_double only */
    refused_as_incompatible(&o, c, k_double, "k_missing", "CL_INVALID_KERNEL_NAME",
                            "no kernel named 'k_missing'");
    finish(c);
done:
    ocl_close(&o);
}

KT_TEST(bad_module_a_kernel_without_the_task_abi_marker_is_an_incompatible_image) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    /* a task kernel's signature written out by hand: the entry exists, the
     * task ABI's marker kernel (KCTX_TASK defines it) does not */
    refused_as_incompatible(&o, c,
                            "__kernel void k_nomark(kctx_task_header h, __global float *x, "
                            "__global float *y, ulong n) {}\n",
                            "k_nomark", "CL_INVALID_KERNEL_NAME", "kctx_task_v1__k_nomark");
    finish(c);
done:
    ocl_close(&o);
}

KT_TEST(bad_module_a_source_that_does_not_build_is_an_incompatible_image) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    /* a syntax error: CL_BUILD_PROGRAM_FAILURE, with the build log */
    refused_as_incompatible(&o, c,
                            "KCTX_TASK(k_bad, __global float *x, __global float *y, ulong n) {\n"
                            "    KCTX_TASK_GATE();\n    y[0] = undeclared_thing;\n}\n",
                            "k_bad", "CL_BUILD_PROGRAM_FAILURE", "undeclared_thing");
    /* it parses, but a kernel must return void: also refused by the build */
    refused_as_incompatible(&o, c,
                            "__kernel int k_int(__global float *x, __global float *y, ulong n) "
                            "{ return 0; }\n",
                            "k_int", "CL_BUILD_PROGRAM_FAILURE", "line ");
    finish(c);
done:
    ocl_close(&o);
}

/* ---- the adapter's OpenCL calls, counted (kctx_opencl_driver_calls) ---- */

/* Every entry the adapter's table has, and those it never resolves. */
#define NAME_(name) "cl" #name,
static const char *const k_entries[] = {KCTX_CL_ENTRIES(NAME_) KCTX_CL_NEVER(NAME_)};
#undef NAME_
#define NENTRIES (sizeof k_entries / sizeof k_entries[0])

static uint64_t calls(const char *entry) {
    uint64_t n = 0;
    kctx_status st = kctx_opencl_driver_calls(entry, &n);
    if (!CHECK(st == KCTX_OK))
        fprintf(stderr, "    kctx_opencl_driver_calls(%s): %s\n", entry, kctx_thread_last_error());
    return n;
}

static void snapshot(uint64_t out[NENTRIES]) {
    for (size_t i = 0; i < NENTRIES; i++) out[i] = calls(k_entries[i]);
}

/* The calls made between two snapshots equal `want` (entry, count pairs,
 * NULL-terminated); every entry it does not name was not called. */
typedef struct want_calls {
    const char *entry;
    uint64_t n;
} want_calls;

static void check_calls(const uint64_t before[NENTRIES], const uint64_t after[NENTRIES],
                        const want_calls *want, const char *what) {
    for (size_t i = 0; i < NENTRIES; i++) {
        uint64_t expect = 0;
        for (const want_calls *w = want; w->entry; w++)
            if (strcmp(w->entry, k_entries[i]) == 0) expect = w->n;
        if (!CHECK_EQ(after[i] - before[i], expect))
            fprintf(stderr, "    %s: %s called %llu times, expected %llu\n", what, k_entries[i],
                    (unsigned long long)(after[i] - before[i]), (unsigned long long)expect);
    }
}

/* The counters count: a call the adapter makes on purpose shows up, exactly;
 * a name outside the table is NOT_FOUND, so a zero below is an answer. */
KT_TEST(k19_the_opencl_call_counters_count) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    uint64_t n = 0;
    CHECK_K(kctx_opencl_driver_calls("clNoSuchEntry", &n), KCTX_NOT_FOUND);
    CHECK_K(kctx_opencl_driver_calls(NULL, &n), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_opencl_driver_calls("clFinish", NULL), KCTX_INVALID_ARGUMENT);
    uint64_t before[NENTRIES], after[NENTRIES];
    snapshot(before);
    /* bind_queue reads the queue's context and device: two queries */
    CHECK_OK(kctx_opencl_bind_queue(o.q, NULL));
    snapshot(after);
    check_calls(before, after, (const want_calls[]){{"clGetCommandQueueInfo", 2}, {NULL, 0}},
                "kctx_opencl_bind_queue");
    /* the test's own OpenCL calls are not the adapter's */
    snapshot(before);
    clFinish(o.q);
    snapshot(after);
    check_calls(before, after, (const want_calls[]){{NULL, 0}}, "the test's clFinish");
done:
    ocl_close(&o);
}

/* One eager launch of a one-task callable, steady state (docs/opencl.md,
 * "What a launch calls"): the K20 chain's five records (a marker each,
 * returning its event) and four waits (a barrier each, after a flush of
 * the queue of the record it waits for: the spec's rule for an event
 * another queue waits on); three kernels (the acquire step, the task, the
 * finalize step) and their arguments that changed: the acquire's and
 * finalize's parameter blocks and the task's header (the tensors and the
 * scalar are those of the launch before); the five events each record
 * replaces, released; and the caller's queue checked (K5/K18: its context,
 * device and properties — on every launch, since kctx never holds or
 * remembers a caller's queue). Nothing else: no clFinish, clWaitForEvents
 * or clGetEventInfo, no clSVMAlloc, no queue, program or kernel made, no
 * event or queue retained. */
static const want_calls k_launch_calls[] = {{"clGetCommandQueueInfo", 3},
                                            {"clEnqueueMarkerWithWaitList", 5},
                                            {"clFlush", 4},
                                            {"clEnqueueBarrierWithWaitList", 4},
                                            {"clEnqueueNDRangeKernel", 3},
                                            {"clSetKernelArg", 3},
                                            {"clReleaseEvent", 5},
                                            {NULL, 0}};

/* The first launch onto another queue: the same, with the task's other
 * arguments, two tensors (y is another tensor) and n. */
static const want_calls k_first_launch_calls[] = {{"clGetCommandQueueInfo", 3},
                                                  {"clEnqueueMarkerWithWaitList", 5},
                                                  {"clFlush", 4},
                                                  {"clEnqueueBarrierWithWaitList", 4},
                                                  {"clEnqueueNDRangeKernel", 3},
                                                  {"clSetKernelArg", 3},
                                                  {"clSetKernelArgSVMPointer", 1},
                                                  {"clReleaseEvent", 5},
                                                  {NULL, 0}};

/* K19: an eager launch only enqueues (the K20 chain on the caller's queue
 * and kctx's two, and the task kernel), after the K5/K18 preflight reads;
 * no host wait (clFinish, clWaitForEvents), no event or status query
 * (clGetEventInfo), no allocation, no queue or program made, no flush but
 * those of the waits across queues. Pinned call by call, for a launch onto
 * a queue already checked and for the first onto another. */
KT_TEST(k19_an_eager_launch_makes_only_these_opencl_calls) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    if (!prepare_source(c, 1, k_double, "k_double")) goto close;
    const size_t n = 64;
    float *x = svm(&o, n), *y = svm(&o, n), *z = svm(&o, n);
    REQUIRE(x && y && z);
    for (size_t i = 0; i < n; i++) x[i] = (float)i, y[i] = z[i] = 0.0f;
    const kctx_arg args[3] = {KCTX_TENSOR((uintptr_t)x, n * 4), KCTX_TENSOR((uintptr_t)y, n * 4),
                              KCTX_SCALAR(n)};
    CHECK_OK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q)); /* the first, warm */
    clFinish(o.q);
    uint64_t before[NENTRIES], after[NENTRIES];
    kctx_opencl_live l0 = live(o.kdev);
    snapshot(before);
    CHECK_OK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q));
    snapshot(after);
    kctx_opencl_live l1 = live(o.kdev);
    check_calls(before, after, k_launch_calls, "an eager launch");
    CHECK_EQ(l1.enqueues - l0.enqueues, 12); /* the markers, barriers and kernels above */
    clFinish(o.q);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += y[i] != 2.0f * (float)i;
    CHECK_EQ(bad, 0);
    /* another queue of the pair, and y's place taken by z */
    cl_int err = CL_SUCCESS;
    cl_command_queue q2 = clCreateCommandQueueWithProperties(o.ctx, o.dev, NULL, &err);
    REQUIRE(q2 != NULL);
    const kctx_arg args2[3] = {args[0], KCTX_TENSOR((uintptr_t)z, n * 4), args[2]};
    snapshot(before);
    CHECK_OK(kctx_launch(c, 1, args2, 3, (uint64_t)(uintptr_t)q2));
    snapshot(after);
    check_calls(before, after, k_first_launch_calls, "the first launch onto a queue");
    clFinish(q2);
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += z[i] != 2.0f * (float)i;
    CHECK_EQ(bad, 0);
    CHECK_OK(kctx_check(c, NULL));
    clReleaseCommandQueue(q2);
    clSVMFree(o.ctx, x);
    clSVMFree(o.ctx, y);
    clSVMFree(o.ctx, z);
close:
    finish(c);
done:
    ocl_close(&o);
}

/* K5/K18 and "kctx never stores the caller's stream": each launch checks
 * the caller's queue again (three queries), kctx never retains it
 * (clRetainCommandQueue is on the loader's never-call list: its zero count
 * is an answer), and once the launches have returned the caller releases
 * its queue and kctx names it in no later call — close releases only the
 * three queues kctx made. An out-of-order queue is refused each time. */
KT_TEST(k5_a_caller_queue_is_checked_every_launch_and_never_held) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    if (!prepare_source(c, 1, k_double, "k_double")) goto close;
    const size_t n = 16;
    float *x = svm(&o, n), *y = svm(&o, n);
    REQUIRE(x && y);
    for (size_t i = 0; i < n; i++) x[i] = (float)i;
    const kctx_arg args[3] = {KCTX_TENSOR((uintptr_t)x, n * 4), KCTX_TENSOR((uintptr_t)y, n * 4),
                              KCTX_SCALAR(n)};
    cl_int err = CL_SUCCESS;
    cl_command_queue q2 = clCreateCommandQueueWithProperties(o.ctx, o.dev, NULL, &err);
    REQUIRE(q2 != NULL);
    uint64_t r0 = calls("clRetainCommandQueue"), q0 = calls("clGetCommandQueueInfo");
    for (int i = 0; i < 3; i++) CHECK_OK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)q2));
    CHECK_EQ(calls("clRetainCommandQueue") - r0, 0);
    CHECK_EQ(calls("clGetCommandQueueInfo") - q0, 9); /* three per launch */
    const cl_queue_properties ooo[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                                       0};
    cl_command_queue qo = clCreateCommandQueueWithProperties(o.ctx, o.dev, ooo, &err);
    if (qo) {
        for (int i = 0; i < 2; i++) {
            CHECK_K(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)qo), KCTX_INVALID_ARGUMENT);
            CHECK_CONTAINS(kctx_thread_last_error(), "out-of-order");
        }
        clReleaseCommandQueue(qo);
    }
    clFinish(q2);
    clReleaseCommandQueue(q2); /* the caller is done with it: kctx must never name it again */
    CHECK_OK(kctx_check(c, NULL));
    clSVMFree(o.ctx, x);
    clSVMFree(o.ctx, y);
close:;
    const uint64_t rel0 = calls("clReleaseCommandQueue");
    finish(c);
    CHECK_EQ(calls("clReleaseCommandQueue") - rel0, 3); /* kctx's three, nothing of the caller's */
    CHECK_EQ(calls("clRetainCommandQueue"), 0);
done:
    ocl_close(&o);
}

/* K25: close refuses while work is in flight on the context's streams,
 * also work after the latest event an own stream has: a launch whose
 * records failed (every record from AICORE_DONE on, compensation's too)
 * leaves its held task kernel on the AICore stream after that stream's
 * latest event (the launch before's AICORE_DONE, long complete). The
 * stream's query must see the kernel (the adapter adds a marker), so
 * close is BUSY until the task ran, then closes with nothing held. */
KT_TEST(k25_close_sees_a_task_left_after_the_streams_latest_event) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    const kctx_opencl_live base = live(o.kdev);
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    if (!prepare_source(c, 1, k_double, "k_double")) goto close;
    const size_t n = 16;
    float *x = svm(&o, n), *y = svm(&o, n);
    REQUIRE(x && y);
    for (size_t i = 0; i < n; i++) x[i] = (float)i, y[i] = 0.0f;
    const kctx_arg args[3] = {KCTX_TENSOR((uintptr_t)x, n * 4), KCTX_TENSOR((uintptr_t)y, n * 4),
                              KCTX_SCALAR(n)};
    CHECK_OK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q));
    clFinish(o.q);
    cl_int err = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(o.ctx, &err);
    REQUIRE(gate != NULL);
    CHECK_OK(kctx_opencl_test_hold(o.kdev, gate));
    kctx_fault f = KCTX_FAULT_INIT;
    f.op = KCTX_POP_EVENT_RECORD;
    f.nth = 3; /* START, AICORE_START, then AICORE_DONE and every later record */
    f.persistent = 1;
    int fid = -1;
    CHECK_OK(kctx_fault_arm(&f, &fid));
    CHECK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q) != KCTX_OK);
    kctx_fault_clear_all();
    /* the held task has reached its gate; the AICPU stream's acquire and
     * finalize (not held) are given time to finish, so that only the
     * AICore stream is busy */
    int reached = 0;
    for (int i = 0; i < 2000 && !reached; i++) {
        CHECK_OK(kctx_opencl_test_hold_reached(&reached));
        if (!reached) nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    CHECK(reached);
    /* The AICPU stream's acquire and finalize finish on their own: close is
     * refused for them until they have (BUSY has no side effect, K25), then
     * for the held task alone. Polled, not slept for: on a loaded machine
     * they may take long. */
    kctx_status busy = KCTX_BUSY;
    for (int i = 0; i < 10000; i++) {
        busy = kctx_close(c);
        if (busy != KCTX_BUSY || strstr(kctx_thread_last_error(), "AICPU") == NULL) break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    CHECK_EQ(busy, KCTX_BUSY); /* the held task is on the AICore stream */
    CHECK_CONTAINS(kctx_thread_last_error(), "AICore");
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
    kctx_status st = KCTX_BUSY;
    for (int i = 0; i < 2000 && st == KCTX_BUSY; i++) {
        st = kctx_close(c);
        if (st == KCTX_BUSY) nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    CHECK_OK(st);
    kctx_opencl_test_hold_clear();
    clReleaseEvent(gate);
    CHECK_OK(kctx_destroy(c));
    const kctx_opencl_live after = live(o.kdev);
    CHECK_EQ(after.queues, base.queues);
    CHECK_EQ(after.events, base.events);
    CHECK_EQ(after.programs, base.programs);
    CHECK_EQ(after.kernels, base.kernels);
    CHECK_EQ(after.allocations, base.allocations);
    clSVMFree(o.ctx, x);
    clSVMFree(o.ctx, y);
    goto done;
close:
    finish(c);
done:
    ocl_close(&o);
}

/* ---- issue 23 item 1: a NULL or empty tensor never reaches the driver ----
 * K18: refused with INVALID_ARGUMENT before anything is enqueued (counted:
 * no enqueue, no kernel argument set, no flush). The kernel is given n = 0,
 * so that a launch the check should have refused cannot crash inside the
 * driver: the test then fails on the status and the counts. */
static void refused_before_any_enqueue(const ocl *o, kctx_context c, const kctx_arg args[3],
                                       const char *what) {
    static const char *const k_enqueues[] = {"clEnqueueNDRangeKernel",
                                             "clEnqueueMarkerWithWaitList",
                                             "clEnqueueBarrierWithWaitList",
                                             "clEnqueueSVMMemcpy",
                                             "clEnqueueSVMMemFill",
                                             "clSetKernelArgSVMPointer",
                                             "clSetKernelArg",
                                             "clFlush"};
    uint64_t before[8], after[8];
    for (int i = 0; i < 8; i++) before[i] = calls(k_enqueues[i]);
    kctx_opencl_live l0 = live(o->kdev);
    kctx_status st = kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o->q);
    if (!CHECK_EQ(st, KCTX_INVALID_ARGUMENT))
        fprintf(stderr, "    %s: %s (%s)\n", what, kctx_status_name(st), kctx_thread_last_error());
    for (int i = 0; i < 8; i++) {
        after[i] = calls(k_enqueues[i]);
        if (!CHECK_EQ(after[i] - before[i], 0))
            fprintf(stderr, "    %s: %s called %llu times\n", what, k_enqueues[i],
                    (unsigned long long)(after[i] - before[i]));
    }
    CHECK_EQ(live(o->kdev).enqueues, l0.enqueues);
    clFinish(o->q);
    CHECK_PHASE(c, KCTX_PHASE_READY); /* a refusal changes nothing (K18) */
}

/* The core's NULL-tensor check (src/core/launch.c, every platform) keeps a
 * NULL SVM address from the driver: before it, the launch was accepted and
 * its chain enqueued, and a kernel reading the address crashed PoCL's
 * worker (issue 23 item 1). */
KT_TEST(k18_a_null_svm_address_is_refused_before_any_enqueue) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    if (!prepare_source(c, 1, k_double, "k_double")) goto close;
    float *y = svm(&o, 4);
    REQUIRE(y);
    y[0] = -1.0f;
    /* a NULL SVM address as x (what a released framework buffer reads) */
    const kctx_arg null_x[3] = {KCTX_TENSOR(0, 16), KCTX_TENSOR((uintptr_t)y, 16), KCTX_SCALAR(0)};
    refused_before_any_enqueue(&o, c, null_x, "a NULL tensor");
    CHECK(y[0] == -1.0f);
    /* the same launch with a real x goes through */
    const kctx_arg good[3] = {KCTX_TENSOR((uintptr_t)y, 16), KCTX_TENSOR((uintptr_t)y, 16),
                              KCTX_SCALAR(0)};
    CHECK_OK(kctx_launch(c, 1, good, 3, (uint64_t)(uintptr_t)o.q));
    clFinish(o.q);
    clSVMFree(o.ctx, y);
close:
    finish(c);
done:
    ocl_close(&o);
}

KT_TEST(k18_a_zero_length_tensor_is_refused_before_any_enqueue) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    if (!prepare_source(c, 1, k_double, "k_double")) goto close;
    float *x = svm(&o, 4), *y = svm(&o, 4);
    REQUIRE(x && y);
    const kctx_arg empty_x[3] = {KCTX_TENSOR((uintptr_t)x, 0), KCTX_TENSOR((uintptr_t)y, 16),
                                 KCTX_SCALAR(0)};
    refused_before_any_enqueue(&o, c, empty_x, "a zero-length tensor");
    clSVMFree(o.ctx, x);
    clSVMFree(o.ctx, y);
close:
    finish(c);
done:
    ocl_close(&o);
}

/* K35 on OpenCL: a task that fails sets the context's device error word
 * (an OpenCL kernel cannot fail its command: the queue completes); check
 * reports DEVICE_ERROR naming the task and poisons; later launches are
 * refused. */
KT_TEST(a_failing_task_reaches_check_through_the_error_word) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    if (!prepare_source(c, 1,
                        "KCTX_TASK(k_fail, __global float *x, __global float *y, ulong n) {\n"
                        "    KCTX_TASK_GATE();\n"
                        "    if (n == 0) { KCTX_TASK_FAIL(); return; }\n"
                        "    y[0] = x[0];\n}\n",
                        "k_fail"))
        goto close;
    float *x = svm(&o, 4), *y = svm(&o, 4);
    REQUIRE(x && y);
    x[0] = 5.0f;
    y[0] = 0.0f;
    kctx_arg args[3] = {KCTX_TENSOR((uintptr_t)x, 16), KCTX_TENSOR((uintptr_t)y, 16),
                        KCTX_SCALAR(1)};
    CHECK_OK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q));
    CHECK_EQ(clFinish(o.q), CL_SUCCESS);
    CHECK(y[0] == 5.0f);
    CHECK_OK(kctx_check(c, NULL));
    args[2] = KCTX_SCALAR(0);
    CHECK_OK(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q));
    CHECK_EQ(clFinish(o.q), CL_SUCCESS); /* the queue itself completes */
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_K(kctx_check(c, &rep), KCTX_DEVICE_ERROR);
    CHECK_EQ(rep.error_detail, 0);
    CHECK_PHASE(c, KCTX_PHASE_POISONED);
    args[2] = KCTX_SCALAR(1);
    y[0] = 0.0f;
    CHECK_K(kctx_launch(c, 1, args, 3, (uint64_t)(uintptr_t)o.q), KCTX_POISONED);
    clFinish(o.q);
    CHECK(y[0] == 0.0f);
    clSVMFree(o.ctx, x);
    clSVMFree(o.ctx, y);
close:
    finish(c);
done:
    ocl_close(&o);
}

/* Binding is per thread: a thread that lent nothing cannot launch (K5 has
 * no device to compare), one that binds the same pair can. */
static kctx_context g_ctx;
static ocl *g_o;
static kctx_arg g_args[3];
static kctx_status g_unbound, g_bound;

static void *other_thread(void *arg) {
    (void)arg;
    g_unbound = kctx_launch(g_ctx, 1, g_args, 3, (uint64_t)(uintptr_t)g_o->q);
    kctx_opencl_bind_queue(g_o->q, NULL);
    g_bound = kctx_launch(g_ctx, 1, g_args, 3, (uint64_t)(uintptr_t)g_o->q);
    kctx_opencl_bind(NULL, NULL, NULL);
    return NULL;
}

KT_TEST(each_thread_binds_before_it_launches) {
    ocl o;
    if (!ocl_open(&o)) goto done;
    kctx_context c = kernel_ctx();
    if (!c) goto done;
    if (!prepare_source(c, 1, k_double, "k_double")) goto close;
    float *x = svm(&o, 8), *y = svm(&o, 8);
    REQUIRE(x && y);
    for (int i = 0; i < 8; i++) x[i] = (float)i, y[i] = 0.0f;
    g_ctx = c;
    g_o = &o;
    g_args[0] = KCTX_TENSOR((uintptr_t)x, 32);
    g_args[1] = KCTX_TENSOR((uintptr_t)y, 32);
    g_args[2] = KCTX_SCALAR(8);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, other_thread, NULL) == 0);
    pthread_join(t, NULL);
    CHECK_K(g_unbound, KCTX_INVALID_STATE); /* K5: no device of the context's */
    CHECK_OK(g_bound);
    /* only "lent nothing" (PLATFORM_ERROR) becomes INVALID_STATE: any other
     * failure of the device read keeps its status (a fault sweep sees what
     * it injected) */
    kctx_fault f = KCTX_FAULT_INIT;
    f.op = KCTX_POP_BOUND_DEVICE;
    f.error = KCTX_OUT_OF_MEMORY;
    int fid = -1;
    REQUIRE_OK(kctx_fault_arm(&f, &fid));
    CHECK_K(kctx_launch(c, 1, g_args, 3, (uint64_t)(uintptr_t)o.q), KCTX_OUT_OF_MEMORY);
    kctx_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_READY);
    clFinish(o.q);
    CHECK(y[7] == 14.0f);
    clSVMFree(o.ctx, x);
    clSVMFree(o.ctx, y);
close:
    finish(c);
done:
    ocl_close(&o);
}
