/*
 * probes_sweep.c — the fault sweep of launch (K9, K18, K19, K24), in the
 * style of SQLite's fault tests: count the platform calls one launch makes
 * (on the calling thread), then run it again and again with the 1st, 2nd,
 * 3rd... call failing once, until a run completes without hitting the
 * fault. After every run:
 *  - the status: a failing preflight call (a query) or a failing first
 *    enqueue is a plain refusal and the context stays READY (nothing was
 *    enqueued, K9); a failure once enqueueing has started poisons the
 *    context and returns the submission error (CAPTURE_BROKEN inside a
 *    capture, K24). Inside a capture, attaching the graph lifetime token
 *    comes right after the first enqueue (a refused launch must hold no
 *    token, K9/K25), so its failure is one after enqueueing started;
 *  - no core is left waiting: the caller stream and the context's streams
 *    drain within HANG_MS (K24: kctx drives the chain back to the caller);
 *  - inside a capture, the caller stream is not left on an unjoined fork:
 *    the capture ends (the caller then discards the graph); an invalidated
 *    capture is accepted only when launch said CAPTURE_BROKEN;
 *  - a refused launch leaves a working context: the same launch succeeds;
 *  - close releases everything: the device's live counts are back to the
 *    baseline (rig_close).
 * K19 is what makes "enqueueing started" computable: a launch makes all
 * its preflight calls first, then only enqueues (and, captured, the token
 * attach after the first), so with P preflight calls the enqueues start at
 * call P+1.
 */
#include "probes.h"

#include <string.h>

enum {
    ID = 1
};

typedef struct sweep_rig {
    rig r;
    job a;
    fw_stream s;
} sweep_rig;

static int sweep_open(probe *p, sweep_rig *w) {
    return rig_open(p, &w->r, NULL) && rig_prepare(&w->r, ID, "vector_add") &&
           rig_stream(&w->r, &w->s) && job_vadd(&w->r, &w->a, ID, 64, 500, 0) &&
           job_clear(&w->r, &w->a, w->s) && rig_sync(&w->r, w->s);
}

/* The platform operation kctx names in its message ("launch(worker)"). */
static void failing_step(const char *msg, char *out, size_t n) {
    const char *at = strstr(msg, "platform ");
    const char *colon = at ? strstr(at, ": ") : NULL;
    const char *end = colon ? strstr(colon, " failed") : NULL;
    if (!end) {
        /* not a platform failure in kctx's words: show its message */
        const char *m = strstr(msg, ": ");
        snprintf(out, n, "%s", m ? m + 2 : msg);
        return;
    }
    size_t len = (size_t)(end - (colon + 2));
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), colon + 2);
}

/* One launch without faults: its calls and enqueues on this thread. */
static int calibrate(probe *p, int captured, uint64_t *calls, uint64_t *enqueues) {
    sweep_rig w;
    int ok = 0, gi = -1;
    uint64_t c0, e0, c1, e1;
    if (!sweep_open(p, &w) || (captured && !rig_begin_capture(&w.r, w.s))) goto done;
    if (!HOOK_OK(p, seam_thread_calls(&c0, &e0))) goto done;
    kctx_status ls = job_launch(&w.r, &w.a, w.s);
    if (!HOOK_OK(p, seam_thread_calls(&c1, &e1))) goto done;
    if (captured && !rig_end_capture(&w.r, w.s, &gi)) goto done;
    if (!CHECK_K(ls, KCTX_OK) || (captured && !rig_replay(&w.r, gi, w.s)) || !rig_sync(&w.r, w.s) ||
        !job_expect(&w.r, &w.a, "the calibration launch"))
        goto done;
    *calls = c1 - c0;
    *enqueues = e1 - e0;
    ok = CHECK(*enqueues > 0 && *enqueues < *calls, "calibration: %llu calls, %llu enqueues",
               (unsigned long long)*calls, (unsigned long long)*enqueues);
done:
    rig_close(&w.r);
    return ok;
}

typedef struct sweep_tally {
    unsigned refused, poisoned, broken, hangs, bad;
} sweep_tally;

/* Run the launch with call k failing. Returns 0 when the fault was not hit
 * (k is past the launch's last call), 1 otherwise. */
static int sweep_one(probe *p, int captured, uint64_t k, uint64_t preflight, uint64_t total,
                     sweep_tally *t) {
    sweep_rig w;
    unsigned before = p->failures;
    int hit = 1, fault = -1;
    const char *sync_word = "-", *end_word = "-";
    char step[44] = "-";
    kctx_status ls = KCTX_OK;
    kctx_phase ph = (kctx_phase)-1;
    if (!sweep_open(p, &w)) {
        rig_close(&w.r);
        return 1;
    }
    if (captured && !rig_begin_capture(&w.r, w.s)) goto done;
    uint64_t hits = 0;
    if (!HOOK_OK(p, seam_fault_arm(k, &fault))) goto done;
    ls = job_launch(&w.r, &w.a, w.s);
    seam_fault_hits(fault, &hits);
    seam_fault_clear();
    failing_step(kctx_last_error(w.r.ctx), step, sizeof step);
    ph = rig_phase(&w.r);
    if (hits == 0) {
        /* past the last call: the launch ran clean */
        hit = 0;
        int gi = -1;
        CHECK(k == total + 1, "the sweep found %llu calls, the calibration %llu",
              (unsigned long long)(k - 1), (unsigned long long)total);
        if (CHECK_K(ls, KCTX_OK) && (!captured || rig_end_capture(&w.r, w.s, &gi)) &&
            (!captured || rig_replay(&w.r, gi, w.s)) && rig_sync(&w.r, w.s))
            job_expect(&w.r, &w.a, "the launch without a fault");
        goto done;
    }
    int started = k >= preflight + 2; /* an enqueue before the failing call succeeded */
    kctx_status want =
        !started ? KCTX_PLATFORM_ERROR : (captured ? KCTX_CAPTURE_BROKEN : KCTX_PLATFORM_ERROR);
    if (!started && k <= preflight) {
        /* a failing preflight call: any refusal will do (which one is the entry's choice) */
        CHECK(ls != KCTX_OK, "call %llu (%s) failed but launch returned OK", (unsigned long long)k,
              step);
    } else {
        CHECK(ls == want, "call %llu (%s) failed: launch returned %s, expected %s",
              (unsigned long long)k, step, kctx_status_name(ls), kctx_status_name(want));
    }
    CHECK(ph == (started ? KCTX_PHASE_POISONED : KCTX_PHASE_READY),
          "call %llu (%s) failed: phase %s, expected %s", (unsigned long long)k, step,
          kctx_phase_name(ph), started ? "POISONED" : "READY");
    if (captured) {
        fw_graph g = 0;
        fw_status es = p->fw->end_capture(w.s, &g);
        if (es == FW_OK && g) p->fw->graph_destroy(g); /* the caller discards it */
        end_word = fw_status_name(es);
        CHECK(es == FW_OK || (es == FW_CAPTURE_INVALIDATED && ls == KCTX_CAPTURE_BROKEN),
              "call %llu (%s) failed: ending the caller's capture gave %s (the caller stream was "
              "left on a fork)",
              (unsigned long long)k, step, fw_status_name(es));
    }
    /* no core left waiting: everything drains */
    kctx_resource_info res;
    fw_status ss = p->fw->stream_sync(w.s, HANG_MS);
    if (ss != FW_TIMEOUT && get_resources(w.r.ctx, &res) == KCTX_OK) {
        fw_status a = p->fw->stream_sync(res.aicpu_stream, HANG_MS);
        fw_status b = a == FW_TIMEOUT ? a : p->fw->stream_sync(res.aicore_stream, HANG_MS);
        if (a == FW_TIMEOUT || b == FW_TIMEOUT) ss = FW_TIMEOUT;
    }
    sync_word = ss == FW_TIMEOUT ? "HANG" : fw_status_name(ss);
    if (!CHECK(ss != FW_TIMEOUT,
               "call %llu (%s) failed: work still pending after %u ms: cores left waiting",
               (unsigned long long)k, step, HANG_MS)) {
        t->hangs++;
        w.r.hung = 1;
        goto done;
    }
    if (!started) {
        /* the refusal left a working context */
        if (CHECK_K(job_launch(&w.r, &w.a, w.s), KCTX_OK) && rig_sync(&w.r, w.s))
            job_expect(&w.r, &w.a, "the launch after a refused one");
        t->refused++;
    } else if (ls == KCTX_CAPTURE_BROKEN) {
        t->broken++;
    } else {
        t->poisoned++;
    }
done:;
    int closed = rig_close(&w.r);
    if (hit) {
        if (p->failures != before) t->bad++;
        pr_log(p, "k=%-2llu %-40s -> %-22s phase %-8s %s%s sync %-9s close %s",
               (unsigned long long)k, step, kctx_status_name(ls), kctx_phase_name(ph),
               captured ? "end " : "", captured ? end_word : "", sync_word,
               !closed
                   ? "FAILED"
                   : (w.r.device_reset ? "BUSY, recovered by an owner reset" : "OK, all released"));
    }
    return hit;
}

static void sweep(probe *p, int captured) {
    /* the faults are the seam's (support.h): every platform runs the sweep */
    uint64_t total = 0, enqueues = 0;
    if (!calibrate(p, captured, &total, &enqueues)) return;
    uint64_t preflight = total - enqueues - (captured ? 1 : 0); /* the token attach is no query */
    pr_log(p, "one %s launch makes %llu platform calls: %llu preflight calls, then %llu enqueues",
           captured ? "captured" : "eager", (unsigned long long)total,
           (unsigned long long)preflight, (unsigned long long)enqueues);
    sweep_tally t = {0, 0, 0, 0, 0};
    uint64_t k = 1;
    while (k <= total + 1 && sweep_one(p, captured, k, preflight, total, &t)) k++;
    CHECK(k == total + 1, "the sweep stopped at call %llu of %llu", (unsigned long long)k,
          (unsigned long long)total);
    pr_log(p,
           "%llu faults: %u refused (READY), %u poisoned, %u CAPTURE_BROKEN, %u hangs, %u runs "
           "with failed checks",
           (unsigned long long)total, t.refused, t.poisoned, t.broken, t.hangs, t.bad);
    pr_note(
        p,
        "%llu calls per launch (%llu preflight, %llu enqueues): %u refused, %u poisoned%s, every "
        "run closed "
        "clean",
        (unsigned long long)total, (unsigned long long)preflight, (unsigned long long)enqueues,
        t.refused, captured ? t.broken : t.poisoned,
        captured ? " (CAPTURE_BROKEN, capture ended)" : " (chain drained)");
}

void probe_launch_fault_sweep_eager(probe *p) { sweep(p, 0); }
void probe_launch_fault_sweep_captured(probe *p) { sweep(p, 1); }
