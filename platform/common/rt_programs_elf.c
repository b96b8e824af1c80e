/*
 * rt_programs_elf.c — the kctx runtime's device programs as a sim_elf
 * module (an x86-64 ELF object against the sim's kernel API,
 * kctx/sim_kernel.h), loaded as one module at kernel init (K11). They are
 * shared, so they live here and not in one platform's folder: the sim runs
 * them, and so does every driver double built on the sim (the ACL double
 * gets them through the acl adapter, the CUDA double reads them in place of
 * its fatbin). rt_programs_elf.cmake builds and embeds them
 * (kctx_rt_elf_programs, rt_programs_elf.h), and each platform that loads
 * them lists that declaration (platform/sim, platform/acl platform.cmake).
 * The programs:
 *
 *   kctx_rt_acquire    AICPU: takes the launch guard (K23), clears the
 *                      mailboxes and the ready queue
 *   kctx_rt_scheduler  AICPU: checks the device error word (K35), copies the
 *                      args snapshot, seeds the ready queue with the tasks
 *                      that depend on nothing, waits for the graph to
 *                      complete, ends the run and releases the guard
 *   kctx_rt_update     AICPU, on the caller's stream: publishes a new argument
 *                      set in an updatable launch's slot (kctx_update_args;
 *                      kctx/rt_layout.h U1-U3); the scheduler reads the slot
 *                      (R1-R2) when the launch names one
 *   kctx_rt_worker     AICore (one block per core, or fewer when the
 *                      callable has fewer blocks in all): takes blocks of ready
 *                      tasks from the queue, runs them (through the task
 *                      ABI, kctx/task_abi.h), and releases the successors of
 *                      the tasks it completes
 *
 * and for the HOST_ORDERED strategy (the host enqueues the task kernels):
 *
 *   kctx_rt_ho_acquire   AICPU: refuses a poisoned context's run (K35) or
 *                        takes the guard only when free (K23)
 *   kctx_rt_ho_finalize  AICPU: the holder's trace record; releases the guard
 *                        (both follow the guard steps G1-G5 of kctx/rt_layout.h,
 *                        as OpenCL's and CUDA's programs do)
 *
 * Dispatch is pulled by the workers from a ready queue in device memory
 * rather than posted one task at a time through the per-core mailboxes: a
 * round trip through the scheduler for every task costs two context
 * switches, which made dispatch about 15 times slower than a thread pool
 * (bench task_dispatch). The mailboxes remain the cores' report-in slots.
 *
 * Every program receives the launch identity by value, so a captured
 * launch carries it into every replay. Shared words are C11 atomics; every
 * wait goes through the sim's services (block, never spin). Layouts:
 * kctx/rt_layout.h.
 */
#include <kctx/sim_kernel.h>
#include <stdatomic.h>

#include <kctx/rt_layout.h>

#define DEV(T, a) ((T)(uintptr_t)(a))
#define A32(p) ((_Atomic uint32_t *)(p))
#define A64(p) ((_Atomic uint64_t *)(p))
#define MAX_TASKS 4096u
#define MAX_CHILD_PARAMS 64u
/* The scheduler's watchdog: a run in which no task completes for this long
 * has stalled (a runtime bug shows as an error, not a hang). Idle workers
 * re-check at the same period. */
#define WAIT_NS (120ull * 1000000000ull)
/* How often a worker that waits for its run's scheduler looks at the
 * host's abort word (K24). A poll, not a timeout: it never gives up. */
#define ABORT_POLL_NS (2ull * 1000000ull)

static kctx_rt_mailbox *mailbox(const kctx_rt_arch *arch, uint32_t i) {
    return DEV(kctx_rt_mailbox *, arch->mailbox[i]);
}

/* Append a trace record (K32): the task ABI's ring protocol. */
static void trace(kctx_rt_image *rt, uint32_t kind, uint64_t t0, uint64_t t1, uint64_t launch,
                  uint32_t core, uint32_t task, uint32_t func, uint32_t block) {
    kctx_task_trace_append((kctx_task_rt *)rt, kind, t0, t1, launch, core, task, func, block);
}

/* ------------------------------------------------------------------ */

static uint32_t ld(const uint32_t *p) { return atomic_load(A32(p)); }

SIM_KERNEL(kctx_rt_acquire) {
    const kctx_rt_acquire_params *p = params;
    if (params_size < sizeof *p) return;
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    /* K24: the host aborted this launch (its scheduler could not be
     * enqueued): take nothing, so its workers leave at once. */
    if (atomic_load(A32(&rt->abort_launch)) == (uint32_t)p->launch_id) return;
    uint64_t expected = 0;
    int got = atomic_compare_exchange_strong(A64(&rt->holder), &expected, p->launch_id);
    /* A guard left by an aborted launch (its acquire ran before the host's
     * abort) is free: that run never starts, its workers only leave. */
    if (!got && expected != 0 && (uint32_t)expected == atomic_load(A32(&rt->abort_launch)))
        got = atomic_compare_exchange_strong(A64(&rt->holder), &expected, p->launch_id);
    if (got) {
        /* The guard is ours: nothing else touches the shared state now. */
        for (uint32_t i = 0; i < arch->core_count; i++)
            atomic_store(A32(&mailbox(arch, i)->ready), 0);
        atomic_store(A32(&rt->sched_claim), 0);
        atomic_store(A32(&rt->run_state), 0);
        atomic_store(A32(&rt->q_head), 0);
        atomic_store(A32(&rt->q_tail), 0);
        atomic_store(A32(&rt->idle), 0);
        atomic_store(A32(&rt->tasks_done), 0);
        atomic_store(A32(&rt->fail_flag), 0);
        return;
    }
    /* K23: unordered launches of one context overlapped. Touch nothing of
     * the holder's; record the violation. */
    atomic_fetch_add(A32(&rt->concurrent_launches), 1);
    uint32_t none = KCTX_RT_ERR_NONE;
    if (atomic_compare_exchange_strong(A32(&rt->error), &none, KCTX_RT_ERR_CONCURRENT_LAUNCH))
        atomic_store(A64(&rt->error_detail), p->launch_id);
}

/* ------------------------------------------------------------------ */
/* the ready queue                                                     */

#define EMPTY_SLOT UINT32_MAX

typedef struct graph_view {
    const kctx_rt_callable *cal;
    const kctx_rt_task *tasks;
    const kctx_rt_succ *succ;
    const uint32_t *succs;
    kctx_rt_task_state *st;
    uint32_t *queue;
} graph_view;

static graph_view view_of(uint64_t callable) {
    const kctx_rt_callable *cal = DEV(const kctx_rt_callable *, callable);
    uint8_t *base = (uint8_t *)(uintptr_t)callable;
    graph_view g = {cal,
                    (const kctx_rt_task *)(base + cal->tasks_off),
                    (const kctx_rt_succ *)(base + cal->succ_off),
                    (const uint32_t *)(base + cal->succs_off),
                    (kctx_rt_task_state *)(base + cal->scratch_off),
                    (uint32_t *)(base + cal->queue_off)};
    return g;
}

/* State changed: wake idle workers (only if some wait: no system call on
 * the busy path). */
static void bump(kctx_rt_image *rt, const sim_kernel_services *svc) {
    atomic_fetch_add(A32(&rt->q_gen), 1);
    if (ld(&rt->idle)) svc->wake_u32(&rt->q_gen);
}

/* Make a task ready. Callers push a batch, then bump once. */
static void push(kctx_rt_image *rt, const graph_view *g, uint32_t task) {
    uint32_t i = atomic_fetch_add(A32(&rt->q_tail), 1);
    atomic_store(A32(&g->queue[i]), task);
}

static void worker_leave(kctx_rt_image *rt, const sim_kernel_services *svc) {
    if (atomic_fetch_sub(A32(&rt->live_workers), 1) == 1) svc->wake_u32(&rt->live_workers);
}

/* ------------------------------------------------------------------ */

SIM_KERNEL(kctx_rt_worker) {
    const kctx_rt_worker_params *p = params;
    if (params_size < sizeof *p) return;
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    uint32_t me = ctx->block_idx;
    if (me >= arch->core_count) return;
    const sim_kernel_services *svc = ctx->svc;
    /* Count in before looking at the guard: the run's end waits for every
     * counted worker to leave before it releases the guard, so no worker
     * of this launch can touch the next holder's queue. */
    atomic_fetch_add(A32(&rt->live_workers), 1);
    if (atomic_load(A64(&rt->holder)) != p->launch_id) { /* refused (K23): exit untouched */
        worker_leave(rt, svc);
        return;
    }
    const int tracing = (p->flags & KCTX_RT_FLAG_TRACE) != 0;
    atomic_store(A32(&mailbox(arch, me)->ready), 1);
    graph_view g = view_of(p->callable);
    const uint8_t *cbase = (const uint8_t *)g.cal;
    const uint64_t *entries = (const uint64_t *)(cbase + g.cal->entries_off);
    const kctx_rt_binding *binds = (const kctx_rt_binding *)(cbase + g.cal->bindings_off);
    const kctx_rt_arg *args = DEV(const kctx_rt_arg *, p->args);
    const uint32_t ntasks = g.cal->task_count;

    uint64_t unseeded_since = 0; /* when this worker began waiting for a scheduler */
    for (;;) {
        uint32_t gen = ld(&rt->q_gen);
        /* the run is over (or, defensively, the guard is not ours): leave */
        uint32_t state = ld(&rt->run_state);
        if (state == 2 || atomic_load(A64(&rt->holder)) != p->launch_id) break;
        uint32_t h = ld(&rt->q_head);
        /* Every task's last block is taken (each task enters the queue
         * once): no work can appear for this worker any more, whoever runs
         * the last blocks releases no task it would need a hand for. Leave
         * now rather than wait for the run's end; the end still waits for
         * every counted worker before it releases the guard. */
        if (state == 1 && h >= ntasks) break;
        uint32_t task = state == 1 && h < ld(&rt->q_tail) ? ld(&g.queue[h]) : EMPTY_SLOT;
        if (task == EMPTY_SLOT) { /* nothing ready yet: wait for a push or the end */
            /* K24: the host aborted this launch (no scheduler will come; the
             * host's streamless write cannot fail the way the enqueue did):
             * release the guard once the last of us leaves. */
            if (state == 0 && atomic_load(A32(&rt->abort_launch)) == (uint32_t)p->launch_id) {
                if (atomic_fetch_sub(A32(&rt->live_workers), 1) == 1) {
                    uint64_t mine = p->launch_id;
                    atomic_compare_exchange_strong(A64(&rt->holder), &mine, 0);
                    svc->wake_u32(&rt->live_workers);
                }
                return;
            }
            atomic_fetch_add(A32(&rt->idle), 1);
            int rc = SIM_SVC_OK;
            /* Before the scheduler seeds the run, poll for the host's abort
             * word; once it runs, its pushes and its end wake us. */
            if (ld(&rt->q_gen) == gen)
                rc = svc->wait_u32(&rt->q_gen, gen, state == 0 ? ABORT_POLL_NS : WAIT_NS);
            atomic_fetch_sub(A32(&rt->idle), 1);
            if (rc == SIM_SVC_DEVICE_LOST) break;
            if (rc == SIM_SVC_TIMEOUT && ld(&rt->run_state) == 0) {
                uint64_t now = svc->clock_ns();
                if (!unseeded_since) unseeded_since = now;
                if (now - unseeded_since >= WAIT_NS) {
                    /* no scheduler came and no abort either: leave rather
                     * than hang */
                    svc->report_error(KCTX_RT_ERR_BAD_LAUNCH, me);
                    break;
                }
            }
            continue; /* while a scheduler runs, its watchdog judges progress */
        }
        const kctx_rt_task *t = &g.tasks[task];
        uint32_t blk = atomic_fetch_add(A32(&g.st[task].next_block), 1);
        if (blk + 1 >= t->block_dim) { /* the task's last block is taken: move the head on */
            uint32_t want = h;
            /* the last task's last block: idle workers may leave now */
            if (atomic_compare_exchange_strong(A32(&rt->q_head), &want, h + 1) && h + 1 == ntasks)
                bump(rt, svc);
        }
        if (blk >= t->block_dim) continue;
        if (!ld(&rt->fail_flag)) {
            /* the task ABI (kctx/task_abi.h): a header, then the bindings;
             * the task's KCTX_TASK wrapper writes its trace record */
            struct {
                kctx_task_header h;
                uint64_t arg[MAX_CHILD_PARAMS];
            } block;
            uint32_t n = t->binding_count < MAX_CHILD_PARAMS ? t->binding_count : MAX_CHILD_PARAMS;
            block.h = (kctx_task_header){arch->runtime_image,
                                         p->launch_id,
                                         tracing ? KCTX_TASK_TRACE : 0u,
                                         task,
                                         t->func_id,
                                         n};
            for (uint32_t i = 0; i < n; i++) {
                const kctx_rt_binding *b = &binds[t->first_binding + i];
                if (b->kind == 1)
                    block.arg[i] = args[b->param].value + b->value; /* tensor + byte offset */
                else if (b->kind == 2)
                    block.arg[i] = args[b->param].value; /* scalar parameter */
                else
                    block.arg[i] = b->value; /* immediate */
            }
            sim_kernel_ctx cctx = {blk, t->block_dim, ctx->core_id, ctx->core_count, ctx->device,
                                   0,   svc};
            uint32_t code = 0;
            uint64_t detail = 0;
            int failed = svc->call(entries[t->func_id], &cctx, &block,
                                   sizeof block.h + (size_t)n * sizeof(uint64_t), &code, &detail);
            if (failed) {
                uint32_t zero = 0;
                if (atomic_compare_exchange_strong(A32(&rt->fail_flag), &zero, 1)) {
                    rt->fail_task = task;
                    rt->fail_code = code ? code : 1u;
                }
            }
        }
        /* Block done; the last block of a task releases its successors.
         * After a failure the remaining blocks are skipped but still
         * counted, so the run ends. */
        if (atomic_fetch_add(A32(&g.st[task].blocks_done), 1) + 1 == t->block_dim) {
            const kctx_rt_succ *sc = &g.succ[task];
            uint32_t pushed = 0;
            for (uint32_t i = 0; i < sc->count; i++) {
                uint32_t s = g.succs[sc->first + i];
                if (atomic_fetch_sub(A32(&g.st[s].deps_left), 1) == 1) {
                    push(rt, &g, s);
                    pushed++;
                }
            }
            if (pushed) bump(rt, svc);
            /* only the last completion wakes the scheduler; its watchdog
             * reads progress from the count itself */
            if (atomic_fetch_add(A32(&rt->tasks_done), 1) + 1 == ntasks)
                svc->wake_u32(&rt->tasks_done);
        }
    }
    worker_leave(rt, svc);
}

/* ------------------------------------------------------------------ */

/* End the run: workers leave on run_state 2; once every counted worker
 * has left, the guard is released (K23: the next holder's run is never
 * touched by a worker of this one). */
static void end_run(kctx_rt_image *rt, const sim_kernel_services *svc, uint64_t id) {
    atomic_store(A32(&rt->run_state), 2);
    bump(rt, svc); /* wakes the idle workers, if any wait */
    for (uint32_t n; (n = ld(&rt->live_workers)) != 0;)
        if (svc->wait_u32(&rt->live_workers, n, WAIT_NS) == SIM_SVC_DEVICE_LOST) break;
    uint64_t mine = id;
    atomic_compare_exchange_strong(A64(&rt->holder), &mine, 0);
}

/* Take the run: only one scheduler per successful acquire (a second
 * executable copy of the same graph carries the same launch id). */
static int claim_run(kctx_rt_image *rt) {
    uint32_t zero = 0;
    return atomic_compare_exchange_strong(A32(&rt->sched_claim), &zero, 1);
}

/* ------------------------------------------------------------------ */
/* argument slots of updatable launches (kctx/rt_layout.h, U1-U3, R1-R2) */

#define SLOT_READ_TRIES 64u

static void slot_lock(kctx_rt_arg_slot *s, const sim_kernel_services *svc) {
    for (;;) {
        uint32_t zero = 0;
        if (atomic_compare_exchange_strong(A32(&s->lock), &zero, 1)) return;
        if (svc->wait_u32(&s->lock, 1, WAIT_NS) == SIM_SVC_DEVICE_LOST) return;
    }
}

static void slot_unlock(kctx_rt_arg_slot *s, const sim_kernel_services *svc) {
    atomic_store(A32(&s->lock), 0);
    svc->wake_u32(&s->lock);
}

/* The buffer words are atomics: a reader may overlap a writer only on a
 * buffer it then throws away (R2). The reader's loads are acquire loads, so
 * its re-read of the version cannot move before them (a seqlock's read
 * side without a fence, which ThreadSanitizer does not model). */
static void slot_copy(kctx_rt_arg *dst, const kctx_rt_arg *src, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        dst[i].value = atomic_load_explicit(A64(&src[i].value), memory_order_acquire);
        dst[i].size = atomic_load_explicit(A64(&src[i].size), memory_order_acquire);
    }
}

/* R1-R2: the scheduler's arguments from the slot the launch names, or its
 * by-value snapshot while the slot holds no update of this use. */
static void slot_read(kctx_rt_arg *args, const kctx_rt_scheduler_params *p,
                      const sim_kernel_services *svc) {
    const kctx_rt_arg ext = p->snapshot[p->nargs];
    kctx_rt_arg_slot *s = DEV(kctx_rt_arg_slot *, ext.value);
    const uint32_t serial = (uint32_t)ext.size, cap = (uint32_t)(ext.size >> 32);
    for (uint32_t tries = 0;; tries++) {
        const int locked = tries >= SLOT_READ_TRIES;
        if (locked) slot_lock(s, svc);
        uint64_t v = atomic_load_explicit(A64(&s->ver), memory_order_acquire);
        if ((uint32_t)(v >> 32) != serial) { /* R1 */
            for (uint32_t i = 0; i < p->nargs; i++) args[i] = p->snapshot[i];
            if (locked) slot_unlock(s, svc);
            return;
        }
        slot_copy(args, s->buf + (size_t)(v & 1u) * cap, p->nargs);
        if (locked || atomic_load_explicit(A64(&s->ver), memory_order_relaxed) == v) {
            if (locked) slot_unlock(s, svc);
            return;
        }
    }
}

/* kctx_rt_update (U1-U3): publish a new argument set in the slot's
 * unpublished buffer. */
SIM_KERNEL(kctx_rt_update) {
    const kctx_rt_update_params *p = params;
    if (params_size < sizeof *p || (params_size - sizeof *p) / sizeof(kctx_rt_arg) < p->nargs ||
        p->nargs > p->cap)
        return;
    const sim_kernel_services *svc = ctx->svc;
    kctx_rt_arg_slot *s = DEV(kctx_rt_arg_slot *, p->slot);
    slot_lock(s, svc);
    uint64_t v = atomic_load_explicit(A64(&s->ver), memory_order_relaxed);
    uint32_t gen = (uint32_t)v;
    const uint32_t sv = (uint32_t)(v >> 32);
    if (sv != p->serial) {
        if ((int32_t)(sv - p->serial) > 0) { /* reused after this update's graph was gone */
            slot_unlock(s, svc);
            return;
        }
        gen = 0;
    }
    const uint32_t next = gen + 1;
    kctx_rt_arg *b = s->buf + (size_t)(next & 1u) * p->cap;
    for (uint32_t i = 0; i < p->nargs; i++) {
        atomic_store_explicit(A64(&b[i].value), p->args[i].value, memory_order_relaxed);
        atomic_store_explicit(A64(&b[i].size), p->args[i].size, memory_order_relaxed);
    }
    atomic_store_explicit(A64(&s->ver), ((uint64_t)p->serial << 32) | next, memory_order_release);
    slot_unlock(s, svc);
}

SIM_KERNEL(kctx_rt_scheduler) {
    const kctx_rt_scheduler_params *p = params;
    if (params_size < sizeof *p) return;
    const uint64_t nsnap = (params_size - sizeof *p) / sizeof(kctx_rt_arg);
    if (nsnap < p->nargs) return;
    const int from_slot = (p->flags & KCTX_RT_FLAG_ARG_SLOT) && p->mode == KCTX_RT_SCHED_RUN;
    if (from_slot && nsnap < (uint64_t)p->nargs + 1) return;
    const sim_kernel_services *svc = ctx->svc;
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    /* A refused launch (the guard is another launch's, or this launch's
     * run is already taken by another copy of the same graph) touches
     * nothing. */
    if (atomic_load(A64(&rt->holder)) != p->launch_id || !claim_run(rt)) return;
    if (p->mode == KCTX_RT_SCHED_ABORT) { /* K24 compensation */
        end_run(rt, svc, p->launch_id);
        return;
    }
    const int tracing = (p->flags & KCTX_RT_FLAG_TRACE) != 0;
    const uint64_t t_start = tracing ? svc->clock_ns() : 0;
    /* K35: a poisoned or quarantined context refuses the replay. */
    uint32_t err = atomic_load(A32(&rt->error));
    if (err != KCTX_RT_ERR_NONE && err != KCTX_RT_ERR_CONCURRENT_LAUNCH) {
        atomic_fetch_add(A32(&rt->refused_replays), 1);
        if (tracing)
            trace(rt, KCTX_RT_TRACE_REFUSED, t_start, svc->clock_ns(), p->launch_id, UINT32_MAX, 0,
                  0, 0);
        end_run(rt, svc, p->launch_id);
        return;
    }
    /* The args snapshot travelled by value (K22), or the launch is
     * updatable and its slot holds the set (K37); workers read the block. */
    kctx_rt_arg *args = DEV(kctx_rt_arg *, p->args);
    if (from_slot)
        slot_read(args, p, svc);
    else
        for (uint32_t i = 0; i < p->nargs; i++) args[i] = p->snapshot[i];

    graph_view g = view_of(p->callable);
    const uint32_t ntasks = g.cal->task_count < MAX_TASKS ? g.cal->task_count : MAX_TASKS;
    for (uint32_t t = 0; t < ntasks; t++) {
        g.st[t].deps_left = g.tasks[t].dep_count;
        g.st[t].next_block = 0;
        g.st[t].blocks_done = 0;
        g.queue[t] = EMPTY_SLOT;
    }
    /* publish the scratch, then seed the queue with the roots */
    atomic_store(A32(&rt->run_state), 1);
    for (uint32_t t = 0; t < ntasks; t++)
        if (g.tasks[t].dep_count == 0) push(rt, &g, t);
    bump(rt, svc);
    /* Wait for the graph. Watchdog: a long task is fine as long as tasks
     * keep completing; WAIT_NS with no task completed is a stalled run. */
    uint32_t stalled = 0;
    for (;;) {
        uint32_t done = ld(&rt->tasks_done);
        if (done >= ntasks) break;
        int rc = svc->wait_u32(&rt->tasks_done, done, WAIT_NS);
        if (rc == SIM_SVC_DEVICE_LOST) {
            end_run(rt, svc, p->launch_id);
            return;
        }
        if (rc == SIM_SVC_TIMEOUT && ld(&rt->tasks_done) == done) {
            stalled = 1;
            break;
        }
    }
    uint32_t err_word = KCTX_RT_ERR_NONE, code = 0;
    uint64_t detail = 0;
    if (ld(&rt->fail_flag)) { /* a child kernel failed: the error word says which task */
        err_word = KCTX_RT_ERR_TASK_FAILED;
        detail = rt->fail_task;
        code = rt->fail_code;
    } else if (stalled) {
        err_word = KCTX_RT_ERR_BAD_LAUNCH;
        detail = ld(&rt->tasks_done);
    }
    if (err_word != KCTX_RT_ERR_NONE) {
        /* The launch failed on the device; its stream reports it and the
         * host poisons at check. */
        uint32_t none = KCTX_RT_ERR_NONE;
        if (atomic_compare_exchange_strong(A32(&rt->error), &none, err_word))
            atomic_store(A64(&rt->error_detail), detail);
        svc->report_error(err_word, ((uint64_t)code << 32) | (uint32_t)detail);
    }
    if (tracing)
        trace(rt, KCTX_RT_TRACE_SCHED, t_start, svc->clock_ns(), p->launch_id, UINT32_MAX, 0, 0, 0);
    end_run(rt, svc, p->launch_id);
}

/* ------------------------------------------------------------------ */
/* the host-ordered strategy (§0b): acquire and finalize around the    */
/* task kernels the host enqueued on the AICore stream                 */

/* Acquire: a context whose device error word holds anything but a
 * concurrent launch (poisoned, quarantined, a failed task, a stalled run)
 * refuses the run, as the resident scheduler does (K35: the task gates are
 * closed already; counted here); otherwise the guard is
 * taken only when it is free ("free -> taken": two executable copies of
 * one graph carry the same launch id, so "holder == my id" never counts as
 * holding it). A refused acquire writes CONCURRENT_LAUNCH, which closes
 * every task gate, the holder's included (K23). */
SIM_KERNEL(kctx_rt_ho_acquire) {
    const kctx_rt_step_params *p = params;
    if (params_size < sizeof *p) return;
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    const int tracing = (p->flags & KCTX_RT_FLAG_TRACE) != 0;
    uint64_t now = ctx->svc->clock_ns();
    uint32_t err = atomic_load(A32(&rt->error));
    if (err != KCTX_RT_ERR_NONE && err != KCTX_RT_ERR_CONCURRENT_LAUNCH) {
        atomic_fetch_add(A32(&rt->refused_replays), 1);
        if (tracing)
            trace(rt, KCTX_RT_TRACE_REFUSED, now, ctx->svc->clock_ns(), p->launch_id, UINT32_MAX, 0,
                  0, 0);
        return;
    }
    /* K24: the host aborted this launch: take nothing */
    if (atomic_load(A32(&rt->abort_launch)) == (uint32_t)p->launch_id) return;
    uint64_t expected = 0;
    int got = atomic_compare_exchange_strong(A64(&rt->holder), &expected, p->launch_id);
    if (!got && expected != 0 && (uint32_t)expected == atomic_load(A32(&rt->abort_launch)))
        got = atomic_compare_exchange_strong(A64(&rt->holder), &expected, p->launch_id);
    if (got) {
        atomic_store(A64(&rt->run_t0), now);
        return;
    }
    atomic_fetch_add(A32(&rt->concurrent_launches), 1);
    uint32_t none = KCTX_RT_ERR_NONE;
    if (atomic_compare_exchange_strong(A32(&rt->error), &none, KCTX_RT_ERR_CONCURRENT_LAUNCH))
        atomic_store(A64(&rt->error_detail), p->launch_id);
}

/* Finalize: the guard holder's run is over (its tasks ran or were gated):
 * write its trace record and release the guard. */
SIM_KERNEL(kctx_rt_ho_finalize) {
    const kctx_rt_step_params *p = params;
    if (params_size < sizeof *p) return;
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    if (atomic_load(A64(&rt->holder)) != p->launch_id) return; /* refused: not ours */
    if (p->flags & KCTX_RT_FLAG_TRACE)
        trace(rt, KCTX_RT_TRACE_SCHED, atomic_load(A64(&rt->run_t0)), ctx->svc->clock_ns(),
              p->launch_id, UINT32_MAX, 0, 0, 0);
    uint64_t mine = p->launch_id;
    atomic_compare_exchange_strong(A64(&rt->holder), &mine, 0);
}
