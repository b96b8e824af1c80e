/*
 * pcall.c — the core's wrappers around the platform table: one place that
 * counts calls, maps platform statuses to kctx statuses with a message
 * naming the operation, and quarantines a context on a fatal error (K29).
 */
#include "internal.h"

#include <stdio.h>
#include <time.h>

static kctx_status class_to_status(kctx_pclass k) {
    switch (k) {
    case KCTX_PCLASS_OK:
        return KCTX_OK;
    case KCTX_PCLASS_INVALID:
        return KCTX_PLATFORM_ERROR;
    case KCTX_PCLASS_NO_MEMORY:
        return KCTX_OUT_OF_MEMORY;
    case KCTX_PCLASS_NOT_READY:
        return KCTX_BUSY;
    case KCTX_PCLASS_DEVICE_LOST:
        return KCTX_DEVICE_LOST;
    case KCTX_PCLASS_CAPTURE:
        return KCTX_CAPTURE_BROKEN;
    case KCTX_PCLASS_TIMEOUT:
        return KCTX_TIMEOUT;
    case KCTX_PCLASS_DEVICE_ERROR:
        return KCTX_DEVICE_ERROR;
    case KCTX_PCLASS_UNSUPPORTED:
        return KCTX_UNSUPPORTED;
    case KCTX_PCLASS_BAD_MODULE:
        return KCTX_INCOMPATIBLE_IMAGE;
    default:
        return KCTX_PLATFORM_ERROR;
    }
}

/* ------------------------------------------------------------------ */
/* fault injection and call counting (kctx.h, test support)            */

typedef struct seam_fault {
    bool armed;
    int op;
    uint64_t nth, seen, hits;
    bool persistent;
    uint64_t thread; /* 0: any thread */
    kctx_pclass cls;
} seam_fault;

static pthread_mutex_t g_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static seam_fault g_faults[KCTX_MAX_FAULTS];
atomic_int kp_nfaults; /* armed faults and holds: the fast path looks at nothing else */
static _Thread_local uint64_t kp_tl_calls[KCTX_POP_COUNT];

uint64_t *kp_thread_calls(void) { return kp_tl_calls; }
static _Thread_local kctx_pclass tl_injected; /* the class of the thread's last injected failure */

static uint64_t thread_id(void) {
    static atomic_ullong next = 1;
    static _Thread_local uint64_t mine;
    if (!mine) mine = atomic_fetch_add(&next, 1);
    return mine;
}

const char *kctx_platform_op_name(int op) {
    switch (op) {
    case KCTX_POP_ANY:
        return "any";
#define KP_OP_NAME_(NAME, member) \
    case KCTX_POP_##NAME:         \
        return #member;
        KCTX_PLATFORM_OP_MAP(KP_OP_NAME_)
#undef KP_OP_NAME_
    default:
        return "unknown";
    }
}

static bool status_class(kctx_status s, kctx_pclass *k) {
    switch (s) {
    case KCTX_INVALID_ARGUMENT:
        *k = KCTX_PCLASS_INVALID;
        return true;
    case KCTX_PLATFORM_ERROR:
        *k = KCTX_PCLASS_OTHER;
        return true;
    case KCTX_OUT_OF_MEMORY:
        *k = KCTX_PCLASS_NO_MEMORY;
        return true;
    case KCTX_BUSY:
        *k = KCTX_PCLASS_NOT_READY;
        return true;
    case KCTX_DEVICE_LOST:
        *k = KCTX_PCLASS_DEVICE_LOST;
        return true;
    case KCTX_CAPTURE_BROKEN:
        *k = KCTX_PCLASS_CAPTURE;
        return true;
    case KCTX_TIMEOUT:
        *k = KCTX_PCLASS_TIMEOUT;
        return true;
    case KCTX_DEVICE_ERROR:
        *k = KCTX_PCLASS_DEVICE_ERROR;
        return true;
    case KCTX_UNSUPPORTED:
        *k = KCTX_PCLASS_UNSUPPORTED;
        return true;
    default:
        return false;
    }
}

kctx_status kctx_fault_arm(const kctx_fault *f, int *id) {
    kctx_pclass cls;
    if (!f || !id || f->size < sizeof *f)
        return kctx__fail(NULL, KCTX_INVALID_ARGUMENT,
                          "fault or fault_id is NULL, or fault->size "
                          "is too small (use KCTX_FAULT_INIT)");
    if (f->op < KCTX_POP_ANY || f->op >= KCTX_POP_COUNT || f->nth == 0 ||
        !status_class(f->error, &cls))
        return kctx__fail(NULL, KCTX_INVALID_ARGUMENT,
                          "fault: op %d, nth %llu or error %s is not allowed", f->op,
                          (unsigned long long)f->nth, kctx_status_name(f->error));
    pthread_mutex_lock(&g_fault_lock);
    int slot = -1;
    for (int i = 0; i < KCTX_MAX_FAULTS && slot < 0; i++)
        if (!g_faults[i].armed) slot = i;
    if (slot >= 0) {
        g_faults[slot] = (seam_fault){
            true, f->op, f->nth, 0, 0, f->persistent != 0, f->this_thread_only ? thread_id() : 0,
            cls};
        atomic_fetch_add(&kp_nfaults, 1);
    }
    pthread_mutex_unlock(&g_fault_lock);
    if (slot < 0)
        return kctx__fail(NULL, KCTX_CAPACITY, "%d faults are armed already", KCTX_MAX_FAULTS);
    *id = slot;
    return KCTX_OK;
}

kctx_status kctx_fault_hits(int id, uint64_t *hits) {
    if (!hits || id < 0 || id >= KCTX_MAX_FAULTS)
        return kctx__fail(NULL, KCTX_INVALID_ARGUMENT, "fault id %d or hits is NULL", id);
    pthread_mutex_lock(&g_fault_lock);
    *hits = g_faults[id].hits;
    pthread_mutex_unlock(&g_fault_lock);
    return KCTX_OK;
}

void kctx_fault_clear_all(void) {
    pthread_mutex_lock(&g_fault_lock);
    for (int i = 0; i < KCTX_MAX_FAULTS; i++) {
        if (g_faults[i].armed) atomic_fetch_sub(&kp_nfaults, 1); /* holds keep theirs */
        g_faults[i].armed = false;
    }
    pthread_mutex_unlock(&g_fault_lock);
}

uint64_t kctx_thread_platform_calls(int op) {
    if (op >= 0 && op < KCTX_POP_COUNT) return kp_tl_calls[op];
    if (op != KCTX_POP_ANY) return 0;
    uint64_t n = 0;
    for (int i = 0; i < KCTX_POP_COUNT; i++) n += kp_tl_calls[i];
    return n;
}

/* Holds (kctx.h: kctx_seam_hold_arm): a matched call blocks here, before
 * its fault check and before the platform, until the test releases it. */
typedef struct seam_hold {
    bool armed, reached, released;
    int op;
    uint64_t nth, seen;
    uint64_t gen; /* arming count of the slot: a released call never waits on a re-armed slot */
} seam_hold;

static pthread_mutex_t g_hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_cond = PTHREAD_COND_INITIALIZER;
static seam_hold g_holds[KCTX_MAX_HOLDS];
static int g_nholds; /* armed holds, under g_hold_lock */

kctx_status kctx_seam_hold_arm(int op, uint64_t nth, int *id) {
    if (!id || op < KCTX_POP_ANY || op >= KCTX_POP_COUNT || nth == 0)
        return kctx__fail(NULL, KCTX_INVALID_ARGUMENT, "hold: op %d, nth %llu or hold_id NULL", op,
                          (unsigned long long)nth);
    pthread_mutex_lock(&g_hold_lock);
    int slot = -1;
    for (int i = 0; i < KCTX_MAX_HOLDS && slot < 0; i++)
        if (!g_holds[i].armed) slot = i;
    if (slot >= 0) {
        g_holds[slot] = (seam_hold){true, false, false, op, nth, 0, g_holds[slot].gen + 1};
        g_nholds++;
        atomic_fetch_add(&kp_nfaults, 1); /* the fast path looks at this count only */
    }
    pthread_mutex_unlock(&g_hold_lock);
    if (slot < 0)
        return kctx__fail(NULL, KCTX_CAPACITY, "%d holds are armed already", KCTX_MAX_HOLDS);
    *id = slot;
    return KCTX_OK;
}

static void hold_disarm_locked(seam_hold *h) {
    if (!h->armed) return;
    h->armed = false;
    h->released = true;
    g_nholds--;
    atomic_fetch_sub(&kp_nfaults, 1);
}

kctx_status kctx_seam_hold_wait_reached(int id, uint32_t timeout_ms) {
    if (id < 0 || id >= KCTX_MAX_HOLDS)
        return kctx__fail(NULL, KCTX_INVALID_ARGUMENT, "hold id %d", id);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(timeout_ms / 1000u);
    until.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g_hold_lock);
    seam_hold *h = &g_holds[id];
    if (!h->armed) {
        pthread_mutex_unlock(&g_hold_lock);
        return kctx__fail(NULL, KCTX_INVALID_ARGUMENT, "hold id %d is not armed", id);
    }
    uint64_t gen = h->gen;
    int rc = 0;
    while (!h->reached && h->armed && h->gen == gen && rc == 0)
        rc = pthread_cond_timedwait(&g_hold_cond, &g_hold_lock, &until);
    bool reached = h->reached && h->gen == gen;
    pthread_mutex_unlock(&g_hold_lock);
    if (!reached)
        return kctx__fail(NULL, KCTX_TIMEOUT, "hold %d not reached within %u ms", id, timeout_ms);
    return KCTX_OK;
}

kctx_status kctx_seam_hold_release(int id) {
    if (id < 0 || id >= KCTX_MAX_HOLDS)
        return kctx__fail(NULL, KCTX_INVALID_ARGUMENT, "hold id %d", id);
    pthread_mutex_lock(&g_hold_lock);
    hold_disarm_locked(&g_holds[id]);
    pthread_cond_broadcast(&g_hold_cond);
    pthread_mutex_unlock(&g_hold_lock);
    return KCTX_OK;
}

void kctx_seam_hold_release_all(void) {
    pthread_mutex_lock(&g_hold_lock);
    for (int i = 0; i < KCTX_MAX_HOLDS; i++) hold_disarm_locked(&g_holds[i]);
    pthread_cond_broadcast(&g_hold_cond);
    pthread_mutex_unlock(&g_hold_lock);
}

/* Block while a hold matches this call (each hold blocks one call). */
static void hold_point(int op) {
    pthread_mutex_lock(&g_hold_lock);
    for (int i = 0; i < KCTX_MAX_HOLDS && g_nholds > 0; i++) {
        seam_hold *h = &g_holds[i];
        if (!h->armed || h->reached || (h->op != KCTX_POP_ANY && h->op != op)) continue;
        if (++h->seen != h->nth) continue;
        h->reached = true;
        pthread_cond_broadcast(&g_hold_cond);
        uint64_t gen = h->gen;
        while (!h->released && h->gen == gen) pthread_cond_wait(&g_hold_cond, &g_hold_lock);
    }
    pthread_mutex_unlock(&g_hold_lock);
}

bool kp_enter_armed(int op) {
    hold_point(op);
    bool fail = false;
    uint64_t me = thread_id();
    pthread_mutex_lock(&g_fault_lock);
    for (int i = 0; i < KCTX_MAX_FAULTS; i++) {
        seam_fault *f = &g_faults[i];
        if (!f->armed || (f->op != KCTX_POP_ANY && f->op != op) || (f->thread && f->thread != me))
            continue;
        f->seen++;
        if (!fail && (f->seen == f->nth || (f->persistent && f->seen > f->nth))) {
            f->hits++;
            tl_injected = f->cls;
            fail = true;
        }
    }
    pthread_mutex_unlock(&g_fault_lock);
    return fail;
}

kctx_pclass kp_classify(kctx_ctx *c, int pst) {
    if (pst == 0) return KCTX_PCLASS_OK;
    if (pst == KP_INJECTED) return tl_injected;
    return c->ops->classify(pst);
}

const char *kp_status_name(kctx_ctx *c, int pst) {
    return pst == KP_INJECTED ? "an injected fault" : c->ops->status_name(pst);
}

const char *kp_last_message(kctx_ctx *c, int pst) {
    return pst == KP_INJECTED ? "kctx_fault_arm" : c->ops->last_message();
}

/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* the unlocked phase of an entry (prepare, K16)                        */

static _Thread_local const kctx_ctx *tl_unlocked; /* the context this thread works on unlocked */
static _Thread_local bool tl_fatal;               /* a fatal status was seen meanwhile */

void kp_unlocked_begin(const kctx_ctx *c) {
    tl_unlocked = c;
    tl_fatal = false;
}

bool kp_unlocked_end(void) {
    tl_unlocked = NULL;
    return tl_fatal;
}

bool kp_unlocked(const kctx_ctx *c) { return c && tl_unlocked == c; }

bool kctx__lost(const kctx_ctx *c) {
    if (kp_unlocked(c)) return tl_fatal;
    return c->phase == KCTX_PHASE_QUARANTINED || c->phase == KCTX_PHASE_CLOSED;
}

kctx_status kp_describe(kctx_ctx *c, const char *what, int pst) {
    if (pst == 0) return KCTX_OK;
    kctx_status st = class_to_status(kp_classify(c, pst));
    kctx__fail(c, st, "platform %s: %s failed with %s (%s)", c->plat->name, what,
               kp_status_name(c, pst), kp_last_message(c, pst));
    return st;
}

kctx_status kp_map(kctx_ctx *c, const char *what, int pst) {
    kctx_status st = kp_describe(c, what, pst);
    if (st != KCTX_DEVICE_LOST) return st;
    if (kp_unlocked(c)) { /* applied by kp_fatal once the context lock is held again */
        tl_fatal = true;
        return st;
    }
    kp_fatal(c, st);
    return st;
}

void kp_fatal(kctx_ctx *c, kctx_status st) {
    /* K29: a fatal error quarantines a kernel context wherever it happens:
     * READY or POISONED, during init's creation or rollback (NEW, latched)
     * and during close's releases (CLOSING): admission is shut, every
     * handle is kept (K30) and whoever was releasing stops. */
    bool working = c->phase == KCTX_PHASE_READY || c->phase == KCTX_PHASE_POISONED ||
                   c->phase == KCTX_PHASE_CLOSING;
    if (c->mode == KCTX_MODE_KERNEL && (working || (c->phase == KCTX_PHASE_NEW && c->claimed))) {
        c->phase = KCTX_PHASE_QUARANTINED;
        kctx__set_runtime_error(c, st, kctx_thread_last_error());
    } else if (working) {
        if (c->mode == KCTX_MODE_PROGRAM) {
            char msg[KCTX_MSG];
            snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
            kctx__program_recover(c); /* K31: program mode owns the device */
            kctx__fail(c, st, "%s; program mode reset its device and abandoned its resources (K31)",
                       msg);
        }
    }
}

kctx_status kp_current_device(kctx_ctx *c, int *device) {
    if (c->ops->bound_device) return KP(c, "bound_device", bound_device, device);
    return KP(c, "current_device", current_device, device);
}

/* The capture mode is the calling thread's, so is the state of its
 * exchange (an entry may run on several threads at once on one context:
 * prepare's unlocked phase, K16). */
static _Thread_local int tl_relaxed_depth;
static _Thread_local kctx_pcapture_mode tl_saved_mode;

kctx_status kp_relaxed_begin(kctx_ctx *c) {
    if (tl_relaxed_depth++ > 0) return KCTX_OK;
    if (!c->ops->exchange_capture_mode) return KCTX_OK; /* no capture, no capture mode */
    kctx_pcapture_mode m = KCTX_PCAPTURE_MODE_RELAXED;
    kctx_status st = KP(c, "exchange_capture_mode", exchange_capture_mode, &m);
    if (st) {
        tl_relaxed_depth--;
        return st;
    }
    tl_saved_mode = m;
    return KCTX_OK;
}

void kp_relaxed_end(kctx_ctx *c) {
    if (--tl_relaxed_depth > 0) return;
    if (!c->ops->exchange_capture_mode) return;
    kctx_pcapture_mode m = tl_saved_mode;
    /* Restoring cannot be skipped: retry once; a platform that cannot even
     * exchange the mode back leaves the thread relaxed, which only makes
     * later calls on this thread more permissive. */
    if (KP_RAW(c, exchange_capture_mode, &m) != 0) {
        m = tl_saved_mode;
        (void)KP_RAW(c, exchange_capture_mode, &m);
    }
}

kctx_status kp_capture_status(kctx_ctx *c, kctx_pstream s, kctx_pcapture_status *st) {
    uint64_t id = 0;
    kctx_pgraph g = 0;
    return KP(c, "stream_info", stream_info, s, NULL, st, &id, &g);
}

kctx_status kctx__check_device_verdict(kctx_ctx *c, int pst, int cur) {
    kctx_status st = kp_result(c, c->ops->bound_device ? "bound_device" : "current_device", pst);
    if (st == KCTX_PLATFORM_ERROR && c->ops->bound_device) {
        /* a thread that lent no device has no current device to compare:
         * the caller's state, not a platform failure (K5; platform.h) */
        char why[KCTX_MSG];
        snprintf(why, sizeof why, "%s", kctx_thread_last_error());
        return kctx__fail(c, KCTX_INVALID_STATE,
                          "the calling thread has no device of the context's (K5): %s", why);
    }
    if (st) return st;
    if (cur != c->device)
        return kctx__fail(
            c, KCTX_INVALID_STATE,
            "the calling thread's current device is %d, but the context %s device %d (K5)", cur,
            c->mode == KCTX_MODE_KERNEL ? "borrowed" : "owns", c->device);
    return KCTX_OK;
}

static const char *const k_stream_names[KCTX_STREAM_COUNT] = {"AICPU", "AICore", "upload"};

kctx_status kp_require_uncaptured(kctx_ctx *c, kctx_status refusal, const char *what) {
    for (int i = 0; i < KCTX_STREAM_COUNT; i++) {
        if (!c->streams[i].live) continue;
        kctx_pcapture_status cs = KCTX_PCAPTURE_NONE;
        kctx_status st = kp_capture_status(c, c->streams[i].h, &cs);
        if (st) return st;
        if (cs != KCTX_PCAPTURE_NONE)
            return kctx__fail(c, refusal, "%s: the context's %s stream is part of an %s capture",
                              what, k_stream_names[i],
                              cs == KCTX_PCAPTURE_ACTIVE ? "active" : "invalidated");
    }
    return KCTX_OK;
}

kctx_status kp_require_stream_idle(kctx_ctx *c, int which, const char *what) {
    if (!c->streams[which].live) return KCTX_OK;
    int pst = KP_RAW(c, stream_query, c->streams[which].h);
    if (pst == 0) return KCTX_OK;
    kctx_pclass k = kp_classify(c, pst);
    if (k == KCTX_PCLASS_NOT_READY)
        return kctx__fail(
            c, KCTX_BUSY,
            "%s: work (a launch, an upload or a trace copy-back) is still in flight on "
            "the context's %s stream",
            what, k_stream_names[which]);
    /* A stream whose work failed on the device is idle; any other failure is
     * reported. */
    if (k != KCTX_PCLASS_DEVICE_ERROR) return kp_map(c, "stream_query", pst);
    return KCTX_OK;
}

kctx_status kp_require_idle(kctx_ctx *c, const char *what) {
    for (int i = 0; i < KCTX_STREAM_COUNT; i++) {
        kctx_status st = kp_require_stream_idle(c, i, what);
        if (st) return st;
    }
    return KCTX_OK;
}
