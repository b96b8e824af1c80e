/*
 * Events: sync-only and timing flags, record/wait semantics (latest record
 * wins, a wait binds to the record current when it is enqueued, waiting on a
 * never-recorded event is a no-op), query and synchronise.
 */
#include "harness.h"
#include "kernels.h"

TEST(elapsed_time_of_sync_only_events_is_invalid_value) {
    sim_stream s = 0;
    sim_event a = 0, b = 0, timed = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&a, SIM_EVENT_DISABLE_TIMING));
    REQUIRE_SIM_OK(sim_event_create(&b, SIM_EVENT_DISABLE_TIMING));
    REQUIRE_SIM_OK(sim_event_create(&timed, SIM_EVENT_DEFAULT));
    CHECK_SIM_OK(sim_event_record(a, s));
    CHECK_SIM_OK(sim_event_record(timed, s));
    CHECK_SIM_OK(sim_event_record(b, s));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    float ms = -1;
    CHECK_SIM(sim_event_elapsed_ms(&ms, a, b), SIM_INVALID_VALUE);
    CHECK_SIM(sim_event_elapsed_ms(&ms, a, timed), SIM_INVALID_VALUE);
    CHECK_SIM(sim_event_elapsed_ms(&ms, timed, b), SIM_INVALID_VALUE);
    CHECK(ms == -1);
    CHECK_SIM_OK(sim_event_destroy(a));
    CHECK_SIM_OK(sim_event_destroy(b));
    CHECK_SIM_OK(sim_event_destroy(timed));
    CHECK_SIM_OK(sim_stream_destroy(s));
}

TEST(elapsed_time_between_executed_timing_records_is_non_negative) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    sim_event start = 0, end = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&start, SIM_EVENT_DEFAULT));
    REQUIRE_SIM_OK(sim_event_create(&end, SIM_EVENT_DEFAULT));
    float ms = -1;
    /* Neither recorded yet. */
    CHECK_SIM(sim_event_elapsed_ms(&ms, start, end), SIM_NOT_READY);
    CHECK_SIM_OK(sim_event_record(start, s));
    for (int i = 0; i < 10; i++)
        CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICORE, 4, NULL, 0));
    CHECK_SIM_OK(sim_event_record(end, s));
    CHECK_SIM_OK(sim_event_synchronize(end));
    CHECK_SIM_OK(sim_event_elapsed_ms(&ms, start, end));
    CHECK(ms >= 0.0f);
    CHECK_SIM_OK(sim_event_elapsed_ms(&ms, start, start));
    CHECK(ms == 0.0f);
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_event_destroy(start));
    CHECK_SIM_OK(sim_event_destroy(end));
    kernels_unload(&k);
}

TEST(elapsed_time_with_a_pending_record_is_not_ready) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    sim_event start = 0, end = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&start, SIM_EVENT_DEFAULT));
    REQUIRE_SIM_OK(sim_event_create(&end, SIM_EVENT_DEFAULT));
    CHECK_SIM_OK(sim_event_record(start, s));
    int h = hold_kernel(k.noop, 1);
    CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_event_record(end, s));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    float ms = -1;
    CHECK_SIM(sim_event_elapsed_ms(&ms, start, end), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_event_elapsed_ms(&ms, start, end));
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_event_destroy(start));
    CHECK_SIM_OK(sim_event_destroy(end));
    kernels_unload(&k);
}

TEST(event_query_is_not_ready_while_its_record_is_held) {
    sim_stream s = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    int h = hold_kind(SIM_EXEC_EVENT_RECORD, 1);
    CHECK_SIM_OK(sim_event_record(e, s));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM(sim_event_query(e), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_event_synchronize(e));
    CHECK_SIM_OK(sim_event_query(e));
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_event_destroy(e));
}

TEST(record_covers_all_work_submitted_before_it) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr w = dev_alloc(4);
    int h = hold_kernel(k.set_word, 1);
    CHECK_SIM_OK(launch_set(s, &k, w, 11, SIM_TARGET_AICPU));
    CHECK_SIM_OK(sim_event_record(e, s));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM(sim_event_query(e), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_event_synchronize(e));
    CHECK_EQ(dev_peek_u32(w), 11);
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_event_destroy(e));
    dev_free(w);
    kernels_unload(&k);
}

TEST(never_recorded_event_is_complete_and_waiting_on_it_is_a_no_op) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DEFAULT));
    sim_devptr w = dev_alloc(4);
    CHECK_SIM_OK(sim_event_query(e));
    CHECK_SIM_OK(sim_event_synchronize(e));
    CHECK_SIM_OK(sim_stream_wait_event(s, e));
    CHECK_SIM_OK(launch_add(s, &k, w, 1, 1, 0));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(dev_peek_u32(w), 1);
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_event_destroy(e));
    dev_free(w);
    kernels_unload(&k);
}

TEST(wait_orders_work_across_streams) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr log = dev_alloc(4 * 4);
    int h = hold_kernel(k.append, 1);
    CHECK_SIM_OK(launch_append(a, &k, log, 1));
    CHECK_SIM_OK(sim_event_record(e, a));
    CHECK_SIM_OK(sim_stream_wait_event(b, e));
    CHECK_SIM_OK(launch_append(b, &k, log, 2));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM(sim_stream_query(b), SIM_NOT_READY); /* b waits for a */
    CHECK_EQ(dev_peek_u32(log), 0);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(b));
    uint32_t v[2];
    CHECK_EQ(log_read(log, v, 2), 2);
    CHECK_EQ(v[0], 1);
    CHECK_EQ(v[1], 2);
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    CHECK_SIM_OK(sim_event_destroy(e));
    dev_free(log);
    kernels_unload(&k);
}

TEST(latest_record_wins_for_waits_enqueued_after_it) {
    /* Record on A (held), re-record on B (idle): a wait enqueued after the
     * second record does not wait for A. */
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0, c = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    REQUIRE_SIM_OK(sim_stream_create(&c));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr w = dev_alloc(4);
    int h = hold_kernel(k.noop, 1);
    CHECK_SIM_OK(sim_launch_kernel(a, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_event_record(e, a));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM(sim_event_query(e), SIM_NOT_READY);
    CHECK_SIM_OK(sim_event_record(e, b));
    CHECK_SIM_OK(sim_stream_wait_event(c, e));
    CHECK_SIM_OK(launch_add(c, &k, w, 1, 1, 0));
    CHECK_SIM_OK(sim_stream_synchronize(c)); /* would block until release if it waited for A */
    CHECK_EQ(dev_peek_u32(w), 1);
    CHECK_SIM_OK(sim_event_synchronize(e)); /* the latest record (on B) executed */
    CHECK_SIM_OK(sim_event_query(e));
    CHECK_SIM(sim_stream_query(a), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(a));
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    CHECK_SIM_OK(sim_stream_destroy(c));
    CHECK_SIM_OK(sim_event_destroy(e));
    dev_free(w);
    kernels_unload(&k);
}

TEST(wait_enqueued_before_a_rerecord_keeps_waiting_for_the_old_record) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0, c = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    REQUIRE_SIM_OK(sim_stream_create(&c));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr w = dev_alloc(4);
    int h = hold_kernel(k.noop, 1);
    CHECK_SIM_OK(sim_launch_kernel(a, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_event_record(e, a));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM_OK(sim_stream_wait_event(c, e)); /* binds to the record on A */
    CHECK_SIM_OK(launch_add(c, &k, w, 1, 1, 0));
    CHECK_SIM_OK(sim_event_record(e, b));
    CHECK_SIM_OK(sim_stream_synchronize(b));
    CHECK_SIM_OK(sim_event_synchronize(e));
    CHECK_SIM(sim_stream_query(c), SIM_NOT_READY);
    CHECK_EQ(dev_peek_u32(w), 0);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(c));
    CHECK_EQ(dev_peek_u32(w), 1);
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    CHECK_SIM_OK(sim_stream_destroy(c));
    CHECK_SIM_OK(sim_event_destroy(e));
    dev_free(w);
    kernels_unload(&k);
}

TEST(event_destroyed_with_a_pending_record_still_releases_waiters) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0;
    sim_event e = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    REQUIRE_SIM_OK(sim_event_create(&e, SIM_EVENT_DISABLE_TIMING));
    sim_devptr w = dev_alloc(4);
    int h = hold_kernel(k.noop, 1);
    CHECK_SIM_OK(sim_launch_kernel(a, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_event_record(e, a));
    CHECK_SIM_OK(sim_stream_wait_event(b, e));
    CHECK_SIM_OK(launch_add(b, &k, w, 1, 1, 0));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM_OK(sim_event_destroy(e));
    CHECK_SIM(sim_event_query(e), SIM_INVALID_HANDLE);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(b));
    CHECK_EQ(dev_peek_u32(w), 1);
    CHECK_SIM_OK(sim_stream_synchronize(a));
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    dev_free(w);
    kernels_unload(&k);
}

TEST(event_and_stream_must_share_a_device) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    sim_stream s0 = 0;
    sim_event e1 = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s0));
    REQUIRE_SIM_OK(sim_set_device(1));
    REQUIRE_SIM_OK(sim_event_create(&e1, SIM_EVENT_DEFAULT));
    REQUIRE_SIM_OK(sim_set_device(0));
    CHECK_SIM(sim_event_record(e1, s0), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_stream_wait_event(s0, e1), SIM_INVALID_HANDLE);
    CHECK_SIM_OK(sim_event_destroy(e1));
    CHECK_SIM_OK(sim_stream_destroy(s0));
}
