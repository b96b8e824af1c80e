/*
 * trace.c — trace collection (K32): host spans into a resident host buffer,
 * the device ring copied back at close (before any device memory is
 * released) or at an explicit flush, and the export through src/dfx.
 */
#include "internal.h"
#include <kctx/rt_layout.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TRACE_MAX_RECORDS (16u << 20)

uint64_t kctx__now_ns(void) {
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

kctx_status kctx__trace_setup(kctx_ctx *c, uint32_t flags, uint32_t dev_records,
                              uint32_t host_records, const char *path) {
    if (flags & ~KCTX_TRACE_ENABLE)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT, "unknown flags 0x%x", flags);
    if (!(flags & KCTX_TRACE_ENABLE)) return KCTX_OK; /* tracing off: nothing allocated */
    if (dev_records == 0 || dev_records > TRACE_MAX_RECORDS || host_records == 0 ||
        host_records > TRACE_MAX_RECORDS)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                          "trace_device_records %u / trace_host_records %u out of range 1..%u",
                          dev_records, host_records, TRACE_MAX_RECORDS);
    char name[64];
    if (!path) snprintf(name, sizeof name, "kctx-trace-%llx.json", (unsigned long long)c->handle);
    c->trace_path = strdup(path ? path : name);
    c->spans = calloc(host_records, sizeof *c->spans);
    c->devrecs = calloc(dev_records, sizeof *c->devrecs);
    if (!c->trace_path || !c->spans || !c->devrecs) {
        kctx__trace_free(c);
        return kctx__fail(c, KCTX_OUT_OF_MEMORY, "host allocation of the trace buffers failed");
    }
    c->trace = true;
    c->trace_collected = false;
    c->trace_dev_cap = dev_records;
    c->trace_host_cap = host_records;
    c->nspans = c->ndevrecs = 0;
    c->spans_dropped = c->devrecs_dropped = 0;
    c->trace_tail = 0;
    c->trace_drop_seen = 0;
    return KCTX_OK;
}

static void names_free(kctx_dfx_names *n) {
    for (uint32_t i = 0; n->functions && i < n->nfunctions; i++) free(n->functions[i]);
    free(n->functions);
    free(n->name);
}

void kctx__trace_names(kctx_ctx *c, uint64_t id, const kctx_image_view *v) {
    if (!c->trace) return;
    kctx_dfx_names *grown = realloc(c->trace_names, (c->ntrace_names + 1) * sizeof *grown);
    if (!grown) return;
    c->trace_names = grown;
    uint32_t nf = kctx_image_child_count(v);
    kctx_dfx_names n = {id, strdup(kctx_image_name(v)), calloc(nf ? nf : 1, sizeof(char *)), nf};
    bool ok = n.name && n.functions;
    for (uint32_t f = 0; ok && f < nf; f++)
        ok = (n.functions[f] = strdup(kctx_image_child_by_id(v, f).entry)) != NULL;
    if (!ok) {
        names_free(&n);
        return;
    }
    c->trace_names[c->ntrace_names++] = n;
}

void kctx__trace_free(kctx_ctx *c) {
    for (uint32_t i = 0; i < c->ntrace_names; i++) names_free(&c->trace_names[i]);
    free(c->trace_names);
    c->trace_names = NULL;
    c->ntrace_names = 0;
    free(c->trace_path);
    free(c->spans);
    free(c->devrecs);
    c->trace_path = NULL;
    c->spans = NULL;
    c->devrecs = NULL;
    c->trace = false;
}

void kctx__trace_span(kctx_ctx *c, uint32_t kind, uint64_t t0, uint64_t id, uint64_t launch_id,
                      kctx_status st) {
    if (!c->trace) return;
    if (c->nspans >= c->trace_host_cap) { /* full: the newest is dropped, and counted */
        c->spans_dropped++;
        return;
    }
    c->spans[c->nspans++] = (kctx_dfx_host_span){t0,           kctx__now_ns(), id, launch_id, kind,
                                                 (uint32_t)st, thread_number()};
}

/* The device ring (rt_layout.h) is circular: writers reserve indices from
 * trace_head while head - tail < capacity and publish each record through
 * its commit word. The host consumes from its own index (c->trace_tail):
 * it reads commit words (atomic reads) to find the committed run from the
 * tail, copies exactly those records on the upload stream (no writer
 * touches a committed record before the tail passed it), waits, and only
 * then moves the device-visible tail, which frees the slots for writers.
 * Nothing is read twice and nothing being written is read, so this is
 * legal while launches and replays run (K32). */
kctx_status kctx__trace_collect(kctx_ctx *c, bool *in_flight) {
    *in_flight = false;
    if (!c->trace || !c->mem[KCTX_MEM_TRACE_RING].live) return KCTX_OK;
    kctx_pdevptr img = c->mem[KCTX_MEM_RUNTIME_IMAGE].h;
    kctx_pdevptr ring = c->mem[KCTX_MEM_TRACE_RING].h;
    const uint64_t cap = c->trace_dev_cap, rec = sizeof(kctx_rt_trace_rec);
    uint32_t dropped = 0;
    kctx_status st = KP(c, "atomic_read(trace dropped)", atomic_read_u32,
                        img + offsetof(kctx_rt_image, trace_dropped), &dropped);
    if (st) return st;
    uint64_t n = 0; /* committed records from the tail */
    for (; n < cap; n++) {
        uint64_t i = c->trace_tail + n;
        uint32_t commit = 0;
        st = KP(c, "atomic_read(trace commit)", atomic_read_u32,
                ring + (i % cap) * rec + offsetof(kctx_rt_trace_rec, commit), &commit);
        if (st) return st;
        if (commit != (uint32_t)(i + 1)) break;
    }
    /* What the host buffer has no room for is consumed and counted as
     * dropped, so that the device ring keeps room for new records. */
    uint64_t room = c->trace_dev_cap - c->ndevrecs;
    uint64_t take = n < room ? n : room;
    if (take) {
        kctx_pstream s = c->streams[KCTX_STREAM_UPLOAD].h;
        uint64_t first = c->trace_tail % cap;
        uint64_t len1 = take < cap - first ? take : cap - first;
        st = KP(c, "memcpy_dtoh_async(trace ring)", memcpy_dtoh_async, c->devrecs + c->ndevrecs,
                ring + first * rec, (size_t)(len1 * rec), s);
        if (!st) *in_flight = true;
        if (!st && take > len1)
            st = KP(c, "memcpy_dtoh_async(trace ring, wrapped)", memcpy_dtoh_async,
                    c->devrecs + c->ndevrecs + len1, ring, (size_t)((take - len1) * rec), s);
        if (*in_flight) {
            /* Something was enqueued: wait for it even if a later enqueue
             * failed. The copy writes into c->devrecs: until it is known to
             * be over, nothing it touches may be freed (close answers BUSY). */
            char msg[KCTX_MSG] = "";
            if (st) snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
            kctx_status ws = KP(c, "stream_sync(upload, trace copy-back)", stream_sync, s,
                                c->prepare_timeout_ms);
            if (!st && ws) {
                st = ws;
                snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
            }
            if (ws == KCTX_OK || kp_require_stream_idle(c, KCTX_STREAM_UPLOAD, "trace") == KCTX_OK)
                *in_flight = false;
            if (st) {
                kctx__restore_msg(c, msg);
                return st; /* the records stay on the device for a retry */
            }
        }
    }
    c->ndevrecs += (uint32_t)take;
    c->devrecs_dropped += (uint32_t)(dropped - c->trace_drop_seen) + (n - take);
    c->trace_drop_seen = dropped;
    if (!n) return KCTX_OK;
    c->trace_tail += n;
    /* The slots are free again: tell the writers. A failure only keeps them
     * busy a while (the next collect writes the tail again). */
    return KP(c, "atomic_write(trace tail)", atomic_write_u32,
              img + offsetof(kctx_rt_image, trace_tail), (uint32_t)c->trace_tail);
}

kctx_status kctx__trace_write(kctx_ctx *c) {
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
        .device_na = c->plat->device_trace_na,
        .names = c->trace_names,
        .nnames = c->ntrace_names,
        .dev_dropped = c->devrecs_dropped,
    };
    char err[KCTX_MSG];
    if (kctx_dfx_write_chrome(c->trace_path, &t, err, sizeof err) != 0)
        return kctx__fail(c, KCTX_PLATFORM_ERROR, "writing the trace to %s failed: %s",
                          c->trace_path, err);
    return KCTX_OK;
}

kctx_status kctx_trace_flush(kctx_context h) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    uint64_t t0 = kctx__now_ns();
    if (!c->trace && !c->trace_was_on)
        st = kctx__fail(c, KCTX_UNSUPPORTED, "tracing is not enabled on this context");
    else if (c->phase == KCTX_PHASE_QUARANTINED)
        st = kctx__fail(c, KCTX_DEVICE_LOST,
                        "the context is quarantined: its device cannot be read");
    else if (c->phase != KCTX_PHASE_READY && c->phase != KCTX_PHASE_POISONED)
        st = kctx__fail(c, KCTX_INVALID_STATE, "flush of a %s context", kctx_phase_name(c->phase));
    if (!st) st = kp_relaxed_begin(c);
    if (st) {
        kctx__ctx_release(c);
        return st;
    }
    st = kctx__check_device(c);
    if (!st)
        st = kp_require_uncaptured(c, KCTX_CAPTURE_ACTIVE, "flush is not allowed during capture");
    bool in_flight = false; /* the host buffers live as long as the context: nothing to pin */
    if (!st) st = kctx__trace_collect(c, &in_flight);
    if (!st) {
        kctx__trace_span(c, KCTX_DFX_FLUSH, t0, 0, 0, KCTX_OK);
        st = kctx__trace_write(c);
    }
    kp_relaxed_end(c);
    kctx__ctx_release(c);
    return st;
}
