/*
 * kctx/platform.h — the platform vocabulary: what kctx needs from a device
 * runtime, as tables of operations a platform adapter fills.
 *
 * The vocabulary is split by authority:
 *  - kctx_platform_ops: devices, streams, events, memory, modules, kernel
 *    launches, capture queries, graph lifetime hooks. It has NO device
 *    lifecycle operation: a kernel context receives only this table, so it
 *    cannot set, reset, initialise or finalise a borrowed device — it has no
 *    way to express it (rule K4).
 *  - kctx_platform_lifecycle_ops: init, finalize, set device, reset device.
 *    Only program mode, which owns its device, is handed this table.
 *
 * The core never names a platform: it reaches the table through the KP()
 * wrapper of src/core/pcall.c, which counts the call, maps the status and
 * quarantines on a fatal error. The few calls whose failure is itself an
 * answer (a stream query's NOT_READY, a range check's miss, the capture-
 * mode restore) classify the status where they are made, count the call
 * the same way and hand any other failure to the same mapping.
 *
 * Native handles (streams, events, modules, functions, graphs, device
 * addresses) are opaque 64-bit values; 0 means "none". A platform that uses
 * pointers stores them in the 64 bits.
 *
 * Every operation returns a platform status (`int`, 0 = success, anything
 * else the platform's own code). `classify` maps a platform status to the
 * kctx status class (see kctx.h); `status_name` names it for messages.
 *
 * Locking: every operation may be called from any thread; the platform
 * serialises internally. No operation may call back into kctx.
 * Versioning: tables start with their size; the core refuses a table whose
 * size is smaller than the one it was built against.
 */
#ifndef KCTX_PLATFORM_H
#define KCTX_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t kctx_pstream;
typedef uint64_t kctx_pevent;
typedef uint64_t kctx_pmodule;
typedef uint64_t kctx_pfunction;
typedef uint64_t kctx_pgraph;
typedef uint64_t kctx_pdevptr;

/* What the core needs to know about a device. */
typedef struct kctx_device_info {
    size_t size;
    char name[64];
    uint32_t aicore_count;    /* compute cores (the worker gang size) */
    uint32_t max_params_size; /* largest kernel parameter block */
    uint64_t memory_capacity;
    uint32_t word_size; /* device word usable with wait/wake (4) */
    uint32_t alloc_alignment;
    int has_epoch;        /* device_epoch is meaningful (K30, K36) */
    int can_check_ranges; /* mem_range_check is implemented (K18) */
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
    KCTX_PCLASS_OTHER = 9
} kctx_pclass;

/* Graph lifetime hook: called once when the graph and every executable
 * graph made from it are destroyed and their launches completed (or the
 * capture was invalidated or abandoned). Must not call the platform. */
typedef void (*kctx_phook_fn)(void *user);

typedef struct kctx_platform_ops {
    size_t size; /* sizeof(kctx_platform_ops) */

    /* ---- status vocabulary ---- */
    kctx_pclass (*classify)(void *self, int status);
    const char *(*status_name)(void *self, int status);
    /* Detailed message of the calling thread's last failed call, or "". */
    const char *(*last_message)(void *self);

    /* ---- devices (queries only) ---- */
    int (*device_count)(void *self, int *count);
    /* The calling thread's current device; must work on a lost device. */
    int (*current_device)(void *self, int *device);
    /* Epoch of a device (increments when its owner resets it); must work
     * on a lost device. Only meaningful if info.has_epoch. */
    int (*device_epoch)(void *self, int device, uint64_t *epoch);
    int (*device_info)(void *self, int device, kctx_device_info *info);

    /* ---- streams (created on the calling thread's current device) ---- */
    int (*stream_create)(void *self, kctx_pstream *stream);
    int (*stream_destroy)(void *self, kctx_pstream stream);
    /* Wait for the stream's work, at most timeout_ms (TIMEOUT class). */
    int (*stream_sync)(void *self, kctx_pstream stream, uint32_t timeout_ms);
    /* 0 idle, NOT_READY class while work is pending. Never on a capturing
     * stream (the core checks capture_info first). */
    int (*stream_query)(void *self, kctx_pstream stream);
    /* A stream's device and capture state, in one call: legal at any time,
     * also on a capturing stream; never changes a capture. `id` and `graph`
     * are 0 when status is NONE. Any out-pointer may be NULL. (Launch's
     * preflight checks the caller stream with one call, K18/K25/K34.) */
    int (*stream_info)(void *self, kctx_pstream stream, int *device, kctx_pcapture_status *status,
                       uint64_t *id, kctx_pgraph *graph);

    /* ---- events (synchronisation only: no timing) ---- */
    int (*event_create)(void *self, kctx_pevent *event);
    int (*event_destroy)(void *self, kctx_pevent event);
    int (*event_record)(void *self, kctx_pevent event, kctx_pstream stream);
    int (*stream_wait_event)(void *self, kctx_pstream stream, kctx_pevent event);

    /* ---- device memory (current device) ---- */
    int (*mem_alloc)(void *self, size_t size, kctx_pdevptr *ptr);
    int (*mem_free)(void *self, kctx_pdevptr ptr);
    int (*memcpy_htod_async)(void *self, kctx_pdevptr dst, const void *src, size_t size,
                             kctx_pstream stream);
    int (*memset_async)(void *self, kctx_pdevptr dst, uint8_t value, size_t size,
                        kctx_pstream stream);
    /* Asynchronous device-to-host copy (trace copy-back); `dst` must stay
     * valid until the stream has executed it. */
    int (*memcpy_dtoh_async)(void *self, void *dst, kctx_pdevptr src, size_t size,
                             kctx_pstream stream);
    /* Atomic read of one aligned device word (the host reading a flag). */
    int (*atomic_read_u32)(void *self, kctx_pdevptr ptr, uint32_t *value);
    /* Atomic write of one aligned device word, visible to running and later
     * device programs at once, ordered with no stream (the host poisoning
     * a context, K35). */
    int (*atomic_write_u32)(void *self, kctx_pdevptr ptr, uint32_t value);
    /* Optional (NULL when !info.can_check_ranges): 0 when [ptr, ptr+size)
     * lies inside one live allocation of `device`. */
    int (*mem_range_check)(void *self, int device, kctx_pdevptr ptr, size_t size);

    /* ---- modules and kernels ---- */
    int (*module_load)(void *self, const void *bytes, size_t size, kctx_pmodule *module);
    int (*module_unload)(void *self, kctx_pmodule module);
    int (*module_function)(void *self, kctx_pmodule module, const char *name, kctx_pfunction *fn);
    /* Optional (NULL when the platform's strategy launches task kernels
     * from the host side): the device address of a function's entry
     * point, callable by the platform's device programs. */
    int (*function_address)(void *self, kctx_pfunction fn, uint64_t *address);
    /* `params` is copied at enqueue time. */
    int (*launch)(void *self, kctx_pstream stream, kctx_pfunction fn, kctx_ptarget target,
                  uint32_t block_dim, const void *params, size_t params_size);

    /* ---- capture hygiene and graph lifetime ---- */
    /* Exchange the calling thread's capture mode (*mode gets the old). */
    int (*exchange_capture_mode)(void *self, kctx_pcapture_mode *mode);
    int (*graph_attach_hook)(void *self, kctx_pgraph graph, kctx_phook_fn fn, void *user);
} kctx_platform_ops;

/* Lifecycle: only program mode receives this table. */
typedef struct kctx_platform_lifecycle_ops {
    size_t size;
    int (*init)(void *self);
    int (*finalize)(void *self);
    int (*set_device)(void *self, int device);
    int (*reset_device)(void *self); /* the calling thread's current device */
} kctx_platform_lifecycle_ops;

/* The variant kind of callable images this platform loads (kctx/image.h's
 * kctx_variant_kind values). */
typedef struct kctx_platform_desc {
    size_t size;
    const char *name; /* "sim", "opencl", "cuda" */
    void *self;
    const kctx_platform_ops *ops;
    const kctx_platform_lifecycle_ops *lifecycle;
    int variant_kind;
    /* The runtime's device programs for this platform, as a module image
     * (kernels "kctx_rt_acquire", "kctx_rt_scheduler", "kctx_rt_worker").
     * NULL/0 when the platform has none yet. */
    const void *programs;
    size_t programs_size;
} kctx_platform_desc;

#ifdef __cplusplus
}
#endif
#endif /* KCTX_PLATFORM_H */
