/*
 * test_platforms.c — the platform seam (issue 12): structs that grow in
 * both directions (kctx.h, "Structs that grow"), the registry and the
 * capability query (kctx.h, docs/platforms.md), strategies chosen from the
 * platform's declaration, and the admission of a platform's versioned
 * tables (src/platforms/admit.c, compiled into this test: it is pure).
 */
#include "kctx_gen_registry.h"
#include "kt.h"

#include <kctx/platform.h>

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The registry's admission, tested on tables made here. */
#include "../../src/platforms/admit.c"

/* ======================================================================== */
/* structs that grow: input (the configs)                                    */

/* The first published size of both configs: up to trace_path. */
#define CONFIG_V1_SIZE offsetof(kctx_kernel_config, strategy)

KT_TEST(the_first_config_version_is_48_bytes_and_ends_with_trace_path) {
    CHECK_EQ(offsetof(kctx_kernel_config, strategy), 48);
    CHECK_EQ(offsetof(kctx_program_config, strategy), 48);
    CHECK_EQ(sizeof(kctx_kernel_config), 56);
    CHECK_EQ(sizeof(kctx_program_config), 56);
    CHECK_EQ(sizeof(kctx_resource_info), 176);
    CHECK_EQ(offsetof(kctx_resource_info, upload_stream), 144);
    CHECK_EQ(offsetof(kctx_resource_info, arg_slots), 152);
    CHECK_EQ(offsetof(kctx_platform_caps, note), 72);
    CHECK_EQ(sizeof(kctx_platform_caps), 80);
}

KT_TEST(an_older_kernel_config_is_taken_over_the_defaults) {
    /* An old caller's struct is 48 bytes and nothing beyond is its own: it
     * lives in an allocation of exactly that size, so a sanitizer build
     * proves kctx reads no byte past it. */
    kctx_kernel_config full = KCTX_KERNEL_CONFIG_INIT;
    full.size = CONFIG_V1_SIZE;
    full.args_capacity = 8192;
    full.token_capacity = 7;
    unsigned char *old = malloc(CONFIG_V1_SIZE);
    REQUIRE(old);
    memcpy(old, &full, CONFIG_V1_SIZE);
    kctx_context c = kt_create();
    if (c && CHECK_OK(kctx_kernel_init(c, (const kctx_kernel_config *)(void *)old))) {
        kctx_resource_info info = kt_resources(c);
        CHECK_EQ(info.args_block_bytes, 8192); /* what it gave is honoured */
        CHECK_EQ(info.token_capacity, 7);
        kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
        CHECK_OK(kctx_get_context_caps(c, &caps));
        CHECK_EQ(caps.strategy, caps.default_strategy); /* what it did not know: the default */
    }
    free(old);
    if (c) kt_finish(c);
}

KT_TEST(an_older_kernel_config_ignores_what_lies_beyond_its_size) {
    /* Beyond an old caller's 48 bytes, whatever is in memory is not a
     * request: garbage in the strategy and reserved slots is not read. */
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.size = CONFIG_V1_SIZE;
    cfg.strategy = 0xdeadbeefu;
    cfg.reserved = 0xffffffffu;
    kctx_context c = kt_create();
    REQUIRE(c);
    CHECK_OK(kctx_kernel_init(c, &cfg));
    kt_finish(c);
}

KT_TEST(an_older_program_config_is_taken_over_the_defaults) {
    kctx_program_config full = KCTX_PROGRAM_CONFIG_INIT;
    full.size = CONFIG_V1_SIZE;
    full.device = 0;
    full.args_capacity = 1024;
    unsigned char *old = malloc(CONFIG_V1_SIZE);
    REQUIRE(old);
    memcpy(old, &full, CONFIG_V1_SIZE);
    kctx_context c = kt_create();
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_SET_DEVICE, 1);
    if (c && CHECK_OK(kctx_program_init(c, (const kctx_program_config *)(void *)old))) {
        CHECK_MODE(c, KCTX_MODE_PROGRAM);
        CHECK_EQ(kt_resources(c).args_block_bytes, 1024);
    }
    free(old);
    if (c) kt_finish(c);
}

/* A caller built against a newer kctx.h: its config has fields this
 * library does not know. */
typedef struct newer_kernel_config {
    kctx_kernel_config known;
    uint64_t future[3];
} newer_kernel_config;

KT_TEST(a_newer_kernel_config_whose_new_fields_are_zero_is_accepted) {
    newer_kernel_config n;
    memset(&n, 0, sizeof n);
    n.known = (kctx_kernel_config)KCTX_KERNEL_CONFIG_INIT;
    n.known.size = sizeof n;
    kctx_context c = kt_create();
    REQUIRE(c);
    CHECK_OK(kctx_kernel_init(c, &n.known));
    kt_finish(c);
}

KT_TEST(a_newer_kernel_config_asking_for_something_new_is_refused_naming_the_size) {
    newer_kernel_config n;
    memset(&n, 0, sizeof n);
    n.known = (kctx_kernel_config)KCTX_KERNEL_CONFIG_INIT;
    n.known.size = sizeof n;
    n.future[2] = 1; /* the last byte range this library does not know */
    kctx_context c = kt_create();
    REQUIRE(c);
    uint64_t calls = kt_calls(SIM_OP_ANY);
    CHECK_K(kctx_kernel_init(c, &n.known), KCTX_INVALID_ARGUMENT);
    char size[32];
    snprintf(size, sizeof size, "size %zu", sizeof n);
    CHECK_CONTAINS(kctx_thread_last_error(), size);
    CHECK_CONTAINS(kctx_thread_last_error(), "not zero");
    CHECK_EQ(kt_calls(SIM_OP_ANY), calls); /* refused before any platform call (K2) */
    CHECK_MODE(c, KCTX_MODE_NONE);
    CHECK_PHASE(c, KCTX_PHASE_NEW);
    /* the same for a program config */
    struct {
        kctx_program_config known;
        uint32_t future;
    } p;
    memset(&p, 0, sizeof p);
    p.known = (kctx_program_config)KCTX_PROGRAM_CONFIG_INIT;
    p.known.size = sizeof p;
    p.future = 5;
    CHECK_K(kctx_program_init(c, &p.known), KCTX_INVALID_ARGUMENT);
    CHECK_MODE(c, KCTX_MODE_NONE);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(a_config_size_that_is_no_version_is_refused) {
    static const size_t bad[] = {0, 8, 40, 47, 49, 52, 55, 4097, (size_t)-1};
    kctx_context c = kt_create();
    REQUIRE(c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* (none lies between 56 and 4096: those would be read as a newer
         * header's config, past this struct) */
        kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
        cfg.size = bad[i];
        if (!CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_ARGUMENT))
            fprintf(stderr, "    size %zu\n", bad[i]);
        kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
        pcfg.size = bad[i];
        if (!CHECK_K(kctx_program_init(c, &pcfg), KCTX_INVALID_ARGUMENT))
            fprintf(stderr, "    size %zu\n", bad[i]);
    }
    CHECK_MODE(c, KCTX_MODE_NONE);
    CHECK_OK(kctx_destroy(c));
}

KT_TEST(a_config_with_reserved_set_or_another_version_is_refused) {
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.reserved = 1;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_ARGUMENT);
    CHECK_CONTAINS(kctx_thread_last_error(), "reserved");
    cfg = (kctx_kernel_config)KCTX_KERNEL_CONFIG_INIT;
    cfg.version = 0;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_ARGUMENT);
    CHECK_CONTAINS(kctx_thread_last_error(), "version 0");
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    pcfg.reserved = 3;
    CHECK_K(kctx_program_init(c, &pcfg), KCTX_INVALID_ARGUMENT);
    CHECK_MODE(c, KCTX_MODE_NONE);
    CHECK_OK(kctx_destroy(c));
}

/* ======================================================================== */
/* structs that grow: output (resource info, capabilities)                   */

KT_TEST(an_older_resource_info_is_filled_only_as_far_as_it_reaches) {
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kctx_resource_info want = kt_resources(c);
    /* the first version: 144 bytes, before the upload stream; an allocation
     * of exactly that size (a sanitizer build sees any write past it) */
    const size_t v1 = offsetof(kctx_resource_info, upload_stream);
    unsigned char *old = malloc(v1);
    REQUIRE(old);
    memset(old, 0xa5, v1);
    memcpy(old, &v1, sizeof v1);
    if (CHECK_OK(kctx_get_resources(c, (kctx_resource_info *)(void *)old))) {
        size_t size;
        memcpy(&size, old, sizeof size);
        CHECK_EQ(size, v1); /* left as the caller set it */
        CHECK(memcmp(old + sizeof size, (const char *)&want + sizeof size, v1 - sizeof size) == 0);
    }
    free(old);
    /* the same with a canary after the 144 bytes: nothing is written there */
    unsigned char buf[sizeof(kctx_resource_info) + 16];
    memset(buf, 0xa5, sizeof buf);
    memcpy(buf, &v1, sizeof v1);
    CHECK_OK(kctx_get_resources(c, (kctx_resource_info *)(void *)buf));
    for (size_t i = v1; i < sizeof buf; i++)
        if (!CHECK_EQ(buf[i], 0xa5)) break;
    kt_finish(c);
}

KT_TEST(a_newer_resource_info_gets_its_unknown_tail_zeroed) {
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kctx_resource_info want = kt_resources(c);
    struct {
        kctx_resource_info known;
        uint64_t future[4];
    } n;
    memset(&n, 0x5a, sizeof n);
    n.known.size = sizeof n;
    CHECK_OK(kctx_get_resources(c, &n.known));
    CHECK_EQ(n.known.size, sizeof n);
    CHECK_EQ(n.known.upload_stream, want.upload_stream);
    CHECK_EQ(n.known.aicpu_stream, want.aicpu_stream);
    for (int i = 0; i < 4; i++) CHECK_EQ(n.future[i], 0);
    kt_finish(c);
}

KT_TEST(a_resource_info_size_that_is_no_version_is_refused) {
    static const size_t bad[] = {0, 8, 143, 148, 151, 5000};
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kctx_resource_info info;
        memset(&info, 0, sizeof info);
        info.size = bad[i];
        if (!CHECK_K(kctx_get_resources(c, &info), KCTX_INVALID_ARGUMENT))
            fprintf(stderr, "    size %zu\n", bad[i]);
        CHECK_EQ(info.aicpu_stream, 0); /* nothing written */
    }
    CHECK_K(kctx_get_resources(c, NULL), KCTX_INVALID_ARGUMENT);
    kt_finish(c);
}

KT_TEST(a_check_report_grows_like_every_output_struct) { /* kctx.h */
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    struct {
        kctx_check_report known;
        uint64_t future[2];
    } n;
    memset(&n, 0x5a, sizeof n);
    n.known.size = sizeof n;
    CHECK_OK(kctx_check(c, &n.known));
    CHECK_EQ(n.known.size, sizeof n);
    CHECK_K(n.known.device_status, KCTX_OK);
    CHECK_EQ(n.known.refused_replays, 0);
    for (int i = 0; i < 2; i++) CHECK_EQ(n.future[i], 0); /* the unknown tail zeroed */
    kctx_check_report small = KCTX_CHECK_REPORT_INIT;
    small.size = sizeof small - 1;
    CHECK_K(kctx_check(c, &small), KCTX_INVALID_ARGUMENT);
    kt_finish(c);
}

KT_TEST(platform_caps_grow_like_every_output_struct) {
    struct {
        kctx_platform_caps known;
        uint32_t future[6];
    } n;
    memset(&n, 0x77, sizeof n);
    n.known.size = sizeof n;
    CHECK_OK(kctx_get_platform_caps("sim", &n.known));
    CHECK_EQ(n.known.size, sizeof n);
    CHECK(n.known.available);
    for (int i = 0; i < 6; i++) CHECK_EQ(n.future[i], 0);
    /* the first published size (72, before `note`) is filled only as far
     * as it reaches: the bytes beyond are the caller's */
    struct {
        kctx_platform_caps caps;
    } old;
    memset(&old, 0x55, sizeof old);
    old.caps.size = offsetof(kctx_platform_caps, note);
    CHECK_OK(kctx_get_platform_caps("sim", &old.caps));
    CHECK(old.caps.available);
    unsigned char tail[sizeof old.caps - offsetof(kctx_platform_caps, note)];
    memcpy(tail, (unsigned char *)&old.caps + offsetof(kctx_platform_caps, note), sizeof tail);
    for (size_t i = 0; i < sizeof tail; i++) CHECK_EQ(tail[i], 0x55);
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    caps.size = offsetof(kctx_platform_caps, note) - 8; /* no such version */
    CHECK_K(kctx_get_platform_caps("sim", &caps), KCTX_INVALID_ARGUMENT);
    CHECK_CONTAINS(kctx_thread_last_error(), "kctx_platform_caps size 64");
    /* the note: "" where the platform has nothing to add */
    caps = (kctx_platform_caps)KCTX_PLATFORM_CAPS_INIT;
    CHECK_OK(kctx_get_platform_caps("sim", &caps));
    CHECK(caps.note && caps.note[0] == '\0');
}

/* ======================================================================== */
/* the registry                                                              */

/* The platforms the build declared (platform/<name>/platform.cmake), in
 * their declared order: the generated list the registry is built from
 * (kctx_gen_registry.h), so a platform added by its folder alone is
 * expected here too. The sim is always the first. */
#define KT_DECLARED_NAME(name, entry, built, why) #name,
static const char *const kt_declared[] = {KCTX_GEN_PLATFORMS(KT_DECLARED_NAME)};
#undef KT_DECLARED_NAME

KT_TEST(the_registry_lists_every_known_platform_in_order) {
    uint32_t n = (uint32_t)(sizeof kt_declared / sizeof kt_declared[0]);
    REQUIRE_EQ(kctx_platform_count(), n);
    CHECK(strcmp(kt_declared[0], "sim") == 0);
    for (uint32_t i = 0; i < n; i++) {
        const char *name = kctx_platform_name_at(i);
        CHECK(name != NULL && strcmp(name, kt_declared[i]) == 0);
    }
    CHECK(kctx_platform_name_at(n) == NULL);
    CHECK(kctx_platform_name_at(UINT32_MAX) == NULL);
}

/* ======================================================================== */
/* naming one platform wakes no other (issue 23, item 7)                     */

/* A platform's runtime library, as its adapter names it (platform/opencl/
 * cl_api.c, platform/cuda/adapter.c): the environment's override, else the
 * default soname. */
static const char *runtime_library(const char *env, const char *fallback) {
    const char *v = getenv(env);
    return v && *v ? v : fallback;
}

/* Whether the process has that library loaded: RTLD_NOLOAD loads nothing,
 * it only answers. */
static int library_loaded(const char *file) {
    void *h = dlopen(file, RTLD_LAZY | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

enum {
    CHILD_CLEAN = 0,
    CHILD_SCENARIO_FAILED = 2,
    CHILD_OPENCL_LOADED = 4,
    CHILD_CUDA_LOADED = 8
};

/* The child's whole life on the sim: create, init, prepare, launch on a
 * caller stream, check, close, destroy, and a capability query for the sim.
 * Then which other platform's library it has loaded. */
static int sim_only_life(void) {
    kt_image noop = kt_image_noop();
    kctx_context c = 0;
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    kctx_check_report report = KCTX_CHECK_REPORT_INIT;
    sim_stream s = 0;
    int bad = !noop.bytes || kctx_get_platform_caps("sim", &caps) != KCTX_OK || !caps.available;
    bad = bad || kctx_context_create("sim", &c) != KCTX_OK;
    bad = bad || kctx_kernel_init(c, &cfg) != KCTX_OK || sim_stream_create(&s) != SIM_OK;
    bad = bad || kctx_prepare(c, 1, noop.bytes, noop.size) != KCTX_OK;
    bad = bad || kctx_launch(c, 1, NULL, 0, (uint64_t)s) != KCTX_OK;
    bad = bad || sim_stream_synchronize(s) != SIM_OK || kctx_check(c, &report) != KCTX_OK;
    bad = bad || kctx_close(c) != KCTX_OK || kctx_destroy(c) != KCTX_OK;
    bad = bad || sim_stream_destroy(s) != SIM_OK;
    if (bad) {
        fprintf(stderr, "sim-only child: %s\n", kctx_thread_last_error());
        return CHILD_SCENARIO_FAILED;
    }
    int out = CHILD_CLEAN;
    if (library_loaded(runtime_library("KCTX_OPENCL_LIBRARY", "libOpenCL.so.1")))
        out |= CHILD_OPENCL_LOADED;
    if (library_loaded(runtime_library("KCTX_CUDA_DRIVER", "libcuda.so.1")))
        out |= CHILD_CUDA_LOADED;
    return out;
}

/* The process the test below starts: it runs its life before the harness's
 * main, so that nothing else in it has named a platform. With "opencl",
 * it then asks for OpenCL's capabilities: the control that shows the
 * library's load is seen when a platform is named. */
__attribute__((constructor)) static void sim_only_child(void) {
    const char *mode = getenv("KT_SIM_ONLY_CHILD");
    if (!mode) return;
    int out = sim_only_life();
    if (out == CHILD_CLEAN && strcmp(mode, "opencl") == 0) {
        kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
        if (kctx_get_platform_caps("opencl", &caps) != KCTX_OK)
            out = CHILD_SCENARIO_FAILED;
        else if (library_loaded(runtime_library("KCTX_OPENCL_LIBRARY", "libOpenCL.so.1")))
            out |= CHILD_OPENCL_LOADED;
    }
    if (out == CHILD_CLEAN && strcmp(mode, "cuda") == 0) {
        kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
        if (kctx_get_platform_caps("cuda", &caps) != KCTX_OK)
            out = CHILD_SCENARIO_FAILED;
        else if (library_loaded(runtime_library("KCTX_CUDA_DRIVER", "libcuda.so.1")))
            out |= CHILD_CUDA_LOADED;
    }
    fflush(NULL);
    _exit(out);
}

/* Run this executable again as a fresh process in `mode`; its exit status. */
static int run_child(const char *mode) {
    pid_t pid = fork();
    if (pid == 0) {
        setenv("KT_SIM_ONLY_CHILD", mode, 1);
        const char *cuda = getenv("KT_CUDA_DOUBLE"); /* a CUDA driver the child could load */
        if (cuda) setenv("KCTX_CUDA_DRIVER", cuda, 1);
        execl("/proc/self/exe", "kctx_test_platforms", "--list", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

KT_TEST(a_sim_only_process_never_loads_opencl_or_cuda) { /* issue 23 item 7, K4 */
    /* Asking for one platform probes that one only: a process that creates,
     * initialises, prepares, launches, checks and closes on the sim never
     * loads OpenCL's or CUDA's library (never resolves their entries nor
     * calls cuInit). */
    CHECK_EQ(run_child("sim"), CHILD_CLEAN);
}

KT_TEST(naming_opencl_loads_its_library_and_only_then) { /* issue 23 item 7 */
    /* The control of the test above: the same life, then a capability
     * query for opencl, loads OpenCL's library (it stays loaded, cl_api.c),
     * so that the loader sees a probe when one happens. */
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    REQUIRE_OK(kctx_get_platform_caps("opencl", &caps));
    if (!caps.built || !caps.available) KT_SKIP("opencl: %s", caps.reason);
    CHECK(library_loaded(runtime_library("KCTX_OPENCL_LIBRARY", "libOpenCL.so.1")));
    CHECK_EQ(run_child("opencl"), CHILD_OPENCL_LOADED);
}

KT_TEST(naming_cuda_loads_its_driver_and_only_then) { /* issue 23 item 7 */
    /* The same control for CUDA: with a driver to load (ctest passes the
     * driver double's path in KT_CUDA_DOUBLE when CUDA is built; the child
     * gets it as KCTX_CUDA_DRIVER), naming cuda loads it, so the sim-only
     * test's "not loaded" is an answer. */
    if (!getenv("KT_CUDA_DOUBLE")) KT_SKIP("no CUDA driver double to load (CUDA not built)");
    CHECK_EQ(run_child("cuda"), CHILD_CUDA_LOADED);
}

KT_TEST(the_sim_is_built_and_available_and_declares_its_capabilities) {
    uint64_t calls = kt_calls(SIM_OP_ANY);
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    REQUIRE_OK(kctx_get_platform_caps("sim", &caps));
    CHECK_EQ(kt_calls(SIM_OP_ANY), calls); /* no platform call */
    CHECK(strcmp(caps.name, "sim") == 0);
    CHECK(caps.built && caps.available);
    CHECK(strcmp(caps.reason, "") == 0);
    CHECK(caps.strategies & KCTX_STRATEGY_BIT(KCTX_STRATEGY_RESIDENT));
    CHECK((caps.strategies & ~(KCTX_STRATEGY_BIT(KCTX_STRATEGY_RESIDENT) |
                               KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED))) == 0);
    CHECK_EQ(caps.default_strategy, KCTX_STRATEGY_RESIDENT);
    CHECK(caps.has_capture);
    CHECK(!caps.has_null_stream);
    CHECK(caps.has_epoch);
    CHECK(caps.can_check_ranges);
    CHECK(caps.program_mode);
    CHECK_EQ(caps.strategy, KCTX_STRATEGY_DEFAULT);
    /* the declared limit is the devices' */
    sim_device_props props = SIM_DEVICE_PROPS_INIT;
    REQUIRE_SIM_OK(sim_device_get_props(0, &props));
    CHECK_EQ(caps.max_params_size, props.max_params_size);
}

/* The opencl platform: built by default where OpenCL's headers are (CI
 * installs them), available where an ICD loader loads; what it declares. */
KT_TEST(opencl_is_host_ordered_only_without_capture_epoch_ranges_or_program_mode) {
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    REQUIRE_OK(kctx_get_platform_caps("opencl", &caps));
    if (!caps.built || !caps.available) KT_SKIP("opencl: %s", caps.reason);
    CHECK_EQ(caps.strategies, KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED));
    CHECK_EQ(caps.default_strategy, KCTX_STRATEGY_HOST_ORDERED);
    CHECK(!caps.has_capture);     /* no stream capture on OpenCL */
    CHECK(!caps.has_null_stream); /* every caller queue is a real queue */
    CHECK(!caps.has_epoch);       /* quarantine is terminal */
    CHECK(!caps.can_check_ranges);
    CHECK(!caps.program_mode);
    CHECK(caps.max_params_size >= 256 && caps.max_params_size <= 1024);
    /* RESIDENT is refused with the reason */
    kctx_context c = 0;
    REQUIRE_OK(kctx_context_create("opencl", &c));
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = KCTX_STRATEGY_RESIDENT;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_UNSUPPORTED);
    /* program mode: UNSUPPORTED */
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    CHECK_K(kctx_program_init(c, &pcfg), KCTX_UNSUPPORTED);
    CHECK_CONTAINS(kctx_thread_last_error(), "opencl");
    REQUIRE_OK(kctx_destroy(c));
}

KT_TEST(cuda_is_registered_as_not_built_with_the_reason) {
    const char *names[] = {"cuda"};
    for (int i = 0; i < 1; i++) {
        kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
        REQUIRE_OK(kctx_get_platform_caps(names[i], &caps));
        CHECK(strcmp(caps.name, names[i]) == 0);
        if (caps.built) continue; /* cuda, built when nvcc is found: platform/cuda/tests */
        CHECK(!caps.built && !caps.available);
        CHECK(strstr(caps.reason, "not built into this library") != NULL);
        if (i == 0) CHECK(strstr(caps.reason, "future work") != NULL);
        /* nothing is declared for a platform that is not there */
        CHECK_EQ(caps.strategies, 0);
        CHECK_EQ(caps.default_strategy, 0);
        CHECK_EQ(caps.max_params_size, 0);
        CHECK(!caps.has_capture && !caps.has_null_stream && !caps.has_epoch &&
              !caps.can_check_ranges && !caps.program_mode);
        /* and a context of it is NOT_FOUND, with the reason */
        kctx_context c = 0;
        CHECK_K(kctx_context_create(names[i], &c), KCTX_NOT_FOUND);
        CHECK_CONTAINS(kctx_thread_last_error(), "not built into this library");
        CHECK_CONTAINS(kctx_thread_last_error(), names[i]);
        CHECK_EQ(c, 0);
    }
}

KT_TEST(an_unknown_platform_name_is_not_found_everywhere) {
    kctx_context c = 0;
    CHECK_K(kctx_context_create("nosuch", &c), KCTX_NOT_FOUND);
    {
        char known[256] = "known: ";
        for (size_t i = 0; i < sizeof kt_declared / sizeof kt_declared[0]; i++) {
            if (i > 0) strncat(known, ", ", sizeof known - strlen(known) - 1);
            strncat(known, kt_declared[i], sizeof known - strlen(known) - 1);
        }
        CHECK_CONTAINS(kctx_thread_last_error(), known);
    }
    CHECK_K(kctx_context_create("", &c), KCTX_NOT_FOUND);
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_K(kctx_get_platform_caps("nosuch", &caps), KCTX_NOT_FOUND);
    CHECK_CONTAINS(kctx_thread_last_error(), "nosuch");
    CHECK_K(kctx_get_platform_caps("", &caps), KCTX_NOT_FOUND);
    CHECK(caps.name == NULL); /* a refusal writes nothing */
}

KT_TEST(the_platform_caps_query_refuses_bad_arguments) {
    CHECK_K(kctx_get_platform_caps("sim", NULL), KCTX_INVALID_ARGUMENT);
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    caps.size = 0;
    CHECK_K(kctx_get_platform_caps("sim", &caps), KCTX_INVALID_ARGUMENT);
    CHECK(caps.name == NULL);
}

KT_TEST(a_null_platform_name_means_the_default_platform) {
    const char *saved = getenv("KCTX_PLATFORM");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    unsetenv("KCTX_PLATFORM");
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_OK(kctx_get_platform_caps(NULL, &caps));
    CHECK(caps.name && strcmp(caps.name, "sim") == 0);
    setenv("KCTX_PLATFORM", "cuda", 1);
    CHECK_OK(kctx_get_platform_caps(NULL, &caps));
    CHECK(caps.name && strcmp(caps.name, "cuda") == 0);
    kctx_context c = 0;
    CHECK(kctx_context_create(NULL, &c) != KCTX_OK); /* not built, or no driver here */
    CHECK_EQ(c, 0);
    if (saved)
        setenv("KCTX_PLATFORM", keep, 1);
    else
        unsetenv("KCTX_PLATFORM");
}

/* ======================================================================== */
/* the capability query by context, and "capturable here"                   */

KT_TEST(context_caps_are_the_platform_caps_and_the_strategy_in_effect) {
    kctx_platform_caps byname = KCTX_PLATFORM_CAPS_INIT;
    REQUIRE_OK(kctx_get_platform_caps("sim", &byname));
    kctx_context c = kt_create();
    REQUIRE(c);
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_OK(kctx_get_context_caps(c, &caps));
    CHECK_EQ(caps.strategy, KCTX_STRATEGY_DEFAULT); /* not latched yet */
    CHECK(memcmp(&caps, &byname, sizeof caps) == 0);
    kctx_kernel_config cfg = kt_config(0);
    REQUIRE_OK(kctx_kernel_init(c, &cfg));
    uint64_t calls = 0, calls_after = 0;
    CHECK_OK(kctx_platform_calls(c, &calls));
    CHECK_OK(kctx_get_context_caps(c, &caps));
    CHECK_OK(kctx_platform_calls(c, &calls_after));
    CHECK_EQ(calls_after, calls); /* no platform call */
    CHECK_EQ(caps.strategy, byname.default_strategy);
    caps.strategy = KCTX_STRATEGY_DEFAULT;
    CHECK(memcmp(&caps, &byname, sizeof caps) == 0);
    kt_finish(c);
}

KT_TEST(the_context_caps_query_refuses_each_listed_error) {
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_K(kctx_get_context_caps(0, &caps), KCTX_INVALID_HANDLE);
    kctx_context c = kt_create();
    REQUIRE(c);
    CHECK_K(kctx_get_context_caps(c, NULL), KCTX_INVALID_ARGUMENT);
    caps.size = 12;
    CHECK_K(kctx_get_context_caps(c, &caps), KCTX_INVALID_ARGUMENT);
    CHECK(caps.name == NULL);
    CHECK_OK(kctx_destroy(c));
    caps.size = sizeof caps;
    CHECK_K(kctx_get_context_caps(c, &caps), KCTX_INVALID_HANDLE); /* destroyed */
}

KT_TEST(a_prepared_callable_is_capturable_on_the_sim) {
    kctx_context c = kt_kernel_ctx();
    REQUIRE(c);
    kt_image noop = kt_image_noop();
    CHECK_K(kctx_capturable(c, 7), KCTX_UNKNOWN_ID);
    CHECK_CONTAINS(kctx_thread_last_error(), "id 7");
    REQUIRE_OK(kctx_prepare(c, 7, noop.bytes, noop.size));
    kt_state before = kt_state_take(c);
    uint64_t calls = 0, calls_after = 0;
    CHECK_OK(kctx_platform_calls(c, &calls));
    CHECK_OK(kctx_capturable(c, 7));
    CHECK_K(kctx_capturable(c, 8), KCTX_UNKNOWN_ID);
    CHECK_OK(kctx_platform_calls(c, &calls_after));
    CHECK_EQ(calls_after, calls); /* a question: no platform call */
    CHECK_UNCHANGED(c, before);
    kt_finish(c);
}

KT_TEST(capturable_refuses_each_listed_error) {
    CHECK_K(kctx_capturable(0, 1), KCTX_INVALID_HANDLE);
    kctx_context c = kt_create();
    REQUIRE(c);
    CHECK_K(kctx_capturable(c, 1), KCTX_INVALID_STATE); /* mode-less */
    CHECK_CONTAINS(kctx_thread_last_error(), "mode-less");
    kctx_program_config pcfg = KCTX_PROGRAM_CONFIG_INIT;
    kt_expect_lifecycle(-1, SIM_LIFECYCLE_INIT, 1);
    kt_expect_lifecycle(0, SIM_LIFECYCLE_SET_DEVICE, 1);
    REQUIRE_OK(kctx_program_init(c, &pcfg));
    kt_image noop = kt_image_noop();
    CHECK_OK(kctx_prepare(c, 1, noop.bytes, noop.size));
    CHECK_K(kctx_capturable(c, 1), KCTX_INVALID_STATE); /* program mode runs, never launches */
    CHECK_CONTAINS(kctx_thread_last_error(), "program-mode");
    kt_finish(c);
    /* UNSUPPORTED (a platform without capture) cannot be reached on this
     * build: the sim has capture, and no other platform is built. */
}

/* ======================================================================== */
/* strategies come from the platform's declaration                           */

KT_TEST(kernel_init_honours_the_declared_strategies_and_default) {
    kctx_platform_caps sim = KCTX_PLATFORM_CAPS_INIT;
    REQUIRE_OK(kctx_get_platform_caps("sim", &sim));
    const char *saved = getenv("KCTX_STRATEGY");
    char keep[32] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    unsetenv("KCTX_STRATEGY");
    for (uint32_t s = KCTX_STRATEGY_DEFAULT; s <= KCTX_STRATEGY_HOST_ORDERED; s++) {
        kctx_context c = kt_create();
        if (!c) break;
        kctx_kernel_config cfg = kt_config(0);
        cfg.strategy = s;
        uint32_t want = s == KCTX_STRATEGY_DEFAULT ? sim.default_strategy : s;
        if (sim.strategies & KCTX_STRATEGY_BIT(want)) {
            if (CHECK_OK(kctx_kernel_init(c, &cfg))) {
                kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
                CHECK_OK(kctx_get_context_caps(c, &caps));
                CHECK_EQ(caps.strategy, want);
            }
            kt_finish(c);
        } else {
            /* a strategy the platform does not declare: UNSUPPORTED naming
             * the platform, before the latch */
            CHECK_K(kctx_kernel_init(c, &cfg), KCTX_UNSUPPORTED);
            CHECK_CONTAINS(kctx_thread_last_error(), "platform sim does not offer");
            CHECK_MODE(c, KCTX_MODE_NONE);
            CHECK_OK(kctx_destroy(c));
        }
    }
    /* not a strategy at all: INVALID_ARGUMENT */
    kctx_context c = kt_create();
    if (c) {
        kctx_kernel_config cfg = kt_config(0);
        cfg.strategy = 7;
        CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_ARGUMENT);
        setenv("KCTX_STRATEGY", "sideways", 1);
        cfg.strategy = KCTX_STRATEGY_DEFAULT;
        CHECK_K(kctx_kernel_init(c, &cfg), KCTX_INVALID_ARGUMENT);
        CHECK_CONTAINS(kctx_thread_last_error(), "sideways");
        CHECK_MODE(c, KCTX_MODE_NONE);
        CHECK_OK(kctx_destroy(c));
    }
    if (saved)
        setenv("KCTX_STRATEGY", keep, 1);
    else
        unsetenv("KCTX_STRATEGY");
}

/* ======================================================================== */
/* admission of a platform's versioned tables (src/platforms/admit.c)       */

static void stub_fn(void) {}

/* A platform made here: every op slot holds a (never called) function
 * pointer; capabilities like the sim's. */
typedef struct fake_platform {
    kctx_platform_ops ops;
    kctx_platform_lifecycle_ops lifecycle;
    kctx_platform_desc desc;
    kctx_platform_entry entry;
} fake_platform;

static void fill_slots(void *table, size_t from, size_t to) {
    void (*fp)(void) = stub_fn;
    for (size_t off = from; off + sizeof fp <= to; off += sizeof fp)
        memcpy((char *)table + off, &fp, sizeof fp);
}

static void fake_init(fake_platform *f) {
    memset(f, 0, sizeof *f);
    f->ops.size = sizeof f->ops;
    f->ops.version = KCTX_PLATFORM_VERSION;
    fill_slots(&f->ops, offsetof(kctx_platform_ops, classify), sizeof f->ops);
    f->lifecycle.size = sizeof f->lifecycle;
    f->lifecycle.version = KCTX_PLATFORM_VERSION;
    fill_slots(&f->lifecycle, offsetof(kctx_platform_lifecycle_ops, init), sizeof f->lifecycle);
    f->desc = (kctx_platform_desc){
        .size = sizeof(kctx_platform_desc),
        .version = KCTX_PLATFORM_VERSION,
        .name = "fake",
        .ops = &f->ops,
        .strategies = KCTX_STRATEGY_BIT(KCTX_STRATEGY_RESIDENT),
        .default_strategy = KCTX_STRATEGY_RESIDENT,
        .max_params_size = 4096,
        .has_capture = 1,
        .has_epoch = 1,
        .can_check_ranges = 1,
    };
    f->entry = (kctx_platform_entry){
        .size = sizeof(kctx_platform_entry),
        .version = KCTX_PLATFORM_VERSION,
        .name = "fake",
        .desc = &f->desc,
        .lifecycle = &f->lifecycle,
    };
}

/* Admit; on a refusal, `why` must contain `needle` (NULL: must admit). */
static int admit_(const fake_platform *f, kctx__admitted *out, const char *needle, const char *file,
                  int line) {
    char why[256] = "";
    int rc = kctx__platform_admit(&f->entry, out, why, sizeof why);
    int ok = needle ? rc != 0 && strstr(why, needle) != NULL : rc == 0;
    if (ok) return ktc_held();
    return ktc_fail(file, line, needle ? "REFUSES" : "ADMITS", needle ? needle : "admitted",
                    "rc %d, why '%s' (expected %s%s)", rc, why,
                    needle ? "a refusal naming " : "admission", needle ? needle : "");
}
#define ADMITS(f, out) admit_((f), (out), NULL, __FILE__, __LINE__)
#define REFUSES(f, needle)                                \
    do {                                                  \
        kctx__admitted out_;                              \
        admit_((f), &out_, (needle), __FILE__, __LINE__); \
    } while (0)

KT_TEST(admission_takes_a_full_table_and_keeps_the_lifecycle_apart) {
    static fake_platform f;
    static kctx__admitted a;
    fake_init(&f);
    REQUIRE(ADMITS(&f, &a));
    CHECK(a.desc.ops == &a.ops); /* the admitted copy, not the platform's */
    CHECK(a.has_lifecycle);
    CHECK(a.ops.bound_device != NULL && a.ops.mem_range_check != NULL &&
          a.ops.mem_free_counter != NULL);
    f.entry.lifecycle = NULL; /* no program mode */
    REQUIRE(ADMITS(&f, &a));
    CHECK(!a.has_lifecycle);
}

KT_TEST(admission_loads_an_ops_table_from_an_older_header) {
    /* A platform built before bound_device was added passes a smaller
     * table; whatever lies beyond it is not read: the op is NULL. */
    static fake_platform f;
    static kctx__admitted a;
    fake_init(&f);
    f.ops.size = offsetof(kctx_platform_ops, bound_device);
    REQUIRE(ADMITS(&f, &a));
    CHECK(a.ops.bound_device == NULL);
    CHECK(a.ops.current_device != NULL);
    CHECK_EQ(a.ops.size, sizeof(kctx_platform_ops)); /* the core sees a full table */
    /* The smallest table: only the required ops. Its platform must still
     * name the caller's device... */
    f.ops.size = KCTX_PLATFORM_OPS_MIN_SIZE;
    REFUSES(&f, "neither current_device nor bound_device");
    /* ...and its conditional ops are absent, so it can declare nothing
     * that needs them. */
    f.ops.size = offsetof(kctx_platform_ops, device_epoch);
    REFUSES(&f, "has_epoch but device_epoch is NULL");
    f.desc.has_epoch = 0;
    REFUSES(&f, "can_check_ranges but mem_range_check is NULL");
    f.desc.can_check_ranges = 0;
    REFUSES(&f, "resident strategy but function_address is NULL");
    f.desc.strategies = KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED);
    f.desc.default_strategy = KCTX_STRATEGY_HOST_ORDERED;
    REFUSES(&f, "has_capture but exchange_capture_mode");
    f.desc.has_capture = 0;
    REQUIRE(ADMITS(&f, &a)); /* an eager, host-ordered platform with a thread-current device */
    /* the free counter serves only the range checks: dropped with them */
    CHECK(a.ops.device_epoch == NULL && a.ops.mem_range_check == NULL &&
          a.ops.mem_free_counter == NULL && a.ops.function_address == NULL &&
          a.ops.exchange_capture_mode == NULL && a.ops.graph_attach_hook == NULL &&
          a.ops.bound_device == NULL);
}

KT_TEST(admission_ignores_the_tail_of_a_table_from_a_newer_header) {
    /* A newer header's tables are larger; what they add are offers (ops,
     * capabilities) this library does not know, so it ignores them. */
    static fake_platform f;
    static struct {
        kctx_platform_ops ops;
        void (*future_ops[4])(void);
    } ops;
    static struct {
        kctx_platform_desc desc;
        uint64_t future[2];
    } desc;
    static kctx__admitted a;
    fake_init(&f);
    ops.ops = f.ops;
    ops.ops.size = sizeof ops;
    ops.ops.version = KCTX_PLATFORM_VERSION + 1;
    for (int i = 0; i < 4; i++) ops.future_ops[i] = stub_fn;
    desc.desc = f.desc;
    desc.desc.size = sizeof desc;
    desc.desc.version = KCTX_PLATFORM_VERSION + 1;
    desc.desc.ops = &ops.ops;
    desc.future[0] = desc.future[1] = ~0ull;
    f.entry.desc = &desc.desc;
    REQUIRE(ADMITS(&f, &a));
    CHECK_EQ(a.desc.size, sizeof(kctx_platform_desc));
    CHECK_EQ(a.ops.size, sizeof(kctx_platform_ops));
    CHECK(a.desc.ops == &a.ops);
}

KT_TEST(admission_refuses_tables_older_than_this_library) {
    static fake_platform f;
    fake_init(&f);
    f.ops.size = KCTX_PLATFORM_OPS_MIN_SIZE - sizeof(void *);
    REFUSES(&f, "ops table (size");
    fake_init(&f);
    f.ops.version = 1; /* the unversioned seam before issue 12 */
    REFUSES(&f, "older than this library accepts");
    fake_init(&f);
    f.desc.size = KCTX_PLATFORM_DESC_MIN_SIZE - 8;
    REFUSES(&f, "descriptor (size");
    /* a descriptor without the optional version-2 tail is accepted, the
     * missing member NULL (the device writes trace records) */
    fake_init(&f);
    f.desc.device_trace_na = "ignored: beyond the size given";
    f.desc.size = KCTX_PLATFORM_DESC_MIN_SIZE;
    {
        kctx__admitted a;
        REQUIRE(ADMITS(&f, &a));
        CHECK(a.desc.device_trace_na == NULL);
        CHECK_EQ(a.desc.size, sizeof(kctx_platform_desc));
    }
    fake_init(&f);
    f.entry.size = 8;
    REFUSES(&f, "registration entry (size");
    fake_init(&f);
    f.lifecycle.size = sizeof f.lifecycle - sizeof(void *);
    REFUSES(&f, "lifecycle table (size");
}

KT_TEST(admission_refuses_a_null_required_op_naming_it) {
    static const char *const names[] = {
#define NAME_(n) #n,
        REQUIRED_OPS(NAME_)
#undef NAME_
    };
    static fake_platform f;
    size_t n = sizeof names / sizeof names[0];
    CHECK_EQ(offsetof(kctx_platform_ops, classify) + n * sizeof(void (*)(void)),
             KCTX_PLATFORM_OPS_MIN_SIZE);
    for (size_t i = 0; i < n; i++) {
        fake_init(&f);
        void (*null_fp)(void) = NULL;
        memcpy((char *)&f.ops + offsetof(kctx_platform_ops, classify) + i * sizeof null_fp,
               &null_fp, sizeof null_fp);
        char needle[64];
        snprintf(needle, sizeof needle, "required op %s is NULL", names[i]);
        REFUSES(&f, needle);
    }
    fake_init(&f);
    f.lifecycle.reset_device = NULL;
    REFUSES(&f, "lifecycle table has a NULL op");
}

KT_TEST(admission_refuses_declarations_that_contradict_themselves) {
    static fake_platform f;
    static kctx__admitted a;
    fake_init(&f);
    f.desc.strategies = 0;
    REFUSES(&f, "strategies 0x0");
    fake_init(&f);
    f.desc.strategies |= 1u << 7;
    REFUSES(&f, "strategies 0x82");
    fake_init(&f);
    f.desc.default_strategy = KCTX_STRATEGY_HOST_ORDERED; /* offers RESIDENT only */
    REFUSES(&f, "default strategy 2 is not one it offers");
    fake_init(&f);
    f.desc.default_strategy = 40;
    REFUSES(&f, "default strategy 40");
    fake_init(&f);
    f.desc.max_params_size = 0;
    REFUSES(&f, "parameter-block limit of 0");
    fake_init(&f);
    f.desc.name = "other";
    REFUSES(&f, "names 'other', not 'fake'");
    fake_init(&f);
    f.entry.desc = NULL;
    REFUSES(&f, "descriptor is NULL");
    /* an op offered for a capability that is not declared is not used */
    fake_init(&f);
    f.desc.has_capture = 0;
    f.desc.has_epoch = 0;
    f.desc.can_check_ranges = 0;
    REQUIRE(ADMITS(&f, &a));
    CHECK(a.ops.exchange_capture_mode == NULL && a.ops.graph_attach_hook == NULL);
    CHECK(a.ops.device_epoch == NULL && a.ops.mem_range_check == NULL);
}
