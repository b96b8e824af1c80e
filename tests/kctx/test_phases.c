/*
 * test_phases.c — phase admission (K8), refusals change nothing (K9),
 * destroy (K27, K28) and handles (section 0).
 *
 * POISONED rows live in test_poison.c (poisoning pins host memory) and
 * QUARANTINED rows in test_fatal.c.
 */
#include "kt.h"

#include <stdio.h>
#include <string.h>

/* Calls an entry that the phase must refuse with `want`, and proves the
 * refusal changed nothing (K9) and made no destructive platform call. */
static kctx_kernel_config g_cfg = KCTX_KERNEL_CONFIG_INIT;
static kctx_program_config g_pcfg = KCTX_PROGRAM_CONFIG_INIT;

/* A context whose init failed after the latch and rolled back. */
static kctx_context latched_new(void) {
    kctx_context c = kt_create();
    if (!c) return 0;
    kt_fault(SIM_OP_MALLOC, 3, 0);
    CHECK_K(kctx_kernel_init(c, &g_cfg), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_NEW);
    CHECK_MODE(c, KCTX_MODE_KERNEL);
    return c;
}

/* A context left CLOSING by a failed release. */
static kctx_context closing(void) {
    kctx_context c = kt_kernel_ctx();
    if (!c) return 0;
    kt_fault(SIM_OP_MODULE_UNLOAD, 1, 0);
    CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_CLOSING);
    return c;
}

KT_TEST(new_modeless_accepts_init_close_and_destroy_only) { /* K8, K9 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_create();
    REQUIRE(c);
    CHECK_REFUSED(c, kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_INVALID_STATE);
    uint64_t calls = kt_calls(SIM_OP_ANY);
    CHECK_OK(kctx_close(c)); /* close of NEW: OK, CLOSED, no platform call */
    CHECK_EQ(kt_calls(SIM_OP_ANY), calls);
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(new_after_a_rollback_accepts_kernel_init_close_and_destroy_only) { /* K8, K9 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = latched_new();
    REQUIRE(c);
    CHECK_REFUSED(c, kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_program_init(c, &g_pcfg), KCTX_INVALID_STATE);
    CHECK_OK(kctx_destroy(c)); /* NEW: destroy is allowed */
    c = latched_new();
    REQUIRE(c);
    CHECK_OK(kctx_close(c));
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
    c = latched_new();
    REQUIRE(c);
    CHECK_OK(kctx_kernel_init(c, &g_cfg));
    kt_finish(c);
}

KT_TEST(ready_accepts_prepare_and_close_and_refuses_init_and_destroy) { /* K8, K9, K27 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    CHECK_REFUSED(c, kctx_kernel_init(c, &g_cfg), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_program_init(c, &g_pcfg), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_destroy(c), KCTX_BUSY);
    CHECK_PHASE(c, KCTX_PHASE_READY);
    kt_finish(c);
}

KT_TEST(closing_accepts_only_close) { /* K8, K9, K27 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = closing();
    REQUIRE(c);
    CHECK_REFUSED(c, kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_kernel_init(c, &g_cfg), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_program_init(c, &g_pcfg), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_destroy(c), KCTX_BUSY);
    CHECK_OK(kctx_close(c));
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(closed_accepts_only_destroy_and_idempotent_close) { /* K8, K9 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_OK(kctx_close(c));
    CHECK_REFUSED(c, kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_kernel_init(c, &g_cfg), KCTX_INVALID_STATE);
    CHECK_REFUSED(c, kctx_program_init(c, &g_pcfg), KCTX_INVALID_STATE);
    uint64_t calls = kt_calls(SIM_OP_ANY);
    CHECK_REFUSED(c, kctx_close(c), KCTX_OK); /* idempotent: no platform call, nothing changes */
    CHECK_EQ(kt_calls(SIM_OP_ANY), calls);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(destroy_is_refused_with_a_reason_unless_new_or_closed) { /* K27 */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_K(kctx_destroy(c), KCTX_BUSY);
    const char *why = kctx_last_error(c);
    CHECK(strstr(why, "READY") != NULL);
    CHECK(strstr(kctx_thread_last_error(), "READY") != NULL);
    CHECK_PHASE(c, KCTX_PHASE_READY); /* touched nothing */
    kt_finish(c);
}

/* Counted on both sides of the seam: the context's own counter, and the
 * sim's count of every entry it served this thread (the current-device and
 * epoch queries included), which also sees a call that bypasses the seam.
 * Every destruction path: test_mutants.c, no_destruction_path_calls_the_platform. */
KT_TEST(destroy_makes_no_platform_call) { /* K28 */
    kctx_context a = kt_create(), b = kt_kernel_ctx();
    REQUIRE(a && b);
    uint64_t sim_before = kt_calls(SIM_OP_ANY), kb = 0, ka = 0;
    CHECK_OK(kctx_platform_calls(b, &kb));
    CHECK_K(kctx_destroy(b), KCTX_BUSY);           /* refused */
    CHECK_OK(kctx_destroy(a));                     /* NEW */
    CHECK_K(kctx_destroy(a), KCTX_INVALID_HANDLE); /* dead */
    CHECK_OK(kctx_platform_calls(b, &ka));
    CHECK_EQ(ka, kb);
    CHECK_EQ(kt_calls(SIM_OP_ANY), sim_before);
    CHECK_OK(kctx_close(b));
    sim_before = kt_calls(SIM_OP_ANY);
    CHECK_OK(kctx_destroy(b)); /* CLOSED */
    CHECK_EQ(kt_calls(SIM_OP_ANY), sim_before);
}

KT_TEST(dead_and_foreign_handles_are_invalid_everywhere) { /* section 0 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context dead = kt_create();
    REQUIRE(dead);
    CHECK_OK(kctx_destroy(dead));
    /* the slot is reused by the next context; the old handle stays dead */
    kctx_context fresh = kt_create();
    REQUIRE(fresh);
    const kctx_context bad[] = {dead, 0, ~(kctx_context)0, dead ^ 0x10000000ull, fresh + 1};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kctx_context h = bad[i];
        kctx_phase p;
        kctx_mode m;
        int d;
        kctx_status s;
        char msg[16];
        uint64_t n;
        kctx_resource_info r;
        memset(&r, 0, sizeof r);
        r.size = sizeof r;
        CHECK_K(kctx_kernel_init(h, &g_cfg), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_program_init(h, &g_pcfg), KCTX_INVALID_HANDLE);
        /* the handle is checked before the arguments and the image */
        CHECK_K(kctx_prepare(h, 1, NULL, 0), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_prepare(h, 1, noop.bytes, noop.size), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_close(h), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_destroy(h), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_get_phase(h, &p), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_get_mode(h, &m), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_get_device(h, &d), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_runtime_error(h, &s, msg, sizeof msg), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_teardown_error(h, &s, msg, sizeof msg), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_get_resources(h, &r), KCTX_INVALID_HANDLE);
        CHECK_K(kctx_platform_calls(h, &n), KCTX_INVALID_HANDLE);
        CHECK(kctx_platform_name(h) != NULL);
        CHECK(kctx_last_error(h) != NULL);
    }
    CHECK_PHASE(fresh, KCTX_PHASE_NEW);
    CHECK_OK(kctx_destroy(fresh));
}

KT_TEST(statuses_and_phases_have_names) { /* one list (engineering style) */
    CHECK(strcmp(kctx_status_name(KCTX_BUSY), "KCTX_BUSY") == 0);
    CHECK(strcmp(kctx_status_name((kctx_status)999), "KCTX_UNKNOWN") == 0);
    CHECK(kctx_status_string((kctx_status)999) != NULL);
    for (int s = 0; s <= KCTX_NOT_FOUND; s++) {
        CHECK(strncmp(kctx_status_name((kctx_status)s), "KCTX_", 5) == 0);
        CHECK(strcmp(kctx_status_name((kctx_status)s), "KCTX_UNKNOWN") != 0);
        CHECK(kctx_status_string((kctx_status)s)[0] != 0);
    }
    CHECK(strcmp(kctx_phase_name(KCTX_PHASE_QUARANTINED), "QUARANTINED") == 0);
    CHECK(kctx_phase_name((kctx_phase)42) != NULL);
    CHECK_EQ(kctx_version(), KCTX_VERSION);
}
