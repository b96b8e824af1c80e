/*
 * harness.c — registration, the per-test clean-teardown baseline and
 * main() of every sim test executable.
 */
#include "harness.h"

#include "kctx_test_common.h"
#include "kctx_test_sim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HARNESS_MAX_TESTS 256
#define HARNESS_MAX_DEVICES 64

typedef struct harness_test {
    const char *name;
    harness_test_fn fn;
} harness_test;

static harness_test g_tests[HARNESS_MAX_TESTS];
static int g_ntests;
static atomic_int g_skipped; /* the running test called harness_skip */

void harness_register(const char *name, harness_test_fn fn) {
    if (g_ntests == HARNESS_MAX_TESTS) {
        fprintf(stderr, "harness: too many tests (raise HARNESS_MAX_TESTS)\n");
        abort();
    }
    g_tests[g_ntests].name = name;
    g_tests[g_ntests].fn = fn;
    g_ntests++;
}

int harness_device_count(void) {
    static int count;
    if (!count && sim_device_count(&count) != SIM_OK) {
        fprintf(stderr, "harness: sim_device_count failed: %s\n", sim_last_error_message());
        abort();
    }
    return count;
}

/* ---- flags and threads ----------------------------------------------------- */

void harness_flag_init(harness_flag *f) {
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->count = 0;
}

void harness_flag_destroy(harness_flag *f) {
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
}

void harness_flag_raise(harness_flag *f) {
    pthread_mutex_lock(&f->mu);
    f->count++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

int harness_flag_count(harness_flag *f) {
    pthread_mutex_lock(&f->mu);
    int c = f->count;
    pthread_mutex_unlock(&f->mu);
    return c;
}

int harness_flag_wait(harness_flag *f, int at_least, unsigned timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->mu);
    int rc = 0;
    while (f->count < at_least && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&f->cv, &f->mu, &deadline);
    int ok = f->count >= at_least;
    pthread_mutex_unlock(&f->mu);
    return ok;
}

void harness_run_in_thread(void *(*fn)(void *), void *arg) {
    pthread_t t;
    if (pthread_create(&t, NULL, fn, arg) != 0) {
        FAIL("pthread_create failed");
        return;
    }
    pthread_join(t, NULL);
}

/* ---- files and modules ------------------------------------------------------ */

void *harness_read_file(const char *path, size_t *size) {
    char why[512];
    void *bytes = ktc_read_file(path, size, why, sizeof why);
    if (!bytes) ktc_fail(NULL, 0, NULL, NULL, "harness: %s", why);
    return bytes;
}

sim_status harness_module_load_file(sim_module *module, const char *path) {
    char why[512] = "";
    sim_status st = SIM_INVALID_VALUE;
    /* An unreadable file is the harness's failure; a refused module is the
     * caller's to check (some tests expect the refusal). */
    if (ktc_sim_module_load_file(module, path, &st, why, sizeof why) != 0)
        ktc_fail(NULL, 0, NULL, NULL, "harness: %s", why);
    return st;
}

void harness_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "skipped: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_store(&g_skipped, 1);
}

/* ---- the clean-teardown baseline -------------------------------------------- */

typedef struct device_baseline {
    sim_object_counts objects;
    uint64_t live_count, live_bytes;
} device_baseline;

/* 0 (a failure recorded) when the counters cannot be read. */
static int take_baseline(device_baseline *b, int ndev) {
    for (int d = 0; d < ndev; d++) {
        sim_object_counts c = SIM_OBJECT_COUNTS_INIT;
        if (sim_object_counts_get(d, &c) != SIM_OK ||
            sim_mem_stats(d, &b[d].live_count, &b[d].live_bytes) != SIM_OK)
            return ktc_fail(NULL, 0, NULL, NULL, "harness: cannot read device %d counters: %s", d,
                            sim_last_error_message());
        b[d].objects = c;
    }
    return 1;
}

static void compare_field(int d, const char *what, uint64_t before, uint64_t after) {
    if (before == after) return;
    ktc_fail(NULL, 0, NULL, NULL,
             "teardown: device %d %s: %llu at start, %llu at end (leak or over-release)", d, what,
             (unsigned long long)before, (unsigned long long)after);
}

static void check_baseline(const device_baseline *before, int ndev) {
    device_baseline after[HARNESS_MAX_DEVICES];
    if (!take_baseline(after, ndev)) return;
    for (int d = 0; d < ndev; d++) {
        compare_field(d, "streams", before[d].objects.streams, after[d].objects.streams);
        compare_field(d, "events", before[d].objects.events, after[d].objects.events);
        compare_field(d, "modules", before[d].objects.modules, after[d].objects.modules);
        compare_field(d, "graphs", before[d].objects.graphs, after[d].objects.graphs);
        compare_field(d, "graph execs", before[d].objects.graph_execs,
                      after[d].objects.graph_execs);
        compare_field(d, "pending graph hooks", before[d].objects.hooks_pending,
                      after[d].objects.hooks_pending);
        compare_field(d, "live allocations", before[d].live_count, after[d].live_count);
        compare_field(d, "live bytes", before[d].live_bytes, after[d].live_bytes);
    }
}

/* Undo what a test may have left armed or changed on this thread. */
static void restore_test_state(void) {
    sim_hold_release_all();
    sim_fault_clear_all();
    sim_exec_fail_clear_all();
    sim_capture_mode mode = SIM_CAPTURE_MODE_GLOBAL;
    sim_thread_exchange_capture_mode(&mode);
    int dev = -1;
    if (sim_get_device(&dev) != SIM_OK || dev != 0) sim_set_device(0);
}

/* After a failure: reset every device so that the next test starts clean. */
static void recover(int ndev) {
    sim_hold_release_all();
    sim_fault_clear_all();
    sim_exec_fail_clear_all();
    for (int d = 0; d < ndev; d++) {
        if (sim_set_device(d) == SIM_OK) sim_device_reset();
    }
    sim_set_device(0);
}

enum {
    RUN_PASSED,
    RUN_FAILED,
    RUN_SKIPPED
};

static int run_one(const harness_test *t, int ndev) {
    device_baseline before[HARNESS_MAX_DEVICES];
    printf("[ RUN  ] %s\n", t->name);
    fflush(stdout);
    ktc_test_begin();
    atomic_store(&g_skipped, 0);
    restore_test_state();
    if (take_baseline(before, ndev)) {
        t->fn();
        restore_test_state();
        check_baseline(before, ndev);
    }
    int result = ktc_test_failures() != 0  ? RUN_FAILED
                 : atomic_load(&g_skipped) ? RUN_SKIPPED
                                           : RUN_PASSED;
    static const char *const words[] = {" OK ", "FAIL", "SKIP"};
    fflush(stderr);
    printf("[ %s ] %s\n", words[result], t->name);
    fflush(stdout);
    if (result == RUN_FAILED) recover(ndev);
    return result;
}

int main(int argc, char **argv) {
    int ndev = harness_device_count();
    if (ndev > HARNESS_MAX_DEVICES) ndev = HARNESS_MAX_DEVICES;
    unsigned passed = 0, nfailed = 0, skipped = 0;
    int matched = 0;
    for (int i = 0; i < g_ntests; i++) {
        if (argc > 1 && strcmp(argv[1], g_tests[i].name) != 0) continue;
        matched++;
        switch (run_one(&g_tests[i], ndev)) {
        case RUN_PASSED:
            passed++;
            break;
        case RUN_SKIPPED:
            skipped++;
            break;
        default:
            nfailed++;
        }
    }
    if (argc > 1 && matched == 0) {
        fprintf(stderr, "no test named %s; tests are:\n", argv[1]);
        for (int i = 0; i < g_ntests; i++) fprintf(stderr, "  %s\n", g_tests[i].name);
        nfailed++;
    }
    return ktc_summary(stdout, passed, nfailed, skipped);
}
