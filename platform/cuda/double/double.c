/*
 * double.c — a CUDA driver test double (tests only, never installed):
 * build/platform/cuda/double/libcuda.so.1, a lookalike of the CUDA driver
 * built on the sim (platform/sim/include/kctx/sim.h), so that the cuda platform's real
 * adapter (platform/cuda/adapter.c) and a CUDA framework's side
 * (platform/cuda/fw_cuda.c) run the conformance suite without a GPU:
 * KCTX_CUDA_DRIVER=<this file> makes both load it instead of libcuda.so.1.
 *
 * It exports cuGetProcAddress_v2, which resolves every entry it has, with
 * the CUDA 12.8 ABI of each entry (the version the adapter pins), CUDA's
 * status codes and the sim's capture semantics, which are CUDA's (codes
 * 900-908, capture modes, isolation, graph lifetime hooks). Handles are the
 * sim's handles as pointers; a CUdeviceptr is a sim device address.
 *
 * Where the double must decide what a GPU would (docs/cuda.md, "The driver
 * double"):
 *  - Contexts: each device has one primary context; a thread's current
 *    context is the one of its sim current device (so a thread always has
 *    one). cuCtxSetCurrent is sim_set_device; cuDevicePrimaryCtxReset is
 *    sim_device_reset of that device.
 *  - Streams 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name one default
 *    stream per device (a sim stream created on first use); it does not
 *    synchronise with other streams (kctx's streams are non-blocking).
 *  - Modules: cuModuleLoadData gets no size; an image is a sim ELF module
 *    (its extent is read from its ELF header), which is how the tests'
 *    callable images carry kernels under the cuda variant kind. A fatbin
 *    (magic 0xBA55ED50) naming kctx_rt_ho_acquire is kctx's runtime
 *    programs (platform/cuda/rt_programs.cu): the double loads their sim_elf
 *    build instead (platform/common/rt_programs_elf.c, the same kernels by name,
 *    read from KCTX_DOUBLE_RT_ELF at the path the build compiled in); any
 *    other fatbin is CUDA_ERROR_NO_BINARY_FOR_GPU (no GPU to run it).
 *  - Launches: extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, p,
 *    CU_LAUNCH_PARAM_BUFFER_SIZE, &n, CU_LAUNCH_PARAM_END} only; a launch
 *    of blockDim 1 runs on the sim's AICPU (kctx's runtime programs are
 *    launched <<<1, 1>>>), any other on its AICore cores with gridDimX
 *    blocks (task kernels, kctx/cuda.h).
 *  - Kernel errors: a sim kernel's reported error (the task ABI's failure
 *    path) is not a CUDA error: on CUDA the task wrapper records it in the
 *    device error word and the kernel returns normally (kctx/cuda.h), and
 *    the stream goes on running later work. A sim stream whose kernel
 *    reported an error fails for good (it skips every later kernel, copy
 *    and fill), so the double runs every kernel through its own device
 *    program (tests/common/double_call.c, loaded on every device at cuInit and again after a
 *    reset), which calls the kernel through the sim's call service and
 *    drops the report: the stream, a graph replay and the framework's
 *    later work on them run on, as on CUDA. Only a lost device (the sim's
 *    sim_device_make_fatal) is a sticky error: CUDA_ERROR_LAUNCH_FAILED.
 *    The sim sees only launches of that program: it no longer refuses to
 *    unload a module whose kernel is enqueued or in a graph, and a sim hold
 *    on one function matches no launch (docs/cuda.md).
 *    What the double cannot follow: a CUDA kernel that traps (an illegal
 *    address, __trap) makes the context's sticky 700-series error; a sim
 *    kernel cannot trap, so the double has no such error but the lost
 *    device.
 *  - cuLaunchHostFunc runs the function in stream order on the sim
 *    stream's thread (kctx never calls it; the cuda benchmarks hold a
 *    stream with it, platform/cuda/bench).
 *  - An aligned 4-byte asynchronous copy is atomic (as a DMA of an aligned
 *    word is): the double performs it in stream order with an atomic load
 *    or store, as a sim host function.
 *
 * Test hooks (not CUDA): kctx_cuda_double_calls(name) counts the calls of
 * the context and device lifecycle entries (the K4 probe's counters);
 * kctx_cuda_double_thread_calls() counts every entry the double served to
 * the calling thread (K28's ruler: a kernel context's destroy calls none).
 */
#include <cuda.h>

#include "kctx_test_common.h" /* ktc_read_file */
#include <kctx/cuda.h>
#include <kctx/sim.h>

#include <elf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

/* ---- status mapping --------------------------------------------------------- */

static CUresult cu(sim_status st) {
    switch (st) {
    case SIM_OK:
        return CUDA_SUCCESS;
    case SIM_KERNEL_ERROR: /* never: every launch absorbs its report (tests/common/double_call.c); else a trap */
        return CUDA_ERROR_LAUNCH_FAILED;
    case SIM_INVALID_VALUE:
    case SIM_INVALID_ADDRESS:
    case SIM_DOUBLE_FREE:
    case SIM_FOREIGN_FREE:
        return CUDA_ERROR_INVALID_VALUE;
    case SIM_INVALID_HANDLE:
        return CUDA_ERROR_INVALID_HANDLE;
    case SIM_OUT_OF_MEMORY:
        return CUDA_ERROR_OUT_OF_MEMORY;
    case SIM_NOT_READY:
        return CUDA_ERROR_NOT_READY;
    case SIM_DEVICE_LOST:
        return CUDA_ERROR_LAUNCH_FAILED;
    case SIM_NOT_PERMITTED:
        return CUDA_ERROR_NOT_PERMITTED;
    case SIM_NOT_SUPPORTED:
        return CUDA_ERROR_NOT_SUPPORTED;
    case SIM_TIMEOUT:
        return CUDA_ERROR_TIMEOUT;
    case SIM_INVALID_MODULE:
        return CUDA_ERROR_INVALID_IMAGE;
    case SIM_NOT_FOUND:
        return CUDA_ERROR_NOT_FOUND;
    case SIM_ILLEGAL_STATE:
        return CUDA_ERROR_ILLEGAL_STATE;
    case SIM_CAPTURE_UNSUPPORTED:
    case SIM_CAPTURE_INVALIDATED:
    case SIM_CAPTURE_MERGE:
    case SIM_CAPTURE_UNMATCHED:
    case SIM_CAPTURE_UNJOINED:
    case SIM_CAPTURE_ISOLATION:
    case SIM_CAPTURED_EVENT:
    case SIM_CAPTURE_WRONG_THREAD:
        return (CUresult)st; /* the sim's capture codes carry CUDA's numbers */
    default:
        return CUDA_ERROR_UNKNOWN;
    }
}

static _Thread_local char tl_msg[256];

static CUresult fail(CUresult st, const char *what) {
    snprintf(tl_msg, sizeof tl_msg, "%s", what);
    return st;
}
/* Map a sim status, keeping the sim's message for cuGetErrorString. */
static CUresult done(sim_status st) {
    CUresult r = cu(st);
    if (r != CUDA_SUCCESS) snprintf(tl_msg, sizeof tl_msg, "%s", sim_last_error_message());
    return r;
}

/* ---- lifecycle counters (test hook) ------------------------------------------ */

enum {
    C_INIT,
    C_CTX_SET_CURRENT,
    C_CTX_CREATE,
    C_CTX_DESTROY,
    C_PRIMARY_RETAIN,
    C_PRIMARY_RELEASE,
    C_PRIMARY_RESET,
    C_COUNT_
};
static const char *const k_counted[C_COUNT_] = {"cuInit",
                                                "cuCtxSetCurrent",
                                                "cuCtxCreate",
                                                "cuCtxDestroy",
                                                "cuDevicePrimaryCtxRetain",
                                                "cuDevicePrimaryCtxRelease",
                                                "cuDevicePrimaryCtxReset"};
static _Atomic uint64_t g_counts[C_COUNT_];

/* Calls of `entry` (one of k_counted) made so far; UINT64_MAX otherwise. */
API uint64_t kctx_cuda_double_calls(const char *entry);
API uint64_t kctx_cuda_double_calls(const char *entry) {
    for (int i = 0; i < C_COUNT_; i++)
        if (strcmp(k_counted[i], entry) == 0) return atomic_load(&g_counts[i]);
    return UINT64_MAX;
}
#define COUNT(c) atomic_fetch_add(&g_counts[c], 1)

/* ---- contexts and devices --------------------------------------------------- */

#define MAX_DEVICES 64
struct CUctx_st {
    int device;
};
static struct CUctx_st g_ctx[MAX_DEVICES];

/* Test settings: KCTX_DOUBLE_NO_DEVICE=1 plays a machine whose driver finds
 * no device (cuInit: CUDA_ERROR_NO_DEVICE); KCTX_DOUBLE_DRIVER_VERSION=N
 * plays driver version N (default 13000). */
static CUresult call_load_all(void);
static sim_status call_load(int device);

static CUresult d_cuInit(unsigned int flags) {
    COUNT(C_INIT);
    const char *none = getenv("KCTX_DOUBLE_NO_DEVICE");
    if (none && *none == '1') return fail(CUDA_ERROR_NO_DEVICE, "cuInit: no CUDA device");
    if (flags) return fail(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0");
    return call_load_all();
}
static CUresult d_cuDriverGetVersion(int *v) {
    if (!v) return fail(CUDA_ERROR_INVALID_VALUE, "cuDriverGetVersion: NULL");
    const char *ver = getenv("KCTX_DOUBLE_DRIVER_VERSION");
    *v = ver && *ver ? atoi(ver) : 13000;
    return CUDA_SUCCESS;
}
static CUresult d_cuDeviceGetCount(int *n) { return done(sim_device_count(n)); }
static CUresult d_cuDeviceGet(CUdevice *d, int ordinal) {
    int n = 0;
    sim_status st = sim_device_count(&n);
    if (st) return done(st);
    if (ordinal < 0 || ordinal >= n || ordinal >= MAX_DEVICES)
        return fail(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet: no such device");
    *d = ordinal;
    return CUDA_SUCCESS;
}
static CUresult d_cuDeviceGetName(char *name, int len, CUdevice d) {
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    sim_status st = sim_device_get_props(d, &p);
    if (st) return done(st);
    if (!name || len <= 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetName: no buffer");
    snprintf(name, (size_t)len, "%s (CUDA driver double)", p.name);
    return CUDA_SUCCESS;
}
static CUresult d_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    sim_status st = sim_device_get_props(d, &p);
    if (st) return done(st);
    if (a != CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        return fail(CUDA_ERROR_NOT_SUPPORTED, "cuDeviceGetAttribute: the double knows the "
                                              "multiprocessor count only");
    *v = p.aicore_count;
    return CUDA_SUCCESS;
}
static CUresult d_cuDeviceTotalMem(size_t *bytes, CUdevice d) {
    sim_device_props p = SIM_DEVICE_PROPS_INIT;
    sim_status st = sim_device_get_props(d, &p);
    if (st) return done(st);
    *bytes = (size_t)p.memory_capacity;
    return CUDA_SUCCESS;
}
static CUresult d_cuCtxGetCurrent(CUcontext *c) {
    int d = 0;
    sim_status st = sim_get_device(&d);
    if (st) return done(st);
    g_ctx[d].device = d;
    *c = &g_ctx[d];
    return CUDA_SUCCESS;
}
static CUresult d_cuCtxGetDevice(CUdevice *d) {
    int dev = 0;
    sim_status st = sim_get_device(&dev);
    if (!st) *d = dev;
    return done(st);
}
static CUresult d_cuCtxSetCurrent(CUcontext c) {
    COUNT(C_CTX_SET_CURRENT);
    return c ? done(sim_set_device(c->device)) : CUDA_SUCCESS;
}
static CUresult d_cuCtxCreate(CUcontext *c, CUctxCreateParams *params, unsigned int flags,
                              CUdevice d) {
    (void)params;
    (void)flags;
    COUNT(C_CTX_CREATE);
    if (d < 0 || d >= MAX_DEVICES) return fail(CUDA_ERROR_INVALID_DEVICE, "cuCtxCreate");
    g_ctx[d].device = d;
    *c = &g_ctx[d]; /* the double has primary contexts only */
    return done(sim_set_device(d));
}
static CUresult d_cuCtxDestroy(CUcontext c) {
    (void)c;
    COUNT(C_CTX_DESTROY);
    return CUDA_SUCCESS;
}
static CUresult d_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    COUNT(C_PRIMARY_RETAIN);
    if (d < 0 || d >= MAX_DEVICES) return fail(CUDA_ERROR_INVALID_DEVICE, "retain");
    g_ctx[d].device = d;
    *c = &g_ctx[d];
    return CUDA_SUCCESS;
}
static CUresult d_cuDevicePrimaryCtxRelease(CUdevice d) {
    (void)d;
    COUNT(C_PRIMARY_RELEASE);
    return CUDA_SUCCESS;
}
static CUresult d_cuDevicePrimaryCtxReset(CUdevice d) {
    COUNT(C_PRIMARY_RESET);
    int cur = 0;
    sim_status st = sim_get_device(&cur);
    if (!st && cur != d) st = sim_set_device(d);
    if (!st) st = sim_device_reset();
    if (!st) st = call_load(d); /* the reset unloaded the double's device program */
    if (cur != d) {
        sim_status rs = sim_set_device(cur);
        if (!st) st = rs;
    }
    return done(st);
}

/* ---- streams ---------------------------------------------------------------- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_stream g_default[MAX_DEVICES];

/* The sim stream a CUstream names: 0, CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD name the current device's default stream. */
static sim_status stream_of(CUstream s, sim_stream *out) {
    uintptr_t v = (uintptr_t)s;
    if (v > 2) {
        *out = (sim_stream)v;
        return SIM_OK;
    }
    int d = 0;
    sim_status st = sim_get_device(&d);
    if (st) return st;
    pthread_mutex_lock(&g_lock);
    if (!g_default[d]) st = sim_stream_create(&g_default[d]);
    *out = g_default[d];
    pthread_mutex_unlock(&g_lock);
    return st;
}
#define STREAM(var, s)                       \
    sim_stream var = 0;                      \
    do {                                     \
        sim_status st_ = stream_of(s, &var); \
        if (st_) return done(st_);           \
    } while (0)

static CUresult d_cuStreamCreate(CUstream *s, unsigned int flags) {
    (void)flags; /* every sim stream is independent of the others */
    sim_stream h = 0;
    sim_status st = sim_stream_create(&h);
    if (!st) *s = (CUstream)(uintptr_t)h;
    return done(st);
}
static CUresult d_cuStreamDestroy(CUstream s) { return done(sim_stream_destroy((uintptr_t)s)); }
static CUresult d_cuStreamSynchronize(CUstream s) {
    STREAM(h, s);
    return done(sim_stream_synchronize(h));
}
static CUresult d_cuStreamQuery(CUstream s) {
    STREAM(h, s);
    return done(sim_stream_query(h));
}
static CUresult d_cuStreamGetDevice(CUstream s, CUdevice *d) {
    STREAM(h, s);
    int dev = 0;
    sim_status st = sim_stream_get_device(h, &dev);
    if (!st) *d = dev;
    return done(st);
}
static CUresult d_cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
                                         CUgraph *graph, const CUgraphNode **deps,
                                         const CUgraphEdgeData **edges, size_t *ndeps) {
    STREAM(h, s);
    sim_capture_status cs = SIM_CAPTURE_STATUS_NONE;
    uint64_t cid = 0;
    sim_graph g = 0;
    sim_status st = sim_stream_get_capture_info(h, &cs, &cid, &g);
    if (st) return done(st);
    if (status) *status = (CUstreamCaptureStatus)cs;
    if (id) *id = cid;
    if (graph) *graph = (CUgraph)(uintptr_t)g;
    if (deps) *deps = NULL; /* the double does not expose capture dependencies */
    if (edges) *edges = NULL;
    if (ndeps) *ndeps = 0;
    return CUDA_SUCCESS;
}
static CUresult d_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
    STREAM(h, s);
    return done(sim_stream_begin_capture(h, (sim_capture_mode)mode));
}
static CUresult d_cuStreamEndCapture(CUstream s, CUgraph *g) {
    STREAM(h, s);
    sim_graph out = 0;
    sim_status st = sim_stream_end_capture(h, &out);
    if (!st) *g = (CUgraph)(uintptr_t)out;
    return done(st);
}
static CUresult d_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    sim_capture_mode m = (sim_capture_mode)*mode;
    sim_status st = sim_thread_exchange_capture_mode(&m);
    if (!st) *mode = (CUstreamCaptureMode)m;
    return done(st);
}

/* ---- events ----------------------------------------------------------------- */

static CUresult d_cuEventCreate(CUevent *e, unsigned int flags) {
    sim_event h = 0;
    sim_status st = sim_event_create(
        &h, (flags & CU_EVENT_DISABLE_TIMING) ? SIM_EVENT_DISABLE_TIMING : SIM_EVENT_DEFAULT);
    if (!st) *e = (CUevent)(uintptr_t)h;
    return done(st);
}
static CUresult d_cuEventDestroy(CUevent e) { return done(sim_event_destroy((uintptr_t)e)); }
static CUresult d_cuEventRecord(CUevent e, CUstream s) {
    STREAM(h, s);
    return done(sim_event_record((uintptr_t)e, h));
}
static CUresult d_cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
    (void)flags;
    STREAM(h, s);
    return done(sim_stream_wait_event(h, (uintptr_t)e));
}

/* ---- memory ----------------------------------------------------------------- */

static CUresult d_cuMemAlloc(CUdeviceptr *p, size_t n) {
    sim_devptr d = 0;
    sim_status st = sim_malloc(&d, n);
    if (!st) *p = (CUdeviceptr)d;
    return done(st);
}
static CUresult d_cuMemFree(CUdeviceptr p) { return done(sim_free(p)); }
static CUresult d_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
    return done(sim_memcpy((void *)(uintptr_t)dst, src, n, SIM_COPY_HOST_TO_DEVICE));
}
static CUresult d_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
    return done(sim_memcpy(dst, (const void *)(uintptr_t)src, n, SIM_COPY_DEVICE_TO_HOST));
}

/* An aligned device word moved atomically, in stream order. */
typedef struct word_op {
    uint32_t *host;
    uint32_t *dev;
    int to_device;
} word_op;

static void word_run(void *user, sim_status status) {
    word_op *w = user;
    if (status == SIM_OK || status == SIM_KERNEL_ERROR) {
        if (w->to_device)
            atomic_store((_Atomic uint32_t *)w->dev, *w->host);
        else
            *w->host = atomic_load((_Atomic uint32_t *)w->dev);
    }
    free(w);
}

static CUresult word_copy(CUdeviceptr d, uint32_t *host, int to_device, sim_stream h) {
    int dev = 0;
    sim_status st = sim_stream_get_device(h, &dev);
    if (!st) st = sim_mem_lookup(dev, d, 4, NULL, NULL);
    if (st) return done(st);
    word_op *w = malloc(sizeof *w);
    if (!w) return fail(CUDA_ERROR_OUT_OF_MEMORY, "word copy: out of host memory");
    *w = (word_op){host, (uint32_t *)(uintptr_t)d, to_device};
    st = sim_launch_host_func(h, word_run, w);
    if (st) free(w);
    return done(st);
}
/* cuLaunchHostFunc: the function in stream order on the sim stream's
 * thread (later work of the stream waits for it to return); as on CUDA, it
 * is not called once the context has an error (a lost device), and a
 * kernel's reported error is none (see above). */
typedef struct host_op {
    CUhostFn fn;
    void *user;
} host_op;

static void host_run(void *user, sim_status status) {
    host_op *h = user;
    if (status == SIM_OK || status == SIM_KERNEL_ERROR) h->fn(h->user);
    free(h);
}

static CUresult d_cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user) {
    STREAM(h, s);
    if (!fn) return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchHostFunc: fn is NULL");
    host_op *op = malloc(sizeof *op);
    if (!op) return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuLaunchHostFunc: out of host memory");
    *op = (host_op){fn, user};
    sim_status st = sim_launch_host_func(h, host_run, op);
    if (st) free(op);
    return done(st);
}
static int is_word(uintptr_t a, uintptr_t b, size_t n) {
    return n == 4 && a % 4 == 0 && b % 4 == 0;
}

static CUresult d_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    STREAM(h, s);
    if (is_word(dst, (uintptr_t)src, n)) return word_copy(dst, (uint32_t *)(uintptr_t)src, 1, h);
    return done(sim_memcpy_async((void *)(uintptr_t)dst, src, n, SIM_COPY_HOST_TO_DEVICE, h));
}
static CUresult d_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    STREAM(h, s);
    if (is_word(src, (uintptr_t)dst, n)) return word_copy(src, dst, 0, h);
    return done(sim_memcpy_async(dst, (const void *)(uintptr_t)src, n, SIM_COPY_DEVICE_TO_HOST, h));
}
static CUresult d_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    STREAM(h, s);
    return done(sim_memcpy_async((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n,
                                 SIM_COPY_DEVICE_TO_DEVICE, h));
}
static CUresult d_cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
    STREAM(h, s);
    return done(sim_memset_async(dst, v, n, h));
}

/* ---- modules and launches --------------------------------------------------- */

#ifndef KCTX_DOUBLE_RT_ELF
#error "KCTX_DOUBLE_RT_ELF: the path of the sim_elf build of kctx's runtime programs"
#endif

static unsigned char *g_rt;
static size_t g_rt_size;
static pthread_once_t g_rt_once = PTHREAD_ONCE_INIT;

static void rt_read(void) {
    FILE *f = fopen(KCTX_DOUBLE_RT_ELF, "rb");
    if (!f) return;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (g_rt = malloc((size_t)n)) != NULL) {
            if (fread(g_rt, 1, (size_t)n, f) == (size_t)n)
                g_rt_size = (size_t)n;
            else
                free(g_rt), g_rt = NULL;
        }
    }
    fclose(f);
}

/* The extent of an ELF image, from its own header (cuModuleLoadData
 * passes no size): the end of the last section or header table. */
static size_t elf_extent(const unsigned char *b) {
    Elf64_Ehdr e;
    memcpy(&e, b, sizeof e);
    size_t end = (size_t)e.e_shoff + (size_t)e.e_shnum * e.e_shentsize;
    size_t ph = (size_t)e.e_phoff + (size_t)e.e_phnum * e.e_phentsize;
    if (ph > end) end = ph;
    for (unsigned i = 0; i < e.e_shnum && e.e_shentsize == sizeof(Elf64_Shdr); i++) {
        Elf64_Shdr s;
        memcpy(&s, b + e.e_shoff + (size_t)i * sizeof s, sizeof s);
        if (s.sh_type != SHT_NOBITS && s.sh_offset + s.sh_size > end)
            end = (size_t)(s.sh_offset + s.sh_size);
    }
    return end;
}

/* PTX text (cuModuleLoadData takes a NUL-terminated PTX string): the
 * double has no PTX JIT, so PTX never loads. A `.version` newer than the
 * PTX ISA of the CUDA 13.0 toolkit (9.0) is CUDA_ERROR_UNSUPPORTED_PTX_VERSION
 * (what a driver older than the PTX says); any other PTX is
 * CUDA_ERROR_INVALID_PTX (what the driver says when its JIT compilation
 * fails). */
static CUresult ptx_load(const char *text) {
    const char *v = strstr(text, ".version");
    unsigned major = 0, minor = 0;
    if (v && sscanf(v, ".version %u.%u", &major, &minor) == 2 && major * 10 + minor > 90) {
        snprintf(tl_msg, sizeof tl_msg,
                 "cuModuleLoadData: PTX ISA %u.%u is newer than this driver's (9.0)", major, minor);
        return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
    return fail(
        CUDA_ERROR_INVALID_PTX,
        "cuModuleLoadData: PTX: the driver double has no PTX JIT (it runs sim ELF modules)");
}
static int is_ptx(const unsigned char *b) {
    while (*b == ' ' || *b == '\t' || *b == '\n' || *b == '\r') b++;
    return (b[0] == '/' && b[1] == '/') || memcmp(b, ".version", 8) == 0;
}

static CUresult d_cuModuleLoadData(CUmodule *m, const void *image) {
    const unsigned char *b = image;
    if (!b || !m) return fail(CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData: NULL");
    static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};
    const void *bytes = image;
    size_t size = 0;
    if (memcmp(b, fatbin, 4) == 0) {
        /* the fatbin's extent: a 16-byte header (magic, version, header
         * size, then the payload's size) and the payload; kctx's runtime
         * fatbin is uncompressed and names its kernels */
        uint16_t hsize;
        uint64_t fsize;
        memcpy(&hsize, b + 6, sizeof hsize);
        memcpy(&fsize, b + 8, sizeof fsize);
        if (hsize != 16 || fsize == 0 || fsize > ((uint64_t)1 << 32))
            return fail(CUDA_ERROR_INVALID_IMAGE,
                        "cuModuleLoadData: a fatbin whose header cannot be decoded (header size "
                        "must be 16, the payload 1 byte to 4 GiB)");
        if (!memmem(b, (size_t)hsize + (size_t)fsize, "kctx_rt_ho_acquire", 18))
            return fail(CUDA_ERROR_NO_BINARY_FOR_GPU,
                        "cuModuleLoadData: a fatbin of real CUDA kernels: the driver double runs "
                        "sim ELF modules only (and kctx's runtime fatbin, as its sim build)");
        /* KCTX_DOUBLE_RT_NO_BINARY=1 plays a GPU for which kctx's runtime
         * fatbin has no code */
        const char *nb = getenv("KCTX_DOUBLE_RT_NO_BINARY");
        if (nb && *nb == '1')
            return fail(CUDA_ERROR_NO_BINARY_FOR_GPU,
                        "cuModuleLoadData: no code in the fatbin for this device "
                        "(KCTX_DOUBLE_RT_NO_BINARY=1)");
        pthread_once(&g_rt_once, rt_read);
        if (!g_rt)
            return fail(CUDA_ERROR_INVALID_IMAGE,
                        "the double cannot read the sim build of kctx's runtime programs "
                        "(" KCTX_DOUBLE_RT_ELF ")");
        bytes = g_rt;
        size = g_rt_size;
    } else if (memcmp(b, ELFMAG, SELFMAG) == 0 && b[EI_CLASS] == ELFCLASS64) {
        size = elf_extent(b);
    } else if (is_ptx(b)) {
        return ptx_load(image);
    } else {
        return fail(CUDA_ERROR_INVALID_IMAGE,
                    "cuModuleLoadData: the double loads sim ELF modules and kctx's runtime "
                    "fatbin only");
    }
    sim_module h = 0;
    sim_status st = sim_module_load(&h, bytes, size);
    if (!st) *m = (CUmodule)(uintptr_t)h;
    return done(st);
}
/* The double's device program (tests/common/double_call.c) on each device: the sim build read
 * from KCTX_DOUBLE_CALL_SIM, loaded at cuInit (so that it is part of every
 * baseline of live objects) and after a reset; `epoch` is the device's at
 * load, so a reset made behind the double's back is noticed at launch. */
#ifndef KCTX_DOUBLE_CALL_SIM
#error "KCTX_DOUBLE_CALL_SIM: the path of the double's device program (tests/common/double_call.c)"
#endif
static struct {
    sim_module module;
    sim_function fn;
    uint64_t epoch;
    int loaded;
} g_call[MAX_DEVICES];
static unsigned char *g_call_bytes;
static size_t g_call_size;
static pthread_once_t g_call_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_call_lock = PTHREAD_MUTEX_INITIALIZER;

static void call_read(void) {
    g_call_bytes =
        ktc_read_file(KCTX_DOUBLE_CALL_SIM, &g_call_size, NULL, 0); /* NULL: reported at use */
}

/* Load the device program on `device` (g_call_lock held, or at cuInit);
 * the thread's current device is kept. */
static sim_status call_load(int device) {
    pthread_once(&g_call_once, call_read);
    if (!g_call_bytes) {
        snprintf(tl_msg, sizeof tl_msg,
                 "the double cannot read its device program (" KCTX_DOUBLE_CALL_SIM ")");
        return SIM_INVALID_MODULE;
    }
    if (device < 0 || device >= MAX_DEVICES) return SIM_INVALID_VALUE;
    int cur = 0;
    sim_status st = sim_get_device(&cur);
    if (!st && cur != device) st = sim_set_device(device);
    uint64_t epoch = 0;
    sim_module m = 0;
    sim_function fn = 0;
    if (!st) st = sim_device_epoch(device, &epoch);
    if (!st) st = sim_module_load(&m, g_call_bytes, g_call_size);
    if (!st) st = sim_module_get_function(&fn, m, "kctx_double_call");
    if (!st) {
        g_call[device].module = m;
        g_call[device].fn = fn;
        g_call[device].epoch = epoch;
        g_call[device].loaded = 1;
    }
    if (cur != device) {
        sim_status rs = sim_set_device(cur);
        if (!st) st = rs;
    }
    return st;
}

static CUresult call_load_all(void) {
    int n = 0;
    sim_status st = sim_device_count(&n);
    pthread_mutex_lock(&g_call_lock);
    for (int d = 0; !st && d < n && d < MAX_DEVICES; d++)
        if (!g_call[d].loaded) st = call_load(d);
    pthread_mutex_unlock(&g_call_lock);
    return done(st);
}

/* The device program's function on `device`, loaded again if the device
 * was reset since. */
static sim_status call_fn(int device, sim_function *fn) {
    if (device < 0 || device >= MAX_DEVICES) return SIM_INVALID_VALUE;
    uint64_t epoch = 0;
    sim_status st = sim_device_epoch(device, &epoch);
    pthread_mutex_lock(&g_call_lock);
    if (!st && (!g_call[device].loaded || g_call[device].epoch != epoch)) st = call_load(device);
    if (!st) *fn = g_call[device].fn;
    pthread_mutex_unlock(&g_call_lock);
    return st;
}

static CUresult d_cuModuleUnload(CUmodule m) { return done(sim_module_unload((uintptr_t)m)); }
static CUresult d_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    sim_function h = 0;
    sim_status st = sim_module_get_function(&h, (uintptr_t)m, name);
    if (!st) *f = (CUfunction)(uintptr_t)h;
    return done(st);
}
static CUresult d_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shmem, CUstream s,
                                 void **kernel_params, void **extra) {
    (void)shmem;
    STREAM(h, s);
    if (kernel_params || !extra || gy != 1 || gz != 1 || by != 1 || bz != 1)
        return fail(CUDA_ERROR_INVALID_VALUE,
                    "cuLaunchKernel: the double takes 1-D launches with an `extra` buffer only");
    const void *params = NULL;
    size_t size = 0;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            params = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = *(const size_t *)extra[i + 1];
        else
            return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel: unknown `extra` key");
    }
    const int cpu = bx == 1;
    if (cpu && gx != 1)
        return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel: a <<<n, 1>>> launch with n > 1");
    /* through the double's device program: the kernel's entry, then its
     * block (a CUDA kernel's failure never fails its stream, see above) */
    unsigned char block[8 + KCTX_CUDA_PARAMS_SIZE];
    if (size > KCTX_CUDA_PARAMS_SIZE || (size && !params))
        return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel: parameter buffer too large");
    int dev = 0;
    uint64_t entry = 0;
    sim_function call = 0;
    sim_status st = sim_stream_get_device(h, &dev);
    if (!st) st = sim_function_address((uintptr_t)f, &entry);
    if (!st) st = call_fn(dev, &call);
    if (st) return done(st);
    memcpy(block, &entry, sizeof entry);
    if (size) memcpy(block + sizeof entry, params, size);
    return done(sim_launch_kernel(h, call, cpu ? SIM_TARGET_AICPU : SIM_TARGET_AICORE,
                                  cpu ? 1u : gx, block, sizeof entry + size));
}

/* ---- graphs and user objects ------------------------------------------------ */

static CUresult d_cuGraphInstantiate(CUgraphExec *x, CUgraph g, unsigned long long flags) {
    (void)flags;
    sim_graph_exec h = 0;
    sim_status st = sim_graph_instantiate(&h, (uintptr_t)g);
    if (!st) *x = (CUgraphExec)(uintptr_t)h;
    return done(st);
}
static CUresult d_cuGraphLaunch(CUgraphExec x, CUstream s) {
    STREAM(h, s);
    return done(sim_graph_launch((uintptr_t)x, h));
}
static CUresult d_cuGraphDestroy(CUgraph g) { return done(sim_graph_destroy((uintptr_t)g)); }
static CUresult d_cuGraphExecDestroy(CUgraphExec x) {
    return done(sim_graph_exec_destroy((uintptr_t)x));
}
static CUresult d_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n) {
    if (nodes) return fail(CUDA_ERROR_NOT_SUPPORTED, "cuGraphGetNodes: the double counts only");
    return done(sim_graph_node_count((uintptr_t)g, n));
}

struct CUuserObject_st {
    void *ptr;
    CUhostFn destroy;
    _Atomic unsigned refs;
};
static CUresult d_cuUserObjectCreate(CUuserObject *o, void *ptr, CUhostFn destroy, unsigned refs,
                                     unsigned flags) {
    if (!o || !destroy || refs == 0 || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return fail(CUDA_ERROR_INVALID_VALUE, "cuUserObjectCreate");
    struct CUuserObject_st *u = malloc(sizeof *u);
    if (!u) return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuUserObjectCreate");
    u->ptr = ptr;
    u->destroy = destroy;
    atomic_init(&u->refs, refs);
    *o = u;
    return CUDA_SUCCESS;
}
static void uo_release(struct CUuserObject_st *u, unsigned n) {
    if (atomic_fetch_sub(&u->refs, n) == n) {
        u->destroy(u->ptr);
        free(u);
    }
}
static CUresult d_cuUserObjectRelease(CUuserObject o, unsigned n) {
    if (!o || n == 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuUserObjectRelease");
    uo_release(o, n);
    return CUDA_SUCCESS;
}
typedef struct graph_ref {
    struct CUuserObject_st *u;
    unsigned n;
} graph_ref;
static void graph_ref_gone(void *user) {
    graph_ref *r = user;
    uo_release(r->u, r->n);
    free(r);
}
/* The graph's references are released by the sim's graph lifetime hook:
 * once the graph and its executable graphs are gone and their launches
 * completed (or its capture was invalidated). */
static CUresult d_cuGraphRetainUserObject(CUgraph g, CUuserObject o, unsigned n, unsigned flags) {
    if (!o || n == 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuGraphRetainUserObject");
    graph_ref *r = malloc(sizeof *r);
    if (!r) return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuGraphRetainUserObject");
    *r = (graph_ref){o, n};
    if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) atomic_fetch_add(&o->refs, n);
    sim_status st = sim_graph_attach_hook((uintptr_t)g, graph_ref_gone, r);
    if (st) {
        if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) atomic_fetch_sub(&o->refs, n);
        free(r);
    }
    return done(st);
}

/* ---- errors ----------------------------------------------------------------- */

static CUresult d_cuGetErrorName(CUresult st, const char **s) {
    switch (st) {
#define N_(c)    \
    case c:      \
        *s = #c; \
        return CUDA_SUCCESS;
        N_(CUDA_SUCCESS)
        N_(CUDA_ERROR_INVALID_VALUE)
        N_(CUDA_ERROR_OUT_OF_MEMORY)
        N_(CUDA_ERROR_INVALID_DEVICE)
        N_(CUDA_ERROR_INVALID_IMAGE)
        N_(CUDA_ERROR_NO_BINARY_FOR_GPU)
        N_(CUDA_ERROR_INVALID_PTX)
        N_(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
        N_(CUDA_ERROR_INVALID_CONTEXT)
        N_(CUDA_ERROR_INVALID_HANDLE)
        N_(CUDA_ERROR_ILLEGAL_STATE)
        N_(CUDA_ERROR_NOT_FOUND)
        N_(CUDA_ERROR_NOT_READY)
        N_(CUDA_ERROR_LAUNCH_FAILED)
        N_(CUDA_ERROR_NOT_PERMITTED)
        N_(CUDA_ERROR_NOT_SUPPORTED)
        N_(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        N_(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        N_(CUDA_ERROR_STREAM_CAPTURE_MERGE)
        N_(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)
        N_(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        N_(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)
        N_(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
        N_(CUDA_ERROR_CAPTURED_EVENT)
        N_(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
        N_(CUDA_ERROR_TIMEOUT)
        N_(CUDA_ERROR_UNKNOWN)
#undef N_
    default:
        *s = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}
/* The double's string is the calling thread's last detailed message (the
 * sim's, naming what and where), which is what a test wants to read. */
static CUresult d_cuGetErrorString(CUresult st, const char **s) {
    (void)st;
    *s = tl_msg;
    return CUDA_SUCCESS;
}

/* ---- what the double serves, counted (test hook) ------------------------------
 * D_ENTRIES lists every entry cuGetProcAddress_v2 resolves, with its
 * parameters and the arguments that forward them. cuGetProcAddress_v2
 * hands out the served_ wrapper of each, never the d_ function itself, so
 * no entry is served without being counted in the calling thread's total
 * (kctx_cuda_double_thread_calls: the ruler of rule K28, "destroy makes no
 * platform call", seen from the driver's side). */
// clang-format off
#define D_ENTRIES(X) \
    X(cuInit, (unsigned int flags), (flags)) \
    X(cuDriverGetVersion, (int *v), (v)) \
    X(cuDeviceGetCount, (int *n), (n)) \
    X(cuDeviceGet, (CUdevice *d, int ordinal), (d, ordinal)) \
    X(cuDeviceGetName, (char *name, int len, CUdevice d), (name, len, d)) \
    X(cuDeviceGetAttribute, (int *v, CUdevice_attribute a, CUdevice d), (v, a, d)) \
    X(cuDeviceTotalMem, (size_t *bytes, CUdevice d), (bytes, d)) \
    X(cuCtxGetCurrent, (CUcontext *c), (c)) \
    X(cuCtxGetDevice, (CUdevice *d), (d)) \
    X(cuCtxSetCurrent, (CUcontext c), (c)) \
    X(cuCtxCreate, (CUcontext *c, CUctxCreateParams *params, unsigned int flags, CUdevice d), (c, params, flags, d)) \
    X(cuCtxDestroy, (CUcontext c), (c)) \
    X(cuDevicePrimaryCtxRetain, (CUcontext *c, CUdevice d), (c, d)) \
    X(cuDevicePrimaryCtxRelease, (CUdevice d), (d)) \
    X(cuDevicePrimaryCtxReset, (CUdevice d), (d)) \
    X(cuStreamCreate, (CUstream *s, unsigned int flags), (s, flags)) \
    X(cuStreamDestroy, (CUstream s), (s)) \
    X(cuStreamSynchronize, (CUstream s), (s)) \
    X(cuStreamQuery, (CUstream s), (s)) \
    X(cuStreamGetDevice, (CUstream s, CUdevice *d), (s, d)) \
    X(cuStreamGetCaptureInfo, (CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps), (s, status, id, graph, deps, edges, ndeps)) \
    X(cuStreamBeginCapture, (CUstream s, CUstreamCaptureMode mode), (s, mode)) \
    X(cuStreamEndCapture, (CUstream s, CUgraph *g), (s, g)) \
    X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *mode), (mode)) \
    X(cuEventCreate, (CUevent *e, unsigned int flags), (e, flags)) \
    X(cuEventDestroy, (CUevent e), (e)) \
    X(cuEventRecord, (CUevent e, CUstream s), (e, s)) \
    X(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int flags), (s, e, flags)) \
    X(cuMemAlloc, (CUdeviceptr *p, size_t n), (p, n)) \
    X(cuMemFree, (CUdeviceptr p), (p)) \
    X(cuMemcpyHtoD, (CUdeviceptr dst, const void *src, size_t n), (dst, src, n)) \
    X(cuMemcpyDtoH, (void *dst, CUdeviceptr src, size_t n), (dst, src, n)) \
    X(cuLaunchHostFunc, (CUstream s, CUhostFn fn, void *user), (s, fn, user)) \
    X(cuMemcpyHtoDAsync, (CUdeviceptr dst, const void *src, size_t n, CUstream s), (dst, src, n, s)) \
    X(cuMemcpyDtoHAsync, (void *dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s)) \
    X(cuMemcpyDtoDAsync, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s)) \
    X(cuMemsetD8Async, (CUdeviceptr dst, unsigned char v, size_t n, CUstream s), (dst, v, n, s)) \
    X(cuModuleLoadData, (CUmodule *m, const void *image), (m, image)) \
    X(cuModuleUnload, (CUmodule m), (m)) \
    X(cuModuleGetFunction, (CUfunction *f, CUmodule m, const char *name), (f, m, name)) \
    X(cuLaunchKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s, void **kernel_params, void **extra), (f, gx, gy, gz, bx, by, bz, shmem, s, kernel_params, extra)) \
    X(cuGraphInstantiate, (CUgraphExec *x, CUgraph g, unsigned long long flags), (x, g, flags)) \
    X(cuGraphLaunch, (CUgraphExec x, CUstream s), (x, s)) \
    X(cuGraphDestroy, (CUgraph g), (g)) \
    X(cuGraphExecDestroy, (CUgraphExec x), (x)) \
    X(cuGraphGetNodes, (CUgraph g, CUgraphNode *nodes, size_t *n), (g, nodes, n)) \
    X(cuUserObjectCreate, (CUuserObject *o, void *ptr, CUhostFn destroy, unsigned refs, unsigned flags), (o, ptr, destroy, refs, flags)) \
    X(cuUserObjectRelease, (CUuserObject o, unsigned n), (o, n)) \
    X(cuGraphRetainUserObject, (CUgraph g, CUuserObject o, unsigned n, unsigned flags), (g, o, n, flags)) \
    X(cuGetErrorName, (CUresult st, const char **s), (st, s)) \
    X(cuGetErrorString, (CUresult st, const char **s), (st, s))
// clang-format on

static _Thread_local uint64_t tl_served; /* entries served to this thread */

/* Entries served to the calling thread so far: every entry of D_ENTRIES and
 * cuGetProcAddress_v2, failed and refused calls too. */
API uint64_t kctx_cuda_double_thread_calls(void);
API uint64_t kctx_cuda_double_thread_calls(void) { return tl_served; }

#define SERVED_(name, params, args)        \
    static CUresult served_##name params { \
        tl_served++;                       \
        return d_##name args;              \
    }
D_ENTRIES(SERVED_)
#undef SERVED_

/* ---- cuGetProcAddress ------------------------------------------------------- */

#define E_(name, params, args) {#name, (void *)served_##name},
static const struct {
    const char *name;
    void *fn;
} k_table[] = {D_ENTRIES(E_)};
#undef E_

API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *found);
API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *found) {
    tl_served++;
    (void)flags;
    if (!symbol || !pfn) return fail(CUDA_ERROR_INVALID_VALUE, "cuGetProcAddress_v2: NULL");
    if (version < 12080) {
        /* the double offers the 12.8 ABI of each entry only */
        if (found) *found = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        *pfn = NULL;
        return fail(CUDA_ERROR_NOT_FOUND, "cuGetProcAddress_v2: the double offers ABI 12080+");
    }
    for (size_t i = 0; i < sizeof k_table / sizeof k_table[0]; i++)
        if (strcmp(k_table[i].name, symbol) == 0) {
            *pfn = k_table[i].fn;
            if (found) *found = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    *pfn = NULL;
    if (found) *found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return fail(CUDA_ERROR_NOT_FOUND, "cuGetProcAddress_v2: the double has no such entry");
}
