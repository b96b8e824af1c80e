/*
 * kctx/opencl.h — what is OpenCL-specific about the `opencl` platform
 * (docs/opencl.md is the guide).
 *
 * OpenCL has no "current device" of a thread: a framework owns a cl_context,
 * its devices and its command queues, and tells kctx which of them it lends.
 * A thread names the (cl_context, cl_device_id) it lends with
 * kctx_opencl_bind (or derives both from one of its queues with
 * kctx_opencl_bind_queue); that binding plays the part of CUDA's current
 * device for the calling thread: kctx_kernel_init borrows it (K4) and every
 * later entry that checks the device (K5: launch, check, close) compares
 * the calling thread's binding with the context's. A thread that calls kctx
 * on an OpenCL context binds first.
 *
 * kctx numbers the lent (context, device) pairs in the order they are first
 * bound, from 0, for the life of the process: that number is the `device`
 * of kctx's API (kctx_get_device, kctx_context_caps) and the K6 claim is
 * per pair. A pair stays known after its context is released; binding a new
 * context at a recycled address reuses its number.
 *
 * Caller streams (kctx_launch's caller_stream) are in-order
 * cl_command_queue handles of the lent context and device, passed as
 * (uint64_t)(uintptr_t)queue. A queue of a context or device no thread
 * lent is refused (INVALID_ARGUMENT, naming the queue), as is an
 * out-of-order queue; a queue of another lent pair is another device (K5).
 * A thread that lent nothing gets PLATFORM_ERROR from kernel init and
 * launch, saying to call kctx_opencl_bind. There is no stream 0 and no
 * capture (the capture rules are not applicable on OpenCL). Handles must be
 * live OpenCL objects: OpenCL cannot check a stale or made-up pointer (its
 * ICD loader dereferences it).
 *
 * Device addresses (kctx_arg tensors) are shared virtual memory pointers
 * (clSVMAlloc in the lent context, pyopencl.SVM), passed as
 * (uint64_t)(uintptr_t)ptr. The lent device must support fine-grained
 * buffer SVM with atomics (kctx's runtime image is read and written by the
 * host while kernels run); kctx_opencl_bind refuses a device without it
 * (UNSUPPORTED).
 *
 * The OpenCL library is loaded at run time (dlopen of "libOpenCL.so.1", or
 * the file KCTX_OPENCL_LIBRARY names): libkctx does not depend on OpenCL.
 * Without it the platform is unavailable and these functions return
 * UNSUPPORTED with the reason.
 *
 * Kernels: callable images carry an OPENCL_C variant (source), built at
 * prepare for the lent device. The task ABI's OpenCL C form (task kernels
 * receive a kctx_task_header by value, then one argument per binding:
 * `__global` pointers for tensors, `ulong` for scalars) is in
 * include/kctx/task_abi_opencl.h, which kctx puts before every source it
 * builds; a source that does not build makes prepare fail with
 * INCOMPATIBLE_IMAGE and the build log in the message.
 */
#ifndef KCTX_OPENCL_H
#define KCTX_OPENCL_H

#include <kctx/kctx.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The OpenCL handle types, declared as OpenCL's headers declare them
 * (cl_context is `struct _cl_context *`), so this header needs none. */
struct _cl_context;
struct _cl_device_id;
struct _cl_command_queue;
struct _cl_event;

/* Lend (context, device) to the calling thread (see above). `device` (may
 * be NULL) receives kctx's number for the pair. Passing context NULL ends
 * the calling thread's binding.
 * Errors: INVALID_ARGUMENT (device NULL, or not a device of the context);
 * UNSUPPORTED (the OpenCL library is not loaded here — the reason in the
 * message — or the device lacks fine-grained SVM with atomics);
 * CAPACITY (more than KCTX_OPENCL_MAX_DEVICES pairs); PLATFORM_ERROR (an
 * OpenCL query failed). The binding is unchanged on error. */
KCTX_API kctx_status kctx_opencl_bind(struct _cl_context *context, struct _cl_device_id *device,
                                      int *kctx_device);

/* Lend the context and device of `queue` to the calling thread, as
 * kctx_opencl_bind. Errors: those of kctx_opencl_bind; INVALID_ARGUMENT
 * (queue NULL or not a queue). */
KCTX_API kctx_status kctx_opencl_bind_queue(struct _cl_command_queue *queue, int *kctx_device);

/* The calling thread's binding: its pair and kctx's number for it.
 * Errors: INVALID_STATE (the thread has lent nothing). Any out-pointer may
 * be NULL. */
KCTX_API kctx_status kctx_opencl_bound(struct _cl_context **context, struct _cl_device_id **device,
                                       int *kctx_device);

/* The most (context, device) pairs one process can lend. */
#define KCTX_OPENCL_MAX_DEVICES 64

/* The OpenCL objects kctx holds on a lent pair right now (every kernel
 * context on it together), and what it has done there since the process
 * started: for leak checks (a closed context leaves nothing) and for the
 * "nothing per launch" counts (K11: kctx's own objects; the cl_event each
 * enqueue makes is the driver's, counted in `enqueues`). */
typedef struct kctx_opencl_live {
    size_t size;                /* sizeof(kctx_opencl_live) */
    uint64_t queues;            /* command queues kctx created */
    uint64_t events;            /* kctx's sync events (each holds at most one cl_event) */
    uint64_t programs;          /* built programs (the runtime's and callables' modules) */
    uint64_t kernels;           /* kernel objects */
    uint64_t allocations;       /* SVM allocations */
    uint64_t bytes;             /* their bytes */
    uint64_t total_allocations; /* SVM allocations made since the process started */
    uint64_t enqueues;          /* commands enqueued since the process started */
} kctx_opencl_live;
#define KCTX_OPENCL_LIVE_INIT \
    { sizeof(kctx_opencl_live), 0, 0, 0, 0, 0, 0, 0, 0 }

/* Errors: INVALID_ARGUMENT (out NULL or its size wrong, or kctx_device not
 * a lent pair's number). */
KCTX_API kctx_status kctx_opencl_live_objects(int kctx_device, kctx_opencl_live *out);

/* How many times libkctx has called the OpenCL entry `entry` ("clFinish",
 * "clEnqueueNDRangeKernel", ...) since the process started, from every
 * thread and for every pair: every call the opencl platform makes goes
 * through one counted table (platform/opencl/cl_api.h), so a zero is an
 * answer; the caller's own OpenCL calls are not counted. Names are the
 * table's entries and the entries kctx never calls (clWaitForEvents), whose
 * count stays 0 (K4, K19: a launch only enqueues; platform/opencl/tests/test_opencl.c
 * pins a launch's calls). Errors: INVALID_ARGUMENT (entry or count NULL);
 * NOT_FOUND (an entry of neither list); UNSUPPORTED (no OpenCL library). */
KCTX_API kctx_status kctx_opencl_driver_calls(const char *entry, uint64_t *count);

/* ---- test support: holding a launch in flight ------------------------
 * The conformance suite's holds (src/conformance/fw.h, FW_HOLD_FIRST_TASK)
 * on a platform whose kernels cannot be paused from outside: arm a hold, and
 * the next task kernel kctx enqueues on lent pair `kctx_device` (any
 * context) also waits for `gate` (a user event the caller made with
 * clCreateUserEvent and completes to release it). One hold at a time; it
 * costs a launch one atomic load when none is armed.
 * Errors: INVALID_ARGUMENT (gate NULL, an unknown pair); BUSY (a hold is
 * armed or held already: clear it first). */
KCTX_API kctx_status kctx_opencl_test_hold(int kctx_device, struct _cl_event *gate);
/* *reached = 1 once the held kernel is enqueued and everything before it on
 * its queue has completed (it waits only for the gate); 0 before. */
KCTX_API kctx_status kctx_opencl_test_hold_reached(int *reached);
/* Disarm: a hold not yet taken is dropped; a taken one is forgotten (the
 * caller still completes its gate). */
KCTX_API kctx_status kctx_opencl_test_hold_clear(void);

#ifdef __cplusplus
}
#endif
#endif /* KCTX_OPENCL_H */
