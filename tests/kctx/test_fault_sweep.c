/*
 * test_fault_sweep.c — SQLite-style fault sweeps over the platform calls of
 * init, prepare (first and deduplicated) and close, and close retries over
 * every combination of failing releases.
 *
 * For each scenario: run it once and count the platform calls this thread
 * makes that a fault can fail (kt_injectable_calls: every sim call but the
 * three queries the sim never fails); then, for k = 1..N, fail the k-th call (once,
 * then persistently from the k-th on) and check the returned status, the
 * phase, that nothing is half-built, and that a retry (or, after clearing
 * the faults, close and its retry) brings the sim's live objects and
 * allocations back to their baseline. The call count of each scenario is
 * printed, so that a change shows up in the log.
 *
 * Injected failures (SIM_INJECTED, a status kctx has no class for) must be
 * reported as KCTX_PLATFORM_ERROR naming the failed operation, except for
 * these tolerated calls, after which the entry still returns OK:
 *  - the last call of every entry: restoring the thread's capture mode
 *    (kctx retries it once; if the retry fails too, the thread is left in
 *    relaxed mode, which only makes later calls more permissive);
 *  - close: the two stream queries of its BUSY check; a query that fails
 *    with anything but NOT_READY or DEVICE_LOST is taken as "the stream
 *    failed on the device, so it is idle" and the release goes on.
 */
#include "kt.h"

#include <stdio.h>
#include <string.h>

typedef struct tally {
    uint64_t calls;
    int runs, tolerated, before_latch, rolled_back, closing, refused, poisoned, kept_for_close;
} tally;

static void print_tally(const char *scenario, const tally *t) {
    printf("fault-sweep %s: %llu platform calls\n", scenario, (unsigned long long)t->calls);
    printf("fault-sweep %s: %d injections (%llu once + %llu persistent): %d tolerated, %d refused "
           "before the "
           "latch, %d rolled back, %d left CLOSING, %d refused with nothing changed, %d poisoned, "
           "%d kept "
           "releases for close\n",
           scenario, t->runs, (unsigned long long)t->calls, (unsigned long long)t->calls,
           t->tolerated, t->before_latch, t->rolled_back, t->closing, t->refused, t->poisoned,
           t->kept_for_close);
    fflush(stdout);
}

static int snap_equal(const kt_snap *a, const kt_snap *b) {
    return a->o.streams == b->o.streams && a->o.events == b->o.events &&
           a->o.modules == b->o.modules && a->live_count == b->live_count &&
           a->live_bytes == b->live_bytes;
}

/* Objects and allocations the device holds beyond `base`. */
static uint64_t held_beyond(const kt_snap *base) {
    kt_snap now = kt_snap_take(0);
    return (now.o.streams - base->o.streams) + (now.o.events - base->o.events) +
           (now.o.modules - base->o.modules) + (now.live_count - base->live_count);
}

static void restore_capture_mode(void) {
    sim_capture_mode m = SIM_CAPTURE_MODE_GLOBAL;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m));
}

/* The failed entry's message names the operation and the injected status. */
static void check_injected_message(kctx_context c, uint64_t k, int persistent) {
    const char *msg = kctx_last_error(c);
    if (!CHECK(strstr(msg, "SIM_INJECTED") != NULL))
        fprintf(stderr, "    k=%llu%s: %s\n", (unsigned long long)k,
                persistent ? " (persistent)" : "", msg);
}

static void report(const char *scenario, uint64_t k, int persistent, kctx_status st,
                   kctx_context c) {
    fprintf(stderr, "    %s, call %llu failing%s: %s, phase %s: %s\n", scenario,
            (unsigned long long)k, persistent ? " persistently" : " once", kctx_status_name(st),
            kctx_phase_name(kt_phase(c)), kctx_last_error(c));
}

static int all_handles_zero(kctx_context c) {
    kctx_resource_info r = kt_resources(c);
    int z = !r.aicpu_stream && !r.aicore_stream && !r.programs_module && !r.runtime_image &&
            !r.arch_table && !r.args_block && !r.uploads && !r.callables;
    for (int i = 0; i < 5; i++) z &= !r.events[i];
    return z;
}

/* ---- init ----------------------------------------------------------------------------- */

KT_TEST(fault_sweep_init) {
    kctx_kernel_config cfg = kt_config(0);
    kt_snap base = kt_snap_take(0);
    kctx_context c = kt_create();
    REQUIRE(c);
    tally t = {0};
    uint64_t before = kt_injectable_calls();
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    t.calls = kt_injectable_calls() - before;
    kt_finish(c);
    for (int persistent = 0; persistent < 2; persistent++) {
        for (uint64_t k = 1; k <= t.calls; k++) {
            c = kt_create();
            REQUIRE(c);
            int fid = kt_fault(SIM_OP_ANY, k, persistent);
            kctx_status st = kctx_kernel_init(c, &cfg);
            uint64_t hits = 0;
            CHECK_SIM_OK(sim_fault_hits(fid, &hits));
            sim_fault_clear_all();
            t.runs++;
            CHECK(hits >= 1);
            kctx_phase p = kt_phase(c);
            kctx_mode m = KCTX_MODE_NONE;
            CHECK_OK(kctx_get_mode(c, &m));
            int ok = 1;
            if (st == KCTX_OK) {
                /* tolerated: only the capture-mode restore, the last call */
                t.tolerated++;
                ok &= CHECK_EQ(k, t.calls);
                ok &= CHECK_EQ(p, KCTX_PHASE_READY);
                if (!persistent) ok &= CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_GLOBAL);
                restore_capture_mode();
                kt_finish(c);
            } else {
                ok &= CHECK_K(st, KCTX_PLATFORM_ERROR);
                check_injected_message(c, k, persistent);
                restore_capture_mode();
                if (p == KCTX_PHASE_NEW) {
                    /* refused before the latch, or after it with a complete rollback:
                     * nothing half-built either way */
                    if (m == KCTX_MODE_NONE)
                        t.before_latch++;
                    else
                        t.rolled_back++;
                    ok &= CHECK(all_handles_zero(c));
                    kt_snap now = kt_snap_take(0);
                    ok &= CHECK(snap_equal(&now, &base));
                    /* the claim is free again and the context is reusable: retry */
                    ok &= CHECK_OK(kctx_kernel_init(c, &cfg));
                    kt_finish(c);
                } else if (p == KCTX_PHASE_CLOSING) {
                    /* the rollback failed too (the fault persists), or init's
                     * upload may still be in flight (its wait failed): nothing
                     * may be released until the streams are idle (K17) */
                    t.closing++;
                    ok &= CHECK(persistent || strstr(kctx_last_error(c), "in flight") != NULL);
                    ok &= CHECK_EQ(m, KCTX_MODE_KERNEL);
                    uint64_t held = held_beyond(&base);
                    kctx_resource_info ri = KCTX_RESOURCE_INFO_INIT;
                    if (CHECK_OK(kctx_get_resources(c, &ri)) && ri.aicpu_stream)
                        sim_stream_synchronize(
                            ri.aicpu_stream); /* the framework waits for the device */
                    uint64_t rel = kt_release_calls();
                    ok &= CHECK(held > 0);
                    ok &= CHECK_OK(kctx_close(c));
                    ok &= CHECK_EQ(kt_release_calls() - rel, held); /* exactly the remainder */
                    ok &= CHECK_OK(kctx_destroy(c));
                } else {
                    ok &= CHECK(!"init failed into an unexpected phase");
                    kt_owner_reset();
                    kctx_close(c);
                    kctx_destroy(c);
                }
            }
            kt_snap now = kt_snap_take(0);
            ok &= CHECK(snap_equal(&now, &base));
            if (!ok) report("init", k, persistent, st, c);
            if (ktc_test_failures() > 20) break;
        }
    }
    print_tally("init", &t);
}

/* ---- prepare (first) ------------------------------------------------------------------------ */

KT_TEST(fault_sweep_prepare_first) {
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kt_snap base = kt_snap_take(0);
    tally t = {0};
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    uint64_t before = kt_injectable_calls();
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    t.calls = kt_injectable_calls() - before;
    kt_finish(c);
    for (int persistent = 0; persistent < 2; persistent++) {
        for (uint64_t k = 1; k <= t.calls; k++) {
            c = kt_kernel_ctx();
            REQUIRE(c);
            kt_snap pre = kt_snap_take(0);
            kt_fault(SIM_OP_ANY, k, persistent);
            kctx_status st = kctx_prepare(c, 1, noop.bytes, noop.size);
            sim_fault_clear_all();
            restore_capture_mode();
            t.runs++;
            kctx_phase p = kt_phase(c);
            kctx_resource_info r = kt_resources(c);
            int ok = 1;
            if (st == KCTX_OK) {
                t.tolerated++;
                ok &= CHECK_EQ(k, t.calls);
                ok &= CHECK_EQ(r.callables, 1);
            } else if (p == KCTX_PHASE_READY) {
                /* the upload could not be started: nothing kept (K17) ... */
                ok &= CHECK_K(st, KCTX_PLATFORM_ERROR);
                check_injected_message(c, k, persistent);
                ok &= CHECK_EQ(r.callables, 0);
                kt_snap now = kt_snap_take(0);
                if (snap_equal(&now, &pre)) {
                    t.refused++;
                } else {
                    /* ... except releases that failed too (persistent faults), kept for close */
                    t.kept_for_close++;
                    ok &= CHECK(persistent);
                }
                if (!persistent) {
                    ok &= CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size)); /* retry */
                    ok &= CHECK_EQ(kt_resources(c).callables, 1);
                }
            } else if (p == KCTX_PHASE_POISONED) {
                /* the upload was started but its wait failed: poisoned, upload kept (K17) */
                t.poisoned++;
                ok &= CHECK_K(st, KCTX_PLATFORM_ERROR);
                check_injected_message(c, k, persistent);
                ok &= CHECK_K(kt_runtime_error(c), KCTX_PLATFORM_ERROR);
                ok &= CHECK_EQ(r.callables, 0);
                ok &= CHECK_EQ(r.uploads, 1);
                kt_snap now = kt_snap_take(0);
                ok &= CHECK_EQ(now.live_count, pre.live_count + 1);
                ok &= CHECK_SIM_OK(
                    sim_stream_synchronize(r.upload_stream)); /* let the device finish */
            } else {
                ok &= CHECK(!"prepare failed into an unexpected phase");
            }
            uint64_t held = held_beyond(&base), rel = kt_release_calls();
            ok &= CHECK_OK(kctx_close(c));
            ok &= CHECK_EQ(kt_release_calls() - rel, held);
            ok &= CHECK_OK(kctx_destroy(c));
            kt_snap now = kt_snap_take(0);
            ok &= CHECK(snap_equal(&now, &base));
            if (!ok) report("prepare (first)", k, persistent, st, c);
            if (ktc_test_failures() > 20) break;
        }
    }
    print_tally("prepare (first)", &t);
}

/* ---- prepare (deduplicated) --------------------------------------------------------------------- */

KT_TEST(fault_sweep_prepare_dedup) {
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    tally t = {0};
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    uint64_t before = kt_injectable_calls();
    REQUIRE_OK(kctx_prepare(c, 2, noop.bytes, noop.size));
    t.calls = kt_injectable_calls() - before;
    uint64_t id = 3;
    for (int persistent = 0; persistent < 2; persistent++) {
        for (uint64_t k = 1; k <= t.calls; k++, id++) {
            kt_state pre = kt_state_take(c);
            kt_fault(SIM_OP_ANY, k, persistent);
            kctx_status st = kctx_prepare(c, id, noop.bytes, noop.size);
            sim_fault_clear_all();
            restore_capture_mode();
            t.runs++;
            int ok = 1;
            kctx_resource_info r = kt_resources(c);
            if (st == KCTX_OK) {
                t.tolerated++;
                ok &= CHECK_EQ(k, t.calls);
                ok &= CHECK_EQ(r.callables, pre.res.callables + 1);
            } else {
                /* checks only: nothing may change */
                t.refused++;
                ok &= CHECK_K(st, KCTX_PLATFORM_ERROR);
                check_injected_message(c, k, persistent);
                pre.destructive = kt_destructive_calls();
                kt_state now = kt_state_take(c);
                ok &= kt_check_state(&pre, &now, __FILE__, __LINE__);
                ok &= CHECK_OK(kctx_prepare(c, id, noop.bytes, noop.size)); /* retry */
            }
            r = kt_resources(c);
            ok &= CHECK_EQ(r.uploads, 1); /* always the one shared upload */
            ok &= CHECK_EQ(r.upload_bytes, pre.res.upload_bytes);
            kt_snap dev = kt_snap_take(0);
            ok &= CHECK(snap_equal(&dev, &pre.dev));
            if (!ok) report("prepare (deduplicated)", k, persistent, st, c);
            if (ktc_test_failures() > 20) break;
        }
    }
    kt_finish(c);
    print_tally("prepare (deduplicated)", &t);
}

/* ---- close ------------------------------------------------------------------------------------- */

static kctx_context prepared_ctx(kt_image img) {
    kctx_context c = kt_kernel_ctx();
    if (c) CHECK_OK(kctx_prepare(c, 1, img.bytes, img.size));
    return c;
}

KT_TEST(fault_sweep_close) {
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kt_snap base = kt_snap_take(0);
    tally t = {0};
    kctx_context c = prepared_ctx(noop);
    REQUIRE(c);
    uint64_t before = kt_injectable_calls();
    REQUIRE_OK(kctx_close(c));
    t.calls = kt_injectable_calls() - before;
    CHECK_OK(kctx_destroy(c));
    for (int persistent = 0; persistent < 2; persistent++) {
        for (uint64_t k = 1; k <= t.calls; k++) {
            c = prepared_ctx(noop);
            REQUIRE(c);
            kt_snap pre = kt_snap_take(0);
            kt_fault(SIM_OP_ANY, k, persistent);
            kctx_status st = kctx_close(c);
            sim_fault_clear_all();
            restore_capture_mode();
            t.runs++;
            kctx_phase p = kt_phase(c);
            int ok = 1;
            if (st == KCTX_OK) {
                t.tolerated++; /* a stream query or the capture-mode restore */
                ok &= CHECK_EQ(p, KCTX_PHASE_CLOSED);
            } else if (p == KCTX_PHASE_READY) {
                /* refused by the checks before the first destructive step */
                t.refused++;
                ok &= CHECK_K(st, KCTX_PLATFORM_ERROR);
                check_injected_message(c, k, persistent);
                kt_snap now = kt_snap_take(0);
                ok &= CHECK(snap_equal(&now, &pre));
                ok &= CHECK_OK(kctx_close(c));
            } else if (p == KCTX_PHASE_CLOSING) {
                /* a release failed: its handle is kept; the retry releases exactly the remainder */
                t.closing++;
                ok &= CHECK_K(st, KCTX_PLATFORM_ERROR);
                check_injected_message(c, k, persistent);
                ok &= CHECK_K(kt_teardown_error(c), KCTX_PLATFORM_ERROR);
                uint64_t held = held_beyond(&base), rel = kt_release_calls();
                if (!persistent) ok &= CHECK_EQ(held, 1);
                ok &= CHECK(held >= 1);
                ok &= CHECK_OK(kctx_close(c));
                ok &= CHECK_EQ(kt_release_calls() - rel, held);
                ok &= CHECK_K(kt_teardown_error(c), KCTX_PLATFORM_ERROR); /* kept after the retry */
            } else {
                ok &= CHECK(!"close failed into an unexpected phase");
            }
            CHECK_PHASE(c, KCTX_PHASE_CLOSED);
            ok &= CHECK_OK(kctx_destroy(c));
            kt_snap now = kt_snap_take(0);
            ok &= CHECK(snap_equal(&now, &base));
            if (!ok) report("close", k, persistent, st, c);
            if (ktc_test_failures() > 20) break;
        }
    }
    print_tally("close", &t);
}

/* ---- close: every combination of failing releases ------------------------------------------------ */

static const sim_op k_release_ops[4] = {SIM_OP_FREE, SIM_OP_MODULE_UNLOAD, SIM_OP_EVENT_DESTROY,
                                        SIM_OP_STREAM_DESTROY};
static const char *const k_release_what[4] = {"mem_free", "module_unload", "event_destroy",
                                              "stream_destroy"};

KT_TEST(fault_sweep_close_release_combinations) { /* K26, K10 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kt_snap base = kt_snap_take(0);
    /* what a prepared context holds, per release kind: 4 resident blocks
     * (the argument slots among them, K37) + the callable table; programs
     * + the child module; events; 3 streams */
    const uint64_t held[4] = {5, 2, 5, 3};
    int combos = 0;
    for (unsigned set = 1; set < 16; set++) {
        kctx_context c = prepared_ctx(noop);
        REQUIRE(c);
        for (int i = 0; i < 4; i++)
            if (set & (1u << i)) kt_fault(k_release_ops[i], 1, 1);
        CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
        CHECK_PHASE(c, KCTX_PHASE_CLOSING);
        /* the first failure in release order is the one in the teardown slot */
        char msg[256] = "";
        kctx_status td = KCTX_OK;
        CHECK_OK(kctx_teardown_error(c, &td, msg, sizeof msg));
        int first = 0;
        while (!(set & (1u << first))) first++;
        if (!CHECK(strstr(msg, k_release_what[first]) != NULL))
            fprintf(stderr, "    set 0x%x: %s\n", set, msg);
        /* every release of a failing kind was kept, every other one done */
        uint64_t expect_held = 0;
        for (int i = 0; i < 4; i++)
            if (set & (1u << i)) expect_held += held[i];
        CHECK_EQ(held_beyond(&base), expect_held);
        /* clear the failing kinds one at a time: each retry releases exactly
         * the kind that stopped failing, and stays CLOSING until the last */
        unsigned left = set;
        for (int i = 0; i < 4; i++) {
            if (!(set & (1u << i))) continue;
            left &= ~(1u << i);
            sim_fault_clear_all();
            for (int j = 0; j < 4; j++)
                if (left & (1u << j)) kt_fault(k_release_ops[j], 1, 1);
            uint64_t calls_i = kt_calls(k_release_ops[i]), rel = kt_release_calls();
            kctx_status st = kctx_close(c);
            CHECK_EQ(kt_calls(k_release_ops[i]) - calls_i, held[i]);
            if (left) {
                CHECK_K(st, KCTX_PLATFORM_ERROR);
                CHECK_PHASE(c, KCTX_PHASE_CLOSING);
            } else {
                CHECK_OK(st);
                CHECK_PHASE(c, KCTX_PHASE_CLOSED);
                CHECK_EQ(kt_release_calls() - rel, held[i]);
            }
        }
        sim_fault_clear_all();
        CHECK_K(kt_teardown_error(c), KCTX_PLATFORM_ERROR);
        CHECK_OK(kctx_destroy(c));
        CHECK_DEVICE_AT(0, base);
        combos++;
        if (ktc_test_failures()) break;
    }
    printf("fault-sweep close release combinations: %d of 15 sets of failing release kinds\n",
           combos);
}
