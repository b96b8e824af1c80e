/*
 * test_example_callables — runs the example callables that `kctx pack`
 * built, on the simulated device, and checks their numbers against a host
 * reference.
 *
 * This is a minimal reference launcher, written only against the image
 * view API (include/kctx/image.h), the sim's runtime API (platform/sim/include/kctx/sim.h)
 * and the parameter block convention of
 * examples/callables/kernels/callable_abi.h: for every task, in order, on
 * one stream (stream order satisfies every dependency), the parameter block
 * is one u64 per child parameter — a tensor's device address plus the
 * binding's offset, a scalar's value, or the immediate. So it proves that
 * the images carry runnable kernels and that the manifests' bindings mean
 * what the kernels expect. It is not kctx's launch path.
 *
 * Usage: test_example_callables IMAGE...  (each one of the examples, told
 * apart by the callable's name). Exit status 0 when every image ran and
 * every value matched.
 */
#include <kctx/image.h>
#include <kctx/sim.h>
#include <kctx/task_abi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callable_abi.h"
#include "kctx_test_check.h"
#include "kctx_test_common.h"

/* A failure ends the step: its cleanup (out:) runs and it returns -1. */
#define FAIL_OUT(...)      \
    do {                   \
        FAIL(__VA_ARGS__); \
        goto out;          \
    } while (0)
#define SIM_OK_OR_OUT(call)                \
    do {                                   \
        if (!CHECK_SIM_OK(call)) goto out; \
    } while (0)

/* One callable argument: a tensor of floats, or a scalar. */
typedef struct arg {
    const char *name;
    float *host; /* NULL for a scalar */
    size_t count;
    uint64_t scalar;
    sim_devptr dev;
} arg;

static float *floats(size_t n) {
    float *p = malloc(n * sizeof *p + 1);
    for (size_t i = 0; p != NULL && i < n; i++) p[i] = NAN; /* unwritten outputs stay NaN */
    return p;
}

static void *dev(sim_devptr p) { return (void *)(uintptr_t)p; }

/* Run every task of the image on the sim with `args` (matched to the
 * callable's parameters by name); tensors are copied in before and back out
 * after. Returns 0 when everything ran. */
static int run_callable(const kctx_image_view *v, arg *args, uint32_t nargs) {
    int rc = -1;
    uint32_t np = kctx_image_param_count(v), nc = kctx_image_child_count(v);
    arg **by_param = calloc(np + 1, sizeof *by_param);
    sim_module *modules = calloc(nc + 1, sizeof *modules);
    sim_function *fns = calloc(nc + 1, sizeof *fns);
    sim_stream stream = 0;
    /* the task ABI's parameter block: the header, then the bindings */
    struct {
        kctx_task_header h;
        uint64_t arg[KCTX_IMAGE_MAX_CHILD_PARAMS];
    } pb;
    uint64_t *block = pb.arg;
    if (by_param == NULL || modules == NULL || fns == NULL) FAIL_OUT("out of memory");

    for (uint32_t i = 0; i < np; i++) {
        kctx_image_param p = kctx_image_param_at(v, i);
        for (uint32_t j = 0; j < nargs; j++)
            if (strcmp(args[j].name, p.name) == 0) by_param[i] = &args[j];
        if (by_param[i] == NULL)
            FAIL_OUT("%s: no argument for parameter '%s'", kctx_image_name(v), p.name);
        if ((p.kind == KCTX_PARAM_SCALAR) != (by_param[i]->host == NULL))
            FAIL_OUT("%s: parameter '%s' has the wrong kind of argument", kctx_image_name(v),
                     p.name);
    }
    SIM_OK_OR_OUT(sim_stream_create(&stream));
    for (uint32_t i = 0; i < np; i++) {
        arg *a = by_param[i];
        if (a->host == NULL) continue;
        SIM_OK_OR_OUT(sim_malloc(&a->dev, a->count * sizeof(float)));
        SIM_OK_OR_OUT(sim_memcpy_async(dev(a->dev), a->host, a->count * sizeof(float),
                                       SIM_COPY_HOST_TO_DEVICE, stream));
    }
    for (uint32_t c = 0; c < nc; c++) {
        kctx_image_child child = kctx_image_child_at(v, c);
        kctx_image_variant elf;
        if (kctx_image_find_variant(v, c, KCTX_VARIANT_SIM_ELF, &elf) != 0)
            FAIL_OUT("%s: child '%s' has no sim_elf variant", kctx_image_name(v), child.name);
        SIM_OK_OR_OUT(sim_module_load(&modules[c], elf.blob, (size_t)elf.blob_size));
        SIM_OK_OR_OUT(sim_module_get_function(&fns[c], modules[c], child.entry));
    }
    for (uint32_t t = 0; t < kctx_image_task_count(v); t++) {
        kctx_image_task task = kctx_image_task_at(v, t);
        kctx_image_child child = kctx_image_child_by_id(v, task.func_id);
        for (uint32_t i = 0; i < task.binding_count; i++) {
            kctx_image_binding b = kctx_image_binding_at(v, t, i);
            switch (b.kind) {
            case KCTX_BIND_TENSOR:
                block[i] = by_param[b.param]->dev + b.value;
                break;
            case KCTX_BIND_SCALAR:
                block[i] = by_param[b.param]->scalar;
                break;
            case KCTX_BIND_IMMEDIATE:
                block[i] = b.value;
                break;
            default:
                FAIL_OUT("task %u: binding kind %d", t, (int)b.kind);
            }
        }
        /* no runtime image: no gate and no trace (flags 0) */
        pb.h = (kctx_task_header){0, 1, 0u, t, task.func_id, task.binding_count};
        SIM_OK_OR_OUT(sim_launch_kernel(stream, fns[child.index], SIM_TARGET_AICORE, task.block_dim,
                                        &pb,
                                        sizeof pb.h + CALLABLE_PARAMS_SIZE(task.binding_count)));
    }
    for (uint32_t i = 0; i < np; i++) {
        arg *a = by_param[i];
        if (a->host != NULL)
            SIM_OK_OR_OUT(sim_memcpy_async(a->host, dev(a->dev), a->count * sizeof(float),
                                           SIM_COPY_DEVICE_TO_HOST, stream));
    }
    SIM_OK_OR_OUT(sim_stream_synchronize(stream));
    rc = 0;
out:
    for (uint32_t i = 0; i < nargs; i++) {
        if (args[i].dev != 0) sim_free(args[i].dev);
        args[i].dev = 0;
    }
    for (uint32_t c = 0; modules != NULL && c < nc; c++)
        if (modules[c] != 0) sim_module_unload(modules[c]);
    if (stream != 0) sim_stream_destroy(stream);
    free(by_param);
    free(modules);
    free(fns);
    return rc;
}

static int close_enough(float got, float want) {
    return fabsf(got - want) <= 1e-4f * (1.0f + fabsf(want)); /* false for NaN */
}

static int check_floats(const char *what, const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!CHECK(close_enough(got[i], want[i]), "%s[%zu] = %g, expected %g", what, i,
                   (double)got[i], (double)want[i]))
            return -1;
    }
    return 0;
}

/* ---- the examples ---------------------------------------------------- */

enum {
    VEC_N = 1001
}; /* not a multiple of any block count */

static int vector_add(const kctx_image_view *v) {
    int rc = -1;
    arg args[] = {{"a", floats(VEC_N), VEC_N, 0, 0},
                  {"b", floats(VEC_N), VEC_N, 0, 0},
                  {"c", floats(VEC_N), VEC_N, 0, 0},
                  {"n", NULL, 0, VEC_N, 0}};
    float *want = floats(VEC_N);
    if (!args[0].host || !args[1].host || !args[2].host || !want) FAIL_OUT("out of memory");
    for (size_t i = 0; i < VEC_N; i++) {
        args[0].host[i] = 0.5f * (float)i;
        args[1].host[i] = 3.0f - (float)i;
        want[i] = args[0].host[i] + args[1].host[i];
    }
    if (run_callable(v, args, 4) != 0) goto out;
    rc = check_floats("vector_add c", args[2].host, want, VEC_N);
out:
    for (int i = 0; i < 3; i++) free(args[i].host);
    free(want);
    return rc;
}

static int scale_add_chain(const kctx_image_view *v) {
    int rc = -1;
    const float alpha = 1.5f;
    arg args[] = {{"x", floats(VEC_N), VEC_N, 0, 0},
                  {"z", floats(VEC_N), VEC_N, 0, 0},
                  {"u", floats(VEC_N), VEC_N, 0, 0},
                  {"v1", floats(VEC_N), VEC_N, 0, 0},
                  {"v2", floats(VEC_N), VEC_N, 0, 0},
                  {"n", NULL, 0, VEC_N, 0},
                  {"alpha", NULL, 0, callable_f32_scalar(alpha), 0}};
    float *want = floats(VEC_N);
    for (int i = 0; i < 5; i++)
        if (args[i].host == NULL) FAIL_OUT("out of memory");
    if (want == NULL) FAIL_OUT("out of memory");
    for (size_t i = 0; i < VEC_N; i++) {
        args[0].host[i] = (float)i - 500.0f;
        float u = alpha * args[0].host[i];
        want[i] = 2.0f * u + 3.0f * u; /* v1 = 2u, v2 = 3u, z = v1 + v2 */
    }
    if (run_callable(v, args, 7) != 0) goto out;
    rc = check_floats("scale_add_chain z", args[1].host, want, VEC_N);
out:
    for (int i = 0; i < 5; i++) free(args[i].host);
    free(want);
    return rc;
}

enum {
    MM_M = 37,
    MM_N = 29,
    MM_K = 23
}; /* odd: tiles of unequal sizes */

static int blocked_matmul(const kctx_image_view *v) {
    int rc = -1;
    arg args[] = {{"A", floats(MM_M * MM_K), MM_M * MM_K, 0, 0},
                  {"B", floats(MM_K * MM_N), MM_K * MM_N, 0, 0},
                  {"C", floats(MM_M * MM_N), MM_M * MM_N, 0, 0},
                  {"s", floats(MM_M), MM_M, 0, 0},
                  {"M", NULL, 0, MM_M, 0},
                  {"N", NULL, 0, MM_N, 0},
                  {"K", NULL, 0, MM_K, 0}};
    float *want_c = floats(MM_M * MM_N), *want_s = floats(MM_M);
    for (int i = 0; i < 4; i++)
        if (args[i].host == NULL) FAIL_OUT("out of memory");
    if (want_c == NULL || want_s == NULL) FAIL_OUT("out of memory");
    for (size_t i = 0; i < MM_M * MM_K; i++) args[0].host[i] = (float)((i * 7) % 11) - 5.0f;
    for (size_t i = 0; i < MM_K * MM_N; i++) args[1].host[i] = (float)((i * 5) % 13) * 0.25f;
    for (size_t r = 0; r < MM_M; r++) {
        float sum = 0.0f;
        for (size_t c = 0; c < MM_N; c++) {
            float acc = 0.0f;
            for (size_t k = 0; k < MM_K; k++)
                acc += args[0].host[r * MM_K + k] * args[1].host[k * MM_N + c];
            want_c[r * MM_N + c] = acc;
            sum += acc;
        }
        want_s[r] = sum;
    }
    if (run_callable(v, args, 7) != 0) goto out;
    if (check_floats("blocked_matmul C", args[2].host, want_c, MM_M * MM_N) != 0) goto out;
    rc = check_floats("blocked_matmul s", args[3].host, want_s, MM_M);
out:
    for (int i = 0; i < 4; i++) free(args[i].host);
    free(want_c);
    free(want_s);
    return rc;
}

static const struct {
    const char *name;
    int (*run)(const kctx_image_view *v);
} examples[] = {
    {"vector_add", vector_add},
    {"scale_add_chain", scale_add_chain},
    {"blocked_matmul", blocked_matmul},
};

static int run_image(const char *path) {
    int rc = -1;
    size_t size = 0;
    char why[512];
    /* malloc'd: 8-byte aligned, as images must be */
    void *bytes = ktc_read_file(path, &size, why, sizeof why);
    if (bytes == NULL || size == 0) FAIL_OUT("%s", bytes == NULL ? why : "empty image");
    kctx_image_view v;
    kctx_image_error err;
    if (kctx_image_view_open(&v, bytes, size, &err) != KCTX_IMAGE_OK)
        FAIL_OUT("%s: rejected: %s", path, err.message);
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        if (strcmp(examples[i].name, kctx_image_name(&v)) == 0) {
            rc = examples[i].run(&v);
            if (rc == 0)
                printf("PASS %s (%u tasks)\n", examples[i].name, kctx_image_task_count(&v));
            goto out;
        }
    }
    FAIL_OUT("%s: callable '%s' is not one of the examples", path, kctx_image_name(&v));
out:
    free(bytes);
    return rc;
}

int main(int argc, char **argv) {
    int failed = 0;
    uint64_t live = 0, live_bytes = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: test_example_callables IMAGE...\n");
        return 2;
    }
    if (sim_init() != SIM_OK || sim_set_device(0) != SIM_OK) {
        FAIL("no sim device: %s", sim_last_error_message());
        return 1;
    }
    for (int i = 1; i < argc; i++)
        if (run_image(argv[i]) != 0) failed++;
    /* Clean teardown: nothing left on the device. */
    if (!CHECK(sim_mem_stats(0, &live, &live_bytes) == SIM_OK && live == 0,
               "%llu allocations left on the device", (unsigned long long)live))
        failed++;
    sim_finalize();
    return failed ? 1 : 0;
}
