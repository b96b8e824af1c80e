/*
 * admit.h — admitting a platform's registration (docs/platforms.md,
 * "Versioning"): the registry copies each table of any accepted size over
 * an all-NULL one and checks it against the descriptor's capabilities, so
 * the core only ever sees full-size tables in which every op it may call
 * is either present or NULL. Pure: no platform call, no allocation, no
 * kctx state (the tests compile it directly).
 */
#ifndef KCTX_PLATFORMS_ADMIT_H
#define KCTX_PLATFORMS_ADMIT_H

#include <kctx/platform.h>

#include <stdbool.h>
#include <stddef.h>

/* A platform's tables as this library knows them: full size, optional ops
 * beyond what the platform gave NULL, ops of undeclared capabilities NULL.
 * desc.ops points to ops. The lifecycle table lives here, apart from the
 * descriptor a kernel context receives. */
typedef struct kctx__admitted {
    kctx_platform_desc desc;
    kctx_platform_ops ops;
    kctx_platform_lifecycle_ops lifecycle;
    bool has_lifecycle;
} kctx__admitted;

/* Admit `e` into *out (which must not move afterwards: desc.ops points
 * into it). 0, or -1 with the reason in why (the platform is then
 * unavailable). */
int kctx__platform_admit(const kctx_platform_entry *e, kctx__admitted *out, char *why,
                         size_t why_size);

#endif
