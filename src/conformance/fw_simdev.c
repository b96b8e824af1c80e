/*
 * fw_simdev.c — framework-driver hooks over the sim's runtime API
 * (fw_simdev.h): what the sim's driver and the drivers of the sim-based
 * driver doubles (CUDA, ACL) share.
 *
 * The scheduler hold (RESIDENT): the sim holds the nth execution of a
 * given kernel function. The runtime's scheduler is a function of the
 * device-programs module kctx loaded at init; kctx_get_resources names that
 * module, and the sim returns the same function handle for the same entry
 * name, so the hook looks the scheduler up by its entry name
 * ("kctx_rt_scheduler", platform/common/rt_programs_elf.c). On the AICPU
 * stream of a launch the scheduler runs right after the acquire step (K20),
 * so a held scheduler means its launch holds the context's launch guard.
 *
 * The first-task hold (HOST_ORDERED): a task kernel lives in a module the
 * callable's prepare loaded, which the framework cannot name; but a
 * host-ordered launch runs its kernels in a fixed order (acquire, the tasks,
 * finalize), so the hook holds the second kernel execution on the device
 * after arming, whatever its function.
 */
#include "fw_simdev.h"

#include <string.h>

fw_status fw_simdev_status(sim_status st) {
    switch (st) {
    case SIM_OK:
        return FW_OK;
    case SIM_TIMEOUT:
        return FW_TIMEOUT;
    case SIM_NOT_READY:
        return FW_NOT_READY;
    case SIM_KERNEL_ERROR:
        return FW_DEVICE_ERROR;
    case SIM_DEVICE_LOST:
        return FW_DEVICE_LOST;
    case SIM_INVALID_HANDLE:
        return FW_INVALID_HANDLE;
    case SIM_CAPTURE_ISOLATION:
        return FW_CAPTURE_ISOLATION;
    case SIM_CAPTURE_INVALIDATED:
        return FW_CAPTURE_INVALIDATED;
    case SIM_CAPTURE_UNJOINED:
        return FW_CAPTURE_UNJOINED;
    case SIM_CAPTURE_UNSUPPORTED:
        return FW_CAPTURE_UNSUPPORTED;
    default:
        return FW_ERROR;
    }
}

static fw_status map(sim_status st) { return fw_simdev_status(st); }

fw_status fw_simdev_hold_arm(fw_hold_point point, int device, kctx_context ctx, int *hold) {
    sim_hold h = SIM_HOLD_INIT;
    h.device = device;
    h.nth = 1;
    if (point == FW_HOLD_SCHEDULER) {
        kctx_resource_info info = KCTX_RESOURCE_INFO_INIT;
        if (kctx_get_resources(ctx, &info) != KCTX_OK || info.programs_module == 0) return FW_ERROR;
        sim_function fn = 0;
        sim_status st = sim_module_get_function(&fn, info.programs_module, "kctx_rt_scheduler");
        if (st) return map(st);
        h.kind = SIM_EXEC_KERNEL;
        h.fn = fn;
    } else if (point == FW_HOLD_FIRST_TASK) {
        /* a host-ordered launch runs kernels in this order: the acquire
         * step (AICPU), then its task kernels (AICore, in order), then the
         * finalize step: any kernel, the second one */
        h.kind = SIM_EXEC_KERNEL;
        h.nth = 2;
    } else if (point == FW_HOLD_COPY) {
        h.kind = SIM_EXEC_COPY;
    } else {
        return FW_NA;
    }
    return map(sim_hold_arm(&h, hold));
}

fw_status fw_simdev_hold_wait_reached(int hold, uint32_t ms) {
    return map(sim_hold_wait_reached(hold, ms));
}
fw_status fw_simdev_hold_release(int hold) { return map(sim_hold_release(hold)); }
fw_status fw_simdev_hold_release_all(void) { return map(sim_hold_release_all()); }

fw_status fw_simdev_live_counts(int device, fw_counts *c) {
    sim_object_counts oc = SIM_OBJECT_COUNTS_INIT;
    sim_status st = sim_object_counts_get(device, &oc);
    uint64_t n = 0, b = 0;
    if (!st) st = sim_mem_stats(device, &n, &b);
    if (st) return map(st);
    memset(c, 0, sizeof *c);
    c->streams = oc.streams;
    c->events = oc.events;
    c->modules = oc.modules;
    c->graphs = oc.graphs;
    c->graph_execs = oc.graph_execs;
    c->hooks_pending = oc.hooks_pending;
    c->allocations = n;
    c->bytes = b;
    return FW_OK;
}

fw_status fw_simdev_device_allocs(int device, uint64_t *n) {
    *n = sim_calls(SIM_OP_MALLOC, device);
    return FW_OK;
}

static const sim_op k_enqueue_ops[] = {SIM_OP_LAUNCH_KERNEL, SIM_OP_MEMCPY_ASYNC,
                                       SIM_OP_MEMSET_ASYNC,  SIM_OP_LAUNCH_HOST_FUNC,
                                       SIM_OP_EVENT_RECORD,  SIM_OP_STREAM_WAIT_EVENT};
#define N_ENQUEUE_OPS (sizeof k_enqueue_ops / sizeof k_enqueue_ops[0])

fw_status fw_simdev_device_enqueues(int device, uint64_t *n) {
    uint64_t sum = 0;
    for (size_t i = 0; i < N_ENQUEUE_OPS; i++) sum += sim_calls(k_enqueue_ops[i], device);
    *n = sum;
    return FW_OK;
}

fw_status fw_simdev_graph_stream_nodes(fw_graph g, const fw_stream *streams, size_t n,
                                       size_t *counts) {
    for (size_t i = 0; i < n; i++) {
        sim_status st = sim_graph_stream_node_count(g, streams[i], &counts[i]);
        if (st) return map(st);
    }
    return FW_OK;
}
