/*
 * probes_update.c — updatable captured launches (issue 36, K37-K40):
 * kctx_launch_updatable captures a launch whose arguments live in an
 * argument slot, kctx_update_args enqueues a new set on a stream.
 *
 * Where the context cannot make updatable launches (HOST_ORDERED, CUDA,
 * OpenCL so far) kctx_launch_updatable answers UNSUPPORTED and the probe is
 * N/A by that capability (expected_na.inc rows say so per platform).
 */
#include "probes.h"

#include "../../examples/callables/kernels/callable_abi.h"

#include <stdlib.h>
#include <string.h>

enum {
    ID = 1
};

/* Capture one updatable launch of `j` on s; *gi indexes r->graphs. 0 with
 * the probe N/A when the context cannot make one (UNSUPPORTED). */
static int capture_updatable(rig *r, const job *j, fw_stream s, int *gi, kctx_args_handle *h) {
    probe *p = r->p;
    if (!rig_begin_capture(r, s)) return 0;
    kctx_status ls = kctx_launch_updatable(r->ctx, j->id, j->args, j->nargs, s, h);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", kctx_last_error(r->ctx));
    if (!rig_end_capture(r, s, gi)) return 0;
    if (ls == KCTX_UNSUPPORTED) return pr_na(p, "updatable launches are not built here: %s", msg);
    return CHECK(ls == KCTX_OK, "kctx_launch_updatable: %s (%s)", kctx_status_name(ls), msg);
}

/* scale_add_chain's z for one element, in the kernels' float order */
static float chain_z(float alpha, float x) {
    float u = alpha * x;
    return 2.0f * u + 3.0f * u;
}

/* Compare one replay's output (downloaded) with the host model. */
static int chain_matches(probe *p, const float *got, const job *j, float alpha, const char *when) {
    for (size_t i = 0; i < j->n; i++) {
        float w = chain_z(alpha, j->host_in[0][i]);
        if (memcmp(&got[i], &w, sizeof w) != 0)
            return CHECK(0, "%s: element %zu is %g, the host model (alpha %g) says %g", when, i,
                         (double)got[i], (double)alpha, (double)w);
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* 1. a scalar updated 100 times between replays, no host sync (K37)   */

void probe_updated_scalar_replays_match_host_model(probe *p) {
    rig r;
    job j;
    fw_stream s;
    fw_devptr outs = 0;
    int gi = -1;
    kctx_args_handle h = 0;
    enum {
        ROUNDS = 100
    };
    float *got = NULL;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "scale_add_chain") || !rig_stream(&r, &s) ||
        !job_chain(&r, &j, ID, 64, 5, 0) || !capture_updatable(&r, &j, s, &gi, &h))
        goto done;
    const size_t bytes = j.n * sizeof(float);
    if (!rig_alloc(&r, bytes * (ROUNDS + 1), &outs) || !(got = rig_host(&r, bytes * (ROUNDS + 1))))
        goto done;
    /* the host model: the alpha each replay must run with */
    float model[ROUNDS + 1];
    float alpha = j.alpha; /* replay 0: the captured set (no update yet) */
    kctx_arg args[8];
    memcpy(args, j.args, sizeof args);
    unsigned updates = 0;
    for (int k = 0; k <= ROUNDS; k++) {
        /* rounds 1..100: one update before the replay (two on every 10th:
         * only the last counts; none on every 7th: the last set stays) */
        int n_upd = k == 0 ? 0 : (k % 7 == 0 ? 0 : (k % 10 == 0 ? 2 : 1));
        for (int u = 0; u < n_upd; u++) {
            float a = (float)(1 + (k * 5 + u * 3) % 11);
            args[6] = KCTX_SCALAR(callable_f32_scalar(a));
            kctx_status us = kctx_update_args(r.ctx, h, args, j.nargs, s);
            if (!CHECK(us == KCTX_OK, "update before replay %d: %s (%s)", k, kctx_status_name(us),
                       kctx_last_error(r.ctx)))
                goto done;
            alpha = a;
            updates++;
        }
        model[k] = alpha;
        if (!rig_replay(&r, gi, s) ||
            !CHECK_FW_OK(r.fw, r.fw->copy_async(outs + (fw_devptr)(k * bytes), j.out[0], bytes, s)))
            goto done;
    }
    /* the one host synchronisation, after all 101 replays */
    if (!rig_sync(&r, s) || !CHECK_FW_OK(r.fw, r.fw->download(got, outs, bytes * (ROUNDS + 1))))
        goto done;
    for (int k = 0; k <= ROUNDS; k++) {
        char when[64];
        snprintf(when, sizeof when, "replay %d of %d", k, ROUNDS);
        if (!chain_matches(p, got + (size_t)k * j.n, &j, model[k], when)) goto done;
    }
    pr_note(p,
            "%u updates of alpha interleaved with %d replays on one stream, no host sync between: "
            "every replay matched the host model (the captured set before the first update)",
            updates, ROUNDS + 1);
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 2. a tensor argument moved to a second buffer and back (K37, K18)   */

void probe_updated_tensor_moves_to_another_buffer_and_back(probe *p) {
    rig r;
    job a;
    fw_stream s;
    fw_devptr other = 0;
    int gi = -1;
    kctx_args_handle h = 0;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID, 256, 21, 0) || !capture_updatable(&r, &a, s, &gi, &h))
        goto done;
    const size_t bytes = a.n * sizeof(float);
    if (!rig_alloc(&r, bytes, &other)) goto done;
    const fw_devptr first = a.out[0];
    job b = a; /* the same job, writing the second buffer */
    b.out[0] = other;
    for (int step = 0; step < 3; step++) {
        /* step 0: as captured; 1: the output moved to `other`; 2: back */
        const job *to = step == 1 ? &b : &a;
        const job *not = step == 1 ? &a : &b;
        if (step > 0) {
            kctx_arg args[8];
            memcpy(args, a.args, sizeof args);
            args[2] = KCTX_TENSOR(to->out[0], bytes);
            kctx_status us = kctx_update_args(r.ctx, h, args, a.nargs, s);
            if (!CHECK(us == KCTX_OK, "update %d: %s (%s)", step, kctx_status_name(us),
                       kctx_last_error(r.ctx)))
                goto done;
        }
        char when[96];
        snprintf(when, sizeof when, "replay %d (output in the %s buffer)", step,
                 to->out[0] == first ? "first" : "second");
        if (!job_clear(&r, &a, s) || !job_clear(&r, &b, s) || !rig_replay(&r, gi, s) ||
            !rig_sync(&r, s) || !job_expect(&r, to, when) || !job_untouched(&r, not, when))
            goto done;
    }
    pr_note(p, "replayed as captured, with the output moved to a second buffer, and moved back: "
               "each replay wrote only the buffer its set named");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 3. a changed signature refused with nothing enqueued (K9, K18)       */

void probe_update_with_changed_signature_refused_without_enqueue(probe *p) {
    rig r;
    job a;
    fw_stream s;
    int gi = -1;
    kctx_args_handle h = 0;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID, 128, 22, 0) || !capture_updatable(&r, &a, s, &gi, &h))
        goto done;
    const size_t bytes = a.n * sizeof(float);
    kctx_arg bad[4][8];
    uint32_t nbad[4] = {3, 5, 4, 4};
    const char *what[4] = {"one argument fewer", "one argument more",
                           "the scalar n given as a tensor", "the output tensor given as a scalar"};
    for (int i = 0; i < 4; i++) memcpy(bad[i], a.args, sizeof bad[i]);
    bad[1][4] = KCTX_SCALAR(1);
    bad[2][3] = KCTX_TENSOR(a.out[0], bytes);
    bad[3][2] = KCTX_SCALAR(a.out[0]);
    for (int i = 0; i < 4; i++) {
        uint64_t c0, e0, c1, e1;
        if (!HOOK_OK(p, seam_thread_calls(&c0, &e0))) goto done;
        kctx_status us = kctx_update_args(r.ctx, h, bad[i], nbad[i], s);
        if (!HOOK_OK(p, seam_thread_calls(&c1, &e1))) goto done;
        if (!CHECK(us == KCTX_INVALID_ARGUMENT, "%s: kctx_update_args returned %s (%s)", what[i],
                   kctx_status_name(us), kctx_last_error(r.ctx)) ||
            !CHECK(e1 == e0, "%s: refused, but %llu operations were enqueued", what[i],
                   (unsigned long long)(e1 - e0)) ||
            !CHECK(rig_phase(&r) == KCTX_PHASE_READY, "%s: the refusal left the context %s",
                   what[i], kctx_phase_name(rig_phase(&r))))
            goto done;
    }
    /* the refusals changed nothing: the captured set still runs, and a
     * good update still works */
    if (!job_clear(&r, &a, s) || !rig_replay(&r, gi, s) || !rig_sync(&r, s) ||
        !job_expect(&r, &a, "the replay after the refused updates"))
        goto done;
    pr_note(p, "4 changed signatures (count, kinds) refused INVALID_ARGUMENT with 0 enqueues, "
               "context READY; the replay after them ran the captured set");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 4. the handle of a destroyed graph refused (K38)                    */

void probe_update_of_destroyed_graph_refused(probe *p) {
    rig r;
    job a;
    fw_stream s;
    int g1 = -1, g2 = -1;
    kctx_args_handle h1 = 0, h2 = 0;
    /* one lifetime token, so one argument slot: the second capture reuses
     * the first one's slot */
    kctx_kernel_config cfg = probe_config(p);
    cfg.token_capacity = 1;
    if (!rig_open(p, &r, &cfg) || !rig_prepare(&r, ID, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID, 128, 23, 0) || !capture_updatable(&r, &a, s, &g1, &h1))
        goto done;
    if (!rig_drop_graph(&r, g1)) goto done;
    uint64_t c0, e0, c1, e1;
    if (!HOOK_OK(p, seam_thread_calls(&c0, &e0))) goto done;
    kctx_status us = kctx_update_args(r.ctx, h1, a.args, a.nargs, s);
    if (!HOOK_OK(p, seam_thread_calls(&c1, &e1))) goto done;
    if (!CHECK(us == KCTX_INVALID_ARGUMENT,
               "the handle of a destroyed graph: kctx_update_args returned %s (%s)",
               kctx_status_name(us), kctx_last_error(r.ctx)) ||
        !CHECK(e1 == e0, "refused, but %llu operations were enqueued",
               (unsigned long long)(e1 - e0)))
        goto done;
    /* the slot came back: a new capture takes it; the old handle stays stale */
    if (!capture_updatable(&r, &a, s, &g2, &h2)) goto done;
    if (!CHECK(h2 != h1, "the new launch got the old handle back")) goto done;
    us = kctx_update_args(r.ctx, h1, a.args, a.nargs, s);
    if (!CHECK(us == KCTX_INVALID_ARGUMENT,
               "the old handle, its slot reused: kctx_update_args returned %s (%s)",
               kctx_status_name(us), kctx_last_error(r.ctx)))
        goto done;
    job b = a;
    fw_devptr other = 0;
    if (!rig_alloc(&r, a.out_bytes[0], &other)) goto done;
    b.out[0] = other;
    b.args[2] = KCTX_TENSOR(other, a.out_bytes[0]);
    us = kctx_update_args(r.ctx, h2, b.args, b.nargs, s);
    if (!CHECK(us == KCTX_OK, "the new handle: %s (%s)", kctx_status_name(us),
               kctx_last_error(r.ctx)) ||
        !job_clear(&r, &b, s) || !rig_replay(&r, g2, s) || !rig_sync(&r, s) ||
        !job_expect(&r, &b, "the new graph after its update"))
        goto done;
    pr_note(p, "a destroyed graph's handle: INVALID_ARGUMENT, 0 enqueues; its slot taken by the "
               "next capture (token_capacity 1), the old handle still refused, the new one works");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 5. an update behind a held replay does not change it (K37, K19)      */

void probe_update_behind_held_replay_keeps_its_result(probe *p) {
    rig r;
    job j;
    fw_stream s;
    fw_devptr outs = 0;
    int gi = -1, hold = -1, armed = 0;
    kctx_args_handle h = 0;
    float *got = NULL;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "scale_add_chain") || !rig_stream(&r, &s) ||
        !job_chain(&r, &j, ID, 64, 6, 0) || !capture_updatable(&r, &j, s, &gi, &h) ||
        !HAS_HOOK(p, hold_arm))
        goto done;
    const size_t bytes = j.n * sizeof(float);
    if (!rig_alloc(&r, 2 * bytes, &outs) || !(got = rig_host(&r, 2 * bytes))) goto done;
    const float old_alpha = j.alpha, new_alpha = old_alpha + 4.0f;
    if (!HOOK_OK(p, rig_arm_after_acquire(&r, &hold))) goto done;
    armed = 1;
    /* replay 1, held on the device after its acquire step (before its
     * scheduler read the arguments) */
    if (!rig_replay(&r, gi, s) || !HOOK_OK(p, p->fw->hold_wait_reached(hold, HOLD_MS))) goto done;
    /* the update, ordered after replay 1 on the same stream: it returns
     * while replay 1 is still held (K19) */
    kctx_arg args[8];
    memcpy(args, j.args, sizeof args);
    args[6] = KCTX_SCALAR(callable_f32_scalar(new_alpha));
    kctx_status us = kctx_update_args(r.ctx, h, args, j.nargs, s);
    if (!CHECK(us == KCTX_OK, "the update behind the held replay: %s (%s)", kctx_status_name(us),
               kctx_last_error(r.ctx)) ||
        !CHECK_FW_OK(r.fw, r.fw->copy_async(outs, j.out[0], bytes, s)) || !rig_replay(&r, gi, s) ||
        !CHECK_FW_OK(r.fw, r.fw->copy_async(outs + (fw_devptr)bytes, j.out[0], bytes, s)))
        goto done;
    p->fw->hold_release(hold);
    armed = 0;
    if (!rig_sync(&r, s) || !CHECK_FW_OK(r.fw, r.fw->download(got, outs, 2 * bytes)) ||
        !chain_matches(p, got, &j, old_alpha, "replay 1 (held while the update was enqueued)") ||
        !chain_matches(p, got + j.n, &j, new_alpha, "replay 2 (ordered after the update)"))
        goto done;
    pr_note(p, "replay 1 held on the device after its acquire step, an update enqueued behind it "
               "(returned without waiting): replay 1 ran with the old alpha, replay 2 with the "
               "new one");
done:
    if (armed) p->fw->hold_release(hold);
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 6. an eager updatable launch refused with nothing enqueued (K37, K9) */

void probe_updatable_launch_refused_when_eager(probe *p) {
    rig r;
    job a;
    fw_stream s;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID, 128, 24, 0))
        goto done;
    uint64_t c0, e0, c1, e1;
    kctx_args_handle h = 0;
    if (!HOOK_OK(p, seam_thread_calls(&c0, &e0))) goto done;
    kctx_status ls = kctx_launch_updatable(r.ctx, a.id, a.args, a.nargs, s, &h);
    if (!HOOK_OK(p, seam_thread_calls(&c1, &e1))) goto done;
    if (ls == KCTX_UNSUPPORTED) {
        pr_na(p, "updatable launches are not built here: %s", kctx_last_error(r.ctx));
        goto done;
    }
    if (!CHECK(ls == KCTX_INVALID_STATE, "an eager kctx_launch_updatable returned %s (%s)",
               kctx_status_name(ls), kctx_last_error(r.ctx)) ||
        !CHECK(strstr(kctx_last_error(r.ctx), "capturing") != NULL,
               "the refusal does not say the stream must be capturing: \"%s\"",
               kctx_last_error(r.ctx)) ||
        !CHECK(e1 == e0, "refused, but %llu operations were enqueued",
               (unsigned long long)(e1 - e0)) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_READY, "the refusal left the context %s",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    if (!job_clear(&r, &a, s) || !CHECK_K(job_launch(&r, &a, s), KCTX_OK) || !rig_sync(&r, s) ||
        !job_expect(&r, &a, "a plain launch after the refusal"))
        goto done;
    pr_note(p, "eager kctx_launch_updatable: INVALID_STATE naming the capture, 0 enqueues, "
               "READY; a plain launch after it correct");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 7. the fault sweep of kctx_update_args (K40)                        */

/* Fail each platform call of one kctx_update_args in turn: the update
 * returns an error, nothing was enqueued (the context stays READY), and
 * the next update and replay work. */
void probe_update_fault_sweep(probe *p) {
    rig r;
    job j;
    fw_stream s;
    int gi = -1;
    kctx_args_handle h = 0;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "scale_add_chain") || !rig_stream(&r, &s) ||
        !job_chain(&r, &j, ID, 64, 8, 0) || !capture_updatable(&r, &j, s, &gi, &h))
        goto done;
    kctx_arg args[8];
    memcpy(args, j.args, sizeof args);
    /* calibrate: one update's calls */
    uint64_t c0, e0, c1, e1;
    if (!HOOK_OK(p, seam_thread_calls(&c0, &e0))) goto done;
    if (!CHECK_K(kctx_update_args(r.ctx, h, args, j.nargs, s), KCTX_OK)) goto done;
    if (!HOOK_OK(p, seam_thread_calls(&c1, &e1))) goto done;
    const uint64_t calls = c1 - c0;
    if (!CHECK(e1 - e0 == 1 && calls >= 1, "one update: %llu calls, %llu enqueues (expected 1)",
               (unsigned long long)calls, (unsigned long long)(e1 - e0)))
        goto done;
    float alpha = j.alpha;
    unsigned refused = 0;
    for (uint64_t k = 1; k <= calls + 1; k++) {
        int fault = -1;
        uint64_t hits = 0;
        float a = (float)(2 + k % 5);
        args[6] = KCTX_SCALAR(callable_f32_scalar(a));
        if (!HOOK_OK(p, seam_fault_arm(k, &fault))) goto done;
        if (!HOOK_OK(p, seam_thread_calls(&c0, &e0))) goto done;
        kctx_status us = kctx_update_args(r.ctx, h, args, j.nargs, s);
        seam_thread_calls(&c1, &e1);
        seam_fault_hits(fault, &hits);
        seam_fault_clear();
        if (hits == 0) { /* past the last call: the update ran clean */
            if (!CHECK(k == calls + 1, "the sweep found %llu calls, the calibration %llu",
                       (unsigned long long)(k - 1), (unsigned long long)calls) ||
                !CHECK_K(us, KCTX_OK))
                goto done;
            alpha = a;
            break;
        }
        refused++;
        if (!CHECK(us != KCTX_OK, "call %llu failed but kctx_update_args returned OK",
                   (unsigned long long)k) ||
            !CHECK(e1 == e0 || k == calls, "call %llu failed: %llu operations enqueued",
                   (unsigned long long)k, (unsigned long long)(e1 - e0)) ||
            !CHECK(rig_phase(&r) == KCTX_PHASE_READY,
                   "call %llu failed (%s): the context is %s, expected READY (nothing enqueued)",
                   (unsigned long long)k, kctx_last_error(r.ctx), kctx_phase_name(rig_phase(&r))))
            goto done;
        /* the failed update changed nothing: a replay runs the last set */
        fw_devptr out = j.out[0];
        float *got = malloc(j.n * sizeof(float));
        if (!CHECK(got != NULL, "host allocation failed")) goto done;
        int ok = rig_replay(&r, gi, s) && rig_sync(&r, s) &&
                 CHECK_FW_OK(r.fw, r.fw->download(got, out, j.n * sizeof(float)));
        char when[96];
        snprintf(when, sizeof when, "the replay after call %llu of the update failed",
                 (unsigned long long)k);
        ok = ok && chain_matches(p, got, &j, alpha, when);
        free(got);
        if (!ok) goto done;
    }
    float *got = malloc(j.n * sizeof(float));
    if (!CHECK(got != NULL, "host allocation failed")) goto done;
    int ok = rig_replay(&r, gi, s) && rig_sync(&r, s) &&
             CHECK_FW_OK(r.fw, r.fw->download(got, j.out[0], j.n * sizeof(float))) &&
             chain_matches(p, got, &j, alpha, "the replay after the clean update");
    free(got);
    if (!ok) goto done;
    pr_note(p,
            "one update makes %llu platform calls (1 enqueue); each failing: an error, READY, "
            "the replay after it ran the previous set (%u faults); then a clean update applied",
            (unsigned long long)calls, refused);
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 8. an update captured into another graph and replayed (K37)         */

/* Replay G once and copy its output aside (slot k of outs). */
static int replay_into(rig *r, int gi, const job *j, fw_devptr outs, int k, fw_stream s) {
    const size_t bytes = j->n * sizeof(float);
    return rig_replay(r, gi, s) &&
           CHECK_FW_OK(r->fw,
                       r->fw->copy_async(outs + (fw_devptr)(k * bytes), j->out[0], bytes, s));
}

void probe_update_captured_into_another_graph(probe *p) {
    rig r;
    job j;
    fw_stream s;
    fw_devptr outs = 0;
    int g = -1, u = -1;
    kctx_args_handle h = 0;
    float *got = NULL;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "scale_add_chain") || !rig_stream(&r, &s) ||
        !job_chain(&r, &j, ID, 64, 9, 0) || !capture_updatable(&r, &j, s, &g, &h))
        goto done;
    const size_t bytes = j.n * sizeof(float);
    if (!rig_alloc(&r, 4 * bytes, &outs) || !(got = rig_host(&r, 4 * bytes))) goto done;
    const float a0 = j.alpha, a1 = a0 + 3.0f, a2 = a0 + 5.0f;
    kctx_arg args[8];
    memcpy(args, j.args, sizeof args);
    /* graph U holds one update (its set by value): capturing it changes nothing */
    args[6] = KCTX_SCALAR(callable_f32_scalar(a1));
    if (!rig_begin_capture(&r, s)) goto done;
    kctx_status us = kctx_update_args(r.ctx, h, args, j.nargs, s);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", kctx_last_error(r.ctx));
    if (!rig_end_capture(&r, s, &u) ||
        !CHECK(us == KCTX_OK, "kctx_update_args inside a capture: %s (%s)", kctx_status_name(us),
               msg))
        goto done;
    /* G as captured; U then G; an eager update (a2) then G; U again then G */
    args[6] = KCTX_SCALAR(callable_f32_scalar(a2));
    if (!replay_into(&r, g, &j, outs, 0, s) || !rig_replay(&r, u, s) ||
        !replay_into(&r, g, &j, outs, 1, s) ||
        !CHECK_K(kctx_update_args(r.ctx, h, args, j.nargs, s), KCTX_OK) ||
        !replay_into(&r, g, &j, outs, 2, s) || !rig_replay(&r, u, s) ||
        !replay_into(&r, g, &j, outs, 3, s))
        goto done;
    if (!rig_sync(&r, s) || !CHECK_FW_OK(r.fw, r.fw->download(got, outs, 4 * bytes)) ||
        !chain_matches(p, got, &j, a0, "G before U ran (capturing the update changed nothing)") ||
        !chain_matches(p, got + j.n, &j, a1, "G after U") ||
        !chain_matches(p, got + 2 * j.n, &j, a2, "G after an eager update") ||
        !chain_matches(p, got + 3 * j.n, &j, a1, "G after U replayed again"))
        goto done;
    pr_note(p, "an update captured into graph U: G ran the captured set until U ran, then U's "
               "set; an eager update and U again each took effect at their place on the stream");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 9. a poisoned context refuses updates with nothing enqueued (K38)   */

enum {
    ID_FAIL = 2
};

void probe_update_of_poisoned_context_refused(probe *p) {
    rig r;
    job a;
    fw_stream s, t;
    int gi = -1;
    kctx_args_handle h = 0;
    const void *bad;
    size_t bad_size;
    fw_devptr m[3];
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID, "vector_add") || !rig_stream(&r, &s) ||
        !rig_stream(&r, &t) || !job_vadd(&r, &a, ID, 128, 25, 0) ||
        !capture_updatable(&r, &a, s, &gi, &h) || !rig_failing_image(&r, &bad, &bad_size) ||
        !CHECK_K(kctx_prepare(r.ctx, ID_FAIL, bad, bad_size), KCTX_OK))
        goto done;
    for (int i = 0; i < 3; i++)
        if (!rig_alloc(&r, 16 * sizeof(float), &m[i])) goto done;
    const kctx_arg fa[6] = {KCTX_TENSOR(m[0], 64), KCTX_TENSOR(m[1], 64), KCTX_TENSOR(m[2], 64),
                            KCTX_SCALAR(4),        KCTX_SCALAR(4),        KCTX_SCALAR(4)};
    /* a child kernel fails on the device; check reports it and poisons */
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    if (!CHECK_K(kctx_launch(r.ctx, ID_FAIL, fa, 6, t), KCTX_OK) ||
        !CHECK_FW(p->fw, p->fw->stream_sync(t, SYNC_MS),
                  p->fw->task_failure_leaves_streams_ok ? FW_OK : FW_DEVICE_ERROR) ||
        !CHECK_K(kctx_check(r.ctx, &rep), KCTX_DEVICE_ERROR) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_POISONED, "phase %s after the device error",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    uint64_t c0, e0, c1, e1;
    if (!HOOK_OK(p, seam_thread_calls(&c0, &e0))) goto done;
    kctx_status us = kctx_update_args(r.ctx, h, a.args, a.nargs, s);
    if (!HOOK_OK(p, seam_thread_calls(&c1, &e1))) goto done;
    if (!CHECK(us == KCTX_POISONED, "kctx_update_args on a poisoned context returned %s (%s)",
               kctx_status_name(us), kctx_last_error(r.ctx)) ||
        !CHECK(e1 == e0, "refused, but %llu operations were enqueued",
               (unsigned long long)(e1 - e0)))
        goto done;
    pr_note(p, "a device error poisoned the context: kctx_update_args POISONED with 0 enqueues");
done:
    rig_close(&r);
}
