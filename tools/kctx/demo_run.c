/*
 * demo_run.c — the serving scenario of `kctx demo` (see demo.h).
 *
 * The framework side goes through the platform's framework driver (fw.h),
 * so the demo runs wherever the conformance suite does. Every call is
 * checked; the first failure is recorded with what was being done and the
 * library's own message, the remaining steps are skipped, and teardown
 * still runs: graphs first (they hold the context, K25), then kctx_close
 * and kctx_destroy, then the framework's buffers and streams.
 */
#include "demo.h"

#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Buckets: batch sizes served by one graph each. Small batches use the
 * narrow tiling (columns only), larger ones the wide one (rows and
 * columns); see examples/callables/mlp_block_*.yaml. */
static const uint32_t k_bucket_rows[DEMO_BUCKETS] = {1, 2, 4, 8, 16, 32};
#define NARROW_MAX_ROWS 4u
#define ID_BASE 100u /* callable id of bucket i: ID_BASE + rows */

/* ------------------------------------------------------------------ */
/* failures and progress                                               */

static int fail(demo_state *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(demo_state *d, const char *fmt, ...) {
    if (!d->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->failure, sizeof d->failure, fmt, ap);
        va_end(ap);
        d->failed = 1;
    }
    return 0;
}

/* A framework driver call. */
static int fw_ok(demo_state *d, fw_status st, const char *what) {
    if (st == FW_OK) return 1;
    return fail(d, "framework: %s: %s (%s)", what, fw_status_name(st), d->opt.fw->last_error());
}
#define FW_OK_(d, expr) fw_ok((d), (expr), #expr)

/* The stream waits of the framework: generous, a sanitizer build is slow. */
#define SYNC_MS 120000u

/* A kctx call. */
static int kctx_ok(demo_state *d, kctx_status st, const char *what) {
    if (st == KCTX_OK) return 1;
    return fail(d, "kctx: %s: %s (%s)", what, kctx_status_name(st), kctx_thread_last_error());
}

static void progress(const demo_state *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void progress(const demo_state *d, const char *fmt, ...) {
    va_list ap;
    fputs(d->opt.progress_tty ? "\r\033[Kkctx demo: " : "kctx demo: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (!d->opt.progress_tty) fputc('\n', stderr);
    fflush(stderr);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* The device's lifecycle calls so far (the driver's K4 counters); 0 and
 * *known 0 when the driver has none. */
static uint64_t lifecycle_total(const demo_state *d, int *known) {
    const fw_lifecycle *lc = d->opt.fw->lifecycle;
    uint64_t n[FW_LIFECYCLE_MAX_OPS], total = 0;
    *known = lc != NULL && lc->counts(d->opt.device, n) == 0;
    for (unsigned op = 0; *known && op < lc->nops; op++) total += n[op];
    return total;
}

/* ------------------------------------------------------------------ */
/* the framework's device, streams and buffers                         */

static int upload(demo_state *d, fw_devptr dst, const void *src, size_t bytes) {
    return FW_OK_(d, d->opt.fw->upload(dst, src, bytes));
}

static int select_device(demo_state *d) {
    const fw_driver *fw = d->opt.fw;
    /* The framework owns the device: it makes it current for its thread. */
    fw_status st = d->opt.device < 0 ? FW_ERROR : fw->set_device(d->opt.device);
    if (st != FW_OK)
        return fail(d, "framework: device %d does not exist or cannot be made current (%s: %s)",
                    d->opt.device, fw_status_name(st), fw->last_error());
    if (fw->device_info)
        return FW_OK_(d, fw->device_info(d->opt.device, d->device_name, sizeof d->device_name,
                                         &d->device_cores));
    return 1;
}

static int framework_setup(demo_state *d) {
    const fw_driver *fw = d->opt.fw;
    const uint32_t D = DEMO_D, H = DEMO_H, O = DEMO_O;
    if (!FW_OK_(d, fw->stream_create(&d->capture_stream)) ||
        !FW_OK_(d, fw->stream_create(&d->serve_stream)))
        return 0;
    if (demo_model_init(&d->model, D, H, O, d->opt.seed) != 0)
        return fail(d, "out of host memory for the model");
    if (!FW_OK_(d, fw->mem_alloc((size_t)D * H * 4, &d->W1)) ||
        !FW_OK_(d, fw->mem_alloc((size_t)H * 4, &d->b1)) ||
        !FW_OK_(d, fw->mem_alloc((size_t)H * O * 4, &d->W2)) ||
        !FW_OK_(d, fw->mem_alloc((size_t)O * 4, &d->b2)))
        return 0;
    if (!upload(d, d->W1, d->model.W1, (size_t)D * H * 4) ||
        !upload(d, d->b1, d->model.b1, (size_t)H * 4) ||
        !upload(d, d->W2, d->model.W2, (size_t)H * O * 4) ||
        !upload(d, d->b2, d->model.b2, (size_t)O * 4))
        return 0;
    for (int i = 0; i < DEMO_BUCKETS; i++) {
        demo_bucket *b = &d->b[i];
        b->rows = k_bucket_rows[i];
        b->id = ID_BASE + b->rows;
        b->image = b->rows <= NARROW_MAX_ROWS ? "mlp_block_narrow" : "mlp_block_wide";
        if (!FW_OK_(d, fw->mem_alloc((size_t)b->rows * D * 4, &b->x)) ||
            !FW_OK_(d, fw->mem_alloc((size_t)b->rows * H * 4, &b->h)) ||
            !FW_OK_(d, fw->mem_alloc((size_t)b->rows * O * 4, &b->y)))
            return 0;
        b->stage_x = calloc((size_t)b->rows * D, sizeof(float));
        b->out_y = calloc((size_t)b->rows * O, sizeof(float));
        if (!b->stage_x || !b->out_y) return fail(d, "out of host memory for staging buffers");
    }
    return 1;
}

/* The launch arguments of bucket b, in the callable's signature order:
 * X, W1, b1, W2, b2, Hs, Y, B, D, H, O. */
enum {
    NARGS = 11
};
static void bucket_args(const demo_state *d, const demo_bucket *b, kctx_arg *a) {
    const uint64_t D = DEMO_D, H = DEMO_H, O = DEMO_O;
    a[0] = KCTX_TENSOR(b->x, b->rows * D * 4);
    a[1] = KCTX_TENSOR(d->W1, D * H * 4);
    a[2] = KCTX_TENSOR(d->b1, H * 4);
    a[3] = KCTX_TENSOR(d->W2, H * O * 4);
    a[4] = KCTX_TENSOR(d->b2, O * 4);
    a[5] = KCTX_TENSOR(b->h, b->rows * H * 4);
    a[6] = KCTX_TENSOR(b->y, b->rows * O * 4);
    a[7] = KCTX_SCALAR(b->rows);
    a[8] = KCTX_SCALAR(D);
    a[9] = KCTX_SCALAR(H);
    a[10] = KCTX_SCALAR(O);
}

/* ------------------------------------------------------------------ */
/* kctx: the context and its callables                                 */

static int read_image(demo_state *d, const char *name, void **bytes, size_t *size) {
    char file[96];
    snprintf(file, sizeof file, "%s.kctx", name);
    char *path = util_path_join(d->opt.images_dir, file);
    if (path == NULL) return fail(d, "out of host memory");
    int rc = util_read_file(path, 64u << 20, bytes, size);
    if (rc != 0) fail(d, "cannot read the callable image %s: %s", path, strerror(errno));
    free(path);
    return rc == 0;
}

static int kctx_setup(demo_state *d) {
    char created[96];
    snprintf(created, sizeof created, "kctx_context_create(\"%s\")", d->opt.platform);
    if (!kctx_ok(d, kctx_context_create(d->opt.platform, &d->ctx), created)) return 0;
    d->ctx_created = d->ctx_made = 1;
    /* Borrow the framework's current device: no set, reset, init or
     * finalize of it (K4). */
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = (uint32_t)d->opt.strategy;
    if (d->opt.trace_path) { /* K32: trace from init to close */
        cfg.flags = KCTX_TRACE_ENABLE;
        cfg.trace_path = d->opt.trace_path;
        cfg.trace_device_records = 1u << 18;
    }
    if (!kctx_ok(d, kctx_kernel_init(d->ctx, &cfg), "kctx_kernel_init")) return 0;
    /* the strategy in effect, as the context reports it */
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    if (!kctx_ok(d, kctx_get_context_caps(d->ctx, &caps), "kctx_get_context_caps")) return 0;
    d->strategy_in_effect = (kctx_strategy)caps.strategy;
    if (d->strategy_in_effect != d->opt.strategy)
        return fail(d, "kctx: the context runs the %s strategy, not the %s one asked for",
                    kctx_strategy_name(d->strategy_in_effect), kctx_strategy_name(d->opt.strategy));
    /* The images are read now; each bucket's id is prepared at its first
     * use (ensure_prepared), inside its first capture when the demo
     * captures — a framework captures an operator the first time it runs
     * (K16). */
    const char *const images[2] = {"mlp_block_narrow", "mlp_block_wide"};
    return read_image(d, images[0], &d->image_bytes[0], &d->image_sizes[0]) &&
           read_image(d, images[1], &d->image_bytes[1], &d->image_sizes[1]);
}

/* Prepare bucket b's id unless it is prepared already. One id per bucket;
 * identical bytes under several ids share one upload (K14). Prepare
 * returns once its upload completed (K15), also inside a capture (K16). */
static int ensure_prepared(demo_state *d, demo_bucket *b, int in_capture) {
    if (b->is_prepared) return 1;
    int w = strcmp(b->image, "mlp_block_narrow") == 0 ? 0 : 1;
    char what[112];
    snprintf(what, sizeof what, "kctx_prepare(id %llu, %s)%s", (unsigned long long)b->id, b->image,
             in_capture ? " inside the bucket's first capture" : "");
    if (!kctx_ok(d, kctx_prepare(d->ctx, b->id, d->image_bytes[w], d->image_sizes[w]), what))
        return 0;
    b->is_prepared = 1;
    d->prepared++;
    if (in_capture) d->prepared_in_capture++;
    return 1;
}

/* ------------------------------------------------------------------ */
/* one request: inputs in, work, outputs out, verified                 */

/* Verify the first `rows` outputs of bucket b against the reference. */
static int verify(demo_state *d, demo_bucket *b, uint32_t rows, double *scratch, const char *when,
                  uint64_t request) {
    demo_check c;
    memset(&c, 0, sizeof c);
    demo_model_check(&d->model, b->stage_x, b->out_y, rows, scratch, &c);
    demo_check *all = &d->check;
    if (c.bad && all->bad == 0) {
        all->bad_row = c.bad_row;
        all->bad_col = c.bad_col;
        all->bad_got = c.bad_got;
        all->bad_want = c.bad_want;
        all->bad_bound = c.bad_bound;
    }
    all->elements += c.elements;
    all->bad += c.bad;
    if (c.max_error > all->max_error) all->max_error = c.max_error;
    if (c.max_ratio > all->max_ratio) all->max_ratio = c.max_ratio;
    if (d->opt.requests_csv && request != UINT64_MAX)
        fprintf(d->opt.requests_csv, "%llu,%u,%u,%.3e,%.3f,%s\n", (unsigned long long)request, rows,
                b->rows, c.max_error, c.max_ratio, c.bad ? "no" : "yes");
    if (c.bad == 0) return 1;
    return fail(d,
                "verification: %s (bucket %u): output row %u column %u is %.9g, the reference is "
                "%.9g (error %.3g, bound %.3g); %llu of %u elements outside their bound",
                when, b->rows, c.bad_row, c.bad_col, c.bad_got, c.bad_want, c.bad_got - c.bad_want,
                c.bad_bound, (unsigned long long)c.bad, rows * DEMO_O);
}

/* New inputs for `rows` rows; the bucket's padding rows are zero. */
static void stage_inputs(demo_state *d, demo_bucket *b, uint32_t rows, uint64_t *rng) {
    demo_model_inputs(&d->model, rng, b->stage_x, rows);
    memset(b->stage_x + (size_t)rows * DEMO_D, 0,
           (size_t)(b->rows - rows) * DEMO_D * sizeof(float));
}

/* The inputs go in before the work is enqueued: the serve stream is idle
 * (every request ends with a synchronise), so a synchronous upload is in
 * order with the launch or replay that follows. */
static int copy_in(demo_state *d, demo_bucket *b) {
    return upload(d, b->x, b->stage_x, (size_t)b->rows * DEMO_D * sizeof(float));
}

static int copy_out_and_wait(demo_state *d, demo_bucket *b, uint32_t rows) {
    return FW_OK_(d, d->opt.fw->stream_sync(d->serve_stream, SYNC_MS)) &&
           FW_OK_(d, d->opt.fw->download(b->out_y, b->y, (size_t)rows * DEMO_O * sizeof(float)));
}

/* One unit of work for bucket b on the serve stream: a replay of its graph,
 * or (eager serving) a launch. */
static int run_bucket(demo_state *d, demo_bucket *b, int replay) {
    if (replay) {
        if (!FW_OK_(d, d->opt.fw->graph_launch(b->exec, d->serve_stream))) return 0;
        d->replays++;
        return 1;
    }
    kctx_arg a[NARGS];
    bucket_args(d, b, a);
    if (!kctx_ok(d, kctx_launch(d->ctx, b->id, a, NARGS, d->serve_stream), "eager kctx_launch"))
        return 0;
    d->eager_launches++;
    return 1;
}

/* An eager launch of every bucket, verified: the callables work before
 * anything is captured. */
static int warm_up(demo_state *d, double *scratch) {
    uint64_t rng = d->opt.seed ^ 0x5741524D5550ull; /* "WARMUP" */
    for (int i = 0; i < DEMO_BUCKETS; i++) {
        demo_bucket *b = &d->b[i];
        kctx_arg a[NARGS];
        bucket_args(d, b, a);
        stage_inputs(d, b, b->rows, &rng);
        if (!ensure_prepared(d, b, 0) || !copy_in(d, b) ||
            !kctx_ok(d, kctx_launch(d->ctx, b->id, a, NARGS, d->serve_stream), "eager kctx_launch"))
            return 0;
        d->eager_launches++;
        if (!copy_out_and_wait(d, b, b->rows) ||
            !verify(d, b, b->rows, scratch, "the eager warm-up launch", UINT64_MAX))
            return 0;
        d->warmup_checked++;
    }
    return 1;
}

/* One graph per bucket, captured on the framework's capture stream in
 * global mode. All of them share the context, its streams and its five
 * events (K12); each holds one graph lifetime token (K25). */
static int capture_graphs(demo_state *d) {
    const fw_driver *fw = d->opt.fw;
    for (int i = 0; i < DEMO_BUCKETS; i++) {
        demo_bucket *b = &d->b[i];
        kctx_arg a[NARGS];
        bucket_args(d, b, a);
        if (!FW_OK_(d, fw->begin_capture(d->capture_stream))) return 0;
        /* cold capture: the bucket's first use is this capture (K16) */
        kctx_status ls = ensure_prepared(d, b, 1)
                             ? kctx_launch(d->ctx, b->id, a, NARGS, d->capture_stream)
                             : KCTX_INVALID_STATE;
        fw_graph g = 0;
        fw_status es = fw->end_capture(d->capture_stream, &g);
        if (!kctx_ok(d, ls, "captured kctx_launch")) {
            if (es == FW_OK && g) fw->graph_destroy(g); /* discard the capture */
            return 0;
        }
        if (!fw_ok(d, es, "end_capture")) return 0;
        b->graph = g;
        if ((fw->graph_node_count && !FW_OK_(d, fw->graph_node_count(g, &d->graph_nodes[i]))) ||
            !FW_OK_(d, fw->graph_instantiate(g, &b->exec)))
            return 0;
        d->graphs_captured++;
    }
    return 1;
}

/* The context's resources (uploads, lifetime tokens) for the report. */
static int read_resources(demo_state *d) {
    d->res.size = sizeof d->res;
    d->have_res = kctx_ok(d, kctx_get_resources(d->ctx, &d->res), "kctx_get_resources");
    return d->have_res;
}

static uint32_t pick_rows(uint64_t *rng) {
    uint64_t kind = demo_rng_next(rng) % 100, r = demo_rng_next(rng);
    if (kind < 45) return 1 + (uint32_t)(r % 4);  /* interactive: 1..4 rows */
    if (kind < 80) return 5 + (uint32_t)(r % 12); /* 5..16 */
    return 17 + (uint32_t)(r % 16);               /* 17..32 */
}

static demo_bucket *bucket_for(demo_state *d, uint32_t rows) {
    for (int i = 0; i < DEMO_BUCKETS; i++)
        if (d->b[i].rows >= rows) return &d->b[i];
    return NULL;
}

/* The request stream: pick the bucket, copy inputs in, replay its graph
 * (eager serving: launch it), copy outputs out, verify. */
static int serve(demo_state *d, double *scratch) {
    uint64_t rng = d->opt.seed;
    uint64_t step = d->opt.requests >= 20 ? d->opt.requests / 4 : d->opt.requests;
    double t0 = now_us();
    for (uint64_t i = 0; i < d->opt.requests; i++) {
        uint32_t rows = pick_rows(&rng);
        demo_bucket *b = bucket_for(d, rows);
        if (b == NULL) return fail(d, "no bucket for %u rows", rows);
        stage_inputs(d, b, rows, &rng);
        if (!copy_in(d, b) || !run_bucket(d, b, d->capture)) return 0;
        d->requests_done++;
        if (!copy_out_and_wait(d, b, rows)) return 0;
        char when[48];
        snprintf(when, sizeof when, "request %llu", (unsigned long long)i);
        if (!verify(d, b, rows, scratch, when, i)) return 0;
        d->requests_ok++;
        b->requests++;
        b->rows_served += rows;
        d->rows_total += rows;
        if (d->opt.progress_tty ? (i % 8 == 7 || i + 1 == d->opt.requests) : ((i + 1) % step == 0))
            progress(d, "serving: request %llu/%llu (%u rows -> bucket %u)",
                     (unsigned long long)(i + 1), (unsigned long long)d->opt.requests, rows,
                     b->rows);
    }
    d->serve_seconds = (now_us() - t0) / 1e6;
    return 1;
}

/* Time per replay against an eager launch of the same work, measured side
 * by side: DEMO_TIMING_ROUNDS interleaved pairs per bucket (A B, B A, ...),
 * each timed from submission to the end of a stream synchronisation;
 * medians (eager serving: the eager launches alone). The outputs are
 * verified once more afterwards. */
static int time_buckets(demo_state *d, double *scratch) {
    double rep[DEMO_TIMING_ROUNDS], eag[DEMO_TIMING_ROUNDS];
    for (int i = 0; i < DEMO_BUCKETS; i++) {
        demo_bucket *b = &d->b[i];
        for (int r = 0; r < DEMO_TIMING_ROUNDS; r++) {
            /* A B, then B A: neither always runs right after the other */
            for (int k = 0; k < 2; k++) {
                int replay = (k == 0) == (r % 2 == 0);
                if (replay && !d->capture) continue;
                double t0 = now_us();
                if (!run_bucket(d, b, replay) ||
                    !FW_OK_(d, d->opt.fw->stream_sync(d->serve_stream, SYNC_MS)))
                    return 0;
                (replay ? rep : eag)[r] = now_us() - t0;
            }
        }
        b->replay_us = d->capture ? median(rep, DEMO_TIMING_ROUNDS) : 0.0;
        b->eager_us = median(eag, DEMO_TIMING_ROUNDS);
        /* the buffers still hold this bucket's last inputs (padding rows
         * included, zero): the outputs of the last launch must match */
        if (!copy_out_and_wait(d, b, b->rows) ||
            !verify(d, b, b->rows, scratch, "after the timing launches", UINT64_MAX))
            return 0;
    }
    return 1;
}

/* kctx_check: device-side errors, refused replays, concurrent launches. */
static int check_context(demo_state *d) {
    d->report.size = sizeof d->report;
    d->check_status = kctx_check(d->ctx, &d->report);
    d->checked = 1;
    if (d->check_status != KCTX_OK || d->report.device_status != KCTX_OK ||
        d->report.refused_replays != 0 || d->report.concurrent_launches != 0)
        return fail(d, "kctx_check: %s (device %s, %u refused replays, %u concurrent launches): %s",
                    kctx_status_name(d->check_status), kctx_status_name(d->report.device_status),
                    d->report.refused_replays, d->report.concurrent_launches,
                    kctx_last_error(d->ctx));
    return 1;
}

/* ------------------------------------------------------------------ */
/* teardown                                                            */

static void teardown(demo_state *d, const fw_counts *base) {
    const fw_driver *fw = d->opt.fw;
    /* Nothing may still be running on the framework's streams. */
    if (d->serve_stream) fw->stream_sync(d->serve_stream, SYNC_MS);
    /* Graphs first: while one lives, it holds the context (K25). */
    for (int i = 0; i < DEMO_BUCKETS; i++) {
        demo_bucket *b = &d->b[i];
        if (b->exec) FW_OK_(d, fw->exec_destroy(b->exec));
        if (b->graph) FW_OK_(d, fw->graph_destroy(b->graph));
        b->exec = 0;
        b->graph = 0;
    }
    d->close_status = d->destroy_status = KCTX_OK;
    if (d->ctx_created) {
        d->close_status = kctx_close(d->ctx);
        kctx_ok(d, d->close_status, "kctx_close");
        /* the trace is written after CLOSED; a failure lands in the teardown slot */
        kctx_teardown_error(d->ctx, &d->trace_status, d->trace_message, sizeof d->trace_message);
        d->destroy_status = kctx_destroy(d->ctx);
        if (kctx_ok(d, d->destroy_status, "kctx_destroy")) d->ctx_created = 0;
    }
    for (int i = 0; i < DEMO_BUCKETS; i++) {
        demo_bucket *b = &d->b[i];
        if (b->x) FW_OK_(d, fw->mem_free(b->x));
        if (b->h) FW_OK_(d, fw->mem_free(b->h));
        if (b->y) FW_OK_(d, fw->mem_free(b->y));
        b->x = b->h = b->y = 0;
        free(b->stage_x);
        free(b->out_y);
        b->stage_x = b->out_y = NULL;
    }
    fw_devptr *w[4] = {&d->W1, &d->b1, &d->W2, &d->b2};
    for (int i = 0; i < 4; i++) {
        if (*w[i]) FW_OK_(d, fw->mem_free(*w[i]));
        *w[i] = 0;
    }
    if (d->capture_stream) FW_OK_(d, fw->stream_destroy(d->capture_stream));
    if (d->serve_stream) FW_OK_(d, fw->stream_destroy(d->serve_stream));
    d->capture_stream = d->serve_stream = 0;
    demo_model_free(&d->model);

    /* Proof: the device holds exactly what it held before the demo. */
    if (base == NULL) return; /* the demo never got as far as the device, or cannot count */
    fw_counts now;
    if (fw->live_counts(d->opt.device, &now) == FW_OK) {
        d->teardown_checked = 1;
        d->teardown_clean = now.streams == base->streams && now.events == base->events &&
                            now.modules == base->modules && now.graphs == base->graphs &&
                            now.graph_execs == base->graph_execs &&
                            now.hooks_pending == base->hooks_pending &&
                            now.allocations == base->allocations && now.bytes == base->bytes;
        snprintf(d->teardown_detail, sizeof d->teardown_detail,
                 "streams %llu, events %llu, modules %llu, graphs %llu, executable graphs %llu, "
                 "pending hooks %llu, allocations %llu (%llu bytes)",
                 (unsigned long long)now.streams, (unsigned long long)now.events,
                 (unsigned long long)now.modules, (unsigned long long)now.graphs,
                 (unsigned long long)now.graph_execs, (unsigned long long)now.hooks_pending,
                 (unsigned long long)now.allocations, (unsigned long long)now.bytes);
        if (!d->teardown_clean)
            fail(d, "teardown: the device did not return to its baseline: %s", d->teardown_detail);
    } else {
        fail(d, "teardown: cannot read the device's live objects: %s", fw->last_error());
    }
}

int demo_run(demo_state *d) {
    double *scratch = malloc(2 * DEMO_H * sizeof(double));
    if (scratch == NULL) return fail(d, "out of host memory"), 1;
    fw_counts base;
    memset(&base, 0, sizeof base);
    d->capture = fw_has_capture(d->opt.fw) && !d->opt.no_capture;

    progress(d, "framework: %s device %d, its streams, the weights", d->opt.platform,
             d->opt.device);
    int ok = select_device(d);
    /* The teardown proof's baseline: the device before the demo's own
     * objects. From here on every lifecycle call would be kctx's: set
     * device was the framework's, and it makes no other (K4). */
    int lc_known = 0;
    uint64_t lc0 = ok ? lifecycle_total(d, &lc_known) : 0;
    int have_base = 0;
    if (ok && d->opt.fw->live_counts) {
        ok = FW_OK_(d, d->opt.fw->live_counts(d->opt.device, &base));
        have_base = ok;
    }
    int reached_device = ok;
    if (ok) ok = framework_setup(d);
    if (ok) {
        progress(d, "kernel context: init on the borrowed device (%s strategy)",
                 kctx_strategy_name(d->opt.strategy));
        ok = kctx_setup(d);
    }
    if (ok && d->capture) {
        progress(d, "capture: one graph per bucket, its callable prepared inside it (cold)");
        ok = capture_graphs(d);
    }
    if (ok) {
        progress(d, "warm-up: one eager launch per bucket, verified");
        ok = warm_up(d, scratch);
    }
    if (ok) ok = read_resources(d);
    if (ok) {
        progress(d, "serving %llu requests (%s)", (unsigned long long)d->opt.requests,
                 d->capture ? "graph replays" : "eager launches");
        ok = serve(d, scratch);
        if (d->opt.progress_tty) fputc('\n', stderr);
    }
    if (ok) {
        progress(d,
                 d->capture ? "timing: replay against eager launch, %d pairs per bucket"
                            : "timing: eager launches, %d per bucket",
                 DEMO_TIMING_ROUNDS);
        ok = time_buckets(d, scratch);
    }
    if (ok) ok = check_context(d);
    progress(d, "teardown: graphs, kctx_close, kctx_destroy, framework objects");
    teardown(d,
             have_base ? &base : NULL); /* without live counts: not checked, the report says so */
    int lc_known_after = 0;
    uint64_t lc1 = reached_device ? lifecycle_total(d, &lc_known_after) : 0;
    d->lifecycle_known = lc_known && lc_known_after;
    d->kctx_lifecycle_calls = d->lifecycle_known ? lc1 - lc0 : 0;
    if (d->lifecycle_known && d->kctx_lifecycle_calls != 0)
        fail(d, "K4: %llu device lifecycle calls were made while kctx held the device",
             (unsigned long long)d->kctx_lifecycle_calls);
    free(d->image_bytes[0]);
    free(d->image_bytes[1]);
    d->image_bytes[0] = d->image_bytes[1] = NULL;
    free(scratch);
    return d->failed ? 1 : 0;
}
