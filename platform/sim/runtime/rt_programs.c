/*
 * rt_programs.c — the kctx runtime's device programs for the sim, loaded as
 * one module at kernel init (K11):
 *
 *   kctx_rt_acquire    AICPU: takes the launch guard (K23), clears mailboxes
 *   kctx_rt_scheduler  AICPU: runs the callable's task graph on the cores
 *   kctx_rt_worker     AICore (one block per core): runs tasks it is posted
 *
 * Every program receives the launch identity by value, so a captured
 * launch carries it into every replay. Shared words are C11 atomics; every
 * wait goes through the sim's services (block, never spin). Layouts:
 * src/core/rt_layout.h.
 */
#include <kctx/sim_kernel.h>
#include <stdatomic.h>

#include "rt_layout.h"

#define DEV(T, a) ((T)(uintptr_t)(a))
#define A32(p) ((_Atomic uint32_t *)(p))
#define A64(p) ((_Atomic uint64_t *)(p))
#define MAX_TASKS 4096u
#define MAX_CHILD_PARAMS 64u
/* A worker waiting for a post, or the scheduler for a completion, gives up
 * after this long: a runtime bug then shows as an error, not a hang. */
#define WAIT_NS (120ull * 1000000000ull)

static kctx_rt_mailbox *mailbox(const kctx_rt_arch *arch, uint32_t i) {
    return DEV(kctx_rt_mailbox *, arch->mailbox[i]);
}

/* Append a trace record (K32): a full ring drops the newest, counted. */
static void trace(kctx_rt_image *rt, uint32_t kind, uint64_t t0, uint64_t t1, uint64_t launch, uint32_t core,
                  uint32_t task, uint32_t func, uint32_t block) {
    if (!rt->trace_ring) return;
    uint64_t i = atomic_fetch_add(A64(&rt->trace_head), 1);
    if (i >= rt->trace_capacity) {
        atomic_fetch_add(A64(&rt->trace_dropped), 1);
        return;
    }
    kctx_rt_trace_rec *r = DEV(kctx_rt_trace_rec *, rt->trace_ring) + i;
    r->t0 = t0;
    r->t1 = t1;
    r->launch_id = launch;
    r->kind = kind;
    r->core = core;
    r->task = task;
    r->func_id = func;
    r->block = block;
    r->reserved = 0;
}

/* ------------------------------------------------------------------ */

SIM_KERNEL(kctx_rt_acquire) {
    const kctx_rt_acquire_params *p = params;
    if (params_size < sizeof *p) return;
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    uint64_t expected = 0;
    if (atomic_compare_exchange_strong(A64(&rt->holder), &expected, p->launch_id)) {
        /* The guard is ours: nothing else touches the mailboxes now. */
        for (uint32_t i = 0; i < arch->core_count; i++) {
            kctx_rt_mailbox *mb = mailbox(arch, i);
            atomic_store(A32(&mb->post), 0);
            atomic_store(A32(&mb->ack), 0);
            atomic_store(A32(&mb->ready), 0);
            mb->cmd = KCTX_RT_CMD_IDLE;
            mb->status = 0;
            mb->detail = 0;
        }
        atomic_store(A32(&rt->ready_count), 0);
        atomic_store(A32(&rt->completions), 0);
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

SIM_KERNEL(kctx_rt_worker) {
    const kctx_rt_worker_params *p = params;
    if (params_size < sizeof *p) return;
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    uint32_t me = ctx->block_idx;
    /* Refused launch (K23) or a block beyond the table: exit untouched. */
    if (me >= arch->core_count || atomic_load(A64(&rt->holder)) != p->launch_id) return;
    const sim_kernel_services *svc = ctx->svc;
    kctx_rt_mailbox *mb = mailbox(arch, me);
    const kctx_rt_callable *cal = DEV(const kctx_rt_callable *, p->callable);
    const uint8_t *cbase = (const uint8_t *)cal;
    const uint64_t *entries = (const uint64_t *)(cbase + cal->entries_off);
    const kctx_rt_task *tasks = (const kctx_rt_task *)(cbase + cal->tasks_off);
    const kctx_rt_binding *binds = (const kctx_rt_binding *)(cbase + cal->bindings_off);
    const kctx_rt_arg *args = DEV(const kctx_rt_arg *, p->args);

    /* The acquire step zeroed `post` for this launch: every post since is
     * ours (an abort may already have posted exit before we got here). */
    uint32_t seen = 0;
    atomic_store(A32(&mb->ready), 1);
    atomic_fetch_add(A32(&rt->ready_count), 1);
    svc->wake_u32((const uint32_t *)&rt->ready_count);
    for (;;) {
        while (atomic_load(A32(&mb->post)) == seen) {
            int rc = svc->wait_u32((const uint32_t *)&mb->post, seen, WAIT_NS);
            if (rc == SIM_SVC_DEVICE_LOST) return;
            if (rc == SIM_SVC_TIMEOUT) {
                svc->report_error(KCTX_RT_ERR_BAD_LAUNCH, me);
                return;
            }
        }
        seen = atomic_load(A32(&mb->post));
        if (mb->cmd == KCTX_RT_CMD_EXIT) {
            atomic_store(A32(&mb->ack), seen);
            return;
        }
        const kctx_rt_task *t = &tasks[mb->task];
        uint64_t block[MAX_CHILD_PARAMS];
        uint32_t n = t->binding_count < MAX_CHILD_PARAMS ? t->binding_count : MAX_CHILD_PARAMS;
        for (uint32_t i = 0; i < n; i++) {
            const kctx_rt_binding *b = &binds[t->first_binding + i];
            if (b->kind == 1) block[i] = args[b->param].value + b->value;      /* tensor + byte offset */
            else if (b->kind == 2) block[i] = args[b->param].value;            /* scalar parameter */
            else block[i] = b->value;                                          /* immediate */
        }
        sim_kernel_ctx cctx = {mb->block, t->block_dim, ctx->core_id, ctx->core_count, ctx->device, 0, svc};
        uint32_t code = 0;
        uint64_t detail = 0;
        uint64_t t0 = (p->flags & KCTX_RT_FLAG_TRACE) ? svc->clock_ns() : 0;
        int failed = svc->call(entries[t->func_id], &cctx, block, (size_t)n * sizeof(uint64_t), &code, &detail);
        if (p->flags & KCTX_RT_FLAG_TRACE)
            trace(rt, KCTX_RT_TRACE_TASK, t0, svc->clock_ns(), p->launch_id, ctx->core_id, mb->task, t->func_id,
                  mb->block);
        mb->status = failed ? (code ? code : 1u) : 0u;
        mb->detail = detail;
        atomic_store(A32(&mb->ack), seen);
        atomic_fetch_add(A32(&rt->completions), 1);
        svc->wake_u32((const uint32_t *)&rt->completions);
    }
}

/* ------------------------------------------------------------------ */

static void post(const sim_kernel_services *svc, kctx_rt_mailbox *mb, uint32_t cmd, uint32_t task, uint32_t block) {
    mb->cmd = cmd;
    mb->task = task;
    mb->block = block;
    atomic_fetch_add(A32(&mb->post), 1); /* publishes the fields above */
    svc->wake_u32((const uint32_t *)&mb->post);
}

static void release_guard(kctx_rt_image *rt, const kctx_rt_arch *arch, const sim_kernel_services *svc,
                          uint64_t id) {
    for (uint32_t i = 0; i < arch->core_count; i++) post(svc, mailbox(arch, i), KCTX_RT_CMD_EXIT, 0, 0);
    uint64_t mine = id;
    atomic_compare_exchange_strong(A64(&rt->holder), &mine, 0);
}

static int task_ready(const kctx_rt_task *t, const uint32_t *deps, const uint8_t *done) {
    for (uint32_t d = 0; d < t->dep_count; d++)
        if (!done[deps[t->first_dep + d]]) return 0;
    return 1;
}

SIM_KERNEL(kctx_rt_scheduler) {
    const kctx_rt_scheduler_params *p = params;
    if (params_size < sizeof *p || (params_size - sizeof *p) / sizeof(kctx_rt_arg) < p->nargs) return;
    const sim_kernel_services *svc = ctx->svc;
    const kctx_rt_arch *arch = DEV(const kctx_rt_arch *, p->arch);
    kctx_rt_image *rt = DEV(kctx_rt_image *, arch->runtime_image);
    /* A refused launch (the guard is another launch's) touches nothing. */
    if (atomic_load(A64(&rt->holder)) != p->launch_id) return;
    if (p->mode == KCTX_RT_SCHED_ABORT) { /* K24 compensation */
        release_guard(rt, arch, svc, p->launch_id);
        return;
    }
    const int tracing = (p->flags & KCTX_RT_FLAG_TRACE) != 0;
    const uint64_t t_start = tracing ? svc->clock_ns() : 0;
    /* K35: a poisoned or quarantined context refuses the replay. */
    uint32_t err = atomic_load(A32(&rt->error));
    if (err != KCTX_RT_ERR_NONE && err != KCTX_RT_ERR_CONCURRENT_LAUNCH) {
        atomic_fetch_add(A32(&rt->refused_replays), 1);
        if (tracing) trace(rt, KCTX_RT_TRACE_REFUSED, t_start, svc->clock_ns(), p->launch_id, UINT32_MAX, 0, 0, 0);
        release_guard(rt, arch, svc, p->launch_id);
        return;
    }
    /* The args snapshot travelled by value (K22); workers read the block. */
    kctx_rt_arg *args = DEV(kctx_rt_arg *, p->args);
    for (uint32_t i = 0; i < p->nargs; i++) args[i] = p->snapshot[i];

    const kctx_rt_callable *cal = DEV(const kctx_rt_callable *, p->callable);
    const uint8_t *cbase = (const uint8_t *)cal;
    const kctx_rt_task *tasks = (const kctx_rt_task *)(cbase + cal->tasks_off);
    const uint32_t *deps = (const uint32_t *)(cbase + cal->deps_off);
    uint32_t ntasks = cal->task_count < MAX_TASKS ? cal->task_count : MAX_TASKS;
    uint32_t ncores = arch->core_count;

    /* Wait for every worker to report in. */
    for (;;) {
        uint32_t r = atomic_load(A32(&rt->ready_count));
        if (r >= ncores) break;
        int rc = svc->wait_u32((const uint32_t *)&rt->ready_count, r, WAIT_NS);
        if (rc != SIM_SVC_OK) {
            release_guard(rt, arch, svc, p->launch_id);
            svc->report_error(KCTX_RT_ERR_BAD_LAUNCH, r);
            return;
        }
    }

    uint8_t done[MAX_TASKS];
    uint32_t next_block[MAX_TASKS], blocks_done[MAX_TASKS];
    for (uint32_t t = 0; t < ntasks; t++) done[t] = 0, next_block[t] = 0, blocks_done[t] = 0;
    int32_t core_task[64 * 16];
    uint32_t core_post[64 * 16];
    for (uint32_t c = 0; c < ncores; c++) core_task[c] = -1, core_post[c] = 0;
    uint32_t tasks_done = 0, in_flight = 0, scan_from = 0;
    int failed = 0;
    uint32_t failed_task = 0, failed_code = 0;

    while (tasks_done < ntasks) {
        /* hand ready blocks to idle cores */
        if (!failed) {
            for (uint32_t c = 0; c < ncores; c++) {
                if (core_task[c] >= 0) continue;
                uint32_t t = scan_from;
                while (t < ntasks && (done[t] || next_block[t] >= tasks[t].block_dim || !task_ready(&tasks[t], deps, done)))
                    t++;
                if (t == ntasks) break;
                core_task[c] = (int32_t)t;
                core_post[c] = atomic_load(A32(&mailbox(arch, c)->post)) + 1;
                post(svc, mailbox(arch, c), KCTX_RT_CMD_RUN, t, next_block[t]++);
                in_flight++;
            }
        }
        if (in_flight == 0) break; /* failed, or nothing runnable (cannot happen for a valid DAG) */
        /* wait for a completion, then collect every finished block */
        uint32_t seen = atomic_load(A32(&rt->completions));
        uint32_t collected = 0;
        for (uint32_t c = 0; c < ncores; c++) {
            if (core_task[c] < 0) continue;
            kctx_rt_mailbox *mb = mailbox(arch, c);
            if (atomic_load(A32(&mb->ack)) != core_post[c]) continue;
            uint32_t t = (uint32_t)core_task[c];
            core_task[c] = -1;
            in_flight--;
            collected++;
            if (mb->status && !failed) {
                failed = 1;
                failed_task = t;
                failed_code = mb->status;
            }
            if (++blocks_done[t] == tasks[t].block_dim) {
                done[t] = 1;
                tasks_done++;
                while (scan_from < ntasks && done[scan_from]) scan_from++;
            }
        }
        if (!collected) {
            int rc = svc->wait_u32((const uint32_t *)&rt->completions, seen, WAIT_NS);
            if (rc == SIM_SVC_DEVICE_LOST) return;
            if (rc == SIM_SVC_TIMEOUT) {
                failed = 1;
                failed_code = KCTX_RT_ERR_BAD_LAUNCH;
                break;
            }
        }
    }
    if (failed) {
        /* The launch failed on the device: the error word says which task,
         * and the stream reports it. The host poisons at check. */
        uint32_t none = KCTX_RT_ERR_NONE;
        if (atomic_compare_exchange_strong(A32(&rt->error), &none, KCTX_RT_ERR_TASK_FAILED))
            atomic_store(A64(&rt->error_detail), failed_task);
        svc->report_error(KCTX_RT_ERR_TASK_FAILED, ((uint64_t)failed_code << 32) | failed_task);
    }
    atomic_fetch_add(A64(&rt->launches_done), 1);
    if (tracing) trace(rt, KCTX_RT_TRACE_SCHED, t_start, svc->clock_ns(), p->launch_id, UINT32_MAX, 0, 0, 0);
    release_guard(rt, arch, svc, p->launch_id);
}
