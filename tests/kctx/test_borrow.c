/*
 * test_borrow.c — borrowing the caller's device (K4, K5) and capture-mode
 * hygiene (contract section 0).
 *
 * Note that the harness checks K4 after every test of every executable:
 * the lifecycle counters move only by the calls the test makes itself.
 * The test below proves, once, that those counters do count.
 */
#include "kt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t lc(int device, sim_lifecycle_op op) {
    uint64_t n = 0;
    CHECK_SIM_OK(sim_lifecycle_count(device, op, &n));
    return n;
}

static uint64_t lc_total(int device) {
    uint64_t n = 0;
    for (int op = 0; op < SIM_LIFECYCLE_COUNT_; op++) n += lc(device, (sim_lifecycle_op)op);
    return n;
}

KT_TEST(lifecycle_counters_count_and_a_whole_kernel_lifecycle_makes_no_lifecycle_call) { /* K4 */
    int ndev = kt_device_count();
    /* 1. The counters count: each lifecycle call once, on purpose. */
    uint64_t init0 = lc(0, SIM_LIFECYCLE_INIT), fin0 = lc(0, SIM_LIFECYCLE_FINALIZE);
    uint64_t set0 = lc(0, SIM_LIFECYCLE_SET_DEVICE), reset0 = lc(0, SIM_LIFECYCLE_RESET_DEVICE);
    CHECK_SIM_OK(sim_init());
    CHECK_EQ(lc(0, SIM_LIFECYCLE_INIT), init0 + 1);
    CHECK_SIM_OK(sim_set_device(0));
    CHECK_EQ(lc(0, SIM_LIFECYCLE_SET_DEVICE), set0 + 1);
    CHECK_SIM_OK(sim_device_reset());
    CHECK_EQ(lc(0, SIM_LIFECYCLE_RESET_DEVICE), reset0 + 1);
    CHECK_SIM_OK(sim_finalize()); /* nothing is live: it only resets idle devices */
    CHECK_EQ(lc(0, SIM_LIFECYCLE_FINALIZE), fin0 + 1);
    /* ... then reset them, and trust a zero from here on. */
    CHECK_SIM_OK(sim_lifecycle_reset_counts());
    for (int d = 0; d < ndev; d++) CHECK_EQ(lc_total(d), 0);
    kt_lifecycle_rebaseline();

    /* 2. A whole kernel lifecycle, failure paths included. */
    kt_image noop = kt_image_noop(), append = kt_image_append(), ocl = kt_image_opencl();
    REQUIRE(noop.bytes && append.bytes && ocl.bytes);
    kctx_context a = kt_create();
    REQUIRE(a);
    kctx_kernel_config bad = kt_config(0);
    bad.token_capacity = 0;
    CHECK_K(kctx_kernel_init(a, &bad), KCTX_INVALID_ARGUMENT);
    kctx_kernel_config cfg = kt_config(0);
    kt_fault(SIM_OP_EVENT_CREATE, 3, 0); /* rollback completes */
    CHECK_K(kctx_kernel_init(a, &cfg), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    kt_fault(SIM_OP_MODULE_LOAD, 1, 0); /* and once more with a failing rollback */
    kt_fault(SIM_OP_STREAM_DESTROY, 1, 0);
    CHECK_K(kctx_kernel_init(a, &cfg), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(a, KCTX_PHASE_CLOSING);
    CHECK_OK(kctx_close(a));
    CHECK_OK(kctx_destroy(a));

    a = kt_kernel_ctx();
    REQUIRE(a);
    kctx_context busy = kt_create();
    REQUIRE(busy);
    CHECK_K(kctx_kernel_init(busy, &cfg), KCTX_BUSY);
    CHECK_OK(kctx_destroy(busy));
    CHECK_OK(kctx_prepare(a, 1, noop.bytes, noop.size));
    CHECK_OK(kctx_prepare(a, 2, noop.bytes, noop.size));
    CHECK_K(kctx_prepare(a, 1, append.bytes, append.size), KCTX_DUPLICATE_ID);
    CHECK_K(kctx_prepare(a, 3, ocl.bytes, ocl.size), KCTX_INCOMPATIBLE_IMAGE);
    kt_fault(SIM_OP_MODULE_LOAD, 1, 0);
    CHECK_K(kctx_prepare(a, 3, append.bytes, append.size), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_OK(kctx_prepare(a, 3, append.bytes, append.size));
    kt_fault(SIM_OP_EVENT_DESTROY, 2, 0);
    CHECK_K(kctx_close(a), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_OK(kctx_close(a));
    CHECK_OK(kctx_destroy(a));

    /* 3. The fatal path: quarantine, refused close and destroy. */
    a = kt_kernel_ctx();
    REQUIRE(a);
    CHECK_OK(kctx_prepare(a, 1, noop.bytes, noop.size));
    CHECK_SIM_OK(sim_device_make_fatal(0));
    CHECK_K(kctx_prepare(a, 2, append.bytes, append.size), KCTX_DEVICE_LOST);
    CHECK_K(kctx_close(a), KCTX_DEVICE_LOST);
    CHECK_K(kctx_destroy(a), KCTX_BUSY);
    for (int d = 0; d < ndev; d++) {
        if (!CHECK_EQ(lc_total(d), 0))
            fprintf(stderr, "    device %d: kctx made lifecycle calls\n", d);
    }
    /* Only the owner resets the device; then close completes (K36). */
    kt_owner_reset();
    CHECK_EQ(lc(0, SIM_LIFECYCLE_RESET_DEVICE), 1);
    CHECK_OK(kctx_close(a));
    CHECK_OK(kctx_destroy(a));
    for (int d = 0; d < ndev; d++) {
        CHECK_EQ(lc(d, SIM_LIFECYCLE_INIT), 0);
        CHECK_EQ(lc(d, SIM_LIFECYCLE_FINALIZE), 0);
        CHECK_EQ(lc(d, SIM_LIFECYCLE_SET_DEVICE), 0);
        CHECK_EQ(lc(d, SIM_LIFECYCLE_RESET_DEVICE), d == 0 ? 1 : 0);
    }
}

KT_TEST(kernel_init_borrows_the_calling_threads_current_device) { /* K4 */
    REQUIRE_DEVICES(2);
    kt_set_device(1); /* the framework chose device 1 for this thread */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    int d = -1;
    CHECK_OK(kctx_get_device(c, &d));
    CHECK_EQ(d, 1);
    CHECK_SIM_OK(sim_get_device(&d));
    CHECK_EQ(d, 1); /* kctx did not move the thread */
    kctx_resource_info r = kt_resources(c);
    int sd = -1;
    CHECK_SIM_OK(sim_stream_get_device(r.aicpu_stream, &sd));
    CHECK_EQ(sd, 1);
    CHECK_SIM_OK(sim_mem_lookup(1, r.runtime_image, 1, NULL, NULL));
    kt_finish(c);
    kt_set_device(0);
}

KT_TEST(prepare_and_close_on_another_current_device_are_refused_and_change_nothing) { /* K5 */
    REQUIRE_DEVICES(2);
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    kt_snap dev0 = kt_snap_take(0), dev1 = kt_snap_take(1);
    kt_state before = kt_state_take(c);
    kt_set_device(1); /* the framework switched this thread to device 1 */
    CHECK_K(kctx_prepare(c, 2, noop.bytes, noop.size), KCTX_INVALID_STATE);
    CHECK(strstr(kctx_last_error(c), "K5") != NULL);
    CHECK_K(kctx_close(c), KCTX_INVALID_STATE);
    CHECK_DEVICE_AT(0, dev0);
    CHECK_DEVICE_AT(1, dev1);
    kt_set_device(0);
    CHECK_UNCHANGED(c, before);
    CHECK_OK(kctx_prepare(c, 2, noop.bytes, noop.size));
    kt_finish(c);
}

typedef struct thread_call {
    kctx_context ctx;
    kt_image img;
    kctx_status prepare_st, close_st;
} thread_call;

static void *prepare_and_close_on_fresh_thread(void *p) {
    thread_call *t = p; /* a fresh thread's current device is 0 */
    t->prepare_st = kctx_prepare(t->ctx, 9, t->img.bytes, t->img.size);
    t->close_st = kctx_close(t->ctx);
    return NULL;
}

KT_TEST(the_current_device_is_per_thread) { /* K5 */
    REQUIRE_DEVICES(2);
    kt_set_device(1);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    thread_call t = {c, kt_image_noop(), KCTX_OK, KCTX_OK};
    REQUIRE(t.img.bytes);
    void *args[1] = {&t};
    kt_run_threads(1, prepare_and_close_on_fresh_thread, args);
    CHECK_K(t.prepare_st, KCTX_INVALID_STATE);
    CHECK_K(t.close_st, KCTX_INVALID_STATE);
    CHECK_PHASE(c, KCTX_PHASE_READY);
    kt_finish(c); /* from this thread, whose current device is 1 */
    kt_set_device(0);
}

/* ---- capture-mode hygiene ---------------------------------------------------- */

/* A framework thread running a GLOBAL-mode capture while the test's thread
 * uses kctx; steps are handed over with a condition variable. */
typedef struct capturer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int step; /* 1: capturing (set by the capturer), 2: end it (set by the test), 3: ended */
    sim_stream stream;
    sim_devptr buf;
    sim_status begin_st, end_st;
    size_t nodes;
} capturer;

static void cap_set(capturer *c, int step) {
    pthread_mutex_lock(&c->mu);
    c->step = step;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void cap_wait(capturer *c, int step) {
    pthread_mutex_lock(&c->mu);
    while (c->step < step) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}

static void *capture_thread(void *p) {
    capturer *c = p;
    CHECK_SIM_OK(sim_stream_create(&c->stream));
    CHECK_SIM_OK(sim_malloc(&c->buf, 4096));
    c->begin_st = sim_stream_begin_capture(c->stream, SIM_CAPTURE_MODE_GLOBAL);
    CHECK_SIM_OK(sim_memset_async(c->buf, 1, 4096, c->stream));
    cap_set(c, 1);
    cap_wait(c, 2);
    sim_graph g = 0;
    c->end_st = sim_stream_end_capture(c->stream, &g);
    if (c->end_st == SIM_OK) {
        CHECK_SIM_OK(sim_graph_node_count(g, &c->nodes));
        CHECK_SIM_OK(sim_graph_destroy(g));
    }
    CHECK_SIM_OK(sim_free(c->buf));
    CHECK_SIM_OK(sim_stream_destroy(c->stream));
    cap_set(c, 3);
    return NULL;
}

static sim_capture_status capture_status(sim_stream s) {
    sim_capture_status st = SIM_CAPTURE_STATUS_NONE;
    CHECK_SIM_OK(sim_stream_get_capture_info(s, &st, NULL, NULL));
    return st;
}

static void capturer_start(capturer *c, pthread_t *t) {
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (pthread_create(t, NULL, capture_thread, c) != 0) abort();
    cap_wait(c, 1);
}

static void capturer_end(capturer *c, pthread_t t) {
    cap_set(c, 2);
    pthread_join(t, NULL);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

KT_TEST(a_global_capture_on_another_thread_survives_init_prepare_and_close) { /* section 0 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    capturer cap;
    pthread_t t;
    capturer_start(&cap, &t);
    CHECK_SIM_OK(cap.begin_st);
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_GLOBAL);
    kctx_context c = kt_create();
    kctx_kernel_config cfg = kt_config(0);
    CHECK_OK(kctx_kernel_init(c, &cfg)); /* streams, events, module load, malloc */
    CHECK_EQ(capture_status(cap.stream), SIM_CAPTURE_STATUS_ACTIVE);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size)); /* module load, malloc, sync */
    CHECK_OK(kctx_prepare(c, 2, append.bytes, append.size));
    CHECK_OK(kctx_prepare(c, 3, noop.bytes, noop.size));
    CHECK_EQ(capture_status(cap.stream), SIM_CAPTURE_STATUS_ACTIVE);
    CHECK_OK(kctx_close(c)); /* frees, unloads */
    CHECK_OK(kctx_destroy(c));
    CHECK_EQ(capture_status(cap.stream), SIM_CAPTURE_STATUS_ACTIVE);
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_GLOBAL); /* restored after every entry */
    capturer_end(&cap, t);
    CHECK_SIM_OK(cap.end_st); /* the capture ended with a graph */
    CHECK_EQ(cap.nodes, 1);
}

KT_TEST(
    without_relaxing_the_same_calls_would_invalidate_that_capture) { /* section 0: the control */
    capturer cap;
    pthread_t t;
    capturer_start(&cap, &t);
    sim_devptr p = 0;
    CHECK_SIM(sim_malloc(&p, 256), SIM_CAPTURE_UNSUPPORTED); /* this thread is in GLOBAL mode */
    CHECK_EQ(capture_status(cap.stream), SIM_CAPTURE_STATUS_INVALIDATED);
    capturer_end(&cap, t);
    CHECK_SIM(cap.end_st, SIM_CAPTURE_INVALIDATED);
}

KT_TEST(the_capture_mode_is_restored_on_every_exit_path) { /* section 0 */
    kt_image noop = kt_image_noop(), append = kt_image_append(), ocl = kt_image_opencl();
    REQUIRE(noop.bytes && append.bytes && ocl.bytes);
    /* start from THREAD_LOCAL, so "restored" cannot be mistaken for "set to GLOBAL" */
    sim_capture_mode m = SIM_CAPTURE_MODE_THREAD_LOCAL;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m));
    kctx_kernel_config cfg = kt_config(0);
    kctx_context a = kt_create(), b = kt_create();
    REQUIRE(a && b);
    kt_fault(SIM_OP_MALLOC, 2, 0);
    CHECK_K(kctx_kernel_init(a, &cfg), KCTX_PLATFORM_ERROR); /* rollback */
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_OK(kctx_kernel_init(a, &cfg));
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_K(kctx_kernel_init(b, &cfg), KCTX_BUSY);
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_OK(kctx_prepare(a, 1, noop.bytes, noop.size));
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_K(kctx_prepare(a, 1, noop.bytes, noop.size), KCTX_DUPLICATE_ID);
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_K(kctx_prepare(a, 2, ocl.bytes, ocl.size), KCTX_INCOMPATIBLE_IMAGE);
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    kt_fault(SIM_OP_MODULE_LOAD, 1, 0);
    CHECK_K(kctx_prepare(a, 2, append.bytes, append.size), KCTX_PLATFORM_ERROR);
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    kt_fault(SIM_OP_FREE, 1, 0);
    CHECK_K(kctx_close(a), KCTX_PLATFORM_ERROR);
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_OK(kctx_close(a));
    CHECK_EQ(kt_capture_mode(), SIM_CAPTURE_MODE_THREAD_LOCAL);
    CHECK_OK(kctx_destroy(a));
    CHECK_OK(kctx_destroy(b));
    m = SIM_CAPTURE_MODE_GLOBAL;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m));
}

/* Program mode and the lifecycle table's finalize (kctx.h: kctx_program_init;
 * platform.h: kctx_platform_lifecycle_ops). A platform's finalize is
 * process-wide — the sim's resets every device, destroying the objects of
 * the framework and of every other context, as aclFinalize does — while a
 * program context owns one device, not the process: kctx never calls it,
 * on any path that called init (success then close, a failed set-device, a
 * rollback). Kills: a finalize call added to program close or to program
 * init's failure paths (the FINALIZE counter, proven to count here, moves;
 * the kernel context next door loses its streams). */
KT_TEST(program_mode_never_finalizes_the_platform_a_kernel_context_shares) { /* K4, K31 */
    REQUIRE_DEVICES(2);
    int ndev = kt_device_count();
    /* the counter counts (nothing is live yet) */
    uint64_t fin0 = lc(0, SIM_LIFECYCLE_FINALIZE);
    CHECK_SIM_OK(sim_finalize());
    CHECK_EQ(lc(0, SIM_LIFECYCLE_FINALIZE), fin0 + 1);
    CHECK_SIM_OK(sim_lifecycle_reset_counts());
    kt_lifecycle_rebaseline();

    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context k = kt_prepared_ctx(noop, 1); /* device 0: the neighbour */
    REQUIRE(k);
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    pcfg.device = 1;

    /* 1. init, run, close: one init, no finalize */
    kctx_context p = kt_create();
    REQUIRE(p);
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(1, SIM_LIFECYCLE_SET_DEVICE, 1);
    CHECK_OK(kctx_program_init(p, &pcfg));
    CHECK_OK(kctx_prepare(p, 1, noop.bytes, noop.size));
    CHECK_OK(kctx_run(p, 1, NULL, 0));
    CHECK_OK(kctx_close(p));
    CHECK_OK(kctx_destroy(p));

    /* 2. init reached the platform, set-device failed: no finalize */
    p = kt_create();
    REQUIRE(p);
    kctx_fault f = KCTX_FAULT_INIT;
    f.op = KCTX_POP_LIFECYCLE_SET_DEVICE;
    int fid = -1;
    REQUIRE_OK(kctx_fault_arm(&f, &fid));
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    CHECK_K(kctx_program_init(p, &pcfg), KCTX_PLATFORM_ERROR);
    kctx_fault_clear_all();
    CHECK_PHASE(p, KCTX_PHASE_NEW);
    CHECK_OK(kctx_destroy(p));

    /* 3. a rollback after the device was set: no finalize */
    p = kt_create();
    REQUIRE(p);
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(1, SIM_LIFECYCLE_SET_DEVICE, 1);
    kt_fault(SIM_OP_STREAM_CREATE, 1, 0);
    CHECK_K(kctx_program_init(p, &pcfg), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    CHECK_PHASE(p, KCTX_PHASE_NEW);
    CHECK_OK(kctx_close(p));
    CHECK_OK(kctx_destroy(p));

    for (int d = 0; d < ndev; d++)
        if (!CHECK_EQ(lc(d, SIM_LIFECYCLE_FINALIZE), 0))
            fprintf(stderr, "    device %d: kctx finalized the platform\n", d);
    /* the neighbour's objects are intact: it still launches */
    kt_set_device(0);
    kt_check_launches(k, 1);
    kt_finish(k);
}
