/*
 * acl_launch_overhead — launch_overhead on the acl platform
 * (docs/benchmarks.md, "Launch overhead on every platform"): host time of
 * one steady-state kctx_launch onto an ACL framework's stream against the
 * same launch's ACL calls written by hand, side by side in one run (the
 * harness: bench/hand_launch.c), under both strategies.
 *
 * The hand chain, per launch: aclrtGetDevice (the current-device read),
 * then 5 aclrtRecordEvent, 4 aclrtStreamWaitEvent and the strategy's
 * aclrtLaunchKernelWithHostArgs (RESIDENT: acquire, workers, scheduler;
 * HOST_ORDERED: acquire, the task, finalize) with kctx's parameter sizes,
 * on the framework's caller stream and two streams of its own; an AICPU
 * launch runs a function of aclrtRegisterCpuFunc, an AICore launch one of
 * aclrtBinaryGetFunction, as in the adapter. Holds: aclrtLaunchHostFunc
 * on the caller stream (CANN 8.3+; declared here, since kctx itself never
 * calls it: aclError aclrtLaunchHostFunc(aclrtStream, aclrtHostFunc fn,
 * void *args), fn: void (*)(void *)).
 *
 * Where: kctx's runtime programs load only on the ACL driver double
 * (platform/acl/double, recognised by its kacl_double_calls symbol; docs/acl.md),
 * so on any other ACL runtime the benchmark says "not measured". The
 * kernels are the sim test kernels (k_noop for every hand launch; the
 * callables carry the module under the ascend_bin kind, as the double's
 * images do). The library: KCTX_ACL_LIBRARY, else libascendcl.so, as the
 * adapter loads it.
 */
#include "hand_launch.h"
#include "launch_common.h"

#include "acl_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef kacl_error (*fn_host_func)(kacl_stream, void (*)(void *), void *);

static struct {
    kacl_fn_aclrtGetDevice get_device;
    kacl_fn_aclrtRecordEvent record;
    kacl_fn_aclrtStreamWaitEvent wait;
    kacl_fn_aclrtLaunchKernelWithHostArgs launch;
    kacl_fn_aclrtBinaryLoadFromData load;
    kacl_fn_aclrtBinaryUnLoad unload;
    kacl_fn_aclrtBinaryGetFunction get_function;
    kacl_fn_aclrtRegisterCpuFunc register_cpu;
    fn_host_func host_func;
} g_acl;

static void *g_lib;
static kacl_bin g_bin;
/* The hand chain's functions by target. */
static struct hand_fns { kacl_func cpu, core; } g_fns;

static const char *status_name(int st) {
    static _Thread_local char buf[64];
    snprintf(buf, sizeof buf, "(ACL error %d)", st);
    return buf;
}

static int ha_open(const void **module, size_t *size, char *why, size_t why_size) {
    const char *path = getenv("KCTX_ACL_LIBRARY");
    if (!path || !*path) path = "libascendcl.so";
    g_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) return snprintf(why, why_size, "dlopen %s: %s", path, dlerror()), -1;
    if (!dlsym(g_lib, "kacl_double_calls"))
        return snprintf(why, why_size,
                        "%s is not the ACL driver double: kctx's runtime programs load only "
                        "there (docs/acl.md)",
                        path),
               1;
    struct {
        const char *name;
        void **slot;
    } entries[] = {
        {"aclrtGetDevice", (void **)&g_acl.get_device},
        {"aclrtRecordEvent", (void **)&g_acl.record},
        {"aclrtStreamWaitEvent", (void **)&g_acl.wait},
        {"aclrtLaunchKernelWithHostArgs", (void **)&g_acl.launch},
        {"aclrtBinaryLoadFromData", (void **)&g_acl.load},
        {"aclrtBinaryUnLoad", (void **)&g_acl.unload},
        {"aclrtBinaryGetFunction", (void **)&g_acl.get_function},
        {"aclrtRegisterCpuFunc", (void **)&g_acl.register_cpu},
        {"aclrtLaunchHostFunc", (void **)&g_acl.host_func},
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if ((*entries[i].slot = dlsym(g_lib, entries[i].name)) == NULL)
            return snprintf(why, why_size, "%s has no %s", path, entries[i].name), -1;
    lb_kernels_module(module, size); /* the sim test kernels */
    kacl_error st = g_acl.load(*module, *size, NULL, &g_bin);
    if (!st) st = g_acl.get_function(g_bin, "k_noop", &g_fns.core);
    if (!st) st = g_acl.register_cpu(g_bin, "k_noop", "k_noop", &g_fns.cpu);
    if (st) return snprintf(why, why_size, "loading k_noop: ACL error %d", st), -1;
    kb_progress("library %s (the ACL driver double); hand kernels: k_noop of the sim test kernels",
                path);
    return 0;
}

static void ha_close(void) {
    if (g_bin) g_acl.unload(g_bin);
    g_bin = NULL;
}

/* ---- the hand table (thin wrappers, like the adapter's) ------------------------- */

__attribute__((noinline)) static int w_current_device(int *d) {
    int32_t dev = 0;
    kacl_error st = g_acl.get_device(&dev);
    if (!st) *d = dev;
    return st;
}
__attribute__((noinline)) static int w_event_record(kctx_pevent e, kctx_pstream s) {
    return g_acl.record((kacl_event)(uintptr_t)e, (kacl_stream)(uintptr_t)s);
}
__attribute__((noinline)) static int w_stream_wait_event(kctx_pstream s, kctx_pevent e) {
    return g_acl.wait((kacl_stream)(uintptr_t)s, (kacl_event)(uintptr_t)e);
}
__attribute__((noinline)) static int w_launch(kctx_pstream s, kctx_pfunction fn,
                                              kctx_ptarget target, uint32_t block_dim,
                                              const void *params, size_t size) {
    const struct hand_fns *h = (const struct hand_fns *)(uintptr_t)fn;
    const int cpu = target == KCTX_PTARGET_AICPU;
    /* host args are copied at the call (aclrtLaunchKernelWithHostArgs) */
    return g_acl.launch(cpu ? h->cpu : h->core, cpu ? 1 : block_dim, (kacl_stream)(uintptr_t)s,
                        NULL, (void *)(uintptr_t)params, size, NULL, 0);
}

static kctx_platform_ops g_ops = {
    .size = sizeof(kctx_platform_ops),
    .current_device = w_current_device,
    .event_record = w_event_record,
    .stream_wait_event = w_stream_wait_event,
    .launch = w_launch,
};

static kctx_pfunction hand_function(void) { return (kctx_pfunction)(uintptr_t)&g_fns; }

static int host_func(uint64_t stream, void (*fn)(void *), void *arg) {
    return g_acl.host_func((kacl_stream)(uintptr_t)stream, fn, arg);
}

int main(int argc, char **argv) {
    static const hl_platform p = {
        .name = "acl",
        .metric = "acl_launch_overhead",
        .variant = KCTX_VARIANT_ASCEND_BIN,
        .open = ha_open,
        .close = ha_close,
        .ops = &g_ops,
        .hand_function = hand_function,
        .host_func = host_func,
        .status_name = status_name,
    };
    return hl_main(&p, argc, argv);
}
