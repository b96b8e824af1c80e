/*
 * Stream capture (CUDA semantics): modes and the per-thread mode exchange,
 * fork/join through events, the capture-status query, and every capture
 * error code with its effect on the capture.
 */
#include "harness.h"
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#define NO_GRAPH ((sim_graph)0x5E471E1ull) /* sentinel: end_capture must not write it */

typedef struct cap {
    test_kernels k;
    sim_stream s, s2, s3;
    sim_event e, e2, e3;
    sim_devptr buf;
} cap;

static int cap_create(cap *c) {
    memset(c, 0, sizeof *c);
    if (!kernels_load(&c->k)) return 0;
    int ok = CHECK_SIM_OK(sim_stream_create(&c->s)) & CHECK_SIM_OK(sim_stream_create(&c->s2)) &
             CHECK_SIM_OK(sim_stream_create(&c->s3)) &
             CHECK_SIM_OK(sim_event_create(&c->e, SIM_EVENT_DISABLE_TIMING)) &
             CHECK_SIM_OK(sim_event_create(&c->e2, SIM_EVENT_DISABLE_TIMING)) &
             CHECK_SIM_OK(sim_event_create(&c->e3, SIM_EVENT_DISABLE_TIMING));
    c->buf = dev_alloc(4096);
    return ok && c->buf;
}

static void cap_destroy(cap *c) {
    sim_stream ss[3] = {c->s, c->s2, c->s3};
    for (int i = 0; i < 3; i++)
        if (ss[i]) {
            CHECK_SIM_OK(sim_stream_synchronize(ss[i]));
            CHECK_SIM_OK(sim_stream_destroy(ss[i]));
        }
    sim_event es[3] = {c->e, c->e2, c->e3};
    for (int i = 0; i < 3; i++)
        if (es[i]) CHECK_SIM_OK(sim_event_destroy(es[i]));
    dev_free(c->buf);
    kernels_unload(&c->k);
}

static sim_capture_status status_of(sim_stream s) {
    sim_capture_status st = (sim_capture_status)-1;
    CHECK_SIM_OK(sim_stream_get_capture_info(s, &st, NULL, NULL));
    return st;
}

static uint64_t id_of(sim_stream s) {
    uint64_t id = 0;
    CHECK_SIM_OK(sim_stream_get_capture_info(s, NULL, &id, NULL));
    return id;
}

/* End a capture expected to succeed, check its node count, destroy the
 * graph. */
static void end_ok(sim_stream s, size_t nodes) {
    sim_graph g = NO_GRAPH;
    if (!CHECK_SIM_OK(sim_stream_end_capture(s, &g))) return;
    size_t n = 0;
    CHECK_SIM_OK(sim_graph_node_count(g, &n));
    CHECK_EQ(n, nodes);
    CHECK_SIM_OK(sim_graph_destroy(g));
}

static void end_fails(sim_stream s, sim_status want) {
    sim_graph g = NO_GRAPH;
    CHECK_SIM(sim_stream_end_capture(s, &g), want);
    CHECK_EQ(g, NO_GRAPH);
}

TEST(capture_records_work_instead_of_running_it) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 4, 7, 2));
        CHECK_SIM_OK(sim_memset_async(c.buf + 64, 1, 4, c.s));
        sim_graph g = NO_GRAPH;
        CHECK_SIM_OK(sim_stream_end_capture(c.s, &g));
        CHECK(g != NO_GRAPH && g != 0);
        CHECK_EQ(dev_read_u32(c.buf), 0); /* nothing ran */
        CHECK_EQ(dev_read_u32(c.buf + 64), 0);
        size_t n = 0;
        CHECK_SIM_OK(sim_graph_node_count(g, &n));
        CHECK_EQ(n, 2);
        sim_graph_exec x = 0;
        if (CHECK_SIM_OK(sim_graph_instantiate(&x, g))) {
            CHECK_SIM_OK(sim_graph_launch(x, c.s));
            CHECK_SIM_OK(sim_stream_synchronize(c.s));
            CHECK_EQ(dev_read_u32(c.buf), 7);
            CHECK_EQ(dev_read_u32(c.buf + 64), 0x01010101u);
            CHECK_SIM_OK(sim_graph_exec_destroy(x));
        }
        CHECK_SIM_OK(sim_graph_destroy(g));
    }
    cap_destroy(&c);
}

TEST(capture_info_is_legal_during_capture_and_gives_id_and_graph) {
    cap c;
    if (cap_create(&c)) {
        sim_capture_status st = SIM_CAPTURE_STATUS_ACTIVE;
        uint64_t id = 99;
        sim_graph g = 99;
        CHECK_SIM_OK(sim_stream_get_capture_info(c.s, &st, &id, &g));
        CHECK_EQ(st, SIM_CAPTURE_STATUS_NONE);
        CHECK_EQ(id, 0);
        CHECK_EQ(g, 0);
        CHECK_SIM_OK(sim_stream_get_capture_info(c.s, NULL, NULL, NULL));

        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        CHECK_SIM_OK(sim_stream_get_capture_info(c.s, &st, &id, &g));
        CHECK_EQ(st, SIM_CAPTURE_STATUS_ACTIVE);
        CHECK(id != 0);
        CHECK(g != 0);
        /* Asking again changes nothing. */
        for (int i = 0; i < 3; i++) CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_EQ(id_of(c.s), id);
        /* A stream outside the capture reports none. */
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_NONE);

        sim_graph ended = NO_GRAPH;
        CHECK_SIM_OK(sim_stream_end_capture(c.s, &ended));
        CHECK_EQ(ended, g);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_NONE);
        if (ended != NO_GRAPH) CHECK_SIM_OK(sim_graph_destroy(ended));
    }
    cap_destroy(&c);
}

TEST(capture_ids_are_unique_per_capture) {
    cap c;
    if (cap_create(&c)) {
        uint64_t ids[5];
        for (int i = 0; i < 5; i++) {
            CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
            ids[i] = id_of(c.s);
            CHECK(ids[i] != 0);
            for (int j = 0; j < i; j++) CHECK(ids[i] != ids[j]);
            end_ok(c.s, 0);
        }
        /* Two captures at once have different ids. */
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(sim_stream_begin_capture(c.s2, SIM_CAPTURE_MODE_GLOBAL));
        CHECK(id_of(c.s) != id_of(c.s2));
        end_ok(c.s, 0);
        end_ok(c.s2, 0);
    }
    cap_destroy(&c);
}

TEST(every_capture_mode_produces_a_graph) {
    cap c;
    if (cap_create(&c)) {
        const sim_capture_mode modes[] = {SIM_CAPTURE_MODE_GLOBAL, SIM_CAPTURE_MODE_THREAD_LOCAL,
                                          SIM_CAPTURE_MODE_RELAXED};
        for (int i = 0; i < 3; i++) {
            CHECK_SIM_OK(sim_stream_begin_capture(c.s, modes[i]));
            CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
            CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
            end_ok(c.s, 2);
        }
    }
    cap_destroy(&c);
}

TEST(exchange_capture_mode_returns_the_previous_mode) {
    sim_capture_mode m = SIM_CAPTURE_MODE_RELAXED;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m));
    CHECK_EQ(m, SIM_CAPTURE_MODE_GLOBAL); /* every thread starts in GLOBAL */
    m = SIM_CAPTURE_MODE_THREAD_LOCAL;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m));
    CHECK_EQ(m, SIM_CAPTURE_MODE_RELAXED);
    m = SIM_CAPTURE_MODE_GLOBAL;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m));
    CHECK_EQ(m, SIM_CAPTURE_MODE_THREAD_LOCAL);
}

TEST(begin_capture_twice_is_illegal_state) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL), SIM_ILLEGAL_STATE);
        CHECK_SIM(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_RELAXED), SIM_ILLEGAL_STATE);
        /* A stream that joined the capture is part of it too. */
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM_OK(sim_stream_wait_event(c.s2, c.e));
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_SIM(sim_stream_begin_capture(c.s2, SIM_CAPTURE_MODE_GLOBAL), SIM_ILLEGAL_STATE);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_SIM_OK(sim_event_record(c.e2, c.s2));
        CHECK_SIM_OK(sim_stream_wait_event(c.s, c.e2));
        end_ok(c.s, 0);
    }
    cap_destroy(&c);
}

TEST(end_capture_on_a_stream_not_capturing_is_illegal_state) {
    cap c;
    if (cap_create(&c)) {
        end_fails(c.s, SIM_ILLEGAL_STATE);
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        end_ok(c.s, 0);
        end_fails(c.s, SIM_ILLEGAL_STATE);
    }
    cap_destroy(&c);
}

TEST(wait_on_an_event_recorded_outside_the_capture_is_isolation) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_event_record(c.e, c.s2)); /* outside any capture */
        CHECK_SIM_OK(sim_stream_synchronize(c.s2));
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        CHECK_SIM(sim_stream_wait_event(c.s, c.e), SIM_CAPTURE_ISOLATION);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        CHECK(id_of(c.s) != 0);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
        /* The stream left the capture and works eagerly again. */
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_NONE);
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        CHECK_SIM_OK(sim_stream_synchronize(c.s));
        CHECK_EQ(dev_read_u32(c.buf), 1);
    }
    cap_destroy(&c);
}

TEST(operations_on_an_invalidated_capture_return_invalidated) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM(sim_stream_query(c.s), SIM_CAPTURE_UNSUPPORTED);
        CHECK_SIM(launch_add(c.s, &c.k, c.buf, 1, 1, 0), SIM_CAPTURE_INVALIDATED);
        CHECK_SIM(sim_memset_async(c.buf, 0, 4, c.s), SIM_CAPTURE_INVALIDATED);
        CHECK_SIM(sim_event_record(c.e, c.s), SIM_CAPTURE_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
        CHECK_SIM_OK(sim_stream_synchronize(c.s));
        CHECK_EQ(dev_read_u32(c.buf), 0);
    }
    cap_destroy(&c);
}

TEST(stream_query_during_capture_is_unsupported_and_invalidates) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM(sim_stream_query(c.s), SIM_CAPTURE_UNSUPPORTED);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
    }
    cap_destroy(&c);
}

TEST(stream_synchronize_during_capture_is_unsupported_and_invalidates) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_RELAXED));
        CHECK_SIM(sim_stream_synchronize(c.s), SIM_CAPTURE_UNSUPPORTED);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
    }
    cap_destroy(&c);
}

TEST(query_of_a_joined_stream_is_unsupported_and_invalidates) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM_OK(sim_stream_wait_event(c.s2, c.e));
        CHECK_SIM(sim_stream_query(c.s2), SIM_CAPTURE_UNSUPPORTED);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_NONE);
    }
    cap_destroy(&c);
}

TEST(event_query_on_an_event_recorded_in_an_active_capture_is_captured_event) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM(sim_event_query(c.e), SIM_CAPTURED_EVENT);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
    }
    cap_destroy(&c);
}

TEST(event_synchronize_on_an_event_recorded_in_an_active_capture_is_refused) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM2(sim_event_synchronize(c.e), SIM_CAPTURED_EVENT, SIM_CAPTURE_UNSUPPORTED);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
    }
    cap_destroy(&c);
}

/* ---- capture modes and forbidden calls from other threads ------------------ */

typedef struct malloc_call {
    int set_mode;
    sim_capture_mode mode;
    sim_status malloc_st, free_st;
} malloc_call;

static void *malloc_in_thread(void *arg) {
    malloc_call *m = arg;
    if (m->set_mode) CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m->mode));
    sim_devptr p = 0;
    m->malloc_st = sim_malloc(&p, 256);
    m->free_st = m->malloc_st == SIM_OK ? sim_free(p) : SIM_OK;
    return NULL;
}

TEST(malloc_from_a_global_thread_during_a_global_capture_is_unsupported_and_invalidates) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        malloc_call m = {0, SIM_CAPTURE_MODE_GLOBAL, SIM_OK, SIM_OK};
        harness_run_in_thread(malloc_in_thread, &m);
        CHECK_SIM(m.malloc_st, SIM_CAPTURE_UNSUPPORTED);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
    }
    cap_destroy(&c);
}

TEST(relaxed_thread_may_malloc_during_a_global_capture) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        malloc_call m = {1, SIM_CAPTURE_MODE_RELAXED, SIM_INVALID_VALUE, SIM_INVALID_VALUE};
        harness_run_in_thread(malloc_in_thread, &m);
        CHECK_SIM(m.malloc_st, SIM_OK);
        CHECK_SIM(m.free_st, SIM_OK);
        CHECK_EQ(m.mode, SIM_CAPTURE_MODE_GLOBAL); /* the thread's previous mode */
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        /* The capturing thread itself, relaxed, may allocate too. */
        sim_capture_mode mode = SIM_CAPTURE_MODE_RELAXED;
        CHECK_SIM_OK(sim_thread_exchange_capture_mode(&mode));
        sim_devptr p = 0;
        if (CHECK_SIM_OK(sim_malloc(&p, 64))) CHECK_SIM_OK(sim_free(p));
        CHECK_SIM_OK(sim_thread_exchange_capture_mode(&mode));
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        end_ok(c.s, 1);
    }
    cap_destroy(&c);
}

TEST(thread_local_thread_is_unaffected_by_another_threads_global_capture) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        malloc_call m = {1, SIM_CAPTURE_MODE_THREAD_LOCAL, SIM_INVALID_VALUE, SIM_INVALID_VALUE};
        harness_run_in_thread(malloc_in_thread, &m);
        CHECK_SIM(m.malloc_st, SIM_OK);
        CHECK_SIM(m.free_st, SIM_OK);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        end_ok(c.s, 0);
    }
    cap_destroy(&c);
}

TEST(thread_local_capture_restricts_only_its_own_thread) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_THREAD_LOCAL));
        /* Another thread in GLOBAL mode: no GLOBAL capture is active. */
        malloc_call m = {0, SIM_CAPTURE_MODE_GLOBAL, SIM_INVALID_VALUE, SIM_INVALID_VALUE};
        harness_run_in_thread(malloc_in_thread, &m);
        CHECK_SIM(m.malloc_st, SIM_OK);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        /* The capturing thread itself is restricted. */
        sim_devptr p = 0;
        CHECK_SIM(sim_malloc(&p, 64), SIM_CAPTURE_UNSUPPORTED);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
    }
    cap_destroy(&c);
}

TEST(thread_local_mode_thread_is_restricted_by_its_own_global_capture) {
    cap c;
    if (cap_create(&c)) {
        sim_capture_mode mode = SIM_CAPTURE_MODE_THREAD_LOCAL;
        CHECK_SIM_OK(sim_thread_exchange_capture_mode(&mode));
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        sim_devptr p = 0;
        CHECK_SIM(sim_malloc(&p, 64), SIM_CAPTURE_UNSUPPORTED);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
        CHECK_SIM_OK(sim_thread_exchange_capture_mode(&mode));
    }
    cap_destroy(&c);
}

TEST(relaxed_capture_restricts_nobody) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_RELAXED));
        sim_devptr p = 0;
        if (CHECK_SIM_OK(sim_malloc(&p, 64))) CHECK_SIM_OK(sim_free(p));
        malloc_call m = {0, SIM_CAPTURE_MODE_GLOBAL, SIM_INVALID_VALUE, SIM_INVALID_VALUE};
        harness_run_in_thread(malloc_in_thread, &m);
        CHECK_SIM(m.malloc_st, SIM_OK);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        end_ok(c.s, 0);
    }
    cap_destroy(&c);
}

TEST(every_unsafe_call_during_the_threads_own_capture_is_unsupported) {
    cap c;
    if (!cap_create(&c)) {
        cap_destroy(&c);
        return;
    }
    size_t mod_size = 0;
    void *mod_bytes = harness_read_file(SIM_TEST_KERNELS, &mod_size);
    sim_module spare = 0;
    sim_devptr p = 0;
    CHECK_SIM_OK(sim_module_load(&spare, mod_bytes, mod_size));
    CHECK_SIM_OK(sim_malloc(&p, 256));
    uint32_t host = 0;
    for (int call = 0; call < 6; call++) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        sim_status st = SIM_OK;
        sim_devptr q = 0;
        sim_module m = 0;
        switch (call) {
        case 0:
            st = sim_device_synchronize();
            break;
        case 1:
            st = sim_memcpy(&host, DEVP(p), 4, SIM_COPY_DEVICE_TO_HOST);
            break;
        case 2:
            st = sim_malloc(&q, 64);
            break;
        case 3:
            st = sim_free(p);
            break;
        case 4:
            st = sim_module_load(&m, mod_bytes, mod_size);
            break;
        case 5:
            st = sim_module_unload(spare);
            break;
        }
        if (!CHECK_SIM(st, SIM_CAPTURE_UNSUPPORTED)) CHECK_EQ(call, -1);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_INVALIDATED);
        end_fails(c.s, SIM_CAPTURE_INVALIDATED);
        if (st == SIM_OK && call == 2) sim_free(q);
        if (st == SIM_OK && call == 4) sim_module_unload(m);
    }
    /* The refused free and unload changed nothing. */
    CHECK_SIM_OK(sim_free(p));
    CHECK_SIM_OK(sim_module_unload(spare));
    free(mod_bytes);
    cap_destroy(&c);
}

TEST(safe_calls_during_capture_leave_it_active) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        uint32_t v = 0;
        sim_devptr base = 0;
        size_t size = 0;
        int dev = -1, count = 0;
        uint64_t epoch = 0, live = 0, bytes = 0;
        sim_device_props props = SIM_DEVICE_PROPS_INIT;
        CHECK_SIM_OK(sim_atomic_read_u32(c.buf, &v));
        CHECK_SIM_OK(sim_mem_lookup(0, c.buf, 4, &base, &size));
        CHECK_SIM_OK(sim_mem_stats(0, &live, &bytes));
        CHECK_SIM_OK(sim_get_device(&dev));
        CHECK_SIM_OK(sim_device_count(&count));
        CHECK_SIM_OK(sim_device_epoch(0, &epoch));
        CHECK_SIM_OK(sim_device_get_props(0, &props));
        CHECK_SIM_OK(sim_stream_get_device(c.s, &dev));
        /* Work on another, non-capturing stream is eager as usual. */
        CHECK_SIM_OK(launch_add(c.s2, &c.k, c.buf + 4, 1, 1, 0));
        CHECK_SIM_OK(sim_stream_synchronize(c.s2));
        CHECK_SIM_OK(sim_stream_query(c.s2));
        CHECK_EQ(dev_peek_u32(c.buf + 4), 1);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        end_ok(c.s, 1);
    }
    cap_destroy(&c);
}

/* ---- fork, join and ending ----------------------------------------------------- */

TEST(end_capture_with_a_fork_not_joined_back_is_unjoined) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM_OK(sim_stream_wait_event(c.s2, c.e)); /* fork */
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_EQ(id_of(c.s2), id_of(c.s));
        CHECK_SIM_OK(launch_add(c.s2, &c.k, c.buf + 4, 1, 1, 0));
        end_fails(c.s, SIM_CAPTURE_UNJOINED);
        /* Every stream left the capture. */
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_NONE);
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_NONE);
        CHECK_SIM_OK(sim_stream_synchronize(c.s2));
        CHECK_EQ(dev_read_u32(c.buf + 4), 0);
    }
    cap_destroy(&c);
}

TEST(fork_joined_back_ends_with_a_graph) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM_OK(sim_stream_wait_event(c.s2, c.e));
        CHECK_SIM_OK(launch_add(c.s2, &c.k, c.buf + 4, 1, 1, 0));
        CHECK_SIM_OK(sim_event_record(c.e2, c.s2));
        CHECK_SIM_OK(sim_stream_wait_event(c.s, c.e2)); /* join */
        end_ok(c.s, 2);
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_NONE);
    }
    cap_destroy(&c);
}

TEST(join_through_another_joined_stream_counts) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM_OK(sim_stream_wait_event(c.s2, c.e)); /* s -> s2 */
        CHECK_SIM_OK(launch_add(c.s2, &c.k, c.buf, 1, 1, 0));
        CHECK_SIM_OK(sim_event_record(c.e2, c.s2));
        CHECK_SIM_OK(sim_stream_wait_event(c.s3, c.e2)); /* s2 -> s3 */
        CHECK_SIM_OK(launch_add(c.s3, &c.k, c.buf + 4, 1, 1, 0));
        CHECK_SIM_OK(sim_event_record(c.e3, c.s3));
        CHECK_SIM_OK(sim_stream_wait_event(c.s2, c.e3)); /* s3 joins s2 */
        CHECK_SIM_OK(launch_add(c.s2, &c.k, c.buf + 8, 1, 1, 0));
        CHECK_SIM_OK(sim_event_record(c.e2, c.s2));
        CHECK_SIM_OK(sim_stream_wait_event(c.s, c.e2)); /* s2 joins s: s3 joined through s2 */
        end_ok(c.s, 3);
        CHECK_EQ(status_of(c.s3), SIM_CAPTURE_STATUS_NONE);
    }
    cap_destroy(&c);
}

typedef struct end_call {
    sim_stream stream;
    sim_status st;
    sim_graph graph;
} end_call;

static void *end_in_thread(void *arg) {
    end_call *e = arg;
    e->st = sim_stream_end_capture(e->stream, &e->graph);
    return NULL;
}

static void check_end_from_other_thread_is_wrong_thread(sim_capture_mode mode) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, mode));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        end_call e = {c.s, SIM_OK, NO_GRAPH};
        harness_run_in_thread(end_in_thread, &e);
        CHECK_SIM(e.st, SIM_CAPTURE_WRONG_THREAD);
        CHECK_EQ(e.graph, NO_GRAPH);
        /* Unchanged: still capturing, and the right thread can end it. */
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        end_ok(c.s, 2);
    }
    cap_destroy(&c);
}

TEST(end_capture_of_a_global_capture_from_another_thread_is_wrong_thread) {
    check_end_from_other_thread_is_wrong_thread(SIM_CAPTURE_MODE_GLOBAL);
}

TEST(end_capture_of_a_thread_local_capture_from_another_thread_is_wrong_thread) {
    check_end_from_other_thread_is_wrong_thread(SIM_CAPTURE_MODE_THREAD_LOCAL);
}

TEST(relaxed_capture_can_be_ended_from_another_thread) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_RELAXED));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        end_call e = {c.s, SIM_INVALID_VALUE, NO_GRAPH};
        harness_run_in_thread(end_in_thread, &e);
        CHECK_SIM(e.st, SIM_OK);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_NONE);
        if (e.st == SIM_OK) {
            size_t n = 0;
            CHECK_SIM_OK(sim_graph_node_count(e.graph, &n));
            CHECK_EQ(n, 1);
            CHECK_SIM_OK(sim_graph_destroy(e.graph));
        }
    }
    cap_destroy(&c);
}

TEST(end_capture_on_a_joined_stream_is_unmatched) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM_OK(sim_stream_wait_event(c.s2, c.e));
        CHECK_SIM_OK(launch_add(c.s2, &c.k, c.buf, 1, 1, 0));
        end_fails(c.s2, SIM_CAPTURE_UNMATCHED);
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_SIM_OK(sim_event_record(c.e2, c.s2));
        CHECK_SIM_OK(sim_stream_wait_event(c.s, c.e2));
        end_ok(c.s, 1);
    }
    cap_destroy(&c);
}

TEST(wait_on_an_event_of_another_capture_is_merge) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM_OK(sim_stream_begin_capture(c.s2, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM(sim_stream_wait_event(c.s2, c.e), SIM_CAPTURE_MERGE);
        CHECK_EQ(status_of(c.s2), SIM_CAPTURE_STATUS_INVALIDATED);
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        end_fails(c.s2, SIM_CAPTURE_INVALIDATED);
        end_ok(c.s, 1);
    }
    cap_destroy(&c);
}

TEST(stream_that_is_part_of_a_capture_cannot_be_destroyed) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(sim_event_record(c.e, c.s));
        CHECK_SIM_OK(sim_stream_wait_event(c.s2, c.e));
        CHECK_SIM(sim_stream_destroy(c.s), SIM_ILLEGAL_STATE);
        CHECK_SIM(sim_stream_destroy(c.s2), SIM_ILLEGAL_STATE);
        CHECK_SIM_OK(sim_event_record(c.e2, c.s2));
        CHECK_SIM_OK(sim_stream_wait_event(c.s, c.e2));
        end_ok(c.s, 0);
    }
    cap_destroy(&c);
}

TEST(wait_in_capture_on_a_never_recorded_event_is_a_no_op) {
    cap c;
    if (cap_create(&c)) {
        CHECK_SIM_OK(sim_stream_begin_capture(c.s, SIM_CAPTURE_MODE_GLOBAL));
        CHECK_SIM_OK(sim_stream_wait_event(c.s, c.e));
        CHECK_EQ(status_of(c.s), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_SIM_OK(launch_add(c.s, &c.k, c.buf, 1, 1, 0));
        end_ok(c.s, 1);
    }
    cap_destroy(&c);
}
