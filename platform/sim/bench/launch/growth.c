/*
 * growth — how kctx's costs grow (issue 17): series of points, one metric
 * line per point, on the sim.
 *
 * Every line names its series in the metric name and carries the point's x:
 *
 *   metric growth_<series> value=<v> unit=<u> x=<x> n=<repeats>
 *
 * (the `kctx bench` parser needs only `metric <name> value=... unit=...`;
 * x is an extra key=value field). Values are medians of the repeats. The
 * series (scripts/plot_growth.py fits and draws them, docs/benchmarks.md):
 *
 *  - launch_sync_vs_tasks (ns, x = tasks per callable, 1..4096): one
 *    kctx_launch + sim_stream_synchronize of a callable of x independent
 *    tasks, each k_add_u32 adding 1 to its own counter; after the series
 *    every counter must equal the number of launches of its callable;
 *  - launch_vs_args (ns, x = tensor arguments, 0..64): host time of one
 *    kctx_launch, device execution held (as in launch_overhead) so only the
 *    host path is timed; x tensor parameters, each its own allocation; x = 0
 *    is one task of k_noop, otherwise one k_add_u32 task counts launches in
 *    argument 0 (checked after the series);
 *  - replay_vs_graphs (ns, x = graphs sharing one context, 1..256): x
 *    graphs, each captured from one kctx_launch of a one-task counting
 *    callable on its own counter, replayed in turn (sim_graph_launch), one
 *    synchronise per 256 replays; ns per replay; every counter checked;
 *  - prepare_vs_size (ns, x = image bytes): kctx_prepare of an image of x
 *    bytes: the empty callable (one k_noop task, the sim kernel module as its
 *    SIM_ELF variant) padded with an OpenCL C variant of pseudo-random bytes
 *    the sim never loads (distinct per prepare: no dedup). The smallest image
 *    holds the sim kernel module, so sizes below it are not measured (said on
 *    stderr); the smallest image is its own point. Each prepared callable is
 *    launched once (checked);
 *  - prepare_vs_callables (ns, x = callables already prepared, 1..8192):
 *    kctx_prepare of the next distinct empty callable in one context; the
 *    median of the prepares made with x .. x + w - 1 already prepared (w =
 *    min(x, 16)), median over repeats (a fresh context each);
 *  - launch_vs_callables (ns, x = callables prepared): host time of one
 *    kctx_launch of the id prepared last (device held, as launch_vs_args),
 *    measured in the same contexts as prepare_vs_callables right after the
 *    x-th prepare, 100 launches a point;
 *  - memory_device_vs_callables (B, x = callables prepared): the sim's live
 *    device bytes (sim_mem_stats) of the context over the reading before it
 *    was created;
 *  - memory_host_vs_callables (B): the process's heap bytes in use
 *    (mallinfo2, all arenas: in use + mmapped) over the same reading —
 *    libkctx, the sim and the loader's records of the modules loaded; not
 *    measured where mallinfo2 is unavailable or reads 0 (ASan).
 *  - memory_host_other_vs_callables (B): the same less the images kctx keeps
 *    (one copy per distinct upload, each its size rounded up to 8: the
 *    "retained binary"), i.e. what does not follow the image's size.
 *
 * --quick: fewer and smaller points, 3 repeats (a few seconds).
 * --only SERIES (repeatable): measure only the series named (prefix match on
 * the series name, e.g. --only prepare).
 */
#include "launch_common.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DEFAULT_REPEATS = 7,
    QUICK_REPEATS = 3,
    MAX_ARGS = 64,
    MAX_GRAPHS = 256,
    REPLAYS = 256 /* replays per measurement */
};

static kb_options g_opt;
static const char *g_only[8];
static int g_nonly;

static int wanted(const char *series) {
    if (g_nonly == 0) return 1;
    for (int i = 0; i < g_nonly; i++)
        if (strncmp(series, g_only[i], strlen(g_only[i])) == 0) return 1;
    return 0;
}

/* One point: `metric growth_<series> value=<v> unit=<u> x=<x> n=<R>`. */
static int point(const char *series, double v, const char *unit, double x, int n) {
    char vb[64], xb[64];
    if (!(v == v) || !(x == x)) {
        kb_error("growth_%s: value or x not finite", series);
        return 1;
    }
    printf("metric growth_%s value=%s unit=%s x=%s n=%d\n", series,
           kb_format_number(vb, sizeof vb, v), unit, kb_format_number(xb, sizeof xb, x), n);
    fflush(stdout);
    return 0;
}

/* ---- images --------------------------------------------------------------------- */

/* `ntasks` independent counting tasks on one param (counts, 4 B per task). */
static lb_image image_tasks(uint32_t ntasks) {
    char name[32];
    snprintf(name, sizeof name, "tasks_%u", ntasks);
    kctx_image_builder *b = kctx_image_builder_new(name);
    if (b) {
        kctx_image_builder_param(b, "counts", KCTX_PARAM_TENSOR_INOUT);
        uint32_t fid = lb_add_count_child(b);
        for (uint32_t t = 0; t < ntasks; t++) lb_add_counting_task(b, fid, 0, t);
    }
    return lb_image_finish(b, name, ntasks);
}

/* `nargs` tensor params; one task: k_noop (nargs 0) or counting on param 0. */
static lb_image image_args(uint32_t nargs) {
    char name[32];
    snprintf(name, sizeof name, "args_%u", nargs);
    if (nargs == 0) return lb_image_noop(name);
    kctx_image_builder *b = kctx_image_builder_new(name);
    if (b) {
        for (uint32_t i = 0; i < nargs; i++) {
            char pname[16];
            snprintf(pname, sizeof pname, "t%u", i);
            kctx_image_builder_param(b, pname, KCTX_PARAM_TENSOR_INOUT);
        }
        uint32_t fid = lb_add_count_child(b);
        lb_add_counting_task(b, fid, 0, 0);
    }
    return lb_image_finish(b, name, 1);
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static void fill_random(unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
        p[i] = (unsigned char)(g_rng >> 24);
    }
}

/* The empty callable `name` with `pad` bytes of an OpenCL C variant (0:
 * none). */
static lb_image image_padded(const char *name, size_t pad) {
    kctx_image_builder *b = kctx_image_builder_new(name);
    if (b) {
        uint32_t fid = lb_add_noop_child(b);
        if (pad > 0) {
            unsigned char *p = malloc(pad);
            if (p == NULL) kb_fatal("out of memory");
            fill_random(p, pad);
            kctx_image_builder_variant(b, KCTX_VARIANT_OPENCL_C, p, pad);
            free(p);
        }
        kctx_image_builder_task(b, fid, 1, NULL);
    }
    return lb_image_finish(b, name, 1);
}

/* An empty callable of exactly `total` bytes (or the nearest the builder's
 * alignment allows; img.size says), total >= the unpadded size. */
static lb_image image_of_size(const char *name, size_t total, size_t bare) {
    size_t pad = total > bare + 64 ? total - bare - 64 : 1;
    lb_image img = image_padded(name, pad);
    for (int tries = 0; tries < 4 && img.size != total; tries++) {
        long long d = (long long)total - (long long)img.size;
        if ((long long)pad + d < 1) break;
        pad = (size_t)((long long)pad + d);
        lb_image_free(&img);
        img = image_padded(name, pad);
    }
    return img;
}

/* ---- helpers ---------------------------------------------------------------------- */

static void sync_stream(sim_stream s) {
    sim_status st = sim_stream_synchronize(s);
    if (st != SIM_OK) lb_sim_check(st, "sim_stream_synchronize");
}

static sim_devptr dev_zeroed(size_t bytes) {
    sim_devptr p = 0;
    void *z = calloc(1, bytes);
    if (z == NULL) kb_fatal("out of memory");
    lb_sim_check(sim_malloc(&p, bytes), "sim_malloc");
    lb_sim_check(sim_memcpy((void *)(uintptr_t)p, z, bytes, SIM_COPY_HOST_TO_DEVICE),
                 "sim_memcpy (zeros)");
    free(z);
    return p;
}

/* Fatal unless the n u32 counters at p all equal `expect`. */
static void check_counts(sim_devptr p, uint32_t n, uint32_t expect, const char *what) {
    uint32_t *h = malloc((size_t)n * sizeof *h);
    if (h == NULL) kb_fatal("out of memory");
    lb_sim_check(
        sim_memcpy(h, (const void *)(uintptr_t)p, (size_t)n * sizeof *h, SIM_COPY_DEVICE_TO_HOST),
        "sim_memcpy (counters)");
    for (uint32_t i = 0; i < n; i++)
        if (h[i] != expect)
            kb_fatal("%s: counter %u is %u, expected %u (a task did not run once per launch)", what,
                     i, h[i], expect);
    free(h);
}

/* ---- series: launch + sync vs tasks ----------------------------------------------- */

static int series_tasks(void) {
    static const uint32_t full[] = {1, 2, 4, 16, 64, 256, 1024, 4096};
    static const uint32_t quick[] = {1, 64, 4096};
    const uint32_t *xs = g_opt.quick ? quick : full;
    const int np = g_opt.quick ? 3 : 8, R = g_opt.repeats;
    const int L = g_opt.quick ? 2 : 5; /* launches per repeat */
    kctx_context ctx = lb_context_open((uint32_t)g_opt.strategy);
    sim_stream s;
    lb_sim_check(sim_stream_create(&s), "sim_stream_create");
    sim_devptr counts[8];
    uint32_t launched[8] = {0};
    for (int p = 0; p < np; p++) {
        lb_image img = image_tasks(xs[p]);
        kb_kctx_check(kctx_prepare(ctx, 1 + (uint64_t)p, img.bytes, img.size), "kctx_prepare");
        lb_image_free(&img);
        counts[p] = dev_zeroed((size_t)xs[p] * 4);
    }
    double *t = kb_doubles(np * R);
    for (int r = -1; r < R; r++) { /* r = -1: warm-up */
        for (int q = 0; q < np; q++) {
            int p = (r & 1) ? np - 1 - q : q; /* alternate the order */
            kctx_arg a = KCTX_TENSOR(counts[p], (size_t)xs[p] * 4);
            uint64_t t0 = kb_now_ns();
            for (int l = 0; l < L; l++) {
                kctx_status st = kctx_launch(ctx, 1 + (uint64_t)p, &a, 1, s);
                if (st != KCTX_OK) kb_kctx_check(st, "kctx_launch");
                sync_stream(s);
            }
            uint64_t t1 = kb_now_ns();
            launched[p] += (uint32_t)L;
            if (r >= 0) t[p * R + r] = (double)(t1 - t0) / L;
        }
    }
    int bad = 0;
    for (int p = 0; p < np; p++) {
        check_counts(counts[p], xs[p], launched[p], "launch_sync_vs_tasks");
        lb_sim_check(sim_free(counts[p]), "sim_free");
        double m = kb_median(t + p * R, (size_t)R);
        kb_progress("launch_sync_vs_tasks: %u tasks: %.0f ns per launch + sync", xs[p], m);
        bad |= point("launch_sync_vs_tasks", m, "ns", xs[p], R);
    }
    free(t);
    lb_sim_check(sim_stream_destroy(s), "sim_stream_destroy");
    kb_kctx_close(ctx);
    return bad;
}

/* ---- series: launch vs args ------------------------------------------------------ */

/* The context's acquire program: holding its first execution holds the
 * device side of every later launch. */
static sim_function acquire_program(kctx_context ctx) {
    const int ho = lb_context_strategy(ctx) == KCTX_STRATEGY_HOST_ORDERED;
    kctx_resource_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    kb_kctx_check(kctx_get_resources(ctx, &info), "kctx_get_resources");
    sim_function acquire;
    lb_sim_check(sim_module_get_function(&acquire, info.programs_module,
                                         ho ? "kctx_rt_ho_acquire" : "kctx_rt_acquire"),
                 "sim_module_get_function(acquire program)");
    return acquire;
}

/* Host ns per launch of `id` over n launches, the device held (as in
 * launch_overhead): one launch reaches the hold, n are timed, then the hold
 * is released and the stream synchronised (n + 1 launches ran). */
static double held_launches(kctx_context ctx, sim_function acquire, uint64_t id,
                            const kctx_arg *args, uint32_t nargs, sim_stream s, long n) {
    int device = 0;
    lb_sim_check(sim_get_device(&device), "sim_get_device");
    int h = lb_hold_arm(device, acquire);
    kb_kctx_check(kctx_launch(ctx, id, args, nargs, s), "kctx_launch (hold)");
    lb_sim_check(sim_hold_wait_reached(h, 10000), "sim_hold_wait_reached");
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        kctx_status st = kctx_launch(ctx, id, args, nargs, s);
        if (st != KCTX_OK) kb_kctx_check(st, "kctx_launch");
    }
    uint64_t t1 = kb_now_ns();
    lb_sim_check(sim_hold_release(h), "sim_hold_release");
    sync_stream(s);
    return (double)(t1 - t0) / (double)n;
}

static int series_args(void) {
    static const uint32_t full[] = {0, 1, 2, 4, 8, 16, 32, 64};
    static const uint32_t quick[] = {0, 4, 64};
    const uint32_t *xs = g_opt.quick ? quick : full;
    const int np = g_opt.quick ? 3 : 8, R = g_opt.repeats;
    const long N = g_opt.quick ? 100 : 300; /* launches per repeat (held device) */
    kctx_context ctx = lb_context_open((uint32_t)g_opt.strategy);
    sim_function acquire = acquire_program(ctx);
    sim_stream s;
    lb_sim_check(sim_stream_create(&s), "sim_stream_create");
    sim_devptr bufs[MAX_ARGS];
    kctx_arg args[MAX_ARGS];
    for (int i = 0; i < MAX_ARGS; i++) {
        bufs[i] = dev_zeroed(256);
        args[i] = KCTX_TENSOR(bufs[i], 256);
    }
    for (int p = 0; p < np; p++) {
        lb_image img = image_args(xs[p]);
        kb_kctx_check(kctx_prepare(ctx, 1 + (uint64_t)p, img.bytes, img.size), "kctx_prepare");
        lb_image_free(&img);
    }
    uint32_t launched = 0; /* launches of callables with arguments: counted in bufs[0] */
    double *t = kb_doubles(np * R);
    for (int r = -1; r < R; r++) {
        for (int q = 0; q < np; q++) {
            int p = (r & 1) ? np - 1 - q : q;
            double ns = held_launches(ctx, acquire, 1 + (uint64_t)p, args, xs[p], s, N);
            if (xs[p] > 0) launched += (uint32_t)N + 1;
            if (r >= 0) t[p * R + r] = ns;
        }
    }
    check_counts(bufs[0], 1, launched, "launch_vs_args");
    int bad = 0;
    for (int p = 0; p < np; p++) {
        double m = kb_median(t + p * R, (size_t)R);
        kb_progress("launch_vs_args: %u tensor args: %.0f ns per launch (host)", xs[p], m);
        bad |= point("launch_vs_args", m, "ns", xs[p], R);
    }
    free(t);
    for (int i = 0; i < MAX_ARGS; i++) lb_sim_check(sim_free(bufs[i]), "sim_free");
    lb_sim_check(sim_stream_destroy(s), "sim_stream_destroy");
    kb_kctx_close(ctx);
    return bad;
}

/* ---- series: replay vs graphs per context ----------------------------------------- */

static int series_graphs(void) {
    static const uint32_t full[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
    static const uint32_t quick[] = {1, 16, 256};
    const uint32_t *xs = g_opt.quick ? quick : full;
    const int np = g_opt.quick ? 3 : 9, R = g_opt.repeats;
    kctx_context ctx = lb_context_open((uint32_t)g_opt.strategy);
    sim_stream s;
    lb_sim_check(sim_stream_create(&s), "sim_stream_create");
    lb_image img = image_tasks(1);
    kb_kctx_check(kctx_prepare(ctx, 1, img.bytes, img.size), "kctx_prepare");
    lb_image_free(&img);
    sim_devptr counts = dev_zeroed(MAX_GRAPHS * 4);
    sim_graph_exec *ex = calloc(MAX_GRAPHS, sizeof *ex);
    uint32_t *replays = calloc(MAX_GRAPHS, sizeof *replays);
    if (ex == NULL || replays == NULL) kb_fatal("out of memory");
    uint32_t ng = 0;
    int bad = 0;
    double *t = kb_doubles(R);
    for (int p = 0; p < np; p++) {
        for (; ng < xs[p]; ng++) { /* capture up to x graphs */
            kctx_arg a = KCTX_TENSOR(counts + 4 * (sim_devptr)ng, 4);
            sim_graph g = 0;
            lb_sim_check(sim_stream_begin_capture(s, SIM_CAPTURE_MODE_THREAD_LOCAL),
                         "sim_stream_begin_capture");
            kb_kctx_check(kctx_launch(ctx, 1, &a, 1, s), "kctx_launch (captured)");
            lb_sim_check(sim_stream_end_capture(s, &g), "sim_stream_end_capture");
            lb_sim_check(sim_graph_instantiate(&ex[ng], g), "sim_graph_instantiate");
            lb_sim_check(sim_graph_destroy(g), "sim_graph_destroy");
        }
        const uint32_t G = xs[p];
        for (int r = -1; r < R; r++) {
            uint64_t t0 = kb_now_ns();
            for (uint32_t i = 0; i < REPLAYS; i++) {
                uint32_t g = i % G;
                sim_status st = sim_graph_launch(ex[g], s);
                if (st != SIM_OK) lb_sim_check(st, "sim_graph_launch");
                replays[g]++;
            }
            sync_stream(s);
            uint64_t t1 = kb_now_ns();
            if (r >= 0) t[r] = (double)(t1 - t0) / REPLAYS;
        }
        double m = kb_median(t, (size_t)R);
        kb_progress("replay_vs_graphs: %u graphs: %.0f ns per replay", G, m);
        bad |= point("replay_vs_graphs", m, "ns", G, R);
    }
    /* every graph's counter: its replays */
    uint32_t *h = malloc(MAX_GRAPHS * sizeof *h);
    if (h == NULL) kb_fatal("out of memory");
    lb_sim_check(
        sim_memcpy(h, (const void *)(uintptr_t)counts, MAX_GRAPHS * 4, SIM_COPY_DEVICE_TO_HOST),
        "sim_memcpy (counters)");
    for (uint32_t g = 0; g < ng; g++)
        if (h[g] != replays[g])
            kb_fatal("replay_vs_graphs: graph %u counted %u runs, replayed %u times", g, h[g],
                     replays[g]);
    free(h);
    for (uint32_t g = 0; g < ng; g++)
        lb_sim_check(sim_graph_exec_destroy(ex[g]), "sim_graph_exec_destroy");
    free(ex), free(replays), free(t);
    lb_sim_check(sim_free(counts), "sim_free");
    lb_sim_check(sim_stream_destroy(s), "sim_stream_destroy");
    kb_kctx_close(ctx);
    return bad;
}

/* ---- series: prepare vs image size ------------------------------------------------ */

/* Launch callable `id` (no args) once and synchronise: it must run. */
static void launch_once(kctx_context ctx, uint64_t id, sim_stream s) {
    kb_kctx_check(kctx_launch(ctx, id, NULL, 0, s), "kctx_launch (prepared callable)");
    sync_stream(s);
}

static int series_prepare_size(void) {
    static const size_t full[] = {1u << 10, 1u << 12, 1u << 14, 1u << 16,
                                  1u << 18, 1u << 20, 1u << 22, 1u << 24};
    static const size_t quick[] = {1u << 10, 1u << 20, 1u << 24};
    const size_t *xs = g_opt.quick ? quick : full;
    const int np = g_opt.quick ? 3 : 8, R = g_opt.repeats;
    lb_image bare_img = image_padded("sized_000", 0);
    const size_t bare = bare_img.size;
    lb_image_free(&bare_img);
    kb_progress("prepare_vs_size: the smallest preparable image is %zu bytes (it holds the sim "
                "kernel module); smaller sizes are not measured",
                bare);
    size_t sizes[16];
    int n = 0;
    sizes[n++] = bare;
    for (int p = 0; p < np; p++)
        if (xs[p] > bare)
            sizes[n++] = xs[p];
        else
            kb_progress("prepare_vs_size: %zu bytes: not measured (below %zu)", xs[p], bare);
    sim_stream s;
    lb_sim_check(sim_stream_create(&s), "sim_stream_create");
    int bad = 0;
    double *t = kb_doubles(R);
    for (int p = 0; p < n; p++) {
        kctx_context ctx = lb_context_open((uint32_t)g_opt.strategy);
        lb_image warm = image_padded("warm", 0);
        kb_kctx_check(kctx_prepare(ctx, 1000, warm.bytes, warm.size), "kctx_prepare (warm-up)");
        lb_image_free(&warm);
        size_t got = 0;
        for (int r = 0; r < R; r++) {
            char nm[16]; /* distinct names: distinct bytes at the smallest size too */
            snprintf(nm, sizeof nm, "sized_%03d", r % 1000);
            lb_image img =
                sizes[p] == bare ? image_padded(nm, 0) : image_of_size(nm, sizes[p], bare);
            got = img.size;
            uint64_t t0 = kb_now_ns();
            kctx_status st = kctx_prepare(ctx, 1 + (uint64_t)r, img.bytes, img.size);
            uint64_t t1 = kb_now_ns();
            kb_kctx_check(st, "kctx_prepare (sized image)");
            lb_image_free(&img);
            launch_once(ctx, 1 + (uint64_t)r, s);
            t[r] = (double)(t1 - t0);
        }
        kctx_resource_info info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        kb_kctx_check(kctx_get_resources(ctx, &info), "kctx_get_resources");
        if (info.uploads != (uint32_t)R + 1)
            kb_fatal("prepare_vs_size: %u uploads after %d distinct images", info.uploads, R + 1);
        kb_kctx_close(ctx);
        double m = kb_median(t, (size_t)R);
        kb_progress("prepare_vs_size: %zu-byte image: %.0f ns per prepare", got, m);
        bad |= point("prepare_vs_size", m, "ns", (double)got, R);
    }
    free(t);
    lb_sim_check(sim_stream_destroy(s), "sim_stream_destroy");
    return bad;
}

/* ---- series: prepare vs callables, memory vs callables ---------------------------- */

static double host_heap(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks + (double)mi.hblkhd;
#else
    return 0.0;
#endif
}

static double device_bytes(int device) {
    uint64_t count = 0, bytes = 0;
    lb_sim_check(sim_mem_stats(device, &count, &bytes), "sim_mem_stats");
    return (double)bytes;
}

static int series_prepare_count(void) {
    const uint32_t max = g_opt.quick ? 256 : 8192;
    const int R = g_opt.quick ? 1 : 3;
    int device = 0;
    lb_sim_check(sim_get_device(&device), "sim_get_device");
    int npts = 0;
    for (uint32_t x = 1; x <= max; x *= 2) npts++;
    /* prepares made: up to max + 16 (the window after the last point) */
    const uint32_t total = max + 16;
    double *tp = kb_doubles((int)total);
    double *pt = kb_doubles(npts * R), *dev = kb_doubles(npts), *host = kb_doubles(npts);
    double *kept = kb_doubles(npts);   /* image bytes kctx keeps, at each point */
    double *lt = kb_doubles(npts * R); /* held launch ns of the latest id, per point */
    double *win = kb_doubles(16);
    sim_stream s;
    lb_sim_check(sim_stream_create(&s), "sim_stream_create");
    for (int r = 0; r < R; r++) {
        double dev0 = device_bytes(device), host0 = host_heap();
        kctx_context ctx = lb_context_open((uint32_t)g_opt.strategy);
        sim_function acquire = acquire_program(ctx);
        int k = 0, kl = 0;
        double retained = 0;
        for (uint32_t i = 0; i < total; i++) {
            char name[32];
            snprintf(name, sizeof name, "callable_%05u", i);
            lb_image img = lb_image_noop(name);
            uint64_t t0 = kb_now_ns();
            kctx_status st = kctx_prepare(ctx, 1 + (uint64_t)i, img.bytes, img.size);
            uint64_t t1 = kb_now_ns();
            if (st != KCTX_OK) {
                kb_error("prepare_vs_callables: prepare %u (with %u prepared) failed", i + 1, i);
                kb_kctx_check(st, "kctx_prepare");
            }
            retained += (double)((img.size + 7) & ~(size_t)7);
            lb_image_free(&img);
            tp[i] = (double)(t1 - t0);
            /* memory at x = i + 1 prepared, on the first repeat */
            uint32_t x = i + 1;
            /* launch_vs_callables: the id prepared last, which a lookup
             * scanning the callables in preparation order reaches last */
            if ((x & (x - 1)) == 0 && x <= max)
                lt[kl++ * R + r] = held_launches(ctx, acquire, x, NULL, 0, s, 100);
            if (r == 0 && (x & (x - 1)) == 0 && x <= max) {
                dev[k] = device_bytes(device) - dev0;
                host[k] = host_heap() - host0;
                kept[k] = retained;
                k++;
            }
        }
        launch_once(ctx, 1, s);
        launch_once(ctx, total, s);
        kctx_resource_info info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        kb_kctx_check(kctx_get_resources(ctx, &info), "kctx_get_resources");
        if (info.uploads != total || info.callables != total)
            kb_fatal("prepare_vs_callables: %u uploads, %u callables, expected %u", info.uploads,
                     info.callables, total);
        kb_kctx_close(ctx);
        int q = 0;
        for (uint32_t x = 1; x <= max; x *= 2, q++) {
            uint32_t w = x < 16 ? x : 16;
            for (uint32_t j = 0; j < w; j++) win[j] = tp[x + j];
            pt[q * R + r] = kb_median(win, w);
        }
        kb_progress("prepare_vs_callables: repeat %d/%d: %u prepares", r + 1, R, total);
    }
    int bad = 0, q = 0;
    int host_ok = host_heap() > 0 && host[npts - 1] > 0;
    for (uint32_t x = 1; x <= max; x *= 2, q++) {
        double m = kb_median(pt + q * R, (size_t)R);
        kb_progress("callables %u: prepare %.0f ns; device %+.0f B, host heap %+.0f B", x, m,
                    dev[q], host[q]);
        if (wanted("prepare_vs_callables")) bad |= point("prepare_vs_callables", m, "ns", x, R);
        if (wanted("launch_vs_callables"))
            bad |= point("launch_vs_callables", kb_median(lt + q * R, (size_t)R), "ns", x, R);
        if (wanted("memory")) {
            bad |= point("memory_device_vs_callables", dev[q], "B", x, 1);
            if (host_ok) bad |= point("memory_host_vs_callables", host[q], "B", x, 1);
            if (host_ok)
                bad |= point("memory_host_other_vs_callables", host[q] - kept[q], "B", x, 1);
        }
    }
    if (!host_ok) kb_progress("memory_host_vs_callables: not measured (mallinfo2 reads 0 here)");
    free(tp), free(pt), free(dev), free(host), free(win), free(lt), free(kept);
    lb_sim_check(sim_stream_destroy(s), "sim_stream_destroy");
    return bad;
}

/* ---- main -------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    /* --only SERIES is ours; the rest are the common options */
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (rest == NULL) kb_fatal("out of memory");
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--only") == 0 && i + 1 < argc && g_nonly < 8)
            g_only[g_nonly++] = argv[++i];
        else
            rest[nrest++] = argv[i];
    }
    int rc = kb_parse_options(nrest, rest, &g_opt, DEFAULT_REPEATS, 1, QUICK_REPEATS, 1);
    if (rc != 0) {
        free(rest);
        return rc > 0 ? EXIT_SUCCESS : 2;
    }
    kb_progress("series of points, medians of %d repeats%s", g_opt.repeats,
                g_opt.quick ? " (quick: fewer, smaller points)" : "");
    int bad = 0;
    if (wanted("launch_sync_vs_tasks")) bad |= series_tasks();
    if (wanted("launch_vs_args")) bad |= series_args();
    if (wanted("replay_vs_graphs")) bad |= series_graphs();
    if (wanted("prepare_vs_size")) bad |= series_prepare_size();
    if (wanted("prepare_vs_callables") || wanted("memory") || wanted("launch_vs_callables"))
        bad |= series_prepare_count();
    free(rest);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
