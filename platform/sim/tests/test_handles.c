/*
 * Handles: 0, garbage, destroyed, double-destroyed, foreign (wrong type),
 * wrong-device and stale (after a reset) handles all return
 * SIM_INVALID_HANDLE, never crash; bad pointers and flags are
 * SIM_INVALID_VALUE.
 */
#include "harness.h"
#include "kernels.h"

static void hook_fn(void *user) { (void)user; }
static void host_fn(void *user, sim_status st) {
    (void)user;
    (void)st;
}

/* A complete set of live objects on the current device. */
typedef struct objects {
    test_kernels k;
    sim_stream stream;
    sim_event event;
    sim_graph graph;
    sim_graph_exec exec;
    sim_devptr mem;
} objects;

static int objects_create(objects *o) {
    *o = (objects){0};
    if (!kernels_load(&o->k)) return 0;
    if (!CHECK_SIM_OK(sim_stream_create(&o->stream))) return 0;
    if (!CHECK_SIM_OK(sim_event_create(&o->event, SIM_EVENT_DEFAULT))) return 0;
    o->mem = dev_alloc(256);
    if (!o->mem) return 0;
    if (!CHECK_SIM_OK(sim_stream_begin_capture(o->stream, SIM_CAPTURE_MODE_GLOBAL))) return 0;
    CHECK_SIM_OK(launch_add(o->stream, &o->k, o->mem, 4, 1, 0));
    if (!CHECK_SIM_OK(sim_stream_end_capture(o->stream, &o->graph))) return 0;
    return CHECK_SIM_OK(sim_graph_instantiate(&o->exec, o->graph));
}

static void objects_destroy(objects *o) {
    if (o->exec) CHECK_SIM_OK(sim_graph_exec_destroy(o->exec));
    if (o->graph) CHECK_SIM_OK(sim_graph_destroy(o->graph));
    if (o->event) CHECK_SIM_OK(sim_event_destroy(o->event));
    if (o->stream) {
        CHECK_SIM_OK(sim_stream_synchronize(o->stream));
        CHECK_SIM_OK(sim_stream_destroy(o->stream));
    }
    dev_free(o->mem);
    kernels_unload(&o->k);
}

/* Every handle-taking function, given `bad` in one handle position and live
 * objects elsewhere, returns SIM_INVALID_HANDLE. */
/* CHECK_SIM reported at the caller's line. */
static int status_at(int line, const char *what, sim_status got, sim_status want) {
    if (got == want) return ktc_held();
    return ktc_fail(__FILE__, line, "CHECK_SIM", what, "%s, expected %s (%s)", sim_status_name(got),
                    sim_status_name(want), sim_last_error_message());
}

static void check_rejected_everywhere(const objects *o, uint64_t bad, int line) {
#define BAD_(expr) status_at(line, #expr, (expr), SIM_INVALID_HANDLE)
    uint32_t v = 0;
    int dev = 0;
    float ms = 0;
    size_t n = 0;
    sim_function fn = 0;
    sim_graph g = 0;
    sim_graph_exec x = 0;
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    BAD_(sim_stream_synchronize(bad));
    BAD_(sim_stream_query(bad));
    BAD_(sim_stream_get_device(bad, &dev));
    BAD_(sim_launch_kernel(bad, o->k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    BAD_(sim_launch_kernel(o->stream, bad, SIM_TARGET_AICPU, 1, NULL, 0));
    BAD_(sim_memcpy_async(DEVP(o->mem), &v, sizeof v, SIM_COPY_HOST_TO_DEVICE, bad));
    BAD_(sim_memset_async(o->mem, 0, 4, bad));
    BAD_(sim_launch_host_func(bad, host_fn, NULL));
    BAD_(sim_event_record(bad, o->stream));
    BAD_(sim_event_record(o->event, bad));
    BAD_(sim_stream_wait_event(bad, o->event));
    BAD_(sim_stream_wait_event(o->stream, bad));
    BAD_(sim_event_query(bad));
    BAD_(sim_event_synchronize(bad));
    BAD_(sim_event_elapsed_ms(&ms, bad, o->event));
    BAD_(sim_event_elapsed_ms(&ms, o->event, bad));
    BAD_(sim_module_get_function(&fn, bad, "k_noop"));
    BAD_(sim_stream_begin_capture(bad, SIM_CAPTURE_MODE_GLOBAL));
    BAD_(sim_stream_end_capture(bad, &g));
    BAD_(sim_stream_get_capture_info(bad, &cs, NULL, NULL));
    BAD_(sim_graph_node_count(bad, &n));
    BAD_(sim_graph_instantiate(&x, bad));
    BAD_(sim_graph_launch(bad, o->stream));
    BAD_(sim_graph_launch(o->exec, bad));
    BAD_(sim_graph_attach_hook(bad, hook_fn, NULL));
    /* Destroys last: `bad` may alias nothing live, so nothing is lost. */
    BAD_(sim_stream_destroy(bad));
    BAD_(sim_event_destroy(bad));
    BAD_(sim_module_unload(bad));
    BAD_(sim_graph_destroy(bad));
    BAD_(sim_graph_exec_destroy(bad));
#undef BAD_
    /* The live objects still work. */
    status_at(line, "live stream still valid", sim_stream_query(o->stream), SIM_OK);
}

TEST(zero_handle_is_invalid_everywhere) {
    objects o;
    if (objects_create(&o)) check_rejected_everywhere(&o, 0, __LINE__);
    objects_destroy(&o);
}

TEST(garbage_handles_are_invalid_everywhere) {
    objects o;
    if (objects_create(&o)) {
        const uint64_t garbage[] = {1,
                                    2,
                                    0xFFFFFFFFull,
                                    UINT64_MAX,
                                    0xDEADBEEFCAFEF00Dull,
                                    0x8000000000000000ull,
                                    0x0101010101010101ull,
                                    (uint64_t)(uintptr_t)&o};
        for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
            check_rejected_everywhere(&o, garbage[i], __LINE__);
    }
    objects_destroy(&o);
}

TEST(handle_with_any_bit_flipped_is_invalid) {
    /* Index, generation, type and device are all validated: a handle with
     * one bit changed is never taken for a live object. */
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    for (int bit = 0; bit < 64; bit++) {
        uint64_t h = s ^ (1ull << bit);
        if (!CHECK_SIM(sim_stream_query(h), SIM_INVALID_HANDLE))
            CHECK_EQ(bit, -1); /* names the bit in the failure */
    }
    CHECK_SIM_OK(sim_stream_query(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
}

TEST(destroyed_handles_are_invalid_everywhere) {
    objects live, dead;
    if (!objects_create(&live) || !objects_create(&dead)) {
        objects_destroy(&live);
        objects_destroy(&dead);
        return;
    }
    /* Keep copies of the handles, destroy the objects, then use them. */
    objects gone = dead;
    objects_destroy(&dead);
    check_rejected_everywhere(&live, gone.stream, __LINE__);
    check_rejected_everywhere(&live, gone.event, __LINE__);
    check_rejected_everywhere(&live, gone.graph, __LINE__);
    check_rejected_everywhere(&live, gone.exec, __LINE__);
    check_rejected_everywhere(&live, gone.k.module, __LINE__);
    check_rejected_everywhere(&live, gone.k.noop, __LINE__);
    objects_destroy(&live);
}

TEST(double_destroy_is_invalid_handle) {
    objects o;
    if (!objects_create(&o)) {
        objects_destroy(&o);
        return;
    }
    objects gone = o;
    objects_destroy(&o);
    CHECK_SIM(sim_stream_destroy(gone.stream), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_event_destroy(gone.event), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_graph_destroy(gone.graph), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_graph_exec_destroy(gone.exec), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_module_unload(gone.k.module), SIM_INVALID_HANDLE);
}

TEST(handle_of_another_type_is_invalid) {
    objects o;
    if (objects_create(&o)) {
        int dev = 0;
        size_t n = 0;
        sim_graph_exec x = 0;
        sim_function fn = 0;
        /* an event or a graph used as a stream */
        CHECK_SIM(sim_stream_query(o.event), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_stream_get_device(o.graph, &dev), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_event_record(o.event, o.event), SIM_INVALID_HANDLE);
        /* a stream used as an event */
        CHECK_SIM(sim_event_query(o.stream), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_stream_wait_event(o.stream, o.stream), SIM_INVALID_HANDLE);
        /* a module used as a function, a function as a module */
        CHECK_SIM(sim_launch_kernel(o.stream, o.k.module, SIM_TARGET_AICPU, 1, NULL, 0),
                  SIM_INVALID_HANDLE);
        CHECK_SIM(sim_module_get_function(&fn, o.k.noop, "k_noop"), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_module_unload(o.k.noop), SIM_INVALID_HANDLE);
        /* a graph used as an exec and back */
        CHECK_SIM(sim_graph_launch(o.graph, o.stream), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_graph_node_count(o.exec, &n), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_graph_instantiate(&x, o.exec), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_graph_destroy(o.exec), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_graph_exec_destroy(o.graph), SIM_INVALID_HANDLE);
        /* a stream destroyed through the event API survives */
        CHECK_SIM(sim_event_destroy(o.stream), SIM_INVALID_HANDLE);
        CHECK_SIM_OK(sim_stream_query(o.stream));
    }
    objects_destroy(&o);
}

TEST(handle_of_another_device_is_invalid) {
    objects d0, d1;
    int ok0 = objects_create(&d0);
    CHECK_SIM_OK(sim_set_device(1));
    int ok1 = objects_create(&d1);
    CHECK_SIM_OK(sim_set_device(0));
    if (ok0 && ok1) {
        float ms = 0;
        /* event of device 1 recorded on / waited by a stream of device 0 */
        CHECK_SIM(sim_event_record(d1.event, d0.stream), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_stream_wait_event(d0.stream, d1.event), SIM_INVALID_HANDLE);
        /* elapsed time between executed timing events of two devices */
        CHECK_SIM_OK(sim_event_record(d0.event, d0.stream));
        CHECK_SIM_OK(sim_event_record(d1.event, d1.stream));
        CHECK_SIM_OK(sim_event_synchronize(d0.event));
        CHECK_SIM_OK(sim_event_synchronize(d1.event));
        CHECK_SIM(sim_event_elapsed_ms(&ms, d0.event, d1.event), SIM_INVALID_HANDLE);
        CHECK_SIM(sim_event_elapsed_ms(&ms, d1.event, d0.event), SIM_INVALID_HANDLE);
        /* a function of a module of device 1 launched on device 0 */
        CHECK_SIM(sim_launch_kernel(d0.stream, d1.k.noop, SIM_TARGET_AICPU, 1, NULL, 0),
                  SIM_INVALID_HANDLE);
        /* an exec of device 1 launched on a stream of device 0 */
        CHECK_SIM(sim_graph_launch(d1.exec, d0.stream), SIM_INVALID_HANDLE);
        /* Handles carry their device: a stream of device 1 is usable and
         * reports its device from a thread whose current device is 0. */
        int dev = -1;
        CHECK_SIM_OK(sim_stream_get_device(d1.stream, &dev));
        CHECK_EQ(dev, 1);
        CHECK_SIM_OK(sim_stream_get_device(d0.stream, &dev));
        CHECK_EQ(dev, 0);
    }
    objects_destroy(&d0);
    CHECK_SIM_OK(sim_set_device(1));
    objects_destroy(&d1);
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(stale_handles_after_reset_stay_invalid) {
    objects o;
    CHECK_SIM_OK(sim_set_device(1));
    int ok = objects_create(&o);
    objects stale = o;
    CHECK_SIM_OK(sim_device_reset());
    /* New objects (possibly in the same slots) do not revive old handles. */
    objects fresh;
    int fresh_ok = objects_create(&fresh);
    CHECK_SIM_OK(sim_set_device(0));
    if (ok && fresh_ok) {
        check_rejected_everywhere(&fresh, stale.stream, __LINE__);
        check_rejected_everywhere(&fresh, stale.event, __LINE__);
        check_rejected_everywhere(&fresh, stale.graph, __LINE__);
        check_rejected_everywhere(&fresh, stale.exec, __LINE__);
        check_rejected_everywhere(&fresh, stale.k.module, __LINE__);
        check_rejected_everywhere(&fresh, stale.k.noop, __LINE__);
    }
    CHECK_SIM_OK(sim_set_device(1));
    objects_destroy(&fresh);
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(reused_slot_does_not_revive_a_destroyed_handle) {
    for (int i = 0; i < 100; i++) {
        sim_stream a = 0, b = 0;
        REQUIRE_SIM_OK(sim_stream_create(&a));
        REQUIRE_SIM_OK(sim_stream_destroy(a));
        REQUIRE_SIM_OK(sim_stream_create(&b));
        CHECK(a != b);
        CHECK_SIM(sim_stream_query(a), SIM_INVALID_HANDLE);
        CHECK_SIM_OK(sim_stream_query(b));
        CHECK_SIM_OK(sim_stream_destroy(b));
    }
}

TEST(null_out_pointers_and_bad_flags_are_invalid_value) {
    objects o;
    if (objects_create(&o)) {
        CHECK_SIM(sim_stream_create(NULL), SIM_INVALID_VALUE);
        CHECK_SIM(sim_event_create(NULL, SIM_EVENT_DEFAULT), SIM_INVALID_VALUE);
        sim_event e = 0;
        CHECK_SIM(sim_event_create(&e, 0x80), SIM_INVALID_VALUE);
        CHECK_SIM(sim_malloc(NULL, 64), SIM_INVALID_VALUE);
        CHECK_SIM(sim_module_load(NULL, "x", 1), SIM_INVALID_VALUE);
        sim_module m = 0;
        CHECK_SIM(sim_module_load(&m, NULL, 64), SIM_INVALID_VALUE);
        CHECK_SIM(sim_module_get_function(NULL, o.k.module, "k_noop"), SIM_INVALID_VALUE);
        sim_function fn = 0;
        CHECK_SIM(sim_module_get_function(&fn, o.k.module, NULL), SIM_INVALID_VALUE);
        CHECK_SIM(sim_stream_get_device(o.stream, NULL), SIM_INVALID_VALUE);
        CHECK_SIM(sim_graph_node_count(o.graph, NULL), SIM_INVALID_VALUE);
        CHECK_SIM(sim_graph_instantiate(NULL, o.graph), SIM_INVALID_VALUE);
        CHECK_SIM(sim_graph_attach_hook(o.graph, NULL, NULL), SIM_INVALID_VALUE);
        CHECK_SIM(sim_launch_host_func(o.stream, NULL, NULL), SIM_INVALID_VALUE);
        CHECK_SIM(sim_event_elapsed_ms(NULL, o.event, o.event), SIM_INVALID_VALUE);
        CHECK_SIM(sim_stream_begin_capture(o.stream, (sim_capture_mode)7), SIM_INVALID_VALUE);
        CHECK_SIM(sim_thread_exchange_capture_mode(NULL), SIM_INVALID_VALUE);
        sim_capture_mode bad = (sim_capture_mode)9;
        CHECK_SIM(sim_thread_exchange_capture_mode(&bad), SIM_INVALID_VALUE);
        CHECK_SIM(sim_launch_kernel(o.stream, o.k.noop, (sim_target)0, 1, NULL, 0),
                  SIM_INVALID_VALUE);
        CHECK_SIM(sim_launch_kernel(o.stream, o.k.noop, SIM_TARGET_AICPU, 1, NULL, 8),
                  SIM_INVALID_VALUE);
        CHECK_SIM(sim_atomic_read_u32(o.mem, NULL), SIM_INVALID_VALUE);
        CHECK_SIM(sim_atomic_read_u64(o.mem, NULL), SIM_INVALID_VALUE);
        /* Nothing was created by the refused calls (checked by the
         * harness's teardown baseline too). */
        CHECK_SIM_OK(sim_stream_query(o.stream));
    }
    objects_destroy(&o);
}

/* ---- generations never wrap ------------------------------------------------
 * A slot issues SIM_HANDLE_GENERATIONS handles and is then retired: were its
 * generation to wrap, a destroyed handle would come back after 16,777,215
 * create/destroy cycles of the slot (1.7 s). sim_handle_age drives the slot
 * through those cycles without objects. */

TEST(destroyed_handle_never_validates_again_after_a_full_turn_of_its_slot) {
    sim_event gone = 0, fresh = 0;
    REQUIRE_SIM_OK(sim_event_create(&gone, SIM_EVENT_DISABLE_TIMING));
    REQUIRE_SIM_OK(sim_event_destroy(gone));
    /* Every generation of the slot but one more create/destroy cycle: were
     * the generations to wrap, the next object created in the slot (the
     * free list's head) would get `gone` back. */
    uint64_t left = UINT64_MAX;
    REQUIRE_SIM_OK(sim_handle_age(gone, SIM_HANDLE_GENERATIONS - 1, &left));
    CHECK_EQ(left, 0); /* it ran out of generations on the way: retired */
    REQUIRE_SIM_OK(sim_event_create(&fresh, SIM_EVENT_DISABLE_TIMING));
    CHECK(fresh != gone);
    CHECK_SIM(sim_event_query(gone), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_event_synchronize(gone), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_event_destroy(gone), SIM_INVALID_HANDLE);
    CHECK_SIM_OK(sim_event_query(fresh));
    CHECK_SIM_OK(sim_event_destroy(fresh));
}

TEST(slot_is_retired_when_its_last_generation_is_destroyed) {
    /* The last two generations of a slot go through the API: created,
     * destroyed, then the slot is retired and creation moves on. */
    sim_stream first = 0;
    REQUIRE_SIM_OK(sim_stream_create(&first));
    REQUIRE_SIM_OK(sim_stream_destroy(first));
    uint64_t left = 0;
    REQUIRE_SIM_OK(sim_handle_age(first, 0, &left)); /* only reads */
    REQUIRE(left >= 2 && left < SIM_HANDLE_GENERATIONS);
    REQUIRE_SIM_OK(sim_handle_age(first, left - 2, &left));
    REQUIRE_EQ(left, 2);
    CHECK_SIM(sim_handle_age(first, 0, &left), SIM_INVALID_HANDLE); /* no longer the last */

    sim_event last2 = 0, last1 = 0, next = 0;
    REQUIRE_SIM_OK(sim_event_create(&last2, SIM_EVENT_DISABLE_TIMING));
    CHECK_SIM(sim_handle_age(last2, 0, &left), SIM_INVALID_HANDLE); /* live */
    REQUIRE_SIM_OK(sim_event_destroy(last2));
    REQUIRE_SIM_OK(sim_handle_age(last2, 0, &left)); /* it came from that slot */
    CHECK_EQ(left, 1);
    REQUIRE_SIM_OK(sim_event_create(&last1, SIM_EVENT_DISABLE_TIMING));
    CHECK(last1 != last2);
    REQUIRE_SIM_OK(sim_event_destroy(last1));
    REQUIRE_SIM_OK(sim_handle_age(last1, 0, &left));
    CHECK_EQ(left, 0); /* retired by the destroy */

    REQUIRE_SIM_OK(sim_event_create(&next, SIM_EVENT_DISABLE_TIMING));
    CHECK(next != first && next != last2 && next != last1);
    CHECK_SIM(sim_stream_query(first), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_event_query(last2), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_event_query(last1), SIM_INVALID_HANDLE);
    CHECK_SIM_OK(sim_event_query(next));
    /* The retired slot stays retired: more cycles do nothing. */
    CHECK_SIM_OK(sim_handle_age(last1, 1000, &left));
    CHECK_EQ(left, 0);
    CHECK_SIM_OK(sim_event_destroy(next));
}

TEST(handle_age_refuses_handles_that_are_not_a_slot_s_last_destroyed_one) {
    uint64_t left = 7;
    CHECK_SIM(sim_handle_age(0, 1, &left), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_handle_age(0xDEADBEEFCAFEF00Dull, 1, &left), SIM_INVALID_HANDLE);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_SIM(sim_handle_age(s, 1, &left), SIM_INVALID_HANDLE); /* live */
    CHECK_SIM_OK(sim_stream_query(s));                          /* untouched */
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM(sim_handle_age(s ^ (1ull << 56), 0, &left), SIM_INVALID_HANDLE); /* type */
    CHECK_SIM(sim_handle_age(s ^ (1ull << 48), 0, &left), SIM_INVALID_HANDLE); /* device */
    CHECK_EQ(left, 7); /* written only on success */
    CHECK_SIM_OK(sim_handle_age(s, 0, NULL));
}

/* ---- the handle watch ------------------------------------------------------ */

TEST(handle_watch_counts_each_call_that_names_the_handle_once) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0, other = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_stream_create(&other));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DEFAULT));

    sim_handle_watch(s);
    CHECK_EQ(sim_handle_watch_count(), 0);
    CHECK_SIM_OK(sim_stream_query(other)); /* names another handle */
    CHECK_SIM_OK(sim_event_record(e, other));
    CHECK_SIM_OK(sim_event_synchronize(e));
    CHECK_EQ(sim_handle_watch_count(), 0);
    CHECK_SIM_OK(sim_stream_query(s));
    CHECK_EQ(sim_handle_watch_count(), 1);
    CHECK_SIM_OK(sim_event_record(e, s)); /* the stream as the second argument */
    CHECK_SIM_OK(sim_stream_wait_event(other, e));
    CHECK_EQ(sim_handle_watch_count(), 2);
    CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(sim_handle_watch_count(), 4);
    /* Failed, refused and injected calls count too. */
    int dev = 0;
    CHECK_SIM(sim_stream_get_device(s, NULL), SIM_INVALID_VALUE);
    CHECK_SIM(sim_event_record(s, other), SIM_INVALID_HANDLE); /* a stream as an event */
    sim_fault f = SIM_FAULT_INIT;
    f.op = SIM_OP_STREAM_GET_DEVICE;
    int id = -1;
    REQUIRE_SIM_OK(sim_fault_arm(&f, &id));
    CHECK_SIM(sim_stream_get_device(s, &dev), SIM_INJECTED);
    CHECK_SIM_OK(sim_fault_clear_all());
    CHECK_EQ(sim_handle_watch_count(), 7);

    /* The second handle of a two-handle call is watched too. */
    sim_handle_watch(e);
    CHECK_SIM_OK(sim_event_record(e, s));
    CHECK_SIM_OK(sim_stream_wait_event(other, e));
    float ms = 0;
    CHECK_SIM_OK(sim_event_synchronize(e));
    CHECK_SIM_OK(sim_event_elapsed_ms(&ms, e, e)); /* both arguments: one call */
    CHECK_EQ(sim_handle_watch_count(), 4);
    sim_handle_watch(k.noop);
    CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_EQ(sim_handle_watch_count(), 1);

    /* A destroyed handle named again is still a call that names it. */
    CHECK_SIM_OK(sim_stream_synchronize(s));
    sim_handle_watch(s);
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM(sim_stream_query(s), SIM_INVALID_HANDLE);
    CHECK_EQ(sim_handle_watch_count(), 2);
    sim_handle_watch(0); /* off */
    CHECK_SIM(sim_stream_query(s), SIM_INVALID_HANDLE);
    CHECK_EQ(sim_handle_watch_count(), 0);

    CHECK_SIM_OK(sim_stream_synchronize(other));
    CHECK_SIM_OK(sim_event_destroy(e));
    CHECK_SIM_OK(sim_stream_destroy(other));
    kernels_unload(&k);
}
