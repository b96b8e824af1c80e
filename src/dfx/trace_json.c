/*
 * trace_json.c — kctx_dfx_write_chrome: a collected trace (trace.h) as
 * Chrome trace-event JSON (the "JSON Object Format" that Perfetto and
 * chrome://tracing open). docs/tracing.md describes the file; the reader
 * (tools/kctx/trace_read.c) and the tests rely on the lane names and args
 * written here.
 *
 * The output depends only on the input: no clock, no pid, no address is
 * written, and events come in input order (metadata first), so the same
 * trace always gives the same bytes.
 */
#include "trace.h"

#include <kctx/kctx.h> /* KCTX_STATUS_MAP: status names without linking libkctx */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* JSON numbers above 2^53 lose precision in JavaScript viewers (and in any
 * reader that parses numbers as doubles), so identifiers above it are
 * written as decimal strings; the reader accepts both forms. */
#define EXACT_JSON_INT (UINT64_C(1) << 53)

static const char *status_name(uint32_t s) {
    switch (s) {
#define STATUS_CASE_(name, num, msg) \
    case (num):                      \
        return "KCTX_" #name;
        KCTX_STATUS_MAP(STATUS_CASE_)
#undef STATUS_CASE_
    default:
        return "KCTX_UNKNOWN";
    }
}

static const char *host_span_name(uint32_t kind) {
    switch (kind) {
    case KCTX_DFX_INIT:
        return "init";
    case KCTX_DFX_PREPARE:
        return "prepare";
    case KCTX_DFX_LAUNCH:
        return "launch";
    case KCTX_DFX_CLOSE:
        return "close";
    case KCTX_DFX_FLUSH:
        return "flush";
    default:
        return NULL;
    }
}

/* The length of the well-formed UTF-8 sequence at p (1..4), or 0 when the
 * bytes there are not one (a stray continuation byte, a truncated or
 * overlong sequence, a surrogate, a code point above U+10FFFF). */
static size_t utf8_len(const unsigned char *p) {
    if (p[0] < 0x80) return 1;
    size_t n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
               : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                              : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
    if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))) return 0;
    if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))) return 0;
    return n;
}

/* A JSON string. Names come from images and may hold any byte: control
 * characters are escaped, and a byte that is not part of well-formed UTF-8
 * is written as U+FFFD, so the file is always valid JSON (RFC 8259 text is
 * UTF-8; Jansson and browsers reject anything else). NULL writes "". */
static void put_escaped(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p != '\0';) {
        size_t n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", f);
            p++;
        } else if (n > 1) {
            fwrite(p, 1, n, f);
            p += n;
        } else {
            if (*p == '"' || *p == '\\')
                fprintf(f, "\\%c", *p);
            else if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", (unsigned)*p);
            else
                fputc(*p, f);
            p++;
        }
    }
    fputc('"', f);
}

static void put_id(FILE *f, uint64_t v) {
    if (v <= EXACT_JSON_INT)
        fprintf(f, "%" PRIu64, v);
    else
        fprintf(f, "\"%" PRIu64 "\"", v);
}

/* Microseconds with nanosecond precision: 12345 ns -> 12.345. */
static void put_us(FILE *f, uint64_t ns) {
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000u, (unsigned)(ns % 1000u));
}

/* ---- lanes ------------------------------------------------------------ */

/* Lanes are Chrome "threads" of one process: host threads (ascending thread
 * number), then the AICPU, then the AICore cores (ascending core index).
 * tids count from 1 in that order and double as thread_sort_index. */
typedef struct lanes {
    uint64_t *threads; /* distinct host thread numbers, sorted */
    size_t nthreads;
    uint32_t *extra; /* distinct core indices >= core_count seen in records, sorted */
    size_t nextra;
    uint32_t core_count;
} lanes;

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static size_t unique(void *base, size_t n, size_t width, int (*cmp)(const void *, const void *)) {
    if (n == 0) return 0;
    qsort(base, n, width, cmp);
    char *b = base;
    size_t out = 1;
    for (size_t i = 1; i < n; i++)
        if (cmp(b + (out - 1) * width, b + i * width) != 0)
            memmove(b + out++ * width, b + i * width, width);
    return out;
}

static int lanes_build(lanes *l, const kctx_dfx_trace *t) {
    memset(l, 0, sizeof *l);
    l->core_count = t->core_count;
    /* Records on cores beyond core_count are rare (a bad record): count
     * them before sizing their array. */
    size_t nextra = 0;
    for (size_t i = 0; i < t->ndev; i++)
        nextra += t->dev[i].core != UINT32_MAX && t->dev[i].core >= t->core_count;
    l->threads = malloc((t->nhost ? t->nhost : 1) * sizeof *l->threads);
    l->extra = malloc((nextra ? nextra : 1) * sizeof *l->extra);
    if (l->threads == NULL || l->extra == NULL) return -1;
    for (size_t i = 0; i < t->nhost; i++) l->threads[i] = t->host[i].thread;
    l->nthreads = unique(l->threads, t->nhost, sizeof *l->threads, cmp_u64);
    for (size_t i = 0; i < t->ndev; i++) {
        uint32_t core = t->dev[i].core;
        if (core != UINT32_MAX && core >= t->core_count) l->extra[l->nextra++] = core;
    }
    l->nextra = unique(l->extra, l->nextra, sizeof *l->extra, cmp_u32);
    return 0;
}

static void lanes_free(lanes *l) {
    free(l->threads);
    free(l->extra);
}

static uint64_t tid_aicpu(const lanes *l) { return (uint64_t)l->nthreads + 1; }

static uint64_t tid_host(const lanes *l, uint64_t thread) {
    const uint64_t *p = bsearch(&thread, l->threads, l->nthreads, sizeof thread, cmp_u64);
    return (uint64_t)(p - l->threads) + 1; /* every thread was collected */
}

static uint64_t tid_core(const lanes *l, uint32_t core) {
    if (core == UINT32_MAX) return tid_aicpu(l);
    if (core < l->core_count) return tid_aicpu(l) + 1 + core;
    const uint32_t *p = bsearch(&core, l->extra, l->nextra, sizeof core, cmp_u32);
    return tid_aicpu(l) + 1 + l->core_count + (uint64_t)(p - l->extra);
}

/* ---- events ----------------------------------------------------------- */

static void put_lane_meta(FILE *f, unsigned pid, uint64_t tid, const char *name, uint64_t n,
                          int numbered) {
    fprintf(f,
            ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%" PRIu64
            ",\"args\":{\"name\":\"",
            pid, tid);
    fputs(name, f);
    if (numbered) fprintf(f, " %" PRIu64, n);
    fprintf(f,
            "\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%u,\"tid\":%" PRIu64
            ",\"args\":{\"sort_index\":%" PRIu64 "}}",
            pid, tid, tid);
}

static void put_complete(FILE *f, const char *cat, unsigned pid, uint64_t tid, uint64_t base,
                         uint64_t t0, uint64_t t1) {
    fprintf(f, "\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%u,\"tid\":%" PRIu64 ",\"ts\":", cat, pid,
            tid);
    put_us(f, t0 - base);
    fputs(",\"dur\":", f);
    put_us(f, t1 > t0 ? t1 - t0 : 0);
}

/* ---- names ------------------------------------------------------------ */

/* Launch id -> callable id, from the launch spans (a replay carries its
 * capture's launch id, whose launch span names the callable). */
typedef struct launch_of {
    uint64_t launch, callable;
} launch_of;

static int cmp_launch(const void *a, const void *b) {
    uint64_t x = ((const launch_of *)a)->launch, y = ((const launch_of *)b)->launch;
    return (x > y) - (x < y);
}

static const kctx_dfx_names *names_of(const kctx_dfx_trace *t, uint64_t callable) {
    for (size_t i = 0; i < t->nnames; i++)
        if (t->names[i].id == callable) return &t->names[i];
    return NULL;
}

typedef struct namer {
    const kctx_dfx_trace *t;
    launch_of *map; /* sorted by launch id; NULL when there are no names */
    size_t n;
} namer;

static const kctx_dfx_names *names_of_launch(const namer *nm, uint64_t launch) {
    if (!nm->map) return NULL;
    launch_of key = {launch, 0};
    const launch_of *hit = bsearch(&key, nm->map, nm->n, sizeof key, cmp_launch);
    return hit ? names_of(nm->t, hit->callable) : NULL;
}

static void put_name_args(FILE *f, const kctx_dfx_names *n, uint32_t func_id, int with_kernel) {
    if (!n) return;
    fputs("\"callable_name\":", f);
    put_escaped(f, n->name);
    fputc(',', f);
    if (with_kernel && n->functions && func_id < n->nfunctions) {
        fputs("\"kernel\":", f);
        put_escaped(f, n->functions[func_id]);
        fputc(',', f);
    }
}

static void put_host_span(FILE *f, const lanes *l, const kctx_dfx_trace *t, unsigned pid,
                          uint64_t base, const kctx_dfx_host_span *s) {
    const char *name = host_span_name(s->kind);
    if (name != NULL)
        fprintf(f, ",\n{\"name\":\"%s", name);
    else
        fprintf(f, ",\n{\"name\":\"host span %" PRIu32, s->kind);
    put_complete(f, "host", pid, tid_host(l, s->thread), base, s->t0, s->t1);
    fputs(",\"args\":{", f);
    if (s->kind == KCTX_DFX_PREPARE || s->kind == KCTX_DFX_LAUNCH)
        put_name_args(f, names_of(t, s->id), 0, 0);
    if (s->kind == KCTX_DFX_PREPARE || s->kind == KCTX_DFX_LAUNCH) {
        fputs("\"callable\":", f);
        put_id(f, s->id);
        fputc(',', f);
    }
    if (s->kind == KCTX_DFX_LAUNCH) {
        fputs("\"launch\":", f);
        put_id(f, s->launch_id);
        fputc(',', f);
    }
    fprintf(f, "\"status\":%" PRIu32 ",\"status_name\":\"%s\"}}", s->status,
            status_name(s->status));
}

static void put_dev_record(FILE *f, const lanes *l, const namer *nm, unsigned pid, uint64_t base,
                           const kctx_rt_trace_rec *r) {
    const char *cat = r->core == UINT32_MAX ? "aicpu" : "aicore";
    switch (r->kind) {
    case KCTX_RT_TRACE_SCHED:
        fputs(",\n{\"name\":\"scheduler", f);
        break;
    case KCTX_RT_TRACE_TASK:
        fprintf(f, ",\n{\"name\":\"task %" PRIu32 " f%" PRIu32 "/b%" PRIu32, r->task, r->func_id,
                r->block);
        break;
    case KCTX_RT_TRACE_REFUSED:
        fputs(",\n{\"name\":\"refused replay", f);
        break;
    default:
        fprintf(f, ",\n{\"name\":\"device record %" PRIu32, r->kind);
        break;
    }
    put_complete(f, cat, pid, tid_core(l, r->core), base, r->t0, r->t1);
    fputs(",\"args\":{", f);
    put_name_args(f, names_of_launch(nm, r->launch_id), r->func_id, r->kind == KCTX_RT_TRACE_TASK);
    if (r->kind == KCTX_RT_TRACE_TASK)
        fprintf(f, "\"task\":%" PRIu32 ",\"func_id\":%" PRIu32 ",\"block\":%" PRIu32 ",", r->task,
                r->func_id, r->block);
    fputs("\"launch\":", f);
    put_id(f, r->launch_id);
    fputs("}}", f);
}

static void emit(FILE *f, const kctx_dfx_trace *t, const lanes *l) {
    /* The base is the earliest start; the end the latest finish. */
    uint64_t base = UINT64_MAX, end = 0;
    for (size_t i = 0; i < t->nhost; i++) {
        if (t->host[i].t0 < base) base = t->host[i].t0;
        if (t->host[i].t1 > end) end = t->host[i].t1;
    }
    for (size_t i = 0; i < t->ndev; i++) {
        if (t->dev[i].t0 < base) base = t->dev[i].t0;
        if (t->dev[i].t1 > end) end = t->dev[i].t1;
    }
    if (base == UINT64_MAX) base = end = 0;
    if (end < base) end = base;

    /* Chrome pids are small integers (viewers read them as 32-bit): the
     * low 31 bits of the handle; the whole handle is in process_name. */
    unsigned pid = (unsigned)(t->context & 0x7fffffffu);
    if (pid == 0) pid = 1;
    const char *platform = t->platform ? t->platform : "?";

    fputs("{\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"kctx_trace_format\":1,\"platform\":", f);
    put_escaped(f, platform);
    fprintf(f,
            ",\"device\":%d,\"context\":\"0x%" PRIx64 "\",\"core_count\":%" PRIu32 ",\"base_ns\":",
            t->device, t->context, t->core_count);
    put_id(f, base);
    fprintf(f, ",\"host_spans\":%zu,\"device_records\":%zu,\"host_dropped\":", t->nhost, t->ndev);
    put_id(f, t->host_dropped);
    fputs(",\"dev_dropped\":", f);
    put_id(f, t->dev_dropped);
    if (t->nnames) {
        fputs(",\"callables\":[", f);
        for (size_t i = 0; i < t->nnames; i++) {
            const kctx_dfx_names *n = &t->names[i];
            fputs(i ? ",{\"id\":" : "{\"id\":", f);
            put_id(f, n->id);
            fputs(",\"name\":", f);
            put_escaped(f, n->name);
            fputs(",\"kernels\":[", f);
            for (uint32_t k = 0; n->functions && k < n->nfunctions; k++) {
                if (k) fputc(',', f);
                put_escaped(f, n->functions[k]);
            }
            fputs("]}", f);
        }
        fputc(']', f);
    }
    if (t->device_na) {
        char na[512];
        snprintf(na, sizeof na, "not available: %s", t->device_na);
        fputs(",\"device_lanes\":", f);
        put_escaped(f, na);
    }
    fputs("},\n\"traceEvents\":[\n", f);

    char pname[256];
    snprintf(pname, sizeof pname, "kctx %s device %d context 0x%" PRIx64, platform, t->device,
             t->context);
    fprintf(
        f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":", pid);
    put_escaped(f, pname);
    fputs("}}", f);
    for (size_t i = 0; i < l->nthreads; i++)
        put_lane_meta(f, pid, tid_host(l, l->threads[i]), "host thread", l->threads[i], 1);
    if (!t->device_na) { /* no empty device lanes where the device cannot write */
        put_lane_meta(f, pid, tid_aicpu(l), "AICPU", 0, 0);
        for (uint32_t c = 0; c < l->core_count; c++)
            put_lane_meta(f, pid, tid_core(l, c), "core", c, 1);
        for (size_t i = 0; i < l->nextra; i++)
            put_lane_meta(f, pid, tid_core(l, l->extra[i]), "core", l->extra[i], 1);
    }

    /* names: launch id -> callable, for the device records */
    namer nm = {t, NULL, 0};
    if (t->nnames && t->nhost) {
        nm.map = malloc(t->nhost * sizeof *nm.map);
        for (size_t i = 0; nm.map && i < t->nhost; i++)
            if (t->host[i].kind == KCTX_DFX_LAUNCH)
                nm.map[nm.n++] = (launch_of){t->host[i].launch_id, t->host[i].id};
        if (nm.map) qsort(nm.map, nm.n, sizeof *nm.map, cmp_launch);
    }
    for (size_t i = 0; i < t->nhost; i++) put_host_span(f, l, t, pid, base, &t->host[i]);
    for (size_t i = 0; i < t->ndev; i++) put_dev_record(f, l, &nm, pid, base, &t->dev[i]);
    free(nm.map);

    /* Always written, zeros included: a reader never has to guess whether
     * the counts were lost or were zero. At the end of the trace, where
     * the dropped (newest) records would have been. */
    fprintf(f,
            ",\n{\"name\":\"dropped\",\"cat\":\"kctx\",\"ph\":\"i\",\"s\":\"p\",\"pid\":%u,\"tid\":"
            "%" PRIu64 ",\"ts\":",
            pid, t->device_na ? (uint64_t)0 : tid_aicpu(l));
    put_us(f, end - base);
    fputs(",\"args\":{\"host_dropped\":", f);
    put_id(f, t->host_dropped);
    fputs(",\"dev_dropped\":", f);
    put_id(f, t->dev_dropped);
    fputs("}}\n]}\n", f);
}

/* ---- the file --------------------------------------------------------- */

static int fail(char *err, size_t errsz, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errsz, const char *fmt, ...) {
    if (err != NULL && errsz > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errsz, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int kctx_dfx_write_chrome(const char *path, const kctx_dfx_trace *t, char *err, size_t errsz) {
    if (err != NULL && errsz > 0) err[0] = '\0';
    if (path == NULL || path[0] == '\0' || t == NULL || (t->nhost && t->host == NULL) ||
        (t->ndev && t->dev == NULL))
        return fail(err, errsz, "invalid arguments (no path, or records without a buffer)");

    /* The temporary file sits beside the target so that rename() is atomic:
     * a reader sees the old file or the whole new one, never a part. */
    static const char suffix[] = ".tmp.XXXXXX";
    size_t len = strlen(path);
    char *tmp = malloc(len + sizeof suffix);
    lanes l;
    int lanes_ok = lanes_build(&l, t) == 0;
    if (tmp == NULL || !lanes_ok) {
        free(tmp);
        lanes_free(&l);
        return fail(err, errsz, "out of memory");
    }
    memcpy(tmp, path, len);
    memcpy(tmp + len, suffix, sizeof suffix);

    int rc = -1;
    FILE *f = NULL;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        fail(err, errsz, "cannot create a temporary file beside %s: %s", path, strerror(errno));
        goto out;
    }
    /* mkstemp creates 0600; a trace gets the mode a plain open() gives. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        fail(err, errsz, "cannot set the mode of %s: %s", tmp, strerror(errno));
        close(fd);
        goto out_unlink;
    }
    f = fdopen(fd, "w");
    if (f == NULL) {
        fail(err, errsz, "cannot open %s for writing: %s", tmp, strerror(errno));
        close(fd);
        goto out_unlink;
    }
    setvbuf(f, NULL, _IOFBF, 1u << 20);
    emit(f, t, &l);
    if (fflush(f) != 0 || ferror(f)) {
        fail(err, errsz, "cannot write %s: %s", tmp, strerror(errno));
        fclose(f);
        goto out_unlink;
    }
    if (fsync(fileno(f)) != 0) {
        fail(err, errsz, "cannot flush %s to disk: %s", tmp, strerror(errno));
        fclose(f);
        goto out_unlink;
    }
    if (fclose(f) != 0) {
        fail(err, errsz, "cannot close %s: %s", tmp, strerror(errno));
        goto out_unlink;
    }
    if (rename(tmp, path) != 0) {
        fail(err, errsz, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        goto out_unlink;
    }
    rc = 0;
    goto out;
out_unlink:
    unlink(tmp);
out:
    free(tmp);
    lanes_free(&l);
    return rc;
}
