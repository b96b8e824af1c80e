/*
 * hand_launch.h — `launch_overhead` on a platform kctx did not write (cuda,
 * acl): host time of one steady-state kctx_launch against the same launch's
 * platform operations written by hand against the platform's own API, side
 * by side in one run (docs/benchmarks.md, "Launch overhead on every
 * platform").
 *
 * The harness is the platform-neutral part: the framework's side is the
 * conformance suite's framework driver of the platform (src/conformance,
 * fw.h: the device made current, streams, events, memory); the hand chain
 * is lb_chain_enqueue / lb_chain_enqueue_ho (launch_common.h) through the
 * platform's hand-written table of record / wait / launch / current-device
 * calls; holds are the platform's host function (CUDA's cuLaunchHostFunc,
 * ACL's aclrtLaunchHostFunc) on the caller stream, which every later
 * command of either side waits behind. What a platform adds is an
 * hl_platform.
 */
#ifndef KCTX_BENCH_HAND_LAUNCH_H
#define KCTX_BENCH_HAND_LAUNCH_H

#include <kctx/image.h>
#include <kctx/platform.h>

#include <stddef.h>
#include <stdint.h>

typedef struct hl_platform {
    const char *name;          /* the kctx platform and its framework driver: "cuda" */
    const char *metric;        /* the headline metric: "cuda_launch_overhead" */
    kctx_variant_kind variant; /* the kind of the callables' kernels */
    /* After the framework made its device current: load what the hand chain
     * launches and give the module the callables carry (t_noop and
     * t_vadd_f32, kept until close). Returns 0; 1 with the reason in why
     * when kctx cannot run on this runtime (not measured); -1 with the
     * reason on a failure (the benchmark fails). */
    int (*open)(const void **module, size_t *size, char *why, size_t why_size);
    void (*close)(void);
    /* The hand chain's calls: current_device, event_record,
     * stream_wait_event and launch filled; a launch's function is
     * `hand_function` (the platform's wrapper picks its kernel for the
     * target and the parameter block's size). Statuses are the
     * platform's. */
    const kctx_platform_ops *ops;
    kctx_pfunction (*hand_function)(void);
    /* Enqueue fn(arg) on `stream` as the platform's host function (in
     * stream order: the stream's later work waits until it returns). */
    int (*host_func)(uint64_t stream, void (*fn)(void *), void *arg);
    /* A platform status in words (static storage). */
    const char *(*status_name)(int st);
} hl_platform;

/* The benchmark's main: options as every benchmark's (bench_util.h);
 * exit status 0 with "<metric>: not measured: <why>" on stderr when the
 * platform is not built or not available here. */
int hl_main(const hl_platform *p, int argc, char **argv);

#endif
