/*
 * resources.c — the resident resources of a context (K11): created once, in
 * order, with rollback at every creation point; released in reverse order,
 * keeping whatever fails to release (K26); abandoned without platform calls
 * when the device's owner reset the device (K36).
 */
#include "internal.h"
#include <kctx/rt_layout.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const k_event_names[KCTX_EVENT_COUNT] = {"START", "AICORE_START", "AICORE_DONE",
                                                            "AICPU_DONE", "SERIAL_TAIL"};
static const char *const k_prog_names[2][KCTX_PROG_COUNT] = {
    {"kctx_rt_acquire", "kctx_rt_scheduler", "kctx_rt_worker", "kctx_rt_update"},
    {"kctx_rt_ho_acquire", "kctx_rt_ho_finalize", NULL, NULL}};

/* Updatable launches (K37) are built for RESIDENT kernel contexts of a
 * platform with capture: only those load the update program and make the
 * argument slots. */
static bool updatable(const kctx_ctx *c) {
    return c->mode == KCTX_MODE_KERNEL && c->strategy == KCTX_STRATEGY_RESIDENT &&
           c->plat->has_capture;
}

/* The slot pool's host side and geometry: one slot per graph lifetime
 * token (an updatable launch holds one token and one slot, so it never
 * fails where a plain captured launch works), each buffer as large as the
 * largest argument set a launch can carry with the slot's reference. */
static kctx_status uslots_setup(kctx_ctx *c) {
    uint32_t by_params =
        (c->max_params - (uint32_t)sizeof(kctx_rt_scheduler_params)) / sizeof(kctx_rt_arg);
    by_params = by_params ? by_params - 1 : 0; /* the slot's reference takes one entry */
    uint32_t by_block = c->args_capacity / (uint32_t)sizeof(kctx_rt_arg);
    c->uslot_cap = by_params < by_block ? by_params : by_block;
    c->uslot_stride = sizeof(kctx_rt_arg_slot) + 2u * (uint64_t)c->uslot_cap * sizeof(kctx_rt_arg);
    c->uslot_stride = (c->uslot_stride + 63u) & ~(uint64_t)63u;
    if (!c->uslots) { /* once per context (init runs once), freed at destroy */
        c->uslots = calloc(c->token_capacity, sizeof *c->uslots);
        if (!c->uslots) return kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
        c->nuslots = c->token_capacity;
    }
    return KCTX_OK;
}

static uint64_t image_bytes(uint32_t cores) {
    return sizeof(kctx_rt_image) + (uint64_t)cores * KCTX_RT_MAILBOX_STRIDE;
}
static uint64_t arch_bytes(uint32_t cores) {
    return sizeof(kctx_rt_arch) + (uint64_t)cores * sizeof(uint64_t);
}

/* Fill the runtime image and the architecture register table and upload
 * them on the AICPU stream, then wait (bounded) for the upload. The host
 * sources live in c->staging until the upload is known to be done. */
static kctx_status init_device_memory(kctx_ctx *c, bool *in_flight) {
    kctx_pstream s = c->streams[0].h;
    uint64_t ab = c->mem_bytes[KCTX_MEM_ARCH_TABLE];
    kctx_rt_image *img = calloc(1, sizeof *img);
    kctx_rt_arch *arch = calloc(1, ab);
    c->staging[0] = img;
    c->staging[1] = arch;
    if (!img || !arch) return kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
    img->magic = KCTX_RT_MAGIC;
    if (c->mem[KCTX_MEM_TRACE_RING].live) { /* K32: the device programs write here */
        img->trace_ring = c->mem[KCTX_MEM_TRACE_RING].h;
        img->trace_capacity = c->trace_dev_cap;
    }
    arch->magic = KCTX_RT_MAGIC;
    arch->core_count = c->core_count;
    arch->mailbox_stride = KCTX_RT_MAILBOX_STRIDE;
    arch->runtime_image = c->mem[KCTX_MEM_RUNTIME_IMAGE].h;
    for (uint32_t i = 0; i < c->core_count; i++)
        arch->mailbox[i] = c->mem[KCTX_MEM_RUNTIME_IMAGE].h + sizeof(kctx_rt_image) +
                           (uint64_t)i * KCTX_RT_MAILBOX_STRIDE;
    kctx_status st =
        KP(c, "memset_async(runtime image)", memset_async, c->mem[KCTX_MEM_RUNTIME_IMAGE].h, 0,
           c->mem_bytes[KCTX_MEM_RUNTIME_IMAGE], s);
    if (!st) *in_flight = true;
    if (!st)
        st = KP(c, "memcpy_htod_async(runtime image)", memcpy_htod_async,
                c->mem[KCTX_MEM_RUNTIME_IMAGE].h, img, sizeof *img, s);
    if (!st)
        st = KP(c, "memcpy_htod_async(arch table)", memcpy_htod_async,
                c->mem[KCTX_MEM_ARCH_TABLE].h, arch, ab, s);
    if (!st)
        st = KP(c, "memset_async(args block)", memset_async, c->mem[KCTX_MEM_ARGS_BLOCK].h, 0,
                c->mem_bytes[KCTX_MEM_ARGS_BLOCK], s);
    if (!st && c->mem[KCTX_MEM_ARG_SLOTS].live) /* no slot holds a version: R1 */
        st = KP(c, "memset_async(argument slots)", memset_async, c->mem[KCTX_MEM_ARG_SLOTS].h, 0,
                c->mem_bytes[KCTX_MEM_ARG_SLOTS], s);
    if (!*in_flight) return st;
    /* Something was enqueued: wait for it even if a later enqueue failed. */
    kctx_status ws =
        KP(c, "stream_sync(AICPU, init upload)", stream_sync, s, c->prepare_timeout_ms);
    if (ws != KCTX_OK)
        return st ? st : ws; /* still in flight: keep everything (K17's rule for init) */
    *in_flight = false;
    free(c->staging[0]);
    free(c->staging[1]);
    c->staging[0] = c->staging[1] = NULL;
    return st;
}

kctx_status kctx__resources_create(kctx_ctx *c, bool *in_flight) {
    kctx_status st;
    *in_flight = false;
    /* fresh streams belong to no capture; no range is known yet */
    c->streams_maybe_captured = false;
    c->free_counter = NULL;
    c->nranges = c->next_range = 0;
    if (c->ops->mem_free_counter && c->mode == KCTX_MODE_KERNEL) { /* run checks no ranges */
        const uint64_t *counter = NULL;
        st = KP(c, "mem_free_counter", mem_free_counter, c->device, &counter);
        if (st) return st;
        if (!counter)
            return kctx__fail(c, KCTX_PLATFORM_ERROR,
                              "platform %s: mem_free_counter gave no counter", c->plat->name);
        c->free_counter = counter;
        c->ranges_seen =
            atomic_load_explicit((const _Atomic uint64_t *)counter, memory_order_acquire);
    }
    static const char *const stream_names[KCTX_STREAM_COUNT] = {
        "stream_create(AICPU)", "stream_create(AICore)", "stream_create(upload)"};
    for (int i = 0; i < KCTX_STREAM_COUNT; i++) {
        st = KP(c, stream_names[i], stream_create, &c->streams[i].h);
        if (st) return st;
        c->streams[i].live = true;
    }
    for (int i = 0; i < KCTX_EVENT_COUNT; i++) {
        char what[48];
        snprintf(what, sizeof what, "event_create(%s)", k_event_names[i]);
        st = KP(c, what, event_create, &c->events[i].h);
        if (st) return st;
        c->events[i].live = true;
    }
    if (!c->plat->programs || !c->plat->programs_size)
        return kctx__fail(c, KCTX_UNSUPPORTED, "platform %s has no runtime device programs",
                          c->plat->name);
    st = KP(c, "module_load(device programs)", module_load, c->plat->programs,
            c->plat->programs_size, &c->programs.h);
    if (st) return st;
    c->programs.live = true;
    for (int i = 0; i < KCTX_PROG_COUNT; i++) {
        const char *name = k_prog_names[c->strategy == KCTX_STRATEGY_HOST_ORDERED][i];
        if (!name || (i == KCTX_PROG_UPDATE && !updatable(c))) continue;
        st = KP(c, name, module_function, c->programs.h, name, &c->prog_fn[i]);
        if (st) return st;
    }
    c->mem_bytes[KCTX_MEM_RUNTIME_IMAGE] = image_bytes(c->core_count);
    c->mem_bytes[KCTX_MEM_ARCH_TABLE] = arch_bytes(c->core_count);
    c->mem_bytes[KCTX_MEM_ARGS_BLOCK] = c->args_capacity;
    c->mem_bytes[KCTX_MEM_TRACE_RING] =
        c->trace ? (uint64_t)c->trace_dev_cap * sizeof(kctx_rt_trace_rec) : 0;
    c->mem_bytes[KCTX_MEM_ARG_SLOTS] = 0;
    if (updatable(c)) {
        if ((st = uslots_setup(c)) != KCTX_OK) return st;
        c->mem_bytes[KCTX_MEM_ARG_SLOTS] = c->uslot_stride * c->nuslots;
    }
    static const char *const mem_names[KCTX_MEM_COUNT] = {
        "mem_alloc(runtime image)", "mem_alloc(arch table)", "mem_alloc(args block)",
        "mem_alloc(trace ring)", "mem_alloc(argument slots)"};
    for (int i = 0; i < KCTX_MEM_COUNT; i++) {
        if (!c->mem_bytes[i]) continue; /* the trace ring, the slots: only when used */
        st = KP(c, mem_names[i], mem_alloc, c->mem_bytes[i], &c->mem[i].h);
        if (st) return st;
        c->mem[i].live = true;
    }
    st = init_device_memory(c, in_flight);
    if (st) return st;
    atomic_store(&c->tokens_in_use, 0);
    return KCTX_OK;
}

/* Release one resource: forget it on success, keep it on failure and note
 * the first failure (returned, and in the teardown slot, K10). */
static void release_one(kctx_ctx *c, kctx_res *r, kctx_status st, kctx_status *first) {
    if (st == KCTX_OK) {
        r->live = false;
        r->h = 0;
        return;
    }
    kctx__set_teardown_error(c, st, kctx_thread_last_error());
    if (*first == KCTX_OK) *first = st;
}

static void free_staging(kctx_ctx *c) {
    free(c->staging[0]);
    free(c->staging[1]);
    c->staging[0] = c->staging[1] = NULL;
}

kctx_status kctx__resources_release(kctx_ctx *c) {
    kctx_status first = KCTX_OK;
    free_staging(c); /* callers release only once the streams are idle */
    /* After a fatal error (K29) nothing more is released: every later
     * release would fail the same way, and program mode's recovery already
     * abandoned the handles these loops walk. */
    kctx_status st = kctx__uploads_release(c);
    if (st) first = st;
    for (int i = KCTX_MEM_COUNT - 1; i >= 0 && !kctx__lost(c); i--)
        if (c->mem[i].live)
            release_one(c, &c->mem[i], KP(c, "mem_free", mem_free, c->mem[i].h), &first);
    if (c->programs.live && !kctx__lost(c))
        release_one(c, &c->programs,
                    KP(c, "module_unload(device programs)", module_unload, c->programs.h), &first);
    for (int i = KCTX_EVENT_COUNT - 1; i >= 0 && !kctx__lost(c); i--)
        if (c->events[i].live)
            release_one(c, &c->events[i], KP(c, "event_destroy", event_destroy, c->events[i].h),
                        &first);
    for (int i = KCTX_STREAM_COUNT - 1; i >= 0 && !kctx__lost(c); i--)
        if (c->streams[i].live)
            release_one(c, &c->streams[i], KP(c, "stream_destroy", stream_destroy, c->streams[i].h),
                        &first);
    return first;
}

void kctx__resources_abandon(kctx_ctx *c) {
    free_staging(c); /* the owner's reset completed or abandoned all work */
    kctx__uploads_abandon(c);
    memset(c->streams, 0, sizeof c->streams);
    memset(c->events, 0, sizeof c->events);
    memset(&c->programs, 0, sizeof c->programs);
    memset(c->mem, 0, sizeof c->mem);
}
