/*
 * platforms.h — the platforms libkctx knows, and what this tool can do on
 * each: list its devices (`kctx platforms`) and drive the conformance probes
 * as the framework (`kctx probe`: a framework driver, fw.h, whose hooks
 * include the device lifecycle counters of the K4 probe).
 *
 * The list of platforms, whether each is built and available, and why not,
 * come from libkctx's registry through the public capability query
 * (kctx_platform_count, kctx_get_platform_caps), never from the tool.
 */
#ifndef KCTX_TOOL_PLATFORMS_H
#define KCTX_TOOL_PLATFORMS_H

#include "device_lister.h" /* platform/common: a platform's device lister */
#include "fw.h"
#include "json.h"

#include <stddef.h>
#include <stdio.h>

typedef struct tool_platform {
    const char *name; /* kctx platform name (the registry's) */
    /* The framework driver of the conformance suite; NULL: none in this tool. */
    const fw_driver *(*driver)(void);
    /* The platform's own lister (its declaration's CLI_DEVICES,
     * device_lister.h): print its devices (text, indented), or write them
     * as the "devices" array through `json` when it is not NULL (the
     * tool's writer, platforms_devices lends it). Returns 0, or -1 with a
     * message on stderr. NULL: the framework driver's device_count and
     * device_info list them (platforms_devices). */
    int (*devices)(FILE *out, const kctx_lister_json *json);
    const char *device_unit; /* what the default lister calls compute units */
} tool_platform;

/* List the platform's devices (text, or the "devices" array of jw): 0, -1
 * with a message on stderr, or 1 when the tool cannot list them. */
int platforms_devices(const tool_platform *p, FILE *out, json_writer *jw);

/* Every platform of libkctx's registry, in its order, with what this tool
 * can do on each (NULL members: nothing). */
const tool_platform *platforms_all(size_t *count);
/* NULL for a name libkctx's registry does not know. */
const tool_platform *platforms_find(const char *name);
/* Names of every known platform, ", "-separated, in a static buffer. */
const char *platforms_names(void);

/* Whether libkctx has the platform and it is available here: 1, or 0 with
 * the reason in why ("not built into this library: ...", "built but
 * unavailable ..."). */
int platforms_built(const tool_platform *p, char *why, size_t why_size);

/* The platform name to use: `given`, else $KCTX_PLATFORM, else "sim" (the
 * library's own default rule). */
const char *platforms_default(const char *given);

#endif /* KCTX_TOOL_PLATFORMS_H */
