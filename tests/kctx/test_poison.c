/*
 * test_poison.c — uploads whose wait failed (K17), the POISONED phase (K8,
 * K9), the two error slots (K10), and an owner reset of a poisoned
 * context (K36).
 *
 * Runs in its own process with LeakSanitizer off (see CMakeLists.txt):
 * when an upload was started but its wait failed, prepare keeps the host
 * copy of the callable table for good (a device copy may still be reading
 * it), which LeakSanitizer would report. Device-side leaks are still
 * checked after every test by the harness.
 */
#include "kt.h"

#include <stdio.h>
#include <string.h>

/* A READY context whose next prepare is poisoned by an injected failure of
 * the wait on its upload. Returns the status prepare gave. */
static kctx_status poison_by_failed_wait(kctx_context c, kt_image img, uint64_t id) {
    kt_fault(SIM_OP_STREAM_SYNCHRONIZE, 1, 0);
    kctx_status st = kctx_prepare(c, id, img.bytes, img.size);
    sim_fault_clear_all();
    /* the device may still be copying: wait for it before anyone closes */
    CHECK_SIM_OK(sim_stream_synchronize(kt_resources(c).upload_stream));
    return st;
}

KT_TEST(an_upload_whose_wait_timed_out_poisons_and_is_kept_until_close) { /* K17 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(500); /* a short bound on prepare's wait */
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    sim_stream s = kt_resources(c).upload_stream;
    kt_snap before = kt_snap_take(0);
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_COPY; /* the upload of the callable table never finishes in time */
    h.device = 0;
    int hold = -1;
    REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
    CHECK_K(kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_TIMEOUT);
    CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000)); /* still in flight */
    CHECK_PHASE(c, KCTX_PHASE_POISONED);
    char msg[256] = "";
    kctx_status rt = KCTX_OK;
    CHECK_OK(kctx_runtime_error(c, &rt, msg, sizeof msg));
    CHECK_K(rt, KCTX_TIMEOUT);
    CHECK(strstr(msg, "upload") != NULL);
    /* the upload's device memory and module are kept while the device may read them */
    kt_snap during = kt_snap_take(0);
    CHECK_EQ(during.live_count, before.live_count + 1);
    CHECK_EQ(during.o.modules, before.o.modules + 1);
    CHECK_EQ(kt_resources(c).callables, 0); /* the id was not registered */
    /* close must not release under the device's feet: the upload is still running */
    CHECK_REFUSED(c, kctx_close(c), KCTX_BUSY);
    CHECK_SIM_OK(sim_hold_release(hold));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c)); /* the harness proves the device is back to its baseline */
}

KT_TEST(an_upload_whose_wait_failed_poisons_with_the_cause) { /* K17, K9 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kt_snap before = kt_snap_take(0);
    CHECK_K(poison_by_failed_wait(c, noop, 1), KCTX_PLATFORM_ERROR);
    CHECK_PHASE(c, KCTX_PHASE_POISONED);
    CHECK_K(kt_runtime_error(c), KCTX_PLATFORM_ERROR);
    kt_snap after = kt_snap_take(0);
    CHECK_EQ(after.live_count, before.live_count + 1); /* kept until close */
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(poisoned_refuses_prepare_and_init_and_destroy_but_accepts_close) { /* K8, K9, K27 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    CHECK_K(poison_by_failed_wait(c, append, 2), KCTX_PLATFORM_ERROR); /* a new upload */
    /* even bytes already uploaded (no platform work needed) are refused */
    CHECK_REFUSED(c, kctx_prepare(c, 3, noop.bytes, noop.size), KCTX_POISONED);
    CHECK(strstr(kctx_last_error(c), "poisoned") != NULL);
    kctx_kernel_config cfg = kt_config(0);
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    CHECK_REFUSED(c, kctx_kernel_init(c, &cfg), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_program_init(c, &pcfg), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_destroy(c), KCTX_BUSY);
    /* an invalid image is still INVALID_IMAGE (K13), before the phase */
    uint8_t junk[160] = {0};
    CHECK_REFUSED(c, kctx_prepare(c, 4, junk, sizeof junk), KCTX_INVALID_IMAGE);
    CHECK_OK(kctx_close(c));
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(a_poisoned_upload_is_never_shared_by_a_later_prepare) { /* K14, K17 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_K(poison_by_failed_wait(c, noop, 1), KCTX_PLATFORM_ERROR);
    CHECK_EQ(kt_resources(c).callables, 0);
    CHECK_K(kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_POISONED);
    CHECK_EQ(kt_resources(c).callables, 0);
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(the_runtime_and_teardown_error_slots_do_not_mask_each_other) { /* K10 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_K(kt_runtime_error(c), KCTX_OK);
    CHECK_K(kt_teardown_error(c), KCTX_OK);
    /* runtime error: the first cause of poisoning */
    CHECK_K(poison_by_failed_wait(c, noop, 1), KCTX_PLATFORM_ERROR);
    char rt_msg[256] = "", td_msg[256] = "", tmp[256] = "";
    kctx_status rt = KCTX_OK, td = KCTX_OK;
    CHECK_OK(kctx_runtime_error(c, &rt, rt_msg, sizeof rt_msg));
    CHECK_K(rt, KCTX_PLATFORM_ERROR);
    CHECK(strstr(rt_msg, "stream_sync") != NULL);
    CHECK_K(kt_teardown_error(c), KCTX_OK);
    CHECK_K(kctx_prepare(c, 2, noop.bytes, noop.size),
            KCTX_POISONED); /* does not overwrite the cause */
    /* teardown error: the first real release failure */
    kt_fault(SIM_OP_FREE, 1, 0);
    kt_fault(SIM_OP_EVENT_DESTROY, 1, 0);
    CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
    CHECK_OK(kctx_teardown_error(c, &td, td_msg, sizeof td_msg));
    CHECK_K(td, KCTX_PLATFORM_ERROR);
    CHECK(strstr(td_msg, "mem_free") != NULL); /* the first failure, not the event's */
    CHECK_OK(kctx_runtime_error(c, &rt, tmp, sizeof tmp));
    CHECK_K(rt, KCTX_PLATFORM_ERROR);
    CHECK(strcmp(tmp, rt_msg) == 0); /* unmasked */
    /* a retry that succeeds keeps the teardown error */
    CHECK_OK(kctx_close(c));
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_teardown_error(c, &td, tmp, sizeof tmp));
    CHECK_K(td, KCTX_PLATFORM_ERROR);
    CHECK(strcmp(tmp, td_msg) == 0);
    CHECK_OK(kctx_runtime_error(c, &rt, tmp, sizeof tmp));
    CHECK(strcmp(tmp, rt_msg) == 0);
    /* small buffers are truncated and terminated */
    char small[4] = {'x', 'x', 'x', 'x'};
    CHECK_OK(kctx_teardown_error(c, &td, small, sizeof small));
    CHECK_EQ(small[3], 0);
    CHECK_OK(kctx_teardown_error(c, &td, NULL, 0));
    CHECK_K(kctx_teardown_error(c, NULL, NULL, 0), KCTX_INVALID_ARGUMENT);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(an_owner_reset_lets_a_poisoned_context_close_without_release_calls) { /* K36 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_K(poison_by_failed_wait(c, noop, 1), KCTX_PLATFORM_ERROR);
    kt_owner_reset();
    uint64_t calls = kt_injectable_calls(); /* all but the epoch read */
    CHECK_OK(kctx_close(c));
    CHECK_EQ(kt_injectable_calls(), calls);
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
}

/* K17 applied to init's own upload (the runtime image and the architecture
 * table are written on the AICPU stream, then waited for). If that wait
 * fails, the device may still be writing the resident memory: a rollback
 * that frees it hands device memory to the next allocation while a fill or
 * copy is still pending on it. Expected: the memory stays allocated while
 * the work is pending, the rollback is incomplete (CLOSING, claim kept) and
 * close releases it once the work has drained. */
KT_TEST(
    init_whose_upload_wait_failed_does_not_free_memory_the_device_may_write) { /* K17 (init), K7 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kt_snap before = kt_snap_take(0);
    kctx_kernel_config cfg = kt_config(500);
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_FILL; /* init's first device write: the runtime image memset */
    h.device = 0;
    int hold = -1;
    REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_TIMEOUT);
    CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000));
    kt_snap during = kt_snap_take(0);
    int kept = CHECK_EQ(during.live_count, before.live_count + 4); /* + the argument slots */
    CHECK_PHASE(c, KCTX_PHASE_CLOSING);
    if (!kept) {
        /* The memory was freed under the pending fill. Neutralise the
         * pending work the way its owner would (a reset completes it with
         * DEVICE_LOST), instead of letting it write freed memory. */
        kt_owner_reset();
    } else {
        CHECK_SIM_OK(sim_hold_release(hold));
        CHECK_SIM_OK(sim_device_synchronize());
    }
    CHECK_OK(kctx_close(c));
    CHECK_OK(kctx_destroy(c));
}

/* K17's rule for init (kctx.h: kctx_kernel_init): an init upload that was
 * started but whose wait failed may still be read by the device, so
 * nothing is released — the context is CLOSING, not NEW (its claim kept,
 * another kernel init of the device BUSY), and close releases it once the
 * streams are idle. Under both strategies (both upload the runtime image
 * and the architecture table at init). Checks the header's statement
 * against the sim; kills a rollback to NEW on that path (init_failed's
 * in_flight branch). */
KT_TEST(an_init_upload_whose_wait_failed_leaves_the_context_closing_not_new) { /* K17, K7 */
    const uint32_t strategies[] = {KCTX_STRATEGY_RESIDENT, KCTX_STRATEGY_HOST_ORDERED};
    for (int k = 0; k < 2; k++) {
        kctx_context c = kt_create();
        REQUIRE(c);
        kctx_kernel_config cfg = kt_config(0);
        cfg.strategy = strategies[k];
        kt_fault(SIM_OP_STREAM_SYNCHRONIZE, 1, 0); /* init's upload wait */
        CHECK_K(kctx_kernel_init(c, &cfg), KCTX_PLATFORM_ERROR);
        sim_fault_clear_all();
        CHECK_PHASE(c, KCTX_PHASE_CLOSING);
        CHECK(strstr(kctx_last_error(c), "in flight") != NULL);
        kctx_context other = kt_create();
        REQUIRE(other);
        kctx_kernel_config ocfg = kt_config(0);
        CHECK_K(kctx_kernel_init(other, &ocfg), KCTX_BUSY); /* the claim is kept */
        CHECK_OK(kctx_destroy(other));
        CHECK_K(kctx_destroy(c), KCTX_BUSY);
        CHECK_SIM_OK(sim_stream_synchronize(kt_aicpu_stream(c)));
        CHECK_OK(kctx_close(c));
        CHECK_PHASE(c, KCTX_PHASE_CLOSED);
        CHECK_OK(kctx_destroy(c));
    }
}
