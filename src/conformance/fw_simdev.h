/*
 * fw_simdev.h — framework-driver hooks (fw.h) over the sim's runtime API
 * (libkctx_sim, kctx/sim.h), shared by every driver whose devices are sim
 * devices: the sim's own driver (platform/sim/fw_sim.c) and the drivers of
 * the platforms whose driver doubles run on the sim (platform/cuda/fw_cuda.c,
 * platform/acl/fw_acl.c, when their runtime is the double: the double's
 * handles, memory and work are the sim's). The suite owns them, as it owns
 * the graph pool's arena (fw_pool.c), so that no platform's driver calls
 * another platform's.
 *
 * Each has the signature of the fw_driver member of the same name; a
 * failure's message is the sim's (sim_last_error_message).
 */
#ifndef KCTX_CONFORMANCE_FW_SIMDEV_H
#define KCTX_CONFORMANCE_FW_SIMDEV_H

#include "fw.h"

#include <kctx/sim.h>

/* The fw_status of a sim status. */
fw_status fw_simdev_status(sim_status st);

/* Holds (sim_hold_arm): FW_HOLD_SCHEDULER holds the next execution of
 * `ctx`'s runtime scheduler ("kctx_rt_scheduler" in the programs module
 * kctx_get_resources names; RESIDENT), FW_HOLD_FIRST_TASK the second kernel
 * the device runs after arming (HOST_ORDERED: acquire, then the first
 * task), FW_HOLD_COPY the next copy; anything else FW_NA. */
fw_status fw_simdev_hold_arm(fw_hold_point point, int device, kctx_context ctx, int *hold);
fw_status fw_simdev_hold_wait_reached(int hold, uint32_t timeout_ms);
fw_status fw_simdev_hold_release(int hold);
fw_status fw_simdev_hold_release_all(void);

/* Live objects and memory of the device (sim_object_counts_get,
 * sim_mem_stats). */
fw_status fw_simdev_live_counts(int device, fw_counts *c);
/* sim_malloc calls on the device so far. */
fw_status fw_simdev_device_allocs(int device, uint64_t *n);
/* Operations enqueued on any stream of the device so far (kernels, copies,
 * fills, host functions, event records and waits). */
fw_status fw_simdev_device_enqueues(int device, uint64_t *n);
/* Work nodes of graph g captured on each stream (sim_graph_stream_node_count). */
fw_status fw_simdev_graph_stream_nodes(fw_graph g, const fw_stream *streams, size_t n,
                                       size_t *counts);

#endif
