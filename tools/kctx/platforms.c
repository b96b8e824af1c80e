/*
 * platforms.c — the platforms of libkctx's registry and what the tool can
 * do on each (see platforms.h). The sim's devices are described through its
 * own runtime API (sim.h), as a framework would; OpenCL's through the
 * conformance suite's OpenCL framework driver (the devices it can lend).
 */
#include "platforms.h"

#include <kctx/kctx.h>
#include <kctx/sim.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* sim                                                                 */

static int sim_devices(FILE *out, json_writer *jw) {
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

/* ------------------------------------------------------------------ */
/* opencl                                                              */

#ifdef KCTX_SUITE_OPENCL
/* The devices the OpenCL framework driver lends (fine-grained SVM with
 * atomics, on every OpenCL platform of this machine). */
static int opencl_devices(FILE *out, json_writer *jw) {
    const fw_driver *fw = fw_opencl_driver();
    int n = fw_opencl_device_count();
    if (jw) json_array_begin(jw, "devices");
    for (int d = 0; d < n; d++) {
        char name[64] = "";
        unsigned cores = 0;
        if (fw->device_info(d, name, sizeof name, &cores) != FW_OK) {
            if (jw) json_array_end(jw);
            fprintf(stderr, "kctx platforms: error: OpenCL device %d: %s\n", d, fw->last_error());
            return -1;
        }
        if (jw) {
            json_object_begin(jw, NULL);
            json_u64(jw, "index", (uint64_t)d);
            json_string(jw, "name", name);
            json_u64(jw, "aicore_count", (uint64_t)cores);
            json_object_end(jw);
        } else {
            fprintf(out, "  device %d  %s\n    compute units  %u\n", d, name, cores);
        }
    }
    if (jw) json_array_end(jw);
    if (!jw && n == 0)
        fprintf(out, "  no device: %s\n",
                fw->current_device(&(int){0}) == FW_OK ? "none found" : fw->last_error());
    return 0;
}
#endif

#ifdef KCTX_FW_CUDA
/* cuda: the devices through the suite's CUDA framework driver (the driver
 * KCTX_CUDA_DRIVER names, as the platform loads it). */
static int cuda_devices(FILE *out, json_writer *jw) {
    const fw_driver *fw = fw_cuda_driver();
    int n = fw_cuda_device_count();
    if (jw) json_array_begin(jw, "devices");
    for (int d = 0; d < n; d++) {
        char name[128] = "";
        unsigned sms = 0;
        if (fw->device_info(d, name, sizeof name, &sms) != FW_OK) {
            if (jw) json_array_end(jw);
            fprintf(stderr, "kctx platforms: error: CUDA device %d: %s\n", d, fw->last_error());
            return -1;
        }
        if (jw) {
            json_object_begin(jw, NULL);
            json_u64(jw, "index", (uint64_t)d);
            json_string(jw, "name", name);
            json_u64(jw, "aicore_count", (uint64_t)sms);
            json_object_end(jw);
        } else {
            fprintf(out, "  device %d  %s\n    multiprocessors %u\n", d, name, sms);
        }
    }
    if (jw) json_array_end(jw);
    if (!jw && n == 0) fprintf(out, "  no device\n");
    return 0;
}
#endif

/* ------------------------------------------------------------------ */
/* the catalogue: the registry's platforms, with the tool's extras       */

/* What this tool can do per platform name. */
static const tool_platform k_extras[] = {
    {"sim", fw_sim_driver, sim_devices},
#ifdef KCTX_SUITE_OPENCL
    {"opencl", fw_opencl_driver, opencl_devices},
#endif
#ifdef KCTX_FW_CUDA
    {"cuda", fw_cuda_driver, cuda_devices},
#endif
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
        tool_platform p = {name, NULL, NULL};
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
