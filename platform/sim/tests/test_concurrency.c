/*
 * Concurrency: several host threads driving their own streams on shared
 * devices (copies, kernels, events, captures and graph replays), waiting on
 * each other's events, and creating and destroying objects at the same time.
 * Run under ThreadSanitizer by the "concurrency" tier.
 */
#include "harness.h"
#include "kernels.h"

#include <pthread.h>
#include <string.h>

enum {
    THREADS = 4,
    ITERATIONS = 40,
    WORDS = 64
};

/* ---- independent streams on shared devices ----------------------------------- */

typedef struct worker {
    int index, device;
    sim_capture_mode capture_mode;
    const test_kernels *k;
    sim_devptr buf, graph_buf;
    pthread_barrier_t *start;
} worker;

static void *drive_own_stream(void *arg) {
    worker *w = arg;
    CHECK_SIM_OK(sim_set_device(w->device));
    sim_thread_calls_reset();
    sim_stream s = 0;
    sim_event done = 0;
    if (!CHECK_SIM_OK(sim_stream_create(&s)) ||
        !CHECK_SIM_OK(sim_event_create(&done, SIM_EVENT_DISABLE_TIMING))) {
        pthread_barrier_wait(w->start);
        return NULL;
    }
    pthread_barrier_wait(w->start); /* capture at the same time as the others */
    sim_graph g = 0;
    sim_graph_exec x = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(s, w->capture_mode));
    CHECK_SIM_OK(launch_add(s, w->k, w->graph_buf, WORDS, 1, 2));
    CHECK_SIM_OK(sim_stream_end_capture(s, &g));
    CHECK_SIM_OK(sim_graph_instantiate(&x, g));
    CHECK_SIM_OK(sim_graph_destroy(g));

    uint32_t src[WORDS], dst[WORDS];
    uint32_t add = (uint32_t)w->index + 1;
    for (int it = 0; it < ITERATIONS; it++) {
        for (int i = 0; i < WORDS; i++) src[i] = (uint32_t)(it * 1000 + i);
        memset(dst, 0, sizeof dst);
        CHECK_SIM_OK(sim_memcpy_async(DEVP(w->buf), src, sizeof src, SIM_COPY_HOST_TO_DEVICE, s));
        CHECK_SIM_OK(launch_add(s, w->k, w->buf, WORDS, add, 4));
        CHECK_SIM_OK(sim_memcpy_async(dst, DEVP(w->buf), sizeof dst, SIM_COPY_DEVICE_TO_HOST, s));
        CHECK_SIM_OK(sim_event_record(done, s));
        for (int r = 0; r < 3; r++) CHECK_SIM_OK(sim_graph_launch(x, s));
        CHECK_SIM_OK(sim_event_synchronize(done));
        for (int i = 0; i < WORDS; i++)
            if (!CHECK_EQ(dst[i], src[i] + add)) break;
    }
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_memcpy_async(dst, DEVP(w->graph_buf), sizeof dst, SIM_COPY_DEVICE_TO_HOST, s));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    for (int i = 0; i < WORDS; i++)
        if (!CHECK_EQ(dst[i], 3 * ITERATIONS)) break;
    /* Per-thread counters saw exactly this thread's calls. */
    CHECK_EQ(sim_thread_calls(SIM_OP_GRAPH_LAUNCH), 3 * ITERATIONS);
    CHECK_EQ(sim_thread_calls(SIM_OP_LAUNCH_KERNEL), ITERATIONS + 1);
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_SIM_OK(sim_event_destroy(done));
    CHECK_SIM_OK(sim_stream_destroy(s));
    return NULL;
}

TEST(threads_driving_their_own_streams_on_shared_devices_get_correct_results) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    test_kernels k[2];
    worker w[THREADS];
    pthread_barrier_t start;
    const int ndev = 2;
    for (int d = 0; d < ndev; d++) {
        REQUIRE_SIM_OK(sim_set_device(d));
        REQUIRE(kernels_load(&k[d]));
    }
    for (int i = 0; i < THREADS; i++) {
        w[i].index = i;
        w[i].device = i % ndev;
        const sim_capture_mode modes[] = {SIM_CAPTURE_MODE_GLOBAL, SIM_CAPTURE_MODE_THREAD_LOCAL,
                                          SIM_CAPTURE_MODE_RELAXED};
        w[i].capture_mode = modes[i % 3];
        w[i].k = &k[w[i].device];
        CHECK_SIM_OK(sim_set_device(w[i].device));
        w[i].buf = dev_alloc(WORDS * 4);
        w[i].graph_buf = dev_alloc(WORDS * 4);
        w[i].start = &start;
    }
    CHECK_SIM_OK(sim_set_device(0));
    pthread_barrier_init(&start, NULL, THREADS);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, drive_own_stream, &w[i]);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
        CHECK_SIM_OK(sim_set_device(w[i].device));
        dev_free(w[i].buf);
        dev_free(w[i].graph_buf);
    }
    for (int d = 0; d < ndev; d++) {
        CHECK_SIM_OK(sim_set_device(d));
        kernels_unload(&k[d]);
    }
    CHECK_SIM_OK(sim_set_device(0));
}

/* ---- global-mode captures while other threads work ------------------------------ */

typedef struct capturer {
    const test_kernels *k;
    sim_devptr buf;
    pthread_barrier_t *start;
    int captures;
} capturer;

static void *capture_repeatedly(void *arg) {
    capturer *c = arg;
    sim_stream s = 0;
    CHECK_SIM_OK(sim_stream_create(&s));
    pthread_barrier_wait(c->start);
    for (int i = 0; i < c->captures; i++) {
        sim_graph g = 0;
        sim_graph_exec x = 0;
        CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(s, c->k, c->buf, 4, 1, 0));
        if (!CHECK_SIM_OK(sim_stream_end_capture(s, &g))) continue;
        CHECK_SIM_OK(sim_graph_instantiate(&x, g));
        CHECK_SIM_OK(sim_graph_launch(x, s));
        CHECK_SIM_OK(sim_graph_exec_destroy(x));
        CHECK_SIM_OK(sim_graph_destroy(g));
    }
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    return NULL;
}

static void *relaxed_allocator(void *arg) {
    capturer *c = arg;
    sim_capture_mode mode = SIM_CAPTURE_MODE_RELAXED;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&mode));
    pthread_barrier_wait(c->start);
    for (int i = 0; i < c->captures; i++) {
        sim_devptr p = 0;
        if (CHECK_SIM_OK(sim_malloc(&p, 512))) CHECK_SIM_OK(sim_free(p));
    }
    return NULL;
}

TEST(global_captures_survive_relaxed_allocations_on_other_threads) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 4);
    capturer c[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (capturer){&k, dev_alloc(16), &start, 50};
        pthread_create(&t[i], NULL, i < 2 ? capture_repeatedly : relaxed_allocator, &c[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2; i++) CHECK_EQ(dev_read_u32(c[i].buf), 50);
    for (int i = 0; i < 4; i++) dev_free(c[i].buf);
    kernels_unload(&k);
}

/* ---- cross-thread event waits ------------------------------------------------------ */

typedef struct ring {
    const test_kernels *k;
    sim_event ev[THREADS];
    sim_devptr word[THREADS], copy[THREADS];
    pthread_barrier_t barrier;
} ring;

typedef struct ring_member {
    ring *r;
    int index;
} ring_member;

static void *ring_worker(void *arg) {
    ring_member *m = arg;
    ring *r = m->r;
    int me = m->index, next = (m->index + 1) % THREADS;
    sim_stream s = 0;
    CHECK_SIM_OK(sim_stream_create(&s));
    for (uint32_t it = 0; it < ITERATIONS; it++) {
        /* Produce: this thread's word, then its event. */
        CHECK_SIM_OK(launch_set(s, r->k, r->word[me], it * 10 + (uint32_t)me, SIM_TARGET_AICPU));
        CHECK_SIM_OK(sim_event_record(r->ev[me], s));
        pthread_barrier_wait(&r->barrier);
        /* Consume the neighbour's word, ordered by its event only. */
        uint32_t got = 0xFFFFFFFFu;
        CHECK_SIM_OK(sim_stream_wait_event(s, r->ev[next]));
        CHECK_SIM_OK(sim_memcpy_async(DEVP(r->copy[me]), DEVP(r->word[next]), 4,
                                      SIM_COPY_DEVICE_TO_DEVICE, s));
        CHECK_SIM_OK(sim_memcpy_async(&got, DEVP(r->copy[me]), 4, SIM_COPY_DEVICE_TO_HOST, s));
        CHECK_SIM_OK(sim_stream_synchronize(s));
        CHECK_EQ(got, it * 10 + (uint32_t)next);
        pthread_barrier_wait(&r->barrier); /* the neighbour may overwrite now */
    }
    CHECK_SIM_OK(sim_stream_destroy(s));
    return NULL;
}

TEST(threads_wait_on_each_others_events) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    ring r;
    r.k = &k;
    for (int i = 0; i < THREADS; i++) {
        CHECK_SIM_OK(sim_event_create(&r.ev[i], SIM_EVENT_DISABLE_TIMING));
        r.word[i] = dev_alloc(4);
        r.copy[i] = dev_alloc(4);
    }
    pthread_barrier_init(&r.barrier, NULL, THREADS);
    ring_member m[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        m[i] = (ring_member){&r, i};
        pthread_create(&t[i], NULL, ring_worker, &m[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&r.barrier);
    for (int i = 0; i < THREADS; i++) {
        CHECK_SIM_OK(sim_event_destroy(r.ev[i]));
        dev_free(r.word[i]);
        dev_free(r.copy[i]);
    }
    kernels_unload(&k);
}

/* ---- object churn ------------------------------------------------------------------------ */

static void *churn(void *arg) {
    int device = *(const int *)arg;
    CHECK_SIM_OK(sim_set_device(device));
    for (int i = 0; i < 200; i++) {
        sim_stream s = 0;
        sim_event e = 0;
        sim_devptr p = 0;
        if (!CHECK_SIM_OK(sim_stream_create(&s))) break;
        CHECK_SIM_OK(sim_event_create(&e, (unsigned)(i & 1)));
        CHECK_SIM_OK(sim_malloc(&p, 256 + (size_t)i));
        CHECK_SIM_OK(sim_memset_async(p, (uint8_t)i, 256, s));
        CHECK_SIM_OK(sim_event_record(e, s));
        CHECK_SIM_OK(sim_event_synchronize(e));
        uint32_t v = 0;
        CHECK_SIM_OK(sim_atomic_read_u32(p, &v));
        CHECK_EQ(v, (uint32_t)(uint8_t)i * 0x01010101u);
        CHECK_SIM_OK(sim_free(p));
        CHECK_SIM_OK(sim_event_destroy(e));
        CHECK_SIM_OK(sim_stream_destroy(s));
        /* Stale handles stay stale while other threads reuse slots. */
        CHECK_SIM(sim_stream_query(s), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_event_query(e), SIM_INVALID_HANDLE);
    }
    return NULL;
}

TEST(objects_created_and_destroyed_concurrently_stay_consistent) {
    pthread_t t[THREADS];
    int devices[THREADS];
    int ndev = harness_device_count();
    for (int i = 0; i < THREADS; i++) {
        devices[i] = i % ndev;
        pthread_create(&t[i], NULL, churn, &devices[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
}
