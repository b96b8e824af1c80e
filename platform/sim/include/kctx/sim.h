/*
 * kctx/sim.h — the runtime API of the simulated accelerator ("sim").
 *
 * The sim is a device in a library. A framework, a test or the demo calls
 * this API the way it would call a real accelerator runtime (CUDA runtime,
 * Ascend ACL); kctx reaches the same device through its platform adapter.
 * Work really runs asynchronously on threads, device memory is separate from
 * host buffers (only copies move data), kernels are compiled shared objects
 * uploaded from bytes, and captured graphs really replay the captured work.
 *
 * Where CUDA and CANN differ, the sim follows CUDA; every such point is
 * marked "CUDA choice" below.
 *
 * Conventions (they hold for every function unless its comment says
 * otherwise):
 *  - Every function returns a sim_status. SIM_OK is 0. Out-parameters are
 *    written only on SIM_OK.
 *  - Handles are opaque 64-bit values (index + generation + type + device).
 *    0 is never a valid handle. A destroyed, stale (device reset), foreign
 *    (wrong type) or wrong-device handle returns SIM_ERR_INVALID_HANDLE; the
 *    sim never dereferences freed memory to find that out. A handle that
 *    became invalid never validates again (see "Handles" below).
 *  - Every function is safe to call from any thread.
 *  - Host functions enqueued on streams and graph destroy hooks run on sim
 *    threads and must not call this API: every function called from them
 *    returns SIM_ERR_NOT_PERMITTED.
 *  - The sim initialises itself on first use; sim_init() is an explicit,
 *    counted lifecycle call (see sim_lifecycle_count).
 *  - A detailed message for the last failure of the calling thread is
 *    available from sim_last_error_message().
 *  - Fault injection (sim_fault_arm) can make any counted call fail before it
 *    does anything; a failed call changes no state.
 */
#ifndef KCTX_SIM_H
#define KCTX_SIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SIM_API __attribute__((visibility("default")))
#else
#define SIM_API
#endif

/* ------------------------------------------------------------------------
 * Status codes. One list, from which the enum, the names and the messages
 * are generated (sim_status_name, sim_status_string).
 * The capture codes carry the numbers of their CUDA equivalents; the CANN
 * equivalent is given where one exists.
 * ---------------------------------------------------------------------- */
#define SIM_STATUS_MAP(X)                                                                    \
    X(OK, 0, "success")                                                                      \
    X(INVALID_VALUE, 1, "invalid argument")                                                  \
    X(INVALID_HANDLE, 2, "invalid, destroyed, stale, foreign or wrong-device handle")        \
    X(OUT_OF_MEMORY, 3, "device memory capacity exhausted")                                  \
    X(NOT_READY, 4, "work is still pending")                                                 \
    X(DEVICE_LOST, 5, "the device is lost (fatal error); only a reset recovers it")          \
    X(NOT_PERMITTED, 6, "sim API called from a host function or graph hook")                 \
    X(NOT_SUPPORTED, 7, "operation not supported by the sim")                                \
    X(TIMEOUT, 8, "timed out")                                                               \
    X(KERNEL_ERROR, 9, "a kernel reported a device-side error")                              \
    X(INVALID_MODULE, 10, "module bytes rejected by the loader")                             \
    X(NOT_FOUND, 11, "symbol not found in module")                                           \
    X(ILLEGAL_STATE, 12, "operation not legal in the object's current state")                \
    X(INVALID_ADDRESS, 13, "device address range not inside one live allocation")            \
    X(DOUBLE_FREE, 14, "device address already freed")                                       \
    X(FOREIGN_FREE, 15, "device address belongs to another device or to no allocation")      \
    X(INJECTED, 16, "injected fault")                                                        \
    X(CAPTURE_UNSUPPORTED, 900, "operation not permitted while a stream is capturing")       \
    X(CAPTURE_INVALIDATED, 901, "the capture was invalidated by an earlier error")           \
    X(CAPTURE_MERGE, 902, "operation would merge two independent captures")                  \
    X(CAPTURE_UNMATCHED, 903, "capture was not begun on this stream")                        \
    X(CAPTURE_UNJOINED, 904, "a forked stream was not joined back into the origin stream")   \
    X(CAPTURE_ISOLATION, 905, "dependency on an event recorded outside the capture")         \
    X(CAPTURED_EVENT, 907, "operation not permitted on an event last recorded in a capture") \
    X(CAPTURE_WRONG_THREAD, 908, "capture ended from a thread that did not begin it")

typedef enum sim_status {
#define SIM_STATUS_ENUM_(name, num, msg) SIM_##name = (num),
    SIM_STATUS_MAP(SIM_STATUS_ENUM_)
#undef SIM_STATUS_ENUM_
} sim_status;
/* Aliases so call sites read naturally. */
#define SIM_ERR_INVALID_VALUE SIM_INVALID_VALUE
#define SIM_ERR_INVALID_HANDLE SIM_INVALID_HANDLE

/* "SIM_OK", "SIM_CAPTURE_ISOLATION", ...; "SIM_UNKNOWN" for other values. */
SIM_API const char *sim_status_name(sim_status s);
/* One-line description of the status class; never NULL. */
SIM_API const char *sim_status_string(sim_status s);
/* The calling thread's detailed message for its last failed call (what and
 * where). Valid until the thread's next sim call. Never NULL. */
SIM_API const char *sim_last_error_message(void);

/* ------------------------------------------------------------------------
 * Handles
 *
 * A handle names a slot of the sim's handle table and the slot's generation
 * (plus the object's type and device). Each object created in a slot gets
 * the slot's next generation, so a destroyed or stale handle no longer
 * matches its slot. A slot issues at most SIM_HANDLE_GENERATIONS handles:
 * once the object of its last generation is destroyed, the slot is retired
 * and never reused — generations never wrap, so a handle that became
 * invalid can never validate again, however many objects are created after
 * it. The table has SIM_HANDLE_SLOTS slots; when every slot is live or
 * retired, every create call (streams, events, modules, functions, capture
 * graphs, executable graphs) fails with SIM_OUT_OF_MEMORY ("handle table
 * full") and changes nothing. sim_handle_age (test support, below) drives a
 * slot through its generations without creating objects.
 * ---------------------------------------------------------------------- */
#define SIM_HANDLE_GENERATIONS 16777215u /* handles one table slot issues */
#define SIM_HANDLE_SLOTS 16777215u       /* slots of the handle table */
typedef uint64_t sim_stream;
typedef uint64_t sim_event;
typedef uint64_t sim_module;
typedef uint64_t sim_function;
typedef uint64_t sim_graph;
typedef uint64_t sim_graph_exec;
/* Device memory is addressed by device addresses (kernels dereference them).
 * Every address passed to the API is validated against the device's table of
 * live allocations; freed memory is never touched to do so. */
typedef uint64_t sim_devptr;

/* ------------------------------------------------------------------------
 * Lifecycle and devices
 *
 * Devices: KCTX_SIM_DEVICES (default 2) devices per process, each with one
 * AICPU and KCTX_SIM_CORES (default 4, 1..64) AICore cores and
 * KCTX_SIM_MEMORY_MB (default 256) MiB of device memory. The environment is
 * read once, at first use.
 * ---------------------------------------------------------------------- */
typedef enum sim_lifecycle_op {
    SIM_LIFECYCLE_INIT = 0,
    SIM_LIFECYCLE_FINALIZE = 1,
    SIM_LIFECYCLE_SET_DEVICE = 2,
    SIM_LIFECYCLE_RESET_DEVICE = 3,
    SIM_LIFECYCLE_COUNT_ = 4
} sim_lifecycle_op;

/* Explicit init (counted on every device). Idempotent. */
SIM_API sim_status sim_init(void);
/* Finalize: resets every device (destroying all of their objects), counted
 * on every device. A later call re-initialises the sim implicitly. */
SIM_API sim_status sim_finalize(void);
SIM_API sim_status sim_device_count(int *count);
/* Set the calling thread's current device (counted). Default: device 0. */
SIM_API sim_status sim_set_device(int device);
/* The calling thread's current device. Works on a lost device; counted (as
 * SIM_OP_GET_DEVICE, not as a lifecycle call) and never fault-injected. */
SIM_API sim_status sim_get_device(int *device);
/* Reset the calling thread's current device (counted): abandons pending work
 * (it completes at once with SIM_DEVICE_LOST), waits for running kernels to
 * return, destroys every stream, event, allocation, module, function, graph
 * and executable graph of the device (their handles become stale), clears a
 * fatal state and increments the device epoch. CUDA choice: like
 * cudaDeviceReset it acts on the current device. */
SIM_API sim_status sim_device_reset(void);
/* The device's epoch: 0 at first use, +1 per reset. Works on a lost device;
 * counted (SIM_OP_DEVICE_EPOCH) and never fault-injected. */
SIM_API sim_status sim_device_epoch(int device, uint64_t *epoch);
/* Number of lifecycle calls of kind `op` attributed to `device` since the
 * process started or the last sim_lifecycle_reset_counts(). */
SIM_API sim_status sim_lifecycle_count(int device, sim_lifecycle_op op, uint64_t *count);
SIM_API sim_status sim_lifecycle_reset_counts(void);

typedef struct sim_device_props {
    size_t size;               /* set to sizeof(sim_device_props) by the caller */
    char name[64];             /* "sim-accelerator-0" */
    int aicore_count;          /* AICore cores (gang size limit) */
    int aicpu_count;           /* always 1 */
    uint64_t memory_capacity;  /* bytes */
    uint32_t max_params_size;  /* largest kernel parameter block, bytes */
    uint32_t max_block_dim;    /* largest block count of one launch */
    uint32_t device_word_size; /* size of a device word usable with the wait service (4) */
    uint32_t alloc_alignment;  /* every allocation is aligned to this (256) */
} sim_device_props;
#define SIM_DEVICE_PROPS_INIT \
    { sizeof(sim_device_props), {0}, 0, 0, 0, 0, 0, 0, 0 }
SIM_API sim_status sim_device_get_props(int device, sim_device_props *props);
/* Wait for all work on the calling thread's current device (forbidden while
 * a capture restricts the thread, see capture modes). */
SIM_API sim_status sim_device_synchronize(void);

/* ------------------------------------------------------------------------
 * Memory. Allocations belong to the calling thread's current device.
 * Freed memory is filled with 0xDB and, under AddressSanitizer, poisoned;
 * 256-byte red zones between allocations are poisoned too.
 * sim_malloc and sim_free are forbidden while a capture restricts the thread.
 * ---------------------------------------------------------------------- */
SIM_API sim_status sim_malloc(sim_devptr *ptr, size_t size);
/* SIM_DOUBLE_FREE for an address of this device that was already freed,
 * SIM_FOREIGN_FREE for an address of another device or of no allocation. */
SIM_API sim_status sim_free(sim_devptr ptr);
/* Live allocation count and bytes of a device. */
SIM_API sim_status sim_mem_stats(int device, uint64_t *live_count, uint64_t *live_bytes);
/* The live allocation of `device` holding [ptr, ptr+size): its base and size.
 * SIM_INVALID_ADDRESS when no single live allocation holds the range. */
SIM_API sim_status sim_mem_lookup(int device, sim_devptr ptr, size_t size, sim_devptr *base,
                                  size_t *alloc_size);
/* The address of `device`'s free counter: it advances (an atomic release
 * increment) whenever an allocation of the device stops being live (sim_free,
 * an owner reset), before that memory can be allocated again, and stays
 * valid until the process exits. Read it with an atomic acquire load: while
 * it has not moved, a range sim_mem_lookup accepted is still inside a live
 * allocation. Counted (SIM_OP_MEM_FREE_COUNTER); no fault injection, no
 * error state: SIM_INVALID_VALUE only for a device out of range or a NULL
 * counter. */
SIM_API sim_status sim_mem_free_counter(int device, const uint64_t **counter);

typedef enum sim_copy_kind {
    SIM_COPY_HOST_TO_DEVICE = 1,
    SIM_COPY_DEVICE_TO_HOST = 2,
    SIM_COPY_DEVICE_TO_DEVICE = 3
} sim_copy_kind;
/* Synchronous copy (waits for all work of the device first, like
 * cudaMemcpy on the legacy stream; forbidden while a capture restricts the
 * thread). Device pointers are passed as (void *)(uintptr_t)devptr. */
SIM_API sim_status sim_memcpy(void *dst, const void *src, size_t size, sim_copy_kind kind);
/* Atomic host reads and writes of one aligned device word (the way a host
 * reads a flag the device may be writing). Not restricted during capture. */
SIM_API sim_status sim_atomic_read_u32(sim_devptr ptr, uint32_t *value);
SIM_API sim_status sim_atomic_read_u64(sim_devptr ptr, uint64_t *value);
/* Atomic host write of one aligned device word, visible to kernels at once
 * (like a store to host-mapped device memory); it wakes kernels waiting on
 * the word. Not ordered with any stream. Not restricted during capture. */
SIM_API sim_status sim_atomic_write_u32(sim_devptr ptr, uint32_t value);

/* ------------------------------------------------------------------------
 * Streams: FIFO queues executed asynchronously and in order on the device of
 * the current device at creation. The sim has no NULL/default stream: 0 is
 * always an invalid handle.
 *
 * Device-side errors never hang: after a kernel reports an error (or the
 * device becomes lost), every later operation on that stream completes at
 * once with that status, event records still signal (carrying the status),
 * and sync/query of that stream, and of any stream that later waited on one
 * of its events, report it. A stream's error is sticky until device reset
 * (CUDA choice: CUDA's sticky errors are even context-wide).
 * ---------------------------------------------------------------------- */
SIM_API sim_status sim_stream_create(sim_stream *stream);
/* Destroys the handle at once; work already enqueued still completes (CUDA
 * choice). A stream that is part of a capture cannot be destroyed
 * (SIM_ILLEGAL_STATE). */
SIM_API sim_status sim_stream_destroy(sim_stream stream);
/* Waits for all enqueued work; returns the stream's error status.
 * On a capturing stream: SIM_CAPTURE_UNSUPPORTED and the capture is
 * invalidated. */
SIM_API sim_status sim_stream_synchronize(sim_stream stream);
/* As sim_stream_synchronize, but gives up after timeout_ms with SIM_TIMEOUT
 * (the work goes on). Counted as SIM_OP_STREAM_SYNCHRONIZE. */
SIM_API sim_status sim_stream_synchronize_timeout(sim_stream stream, uint32_t timeout_ms);
/* SIM_OK when idle, SIM_NOT_READY when work is pending, the stream error
 * otherwise. On a capturing stream: as synchronize. */
SIM_API sim_status sim_stream_query(sim_stream stream);
/* The device a stream belongs to. */
SIM_API sim_status sim_stream_get_device(sim_stream stream, int *device);

/* Where a kernel runs. */
typedef enum sim_target {
    SIM_TARGET_AICPU = 1, /* one invocation on the AICPU; the AICPU runs kernels of
                              different streams and graph branches concurrently */
    SIM_TARGET_AICORE = 2 /* block_dim blocks on the AICore cores, gang-scheduled:
                              up to the core count all blocks start together, one per
                              core, or none does; larger counts run in waves of
                              core-count blocks */
} sim_target;

/* Launch a kernel. `params` (params_size bytes, at most max_params_size) is
 * copied at enqueue time; the kernel receives the copy. block_dim must be 1
 * for SIM_TARGET_AICPU and 1..max_block_dim for SIM_TARGET_AICORE. */
SIM_API sim_status sim_launch_kernel(sim_stream stream, sim_function fn, sim_target target,
                                     uint32_t block_dim, const void *params, size_t params_size);
/* Asynchronous copy. Device ranges must lie in live allocations of the
 * stream's device (checked at enqueue); host memory must stay valid until
 * the copy has executed. */
SIM_API sim_status sim_memcpy_async(void *dst, const void *src, size_t size, sim_copy_kind kind,
                                    sim_stream stream);
/* Asynchronous fill of `size` bytes of device memory with `value`. */
SIM_API sim_status sim_memset_async(sim_devptr dst, uint8_t value, size_t size, sim_stream stream);
/* Host function: runs on a sim thread in stream order. `status` is the
 * stream's error status at that point (SIM_OK normally). It must not call
 * the sim API. */
typedef void (*sim_host_fn)(void *user, sim_status status);
SIM_API sim_status sim_launch_host_func(sim_stream stream, sim_host_fn fn, void *user);

/* ------------------------------------------------------------------------
 * Events
 * ---------------------------------------------------------------------- */
enum {
    SIM_EVENT_DEFAULT = 0,
    SIM_EVENT_DISABLE_TIMING = 1 /* sync-only: no timestamps */
};
SIM_API sim_status sim_event_create(sim_event *event, unsigned flags);
/* Destroying an event with records pending is allowed; waits already
 * enqueued on it still complete. */
SIM_API sim_status sim_event_destroy(sim_event event);
/* Captures "all work submitted to `stream` so far". Re-recording is allowed
 * at any time; the latest record wins. Event and stream must be on the same
 * device. */
SIM_API sim_status sim_event_record(sim_event event, sim_stream stream);
/* Makes `stream` wait for the event's most recent record at the time of this
 * call. Waiting on a never-recorded event is a no-op. If the record carried
 * an error, the waiting stream takes it.
 * Capture: see "Capture" below (join, isolation, merge). */
SIM_API sim_status sim_stream_wait_event(sim_stream stream, sim_event event);
/* SIM_OK if the most recent record has executed (or none was made),
 * SIM_NOT_READY otherwise. An event last recorded in a capture that has not
 * ended: SIM_CAPTURED_EVENT and that capture is invalidated (CANN 107028 is
 * the analogous event-query error). */
SIM_API sim_status sim_event_query(sim_event event);
SIM_API sim_status sim_event_synchronize(sim_event event);
/* Milliseconds between two executed records of timing events.
 * SIM_INVALID_VALUE for sync-only events, SIM_NOT_READY if either record is
 * pending or none was made. */
SIM_API sim_status sim_event_elapsed_ms(float *ms, sim_event start, sim_event end);

/* ------------------------------------------------------------------------
 * Modules and kernels. See platform/sim/include/kctx/sim_kernel.h for the kernel ABI.
 * ---------------------------------------------------------------------- */
/* Upload a module from bytes in memory: an x86-64 ELF shared object built
 * for the sim. Rejected with SIM_INVALID_MODULE (the message says why): a
 * malformed or truncated ELF, another machine or class, a module with
 * initialisers or finalisers (DT_INIT, DT_FINI, DT_INIT_ARRAY,
 * DT_FINI_ARRAY, DT_PREINIT_ARRAY) or thread-local storage (PT_TLS), or
 * unresolvable symbols. The container is checked; the code inside is
 * trusted like any shared library. The bytes are not retained. Belongs to
 * the current device. Forbidden while a capture restricts the thread. */
SIM_API sim_status sim_module_load(sim_module *module, const void *bytes, size_t size);
/* Unloads; the module's functions become invalid handles. SIM_ILLEGAL_STATE
 * while work using one of its functions is still enqueued or running, or
 * while a graph or executable graph holds a launch of one of them. */
SIM_API sim_status sim_module_unload(sim_module module);
/* Look up an entry point (a function with the sim_kernel_fn signature). */
SIM_API sim_status sim_module_get_function(sim_function *fn, sim_module module, const char *name);
/* The device address of a function's entry point: device code on the same
 * device may call it with the kernel ABI (a runtime's worker running the
 * kernels of a task graph does). Valid until the module is unloaded. */
SIM_API sim_status sim_function_address(sim_function fn, uint64_t *address);

/* ------------------------------------------------------------------------
 * Capture and graphs (CUDA semantics)
 *
 * Capture modes (CUDA choice, as cudaStreamCaptureMode): while a capture is
 * active, "potentially unsafe" calls — sim_device_synchronize, sim_memcpy,
 * sim_malloc, sim_free, sim_module_load, sim_module_unload — are refused
 * with SIM_CAPTURE_UNSUPPORTED, invalidating the restricting captures, when
 *  - the calling thread's mode is GLOBAL and any GLOBAL-mode capture is
 *    active in the process, or the thread itself began a non-RELAXED capture;
 *  - the calling thread's mode is THREAD_LOCAL and it began a non-RELAXED
 *    capture;
 *  - never when the calling thread's mode is RELAXED.
 * Each thread starts in GLOBAL mode.
 *
 * While a stream is capturing, its operations are recorded as graph nodes
 * instead of executing. Event records and waits inside the capture become
 * edges. A stream that is not capturing joins a capture by waiting on an
 * event whose last record was made in that (still active) capture, and
 * stays in it until the capture ends. Waiting inside a capture on an event
 * last recorded outside it is SIM_CAPTURE_ISOLATION and invalidates the
 * capture (CUDA choice: CANN 107024 rejects the wait but keeps the
 * capture). Waiting on an event of another active capture is
 * SIM_CAPTURE_MERGE and invalidates the waiting stream's capture.
 * Operations on a stream of an invalidated capture return
 * SIM_CAPTURE_INVALIDATED. Graph launches cannot be captured
 * (SIM_NOT_SUPPORTED).
 * ---------------------------------------------------------------------- */
typedef enum sim_capture_mode {
    SIM_CAPTURE_MODE_GLOBAL = 0,
    SIM_CAPTURE_MODE_THREAD_LOCAL = 1,
    SIM_CAPTURE_MODE_RELAXED = 2
} sim_capture_mode;

typedef enum sim_capture_status {
    SIM_CAPTURE_STATUS_NONE = 0,
    SIM_CAPTURE_STATUS_ACTIVE = 1,
    SIM_CAPTURE_STATUS_INVALIDATED = 2
} sim_capture_status;

/* Begin capturing on `stream` (SIM_ILLEGAL_STATE if it already is part of a
 * capture). */
SIM_API sim_status sim_stream_begin_capture(sim_stream stream, sim_capture_mode mode);
/* End the capture begun on `stream`.
 *  - SIM_ILLEGAL_STATE: the stream is not capturing;
 *  - SIM_CAPTURE_UNMATCHED: the stream joined a capture begun elsewhere;
 *  - SIM_CAPTURE_WRONG_THREAD: a non-RELAXED capture ended from another
 *    thread (the capture is unchanged and can still be ended);
 *  - SIM_CAPTURE_INVALIDATED: the capture was invalidated; no graph;
 *  - SIM_CAPTURE_UNJOINED: a joined stream's last captured work is not an
 *    ancestor of the origin stream's; no graph.
 * In the last two cases, and on success, every stream leaves the capture. */
SIM_API sim_status sim_stream_end_capture(sim_stream stream, sim_graph *graph);
/* Capture status of a stream: legal at any time, including on a capturing
 * stream, never invalidates anything. `id` (unique per capture, never 0) and
 * `graph` (the graph being built) are written when status is not NONE, else
 * set to 0. Any out-pointer may be NULL. */
SIM_API sim_status sim_stream_get_capture_info(sim_stream stream, sim_capture_status *status,
                                               uint64_t *id, sim_graph *graph);
/* sim_stream_get_capture_info plus the stream's device, in one call (how a
 * runtime checks a caller's stream cheaply). Counted as
 * SIM_OP_GET_CAPTURE_INFO. Any out-pointer may be NULL. */
SIM_API sim_status sim_stream_get_info(sim_stream stream, int *device, sim_capture_status *status,
                                       uint64_t *id, sim_graph *graph);
/* Exchange the calling thread's capture mode: *mode gets the old one. */
SIM_API sim_status sim_thread_exchange_capture_mode(sim_capture_mode *mode);

/* Number of nodes (kernels, copies, fills, host functions). */
SIM_API sim_status sim_graph_node_count(sim_graph graph, size_t *count);
/* Graph inspection (test support): how many of those nodes were captured
 * on `stream` (compared by handle: the stream may be destroyed since; 0 for
 * a stream that took no part in the capture). Lets a test see which
 * streams a captured graph holds work from, which the node count alone
 * cannot tell. Not counted, never fault-injected. */
SIM_API sim_status sim_graph_stream_node_count(sim_graph graph, sim_stream stream, size_t *count);
SIM_API sim_status sim_graph_destroy(sim_graph graph);
/* Snapshot the graph into an executable graph. */
SIM_API sim_status sim_graph_instantiate(sim_graph_exec *exec, sim_graph graph);
/* Enqueue one replay of `exec` on `stream` (any stream of the device). Any
 * number of launches may be enqueued back to back; launches of one
 * executable graph never overlap each other, whatever streams they are on.
 * Independent branches of the graph run concurrently. */
SIM_API sim_status sim_graph_launch(sim_graph_exec exec, sim_stream stream);
/* Destroys the handle; enqueued launches still complete. */
SIM_API sim_status sim_graph_exec_destroy(sim_graph_exec exec);

/* Graph lifetime hooks (like CUDA user objects): `fn(user)` runs exactly
 * once, on a sim thread, when the graph and every executable graph
 * instantiated from it after the attach have been destroyed and all their
 * launches have completed — and also when the capture the graph belonged to
 * was invalidated or abandoned (device reset). Legal on a graph that is
 * still being captured (obtain it with sim_stream_get_capture_info). The
 * hook must not call the sim API. */
typedef void (*sim_hook_fn)(void *user);
SIM_API sim_status sim_graph_attach_hook(sim_graph graph, sim_hook_fn fn, void *user);

/* ------------------------------------------------------------------------
 * Fault injection, call counters and holds (test support; part of the API
 * so that tests and tools of kctx can prove its contract).
 * ---------------------------------------------------------------------- */
/* Every counted API operation. The last three are queries that are counted
 * but can never be injected (a fault armed on one of them is refused, and a
 * SIM_OP_ANY fault never matches them): they are counted so that the
 * counters see every call a platform adapter makes (kctx's rule K28, "no
 * platform call", is checked against sim_thread_calls(SIM_OP_ANY)). */
// clang-format off
#define SIM_OP_MAP(X) \
    X(INIT) X(FINALIZE) X(DEVICE_COUNT) X(SET_DEVICE) X(DEVICE_RESET) \
    X(DEVICE_GET_PROPS) X(DEVICE_SYNCHRONIZE) X(MALLOC) X(FREE) X(MEM_LOOKUP) \
    X(MEMCPY) X(ATOMIC_READ) X(ATOMIC_WRITE) X(STREAM_CREATE) X(STREAM_DESTROY) \
    X(STREAM_SYNCHRONIZE) X(STREAM_QUERY) X(STREAM_GET_DEVICE) X(LAUNCH_KERNEL) \
    X(MEMCPY_ASYNC) X(MEMSET_ASYNC) X(LAUNCH_HOST_FUNC) X(EVENT_CREATE) \
    X(EVENT_DESTROY) X(EVENT_RECORD) X(STREAM_WAIT_EVENT) X(EVENT_QUERY) \
    X(EVENT_SYNCHRONIZE) X(EVENT_ELAPSED) X(MODULE_LOAD) X(MODULE_UNLOAD) \
    X(MODULE_GET_FUNCTION) X(FUNCTION_ADDRESS) X(BEGIN_CAPTURE) X(END_CAPTURE) \
    X(GET_CAPTURE_INFO) X(EXCHANGE_CAPTURE_MODE) X(GRAPH_NODE_COUNT) \
    X(GRAPH_DESTROY) X(GRAPH_INSTANTIATE) X(GRAPH_LAUNCH) X(GRAPH_EXEC_DESTROY) \
    X(GRAPH_ATTACH_HOOK) X(GET_DEVICE) X(DEVICE_EPOCH) X(MEM_FREE_COUNTER)
// clang-format on

typedef enum sim_op {
#define SIM_OP_ENUM_(name) SIM_OP_##name,
    SIM_OP_MAP(SIM_OP_ENUM_)
#undef SIM_OP_ENUM_
    SIM_OP_COUNT_,
    SIM_OP_ANY = -1
} sim_op;
SIM_API const char *sim_op_name(sim_op op);

/* A fault: the nth (1-based) counted call of `op` (or of any op with
 * SIM_OP_ANY) made after arming — restricted to `device` unless -1 and to
 * the arming thread if `this_thread_only` — fails with `error` before doing
 * anything. With `persistent`, that call and every later matching call
 * fail. At most SIM_MAX_FAULTS faults are armed at once. Calls that can
 * never be injected: sim_get_device, sim_device_epoch, sim_mem_free_counter
 * (counted: a fault armed on their ops is refused with SIM_INVALID_VALUE),
 * and the uncounted sim_status_*, sim_last_error_message, sim_op_name and
 * the test-support API (faults, counters, holds, watches, statistics). */
#define SIM_MAX_FAULTS 16
typedef struct sim_fault {
    size_t size; /* sizeof(sim_fault) */
    int op;      /* a sim_op or SIM_OP_ANY */
    int device;  /* -1: any device */
    int this_thread_only;
    uint64_t nth; /* >= 1 */
    int persistent;
    sim_status error; /* != SIM_OK */
} sim_fault;
#define SIM_FAULT_INIT \
    { sizeof(sim_fault), SIM_OP_ANY, -1, 0, 1, 0, SIM_INJECTED }
SIM_API sim_status sim_fault_arm(const sim_fault *fault, int *fault_id);
/* How many calls this fault has failed so far. */
SIM_API sim_status sim_fault_hits(int fault_id, uint64_t *hits);
SIM_API sim_status sim_fault_clear_all(void);

/* Call counters: calls of `op` (SIM_OP_ANY: all ops) made in the process
 * (device -1) or attributed to `device`, or made by the calling thread.
 * A call is attributed to the device of its handle or, without one, to the
 * calling thread's current device. Refused and failed calls count too.
 * Every API function is counted except the pure names and messages
 * (sim_status_name, sim_status_string, sim_op_name, sim_last_error_message)
 * and the test support below (faults, counters, holds, handle ageing and
 * watch, sim_device_make_fatal, sim_lifecycle_count*, sim_mem_stats,
 * sim_object_counts_get, sim_graph_stream_node_count). */
SIM_API uint64_t sim_calls(int op, int device);
SIM_API uint64_t sim_thread_calls(int op);
SIM_API void sim_calls_reset(void); /* process and per-device counters */
SIM_API void sim_thread_calls_reset(void);

/* Holds: the nth (1-based) execution, on the device, of an operation of
 * kind `kind` after arming blocks before it runs until released. */
typedef enum sim_exec_kind {
    SIM_EXEC_ANY = 0,
    SIM_EXEC_KERNEL = 1,
    SIM_EXEC_COPY = 2,
    SIM_EXEC_FILL = 3,
    SIM_EXEC_HOST_FUNC = 4,
    SIM_EXEC_EVENT_RECORD = 5,
    SIM_EXEC_GRAPH = 6
} sim_exec_kind;
typedef struct sim_hold {
    size_t size;     /* sizeof(sim_hold) */
    int kind;        /* sim_exec_kind */
    int device;      /* -1: any */
    uint64_t nth;    /* >= 1 */
    sim_function fn; /* kernels only: 0, or only executions of this function */
} sim_hold;
#define SIM_HOLD_INIT \
    { sizeof(sim_hold), SIM_EXEC_ANY, -1, 1, 0 }
#define SIM_MAX_HOLDS 16
SIM_API sim_status sim_hold_arm(const sim_hold *hold, int *hold_id);
/* Wait (up to timeout_ms) until the held execution is blocked in the hold:
 * afterwards the work is provably in flight. SIM_TIMEOUT otherwise. */
SIM_API sim_status sim_hold_wait_reached(int hold_id, uint32_t timeout_ms);
/* Let it run (also disarms a hold not yet reached). */
SIM_API sim_status sim_hold_release(int hold_id);
/* Release and disarm every hold. */
SIM_API sim_status sim_hold_release_all(void);

/* Execution failures (test support): the nth (1-based) execution, on the
 * device, of an operation matching `where` after arming (its kind, device,
 * nth and, for kernels, function: the hold's fields) does not run and
 * fails ON THE DEVICE with `error` (!= SIM_OK; SIM_KERNEL_ERROR is what a
 * kernel reporting a failure gives). Its enqueue already succeeded: the
 * failure is the stream's, sticky as a failed kernel's (later work on the
 * stream is skipped, event waits carry it on, a sync returns it). A fill
 * or copy that fails this way writes nothing. An execution that a hold
 * also matches is held first. At most SIM_MAX_HOLDS armed at once;
 * sim_exec_fail_hits says whether (1) or not (0) it fired; clear_all
 * disarms them all. */
SIM_API sim_status sim_exec_fail_arm(const sim_hold *where, sim_status error, int *fail_id);
SIM_API sim_status sim_exec_fail_hits(int fail_id, uint64_t *hits);
SIM_API sim_status sim_exec_fail_clear_all(void);

/* Make a device lost: every later operation on it fails with
 * SIM_DEVICE_LOST, pending work completes at once with SIM_DEVICE_LOST,
 * kernels blocked in the wait service return SIM_DEVICE_LOST, until the
 * owner resets the device. sim_get_device and sim_device_epoch still work. */
SIM_API sim_status sim_device_make_fatal(int device);

/* Handle ageing (test support): lets a test drive one handle-table slot
 * through its SIM_HANDLE_GENERATIONS generations in milliseconds instead of
 * creating and destroying 16.7 million objects. `handle` must be the most
 * recent handle of its slot, destroyed (no handle has been issued from the
 * slot since). The slot goes through `cycles` create/destroy cycles without
 * an object — exactly what creating an object in the slot and destroying it
 * again, `cycles` times, would do to it, retirement included: a slot that
 * runs out of generations is retired and the remaining cycles are not
 * performed (that is not an error). *generations_left (may be NULL)
 * receives how many more handles the slot can issue: 0 once it is retired;
 * `cycles` 0 only reads it. Afterwards `handle` is no longer its slot's most
 * recent handle unless the slot is retired (a retired slot's last handle
 * can still be asked, with the answer 0).
 * Errors: SIM_INVALID_HANDLE when `handle` is 0, was never issued, is live,
 * or its slot issued a handle after it. Not counted, never fault-injected. */
SIM_API sim_status sim_handle_age(uint64_t handle, uint64_t cycles, uint64_t *generations_left);

/* Handle watch (test support): counts the API calls, made from any thread
 * after the watch was set, that name `handle` as one of their handle
 * arguments (streams, events, modules, functions, graphs, executable
 * graphs), whether the call succeeds, fails, is refused or is failed by an
 * injected fault. A call is counted once, however many of its arguments
 * name the handle; a handle only stored inside another object, or the
 * sim's own internal use of it, is not a call. Lets a test prove that a
 * component never names a handle again (a stream its caller destroyed:
 * the count stays 0). sim_handle_watch sets the watched handle and resets
 * the count to 0; sim_handle_watch(0) stops watching. One handle is watched
 * at a time, process-wide; set it while no other thread makes calls. Never
 * fault-injected; these two functions are not counted. */
SIM_API void sim_handle_watch(uint64_t handle);
SIM_API uint64_t sim_handle_watch_count(void);

/* Number of live sim objects of the device (streams, events, modules,
 * graphs, executable graphs), for leak checks. */
typedef struct sim_object_counts {
    size_t size;
    uint64_t streams, events, modules, graphs, graph_execs, hooks_pending;
} sim_object_counts;
#define SIM_OBJECT_COUNTS_INIT \
    { sizeof(sim_object_counts), 0, 0, 0, 0, 0, 0 }
SIM_API sim_status sim_object_counts_get(int device, sim_object_counts *counts);

#ifdef __cplusplus
}
#endif
#endif /* KCTX_SIM_H */
