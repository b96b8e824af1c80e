/*
 * services.h — what kctx lends a platform adapter, and all an adapter may
 * use of kctx besides the public headers (docs/platforms.md, "The support
 * layer"). An adapter never includes a header of src/core.
 *
 * This header only declares: the one implementation is the core's,
 * src/core/services.c (the last error, the not-built reason and the clock
 * are the core's; the message buffer and the poll live beside them so that
 * the header has one owner). A program that compiles an adapter without
 * libkctx lends it what it calls itself (platform/acl/tests/test_acl_errors.c).
 *
 *  - kctx__svc_fail: set the calling thread's last error
 *    (kctx_thread_last_error), for an adapter's own public API (kctx/cuda.h,
 *    kctx/opencl.h).
 *  - kctx__svc_not_built: the one "not built" refusal: a platform's public
 *    API in a library built without that platform (the declaration's
 *    NOT_BUILT_SOURCES) fails with the registry's reason.
 *  - kctx__svc_now_ns: the monotonic clock, in nanoseconds.
 *  - kctx__svc_msg*: the calling thread's adapter message, the one buffer
 *    the opencl, cuda and acl adapters' last_message ops answer from (the sim has
 *    its own, sim_last_error_message; platform.h: per thread,
 *    read by the core right after the failed op).
 *  - kctx__svc_poll: one bounded poll with backoff (an op's timed wait on a
 *    runtime with no timed wait of its own).
 */
#ifndef KCTX_PLATFORM_COMMON_SERVICES_H
#define KCTX_PLATFORM_COMMON_SERVICES_H

#include <kctx/kctx.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The thread's last error: "<STATUS>: <message>"; returns s. */
kctx_status kctx__svc_fail(kctx_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A public entry `fn` of platform `platform` in a library built without it:
 * sets the thread's last error to "<fn>: the <platform> platform is <the
 * registry's not-built reason>" and returns s (UNSUPPORTED, or what the
 * entry documents for that case). */
kctx_status kctx__svc_not_built(kctx_status s, const char *fn, const char *platform);

/* CLOCK_MONOTONIC in nanoseconds (the core's clock, its trace spans' too). */
uint64_t kctx__svc_now_ns(void);

/* The calling thread's adapter message ("" until an adapter sets one). */
#define KCTX_SVC_MSG_SIZE 2048
const char *kctx__svc_msg(void);
/* Set the message (truncated to KCTX_SVC_MSG_SIZE); returns st, the
 * platform status the op returns with it. */
int kctx__svc_msgf(int st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append to the message; returns st. */
int kctx__svc_msg_append(int st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Poll done(arg) until it answers true or timeout_ms passes: it is asked
 * once at once, then after pauses of first_pause_ns doubling up to about a
 * millisecond. true: done answered true; false: it gave up (the work goes
 * on; the caller says so). */
bool kctx__svc_poll(bool (*done)(void *arg), void *arg, uint32_t timeout_ms, long first_pause_ns);

#endif
