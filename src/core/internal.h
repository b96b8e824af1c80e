/*
 * internal.h — the kernel context's internals, shared by the core's files.
 *
 * Locking: g_ctx_lock (context.c) guards the handle table's writers
 * (create, destroy; entries look handles up without it, pinning the slot)
 * and the claims; each context's `lock` serialises every entry on that
 * context (K33). The order is context lock, then g_ctx_lock; platform
 * calls are made with the context lock held and g_ctx_lock not held.
 */
#ifndef KCTX_CORE_INTERNAL_H
#define KCTX_CORE_INTERNAL_H

#include <kctx/image.h>
#include <kctx/kctx.h>
#include <kctx/platform.h>

#include "../dfx/trace.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

#define KCTX_MSG 1024 /* a message's bytes, NUL included (kctx.h: kctx_last_error) */
/* The largest scheduler parameter block kctx builds (header + args
 * snapshot), kept on the launch path's stack. */
#define SNAPSHOT_LIMIT 4096u
#define KCTX_EVENT_COUNT 5
#define KCTX_STREAM_COUNT 3

/* The context's own streams (K11): the launch chain runs on AICPU and
 * AICore; the upload stream carries only copies that no launch waits for
 * (the trace copy-back), so it is never part of a capture. */
enum {
    KCTX_STREAM_AICPU,
    KCTX_STREAM_AICORE,
    KCTX_STREAM_UPLOAD
};

enum {
    KCTX_EV_START,
    KCTX_EV_AICORE_START,
    KCTX_EV_AICORE_DONE,
    KCTX_EV_AICPU_DONE,
    KCTX_EV_SERIAL_TAIL
};
enum {
    KCTX_MEM_RUNTIME_IMAGE,
    KCTX_MEM_ARCH_TABLE,
    KCTX_MEM_ARGS_BLOCK,
    KCTX_MEM_TRACE_RING,
    KCTX_MEM_ARG_SLOTS, /* updatable launches' argument slots (K37; RESIDENT with capture) */
    KCTX_MEM_COUNT
};

/* The runtime's device programs a context resolves, by strategy:
 * RESIDENT uses acquire, scheduler and worker; HOST_ORDERED acquire and
 * finalize (in the scheduler's slot). */
enum {
    KCTX_PROG_ACQUIRE,
    KCTX_PROG_SCHEDULER,
    KCTX_PROG_FINALIZE = KCTX_PROG_SCHEDULER,
    KCTX_PROG_WORKER,
    KCTX_PROG_UPDATE, /* RESIDENT with capture: kctx_update_args' program (K37) */
    KCTX_PROG_COUNT
};

/* A resident platform object: live until its release succeeds. */
typedef struct kctx_res {
    uint64_t h;
    bool live;
} kctx_res;

typedef struct kctx_ho_task {
    kctx_pfunction fn; /* the child's entry */
    uint32_t block_dim;
    uint32_t func_id;
    uint32_t first_binding;
    uint32_t nbindings;
} kctx_ho_task;

/* A task binding as the launch evaluates it, without a branch:
 * (args[param].value & (int64_t)keep) + value. TENSOR: keep -1, value the
 * byte offset; SCALAR: keep -1, value 0; IMMEDIATE: keep 0, param 0, value
 * the constant. */
typedef struct kctx_ho_binding {
    uint32_t param;
    int32_t keep; /* -1: the argument's value counts; 0: it does not */
    uint64_t value;
} kctx_ho_binding;

/* One upload: the device side of a distinct image (shared by every id
 * prepared with identical bytes, K14). */
typedef struct kctx_upload {
    /* One host allocation per distinct upload (ids with identical bytes
     * share it, K14): this struct, then the arrays below, then the image. */
    uint8_t *image; /* host copy of the validated image (8-aligned): K14's byte comparison */
    size_t size;
    uint32_t crc;
    kctx_image_view view;
    kctx_res *modules;   /* one per child */
    kctx_pfunction *fns; /* one per child */
    uint32_t nchildren;
    kctx_res table; /* device callable table */
    uint64_t table_bytes;
    uint32_t refs; /* ids using it */
    void *staging; /* host copy of the table while its upload may be in flight (K17) */
    /* HOST_ORDERED: the tasks in their order (dependencies only point to
     * earlier tasks, so the image's order is a topological order) and
     * their bindings, which launch turns into by-value parameter blocks */
    struct kctx_ho_task *ho_tasks;
    struct kctx_ho_binding *ho_binds;
    uint32_t ho_ntasks;
    /* RESIDENT: blocks of all tasks together; the worker program is launched
     * with min(core count, this) blocks (more workers could never all find
     * a block to run) */
    uint64_t total_blocks;
    /* launch preflight facts (K18), computed at prepare: one per parameter */
    uint32_t nparams;
    uint8_t *pkind;     /* kctx_param_kind */
    uint64_t *min_size; /* a tensor must be larger than its largest binding offset */
    struct kctx_upload *next;
} kctx_upload;

/* The host side of an updatable launch's argument slot (K37-K40; the
 * device side: kctx/rt_layout.h). `busy` is cleared by the graph's lifetime
 * hook (kctx__slot_hook, any thread, under g_ctx_lock); the rest is written
 * under the context lock by the launch that takes the slot. */
typedef struct kctx_uslot {
    atomic_uint busy;
    uint32_t serial;              /* this use's serial (kctx_args_handle), never 0 */
    const struct kctx_upload *up; /* the callable the launch was captured with */
    uint64_t id;
} kctx_uslot;

typedef struct kctx_callable {
    uint64_t id;
    kctx_upload *up;
} kctx_callable;

/* Tensor ranges a kernel context remembers as checked (K18): a launch's
 * tensors, and a few more for frameworks alternating buffers. */
#define KCTX_RANGE_CACHE 16

typedef struct kctx_ctx {
    pthread_mutex_t lock;
    atomic_uint refs; /* the handle table (while published) and the entries holding the
                         context; the last one frees it (context.c) */
    atomic_bool dead; /* destroyed: the handle is unpublished */
    kctx_context handle;
    const kctx_platform_desc *plat; /* the registry's admitted descriptor: no lifecycle member */
    const kctx_platform_ops *ops;   /* plat->ops: never a lifecycle table (K4) */
    const kctx_platform_lifecycle_ops *lifecycle; /* program mode only (from the registry) */
    kctx_mode mode;
    kctx_phase phase;
    kctx_strategy strategy; /* in effect (never DEFAULT once latched) */
    int device;
    uint64_t epoch;
    bool has_epoch;
    bool claimed;
    uint32_t core_count;
    uint32_t
        max_params; /* the device's largest kernel parameter block (the scheduler's snapshot) */
    uint32_t args_capacity;
    uint32_t token_capacity;
    uint32_t prepare_timeout_ms;

    /* resident resources (K11), in creation order */
    kctx_res streams[KCTX_STREAM_COUNT]; /* KCTX_STREAM_* */
    kctx_res events[KCTX_EVENT_COUNT];
    kctx_res programs;
    kctx_pfunction prog_fn[KCTX_PROG_COUNT]; /* KCTX_PROG_*: the strategy's device programs */
    kctx_res mem[KCTX_MEM_COUNT];
    uint64_t mem_bytes[KCTX_MEM_COUNT];
    void *staging[2]; /* host sources of init's uploads, kept while they may be in flight */
    atomic_uint tokens_in_use; /* live captured graphs holding the context (K25) */
    /* updatable launches (K37): token_capacity slots made at kernel init
     * (RESIDENT with capture; else none), freed at destroy (a graph's hook
     * may still clear `busy` until the handle is unpublished) */
    kctx_uslot *uslots;
    uint32_t nuslots;
    uint32_t uslot_cap;    /* kctx_rt_arg entries per slot buffer */
    uint64_t uslot_stride; /* bytes per device slot */
    uint32_t uslot_next;   /* where the next take starts looking */
    uint32_t uslot_serial; /* the last serial handed out */

    /* prepared callables, in preparation order, and their index by id
     * (open addressing: slot = position + 1, 0 empty; capacity a power of
     * two, at least twice the count) */
    kctx_callable *callables;
    uint32_t ncallables, capcallables;
    uint32_t *id_index;
    uint32_t id_index_cap;
    uint32_t launch_hint; /* position of the callable launched last (launch.c) */
    /* the registered uploads (refs > 0) by the CRC of their bytes, for K14's
     * identical-bytes check (open addressing, at most half full; emptied
     * when close starts releasing uploads and when they are abandoned
     * (K31, K36): the only times a registered upload goes away) */
    kctx_upload **upload_index;
    uint32_t upload_index_cap, upload_index_n;
    kctx_upload *uploads;

    /* tracing (K32): resident host buffers made at init when enabled */
    bool trace;
    bool trace_collected;        /* close copied the device ring back already */
    bool trace_was_on;           /* closed with tracing on: flush is then INVALID_STATE */
    kctx_dfx_names *trace_names; /* callables prepared while tracing (their names) */
    uint32_t ntrace_names;
    char *trace_path;
    uint32_t trace_dev_cap, trace_host_cap;
    kctx_dfx_host_span *spans;
    uint32_t nspans;
    uint64_t spans_dropped;
    kctx_rt_trace_rec *devrecs;
    uint32_t ndevrecs;
    uint64_t devrecs_dropped;
    uint64_t trace_tail;      /* the device ring's consumer index (the host owns it) */
    uint32_t trace_drop_seen; /* the device's dropped counter at the last copy-back */

    /* errors (K10) */
    kctx_status rt_status;
    char rt_msg[KCTX_MSG];
    kctx_status td_status;
    char td_msg[KCTX_MSG];
    char last_msg[KCTX_MSG];

    uint64_t launch_seq; /* launch identities: 1, 2, ... (never 0) */
    /* K34 without a query per launch: set before a captured launch enqueues
     * anything (the context's streams may then belong to its capture);
     * cleared when the AICPU stream's capture query answers NONE. While it
     * is clear, launch skips that query: only kctx's own enqueues pull its
     * streams into a capture. */
    bool streams_maybe_captured;
    /* K18's tensor ranges: the ranges mem_range_check accepted, trusted
     * while the platform's free counter of the device has not moved
     * (ops->mem_free_counter; NULL: no cache). Under the context lock. */
    const uint64_t *free_counter;
    uint64_t ranges_seen; /* the counter's value the cached ranges belong to */
    struct {
        uint64_t lo, hi;
    } ranges[KCTX_RANGE_CACHE];
    uint32_t nranges, next_range;
    atomic_ullong calls;
    uint32_t preparing; /* prepares in their unlocked phase (K16): close waits for them */
} kctx_ctx;

/* context.c */
/* Look up and lock a context; INVALID_HANDLE (thread message set) if not
 * live. On success the caller holds c->lock. */
kctx_status kctx__ctx_acquire(kctx_context h, kctx_ctx **out);
void kctx__ctx_release(kctx_ctx *c);
/* Set the per-thread and per-context last error; returns s. */
kctx_status kctx__fail(kctx_ctx *c, kctx_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
kctx_status kctx__vfail(kctx_ctx *c, kctx_status s, const char *fmt, va_list ap);
/* Put back a message saved from kctx_thread_last_error() (a later call
 * overwrote it). */
void kctx__restore_msg(kctx_ctx *c, const char *msg);
void kctx__set_runtime_error(kctx_ctx *c, kctx_status s, const char *msg);
void kctx__set_teardown_error(kctx_ctx *c, kctx_status s, const char *msg);
/* Claims (K6, K7). */
kctx_status kctx__claim_take(kctx_ctx *c, int device);
void kctx__claim_release(kctx_ctx *c);
/* A graph holding a launch of context `h` is gone (K25). Safe from any
 * thread, also after the context was destroyed. */
void kctx__token_release(kctx_context h);
/* The lifetime hook of an updatable launch's graph (K25, K38): releases its
 * token and returns its argument slot. `user` is kctx__slot_hook_user's. */
void kctx__slot_hook(void *user);
void *kctx__slot_hook_user(kctx_context h, uint32_t slot);

/* Structs that grow (kctx.h): `sizes` lists a struct's published sizes,
 * ascending, the last one this library's sizeof. An input struct is copied
 * over the defaults already in *out (its size then set to this library's);
 * an output struct is checked, then filled as far as the caller's size
 * reaches (a newer caller's unknown tail zeroed). INVALID_ARGUMENT with a
 * message naming `what` and the size. */
kctx_status kctx__struct_in(kctx_ctx *c, const char *what, const void *given, const size_t *sizes,
                            size_t n, void *out);
kctx_status kctx__struct_out_check(kctx_ctx *c, const char *what, const void *dst,
                                   const size_t *sizes, size_t n);
void kctx__struct_out(void *dst, const void *full, size_t full_size);

/* The platform registry lives outside the core: src/platforms/registry.h. */

/* pcall.c: the one way the core calls the platform (the seam).
 *
 *   KP(c, what, op, args...)    call c->ops->op(args...), then map: KCTX_OK or
 *                               the mapped status with a message naming
 *                               `what`, quarantining on a fatal one (K29)
 *   KPL(c, what, op, args...)   the same for program mode's lifecycle table
 *   KP_RAW(c, op, args...)      call and return the platform status, for the
 *                               calls whose failure is itself an answer
 *                               (classify it with kp_classify, map the rest
 *                               with kp_map)
 *
 * Every form counts the call (the context's counter and the thread's per-op
 * counters) and may fail it before the platform is reached, when an armed
 * fault (kctx_fault_arm) matches: the platform status is then KP_INJECTED,
 * which kp_classify, kp_map and the messages understand. No call site
 * counts by hand. */
#define KP_INJECTED INT_MIN
enum {
#define KP_OP_ALIAS_(NAME, member) kp_op_##member = KCTX_POP_##NAME,
    KCTX_PLATFORM_OP_MAP(KP_OP_ALIAS_)
#undef KP_OP_ALIAS_
};
/* Count a call of `op`; true when an armed fault fails it. Inline: the
 * launch path makes a dozen of these (no armed fault: two increments and a
 * load). */
extern atomic_int kp_nfaults;
/* The calling thread's per-op call counters (kctx_thread_platform_calls).
 * Declared const like glibc's __errno_location: the address is the same
 * for the whole life of a thread, so the compiler computes it once per
 * function instead of once per platform call (in a shared library every
 * access to a thread-local variable is a __tls_get_addr call). */
uint64_t *kp_thread_calls(void) __attribute__((const));
/* The counters KP_RAW's calls count in: the calling thread's. A function
 * that makes many platform calls and is handed the pointer by its caller
 * (the launch chain) may define KP_TL to its copy for its body (the
 * compiler cannot share a const call's result across functions). */
#define KP_TL kp_thread_calls()
bool kp_enter_armed(int op);
static inline __attribute__((always_inline)) bool kp_enter_tl(kctx_ctx *c, uint64_t *tl, int op) {
    atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
    tl[op]++;
    if (__builtin_expect(atomic_load_explicit(&kp_nfaults, memory_order_relaxed) == 0, 1))
        return false;
    return kp_enter_armed(op);
}
kctx_status kp_map(kctx_ctx *c, const char *what, int pst);
/* KP's result: the success test inline, the mapping (a message, K29's
 * consequences) out of line; the same as kp_map(c, what, pst). */
static inline kctx_status kp_result(kctx_ctx *c, const char *what, int pst) {
    return __builtin_expect(pst == 0, 1) ? KCTX_OK : kp_map(c, what, pst);
}
/* kp_map's status and message, with no consequence: a fatal status neither
 * quarantines nor recovers (for a check that runs before an entry knows it
 * may act on the context, so that its refusal changes nothing: K9). */
kctx_status kp_describe(kctx_ctx *c, const char *what, int pst);
/* A fatal status `st` (K29): quarantine (kernel mode) or program mode's
 * recovery (K31), as far as the phase allows. Context lock held. */
void kp_fatal(kctx_ctx *c, kctx_status st);
/* An entry's unlocked phase (prepare's validation, loads and upload, K16):
 * between begin and end, the calling thread works on `c` without its lock,
 * so nothing it calls writes the context's shared state: messages go to
 * the thread only, the error slots are left alone, and a fatal status is
 * only noted (kctx__lost answers from the note); end returns whether one
 * was seen, for kp_fatal once the lock is held again. */
void kp_unlocked_begin(const kctx_ctx *c);
bool kp_unlocked_end(void);
bool kp_unlocked(const kctx_ctx *c);
kctx_pclass kp_classify(kctx_ctx *c, int pst);
/* "SIM_TIMEOUT: ..." style detail of a platform status, for messages. */
const char *kp_status_name(kctx_ctx *c, int pst);
const char *kp_last_message(kctx_ctx *c, int pst);
#define KP_RAW(c, op, ...) \
    (kp_enter_tl((c), KP_TL, kp_op_##op) ? KP_INJECTED : (c)->ops->op(__VA_ARGS__))
#define KPL_RAW(c, op, ...) \
    (kp_enter_tl((c), KP_TL, kp_op_##op) ? KP_INJECTED : (c)->lifecycle->op(__VA_ARGS__))
#define KP(c, what, op, ...) kp_result((c), (what), KP_RAW(c, op, __VA_ARGS__))
#define KPL(c, what, op, ...) kp_result((c), (what), KPL_RAW(c, op, __VA_ARGS__))
/* The same for the lifecycle ops that take no argument (C11 wants at least
 * one argument for a macro's `...`). */
#define KPL0_RAW(c, op) (kp_enter_tl((c), KP_TL, kp_op_##op) ? KP_INJECTED : (c)->lifecycle->op())
#define KPL0(c, what, op) kp_result((c), (what), KPL0_RAW(c, op))
/* The device the calling thread works on (K4, K5): the platform's
 * bound_device when it has one (no thread-current device: OpenCL), else
 * its current_device. kp_current_device_raw counts the call and returns the
 * platform status (for paths that must not map or quarantine). */
kctx_status kp_current_device(kctx_ctx *c, int *device);
static inline int kp_current_device_raw(kctx_ctx *c, int *device) {
    if (c->ops->bound_device) return KP_RAW(c, bound_device, device);
    return KP_RAW(c, current_device, device);
}
/* Capture-mode hygiene: switch the thread to relaxed for an entry's
 * platform calls and restore afterwards (nothing on a platform without
 * capture). */
kctx_status kp_relaxed_begin(kctx_ctx *c);
void kp_relaxed_end(kctx_ctx *c);
/* Refuse with `refusal` when either context stream is part of a capture,
 * active or invalidated (K16, K25; the capture-status query is the one
 * query legal on a capturing stream). */
kctx_status kp_require_uncaptured(kctx_ctx *c, kctx_status refusal, const char *what);
/* Refuse with BUSY while work is in flight on the context's streams (K15,
 * K25). Only call it on streams known not to be capturing. */
kctx_status kp_require_idle(kctx_ctx *c, const char *what);
/* The same for one of them (KCTX_STREAM_*). */
kctx_status kp_require_stream_idle(kctx_ctx *c, int which, const char *what);
/* Whether a stream is part of a capture (active or invalidated). */
kctx_status kp_capture_status(kctx_ctx *c, kctx_pstream s, kctx_pcapture_status *st);

/* A fatal error (K29) ended the context's use of its device while it was
 * working: kernel mode quarantined, program mode's recovery abandoned every
 * handle (CLOSED). Whoever is releasing must stop at once: the objects it
 * iterates may be gone. */
bool kctx__lost(const kctx_ctx *c);

/* resources.c */
/* On failure *in_flight tells whether an upload may still be running (then
 * nothing may be released until the streams are idle). */
kctx_status kctx__resources_create(kctx_ctx *c, bool *in_flight);
/* Release what is live, in reverse order; keeps what fails. Returns the
 * first failure. */
kctx_status kctx__resources_release(kctx_ctx *c);
/* Forget every handle without platform calls (K36, K31). */
void kctx__resources_abandon(kctx_ctx *c);

/* prepare.c */
void kctx__callables_free_host(kctx_ctx *c);
/* The callable prepared under `id`, or NULL: a hash lookup (launch's cost
 * does not grow with the number of callables prepared). */
kctx_callable *kctx__find_callable(const kctx_ctx *c, uint64_t id);
kctx_status kctx__uploads_release(kctx_ctx *c);
void kctx__uploads_abandon(kctx_ctx *c);

/* lifecycle.c */
kctx_status kctx__admit(kctx_ctx *c, const char *what);
kctx_status kctx__program_recover(kctx_ctx *c);

/* trace.c (K32) */
uint64_t kctx__now_ns(void);
/* Validate the trace settings and make the host buffers (before the latch:
 * a refusal here is an argument error). */
kctx_status kctx__trace_setup(kctx_ctx *c, uint32_t flags, uint32_t dev_records,
                              uint32_t host_records, const char *path);
void kctx__trace_span(kctx_ctx *c, uint32_t kind, uint64_t t0, uint64_t id, uint64_t launch_id,
                      kctx_status st);
/* Copy the device ring's committed records back on the upload stream and
 * consume them (legal while launches and replays run: it never reads a
 * record being written). On failure *in_flight tells whether the copy may
 * still run into the host buffer (then nothing it touches may be freed). */
kctx_status kctx__trace_collect(kctx_ctx *c, bool *in_flight);
/* Write the file; a failure is returned with a message. */
kctx_status kctx__trace_write(kctx_ctx *c);
/* Remember a prepared callable's names for the trace (no-op when tracing
 * is off; a failed allocation only loses the names). */
void kctx__trace_names(kctx_ctx *c, uint64_t id, const kctx_image_view *v);
void kctx__trace_free(kctx_ctx *c);

/* launch.c: write the device poison word (K35), best effort. */
void kctx__device_poison(kctx_ctx *c);

/* Common entry checks. */
/* K5: the calling thread's device (kp_current_device_raw) is the
 * context's. The read inline; anything but a plain match goes to
 * kctx__check_device_verdict (pcall.c) with the platform status and the
 * device read, which maps the status (or the mismatch) to the refusal. */
kctx_status kctx__check_device_verdict(kctx_ctx *c, int pst, int cur);
static inline kctx_status kctx__check_device(kctx_ctx *c) {
    int cur = -1;
    int pst = kp_current_device_raw(c, &cur);
    if (__builtin_expect(pst == 0 && cur == c->device, 1)) return KCTX_OK;
    return kctx__check_device_verdict(c, pst, cur);
}

#endif
