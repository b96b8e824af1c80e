/*
 * support.c — checks, rigs, images and jobs shared by the probes.
 */
#include "support.h"

#include <kctx/image.h>

#include "callable_abi.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* checks                                                              */

void pr_record_failure(void *probe_, const char *file, int line, const char *text) {
    probe *p = probe_;
    p->failures++;
    if (p->failures > 1) return; /* the first failure is the detail */
    const char *base = file ? strrchr(file, '/') : NULL;
    if (file)
        snprintf(p->detail, sizeof p->detail, "%s:%d: %s", base ? base + 1 : file, line, text);
    else
        snprintf(p->detail, sizeof p->detail, "%s", text);
}

int pr_hook_ok(probe *p, fw_status got, const char *expr, const char *file, int line) {
    if (got == FW_OK) return ktc_held();
    if (got == FW_NA) return pr_na(p, "the %s driver cannot: %s", p->fw->name, expr);
    return ktc_fail(file, line, "HOOK_OK", expr, "%s (%s)", fw_status_name(got),
                    p->fw->last_error());
}

int pr_na(probe *p, const char *fmt, ...) {
    if (p->failures || p->na) return 0;
    p->na = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->detail, sizeof p->detail, fmt, ap);
    va_end(ap);
    return 0;
}

/* Appends src to the string in dst[cap], truncating. */
static void append(char *dst, size_t cap, const char *src) {
    size_t n = strlen(dst), m = strlen(src);
    if (n + 1 >= cap) return;
    if (m > cap - n - 1) m = cap - n - 1;
    memcpy(dst + n, src, m);
    dst[n + m] = '\0';
}

/* note = (note_text or the summary) + "; NOT CHECKED: " + dropped; empty
 * when there is neither a note nor a dropped check (the runners then print
 * the summary). */
static void compose_note(probe *p) {
    p->note[0] = '\0';
    if (!p->note_text[0] && !p->dropped[0]) return;
    append(p->note, sizeof p->note,
           p->note_text[0] ? p->note_text : (p->def ? p->def->summary : ""));
    if (p->dropped[0]) {
        append(p->note, sizeof p->note, "; NOT CHECKED: ");
        append(p->note, sizeof p->note, p->dropped);
    }
}

void pr_note(probe *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->note_text, sizeof p->note_text, fmt, ap);
    va_end(ap);
    compose_note(p);
}

void pr_dropped(probe *p, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (p->dropped[0]) append(p->dropped, sizeof p->dropped, "; ");
    append(p->dropped, sizeof p->dropped, what);
    compose_note(p);
}

int pr_optional(probe *p, fw_status got, const char *what, const char *expr, const char *file,
                int line) {
    if (got == FW_OK) return 1;
    if (got == FW_NA) {
        pr_dropped(p, "%s (the %s driver has no %s)", what, p->fw->name, expr);
        return 0;
    }
    return ktc_fail(file, line, "OPTIONAL_HOOK", expr, "%s (%s)", fw_status_name(got),
                    p->fw->last_error());
}

void pr_log(probe *p, const char *fmt, ...) {
    FILE *out = p->env->out ? p->env->out : stdout;
    fprintf(out, "  %s: ", p->def->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
}

int pr_ok(const probe *p) { return p->failures == 0 && !p->na; }

int msg_has_number(const char *msg, uint64_t n) {
    for (const char *s = msg; *s;) {
        if (!isdigit((unsigned char)*s)) {
            s++;
            continue;
        }
        uint64_t v = 0;
        while (isdigit((unsigned char)*s)) v = v * 10 + (uint64_t)(*s++ - '0');
        if (v == n) return 1;
    }
    return 0;
}

uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ */
/* rig                                                                 */

void *rig_host(rig *r, size_t bytes) {
    if (!CHECK(r->nhost < RIG_MAX_HOST, "too many host buffers in one probe")) return NULL;
    void *m = calloc(1, bytes ? bytes : 1);
    if (!CHECK(m != NULL, "host allocation of %zu bytes failed", bytes)) return NULL;
    r->host[r->nhost++] = m;
    return m;
}

kctx_kernel_config probe_config(const probe *p) {
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = (uint32_t)p->env->strategy;
    return cfg;
}

int pr_host_ordered(const probe *p) { return p->env->strategy == KCTX_STRATEGY_HOST_ORDERED; }

int rig_open(probe *p, rig *r, const kctx_kernel_config *cfg) {
    memset(r, 0, sizeof *r);
    r->p = p;
    r->fw = p->fw;
    if (!CHECK_FW_OK(p->fw, r->fw->current_device(&r->device))) return 0;
    r->have_base =
        OPTIONAL_HOOK(p, live_counts, "the teardown leak check (live counts)", r->device, &r->base);
    if (p->failures) return 0;
    if (!CHECK_K(kctx_context_create(r->fw->platform, &r->ctx), KCTX_OK)) return 0;
    r->ctx_live = 1;
    kctx_kernel_config c = cfg ? *cfg : probe_config(p);
    if (c.strategy == KCTX_STRATEGY_DEFAULT) c.strategy = (uint32_t)p->env->strategy;
    if (!CHECK_K(kctx_kernel_init(r->ctx, &c), KCTX_OK)) return 0;
    /* the run says which strategy it checks: it must be the one in effect */
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    return CHECK_K(kctx_get_context_caps(r->ctx, &caps), KCTX_OK) &&
           CHECK(caps.strategy == c.strategy, "the context runs the %s strategy, not the %s one",
                 kctx_strategy_name((kctx_strategy)caps.strategy),
                 kctx_strategy_name((kctx_strategy)c.strategy));
}

fw_status rig_arm_after_acquire(rig *r, int *hold) {
    if (!r->fw->hold_arm) return FW_NA;
    fw_hold_point point = pr_host_ordered(r->p) ? FW_HOLD_FIRST_TASK : FW_HOLD_SCHEDULER;
    return r->fw->hold_arm(point, r->device, r->ctx, hold);
}

int rig_stream(rig *r, fw_stream *s) {
    if (!CHECK(r->nstreams < RIG_MAX_STREAMS, "too many streams in one probe")) return 0;
    if (!CHECK_FW_OK(r->fw, r->fw->stream_create(s))) return 0;
    r->streams[r->nstreams++] = *s;
    return 1;
}

int rig_alloc(rig *r, size_t bytes, fw_devptr *d) {
    if (!CHECK(r->nbufs < RIG_MAX_BUFS, "too many device buffers in one probe")) return 0;
    if (!CHECK_FW_OK(r->fw, r->fw->mem_alloc(bytes, d))) return 0;
    r->bufs[r->nbufs++] = *d;
    return 1;
}

int rig_image(rig *r, const char *name, const void **bytes, size_t *size) {
    char path[1024], why[1100];
    snprintf(path, sizeof path, "%s/%s.kctx", r->p->env->images_dir, name);
    if (!CHECK(r->nhost < RIG_MAX_HOST, "too many host buffers in one probe")) return 0;
    size_t len = 0;
    void *buf = ktc_read_file(path, &len, why, sizeof why); /* malloc: 16-byte aligned */
    if (!CHECK(buf != NULL, "the example image: %s", why)) return 0;
    r->host[r->nhost++] = buf; /* freed by rig_close */
    if (!CHECK(len > 0, "the example image %s is empty", path)) return 0;
    *bytes = buf;
    *size = len;
    return 1;
}

int rig_prepare(rig *r, uint64_t id, const char *name) {
    const void *bytes;
    size_t size;
    if (!rig_image(r, name, &bytes, &size)) return 0;
    return CHECK_K(kctx_prepare(r->ctx, id, bytes, size), KCTX_OK);
}

int rig_failing_image(rig *r, const void **bytes, size_t *size) {
    const void *mm;
    size_t mm_size;
    if (!rig_image(r, "blocked_matmul", &mm, &mm_size)) return 0;
    kctx_image_view v;
    if (!CHECK(kctx_image_view_open(&v, mm, mm_size, NULL) == KCTX_IMAGE_OK,
               "blocked_matmul image does not validate"))
        return 0;
    uint32_t tile = UINT32_MAX;
    for (uint32_t i = 0; i < kctx_image_child_count(&v); i++)
        if (strcmp(kctx_image_child_at(&v, i).entry, "k_matmul_tile") == 0) tile = i;
    if (!CHECK(tile != UINT32_MAX, "blocked_matmul has no k_matmul_tile child")) return 0;
    kctx_image_child ch = kctx_image_child_at(&v, tile);

    kctx_image_builder *b = kctx_image_builder_new("failing_tile");
    if (!CHECK(b != NULL, "image builder: out of memory")) return 0;
    static const char *const pnames[6] = {"A", "B", "C", "M", "N", "K"};
    for (int i = 0; i < 6; i++)
        kctx_image_builder_param(b, pnames[i],
                                 i == 2 ? KCTX_PARAM_TENSOR_OUT
                                        : (i < 2 ? KCTX_PARAM_TENSOR_IN : KCTX_PARAM_SCALAR));
    uint32_t fid = 0;
    kctx_image_builder_child(b, "matmul_tile", "k_matmul_tile", &fid);
    for (uint32_t i = 0; i < ch.param_count; i++) {
        kctx_image_param cp = kctx_image_child_param_at(&v, tile, i);
        kctx_image_builder_child_param(b, cp.name, cp.kind);
    }
    for (uint32_t i = 0; i < ch.variant_count; i++) {
        kctx_image_variant var = kctx_image_variant_at(&v, tile, i);
        kctx_image_builder_variant(b, var.kind, var.blob, (size_t)var.blob_size);
    }
    kctx_image_builder_task(b, fid, 1, NULL);
    for (uint32_t i = 0; i < 3; i++) kctx_image_builder_bind(b, KCTX_BIND_TENSOR, i, 0);
    for (uint32_t i = 3; i < 6; i++) kctx_image_builder_bind(b, KCTX_BIND_SCALAR, i, 0);
    /* tiles_m = 0: the kernel reports CALLABLE_ERR_SHAPE instead of computing */
    static const uint64_t imm[4] = {0, 1, 0, 0};
    for (int i = 0; i < 4; i++) kctx_image_builder_bind(b, KCTX_BIND_IMMEDIATE, 0, imm[i]);
    void *out = NULL;
    size_t out_size = 0;
    char msg[160] = "";
    kctx_build_status bs = kctx_image_builder_finish(b, &out, &out_size, msg, sizeof msg);
    kctx_image_builder_free(b);
    if (!CHECK(bs == KCTX_BUILD_OK, "building the failing image: %s", msg)) return 0;
    if (!CHECK(r->nhost < RIG_MAX_HOST, "too many host buffers in one probe")) {
        free(out);
        return 0;
    }
    r->host[r->nhost++] = out;
    *bytes = out;
    *size = out_size;
    return 1;
}

int rig_begin_capture(rig *r, fw_stream s) { return CHECK_FW_OK(r->fw, r->fw->begin_capture(s)); }

int rig_end_capture(rig *r, fw_stream s, int *gi) {
    if (!CHECK(r->ngraphs < RIG_MAX_GRAPHS, "too many graphs in one probe")) return 0;
    rig_graph *g = &r->graphs[r->ngraphs];
    memset(g, 0, sizeof *g);
    if (!CHECK_FW_OK(r->fw, r->fw->end_capture(s, &g->g))) return 0;
    *gi = (int)r->ngraphs++;
    return CHECK_FW_OK(r->fw, r->fw->graph_instantiate(g->g, &g->x));
}

int rig_replay(rig *r, int gi, fw_stream s) {
    return CHECK_FW_OK(r->fw, r->fw->graph_launch(r->graphs[gi].x, s));
}

int rig_drop_graph(rig *r, int gi) {
    rig_graph *g = &r->graphs[gi];
    int ok = 1;
    if (g->x) ok &= CHECK_FW_OK(r->fw, r->fw->exec_destroy(g->x));
    if (g->g) ok &= CHECK_FW_OK(r->fw, r->fw->graph_destroy(g->g));
    g->x = g->g = 0;
    return ok;
}

int rig_sync(rig *r, fw_stream s) { return CHECK_FW_OK(r->fw, r->fw->stream_sync(s, SYNC_MS)); }

kctx_status get_resources(kctx_context ctx, kctx_resource_info *info) {
    *info = (kctx_resource_info)KCTX_RESOURCE_INFO_INIT;
    return kctx_get_resources(ctx, info);
}

kctx_phase rig_phase(rig *r) {
    kctx_phase ph = (kctx_phase)-1;
    if (kctx_get_phase(r->ctx, &ph) != KCTX_OK) return (kctx_phase)-1;
    return ph;
}

static int counts_equal(const fw_counts *a, const fw_counts *b) {
    return a->streams == b->streams && a->events == b->events && a->modules == b->modules &&
           a->graphs == b->graphs && a->graph_execs == b->graph_execs &&
           a->hooks_pending == b->hooks_pending && a->allocations == b->allocations &&
           a->bytes == b->bytes;
}

static void counts_str(const fw_counts *c, char *buf, size_t n) {
    snprintf(buf, n,
             "streams %" PRIu64 " events %" PRIu64 " modules %" PRIu64 " graphs %" PRIu64
             " execs %" PRIu64 " hooks %" PRIu64 " allocations %" PRIu64 " bytes %" PRIu64,
             c->streams, c->events, c->modules, c->graphs, c->graph_execs, c->hooks_pending,
             c->allocations, c->bytes);
}

int rig_close(rig *r) {
    probe *p = r->p;
    const fw_driver *fw = r->fw;
    unsigned before = p->failures;
    if (fw->hold_release_all) fw->hold_release_all();
    seam_fault_clear();
    /* A capture a failed probe left open: end it, discard the graph. */
    for (unsigned i = 0; i < r->nstreams && fw_has_capture(fw); i++) {
        int capturing = 0;
        if (fw->capture_status(r->streams[i], &capturing) == FW_OK && capturing) {
            fw_graph g = 0;
            if (fw->end_capture(r->streams[i], &g) == FW_OK && g) fw->graph_destroy(g);
        }
    }
    int hung = r->hung;
    for (unsigned i = 0; i < r->nstreams && !r->device_reset && !hung; i++) {
        fw_status st = fw->stream_sync(r->streams[i], SYNC_MS);
        if (st == FW_TIMEOUT) {
            hung = 1;
            FAIL("teardown: stream %u still busy after %u ms (a hang)", i, SYNC_MS);
        }
    }
    for (unsigned i = 0; i < r->ngraphs; i++) {
        rig_graph *g = &r->graphs[i];
        if (r->device_reset) {
            g->x = g->g = 0;
            continue;
        }
        if (g->x) CHECK_FW_OK(p->fw, fw->exec_destroy(g->x));
        if (g->g) CHECK_FW_OK(p->fw, fw->graph_destroy(g->g));
        g->x = g->g = 0;
    }
    if (r->ctx_live) {
        kctx_status cs = kctx_close(r->ctx);
        if (cs != KCTX_OK) {
            if (!hung) CHECK_K(cs, KCTX_OK);
            /* Recover the device for the probes that follow: the owner
             * resets it, and close abandons every handle (K36). */
            if (fw->owner_reset && fw->owner_reset(r->device) == FW_OK) {
                r->device_reset = 1;
                pr_log(p, "teardown: close returned %s; recovered by an owner reset",
                       kctx_status_name(cs));
                CHECK_K(kctx_close(r->ctx), KCTX_OK);
            }
        }
        if (CHECK_K(kctx_destroy(r->ctx), KCTX_OK)) r->ctx_live = 0;
    }
    for (unsigned i = 0; i < r->nbufs; i++) {
        fw_status st = fw->mem_free(r->bufs[i]);
        if (!r->device_reset) CHECK_FW_OK(p->fw, st);
    }
    r->nbufs = 0;
    for (unsigned i = 0; i < r->nstreams; i++) {
        fw_status st = fw->stream_destroy(r->streams[i]);
        if (!r->device_reset) CHECK_FW_OK(p->fw, st);
    }
    r->nstreams = 0;
    if (r->have_base) {
        fw_counts now, want = r->base;
        if (r->device_reset) memset(&want, 0, sizeof want); /* the reset emptied the device */
        if (CHECK_FW_OK(p->fw, fw->live_counts(r->device, &now)) && !counts_equal(&now, &want)) {
            char a[256], b[256];
            counts_str(&now, a, sizeof a);
            counts_str(&want, b, sizeof b);
            FAIL("teardown leaked: %s; expected %s", a, b);
        }
    }
    for (unsigned i = 0; i < r->nhost; i++) free(r->host[i]);
    r->nhost = 0;
    return p->failures == before;
}

/* ------------------------------------------------------------------ */
/* jobs                                                                */

#define SENTINEL 0xFFu

static uint64_t mix(uint64_t salt, uint64_t i) {
    uint64_t s = salt * 0x100000001B3ull + i;
    return rng_next(&s);
}

static int job_buffers(rig *r, job *j, const size_t *in_bytes, unsigned nin,
                       const size_t *out_bytes, unsigned nout, fw_devptr given_out) {
    j->nin = nin;
    j->nout = nout;
    for (unsigned i = 0; i < nin; i++) {
        j->in_bytes[i] = in_bytes[i];
        j->host_in[i] = rig_host(r, in_bytes[i]);
        if (!j->host_in[i] || !rig_alloc(r, in_bytes[i], &j->in[i])) return 0;
    }
    for (unsigned i = 0; i < nout; i++) {
        j->out_bytes[i] = out_bytes[i];
        j->want[i] = rig_host(r, out_bytes[i]);
        if (!j->want[i]) return 0;
        if (i == 0 && given_out)
            j->out[i] = given_out;
        else if (!rig_alloc(r, out_bytes[i], &j->out[i]))
            return 0;
    }
    return 1;
}

int job_vadd(rig *r, job *j, uint64_t id, size_t n, uint64_t salt, fw_devptr out) {
    memset(j, 0, sizeof *j);
    j->kind = JOB_VADD;
    j->id = id;
    j->n = n;
    size_t bytes = n * sizeof(float);
    size_t ib[2] = {bytes, bytes}, ob[1] = {bytes};
    if (!job_buffers(r, j, ib, 2, ob, 1, out)) return 0;
    j->nargs = 4;
    j->args[0] = KCTX_TENSOR(j->in[0], bytes);
    j->args[1] = KCTX_TENSOR(j->in[1], bytes);
    j->args[2] = KCTX_TENSOR(j->out[0], bytes);
    j->args[3] = KCTX_SCALAR(n);
    return job_set_inputs(r, j, salt);
}

int job_chain(rig *r, job *j, uint64_t id, size_t n, uint64_t salt, fw_devptr out) {
    memset(j, 0, sizeof *j);
    j->kind = JOB_CHAIN;
    j->id = id;
    j->n = n;
    size_t bytes = n * sizeof(float);
    size_t ib[1] = {bytes}, ob[1] = {bytes};
    if (!job_buffers(r, j, ib, 1, ob, 1, out)) return 0;
    fw_devptr ws[3];
    for (int i = 0; i < 3; i++)
        if (!rig_alloc(r, bytes, &ws[i])) return 0;
    j->nargs = 7;
    j->args[0] = KCTX_TENSOR(j->in[0], bytes);
    j->args[1] = KCTX_TENSOR(j->out[0], bytes);
    for (int i = 0; i < 3; i++) j->args[2 + i] = KCTX_TENSOR(ws[i], bytes);
    j->args[5] = KCTX_SCALAR(n);
    j->alpha = (float)(1 + salt % 3);
    j->args[6] = KCTX_SCALAR(callable_f32_scalar(j->alpha));
    return job_set_inputs(r, j, salt);
}

int job_matmul(rig *r, job *j, uint64_t id, uint64_t M, uint64_t N, uint64_t K, uint64_t salt,
               int random_floats) {
    memset(j, 0, sizeof *j);
    j->kind = JOB_MATMUL;
    j->id = id;
    j->M = M;
    j->N = N;
    j->K = K;
    j->random_floats = random_floats;
    size_t ib[2] = {M * K * sizeof(float), K * N * sizeof(float)};
    size_t ob[2] = {M * N * sizeof(float), M * sizeof(float)};
    if (!job_buffers(r, j, ib, 2, ob, 2, 0)) return 0;
    if (random_floats) {
        for (int i = 0; i < 2; i++)
            if (!(j->bound[i] = rig_host(r, ob[i]))) return 0;
    }
    j->nargs = 7;
    j->args[0] = KCTX_TENSOR(j->in[0], ib[0]);
    j->args[1] = KCTX_TENSOR(j->in[1], ib[1]);
    j->args[2] = KCTX_TENSOR(j->out[0], ob[0]);
    j->args[3] = KCTX_TENSOR(j->out[1], ob[1]);
    j->args[4] = KCTX_SCALAR(M);
    j->args[5] = KCTX_SCALAR(N);
    j->args[6] = KCTX_SCALAR(K);
    return job_set_inputs(r, j, salt);
}

int job_set_inputs(rig *r, job *j, uint64_t salt) {
    switch (j->kind) {
    case JOB_VADD:
        /* integers below 2^12: every sum is exact */
        for (size_t i = 0; i < j->n; i++) {
            j->host_in[0][i] = (float)(salt % 512 + i % 1021);
            j->host_in[1][i] = (float)(2 * ((i * 7) % 509) + salt % 7);
            j->want[0][i] = j->host_in[0][i] + j->host_in[1][i];
        }
        break;
    case JOB_CHAIN: {
        /* z = 2 (alpha x) + 3 (alpha x): small integers, exact */
        for (size_t i = 0; i < j->n; i++) {
            j->host_in[0][i] = (float)(salt % 64 + i % 257);
            float u = j->alpha * j->host_in[0][i];
            j->want[0][i] = 2.0f * u + 3.0f * u;
        }
        break;
    }
    case JOB_MATMUL: {
        uint64_t M = j->M, N = j->N, K = j->K;
        for (int t = 0; t < 2; t++) {
            size_t cnt = j->in_bytes[t] / sizeof(float);
            for (size_t i = 0; i < cnt; i++) {
                uint64_t h = mix(salt * 2 + (uint64_t)t, i);
                j->host_in[t][i] = j->random_floats
                                       ? (float)((double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0)
                                       : (float)((int)(h % 7) - 3);
            }
        }
        const float *A = j->host_in[0], *B = j->host_in[1];
        double scale = 2.0 * (double)(K + N + 2) * FLT_EPSILON;
        for (uint64_t rr = 0; rr < M; rr++) {
            double srow = 0.0, sbound = 0.0;
            for (uint64_t c = 0; c < N; c++) {
                double acc = 0.0, mag = 0.0;
                for (uint64_t k = 0; k < K; k++) {
                    acc += (double)A[rr * K + k] * (double)B[k * N + c];
                    mag += fabs((double)A[rr * K + k] * (double)B[k * N + c]);
                }
                j->want[0][rr * N + c] = (float)acc;
                srow += acc;
                sbound += mag;
                if (j->random_floats) j->bound[0][rr * N + c] = (float)(scale * mag);
            }
            j->want[1][rr] = (float)srow;
            if (j->random_floats) j->bound[1][rr] = (float)(scale * sbound);
        }
        break;
    }
    }
    for (unsigned i = 0; i < j->nin; i++)
        if (!CHECK_FW_OK(r->fw, r->fw->upload(j->in[i], j->host_in[i], j->in_bytes[i]))) return 0;
    return 1;
}

kctx_status job_launch(rig *r, const job *j, fw_stream s) {
    return kctx_launch(r->ctx, j->id, j->args, j->nargs, s);
}

static const char *job_name(const job *j) {
    switch (j->kind) {
    case JOB_VADD:
        return "vector_add";
    case JOB_CHAIN:
        return "scale_add_chain";
    case JOB_MATMUL:
        return "blocked_matmul";
    }
    return "?";
}

int job_expect(rig *r, const job *j, const char *when) {
    for (unsigned o = 0; o < j->nout; o++) {
        size_t cnt = j->out_bytes[o] / sizeof(float);
        float *got = malloc(j->out_bytes[o] ? j->out_bytes[o] : 1);
        if (!CHECK(got != NULL, "host allocation failed")) return 0;
        if (!CHECK_FW_OK(r->fw, r->fw->download(got, j->out[o], j->out_bytes[o]))) {
            free(got);
            return 0;
        }
        for (size_t i = 0; i < cnt; i++) {
            float w = j->want[o][i];
            float tol = j->bound[o] ? j->bound[o][i] : 0.0f;
            int ok = tol == 0.0f ? memcmp(&got[i], &w, sizeof w) == 0 : fabsf(got[i] - w) <= tol;
            if (!ok) {
                uint32_t bits;
                memcpy(&bits, &got[i], sizeof bits);
                FAIL("%s: %s output %u element %zu of %zu is %g (0x%08x), expected %g%s%g", when,
                     job_name(j), o, i, cnt, (double)got[i], bits, (double)w,
                     tol == 0.0f ? "" : " +- ", (double)tol);
                free(got);
                return 0;
            }
        }
        free(got);
    }
    return 1;
}

int job_clear(rig *r, const job *j, fw_stream s) {
    for (unsigned o = 0; o < j->nout; o++)
        if (!CHECK_FW_OK(r->fw, r->fw->fill_async(j->out[o], SENTINEL, j->out_bytes[o], s)))
            return 0;
    return 1;
}

int job_untouched(rig *r, const job *j, const char *when) {
    for (unsigned o = 0; o < j->nout; o++) {
        unsigned char *got = malloc(j->out_bytes[o] ? j->out_bytes[o] : 1);
        if (!CHECK(got != NULL, "host allocation failed")) return 0;
        if (!CHECK_FW_OK(r->fw, r->fw->download(got, j->out[o], j->out_bytes[o]))) {
            free(got);
            return 0;
        }
        for (size_t i = 0; i < j->out_bytes[o]; i++) {
            if (got[i] != SENTINEL) {
                FAIL("%s: %s output %u byte %zu was written (0x%02x), expected untouched", when,
                     job_name(j), o, i, got[i]);
                free(got);
                return 0;
            }
        }
        free(got);
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* the platform seam's counting and fault injection                    */

static const int k_enqueue_pops[] = {KCTX_POP_EVENT_RECORD, KCTX_POP_STREAM_WAIT_EVENT,
                                     KCTX_POP_LAUNCH,       KCTX_POP_MEMCPY_HTOD_ASYNC,
                                     KCTX_POP_MEMSET_ASYNC, KCTX_POP_MEMCPY_DTOH_ASYNC};

fw_status seam_thread_calls(uint64_t *calls, uint64_t *enqueues) {
    uint64_t e = 0;
    for (size_t i = 0; i < sizeof k_enqueue_pops / sizeof k_enqueue_pops[0]; i++)
        e += kctx_thread_platform_calls(k_enqueue_pops[i]);
    *calls = kctx_thread_platform_calls(KCTX_POP_ANY);
    *enqueues = e;
    return FW_OK;
}

fw_status seam_fault_arm(uint64_t nth, int *fault) {
    kctx_fault f = KCTX_FAULT_INIT; /* any op, this thread, once, PLATFORM_ERROR */
    f.nth = nth;
    return kctx_fault_arm(&f, fault) == KCTX_OK ? FW_OK : FW_ERROR;
}

fw_status seam_fault_hits(int fault, uint64_t *hits) {
    return kctx_fault_hits(fault, hits) == KCTX_OK ? FW_OK : FW_ERROR;
}

fw_status seam_fault_clear(void) {
    kctx_fault_clear_all();
    return FW_OK;
}

int pr_wait_flag(pthread_mutex_t *mu, pthread_cond_t *cv, const int *flag, unsigned ms) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(mu);
    while (!*flag)
        if (pthread_cond_timedwait(cv, mu, &dl) != 0) break;
    int ret = *flag;
    pthread_mutex_unlock(mu);
    return ret;
}
