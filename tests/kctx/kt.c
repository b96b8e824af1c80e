/*
 * kt.c — registration, the context's checks, skips, the per-test teardown proof (objects,
 * allocations, contexts, claims, lifecycle counters), files, the callable
 * images and main() of every kernel-context test executable.
 */
#include "kt.h"

#include "kctx_test_common.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_MAX_TESTS 128
#define KT_MAX_DEVICES 16
#define KT_MAX_TRACKED 1024

typedef struct kt_test {
    const char *name;
    kt_test_fn fn;
} kt_test;

static kt_test g_tests[KT_MAX_TESTS];
static int g_ntests;
static atomic_int g_skipped; /* the running test called kt_skip */

void kt_register(const char *name, kt_test_fn fn) {
    if (g_ntests == KT_MAX_TESTS) {
        fprintf(stderr, "kt: too many tests (raise KT_MAX_TESTS)\n");
        abort();
    }
    g_tests[g_ntests++] = (kt_test){name, fn};
}

void kt_skip(const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    printf("    skipped: %s\n", why);
    fflush(stdout);
    atomic_store(&g_skipped, 1);
}

/* ---- checks ------------------------------------------------------------------ */

int kt_check_phase(kctx_context ctx, kctx_phase want, const char *ectx, const char *file,
                   int line) {
    kctx_phase p = (kctx_phase)-1;
    kctx_status st = kctx_get_phase(ctx, &p);
    if (st == KCTX_OK && p == want) return ktc_held();
    return ktc_fail(file, line, "CHECK_PHASE", ectx, "%s (%s), expected %s; last error: %s",
                    st ? "-" : kctx_phase_name(p), kctx_status_name(st), kctx_phase_name(want),
                    kctx_last_error(ctx));
}

int kt_check_mode(kctx_context ctx, kctx_mode want, const char *ectx, const char *file, int line) {
    static const char *const names[] = {"NONE", "KERNEL", "PROGRAM"};
    kctx_mode m = (kctx_mode)-1;
    kctx_status st = kctx_get_mode(ctx, &m);
    if (st == KCTX_OK && m == want) return ktc_held();
    return ktc_fail(file, line, "CHECK_MODE", ectx, "%s (%s), expected %s",
                    st || (unsigned)m > 2 ? "-" : names[m], kctx_status_name(st), names[want]);
}

/* ---- contexts -------------------------------------------------------------------- */

static pthread_mutex_t g_track_lock = PTHREAD_MUTEX_INITIALIZER;
static kctx_context g_tracked[KT_MAX_TRACKED];
static int g_ntracked;

kctx_context kt_create(void) {
    kctx_context c = 0;
    if (!CHECK_OK(kctx_context_create(NULL, &c))) return 0;
    pthread_mutex_lock(&g_track_lock);
    if (g_ntracked < KT_MAX_TRACKED)
        g_tracked[g_ntracked++] = c;
    else
        FAIL("too many contexts in one test (raise KT_MAX_TRACKED)");
    pthread_mutex_unlock(&g_track_lock);
    return c;
}

kctx_kernel_config kt_config(uint32_t prepare_timeout_ms) {
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    if (prepare_timeout_ms) cfg.prepare_timeout_ms = prepare_timeout_ms;
    return cfg;
}

kctx_context kt_kernel_ctx(void) {
    kctx_context c = kt_create();
    if (!c) return 0;
    kctx_kernel_config cfg = kt_config(0);
    if (!CHECK_OK(kctx_kernel_init(c, &cfg))) return 0;
    return c;
}

const kctx_strategy kt_strategies[2] = {KCTX_STRATEGY_RESIDENT, KCTX_STRATEGY_HOST_ORDERED};

kctx_context kt_strategy_ctx(kctx_strategy strategy, kt_image img, uint64_t id) {
    kctx_context c = kt_create();
    if (!c) return 0;
    kctx_kernel_config cfg = kt_config(0);
    cfg.strategy = strategy;
    if (!CHECK_OK(kctx_kernel_init(c, &cfg))) {
        CHECK_OK(kctx_destroy(c));
        return 0;
    }
    if (img.bytes && !CHECK_OK(kctx_prepare(c, id, img.bytes, img.size))) {
        kt_finish(c);
        return 0;
    }
    return c;
}

void kt_check_launches(kctx_context ctx, uint64_t id) {
    sim_stream s = 0;
    if (!CHECK_SIM_OK(sim_stream_create(&s))) return;
    CHECK_OK(kctx_launch(ctx, id, NULL, 0, s));
    CHECK_SIM_OK(sim_stream_synchronize(s));
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_OK(kctx_check(ctx, &rep));
    CHECK_K(rep.device_status, KCTX_OK);
    CHECK_SIM_OK(sim_stream_destroy(s));
}

kctx_context kt_prepared_ctx(kt_image img, uint64_t id) {
    if (!img.bytes) return 0;
    kctx_context c = kt_kernel_ctx();
    if (c && !CHECK_OK(kctx_prepare(c, id, img.bytes, img.size))) {
        kt_finish(c);
        return 0;
    }
    return c;
}

void kt_finish(kctx_context ctx) {
    CHECK_OK(kctx_close(ctx));
    CHECK_OK(kctx_destroy(ctx));
}

kctx_phase kt_phase(kctx_context ctx) {
    kctx_phase p = (kctx_phase)-1;
    CHECK_OK(kctx_get_phase(ctx, &p));
    return p;
}

kctx_resource_info kt_resources(kctx_context ctx) {
    /* KCTX_RESOURCE_INFO_INIT names one field only, which -Wextra rejects
     * (-Wmissing-field-initializers); fill the struct by hand. */
    kctx_resource_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    CHECK_OK(kctx_get_resources(ctx, &info));
    return info;
}

sim_stream kt_aicpu_stream(kctx_context ctx) { return kt_resources(ctx).aicpu_stream; }

kctx_status kt_runtime_error(kctx_context ctx) {
    kctx_status s = (kctx_status)-1;
    char msg[256];
    CHECK_OK(kctx_runtime_error(ctx, &s, msg, sizeof msg));
    return s;
}

kctx_status kt_teardown_error(kctx_context ctx) {
    kctx_status s = (kctx_status)-1;
    char msg[256];
    CHECK_OK(kctx_teardown_error(ctx, &s, msg, sizeof msg));
    return s;
}

/* ---- the device, as its owner, and the lifecycle accounting (K4) -------------------- */

static int g_ndev;
static uint64_t g_lc_base[KT_MAX_DEVICES][SIM_LIFECYCLE_COUNT_];
static atomic_ullong g_lc_expected[KT_MAX_DEVICES][SIM_LIFECYCLE_COUNT_];
static const char *const k_lc_names[SIM_LIFECYCLE_COUNT_] = {"INIT", "FINALIZE", "SET_DEVICE",
                                                             "RESET_DEVICE"};

int kt_device_count(void) { return g_ndev; }

void kt_expect_lifecycle(int device, sim_lifecycle_op op, uint64_t n) {
    for (int d = 0; d < g_ndev; d++)
        if (device < 0 || device == d) atomic_fetch_add(&g_lc_expected[d][op], n);
}

void kt_set_device(int device) {
    if (CHECK_SIM_OK(sim_set_device(device)))
        kt_expect_lifecycle(device, SIM_LIFECYCLE_SET_DEVICE, 1);
}

void kt_owner_reset(void) {
    int d = -1;
    CHECK_SIM_OK(sim_get_device(&d));
    if (CHECK_SIM_OK(sim_device_reset())) kt_expect_lifecycle(d, SIM_LIFECYCLE_RESET_DEVICE, 1);
}

static void lc_read(uint64_t out[KT_MAX_DEVICES][SIM_LIFECYCLE_COUNT_]) {
    for (int d = 0; d < g_ndev; d++)
        for (int op = 0; op < SIM_LIFECYCLE_COUNT_; op++)
            if (sim_lifecycle_count(d, (sim_lifecycle_op)op, &out[d][op]) != SIM_OK) out[d][op] = 0;
}

void kt_lifecycle_rebaseline(void) {
    lc_read(g_lc_base);
    for (int d = 0; d < g_ndev; d++)
        for (int op = 0; op < SIM_LIFECYCLE_COUNT_; op++) atomic_store(&g_lc_expected[d][op], 0);
}

static void lc_check(void) {
    uint64_t now[KT_MAX_DEVICES][SIM_LIFECYCLE_COUNT_];
    lc_read(now);
    for (int d = 0; d < g_ndev; d++)
        for (int op = 0; op < SIM_LIFECYCLE_COUNT_; op++) {
            uint64_t moved = now[d][op] - g_lc_base[d][op],
                     want = atomic_load(&g_lc_expected[d][op]);
            if (moved == want) continue;
            ktc_fail(NULL, 0, NULL, NULL,
                     "K4: device %d: %llu lifecycle call(s) of %s during the test, but the test "
                     "itself made %llu (kctx made the difference)",
                     d, (unsigned long long)moved, k_lc_names[op], (unsigned long long)want);
        }
}

sim_capture_mode kt_capture_mode(void) {
    sim_capture_mode m = SIM_CAPTURE_MODE_GLOBAL;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m));
    sim_capture_mode old = m;
    CHECK_SIM_OK(sim_thread_exchange_capture_mode(&m));
    return old;
}

kt_snap kt_snap_take(int device) {
    kt_snap s;
    memset(&s, 0, sizeof s);
    s.o.size = sizeof s.o;
    CHECK_SIM_OK(sim_object_counts_get(device, &s.o));
    CHECK_SIM_OK(sim_mem_stats(device, &s.live_count, &s.live_bytes));
    return s;
}

int kt_check_snap(const kt_snap *want, const kt_snap *got, const char *what, const char *file,
                  int line) {
    static const char *const names[] = {"streams",          "events",      "modules",
                                        "graphs",           "graph execs", "pending hooks",
                                        "live allocations", "live bytes"};
    uint64_t a[8] = {want->o.streams,  want->o.events,      want->o.modules,
                     want->o.graphs,   want->o.graph_execs, want->o.hooks_pending,
                     want->live_count, want->live_bytes};
    uint64_t b[8] = {got->o.streams,     got->o.events,        got->o.modules,  got->o.graphs,
                     got->o.graph_execs, got->o.hooks_pending, got->live_count, got->live_bytes};
    char seen[512] = "";
    size_t n = 0;
    for (int i = 0; i < 8; i++) {
        if (a[i] == b[i] || n >= sizeof seen) continue;
        n += (size_t)snprintf(seen + n, sizeof seen - n, "%s%s %llu, expected %llu", n ? "; " : "",
                              names[i], (unsigned long long)b[i], (unsigned long long)a[i]);
    }
    return seen[0] ? ktc_fail(file, line, "CHECK_SNAP", what, "%s", seen) : ktc_held();
}

/* ---- state -------------------------------------------------------------------------- */

uint64_t kt_release_calls(void) {
    return kt_calls(SIM_OP_STREAM_DESTROY) + kt_calls(SIM_OP_EVENT_DESTROY) +
           kt_calls(SIM_OP_MODULE_UNLOAD) + kt_calls(SIM_OP_FREE);
}

uint64_t kt_destructive_calls(void) {
    static const sim_op ops[] = {
        SIM_OP_STREAM_CREATE, SIM_OP_EVENT_CREATE, SIM_OP_MODULE_LOAD, SIM_OP_MALLOC,
        SIM_OP_MEMCPY_ASYNC, SIM_OP_MEMSET_ASYNC, SIM_OP_LAUNCH_KERNEL, SIM_OP_EVENT_RECORD,
        SIM_OP_STREAM_WAIT_EVENT,
        /* set device / reset are lifecycle calls: the test makes them as the
         * device's owner, and K4 is checked separately by the lifecycle counters */
        SIM_OP_STREAM_SYNCHRONIZE, SIM_OP_MEMCPY, SIM_OP_DEVICE_SYNCHRONIZE,
        SIM_OP_LAUNCH_HOST_FUNC};
    uint64_t n = kt_release_calls();
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) n += kt_calls(ops[i]);
    return n;
}

kt_state kt_state_take(kctx_context ctx) {
    kt_state s;
    memset(&s, 0, sizeof s);
    s.phase = kt_phase(ctx);
    CHECK_OK(kctx_get_mode(ctx, &s.mode));
    CHECK_OK(kctx_get_device(ctx, &s.device));
    s.res = kt_resources(ctx);
    s.runtime = kt_runtime_error(ctx);
    s.teardown = kt_teardown_error(ctx);
    s.dev = kt_snap_take(s.device >= 0 ? s.device : 0);
    s.destructive = kt_destructive_calls();
    return s;
}

int kt_check_state(const kt_state *want, const kt_state *got, const char *file, int line) {
    char seen[768] = "";
    size_t n = 0;
#define KT_FIELD_(f)                                                                               \
    if (want->f != got->f && n < sizeof seen)                                                      \
        n += (size_t)snprintf(seen + n, sizeof seen - n, "%s%s was %llu, now %llu", n ? "; " : "", \
                              #f, (unsigned long long)want->f, (unsigned long long)got->f);
    KT_FIELD_(phase)
    KT_FIELD_(mode)
    KT_FIELD_(device)
    KT_FIELD_(runtime)
    KT_FIELD_(teardown)
    KT_FIELD_(res.aicpu_stream)
    KT_FIELD_(res.aicore_stream)
    KT_FIELD_(res.upload_stream)
    for (int i = 0; i < 5; i++) KT_FIELD_(res.events[i])
    KT_FIELD_(res.programs_module)
    KT_FIELD_(res.runtime_image)
    KT_FIELD_(res.arch_table)
    KT_FIELD_(res.args_block)
    KT_FIELD_(res.callables)
    KT_FIELD_(res.uploads)
    KT_FIELD_(res.upload_bytes)
    KT_FIELD_(destructive)
#undef KT_FIELD_
    int ok = seen[0] ? ktc_fail(file, line, "CHECK_UNCHANGED", "state", "%s", seen) : ktc_held();
    return kt_check_snap(&want->dev, &got->dev, "state: device", file, line) && ok;
}

/* ---- files -------------------------------------------------------------------------- */

static void *read_file(const char *path, size_t *size) {
    char why[512] = "";
    void *buf = ktc_read_file(path, size, why, sizeof why);
    if (!buf) fprintf(stderr, "kt: %s\n", why);
    return buf;
}

char *kt_read_text(const char *path) { return read_file(path, NULL); }

unsigned kt_count(const char *hay, const char *needle) {
    if (!hay || !needle || !*needle) return 0;
    unsigned n = 0;
    size_t len = strlen(needle);
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += len) n++;
    return n;
}

/* ---- images -------------------------------------------------------------------------- */

static pthread_once_t g_images_once = PTHREAD_ONCE_INIT;
static kt_image g_module, g_noop, g_append, g_opencl;

static kt_image build(const char *name, const char *entry, int with_tensor, kctx_variant_kind kind,
                      const void *blob, size_t blob_size) {
    kt_image img = {NULL, 0};
    kctx_image_builder *b = kctx_image_builder_new(name);
    if (!b) return img;
    uint32_t fid = 0;
    if (with_tensor) kctx_image_builder_param(b, "log", KCTX_PARAM_TENSOR_INOUT);
    kctx_image_builder_child(b, name, entry, &fid);
    if (with_tensor) kctx_image_builder_child_param(b, "log", KCTX_PARAM_TENSOR);
    kctx_image_builder_variant(b, kind, blob, blob_size);
    kctx_image_builder_task(b, fid, 1, NULL);
    if (with_tensor) kctx_image_builder_bind(b, KCTX_BIND_TENSOR, 0, 0);
    void *out = NULL;
    size_t size = 0;
    char msg[256] = "";
    if (kctx_image_builder_finish(b, &out, &size, msg, sizeof msg) != KCTX_BUILD_OK)
        fprintf(stderr, "kt: cannot build image %s: %s\n", name, msg);
    else
        img = (kt_image){out, size};
    kctx_image_builder_free(b);
    return img;
}

static void images_init(void) {
    size_t size = 0;
    void *mod = read_file(KT_SIM_TEST_KERNELS, &size);
    if (!mod) return;
    g_module = (kt_image){mod, size};
    g_noop = build("noop", "t_noop", 0, KCTX_VARIANT_SIM_ELF, mod, size);
    g_append = build("append", "t_append", 1, KCTX_VARIANT_SIM_ELF, mod, size);
    static const char src[] = "__kernel void k_noop(void) {}\n";
    g_opencl = build("noop_cl", "k_noop", 0, KCTX_VARIANT_OPENCL_C, src, sizeof src - 1);
}

static kt_image image_or_fail(const kt_image *img, const char *what) {
    pthread_once(&g_images_once, images_init);
    if (!img->bytes) ktc_fail(NULL, 0, NULL, NULL, "kt: the %s image is not available", what);
    return *img;
}

kt_image kt_image_noop(void) { return image_or_fail(&g_noop, "noop"); }
kt_image kt_image_append(void) { return image_or_fail(&g_append, "append"); }
kt_image kt_image_opencl(void) { return image_or_fail(&g_opencl, "opencl"); }
kt_image kt_test_kernels_module(void) { return image_or_fail(&g_module, "test kernels module"); }

void *kt_image_dup(kt_image img) {
    void *p = aligned_alloc(8, (img.size + 7) & ~(size_t)7);
    if (p) memcpy(p, img.bytes, img.size);
    return p;
}

sim_status kt_load_kernel(const char *entry, sim_module *module, sim_function *fn) {
    kt_image m = kt_test_kernels_module();
    if (!m.bytes) return SIM_INVALID_VALUE;
    sim_status st = sim_module_load(module, m.bytes, m.size);
    if (st) return st;
    st = sim_module_get_function(fn, *module, entry);
    if (st) sim_module_unload(*module);
    return st;
}

/* ---- threads ------------------------------------------------------------------------------ */

typedef struct thread_arg {
    pthread_barrier_t *barrier;
    void *(*fn)(void *);
    void *arg;
} thread_arg;

static void *thread_main(void *p) {
    thread_arg *a = p;
    pthread_barrier_wait(a->barrier);
    return a->fn(a->arg);
}

void kt_run_threads(int n, void *(*fn)(void *), void *const *args) {
    pthread_t *t = calloc((size_t)n, sizeof *t);
    thread_arg *a = calloc((size_t)n, sizeof *a);
    pthread_barrier_t barrier;
    if (!t || !a || pthread_barrier_init(&barrier, NULL, (unsigned)n) != 0) {
        CHECK(!"kt_run_threads: setup failed");
        free(t);
        free(a);
        return;
    }
    int started = 0;
    for (int i = 0; i < n; i++) {
        a[i] = (thread_arg){&barrier, fn, args ? args[i] : NULL};
        if (pthread_create(&t[i], NULL, thread_main, &a[i]) != 0) break;
        started++;
    }
    if (started != n) {
        /* cannot happen in practice; do not leave threads stuck in the barrier */
        fprintf(stderr, "kt: pthread_create failed after %d threads\n", started);
        abort();
    }
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    free(t);
    free(a);
}

int kt_fault(sim_op op, uint64_t nth, int persistent) {
    sim_fault f = SIM_FAULT_INIT;
    f.op = (int)op;
    f.this_thread_only = 1;
    f.nth = nth;
    f.persistent = persistent;
    int id = -1;
    CHECK_SIM_OK(sim_fault_arm(&f, &id));
    return id;
}

/* ---- the per-test teardown proof ------------------------------------------------------------ */

/* Undo what a test may have left armed or changed on the main thread. */
static void restore_state(void) {
    sim_hold_release_all();
    kctx_seam_hold_release_all();
    sim_fault_clear_all();
    sim_capture_mode mode = SIM_CAPTURE_MODE_GLOBAL;
    sim_thread_exchange_capture_mode(&mode);
    int dev = -1;
    if (sim_get_device(&dev) != SIM_OK || dev != 0) sim_set_device(0);
}

static void check_tracked_dead(void) {
    pthread_mutex_lock(&g_track_lock);
    for (int i = 0; i < g_ntracked; i++) {
        kctx_phase p;
        kctx_status st = kctx_get_phase(g_tracked[i], &p);
        if (st == KCTX_INVALID_HANDLE) continue;
        ktc_fail(NULL, 0, NULL, NULL,
                 "teardown: context 0x%llx is still alive (phase %s): tests end with contexts "
                 "destroyed",
                 (unsigned long long)g_tracked[i], st ? "?" : kctx_phase_name(p));
    }
    pthread_mutex_unlock(&g_track_lock);
}

/* No claim is left behind: a fresh kernel context initialises and closes on
 * every device. */
static void check_claims(void) {
    for (int d = 0; d < g_ndev; d++) {
        sim_set_device(d);
        kctx_context c = 0;
        if (kctx_context_create(NULL, &c) != KCTX_OK) {
            ktc_fail(NULL, 0, NULL, NULL, "teardown: cannot create a probe context: %s",
                     kctx_thread_last_error());
            continue;
        }
        kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
        kctx_status st = kctx_kernel_init(c, &cfg);
        if (st != KCTX_OK)
            ktc_fail(NULL, 0, NULL, NULL,
                     "teardown: a kernel init on device %d fails with %s (%s): a claim was left "
                     "behind",
                     d, kctx_status_name(st), kctx_thread_last_error());
        if (kctx_close(c) != KCTX_OK || kctx_destroy(c) != KCTX_OK)
            ktc_fail(NULL, 0, NULL, NULL,
                     "teardown: the probe context on device %d did not close: %s", d,
                     kctx_thread_last_error());
    }
    sim_set_device(0);
}

/* After a failure: reset every device, then close (abandoning, K36) and
 * destroy whatever the test left. */
static void recover(void) {
    sim_hold_release_all();
    kctx_seam_hold_release_all();
    sim_fault_clear_all();
    for (int d = 0; d < g_ndev; d++)
        if (sim_set_device(d) == SIM_OK) sim_device_reset();
    sim_set_device(0);
    pthread_mutex_lock(&g_track_lock);
    for (int i = 0; i < g_ntracked; i++) {
        kctx_close(g_tracked[i]);
        kctx_destroy(g_tracked[i]);
    }
    pthread_mutex_unlock(&g_track_lock);
}

enum {
    RUN_PASSED,
    RUN_FAILED,
    RUN_SKIPPED
};

/* Runs one test and its teardown proof. The proof runs whatever the test's
 * outcome: a skipped test that left something behind is failed. */
static int run_one(const kt_test *t) {
    kt_snap before[KT_MAX_DEVICES];
    printf("[ RUN  ] %s\n", t->name);
    fflush(stdout);
    ktc_test_begin();
    atomic_store(&g_skipped, 0);
    restore_state();
    pthread_mutex_lock(&g_track_lock);
    g_ntracked = 0;
    pthread_mutex_unlock(&g_track_lock);
    for (int d = 0; d < g_ndev; d++) before[d] = kt_snap_take(d);
    kt_lifecycle_rebaseline();
    t->fn();
    sim_hold_release_all();
    kctx_seam_hold_release_all();
    sim_fault_clear_all();
    lc_check(); /* before the harness makes lifecycle calls of its own */
    restore_state();
    check_tracked_dead();
    for (int d = 0; d < g_ndev; d++) {
        kt_snap after = kt_snap_take(d);
        char what[64];
        snprintf(what, sizeof what, "teardown: device %d", d);
        kt_check_snap(&before[d], &after, what, __FILE__, __LINE__);
    }
    check_claims();
    int result = ktc_test_failures() != 0  ? RUN_FAILED
                 : atomic_load(&g_skipped) ? RUN_SKIPPED
                                           : RUN_PASSED;
    static const char *const words[] = {" OK ", "FAIL", "SKIP"};
    fflush(stderr);
    printf("[ %s ] %s\n", words[result], t->name);
    fflush(stdout);
    if (result == RUN_FAILED) recover();
    return result;
}

int main(int argc, char **argv) {
    if (sim_device_count(&g_ndev) != SIM_OK) {
        fprintf(stderr, "kt: sim_device_count failed: %s\n", sim_last_error_message());
        return 1;
    }
    if (g_ndev > KT_MAX_DEVICES) g_ndev = KT_MAX_DEVICES;
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < g_ntests; i++) printf("%s\n", g_tests[i].name);
        return 0;
    }
    unsigned passed = 0, nfailed = 0, skipped = 0;
    for (int a = 1; a < argc; a++) {
        int found = 0;
        for (int i = 0; i < g_ntests; i++) found |= strcmp(argv[a], g_tests[i].name) == 0;
        if (!found) {
            fprintf(stderr, "no test named %s (--list shows them)\n", argv[a]);
            nfailed++;
        }
    }
    for (int i = 0; i < g_ntests; i++) {
        int selected = argc == 1;
        for (int a = 1; a < argc; a++) selected |= strcmp(argv[a], g_tests[i].name) == 0;
        if (!selected) continue;
        switch (run_one(&g_tests[i])) {
        case RUN_PASSED:
            passed++;
            break;
        case RUN_SKIPPED:
            skipped++;
            break;
        default:
            nfailed++;
        }
    }
    /* "N passed, M failed[, K skipped]"; exit 1, 77 or 0 (tests/common) */
    return ktc_summary(stdout, passed, nfailed, skipped);
}
