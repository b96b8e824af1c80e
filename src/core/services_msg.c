/*
 * services_msg.c — the adapters' message buffer (platform/common/services.h:
 * kctx__svc_msg, kctx__svc_msgf, kctx__svc_msg_append): one buffer per
 * thread that an adapter writes its runtime's error text into and the core
 * reads back. Part of the core's services (services.c); a file of its own
 * because it needs nothing of the core, so that a test that compiles an
 * adapter without libkctx compiles this file too.
 */
#include "services.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
