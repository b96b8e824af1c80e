/*
 * kctx/platform.h — the platform vocabulary: what kctx needs from a device
 * runtime, as tables a platform adapter fills (docs/platforms.md is the
 * guide: every op, the capabilities, what a new platform implements).
 *
 * The vocabulary is split by authority:
 *  - kctx_platform_desc: what a kernel context receives — the platform's
 *    name, its capabilities and its kctx_platform_ops (devices, streams,
 *    events, memory, modules, kernel launches, capture queries, graph
 *    lifetime hooks). Neither has a device lifecycle member: a kernel
 *    context cannot set, reset, initialise or finalise a borrowed device —
 *    it has no way to express it (rule K4).
 *  - kctx_platform_lifecycle_ops: init, finalize, set device, reset device.
 *    It is reachable only through the platform's registry entry
 *    (kctx_platform_entry), which only program init, which owns its device,
 *    looks up.
 *
 * The registry (src/platforms/registry.c) lists every platform this tree
 * knows, built or not; a built platform registers a kctx_platform_entry
 * (platform/<name>/adapter.c), one instance per process.
 *
 * The core never names a platform: it reaches every op of both tables
 * through the seam of src/core/pcall.c (KP, KPL, KP_RAW), which counts the
 * call, can fail it with an injected fault before the platform is reached
 * (kctx.h: kctx_fault_arm), maps the status and quarantines on a fatal
 * error. The few calls whose failure is itself an answer (a stream query's
 * NOT_READY, a range check's miss, the capture-mode restore) go through
 * the same seam and classify its result where they are made. A platform's
 * statuses must not use INT_MIN (the seam's "injected" status).
 *
 * Releases (stream_destroy, event_destroy, mem_free, module_unload) are
 * retried: a release that fails keeps its handle in the core, and the
 * retried close calls the op again with it (K26). An op that makes several
 * runtime calls must therefore be retryable after a failure half-way: it
 * remembers what it already released, so that the retry makes exactly the
 * calls that remain and never names a runtime handle after its successful
 * destroy (the driver sweeps of the conformance suite check this below the
 * adapter, docs/conformance.md).
 *
 * Native handles (streams, events, modules, functions, graphs, device
 * addresses) are opaque 64-bit values; 0 means "none". A platform that uses
 * pointers stores them in the 64 bits.
 *
 * Every operation returns a platform status (`int`, 0 = success, anything
 * else the platform's own code). `classify` maps a platform status to the
 * kctx status class (see kctx.h); `status_name` names it for messages.
 * These two and `last_message` only describe a status the seam already
 * counted: they are not operations (no device, no handle, no state), so
 * the seam neither counts nor fails them; every other member of both
 * tables is reached only through the counting seam (K28's "no platform
 * call" is checked against its total over all ops, and against what the
 * platform itself counts serving the calling thread: the sim's
 * sim_thread_calls(SIM_OP_ANY), the CUDA and ACL driver doubles' totals,
 * which also see a call that went around the seam).
 *
 * Locking (every op unless its comment says more): the core calls an op
 * from any thread, holding the calling context's lock and no lock of the
 * core's tables; two contexts of one platform call it concurrently. The
 * platform serialises internally what contexts share (caller streams, the
 * device, its own tables). Objects of one context are not shared: the ops
 * naming one event (event_record, stream_wait_event, event_destroy) or one
 * function (launch) are never called concurrently, since the core calls
 * them only with the owning context's lock held, so an adapter need not
 * lock an event or a function of its own. A context's own stream is not
 * covered: a prepare uploads on the context's upload stream without the
 * context's lock (K15), two prepares at once. No operation may call back into kctx, and
 * none may block except the ones that say they wait (stream_sync).
 * "Calling thread" state (current device, capture mode, last message) is
 * per thread, as in CUDA and CANN.
 *
 * Versioning (docs/platforms.md, "Versioning"): every table starts with its
 * size and version (KCTX_PLATFORM_VERSION of the header the platform was
 * built against). Tables only grow at the end, and every member added after
 * a table's first version is optional. The core copies a table of any size
 * from its minimum (KCTX_PLATFORM_*_MIN_SIZE) up over an all-NULL one: an
 * op beyond the size the platform gave is NULL, and the core checks for
 * NULL before calling an optional op. A larger table (a newer header) is
 * accepted and its tail ignored: every member a table gains is an offer (an
 * optional op, a capability whose 0 is the old behaviour), so a core that
 * does not know it simply does not use it. A table below its minimum size,
 * or whose ops contradict its declared capabilities, makes the platform
 * unavailable (kctx_context_create: UNSUPPORTED, with the reason); an op
 * present for a capability the descriptor does not declare is ignored (the
 * declaration decides).
 */
#ifndef KCTX_PLATFORM_H
#define KCTX_PLATFORM_H

#include <kctx/kctx.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the tables in this header. Version 1 was the unversioned
 * seam before issue 12 (a descriptor with a lifecycle member); its tables
 * are below every minimum size here and are refused. Version 2 passed a
 * `void *self` (always NULL: no platform had an instance) as every op's
 * first argument; version 3 dropped it (issue 24), so a version-2 table's
 * ops have another signature and are refused by version, not by size. A
 * platform's state is its own (file scope in its adapter); no op receives
 * a platform instance. */
#define KCTX_PLATFORM_VERSION 3u

typedef uint64_t kctx_pstream;
typedef uint64_t kctx_pevent;
typedef uint64_t kctx_pmodule;
typedef uint64_t kctx_pfunction;
typedef uint64_t kctx_pgraph;
typedef uint64_t kctx_pdevptr;

/* What the core needs to know about one device. */
typedef struct kctx_device_info {
    size_t size;
    char name[64];
    uint32_t aicore_count;    /* compute cores (the worker gang size) */
    uint32_t max_params_size; /* largest kernel parameter block of this device */
    uint64_t memory_capacity;
    uint32_t word_size; /* device word usable with wait/wake (4) */
    uint32_t alloc_alignment;
    int has_epoch;        /* this device's epoch is meaningful (with desc.has_epoch) */
    int can_check_ranges; /* mem_range_check works on this device (with desc.can_check_ranges) */
} kctx_device_info;

typedef enum kctx_pcapture_status {
    KCTX_PCAPTURE_NONE = 0,
    KCTX_PCAPTURE_ACTIVE = 1,
    KCTX_PCAPTURE_INVALIDATED = 2
} kctx_pcapture_status;

typedef enum kctx_pcapture_mode {
    KCTX_PCAPTURE_MODE_GLOBAL = 0,
    KCTX_PCAPTURE_MODE_THREAD_LOCAL = 1,
    KCTX_PCAPTURE_MODE_RELAXED = 2
} kctx_pcapture_mode;

typedef enum kctx_ptarget {
    KCTX_PTARGET_AICPU = 1, /* one invocation on the scheduler processor */
    KCTX_PTARGET_AICORE = 2 /* block_dim blocks on the compute cores */
} kctx_ptarget;

/* Class of a platform status, returned by classify(). */
typedef enum kctx_pclass {
    KCTX_PCLASS_OK = 0,
    KCTX_PCLASS_INVALID = 1,     /* bad argument or handle */
    KCTX_PCLASS_NO_MEMORY = 2,   /* device or host memory exhausted */
    KCTX_PCLASS_NOT_READY = 3,   /* work still pending (query) */
    KCTX_PCLASS_DEVICE_LOST = 4, /* fatal: the device cannot be used until reset (K29) */
    KCTX_PCLASS_CAPTURE = 5,     /* a capture rule was broken */
    KCTX_PCLASS_TIMEOUT = 6,
    KCTX_PCLASS_DEVICE_ERROR = 7, /* a kernel failed on the device (non-fatal) */
    KCTX_PCLASS_UNSUPPORTED = 8,
    KCTX_PCLASS_OTHER = 9,
    /* A module that does not build or load for this device (a source that
     * does not compile, a kernel the platform cannot launch): the image's
     * fault, reported by prepare as INCOMPATIBLE_IMAGE. Added in version 2
     * (an older core maps it to PLATFORM_ERROR). */
    KCTX_PCLASS_BAD_MODULE = 10
} kctx_pclass;

/* Graph lifetime hook: called once when the graph and every executable
 * graph made from it are destroyed and their launches completed (or the
 * capture was invalidated or abandoned). Any thread; must not call the
 * platform. */
typedef void (*kctx_phook_fn)(void *user);

/* The ops a kernel context calls. Members up to (not including) the
 * "conditional and optional ops" section are required: never NULL. */
typedef struct kctx_platform_ops {
    size_t size;      /* sizeof(kctx_platform_ops) of the platform's header */
    uint32_t version; /* KCTX_PLATFORM_VERSION of the platform's header */

    /* ---- status vocabulary (no lock; pure, or per-thread state) ---- */
    kctx_pclass (*classify)(int status);
    const char *(*status_name)(int status);
    /* Detailed message of the calling thread's last failed call, or "". */
    const char *(*last_message)(void);

    /* ---- devices (queries only) ---- */
    int (*device_count)(int *count);
    int (*device_info)(int device, kctx_device_info *info);

    /* ---- streams (created on the calling thread's current device) ---- */
    int (*stream_create)(kctx_pstream *stream);
    int (*stream_destroy)(kctx_pstream stream);
    /* Wait for the stream's work, at most timeout_ms (TIMEOUT class). The
     * one op that blocks: the core calls it with the context lock held. */
    int (*stream_sync)(kctx_pstream stream, uint32_t timeout_ms);
    /* 0 idle, NOT_READY class while work is pending. Never on a capturing
     * stream (the core checks stream_info first). */
    int (*stream_query)(kctx_pstream stream);
    /* A stream's device and capture state, in one call: legal at any time,
     * also on a capturing stream; never changes a capture. `id` and `graph`
     * are 0 when status is NONE (always NONE without capture). Any
     * out-pointer may be NULL. (Launch's preflight checks the caller stream
     * with one call, K18/K25/K34.) */
    int (*stream_info)(kctx_pstream stream, int *device, kctx_pcapture_status *status, uint64_t *id,
                       kctx_pgraph *graph);

    /* ---- events (synchronisation only: no timing) ---- */
    int (*event_create)(kctx_pevent *event);
    int (*event_destroy)(kctx_pevent event);
    int (*event_record)(kctx_pevent event, kctx_pstream stream);
    int (*stream_wait_event)(kctx_pstream stream, kctx_pevent event);

    /* ---- device memory (current device) ---- */
    int (*mem_alloc)(size_t size, kctx_pdevptr *ptr);
    int (*mem_free)(kctx_pdevptr ptr);
    int (*memcpy_htod_async)(kctx_pdevptr dst, const void *src, size_t size, kctx_pstream stream);
    int (*memset_async)(kctx_pdevptr dst, uint8_t value, size_t size, kctx_pstream stream);
    /* Asynchronous device-to-host copy (trace copy-back); `dst` must stay
     * valid until the stream has executed it. */
    int (*memcpy_dtoh_async)(void *dst, kctx_pdevptr src, size_t size, kctx_pstream stream);
    /* Atomic read of one aligned device word (the host reading a flag). */
    int (*atomic_read_u32)(kctx_pdevptr ptr, uint32_t *value);
    /* Atomic write of one aligned device word, visible to running and later
     * device programs at once, ordered with no stream (the host poisoning
     * a context, K35).
     * Both word accesses may wait, bounded, for their own transfer where the
     * device's memory is not host-visible (CUDA: a copy on a private stream
     * created at init, polled with its stream query). They are the only waits
     * a launch may make, and only on its failure path (the poison step's read
     * and write of the error word, the abort word when compensation could not
     * be enqueued: K19, K24): never on the caller's stream, a context stream or
     * a capturing stream. */
    int (*atomic_write_u32)(kctx_pdevptr ptr, uint32_t value);

    /* ---- modules and kernels ---- */
    int (*module_load)(const void *bytes, size_t size, kctx_pmodule *module);
    int (*module_unload)(kctx_pmodule module);
    int (*module_function)(kctx_pmodule module, const char *name, kctx_pfunction *fn);
    /* `params` is copied at enqueue time; at most desc.max_params_size. */
    int (*launch)(kctx_pstream stream, kctx_pfunction fn, kctx_ptarget target, uint32_t block_dim,
                  const void *params, size_t params_size);

    /* ---- conditional and optional ops: NULL, or beyond `size` ----------
     * Each is required when the capability named beside it is declared in
     * the descriptor, and must be NULL (or absent) otherwise. */

    /* Required unless bound_device is set: the calling thread's current
     * device; must work on a lost device. */
    int (*current_device)(int *device);
    /* Required when desc.has_epoch: the epoch of a device (increments when
     * its owner resets it, K30, K36); must work on a lost device. */
    int (*device_epoch)(int device, uint64_t *epoch);
    /* Required when desc.can_check_ranges: 0 when [ptr, ptr+size) lies
     * inside one live allocation of `device` (K18). */
    int (*mem_range_check)(int device, kctx_pdevptr ptr, size_t size);
    /* Required when desc.strategies has RESIDENT: the device address of a
     * function's entry point, callable by the platform's device programs
     * (HOST_ORDERED launches task kernels from the host and needs none). */
    int (*function_address)(kctx_pfunction fn, uint64_t *address);
    /* Required when desc.has_capture: exchange the calling thread's capture
     * mode (*mode gets the old); the core switches to relaxed around its
     * platform calls and restores. Per-thread state. */
    int (*exchange_capture_mode)(kctx_pcapture_mode *mode);
    /* Required when desc.has_capture: call fn(user) once when `graph` and
     * every executable graph made from it are gone (K25). */
    int (*graph_attach_hook)(kctx_pgraph graph, kctx_phook_fn fn, void *user);
    /* Optional: for a platform with no thread-current device (OpenCL: a
     * queue knows its device, a thread does not). The device the calling
     * thread's framework named through the platform's own API (for example
     * a per-thread binding the adapter keeps, set by the framework). When
     * set, the core calls it instead of current_device wherever it reads the
     * current device (kernel init's borrow K4, the K5 checks). Must work on
     * a lost device. Per-thread state. A failure of the INVALID or OTHER
     * class (PLATFORM_ERROR) means the thread lent nothing: the K5 checks
     * report it as INVALID_STATE with the platform's message; any other
     * class keeps its mapped status (kernel init, which borrows, reports
     * the mapped status). */
    int (*bound_device)(int *device);

    /* ---- added in version 2 (optional: beyond a smaller size, NULL) ---- */
    /* Optional, used only with desc.can_check_ranges: the address of a
     * 64-bit counter of `device` that the platform increments (an atomic
     * release add) every time one of the device's allocations stops being
     * live (freed, or wiped by a reset), before that memory can be handed
     * out again. It must stay valid while the platform is loaded. kctx
     * reads it with an atomic acquire load: while it has not moved, a range
     * mem_range_check accepted is still inside a live allocation, so a
     * launch checks a tensor range once and trusts it afterwards (K18's
     * checks at no cost for the tensors a framework launches with again and
     * again). NULL: every launch checks every range. */
    int (*mem_free_counter)(int device, const uint64_t **counter);
} kctx_platform_ops;

/* The smallest ops table the core accepts: every required op. */
#define KCTX_PLATFORM_OPS_MIN_SIZE offsetof(kctx_platform_ops, current_device)

/* Lifecycle: only program mode receives this table (through the registry
 * entry). Every op is required (finalize too, though kctx never calls it,
 * below: admission checks the whole table). Called with the program context's lock
 * held; init may be called by several program contexts (it must be
 * idempotent). `finalize` is never called by kctx: a platform's finalize
 * is process-wide (the sim's resets every device, destroying the objects
 * of the framework and of every other context, as aclFinalize does) and
 * does not count its callers, while a program context owns one device,
 * not the process. Program close releases what init created and leaves
 * the platform initialised; ending the platform is the process's call.
 * The member stays so that the table's layout (and the adapters filling
 * it) does not change. */
typedef struct kctx_platform_lifecycle_ops {
    size_t size;      /* sizeof(kctx_platform_lifecycle_ops) */
    uint32_t version; /* KCTX_PLATFORM_VERSION */
    int (*init)(void);
    int (*finalize)(void);
    int (*set_device)(int device);
    int (*reset_device)(void); /* the calling thread's current device */
} kctx_platform_lifecycle_ops;

#define KCTX_PLATFORM_LIFECYCLE_MIN_SIZE sizeof(kctx_platform_lifecycle_ops)

/* What a kernel context receives: the platform's identity, capabilities and
 * ops. No lifecycle member, by construction (K4). Immutable once
 * registered. */
typedef struct kctx_platform_desc {
    size_t size;      /* sizeof(kctx_platform_desc) */
    uint32_t version; /* KCTX_PLATFORM_VERSION */
    const char *name; /* "sim", "opencl", "cuda" */
    const kctx_platform_ops *ops;
    int variant_kind; /* the kctx_variant_kind of callable images it loads (image.h) */
    /* The runtime's device programs for this platform, as a module image
     * (kernels "kctx_rt_acquire", "kctx_rt_scheduler", "kctx_rt_worker"
     * for RESIDENT; "kctx_rt_ho_acquire", "kctx_rt_ho_finalize" for
     * HOST_ORDERED). NULL/0 when the platform has none yet. */
    const void *programs;
    size_t programs_size;

    /* ---- capabilities (the public capability query returns them) ---- */
    /* The execution strategies it offers (kctx.h's KCTX_STRATEGY_BIT of
     * each; at least one), and its default (one of them). */
    uint32_t strategies;
    uint32_t default_strategy;
    /* The largest kernel parameter block any of its devices accepts, bytes
     * (> 0); a device may report a smaller one in its device_info. */
    uint32_t max_params_size;
    int has_capture;      /* stream capture into graphs (exchange_capture_mode, graph hooks) */
    int has_null_stream;  /* 0 names a default stream a caller may launch onto */
    int has_epoch;        /* device_epoch (K30, K36); without it quarantine is terminal */
    int can_check_ranges; /* mem_range_check (K18's tensor range checks) */

    /* ---- added in version 2 (optional: beyond a smaller size, NULL) ---- */
    /* NULL: the platform's device programs and task kernels write timed
     * trace records (K32). Else why they cannot (OpenCL C has no device
     * clock): a trace then says so instead of showing empty device lanes. */
    const char *device_trace_na;
    /* ---- added in version 3 (optional: beyond a smaller size, NULL) ---- */
    /* NULL, or where the platform runs when that is narrower than its
     * available() answer says (kctx_platform_caps.note). */
    const char *note;
} kctx_platform_desc;

#define KCTX_PLATFORM_DESC_MIN_SIZE offsetof(kctx_platform_desc, device_trace_na)

/* A platform's registration. Each built platform provides one (see
 * docs/platforms.md, "The registry"); the registry adds entries for the
 * platforms this tree knows but the build left out. */
typedef struct kctx_platform_entry {
    size_t size;      /* sizeof(kctx_platform_entry) */
    uint32_t version; /* KCTX_PLATFORM_VERSION */
    const char *name; /* the same as desc->name */
    /* Optional: whether the platform can run on this machine (its runtime
     * library loads, ...). 1, or 0 with the reason written to why. Called
     * once per process, before any context of the platform exists; it may
     * call the platform's runtime but not kctx. NULL: always available. A
     * platform that runs but finds no device is available (zero devices is
     * not an error). */
    int (*available)(char *why, size_t why_size);
    const kctx_platform_desc *desc; /* what a kernel context receives */
    /* Program mode's table; NULL when the platform offers no program mode. */
    const kctx_platform_lifecycle_ops *lifecycle;
} kctx_platform_entry;

#define KCTX_PLATFORM_ENTRY_MIN_SIZE sizeof(kctx_platform_entry)

#ifdef __cplusplus
}
#endif
#endif /* KCTX_PLATFORM_H */
