/*
 * sim_core.c — the sim's global state: initialisation, devices, the handle
 * table, statuses and error messages, lifecycle calls and device reset.
 */
#include "sim_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

simi_global g_sim = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ------------------------------------------------------------------ */
/* statuses                                                            */

const char *sim_status_name(sim_status s) {
    switch (s) {
#define SIM_NAME_(name, num, msg) \
    case SIM_##name:              \
        return "SIM_" #name;
        SIM_STATUS_MAP(SIM_NAME_)
#undef SIM_NAME_
    }
    return "SIM_UNKNOWN";
}

const char *sim_status_string(sim_status s) {
    switch (s) {
#define SIM_MSG_(name, num, msg) \
    case SIM_##name:             \
        return msg;
        SIM_STATUS_MAP(SIM_MSG_)
#undef SIM_MSG_
    }
    return "unknown status";
}

static _Thread_local char tl_msg[512];
static _Thread_local bool tl_in_callback;
static _Thread_local int tl_device;
static _Thread_local uint64_t tl_thread_id;
static atomic_ullong g_next_thread_id = 1;

const char *sim_last_error_message(void) { return tl_msg; }

sim_status simi_fail(sim_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(tl_msg, sizeof tl_msg, "%s: ", sim_status_name(s));
    if (n > 0 && (size_t)n < sizeof tl_msg)
        vsnprintf(tl_msg + n, sizeof tl_msg - (size_t)n, fmt, ap);
    va_end(ap);
    return s;
}

bool simi_in_callback(void) { return tl_in_callback; }
void simi_set_in_callback(bool on) { tl_in_callback = on; }
uint64_t simi_thread_id(void) {
    if (!tl_thread_id) tl_thread_id = atomic_fetch_add(&g_next_thread_id, 1);
    return tl_thread_id;
}
uint64_t simi_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
bool simi_dev_dead(const simi_device *dev) {
    return atomic_load(&dev->lost) || atomic_load(&dev->resetting);
}

/* ------------------------------------------------------------------ */
/* hand-offs (sim_internal.h)                                          */

static atomic_int g_spinning; /* threads spinning (not yielding) in simi_cv_wait */

void simi_cv_init(simi_cv *cv) {
    pthread_cond_init(&cv->cond, NULL);
    atomic_init(&cv->gen, 0);
}

void simi_cv_destroy(simi_cv *cv) { pthread_cond_destroy(&cv->cond); }

void simi_cv_signal(simi_cv *cv) {
    atomic_fetch_add_explicit(&cv->gen, 1, memory_order_release);
    pthread_cond_signal(&cv->cond);
}

void simi_cv_broadcast(simi_cv *cv) {
    atomic_fetch_add_explicit(&cv->gen, 1, memory_order_release);
    pthread_cond_broadcast(&cv->cond);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void simi_cv_wait(simi_cv *cv, pthread_mutex_t *m, simi_wait *w) {
    if (w->phase == 0) {
        w->phase = g_sim.spin_ns ? 1 : 2;
        if (w->phase == 1) {
            uint64_t now = simi_now_ns();
            w->deadline = now + g_sim.spin_ns;
            uint64_t more = g_sim.spin_ns * (SIMI_BUSY_SPIN_FACTOR - 1);
            w->cap = w->deadline + (more < SIMI_BUSY_SPIN_MAX_NS ? more : SIMI_BUSY_SPIN_MAX_NS);
        }
    }
    if (w->phase == 2) {
        pthread_cond_wait(&cv->cond, m);
        return;
    }
    /* The generation read under the mutex: any change of the waited-for
     * state from now on is made under the mutex and advances it. */
    unsigned g = atomic_load_explicit(&cv->gen, memory_order_relaxed);
    pthread_mutex_unlock(m);
    bool spin = g_sim.spinners > 0 &&
                atomic_fetch_add_explicit(&g_spinning, 1, memory_order_relaxed) < g_sim.spinners;
    if (!spin && g_sim.spinners > 0)
        atomic_fetch_sub_explicit(&g_spinning, 1, memory_order_relaxed);
    for (;;) {
        if (spin) {
            for (int i = 0; i < 32; i++) {
                if (atomic_load_explicit(&cv->gen, memory_order_acquire) != g) break;
                cpu_relax();
            }
        } else {
            sched_yield();
        }
        if (atomic_load_explicit(&cv->gen, memory_order_acquire) != g) break;
        uint64_t now = simi_now_ns();
        if (now >= w->deadline) {
            /* a busy device: wait until it has been idle for the spin */
            if (w->busy && now < w->cap &&
                atomic_load_explicit(w->busy, memory_order_relaxed) > 0) {
                w->deadline = now + g_sim.spin_ns;
                continue;
            }
            w->phase = 2;
            break;
        }
    }
    if (spin) atomic_fetch_sub_explicit(&g_spinning, 1, memory_order_relaxed);
    pthread_mutex_lock(m);
}

/* ------------------------------------------------------------------ */
/* initialisation                                                      */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static long env_long(const char *name, long def, long lo, long hi) {
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < lo || x > hi) {
        fprintf(stderr, "kctx sim: ignoring %s=%s (expected %ld..%ld)\n", name, v, lo, hi);
        return def;
    }
    return x;
}

static void init_once(void) {
    g_sim.ndevices = (int)env_long("KCTX_SIM_DEVICES", 2, 1, SIMI_MAX_DEVICES);
    g_sim.cores = (int)env_long("KCTX_SIM_CORES", 4, 1, SIMI_MAX_CORES);
    g_sim.memory = (uint64_t)env_long("KCTX_SIM_MEMORY_MB", 256, 1, 65536) << 20;
    g_sim.spin_ns = (uint64_t)env_long("KCTX_SIM_SPIN_US", SIMI_DEFAULT_SPIN_US, 0, 100000) * 1000u;
    g_sim.spinners = (int)env_long("KCTX_SIM_SPINNERS", 0, 0, 1024);
    g_sim.next_capture_id = 1;
    for (int i = 0; i < g_sim.ndevices; i++) {
        simi_device *d = &g_sim.dev[i];
        d->index = i;
        d->cores = g_sim.cores;
        d->capacity = g_sim.memory;
        pthread_mutex_init(&d->core_lock, NULL);
        simi_cv_init(&d->core_cond);
        pthread_mutex_init(&d->done_lock, NULL);
        pthread_mutex_init(&d->thr_lock, NULL);
        pthread_cond_init(&d->thr_cond, NULL);
        if (simi_heap_init(&d->heap, d->capacity) != 0 || simi_device_start(d) != 0) {
            fprintf(stderr, "kctx sim: cannot create device %d\n", i);
            abort();
        }
    }
}

void simi_ensure_init(void) { pthread_once(&g_once, init_once); }

simi_device *simi_cur_dev(void) { return &g_sim.dev[tl_device]; }

sim_status simi_enter(sim_op op, int device) {
    simi_ensure_init();
    if (device < 0) device = tl_device;
    simi_count(op, device);
    if (tl_in_callback)
        return simi_fail(SIM_NOT_PERMITTED, "%s called from a host function or graph hook",
                         sim_op_name(op));
    return simi_fault_check(op, device);
}

void simi_count_query(sim_op op, int device) {
    simi_ensure_init();
    if (device < 0 || device >= g_sim.ndevices) device = tl_device;
    simi_count(op, device);
}

/* ------------------------------------------------------------------ */
/* handle table: index (24 bits), generation (24), device (8), type (8)
 *
 * A slot issues the generations 1..H_GEN_MAX, one per object created in it.
 * When the object of its last generation is destroyed, the slot is RETIRED:
 * it leaves the free list for good. A wrapping generation would bring a
 * destroyed handle back to life after 16,777,215 create/destroy cycles of
 * one slot; a retired slot costs 24 bytes instead. Once every slot is live
 * or retired, creating an object fails cleanly ("handle table full",
 * SIM_OUT_OF_MEMORY). */

#define H_IDX_BITS 24
#define H_GEN_BITS 24
#define H_GEN_MAX ((1u << H_GEN_BITS) - 1)
#define H_CHUNK 4096
#define H_MAX_CHUNKS ((1u << H_IDX_BITS) / H_CHUNK)
_Static_assert(H_GEN_MAX == SIM_HANDLE_GENERATIONS, "sim.h documents the generations of a slot");
_Static_assert((1u << H_IDX_BITS) - 1 == SIM_HANDLE_SLOTS, "sim.h documents the table's slots");

typedef struct hslot {
    uint32_t gen;
    uint8_t type;
    uint8_t device;
    uint8_t retired; /* its last generation was destroyed: never reused */
    void *obj;
    uint32_t next_free;
} hslot;

static hslot *g_chunks[H_MAX_CHUNKS];
static uint32_t g_nslots = 1; /* slot 0 never used */
static uint32_t g_free_head;  /* 0: none */

static hslot *slot_at(uint32_t i) { return &g_chunks[i / H_CHUNK][i % H_CHUNK]; }
static uint32_t h_index(uint64_t h) { return (uint32_t)(h & ((1u << H_IDX_BITS) - 1)); }
static uint32_t h_gen(uint64_t h) { return (uint32_t)((h >> H_IDX_BITS) & H_GEN_MAX); }

/* The object of a slot was destroyed: move the slot to its next generation,
 * or retire it when it has issued its last one (returns false then; the
 * caller must not put it on the free list). */
static bool slot_next_generation(hslot *s) {
    if (s->gen >= H_GEN_MAX) {
        s->retired = 1;
        return false;
    }
    s->gen++;
    return true;
}

uint64_t simi_handle_new(int type, int device, void *obj) {
    uint32_t i;
    if (g_free_head) {
        i = g_free_head;
        g_free_head = slot_at(i)->next_free;
    } else {
        if (g_nslots >= (1u << H_IDX_BITS)) return 0;
        i = g_nslots;
        if (!g_chunks[i / H_CHUNK]) {
            g_chunks[i / H_CHUNK] = calloc(H_CHUNK, sizeof(hslot));
            if (!g_chunks[i / H_CHUNK]) return 0;
        }
        g_nslots++;
    }
    hslot *s = slot_at(i);
    if (s->gen == 0) s->gen = 1;
    s->type = (uint8_t)type;
    s->device = (uint8_t)device;
    s->obj = obj;
    return ((uint64_t)type << 56) | ((uint64_t)(uint8_t)device << 48) |
           ((uint64_t)s->gen << H_IDX_BITS) | i;
}

static hslot *slot_of(uint64_t h) {
    uint32_t i = h_index(h);
    if (i == 0 || i >= g_nslots) return NULL;
    hslot *s = slot_at(i);
    if (s->type == SIMI_T_NONE || s->gen != h_gen(h)) return NULL;
    if ((uint8_t)(h >> 56) != s->type || (uint8_t)(h >> 48) != s->device) return NULL;
    return s;
}

void *simi_handle_get(uint64_t h, int type) {
    hslot *s = slot_of(h);
    if (!s || s->type != type) return NULL;
    return s->obj;
}

void simi_handle_free(uint64_t h) {
    hslot *s = slot_of(h);
    if (!s) return;
    s->type = SIMI_T_NONE;
    s->obj = NULL;
    if (!slot_next_generation(s)) return; /* retired */
    s->next_free = g_free_head;
    g_free_head = h_index(h);
}

/* Take a free slot off the free list (g_sim.lock held). */
static void free_list_unlink(uint32_t i) {
    for (uint32_t *p = &g_free_head; *p; p = &slot_at(*p)->next_free) {
        if (*p == i) {
            *p = slot_at(i)->next_free;
            return;
        }
    }
}

sim_status sim_handle_age(uint64_t handle, uint64_t cycles, uint64_t *generations_left) {
    simi_ensure_init();
    pthread_mutex_lock(&g_sim.lock);
    uint32_t i = h_index(handle), gen = h_gen(handle);
    uint8_t type = (uint8_t)(handle >> 56);
    hslot *s = (i != 0 && i < g_nslots) ? slot_at(i) : NULL;
    /* `handle` must be its slot's most recent handle, destroyed: the slot is
     * free at the next generation, or retired at this one. */
    bool last = s && gen != 0 && type > SIMI_T_NONE && type <= SIMI_T_EXEC &&
                s->type == SIMI_T_NONE && (uint8_t)(handle >> 48) == s->device &&
                (s->retired ? s->gen == gen : s->gen == gen + 1);
    if (!last) {
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(SIM_INVALID_HANDLE,
                         "0x%llx is not the most recent handle of its slot, destroyed",
                         (unsigned long long)handle);
    }
    /* Each cycle is what a create and a destroy in the slot do to it. */
    for (uint64_t k = 0; k < cycles && !s->retired; k++)
        if (!slot_next_generation(s)) free_list_unlink(i);
    if (generations_left) *generations_left = s->retired ? 0 : (uint64_t)H_GEN_MAX - s->gen + 1;
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

int simi_handle_device(uint64_t h) {
    simi_watch_arg(h);
    if (h == 0) return -1;
    int d = (int)((h >> 48) & 0xff);
    return d < g_sim.ndevices ? d : -1;
}

void simi_handle_visit(int device, simi_visit_fn fn, void *user) {
    for (uint32_t i = 1; i < g_nslots; i++) {
        hslot *s = slot_at(i);
        if (s->type == SIMI_T_NONE || s->device != device) continue;
        uint64_t h = ((uint64_t)s->type << 56) | ((uint64_t)s->device << 48) |
                     ((uint64_t)s->gen << H_IDX_BITS) | i;
        fn(h, s->type, s->obj, user);
    }
}

/* ------------------------------------------------------------------ */
/* lifecycle and devices                                               */

static void count_lifecycle(int device, sim_lifecycle_op op) {
    pthread_mutex_lock(&g_sim.lock);
    if (device < 0) {
        for (int i = 0; i < g_sim.ndevices; i++) g_sim.dev[i].lifecycle[op]++;
    } else {
        g_sim.dev[device].lifecycle[op]++;
    }
    pthread_mutex_unlock(&g_sim.lock);
}

sim_status sim_init(void) {
    sim_status st = simi_enter(SIM_OP_INIT, -1);
    if (st) return st;
    count_lifecycle(-1, SIM_LIFECYCLE_INIT);
    return SIM_OK;
}

static void device_reset(simi_device *dev) {
    atomic_store(&dev->resetting, 1);
    simi_device_wake_all(dev);
    simi_hold_release_device(dev->index);
    simi_device_teardown(dev);
    pthread_mutex_lock(&g_sim.lock);
    simi_heap_reset(&dev->heap);
    atomic_fetch_add(&dev->epoch, 1);
    atomic_store(&dev->lost, 0);
    atomic_store(&dev->resetting, 0);
    pthread_mutex_unlock(&g_sim.lock);
}

sim_status sim_finalize(void) {
    sim_status st = simi_enter(SIM_OP_FINALIZE, -1);
    if (st) return st;
    count_lifecycle(-1, SIM_LIFECYCLE_FINALIZE);
    for (int i = 0; i < g_sim.ndevices; i++) device_reset(&g_sim.dev[i]);
    return SIM_OK;
}

sim_status sim_device_count(int *count) {
    sim_status st = simi_enter(SIM_OP_DEVICE_COUNT, -1);
    if (st) return st;
    if (!count) return simi_fail(SIM_INVALID_VALUE, "count is NULL");
    *count = g_sim.ndevices;
    return SIM_OK;
}

sim_status sim_set_device(int device) {
    simi_ensure_init();
    sim_status st =
        simi_enter(SIM_OP_SET_DEVICE, (device >= 0 && device < g_sim.ndevices) ? device : -1);
    if (st) return st;
    if (device < 0 || device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range 0..%d", device,
                         g_sim.ndevices - 1);
    count_lifecycle(device, SIM_LIFECYCLE_SET_DEVICE);
    tl_device = device;
    return SIM_OK;
}

sim_status sim_get_device(int *device) {
    simi_count_query(SIM_OP_GET_DEVICE, -1);
    if (!device) return simi_fail(SIM_INVALID_VALUE, "device is NULL");
    *device = tl_device;
    return SIM_OK;
}

sim_status sim_device_reset(void) {
    sim_status st = simi_enter(SIM_OP_DEVICE_RESET, -1);
    if (st) return st;
    count_lifecycle(tl_device, SIM_LIFECYCLE_RESET_DEVICE);
    device_reset(simi_cur_dev());
    return SIM_OK;
}

sim_status sim_device_epoch(int device, uint64_t *epoch) {
    simi_count_query(SIM_OP_DEVICE_EPOCH, device);
    if (!epoch) return simi_fail(SIM_INVALID_VALUE, "epoch is NULL");
    if (device < 0 || device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range", device);
    *epoch = atomic_load(&g_sim.dev[device].epoch);
    return SIM_OK;
}

sim_status sim_lifecycle_count(int device, sim_lifecycle_op op, uint64_t *count) {
    simi_ensure_init();
    if (!count) return simi_fail(SIM_INVALID_VALUE, "count is NULL");
    if (device < 0 || device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range", device);
    if ((int)op < 0 || op >= SIM_LIFECYCLE_COUNT_)
        return simi_fail(SIM_INVALID_VALUE, "unknown lifecycle op %d", (int)op);
    pthread_mutex_lock(&g_sim.lock);
    *count = g_sim.dev[device].lifecycle[op];
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_lifecycle_reset_counts(void) {
    simi_ensure_init();
    pthread_mutex_lock(&g_sim.lock);
    for (int i = 0; i < g_sim.ndevices; i++)
        memset(g_sim.dev[i].lifecycle, 0, sizeof g_sim.dev[i].lifecycle);
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_device_get_props(int device, sim_device_props *props) {
    simi_ensure_init();
    sim_status st =
        simi_enter(SIM_OP_DEVICE_GET_PROPS, (device >= 0 && device < g_sim.ndevices) ? device : -1);
    if (st) return st;
    if (!props || props->size < sizeof(sim_device_props))
        return simi_fail(SIM_INVALID_VALUE, "props is NULL or props->size too small");
    if (device < 0 || device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range", device);
    simi_device *d = &g_sim.dev[device];
    if (atomic_load(&d->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", device);
    memset((char *)props + sizeof props->size, 0, sizeof *props - sizeof props->size);
    snprintf(props->name, sizeof props->name, "sim-accelerator-%d", device);
    props->aicore_count = d->cores;
    props->aicpu_count = 1;
    props->memory_capacity = d->capacity;
    props->max_params_size = SIMI_MAX_PARAMS;
    props->max_block_dim = SIMI_MAX_BLOCK_DIM;
    props->device_word_size = 4;
    props->alloc_alignment = SIMI_ALIGN;
    return SIM_OK;
}

sim_status sim_device_make_fatal(int device) {
    simi_ensure_init();
    if (device < 0 || device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range", device);
    atomic_store(&g_sim.dev[device].lost, 1);
    simi_device_wake_all(&g_sim.dev[device]);
    return SIM_OK;
}

sim_status sim_object_counts_get(int device, sim_object_counts *c) {
    simi_ensure_init();
    if (!c || c->size < sizeof(sim_object_counts))
        return simi_fail(SIM_INVALID_VALUE, "counts is NULL or counts->size too small");
    if (device < 0 || device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range", device);
    simi_device *d = &g_sim.dev[device];
    pthread_mutex_lock(&g_sim.lock);
    c->streams = d->n_streams;
    c->events = d->n_events;
    c->modules = d->n_modules;
    c->graphs = d->n_graphs;
    c->graph_execs = d->n_execs;
    c->hooks_pending = atomic_load(&d->hooks_pending);
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}
