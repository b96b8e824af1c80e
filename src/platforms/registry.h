/*
 * registry.h — the platform registry (registry.c), as the core sees it.
 *
 * The registry lists every platform this tree knows (every folder that
 * declares one: platform/<name>/platform.cmake), each with whether this
 * build has it (the declaration decides), whether it is available on this machine and, if not,
 * why. Each platform's record is made once per process, the first time
 * that platform is named (looked up by name or by index), and never
 * changes; naming one platform probes no other (its library is not loaded,
 * its runtime not initialised).
 */
#ifndef KCTX_PLATFORMS_REGISTRY_H
#define KCTX_PLATFORMS_REGISTRY_H

#include <kctx/kctx.h>
#include <kctx/platform.h>

#include <stdbool.h>
#include <stdint.h>

typedef struct kctx__platform_facts {
    const char *name;
    bool built;
    bool available;
    const char *reason; /* why not built or not available; "" otherwise */
    /* The descriptor a kernel context receives (admitted: full-size tables,
     * desc->ops included); NULL unless available. No lifecycle member. */
    const kctx_platform_desc *desc;
    bool program_mode; /* a lifecycle table is registered */
    const char *note;  /* the descriptor's note (kctx_platform_caps.note); NULL: none */
} kctx__platform_facts;

/* Every known platform, in a fixed order. */
uint32_t kctx__platform_count(void);
/* The index-th platform's name, probing nothing; NULL past the end. */
const char *kctx__platform_name(uint32_t index);
/* The index-th platform's facts: probes that platform (only) if it was not
 * yet. Where only the name is needed, kctx__platform_name probes nothing. */
const kctx__platform_facts *kctx__platform_at(uint32_t index);
/* Probes the platform of that name (only) if it was not yet. NULL: no
 * platform of that name is known (nothing probed). */
const kctx__platform_facts *kctx__platform_lookup(const char *name);
/* The platform name `given` means: itself, else KCTX_PLATFORM from the
 * environment (unset or empty: "sim"). */
const char *kctx__platform_default(const char *given);

/* Program init only (its authority, K3/K4): the lifecycle table registered
 * with the platform whose descriptor `desc` is; NULL when it offers no
 * program mode. */
const kctx_platform_lifecycle_ops *kctx__platform_lifecycle(const kctx_platform_desc *desc);

/* Why the platform of that name is not built into this library (the
 * declaration's reason); NULL when it is built. Probes nothing. */
const char *kctx__platform_not_built(const char *name);

/* The public capability record of a platform (kctx.h), full size. */
void kctx__platform_caps(const kctx__platform_facts *f, kctx_platform_caps *caps);

#endif
