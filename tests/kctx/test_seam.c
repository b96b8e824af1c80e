/*
 * test_seam.c — the platform seam's own fault injection and call counting
 * (kctx.h: kctx_fault_arm, kctx_thread_platform_calls): every platform call
 * goes through one wrapper, which counts it and can fail it before the
 * platform is reached, so that fault sweeps run on every platform (issue
 * 12, item 3). Here on the sim, whose own counters prove the platform was
 * not called.
 */
#include "kt.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int seam_fault(int op, uint64_t nth, int persistent, kctx_status error) {
    kctx_fault f = KCTX_FAULT_INIT;
    f.op = op;
    f.nth = nth;
    f.persistent = persistent;
    f.error = error;
    int id = -1;
    CHECK_OK(kctx_fault_arm(&f, &id));
    return id;
}

KT_TEST(an_injected_fault_fails_the_named_call_before_the_platform_sees_it) { /* K9, K7 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    int id = seam_fault(KCTX_POP_STREAM_CREATE, 2, 0, KCTX_OUT_OF_MEMORY);
    uint64_t sim_creates = kt_calls(SIM_OP_STREAM_CREATE);
    uint64_t seam_creates = kctx_thread_platform_calls(KCTX_POP_STREAM_CREATE);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OUT_OF_MEMORY);
    CHECK(strstr(kctx_last_error(c), "stream_create(AICore)") != NULL);
    CHECK(strstr(kctx_last_error(c), "injected fault") != NULL);
    uint64_t hits = 0;
    CHECK_OK(kctx_fault_hits(id, &hits));
    CHECK_EQ(hits, 1);
    /* the seam counted both calls; only the first reached the sim */
    CHECK_EQ(kctx_thread_platform_calls(KCTX_POP_STREAM_CREATE) - seam_creates, 2);
    CHECK_EQ(kt_calls(SIM_OP_STREAM_CREATE) - sim_creates, 1);
    kctx_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_NEW); /* rolled back (K7) */
    CHECK_OK(kctx_kernel_init(c, &cfg));
    kt_finish(c);
}

KT_TEST(the_seam_counts_every_call_a_context_makes) { /* K19 */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    uint64_t a = 0, b = 0, t0 = kctx_thread_platform_calls(KCTX_POP_ANY);
    uint64_t launches = kctx_thread_platform_calls(KCTX_POP_LAUNCH);
    CHECK_OK(kctx_platform_calls(c, &a));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, s));
    CHECK_OK(kctx_platform_calls(c, &b));
    CHECK_EQ(kctx_thread_platform_calls(KCTX_POP_ANY) - t0, b - a);
    /* resident: acquire, workers, scheduler; host-ordered: acquire, the
     * task, finalize — three launches either way for a one-task callable */
    CHECK_EQ(kctx_thread_platform_calls(KCTX_POP_LAUNCH) - launches, 3);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
}

/* One whole kernel lifecycle; returns the first failing status. */
static kctx_status lifecycle(kctx_context c, kt_image img, sim_stream s) {
    kctx_kernel_config cfg = kt_config(0);
    kctx_status st = kctx_kernel_init(c, &cfg);
    if (!st) st = kctx_prepare(c, 1, img.bytes, img.size);
    if (!st) st = kctx_launch(c, 1, NULL, 0, s);
    if (!st) st = sim_stream_synchronize(s) == SIM_OK ? KCTX_OK : KCTX_DEVICE_ERROR;
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    if (!st) st = kctx_check(c, &rep);
    if (!st) st = kctx_close(c);
    return st;
}

KT_TEST(a_seam_fault_sweep_over_a_whole_lifecycle_ends_back_at_the_baseline) { /* K9 K24 K26 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    kt_snap base = kt_snap_take(0);
    /* calibrate: the calls one clean lifecycle makes */
    kctx_context c = kt_create();
    REQUIRE(c);
    uint64_t before = kctx_thread_platform_calls(KCTX_POP_ANY);
    REQUIRE_OK(lifecycle(c, noop, s));
    uint64_t total = kctx_thread_platform_calls(KCTX_POP_ANY) - before;
    CHECK_OK(kctx_destroy(c));
    REQUIRE(total > 10);
    unsigned failed = 0;
    for (uint64_t k = 1; k <= total && ktc_test_failures() == 0; k++) {
        c = kt_create();
        REQUIRE(c);
        int id = seam_fault(KCTX_POP_ANY, k, 0, KCTX_PLATFORM_ERROR);
        kctx_status st = lifecycle(c, noop, s);
        uint64_t hits = 0;
        CHECK_OK(kctx_fault_hits(id, &hits));
        kctx_fault_clear_all();
        CHECK_EQ(hits, 1); /* every call of the calibrated run was reached */
        if (st != KCTX_OK) failed++;
        /* whatever failed, the caller's retry brings everything back once
         * the device is idle (a failed wait can leave an upload running) */
        CHECK_SIM_OK(sim_device_synchronize());
        for (int retry = 0;
             retry < 3 && kt_phase(c) != KCTX_PHASE_CLOSED && kt_phase(c) != KCTX_PHASE_NEW;
             retry++)
            (void)kctx_close(c);
        if (!CHECK_OK(kctx_destroy(c)))
            fprintf(stderr, "    call %llu failed first (%s); close says: %s\n",
                    (unsigned long long)k, kctx_status_name(st), kctx_last_error(c));
        CHECK_DEVICE_AT(0, base);
    }
    printf("    seam fault sweep: %llu calls, %u runs failed\n", (unsigned long long)total, failed);
    CHECK(failed > 0);
    CHECK_SIM_OK(sim_stream_destroy(s));
}

KT_TEST(an_injected_device_loss_quarantines_like_a_real_one) { /* K29, K30, K36 */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    seam_fault(KCTX_POP_EVENT_RECORD, 1, 0, KCTX_DEVICE_LOST);
    CHECK_K(kctx_launch(c, 1, NULL, 0, s), KCTX_DEVICE_LOST);
    kctx_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_QUARANTINED);
    CHECK_K(kt_runtime_error(c), KCTX_DEVICE_LOST);
    CHECK_K(kctx_close(c), KCTX_DEVICE_LOST);
    kt_owner_reset(); /* K36: every handle of the device is gone, the test's stream too */
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
}

static void *other_thread_inits(void *arg) {
    kctx_context c = *(kctx_context *)arg;
    kt_set_device(0);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_OK(kctx_kernel_init(c, &cfg)); /* the main thread's fault is not this thread's */
    CHECK_OK(kctx_close(c));
    return NULL;
}

KT_TEST(a_thread_only_fault_fires_on_its_thread_only_and_persistent_faults_keep_failing) {
    kctx_context c = kt_create();
    REQUIRE(c);
    int id = seam_fault(KCTX_POP_ANY, 1, 1, KCTX_TIMEOUT); /* this thread only (the default) */
    void *arg = &c;
    kt_run_threads(1, other_thread_inits, &arg);
    uint64_t hits = 0;
    CHECK_OK(kctx_fault_hits(id, &hits));
    CHECK_EQ(hits, 0);
    kctx_context d = kt_create();
    REQUIRE(d);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_K(kctx_kernel_init(d, &cfg), KCTX_TIMEOUT);
    CHECK_K(kctx_kernel_init(d, &cfg), KCTX_TIMEOUT);
    CHECK_OK(kctx_fault_hits(id, &hits));
    CHECK_EQ(hits, 2);
    kctx_fault_clear_all();
    CHECK_OK(kctx_destroy(c));
    CHECK_OK(kctx_destroy(d));
}

KT_TEST(fault_arming_refuses_bad_arguments_and_more_than_its_capacity) { /* kctx.h */
    int id = -1;
    kctx_fault f = KCTX_FAULT_INIT;
    CHECK_K(kctx_fault_arm(NULL, &id), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_fault_arm(&f, NULL), KCTX_INVALID_ARGUMENT);
    f.nth = 0;
    CHECK_K(kctx_fault_arm(&f, &id), KCTX_INVALID_ARGUMENT);
    f = (kctx_fault)KCTX_FAULT_INIT;
    f.error = KCTX_OK;
    CHECK_K(kctx_fault_arm(&f, &id), KCTX_INVALID_ARGUMENT);
    f = (kctx_fault)KCTX_FAULT_INIT;
    f.op = KCTX_POP_COUNT;
    CHECK_K(kctx_fault_arm(&f, &id), KCTX_INVALID_ARGUMENT);
    f = (kctx_fault)KCTX_FAULT_INIT;
    f.size = sizeof f - 1;
    CHECK_K(kctx_fault_arm(&f, &id), KCTX_INVALID_ARGUMENT);
    f = (kctx_fault)KCTX_FAULT_INIT;
    f.nth = 1000000; /* never reached */
    for (int i = 0; i < KCTX_MAX_FAULTS; i++) CHECK_OK(kctx_fault_arm(&f, &id));
    CHECK_K(kctx_fault_arm(&f, &id), KCTX_CAPACITY);
    kctx_fault_clear_all();
    CHECK_OK(kctx_fault_arm(&f, &id));
    kctx_fault_clear_all();
    uint64_t hits = 0;
    CHECK_K(kctx_fault_hits(KCTX_MAX_FAULTS, &hits), KCTX_INVALID_ARGUMENT);
    CHECK(strcmp(kctx_platform_op_name(KCTX_POP_STREAM_SYNC), "stream_sync") == 0);
    CHECK(strcmp(kctx_platform_op_name(KCTX_POP_LIFECYCLE_RESET_DEVICE), "reset_device") == 0);
    CHECK(strcmp(kctx_platform_op_name(KCTX_POP_ANY), "any") == 0);
}

typedef struct held_init {
    kctx_context ctx;
    kctx_status st;
} held_init;

static void *held_init_main(void *arg) {
    held_init *h = arg;
    kctx_kernel_config cfg = kt_config(0);
    h->st = kctx_kernel_init(h->ctx, &cfg);
    return NULL;
}

/* The seam's holds (kctx.h: kctx_seam_hold_arm), which the K23/K33 race
 * tests rely on: a hold stops exactly the nth call of its op, before the
 * platform is reached, until released; a hold released before it is
 * reached stops nothing; the arguments and the capacity are checked. */
KT_TEST(a_seam_hold_stops_the_nth_call_of_its_op_before_the_platform_until_released) {
    int id = -1;
    CHECK_K(kctx_seam_hold_arm(KCTX_POP_STREAM_CREATE, 1, NULL), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_seam_hold_arm(KCTX_POP_STREAM_CREATE, 0, &id), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_seam_hold_arm(KCTX_POP_COUNT, 1, &id), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_seam_hold_wait_reached(-1, 10), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_seam_hold_wait_reached(0, 10), KCTX_INVALID_ARGUMENT); /* nothing armed */
    CHECK_K(kctx_seam_hold_release(KCTX_MAX_HOLDS), KCTX_INVALID_ARGUMENT);
    for (int i = 0; i < KCTX_MAX_HOLDS; i++)
        CHECK_OK(kctx_seam_hold_arm(KCTX_POP_STREAM_CREATE, 1000000, &id));
    CHECK_K(kctx_seam_hold_arm(KCTX_POP_STREAM_CREATE, 1, &id), KCTX_CAPACITY);
    kctx_seam_hold_release_all();

    /* the second stream creation of an init is held, the first reached the sim */
    held_init a = {kt_create(), KCTX_INVALID_HANDLE};
    REQUIRE(a.ctx);
    uint64_t streams = kt_snap_take(0).o.streams; /* live sim streams (the sim's counts) */
    REQUIRE_OK(kctx_seam_hold_arm(KCTX_POP_STREAM_CREATE, 2, &id));
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, held_init_main, &a) == 0);
    CHECK_OK(kctx_seam_hold_wait_reached(id, 10000));
    CHECK_EQ(kt_snap_take(0).o.streams - streams, 1);
    CHECK_OK(kctx_seam_hold_release(id));
    pthread_join(t, NULL);
    CHECK_OK(a.st);
    CHECK_EQ(kt_snap_take(0).o.streams - streams, 3); /* the three context streams */
    CHECK_K(kctx_seam_hold_wait_reached(id, 10), KCTX_INVALID_ARGUMENT); /* released */
    kt_finish(a.ctx);

    /* released before it is reached: stops nothing */
    held_init b = {kt_create(), KCTX_INVALID_HANDLE};
    REQUIRE(b.ctx);
    REQUIRE_OK(kctx_seam_hold_arm(KCTX_POP_ANY, 1, &id));
    CHECK_OK(kctx_seam_hold_release(id));
    held_init_main(&b); /* on this thread: a hold that still stopped it would hang here */
    CHECK_OK(b.st);
    kt_finish(b.ctx);
}
