/*
 * kctx_test_check.h — the counting checks of the C test programs that run
 * one scenario per process (platform/cuda/tests/test_cuda.c, the acl platform's
 * tests): CHECK(cond, fmt, ...) counts a pass or prints "FAIL file:line:
 * cond: message" and counts a failure, without stopping; CHECK_K(call,
 * want) checks a kctx status (kctx/kctx.h), CHECK_FW(call) a framework
 * driver's (fw.h, with a `fw` in scope). The program ends with
 * ktc_summary(stdout, g_passed, g_failed, 0) (kctx_test_common.h).
 * One translation unit per program: the counters are its own.
 */
#ifndef KCTX_TEST_CHECK_H
#define KCTX_TEST_CHECK_H

#include <stdio.h>

static unsigned g_passed, g_failed;

#define CHECK(cond, ...)                                           \
    do {                                                           \
        if (cond) {                                                \
            g_passed++;                                            \
        } else {                                                   \
            g_failed++;                                            \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                   \
            printf("\n");                                          \
        }                                                          \
    } while (0)
#define CHECK_K(call, want)                                                            \
    do {                                                                               \
        kctx_status st_ = (call);                                                      \
        CHECK(st_ == (want), "%s: %s, expected %s (%s)", #call, kctx_status_name(st_), \
              kctx_status_name(want), kctx_thread_last_error());                       \
    } while (0)
#define CHECK_FW(call)                                                                    \
    do {                                                                                  \
        fw_status st_ = (call);                                                           \
        CHECK(st_ == FW_OK, "%s: %s (%s)", #call, fw_status_name(st_), fw->last_error()); \
    } while (0)

#endif
