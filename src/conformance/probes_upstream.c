/*
 * probes_upstream.c — kernel-mode scenarios that upstream runtimes met on
 * real hardware (issue 34, item 2), replayed against kctx's contract:
 *
 *  - two_threads_one_context_device_failure (K23, K34, K19, K35): two
 *    framework threads share one context; one's launch is held on the
 *    device while the other launches, is refused during a capture, and
 *    finally fails on the device;
 *  - stale_completion_report (K23, K21): a round's device completion
 *    report held back while the next round is submitted, and no per-launch
 *    clearing of report words;
 *  - init_first_device_program_fails (K11, K17): kernel init whose first
 *    device work fails on the device, not at its enqueue.
 *
 * Each probe's comment says what it adds to the probes that already check
 * its rules.
 */
#include "probes.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    ID_VADD = 1,
    ID_CHAIN = 2,
    ID_FAIL = 4
};

/* ------------------------------------------------------------------ */
/* helpers                                                             */

static int has_holds(probe *p) {
    return HAS_HOOK(p, hold_arm) && HAS_HOOK(p, hold_wait_reached) && HAS_HOOK(p, hold_release);
}

/* The calling thread's platform calls through kctx's seam, and the
 * enqueues among them. */
typedef struct seam_mark {
    uint64_t calls, enqueues;
} seam_mark;

static int seam_mark_now(probe *p, seam_mark *m) {
    return HOOK_OK(p, seam_thread_calls(&m->calls, &m->enqueues));
}

/* Device-wide enqueues by anyone (fw.h device_enqueues); *have 0 when the
 * driver has no such counter (the sub-check is then dropped once). */
static int device_enqueues(probe *p, int device, uint64_t *n, int *have) {
    *n = 0;
    if (!*have) return 1;
    *have = OPTIONAL_HOOK(p, device_enqueues, "device-wide enqueue count (no device_enqueues hook)",
                          device, n);
    return pr_ok(p);
}

/* The failing callable (a child that reports an error on the device:
 * rig_failing_image) under ID_FAIL, with its arguments. */
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

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- thread B: one kctx call on a framework thread of its own ------- */

typedef enum b_op {
    B_LAUNCH = 1, /* kctx_launch(id, args, nargs, s) */
    B_CHECK = 2,  /* kctx_check(&rep) */
    B_SYNC = 3    /* fw stream_sync(s, HANG_MS) */
} b_op;

typedef struct b_call {
    rig *r;
    b_op op;
    uint64_t id;
    const kctx_arg *args;
    uint32_t nargs;
    fw_stream s;
    /* results */
    fw_status set_dev;
    kctx_status st;
    fw_status fst;
    kctx_check_report rep;
    fw_status seam;
    seam_mark delta; /* the thread's seam calls made by the call */
    int returned;
    int started;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} b_call;

static void *b_main(void *argp) {
    b_call *b = argp;
    rig *r = b->r;
    seam_mark m0 = {0, 0}, m1 = {0, 0};
    b->set_dev = r->fw->set_device(r->device);
    b->seam = seam_thread_calls(&m0.calls, &m0.enqueues);
    if (b->set_dev == FW_OK) {
        switch (b->op) {
        case B_LAUNCH:
            b->st = kctx_launch(r->ctx, b->id, b->args, b->nargs, b->s);
            break;
        case B_CHECK:
            b->rep = (kctx_check_report)KCTX_CHECK_REPORT_INIT;
            b->st = kctx_check(r->ctx, &b->rep);
            break;
        case B_SYNC:
            b->fst = r->fw->stream_sync(b->s, HANG_MS);
            break;
        }
    }
    if (b->seam == FW_OK) b->seam = seam_thread_calls(&m1.calls, &m1.enqueues);
    b->delta.calls = m1.calls - m0.calls;
    b->delta.enqueues = m1.enqueues - m0.enqueues;
    pthread_mutex_lock(&b->mu);
    b->returned = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static void b_init(b_call *b, rig *r, b_op op) {
    memset(b, 0, sizeof *b);
    b->r = r;
    b->op = op;
    b->st = KCTX_OK;
    b->fst = FW_OK;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
}

static int b_start(b_call *b) {
    b->started = pthread_create(&b->th, NULL, b_main, b) == 0;
    return CHECK(b->started, "cannot start thread B");
}

/* Whether the call has returned, waiting at most ms. */
static int b_returned(b_call *b, unsigned ms) {
    return pr_wait_flag(&b->mu, &b->cv, &b->returned, ms);
}

static void b_join(b_call *b) {
    if (b->started) pthread_join(b->th, NULL);
    b->started = 0;
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
}

/* Run one call on thread B and wait for it (bounded: a call that does not
 * return within HANG_MS is a failure; every hold is then released so that
 * the call can return, and the thread is joined). */
static int b_run(b_call *b, const char *what) {
    if (!b_start(b)) return 0;
    int ok =
        CHECK(b_returned(b, HANG_MS), "thread B: %s did not return within %u ms", what, HANG_MS);
    if (!ok) b->r->fw->hold_release_all ? (void)b->r->fw->hold_release_all() : (void)0;
    b_join(b);
    return ok && CHECK_FW_OK(b->r->fw, b->set_dev) && HOOK_OK(b->r->p, b->seam);
}

/* ------------------------------------------------------------------ */
/* two_threads_one_context_device_failure (K23, K34, K19, K35)          */

/*
 * Two framework threads, A (the probe's thread) and B, share one context,
 * each on its own stream (upstream: one context per process, several
 * serving threads).
 *
 *  1. K19 + K23: A's launch is held on the device right after its acquire
 *     step. B's eager launch (whose input is A's output) is accepted and
 *     returns while A is still held (launch waits for nothing on the host);
 *     B's stream is still busy while A is held and, once A is released,
 *     B's output is A's output plus B's second input: B ran after A.
 *  2. K34: while A's capture holds the context's streams, B's eager launch
 *     is CAPTURE_ACTIVE with zero enqueues on B's thread and on the device,
 *     and the capture survives. (Needs capture: NOT CHECKED without.)
 *  3. K35 (and K23 ordering): A launches again (held after its acquire
 *     step); B launches a callable whose task fails ON THE DEVICE
 *     (rig_failing_image: a tile kernel that reports CALLABLE_ERR_SHAPE);
 *     A launches once more before anyone checked. Released: A's first
 *     launch, ordered before the failure, is correct; the failure reaches B
 *     through its own stream's sync (where failures fail streams, fw.h
 *     task_failure_leaves_streams_ok) and B's check (DEVICE_ERROR, task
 *     0), within HANG_MS, never by a watchdog; A's launch after the failure
 *     computes nothing (the device error word gates it, K35) and its stream
 *     reports the failure as the driver says; after the check A's launch
 *     is POISONED with zero enqueues and A's graph from step 2 is refused
 *     on the device (counted); close works.
 *
 * Adds to prepare_beside_launches_in_flight (one held launch, one thread
 * preparing), prepare_works_and_foreign_launch_refused_during_capture (K34
 * without counting submissions) and the poison probes (one thread): a
 * second launching thread, the zero-submission count of the K34 refusal,
 * the data-dependency proof of K23's cross-stream order, and what a device
 * failure on one thread's stream does to the other thread's work.
 */
void probe_two_threads_one_context_device_failure(probe *p) {
    rig r;
    job a, b, a2, a3, a4;
    fw_stream sa, sb, sc, sa4;
    kctx_arg bad_args[6];
    int ha = -1, ga = -1, have_dev = 1;
    const int capture = fw_has_capture(p->fw);
    char part2[200] = "";
    if (!has_holds(p)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_VADD, "vector_add") ||
        !prepare_failing(&r, bad_args) || !rig_stream(&r, &sa) || !rig_stream(&r, &sb) ||
        !rig_stream(&r, &sc) || !rig_stream(&r, &sa4) || !job_vadd(&r, &a, ID_VADD, 512, 80, 0) ||
        !job_vadd(&r, &b, ID_VADD, 512, 81, 0) || !job_vadd(&r, &a2, ID_VADD, 256, 82, 0) ||
        !job_vadd(&r, &a3, ID_VADD, 384, 83, 0) || !job_vadd(&r, &a4, ID_VADD, 128, 84, 0))
        goto done;
    /* B's first input is A's output: B = A.out + B.in[1] */
    b.args[0] = KCTX_TENSOR(a.out[0], a.out_bytes[0]);
    for (size_t i = 0; i < b.n; i++) b.want[0][i] = a.want[0][i] + b.host_in[1][i];
    if (!job_clear(&r, &a, sa) || !job_clear(&r, &b, sb) || !rig_sync(&r, sa) || !rig_sync(&r, sb))
        goto done;

    /* 1. A held after its acquire step; B launches meanwhile */
    if (!HOOK_OK(p, rig_arm_after_acquire(&r, &ha)) || !CHECK_K(job_launch(&r, &a, sa), KCTX_OK) ||
        !HOOK_OK(p, p->fw->hold_wait_reached(ha, HOLD_MS)))
        goto done;
    b_call b1;
    b_init(&b1, &r, B_LAUNCH);
    b1.id = b.id, b1.args = b.args, b1.nargs = b.nargs, b1.s = sb;
    if (!b_start(&b1)) goto done;
    int returned = b_returned(&b1, HANG_MS);
    /* still held: nothing of B may have completed */
    fw_status qb = p->fw->stream_query(sb), qa = p->fw->stream_query(sa);
    p->fw->hold_release(ha);
    ha = -1;
    b_join(&b1);
    if (!CHECK(returned,
               "K19: B's eager launch did not return within %u ms while A's launch was held on "
               "the device: the launch path waited on the host",
               HANG_MS) ||
        !CHECK_FW_OK(p->fw, b1.set_dev) || !CHECK_K(b1.st, KCTX_OK) ||
        !CHECK(b1.delta.enqueues > 0, "B's accepted launch enqueued nothing") ||
        !CHECK(qa == FW_NOT_READY, "A's stream was %s while A was held", fw_status_name(qa)) ||
        !CHECK(qb == FW_NOT_READY,
               "K23: B's stream was %s while A (launched first) was still held after its acquire "
               "step: B's launch did not wait behind A's on the device",
               fw_status_name(qb)))
        goto done;
    if (!rig_sync(&r, sa) || !rig_sync(&r, sb) ||
        !job_expect(&r, &a, "A's launch (held, released)") ||
        !job_expect(&r, &b, "B's launch, whose input is A's output (K23: it must run after A)"))
        goto done;

    /* 2. K34: a launch of B while A's capture holds the context's streams */
    if (capture) {
        if (!rig_begin_capture(&r, sc)) goto done;
        kctx_status cs = job_launch(&r, &a2, sc);
        uint64_t d0 = 0, d1 = 0;
        b_call b2;
        b_init(&b2, &r, B_LAUNCH);
        b2.id = b.id, b2.args = b.args, b2.nargs = b.nargs, b2.s = sb;
        int counted = device_enqueues(p, r.device, &d0, &have_dev);
        int ran = counted && b_run(&b2, "the launch during A's capture");
        counted = ran && device_enqueues(p, r.device, &d1, &have_dev);
        int capturing = 0;
        fw_status cst = p->fw->capture_status(sc, &capturing);
        /* the checks first (the first failure is the probe's detail), then
         * the capture ends whatever they found */
        int held =
            CHECK_K(cs, KCTX_OK) && ran && counted && CHECK_K(b2.st, KCTX_CAPTURE_ACTIVE) &&
            CHECK(b2.delta.enqueues == 0,
                  "K34: B's refused launch made %" PRIu64 " enqueues on its thread",
                  b2.delta.enqueues) &&
            CHECK(!have_dev || d1 == d0,
                  "K34: the device took %" PRIu64 " enqueues during B's refused launch", d1 - d0) &&
            CHECK_FW_OK(p->fw, cst) &&
            CHECK(capturing, "A's capture did not survive B's refused launch");
        int ended = rig_end_capture(&r, sc, &ga);
        if (!held || !ended) goto done;
        if (!CHECK_FW_OK(p->fw, p->fw->stream_query(sb)) || !job_clear(&r, &a2, sc) ||
            !rig_replay(&r, ga, sc) || !rig_sync(&r, sc) ||
            !job_expect(&r, &a2, "A's graph captured while B was refused"))
            goto done;
        snprintf(part2, sizeof part2,
                 "; in A's capture B's launch CAPTURE_ACTIVE, 0 enqueues%s, capture kept",
                 have_dev ? " (device too)" : "");
    } else {
        pr_dropped(p,
                   "K34: B's launch while A's capture holds the context's streams (the %s "
                   "framework driver has no capture)",
                   p->fw->name);
    }

    /* 3. A held again; B's callable fails on the device; A launches after */
    if (!job_clear(&r, &a3, sa) || !job_clear(&r, &a4, sa4) || !rig_sync(&r, sa) ||
        !rig_sync(&r, sa4))
        goto done;
    if (!HOOK_OK(p, rig_arm_after_acquire(&r, &ha)) || !CHECK_K(job_launch(&r, &a3, sa), KCTX_OK) ||
        !HOOK_OK(p, p->fw->hold_wait_reached(ha, HOLD_MS)))
        goto done;
    b_call b3;
    b_init(&b3, &r, B_LAUNCH);
    b3.id = ID_FAIL, b3.args = bad_args, b3.nargs = 6, b3.s = sb;
    if (!b_run(&b3, "the launch of the failing callable while A was held") ||
        !CHECK_K(b3.st, KCTX_OK) || !CHECK_K(job_launch(&r, &a4, sa4), KCTX_OK))
        goto done;
    p->fw->hold_release(ha);
    ha = -1;
    const uint64_t t0 = now_ms();
    /* B learns of its failure through its own stream and its check */
    b_call bs, bc;
    b_init(&bs, &r, B_SYNC);
    bs.s = sb;
    if (!b_run(&bs, "the sync of its stream")) goto done;
    const fw_status want_sync = p->fw->task_failure_leaves_streams_ok ? FW_OK : FW_DEVICE_ERROR;
    if (bs.fst == FW_TIMEOUT) r.hung = 1;
    if (!CHECK(bs.fst != FW_TIMEOUT,
               "B's stream did not complete within %u ms after its task "
               "failed on the device",
               HANG_MS) ||
        !CHECK(bs.fst == want_sync, "B's stream sync after its task failed: %s, expected %s",
               fw_status_name(bs.fst), fw_status_name(want_sync)))
        goto done;
    b_init(&bc, &r, B_CHECK);
    if (!b_run(&bc, "check after the device failure")) goto done;
    const uint64_t t_reported = now_ms() - t0;
    if (!CHECK_K(bc.st, KCTX_DEVICE_ERROR) ||
        !CHECK(bc.rep.device_status == KCTX_DEVICE_ERROR && bc.rep.error_detail == 0,
               "B's check report: %s, failed task %" PRIu64 " (expected DEVICE_ERROR, task 0)",
               kctx_status_name(bc.rep.device_status), bc.rep.error_detail) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_POISONED, "phase %s after B's check",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    /* A: the launch ordered before the failure is intact; the launch after
     * it computed nothing */
    fw_status s4 = p->fw->stream_sync(sa4, HANG_MS);
    if (s4 == FW_TIMEOUT) r.hung = 1;
    if (!rig_sync(&r, sa) ||
        !job_expect(&r, &a3, "A's launch, held while B's failing launch was submitted") ||
        !CHECK(s4 == want_sync,
               "A's stream of the launch made after B's failing launch: %s, expected %s",
               fw_status_name(s4), fw_status_name(want_sync)) ||
        !job_untouched(&r, &a4, "A's launch made after B's failing launch (K35: gated)"))
        goto done;
    /* after the check: A's launches are refused on the host, enqueuing
     * nothing, and A's graph is refused on the device */
    seam_mark m0, m1;
    uint64_t d0 = 0, d1 = 0;
    if (!job_clear(&r, &a, sc) || !rig_sync(&r, sc) || !seam_mark_now(p, &m0) ||
        !device_enqueues(p, r.device, &d0, &have_dev) ||
        !CHECK_K(job_launch(&r, &a, sa), KCTX_POISONED) || !seam_mark_now(p, &m1) ||
        !device_enqueues(p, r.device, &d1, &have_dev) ||
        !CHECK(m1.enqueues == m0.enqueues, "A's POISONED launch made %" PRIu64 " enqueues",
               m1.enqueues - m0.enqueues) ||
        !CHECK(!have_dev || d1 == d0,
               "the device took %" PRIu64 " enqueues from A's refused "
               "launch",
               d1 - d0))
        goto done;
    char part3g[120] = "";
    if (capture) {
        kctx_check_report before = KCTX_CHECK_REPORT_INIT, after = KCTX_CHECK_REPORT_INIT;
        kctx_check(r.ctx, &before);
        if (!job_clear(&r, &a2, sc) || !rig_sync(&r, sc) || !rig_replay(&r, ga, sc)) goto done;
        fw_status gs = p->fw->stream_sync(sc, HANG_MS);
        if (gs == FW_TIMEOUT) r.hung = 1;
        if (!CHECK(gs != FW_TIMEOUT, "A's refused replay hangs") ||
            !job_untouched(&r, &a2, "A's graph replayed after the poison (K35)"))
            goto done;
        kctx_check(r.ctx, &after);
        if (!CHECK(after.refused_replays == before.refused_replays + 1,
                   "check counts %u refused replays after A's replay, %u before",
                   after.refused_replays, before.refused_replays))
            goto done;
        snprintf(part3g, sizeof part3g, ", A's graph refused on the device (counted)");
    }
    pr_note(p,
            "B's launch returned while A was held, ran after A (reads A's output)%s; B's task "
            "failed on the device: B's sync %s, check DEVICE_ERROR (task 0) %" PRIu64
            " ms after release; A: before it correct, after it untouched (%s); then A POISONED, "
            "0 enqueues%s",
            part2, fw_status_name(bs.fst), t_reported, fw_status_name(s4), part3g);
done:
    if (ha >= 0) p->fw->hold_release(ha);
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* stale_completion_report (K23, K21)                                   */

/*
 * Upstream runtimes keep per-round completion reports in device memory
 * (per-core "done" words, a "finished" flag) and clear them before every
 * round — one memset per launch — so that round N+1 cannot take round N's
 * report, still sitting there, for its own (simpler's handshake buffers).
 * kctx clears nothing per launch. The mechanism that keeps a report to its
 * round:
 *  - the host learns of a round's completion only through the event chain,
 *    whose five shared events every launch records and then waits within
 *    the same launch (K21): a caller stream's wait binds to its own
 *    launch's AICPU_DONE record, never to a previous round's;
 *  - on the device, the per-run words are tied to the launch identity
 *    (rt_layout.h G1-G5): the guard goes free -> this launch's id only
 *    (G3), only its holder releases it (G5; RESIDENT: end of run, after
 *    every worker of the run left), and under RESIDENT the acquire step
 *    resets the run's report words (tasks_done, run_state, the queue, the
 *    sched claim, the mailboxes) only after it took the guard, so a late
 *    report of round N cannot land in round N+1's words; workers whose
 *    launch id is not the holder's leave untouched. HOST_ORDERED keeps no
 *    per-run completion word (the AICore stream's order is the tasks'
 *    completion). The error word and the counters are sticky, never
 *    per-run.
 *
 * The probe: round N-1 completes (its report delivered); round N is held
 * right after its acquire step, so its completion report (RESIDENT: the
 * scheduler's end of run and guard release; HOST_ORDERED: its tasks and
 * finalize's release) is held back; round N+1 is submitted on another
 * stream. While held, neither N's nor N+1's stream may complete (a wait
 * bound to round N-1's report would let it); released, both rounds compute
 * their own results in full (scale_add_chain: 4 dependent tasks, so a run
 * that took an earlier run's task count as its own would end before its
 * last task). Then 6 more rounds back to back on two streams without a
 * host sync. Every launch makes 0 fills, 0 host-to-device copies and 0
 * host writes of device words (the seam's per-operation counts), under
 * both strategies; check reports no refused or concurrent launch.
 *
 * Adds to back_to_back_replays_without_host_sync (graphs, one id per
 * graph) and the overlap probes (refused runs): eager rounds with a held
 * report, and the zero per-launch clearing.
 */
#define ROUNDS 6

typedef struct clear_counts {
    uint64_t fills, copies, writes;
} clear_counts;

static clear_counts clears_now(void) {
    clear_counts c = {kctx_thread_platform_calls(KCTX_POP_MEMSET_ASYNC),
                      kctx_thread_platform_calls(KCTX_POP_MEMCPY_HTOD_ASYNC),
                      kctx_thread_platform_calls(KCTX_POP_ATOMIC_WRITE_U32)};
    return c;
}

/* One launch, counting its clears into *total and *launches. */
static int counted_launch(rig *r, const job *j, fw_stream s, clear_counts *total,
                          unsigned *launches) {
    clear_counts c0 = clears_now();
    kctx_status st = job_launch(r, j, s);
    clear_counts c1 = clears_now();
    total->fills += c1.fills - c0.fills;
    total->copies += c1.copies - c0.copies;
    total->writes += c1.writes - c0.writes;
    (*launches)++;
    return CHECK_K(st, KCTX_OK);
}

void probe_stale_completion_report(probe *p) {
    rig r;
    job prev, n, n1, more[ROUNDS];
    fw_stream sa, sb;
    int h = -1;
    clear_counts total = {0, 0, 0};
    unsigned launches = 0;
    if (!has_holds(p)) return;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_CHAIN, "scale_add_chain") ||
        !rig_stream(&r, &sa) || !rig_stream(&r, &sb) ||
        !job_chain(&r, &prev, ID_CHAIN, 300, 90, 0) || !job_chain(&r, &n, ID_CHAIN, 512, 91, 0) ||
        !job_chain(&r, &n1, ID_CHAIN, 384, 92, 0))
        goto done;
    for (unsigned i = 0; i < ROUNDS; i++)
        if (!job_chain(&r, &more[i], ID_CHAIN, 64 + 96 * i, 93 + i, 0)) goto done;
    /* round N-1: completes, its report delivered */
    if (!counted_launch(&r, &prev, sa, &total, &launches) || !rig_sync(&r, sa) ||
        !job_expect(&r, &prev, "round N-1"))
        goto done;
    if (!job_clear(&r, &n, sa) || !job_clear(&r, &n1, sb) || !rig_sync(&r, sa) || !rig_sync(&r, sb))
        goto done;
    /* round N held after its acquire step; round N+1 submitted meanwhile */
    if (!HOOK_OK(p, rig_arm_after_acquire(&r, &h)) ||
        !counted_launch(&r, &n, sa, &total, &launches) ||
        !HOOK_OK(p, p->fw->hold_wait_reached(h, HOLD_MS)) ||
        !counted_launch(&r, &n1, sb, &total, &launches))
        goto done;
    fw_status qa = p->fw->stream_query(sa), qb = p->fw->stream_query(sb);
    p->fw->hold_release(h);
    h = -1;
    if (!CHECK(qa == FW_NOT_READY,
               "round N's caller stream was %s while round N was held after its acquire step: its "
               "wait took an earlier round's completion report",
               fw_status_name(qa)) ||
        !CHECK(qb == FW_NOT_READY,
               "round N+1's caller stream was %s while round N (before it) was held: it took an "
               "earlier round's completion report",
               fw_status_name(qb)))
        goto done;
    if (!rig_sync(&r, sa) || !rig_sync(&r, sb) ||
        !job_expect(&r, &n, "round N (its completion report held back, then released)") ||
        !job_expect(&r, &n1, "round N+1 (submitted while round N's report was held back)"))
        goto done;
    /* more rounds, back to back on two streams, no host sync between */
    for (unsigned i = 0; i < ROUNDS; i++)
        if (!job_clear(&r, &more[i], i % 2 ? sb : sa)) goto done;
    if (!rig_sync(&r, sa) || !rig_sync(&r, sb)) goto done;
    for (unsigned i = 0; i < ROUNDS; i++)
        if (!counted_launch(&r, &more[i], i % 2 ? sb : sa, &total, &launches)) goto done;
    if (!rig_sync(&r, sa) || !rig_sync(&r, sb)) goto done;
    for (unsigned i = 0; i < ROUNDS; i++) {
        char when[80];
        snprintf(when, sizeof when, "round %u of %u back to back", i + 1, ROUNDS);
        if (!job_expect(&r, &more[i], when)) goto done;
    }
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    if (!CHECK_K(kctx_check(r.ctx, &rep), KCTX_OK) ||
        !CHECK(rep.refused_replays == 0 && rep.concurrent_launches == 0,
               "check: %u refused, %u concurrent launches (expected 0, 0)", rep.refused_replays,
               rep.concurrent_launches) ||
        !CHECK(total.fills == 0 && total.copies == 0 && total.writes == 0,
               "%u launches made %" PRIu64 " fills (memset_async), %" PRIu64
               " host-to-device copies and %" PRIu64
               " host writes of device words: a launch clears its report words",
               launches, total.fills, total.copies, total.writes))
        goto done;
    pr_note(p,
            "round N held after its acquire step (its completion report held back), round N+1 "
            "submitted on another stream: neither stream completed early, both correct; %u more "
            "rounds back to back correct; %u launches made 0 fills, 0 host-to-device copies, 0 "
            "host writes; check: 0 refused, 0 concurrent",
            ROUNDS, launches);
done:
    if (h >= 0) p->fw->hold_release(h);
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* init_first_device_program_fails (K11, K17)                           */

/*
 * Kernel init launches no kernel: its device work (K11) is the runtime
 * image's fill on the AICPU stream, then the image's and the architecture
 * table's copies and the args block's fill, all waited for (bounded)
 * before init returns. Upstream runtimes start with an init kernel whose
 * failure on the device must not leave a half-made context; kctx's
 * counterpart is that first fill. The probe makes it fail ON THE DEVICE
 * (fw.h fill_fault_arm: its enqueue succeeds, the fill itself fails and
 * its stream takes the error) and checks: init returns DEVICE_ERROR; it
 * rolls back everything it made — at once (NEW, claim free) or, as K17
 * says of an init upload whose wait failed, CLOSING with everything kept
 * until close releases it; prepare and launch afterwards are INVALID_STATE
 * with zero platform calls (and zero device enqueues); close OK, destroy
 * OK; the device's live objects and memory are back at the baseline; a
 * new context on the device works.
 *
 * Adds to init_fault_sweep (every init call failing at the seam, before
 * the platform sees it): a failure the platform reports from the device
 * after every enqueue succeeded.
 */
void probe_init_first_device_program_fails(probe *p) {
    if (!HAS_HOOK(p, fill_fault_arm) || !HAS_HOOK(p, fill_fault_hits) ||
        !HAS_HOOK(p, fill_fault_clear) || !HAS_HOOK(p, live_counts))
        return;
    int device = 0, fault = -1, have_dev = 1;
    fw_counts base, now;
    fw_stream s = 0;
    fw_devptr buf = 0;
    kctx_context c = 0;
    const kctx_kernel_config cfg = probe_config(p);
    if (!CHECK_FW_OK(p->fw, p->fw->current_device(&device)) ||
        !CHECK_FW_OK(p->fw, p->fw->live_counts(device, &base)))
        return;
    if (!CHECK_K(kctx_context_create(p->fw->platform, &c), KCTX_OK)) return;
    if (!HOOK_OK(p, p->fw->fill_fault_arm(device, &fault))) goto done;
    seam_mark i0, i1;
    if (!seam_mark_now(p, &i0)) goto done;
    kctx_status st = kctx_kernel_init(c, &cfg);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", kctx_last_error(c));
    if (!seam_mark_now(p, &i1)) goto done;
    uint64_t hits = 0;
    fw_status hs = p->fw->fill_fault_hits(fault, &hits);
    p->fw->fill_fault_clear();
    fault = -1;
    kctx_phase ph = (kctx_phase)-1;
    kctx_get_phase(c, &ph);
    if (!HOOK_OK(p, hs) ||
        !CHECK(hits == 1, "the fill armed to fail on the device did not run during init") ||
        !CHECK_K(st, KCTX_DEVICE_ERROR) ||
        !CHECK(ph == KCTX_PHASE_NEW || ph == KCTX_PHASE_CLOSING,
               "init failed on the device: phase %s (expected NEW, rolled back, or CLOSING until "
               "close releases, K17)",
               kctx_phase_name(ph)))
        goto done;
    pr_log(p, "init: %s after %" PRIu64 " platform calls (%" PRIu64 " enqueues): %s; phase %s",
           kctx_status_name(st), i1.calls - i0.calls, i1.enqueues - i0.enqueues, msg,
           kctx_phase_name(ph));
    if (ph == KCTX_PHASE_NEW) {
        if (!CHECK_FW_OK(p->fw, p->fw->live_counts(device, &now)) ||
            !CHECK(memcmp(&now, &base, sizeof now) == 0,
                   "init rolled back to NEW but the device keeps objects or memory it made"))
            goto done;
    }
    /* prepare and launch afterwards: refused with no platform call */
    const void *img;
    size_t img_size;
    rig scratch; /* only for the image bytes */
    memset(&scratch, 0, sizeof scratch);
    scratch.p = p;
    scratch.fw = p->fw;
    if (!rig_image(&scratch, "vector_add", &img, &img_size) ||
        !CHECK_FW_OK(p->fw, p->fw->stream_create(&s)) ||
        !CHECK_FW_OK(p->fw, p->fw->mem_alloc(256, &buf)))
        goto images;
    const kctx_arg args[4] = {KCTX_TENSOR(buf, 256), KCTX_TENSOR(buf, 256), KCTX_TENSOR(buf, 256),
                              KCTX_SCALAR(64)};
    seam_mark m0, m1, m2;
    uint64_t d0 = 0, d1 = 0;
    if (!device_enqueues(p, device, &d0, &have_dev) || !seam_mark_now(p, &m0)) goto images;
    kctx_status ps = kctx_prepare(c, ID_VADD, img, img_size);
    if (!seam_mark_now(p, &m1)) goto images;
    kctx_status ls = kctx_launch(c, ID_VADD, args, 4, s);
    if (!seam_mark_now(p, &m2) || !device_enqueues(p, device, &d1, &have_dev)) goto images;
    if (!CHECK_K(ps, KCTX_INVALID_STATE) || !CHECK_K(ls, KCTX_INVALID_STATE) ||
        !CHECK(m1.calls == m0.calls,
               "prepare after the failed init made %" PRIu64 " platform calls",
               m1.calls - m0.calls) ||
        !CHECK(m2.calls == m1.calls, "launch after the failed init made %" PRIu64 " platform calls",
               m2.calls - m1.calls) ||
        !CHECK(!have_dev || d1 == d0, "the device took %" PRIu64 " enqueues from them", d1 - d0))
        goto images;
    if (!CHECK_K(kctx_close(c), KCTX_OK) || !CHECK_K(kctx_destroy(c), KCTX_OK)) goto images;
    c = 0;
    if (!CHECK_FW_OK(p->fw, p->fw->mem_free(buf))) goto images;
    buf = 0;
    if (!CHECK_FW_OK(p->fw, p->fw->stream_destroy(s))) goto images;
    s = 0;
    if (!CHECK_FW_OK(p->fw, p->fw->live_counts(device, &now)) ||
        !CHECK(memcmp(&now, &base, sizeof now) == 0,
               "after the failed init and close the device keeps objects or memory"))
        goto images;
    /* the claim is free: a new context borrows the device and works */
    rig r;
    job j;
    fw_stream t;
    if (rig_open(p, &r, NULL)) {
        if (rig_prepare(&r, ID_VADD, "vector_add") && rig_stream(&r, &t) &&
            job_vadd(&r, &j, ID_VADD, 200, 95, 0) && CHECK_K(job_launch(&r, &j, t), KCTX_OK) &&
            rig_sync(&r, t))
            job_expect(&r, &j, "a new context after the failed init");
    }
    rig_close(&r);
    if (pr_ok(p))
        pr_note(p,
                "init's first device work (the runtime image's fill) failed on the device after "
                "its enqueue succeeded: init DEVICE_ERROR, %s; prepare and launch INVALID_STATE "
                "with 0 platform calls%s; close and destroy OK, device back at its baseline; a new "
                "context works",
                ph == KCTX_PHASE_NEW ? "rolled back at once (NEW)"
                                     : "CLOSING until close released everything (K17)",
                have_dev ? ", 0 device enqueues" : "");
images:
    for (unsigned i = 0; i < scratch.nhost; i++) free(scratch.host[i]);
done:
    if (fault >= 0) p->fw->fill_fault_clear();
    if (buf) p->fw->mem_free(buf);
    if (s) p->fw->stream_destroy(s);
    if (c) {
        kctx_close(c);
        kctx_destroy(c);
    }
}
