/*
 * ocl_internal.h — what the opencl platform's three files share
 * (adapter.c: the ops table; binding.c: kctx/opencl.h; test_hold.c: the
 * test support): the lent (context, device) pairs, kctx's own streams, and
 * the hold the launch checks.
 */
#ifndef KCTX_OPENCL_OCL_INTERNAL_H
#define KCTX_OPENCL_OCL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 300
#include "cl_api.h"

#include <kctx/opencl.h>
#include <kctx/platform.h>

#include <pthread.h>
#include <stdatomic.h>

/* OpenCL's smallest kernel parameter limit (CL_DEVICE_MAX_PARAMETER_SIZE is
 * at least 1024 on a full profile device); a device reports its own. */
#define OCL_MAX_PARAMS_SIZE 1024u

/* ---- the lent (context, device) pairs (adapter.c defines them) ---- */

typedef struct ocl_dev {
    cl_context ctx;
    cl_device_id dev;
    kctx_device_info info;
} ocl_dev;

/* What kctx holds on each pair (kctx_opencl_live_objects). */
typedef struct ocl_counts {
    _Atomic uint64_t queues, events, programs, kernels, allocations, bytes;
    _Atomic uint64_t total_allocations, enqueues;
} ocl_counts;

extern pthread_mutex_t kctx__ocl_mu; /* taken to add a pair (and by the ops' lists) */
extern ocl_dev kctx__ocl_devs[KCTX_OPENCL_MAX_DEVICES];
extern ocl_counts kctx__ocl_counts[KCTX_OPENCL_MAX_DEVICES];
extern _Atomic int kctx__ocl_ndevs;
extern _Thread_local int kctx__ocl_bound; /* the calling thread's pair, or -1 */

/* The pair's number, or -1 (binding.c). */
int kctx__ocl_lookup_pair(cl_context ctx, cl_device_id dev);

/* ---- kctx's own streams (adapter.c) ---- */

/* What a query or a sync of an own stream waits for (adapter.c, "own
 * streams"): `last`, the event of the latest command enqueued there that
 * returned one, covers the stream's work when no command without an event
 * (a kernel, a barrier: counted in `plain`) was enqueued after it. */
typedef struct ocl_stream {
    cl_command_queue q;
    int dev;            /* the pair it belongs to */
    pthread_mutex_t mu; /* last, last_owned, covered; held across an event-returning enqueue */
    cl_event last;      /* NULL: no event-returning command yet */
    int last_owned;     /* 1: the stream's own reference; 0: a record's, held by its kctx event */
    uint64_t covered;   /* `plain` when `last` was enqueued */
    _Atomic uint64_t plain; /* commands enqueued without an event, counted after each */
} ocl_stream;

/* The own stream whose queue is s, or NULL (a caller's queue). */
ocl_stream *kctx__ocl_own_stream(kctx_pstream s);

/* ---- test support (test_hold.c) ---- */

/* 1 while a test's hold is armed: the launch then asks test_hold.c. */
extern _Atomic int kctx__ocl_hold_armed;
/* Called from launch (one at a time per function), before a task kernel's enqueue on
 * s: the gate it must also wait for, or NULL. */
cl_event kctx__ocl_take_hold(kctx_pstream s);

#endif
