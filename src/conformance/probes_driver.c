/*
 * probes_driver.c — fault sweeps BELOW the adapter (issue 34): the seam's
 * sweeps (probes_sweep.c, probes_lifecycle.c) fail one adapter operation at
 * a time, before the adapter is reached; an operation that makes several
 * driver calls (a CUDA stream destroy also destroys the context's word
 * stream; an OpenCL launch sets arguments then enqueues) can fail half-way,
 * which they cannot see. These probes fail each call the adapter makes to
 * the runtime, one at a time, through a failing layer in front of the
 * runtime (tests/common/fault_layer.h; its control table, which these probes
 * drive: fault_control.h; fw.h, fault_layer), which also follows every
 * handle kctx makes.
 *
 * After every run, whatever failed:
 *  - every handle kctx made was destroyed by exactly one successful call,
 *    and no call named it afterwards (the layer's live count is 0 and it saw
 *    no violation); no object the framework made was released by kctx;
 *  - a failed close, retried, finishes (K26: a failed release keeps its
 *    handle and the retry releases exactly the remainder), destroy succeeds
 *    (K27), and the device claim is free again: a new context's kernel init
 *    on the device succeeds (K10);
 *  - the step that failed returned an error (not OK, not DEVICE_LOST for a
 *    non-fatal code) whose message names the driver call that failed.
 * The fatal sweep fails each call with a code the adapter classifies as a
 * lost device instead: the context is quarantined (DEVICE_LOST, K29), close
 * answers DEVICE_LOST without a single driver call and destroy BUSY (K30);
 * the owner's reset then lets close abandon every handle with no driver call
 * and release the claim (K36).
 * The launch sweeps fail each call of one launch, eager and captured: the
 * launch returns the error, the caller's stream drains (K24: never left
 * waiting on something that will not come), and the next launch runs or is
 * refused with no driver call at all (a poisoned context, K35).
 */
#include "probes.h"

#include "fault_control.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    ID = 1,
    MAX_RETRIES = 4
};

static const kfl_control *layer(probe *p) {
    return p->fw->fault_layer ? p->fw->fault_layer() : NULL;
}

/* A kctx call on the calling thread, watched by the layer. */
#define WATCHED(L, call) ((L)->watch(1), wst_ = (call), (L)->watch(0), wst_)

/* The layer's verdict after a run: nothing of kctx's left, no violation. */
static int layer_clean(probe *p, const kfl_control *L, const char *when) {
    char first[400];
    uint64_t v = L->violations(first, sizeof first);
    uint64_t live = L->live();
    return CHECK(v == 0, "%s: %llu violation(s) below the adapter; first: %s", when,
                 (unsigned long long)v, first) &&
           CHECK(live == 0, "%s: %llu handle(s) kctx made are still alive", when,
                 (unsigned long long)live);
}

/* The failed step's message names the driver call the layer failed. */
static int names_call(probe *p, kctx_context c, kctx_status st, const char *fired,
                      const char *step) {
    const char *msg = kctx_last_error(c);
    return CHECK(strstr(msg, fired) != NULL,
                 "%s failed (%s) when %s failed below the adapter, but its message does not name "
                 "it: %s",
                 step, kctx_status_name(st), fired, msg);
}

/* Close until it succeeds (K26): at most MAX_RETRIES failed tries; BUSY
 * (K25: work of kctx's own still running, a failed wait left it going) is
 * retried every millisecond for up to HANG_MS and not counted. */
static kctx_status close_retrying(const kfl_control *L, kctx_context c, unsigned *tries) {
    kctx_status wst_ = KCTX_OK, st = KCTX_OK;
    unsigned busy = 0;
    for (*tries = 0; *tries < MAX_RETRIES;) {
        st = WATCHED(L, kctx_close(c));
        if (st == KCTX_BUSY && busy++ < HANG_MS) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
            continue;
        }
        ++*tries;
        if (st == KCTX_OK || st == KCTX_DEVICE_LOST) break;
    }
    return st;
}

/* The claim is free: a new context initialises on the device and closes. */
static int claim_free(probe *p, const kfl_control *L, const char *when) {
    kctx_status wst_;
    kctx_context c = 0;
    kctx_kernel_config cfg = probe_config(p);
    if (!CHECK_K(kctx_context_create(p->fw->platform, &c), KCTX_OK)) return 0;
    kctx_status st = WATCHED(L, kctx_kernel_init(c, &cfg));
    int ok = CHECK(st == KCTX_OK, "%s: a new context's init answers %s: %s (the claim is held?)",
                   when, kctx_status_name(st), kctx_last_error(c));
    if (st == KCTX_OK) ok &= CHECK_K(WATCHED(L, kctx_close(c)), KCTX_OK);
    ok &= CHECK_K(kctx_destroy(c), KCTX_OK);
    return ok && layer_clean(p, L, when);
}

/* ---- the lifecycle: init, prepare, one launch, close --------------------- */

typedef struct life {
    rig r; /* the framework's objects (the rig's context is not used) */
    fw_stream s;
    job a;
    const void *image;
    size_t image_size;
} life;

static int life_open(probe *p, life *w) {
    memset(w, 0, sizeof *w);
    w->r.p = p;
    w->r.fw = p->fw;
    if (!CHECK_FW_OK(p->fw, p->fw->current_device(&w->r.device))) return 0;
    return rig_image(&w->r, "vector_add", &w->image, &w->image_size) && rig_stream(&w->r, &w->s) &&
           job_vadd(&w->r, &w->a, ID, 64, 77, 0);
}

/* One run with the nth call failing with `code` (nth 0: none). *calls: the
 * watched calls of the run; *fired: whether the armed call happened. */
static int life_run(probe *p, const kfl_control *L, life *w, uint64_t nth, int code,
                    uint64_t *calls, int *fired) {
    kctx_status wst_;
    const int fatal = code == L->fatal_code && code != 0;
    char when[160];
    L->reset();
    L->arm(nth, code);
    kctx_context c = 0;
    kctx_kernel_config cfg = probe_config(p);
    if (!CHECK_K(kctx_context_create(p->fw->platform, &c), KCTX_OK)) return 0;
    w->r.ctx = c;
    const char *step = "kernel init";
    kctx_status st = WATCHED(L, kctx_kernel_init(c, &cfg));
    if (st == KCTX_OK) {
        step = "prepare";
        st = WATCHED(L, kctx_prepare(c, ID, w->image, w->image_size));
    }
    if (st == KCTX_OK) {
        step = "launch";
        st = WATCHED(L, job_launch(&w->r, &w->a, w->s));
        /* K24: whatever the launch did, the caller's stream drains */
        fw_status ss = p->fw->stream_sync(w->s, HANG_MS);
        CHECK(ss != FW_TIMEOUT,
              "call %llu (%s) failed in the launch: the caller's stream is "
              "still busy after %u ms",
              (unsigned long long)nth, L->fired(), HANG_MS);
    }
    const char *fired_at = L->fired();
    *fired = fired_at[0] != 0;
    snprintf(when, sizeof when, "call %llu (%s) failing with %d", (unsigned long long)nth,
             *fired ? fired_at : "not reached", code);
    /* A fatal code quarantines (K29) unless the adapter absorbed that one
     * failure (a cleanup it retries, a destroy it repeats later): the
     * runtime error slot says which. */
    kctx_status lost = KCTX_OK;
    (void)kctx_runtime_error(c, &lost, NULL, 0);
    const int quarantined = fatal && *fired && lost == KCTX_DEVICE_LOST;
    if (st != KCTX_OK) {
        CHECK(*fired, "%s: %s answers %s with no failure below the adapter: %s", when, step,
              kctx_status_name(st), kctx_last_error(c));
        if (quarantined)
            CHECK(st == KCTX_DEVICE_LOST, "%s: %s answers %s, not DEVICE_LOST (K29)", when, step,
                  kctx_status_name(st));
        else if (!fatal) /* (a fatal code before the claim: DEVICE_LOST, not quarantined) */
            CHECK(st != KCTX_DEVICE_LOST, "%s: a non-fatal code made %s answer DEVICE_LOST", when,
                  step);
        names_call(p, c, st, fired_at, step);
    }
    kctx_phase ph = KCTX_PHASE_NEW;
    (void)kctx_get_phase(c, &ph);
    unsigned tries = 0;
    kctx_status cs = KCTX_OK;
    if (quarantined) {
        /* K30: quarantined, close releases nothing and makes no call */
        uint64_t before = L->calls();
        CHECK(WATCHED(L, kctx_close(c)) == KCTX_DEVICE_LOST,
              "%s: close of a quarantined context did not answer DEVICE_LOST (K30)", when);
        CHECK(L->calls() == before,
              "%s: close of a quarantined context made %llu driver call(s) (K30)", when,
              (unsigned long long)(L->calls() - before));
        CHECK_K(kctx_destroy(c), KCTX_BUSY);
        /* K36: the owner resets the device; close abandons everything */
        if (CHECK_FW_OK(p->fw, p->fw->owner_reset(w->r.device))) {
            L->device_reset();
            w->r.device_reset = 1;
        }
        before = L->calls();
        CHECK_K(WATCHED(L, kctx_close(c)), KCTX_OK);
        CHECK(L->calls() == before,
              "%s: close after the owner's reset made %llu driver call(s) (K36)", when,
              (unsigned long long)(L->calls() - before));
    } else if (ph != KCTX_PHASE_NEW) {
        cs = close_retrying(L, c, &tries);
        if (!*fired && L->fired()[0]) {
            /* the armed call was one of close's */
            *fired = 1;
            snprintf(when, sizeof when, "call %llu (%s) failing with %d", (unsigned long long)nth,
                     L->fired(), code);
            step = "close";
        }
        CHECK(cs == KCTX_OK, "%s: close after %u tries answers %s: %s (K26)", when, tries,
              kctx_status_name(cs), kctx_last_error(c));
        if (tries > 1) CHECK(*fired, "%s: close failed with nothing failed below it", when);
    }
    pr_log(p, "%s: %s answers %s; close %s after %u tr%s", when, step, kctx_status_name(st),
           kctx_status_name(cs), tries, tries == 1 ? "y" : "ies");
    CHECK_K(kctx_destroy(c), KCTX_OK); /* K27 */
    w->r.ctx = 0;
    *calls = L->calls();
    if (!*fired && L->fired()[0]) *fired = 1; /* a call of destroy's: K28 says none */
    L->arm(0, 0);
    int ok = layer_clean(p, L, when);
    if (ok) ok = claim_free(p, L, when);
    if (w->r.device_reset) {
        /* the framework's objects went with the reset: make new ones */
        w->r.nstreams = w->r.nbufs = 0;
        w->r.device_reset = 0;
        for (unsigned i = 1; i < w->r.nhost; i++) free(w->r.host[i]); /* [0]: the image */
        w->r.nhost = 1;
        ok = ok && rig_stream(&w->r, &w->s) && job_vadd(&w->r, &w->a, ID, 64, 77, 0);
    }
    return ok && p->failures == 0;
}

static void lifecycle_sweep(probe *p, int fatal) {
    const kfl_control *L = layer(p);
    if (fatal && !L->fatal_code) {
        pr_na(p, "the %s layer has no fatal code", L->api);
        return;
    }
    if (fatal && !HAS_HOOK(p, owner_reset)) return;
    life w;
    if (!life_open(p, &w)) goto done;
    uint64_t total = 0;
    int fired = 0;
    if (!life_run(p, L, &w, 0, 0, &total, &fired)) goto done;
    CHECK(total > 0, "the lifecycle made no call below the adapter: is the layer in front?");
    /* Until a run makes fewer calls than k: the count moves from run to
     * run, with the machine's load (the bounded waits poll the driver until
     * the work is done: on PoCL a clean lifecycle made 92 calls alone and
     * 109 beside another test), so the calibration only caps the sweep. */
    uint64_t k = 1;
    for (; k <= 4 * total + 16 && p->failures == 0; k++) {
        uint64_t calls = 0;
        if (!life_run(p, L, &w, k, fatal ? L->fatal_code : L->nonfatal_code, &calls, &fired)) break;
        if (!fired) break; /* past the last call: the run was clean */
    }
    if (p->failures == 0) {
        /* It ends with a run that made fewer calls than k (a clean run);
         * the cap is only a guard against a run that never ends. */
        CHECK(!fired, "the sweep reached its cap, call %llu (the clean run made %llu)",
              (unsigned long long)k, (unsigned long long)total);
        pr_note(p,
                "%llu %s calls below the adapter (init, prepare, launch, close), each failed "
                "once with %s code %d: every handle destroyed once, claim released",
                (unsigned long long)total, L->api, fatal ? "fatal" : "non-fatal",
                fatal ? L->fatal_code : L->nonfatal_code);
    }
done:
    L->arm(0, 0);
    rig_close(&w.r);
}

void probe_driver_fault_sweep_lifecycle(probe *p) { lifecycle_sweep(p, 0); }
void probe_driver_fault_sweep_fatal(probe *p) { lifecycle_sweep(p, 1); }

/* ---- one launch, eager and captured --------------------------------------- */

static int launch_run(probe *p, const kfl_control *L, life *w, int captured, uint64_t nth,
                      uint64_t *calls, int *fired) {
    kctx_status wst_;
    char when[160];
    L->reset();
    rig *r = &w->r;
    kctx_context c = 0;
    kctx_kernel_config cfg = probe_config(p);
    if (!CHECK_K(kctx_context_create(p->fw->platform, &c), KCTX_OK)) return 0;
    r->ctx = c;
    if (!CHECK_K(WATCHED(L, kctx_kernel_init(c, &cfg)), KCTX_OK) ||
        !CHECK_K(WATCHED(L, kctx_prepare(c, ID, w->image, w->image_size)), KCTX_OK)) {
        (void)WATCHED(L, kctx_close(c));
        (void)kctx_destroy(c);
        return 0;
    }
    if (captured && !rig_begin_capture(r, w->s)) return 0;
    uint64_t before = L->calls();
    if (nth) L->arm(before + nth, L->nonfatal_code);
    kctx_status st = WATCHED(L, job_launch(r, &w->a, w->s));
    *calls = L->calls() - before;
    const char *fired_at = L->fired(); /* (before arm clears it) */
    L->arm(0, 0);
    *fired = nth && fired_at[0];
    snprintf(when, sizeof when, "%s launch, call %llu (%s) failing",
             captured ? "captured" : "eager", (unsigned long long)nth,
             *fired ? fired_at : "not reached");
    if (nth && *fired) {
        CHECK(st != KCTX_OK && st != KCTX_DEVICE_LOST, "%s: launch answers %s", when,
              kctx_status_name(st));
        if (st != KCTX_OK) names_call(p, c, st, fired_at, "launch");
    } else {
        CHECK_K(st, KCTX_OK);
    }
    if (captured) {
        /* the capture ends: a launch never leaves an unjoined fork (K24) */
        fw_graph g = 0;
        fw_status es = p->fw->end_capture(w->s, &g);
        CHECK(es == FW_OK || (es == FW_CAPTURE_INVALIDATED && st == KCTX_CAPTURE_BROKEN),
              "%s: ending the capture answers %s (launch said %s)", when, fw_status_name(es),
              kctx_status_name(st));
        if (g) CHECK_FW_OK(p->fw, p->fw->graph_destroy(g));
    }
    /* K24: the caller's stream drains */
    CHECK(p->fw->stream_sync(w->s, HANG_MS) != FW_TIMEOUT,
          "%s: the caller's stream is still busy after %u ms (K24)", when, HANG_MS);
    /* the next launch runs, or is refused without a driver call (K9, K35) */
    uint64_t b2 = L->calls();
    kctx_status next = WATCHED(L, job_launch(r, &w->a, w->s));
    if (next != KCTX_OK)
        CHECK(L->calls() == b2, "%s: the next launch is refused (%s) after %llu driver call(s)",
              when, kctx_status_name(next), (unsigned long long)(L->calls() - b2));
    CHECK(p->fw->stream_sync(w->s, HANG_MS) != FW_TIMEOUT,
          "%s: the next launch left the caller's stream busy", when);
    unsigned tries = 0;
    kctx_status cs = close_retrying(L, c, &tries);
    CHECK(cs == KCTX_OK, "%s: close answers %s: %s", when, kctx_status_name(cs),
          kctx_last_error(c));
    CHECK_K(kctx_destroy(c), KCTX_OK);
    r->ctx = 0;
    return layer_clean(p, L, when) && p->failures == 0;
}

static void launch_sweep(probe *p, int captured) {
    const kfl_control *L = layer(p);
    life w;
    if (!life_open(p, &w)) goto done;
    uint64_t total = 0, calls = 0;
    int fired = 0;
    if (!launch_run(p, L, &w, captured, 0, &total, &fired)) goto done;
    CHECK(total > 0, "a launch made no call below the adapter: is the layer in front?");
    /* A launch makes no bounded wait (K19): its count is exact. */
    for (uint64_t k = 1; k <= total && p->failures == 0; k++) {
        if (!launch_run(p, L, &w, captured, k, &calls, &fired)) break;
        CHECK(fired, "call %llu of %llu of the launch was not reached", (unsigned long long)k,
              (unsigned long long)total);
    }
    if (p->failures == 0)
        pr_note(p,
                "%llu %s calls below the adapter in one %s launch, each failed once: the "
                "launch refused or poisoned, the caller's stream drained, all released",
                (unsigned long long)total, L->api, captured ? "captured" : "eager");
done:
    L->arm(0, 0);
    rig_close(&w.r);
}

void probe_driver_fault_sweep_launch_eager(probe *p) { launch_sweep(p, 0); }
void probe_driver_fault_sweep_launch_captured(probe *p) { launch_sweep(p, 1); }
