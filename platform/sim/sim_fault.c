/*
 * sim_fault.c — call counters, fault injection, execution holds and
 * execution failures.
 */
#include "sim_internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static const char *const g_op_names[] = {
#define SIM_OP_NAME_(name) "SIM_OP_" #name,
    SIM_OP_MAP(SIM_OP_NAME_)
#undef SIM_OP_NAME_
};

const char *sim_op_name(sim_op op) {
    if (op == SIM_OP_ANY) return "SIM_OP_ANY";
    if ((int)op < 0 || op >= SIM_OP_COUNT_) return "SIM_OP_UNKNOWN";
    return g_op_names[op];
}

/* ---- counters ---- */
static atomic_ullong g_calls[SIM_OP_COUNT_];
static atomic_ullong g_dev_calls[SIMI_MAX_DEVICES][SIM_OP_COUNT_];
static _Thread_local uint64_t tl_calls[SIM_OP_COUNT_];

/* ---- handle watch ---- */
static _Atomic uint64_t g_watch_handle; /* 0: none */
static atomic_ullong g_watch_calls;
static _Thread_local bool tl_watch_named; /* the call being entered names it */

void simi_watch_arg(uint64_t h) {
    if (h != 0 && h == atomic_load_explicit(&g_watch_handle, memory_order_relaxed))
        tl_watch_named = true;
}

void sim_handle_watch(uint64_t handle) {
    atomic_store(&g_watch_handle, 0);
    atomic_store(&g_watch_calls, 0);
    atomic_store(&g_watch_handle, handle);
}

uint64_t sim_handle_watch_count(void) { return atomic_load(&g_watch_calls); }

void simi_count(sim_op op, int device) {
    if (tl_watch_named) {
        tl_watch_named = false;
        atomic_fetch_add(&g_watch_calls, 1);
    }
    atomic_fetch_add_explicit(&g_calls[op], 1, memory_order_relaxed);
    if (device >= 0 && device < SIMI_MAX_DEVICES)
        atomic_fetch_add_explicit(&g_dev_calls[device][op], 1, memory_order_relaxed);
    tl_calls[op]++;
}

uint64_t sim_calls(int op, int device) {
    if (op != SIM_OP_ANY && (op < 0 || op >= SIM_OP_COUNT_)) return 0;
    if (device >= SIMI_MAX_DEVICES) return 0;
    uint64_t n = 0;
    for (int i = 0; i < SIM_OP_COUNT_; i++) {
        if (op != SIM_OP_ANY && op != i) continue;
        n += device < 0 ? atomic_load(&g_calls[i]) : atomic_load(&g_dev_calls[device][i]);
    }
    return n;
}

uint64_t sim_thread_calls(int op) {
    if (op != SIM_OP_ANY && (op < 0 || op >= SIM_OP_COUNT_)) return 0;
    uint64_t n = 0;
    for (int i = 0; i < SIM_OP_COUNT_; i++)
        if (op == SIM_OP_ANY || op == i) n += tl_calls[i];
    return n;
}

void sim_calls_reset(void) {
    for (int i = 0; i < SIM_OP_COUNT_; i++) {
        atomic_store(&g_calls[i], 0);
        for (int d = 0; d < SIMI_MAX_DEVICES; d++) atomic_store(&g_dev_calls[d][i], 0);
    }
}

void sim_thread_calls_reset(void) { memset(tl_calls, 0, sizeof tl_calls); }

/* ---- faults ---- */
typedef struct fault_slot {
    int armed;
    sim_fault f;
    uint64_t thread;
    uint64_t seen; /* matching calls since arming */
    uint64_t hits;
} fault_slot;

static pthread_mutex_t g_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static fault_slot g_faults[SIM_MAX_FAULTS];
static atomic_int g_faults_armed;

sim_status simi_fault_check(sim_op op, int device) {
    if (atomic_load_explicit(&g_faults_armed, memory_order_acquire) == 0) return SIM_OK;
    sim_status out = SIM_OK;
    uint64_t me = simi_thread_id();
    pthread_mutex_lock(&g_fault_lock);
    for (int i = 0; i < SIM_MAX_FAULTS; i++) {
        fault_slot *s = &g_faults[i];
        if (!s->armed) continue;
        if (s->f.op != SIM_OP_ANY && s->f.op != (int)op) continue;
        if (s->f.device >= 0 && s->f.device != device) continue;
        if (s->f.this_thread_only && s->thread != me) continue;
        s->seen++;
        if (s->seen == s->f.nth || (s->f.persistent && s->seen > s->f.nth)) {
            s->hits++;
            if (out == SIM_OK) out = s->f.error;
        }
    }
    pthread_mutex_unlock(&g_fault_lock);
    if (out != SIM_OK)
        return simi_fail(out, "injected fault in %s (device %d)", sim_op_name(op), device);
    return SIM_OK;
}

sim_status sim_fault_arm(const sim_fault *fault, int *fault_id) {
    simi_ensure_init();
    if (!fault || fault->size < sizeof(sim_fault) || !fault_id)
        return simi_fail(SIM_INVALID_VALUE, "fault or fault_id is NULL, or fault->size too small");
    if ((fault->op != SIM_OP_ANY && (fault->op < 0 || fault->op >= SIM_OP_COUNT_)) ||
        fault->op == SIM_OP_GET_DEVICE || fault->op == SIM_OP_DEVICE_EPOCH ||
        fault->op == SIM_OP_MEM_FREE_COUNTER || fault->nth == 0 || fault->error == SIM_OK ||
        fault->device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "bad fault: op %d nth %llu error %d device %d",
                         fault->op, (unsigned long long)fault->nth, (int)fault->error,
                         fault->device);
    pthread_mutex_lock(&g_fault_lock);
    for (int i = 0; i < SIM_MAX_FAULTS; i++) {
        if (g_faults[i].armed) continue;
        g_faults[i] = (fault_slot){.armed = 1, .f = *fault, .thread = simi_thread_id()};
        atomic_fetch_add(&g_faults_armed, 1);
        pthread_mutex_unlock(&g_fault_lock);
        *fault_id = i;
        return SIM_OK;
    }
    pthread_mutex_unlock(&g_fault_lock);
    return simi_fail(SIM_OUT_OF_MEMORY, "all %d fault slots are armed", SIM_MAX_FAULTS);
}

sim_status sim_fault_hits(int fault_id, uint64_t *hits) {
    if (fault_id < 0 || fault_id >= SIM_MAX_FAULTS || !hits)
        return simi_fail(SIM_INVALID_VALUE, "bad fault id %d or hits NULL", fault_id);
    pthread_mutex_lock(&g_fault_lock);
    *hits = g_faults[fault_id].hits;
    pthread_mutex_unlock(&g_fault_lock);
    return SIM_OK;
}

sim_status sim_fault_clear_all(void) {
    pthread_mutex_lock(&g_fault_lock);
    for (int i = 0; i < SIM_MAX_FAULTS; i++) g_faults[i].armed = 0;
    atomic_store(&g_faults_armed, 0);
    pthread_mutex_unlock(&g_fault_lock);
    return SIM_OK;
}

/* ---- holds ---- */
typedef struct hold_slot {
    int armed;
    sim_hold h;
    uint64_t seen;
    int reached;
    int reached_dev;
    int released;
} hold_slot;

static pthread_mutex_t g_hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_cond = PTHREAD_COND_INITIALIZER;
static hold_slot g_holds[SIM_MAX_HOLDS];
static atomic_int g_holds_armed;

void simi_hold_point(simi_device *dev, int kind, sim_function fn) {
    if (atomic_load_explicit(&g_holds_armed, memory_order_acquire) == 0) return;
    pthread_mutex_lock(&g_hold_lock);
    int mine = -1;
    for (int i = 0; i < SIM_MAX_HOLDS && mine < 0; i++) {
        hold_slot *s = &g_holds[i];
        if (!s->armed || s->reached || s->released) continue;
        if (s->h.kind != SIM_EXEC_ANY && s->h.kind != kind) continue;
        if (s->h.device >= 0 && s->h.device != dev->index) continue;
        if (s->h.fn && s->h.fn != fn) continue;
        if (++s->seen == s->h.nth) {
            s->reached = 1;
            s->reached_dev = dev->index;
            mine = i;
        }
    }
    if (mine >= 0) {
        pthread_cond_broadcast(&g_hold_cond);
        while (!g_holds[mine].released) pthread_cond_wait(&g_hold_cond, &g_hold_lock);
        g_holds[mine].armed = 0;
        atomic_fetch_sub(&g_holds_armed, 1);
    }
    pthread_mutex_unlock(&g_hold_lock);
}

sim_status sim_hold_arm(const sim_hold *hold, int *hold_id) {
    simi_ensure_init();
    if (!hold || hold->size < sizeof(sim_hold) || !hold_id)
        return simi_fail(SIM_INVALID_VALUE, "hold or hold_id is NULL, or hold->size too small");
    if (hold->kind < SIM_EXEC_ANY || hold->kind > SIM_EXEC_GRAPH || hold->nth == 0 ||
        hold->device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "bad hold: kind %d nth %llu device %d", hold->kind,
                         (unsigned long long)hold->nth, hold->device);
    pthread_mutex_lock(&g_hold_lock);
    for (int i = 0; i < SIM_MAX_HOLDS; i++) {
        if (g_holds[i].armed) continue;
        g_holds[i] = (hold_slot){.armed = 1, .h = *hold};
        atomic_fetch_add(&g_holds_armed, 1);
        pthread_mutex_unlock(&g_hold_lock);
        *hold_id = i;
        return SIM_OK;
    }
    pthread_mutex_unlock(&g_hold_lock);
    return simi_fail(SIM_OUT_OF_MEMORY, "all %d hold slots are armed", SIM_MAX_HOLDS);
}

sim_status sim_hold_wait_reached(int hold_id, uint32_t timeout_ms) {
    if (hold_id < 0 || hold_id >= SIM_MAX_HOLDS)
        return simi_fail(SIM_INVALID_VALUE, "bad hold id %d", hold_id);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g_hold_lock);
    sim_status st = SIM_OK;
    while (!g_holds[hold_id].reached) {
        if (!g_holds[hold_id].armed) {
            st = simi_fail(SIM_INVALID_VALUE, "hold %d is not armed", hold_id);
            break;
        }
        if (pthread_cond_timedwait(&g_hold_cond, &g_hold_lock, &dl) == ETIMEDOUT &&
            !g_holds[hold_id].reached) {
            st = simi_fail(SIM_TIMEOUT, "hold %d not reached within %u ms", hold_id, timeout_ms);
            break;
        }
    }
    pthread_mutex_unlock(&g_hold_lock);
    return st;
}

static void release_locked(int i) {
    hold_slot *s = &g_holds[i];
    if (!s->armed) return;
    if (s->reached) {
        s->released = 1; /* the held thread disarms it */
    } else {
        s->armed = 0;
        atomic_fetch_sub(&g_holds_armed, 1);
    }
}

sim_status sim_hold_release(int hold_id) {
    if (hold_id < 0 || hold_id >= SIM_MAX_HOLDS)
        return simi_fail(SIM_INVALID_VALUE, "bad hold id %d", hold_id);
    pthread_mutex_lock(&g_hold_lock);
    release_locked(hold_id);
    pthread_cond_broadcast(&g_hold_cond);
    pthread_mutex_unlock(&g_hold_lock);
    return SIM_OK;
}

sim_status sim_hold_release_all(void) {
    pthread_mutex_lock(&g_hold_lock);
    for (int i = 0; i < SIM_MAX_HOLDS; i++) release_locked(i);
    pthread_cond_broadcast(&g_hold_cond);
    pthread_mutex_unlock(&g_hold_lock);
    return SIM_OK;
}

void simi_hold_release_device(int device) {
    pthread_mutex_lock(&g_hold_lock);
    for (int i = 0; i < SIM_MAX_HOLDS; i++)
        if (g_holds[i].armed && g_holds[i].reached && g_holds[i].reached_dev == device)
            g_holds[i].released = 1;
    pthread_cond_broadcast(&g_hold_cond);
    pthread_mutex_unlock(&g_hold_lock);
}

/* ---- execution failures ---- */
typedef struct fail_slot {
    int armed;
    sim_hold h;
    sim_status error;
    uint64_t seen;
    uint64_t hits;
} fail_slot;

static pthread_mutex_t g_fail_lock = PTHREAD_MUTEX_INITIALIZER;
static fail_slot g_fails[SIM_MAX_HOLDS];
static atomic_int g_fails_armed;

sim_status simi_exec_fail_point(simi_device *dev, int kind, sim_function fn) {
    if (atomic_load_explicit(&g_fails_armed, memory_order_acquire) == 0) return SIM_OK;
    sim_status st = SIM_OK;
    pthread_mutex_lock(&g_fail_lock);
    for (int i = 0; i < SIM_MAX_HOLDS && st == SIM_OK; i++) {
        fail_slot *s = &g_fails[i];
        if (!s->armed || s->hits) continue;
        if (s->h.kind != SIM_EXEC_ANY && s->h.kind != kind) continue;
        if (s->h.device >= 0 && s->h.device != dev->index) continue;
        if (s->h.fn && s->h.fn != fn) continue;
        if (++s->seen == s->h.nth) {
            s->hits = 1;
            st = s->error;
        }
    }
    pthread_mutex_unlock(&g_fail_lock);
    return st;
}

sim_status sim_exec_fail_arm(const sim_hold *where, sim_status error, int *fail_id) {
    simi_ensure_init();
    if (!where || where->size < sizeof(sim_hold) || !fail_id)
        return simi_fail(SIM_INVALID_VALUE, "where or fail_id is NULL, or where->size too small");
    if (where->kind < SIM_EXEC_ANY || where->kind > SIM_EXEC_GRAPH || where->nth == 0 ||
        where->device >= g_sim.ndevices || error == SIM_OK)
        return simi_fail(SIM_INVALID_VALUE,
                         "bad execution failure: kind %d nth %llu device %d error %d", where->kind,
                         (unsigned long long)where->nth, where->device, (int)error);
    pthread_mutex_lock(&g_fail_lock);
    for (int i = 0; i < SIM_MAX_HOLDS; i++) {
        if (g_fails[i].armed) continue;
        g_fails[i] = (fail_slot){.armed = 1, .h = *where, .error = error};
        atomic_fetch_add(&g_fails_armed, 1);
        pthread_mutex_unlock(&g_fail_lock);
        *fail_id = i;
        return SIM_OK;
    }
    pthread_mutex_unlock(&g_fail_lock);
    return simi_fail(SIM_OUT_OF_MEMORY, "all %d execution failure slots are armed", SIM_MAX_HOLDS);
}

sim_status sim_exec_fail_hits(int fail_id, uint64_t *hits) {
    if (fail_id < 0 || fail_id >= SIM_MAX_HOLDS || !hits)
        return simi_fail(SIM_INVALID_VALUE, "bad execution failure id %d, or hits is NULL",
                         fail_id);
    pthread_mutex_lock(&g_fail_lock);
    *hits = g_fails[fail_id].hits;
    pthread_mutex_unlock(&g_fail_lock);
    return SIM_OK;
}

sim_status sim_exec_fail_clear_all(void) {
    pthread_mutex_lock(&g_fail_lock);
    for (int i = 0; i < SIM_MAX_HOLDS; i++) g_fails[i].armed = 0;
    atomic_store(&g_fails_armed, 0);
    pthread_mutex_unlock(&g_fail_lock);
    return SIM_OK;
}
