/*
 * cli_devices.c — the sim's device lister for `kctx platforms` (declared in
 * platform/sim/platform.cmake, CLI_DEVICES; built into the kctx tool): the
 * sim's devices through its own runtime API (sim.h), as a framework would,
 * with what only the sim can tell (AICPU count, memory in use, epoch).
 */
#include "json.h"

#include <kctx/sim.h>

#include <inttypes.h>
#include <stdio.h>

int kctx_cli_sim_devices(FILE *out, json_writer *jw);

int kctx_cli_sim_devices(FILE *out, json_writer *jw) {
    int count = 0, current = -1;
    sim_status st = sim_device_count(&count);
    if (st != SIM_OK) {
        fprintf(stderr, "kctx platforms: error: sim_device_count: %s (%s)\n", sim_status_name(st),
                sim_last_error_message());
        return -1;
    }
    sim_get_device(&current);
    if (jw) json_array_begin(jw, "devices");
    for (int d = 0; d < count; d++) {
        sim_device_props props = SIM_DEVICE_PROPS_INIT;
        uint64_t epoch = 0, allocs = 0, bytes = 0;
        st = sim_device_get_props(d, &props);
        if (st == SIM_OK) st = sim_device_epoch(d, &epoch);
        if (st == SIM_OK) st = sim_mem_stats(d, &allocs, &bytes);
        if (st != SIM_OK) {
            if (jw) json_array_end(jw);
            fprintf(stderr, "kctx platforms: error: sim device %d: %s (%s)\n", d,
                    sim_status_name(st), sim_last_error_message());
            return -1;
        }
        if (jw) {
            json_object_begin(jw, NULL);
            json_u64(jw, "index", (uint64_t)d);
            json_string(jw, "name", props.name);
            json_u64(jw, "aicore_count", (uint64_t)props.aicore_count);
            json_u64(jw, "aicpu_count", (uint64_t)props.aicpu_count);
            json_u64(jw, "memory_bytes", props.memory_capacity);
            json_u64(jw, "memory_in_use_bytes", bytes);
            json_u64(jw, "max_params_bytes", props.max_params_size);
            json_u64(jw, "max_block_dim", props.max_block_dim);
            json_u64(jw, "alloc_alignment", props.alloc_alignment);
            json_u64(jw, "device_word_bytes", props.device_word_size);
            json_u64(jw, "epoch", epoch);
            json_bool(jw, "current", d == current);
            json_object_end(jw);
        } else {
            fprintf(out, "  device %d  %s%s\n", d, props.name,
                    d == current ? "  (this thread's current device)" : "");
            fprintf(out, "    cores          1 AICPU, %d AICore\n", props.aicore_count);
            fprintf(out,
                    "    memory         %" PRIu64 " MiB (%" PRIu64 " bytes in use), "
                    "allocations aligned to %u bytes\n",
                    props.memory_capacity >> 20, bytes, props.alloc_alignment);
            fprintf(out,
                    "    kernels        parameter blocks up to %u bytes, up to %u blocks per "
                    "launch\n",
                    props.max_params_size, props.max_block_dim);
            fprintf(out, "    device epoch   %" PRIu64 " (resets so far)\n", epoch);
        }
    }
    if (jw) json_array_end(jw);
    return 0;
}
