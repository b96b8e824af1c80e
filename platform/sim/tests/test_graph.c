/*
 * Graphs: replay equals eager execution, back-to-back replays, fork/join
 * across streams, concurrent branches, exclusive launches of one executable
 * graph, lifetime hooks, node counts (per stream too) and snapshots.
 */
#include "harness.h"
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

typedef struct g_env {
    test_kernels k;
    sim_stream s0, s1, s2;
    sim_event e0, e1, e2;
} g_env;

static int env_create(g_env *g) {
    memset(g, 0, sizeof *g);
    if (!kernels_load(&g->k)) return 0;
    return CHECK_SIM_OK(sim_stream_create(&g->s0)) & CHECK_SIM_OK(sim_stream_create(&g->s1)) &
           CHECK_SIM_OK(sim_stream_create(&g->s2)) &
           CHECK_SIM_OK(sim_event_create(&g->e0, SIM_EVENT_DISABLE_TIMING)) &
           CHECK_SIM_OK(sim_event_create(&g->e1, SIM_EVENT_DISABLE_TIMING)) &
           CHECK_SIM_OK(sim_event_create(&g->e2, SIM_EVENT_DISABLE_TIMING));
}

static void env_destroy(g_env *g) {
    sim_stream ss[3] = {g->s0, g->s1, g->s2};
    for (int i = 0; i < 3; i++)
        if (ss[i]) {
            sim_stream_synchronize(ss[i]);
            CHECK_SIM_OK(sim_stream_destroy(ss[i]));
        }
    sim_event es[3] = {g->e0, g->e1, g->e2};
    for (int i = 0; i < 3; i++)
        if (es[i]) CHECK_SIM_OK(sim_event_destroy(es[i]));
    kernels_unload(&g->k);
}

/* Capture on `s` with `record` filling it; returns an instantiated exec and
 * destroys the graph (the exec is a snapshot). 0 on failure. */
static sim_graph_exec capture_exec(sim_stream s, void (*record)(void *), void *arg, size_t *nodes) {
    if (!CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL))) return 0;
    record(arg);
    sim_graph g = 0;
    if (!CHECK_SIM_OK(sim_stream_end_capture(s, &g))) return 0;
    if (nodes) CHECK_SIM_OK(sim_graph_node_count(g, nodes));
    sim_graph_exec x = 0;
    CHECK_SIM_OK(sim_graph_instantiate(&x, g));
    CHECK_SIM_OK(sim_graph_destroy(g));
    return x;
}

/* ---- replay correctness ------------------------------------------------------- */

enum {
    SEQ_N = 256
};
typedef struct sequence {
    g_env *g;
    sim_devptr a, b, c, d, ints;
    const float *host_a, *host_b;
    const uint32_t *host_ints;
    float *out;
    uint32_t *out_ints;
} sequence;

static void record_sequence(void *arg) {
    sequence *q = arg;
    sim_stream s = q->g->s0;
    const test_kernels *k = &q->g->k;
    CHECK_SIM_OK(sim_memset_async(q->c, 0, SEQ_N * 4, s));
    CHECK_SIM_OK(sim_memcpy_async(DEVP(q->a), q->host_a, SEQ_N * 4, SIM_COPY_HOST_TO_DEVICE, s));
    CHECK_SIM_OK(sim_memcpy_async(DEVP(q->b), q->host_b, SEQ_N * 4, SIM_COPY_HOST_TO_DEVICE, s));
    struct vadd_params vp = {q->a, q->b, q->c, SEQ_N, 0};
    CHECK_SIM_OK(sim_launch_kernel(s, k->vadd_f32, SIM_TARGET_AICORE, 4, &vp, sizeof vp));
    CHECK_SIM_OK(sim_memcpy_async(DEVP(q->d), DEVP(q->c), SEQ_N * 4, SIM_COPY_DEVICE_TO_DEVICE, s));
    CHECK_SIM_OK(sim_memset_async(q->d, 0, 16, s));
    CHECK_SIM_OK(
        sim_memcpy_async(DEVP(q->ints), q->host_ints, SEQ_N * 4, SIM_COPY_HOST_TO_DEVICE, s));
    CHECK_SIM_OK(launch_add(s, k, q->ints, SEQ_N, 3, 0));
    CHECK_SIM_OK(launch_add(s, k, q->ints, SEQ_N, 5, 3));
    CHECK_SIM_OK(sim_memcpy_async(q->out, DEVP(q->d), SEQ_N * 4, SIM_COPY_DEVICE_TO_HOST, s));
    CHECK_SIM_OK(
        sim_memcpy_async(q->out_ints, DEVP(q->ints), SEQ_N * 4, SIM_COPY_DEVICE_TO_HOST, s));
}

TEST(graph_replay_computes_the_same_results_as_eager_execution) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    static float ha[SEQ_N], hb[SEQ_N], out_eager[SEQ_N], out_graph[SEQ_N];
    static uint32_t hi[SEQ_N], ints_eager[SEQ_N], ints_graph[SEQ_N];
    for (int i = 0; i < SEQ_N; i++) {
        ha[i] = (float)i * 0.5f;
        hb[i] = (float)(SEQ_N - i);
        hi[i] = (uint32_t)i * 7u;
    }
    sequence q = {&g,
                  dev_alloc(SEQ_N * 4),
                  dev_alloc(SEQ_N * 4),
                  dev_alloc(SEQ_N * 4),
                  dev_alloc(SEQ_N * 4),
                  dev_alloc(SEQ_N * 4),
                  ha,
                  hb,
                  hi,
                  out_eager,
                  ints_eager};
    record_sequence(&q);
    CHECK_SIM_OK(sim_stream_synchronize(g.s0));
    CHECK(out_eager[0] == 0.0f && out_eager[4] == ha[4] + hb[4]);
    CHECK_EQ(ints_eager[10], 70 + 8);

    /* Capture the same sequence writing to other host buffers; clear the
     * device buffers so only the replay can produce the results. */
    q.out = out_graph;
    q.out_ints = ints_graph;
    size_t nodes = 0;
    sim_graph_exec x = capture_exec(g.s0, record_sequence, &q, &nodes);
    CHECK_EQ(nodes, 11);
    for (int replay = 0; replay < 3 && x; replay++) {
        CHECK_SIM_OK(sim_memset_async(q.c, 0xFF, SEQ_N * 4, g.s0));
        CHECK_SIM_OK(sim_memset_async(q.d, 0xFF, SEQ_N * 4, g.s0));
        CHECK_SIM_OK(sim_memset_async(q.ints, 0xFF, SEQ_N * 4, g.s0));
        memset(out_graph, 0, sizeof out_graph);
        memset(ints_graph, 0, sizeof ints_graph);
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_stream_synchronize(g.s0));
        CHECK(memcmp(out_eager, out_graph, sizeof out_graph) == 0);
        CHECK(memcmp(ints_eager, ints_graph, sizeof ints_graph) == 0);
    }
    if (x) CHECK_SIM_OK(sim_graph_exec_destroy(x));
    dev_free(q.a);
    dev_free(q.b);
    dev_free(q.c);
    dev_free(q.d);
    dev_free(q.ints);
    env_destroy(&g);
}

typedef struct add_rec {
    g_env *g;
    sim_devptr buf;
    uint32_t n, value, blocks;
} add_rec;

static void record_add(void *arg) {
    add_rec *r = arg;
    CHECK_SIM_OK(launch_add(r->g->s0, &r->g->k, r->buf, r->n, r->value, r->blocks));
}

TEST(graph_replays_back_to_back_without_host_sync_are_correct) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    enum {
        N = 256,
        REPLAYS = 100
    };
    add_rec r = {&g, dev_alloc(N * 4), N, 3, 4};
    sim_graph_exec x = capture_exec(g.s0, record_add, &r, NULL);
    if (x) {
        for (int i = 0; i < REPLAYS; i++) CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_stream_synchronize(g.s0));
        uint32_t out[N];
        dev_read(out, r.buf, sizeof out);
        for (int i = 0; i < N; i++)
            if (!CHECK_EQ(out[i], REPLAYS * 3)) break;
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    dev_free(r.buf);
    env_destroy(&g);
}

typedef struct fork_rec {
    g_env *g;
    sim_devptr log, a, b;
} fork_rec;

static void record_fork_join(void *arg) {
    fork_rec *f = arg;
    g_env *g = f->g;
    CHECK_SIM_OK(launch_append(g->s0, &g->k, f->log, 1));
    CHECK_SIM_OK(sim_event_record(g->e0, g->s0));
    CHECK_SIM_OK(sim_stream_wait_event(g->s1, g->e0));
    CHECK_SIM_OK(sim_stream_wait_event(g->s2, g->e0));
    CHECK_SIM_OK(launch_append(g->s1, &g->k, f->log, 2));
    CHECK_SIM_OK(launch_add(g->s1, &g->k, f->a, 1, 1, 2));
    CHECK_SIM_OK(sim_event_record(g->e1, g->s1));
    CHECK_SIM_OK(launch_append(g->s2, &g->k, f->log, 3));
    CHECK_SIM_OK(launch_add(g->s2, &g->k, f->b, 1, 2, 0));
    CHECK_SIM_OK(sim_event_record(g->e2, g->s2));
    CHECK_SIM_OK(sim_stream_wait_event(g->s0, g->e1));
    CHECK_SIM_OK(sim_stream_wait_event(g->s0, g->e2));
    CHECK_SIM_OK(launch_append(g->s0, &g->k, f->log, 4));
}

TEST(fork_join_across_three_streams_replays_correctly) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    fork_rec f = {&g, dev_alloc(4 * 9), dev_alloc(4), dev_alloc(4)};
    size_t nodes = 0;
    sim_graph_exec x = capture_exec(g.s0, record_fork_join, &f, &nodes);
    CHECK_EQ(nodes, 6);
    if (x) {
        /* Two replays back to back, the second on another stream. */
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_graph_launch(x, g.s1));
        CHECK_SIM_OK(sim_stream_synchronize(g.s0));
        CHECK_SIM_OK(sim_stream_synchronize(g.s1));
        uint32_t v[8];
        CHECK_EQ(log_read(f.log, v, 8), 8);
        for (int r = 0; r < 2; r++) {
            const uint32_t *w = v + 4 * r;
            CHECK_EQ(w[0], 1);
            CHECK((w[1] == 2 && w[2] == 3) || (w[1] == 3 && w[2] == 2));
            CHECK_EQ(w[3], 4);
        }
        CHECK_EQ(dev_read_u32(f.a), 2);
        CHECK_EQ(dev_read_u32(f.b), 4);
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    dev_free(f.log);
    dev_free(f.a);
    dev_free(f.b);
    env_destroy(&g);
}

/* Branch A (AICPU) waits for word 0 then sets word 1; branch B (AICore) sets
 * word 0 then waits for word 1. Any serialisation of the two branches
 * deadlocks (each wait times out and records SIM_SVC_TIMEOUT). */
typedef struct pingpong {
    g_env *g;
    sim_devptr words; /* [0] w0, [1] w1, [2] result A, [3] result B */
} pingpong;

static void record_pingpong(void *arg) {
    pingpong *p = arg;
    g_env *g = p->g;
    CHECK_SIM_OK(sim_memset_async(p->words, 0, 8, g->s0));
    CHECK_SIM_OK(sim_memset_async(p->words + 8, 0xFF, 8, g->s0));
    CHECK_SIM_OK(sim_event_record(g->e0, g->s0));
    CHECK_SIM_OK(sim_stream_wait_event(g->s1, g->e0));
    CHECK_SIM_OK(launch_wait(g->s0, &g->k, p->words, 0, TEST_WAIT_TIMEOUT_NS, p->words + 8,
                             SIM_TARGET_AICPU));
    CHECK_SIM_OK(launch_set(g->s0, &g->k, p->words + 4, 1, SIM_TARGET_AICPU));
    CHECK_SIM_OK(launch_set(g->s1, &g->k, p->words, 1, SIM_TARGET_AICORE));
    CHECK_SIM_OK(launch_wait(g->s1, &g->k, p->words + 4, 0, TEST_WAIT_TIMEOUT_NS, p->words + 12,
                             SIM_TARGET_AICORE));
    CHECK_SIM_OK(sim_event_record(g->e1, g->s1));
    CHECK_SIM_OK(sim_stream_wait_event(g->s0, g->e1));
}

static void check_pingpong(const pingpong *p) {
    uint32_t w[4];
    dev_read(w, p->words, sizeof w);
    CHECK_EQ(w[0], 1);
    CHECK_EQ(w[1], 1);
    CHECK_EQ(w[2], WAIT_RESULT_OK);
    CHECK_EQ(w[3], WAIT_RESULT_OK);
}

TEST(aicpu_and_aicore_branches_of_one_graph_run_concurrently_on_replay) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    pingpong p = {&g, dev_alloc(16)};
    /* Eagerly, the two streams overlap. */
    record_pingpong(&p);
    CHECK_SIM_OK(sim_stream_synchronize(g.s0));
    check_pingpong(&p);
    /* The replay must overlap them too. */
    sim_graph_exec x = capture_exec(g.s0, record_pingpong, &p, NULL);
    if (x) {
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_stream_synchronize(g.s0));
        check_pingpong(&p);
        CHECK_SIM_OK(sim_graph_launch(x, g.s2));
        CHECK_SIM_OK(sim_graph_launch(x, g.s2));
        CHECK_SIM_OK(sim_stream_synchronize(g.s2));
        check_pingpong(&p);
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    dev_free(p.words);
    env_destroy(&g);
}

/* ---- exclusive launches ---------------------------------------------------------- */

typedef struct excl_rec {
    g_env *g;
    probe_kernels *pk;
    struct exclusive_params params;
    sim_devptr add_buf;
} excl_rec;

static void record_enter_exit(void *arg) {
    excl_rec *e = arg;
    sim_stream s = e->g->s0;
    CHECK_SIM_OK(sim_launch_kernel(s, e->pk->exclusive_enter, SIM_TARGET_AICPU, 1, &e->params,
                                   sizeof e->params));
    CHECK_SIM_OK(sim_launch_kernel(s, e->pk->exclusive_exit, SIM_TARGET_AICPU, 1, &e->params,
                                   sizeof e->params));
}

TEST(launches_of_one_exec_on_two_streams_never_overlap) {
    g_env g;
    probe_kernels pk;
    if (!env_create(&g) || !probes_load(&pk)) {
        env_destroy(&g);
        return;
    }
    sim_devptr words = dev_alloc(8);
    excl_rec e = {&g, &pk, {words, words + 4}, 0};
    sim_graph_exec x = capture_exec(g.s0, record_enter_exit, &e, NULL);
    if (x) {
        /* Hold the first replay between enter and exit; the second replay's
         * enter must not run until the first replay has finished. */
        int in_first = hold_kernel(pk.exclusive_exit, 1);
        int second_enter = hold_kernel(pk.exclusive_enter, 2);
        CHECK_SIM_OK(sim_graph_launch(x, g.s1));
        CHECK_SIM_OK(sim_graph_launch(x, g.s2));
        CHECK_SIM_OK(sim_hold_wait_reached(in_first, HOLD_REACH_MS));
        CHECK_EQ(dev_peek_u32(words), 1);
        CHECK_SIM(sim_hold_wait_reached(second_enter, 300), SIM_TIMEOUT);
        CHECK_EQ(dev_peek_u32(words + 4), 1);
        CHECK_SIM_OK(sim_hold_release(in_first));
        CHECK_SIM_OK(sim_hold_wait_reached(second_enter, HOLD_REACH_MS));
        CHECK_SIM_OK(sim_hold_release(second_enter));
        CHECK_SIM_OK(sim_stream_synchronize(g.s1));
        CHECK_SIM_OK(sim_stream_synchronize(g.s2));
        CHECK_EQ(dev_peek_u32(words), 0);
        CHECK_EQ(dev_peek_u32(words + 4), 2);
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    dev_free(words);
    probes_unload(&pk);
    env_destroy(&g);
}

static void record_exclusive_add(void *arg) {
    excl_rec *e = arg;
    sim_stream s = e->g->s0;
    CHECK_SIM_OK(
        sim_launch_kernel(s, e->pk->exclusive, SIM_TARGET_AICPU, 1, &e->params, sizeof e->params));
    CHECK_SIM_OK(launch_add(s, &e->g->k, e->add_buf, 64, 1, 4));
    CHECK_SIM_OK(
        sim_launch_kernel(s, e->pk->exclusive, SIM_TARGET_AICORE, 1, &e->params, sizeof e->params));
}

TEST(many_launches_of_one_exec_on_three_streams_run_one_at_a_time) {
    g_env g;
    probe_kernels pk;
    if (!env_create(&g) || !probes_load(&pk)) {
        env_destroy(&g);
        return;
    }
    enum {
        LAUNCHES = 60
    };
    sim_devptr words = dev_alloc(8);
    excl_rec e = {&g, &pk, {words, words + 4}, dev_alloc(64 * 4)};
    sim_graph_exec x = capture_exec(g.s0, record_exclusive_add, &e, NULL);
    if (x) {
        sim_stream ss[3] = {g.s0, g.s1, g.s2};
        for (int i = 0; i < LAUNCHES; i++) CHECK_SIM_OK(sim_graph_launch(x, ss[i % 3]));
        for (int i = 0; i < 3; i++) CHECK_SIM_OK(sim_stream_synchronize(ss[i])); /* no error 3 */
        CHECK_EQ(dev_peek_u32(words + 4), 2 * LAUNCHES);
        uint32_t out[64];
        dev_read(out, e.add_buf, sizeof out);
        for (int i = 0; i < 64; i++)
            if (!CHECK_EQ(out[i], LAUNCHES)) break;
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    dev_free(words);
    dev_free(e.add_buf);
    probes_unload(&pk);
    env_destroy(&g);
}

/* ---- lifetime hooks --------------------------------------------------------------- */

typedef struct hook_state {
    harness_flag ran;
    sim_status api_status;
} hook_state;

static void hook_fn(void *user) {
    hook_state *h = user;
    sim_stream s = 0;
    h->api_status = sim_stream_create(&s);
    harness_flag_raise(&h->ran);
}

static uint64_t hooks_pending(int device) {
    sim_object_counts c = SIM_OBJECT_COUNTS_INIT;
    CHECK_SIM_OK(sim_object_counts_get(device, &c));
    return c.hooks_pending;
}

TEST(graph_hook_runs_once_after_graph_and_exec_are_destroyed_and_launches_completed) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    hook_state hs;
    harness_flag_init(&hs.ran);
    hs.api_status = SIM_OK;
    uint64_t pending_before = hooks_pending(0);
    add_rec r = {&g, dev_alloc(4), 1, 1, 0};
    CHECK_SIM_OK(sim_stream_begin_capture(g.s0, SIM_CAPTURE_MODE_GLOBAL));
    record_add(&r);
    sim_graph graph = 0;
    sim_graph_exec x = 0;
    CHECK_SIM_OK(sim_stream_end_capture(g.s0, &graph));
    CHECK_SIM_OK(sim_graph_attach_hook(graph, hook_fn, &hs));
    CHECK_EQ(hooks_pending(0), pending_before + 1);
    CHECK_SIM_OK(sim_graph_instantiate(&x, graph));
    int h = hold_kernel(g.k.add_u32, 1);
    CHECK_SIM_OK(sim_graph_launch(x, g.s1));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM_OK(sim_graph_destroy(graph));
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    /* A launch is still in flight: the hook must not have run. */
    CHECK_EQ(harness_flag_count(&hs.ran), 0);
    CHECK_EQ(hooks_pending(0), pending_before + 1);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(g.s1));
    CHECK(harness_flag_wait(&hs.ran, 1, HOLD_REACH_MS));
    CHECK_EQ(dev_read_u32(r.buf), 1); /* the launch completed */
    CHECK_SIM_OK(sim_device_synchronize());
    CHECK_EQ(harness_flag_count(&hs.ran), 1);
    CHECK_EQ(hooks_pending(0), pending_before);
    CHECK_SIM(hs.api_status, SIM_NOT_PERMITTED); /* hooks must not call the sim */
    harness_flag_destroy(&hs.ran);
    dev_free(r.buf);
    env_destroy(&g);
}

TEST(graph_hook_waits_for_every_exec_instantiated_after_attach) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    hook_state hs;
    harness_flag_init(&hs.ran);
    hs.api_status = SIM_OK;
    add_rec r = {&g, dev_alloc(4), 1, 1, 0};
    CHECK_SIM_OK(sim_stream_begin_capture(g.s0, SIM_CAPTURE_MODE_GLOBAL));
    record_add(&r);
    sim_graph graph = 0;
    sim_graph_exec x1 = 0, x2 = 0;
    CHECK_SIM_OK(sim_stream_end_capture(g.s0, &graph));
    CHECK_SIM_OK(sim_graph_attach_hook(graph, hook_fn, &hs));
    CHECK_SIM_OK(sim_graph_instantiate(&x1, graph));
    CHECK_SIM_OK(sim_graph_instantiate(&x2, graph));
    CHECK_SIM_OK(sim_graph_destroy(graph));
    CHECK_EQ(harness_flag_count(&hs.ran), 0);
    CHECK_SIM_OK(sim_graph_launch(x1, g.s0));
    CHECK_SIM_OK(sim_graph_exec_destroy(x1));
    CHECK_SIM_OK(sim_stream_synchronize(g.s0));
    CHECK_EQ(harness_flag_count(&hs.ran), 0); /* x2 still holds it */
    CHECK_SIM_OK(sim_graph_launch(x2, g.s0));
    CHECK_SIM_OK(sim_stream_synchronize(g.s0));
    CHECK_EQ(harness_flag_count(&hs.ran), 0);
    CHECK_SIM_OK(sim_graph_exec_destroy(x2));
    CHECK(harness_flag_wait(&hs.ran, 1, HOLD_REACH_MS));
    CHECK_EQ(dev_read_u32(r.buf), 2);
    harness_flag_destroy(&hs.ran);
    dev_free(r.buf);
    env_destroy(&g);
}

TEST(graph_hook_runs_for_an_invalidated_capture) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    hook_state hs;
    harness_flag_init(&hs.ran);
    hs.api_status = SIM_OK;
    CHECK_SIM_OK(sim_stream_begin_capture(g.s0, SIM_CAPTURE_MODE_GLOBAL));
    sim_graph graph = 0;
    CHECK_SIM_OK(sim_stream_get_capture_info(g.s0, NULL, NULL, &graph));
    CHECK_SIM_OK(sim_graph_attach_hook(graph, hook_fn, &hs));
    CHECK_SIM_OK(sim_launch_kernel(g.s0, g.k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM(sim_stream_query(g.s0), SIM_CAPTURE_UNSUPPORTED); /* invalidates */
    sim_graph ended = 0;
    CHECK_SIM(sim_stream_end_capture(g.s0, &ended), SIM_CAPTURE_INVALIDATED);
    CHECK(harness_flag_wait(&hs.ran, 1, HOLD_REACH_MS));
    CHECK_SIM_OK(sim_device_synchronize());
    CHECK_EQ(harness_flag_count(&hs.ran), 1);
    harness_flag_destroy(&hs.ran);
    env_destroy(&g);
}

TEST(graph_hook_runs_when_a_reset_abandons_the_capture) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    hook_state hs;
    harness_flag_init(&hs.ran);
    hs.api_status = SIM_OK;
    REQUIRE_SIM_OK(sim_set_device(1));
    sim_stream s = 0;
    sim_graph graph = 0;
    CHECK_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_RELAXED));
    CHECK_SIM_OK(sim_stream_get_capture_info(s, NULL, NULL, &graph));
    CHECK_SIM_OK(sim_graph_attach_hook(graph, hook_fn, &hs));
    CHECK_SIM_OK(sim_device_reset());
    CHECK(harness_flag_wait(&hs.ran, 1, HOLD_REACH_MS));
    CHECK_EQ(hooks_pending(1), 0);
    CHECK_SIM_OK(sim_set_device(0));
    harness_flag_destroy(&hs.ran);
}

/* ---- nodes, snapshots, launches ------------------------------------------------------ */

static void count_host(void *user, sim_status st) {
    (void)st;
    (*(int *)user)++;
}

TEST(graph_node_count_counts_kernels_copies_fills_and_host_functions) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    sim_devptr buf = dev_alloc(64);
    uint32_t host[4] = {0};
    int calls = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(g.s0, SIM_CAPTURE_MODE_GLOBAL));
    sim_graph graph = 0;
    size_t n = 99;
    CHECK_SIM_OK(sim_stream_get_capture_info(g.s0, NULL, NULL, &graph));
    CHECK_SIM_OK(launch_add(g.s0, &g.k, buf, 4, 1, 0));    /* 1 */
    CHECK_SIM_OK(sim_memset_async(buf + 16, 0, 16, g.s0)); /* 2 */
    CHECK_SIM_OK(
        sim_memcpy_async(DEVP(buf + 32), DEVP(buf), 16, SIM_COPY_DEVICE_TO_DEVICE, g.s0)); /* 3 */
    CHECK_SIM_OK(sim_event_record(g.e0, g.s0)); /* edges, not nodes */
    CHECK_SIM_OK(sim_stream_wait_event(g.s1, g.e0));
    CHECK_SIM_OK(sim_launch_host_func(g.s1, count_host, &calls));                       /* 4 */
    CHECK_SIM_OK(sim_memcpy_async(host, DEVP(buf), 16, SIM_COPY_DEVICE_TO_HOST, g.s1)); /* 5 */
    CHECK_SIM_OK(sim_event_record(g.e1, g.s1));
    CHECK_SIM_OK(sim_stream_wait_event(g.s0, g.e1));
    CHECK_SIM_OK(sim_launch_kernel(g.s0, g.k.noop, SIM_TARGET_AICORE, 4, NULL, 0)); /* 6 */
    sim_graph ended = 0;
    CHECK_SIM_OK(sim_stream_end_capture(g.s0, &ended));
    CHECK_EQ(ended, graph);
    CHECK_SIM_OK(sim_graph_node_count(ended, &n));
    CHECK_EQ(n, 6);
    /* which stream each node came from: 4 on s0, 2 on s1, none on s2 */
    size_t on[3] = {99, 99, 99};
    CHECK_SIM_OK(sim_graph_stream_node_count(ended, g.s0, &on[0]));
    CHECK_SIM_OK(sim_graph_stream_node_count(ended, g.s1, &on[1]));
    CHECK_SIM_OK(sim_graph_stream_node_count(ended, g.s2, &on[2]));
    CHECK(on[0] == 4 && on[1] == 2 && on[2] == 0);
    CHECK_SIM(sim_graph_stream_node_count(ended, g.s0, NULL), SIM_INVALID_VALUE);
    CHECK_SIM(sim_graph_stream_node_count(g.s0, g.s0, &on[0]), SIM_INVALID_HANDLE);
    CHECK_EQ(calls, 0); /* captured, not run */
    sim_graph_exec x = 0;
    if (CHECK_SIM_OK(sim_graph_instantiate(&x, ended))) {
        for (int i = 0; i < 3; i++) CHECK_SIM_OK(sim_graph_launch(x, g.s2));
        CHECK_SIM_OK(sim_stream_synchronize(g.s2));
        CHECK_EQ(calls, 3); /* the host function runs on every replay */
        CHECK_EQ(host[0], 3);
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    CHECK_SIM_OK(sim_graph_destroy(ended));
    dev_free(buf);
    env_destroy(&g);
}

TEST(empty_capture_gives_an_empty_graph_that_launches) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    CHECK_SIM_OK(sim_stream_begin_capture(g.s0, SIM_CAPTURE_MODE_GLOBAL));
    sim_graph graph = 0;
    sim_graph_exec x = 0;
    size_t n = 99;
    CHECK_SIM_OK(sim_stream_end_capture(g.s0, &graph));
    CHECK_SIM_OK(sim_graph_node_count(graph, &n));
    CHECK_EQ(n, 0);
    if (CHECK_SIM_OK(sim_graph_instantiate(&x, graph))) {
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_stream_synchronize(g.s0));
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    CHECK_SIM_OK(sim_graph_destroy(graph));
    env_destroy(&g);
}

TEST(captured_kernel_params_are_snapshots) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    sim_devptr buf = dev_alloc(16), other = dev_alloc(16);
    struct add_u32_params p = {buf, 4, 2};
    CHECK_SIM_OK(sim_stream_begin_capture(g.s0, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_SIM_OK(sim_launch_kernel(g.s0, g.k.add_u32, SIM_TARGET_AICORE, 2, &p, sizeof p));
    sim_graph graph = 0;
    CHECK_SIM_OK(sim_stream_end_capture(g.s0, &graph));
    p.buf = other;
    p.value = 50;
    sim_graph_exec x = 0;
    if (CHECK_SIM_OK(sim_graph_instantiate(&x, graph))) {
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_stream_synchronize(g.s0));
        CHECK_EQ(dev_read_u32(buf + 12), 4);
        CHECK_EQ(dev_read_u32(other), 0);
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    CHECK_SIM_OK(sim_graph_destroy(graph));
    dev_free(buf);
    dev_free(other);
    env_destroy(&g);
}

TEST(exec_is_a_snapshot_that_outlives_its_graph) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    add_rec r = {&g, dev_alloc(4), 1, 10, 0};
    sim_graph_exec x = capture_exec(g.s0, record_add, &r, NULL); /* graph destroyed inside */
    if (x) {
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_stream_synchronize(g.s0));
        CHECK_EQ(dev_read_u32(r.buf), 10);
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    dev_free(r.buf);
    env_destroy(&g);
}

TEST(exec_destroyed_with_launches_enqueued_still_completes_them) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    add_rec r = {&g, dev_alloc(4), 1, 1, 0};
    sim_graph_exec x = capture_exec(g.s0, record_add, &r, NULL);
    if (x) {
        int h = hold_kind(SIM_EXEC_GRAPH, 1);
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_graph_launch(x, g.s0));
        CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
        CHECK_SIM(sim_graph_launch(x, g.s0), SIM_INVALID_HANDLE);
        CHECK_SIM_OK(sim_hold_release(h));
        CHECK_SIM_OK(sim_stream_synchronize(g.s0));
        CHECK_EQ(dev_read_u32(r.buf), 2);
    }
    dev_free(r.buf);
    env_destroy(&g);
}

TEST(graph_launch_during_capture_is_not_supported) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    add_rec r = {&g, dev_alloc(4), 1, 1, 0};
    sim_graph_exec x = capture_exec(g.s0, record_add, &r, NULL);
    if (x) {
        CHECK_SIM_OK(sim_stream_begin_capture(g.s1, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM(sim_graph_launch(x, g.s1), SIM_NOT_SUPPORTED);
        /* Whether the refusal invalidated the capture is not specified:
         * end it either way. */
        sim_graph graph = 0;
        sim_status st = sim_stream_end_capture(g.s1, &graph);
        CHECK_SIM2(st, SIM_OK, SIM_CAPTURE_INVALIDATED);
        if (st == SIM_OK) CHECK_SIM_OK(sim_graph_destroy(graph));
        CHECK_SIM_OK(sim_stream_synchronize(g.s1));
        CHECK_EQ(dev_read_u32(r.buf), 0);
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    dev_free(r.buf);
    env_destroy(&g);
}

typedef struct error_rec {
    g_env *g;
} error_rec;

static void record_error(void *arg) {
    error_rec *e = arg;
    CHECK_SIM_OK(launch_error(e->g->s0, &e->g->k, 77, 1));
}

TEST(kernel_error_in_a_replay_fails_the_stream) {
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    error_rec e = {&g};
    sim_graph_exec x = capture_exec(g.s0, record_error, &e, NULL);
    if (x) {
        CHECK_SIM_OK(sim_graph_launch(x, g.s1));
        CHECK_SIM(sim_stream_synchronize(g.s1), SIM_KERNEL_ERROR);
        /* Another stream can still launch... and fails the same way. */
        CHECK_SIM_OK(sim_graph_launch(x, g.s2));
        CHECK_SIM(sim_stream_synchronize(g.s2), SIM_KERNEL_ERROR);
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    env_destroy(&g);
}

TEST(graph_instantiate_and_launch_reject_bad_arguments) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    g_env g;
    if (!env_create(&g)) {
        env_destroy(&g);
        return;
    }
    add_rec r = {&g, dev_alloc(4), 1, 1, 0};
    sim_graph_exec x = capture_exec(g.s0, record_add, &r, NULL);
    if (x) {
        /* An exec of device 0 on a stream of device 1. */
        sim_stream s1 = 0;
        CHECK_SIM_OK(sim_set_device(1));
        CHECK_SIM_OK(sim_stream_create(&s1));
        CHECK_SIM_OK(sim_set_device(0));
        CHECK_SIM(sim_graph_launch(x, s1), SIM_INVALID_HANDLE);
        CHECK_SIM_OK(sim_stream_destroy(s1));
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
    }
    dev_free(r.buf);
    env_destroy(&g);
}
