/*
 * registry.c — the platform registry: every platform this tree knows, by
 * name, made once per process from the build's options (CMake's
 * KCTX_PLATFORMS defines KCTX_BUILT_<NAME> for each platform built into
 * this library). A built platform registers itself with its entry
 * (platform/<name>/adapter.c); the registry admits its tables (admit.c),
 * asks it whether it is available on this machine, and keeps the answer.
 * Each platform is probed on its own, the first time it is named (a
 * context created on it, a capability query for it, a listing of every
 * platform), never because another one was: a process that only uses the
 * sim never loads OpenCL's or CUDA's library.
 * The core reaches platforms only through here; docs/platforms.md is the
 * guide.
 */
#include "registry.h"

#include "admit.h"

#include <kctx/opencl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef KCTX_BUILT_SIM
const kctx_platform_entry *kctx_sim_platform_entry(void);
#define SIM_ENTRY kctx_sim_platform_entry
#else
#define SIM_ENTRY NULL
#endif
#ifdef KCTX_BUILT_OPENCL
const kctx_platform_entry *kctx_opencl_platform_entry(void);
#define OPENCL_ENTRY kctx_opencl_platform_entry
#else
#define OPENCL_ENTRY NULL
#endif
#ifdef KCTX_BUILT_CUDA
const kctx_platform_entry *kctx_cuda_platform_entry(void);
#define CUDA_ENTRY kctx_cuda_platform_entry
#else
#define CUDA_ENTRY NULL
#endif
#ifndef KCTX_CUDA_NOT_BUILT /* the build's reason (cmake/CudaPlatform.cmake) */
#define KCTX_CUDA_NOT_BUILT "not built into this library (KCTX_PLATFORMS did not include cuda)"
#endif

/* The platforms of this tree (architecture.md), in the order listed. */
typedef struct known_platform {
    const char *name;
    const kctx_platform_entry *(*entry)(void); /* NULL: not built into this library */
    const char *not_built;                     /* the reason when it is not */
} known_platform;

static const known_platform k_known[] = {
    {"sim", SIM_ENTRY, "not built into this library (KCTX_PLATFORMS did not include sim)"},
    {"opencl", OPENCL_ENTRY,
     "not built into this library (KCTX_PLATFORMS did not list opencl: OpenCL's headers, Debian "
     "opencl-headers, were missing at build time, or it was left out)"},
    {"cuda", CUDA_ENTRY, KCTX_CUDA_NOT_BUILT},
};
#define NKNOWN (sizeof k_known / sizeof k_known[0])

typedef struct record {
    kctx__platform_facts facts;
    kctx__admitted tables; /* valid when facts.available */
    char reason[512];
} record;

static record g_records[NKNOWN];
/* One probe per platform, each run once: naming one platform wakes no other
 * (no other's library is loaded, no other's runtime initialised). */
static pthread_once_t g_probed[] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};
_Static_assert(sizeof g_probed / sizeof g_probed[0] == NKNOWN, "one once-flag per known platform");

static void probe(size_t i) {
    record *r = &g_records[i];
    r->facts.name = k_known[i].name;
    r->facts.reason = r->reason;
    if (!k_known[i].entry) {
        snprintf(r->reason, sizeof r->reason, "%s", k_known[i].not_built);
        return;
    }
    r->facts.built = true;
    const kctx_platform_entry *e = k_known[i].entry();
    char why[400] = "";
    if (kctx__platform_admit(e, &r->tables, why, sizeof why) != 0) {
        snprintf(r->reason, sizeof r->reason, "unavailable: %s", why);
        return;
    }
    if (strcmp(r->tables.desc.name, k_known[i].name) != 0) {
        snprintf(r->reason, sizeof r->reason, "unavailable: its registration names '%s', not '%s'",
                 r->tables.desc.name, k_known[i].name);
        return;
    }
    if (e->available && !e->available(why, sizeof why)) {
        snprintf(r->reason, sizeof r->reason, "unavailable on this machine: %s", why);
        return;
    }
    r->facts.available = true;
    r->facts.desc = &r->tables.desc;
    r->facts.program_mode = r->tables.has_lifecycle;
}

/* pthread_once takes no argument: one trampoline per known platform. */
static void probe_0(void) { probe(0); }
static void probe_1(void) { probe(1); }
static void probe_2(void) { probe(2); }
static void (*const k_probe[])(void) = {probe_0, probe_1, probe_2};
/* Sized by their initialisers, so a platform added to k_known without its
 * trampoline and once-flag stops the build instead of calling NULL. */
_Static_assert(sizeof k_probe / sizeof k_probe[0] == NKNOWN,
               "one probe trampoline per known platform");

static const kctx__platform_facts *probed(size_t i) {
    pthread_once(&g_probed[i], k_probe[i]);
    return &g_records[i].facts;
}

uint32_t kctx__platform_count(void) { return (uint32_t)NKNOWN; }

const char *kctx__platform_name(uint32_t index) {
    return index < NKNOWN ? k_known[index].name : NULL;
}

const kctx__platform_facts *kctx__platform_at(uint32_t index) {
    return index < NKNOWN ? probed(index) : NULL;
}

const kctx__platform_facts *kctx__platform_lookup(const char *name) {
    for (size_t i = 0; i < NKNOWN; i++)
        if (strcmp(k_known[i].name, name) == 0) return probed(i);
    return NULL;
}

const char *kctx__platform_default(const char *given) {
    if (given) return given;
    const char *env = getenv("KCTX_PLATFORM");
    return env && *env ? env : "sim";
}

const kctx_platform_lifecycle_ops *kctx__platform_lifecycle(const kctx_platform_desc *desc) {
    /* `desc` came from a lookup that probed its platform: compare addresses
     * first, so that no platform is probed (or its record read) here. */
    for (size_t i = 0; i < NKNOWN; i++) {
        const record *r = &g_records[i];
        if (desc == &r->tables.desc && probed(i)->available)
            return r->tables.has_lifecycle ? &r->tables.lifecycle : NULL;
    }
    return NULL;
}

void kctx__platform_caps(const kctx__platform_facts *f, kctx_platform_caps *caps) {
    *caps = (kctx_platform_caps)KCTX_PLATFORM_CAPS_INIT;
    caps->name = f->name;
    caps->reason = f->reason;
    caps->built = f->built;
    caps->available = f->available;
    if (!f->available) return;
    const kctx_platform_desc *d = f->desc;
    caps->strategies = d->strategies;
    caps->default_strategy = d->default_strategy;
    caps->max_params_size = d->max_params_size;
    caps->has_capture = d->has_capture != 0;
    caps->has_null_stream = d->has_null_stream != 0;
    caps->has_epoch = d->has_epoch != 0;
    caps->can_check_ranges = d->can_check_ranges != 0;
    caps->program_mode = f->program_mode;
}

/* ------------------------------------------------------------------ */
/* the public registry queries (kctx.h)                                 */

uint32_t kctx_platform_count(void) { return kctx__platform_count(); }

/* A name probes nothing: listing the names wakes no platform. */
const char *kctx_platform_name_at(uint32_t index) { return kctx__platform_name(index); }

#ifndef KCTX_BUILT_OPENCL
/* kctx/opencl.h in a library built without the opencl platform. */
#include "services.h" /* kctx__svc_fail: the thread's last error */
static kctx_status opencl_not_built(const char *fn) {
    return kctx__svc_fail(KCTX_UNSUPPORTED, "%s: the opencl platform is %s", fn,
                          k_known[1].not_built);
}
kctx_status kctx_opencl_bind(struct _cl_context *context, struct _cl_device_id *device,
                             int *kctx_device) {
    (void)context, (void)device, (void)kctx_device;
    return opencl_not_built("kctx_opencl_bind");
}
kctx_status kctx_opencl_bind_queue(struct _cl_command_queue *queue, int *kctx_device) {
    (void)queue, (void)kctx_device;
    return opencl_not_built("kctx_opencl_bind_queue");
}
kctx_status kctx_opencl_bound(struct _cl_context **context, struct _cl_device_id **device,
                              int *kctx_device) {
    (void)context, (void)device, (void)kctx_device;
    return opencl_not_built("kctx_opencl_bound");
}
kctx_status kctx_opencl_live_objects(int kctx_device, kctx_opencl_live *out) {
    (void)kctx_device, (void)out;
    return opencl_not_built("kctx_opencl_live_objects");
}
kctx_status kctx_opencl_driver_calls(const char *entry, uint64_t *count) {
    (void)entry, (void)count;
    return opencl_not_built("kctx_opencl_driver_calls");
}
kctx_status kctx_opencl_test_hold(int kctx_device, struct _cl_event *gate) {
    (void)kctx_device, (void)gate;
    return opencl_not_built("kctx_opencl_test_hold");
}
kctx_status kctx_opencl_test_hold_reached(int *reached) {
    (void)reached;
    return opencl_not_built("kctx_opencl_test_hold_reached");
}
kctx_status kctx_opencl_test_hold_clear(void) {
    return opencl_not_built("kctx_opencl_test_hold_clear");
}
#endif
