/*
 * context.c — context handles, statuses, error slots, claims and the
 * queries. Handles are a table index plus a generation, validated without
 * touching freed memory (see "handle table").
 */
#include "internal.h"

#include "../platforms/registry.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kctx_version(void) { return KCTX_VERSION; }

const char *kctx_status_name(kctx_status s) {
    switch (s) {
#define KCTX_NAME_(name, num, msg) \
    case KCTX_##name:              \
        return "KCTX_" #name;
        KCTX_STATUS_MAP(KCTX_NAME_)
#undef KCTX_NAME_
    }
    return "KCTX_UNKNOWN";
}

const char *kctx_status_string(kctx_status s) {
    switch (s) {
#define KCTX_MSG_(name, num, msg) \
    case KCTX_##name:             \
        return msg;
        KCTX_STATUS_MAP(KCTX_MSG_)
#undef KCTX_MSG_
    }
    return "unknown status";
}

const char *kctx_strategy_name(kctx_strategy s) {
    switch (s) {
    case KCTX_STRATEGY_DEFAULT:
        return "default";
    case KCTX_STRATEGY_RESIDENT:
        return "resident";
    case KCTX_STRATEGY_HOST_ORDERED:
        return "host-ordered";
    }
    return "unknown";
}

const char *kctx_phase_name(kctx_phase p) {
    static const char *const names[] = {"NEW",         "READY",   "POISONED",
                                        "QUARANTINED", "CLOSING", "CLOSED"};
    return (unsigned)p < sizeof names / sizeof *names ? names[p] : "UNKNOWN";
}

/* ------------------------------------------------------------------ */
/* messages                                                            */

static _Thread_local char tl_msg[KCTX_MSG];

const char *kctx_thread_last_error(void) { return tl_msg; }

kctx_status kctx__vfail(kctx_ctx *c, kctx_status s, const char *fmt, va_list ap) {
    int n = snprintf(tl_msg, sizeof tl_msg, "%s: ", kctx_status_name(s));
    if (n > 0 && (size_t)n < sizeof tl_msg)
        vsnprintf(tl_msg + n, sizeof tl_msg - (size_t)n, fmt, ap);
    /* unlocked (kp_unlocked_begin): the context's copy is made once the
     * entry holds the lock again */
    if (c && !kp_unlocked(c)) memcpy(c->last_msg, tl_msg, sizeof c->last_msg);
    return s;
}

void kctx__restore_msg(kctx_ctx *c, const char *msg) {
    if (msg != tl_msg) snprintf(tl_msg, sizeof tl_msg, "%s", msg);
    if (c && !kp_unlocked(c)) memcpy(c->last_msg, tl_msg, sizeof c->last_msg);
}

kctx_status kctx__fail(kctx_ctx *c, kctx_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kctx__vfail(c, s, fmt, ap);
    va_end(ap);
    return s;
}

void kctx__set_runtime_error(kctx_ctx *c, kctx_status s, const char *msg) {
    if (kp_unlocked(c)) return;          /* the entry sets it once it holds the lock */
    if (c->rt_status != KCTX_OK) return; /* the first cause wins */
    c->rt_status = s;
    snprintf(c->rt_msg, sizeof c->rt_msg, "%s", msg);
}

void kctx__set_teardown_error(kctx_ctx *c, kctx_status s, const char *msg) {
    if (kp_unlocked(c)) return; /* the entry sets it once it holds the lock */
    if (c->td_status != KCTX_OK) return;
    c->td_status = s;
    snprintf(c->td_msg, sizeof c->td_msg, "%s", msg);
}

/* ------------------------------------------------------------------ */
/* structs that grow (kctx.h, "Structs that grow")                      */

/* No version of a kctx struct comes near this: a larger size is garbage,
 * not a newer header. */
#define STRUCT_SIZE_MAX 4096u

static kctx_status struct_size_ok(kctx_ctx *c, const char *what, const void *p, const size_t *sizes,
                                  size_t n, bool input) {
    size_t size;
    memcpy(&size, p, sizeof size);
    size_t known = sizes[n - 1];
    if (size > known && size <= STRUCT_SIZE_MAX) {
        /* a newer header's struct: an input may not ask for anything this
         * library does not know; an output's tail is simply zeroed */
        const unsigned char *b = p;
        for (size_t i = known; input && i < size; i++)
            if (b[i])
                return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                                  "%s of size %zu: byte %zu, beyond the %zu bytes this library "
                                  "knows, is not zero (a field of a newer kctx.h this library "
                                  "cannot honour)",
                                  what, size, i, known);
        return KCTX_OK;
    }
    char list[64] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (size == sizes[i]) return KCTX_OK;
        int w = snprintf(list + len, sizeof list - len, "%s%zu", i ? ", " : "", sizes[i]);
        if (w > 0 && (size_t)w < sizeof list - len) len += (size_t)w;
    }
    return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                      "%s size %zu is not the size of any of its versions (%s bytes, or larger "
                      "for a newer kctx.h); set it with its _INIT macro",
                      what, size, list);
}

kctx_status kctx__struct_in(kctx_ctx *c, const char *what, const void *given, const size_t *sizes,
                            size_t n, void *out) {
    kctx_status st = struct_size_ok(c, what, given, sizes, n, true);
    if (st) return st;
    size_t size, known = sizes[n - 1];
    memcpy(&size, given, sizeof size);
    memcpy(out, given, size < known ? size : known); /* over the defaults already in *out */
    memcpy(out, &known, sizeof known);
    return KCTX_OK;
}

kctx_status kctx__struct_out_check(kctx_ctx *c, const char *what, const void *dst,
                                   const size_t *sizes, size_t n) {
    return struct_size_ok(c, what, dst, sizes, n, false);
}

void kctx__struct_out(void *dst, const void *full, size_t full_size) {
    size_t size;
    memcpy(&size, dst, sizeof size);
    size_t fill = size < full_size ? size : full_size;
    memcpy((char *)dst + sizeof size, (const char *)full + sizeof size, fill - sizeof size);
    if (size > full_size) memset((char *)dst + full_size, 0, size - full_size);
}

/* ------------------------------------------------------------------ */
/* handle table                                                        */

#define CT_MAX (KCTX_MAX_CONTEXTS + 1u) /* slot 0 is never used */
/* A slot of the handle table. Writers (create, destroy) hold g_ctx_lock;
 * entries look a handle up without it: they pin the slot, read its
 * context, take a reference on it when its handle matches, and unpin. A
 * destroy clears the slot and then waits until no lookup pins it before it
 * drops the table's reference, so a lookup that read the context before
 * the slot was cleared holds its reference (or has given up) by then. */
typedef struct ctx_slot {
    uint32_t gen;            /* under g_ctx_lock */
    _Atomic(kctx_ctx *) ctx; /* published context, NULL when free */
    atomic_uint pins;        /* lookups between reading ctx and taking a reference */
} ctx_slot;

static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static ctx_slot g_slots[CT_MAX];
static const uint64_t CTX_TAG = 0x4bull << 56; /* 'K' */

static bool handle_slot(kctx_context h, uint32_t *idx) {
    if ((h & (0xffull << 56)) != CTX_TAG) return false;
    *idx = (uint32_t)(h & 0xffffffu);
    return *idx != 0 && *idx < CT_MAX;
}

/* Under g_ctx_lock: the context published under `h`, or NULL. */
static kctx_ctx *slot_get(kctx_context h) {
    uint32_t idx;
    if (!handle_slot(h, &idx)) return NULL;
    uint32_t gen = (uint32_t)((h >> 24) & 0xffffffffu);
    if (g_slots[idx].gen != gen) return NULL;
    return atomic_load(&g_slots[idx].ctx);
}

/* Contexts are reference counted: the handle table holds one reference
 * while the handle is published, and every entry holds one while it runs,
 * so destroy can unpublish a handle and the memory goes away only when the
 * last entry that looked it up has left. An entry takes its reference
 * while the handle is published or within its pinned lookup (the table's
 * reference is then still held: the count is never 0 there), so dropping
 * one needs no lock: whoever brings the count to 0 is the last to look at
 * the context (the handle is unpublished by then, nobody can find it
 * again) and frees it. The decrement is acq_rel: the freeing thread sees
 * every write the others made before they let go. */
static void ctx_put(kctx_ctx *c) {
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_destroy(&c->lock);
        free(c);
    }
}

/* The lookup of an entry: the context published under `h` with a
 * reference taken, or NULL. No lock: the pin keeps the context alive
 * between reading the slot and taking the reference (destroy waits for
 * the slot's pins after clearing it). The pin's increment and the slot's
 * read are sequentially consistent against destroy's clearing and its
 * read of the pins: either this read sees the slot cleared, or destroy
 * sees the pin. The handle is compared on the context itself (set before
 * it was published, never changed), so a slot reused by a newer context
 * never validates an older handle. */
static kctx_ctx *lookup_ref(kctx_context h) {
    uint32_t idx;
    if (!handle_slot(h, &idx)) return NULL;
    ctx_slot *s = &g_slots[idx];
    atomic_fetch_add(&s->pins, 1);
    kctx_ctx *c = atomic_load(&s->ctx);
    if (c && c->handle == h)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    else
        c = NULL;
    atomic_fetch_sub_explicit(&s->pins, 1, memory_order_release);
    return c;
}

kctx_status kctx__ctx_acquire(kctx_context h, kctx_ctx **out) {
    kctx_ctx *c = lookup_ref(h);
    if (!c)
        return kctx__fail(NULL, KCTX_INVALID_HANDLE, "0x%llx is not a live context",
                          (unsigned long long)h);
    pthread_mutex_lock(&c->lock);
    if (atomic_load(&c->dead)) { /* a racing destroy won */
        pthread_mutex_unlock(&c->lock);
        ctx_put(c);
        return kctx__fail(NULL, KCTX_INVALID_HANDLE, "0x%llx is not a live context",
                          (unsigned long long)h);
    }
    *out = c;
    return KCTX_OK;
}

void kctx__ctx_release(kctx_ctx *c) {
    pthread_mutex_unlock(&c->lock);
    ctx_put(c);
}

kctx_status kctx_context_create(const char *platform, kctx_context *out) {
    if (!out) return kctx__fail(NULL, KCTX_INVALID_ARGUMENT, "out is NULL");
    /* An explicit name is taken as it is ("" names no platform); only an
     * absent name falls back to KCTX_PLATFORM (unset or empty: "sim"). */
    const char *name = kctx__platform_default(platform);
    /* The registry decides (docs/platforms.md): unknown and not built are
     * NOT_FOUND, built but unavailable here (tables it cannot admit, a
     * runtime that does not load) is UNSUPPORTED; each with the reason. */
    const kctx__platform_facts *f = kctx__platform_lookup(name);
    if (!f) {
        char known[96] = "";
        size_t len = 0;
        for (uint32_t i = 0; i < kctx__platform_count(); i++) {
            int w = snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                             kctx__platform_name(i)); /* names only: probes nothing */
            if (w > 0 && (size_t)w < sizeof known - len) len += (size_t)w;
        }
        return kctx__fail(NULL, KCTX_NOT_FOUND, "no platform is named '%s' (known: %s)", name,
                          known);
    }
    if (!f->built) return kctx__fail(NULL, KCTX_NOT_FOUND, "platform '%s' is %s", name, f->reason);
    if (!f->available)
        return kctx__fail(NULL, KCTX_UNSUPPORTED, "platform '%s' is built but %s", name, f->reason);
    const kctx_platform_desc *p = f->desc;
    kctx_ctx *c = calloc(1, sizeof *c);
    if (!c) return kctx__fail(NULL, KCTX_OUT_OF_MEMORY, "host allocation failed");
    pthread_mutex_init(&c->lock, NULL);
    atomic_init(&c->refs, 1); /* the handle table's, dropped by destroy */
    c->plat = p;
    c->ops = p->ops;
    c->device = -1;
    pthread_mutex_lock(&g_ctx_lock);
    uint32_t idx = 1;
    /* A slot whose generation is exhausted is retired: a destroyed handle
     * must never validate again. */
    while (idx < CT_MAX && (atomic_load(&g_slots[idx].ctx) || g_slots[idx].gen == UINT32_MAX))
        idx++;
    if (idx == CT_MAX) {
        pthread_mutex_unlock(&g_ctx_lock);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return kctx__fail(NULL, KCTX_CAPACITY, "%u contexts are live; destroy some first",
                          CT_MAX - 1);
    }
    g_slots[idx].gen++; /* 1.. UINT32_MAX: never wraps (see above) */
    c->handle = CTX_TAG | ((uint64_t)g_slots[idx].gen << 24) | idx; /* before it is published */
    atomic_store(&g_slots[idx].ctx, c);
    *out = c->handle;
    pthread_mutex_unlock(&g_ctx_lock);
    return KCTX_OK;
}

kctx_status kctx_destroy(kctx_context h) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    if (c->phase != KCTX_PHASE_NEW && c->phase != KCTX_PHASE_CLOSED) {
        st = kctx__fail(c, KCTX_BUSY,
                        "context is %s: close it first (destroying it would leave device work "
                        "and resources nobody can release)",
                        kctx_phase_name(c->phase));
        kctx__ctx_release(c);
        return st;
    }
    if (c->claimed) { /* NEW after a failed rollback never keeps a claim; defensive */
        st = kctx__fail(c, KCTX_BUSY, "context still holds its device claim; close it first");
        kctx__ctx_release(c);
        return st;
    }
    /* No platform calls here (K28). */
    ctx_slot *s = &g_slots[(uint32_t)(h & 0xffffffu)];
    pthread_mutex_lock(&g_ctx_lock);
    atomic_store(&s->ctx, NULL);
    atomic_store(&c->dead, true);
    pthread_mutex_unlock(&g_ctx_lock);
    /* A lookup that read the slot before it was cleared is a few
     * instructions from holding its reference or giving up (lookup_ref):
     * wait for it before the table's reference may go. */
    while (atomic_load(&s->pins) != 0) sched_yield();
    kctx__callables_free_host(c);
    kctx__trace_free(c);
    free(c->uslots); /* unpublished: no hook can reach it any more */
    c->uslots = NULL;
    c->nuslots = 0;
    kctx__ctx_release(c); /* this entry's reference */
    ctx_put(c);           /* the table's: frees it once no other entry holds it */
    return KCTX_OK;
}

void kctx__token_release(kctx_context h) {
    pthread_mutex_lock(&g_ctx_lock);
    kctx_ctx *c = slot_get(h); /* published means not yet freed */
    if (c && atomic_load(&c->tokens_in_use) > 0) atomic_fetch_sub(&c->tokens_in_use, 1);
    pthread_mutex_unlock(&g_ctx_lock);
}

/* An updatable launch's hook (K38): the context's handle (its table
 * index, 12 bits, and generation, 32 bits) and the slot (16 bits) packed
 * into the hook's word, so that the hook looks the context up like
 * kctx__token_release and never touches a destroyed one. */
_Static_assert(CT_MAX <= 4096u, "a table index fits 12 bits of the slot hook's word");
void *kctx__slot_hook_user(kctx_context h, uint32_t slot) {
    uint64_t idx = h & 0xfffu, gen = (h >> 24) & 0xffffffffu;
    return (void *)(uintptr_t)(idx | gen << 12 | (uint64_t)(slot & 0xffffu) << 44);
}

void kctx__slot_hook(void *user) {
    uint64_t u = (uint64_t)(uintptr_t)user;
    kctx_context h = CTX_TAG | ((u >> 12) & 0xffffffffu) << 24 | (u & 0xfffu);
    uint32_t slot = (uint32_t)(u >> 44) & 0xffffu;
    pthread_mutex_lock(&g_ctx_lock);
    kctx_ctx *c = slot_get(h);
    if (c) {
        if (atomic_load(&c->tokens_in_use) > 0) atomic_fetch_sub(&c->tokens_in_use, 1);
        if (slot < c->nuslots) atomic_store(&c->uslots[slot].busy, 0);
    }
    pthread_mutex_unlock(&g_ctx_lock);
}

/* ------------------------------------------------------------------ */
/* claims: (platform, device) -> owning context handle                 */

#define CLAIM_MAX 64
typedef struct claim {
    const kctx_platform_desc *plat;
    int device;
    kctx_context owner;
} claim;
static claim g_claims[CLAIM_MAX];

kctx_status kctx__claim_take(kctx_ctx *c, int device) {
    pthread_mutex_lock(&g_ctx_lock);
    int free_slot = -1;
    for (int i = 0; i < CLAIM_MAX; i++) {
        if (!g_claims[i].owner) {
            if (free_slot < 0) free_slot = i;
            continue;
        }
        if (g_claims[i].plat == c->plat && g_claims[i].device == device) {
            kctx_context owner = g_claims[i].owner;
            pthread_mutex_unlock(&g_ctx_lock);
            return kctx__fail(c, KCTX_BUSY,
                              "device %d of platform %s is claimed by kernel context 0x%llx",
                              device, c->plat->name, (unsigned long long)owner);
        }
    }
    if (free_slot < 0) {
        pthread_mutex_unlock(&g_ctx_lock);
        return kctx__fail(c, KCTX_CAPACITY, "too many claimed devices (%d)", CLAIM_MAX);
    }
    g_claims[free_slot] = (claim){c->plat, device, c->handle};
    c->claimed = true;
    pthread_mutex_unlock(&g_ctx_lock);
    return KCTX_OK;
}

void kctx__claim_release(kctx_ctx *c) {
    if (!c->claimed) return;
    pthread_mutex_lock(&g_ctx_lock);
    for (int i = 0; i < CLAIM_MAX; i++)
        if (g_claims[i].owner == c->handle)
            g_claims[i] = (claim){0}; /* only the owner releases (K6) */
    c->claimed = false;
    pthread_mutex_unlock(&g_ctx_lock);
}

/* ------------------------------------------------------------------ */
/* queries                                                             */

/* Check order (section 0): the handle first, then the arguments (`bad`
 * names the first bad argument, NULL when they are fine), then the body. */
#define QUERY(h, bad, body)                                     \
    kctx_ctx *c;                                                \
    kctx_status st_ = kctx__ctx_acquire((h), &c);               \
    if (st_) return st_;                                        \
    const char *bad_ = (bad);                                   \
    if (bad_) {                                                 \
        st_ = kctx__fail(c, KCTX_INVALID_ARGUMENT, "%s", bad_); \
        kctx__ctx_release(c);                                   \
        return st_;                                             \
    }                                                           \
    body;                                                       \
    kctx__ctx_release(c);                                       \
    return st_

kctx_status kctx_get_phase(kctx_context h, kctx_phase *phase) {
    QUERY(h, phase ? NULL : "phase is NULL", *phase = c->phase);
}

kctx_status kctx_get_mode(kctx_context h, kctx_mode *mode) {
    QUERY(h, mode ? NULL : "mode is NULL", *mode = c->mode);
}

kctx_status kctx_get_device(kctx_context h, int *device) {
    QUERY(h, device ? NULL : "device is NULL", *device = c->device);
}

const char *kctx_platform_name(kctx_context h) {
    kctx_ctx *c;
    if (kctx__ctx_acquire(h, &c)) return "";
    const char *n = c->plat->name;
    kctx__ctx_release(c);
    return n;
}

static kctx_status slot_copy(kctx_context h, bool runtime, kctx_status *status, char *msg,
                             size_t msg_size) {
    QUERY(h,
          !status              ? "status is NULL"
          : (msg_size && !msg) ? "msg is NULL but msg_size is not 0"
                               : NULL,
          {
              *status = runtime ? c->rt_status : c->td_status;
              if (msg_size) snprintf(msg, msg_size, "%s", runtime ? c->rt_msg : c->td_msg);
          });
}

kctx_status kctx_runtime_error(kctx_context h, kctx_status *status, char *msg, size_t msg_size) {
    return slot_copy(h, true, status, msg, msg_size);
}

kctx_status kctx_teardown_error(kctx_context h, kctx_status *status, char *msg, size_t msg_size) {
    return slot_copy(h, false, status, msg, msg_size);
}

const char *kctx_last_error(kctx_context h) {
    static _Thread_local char copy[KCTX_MSG];
    kctx_ctx *c;
    if (kctx__ctx_acquire(h, &c)) return tl_msg;
    memcpy(copy, c->last_msg, sizeof copy);
    kctx__ctx_release(c);
    return copy;
}

kctx_status kctx_platform_calls(kctx_context h, uint64_t *calls) {
    QUERY(h, calls ? NULL : "calls is NULL", *calls = atomic_load(&c->calls));
}

/* The published sizes of kctx_resource_info: before and after the upload
 * stream (issue 11). */
static const size_t k_resource_info_sizes[] = {offsetof(kctx_resource_info, upload_stream),
                                               offsetof(kctx_resource_info, arg_slots),
                                               sizeof(kctx_resource_info)};

static void fill_resources(kctx_ctx *c, kctx_resource_info *info) {
    info->aicpu_stream = c->streams[0].live ? c->streams[0].h : 0;
    info->aicore_stream = c->streams[1].live ? c->streams[1].h : 0;
    info->upload_stream = c->streams[2].live ? c->streams[2].h : 0;
    for (int i = 0; i < KCTX_EVENT_COUNT; i++)
        info->events[i] = c->events[i].live ? c->events[i].h : 0;
    info->programs_module = c->programs.live ? c->programs.h : 0;
    info->runtime_image =
        c->mem[KCTX_MEM_RUNTIME_IMAGE].live ? c->mem[KCTX_MEM_RUNTIME_IMAGE].h : 0;
    info->arch_table = c->mem[KCTX_MEM_ARCH_TABLE].live ? c->mem[KCTX_MEM_ARCH_TABLE].h : 0;
    info->args_block = c->mem[KCTX_MEM_ARGS_BLOCK].live ? c->mem[KCTX_MEM_ARGS_BLOCK].h : 0;
    info->runtime_image_bytes = c->mem_bytes[KCTX_MEM_RUNTIME_IMAGE];
    info->arch_table_bytes = c->mem_bytes[KCTX_MEM_ARCH_TABLE];
    info->args_block_bytes = c->mem_bytes[KCTX_MEM_ARGS_BLOCK];
    info->token_capacity = c->token_capacity;
    info->arg_slots = c->mem[KCTX_MEM_ARG_SLOTS].live ? c->mem[KCTX_MEM_ARG_SLOTS].h : 0;
    info->arg_slots_bytes = c->mem_bytes[KCTX_MEM_ARG_SLOTS];
    info->arg_slot_count = c->nuslots;
    for (uint32_t i = 0; i < c->nuslots; i++)
        info->arg_slots_in_use += atomic_load(&c->uslots[i].busy);
    info->tokens_in_use = atomic_load(&c->tokens_in_use);
    info->callables = c->ncallables;
    for (kctx_upload *u = c->uploads; u; u = u->next) {
        info->uploads++;
        info->upload_bytes += u->table_bytes;
    }
}

kctx_status kctx_get_resources(kctx_context h, kctx_resource_info *info) {
    QUERY(h, info ? NULL : "info is NULL", {
        st_ = kctx__struct_out_check(c, "kctx_resource_info", info, k_resource_info_sizes, 3);
        if (!st_) {
            kctx_resource_info full = KCTX_RESOURCE_INFO_INIT;
            fill_resources(c, &full);
            kctx__struct_out(info, &full, sizeof full);
        }
    });
}

/* ------------------------------------------------------------------ */
/* capabilities (docs/platforms.md, "The capability query")             */

/* The published sizes of kctx_platform_caps (kctx.h): before `note`, and now. */
static const size_t k_caps_sizes[] = {offsetof(kctx_platform_caps, note),
                                      sizeof(kctx_platform_caps)};

kctx_status kctx_get_platform_caps(const char *name, kctx_platform_caps *caps) {
    if (!caps) return kctx__fail(NULL, KCTX_INVALID_ARGUMENT, "caps is NULL");
    kctx_status st = kctx__struct_out_check(NULL, "kctx_platform_caps", caps, k_caps_sizes, 2);
    if (st) return st;
    name = kctx__platform_default(name);
    const kctx__platform_facts *f = kctx__platform_lookup(name);
    if (!f) return kctx__fail(NULL, KCTX_NOT_FOUND, "no platform is named '%s'", name);
    kctx_platform_caps full;
    kctx__platform_caps(f, &full);
    kctx__struct_out(caps, &full, sizeof full);
    return KCTX_OK;
}

kctx_status kctx_get_context_caps(kctx_context h, kctx_platform_caps *caps) {
    QUERY(h, caps ? NULL : "caps is NULL", {
        st_ = kctx__struct_out_check(c, "kctx_platform_caps", caps, k_caps_sizes, 2);
        if (!st_) {
            kctx_platform_caps full;
            kctx__platform_caps(kctx__platform_lookup(c->plat->name), &full);
            full.strategy = (uint32_t)c->strategy;
            kctx__struct_out(caps, &full, sizeof full);
        }
    });
}

kctx_status kctx_capturable(kctx_context h, uint64_t id) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    bool prepared = kctx__find_callable(c, id) != NULL;
    if (c->mode != KCTX_MODE_KERNEL)
        st = kctx__fail(c, KCTX_INVALID_STATE,
                        "a %s context launches nothing onto a caller's stream: only kernel mode "
                        "does (K3)",
                        c->mode == KCTX_MODE_PROGRAM ? "program-mode" : "mode-less");
    else if (!c->plat->has_capture)
        st = kctx__fail(c, KCTX_UNSUPPORTED,
                        "platform %s has no capture: this context's launches run eagerly only",
                        c->plat->name);
    else if (!prepared)
        st = kctx__fail(c, KCTX_UNKNOWN_ID, "no callable is prepared under id %llu",
                        (unsigned long long)id);
    kctx__ctx_release(c);
    return st;
}
