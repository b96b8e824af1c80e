/*
 * Streams: in-order asynchronous execution, query and synchronise, destroy
 * with pending work, parameter blocks copied at enqueue, AICore gang
 * scheduling and waves, concurrent AICPU kernels, host functions, and
 * device-side errors that never hang.
 */
#include "harness.h"
#include "kernels.h"

#include <kctx/sim_kernel.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int core_count(int device) {
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    CHECK_SIM_OK(sim_device_get_props(device, &p));
    return p.aicore_count;
}

TEST(stream_runs_kernels_in_enqueue_order) {
    enum {
        N = 300
    };
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr log = dev_alloc((1 + N) * sizeof(uint32_t));
    for (uint32_t i = 0; i < N; i++) CHECK_SIM_OK(launch_append(s, &k, log, i));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    uint32_t values[N];
    CHECK_EQ(log_read(log, values, N), N);
    for (uint32_t i = 0; i < N; i++)
        if (!CHECK_EQ(values[i], i)) break;
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(log);
    kernels_unload(&k);
}

TEST(stream_orders_fills_copies_and_kernels) {
    enum {
        N = 64
    };
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr a = dev_alloc(N * 4), b = dev_alloc(N * 4);
    uint32_t out_a[N], out_b[N];
    for (int round = 0; round < 10; round++) {
        CHECK_SIM_OK(sim_memset_async(a, 0, N * 4, s));
        CHECK_SIM_OK(launch_add(s, &k, a, N, 5, 4));
        CHECK_SIM_OK(sim_memcpy_async(DEVP(b), DEVP(a), N * 4, SIM_COPY_DEVICE_TO_DEVICE, s));
        CHECK_SIM_OK(launch_add(s, &k, a, N, 1, 0));
        CHECK_SIM_OK(launch_add(s, &k, b, N, 10, 3));
        CHECK_SIM_OK(sim_memcpy_async(out_a, DEVP(a), N * 4, SIM_COPY_DEVICE_TO_HOST, s));
        CHECK_SIM_OK(sim_memcpy_async(out_b, DEVP(b), N * 4, SIM_COPY_DEVICE_TO_HOST, s));
        CHECK_SIM_OK(sim_stream_synchronize(s));
        for (int i = 0; i < N; i++) {
            if (!CHECK_EQ(out_a[i], 6) || !CHECK_EQ(out_b[i], 15)) break;
        }
    }
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(a);
    dev_free(b);
    kernels_unload(&k);
}

TEST(stream_query_is_not_ready_while_work_is_held) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_stream_query(s)); /* idle */
    int h = hold_kernel(k.noop, 1);
    CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM(sim_stream_query(s), SIM_NOT_READY);
    CHECK_SIM(sim_stream_query(s), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_query(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kernels_unload(&k);
}

TEST(held_stream_does_not_block_other_streams) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream held = 0, free_run = 0;
    REQUIRE_SIM_OK(sim_stream_create(&held));
    REQUIRE_SIM_OK(sim_stream_create(&free_run));
    sim_devptr w = dev_alloc(4);
    int h = hold_kernel(k.noop, 1);
    CHECK_SIM_OK(sim_launch_kernel(held, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM_OK(launch_add(free_run, &k, w, 1, 4, 1));
    CHECK_SIM_OK(sim_stream_synchronize(free_run));
    CHECK_EQ(dev_peek_u32(w), 4);
    CHECK_SIM(sim_stream_query(held), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(held));
    CHECK_SIM_OK(sim_stream_destroy(held));
    CHECK_SIM_OK(sim_stream_destroy(free_run));
    dev_free(w);
    kernels_unload(&k);
}

TEST(stream_destroy_with_pending_work_completes_it) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    sim_event done = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&done, SIM_EVENT_DISABLE_TIMING));
    sim_devptr w = dev_alloc(8);
    int h = hold_kernel(k.set_word, 1);
    CHECK_SIM_OK(launch_set(s, &k, w, 7, SIM_TARGET_AICPU));
    CHECK_SIM_OK(launch_add(s, &k, w + 4, 1, 3, 0));
    CHECK_SIM_OK(sim_event_record(done, s));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM_OK(sim_stream_destroy(s)); /* handle gone at once, work not lost */
    CHECK_SIM(sim_stream_query(s), SIM_INVALID_HANDLE);
    CHECK_EQ(dev_peek_u32(w), 0);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_event_synchronize(done));
    CHECK_EQ(dev_peek_u32(w), 7);
    CHECK_EQ(dev_peek_u32(w + 4), 3);
    CHECK_SIM_OK(sim_device_synchronize());
    CHECK_SIM_OK(sim_event_destroy(done));
    dev_free(w);
    kernels_unload(&k);
}

TEST(kernel_params_are_copied_at_enqueue) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr buf = dev_alloc(16), other = dev_alloc(16);
    struct add_u32_params *p = malloc(sizeof *p);
    REQUIRE(p);
    *p = (struct add_u32_params){buf, 4, 3};
    int h = hold_kernel(k.add_u32, 1);
    CHECK_SIM_OK(sim_launch_kernel(s, k.add_u32, SIM_TARGET_AICPU, 1, p, sizeof *p));
    /* The stream is blocked: the kernel has not run yet when the caller's
     * block changes and is freed. */
    p->buf = other;
    p->value = 100;
    p->n = 1;
    free(p);
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    uint32_t out[4], out_other[4];
    dev_read(out, buf, sizeof out);
    dev_read(out_other, other, sizeof out_other);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(out[i], 3);
        CHECK_EQ(out_other[i], 0);
    }
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(buf);
    dev_free(other);
    kernels_unload(&k);
}

static void check_gang(const test_kernels *k, sim_stream s, uint32_t blocks, int cores) {
    sim_devptr arrived = dev_alloc(4), ids = dev_alloc(4 * (size_t)blocks);
    if (!arrived || !ids) return;
    struct gang_params p = {arrived, ids, TEST_WAIT_TIMEOUT_NS};
    CHECK_SIM_OK(sim_launch_kernel(s, k->gang, SIM_TARGET_AICORE, blocks, &p, sizeof p));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(dev_read_u32(arrived), blocks);
    uint32_t core_of[64];
    dev_read(core_of, ids, 4 * (size_t)blocks);
    for (uint32_t i = 0; i < blocks; i++) {
        CHECK(core_of[i] < (uint32_t)cores);
        for (uint32_t j = 0; j < i; j++) CHECK(core_of[i] != core_of[j]); /* one per core */
    }
    dev_free(arrived);
    dev_free(ids);
}

TEST(aicore_blocks_up_to_core_count_start_together) {
    /* k_gang blocks wait for each other: a launch that does not start all
     * its blocks at once times out and reports an error. */
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    int cores = core_count(0);
    REQUIRE(cores >= 1 && cores <= 64);
    for (int blocks = 1; blocks <= cores; blocks++) check_gang(&k, s, (uint32_t)blocks, cores);
    CHECK_SIM_OK(sim_stream_destroy(s));
    kernels_unload(&k);
}

TEST(aicore_gangs_of_two_streams_do_not_deadlock) {
    /* Two full-width gangs on two streams: each must get all cores or none. */
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    uint32_t cores = (uint32_t)core_count(0);
    sim_devptr mem = dev_alloc(2 * (4 + 4 * (size_t)cores) * 10);
    for (uint32_t i = 0; i < 10; i++) {
        sim_devptr base = mem + i * 2 * (4 + 4 * (uint64_t)cores);
        struct gang_params pa = {base, base + 4, TEST_WAIT_TIMEOUT_NS};
        sim_devptr base_b = base + 4 + 4 * (uint64_t)cores;
        struct gang_params pb = {base_b, base_b + 4, TEST_WAIT_TIMEOUT_NS};
        CHECK_SIM_OK(sim_launch_kernel(a, k.gang, SIM_TARGET_AICORE, cores, &pa, sizeof pa));
        CHECK_SIM_OK(sim_launch_kernel(b, k.gang, SIM_TARGET_AICORE, cores, &pb, sizeof pb));
    }
    CHECK_SIM_OK(sim_stream_synchronize(a));
    CHECK_SIM_OK(sim_stream_synchronize(b));
    for (uint32_t i = 0; i < 20; i++)
        CHECK_EQ(dev_peek_u32(mem + i * (4 + 4 * (uint64_t)cores)), cores);
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    dev_free(mem);
    kernels_unload(&k);
}

TEST(aicore_launch_beyond_core_count_runs_every_block_in_waves) {
    test_kernels k;
    probe_kernels pk;
    REQUIRE(kernels_load(&k));
    if (!probes_load(&pk)) {
        kernels_unload(&k);
        return;
    }
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    uint32_t cores = (uint32_t)core_count(0);
    uint32_t blocks = 2 * cores + 1;
    sim_devptr out = dev_alloc(16 * (size_t)blocks);
    uint64_t param = out;
    CHECK_SIM_OK(sim_launch_kernel(s, k.whoami, SIM_TARGET_AICORE, blocks, &param, sizeof param));
    /* At most core-count blocks run at once. */
    sim_devptr counters = dev_alloc(8);
    struct max_inside_params mp = {counters, counters + 4};
    sim_device_props props = SIM_DEVICE_PROPS_INIT;
    CHECK_SIM_OK(sim_device_get_props(0, &props));
    uint32_t many = props.max_block_dim < 64 ? props.max_block_dim : 64;
    CHECK_SIM_OK(sim_launch_kernel(s, pk.max_inside, SIM_TARGET_AICORE, many, &mp, sizeof mp));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    uint32_t *who = calloc(blocks, 16);
    REQUIRE(who);
    dev_read(who, out, 16 * (size_t)blocks);
    for (uint32_t i = 0; i < blocks; i++) {
        CHECK_EQ(who[4 * i + 0], i);
        CHECK_EQ(who[4 * i + 1], blocks);
        CHECK(who[4 * i + 2] < cores);
        CHECK_EQ(who[4 * i + 3], cores);
    }
    uint32_t max = dev_peek_u32(counters + 4);
    CHECK(max >= 1 && max <= cores);
    CHECK_EQ(dev_peek_u32(counters), 0);
    free(who);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(out);
    dev_free(counters);
    probes_unload(&pk);
    kernels_unload(&k);
}

TEST(aicpu_kernel_sees_aicpu_context) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr out = dev_alloc(16);
    uint64_t param = out;
    CHECK_SIM_OK(sim_launch_kernel(s, k.whoami, SIM_TARGET_AICPU, 1, &param, sizeof param));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    uint32_t who[4];
    dev_read(who, out, sizeof who);
    CHECK_EQ(who[0], 0);
    CHECK_EQ(who[1], 1);
    CHECK_EQ(who[2], UINT32_MAX);
    CHECK_EQ(who[3], (uint32_t)core_count(0));
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(out);
    kernels_unload(&k);
}

TEST(launch_rejects_bad_block_counts_targets_and_param_sizes) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_device_props props = SIM_DEVICE_PROPS_INIT;
    CHECK_SIM_OK(sim_device_get_props(0, &props));
    char *big = calloc(1, (size_t)props.max_params_size + 1);
    REQUIRE(big);
    CHECK_SIM(sim_launch_kernel(s, k.noop, SIM_TARGET_AICORE, 0, NULL, 0), SIM_INVALID_VALUE);
    CHECK_SIM(sim_launch_kernel(s, k.noop, SIM_TARGET_AICORE, props.max_block_dim + 1, NULL, 0),
              SIM_INVALID_VALUE);
    CHECK_SIM(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 2, NULL, 0), SIM_INVALID_VALUE);
    CHECK_SIM(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 0, NULL, 0), SIM_INVALID_VALUE);
    CHECK_SIM(sim_launch_kernel(s, k.noop, (sim_target)3, 1, NULL, 0), SIM_INVALID_VALUE);
    CHECK_SIM(
        sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, big, (size_t)props.max_params_size + 1),
        SIM_INVALID_VALUE);
    /* The largest allowed block is accepted. */
    CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, big, props.max_params_size));
    CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICORE, props.max_block_dim, NULL, 0));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    free(big);
    CHECK_SIM_OK(sim_stream_destroy(s));
    kernels_unload(&k);
}

TEST(aicpu_kernels_of_two_streams_run_concurrently) {
    /* Stream A's AICPU kernel waits for a word that stream B's AICPU kernel
     * sets: if the AICPU ran one kernel at a time, A would time out. */
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    sim_devptr words = dev_alloc(8);
    int h = hold_kernel(k.wait_word, 1);
    CHECK_SIM_OK(launch_wait(a, &k, words, 0, TEST_WAIT_TIMEOUT_NS, words + 4, SIM_TARGET_AICPU));
    /* A's kernel is provably the first to be dispatched. */
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(launch_set(b, &k, words, 1, SIM_TARGET_AICPU));
    CHECK_SIM_OK(sim_stream_synchronize(b));
    CHECK_SIM_OK(sim_stream_synchronize(a));
    CHECK_EQ(dev_peek_u32(words), 1);
    CHECK_EQ(dev_peek_u32(words + 4), WAIT_RESULT_OK);
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    dev_free(words);
    kernels_unload(&k);
}

TEST(wait_service_times_out) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr words = dev_alloc(8);
    CHECK_SIM_OK(launch_wait(s, &k, words, 0, 1000000 /* 1 ms */, words + 4, SIM_TARGET_AICPU));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(dev_peek_u32(words + 4), WAIT_RESULT_TIMEOUT);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(words);
    kernels_unload(&k);
}

typedef struct host_log {
    int order[64];
    sim_status status[64];
    int n;
    int on_caller_thread; /* host functions run on sim threads */
    pthread_t caller;
} host_log;

typedef struct host_call {
    host_log *log;
    int index;
} host_call;

static void append_host(void *user, sim_status status) {
    host_call *c = user;
    c->log->order[c->log->n] = c->index;
    c->log->status[c->log->n] = status;
    c->log->n++;
    if (pthread_equal(pthread_self(), c->log->caller)) c->log->on_caller_thread++;
}

TEST(host_functions_run_in_stream_order) {
    enum {
        N = 50
    };
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr log = dev_alloc((1 + N) * 4);
    host_log hl;
    memset(&hl, 0, sizeof hl);
    hl.caller = pthread_self();
    host_call calls[N];
    for (int i = 0; i < N; i++) {
        calls[i] = (host_call){&hl, i};
        CHECK_SIM_OK(launch_append(s, &k, log, (uint32_t)i));
        CHECK_SIM_OK(sim_launch_host_func(s, append_host, &calls[i]));
    }
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(hl.n, N);
    CHECK_EQ(hl.on_caller_thread, 0);
    for (int i = 0; i < N && i < hl.n; i++) {
        CHECK_EQ(hl.order[i], i);
        CHECK_SIM(hl.status[i], SIM_OK);
    }
    uint32_t values[N];
    CHECK_EQ(log_read(log, values, N), N);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(log);
    kernels_unload(&k);
}

typedef struct api_from_host {
    sim_stream stream;
    sim_status create, query, count, malloc_st, launch;
    sim_stream created;
    int device_count;
    sim_function fn;
} api_from_host;

static void call_api_from_host(void *user, sim_status status) {
    api_from_host *a = user;
    (void)status;
    a->create = sim_stream_create(&a->created);
    a->query = sim_stream_query(a->stream);
    a->count = sim_device_count(&a->device_count);
    sim_devptr p = 0;
    a->malloc_st = sim_malloc(&p, 64);
    a->launch = sim_launch_kernel(a->stream, a->fn, SIM_TARGET_AICPU, 1, NULL, 0);
}

TEST(host_function_calling_the_sim_is_not_permitted) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    api_from_host a = {s, SIM_OK, SIM_OK, SIM_OK, SIM_OK, SIM_OK, 0, -1, k.noop};
    CHECK_SIM_OK(sim_launch_host_func(s, call_api_from_host, &a));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM(a.create, SIM_NOT_PERMITTED);
    CHECK_SIM(a.query, SIM_NOT_PERMITTED);
    CHECK_SIM(a.count, SIM_NOT_PERMITTED);
    CHECK_SIM(a.malloc_st, SIM_NOT_PERMITTED);
    CHECK_SIM(a.launch, SIM_NOT_PERMITTED);
    CHECK_EQ(a.created, 0);
    CHECK_EQ(a.device_count, -1);
    /* The stream is healthy afterwards. */
    CHECK_SIM_OK(sim_stream_query(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kernels_unload(&k);
}

TEST(kernel_error_fails_the_stream_and_later_work_completes_at_once) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0, waiter = 0;
    sim_event after = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_stream_create(&waiter));
    REQUIRE_SIM_OK(sim_event_create(&after, SIM_EVENT_DISABLE_TIMING));
    /* words: [0] added to on s, [1] the wait's result, [2] added to on the
     * waiter, [3] the word waited on (never set) */
    sim_devptr buf = dev_alloc(16);
    const uint32_t not_run = 0xABCDu;
    dev_write(buf + 4, &not_run, 4);
    host_log hl;
    memset(&hl, 0, sizeof hl);
    hl.caller = pthread_self();
    host_call call = {&hl, 1};

    CHECK_SIM_OK(launch_error(s, &k, 4242, 0x77));
    /* Enqueued after the error: complete at once with the error, without
     * running (the wait would otherwise block until its timeout). */
    CHECK_SIM_OK(launch_wait(s, &k, buf + 12, 0, TEST_WAIT_TIMEOUT_NS, buf + 4, SIM_TARGET_AICPU));
    CHECK_SIM_OK(launch_add(s, &k, buf, 1, 5, 0));
    CHECK_SIM_OK(sim_launch_host_func(s, append_host, &call));
    CHECK_SIM_OK(sim_event_record(after, s));

    CHECK_SIM(sim_stream_synchronize(s), SIM_KERNEL_ERROR);
    CHECK(strstr(sim_last_error_message(), "4242") != NULL);
    CHECK_SIM(sim_stream_query(s), SIM_KERNEL_ERROR);
    CHECK_EQ(dev_peek_u32(buf), 0);
    CHECK_EQ(dev_peek_u32(buf + 4), not_run);
    CHECK_EQ(hl.n, 1);
    CHECK_SIM(hl.status[0], SIM_KERNEL_ERROR);
    /* The event recorded after the error still signals. */
    CHECK(sim_event_query(after) != SIM_NOT_READY);
    CHECK_SIM2(sim_event_synchronize(after), SIM_OK, SIM_KERNEL_ERROR);
    /* A stream that waits on that event takes the error too. */
    CHECK_SIM_OK(sim_stream_wait_event(waiter, after));
    CHECK_SIM_OK(launch_add(waiter, &k, buf + 8, 1, 1, 0));
    CHECK_SIM(sim_stream_synchronize(waiter), SIM_KERNEL_ERROR);
    CHECK_SIM(sim_stream_query(waiter), SIM_KERNEL_ERROR);
    /* Sticky: later work on the failed stream fails the same way. */
    CHECK_SIM_OK(launch_add(s, &k, buf, 1, 5, 0));
    CHECK_SIM(sim_stream_synchronize(s), SIM_KERNEL_ERROR);
    CHECK_EQ(dev_peek_u32(buf), 0);

    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_stream_destroy(waiter));
    CHECK_SIM_OK(sim_event_destroy(after));
    dev_free(buf);
    kernels_unload(&k);
}

TEST(kernel_error_on_one_stream_leaves_other_streams_healthy) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream bad = 0, good = 0;
    REQUIRE_SIM_OK(sim_stream_create(&bad));
    REQUIRE_SIM_OK(sim_stream_create(&good));
    sim_devptr w = dev_alloc(4);
    CHECK_SIM_OK(launch_error(bad, &k, 1, 2));
    CHECK_SIM(sim_stream_synchronize(bad), SIM_KERNEL_ERROR);
    CHECK_SIM_OK(launch_add(good, &k, w, 1, 2, 1));
    CHECK_SIM_OK(sim_stream_synchronize(good));
    CHECK_EQ(dev_peek_u32(w), 2);
    CHECK_SIM_OK(sim_stream_destroy(bad));
    CHECK_SIM_OK(sim_stream_destroy(good));
    dev_free(w);
    kernels_unload(&k);
}

TEST(stream_runs_on_the_device_current_at_creation) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    REQUIRE_SIM_OK(sim_set_device(1));
    test_kernels k;
    if (!kernels_load(&k)) {
        sim_set_device(0);
        return;
    }
    sim_stream s = 0;
    CHECK_SIM_OK(sim_stream_create(&s));
    sim_devptr out = dev_alloc(16);
    CHECK_SIM_OK(sim_set_device(0));
    /* Enqueued from a thread whose current device is 0: still device 1. */
    int dev = -1;
    CHECK_SIM_OK(sim_stream_get_device(s, &dev));
    CHECK_EQ(dev, 1);
    uint64_t param = out;
    CHECK_SIM_OK(sim_launch_kernel(s, k.whoami, SIM_TARGET_AICORE, 1, &param, sizeof param));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_set_device(1));
    uint32_t who[4];
    dev_read(who, out, sizeof who);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(out);
    kernels_unload(&k);
    CHECK_SIM_OK(sim_set_device(0));
    CHECK_EQ(who[1], 1);
}

static uint64_t host_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

TEST(kernel_services_give_abi_version_device_and_the_hosts_monotonic_clock) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    REQUIRE_SIM_OK(sim_set_device(1));
    probe_kernels pk;
    if (!probes_load(&pk)) {
        sim_set_device(0);
        return;
    }
    sim_stream s = 0;
    CHECK_SIM_OK(sim_stream_create(&s));
    sim_devptr out = dev_alloc(64);
    struct services_params p = {out};
    uint64_t before = host_monotonic_ns();
    CHECK_SIM_OK(sim_launch_kernel(s, pk.services, SIM_TARGET_AICORE, 1, &p, sizeof p));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    uint64_t after = host_monotonic_ns();
    uint32_t o[4];
    uint64_t t[2];
    dev_read(o, out, sizeof o);
    dev_read(t, out + 16, sizeof t);
    CHECK_EQ(o[0], SIM_KERNEL_ABI_VERSION);
    CHECK_EQ(o[1], 1);
    CHECK_EQ(o[2], (uint32_t)core_count(1));
    CHECK(before <= t[0]);
    CHECK(t[0] <= t[1]);
    CHECK(t[1] <= after);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(out);
    probes_unload(&pk);
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(first_reported_device_error_wins) {
    probe_kernels pk;
    REQUIRE(probes_load(&pk));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    struct report_twice_params p = {5151, 6262};
    CHECK_SIM_OK(sim_launch_kernel(s, pk.report_twice, SIM_TARGET_AICPU, 1, &p, sizeof p));
    CHECK_SIM(sim_stream_synchronize(s), SIM_KERNEL_ERROR);
    const char *msg = sim_last_error_message();
    CHECK(strstr(msg, "5151") != NULL);
    CHECK(strstr(msg, "6262") == NULL);
    CHECK_SIM_OK(sim_stream_destroy(s));
    probes_unload(&pk);
}
