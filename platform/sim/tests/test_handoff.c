/*
 * Hand-offs between the sim's threads (docs/sim.md, "Hand-offs"): every wait
 * of a stream worker, an AICore core, a graph lane or a synchronising host
 * thread first spins for up to KCTX_SIM_SPIN_US microseconds (the device's
 * threads longer while the device has work: until it has been idle for a
 * spin, at most 1 ms beyond one spin), then parks.
 * ctest runs this executable with the spin off (KCTX_SIM_SPIN_US=0: every
 * wait parks at once), with the default and with long spins by spinning (not
 * yielding) threads, so each setting must give the same results and lose no
 * wake-up:
 *
 * - a stress of hand-offs (streams waiting on each other's events, multi-block
 *   kernels, graph replays, host synchronisations) gives exactly the results
 *   of sequential execution;
 * - a waiter that has certainly parked (the work it waits for is held far
 *   longer than any spin) is woken by the hand-off it waits for: a stream
 *   worker by new work, the host by a stream going idle or an event
 *   completing, a worker waiting on another stream's event, AICore cores,
 *   graph lanes, and a worker waiting on an event when the device is lost.
 *
 * A lost wake-up hangs the waiter: each wait is bounded (WAKE_MS), and a
 * waiter not woken in time fails the executable at once (the stuck thread
 * cannot be recovered).
 */
#include "harness.h"
#include "kernels.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    PARK_MS = 40,    /* far longer than any spin the ctest entries allow (<= 2 ms) */
    WAKE_MS = 10000, /* a woken waiter returns well within this */
    STEPS = 240,
    WORDS = 64
};

static void sleep_ms(unsigned ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- a blocking call, bounded -------------------------------------------- */

typedef enum {
    CALL_STREAM_SYNC,
    CALL_EVENT_SYNC
} call_kind;

typedef struct bounded_call {
    call_kind kind;
    uint64_t handle;
    sim_status status;
    harness_flag done;
    pthread_t thread;
} bounded_call;

static void *bounded_main(void *arg) {
    bounded_call *c = arg;
    c->status = c->kind == CALL_STREAM_SYNC ? sim_stream_synchronize(c->handle)
                                            : sim_event_synchronize(c->handle);
    harness_flag_raise(&c->done);
    return NULL;
}

/* Start the call on a helper thread. */
static void bounded_start(bounded_call *c, call_kind kind, uint64_t handle) {
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->handle = handle;
    harness_flag_init(&c->done);
    if (pthread_create(&c->thread, NULL, bounded_main, c) != 0) {
        fprintf(stderr, "test_handoff: pthread_create failed\n");
        exit(1);
    }
}

/* The call must not have returned yet (its work is held). */
static void bounded_still_waiting(bounded_call *c) { CHECK_EQ(harness_flag_count(&c->done), 0); }

/* The call must return within WAKE_MS; a lost wake-up ends the executable. */
static sim_status bounded_finish(bounded_call *c, const char *what) {
    if (!harness_flag_wait(&c->done, 1, WAKE_MS)) {
        fprintf(stderr, "test_handoff: FAILED: %s not woken within %u ms (lost wake-up)\n", what,
                (unsigned)WAKE_MS);
        _exit(1);
    }
    pthread_join(c->thread, NULL);
    harness_flag_destroy(&c->done);
    return c->status;
}

static void raise_flag(void *user, sim_status st) {
    (void)st;
    harness_flag_raise(user);
}

/* ---- the same results whatever the policy -------------------------------- */

/* Three streams pass a token around through events: step i runs on stream
 * i % 3 after the event of step i-1, appends i to a log and adds 1 to every
 * word of a buffer with a 4-block AICore kernel (the cores hand off to each
 * other and back). Every 8th step the host synchronises a stream or an
 * event; every 16th a two-lane graph (fork/join over two streams) is
 * replayed. Exact results: the log is 0..STEPS-1 in order, the buffer words
 * all equal STEPS, the graph's counter equals its replays. */
TEST(handoff_stress_gives_the_results_of_sequential_execution) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s[3] = {0, 0, 0};
    sim_event e[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        REQUIRE_SIM_OK(sim_stream_create(&s[i]));
        REQUIRE_SIM_OK(sim_event_create(&e[i], SIM_EVENT_DISABLE_TIMING));
    }
    sim_devptr log = dev_alloc(4 * (STEPS + 1));
    sim_devptr buf = dev_alloc(4 * WORDS);
    sim_devptr gbuf = dev_alloc(4 * WORDS);

    /* Graph: s0 forks to s1 (a 4-block add there, a 1-block add on s0), joins. */
    sim_graph g = 0;
    sim_graph_exec x = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(s[0], SIM_CAPTURE_MODE_GLOBAL));
    CHECK_SIM_OK(sim_event_record(e[0], s[0]));
    CHECK_SIM_OK(sim_stream_wait_event(s[1], e[0]));
    CHECK_SIM_OK(launch_add(s[1], &k, gbuf, WORDS / 2, 1, 4));
    CHECK_SIM_OK(launch_add(s[0], &k, gbuf + 4 * (WORDS / 2), WORDS / 2, 1, 0));
    CHECK_SIM_OK(sim_event_record(e[1], s[1]));
    CHECK_SIM_OK(sim_stream_wait_event(s[0], e[1]));
    CHECK_SIM_OK(sim_stream_end_capture(s[0], &g));
    CHECK_SIM_OK(sim_graph_instantiate(&x, g));
    CHECK_SIM_OK(sim_graph_destroy(g));

    uint32_t replays = 0;
    for (uint32_t i = 0; i < STEPS; i++) {
        sim_stream cur = s[i % 3];
        if (i > 0) CHECK_SIM_OK(sim_stream_wait_event(cur, e[(i - 1) % 3]));
        CHECK_SIM_OK(launch_append(cur, &k, log, i));
        CHECK_SIM_OK(launch_add(cur, &k, buf, WORDS, 1, 4));
        CHECK_SIM_OK(sim_event_record(e[i % 3], cur));
        if (i % 16 == 15 && x) {
            CHECK_SIM_OK(sim_graph_launch(x, cur));
            replays++;
            CHECK_SIM_OK(sim_event_record(e[i % 3], cur));
        }
        if (i % 8 == 7) {
            if (i % 16 == 7)
                CHECK_SIM_OK(sim_stream_synchronize(cur));
            else
                CHECK_SIM_OK(sim_event_synchronize(e[i % 3]));
        }
    }
    for (int i = 0; i < 3; i++) CHECK_SIM_OK(sim_stream_synchronize(s[i]));

    uint32_t *v = calloc(STEPS, sizeof *v);
    REQUIRE(v != NULL);
    CHECK_EQ(log_read(log, v, STEPS), STEPS);
    for (uint32_t i = 0; i < STEPS; i++)
        if (!CHECK_EQ(v[i], i)) break;
    free(v);
    uint32_t w[WORDS];
    dev_read(w, buf, sizeof w);
    for (int i = 0; i < WORDS; i++)
        if (!CHECK_EQ(w[i], STEPS)) break;
    dev_read(w, gbuf, sizeof w);
    for (int i = 0; i < WORDS; i++)
        if (!CHECK_EQ(w[i], replays)) break;
    CHECK_EQ(replays, STEPS / 16);

    if (x) CHECK_SIM_OK(sim_graph_exec_destroy(x));
    for (int i = 0; i < 3; i++) {
        CHECK_SIM_OK(sim_event_destroy(e[i]));
        CHECK_SIM_OK(sim_stream_destroy(s[i]));
    }
    dev_free(log);
    dev_free(buf);
    dev_free(gbuf);
    kernels_unload(&k);
}

/* ---- parked waiters are woken ---------------------------------------------- */

/* An idle stream's worker has parked; new work wakes it, and AICore cores
 * parked since their last job run a 4-block kernel. */
TEST(parked_stream_worker_and_cores_are_woken_by_new_work) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr buf = dev_alloc(4 * WORDS);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    for (int round = 1; round <= 3; round++) {
        sleep_ms(PARK_MS); /* the worker and the cores park */
        CHECK_SIM_OK(launch_add(s, &k, buf, WORDS, 1, 4));
        bounded_call c;
        bounded_start(&c, CALL_STREAM_SYNC, s);
        CHECK_SIM_OK(bounded_finish(&c, "a stream worker or a core after new work"));
        CHECK_EQ(dev_read_u32(buf), (uint32_t)round);
    }
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(buf);
    kernels_unload(&k);
}

/* The host has parked in sim_stream_synchronize and sim_event_synchronize
 * behind held work; the release wakes both. */
TEST(parked_host_synchronisers_are_woken_when_the_work_completes) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr buf = dev_alloc(4 * WORDS);
    int h = hold_kernel(k.add_u32, 1);
    CHECK_SIM_OK(launch_add(s, &k, buf, WORDS, 5, 0));
    CHECK_SIM_OK(sim_event_record(e, s));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    bounded_call cs, ce;
    bounded_start(&cs, CALL_STREAM_SYNC, s);
    bounded_start(&ce, CALL_EVENT_SYNC, e);
    sleep_ms(PARK_MS); /* both park */
    bounded_still_waiting(&cs);
    bounded_still_waiting(&ce);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(bounded_finish(&ce, "an event synchroniser"));
    CHECK_SIM_OK(bounded_finish(&cs, "a stream synchroniser"));
    CHECK_EQ(dev_read_u32(buf), 5);
    CHECK_SIM_OK(sim_event_destroy(e));
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(buf);
    kernels_unload(&k);
}

/* Stream b's worker has parked waiting on an event of stream a (whose record
 * is behind held work); the record wakes it. */
TEST(parked_event_wait_on_a_stream_is_woken_by_the_record) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr log = dev_alloc(4 * 3);
    int h = hold_kernel(k.append, 1);
    CHECK_SIM_OK(launch_append(a, &k, log, 1));
    CHECK_SIM_OK(sim_event_record(e, a));
    CHECK_SIM_OK(sim_stream_wait_event(b, e));
    CHECK_SIM_OK(launch_add(b, &k, log + 4, 1, 1, 0)); /* adds 1 to the appended value */
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    sleep_ms(PARK_MS); /* b's worker parks in the wait */
    CHECK_SIM(sim_stream_query(b), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(h));
    bounded_call c;
    bounded_start(&c, CALL_STREAM_SYNC, b);
    CHECK_SIM_OK(bounded_finish(&c, "a stream worker waiting on an event"));
    uint32_t v[2];
    dev_read(v, log, sizeof v);
    CHECK_EQ(v[0], 1);     /* one append */
    CHECK_EQ(v[1], 1 + 1); /* b's add ran after the append, not before it */
    CHECK_SIM_OK(sim_stream_synchronize(a));
    CHECK_SIM_OK(sim_event_destroy(e));
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    dev_free(log);
    kernels_unload(&k);
}

/* A two-lane graph's lane thread parks between launches; each launch, after
 * a pause, wakes it. */
TEST(parked_graph_lanes_are_woken_by_the_next_launch) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s0 = 0, s1 = 0;
    sim_event e0 = 0, e1 = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s0));
    REQUIRE_SIM_OK(sim_stream_create(&s1));
    REQUIRE_SIM_OK(sim_event_create(&e0, SIM_EVENT_DISABLE_TIMING));
    REQUIRE_SIM_OK(sim_event_create(&e1, SIM_EVENT_DISABLE_TIMING));
    sim_devptr buf = dev_alloc(8);
    sim_graph g = 0;
    sim_graph_exec x = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(s0, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_SIM_OK(sim_event_record(e0, s0));
    CHECK_SIM_OK(sim_stream_wait_event(s1, e0));
    CHECK_SIM_OK(launch_add(s1, &k, buf + 4, 1, 1, 0));
    CHECK_SIM_OK(launch_add(s0, &k, buf, 1, 1, 0));
    CHECK_SIM_OK(sim_event_record(e1, s1));
    CHECK_SIM_OK(sim_stream_wait_event(s0, e1));
    CHECK_SIM_OK(sim_stream_end_capture(s0, &g));
    CHECK_SIM_OK(sim_graph_instantiate(&x, g));
    CHECK_SIM_OK(sim_graph_destroy(g));
    for (int round = 1; x && round <= 3; round++) {
        sleep_ms(PARK_MS); /* the lane thread parks */
        CHECK_SIM_OK(sim_graph_launch(x, s0));
        bounded_call c;
        bounded_start(&c, CALL_STREAM_SYNC, s0);
        CHECK_SIM_OK(bounded_finish(&c, "a graph lane"));
        uint32_t v[2];
        dev_read(v, buf, sizeof v);
        CHECK_EQ(v[0], (uint32_t)round);
        CHECK_EQ(v[1], (uint32_t)round);
    }
    if (x) CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_SIM_OK(sim_event_destroy(e0));
    CHECK_SIM_OK(sim_event_destroy(e1));
    CHECK_SIM_OK(sim_stream_destroy(s0));
    CHECK_SIM_OK(sim_stream_destroy(s1));
    dev_free(buf);
    kernels_unload(&k);
}

/* Stream b's worker has parked waiting on an event whose record will never
 * run (held); losing the device wakes it: the wait ends and the host function
 * behind it runs. A reset then recovers the device (on device 1: the reset
 * frees everything of the device, which the harness's teardown check
 * accepts only for a device the test started with nothing on). */
TEST(parked_event_wait_is_woken_when_the_device_is_lost) {
    REQUIRE_DEVICES(2);
    REQUIRE_SIM_OK(sim_set_device(1));
    test_kernels k;
    if (!kernels_load(&k)) {
        sim_set_device(0);
        return;
    }
    sim_stream a = 0, b = 0;
    sim_event e = 0;
    CHECK_SIM_OK(sim_stream_create(&a));
    CHECK_SIM_OK(sim_stream_create(&b));
    CHECK_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr log = dev_alloc(4 * 2);
    harness_flag ran;
    harness_flag_init(&ran);
    int h = hold_kernel(k.append, 1);
    CHECK_SIM_OK(launch_append(a, &k, log, 1));
    CHECK_SIM_OK(sim_event_record(e, a));
    CHECK_SIM_OK(sim_stream_wait_event(b, e));
    CHECK_SIM_OK(sim_launch_host_func(b, raise_flag, &ran));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    sleep_ms(PARK_MS); /* b's worker parks in the wait */
    CHECK_EQ(harness_flag_count(&ran), 0);
    CHECK_SIM_OK(sim_device_make_fatal(1));
    if (!harness_flag_wait(&ran, 1, WAKE_MS)) {
        fprintf(stderr,
                "test_handoff: FAILED: an event wait not woken by the device's loss within %u ms "
                "(lost wake-up)\n",
                (unsigned)WAKE_MS);
        _exit(1);
    }
    CHECK_SIM_OK(sim_device_reset()); /* releases the hold; every object of device 1 is gone */
    harness_flag_destroy(&ran);
    CHECK_SIM_OK(sim_set_device(0));
}

/* The spin setting is read from the environment; a malformed value is
 * ignored (the sim warns and keeps its default) and the sim still works. */
TEST(handoff_setting_comes_from_the_environment) {
    const char *v = getenv("KCTX_SIM_SPIN_US");
    printf("  KCTX_SIM_SPIN_US=%s KCTX_SIM_SPINNERS=%s\n", v ? v : "(unset)",
           getenv("KCTX_SIM_SPINNERS") ? getenv("KCTX_SIM_SPINNERS") : "(unset)");
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
}
