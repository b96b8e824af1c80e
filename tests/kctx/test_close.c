/*
 * test_close.c — close's BUSY checks (K25) and its release order and
 * retries (K26). Every release failure combination is in
 * test_fault_sweep.c.
 */
#include "kt.h"

#include <stdio.h>
#include <string.h>

static sim_capture_status capture_status(sim_stream s) {
    sim_capture_status st = SIM_CAPTURE_STATUS_NONE;
    CHECK_SIM_OK(sim_stream_get_capture_info(s, &st, NULL, NULL));
    return st;
}

KT_TEST(close_is_busy_while_the_context_streams_are_in_a_capture) { /* K25 */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kctx_resource_info r = kt_resources(c);
    for (int which = 0; which < 2; which++) {
        sim_stream s = which ? r.aicore_stream : r.aicpu_stream, origin = 0;
        sim_event fork = 0, join = 0;
        REQUIRE_SIM_OK(sim_stream_create(&origin));
        REQUIRE_SIM_OK(sim_event_create(&fork, SIM_EVENT_DISABLE_TIMING));
        REQUIRE_SIM_OK(sim_event_create(&join, SIM_EVENT_DISABLE_TIMING));
        CHECK_SIM_OK(sim_stream_begin_capture(origin, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(sim_event_record(fork, origin));
        CHECK_SIM_OK(sim_stream_wait_event(s, fork));
        CHECK_REFUSED(c, kctx_close(c), KCTX_BUSY); /* phase unchanged */
        CHECK(strstr(kctx_last_error(c), "capture") != NULL);
        /* close asked only the capture-status query: the capture is intact */
        CHECK_EQ(capture_status(origin), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_SIM_OK(sim_event_record(join, s));
        CHECK_SIM_OK(sim_stream_wait_event(origin, join));
        sim_graph g = 0;
        CHECK_SIM_OK(sim_stream_end_capture(origin, &g));
        CHECK_SIM_OK(sim_graph_destroy(g));
        CHECK_SIM_OK(sim_event_destroy(fork));
        CHECK_SIM_OK(sim_event_destroy(join));
        CHECK_SIM_OK(sim_stream_destroy(origin));
    }
    kt_finish(c);
}

KT_TEST(close_is_busy_while_work_is_in_flight_on_the_context_streams) { /* K25 */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kctx_resource_info r = kt_resources(c);
    sim_module mod = 0;
    sim_function fn = 0;
    REQUIRE_SIM_OK(kt_load_kernel("k_noop", &mod, &fn));
    for (int which = 0; which < 2; which++) {
        sim_stream s = which ? r.aicore_stream : r.aicpu_stream;
        sim_hold h = SIM_HOLD_INIT;
        h.kind = SIM_EXEC_KERNEL;
        h.fn = fn;
        int hold = -1;
        REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
        CHECK_SIM_OK(
            sim_launch_kernel(s, fn, which ? SIM_TARGET_AICORE : SIM_TARGET_AICPU, 1, NULL, 0));
        CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000));
        CHECK_REFUSED(c, kctx_close(c), KCTX_BUSY);
        CHECK(strstr(kctx_last_error(c), which ? "AICore" : "AICPU") != NULL);
        CHECK_SIM_OK(sim_hold_release(hold));
        CHECK_SIM_OK(sim_stream_synchronize(s));
    }
    CHECK_SIM_OK(sim_module_unload(mod));
    kt_finish(c);
}

KT_TEST(close_is_busy_while_a_launch_is_running) { /* K25 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_KERNEL; /* the launch's first kernel: the acquire step on the AICPU stream */
    h.device = 0;
    int hold = -1;
    REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, caller));
    CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000));
    CHECK_REFUSED(c, kctx_close(c), KCTX_BUSY);
    CHECK(strstr(kctx_last_error(c), "launch") != NULL);
    CHECK_SIM_OK(sim_hold_release(hold));
    CHECK_SIM_OK(sim_stream_synchronize(caller));
    /* drain the context's streams too (test_prepare.c probes why) */
    CHECK_SIM_OK(sim_stream_synchronize(kt_aicpu_stream(c)));
    CHECK_SIM_OK(sim_stream_synchronize(kt_resources(c).aicore_stream));
    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(caller));
}

KT_TEST(close_is_busy_while_a_captured_graph_holds_the_context) { /* K25 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    CHECK_SIM_OK(sim_stream_begin_capture(caller, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, caller));
    sim_graph g = 0;
    sim_graph_exec x = 0;
    REQUIRE_SIM_OK(sim_stream_end_capture(caller, &g));
    CHECK_EQ(kt_resources(c).tokens_in_use, 1);
    CHECK_SIM_OK(sim_graph_instantiate(&x, g));
    CHECK_REFUSED(c, kctx_close(c), KCTX_BUSY);
    CHECK(strstr(kctx_last_error(c), "graph") != NULL);
    /* the graph lifetime hook runs when the graph and its executable graph are gone */
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_REFUSED(c, kctx_close(c), KCTX_BUSY);
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_EQ(kt_resources(c).tokens_in_use, 0);
    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(caller));
}

/* The resources a close may still hold, named in reverse creation order
 * (the order close must release them in, K26). */
enum {
    R_UPLOAD,
    R_SLOTS, /* the argument slots (K37): made last, released first */
    R_ARGS,
    R_ARCH,
    R_IMAGE,
    R_PROGRAMS,
    R_EV4,
    R_EV3,
    R_EV2,
    R_EV1,
    R_EV0,
    R_USTREAM,
    R_AICORE,
    R_AICPU,
    R_COUNT
};
static const char *const k_res_names[R_COUNT] = {
    "callable upload",   "argument slots",     "args block",        "arch table",
    "runtime image",     "device programs",    "event SERIAL_TAIL", "event AICPU_DONE",
    "event AICORE_DONE", "event AICORE_START", "event START",       "upload stream",
    "AICore stream",     "AICPU stream"};

static int live_resources(kctx_context c, int *which) {
    kctx_resource_info r = kt_resources(c);
    int live[R_COUNT] = {r.uploads != 0,       r.arg_slots != 0,     r.args_block != 0,
                         r.arch_table != 0,    r.runtime_image != 0, r.programs_module != 0,
                         r.events[4] != 0,     r.events[3] != 0,     r.events[2] != 0,
                         r.events[1] != 0,     r.events[0] != 0,     r.upload_stream != 0,
                         r.aicore_stream != 0, r.aicpu_stream != 0};
    int n = 0;
    for (int i = 0; i < R_COUNT; i++)
        if (live[i]) which[n++] = i;
    return n;
}

static kctx_context prepared_ctx(void) {
    kt_image noop = kt_image_noop();
    kctx_context c = kt_kernel_ctx();
    if (c && noop.bytes) CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    return c;
}

KT_TEST(close_releases_in_reverse_creation_order) { /* K26 */
    /* Count close's calls, then fail each in turn: the one resource left
     * behind names the release that call was. */
    kctx_context c = prepared_ctx();
    REQUIRE(c);
    /* the argument slots exist under RESIDENT only (K37) */
    const int slots = kt_resources(c).arg_slots != 0;
    uint64_t calls = kt_injectable_calls();
    REQUIRE_OK(kctx_close(c));
    uint64_t n = kt_injectable_calls() - calls;
    CHECK_OK(kctx_destroy(c));
    int order[64], norder = 0;
    for (uint64_t k = 1; k <= n && norder < 64; k++) {
        c = prepared_ctx();
        REQUIRE(c);
        kt_fault(SIM_OP_ANY, k, 0);
        kctx_status st = kctx_close(c);
        sim_fault_clear_all();
        kctx_phase p = kt_phase(c);
        if (st != KCTX_OK && p == KCTX_PHASE_CLOSING) {
            int which[R_COUNT];
            int live = live_resources(c, which);
            if (CHECK_EQ(live, 1)) order[norder++] = which[0];
        }
        CHECK_OK(kctx_close(c));
        CHECK_OK(kctx_destroy(c));
    }
    /* the callable upload is two releases (its table and its module) */
    int collapsed[64], nc = 0;
    for (int i = 0; i < norder; i++)
        if (nc == 0 || collapsed[nc - 1] != order[i]) collapsed[nc++] = order[i];
    printf("    close released, in order:");
    for (int i = 0; i < nc; i++) printf("%s %s", i ? "," : "", k_res_names[collapsed[i]]);
    printf("\n");
    CHECK_EQ(nc, R_COUNT - !slots);
    for (int i = 0; i < nc && i < R_COUNT; i++)
        if (!CHECK_EQ(collapsed[i], i + (!slots && i >= R_SLOTS)))
            fprintf(stderr, "    position %d: %s\n", i, k_res_names[collapsed[i]]);
}

KT_TEST(a_failed_release_keeps_its_handle_and_the_retry_releases_exactly_the_remainder) { /* K26 */
    kctx_context c = prepared_ctx();
    REQUIRE(c);
    kt_snap before = kt_snap_take(0);
    kctx_resource_info r0 = kt_resources(c);
    kt_fault(SIM_OP_EVENT_DESTROY, 2, 0); /* AICPU_DONE (events go in reverse) */
    CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
    CHECK(strstr(kctx_last_error(c), "event_destroy") != NULL);
    CHECK_PHASE(c, KCTX_PHASE_CLOSING);
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.events[3], r0.events[3]); /* the handle that failed is kept */
    int which[R_COUNT];
    CHECK_EQ(live_resources(c, which), 1);
    kt_snap during = kt_snap_take(0);
    CHECK_EQ(during.o.events, before.o.events - 4);
    CHECK_EQ(during.o.streams, before.o.streams - 3);
    uint64_t ev = kt_calls(SIM_OP_EVENT_DESTROY), rel = kt_release_calls();
    CHECK_OK(kctx_close(c));
    CHECK_EQ(kt_calls(SIM_OP_EVENT_DESTROY) - ev, 1); /* exactly the remainder */
    CHECK_EQ(kt_release_calls() - rel, 1);
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(closing_stays_closing_until_everything_is_released) { /* K26 */
    kctx_context c = prepared_ctx();
    REQUIRE(c);
    kt_fault(SIM_OP_STREAM_DESTROY, 1, 1);
    for (int i = 0; i < 3; i++) {
        CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
        CHECK_PHASE(c, KCTX_PHASE_CLOSING);
        int which[R_COUNT];
        CHECK_EQ(live_resources(c, which), 3); /* the three streams, nothing else */
    }
    sim_fault_clear_all();
    uint64_t rel = kt_release_calls();
    CHECK_OK(kctx_close(c));
    CHECK_EQ(kt_release_calls() - rel, 3);
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    uint64_t calls = kt_calls(SIM_OP_ANY);
    CHECK_OK(kctx_close(c)); /* idempotent */
    CHECK_EQ(kt_calls(SIM_OP_ANY), calls);
    CHECK_OK(kctx_destroy(c));
}

/* ---- close's check order while a prepare is in its unlocked phase (kctx.h: kctx_close) ------ */

typedef struct bg_prepare {
    kctx_context ctx;
    kt_image img;
    kctx_status st;
} bg_prepare;

static void *bg_prepare_main(void *p) {
    bg_prepare *b = p;
    kt_set_device(0);
    b->st = kctx_prepare(b->ctx, 2, b->img.bytes, b->img.size);
    return NULL;
}

/* Start a prepare of id 2 on another thread and stop it in its unlocked
 * phase (its module load held at the seam); *hold gets the hold. */
static int start_held_prepare(bg_prepare *b, pthread_t *t, int *hold) {
    if (!CHECK_OK(kctx_seam_hold_arm(KCTX_POP_MODULE_LOAD, 1, hold))) return 0;
    if (!CHECK(pthread_create(t, NULL, bg_prepare_main, b) == 0)) return 0;
    return CHECK_OK(kctx_seam_hold_wait_reached(*hold, 10000));
}

/* Kills: close's "prepare still loading" BUSY check placed before its
 * current-device check (K5). kctx.h's order: epoch, quarantine, current
 * device, then the transient BUSY reasons — a caller's permanent error
 * before a transient one. From a thread whose current device is another
 * one, close of a context with a prepare in flight is INVALID_STATE, not
 * BUSY; from the right device BUSY naming the prepare; both change
 * nothing. Once the prepare returned, close completes. */
KT_TEST(close_with_a_prepare_in_flight_from_another_device_is_invalid_state) { /* K5, K25 */
    REQUIRE_DEVICES(2);
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    bg_prepare b = {c, kt_image_append(), KCTX_INVALID_STATE};
    REQUIRE(b.img.bytes);
    pthread_t t;
    int hold = -1;
    REQUIRE(start_held_prepare(&b, &t, &hold));
    kt_set_device(1);
    CHECK_REFUSED(c, kctx_close(c), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(c), "K5") != NULL);
    kt_set_device(0);
    CHECK_REFUSED(c, kctx_close(c), KCTX_BUSY);
    CHECK(strstr(kctx_last_error(c), "prepare") != NULL);
    CHECK_OK(kctx_seam_hold_release(hold));
    pthread_join(t, NULL);
    CHECK_OK(b.st);
    CHECK_EQ(kt_resources(c).callables, 2);
    kt_finish(c);
}

/* K36 with a prepare in flight: the owner reset the device, so close would
 * abandon every handle — but the prepare in its unlocked phase still works
 * with them (the upload stream, the upload it is making). Close answers
 * BUSY (phase unchanged) until the prepare returned, and then abandons and
 * completes. The prepare itself is refused: what it made after the reset
 * would outlive the abandoning close. Kills: abandoning while
 * c->preparing is non-zero (close returns OK while the prepare is held);
 * dropping prepare's epoch check at publication (host-ordered: its module,
 * loaded after the reset, is left behind). Under both strategies (the
 * area runs again host-ordered). */
KT_TEST(an_owner_reset_with_a_prepare_in_flight_closes_only_once_the_prepare_returned) {
    /* K36, K16 */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    bg_prepare b = {c, kt_image_append(), KCTX_INVALID_STATE};
    REQUIRE(b.img.bytes);
    pthread_t t;
    int hold = -1;
    REQUIRE(start_held_prepare(&b, &t, &hold));
    kt_owner_reset(); /* every handle of the context is gone */
    CHECK_K(kctx_close(c), KCTX_BUSY);
    CHECK(strstr(kctx_last_error(c), "prepare") != NULL);
    CHECK_PHASE(c, KCTX_PHASE_READY);
    CHECK_OK(kctx_seam_hold_release(hold));
    pthread_join(t, NULL);
    /* its load or upload met the reset: refused, nothing of it published
     * or left loaded (host-ordered loads succeed after the reset: the
     * epoch check refuses them, and the prepare gives its modules back) */
    CHECK(b.st != KCTX_OK);
    CHECK_EQ(kt_resources(c).callables, 1);
    CHECK_OK(kctx_close(c)); /* abandons (K36) */
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
}
