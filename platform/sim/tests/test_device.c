/*
 * Devices: count, properties, configuration from the environment, the
 * per-thread current device, counted lifecycle calls, the device epoch and
 * what a reset destroys.
 */
#include "harness.h"
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long env_or(const char *name, long def) {
    const char *v = getenv(name);
    return (v && *v) ? strtol(v, NULL, 10) : def;
}

TEST(device_configuration_follows_environment) {
    /* Defaults: 2 devices, 4 AICore cores, 256 MiB; ctest also runs this
     * test with another configuration in the environment. */
    long devices = env_or("KCTX_SIM_DEVICES", 2);
    long cores = env_or("KCTX_SIM_CORES", 4);
    long mb = env_or("KCTX_SIM_MEMORY_MB", 256);
    int count = -1;
    REQUIRE_SIM_OK(sim_device_count(&count));
    CHECK_EQ(count, devices);
    for (int d = 0; d < count; d++) {
        sim_device_props p = SIM_DEVICE_PROPS_INIT;
        if (!CHECK_SIM_OK(sim_device_get_props(d, &p))) continue;
        CHECK_EQ(p.aicore_count, cores);
        CHECK_EQ(p.memory_capacity, (uint64_t)mb << 20);
    }
}

TEST(device_count_rejects_null) { CHECK_SIM(sim_device_count(NULL), SIM_INVALID_VALUE); }

TEST(device_props_describe_each_device) {
    int count = harness_device_count();
    for (int d = 0; d < count; d++) {
        sim_device_props p = SIM_DEVICE_PROPS_INIT;
        if (!CHECK_SIM_OK(sim_device_get_props(d, &p))) continue;
        char want[64];
        snprintf(want, sizeof want, "sim-accelerator-%d", d);
        CHECK(strcmp(p.name, want) == 0);
        CHECK(p.aicore_count >= 1 && p.aicore_count <= 64);
        CHECK_EQ(p.aicpu_count, 1);
        CHECK(p.memory_capacity > 0);
        CHECK(p.max_params_size >= sizeof(struct wait_params));
        CHECK(p.max_block_dim >= (uint32_t)p.aicore_count);
        CHECK_EQ(p.device_word_size, 4);
        CHECK_EQ(p.alloc_alignment, 256);
    }
}

TEST(device_props_reject_bad_arguments) {
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    CHECK_SIM(sim_device_get_props(-1, &p), SIM_INVALID_VALUE);
    CHECK_SIM(sim_device_get_props(harness_device_count(), &p), SIM_INVALID_VALUE);
    CHECK_SIM(sim_device_get_props(0, NULL), SIM_INVALID_VALUE);
    p.size = 0;
    CHECK_SIM(sim_device_get_props(0, &p), SIM_INVALID_VALUE);
}

typedef struct thread_device {
    int initial;
    int after_set;
    sim_status set_status;
} thread_device;

static void *use_device_one(void *arg) {
    thread_device *t = arg;
    CHECK_SIM_OK(sim_get_device(&t->initial));
    t->set_status = sim_set_device(1);
    CHECK_SIM_OK(sim_get_device(&t->after_set));
    return NULL;
}

TEST(current_device_is_per_thread_and_defaults_to_zero) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    int dev = -1;
    CHECK_SIM_OK(sim_get_device(&dev));
    CHECK_EQ(dev, 0);
    thread_device t = {-1, -1, SIM_INVALID_VALUE};
    harness_run_in_thread(use_device_one, &t);
    CHECK_EQ(t.initial, 0);
    CHECK_SIM(t.set_status, SIM_OK);
    CHECK_EQ(t.after_set, 1);
    /* The other thread's choice did not change this thread's device. */
    CHECK_SIM_OK(sim_get_device(&dev));
    CHECK_EQ(dev, 0);

    CHECK_SIM_OK(sim_set_device(1));
    CHECK_SIM_OK(sim_get_device(&dev));
    CHECK_EQ(dev, 1);
    harness_run_in_thread(use_device_one, &t);
    CHECK_EQ(t.initial, 0);
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(set_device_rejects_out_of_range_devices) {
    CHECK_SIM(sim_set_device(-1), SIM_INVALID_VALUE);
    CHECK_SIM(sim_set_device(harness_device_count()), SIM_INVALID_VALUE);
    CHECK_SIM(sim_get_device(NULL), SIM_INVALID_VALUE);
    int dev = -1;
    CHECK_SIM_OK(sim_get_device(&dev));
    CHECK_EQ(dev, 0);
}

typedef struct lifecycle_snapshot {
    uint64_t c[8][SIM_LIFECYCLE_COUNT_];
} lifecycle_snapshot;

static void snapshot(lifecycle_snapshot *s) {
    memset(s, 0, sizeof *s);
    int n = harness_device_count();
    for (int d = 0; d < n && d < 8; d++)
        for (int op = 0; op < SIM_LIFECYCLE_COUNT_; op++)
            CHECK_SIM_OK(sim_lifecycle_count(d, (sim_lifecycle_op)op, &s->c[d][op]));
}

/* Checks that only (device, op) moved, by `delta` (device -1: every device). */
static void check_moved(const lifecycle_snapshot *before, int device, sim_lifecycle_op op,
                        uint64_t delta, int line) {
    lifecycle_snapshot after;
    snapshot(&after);
    int n = harness_device_count();
    for (int d = 0; d < n && d < 8; d++)
        for (int o = 0; o < SIM_LIFECYCLE_COUNT_; o++) {
            uint64_t want = before->c[d][o];
            if ((int)o == (int)op && (device < 0 || device == d)) want += delta;
            if (after.c[d][o] != want)
                ktc_check_eq(__FILE__, line, after.c[d][o], want, "lifecycle count", "expected");
        }
}

TEST(lifecycle_calls_are_counted_per_device) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    lifecycle_snapshot s;
    CHECK_SIM_OK(sim_lifecycle_reset_counts());
    snapshot(&s);
    for (int d = 0; d < 2; d++)
        for (int op = 0; op < SIM_LIFECYCLE_COUNT_; op++) CHECK_EQ(s.c[d][op], 0);

    CHECK_SIM_OK(sim_init());
    check_moved(&s, -1, SIM_LIFECYCLE_INIT, 1, __LINE__);
    snapshot(&s);
    CHECK_SIM_OK(sim_init()); /* idempotent, still counted */
    check_moved(&s, -1, SIM_LIFECYCLE_INIT, 1, __LINE__);

    snapshot(&s);
    CHECK_SIM_OK(sim_set_device(1));
    check_moved(&s, 1, SIM_LIFECYCLE_SET_DEVICE, 1, __LINE__);

    snapshot(&s);
    CHECK_SIM_OK(sim_device_reset()); /* current device: 1 */
    check_moved(&s, 1, SIM_LIFECYCLE_RESET_DEVICE, 1, __LINE__);

    snapshot(&s);
    CHECK_SIM_OK(sim_set_device(0));
    check_moved(&s, 0, SIM_LIFECYCLE_SET_DEVICE, 1, __LINE__);

    /* Reading the device, its epoch, its properties and the count are not
     * lifecycle calls. */
    snapshot(&s);
    int dev = -1, count = 0;
    uint64_t epoch = 0;
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    CHECK_SIM_OK(sim_get_device(&dev));
    CHECK_SIM_OK(sim_device_epoch(1, &epoch));
    CHECK_SIM_OK(sim_device_count(&count));
    CHECK_SIM_OK(sim_device_get_props(0, &p));
    check_moved(&s, -1, SIM_LIFECYCLE_INIT, 0, __LINE__);

    CHECK_SIM_OK(sim_lifecycle_reset_counts());
    snapshot(&s);
    for (int d = 0; d < 2; d++)
        for (int op = 0; op < SIM_LIFECYCLE_COUNT_; op++) CHECK_EQ(s.c[d][op], 0);
}

TEST(finalize_is_counted_on_every_device_and_the_sim_reinitialises) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    lifecycle_snapshot s;
    sim_stream s0 = 0, s1 = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s0));
    REQUIRE_SIM_OK(sim_set_device(1));
    REQUIRE_SIM_OK(sim_stream_create(&s1));
    REQUIRE_SIM_OK(sim_set_device(0));
    snapshot(&s);
    CHECK_SIM_OK(sim_finalize());
    check_moved(&s, -1, SIM_LIFECYCLE_FINALIZE, 1, __LINE__);
    /* Finalize reset every device: their objects are gone. */
    CHECK_SIM(sim_stream_query(s0), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_stream_query(s1), SIM_INVALID_HANDLE);
    for (int d = 0; d < 2; d++) {
        sim_object_counts c = SIM_OBJECT_COUNTS_INIT;
        CHECK_SIM_OK(sim_object_counts_get(d, &c));
        CHECK_EQ(c.streams, 0);
    }
    /* The next call re-initialises the sim implicitly. */
    sim_stream again = 0;
    CHECK_SIM_OK(sim_set_device(0));
    if (CHECK_SIM_OK(sim_stream_create(&again))) {
        CHECK_SIM_OK(sim_stream_synchronize(again));
        CHECK_SIM_OK(sim_stream_destroy(again));
    }
}

TEST(lifecycle_count_rejects_bad_arguments) {
    uint64_t c = 0;
    CHECK_SIM(sim_lifecycle_count(-1, SIM_LIFECYCLE_INIT, &c), SIM_INVALID_VALUE);
    CHECK_SIM(sim_lifecycle_count(harness_device_count(), SIM_LIFECYCLE_INIT, &c),
              SIM_INVALID_VALUE);
    CHECK_SIM(sim_lifecycle_count(0, SIM_LIFECYCLE_COUNT_, &c), SIM_INVALID_VALUE);
    CHECK_SIM(sim_lifecycle_count(0, (sim_lifecycle_op)-1, &c), SIM_INVALID_VALUE);
    CHECK_SIM(sim_lifecycle_count(0, SIM_LIFECYCLE_INIT, NULL), SIM_INVALID_VALUE);
}

TEST(device_epoch_increments_on_reset_of_that_device_only) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    uint64_t e0 = 0, e1 = 0, after0 = 0, after1 = 0;
    REQUIRE_SIM_OK(sim_device_epoch(0, &e0));
    REQUIRE_SIM_OK(sim_device_epoch(1, &e1));
    CHECK_SIM_OK(sim_device_reset()); /* device 0 */
    CHECK_SIM_OK(sim_device_epoch(0, &after0));
    CHECK_SIM_OK(sim_device_epoch(1, &after1));
    CHECK_EQ(after0, e0 + 1);
    CHECK_EQ(after1, e1);
    CHECK_SIM_OK(sim_device_reset());
    CHECK_SIM_OK(sim_device_epoch(0, &after0));
    CHECK_EQ(after0, e0 + 2);
}

TEST(device_epoch_rejects_bad_arguments) {
    uint64_t e = 0;
    CHECK_SIM(sim_device_epoch(-1, &e), SIM_INVALID_VALUE);
    CHECK_SIM(sim_device_epoch(harness_device_count(), &e), SIM_INVALID_VALUE);
    CHECK_SIM(sim_device_epoch(0, NULL), SIM_INVALID_VALUE);
}

static void noop_host_fn(void *user, sim_status status) {
    (void)user;
    (void)status;
}

TEST(device_reset_destroys_every_object_and_old_handles_are_stale) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0, other = 0;
    sim_event e = 0;
    sim_devptr p = 0;
    sim_graph g = 0;
    sim_graph_exec x = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DEFAULT));
    REQUIRE_SIM_OK(sim_malloc(&p, 4096));
    REQUIRE_SIM_OK(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_SIM_OK(launch_add(s, &k, p, 16, 1, 0));
    REQUIRE_SIM_OK(sim_stream_end_capture(s, &g));
    REQUIRE_SIM_OK(sim_graph_instantiate(&x, g));
    /* An object of device 1 survives the reset of device 0. */
    REQUIRE_SIM_OK(sim_set_device(1));
    REQUIRE_SIM_OK(sim_stream_create(&other));
    REQUIRE_SIM_OK(sim_set_device(0));

    CHECK_SIM_OK(sim_device_reset());

    sim_object_counts c = SIM_OBJECT_COUNTS_INIT;
    CHECK_SIM_OK(sim_object_counts_get(0, &c));
    CHECK_EQ(c.streams, 0);
    CHECK_EQ(c.events, 0);
    CHECK_EQ(c.modules, 0);
    CHECK_EQ(c.graphs, 0);
    CHECK_EQ(c.graph_execs, 0);
    uint64_t live = 1, bytes = 1;
    CHECK_SIM_OK(sim_mem_stats(0, &live, &bytes));
    CHECK_EQ(live, 0);
    CHECK_EQ(bytes, 0);

    CHECK_SIM(sim_stream_query(s), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_stream_destroy(s), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_event_query(e), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_event_destroy(e), SIM_INVALID_HANDLE);
    sim_function fn = 0;
    CHECK_SIM(sim_module_get_function(&fn, k.module, "k_noop"), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_module_unload(k.module), SIM_INVALID_HANDLE);
    size_t nodes = 0;
    CHECK_SIM(sim_graph_node_count(g, &nodes), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_graph_destroy(g), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_graph_exec_destroy(x), SIM_INVALID_HANDLE);
    sim_devptr base = 0;
    size_t size = 0;
    CHECK_SIM(sim_mem_lookup(0, p, 1, &base, &size), SIM_INVALID_ADDRESS);

    /* The device is usable again; old functions and execs stay invalid on
     * new streams. */
    sim_stream fresh = 0;
    if (CHECK_SIM_OK(sim_stream_create(&fresh))) {
        CHECK_SIM(sim_launch_kernel(fresh, k.noop, SIM_TARGET_AICPU, 1, NULL, 0),
                  SIM_INVALID_HANDLE);
        CHECK_SIM(sim_graph_launch(x, fresh), SIM_INVALID_HANDLE);
        CHECK_SIM_OK(sim_launch_host_func(fresh, noop_host_fn, NULL));
        CHECK_SIM_OK(sim_stream_synchronize(fresh));
        CHECK_SIM_OK(sim_stream_destroy(fresh));
    }
    /* Device 1 was untouched. */
    CHECK_SIM_OK(sim_stream_query(other));
    CHECK_SIM_OK(sim_stream_destroy(other));
}

TEST(device_reset_abandons_pending_work_and_waits_for_running_kernels) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    test_kernels k;
    probe_kernels pk;
    REQUIRE(kernels_load(&k));
    REQUIRE(probes_load(&pk));
    sim_stream s = 0, helper = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_stream_create(&helper));
    sim_devptr words = dev_alloc(64);
    REQUIRE(words);
    /* The wait's result goes to device 1 memory (a kernel dereferences any
     * address it is given), which survives the reset of device 0. */
    REQUIRE_SIM_OK(sim_set_device(1));
    sim_devptr result = dev_alloc(4);
    const uint32_t unset = 0xABCDu;
    dev_write(result, &unset, 4);
    REQUIRE_SIM_OK(sim_set_device(0));
    /* A kernel provably running, blocked in the wait service with no
     * timeout, and work queued behind it: the reset must not wait for
     * either to finish by itself. */
    start_blocked_kernel(s, helper, &k, &pk, words, words + 16, result);
    CHECK_SIM_OK(launch_add(s, &k, words + 8, 1, 1, 0));
    uint64_t epoch = 0, after = 0;
    CHECK_SIM_OK(sim_device_epoch(0, &epoch));
    CHECK_SIM_OK(sim_device_reset());
    CHECK_SIM_OK(sim_device_epoch(0, &after));
    CHECK_EQ(after, epoch + 1);
    CHECK_SIM(sim_stream_query(s), SIM_INVALID_HANDLE);
    /* The reset waited for the kernel, whose wait returned DEVICE_LOST. */
    CHECK_SIM_OK(sim_set_device(1));
    CHECK_EQ(dev_read_u32(result), WAIT_RESULT_DEVICE_LOST);
    dev_free(result);
    CHECK_SIM_OK(sim_set_device(0));
    /* Work runs again after the reset. */
    test_kernels k2;
    REQUIRE(kernels_load(&k2));
    sim_stream s2 = 0;
    sim_devptr w = dev_alloc(4);
    if (CHECK_SIM_OK(sim_stream_create(&s2))) {
        CHECK_SIM_OK(launch_add(s2, &k2, w, 1, 9, 0));
        CHECK_SIM_OK(sim_stream_synchronize(s2));
        CHECK_EQ(dev_read_u32(w), 9);
        CHECK_SIM_OK(sim_stream_destroy(s2));
    }
    dev_free(w);
    kernels_unload(&k2);
}

TEST(current_device_and_epoch_work_on_a_lost_device) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    REQUIRE_SIM_OK(sim_set_device(1));
    uint64_t epoch = 0, lost_epoch = 0, after = 0;
    REQUIRE_SIM_OK(sim_device_epoch(1, &epoch));
    REQUIRE_SIM_OK(sim_device_make_fatal(1));
    int dev = -1;
    CHECK_SIM_OK(sim_get_device(&dev));
    CHECK_EQ(dev, 1);
    CHECK_SIM_OK(sim_device_epoch(1, &lost_epoch));
    CHECK_EQ(lost_epoch, epoch);
    sim_stream s = 0;
    CHECK_SIM(sim_stream_create(&s), SIM_DEVICE_LOST);
    /* Device 0 is not affected. */
    sim_stream s0 = 0;
    CHECK_SIM_OK(sim_set_device(0));
    if (CHECK_SIM_OK(sim_stream_create(&s0))) CHECK_SIM_OK(sim_stream_destroy(s0));
    /* Only a reset recovers the lost device; it moves the epoch. */
    CHECK_SIM_OK(sim_set_device(1));
    CHECK_SIM_OK(sim_device_reset());
    CHECK_SIM_OK(sim_device_epoch(1, &after));
    CHECK_EQ(after, epoch + 1);
    if (CHECK_SIM_OK(sim_stream_create(&s))) CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(device_synchronize_waits_for_every_stream_of_the_device) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    sim_devptr buf = dev_alloc(2 * 64 * sizeof(uint32_t));
    for (int i = 0; i < 20; i++) {
        CHECK_SIM_OK(launch_add(a, &k, buf, 64, 1, 4));
        CHECK_SIM_OK(launch_add(b, &k, buf + 64 * sizeof(uint32_t), 64, 2, 4));
    }
    CHECK_SIM_OK(sim_device_synchronize());
    CHECK_SIM_OK(sim_stream_query(a));
    CHECK_SIM_OK(sim_stream_query(b));
    CHECK_EQ(dev_peek_u32(buf), 20);
    CHECK_EQ(dev_peek_u32(buf + 64 * sizeof(uint32_t)), 40);
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    dev_free(buf);
    kernels_unload(&k);
}
