/*
 * kctx_test_common.h — what the test programs and the benchmarks share
 * (tests/common, library kctx_test_common): reading a file whole, and the
 * exit status and summary line every test program ends with.
 *
 * Exit status of a test program (ctest reads it; the tests of programs that
 * can skip set the SKIP_RETURN_CODE property to KTC_EXIT_SKIP):
 *   0   everything it was asked to check ran and held;
 *   1   a check failed (whatever else was skipped);
 *   77  nothing failed, but something could not run here (fewer devices, no
 *       counter, a missing optional tool): ctest reports the test SKIPPED,
 *       never PASSED. The output says what was skipped and why.
 * Summary line (the last line of a test program's output):
 *   "N passed, M failed" or, when something was skipped, "N passed, M failed, K skipped".
 */
#ifndef KCTX_TESTS_COMMON_H
#define KCTX_TESTS_COMMON_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ctest's SKIP_RETURN_CODE for every kctx test (the Automake convention). */
#define KTC_EXIT_SKIP 77

/* Reads a whole file into malloc'd memory (free() it) with one NUL byte
 * after the last (not counted in *size), so text can be used as a string;
 * malloc's alignment suits images (8-byte aligned). Returns NULL on failure
 * with the reason ("cannot open PATH: ...") in why (may be NULL). */
void *ktc_read_file(const char *path, size_t *size, char *why, size_t why_size);

/* The exit status above: 1 when failed, else KTC_EXIT_SKIP when skipped,
 * else 0. */
int ktc_exit_status(unsigned failed, unsigned skipped);

/* Prints the summary line above on `out` and flushes it; returns
 * ktc_exit_status(failed, skipped). */
int ktc_summary(FILE *out, unsigned passed, unsigned failed, unsigned skipped);

#ifdef __cplusplus
}
#endif
#endif /* KCTX_TESTS_COMMON_H */
