/*
 * test_latch.c — modes and the latch (K1, K2, K3).
 */
#include "kt.h"

#include <stdio.h>
#include <string.h>

/* Program init makes two lifecycle calls as the context's owner: init
 * (counted on every device) and set_device. */
static void expect_program_init_lifecycle(int device) {
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(device, SIM_LIFECYCLE_SET_DEVICE, 1);
}

static kctx_program_config program_config(int device) {
    kctx_program_config cfg = KCTX_PROGRAM_CONFIG_INIT;
    cfg.device = device;
    return cfg;
}

KT_TEST(kernel_init_latches_kernel_mode) { /* K1 */
    kctx_context c = kt_create();
    REQUIRE(c);
    CHECK_MODE(c, KCTX_MODE_NONE);
    CHECK_PHASE(c, KCTX_PHASE_NEW);
    int dev = 0;
    CHECK_OK(kctx_get_device(c, &dev));
    CHECK_EQ(dev, -1);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_OK(kctx_kernel_init(c, &cfg));
    CHECK_MODE(c, KCTX_MODE_KERNEL);
    CHECK_PHASE(c, KCTX_PHASE_READY);
    CHECK_OK(kctx_get_device(c, &dev));
    CHECK_EQ(dev, 0);
    kt_finish(c);
}

KT_TEST(kernel_init_of_a_ready_kernel_context_is_refused_and_changes_nothing) { /* K1 */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kt_state before = kt_state_take(c);
    uint64_t calls = kt_calls(SIM_OP_ANY);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(c), "READY") != NULL);
    CHECK_EQ(kt_calls(SIM_OP_ANY), calls); /* refused before any platform call */
    CHECK_UNCHANGED(c, before);
    kt_finish(c);
}

KT_TEST(program_init_after_the_kernel_latch_is_refused_in_every_phase) { /* K1 */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kctx_program_config pcfg = program_config(0);
    kt_state before = kt_state_take(c);
    CHECK_K(kctx_program_init(c, &pcfg), KCTX_INVALID_STATE);
    CHECK_UNCHANGED(c, before);
    CHECK_OK(kctx_close(c));
    /* the latch is never rolled back, not on close */
    CHECK_MODE(c, KCTX_MODE_KERNEL);
    CHECK_K(kctx_program_init(c, &pcfg), KCTX_INVALID_STATE);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_STATE);
    CHECK_PHASE(c, KCTX_PHASE_CLOSED);
    CHECK_MODE(c, KCTX_MODE_KERNEL);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(the_latch_survives_a_rolled_back_init) { /* K1 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    kt_fault(SIM_OP_MALLOC, 1, 0); /* after the latch: streams, events and programs exist */
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(c, KCTX_PHASE_NEW);
    CHECK_MODE(c, KCTX_MODE_KERNEL); /* not rolled back on error */
    kctx_program_config pcfg = program_config(0);
    CHECK_K(kctx_program_init(c, &pcfg), KCTX_INVALID_STATE);
    CHECK_MODE(c, KCTX_MODE_KERNEL);
    /* latching the held mode again is accepted */
    CHECK_OK(kctx_kernel_init(c, &cfg));
    CHECK_PHASE(c, KCTX_PHASE_READY);
    kt_finish(c);
}

KT_TEST(program_init_latches_program_mode_and_refuses_kernel_init) { /* K1, K3 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_program_config pcfg = program_config(0);
    expect_program_init_lifecycle(0);
    REQUIRE_OK(kctx_program_init(c, &pcfg));
    CHECK_MODE(c, KCTX_MODE_PROGRAM);
    CHECK_PHASE(c, KCTX_PHASE_READY);
    kt_state before = kt_state_take(c);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(c), "PROGRAM") != NULL);
    CHECK_UNCHANGED(c, before);
    /* program init of a READY program context: the phase refuses it */
    CHECK_K(kctx_program_init(c, &pcfg), KCTX_INVALID_STATE);
    CHECK_OK(kctx_close(c));
    CHECK_MODE(c, KCTX_MODE_PROGRAM);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_STATE);
    CHECK_OK(kctx_destroy(c));
}

/* Configs refused before the latch (K2): each leaves a mode-less NEW
 * context with no platform call made. */
static void bad_configs(kctx_kernel_config *out, const char **what, int *n) {
    kctx_kernel_config ok = KCTX_KERNEL_CONFIG_INIT;
    int i = 0;
#define BAD_(desc, stmt)                  \
    do {                                  \
        out[i] = ok;                      \
        kctx_kernel_config *c_ = &out[i]; \
        stmt;                             \
        what[i++] = desc;                 \
    } while (0)
    BAD_("size too small", c_->size = sizeof(kctx_kernel_config) - 1);
    BAD_("size zero", c_->size = 0);
    BAD_("unknown version", c_->version = KCTX_CONFIG_VERSION + 1);
    BAD_("args_capacity below 64", c_->args_capacity = 63);
    BAD_("args_capacity above 65536", c_->args_capacity = 65537);
    BAD_("token_capacity 0", c_->token_capacity = 0);
    BAD_("token_capacity above 65536", c_->token_capacity = 65537);
    BAD_("prepare_timeout_ms 0", c_->prepare_timeout_ms = 0);
    BAD_("unknown flags", c_->flags = 0x80);
    BAD_("trace on with zero device records",
         (c_->flags = KCTX_TRACE_ENABLE, c_->trace_device_records = 0));
    BAD_("trace on with too many host records",
         (c_->flags = KCTX_TRACE_ENABLE, c_->trace_host_records = 1u << 30));
#undef BAD_
    *n = i;
}

KT_TEST(a_bad_config_leaves_a_modeless_context_usable_for_kernel_init) { /* K2 */
    kctx_kernel_config cfgs[16];
    const char *what[16];
    int n = 0;
    bad_configs(cfgs, what, &n);
    kctx_context c = kt_create();
    REQUIRE(c);
    uint64_t calls = kt_calls(SIM_OP_ANY);
    CHECK_K(kctx_kernel_init(c, NULL), KCTX_INVALID_ARGUMENT);
    for (int i = 0; i < n; i++) {
        if (!CHECK_K(kctx_kernel_init(c, &cfgs[i]), KCTX_INVALID_ARGUMENT))
            fprintf(stderr, "    config: %s\n", what[i]);
        CHECK_MODE(c, KCTX_MODE_NONE);
        CHECK_PHASE(c, KCTX_PHASE_NEW);
    }
    CHECK_EQ(kt_calls(SIM_OP_ANY), calls);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_OK(kctx_kernel_init(c, &cfg));
    kt_finish(c);
}

KT_TEST(a_bad_config_leaves_a_modeless_context_usable_for_program_init) { /* K2 */
    kctx_kernel_config cfgs[16];
    const char *what[16];
    int n = 0;
    bad_configs(cfgs, what, &n);
    kctx_context c = kt_create();
    REQUIRE(c);
    for (int i = 0; i < n; i++) CHECK_K(kctx_kernel_init(c, &cfgs[i]), KCTX_INVALID_ARGUMENT);
    CHECK_MODE(c, KCTX_MODE_NONE);
    kctx_program_config pcfg = program_config(0);
    expect_program_init_lifecycle(0);
    CHECK_OK(kctx_program_init(c, &pcfg));
    CHECK_MODE(c, KCTX_MODE_PROGRAM);
    kt_finish(c);
}

KT_TEST(a_busy_claim_leaves_a_modeless_context_usable_either_way) { /* K2 */
    kctx_context owner = kt_kernel_ctx();
    kctx_context b = kt_create(), c = kt_create();
    REQUIRE(owner && b && c);
    kt_snap dev = kt_snap_take(0);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_K(kctx_kernel_init(b, &cfg), KCTX_BUSY);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_BUSY);
    CHECK_DEVICE_AT(0, dev); /* the refused inits took nothing */
    for (int i = 0; i < 2; i++) {
        kctx_context x = i ? c : b;
        CHECK_MODE(x, KCTX_MODE_NONE);
        CHECK_PHASE(x, KCTX_PHASE_NEW);
        int d = 0;
        CHECK_OK(kctx_get_device(x, &d));
        CHECK_EQ(d, -1);
    }
    /* b can still become a program context (program contexts take no claim) */
    kctx_program_config pcfg = program_config(0);
    expect_program_init_lifecycle(0);
    CHECK_OK(kctx_program_init(b, &pcfg));
    CHECK_MODE(b, KCTX_MODE_PROGRAM);
    kt_finish(b);
    /* c can still become the kernel context once the owner has gone */
    kt_finish(owner);
    CHECK_OK(kctx_kernel_init(c, &cfg));
    CHECK_MODE(c, KCTX_MODE_KERNEL);
    kt_finish(c);
}

/* K3: the entries that only one mode may use. Program-only: program init
 * and the synchronous run (program mode's device-reset recovery is not an
 * entry: it is its policy on a fatal error, see test_fatal.c); kernel-only:
 * kernel init and launch. */
KT_TEST(mode_specific_entries_are_refused_on_the_other_mode) { /* K3 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context k = kt_kernel_ctx();
    kctx_context p = kt_create();
    REQUIRE(k && p);
    kctx_program_config pcfg = program_config(0);
    expect_program_init_lifecycle(0);
    REQUIRE_OK(kctx_program_init(p, &pcfg));
    CHECK_OK(kctx_prepare(k, 1, noop.bytes, noop.size));
    CHECK_OK(kctx_prepare(p, 1, noop.bytes, noop.size));
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    kt_state ks = kt_state_take(k), ps = kt_state_take(p);
    CHECK_K(kctx_program_init(k, &pcfg), KCTX_INVALID_STATE);
    CHECK_K(kctx_run(k, 1, NULL, 0), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(k), "K3") != NULL);
    kctx_kernel_config cfg = kt_config(0);
    CHECK_K(kctx_kernel_init(p, &cfg), KCTX_INVALID_STATE);
    CHECK_K(kctx_launch(p, 1, NULL, 0, caller), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(p), "K3") != NULL);
    CHECK_UNCHANGED(k, ks);
    CHECK_UNCHANGED(p, ps);
    CHECK_SIM_OK(sim_stream_destroy(caller));
    kt_finish(p);
    kt_finish(k);
}
