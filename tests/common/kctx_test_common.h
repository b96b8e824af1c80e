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

#include "kctx_test_check.h" /* ktc_summary, ktc_exit_status, KTC_EXIT_SKIP, the checks */

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ktc_read_file: src/check/kctx_test_check.h. */

#ifdef __cplusplus
}
#endif
#endif /* KCTX_TESTS_COMMON_H */
