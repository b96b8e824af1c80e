/*
 * harness.h — the sim tests' tiny harness.
 *
 *   TEST(stream_runs_operations_in_order) { ... CHECK_SIM(sim_..., SIM_OK); }
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
 * The checks are src/check/kctx_test_check.h's (CHECK, CHECK_EQ,
 * CHECK_SIM, CHECK_SIM_OK, REQUIRE...): thread-safe, so helper threads and
 * host functions may use them; a test fails when any of them failed while
 * it ran.
 */
#ifndef KCTX_TESTS_SIM_HARNESS_H
#define KCTX_TESTS_SIM_HARNESS_H

#include <kctx/sim.h>

#include "kctx_test_check.h"

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
