/*
 * services.c — the core's side of the adapters' services
 * (platform/common/services.h): the one file of the platform wing that sees
 * the core's internals, so that no adapter includes src/core/internal.h.
 */
#include "services.h"

#include "../core/internal.h"
#include "registry.h"

#include <stdarg.h>

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
