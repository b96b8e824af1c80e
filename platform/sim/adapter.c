/*
 * adapter.c — the sim platform for kctx: fills the platform tables
 * (include/kctx/platform.h) with the sim's runtime API (platform/sim/include/kctx/sim.h)
 * and registers them (kctx_sim_platform_entry, listed by the registry,
 * src/platforms/registry.c). The descriptor a kernel context receives has
 * no lifecycle member; the lifecycle table is registered beside it and only
 * program init looks it up.
 */
#include <kctx/image.h>
#include <kctx/platform.h>
#include <kctx/sim.h>

#include "rt_programs_elf.h" /* platform/common: the runtime's programs as a sim_elf module */

#include <pthread.h>
#include <stddef.h>

const kctx_platform_entry *kctx_sim_platform_entry(void);

/* ---- what the sim offers (its capabilities, docs/platforms.md) ----------
 * The execution strategies: the ONE place that says which the sim offers
 * and which is its default: both, RESIDENT by default (KCTX_STRATEGY or the
 * config's strategy field chooses HOST_ORDERED). */
#define SIM_STRATEGIES \
    (KCTX_STRATEGY_BIT(KCTX_STRATEGY_RESIDENT) | KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED))
#define SIM_DEFAULT_STRATEGY KCTX_STRATEGY_RESIDENT
/* The sim's kernel parameter-block limit (sim.h, sim_launch_kernel: every
 * device reports it as max_params_size). */
#define SIM_MAX_PARAMS_SIZE 4096u

static kctx_pclass a_classify(int st) {
    switch ((sim_status)st) {
    case SIM_OK:
        return KCTX_PCLASS_OK;
    case SIM_INVALID_VALUE:
    case SIM_INVALID_HANDLE:
    case SIM_INVALID_ADDRESS:
    case SIM_DOUBLE_FREE:
    case SIM_FOREIGN_FREE:
    case SIM_ILLEGAL_STATE:
        return KCTX_PCLASS_INVALID;
    /* A module the loader refuses and a kernel the module lacks (the only
     * SIM_NOT_FOUND, sim_module_get_function): the image's fault, which
     * prepare reports as INCOMPATIBLE_IMAGE (platform.h). */
    case SIM_INVALID_MODULE:
    case SIM_NOT_FOUND:
        return KCTX_PCLASS_BAD_MODULE;
    case SIM_OUT_OF_MEMORY:
        return KCTX_PCLASS_NO_MEMORY;
    case SIM_NOT_READY:
        return KCTX_PCLASS_NOT_READY;
    case SIM_DEVICE_LOST:
        return KCTX_PCLASS_DEVICE_LOST;
    case SIM_TIMEOUT:
        return KCTX_PCLASS_TIMEOUT;
    case SIM_KERNEL_ERROR:
        return KCTX_PCLASS_DEVICE_ERROR;
    case SIM_NOT_SUPPORTED:
        return KCTX_PCLASS_UNSUPPORTED;
    case SIM_CAPTURE_UNSUPPORTED:
    case SIM_CAPTURE_INVALIDATED:
    case SIM_CAPTURE_MERGE:
    case SIM_CAPTURE_UNMATCHED:
    case SIM_CAPTURE_UNJOINED:
    case SIM_CAPTURE_ISOLATION:
    case SIM_CAPTURED_EVENT:
    case SIM_CAPTURE_WRONG_THREAD:
        return KCTX_PCLASS_CAPTURE;
    default:
        return KCTX_PCLASS_OTHER;
    }
}

static const char *a_status_name(int st) { return sim_status_name((sim_status)st); }
static const char *a_last_message(void) { return sim_last_error_message(); }
static int a_device_count(int *n) { return sim_device_count(n); }
static int a_current_device(int *d) { return sim_get_device(d); }
static int a_device_epoch(int d, uint64_t *e) { return sim_device_epoch(d, e); }
static int a_device_info(int d, kctx_device_info *info) {
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    int st = sim_device_get_props(d, &p);
    if (st) return st;
    for (size_t i = 0; i < sizeof info->name; i++) {
        info->name[i] = p.name[i < sizeof p.name ? i : sizeof p.name - 1];
        if (!info->name[i]) break;
    }
    info->name[sizeof info->name - 1] = 0;
    info->aicore_count = (uint32_t)p.aicore_count;
    info->max_params_size = p.max_params_size;
    info->memory_capacity = p.memory_capacity;
    info->word_size = p.device_word_size;
    info->alloc_alignment = p.alloc_alignment;
    info->has_epoch = 1;
    info->can_check_ranges = 1;
    return SIM_OK;
}
static int a_stream_create(kctx_pstream *s) { return sim_stream_create(s); }
static int a_stream_destroy(kctx_pstream s) { return sim_stream_destroy(s); }
static int a_stream_sync(kctx_pstream s, uint32_t ms) {
    return sim_stream_synchronize_timeout(s, ms);
}
static int a_stream_query(kctx_pstream s) { return sim_stream_query(s); }
static int a_stream_info(kctx_pstream s, int *device, kctx_pcapture_status *status, uint64_t *id,
                         kctx_pgraph *graph) {
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    int st = sim_stream_get_info(s, device, &cs, id, graph);
    if (!st && status) *status = (kctx_pcapture_status)cs;
    return st;
}
static int a_event_create(kctx_pevent *e) { return sim_event_create(e, SIM_EVENT_DISABLE_TIMING); }
static int a_event_destroy(kctx_pevent e) { return sim_event_destroy(e); }
static int a_event_record(kctx_pevent e, kctx_pstream s) { return sim_event_record(e, s); }
static int a_stream_wait_event(kctx_pstream s, kctx_pevent e) {
    return sim_stream_wait_event(s, e);
}
static int a_mem_alloc(size_t size, kctx_pdevptr *p) { return sim_malloc(p, size); }
static int a_mem_free(kctx_pdevptr p) { return sim_free(p); }
static int a_memcpy_htod_async(kctx_pdevptr dst, const void *src, size_t size, kctx_pstream s) {
    return sim_memcpy_async((void *)(uintptr_t)dst, src, size, SIM_COPY_HOST_TO_DEVICE, s);
}
static int a_memset_async(kctx_pdevptr dst, uint8_t v, size_t size, kctx_pstream s) {
    return sim_memset_async(dst, v, size, s);
}
static int a_memcpy_dtoh_async(void *dst, kctx_pdevptr src, size_t size, kctx_pstream s) {
    return sim_memcpy_async(dst, (const void *)(uintptr_t)src, size, SIM_COPY_DEVICE_TO_HOST, s);
}
static int a_atomic_read_u32(kctx_pdevptr p, uint32_t *v) { return sim_atomic_read_u32(p, v); }
static int a_atomic_write_u32(kctx_pdevptr p, uint32_t v) { return sim_atomic_write_u32(p, v); }
static int a_mem_range_check(int device, kctx_pdevptr p, size_t size) {
    return sim_mem_lookup(device, p, size, NULL, NULL);
}
static int a_mem_free_counter(int device, const uint64_t **counter) {
    return sim_mem_free_counter(device, counter);
}
static int a_module_load(const void *bytes, size_t size, kctx_pmodule *m) {
    return sim_module_load(m, bytes, size);
}
static int a_module_unload(kctx_pmodule m) { return sim_module_unload(m); }
static int a_module_function(kctx_pmodule m, const char *name, kctx_pfunction *fn) {
    return sim_module_get_function(fn, m, name);
}
static int a_function_address(kctx_pfunction fn, uint64_t *addr) {
    return sim_function_address(fn, addr);
}
static int a_launch(kctx_pstream s, kctx_pfunction fn, kctx_ptarget target, uint32_t block_dim,
                    const void *params, size_t size) {
    return sim_launch_kernel(s, fn,
                             target == KCTX_PTARGET_AICPU ? SIM_TARGET_AICPU : SIM_TARGET_AICORE,
                             block_dim, params, size);
}
static int a_exchange_capture_mode(kctx_pcapture_mode *mode) {
    sim_capture_mode m = (sim_capture_mode)*mode;
    int st = sim_thread_exchange_capture_mode(&m);
    if (!st) *mode = (kctx_pcapture_mode)m;
    return st;
}
static int a_graph_attach_hook(kctx_pgraph g, kctx_phook_fn fn, void *user) {
    return sim_graph_attach_hook(g, fn, user);
}

static const kctx_platform_ops k_ops = {
    .size = sizeof(kctx_platform_ops),
    .version = KCTX_PLATFORM_VERSION,
    .classify = a_classify,
    .status_name = a_status_name,
    .last_message = a_last_message,
    .device_count = a_device_count,
    .current_device = a_current_device,
    .device_epoch = a_device_epoch,
    .device_info = a_device_info,
    .stream_create = a_stream_create,
    .stream_destroy = a_stream_destroy,
    .stream_sync = a_stream_sync,
    .stream_query = a_stream_query,
    .stream_info = a_stream_info,
    .event_create = a_event_create,
    .event_destroy = a_event_destroy,
    .event_record = a_event_record,
    .stream_wait_event = a_stream_wait_event,
    .mem_alloc = a_mem_alloc,
    .mem_free = a_mem_free,
    .memcpy_htod_async = a_memcpy_htod_async,
    .memset_async = a_memset_async,
    .memcpy_dtoh_async = a_memcpy_dtoh_async,
    .atomic_read_u32 = a_atomic_read_u32,
    .atomic_write_u32 = a_atomic_write_u32,
    .mem_range_check = a_mem_range_check,
    .mem_free_counter = a_mem_free_counter,
    .module_load = a_module_load,
    .module_unload = a_module_unload,
    .module_function = a_module_function,
    .function_address = a_function_address,
    .launch = a_launch,
    .exchange_capture_mode = a_exchange_capture_mode,
    .graph_attach_hook = a_graph_attach_hook,
    .bound_device = NULL, /* the sim has a thread-current device (current_device) */
};

static int l_init(void) { return sim_init(); }
static int l_finalize(void) { return sim_finalize(); }
static int l_set_device(int d) { return sim_set_device(d); }
static int l_reset_device(void) { return sim_device_reset(); }

static const kctx_platform_lifecycle_ops k_lifecycle = {
    .size = sizeof(kctx_platform_lifecycle_ops),
    .version = KCTX_PLATFORM_VERSION,
    .init = l_init,
    .finalize = l_finalize,
    .set_device = l_set_device,
    .reset_device = l_reset_device,
};

static kctx_platform_desc g_desc;
static kctx_platform_entry g_entry;
static pthread_once_t g_desc_once = PTHREAD_ONCE_INIT;

static void desc_init(void) {
    g_desc = (kctx_platform_desc){
        .size = sizeof(kctx_platform_desc),
        .version = KCTX_PLATFORM_VERSION,
        .name = "sim",
        .ops = &k_ops,
        .variant_kind = KCTX_VARIANT_SIM_ELF,
        .programs = kctx_rt_elf_programs,
        .programs_size = kctx_rt_elf_programs_size,
        .strategies = SIM_STRATEGIES,
        .default_strategy = SIM_DEFAULT_STRATEGY,
        .max_params_size = SIM_MAX_PARAMS_SIZE,
        .has_capture = 1,      /* CUDA-style stream capture into graphs */
        .has_null_stream = 0,  /* stream 0 names no stream */
        .has_epoch = 1,        /* sim_device_epoch */
        .can_check_ranges = 1, /* sim_mem_lookup */
    };
    g_entry = (kctx_platform_entry){
        .size = sizeof(kctx_platform_entry),
        .version = KCTX_PLATFORM_VERSION,
        .name = "sim",
        .available =
            NULL, /* in-process: always available (its devices come from KCTX_SIM_DEVICES) */
        .desc = &g_desc,
        .lifecycle = &k_lifecycle, /* program mode */
    };
}

const kctx_platform_entry *kctx_sim_platform_entry(void) {
    pthread_once(&g_desc_once, desc_init);
    return &g_entry;
}
