/*
 * launch_common.h — shared pieces of the launch benchmarks (platform/sim/bench/launch/):
 * fatal-error checks, callable images built with the kctx_image builder,
 * kernel contexts, and the K20 chain of plain sim operations that the
 * baselines enqueue.
 *
 * Every helper that fails prints "<program>: error: ..." and exits
 * (kb_fatal): a benchmark never prints a figure after a failure.
 */
#ifndef KCTX_BENCH_LAUNCH_COMMON_H
#define KCTX_BENCH_LAUNCH_COMMON_H

#include "bench_kctx.h"
#include "bench_util.h"

#include <kctx/image.h>
#include <kctx/kctx.h>
#include <kctx/platform.h>
#include <kctx/sim.h>

#include <stddef.h>
#include <stdint.h>

/* ---- checks --------------------------------------------------------------- */

/* Fatal unless s is SIM_OK; the message names `what` and the sim's detail. */
void lb_sim_check(sim_status s, const char *what);

/* ---- images ----------------------------------------------------------------- */

/* A callable image made by the builder (malloc'd; lb_image_free). */
typedef struct lb_image {
    void *bytes;
    size_t size;
    uint32_t tasks;
} lb_image;

/* The sim test kernels module (KCTX_BENCH_KERNEL_MODULE) bytes, read once. */
void lb_kernels_module(const void **bytes, size_t *size);

/* The variant the callables below carry: kind and module bytes (kept by
 * the caller until the images are built). Default: the sim test kernels
 * module as KCTX_VARIANT_SIM_ELF. A platform benchmark names its own (the
 * driver doubles' kinds carry the same sim module; a real GPU a fatbin
 * with the same entries). */
void lb_set_variant(kctx_variant_kind kind, const void *bytes, size_t size);

/* One task running the empty kernel k_noop (block_dim 1), no parameters.
 * Distinct names give distinct bytes (so distinct uploads). */
lb_image lb_image_noop(const char *name);
/* Building images: finish (fatal on failure; `tasks` recorded in the
 * result), the child "noop" (t_noop, no parameters) and the child "count"
 * (t_add_u32: buf tensor, n_value scalar) with the kernel module as their
 * SIM_ELF variant (each returns its function id), and a counting task:
 * t_add_u32 on parameter `param` at counts[t] with n = 1, value = 1. */
lb_image lb_image_finish(kctx_image_builder *b, const char *what, uint32_t tasks);
uint32_t lb_add_noop_child(kctx_image_builder *b);
uint32_t lb_add_count_child(kctx_image_builder *b);
void lb_add_counting_task(kctx_image_builder *b, uint32_t fid, uint32_t param, uint32_t t);
/* Vector add: params (a: tensor_in, b: tensor_in, c: tensor_out, n: scalar),
 * one task of `block_dim` blocks running k_vadd_f32 (c = a + b over n floats;
 * its parameter block is the callable ABI's four u64 slots). */
lb_image lb_image_vadd(uint32_t block_dim);
/* A wide DAG of tasks that each count their own runs: one root, `width`
 * independent tasks depending on it, ceil(width / 64) join tasks (an image
 * allows at most 64 dependencies per task) and one sink depending on the
 * joins; `width` 0 is the root alone (one task). `width` is 0..4000.
 * The callable has one parameter, counts (tensor_inout, 4 bytes per task):
 * task t runs k_add_u32 (block_dim 1) on counts[t] with n = 1 and value = 1,
 * so after L launches every counts[t] is L exactly when every task ran once
 * per launch. (k_add_u32's parameter block {u64 buf; u32 n; u32 value} is
 * two u64 slots of the callable ABI: the tensor at byte offset 4t, and the
 * immediate 1 | 1 << 32.) */
lb_image lb_image_dag(uint32_t width);
void lb_image_free(lb_image *img);

/* ---- kernel contexts ---------------------------------------------------------- */

/* Create a context on the sim and kernel-init it on the calling thread's
 * current device with the default config and `strategy` (a kctx_strategy;
 * KCTX_STRATEGY_DEFAULT: KCTX_STRATEGY, else the sim's default). */
kctx_context lb_context_open(uint32_t strategy);
/* The strategy in effect of a context (kctx_get_context_caps). */
kctx_strategy lb_context_strategy(kctx_context ctx);

/* The strategies a benchmark that reports a figure per strategy measures:
 * the one --strategy names (opt_strategy 1 or 2), else both, RESIDENT
 * first. Returns the count (1 or 2). */
int lb_strategies(int opt_strategy, kctx_strategy out[2]);
/* Hold the first execution of kernel `fn` on `device` (sim_hold); returns
 * the hold id. */
int lb_hold_arm(int device, sim_function fn);
/* The metric name of a per-strategy figure: `base` under RESIDENT (the
 * names the figures always had), `base`_host_ordered under HOST_ORDERED.
 * Returns buf. */
const char *lb_metric_name(char *buf, size_t size, const char *base, kctx_strategy s);
/* One per-strategy figure (lb_metric_name) from R repeats: the median of
 * `v`, against the median of `base` when with_base (else baseline=none);
 * lb_print_value: no baseline at all. Non-zero when the line could not be
 * printed. */
int lb_print_compared(const char *name, kctx_strategy s, const double *v, int with_base,
                      const double *base, int R);
int lb_print_value(const char *name, kctx_strategy s, const double *v, const char *unit, int R);

/* ---- the baseline chain --------------------------------------------------------- */

/* A platform table whose entries call the sim directly, the way the sim
 * adapter inside libkctx does (that table is internal to libkctx, so the
 * benchmarks carry their own; see docs/benchmarks.md). Only the entries the
 * chain uses are filled: current_device, event_record, stream_wait_event,
 * launch. */
const kctx_platform_ops *lb_sim_ops(void);

/* The resident objects of the baseline: what a context owns — two streams,
 * five sync-only events, and k_noop from the sim test kernels standing in
 * for the three device programs. lb_chain_open makes them of plain sim
 * objects; the platform benchmarks of hand_launch.h fill the fields with
 * their own platform's handles (and `noop` with a handle their `ops`
 * launch understands), since lb_chain_enqueue(_ho) reach them only
 * through `ops`. */
typedef struct lb_chain {
    sim_stream cpu, core;
    sim_event ev[5];
    sim_module module;
    sim_function noop;
    uint32_t cores; /* the device's AICore count: the worker's block_dim */
    uint64_t seq;
} lb_chain;

void lb_chain_open(lb_chain *ch);
void lb_chain_close(lb_chain *ch);

/* Enqueue the K20 sequence through `ops`, exactly as kctx's RESIDENT launch
 * does it:
 *   caller: record START
 *   AICPU:  wait START; kernel (16 B params); record AICORE_START
 *   AICore: wait AICORE_START; kernel x min(cores, blocks) (40 B); record AICORE_DONE
 *   AICPU:  kernel (48 B + 16 B per arg); wait AICORE_DONE; record AICPU_DONE
 *   caller: wait AICPU_DONE; record SERIAL_TAIL
 * preceded, when `read_device`, by one current-device read. `blocks`: the
 * callable's blocks over all its tasks (kctx launches that many workers, at
 * most one per core). The parameter blocks are filled per call like kctx
 * fills its own. Returns the first failing platform status (0 on
 * success). */
int lb_chain_enqueue(lb_chain *ch, const kctx_platform_ops *ops, sim_stream caller, uint32_t nargs,
                     uint32_t blocks, int read_device);

/* The same for a HOST_ORDERED launch (contract section 0b) of `ntasks`
 * tasks of `block_dim` blocks and `nbindings` bindings each:
 *   caller: record START
 *   AICPU:  wait START; acquire kernel (24 B); record AICORE_START
 *   AICore: wait AICORE_START; per task: kernel x block_dim (the task ABI's
 *           32 B header + 8 B per binding); record AICORE_DONE
 *   AICPU:  wait AICORE_DONE; finalize kernel (24 B); record AICPU_DONE
 *   caller: wait AICPU_DONE; record SERIAL_TAIL
 * every kernel k_noop, each task's block built per call like kctx builds
 * it from the args. */
int lb_chain_enqueue_ho(lb_chain *ch, const kctx_platform_ops *ops, sim_stream caller,
                        uint32_t ntasks, uint32_t block_dim, uint32_t nbindings, int read_device);

/* ---- misc ------------------------------------------------------------------------ */

/* The AICore count of device 0. */
uint32_t lb_core_count(void);

#endif
