/*
 * services.c — the one implementation of what kctx lends a platform
 * adapter (platform/common/services.h): the thread's last error, the "not
 * built" refusal, the clock, the adapters' message buffer and the bounded
 * poll. The message buffer is services_msg.c, which needs nothing of the
 * core, so that a test compiling an adapter alone (platform/acl/tests/
 * test_acl_errors.c) compiles it too rather than a copy.
 *
 * Why the core owns all of it: the last error and the not-built reason are
 * the core's (kctx_thread_last_error, the registry's declarations), and the
 * clock is the core's one clock (the one its trace spans use). So the
 * lender is the core, and services.h is only the declaration of what an
 * adapter may call, kept beside the adapters (platform/common) so that no
 * file of theirs includes a header of src/core. This is a core file: it
 * includes the core's internal.h and the registry's header (the core
 * already depends on the registry), and nothing on the platform side
 * (platform/, src/platforms) includes a core header back.
 */
#include "services.h"

#include "../platforms/registry.h"
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- the core's part: last error, not-built refusal, clock ---- */

uint64_t kctx__svc_now_ns(void) { return kctx__now_ns(); } /* the core's clock: one clock */

kctx_status kctx__svc_fail(kctx_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    kctx__vfail(NULL, s, fmt, ap);
    va_end(ap);
    return s;
}

kctx_status kctx__svc_not_built(kctx_status s, const char *fn, const char *platform) {
    const char *why = kctx__platform_not_built(platform);
    return kctx__svc_fail(s, "%s: the %s platform is %s", fn, platform,
                          why ? why : "built into this library (this entry should not be reached)");
}

/* ---- the adapters' message buffer and bounded poll ---- */

/* the message buffer (kctx__svc_msg, _msgf, _msg_append): services_msg.c */

bool kctx__svc_poll(bool (*done)(void *arg), void *arg, uint32_t timeout_ms, long first_pause_ns) {
    const uint64_t deadline = kctx__svc_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    long pause_ns = first_pause_ns;
    for (;;) {
        if (done(arg)) return true;
        if (kctx__svc_now_ns() >= deadline) return false;
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        if (pause_ns < 1000000) pause_ns *= 2;
    }
}
