/*
 * prepare.c — prepare (K13-K17): validate, check, load the children's
 * modules, resolve their entry points into the callable's device table,
 * upload it on the context's own AICPU stream and wait for the upload.
 * Identical images share one upload.
 */
#include "internal.h"
#include <kctx/rt_layout.h>

#include <kctx/task_abi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void upload_free_host(kctx_upload *u) {
    free(u->ho_tasks);
    free(u->ho_binds);
    free(u->staging);
    free(u); /* with its arrays and its copy of the image */
}

static void upload_index_clear(kctx_ctx *c) {
    free(c->upload_index);
    c->upload_index = NULL;
    c->upload_index_cap = c->upload_index_n = 0;
}

void kctx__callables_free_host(kctx_ctx *c) {
    free(c->callables);
    free(c->id_index);
    c->callables = NULL;
    c->id_index = NULL;
    c->ncallables = c->capcallables = c->id_index_cap = 0;
    upload_index_clear(c);
}

static uint32_t crc_slot(uint32_t crc, uint32_t cap) {
    return (uint32_t)(((uint64_t)crc * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
}

static void upload_index_put(kctx_upload **index, uint32_t cap, kctx_upload *u) {
    uint32_t s = crc_slot(u->crc, cap);
    while (index[s]) s = (s + 1) & (cap - 1);
    index[s] = u;
}

/* K14: the registered upload holding exactly these bytes, or NULL. */
static kctx_upload *find_identical(const kctx_ctx *c, const void *image, size_t size,
                                   uint32_t crc) {
    if (!c->upload_index) return NULL;
    for (uint32_t s = crc_slot(crc, c->upload_index_cap); c->upload_index[s];
         s = (s + 1) & (c->upload_index_cap - 1)) {
        kctx_upload *u = c->upload_index[s];
        if (u->refs && u->size == size && u->crc == crc && memcmp(u->image, image, size) == 0)
            return u;
    }
    return NULL;
}

/* Fibonacci hashing: consecutive ids land far apart. */
static uint32_t id_slot(uint64_t id, uint32_t cap) {
    return (uint32_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
}

kctx_callable *kctx__find_callable(const kctx_ctx *c, uint64_t id) {
    if (!c->id_index) return NULL;
    for (uint32_t s = id_slot(id, c->id_index_cap);; s = (s + 1) & (c->id_index_cap - 1)) {
        uint32_t at = c->id_index[s];
        if (!at) return NULL;
        if (c->callables[at - 1].id == id) return &c->callables[at - 1];
    }
}

static void index_put(uint32_t *index, uint32_t cap, uint64_t id, uint32_t pos) {
    uint32_t s = id_slot(id, cap);
    while (index[s]) s = (s + 1) & (cap - 1);
    index[s] = pos + 1;
}

/* Release an upload's platform objects; keep what fails. Returns the first
 * failure (also in the teardown slot). */
static kctx_status upload_release(kctx_ctx *c, kctx_upload *u) {
    kctx_status first = KCTX_OK, st;
    if (u->table.live) {
        st = KP(c, "mem_free(callable table)", mem_free, u->table.h);
        if (kctx__lost(c)) return st; /* K29: stop; program mode's recovery freed `u` */
        if (st) {
            kctx__set_teardown_error(c, st, kctx_thread_last_error());
            first = st;
        } else {
            u->table.live = false;
        }
    }
    for (uint32_t i = u->nchildren; i-- > 0;) {
        if (!u->modules[i].live) continue;
        st = KP(c, "module_unload(child)", module_unload, u->modules[i].h);
        if (kctx__lost(c)) return st; /* as above */
        if (st) {
            kctx__set_teardown_error(c, st, kctx_thread_last_error());
            if (!first) first = st;
        } else {
            u->modules[i].live = false;
        }
    }
    return first;
}

static bool upload_live(const kctx_upload *u) {
    if (u->table.live) return true;
    for (uint32_t i = 0; i < u->nchildren; i++)
        if (u->modules[i].live) return true;
    return false;
}

kctx_status kctx__uploads_release(kctx_ctx *c) {
    kctx_status first = KCTX_OK;
    upload_index_clear(c); /* registered uploads go away from here on */
    kctx_upload **pp = &c->uploads;
    while (*pp) {
        kctx_upload *u = *pp;
        kctx_status st = upload_release(c, u);
        if (st && !first) first = st;
        if (kctx__lost(c)) return first; /* K29: stop; `u` may be gone (program recovery) */
        if (!upload_live(u)) {
            *pp = u->next;
            upload_free_host(u);
        } else {
            pp = &u->next;
        }
    }
    if (!c->uploads) kctx__callables_free_host(c);
    return first;
}

void kctx__uploads_abandon(kctx_ctx *c) {
    while (c->uploads) {
        kctx_upload *u = c->uploads;
        c->uploads = u->next;
        upload_free_host(u);
    }
    kctx__callables_free_host(c);
}

static kctx_status register_id(kctx_ctx *c, uint64_t id, kctx_upload *u) {
    /* checked again here: racing prepares (K16) all passed prepare_check's */
    if (c->ncallables >= (UINT32_C(1) << 30))
        return kctx__fail(c, KCTX_CAPACITY, "too many prepared callables");
    if (c->ncallables == c->capcallables) {
        uint32_t nc = c->capcallables ? c->capcallables * 2 : 16;
        kctx_callable *n = realloc(c->callables, nc * sizeof *n);
        if (!n) return kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
        c->callables = n;
        c->capcallables = nc;
    }
    if ((uint64_t)(c->ncallables + 1) * 2 > c->id_index_cap) {
        uint32_t cap = c->id_index_cap ? c->id_index_cap * 2 : 32;
        uint32_t *index = calloc(cap, sizeof *index);
        if (!index) return kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
        for (uint32_t i = 0; i < c->ncallables; i++) index_put(index, cap, c->callables[i].id, i);
        free(c->id_index);
        c->id_index = index;
        c->id_index_cap = cap;
    }
    if (!u->refs && (uint64_t)(c->upload_index_n + 1) * 2 > c->upload_index_cap) {
        uint32_t cap = c->upload_index_cap ? c->upload_index_cap * 2 : 32;
        kctx_upload **index = calloc(cap, sizeof *index);
        if (!index) return kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
        for (uint32_t i = 0; i < c->upload_index_cap; i++)
            if (c->upload_index[i]) upload_index_put(index, cap, c->upload_index[i]);
        free(c->upload_index);
        c->upload_index = index;
        c->upload_index_cap = cap;
    }
    index_put(c->id_index, c->id_index_cap, id, c->ncallables);
    c->callables[c->ncallables++] = (kctx_callable){id, u};
    if (!u->refs++) {
        upload_index_put(c->upload_index, c->upload_index_cap, u);
        c->upload_index_n++;
    }
    kctx__trace_names(c, id, &u->view); /* K32: spans name the callable and its kernels */
    return KCTX_OK;
}

/* Build the device callable table for a validated image on the host:
 * tasks, bindings and dependencies as in the image, plus successor lists
 * (who to release when a task completes) and room for the per-launch
 * scratch the device programs rewrite. */
static void *build_table(const kctx_upload *u, const uint64_t *entries, size_t *bytes) {
    const kctx_image_view *v = &u->view;
    uint32_t nt = kctx_image_task_count(v), nc = kctx_image_child_count(v);
    uint32_t nb = 0, nd = 0;
    for (uint32_t t = 0; t < nt; t++) {
        kctx_image_task task = kctx_image_task_at(v, t);
        nb += task.binding_count;
        nd += task.dep_count;
    }
    kctx_rt_callable h = {.magic = KCTX_RT_CALLABLE_MAGIC,
                          .task_count = nt,
                          .child_count = nc,
                          .param_count = kctx_image_param_count(v),
                          .binding_count = nb,
                          .dep_count = nd,
                          .succ_count = nd}; /* every dependency edge is one successor entry */
    h.entries_off = sizeof h;
    h.tasks_off = h.entries_off + (uint64_t)nc * 8;
    h.bindings_off = h.tasks_off + (uint64_t)nt * sizeof(kctx_rt_task);
    h.deps_off = h.bindings_off + (uint64_t)nb * sizeof(kctx_rt_binding);
    h.succ_off = (h.deps_off + (uint64_t)nd * 4 + 7) & ~7ull;
    h.succs_off = h.succ_off + (uint64_t)nt * sizeof(kctx_rt_succ);
    h.scratch_off = (h.succs_off + (uint64_t)nd * 4 + 15) & ~15ull;
    h.queue_off = h.scratch_off + (uint64_t)nt * sizeof(kctx_rt_task_state);
    *bytes = (h.queue_off + (uint64_t)nt * 4 + 7) & ~7ull;
    uint8_t *t = calloc(1, *bytes);
    uint32_t *nsucc = calloc(nt ? nt : 1, sizeof *nsucc);
    if (!t || !nsucc) {
        free(t);
        free(nsucc);
        return NULL;
    }
    memcpy(t, &h, sizeof h);
    memcpy(t + h.entries_off, entries, (size_t)nc * 8);
    uint32_t bi = 0, di = 0;
    for (uint32_t k = 0; k < nt; k++) {
        kctx_image_task task = kctx_image_task_at(v, k);
        kctx_rt_task rt = {task.func_id, task.block_dim, bi, task.binding_count,
                           di,           task.dep_count};
        memcpy(t + h.tasks_off + (uint64_t)k * sizeof rt, &rt, sizeof rt);
        for (uint32_t i = 0; i < task.binding_count; i++, bi++) {
            kctx_image_binding b = kctx_image_binding_at(v, k, i);
            kctx_rt_binding rb = {(uint32_t)b.kind, b.param, b.value};
            memcpy(t + h.bindings_off + (uint64_t)bi * sizeof rb, &rb, sizeof rb);
        }
        for (uint32_t i = 0; i < task.dep_count; i++, di++) {
            uint32_t d = kctx_image_dep_at(v, k, i);
            memcpy(t + h.deps_off + (uint64_t)di * 4, &d, 4);
            nsucc[d]++;
        }
    }
    /* successor lists, in task order (dependencies only point backwards) */
    uint32_t at = 0;
    for (uint32_t k = 0; k < nt; k++) {
        kctx_rt_succ sc = {at, 0};
        memcpy(t + h.succ_off + (uint64_t)k * sizeof sc, &sc, sizeof sc);
        at += nsucc[k];
    }
    for (uint32_t k = 0; k < nt; k++) {
        kctx_image_task task = kctx_image_task_at(v, k);
        for (uint32_t i = 0; i < task.dep_count; i++) {
            uint32_t d = kctx_image_dep_at(v, k, i);
            kctx_rt_succ sc;
            memcpy(&sc, t + h.succ_off + (uint64_t)d * sizeof sc, sizeof sc);
            memcpy(t + h.succs_off + (uint64_t)(sc.first + sc.count) * 4, &k, 4);
            sc.count++;
            memcpy(t + h.succ_off + (uint64_t)d * sizeof sc, &sc, sizeof sc);
        }
    }
    free(nsucc);
    return t;
}

/* Load children, resolve entries, upload the table. On failure before the
 * upload was enqueued, everything created is released (nothing kept); if
 * the upload was enqueued but its wait failed, the context is poisoned and
 * the upload is kept until close (K17). */
/* The task ABI's marker (kctx/task_abi.h): a child whose module does not
 * export it was not written for the ABI, and its kernel would misread its
 * parameter block. */
static kctx_status check_marker(kctx_ctx *c, kctx_upload *u, uint32_t i, const char *entry) {
    char name[KCTX_IMAGE_MAX_NAME + sizeof KCTX_TASK_MARKER_PREFIX];
    snprintf(name, sizeof name, "%s%s", KCTX_TASK_MARKER_PREFIX, entry);
    kctx_pfunction marker = 0;
    int pst = KP_RAW(c, module_function, u->modules[i].h, name, &marker);
    if (pst == 0) return KCTX_OK;
    /* A symbol the module lacks is INVALID on some platforms and BAD_MODULE
     * (the driver's "no such kernel": CUDA 500, CL_INVALID_KERNEL_NAME, the
     * sim's NOT_FOUND) on others: both mean the marker is missing. */
    kctx_pclass k = kp_classify(c, pst);
    kctx_status st = kp_map(c, "module_function(task ABI marker)", pst);
    if (k != KCTX_PCLASS_INVALID && k != KCTX_PCLASS_BAD_MODULE) return st;
    char why[KCTX_MSG]; /* the platform's own words, kept after kctx's */
    snprintf(why, sizeof why, "%s", kctx_thread_last_error());
    return kctx__fail(c, KCTX_INCOMPATIBLE_IMAGE,
                      "child %u's kernel '%s' is not a task kernel: its module lacks the task ABI "
                      "marker %s (write it with KCTX_TASK, kctx/task_abi.h; %s)",
                      i, entry, name, why);
}

/* HOST_ORDERED: the tasks in the image's order (a topological order: a
 * task's dependencies are listed before it) with their bindings. */
static kctx_status build_ho_tasks(kctx_ctx *c, kctx_upload *u) {
    const kctx_image_view *v = &u->view;
    uint32_t nt = kctx_image_task_count(v), nb = 0;
    for (uint32_t t = 0; t < nt; t++) nb += kctx_image_task_at(v, t).binding_count;
    u->ho_tasks = calloc(nt ? nt : 1, sizeof *u->ho_tasks);
    u->ho_binds = calloc(nb ? nb : 1, sizeof *u->ho_binds);
    if (!u->ho_tasks || !u->ho_binds)
        return kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
    uint32_t bi = 0;
    for (uint32_t t = 0; t < nt; t++) {
        kctx_image_task task = kctx_image_task_at(v, t);
        kctx_pfunction fn = 0; /* the entry of the child with the task's function id */
        for (uint32_t i = 0; i < u->nchildren && !fn; i++)
            if (kctx_image_child_at(v, i).func_id == task.func_id) fn = u->fns[i];
        u->ho_tasks[t] = (kctx_ho_task){fn, task.block_dim, task.func_id, bi, task.binding_count};
        if (sizeof(kctx_task_header) + (uint64_t)task.binding_count * 8 > c->max_params)
            return kctx__fail(c, KCTX_INCOMPATIBLE_IMAGE,
                              "task %u's parameter block (%u bindings) exceeds the device's kernel "
                              "parameter limit (%u bytes)",
                              t, task.binding_count, c->max_params);
        for (uint32_t i = 0; i < task.binding_count; i++, bi++) {
            kctx_image_binding b = kctx_image_binding_at(v, t, i);
            const bool imm = b.kind == KCTX_BIND_IMMEDIATE;
            u->ho_binds[bi] = (kctx_ho_binding){imm ? 0u : b.param, imm ? 0 : -1,
                                                b.kind == KCTX_BIND_SCALAR ? 0 : b.value};
        }
    }
    u->ho_ntasks = nt;
    return KCTX_OK;
}

static kctx_status do_upload(kctx_ctx *c, kctx_upload *u, bool *wait_failed) {
    const kctx_image_view *v = &u->view;
    kctx_status st = KCTX_OK;
    const bool ho = c->strategy == KCTX_STRATEGY_HOST_ORDERED;
    uint64_t *entries = calloc(u->nchildren ? u->nchildren : 1, sizeof *entries);
    if (!entries) return kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
    for (uint32_t i = 0; !st && i < u->nchildren; i++) {
        kctx_image_child ch = kctx_image_child_at(v, i);
        kctx_image_variant var;
        kctx_image_find_variant(v, i, (kctx_variant_kind)c->plat->variant_kind,
                                &var); /* compatibility checked */
        st = KP(c, "module_load(child)", module_load, var.blob, var.blob_size, &u->modules[i].h);
        if (st) break;
        u->modules[i].live = true;
        st = KP(c, "module_function(child entry)", module_function, u->modules[i].h, ch.entry,
                &u->fns[i]);
        if (!st) st = check_marker(c, u, i, ch.entry);
        if (!st && !ho && c->ops->function_address)
            st = KP(c, "function_address", function_address, u->fns[i], &entries[ch.func_id]);
    }
    if (ho) {
        /* Nothing goes to the device: launch builds each task's parameter
         * block by value from the args (K22 by construction). */
        free(entries);
        if (!st) st = build_ho_tasks(c, u);
        if (st) {
            char msg[KCTX_MSG];
            snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
            upload_release(c, u);
            kctx__restore_msg(c, msg);
        }
        return st;
    }
    size_t bytes = 0;
    void *table = st ? NULL : build_table(u, entries, &bytes);
    free(entries);
    if (!st && !table) st = kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
    if (!st) {
        st = KP(c, "mem_alloc(callable table)", mem_alloc, bytes, &u->table.h);
        if (!st) {
            u->table.live = true;
            u->table_bytes = bytes;
        }
    }
    /* K16: on the upload stream, which no launch uses, so it is never part
     * of a capture and never waits behind a launch */
    kctx_pstream us = c->streams[KCTX_STREAM_UPLOAD].h;
    if (!st)
        st = KP(c, "memcpy_htod_async(callable table)", memcpy_htod_async, u->table.h, table, bytes,
                us);
    if (st) {
        char msg[KCTX_MSG];
        snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
        free(table);
        upload_release(c, u); /* nothing is kept; what fails to release stays listed for close */
        kctx__restore_msg(c, msg);
        return st;
    }
    /* The upload is in flight: wait for it (bounded) on the upload stream
     * only (K15, K16). */
    st = KP(c, "stream_sync(upload, prepare upload)", stream_sync, us, c->prepare_timeout_ms);
    if (st) {
        /* K17: the device may still read the upload: keep it (and the host
         * table it copies from) until close; the caller poisons. */
        *wait_failed = true;
        char cause[KCTX_MSG];
        snprintf(cause, sizeof cause, "%s", kctx_thread_last_error());
        kctx__fail(c, st, "prepare: the upload was started but its wait failed: %s", cause);
        u->staging = table; /* a copy may still read it: freed with the upload at close */
        return st;
    }
    free(table);
    return KCTX_OK;
}

/* Prepare in phases (K13-K17, K16's cold capture):
 *  0. the arguments under the context lock, then — unlocked — the full
 *     image validation (K13) and its checksum: a launch of another id never
 *     waits behind validating a large image;
 *  1. under the context lock: phase, current device (K5), duplicate id,
 *     compatibility, capacity, and identical bytes (K14: registered at once,
 *     nothing to upload);
 *  2. unlocked: the host copy, the children's modules, their entry points
 *     and markers, and the upload on the upload stream with its bounded
 *     wait — a launch of another id never waits behind it, and nothing here
 *     writes the context's shared state (kp_unlocked_begin); close waits
 *     for it (c->preparing);
 *  3. under the lock again: publish the id — unless the phase changed or
 *     another prepare published the same id meanwhile — and apply what the
 *     unlocked phase saw (a fatal status: K29/K31; a failed wait: K17). */
typedef struct prep {
    kctx_image_view view;
    uint32_t crc; /* of the whole image (K14's identical bytes) */
    uint32_t nchildren;
    bool done; /* phase 1 finished the prepare (a refusal or a shared upload) */
} prep;

/* Phase 0, unlocked: K13's full validation, before anything else is done
 * with the image. Pure: no platform call, no context state. */
static kctx_status prepare_validate(kctx_ctx *c, const void *image, size_t size, prep *p) {
    kctx_image_error ierr;
    if (kctx_image_view_open(&p->view, image, size, &ierr) != KCTX_IMAGE_OK)
        return kctx__fail(c, KCTX_INVALID_IMAGE, "%s at offset %llu: %s",
                          kctx_image_reason_name(ierr.reason), (unsigned long long)ierr.offset,
                          ierr.message);
    p->crc = kctx_crc32c(image, size);
    return KCTX_OK;
}

static kctx_status prepare_check(kctx_ctx *c, uint64_t id, const void *image, size_t size,
                                 prep *p) {
    kctx_status st;
    p->done = true;
    if (c->mode == KCTX_MODE_NONE)
        return kctx__fail(c, KCTX_INVALID_STATE, "prepare on an uninitialised context");
    st = kctx__admit(c, "prepare");
    if (!st) st = kp_relaxed_begin(c);
    if (st) return st;
    /* K5; no capture or idleness check: prepare works inside an active
     * capture and beside launches in flight (K15, K16) */
    st = kctx__check_device(c);
    if (!st && kctx__find_callable(c, id))
        st = kctx__fail(c, KCTX_DUPLICATE_ID, "callable id %llu is already prepared (K14)",
                        (unsigned long long)id);
    p->nchildren = kctx_image_child_count(&p->view);
    for (uint32_t i = 0; !st && i < p->nchildren; i++) {
        kctx_image_variant var;
        if (kctx_image_find_variant(&p->view, i, (kctx_variant_kind)c->plat->variant_kind, &var) !=
            0)
            st = kctx__fail(c, KCTX_INCOMPATIBLE_IMAGE,
                            "child '%s' has no variant platform %s can load",
                            kctx_image_child_at(&p->view, i).name, c->plat->name);
    }
    if (!st && c->ncallables >= (UINT32_C(1) << 30)) /* the id index stays within 2^31 slots */
        st = kctx__fail(c, KCTX_CAPACITY, "too many prepared callables");
    if (!st) {
        /* K14: identical bytes share one upload. */
        kctx_upload *u = find_identical(c, image, size, p->crc);
        if (u) {
            st = register_id(c, id, u);
            kp_relaxed_end(c);
            return st;
        }
        p->done = false; /* on to the unlocked phase */
        return KCTX_OK;
    }
    kp_relaxed_end(c);
    return st;
}

/* The host side of a new upload, in one allocation: the upload, its
 * per-child and per-parameter arrays and our own copy of the image (the
 * caller may free theirs once prepare returns; K14 compares later images
 * with it byte for byte), and the launch preflight facts. Nothing else of
 * it grows with the image's size. */
static kctx_upload *upload_new(const void *image, size_t size, const prep *p) {
    const size_t nc = p->nchildren, np = kctx_image_param_count(&p->view);
    const size_t at_modules = (sizeof(kctx_upload) + 7) & ~(size_t)7;
    const size_t at_fns = at_modules + nc * sizeof(kctx_res);
    const size_t at_min = (at_fns + nc * sizeof(kctx_pfunction) + 7) & ~(size_t)7;
    const size_t at_kind = at_min + np * sizeof(uint64_t);
    const size_t at_image = (at_kind + np + 7) & ~(size_t)7;
    if (size > SIZE_MAX - at_image - 7) return NULL;
    uint8_t *block = malloc(at_image + ((size + 7) & ~(size_t)7));
    if (!block) return NULL;
    memset(block, 0, at_image);
    kctx_upload *u = (kctx_upload *)(void *)block;
    u->modules = (kctx_res *)(void *)(block + at_modules);
    u->fns = (kctx_pfunction *)(void *)(block + at_fns);
    u->min_size = (uint64_t *)(void *)(block + at_min);
    u->pkind = block + at_kind;
    u->image = block + at_image;
    memcpy(u->image, image, size);
    u->size = size;
    u->crc = p->crc;
    u->nchildren = p->nchildren;
    kctx_image_view_open(&u->view, u->image, size, NULL); /* validated: our copy now */
    u->nparams = (uint32_t)np;
    for (uint32_t i = 0; i < u->nparams; i++)
        u->pkind[i] = (uint8_t)kctx_image_param_at(&u->view, i).kind;
    for (uint32_t t = 0; t < kctx_image_task_count(&u->view); t++) {
        kctx_image_task task = kctx_image_task_at(&u->view, t);
        u->total_blocks += task.block_dim;
        for (uint32_t b = 0; b < task.binding_count; b++) {
            kctx_image_binding bd = kctx_image_binding_at(&u->view, t, b);
            uint64_t need = bd.value == UINT64_MAX ? UINT64_MAX : bd.value + 1;
            if (bd.kind == KCTX_BIND_TENSOR && need > u->min_size[bd.param])
                u->min_size[bd.param] = need;
        }
    }
    return u;
}

/* K36 during the unlocked phase: an owner reset meanwhile took every
 * handle of the context, so an upload made partly after it cannot be
 * published; the caller gives back what of it still lives (a close after
 * the reset only abandons, and would leave it loaded). */
static kctx_status epoch_unchanged(kctx_ctx *c) {
    if (!c->has_epoch) return KCTX_OK;
    uint64_t now = c->epoch;
    kctx_status st = KP(c, "device_epoch", device_epoch, c->device, &now);
    if (st || now == c->epoch) return st;
    return kctx__fail(c, KCTX_DEVICE_LOST,
                      "prepare refused: the device's owner reset it while prepare loaded (K36): "
                      "every handle of the context is gone; close it");
}

static kctx_status prepare_publish(kctx_ctx *c, uint64_t id, kctx_upload *u, kctx_status st,
                                   bool fatal, bool wait_failed) {
    if (fatal) kp_fatal(c, KCTX_DEVICE_LOST); /* K29 / K31, seen unlocked */
    if (c->mode == KCTX_MODE_PROGRAM && c->phase == KCTX_PHASE_CLOSED) {
        upload_free_host(u); /* K31: the recovery's reset took every handle of it */
        return st;
    }
    if (wait_failed && c->phase == KCTX_PHASE_READY) {
        /* K17: the device may still read the upload: poisoned; the upload
         * is kept until close */
        c->phase = KCTX_PHASE_POISONED;
        kctx__set_runtime_error(c, st, kctx_thread_last_error());
        kctx__device_poison(c);
    }
    if (!st) st = epoch_unchanged(c);
    if (!st && kctx__find_callable(c, id)) /* another prepare published it meanwhile (K14) */
        st = kctx__fail(c, KCTX_DUPLICATE_ID, "callable id %llu is already prepared (K14)",
                        (unsigned long long)id);
    else if (!st)
        st = kctx__admit(c, "prepare"); /* the context changed phase meanwhile */
    /* K14: identical bytes published meanwhile by a racing prepare */
    kctx_upload *same = st ? NULL : find_identical(c, u->image, u->size, u->crc);
    if (same) {
        st = register_id(c, id, same);
        if (!st) {
            upload_release(c, u); /* ours is not needed: device memory does not grow */
            if (upload_live(u)) {
                u->next = c->uploads; /* a release that failed: close retries it */
                c->uploads = u;
            } else {
                upload_free_host(u);
            }
            return KCTX_OK;
        }
    }
    if (st == KCTX_OK) st = register_id(c, id, u);
    if (st && !wait_failed && upload_live(u) && !kctx__lost(c)) {
        /* refused at publication, or failed: give the fresh upload back */
        char msg[KCTX_MSG];
        snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
        upload_release(c, u);
        kctx__restore_msg(c, msg);
    }
    if (st == KCTX_OK || upload_live(u)) {
        u->next = c->uploads; /* kept: registered, or awaiting release at close */
        c->uploads = u;
    } else {
        upload_free_host(u);
    }
    return st;
}

kctx_status kctx_prepare(kctx_context h, uint64_t id, const void *image, size_t size) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    uint64_t t0 = kctx__now_ns();
    prep p = {0};
    p.done = true;
    if (!image || size == 0) {
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT, "image is NULL or size is 0");
    } else {
        c->preparing++; /* 0: close waits for us; our reference keeps c alive */
        pthread_mutex_unlock(&c->lock);
        kp_unlocked_begin(c);
        st = prepare_validate(c, image, size, &p);
        (void)kp_unlocked_end(); /* no platform call was made */
        char msg[KCTX_MSG];
        snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
        pthread_mutex_lock(&c->lock);
        c->preparing--;
        if (st) kctx__restore_msg(c, msg);
        /* a mode-less or closed context may have been destroyed meanwhile */
        if (atomic_load(&c->dead))
            st = kctx__fail(NULL, KCTX_INVALID_HANDLE, "0x%llx is not a live context",
                            (unsigned long long)h);
    }
    if (!st) st = prepare_check(c, id, image, size, &p); /* 1 */
    if (!p.done) {
        c->preparing++;
        pthread_mutex_unlock(&c->lock); /* 2: our reference keeps c alive */
        kp_unlocked_begin(c);
        bool wait_failed = false;
        kctx_upload *u = upload_new(image, size, &p);
        if (!u)
            st = kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation failed");
        else
            st = do_upload(c, u, &wait_failed);
        bool fatal = kp_unlocked_end();
        char msg[KCTX_MSG];
        snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
        pthread_mutex_lock(&c->lock); /* 3 */
        c->preparing--;
        if (st) kctx__restore_msg(c, msg); /* the context's copy of the message */
        if (u) st = prepare_publish(c, id, u, st, fatal, wait_failed);
        kp_relaxed_end(c);
    }
    kctx__trace_span(c, KCTX_DFX_PREPARE, t0, id, 0, st);
    kctx__ctx_release(c);
    return st;
}
