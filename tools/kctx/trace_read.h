/*
 * trace_read.h — reads a Chrome trace-event JSON file as kctx writes it
 * (src/dfx/trace_json.c, docs/tracing.md) back into lanes and spans, for
 * the `kctx trace` tool and its tests (tests/dfx compiles it from here).
 * Tool-side only: not part of libkctx, so it lives with the tool.
 *
 * The JSON is decoded by Jansson (Debian libjansson-dev), a complete and
 * well-kept parser, one value at a time (each event, otherData), so memory
 * grows with the spans kept, not with the size of a whole-file DOM; the
 * reader itself walks only the outer object and the event array, and
 * checks the trace's shape. Nothing in this header exposes Jansson.
 *
 * What is read: the "traceEvents" array (or a bare top-level array, the
 * other form Chrome accepts); complete events ("ph":"X") become spans;
 * thread_name / thread_sort_index / process_name metadata name and order
 * the lanes; the "dropped" instant event and otherData carry the drop
 * counts; otherData.callables names the callables (id, image name, kernel
 * entry names by function id). Other events are counted in `ignored` and
 * otherwise skipped. Any
 * syntax error (with its line and column) or shape error (a missing or
 * mistyped field the reader needs, a negative duration, a duplicate key)
 * rejects the whole file with a message naming the event.
 */
#ifndef KCTX_DFX_TRACE_READ_H
#define KCTX_DFX_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

/* What a lane is, from its thread_name ("host thread N", "AICPU",
 * "core N"; anything else is OTHER). */
typedef enum kctx_dfx_lane_kind {
    KCTX_DFX_LANE_HOST = 0,
    KCTX_DFX_LANE_AICPU = 1,
    KCTX_DFX_LANE_CORE = 2,
    KCTX_DFX_LANE_OTHER = 3
} kctx_dfx_lane_kind;

typedef struct kctx_dfx_lane {
    int64_t pid, tid;
    char *name;         /* thread_name, or "pid P tid T" when the file names none */
    int64_t sort_index; /* thread_sort_index, else the tid */
    kctx_dfx_lane_kind kind;
    uint64_t number; /* host thread number or core index (HOST, CORE) */
} kctx_dfx_lane;

/* What a span is, from its category and name. */
typedef enum kctx_dfx_span_class {
    KCTX_DFX_SPAN_HOST = 0,    /* cat "host": host_kind says which */
    KCTX_DFX_SPAN_SCHED = 1,   /* "scheduler" */
    KCTX_DFX_SPAN_TASK = 2,    /* "task ...": task, func_id, block */
    KCTX_DFX_SPAN_REFUSED = 3, /* "refused replay" */
    KCTX_DFX_SPAN_OTHER = 4
} kctx_dfx_span_class;

/* Absent args read as 0 with the has_* flag clear. */
typedef struct kctx_dfx_span {
    char *name;
    kctx_dfx_span_class cls;
    uint32_t host_kind; /* kctx_dfx_span_kind (trace.h) for HOST spans, else 0 */
    size_t lane;        /* index into kctx_dfx_trace_file.lanes */
    uint64_t ts, dur;   /* ns, relative to the file's base (otherData.base_ns) */
    int has_callable, has_launch, has_status, has_task;
    uint64_t callable, launch;
    uint32_t status;
    uint32_t task, func_id, block;
    char *callable_name; /* args.callable_name, else NULL */
    char *kernel;        /* args.kernel (task spans), else NULL */
    char *status_name;   /* args.status_name ("KCTX_BUSY"), else NULL */
} kctx_dfx_span;

/* One entry of otherData.callables: a callable prepared while tracing,
 * with its image name and its kernels' entry names by function id. The
 * strings are the file's, decoded (valid UTF-8 with no NUL, as Jansson
 * guarantees) but otherwise untrusted: any length, any character (quotes,
 * '<', control characters); a view escapes them for its medium. */
typedef struct kctx_dfx_callable_names {
    uint64_t id;
    char *name;
    char **kernels; /* [nkernels], by function id */
    uint32_t nkernels;
} kctx_dfx_callable_names;

typedef struct kctx_dfx_trace_file {
    char *process_name; /* NULL when the file has none */
    kctx_dfx_lane *lanes;
    size_t nlanes;
    kctx_dfx_span *spans; /* in file order */
    size_t nspans;
    size_t ignored; /* events other than spans, metadata and "dropped": skipped */
    int has_drops;  /* the drop counts were found (otherData or "dropped") */
    uint64_t host_dropped, dev_dropped;
    int has_base;
    uint64_t base_ns;
    uint32_t core_count; /* otherData.core_count, else the number of core lanes */
    char *device_na;     /* otherData.device_lanes when the device wrote no records, else NULL */
    /* otherData.callables, sorted by id (ids are distinct: a file listing
     * one twice is rejected); NULL/0 when the file has none (an older
     * trace, or names the writer could not allocate). */
    kctx_dfx_callable_names *callables;
    size_t ncallables;
} kctx_dfx_trace_file;

/* Parse `len` bytes of JSON text into `out`. Returns 0, or -1 with a
 * message in err (what is wrong and where: line and column for a syntax
 * error, the event's index for a shape error); `out` is then empty and
 * needs no free. */
int kctx_dfx_trace_parse(const char *text, size_t len, kctx_dfx_trace_file *out, char *err,
                         size_t errsz);

/* Read and parse the file at `path` ("-" reads stdin). Same contract. */
int kctx_dfx_trace_read(const char *path, kctx_dfx_trace_file *out, char *err, size_t errsz);

/* The names of callable `id` from otherData.callables, else NULL. */
const kctx_dfx_callable_names *kctx_dfx_trace_callable(const kctx_dfx_trace_file *f, uint64_t id);

/* Release what parse/read allocated; the struct is left empty. */
void kctx_dfx_trace_file_free(kctx_dfx_trace_file *f);

#endif
