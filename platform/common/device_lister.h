/*
 * device_lister.h — the interface of a platform's `kctx platforms` device
 * lister (its declaration's CLI_DEVICES, compiled into the kctx tool from
 * its CLI_SOURCES; cmake/Platforms.cmake). The lister is the platform's
 * (what only its runtime can tell about a device); the output is the
 * tool's: the lister prints text lines itself, and writes JSON through the
 * writer the tool lends it here, so that a platform's folder includes no
 * header of tools/ (the tool's JSON writer is tools/kctx/json.h, which
 * fills this table: tools/kctx/platforms.c).
 *
 *   int <lister>(FILE *out, const kctx_lister_json *json);
 *
 * json NULL: print the devices as text on `out` (indented lines under the
 * platform's line); else write them through json as the "devices" array
 * of the platform's object (out unused). Returns 0, or -1 with a message
 * on stderr ("kctx platforms: error: ...").
 */
#ifndef KCTX_PLATFORM_COMMON_DEVICE_LISTER_H
#define KCTX_PLATFORM_COMMON_DEVICE_LISTER_H

#include <stdint.h>
#include <stdio.h>

/* A streaming JSON writer (the tool's): values in order; inside an object
 * every value takes a key, inside an array keys are NULL. */
typedef struct kctx_lister_json {
    void *w; /* the writer, passed to each entry */
    void (*object_begin)(void *w, const char *key);
    void (*object_end)(void *w);
    void (*array_begin)(void *w, const char *key);
    void (*array_end)(void *w);
    void (*string)(void *w, const char *key, const char *value);
    void (*u64)(void *w, const char *key, uint64_t value);
    void (*boolean)(void *w, const char *key, int value);
} kctx_lister_json;

#endif
