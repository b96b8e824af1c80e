/*
 * Fault injection, call counters, holds and fatal devices: the test-support
 * part of the API is tested like the rest.
 */
#include "harness.h"
#include "kernels.h"

#include <string.h>

static int arm(int op, int device, uint64_t nth, int persistent, sim_status error,
               int this_thread_only) {
    sim_fault f = SIM_FAULT_INIT;
    f.op = op;
    f.device = device;
    f.nth = nth;
    f.persistent = persistent;
    f.error = error;
    f.this_thread_only = this_thread_only;
    int id = -1;
    CHECK_SIM_OK(sim_fault_arm(&f, &id));
    return id;
}

static uint64_t hits_of(int id) {
    uint64_t h = 999;
    CHECK_SIM_OK(sim_fault_hits(id, &h));
    return h;
}

/* ---- call counters ----------------------------------------------------------- */

static void *create_one_stream(void *arg) {
    (void)arg;
    sim_stream s = 0;
    if (CHECK_SIM_OK(sim_stream_create(&s))) CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_EQ(sim_thread_calls(SIM_OP_STREAM_CREATE), 1);
    return NULL;
}

TEST(call_counters_count_per_operation_device_and_thread) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    sim_calls_reset();
    sim_thread_calls_reset();
    CHECK_EQ(sim_calls(SIM_OP_STREAM_CREATE, -1), 0);
    CHECK_EQ(sim_thread_calls(SIM_OP_ANY), 0);
    sim_stream s[5] = {0};
    for (int i = 0; i < 3; i++) CHECK_SIM_OK(sim_stream_create(&s[i]));
    CHECK_SIM_OK(sim_set_device(1));
    for (int i = 3; i < 5; i++) CHECK_SIM_OK(sim_stream_create(&s[i]));
    CHECK_SIM_OK(sim_set_device(0));
    CHECK_EQ(sim_calls(SIM_OP_STREAM_CREATE, -1), 5);
    CHECK_EQ(sim_calls(SIM_OP_STREAM_CREATE, 0), 3);
    CHECK_EQ(sim_calls(SIM_OP_STREAM_CREATE, 1), 2);
    CHECK_EQ(sim_thread_calls(SIM_OP_STREAM_CREATE), 5);
    CHECK_EQ(sim_calls(SIM_OP_SET_DEVICE, -1), 2);
    /* Attributed to the handle's device, whatever the current device. */
    for (int i = 0; i < 5; i++) CHECK_SIM_OK(sim_stream_destroy(s[i]));
    CHECK_EQ(sim_calls(SIM_OP_STREAM_DESTROY, 0), 3);
    CHECK_EQ(sim_calls(SIM_OP_STREAM_DESTROY, 1), 2);
    /* Refused calls count too. */
    CHECK_SIM(sim_stream_query(0), SIM_INVALID_HANDLE);
    CHECK_EQ(sim_calls(SIM_OP_STREAM_QUERY, -1), 1);
    /* Another thread's calls count for the process, not for this thread. */
    harness_run_in_thread(create_one_stream, NULL);
    CHECK_EQ(sim_calls(SIM_OP_STREAM_CREATE, -1), 6);
    CHECK_EQ(sim_thread_calls(SIM_OP_STREAM_CREATE), 5);
    /* SIM_OP_ANY counts every counted call. */
    sim_thread_calls_reset();
    int n = 0;
    for (int i = 0; i < 3; i++) CHECK_SIM_OK(sim_device_count(&n));
    CHECK_EQ(sim_thread_calls(SIM_OP_ANY), 3);
    CHECK_EQ(sim_thread_calls(SIM_OP_DEVICE_COUNT), 3);
    CHECK(sim_calls(SIM_OP_ANY, -1) >= 3 + 6 + 5 + 2 + 1);
    /* Resets: per thread, then process and device counters. */
    CHECK(sim_calls(SIM_OP_STREAM_CREATE, -1) == 6);
    sim_calls_reset();
    CHECK_EQ(sim_calls(SIM_OP_STREAM_CREATE, -1), 0);
    CHECK_EQ(sim_calls(SIM_OP_STREAM_CREATE, 1), 0);
    CHECK_EQ(sim_calls(SIM_OP_ANY, -1), 0);
    sim_thread_calls_reset();
    CHECK_EQ(sim_thread_calls(SIM_OP_ANY), 0);
}

/* The queries a platform adapter makes (the current device, the device
 * epoch, the free counter) are counted like every other call, on the
 * thread and on the device they name, but no fault can be armed on them and
 * a SIM_OP_ANY fault passes them by: they still answer on a lost device. */
TEST(queries_are_counted_and_never_injected) {
    REQUIRE_DEVICES(2); /* names device 1 */
    sim_calls_reset();
    sim_thread_calls_reset();
    int d = -1;
    uint64_t epoch = 0;
    const uint64_t *frees = NULL;
    CHECK_SIM_OK(sim_get_device(&d));
    CHECK_SIM_OK(sim_device_epoch(1, &epoch));
    CHECK_SIM_OK(sim_mem_free_counter(1, &frees));
    CHECK_SIM(sim_device_epoch(-1, &epoch), SIM_INVALID_VALUE); /* refused: counted too */
    CHECK_EQ(sim_thread_calls(SIM_OP_GET_DEVICE), 1);
    CHECK_EQ(sim_thread_calls(SIM_OP_DEVICE_EPOCH), 2);
    CHECK_EQ(sim_thread_calls(SIM_OP_MEM_FREE_COUNTER), 1);
    CHECK_EQ(sim_thread_calls(SIM_OP_ANY), 4);
    CHECK_EQ(sim_calls(SIM_OP_GET_DEVICE, d), 1);
    CHECK_EQ(sim_calls(SIM_OP_DEVICE_EPOCH, 1), 1);
    CHECK_EQ(sim_calls(SIM_OP_MEM_FREE_COUNTER, 1), 1);
    static const int never[] = {SIM_OP_GET_DEVICE, SIM_OP_DEVICE_EPOCH, SIM_OP_MEM_FREE_COUNTER};
    for (size_t i = 0; i < sizeof never / sizeof *never; i++) {
        sim_fault f = SIM_FAULT_INIT;
        f.op = never[i];
        int id = -1;
        CHECK_SIM(sim_fault_arm(&f, &id), SIM_INVALID_VALUE);
    }
    int any = arm(SIM_OP_ANY, -1, 1, 1, SIM_INJECTED, 1);
    CHECK_SIM_OK(sim_get_device(&d));
    CHECK_SIM_OK(sim_device_epoch(0, &epoch));
    CHECK_SIM_OK(sim_mem_free_counter(0, &frees));
    CHECK_EQ(hits_of(any), 0);
    CHECK_SIM_OK(sim_fault_clear_all());
}

TEST(injected_failures_are_counted_calls) {
    sim_calls_reset();
    arm(SIM_OP_STREAM_CREATE, -1, 1, 0, SIM_INJECTED, 0);
    sim_stream s = 0;
    CHECK_SIM(sim_stream_create(&s), SIM_INJECTED);
    CHECK_EQ(sim_calls(SIM_OP_STREAM_CREATE, -1), 1);
    CHECK_SIM_OK(sim_fault_clear_all());
}

/* ---- faults -------------------------------------------------------------------- */

TEST(nth_call_fault_hits_exactly_the_nth_call_once) {
    int id = arm(SIM_OP_STREAM_CREATE, -1, 3, 0, SIM_INJECTED, 0);
    sim_stream s[6] = {0};
    sim_status st[6];
    for (int i = 0; i < 6; i++) st[i] = sim_stream_create(&s[i]);
    for (int i = 0; i < 6; i++) {
        if (i == 2) {
            CHECK_SIM(st[i], SIM_INJECTED);
            CHECK_EQ(s[i], 0);
        } else {
            CHECK_SIM(st[i], SIM_OK);
        }
    }
    CHECK_EQ(hits_of(id), 1);
    for (int i = 0; i < 6; i++)
        if (st[i] == SIM_OK) CHECK_SIM_OK(sim_stream_destroy(s[i]));
    CHECK_SIM_OK(sim_fault_clear_all());
}

TEST(persistent_fault_fails_every_call_from_the_nth) {
    int id = arm(SIM_OP_EVENT_CREATE, -1, 2, 1, SIM_INJECTED, 0);
    sim_event e[5] = {0};
    CHECK_SIM_OK(sim_event_create(&e[0], 0));
    for (int i = 1; i < 5; i++) CHECK_SIM(sim_event_create(&e[i], 0), SIM_INJECTED);
    CHECK_EQ(hits_of(id), 4);
    CHECK_SIM_OK(sim_fault_clear_all());
    CHECK_SIM_OK(sim_event_create(&e[1], 0));
    CHECK_SIM_OK(sim_event_destroy(e[0]));
    CHECK_SIM_OK(sim_event_destroy(e[1]));
}

TEST(fault_fails_with_the_chosen_error) {
    arm(SIM_OP_MALLOC, -1, 1, 0, SIM_OUT_OF_MEMORY, 0);
    arm(SIM_OP_DEVICE_COUNT, -1, 1, 0, SIM_DEVICE_LOST, 0);
    sim_devptr p = 0;
    int n = -1;
    CHECK_SIM(sim_malloc(&p, 64), SIM_OUT_OF_MEMORY);
    CHECK_SIM(sim_device_count(&n), SIM_DEVICE_LOST);
    CHECK_EQ(p, 0);
    CHECK_EQ(n, -1);
    CHECK_SIM_OK(sim_device_count(&n));
    CHECK_SIM_OK(sim_fault_clear_all());
}

TEST(fault_restricted_to_a_device_spares_other_devices) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    int id = arm(SIM_OP_STREAM_CREATE, 1, 1, 1, SIM_INJECTED, 0);
    sim_stream s0 = 0, s1 = 0;
    CHECK_SIM_OK(sim_stream_create(&s0));
    CHECK_SIM_OK(sim_set_device(1));
    CHECK_SIM(sim_stream_create(&s1), SIM_INJECTED);
    CHECK_SIM_OK(sim_set_device(0));
    CHECK_EQ(hits_of(id), 1);
    CHECK_SIM_OK(sim_fault_clear_all());
    CHECK_SIM_OK(sim_stream_destroy(s0));
}

typedef struct thread_result {
    sim_status st;
} thread_result;

static void *create_in_thread(void *arg) {
    thread_result *r = arg;
    sim_stream s = 0;
    r->st = sim_stream_create(&s);
    if (r->st == SIM_OK) sim_stream_destroy(s);
    return NULL;
}

TEST(this_thread_only_fault_ignores_other_threads) {
    int id = arm(SIM_OP_STREAM_CREATE, -1, 1, 0, SIM_INJECTED, 1);
    thread_result r = {SIM_INVALID_VALUE};
    harness_run_in_thread(create_in_thread, &r);
    CHECK_SIM(r.st, SIM_OK);
    CHECK_EQ(hits_of(id), 0);
    sim_stream s = 0;
    CHECK_SIM(sim_stream_create(&s), SIM_INJECTED);
    CHECK_EQ(hits_of(id), 1);
    CHECK_SIM_OK(sim_fault_clear_all());
}

TEST(fault_for_any_thread_hits_another_threads_call) {
    int id = arm(SIM_OP_STREAM_CREATE, -1, 1, 0, SIM_INJECTED, 0);
    thread_result r = {SIM_OK};
    harness_run_in_thread(create_in_thread, &r);
    CHECK_SIM(r.st, SIM_INJECTED);
    CHECK_EQ(hits_of(id), 1);
    sim_stream s = 0;
    if (CHECK_SIM_OK(sim_stream_create(&s))) CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_fault_clear_all());
}

TEST(any_operation_fault_hits_whatever_call_comes_nth) {
    int id = arm(SIM_OP_ANY, -1, 2, 0, SIM_INJECTED, 1);
    sim_stream s = 0;
    sim_event e = 0;
    CHECK_SIM_OK(sim_stream_create(&s));              /* 1st */
    CHECK_SIM(sim_event_create(&e, 0), SIM_INJECTED); /* 2nd */
    CHECK_SIM_OK(sim_event_create(&e, 0));            /* 3rd */
    CHECK_EQ(hits_of(id), 1);
    CHECK_SIM_OK(sim_event_destroy(e));
    CHECK_SIM_OK(sim_stream_destroy(s));
}

TEST(calls_that_are_never_injected_work_under_a_persistent_any_fault) {
    int id = arm(SIM_OP_ANY, -1, 1, 1, SIM_INJECTED, 1);
    int dev = -1;
    uint64_t epoch = 0, hits = 0;
    CHECK_SIM_OK(sim_get_device(&dev));
    CHECK_SIM_OK(sim_device_epoch(0, &epoch));
    CHECK(sim_status_name(SIM_OK) != NULL);
    CHECK(sim_last_error_message() != NULL);
    CHECK_SIM_OK(sim_fault_hits(id, &hits));
    CHECK_EQ(hits, 0);
    int h = hold_kind(SIM_EXEC_COPY, 1);
    CHECK_SIM_OK(sim_hold_release(h));
    (void)sim_calls(SIM_OP_ANY, -1);
    int n = 0;
    CHECK_SIM(sim_device_count(&n), SIM_INJECTED); /* a counted call is hit */
    CHECK_SIM_OK(sim_fault_hits(id, &hits));
    CHECK_EQ(hits, 1);
    CHECK_SIM_OK(sim_fault_clear_all());
    CHECK_SIM_OK(sim_device_count(&n));
}

TEST(failed_call_changes_nothing) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr buf = dev_alloc(16);
    sim_object_counts before = SIM_OBJECT_COUNTS_INIT, after = SIM_OBJECT_COUNTS_INIT;
    uint64_t live = 0, bytes = 0, live2 = 0, bytes2 = 0;
    CHECK_SIM_OK(sim_object_counts_get(0, &before));
    CHECK_SIM_OK(sim_mem_stats(0, &live, &bytes));

    arm(SIM_OP_ANY, -1, 1, 1, SIM_INJECTED, 1);
    sim_stream s2 = 0;
    sim_event e = 0;
    sim_devptr p = 0;
    sim_module m = 0;
    CHECK_SIM(sim_stream_create(&s2), SIM_INJECTED);
    CHECK_SIM(sim_event_create(&e, 0), SIM_INJECTED);
    CHECK_SIM(sim_malloc(&p, 64), SIM_INJECTED);
    CHECK_SIM(harness_module_load_file(&m, SIM_TEST_KERNELS), SIM_INJECTED);
    CHECK_SIM(launch_add(s, &k, buf, 4, 1, 0), SIM_INJECTED);
    CHECK_SIM(sim_memset_async(buf, 0xFF, 16, s), SIM_INJECTED);
    CHECK_SIM(sim_stream_destroy(s), SIM_INJECTED);
    CHECK_SIM(sim_free(buf), SIM_INJECTED);
    CHECK_SIM(sim_module_unload(k.module), SIM_INJECTED);
    CHECK_SIM(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL), SIM_INJECTED);
    CHECK_EQ(s2, 0);
    CHECK_EQ(e, 0);
    CHECK_EQ(p, 0);
    CHECK_EQ(m, 0);
    CHECK_SIM_OK(sim_fault_clear_all());

    CHECK_SIM_OK(sim_object_counts_get(0, &after));
    CHECK_SIM_OK(sim_mem_stats(0, &live2, &bytes2));
    CHECK_EQ(after.streams, before.streams);
    CHECK_EQ(after.events, before.events);
    CHECK_EQ(after.modules, before.modules);
    CHECK_EQ(live2, live);
    CHECK_EQ(bytes2, bytes);
    /* Nothing was enqueued, destroyed or begun. */
    sim_capture_status cs = SIM_CAPTURE_STATUS_ACTIVE;
    CHECK_SIM_OK(sim_stream_get_capture_info(s, &cs, NULL, NULL));
    CHECK_EQ(cs, SIM_CAPTURE_STATUS_NONE);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    uint32_t out[4];
    dev_read(out, buf, sizeof out);
    for (int i = 0; i < 4; i++) CHECK_EQ(out[i], 0);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(buf);
    kernels_unload(&k);
}

TEST(failed_end_capture_leaves_the_capture_active) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr buf = dev_alloc(4);
    CHECK_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_SIM_OK(launch_add(s, &k, buf, 1, 1, 0));
    arm(SIM_OP_END_CAPTURE, -1, 1, 0, SIM_INJECTED, 0);
    sim_graph g = 0;
    CHECK_SIM(sim_stream_end_capture(s, &g), SIM_INJECTED);
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    CHECK_SIM_OK(sim_stream_get_capture_info(s, &cs, NULL, NULL));
    CHECK_EQ(cs, SIM_CAPTURE_STATUS_ACTIVE);
    if (CHECK_SIM_OK(sim_stream_end_capture(s, &g))) {
        size_t n = 0;
        CHECK_SIM_OK(sim_graph_node_count(g, &n));
        CHECK_EQ(n, 1);
        CHECK_SIM_OK(sim_graph_destroy(g));
    }
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(buf);
    kernels_unload(&k);
}

TEST(fault_hits_are_counted_per_fault) {
    int a = arm(SIM_OP_EVENT_CREATE, -1, 1, 1, SIM_INJECTED, 0);
    int b = arm(SIM_OP_STREAM_CREATE, -1, 1, 1, SIM_INJECTED, 0);
    CHECK(a != b);
    sim_event e = 0;
    sim_stream s = 0;
    for (int i = 0; i < 3; i++) CHECK_SIM(sim_event_create(&e, 0), SIM_INJECTED);
    CHECK_SIM(sim_stream_create(&s), SIM_INJECTED);
    CHECK_EQ(hits_of(a), 3);
    CHECK_EQ(hits_of(b), 1);
    CHECK_SIM_OK(sim_fault_clear_all());
}

TEST(fault_arm_rejects_bad_faults) {
    int id = -1;
    sim_fault f = SIM_FAULT_INIT;
    CHECK_SIM(sim_fault_arm(NULL, &id), SIM_INVALID_VALUE);
    CHECK_SIM(sim_fault_arm(&f, NULL), SIM_INVALID_VALUE);
    f.nth = 0;
    CHECK_SIM(sim_fault_arm(&f, &id), SIM_INVALID_VALUE);
    f = (sim_fault)SIM_FAULT_INIT;
    f.error = SIM_OK;
    CHECK_SIM(sim_fault_arm(&f, &id), SIM_INVALID_VALUE);
    f = (sim_fault)SIM_FAULT_INIT;
    f.op = SIM_OP_COUNT_;
    CHECK_SIM(sim_fault_arm(&f, &id), SIM_INVALID_VALUE);
    f.op = -2;
    CHECK_SIM(sim_fault_arm(&f, &id), SIM_INVALID_VALUE);
    f = (sim_fault)SIM_FAULT_INIT;
    f.device = harness_device_count();
    CHECK_SIM(sim_fault_arm(&f, &id), SIM_INVALID_VALUE);
    f = (sim_fault)SIM_FAULT_INIT;
    f.size = 0;
    CHECK_SIM(sim_fault_arm(&f, &id), SIM_INVALID_VALUE);
    /* At most SIM_MAX_FAULTS at once. */
    f = (sim_fault)SIM_FAULT_INIT;
    f.op = SIM_OP_GRAPH_ATTACH_HOOK;
    for (int i = 0; i < SIM_MAX_FAULTS; i++) CHECK_SIM_OK(sim_fault_arm(&f, &id));
    CHECK(sim_fault_arm(&f, &id) != SIM_OK);
    CHECK_SIM_OK(sim_fault_clear_all());
    CHECK_SIM_OK(sim_fault_arm(&f, &id));
    CHECK_SIM_OK(sim_fault_clear_all());
    uint64_t hits = 0;
    CHECK(sim_fault_hits(-1, &hits) != SIM_OK);
    CHECK(sim_fault_hits(1000, &hits) != SIM_OK);
}

/* ---- holds --------------------------------------------------------------------- */

TEST(hold_wait_reached_times_out_when_nothing_reaches_it) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    int h = hold_kind(SIM_EXEC_KERNEL, 1);
    CHECK_SIM(sim_hold_wait_reached(h, 50), SIM_TIMEOUT);
    /* Releasing an unreached hold disarms it: later work is not held. */
    CHECK_SIM_OK(sim_hold_release(h));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kernels_unload(&k);
}

TEST(hold_blocks_the_nth_execution_until_released) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr log = dev_alloc(4 * 6);
    int h = hold_kernel(k.append, 3);
    for (uint32_t i = 1; i <= 5; i++) CHECK_SIM_OK(launch_append(s, &k, log, i));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_EQ(dev_peek_u32(log), 2); /* two ran; the third blocks before it runs */
    CHECK_SIM(sim_stream_query(s), SIM_NOT_READY);
    CHECK_EQ(dev_peek_u32(log), 2);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    uint32_t v[5];
    CHECK_EQ(log_read(log, v, 5), 5);
    for (uint32_t i = 0; i < 5; i++) CHECK_EQ(v[i], i + 1);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(log);
    kernels_unload(&k);
}

static void mark_host(void *user, sim_status st) {
    (void)st;
    (*(int *)user)++;
}

TEST(hold_of_each_kind_blocks_only_executions_of_that_kind) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0, cap = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_stream_create(&cap));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr w = dev_alloc(256);
    /* A graph to launch: one noop kernel. */
    sim_graph g = 0;
    sim_graph_exec x = 0;
    CHECK_SIM_OK(sim_stream_begin_capture(cap, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_SIM_OK(sim_launch_kernel(cap, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_stream_end_capture(cap, &g));
    CHECK_SIM_OK(sim_graph_instantiate(&x, g));
    const sim_exec_kind kinds[] = {SIM_EXEC_COPY, SIM_EXEC_FILL, SIM_EXEC_HOST_FUNC,
                                   SIM_EXEC_EVENT_RECORD, SIM_EXEC_GRAPH};
    uint32_t host = 0;
    int host_calls = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        CHECK_SIM_OK(sim_memset_async(w, 0, 256, s));
        CHECK_SIM_OK(sim_stream_synchronize(s));
        int h = hold_kind(kinds[i], 1);
        /* Before: a kernel (not of the held kind), then the held op, then a
         * marker kernel. */
        CHECK_SIM_OK(launch_set(s, &k, w, 1, SIM_TARGET_AICPU));
        switch (kinds[i]) {
        case SIM_EXEC_COPY:
            CHECK_SIM_OK(sim_memcpy_async(&host, DEVP(w), 4, SIM_COPY_DEVICE_TO_HOST, s));
            break;
        case SIM_EXEC_FILL:
            CHECK_SIM_OK(sim_memset_async(w + 64, 7, 4, s));
            break;
        case SIM_EXEC_HOST_FUNC:
            CHECK_SIM_OK(sim_launch_host_func(s, mark_host, &host_calls));
            break;
        case SIM_EXEC_EVENT_RECORD:
            CHECK_SIM_OK(sim_event_record(e, s));
            break;
        case SIM_EXEC_GRAPH:
            CHECK_SIM_OK(sim_graph_launch(x, s));
            break;
        default:
            break;
        }
        CHECK_SIM_OK(launch_set(s, &k, w + 4, 1, SIM_TARGET_AICPU));
        if (!CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS))) CHECK_EQ(i, 99);
        CHECK_EQ(dev_peek_u32(w), 1);     /* the kernel before ran */
        CHECK_EQ(dev_peek_u32(w + 4), 0); /* the marker after did not */
        if (kinds[i] == SIM_EXEC_EVENT_RECORD) CHECK_SIM(sim_event_query(e), SIM_NOT_READY);
        CHECK_SIM_OK(sim_hold_release(h));
        CHECK_SIM_OK(sim_stream_synchronize(s));
        CHECK_EQ(dev_peek_u32(w + 4), 1);
        if (kinds[i] == SIM_EXEC_FILL) CHECK_EQ(dev_peek_u32(w + 64), 0x07070707u);
    }
    CHECK_EQ(host, 1);
    CHECK_EQ(host_calls, 1);
    CHECK_SIM_OK(sim_graph_exec_destroy(x));
    CHECK_SIM_OK(sim_graph_destroy(g));
    CHECK_SIM_OK(sim_event_destroy(e));
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_stream_destroy(cap));
    dev_free(w);
    kernels_unload(&k);
}

TEST(hold_of_any_kind_blocks_the_first_execution) {
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr w = dev_alloc(4);
    int h = hold_kind(SIM_EXEC_ANY, 1);
    CHECK_SIM_OK(sim_memset_async(w, 0x11, 4, s));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_EQ(dev_peek_u32(w), 0);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(dev_peek_u32(w), 0x11111111u);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(w);
}

TEST(hold_on_one_device_does_not_block_another) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    test_kernels k0, k1;
    REQUIRE(kernels_load(&k0));
    REQUIRE_SIM_OK(sim_set_device(1));
    int ok1 = kernels_load(&k1);
    sim_stream s1 = 0;
    CHECK_SIM_OK(sim_stream_create(&s1));
    CHECK_SIM_OK(sim_set_device(0));
    sim_stream s0 = 0;
    CHECK_SIM_OK(sim_stream_create(&s0));
    if (ok1) {
        sim_hold hd = SIM_HOLD_INIT;
        hd.kind = SIM_EXEC_KERNEL;
        hd.device = 1;
        int h = -1;
        CHECK_SIM_OK(sim_hold_arm(&hd, &h));
        CHECK_SIM_OK(sim_launch_kernel(s0, k0.noop, SIM_TARGET_AICPU, 1, NULL, 0));
        CHECK_SIM_OK(sim_stream_synchronize(s0));
        CHECK_SIM_OK(sim_launch_kernel(s1, k1.noop, SIM_TARGET_AICPU, 1, NULL, 0));
        CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
        CHECK_SIM(sim_stream_query(s1), SIM_NOT_READY);
        CHECK_SIM_OK(sim_hold_release(h));
        CHECK_SIM_OK(sim_stream_synchronize(s1));
    }
    CHECK_SIM_OK(sim_stream_destroy(s0));
    CHECK_SIM_OK(sim_stream_destroy(s1));
    kernels_unload(&k0);
    CHECK_SIM_OK(sim_set_device(1));
    if (ok1) kernels_unload(&k1);
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(hold_arm_rejects_bad_holds) {
    int id = -1;
    sim_hold h = SIM_HOLD_INIT;
    CHECK_SIM(sim_hold_arm(NULL, &id), SIM_INVALID_VALUE);
    CHECK_SIM(sim_hold_arm(&h, NULL), SIM_INVALID_VALUE);
    h.nth = 0;
    CHECK_SIM(sim_hold_arm(&h, &id), SIM_INVALID_VALUE);
    h = (sim_hold)SIM_HOLD_INIT;
    h.kind = 99;
    CHECK_SIM(sim_hold_arm(&h, &id), SIM_INVALID_VALUE);
    h = (sim_hold)SIM_HOLD_INIT;
    h.size = 0;
    CHECK_SIM(sim_hold_arm(&h, &id), SIM_INVALID_VALUE);
    h = (sim_hold)SIM_HOLD_INIT;
    h.device = harness_device_count();
    CHECK_SIM(sim_hold_arm(&h, &id), SIM_INVALID_VALUE);
    CHECK(sim_hold_release(-1) != SIM_OK);
    CHECK(sim_hold_wait_reached(-1, 1) != SIM_OK);
    /* At most SIM_MAX_HOLDS at once. */
    h = (sim_hold)SIM_HOLD_INIT;
    h.kind = SIM_EXEC_GRAPH;
    h.nth = 1000000;
    for (int i = 0; i < SIM_MAX_HOLDS; i++) CHECK_SIM_OK(sim_hold_arm(&h, &id));
    CHECK(sim_hold_arm(&h, &id) != SIM_OK);
    CHECK_SIM_OK(sim_hold_release_all());
    CHECK_SIM_OK(sim_hold_arm(&h, &id));
    CHECK_SIM_OK(sim_hold_release_all());
}

/* ---- execution failures -------------------------------------------------------------- */

TEST(exec_fail_fails_the_nth_fill_on_the_device_after_its_enqueue_succeeded) {
    sim_stream s = 0, t = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_stream_create(&t));
    sim_devptr a = dev_alloc(64), b = dev_alloc(64);
    sim_hold where = SIM_HOLD_INIT;
    where.kind = SIM_EXEC_FILL;
    where.device = 0;
    where.nth = 2;
    int id = -1;
    CHECK_SIM_OK(sim_exec_fail_arm(&where, SIM_KERNEL_ERROR, &id));
    /* the 1st fill runs; the 2nd is enqueued fine and fails on the device,
     * writing nothing; the stream keeps the error and skips later work */
    CHECK_SIM_OK(sim_memset_async(a, 0x11, 64, s));
    CHECK_SIM_OK(sim_memset_async(b, 0x22, 64, s));
    CHECK_SIM_OK(sim_memset_async(a, 0x33, 64, s));
    CHECK_SIM(sim_stream_synchronize(s), SIM_KERNEL_ERROR);
    CHECK_EQ(dev_peek_u32(a), 0x11111111u);
    CHECK_EQ(dev_peek_u32(b), 0u);
    uint64_t hits = 0;
    CHECK_SIM_OK(sim_exec_fail_hits(id, &hits));
    CHECK_EQ(hits, 1);
    /* once fired it is spent: later fills on another stream run */
    CHECK_SIM_OK(sim_memset_async(b, 0x44, 64, t));
    CHECK_SIM_OK(sim_stream_synchronize(t));
    CHECK_EQ(dev_peek_u32(b), 0x44444444u);
    CHECK_SIM_OK(sim_exec_fail_clear_all());
    CHECK_SIM(sim_exec_fail_arm(NULL, SIM_KERNEL_ERROR, &id), SIM_INVALID_VALUE);
    CHECK_SIM(sim_exec_fail_arm(&where, SIM_OK, &id), SIM_INVALID_VALUE);
    CHECK(sim_exec_fail_hits(-1, &hits) != SIM_OK);
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_stream_destroy(t));
    dev_free(a);
    dev_free(b);
}

/* ---- fatal devices ------------------------------------------------------------------ */

TEST(fatal_device_fails_operations_completes_pending_work_and_reset_recovers) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    /* The blocked kernel writes its wait result into device 0 memory (a
     * kernel dereferences whatever address it is given), so that the result
     * stays readable while device 1 is lost. */
    sim_devptr result = dev_alloc(4);
    const uint32_t unset = 0xABCDu;
    dev_write(result, &unset, 4);
    REQUIRE_SIM_OK(sim_set_device(1));
    test_kernels k;
    probe_kernels pk;
    if (!kernels_load(&k) || !probes_load(&pk)) {
        sim_set_device(0);
        return;
    }
    sim_stream s = 0, helper = 0;
    sim_event e = 0;
    CHECK_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_stream_create(&helper));
    CHECK_SIM_OK(sim_event_create(&e, 0));
    sim_devptr words = dev_alloc(32);
    uint64_t epoch = 0, after = 0;
    CHECK_SIM_OK(sim_device_epoch(1, &epoch));
    /* A kernel provably running, blocked in the wait service with no
     * timeout, and work queued behind it. */
    start_blocked_kernel(s, helper, &k, &pk, words, words + 16, result);
    CHECK_SIM_OK(launch_add(s, &k, words + 8, 1, 1, 0));
    CHECK_SIM_OK(sim_event_record(e, s));

    CHECK_SIM_OK(sim_device_make_fatal(1));
    /* Pending work completes with DEVICE_LOST: nothing hangs. */
    CHECK_SIM(sim_stream_synchronize(s), SIM_DEVICE_LOST);
    CHECK_SIM(sim_event_synchronize(e), SIM_DEVICE_LOST);
    /* Every later operation on the device fails. */
    sim_stream s2 = 0;
    sim_devptr p = 0;
    CHECK_SIM(sim_stream_create(&s2), SIM_DEVICE_LOST);
    CHECK_SIM(sim_malloc(&p, 64), SIM_DEVICE_LOST);
    CHECK_SIM(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, NULL, 0), SIM_DEVICE_LOST);
    CHECK_SIM(sim_stream_query(s), SIM_DEVICE_LOST);
    uint32_t v = 0;
    CHECK_SIM(sim_atomic_read_u32(words, &v), SIM_DEVICE_LOST);
    CHECK_SIM(sim_device_synchronize(), SIM_DEVICE_LOST);
    /* Device 0 works. */
    CHECK_SIM_OK(sim_set_device(0));
    sim_stream s0 = 0;
    if (CHECK_SIM_OK(sim_stream_create(&s0))) {
        CHECK_SIM_OK(sim_stream_synchronize(s0));
        CHECK_SIM_OK(sim_stream_destroy(s0));
    }
    /* The reset waits for the blocked kernel to return, clears the lost
     * state and moves the epoch. */
    CHECK_SIM_OK(sim_set_device(1));
    CHECK_SIM_OK(sim_device_reset());
    CHECK_SIM_OK(sim_device_epoch(1, &after));
    CHECK_EQ(after, epoch + 1);
    CHECK_SIM(sim_stream_query(s), SIM_INVALID_HANDLE);
    CHECK_SIM_OK(sim_set_device(0));
    CHECK_EQ(dev_read_u32(result), WAIT_RESULT_DEVICE_LOST); /* the wait service returned */
    dev_free(result);
    CHECK_SIM_OK(sim_set_device(1));
    test_kernels k2;
    if (kernels_load(&k2)) {
        sim_stream s3 = 0;
        sim_devptr w = dev_alloc(4);
        if (CHECK_SIM_OK(sim_stream_create(&s3))) {
            CHECK_SIM_OK(launch_add(s3, &k2, w, 1, 6, 0));
            CHECK_SIM_OK(sim_stream_synchronize(s3));
            CHECK_EQ(dev_peek_u32(w), 6);
            CHECK_SIM_OK(sim_stream_destroy(s3));
        }
        dev_free(w);
        kernels_unload(&k2);
    }
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(make_fatal_rejects_bad_devices) {
    CHECK_SIM(sim_device_make_fatal(-1), SIM_INVALID_VALUE);
    CHECK_SIM(sim_device_make_fatal(harness_device_count()), SIM_INVALID_VALUE);
}
