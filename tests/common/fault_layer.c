/*
 * fault_layer.c — the core of the failing layers (fault_layer.h): the
 * watched threads, the count and the armed call, the handle table and the
 * violations. One lock guards the table; a layer's wrappers call in here
 * around their pass-through calls.
 */
#include "fault_layer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Handles the table can follow at once: kctx's of one sweep step plus the
 * framework's live objects (generous; a full table is itself a violation). */
#define MAX_HANDLES 8192

typedef enum owner {
    OWNER_FREE = 0, /* an empty slot */
    OWNER_KCTX,     /* made by a watched call */
    OWNER_OTHER,    /* made by an unwatched call (the framework's) */
} owner;

typedef struct entry {
    uint64_t h;
    owner who;
    kfl_kind kind;
    int dead;      /* kctx's, destroyed (or gone with a reset): kept to catch later calls */
    unsigned refs; /* references (1 after create; retains add) */
    const char *made_by;
} entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry g_tab[MAX_HANDLES];
static size_t g_hi; /* slots in use are below this mark (scans stay short) */
static _Thread_local int t_watched;
static _Atomic uint64_t g_calls;
static _Atomic uint64_t g_arm_nth;
static _Atomic int g_arm_code;
static const char *_Atomic g_fired;
static uint64_t g_violations;
static char g_first[400];

static const char *kind_name(kfl_kind k) {
    switch (k) {
    case KFL_STREAM:
        return "stream";
    case KFL_EVENT:
        return "event";
    case KFL_MODULE:
        return "module";
    case KFL_MEMORY:
        return "allocation";
    default:
        return "object";
    }
}

/* g_lock held. */
static void violation(const char *fmt, const char *entry_name, const entry *e, uint64_t h) {
    if (g_violations++ == 0)
        snprintf(g_first, sizeof g_first, fmt, entry_name, e ? kind_name(e->kind) : "handle",
                 (unsigned long long)h, e && e->made_by ? e->made_by : "?");
}

/* g_lock held. The slot of h, or NULL. */
static entry *find(uint64_t h) {
    for (size_t i = 0; i < g_hi; i++)
        if (g_tab[i].who != OWNER_FREE && g_tab[i].h == h) return &g_tab[i];
    return NULL;
}

int kfl_enter(const char *entry_name) {
    if (!t_watched) return 0;
    uint64_t n = atomic_fetch_add(&g_calls, 1) + 1;
    uint64_t nth = atomic_load(&g_arm_nth);
    if (nth && n == nth) {
        atomic_store(&g_fired, entry_name);
        return atomic_load(&g_arm_code);
    }
    return 0;
}

void kfl_made(uint64_t h, kfl_kind kind, const char *entry_name) {
    if (!h) return;
    pthread_mutex_lock(&g_lock);
    entry *e = find(h); /* a value the runtime reuses: the old record ends */
    for (size_t i = 0; i < MAX_HANDLES && !e; i++)
        if (g_tab[i].who == OWNER_FREE) e = &g_tab[i];
    if (e && (size_t)(e - g_tab) >= g_hi) g_hi = (size_t)(e - g_tab) + 1;
    if (!e) {
        violation("%s made %s 0x%llx: the layer's table is full (%s)", entry_name, NULL, h);
    } else {
        *e = (entry){h, t_watched ? OWNER_KCTX : OWNER_OTHER, kind, 0, 1, entry_name};
    }
    pthread_mutex_unlock(&g_lock);
}

void kfl_use(uint64_t h, const char *entry_name) {
    if (!h) return;
    pthread_mutex_lock(&g_lock);
    entry *e = find(h);
    if (e && e->dead)
        violation("%s names kctx's %s 0x%llx after it was destroyed (made by %s)", entry_name, e,
                  h);
    pthread_mutex_unlock(&g_lock);
}

void kfl_retain(uint64_t h, const char *entry_name) {
    if (!h) return;
    pthread_mutex_lock(&g_lock);
    entry *e = find(h);
    if (e && e->dead)
        violation("%s retains kctx's %s 0x%llx after it was destroyed (made by %s)", entry_name, e,
                  h);
    else if (e)
        e->refs++;
    pthread_mutex_unlock(&g_lock);
}

void kfl_destroying(uint64_t h, const char *entry_name) {
    if (!h || !t_watched) return;
    pthread_mutex_lock(&g_lock);
    entry *e = find(h);
    if (e && e->dead)
        violation("%s destroys kctx's %s 0x%llx again (made by %s)", entry_name, e, h);
    else if (!e || e->who != OWNER_KCTX)
        violation("%s, called by kctx, releases %s 0x%llx, which kctx did not make (%s)",
                  entry_name, e, h);
    pthread_mutex_unlock(&g_lock);
}

void kfl_gone(uint64_t h) {
    if (!h) return;
    pthread_mutex_lock(&g_lock);
    entry *e = find(h);
    if (e && !e->dead && e->refs > 1) {
        e->refs--;
    } else if (e && e->who == OWNER_KCTX) {
        e->dead = 1; /* kept: a later call naming it is a violation */
        e->refs = 0;
    } else if (e) {
        e->who = OWNER_FREE;
    }
    pthread_mutex_unlock(&g_lock);
}

static void c_reset(void) {
    pthread_mutex_lock(&g_lock);
    memset(g_tab, 0, sizeof g_tab);
    g_hi = 0;
    g_violations = 0;
    g_first[0] = 0;
    pthread_mutex_unlock(&g_lock);
    atomic_store(&g_arm_nth, 0);
    atomic_store(&g_arm_code, 0);
    atomic_store(&g_fired, NULL);
    atomic_store(&g_calls, 0);
}

static void c_watch(int on) { t_watched = on; }
static uint64_t c_calls(void) { return atomic_load(&g_calls); }

static void c_arm(uint64_t nth, int code) {
    atomic_store(&g_arm_nth, 0);
    atomic_store(&g_fired, NULL);
    atomic_store(&g_arm_code, code);
    atomic_store(&g_arm_nth, nth);
}

static const char *c_fired(void) {
    const char *f = atomic_load(&g_fired);
    return f ? f : "";
}

static uint64_t c_live(void) {
    uint64_t n = 0;
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_hi; i++)
        if (g_tab[i].who == OWNER_KCTX && !g_tab[i].dead) n++;
    pthread_mutex_unlock(&g_lock);
    return n;
}

static uint64_t c_violations(char *first, size_t size) {
    pthread_mutex_lock(&g_lock);
    uint64_t n = g_violations;
    if (first && size) snprintf(first, size, "%s", g_first);
    pthread_mutex_unlock(&g_lock);
    return n;
}

static void c_device_reset(void) {
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_hi; i++) {
        if (g_tab[i].who == OWNER_KCTX)
            g_tab[i].dead = 1;
        else
            g_tab[i].who = OWNER_FREE;
    }
    pthread_mutex_unlock(&g_lock);
}

static kfl_control g_control;
static pthread_mutex_t g_control_lock = PTHREAD_MUTEX_INITIALIZER;

const kfl_control *kfl_control_of(const char *api, int nonfatal_code, int fatal_code) {
    pthread_mutex_lock(&g_control_lock);
    if (!g_control.version)
        g_control = (kfl_control){KFL_VERSION, api,     nonfatal_code, fatal_code,
                                  c_reset,     c_watch, c_calls,       c_arm,
                                  c_fired,     c_live,  c_violations,  c_device_reset};
    pthread_mutex_unlock(&g_control_lock);
    return &g_control;
}
