/*
 * cli_devices.c — the sim's device lister for `kctx platforms` (declared in
 * platform/sim/platform.cmake, CLI_DEVICES; built into the kctx tool): the
 * sim's devices through its own runtime API (sim.h), as a framework would,
 * with what only the sim can tell (AICPU count, memory in use, epoch).
 * JSON goes through the writer the tool lends (platform/common/device_lister.h).
 */
#include "device_lister.h"

#include <kctx/sim.h>

#include <inttypes.h>
#include <stdio.h>

int kctx_cli_sim_devices(FILE *out, const kctx_lister_json *json);

int kctx_cli_sim_devices(FILE *out, const kctx_lister_json *json) {
    int count = 0, current = -1;
    sim_status st = sim_device_count(&count);
    if (st != SIM_OK) {
        fprintf(stderr, "kctx platforms: error: sim_device_count: %s (%s)\n", sim_status_name(st),
                sim_last_error_message());
        return -1;
    }
    sim_get_device(&current);
    if (json) json->array_begin(json->w, "devices");
    for (int d = 0; d < count; d++) {
        sim_device_props props = SIM_DEVICE_PROPS_INIT;
        uint64_t epoch = 0, allocs = 0, bytes = 0;
        st = sim_device_get_props(d, &props);
        if (st == SIM_OK) st = sim_device_epoch(d, &epoch);
        if (st == SIM_OK) st = sim_mem_stats(d, &allocs, &bytes);
        if (st != SIM_OK) {
            if (json) json->array_end(json->w);
            fprintf(stderr, "kctx platforms: error: sim device %d: %s (%s)\n", d,
                    sim_status_name(st), sim_last_error_message());
            return -1;
        }
        if (json) {
            json->object_begin(json->w, NULL);
            json->u64(json->w, "index", (uint64_t)d);
            json->string(json->w, "name", props.name);
            json->u64(json->w, "aicore_count", (uint64_t)props.aicore_count);
            json->u64(json->w, "aicpu_count", (uint64_t)props.aicpu_count);
            json->u64(json->w, "memory_bytes", props.memory_capacity);
            json->u64(json->w, "memory_in_use_bytes", bytes);
            json->u64(json->w, "max_params_bytes", props.max_params_size);
            json->u64(json->w, "max_block_dim", props.max_block_dim);
            json->u64(json->w, "alloc_alignment", props.alloc_alignment);
            json->u64(json->w, "device_word_bytes", props.device_word_size);
            json->u64(json->w, "epoch", epoch);
            json->boolean(json->w, "current", d == current);
            json->object_end(json->w);
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
    if (json) json->array_end(json->w);
    return 0;
}
