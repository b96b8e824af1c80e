/*
 * platforms.c — the platforms of libkctx's registry and what the tool can
 * do on each (see platforms.h), from the platform declarations: a
 * platform's devices are listed by its declared lister (the sim's,
 * platform/sim/cli_devices.c, which writes JSON through the writer lent
 * here: platform/common/device_lister.h) or else through its conformance
 * framework driver (the devices it can lend), as a framework would.
 */
#include "platforms.h"

#include <kctx/kctx.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* the default lister: the platform's framework driver                  */

/* The devices a platform's framework driver lends (its device_count and
 * device_info), with the declared name of their compute units. */
static int driver_devices(const tool_platform *p, FILE *out, json_writer *jw) {
    const fw_driver *fw = p->driver();
    int n = fw->device_count();
    if (jw) json_array_begin(jw, "devices");
    for (int d = 0; d < n; d++) {
        char name[128] = "";
        unsigned units = 0;
        if (fw->device_info(d, name, sizeof name, &units) != FW_OK) {
            if (jw) json_array_end(jw);
            fprintf(stderr, "kctx platforms: error: %s device %d: %s\n", p->name, d,
                    fw->last_error());
            return -1;
        }
        if (jw) {
            json_object_begin(jw, NULL);
            json_u64(jw, "index", (uint64_t)d);
            json_string(jw, "name", name);
            json_u64(jw, "aicore_count", (uint64_t)units);
            json_object_end(jw);
        } else {
            fprintf(out, "  device %d  %s\n    %-14s %u\n", d, name, p->device_unit, units);
        }
    }
    if (jw) json_array_end(jw);
    if (!jw && n == 0) {
        const char *why = fw->last_error();
        fprintf(out, "  no device%s%s\n", why && *why ? ": " : "", why && *why ? why : "");
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* a platform's own lister: the tool's JSON writer lent to it           */

static void lj_object_begin(void *w, const char *key) { json_object_begin(w, key); }
static void lj_object_end(void *w) { json_object_end(w); }
static void lj_array_begin(void *w, const char *key) { json_array_begin(w, key); }
static void lj_array_end(void *w) { json_array_end(w); }
static void lj_string(void *w, const char *key, const char *value) { json_string(w, key, value); }
static void lj_u64(void *w, const char *key, uint64_t value) { json_u64(w, key, value); }
static void lj_boolean(void *w, const char *key, int value) { json_bool(w, key, value); }

int platforms_devices(const tool_platform *p, FILE *out, json_writer *jw) {
    if (p->devices) {
        const kctx_lister_json lj = {.w = jw,
                                     .object_begin = lj_object_begin,
                                     .object_end = lj_object_end,
                                     .array_begin = lj_array_begin,
                                     .array_end = lj_array_end,
                                     .string = lj_string,
                                     .u64 = lj_u64,
                                     .boolean = lj_boolean};
        return p->devices(out, jw ? &lj : NULL);
    }
    if (p->driver && p->driver()->device_count && p->driver()->device_info)
        return driver_devices(p, out, jw);
    return 1;
}

/* ------------------------------------------------------------------ */
/* the catalogue: the registry's platforms, with the tool's extras       */

/* What this tool can do per platform name: generated from the platform
 * declarations (platform/<name>/platform.cmake; cmake/Platforms.cmake):
 * X(name, framework driver or NULL, device lister or NULL, "device unit"). */
#include "kctx_gen_tool.h"

static const tool_platform k_extras[] = {
#define EXTRA_(name, driver, devices, unit) {name, driver, devices, unit},
    KCTX_GEN_TOOL_PLATFORMS(EXTRA_)
#undef EXTRA_
};
#define NEXTRAS (sizeof k_extras / sizeof k_extras[0])

#define MAX_PLATFORMS 16
static tool_platform g_all[MAX_PLATFORMS];
static size_t g_nall;

/* The registry's list, made on first use (the tool is single-threaded). */
static void catalogue(void) {
    if (g_nall) return;
    uint32_t n = kctx_platform_count();
    for (uint32_t i = 0; i < n && g_nall < MAX_PLATFORMS; i++) {
        const char *name = kctx_platform_name_at(i);
        if (!name) break;
        tool_platform p = {name, NULL, NULL, ""};
        for (size_t k = 0; k < NEXTRAS; k++)
            if (strcmp(k_extras[k].name, name) == 0) p = k_extras[k];
        g_all[g_nall++] = p;
    }
}

const tool_platform *platforms_all(size_t *count) {
    catalogue();
    *count = g_nall;
    return g_all;
}

const tool_platform *platforms_find(const char *name) {
    catalogue();
    for (size_t i = 0; i < g_nall; i++)
        if (strcmp(g_all[i].name, name) == 0) return &g_all[i];
    return NULL;
}

const char *platforms_names(void) {
    static char buf[128];
    size_t n = 0;
    buf[0] = '\0';
    catalogue();
    for (size_t i = 0; i < g_nall && n < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", g_all[i].name);
    return buf;
}

int platforms_built(const tool_platform *p, char *why, size_t why_size) {
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    kctx_status st = kctx_get_platform_caps(p->name, &caps);
    if (st != KCTX_OK) {
        snprintf(why, why_size, "unknown to libkctx: kctx_get_platform_caps: %s (%s)",
                 kctx_status_name(st), kctx_thread_last_error());
        return 0;
    }
    if (caps.available) return 1;
    if (caps.built)
        snprintf(why, why_size, "built but %s", caps.reason);
    else
        snprintf(why, why_size, "%s", caps.reason);
    return 0;
}

const char *platforms_default(const char *given) {
    if (given != NULL) return given;
    const char *env = getenv("KCTX_PLATFORM");
    return env != NULL && env[0] != '\0' ? env : "sim";
}
