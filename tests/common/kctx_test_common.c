/*
 * kctx_test_common.c — see kctx_test_common.h.
 */
#include "kctx_test_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ktc_read_file, ktc_exit_status, ktc_summary and the checks: src/check/kctx_check.c. */
