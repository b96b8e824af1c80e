/*
 * probes_capture.c — capture and replay (issue 5, conformance items 1-8
 * and 12): graphs of one context replayed in any order, back to back, next
 * to eager launches and to each other, without ever tripping the capture
 * isolation rule, and the negative controls that prove the checks can fail.
 */
#include "probes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum {
    ID_VADD = 1,
    ID_CHAIN = 2,
    ID_VADD2 = 3
};

/* Capture one launch of `j` on stream s into a new graph. */
static int capture_launch(rig *r, const job *j, fw_stream s, int *gi) {
    if (!rig_begin_capture(r, s)) return 0;
    int ok = CHECK_K(job_launch(r, j, s), KCTX_OK);
    int ended = rig_end_capture(r, s, gi);
    return ok && ended;
}

/* Replay graph gi on s after clearing j's outputs, then check them. */
static int replay_and_expect(rig *r, int gi, const job *j, fw_stream s, const char *when) {
    return job_clear(r, j, s) && rig_replay(r, gi, s) && rig_sync(r, s) && job_expect(r, j, when);
}

/* The device side reports nothing wrong (no concurrent launch, nothing
 * refused). */
static int check_clean(rig *r, const char *when) {
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    if (!CHECK_K(kctx_check(r->ctx, &rep), KCTX_OK)) return 0;
    return CHECK(rep.device_status == KCTX_OK && rep.concurrent_launches == 0 &&
                     rep.refused_replays == 0,
                 "%s: check reports %s, %u concurrent launches, %u refused replays", when,
                 kctx_status_name(rep.device_status), rep.concurrent_launches, rep.refused_replays);
}

/* ------------------------------------------------------------------ */
/* 1. A B A B A A B over one output buffer (K12, K22)                  */

void probe_alternating_replays_hold_last_graph_values(probe *p) {
    rig r;
    job a, b;
    fw_stream s;
    fw_devptr out;
    int ga = -1, gb = -1;
    const size_t n = 1000;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_prepare(&r, ID_CHAIN, "scale_add_chain") || !rig_stream(&r, &s) ||
        !rig_alloc(&r, n * sizeof(float), &out))
        goto done;
    if (!job_vadd(&r, &a, ID_VADD, n, 1, out) || !job_chain(&r, &b, ID_CHAIN, n, 2, out)) goto done;
    for (size_t i = 0; i < n; i++)
        if (!CHECK(a.want[0][i] != b.want[0][i], "setup: A and B agree at element %zu", i))
            goto done;
    if (!capture_launch(&r, &a, s, &ga) || !capture_launch(&r, &b, s, &gb)) goto done;
    static const char order[] = "ABABAAB";
    unsigned good = 0;
    for (unsigned k = 0; order[k]; k++) {
        char when[64];
        snprintf(when, sizeof when, "replay %u (%c) of %s", k + 1, order[k], order);
        const job *j = order[k] == 'A' ? &a : &b;
        if (!replay_and_expect(&r, order[k] == 'A' ? ga : gb, j, s, when)) goto done;
        good++;
    }
    if (!check_clean(&r, "after the replays")) goto done;
    pr_note(p, "%u/7 replays of %s: the shared output held exactly the last graph's values", good,
            order);
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 2. AB, BA, AA, BB with no host sync between (K23)                   */

/* A graph: the launch, then a copy of the shared output into the graph's
 * own witness buffer, so each replay leaves proof that it ran in order. */
static int capture_with_witness(rig *r, const job *j, fw_devptr witness, fw_stream s, int *gi) {
    if (!rig_begin_capture(r, s)) return 0;
    int ok = CHECK_K(job_launch(r, j, s), KCTX_OK) &&
             CHECK_FW_OK(r->fw, r->fw->copy_async(witness, j->out[0], j->out_bytes[0], s));
    int ended = rig_end_capture(r, s, gi);
    return ok && ended;
}

void probe_back_to_back_replays_without_host_sync(probe *p) {
    rig r;
    job a, b, wa, wb;
    fw_stream s;
    fw_devptr out, wbuf[2];
    int ga = -1, gb = -1;
    const size_t n = 777;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_prepare(&r, ID_CHAIN, "scale_add_chain") || !rig_stream(&r, &s) ||
        !rig_alloc(&r, n * sizeof(float), &out) || !rig_alloc(&r, n * sizeof(float), &wbuf[0]) ||
        !rig_alloc(&r, n * sizeof(float), &wbuf[1]))
        goto done;
    if (!job_vadd(&r, &a, ID_VADD, n, 1, out) || !job_chain(&r, &b, ID_CHAIN, n, 2, out)) goto done;
    wa = a;
    wa.out[0] = wbuf[0];
    wb = b;
    wb.out[0] = wbuf[1];
    if (!capture_with_witness(&r, &a, wbuf[0], s, &ga) ||
        !capture_with_witness(&r, &b, wbuf[1], s, &gb))
        goto done;
    static const char *const pairs[] = {"AB", "BA", "AA", "BB"};
    unsigned good = 0;
    for (unsigned k = 0; k < 4; k++) {
        const char *pr = pairs[k];
        if (!job_clear(&r, &a, s) || !job_clear(&r, &wa, s) || !job_clear(&r, &wb, s)) goto done;
        for (int i = 0; i < 2; i++)
            if (!rig_replay(&r, pr[i] == 'A' ? ga : gb, s)) goto done; /* no sync between */
        if (!rig_sync(&r, s)) goto done;
        char when[64];
        snprintf(when, sizeof when, "after %s", pr);
        const job *last = pr[1] == 'A' ? &a : &b;
        if (!job_expect(&r, last, when)) goto done;
        int ran_a = pr[0] == 'A' || pr[1] == 'A', ran_b = pr[0] == 'B' || pr[1] == 'B';
        if (ran_a ? !job_expect(&r, &wa, when) : !job_untouched(&r, &wa, when)) goto done;
        if (ran_b ? !job_expect(&r, &wb, when) : !job_untouched(&r, &wb, when)) goto done;
        good++;
    }
    if (!check_clean(&r, "after the pairs")) goto done;
    pr_note(p,
            "%u/4 pairs (AB, BA, AA, BB) correct; each replay's witness copy proves it ran, "
            "no concurrent launch reported",
            good);
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 3. eager launches after replays (K21)                               */

void probe_eager_launches_after_replays(probe *p) {
    rig r;
    job a, b, ea, eb;
    fw_stream s, t;
    int ga = -1, gb = -1;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_prepare(&r, ID_CHAIN, "scale_add_chain") || !rig_stream(&r, &s) || !rig_stream(&r, &t))
        goto done;
    if (!job_vadd(&r, &a, ID_VADD, 300, 3, 0) || !job_chain(&r, &b, ID_CHAIN, 500, 4, 0) ||
        !job_vadd(&r, &ea, ID_VADD, 1234, 5, 0) || !job_chain(&r, &eb, ID_CHAIN, 99, 6, 0))
        goto done;
    if (!capture_launch(&r, &a, s, &ga) || !capture_launch(&r, &b, s, &gb)) goto done;
    unsigned eager = 0;
    for (int round = 0; round < 3; round++) {
        if (!replay_and_expect(&r, ga, &a, s, "replay A") ||
            !replay_and_expect(&r, gb, &b, s, "replay B"))
            goto done;
        /* eager, on the replay stream and on another stream */
        fw_stream es = round == 1 ? t : s;
        if (!job_clear(&r, &ea, es) || !CHECK_K(job_launch(&r, &ea, es), KCTX_OK) ||
            !job_clear(&r, &eb, es) || !CHECK_K(job_launch(&r, &eb, es), KCTX_OK) ||
            !rig_sync(&r, es) || !job_expect(&r, &ea, "eager vector_add after replays") ||
            !job_expect(&r, &eb, "eager scale_add_chain after replays"))
            goto done;
        eager += 2;
        /* new inputs: the next eager launches compute something else */
        if (!job_set_inputs(&r, &ea, 50 + (uint64_t)round) ||
            !job_set_inputs(&r, &eb, 60 + (uint64_t)round))
            goto done;
    }
    if (!check_clean(&r, "after replays and eager launches")) goto done;
    pr_note(p, "%u eager launches interleaved with 6 replays (two streams): all correct", eager);
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 4. a graph captured while another graph lives (K12)                 */

void probe_capture_while_another_graph_lives(probe *p) {
    rig r;
    job a, b, c;
    fw_stream s;
    int ga = -1, gb = -1, gc = -1;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_prepare(&r, ID_CHAIN, "scale_add_chain") || !rig_stream(&r, &s))
        goto done;
    if (!job_vadd(&r, &a, ID_VADD, 640, 7, 0) || !job_chain(&r, &b, ID_CHAIN, 640, 8, 0) ||
        !job_vadd(&r, &c, ID_VADD, 33, 9, 0))
        goto done;
    if (!capture_launch(&r, &a, s, &ga) || !replay_and_expect(&r, ga, &a, s, "A before B existed"))
        goto done;
    /* B captured while A (instantiated and replayed) lives, in its own memory */
    if (!capture_launch(&r, &b, s, &gb) ||
        !replay_and_expect(&r, gb, &b, s, "B captured next to A") ||
        !replay_and_expect(&r, ga, &a, s, "A after B was captured"))
        goto done;
    /* and a third while both live; then all three back to back */
    if (!capture_launch(&r, &c, s, &gc)) goto done;
    if (!job_clear(&r, &a, s) || !job_clear(&r, &b, s) || !job_clear(&r, &c, s) ||
        !rig_replay(&r, gc, s) || !rig_replay(&r, ga, s) || !rig_replay(&r, gb, s) ||
        !rig_sync(&r, s) || !job_expect(&r, &a, "A of C A B") ||
        !job_expect(&r, &b, "B of C A B") || !job_expect(&r, &c, "C of C A B"))
        goto done;
    /* dropping the first graph leaves the others intact */
    if (!rig_drop_graph(&r, ga) || !replay_and_expect(&r, gb, &b, s, "B after A was destroyed") ||
        !replay_and_expect(&r, gc, &c, s, "C after A was destroyed"))
        goto done;
    if (!check_clean(&r, "after the replays")) goto done;
    pr_note(p,
            "graphs captured while 1 and 2 others lived replay correctly, alone and back to back");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 5. replays run inside the graph only (K20)                           */

void probe_replay_enqueues_nothing_on_context_streams(probe *p) {
    rig r;
    job a;
    fw_stream s;
    int ga = -1;
    char extra[160] = "";
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_VADD, 512, 10, 0) || !capture_launch(&r, &a, s, &ga))
        goto done;
    size_t nodes = 0;
    int have_nodes = OPTIONAL_HOOK(p, graph_node_count, "the captured graph's node count",
                                   r.graphs[ga].g, &nodes);
    if (!pr_ok(p) ||
        (have_nodes && !CHECK(nodes > 0, "the captured graph has no work nodes: the launch's "
                                         "work is not in it")))
        goto done;
    if (have_nodes) snprintf(extra, sizeof extra, "; graph of %zu work nodes", nodes);
    kctx_resource_info res;
    if (!CHECK_K(get_resources(r.ctx, &res), KCTX_OK)) goto done;
    uint64_t calls0 = 0, calls1 = 0, enq0 = 0, enq1 = 0;
    int have_enq = OPTIONAL_HOOK(p, device_enqueues, "the device's enqueue count during replays",
                                 r.device, &enq0);
    if (!pr_ok(p) || !CHECK_K(kctx_platform_calls(r.ctx, &calls0), KCTX_OK)) goto done;
    int held = 0;
    unsigned mine = 0; /* the probe's own enqueues (output fills) */
    for (int k = 0; k < 3; k++) {
        int hold = -1;
        int want_hold = k == 0 && pr_optional(p, rig_arm_after_acquire(&r, &hold),
                                              "that the context's streams stay idle while a "
                                              "replay is held mid-flight",
                                              "hold_arm", __FILE__, __LINE__);
        if (!pr_ok(p)) goto done;
        if (!job_clear(&r, &a, s) || !rig_replay(&r, ga, s)) goto done;
        mine += a.nout;
        if (want_hold) {
            /* The replay is provably mid-flight: its launch guard is held
             * (after its acquire step: the scheduler under RESIDENT, whose
             * workers wait for it; its first task kernel under
             * HOST_ORDERED). The context's own streams must have nothing to
             * do with it. */
            if (HOOK_OK(p, p->fw->hold_wait_reached(hold, HOLD_MS))) {
                held = 1;
                CHECK_FW_OK(p->fw, p->fw->stream_query(res.aicpu_stream));
                CHECK_FW_OK(p->fw, p->fw->stream_query(res.aicore_stream));
            }
            p->fw->hold_release(hold);
        }
        if (!rig_sync(&r, s)) goto done;
        char when[32];
        snprintf(when, sizeof when, "replay %d of 3", k + 1);
        if (!job_expect(&r, &a, when)) goto done;
    }
    if (!CHECK_K(kctx_platform_calls(r.ctx, &calls1), KCTX_OK) ||
        !CHECK(calls1 == calls0, "kctx made %llu platform calls during replays (expected none)",
               (unsigned long long)(calls1 - calls0)))
        goto done;
    if (have_enq && CHECK_FW_OK(p->fw, p->fw->device_enqueues(r.device, &enq1)))
        CHECK(enq1 - enq0 == mine,
              "%llu operations were enqueued on the device during 3 replays; the probe enqueued %u "
              "itself",
              (unsigned long long)(enq1 - enq0), mine);
    if (!pr_ok(p)) goto done;
    pr_note(p, "3/3 replays correct; kctx made 0 platform calls%s%s%s",
            have_enq ? " and nothing but the probe's fills was enqueued" : "", extra,
            held ? "; both context streams idle while replay 1 was held mid-flight" : "");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 6. the capture-isolation negative control (K21)                      */

void probe_capture_isolation_control_and_kctx_never_trips_it(probe *p) {
    rig r;
    job a, b, c;
    fw_stream s, t;
    fw_event e = 0;
    int g[5];
    const char *kept = "invalidated";
    if (!rig_open(p, &r, NULL) || !rig_stream(&r, &s) || !rig_stream(&r, &t)) goto done;
    /* The control: a wait inside a capture on an event recorded before it
     * began. The platform must reject it (CUDA 905 invalidates the capture;
     * CANN 107024 rejects the wait and keeps it: either is accepted). */
    if (!CHECK_FW_OK(p->fw, p->fw->event_create(&e)) ||
        !CHECK_FW_OK(p->fw, p->fw->event_record(e, t)) || !rig_sync(&r, t) ||
        !rig_begin_capture(&r, s))
        goto done;
    fw_status ws = p->fw->stream_wait_event(s, e);
    fw_graph cg = 0;
    fw_status es = p->fw->end_capture(s, &cg);
    if (es == FW_OK && cg) {
        kept = "kept";
        p->fw->graph_destroy(cg);
    }
    if (!CHECK_FW(p->fw, ws, FW_CAPTURE_ISOLATION) ||
        !CHECK(es == FW_CAPTURE_INVALIDATED || es == FW_OK,
               "ending the capture after the isolation error: %s", fw_status_name(es)))
        goto done;

    /* kctx's own captured launches never trip it. The first launch after a
     * fresh init and prepare is captured; then captures follow eager
     * launches (the events were last recorded outside any capture); then
     * two launches in one capture; then a fresh prepare again. */
    if (!rig_prepare(&r, ID_VADD, "vector_add") || !job_vadd(&r, &a, ID_VADD, 256, 11, 0) ||
        !capture_launch(&r, &a, s, &g[0]) ||
        !replay_and_expect(&r, g[0], &a, s, "first launch after prepare"))
        goto done;
    if (!rig_prepare(&r, ID_CHAIN, "scale_add_chain") || !job_chain(&r, &b, ID_CHAIN, 256, 12, 0) ||
        !CHECK_K(job_launch(&r, &b, t), KCTX_OK) || !rig_sync(&r, t) ||
        !capture_launch(&r, &b, s, &g[1]) ||
        !replay_and_expect(&r, g[1], &b, s, "capture after eager"))
        goto done;
    if (!rig_begin_capture(&r, s)) goto done;
    int ok2 = CHECK_K(job_launch(&r, &a, s), KCTX_OK) && CHECK_K(job_launch(&r, &b, s), KCTX_OK);
    if (!rig_end_capture(&r, s, &g[2]) || !ok2) goto done;
    if (!job_clear(&r, &a, s) || !job_clear(&r, &b, s) || !rig_replay(&r, g[2], s) ||
        !rig_sync(&r, s) || !job_expect(&r, &a, "two launches in one capture (1)") ||
        !job_expect(&r, &b, "two launches in one capture (2)"))
        goto done;
    if (!CHECK_K(job_launch(&r, &a, t), KCTX_OK) || !rig_sync(&r, t) ||
        !rig_prepare(&r, ID_VADD2, "vector_add") || !job_vadd(&r, &c, ID_VADD2, 100, 13, 0) ||
        !capture_launch(&r, &c, s, &g[3]) ||
        !replay_and_expect(&r, g[3], &c, s, "launch after a new prepare"))
        goto done;
    if (!check_clean(&r, "after the captures")) goto done;
    pr_note(p,
            "the platform rejected the control wait (%s, capture %s); 4 kctx captures (first after "
            "prepare, after eager, two in one, after a new prepare) ended cleanly and replayed "
            "correctly",
            fw_status_name(ws), kept);
done:
    if (e) p->fw->event_destroy(e);
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 7. the caller-stream negative control (K20)                          */

void probe_launch_on_uncaptured_stream_stays_out_of_graph(probe *p) {
    rig r;
    job a;
    fw_stream s, t;
    int g = -1;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !rig_stream(&r, &t) || !job_vadd(&r, &a, ID_VADD, 400, 14, 0))
        goto done;
    /* Capture on s, launch on t: the caller captured the wrong stream. */
    if (!rig_begin_capture(&r, s)) goto done;
    kctx_status ls = job_launch(&r, &a, t);
    kctx_resource_info res;
    kctx_status rs = get_resources(r.ctx, &res);
    if (!rig_end_capture(&r, s, &g) || !CHECK_K(ls, KCTX_OK) || !CHECK_K(rs, KCTX_OK)) goto done;
    if (!CHECK(res.tokens_in_use == 0,
               "the launch took a graph lifetime token (%u) though it was not captured",
               res.tokens_in_use))
        goto done;
    size_t nodes = 0;
    int have_nodes = OPTIONAL_HOOK(p, graph_node_count, "that S's graph has no work nodes",
                                   r.graphs[g].g, &nodes);
    if (!pr_ok(p) ||
        (have_nodes &&
         !CHECK(nodes == 0, "the graph of s has %zu work nodes; the launch on t went into it",
                nodes)))
        goto done;
    /* The launch ran eagerly on t. */
    if (!rig_sync(&r, t) || !job_expect(&r, &a, "the eager launch on t")) goto done;
    /* Replaying the graph of s does nothing to the outputs. */
    if (!job_clear(&r, &a, t) || !rig_sync(&r, t) || !rig_replay(&r, g, s) || !rig_sync(&r, s) ||
        !job_untouched(&r, &a, "after replaying the graph of s"))
        goto done;
    pr_note(p,
            "capture on S, launch on T: the launch ran eagerly on T, took no lifetime token, and "
            "replaying S's graph%s left the outputs untouched",
            have_nodes ? " (0 work nodes)" : "");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 8. prepare and foreign launches during a capture (K16, K34)          */

typedef struct foreign_arg {
    rig *r;
    const job *j;
    fw_stream t, t2;
    kctx_status eager, captured;
    fw_status set_dev, begin, end;
} foreign_arg;

/* Another framework thread: an eager launch, and a launch captured into
 * its own graph, while the main thread's capture holds the context. */
static void *foreign_thread(void *argp) {
    foreign_arg *fa = argp;
    const fw_driver *fw = fa->r->fw;
    fa->set_dev = fw->set_device(fa->r->device);
    if (fa->set_dev != FW_OK) return NULL;
    fa->eager = kctx_launch(fa->r->ctx, fa->j->id, fa->j->args, fa->j->nargs, fa->t);
    fa->begin = fw->begin_capture(fa->t2);
    if (fa->begin != FW_OK) return NULL;
    fa->captured = kctx_launch(fa->r->ctx, fa->j->id, fa->j->args, fa->j->nargs, fa->t2);
    fw_graph g = 0;
    fa->end = fw->end_capture(fa->t2, &g);
    if (fa->end == FW_OK && g) fw->graph_destroy(g);
    return NULL;
}

/* K16: prepare works inside the capture that holds the context's streams
 * (cold capture: it uploads on the upload stream, which no launch uses) and
 * adds nothing to it; K34: a foreign launch — eager from another thread, or
 * captured into another graph — is refused and the capture survives. */
void probe_prepare_works_and_foreign_launch_refused_during_capture(probe *p) {
    rig r;
    job a, other;
    fw_stream s, t, t2;
    int g = -1;
    const void *chain_img;
    size_t chain_size;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !rig_image(&r, "scale_add_chain", &chain_img, &chain_size) || !rig_stream(&r, &s) ||
        !rig_stream(&r, &t) || !rig_stream(&r, &t2) || !job_vadd(&r, &a, ID_VADD, 300, 15, 0) ||
        !job_vadd(&r, &other, ID_VADD, 300, 16, 0) || !job_clear(&r, &other, t) || !rig_sync(&r, t))
        goto done;
    if (!rig_begin_capture(&r, s)) goto done;
    /* The captured launch pulls the context's streams into s's capture. */
    kctx_status ls = job_launch(&r, &a, s);
    kctx_status ps = kctx_prepare(r.ctx, ID_CHAIN, chain_img, chain_size);
    int capturing1 = 0;
    fw_status cs1 = p->fw->capture_status(s, &capturing1);
    foreign_arg fa = {&r, &other, t, t2, KCTX_OK, KCTX_OK, FW_OK, FW_OK, FW_OK};
    pthread_t th;
    int started = pthread_create(&th, NULL, foreign_thread, &fa) == 0;
    if (started) pthread_join(th, NULL);
    int capturing2 = 0;
    fw_status cs2 = p->fw->capture_status(s, &capturing2);
    int ended = rig_end_capture(&r, s, &g);
    if (!CHECK_K(ls, KCTX_OK) || !CHECK_K(ps, KCTX_OK) ||
        !CHECK(cs1 == FW_OK && capturing1, "the capture did not survive the prepare") ||
        !CHECK(started, "cannot start a thread") || !CHECK_FW_OK(p->fw, fa.set_dev) ||
        !CHECK_K(fa.eager, KCTX_CAPTURE_ACTIVE) || !CHECK_FW_OK(p->fw, fa.begin) ||
        !CHECK_K(fa.captured, KCTX_CAPTURE_ACTIVE) || !CHECK_FW_OK(p->fw, fa.end) ||
        !CHECK(cs2 == FW_OK && capturing2, "the capture did not survive the refused launches") ||
        !ended)
        goto done;
    if (!CHECK(rig_phase(&r) == KCTX_PHASE_READY, "the refusals changed the phase to %s",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    if (!replay_and_expect(&r, g, &a, s, "replay of the capture that saw the refusals") ||
        !job_untouched(&r, &other, "the refused launches' outputs"))
        goto done;
    /* Once the capture ended, the foreign launch is accepted; the callable
     * prepared inside the capture is there (its id is taken). */
    if (!CHECK_K(kctx_prepare(r.ctx, ID_CHAIN, chain_img, chain_size), KCTX_DUPLICATE_ID) ||
        !CHECK_K(job_launch(&r, &other, t), KCTX_OK) || !rig_sync(&r, t) ||
        !job_expect(&r, &other, "the launch after the capture ended"))
        goto done;
    pr_note(p, "prepare inside the capture succeeded (K16); an eager launch (other thread) and a "
               "launch captured into another graph (other thread) got CAPTURE_ACTIVE; the capture "
               "stayed valid and replayed correctly");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 12. dozens of bucket graphs, random replay order (K12)               */

#define BUCKETS 40
#define BUCKET_REPLAYS 160

void probe_bucket_graphs_replay_in_random_order(probe *p) {
    rig r;
    job *jobs = NULL;
    fw_stream s;
    fw_devptr out;
    int g[BUCKETS];
    size_t max_n = 16 * BUCKETS + 4;
    float *got = NULL;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") || !rig_stream(&r, &s) ||
        !rig_alloc(&r, max_n * sizeof(float), &out))
        goto done;
    jobs = rig_host(&r, BUCKETS * sizeof *jobs);
    got = rig_host(&r, max_n * sizeof(float));
    if (!jobs || !got) goto done;
    /* one graph per batch-size bucket, all writing the same output */
    for (unsigned i = 0; i < BUCKETS; i++) {
        size_t n = 16 * (i + 1) + i % 5;
        if (!job_vadd(&r, &jobs[i], ID_VADD, n, 100 + i, out) ||
            !capture_launch(&r, &jobs[i], s, &g[i]))
            goto done;
    }
    uint64_t state = p->env->seed;
    unsigned good = 0;
    for (unsigned k = 0; k < BUCKET_REPLAYS; k++) {
        unsigned i = (unsigned)(rng_next(&state) % BUCKETS);
        const job *j = &jobs[i];
        if (!CHECK_FW_OK(p->fw, p->fw->fill_async(out, 0xFF, max_n * sizeof(float), s)) ||
            !rig_replay(&r, g[i], s) || !rig_sync(&r, s) ||
            !CHECK_FW_OK(p->fw, p->fw->download(got, out, max_n * sizeof(float))))
            goto done;
        for (size_t e = 0; e < max_n; e++) {
            uint32_t bits;
            memcpy(&bits, &got[e], sizeof bits);
            int ok = e < j->n ? got[e] == j->want[0][e] : bits == 0xFFFFFFFFu;
            if (!CHECK(ok, "seed 0x%llx, replay %u (bucket %u, n %zu): element %zu is %g (0x%08x)",
                       (unsigned long long)p->env->seed, k + 1, i, j->n, e, (double)got[e], bits))
                goto done;
        }
        good++;
    }
    kctx_resource_info res;
    if (!CHECK_K(get_resources(r.ctx, &res), KCTX_OK) ||
        !CHECK(res.tokens_in_use == BUCKETS, "%u lifetime tokens in use for %u live graphs",
               res.tokens_in_use, BUCKETS) ||
        !check_clean(&r, "after the replays"))
        goto done;
    pr_note(p,
            "seed 0x%llx: %u/%u replays over %u bucket graphs (n = 16..%zu) correct, each writing "
            "exactly its n",
            (unsigned long long)p->env->seed, good, BUCKET_REPLAYS, BUCKETS, jobs[BUCKETS - 1].n);
done:
    rig_close(&r);
}
