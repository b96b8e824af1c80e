/*
 * Modules: uploaded from bytes in memory (not retained), entry points looked
 * up by name, malformed or forbidden images refused, unload invalidates
 * functions and is refused while their work is in flight.
 */
#include "harness.h"
#include "kernels.h"

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

TEST(module_loads_from_bytes_and_its_kernels_run) {
    sim_module m = 0;
    /* The harness scribbles over and frees the bytes once loaded. */
    REQUIRE_SIM_OK(harness_module_load_file(&m, SIM_TEST_KERNELS));
    sim_object_counts c = SIM_OBJECT_COUNTS_INIT;
    CHECK_SIM_OK(sim_object_counts_get(0, &c));
    CHECK(c.modules >= 1);
    sim_function add = 0;
    CHECK_SIM_OK(sim_module_get_function(&add, m, "k_add_u32"));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr buf = dev_alloc(16);
    struct add_u32_params p = {buf, 4, 21};
    CHECK_SIM_OK(sim_launch_kernel(s, add, SIM_TARGET_AICORE, 2, &p, sizeof p));
    CHECK_SIM_OK(sim_launch_kernel(s, add, SIM_TARGET_AICPU, 1, &p, sizeof p));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    uint32_t out[4];
    dev_read(out, buf, sizeof out);
    for (int i = 0; i < 4; i++) CHECK_EQ(out[i], 42);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(buf);
    CHECK_SIM_OK(sim_module_unload(m));
}

TEST(same_bytes_loaded_twice_give_independent_modules) {
    size_t size = 0;
    void *bytes = harness_read_file(SIM_TEST_KERNELS, &size);
    REQUIRE(bytes);
    sim_module a = 0, b = 0;
    CHECK_SIM_OK(sim_module_load(&a, bytes, size));
    CHECK_SIM_OK(sim_module_load(&b, bytes, size));
    free(bytes);
    CHECK(a != b);
    sim_function fa = 0, fb = 0;
    CHECK_SIM_OK(sim_module_get_function(&fa, a, "k_set_word"));
    CHECK_SIM_OK(sim_module_get_function(&fb, b, "k_set_word"));
    CHECK(fa != fb);
    CHECK_SIM_OK(sim_module_unload(a));
    /* b's function still runs after a is gone. */
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_devptr w = dev_alloc(4);
    struct set_params p = {w, 99, 0};
    CHECK_SIM(sim_launch_kernel(s, fa, SIM_TARGET_AICPU, 1, &p, sizeof p), SIM_INVALID_HANDLE);
    CHECK_SIM_OK(sim_launch_kernel(s, fb, SIM_TARGET_AICPU, 1, &p, sizeof p));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_EQ(dev_peek_u32(w), 99);
    CHECK_SIM_OK(sim_stream_destroy(s));
    dev_free(w);
    CHECK_SIM_OK(sim_module_unload(b));
}

/* 1 if every writable PT_LOAD byte of the ELF64 module lies in its
 * PT_GNU_RELRO range (docs/sim.md: an immutable module). Written here, not
 * borrowed from the loader. */
static int immutable_module(const unsigned char *b, size_t size) {
    Elf64_Ehdr eh;
    if (size < sizeof eh) return 0;
    memcpy(&eh, b, sizeof eh);
    uint64_t lo = 0, hi = 0;
    int relro = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (eh.e_phoff + (uint64_t)(i + 1) * sizeof ph > size) return 0;
            memcpy(&ph, b + eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
            if (pass == 0 && ph.p_type == PT_GNU_RELRO) {
                relro = 1;
                lo = ph.p_vaddr;
                hi = ph.p_vaddr + ph.p_memsz;
            }
            if (pass == 1 && ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && ph.p_memsz > 0 &&
                (!relro || ph.p_vaddr < lo || ph.p_vaddr + ph.p_memsz > hi))
                return 0;
        }
    }
    return 1;
}

/* Kills: a loader that loads every sim_module_load of an immutable module
 * anew (platform/sim/sim_elf.c; the dynamic loader's cost then grows with
 * every module), and one that shares a module with data of its own.
 * docs/sim.md "Loading and launching": the test kernels have no data of
 * their own (an ASan build adds some), so two modules of their bytes share
 * one loaded object: their functions are distinct handles with the same
 * device address, and unloading one leaves the other's running (above); a
 * module with data gets an object, and addresses, of its own. */
TEST(same_bytes_of_an_immutable_module_share_one_loaded_object) {
    size_t size = 0;
    void *bytes = harness_read_file(SIM_TEST_KERNELS, &size);
    REQUIRE(bytes);
    const int immutable = immutable_module(bytes, size);
    sim_module a = 0, b = 0;
    CHECK_SIM_OK(sim_module_load(&a, bytes, size));
    CHECK_SIM_OK(sim_module_load(&b, bytes, size));
    free(bytes);
    sim_function fa = 0, fb = 0;
    CHECK_SIM_OK(sim_module_get_function(&fa, a, "k_set_word"));
    CHECK_SIM_OK(sim_module_get_function(&fb, b, "k_set_word"));
    CHECK(fa != fb);
    uint64_t xa = 0, xb = 0;
    CHECK_SIM_OK(sim_function_address(fa, &xa));
    CHECK_SIM_OK(sim_function_address(fb, &xb));
    CHECK(xa != 0);
    if (immutable)
        CHECK_EQ(xa, xb);
    else
        CHECK(xa != xb);
    CHECK_SIM_OK(sim_module_unload(a));
    CHECK_SIM_OK(sim_module_unload(b));
}

TEST(get_function_of_a_missing_name_is_not_found) {
    sim_module m = 0;
    REQUIRE_SIM_OK(harness_module_load_file(&m, SIM_TEST_KERNELS));
    sim_function fn = 12345;
    CHECK_SIM(sim_module_get_function(&fn, m, "k_does_not_exist"), SIM_NOT_FOUND);
    CHECK_SIM(sim_module_get_function(&fn, m, ""), SIM_NOT_FOUND);
    CHECK_SIM(sim_module_get_function(&fn, m, "k_noo"), SIM_NOT_FOUND);
    CHECK_EQ(fn, 12345);
    CHECK_SIM_OK(sim_module_get_function(&fn, m, "k_noop"));
    CHECK(fn != 0 && fn != 12345);
    CHECK_SIM_OK(sim_module_unload(m));
}

static void check_refused(const void *bytes, size_t size, const char *what) {
    sim_module m = 777;
    sim_status st = sim_module_load(&m, bytes, size);
    if (!CHECK(st == SIM_INVALID_MODULE, "%s: %s, expected SIM_INVALID_MODULE (%s)", what,
               sim_status_name(st), sim_last_error_message())) {
        if (st == SIM_OK) sim_module_unload(m);
        return;
    }
    const char *msg = sim_last_error_message();
    CHECK(msg[0] != '\0'); /* says why */
    CHECK_EQ(m, 777);
}

TEST(garbage_bytes_are_an_invalid_module) {
    uint8_t junk[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (uint8_t)(x >> 16);
    }
    check_refused(junk, sizeof junk, "random bytes");
    check_refused("not an ELF file at all", 22, "text");
    check_refused("\x7f"
                  "ELF",
                  4, "magic only");
    junk[0] = 0x7f;
    junk[1] = 'E';
    junk[2] = 'L';
    junk[3] = 'F';
    check_refused(junk, sizeof junk, "ELF magic then garbage");
}

TEST(truncated_module_is_an_invalid_module) {
    size_t size = 0;
    uint8_t *bytes = harness_read_file(SIM_TEST_KERNELS, &size);
    REQUIRE(bytes);
    check_refused(bytes, 1, "1 byte");
    check_refused(bytes, 63, "less than an ELF header");
    check_refused(bytes, 64, "an ELF header only");
    check_refused(bytes, size / 2, "half the module");
    check_refused(bytes, size - 1, "all but the last byte");
    free(bytes);
}

TEST(module_of_another_class_or_machine_is_an_invalid_module) {
    size_t size = 0;
    uint8_t *bytes = harness_read_file(SIM_TEST_KERNELS, &size);
    REQUIRE(bytes);
    REQUIRE(size > 64);
    uint8_t *copy = malloc(size);
    REQUIRE(copy);
    memcpy(copy, bytes, size);
    copy[4] = 1; /* EI_CLASS: ELFCLASS32 */
    check_refused(copy, size, "32-bit class");
    memcpy(copy, bytes, size);
    copy[5] = 2; /* EI_DATA: big-endian */
    check_refused(copy, size, "big-endian");
    memcpy(copy, bytes, size);
    copy[18] = 183; /* e_machine: EM_AARCH64 */
    copy[19] = 0;
    check_refused(copy, size, "another machine");
    /* The unpatched bytes load. */
    sim_module m = 0;
    if (CHECK_SIM_OK(sim_module_load(&m, bytes, size))) CHECK_SIM_OK(sim_module_unload(m));
    free(copy);
    free(bytes);
}

static void check_file_refused(const char *path, const char *what) {
    size_t size = 0;
    void *bytes = harness_read_file(path, &size);
    if (!bytes) return;
    check_refused(bytes, size, what);
    free(bytes);
}

TEST(module_with_an_initialiser_is_refused) {
    check_file_refused(SIM_BAD_INIT_MODULE, "module with DT_INIT");
}

TEST(module_with_a_finaliser_is_refused) {
    check_file_refused(SIM_BAD_FINI_MODULE, "module with DT_FINI");
}

TEST(module_with_thread_local_storage_is_refused) {
    check_file_refused(SIM_BAD_TLS_MODULE, "module with PT_TLS");
}

TEST(module_with_an_unresolvable_symbol_is_refused) {
    check_file_refused(SIM_BAD_UNDEFINED_MODULE, "module with an undefined symbol");
}

TEST(refused_modules_leave_no_module_behind) {
    sim_object_counts before = SIM_OBJECT_COUNTS_INIT, after = SIM_OBJECT_COUNTS_INIT;
    CHECK_SIM_OK(sim_object_counts_get(0, &before));
    check_file_refused(SIM_BAD_INIT_MODULE, "init");
    check_file_refused(SIM_BAD_TLS_MODULE, "tls");
    check_file_refused(SIM_BAD_UNDEFINED_MODULE, "undefined");
    CHECK_SIM_OK(sim_object_counts_get(0, &after));
    CHECK_EQ(after.modules, before.modules);
}

TEST(unload_makes_the_modules_functions_invalid_handles) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    sim_module m = k.module;
    CHECK_SIM_OK(sim_module_unload(m));
    CHECK_SIM(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, NULL, 0), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_launch_kernel(s, k.add_u32, SIM_TARGET_AICORE, 1, NULL, 0), SIM_INVALID_HANDLE);
    sim_function fn = 0;
    CHECK_SIM(sim_module_get_function(&fn, m, "k_noop"), SIM_INVALID_HANDLE);
    CHECK_SIM(sim_module_unload(m), SIM_INVALID_HANDLE);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
}

TEST(unload_while_a_kernel_of_the_module_runs_is_illegal_state) {
    test_kernels k;
    REQUIRE(kernels_load(&k));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    int h = hold_kernel(k.noop, 1);
    CHECK_SIM_OK(sim_launch_kernel(s, k.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM(sim_module_unload(k.module), SIM_ILLEGAL_STATE);
    /* Still loaded: its functions work. */
    sim_function fn = 0;
    CHECK_SIM_OK(sim_module_get_function(&fn, k.module, "k_noop"));
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kernels_unload(&k);
}

TEST(unload_while_a_kernel_of_the_module_is_enqueued_is_illegal_state) {
    test_kernels blocker, victim;
    REQUIRE(kernels_load(&blocker));
    if (!kernels_load(&victim)) {
        kernels_unload(&blocker);
        return;
    }
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    int h = hold_kernel(blocker.noop, 1);
    CHECK_SIM_OK(sim_launch_kernel(s, blocker.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_launch_kernel(s, victim.noop, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_hold_wait_reached(h, HOLD_REACH_MS));
    CHECK_SIM(sim_module_unload(victim.module), SIM_ILLEGAL_STATE);
    CHECK_SIM_OK(sim_hold_release(h));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kernels_unload(&victim);
    kernels_unload(&blocker);
}

TEST(module_belongs_to_the_current_device) {
    REQUIRE_DEVICES(2); /* uses device 1 */
    REQUIRE_SIM_OK(sim_set_device(1));
    sim_module m = 0;
    sim_status st = harness_module_load_file(&m, SIM_TEST_KERNELS);
    CHECK_SIM_OK(sim_set_device(0));
    REQUIRE_SIM_OK(st);
    sim_object_counts c1 = SIM_OBJECT_COUNTS_INIT;
    CHECK_SIM_OK(sim_object_counts_get(1, &c1));
    CHECK(c1.modules >= 1);
    sim_function fn = 0;
    CHECK_SIM_OK(sim_module_get_function(&fn, m, "k_noop"));
    sim_stream s0 = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s0));
    CHECK_SIM(sim_launch_kernel(s0, fn, SIM_TARGET_AICPU, 1, NULL, 0), SIM_INVALID_HANDLE);
    CHECK_SIM_OK(sim_stream_destroy(s0));
    CHECK_SIM_OK(sim_module_unload(m));
}
