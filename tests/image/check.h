/*
 * check.h — the image tests' tiny runner (the trace tests use it too).
 *
 *   static void test_truncation_is_rejected(void) { CHECK(x == y); ... }
 *   int main(void) { RUN(test_truncation_is_rejected); return check_summary(); }
 *
 * The checks are src/check/kctx_test_check.h's (CHECK, CHECK_EQ,
 * REQUIRE, ...). RUN runs one test; a test fails when any check failed
 * while it ran. SKIP(...) marks the running test skipped
 * (it could not run here; the reason is printed), and the test returns: a
 * skipped test is never counted as passed. check_summary() prints "N
 * passed, M failed[, K skipped]" as the last line and returns the exit
 * status of tests/common (1 on any failure, else 77 when a test was
 * skipped, which ctest's SKIP_RETURN_CODE reports as SKIPPED, else 0).
 *
 * check_select(argc, argv) before the RUNs lets the command line choose:
 * "NAME..." runs only the tests named, "--except NAME" (repeatable) runs
 * all but those; a name that matches no RUN is an error in check_summary.
 * Single-threaded by design: the image code has no threads.
 */
#ifndef KCTX_TESTS_IMAGE_CHECK_H
#define KCTX_TESTS_IMAGE_CHECK_H

#include "kctx_test_check.h"
#include "kctx_test_common.h"

#include <stdio.h>
#include <string.h>

#define RUN_MAX_SELECTED 32

static int check_test_skipped; /* the running test called SKIP */
static unsigned check_tests_passed, check_tests_failed, check_tests_skipped;
static const char *check_selected[RUN_MAX_SELECTED];
static int check_selected_hits[RUN_MAX_SELECTED];
static int check_nselected, check_except;

/* Reads the selection from the command line. Returns 0, or 1 after
 * printing a usage error (names and --except mixed, too many names). */
static inline int check_select(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        int except = strcmp(argv[i], "--except") == 0;
        if (except) i++;
        if (i >= argc || (check_nselected > 0 && except != check_except) ||
            check_nselected == RUN_MAX_SELECTED) {
            fprintf(stderr, "usage: %s [NAME... | --except NAME...]\n", argv[0]);
            return 1;
        }
        check_except = except;
        check_selected[check_nselected++] = argv[i];
    }
    return 0;
}

/* Whether RUN should run `name` (and notes that the selection matched). */
static inline int check_wanted(const char *name) {
    int hit = 0;
    for (int i = 0; i < check_nselected; i++)
        if (strcmp(check_selected[i], name) == 0) {
            check_selected_hits[i] = 1;
            hit = 1;
        }
    return check_nselected == 0 || (check_except ? !hit : hit);
}

/* Marks the running test skipped with a printf-style reason; return next. */
#define SKIP(...)                 \
    do {                          \
        printf("     skipped: "); \
        printf(__VA_ARGS__);      \
        printf("\n");             \
        check_test_skipped = 1;   \
    } while (0)

#define RUN(test)                                                               \
    do {                                                                        \
        if (!check_wanted(#test)) break;                                        \
        ktc_test_begin();                                                       \
        check_test_skipped = 0;                                                 \
        test();                                                                 \
        if (ktc_test_failures() != 0) {                                         \
            check_tests_failed++;                                               \
            printf("FAIL %s (%u failed checks)\n", #test, ktc_test_failures()); \
        } else if (check_test_skipped) {                                        \
            check_tests_skipped++;                                              \
            printf("SKIP %s\n", #test);                                         \
        } else {                                                                \
            check_tests_passed++;                                               \
            printf("ok   %s\n", #test);                                         \
        }                                                                       \
        fflush(stdout);                                                         \
    } while (0)

static inline int check_summary(void) {
    for (int i = 0; i < check_nselected; i++)
        if (!check_selected_hits[i]) {
            printf("FAIL no test named %s\n", check_selected[i]);
            check_tests_failed++;
        }
    return ktc_summary(stdout, check_tests_passed, check_tests_failed, check_tests_skipped);
}

#endif /* KCTX_TESTS_IMAGE_CHECK_H */
