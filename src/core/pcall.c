/*
 * pcall.c — the core's wrappers around the platform table: one place that
 * counts calls, maps platform statuses to kctx statuses with a message
 * naming the operation, and quarantines a context on a fatal error (K29).
 */
#include "internal.h"

#include <stdio.h>

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
    default:
        return KCTX_PLATFORM_ERROR;
    }
}

kctx_status kp_map(kctx_ctx *c, const char *what, int pst) {
    if (pst == 0) return KCTX_OK;
    void *self = c->plat->self;
    kctx_pclass k = c->ops->classify(self, pst);
    kctx_status st = class_to_status(k);
    kctx_fail(c, st, "platform %s: %s failed with %s (%s)", c->plat->name, what,
              c->ops->status_name(self, pst), c->ops->last_message(self));
    if (st != KCTX_DEVICE_LOST) return st;
    /* K29: a fatal error quarantines a kernel context wherever it happens:
     * READY or POISONED, during init's creation or rollback (NEW, latched)
     * and during close's releases (CLOSING): admission is shut, every
     * handle is kept (K30) and whoever was releasing stops. */
    bool working = c->phase == KCTX_PHASE_READY || c->phase == KCTX_PHASE_POISONED ||
                   c->phase == KCTX_PHASE_CLOSING;
    if (c->mode == KCTX_MODE_KERNEL && (working || (c->phase == KCTX_PHASE_NEW && c->claimed))) {
        c->phase = KCTX_PHASE_QUARANTINED;
        kctx_set_runtime_error(c, st, kctx_thread_last_error());
    } else if (working) {
        if (c->mode == KCTX_MODE_PROGRAM) {
            char msg[KCTX_MSG];
            snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
            kctx_program_recover(c); /* K31: program mode owns the device */
            kctx_fail(c, st, "%s; program mode reset its device and abandoned its resources (K31)",
                      msg);
        }
    }
    return st;
}

int kp_current_device_raw(kctx_ctx *c, int *device) {
    atomic_fetch_add(&c->calls, 1);
    if (c->ops->bound_device) return c->ops->bound_device(c->plat->self, device);
    return c->ops->current_device(c->plat->self, device);
}

kctx_status kp_current_device(kctx_ctx *c, int *device) {
    if (c->ops->bound_device) return KP(c, "bound_device", bound_device(c->plat->self, device));
    return KP(c, "current_device", current_device(c->plat->self, device));
}

kctx_status kp_relaxed_begin(kctx_ctx *c) {
    if (c->relaxed_depth++ > 0) return KCTX_OK;
    if (!c->ops->exchange_capture_mode) return KCTX_OK; /* no capture, no capture mode */
    kctx_pcapture_mode m = KCTX_PCAPTURE_MODE_RELAXED;
    kctx_status st = KP(c, "exchange_capture_mode", exchange_capture_mode(c->plat->self, &m));
    if (st) {
        c->relaxed_depth--;
        return st;
    }
    c->saved_mode = m;
    return KCTX_OK;
}

void kp_relaxed_end(kctx_ctx *c) {
    if (--c->relaxed_depth > 0) return;
    if (!c->ops->exchange_capture_mode) return;
    kctx_pcapture_mode m = c->saved_mode;
    /* Restoring cannot be skipped: retry once; a platform that cannot even
     * exchange the mode back leaves the thread relaxed, which only makes
     * later calls on this thread more permissive. */
    atomic_fetch_add(&c->calls, 1);
    if (c->ops->exchange_capture_mode(c->plat->self, &m) != 0) {
        m = c->saved_mode;
        atomic_fetch_add(&c->calls, 1);
        (void)c->ops->exchange_capture_mode(c->plat->self, &m);
    }
}

kctx_status kp_capture_status(kctx_ctx *c, kctx_pstream s, kctx_pcapture_status *st) {
    uint64_t id = 0;
    kctx_pgraph g = 0;
    return KP(c, "stream_info", stream_info(c->plat->self, s, NULL, st, &id, &g));
}

kctx_status kctx_check_device(kctx_ctx *c) {
    int cur = -1;
    kctx_status st = kp_current_device(c, &cur);
    if (st) return st;
    if (cur != c->device)
        return kctx_fail(
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
            return kctx_fail(c, refusal, "%s: the context's %s stream is part of an %s capture",
                             what, k_stream_names[i],
                             cs == KCTX_PCAPTURE_ACTIVE ? "active" : "invalidated");
    }
    return KCTX_OK;
}

kctx_status kp_require_stream_idle(kctx_ctx *c, int which, const char *what) {
    if (!c->streams[which].live) return KCTX_OK;
    int pst =
        (atomic_fetch_add(&c->calls, 1), c->ops->stream_query(c->plat->self, c->streams[which].h));
    if (pst == 0) return KCTX_OK;
    kctx_pclass k = c->ops->classify(c->plat->self, pst);
    if (k == KCTX_PCLASS_NOT_READY)
        return kctx_fail(
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
