/*
 * demo.h — `kctx demo`: a serving scenario, the way an inference server
 * uses kernel mode.
 *
 * Two sides, kept apart as they would be in a real server:
 *  - the FRAMEWORK (this code, through the platform's framework driver: the
 *    conformance suite's driver table, src/conformance/fw.h, which calls
 *    the platform's own runtime API): it makes the device current, creates
 *    its streams, allocates the weights and per-bucket buffers, owns capture
 *    and replays graphs;
 *  - KCTX (kctx.h): one kernel context borrowing the framework's device,
 *    with the execution strategy asked for; it prepares the MLP block's
 *    callables once per batch-size bucket and launches onto whichever
 *    stream the framework hands it.
 *
 * demo_run() performs the whole scenario (set up, prepare, warm up, capture
 * one graph per bucket, serve the requests, time replay against eager
 * launch, check, tear down) and fills a demo_state that cmd_demo.c prints
 * as the report. Where the platform has no capture (or with --no-capture)
 * it serves every request with an eager launch instead of a replay, and
 * times eager launches only. It stops at the first failure (recorded in
 * `failure`) and always tears down what exists.
 */
#ifndef KCTX_TOOL_DEMO_H
#define KCTX_TOOL_DEMO_H

#include "demo_model.h"
#include "fw.h"

#include <kctx/kctx.h>

#include <stdint.h>
#include <stdio.h>

#define DEMO_BUCKETS 6
#define DEMO_TIMING_ROUNDS 15 /* interleaved replay/eager pairs per bucket */
#define DEMO_D 64
#define DEMO_H 128
#define DEMO_O 64

typedef struct demo_options {
    uint64_t requests;
    uint64_t seed;
    int device;
    const fw_driver *fw;       /* the framework side: the platform's driver */
    const char *platform;      /* the kctx platform (fw->platform) */
    kctx_strategy strategy;    /* the kernel context's strategy (RESIDENT or HOST_ORDERED) */
    const char *strategy_from; /* "--strategy", "KCTX_STRATEGY", "the platform's default" */
    int no_capture;            /* serve eagerly even where the platform has capture */
    const char *images_dir;    /* where mlp_block_{narrow,wide}.kctx are */
    FILE *requests_csv;        /* per-request lines (--out), or NULL */
    int progress_tty;          /* stderr is a terminal: one rewritten line */
    const char *trace_path;    /* where kctx writes the trace at close (K32) */
} demo_options;

typedef struct demo_bucket {
    uint32_t rows;     /* the bucket's batch size */
    uint64_t id;       /* its callable id */
    int is_prepared;   /* its id is prepared (lazily, at first use) */
    const char *image; /* the callable it was prepared from */
    fw_devptr x, h, y; /* framework buffers: inputs, hidden scratch, outputs */
    fw_graph graph;
    fw_exec exec;
    float *stage_x, *out_y;     /* host staging: rows x D inputs, rows x O outputs */
    uint64_t requests;          /* served through this bucket */
    uint64_t rows_served;       /* real (unpadded) rows */
    double replay_us, eager_us; /* medians of DEMO_TIMING_ROUNDS (replay_us 0: eager serving) */
} demo_bucket;

typedef struct demo_state {
    demo_options opt;
    char device_name[64]; /* the driver's device information, "" when it has none */
    unsigned device_cores;
    int capture; /* graphs are captured and replayed (else eager serving) */
    demo_model model;
    demo_bucket b[DEMO_BUCKETS];
    fw_stream capture_stream, serve_stream;
    fw_devptr W1, b1, W2, b2;
    kctx_context ctx;
    kctx_status trace_status; /* the teardown slot after close: a trace write failure shows here */
    char trace_message[256];
    const char *trace_svg; /* the rendered swimlane, once written */
    int ctx_created;       /* a live handle (cleared by a successful destroy) */
    int ctx_made;          /* a context was created at all */

    /* the callables' images, read at setup; each bucket's id is prepared
     * lazily at its first use — inside its first capture when the demo
     * captures (cold capture, K16), as a framework would */
    void *image_bytes[2];
    size_t image_sizes[2];
    unsigned prepared_in_capture; /* of `prepared`: inside an active capture */

    /* what happened */
    unsigned prepared;      /* ids prepared */
    kctx_resource_info res; /* after capture: uploads, tokens in use */
    int have_res;
    unsigned graphs_captured;
    size_t graph_nodes[DEMO_BUCKETS];
    uint64_t replays;        /* graph launches (requests and timing) */
    uint64_t eager_launches; /* kctx_launch outside capture */
    uint64_t requests_done, requests_ok, rows_total;
    demo_check check;         /* every verified output element */
    uint64_t warmup_checked;  /* buckets whose eager warm-up output was verified */
    kctx_status check_status; /* kctx_check at the end */
    kctx_check_report report;
    int checked;
    kctx_strategy strategy_in_effect; /* the context's, once init returned */
    uint64_t kctx_lifecycle_calls;    /* K4: lifecycle calls made while kctx ran */
    int lifecycle_known;
    kctx_status close_status, destroy_status;
    int teardown_clean;   /* live objects and memory back to the baseline */
    int teardown_checked; /* the driver can count them */
    char teardown_detail[256];
    double serve_seconds;

    int failed;
    char failure[640]; /* the first failure */
} demo_state;

/* Run the scenario. Returns 0 when everything worked and verified. */
int demo_run(demo_state *d);

#endif /* KCTX_TOOL_DEMO_H */
