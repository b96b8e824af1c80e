/*
 * probes_guard.c — the launch guard, graph lifetimes, poison and
 * quarantine (issue 5, conformance items 9-11): unordered replays are
 * detected on the device and never corrupt or hang (K23), two executable
 * copies of one graph (one launch id) included; close counts live
 * graphs (K25); a fatal device quarantines the context until its owner
 * resets it (K29, K30, K36); a poisoned context's graphs stop themselves
 * (K35), whatever poisoned it.
 */
#include "probes.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

enum {
    ID_VADD = 1,
    ID_FAIL = 4
};

static int capture_launch(rig *r, const job *j, fw_stream s, int *gi) {
    if (!rig_begin_capture(r, s)) return 0;
    int ok = CHECK_K(job_launch(r, j, s), KCTX_OK);
    int ended = rig_end_capture(r, s, gi);
    return ok && ended;
}

static int has_holds(probe *p) {
    return HAS_HOOK(p, hold_arm) && HAS_HOOK(p, hold_wait_reached) && HAS_HOOK(p, hold_release);
}

/* Two graphs A (on sa) and B (on sb) of one context, replayed on two
 * unordered streams and made to overlap deterministically:
 *   1. hold the next launch right after its acquire step (the scheduler
 *      under RESIDENT, the first task kernel under HOST_ORDERED), replay A,
 *      wait until held: A's acquire step ran, A holds the launch guard;
 *   2. hold the next launch again, replay B, wait until held: B's acquire
 *      step ran and found the guard held (it wrote CONCURRENT_LAUNCH);
 *   3. RESIDENT: release B, then A (B's worker gang may hold the cores
 *      while it waits for its scheduler, so B goes first). HOST_ORDERED:
 *      release A and let its stream drain first, then B: A's task runs only
 *      after B's acquire wrote CONCURRENT_LAUNCH, so it must stop at its
 *      gate — a hold that did not keep A after its acquire step (A not yet
 *      holding the guard, B's acquire not yet run) lets A's task run and
 *      write its outputs, and the probe sees it.
 * Both streams must then drain within HANG_MS. What the two runs did
 * depends on the strategy (see the probes). */
static int overlap_replays(rig *r, int ga, fw_stream sa, int gb, fw_stream sb) {
    probe *p = r->p;
    const fw_driver *fw = r->fw;
    int ha = -1, hb = -1, ok = 0;
    if (!HOOK_OK(p, rig_arm_after_acquire(r, &ha))) return 0;
    if (!rig_replay(r, ga, sa) || !HOOK_OK(p, fw->hold_wait_reached(ha, HOLD_MS))) goto out;
    if (!HOOK_OK(p, rig_arm_after_acquire(r, &hb))) goto out;
    if (!rig_replay(r, gb, sb) || !HOOK_OK(p, fw->hold_wait_reached(hb, HOLD_MS))) goto out;
    ok = 1;
out:;
    fw_status a = FW_OK, b = FW_OK;
    if (ok && pr_host_ordered(p)) {
        fw->hold_release(ha);
        a = fw->stream_sync(sa, HANG_MS);
        fw->hold_release(hb);
    } else {
        if (hb >= 0) fw->hold_release(hb);
        if (ha >= 0) fw->hold_release(ha);
        a = fw->stream_sync(sa, HANG_MS);
    }
    b = fw->stream_sync(sb, HANG_MS);
    if (a != FW_TIMEOUT) a = fw->stream_sync(sa, HANG_MS);
    if (a == FW_TIMEOUT || b == FW_TIMEOUT) {
        r->hung = 1;
        FAIL("the overlapping replays hang: stream A %s, stream B %s after %u ms",
             fw_status_name(a), fw_status_name(b), HANG_MS);
        return 0;
    }
    return ok && CHECK_FW_OK(p->fw, a) && CHECK_FW_OK(p->fw, b);
}

/* ------------------------------------------------------------------ */
/* 9. unordered replays: CONCURRENT_LAUNCH, no corruption, no hang (K23) */

void probe_unordered_replays_detected_as_concurrent_launch(probe *p) {
    rig r;
    job a, b;
    fw_stream sa, sb;
    int ga = -1, gb = -1;
    if (!has_holds(p)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &sa) ||
        !rig_stream(&r, &sb) || !job_vadd(&r, &a, ID_VADD, 512, 20, 0) ||
        !job_vadd(&r, &b, ID_VADD, 300, 21, 0) || !capture_launch(&r, &a, sa, &ga) ||
        !capture_launch(&r, &b, sb, &gb))
        goto done;
    if (!job_clear(&r, &a, sa) || !job_clear(&r, &b, sb) || !rig_sync(&r, sa) || !rig_sync(&r, sb))
        goto done;
    if (!overlap_replays(&r, ga, sa, gb, sb)) goto done;
    /* RESIDENT: the holder's scheduler runs its tasks, the refused run's
     * scheduler exits. HOST_ORDERED: the refused acquire's CONCURRENT_LAUNCH
     * closes every task gate, so both runs stop at their next task, the
     * holder's included (contract section 0b). */
    const int ho = pr_host_ordered(p);
    if (!(ho ? job_untouched(&r, &a, "the guard holder A (host-ordered: stopped at its gate)")
             : job_expect(&r, &a, "the guard holder A")) ||
        !job_untouched(&r, &b, "the refused replay B"))
        goto done;
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    if (!CHECK_K(kctx_check(r.ctx, &rep), KCTX_CONCURRENT_LAUNCH) ||
        !CHECK(rep.device_status == KCTX_CONCURRENT_LAUNCH && rep.concurrent_launches == 1,
               "check report: %s, %u concurrent launches (expected CONCURRENT_LAUNCH, 1)",
               kctx_status_name(rep.device_status), rep.concurrent_launches))
        goto done;
    kctx_status slot = KCTX_OK;
    if (!CHECK_K(kctx_runtime_error(r.ctx, &slot, NULL, 0), KCTX_OK) ||
        !CHECK(slot == KCTX_CONCURRENT_LAUNCH, "runtime error slot holds %s",
               kctx_status_name(slot)) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_POISONED, "phase %s after the reported violation",
               kctx_phase_name(rig_phase(&r))) ||
        !CHECK_K(job_launch(&r, &a, sa), KCTX_POISONED))
        goto done;
    pr_note(p,
            "A held after its acquire step, B replayed on another stream: B refused (outputs "
            "untouched), %s, both streams drained; check: CONCURRENT_LAUNCH (1), context poisoned",
            ho ? "A stopped at its next task gate too (host-ordered, outputs untouched)"
               : "A completed correctly");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 9b. two executable copies of one graph, unordered (K23)              */

/* Kills: an acquire step that takes the launch guard when its holder is
 * the caller's own launch id (a re-entrant guard). Two executable graphs
 * instantiated from one captured graph carry the same launch id: the guard
 * goes from free to taken only, so the second copy's acquire, finding the
 * guard held by "itself", must be refused like any other overlap. */
void probe_two_copies_of_one_graph_detected_as_concurrent_launch(probe *p) {
    rig r;
    job a;
    fw_stream s, sa, sb;
    int g1 = -1;
    if (!has_holds(p)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !rig_stream(&r, &sa) || !rig_stream(&r, &sb) || !job_vadd(&r, &a, ID_VADD, 512, 22, 0) ||
        !capture_launch(&r, &a, s, &g1))
        goto done;
    /* the second executable copy of the same graph (the rig destroys it);
     * a framework whose graphs are their one executable (ACL's models)
     * answers FW_NA */
    if (!CHECK(r.ngraphs < RIG_MAX_GRAPHS, "too many graphs in one probe")) goto done;
    const int g2 = (int)r.ngraphs;
    memset(&r.graphs[g2], 0, sizeof r.graphs[g2]);
    if (!HOOK_OK(p, p->fw->graph_instantiate(r.graphs[g1].g, &r.graphs[g2].x))) goto done;
    r.ngraphs++;
    if (!job_clear(&r, &a, sa) || !rig_sync(&r, sa)) goto done;
    if (!overlap_replays(&r, g1, sa, g2, sb)) goto done;
    /* RESIDENT: copy 1 (the holder) computes the launch once, copy 2's
     * refused run writes nothing over it. HOST_ORDERED: the refusal closes
     * every gate, both copies stop at their next task (outputs untouched). */
    const int ho = pr_host_ordered(p);
    if (!(ho ? job_untouched(&r, &a, "both copies (host-ordered: stopped at their gates)")
             : job_expect(&r, &a, "copy 1, the guard holder, beside the refused copy 2")))
        goto done;
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    if (!CHECK_K(kctx_check(r.ctx, &rep), KCTX_CONCURRENT_LAUNCH) ||
        !CHECK(rep.device_status == KCTX_CONCURRENT_LAUNCH && rep.concurrent_launches == 1,
               "check report: %s, %u concurrent launches (expected CONCURRENT_LAUNCH, 1)",
               kctx_status_name(rep.device_status), rep.concurrent_launches) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_POISONED, "phase %s after the reported violation",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    pr_note(p,
            "two executable copies of one graph (one launch id), copy 1 held after its acquire "
            "step, copy 2 replayed on another stream: copy 2 refused, %s, both streams drained; "
            "check: CONCURRENT_LAUNCH (1), context poisoned",
            ho ? "copy 1 stopped at its next task gate (host-ordered, outputs untouched)"
               : "copy 1 computed the launch correctly");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 10. close with live graphs: BUSY with the count, then OK (K25)       */

static int close_busy(rig *r, unsigned count, const char *when) {
    kctx_resource_info res;
    if (!CHECK_K(kctx_close(r->ctx), KCTX_BUSY)) return 0;
    const char *msg = kctx_last_error(r->ctx);
    return CHECK(msg_has_number(msg, count), "%s: the refusal does not give the count %u: \"%s\"",
                 when, count, msg) &&
           CHECK(rig_phase(r) == KCTX_PHASE_READY, "%s: refused close changed the phase to %s",
                 when, kctx_phase_name(rig_phase(r))) &&
           CHECK_K(get_resources(r->ctx, &res), KCTX_OK) &&
           CHECK(res.tokens_in_use == count, "%s: %u lifetime tokens in use, expected %u", when,
                 res.tokens_in_use, count);
}

void probe_close_refused_while_graphs_live(probe *p) {
    rig r;
    job a, b;
    fw_stream s;
    int ga = -1, gb = -1;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_VADD, 128, 30, 0) || !job_vadd(&r, &b, ID_VADD, 64, 31, 0) ||
        !capture_launch(&r, &a, s, &ga) || !capture_launch(&r, &b, s, &gb))
        goto done;
    if (!close_busy(&r, 2, "two live graphs")) goto done;
    /* the refused close changed nothing: the graphs still run */
    if (!job_clear(&r, &a, s) || !rig_replay(&r, ga, s) || !rig_sync(&r, s) ||
        !job_expect(&r, &a, "replay after the refused close"))
        goto done;
    if (!rig_drop_graph(&r, ga) || !close_busy(&r, 1, "one live graph")) goto done;
    /* the executable graph alone still holds the launch */
    if (!CHECK_FW_OK(p->fw, p->fw->graph_destroy(r.graphs[gb].g))) goto done;
    r.graphs[gb].g = 0;
    if (!close_busy(&r, 1, "only the executable graph left")) goto done;
    if (!CHECK_FW_OK(p->fw, p->fw->exec_destroy(r.graphs[gb].x))) goto done;
    r.graphs[gb].x = 0;
    if (!CHECK_K(kctx_close(r.ctx), KCTX_OK) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_CLOSED, "phase %s after close",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    pr_note(p,
            "close: BUSY naming 2, then 1 live graphs (also with only the executable graph left), "
            "phase unchanged; OK once both were destroyed");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 11. fatal device: DEVICE_LOST, quarantine, owner reset (K29,K30,K36) */

/* After an owner reset every framework object of the device is gone:
 * forget the stale handles (a freed address may be reused by the next
 * allocation, so they must never be freed). */
static void rig_forget_device_objects(rig *r) {
    r->device_reset = 1;
    r->nbufs = 0;
    r->nstreams = 0;
    for (unsigned i = 0; i < r->ngraphs; i++) r->graphs[i].g = r->graphs[i].x = 0;
}

void probe_fatal_device_quarantines_until_owner_reset(probe *p) {
    rig r, r2;
    int r2_open = 0;
    job a, a2;
    fw_stream s, s2;
    const void *img;
    size_t img_size;
    if (!HAS_HOOK(p, make_fatal) || !HAS_HOOK(p, owner_reset)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_image(&r, "scale_add_chain", &img, &img_size) || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_VADD, 100, 40, 0) || !CHECK_K(job_launch(&r, &a, s), KCTX_OK) ||
        !rig_sync(&r, s) || !job_expect(&r, &a, "before the fault"))
        goto done;
    if (!HOOK_OK(p, p->fw->make_fatal(r.device))) goto done;
    if (!CHECK_K(job_launch(&r, &a, s), KCTX_DEVICE_LOST) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_QUARANTINED, "phase %s after DEVICE_LOST",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    kctx_status slot = KCTX_OK;
    if (!CHECK_K(kctx_runtime_error(r.ctx, &slot, NULL, 0), KCTX_OK) ||
        !CHECK(slot == KCTX_DEVICE_LOST, "runtime error slot holds %s", kctx_status_name(slot)) ||
        !CHECK_K(job_launch(&r, &a, s), KCTX_DEVICE_LOST) ||
        !CHECK_K(kctx_prepare(r.ctx, 9, img, img_size), KCTX_DEVICE_LOST) ||
        !CHECK_K(kctx_check(r.ctx, NULL), KCTX_DEVICE_LOST) ||
        !CHECK_K(kctx_close(r.ctx), KCTX_DEVICE_LOST) || !CHECK_K(kctx_destroy(r.ctx), KCTX_BUSY) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_QUARANTINED, "phase %s after the refusals",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    /* The owner resets the device: every object of it is gone, and close
     * abandons the context's handles without a platform call (K36). */
    if (!HOOK_OK(p, p->fw->owner_reset(r.device))) goto done;
    rig_forget_device_objects(&r);
    if (!CHECK_K(kctx_close(r.ctx), KCTX_OK) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_CLOSED, "phase %s after close",
               kctx_phase_name(rig_phase(&r))) ||
        !CHECK_K(kctx_destroy(r.ctx), KCTX_OK))
        goto done;
    r.ctx_live = 0;
    /* the claim was released: a new context borrows the reset device */
    r2_open = 1;
    if (!rig_open(p, &r2, NULL) || !rig_prepare(&r2, ID_VADD, "vector_add") ||
        !rig_stream(&r2, &s2) || !job_vadd(&r2, &a2, ID_VADD, 100, 41, 0) ||
        !CHECK_K(job_launch(&r2, &a2, s2), KCTX_OK) || !rig_sync(&r2, s2) ||
        !job_expect(&r2, &a2, "a new context after the owner reset"))
        goto done;
    pr_note(p, "launch: DEVICE_LOST, QUARANTINED; launch/prepare/check/close DEVICE_LOST, destroy "
               "BUSY; after the owner reset close OK (no platform call), a new context works");
done:
    if (r2_open) rig_close(&r2);
    rig_close(&r);
}

/* The captured half: a graph captured before the device is lost. */
void probe_fatal_device_graphs_gone_after_owner_reset(probe *p) {
    rig r;
    job a;
    fw_stream s, s2;
    int g = -1;
    if (!HAS_HOOK(p, make_fatal) || !HAS_HOOK(p, owner_reset)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_VADD, 100, 42, 0) || !capture_launch(&r, &a, s, &g) ||
        !job_clear(&r, &a, s) || !rig_replay(&r, g, s) || !rig_sync(&r, s) ||
        !job_expect(&r, &a, "a replay before the fault"))
        goto done;
    fw_exec pre_fault = r.graphs[g].x;
    if (!HOOK_OK(p, p->fw->make_fatal(r.device))) goto done;
    /* A replay on the lost device fails in the platform (kctx runs no host
     * code then); the next kctx entry that touches the device sees the loss
     * and quarantines the context (K29). */
    fw_status lost = p->fw->graph_launch(pre_fault, s);
    if (!CHECK(lost != FW_OK, "a replay on the lost device was accepted (%s)",
               fw_status_name(lost)) ||
        !CHECK_K(kctx_check(r.ctx, NULL), KCTX_DEVICE_LOST) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_QUARANTINED, "phase %s after check saw the loss",
               kctx_phase_name(rig_phase(&r))) ||
        !CHECK_K(kctx_close(r.ctx), KCTX_DEVICE_LOST))
        goto done;
    /* The owner resets the device. The platform destroys every object of
     * the device with it, graphs included, so "a graph captured before the
     * fault replayed after the reset" cannot exist: its replay must be
     * refused by the platform itself (probe poisoned_context_graphs_refuse_
     * replays covers the device side's K35 refusal). */
    if (!HOOK_OK(p, p->fw->owner_reset(r.device))) goto done;
    rig_forget_device_objects(&r);
    if (!rig_stream(&r, &s2)) goto done;
    fw_status rs = p->fw->graph_launch(pre_fault, s2);
    if (!CHECK(rs != FW_OK, "the pre-fault graph replayed after the owner reset (%s)",
               fw_status_name(rs)))
        goto done;
    if (!CHECK_K(kctx_close(r.ctx), KCTX_OK) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_CLOSED, "phase %s after close",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    pr_note(p,
            "a replay on the lost device failed (%s), check: DEVICE_LOST, QUARANTINED, close "
            "DEVICE_LOST; after the owner reset the pre-fault graph is gone (replay: %s), close OK",
            fw_status_name(lost), fw_status_name(rs));
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 11'. a device error poisons; earlier graphs refuse to run (K35)      */

/* Replays graph gi on a fresh stream `times` times: each must complete
 * without touching j's outputs; check must count them. */
static int expect_refused_replays(rig *r, int gi, const job *j, unsigned times,
                                  uint32_t refused_before, const char *why) {
    probe *p = r->p;
    fw_stream u;
    if (!rig_stream(r, &u) || !job_clear(r, j, u) || !rig_sync(r, u)) return 0;
    for (unsigned k = 0; k < times; k++)
        if (!rig_replay(r, gi, u)) return 0;
    fw_status st = r->fw->stream_sync(u, HANG_MS);
    if (st == FW_TIMEOUT) r->hung = 1;
    if (!CHECK(st != FW_TIMEOUT, "%s: the refused replays hang", why) || !CHECK_FW_OK(p->fw, st))
        return 0;
    char when[160];
    snprintf(when, sizeof when, "%s: replays of a graph captured before", why);
    if (!job_untouched(r, j, when)) return 0;
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    kctx_check(r->ctx, &rep);
    return CHECK(rep.refused_replays == refused_before + times,
                 "%s: check reports %u refused replays, expected %u", why, rep.refused_replays,
                 refused_before + times);
}

/* Prepare the failing callable (a child that reports an error on the
 * device) under ID_FAIL, with its buffers. */
static int prepare_failing(rig *r, kctx_arg *args) {
    const void *bad;
    size_t bad_size;
    fw_devptr m[3];
    if (!rig_failing_image(r, &bad, &bad_size) ||
        !CHECK_K(kctx_prepare(r->ctx, ID_FAIL, bad, bad_size), KCTX_OK))
        return 0;
    for (int i = 0; i < 3; i++)
        if (!rig_alloc(r, 16 * sizeof(float), &m[i])) return 0;
    const kctx_arg a[6] = {KCTX_TENSOR(m[0], 64), KCTX_TENSOR(m[1], 64), KCTX_TENSOR(m[2], 64),
                           KCTX_SCALAR(4),        KCTX_SCALAR(4),        KCTX_SCALAR(4)};
    memcpy(args, a, sizeof a);
    return 1;
}

/* A child kernel fails on the device. Launch success means submitted; the
 * failure reaches the check call, which poisons the context, and the
 * caller's stream t where a failed kernel fails its stream (fw.h). */
static int poison_by_device_error(rig *r, const kctx_arg *bad_args, fw_stream t,
                                  kctx_check_report *rep) {
    probe *p = r->p;
    *rep = (kctx_check_report)KCTX_CHECK_REPORT_INIT;
    return CHECK_K(kctx_launch(r->ctx, ID_FAIL, bad_args, 6, t), KCTX_OK) &&
           CHECK_FW(p->fw, p->fw->stream_sync(t, SYNC_MS),
                    p->fw->task_failure_leaves_streams_ok ? FW_OK : FW_DEVICE_ERROR) &&
           CHECK_K(kctx_check(r->ctx, rep), KCTX_DEVICE_ERROR) &&
           CHECK(rep->device_status == KCTX_DEVICE_ERROR && rep->error_detail == 0,
                 "check report: %s, failed task %llu (expected DEVICE_ERROR, task 0)",
                 kctx_status_name(rep->device_status), (unsigned long long)rep->error_detail) &&
           CHECK(rig_phase(r) == KCTX_PHASE_POISONED, "phase %s after the device error",
                 kctx_phase_name(rig_phase(r)));
}

/* The eager half: the host side refuses every launch and prepare once a
 * device error poisoned the context. */
void probe_poisoned_context_refuses_launches(probe *p) {
    rig r;
    job a;
    fw_stream s, t;
    kctx_arg bad_args[6];
    const void *img;
    size_t img_size;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !prepare_failing(&r, bad_args) || !rig_image(&r, "scale_add_chain", &img, &img_size) ||
        !rig_stream(&r, &s) || !rig_stream(&r, &t) || !job_vadd(&r, &a, ID_VADD, 256, 51, 0) ||
        !CHECK_K(job_launch(&r, &a, s), KCTX_OK) || !rig_sync(&r, s) ||
        !job_expect(&r, &a, "the launch before the poison"))
        goto done;
    kctx_check_report rep;
    if (!poison_by_device_error(&r, bad_args, t, &rep)) goto done;
    kctx_status slot = KCTX_OK;
    if (!CHECK_K(kctx_runtime_error(r.ctx, &slot, NULL, 0), KCTX_OK) ||
        !CHECK(slot == KCTX_DEVICE_ERROR, "runtime error slot holds %s", kctx_status_name(slot)) ||
        !job_clear(&r, &a, s) || !rig_sync(&r, s) ||
        !CHECK_K(job_launch(&r, &a, s), KCTX_POISONED) ||
        !CHECK_K(kctx_prepare(r.ctx, 7, img, img_size), KCTX_POISONED) || !rig_sync(&r, s) ||
        !job_untouched(&r, &a, "after the refused launch") ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_POISONED, "phase %s after the refusals",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    pr_note(p, "a failing child poisoned the context (check: DEVICE_ERROR, task 0; runtime error "
               "slot DEVICE_ERROR); launch and prepare then POISONED, nothing ran, close OK");
done:
    rig_close(&r);
}

/* The captured half: graphs captured before the poison refuse to run on
 * the device (K35). */
void probe_poisoned_context_graphs_refuse_replays(probe *p) {
    rig r;
    job a;
    fw_stream s, t;
    int g = -1;
    kctx_arg bad_args[6];
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !prepare_failing(&r, bad_args) || !rig_stream(&r, &s) || !rig_stream(&r, &t) ||
        !job_vadd(&r, &a, ID_VADD, 256, 50, 0))
        goto done;
    if (!capture_launch(&r, &a, s, &g) || !job_clear(&r, &a, s) || !rig_replay(&r, g, s) ||
        !rig_sync(&r, s) || !job_expect(&r, &a, "the graph before the poison"))
        goto done;
    kctx_check_report rep;
    if (!poison_by_device_error(&r, bad_args, t, &rep)) goto done;
    if (!expect_refused_replays(&r, g, &a, 3, rep.refused_replays, "after a device error"))
        goto done;
    if (!CHECK_K(job_launch(&r, &a, s), KCTX_POISONED)) goto done;
    pr_note(p, "a failing child poisoned the context (check: DEVICE_ERROR, task 0); 3/3 replays of "
               "a graph captured before were refused without touching outputs and counted by "
               "check");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 11''. poison by CONCURRENT_LAUNCH + check stops graphs at once (K35) */

/* check, called on a helper thread, so the probe can tell whether check
 * returns before the device write it makes (if any) has landed. */
typedef struct check_call {
    rig *r;
    kctx_status st;
    fw_status set_dev;
    int returned;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} check_call;

static void *check_thread(void *argp) {
    check_call *cc = argp;
    cc->set_dev = cc->r->fw->set_device(cc->r->device);
    kctx_status st = cc->set_dev == FW_OK ? kctx_check(cc->r->ctx, NULL) : KCTX_INVALID_STATE;
    pthread_mutex_lock(&cc->mu);
    cc->st = st;
    cc->returned = 1;
    pthread_cond_broadcast(&cc->cv);
    pthread_mutex_unlock(&cc->mu);
    return NULL;
}

/* Wait (bounded) until check has returned. */
static int check_returned(check_call *cc, unsigned ms) {
    return pr_wait_flag(&cc->mu, &cc->cv, &cc->returned, ms);
}

void probe_concurrent_launch_poison_stops_graphs_at_once(probe *p) {
    rig r;
    job a, b;
    fw_stream sa, sb, sc;
    int ga = -1, gb = -1, hc = -1, joined = 1;
    pthread_t th;
    check_call cc = {NULL, KCTX_OK, FW_OK, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    if (!has_holds(p)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &sa) ||
        !rig_stream(&r, &sb) || !rig_stream(&r, &sc) || !job_vadd(&r, &a, ID_VADD, 512, 60, 0) ||
        !job_vadd(&r, &b, ID_VADD, 256, 61, 0) || !capture_launch(&r, &a, sa, &ga) ||
        !capture_launch(&r, &b, sb, &gb) || !overlap_replays(&r, ga, sa, gb, sb) ||
        !job_clear(&r, &a, sc) || !rig_sync(&r, sc))
        goto done;
    /* Whatever device write check makes to stop the context's graphs, if
     * it goes through a copy, hold it; then see whether check returned
     * while its write was still pending. */
    if (!HOOK_OK(p, p->fw->hold_arm(FW_HOLD_COPY, r.device, 0, &hc))) goto done;
    cc.r = &r;
    if (!CHECK(pthread_create(&th, NULL, check_thread, &cc) == 0, "cannot start a thread"))
        goto done;
    joined = 0;
    int held = p->fw->hold_wait_reached(hc, 2000) == FW_OK;
    int early = check_returned(&cc, 5000);
    const char *how;
    if (held && early) {
        /* check returned; its write is provably not done. A replay now
         * must still be refused (K35: "afterwards the graphs refuse"). */
        how = "check returned while its device write was still pending (held)";
        if (!rig_replay(&r, ga, sc)) goto done;
        fw_status st = p->fw->stream_sync(sc, HANG_MS);
        if (st == FW_TIMEOUT) r.hung = 1;
        p->fw->hold_release(hc);
        hc = -1;
        if (!CHECK(st != FW_TIMEOUT, "the replay after check hangs") || !CHECK_FW_OK(p->fw, st))
            goto done;
    } else {
        how = held ? "check waited for its device write" : "check made no copy";
        p->fw->hold_release(hc);
        hc = -1;
        if (!rig_replay(&r, ga, sc) || !rig_sync(&r, sc)) goto done;
    }
    pthread_join(th, NULL);
    joined = 1;
    if (!CHECK_FW_OK(p->fw, cc.set_dev) || !CHECK_K(cc.st, KCTX_CONCURRENT_LAUNCH)) goto done;
    char when[200];
    snprintf(when, sizeof when, "a replay enqueued after check returned CONCURRENT_LAUNCH (%s)",
             how);
    if (!job_untouched(&r, &a, when)) goto done;
    pr_note(p, "after check reported CONCURRENT_LAUNCH, a replay was refused at once (%s)", how);
done:
    if (hc >= 0) p->fw->hold_release(hc);
    if (!joined) pthread_join(th, NULL);
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 11'''. poison by a failed partial enqueue (K24, K35)                 */

/* An eager launch of e on t whose second enqueue fails: START is recorded
 * on the caller stream, so enqueueing has started and the context is
 * poisoned (K24); kctx still drives the chain back to t. *ls: what launch
 * returned. */
static int poison_by_partial_enqueue(rig *r, const job *e, fw_stream t, kctx_status *ls) {
    probe *p = r->p;
    int fault = -1;
    /* An eager launch: its preflight calls, then its enqueues (K19, K20).
     * Counted on the second of two: the first after a captured launch also
     * asks the AICPU stream's capture state (K34). */
    uint64_t c0 = 0, e0 = 0, c1 = 0, e1 = 0;
    for (int i = 0; i < 2; i++)
        if (!HOOK_OK(p, seam_thread_calls(&c0, &e0)) || !CHECK_K(job_launch(r, e, t), KCTX_OK) ||
            !HOOK_OK(p, seam_thread_calls(&c1, &e1)) || !rig_sync(r, t))
            return 0;
    uint64_t preflight = (c1 - c0) - (e1 - e0);
    uint64_t hits = 0;
    if (!HOOK_OK(p, seam_fault_arm(preflight + 2, &fault))) return 0;
    *ls = job_launch(r, e, t);
    seam_fault_hits(fault, &hits);
    seam_fault_clear();
    if (!CHECK(hits == 1, "the injected fault was not hit") ||
        !CHECK(*ls != KCTX_OK, "the faulted launch returned OK") ||
        !CHECK(rig_phase(r) == KCTX_PHASE_POISONED, "phase %s after a failed partial enqueue",
               kctx_phase_name(rig_phase(r))))
        return 0;
    fw_status ts = p->fw->stream_sync(t, HANG_MS);
    if (ts == FW_TIMEOUT) r->hung = 1;
    return CHECK(ts != FW_TIMEOUT, "the caller stream of the failed launch hangs");
}

/* The seam's fault injection is kctx's own: every platform has it. */
static int has_fault_hooks(probe *p) {
    (void)p;
    return 1;
}

/* The eager half: the context is poisoned, the chain drained, and every
 * later launch refused on the host. */
void probe_enqueue_failure_poisons_context(probe *p) {
    rig r;
    job a, e;
    fw_stream s, t;
    kctx_status ls = KCTX_OK;
    if (!has_fault_hooks(p)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !rig_stream(&r, &t) || !job_vadd(&r, &a, ID_VADD, 256, 72, 0) ||
        !job_vadd(&r, &e, ID_VADD, 64, 73, 0) || !poison_by_partial_enqueue(&r, &e, t, &ls))
        goto done;
    kctx_status slot = KCTX_OK;
    kctx_resource_info res;
    if (!CHECK_K(kctx_runtime_error(r.ctx, &slot, NULL, 0), KCTX_OK) ||
        !CHECK(slot != KCTX_OK, "the runtime error slot is empty after the poison") ||
        !CHECK_K(get_resources(r.ctx, &res), KCTX_OK) ||
        !CHECK(p->fw->stream_sync(res.aicpu_stream, HANG_MS) != FW_TIMEOUT,
               "the context's AICPU stream still runs after %u ms", HANG_MS) ||
        !CHECK(p->fw->stream_sync(res.aicore_stream, HANG_MS) != FW_TIMEOUT,
               "the context's AICore stream still runs after %u ms", HANG_MS) ||
        !job_clear(&r, &a, s) || !rig_sync(&r, s) ||
        !CHECK_K(job_launch(&r, &a, s), KCTX_POISONED) || !rig_sync(&r, s) ||
        !job_untouched(&r, &a, "after the refused launch"))
        goto done;
    pr_note(p,
            "a failed partial enqueue (%s) poisoned the context (runtime error slot %s); the "
            "caller stream and both context streams drained; the next launch POISONED",
            kctx_status_name(ls), kctx_status_name(slot));
done:
    rig_close(&r);
}

/* The captured half: graphs captured before refuse to run. */
void probe_enqueue_failure_poison_stops_graphs(probe *p) {
    rig r;
    job a, e;
    fw_stream s, t;
    int g = -1;
    kctx_status ls = KCTX_OK;
    if (!has_fault_hooks(p)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !rig_stream(&r, &t) || !job_vadd(&r, &a, ID_VADD, 256, 70, 0) ||
        !job_vadd(&r, &e, ID_VADD, 64, 71, 0) || !capture_launch(&r, &a, s, &g) ||
        !job_clear(&r, &a, s) || !rig_replay(&r, g, s) || !rig_sync(&r, s) ||
        !job_expect(&r, &a, "the graph before the poison") ||
        !poison_by_partial_enqueue(&r, &e, t, &ls))
        goto done;
    if (!expect_refused_replays(&r, g, &a, 2, 0,
                                "after a failed partial enqueue poisoned the context"))
        goto done;
    pr_note(p,
            "a failed partial enqueue (%s) poisoned the context; 2/2 replays of a graph captured "
            "before were refused and counted",
            kctx_status_name(ls));
done:
    rig_close(&r);
}
