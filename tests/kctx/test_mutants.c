/*
 * test_mutants.c — tests written against single-line mutations of the
 * implementation that an outside mutation review found surviving the
 * suite. Each test names its rule and, in its comment, the mutation it
 * kills:
 *
 *  - K18: the launch preflight's binding-offset size check (check_args in
 *    src/core/launch.c, min_size in src/core/prepare.c) and its
 *    args-capacity check;
 *  - K5: the current-device check of kctx_check and of kctx_launch;
 *  - K27: the phase check of kctx_destroy, on its own (program contexts
 *    hold no claim, so the claim check cannot mask it);
 *  - K28: a platform call added to kctx_destroy, on every destruction path;
 *  - K25: the token-pool check of a captured launch;
 *  - K35: the device poison written when prepare's upload wait failed
 *    (kctx__device_poison in do_upload, src/core/prepare.c);
 *  - K33: the claim checked and taken in one step: deterministically for
 *    a split with platform calls between its steps (a seam hold stops one
 *    init between reading its device and claiming it), and by a stress
 *    test for the split inside kctx__claim_take, where no call lies between
 *    check and insert (see its comment for why no hold point exists there);
 *  - K18: a NULL tensor address, refused before any range lookup;
 *  - K28: destroy's calls counted on both sides: by the seam over every op,
 *    and by the sim itself over every entry it serves, so that a call
 *    kctx_destroy makes straight through the ops table, bypassing the seam,
 *    fails the test too (the sim counts every entry its adapter calls, the
 *    queries included: the_sim_counts_every_call_of_its_adapter).
 */
#include "kt.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- images ------------------------------------------------------------------------ */

/* Finish a builder into a malloc'd image (free with free()); {NULL, 0} and a
 * failed check when it does not build. */
static kt_image finish(kctx_image_builder *b, const char *what) {
    kt_image img = {NULL, 0};
    void *out = NULL;
    size_t size = 0;
    char msg[256] = "";
    if (!b) {
        CHECK(!"kctx_image_builder_new failed");
        return img;
    }
    if (kctx_image_builder_finish(b, &out, &size, msg, sizeof msg) == KCTX_BUILD_OK)
        img = (kt_image){out, size};
    else
        fprintf(stderr, "    cannot build the %s image: %s\n", what, msg);
    CHECK(img.bytes != NULL);
    kctx_image_builder_free(b);
    return img;
}

/* Binding offsets (K18). Two tensor parameters, two tasks of the child
 * "noop" (entry k_noop, which touches nothing) with two TENSOR child
 * parameters each:
 *   task 0: t0 + OFF_T0_FIRST, t1 + 0
 *   task 1: t0 + OFF_T0_SECOND, t1 + OFF_T1   (depends on task 0)
 * so t0 must be larger than OFF_T0_FIRST (the largest offset is in the
 * first task, not the last) and t1 larger than OFF_T1. */
#define OFF_T0_FIRST 1000u
#define OFF_T0_SECOND 200u
#define OFF_T1 64u
static kt_image offsets_image(void) {
    kt_image mod = kt_test_kernels_module();
    if (!mod.bytes) return (kt_image){NULL, 0};
    kctx_image_builder *b = kctx_image_builder_new("offsets");
    uint32_t fid = 0, t0 = 0;
    kctx_image_builder_param(b, "t0", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_param(b, "t1", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_child(b, "noop", "t_noop", &fid);
    kctx_image_builder_child_param(b, "a", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "b", KCTX_PARAM_TENSOR);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, mod.bytes, mod.size);
    kctx_image_builder_task(b, fid, 1, &t0);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, OFF_T0_FIRST);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 1, 0);
    kctx_image_builder_task(b, fid, 1, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, OFF_T0_SECOND);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 1, OFF_T1);
    kctx_image_builder_dep(b, t0);
    return finish(b, "offsets");
}

/* `n` scalar parameters, all bound to one task of the child "noop" with
 * `n` SCALAR child parameters: its args take n * 16 bytes of the
 * kernel-args block. */
static kt_image scalars_image(uint32_t n) {
    kt_image mod = kt_test_kernels_module();
    if (!mod.bytes) return (kt_image){NULL, 0};
    kctx_image_builder *b = kctx_image_builder_new("scalars");
    uint32_t fid = 0;
    char name[16];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "s%u", i);
        kctx_image_builder_param(b, name, KCTX_PARAM_SCALAR);
    }
    kctx_image_builder_child(b, "noop", "t_noop", &fid);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "c%u", i);
        kctx_image_builder_child_param(b, name, KCTX_PARAM_SCALAR);
    }
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, mod.bytes, mod.size);
    kctx_image_builder_task(b, fid, 1, NULL);
    for (uint32_t i = 0; i < n; i++) kctx_image_builder_bind(b, KCTX_BIND_SCALAR, i, 0);
    return finish(b, "scalars");
}

/* ---- K18: binding offsets and the args capacity --------------------------------------- */

/* Kills: deleting `if (tensor && args[i].size < u->min_size[i]) return ...`
 * in check_args (src/core/launch.c), or the min_size computation in
 * prepare_locked (src/core/prepare.c); also an off-by-one (<=) or a
 * min_size taken from the last binding instead of the largest. */
KT_TEST(a_tensor_one_byte_short_of_its_largest_binding_offset_is_refused) { /* K18 */
    kt_image img = offsets_image();
    REQUIRE(img.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_OK(kctx_prepare(c, 1, img.bytes, img.size));
    free((void *)img.bytes);
    sim_devptr buf = 0;
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_malloc(&buf, 4096)); /* every range below lies inside it */
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    kctx_arg args[2];

    /* t0 one byte short: a task binding reads byte OFF_T0_FIRST */
    args[0] = KCTX_TENSOR(buf, OFF_T0_FIRST);
    args[1] = KCTX_TENSOR(buf + 2048, OFF_T1 + 1);
    CHECK_REFUSED(c, kctx_launch(c, 1, args, 2, caller), KCTX_INVALID_ARGUMENT);
    CHECK(strstr(kctx_last_error(c), "argument 0") != NULL);
    CHECK(strstr(kctx_last_error(c), "offset") != NULL);
    /* t0 large enough for the last task's binding only */
    args[0] = KCTX_TENSOR(buf, OFF_T0_SECOND + 1);
    CHECK_REFUSED(c, kctx_launch(c, 1, args, 2, caller), KCTX_INVALID_ARGUMENT);
    /* t1 one byte short (its largest offset is in the second task) */
    args[0] = KCTX_TENSOR(buf, OFF_T0_FIRST + 1);
    args[1] = KCTX_TENSOR(buf + 2048, OFF_T1);
    CHECK_REFUSED(c, kctx_launch(c, 1, args, 2, caller), KCTX_INVALID_ARGUMENT);
    CHECK(strstr(kctx_last_error(c), "argument 1") != NULL);
    CHECK_SIM_OK(sim_stream_synchronize(caller)); /* a mutant may have launched */

    /* exactly large enough: accepted, and it runs */
    args[1] = KCTX_TENSOR(buf + 2048, OFF_T1 + 1);
    CHECK_OK(kctx_launch(c, 1, args, 2, caller));
    CHECK_SIM_OK(sim_stream_synchronize(caller));
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(c, &rep));
    CHECK_K(rep.device_status, KCTX_OK);

    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(caller));
    CHECK_SIM_OK(sim_free(buf));
}

/* Calls of mem_range_check the calling thread made since `*since`. */
static uint64_t range_checks(uint64_t *since) {
    uint64_t now = kctx_thread_platform_calls(KCTX_POP_MEM_RANGE_CHECK), n = now - *since;
    *since = now;
    return n;
}

/* Kills: deleting `if (tensor && args[i].value == 0) return ...` in
 * check_args (src/core/launch.c). K18: a NULL tensor is a bad argument on
 * every platform, not only where a range lookup happens to miss it: the
 * refusal names the NULL address and comes before any range lookup (the
 * sim's range check would refuse it too, with another reason, after a
 * call). Nothing is enqueued, the phase is unchanged; under both
 * strategies, and the context launches afterwards. */
KT_TEST(a_null_tensor_is_refused_before_any_range_lookup_under_both_strategies) { /* K18 */
    kt_image img = offsets_image();
    REQUIRE(img.bytes);
    sim_devptr buf = 0;
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_malloc(&buf, 4096));
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    for (int k = 0; k < 2; k++) {
        kctx_context c = kt_strategy_ctx(kt_strategies[k], img, 1);
        REQUIRE(c);
        kctx_arg args[2] = {KCTX_TENSOR(buf, OFF_T0_FIRST + 1), KCTX_TENSOR(0, OFF_T1 + 1)};
        for (int which = 0; which < 2; which++) {
            args[0] = KCTX_TENSOR(which == 0 ? 0 : buf, OFF_T0_FIRST + 1);
            args[1] = KCTX_TENSOR(which == 1 ? 0 : buf + 2048, OFF_T1 + 1);
            uint64_t since = kctx_thread_platform_calls(KCTX_POP_MEM_RANGE_CHECK);
            uint64_t launches = kctx_thread_platform_calls(KCTX_POP_LAUNCH);
            CHECK_REFUSED(c, kctx_launch(c, 1, args, 2, caller), KCTX_INVALID_ARGUMENT);
            CHECK(strstr(kctx_last_error(c), which ? "argument 1" : "argument 0") != NULL);
            CHECK(strstr(kctx_last_error(c), "NULL") != NULL);
            CHECK_EQ(range_checks(&since), 0);
            CHECK_EQ(kctx_thread_platform_calls(KCTX_POP_LAUNCH), launches);
            CHECK_PHASE(c, KCTX_PHASE_READY);
        }
        CHECK_SIM_OK(sim_stream_synchronize(caller));
        args[0] = KCTX_TENSOR(buf, OFF_T0_FIRST + 1);
        args[1] = KCTX_TENSOR(buf + 2048, OFF_T1 + 1);
        CHECK_OK(kctx_launch(c, 1, args, 2, caller)); /* the context still launches */
        CHECK_SIM_OK(sim_stream_synchronize(caller));
        kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
        CHECK_OK(kctx_check(c, &rep));
        CHECK_K(rep.device_status, KCTX_OK);
        kt_finish(c);
    }
    free((void *)img.bytes);
    CHECK_SIM_OK(sim_stream_destroy(caller));
    CHECK_SIM_OK(sim_free(buf));
}

/* Kills: deleting the range check (check_platform_args in
 * src/core/launch.c), trusting a cached range after the device's free
 * counter moved (`frees != c->ranges_seen`), a cache hit for a range that
 * only starts inside a cached one (`ptr + size <= hi`), or the sim not
 * advancing its counter in sim_free. K18: every tensor range lies inside
 * one live allocation of the device; a range checked once is trusted only
 * until an allocation of the device ends. */
KT_TEST(a_tensor_range_outside_a_live_allocation_is_refused_also_once_checked_and_freed) {
    /* K18 */
    kt_image img = offsets_image();
    REQUIRE(img.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_OK(kctx_prepare(c, 1, img.bytes, img.size));
    free((void *)img.bytes);
    sim_devptr buf = 0, other = 0, spare = 0;
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_malloc(&buf, 4096));
    REQUIRE_SIM_OK(sim_malloc(&other, 4096));
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    kctx_arg args[2] = {KCTX_TENSOR(buf, 2048), KCTX_TENSOR(other, 1024)};
    uint64_t since = kctx_thread_platform_calls(KCTX_POP_MEM_RANGE_CHECK);

    /* first launch: both ranges checked; again: both trusted, no call */
    CHECK_OK(kctx_launch(c, 1, args, 2, caller));
    CHECK_EQ(range_checks(&since), 2);
    CHECK_OK(kctx_launch(c, 1, args, 2, caller));
    CHECK_EQ(range_checks(&since), 0);
    /* a range inside a checked one is trusted; one that runs past the
     * allocation's end is checked and refused */
    args[0] = KCTX_TENSOR(buf + 16, 2000);
    CHECK_OK(kctx_launch(c, 1, args, 2, caller));
    CHECK_EQ(range_checks(&since), 0);
    args[0] = KCTX_TENSOR(buf + 1024, 4096); /* starts inside a trusted range */
    CHECK_REFUSED(c, kctx_launch(c, 1, args, 2, caller), KCTX_INVALID_ARGUMENT);
    CHECK(strstr(kctx_last_error(c), "not inside one live allocation") != NULL);
    CHECK_EQ(range_checks(&since), 1);
    CHECK_SIM_OK(sim_stream_synchronize(caller));

    /* `other` is freed: its range, accepted twice, is refused now (an
     * allocation of the device ended: every cached range is checked again) */
    args[0] = KCTX_TENSOR(buf, 2048);
    CHECK_SIM_OK(sim_free(other));
    CHECK_REFUSED(c, kctx_launch(c, 1, args, 2, caller), KCTX_INVALID_ARGUMENT);
    CHECK(strstr(kctx_last_error(c), "argument 1") != NULL);
    CHECK_EQ(range_checks(&since), 2); /* `buf` checked again too */
    /* a new allocation: its range is checked, `buf`'s is trusted again */
    REQUIRE_SIM_OK(sim_malloc(&spare, 4096));
    args[1] = KCTX_TENSOR(spare, 1024);
    CHECK_OK(kctx_launch(c, 1, args, 2, caller));
    CHECK_EQ(range_checks(&since), 1);
    CHECK_SIM_OK(sim_stream_synchronize(caller));
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(c, &rep));
    CHECK_K(rep.device_status, KCTX_OK);

    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(caller));
    CHECK_SIM_OK(sim_free(buf));
    CHECK_SIM_OK(sim_free(spare));
}

/* Kills: deleting the args-capacity check in check_args
 * (`if (bytes > c->args_capacity || ...) return ...`); also >= for >.
 * K11 makes the refusal CAPACITY ("a request that would need more capacity
 * is refused with CAPACITY"); the device's parameter limit cannot be
 * reached on the sim (64 parameters at most per image, 1 KiB of args
 * against a 4 KiB parameter block). */
KT_TEST(args_beyond_the_args_capacity_are_refused_before_anything_is_enqueued) { /* K18, K11 */
    kt_image fits = scalars_image(4), over = scalars_image(5); /* 64 and 80 bytes of args */
    REQUIRE(fits.bytes && over.bytes);
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    cfg.args_capacity = 64; /* the smallest allowed */
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    CHECK_OK(kctx_prepare(c, 4, fits.bytes, fits.size));
    CHECK_OK(kctx_prepare(c, 5, over.bytes, over.size));
    free((void *)fits.bytes);
    free((void *)over.bytes);
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    kctx_arg args[5];
    for (int i = 0; i < 5; i++) args[i] = KCTX_SCALAR(i + 1);

    CHECK_REFUSED(c, kctx_launch(c, 5, args, 5, caller), KCTX_CAPACITY);
    CHECK(strstr(kctx_last_error(c), "capacity") != NULL);
    /* captured: refused before anything lands in the graph or takes a token */
    sim_graph g = 0;
    size_t nodes = 99;
    CHECK_SIM_OK(sim_stream_begin_capture(caller, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_REFUSED(c, kctx_launch(c, 5, args, 5, caller), KCTX_CAPACITY);
    CHECK_EQ(kt_resources(c).tokens_in_use, 0);
    CHECK_SIM_OK(sim_stream_end_capture(caller, &g));
    CHECK_SIM_OK(sim_graph_node_count(g, &nodes));
    CHECK_EQ(nodes, 0);
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_stream_synchronize(caller)); /* a mutant may have launched */
    CHECK_SIM_OK(sim_device_synchronize());       /* whichever context stream the work is on */

    /* exactly at capacity: accepted */
    CHECK_OK(kctx_launch(c, 4, args, 4, caller));
    CHECK_SIM_OK(sim_stream_synchronize(caller));
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(c, &rep));

    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(caller));
}

/* ---- K5: check and launch on another current device ------------------------------------- */

/* Kills: deleting `st = kctx__check_device(c);` in kctx_check, and deleting
 * `if (!st) st = kctx__check_device(c);` in kctx_launch (src/core/launch.c).
 * The caller stream is on the context's device, so nothing later in the
 * preflight refuses the launch. */
KT_TEST(check_and_launch_on_another_current_device_are_refused_and_change_nothing) { /* K5 */
    /* kt.h has no skip: this test needs two devices and fails without them
     * rather than pass without proving anything (KCTX_SIM_DEVICES >= 2). */
    REQUIRE_DEVICES(2);
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream caller = 0; /* on device 0, the context's */
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    kt_snap dev1 = kt_snap_take(1);

    kt_set_device(1); /* the framework switched this thread to device 1 */
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    rep.refused_replays = 77;
    CHECK_REFUSED(c, kctx_check(c, &rep), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(c), "K5") != NULL);
    CHECK_EQ(rep.refused_replays, 77); /* the report is not written on a refusal */
    CHECK_REFUSED(c, kctx_launch(c, 1, NULL, 0, caller), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(c), "K5") != NULL);
    CHECK_DEVICE_AT(1, dev1);
    kt_set_device(0);

    CHECK_SIM_OK(sim_stream_synchronize(caller)); /* a mutant may have launched */
    CHECK_OK(kctx_check(c, &rep));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, caller));
    CHECK_SIM_OK(sim_stream_synchronize(caller));
    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(caller));
}

/* ---- K27: destroy of an unclosed program context ------------------------------------------ */

static kctx_context program_ctx(void) {
    kctx_context p = kt_create();
    if (!p) return 0;
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    /* program mode owns its device: these lifecycle calls are kctx's to make */
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_SET_DEVICE, 1);
    if (!CHECK_OK(kctx_program_init(p, &pcfg))) return 0;
    return p;
}

/* Kills: deleting the phase check of kctx_destroy (src/core/context.c).
 * For a kernel context the claim check behind it still refuses, so the
 * mutation survives every kernel-context test; a program context holds no
 * claim and only the phase check refuses its destroy. READY, POISONED and
 * CLOSING, destroy before close (refused) and close before destroy. */
KT_TEST(destroy_of_an_unclosed_program_context_is_busy_and_touches_nothing) { /* K27 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);

    /* READY: destroy first (refused), then close, then destroy */
    kctx_context p = program_ctx();
    REQUIRE(p);
    CHECK_OK(kctx_prepare(p, 1, noop.bytes, noop.size));
    CHECK_REFUSED(p, kctx_destroy(p), KCTX_BUSY);
    CHECK(strstr(kctx_last_error(p), "READY") != NULL);
    CHECK_OK(kctx_run(p, 1, NULL, 0)); /* and it still works */
    CHECK_OK(kctx_close(p));
    CHECK_OK(kctx_destroy(p));

    /* POISONED (an upload whose wait failed, K17) */
    p = program_ctx();
    REQUIRE(p);
    kt_fault(SIM_OP_STREAM_SYNCHRONIZE, 1, 0);
    CHECK_K(kctx_prepare(p, 2, append.bytes, append.size), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_SIM_OK(sim_device_synchronize()); /* whichever context stream the work is on */
    CHECK_PHASE(p, KCTX_PHASE_POISONED);
    CHECK_REFUSED(p, kctx_destroy(p), KCTX_BUSY);
    CHECK(strstr(kctx_last_error(p), "POISONED") != NULL);
    CHECK_OK(kctx_close(p));
    CHECK_OK(kctx_destroy(p));

    /* CLOSING (a release failed) */
    p = program_ctx();
    REQUIRE(p);
    kt_fault(SIM_OP_EVENT_DESTROY, 1, 0);
    CHECK_K(kctx_close(p), KCTX_PLATFORM_ERROR);
    CHECK_PHASE(p, KCTX_PHASE_CLOSING);
    CHECK_REFUSED(p, kctx_destroy(p), KCTX_BUSY);
    CHECK(strstr(kctx_last_error(p), "CLOSING") != NULL);
    CHECK_OK(kctx_close(p));
    CHECK_OK(kctx_destroy(p));

    /* close first: destroy accepted at once */
    p = program_ctx();
    REQUIRE(p);
    CHECK_OK(kctx_close(p));
    CHECK_PHASE(p, KCTX_PHASE_CLOSED);
    CHECK_OK(kctx_destroy(p));
    kctx_phase ph;
    CHECK_K(kctx_get_phase(p, &ph), KCTX_INVALID_HANDLE);
}

/* ---- K28: no platform call on any destruction path ----------------------------------------- */

static uint64_t kctx_calls(kctx_context c) {
    uint64_t n = 0;
    CHECK_OK(kctx_platform_calls(c, &n));
    return n;
}

/* Two rulers, two sides of the seam: kctx's counters (the context's, and
 * the thread's over every op of both tables) count what went through the
 * seam's wrapper; the sim's counter of this thread over every entry
 * (SIM_OP_ANY, the current-device and epoch queries included) counts what
 * reached the platform, however it got there (a raw c->ops->op call in
 * kctx_destroy bypasses the wrapper and moves only the sim's). */

/* A destroy that must be refused: both rulers stay put, nothing changes. */
static void refused_destroy_calls_nothing(kctx_context c, const char *what) {
    kt_state before = kt_state_take(c);
    uint64_t k = kctx_calls(c), s = kt_calls(SIM_OP_ANY),
             t = kctx_thread_platform_calls(KCTX_POP_ANY);
    if (!CHECK_K(kctx_destroy(c), KCTX_BUSY)) fprintf(stderr, "    (%s)\n", what);
    if (!CHECK_EQ(kt_calls(SIM_OP_ANY), s)) fprintf(stderr, "    (%s)\n", what);
    if (!CHECK_EQ(kctx_thread_platform_calls(KCTX_POP_ANY), t)) fprintf(stderr, "    (%s)\n", what);
    if (!CHECK_EQ(kctx_calls(c), k)) fprintf(stderr, "    (%s)\n", what);
    CHECK_UNCHANGED(c, before);
}

/* A destroy that must succeed (or be refused for its handle): the handle
 * is gone afterwards, so the calling thread's counters are the rulers: the
 * seam's over every op of both tables and the sim's over every entry. */
static void destroy_calls_nothing(kctx_context c, kctx_status want, const char *what) {
    uint64_t s = kt_calls(SIM_OP_ANY), k = kctx_thread_platform_calls(KCTX_POP_ANY);
    if (!CHECK_K(kctx_destroy(c), want)) fprintf(stderr, "    (%s)\n", what);
    if (!CHECK_EQ(kt_calls(SIM_OP_ANY), s)) fprintf(stderr, "    (%s)\n", what);
    if (!CHECK_EQ(kctx_thread_platform_calls(KCTX_POP_ANY), k)) fprintf(stderr, "    (%s)\n", what);
}

/* The sim's ruler is only as good as its coverage: every entry the sim
 * adapter (platform/sim/adapter.c) calls must be counted by the sim. Each
 * adapter op calls exactly one sim entry, so over every kctx call of a
 * kernel lifecycle (init with its epoch and free-counter queries, prepare,
 * eager and captured launches with range checks, check, a quarantine, the
 * owner's reset and the abandoning close, destroy) and of a program
 * lifecycle (init, set device, run, close), the sim's count of this
 * thread's calls must move exactly as much as the seam's. Kills: an
 * adapter op that calls a sim entry the sim does not count (as
 * sim_get_device and sim_device_epoch once were), which would let a raw
 * call of it in kctx_destroy pass the test above. */
static uint64_t g_seam_moved, g_sim_moved;
#define BOTH_RULERS(call)                                                      \
    do {                                                                       \
        uint64_t seam_ = kctx_thread_platform_calls(KCTX_POP_ANY);             \
        uint64_t sim_ = kt_calls(SIM_OP_ANY);                                  \
        call;                                                                  \
        uint64_t dseam_ = kctx_thread_platform_calls(KCTX_POP_ANY) - seam_;    \
        uint64_t dsim_ = kt_calls(SIM_OP_ANY) - sim_;                          \
        g_seam_moved += dseam_;                                                \
        g_sim_moved += dsim_;                                                  \
        if (!CHECK_EQ(dsim_, dseam_)) fprintf(stderr, "    (in %s)\n", #call); \
    } while (0)

KT_TEST(the_sim_counts_every_call_of_its_adapter) { /* K28 */
    kt_image append = kt_image_append();
    REQUIRE(append.bytes);
    sim_devptr log = 0;
    sim_stream s = 0, cap = 0;
    static const uint8_t zeros[256]; /* the append log starts empty */
    REQUIRE_SIM_OK(sim_malloc(&log, sizeof zeros));
    REQUIRE_SIM_OK(
        sim_memcpy((void *)(uintptr_t)log, zeros, sizeof zeros, SIM_COPY_HOST_TO_DEVICE));
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_stream_create(&cap));
    kctx_arg arg = KCTX_TENSOR(log, 256);
    kctx_context c = 0;
    kctx_kernel_config cfg = kt_config(0);
    BOTH_RULERS(CHECK_OK(kctx_context_create("sim", &c)));
    BOTH_RULERS(CHECK_OK(kctx_kernel_init(c, &cfg)));
    BOTH_RULERS(CHECK_OK(kctx_prepare(c, 1, append.bytes, append.size)));
    BOTH_RULERS(CHECK_OK(kctx_prepare(c, 2, append.bytes, append.size))); /* deduplicated */
    BOTH_RULERS(CHECK_OK(kctx_launch(c, 1, &arg, 1, s)));
    BOTH_RULERS(CHECK_OK(kctx_launch(c, 2, &arg, 1, s)));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    sim_graph g = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(cap, SIM_CAPTURE_MODE_THREAD_LOCAL));
    BOTH_RULERS(CHECK_OK(kctx_launch(c, 1, &arg, 1, cap)));
    BOTH_RULERS(CHECK_OK(kctx_launch(c, 1, &arg, 1, cap)));
    CHECK_SIM_OK(sim_stream_end_capture(cap, &g));
    CHECK_SIM_OK(sim_graph_destroy(g));
    BOTH_RULERS(CHECK_OK(kctx_launch(c, 1, &arg, 1, s)));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    BOTH_RULERS(CHECK_OK(kctx_check(c, &rep)));
    /* quarantine, the owner's reset, the abandoning close (K29, K36) */
    CHECK_SIM_OK(sim_device_make_fatal(0));
    BOTH_RULERS(CHECK_K(kctx_launch(c, 1, &arg, 1, s), KCTX_DEVICE_LOST));
    BOTH_RULERS(CHECK_K(kctx_close(c), KCTX_DEVICE_LOST));
    kt_owner_reset(); /* frees the log and the streams too */
    BOTH_RULERS(CHECK_OK(kctx_close(c)));
    BOTH_RULERS(CHECK_OK(kctx_destroy(c)));
    /* program mode: the lifecycle table */
    kctx_context p = 0;
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_SET_DEVICE, 1);
    BOTH_RULERS(CHECK_OK(kctx_context_create("sim", &p)));
    BOTH_RULERS(CHECK_OK(kctx_program_init(p, &pcfg)));
    BOTH_RULERS(CHECK_OK(kctx_prepare(p, 1, append.bytes, append.size)));
    sim_devptr plog = 0;
    CHECK_SIM_OK(sim_malloc(&plog, sizeof zeros));
    CHECK_SIM_OK(sim_memcpy((void *)(uintptr_t)plog, zeros, sizeof zeros, SIM_COPY_HOST_TO_DEVICE));
    kctx_arg parg = KCTX_TENSOR(plog, 256);
    BOTH_RULERS(CHECK_OK(kctx_run(p, 1, &parg, 1)));
    BOTH_RULERS(CHECK_OK(kctx_close(p)));
    BOTH_RULERS(CHECK_OK(kctx_destroy(p)));
    CHECK_SIM_OK(sim_free(plog));
    /* the rulers moved: the comparison compared something */
    CHECK(g_seam_moved > 50);
    CHECK_EQ(g_sim_moved, g_seam_moved);
}
#undef BOTH_RULERS

/* Kills: any platform call added to kctx_destroy (src/core/context.c) —
 * e.g. a kctx__check_device(c) or kp_relaxed_begin/end pair before its
 * phase check, or a raw c->ops->current_device(&d) that bypasses the seam —
 * on each path: NEW (mode-less and after a rollback), CLOSED (after a
 * close, after an abandoning close), the refused READY, POISONED,
 * QUARANTINED and CLOSING, and a dead or never-issued handle. */
KT_TEST(no_destruction_path_calls_the_platform) { /* K28 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    /* the counters count: a prepare makes calls on both rulers */
    {
        kctx_context c = kt_kernel_ctx();
        REQUIRE(c);
        uint64_t k = kctx_calls(c), s = kt_calls(SIM_OP_ANY);
        uint64_t t = kctx_thread_platform_calls(KCTX_POP_ANY);
        uint64_t reads = kctx_thread_platform_calls(KCTX_POP_CURRENT_DEVICE);
        uint64_t sim_reads = kt_calls(SIM_OP_GET_DEVICE);
        CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
        CHECK(kctx_calls(c) > k);
        CHECK(kt_calls(SIM_OP_ANY) > s);
        /* both count the current-device read, which changes nothing */
        CHECK(kctx_thread_platform_calls(KCTX_POP_CURRENT_DEVICE) > reads);
        CHECK_EQ(kt_calls(SIM_OP_GET_DEVICE) - sim_reads,
                 kctx_thread_platform_calls(KCTX_POP_CURRENT_DEVICE) - reads);
        CHECK_EQ(kctx_thread_platform_calls(KCTX_POP_ANY) - t, kctx_calls(c) - k);
        CHECK_EQ(kt_calls(SIM_OP_ANY) - s, kctx_calls(c) - k);
        /* READY (kernel) */
        refused_destroy_calls_nothing(c, "READY kernel context");
        /* CLOSED by close */
        CHECK_OK(kctx_close(c));
        destroy_calls_nothing(c, KCTX_OK, "CLOSED kernel context");
    }
    { /* NEW, mode-less */
        kctx_context c = kt_create();
        REQUIRE(c);
        destroy_calls_nothing(c, KCTX_OK, "NEW mode-less context");
    }
    { /* NEW, kernel-latched after a completed rollback */
        kctx_context c = kt_create();
        REQUIRE(c);
        kctx_kernel_config cfg = kt_config(0);
        kt_fault(SIM_OP_MALLOC, 1, 0);
        CHECK_K(kctx_kernel_init(c, &cfg), KCTX_PLATFORM_ERROR);
        sim_fault_clear_all();
        CHECK_PHASE(c, KCTX_PHASE_NEW);
        CHECK_MODE(c, KCTX_MODE_KERNEL);
        destroy_calls_nothing(c, KCTX_OK, "NEW context after a rollback");
    }
    { /* POISONED */
        kctx_context c = kt_kernel_ctx();
        REQUIRE(c);
        kt_fault(SIM_OP_STREAM_SYNCHRONIZE, 1, 0);
        CHECK_K(kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_PLATFORM_ERROR);
        sim_fault_clear_all();
        CHECK_SIM_OK(sim_device_synchronize()); /* whichever context stream the work is on */
        CHECK_PHASE(c, KCTX_PHASE_POISONED);
        refused_destroy_calls_nothing(c, "POISONED kernel context");
        kt_finish(c);
    }
    { /* CLOSING */
        kctx_context c = kt_kernel_ctx();
        REQUIRE(c);
        kt_fault(SIM_OP_STREAM_DESTROY, 1, 0);
        CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
        sim_fault_clear_all();
        CHECK_PHASE(c, KCTX_PHASE_CLOSING);
        refused_destroy_calls_nothing(c, "CLOSING kernel context");
        kt_finish(c);
    }
    { /* QUARANTINED, then CLOSED by an abandoning close after the owner's reset (K36) */
        kctx_context c = kt_kernel_ctx();
        REQUIRE(c);
        CHECK_SIM_OK(sim_device_make_fatal(0));
        CHECK_K(kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_DEVICE_LOST);
        CHECK_PHASE(c, KCTX_PHASE_QUARANTINED);
        refused_destroy_calls_nothing(c, "QUARANTINED kernel context");
        kt_owner_reset();
        CHECK_OK(kctx_close(c));
        CHECK_PHASE(c, KCTX_PHASE_CLOSED);
        destroy_calls_nothing(c, KCTX_OK, "CLOSED by abandoning");
        /* and its handle, now dead */
        destroy_calls_nothing(c, KCTX_INVALID_HANDLE, "a destroyed handle");
    }
    destroy_calls_nothing(0, KCTX_INVALID_HANDLE, "handle 0");
    destroy_calls_nothing(~(kctx_context)0, KCTX_INVALID_HANDLE, "a handle never issued");
    { /* program mode: READY (refused), then CLOSED */
        kctx_context p = program_ctx();
        REQUIRE(p);
        refused_destroy_calls_nothing(p, "READY program context");
        CHECK_OK(kctx_close(p));
        destroy_calls_nothing(p, KCTX_OK, "CLOSED program context");
    }
}

/* ---- K25: the pool of graph lifetime tokens ------------------------------------------------- */

static sim_graph capture_launch(kctx_context c, sim_stream s, kctx_status want) {
    sim_graph g = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_K(kctx_launch(c, 1, NULL, 0, s), want);
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    return g;
}

static size_t node_count(sim_graph g) {
    size_t n = 0;
    CHECK_SIM_OK(sim_graph_node_count(g, &n));
    return n;
}

/* Kills: deleting the exhausted-pool check of a captured launch
 * (`if (atomic_load(&c->tokens_in_use) >= c->token_capacity) st = ...` in
 * kctx_launch), or > for >=. */
KT_TEST(an_exhausted_token_pool_refuses_a_captured_launch_until_a_graph_is_gone) { /* K25 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    cfg.token_capacity = 2;
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));

    sim_graph g1 = capture_launch(c, s, KCTX_OK);
    sim_graph g2 = capture_launch(c, s, KCTX_OK);
    CHECK(node_count(g1) > 0);
    CHECK(node_count(g2) > 0);
    CHECK_EQ(kt_resources(c).tokens_in_use, 2);
    CHECK_EQ(kt_resources(c).token_capacity, 2);

    /* the third: CAPACITY before anything is enqueued */
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    kt_state before = kt_state_take(c);
    CHECK_K(kctx_launch(c, 1, NULL, 0, s), KCTX_CAPACITY);
    CHECK(strstr(kctx_last_error(c), "token") != NULL);
    CHECK_UNCHANGED(c, before);
    CHECK_EQ(kt_resources(c).tokens_in_use, 2);
    sim_graph g3 = 0;
    CHECK_SIM_OK(sim_stream_end_capture(s, &g3));
    CHECK_EQ(node_count(g3), 0);
    CHECK_SIM_OK(sim_graph_destroy(g3));
    CHECK_EQ(kt_resources(c).tokens_in_use, 2);

    /* a graph gone gives its token back: a captured launch works again */
    CHECK_SIM_OK(sim_graph_destroy(g1));
    CHECK_EQ(kt_resources(c).tokens_in_use, 1);
    sim_graph g4 = capture_launch(c, s, KCTX_OK);
    CHECK(node_count(g4) > 0);
    CHECK_EQ(kt_resources(c).tokens_in_use, 2);
    /* and the pool is full again */
    sim_graph g5 = capture_launch(c, s, KCTX_CAPACITY);
    CHECK_EQ(node_count(g5), 0);
    CHECK_SIM_OK(sim_graph_destroy(g5));

    CHECK_SIM_OK(sim_graph_destroy(g2));
    CHECK_SIM_OK(sim_graph_destroy(g4));
    CHECK_EQ(kt_resources(c).tokens_in_use, 0);
    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(s));
}

/* ---- K37, K38: the pool of argument slots of updatable launches ----------------------------- */

static sim_graph capture_updatable(kctx_context c, sim_stream s, kctx_status want,
                                   kctx_args_handle *h) {
    sim_graph g = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_K(kctx_launch_updatable(c, 1, NULL, 0, s, h), want);
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    return g;
}

/* One slot per lifetime token: the pool runs out with the tokens
 * (CAPACITY, nothing enqueued), and a slot comes back with its graph's
 * lifetime hook; the handle of the gone graph stays refused. Kills: the
 * slot hook not returning the slot (kctx__slot_hook's store of `busy`),
 * and a stale handle accepted (handle_slot's serial test). Under
 * HOST_ORDERED: UNSUPPORTED, no slot made. */
KT_TEST(argument_slots_run_out_with_the_tokens_and_come_back_with_their_graphs) { /* K37, K38 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    cfg.token_capacity = 2;
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    kctx_args_handle h1 = 0, h2 = 0, h3 = 0, h4 = 0;
    if (kt_resources(c).arg_slot_count == 0) {
        /* not built for this strategy: refused, nothing made */
        CHECK_EQ(kt_resources(c).arg_slots, 0);
        sim_graph g = capture_updatable(c, s, KCTX_UNSUPPORTED, &h1);
        CHECK_SIM_OK(sim_graph_destroy(g));
        CHECK_K(kctx_update_args(c, 1, NULL, 0, s), KCTX_UNSUPPORTED);
        kt_finish(c);
        CHECK_SIM_OK(sim_stream_destroy(s));
        return;
    }
    CHECK_EQ(kt_resources(c).arg_slot_count, 2);
    sim_graph g1 = capture_updatable(c, s, KCTX_OK, &h1);
    sim_graph g2 = capture_updatable(c, s, KCTX_OK, &h2);
    CHECK(h1 != h2);
    CHECK_EQ(kt_resources(c).arg_slots_in_use, 2);
    CHECK_EQ(kt_resources(c).tokens_in_use, 2);

    /* the third: CAPACITY before anything is enqueued, no slot taken */
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    kt_state before = kt_state_take(c);
    CHECK_K(kctx_launch_updatable(c, 1, NULL, 0, s, &h3), KCTX_CAPACITY);
    CHECK_UNCHANGED(c, before);
    sim_graph g3 = 0;
    CHECK_SIM_OK(sim_stream_end_capture(s, &g3));
    CHECK_EQ(node_count(g3), 0);
    CHECK_SIM_OK(sim_graph_destroy(g3));
    CHECK_EQ(kt_resources(c).arg_slots_in_use, 2);

    /* updates of live handles are enqueued (eagerly here) */
    CHECK_OK(kctx_update_args(c, h1, NULL, 0, s));
    CHECK_OK(kctx_update_args(c, h2, NULL, 0, s));
    CHECK_SIM_OK(sim_stream_synchronize(s));

    /* a graph gone gives its slot back: an updatable launch works again,
     * and the gone graph's handle is refused */
    CHECK_SIM_OK(sim_graph_destroy(g1));
    CHECK_EQ(kt_resources(c).arg_slots_in_use, 1);
    CHECK_K(kctx_update_args(c, h1, NULL, 0, s), KCTX_INVALID_ARGUMENT);
    sim_graph g4 = capture_updatable(c, s, KCTX_OK, &h4);
    CHECK(node_count(g4) > 0);
    CHECK(h4 != h1);
    CHECK_K(kctx_update_args(c, h1, NULL, 0, s), KCTX_INVALID_ARGUMENT);
    CHECK_OK(kctx_update_args(c, h4, NULL, 0, s));
    CHECK_EQ(kt_resources(c).arg_slots_in_use, 2);
    /* and the pool is full again */
    sim_graph g5 = capture_updatable(c, s, KCTX_CAPACITY, &h3);
    CHECK_EQ(node_count(g5), 0);
    CHECK_SIM_OK(sim_graph_destroy(g5));

    CHECK_SIM_OK(sim_graph_destroy(g2));
    CHECK_SIM_OK(sim_graph_destroy(g4));
    CHECK_EQ(kt_resources(c).arg_slots_in_use, 0);
    CHECK_EQ(kt_resources(c).tokens_in_use, 0);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    /* a closed context refuses both calls by its phase (not UNSUPPORTED) */
    CHECK_OK(kctx_close(c));
    CHECK_K(kctx_update_args(c, h4, NULL, 0, s), KCTX_INVALID_STATE);
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_K(kctx_launch_updatable(c, 1, NULL, 0, s, &h3), KCTX_INVALID_STATE);
    sim_graph g6 = 0;
    CHECK_SIM_OK(sim_stream_end_capture(s, &g6));
    CHECK_SIM_OK(sim_graph_destroy(g6));
    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(s));
}

/* ---- K35: a failed prepare wait poisons the device side too --------------------------------- */

/* Kills: deleting `kctx__device_poison(c);` in do_upload
 * (src/core/prepare.c). A graph captured before the failed prepare must
 * refuse to run afterwards: the host-side poison cannot stop a replay, only
 * the device error word can. Both ways a prepare wait fails: an injected
 * failure of the wait, and a real timeout (the upload held on the device). */
KT_TEST(a_graph_captured_before_a_failed_prepare_wait_refuses_to_replay) { /* K35, K17 */
    kt_image append = kt_image_append(), noop = kt_image_noop();
    REQUIRE(append.bytes && noop.bytes);
    for (int how = 0; how < 2; how++) {
        const char *way = how ? "timed-out wait" : "failed wait";
        kctx_context c = kt_create();
        REQUIRE(c);
        kctx_kernel_config cfg = kt_config(how ? 300 : 0);
        REQUIRE_OK(kctx_kernel_init(c, &cfg));
        REQUIRE_OK(kctx_prepare(c, 1, append.bytes, append.size));
        sim_devptr log = 0;
        sim_stream s = 0;
        REQUIRE_SIM_OK(sim_malloc(&log, 4096));
        REQUIRE_SIM_OK(sim_stream_create(&s));
        static const uint8_t zero[4096];
        CHECK_SIM_OK(
            sim_memcpy((void *)(uintptr_t)log, zero, sizeof zero, SIM_COPY_HOST_TO_DEVICE));
        kctx_arg arg = KCTX_TENSOR(log, 4096);
        sim_graph g = 0;
        sim_graph_exec x = 0;
        CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_OK(kctx_launch(c, 1, &arg, 1, s));
        CHECK_SIM_OK(sim_stream_end_capture(s, &g));
        CHECK_SIM_OK(sim_graph_instantiate(&x, g));
        /* the graph works */
        CHECK_SIM_OK(sim_graph_launch(x, s));
        CHECK_SIM_OK(sim_stream_synchronize(s));
        uint32_t runs = 0;
        CHECK_SIM_OK(sim_atomic_read_u32(log, &runs));
        CHECK_EQ(runs, 1);

        /* a prepare whose upload started but whose wait failed (K17) */
        if (how == 0) {
            kt_fault(SIM_OP_STREAM_SYNCHRONIZE, 1, 0);
            CHECK_K(kctx_prepare(c, 2, noop.bytes, noop.size), KCTX_PLATFORM_ERROR);
            sim_fault_clear_all();
        } else {
            sim_hold h = SIM_HOLD_INIT;
            h.kind = SIM_EXEC_COPY; /* the callable table's upload */
            h.device = 0;
            int hold = -1;
            REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
            CHECK_K(kctx_prepare(c, 2, noop.bytes, noop.size), KCTX_TIMEOUT);
            CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000));
            CHECK_SIM_OK(sim_hold_release(hold));
        }
        CHECK_SIM_OK(sim_device_synchronize()); /* whichever context stream the work is on */
        if (!CHECK_PHASE(c, KCTX_PHASE_POISONED)) fprintf(stderr, "    (%s)\n", way);

        /* the graph captured before it refuses to run: outputs untouched */
        CHECK_SIM_OK(sim_graph_launch(x, s));
        CHECK_SIM_OK(sim_stream_synchronize(s));
        runs = 0;
        CHECK_SIM_OK(sim_atomic_read_u32(log, &runs));
        if (!CHECK_EQ(runs, 1)) fprintf(stderr, "    (%s: the replay ran)\n", way);
        kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
        CHECK_K(kctx_check(c, &rep), KCTX_POISONED);
        CHECK_K(rep.device_status, KCTX_POISONED);
        if (!CHECK_EQ(rep.refused_replays, 1)) fprintf(stderr, "    (%s)\n", way);

        CHECK_SIM_OK(sim_graph_exec_destroy(x));
        CHECK_SIM_OK(sim_graph_destroy(g));
        kt_finish(c);
        CHECK_SIM_OK(sim_stream_destroy(s));
        CHECK_SIM_OK(sim_free(log));
        if (ktc_test_failures()) break;
    }
}

/* ---- K33: the claim is checked and inserted in one step ---------------------------------------- */

/* The mutation: kctx__claim_take (src/core/context.c) checks for an owner
 * under g_ctx_lock, unlocks, and inserts its claim under a second lock, so
 * two kernel inits on one device can both pass the check and both win.
 *
 * No hold point makes this deterministic: between reading the current
 * device and the claim, kernel init makes only synchronous host queries
 * (device_info, device_epoch), and the sim's holds block device-side
 * executions, not host API calls; between the check and the insert there
 * is no platform call at all. So this is a stress test that widens the
 * window instead: noise threads keep g_ctx_lock contended (every kctx
 * entry takes it twice), so a mutant's second acquisition has to queue and
 * the unlock between check and insert lets other racers in. It can never
 * fail on correct code. Measured on a 2-core machine against that mutant
 * (an unlock/lock pair before the insert): caught in 50 of 50 runs, most
 * often within the first 30 rounds; without the noise threads in 18 of 20;
 * the 16-thread race of test_races.c in 2 of 10. */
#define CLAIM_RACERS 8
#define CLAIM_NOISE 4
#define CLAIM_ROUNDS 200

typedef struct claim_racer {
    kctx_context ctx;
    kctx_status st;
} claim_racer;

static void *claim_racer_main(void *p) {
    claim_racer *r = p;
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    r->st = kctx_kernel_init(r->ctx, &cfg);
    return NULL;
}

typedef struct claim_noise {
    kctx_context ctx;
    atomic_int *stop;
} claim_noise;

static void *claim_noise_main(void *p) {
    claim_noise *n = p;
    kctx_phase ph;
    while (!atomic_load(n->stop)) kctx_get_phase(n->ctx, &ph);
    return NULL;
}

/* The deterministic half: a split whose two steps have platform calls
 * between them (the claim checked before kernel init reads the device,
 * taken after). Kernel init A is stopped by a seam hold in its device_info
 * query (between reading the current device and claiming it); kernel init
 * B of another context on the same device runs to the end meanwhile and
 * wins; released, A must find B's claim: BUSY, nothing taken. Correct code
 * passes whatever the timing; the mutant (a claim check before the device
 * reads and an insert without a re-check after them) lets A win too, every
 * time. The in-function split (no platform call between check and insert)
 * is the stress test below. */
typedef struct held_init {
    kctx_context ctx;
    kctx_status st;
} held_init;

static void *held_init_main(void *p) {
    held_init *h = p;
    kt_set_device(0);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    h->st = kctx_kernel_init(h->ctx, &cfg);
    return NULL;
}

KT_TEST(a_kernel_init_held_before_its_claim_loses_to_the_one_that_claimed_meanwhile) {
    /* K33, K6 */
    held_init a = {kt_create(), KCTX_INVALID_HANDLE}, b = {kt_create(), KCTX_INVALID_HANDLE};
    REQUIRE(a.ctx && b.ctx);
    int hold = -1;
    REQUIRE_OK(kctx_seam_hold_arm(KCTX_POP_DEVICE_INFO, 1, &hold));
    pthread_t ta, tb;
    REQUIRE(pthread_create(&ta, NULL, held_init_main, &a) == 0);
    CHECK_OK(kctx_seam_hold_wait_reached(hold, 10000)); /* A read its device, not yet claimed */
    REQUIRE(pthread_create(&tb, NULL, held_init_main, &b) == 0);
    pthread_join(tb, NULL); /* B is not held: the hold stops one call only */
    CHECK_OK(b.st);
    CHECK_OK(kctx_seam_hold_release(hold));
    pthread_join(ta, NULL);
    CHECK_K(a.st, KCTX_BUSY);
    CHECK(strstr(kctx_last_error(a.ctx), "claimed") != NULL);
    CHECK_MODE(a.ctx, KCTX_MODE_NONE);
    CHECK_PHASE(a.ctx, KCTX_PHASE_NEW);
    CHECK_OK(kctx_destroy(a.ctx));
    kt_finish(b.ctx);
}

KT_TEST(racing_kernel_inits_under_lock_contention_have_exactly_one_winner) { /* K33, K6 */
    kctx_context quiet = kt_create(); /* the noise threads query it */
    REQUIRE(quiet);
    atomic_int stop = 0;
    claim_noise nz = {quiet, &stop};
    pthread_t noise[CLAIM_NOISE];
    int started = 0;
    for (int i = 0; i < CLAIM_NOISE; i++)
        if (pthread_create(&noise[i], NULL, claim_noise_main, &nz) == 0) started++;
    CHECK_EQ(started, CLAIM_NOISE);
    int doubles = 0;
    for (int round = 0; round < CLAIM_ROUNDS; round++) {
        claim_racer rs[CLAIM_RACERS];
        void *args[CLAIM_RACERS];
        for (int i = 0; i < CLAIM_RACERS; i++) {
            /* not kt_create(): more contexts than the harness tracks per test;
             * each is destroyed below */
            rs[i].ctx = 0;
            rs[i].st = KCTX_INVALID_HANDLE;
            CHECK_OK(kctx_context_create(NULL, &rs[i].ctx));
            args[i] = &rs[i];
        }
        kt_run_threads(CLAIM_RACERS, claim_racer_main, args);
        int ok = 0, busy = 0;
        for (int i = 0; i < CLAIM_RACERS; i++) {
            ok += rs[i].st == KCTX_OK;
            busy += rs[i].st == KCTX_BUSY;
        }
        if (ok > 1) doubles++;
        CHECK_EQ(ok, 1);
        CHECK_EQ(busy, CLAIM_RACERS - 1);
        for (int i = 0; i < CLAIM_RACERS; i++) {
            if (rs[i].st == KCTX_OK) {
                kt_finish(rs[i].ctx);
            } else {
                CHECK_MODE(rs[i].ctx, KCTX_MODE_NONE); /* the losers took nothing */
                CHECK_PHASE(rs[i].ctx, KCTX_PHASE_NEW);
                CHECK_OK(kctx_destroy(rs[i].ctx));
            }
        }
        if (ktc_test_failures()) {
            fprintf(stderr, "    round %d: %d winners\n", round, ok);
            break;
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < started; i++) pthread_join(noise[i], NULL);
    CHECK_EQ(doubles, 0);
    CHECK_OK(kctx_destroy(quiet));
}
