/*
 * test_prepare.c — resident resources (K11), prepare's order (K13),
 * duplicate ids and shared uploads (K14), idleness and completion (K15),
 * captures (K16) and a failed upload enqueue (K17, first half; the second
 * half poisons and lives in test_poison.c).
 */
#include "kt.h"
#include <kctx/rt_layout.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- K11: the resident set ----------------------------------------------------- */

KT_TEST(kernel_init_creates_the_resident_set_once) { /* K11, section 5 */
    kt_snap before = kt_snap_take(0);
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    cfg.args_capacity = 1024;
    cfg.token_capacity = 7;
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    kt_snap after = kt_snap_take(0);
    CHECK_EQ(after.o.streams - before.o.streams, 3);
    CHECK_EQ(after.o.events - before.o.events, 5);
    CHECK_EQ(after.o.modules - before.o.modules, 1);
    /* the runtime image, the arch table, the args block and (RESIDENT
     * with capture) the argument slots of updatable launches (K37) */
    CHECK_EQ(after.live_count - before.live_count, 4);
    kctx_resource_info r = kt_resources(c);
    CHECK(r.aicpu_stream && r.aicore_stream && r.upload_stream &&
          r.aicpu_stream != r.aicore_stream && r.upload_stream != r.aicpu_stream &&
          r.upload_stream != r.aicore_stream);
    for (int i = 0; i < 5; i++) {
        CHECK(r.events[i] != 0);
        for (int j = 0; j < i; j++) CHECK(r.events[i] != r.events[j]);
    }
    /* the events are synchronisation-only: no timing */
    CHECK_SIM_OK(sim_event_record(r.events[0], r.aicpu_stream));
    CHECK_SIM_OK(sim_event_record(r.events[1], r.aicpu_stream));
    CHECK_SIM_OK(sim_stream_synchronize(r.aicpu_stream));
    float ms = 0;
    CHECK_SIM(sim_event_elapsed_ms(&ms, r.events[0], r.events[1]), SIM_INVALID_VALUE);
    CHECK(r.programs_module != 0);
    CHECK_EQ(r.args_block_bytes, 1024);
    CHECK_EQ(r.token_capacity, 7);
    CHECK_EQ(r.tokens_in_use, 0);
    CHECK_EQ(r.callables, 0);
    CHECK_EQ(r.uploads, 0);
    /* the three allocations are what they say */
    size_t size = 0;
    CHECK_SIM_OK(sim_mem_lookup(0, r.args_block, 1, NULL, &size));
    CHECK_EQ(size, r.args_block_bytes);
    CHECK_SIM_OK(sim_mem_lookup(0, r.runtime_image, 1, NULL, &size));
    CHECK_EQ(size, r.runtime_image_bytes);
    CHECK_SIM_OK(sim_mem_lookup(0, r.arch_table, 1, NULL, &size));
    CHECK_EQ(size, r.arch_table_bytes);
    /* the architecture register table is filled from the device */
    sim_device_props props = SIM_DEVICE_PROPS_INIT;
    CHECK_SIM_OK(sim_device_get_props(0, &props));
    kctx_rt_arch *arch = calloc(1, r.arch_table_bytes);
    REQUIRE(arch);
    CHECK_SIM_OK(sim_memcpy(arch, (const void *)(uintptr_t)r.arch_table, r.arch_table_bytes,
                            SIM_COPY_DEVICE_TO_HOST));
    CHECK_EQ(arch->magic, KCTX_RT_MAGIC);
    CHECK_EQ(arch->core_count, (uint32_t)props.aicore_count);
    CHECK_EQ(arch->runtime_image, r.runtime_image);
    CHECK(r.arch_table_bytes >= sizeof *arch + (uint64_t)props.aicore_count * 8);
    for (int i = 0; i < props.aicore_count; i++) {
        CHECK_EQ(arch->mailbox[i],
                 r.runtime_image + sizeof(kctx_rt_image) + (uint64_t)i * arch->mailbox_stride);
        CHECK_SIM_OK(sim_mem_lookup(0, arch->mailbox[i], arch->mailbox_stride, NULL, NULL));
    }
    free(arch);
    uint32_t magic = 0;
    CHECK_SIM_OK(sim_atomic_read_u32(r.runtime_image, &magic));
    CHECK_EQ(magic, KCTX_RT_MAGIC);
    kt_finish(c);
}

KT_TEST(identical_prepares_allocate_nothing_and_resident_addresses_never_move) { /* K11, K14 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kctx_resource_info r0 = kt_resources(c);
    REQUIRE_OK(kctx_prepare(c, 0, noop.bytes, noop.size));
    REQUIRE_OK(kctx_prepare(c, 1, append.bytes, append.size));
    kt_snap dev = kt_snap_take(0);
    uint64_t mallocs = kt_calls(SIM_OP_MALLOC), loads = kt_calls(SIM_OP_MODULE_LOAD),
             copies = kt_calls(SIM_OP_MEMCPY_ASYNC);
    for (uint64_t id = 2; id < 34; id++) {
        kt_image img = id % 2 ? append : noop;
        CHECK_OK(kctx_prepare(c, id, img.bytes, img.size));
    }
    CHECK_EQ(kt_calls(SIM_OP_MALLOC), mallocs);
    CHECK_EQ(kt_calls(SIM_OP_MODULE_LOAD), loads);
    CHECK_EQ(kt_calls(SIM_OP_MEMCPY_ASYNC), copies);
    CHECK_DEVICE_AT(0, dev);
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.callables, 34);
    CHECK_EQ(r.uploads, 2);
    /* the resident set is the same, at the same addresses */
    CHECK_EQ(r.aicpu_stream, r0.aicpu_stream);
    CHECK_EQ(r.aicore_stream, r0.aicore_stream);
    for (int i = 0; i < 5; i++) CHECK_EQ(r.events[i], r0.events[i]);
    CHECK_EQ(r.programs_module, r0.programs_module);
    CHECK_EQ(r.runtime_image, r0.runtime_image);
    CHECK_EQ(r.arch_table, r0.arch_table);
    CHECK_EQ(r.args_block, r0.args_block);
    CHECK_EQ(r.args_block_bytes, r0.args_block_bytes);
    kt_finish(c);
}

/* ---- K13: validation first ---------------------------------------------------------- */

/* Corruptions of a valid image; each must be INVALID_IMAGE. */
typedef struct corrupt {
    const char *what;
    void *bytes; /* the storage to free */
    const void *image;
    size_t size;
} corrupt;

static int make_corruptions(kt_image img, corrupt *out) {
    int n = 0;
    uint8_t *b;
    b = kt_image_dup(img);
    b[0] ^= 0xff;
    out[n++] = (corrupt){"bad magic", b, b, img.size};
    b = kt_image_dup(img);
    b[img.size - 1] ^= 0x01; /* last byte of the blob: the checksum catches it */
    out[n++] = (corrupt){"checksum", b, b, img.size};
    b = kt_image_dup(img);
    out[n++] = (corrupt){"truncated", b, b, img.size - 8};
    b = kt_image_dup(img);
    out[n++] = (corrupt){"shorter than the header", b, b, 16};
    b = kt_image_dup(img);
    b[8] = 9; /* version_major */
    out[n++] = (corrupt){"unknown version", b, b, img.size};
    b = malloc(img.size + 8);
    memcpy(b + 1, img.bytes, img.size);
    out[n++] = (corrupt){"misaligned", b, b + 1, img.size};
    b = kt_image_dup(img);
    b[52] = 0xff; /* task_count far above what the sections hold */
    kctx_image_reseal(b, img.size);
    out[n++] = (corrupt){"resealed structural damage", b, b, img.size};
    return n;
}

/* Every corruption is INVALID_IMAGE with no platform call and no change. */
static void check_invalid_images(kctx_context c, kt_image img) {
    corrupt cs[16];
    int n = make_corruptions(img, cs);
    for (int i = 0; i < n; i++) {
        kt_state before = kt_state_take(c);
        uint64_t calls = kt_calls(SIM_OP_ANY), kcalls = 0, kafter = 0;
        CHECK_OK(kctx_platform_calls(c, &kcalls));
        if (!CHECK_K(kctx_prepare(c, 100 + (uint64_t)i, cs[i].image, cs[i].size),
                     KCTX_INVALID_IMAGE))
            fprintf(stderr, "    corruption: %s\n", cs[i].what);
        CHECK_EQ(kt_calls(SIM_OP_ANY), calls);
        CHECK_OK(kctx_platform_calls(c, &kafter));
        CHECK_EQ(kafter, kcalls);
        CHECK_UNCHANGED(c, before);
        free(cs[i].bytes);
    }
}

KT_TEST(an_invalid_image_is_rejected_first_in_every_phase_without_platform_calls) { /* K13 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context modeless = kt_create();
    REQUIRE(modeless);
    check_invalid_images(modeless, noop);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    check_invalid_images(c, noop); /* READY */
    kt_fault(SIM_OP_FREE, 1, 0);
    CHECK_K(kctx_close(c), KCTX_PLATFORM_ERROR);
    sim_fault_clear_all();
    check_invalid_images(c, noop); /* CLOSING */
    CHECK_OK(kctx_close(c));
    check_invalid_images(c, noop); /* CLOSED */
    CHECK_OK(kctx_destroy(c));
    CHECK_OK(kctx_destroy(modeless));
}

KT_TEST(arguments_are_checked_before_the_image) { /* K13, section 0 */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    CHECK_REFUSED(c, kctx_prepare(c, 1, NULL, noop.size), KCTX_INVALID_ARGUMENT);
    CHECK_REFUSED(c, kctx_prepare(c, 1, noop.bytes, 0), KCTX_INVALID_ARGUMENT);
    kt_finish(c);
}

KT_TEST(an_incompatible_image_allocates_and_loads_nothing) { /* K13 */
    kt_image ocl = kt_image_opencl(), noop = kt_image_noop();
    REQUIRE(ocl.bytes && noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_REFUSED(c, kctx_prepare(c, 1, ocl.bytes, ocl.size), KCTX_INCOMPATIBLE_IMAGE);
    CHECK(strstr(kctx_last_error(c), "sim") != NULL);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size)); /* the id was not taken */
    CHECK_OK(kctx_close(c));
    /* lifecycle checks come before platform compatibility */
    CHECK_K(kctx_prepare(c, 2, ocl.bytes, ocl.size), KCTX_INVALID_STATE);
    CHECK_OK(kctx_destroy(c));
}

/* A one-task image of one child whose entry is `entry`, in a SIM_ELF
 * variant of `blob` (malloc'd; {NULL, 0} when it does not build). */
static kt_image sim_child_image(const char *entry, const void *blob, size_t blob_size) {
    kt_image img = {NULL, 0};
    kctx_image_builder *b = kctx_image_builder_new("child");
    if (!b) return img;
    uint32_t fid = 0;
    kctx_image_builder_child(b, "child", entry, &fid);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, blob, blob_size);
    kctx_image_builder_task(b, fid, 1, NULL);
    void *out = NULL;
    size_t size = 0;
    char msg[256] = "";
    if (kctx_image_builder_finish(b, &out, &size, msg, sizeof msg) == KCTX_BUILD_OK)
        img = (kt_image){out, size};
    else
        fprintf(stderr, "    cannot build the image of entry %s: %s\n", entry, msg);
    kctx_image_builder_free(b);
    return img;
}

/* Kills: the sim adapter classing a module it cannot load, or a kernel the
 * module lacks, as anything but BAD_MODULE (platform.h), which prepare
 * reports as INCOMPATIBLE_IMAGE (kctx.h: no binary variant this platform
 * can load; issue 23 item 5). Under both strategies: the image's variant
 * names a kernel the module does not have, a kernel without the task ABI
 * marker, or bytes that are no loadable module; each is refused at prepare
 * with INCOMPATIBLE_IMAGE naming the platform, keeps nothing (the module
 * it loaded is unloaded, the id stays free), leaves the context READY, and
 * a valid image prepares under the same id afterwards. */
KT_TEST(a_module_without_the_kernel_is_an_incompatible_image_at_prepare) { /* K13, K15 */
    kt_image mod = kt_test_kernels_module(), noop = kt_image_noop();
    REQUIRE(mod.bytes && noop.bytes);
    static const char not_elf[64] = "this is no ELF module, only bytes the loader refuses";
    struct {
        const char *what, *entry, *needle;
        const void *blob;
        size_t size;
    } cases[] = {
        {"an entry the module lacks", "t_no_such_kernel", "t_no_such_kernel", mod.bytes, mod.size},
        /* the marker's message, whatever class the platform gives a missing
         * symbol (INVALID or BAD_MODULE): it tells the author what to do */
        {"a kernel without the task ABI marker", "k_noop", "write it with KCTX_TASK", mod.bytes,
         mod.size},
        {"bytes that are no module", "t_noop", "module_load", not_elf, sizeof not_elf},
    };
    for (size_t k = 0; k < 2; k++) {
        kctx_context c = kt_strategy_ctx(kt_strategies[k], (kt_image){0}, 0);
        REQUIRE(c);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            kt_image img = sim_child_image(cases[i].entry, cases[i].blob, cases[i].size);
            REQUIRE(img.bytes);
            kt_snap before = kt_snap_take(0);
            if (!CHECK_K(kctx_prepare(c, 7, img.bytes, img.size), KCTX_INCOMPATIBLE_IMAGE))
                fprintf(stderr, "    %s, strategy %d: %s\n", cases[i].what, (int)kt_strategies[k],
                        kctx_last_error(c));
            CHECK(strstr(kctx_last_error(c), "sim") != NULL);
            CHECK(strstr(kctx_last_error(c), cases[i].needle) != NULL);
            kt_snap after = kt_snap_take(0);
            CHECK_EQ(after.o.modules, before.o.modules);
            CHECK_EQ(after.live_count, before.live_count);
            CHECK_EQ(kt_resources(c).callables, 0);
            CHECK_EQ(kt_resources(c).uploads, 0);
            CHECK_PHASE(c, KCTX_PHASE_READY);
            free((void *)img.bytes);
        }
        CHECK_OK(kctx_prepare(c, 7, noop.bytes, noop.size)); /* the id was not taken */
        kt_finish(c);
    }
}

KT_TEST(prepare_loads_each_child_and_resolves_its_entry_at_prepare) { /* K15 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    uint64_t loads = kt_calls(SIM_OP_MODULE_LOAD), fns = kt_calls(SIM_OP_MODULE_GET_FUNCTION),
             addrs = kt_calls(SIM_OP_FUNCTION_ADDRESS);
    kt_snap before = kt_snap_take(0);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    CHECK_EQ(kt_calls(SIM_OP_MODULE_LOAD) - loads, 1);
    CHECK_EQ(kt_calls(SIM_OP_MODULE_GET_FUNCTION) - fns, 2); /* the entry and its task ABI marker */
    CHECK_EQ(kt_calls(SIM_OP_FUNCTION_ADDRESS) - addrs, 1);
    kt_snap after = kt_snap_take(0);
    CHECK_EQ(after.o.modules - before.o.modules, 1);
    CHECK_EQ(after.live_count - before.live_count, 1); /* the callable table */
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.uploads, 1);
    CHECK(r.upload_bytes > 0);
    kt_finish(c);
}

/* ---- K14: ids -------------------------------------------------------------------------- */

KT_TEST(a_duplicate_id_is_refused_and_the_first_registration_is_intact) { /* K14 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 7, noop.bytes, noop.size));
    kt_state before = kt_state_take(c);
    CHECK_K(kctx_prepare(c, 7, append.bytes, append.size), KCTX_DUPLICATE_ID);
    CHECK(strstr(kctx_last_error(c), "7") != NULL);
    CHECK_K(kctx_prepare(c, 7, noop.bytes, noop.size), KCTX_DUPLICATE_ID);
    CHECK_UNCHANGED(c, before);
    /* the first upload is still there: the same bytes under a new id share it */
    CHECK_OK(kctx_prepare(c, 8, noop.bytes, noop.size));
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.uploads, 1);
    CHECK_EQ(r.callables, 2);
    CHECK_EQ(r.upload_bytes, before.res.upload_bytes);
    kt_finish(c);
}

KT_TEST(identical_bytes_under_100_ids_share_one_upload) { /* K14 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 0, noop.bytes, noop.size));
    uint64_t count0 = 0, bytes0 = 0;
    CHECK_SIM_OK(sim_mem_stats(0, &count0, &bytes0));
    kctx_resource_info r0 = kt_resources(c);
    for (uint64_t id = 1; id < 100; id++) {
        void *copy = kt_image_dup(noop); /* other storage, same bytes */
        REQUIRE(copy);
        CHECK_OK(kctx_prepare(c, id * 1000003u, copy, noop.size));
        memset(copy, 0xA5, noop.size);
        free(copy);
        uint64_t count = 0, bytes = 0;
        CHECK_SIM_OK(sim_mem_stats(0, &count, &bytes));
        if (!CHECK_EQ(bytes, bytes0) || !CHECK_EQ(count, count0)) break;
    }
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.callables, 100);
    CHECK_EQ(r.uploads, 1);
    CHECK_EQ(r.upload_bytes, r0.upload_bytes);
    kt_finish(c);
}

/* Kills: a lookup that returns the first callable or the last prepared,
 * an index rebuilt without the ids already in it, a probe that stops at a
 * colliding slot. Launch and prepare find a callable by its id among many
 * (K14, K18), ids alike in their low bits or in their high bits included. */
KT_TEST(launch_finds_each_of_600_callables_by_its_id_and_no_other) { /* K14, K18 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    enum {
        N = 300
    };
    /* two families: i << 32 | 5 (equal low bits) and i (equal high bits);
     * even i the empty callable (no argument), odd i append (one tensor) */
    for (uint64_t i = 1; i <= N; i++) {
        kt_image img = i % 2 ? append : noop;
        CHECK_OK(kctx_prepare(c, i << 32 | 5, img.bytes, img.size));
        CHECK_OK(kctx_prepare(c, i, img.bytes, img.size));
    }
    CHECK_EQ(kt_resources(c).callables, 2 * N);
    CHECK_EQ(kt_resources(c).uploads, 2);
    int wrong = 0;
    for (uint64_t i = N; i >= 1 && wrong < 3; i--) {
        const uint64_t ids[2] = {i << 32 | 5, i};
        for (int k = 0; k < 2; k++) {
            kctx_status st = kctx_launch(c, ids[k], NULL, 0, s);
            /* the empty callable runs; append refuses a launch without its tensor */
            kctx_status want = i % 2 ? KCTX_INVALID_ARGUMENT : KCTX_OK;
            if (!CHECK_K(st, want)) wrong++;
            if (i % 2 && strstr(kctx_last_error(c), "takes 1 arguments") == NULL) wrong++;
        }
        /* ids never prepared: unknown, also beside prepared ones */
        if (!CHECK_K(kctx_launch(c, i << 32 | 6, NULL, 0, s), KCTX_UNKNOWN_ID)) wrong++;
        if (!CHECK_K(kctx_launch(c, i + 2 * N, NULL, 0, s), KCTX_UNKNOWN_ID)) wrong++;
        if (!CHECK_K(kctx_prepare(c, ids[i % 2], noop.bytes, noop.size), KCTX_DUPLICATE_ID))
            wrong++;
    }
    CHECK_EQ(wrong, 0);
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
}

/* An image named `name` of `ntasks` independent tasks of the empty child,
 * `blocks` blocks each. */
static kt_image noop_image(const char *name, unsigned ntasks, unsigned blocks) {
    kt_image mod = kt_test_kernels_module(), img = {NULL, 0};
    kctx_image_builder *b = mod.bytes ? kctx_image_builder_new(name) : NULL;
    if (!b) return img;
    uint32_t fid = 0;
    kctx_image_builder_child(b, "noop", "t_noop", &fid);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, mod.bytes, mod.size);
    for (unsigned t = 0; t < ntasks; t++) kctx_image_builder_task(b, fid, blocks, NULL);
    void *out = NULL;
    size_t size = 0;
    if (kctx_image_builder_finish(b, &out, &size, NULL, 0) == KCTX_BUILD_OK)
        img = (kt_image){out, size};
    kctx_image_builder_free(b);
    return img;
}

/* The empty callable under the name "noop<i>": distinct bytes per i. */
static kt_image named_noop(unsigned i) {
    char name[32];
    snprintf(name, sizeof name, "noop%u", i);
    return noop_image(name, 1, 1);
}

/* Kills: an identical-bytes lookup that misses uploads registered before
 * its index grew, or that stops at the first upload with the same CRC
 * slot. K14 among many uploads: the bytes of any of 40 distinct images,
 * prepared again under a new id, share that image's upload. */
KT_TEST(identical_bytes_find_their_upload_among_40_distinct_ones) { /* K14 */
    enum {
        N = 40
    };
    kt_image imgs[N];
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    for (unsigned i = 0; i < N; i++) {
        imgs[i] = named_noop(i);
        REQUIRE(imgs[i].bytes);
        CHECK_OK(kctx_prepare(c, i + 1, imgs[i].bytes, imgs[i].size));
    }
    kctx_resource_info r0 = kt_resources(c);
    CHECK_EQ(r0.uploads, N);
    for (unsigned i = 0; i < N; i++) {
        void *copy = kt_image_dup(imgs[i]); /* other storage, same bytes */
        REQUIRE(copy);
        CHECK_OK(kctx_prepare(c, 1000 + i, copy, imgs[i].size));
        free(copy);
    }
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.uploads, N);
    CHECK_EQ(r.callables, 2 * N);
    CHECK_EQ(r.upload_bytes, r0.upload_bytes);
    for (unsigned i = 0; i < N; i++) free((void *)imgs[i].bytes);
    kt_finish(c);
}

/* CRC32C (Castagnoli, reflected 0x82F63B78, initial and final ~0), bit by
 * bit: the checksum prepare indexes identical bytes by (K14) and the one an
 * image stores at offset 24, written here so that the test does not borrow
 * the library's. */
static uint32_t crc32c_bitwise(const void *data, size_t size) {
    const uint8_t *p = data;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The CRC32C of the whole image after its bytes [at, at + 4) were set to
 * `x` (little-endian) and the image resealed (its own checksum redone). */
static uint32_t crc_with(uint8_t *img, size_t size, size_t at, uint32_t x) {
    for (int i = 0; i < 4; i++) img[at + (size_t)i] = (uint8_t)(x >> (8 * i));
    if (kctx_image_reseal(img, size) != 0) return 0;
    return crc32c_bitwise(img, size);
}

/* Set img[at, at + 4) so that the resealed image's CRC32C is `want`: every
 * step is affine over GF(2) (the CRC of the content, the stored checksum,
 * the CRC of the whole), so crc(x) = crc(0) ^ L x; L's columns are found by
 * trying each bit, and L x = want ^ crc(0) is solved by elimination. 0 when
 * it has no solution. */
static int force_crc(uint8_t *img, size_t size, size_t at, uint32_t want) {
    uint32_t base = crc_with(img, size, at, 0), col[32];
    for (int j = 0; j < 32; j++) col[j] = crc_with(img, size, at, 1u << j) ^ base;
    /* rows of [L | rhs]: row r holds bit r of every column, rhs in bit 32 */
    uint64_t row[32];
    uint32_t rhs = want ^ base;
    for (int r = 0; r < 32; r++) {
        row[r] = (uint64_t)(rhs >> r & 1u) << 32;
        for (int j = 0; j < 32; j++) row[r] |= (uint64_t)(col[j] >> r & 1u) << j;
    }
    /* reduced row echelon form; a free variable is left 0 */
    int pivot_col[32], rank = 0;
    for (int j = 0; j < 32 && rank < 32; j++) {
        int piv = -1;
        for (int r = rank; r < 32 && piv < 0; r++)
            if (row[r] >> j & 1u) piv = r;
        if (piv < 0) continue;
        uint64_t t = row[piv];
        row[piv] = row[rank];
        row[rank] = t;
        for (int r = 0; r < 32; r++)
            if (r != rank && (row[r] >> j & 1u)) row[r] ^= row[rank];
        pivot_col[rank++] = j;
    }
    for (int r = rank; r < 32; r++)
        if (row[r] >> 32 & 1u) return 0; /* no solution at this position */
    uint32_t x = 0;
    for (int r = 0; r < rank; r++) x |= (uint32_t)(row[r] >> 32 & 1u) << pivot_col[r];
    return crc_with(img, size, at, x) == want;
}

/* The empty callable with a second variant of its child, OpenCL C source
 * `src` (8 bytes): the sim loads only the SIM_ELF one, and an image's blobs
 * are read only by its checksum, so these bytes are free. */
static kt_image noop_with_source(const char src[8]) {
    kt_image mod = kt_test_kernels_module(), img = {NULL, 0};
    kctx_image_builder *b = mod.bytes ? kctx_image_builder_new("twin") : NULL;
    if (!b) return img;
    uint32_t fid = 0;
    kctx_image_builder_child(b, "noop", "t_noop", &fid);
    kctx_image_builder_variant(b, KCTX_VARIANT_SIM_ELF, mod.bytes, mod.size);
    kctx_image_builder_variant(b, KCTX_VARIANT_OPENCL_C, src, 8);
    kctx_image_builder_task(b, fid, 1, NULL);
    void *out = NULL;
    size_t size = 0;
    if (kctx_image_builder_finish(b, &out, &size, NULL, 0) == KCTX_BUILD_OK)
        img = (kt_image){out, size};
    kctx_image_builder_free(b);
    return img;
}

/* Kills: an identical-bytes lookup that matches on size and CRC32C alone
 * without comparing the bytes (src/core/prepare.c, find_identical). K14
 * shares an upload between identical bytes only: two valid images of the
 * same size and the same CRC32C whose bytes differ (a CRC collision forced
 * through 4 bytes of a variant the sim does not load) get an upload each,
 * while a copy of either still shares its upload. */
KT_TEST(same_size_and_crc32c_but_other_bytes_share_no_upload) { /* K14 */
    kt_image a = noop_with_source("AAAAAAAA"), b = noop_with_source("BBBBBBBB");
    REQUIRE(a.bytes && b.bytes);
    REQUIRE_EQ(a.size, b.size);
    uint8_t *bb = (uint8_t *)b.bytes;
    /* the CRC computed here is the image's own: the stored checksum agrees */
    REQUIRE_EQ(crc32c_bitwise(bb + KCTX_IMAGE_HEADER_SIZE, b.size - KCTX_IMAGE_HEADER_SIZE),
               get_u32(bb + 24));
    /* the source is the last blob: its bytes 4..7 are the 4 free bytes.
     * CRC32C's polynomial has the factor x + 1, so through the reseal those
     * bytes move the whole image's CRC in 31 dimensions only: a solution
     * exists when the one bit they cannot move agrees, and the source's
     * first byte (where the two images differ) is varied until it does. */
    REQUIRE(memcmp(bb + b.size - 8, "BBBBBBBB", 8) == 0);
    uint32_t want = crc32c_bitwise(a.bytes, a.size);
    int forced = 0;
    for (uint8_t v = 'B'; v <= 'Z' && !forced; v++) {
        bb[b.size - 8] = v;
        forced = force_crc(bb, b.size, b.size - 4, want);
    }
    REQUIRE(forced);
    REQUIRE_EQ(crc32c_bitwise(b.bytes, b.size), want);
    REQUIRE(memcmp(a.bytes, b.bytes, a.size) != 0);
    kctx_image_error err;
    REQUIRE_EQ(kctx_image_validate(b.bytes, b.size, &err), KCTX_IMAGE_OK);

    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    CHECK_OK(kctx_prepare(c, 1, a.bytes, a.size));
    CHECK_OK(kctx_prepare(c, 2, b.bytes, b.size));
    kctx_resource_info r = kt_resources(c);
    CHECK_EQ(r.callables, 2);
    CHECK_EQ(r.uploads, 2);       /* other bytes: an upload of their own */
    void *copy = kt_image_dup(b); /* the same bytes again: shared */
    REQUIRE(copy);
    CHECK_OK(kctx_prepare(c, 3, copy, b.size));
    free(copy);
    CHECK_EQ(kt_resources(c).uploads, 2);
    CHECK_EQ(kt_resources(c).upload_bytes, r.upload_bytes);
    free((void *)a.bytes);
    free((void *)b.bytes);
    kt_finish(c);
}

/* Mailboxes of the context's cores that read 1 (workers reported in). */
static uint32_t reported_in(const kctx_rt_arch *arch) {
    uint32_t ready = 0;
    for (uint32_t i = 0; i < arch->core_count; i++) {
        uint32_t v = 0;
        CHECK_SIM_OK(sim_atomic_read_u32(arch->mailbox[i], &v));
        ready += v;
    }
    return ready;
}

/* Kills: launching the worker program with one block per core whatever the
 * callable (src/core/launch.c, enqueue_chain), or with fewer blocks than
 * the callable has. K20, docs/kernel-mode.md "Launch": RESIDENT starts one
 * worker per core, or as many as the callable has blocks in all when that
 * is fewer. Each worker reports in through its core's mailbox (the acquire
 * step clears them all first) and then waits for the scheduler, which is
 * held here: every worker launched reports in, and no other. */
KT_TEST(a_resident_launch_starts_as_many_workers_as_the_callable_has_blocks) { /* K20 */
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    cfg.strategy = KCTX_STRATEGY_RESIDENT;
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    kctx_resource_info r = kt_resources(c);
    kctx_rt_arch *arch = calloc(1, r.arch_table_bytes);
    REQUIRE(arch);
    REQUIRE_SIM_OK(sim_memcpy(arch, (const void *)(uintptr_t)r.arch_table, r.arch_table_bytes,
                              SIM_COPY_DEVICE_TO_HOST));
    sim_function sched = 0;
    REQUIRE_SIM_OK(sim_module_get_function(&sched, r.programs_module, "kctx_rt_scheduler"));
    const uint32_t cores = arch->core_count;
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    static const unsigned shapes[][2] = {{1, 1}, {2, 1}, {1, 3}, {3, 2}, {1, 9}, {1, 1}};
    for (unsigned k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        unsigned ntasks = shapes[k][0], blocks = shapes[k][1];
        uint32_t want = ntasks * blocks < cores ? ntasks * blocks : cores;
        kt_image img = noop_image("blocks", ntasks, blocks);
        REQUIRE(img.bytes);
        CHECK_OK(kctx_prepare(c, 100 + k, img.bytes, img.size));
        free((void *)img.bytes);
        sim_hold h = SIM_HOLD_INIT;
        h.kind = SIM_EXEC_KERNEL;
        h.fn = sched;
        int hid = -1;
        REQUIRE_SIM_OK(sim_hold_arm(&h, &hid));
        CHECK_OK(kctx_launch(c, 100 + k, NULL, 0, s));
        CHECK_SIM_OK(sim_hold_wait_reached(hid, 10000));
        /* every worker launched reports in while the scheduler is held */
        uint32_t ready = 0;
        for (int w = 0; w < 5000 && (ready = reported_in(arch)) < want; w++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        nanosleep(&(struct timespec){0, 20000000}, NULL); /* room for any more to appear */
        ready = reported_in(arch);
        if (!CHECK_EQ(ready, want))
            fprintf(stderr, "    %u tasks of %u blocks on %u cores\n", ntasks, blocks, cores);
        CHECK_SIM_OK(sim_hold_release(hid));
        CHECK_SIM_OK(sim_stream_synchronize(s));
    }
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(c, &rep));
    CHECK_K(rep.device_status, KCTX_OK);
    CHECK_SIM_OK(sim_stream_destroy(s));
    free(arch);
    kt_finish(c);
}

/* ---- K15: an idle context; completion before return --------------------------------------- */

/* Puts a held k_noop on `stream` (a stand-in for a launch in flight until the
 * launch issue): returns the hold id, -1 on failure. */
static int hold_kernel_on(sim_stream stream, sim_module *mod) {
    sim_function fn = 0;
    if (!CHECK_SIM_OK(kt_load_kernel("k_noop", mod, &fn))) return -1;
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_KERNEL;
    h.fn = fn;
    int id = -1;
    CHECK_SIM_OK(sim_hold_arm(&h, &id));
    CHECK_SIM_OK(sim_launch_kernel(stream, fn, SIM_TARGET_AICPU, 1, NULL, 0));
    CHECK_SIM_OK(sim_hold_wait_reached(id, 10000));
    return id;
}

KT_TEST(prepare_never_waits_for_or_enqueues_on_the_aicpu_stream) { /* K15, K16 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    sim_stream s = kt_aicpu_stream(c);
    sim_module mod = 0;
    int hold = hold_kernel_on(s, &mod);
    REQUIRE(hold >= 0);
    CHECK_SIM(sim_stream_query(s), SIM_NOT_READY);
    uint64_t syncs = kt_calls(SIM_OP_STREAM_SYNCHRONIZE);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));      /* completes beside the held work */
    CHECK_SIM(sim_stream_query(s), SIM_NOT_READY);            /* which it did not wait for */
    CHECK_EQ(kt_calls(SIM_OP_STREAM_SYNCHRONIZE) - syncs, 1); /* only its own upload's wait */
    CHECK_SIM_OK(sim_hold_release(hold));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    CHECK_SIM_OK(sim_module_unload(mod));
    kt_finish(c);
}

KT_TEST(prepare_beside_a_launch_in_flight_leaves_it_undisturbed) { /* K15 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_KERNEL; /* the launch's acquire step on the AICPU stream */
    h.device = 0;
    int hold = -1;
    REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
    CHECK_OK(kctx_launch(c, 1, NULL, 0, caller));
    CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000));
    CHECK_OK(kctx_prepare(c, 2, append.bytes, append.size)); /* the launch is still held */
    CHECK_SIM(sim_stream_query(caller), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(hold));
    CHECK_SIM_OK(sim_stream_synchronize(caller)); /* the held launch completes normally */
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(c, &rep));
    CHECK_K(rep.device_status, KCTX_OK);
    kt_finish(c);
    CHECK_SIM_OK(sim_stream_destroy(caller));
}

/* Once the caller has synchronised its stream past a launch, the launch is
 * over: prepare (K15) and close (K25) must not find it in flight. (The
 * window this probes is short; the loop makes hitting it likely when it
 * exists, and the test can never fail spuriously once it is closed.) */
KT_TEST(after_the_caller_synchronised_a_launch_prepare_and_close_are_not_busy) { /* K15, K25 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream caller = 0;
    REQUIRE_SIM_OK(sim_stream_create(&caller));
    int busy = 0;
    for (uint64_t id = 2; id < 202; id++) {
        REQUIRE_OK(kctx_launch(c, 1, NULL, 0, caller));
        REQUIRE_SIM_OK(sim_stream_synchronize(caller));
        kctx_status st = kctx_prepare(c, id, noop.bytes, noop.size); /* shares the upload */
        if (st == KCTX_BUSY) {
            busy++;
            CHECK_SIM_OK(sim_stream_synchronize(kt_aicpu_stream(c)));
            CHECK_OK(kctx_prepare(c, id, noop.bytes, noop.size));
        } else {
            CHECK_OK(st);
        }
    }
    if (!CHECK_EQ(busy, 0))
        fprintf(stderr, "    prepare was BUSY %d times of 200 after the caller's sync\n", busy);
    REQUIRE_OK(kctx_launch(c, 1, NULL, 0, caller));
    REQUIRE_SIM_OK(sim_stream_synchronize(caller));
    kctx_status st = kctx_close(c);
    if (st == KCTX_BUSY) {
        CHECK(!"close was BUSY after the caller's sync");
        CHECK_SIM_OK(sim_stream_synchronize(kt_aicpu_stream(c)));
        st = kctx_close(c);
    }
    CHECK_OK(st);
    CHECK_OK(kctx_destroy(c));
    CHECK_SIM_OK(sim_stream_destroy(caller));
}

typedef struct prepare_call {
    kctx_context ctx;
    void *image;
    size_t size;
    sim_stream aicpu;
    kctx_status st;
    sim_status query_on_return;
    atomic_int returned;
} prepare_call;

static void *prepare_id(prepare_call *pc, uint64_t id) {
    pc->st = kctx_prepare(pc->ctx, id, pc->image, pc->size);
    /* at the moment prepare returns, nothing of it may be in flight */
    pc->query_on_return = sim_stream_query(pc->aicpu);
    /* the caller may free the image right away */
    memset(pc->image, 0xA5, pc->size);
    free(pc->image);
    atomic_store(&pc->returned, 1);
    return NULL;
}

static void *prepare_thread(void *p) { return prepare_id(p, 1); }
static void *prepare_thread2(void *p) {
    kt_set_device(0);
    return prepare_id(p, 2);
}

KT_TEST(prepare_returns_only_after_its_upload_completed) { /* K15 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    prepare_call pc = {
        c, kt_image_dup(noop), noop.size, kt_resources(c).upload_stream, KCTX_OK, SIM_OK, 0};
    REQUIRE(pc.image);
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_COPY; /* the upload of the callable table */
    h.device = 0;
    int hold = -1;
    REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, prepare_thread, &pc) == 0);
    CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000)); /* the upload is provably in flight */
    CHECK_EQ(atomic_load(&pc.returned), 0);           /* and prepare has not returned */
    CHECK_SIM(sim_stream_query(pc.aicpu), SIM_NOT_READY);
    CHECK_SIM_OK(sim_hold_release(hold));
    pthread_join(t, NULL);
    CHECK_OK(pc.st);
    CHECK_SIM_OK(pc.query_on_return);
    /* the image memory is gone; the prepared callable is intact and shared */
    kt_image again = kt_image_noop();
    CHECK_OK(kctx_prepare(c, 2, again.bytes, again.size));
    CHECK_EQ(kt_resources(c).uploads, 1);
    kt_finish(c);
}

typedef struct launch_call {
    kctx_context ctx;
    sim_stream stream;
    kctx_status st;
    sim_status synced;
    atomic_int done;
} launch_call;

static void *launch_thread(void *p) {
    launch_call *lc = p;
    kt_set_device(0);
    lc->st = kctx_launch(lc->ctx, 1, NULL, 0, lc->stream);
    lc->synced = sim_stream_synchronize(lc->stream);
    atomic_store(&lc->done, 1);
    return NULL;
}

KT_TEST(a_slow_prepare_delays_no_launch_of_another_id_and_close_waits_for_it) { /* K16, K33 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = kt_config(0);
    cfg.strategy = KCTX_STRATEGY_RESIDENT; /* the prepare that has an upload to hold */
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    REQUIRE_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    sim_stream s = 0;
    REQUIRE_SIM_OK(sim_stream_create(&s));
    /* prepare id 2 on another thread; its table upload is held on the device */
    prepare_call pc = {
        c, kt_image_dup(append), append.size, kt_resources(c).upload_stream, KCTX_OK, SIM_OK, 0};
    REQUIRE(pc.image);
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_COPY;
    h.device = 0;
    int hold = -1;
    REQUIRE_SIM_OK(sim_hold_arm(&h, &hold));
    pthread_t tp, tl;
    REQUIRE(pthread_create(&tp, NULL, prepare_thread2, &pc) == 0);
    CHECK_SIM_OK(sim_hold_wait_reached(hold, 10000)); /* the prepare is in its upload */
    /* a launch of id 1 completes while that prepare is still held */
    launch_call lc = {c, s, KCTX_INVALID_STATE, SIM_INVALID_VALUE, 0};
    REQUIRE(pthread_create(&tl, NULL, launch_thread, &lc) == 0);
    for (int i = 0; i < 500 && !atomic_load(&lc.done); i++) usleep(10000);
    CHECK(atomic_load(&lc.done)); /* not delayed behind the prepare (5 s at most) */
    CHECK_EQ(atomic_load(&pc.returned), 0);
    if (atomic_load(&lc.done)) {
        CHECK_OK(lc.st);
        CHECK_SIM_OK(lc.synced);
        /* close waits for the prepare: BUSY, nothing changed */
        CHECK_K(kctx_close(c), KCTX_BUSY);
        CHECK(strstr(kctx_last_error(c), "prepare") != NULL);
        CHECK_PHASE(c, KCTX_PHASE_READY);
    }
    CHECK_SIM_OK(sim_hold_release(hold));
    pthread_join(tp, NULL);
    pthread_join(tl, NULL);
    CHECK_OK(pc.st);
    CHECK_EQ(kt_resources(c).callables, 2);
    CHECK_SIM_OK(sim_stream_destroy(s));
    kt_finish(c);
}

/* ---- K16: captures ------------------------------------------------------------------------- */

/* Makes the context's stream `s` join a capture begun on the test's own
 * stream `origin`. */
static void join_capture(sim_stream origin, sim_event fork, sim_stream s) {
    CHECK_SIM_OK(sim_stream_begin_capture(origin, SIM_CAPTURE_MODE_GLOBAL));
    CHECK_SIM_OK(sim_event_record(fork, origin));
    CHECK_SIM_OK(sim_stream_wait_event(s, fork));
}

static sim_capture_status capture_status(sim_stream s) {
    sim_capture_status st = SIM_CAPTURE_STATUS_NONE;
    CHECK_SIM_OK(sim_stream_get_capture_info(s, &st, NULL, NULL));
    return st;
}

KT_TEST(prepare_works_while_the_context_streams_are_in_an_active_capture) { /* K16 */
    kt_image noop = kt_image_noop(), append = kt_image_append();
    REQUIRE(noop.bytes && append.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kctx_resource_info r = kt_resources(c);
    for (int which = 0; which < 2; which++) { /* the AICPU stream, then the AICore stream */
        sim_stream ctx_stream = which ? r.aicore_stream : r.aicpu_stream;
        sim_stream origin = 0;
        sim_event fork = 0, join = 0;
        REQUIRE_SIM_OK(sim_stream_create(&origin));
        REQUIRE_SIM_OK(sim_event_create(&fork, SIM_EVENT_DISABLE_TIMING));
        REQUIRE_SIM_OK(sim_event_create(&join, SIM_EVENT_DISABLE_TIMING));
        join_capture(origin, fork, ctx_stream);
        CHECK_EQ(capture_status(ctx_stream), SIM_CAPTURE_STATUS_ACTIVE);
        sim_capture_mode mode = kt_capture_mode();
        /* a new upload (which=0) and a shared one (which=1) */
        CHECK_OK(kctx_prepare(c, 1 + which, which ? noop.bytes : append.bytes,
                              which ? noop.size : append.size));
        CHECK_EQ(kt_capture_mode(), mode);                           /* mode restored */
        CHECK_EQ(capture_status(origin), SIM_CAPTURE_STATUS_ACTIVE); /* prepare broke nothing */
        CHECK_EQ(capture_status(ctx_stream), SIM_CAPTURE_STATUS_ACTIVE);
        CHECK_EQ(capture_status(r.upload_stream), SIM_CAPTURE_STATUS_NONE); /* never captured */
        /* join back and end the capture: prepare added no node */
        CHECK_SIM_OK(sim_event_record(join, ctx_stream));
        CHECK_SIM_OK(sim_stream_wait_event(origin, join));
        sim_graph g = 0;
        CHECK_SIM_OK(sim_stream_end_capture(origin, &g));
        size_t nodes = 0;
        CHECK_SIM_OK(sim_graph_node_count(g, &nodes));
        CHECK_EQ(nodes, 0); /* the test's events are edges; prepare added no node */
        CHECK_SIM_OK(sim_graph_destroy(g));
        CHECK_EQ(capture_status(ctx_stream), SIM_CAPTURE_STATUS_NONE);
        CHECK_SIM_OK(sim_event_destroy(fork));
        CHECK_SIM_OK(sim_event_destroy(join));
        CHECK_SIM_OK(sim_stream_destroy(origin));
    }
    CHECK_EQ(kt_resources(c).callables, 2);
    kt_finish(c);
}

KT_TEST(prepare_works_while_the_context_streams_are_in_an_invalidated_capture) { /* K16 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    sim_stream s = kt_aicpu_stream(c), origin = 0;
    sim_event fork = 0;
    REQUIRE_SIM_OK(sim_stream_create(&origin));
    REQUIRE_SIM_OK(sim_event_create(&fork, SIM_EVENT_DISABLE_TIMING));
    join_capture(origin, fork, s);
    CHECK_SIM(sim_stream_synchronize(origin), SIM_CAPTURE_UNSUPPORTED); /* invalidates it */
    CHECK_EQ(capture_status(s), SIM_CAPTURE_STATUS_INVALIDATED);
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size)); /* it never touches that stream */
    sim_graph g = 0;
    CHECK_SIM(sim_stream_end_capture(origin, &g),
              SIM_CAPTURE_INVALIDATED); /* every stream leaves it */
    CHECK_EQ(capture_status(s), SIM_CAPTURE_STATUS_NONE);
    CHECK_SIM_OK(sim_event_destroy(fork));
    CHECK_SIM_OK(sim_stream_destroy(origin));
    kt_finish(c);
}

/* ---- K17 (first half): the upload could not be started ------------------------------------------ */

KT_TEST(an_upload_that_could_not_be_started_keeps_nothing) { /* K17, K9 */
    kt_image noop = kt_image_noop();
    REQUIRE(noop.bytes);
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    static const sim_op before_upload[] = {SIM_OP_MODULE_LOAD, SIM_OP_MODULE_GET_FUNCTION,
                                           SIM_OP_FUNCTION_ADDRESS, SIM_OP_MALLOC,
                                           SIM_OP_MEMCPY_ASYNC};
    for (size_t i = 0; i < sizeof before_upload / sizeof *before_upload; i++) {
        kt_snap dev = kt_snap_take(0);
        kctx_resource_info r0 = kt_resources(c);
        kt_fault(before_upload[i], 1, 0);
        if (!CHECK_K(kctx_prepare(c, 1, noop.bytes, noop.size), KCTX_PLATFORM_ERROR))
            fprintf(stderr, "    failing: %s\n", sim_op_name(before_upload[i]));
        sim_fault_clear_all();
        CHECK_PHASE(c, KCTX_PHASE_READY); /* nothing was enqueued: not poisoned */
        CHECK_EQ(kt_runtime_error(c), KCTX_OK);
        CHECK_DEVICE_AT(0, dev);
        kctx_resource_info r = kt_resources(c);
        CHECK_EQ(r.callables, r0.callables);
        CHECK_EQ(r.uploads, r0.uploads);
    }
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size)); /* the id is free */
    kt_finish(c);
}
