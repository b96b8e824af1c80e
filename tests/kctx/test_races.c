/*
 * test_races.c — lifecycle calls racing each other (K33, with K6 and K14):
 * exactly one winner, the losers refused, nothing leaked. Run under TSan
 * (label "concurrency"). Threads are released together by a barrier.
 */
#include "kt.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define NTHREADS 16
#define ROUNDS 8

typedef struct racer {
    kctx_context ctx;
    kt_image img;
    uint64_t id;
    kctx_status st;
} racer;

static void *kernel_init_racer(void *p) {
    racer *r = p;
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    r->st = kctx_kernel_init(r->ctx, &cfg);
    return NULL;
}

static void *close_racer(void *p) {
    racer *r = p;
    r->st = kctx_close(r->ctx);
    return NULL;
}

static void *destroy_racer(void *p) {
    racer *r = p;
    r->st = kctx_destroy(r->ctx);
    return NULL;
}

static void *close_or_destroy_racer(void *p) {
    racer *r = p;
    r->st = r->id % 2 ? kctx_destroy(r->ctx) : kctx_close(r->ctx);
    return NULL;
}

static void *prepare_racer(void *p) {
    racer *r = p;
    r->st = kctx_prepare(r->ctx, r->id, r->img.bytes, r->img.size);
    return NULL;
}

static void run(racer *rs, int n, void *(*fn)(void *)) {
    void *args[NTHREADS];
    for (int i = 0; i < n; i++) args[i] = &rs[i];
    kt_run_threads(n, fn, args);
}

static int count(const racer *rs, int n, kctx_status st) {
    int k = 0;
    for (int i = 0; i < n; i++) k += rs[i].st == st;
    return k;
}

KT_TEST(sixteen_threads_race_kernel_init_on_one_device_and_exactly_one_wins) { /* K33, K6 */
    kt_snap base = kt_snap_take(0);
    for (int round = 0; round < ROUNDS; round++) {
        racer rs[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) rs[i] = (racer){kt_create(), {NULL, 0}, 0, KCTX_OK};
        run(rs, NTHREADS, kernel_init_racer);
        CHECK_EQ(count(rs, NTHREADS, KCTX_OK), 1);
        CHECK_EQ(count(rs, NTHREADS, KCTX_BUSY), NTHREADS - 1);
        /* only the winner's resident set exists: the losers took nothing */
        kt_snap now = kt_snap_take(0);
        CHECK_EQ(now.o.streams, base.o.streams + 3);
        CHECK_EQ(now.o.events, base.o.events + 5);
        CHECK_EQ(now.o.modules, base.o.modules + 1);
        CHECK_EQ(now.live_count, base.live_count + 4); /* + the argument slots (K37) */
        for (int i = 0; i < NTHREADS; i++) {
            if (rs[i].st == KCTX_OK) {
                kt_finish(rs[i].ctx);
            } else {
                CHECK_MODE(rs[i].ctx, KCTX_MODE_NONE);
                CHECK_PHASE(rs[i].ctx, KCTX_PHASE_NEW);
                CHECK_OK(kctx_destroy(rs[i].ctx));
            }
        }
        CHECK_DEVICE_AT(0, base);
        if (ktc_test_failures()) break;
    }
}

KT_TEST(racing_kernel_inits_of_one_context_have_one_winner) { /* K33 */
    for (int round = 0; round < ROUNDS; round++) {
        kctx_context c = kt_create();
        REQUIRE(c);
        racer rs[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) rs[i] = (racer){c, {NULL, 0}, 0, KCTX_OK};
        run(rs, NTHREADS, kernel_init_racer);
        CHECK_EQ(count(rs, NTHREADS, KCTX_OK), 1);
        CHECK_EQ(count(rs, NTHREADS, KCTX_INVALID_STATE), NTHREADS - 1);
        kt_finish(c);
        if (ktc_test_failures()) break;
    }
}

KT_TEST(racing_closes_release_everything_exactly_once) { /* K33 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    for (int round = 0; round < ROUNDS; round++) {
        kctx_context c = kt_kernel_ctx();
        REQUIRE(c);
        CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
        uint64_t sd = sim_calls(SIM_OP_STREAM_DESTROY, 0), ed = sim_calls(SIM_OP_EVENT_DESTROY, 0),
                 fr = sim_calls(SIM_OP_FREE, 0), mu = sim_calls(SIM_OP_MODULE_UNLOAD, 0);
        racer rs[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) rs[i] = (racer){c, {NULL, 0}, 0, KCTX_INVALID_STATE};
        run(rs, NTHREADS, close_racer);
        /* close is idempotent on CLOSED, so every caller gets OK; but only
         * one released anything */
        CHECK_EQ(count(rs, NTHREADS, KCTX_OK), NTHREADS);
        CHECK_EQ(sim_calls(SIM_OP_STREAM_DESTROY, 0) - sd, 3);
        CHECK_EQ(sim_calls(SIM_OP_EVENT_DESTROY, 0) - ed, 5);
        CHECK_EQ(sim_calls(SIM_OP_FREE, 0) - fr, 5);          /* 4 resident + the callable table */
        CHECK_EQ(sim_calls(SIM_OP_MODULE_UNLOAD, 0) - mu, 2); /* programs + the child */
        CHECK_PHASE(c, KCTX_PHASE_CLOSED);
        CHECK_OK(kctx_destroy(c));
        if (ktc_test_failures()) break;
    }
}

KT_TEST(racing_destroys_have_one_winner) { /* K33 */
    for (int round = 0; round < ROUNDS; round++) {
        kctx_context c = kt_kernel_ctx();
        REQUIRE(c);
        CHECK_OK(kctx_close(c));
        racer rs[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) rs[i] = (racer){c, {NULL, 0}, 0, KCTX_OK};
        run(rs, NTHREADS, destroy_racer);
        CHECK_EQ(count(rs, NTHREADS, KCTX_OK), 1);
        CHECK_EQ(count(rs, NTHREADS, KCTX_INVALID_HANDLE), NTHREADS - 1);
        if (ktc_test_failures()) break;
    }
}

KT_TEST(racing_closes_and_destroys_leave_no_half_state) { /* K33, K27 */
    for (int round = 0; round < ROUNDS; round++) {
        kctx_context c = kt_kernel_ctx();
        REQUIRE(c);
        racer rs[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) rs[i] = (racer){c, {NULL, 0}, (uint64_t)i, KCTX_OK};
        run(rs, NTHREADS, close_or_destroy_racer);
        int destroyed = 0;
        for (int i = 0; i < NTHREADS; i++) {
            if (i % 2) { /* destroy: refused before the close, OK once after, then a dead handle */
                CHECK(rs[i].st == KCTX_BUSY || rs[i].st == KCTX_OK ||
                      rs[i].st == KCTX_INVALID_HANDLE);
                destroyed += rs[i].st == KCTX_OK;
            } else { /* close: OK, or a dead handle once destroyed */
                CHECK(rs[i].st == KCTX_OK || rs[i].st == KCTX_INVALID_HANDLE);
            }
        }
        CHECK(destroyed <= 1);
        if (!destroyed) {
            CHECK_PHASE(c, KCTX_PHASE_CLOSED);
            CHECK_OK(kctx_destroy(c));
        }
        kctx_phase p;
        CHECK_K(kctx_get_phase(c, &p), KCTX_INVALID_HANDLE);
        if (ktc_test_failures()) break;
    }
}

/* Entries look a handle up without the table lock (context.c: a pinned
 * slot): lookups racing a destroy get OK or INVALID_HANDLE, never a freed
 * context (TSan/ASan see one), and once the destroy returned, the old
 * handle never validates again, also not after a new context took the
 * slot. */
typedef struct lookup_racer {
    kctx_context old;
    atomic_int *phase; /* 0: before the destroy, 1: destroyed, 2: stop */
    int bad_status, stale_ok;
    atomic_int calls; /* read by the main thread while it runs */
} lookup_racer;

static void *lookup_loop(void *p) {
    lookup_racer *r = p;
    for (int ph, n = 0; (ph = atomic_load(r->phase)) != 2; n = atomic_fetch_add(&r->calls, 1) + 1) {
        kctx_phase got;
        kctx_status st = kctx_get_phase(r->old, &got);
        if (st != KCTX_OK && st != KCTX_INVALID_HANDLE) r->bad_status++;
        if (ph == 1 && st == KCTX_OK) r->stale_ok++; /* destroyed before this call began */
        if ((n & 63) == 0) sched_yield();
    }
    return NULL;
}

KT_TEST(lookups_racing_a_destroy_never_see_it_again_nor_its_slot_reused) { /* K33 */
    enum {
        NR = 4
    };
    for (int round = 0; round < ROUNDS; round++) {
        kctx_context c = 0;
        CHECK_OK(kctx_context_create(NULL, &c));
        atomic_int phase = 0;
        lookup_racer rs[NR];
        pthread_t th[NR];
        for (int i = 0; i < NR; i++) {
            rs[i] = (lookup_racer){c, &phase, 0, 0, 0};
            atomic_init(&rs[i].calls, 0);
            REQUIRE(pthread_create(&th[i], NULL, lookup_loop, &rs[i]) == 0);
        }
        for (int spin = 0; spin < 1000 && atomic_load(&rs[0].calls) < 200; spin++) sched_yield();
        CHECK_OK(kctx_destroy(c));
        atomic_store(&phase, 1);
        kctx_context fresh[4] = {0}; /* likely the same slot, a newer generation */
        for (int i = 0; i < 4; i++) {
            CHECK_OK(kctx_context_create(NULL, &fresh[i]));
            for (int spin = 0; spin < 50; spin++) sched_yield();
            CHECK_OK(kctx_destroy(fresh[i]));
        }
        CHECK_OK(kctx_context_create(NULL, &fresh[0]));
        for (int spin = 0; spin < 200; spin++) sched_yield();
        atomic_store(&phase, 2);
        for (int i = 0; i < NR; i++) pthread_join(th[i], NULL);
        CHECK_OK(kctx_destroy(fresh[0]));
        for (int i = 0; i < NR; i++) {
            CHECK_EQ(rs[i].bad_status, 0);
            CHECK_EQ(rs[i].stale_ok, 0);
        }
        if (ktc_test_failures()) break;
    }
}

KT_TEST(racing_prepares_of_one_id_have_one_winner) { /* K33, K14 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    for (int round = 0; round < ROUNDS; round++) {
        racer rs[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) rs[i] = (racer){c, noop, (uint64_t)round, KCTX_OK};
        run(rs, NTHREADS, prepare_racer);
        CHECK_EQ(count(rs, NTHREADS, KCTX_OK), 1);
        CHECK_EQ(count(rs, NTHREADS, KCTX_DUPLICATE_ID), NTHREADS - 1);
    }
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.callables, ROUNDS);
    CHECK_EQ(r.uploads, 1);
    kt_finish(c);
}

KT_TEST(racing_prepares_of_distinct_ids_all_succeed_and_share_one_upload) { /* K33, K14 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    racer rs[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        rs[i] = (racer){c, i % 2 ? append : noop, (uint64_t)i + 1, KCTX_BUSY};
    run(rs, NTHREADS, prepare_racer);
    CHECK_EQ(count(rs, NTHREADS, KCTX_OK), NTHREADS);
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.callables, NTHREADS);
    CHECK_EQ(r.uploads, 2);
    kt_finish(c);
}

/* ---- K23/K33: a launch enqueues its whole chain under the context lock ---------------------- */

typedef struct held_launch {
    kctx_context ctx;
    sim_stream stream;
    kctx_status st;
} held_launch;

static void *held_launch_main(void *p) {
    held_launch *l = p;
    kt_set_device(0);
    l->st = kctx_launch(l->ctx, 1, NULL, 0, l->stream);
    return NULL;
}

/* Kills: dropping the context lock around enqueue_chain in kctx_launch
 * (src/core/launch.c), which lets a second launch's chain interleave with
 * the first's on the context's streams (K23: eager launches of one context
 * are serialised in host order; K33: every entry serialises on the
 * context). Deterministic: launch A is stopped by a seam hold inside its
 * chain (its first event record, START on its caller stream), and a
 * second hold catches the next platform call of any thread. Launch B on
 * the same context, from another thread and another caller stream, must
 * make none while A is held: it waits for the context lock, so the second
 * hold is never reached (correct code passes whatever the timing; the
 * mutant's B reaches it within the wait). Then both complete in order.
 * Under both strategies. */
KT_TEST(a_launch_held_inside_its_chain_keeps_another_launch_of_the_context_out) { /* K23, K33 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    for (int k = 0; k < 2; k++) {
        kctx_context c = kt_strategy_ctx(kt_strategies[k], noop, 1);
        REQUIRE(c);
        sim_stream sa = 0, sb = 0;
        REQUIRE_SIM_OK(sim_stream_create(&sa));
        REQUIRE_SIM_OK(sim_stream_create(&sb));
        held_launch a = {c, sa, KCTX_INVALID_STATE}, b = {c, sb, KCTX_INVALID_STATE};
        int in_chain = -1, next_call = -1;
        REQUIRE_OK(kctx_seam_hold_arm(KCTX_POP_EVENT_RECORD, 1, &in_chain));
        pthread_t ta, tb;
        REQUIRE(pthread_create(&ta, NULL, held_launch_main, &a) == 0);
        CHECK_OK(kctx_seam_hold_wait_reached(in_chain, 10000)); /* A is inside its chain */
        CHECK_OK(kctx_seam_hold_arm(KCTX_POP_ANY, 1, &next_call));
        REQUIRE(pthread_create(&tb, NULL, held_launch_main, &b) == 0);
        /* B makes no platform call while A holds the context */
        CHECK_K(kctx_seam_hold_wait_reached(next_call, 1000), KCTX_TIMEOUT);
        CHECK_OK(kctx_seam_hold_release(next_call));
        CHECK_OK(kctx_seam_hold_release(in_chain));
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        CHECK_OK(a.st);
        CHECK_OK(b.st);
        CHECK_SIM_OK(sim_stream_synchronize(sa));
        CHECK_SIM_OK(sim_stream_synchronize(sb));
        kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
        CHECK_OK(kctx_check(c, &rep));
        CHECK_K(rep.device_status, KCTX_OK);
        CHECK_EQ(rep.concurrent_launches, 0);
        CHECK_SIM_OK(sim_stream_destroy(sa));
        CHECK_SIM_OK(sim_stream_destroy(sb));
        kt_finish(c);
    }
}
