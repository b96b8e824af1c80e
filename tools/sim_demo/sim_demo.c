/*
 * sim_demo — a short tour of the simulated accelerator, using only its
 * runtime API (platform/sim/include/kctx/sim.h), the way a framework drives a device:
 *
 *  1. upload a kernel module from bytes in memory and look up k_vadd_f32;
 *  2. eager work on a stream: copy inputs in, launch the kernel on the
 *     AICore cores (block_dim 4), copy the result out, synchronise, verify;
 *  3. capture the same kind of work into a graph and instantiate it;
 *  4. replay it 100 times with fresh host input each time, then 100 times
 *     back to back with no host synchronisation in between, and verify;
 *  5. tear everything down and prove nothing is left on the device.
 *
 * Exit status 0 when every step passed, 1 otherwise. Usage:
 *     sim_demo [MODULE]   (default: the sim_test_kernels module of the build)
 *
 * `make demo` runs it; a later issue replaces it with `kctx demo`.
 */
#include <kctx/sim.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SIM_DEMO_MODULE_PATH
#error "SIM_DEMO_MODULE_PATH (the kernel module's path) comes from tools/sim_demo/CMakeLists.txt"
#endif

enum {
    DEMO_DEVICE = 0,
    DEMO_N = 4096,      /* floats per vector */
    DEMO_BLOCK_DIM = 4, /* AICore blocks per launch */
    DEMO_REPLAYS = 100, /* replays per replay phase */
    DEMO_MAX_MODULE = 64 << 20
};

/* Parameter block of k_vadd_f32 (examples/kernels/sim_test_kernels.c):
 * c[i] = a[i] + b[i] for i < n; device addresses travel as uint64_t. The
 * sim copies it at enqueue time, so a stack variable is fine. */
struct vadd_params {
    uint64_t a, b, c;
    uint32_t n;
    uint32_t pad;
};

/* Everything the demo acquires; 0 / NULL means "not acquired", so cleanup
 * can run from any point. */
struct demo {
    sim_module module;
    sim_function vadd;
    sim_stream stream;
    sim_event start, stop;
    sim_devptr a, b, c;
    sim_graph graph;
    sim_graph_exec exec;
    float *host_a, *host_b, *host_c; /* inputs and output on the host */
    float *expect;                   /* what device c must hold */
};

static void report_failure(const char *what, sim_status st, int line) {
    fprintf(stderr, "sim_demo: FAILED at line %d: %s -> %s (%s)\n  %s\n", line, what,
            sim_status_name(st), sim_status_string(st), sim_last_error_message());
}

/* Every sim call of the demo goes through SIM_TRY: on failure it says which
 * call, the status and the sim's detailed message, and the step fails. */
#define SIM_TRY(call)                             \
    do {                                          \
        sim_status st_ = (call);                  \
        if (st_ != SIM_OK) {                      \
            report_failure(#call, st_, __LINE__); \
            return -1;                            \
        }                                         \
    } while (0)

static void *dev(sim_devptr p) { return (void *)(uintptr_t)p; }

static int read_file(const char *path, void **bytes, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "sim_demo: cannot open module %s\n", path);
        return -1;
    }
    void *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len <= 0 || len > DEMO_MAX_MODULE || fseek(f, 0, SEEK_SET) != 0 ||
        !(buf = malloc((size_t)len)) || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "sim_demo: cannot read module %s (size %ld)\n", path, len);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    *bytes = buf;
    *size = (size_t)len;
    return 0;
}

static int check_result(const struct demo *d, const char *phase) {
    for (size_t i = 0; i < DEMO_N; i++) {
        if (d->host_c[i] != d->expect[i]) {
            fprintf(stderr, "sim_demo: FAILED: %s: c[%zu] = %g, expected %g\n", phase, i,
                    (double)d->host_c[i], (double)d->expect[i]);
            return -1;
        }
    }
    return 0;
}

static int show_device(void) {
    int count = 0;
    sim_device_props props = SIM_DEVICE_PROPS_INIT;
    SIM_TRY(sim_init());
    SIM_TRY(sim_device_count(&count));
    SIM_TRY(sim_set_device(DEMO_DEVICE));
    SIM_TRY(sim_device_get_props(DEMO_DEVICE, &props));
    printf("device   %d of %d: %s, %d AICore cores + %d AICPU, %llu MiB, max block_dim %u\n",
           DEMO_DEVICE, count, props.name, props.aicore_count, props.aicpu_count,
           (unsigned long long)(props.memory_capacity >> 20), props.max_block_dim);
    return 0;
}

/* A module is uploaded from bytes, like a real runtime's module-from-data
 * call; the sim does not keep the bytes. */
static int load_module(struct demo *d, const char *path) {
    void *bytes = NULL;
    size_t size = 0;
    if (read_file(path, &bytes, &size) != 0) return -1;
    sim_status st = sim_module_load(&d->module, bytes, size);
    free(bytes); /* the sim does not keep the bytes */
    if (st != SIM_OK) {
        report_failure("sim_module_load(&d->module, bytes, size)", st, __LINE__);
        return -1;
    }
    SIM_TRY(sim_module_get_function(&d->vadd, d->module, "k_vadd_f32"));
    printf("module   %s (%zu bytes): loaded, k_vadd_f32 found\n", path, size);
    return 0;
}

static int setup(struct demo *d) {
    const size_t bytes = DEMO_N * sizeof(float);
    SIM_TRY(sim_stream_create(&d->stream));
    SIM_TRY(sim_event_create(&d->start, SIM_EVENT_DEFAULT));
    SIM_TRY(sim_event_create(&d->stop, SIM_EVENT_DEFAULT));
    SIM_TRY(sim_malloc(&d->a, bytes));
    SIM_TRY(sim_malloc(&d->b, bytes));
    SIM_TRY(sim_malloc(&d->c, bytes));
    d->host_a = calloc(DEMO_N, sizeof(float));
    d->host_b = calloc(DEMO_N, sizeof(float));
    d->host_c = calloc(DEMO_N, sizeof(float));
    d->expect = calloc(DEMO_N, sizeof(float));
    if (!d->host_a || !d->host_b || !d->host_c || !d->expect) {
        fprintf(stderr, "sim_demo: out of host memory\n");
        return -1;
    }
    return 0;
}

/* Eager: c = a + b. All values are small integers, so float sums are exact
 * and the check can compare for equality. */
static int run_eager(struct demo *d) {
    const size_t bytes = DEMO_N * sizeof(float);
    for (size_t i = 0; i < DEMO_N; i++) {
        d->host_a[i] = (float)(i % 97);
        d->host_b[i] = (float)((i * 3) % 89);
        d->expect[i] = d->host_a[i] + d->host_b[i];
    }
    struct vadd_params p = {d->a, d->b, d->c, DEMO_N, 0};
    SIM_TRY(sim_memcpy_async(dev(d->a), d->host_a, bytes, SIM_COPY_HOST_TO_DEVICE, d->stream));
    SIM_TRY(sim_memcpy_async(dev(d->b), d->host_b, bytes, SIM_COPY_HOST_TO_DEVICE, d->stream));
    SIM_TRY(sim_launch_kernel(d->stream, d->vadd, SIM_TARGET_AICORE, DEMO_BLOCK_DIM, &p, sizeof p));
    SIM_TRY(sim_memcpy_async(d->host_c, dev(d->c), bytes, SIM_COPY_DEVICE_TO_HOST, d->stream));
    SIM_TRY(sim_stream_synchronize(d->stream));
    if (check_result(d, "eager") != 0) return -1;
    printf("eager    c = a + b, %d floats, block_dim %d on the AICore: ok\n", DEMO_N,
           DEMO_BLOCK_DIM);
    return 0;
}

/* Capture: copy host_a in, c = a + c (so each replay adds its input to the
 * running sum on the device), copy c out to host_c. Nothing executes while
 * capturing; the copies record the host pointers, which a replay reads and
 * writes when it runs. */
static int capture_graph(struct demo *d) {
    const size_t bytes = DEMO_N * sizeof(float);
    struct vadd_params p = {d->a, d->c, d->c, DEMO_N, 0};
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    uint64_t capture_id = 0;
    size_t nodes = 0;

    SIM_TRY(sim_stream_begin_capture(d->stream, SIM_CAPTURE_MODE_GLOBAL));
    SIM_TRY(sim_stream_get_capture_info(d->stream, &cs, &capture_id, NULL));
    if (cs != SIM_CAPTURE_STATUS_ACTIVE) {
        fprintf(stderr, "sim_demo: FAILED: capture status %d, expected active\n", (int)cs);
        return -1;
    }
    SIM_TRY(sim_memcpy_async(dev(d->a), d->host_a, bytes, SIM_COPY_HOST_TO_DEVICE, d->stream));
    SIM_TRY(sim_launch_kernel(d->stream, d->vadd, SIM_TARGET_AICORE, DEMO_BLOCK_DIM, &p, sizeof p));
    SIM_TRY(sim_memcpy_async(d->host_c, dev(d->c), bytes, SIM_COPY_DEVICE_TO_HOST, d->stream));
    SIM_TRY(sim_stream_end_capture(d->stream, &d->graph));
    SIM_TRY(sim_graph_node_count(d->graph, &nodes));
    SIM_TRY(sim_graph_instantiate(&d->exec, d->graph));
    printf("capture  copy in, kernel, copy out -> graph (capture id %llu, %zu nodes), "
           "instantiated\n",
           (unsigned long long)capture_id, nodes);
    return 0;
}

/* Replays with fresh input: the host buffer changes only while no replay is
 * pending (after a synchronise), because a replay reads it when it runs. */
static int replay_fresh_inputs(struct demo *d) {
    for (int r = 0; r < DEMO_REPLAYS; r++) {
        for (size_t i = 0; i < DEMO_N; i++) {
            d->host_a[i] = (float)((i + 13u * (unsigned)r) % 64);
            d->expect[i] += d->host_a[i];
        }
        SIM_TRY(sim_graph_launch(d->exec, d->stream));
        SIM_TRY(sim_stream_synchronize(d->stream));
        if (check_result(d, "replay with fresh input") != 0) {
            fprintf(stderr, "  (replay %d)\n", r);
            return -1;
        }
    }
    printf("replay   %d replays, fresh host input each (synchronised between): ok\n", DEMO_REPLAYS);
    return 0;
}

/* Back to back: DEMO_REPLAYS launches enqueued at once, one synchronise.
 * Launches of one executable graph never overlap, so each adds host_a once. */
static int replay_back_to_back(struct demo *d) {
    float ms = 0.0f;
    for (size_t i = 0; i < DEMO_N; i++) {
        d->host_a[i] = (float)(i % 5 + 1);
        d->expect[i] += (float)DEMO_REPLAYS * d->host_a[i];
    }
    SIM_TRY(sim_event_record(d->start, d->stream));
    for (int r = 0; r < DEMO_REPLAYS; r++) SIM_TRY(sim_graph_launch(d->exec, d->stream));
    SIM_TRY(sim_event_record(d->stop, d->stream));
    SIM_TRY(sim_stream_synchronize(d->stream));
    if (check_result(d, "back-to-back replays") != 0) return -1;
    SIM_TRY(sim_event_elapsed_ms(&ms, d->start, d->stop));
    printf("replay   %d replays back to back, no host sync: ok (%.3f ms, %.1f us per replay)\n",
           DEMO_REPLAYS, (double)ms, (double)ms * 1000.0 / DEMO_REPLAYS);
    return 0;
}

/* Releases whatever was acquired, in reverse order, from any point of the
 * demo. Returns 0 when every release succeeded. */
static int cleanup(struct demo *d) {
    int rc = 0;
    sim_status st;
#define RELEASE(call)                            \
    do {                                         \
        if ((st = (call)) != SIM_OK) {           \
            report_failure(#call, st, __LINE__); \
            rc = -1;                             \
        }                                        \
    } while (0)

    if (d->stream) {
        /* A step that failed mid-capture leaves the stream capturing: end the
         * capture (the graph, if any, is destroyed below). */
        sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
        if (sim_stream_get_capture_info(d->stream, &cs, NULL, NULL) == SIM_OK &&
            cs != SIM_CAPTURE_STATUS_NONE) {
            sim_graph g = 0;
            if (sim_stream_end_capture(d->stream, &g) == SIM_OK && !d->graph) d->graph = g;
        }
        /* Let pending work finish before its memory and module go away; a
         * stream error from a failed step has been reported already. */
        (void)sim_stream_synchronize(d->stream);
    }
    if (d->exec) RELEASE(sim_graph_exec_destroy(d->exec));
    if (d->graph) RELEASE(sim_graph_destroy(d->graph));
    if (d->stop) RELEASE(sim_event_destroy(d->stop));
    if (d->start) RELEASE(sim_event_destroy(d->start));
    if (d->stream) RELEASE(sim_stream_destroy(d->stream));
    if (d->c) RELEASE(sim_free(d->c));
    if (d->b) RELEASE(sim_free(d->b));
    if (d->a) RELEASE(sim_free(d->a));
    if (d->module) RELEASE(sim_module_unload(d->module));
#undef RELEASE
    free(d->host_a);
    free(d->host_b);
    free(d->host_c);
    free(d->expect);
    memset(d, 0, sizeof *d);
    return rc;
}

/* Nothing of the demo may be left on the device. */
static int check_device_empty(void) {
    uint64_t live = 0, live_bytes = 0;
    sim_object_counts oc = SIM_OBJECT_COUNTS_INIT;
    SIM_TRY(sim_mem_stats(DEMO_DEVICE, &live, &live_bytes));
    SIM_TRY(sim_object_counts_get(DEMO_DEVICE, &oc));
    uint64_t objects = oc.streams + oc.events + oc.modules + oc.graphs + oc.graph_execs;
    printf("cleanup  %llu live allocations (%llu bytes), %llu live objects, %llu hooks pending",
           (unsigned long long)live, (unsigned long long)live_bytes, (unsigned long long)objects,
           (unsigned long long)oc.hooks_pending);
    if (live != 0 || live_bytes != 0 || objects != 0 || oc.hooks_pending != 0) {
        printf(": LEAK\n");
        fprintf(stderr,
                "sim_demo: FAILED: streams %llu, events %llu, modules %llu, graphs %llu, "
                "graph execs %llu left on device %d\n",
                (unsigned long long)oc.streams, (unsigned long long)oc.events,
                (unsigned long long)oc.modules, (unsigned long long)oc.graphs,
                (unsigned long long)oc.graph_execs, DEMO_DEVICE);
        return -1;
    }
    printf(": ok\n");
    return 0;
}

int main(int argc, char **argv) {
    const char *module_path = argc > 1 ? argv[1] : SIM_DEMO_MODULE_PATH;
    struct demo d;
    memset(&d, 0, sizeof d);

    printf("sim_demo: the simulated accelerator's runtime API (platform/sim/include/kctx/sim.h)\n");
    int rc = show_device();
    if (rc == 0) rc = load_module(&d, module_path);
    if (rc == 0) rc = setup(&d);
    if (rc == 0) rc = run_eager(&d);
    if (rc == 0) rc = capture_graph(&d);
    if (rc == 0) rc = replay_fresh_inputs(&d);
    if (rc == 0) rc = replay_back_to_back(&d);
    if (cleanup(&d) != 0) rc = -1;
    if (check_device_empty() != 0) rc = -1;

    printf("sim_demo: %s\n", rc == 0 ? "PASS" : "FAIL");
    return rc == 0 ? 0 : 1;
}
