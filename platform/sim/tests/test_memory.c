/*
 * Device memory: capacity, live tracking, double and foreign free, lookup,
 * synchronous and asynchronous copies and fills, range checks at enqueue,
 * atomic host reads. (That freed memory reads as 0xDB is not observable from
 * the host without undefined behaviour: not tested here.)
 */
#include "harness.h"
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

static uint64_t capacity_of(int device) {
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    CHECK_SIM_OK(sim_device_get_props(device, &p));
    return p.memory_capacity;
}

TEST(malloc_beyond_capacity_is_out_of_memory) {
    uint64_t cap = capacity_of(0);
    REQUIRE(cap >= 1024 * 1024);
    sim_devptr p = 0;
    CHECK_SIM(sim_malloc(&p, cap + 1), SIM_OUT_OF_MEMORY);
    /* A size no heap could hold: refused either way the sim chooses. */
    CHECK_SIM2(sim_malloc(&p, SIZE_MAX), SIM_OUT_OF_MEMORY, SIM_INVALID_VALUE);
    CHECK_EQ(p, 0); /* out-parameters are written only on success */

    sim_devptr q[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) CHECK_SIM_OK(sim_malloc(&q[i], cap / 4));
    uint64_t live = 0, bytes = 0;
    CHECK_SIM_OK(sim_mem_stats(0, &live, &bytes));
    CHECK_SIM(sim_malloc(&p, cap / 2), SIM_OUT_OF_MEMORY);
    uint64_t live2 = 0, bytes2 = 0;
    CHECK_SIM_OK(sim_mem_stats(0, &live2, &bytes2));
    CHECK_EQ(live2, live);
    CHECK_EQ(bytes2, bytes);
    for (int i = 0; i < 3; i++)
        if (q[i]) CHECK_SIM_OK(sim_free(q[i]));
    /* Freed memory is available again. */
    if (CHECK_SIM_OK(sim_malloc(&p, cap / 2))) CHECK_SIM_OK(sim_free(p));
}

TEST(allocations_are_counted_live_and_aligned) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    uint64_t c0 = 0, b0 = 0, c1 = 0, b1 = 0, other_c = 0, other_b = 0;
    REQUIRE_SIM_OK(sim_mem_stats(0, &c0, &b0));
    REQUIRE_SIM_OK(sim_mem_stats(1, &other_c, &other_b));
    sim_devptr a = 0, b = 0;
    REQUIRE_SIM_OK(sim_malloc(&a, 256));
    REQUIRE_SIM_OK(sim_malloc(&b, 4096));
    CHECK(a != 0 && b != 0 && a != b);
    CHECK_EQ(a % 256, 0);
    CHECK_EQ(b % 256, 0);
    CHECK_SIM_OK(sim_mem_stats(0, &c1, &b1));
    CHECK_EQ(c1, c0 + 2);
    CHECK_EQ(b1, b0 + 4352);
    CHECK_SIM_OK(sim_free(a));
    CHECK_SIM_OK(sim_mem_stats(0, &c1, &b1));
    CHECK_EQ(c1, c0 + 1);
    CHECK_EQ(b1, b0 + 4096);
    /* Another device's statistics did not move. */
    uint64_t oc = 0, ob = 0;
    CHECK_SIM_OK(sim_mem_stats(1, &oc, &ob));
    CHECK_EQ(oc, other_c);
    CHECK_EQ(ob, other_b);
    CHECK_SIM_OK(sim_free(b));
    CHECK_SIM_OK(sim_mem_stats(0, &c1, &b1));
    CHECK_EQ(c1, c0);
    CHECK_EQ(b1, b0);
    CHECK_SIM(sim_mem_stats(-1, &c1, &b1), SIM_INVALID_VALUE);
    CHECK_SIM(sim_mem_stats(harness_device_count(), &c1, &b1), SIM_INVALID_VALUE);
}

TEST(allocations_belong_to_the_current_device) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    sim_devptr p = 0;
    uint64_t c = 0, b = 0;
    REQUIRE_SIM_OK(sim_set_device(1));
    REQUIRE_SIM_OK(sim_malloc(&p, 512));
    CHECK_SIM_OK(sim_mem_stats(1, &c, &b));
    CHECK_EQ(c, 1);
    sim_devptr base = 0;
    size_t size = 0;
    CHECK_SIM_OK(sim_mem_lookup(1, p, 512, &base, &size));
    CHECK_SIM(sim_mem_lookup(0, p, 512, &base, &size), SIM_INVALID_ADDRESS);
    CHECK_SIM_OK(sim_free(p));
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(free_twice_is_double_free) {
    sim_devptr p = 0;
    REQUIRE_SIM_OK(sim_malloc(&p, 1024));
    CHECK_SIM_OK(sim_free(p));
    CHECK_SIM(sim_free(p), SIM_DOUBLE_FREE);
    CHECK_SIM(sim_free(p), SIM_DOUBLE_FREE);
}

TEST(free_of_another_devices_pointer_is_foreign_free) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    sim_devptr p = 0;
    REQUIRE_SIM_OK(sim_set_device(1));
    REQUIRE_SIM_OK(sim_malloc(&p, 1024));
    CHECK_SIM_OK(sim_set_device(0));
    CHECK_SIM(sim_free(p), SIM_FOREIGN_FREE);
    /* The allocation survived the refused free. */
    sim_devptr base = 0;
    size_t size = 0;
    CHECK_SIM_OK(sim_mem_lookup(1, p, 1024, &base, &size));
    CHECK_SIM_OK(sim_set_device(1));
    CHECK_SIM_OK(sim_free(p));
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(free_of_an_address_of_no_allocation_is_foreign_free) {
    int on_stack = 0;
    CHECK_SIM(sim_free((sim_devptr)0x12345600ull), SIM_FOREIGN_FREE);
    CHECK_SIM(sim_free((sim_devptr)(uintptr_t)&on_stack), SIM_FOREIGN_FREE);
    CHECK_SIM(sim_free(UINT64_MAX - 255), SIM_FOREIGN_FREE);
}

TEST(lookup_finds_the_live_allocation_holding_a_range) {
    sim_devptr p = 0, base = 0;
    size_t size = 0;
    REQUIRE_SIM_OK(sim_malloc(&p, 4096));
    CHECK_SIM_OK(sim_mem_lookup(0, p, 4096, &base, &size));
    CHECK_EQ(base, p);
    CHECK_EQ(size, 4096);
    base = 0;
    size = 0;
    CHECK_SIM_OK(sim_mem_lookup(0, p + 100, 200, &base, &size));
    CHECK_EQ(base, p);
    CHECK_EQ(size, 4096);
    CHECK_SIM_OK(sim_mem_lookup(0, p + 4095, 1, &base, &size));
    CHECK_SIM(sim_mem_lookup(0, p + 4095, 2, &base, &size), SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_mem_lookup(0, p, 4097, &base, &size), SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_mem_lookup(0, p + 4096, 1, &base, &size), SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_mem_lookup(0, p - 1, 2, &base, &size), SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_mem_lookup(0, p, SIZE_MAX, &base, &size), SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_mem_lookup(0, 0x10, 1, &base, &size), SIM_INVALID_ADDRESS);
    CHECK_SIM_OK(sim_free(p));
    CHECK_SIM(sim_mem_lookup(0, p, 1, &base, &size), SIM_INVALID_ADDRESS);
}

TEST(lookup_never_spans_two_allocations) {
    sim_devptr a = 0, b = 0, base = 0;
    size_t size = 0;
    REQUIRE_SIM_OK(sim_malloc(&a, 256));
    REQUIRE_SIM_OK(sim_malloc(&b, 256));
    sim_devptr lo = a < b ? a : b, hi = a < b ? b : a;
    CHECK_SIM(sim_mem_lookup(0, lo, (size_t)(hi - lo) + 1, &base, &size), SIM_INVALID_ADDRESS);
    CHECK_SIM_OK(sim_free(a));
    CHECK_SIM_OK(sim_free(b));
}

TEST(synchronous_copies_round_trip) {
    enum {
        N = 1000
    };
    uint32_t in[N], out[N];
    for (uint32_t i = 0; i < N; i++) in[i] = i * 2654435761u;
    sim_devptr a = 0, b = 0;
    REQUIRE_SIM_OK(sim_malloc(&a, sizeof in));
    REQUIRE_SIM_OK(sim_malloc(&b, sizeof in));
    CHECK_SIM_OK(sim_memcpy(DEVP(a), in, sizeof in, SIM_COPY_HOST_TO_DEVICE));
    CHECK_SIM_OK(sim_memcpy(DEVP(b), DEVP(a), sizeof in, SIM_COPY_DEVICE_TO_DEVICE));
    memset(out, 0, sizeof out);
    CHECK_SIM_OK(sim_memcpy(out, DEVP(b), sizeof out, SIM_COPY_DEVICE_TO_HOST));
    CHECK(memcmp(in, out, sizeof in) == 0);
    /* A sub-range at an offset. */
    uint32_t part[10];
    CHECK_SIM_OK(
        sim_memcpy(part, DEVP(b + 100 * sizeof(uint32_t)), sizeof part, SIM_COPY_DEVICE_TO_HOST));
    CHECK(memcmp(part, in + 100, sizeof part) == 0);
    CHECK_SIM_OK(sim_free(a));
    CHECK_SIM_OK(sim_free(b));
}

TEST(device_memory_is_separate_from_host_buffers) {
    uint32_t host[4] = {1, 2, 3, 4}, back[4] = {0};
    sim_devptr p = 0;
    REQUIRE_SIM_OK(sim_malloc(&p, sizeof host));
    CHECK_SIM_OK(sim_memcpy(DEVP(p), host, sizeof host, SIM_COPY_HOST_TO_DEVICE));
    host[0] = 100; /* only copies move data */
    CHECK_SIM_OK(sim_memcpy(back, DEVP(p), sizeof back, SIM_COPY_DEVICE_TO_HOST));
    CHECK_EQ(back[0], 1);
    CHECK_EQ(back[3], 4);
    CHECK_SIM_OK(sim_free(p));
}

TEST(asynchronous_copies_and_fills_run_in_stream_order) {
    enum {
        N = 4096
    };
    uint8_t *in = malloc(N), *out = malloc(N), *mid = malloc(N);
    REQUIRE(in && out && mid);
    for (int i = 0; i < N; i++) in[i] = (uint8_t)(i * 7 + 3);
    sim_stream s = 0;
    sim_devptr a = 0, b = 0;
    CHECK_SIM_OK(sim_stream_create(&s));
    CHECK_SIM_OK(sim_malloc(&a, N));
    CHECK_SIM_OK(sim_malloc(&b, N));
    CHECK_SIM_OK(sim_memset_async(a, 0x5A, N, s));
    CHECK_SIM_OK(sim_memcpy_async(mid, DEVP(a), N, SIM_COPY_DEVICE_TO_HOST, s));
    CHECK_SIM_OK(sim_memcpy_async(DEVP(a), in, N, SIM_COPY_HOST_TO_DEVICE, s));
    CHECK_SIM_OK(sim_memcpy_async(DEVP(b), DEVP(a), N, SIM_COPY_DEVICE_TO_DEVICE, s));
    CHECK_SIM_OK(sim_memset_async(b + 16, 0xEE, 16, s));
    CHECK_SIM_OK(sim_memcpy_async(out, DEVP(b), N, SIM_COPY_DEVICE_TO_HOST, s));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    for (int i = 0; i < N; i++) {
        if (mid[i] != 0x5A) {
            CHECK_EQ(mid[i], 0x5A);
            break;
        }
        uint8_t want = (i >= 16 && i < 32) ? 0xEE : in[i];
        if (out[i] != want) {
            CHECK_EQ(out[i], want);
            break;
        }
    }
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_free(a));
    CHECK_SIM_OK(sim_free(b));
    free(in);
    free(out);
    free(mid);
}

TEST(out_of_range_async_copy_is_invalid_address_at_enqueue) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    uint8_t host[512] = {0};
    sim_stream s = 0;
    sim_devptr p = 0, gone = 0, other = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_malloc(&p, 256));
    REQUIRE_SIM_OK(sim_malloc(&gone, 256));
    REQUIRE_SIM_OK(sim_free(gone));
    REQUIRE_SIM_OK(sim_set_device(1));
    REQUIRE_SIM_OK(sim_malloc(&other, 256));
    REQUIRE_SIM_OK(sim_set_device(0));

    CHECK_SIM(sim_memcpy_async(DEVP(p), host, 257, SIM_COPY_HOST_TO_DEVICE, s),
              SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_memcpy_async(host, DEVP(p + 128), 129, SIM_COPY_DEVICE_TO_HOST, s),
              SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_memcpy_async(host, DEVP(gone), 16, SIM_COPY_DEVICE_TO_HOST, s),
              SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_memcpy_async(DEVP(p), DEVP(other), 16, SIM_COPY_DEVICE_TO_DEVICE, s),
              SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_memcpy_async(DEVP(other), DEVP(p), 16, SIM_COPY_DEVICE_TO_DEVICE, s),
              SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_memcpy_async(DEVP(0x1000), host, 16, SIM_COPY_HOST_TO_DEVICE, s),
              SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_memset_async(p + 200, 0, 57, s), SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_memset_async(gone, 0, 1, s), SIM_INVALID_ADDRESS);
    /* The same for synchronous copies. */
    CHECK_SIM(sim_memcpy(DEVP(p), host, 257, SIM_COPY_HOST_TO_DEVICE), SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_memcpy(host, DEVP(gone), 1, SIM_COPY_DEVICE_TO_HOST), SIM_INVALID_ADDRESS);
    /* Nothing was enqueued by the refused calls; the stream is healthy. */
    CHECK_SIM_OK(sim_stream_query(s));
    CHECK_SIM_OK(sim_stream_synchronize(s));

    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_free(p));
    CHECK_SIM_OK(sim_set_device(1));
    CHECK_SIM_OK(sim_free(other));
    CHECK_SIM_OK(sim_set_device(0));
}

TEST(copies_reject_bad_kinds_and_null_host_pointers) {
    uint32_t host = 0;
    sim_stream s = 0;
    sim_devptr p = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    REQUIRE_SIM_OK(sim_malloc(&p, 256));
    CHECK_SIM(sim_memcpy(DEVP(p), &host, 4, (sim_copy_kind)0), SIM_INVALID_VALUE);
    CHECK_SIM(sim_memcpy(DEVP(p), &host, 4, (sim_copy_kind)9), SIM_INVALID_VALUE);
    CHECK_SIM(sim_memcpy_async(DEVP(p), &host, 4, (sim_copy_kind)4, s), SIM_INVALID_VALUE);
    CHECK_SIM(sim_memcpy(DEVP(p), NULL, 4, SIM_COPY_HOST_TO_DEVICE), SIM_INVALID_VALUE);
    CHECK_SIM(sim_memcpy(NULL, DEVP(p), 4, SIM_COPY_DEVICE_TO_HOST), SIM_INVALID_VALUE);
    CHECK_SIM(sim_memcpy_async(NULL, DEVP(p), 4, SIM_COPY_DEVICE_TO_HOST, s), SIM_INVALID_VALUE);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    CHECK_SIM_OK(sim_free(p));
}

TEST(atomic_reads_return_device_words) {
    sim_devptr p = 0;
    REQUIRE_SIM_OK(sim_malloc(&p, 256));
    uint8_t host[16];
    uint32_t w = 0x11223344u;
    uint64_t d = 0x0102030405060708ull;
    memcpy(host, &w, 4);
    memset(host + 4, 0, 4);
    memcpy(host + 8, &d, 8);
    CHECK_SIM_OK(sim_memcpy(DEVP(p), host, sizeof host, SIM_COPY_HOST_TO_DEVICE));
    uint32_t v32 = 0;
    uint64_t v64 = 0;
    CHECK_SIM_OK(sim_atomic_read_u32(p, &v32));
    CHECK_EQ(v32, 0x11223344u);
    CHECK_SIM_OK(sim_atomic_read_u64(p + 8, &v64));
    CHECK_EQ(v64, 0x0102030405060708ull);
    /* Misaligned or outside any live allocation: refused. */
    CHECK_SIM2(sim_atomic_read_u32(p + 2, &v32), SIM_INVALID_VALUE, SIM_INVALID_ADDRESS);
    CHECK_SIM2(sim_atomic_read_u64(p + 4, &v64), SIM_INVALID_VALUE, SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_atomic_read_u32(p + 256, &v32), SIM_INVALID_ADDRESS);
    CHECK_SIM(sim_atomic_read_u64(p + 256, &v64), SIM_INVALID_ADDRESS);
    CHECK_SIM_OK(sim_free(p));
    CHECK_SIM(sim_atomic_read_u32(p, &v32), SIM_INVALID_ADDRESS);
}

TEST(atomic_reads_see_words_written_by_kernels) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr w = dev_alloc(256);
    CHECK_SIM_OK(launch_set(s, &k, w + 4, 0xC0FFEEu, SIM_TARGET_AICORE));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(dev_peek_u32(w + 4), 0xC0FFEEu);
    CHECK_EQ(dev_peek_u32(w), 0);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(w);
    kernels_unload(&k);
}

TEST(synchronous_copy_waits_for_all_work_of_the_device) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream a = 0, b = 0;
    REQUIRE_SIM_OK(sim_stream_create(&a));
    REQUIRE_SIM_OK(sim_stream_create(&b));
    sim_devptr buf = dev_alloc(8);
    for (int i = 0; i < 50; i++) {
        CHECK_SIM_OK(launch_add(a, &k, buf, 1, 1, 0));
        CHECK_SIM_OK(launch_add(b, &k, buf + 4, 1, 2, 1));
    }
    /* No stream synchronisation: the copy itself waits. */
    uint32_t out[2] = {0, 0};
    CHECK_SIM_OK(sim_memcpy(out, DEVP(buf), sizeof out, SIM_COPY_DEVICE_TO_HOST));
    CHECK_EQ(out[0], 50);
    CHECK_EQ(out[1], 100);
    CHECK_SIM_OK(sim_stream_query(a));
    CHECK_SIM_OK(sim_stream_query(b));
    CHECK_SIM_OK(sim_stream_destroy(a));
    CHECK_SIM_OK(sim_stream_destroy(b));
    dev_free(buf);
    kernels_unload(&k);
}
