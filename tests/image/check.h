/*
 * check.h — the image tests' tiny harness.
 *
 *   static void test_truncation_is_rejected(void) { CHECK(x == y); ... }
 *   int main(void) { RUN(test_truncation_is_rejected); return check_summary(); }
 *
 * CHECK records a failure with file:line and the expression (the first
 * CHECK_MAX_REPORTS failures of a test are printed; the rest only counted)
 * and evaluates to whether the check held. RUN runs one test; a test fails
 * when any of its checks failed. check_summary() prints "N passed, M
 * failed" as the last line and returns the exit status (1 on any failure).
 * Single-threaded by design: the image code has no threads.
 */
#ifndef KCTX_TESTS_IMAGE_CHECK_H
#define KCTX_TESTS_IMAGE_CHECK_H

#include <stdio.h>

#define CHECK_MAX_REPORTS 20

static int check_test_failures; /* failed checks in the running test */
static int check_tests_passed, check_tests_failed;

static inline int check_record(int ok, const char *expr, const char *file, int line) {
    if (!ok) {
        if (check_test_failures < CHECK_MAX_REPORTS)
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, expr);
        check_test_failures++;
    }
    return ok;
}

#define CHECK(cond) check_record(!!(cond), #cond, __FILE__, __LINE__)
/* CHECK with a printf-style note printed on failure. */
#define CHECK_MSG(cond, ...)                                                                     \
    (check_record(!!(cond), #cond, __FILE__, __LINE__)                                           \
         ? 1                                                                                     \
         : (check_test_failures <= CHECK_MAX_REPORTS                                             \
                ? (fprintf(stderr, "    "), fprintf(stderr, __VA_ARGS__), fprintf(stderr, "\n"), \
                   0)                                                                            \
                : 0))
#define REQUIRE(cond)             \
    do {                          \
        if (!CHECK(cond)) return; \
    } while (0)

#define RUN(test)                                                               \
    do {                                                                        \
        check_test_failures = 0;                                                \
        test();                                                                 \
        if (check_test_failures == 0) {                                         \
            check_tests_passed++;                                               \
            printf("ok   %s\n", #test);                                         \
        } else {                                                                \
            check_tests_failed++;                                               \
            printf("FAIL %s (%d failed checks)\n", #test, check_test_failures); \
        }                                                                       \
        fflush(stdout);                                                         \
    } while (0)

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_tests_passed, check_tests_failed);
    return check_tests_failed == 0 ? 0 : 1;
}

#endif /* KCTX_TESTS_IMAGE_CHECK_H */
