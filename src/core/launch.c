/*
 * launch.c — launch onto the caller's stream (K18-K25, K34), the check call
 * and program mode's synchronous run.
 *
 * The launch path allocates nothing and never waits (K19): preflight facts
 * were computed at prepare, the args snapshot lives on the stack, and the
 * only queries are the capture-info query on the caller stream, the range
 * lookups the context has not cached, and the AICPU stream's capture-info
 * query while a captured launch may still hold the context's streams.
 */
#include "internal.h"
#include <kctx/rt_layout.h>

#include <kctx/task_abi.h>

#include <stdio.h>
#include <string.h>

/* Poison the device side (K35): from now on the context's captured graphs
 * refuse to run. One atomic host write of the device error word, ordered
 * with no stream: no enqueue that a capture could take in, no wait. */
void kctx__device_poison(kctx_ctx *c) {
    if (!c->mem[KCTX_MEM_RUNTIME_IMAGE].live || c->phase == KCTX_PHASE_QUARANTINED) return;
    kctx_pdevptr w = c->mem[KCTX_MEM_RUNTIME_IMAGE].h + offsetof(kctx_rt_image, error);
    /* Keep a device-side cause the host has not read yet (K10: the first
     * cause wins): a task failure already stops the graphs. */
    uint32_t now = KCTX_RT_ERR_NONE;
    if (KP_RAW(c, atomic_read_u32, w, &now) == 0 && now != KCTX_RT_ERR_NONE &&
        now != KCTX_RT_ERR_CONCURRENT_LAUNCH)
        return;
    /* best effort: the host-side poison already refuses every later launch */
    (void)KP_RAW(c, atomic_write_u32, w, KCTX_RT_ERR_POISONED);
}

/* ------------------------------------------------------------------ */
/* graph lifetime tokens (K25)                                         */

/* Runs on a platform thread when a graph holding a launch of the context
 * is gone. `user` is the context handle: the context may have been closed
 * and destroyed meanwhile (after an owner reset, K36), so it is looked up,
 * never dereferenced blindly. */
static void token_hook(void *user) { kctx__token_release((kctx_context)(uintptr_t)user); }

/* ------------------------------------------------------------------ */

/* The platform's free counter is a plain uint64_t read as an atomic one. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

/* K18's range cache: [ptr, ptr+size) lies inside a range mem_range_check
 * accepted since the device's free counter last moved (so inside one live
 * allocation still). Only with the platform's free counter. */
static bool range_known(const kctx_ctx *c, uint64_t ptr, uint64_t size) {
    const uint64_t end = ptr + size;
    const uint32_t n = c->nranges;
    for (uint32_t i = 0; i < n; i++)
        if (ptr >= c->ranges[i].lo && end <= c->ranges[i].hi) return true;
    return false;
}

static void range_remember(kctx_ctx *c, uint64_t ptr, uint64_t size) {
    if (!c->free_counter) return;
    uint32_t at = c->nranges < KCTX_RANGE_CACHE ? c->nranges++ : c->next_range++ % KCTX_RANGE_CACHE;
    c->ranges[at].lo = ptr;
    c->ranges[at].hi = ptr + size;
}

/* check_args' findings for check_platform_args: which arguments are
 * tensors, and which of those the range cache did not know when the
 * arguments were checked (bit i: argument i; KCTX_IMAGE_MAX_PARAMS <= 64). */
typedef struct arg_masks {
    uint64_t tensors, unknown;
} arg_masks;
_Static_assert(KCTX_IMAGE_MAX_PARAMS <= 64, "arg_masks holds one bit per parameter");

/* The count and sizes of the arguments (check_args' first part). */
static kctx_status check_arg_count(kctx_ctx *c, const kctx_upload *u, const kctx_arg *args,
                                   uint32_t nargs) {
    if (nargs != u->nparams)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT, "the callable takes %u arguments, %u given",
                          u->nparams, nargs);
    if (nargs && !args) return kctx__fail(c, KCTX_INVALID_ARGUMENT, "args is NULL");
    /* K11: a request that needs more than a fixed capacity is CAPACITY. */
    uint64_t bytes = (uint64_t)nargs * sizeof(kctx_rt_arg);
    if (bytes > c->args_capacity)
        return kctx__fail(c, KCTX_CAPACITY,
                          "%llu bytes of arguments exceed the kernel-args capacity (%u, K11)",
                          (unsigned long long)bytes, c->args_capacity);
    if (bytes + sizeof(kctx_rt_scheduler_params) > c->max_params)
        return kctx__fail(c, KCTX_CAPACITY,
                          "%llu bytes of arguments exceed the device's kernel parameter limit (%u "
                          "bytes with the scheduler's header, K11)",
                          (unsigned long long)bytes, c->max_params);
    return KCTX_OK;
}

/* Each argument against its parameter (check_args' second part), out of
 * line: a launch without arguments does not pay for its frame. */
__attribute__((noinline)) static kctx_status check_arg_values(kctx_ctx *c, const kctx_upload *u,
                                                              const kctx_arg *args, uint32_t nargs,
                                                              arg_masks *m) {
    uint64_t tensors = 0, unknown = 0;
    /* the upload's arrays, read once (the loop's calls could otherwise make
     * the compiler load the pointers again per argument) */
    const uint8_t *const pkind = u->pkind;
    const uint64_t *const min_size = u->min_size;
    for (uint32_t i = 0; i < nargs; i++) {
        const uint64_t value = args[i].value, size = args[i].size;
        if (pkind[i] == KCTX_PARAM_SCALAR) {
            if (size != 0)
                return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                                  "argument %u is a scalar: size must be 0", i);
            continue;
        }
        if (size == 0)
            return kctx__fail(c, KCTX_INVALID_ARGUMENT, "argument %u is a tensor: size must be > 0",
                              i);
        /* a tensor at address 0 names no memory on any platform (K18): refused
         * here, not left to a range check some platforms do not have */
        if (value == 0)
            return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                              "argument %u is a tensor at address 0 (NULL): a tensor must name "
                              "device memory (K18)",
                              i);
        if (size < min_size[i])
            return kctx__fail(
                c, KCTX_INVALID_ARGUMENT,
                "argument %u: %llu bytes, but a task binding reads from byte offset %llu", i,
                (unsigned long long)size, (unsigned long long)(min_size[i] - 1));
        if (value + size < value)
            return kctx__fail(c, KCTX_INVALID_ARGUMENT, "argument %u: address range overflows", i);
        tensors |= UINT64_C(1) << i;
        if (!range_known(c, value, size)) unknown |= UINT64_C(1) << i;
    }
    m->tensors = tensors;
    m->unknown = unknown;
    return KCTX_OK;
}

/* K11 and K18's host-side checks of a launch's (or a run's) arguments, in
 * order: the count, the capacities, then each argument. */
static inline kctx_status check_args(kctx_ctx *c, const kctx_upload *u, const kctx_arg *args,
                                     uint32_t nargs, arg_masks *m) {
    kctx_status st = check_arg_count(c, u, args, nargs);
    if (st || nargs == 0) return st;
    return check_arg_values(c, u, args, nargs, m);
}

/* Everything of K18 that needs the platform: the caller stream (its device
 * and, in the same query, its capture state for K25/K34) and the tensor
 * ranges. */
static inline __attribute__((always_inline)) kctx_status
check_platform_args(kctx_ctx *c, const kctx_arg *args, const arg_masks *m, kctx_pstream caller,
                    kctx_pcapture_status *ccs, uint64_t *cid, kctx_pgraph *graph) {
    if (caller == c->streams[KCTX_STREAM_AICPU].h || caller == c->streams[KCTX_STREAM_AICORE].h ||
        caller == c->streams[KCTX_STREAM_UPLOAD].h)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                          "the caller stream is one of the context's own streams");
    int dev = -1;
    int pst = KP_RAW(c, stream_info, caller, &dev, ccs, cid, graph);
    if (pst) {
        /* A handle the platform rejects is a bad argument; any other failure
         * (out of memory, a lost device, ...) is the platform's, mapped by
         * class like every other (K29 included). */
        if (kp_classify(c, pst) == KCTX_PCLASS_INVALID)
            return kctx__fail(c, KCTX_INVALID_ARGUMENT, "caller stream 0x%llx: %s (%s)",
                              (unsigned long long)caller, kp_status_name(c, pst),
                              kp_last_message(c, pst));
        return kp_map(c, "stream_info(caller)", pst);
    }
    if (dev != c->device)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                          "the caller stream is on device %d, the context on %d", dev, c->device);
    if (!c->ops->mem_range_check) return KCTX_OK;
    /* The tensors to look up, in argument order: those the cache did not
     * know when check_args looked (the cache is unchanged since, unless it
     * is forgotten here) */
    uint64_t todo = m->unknown;
    if (c->free_counter) {
        /* an allocation ended since the cached ranges were checked: forget them */
        uint64_t frees =
            atomic_load_explicit((const _Atomic uint64_t *)c->free_counter, memory_order_acquire);
        if (frees != c->ranges_seen) {
            c->nranges = c->next_range = 0, c->ranges_seen = frees;
            todo = m->tensors;
        }
    }
    while (todo) {
        const uint32_t i = (uint32_t)__builtin_ctzll(todo);
        todo &= todo - 1;
        if (range_known(c, args[i].value, args[i].size)) continue;
        pst = KP_RAW(c, mem_range_check, c->device, args[i].value, args[i].size);
        if (pst == 0) {
            range_remember(c, args[i].value, args[i].size);
            /* the cache changed (a range added, maybe one evicted): every
             * later tensor is looked up again in the cache as it is now */
            todo |= m->tensors & ~((UINT64_C(2) << i) - 1);
            continue;
        }
        if (kp_classify(c, pst) == KCTX_PCLASS_INVALID)
            return kctx__fail(
                c, KCTX_INVALID_ARGUMENT,
                "argument %u: [0x%llx, +%llu) is not inside one live allocation of device %d", i,
                (unsigned long long)args[i].value, (unsigned long long)args[i].size, c->device);
        return kp_map(c, "mem_range_check", pst); /* a platform failure, not a bad argument (K29) */
    }
    return KCTX_OK;
}

/* How far a launch's chain got: one flag per step, set once the platform
 * took it (K24's compensation, chain_compensate, undoes from there).
 * `release` is the AICPU step that releases the acquire's guard: RESIDENT's
 * scheduler, HOST_ORDERED's finalize. */
typedef struct chain {
    bool caller_started, aicpu_waited, acquire, aicore_started, aicore_waited, worker, aicore_done,
        release, aicpu_joined, aicpu_done, caller_joined;
} chain;

/* The chain's platform calls count in the thread's counters its caller
 * looked up (`tl`, from kp_thread_calls): one look-up per launch. */
#undef KP_TL
#define KP_TL tl

/* HOST_ORDERED: enqueue the callable's task kernels on the AICore stream,
 * in the image's (topological) order, each with its parameter block built
 * here from the args by value (K22): the task ABI's header, then one u64
 * per binding. `buf` is the launch's stack buffer (no allocation, K19). */
static kctx_status enqueue_tasks(kctx_ctx *c, uint64_t *tl, const kctx_upload *u,
                                 const kctx_arg *args, kctx_pstream core, uint64_t id,
                                 unsigned char *buf, bool *started) {
    kctx_task_header *h = (kctx_task_header *)buf;
    uint64_t *arg = (uint64_t *)(h + 1);
    const uint32_t flags = KCTX_TASK_GATED | (c->trace ? KCTX_TASK_TRACE : 0u);
    const kctx_pdevptr image = c->mem[KCTX_MEM_RUNTIME_IMAGE].h;
    const uint32_t ntasks = u->ho_ntasks;
    /* the upload's tables in locals: the stores into `buf` below cannot
     * then make the compiler read them again for every binding */
    const kctx_ho_task *const tasks = u->ho_tasks;
    const kctx_ho_binding *const binds = u->ho_binds;
    /* immediates read argument 0 and drop it: a callable without
     * parameters reads this one instead of `args` (which may be NULL) */
    static const kctx_arg k_no_arg = {0, 0};
    const kctx_arg *const a = u->nparams ? args : &k_no_arg;
    h->runtime_image = image; /* the same in every task's header */
    h->launch_id = id;
    h->flags = flags;
    for (uint32_t t = 0; t < ntasks; t++) {
        const kctx_ho_task task = tasks[t];
        h->task = t;
        h->func_id = task.func_id;
        h->nbindings = task.nbindings;
        const kctx_ho_binding *b = binds + task.first_binding;
        /* tensor + byte offset, scalar, or immediate (kctx_ho_binding) */
        for (uint32_t i = 0; i < task.nbindings; i++)
            arg[i] = (a[b[i].param].value & (uint64_t)(int64_t)b[i].keep) + b[i].value;
        kctx_status st =
            KP(c, "launch(task)", launch, core, task.fn, KCTX_PTARGET_AICORE, task.block_dim, buf,
               sizeof *h + (size_t)task.nbindings * sizeof(uint64_t));
        if (st) return st;
        *started = true;
    }
    return KCTX_OK;
}

/* The builders' shared pieces. The context's events are read where used
 * (no copy: they change only when program mode's recovery abandons the
 * handles, K31, after which no chain runs). STEP enqueues one step of a
 * builder and records it in `ch`, or goes to the builder's `failed`. */
#define ev(i) c->events[i].h
#define STEP(flag, what, op, ...)          \
    do {                                   \
        st = KP(c, what, op, __VA_ARGS__); \
        if (st) goto failed;               \
        ch.flag = true;                    \
    } while (0)

/* K25: a captured launch's graph holds a node of it (START, just
 * recorded), so it holds the context: attach its lifetime token. Not
 * earlier: a launch refused before anything was enqueued must leave no
 * token behind (K9). */
static inline kctx_status attach_token(kctx_ctx *c, uint64_t *tl, kctx_pgraph graph,
                                       kctx_phook_fn fn, void *user) {
    atomic_fetch_add(&c->tokens_in_use, 1);
    kctx_status st = KP(c, "graph_attach_hook(lifetime token)", graph_attach_hook, graph, fn, user);
    if (st) atomic_fetch_sub(&c->tokens_in_use, 1);
    return st;
}

/* How a failed chain releases the acquire's guard (K23, K24): the AICPU
 * program in `prog`'s slot with `params`, enqueued before the AICore
 * stream is joined back (RESIDENT's scheduler in abort mode: it ends the
 * run, the workers leave) or after it (`after_join`: HOST_ORDERED's
 * finalize, which releases the guard once the tasks enqueued ran, gated:
 * the context is poisoned). */
typedef struct chain_release {
    const char *what;
    int prog;
    const void *params;
    size_t size;
    bool after_join;
} chain_release;

/* One compensation call's status into `*comp`: the first failure is the
 * one reported. */
static inline kctx_status comp_keep(kctx_status *comp, kctx_status cs) {
    if (cs && !*comp) *comp = cs;
    return cs;
}

/* chain_compensate's release of the guard: `rel`'s program on the AICPU
 * stream, or else the abort word. */
static void release_guard(kctx_ctx *c, uint64_t *tl, const chain_release *rel, uint64_t id,
                          kctx_status *comp) {
    if (!comp_keep(comp, KP(c, rel->what, launch, c->streams[KCTX_STREAM_AICPU].h,
                            c->prog_fn[rel->prog], KCTX_PTARGET_AICPU, 1, rel->params, rel->size)))
        return;
    /* It could not be enqueued (the launch path fails the same way twice):
     * tell the device through a path that cannot fail like an enqueue, the
     * streamless host write K35 uses. The acquire then takes no guard (or
     * its guard is freed for the next acquire) and the workers leave, so
     * the chain still comes back to the caller. */
    if (c->phase != KCTX_PHASE_QUARANTINED) {
        kctx_pdevptr abort_word =
            c->mem[KCTX_MEM_RUNTIME_IMAGE].h + offsetof(kctx_rt_image, abort_launch);
        comp_keep(comp, KP(c, "atomic_write_u32(abort word)", atomic_write_u32, abort_word,
                           (uint32_t)id));
    }
}

/* K24, for both builders: step `st` of launch `id` failed, `ch` says how
 * far the chain got. Nothing enqueued yet: a plain refusal (K9). Else the
 * chain is driven back to the caller stream: the guard released (`rel`,
 * before or after the AICore join), the AICore stream joined back into the
 * AICPU stream, the AICPU stream into the caller's; then the context is
 * poisoned, and the launch reports both the step's failure and the
 * compensation's. Out of line: a launch that succeeds pays nothing for it. */
__attribute__((noinline)) static kctx_status
chain_compensate(kctx_ctx *c, uint64_t *tl, kctx_status st, const chain *ch, kctx_pstream caller,
                 bool captured, uint64_t id, const chain_release *rel) {
    if (!ch->caller_started) return st;
    /* A lost device cannot honour compensation (and program mode's
     * recovery already abandoned the handles, K31). */
    if (c->phase == KCTX_PHASE_QUARANTINED || c->phase == KCTX_PHASE_CLOSED)
        return st; /* DEVICE_LOST (K29) */
    char sub[KCTX_MSG];
    snprintf(sub, sizeof sub, "%s", kctx_thread_last_error());
    const kctx_pstream cpu = c->streams[KCTX_STREAM_AICPU].h,
                       core = c->streams[KCTX_STREAM_AICORE].h;
    const bool release = ch->acquire && !ch->release;
    kctx_status comp = KCTX_OK;
    if (release && !rel->after_join) release_guard(c, tl, rel, id, &comp);
    if (ch->aicore_waited && !ch->aicore_done)
        comp_keep(&comp, KP(c, "event_record(AICORE_DONE, AICore)", event_record,
                            ev(KCTX_EV_AICORE_DONE), core));
    if (ch->aicore_waited && !ch->aicpu_joined)
        comp_keep(&comp, KP(c, "stream_wait_event(AICPU, AICORE_DONE)", stream_wait_event, cpu,
                            ev(KCTX_EV_AICORE_DONE)));
    if (release && rel->after_join) release_guard(c, tl, rel, id, &comp);
    if (ch->aicpu_waited && !ch->aicpu_done)
        comp_keep(&comp, KP(c, "event_record(AICPU_DONE, AICPU)", event_record,
                            ev(KCTX_EV_AICPU_DONE), cpu));
    if (ch->aicpu_waited && !ch->caller_joined)
        comp_keep(&comp, KP(c, "stream_wait_event(caller, AICPU_DONE)", stream_wait_event, caller,
                            ev(KCTX_EV_AICPU_DONE)));
    char msg[3 * KCTX_MSG];
    snprintf(msg, sizeof msg, "launch failed after enqueueing started: %s%s%s", sub,
             comp ? "; compensation also failed: " : "", comp ? kctx_thread_last_error() : "");
    if (c->phase == KCTX_PHASE_READY) {
        c->phase = KCTX_PHASE_POISONED;
        kctx__set_runtime_error(c, st, msg);
        kctx__device_poison(c);
    }
    if (captured) st = KCTX_CAPTURE_BROKEN;
    kctx__fail(c, st, "%s%s", msg, captured ? " (inside a capture: discard that capture)" : "");
    return st;
}

/* RESIDENT's chain (K20): the device programs dispatch the callable's
 * tasks. Its platform calls, in order (stream: call):
 *   caller: event_record(START); graph_attach_hook (captured only, K25)
 *   AICPU:  stream_wait_event(START); launch(acquire); event_record(AICORE_START)
 *   AICore: stream_wait_event(AICORE_START); launch(worker); event_record(AICORE_DONE)
 *   AICPU:  launch(scheduler, with the args snapshot); stream_wait_event(AICORE_DONE);
 *           event_record(AICPU_DONE)
 *   caller: stream_wait_event(AICPU_DONE); event_record(SERIAL_TAIL)
 * AICORE_START is recorded before the scheduler's launch: the scheduler
 * waits for the cores to report in. On failure, the scheduler in abort
 * mode releases the guard (chain_compensate). */
/* An updatable launch's slot (K37): its index and serial. */
typedef struct slot_ref {
    uint32_t index, serial;
    bool hooked; /* out: the graph's hook that returns the slot is attached */
} slot_ref;

/* The builder; `slot` NULL for a plain launch (a constant in every caller,
 * so a plain launch's chain is built with no test of it). */
static inline __attribute__((always_inline)) kctx_status
chain_resident(kctx_ctx *c, uint64_t *tl, const kctx_upload *u, const kctx_arg *args,
               uint32_t nargs, kctx_pstream caller, kctx_pgraph graph, slot_ref *slot) {
    const kctx_pstream cpu = c->streams[KCTX_STREAM_AICPU].h,
                       core = c->streams[KCTX_STREAM_AICORE].h;
    const uint64_t id = ++c->launch_seq, arch = c->mem[KCTX_MEM_ARCH_TABLE].h;
    const uint32_t flags = c->trace ? KCTX_RT_FLAG_TRACE : 0; /* by value into every replay (K32) */
    /* the scheduler's block, args by value on the stack (K19, K22): its
     * header, then the args snapshot */
    _Alignas(16) unsigned char sbuf[SNAPSHOT_LIMIT];
    kctx_rt_scheduler_params *sp = (kctx_rt_scheduler_params *)sbuf;
    const size_t ssize = sizeof *sp + (size_t)nargs * sizeof(kctx_rt_arg);
    *sp = (kctx_rt_scheduler_params){
        arch, id, u->table.h, c->mem[KCTX_MEM_ARGS_BLOCK].h, KCTX_RT_SCHED_RUN, nargs, flags, 0};
    for (uint32_t i = 0; i < nargs; i++)
        sp->snapshot[i] = (kctx_rt_arg){args[i].value, args[i].size};
    size_t run_size = ssize;
    if (slot) { /* K37: the scheduler reads the slot; the snapshot is its set until an update */
        sp->flags |= KCTX_RT_FLAG_ARG_SLOT;
        sp->snapshot[nargs] =
            (kctx_rt_arg){c->mem[KCTX_MEM_ARG_SLOTS].h + (uint64_t)slot->index * c->uslot_stride,
                          (uint64_t)c->uslot_cap << 32 | slot->serial};
        run_size += sizeof(kctx_rt_arg);
    }
    /* one worker per core, but never more than the callable has blocks: a
     * one-block callable's launch starts one worker, not a gang that would
     * only report in and leave */
    const uint32_t workers =
        u->total_blocks < c->core_count ? (uint32_t)u->total_blocks : c->core_count;
    const kctx_rt_acquire_params ap = {arch, id};
    const kctx_rt_worker_params wp = {arch,  id, u->table.h, c->mem[KCTX_MEM_ARGS_BLOCK].h,
                                      flags, 0};

    chain ch = {0};
    kctx_status st;
    /* from the first enqueue on, the context's streams may join the capture (K34) */
    if (graph) c->streams_maybe_captured = true;
    STEP(caller_started, "event_record(START, caller)", event_record, ev(KCTX_EV_START), caller);
    if (slot) {
        if ((st = attach_token(c, tl, graph, kctx__slot_hook,
                               kctx__slot_hook_user(c->handle, slot->index))) != KCTX_OK)
            goto failed;
        slot->hooked = true;
    } else if (graph && (st = attach_token(c, tl, graph, token_hook,
                                           (void *)(uintptr_t)c->handle)) != KCTX_OK)
        goto failed;
    STEP(aicpu_waited, "stream_wait_event(AICPU, START)", stream_wait_event, cpu,
         ev(KCTX_EV_START));
    STEP(acquire, "launch(acquire)", launch, cpu, c->prog_fn[KCTX_PROG_ACQUIRE], KCTX_PTARGET_AICPU,
         1, &ap, sizeof ap);
    STEP(aicore_started, "event_record(AICORE_START, AICPU)", event_record,
         ev(KCTX_EV_AICORE_START), cpu);
    STEP(aicore_waited, "stream_wait_event(AICore, AICORE_START)", stream_wait_event, core,
         ev(KCTX_EV_AICORE_START));
    STEP(worker, "launch(worker)", launch, core, c->prog_fn[KCTX_PROG_WORKER], KCTX_PTARGET_AICORE,
         workers ? workers : 1, &wp, sizeof wp);
    STEP(aicore_done, "event_record(AICORE_DONE, AICore)", event_record, ev(KCTX_EV_AICORE_DONE),
         core);
    STEP(release, "launch(scheduler)", launch, cpu, c->prog_fn[KCTX_PROG_SCHEDULER],
         KCTX_PTARGET_AICPU, 1, sp, run_size);
    STEP(aicpu_joined, "stream_wait_event(AICPU, AICORE_DONE)", stream_wait_event, cpu,
         ev(KCTX_EV_AICORE_DONE));
    STEP(aicpu_done, "event_record(AICPU_DONE, AICPU)", event_record, ev(KCTX_EV_AICPU_DONE), cpu);
    STEP(caller_joined, "stream_wait_event(caller, AICPU_DONE)", stream_wait_event, caller,
         ev(KCTX_EV_AICPU_DONE));
    st = KP(c, "event_record(SERIAL_TAIL, caller)", event_record, ev(KCTX_EV_SERIAL_TAIL), caller);
    if (st) goto failed;
    return KCTX_OK;

failed:
    /* the abort carries no snapshot */
    sp->mode = KCTX_RT_SCHED_ABORT;
    sp->nargs = 0;
    sp->flags &= ~KCTX_RT_FLAG_ARG_SLOT;
    return chain_compensate(
        c, tl, st, &ch, caller, graph != 0, id,
        &(chain_release){"launch(scheduler abort)", KCTX_PROG_SCHEDULER, sp, sizeof *sp, false});
}

static kctx_status enqueue_chain_resident(kctx_ctx *c, uint64_t *tl, const kctx_upload *u,
                                          const kctx_arg *args, uint32_t nargs, kctx_pstream caller,
                                          kctx_pgraph graph) {
    return chain_resident(c, tl, u, args, nargs, caller, graph, NULL);
}

/* HOST_ORDERED's chain (§0b): the host enqueues the callable's tasks. Its
 * platform calls, in order (stream: call):
 *   caller: event_record(START); graph_attach_hook (captured only, K25)
 *   AICPU:  stream_wait_event(START); launch(acquire); event_record(AICORE_START)
 *   AICore: stream_wait_event(AICORE_START); launch(task) per task, in the
 *           image's order (enqueue_tasks); event_record(AICORE_DONE)
 *   AICPU:  stream_wait_event(AICORE_DONE); launch(finalize); event_record(AICPU_DONE)
 *   caller: stream_wait_event(AICPU_DONE); event_record(SERIAL_TAIL)
 * The finalize comes after the tasks: the holder's guard is released only
 * once they ran. On failure, the finalize releases it (chain_compensate). */
static kctx_status enqueue_chain_host_ordered(kctx_ctx *c, uint64_t *tl, const kctx_upload *u,
                                              const kctx_arg *args, kctx_pstream caller,
                                              kctx_pgraph graph) {
    const kctx_pstream cpu = c->streams[KCTX_STREAM_AICPU].h,
                       core = c->streams[KCTX_STREAM_AICORE].h;
    const uint64_t id = ++c->launch_seq;
    /* the acquire's and the finalize's block; flags by value into every replay (K32) */
    const kctx_rt_step_params step = {c->mem[KCTX_MEM_ARCH_TABLE].h, id,
                                      c->trace ? KCTX_RT_FLAG_TRACE : 0, 0};
    /* the tasks' blocks, args by value on the stack (K19, K22) */
    _Alignas(16) unsigned char sbuf[SNAPSHOT_LIMIT];

    chain ch = {0};
    kctx_status st;
    /* from the first enqueue on, the context's streams may join the capture (K34) */
    if (graph) c->streams_maybe_captured = true;
    STEP(caller_started, "event_record(START, caller)", event_record, ev(KCTX_EV_START), caller);
    if (graph &&
        (st = attach_token(c, tl, graph, token_hook, (void *)(uintptr_t)c->handle)) != KCTX_OK)
        goto failed;
    STEP(aicpu_waited, "stream_wait_event(AICPU, START)", stream_wait_event, cpu,
         ev(KCTX_EV_START));
    STEP(acquire, "launch(acquire)", launch, cpu, c->prog_fn[KCTX_PROG_ACQUIRE], KCTX_PTARGET_AICPU,
         1, &step, sizeof step);
    STEP(aicore_started, "event_record(AICORE_START, AICPU)", event_record,
         ev(KCTX_EV_AICORE_START), cpu);
    STEP(aicore_waited, "stream_wait_event(AICore, AICORE_START)", stream_wait_event, core,
         ev(KCTX_EV_AICORE_START));
    if ((st = enqueue_tasks(c, tl, u, args, core, id, sbuf, &ch.worker)) != KCTX_OK) goto failed;
    STEP(aicore_done, "event_record(AICORE_DONE, AICore)", event_record, ev(KCTX_EV_AICORE_DONE),
         core);
    STEP(aicpu_joined, "stream_wait_event(AICPU, AICORE_DONE)", stream_wait_event, cpu,
         ev(KCTX_EV_AICORE_DONE));
    STEP(release, "launch(finalize)", launch, cpu, c->prog_fn[KCTX_PROG_FINALIZE],
         KCTX_PTARGET_AICPU, 1, &step, sizeof step);
    STEP(aicpu_done, "event_record(AICPU_DONE, AICPU)", event_record, ev(KCTX_EV_AICPU_DONE), cpu);
    STEP(caller_joined, "stream_wait_event(caller, AICPU_DONE)", stream_wait_event, caller,
         ev(KCTX_EV_AICPU_DONE));
    st = KP(c, "event_record(SERIAL_TAIL, caller)", event_record, ev(KCTX_EV_SERIAL_TAIL), caller);
    if (st) goto failed;
    return KCTX_OK;

failed:
    return chain_compensate(
        c, tl, st, &ch, caller, graph != 0, id,
        &(chain_release){"launch(finalize)", KCTX_PROG_FINALIZE, &step, sizeof step, true});
}
#undef STEP
#undef ev

/* Enqueue a launch's chain by the context's strategy (K20; §0b under
 * HOST_ORDERED); on failure the builder compensates (K24). `graph`: the
 * caller's capture, 0 when the launch is not captured. */
static inline kctx_status enqueue_chain(kctx_ctx *c, uint64_t *tl, const kctx_upload *u,
                                        const kctx_arg *args, uint32_t nargs, kctx_pstream caller,
                                        kctx_pgraph graph) {
    if (c->strategy == KCTX_STRATEGY_HOST_ORDERED)
        return enqueue_chain_host_ordered(c, tl, u, args, caller, graph);
    return enqueue_chain_resident(c, tl, u, args, nargs, caller, graph);
}

#undef KP_TL
#define KP_TL kp_thread_calls()

/* The callable under `id` for a launch: the one launched last when it has
 * that id (a launch loop's case: one comparison), else the index's answer
 * (kctx__find_callable). The hint is a position in c->callables, which
 * only grows (or empties at close), and ids are unique there (K14), so a
 * position within the count holding `id` is the index's answer too. */
static inline kctx_callable *launch_callable(kctx_ctx *c, uint64_t id) {
    const uint32_t i = c->launch_hint;
    if (i < c->ncallables && c->callables[i].id == id) return &c->callables[i];
    kctx_callable *cb = kctx__find_callable(c, id);
    if (cb) c->launch_hint = (uint32_t)(cb - c->callables);
    return cb;
}

/* ------------------------------------------------------------------ */
/* updatable launches (K37-K40)                                        */

#define ARGS_HANDLE_TAG (UINT64_C(0x55) << 56) /* 'U' */

static kctx_args_handle args_handle(uint32_t index, uint32_t serial) {
    return ARGS_HANDLE_TAG | (uint64_t)serial << 16 | index;
}

/* Updatable launches are built for RESIDENT kernel contexts on a platform
 * with capture (the sim, the ACL double): the context then loaded the
 * update program and made the slots at init (resources.c). */
static kctx_status updatable_supported(kctx_ctx *c, const char *what) {
    /* the slots' host side outlives close (a closed context is then refused
     * by admission, not called UNSUPPORTED) */
    if (c->nuslots) return KCTX_OK;
    return kctx__fail(c, KCTX_UNSUPPORTED,
                      "%s: updatable launch arguments are built for the RESIDENT strategy on a "
                      "platform with capture (the sim and ACL) so far; this context is %s on %s",
                      what, kctx_strategy_name(c->strategy), c->plat->name);
}

/* Out of line: the updatable launch's own checks, before anything is
 * enqueued (K9): the capture, the slot's capacity, a free slot (taken). */
__attribute__((noinline)) static kctx_status updatable_take(kctx_ctx *c, bool captured, uint64_t id,
                                                            const kctx_upload *u, uint32_t nargs,
                                                            slot_ref *slot) {
    if (!captured)
        return kctx__fail(c, KCTX_INVALID_STATE,
                          "kctx_launch_updatable needs the caller stream to be capturing: an eager "
                          "launch has no graph whose arguments could be updated (K37); nothing "
                          "enqueued");
    if (nargs > c->uslot_cap)
        return kctx__fail(c, KCTX_CAPACITY,
                          "%u arguments exceed an argument slot's %u entries (K11, K37)", nargs,
                          c->uslot_cap);
    for (uint32_t k = 0; k < c->nuslots; k++) {
        const uint32_t i = (c->uslot_next + k) % c->nuslots;
        if (atomic_load(&c->uslots[i].busy)) continue;
        if (++c->uslot_serial == 0) c->uslot_serial = 1; /* 0 never names a use */
        c->uslots[i].serial = c->uslot_serial;
        c->uslots[i].up = u;
        c->uslots[i].id = id;
        atomic_store(&c->uslots[i].busy, 1);
        c->uslot_next = (i + 1) % c->nuslots;
        *slot = (slot_ref){i, c->uslots[i].serial, false};
        return KCTX_OK;
    }
    return kctx__fail(c, KCTX_CAPACITY,
                      "all %u argument slots are held by live graphs (K37: a slot comes back when "
                      "its graph's lifetime hook has run, K25)",
                      c->nuslots);
}

/* kctx_launch and kctx_launch_updatable: `out` NULL for a plain launch (a
 * constant: a plain launch is compiled with no test of it). */
static inline __attribute__((always_inline)) kctx_status
launch_entry(kctx_context h, uint64_t id, const kctx_arg *args, uint32_t nargs, uint64_t caller,
             kctx_args_handle *out) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    /* Section 0's order: the caller stream 0, the mode, admission, the
     * current device, the id, the arguments, the caller stream's platform
     * checks and capture state; the first refusal wins (goto done). */
    uint64_t t0 = c->trace ? kctx__now_ns() : 0;
    kctx_callable *cb = NULL;
    if (!caller && !c->plat->has_null_stream) {
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT,
                        "caller stream is 0 (the %s platform has no NULL stream)", c->plat->name);
        goto done;
    }
    if (c->mode != KCTX_MODE_KERNEL) {
        st = kctx__fail(c, KCTX_INVALID_STATE,
                        "launch needs a kernel context (K3; program mode uses kctx_run)");
        goto done;
    }
    if (out && (st = updatable_supported(c, "kctx_launch_updatable")) != KCTX_OK) goto done;
    if (c->phase != KCTX_PHASE_READY && (st = kctx__admit(c, "launch")) != KCTX_OK) goto done;
    if ((st = kctx__check_device(c)) != KCTX_OK) goto done;
    cb = launch_callable(c, id);
    if (!cb) {
        st = kctx__fail(c, KCTX_UNKNOWN_ID, "no callable is prepared under id %llu",
                        (unsigned long long)id);
        goto done;
    }
    arg_masks masks = {0, 0};
    if ((st = check_args(c, cb->up, args, nargs, &masks)) != KCTX_OK) goto done;
    /* capture state (K25, K34): the only queries of the launch path; the
     * caller's comes with its device check */
    kctx_pcapture_status ccs = KCTX_PCAPTURE_NONE, xcs = KCTX_PCAPTURE_NONE;
    uint64_t cid = 0, xid = 0;
    kctx_pgraph graph = 0, xgraph = 0;
    st = check_platform_args(c, args, &masks, caller, &ccs, &cid, &graph);
    if (st) goto done;
    /* K34: only a captured launch of this context pulls its streams into a
     * capture, so the AICPU stream is asked only while one may hold them */
    if (c->streams_maybe_captured) {
        st = KP(c, "stream_info(AICPU)", stream_info, c->streams[0].h, NULL, &xcs, &xid, &xgraph);
        if (st) goto done;
        if (xcs == KCTX_PCAPTURE_NONE) c->streams_maybe_captured = false;
    }
    if (ccs == KCTX_PCAPTURE_INVALIDATED) {
        st = kctx__fail(c, KCTX_CAPTURE_BROKEN,
                        "the caller stream's capture is already invalidated");
        goto done;
    }
    if (xcs != KCTX_PCAPTURE_NONE && (ccs != KCTX_PCAPTURE_ACTIVE || cid != xid)) {
        st = kctx__fail(
            c, KCTX_CAPTURE_ACTIVE,
            "the context's streams belong to another capture until it ends; launch refused (K34)");
        goto done;
    }
    const bool captured = ccs == KCTX_PCAPTURE_ACTIVE;
    if (captured && !graph) {
        st = kctx__fail(c, KCTX_PLATFORM_ERROR,
                        "platform %s reports an active capture of the caller stream without its "
                        "graph",
                        c->plat->name);
        goto done;
    }
    /* K25: an exhausted token pool refuses before anything is enqueued. */
    if (captured && atomic_load(&c->tokens_in_use) >= c->token_capacity) {
        st = kctx__fail(c, KCTX_CAPACITY,
                        "all %u graph lifetime tokens are held by live graphs (K25)",
                        c->token_capacity);
        goto done;
    }
    if (out) {
        slot_ref slot;
        if ((st = updatable_take(c, captured, id, cb->up, nargs, &slot)) != KCTX_OK) goto done;
        st = chain_resident(c, kp_thread_calls(), cb->up, args, nargs, caller, graph, &slot);
        if (st == KCTX_OK)
            *out = args_handle(slot.index, slot.serial);
        else if (!slot.hooked) /* no graph holds it: back now (else its hook returns it) */
            atomic_store(&c->uslots[slot.index].busy, 0);
        goto done;
    }
    st = enqueue_chain(c, kp_thread_calls(), cb->up, args, nargs, caller, captured ? graph : 0);
done:
    if (c->trace) /* preallocated: no allocation (K19) */
        kctx__trace_span(c, KCTX_DFX_LAUNCH, t0, id, st ? 0 : c->launch_seq, st);
    kctx__ctx_release(c);
    return st;
}

kctx_status kctx_launch(kctx_context h, uint64_t id, const kctx_arg *args, uint32_t nargs,
                        uint64_t caller) {
    return launch_entry(h, id, args, nargs, caller, NULL);
}

kctx_status kctx_launch_updatable(kctx_context h, uint64_t id, const kctx_arg *args, uint32_t nargs,
                                  uint64_t caller, kctx_args_handle *out) {
    if (!out) {
        kctx_ctx *c;
        kctx_status st = kctx__ctx_acquire(h, &c);
        if (st) return st;
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT, "out (the args handle) is NULL");
        kctx__ctx_release(c);
        return st;
    }
    return launch_entry(h, id, args, nargs, caller, out);
}

/* The slot a handle names while its graph lives (K38), else NULL. */
static kctx_uslot *handle_slot(kctx_ctx *c, kctx_args_handle a, uint32_t *index) {
    if ((a & (UINT64_C(0xff) << 56)) != ARGS_HANDLE_TAG) return NULL;
    const uint32_t i = (uint32_t)(a & 0xffffu), serial = (uint32_t)(a >> 16);
    if (i >= c->nuslots || !atomic_load(&c->uslots[i].busy) || c->uslots[i].serial != serial)
        return NULL;
    *index = i;
    return &c->uslots[i];
}

kctx_status kctx_update_args(kctx_context h, kctx_args_handle a, const kctx_arg *args,
                             uint32_t nargs, uint64_t stream) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    uint32_t index = 0;
    kctx_uslot *slot = NULL;
    if (!stream && !c->plat->has_null_stream) {
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT,
                        "stream is 0 (the %s platform has no NULL stream)", c->plat->name);
        goto done;
    }
    if (c->mode != KCTX_MODE_KERNEL) {
        st = kctx__fail(c, KCTX_INVALID_STATE, "kctx_update_args needs a kernel context (K3)");
        goto done;
    }
    if ((st = updatable_supported(c, "kctx_update_args")) != KCTX_OK) goto done;
    if (c->phase != KCTX_PHASE_READY && (st = kctx__admit(c, "update_args")) != KCTX_OK) goto done;
    if ((st = kctx__check_device(c)) != KCTX_OK) goto done;
    if (!(slot = handle_slot(c, a, &index))) {
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT,
                        "args handle 0x%llx names no live updatable launch of this context (its "
                        "graph is gone, or it is not a handle of this context; K38); nothing "
                        "enqueued",
                        (unsigned long long)a);
        goto done;
    }
    /* K18 as a launch of the callable the handle was captured with: the
     * same count and kinds, tensors in live ranges */
    arg_masks masks = {0, 0};
    if ((st = check_args(c, slot->up, args, nargs, &masks)) != KCTX_OK) goto done;
    kctx_pcapture_status ccs = KCTX_PCAPTURE_NONE;
    uint64_t cid = 0;
    kctx_pgraph graph = 0;
    if ((st = check_platform_args(c, args, &masks, stream, &ccs, &cid, &graph)) != KCTX_OK)
        goto done;
    if (ccs == KCTX_PCAPTURE_INVALIDATED) {
        st = kctx__fail(c, KCTX_CAPTURE_BROKEN, "the stream's capture is already invalidated");
        goto done;
    }
    /* the new set by value in the update program's block (K19: no host
     * buffer outlives the call; legal inside another capture) */
    _Alignas(16) unsigned char buf[SNAPSHOT_LIMIT];
    kctx_rt_update_params *up = (kctx_rt_update_params *)buf;
    *up = (kctx_rt_update_params){c->mem[KCTX_MEM_ARG_SLOTS].h + (uint64_t)index * c->uslot_stride,
                                  slot->serial, c->uslot_cap, nargs, 0};
    for (uint32_t i = 0; i < nargs; i++) up->args[i] = (kctx_rt_arg){args[i].value, args[i].size};
    /* One platform call: if it fails, nothing was enqueued and the context
     * stays as it was (K40; a fatal status quarantines, K29). */
    st = KP(c, "launch(update)", launch, stream, c->prog_fn[KCTX_PROG_UPDATE], KCTX_PTARGET_AICPU,
            1, buf, sizeof *up + (size_t)nargs * sizeof(kctx_rt_arg));
done:
    kctx__ctx_release(c);
    return st;
}

/* ------------------------------------------------------------------ */
/* check                                                               */

kctx_status kctx_check(kctx_context h, kctx_check_report *rep) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    /* kctx.h: a report of a newer header is filled as far as this library
     * knows, its unknown tail zeroed */
    static const size_t report_sizes[] = {sizeof(kctx_check_report)};
    if (rep) st = kctx__struct_out_check(c, "kctx_check_report", rep, report_sizes, 1);
    if (!st && (c->mode == KCTX_MODE_NONE ||
                (c->phase != KCTX_PHASE_READY && c->phase != KCTX_PHASE_POISONED &&
                 c->phase != KCTX_PHASE_QUARANTINED)))
        st = kctx__fail(c, KCTX_INVALID_STATE, "check of a %s context", kctx_phase_name(c->phase));
    else if (!st && c->phase == KCTX_PHASE_QUARANTINED)
        st = kctx__fail(c, KCTX_DEVICE_LOST, "the context is quarantined: %s", c->rt_msg);
    if (st) {
        kctx__ctx_release(c);
        return st;
    }
    st = kp_relaxed_begin(c);
    if (st) {
        kctx__ctx_release(c);
        return st;
    }
    st = kctx__check_device(c);
    if (!st)
        st = kp_require_uncaptured(c, KCTX_CAPTURE_ACTIVE, "check is not allowed during capture");
    uint64_t img = c->mem[KCTX_MEM_RUNTIME_IMAGE].h;
    uint32_t err = 0, refused = 0, conc = 0, dlo = 0, dhi = 0;
    if (!st)
        st = KP(c, "atomic_read(error)", atomic_read_u32, img + offsetof(kctx_rt_image, error),
                &err);
    if (!st)
        st = KP(c, "atomic_read(refused)", atomic_read_u32,
                img + offsetof(kctx_rt_image, refused_replays), &refused);
    if (!st)
        st = KP(c, "atomic_read(concurrent)", atomic_read_u32,
                img + offsetof(kctx_rt_image, concurrent_launches), &conc);
    if (!st)
        st = KP(c, "atomic_read(detail)", atomic_read_u32,
                img + offsetof(kctx_rt_image, error_detail), &dlo);
    if (!st)
        st = KP(c, "atomic_read(detail)", atomic_read_u32,
                img + offsetof(kctx_rt_image, error_detail) + 4, &dhi);
    kctx_status dev = KCTX_OK;
    /* A failure that never reached the error word: a caller stream's error
     * travels with the chain's event waits into the context's own streams
     * (the sim's streams, like CANN's, keep a failed stream's error), after
     * which every launch of the context computes nothing. That is reported
     * here as DEVICE_ERROR and poisons the context, never left silent. */
    const char *failed_stream = NULL;
    for (int i = 0; !st && err == KCTX_RT_ERR_NONE && i < KCTX_STREAM_COUNT; i++) {
        if (!c->streams[i].live) continue;
        int pst = KP_RAW(c, stream_query, c->streams[i].h);
        if (pst == 0) continue;
        kctx_pclass k = kp_classify(c, pst);
        if (k == KCTX_PCLASS_DEVICE_ERROR) {
            static const char *const names[KCTX_STREAM_COUNT] = {"AICPU", "AICore", "upload"};
            failed_stream = names[i];
            break;
        }
        if (k != KCTX_PCLASS_NOT_READY) st = kp_map(c, "stream_query", pst);
    }
    if (!st && failed_stream) {
        dev = KCTX_DEVICE_ERROR;
        char msg[KCTX_MSG];
        snprintf(msg, sizeof msg,
                 "the context's %s stream holds a device error (work it waited for failed: a "
                 "kernel on a caller stream before a launch, or a launch's own work); launches "
                 "of this context no longer compute",
                 failed_stream);
        if (c->phase == KCTX_PHASE_READY) {
            c->phase = KCTX_PHASE_POISONED;
            kctx__set_runtime_error(c, dev, msg);
            kctx__device_poison(c); /* K35: its graphs stop too */
        }
        st = kctx__fail(c, dev, "%s", msg);
    } else if (!st && err != KCTX_RT_ERR_NONE && err != KCTX_RT_ERR_POISONED) {
        dev = err == KCTX_RT_ERR_CONCURRENT_LAUNCH ? KCTX_CONCURRENT_LAUNCH : KCTX_DEVICE_ERROR;
        char msg[KCTX_MSG];
        if (dev == KCTX_CONCURRENT_LAUNCH)
            snprintf(
                msg, sizeof msg,
                "unordered launches of this context overlapped on the device (%u refused; K23)",
                conc);
        else
            snprintf(msg, sizeof msg,
                     "task %llu of a launch failed on the device (device error word %u)",
                     (unsigned long long)(((uint64_t)dhi << 32) | dlo), err);
        if (c->phase == KCTX_PHASE_READY) {
            c->phase = KCTX_PHASE_POISONED;
            kctx__set_runtime_error(c, dev, msg);
        }
        /* From now on the context's graphs refuse to run (K35): a task
         * failure already does; a concurrent launch is turned into poison,
         * effective before check returns. */
        if (err == KCTX_RT_ERR_CONCURRENT_LAUNCH)
            st = KP(c, "atomic_write_u32(poison)", atomic_write_u32,
                    img + offsetof(kctx_rt_image, error), KCTX_RT_ERR_POISONED);
        if (!st) st = kctx__fail(c, dev, "%s", msg);
    } else if (!st && c->phase == KCTX_PHASE_POISONED) {
        dev = KCTX_POISONED;
        st = kctx__fail(c, KCTX_POISONED, "%s", c->rt_msg);
    }
    if (rep && (st == KCTX_OK || st == dev)) {
        kctx_check_report full = {sizeof full, dev, refused, conc, ((uint64_t)dhi << 32) | dlo};
        kctx__struct_out(rep, &full, sizeof full);
    }
    kp_relaxed_end(c);
    kctx__ctx_release(c);
    return st;
}

/* ------------------------------------------------------------------ */
/* program mode: synchronous run                                       */

kctx_status kctx_run(kctx_context h, uint64_t id, const kctx_arg *args, uint32_t nargs) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    if (c->mode != KCTX_MODE_PROGRAM)
        st = kctx__fail(c, KCTX_INVALID_STATE,
                        "run needs a program context (K3; kernel mode uses kctx_launch)");
    else
        st = kctx__admit(c, "run");
    /* as launch (section 0): the current device before the id and the
     * arguments (K5: run acts on the device the context owns) */
    if (!st) st = kctx__check_device(c);
    kctx_callable *cb = st ? NULL : kctx__find_callable(c, id);
    if (!st && !cb)
        st = kctx__fail(c, KCTX_UNKNOWN_ID, "no callable is prepared under id %llu",
                        (unsigned long long)id);
    arg_masks masks = {0, 0}; /* program mode checks no ranges */
    if (!st) st = check_args(c, cb->up, args, nargs, &masks);
    if (!st) st = kp_relaxed_begin(c);
    if (st) {
        kctx__ctx_release(c);
        return st;
    }
    /* The program context owns its streams: its AICPU stream plays the
     * caller (the chain's caller steps are then in-stream no-ops). */
    st = enqueue_chain(c, kp_thread_calls(), cb->up, args, nargs, c->streams[0].h, 0);
    if (!st)
        st = KP(c, "stream_sync(AICPU, run)", stream_sync, c->streams[0].h, c->prepare_timeout_ms);
    kp_relaxed_end(c);
    kctx__ctx_release(c);
    return st;
}
