/*
 * fw.h — the framework driver: what the capture conformance suite needs from
 * the FRAMEWORK side of a platform, the way IREE's HAL conformance tests are
 * written once against a device interface and instantiated per driver.
 *
 * kctx runs inside a framework that owns the device, its streams and its
 * capture. The suite plays that framework: it creates streams and device
 * buffers with the platform's own runtime API, captures kctx launches into
 * graphs and replays them — through this table, so the suite itself never
 * names a platform. Each platform's driver fills it with its own runtime's
 * calls (platform/sim/fw_sim.c: the sim's runtime API, kctx/sim.h; CUDA's
 * driver API; ACL), declared with the platform (FW_DRIVERS) and reached
 * through the suite (suite_driver, suite.h). What several drivers share is
 * the suite's: the graph pool's arena below (fw_pool.c) and the hooks of
 * drivers whose devices are sim devices (fw_simdev.h).
 *
 * Three kinds of entries:
 *  - REQUIRED: the operations every framework has (streams, memory, copies,
 *    events). A driver must fill them all.
 *  - CAPTURE, as a group: capture in global mode and graphs. A platform
 *    without capture (OpenCL) leaves them all NULL; the probes that need
 *    capture (PROBE_NEEDS_CAPTURE in probe_list.h) are then N/A, as an
 *    expected consequence, and every probe that does not still runs.
 *  - GRAPH MEMORY POOL, as a group: the framework's own stream-ordered
 *    allocations inside a capture (fw_has_pool); NULL: the pool probe is
 *    N/A, and must be on the platform's expected list.
 *  - OPTIONAL TEST HOOKS: holds, fatal devices, owner resets, counters,
 *    fault injection, device lifecycle counters, device information. A hook
 *    may be NULL, or return FW_NA at run time, when the platform cannot do
 *    it; a probe that depends on it then reports N/A with the reason
 *    instead of failing (never a silent pass), and that N/A must be on the
 *    platform's expected list (suite.h).
 *
 * The same table is the framework side of `kctx demo` (tools/kctx), so the
 * demo runs on every platform that has a driver.
 *
 * Every entry returns an fw_status; on anything but FW_OK, last_error()
 * gives the platform's own message (valid until the thread's next driver
 * call). Drivers are process-wide (like platform instances) and every entry
 * is safe to call from any thread. Device memory is addressed by 64-bit
 * device addresses, the same values kctx_arg tensors carry.
 */
#ifndef KCTX_CONFORMANCE_FW_H
#define KCTX_CONFORMANCE_FW_H

#include <kctx/kctx.h>

#include <stddef.h>
#include <stdint.h>

typedef uint64_t fw_stream;
typedef uint64_t fw_event;
typedef uint64_t fw_graph;
typedef uint64_t fw_exec;
typedef uint64_t fw_devptr;
typedef uint64_t fw_pool;

#define FW_STATUS_MAP(X)                                                                \
    X(OK, "success")                                                                    \
    X(NA, "not available on this platform or build")                                    \
    X(ERROR, "the platform call failed")                                                \
    X(TIMEOUT, "a bounded wait gave up; the work is still pending")                     \
    X(NOT_READY, "work is still pending")                                               \
    X(DEVICE_ERROR, "work failed on the device (sticky stream error)")                  \
    X(DEVICE_LOST, "the device is lost")                                                \
    X(INVALID_HANDLE, "not a live handle (destroyed, or gone with a device reset)")     \
    X(CAPTURE_ISOLATION, "a wait inside a capture on an event recorded outside it")     \
    X(CAPTURE_INVALIDATED, "the capture was invalidated")                               \
    X(CAPTURE_UNJOINED, "a forked stream was not joined back before the capture ended") \
    X(CAPTURE_UNSUPPORTED, "operation not permitted while a capture restricts the thread")

typedef enum fw_status {
#define FW_STATUS_ENUM_(name, msg) FW_##name,
    FW_STATUS_MAP(FW_STATUS_ENUM_)
#undef FW_STATUS_ENUM_
} fw_status;

/* "FW_TIMEOUT", ... */
const char *fw_status_name(fw_status s);

/* Live objects and memory of a device, for the leak checks that end every
 * probe. */
typedef struct fw_counts {
    uint64_t streams, events, modules, graphs, graph_execs, hooks_pending;
    uint64_t allocations, bytes;
} fw_counts;

/* Where a hold stops device work (provably in flight, no sleeping). The
 * probes ask for "the next launch of a context, held right after its
 * acquire step" (support.h, rig_arm_after_acquire), which is a different
 * point under each execution strategy:
 *  - RESIDENT: FW_HOLD_SCHEDULER, the runtime's AICPU program that follows
 *    the acquire step (its workers wait for it: no task has run);
 *  - HOST_ORDERED: FW_HOLD_FIRST_TASK, the launch's first task kernel,
 *    which the AICore stream runs right after the acquire step.
 * Either way the held launch holds its context's launch guard if its
 * acquire step took it, and none of its tasks has run. */
typedef enum fw_hold_point {
    /* the next execution of context `ctx`'s scheduler program (RESIDENT) */
    FW_HOLD_SCHEDULER = 1,
    /* the next execution of an asynchronous host-to-device copy on `device` */
    FW_HOLD_COPY = 2,
    /* HOST_ORDERED: the first task kernel of the next launch of `ctx`: the
     * second kernel the device runs after arming (the acquire step is the
     * first), so nothing else may run kernels on the device meanwhile */
    FW_HOLD_FIRST_TASK = 3
} fw_hold_point;

/* Capture modes (CUDA's cudaStreamCaptureMode): which "potentially unsafe"
 * calls (allocations, frees, module loads, synchronous copies), made from
 * which threads, invalidate a capture. GLOBAL: such a call from any thread
 * whose own mode is GLOBAL; THREAD_LOCAL: from the capturing thread;
 * RELAXED: none. A thread's own mode (cudaThreadExchangeStreamCaptureMode)
 * says which captures its calls may invalidate. */
typedef enum fw_capture_mode {
    FW_CAPTURE_GLOBAL = 0,
    FW_CAPTURE_THREAD_LOCAL = 1,
    FW_CAPTURE_RELAXED = 2
} fw_capture_mode;

typedef struct fw_driver {
    const char *name;     /* the driver ("sim") */
    const char *platform; /* the kctx platform name for kctx_context_create */
    const char *(*last_error)(void);

    /* ---- REQUIRED --------------------------------------------------- */
    /* The calling thread's current device; make `device` current for the
     * calling thread (the framework owns its threads and devices). */
    fw_status (*current_device)(int *device);
    fw_status (*set_device)(int device);

    fw_status (*stream_create)(fw_stream *s);
    fw_status (*stream_destroy)(fw_stream s);
    /* Wait for everything enqueued so far, at most timeout_ms: FW_OK,
     * FW_TIMEOUT, or the stream's (sticky) error. */
    fw_status (*stream_sync)(fw_stream s, uint32_t timeout_ms);
    /* FW_OK when idle, FW_NOT_READY while work is pending, else its error. */
    fw_status (*stream_query)(fw_stream s);

    /* Device memory of the current device. upload/download are synchronous
     * (never inside a capture); fill and copy are asynchronous stream
     * operations (capturable). */
    fw_status (*mem_alloc)(size_t bytes, fw_devptr *p);
    fw_status (*mem_free)(fw_devptr p);
    fw_status (*upload)(fw_devptr dst, const void *src, size_t bytes);
    fw_status (*download)(void *dst, fw_devptr src, size_t bytes);
    fw_status (*fill_async)(fw_devptr dst, uint8_t value, size_t bytes, fw_stream s);
    fw_status (*copy_async)(fw_devptr dst, fw_devptr src, size_t bytes, fw_stream s);

    /* Events (sync-only), for the capture-isolation negative control. */
    fw_status (*event_create)(fw_event *e);
    fw_status (*event_destroy)(fw_event e);
    fw_status (*event_record)(fw_event e, fw_stream s);
    fw_status (*stream_wait_event)(fw_stream s, fw_event e);

    /* ---- CAPTURE (all or none: fw_has_capture) ----------------------- */
    /* Capture in GLOBAL mode (the strictest, what frameworks use); end
     * returns the graph. *capturing: 1 while `s` is part of an active or
     * invalidated capture (the query legal during capture). */
    fw_status (*begin_capture)(fw_stream s);
    fw_status (*end_capture)(fw_stream s, fw_graph *g);
    fw_status (*capture_status)(fw_stream s, int *capturing);
    fw_status (*graph_instantiate)(fw_graph g, fw_exec *x);
    fw_status (*graph_launch)(fw_exec x, fw_stream s);
    fw_status (*graph_destroy)(fw_graph g);
    fw_status (*exec_destroy)(fw_exec x);

    /* ---- OPTIONAL TEST HOOKS (NULL or FW_NA: not available) ---------- */
    /* Number of work nodes (kernels, copies, fills, host functions). */
    fw_status (*graph_node_count)(fw_graph g, size_t *n);

    /* Holds: arm one (`ctx` only for FW_HOLD_SCHEDULER), wait until the
     * held work is blocked in it, let it run; release_all also disarms. */
    fw_status (*hold_arm)(fw_hold_point point, int device, kctx_context ctx, int *hold);
    fw_status (*hold_wait_reached)(int hold, uint32_t timeout_ms);
    fw_status (*hold_release)(int hold);
    fw_status (*hold_release_all)(void);

    /* Make a device lost (fatal), and the owner's reset of a device: every
     * object of the device is gone afterwards, handles become stale. */
    fw_status (*make_fatal)(int device);
    fw_status (*owner_reset)(int device);

    /* A device-side failure of the next fill (memset) the device executes
     * after arming, on `device`: the fill's enqueue succeeds, the fill
     * itself fails ON THE DEVICE and writes nothing, and its stream takes
     * the error (FW_DEVICE_ERROR at its sync, sticky), as from a kernel
     * that reports a failure. fill_fault_hits: 1 once it fired, else 0;
     * fill_fault_clear disarms every such fault. For the K11 probe of a
     * kernel init whose first device work fails on the device (kctx's
     * init launches no kernel: its first device work is the runtime
     * image's fill on the AICPU stream, then copies, all waited for). */
    fw_status (*fill_fault_arm)(int device, int *fault);
    fw_status (*fill_fault_hits)(int fault, uint64_t *hits);
    fw_status (*fill_fault_clear)(void);

    /* Counters. live_counts: objects and memory alive on the device.
     * device_allocs: device allocation calls made on the device by anyone
     * since the process started. device_enqueues: operations enqueued on
     * any stream of the device (kernels, copies, fills, host functions,
     * event records and waits) by anyone — graph launches not included. */
    fw_status (*live_counts)(int device, fw_counts *c);
    fw_status (*device_allocs)(int device, uint64_t *n);
    fw_status (*device_enqueues)(int device, uint64_t *n);

    /* (Fault injection and call counting are not the driver's: the fault
     * sweeps use kctx's own seam, kctx_fault_arm and
     * kctx_thread_platform_calls, so they run on every platform; see
     * support.h, seam_*.) */

    /* The device lifecycle counters, for the K4 probe (a kernel context
     * never initialises, finalises, sets or resets a device); NULL: the
     * platform exposes none. */
    const struct fw_lifecycle *lifecycle;

    /* A device's name and compute-core count, for reports (kctx demo). */
    fw_status (*device_info)(int device, char *name, size_t name_size, unsigned *cores);
    /* How many devices the framework can lend (0 when its runtime cannot be
     * used: last_error says why), for listings (kctx platforms). NULL:
     * it cannot say. */
    int (*device_count)(void);

    /* The failing layer below kctx's adapter (tests/common/fault_layer.h),
     * when the runtime library kctx loaded is one: its control table
     * (fault_control.h); NULL
     * (the hook, or its answer) otherwise. A user's runtime never has one:
     * the driver sweeps (probes_driver.c) are then N/A as a capability
     * (PROBE_NEEDS_FAULT_LAYER), like capture; the test runs put the layer
     * in front and set KCTX_FAULT_LAYER_REQUIRED=1, so that a layer gone
     * missing fails them instead. */
    const struct kfl_control *(*fault_layer)(void);

    /* Capture modes beyond begin_capture's GLOBAL: begin a capture in
     * `mode`; exchange the calling thread's own capture mode (*mode gets
     * the old one). NULL: the platform captures in global mode only / has
     * no per-thread mode (the cold-capture probe then checks global mode
     * only, NOT CHECKED for the rest). */
    fw_status (*begin_capture_mode)(fw_stream s, fw_capture_mode mode);
    fw_status (*exchange_capture_mode)(fw_capture_mode *mode);

    /* ---- GRAPH MEMORY POOL (optional, all or none: fw_has_pool) ------ */
    /* The framework's own graph memory pool: stream-ordered device
     * allocations a framework makes while it captures (torch's private
     * graph pool, CUDA's graph allocations), so that a captured graph's
     * outputs and intermediates get their addresses inside the capture.
     * pool_create reserves `bytes` on the current device (outside any
     * capture: it may allocate); pool_alloc and pool_free are legal inside
     * a capture in every capture mode — they make no restricted runtime
     * call — and are stream-ordered: a block freed on stream s is handed
     * out again only to a later pool_alloc on s, whose work s orders after
     * everything enqueued on s before the free (a replayed graph keeps
     * that order, since it is the graph's own). Pool memory stays valid
     * for every graph captured with it until pool_destroy, which comes
     * after those graphs are destroyed. On failure pool_last_error gives
     * the message. Every driver with capture fills the group with the
     * arena below (fw_pool.c) over its own mem_alloc/mem_free: the
     * arena is what torch's caching allocators do for a graph's private
     * pool (sub-allocation from reserved segments; torch_npu's NPUGraph
     * the same), and neither the sim, the CUDA driver double nor the ACL
     * double offers a stream-ordered allocation usable in a capture
     * (cuMemAllocAsync graph allocation nodes are not modelled). */
    fw_status (*pool_create)(size_t bytes, fw_pool *pool);
    fw_status (*pool_alloc)(fw_pool pool, size_t bytes, fw_stream s, fw_devptr *p);
    fw_status (*pool_free)(fw_pool pool, fw_devptr p, fw_stream s);
    fw_status (*pool_destroy)(fw_pool pool);
    const char *(*pool_last_error)(void);

    /* How many work nodes (as graph_node_count counts them) of graph g were
     * captured on each of streams[0..n): counts[i]; 0 for a stream that
     * took no part in the capture (handles compared by value: a stream may
     * be gone since). NULL or FW_NA: the platform's graphs do not record
     * the streams their nodes came from (a real CUDA graph, an ACL model). */
    fw_status (*graph_stream_nodes)(fw_graph g, const fw_stream *streams, size_t n, size_t *counts);

    /* 1: a task kernel's failure stays on the device: it is recorded in
     * the runtime's error word (which check reports) and no stream takes
     * an error (CUDA: a kernel has no non-fatal error, kctx/cuda.h;
     * OpenCL: a kernel cannot fail its command). 0:
     * the failure also reaches the streams that wait for it (the sim). */
    int task_failure_leaves_streams_ok;
} fw_driver;

/* The driver offers capture and graphs (the CAPTURE group is filled). */
static inline int fw_has_capture(const fw_driver *fw) {
    return fw->begin_capture && fw->end_capture && fw->capture_status && fw->graph_instantiate &&
           fw->graph_launch && fw->graph_destroy && fw->exec_destroy;
}

/* The driver offers a graph memory pool (the POOL group is filled). */
static inline int fw_has_pool(const fw_driver *fw) {
    return fw->pool_create && fw->pool_alloc && fw->pool_free && fw->pool_destroy &&
           fw->pool_last_error;
}

/* The graph memory pool as a framework-side arena (fw_pool.c): pool_create
 * makes one allocation of `bytes` (rounded up to 256) through `alloc` and
 * pool_destroy frees it through `release`; in between, pool_alloc and
 * pool_free only do bookkeeping on the host, so they make no runtime call
 * at all (legal in any capture). Blocks are 256-byte aligned; a freed
 * block is reused first-fit, whole, by a later pool_alloc on the stream it
 * was freed on; otherwise the arena grows into its unused tail; full:
 * FW_ERROR. Thread-safe. A driver's pool_create wraps fw_arena_create with
 * its own mem_alloc/mem_free; the other entries are these. */
fw_status fw_arena_create(fw_status (*alloc)(size_t bytes, fw_devptr *p),
                          fw_status (*release)(fw_devptr p), size_t bytes, fw_pool *pool);
fw_status fw_arena_alloc(fw_pool pool, size_t bytes, fw_stream s, fw_devptr *p);
fw_status fw_arena_free(fw_pool pool, fw_devptr p, fw_stream s);
fw_status fw_arena_destroy(fw_pool pool);
const char *fw_arena_last_error(void);

/* Device lifecycle counters (optional hook `lifecycle`). */
#define FW_LIFECYCLE_MAX_OPS 8
typedef struct fw_lifecycle {
    unsigned nops;
    const char *op_names[FW_LIFECYCLE_MAX_OPS]; /* "set device", ... */
    /* The lifecycle calls of each op attributed to `device` so far. */
    int (*counts)(int device, uint64_t *out);
    /* As the device's owner, make one call of every op on purpose (so a
     * probe sees the counters count before it trusts a zero). Called when
     * no object of the probe lives; leaves `device` current for the calling
     * thread. Returns 0, or -1 with a message in why. */
    int (*prove)(int device, char *why, size_t why_size);
} fw_lifecycle;

/* The platforms' drivers are declared with them
 * (platform/<name>/platform.cmake, FW_DRIVERS: the generated
 * kctx_gen_suite.h declares them) and reached through the suite
 * (suite_driver, suite.h), or directly by their own tests, which declare
 * the one they call (e.g. fw_cuda_driver in platform/cuda/tests/test_cuda.c). */

#endif
