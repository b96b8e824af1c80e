/*
 * kt.h — the kernel-context tests' harness.
 *
 *   KT_TEST(second_kernel_init_on_a_device_is_busy) {   // K6
 *       kctx_context a = kt_kernel_ctx();
 *       ...
 *       CHECK_K(kctx_kernel_init(b, &cfg), KCTX_BUSY);
 *       kt_finish(a);
 *   }
 *
 * Each test executable runs all its tests, or those named on its command
 * line (`--list` prints them), and prints "N passed, M failed" last, with
 * ", K skipped" when a test could not run here (KT_SKIP, REQUIRE_DEVICES).
 * Exit status (tests/common/kctx_test_common.h): 1 on any failure, else 77
 * when a test was skipped (ctest's SKIP_RETURN_CODE: SKIPPED, never
 * passed), else 0.
 *
 * Around every test the harness proves clean teardown, so that a test only
 * has to end with its contexts closed and destroyed:
 *  - the sim's live objects (streams, events, modules, graphs, executable
 *    graphs, pending hooks) and live allocations of every device are back
 *    to what they were before the test;
 *  - every context the test created through kt_create() is destroyed;
 *  - no claim is left behind: a fresh kernel context can be initialised
 *    (and closed) on every device;
 *  - K4, for every test: the sim's lifecycle counters moved by exactly the
 *    lifecycle calls the test made itself, as the framework that owns the
 *    device (kt_set_device, kt_owner_reset, kt_expect_lifecycle). kctx's
 *    kernel mode makes none, on any path.
 * A skipped test gets the same proof: what it made before it skipped must
 * be gone, or it fails.
 * After a failed test the harness releases holds, clears faults, resets
 * every device and closes what the test left, so later tests start clean.
 *
 * The checks are src/check/kctx_test_check.h's (CHECK, CHECK_EQ,
 * CHECK_K, CHECK_OK, CHECK_SIM_OK, REQUIRE..., thread-safe: helper threads
 * may use them), with the context's own below (CHECK_PHASE, CHECK_SNAP,
 * CHECK_UNCHANGED, CHECK_REFUSED); a test fails when any failed while it
 * ran (the teardown proof's findings included).
 */
#ifndef KCTX_TESTS_KCTX_KT_H
#define KCTX_TESTS_KCTX_KT_H

#include <kctx/image.h>
#include <kctx/kctx.h>
#include <kctx/sim.h>

#include "kctx_test_check.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* ---- registration ---------------------------------------------------------- */
typedef void (*kt_test_fn)(void);
void kt_register(const char *name, kt_test_fn fn);

#define KT_TEST(name)                                                   \
    static void name(void);                                             \
    __attribute__((constructor)) static void kt_register_##name(void) { \
        kt_register(#name, name);                                       \
    }                                                                   \
    static void name(void)

/* ---- checks ---------------------------------------------------------------- */
/* The checks are src/check/kctx_test_check.h's; these are the context's
 * own, built on it (1 when the check held). */
int kt_check_phase(kctx_context ctx, kctx_phase want, const char *ectx, const char *file, int line);
int kt_check_mode(kctx_context ctx, kctx_mode want, const char *ectx, const char *file, int line);
#define CHECK_PHASE(ctx, want) kt_check_phase((ctx), (want), #ctx, __FILE__, __LINE__)
#define CHECK_MODE(ctx, want) kt_check_mode((ctx), (want), #ctx, __FILE__, __LINE__)

/* ---- tests that cannot run here ---------------------------------------------- */
/* Marks the running test skipped, printing the reason; the test should
 * return at once (KT_SKIP does). A skipped test is never counted as passed;
 * one that also failed a check (its own, or the teardown proof's) is
 * counted as failed. */
void kt_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define KT_SKIP(...)          \
    do {                      \
        kt_skip(__VA_ARGS__); \
        return;               \
    } while (0)
/* Skips (and returns from) the test unless the sim has at least n devices
 * (KCTX_SIM_DEVICES, 2 by default). */
#define REQUIRE_DEVICES(n)                                                      \
    do {                                                                        \
        if (kt_device_count() < (n))                                            \
            KT_SKIP("needs %d devices, the sim has %d (KCTX_SIM_DEVICES)", (n), \
                    kt_device_count());                                         \
    } while (0)

/* ---- contexts ---------------------------------------------------------------- */
/* A mode-less context on the default platform, tracked by the harness
 * (which fails the test if it is still alive at the end). 0 on failure. */
kctx_context kt_create(void);
/* The default kernel config, with the given prepare timeout (0: default). */
kctx_kernel_config kt_config(uint32_t prepare_timeout_ms);
/* kt_create + kernel init with the default config on the calling thread's
 * current device; 0 (and a failed check) on failure. */
kctx_context kt_kernel_ctx(void);
/* The two strategies, for tests that run under each (section 0b). */
extern const kctx_strategy kt_strategies[2];
/* An eager launch of `id` (no arguments) on a stream of its own, synced:
 * launch, check and the device status all OK ("it still launches"). */
void kt_check_launches(kctx_context ctx, uint64_t id);
/* Close (must be OK) and destroy (must be OK). */
void kt_finish(kctx_context ctx);
kctx_phase kt_phase(kctx_context ctx);
kctx_resource_info kt_resources(kctx_context ctx);
/* The context's AICPU stream (0 unless READY-ish). */
sim_stream kt_aicpu_stream(kctx_context ctx);
/* The status held in the runtime / teardown slot (KCTX_OK when empty). */
kctx_status kt_runtime_error(kctx_context ctx);
kctx_status kt_teardown_error(kctx_context ctx);

/* ---- the device, as its owner ------------------------------------------------- */
/* Lifecycle calls the test makes as the framework that owns the device;
 * the harness expects exactly these on the lifecycle counters (K4). */
void kt_set_device(int device);
void kt_owner_reset(void); /* sim_device_reset of the calling thread's current device */
void kt_expect_lifecycle(int device, sim_lifecycle_op op, uint64_t n); /* device -1: every device */
/* After sim_lifecycle_reset_counts(): start the accounting afresh. */
void kt_lifecycle_rebaseline(void);
int kt_device_count(void);
/* The calling thread's capture mode (read by exchanging it twice). */
sim_capture_mode kt_capture_mode(void);

/* Live objects and allocations of a device. */
typedef struct kt_snap {
    sim_object_counts o;
    uint64_t live_count, live_bytes;
} kt_snap;
kt_snap kt_snap_take(int device);
int kt_check_snap(const kt_snap *want, const kt_snap *got, const char *what, const char *file,
                  int line);
#define CHECK_SNAP(want, got) kt_check_snap(&(want), &(got), #got, __FILE__, __LINE__)
/* Shorthand: the device's state now equals `want`. */
#define CHECK_DEVICE_AT(device, want)                                            \
    do {                                                                         \
        kt_snap kt_now_ = kt_snap_take(device);                                  \
        kt_check_snap(&(want), &kt_now_, "device " #device, __FILE__, __LINE__); \
    } while (0)

/* Everything an entry could change: for "a refusal changes nothing" (K9).
 * `destructive` sums the calling thread's sim calls that create, release,
 * allocate or enqueue (queries and capture-mode exchanges excluded). */
typedef struct kt_state {
    kctx_phase phase;
    kctx_mode mode;
    int device;
    kctx_resource_info res;
    kctx_status runtime, teardown;
    kt_snap dev;
    uint64_t destructive;
} kt_state;
kt_state kt_state_take(kctx_context ctx);
int kt_check_state(const kt_state *want, const kt_state *got, const char *file, int line);
/* The context's state equals `want` (taken with kt_state_take). */
#define CHECK_UNCHANGED(ctx, want)                             \
    do {                                                       \
        kt_state kt_now_ = kt_state_take(ctx);                 \
        kt_check_state(&(want), &kt_now_, __FILE__, __LINE__); \
    } while (0)
/* A refusal: `call` returns `want` and the context's state is unchanged
 * (K9). */
#define CHECK_REFUSED(ctx, call, want)            \
    do {                                          \
        kt_state kt_before_ = kt_state_take(ctx); \
        CHECK_K(call, want);                      \
        CHECK_UNCHANGED(ctx, kt_before_);         \
    } while (0)
uint64_t kt_destructive_calls(void);
/* The calling thread's release calls (stream, event, module, memory). */
uint64_t kt_release_calls(void);

/* ---- images and kernels --------------------------------------------------------- */
typedef struct kt_image {
    const void *bytes;
    size_t size;
} kt_image;
/* Callable images, built once per process with the kctx_image builder:
 *  - noop:   one child "noop" (entry t_noop, a task kernel of the sim test
 *            kernels module, its SIM_ELF variant), no parameters, one task;
 *  - append: one tensor parameter "log", child "append" (entry t_append,
 *            one TENSOR child parameter bound to it), one task;
 *  - opencl: like noop but its only variant is OpenCL C source. */
kt_image kt_image_noop(void);
kt_image kt_image_append(void);
kt_image kt_image_opencl(void);
/* kt_kernel_ctx with `img` prepared under `id`; 0 (and a failed check, the
 * context closed and destroyed) on failure. */
kctx_context kt_prepared_ctx(kt_image img, uint64_t id);
/* kt_kernel_ctx under `strategy`, with `img` prepared under `id` when img
 * has bytes; 0 (and a failed check, the context finished) on failure. */
kctx_context kt_strategy_ctx(kctx_strategy strategy, kt_image img, uint64_t id);
/* A malloc'd copy (free with free()). */
void *kt_image_dup(kt_image img);
/* The sim test kernels module file's bytes (cached). */
kt_image kt_test_kernels_module(void);
/* Load the test kernels module on the current device and look up `entry`. */
sim_status kt_load_kernel(const char *entry, sim_module *module, sim_function *fn);

/* ---- files --------------------------------------------------------------------------- */
/* A whole file as a NUL-terminated string in malloc'd memory (free() it);
 * NULL when it cannot be read, with the reason on stderr (no failed check:
 * the caller decides, e.g. REQUIRE(text != NULL)). ktc_read_file of
 * tests/common. */
char *kt_read_text(const char *path);
/* Non-overlapping occurrences of `needle` in `hay` (0 when either is NULL
 * or needle is empty). */
unsigned kt_count(const char *hay, const char *needle);

/* ---- threads ---------------------------------------------------------------------- */
/* Run fn(arg) on `n` threads released together (a barrier); join them. */
void kt_run_threads(int n, void *(*fn)(void *), void *const *args);

/* ---- sim call counting ----------------------------------------------------------- */
/* Calls of `op` made by the calling thread so far (sim_thread_calls).
 * kt_calls(SIM_OP_ANY) counts every entry the sim served, its queries of
 * the current device, a device epoch and a free counter included (K28's
 * ruler: "no platform call at all"). */
static inline uint64_t kt_calls(sim_op op) { return sim_thread_calls((int)op); }
/* The calling thread's calls but those three queries, which the sim never
 * fails and which change nothing: the calls a SIM_OP_ANY fault counts (a
 * fault sweep's length), and what "no call but reading the device's state"
 * leaves at zero (K36's abandoning close reads the epoch, nothing else). */
static inline uint64_t kt_injectable_calls(void) {
    return kt_calls(SIM_OP_ANY) - kt_calls(SIM_OP_GET_DEVICE) - kt_calls(SIM_OP_DEVICE_EPOCH) -
           kt_calls(SIM_OP_MEM_FREE_COUNTER);
}

/* Arm one fault for the calling thread's calls only. */
int kt_fault(sim_op op, uint64_t nth, int persistent);

#endif
