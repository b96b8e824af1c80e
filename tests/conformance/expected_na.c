/*
 * expected_na.c — the probes each platform is expected NOT to run, per
 * execution strategy, with the reason (as IREE's HAL conformance tests keep
 * a per-backend list of the tests a driver cannot run). docs/conformance.md
 * shows the same list for readers.
 *
 * Only what the platform cannot express belongs here — never a probe that
 * fails, and never a capability the platform already declares it lacks: a
 * platform without capture makes every PROBE_NEEDS_CAPTURE probe N/A by
 * itself (suite.c), with no entry. The runner fails an N/A that is not
 * listed (a driver hook went missing) and a listed probe that ran (the list
 * went stale).
 *
 * The sim expresses every probe under RESIDENT. Under HOST_ORDERED one
 * probe cannot run: the timeout of prepare's upload (K17), since a
 * host-ordered prepare uploads nothing. No other probe needed an entry: the
 * probes that hold a launch hold its first task kernel instead of the
 * resident scheduler (fw.h), the probes whose expectations differ (which run
 * of an overlap completes) follow the strategy, and the probes that count
 * prepare's device work use a control that exists under both (support.h,
 * probes_resources.c).
 *
 * OpenCL (HOST_ORDERED only, no capture: every capture probe is N/A by the
 * capability rule) cannot express three more: the upload timeout (as the
 * sim under HOST_ORDERED), a fatal device with an owner reset, and the
 * device lifecycle counters.
 */
#include "suite.h"

#include <string.h>

typedef struct expected_na {
    const char *platform;
    kctx_strategy strategy; /* KCTX_STRATEGY_DEFAULT: under every strategy */
    const char *probe;
    const char *reason;
} expected_na;

static const expected_na k_expected[] = {
    {"sim", KCTX_STRATEGY_HOST_ORDERED, "prepare_upload_timeout_poisons_and_close_waits",
     "under HOST_ORDERED prepare uploads nothing to the device (the tasks stay on the host): "
     "there is no upload whose wait could time out"},
    {"opencl", KCTX_STRATEGY_DEFAULT, "prepare_upload_timeout_poisons_and_close_waits",
     "OpenCL runs HOST_ORDERED only, whose prepare uploads nothing to the device: there is no "
     "upload whose wait could time out"},
    {"opencl", KCTX_STRATEGY_DEFAULT, "fatal_device_quarantines_until_owner_reset",
     "OpenCL has no way to make a device lost on purpose, nor an owner's reset (no device "
     "epoch: quarantine is terminal there, docs/opencl.md)"},
    {"opencl", KCTX_STRATEGY_DEFAULT, "kernel_lifecycle_makes_no_lifecycle_calls",
     "OpenCL has no device lifecycle calls (no init, set, reset or finalize of a device) for a "
     "kernel context to make or for the framework to count; the opencl platform registers no "
     "lifecycle table"},
    {"cuda", KCTX_STRATEGY_HOST_ORDERED, "prepare_upload_timeout_poisons_and_close_waits",
     "under HOST_ORDERED prepare uploads nothing to the device (the tasks stay on the host): "
     "there is no upload whose wait could time out"},
    {"cuda", KCTX_STRATEGY_DEFAULT, "fatal_device_quarantines_until_owner_reset",
     "CUDA has no device epoch kctx can trust (has_epoch 0): a quarantined context stays "
     "quarantined for the process (K30, terminal, docs/cuda.md), so the owner-reset recovery "
     "this probe ends with cannot happen"},
    {"cuda", KCTX_STRATEGY_DEFAULT, "fatal_device_graphs_gone_after_owner_reset",
     "CUDA has no device epoch kctx can trust (has_epoch 0): close after an owner reset cannot "
     "tell that the handles are gone (K36 needs the epoch); quarantine is terminal"},
    /* The real CUDA driver (framework driver "cuda-driver", fw_cuda.c) has
     * none of the test hooks the double borrows from the sim; the double
     * runs these probes in CI (conformance_*_cuda). */
    {"cuda-driver", KCTX_STRATEGY_DEFAULT, "prepare_beside_launches_in_flight",
     "a real CUDA driver cannot hold a kernel in flight (no hold hook; the driver double runs it)"},
    {"cuda-driver", KCTX_STRATEGY_DEFAULT, "unordered_replays_detected_as_concurrent_launch",
     "a real CUDA driver cannot hold a replay in flight to force the overlap (no hold hook; the "
     "driver double runs it)"},
    {"cuda-driver", KCTX_STRATEGY_DEFAULT, "two_copies_of_one_graph_detected_as_concurrent_launch",
     "a real CUDA driver cannot hold a replay in flight to force the overlap (no hold hook; the "
     "driver double runs it)"},
    {"cuda-driver", KCTX_STRATEGY_DEFAULT, "concurrent_launch_poison_stops_graphs_at_once",
     "a real CUDA driver cannot hold a replay in flight (no hold hook; the driver double runs it)"},
    {"cuda-driver", KCTX_STRATEGY_DEFAULT, "kernel_lifecycle_makes_no_lifecycle_calls",
     "a real CUDA driver counts no calls; the adapter never resolves a lifecycle entry (K4 by "
     "construction) and kctx_cuda_driver_calls reports 0 for each (tests/cuda, gpu-check.sh)"},
    {"cuda-driver", KCTX_STRATEGY_DEFAULT, "init_fault_sweep",
     "a real CUDA driver reports no live-object counts to prove each rollback leak-free (the "
     "driver double runs it)"},
    {"cuda-driver", KCTX_STRATEGY_DEFAULT, "prepare_fault_sweep",
     "a real CUDA driver reports no live-object counts (the driver double runs it)"},
    {"cuda-driver", KCTX_STRATEGY_DEFAULT, "close_fault_sweep",
     "a real CUDA driver reports no live-object counts (the driver double runs it)"},
    {NULL, KCTX_STRATEGY_DEFAULT, NULL, NULL},
};

const char *suite_expected_na(const char *platform, kctx_strategy strategy, const char *name) {
    for (const expected_na *e = k_expected; e->platform; e++)
        if (strcmp(e->platform, platform) == 0 && strcmp(e->probe, name) == 0 &&
            (e->strategy == KCTX_STRATEGY_DEFAULT || e->strategy == strategy))
            return e->reason;
    return NULL;
}
