/*
 * harness.h — the sim tests' tiny harness.
 *
 *   TEST(stream_runs_operations_in_order) { ... CHECK_STATUS(sim_..., SIM_OK); }
 *
 * Each test executable runs all its tests, or the one named on the command
 * line, and prints "N passed, M failed" as its final line (", K skipped"
 * when a test could not run here). Exit status (tests/common): 1 on any
 * failure, else 77 when a test was skipped (ctest: SKIPPED), else 0. Around every test the harness proves clean teardown: the
 * object counts (sim_object_counts_get) and live allocations (sim_mem_stats)
 * of every device must be back to what they were when the test started.
 * After a failed test the harness resets every device so that later tests
 * start clean.
 *
 * CHECK* macros record a failure (file:line, the expression, the values and,
 * for statuses, the status name and sim_last_error_message()) and evaluate
 * to 1 when the check held; REQUIRE* return from the test when it did not.
 * Checks are thread-safe: helper threads and host functions may use them.
 */
#ifndef KCTX_TESTS_SIM_HARNESS_H
#define KCTX_TESTS_SIM_HARNESS_H

#include <kctx/sim.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*harness_test_fn)(void);
void harness_register(const char *name, harness_test_fn fn);

#define TEST(name)                                                           \
    static void name(void);                                                  \
    __attribute__((constructor)) static void harness_register_##name(void) { \
        harness_register(#name, name);                                       \
    }                                                                        \
    static void name(void)

int harness_check(int ok, const char *expr, const char *file, int line);
int harness_check_eq(uint64_t a, uint64_t b, const char *ea, const char *eb, const char *file,
                     int line);
int harness_check_status(sim_status got, sim_status want, const char *expr, const char *file,
                         int line);
/* Checks that `got` is one of two acceptable statuses (where the contract
 * leaves the choice open). */
int harness_check_status2(sim_status got, sim_status want1, sim_status want2, const char *expr,
                          const char *file, int line);

#define CHECK(cond) harness_check(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_EQ(a, b) harness_check_eq((uint64_t)(a), (uint64_t)(b), #a, #b, __FILE__, __LINE__)
#define CHECK_STATUS(expr, want) harness_check_status((expr), (want), #expr, __FILE__, __LINE__)
#define CHECK_STATUS2(expr, w1, w2) \
    harness_check_status2((expr), (w1), (w2), #expr, __FILE__, __LINE__)
#define CHECK_OK(expr) CHECK_STATUS(expr, SIM_OK)

#define REQUIRE(cond)             \
    do {                          \
        if (!CHECK(cond)) return; \
    } while (0)
#define REQUIRE_EQ(a, b)             \
    do {                             \
        if (!CHECK_EQ(a, b)) return; \
    } while (0)
#define REQUIRE_STATUS(expr, want)             \
    do {                                       \
        if (!CHECK_STATUS(expr, want)) return; \
    } while (0)
#define REQUIRE_OK(expr) REQUIRE_STATUS(expr, SIM_OK)

/* Number of devices of the sim (queried once). */
int harness_device_count(void);

/* ---- tests that cannot run here ------------------------------------------ */
/* Marks the running test skipped, with the reason printed; the test should
 * return at once. A skipped test is never counted as passed. */
void harness_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Skips (and returns from) the test unless the sim has at least n devices
 * (KCTX_SIM_DEVICES, default 2). */
#define REQUIRE_DEVICES(n)                                                           \
    do {                                                                             \
        if (harness_device_count() < (n)) {                                          \
            harness_skip("needs %d devices, the sim has %d (KCTX_SIM_DEVICES)", (n), \
                         harness_device_count());                                    \
            return;                                                                  \
        }                                                                            \
    } while (0)

/* ---- synchronisation without sleeping ---------------------------------- */
/* A counter a sim thread (host function, graph hook) raises and a test
 * waits for with a bounded wait: for work that completes asynchronously and
 * has no sim handle to synchronise on (graph hooks). */
typedef struct harness_flag {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;
} harness_flag;
void harness_flag_init(harness_flag *f);
void harness_flag_destroy(harness_flag *f);
void harness_flag_raise(harness_flag *f);
int harness_flag_count(harness_flag *f);
/* 1 when count >= at_least within timeout_ms, else 0. */
int harness_flag_wait(harness_flag *f, int at_least, unsigned timeout_ms);

/* Run fn(arg) on a new thread and join it. */
void harness_run_in_thread(void *(*fn)(void *), void *arg);

/* ---- files and modules --------------------------------------------------- */
/* Read a whole file into malloc'ed memory (NULL on failure, reported as a
 * failed check); ktc_read_file of tests/common. */
void *harness_read_file(const char *path, size_t *size);
/* Load a module file's bytes with sim_module_load (current device); the
 * bytes are scribbled over and freed before returning, so the sim must not
 * retain them (ktc_sim_module_load_file of tests/common). */
sim_status harness_module_load_file(sim_module *module, const char *path);

#endif
