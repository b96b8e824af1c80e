/*
 * kctx/kctx.h — kernel contexts: an accelerator task-graph runtime that runs
 * inside a host framework which owns the device, its streams and capture.
 *
 * The rules this header promises are numbered K1..K36 (docs/kernel-mode.md
 * gives the full contract and the state diagram). In brief:
 *
 *  - A context is created mode-less, for one platform ("sim" by default).
 *    kctx_kernel_init latches it into KERNEL mode and BORROWS the calling
 *    thread's current device: kctx never sets, resets, initialises or
 *    finalises it (K4). kctx_program_init latches PROGRAM mode, in which the
 *    context owns the device it is given. The latch is write-once (K1).
 *  - At most one kernel context per (platform, device) in a process: the
 *    claim (K6), released only by a successful close or a completed rollback
 *    (K7).
 *  - Kernel init creates a fixed set of resident resources (three context
 *    streams: AICPU and AICore for launches, upload for copies no launch
 *    waits for; five sync-only events, the runtime's device programs, the
 *    runtime image, the architecture register table, the kernel-args block,
 *    the pool of graph lifetime tokens) once; prepare and launch reuse them
 *    (K11).
 *  - Teardown is explicit: kctx_close releases everything and may be
 *    retried after a failure (K25, K26); kctx_destroy of a context that is
 *    not NEW or CLOSED is refused (K27) and never calls the platform (K28).
 *  - A fatal device error quarantines the context instead of resetting a
 *    device it does not own (K29, K30) — wherever it is seen: in an entry,
 *    during init's creation or rollback, or during close's releases (which
 *    then stop); once the owner resets the device, close abandons every
 *    handle and completes (K36).
 *
 * Capture boundary (K21): events may be shared by many captured graphs, but
 * every wait must be in the same capture as its event's most recent record.
 * kctx records and waits each of its events within one launch, and nothing
 * else ever waits on a launch's events. Callers must not wait on kctx's
 * events either.
 *
 * Conventions:
 *  - Handles (kctx_context) are 64-bit values validated without touching
 *    freed memory: a stale, foreign or destroyed handle gives
 *    KCTX_INVALID_HANDLE.
 *  - Check order in every entry: handle, arguments, image (prepare), phase,
 *    current device, capture state, capacity. The first failing check
 *    decides the status; a refusal changes no state and only writes the
 *    last-error message (per context and per thread). Where an entry
 *    states its own order it refines this one: launch and run check the
 *    id and the arguments after the current device (arguments can only be
 *    checked against the prepared callable); close puts its transient BUSY
 *    reasons after every permanent refusal.
 *  - Every entry is safe to call from any thread (K33). Lifecycle calls that
 *    race have exactly one winner; the losers get INVALID_STATE or BUSY.
 *  - Every entry other than launch that calls the platform switches the
 *    calling thread's capture mode to relaxed around those calls and
 *    restores it, so a global-mode capture on another thread survives.
 */
#ifndef KCTX_KCTX_H
#define KCTX_KCTX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KCTX_API __attribute__((visibility("default")))
#else
#define KCTX_API
#endif

#define KCTX_VERSION_MAJOR 0
#define KCTX_VERSION_MINOR 1
#define KCTX_VERSION_PATCH 0
#define KCTX_VERSION \
    ((KCTX_VERSION_MAJOR * 10000) + (KCTX_VERSION_MINOR * 100) + KCTX_VERSION_PATCH)
/* The library's version at run time (KCTX_VERSION of the build). */
KCTX_API int kctx_version(void);

/* ------------------------------------------------------------------------
 * Statuses: one list; names and strings are generated from it.
 * ---------------------------------------------------------------------- */
#define KCTX_STATUS_MAP(X)                                                                      \
    X(OK, 0, "success")                                                                         \
    X(INVALID_ARGUMENT, 1, "invalid argument")                                                  \
    X(INVALID_HANDLE, 2, "not a live context handle")                                           \
    X(INVALID_STATE, 3,                                                                         \
      "not allowed in the context's mode or phase, or on this thread's current device")         \
    X(BUSY, 4, "in use: claim held, work in flight, capture active, or live graphs")            \
    X(CAPACITY, 5, "a fixed capacity would be exceeded")                                        \
    X(DUPLICATE_ID, 6, "the callable id is already prepared")                                   \
    X(UNKNOWN_ID, 7, "no callable is prepared under this id")                                   \
    X(INVALID_IMAGE, 8, "the callable image was rejected by validation")                        \
    X(INCOMPATIBLE_IMAGE, 9, "the image has no binary variant this platform can load")          \
    X(UNSUPPORTED, 10, "not supported by this platform or build")                               \
    X(CAPTURE_ACTIVE, 11, "the context's streams are part of an active or invalidated capture") \
    X(CAPTURE_BROKEN, 12, "a failure inside a capture: the caller must discard that capture")   \
    X(DEVICE_LOST, 13, "the device is lost (fatal error); the context is quarantined")          \
    X(POISONED, 14,                                                                             \
      "the context is poisoned by an earlier failure; only check and close are accepted")       \
    X(PLATFORM_ERROR, 15, "a platform call failed")                                             \
    X(OUT_OF_MEMORY, 16, "host or device memory exhausted")                                     \
    X(TIMEOUT, 17, "a bounded wait timed out")                                                  \
    X(DEVICE_ERROR, 18, "work failed on the device")                                            \
    X(CONCURRENT_LAUNCH, 19, "unordered launches of one context overlapped on the device")      \
    X(NOT_FOUND, 20, "unknown platform name")

typedef enum kctx_status {
#define KCTX_STATUS_ENUM_(name, num, msg) KCTX_##name = (num),
    KCTX_STATUS_MAP(KCTX_STATUS_ENUM_)
#undef KCTX_STATUS_ENUM_
} kctx_status;

/* "KCTX_BUSY", ...; "KCTX_UNKNOWN" otherwise. Never NULL. */
KCTX_API const char *kctx_status_name(kctx_status s);
/* One line describing the status class. Never NULL. */
KCTX_API const char *kctx_status_string(kctx_status s);

/* ------------------------------------------------------------------------
 * Contexts
 * ---------------------------------------------------------------------- */
typedef uint64_t kctx_context;

typedef enum kctx_mode {
    KCTX_MODE_NONE = 0,
    KCTX_MODE_KERNEL = 1,
    KCTX_MODE_PROGRAM = 2
} kctx_mode;

typedef enum kctx_phase {
    KCTX_PHASE_NEW = 0,
    KCTX_PHASE_READY = 1,
    KCTX_PHASE_POISONED = 2,
    KCTX_PHASE_QUARANTINED = 3,
    KCTX_PHASE_CLOSING = 4,
    KCTX_PHASE_CLOSED = 5
} kctx_phase;
KCTX_API const char *kctx_phase_name(kctx_phase p);

/* At most this many context handles are live (created, not yet destroyed)
 * in a process at once. */
#define KCTX_MAX_CONTEXTS 4095

/* Create a mode-less context for a platform: by name, or, when `platform`
 * is NULL, KCTX_PLATFORM from the environment (unset or empty: "sim"). No
 * device work. An explicit name is used as given. The platforms this
 * library knows, built or not, and why one cannot be used are listed by the
 * capability query (kctx_platform_count, kctx_get_platform_caps).
 * Errors: INVALID_ARGUMENT (out NULL); NOT_FOUND ("", a name no platform
 * has, or a known platform this library was not built with — "opencl" and
 * "cuda" on this build; the thread's last error says which and why);
 * UNSUPPORTED (the platform is built but not available on this machine,
 * for example its tables are older than this library accepts: the reason
 * is in the thread's last error); CAPACITY (KCTX_MAX_CONTEXTS handles are
 * live: destroy some first); OUT_OF_MEMORY. */
KCTX_API kctx_status kctx_context_create(const char *platform, kctx_context *out);

/* Destroy a context handle. Refused with BUSY (and the reason in the last
 * error) unless the phase is NEW or CLOSED (K27). Never calls the platform
 * and never releases a claim (K7, K28). Errors: INVALID_HANDLE, BUSY. */
KCTX_API kctx_status kctx_destroy(kctx_context ctx);

/* Structs that grow. Every struct passed by pointer starts with its size,
 * set by its *_INIT macro (sizeof of the header the caller was built
 * against), so a struct can gain fields at its end without breaking
 * callers built against an older or a newer header (as NCCL's config):
 *  - an input struct (kctx_kernel_config, kctx_program_config) of an older
 *    version — a smaller size that is one of the struct's published sizes —
 *    is copied over the defaults of its *_INIT macro: a field the caller
 *    does not know keeps its default. One of a newer version (larger) is
 *    accepted when every byte beyond what this library knows is zero (the
 *    caller asks for nothing new) and refused with INVALID_ARGUMENT naming
 *    the size and the byte otherwise. Any other size is INVALID_ARGUMENT.
 *  - an output struct (kctx_resource_info, kctx_platform_caps) of an older
 *    version is filled only as far as it reaches; of a newer version, the
 *    bytes beyond what this library knows are set to zero. `size` is left
 *    as the caller set it.
 * The published sizes (LP64) are listed beside each struct. A struct's
 * trailing padding is an explicit `reserved` field (0), so a later field
 * can never hide in bytes an older library does not check. `version`
 * changes only when a field changes meaning, never when one is added. */
#define KCTX_CONFIG_VERSION 1u

/* How the device side of a launch runs (docs/kernel-mode.md, "Execution
 * strategies"). Every rule of the contract holds under both.
 *  - RESIDENT: the runtime's device programs (acquire, scheduler, worker
 *    gang) run on the device and dispatch the callable's tasks themselves.
 *    Needs forward progress between kernels and device function addresses.
 *  - HOST_ORDERED: prepare computes the tasks' order; launch enqueues an
 *    acquire step, each task kernel (a by-value parameter block per task,
 *    behind a gate that any device error closes) and a finalize step, in
 *    the same five-event chain.
 * A platform declares which it supports and its default. */
typedef enum kctx_strategy {
    KCTX_STRATEGY_DEFAULT = 0, /* the platform's default (KCTX_STRATEGY overrides it) */
    KCTX_STRATEGY_RESIDENT = 1,
    KCTX_STRATEGY_HOST_ORDERED = 2
} kctx_strategy;
/* A strategy's bit in a set of strategies (kctx_platform_caps.strategies). */
#define KCTX_STRATEGY_BIT(s) (1u << (unsigned)(s))
/* "default", "resident", "host-ordered"; "unknown" otherwise. Never NULL. */
KCTX_API const char *kctx_strategy_name(kctx_strategy s);

/* Config flags. */
#define KCTX_TRACE_ENABLE 1u /* collect a trace from init to close (K32, docs/tracing.md) */

/* Tracing (K32), when flags has KCTX_TRACE_ENABLE: the trace buffers are
 * resident allocations made at init (a device ring of trace_device_records
 * records written by the device programs, a host buffer of
 * trace_host_records spans); a full buffer drops the newest records and
 * counts them. The trace is copied back at close before any device memory
 * is released and written after CLOSED, as Chrome trace-event JSON, to
 * trace_path (NULL: "kctx-trace-<context handle>.json" in the current
 * directory). A write failure goes to the teardown error slot and does not
 * undo CLOSED (close still returns OK). kctx_trace_flush writes what has
 * been collected so far. Tracing off allocates nothing.
 *
 * The device ring is circular: the device programs reserve records while
 * it has room and publish each through a commit word; the host copies only
 * committed records (on the upload stream, which no launch uses) and then
 * frees their slots. So a flush never reads a record being written, never
 * copies one twice, and works while captured graphs replay. */
typedef struct kctx_kernel_config {
    size_t size;             /* sizeof(kctx_kernel_config) */
    uint32_t version;        /* KCTX_CONFIG_VERSION */
    uint32_t args_capacity;  /* bytes of the device kernel-args block (64..65536; default 4096) */
    uint32_t token_capacity; /* graph lifetime tokens (1..65536; default 256) */
    uint32_t prepare_timeout_ms;   /* bound of prepare's wait on its upload (default 10000) */
    uint32_t flags;                /* KCTX_TRACE_ENABLE or 0 */
    uint32_t trace_device_records; /* device ring capacity (1..16M; default 65536) */
    uint32_t trace_host_records;   /* host span capacity (1..16M; default 16384) */
    const char *trace_path;        /* copied at init; NULL: default name */
    /* ---- end of the first version (48 bytes) ---- */
    uint32_t strategy; /* kctx_strategy; DEFAULT: KCTX_STRATEGY from the environment
                        * ("resident" or "host-ordered"), else the platform's default */
    uint32_t reserved; /* 0 */
} kctx_kernel_config;  /* published sizes: 48, 56 */
#define KCTX_KERNEL_CONFIG_INIT                                                                   \
    {                                                                                             \
        sizeof(kctx_kernel_config), KCTX_CONFIG_VERSION, 4096u, 256u, 10000u, 0u, 65536u, 16384u, \
            NULL, 0u, 0u                                                                          \
    }

/* Kernel init (K1, K2, K4, K6, K7, K11). Validates the config, takes the
 * claim on the calling thread's current device, latches KERNEL, then creates
 * the resident resources in order, rolling back in reverse on any failure.
 *  - refused before the latch (bad config: INVALID_ARGUMENT — NULL, a
 *    size that is not one of its versions or a newer version asking for
 *    something (see "Structs that grow"), version, reserved, a field out of
 *    range, KCTX_STRATEGY naming no strategy; a strategy the platform does
 *    not offer: UNSUPPORTED naming the platform and what it offers; another
 *    kernel context holds the device: BUSY): the context stays mode-less
 *    and NEW;
 *  - a platform failure after the latch with a complete rollback: the claim
 *    is released and the context is NEW (kernel-latched, reusable);
 *  - a failed rollback: the claim is kept and the context is CLOSING (close
 *    retries the rest);
 *  - an init upload (runtime image, architecture table) that was started
 *    but whose wait failed or timed out (K17: the device may still be
 *    reading it): nothing is released, the claim is kept and the context
 *    is CLOSING, not NEW; close releases everything once the context's
 *    streams are idle (BUSY before).
 * Idempotent latch: kernel init of a READY kernel context returns
 * INVALID_STATE without changes; of a PROGRAM context INVALID_STATE (K1).
 * Errors: INVALID_HANDLE; INVALID_ARGUMENT (config, as above); UNSUPPORTED
 * (strategy, or a device reporting a core count kctx cannot drive);
 * INVALID_STATE (PROGRAM mode, or not NEW); OUT_OF_MEMORY (the
 * trace's host buffers); BUSY (another kernel context claims the device);
 * CAPACITY (too many claimed devices); DEVICE_LOST (quarantined by a fatal
 * error during creation or rollback); a platform call's mapped status. */
KCTX_API kctx_status kctx_kernel_init(kctx_context ctx, const kctx_kernel_config *config);

typedef struct kctx_program_config {
    size_t size;      /* sizeof(kctx_program_config) */
    uint32_t version; /* KCTX_CONFIG_VERSION */
    int device;       /* the device the context will own */
    uint32_t args_capacity;
    uint32_t prepare_timeout_ms;
    uint32_t flags; /* KCTX_TRACE_ENABLE or 0 */
    uint32_t trace_device_records;
    uint32_t trace_host_records;
    const char *trace_path;
    /* ---- end of the first version (48 bytes) ---- */
    uint32_t strategy; /* kctx_strategy, as in kctx_kernel_config */
    uint32_t reserved; /* 0 */
} kctx_program_config; /* published sizes: 48, 56 */
#define KCTX_PROGRAM_CONFIG_INIT                                                                \
    {                                                                                           \
        sizeof(kctx_program_config), KCTX_CONFIG_VERSION, 0, 4096u, 10000u, 0u, 65536u, 16384u, \
            NULL, 0u, 0u                                                                        \
    }

/* Program init (K1, K3): the context owns `device`: it initialises the
 * platform and sets the device through the lifecycle table, then creates
 * the same resident resources. Program contexts take no claim. kctx never
 * finalizes the platform (platform.h: a finalize is process-wide and would
 * destroy the objects of every other context and of the framework): not
 * at close, not after a failed set-device or a rollback, not in recovery;
 * the platform stays initialised for the process. On a fatal
 * error its recovery policy resets the device, abandons its handles and
 * reports the failure (K31). The config is taken as kernel init's (sizes,
 * version, reserved, strategy: INVALID_ARGUMENT / UNSUPPORTED); a platform
 * without program mode (kctx_platform_caps.program_mode 0) is
 * UNSUPPORTED.
 * Check order: the config (INVALID_ARGUMENT / UNSUPPORTED), program mode
 * offered (UNSUPPORTED), the device against the platform's device count
 * (INVALID_ARGUMENT: an argument, so before the mode and phase; the one
 * platform call a refused program init makes), then the mode and phase
 * (INVALID_STATE).
 * Errors: INVALID_HANDLE; INVALID_ARGUMENT (config, or a device the
 * platform does not have); UNSUPPORTED; INVALID_STATE (KERNEL mode, or not
 * NEW); OUT_OF_MEMORY; a platform call's mapped status. */
KCTX_API kctx_status kctx_program_init(kctx_context ctx, const kctx_program_config *config);

/* Prepare a callable under a caller-chosen id (K13-K17). Order: arguments,
 * full image validation (INVALID_IMAGE; nothing is parsed past the header,
 * hashed, allocated or uploaded before the image is proven well-formed),
 * phase (POISONED / DEVICE_LOST / INVALID_STATE), current device
 * (INVALID_STATE), duplicate id (DUPLICATE_ID: the first registration is
 * undisturbed), platform compatibility (INCOMPATIBLE_IMAGE: no loadable
 * variant, or a child whose kernel lacks the task ABI's marker), then load
 * the children and (RESIDENT) upload the callable's table on the context's
 * UPLOAD stream, which no launch uses. Returns only once the upload has
 * completed (bounded wait on that stream only), so no launch ever depends on
 * a stream position behind a prepare. Identical bytes under a new id share
 * one upload, also between prepares that race. The caller may free `image`
 * as soon as prepare returns. If the upload started but its wait failed,
 * the context is POISONED and the upload kept until close (K17). If the
 * device's owner reset the device while the prepare loaded or uploaded
 * (K36: its epoch moved), the prepare is refused with DEVICE_LOST and gives
 * back what it made; the context is left for close, which abandons.
 *
 * Cold capture (K16): prepare works inside an active capture — also one
 * that holds the context's own streams after a captured launch, in any
 * capture mode, from any thread — and beside launches in flight (K15): it
 * never enqueues on, queries or synchronises the AICPU or AICore stream,
 * adds no node to any graph, and restores the thread's capture mode. Its
 * validation, loads and upload run without the context's lock: a launch of
 * another id is never delayed by a prepare; close answers BUSY while a
 * prepare is still validating, loading or uploading.
 * Errors: INVALID_HANDLE; INVALID_ARGUMENT (image NULL or size 0);
 * INVALID_IMAGE; POISONED; DEVICE_LOST; INVALID_STATE (a mode-less
 * context, phase, or another current device: K5); DUPLICATE_ID; INCOMPATIBLE_IMAGE;
 * OUT_OF_MEMORY; CAPACITY; TIMEOUT; a platform call's mapped status (its
 * loads and upload). */
KCTX_API kctx_status kctx_prepare(kctx_context ctx, uint64_t id, const void *image, size_t size);

/* Close (K25, K26, K36, K30). Order:
 *  1. device epoch: if the device's owner reset it since init, every handle
 *     is gone: they are abandoned without platform calls and the context
 *     is CLOSED (claim released) — unless a prepare is still in its
 *     unlocked phase (it works with those handles): then BUSY, phase
 *     unchanged, and the close after it returned abandons and completes
 *     (that prepare is refused, see kctx_prepare);
 *  2. QUARANTINED: DEVICE_LOST, nothing released (the device cannot honour
 *     releases); the way out is (1);
 *  3. the calling thread's current device must be the context's (K5):
 *     INVALID_STATE otherwise, nothing changed;
 *  4. BUSY (phase unchanged) when a prepare is still validating, loading
 *     or uploading (K16), the context's streams are part of a capture, work
 *     is still in flight on them (also on a CLOSING retry), or live
 *     captured graphs hold the context — the message gives the reason and
 *     counts. These transient reasons come after (2) and (3): a caller's
 *     permanent error is reported before a transient one, so a close from
 *     the wrong device is INVALID_STATE, not BUSY (the one BUSY before them
 *     is (1)'s: an owner reset with a prepare still in flight);
 *  5. with tracing, the device trace is copied back (K32). A copy whose
 *     wait failed while it may still run into the host buffer: BUSY, phase
 *     unchanged, nothing released (retry once the upload stream is idle). A
 *     copy that failed and can no longer run is noted in the teardown slot
 *     and close goes on (the trace is written with the host spans);
 *  6. CLOSING, then release in reverse creation order; a release that fails
 *     keeps its handle and the first failure is returned (the context stays
 *     CLOSING; a retry releases exactly the remainder); once all are
 *     released: CLOSED, the claim released, then the trace file written.
 *     A fatal error during the releases (DEVICE_LOST) quarantines the
 *     context and stops releasing at once (K29, K30; the way out is (1)).
 * Close of a NEW context makes it CLOSED; of a CLOSED context is OK.
 * Errors: INVALID_HANDLE, INVALID_STATE, BUSY, DEVICE_LOST, and a release's
 * mapped platform status (PLATFORM_ERROR, OUT_OF_MEMORY, TIMEOUT, ...). */
KCTX_API kctx_status kctx_close(kctx_context ctx);

/* ------------------------------------------------------------------------
 * Launch (kernel mode) and run (program mode)
 * ---------------------------------------------------------------------- */

/* One argument per callable parameter, in signature order: a tensor is a
 * device address of the context's device (never 0) and its size in bytes
 * (> 0); a scalar is its 64-bit value with size 0. */
typedef struct kctx_arg {
    uint64_t value;
    uint64_t size;
} kctx_arg;
#define KCTX_TENSOR(addr, bytes) ((kctx_arg){(uint64_t)(addr), (uint64_t)(bytes)})
#define KCTX_SCALAR(v) ((kctx_arg){(uint64_t)(v), 0})

/* Launch a prepared callable onto the CALLER's stream (a native stream of
 * the context's platform on the borrowed device; kctx never stores it).
 *
 * Preflight (K18), before anything is enqueued and with nothing changed,
 * in this order (the arguments can only be checked against the callable,
 * so the id comes before them): caller stream non-zero, unless the
 * platform declares a default stream (has_null_stream: cuda's 0 is the
 * legacy stream, kctx/cuda.h; a capture holding the context's streams then
 * refuses it with CAPTURE_ACTIVE, K34): INVALID_ARGUMENT;
 * mode and phase (K3, K8): INVALID_STATE / POISONED / DEVICE_LOST; current
 * device (K5): INVALID_STATE; id: UNKNOWN_ID; arguments (args/nargs matching
 * the signature, fitting the kernel-args capacity and the device's
 * parameter limit, every tensor with a non-zero address and size — a NULL
 * or zero-length tensor is refused on every platform, before any range
 * lookup — and larger than the largest byte offset its
 * task bindings use, the caller stream not one of the context's streams and
 * on the borrowed device, and on the sim every tensor range inside one live
 * allocation of the device): INVALID_ARGUMENT, except that arguments larger
 * than the kernel-args capacity or the device's kernel parameter limit are
 * CAPACITY (K11); a caller-stream query that fails for another reason than
 * a bad handle keeps its mapped platform status (OUT_OF_MEMORY,
 * DEVICE_LOST, ...); capture: CAPTURE_ACTIVE when
 * the context's streams belong to a capture the caller stream is not in
 * (K34), CAPTURE_BROKEN when the caller's capture is already invalidated;
 * CAPACITY when a captured launch finds the pool of graph lifetime tokens
 * exhausted (K25). A captured launch attaches its token to the graph right
 * after its first enqueue (a launch refused before that holds none; a
 * failing attach is a failure after enqueueing started: CAPTURE_BROKEN).
 * The preflight's only platform calls are the current-device read, one
 * query of the caller stream (device and capture state), on the sim the
 * range lookups (a range accepted once is trusted until an allocation of
 * the device is freed: docs/kernel-mode.md), and, only while a captured
 * launch of this context may still hold its streams, the AICPU stream's
 * capture-info query (K34).
 *
 * Then it only enqueues (K19: no allocation, no host wait, no sync, no event
 * query; the one exception is the failure path's error-word access, which
 * on a platform whose device memory is not host-visible waits, bounded, for
 * its own private copy — never for the caller's, a context or a capturing
 * stream: platform.h's atomic_read_u32/atomic_write_u32, docs/cuda.md) the
 * chained sequence of K20:
 *   caller: record START
 *   AICPU:  wait START; acquire step; record AICORE_START
 *   AICore: wait AICORE_START; workers; record AICORE_DONE
 *   AICPU:  scheduler (args by value, K22); wait AICORE_DONE; record AICPU_DONE
 *   caller: wait AICPU_DONE; record SERIAL_TAIL
 * A launch captured into a graph replays with the args it was captured
 * with (K22; an updatable launch, kctx_launch_updatable, with its slot's
 * current set, K37); dozens of graphs may share the context and its five events
 * (K12). Eager launches of one context are serialised in host order through
 * its streams, whatever caller streams they come from (K23) — a real
 * ordering between those caller streams. Graph replays the caller does not
 * order with other launches of the same context are a contract violation:
 * kctx detects it on the device (check reports CONCURRENT_LAUNCH) and never
 * corrupts outputs or hangs.
 *
 * Success means SUBMITTED; device-side failures surface through
 * kctx_check, the stream's own error reporting and the runtime error slot.
 * A failure after enqueueing started poisons the context; kctx still drives
 * the chain back to the caller stream (K24) and returns the submission
 * error (CAPTURE_BROKEN inside a capture: discard that capture). When even
 * the compensating abort cannot be enqueued, kctx aborts the run through a
 * streamless device-word write (the path K35 uses), which the runtime's
 * device programs honour, so the caller stream still completes promptly.
 *
 * Errors carried between streams: on the sim (as on CANN) a stream keeps a
 * failure of its work, and event waits carry it on. A caller stream whose
 * own work failed before a launch passes that error into the context's
 * streams; from then on the context's launches compute nothing and their
 * caller streams report the error. kctx_check reports this as
 * DEVICE_ERROR and poisons the context: it is never silent.
 * What a user learns where, when a framework kernel fails just before a
 * kctx launch:
 *  - eager launch: the caller stream reports the failure (its sync or
 *    query), the launch and every later launch of the context compute
 *    nothing (the error now sits in the context's streams), and
 *    kctx_check returns DEVICE_ERROR and poisons the context;
 *  - captured launch, on each replay: the replay stream reports the
 *    failure and the launch computes nothing in that replay; the graph's
 *    nodes run on the replay stream, not on the context's streams, so
 *    no context stream holds the error: kctx_check stays OK, the context
 *    READY, and later launches and replays compute normally. The replay
 *    stream's own error reporting is the only place the failure shows.
 *    This is the sim's behaviour (and the CUDA double's) for a kernel that
 *    reports an error. A fault the device itself cannot contain is
 *    different: on CUDA a trapping kernel leaves a sticky (700-series)
 *    error in the whole CUDA context, which every later call, kctx's
 *    included, reports — kctx then sees a fatal error and quarantines the
 *    context (K29; docs/cuda.md).
 *
 * Capturing on stream S while launching on another stream T leaves the
 * launch out of S's graph: which stream is captured is the caller's
 * responsibility.
 * Errors: INVALID_HANDLE; INVALID_ARGUMENT; INVALID_STATE; POISONED;
 * DEVICE_LOST; UNKNOWN_ID; CAPACITY; CAPTURE_ACTIVE; CAPTURE_BROKEN;
 * PLATFORM_ERROR (the platform reports an active capture without its
 * graph); a platform call's mapped status (the preflight's queries, or a submission failure). */
KCTX_API kctx_status kctx_launch(kctx_context ctx, uint64_t id, const kctx_arg *args,
                                 uint32_t nargs, uint64_t caller_stream);

/* ---- Updatable captured launches (K37-K40) ------------------------------
 * A launch captured into a graph normally replays with the arguments it
 * was captured with (K22). kctx_launch_updatable makes the same captured
 * launch (same checks, same chain, same errors as kctx_launch) whose
 * arguments live in an argument slot in device memory that the context made
 * at init (K11: one slot per graph lifetime token, token_capacity, so an
 * updatable launch never fails where a plain captured one works; CAPACITY
 * when they are all held). Every replay reads the slot's current set when
 * it runs; until the first update that is the captured set. The handle
 * names the slot for as long as the launch's graph lives: once the graph's
 * lifetime hook has run (the hook of K25, which a platform may run late),
 * the slot returns to the pool and the handle is stale.
 *
 * kctx_launch_updatable is legal only while caller_stream is capturing
 * (eager: INVALID_STATE, nothing enqueued). out must not be NULL.
 *
 * kctx_update_args checks `args` as a launch of the callable the handle was
 * captured with (K18: the same count and kinds, tensors inside live
 * allocations) and enqueues on `stream` one small device program whose
 * by-value parameter block carries the new set (no host buffer outlives
 * the call; legal inside another capture, so one graph can set the next
 * graph's arguments). It never waits (K19). Refused with nothing enqueued
 * (K9): a changed count or kind (INVALID_ARGUMENT), a stale or foreign
 * handle (INVALID_ARGUMENT), a poisoned, quarantined or closed context (as
 * a launch is). When its one platform call fails, nothing was enqueued and
 * the context is not poisoned (K40); the call's mapped status is returned.
 *
 * Ordering (K37-K39), stated like CUDA's: an update and the replays ordered
 * with it (the same stream, or joined by events) behave as if the update
 * happened at its place in that order: replays ordered after it read the
 * new set, replays ordered before it, even if still running, read the set
 * they started with. A replay never reads a half-updated set. An update
 * and a replay that are not ordered with each other break the contract
 * (like K23's unordered replays); kctx then still guarantees that the
 * replay runs with one whole set, the old or the new one.
 *
 * Built for the RESIDENT strategy on platforms with capture (the sim, ACL)
 * so far: under HOST_ORDERED and on CUDA and OpenCL both calls return
 * UNSUPPORTED. */
typedef uint64_t kctx_args_handle;
KCTX_API kctx_status kctx_launch_updatable(kctx_context ctx, uint64_t id, const kctx_arg *args,
                                           uint32_t nargs, uint64_t caller_stream,
                                           kctx_args_handle *out);
KCTX_API kctx_status kctx_update_args(kctx_context ctx, kctx_args_handle handle,
                                      const kctx_arg *args, uint32_t nargs, uint64_t stream);

typedef struct kctx_check_report {
    size_t size; /* sizeof(kctx_check_report) */
    kctx_status
        device_status; /* OK, DEVICE_ERROR (a task failed or a run stalled), CONCURRENT_LAUNCH,
                                * or POISONED (the host poisoned the context earlier) */
    uint32_t refused_replays;     /* K35: replays refused by a poisoned context's scheduler */
    uint32_t concurrent_launches; /* K23 */
    uint64_t error_detail;        /* DEVICE_ERROR: the failed task's index */
} kctx_check_report;
#define KCTX_CHECK_REPORT_INIT \
    { sizeof(kctx_check_report), KCTX_OK, 0, 0, 0 }

/* Check the device side of a context (outside capture): reads the device
 * error word and counters without waiting for anything. A device error or
 * a detected concurrent launch poisons the context (runtime error slot) and
 * is returned; afterwards the context's graphs refuse to run (K35). A
 * context stream that holds a device error (one passed in from a caller
 * stream, see kctx_launch) is reported the same way: DEVICE_ERROR, the
 * context poisoned. Accepted in READY, POISONED and QUARANTINED (there it
 * returns DEVICE_LOST without touching the device). `report` may be NULL.
 * A report from a newer kctx.h (larger size) is filled as far as this
 * library knows and its unknown tail zeroed.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (report->size), INVALID_STATE
 * (phase, or another current device: K5), CAPTURE_ACTIVE, DEVICE_LOST,
 * DEVICE_ERROR, CONCURRENT_LAUNCH, POISONED, a query's mapped status. */
KCTX_API kctx_status kctx_check(kctx_context ctx, kctx_check_report *report);

/* Program mode's synchronous run: the same device programs on the streams
 * the program context owns; waits for completion (bounded by the config's
 * prepare_timeout_ms). The calling thread's current device must be the one
 * the context owns (K5: INVALID_STATE otherwise). A fatal error triggers
 * program mode's recovery (K31): it resets the context's own device (making
 * it current for that call only), abandons every handle and leaves the
 * context CLOSED. On a kernel context: INVALID_STATE (K3). Check order,
 * as kctx_launch's: mode and phase, current device (K5), id, arguments.
 * Errors: INVALID_HANDLE; INVALID_STATE (not a program context, phase, or
 * another current device: K5); POISONED; DEVICE_LOST; UNKNOWN_ID;
 * INVALID_ARGUMENT and CAPACITY (the arguments, as kctx_launch); a platform
 * call's mapped status (TIMEOUT included). */
KCTX_API kctx_status kctx_run(kctx_context ctx, uint64_t id, const kctx_arg *args, uint32_t nargs);

/* Write the trace collected so far (K32) to the config's trace_path, for
 * processes that never close. Legal while launches run and captured graphs
 * replay: only committed records are copied (on the upload stream), then
 * their ring slots are freed; nothing is read twice (records that found
 * the ring full are counted as dropped). Each flush rewrites trace_path
 * with everything collected since init: the host buffers are not emptied
 * by a flush, so once trace_device_records device records (or
 * trace_host_records host spans) have been collected, later ones are
 * consumed and counted as dropped — a process that never closes sizes them
 * for the span it wants to keep. Not while the context's
 * streams are in a capture (CAPTURE_ACTIVE). UNSUPPORTED when tracing is
 * off. Accepted in READY and POISONED. Check order: tracing off
 * (UNSUPPORTED, a property of the config: in any phase), phase
 * (DEVICE_LOST, INVALID_STATE), current device (K5), capture state.
 * Errors: INVALID_HANDLE; UNSUPPORTED; DEVICE_LOST (quarantined);
 * INVALID_STATE (phase, or another current device: K5); CAPTURE_ACTIVE;
 * PLATFORM_ERROR (the trace file cannot be written); a platform call's
 * mapped status. */
KCTX_API kctx_status kctx_trace_flush(kctx_context ctx);

/* ------------------------------------------------------------------------
 * Queries. Errors (every query that returns a status): INVALID_HANDLE;
 * INVALID_ARGUMENT (an output pointer NULL, or msg NULL with msg_size > 0).
 * ---------------------------------------------------------------------- */
KCTX_API kctx_status kctx_get_phase(kctx_context ctx, kctx_phase *phase);
KCTX_API kctx_status kctx_get_mode(kctx_context ctx, kctx_mode *mode);
/* The device a context borrowed (kernel) or owns (program); -1 if NEW. */
KCTX_API kctx_status kctx_get_device(kctx_context ctx, int *device);
/* Platform name ("sim"). Never NULL for a live handle. */
KCTX_API const char *kctx_platform_name(kctx_context ctx);

/* The two error slots (K10): the runtime error (first cause of poisoning or
 * quarantine) and the teardown error (first real release failure, kept after
 * a later retry succeeds). *status is KCTX_OK when the slot is empty; the
 * message is copied into msg (always NUL-terminated when msg_size > 0). */
KCTX_API kctx_status kctx_runtime_error(kctx_context ctx, kctx_status *status, char *msg,
                                        size_t msg_size);
KCTX_API kctx_status kctx_teardown_error(kctx_context ctx, kctx_status *status, char *msg,
                                         size_t msg_size);

/* The last error message for the context (any thread's last refusal on it)
 * and for the calling thread. Valid until the next kctx call on that
 * context / thread. Never NULL; at most 1023 bytes (a longer one, such as
 * an OpenCL build log, is cut there). */
KCTX_API const char *kctx_last_error(kctx_context ctx);
KCTX_API const char *kctx_thread_last_error(void);

/* Resident resource counts and sizes of a context (0 for what it does not
 * hold: a NEW context holds nothing), for tests and footprint
 * measurements. An output struct that grows (see "Structs that grow"): an
 * older caller's struct (published sizes 144, 152) is filled only as far as
 * it reaches, a newer one's unknown tail is zeroed.
 * Errors: INVALID_HANDLE; INVALID_ARGUMENT (info NULL, or info->size not a
 * published size and not larger than this library's). */
typedef struct kctx_resource_info {
    size_t size;
    uint64_t aicpu_stream, aicore_stream;
    uint64_t events[5];
    uint64_t programs_module;
    uint64_t runtime_image, arch_table, args_block; /* device addresses */
    uint64_t runtime_image_bytes, arch_table_bytes, args_block_bytes;
    uint32_t token_capacity, tokens_in_use;
    uint32_t callables;    /* prepared ids */
    uint32_t uploads;      /* distinct uploads (shared by identical images) */
    uint64_t upload_bytes; /* device bytes held by uploads */
    /* ---- end of the first version (144 bytes) ---- */
    uint64_t upload_stream; /* the third context stream: trace copy-backs (never captured) */
    /* ---- end of the second version (152 bytes) ---- */
    uint64_t arg_slots, arg_slots_bytes; /* updatable launches' slots (K37; 0: none) */
    uint32_t arg_slot_count, arg_slots_in_use;
} kctx_resource_info; /* published sizes: 144, 152, 176 */
#define KCTX_RESOURCE_INFO_INIT                                                                   \
    {                                                                                             \
        sizeof(kctx_resource_info), 0, 0, {0, 0, 0, 0, 0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
            0, 0, 0, 0                                                                            \
    }
KCTX_API kctx_status kctx_get_resources(kctx_context ctx, kctx_resource_info *info);

/* Calls the context made into the platform table since creation (every
 * call, failed ones too): a test's ruler for fault sweeps and K11. */
KCTX_API kctx_status kctx_platform_calls(kctx_context ctx, uint64_t *calls);

/* ------------------------------------------------------------------------
 * Platforms: the registry and the capability query (docs/platforms.md)
 * ---------------------------------------------------------------------- */

/* What a platform declares (its descriptor) and what the registry knows of
 * it. An output struct that grows (see "Structs that grow"; published
 * sizes: 72, 80). Strings are the registry's: valid for the life of the
 * process. */
typedef struct kctx_platform_caps {
    size_t size;        /* sizeof(kctx_platform_caps) */
    const char *name;   /* "sim", "opencl", "cuda" */
    const char *reason; /* why it is not built or not available; "" when available */
    int built;          /* this library was built with it */
    int available;      /* it can be used on this machine (0 when not built) */
    /* The rest is 0 unless available. */
    uint32_t strategies;       /* KCTX_STRATEGY_BIT(...) of each strategy it offers */
    uint32_t default_strategy; /* kctx_strategy used when config and environment say DEFAULT */
    uint32_t max_params_size;  /* largest kernel parameter block, bytes (a device may have less) */
    int has_capture;           /* launches can be captured into the caller's graphs */
    int has_null_stream;       /* caller stream 0 names a default stream */
    int has_epoch;             /* device epochs: an owner reset ends a quarantine (K36) */
    int can_check_ranges;      /* launch checks tensor ranges against live allocations (K18) */
    int program_mode;          /* kctx_program_init is possible */
    /* kctx_get_context_caps: the context's strategy in effect once init
     * latched it (KCTX_STRATEGY_DEFAULT before); kctx_get_platform_caps:
     * KCTX_STRATEGY_DEFAULT. */
    uint32_t strategy;
    uint32_t reserved; /* 0 */
    /* Added with size 80: where the platform runs, when that is narrower
     * than "available" says (acl: only where kctx's runtime programs load —
     * here the ACL driver double); "" when it has nothing to add. Set
     * whether or not it is available. */
    const char *note;
} kctx_platform_caps;
#define KCTX_PLATFORM_CAPS_INIT \
    { sizeof(kctx_platform_caps), NULL, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL }

/* The number of platforms this library knows (built or not): the registry,
 * made from the build's options. Never fails. */
KCTX_API uint32_t kctx_platform_count(void);
/* The name of the index-th known platform (0 <= index < count), in a fixed
 * order; NULL past the end. Static storage. Probes no platform: a platform
 * is probed (its runtime loaded, its devices counted) only once something
 * names it — a context created on it, its capabilities asked for. */
KCTX_API const char *kctx_platform_name_at(uint32_t index);

/* The capabilities of a platform by name (NULL: KCTX_PLATFORM, else "sim",
 * as kctx_context_create). A known platform that is not built or not
 * available is answered too (OK, with built/available 0 and the reason).
 * No platform call, no context. Any thread.
 * Errors: INVALID_ARGUMENT (caps NULL or caps->size not accepted, see
 * "Structs that grow"); NOT_FOUND (no known platform has that name). */
KCTX_API kctx_status kctx_get_platform_caps(const char *name, kctx_platform_caps *caps);

/* The capabilities of a context's platform, and the context's strategy in
 * effect. Any phase, any mode; no platform call.
 * Errors: INVALID_HANDLE; INVALID_ARGUMENT (caps NULL or caps->size not
 * accepted). */
KCTX_API kctx_status kctx_get_context_caps(kctx_context ctx, kctx_platform_caps *caps);

/* Whether a launch of callable `id` on this context may be captured into a
 * caller's graph here: OK when the platform has capture and the id is
 * prepared; otherwise the answer's status, with the reason in the last
 * error. A question, not a launch: no platform call, nothing changes, any
 * phase (a poisoned context's launches are refused, whatever this says).
 * Statuses: OK (yes); otherwise, checked in this order: INVALID_HANDLE;
 * INVALID_STATE (a mode-less or program-mode context: only kernel mode
 * launches onto a caller's stream, K3); UNSUPPORTED (the platform has no
 * capture: launch eagerly); UNKNOWN_ID (no callable is prepared under
 * `id`).
 * Errors: INVALID_HANDLE, INVALID_STATE, UNSUPPORTED, UNKNOWN_ID. */
KCTX_API kctx_status kctx_capturable(kctx_context ctx, uint64_t id);

/* ------------------------------------------------------------------------
 * Fault injection and call counting at the platform seam (test support)
 *
 * Every call kctx makes into a platform's tables — the kernel ops, program
 * mode's lifecycle ops, and the calls whose failure is itself an answer (a
 * stream query's "not ready", a range check's miss) — goes through one
 * wrapper in the core. That wrapper counts the call (per context:
 * kctx_platform_calls; per thread and operation: kctx_thread_platform_calls)
 * and can fail it before the platform is called, with the status class the
 * fault names, so that fault sweeps run on every platform, not only on the
 * sim. An injected failure goes through the same mapping as a real one
 * (K29's quarantine included); its message says "injected fault".
 * ---------------------------------------------------------------------- */
// clang-format off
#define KCTX_PLATFORM_OP_MAP(X) \
    X(DEVICE_COUNT, device_count) X(DEVICE_INFO, device_info) \
    X(STREAM_CREATE, stream_create) X(STREAM_DESTROY, stream_destroy) \
    X(STREAM_SYNC, stream_sync) X(STREAM_QUERY, stream_query) \
    X(STREAM_INFO, stream_info) X(EVENT_CREATE, event_create) \
    X(EVENT_DESTROY, event_destroy) X(EVENT_RECORD, event_record) \
    X(STREAM_WAIT_EVENT, stream_wait_event) X(MEM_ALLOC, mem_alloc) \
    X(MEM_FREE, mem_free) X(MEMCPY_HTOD_ASYNC, memcpy_htod_async) \
    X(MEMSET_ASYNC, memset_async) X(MEMCPY_DTOH_ASYNC, memcpy_dtoh_async) \
    X(ATOMIC_READ_U32, atomic_read_u32) X(ATOMIC_WRITE_U32, atomic_write_u32) \
    X(MODULE_LOAD, module_load) X(MODULE_UNLOAD, module_unload) \
    X(MODULE_FUNCTION, module_function) X(LAUNCH, launch) \
    X(CURRENT_DEVICE, current_device) X(DEVICE_EPOCH, device_epoch) \
    X(MEM_RANGE_CHECK, mem_range_check) X(FUNCTION_ADDRESS, function_address) \
    X(EXCHANGE_CAPTURE_MODE, exchange_capture_mode) \
    X(GRAPH_ATTACH_HOOK, graph_attach_hook) X(BOUND_DEVICE, bound_device) \
    X(LIFECYCLE_INIT, init) X(LIFECYCLE_FINALIZE, finalize) \
    X(LIFECYCLE_SET_DEVICE, set_device) X(LIFECYCLE_RESET_DEVICE, reset_device) \
    X(MEM_FREE_COUNTER, mem_free_counter)
// clang-format on

/* The operations of kctx/platform.h's tables, as the seam counts them. */
typedef enum kctx_platform_op {
    KCTX_POP_ANY = -1,
#define KCTX_POP_ENUM_(NAME, member) KCTX_POP_##NAME,
    KCTX_PLATFORM_OP_MAP(KCTX_POP_ENUM_)
#undef KCTX_POP_ENUM_
    KCTX_POP_COUNT
} kctx_platform_op;
/* "stream_sync", ...; "any" for KCTX_POP_ANY, "unknown" otherwise. */
KCTX_API const char *kctx_platform_op_name(int op);

/* The `nth` (1-based) matching call made after arming — of operation `op`
 * (KCTX_POP_ANY: any), made by the arming thread when `this_thread_only`,
 * on any context — fails with `error` instead of reaching the platform.
 * With `persistent`, that call and every later matching one fail.
 * `error` names the status class of the failure: PLATFORM_ERROR,
 * OUT_OF_MEMORY, BUSY (work not ready), DEVICE_LOST, CAPTURE_BROKEN,
 * TIMEOUT, DEVICE_ERROR or UNSUPPORTED. At most KCTX_MAX_FAULTS are armed at
 * once (CAPACITY beyond).
 * Errors: INVALID_ARGUMENT (fault or fault_id NULL, size too small, op,
 * nth 0, or an error not in that list); CAPACITY. */
#define KCTX_MAX_FAULTS 16
typedef struct kctx_fault {
    size_t size; /* sizeof(kctx_fault) */
    int op;      /* kctx_platform_op */
    uint64_t nth;
    int persistent;
    int this_thread_only;
    kctx_status error;
} kctx_fault;
#define KCTX_FAULT_INIT \
    { sizeof(kctx_fault), KCTX_POP_ANY, 1u, 0, 1, KCTX_PLATFORM_ERROR }
KCTX_API kctx_status kctx_fault_arm(const kctx_fault *fault, int *fault_id);
/* How many calls fault `fault_id` has failed. Errors: INVALID_ARGUMENT. */
KCTX_API kctx_status kctx_fault_hits(int fault_id, uint64_t *hits);
/* Disarm every fault. */
KCTX_API void kctx_fault_clear_all(void);
/* Calls of `op` (KCTX_POP_ANY: all) the calling thread made through the
 * seam, on any context, injected failures included. */
KCTX_API uint64_t kctx_thread_platform_calls(int op);

/* Holds at the seam: the `nth` (1-based) call of operation `op`
 * (KCTX_POP_ANY: any) made after arming, by any thread on any context,
 * blocks in the seam — before a fault is matched and before the platform
 * is reached, with whatever locks its entry holds — until the hold is
 * released. Lets a test stop an entry inside a given platform call and
 * prove what another thread can (not) do meanwhile (K23, K33). At most
 * KCTX_MAX_HOLDS are armed at once; kctx_fault_clear_all leaves them.
 * wait_reached waits up to timeout_ms for the held call to arrive
 * (TIMEOUT otherwise); release lets it go (also disarms a hold not yet
 * reached). Errors: INVALID_ARGUMENT (op, nth 0, hold_id NULL or not a
 * hold); CAPACITY; TIMEOUT. */
#define KCTX_MAX_HOLDS 8
KCTX_API kctx_status kctx_seam_hold_arm(int op, uint64_t nth, int *hold_id);
KCTX_API kctx_status kctx_seam_hold_wait_reached(int hold_id, uint32_t timeout_ms);
KCTX_API kctx_status kctx_seam_hold_release(int hold_id);
/* Release and disarm every hold. */
KCTX_API void kctx_seam_hold_release_all(void);

#ifdef __cplusplus
}
#endif
#endif /* KCTX_KCTX_H */
