/*
 * kctx/task_abi.h — the task ABI: how a callable's kernels receive their
 * work, under every execution strategy and on every platform.
 *
 * A task kernel's parameter block is a small header, then one u64 per child
 * parameter (the bindings, see examples/callables/kernels/callable_abi.h):
 *
 *     kctx_task_header  (32 bytes)
 *     uint64_t          binding[header.nbindings]
 *
 * The header carries what the kernel needs besides its arguments: the
 * device address of the context's runtime image (its device error word and
 * trace ring), the launch identity, flags, and the task's index and
 * function id (for the trace).
 *
 * Kernels are written with KCTX_TASK(name) (the sim's form is below): the
 * wrapper checks the block, passes the task's GATE when the launch is
 * host-ordered (any device error — poisoned, quarantined, a concurrent
 * launch, a failed task — closes every gate, so an overlap of two runs
 * stops both at their next task, K23/K35), runs the body, records a failure
 * (which task) and writes the task's trace record (K32). One kernel binary
 * therefore runs under both strategies: RESIDENT's workers call it with a
 * header whose flags have no gate; HOST_ORDERED launches it directly.
 *
 * KCTX_TASK also exports a marker symbol, KCTX_TASK_MARKER_PREFIX + name;
 * prepare refuses (INCOMPATIBLE_IMAGE) a child whose module lacks it.
 *
 * This header is usable by kernel code (no libc; C11 atomics) and by host
 * code.
 */
#ifndef KCTX_TASK_ABI_H
#define KCTX_TASK_ABI_H

#include <stddef.h>
#include <stdint.h>

#define KCTX_TASK_ABI_VERSION 1u
/* The marker symbol of task kernel `name` is "kctx_task_v1__" name. */
#define KCTX_TASK_MARKER_PREFIX "kctx_task_v1__"

/* Header flags. */
#define KCTX_TASK_TRACE 1u /* write a trace record for each block (K32) */
#define KCTX_TASK_GATED 2u /* host-ordered: skip the body once the device error word is set */

typedef struct kctx_task_header {
    uint64_t runtime_image; /* device address of the context's runtime image */
    uint64_t launch_id;     /* the launch's identity (a replay carries its capture's) */
    uint32_t flags;         /* KCTX_TASK_* */
    uint32_t task;          /* the task's index in the callable */
    uint32_t func_id;       /* the task's function id (its child) */
    uint32_t nbindings;     /* u64 bindings after the header */
} kctx_task_header;

/* Device error word values (the runtime image's `error`). */
#define KCTX_TASK_ERR_NONE 0u
#define KCTX_TASK_ERR_CONCURRENT_LAUNCH 1u
#define KCTX_TASK_ERR_TASK_FAILED 2u
#define KCTX_TASK_ERR_POISONED 3u
#define KCTX_TASK_ERR_QUARANTINED 4u
#define KCTX_TASK_ERR_BAD_LAUNCH 5u
/* A task kernel received a block it cannot read (detail: its size). */
#define KCTX_TASK_ERR_PARAMS 0x1f0u

/* Device trace records (K32): kinds. */
#define KCTX_TASK_TRACE_SCHED 1u   /* the run: scheduler (resident) or acquire..finalize */
#define KCTX_TASK_TRACE_TASK 2u    /* one block of one task */
#define KCTX_TASK_TRACE_REFUSED 3u /* a replay a poisoned context refused (K35) */

/* One trace record. The ring is circular: index i lives in slot
 * i % capacity. A writer reserves an index while head - tail < capacity
 * (tail: the host's consumer index), writes the record, then stores its
 * commit word (the low 32 bits of i + 1) with release order; the host
 * copies a record only after reading its commit word and frees the slot by
 * moving the tail past it. */
typedef struct kctx_task_trace_rec {
    uint64_t t0, t1; /* ns, device clock (the host's monotonic clock on the sim) */
    uint64_t launch_id;
    uint32_t kind; /* KCTX_TASK_TRACE_* */
    uint32_t core; /* AICore core, or UINT32_MAX for the AICPU */
    uint32_t task;
    uint32_t func_id;
    uint32_t block;
    uint32_t commit;
} kctx_task_trace_rec;

/* The leading words of the runtime image that task kernels and the
 * runtime's device programs share (kctx's runtime image starts with
 * exactly these; kctx/rt_layout.h asserts it). */
typedef struct kctx_task_rt {
    uint32_t magic;
    uint32_t error;        /* device error word (KCTX_TASK_ERR_*) */
    uint64_t error_detail; /* TASK_FAILED: the task index */
    uint64_t reserved[3];
    uint64_t trace_ring;     /* device address of the ring (0: tracing off) */
    uint64_t trace_capacity; /* records */
    uint64_t trace_head;     /* writers: the next index to reserve */
    uint32_t trace_tail;     /* host: the next index to consume (low 32 bits) */
    uint32_t trace_dropped;  /* records dropped on a full ring (mod 2^32) */
} kctx_task_rt;

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && \
    !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>

/* Append a trace record to the ring of `rt` (no-op when tracing is off).
 * A full ring drops the record and counts it. */
static inline void kctx_task_trace_append(kctx_task_rt *rt, uint32_t kind, uint64_t t0, uint64_t t1,
                                          uint64_t launch, uint32_t core, uint32_t task,
                                          uint32_t func, uint32_t block) {
    if (!rt->trace_ring) return;
    const uint64_t cap = rt->trace_capacity;
    _Atomic uint64_t *head = (_Atomic uint64_t *)&rt->trace_head;
    uint64_t i = atomic_load(head);
    do {
        if ((uint32_t)i - atomic_load((_Atomic uint32_t *)&rt->trace_tail) >= cap) {
            atomic_fetch_add((_Atomic uint32_t *)&rt->trace_dropped, 1);
            return;
        }
    } while (!atomic_compare_exchange_weak(head, &i, i + 1));
    kctx_task_trace_rec *r = (kctx_task_trace_rec *)(uintptr_t)rt->trace_ring + i % cap;
    r->t0 = t0;
    r->t1 = t1;
    r->launch_id = launch;
    r->kind = kind;
    r->core = core;
    r->task = task;
    r->func_id = func;
    r->block = block;
    atomic_store_explicit((_Atomic uint32_t *)&r->commit, (uint32_t)(i + 1), memory_order_release);
}

#ifdef KCTX_SIM_KERNEL_H
/* ---- the sim's form of a task kernel ---------------------------------------------------------
 *
 *     #include <kctx/sim_kernel.h>
 *     #include <kctx/task_abi.h>
 *     KCTX_TASK(k_vadd) {            // (a, b, c: tensor; n: scalar)
 *         if (nargs != 4) { ctx->svc->report_error(MY_ERR, nargs); return; }
 *         ... arg[0] .. arg[3], ctx->block_idx, ctx->block_dim ...
 *     }
 *
 * The body receives the block's context, the bindings and their count. */
typedef void (*kctx_task_body_fn)(const sim_kernel_ctx *ctx, const void *params,
                                  size_t params_size);

static inline void kctx_task_enter(const sim_kernel_ctx *ctx, const void *params,
                                   size_t params_size, kctx_task_body_fn body) {
    const kctx_task_header *h = (const kctx_task_header *)params;
    if (!params || params_size < sizeof *h ||
        (params_size - sizeof *h) / sizeof(uint64_t) < h->nbindings) {
        ctx->svc->report_error(KCTX_TASK_ERR_PARAMS, params_size);
        return;
    }
    /* The runtime image is touched only when the flags ask for it: a
     * launcher outside kctx passes 0 with flags 0. */
    kctx_task_rt *rt = (kctx_task_rt *)(uintptr_t)h->runtime_image;
    const int gated = (h->flags & KCTX_TASK_GATED) != 0 && rt != NULL;
    /* The gate (host-ordered): any device error stops every later task. */
    if (gated && atomic_load((_Atomic uint32_t *)&rt->error) != KCTX_TASK_ERR_NONE) return;
    const int tracing = (h->flags & KCTX_TASK_TRACE) != 0 && rt != NULL;
    uint64_t t0 = tracing ? ctx->svc->clock_ns() : 0;
    uint32_t code = 0;
    uint64_t detail = 0;
    /* The body runs through the call service, which captures a device error
     * it reports instead of failing the launch at once. */
    uint64_t entry;
    __builtin_memcpy(&entry, &(uintptr_t){(uintptr_t)body}, sizeof entry);
    int failed = ctx->svc->call(entry, ctx, params, params_size, &code, &detail);
    if (tracing)
        kctx_task_trace_append(rt, KCTX_TASK_TRACE_TASK, t0, ctx->svc->clock_ns(), h->launch_id,
                               ctx->core_id, h->task, h->func_id, ctx->block_idx);
    if (!failed) return;
    if (gated) {
        /* host-ordered: the error word names the task, and closes the gates */
        uint32_t none = KCTX_TASK_ERR_NONE;
        if (atomic_compare_exchange_strong((_Atomic uint32_t *)&rt->error, &none,
                                           KCTX_TASK_ERR_TASK_FAILED))
            atomic_store((_Atomic uint64_t *)&rt->error_detail, h->task);
    }
    /* the failure goes on: to the resident worker that called us, or to
     * the stream of a host-ordered launch */
    ctx->svc->report_error(code, detail);
}

#define KCTX_TASK(name)                                                                            \
    static void name##__kctx_body(const sim_kernel_ctx *ctx, const uint64_t *arg, uint32_t nargs); \
    static void name##__kctx_call(const sim_kernel_ctx *ctx, const void *params,                   \
                                  size_t params_size) {                                            \
        const kctx_task_header *h_ = (const kctx_task_header *)params;                             \
        (void)params_size;                                                                         \
        name##__kctx_body(ctx, (const uint64_t *)(h_ + 1), h_->nbindings);                         \
    }                                                                                              \
    SIM_KERNEL(kctx_task_v1__##name) {                                                             \
        (void)ctx;                                                                                 \
        (void)params;                                                                              \
        (void)params_size;                                                                         \
    }                                                                                              \
    SIM_KERNEL(name) { kctx_task_enter(ctx, params, params_size, name##__kctx_call); }             \
    static void name##__kctx_body(const sim_kernel_ctx *ctx, const uint64_t *arg, uint32_t nargs)
#endif /* KCTX_SIM_KERNEL_H */
#endif /* C11 atomics */

#endif /* KCTX_TASK_ABI_H */
