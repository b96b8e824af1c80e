/*
 * sim_stream.c — execution: AICore cores and the AICPU, the kernel services
 * table, streams (one worker thread each), events and device reset.
 *
 * Why one file of ~1,100 lines: its six parts (records and ops, kernel
 * services, cores, streams, events, synchronisation and reset) share one
 * lock order (device lock, then a stream's, then a record's waiters) and
 * the record/waiter life cycle that every one of them completes, waits on
 * or cancels; a device reset or loss walks all of them under the device
 * lock. Split, those statics would move into sim_internal.h for every sim
 * file to see. Capture (sim_capture.c), memory (sim_memory.c) and modules
 * (sim_module.c, sim_elf.c) are separate because they meet this file only
 * through sim_internal.h's few entry points.
 */
#include "sim_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* records and ops                                                     */

simi_rec *simi_rec_new(simi_device *dev) {
    simi_rec *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    atomic_init(&r->refs, 1);
    r->dev = dev;
    return r;
}

void simi_rec_put(simi_rec *r) {
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) free(r);
}

/* A thread waiting for one record (a stream worker's event wait, a host's
 * event synchronise), linked on its device while it waits: a record's
 * completion wakes only its own waiters (not every waiter of the device, as
 * one condition variable did), a lost device all of them. */
struct simi_rec_waiter {
    struct simi_rec_waiter *next;
    const simi_rec *rec;
    simi_cv cv;
};

static void rec_complete(simi_rec *r, sim_status st) {
    simi_device *dev = r->dev;
    pthread_mutex_lock(&dev->done_lock);
    r->done = 1;
    r->status = st;
    r->t_ns = simi_now_ns();
    for (simi_rec_waiter *w = dev->rec_waiters; w; w = w->next)
        if (w->rec == r) simi_cv_broadcast(&w->cv);
    pthread_mutex_unlock(&dev->done_lock);
}

/* Waits until r completes or its device dies; returns whether r completed
 * (*status: its status then). */
static bool rec_wait(simi_rec *r, sim_status *status) {
    simi_device *dev = r->dev;
    pthread_mutex_lock(&dev->done_lock);
    if (!r->done && !simi_dev_dead(dev)) {
        simi_rec_waiter w = {.next = dev->rec_waiters, .rec = r};
        simi_cv_init(&w.cv);
        dev->rec_waiters = &w;
        SIMI_WAIT_WHILE_BUSY(&w.cv, &dev->done_lock, &dev->active_streams,
                             !r->done && !simi_dev_dead(dev));
        for (simi_rec_waiter **p = &dev->rec_waiters; *p; p = &(*p)->next)
            if (*p == &w) {
                *p = w.next;
                break;
            }
        simi_cv_destroy(&w.cv);
    }
    bool done = r->done != 0;
    *status = done ? r->status : SIM_DEVICE_LOST;
    pthread_mutex_unlock(&dev->done_lock);
    return done;
}

simi_op *simi_op_alloc(size_t psize) {
    simi_op *op = calloc(1, sizeof *op + psize);
    return op;
}

simi_op *simi_op_clone(const simi_op *op) {
    size_t ps = op->kind == SIMI_OP_KERNEL ? op->u.k.psize : 0;
    simi_op *c = simi_op_alloc(ps);
    if (!c) return NULL;
    memcpy(c, op, sizeof *op + ps);
    c->next = NULL;
    if (c->kind == SIMI_OP_KERNEL) atomic_fetch_add(&c->u.k.module->uses, 1);
    return c;
}

void simi_op_free(simi_op *op) {
    if (!op) return;
    if (op->kind == SIMI_OP_KERNEL && op->u.k.module) atomic_fetch_sub(&op->u.k.module->uses, 1);
    if (op->kind == SIMI_OP_RECORD || op->kind == SIMI_OP_WAIT) simi_rec_put(op->u.rec.rec);
    if (op->kind == SIMI_OP_GRAPH) simi_exec_put(op->u.graph.exec);
    free(op);
}

/* ------------------------------------------------------------------ */
/* kernel services                                                     */

typedef struct exec_ctx {
    simi_device *dev;
    atomic_int reported;
    uint32_t code;
    uint64_t detail;
} exec_ctx;

static _Thread_local exec_ctx *tl_exec;

static long futex(const uint32_t *addr, int op, uint32_t val, const struct timespec *ts) {
    return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

/* Kernels parked in svc_wait_u32 (all devices): svc_wake_u32 makes no
 * system call while it is 0. A waiter counts itself in before the futex
 * wait, whose kernel side re-reads the word; a waker changed the word before
 * it reads the count (both sequentially consistent), so either the waker
 * sees the waiter counted or the waiter's futex sees the changed word. */
static atomic_uint g_svc_parked;

static int svc_wait_u32(const uint32_t *word, uint32_t expected, uint64_t timeout_ns) {
    exec_ctx *ec = tl_exec;
    uint64_t start = simi_now_ns();
    const uint64_t slice = 20000000ull; /* re-check device state every 20 ms */
    /* The sim's hand-off policy (sim_internal.h): look again, yielding the
     * processor between looks, for up to KCTX_SIM_SPIN_US before parking;
     * a word that changes in that time costs no futex wake-up. */
    uint64_t active = g_sim.spin_ns < timeout_ns ? g_sim.spin_ns : timeout_ns;
    while (simi_now_ns() - start < active) {
        if (ec && simi_dev_dead(ec->dev)) return SIM_SVC_DEVICE_LOST;
        if (atomic_load((const _Atomic uint32_t *)word) != expected) return SIM_SVC_OK;
        sched_yield();
    }
    for (;;) {
        if (ec && simi_dev_dead(ec->dev)) return SIM_SVC_DEVICE_LOST;
        if (atomic_load((const _Atomic uint32_t *)word) != expected) return SIM_SVC_OK;
        uint64_t waited = simi_now_ns() - start;
        if (timeout_ns != UINT64_MAX && waited >= timeout_ns) return SIM_SVC_TIMEOUT;
        uint64_t left = timeout_ns == UINT64_MAX ? slice : timeout_ns - waited;
        if (left > slice) left = slice;
        struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
        atomic_fetch_add(&g_svc_parked, 1);
        long rc = futex(word, FUTEX_WAIT_PRIVATE, expected, &ts);
        atomic_fetch_sub(&g_svc_parked, 1);
        if (rc == 0) return SIM_SVC_OK; /* woken: callers re-check */
    }
}

static void svc_wake_u32(const uint32_t *word) {
    atomic_thread_fence(memory_order_seq_cst); /* the caller's change of the word comes first */
    if (atomic_load(&g_svc_parked) == 0) return;
    futex(word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}
void simi_wake_word(const uint32_t *word) { svc_wake_u32(word); }

static void svc_report_error(uint32_t code, uint64_t detail) {
    exec_ctx *ec = tl_exec;
    if (!ec) return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&ec->reported, &expected, 1)) {
        ec->code = code;
        ec->detail = detail;
    }
}

static uint64_t svc_clock_ns(void) { return simi_now_ns(); }

static int svc_call(uint64_t entry, const sim_kernel_ctx *kctx, const void *params,
                    size_t params_size, uint32_t *code, uint64_t *detail) {
    exec_ctx *outer = tl_exec;
    exec_ctx inner = {.dev = outer ? outer->dev : NULL};
    atomic_init(&inner.reported, 0);
    sim_kernel_fn fn;
    memcpy(&fn, &(uintptr_t){(uintptr_t)entry}, sizeof fn);
    tl_exec = &inner;
    fn(kctx, params, params_size);
    tl_exec = outer;
    if (!atomic_load(&inner.reported)) return 0;
    if (code) *code = inner.code;
    if (detail) *detail = inner.detail;
    return 1;
}

static const sim_kernel_services g_services = {
    .abi_version = SIM_KERNEL_ABI_VERSION,
    .wait_u32 = svc_wait_u32,
    .wake_u32 = svc_wake_u32,
    .report_error = svc_report_error,
    .clock_ns = svc_clock_ns,
    .call = svc_call,
};

/* ------------------------------------------------------------------ */
/* cores                                                               */

typedef struct simi_block_job {
    sim_kernel_fn entry;
    const void *params;
    size_t psize;
    sim_kernel_ctx kctx;
    exec_ctx *ec;
    pthread_mutex_t *lock;
    simi_cv *cond;
    int *remaining;
} simi_block_job;

static void run_block(simi_block_job *j) {
    exec_ctx *saved = tl_exec;
    tl_exec = j->ec;
    j->entry(&j->kctx, j->params, j->psize);
    tl_exec = saved;
}

typedef struct core_arg {
    simi_device *dev;
    int id;
} core_arg;

static void *core_main(void *p) {
    core_arg a = *(core_arg *)p;
    free(p);
    simi_core *c = &a.dev->core[a.id];
    char name[16]; /* for profilers and debuggers (perf sched, gdb) */
    snprintf(name, sizeof name, "sim-core%d.%d", a.dev->index, a.id);
    pthread_setname_np(pthread_self(), name);
    for (;;) {
        pthread_mutex_lock(&c->lock);
        SIMI_WAIT_WHILE_BUSY(&c->cond, &c->lock, &a.dev->active_streams, !c->job);
        simi_block_job *j = c->job;
        c->job = NULL;
        pthread_mutex_unlock(&c->lock);
        run_block(j);
        pthread_mutex_lock(j->lock);
        if (--*j->remaining == 0) simi_cv_signal(j->cond);
        pthread_mutex_unlock(j->lock);
    }
    return NULL;
}

int simi_device_start(simi_device *dev) {
    dev->core_free_mask = dev->cores == 64 ? ~0ull : ((1ull << dev->cores) - 1);
    for (int i = 0; i < dev->cores; i++) {
        simi_core *c = &dev->core[i];
        pthread_mutex_init(&c->lock, NULL);
        simi_cv_init(&c->cond);
        core_arg *a = malloc(sizeof *a);
        if (!a) return -1;
        *a = (core_arg){dev, i};
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&c->thread, &attr, core_main, a);
        pthread_attr_destroy(&attr);
        if (rc) {
            free(a);
            return -1;
        }
    }
    return 0;
}

void simi_device_wake_all(simi_device *dev) {
    pthread_mutex_lock(&dev->core_lock);
    simi_cv_broadcast(&dev->core_cond);
    pthread_mutex_unlock(&dev->core_lock);
    pthread_mutex_lock(&dev->done_lock);
    for (simi_rec_waiter *w = dev->rec_waiters; w; w = w->next) simi_cv_broadcast(&w->cv);
    pthread_mutex_unlock(&dev->done_lock);
}

static sim_status run_kernel(simi_device *dev, simi_op *op) {
    exec_ctx ec = {.dev = dev};
    atomic_init(&ec.reported, 0);
    if (op->u.k.target == SIM_TARGET_AICPU) {
        simi_block_job j = {
            .entry = op->u.k.entry, .params = op->params, .psize = op->u.k.psize, .ec = &ec};
        j.kctx = (sim_kernel_ctx){
            0, 1, UINT32_MAX, (uint32_t)dev->cores, (uint32_t)dev->index, 0, &g_services};
        run_block(&j);
    } else {
        uint32_t bd = op->u.k.block_dim;
        uint32_t w = bd < (uint32_t)dev->cores ? bd : (uint32_t)dev->cores;
        int ids[SIMI_MAX_CORES];
        pthread_mutex_lock(&dev->core_lock);
        SIMI_WAIT_WHILE(&dev->core_cond, &dev->core_lock,
                        (uint32_t)__builtin_popcountll(dev->core_free_mask) < w &&
                            !simi_dev_dead(dev));
        if ((uint32_t)__builtin_popcountll(dev->core_free_mask) < w) {
            pthread_mutex_unlock(&dev->core_lock); /* the device died while we waited for cores */
            return SIM_DEVICE_LOST;
        }
        uint64_t taken = 0;
        for (uint32_t n = 0, i = 0; n < w; i++)
            if (dev->core_free_mask & (1ull << i)) {
                ids[n++] = (int)i;
                taken |= 1ull << i;
            }
        dev->core_free_mask &= ~taken;
        pthread_mutex_unlock(&dev->core_lock);

        simi_block_job jobs[SIMI_MAX_CORES];
        pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        simi_cv cond;
        simi_cv_init(&cond);
        for (uint32_t base = 0; base < bd; base += w) {
            uint32_t n = bd - base < w ? bd - base : w;
            int remaining = (int)n - 1;
            for (uint32_t j = 0; j < n; j++) {
                jobs[j] = (simi_block_job){.entry = op->u.k.entry,
                                           .params = op->params,
                                           .psize = op->u.k.psize,
                                           .ec = &ec,
                                           .lock = &lock,
                                           .cond = &cond,
                                           .remaining = &remaining};
                jobs[j].kctx = (sim_kernel_ctx){
                    base + j,   bd, (uint32_t)ids[j], (uint32_t)dev->cores, (uint32_t)dev->index, 0,
                    &g_services};
            }
            for (uint32_t j = 1; j < n; j++) {
                simi_core *c = &dev->core[ids[j]];
                pthread_mutex_lock(&c->lock);
                c->job = &jobs[j];
                simi_cv_signal(&c->cond);
                pthread_mutex_unlock(&c->lock);
            }
            run_block(&jobs[0]);
            pthread_mutex_lock(&lock);
            SIMI_WAIT_WHILE(&cond, &lock, remaining > 0);
            pthread_mutex_unlock(&lock);
        }
        pthread_mutex_destroy(&lock);
        simi_cv_destroy(&cond);
        pthread_mutex_lock(&dev->core_lock);
        dev->core_free_mask |= taken;
        simi_cv_broadcast(&dev->core_cond);
        pthread_mutex_unlock(&dev->core_lock);
    }
    if (atomic_load(&dev->lost)) return SIM_DEVICE_LOST;
    if (!atomic_load(&ec.reported)) return SIM_OK;
    atomic_store(&dev->kerr_code, ec.code);
    atomic_store(&dev->kerr_detail, ec.detail);
    return SIM_KERNEL_ERROR;
}

void simi_exec_op(simi_device *dev, simi_op *op, sim_status *err) {
    if (*err == SIM_OK && simi_dev_dead(dev)) *err = SIM_DEVICE_LOST;
    switch (op->kind) {
    case SIMI_OP_KERNEL:
        if (*err) return;
        simi_hold_point(dev, SIM_EXEC_KERNEL, op->u.k.fnh);
        if ((*err = simi_exec_fail_point(dev, SIM_EXEC_KERNEL, op->u.k.fnh)) != SIM_OK) return;
        /* Past its hold a kernel is in flight: it runs (and sees a lost
         * device through its services) rather than being abandoned. */
        *err = run_kernel(dev, op);
        return;
    case SIMI_OP_COPY:
        if (*err) return;
        simi_hold_point(dev, SIM_EXEC_COPY, 0);
        if ((*err = simi_exec_fail_point(dev, SIM_EXEC_COPY, 0)) != SIM_OK) return;
        if (simi_dev_dead(dev))
            *err = SIM_DEVICE_LOST;
        else
            memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.size);
        return;
    case SIMI_OP_FILL:
        if (*err) return;
        simi_hold_point(dev, SIM_EXEC_FILL, 0);
        if ((*err = simi_exec_fail_point(dev, SIM_EXEC_FILL, 0)) != SIM_OK) return;
        if (simi_dev_dead(dev))
            *err = SIM_DEVICE_LOST;
        else
            memset(op->u.fill.dst, op->u.fill.value, op->u.fill.size);
        return;
    case SIMI_OP_HOST:
        simi_hold_point(dev, SIM_EXEC_HOST_FUNC, 0);
        simi_set_in_callback(true);
        op->u.host.fn(op->u.host.user, *err);
        simi_set_in_callback(false);
        return;
    case SIMI_OP_RECORD:
        simi_hold_point(dev, SIM_EXEC_EVENT_RECORD, 0);
        rec_complete(op->u.rec.rec, *err);
        return;
    case SIMI_OP_WAIT: {
        sim_status rs;
        (void)rec_wait(op->u.rec.rec, &rs);
        if (*err == SIM_OK) *err = rs;
        return;
    }
    case SIMI_OP_GRAPH:
        if (*err) return;
        simi_hold_point(dev, SIM_EXEC_GRAPH, 0);
        simi_exec_run(op->u.graph.exec, err);
        return;
    default:
        return;
    }
}

/* ------------------------------------------------------------------ */
/* streams                                                             */

void simi_stream_put(simi_stream *s) {
    if (atomic_fetch_sub(&s->refs, 1) != 1) return;
    pthread_mutex_destroy(&s->qlock);
    simi_cv_destroy(&s->qcond);
    simi_cv_destroy(&s->idlecond);
    free(s->deps);
    free(s);
}

void simi_stream_push(simi_stream *s, simi_op *op) {
    op->next = NULL;
    pthread_mutex_lock(&s->qlock);
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    if (!s->active) {
        s->active = 1;
        atomic_fetch_add(&s->dev->active_streams, 1);
    }
    simi_cv_signal(&s->qcond);
    pthread_mutex_unlock(&s->qlock);
}

/* qlock held: the stream has nothing queued or running any more. */
static void stream_inactive(simi_stream *s) {
    if (!s->active) return;
    s->active = 0;
    atomic_fetch_sub(&s->dev->active_streams, 1);
}

sim_status simi_stream_wait_idle(simi_stream *s) {
    pthread_mutex_lock(&s->qlock);
    SIMI_WAIT_WHILE_BUSY(&s->idlecond, &s->qlock, &s->dev->active_streams, s->head || s->busy);
    sim_status st = s->error;
    pthread_mutex_unlock(&s->qlock);
    return st;
}

static atomic_uint g_stream_seq; /* names stream threads for profilers */

static void *stream_main(void *p) {
    simi_stream *s = p;
    simi_device *dev = s->dev;
    char name[16];
    snprintf(name, sizeof name, "sim-stream%u", atomic_fetch_add(&g_stream_seq, 1));
    pthread_setname_np(pthread_self(), name);
    for (;;) {
        pthread_mutex_lock(&s->qlock);
        SIMI_WAIT_WHILE_BUSY(&s->qcond, &s->qlock, &dev->active_streams, !s->head);
        simi_op *op = s->head;
        s->head = op->next;
        if (!s->head) s->tail = NULL;
        s->busy = 1;
        sim_status err = s->error;
        pthread_mutex_unlock(&s->qlock);
        if (op->kind == SIMI_OP_EXIT) {
            free(op);
            pthread_mutex_lock(&s->qlock);
            s->busy = 0;
            stream_inactive(s);
            simi_cv_broadcast(&s->idlecond);
            pthread_mutex_unlock(&s->qlock);
            break;
        }
        if (op->kind == SIMI_OP_RECORD) {
            /* A record completes under the queue lock, together with the
             * stream's own progress: whoever sees the event done sees the
             * stream past it (idle if nothing follows), and vice versa. */
            simi_hold_point(dev, SIM_EXEC_EVENT_RECORD, 0);
            if (err == SIM_OK && simi_dev_dead(dev)) err = SIM_DEVICE_LOST;
            pthread_mutex_lock(&s->qlock);
            rec_complete(op->u.rec.rec, err);
        } else {
            simi_exec_op(dev, op, &err);
            simi_op_free(op); /* drops its module use before the stream looks idle */
            op = NULL;
            pthread_mutex_lock(&s->qlock);
        }
        s->error = err;
        s->busy = 0;
        if (!s->head) {
            stream_inactive(s);
            simi_cv_broadcast(&s->idlecond);
        }
        pthread_mutex_unlock(&s->qlock);
        simi_op_free(op);
    }
    simi_stream_put(s);
    pthread_mutex_lock(&dev->thr_lock);
    if (--dev->live_threads == 0) pthread_cond_broadcast(&dev->thr_cond);
    pthread_mutex_unlock(&dev->thr_lock);
    return NULL;
}

/* Look up a live stream handle and check its device is usable. g_sim.lock
 * held on success and on failure. */
static sim_status get_stream(sim_stream h, simi_stream **out) {
    simi_stream *s = simi_handle_get(h, SIMI_T_STREAM);
    if (!s)
        return simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live stream", (unsigned long long)h);
    if (atomic_load(&s->dev->lost))
        return simi_fail(SIM_DEVICE_LOST, "device %d is lost", s->dev->index);
    *out = s;
    return SIM_OK;
}

static void stream_exit(simi_stream *s) {
    simi_op *op = simi_op_alloc(0);
    while (!op) op = simi_op_alloc(0); /* tiny; the worker must be told */
    op->kind = SIMI_OP_EXIT;
    simi_stream_push(s, op);
}

sim_status sim_stream_create(sim_stream *stream) {
    sim_status st = simi_enter(SIM_OP_STREAM_CREATE, -1);
    if (st) return st;
    if (!stream) return simi_fail(SIM_INVALID_VALUE, "stream is NULL");
    simi_device *dev = simi_cur_dev();
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    simi_stream *s = calloc(1, sizeof *s);
    if (!s) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    atomic_init(&s->refs, 2); /* handle + worker */
    s->dev = dev;
    pthread_mutex_init(&s->qlock, NULL);
    simi_cv_init(&s->qcond);
    simi_cv_init(&s->idlecond);
    pthread_mutex_lock(&dev->thr_lock);
    dev->live_threads++;
    pthread_mutex_unlock(&dev->thr_lock);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&s->thread, &attr, stream_main, s);
    pthread_attr_destroy(&attr);
    if (rc) {
        pthread_mutex_lock(&dev->thr_lock);
        dev->live_threads--;
        pthread_mutex_unlock(&dev->thr_lock);
        atomic_store(&s->refs, 1);
        simi_stream_put(s);
        return simi_fail(SIM_OUT_OF_MEMORY, "cannot start the stream's thread (%d)", rc);
    }
    pthread_mutex_lock(&g_sim.lock);
    s->handle = simi_handle_new(SIMI_T_STREAM, dev->index, s);
    if (!s->handle) {
        pthread_mutex_unlock(&g_sim.lock);
        stream_exit(s);
        simi_stream_put(s);
        return simi_fail(SIM_OUT_OF_MEMORY, "handle table full");
    }
    dev->n_streams++;
    *stream = s->handle;
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_stream_destroy(sim_stream stream) {
    sim_status st = simi_enter(SIM_OP_STREAM_DESTROY, simi_handle_device(stream));
    if (st) return st;
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = simi_handle_get(stream, SIMI_T_STREAM);
    if (!s) {
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live stream",
                         (unsigned long long)stream);
    }
    if (s->cap) {
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(SIM_ILLEGAL_STATE, "stream is part of a capture; end the capture first");
    }
    simi_handle_free(stream);
    s->dev->n_streams--;
    pthread_mutex_unlock(&g_sim.lock);
    stream_exit(s); /* work already enqueued completes first */
    simi_stream_put(s);
    return SIM_OK;
}

/* Shared by synchronize and query: capture check, then a reference. */
static sim_status stream_for_wait(sim_stream stream, const char *what, simi_stream **out) {
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = NULL;
    sim_status st = get_stream(stream, &s);
    if (!st && s->cap) {
        simi_capture_invalidate(s->cap);
        st = simi_fail(SIM_CAPTURE_UNSUPPORTED,
                       "%s on a stream that is part of a capture (capture invalidated)", what);
    }
    if (!st) atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&g_sim.lock);
    *out = s;
    return st;
}

sim_status sim_stream_synchronize(sim_stream stream) {
    sim_status st = simi_enter(SIM_OP_STREAM_SYNCHRONIZE, simi_handle_device(stream));
    if (st) return st;
    simi_stream *s;
    st = stream_for_wait(stream, "stream synchronize", &s);
    if (st) return st;
    st = simi_stream_wait_idle(s);
    simi_device *dev = s->dev;
    simi_stream_put(s);
    if (st == SIM_KERNEL_ERROR)
        return simi_fail(
            st,
            "a kernel on the stream reported a device-side error (last report on device %d: code "
            "%u, detail %llu); sticky until device reset",
            dev->index, atomic_load(&dev->kerr_code),
            (unsigned long long)atomic_load(&dev->kerr_detail));
    if (st) return simi_fail(st, "the stream failed earlier (sticky until device reset)");
    return SIM_OK;
}

sim_status sim_stream_synchronize_timeout(sim_stream stream, uint32_t timeout_ms) {
    sim_status st = simi_enter(SIM_OP_STREAM_SYNCHRONIZE, simi_handle_device(stream));
    if (st) return st;
    simi_stream *s;
    st = stream_for_wait(stream, "stream synchronize", &s);
    if (st) return st;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    int timed_out = 0;
    pthread_mutex_lock(&s->qlock);
    while ((s->head || s->busy) && !timed_out)
        timed_out = pthread_cond_timedwait(&s->idlecond.cond, &s->qlock, &dl) == ETIMEDOUT;
    if (timed_out && !s->head && !s->busy) timed_out = 0;
    st = s->error;
    pthread_mutex_unlock(&s->qlock);
    simi_stream_put(s);
    if (timed_out) return simi_fail(SIM_TIMEOUT, "stream still busy after %u ms", timeout_ms);
    if (st) return simi_fail(st, "the stream failed earlier (sticky until device reset)");
    return SIM_OK;
}

sim_status sim_stream_query(sim_stream stream) {
    sim_status st = simi_enter(SIM_OP_STREAM_QUERY, simi_handle_device(stream));
    if (st) return st;
    simi_stream *s;
    st = stream_for_wait(stream, "stream query", &s);
    if (st) return st;
    pthread_mutex_lock(&s->qlock);
    st = s->error ? s->error : (s->head || s->busy) ? SIM_NOT_READY : SIM_OK;
    pthread_mutex_unlock(&s->qlock);
    simi_stream_put(s);
    return st == SIM_OK || st == SIM_NOT_READY ? st : simi_fail(st, "the stream failed earlier");
}

sim_status sim_stream_get_device(sim_stream stream, int *device) {
    sim_status st = simi_enter(SIM_OP_STREAM_GET_DEVICE, simi_handle_device(stream));
    if (st) return st;
    if (!device) return simi_fail(SIM_INVALID_VALUE, "device is NULL");
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = simi_handle_get(stream, SIMI_T_STREAM);
    if (s) *device = s->dev->index;
    pthread_mutex_unlock(&g_sim.lock);
    return s ? SIM_OK
             : simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live stream",
                         (unsigned long long)stream);
}

/* Enqueue or capture a prepared op on a stream (g_sim.lock held). */
static sim_status submit(simi_stream *s, simi_op *op) {
    if (s->cap) {
        sim_status st = simi_capture_add(s, op);
        if (st) simi_op_free(op);
        return st;
    }
    simi_stream_push(s, op);
    return SIM_OK;
}

sim_status sim_launch_kernel(sim_stream stream, sim_function fn, sim_target target,
                             uint32_t block_dim, const void *params, size_t params_size) {
    simi_watch_arg(fn);
    sim_status st = simi_enter(SIM_OP_LAUNCH_KERNEL, simi_handle_device(stream));
    if (st) return st;
    if (target != SIM_TARGET_AICPU && target != SIM_TARGET_AICORE)
        return simi_fail(SIM_INVALID_VALUE, "unknown target %d", (int)target);
    if (target == SIM_TARGET_AICPU ? block_dim != 1
                                   : (block_dim == 0 || block_dim > SIMI_MAX_BLOCK_DIM))
        return simi_fail(SIM_INVALID_VALUE, "block_dim %u invalid for target %d", block_dim,
                         (int)target);
    if (params_size > SIMI_MAX_PARAMS || (params_size && !params))
        return simi_fail(SIM_INVALID_VALUE, "params_size %zu (max %u) or params NULL", params_size,
                         SIMI_MAX_PARAMS);
    simi_op *op = simi_op_alloc(params_size);
    if (!op) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    op->kind = SIMI_OP_KERNEL;
    op->u.k.target = target;
    op->u.k.block_dim = block_dim;
    op->u.k.psize = (uint32_t)params_size;
    if (params_size) memcpy(op->params, params, params_size); /* by value, at enqueue */
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = NULL;
    st = get_stream(stream, &s);
    simi_function *f = st ? NULL : simi_handle_get(fn, SIMI_T_FUNCTION);
    if (!st && (!f || f->module->dev != s->dev))
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live function of the stream's device",
                       (unsigned long long)fn);
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        free(op);
        return st;
    }
    op->u.k.entry = f->entry;
    op->u.k.fnh = fn;
    op->u.k.module = f->module;
    atomic_fetch_add(&f->module->uses, 1);
    st = submit(s, op);
    pthread_mutex_unlock(&g_sim.lock);
    return st;
}

sim_status sim_memcpy_async(void *dst, const void *src, size_t size, sim_copy_kind kind,
                            sim_stream stream) {
    sim_status st = simi_enter(SIM_OP_MEMCPY_ASYNC, simi_handle_device(stream));
    if (st) return st;
    if (!dst || !src) return simi_fail(SIM_INVALID_VALUE, "dst or src is NULL");
    if (kind < SIM_COPY_HOST_TO_DEVICE || kind > SIM_COPY_DEVICE_TO_DEVICE)
        return simi_fail(SIM_INVALID_VALUE, "unknown copy kind %d", (int)kind);
    simi_op *op = simi_op_alloc(0);
    if (!op) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    op->kind = SIMI_OP_COPY;
    op->u.copy.dst = dst;
    op->u.copy.src = src;
    op->u.copy.size = size;
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = NULL;
    st = get_stream(stream, &s);
    if (!st && kind != SIM_COPY_HOST_TO_DEVICE &&
        !simi_heap_contains(&s->dev->heap, (uintptr_t)src, size))
        st = simi_fail(SIM_INVALID_ADDRESS,
                       "source [%p, +%zu) is not inside one live allocation of device %d", src,
                       size, s->dev->index);
    if (!st && kind != SIM_COPY_DEVICE_TO_HOST &&
        !simi_heap_contains(&s->dev->heap, (uintptr_t)dst, size))
        st = simi_fail(SIM_INVALID_ADDRESS,
                       "destination [%p, +%zu) is not inside one live allocation of device %d", dst,
                       size, s->dev->index);
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        free(op);
        return st;
    }
    st = submit(s, op);
    pthread_mutex_unlock(&g_sim.lock);
    return st;
}

sim_status sim_memset_async(sim_devptr dst, uint8_t value, size_t size, sim_stream stream) {
    sim_status st = simi_enter(SIM_OP_MEMSET_ASYNC, simi_handle_device(stream));
    if (st) return st;
    simi_op *op = simi_op_alloc(0);
    if (!op) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    op->kind = SIMI_OP_FILL;
    op->u.fill.dst = (void *)(uintptr_t)dst;
    op->u.fill.size = size;
    op->u.fill.value = value;
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = NULL;
    st = get_stream(stream, &s);
    if (!st && !simi_heap_contains(&s->dev->heap, dst, size))
        st = simi_fail(SIM_INVALID_ADDRESS,
                       "[0x%llx, +%zu) is not inside one live allocation of device %d",
                       (unsigned long long)dst, size, s->dev->index);
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        free(op);
        return st;
    }
    st = submit(s, op);
    pthread_mutex_unlock(&g_sim.lock);
    return st;
}

sim_status sim_launch_host_func(sim_stream stream, sim_host_fn fn, void *user) {
    sim_status st = simi_enter(SIM_OP_LAUNCH_HOST_FUNC, simi_handle_device(stream));
    if (st) return st;
    if (!fn) return simi_fail(SIM_INVALID_VALUE, "fn is NULL");
    simi_op *op = simi_op_alloc(0);
    if (!op) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    op->kind = SIMI_OP_HOST;
    op->u.host.fn = fn;
    op->u.host.user = user;
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = NULL;
    st = get_stream(stream, &s);
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        free(op);
        return st;
    }
    st = submit(s, op);
    pthread_mutex_unlock(&g_sim.lock);
    return st;
}

/* ------------------------------------------------------------------ */
/* events                                                              */

sim_status sim_event_create(sim_event *event, unsigned flags) {
    sim_status st = simi_enter(SIM_OP_EVENT_CREATE, -1);
    if (st) return st;
    if (!event) return simi_fail(SIM_INVALID_VALUE, "event is NULL");
    if (flags & ~(unsigned)SIM_EVENT_DISABLE_TIMING)
        return simi_fail(SIM_INVALID_VALUE, "unknown flags 0x%x", flags);
    simi_device *dev = simi_cur_dev();
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    simi_event *e = calloc(1, sizeof *e);
    if (!e) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    e->dev = dev;
    e->flags = flags;
    pthread_mutex_lock(&g_sim.lock);
    uint64_t h = simi_handle_new(SIMI_T_EVENT, dev->index, e);
    if (h) dev->n_events++;
    pthread_mutex_unlock(&g_sim.lock);
    if (!h) {
        free(e);
        return simi_fail(SIM_OUT_OF_MEMORY, "handle table full");
    }
    *event = h;
    return SIM_OK;
}

static void event_free(simi_event *e) {
    simi_rec_put(e->last);
    free(e->cap_deps);
    free(e);
}

sim_status sim_event_destroy(sim_event event) {
    sim_status st = simi_enter(SIM_OP_EVENT_DESTROY, simi_handle_device(event));
    if (st) return st;
    pthread_mutex_lock(&g_sim.lock);
    simi_event *e = simi_handle_get(event, SIMI_T_EVENT);
    if (e) {
        simi_handle_free(event);
        e->dev->n_events--;
    }
    pthread_mutex_unlock(&g_sim.lock);
    if (!e)
        return simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live event",
                         (unsigned long long)event);
    event_free(e);
    return SIM_OK;
}

/* Stream + event of one device (g_sim.lock held). */
static sim_status get_pair(sim_stream stream, sim_event event, simi_stream **s, simi_event **e) {
    sim_status st = get_stream(stream, s);
    if (st) return st;
    *e = simi_handle_get(event, SIMI_T_EVENT);
    if (!*e)
        return simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live event",
                         (unsigned long long)event);
    if ((*e)->dev != (*s)->dev)
        return simi_fail(SIM_INVALID_HANDLE, "event of device %d used with a stream of device %d",
                         (*e)->dev->index, (*s)->dev->index);
    return SIM_OK;
}

sim_status sim_event_record(sim_event event, sim_stream stream) {
    simi_watch_arg(event);
    sim_status st = simi_enter(SIM_OP_EVENT_RECORD, simi_handle_device(stream));
    if (st) return st;
    simi_op *op = simi_op_alloc(0);
    if (!op) return simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = NULL; /* set by get_pair when it succeeds */
    simi_event *e = NULL;
    st = get_pair(stream, event, &s, &e);
    if (!st && s->cap) {
        st = simi_capture_record(s, e);
        pthread_mutex_unlock(&g_sim.lock);
        free(op);
        return st;
    }
    simi_rec *r = st ? NULL : simi_rec_new(s->dev);
    if (!st && !r) st = simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        free(op);
        return st;
    }
    if (!(e->flags & SIM_EVENT_DISABLE_TIMING)) r->t_ns = 0;
    simi_rec_put(e->last);
    atomic_fetch_add(&r->refs, 1);
    e->last = r;
    e->cap_id = 0;
    op->kind = SIMI_OP_RECORD;
    op->u.rec.rec = r;
    simi_stream_push(s, op);
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_stream_wait_event(sim_stream stream, sim_event event) {
    simi_watch_arg(event);
    sim_status st = simi_enter(SIM_OP_STREAM_WAIT_EVENT, simi_handle_device(stream));
    if (st) return st;
    pthread_mutex_lock(&g_sim.lock);
    simi_stream *s = NULL; /* set by get_pair when it succeeds */
    simi_event *e = NULL;
    st = get_pair(stream, event, &s, &e);
    if (st) goto out;
    if (s->cap) {
        st = simi_capture_wait(s, e);
        goto out;
    }
    if (e->cap_id) {
        simi_capture *c = simi_capture_find(e->cap_id);
        if (c) {
            st = simi_capture_join(s, e, c);
            goto out;
        }
    }
    if (!e->last || e->cap_id) goto out; /* never recorded (or only in an ended capture): no-op */
    simi_op *op = simi_op_alloc(0);
    if (!op) {
        st = simi_fail(SIM_OUT_OF_MEMORY, "host allocation failed");
        goto out;
    }
    op->kind = SIMI_OP_WAIT;
    op->u.rec.rec = e->last;
    atomic_fetch_add(&e->last->refs, 1);
    simi_stream_push(s, op);
out:
    pthread_mutex_unlock(&g_sim.lock);
    return st;
}

/* Event for query/sync: refuses captured events (g_sim.lock taken and
 * released). Returns the last record with a reference, or NULL. */
static sim_status event_for_wait(sim_event event, const char *what, simi_rec **rec) {
    pthread_mutex_lock(&g_sim.lock);
    sim_status st = SIM_OK;
    simi_event *e = simi_handle_get(event, SIMI_T_EVENT);
    simi_capture *c = NULL;
    if (!e)
        st = simi_fail(SIM_INVALID_HANDLE, "0x%llx is not a live event", (unsigned long long)event);
    else if (atomic_load(&e->dev->lost))
        st = simi_fail(SIM_DEVICE_LOST, "device %d is lost", e->dev->index);
    else if (e->cap_id && (c = simi_capture_find(e->cap_id)) != NULL) {
        simi_capture_invalidate(c);
        st = simi_fail(SIM_CAPTURED_EVENT,
                       "%s on an event last recorded in an active capture (capture invalidated)",
                       what);
    }
    *rec = NULL;
    if (!st && e->last && !e->cap_id) {
        *rec = e->last;
        atomic_fetch_add(&e->last->refs, 1);
    }
    pthread_mutex_unlock(&g_sim.lock);
    return st;
}

sim_status sim_event_query(sim_event event) {
    sim_status st = simi_enter(SIM_OP_EVENT_QUERY, simi_handle_device(event));
    if (st) return st;
    simi_rec *r;
    st = event_for_wait(event, "event query", &r);
    if (st || !r) return st;
    pthread_mutex_lock(&r->dev->done_lock);
    st = r->done ? SIM_OK : SIM_NOT_READY;
    pthread_mutex_unlock(&r->dev->done_lock);
    simi_rec_put(r);
    return st;
}

sim_status sim_event_synchronize(sim_event event) {
    sim_status st = simi_enter(SIM_OP_EVENT_SYNCHRONIZE, simi_handle_device(event));
    if (st) return st;
    simi_rec *r;
    st = event_for_wait(event, "event synchronize", &r);
    if (st || !r) return st;
    sim_status rs;
    st = rec_wait(r, &rs) ? SIM_OK : SIM_DEVICE_LOST;
    simi_rec_put(r);
    return st ? simi_fail(st, "device lost while waiting for the event") : SIM_OK;
}

sim_status sim_event_elapsed_ms(float *ms, sim_event start, sim_event end) {
    simi_watch_arg(end);
    sim_status st = simi_enter(SIM_OP_EVENT_ELAPSED, simi_handle_device(start));
    if (st) return st;
    if (!ms) return simi_fail(SIM_INVALID_VALUE, "ms is NULL");
    pthread_mutex_lock(&g_sim.lock);
    simi_event *a = simi_handle_get(start, SIMI_T_EVENT), *b = simi_handle_get(end, SIMI_T_EVENT);
    simi_rec *ra = NULL, *rb = NULL;
    if (!a || !b)
        st = simi_fail(SIM_INVALID_HANDLE, "start or end is not a live event");
    else if (a->dev != b->dev)
        st = simi_fail(SIM_INVALID_HANDLE,
                       "start (device %d) and end (device %d) are on different devices",
                       a->dev->index, b->dev->index);
    else if ((a->flags | b->flags) & SIM_EVENT_DISABLE_TIMING)
        st = simi_fail(SIM_INVALID_VALUE,
                       "elapsed time needs timing events (created without DISABLE_TIMING)");
    else if (!a->last || !b->last || a->cap_id || b->cap_id)
        st = simi_fail(SIM_NOT_READY, "an event has no executed eager record");
    else {
        ra = a->last;
        rb = b->last;
        atomic_fetch_add(&ra->refs, 1);
        atomic_fetch_add(&rb->refs, 1);
    }
    pthread_mutex_unlock(&g_sim.lock);
    if (st) return st;
    pthread_mutex_lock(&ra->dev->done_lock);
    int done = ra->done && rb->done;
    uint64_t t0 = ra->t_ns, t1 = rb->t_ns;
    pthread_mutex_unlock(&ra->dev->done_lock);
    simi_rec_put(ra);
    simi_rec_put(rb);
    if (!done) return simi_fail(SIM_NOT_READY, "a record has not executed yet");
    *ms = (float)((double)((int64_t)(t1 - t0)) / 1e6);
    return SIM_OK;
}

/* ------------------------------------------------------------------ */
/* device synchronisation and reset                                    */

typedef struct obj_list {
    uint64_t *h;
    void **obj;
    int *type;
    size_t n, cap;
} obj_list;

static void collect(uint64_t h, int type, void *obj, void *user) {
    obj_list *l = user;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        uint64_t *nh = realloc(l->h, nc * sizeof *nh);
        if (nh) l->h = nh;
        void **no = realloc(l->obj, nc * sizeof *no);
        if (no) l->obj = no;
        int *nt = realloc(l->type, nc * sizeof *nt);
        if (nt) l->type = nt;
        if (!nh || !no || !nt) return; /* out of host memory: the object leaks, nothing breaks */
        l->cap = nc;
    }
    l->h[l->n] = h;
    l->obj[l->n] = obj;
    l->type[l->n] = type;
    l->n++;
}

sim_status simi_device_sync(simi_device *dev) {
    obj_list l = {0};
    pthread_mutex_lock(&g_sim.lock);
    simi_handle_visit(dev->index, collect, &l);
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++)
        if (l.type[i] == SIMI_T_STREAM) {
            simi_stream *s = l.obj[i];
            atomic_fetch_add(&s->refs, 1);
            l.obj[k++] = s;
        }
    pthread_mutex_unlock(&g_sim.lock);
    sim_status first = SIM_OK;
    for (size_t i = 0; i < k; i++) {
        sim_status st = simi_stream_wait_idle(l.obj[i]);
        if (st && !first) first = st;
        simi_stream_put(l.obj[i]);
    }
    free(l.h);
    free(l.obj);
    free(l.type);
    return first;
}

sim_status sim_device_synchronize(void) {
    sim_status st = simi_enter(SIM_OP_DEVICE_SYNCHRONIZE, -1);
    if (st) return st;
    simi_device *dev = simi_cur_dev();
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    pthread_mutex_lock(&g_sim.lock);
    st = simi_capture_restricted("sim_device_synchronize");
    pthread_mutex_unlock(&g_sim.lock);
    if (st) return st;
    st = simi_device_sync(dev);
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    return st ? simi_fail(st, "a stream of the device failed earlier") : SIM_OK;
}

void simi_device_teardown(simi_device *dev) {
    obj_list l = {0};
    pthread_mutex_lock(&g_sim.lock);
    simi_capture_abandon_device(dev);
    simi_handle_visit(dev->index, collect, &l);
    for (size_t i = 0; i < l.n; i++) simi_handle_free(l.h[i]);
    dev->n_streams = dev->n_events = dev->n_modules = dev->n_graphs = dev->n_execs = 0;
    pthread_mutex_unlock(&g_sim.lock);
    /* streams first: once their workers exit, nothing executes on the device */
    for (size_t i = 0; i < l.n; i++)
        if (l.type[i] == SIMI_T_STREAM) {
            stream_exit(l.obj[i]);
            simi_stream_put(l.obj[i]);
        }
    pthread_mutex_lock(&dev->thr_lock);
    while (dev->live_threads > 0) pthread_cond_wait(&dev->thr_cond, &dev->thr_lock);
    pthread_mutex_unlock(&dev->thr_lock);
    for (size_t i = 0; i < l.n; i++) {
        switch (l.type[i]) {
        case SIMI_T_EXEC:
            simi_exec_put(l.obj[i]);
            break; /* the handle's reference */
        case SIMI_T_GRAPH:
            simi_graph_free_obj(l.obj[i]);
            break;
        case SIMI_T_EVENT:
            event_free(l.obj[i]);
            break;
        case SIMI_T_FUNCTION:
            free(l.obj[i]);
            break;
        default:
            break;
        }
    }
    for (size_t i = 0; i < l.n; i++)
        if (l.type[i] == SIMI_T_MODULE) simi_module_free_obj(l.obj[i]);
    free(l.h);
    free(l.obj);
    free(l.type);
}
