/*
 * probes_cold.c — cold capture (issue 13; K14-K17, K9): prepare works
 * inside an active capture — also after a captured launch pulled the
 * context's streams into it, in every capture mode, from another thread —
 * adds no node to the graph, leaves the capture and the thread's capture
 * mode as they were, refuses without disturbing the capture, works beside a
 * launch in flight, never delays a launch of another id, and an upload
 * whose wait timed out poisons the context and keeps close BUSY until the
 * upload stream is idle.
 *
 * Every probe ends with rig_close: graphs destroyed, close OK, the device's
 * live counts back to the baseline.
 */
#include "probes.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum {
    ID_A = 1, /* vector_add */
    ID_B = 2, /* scale_add_chain */
    ID_C = 3, /* vector_add's bytes again: shares A's upload (K14) */
    ID_E = 4  /* blocked_matmul */
};

#define COLD_REPLAYS 20

static const char *mode_name(fw_capture_mode m) {
    switch (m) {
    case FW_CAPTURE_GLOBAL:
        return "global";
    case FW_CAPTURE_THREAD_LOCAL:
        return "thread-local";
    case FW_CAPTURE_RELAXED:
        return "relaxed";
    }
    return "?";
}

static int have_modes(const probe *p) {
    return p->fw->begin_capture_mode && p->fw->exchange_capture_mode;
}

/* The calling thread's own capture mode, read through the exchange (set to
 * relaxed and straight back). */
static fw_status read_thread_mode(const fw_driver *fw, fw_capture_mode *m) {
    fw_capture_mode x = FW_CAPTURE_RELAXED;
    fw_status st = fw->exchange_capture_mode(&x);
    if (st != FW_OK) return st;
    fw_capture_mode back = x;
    st = fw->exchange_capture_mode(&back);
    if (st == FW_OK) *m = x;
    return st;
}

static int begin_in_mode(rig *r, fw_stream s, fw_capture_mode mode) {
    if (!have_modes(r->p)) return rig_begin_capture(r, s);
    return CHECK_FW_OK(r->fw, r->fw->begin_capture_mode(s, mode));
}

/* After `what`, inside the capture on s: s is still capturing, the context
 * is READY, and (with the mode hooks) the thread's capture mode is `want`.
 * (The capture-status query cannot tell an invalidated capture from an
 * active one; the next captured launch, the end of the capture and the
 * replays do.) */
static int capture_intact(rig *r, fw_stream s, fw_capture_mode want, const char *what) {
    probe *p = r->p;
    int capturing = 0;
    if (!CHECK_FW_OK(p->fw, p->fw->capture_status(s, &capturing)) ||
        !CHECK(capturing, "after %s inside the capture, the stream is no longer capturing", what) ||
        !CHECK(rig_phase(r) == KCTX_PHASE_READY, "after %s inside the capture, the phase is %s",
               what, kctx_phase_name(rig_phase(r))))
        return 0;
    if (!have_modes(p)) return 1;
    fw_capture_mode now = FW_CAPTURE_GLOBAL;
    return CHECK_FW_OK(p->fw, read_thread_mode(p->fw, &now)) &&
           CHECK(now == want,
                 "after %s inside the capture, the thread's capture mode is %s (was %s)", what,
                 mode_name(now), mode_name(want));
}

/* A captured launch right after a prepare inside the same capture: OK (a
 * CAPTURE_BROKEN here means the prepare invalidated the capture). */
static int launch_in_capture(rig *r, const job *j, fw_stream s, const char *after) {
    kctx_status st = job_launch(r, j, s);
    return CHECK(st == KCTX_OK,
                 "the captured launch of id %llu after %s: %s, expected KCTX_OK%s (%s)",
                 (unsigned long long)j->id, after, kctx_status_name(st),
                 st == KCTX_CAPTURE_BROKEN ? ": the prepare invalidated the capture" : "",
                 kctx_thread_last_error());
}

/* The device side reports nothing wrong. */
static int check_clean(rig *r, const char *when) {
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    if (!CHECK_K(kctx_check(r->ctx, &rep), KCTX_OK)) return 0;
    return CHECK(rep.device_status == KCTX_OK && rep.concurrent_launches == 0 &&
                     rep.refused_replays == 0,
                 "%s: check reports %s, %u concurrent launches, %u refused replays", when,
                 kctx_status_name(rep.device_status), rep.concurrent_launches, rep.refused_replays);
}

/* Eager launches of every job on s: each output holds its host reference. */
static int eager_expect(rig *r, job *const *jobs, unsigned n, fw_stream s, const char *when) {
    for (unsigned i = 0; i < n; i++)
        if (!job_clear(r, jobs[i], s) || !CHECK_K(job_launch(r, jobs[i], s), KCTX_OK)) return 0;
    if (!rig_sync(r, s)) return 0;
    for (unsigned i = 0; i < n; i++)
        if (!job_expect(r, jobs[i], when)) return 0;
    return 1;
}

/* `replays` replays of graph gi, new inputs before each: every output holds
 * the host reference of its new inputs (the eager result). */
static int replays_expect(rig *r, int gi, job *const *jobs, unsigned n, fw_stream s,
                          unsigned replays, uint64_t salt) {
    for (unsigned k = 0; k < replays; k++) {
        for (unsigned i = 0; i < n; i++)
            if (!job_set_inputs(r, jobs[i], salt + 16 * k + i) || !job_clear(r, jobs[i], s))
                return 0;
        if (!rig_replay(r, gi, s) || !rig_sync(r, s)) return 0;
        char when[64];
        snprintf(when, sizeof when, "replay %u of %u (new inputs)", k + 1, replays);
        for (unsigned i = 0; i < n; i++)
            if (!job_expect(r, jobs[i], when)) return 0;
    }
    return 1;
}

/* The same launches captured again with every callable already prepared:
 * the graph captured with the prepares inside must have exactly as many
 * work nodes (a prepare adds none). *nodes: the count; 0 without the hook. */
static int same_nodes_as_control(rig *r, int gi, job *const *jobs, unsigned n, fw_stream s,
                                 fw_capture_mode mode, size_t *nodes) {
    probe *p = r->p;
    *nodes = 0;
    if (!p->fw->graph_node_count) return 1;
    int gc = -1;
    if (!begin_in_mode(r, s, mode)) return 0;
    int ok = 1;
    for (unsigned i = 0; ok && i < n; i++) ok = CHECK_K(job_launch(r, jobs[i], s), KCTX_OK);
    if (!rig_end_capture(r, s, &gc) || !ok) return 0;
    size_t cold = 0, control = 0;
    if (!HOOK_OK(p, p->fw->graph_node_count(r->graphs[gi].g, &cold)) ||
        !HOOK_OK(p, p->fw->graph_node_count(r->graphs[gc].g, &control)))
        return 0;
    *nodes = cold;
    return CHECK(cold == control && cold > 0,
                 "the graph captured with prepares inside has %zu work nodes, the same launches "
                 "captured with nothing to prepare %zu: the prepares added nodes",
                 cold, control) &&
           rig_drop_graph(r, gc);
}

/* Without the node-count hook, same_nodes_as_control checks nothing: say so. */
static void nodes_dropped(probe *p, const char *what) {
    if (!p->fw->graph_node_count)
        pr_dropped(p, "%s (the %s driver has no graph_node_count)", what, p->fw->name);
}

/* ------------------------------------------------------------------ */
/* 1. launch A; prepare B; launch B; prepare C (A's bytes); launch C;   */
/*    in every capture mode (K16, K14)                                  */

static int cold_capture_in_mode(probe *p, fw_capture_mode mode, size_t *nodes) {
    rig r;
    job a, b, c;
    fw_stream s;
    int g = -1;
    const void *vadd_img, *chain_img;
    size_t vadd_size, chain_size;
    int modes = have_modes(p), ok = 0;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_A, "vector_add") ||
        !rig_image(&r, "vector_add", &vadd_img, &vadd_size) ||
        !rig_image(&r, "scale_add_chain", &chain_img, &chain_size) || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_A, 1000, 1, 0) || !job_chain(&r, &b, ID_B, 777, 2, 0) ||
        !job_vadd(&r, &c, ID_C, 500, 3, 0))
        goto done;
    /* The thread runs in the capture's mode, as a framework's capturing
     * thread does; each prepare must leave it so. */
    fw_capture_mode saved = mode;
    if (modes && !CHECK_FW_OK(p->fw, p->fw->exchange_capture_mode(&saved))) goto done;
    if (begin_in_mode(&r, s, mode)) {
        kctx_resource_info r0, r1, r2;
        uint64_t ml[3], ma[3]; /* this thread's module loads and device allocations */
        int steps = CHECK_K(job_launch(&r, &a, s), KCTX_OK) && /* pulls the context's streams in */
                    CHECK_K(get_resources(r.ctx, &r0), KCTX_OK);
        ml[0] = kctx_thread_platform_calls(KCTX_POP_MODULE_LOAD);
        ma[0] = kctx_thread_platform_calls(KCTX_POP_MEM_ALLOC);
        steps = steps && CHECK_K(kctx_prepare(r.ctx, ID_B, chain_img, chain_size), KCTX_OK);
        ml[1] = kctx_thread_platform_calls(KCTX_POP_MODULE_LOAD);
        ma[1] = kctx_thread_platform_calls(KCTX_POP_MEM_ALLOC);
        steps = steps && capture_intact(&r, s, mode, "prepare B") &&
                launch_in_capture(&r, &b, s, "prepare B") &&
                CHECK_K(get_resources(r.ctx, &r1), KCTX_OK) &&
                CHECK_K(kctx_prepare(r.ctx, ID_C, vadd_img, vadd_size), KCTX_OK);
        ml[2] = kctx_thread_platform_calls(KCTX_POP_MODULE_LOAD);
        ma[2] = kctx_thread_platform_calls(KCTX_POP_MEM_ALLOC);
        steps =
            steps && capture_intact(&r, s, mode, "prepare C (A's bytes)") &&
            CHECK_K(get_resources(r.ctx, &r2), KCTX_OK) &&
            CHECK(r1.uploads == r0.uploads + 1 && r1.callables == r0.callables + 1 && ml[1] > ml[0],
                  "prepare B inside the capture: %u -> %u uploads, %u -> %u callables, %llu module "
                  "loads",
                  r0.uploads, r1.uploads, r0.callables, r1.callables,
                  (unsigned long long)(ml[1] - ml[0])) &&
            CHECK(r2.uploads == r1.uploads && r2.upload_bytes == r1.upload_bytes &&
                      r2.callables == r1.callables + 1 && ml[2] == ml[1] && ma[2] == ma[1],
                  "prepare C (A's bytes) inside the capture did not share A's upload (K14): %u -> "
                  "%u uploads, %llu -> %llu upload bytes, %u -> %u callables, %llu module loads, "
                  "%llu device allocations",
                  r1.uploads, r2.uploads, (unsigned long long)r1.upload_bytes,
                  (unsigned long long)r2.upload_bytes, r1.callables, r2.callables,
                  (unsigned long long)(ml[2] - ml[1]), (unsigned long long)(ma[2] - ma[1])) &&
            launch_in_capture(&r, &c, s, "prepare C");
        int ended = rig_end_capture(&r, s, &g);
        ok = steps && ended;
    }
    if (modes) {
        fw_capture_mode m = saved;
        CHECK_FW_OK(p->fw, p->fw->exchange_capture_mode(&m));
    }
    if (!ok || !pr_ok(p)) goto done;
    ok = 0;
    job *jobs[3] = {&a, &b, &c};
    char when[64];
    snprintf(when, sizeof when, "eager after the %s-mode cold capture", mode_name(mode));
    if (!eager_expect(&r, jobs, 3, s, when) ||
        !same_nodes_as_control(&r, g, jobs, 3, s, mode, nodes) ||
        !replays_expect(&r, g, jobs, 3, s, COLD_REPLAYS, 100) ||
        !check_clean(&r, "after the replays"))
        goto done;
    ok = 1;
done:
    return rig_close(&r) && ok;
}

void probe_cold_capture_prepares_in_every_capture_mode(probe *p) {
    static const fw_capture_mode all[3] = {FW_CAPTURE_GLOBAL, FW_CAPTURE_THREAD_LOCAL,
                                           FW_CAPTURE_RELAXED};
    unsigned nmodes = have_modes(p) ? 3 : 1;
    if (!have_modes(p))
        pr_dropped(p,
                   "the thread-local and relaxed capture modes and the thread's capture mode after "
                   "each prepare (the %s driver has no begin_capture_mode/exchange_capture_mode)",
                   p->fw->name);
    nodes_dropped(p, "that the prepares add no graph node");
    size_t nodes[3] = {0, 0, 0};
    for (unsigned i = 0; i < nmodes; i++)
        if (!cold_capture_in_mode(p, all[i], &nodes[i])) return;
    char counts[96] = "";
    if (p->fw->graph_node_count)
        snprintf(counts, sizeof counts, " (%zu work nodes, as without the prepares)", nodes[0]);
    pr_note(p,
            "%s capture mode%s: launch A, prepare B, launch B, prepare C (A's bytes, shared "
            "upload), launch C inside one capture; each prepare kept the capture%s; the graph%s "
            "replayed %u times with new inputs, equal to the eager result",
            nmodes == 3 ? "global, thread-local and relaxed" : "global", nmodes == 3 ? "s" : "",
            have_modes(p) ? " and the thread's capture mode" : "", counts, COLD_REPLAYS);
}

/* ------------------------------------------------------------------ */
/* 2. cold from the very first call: begin, prepare A, launch A, end    */
/*    (K16)                                                             */

void probe_cold_capture_from_the_first_call(probe *p) {
    rig r;
    job a;
    fw_stream s;
    int g = -1;
    const void *img;
    size_t size;
    size_t nodes = 0;
    fw_capture_mode m0 = FW_CAPTURE_GLOBAL;
    if (!rig_open(p, &r, NULL) || !rig_image(&r, "vector_add", &img, &size) ||
        !rig_stream(&r, &s) || !job_vadd(&r, &a, ID_A, 640, 21, 0))
        goto done;
    if (have_modes(p) && !CHECK_FW_OK(p->fw, read_thread_mode(p->fw, &m0))) goto done;
    /* Nothing was prepared or launched before: the capture begins, and the
     * first kctx call after init is the prepare. */
    if (!rig_begin_capture(&r, s)) goto done;
    int steps = CHECK_K(kctx_prepare(r.ctx, ID_A, img, size), KCTX_OK) &&
                capture_intact(&r, s, m0, "the first prepare") &&
                launch_in_capture(&r, &a, s, "the first prepare");
    if (!rig_end_capture(&r, s, &g) || !steps) goto done;
    job *jobs[1] = {&a};
    if (!eager_expect(&r, jobs, 1, s, "eager after the cold capture") ||
        !same_nodes_as_control(&r, g, jobs, 1, s, FW_CAPTURE_GLOBAL, &nodes) ||
        !replays_expect(&r, g, jobs, 1, s, 5, 200) || !check_clean(&r, "after the replays"))
        goto done;
    nodes_dropped(p, "that the prepare adds no graph node");
    char extra[64] = "";
    if (nodes) snprintf(extra, sizeof extra, " (%zu work nodes, as without the prepare)", nodes);
    pr_note(p,
            "begin capture, prepare A (the first call after init), launch A, end: the capture "
            "stayed valid, the graph%s replayed 5 times with new inputs, equal to the eager result",
            extra);
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 3. another thread prepares while a global-mode capture runs (K16)    */

typedef struct other_prep {
    rig *r;
    const void *b_img, *c_img;
    size_t b_size, c_size;
    fw_status set_dev, mode0, mode1, mode2;
    fw_capture_mode m0, m1, m2;
    kctx_status b, c;
} other_prep;

static void *other_prep_thread(void *argp) {
    other_prep *o = argp;
    const fw_driver *fw = o->r->fw;
    int modes = have_modes(o->r->p);
    o->set_dev = fw->set_device(o->r->device);
    if (o->set_dev != FW_OK) return NULL;
    if (modes) o->mode0 = read_thread_mode(fw, &o->m0);
    o->b = kctx_prepare(o->r->ctx, ID_B, o->b_img, o->b_size);
    if (modes) o->mode1 = read_thread_mode(fw, &o->m1);
    o->c = kctx_prepare(o->r->ctx, ID_C, o->c_img, o->c_size); /* A's bytes: shared upload */
    if (modes) o->mode2 = read_thread_mode(fw, &o->m2);
    return NULL;
}

void probe_prepare_on_another_thread_keeps_global_capture(probe *p) {
    rig r;
    job a, b, c;
    fw_stream s;
    int g = -1;
    other_prep o;
    fw_capture_mode m0 = FW_CAPTURE_GLOBAL;
    memset(&o, 0, sizeof o);
    o.r = &r;
    o.b = o.c = KCTX_INVALID_STATE;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_A, "vector_add") ||
        !rig_image(&r, "scale_add_chain", &o.b_img, &o.b_size) ||
        !rig_image(&r, "vector_add", &o.c_img, &o.c_size) || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_A, 900, 31, 0) || !job_chain(&r, &b, ID_B, 600, 32, 0) ||
        !job_vadd(&r, &c, ID_C, 300, 33, 0))
        goto done;
    if (have_modes(p) && !CHECK_FW_OK(p->fw, read_thread_mode(p->fw, &m0))) goto done;
    /* The first thread captures in global mode (the strictest: an unsafe
     * call from any thread in global mode invalidates it); its captured
     * launch pulls the context's streams in. Another framework thread, in
     * its default (global) mode, prepares two callables meanwhile. */
    if (!rig_begin_capture(&r, s)) goto done;
    int steps = CHECK_K(job_launch(&r, &a, s), KCTX_OK);
    pthread_t th;
    int started = steps && pthread_create(&th, NULL, other_prep_thread, &o) == 0;
    if (started) pthread_join(th, NULL);
    steps = steps && CHECK(started, "cannot start a thread") && CHECK_FW_OK(p->fw, o.set_dev) &&
            CHECK_K(o.b, KCTX_OK) && CHECK_K(o.c, KCTX_OK) &&
            capture_intact(&r, s, m0, "another thread's prepares");
    if (steps && have_modes(p))
        steps =
            CHECK_FW_OK(p->fw, o.mode0) && CHECK_FW_OK(p->fw, o.mode1) &&
            CHECK_FW_OK(p->fw, o.mode2) &&
            CHECK(o.m1 == o.m0 && o.m2 == o.m0,
                  "the preparing thread's capture mode: %s before, %s and %s after its prepares",
                  mode_name(o.m0), mode_name(o.m1), mode_name(o.m2));
    steps = steps && launch_in_capture(&r, &b, s, "another thread's prepare of B") &&
            launch_in_capture(&r, &c, s, "another thread's prepare of C");
    if (!rig_end_capture(&r, s, &g) || !steps) goto done;
    job *jobs[3] = {&a, &b, &c};
    size_t nodes = 0;
    if (!eager_expect(&r, jobs, 3, s, "eager after the capture") ||
        !same_nodes_as_control(&r, g, jobs, 3, s, FW_CAPTURE_GLOBAL, &nodes) ||
        !replays_expect(&r, g, jobs, 3, s, 5, 300) || !check_clean(&r, "after the replays"))
        goto done;
    nodes_dropped(p, "that the other thread's prepares add no graph node");
    pr_note(p,
            "while the first thread's global-mode capture (holding the context's streams) ran, "
            "another thread prepared B and C (A's bytes)%s; the capture survived, took launches of "
            "both%s, and its graph replayed 5 times correctly",
            have_modes(p) ? ", its own capture mode left as it was" : "",
            nodes ? " (no node added by the prepares)" : "");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 4. refusals inside a capture leave it valid (K16, K13, K14, K9)      */

void probe_refused_prepares_inside_capture_keep_it_valid(probe *p) {
    rig r;
    job a, b;
    fw_stream s;
    int g = -1;
    const void *chain_img;
    size_t chain_size;
    fw_capture_mode m0 = FW_CAPTURE_GLOBAL;
    if (!rig_open(p, &r, NULL) || !rig_prepare(&r, ID_A, "vector_add") ||
        !rig_image(&r, "scale_add_chain", &chain_img, &chain_size) || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_A, 512, 41, 0) || !job_chain(&r, &b, ID_B, 384, 42, 0))
        goto done;
    unsigned char *corrupt = rig_host(&r, chain_size);
    if (!corrupt) goto done;
    memcpy(corrupt, chain_img, chain_size);
    corrupt[0] ^= 0xFF; /* the magic */
    if (have_modes(p) && !CHECK_FW_OK(p->fw, read_thread_mode(p->fw, &m0))) goto done;
    struct refusal {
        const char *what;
        kctx_context ctx;
        uint64_t id;
        const void *img;
        size_t size;
        kctx_status want;
    } const refusals[] = {
        {"a corrupt image (its magic)", r.ctx, ID_B, corrupt, chain_size, KCTX_INVALID_IMAGE},
        {"a truncated image", r.ctx, ID_B, chain_img, chain_size - 1, KCTX_INVALID_IMAGE},
        {"a duplicate id (A's, other bytes)", r.ctx, ID_A, chain_img, chain_size,
         KCTX_DUPLICATE_ID},
        {"a NULL image", r.ctx, ID_B, NULL, chain_size, KCTX_INVALID_ARGUMENT},
        {"size 0", r.ctx, ID_B, chain_img, 0, KCTX_INVALID_ARGUMENT},
        {"no context (handle 0)", (kctx_context)0, ID_B, chain_img, chain_size,
         KCTX_INVALID_HANDLE},
    };
    const unsigned nref = sizeof refusals / sizeof refusals[0];
    if (!rig_begin_capture(&r, s)) goto done;
    int steps = CHECK_K(job_launch(&r, &a, s), KCTX_OK); /* the context's streams join */
    for (unsigned i = 0; steps && i < nref; i++) {
        const struct refusal *f = &refusals[i];
        kctx_status st = kctx_prepare(f->ctx, f->id, f->img, f->size);
        char what[96];
        snprintf(what, sizeof what, "a prepare refused for %s", f->what);
        steps = CHECK(st == f->want, "prepare with %s inside the capture: %s, expected %s (%s)",
                      f->what, kctx_status_name(st), kctx_status_name(f->want),
                      kctx_thread_last_error()) &&
                capture_intact(&r, s, m0, what);
    }
    /* a launch refused by its preflight (too few arguments) inside the
     * capture: nothing enqueued, the capture kept */
    if (steps) {
        kctx_status st = kctx_launch(r.ctx, ID_A, a.args, a.nargs - 1, s);
        steps = CHECK(st == KCTX_INVALID_ARGUMENT,
                      "a launch with too few arguments inside the capture: %s, expected "
                      "KCTX_INVALID_ARGUMENT (%s)",
                      kctx_status_name(st), kctx_thread_last_error()) &&
                capture_intact(&r, s, m0, "a refused launch");
    }
    /* the same capture still takes a prepare and its launch */
    steps = steps && CHECK_K(kctx_prepare(r.ctx, ID_B, chain_img, chain_size), KCTX_OK) &&
            capture_intact(&r, s, m0, "prepare B after the refusals") &&
            launch_in_capture(&r, &b, s, "the refusals and prepare B");
    if (!rig_end_capture(&r, s, &g) || !steps) goto done;
    kctx_resource_info res;
    if (!CHECK_K(get_resources(r.ctx, &res), KCTX_OK) ||
        !CHECK(res.callables == 2, "%u callables prepared after the refusals, expected 2 (A, B)",
               res.callables))
        goto done;
    /* A is still vector_add (the duplicate id left it undisturbed) */
    job *jobs[2] = {&a, &b};
    size_t nodes = 0;
    if (!same_nodes_as_control(&r, g, jobs, 2, s, FW_CAPTURE_GLOBAL, &nodes) ||
        !replays_expect(&r, g, jobs, 2, s, 3, 400) || !check_clean(&r, "after the replays"))
        goto done;
    nodes_dropped(p, "that the refusals add no graph node");
    pr_note(p,
            "inside a capture holding the context's streams, %u refused prepares (corrupt and "
            "truncated image, duplicate id, NULL image, size 0, no context) and a refused launch "
            "left the capture valid%s and the phase READY; prepare B and its launch then went "
            "into it%s, and the graph replayed 3 times correctly",
            nref, have_modes(p) ? " and the thread's capture mode unchanged" : "",
            nodes ? " (no node added by the refusals or the prepare)" : "");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 5. prepare beside a launch in flight; a slow prepare delays no       */
/*    launch of another id (K15, K16)                                   */

typedef struct slow_prepare {
    rig *r;
    const void *img;
    size_t size;
    fw_status set_dev;
    kctx_status st;
    atomic_int returned;
} slow_prepare;

static void *slow_prepare_thread(void *argp) {
    slow_prepare *sp = argp;
    sp->set_dev = sp->r->fw->set_device(sp->r->device);
    if (sp->set_dev == FW_OK) sp->st = kctx_prepare(sp->r->ctx, ID_E, sp->img, sp->size);
    atomic_store(&sp->returned, 1);
    return NULL;
}

typedef struct launcher {
    rig *r;
    const job *j;
    fw_stream t;
    fw_status set_dev, synced;
    kctx_status st;
    atomic_int done;
} launcher;

static void *launcher_thread(void *argp) {
    launcher *l = argp;
    l->set_dev = l->r->fw->set_device(l->r->device);
    if (l->set_dev == FW_OK) {
        l->st = job_launch(l->r, l->j, l->t);
        if (l->st == KCTX_OK) l->synced = l->r->fw->stream_sync(l->t, HANG_MS);
    }
    atomic_store(&l->done, 1);
    return NULL;
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Resident: prepare E on another thread with its upload held on the
 * device; a launch of B from this thread's launcher completes meanwhile;
 * close is BUSY while the prepare is in flight. Returns 1 when checked. */
static int slow_prepare_delays_no_launch(rig *r, job *b, fw_stream t, const void *img,
                                         size_t size) {
    probe *p = r->p;
    int hold = -1;
    if (!pr_optional(
            p, p->fw->hold_arm ? p->fw->hold_arm(FW_HOLD_COPY, r->device, r->ctx, &hold) : FW_NA,
            "that a slow prepare delays no launch of another id", "hold_arm(FW_HOLD_COPY)",
            __FILE__, __LINE__))
        return 0;
    slow_prepare sp;
    memset(&sp, 0, sizeof sp);
    sp.r = r;
    sp.img = img;
    sp.size = size;
    sp.st = KCTX_INVALID_STATE;
    launcher l;
    memset(&l, 0, sizeof l);
    l.r = r;
    l.j = b;
    l.t = t;
    l.st = KCTX_INVALID_STATE;
    l.synced = FW_ERROR;
    pthread_t tp, tl;
    int ok = 0, lstarted = 0;
    if (!job_clear(r, b, t) || !rig_sync(r, t)) {
        p->fw->hold_release(hold);
        return 0;
    }
    if (!CHECK(pthread_create(&tp, NULL, slow_prepare_thread, &sp) == 0, "cannot start a thread")) {
        p->fw->hold_release(hold);
        return 0;
    }
    /* the prepare's upload is provably on the device, held: the prepare is
     * in its bounded wait, outside the context's lock */
    if (!CHECK_FW_OK(p->fw, p->fw->hold_wait_reached(hold, HOLD_MS))) goto release;
    lstarted = CHECK(pthread_create(&tl, NULL, launcher_thread, &l) == 0, "cannot start a thread");
    if (!lstarted) goto release;
    for (unsigned waited = 0; waited < HANG_MS && !atomic_load(&l.done); waited += 2) sleep_ms(2);
    if (!CHECK(atomic_load(&l.done),
               "a launch of id %llu issued while the prepare of id %u was held in its upload did "
               "not complete within %u ms: it waited behind the prepare",
               (unsigned long long)b->id, ID_E, HANG_MS) ||
        !CHECK(!atomic_load(&sp.returned),
               "the prepare of id %u returned before its held upload was released", ID_E) ||
        !CHECK_FW_OK(p->fw, l.set_dev) || !CHECK_K(l.st, KCTX_OK) || !CHECK_FW_OK(p->fw, l.synced))
        goto release;
    /* close waits for the prepare: BUSY, nothing changed */
    kctx_status cs = kctx_close(r->ctx);
    if (!CHECK(cs == KCTX_BUSY,
               "close while a prepare was held in its upload: %s, expected KCTX_BUSY (%s)",
               kctx_status_name(cs), kctx_thread_last_error()) ||
        !CHECK(rig_phase(r) == KCTX_PHASE_READY, "the refused close left the phase %s",
               kctx_phase_name(rig_phase(r))) ||
        !CHECK(!atomic_load(&sp.returned), "the held prepare returned before its release"))
        goto release;
    ok = 1;
release:
    p->fw->hold_release(hold);
    pthread_join(tp, NULL);
    if (lstarted) pthread_join(tl, NULL);
    if (!ok) return 0;
    return CHECK_FW_OK(p->fw, sp.set_dev) && CHECK_K(sp.st, KCTX_OK) &&
           job_expect(r, b, "the launch that completed during the held prepare");
}

void probe_prepare_beside_launches_in_flight(probe *p) {
    rig r;
    job a, b, c, e;
    fw_stream s, t;
    const void *vadd_img, *chain_img, *mm_img;
    size_t vadd_size, chain_size, mm_size;
    int hold = -1, slow_checked = 0;
    kctx_kernel_config cfg = probe_config(p);
    /* longer than the probe waits for a launch beside a held prepare, so that
     * prepare is still held when the probe gives up on the launch */
    cfg.prepare_timeout_ms = 2 * HANG_MS;
    if (!rig_open(p, &r, &cfg) || !rig_prepare(&r, ID_A, "vector_add") ||
        !rig_image(&r, "vector_add", &vadd_img, &vadd_size) ||
        !rig_image(&r, "scale_add_chain", &chain_img, &chain_size) ||
        !rig_image(&r, "blocked_matmul", &mm_img, &mm_size) || !rig_stream(&r, &s) ||
        !rig_stream(&r, &t) || !job_vadd(&r, &a, ID_A, 2000, 51, 0) ||
        !job_chain(&r, &b, ID_B, 700, 52, 0) || !job_vadd(&r, &c, ID_C, 333, 53, 0) ||
        !job_matmul(&r, &e, ID_E, 24, 20, 16, 54, 0))
        goto done;
    if (!HAS_HOOK(p, hold_arm) || !HOOK_OK(p, rig_arm_after_acquire(&r, &hold))) goto done;
    /* An eager launch of A, held on the device after its acquire step: it
     * holds the launch guard and the context's streams, none of its tasks
     * has run. (No synchronous copy may run while it is held: the
     * framework's synchronous copies wait for the device.) */
    if (!job_clear(&r, &a, s) || !CHECK_K(job_launch(&r, &a, s), KCTX_OK)) goto done;
    if (!HOOK_OK(p, p->fw->hold_wait_reached(hold, HOLD_MS))) goto done;
    kctx_status pb = kctx_prepare(r.ctx, ID_B, chain_img, chain_size);
    kctx_status pc = kctx_prepare(r.ctx, ID_C, vadd_img, vadd_size); /* A's bytes: shared */
    fw_status still = p->fw->stream_query(s);
    CHECK_FW_OK(p->fw, p->fw->hold_release(hold));
    if (!CHECK_K(pb, KCTX_OK) || !CHECK_K(pc, KCTX_OK) ||
        !CHECK(still == FW_NOT_READY,
               "the held launch of A was no longer in flight when the prepares returned (%s): "
               "they waited for it",
               fw_status_name(still)) ||
        !rig_sync(&r, s) || !job_expect(&r, &a, "the launch of A held during two prepares"))
        goto done;
    job *jobs[2] = {&b, &c};
    if (!eager_expect(&r, jobs, 2, s, "the callables prepared beside the held launch")) goto done;
    /* A prepare held in its upload delays no launch of another id. */
    if (pr_host_ordered(p))
        pr_dropped(p, "that a slow prepare delays no launch of another id (under HOST_ORDERED "
                      "prepare uploads nothing: there is no upload to hold, and its module loads "
                      "have no hold point)");
    else if (!(slow_checked = slow_prepare_delays_no_launch(&r, &b, t, mm_img, mm_size)) &&
             !pr_ok(p))
        goto done;
    if (!slow_checked && !CHECK_K(kctx_prepare(r.ctx, ID_E, mm_img, mm_size), KCTX_OK)) goto done;
    job *je[1] = {&e};
    if (!eager_expect(&r, je, 1, t, "the callable of the slow prepare") ||
        !check_clean(&r, "after the launches"))
        goto done;
    pr_note(p,
            "prepare B and prepare C (A's bytes) completed while an eager launch of A was held "
            "after its acquire step, which then finished with correct results%s",
            slow_checked ? "; a launch of B from another thread completed while the prepare of E "
                           "was held in its upload, and close answered BUSY until that prepare "
                           "returned"
                         : "");
done:
    rig_close(&r);
}

/* ------------------------------------------------------------------ */
/* 6. an upload whose wait timed out (K17)                              */

void probe_prepare_upload_timeout_poisons_and_close_waits(probe *p) {
    if (pr_host_ordered(p)) {
        pr_na(p, "under HOST_ORDERED prepare uploads nothing to the device (the tasks stay on the "
                 "host): there is no upload whose wait could time out");
        return;
    }
    rig r;
    job a;
    fw_stream s;
    int hold = -1;
    const void *chain_img;
    size_t chain_size;
    kctx_kernel_config cfg = probe_config(p);
    cfg.prepare_timeout_ms = 1000; /* a short bound on prepare's wait */
    if (!rig_open(p, &r, &cfg) || !rig_prepare(&r, ID_A, "vector_add") ||
        !rig_image(&r, "scale_add_chain", &chain_img, &chain_size) || !rig_stream(&r, &s) ||
        !job_vadd(&r, &a, ID_A, 128, 61, 0) || !HAS_HOOK(p, hold_arm))
        goto done;
    kctx_resource_info r0, r1;
    fw_counts c0, c1, c2;
    memset(&c0, 0, sizeof c0);
    c1 = c2 = c0;
    int have_counts = OPTIONAL_HOOK(p, live_counts, "that the upload's memory and modules are kept",
                                    r.device, &c0);
    if (!pr_ok(p) || !CHECK_K(get_resources(r.ctx, &r0), KCTX_OK)) goto done;
    /* prepare B: its upload is held on the device past the bound */
    if (!HOOK_OK(p, p->fw->hold_arm(FW_HOLD_COPY, r.device, r.ctx, &hold))) goto done;
    kctx_status ps = kctx_prepare(r.ctx, ID_B, chain_img, chain_size);
    if (!CHECK_K(ps, KCTX_TIMEOUT) || !HOOK_OK(p, p->fw->hold_wait_reached(hold, HOLD_MS)))
        goto done; /* the upload is still on the device */
    kctx_status rt = KCTX_OK;
    char msg[256] = "";
    if (!CHECK(rig_phase(&r) == KCTX_PHASE_POISONED, "phase %s after the upload's wait timed out",
               kctx_phase_name(rig_phase(&r))) ||
        !CHECK_K(kctx_runtime_error(r.ctx, &rt, msg, sizeof msg), KCTX_OK) ||
        !CHECK(rt == KCTX_TIMEOUT, "the runtime error slot holds %s (%s), expected KCTX_TIMEOUT",
               kctx_status_name(rt), msg) ||
        !CHECK_K(get_resources(r.ctx, &r1), KCTX_OK) ||
        !CHECK(r1.callables == r0.callables, "the timed-out id was registered (%u -> %u)",
               r0.callables, r1.callables) ||
        !CHECK_FW(p->fw, p->fw->stream_query(r1.upload_stream), FW_NOT_READY))
        goto done;
    if (have_counts &&
        (!CHECK_FW_OK(p->fw, p->fw->live_counts(r.device, &c1)) ||
         !CHECK(c1.allocations > c0.allocations && c1.modules > c0.modules,
                "the timed-out upload was not kept: allocations %llu -> %llu, "
                "modules %llu -> %llu",
                (unsigned long long)c0.allocations, (unsigned long long)c1.allocations,
                (unsigned long long)c0.modules, (unsigned long long)c1.modules)))
        goto done;
    /* poisoned: prepare and launch refused */
    const void *vadd_img;
    size_t vadd_size;
    if (!rig_image(&r, "vector_add", &vadd_img, &vadd_size) ||
        !CHECK_K(kctx_prepare(r.ctx, ID_C, vadd_img, vadd_size), KCTX_POISONED) ||
        !CHECK_K(job_launch(&r, &a, s), KCTX_POISONED))
        goto done;
    /* close may not release what the device may still read: BUSY while the
     * upload stream is busy, nothing released */
    kctx_status cs = kctx_close(r.ctx);
    if (!CHECK(cs == KCTX_BUSY,
               "close while the timed-out upload is still running: %s, expected KCTX_BUSY (%s)",
               kctx_status_name(cs), kctx_thread_last_error()) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_POISONED, "the refused close left the phase %s",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    if (have_counts &&
        (!CHECK_FW_OK(p->fw, p->fw->live_counts(r.device, &c2)) ||
         !CHECK(c2.allocations == c1.allocations && c2.modules == c1.modules,
                "the refused close released something: allocations %llu -> %llu, "
                "modules %llu -> %llu",
                (unsigned long long)c1.allocations, (unsigned long long)c2.allocations,
                (unsigned long long)c1.modules, (unsigned long long)c2.modules)))
        goto done;
    /* the upload finishes: once the upload stream is idle, close completes */
    if (!CHECK_FW_OK(p->fw, p->fw->hold_release(hold)) ||
        !CHECK_FW_OK(p->fw, p->fw->stream_sync(r1.upload_stream, SYNC_MS)) ||
        !CHECK_K(kctx_close(r.ctx), KCTX_OK) ||
        !CHECK(rig_phase(&r) == KCTX_PHASE_CLOSED, "phase %s after close",
               kctx_phase_name(rig_phase(&r))))
        goto done;
    pr_note(p,
            "a prepare whose upload was held past prepare_timeout_ms (%u ms) returned TIMEOUT: "
            "POISONED (cause in the runtime error slot), the id not registered, the upload kept%s; "
            "prepare and launch refused POISONED; close BUSY while the upload stream was busy, "
            "then OK once it was idle",
            cfg.prepare_timeout_ms, have_counts ? " (its memory and modules live)" : "");
done:
    rig_close(&r);
}
