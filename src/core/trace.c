/*
 * trace.c — trace collection (K32): host spans into a resident host buffer,
 * the device ring copied back at close (before any device memory is
 * released) or at an explicit flush, and the export through src/dfx.
 */
#include "internal.h"
#include "rt_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRACE_MAX_RECORDS (16u << 20)

uint64_t kctx_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_number(void) {
    static atomic_ullong next = 1;
    static _Thread_local uint64_t mine;
    if (!mine) mine = atomic_fetch_add(&next, 1);
    return mine;
}

kctx_status kctx_trace_setup(kctx_ctx *c, uint32_t flags, uint32_t dev_records,
                             uint32_t host_records, const char *path) {
    if (flags & ~KCTX_TRACE_ENABLE)
        return kctx_fail(c, KCTX_INVALID_ARGUMENT, "unknown flags 0x%x", flags);
    if (!(flags & KCTX_TRACE_ENABLE)) return KCTX_OK; /* tracing off: nothing allocated */
    if (dev_records == 0 || dev_records > TRACE_MAX_RECORDS || host_records == 0 ||
        host_records > TRACE_MAX_RECORDS)
        return kctx_fail(c, KCTX_INVALID_ARGUMENT,
                         "trace_device_records %u / trace_host_records %u out of range 1..%u",
                         dev_records, host_records, TRACE_MAX_RECORDS);
    char name[64];
    if (!path) snprintf(name, sizeof name, "kctx-trace-%llx.json", (unsigned long long)c->handle);
    c->trace_path = strdup(path ? path : name);
    c->spans = calloc(host_records, sizeof *c->spans);
    c->devrecs = calloc(dev_records, sizeof *c->devrecs);
    if (!c->trace_path || !c->spans || !c->devrecs) {
        kctx_trace_free(c);
        return kctx_fail(c, KCTX_OUT_OF_MEMORY, "host allocation of the trace buffers failed");
    }
    c->trace = true;
    c->trace_collected = false;
    c->trace_dev_cap = dev_records;
    c->trace_host_cap = host_records;
    c->nspans = c->ndevrecs = 0;
    c->spans_dropped = c->devrecs_dropped = 0;
    return KCTX_OK;
}

void kctx_trace_free(kctx_ctx *c) {
    free(c->trace_path);
    free(c->spans);
    free(c->devrecs);
    c->trace_path = NULL;
    c->spans = NULL;
    c->devrecs = NULL;
    c->trace = false;
}

void kctx_trace_span(kctx_ctx *c, uint32_t kind, uint64_t t0, uint64_t id, uint64_t launch_id,
                     kctx_status st) {
    if (!c->trace) return;
    if (c->nspans >= c->trace_host_cap) { /* full: the newest is dropped, and counted */
        c->spans_dropped++;
        return;
    }
    c->spans[c->nspans++] =
        (kctx_dfx_host_span){t0, kctx_now_ns(), id, launch_id, kind, (uint32_t)st, thread_number()};
}

kctx_status kctx_trace_collect(kctx_ctx *c, bool reset) {
    if (!c->trace || !c->mem[KCTX_MEM_TRACE_RING].live) return KCTX_OK;
    void *self = c->plat->self;
    kctx_pdevptr img = c->mem[KCTX_MEM_RUNTIME_IMAGE].h;
    uint32_t head_lo = 0, head_hi = 0, drop_lo = 0;
    kctx_status st = KP(c, "atomic_read(trace head)",
                        atomic_read_u32(self, img + offsetof(kctx_rt_image, trace_head), &head_lo));
    if (!st)
        st = KP(c, "atomic_read(trace head)",
                atomic_read_u32(self, img + offsetof(kctx_rt_image, trace_head) + 4, &head_hi));
    if (!st)
        st = KP(c, "atomic_read(trace dropped)",
                atomic_read_u32(self, img + offsetof(kctx_rt_image, trace_dropped), &drop_lo));
    if (st) return st;
    uint64_t head = ((uint64_t)head_hi << 32) | head_lo;
    uint64_t on_device = head < c->trace_dev_cap ? head : c->trace_dev_cap;
    uint64_t room = c->trace_dev_cap - c->ndevrecs;
    uint64_t n = on_device < room ? on_device : room;
    if (n) {
        st = KP(c, "memcpy_dtoh_async(trace ring)",
                memcpy_dtoh_async(self, c->devrecs + c->ndevrecs, c->mem[KCTX_MEM_TRACE_RING].h,
                                  (size_t)n * sizeof(kctx_rt_trace_rec), c->streams[0].h));
        if (!st)
            st = KP(c, "stream_sync(AICPU, trace copy-back)",
                    stream_sync(self, c->streams[0].h, c->prepare_timeout_ms));
        if (st) return st; /* the data stays on the device for a retry */
    }
    c->ndevrecs += (uint32_t)n;
    c->devrecs_dropped += drop_lo + (on_device - n);
    if (reset) {
        st = KP(c, "atomic_write(trace head)",
                atomic_write_u32(self, img + offsetof(kctx_rt_image, trace_head), 0));
        if (!st)
            st = KP(c, "atomic_write(trace head)",
                    atomic_write_u32(self, img + offsetof(kctx_rt_image, trace_head) + 4, 0));
        if (!st)
            st = KP(c, "atomic_write(trace dropped)",
                    atomic_write_u32(self, img + offsetof(kctx_rt_image, trace_dropped), 0));
    }
    return st;
}

kctx_status kctx_trace_write(kctx_ctx *c) {
    if (!c->trace) return KCTX_OK;
    kctx_dfx_trace t = {
        .platform = c->plat->name,
        .context = c->handle,
        .device = c->device,
        .core_count = c->core_count,
        .host = c->spans,
        .nhost = c->nspans,
        .host_dropped = c->spans_dropped,
        .dev = c->devrecs,
        .ndev = c->ndevrecs,
        .dev_dropped = c->devrecs_dropped,
    };
    char err[KCTX_MSG];
    if (kctx_dfx_write_chrome(c->trace_path, &t, err, sizeof err) != 0)
        return kctx_fail(c, KCTX_PLATFORM_ERROR, "writing the trace to %s failed: %s",
                         c->trace_path, err);
    return KCTX_OK;
}

kctx_status kctx_trace_flush(kctx_context h) {
    kctx_ctx *c;
    kctx_status st = kctx_ctx_acquire(h, &c);
    if (st) return st;
    uint64_t t0 = kctx_now_ns();
    if (!c->trace)
        st = kctx_fail(c, KCTX_UNSUPPORTED, "tracing is not enabled on this context");
    else if (c->phase == KCTX_PHASE_QUARANTINED)
        st =
            kctx_fail(c, KCTX_DEVICE_LOST, "the context is quarantined: its device cannot be read");
    else if (c->phase != KCTX_PHASE_READY && c->phase != KCTX_PHASE_POISONED)
        st = kctx_fail(c, KCTX_INVALID_STATE, "flush of a %s context", kctx_phase_name(c->phase));
    if (!st) st = kp_relaxed_begin(c);
    if (st) {
        kctx_ctx_release(c);
        return st;
    }
    st = kctx_check_device(c);
    if (!st)
        st = kp_require_uncaptured(c, KCTX_CAPTURE_ACTIVE, "flush is not allowed during capture");
    if (!st) st = kp_require_idle(c, "flush refused");
    if (!st) st = kctx_trace_collect(c, true);
    if (!st) {
        kctx_trace_span(c, KCTX_DFX_FLUSH, t0, 0, 0, KCTX_OK);
        st = kctx_trace_write(c);
    }
    kp_relaxed_end(c);
    kctx_ctx_release(c);
    return st;
}
