/*
 * test_claims.c — one live kernel context per device (K6) and when the
 * claim is released (K7).
 */
#include "kt.h"

#include <string.h>

static kctx_status try_kernel_init(kctx_context c) {
    kctx_kernel_config cfg = kt_config(0);
    return kctx_kernel_init(c, &cfg);
}

/* Whether another kernel context could claim the current device now
 * (probes with a throwaway context). */
static int claim_is_free(void) {
    kctx_context p = kt_create();
    if (!p) return 0;
    kctx_status st = try_kernel_init(p);
    CHECK_K2(st, KCTX_OK, KCTX_BUSY);
    CHECK_OK(kctx_close(p));
    CHECK_OK(kctx_destroy(p));
    return st == KCTX_OK;
}

KT_TEST(a_second_kernel_init_on_the_same_device_is_busy_and_takes_nothing) { /* K6 */
    kctx_context a = kt_kernel_ctx();
    kctx_context b = kt_create();
    REQUIRE(a && b);
    kt_snap dev = kt_snap_take(0);
    kt_state as = kt_state_take(a);
    uint64_t destructive = kt_destructive_calls();
    CHECK_K(try_kernel_init(b), KCTX_BUSY);
    CHECK(strstr(kctx_last_error(b), "claimed") != NULL);
    CHECK_EQ(kt_destructive_calls(), destructive); /* only queries */
    CHECK_DEVICE_AT(0, dev);
    CHECK_UNCHANGED(a, as);
    CHECK_MODE(b, KCTX_MODE_NONE);
    CHECK_PHASE(b, KCTX_PHASE_NEW);
    CHECK_OK(kctx_destroy(b));
    kt_finish(a);
}

KT_TEST(a_different_device_can_be_claimed_at_the_same_time) { /* K6 */
    REQUIRE_DEVICES(2);
    kctx_context a = kt_kernel_ctx();
    REQUIRE(a);
    kt_set_device(1);
    kctx_context b = kt_kernel_ctx();
    REQUIRE(b);
    int d = -1;
    CHECK_OK(kctx_get_device(b, &d));
    CHECK_EQ(d, 1);
    CHECK(!claim_is_free()); /* device 1 is taken now, too */
    kt_finish(b);
    CHECK(claim_is_free());
    kt_set_device(0);
    kt_finish(a);
}

KT_TEST(a_rejected_claimant_cannot_release_the_owner) { /* K6 */
    kctx_context a = kt_kernel_ctx();
    kctx_context b = kt_create();
    REQUIRE(a && b);
    CHECK_K(try_kernel_init(b), KCTX_BUSY);
    CHECK_OK(kctx_close(b)); /* a NEW context closes to CLOSED ... */
    CHECK_PHASE(b, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(b)); /* ... and goes, releasing nothing of a's */
    CHECK(!claim_is_free());
    CHECK_PHASE(a, KCTX_PHASE_READY);
    kt_finish(a);
    CHECK(claim_is_free());
}

KT_TEST(program_contexts_take_no_claim) { /* K7 (program contexts) */
    kctx_context a = kt_kernel_ctx();
    kctx_context p = kt_create();
    REQUIRE(a && p);
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_SET_DEVICE, 1);
    CHECK_OK(kctx_program_init(p, &pcfg)); /* the caller serialises program and kernel use */
    CHECK(!claim_is_free());               /* a still holds it */
    kt_finish(p);
    CHECK(!claim_is_free());
    kt_finish(a);
}

KT_TEST(a_successful_close_releases_the_claim) { /* K7 */
    kctx_context a = kt_kernel_ctx();
    REQUIRE(a);
    CHECK(!claim_is_free());
    CHECK_OK(kctx_close(a));
    CHECK(claim_is_free());
    CHECK_OK(kctx_destroy(a));
}

KT_TEST(a_completed_rollback_releases_the_claim) { /* K7 */
    kctx_context a = kt_create();
    REQUIRE(a);
    kt_fault(SIM_OP_MALLOC, 1, 0);
    CHECK_K(try_kernel_init(a), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(a, KCTX_PHASE_NEW);
    CHECK(claim_is_free());
    CHECK_OK(kctx_destroy(a));
}

KT_TEST(a_failed_rollback_keeps_the_claim_until_close_completes) { /* K7 */
    kctx_context a = kt_create();
    REQUIRE(a);
    kt_fault(SIM_OP_MALLOC, 1, 0);
    kt_fault(SIM_OP_STREAM_DESTROY, 1, 1);
    CHECK_K(try_kernel_init(a), KCTX_PLATFORM_ERROR);
    CHECK(strstr(kctx_last_error(a), "rollback") != NULL);
    sim_fault_clear_all();
    CHECK_PHASE(a, KCTX_PHASE_CLOSING);
    CHECK(!claim_is_free());
    CHECK_K(kctx_destroy(a), KCTX_BUSY);
    CHECK(!claim_is_free());
    CHECK_OK(kctx_close(a));
    CHECK_PHASE(a, KCTX_PHASE_CLOSED);
    CHECK(claim_is_free());
    CHECK_OK(kctx_destroy(a));
}

KT_TEST(a_failed_close_keeps_the_claim_until_a_retry_succeeds) { /* K7 */
    kctx_context a = kt_kernel_ctx();
    REQUIRE(a);
    kt_fault(SIM_OP_EVENT_DESTROY, 1, 0);
    CHECK_K(kctx_close(a), KCTX_PLATFORM_ERROR);
    CHECK_PHASE(a, KCTX_PHASE_CLOSING);
    CHECK(!claim_is_free());
    CHECK_OK(kctx_close(a));
    CHECK(claim_is_free());
    CHECK_OK(kctx_destroy(a));
}

KT_TEST(destroy_never_releases_a_claim) { /* K7, K27 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context a = kt_kernel_ctx();
    REQUIRE(a);
    CHECK_K(kctx_destroy(a), KCTX_BUSY); /* READY */
    CHECK(!claim_is_free());
    CHECK_OK(kctx_prepare(a, 1, noop.bytes, noop.size)); /* and the context still works */
    kt_fault(SIM_OP_STREAM_DESTROY, 1, 0);
    CHECK_K(kctx_close(a), KCTX_PLATFORM_ERROR);
    CHECK_K(kctx_destroy(a), KCTX_BUSY); /* CLOSING */
    CHECK(!claim_is_free());
    CHECK_OK(kctx_close(a));
    CHECK_OK(kctx_destroy(a));
    CHECK(claim_is_free());
}
