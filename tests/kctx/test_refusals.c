/*
 * test_refusals.c — refusals listed in kctx.h's "Errors:" lists that no
 * other test drove (issue 12, item 7). Each test drives one refusal and
 * checks that it changed nothing (K9: CHECK_UNCHANGED where a context
 * exists).
 *
 * Not driven here (not reachable on the sim without faking):
 *  - kctx_context_create CAPACITY needs KCTX_MAX_CONTEXTS live handles and
 *    OUT_OF_MEMORY a failing host allocation; UNSUPPORTED needs a built
 *    platform that is unavailable (the sim always is available).
 *  - kernel init CAPACITY (too many claimed devices) needs more devices than
 *    the claim table holds; the sim has KCTX_SIM_DEVICES (2 by default).
 *  - prepare CAPACITY needs 2^31 prepared callables.
 *  - program init UNSUPPORTED for a platform without program mode: the sim
 *    has program mode (no such platform is built here).
 *  - kernel init UNSUPPORTED for a device reporting 0 or more than 1024
 *    cores, and kernel/program init OUT_OF_MEMORY for the trace's host
 *    buffers: the sim's devices and host allocations do not fail so.
 *  - capturable UNSUPPORTED: the sim has capture.
 *  - launch PLATFORM_ERROR for an active capture reported without its
 *    graph: the sim always reports the graph.
 *  - prepare, launch and run OUT_OF_MEMORY from a host allocation: the same.
 * Left (reachable, not yet driven here): run CAPACITY needs an image whose
 * arguments exceed the kernel-args capacity; kt.h's images take at most
 * one argument (launch's CAPACITY is driven elsewhere).
 * Statuses that are a platform call's mapped status are driven by the
 * fault sweeps (test_fault_sweep.c, the conformance suite's src/conformance).
 */
#include "kt.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

KT_TEST(fault_hits_refuses_a_bad_id_or_a_null_output) { /* kctx.h: kctx_fault_hits */
    uint64_t hits = 7;
    CHECK_K(kctx_fault_hits(-1, &hits), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_fault_hits(KCTX_MAX_FAULTS, &hits), KCTX_INVALID_ARGUMENT);
    CHECK_K(kctx_fault_hits(0, NULL), KCTX_INVALID_ARGUMENT);
    CHECK_EQ(hits, 7); /* nothing written */
}

KT_TEST(runtime_error_refuses_a_null_msg_with_a_size) { /* queries: INVALID_ARGUMENT */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kt_state before = kt_state_take(c);
    kctx_status st = KCTX_OK;
    CHECK_K(kctx_runtime_error(c, &st, NULL, 4), KCTX_INVALID_ARGUMENT);
    CHECK_UNCHANGED(c, before);
    kt_finish(c);
}

KT_TEST(program_init_refuses_a_negative_device) { /* kctx_program_init: INVALID_ARGUMENT */
    kctx_context c = kt_create();
    REQUIRE(c);
    kt_state before = kt_state_take(c);
    kctx_program_config cfg = KCTX_PROGRAM_CONFIG_INIT;
    cfg.device = -1;
    CHECK_K(kctx_program_init(c, &cfg), KCTX_INVALID_ARGUMENT);
    CHECK_UNCHANGED(c, before);
    CHECK_MODE(c, KCTX_MODE_NONE);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(
    program_init_refuses_a_device_the_platform_lacks) { /* kctx_program_init: INVALID_ARGUMENT */
    kctx_context c = kt_create();
    REQUIRE(c);
    kt_state before = kt_state_take(c);
    kctx_program_config cfg = KCTX_PROGRAM_CONFIG_INIT;
    cfg.device = kt_device_count();
    CHECK_K(kctx_program_init(c, &cfg), KCTX_INVALID_ARGUMENT);
    CHECK_UNCHANGED(c, before);
    CHECK_MODE(c, KCTX_MODE_NONE);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(launch_check_run_and_flush_refuse_a_dead_handle) { /* section 0: INVALID_HANDLE */
    kctx_context c = kt_create();
    REQUIRE(c);
    CHECK_OK(kctx_destroy(c)); /* c is now a destroyed handle */
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    uint64_t before = kt_destructive_calls();
    CHECK_K(kctx_launch(c, 1, NULL, 0, 1), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_check(c, &rep), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_run(c, 1, NULL, 0), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_trace_flush(c), KCTX_INVALID_HANDLE);
    CHECK_K(kctx_get_context_caps(c, &caps), KCTX_INVALID_HANDLE);
    CHECK_EQ(kt_destructive_calls(), before);
    CHECK(caps.name == NULL); /* nothing written */
}

KT_TEST(launch_of_an_id_never_prepared_is_unknown_id) { /* K18: UNKNOWN_ID */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    kt_state before = kt_state_take(c);
    CHECK_K(kctx_launch(c, 2, NULL, 0, s), KCTX_UNKNOWN_ID);
    CHECK_UNCHANGED(c, before);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
}

/* A program context on device 1 with noop prepared under id 1. */
static kctx_context program_ctx(void) {
    kt_image noop = kt_image_noop();
    if (!CHECK(noop.bytes != NULL)) return 0;
    kctx_context p = kt_create();
    if (!p) return 0;
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    pcfg.device = 1;
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(1, SIM_LIFECYCLE_SET_DEVICE, 1);
    if (!CHECK_OK(kctx_program_init(p, &pcfg)) ||
        !CHECK_OK(kctx_prepare(p, 1, noop.bytes, noop.size))) {
        kctx_close(p);
        kctx_destroy(p);
        return 0;
    }
    return p;
}

KT_TEST(run_of_an_id_never_prepared_is_unknown_id) { /* kctx_run: UNKNOWN_ID */
    REQUIRE_DEVICES(2);
    kctx_context p = program_ctx();
    REQUIRE(p);
    kt_state before = kt_state_take(p);
    CHECK_K(kctx_run(p, 2, NULL, 0), KCTX_UNKNOWN_ID);
    CHECK_UNCHANGED(p, before);
    CHECK_OK(kctx_run(p, 1, NULL, 0)); /* the context still runs */
    kt_finish(p);
    kt_set_device(0);
}

KT_TEST(run_with_arguments_that_do_not_match_the_signature_is_invalid_argument) { /* K18 */
    REQUIRE_DEVICES(2);
    kctx_context p = program_ctx();
    REQUIRE(p);
    kctx_arg extra[1] = {KCTX_SCALAR(1)};
    kt_state before = kt_state_take(p);
    CHECK_K(kctx_run(p, 1, extra, 1), KCTX_INVALID_ARGUMENT); /* noop takes none */
    CHECK_K(kctx_run(p, 1, NULL, 1), KCTX_INVALID_ARGUMENT);
    CHECK_UNCHANGED(p, before);
    CHECK_OK(kctx_run(p, 1, NULL, 0));
    kt_finish(p);
    kt_set_device(0);
}

/* A kernel context with tracing on (its file under /tmp) and noop prepared
 * under id 1. */
static kctx_context traced_ctx(char *path, size_t n, const char *tag) {
    snprintf(path, n, "/tmp/kctx-refusals-%s-%d.json", tag, (int)getpid());
    kctx_context c = kt_create();
    if (!c) return 0;
    kctx_kernel_config cfg = kt_config(0);
    cfg.flags = KCTX_TRACE_ENABLE;
    cfg.trace_path = path;
    kt_image noop = kt_image_noop();
    if (!CHECK_OK(kctx_kernel_init(c, &cfg)) ||
        !CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size))) {
        kctx_close(c);
        kctx_destroy(c);
        return 0;
    }
    return c;
}

KT_TEST(trace_flush_of_a_quarantined_context_is_device_lost) { /* K29, K32 */
    char path[128];
    kctx_context c = traced_ctx(path, sizeof path, "lost");
    REQUIRE(c);
    kt_image append = kt_image_append();
    CHECK_SIM_OK(sim_device_make_fatal(0));
    CHECK_K(kctx_prepare(c, 2, append.bytes, append.size), KCTX_DEVICE_LOST);
    CHECK_PHASE(c, KCTX_PHASE_QUARANTINED);
    kt_state before = kt_state_take(c);
    CHECK_K(kctx_trace_flush(c), KCTX_DEVICE_LOST);
    CHECK_UNCHANGED(c, before);
    kt_owner_reset();
    kt_finish(c);
    remove(path);
}

KT_TEST(trace_flush_of_a_closing_context_is_invalid_state) { /* K8, K32 */
    char path[128];
    kctx_context c = traced_ctx(path, sizeof path, "closing");
    REQUIRE(c);
    kt_fault(SIM_OP_EVENT_DESTROY, 1, 0);
    CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
    CHECK_PHASE(c, KCTX_PHASE_CLOSING);
    kt_state before = kt_state_take(c);
    CHECK_K(kctx_trace_flush(c), KCTX_INVALID_STATE);
    CHECK_UNCHANGED(c, before);
    kt_finish(c);
    remove(path);
}

KT_TEST(check_while_the_context_is_in_a_capture_is_capture_active) { /* kctx_check */
    kctx_context c = kt_prepared_ctx(kt_image_noop(), 1);
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, s)); /* the context's streams join the capture */
    kt_state before = kt_state_take(c);
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_K(kctx_check(c, &rep), KCTX_CAPTURE_ACTIVE);
    CHECK_UNCHANGED(c, before);
    sim_graph g = 0;
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_OK(kctx_check(c, &rep));
    kt_finish(c);
}

KT_TEST(trace_flush_to_a_path_that_cannot_be_written_is_platform_error) { /* K32 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    cfg.flags = KCTX_TRACE_ENABLE;
    cfg.trace_path = "/nonexistent-kctx-dir/trace.json"; /* no such directory */
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    CHECK_K(kctx_trace_flush(c), KCTX_PLATFORM_ERROR);
    CHECK(strstr(kctx_last_error(c), "/nonexistent-kctx-dir/trace.json") != NULL);
    CHECK_PHASE(c, KCTX_PHASE_READY); /* a failed write poisons nothing */
    CHECK_K(kt_runtime_error(c), KCTX_OK);
    CHECK_OK(kctx_close(c)); /* close's own write failure goes to the teardown slot */
    CHECK_K(kt_teardown_error(c), KCTX_PLATFORM_ERROR);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(run_of_a_poisoned_program_context_is_poisoned) { /* K8: POISONED */
    REQUIRE_DEVICES(2);
    kctx_context p = program_ctx();
    REQUIRE(p);
    kt_fault(SIM_OP_LAUNCH_KERNEL, 1, 0); /* a failure after enqueueing started */
    CHECK(kctx_run(p, 1, NULL, 0) != KCTX_OK);
    CHECK_PHASE(p, KCTX_PHASE_POISONED);
    kt_state before = kt_state_take(p);
    CHECK_K(kctx_run(p, 1, NULL, 0), KCTX_POISONED);
    CHECK_UNCHANGED(p, before);
    /* the failed run's compensating chain may still be in flight: close
     * would answer BUSY (K25) */
    (void)sim_stream_synchronize(kt_aicpu_stream(p));
    kt_finish(p);
    kt_set_device(0);
}

/* ---- check order (kctx.h, Conventions: handle, arguments, image, phase,
 * current device, capture state, capacity) ------------------------------------------------- */

/* kctx_run checks as kctx_launch does: mode and phase, current device (K5),
 * then the id and the arguments. Kills: run's K5 check placed after its id
 * or argument checks (from another current device, an unknown id was
 * UNKNOWN_ID and bad arguments INVALID_ARGUMENT instead of INVALID_STATE). */
KT_TEST(run_from_another_current_device_is_invalid_state_before_the_id_and_arguments) {
    /* section 0, K5 */
    REQUIRE_DEVICES(2);
    kctx_context p = program_ctx(); /* owns device 1, current on this thread */
    REQUIRE(p);
    kt_set_device(0);
    kctx_arg extra[1] = {KCTX_SCALAR(1)};
    kt_state before = kt_state_take(p);
    CHECK_K(kctx_run(p, 2, NULL, 0), KCTX_INVALID_STATE); /* unknown id */
    CHECK(strstr(kctx_last_error(p), "K5") != NULL);
    CHECK_K(kctx_run(p, 1, extra, 1), KCTX_INVALID_STATE); /* bad arguments */
    CHECK(strstr(kctx_last_error(p), "K5") != NULL);
    CHECK_UNCHANGED(p, before);
    kt_set_device(1);
    CHECK_K(kctx_run(p, 2, NULL, 0), KCTX_UNKNOWN_ID);
    CHECK_K(kctx_run(p, 1, extra, 1), KCTX_INVALID_ARGUMENT);
    CHECK_OK(kctx_run(p, 1, NULL, 0));
    kt_finish(p);
    kt_set_device(0);
}

/* Program init checks its device (an argument) before the mode and phase:
 * a device the platform lacks is INVALID_ARGUMENT also on a context that
 * could not init anyway (kernel-latched, or a READY program context).
 * Kills: the device-range check left after the mode and phase checks. */
KT_TEST(program_init_refuses_a_device_the_platform_lacks_before_its_mode_and_phase) {
    /* section 0 */
    REQUIRE_DEVICES(2);
    kctx_program_config cfg = KCTX_PROGRAM_CONFIG_INIT;
    cfg.device = kt_device_count();
    kctx_context k = kt_kernel_ctx();
    REQUIRE(k);
    kt_state before = kt_state_take(k);
    CHECK_K(kctx_program_init(k, &cfg), KCTX_INVALID_ARGUMENT);
    CHECK(strstr(kctx_last_error(k), "out of range") != NULL);
    CHECK_UNCHANGED(k, before);
    kt_finish(k);
    kctx_context p = program_ctx();
    REQUIRE(p);
    before = kt_state_take(p);
    CHECK_K(kctx_program_init(p, &cfg), KCTX_INVALID_ARGUMENT);
    CHECK_UNCHANGED(p, before);
    cfg.device = 1;
    CHECK_K(kctx_program_init(p, &cfg), KCTX_INVALID_STATE); /* a good device: the phase */
    kt_finish(p);
    kt_set_device(0);
}

/* Program init's device check runs before its mode and phase checks, so
 * on a kernel context it is a platform call made by an entry that is then
 * refused: a lost device reported by that call must not quarantine the
 * kernel context (a refusal changes nothing, K9). Kills: the device count
 * mapped with kp_map (its fatal path quarantined the READY kernel
 * context). */
KT_TEST(a_program_init_refused_on_a_kernel_context_quarantines_nothing_on_a_lost_device) {
    /* K9, K29, section 0 */
    kctx_context k = kt_kernel_ctx();
    REQUIRE(k);
    kt_state before = kt_state_take(k);
    kctx_fault f = KCTX_FAULT_INIT;
    f.op = KCTX_POP_DEVICE_COUNT;
    f.error = KCTX_DEVICE_LOST;
    int id = -1;
    REQUIRE_OK(kctx_fault_arm(&f, &id));
    kctx_program_config cfg = KCTX_PROGRAM_CONFIG_INIT;
    CHECK_K(kctx_program_init(k, &cfg), KCTX_DEVICE_LOST);
    kctx_fault_clear_all();
    CHECK_PHASE(k, KCTX_PHASE_READY);
    CHECK_UNCHANGED(k, before);
    CHECK_K(kctx_program_init(k, &cfg), KCTX_INVALID_STATE); /* the device answers: the mode */
    kt_finish(k);
}

/* kctx_trace_flush's stated order: tracing off is UNSUPPORTED in any
 * phase, before the phase check; kctx_capturable's: the mode before the id.
 * Kills: flush's phase check moved before its tracing check (a CLOSED
 * untraced context answered INVALID_STATE); capturable's id check moved
 * before its mode check (a program context asked for an unknown id
 * answered UNKNOWN_ID). */
KT_TEST(flush_without_tracing_and_capturable_on_a_program_context_answer_in_the_stated_order) {
    /* section 0, K32, K3 */
    REQUIRE_DEVICES(2);
    kctx_context c = kt_kernel_ctx(); /* tracing off */
    REQUIRE(c);
    CHECK_OK(kctx_close(c));
    CHECK_K(kctx_trace_flush(c), KCTX_UNSUPPORTED);
    CHECK_OK(kctx_destroy(c));
    kctx_context p = program_ctx();
    REQUIRE(p);
    CHECK_K(kctx_capturable(p, 99), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(p), "K3") != NULL);
    kt_finish(p);
    kt_set_device(0);
}
