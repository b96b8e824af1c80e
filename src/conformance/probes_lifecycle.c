/*
 * probes_lifecycle.c — the zero-lifecycle probe (K4) and the fault sweeps
 * of kernel init, prepare and close (K7, K17, K26).
 *
 * K4 needs the platform's counters of device lifecycle calls (init,
 * finalize, set device, reset device), which the framework driver offers as
 * an optional hook (fw.h, `lifecycle`); without them the K4 probe is N/A and
 * says so.
 *
 * The sweeps follow SQLite's fault tests: count the platform calls one
 * operation makes on the calling thread, then run it again and again with
 * the 1st, 2nd, 3rd... call failing once, until a run completes without
 * hitting the fault. After every run the operation's status and the
 * context's phase must be what the contract says, a retry must work, and
 * close must bring the device back to its baseline (live streams, events,
 * modules, graphs, allocations and bytes).
 */
#include "probes.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* No operation of kctx makes anywhere near this many platform calls; a
 * sweep that gets here is not terminating. */
#define SWEEP_MAX 2000u

enum {
    ID_VADD = 1,
    ID_CHAIN = 2
};

/* ------------------------------------------------------------------ */
/* shared helpers                                                      */

static int same_counts(const fw_counts *a, const fw_counts *b) {
    return a->streams == b->streams && a->events == b->events && a->modules == b->modules &&
           a->graphs == b->graphs && a->graph_execs == b->graph_execs &&
           a->hooks_pending == b->hooks_pending && a->allocations == b->allocations &&
           a->bytes == b->bytes;
}

static void counts_text(const fw_counts *c, char *buf, size_t n) {
    snprintf(buf, n,
             "streams %" PRIu64 ", events %" PRIu64 ", modules %" PRIu64 ", graphs %" PRIu64
             ", executable graphs %" PRIu64 ", pending hooks %" PRIu64 ", allocations %" PRIu64
             " (%" PRIu64 " bytes)",
             c->streams, c->events, c->modules, c->graphs, c->graph_execs, c->hooks_pending,
             c->allocations, c->bytes);
}

/* The device's live counts equal `base`. */
static int at_baseline(probe *p, int device, const fw_counts *base, const char *when) {
    fw_counts now;
    if (!CHECK_FW_OK(p->fw, p->fw->live_counts(device, &now))) return 0;
    if (same_counts(&now, base)) return 1;
    char a[320], b[320];
    counts_text(&now, a, sizeof a);
    counts_text(base, b, sizeof b);
    return FAIL("%s: the device holds %s; its baseline is %s", when, a, b);
}

static int has_sweep_hooks(probe *p) {
    return HAS_HOOK(p, live_counts); /* the faults are the seam's (support.h) */
}

static uint64_t thread_calls(probe *p) {
    uint64_t calls = 0, enqueues = 0;
    HOOK_OK(p, seam_thread_calls(&calls, &enqueues));
    return calls;
}

/* Arm a fault on the calling thread's k-th platform call from now. */
static int arm(probe *p, uint64_t k, int *fault) { return HOOK_OK(p, seam_fault_arm(k, fault)); }

/* Disarm; returns how many calls the fault failed (0 or 1). */
static uint64_t disarm(probe *p, int fault) {
    uint64_t hits = 0;
    HOOK_OK(p, seam_fault_hits(fault, &hits));
    HOOK_OK(p, seam_fault_clear());
    return hits;
}

static kctx_phase phase_of(kctx_context ctx) {
    kctx_phase ph = (kctx_phase)-1;
    if (kctx_get_phase(ctx, &ph) != KCTX_OK) return (kctx_phase)-1;
    return ph;
}

/* Wait until nothing of the context runs on its own streams any more (the
 * AICPU, AICore and upload streams): the way a framework lets work finish
 * before it retries a close that said BUSY (work in flight). Only for
 * contexts a failure left with work that may still be running (an upload
 * whose wait failed). */
static void drain_context(probe *p, kctx_context ctx) {
    kctx_resource_info res;
    if (get_resources(ctx, &res) != KCTX_OK) return;
    if (res.aicpu_stream)
        CHECK(p->fw->stream_sync(res.aicpu_stream, HANG_MS) != FW_TIMEOUT,
              "the context's AICPU stream is still busy after %u ms", HANG_MS);
    if (res.aicore_stream)
        CHECK(p->fw->stream_sync(res.aicore_stream, HANG_MS) != FW_TIMEOUT,
              "the context's AICore stream is still busy after %u ms", HANG_MS);
    if (res.upload_stream)
        CHECK(p->fw->stream_sync(res.upload_stream, HANG_MS) != FW_TIMEOUT,
              "the context's upload stream is still busy after %u ms", HANG_MS);
}

/* An operation may succeed although one of its platform calls failed only
 * by retrying that call: kctx retries restoring the thread's capture mode,
 * the last call of every entry that switches to relaxed mode, because it
 * cannot be skipped. Then the failing call was the last of a clean run and
 * the operation made exactly one call more. */
static int retried_ok(probe *p, const char *op, uint64_t k, uint64_t total, uint64_t made) {
    return CHECK(k == total && made == total + 1,
                 "call %" PRIu64 " of %" PRIu64 " failed but %s returned OK after %" PRIu64
                 " calls (only a retried last call may be absorbed)",
                 k, total, op, made);
}

/* A vector_add launch on a fresh stream, synchronised and checked. */
static int launch_and_verify(rig *r, uint64_t id, uint64_t salt, const char *when) {
    job j;
    fw_stream s;
    return rig_stream(r, &s) && job_vadd(r, &j, id, 96, salt, 0) &&
           CHECK_K(job_launch(r, &j, s), KCTX_OK) && rig_sync(r, s) && job_expect(r, &j, when);
}

/* ------------------------------------------------------------------ */
/* K4: a whole kernel lifecycle makes no device lifecycle call         */

static int lc_read(probe *p, int device, uint64_t *v) {
    return CHECK(p->fw->lifecycle->counts(device, v) == 0, "cannot read the lifecycle counters");
}

/* The counters are unchanged since `base` (kctx made no lifecycle call). */
static int lc_unchanged(probe *p, int device, const uint64_t *base, const char *when) {
    const fw_lifecycle *lc = p->fw->lifecycle;
    uint64_t now[FW_LIFECYCLE_MAX_OPS];
    if (!lc_read(p, device, now)) return 0;
    for (unsigned op = 0; op < lc->nops; op++)
        if (!CHECK(now[op] == base[op], "K4: %s: %" PRIu64 " %s call(s) on device %d", when,
                   now[op] - base[op], lc->op_names[op], device))
            return 0;
    return 1;
}

/* One kernel context through init (a failing one first), prepare (a
 * rejected image, a failing upload), eager and captured launches, replay,
 * check, a poisoning launch, a refused and a failing close, close, destroy. */
static void k4_ordinary_lifecycle(probe *p, int *paths) {
    rig r;
    job a;
    fw_stream s;
    int gi = -1, fault = -1;
    const int capture = fw_has_capture(p->fw);
    const kctx_kernel_config cfg = probe_config(p);
    /* init failing at its 4th platform call (after the latch), then a
     * clean init of the same handle */
    kctx_context c = 0;
    if (CHECK_K(kctx_context_create(p->fw->platform, &c), KCTX_OK)) {
        if (arm(p, 4, &fault)) {
            kctx_status st = kctx_kernel_init(c, &cfg);
            if (CHECK(disarm(p, fault) == 1, "the injected fault was not hit")) {
                CHECK(st != KCTX_OK, "an init with a failing platform call returned OK");
                pr_log(p, "init with its 4th platform call failing: %s", kctx_status_name(st));
                (*paths)++;
            }
        }
        CHECK_K(kctx_close(c), KCTX_OK);
        CHECK_K(kctx_destroy(c), KCTX_OK);
    }
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add")) goto done;
    static const uint8_t junk[256] = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'};
    CHECK_K(kctx_prepare(r.ctx, 9, junk, sizeof junk), KCTX_INVALID_IMAGE);
    pr_log(p, "prepare of a malformed image: KCTX_INVALID_IMAGE");
    (*paths)++;
    if (!rig_stream(&r, &s) || !job_vadd(&r, &a, ID_VADD, 128, 41, 0) ||
        !CHECK_K(job_launch(&r, &a, s), KCTX_OK) || !rig_sync(&r, s) ||
        !job_expect(&r, &a, "the eager launch"))
        goto done;
    if (capture) {
        if (!job_clear(&r, &a, s) || !rig_begin_capture(&r, s)) goto done;
        kctx_status cs = job_launch(&r, &a, s);
        if (!rig_end_capture(&r, s, &gi) || !CHECK_K(cs, KCTX_OK) || !rig_replay(&r, gi, s) ||
            !rig_sync(&r, s) || !job_expect(&r, &a, "the replay"))
            goto done;
    } else {
        pr_dropped(p,
                   "a captured launch, its replay and close refused while its graph lives "
                   "(the %s framework driver has no capture)",
                   p->fw->name);
    }
    if (!CHECK_K(kctx_check(r.ctx, NULL), KCTX_OK)) goto done;
    /* a prepare whose first platform call fails */
    const void *img;
    size_t img_size;
    if (!rig_image(&r, "scale_add_chain", &img, &img_size) || !arm(p, 1, &fault)) goto done;
    kctx_status ps = kctx_prepare(r.ctx, ID_CHAIN, img, img_size);
    if (CHECK(disarm(p, fault) == 1, "the injected fault was not hit")) {
        CHECK(ps != KCTX_OK, "a prepare with a failing platform call returned OK");
        pr_log(p, "prepare with its first platform call failing: %s", kctx_status_name(ps));
        (*paths)++;
    }
    if (!CHECK(rig_phase(&r) == KCTX_PHASE_READY,
               "a prepare failing at its first platform call left the phase %s",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    /* a launch whose last platform call (an enqueue) fails: poisoned. Its
     * count is read on the second of two launches: the first after a
     * captured launch also asks the AICPU stream's capture state (K34). */
    uint64_t c0 = 0, per_launch = 0;
    for (int i = 0; i < 2; i++) {
        c0 = thread_calls(p);
        kctx_status ws = job_launch(&r, &a, s);
        per_launch = thread_calls(p) - c0;
        if (!CHECK_K(ws, KCTX_OK) || !rig_sync(&r, s)) goto done;
    }
    if (!arm(p, per_launch, &fault)) goto done;
    kctx_status ls = job_launch(&r, &a, s);
    if (CHECK(disarm(p, fault) == 1, "the launch did not make its %" PRIu64 "th platform call",
              per_launch)) {
        CHECK(ls != KCTX_OK, "a launch with a failing enqueue returned OK");
        CHECK(rig_phase(&r) == KCTX_PHASE_POISONED, "a failed enqueue left the phase %s",
              kctx_phase_name(rig_phase(&r)));
        kctx_check(r.ctx, NULL);
        pr_log(p, "launch with its last enqueue failing: %s, POISONED", kctx_status_name(ls));
        (*paths)++;
    }
    rig_sync(&r, s);
    /* close refused while the graph lives, then a close that fails */
    if (capture) {
        if (CHECK_K(kctx_close(r.ctx), KCTX_BUSY)) {
            pr_log(p, "close while a captured graph lives: KCTX_BUSY");
            (*paths)++;
        }
        if (!rig_drop_graph(&r, gi)) goto done;
    }
    if (!arm(p, 1, &fault)) goto done;
    kctx_status xs = kctx_close(r.ctx);
    if (CHECK(disarm(p, fault) == 1, "the injected fault was not hit")) {
        CHECK(xs != KCTX_OK, "a close with a failing platform call returned OK");
        pr_log(p, "close with its first platform call failing: %s", kctx_status_name(xs));
        (*paths)++;
    }
done:
    rig_close(&r); /* retries close, destroys, proves the baseline */
}

/* A fatal device error: quarantine, refusals, then the owner's reset and
 * a close that abandons every handle (K29, K30, K36). The owner's reset is
 * the framework's lifecycle call, the only one expected. */
static void k4_fatal_lifecycle(probe *p, int device, int *paths) {
    rig r;
    job a;
    fw_stream s;
    uint64_t before[FW_LIFECYCLE_MAX_OPS];
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_VADD, 64, 43, 0) || !lc_read(p, device, before) ||
        !HOOK_OK(p, p->fw->make_fatal(device)))
        goto done;
    CHECK_K(job_launch(&r, &a, s), KCTX_DEVICE_LOST);
    CHECK(rig_phase(&r) == KCTX_PHASE_QUARANTINED, "after DEVICE_LOST the phase is %s",
          kctx_phase_name(rig_phase(&r)));
    CHECK_K(kctx_check(r.ctx, NULL), KCTX_DEVICE_LOST);
    CHECK_K(kctx_close(r.ctx), KCTX_DEVICE_LOST);
    CHECK_K(kctx_destroy(r.ctx), KCTX_BUSY);
    if (!lc_unchanged(p, device, before, "in quarantine") ||
        !HOOK_OK(p, p->fw->owner_reset(device)))
        goto done;
    r.device_reset = 1;
    if (!lc_read(p, device, before)) goto done;
    CHECK_K(kctx_close(r.ctx), KCTX_OK);
    lc_unchanged(p, device, before, "the close after the owner's reset");
    pr_log(p, "fatal device: launch DEVICE_LOST, QUARANTINED, check/close DEVICE_LOST, destroy "
              "BUSY; after the owner's reset close OK");
    (*paths)++;
done:
    rig_close(&r);
}

void probe_kernel_lifecycle_makes_no_lifecycle_calls(probe *p) {
    const fw_lifecycle *lc = p->fw->lifecycle;
    if (lc == NULL) {
        pr_na(p, "the %s platform exposes no device lifecycle counters to this tool",
              p->fw->platform);
        return;
    }
    if (!has_sweep_hooks(p)) return;
    int device = 0;
    if (!CHECK_FW_OK(p->fw, p->fw->current_device(&device))) return;
    /* 1. The counters count: one call of each op, on purpose. */
    uint64_t base[FW_LIFECYCLE_MAX_OPS], proved[FW_LIFECYCLE_MAX_OPS];
    char why[256] = "";
    if (!lc_read(p, device, base)) return;
    if (!CHECK(lc->prove(device, why, sizeof why) == 0,
               "control: making one lifecycle call of each kind failed: %s", why) ||
        !lc_read(p, device, proved))
        return;
    for (unsigned op = 0; op < lc->nops; op++)
        if (!CHECK(proved[op] > base[op],
                   "control: a %s call made on purpose did not move its counter", lc->op_names[op]))
            return;
    /* 2. Whole kernel lifecycles, failure paths included. */
    int paths = 0;
    k4_ordinary_lifecycle(p, &paths);
    if (!lc_unchanged(p, device, proved, "over a kernel lifecycle")) return;
    int fatal = p->fw->make_fatal && p->fw->owner_reset;
    if (fatal) k4_fatal_lifecycle(p, device, &paths);
    if (!pr_ok(p)) return;
    char ops[160] = "";
    size_t n = 0;
    for (unsigned op = 0; op < lc->nops && n < sizeof ops; op++)
        n += (size_t)snprintf(ops + n, sizeof ops - n, "%s%s", op ? ", " : "", lc->op_names[op]);
    pr_note(p,
            "counters proven (one call each of %s, on purpose); init, prepare, launches, %scheck, "
            "close, destroy and %d failure paths%s made 0 lifecycle calls",
            ops, fw_has_capture(p->fw) ? "capture, replay, " : "", paths,
            fatal ? " (a fatal device error among them: only the owner's reset was counted)"
                  : " (the driver cannot make a device fatal: quarantine not exercised)");
}

/* ------------------------------------------------------------------ */
/* kernel init: each platform call failing once                        */

typedef struct init_tally {
    unsigned before_latch, rolled_back, closing, retried;
} init_tally;

/* Init of a fresh context with call k failing. Returns 0 once the fault
 * was not hit (k is past init's last call). */
static int init_once(probe *p, int device, const fw_counts *base, uint64_t k, uint64_t total,
                     init_tally *t) {
    const kctx_kernel_config cfg = probe_config(p);
    kctx_context c = 0;
    int fault = -1;
    if (!CHECK_K(kctx_context_create(p->fw->platform, &c), KCTX_OK)) return 0;
    if (!arm(p, k, &fault)) {
        kctx_destroy(c);
        return 0;
    }
    uint64_t c0 = thread_calls(p);
    kctx_status st = kctx_kernel_init(c, &cfg);
    uint64_t made = thread_calls(p) - c0;
    uint64_t hits = disarm(p, fault);
    char msg[200];
    snprintf(msg, sizeof msg, "%s", kctx_last_error(c));
    kctx_phase ph = phase_of(c);
    kctx_mode mode = KCTX_MODE_NONE;
    kctx_get_mode(c, &mode);
    const char *what = "-";
    if (hits == 0) {
        CHECK(k == total + 1, "the sweep found %" PRIu64 " calls, the calibration %" PRIu64, k - 1,
              total);
        CHECK_K(st, KCTX_OK);
    } else if (st == KCTX_OK) {
        if (retried_ok(p, "init", k, total, made)) t->retried++;
        what = "retried, OK";
    } else {
        if (ph == KCTX_PHASE_NEW) {
            /* refused before the latch (mode-less), or rolled back after it
             * (kernel-latched): either way nothing is left on the device
             * and the claim is free again */
            char when[96];
            snprintf(when, sizeof when, "after init failed at call %" PRIu64, k);
            at_baseline(p, device, base, when);
            CHECK(kctx_kernel_init(c, &cfg) == KCTX_OK,
                  "call %" PRIu64 " failed (%s): init again: %s (the claim was kept?)", k, msg,
                  kctx_thread_last_error());
            if (mode == KCTX_MODE_NONE) {
                t->before_latch++;
                what = "refused before the latch";
            } else {
                t->rolled_back++;
                what = "rolled back, init again OK";
            }
        } else if (ph == KCTX_PHASE_CLOSING) {
            /* a rollback that could not complete (an init upload may still be
             * in flight): the claim is kept and close releases the rest once
             * the work has finished (K7) */
            t->closing++;
            what = "upload in flight: CLOSING, close completes it";
            drain_context(p, c);
        } else {
            FAIL("call %" PRIu64 " failed: init left the phase %s", k, kctx_phase_name(ph));
        }
    }
    kctx_status cs = kctx_close(c);
    CHECK(cs == KCTX_OK, "call %" PRIu64 " failed: close afterwards: %s (%s)", k,
          kctx_status_name(cs), kctx_last_error(c));
    CHECK_K(kctx_destroy(c), KCTX_OK);
    char when[96];
    snprintf(when, sizeof when, "init with call %" PRIu64 " failing, then close", k);
    at_baseline(p, device, base, when);
    if (hits) pr_log(p, "k=%-3" PRIu64 " init -> %-20s %s", k, kctx_status_name(st), what);
    return hits != 0;
}

void probe_init_fault_sweep(probe *p) {
    if (!has_sweep_hooks(p)) return;
    const kctx_kernel_config cfg = probe_config(p);
    int device = 0;
    fw_counts base;
    kctx_context c = 0;
    if (!CHECK_FW_OK(p->fw, p->fw->current_device(&device)) ||
        !CHECK_FW_OK(p->fw, p->fw->live_counts(device, &base)) ||
        !CHECK_K(kctx_context_create(p->fw->platform, &c), KCTX_OK))
        return;
    uint64_t c0 = thread_calls(p);
    kctx_status st = kctx_kernel_init(c, &cfg);
    uint64_t total = thread_calls(p) - c0;
    CHECK_K(st, KCTX_OK);
    CHECK_K(kctx_close(c), KCTX_OK);
    CHECK_K(kctx_destroy(c), KCTX_OK);
    if (!pr_ok(p) || !at_baseline(p, device, &base, "after a clean init and close")) return;
    pr_log(p, "one kernel init makes %" PRIu64 " platform calls", total);
    init_tally t = {0, 0, 0, 0};
    uint64_t k = 1;
    while (k <= SWEEP_MAX && init_once(p, device, &base, k, total, &t)) k++;
    CHECK(k == total + 1, "the sweep stopped at call %" PRIu64 " of %" PRIu64, k, total);
    pr_note(p,
            "%" PRIu64 " calls per init: %u refused before the latch, %u rolled back (claim "
            "released, init again OK), %u CLOSING with an upload in flight (close completed it), "
            "%u retried; every run closed back to the device's baseline",
            total, t.before_latch, t.rolled_back, t.closing, t.retried);
}

/* ------------------------------------------------------------------ */
/* prepare: each platform call failing once                            */

typedef struct prepare_tally {
    unsigned refused, poisoned, retried;
} prepare_tally;

static int prepare_once(probe *p, uint64_t k, uint64_t total, prepare_tally *t) {
    rig r;
    int fault = -1, hit = 0;
    const void *img;
    size_t size;
    fw_counts before;
    kctx_status ps = KCTX_OK;
    const char *what = "-";
    if (!rig_open(p, &r, NULL) || !rig_image(&r, "vector_add", &img, &size) ||
        !CHECK_FW_OK(p->fw, p->fw->live_counts(r.device, &before)) || !arm(p, k, &fault))
        goto done;
    uint64_t c0 = thread_calls(p);
    ps = kctx_prepare(r.ctx, ID_VADD, img, size);
    uint64_t made = thread_calls(p) - c0;
    hit = disarm(p, fault) != 0;
    kctx_phase ph = rig_phase(&r);
    if (!hit) {
        CHECK(k == total + 1, "the sweep found %" PRIu64 " calls, the calibration %" PRIu64, k - 1,
              total);
        if (CHECK_K(ps, KCTX_OK)) launch_and_verify(&r, ID_VADD, 7, "after a clean prepare");
        goto done;
    }
    if (ps == KCTX_OK) {
        if (retried_ok(p, "prepare", k, total, made) &&
            launch_and_verify(&r, ID_VADD, 5, "after a prepare that retried its last call"))
            t->retried++;
        what = "retried, OK, launch verified";
        goto done;
    }
    kctx_resource_info res;
    if (ph == KCTX_PHASE_READY) {
        /* the upload could not be started: nothing is kept (K17) */
        char when[96];
        snprintf(when, sizeof when, "prepare refused at call %" PRIu64, k);
        at_baseline(p, r.device, &before, when);
        if (CHECK_K(get_resources(r.ctx, &res), KCTX_OK))
            CHECK(res.callables == 0 && res.uploads == 0,
                  "call %" PRIu64 " failed: prepare kept %u ids and %u uploads", k, res.callables,
                  res.uploads);
        if (CHECK_K(kctx_prepare(r.ctx, ID_VADD, img, size), KCTX_OK))
            launch_and_verify(&r, ID_VADD, 11, "after a refused prepare");
        t->refused++;
        what = "nothing kept; prepare again OK, launch verified";
    } else if (ph == KCTX_PHASE_POISONED) {
        /* the upload started but its wait failed: kept until close (K17).
         * Under HOST_ORDERED prepare uploads nothing (module loads only), so
         * nothing of it can be in flight: a poison there would be wrong. */
        CHECK(!pr_host_ordered(p),
              "call %" PRIu64 " failed: a host-ordered prepare poisoned the context, though it "
              "uploads nothing that could still be in flight",
              k);
        CHECK_K(kctx_prepare(r.ctx, ID_CHAIN, img, size), KCTX_POISONED);
        drain_context(p, r.ctx); /* the upload may still be running */
        t->poisoned++;
        what = "POISONED, upload kept until close";
    } else {
        FAIL("call %" PRIu64 " failed: prepare left the phase %s", k, kctx_phase_name(ph));
    }
done:;
    int closed = rig_close(&r);
    if (hit)
        pr_log(p, "k=%-3" PRIu64 " prepare -> %-20s %s; close %s", k, kctx_status_name(ps), what,
               closed ? "OK, all released" : "FAILED");
    return hit;
}

void probe_prepare_fault_sweep(probe *p) {
    if (!has_sweep_hooks(p)) return;
    rig r;
    const void *img;
    size_t size;
    uint64_t total = 0;
    if (rig_open(p, &r, NULL) && rig_image(&r, "vector_add", &img, &size)) {
        uint64_t c0 = thread_calls(p);
        kctx_status ps = kctx_prepare(r.ctx, ID_VADD, img, size);
        total = thread_calls(p) - c0;
        CHECK_K(ps, KCTX_OK);
    }
    rig_close(&r);
    if (!pr_ok(p)) return;
    pr_log(p, "one prepare of vector_add makes %" PRIu64 " platform calls", total);
    prepare_tally t = {0, 0, 0};
    uint64_t k = 1;
    while (k <= SWEEP_MAX && prepare_once(p, k, total, &t)) k++;
    CHECK(k == total + 1, "the sweep stopped at call %" PRIu64 " of %" PRIu64, k, total);
    if (pr_host_ordered(p))
        pr_note(p,
                "%" PRIu64 " calls per prepare (host-ordered: module loads, no upload): %u refused "
                "with nothing kept (prepare again OK, launch verified), none poisoned, %u "
                "retried; every run closed back to the baseline",
                total, t.refused, t.retried);
    else
        pr_note(p,
                "%" PRIu64 " calls per prepare: %u refused with nothing kept (prepare again OK, "
                "launch verified), %u poisoned with the upload kept, %u retried; every run closed "
                "back to the baseline",
                total, t.refused, t.poisoned, t.retried);
}

/* ------------------------------------------------------------------ */
/* close: each platform call failing once                              */

typedef struct close_tally {
    unsigned refused, closing, retried;
} close_tally;

/* A context with a prepared callable that has run. */
static int close_rig(probe *p, rig *r) {
    return rig_open(p, r, NULL) && rig_prepare(r, ID_VADD, "vector_add") &&
           launch_and_verify(r, ID_VADD, 13, "the launch before close");
}

static int close_once(probe *p, uint64_t k, uint64_t total, close_tally *t) {
    rig r;
    int fault = -1, hit = 0;
    kctx_status cs = KCTX_OK;
    const char *what = "-";
    if (!close_rig(p, &r) || !arm(p, k, &fault)) goto done;
    uint64_t c0 = thread_calls(p);
    cs = kctx_close(r.ctx);
    uint64_t made = thread_calls(p) - c0;
    hit = disarm(p, fault) != 0;
    kctx_phase ph = rig_phase(&r);
    if (!hit) {
        CHECK(k == total + 1, "the sweep found %" PRIu64 " calls, the calibration %" PRIu64, k - 1,
              total);
        CHECK_K(cs, KCTX_OK);
        goto done;
    }
    if (cs == KCTX_OK) {
        if (retried_ok(p, "close", k, total, made)) t->retried++;
        CHECK(ph == KCTX_PHASE_CLOSED, "close returned OK but left the phase %s",
              kctx_phase_name(ph));
        what = "retried, CLOSED";
        goto done;
    }
    if (ph == KCTX_PHASE_READY) {
        /* a failing check before anything was released: nothing changed */
        launch_and_verify(&r, ID_VADD, 17, "after a refused close");
        t->refused++;
        what = "refused, READY, launch verified";
    } else if (ph == KCTX_PHASE_CLOSING) {
        /* a release failed: its handle is kept, a retry releases the rest */
        t->closing++;
        what = "CLOSING; retry OK";
    } else {
        FAIL("call %" PRIu64 " failed: close left the phase %s", k, kctx_phase_name(ph));
    }
    kctx_status retry = kctx_close(r.ctx);
    CHECK(retry == KCTX_OK, "call %" PRIu64 " failed: the retried close: %s (%s)", k,
          kctx_status_name(retry), kctx_last_error(r.ctx));
    if (ph == KCTX_PHASE_CLOSING) {
        kctx_status ts = KCTX_OK;
        char msg[200] = "";
        if (CHECK_K(kctx_teardown_error(r.ctx, &ts, msg, sizeof msg), KCTX_OK))
            CHECK(ts != KCTX_OK,
                  "call %" PRIu64 " failed: after the retry the teardown error slot is empty "
                  "(K10: the first release failure is kept)",
                  k);
    }
done:;
    int closed = rig_close(&r); /* close again (idempotent), destroy, baseline */
    if (hit)
        pr_log(p, "k=%-3" PRIu64 " close -> %-20s %s; device %s", k, kctx_status_name(cs), what,
               closed ? "back to baseline" : "NOT back to baseline");
    return hit;
}

void probe_close_fault_sweep(probe *p) {
    if (!has_sweep_hooks(p)) return;
    rig r;
    uint64_t total = 0;
    if (close_rig(p, &r)) {
        uint64_t c0 = thread_calls(p);
        kctx_status cs = kctx_close(r.ctx);
        total = thread_calls(p) - c0;
        CHECK_K(cs, KCTX_OK);
    }
    rig_close(&r);
    if (!pr_ok(p)) return;
    pr_log(p, "one close makes %" PRIu64 " platform calls", total);
    close_tally t = {0, 0, 0};
    uint64_t k = 1;
    while (k <= SWEEP_MAX && close_once(p, k, total, &t)) k++;
    CHECK(k == total + 1, "the sweep stopped at call %" PRIu64 " of %" PRIu64, k, total);
    pr_note(p,
            "%" PRIu64 " calls per close: %u refused before releasing (READY, launch verified), %u "
            "left CLOSING with the failure kept (K10), %u retried; every retry closed back to the "
            "baseline",
            total, t.refused, t.closing, t.retried);
}
