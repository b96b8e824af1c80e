/*
 * launch_common.c — see launch_common.h.
 */
#include "launch_common.h"

#include "kctx_test_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef KCTX_BENCH_KERNEL_MODULE
#error "KCTX_BENCH_KERNEL_MODULE (path of the sim_test_kernels module) must be defined"
#endif

/* ---- checks --------------------------------------------------------------- */

void lb_sim_check(sim_status s, const char *what) {
    if (s != SIM_OK)
        kb_fatal("%s failed: %s (%s)", what, sim_status_name(s), sim_last_error_message());
}

/* ---- images ----------------------------------------------------------------- */

static void *g_module;
static size_t g_module_size;
/* The callables' variant (lb_set_variant): the sim module as SIM_ELF unless
 * a benchmark names another. */
static kctx_variant_kind g_kind = KCTX_VARIANT_SIM_ELF;
static const void *g_variant;
static size_t g_variant_size;

void lb_set_variant(kctx_variant_kind kind, const void *bytes, size_t size) {
    g_kind = kind;
    g_variant = bytes;
    g_variant_size = size;
}

/* The kernel module and kind the callables' children carry. */
static kctx_variant_kind child_variant(const void **bytes, size_t *size) {
    if (g_variant) {
        *bytes = g_variant;
        *size = g_variant_size;
    } else {
        lb_kernels_module(bytes, size);
    }
    return g_kind;
}

void lb_kernels_module(const void **bytes, size_t *size) {
    char why[512];
    if (g_module == NULL && (g_module = ktc_read_file(KCTX_BENCH_KERNEL_MODULE, &g_module_size, why,
                                                      sizeof why)) == NULL)
        kb_fatal("the sim kernel module: %s", why);
    *bytes = g_module;
    *size = g_module_size;
}

lb_image lb_image_finish(kctx_image_builder *b, const char *what, uint32_t tasks) {
    lb_image img = {NULL, 0, tasks};
    char msg[160] = "";
    if (b == NULL) kb_fatal("kctx_image_builder_new(%s): out of memory", what);
    kctx_build_status s = kctx_image_builder_finish(b, &img.bytes, &img.size, msg, sizeof msg);
    kctx_image_builder_free(b);
    if (s != KCTX_BUILD_OK) kb_fatal("building the %s image failed (%d): %s", what, (int)s, msg);
    return img;
}

uint32_t lb_add_noop_child(kctx_image_builder *b) {
    const void *mod;
    size_t mod_size;
    uint32_t fid = 0;
    kctx_variant_kind kind = child_variant(&mod, &mod_size);
    kctx_image_builder_child(b, "noop", "t_noop", &fid);
    kctx_image_builder_variant(b, kind, mod, mod_size);
    return fid;
}

lb_image lb_image_noop(const char *name) {
    kctx_image_builder *b = kctx_image_builder_new(name);
    if (b) {
        uint32_t fid = lb_add_noop_child(b);
        kctx_image_builder_task(b, fid, 1, NULL);
    }
    return lb_image_finish(b, name, 1);
}

lb_image lb_image_vadd(uint32_t block_dim) {
    kctx_image_builder *b = kctx_image_builder_new("vector_add");
    if (b) {
        const void *mod;
        size_t mod_size;
        uint32_t fid = 0;
        kctx_variant_kind kind = child_variant(&mod, &mod_size);
        kctx_image_builder_param(b, "a", KCTX_PARAM_TENSOR_IN);
        kctx_image_builder_param(b, "b", KCTX_PARAM_TENSOR_IN);
        kctx_image_builder_param(b, "c", KCTX_PARAM_TENSOR_OUT);
        kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
        kctx_image_builder_child(b, "vadd", "t_vadd_f32", &fid);
        kctx_image_builder_child_param(b, "a", KCTX_PARAM_TENSOR);
        kctx_image_builder_child_param(b, "b", KCTX_PARAM_TENSOR);
        kctx_image_builder_child_param(b, "c", KCTX_PARAM_TENSOR);
        kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
        kctx_image_builder_variant(b, kind, mod, mod_size);
        kctx_image_builder_task(b, fid, block_dim, NULL);
        kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, 0);
        kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 1, 0);
        kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 2, 0);
        kctx_image_builder_bind(b, KCTX_BIND_SCALAR, 3, 0);
    }
    return lb_image_finish(b, "vector_add", 1);
}

uint32_t lb_add_count_child(kctx_image_builder *b) {
    const void *mod;
    size_t mod_size;
    uint32_t fid = 0;
    kctx_variant_kind kind = child_variant(&mod, &mod_size);
    kctx_image_builder_child(b, "count", "t_add_u32", &fid);
    kctx_image_builder_child_param(b, "buf", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n_value", KCTX_PARAM_SCALAR);
    kctx_image_builder_variant(b, kind, mod, mod_size);
    return fid;
}

void lb_add_counting_task(kctx_image_builder *b, uint32_t fid, uint32_t param, uint32_t t) {
    kctx_image_builder_task(b, fid, 1, NULL);
    kctx_image_builder_bind(b, KCTX_BIND_TENSOR, param, (uint64_t)t * sizeof(uint32_t));
    kctx_image_builder_bind(b, KCTX_BIND_IMMEDIATE, 0, 1u | (1ull << 32));
}

lb_image lb_image_dag(uint32_t width) {
    if (width > 4000) kb_fatal("DAG width %u out of range 0..4000", width);
    const uint32_t per_join = KCTX_IMAGE_MAX_DEPS;
    const uint32_t joins = (width + per_join - 1) / per_join;
    const uint32_t ntasks = width == 0 ? 1 : 1 + width + joins + 1;
    kctx_image_builder *b = kctx_image_builder_new(width == 0 ? "counted_task" : "wide_dag");
    if (b) {
        uint32_t t = 0;
        kctx_image_builder_param(b, "counts", KCTX_PARAM_TENSOR_INOUT);
        uint32_t fid = lb_add_count_child(b);
        lb_add_counting_task(b, fid, 0, t++); /* the root */
        for (uint32_t i = 0; i < width; i++) {
            lb_add_counting_task(b, fid, 0, t++);
            kctx_image_builder_dep(b, 0);
        }
        uint32_t first_join = 1 + width;
        for (uint32_t j = 0; j < joins; j++) {
            lb_add_counting_task(b, fid, 0, t++);
            for (uint32_t i = j * per_join; i < width && i < (j + 1) * per_join; i++)
                kctx_image_builder_dep(b, 1 + i);
        }
        if (width > 0) {
            lb_add_counting_task(b, fid, 0, t++); /* the sink */
            for (uint32_t j = 0; j < joins; j++) kctx_image_builder_dep(b, first_join + j);
        }
        if (t != ntasks) kb_fatal("DAG of %u tasks, %u expected", t, ntasks);
    }
    return lb_image_finish(b, width == 0 ? "counted_task" : "wide_dag", ntasks);
}

void lb_image_free(lb_image *img) {
    free(img->bytes);
    img->bytes = NULL;
    img->size = 0;
}

/* ---- kernel contexts ---------------------------------------------------------- */

kctx_context lb_context_open(uint32_t strategy) {
    kctx_context ctx = 0;
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = strategy;
    kb_kctx_check(kctx_context_create("sim", &ctx), "kctx_context_create(sim)");
    kb_kctx_check(kctx_kernel_init(ctx, &cfg), "kctx_kernel_init");
    return ctx;
}

kctx_strategy lb_context_strategy(kctx_context ctx) {
    kctx_platform_caps caps;
    memset(&caps, 0, sizeof caps); /* the INIT macro trips -Wmissing-field-initializers */
    caps.size = sizeof caps;
    kb_kctx_check(kctx_get_context_caps(ctx, &caps), "kctx_get_context_caps");
    return (kctx_strategy)caps.strategy;
}

int lb_strategies(int opt_strategy, kctx_strategy out[2]) {
    if (opt_strategy == KCTX_STRATEGY_RESIDENT || opt_strategy == KCTX_STRATEGY_HOST_ORDERED) {
        out[0] = (kctx_strategy)opt_strategy;
        return 1;
    }
    out[0] = KCTX_STRATEGY_RESIDENT;
    out[1] = KCTX_STRATEGY_HOST_ORDERED;
    return 2;
}

int lb_hold_arm(int device, sim_function fn) {
    sim_hold h = SIM_HOLD_INIT;
    int id = -1;
    h.kind = SIM_EXEC_KERNEL;
    h.device = device;
    h.nth = 1;
    h.fn = fn;
    lb_sim_check(sim_hold_arm(&h, &id), "sim_hold_arm");
    return id;
}

const char *lb_metric_name(char *buf, size_t size, const char *base, kctx_strategy s) {
    snprintf(buf, size, "%s%s", base, s == KCTX_STRATEGY_HOST_ORDERED ? "_host_ordered" : "");
    return buf;
}

int lb_print_compared(const char *name, kctx_strategy s, const double *v, int with_base,
                      const double *base, int R) {
    char buf[96];
    return kb_metric_print_compared(lb_metric_name(buf, sizeof buf, name, s),
                                    kb_median(v, (size_t)R), "ns", with_base,
                                    with_base ? kb_median(base, (size_t)R) : 0.0, R) != 0;
}

int lb_print_value(const char *name, kctx_strategy s, const double *v, const char *unit, int R) {
    char buf[96];
    kb_metric m = {lb_metric_name(buf, sizeof buf, name, s),
                   kb_median(v, (size_t)R),
                   unit,
                   KB_BASELINE_OMIT,
                   0.0,
                   0,
                   0.0,
                   R};
    return kb_metric_print(&m) != 0;
}

/* ---- the baseline chain --------------------------------------------------------- */

/* Thin wrappers, like the sim adapter's: the table is reached through a
 * pointer the compiler cannot see through, so every call is indirect. */
__attribute__((noinline)) static int w_current_device(int *d) { return sim_get_device(d); }
__attribute__((noinline)) static int w_event_record(kctx_pevent e, kctx_pstream s) {
    return sim_event_record(e, s);
}
__attribute__((noinline)) static int w_stream_wait_event(kctx_pstream s, kctx_pevent e) {
    return sim_stream_wait_event(s, e);
}
__attribute__((noinline)) static int w_launch(kctx_pstream s, kctx_pfunction fn,
                                              kctx_ptarget target, uint32_t block_dim,
                                              const void *params, size_t size) {
    return sim_launch_kernel(s, fn,
                             target == KCTX_PTARGET_AICPU ? SIM_TARGET_AICPU : SIM_TARGET_AICORE,
                             block_dim, params, size);
}

static kctx_platform_ops g_ops;

__attribute__((noinline)) const kctx_platform_ops *lb_sim_ops(void) {
    if (g_ops.size == 0) {
        g_ops.size = sizeof g_ops;
        g_ops.current_device = w_current_device;
        g_ops.event_record = w_event_record;
        g_ops.stream_wait_event = w_stream_wait_event;
        g_ops.launch = w_launch;
    }
    return &g_ops;
}

void lb_chain_open(lb_chain *ch) {
    const void *mod;
    size_t mod_size;
    memset(ch, 0, sizeof *ch);
    lb_kernels_module(&mod, &mod_size);
    lb_sim_check(sim_module_load(&ch->module, mod, mod_size), "sim_module_load(sim_test_kernels)");
    lb_sim_check(sim_module_get_function(&ch->noop, ch->module, "k_noop"),
                 "sim_module_get_function(k_noop)");
    lb_sim_check(sim_stream_create(&ch->cpu), "sim_stream_create(baseline AICPU)");
    lb_sim_check(sim_stream_create(&ch->core), "sim_stream_create(baseline AICore)");
    for (int i = 0; i < 5; i++)
        lb_sim_check(sim_event_create(&ch->ev[i], SIM_EVENT_DISABLE_TIMING), "sim_event_create");
    ch->cores = lb_core_count();
}

void lb_chain_close(lb_chain *ch) {
    for (int i = 0; i < 5; i++) lb_sim_check(sim_event_destroy(ch->ev[i]), "sim_event_destroy");
    lb_sim_check(sim_stream_destroy(ch->core), "sim_stream_destroy");
    lb_sim_check(sim_stream_destroy(ch->cpu), "sim_stream_destroy");
    lb_sim_check(sim_module_unload(ch->module), "sim_module_unload");
    memset(ch, 0, sizeof *ch);
}

enum {
    EV_START,
    EV_AICORE_START,
    EV_AICORE_DONE,
    EV_AICPU_DONE,
    EV_SERIAL_TAIL
};
#define SCHED_MAX 4096u

int lb_chain_enqueue(lb_chain *ch, const kctx_platform_ops *ops, sim_stream caller, uint32_t nargs,
                     uint32_t blocks, int read_device) {
    const uint32_t workers = blocks < ch->cores ? (blocks ? blocks : 1) : ch->cores;
    int st, dev = -1;
    uint64_t id = ++ch->seq;
    uint64_t acquire_params[2] = {0, id};         /* 16 B */
    uint64_t worker_params[5] = {0, id, 0, 0, 0}; /* 40 B */
    _Alignas(16) uint64_t sched[SCHED_MAX / 8];   /* 48 B + 16 B per arg */
    size_t ssize = 48 + (size_t)nargs * 16;
    if (ssize > SCHED_MAX) return SIM_INVALID_VALUE;
    sched[0] = 0, sched[1] = id, sched[2] = 0, sched[3] = 0;
    sched[4] = (uint64_t)nargs << 32, sched[5] = 0;
    for (uint32_t i = 0; i < nargs; i++) sched[6 + 2 * i] = i, sched[7 + 2 * i] = 0;
    if (read_device && (st = ops->current_device(&dev)) != 0) return st;
    if ((st = ops->event_record(ch->ev[EV_START], caller)) != 0) return st;
    if ((st = ops->stream_wait_event(ch->cpu, ch->ev[EV_START])) != 0) return st;
    if ((st = ops->launch(ch->cpu, ch->noop, KCTX_PTARGET_AICPU, 1, acquire_params,
                          sizeof acquire_params)) != 0)
        return st;
    if ((st = ops->event_record(ch->ev[EV_AICORE_START], ch->cpu)) != 0) return st;
    if ((st = ops->stream_wait_event(ch->core, ch->ev[EV_AICORE_START])) != 0) return st;
    if ((st = ops->launch(ch->core, ch->noop, KCTX_PTARGET_AICORE, workers, worker_params,
                          sizeof worker_params)) != 0)
        return st;
    if ((st = ops->event_record(ch->ev[EV_AICORE_DONE], ch->core)) != 0) return st;
    if ((st = ops->launch(ch->cpu, ch->noop, KCTX_PTARGET_AICPU, 1, sched, ssize)) != 0) return st;
    if ((st = ops->stream_wait_event(ch->cpu, ch->ev[EV_AICORE_DONE])) != 0) return st;
    if ((st = ops->event_record(ch->ev[EV_AICPU_DONE], ch->cpu)) != 0) return st;
    if ((st = ops->stream_wait_event(caller, ch->ev[EV_AICPU_DONE])) != 0) return st;
    return ops->event_record(ch->ev[EV_SERIAL_TAIL], caller);
}

int lb_chain_enqueue_ho(lb_chain *ch, const kctx_platform_ops *ops, sim_stream caller,
                        uint32_t ntasks, uint32_t block_dim, uint32_t nbindings, int read_device) {
    int st, dev = -1;
    uint64_t id = ++ch->seq;
    uint64_t step[3] = {0, id, 0}; /* 24 B: arch, launch id, flags */
    enum {
        MAX_BINDINGS = 64
    };
    if (nbindings > MAX_BINDINGS) return SIM_INVALID_VALUE;
    _Alignas(16) uint64_t block[4 + MAX_BINDINGS]; /* the task ABI's header, then the bindings */
    if (read_device && (st = ops->current_device(&dev)) != 0) return st;
    if ((st = ops->event_record(ch->ev[EV_START], caller)) != 0) return st;
    if ((st = ops->stream_wait_event(ch->cpu, ch->ev[EV_START])) != 0) return st;
    if ((st = ops->launch(ch->cpu, ch->noop, KCTX_PTARGET_AICPU, 1, step, sizeof step)) != 0)
        return st;
    if ((st = ops->event_record(ch->ev[EV_AICORE_START], ch->cpu)) != 0) return st;
    if ((st = ops->stream_wait_event(ch->core, ch->ev[EV_AICORE_START])) != 0) return st;
    for (uint32_t t = 0; t < ntasks; t++) {
        block[0] = 0;                                              /* runtime image */
        block[1] = id;                                             /* launch id */
        block[2] = 2u | ((uint64_t)t << 32);                       /* flags (gated), task */
        block[3] = (uint64_t)nbindings << 32;                      /* function id, bindings */
        for (uint32_t i = 0; i < nbindings; i++) block[4 + i] = i; /* from the args */
        if ((st = ops->launch(ch->core, ch->noop, KCTX_PTARGET_AICORE, block_dim, block,
                              32 + (size_t)nbindings * 8)) != 0)
            return st;
    }
    if ((st = ops->event_record(ch->ev[EV_AICORE_DONE], ch->core)) != 0) return st;
    if ((st = ops->stream_wait_event(ch->cpu, ch->ev[EV_AICORE_DONE])) != 0) return st;
    if ((st = ops->launch(ch->cpu, ch->noop, KCTX_PTARGET_AICPU, 1, step, sizeof step)) != 0)
        return st;
    if ((st = ops->event_record(ch->ev[EV_AICPU_DONE], ch->cpu)) != 0) return st;
    if ((st = ops->stream_wait_event(caller, ch->ev[EV_AICPU_DONE])) != 0) return st;
    return ops->event_record(ch->ev[EV_SERIAL_TAIL], caller);
}

/* ---- misc ------------------------------------------------------------------------ */

uint32_t lb_core_count(void) {
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    int dev = 0;
    lb_sim_check(sim_get_device(&dev), "sim_get_device");
    lb_sim_check(sim_device_get_props(dev, &p), "sim_device_get_props");
    return (uint32_t)p.aicore_count;
}
