/*
 * test_acl.c — the acl platform's own tests (docs/acl.md, "What is proven
 * where"), on the ACL driver double (KCTX_ACL_LIBRARY), one mode per ctest
 * entry (the registry decides availability once per process):
 *
 *   test_acl lifecycle DIR STRATEGY  a whole kernel lifecycle (init,
 *        prepare, 50 eager and 3 captured launches, replays, check, close,
 *        destroy) under resident or host-ordered: the double's counters show
 *        zero calls of every never-call entry (acl_abi.h KACL_NEVER: device
 *        and process lifecycle, K4; KACL_NOT_KERNEL_MODE) over the whole of
 *        it, and over the launches no synchronisation, no stream or event
 *        query, no synchronous copy, no allocation and no stream or event
 *        creation (K19, K11) — aclmdlRICaptureGetInfo, the allowed preflight
 *        query, is called (K34), and the launch entry counts.
 *   test_acl refuse STRATEGY  KCTX_ACL_DOUBLE_REFUSE_RT=1: the driver refuses
 *        kctx's sim-built runtime programs as a real runtime would: kernel
 *        init is UNSUPPORTED and names what is missing (issue 25 item 4).
 *   test_acl discard DIR  a captured launch whose capture the framework then
 *        invalidates (a stream query inside it, 107027), a second launch
 *        into it (refused: kctx sees the invalidation), and the end (507903:
 *        the model is discarded): the first launch's K25 lifetime token is
 *        released — close is OK, not BUSY for ever — whichever answer the
 *        runtime gives to acl-platform.md D.1 (ctest runs it with
 *        KCTX_ACL_DOUBLE_DISCARD_FIRES=1 and =0), and released once.
 *   test_acl destroy DIR  K28 seen from the driver's side: on every
 *        destruction path (NEW, NEW after a rolled-back init, CLOSED, the
 *        refused READY, CLOSING and QUARANTINED, a dead handle and 0)
 *        kctx_destroy is served no entry: the double's count of every entry
 *        it served this thread (kacl_double_thread_calls) and the sim's
 *        underneath (sim_thread_calls(SIM_OP_ANY)) stay put, whatever path
 *        a call took to the driver (kctx's seam or around it).
 *   test_acl absent   KCTX_ACL_LIBRARY names no file: unavailable with
 *        dlopen's reason; context creation UNSUPPORTED.
 *   test_acl fatal DIR STRATEGY  through the failing layer in front of the
 *        double (KCTX_ACL_LIBRARY is platform/acl/double/fault_layer.c's
 *        library): each ACL call of kernel init, prepare and close failed
 *        with a fatal code (507010), one per child process (quarantine is
 *        terminal on ACL, K30: the driver sweep driver_fault_sweep_fatal,
 *        which recovers with the owner's reset, is N/A here): the step
 *        answers DEVICE_LOST and the context is quarantined (K29) unless
 *        the adapter absorbed that one failure; quarantined, prepare and
 *        close answer DEVICE_LOST without an ACL call, destroy BUSY, and
 *        the claim is kept (a new context's init is refused) (K30); the
 *        layer saw no violation. (fatal_one DIR STRATEGY K: one child; the
 *        sweep and its checks are tests/common/kctx_test_fatal_sweep.c's, shared
 *        with platform/cuda/tests/test_cuda.c.)
 */
#include "fw.h"

#include <kctx/kctx.h>
#include <kctx/sim.h>

#include "fault_layer.h"
#include "kctx_test_fatal_sweep.h"

#include "kctx_test_common.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const fw_driver *fw_acl_driver(void);

#include "kctx_test_check.h"

static const fw_driver *fw;
static uint64_t (*g_calls)(const char *);

static uint64_t calls(const char *name) {
    uint64_t n = g_calls ? g_calls(name) : UINT64_MAX;
    CHECK(n != UINT64_MAX, "the double counts no entry '%s'", name);
    return n;
}

/* K4: never, over the whole lifecycle (acl_abi.h KACL_NEVER and the
 * KACL_NOT_KERNEL_MODE entries the double exports). */
static const char *const k_never[] = {"aclInit",
                                      "aclFinalize",
                                      "aclrtSetDevice",
                                      "aclrtResetDevice",
                                      "aclrtResetDeviceForce",
                                      "aclrtSetCurrentContext",
                                      "aclrtCreateContext",
                                      "aclrtDestroyContext",
                                      "aclrtSynchronizeDevice",
                                      "aclrtSynchronizeDeviceWithTimeout",
                                      "aclrtSetExceptionInfoCallback",
                                      "aclrtCreateStream",
                                      "aclrtDestroyStreamForce",
                                      "aclrtSynchronizeStream",
                                      "aclrtCreateEvent",
                                      "aclrtCreateEventWithFlag",
                                      "aclrtQueryEventStatus",
                                      "aclrtSynchronizeEvent",
                                      "aclrtSynchronizeEventWithTimeout",
                                      "aclrtMemset",
                                      "aclrtLaunchKernel",
                                      "aclmdlRIExecute"};
#define N_NEVER (sizeof k_never / sizeof k_never[0])
/* K19, K11: not on the launch path. */
static const char *const k_not_on_launch[] = {"aclrtSynchronizeStreamWithTimeout",
                                              "aclrtStreamQuery",
                                              "aclrtMemcpy",
                                              "aclrtMalloc",
                                              "aclrtFree",
                                              "aclrtCreateStreamWithConfig",
                                              "aclrtCreateEventExWithFlag",
                                              "aclrtBinaryLoadFromData"};
#define N_NOT_ON_LAUNCH (sizeof k_not_on_launch / sizeof k_not_on_launch[0])

#define N 1000

static void expect_sum(fw_devptr out, const char *what) {
    static float h[N];
    CHECK_FW_OK(fw, fw->download(h, out, sizeof h));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += h[i] != (float)i + 2.0f * (float)i;
    CHECK(bad == 0, "%s: %d of %d elements wrong", what, bad, N);
}

static uint32_t strategy_of(const char *s) {
    return strcmp(s, "host-ordered") == 0 ? KCTX_STRATEGY_HOST_ORDERED : KCTX_STRATEGY_RESIDENT;
}

static void mode_lifecycle(const char *images, const char *strategy) {
    fw = fw_acl_driver();
    *(void **)&g_calls = dlsym(RTLD_DEFAULT, "kacl_double_calls");
    if (!g_calls) {
        void *lib = dlopen(getenv("KCTX_ACL_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
        if (lib) *(void **)&g_calls = dlsym(lib, "kacl_double_calls");
    }
    CHECK(g_calls != NULL, "the double's counters (KCTX_ACL_LIBRARY=%s)",
          getenv("KCTX_ACL_LIBRARY") ? getenv("KCTX_ACL_LIBRARY") : "(unset)");
    if (!g_calls) return;
    char path[1024], why[256];
    snprintf(path, sizeof path, "%s/vector_add.kctx", images);
    size_t img_size = 0;
    void *img = ktc_read_file(path, &img_size, why, sizeof why);
    CHECK(img != NULL, "%s", why);
    if (!img) return;
    fw_stream s = 0, t = 0;
    fw_devptr a = 0, b = 0, out = 0;
    static float ha[N], hb[N];
    for (int i = 0; i < N; i++) ha[i] = (float)i, hb[i] = 2.0f * (float)i;
    CHECK_FW_OK(fw, fw->stream_create(&s));
    CHECK_FW_OK(fw, fw->stream_create(&t));
    CHECK_FW_OK(fw, fw->mem_alloc(sizeof ha, &a));
    CHECK_FW_OK(fw, fw->mem_alloc(sizeof hb, &b));
    CHECK_FW_OK(fw, fw->mem_alloc(sizeof ha, &out));
    CHECK_FW_OK(fw, fw->upload(a, ha, sizeof ha));
    CHECK_FW_OK(fw, fw->upload(b, hb, sizeof hb));
    const kctx_arg args[4] = {KCTX_TENSOR(a, N * 4), KCTX_TENSOR(b, N * 4), KCTX_TENSOR(out, N * 4),
                              KCTX_SCALAR(N)};

    /* the counters count (before trusting a zero): aclInit ran once, at the
     * framework's load */
    CHECK(calls("aclInit") >= 1, "aclInit counted");
    uint64_t never0[N_NEVER];
    for (size_t i = 0; i < N_NEVER; i++) never0[i] = calls(k_never[i]);

    kctx_context c = 0;
    CHECK_K(kctx_context_create("acl", &c), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = strategy_of(strategy);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
    CHECK_K(kctx_prepare(c, 1, img, img_size), KCTX_OK);

    uint64_t before[N_NOT_ON_LAUNCH];
    for (size_t i = 0; i < N_NOT_ON_LAUNCH; i++) before[i] = calls(k_not_on_launch[i]);
    uint64_t info0 = calls("aclmdlRICaptureGetInfo");
    uint64_t launch0 = calls("aclrtLaunchKernelWithHostArgs");
    for (int k = 0; k < 50; k++) CHECK_K(kctx_launch(c, 1, args, 4, s), KCTX_OK);
    fw_graph g[3] = {0};
    for (int k = 0; k < 3; k++) {
        CHECK_FW_OK(fw, fw->begin_capture(t));
        CHECK_K(kctx_launch(c, 1, args, 4, t), KCTX_OK);
        CHECK_FW_OK(fw, fw->end_capture(t, &g[k]));
    }
    for (size_t i = 0; i < N_NOT_ON_LAUNCH; i++) {
        uint64_t now = calls(k_not_on_launch[i]);
        CHECK(now == before[i], "K19/K11: 53 launches called %s %llu times", k_not_on_launch[i],
              (unsigned long long)(now - before[i]));
    }
    CHECK(calls("aclmdlRICaptureGetInfo") - info0 >= 53,
          "K34: the caller stream's capture info, once per launch at least (%llu)",
          (unsigned long long)(calls("aclmdlRICaptureGetInfo") - info0));
    CHECK(calls("aclrtLaunchKernelWithHostArgs") - launch0 >= 53 * 2,
          "the launch entry counts: %llu",
          (unsigned long long)(calls("aclrtLaunchKernelWithHostArgs") - launch0));
    CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
    expect_sum(out, "50 eager launches");
    for (int k = 0; k < 3; k++) {
        fw_exec x = 0;
        CHECK_FW_OK(fw, fw->fill_async(out, 0, N * 4, s));
        CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
        CHECK_FW_OK(fw, fw->graph_instantiate(g[k], &x));
        CHECK_FW_OK(fw, fw->graph_launch(x, t));
        CHECK_FW_OK(fw, fw->stream_sync(t, 10000));
        expect_sum(out, "a replay");
        CHECK_FW_OK(fw, fw->exec_destroy(x));
        CHECK_FW_OK(fw, fw->graph_destroy(g[k]));
    }
    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_K(kctx_check(c, &rep), KCTX_OK);
    CHECK_K(kctx_close(c), KCTX_OK);
    CHECK_K(kctx_destroy(c), KCTX_OK);
    for (size_t i = 0; i < N_NEVER; i++) {
        uint64_t now = calls(k_never[i]);
        CHECK(now == never0[i], "K4: a kernel lifecycle called %s %llu times", k_never[i],
              (unsigned long long)(now - never0[i]));
    }
    CHECK_FW_OK(fw, fw->stream_destroy(s));
    CHECK_FW_OK(fw, fw->stream_destroy(t));
    CHECK_FW_OK(fw, fw->mem_free(a));
    CHECK_FW_OK(fw, fw->mem_free(b));
    CHECK_FW_OK(fw, fw->mem_free(out));
    free(img);
}

/* K28 from the driver's side (ktc_destroy_paths). */
static void mode_destroy(const char *images) {
    char file[1024], why[256];
    snprintf(file, sizeof file, "%s/vector_add.kctx", images);
    size_t img_size = 0;
    void *img = ktc_read_file(file, &img_size, why, sizeof why);
    CHECK(img != NULL, "%s", why);
    if (!img) return;
    ktc_destroy_paths("acl", "KCTX_ACL_LIBRARY", "kacl_double_thread_calls", img, img_size);
    free(img);
}

static void mode_discard(const char *images) {
    fw = fw_acl_driver();
    char path[1024], why[256];
    snprintf(path, sizeof path, "%s/vector_add.kctx", images);
    size_t img_size = 0;
    void *img = ktc_read_file(path, &img_size, why, sizeof why);
    CHECK(img != NULL, "%s", why);
    if (!img) return;
    fw_stream s = 0, t = 0;
    fw_devptr a = 0, b = 0, out = 0;
    CHECK_FW_OK(fw, fw->stream_create(&s));
    CHECK_FW_OK(fw, fw->stream_create(&t));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &a));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &b));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &out));
    const kctx_arg args[4] = {KCTX_TENSOR(a, N * 4), KCTX_TENSOR(b, N * 4), KCTX_TENSOR(out, N * 4),
                              KCTX_SCALAR(N)};
    kctx_context c = 0;
    CHECK_K(kctx_context_create("acl", &c), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
    CHECK_K(kctx_prepare(c, 1, img, img_size), KCTX_OK);
    for (int round = 0; round < 2; round++) {
        fw_graph g = 0;
        CHECK_FW_OK(fw, fw->begin_capture(t));
        CHECK_K(kctx_launch(c, 1, args, 4, t), KCTX_OK);
        /* the framework breaks its own capture: discarded at its end */
        CHECK(fw->stream_query(t) != FW_OK, "a query inside a capture is refused");
        /* kctx sees the invalidated capture (its next launch there is
         * refused): the adapter releases the token then. (A capture
         * invalidated and ended with no kctx call in between is D.1's open
         * case: docs/acl.md.) */
        CHECK_K(kctx_launch(c, 1, args, 4, t), KCTX_CAPTURE_BROKEN);
        fw_status st = fw->end_capture(t, &g);
        CHECK(st == FW_CAPTURE_INVALIDATED, "end: %s (%s)", fw_status_name(st), fw->last_error());
    }
    /* K25: no token is left behind (and none released twice: close's
     * count would go wrong, and the context would close while one lives) */
    CHECK_K(kctx_close(c), KCTX_OK);
    CHECK_K(kctx_destroy(c), KCTX_OK);
    CHECK_FW_OK(fw, fw->stream_destroy(s));
    CHECK_FW_OK(fw, fw->stream_destroy(t));
    CHECK_FW_OK(fw, fw->mem_free(a));
    CHECK_FW_OK(fw, fw->mem_free(b));
    CHECK_FW_OK(fw, fw->mem_free(out));
    free(img);
}

static void mode_refuse(const char *strategy) {
    fw = fw_acl_driver();
    kctx_context c = 0;
    CHECK_K(kctx_context_create("acl", &c), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = strategy_of(strategy);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_UNSUPPORTED);
    const char *m = kctx_thread_last_error();
    CHECK(strstr(m, "runtime programs") && strstr(m, "CANN"), "names what is missing: %s", m);
    CHECK_K(kctx_destroy(c), KCTX_OK);
}

static void mode_absent(void) {
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_K(kctx_get_platform_caps("acl", &caps), KCTX_OK);
    CHECK(caps.built && !caps.available, "built, not available");
    CHECK(strstr(caps.reason, "ACL runtime not found") && strstr(caps.reason, "/nonexistent"),
          "the reason: %s", caps.reason);
    /* the capability query says where it runs, available or not (issue 25) */
    CHECK(caps.note && strstr(caps.note, "runs only where kctx's runtime programs load") &&
              strstr(caps.note, "double"),
          "the note: %s", caps.note ? caps.note : "(null)");
    kctx_context c = 0;
    CHECK_K(kctx_context_create("acl", &c), KCTX_UNSUPPORTED);
}

/* One child of mode_fatal: call k of init, prepare and close fails with the
 * fatal code (kctx_test_fatal_sweep.h). Exit 3: call k was not reached. */
static int mode_fatal_one(const char *images, const char *strategy, uint64_t k) {
    fw = fw_acl_driver();
    const kfl_control *L = fw->fault_layer ? fw->fault_layer() : NULL;
    CHECK(L != NULL, "no failing layer in front of the double (KCTX_ACL_LIBRARY=%s)",
          getenv("KCTX_ACL_LIBRARY") ? getenv("KCTX_ACL_LIBRARY") : "(unset)");
    char path[1024], why[256];
    snprintf(path, sizeof path, "%s/vector_add.kctx", images);
    size_t img_size = 0;
    void *img = ktc_read_file(path, &img_size, why, sizeof why);
    CHECK(img != NULL, "%s", why);
    if (!L || !img) return ktc_check_summary();
    int rc = ktc_fatal_one("acl", L, strategy_of(strategy), img, img_size, k);
    free(img);
    return rc;
}

/* Each call k = 1, 2, ... in a child of its own, until one is not reached. */
static void mode_fatal(const char *self, const char *images, const char *strategy) {
    const char *args[] = {"fatal_one", images, strategy};
    uint64_t n = ktc_fatal_sweep(self, args, 3);
    CHECK(n > 20, "%llu ACL calls swept (0: a child failed, above)", (unsigned long long)n);
    printf("%llu ACL calls of init, prepare and close, each failed once with a fatal code\n",
           (unsigned long long)n);
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "lifecycle") == 0)
        mode_lifecycle(argv[2], argv[3]);
    else if (argc >= 3 && strcmp(argv[1], "discard") == 0)
        mode_discard(argv[2]);
    else if (argc >= 3 && strcmp(argv[1], "destroy") == 0)
        mode_destroy(argv[2]);
    else if (argc >= 3 && strcmp(argv[1], "refuse") == 0)
        mode_refuse(argv[2]);
    else if (argc >= 2 && strcmp(argv[1], "absent") == 0)
        mode_absent();
    else if (argc >= 4 && strcmp(argv[1], "fatal") == 0)
        mode_fatal(argv[0], argv[2], argv[3]);
    else if (argc >= 5 && strcmp(argv[1], "fatal_one") == 0)
        return mode_fatal_one(argv[2], argv[3], strtoull(argv[4], NULL, 10));
    else {
        fprintf(stderr,
                "usage: %s lifecycle IMAGES STRATEGY | refuse STRATEGY | discard IMAGES |\n"
                "       destroy IMAGES | absent | fatal IMAGES STRATEGY\n",
                argv[0]);
        return 2;
    }
    return ktc_check_summary();
}
