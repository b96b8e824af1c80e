/*
 * services.c — the adapters' clock, message buffer and bounded poll
 * (services.h). kctx__svc_fail is the core side's (src/platforms/services.c).
 */
#include "services.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Thread_local char tl_msg[KCTX_SVC_MSG_SIZE];

const char *kctx__svc_msg(void) { return tl_msg; }

int kctx__svc_msgf(int st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_msg, sizeof tl_msg, fmt, ap);
    va_end(ap);
    return st;
}

int kctx__svc_msg_append(int st, const char *fmt, ...) {
    size_t n = strlen(tl_msg);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_msg + n, sizeof tl_msg - n, fmt, ap);
    va_end(ap);
    return st;
}

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
