/*
 * cmd_demo.c — `kctx demo`: the serving scenario (demo.h, demo_run.c) and
 * its report.
 */
#include "cli.h"
#include "commands.h"
#include "demo.h"
#include "paths.h"
#include "platforms.h"
#include "suite.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    OPT_REQUESTS = 1,
    OPT_SEED,
    OPT_OUT,
    OPT_IMAGES,
    OPT_DEVICE,
    OPT_PLATFORM,
    OPT_STRATEGY,
    OPT_NO_CAPTURE,
    OPT_EXPLAIN
};

static const cli_option k_options[] = {
    {OPT_REQUESTS, "requests", 'n', "N", "serve N requests (default 200; 1 to 1000000)"},
    {OPT_SEED, "seed", 's', "S", "seed of the weights, inputs and batch mix (default 0x5eed)"},
    {OPT_OUT, "out", 'o', "DIR", "also write report.txt and requests.csv into DIR"},
    {OPT_IMAGES, "images", 0, "DIR",
     "where mlp_block_{narrow,wide}.kctx are (default: the build's)"},
    {OPT_DEVICE, "device", 'd', "N", "the device the framework makes current (default 0)"},
    {OPT_PLATFORM, "platform", 'p', "NAME",
     "platform to run on (default: $KCTX_PLATFORM, else sim)"},
    {OPT_STRATEGY, "strategy", 0, "NAME",
     "the kernel context's execution strategy: resident or host-ordered (default: "
     "$KCTX_STRATEGY, else the platform's default)"},
    {OPT_NO_CAPTURE, "no-capture", 0, NULL,
     "serve with eager launches, as on a platform without capture"},
    {OPT_EXPLAIN, "explain", 0, NULL,
     "after the report, a glossary: what each line shows, in plain words"},
    {0, NULL, 0, NULL, NULL},
};

#define DEFAULT_REQUESTS 200u
#define DEFAULT_SEED 0x5eedu

static int parse_u64(const char *s, uint64_t *out) {
    if (s == NULL || *s == '\0' || *s == '-') return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0') return -1;
    *out = v;
    return 0;
}

static const char *yes_no(int ok) { return ok ? "PASS" : "FAIL"; }

static void print_report(FILE *out, const demo_state *d) {
    const demo_bucket *b = d->b;
    const int ho = d->opt.strategy == KCTX_STRATEGY_HOST_ORDERED;
    fprintf(out,
            "kctx demo: serving an MLP block, Y = relu(X*W1 + b1)*W2 + b2 "
            "(D=%d, H=%d, O=%d, float32)\n",
            DEMO_D, DEMO_H, DEMO_O);
    fprintf(out, "  platform      %s, strategy %s (%s); framework driver %s\n", d->opt.platform,
            kctx_strategy_name(d->opt.strategy), d->opt.strategy_from, d->opt.fw->name);
    if (d->device_name[0])
        fprintf(out,
                "  device        %s device %d (%s, %u cores), made current by the framework; kctx "
                "borrows it\n",
                d->opt.platform, d->opt.device, d->device_name, d->device_cores);
    else
        fprintf(out,
                "  device        %s device %d, made current by the framework; kctx borrows it\n",
                d->opt.platform, d->opt.device);
    fprintf(out,
            "  callables     %u ids prepared (one per bucket, at its first use: %u inside that "
            "bucket's first capture) from mlp_block_narrow (rows <= 4) and mlp_block_wide",
            d->prepared, d->prepared_in_capture);
    if (d->have_res)
        fprintf(out, "; %u uploads, %" PRIu64 " device bytes%s\n", d->res.uploads,
                d->res.upload_bytes,
                ho ? " (host-ordered: prepare loads the kernels, uploads nothing)" : "");
    else
        fputc('\n', out);
    if (!d->capture) {
        fprintf(out, "  graphs        none: every request is an eager launch (%s)\n",
                d->opt.no_capture ? "--no-capture" : "the platform has no capture");
    } else {
        fprintf(out, "  graphs        %u captured, buckets", d->graphs_captured);
        for (int i = 0; i < DEMO_BUCKETS; i++) fprintf(out, " %u", b[i].rows);
        if (d->have_res)
            fprintf(out, "; all share one context (its 5 events), %u lifetime tokens held\n",
                    d->res.tokens_in_use);
        else
            fputc('\n', out);
    }
    fprintf(out,
            "  requests      %" PRIu64 " of %" PRIu64 " served (seed 0x%" PRIx64 "), %" PRIu64
            " rows; per bucket:",
            d->requests_ok, d->opt.requests, d->opt.seed, d->rows_total);
    for (int i = 0; i < DEMO_BUCKETS; i++) fprintf(out, " %u:%" PRIu64, b[i].rows, b[i].requests);
    fputc('\n', out);
    if (d->capture) {
        fprintf(out, "  replays       %" PRIu64 " (%" PRIu64 " requests, %" PRIu64 " timing)\n",
                d->replays, d->requests_done, d->replays - d->requests_done);
        fprintf(out,
                "  eager         %" PRIu64 " launches (%" PRIu64 " warm-up, %" PRIu64 " timing)\n",
                d->eager_launches, d->warmup_checked, d->eager_launches - d->warmup_checked);
    } else {
        fprintf(out, "  replays       0 (eager serving)\n");
        fprintf(out,
                "  eager         %" PRIu64 " launches (%" PRIu64 " warm-up, %" PRIu64
                " requests, %" PRIu64 " timing)\n",
                d->eager_launches, d->warmup_checked, d->requests_done,
                d->eager_launches - d->warmup_checked - d->requests_done);
    }
    if (d->checked)
        fprintf(out,
                "  errors        %s: kctx_check %s (device %s, %u refused replays, %u concurrent "
                "launches)\n",
                d->check_status == KCTX_OK && d->report.device_status == KCTX_OK &&
                        d->report.refused_replays == 0 && d->report.concurrent_launches == 0
                    ? "none"
                    : "YES",
                kctx_status_name(d->check_status), kctx_status_name(d->report.device_status),
                d->report.refused_replays, d->report.concurrent_launches);
    else
        fprintf(out, "  errors        kctx_check not reached\n");
    int verified = d->check.elements > 0 && d->check.bad == 0 && d->requests_ok == d->opt.requests;
    if (d->check.elements == 0) {
        fprintf(out, "  verification  not reached\n");
    } else {
        fprintf(out,
                "  verification  %s: %" PRIu64 " output elements (warm-up, every request, after "
                "timing) against a float64 host reference,\n"
                "                tolerance per element: the float32 worst-case rounding bound "
                "gamma_n*sum|terms|\n"
                "                (n = D+1, H+1; u = 2^-24); max error %.3g = %.4f of its bound",
                yes_no(verified), d->check.elements, d->check.max_error, d->check.max_ratio);
        if (d->check.bad) fprintf(out, "; %" PRIu64 " elements outside", d->check.bad);
        fputc('\n', out);
    }
    if (b[DEMO_BUCKETS - 1].eager_us <= 0.0) {
        fprintf(out, "  timing        not reached\n");
    } else if (d->capture) {
        fprintf(out,
                "  timing        per launch, submit to stream sync done, median of %d "
                "interleaved pairs:\n",
                DEMO_TIMING_ROUNDS);
        fprintf(out, "                bucket   replay_us    eager_us   replay/eager\n");
        for (int i = 0; i < DEMO_BUCKETS; i++)
            fprintf(out, "                %6u  %10.1f  %10.1f   %12.3f\n", b[i].rows,
                    b[i].replay_us, b[i].eager_us, b[i].replay_us / b[i].eager_us);
    } else {
        fprintf(out,
                "  timing        per eager launch, submit to stream sync done, median of %d:\n",
                DEMO_TIMING_ROUNDS);
        fprintf(out, "                bucket    eager_us\n");
        for (int i = 0; i < DEMO_BUCKETS; i++)
            fprintf(out, "                %6u  %10.1f\n", b[i].rows, b[i].eager_us);
    }
    if (d->opt.trace_path == NULL)
        fprintf(out, "  trace         off\n");
    else if (d->trace_status != KCTX_OK)
        fprintf(out, "  trace         NOT written: %s\n", d->trace_message);
    else
        fprintf(out, "  trace         %s (Chrome trace JSON; open in Perfetto), swimlane %s\n",
                d->opt.trace_path, d->trace_svg ? d->trace_svg : "not rendered");
    if (d->lifecycle_known)
        fprintf(out,
                "  lifecycle     %" PRIu64 " device lifecycle calls while kctx held the device "
                "(K4: must be 0)\n",
                d->kctx_lifecycle_calls);
    else
        fprintf(out, "  lifecycle     not counted (the %s driver has no lifecycle counters)\n",
                d->opt.fw->name);
    const char *device = !d->teardown_checked ? "not checked (the driver cannot count its objects)"
                         : d->teardown_clean  ? "back to its baseline"
                                              : "NOT back to its baseline";
    if (d->ctx_made)
        fprintf(out,
                "  teardown      graphs destroyed, kctx_close %s, kctx_destroy %s, device %s\n",
                kctx_status_name(d->close_status), kctx_status_name(d->destroy_status), device);
    else
        fprintf(out, "  teardown      no kernel context was created; device %s\n", device);
    if (d->failed)
        fprintf(out, "  result        FAIL: %s\n", d->failure);
    else
        fprintf(out, "  result        PASS\n");
}

/* --explain: what each report line shows, in plain words, then the terms
 * the report uses. One entry per report line (the key is the line's first
 * word); keep it in step with print_report. */
typedef struct glossary_entry {
    const char *key, *text;
} glossary_entry;

static const glossary_entry k_lines[] = {
    {"platform", "Where the demo ran: the platform (sim is the simulated device built with the "
                 "project), the kernel context's execution strategy and where that choice came "
                 "from, and the framework driver that plays the inference framework's part."},
    {"device", "The device the framework made current before kctx started. kctx never picks, "
               "resets or initialises a device; it borrows the one it is given."},
    {"callables", "How many callable ids were prepared (kctx_prepare: an image checked and loaded "
                  "for launching), how many of them during a graph capture, from which images; "
                  "then how many uploads to the device and how many device bytes they took. The "
                  "same image under several ids is uploaded once."},
    {"graphs", "How many graphs were captured, one per bucket, and the buckets' batch sizes. All "
               "graphs share one kernel context and its 5 events (no per-graph copies); each "
               "graph holds one lifetime token while it exists. \"none\" means eager serving."},
    {"requests", "Requests served out of those asked for, the seed that fixes the batch mix, the "
                 "total real rows, and how many requests each bucket served (bucket:count)."},
    {"replays", "Graph replays: one per request, plus the timing replays (0 with eager "
                "serving)."},
    {"eager", "Launches made directly with kctx_launch, outside any graph: one warm-up per "
              "bucket, the timing launches, and (eager serving) one per request."},
    {"errors", "What kctx_check found at the end: its status, the device's error status, replays "
               "the device refused, and launches that ran at the same time when they must not. "
               "\"none\" means all four are clean."},
    {"verification", "Every output element (warm-up, every request, after timing) compared with "
                     "a float64 host computation of the same block. An element passes when its "
                     "error is within the float32 rounding bound (see gamma_n*sum|terms| "
                     "below); the largest error is shown, also as a fraction of its bound (below "
                     "1 passes)."},
    {"timing", "Per bucket, the time of one launch from submission until the stream has "
               "finished, as a graph replay and as an eager launch, measured in alternating "
               "pairs; medians in microseconds. replay/eager below 1 means replay is cheaper. "
               "Information only: nothing is asserted about it."},
    {"trace", "The trace file kctx wrote at close (Chrome trace JSON: open it in Perfetto or "
              "chrome://tracing) and its swimlane picture (SVG), or why it was not written."},
    {"lifecycle", "Device lifecycle calls (set, reset, init, finalize of the device) made while "
                  "kctx held the device, counted by the framework driver. Rule K4 says kctx "
                  "makes none, so it must be 0."},
    {"teardown", "The end: graphs destroyed first (they hold the context), then kctx_close and "
                 "kctx_destroy, and whether the device's streams, events, modules, graphs and "
                 "memory are back to what they were before the demo."},
    {"result", "PASS when every step worked and every check held, else FAIL with the first "
               "failure."},
    {"images", "(report.txt only) The directory the MLP block images were read from."},
    {NULL, NULL},
};

static const glossary_entry k_terms[] = {
    {"kernel context", "kctx's one object per device: it borrows the framework's device, holds "
                       "the prepared callables, and launches them on whatever stream it is "
                       "handed."},
    {"strategy", "How a context runs a callable's tasks: resident (a scheduler on the device "
                 "dispatches them) or host-ordered (the host enqueues them in order)."},
    {"framework driver", "The demo's stand-in for an inference framework (PyTorch-like): it owns "
                         "the device, streams, buffers and graph capture; kctx is a guest."},
    {"callable", "A packed image (.kctx) of kernels and how to run them, prepared under a numeric "
                 "id and launched by that id."},
    {"bucket", "A fixed batch size (1, 2, 4, 8, 16, 32 rows). A request of 1 to 32 rows is "
               "served by the smallest bucket that fits, its extra rows zero; each bucket has "
               "its own callable id and graph."},
    {"graph capture, replay", "Capture records the work of a launch once into a graph; a replay "
                              "reruns the recorded work without going through the launch path "
                              "again (CUDA graphs work the same way)."},
    {"cold capture", "A bucket's callable is prepared at its first use, which is inside its "
                     "graph's capture, as a framework captures an operator the first time it "
                     "runs."},
    {"eager launch", "A kctx_launch that runs the work now, not recorded into a graph."},
    {"its 5 events", "The synchronisation events the context creates once; all graphs use these, "
                     "so capturing more graphs creates no more device objects."},
    {"lifetime token", "A reference each live graph holds on the kernel context, so the context "
                       "cannot be closed under a graph that may still replay; destroying the "
                       "graph returns it."},
    {"kctx_check", "A call that asks the context whether anything went wrong on the device."},
    {"K4, rule Kn", "The numbered rules of kctx's contract with the framework "
                    "(docs/kernel-mode.md); K4: kctx makes no device lifecycle call."},
    {"gamma_n*sum|terms|", "The worst-case float32 rounding error of a sum of n products: gamma_n "
                           "= n*u/(1-n*u), u = 2^-24 (float32's unit roundoff), times the sum of "
                           "the absolute values of the terms. n = D+1 for the first layer, H+1 "
                           "for the second (the +1 is the bias)."},
    {"D, H, O", "The MLP block's sizes: D inputs, H hidden units, O outputs per row."},
    {NULL, NULL},
};

/* TEXT word-wrapped to 80 columns, each line indented by INDENT spaces;
 * the first line starts after HEAD (padded to INDENT columns, or on a line
 * of its own when longer). */
static void print_wrapped(FILE *out, const char *head, const char *text, int indent) {
    int col = fprintf(out, "  %s", head);
    if (col + 1 > indent) {
        fputc('\n', out);
        col = 0;
    }
    fprintf(out, "%*s", indent - col, "");
    col = indent;
    for (const char *w = text; *w;) {
        size_t n = strcspn(w, " ");
        if (col > indent && col + 1 + (int)n > 80) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(w, 1, n, out);
        col += (int)n;
        w += n;
        while (*w == ' ') w++;
    }
    fputc('\n', out);
}

static void print_glossary(FILE *out) {
    fprintf(out, "\nWhat each line shows:\n");
    for (const glossary_entry *e = k_lines; e->key; e++) {
        char head[40];
        snprintf(head, sizeof head, "%s:", e->key);
        print_wrapped(out, head, e->text, 16);
    }
    fprintf(out, "\nTerms:\n");
    for (const glossary_entry *e = k_terms; e->key; e++) {
        char head[40];
        snprintf(head, sizeof head, "%s:", e->key);
        print_wrapped(out, head, e->text, 24);
    }
}

/* Create DIR (one level) if it does not exist. */
static int ensure_dir(const char *dir) {
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) {
        struct stat st;
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
        errno = ENOTDIR;
    }
    return -1;
}

static FILE *open_in(const char *dir, const char *name, char **path_out) {
    char *path = util_path_join(dir, name);
    FILE *f = path ? fopen(path, "w") : NULL;
    *path_out = path;
    return f;
}

static int run_demo(const cli_command *cmd, int argc, char **argv) {
    cli_parser p;
    cli_parser_init(&p, cmd, argc, argv);
    uint64_t requests = DEFAULT_REQUESTS, seed = DEFAULT_SEED, device = 0;
    const char *out_dir = NULL, *images = NULL, *platform_opt = NULL, *strategy_opt = NULL;
    int no_capture = 0, explain = 0;
    for (int id; (id = cli_next(&p)) != CLI_END;) {
        switch (id) {
        case CLI_HELP:
            cli_print_help(cmd, stdout);
            return CLI_EXIT_OK;
        case CLI_BAD:
            return CLI_EXIT_USAGE;
        case CLI_POSITIONAL:
            return cli_usage_error(cmd, "unexpected argument '%s'", p.value);
        case OPT_REQUESTS:
            if (parse_u64(p.value, &requests) != 0 || requests < 1 || requests > 1000000)
                return cli_usage_error(cmd, "--requests wants a number from 1 to 1000000, not '%s'",
                                       p.value);
            break;
        case OPT_SEED:
            if (parse_u64(p.value, &seed) != 0)
                return cli_usage_error(cmd, "--seed wants an unsigned number, not '%s'", p.value);
            break;
        case OPT_OUT:
            out_dir = p.value;
            break;
        case OPT_IMAGES:
            images = p.value;
            break;
        case OPT_DEVICE:
            if (parse_u64(p.value, &device) != 0 || device > 1024)
                return cli_usage_error(cmd, "--device wants a device number, not '%s'", p.value);
            break;
        case OPT_PLATFORM:
            platform_opt = p.value;
            break;
        case OPT_STRATEGY:
            if (suite_strategy_parse(p.value) == KCTX_STRATEGY_DEFAULT)
                return cli_usage_error(cmd, "--strategy wants resident or host-ordered, not '%s'",
                                       p.value);
            strategy_opt = p.value;
            break;
        case OPT_NO_CAPTURE:
            no_capture = 1;
            break;
        case OPT_EXPLAIN:
            explain = 1;
            break;
        }
    }

    /* the platform, its framework driver, and the strategy in effect */
    const char *platform = platforms_default(platform_opt);
    const tool_platform *pl = platforms_find(platform);
    char why[256];
    const fw_driver *fw = NULL;
    kctx_strategy strategy = KCTX_STRATEGY_DEFAULT;
    if (pl == NULL)
        fprintf(stderr, "kctx demo: error: unknown platform '%s' (known: %s)\n", platform,
                platforms_names());
    else if (!platforms_built(pl, why, sizeof why))
        fprintf(stderr, "kctx demo: error: platform '%s' is %s\n", platform, why);
    else if ((fw = suite_driver(platform)) == NULL)
        fprintf(stderr,
                "kctx demo: error: platform '%s' is built, but there is no framework driver for "
                "it (src/conformance/fw.h) to play the framework\n",
                platform);
    else if (suite_strategy_resolve(platform, strategy_opt, &strategy, why, sizeof why) != 0) {
        fprintf(stderr, "kctx demo: error: %s\n", why);
        fw = NULL;
    }
    if (fw == NULL) return CLI_EXIT_FAILURE;
    /* A device that does not exist is refused before anything runs: no
     * report, no trace, no --out directory. The framework owns the device,
     * so its driver answers (without making the device current when it can). */
    char dev_name[64];
    unsigned dev_cores = 0;
    fw_status dev_st = fw->device_info
                           ? fw->device_info((int)device, dev_name, sizeof dev_name, &dev_cores)
                           : fw->set_device((int)device);
    if (dev_st != FW_OK) {
        fprintf(stderr,
                "kctx demo: error: device %d does not exist on platform '%s' or cannot be used "
                "(%s: %s); `kctx platforms` lists the devices\n",
                (int)device, platform, fw_status_name(dev_st), fw->last_error());
        return CLI_EXIT_FAILURE;
    }
    const char *env_strategy = getenv("KCTX_STRATEGY");
    const char *strategy_from = strategy_opt                    ? "--strategy"
                                : env_strategy && *env_strategy ? "KCTX_STRATEGY"
                                                                : "the platform's default";

    char *tried = NULL;
    char *images_dir =
        paths_find_build_dir(images, "examples/callables", "mlp_block_wide.kctx", &tried);
    if (images_dir == NULL) {
        fprintf(stderr,
                "kctx demo: error: cannot find the MLP block images (mlp_block_wide.kctx); looked "
                "in %s; build the project or pass --images DIR\n",
                tried ? tried : "(nowhere)");
        free(tried);
        return CLI_EXIT_FAILURE;
    }

    FILE *csv = NULL, *report = NULL;
    char *csv_path = NULL, *report_path = NULL;
    if (out_dir != NULL) {
        if (ensure_dir(out_dir) != 0) {
            fprintf(stderr, "kctx demo: error: cannot use --out %s: %s\n", out_dir,
                    strerror(errno));
            free(images_dir);
            return CLI_EXIT_FAILURE;
        }
        csv = open_in(out_dir, "requests.csv", &csv_path);
        report = csv ? open_in(out_dir, "report.txt", &report_path) : NULL;
        if (csv == NULL || report == NULL) {
            fprintf(stderr, "kctx demo: error: cannot write %s: %s\n",
                    report_path ? report_path
                    : csv_path  ? csv_path
                                : out_dir,
                    strerror(errno));
            if (csv) fclose(csv);
            free(csv_path);
            free(report_path);
            free(images_dir);
            return CLI_EXIT_FAILURE;
        }
        fprintf(csv, "request,rows,bucket,max_abs_error,max_error_over_bound,within_bound\n");
    }

    demo_state *d = calloc(1, sizeof *d);
    if (d == NULL) {
        fprintf(stderr, "kctx demo: error: out of memory\n");
        free(images_dir);
        return CLI_EXIT_FAILURE;
    }
    d->opt.requests = requests;
    d->opt.seed = seed;
    d->opt.device = (int)device;
    d->opt.fw = fw;
    d->opt.platform = fw->platform;
    d->opt.strategy = strategy;
    d->opt.strategy_from = strategy_from;
    d->opt.no_capture = no_capture;
    d->opt.images_dir = images_dir;
    d->opt.requests_csv = csv;
    d->opt.progress_tty = isatty(STDERR_FILENO);
    /* K32: the trace and its swimlane go to --out DIR, else the current
     * directory */
    char *trace_json = util_path_join(out_dir ? out_dir : ".", "kctx-demo-trace.json");
    char *trace_svg = util_path_join(out_dir ? out_dir : ".", "kctx-demo-trace.svg");
    d->opt.trace_path = trace_json;

    int rc = demo_run(d) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    if (rc == CLI_EXIT_OK && trace_json && trace_svg && d->trace_status == KCTX_OK) {
        if (kctx_trace_render_file(trace_json, trace_svg) == 0)
            d->trace_svg = trace_svg;
        else
            rc = CLI_EXIT_FAILURE;
    } else if (rc == CLI_EXIT_OK && d->trace_status != KCTX_OK) {
        rc = CLI_EXIT_FAILURE;
    }
    print_report(stdout, d);
    if (explain) print_glossary(stdout);
    if (report != NULL) {
        print_report(report, d);
        fprintf(report, "  images        %s\n", images_dir);
        if (explain) print_glossary(report);
    }
    if (csv != NULL && fclose(csv) != 0) {
        fprintf(stderr, "kctx demo: error: writing %s: %s\n", csv_path, strerror(errno));
        rc = CLI_EXIT_FAILURE;
    }
    if (report != NULL && fclose(report) != 0) {
        fprintf(stderr, "kctx demo: error: writing %s: %s\n", report_path, strerror(errno));
        rc = CLI_EXIT_FAILURE;
    }
    if (rc != CLI_EXIT_OK) fprintf(stderr, "kctx demo: FAILED: %s\n", d->failure);
    free(csv_path);
    free(report_path);
    free(images_dir);
    free(trace_json);
    free(trace_svg);
    free(d);
    return rc;
}

const cli_command kctx_cmd_demo = {
    "demo",
    "Run a serving scenario: bucket graphs sharing one kernel context",
    "[--requests N] [--seed S] [--out DIR] [--images DIR] [--device N]\n"
    "       [--platform NAME] [--strategy resident|host-ordered] [--no-capture] [--explain]",
    "The framework side (the demo's own code, through the platform's framework\n"
    "driver, the conformance suite's fw.h) makes a device current, creates its\n"
    "streams and buffers and owns capture; kctx borrows the device with one kernel\n"
    "context, under the execution strategy asked for. The demo prepares an MLP\n"
    "block (blocked matmul, bias, ReLU, blocked matmul, bias) once per batch-size\n"
    "bucket (1, 2, 4, 8, 16, 32), verifies an eager launch of each, captures one\n"
    "graph per bucket, then serves a seeded stream of requests of mixed batch\n"
    "sizes: pick the bucket, copy inputs in, replay its graph, copy outputs out,\n"
    "and check every output element against a float64 host reference within the\n"
    "float32 rounding bound. Where the platform has no capture (or with\n"
    "--no-capture) every request is an eager launch instead. It times replay\n"
    "against an eager launch of the same work side by side, checks the context\n"
    "(kctx_check), tears everything down (graphs, kctx_close, kctx_destroy) and\n"
    "proves the device is back to its baseline and that kctx made no device\n"
    "lifecycle call. The report (its second line names the platform and the\n"
    "strategy in effect) goes to stdout, progress to stderr; --explain adds a\n"
    "glossary after it: what each line shows, and the terms it uses, in plain\n"
    "words. Exit status 1 on any failure.\n",
    k_options,
    run_demo,
};
