/*
 * trace_overhead — launch_overhead with tracing on vs off (K32), measured
 * side by side in one run: two kernel contexts (one claim per device, so
 * the traced one borrows device 1), the same empty callable, device
 * execution held so only the host path of kctx_launch is timed, A B / B A
 * interleaved, medians of repeats.
 *
 *   metric launch_overhead_trace value=<ns traced> unit=ns baseline=<ns untraced> ratio=<on/off> n=<R>
 */
#include "launch_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    DEFAULT_REPEATS = 21,
    QUICK_REPEATS = 3,
    WARMUP = 64
};
#define DEFAULT_N 500L
#define QUICK_N 300L

typedef struct side {
    int device;
    kctx_context ctx;
    sim_stream caller;
    sim_function acquire;
} side;

static void side_open(side *s, int device, const char *trace_path, uint32_t strategy) {
    s->device = device;
    lb_sim_check(sim_set_device(device), "sim_set_device (the framework picks the device)");
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = strategy;
    if (trace_path) {
        cfg.flags = KCTX_TRACE_ENABLE;
        cfg.trace_path = trace_path;
        cfg.trace_device_records = 1u << 16;
        cfg.trace_host_records = 1u << 18; /* every timed launch keeps its host span */
    }
    kb_kctx_check(kctx_context_create("sim", &s->ctx), "kctx_context_create");
    kb_kctx_check(kctx_kernel_init(s->ctx, &cfg), "kctx_kernel_init");
    lb_image noop = lb_image_noop("empty");
    kb_kctx_check(kctx_prepare(s->ctx, 1, noop.bytes, noop.size), "kctx_prepare");
    lb_image_free(&noop);
    lb_sim_check(sim_stream_create(&s->caller), "sim_stream_create");
    kctx_resource_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    kb_kctx_check(kctx_get_resources(s->ctx, &info), "kctx_get_resources");
    const char *acquire = lb_context_strategy(s->ctx) == KCTX_STRATEGY_HOST_ORDERED
                              ? "kctx_rt_ho_acquire"
                              : "kctx_rt_acquire";
    lb_sim_check(sim_module_get_function(&s->acquire, info.programs_module, acquire),
                 "sim_module_get_function(acquire program)");
    for (int i = 0; i < WARMUP; i++)
        kb_kctx_check(kctx_launch(s->ctx, 1, NULL, 0, s->caller), "kctx_launch");
    lb_sim_check(sim_stream_synchronize(s->caller), "sim_stream_synchronize");
}

static double side_run(side *s, long n) {
    lb_sim_check(sim_set_device(s->device), "sim_set_device");
    int id = lb_hold_arm(s->device, s->acquire);
    kb_kctx_check(kctx_launch(s->ctx, 1, NULL, 0, s->caller), "kctx_launch (hold)");
    lb_sim_check(sim_hold_wait_reached(id, 10000), "sim_hold_wait_reached");
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++)
        kb_kctx_check(kctx_launch(s->ctx, 1, NULL, 0, s->caller), "kctx_launch");
    uint64_t t1 = kb_now_ns();
    lb_sim_check(sim_hold_release(id), "sim_hold_release");
    lb_sim_check(sim_stream_synchronize(s->caller), "sim_stream_synchronize");
    return (double)(t1 - t0) / (double)n;
}

static void side_close(side *s) {
    lb_sim_check(sim_set_device(s->device), "sim_set_device");
    lb_sim_check(sim_stream_destroy(s->caller), "sim_stream_destroy");
    kb_kctx_close(s->ctx);
}

int main(int argc, char **argv) {
    kb_options opt;
    kb_set_program_name("kctx_bench_trace_overhead");
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    int ndev = 0;
    lb_sim_check(sim_device_count(&ndev), "sim_device_count");
    if (ndev < 2) {
        fprintf(stderr, "trace_overhead: needs 2 sim devices (KCTX_SIM_DEVICES)\n");
        return EXIT_FAILURE;
    }
    char path[128];
    snprintf(path, sizeof path, "/tmp/kctx-bench-trace-%d.json", (int)getpid());
    side off, on;
    side_open(&off, 0, NULL, (uint32_t)opt.strategy);
    side_open(&on, 1, path, (uint32_t)opt.strategy);
    const int R = opt.repeats;
    double *a = kb_doubles(R), *b = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        if (r % 2 == 0) {
            a[r] = side_run(&on, opt.n);
            b[r] = side_run(&off, opt.n);
        } else {
            b[r] = side_run(&off, opt.n);
            a[r] = side_run(&on, opt.n);
        }
        kb_progress("repeat %d/%d: traced %.0f ns, untraced %.0f ns", r + 1, R, a[r], b[r]);
    }
    side_close(&on);
    side_close(&off);
    unlink(path);
    int bad = kb_metric_print_compared("launch_overhead_trace", kb_median(a, (size_t)R), "ns", 1,
                                       kb_median(b, (size_t)R), R) != 0;
    free(a);
    free(b);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
