/*
 * test_fatal.c — fatal device errors: quarantine (K29, K30), program mode's
 * own recovery (K31) and owner resets (K36).
 *
 * Every test that quarantines ends with the device's owner (the test)
 * resetting the device and the context closing, so the harness can prove
 * clean teardown.
 */
#include "kt.h"

#include <stdio.h>
#include <string.h>

static uint64_t lc(int device, sim_lifecycle_op op) {
    uint64_t n = 0;
    CHECK_SIM_OK(sim_lifecycle_count(device, op, &n));
    return n;
}

/* A READY kernel context on device 0 with one prepared callable, then the
 * device is made lost and a prepare notices it. */
static kctx_context quarantined(void) {
    kt_image noop = kt_image_noop(), append = kt_image_append();
    kctx_context c = kt_kernel_ctx();
    if (!c || !noop.bytes || !append.bytes) return c;
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    CHECK_SIM_OK(sim_device_make_fatal(0));
    CHECK_K(kctx_prepare(c, 2, append.bytes, append.size), KCTX_DEVICE_LOST);
    CHECK_PHASE(c, KCTX_PHASE_QUARANTINED);
    return c;
}

KT_TEST(a_fatal_error_quarantines_and_shuts_admission) { /* K29 */
    kctx_context c = quarantined();
    REQUIRE(c);
    char msg[256] = "";
    kctx_status rt = KCTX_OK;
    CHECK_OK(kctx_runtime_error(c, &rt, msg, sizeof msg));
    CHECK_K(rt, KCTX_DEVICE_LOST);
    CHECK(msg[0] != 0);
    kt_image noop = kt_image_noop();
    CHECK_REFUSED(c, kctx_prepare(c, 3, noop.bytes, noop.size), KCTX_DEVICE_LOST);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_REFUSED(c, kctx_kernel_init(c, &cfg), KCTX_INVALID_STATE);
    kt_owner_reset();
    kt_finish(c);
}

KT_TEST(quarantine_keeps_every_handle_close_is_device_lost_and_destroy_is_refused) { /* K30 */
    kctx_context c = quarantined();
    REQUIRE(c);
    kctx_resource_info r0 = kt_resources(c);
    uint64_t rel = kt_release_calls();
    CHECK_REFUSED(c, kctx_close(c), KCTX_DEVICE_LOST);
    CHECK(strstr(kctx_last_error(c), "reset") != NULL);
    CHECK_EQ(kt_release_calls(), rel); /* no release call on a device that cannot honour it */
    CHECK_REFUSED(c, kctx_close(c), KCTX_DEVICE_LOST);
    CHECK_REFUSED(c, kctx_destroy(c), KCTX_BUSY);
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.aicpu_stream, r0.aicpu_stream);
    CHECK_EQ(r.runtime_image, r0.runtime_image);
    CHECK_EQ(r.callables, 1);
    kt_owner_reset();
    rel = kt_release_calls();
    CHECK_OK(kctx_close(c));
    CHECK_EQ(kt_release_calls(), rel);
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(a_fatal_error_seen_first_by_close_quarantines_too) { /* K29, K30 */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_SIM_OK(sim_device_make_fatal(0));
    uint64_t rel = kt_release_calls();
    CHECK_K(kctx_close(c), KCTX_DEVICE_LOST);
    CHECK_EQ(kt_release_calls(), rel);
    CHECK_PHASE(c, KCTX_PHASE_QUARANTINED);
    CHECK_K(kt_runtime_error(c), KCTX_DEVICE_LOST);
    CHECK_K(kctx_destroy(c), KCTX_BUSY);
    kt_owner_reset();
    kt_finish(c);
}

KT_TEST(
    after_the_owner_resets_the_device_close_completes_and_releases_the_claim) { /* K30, K36, K7 */
    kctx_context c = quarantined();
    REQUIRE(c);
    kctx_context other = kt_create();
    REQUIRE(other);
    kctx_kernel_config cfg = kt_config(0);
    /* still claimed in quarantine (or refused earlier, reading the lost device) */
    CHECK_K2(kctx_kernel_init(other, &cfg), KCTX_BUSY, KCTX_DEVICE_LOST);
    CHECK_MODE(other, KCTX_MODE_NONE);
    kt_owner_reset();
    CHECK_K(kctx_kernel_init(other, &cfg), KCTX_BUSY); /* the reset alone releases nothing */
    uint64_t calls = kt_injectable_calls();
    CHECK_OK(kctx_close(c));
    /* abandoned: no platform call but reading the epoch that shows the reset */
    CHECK_EQ(kt_injectable_calls(), calls);
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_kernel_init(other, &cfg)); /* a new kernel init on the device works */
    kt_finish(other);
    CHECK_OK(kctx_destroy(c));
}

/* K36 from every phase that holds handles (POISONED: test_poison.c). */
KT_TEST(an_owner_reset_lets_close_complete_from_any_phase_without_release_calls) { /* K36 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    for (int row = 0; row < 4; row++) {
        kctx_context c = kt_kernel_ctx();
        REQUIRE(c);
        CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
        const char *phase = "READY";
        if (row == 1) {
            phase = "CLOSING";
            kt_fault(SIM_OP_EVENT_DESTROY, 1, 1);
            CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
            sim_fault_clear_all();
            CHECK_PHASE(c, KCTX_PHASE_CLOSING);
        } else if (row == 2) {
            phase = "QUARANTINED";
            CHECK_SIM_OK(sim_device_make_fatal(0));
            /* other bytes than id 1's: this prepare must load (K14 would share) */
            CHECK_K(kctx_prepare(c, 2, append.bytes, append.size), KCTX_DEVICE_LOST);
            CHECK_PHASE(c, KCTX_PHASE_QUARANTINED);
        } else if (row == 3) {
            phase = "READY, device lost and not yet noticed";
            CHECK_SIM_OK(sim_device_make_fatal(0));
        }
        kt_owner_reset();
        uint64_t calls = kt_injectable_calls(); /* all but the epoch read */
        if (!CHECK_OK(kctx_close(c))) fprintf(stderr, "    from %s\n", phase);
        CHECK_EQ(kt_injectable_calls(), calls);
        CHECK_PHASE(c, KCTX_PHASE_CLOSED);
        CHECK_OK(kctx_destroy(c));
    }
}

KT_TEST(a_rollback_that_failed_is_finished_by_close_after_an_owner_reset) { /* K36, K7 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    kt_fault(SIM_OP_MALLOC, 2, 0);
    kt_fault(SIM_OP_EVENT_DESTROY, 1, 1);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_CLOSING);
    kt_owner_reset();
    uint64_t calls = kt_injectable_calls(); /* all but the epoch read */
    CHECK_OK(kctx_close(c));
    CHECK_EQ(kt_injectable_calls(), calls);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(program_mode_resets_its_own_device_on_a_fatal_error) { /* K31 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context p = kt_create();
    REQUIRE(p);
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_SET_DEVICE, 1);
    REQUIRE_OK(kctx_program_init(p, &pcfg));
    CHECK_OK(kctx_prepare(p, 1, noop.bytes, noop.size));
    uint64_t resets = lc(0, SIM_LIFECYCLE_RESET_DEVICE), epoch0 = 0, epoch1 = 0;
    CHECK_SIM_OK(sim_device_epoch(0, &epoch0));
    CHECK_SIM_OK(sim_device_make_fatal(0));
    kt_expect_lifecycle(0, SIM_LIFECYCLE_RESET_DEVICE, 1); /* program mode's recovery policy */
    CHECK_K(kctx_prepare(p, 2, append.bytes, append.size),
            KCTX_DEVICE_LOST); /* the failure is reported (new bytes: it must load) */
    CHECK_EQ(lc(0, SIM_LIFECYCLE_RESET_DEVICE), resets + 1);
    CHECK_SIM_OK(sim_device_epoch(0, &epoch1));
    CHECK_EQ(epoch1, epoch0 + 1);
    CHECK_K(kt_runtime_error(p), KCTX_DEVICE_LOST);
    /* its handles were abandoned: nothing of it is listed any more */
    kctx_resource_info r = kt_resources(p);
    CHECK_EQ(r.aicpu_stream, 0);
    CHECK_EQ(r.runtime_image, 0);
    CHECK_EQ(r.callables, 0);
    CHECK_OK(kctx_close(p));
    CHECK_PHASE(p, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(p));
}

KT_TEST(kernel_mode_never_runs_the_reset_policy) { /* K31, K4 */
    kctx_context k = kt_kernel_ctx();
    REQUIRE(k);
    uint64_t resets = lc(0, SIM_LIFECYCLE_RESET_DEVICE);
    CHECK_SIM_OK(sim_device_make_fatal(0));
    kt_image noop = kt_image_noop();
    CHECK_K(kctx_prepare(k, 1, noop.bytes, noop.size), KCTX_DEVICE_LOST);
    CHECK_K(kctx_close(k), KCTX_DEVICE_LOST);
    CHECK_EQ(lc(0, SIM_LIFECYCLE_RESET_DEVICE), resets);
    kt_owner_reset();
    kt_finish(k);
}

/* Kills: program mode's recovery (kctx__program_recover, lifecycle.c)
 * resetting the calling thread's current device instead of the device the
 * context owns (dropping its switch to c->device). Here the fatal error is
 * seen by close's epoch read (K36's first step, before the current-device
 * check) on a thread whose current device is 0, while the program context
 * owns device 1: the recovery resets device 1 only, gives the thread its
 * device 0 back, and a kernel context on device 0 is untouched (K31: only
 * the device it owns may be reset). */
KT_TEST(program_recovery_resets_its_own_device_while_another_one_is_current) { /* K31 */
    REQUIRE_DEVICES(2);
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context k = kt_prepared_ctx(noop, 1); /* device 0 */
    REQUIRE(k);
    kctx_context p = kt_create();
    REQUIRE(p);
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    pcfg.device = 1;
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(1, SIM_LIFECYCLE_SET_DEVICE, 1);
    REQUIRE_OK(kctx_program_init(p, &pcfg));
    CHECK_OK(kctx_prepare(p, 1, noop.bytes, noop.size));
    kt_set_device(0); /* the thread works on device 0 now */
    uint64_t resets0 = lc(0, SIM_LIFECYCLE_RESET_DEVICE),
             resets1 = lc(1, SIM_LIFECYCLE_RESET_DEVICE);
    uint64_t epoch0 = 0, epoch1 = 0, e = 0;
    CHECK_SIM_OK(sim_device_epoch(0, &epoch0));
    CHECK_SIM_OK(sim_device_epoch(1, &epoch1));
    CHECK_SIM_OK(sim_device_make_fatal(1));
    kctx_fault f = KCTX_FAULT_INIT;
    f.op = KCTX_POP_DEVICE_EPOCH;
    f.error = KCTX_DEVICE_LOST;
    int fid = -1;
    REQUIRE_OK(kctx_fault_arm(&f, &fid));
    /* the recovery: make device 1 current, reset it, device 0 current again */
    kt_expect_lifecycle(1, SIM_LIFECYCLE_SET_DEVICE, 1);
    kt_expect_lifecycle(1, SIM_LIFECYCLE_RESET_DEVICE, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_SET_DEVICE, 1);
    CHECK_K(kctx_close(p), KCTX_DEVICE_LOST);
    kctx_fault_clear_all();
    CHECK_PHASE(p, KCTX_PHASE_CLOSED);
    CHECK_EQ(lc(1, SIM_LIFECYCLE_RESET_DEVICE), resets1 + 1);
    CHECK_EQ(lc(0, SIM_LIFECYCLE_RESET_DEVICE), resets0);
    CHECK_SIM_OK(sim_device_epoch(1, &e));
    CHECK_EQ(e, epoch1 + 1);
    CHECK_SIM_OK(sim_device_epoch(0, &e));
    CHECK_EQ(e, epoch0);
    int cur = -1;
    CHECK_SIM_OK(sim_get_device(&cur));
    CHECK_EQ(cur, 0);
    CHECK_OK(kctx_destroy(p));
    kt_check_launches(k, 1); /* the kernel context on device 0 still runs */
    kt_finish(k);
}
