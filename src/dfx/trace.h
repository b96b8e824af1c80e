/*
 * trace.h — kctx's trace data (K32) and its export as Chrome trace-event
 * JSON. Collection lives in the core (host spans) and in the device
 * programs (device records in a resident ring, kctx/rt_layout.h); this
 * module only turns collected data into a file. Pure host code: no
 * platform, no global state.
 *
 * Timestamps are nanoseconds of one monotonic clock shared by the host and
 * the device programs (on the sim: CLOCK_MONOTONIC on both sides).
 */
#ifndef KCTX_DFX_TRACE_H
#define KCTX_DFX_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include <kctx/rt_layout.h> /* kctx_rt_trace_rec */

/* A host span: one entry of kctx's host-side work. */
typedef enum kctx_dfx_span_kind {
    KCTX_DFX_INIT = 1,
    KCTX_DFX_PREPARE = 2,
    KCTX_DFX_LAUNCH = 3, /* the host enqueue of one launch */
    KCTX_DFX_CLOSE = 4,
    KCTX_DFX_FLUSH = 5
} kctx_dfx_span_kind;

typedef struct kctx_dfx_host_span {
    uint64_t t0, t1;    /* ns */
    uint64_t id;        /* callable id (prepare, launch), else 0 */
    uint64_t launch_id; /* launch identity (launch), else 0 */
    uint32_t kind;      /* kctx_dfx_span_kind */
    uint32_t status;    /* kctx_status of the entry */
    uint64_t thread;    /* a small per-thread number */
} kctx_dfx_host_span;

/* The names of a callable prepared while tracing: its id, its name and its
 * kernels' entry names by function id (so spans can say "k_vadd", not
 * "f0"). The writer trusts no byte of them: control characters are
 * escaped, a byte that is not well-formed UTF-8 is written as U+FFFD, a
 * NULL name or kernel as "" (functions may be NULL: no kernels). */
typedef struct kctx_dfx_names {
    uint64_t id;
    char *name;
    char **functions; /* [nfunctions], by function id */
    uint32_t nfunctions;
} kctx_dfx_names;

typedef struct kctx_dfx_trace {
    const char *platform;
    uint64_t context; /* context handle (the trace's process id) */
    int device;
    uint32_t core_count;
    const kctx_dfx_host_span *host;
    size_t nhost;
    uint64_t host_dropped; /* host spans not recorded: buffer full */
    const kctx_rt_trace_rec *dev;
    size_t ndev;
    uint64_t dev_dropped; /* device records not recorded: ring full */
    /* NULL: the device writes records. Else why it cannot (the platform's
     * device_trace_na): no device lanes are written, and otherData's
     * device_lanes says "not available: <why>". */
    const char *device_na;
    /* Names of the callables (may be NULL/0): otherData.callables, a
     * launch span's "callable_name" and a task record's "kernel" (a task
     * record's launch id finds its callable through the launch spans). */
    const kctx_dfx_names *names;
    size_t nnames;
} kctx_dfx_trace;

/* Write `t` to `path` as Chrome trace-event JSON ({"traceEvents": [...]},
 * complete events "ph":"X" with microsecond ts/dur). One process per context
 * (pid: the low 31 bits of the handle, as viewers read pids as 32-bit; the
 * full handle is in process_name and otherData.context); lanes (tids) for
 * each host thread, the AICPU scheduler and each AICore core, named by
 * metadata events; the drop counts are in otherData and in an instant
 * event "dropped", so they are never silent. Writes to a temporary file in
 * the same directory and renames it into place. Returns 0, or -1 with a
 * message (errno text) in err. */
int kctx_dfx_write_chrome(const char *path, const kctx_dfx_trace *t, char *err, size_t errsz);

#endif
