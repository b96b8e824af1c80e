/*
 * bench_kctx.c — see bench_kctx.h.
 */
#include "bench_kctx.h"

#include <time.h>

void kb_kctx_check(kctx_status s, const char *what) {
    if (s != KCTX_OK)
        kb_fatal("%s failed: %s (%s)", what, kctx_status_name(s), kctx_thread_last_error());
}

void kb_kctx_close(kctx_context ctx) {
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    kb_kctx_check(kctx_check(ctx, &rep), "kctx_check");
    kctx_status s = KCTX_BUSY;
    for (int i = 0; i < 2000 && s == KCTX_BUSY; i++) {
        s = kctx_close(ctx);
        if (s == KCTX_BUSY) {
            struct timespec ts = {0, 1000000}; /* 1 ms */
            nanosleep(&ts, NULL);
        }
    }
    kb_kctx_check(s, "kctx_close");
    kb_kctx_check(kctx_destroy(ctx), "kctx_destroy");
}
