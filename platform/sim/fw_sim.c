/*
 * fw_sim.c — the framework driver for the sim: the suite's framework side
 * through the sim's own runtime API (platform/sim/include/kctx/sim.h), the way a
 * framework calls its device runtime. Every hook is available.
 *
 * The holds, the live counts, the device call counters and the graph
 * inspection are the suite's hooks over the sim's API
 * (src/conformance/fw_simdev.h, which says how the holds find their
 * point), shared with the drivers of the sim-based driver doubles.
 *
 * The graph memory pool is the suite's framework arena (fw_pool.c) over
 * sim_malloc: the sim offers no stream-ordered allocation, and sim_malloc
 * is refused while a capture restricts the thread. graph_stream_nodes is
 * the sim's graph inspection (sim_graph_stream_node_count).
 */
#include "fw.h"
#include "fw_simdev.h"

#include <kctx/sim.h>

#include <pthread.h>

#include <stdio.h>

static fw_status map(sim_status st) { return fw_simdev_status(st); }

static const char *s_last_error(void) { return sim_last_error_message(); }

static fw_status s_current_device(int *d) { return map(sim_get_device(d)); }
static fw_status s_set_device(int d) { return map(sim_set_device(d)); }
static fw_status s_stream_create(fw_stream *s) { return map(sim_stream_create(s)); }
static fw_status s_stream_destroy(fw_stream s) { return map(sim_stream_destroy(s)); }
static fw_status s_stream_sync(fw_stream s, uint32_t ms) {
    return map(sim_stream_synchronize_timeout(s, ms));
}
static fw_status s_stream_query(fw_stream s) { return map(sim_stream_query(s)); }

static fw_status s_mem_alloc(size_t n, fw_devptr *p) { return map(sim_malloc(p, n)); }
static fw_status s_mem_free(fw_devptr p) { return map(sim_free(p)); }
static fw_status s_upload(fw_devptr dst, const void *src, size_t n) {
    return map(sim_memcpy((void *)(uintptr_t)dst, src, n, SIM_COPY_HOST_TO_DEVICE));
}
static fw_status s_download(void *dst, fw_devptr src, size_t n) {
    return map(sim_memcpy(dst, (const void *)(uintptr_t)src, n, SIM_COPY_DEVICE_TO_HOST));
}
static fw_status s_fill_async(fw_devptr dst, uint8_t v, size_t n, fw_stream s) {
    return map(sim_memset_async(dst, v, n, s));
}
static fw_status s_copy_async(fw_devptr dst, fw_devptr src, size_t n, fw_stream s) {
    return map(sim_memcpy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n,
                                SIM_COPY_DEVICE_TO_DEVICE, s));
}

static fw_status s_event_create(fw_event *e) {
    return map(sim_event_create(e, SIM_EVENT_DISABLE_TIMING));
}
static fw_status s_event_destroy(fw_event e) { return map(sim_event_destroy(e)); }
static fw_status s_event_record(fw_event e, fw_stream s) { return map(sim_event_record(e, s)); }
static fw_status s_stream_wait_event(fw_stream s, fw_event e) {
    return map(sim_stream_wait_event(s, e));
}

static fw_status s_begin_capture(fw_stream s) {
    return map(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_GLOBAL));
}
_Static_assert((int)FW_CAPTURE_GLOBAL == (int)SIM_CAPTURE_MODE_GLOBAL &&
                   (int)FW_CAPTURE_THREAD_LOCAL == (int)SIM_CAPTURE_MODE_THREAD_LOCAL &&
                   (int)FW_CAPTURE_RELAXED == (int)SIM_CAPTURE_MODE_RELAXED,
               "fw and sim capture modes agree");
static fw_status s_begin_capture_mode(fw_stream s, fw_capture_mode mode) {
    return map(sim_stream_begin_capture(s, (sim_capture_mode)mode));
}
static fw_status s_exchange_capture_mode(fw_capture_mode *mode) {
    sim_capture_mode m = (sim_capture_mode)*mode;
    sim_status st = sim_thread_exchange_capture_mode(&m);
    if (st == SIM_OK) *mode = (fw_capture_mode)m;
    return map(st);
}
static fw_status s_end_capture(fw_stream s, fw_graph *g) {
    return map(sim_stream_end_capture(s, g));
}
static fw_status s_capture_status(fw_stream s, int *capturing) {
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    sim_status st = sim_stream_get_capture_info(s, &cs, NULL, NULL);
    if (st == SIM_OK) *capturing = cs != SIM_CAPTURE_STATUS_NONE;
    return map(st);
}
static fw_status s_graph_instantiate(fw_graph g, fw_exec *x) {
    return map(sim_graph_instantiate(x, g));
}
static fw_status s_graph_launch(fw_exec x, fw_stream s) { return map(sim_graph_launch(x, s)); }
static fw_status s_graph_destroy(fw_graph g) { return map(sim_graph_destroy(g)); }
static fw_status s_exec_destroy(fw_exec x) { return map(sim_graph_exec_destroy(x)); }
static fw_status s_graph_node_count(fw_graph g, size_t *n) {
    return map(sim_graph_node_count(g, n));
}

/* The graph memory pool: the sim has no stream-ordered allocation (and
 * sim_malloc is refused while a capture restricts the thread), so the
 * pool is the framework-side arena (fw_pool.c) over sim_malloc. */
static fw_status s_pool_create(size_t bytes, fw_pool *pool) {
    return fw_arena_create(s_mem_alloc, s_mem_free, bytes, pool);
}

static fw_status s_make_fatal(int device) { return map(sim_device_make_fatal(device)); }
/* A fill that fails on the device: the sim's execution failure
 * (sim_exec_fail_arm), with the status a failed kernel gives. */
static fw_status s_fill_fault_arm(int device, int *fault) {
    sim_hold where = SIM_HOLD_INIT;
    where.kind = SIM_EXEC_FILL;
    where.device = device;
    where.nth = 1;
    return map(sim_exec_fail_arm(&where, SIM_KERNEL_ERROR, fault));
}
static fw_status s_fill_fault_hits(int fault, uint64_t *hits) {
    return map(sim_exec_fail_hits(fault, hits));
}
static fw_status s_fill_fault_clear(void) { return map(sim_exec_fail_clear_all()); }
/* The sim resets the calling thread's current device (CUDA choice): make
 * `device` current for the reset, then restore. */
static fw_status s_owner_reset(int device) {
    int cur = 0;
    sim_status st = sim_get_device(&cur);
    if (!st && cur != device) st = sim_set_device(device);
    if (!st) st = sim_device_reset();
    if (cur != device) {
        sim_status rs = sim_set_device(cur);
        if (!st) st = rs;
    }
    return map(st);
}

/* ---- device lifecycle counters (K4) and device information ---- */

static const sim_lifecycle_op k_sim_ops[SIM_LIFECYCLE_COUNT_] = {
    SIM_LIFECYCLE_INIT, SIM_LIFECYCLE_FINALIZE, SIM_LIFECYCLE_SET_DEVICE,
    SIM_LIFECYCLE_RESET_DEVICE};

static int s_lc_counts(int device, uint64_t *out) {
    for (int i = 0; i < SIM_LIFECYCLE_COUNT_; i++)
        if (sim_lifecycle_count(device, k_sim_ops[i], &out[i]) != SIM_OK) return -1;
    return 0;
}

/* One call of each lifecycle op, as the device's owner. Finalize resets
 * every device, so it runs only when nothing lives (the probe calls this
 * before it creates anything); set device comes last to leave `device`
 * current. */
static int s_lc_prove(int device, char *why, size_t why_size) {
    sim_status st = sim_init();
    const char *step = "sim_init";
    if (st == SIM_OK) step = "sim_set_device", st = sim_set_device(device);
    if (st == SIM_OK) step = "sim_device_reset", st = sim_device_reset();
    if (st == SIM_OK) step = "sim_finalize", st = sim_finalize();
    if (st == SIM_OK) step = "sim_set_device", st = sim_set_device(device);
    if (st == SIM_OK) return 0;
    snprintf(why, why_size, "%s: %s (%s)", step, sim_status_name(st), sim_last_error_message());
    return -1;
}

static const fw_lifecycle k_sim_lifecycle = {
    SIM_LIFECYCLE_COUNT_,
    {"init", "finalize", "set device", "reset device"},
    s_lc_counts,
    s_lc_prove,
};

static fw_status s_device_info(int device, char *name, size_t name_size, unsigned *cores) {
    sim_device_props props = SIM_DEVICE_PROPS_INIT;
    sim_status st = sim_device_get_props(device, &props);
    if (st) return map(st);
    snprintf(name, name_size, "%s", props.name);
    *cores = (unsigned)props.aicore_count;
    return FW_OK;
}

static int s_device_count(void) {
    int n = 0;
    return sim_device_count(&n) == SIM_OK ? n : 0;
}

static const fw_driver k_sim_driver = {
    .name = "sim",
    .platform = "sim",
    .last_error = s_last_error,
    .current_device = s_current_device,
    .set_device = s_set_device,
    .stream_create = s_stream_create,
    .stream_destroy = s_stream_destroy,
    .stream_sync = s_stream_sync,
    .stream_query = s_stream_query,
    .mem_alloc = s_mem_alloc,
    .mem_free = s_mem_free,
    .upload = s_upload,
    .download = s_download,
    .fill_async = s_fill_async,
    .copy_async = s_copy_async,
    .event_create = s_event_create,
    .event_destroy = s_event_destroy,
    .event_record = s_event_record,
    .stream_wait_event = s_stream_wait_event,
    .begin_capture = s_begin_capture,
    .end_capture = s_end_capture,
    .capture_status = s_capture_status,
    .graph_instantiate = s_graph_instantiate,
    .graph_launch = s_graph_launch,
    .graph_destroy = s_graph_destroy,
    .exec_destroy = s_exec_destroy,
    .graph_node_count = s_graph_node_count,
    .pool_create = s_pool_create,
    .pool_alloc = fw_arena_alloc,
    .pool_free = fw_arena_free,
    .pool_destroy = fw_arena_destroy,
    .pool_last_error = fw_arena_last_error,
    .graph_stream_nodes = fw_simdev_graph_stream_nodes,
    .hold_arm = fw_simdev_hold_arm,
    .hold_wait_reached = fw_simdev_hold_wait_reached,
    .hold_release = fw_simdev_hold_release,
    .hold_release_all = fw_simdev_hold_release_all,
    .fill_fault_arm = s_fill_fault_arm,
    .fill_fault_hits = s_fill_fault_hits,
    .fill_fault_clear = s_fill_fault_clear,
    .make_fatal = s_make_fatal,
    .owner_reset = s_owner_reset,
    .live_counts = fw_simdev_live_counts,
    .device_allocs = fw_simdev_device_allocs,
    .device_enqueues = fw_simdev_device_enqueues,
    .lifecycle = &k_sim_lifecycle,
    .device_info = s_device_info,
    .device_count = s_device_count,
    .begin_capture_mode = s_begin_capture_mode,
    .exchange_capture_mode = s_exchange_capture_mode,
};

/* Declared with the platform (platform.cmake, FW_DRIVERS). */
const fw_driver *fw_sim_driver(void);
const fw_driver *fw_sim_driver_without_capture(void);

const fw_driver *fw_sim_driver(void) { return &k_sim_driver; }

/* The sim's driver without its CAPTURE group: the framework side of a
 * platform without capture (OpenCL), to prove on the sim that the suite's
 * eager probes, the demo's eager serving and the capability rule work. */
static fw_driver g_sim_nocapture;
static pthread_once_t g_sim_nocapture_once = PTHREAD_ONCE_INIT;

static void make_sim_nocapture(void) {
    g_sim_nocapture = k_sim_driver;
    g_sim_nocapture.name = "sim-nocapture";
    g_sim_nocapture.begin_capture = NULL;
    g_sim_nocapture.end_capture = NULL;
    g_sim_nocapture.capture_status = NULL;
    g_sim_nocapture.graph_instantiate = NULL;
    g_sim_nocapture.graph_launch = NULL;
    g_sim_nocapture.graph_destroy = NULL;
    g_sim_nocapture.exec_destroy = NULL;
    g_sim_nocapture.graph_node_count = NULL;
    g_sim_nocapture.graph_stream_nodes = NULL;
    g_sim_nocapture.begin_capture_mode = NULL;
    g_sim_nocapture.exchange_capture_mode = NULL;
}

const fw_driver *fw_sim_driver_without_capture(void) {
    pthread_once(&g_sim_nocapture_once, make_sim_nocapture);
    return &g_sim_nocapture;
}
