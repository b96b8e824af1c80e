/*
 * lifecycle.c — the latch, kernel init, program init and close.
 */
#include "internal.h"

#include "../platforms/registry.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Phase admission for entries other than init/close/destroy (K8). */
static kctx_status admit(kctx_ctx *c, const char *what) {
    switch (c->phase) {
    case KCTX_PHASE_READY:
        return KCTX_OK;
    case KCTX_PHASE_POISONED:
        return kctx__fail(c, KCTX_POISONED, "%s refused: the context is poisoned (%s)", what,
                          c->rt_msg);
    case KCTX_PHASE_QUARANTINED:
        return kctx__fail(c, KCTX_DEVICE_LOST,
                          "%s refused: the context is quarantined after a fatal device error (%s)",
                          what, c->rt_msg);
    default:
        return kctx__fail(c, KCTX_INVALID_STATE, "%s refused: the context is %s", what,
                          kctx_phase_name(c->phase));
    }
}
kctx_status kctx__admit(kctx_ctx *c, const char *what) { return admit(c, what); }

/* Failure after the latch: roll back; a complete rollback releases the
 * claim and leaves a NEW (latched) context, an incomplete one CLOSING. */
static kctx_status init_failed(kctx_ctx *c, kctx_status st, bool in_flight) {
    char msg[KCTX_MSG];
    snprintf(msg, sizeof msg, "%s", kctx_thread_last_error());
    if (c->phase == KCTX_PHASE_QUARANTINED) {
        /* K29/K30: the device was lost while init created or released: a
         * lost device cannot honour releases, so everything (and the claim)
         * is kept; close completes once the owner reset the device (K36). */
        kctx__fail(c, st,
                   "%s (the device is lost: the context is QUARANTINED; close completes after "
                   "the owner resets the device)",
                   msg);
        return st;
    }
    if (in_flight) {
        /* An upload of init may still be running: releasing now could free
         * memory the device writes. Keep everything (and the claim); close
         * releases once the streams are idle. */
        c->phase = KCTX_PHASE_CLOSING;
        kctx__fail(
            c, st,
            "%s (an init upload may still be in flight: the context is CLOSING; close releases it "
            "once idle)",
            msg);
        return st;
    }
    kctx_status rb = kctx__resources_release(c);
    if (rb == KCTX_OK) {
        kctx__claim_release(c);
        kctx__trace_free(c); /* nothing of this init is kept */
        c->phase = KCTX_PHASE_NEW;
        c->device = -1;
    } else {
        c->phase = KCTX_PHASE_CLOSING; /* sticky: close retries the rest (K7 keeps the claim) */
    }
    kctx__fail(c, st, "%s%s", msg,
               rb ? " (rollback incomplete: the context is CLOSING; close retries)" : "");
    return st;
}

/* The strategies a platform offers, for messages: "resident, host-ordered". */
static const char *strategy_list(uint32_t set, char *buf, size_t size) {
    buf[0] = 0;
    size_t len = 0;
    for (uint32_t s = KCTX_STRATEGY_RESIDENT; s <= KCTX_STRATEGY_HOST_ORDERED; s++) {
        if (!(set & KCTX_STRATEGY_BIT(s))) continue;
        int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                         kctx_strategy_name((kctx_strategy)s));
        if (w > 0 && (size_t)w < size - len) len += (size_t)w;
    }
    return buf;
}

/* The strategy a config asks for (K2: checked before the latch): the
 * config's field, else KCTX_STRATEGY from the environment, else the
 * platform's default; one the platform does not declare is UNSUPPORTED. */
static kctx_status choose_strategy(kctx_ctx *c, uint32_t asked, kctx_strategy *out) {
    const char *env = getenv("KCTX_STRATEGY");
    if (asked == KCTX_STRATEGY_DEFAULT && env && *env) {
        if (strcmp(env, "resident") == 0)
            asked = KCTX_STRATEGY_RESIDENT;
        else if (strcmp(env, "host-ordered") == 0)
            asked = KCTX_STRATEGY_HOST_ORDERED;
        else
            return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                              "KCTX_STRATEGY='%s' names no strategy (resident or host-ordered)",
                              env);
    }
    if (asked == KCTX_STRATEGY_DEFAULT) asked = c->plat->default_strategy;
    if (asked != KCTX_STRATEGY_RESIDENT && asked != KCTX_STRATEGY_HOST_ORDERED)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT, "strategy %u is not a kctx_strategy", asked);
    if (!(c->plat->strategies & KCTX_STRATEGY_BIT(asked))) {
        char offers[64];
        return kctx__fail(c, KCTX_UNSUPPORTED,
                          "platform %s does not offer the %s strategy (it offers: %s)",
                          c->plat->name, kctx_strategy_name((kctx_strategy)asked),
                          strategy_list(c->plat->strategies, offers, sizeof offers));
    }
    *out = (kctx_strategy)asked;
    return KCTX_OK;
}

static kctx_status check_common_config(kctx_ctx *c, uint32_t args_capacity, uint32_t timeout_ms,
                                       uint32_t strategy, kctx_strategy *chosen) {
    if (args_capacity < 64 || args_capacity > 65536)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT, "args_capacity %u out of range 64..65536",
                          args_capacity);
    if (timeout_ms == 0)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT, "prepare_timeout_ms must be > 0");
    return choose_strategy(c, strategy, chosen);
}

/* Device facts the resources depend on. */
static kctx_status read_device(kctx_ctx *c, int device) {
    kctx_device_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    kctx_status st = KP(c, "device_info", device_info, device, &info);
    if (st) return st;
    if (info.aicore_count == 0 || info.aicore_count > 1024)
        return kctx__fail(c, KCTX_UNSUPPORTED, "device %d reports %u cores", device,
                          info.aicore_count);
    c->core_count = info.aicore_count;
    /* the smallest of the platform's declared limit, the device's and the
     * snapshot kctx keeps on the launch path's stack */
    uint32_t limit = c->plat->max_params_size;
    if (info.max_params_size < limit) limit = info.max_params_size;
    c->max_params = limit < SNAPSHOT_LIMIT ? limit : SNAPSHOT_LIMIT;
    /* the descriptor declares epochs (and so has device_epoch); a device
     * may still lack one */
    c->has_epoch = c->plat->has_epoch && info.has_epoch != 0;
    c->epoch = 0;
    if (c->has_epoch) st = KP(c, "device_epoch", device_epoch, device, &c->epoch);
    return st;
}

/* The tail of kernel and program init, once the latch is set: create the
 * resident resources (K11) — unless `st` already failed — or roll back,
 * trace the init, restore the capture mode and leave the context. */
static kctx_status finish_init(kctx_ctx *c, kctx_status st, uint64_t t0) {
    bool in_flight = false;
    if (!st) st = kctx__resources_create(c, &in_flight);
    if (st)
        st = init_failed(c, st, in_flight);
    else
        c->phase = KCTX_PHASE_READY;
    kctx__trace_span(c, KCTX_DFX_INIT, t0, 0, 0, st);
    kp_relaxed_end(c);
    kctx__ctx_release(c);
    return st;
}

/* The published sizes of the configs (kctx.h, "Structs that grow"): the
 * first version ended with trace_path. */
static const size_t k_kernel_config_sizes[] = {offsetof(kctx_kernel_config, strategy),
                                               sizeof(kctx_kernel_config)};
static const size_t k_program_config_sizes[] = {offsetof(kctx_program_config, strategy),
                                                sizeof(kctx_program_config)};

/* The parts of a config every version has: version and reserved. */
static kctx_status check_config_head(kctx_ctx *c, uint32_t version, uint32_t reserved,
                                     const char *init) {
    if (version != KCTX_CONFIG_VERSION)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                          "config version %u not supported (this library reads version %u; use "
                          "%s)",
                          version, KCTX_CONFIG_VERSION, init);
    if (reserved != 0)
        return kctx__fail(c, KCTX_INVALID_ARGUMENT,
                          "config field 'reserved' is %u, not 0 (a field of a newer kctx.h this "
                          "library cannot honour)",
                          reserved);
    return KCTX_OK;
}

kctx_status kctx_kernel_init(kctx_context h, const kctx_kernel_config *given) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    kctx_strategy strategy = KCTX_STRATEGY_RESIDENT;
    /* arguments and config first (K2); an older caller's config is copied
     * over the defaults (kctx.h, "Structs that grow") */
    kctx_kernel_config config = KCTX_KERNEL_CONFIG_INIT;
    const kctx_kernel_config *cfg = &config;
    if (!given)
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT, "config is NULL");
    else if ((st = kctx__struct_in(c, "kernel config", given, k_kernel_config_sizes, 2, &config)))
        ;
    else if ((st = check_config_head(c, cfg->version, cfg->reserved, "KCTX_KERNEL_CONFIG_INIT")))
        ;
    else if (cfg->token_capacity == 0 || cfg->token_capacity > 65536)
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT, "token_capacity %u out of range 1..65536",
                        cfg->token_capacity);
    else
        st = check_common_config(c, cfg->args_capacity, cfg->prepare_timeout_ms, cfg->strategy,
                                 &strategy);
    /* then the latch and the phase (K1) */
    if (!st && c->mode == KCTX_MODE_PROGRAM)
        st = kctx__fail(c, KCTX_INVALID_STATE, "the context is latched to PROGRAM mode (K1)");
    if (!st && c->phase != KCTX_PHASE_NEW)
        st = kctx__fail(c, KCTX_INVALID_STATE, "kernel init of a %s context",
                        kctx_phase_name(c->phase));
    uint64_t t0 = kctx__now_ns();
    int device = -1;
    /* the trace settings are config too: checked (and their host buffers
     * made) before the latch (K2) */
    if (st) goto out;
    st = kctx__trace_setup(c, cfg->flags, cfg->trace_device_records, cfg->trace_host_records,
                           cfg->trace_path);
    if (st) goto out;
    st = kp_relaxed_begin(c);
    if (st) goto out_trace;
    /* Borrow the caller's current device (K4): read it, never set it. */
    st = kp_current_device(c, &device);
    if (!st) st = read_device(c, device);
    if (!st) st = kctx__claim_take(c, device); /* before the latch (K2, K6) */
    if (st) goto out_relaxed;
    c->mode = KCTX_MODE_KERNEL; /* the latch: never rolled back (K1) */
    c->strategy = strategy;
    c->lifecycle = NULL; /* a kernel context holds no lifecycle table (K4) */
    c->device = device;
    c->args_capacity = cfg->args_capacity;
    c->token_capacity = cfg->token_capacity;
    c->prepare_timeout_ms = cfg->prepare_timeout_ms;
    return finish_init(c, KCTX_OK, t0); /* creates, or rolls back, and leaves */

    /* refused before the latch: undo in reverse, nothing kept (K2) */
out_relaxed:
    kp_relaxed_end(c);
out_trace:
    kctx__trace_free(c);
out:
    kctx__ctx_release(c);
    return st;
}

kctx_status kctx_program_init(kctx_context h, const kctx_program_config *given) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    kctx_strategy strategy = KCTX_STRATEGY_RESIDENT;
    kctx_program_config config = KCTX_PROGRAM_CONFIG_INIT;
    const kctx_program_config *cfg = &config;
    if (!given)
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT, "config is NULL");
    else if ((st = kctx__struct_in(c, "program config", given, k_program_config_sizes, 2, &config)))
        ;
    else if ((st = check_config_head(c, cfg->version, cfg->reserved, "KCTX_PROGRAM_CONFIG_INIT")))
        ;
    else if (cfg->device < 0)
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT, "device %d", cfg->device);
    else
        st = check_common_config(c, cfg->args_capacity, cfg->prepare_timeout_ms, cfg->strategy,
                                 &strategy);
    /* Program mode's authority: the lifecycle table comes from the registry,
     * never from the descriptor a kernel context holds (K4). */
    const kctx_platform_lifecycle_ops *lifecycle = NULL;
    if (!st && !(lifecycle = kctx__platform_lifecycle(c->plat)))
        st = kctx__fail(c, KCTX_UNSUPPORTED,
                        "platform %s offers no program mode (no lifecycle table)", c->plat->name);
    /* the device is an argument: checked against the platform's count
     * before the latch and the phase (section 0's order), once the
     * platform is known to offer program mode at all */
    int count = 0;
    /* described, not mapped: a lost device seen here must not quarantine or
     * recover a context this refusal may yet leave untouched (K9) */
    if (!st) st = kp_describe(c, "device_count", KP_RAW(c, device_count, &count));
    if (!st && cfg->device >= count)
        st = kctx__fail(c, KCTX_INVALID_ARGUMENT, "device %d out of range (platform has %d)",
                        cfg->device, count);
    if (!st && c->mode == KCTX_MODE_KERNEL)
        st = kctx__fail(c, KCTX_INVALID_STATE, "the context is latched to KERNEL mode (K1, K3)");
    if (!st && c->phase != KCTX_PHASE_NEW)
        st = kctx__fail(c, KCTX_INVALID_STATE, "program init of a %s context",
                        kctx_phase_name(c->phase));
    uint64_t t0 = kctx__now_ns();
    if (st) goto out;
    st = kctx__trace_setup(c, cfg->flags, cfg->trace_device_records, cfg->trace_host_records,
                           cfg->trace_path);
    if (st) goto out;
    /* Program mode owns the device: it initialises the platform and makes
     * the device current through the lifecycle table, which only it holds. */
    c->mode = KCTX_MODE_PROGRAM;
    c->strategy = strategy;
    c->lifecycle = lifecycle;
    c->device = cfg->device;
    c->args_capacity = cfg->args_capacity;
    c->token_capacity = 1;
    c->prepare_timeout_ms = cfg->prepare_timeout_ms;
    st = KPL0(c, "lifecycle init", init);
    if (!st) st = KPL(c, "lifecycle set_device", set_device, cfg->device);
    if (!st) st = kp_relaxed_begin(c);
    if (st) goto out_device;
    return finish_init(c, read_device(c, c->device), t0); /* creates, or rolls back, and leaves */

    /* undo in reverse */
out_device:
    c->device = -1;
    kctx__trace_free(c);
out:
    kctx__ctx_release(c);
    return st;
}

/* Program mode's recovery policy (K31): it owns the device, so a fatal
 * error resets it (a lifecycle call only program mode can make), abandons
 * every handle and reports. Kernel mode never runs this. */
kctx_status kctx__program_recover(kctx_ctx *c) {
    if (c->mode != KCTX_MODE_PROGRAM || !c->lifecycle) return KCTX_INVALID_STATE;
    /* The lifecycle table resets the calling thread's current device: make
     * it the context's own first (only the device it owns may be reset,
     * K31) and give the thread its device back afterwards. */
    int prev = -1;
    bool switched = kp_current_device_raw(c, &prev) != 0 || prev != c->device;
    int pst = 0;
    if (switched) {
        pst = KPL_RAW(c, set_device, c->device);
    }
    if (!pst) pst = KPL0_RAW(c, reset_device);
    if (switched && prev >= 0) (void)KPL_RAW(c, set_device, prev);
    kctx__resources_abandon(c);
    kctx__set_runtime_error(c, KCTX_DEVICE_LOST,
                            "fatal device error: program mode reset its device and abandoned "
                            "its resources (K31)");
    c->phase = KCTX_PHASE_CLOSED; /* its handles died with the reset */
    return pst ? kp_map(c, "lifecycle reset_device", pst) : KCTX_DEVICE_LOST;
}

/* ------------------------------------------------------------------ */
/* close                                                               */

static kctx_status close_checks(kctx_ctx *c) {
    /* K25: no side effects; the capture-status query is the only thing
     * asked of a stream that may be capturing. */
    kctx_status st = kp_require_uncaptured(c, KCTX_BUSY, "close refused (K25)");
    if (!st) st = kp_require_idle(c, "close refused (K25)");
    if (st) return st;
    unsigned graphs = atomic_load(&c->tokens_in_use);
    if (graphs)
        return kctx__fail(c, KCTX_BUSY,
                          "close refused: %u live captured graph(s) still hold the context (K25)",
                          graphs);
    return KCTX_OK;
}

/* Close waits for prepares in their unlocked phase (K16). */
static kctx_status preparing_busy(kctx_ctx *c, const char *why) {
    return kctx__fail(c, KCTX_BUSY,
                      "close refused: %u prepare(s) still loading or uploading (K16)%s; retry once "
                      "they returned",
                      c->preparing, why);
}

/* After CLOSED (K32): write the trace; a write failure goes to the
 * teardown slot and does not undo CLOSED. */
static void finish_trace(kctx_ctx *c) {
    if (!c->trace) return;
    if (kctx__trace_write(c) != KCTX_OK)
        kctx__set_teardown_error(c, KCTX_PLATFORM_ERROR, kctx_thread_last_error());
    kctx__trace_free(c);
    c->trace_was_on = true; /* the config had tracing: a later flush is a phase error */
}

kctx_status kctx_close(kctx_context h) {
    kctx_ctx *c;
    kctx_status st = kctx__ctx_acquire(h, &c);
    if (st) return st;
    uint64_t t0 = kctx__now_ns();
    if (c->phase == KCTX_PHASE_CLOSED || c->phase == KCTX_PHASE_NEW) {
        c->phase = KCTX_PHASE_CLOSED;
        goto out;
    }
    /* K36: an owner reset means every handle is already gone. Reading the
     * epoch works on a lost device; a read that fails leaves close unable
     * to tell, so it refuses (nothing changed) rather than guess. */
    uint64_t now = c->epoch;
    if (c->has_epoch) {
        int pst = KP_RAW(c, device_epoch, c->device, &now);
        if (pst) {
            st = kp_map(c, "device_epoch", pst);
            goto out;
        }
    }
    if (now != c->epoch) {
        /* A prepare in its unlocked phase still works with the handles
         * (and the upload) that abandoning frees: close waits for it. */
        if (c->preparing) {
            st = preparing_busy(c, " (the device was reset: close abandons every handle once "
                                   "they returned, K36)");
            goto out;
        }
        kctx__resources_abandon(c);
        c->phase = KCTX_PHASE_CLOSED;
        kctx__claim_release(c);
        finish_trace(c); /* host spans only: the device ring went with the reset */
        goto out;
    }
    if (c->phase == KCTX_PHASE_QUARANTINED) {
        st = kctx__fail(
            c, KCTX_DEVICE_LOST,
            "close refused: the device is lost; its owner must reset it before the context can "
            "close (K30, K36)%s",
            c->has_epoch ? "" : "; this platform has no device epoch, so quarantine is terminal");
        goto out;
    }
    st = kp_relaxed_begin(c);
    if (st) goto out;
    st = kctx__check_device(c); /* K5: releases act on the current device */
    /* then the transient reasons: a prepare in its unlocked phase still
     * works with the context's handles (K16), work may still be in flight
     * (also on a CLOSING retry) */
    if (!st && c->preparing) st = preparing_busy(c, "");
    if (!st) st = close_checks(c);
    if (st) goto out_relaxed;
    /* K26/K32: the device trace comes back before any device memory is
     * released. A copy that may still run keeps everything (BUSY, phase
     * unchanged: the retry collects again); a copy that failed and cannot
     * run any more loses the device records (noted in the teardown slot; the
     * trace is still written with the host spans) and teardown goes on. */
    if (c->trace && !c->trace_collected) {
        bool in_flight = false;
        st = kctx__trace_collect(c, &in_flight);
        if (st && in_flight) {
            char cause[KCTX_MSG];
            snprintf(cause, sizeof cause, "%s", kctx_thread_last_error());
            st = kctx__fail(c, KCTX_BUSY,
                            "close refused: the trace copy-back may still be running into the host "
                            "buffer (%s); retry close once the upload stream is idle (K25, K32)",
                            cause);
        }
        if (st == KCTX_DEVICE_LOST || (st && in_flight))
            goto out_relaxed; /* quarantined (K30) or still copying: nothing released */
        if (st) kctx__set_teardown_error(c, st, kctx_thread_last_error());
        c->trace_collected = true;
    }
    c->phase = KCTX_PHASE_CLOSING; /* sticky from the first destructive step (K26) */
    st = kctx__resources_release(c);
    if (st == KCTX_OK) {
        c->phase = KCTX_PHASE_CLOSED;
        kctx__claim_release(c); /* only now (K7) */
        kctx__trace_span(c, KCTX_DFX_CLOSE, t0, 0, 0, KCTX_OK);
        finish_trace(c);
    }
out_relaxed:
    kp_relaxed_end(c);
out:
    kctx__ctx_release(c);
    return st;
}
