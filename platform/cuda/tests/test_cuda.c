/*
 * test_cuda.c — the cuda platform's own tests (docs/cuda.md), one mode per
 * ctest entry (the platform registry decides availability once per
 * process, so each driver setting is its own process):
 *
 *   test_cuda lifecycle DIR  any driver (ctest: the driver double); DIR holds
 *                          images with kernels for it. The adapter's own
 *                          driver-call counters over a whole kernel
 *                          lifecycle: zero context/device lifecycle calls
 *                          (K4), no synchronising call, allocation or
 *                          stream/event creation on the launch path
 *                          (K19, K11); caller stream 0 eager, refused under
 *                          capture (K18, K34).
 *   test_cuda fatal DIR    the driver double only: a device made lost (the
 *                          sim's sim_device_make_fatal under the double)
 *                          quarantines the context (K29); with no device
 *                          epoch on CUDA the quarantine is terminal (K30):
 *                          close says so and keeps everything, destroy is
 *                          BUSY; still no lifecycle call (K4).
 *   test_cuda fatal_sweep DIR  through the failing layer in front of the
 *                          double (KCTX_CUDA_DRIVER is platform/cuda/double/
 *                          fault_layer.c's library): each driver call of
 *                          kernel init, prepare and close failed with a
 *                          fatal code (CUDA_ERROR_LAUNCH_FAILED), one per
 *                          child process (quarantine is terminal on CUDA,
 *                          K30: the driver sweep driver_fault_sweep_fatal,
 *                          which recovers with the owner's reset, is N/A
 *                          here): the step answers DEVICE_LOST and the
 *                          context is quarantined (K29) unless the call
 *                          came before the context held anything or the
 *                          adapter absorbed that one failure; quarantined,
 *                          prepare and close answer DEVICE_LOST without a
 *                          driver call, destroy BUSY, and the claim is kept
 *                          (a new context's init is refused) (K30); the
 *                          layer saw no violation. (fatal_one DIR K: one
 *                          child; tests/common/kctx_test_fatal_sweep.c, shared
 *                          with the acl platform's test.)
 *   test_cuda destroy DIR  the driver double only: K28 seen from the
 *                          driver's side. On every destruction path (NEW,
 *                          NEW after a rolled-back init, CLOSED, the
 *                          refused READY, CLOSING and QUARANTINED, a dead
 *                          handle and 0) kctx_destroy is served no entry:
 *                          the double's count of every entry it served this
 *                          thread (kctx_cuda_double_thread_calls) and the
 *                          sim's underneath (sim_thread_calls(SIM_OP_ANY))
 *                          stay put. They count what reaches the driver,
 *                          however it got there: a call that bypasses
 *                          kctx's seam moves them too.
 *   test_cuda absent       KCTX_CUDA_DRIVER names no file: `kctx
 *                          platforms` reason "driver not found", context
 *                          creation UNSUPPORTED with it, no driver call.
 *   test_cuda nodevice     the double playing a driver that finds no device
 *   test_cuda olddriver    the double playing driver 12.4 (below the ABI
 *                          kctx pins): both unavailable with that reason.
 *   test_cuda stub         KCTX_CUDA_DRIVER = the toolkit's stub libcuda
 *                          (answers CUDA_ERROR_STUB_LIBRARY to everything):
 *                          the reason names the stub; creation UNSUPPORTED.
 */
#include "fw.h"

#include <kctx/cuda.h>
#include <kctx/image.h>
#include <kctx/kctx.h>

#include "fault_layer.h"
#include "kctx_test_common.h"
#include "kctx_test_fatal_sweep.h"

#include <kctx/sim.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const fw_driver *fw_cuda_driver(void); /* platform/cuda/fw_cuda.c */

#include "kctx_test_check.h"

static uint64_t calls(const char *entry) {
    uint64_t n = UINT64_MAX;
    kctx_status st = kctx_cuda_driver_calls(entry, &n);
    CHECK(st == KCTX_OK, "kctx_cuda_driver_calls(%s): %s (%s)", entry, kctx_status_name(st),
          kctx_thread_last_error());
    return n;
}

/* The entries a kernel context must never call: K4's device and context
 * lifecycle. */
static const char *const k_lifecycle[] = {"cuCtxSetCurrent",
                                          "cuCtxCreate",
                                          "cuCtxDestroy",
                                          "cuCtxPushCurrent",
                                          "cuCtxPopCurrent",
                                          "cuDevicePrimaryCtxRetain",
                                          "cuDevicePrimaryCtxRelease",
                                          "cuDevicePrimaryCtxReset"};
#define N_LIFECYCLE (sizeof k_lifecycle / sizeof k_lifecycle[0])
/* What the launch path must not call (K19: no wait, no query but the
 * capture info; K11: no allocation, no stream or event creation). */
static const char *const k_not_on_launch[] = {
    "cuStreamQuery",    "cuStreamSynchronize", "cuEventQuery", "cuEventSynchronize",
    "cuCtxSynchronize", "cuMemAlloc",          "cuMemFree",    "cuStreamCreate",
    "cuEventCreate",    "cuModuleLoadData",    "cuMemcpyHtoD", "cuMemcpyDtoH"};
#define N_NOT_ON_LAUNCH (sizeof k_not_on_launch / sizeof k_not_on_launch[0])

static const fw_driver *fw;

static void *read_image(const char *dir, const char *name, size_t *size) {
    char path[1024], why[256];
    snprintf(path, sizeof path, "%s/%s.kctx", dir, name);
    void *b = ktc_read_file(path, size, why, sizeof why);
    CHECK(b != NULL, "%s", why);
    return b;
}

#define N 1000

/* Launch vector_add on `s` and check c = a + b. */
static void vadd_once(kctx_context c, fw_devptr a, fw_devptr b, fw_devptr out, fw_stream s,
                      const char *what) {
    const kctx_arg args[4] = {KCTX_TENSOR(a, N * 4), KCTX_TENSOR(b, N * 4), KCTX_TENSOR(out, N * 4),
                              KCTX_SCALAR(N)};
    CHECK_K(kctx_launch(c, 1, args, 4, s), KCTX_OK);
}

static void expect_sum(fw_devptr out, const char *what) {
    static float h[N];
    CHECK_FW_OK(fw, fw->download(h, out, sizeof h));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += h[i] != (float)i + 2.0f * (float)i;
    CHECK(bad == 0, "%s: %d of %d elements wrong", what, bad, N);
}

static void mode_lifecycle(const char *images) {
    fw = fw_cuda_driver();
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_K(kctx_get_platform_caps("cuda", &caps), KCTX_OK);
    CHECK(caps.built && caps.available, "cuda available: %s", caps.reason);
    CHECK(caps.has_capture && caps.has_null_stream && !caps.has_epoch && !caps.program_mode &&
              caps.strategies == KCTX_STRATEGY_BIT(KCTX_STRATEGY_HOST_ORDERED),
          "capabilities");
    /* the counters count (K4: before trusting a zero): an entry the adapter
     * calls moves, an unknown one is NOT_FOUND */
    uint64_t n = 0;
    CHECK_K(kctx_cuda_driver_calls("cuNoSuchEntry", &n), KCTX_NOT_FOUND);
    uint64_t init_calls = calls("cuInit");
    CHECK(init_calls == 1, "available() called cuInit once, not %llu",
          (unsigned long long)init_calls);

    uint64_t lc0[N_LIFECYCLE];
    for (size_t i = 0; i < N_LIFECYCLE; i++) lc0[i] = calls(k_lifecycle[i]);

    size_t img_size = 0;
    void *img = read_image(images, "vector_add", &img_size);
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

    kctx_context c = 0;
    CHECK_K(kctx_context_create("cuda", &c), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
    CHECK_K(kctx_prepare(c, 1, img, img_size), KCTX_OK);

    /* K19, K11: 100 eager launches call nothing but enqueues and the caller
     * stream's capture-info query (no captured launch came before: the
     * AICPU stream's is not asked, K34) */
    uint64_t before[N_NOT_ON_LAUNCH], launches0 = calls("cuLaunchKernel");
    for (size_t i = 0; i < N_NOT_ON_LAUNCH; i++) before[i] = calls(k_not_on_launch[i]);
    uint64_t info0 = calls("cuStreamGetCaptureInfo");
    for (int k = 0; k < 100; k++) vadd_once(c, a, b, out, s, "eager");
    for (size_t i = 0; i < N_NOT_ON_LAUNCH; i++) {
        uint64_t now = calls(k_not_on_launch[i]);
        CHECK(now == before[i], "K19/K11: 100 launches called %s %llu times", k_not_on_launch[i],
              (unsigned long long)(now - before[i]));
    }
    /* acquire, one task, finalize per launch: the counter does count */
    CHECK(calls("cuLaunchKernel") - launches0 == 300, "cuLaunchKernel: %llu calls for 100 launches",
          (unsigned long long)(calls("cuLaunchKernel") - launches0));
    CHECK(calls("cuStreamGetCaptureInfo") - info0 == 100,
          "cuStreamGetCaptureInfo: %llu calls for 100 launches (the caller stream each)",
          (unsigned long long)(calls("cuStreamGetCaptureInfo") - info0));
    CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
    expect_sum(out, "100 eager launches");

    /* K18: caller stream 0 (the legacy default stream) eagerly */
    CHECK_FW_OK(fw, fw->fill_async(out, 0, N * 4, s));
    CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
    vadd_once(c, a, b, out, 0, "stream 0");
    CHECK_FW_OK(fw, fw->stream_sync(0, 10000));
    expect_sum(out, "a launch on stream 0");

    /* and CU_STREAM_PER_THREAD (2) */
    CHECK_FW_OK(fw, fw->fill_async(out, 0, N * 4, s));
    CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
    vadd_once(c, a, b, out, 2, "stream 2");
    CHECK_FW_OK(fw, fw->stream_sync(2, 10000));
    expect_sum(out, "a launch on CU_STREAM_PER_THREAD");

    /* K18: a capturing default stream (CU_STREAM_PER_THREAD can capture) is
     * refused with the reason, nothing enqueued: the capture stays valid */
    fw_graph g2 = 0;
    CHECK_FW_OK(fw, fw->begin_capture(2));
    {
        const kctx_arg a2[4] = {KCTX_TENSOR(a, N * 4), KCTX_TENSOR(b, N * 4),
                                KCTX_TENSOR(out, N * 4), KCTX_SCALAR(N)};
        CHECK_K(kctx_launch(c, 1, a2, 4, 2), KCTX_INVALID_ARGUMENT);
        CHECK(strstr(kctx_thread_last_error(), "default stream") != NULL, "the reason: %s",
              kctx_thread_last_error());
    }
    CHECK_FW_OK(fw, fw->end_capture(2, &g2));
    if (g2) CHECK_FW_OK(fw, fw->graph_destroy(g2));

    /* K34: while a capture holds the context's streams, stream 0 is refused */
    fw_graph g = 0;
    CHECK_FW_OK(fw, fw->begin_capture(t));
    vadd_once(c, a, b, out, t, "captured");
    const kctx_arg args[4] = {KCTX_TENSOR(a, N * 4), KCTX_TENSOR(b, N * 4), KCTX_TENSOR(out, N * 4),
                              KCTX_SCALAR(N)};
    CHECK_K(kctx_launch(c, 1, args, 4, 0), KCTX_CAPTURE_ACTIVE);
    CHECK(strstr(kctx_thread_last_error(), "K34") != NULL, "the refusal says why: %s",
          kctx_thread_last_error());
    CHECK_FW_OK(fw, fw->end_capture(t, &g));
    fw_exec x = 0;
    CHECK_FW_OK(fw, fw->graph_instantiate(g, &x));
    CHECK_FW_OK(fw, fw->fill_async(out, 0, N * 4, s));
    CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
    CHECK_FW_OK(fw, fw->graph_launch(x, t));
    CHECK_FW_OK(fw, fw->stream_sync(t, 10000));
    expect_sum(out, "a replay");
    CHECK_FW_OK(fw, fw->exec_destroy(x));
    CHECK_FW_OK(fw, fw->graph_destroy(g));

    kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
    CHECK_K(kctx_check(c, &rep), KCTX_OK);
    CHECK_K(kctx_close(c), KCTX_OK);
    CHECK_K(kctx_destroy(c), KCTX_OK);
    /* K4: a whole kernel lifecycle made no lifecycle call */
    for (size_t i = 0; i < N_LIFECYCLE; i++) {
        uint64_t now = calls(k_lifecycle[i]);
        CHECK(now == lc0[i] && now == 0, "K4: the adapter called %s %llu times", k_lifecycle[i],
              (unsigned long long)now);
    }
    CHECK(calls("cuInit") == init_calls, "cuInit called again");
    /* the adapter's counts, for the record (scripts/gpu-check.sh shows them) */
    printf("adapter calls after a whole lifecycle:");
    for (size_t i = 0; i < N_LIFECYCLE; i++)
        printf(" %s=%llu", k_lifecycle[i], (unsigned long long)calls(k_lifecycle[i]));
    for (size_t i = 0; i < N_NOT_ON_LAUNCH; i++)
        printf(" %s=%llu", k_not_on_launch[i], (unsigned long long)calls(k_not_on_launch[i]));
    printf(" cuLaunchKernel=%llu\n", (unsigned long long)calls("cuLaunchKernel"));
    CHECK_FW_OK(fw, fw->mem_free(a));
    CHECK_FW_OK(fw, fw->mem_free(b));
    CHECK_FW_OK(fw, fw->mem_free(out));
    CHECK_FW_OK(fw, fw->stream_destroy(s));
    CHECK_FW_OK(fw, fw->stream_destroy(t));
    free(img);
}

/* K29, K30: a lost device quarantines; without an epoch, for good. */
static void mode_fatal(const char *images) {
    fw = fw_cuda_driver();
    size_t img_size = 0;
    void *img = read_image(images, "vector_add", &img_size);
    if (!img) return;
    fw_stream s = 0;
    fw_devptr a = 0, b = 0, out = 0;
    CHECK_FW_OK(fw, fw->stream_create(&s));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &a));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &b));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &out));
    kctx_context c = 0;
    CHECK_K(kctx_context_create("cuda", &c), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
    CHECK_K(kctx_prepare(c, 1, img, img_size), KCTX_OK);
    vadd_once(c, a, b, out, s, "before");
    CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
    /* the device is lost: the double's driver calls answer
     * CUDA_ERROR_LAUNCH_FAILED (719), a sticky error */
    CHECK(sim_device_make_fatal(0) == SIM_OK, "sim_device_make_fatal");
    const kctx_arg args[4] = {KCTX_TENSOR(a, N * 4), KCTX_TENSOR(b, N * 4), KCTX_TENSOR(out, N * 4),
                              KCTX_SCALAR(N)};
    CHECK_K(kctx_launch(c, 1, args, 4, s), KCTX_DEVICE_LOST);
    kctx_phase ph = KCTX_PHASE_NEW;
    CHECK_K(kctx_get_phase(c, &ph), KCTX_OK);
    CHECK(ph == KCTX_PHASE_QUARANTINED, "phase %s", kctx_phase_name(ph));
    CHECK_K(kctx_launch(c, 1, args, 4, s), KCTX_DEVICE_LOST);
    CHECK_K(kctx_prepare(c, 2, img, img_size), KCTX_DEVICE_LOST);
    CHECK_K(kctx_close(c), KCTX_DEVICE_LOST);
    CHECK(strstr(kctx_thread_last_error(), "no device epoch, so quarantine is terminal") != NULL,
          "close says why: %s", kctx_thread_last_error());
    CHECK_K(kctx_close(c), KCTX_DEVICE_LOST); /* again: terminal */
    CHECK_K(kctx_get_phase(c, &ph), KCTX_OK);
    CHECK(ph == KCTX_PHASE_QUARANTINED, "phase %s after close", kctx_phase_name(ph));
    CHECK_K(kctx_destroy(c), KCTX_BUSY);
    for (size_t i = 0; i < N_LIFECYCLE; i++)
        CHECK(calls(k_lifecycle[i]) == 0, "K4: the adapter called %s", k_lifecycle[i]);
    free(img); /* the context keeps its device objects: they are the lost device's */
}

/* One child of mode_fatal_sweep: call k of kernel init, prepare and close
 * fails with the layer's fatal code, CUDA_ERROR_LAUNCH_FAILED
 * (kctx_test_fatal_sweep.h). Exit 3: call k was not reached. */
static int mode_fatal_one(const char *images, uint64_t k) {
    fw = fw_cuda_driver();
    const kfl_control *L = fw->fault_layer ? fw->fault_layer() : NULL;
    CHECK(L != NULL, "no failing layer in front of the double (KCTX_CUDA_DRIVER=%s)",
          getenv("KCTX_CUDA_DRIVER") ? getenv("KCTX_CUDA_DRIVER") : "(unset)");
    size_t img_size = 0;
    void *img = read_image(images, "vector_add", &img_size);
    if (!L || !img) return ktc_check_summary();
    int rc = ktc_fatal_one("cuda", L, KCTX_STRATEGY_HOST_ORDERED, img, img_size, k);
    free(img);
    return rc;
}

/* K29, K30 below the adapter: each call k = 1, 2, ... in a child of its
 * own (quarantine is terminal), until one is not reached. */
static void mode_fatal_sweep(const char *self, const char *images) {
    const char *args[] = {"fatal_one", images};
    uint64_t n = ktc_fatal_sweep(self, args, 2);
    CHECK(n > 20, "%llu driver calls swept (0: a child failed, above)", (unsigned long long)n);
    printf("%llu driver calls of init, prepare and close, each failed once with a fatal code\n",
           (unsigned long long)n);
}

/* K28 from the driver's side (ktc_destroy_paths). */
static void mode_destroy(const char *images) {
    size_t img_size = 0;
    void *img = read_image(images, "vector_add", &img_size);
    if (!img) return;
    ktc_destroy_paths("cuda", "KCTX_CUDA_DRIVER", "kctx_cuda_double_thread_calls", img, img_size);
    free(img);
}

/* An image of vector_add's shape (a, b, c: tensor; n: scalar) whose one
 * child has entry `entry` and one cuda_fatbin variant holding `blob`. */
static void *image_with(const char *entry, const void *blob, size_t blob_size, size_t *size) {
    kctx_image_builder *b = kctx_image_builder_new("bad_module");
    kctx_image_builder_param(b, "a", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "b", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "c", KCTX_PARAM_TENSOR_OUT);
    kctx_image_builder_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_child(b, "vadd", entry, NULL);
    kctx_image_builder_child_param(b, "a", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "b", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "c", KCTX_PARAM_TENSOR);
    kctx_image_builder_child_param(b, "n", KCTX_PARAM_SCALAR);
    kctx_image_builder_variant(b, KCTX_VARIANT_CUDA_FATBIN, blob, blob_size);
    kctx_image_builder_task(b, 0, 4, NULL);
    for (uint32_t i = 0; i < 3; i++) kctx_image_builder_bind(b, KCTX_BIND_TENSOR, i, 0);
    kctx_image_builder_bind(b, KCTX_BIND_SCALAR, 3, 0);
    void *img = NULL;
    char msg[256] = "";
    kctx_build_status st = kctx_image_builder_finish(b, &img, size, msg, sizeof msg);
    kctx_image_builder_free(b);
    CHECK(st == KCTX_BUILD_OK, "the builder refused the image: %s", msg);
    return st == KCTX_BUILD_OK ? img : NULL;
}

static void *read_path(const char *path, size_t *size) {
    char why[256];
    void *b = ktc_read_file(path, size, why, sizeof why);
    CHECK(b != NULL, "%s", why);
    return b;
}

/* Item 5 of issue 23 (kctx.h: INCOMPATIBLE_IMAGE, platform.h: BAD_MODULE):
 * a module the driver cannot load for the device, and a kernel entry the
 * module lacks, are the image's fault: prepare refuses them with
 * INCOMPATIBLE_IMAGE, the driver's code (name and number) in the message,
 * the id stays free and nothing is kept (live objects at baseline). */
static void mode_bad_modules(const char *images, const char *sim_elf, const char *real_fatbin) {
    fw = fw_cuda_driver();
    size_t elf_size = 0, fatbin_size = 0, good_size = 0;
    void *elf = read_path(sim_elf, &elf_size);
    void *fatbin = read_path(real_fatbin, &fatbin_size);
    void *good = read_image(images, "vector_add", &good_size);
    if (!elf || !fatbin || !good) return;
    unsigned char garbage[256];
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (unsigned char)(0x5a ^ (i * 7));
    unsigned char bad_header[64] = {0x50, 0xed, 0x55, 0xba, 1, 0, 0, 0}; /* header size 0 */
    static const char ptx[] = "//\n// a PTX module\n//\n.version 8.8\n.target sm_90\n"
                              ".address_size 64\n.visible .entry k_vadd() { ret; }\n";
    static const char ptx_new[] = ".version 99.0\n.target sm_200\n.address_size 64\n";
    const struct {
        const char *what, *entry;
        const void *blob;
        size_t size;
        const char *code;
    } cases[] = {
        {"a fatbin of real CUDA kernels (no code the device can run)", "k_vadd", fatbin,
         fatbin_size, "CUDA_ERROR_NO_BINARY_FOR_GPU (209)"},
        {"bytes that are no module", "k_vadd", garbage, sizeof garbage,
         "CUDA_ERROR_INVALID_IMAGE (200)"},
        {"a fatbin whose header cannot be decoded", "k_vadd", bad_header, sizeof bad_header,
         "CUDA_ERROR_INVALID_IMAGE (200)"},
        {"PTX the JIT cannot compile", "k_vadd", ptx, sizeof ptx, "CUDA_ERROR_INVALID_PTX (218)"},
        {"PTX newer than the driver", "k_vadd", ptx_new, sizeof ptx_new,
         "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"},
        {"a module without the child's entry", "k_no_such_kernel", elf, elf_size,
         "CUDA_ERROR_NOT_FOUND (500)"},
        /* the entry exists, its task ABI marker does not (kctx/task_abi.h):
         * the message names the marker, with or without the driver's code */
        {"a module without the entry's task ABI marker", "kctx_task_v1__k_vadd", elf, elf_size,
         "kctx_task_v1__kctx_task_v1__k_vadd"},
    };
    kctx_context c = 0;
    CHECK_K(kctx_context_create("cuda", &c), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
    fw_counts base, now;
    CHECK_FW_OK(fw, fw->live_counts(0, &base));
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t size = 0;
        void *img = image_with(cases[k].entry, cases[k].blob, cases[k].size, &size);
        if (!img) continue;
        CHECK_K(kctx_prepare(c, 7, img, size), KCTX_INCOMPATIBLE_IMAGE);
        const char *m = kctx_thread_last_error();
        CHECK(strstr(m, cases[k].code) != NULL, "%s: the message keeps %s: %s", cases[k].what,
              cases[k].code, m);
        CHECK_FW_OK(fw, fw->live_counts(0, &now));
        CHECK(now.modules == base.modules && now.allocations == base.allocations,
              "%s: nothing kept (modules %llu, allocations %llu; baseline %llu, %llu)",
              cases[k].what, (unsigned long long)now.modules, (unsigned long long)now.allocations,
              (unsigned long long)base.modules, (unsigned long long)base.allocations);
        free(img);
    }
    /* the same refusal with each of its platform calls failed in turn: the
     * injected failure or the refusal, the context READY, nothing kept */
    {
        size_t size = 0;
        void *img = image_with("k_no_such_kernel", elf, elf_size, &size);
        uint64_t n0 = kctx_thread_platform_calls(KCTX_POP_ANY);
        CHECK_K(kctx_prepare(c, 7, img, size), KCTX_INCOMPATIBLE_IMAGE);
        uint64_t seam = kctx_thread_platform_calls(KCTX_POP_ANY) - n0;
        CHECK(seam >= 2, "the refused prepare made %llu seam calls", (unsigned long long)seam);
        for (uint64_t n = 1; img && n <= seam; n++) {
            kctx_fault f = KCTX_FAULT_INIT;
            f.nth = n;
            int id = -1;
            CHECK_K(kctx_fault_arm(&f, &id), KCTX_OK);
            kctx_status st = kctx_prepare(c, 7, img, size);
            uint64_t hits = 0;
            CHECK_K(kctx_fault_hits(id, &hits), KCTX_OK);
            kctx_fault_clear_all();
            CHECK(hits == 1 && (st == KCTX_PLATFORM_ERROR || st == KCTX_INCOMPATIBLE_IMAGE),
                  "seam call %llu failed: prepare %s, %llu hits (%s)", (unsigned long long)n,
                  kctx_status_name(st), (unsigned long long)hits, kctx_thread_last_error());
            kctx_phase ph = KCTX_PHASE_NEW;
            CHECK_K(kctx_get_phase(c, &ph), KCTX_OK);
            CHECK(ph == KCTX_PHASE_READY, "seam call %llu failed: phase %s", (unsigned long long)n,
                  kctx_phase_name(ph));
            CHECK_FW_OK(fw, fw->live_counts(0, &now));
            CHECK(now.modules == base.modules && now.allocations == base.allocations,
                  "seam call %llu failed: modules %llu, allocations %llu kept",
                  (unsigned long long)n, (unsigned long long)(now.modules - base.modules),
                  (unsigned long long)(now.allocations - base.allocations));
        }
        free(img);
    }
    /* the id stayed free, and the context is READY: a good image takes it */
    CHECK_K(kctx_prepare(c, 7, good, good_size), KCTX_OK);
    kctx_phase ph = KCTX_PHASE_NEW;
    CHECK_K(kctx_get_phase(c, &ph), KCTX_OK);
    CHECK(ph == KCTX_PHASE_READY, "phase %s after refused images", kctx_phase_name(ph));
    CHECK_K(kctx_close(c), KCTX_OK);
    CHECK_K(kctx_destroy(c), KCTX_OK);
    free(elf);
    free(fatbin);
    free(good);
}

/* kctx's own runtime programs that the device cannot run are the build's
 * limit, not an image's: kernel init is UNSUPPORTED, with the driver's code
 * (the double plays such a GPU: KCTX_DOUBLE_RT_NO_BINARY=1). */
static void mode_rt_no_binary(void) {
    kctx_context c = 0;
    CHECK_K(kctx_context_create("cuda", &c), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_UNSUPPORTED);
    CHECK(strstr(kctx_thread_last_error(), "CUDA_ERROR_NO_BINARY_FOR_GPU (209)") != NULL &&
              strstr(kctx_thread_last_error(), "runtime fatbin has no code for this device"),
          "the message keeps the driver's code and says why: %s", kctx_thread_last_error());
    CHECK_K(kctx_destroy(c), KCTX_OK);
}

/* A failing image: vector_add's k_vadd given three arguments, so that its
 * task reports an error on the device (callable_check: nargs != 4). */
static void *failing_image(const void *elf, size_t elf_size, size_t *size) {
    kctx_image_builder *b = kctx_image_builder_new("failing_vadd");
    kctx_image_builder_param(b, "a", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "b", KCTX_PARAM_TENSOR_IN);
    kctx_image_builder_param(b, "c", KCTX_PARAM_TENSOR_OUT);
    kctx_image_builder_child(b, "vadd", "k_vadd", NULL);
    for (int i = 0; i < 3; i++) kctx_image_builder_child_param(b, "x", KCTX_PARAM_TENSOR);
    kctx_image_builder_variant(b, KCTX_VARIANT_CUDA_FATBIN, elf, elf_size);
    kctx_image_builder_task(b, 0, 2, NULL);
    for (uint32_t i = 0; i < 3; i++) kctx_image_builder_bind(b, KCTX_BIND_TENSOR, i, 0);
    void *img = NULL;
    char msg[256] = "";
    kctx_build_status st = kctx_image_builder_finish(b, &img, size, msg, sizeof msg);
    kctx_image_builder_free(b);
    CHECK(st == KCTX_BUILD_OK, "the builder refused the failing image: %s", msg);
    return st == KCTX_BUILD_OK ? img : NULL;
}

static int all_bytes(const unsigned char *h, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (h[i] != v) return 0;
    return 1;
}

/* Issue 23 item 6: a failed kctx task behaves on the double as on the
 * driver (kctx/cuda.h, the CUDA task ABI): the kernel returns normally, the
 * failure reaches kctx_check through the device error word (K35:
 * DEVICE_ERROR, the task's index), and the caller's stream goes on running
 * the framework's later work, whose effect is visible; the stream reports
 * no error. The same for a replay of a capture holding the failing launch. */
static void mode_task_failure(const char *sim_elf) {
    fw = fw_cuda_driver();
    size_t elf_size = 0, bad_size = 0;
    void *elf = read_path(sim_elf, &elf_size);
    void *bad = elf ? failing_image(elf, elf_size, &bad_size) : NULL;
    if (!bad) return;
    static unsigned char h[N * 4];
    fw_stream s = 0;
    fw_devptr a = 0, b = 0, out = 0, x = 0;
    CHECK_FW_OK(fw, fw->stream_create(&s));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &a));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &b));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &out));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &x));
    const kctx_arg args[3] = {KCTX_TENSOR(a, N * 4), KCTX_TENSOR(b, N * 4),
                              KCTX_TENSOR(out, N * 4)};
    for (int captured = 0; captured < 2; captured++) {
        const char *how = captured ? "a replay" : "an eager launch";
        kctx_context c = 0;
        CHECK_K(kctx_context_create("cuda", &c), KCTX_OK);
        kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
        CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
        CHECK_K(kctx_prepare(c, 1, bad, bad_size), KCTX_OK);
        CHECK_FW_OK(fw, fw->fill_async(x, 0, N * 4, s));
        CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
        fw_graph g = 0;
        fw_exec e = 0;
        if (captured) CHECK_FW_OK(fw, fw->begin_capture(s));
        CHECK_K(kctx_launch(c, 1, args, 3, s), KCTX_OK);
        /* the framework's work on the caller stream, after the launch */
        CHECK_FW_OK(fw, fw->fill_async(x, 0x5a, N * 4, s));
        if (captured) {
            CHECK_FW_OK(fw, fw->end_capture(s, &g));
            CHECK_FW_OK(fw, fw->graph_instantiate(g, &e));
            CHECK_FW_OK(fw, fw->graph_launch(e, s));
        }
        CHECK_FW_OK(fw, fw->stream_sync(s, 10000)); /* the stream reports no error */
        CHECK_FW_OK(fw, fw->download(h, x, sizeof h));
        CHECK(all_bytes(h, sizeof h, 0x5a),
              "%s: the framework's memset after the failed task did not run (x[0] = 0x%02x)", how,
              h[0]);
        /* and more framework work later still runs */
        CHECK_FW_OK(fw, fw->fill_async(x, 0xa5, N * 4, s));
        CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
        CHECK_FW_OK(fw, fw->download(h, x, sizeof h));
        CHECK(all_bytes(h, sizeof h, 0xa5), "%s: later framework work did not run", how);
        kctx_check_report rep = KCTX_CHECK_REPORT_INIT;
        CHECK_K(kctx_check(c, &rep), KCTX_DEVICE_ERROR);
        CHECK(rep.device_status == KCTX_DEVICE_ERROR && rep.error_detail == 0,
              "%s: check reports %s, task %llu (expected DEVICE_ERROR, task 0)", how,
              kctx_status_name(rep.device_status), (unsigned long long)rep.error_detail);
        if (e) CHECK_FW_OK(fw, fw->exec_destroy(e));
        if (g) CHECK_FW_OK(fw, fw->graph_destroy(g));
        CHECK_K(kctx_close(c), KCTX_OK);
        CHECK_K(kctx_destroy(c), KCTX_OK);
    }
    CHECK_FW_OK(fw, fw->mem_free(a));
    CHECK_FW_OK(fw, fw->mem_free(b));
    CHECK_FW_OK(fw, fw->mem_free(out));
    CHECK_FW_OK(fw, fw->mem_free(x));
    CHECK_FW_OK(fw, fw->stream_destroy(s));
    free(bad);
    free(elf);
}

/* The driver calls a launch's failure path must not make (K19: no stream
 * creation, no host wait; the word accesses' bounded polls are the
 * documented exception, docs/cuda.md "K19 on failure paths"). */
static const char *const k_not_on_failure[] = {
    "cuStreamCreate",     "cuStreamDestroy", "cuStreamSynchronize", "cuCtxSynchronize",
    "cuEventSynchronize", "cuEventQuery",    "cuMemAlloc",          "cuMemFree"};
#define N_NOT_ON_FAILURE (sizeof k_not_on_failure / sizeof k_not_on_failure[0])

/* Issue 23 item 8, K19 on failure paths: each platform call of a launch
 * failed in turn (kctx_fault_arm; once, and from then on so that the
 * compensation fails too and the abort word is written), eager and inside
 * a capture. The failing launch creates, destroys and synchronises nothing;
 * it queries a stream only for the core's word accesses (the K35 poison and
 * the K24 abort word), never the caller's stream: a capture survives it
 * (a query on a capturing stream would invalidate it). The stream comes
 * back, close succeeds and the live objects return to their baseline. */
static void mode_failure_path(const char *images) {
    fw = fw_cuda_driver();
    size_t img_size = 0;
    void *img = read_image(images, "vector_add", &img_size);
    if (!img) return;
    fw_stream s = 0;
    fw_devptr a = 0, b = 0, out = 0;
    CHECK_FW_OK(fw, fw->stream_create(&s));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &a));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &b));
    CHECK_FW_OK(fw, fw->mem_alloc(N * 4, &out));
    const kctx_arg args[4] = {KCTX_TENSOR(a, N * 4), KCTX_TENSOR(b, N * 4), KCTX_TENSOR(out, N * 4),
                              KCTX_SCALAR(N)};
    fw_counts base, now;
    CHECK_FW_OK(fw, fw->live_counts(0, &base));
    /* the seam calls of one clean launch: the steps to fail */
    uint64_t steps = 0, launches = 0;
    {
        kctx_context c = 0;
        CHECK_K(kctx_context_create("cuda", &c), KCTX_OK);
        kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
        CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
        CHECK_K(kctx_prepare(c, 1, img, img_size), KCTX_OK);
        uint64_t n0 = kctx_thread_platform_calls(KCTX_POP_ANY);
        uint64_t l0 = kctx_thread_platform_calls(KCTX_POP_LAUNCH);
        CHECK_K(kctx_launch(c, 1, args, 4, s), KCTX_OK);
        steps = kctx_thread_platform_calls(KCTX_POP_ANY) - n0;
        launches = kctx_thread_platform_calls(KCTX_POP_LAUNCH) - l0;
        CHECK_FW_OK(fw, fw->stream_sync(s, 10000));
        CHECK_K(kctx_close(c), KCTX_OK);
        CHECK_K(kctx_destroy(c), KCTX_OK);
    }
    CHECK(steps >= 6 && launches == 3, "a launch made %llu seam calls, %llu launches",
          (unsigned long long)steps, (unsigned long long)launches);
    unsigned word_failures = 0; /* failures whose path made a word access */
    for (int captured = 0; captured < 2; captured++)
        /* 0: one seam call fails; 1: it and every later one; 2: one
         * kernel launch and every later launch (the compensation's
         * finalize fails too: the abort word is written, K24) */
        for (int variant = 0; variant < 3; variant++)
            for (uint64_t n = 1; n <= (variant == 2 ? launches : steps); n++) {
                const int persistent = variant > 0;
                char how[96];
                snprintf(how, sizeof how, "%s, %s %llu failed%s", captured ? "captured" : "eager",
                         variant == 2 ? "launch" : "seam call", (unsigned long long)n,
                         persistent ? " and every later one" : "");
                kctx_context c = 0;
                CHECK_K(kctx_context_create("cuda", &c), KCTX_OK);
                kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
                CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
                CHECK_K(kctx_prepare(c, 1, img, img_size), KCTX_OK);
                if (captured) CHECK_FW_OK(fw, fw->begin_capture(s));
                uint64_t before[N_NOT_ON_FAILURE];
                for (size_t i = 0; i < N_NOT_ON_FAILURE; i++)
                    before[i] = calls(k_not_on_failure[i]);
                uint64_t q0 = calls("cuStreamQuery");
                uint64_t w0 = kctx_thread_platform_calls(KCTX_POP_ATOMIC_READ_U32) +
                              kctx_thread_platform_calls(KCTX_POP_ATOMIC_WRITE_U32);
                kctx_fault f = KCTX_FAULT_INIT;
                f.op = variant == 2 ? KCTX_POP_LAUNCH : KCTX_POP_ANY;
                f.nth = n;
                f.persistent = persistent;
                int id = -1;
                CHECK_K(kctx_fault_arm(&f, &id), KCTX_OK);
                kctx_status st = kctx_launch(c, 1, args, 4, s);
                kctx_fault_clear_all();
                CHECK(st != KCTX_OK, "%s: the launch succeeded", how);
                for (size_t i = 0; i < N_NOT_ON_FAILURE; i++) {
                    uint64_t d = calls(k_not_on_failure[i]) - before[i];
                    CHECK(d == 0, "K19: %s: the failure path called %s %llu times", how,
                          k_not_on_failure[i], (unsigned long long)d);
                }
                uint64_t words = kctx_thread_platform_calls(KCTX_POP_ATOMIC_READ_U32) +
                                 kctx_thread_platform_calls(KCTX_POP_ATOMIC_WRITE_U32) - w0;
                uint64_t queries = calls("cuStreamQuery") - q0;
                if (words) word_failures++;
                CHECK(words > 0 || queries == 0,
                      "K19: %s: %llu stream queries with no word access (%s)", how,
                      (unsigned long long)queries, kctx_status_name(st));
                if (captured) {
                    /* no query or wait touched the capturing stream: it was
                     * not invalidated (where the compensation could not join
                     * back either, it ends unjoined: kctx said discard it) */
                    fw_graph g = 0;
                    fw_status es = fw->end_capture(s, &g);
                    CHECK(es == FW_OK || (persistent && es == FW_CAPTURE_UNJOINED),
                          "%s: the capture ended with %s (%s)", how, fw_status_name(es),
                          fw->last_error());
                    if (g) CHECK_FW_OK(fw, fw->graph_destroy(g));
                }
                CHECK_FW_OK(fw, fw->stream_sync(s, 10000)); /* the chain came back (K24) */
                /* close does not wait (K25): where every later call failed,
                 * the chain's tail on the context's own streams may still
                 * be running; it ends by itself (up to 30 s: a loaded
                 * machine under TSan is slow, and the bound only ends a hang) */
                kctx_status cst = kctx_close(c);
                for (int k = 0; k < 15000 && cst == KCTX_BUSY; k++) {
                    struct timespec ts = {0, 2000000};
                    nanosleep(&ts, NULL);
                    cst = kctx_close(c);
                }
                CHECK(cst == KCTX_OK, "%s: close: %s (%s)", how, kctx_status_name(cst),
                      kctx_thread_last_error());
                CHECK_K(kctx_destroy(c), KCTX_OK);
                CHECK_FW_OK(fw, fw->live_counts(0, &now));
                CHECK(now.streams == base.streams && now.events == base.events &&
                          now.modules == base.modules && now.allocations == base.allocations,
                      "%s: live objects after close: streams %llu events %llu modules %llu "
                      "allocations %llu (baseline %llu %llu %llu %llu)",
                      how, (unsigned long long)now.streams, (unsigned long long)now.events,
                      (unsigned long long)now.modules, (unsigned long long)now.allocations,
                      (unsigned long long)base.streams, (unsigned long long)base.events,
                      (unsigned long long)base.modules, (unsigned long long)base.allocations);
            }
    /* the sweep did reach the failure paths that touch the device words */
    CHECK(word_failures > 0, "no failure path wrote the error or abort word");
    CHECK_FW_OK(fw, fw->mem_free(a));
    CHECK_FW_OK(fw, fw->mem_free(b));
    CHECK_FW_OK(fw, fw->mem_free(out));
    CHECK_FW_OK(fw, fw->stream_destroy(s));
    free(img);
}

/* No driver, or only the stub: a clear reason, and a clean refusal. */
static void mode_unavailable(const char *want) {
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_K(kctx_get_platform_caps("cuda", &caps), KCTX_OK);
    CHECK(caps.built && !caps.available, "built, not available");
    CHECK(caps.reason && strstr(caps.reason, want), "reason '%s' should say '%s'",
          caps.reason ? caps.reason : "(null)", want);
    kctx_context c = 0;
    CHECK_K(kctx_context_create("cuda", &c), KCTX_UNSUPPORTED);
    CHECK(c == 0, "no handle");
    CHECK(strstr(kctx_thread_last_error(), want) != NULL, "create's message: %s",
          kctx_thread_last_error());
    /* nothing but loading happened: no kernel-context call was made */
    uint64_t n = 1;
    CHECK_K(kctx_cuda_driver_calls("cuCtxGetCurrent", &n), KCTX_OK);
    CHECK(n == 0, "cuCtxGetCurrent called %llu times", (unsigned long long)n);
    /* and the sim is untouched */
    CHECK_K(kctx_context_create("sim", &c), KCTX_OK);
    CHECK_K(kctx_destroy(c), KCTX_OK);
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "lifecycle") == 0)
        mode_lifecycle(argv[2]);
    else if (argc >= 5 && strcmp(argv[1], "bad_modules") == 0)
        mode_bad_modules(argv[2], argv[3], argv[4]);
    else if (argc >= 3 && strcmp(argv[1], "failure_path") == 0)
        mode_failure_path(argv[2]);
    else if (argc >= 3 && strcmp(argv[1], "task_failure") == 0)
        mode_task_failure(argv[2]);
    else if (argc >= 2 && strcmp(argv[1], "rt_no_binary") == 0)
        mode_rt_no_binary();
    else if (argc >= 3 && strcmp(argv[1], "fatal") == 0)
        mode_fatal(argv[2]);
    else if (argc >= 3 && strcmp(argv[1], "fatal_sweep") == 0)
        mode_fatal_sweep(argv[0], argv[2]);
    else if (argc >= 4 && strcmp(argv[1], "fatal_one") == 0)
        return mode_fatal_one(argv[2], strtoull(argv[3], NULL, 10));
    else if (argc >= 3 && strcmp(argv[1], "destroy") == 0)
        mode_destroy(argv[2]);
    else if (argc >= 2 && strcmp(argv[1], "nodevice") == 0)
        mode_unavailable("no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)");
    else if (argc >= 2 && strcmp(argv[1], "olddriver") == 0)
        mode_unavailable("the CUDA driver is version 12.4; kctx needs 12.8 or newer");
    else if (argc >= 2 && strcmp(argv[1], "absent") == 0)
        mode_unavailable("driver not found");
    else if (argc >= 2 && strcmp(argv[1], "stub") == 0)
        mode_unavailable("stub library (CUDA_ERROR_STUB_LIBRARY)");
    else {
        fprintf(stderr,
                "usage: %s lifecycle IMAGES | fatal IMAGES | fatal_sweep IMAGES | destroy IMAGES | "
                "absent "
                "| stub | nodevice | olddriver\n",
                argv[0]);
        return 2;
    }
    return ktc_check_summary();
}
