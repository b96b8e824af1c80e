/*
 * test_trace_json.c — the Chrome trace exporter (kctx_dfx_write_chrome,
 * K32) and its reader (trace_read.h), on synthetic traces.
 *
 *   test_dfx_export DIR
 *
 * Writes its files into DIR (created if missing) and leaves the exported
 * ones there: the ctest test dfx_export_json_valid then checks them with
 * Python's json module, a parser independent of the one used here.
 */
#include "check.h"
#include "synth.h"
#include "trace_read.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *g_dir;

static char *path_in(const char *name) {
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", g_dir, name);
    return p;
}

/* The file as a string (NULL when unreadable, reported); ktc_read_file. */
static char *slurp(const char *path, size_t *len) {
    char why[512];
    char *b = ktc_read_file(path, len, why, sizeof why);
    if (b == NULL) fprintf(stderr, "%s\n", why);
    return b;
}

/* Temporary files the exporter may have left in `dir`. */
static int leftovers(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strstr(e->d_name, ".tmp.") != NULL) n++;
    closedir(d);
    return n;
}

static const kctx_dfx_lane *lane_of(const kctx_dfx_trace_file *f, const kctx_dfx_span *s) {
    return &f->lanes[s->lane];
}

static const kctx_dfx_span *find_span(const kctx_dfx_trace_file *f, const char *name, size_t nth) {
    for (size_t i = 0; i < f->nspans; i++)
        if (strcmp(f->spans[i].name, name) == 0 && nth-- == 0) return &f->spans[i];
    return NULL;
}

static size_t count_class(const kctx_dfx_trace_file *f, kctx_dfx_span_class c) {
    size_t n = 0;
    for (size_t i = 0; i < f->nspans; i++) n += f->spans[i].cls == c;
    return n;
}

/* ---- the known trace ------------------------------------------------------- */

static void test_known_trace_round_trips(void) {
    synth s;
    synth_known(&s);
    char err[256] = "x";
    const char *path = path_in("known.json");
    REQUIRE(kctx_dfx_write_chrome(path, &s.t, err, sizeof err) == 0);
    CHECK(err[0] == '\0');
    kctx_dfx_trace_file f;
    int rc = kctx_dfx_trace_read(path, &f, err, sizeof err);
    CHECK(rc == 0, "read: %s", err);
    if (rc != 0) return;

    CHECK(f.process_name &&
          strcmp(f.process_name, "kctx sim device 0 context 0x4b43000001000002") == 0);
    /* Lanes in order: host threads, AICPU, cores. */
    static const char *const want[] = {"host thread 1", "host thread 7", "AICPU", "core 0",
                                       "core 1",        "core 2",        "core 3"};
    CHECK(f.nlanes == 7);
    for (size_t i = 0; i < f.nlanes && i < 7; i++)
        CHECK(strcmp(f.lanes[i].name, want[i]) == 0, "lane %zu is %s", i, f.lanes[i].name);
    CHECK(f.lanes[0].kind == KCTX_DFX_LANE_HOST && f.lanes[0].number == 1);
    CHECK(f.lanes[2].kind == KCTX_DFX_LANE_AICPU);
    CHECK(f.lanes[6].kind == KCTX_DFX_LANE_CORE && f.lanes[6].number == 3);
    CHECK(f.core_count == SYNTH_CORES);

    CHECK(f.nspans == s.t.nhost + s.t.ndev);
    CHECK(count_class(&f, KCTX_DFX_SPAN_HOST) == 8);
    CHECK(count_class(&f, KCTX_DFX_SPAN_SCHED) == 3);
    CHECK(count_class(&f, KCTX_DFX_SPAN_TASK) == 10);
    CHECK(count_class(&f, KCTX_DFX_SPAN_REFUSED) == 1);
    CHECK(count_class(&f, KCTX_DFX_SPAN_OTHER) == 0);

    /* Drop counts: present (otherData and the "dropped" event). */
    CHECK(f.has_drops && f.host_dropped == 2 && f.dev_dropped == 5);
    CHECK(f.has_base && f.base_ns == SYNTH_BASE);

    /* Times relative to the earliest record, at ns precision. */
    const kctx_dfx_span *init = find_span(&f, "init", 0);
    REQUIRE(init != NULL);
    CHECK(init->ts == 0 && init->dur == 50000);
    CHECK(init->has_status && init->status == 0 && !init->has_callable && !init->has_launch);
    const kctx_dfx_span *l1 = find_span(&f, "launch", 0);
    REQUIRE(l1 != NULL);
    CHECK(l1->ts == 100000 && l1->dur == 12345);
    CHECK(l1->has_callable && l1->callable == 7 && l1->has_launch && l1->launch == 1);
    CHECK(strcmp(lane_of(&f, l1)->name, "host thread 1") == 0);
    const kctx_dfx_span *l3 = find_span(&f, "launch", 2);
    REQUIRE(l3 != NULL);
    CHECK(l3->callable == 9 && l3->launch == 3 && l3->status == 4);
    CHECK(strcmp(lane_of(&f, l3)->name, "host thread 7") == 0);
    const kctx_dfx_span *p9 = find_span(&f, "prepare", 1);
    REQUIRE(p9 != NULL);
    CHECK(p9->has_callable && p9->callable == 9 && !p9->has_launch);

    const kctx_dfx_span *sched = find_span(&f, "scheduler", 0);
    REQUIRE(sched != NULL);
    CHECK(lane_of(&f, sched)->kind == KCTX_DFX_LANE_AICPU && sched->launch == 1 &&
          sched->ts == 101000);
    const kctx_dfx_span *task = find_span(&f, "task 1 f1/b0", 1); /* the replay's */
    REQUIRE(task != NULL);
    CHECK(task->cls == KCTX_DFX_SPAN_TASK && task->task == 1 && task->func_id == 1 &&
          task->block == 0);
    CHECK(task->launch == 1 && task->ts == 420000 && task->dur == 19000);
    CHECK(strcmp(lane_of(&f, task)->name, "core 2") == 0);
    const kctx_dfx_span *b3 = find_span(&f, "task 0 f2/b3", 0);
    REQUIRE(b3 != NULL);
    CHECK(strcmp(lane_of(&f, b3)->name, "core 3") == 0 && b3->dur == 13000);
    const kctx_dfx_span *refused = find_span(&f, "refused replay", 0);
    REQUIRE(refused != NULL);
    CHECK(refused->launch == 2 && lane_of(&f, refused)->kind == KCTX_DFX_LANE_AICPU &&
          refused->dur == 500);
    kctx_dfx_trace_file_free(&f);

    /* The raw text: the unit, the decimal microseconds, the drop event. */
    char *text = slurp(path, NULL);
    REQUIRE(text != NULL);
    CHECK(strstr(text, "\"displayTimeUnit\":\"ns\"") != NULL);
    CHECK(strstr(text, "\"ts\":100.000,\"dur\":12.345") != NULL);
    CHECK(strstr(text, "{\"name\":\"dropped\",\"cat\":\"kctx\",\"ph\":\"i\"") != NULL);
    CHECK(strstr(text, "\"args\":{\"host_dropped\":2,\"dev_dropped\":5}") != NULL);
    CHECK(strstr(text, "\"status_name\":\"KCTX_BUSY\"") != NULL);
    free(text);
    CHECK(leftovers(g_dir) == 0);
}

static void test_same_input_same_bytes(void) {
    synth s;
    synth_known(&s);
    char err[256];
    REQUIRE(kctx_dfx_write_chrome(path_in("det_a.json"), &s.t, err, sizeof err) == 0);
    REQUIRE(kctx_dfx_write_chrome(path_in("det_b.json"), &s.t, err, sizeof err) == 0);
    size_t na, nb;
    char *a = slurp(path_in("det_a.json"), &na), *b = slurp(path_in("det_b.json"), &nb);
    CHECK(a && b && na == nb && memcmp(a, b, na) == 0);
    free(a);
    free(b);
    unlink(path_in("det_b.json"));
}

static void test_empty_trace_is_valid(void) {
    kctx_dfx_trace t = {.platform = "sim", .context = 1, .core_count = 2};
    char err[256];
    REQUIRE(kctx_dfx_write_chrome(path_in("empty.json"), &t, err, sizeof err) == 0);
    kctx_dfx_trace_file f;
    REQUIRE(kctx_dfx_trace_read(path_in("empty.json"), &f, err, sizeof err) == 0);
    CHECK(f.nspans == 0 && f.nlanes == 3); /* AICPU, core 0, core 1: named even when idle */
    CHECK(f.has_drops && f.host_dropped == 0 && f.dev_dropped == 0);
    CHECK(f.has_base && f.base_ns == 0);
    kctx_dfx_trace_file_free(&f);
}

/* A platform whose device writes no records (OpenCL, K32): the trace says
 * why in otherData.device_lanes and names no device lane, instead of empty
 * AICPU and core lanes. */
static void test_device_lanes_not_available_are_said_not_drawn(void) {
    kctx_dfx_host_span h = {.t0 = 100, .t1 = 200, .id = 1, .kind = KCTX_DFX_LAUNCH, .thread = 1};
    kctx_dfx_trace t = {.platform = "opencl",
                        .context = 1,
                        .core_count = 2,
                        .host = &h,
                        .nhost = 1,
                        .device_na = "no device \"clock\""};
    char err[256];
    REQUIRE(kctx_dfx_write_chrome(path_in("device_na.json"), &t, err, sizeof err) == 0);
    size_t len = 0;
    char *b = slurp(path_in("device_na.json"), &len);
    REQUIRE(b != NULL);
    CHECK(strstr(b, "\"device_lanes\":\"not available: no device \\\"clock\\\"\"") != NULL);
    CHECK(strstr(b, "\"AICPU\"") == NULL && strstr(b, "\"core 0\"") == NULL);
    free(b);
    kctx_dfx_trace_file f;
    REQUIRE(kctx_dfx_trace_read(path_in("device_na.json"), &f, err, sizeof err) == 0);
    CHECK(f.nspans == 1 && f.nlanes == 1); /* the host thread only */
    kctx_dfx_trace_file_free(&f);
    /* the same trace with a device that writes: its lanes are named */
    t.device_na = NULL;
    REQUIRE(kctx_dfx_write_chrome(path_in("device_na.json"), &t, err, sizeof err) == 0);
    b = slurp(path_in("device_na.json"), &len);
    REQUIRE(b != NULL);
    CHECK(strstr(b, "device_lanes") == NULL && strstr(b, "\"AICPU\"") != NULL);
    free(b);
}

/* Identifiers above 2^53 are strings in the file and exact after reading. */
static void test_large_ids_are_exact(void) {
    kctx_dfx_host_span h = {10, 20, UINT64_MAX, (UINT64_C(1) << 53) + 1, KCTX_DFX_LAUNCH, 0, 3};
    kctx_rt_trace_rec d = {15, 18, (UINT64_C(1) << 53) + 1, KCTX_RT_TRACE_SCHED, UINT32_MAX, 0, 0,
                           0,  0};
    kctx_dfx_trace t = {.platform = "sim",
                        .context = UINT64_MAX,
                        .core_count = 1,
                        .host = &h,
                        .nhost = 1,
                        .dev = &d,
                        .ndev = 1,
                        .dev_dropped = UINT64_MAX};
    char err[256];
    REQUIRE(kctx_dfx_write_chrome(path_in("bigids.json"), &t, err, sizeof err) == 0);
    kctx_dfx_trace_file f;
    REQUIRE(kctx_dfx_trace_read(path_in("bigids.json"), &f, err, sizeof err) == 0);
    const kctx_dfx_span *l = find_span(&f, "launch", 0), *s = find_span(&f, "scheduler", 0);
    REQUIRE(l != NULL && s != NULL);
    CHECK(l->callable == UINT64_MAX && l->launch == (UINT64_C(1) << 53) + 1);
    CHECK(s->launch == (UINT64_C(1) << 53) + 1 && s->ts == 5 && s->dur == 3);
    CHECK(f.dev_dropped == UINT64_MAX && f.base_ns == 10);
    kctx_dfx_trace_file_free(&f);
}

/* Odd input is still written honestly: unknown kinds get a generic name,
 * a core beyond core_count its own lane, t1 < t0 a zero duration, a
 * platform name with quotes stays valid JSON. */
static void test_odd_records(void) {
    kctx_dfx_host_span h[] = {{100, 200, 0, 0, 9, 0, 1}, {150, 140, 0, 0, KCTX_DFX_INIT, 99, 1}};
    kctx_rt_trace_rec d[] = {{120, 130, 1, 7, UINT32_MAX, 0, 0, 0, 0},
                             {120, 130, 1, KCTX_RT_TRACE_TASK, 9, 0, 0, 0, 0},
                             {120, 130, 1, KCTX_RT_TRACE_TASK, 5, 0, 0, 0, 0}};
    kctx_dfx_trace t = {.platform = "s\"i\\m\n",
                        .context = 2,
                        .core_count = 2,
                        .host = h,
                        .nhost = 2,
                        .dev = d,
                        .ndev = 3};
    char err[256];
    REQUIRE(kctx_dfx_write_chrome(path_in("odd.json"), &t, err, sizeof err) == 0);
    kctx_dfx_trace_file f;
    int rc = kctx_dfx_trace_read(path_in("odd.json"), &f, err, sizeof err);
    CHECK(rc == 0, "read: %s", err);
    if (rc != 0) return;
    CHECK(find_span(&f, "host span 9", 0) != NULL);
    CHECK(find_span(&f, "device record 7", 0) != NULL);
    const kctx_dfx_span *init = find_span(&f, "init", 0);
    CHECK(init && init->dur == 0 && init->status == 99);
    static const char *const want[] = {"host thread 1", "AICPU",  "core 0",
                                       "core 1",        "core 5", "core 9"};
    CHECK(f.nlanes == 6);
    for (size_t i = 0; i < f.nlanes && i < 6; i++)
        CHECK(strcmp(f.lanes[i].name, want[i]) == 0, "lane %zu is %s", i, f.lanes[i].name);
    CHECK(f.process_name && strcmp(f.process_name, "kctx s\"i\\m\n device 0 context 0x2") == 0);
    kctx_dfx_trace_file_free(&f);
    char *text = slurp(path_in("odd.json"), NULL);
    CHECK(text && strstr(text, "KCTX_UNKNOWN") != NULL);
    free(text);
}

static void test_large_trace(void) {
    kctx_dfx_trace t;
    REQUIRE(synth_large(&t, 200, 64, 8) == 0);
    char err[256];
    CHECK(kctx_dfx_write_chrome(path_in("large.json"), &t, err, sizeof err) == 0);
    kctx_dfx_trace_file f;
    if (CHECK(kctx_dfx_trace_read(path_in("large.json"), &f, err, sizeof err) == 0)) {
        CHECK(f.nspans == t.nhost + t.ndev && f.nlanes == 1 + 1 + 8);
        kctx_dfx_trace_file_free(&f);
    }
    synth_free(&t);
}

/* ---- failures ------------------------------------------------------------- */

static void test_unwritable_path_fails_with_a_message(void) {
    synth s;
    synth_known(&s);
    char err[256];

    /* A directory that does not exist. */
    err[0] = '\0';
    CHECK(kctx_dfx_write_chrome(path_in("no/such/dir/t.json"), &s.t, err, sizeof err) == -1);
    CHECK(strstr(err, "no/such/dir/t.json") != NULL && strstr(err, strerror(ENOENT)) != NULL,
          "err: %s", err);

    /* The parent is a regular file. */
    err[0] = '\0';
    CHECK(kctx_dfx_write_chrome(path_in("known.json/t.json"), &s.t, err, sizeof err) == -1);
    CHECK(strstr(err, strerror(ENOTDIR)) != NULL, "err: %s", err);

    /* The target is a directory: the temporary file is written, the rename
     * fails, and the temporary file must not stay behind. */
    const char *dir = path_in("a_directory");
    mkdir(dir, 0777);
    char inner[4200];
    snprintf(inner, sizeof inner, "%s/keep", dir);
    FILE *keep = fopen(inner, "w");
    if (keep) fclose(keep);
    err[0] = '\0';
    CHECK(kctx_dfx_write_chrome(dir, &s.t, err, sizeof err) == -1);
    CHECK(strstr(err, "rename") != NULL, "err: %s", err);
    CHECK(leftovers(g_dir) == 0);

    /* Bad arguments. */
    err[0] = '\0';
    CHECK(kctx_dfx_write_chrome(NULL, &s.t, err, sizeof err) == -1 && err[0] != '\0');
    CHECK(kctx_dfx_write_chrome(path_in("x.json"), NULL, err, sizeof err) == -1);
    kctx_dfx_trace bad = s.t;
    bad.host = NULL;
    CHECK(kctx_dfx_write_chrome(path_in("x.json"), &bad, err, sizeof err) == -1);
    CHECK(access(path_in("x.json"), F_OK) != 0);
    /* A NULL or empty message buffer is allowed. */
    CHECK(kctx_dfx_write_chrome(path_in("no/such/dir/t.json"), &s.t, NULL, 0) == -1);
}

static void test_existing_file_is_replaced_whole(void) {
    const char *path = path_in("replace.json");
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("not a trace, and much longer than nothing at all ......................", f);
    fclose(f);
    kctx_dfx_trace t = {.platform = "sim", .context = 3, .core_count = 1};
    char err[256];
    REQUIRE(kctx_dfx_write_chrome(path, &t, err, sizeof err) == 0);
    kctx_dfx_trace_file tf;
    CHECK(kctx_dfx_trace_read(path, &tf, err, sizeof err) == 0);
    kctx_dfx_trace_file_free(&tf);
    struct stat st;
    mode_t mask = umask(0);
    umask(mask);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask)); /* not mkstemp's 0600 */
    unlink(path);
}

/* ---- the reader rejects what is not a kctx trace ------------------------- */

static void rejects(const char *text, const char *want) {
    kctx_dfx_trace_file f;
    char err[256] = "";
    int rc = kctx_dfx_trace_parse(text, strlen(text), &f, err, sizeof err);
    CHECK(rc == -1 && strstr(err, want) != NULL, "input %s: rc %d, err '%s' (wanted '%s')", text,
          rc, err, want);
    if (rc == 0) kctx_dfx_trace_file_free(&f);
}

static void test_reader_rejects_malformed_files(void) {
    rejects("", "not valid JSON");
    rejects("{\"traceEvents\":[", "not valid JSON: line 1");
    rejects("{\"a\":1}", "no \"traceEvents\" array");
    rejects("42", "not a Chrome trace: expected an object or an array");
    rejects("{\"traceEvents\":{}}", "\"traceEvents\" is not an array");
    rejects("{\"traceEvents\":[]} x", "unexpected data after the trace");
    rejects("{\"traceEvents\":[{\"ph\":\"M\"}, ]}", "not valid JSON: line 1, column 29");
    rejects("{\"traceEvents\":[]\n,\"otherData\":{\"a\":1,\"a\":2}}", "not valid JSON: line 2");
    rejects("{\"otherData\":{},\"otherData\":{},\"traceEvents\":[]}", "duplicate \"otherData\"");
    rejects("{\"traceEvents\":[] \"x\":1}", "expected ',' or '}'");
    rejects("{7:[]}", "not valid JSON");
    rejects("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"x\",\"ts\":1.8e16,\"dur\":1.8e16}]}",
            "ends beyond 2^64 ns");
    rejects("{\"traceEvents\":[1]}", "event 0 is not an object");
    rejects("{\"traceEvents\":[{\"name\":\"x\"}]}", "event 0: \"ph\"");
    rejects("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"x\",\"dur\":1,\"pid\":1,\"tid\":1}]}",
            "event 0: \"ts\"");
    rejects(
        "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"x\",\"ts\":1,\"dur\":-1,\"pid\":1,\"tid\":1}]}",
        "\"dur\"");
    rejects("{\"traceEvents\":[{\"ph\":\"X\",\"name\":7,\"ts\":1,\"dur\":1}]}", "\"name\"");
    rejects("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"x\",\"ts\":1,\"dur\":1,\"tid\":\"a\"}]}",
            "\"tid\"");
    rejects("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"task "
            "1\",\"ts\":1,\"dur\":1,\"args\":{\"task\":1}}]}",
            "task span without");
    rejects("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"x\",\"ts\":1,\"dur\":1,\"args\":{"
            "\"launch\":\"12a\"}}]}",
            "args.launch");
    rejects("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"x\",\"ts\":1,\"dur\":1,\"args\":{\"task\":"
            "4294967296}}]}",
            "args.task");
    rejects("{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":"
            "{}}]}",
            "thread_name without");
    rejects("{\"traceEvents\":[{\"ph\":\"i\",\"name\":\"dropped\",\"ts\":0,\"args\":{\"host_"
            "dropped\":1}}]}",
            "\"dropped\" without");
    rejects("{\"traceEvents\":[],\"traceEvents\":[]}", "duplicate");
    rejects("{\"traceEvents\":[],\"otherData\":{\"host_dropped\":1}}",
            "only one of the drop counts");
}

static void test_reader_accepts_other_chrome_shapes(void) {
    /* A bare array; unnamed lanes; other phases counted and skipped. */
    const char *text = "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1.5,\"dur\":2,\"pid\":3,\"tid\":4},"
                       "{\"ph\":\"B\",\"name\":\"b\",\"ts\":1,\"pid\":3,\"tid\":4},"
                       "{\"ph\":\"C\",\"name\":\"c\",\"ts\":1,\"pid\":3,\"args\":{\"v\":1}}]";
    kctx_dfx_trace_file f;
    char err[256];
    int rc = kctx_dfx_trace_parse(text, strlen(text), &f, err, sizeof err);
    CHECK(rc == 0, "err: %s", err);
    if (rc != 0) return;
    CHECK(f.nspans == 1 && f.spans[0].ts == 1500 && f.spans[0].dur == 2000 &&
          f.spans[0].cls == KCTX_DFX_SPAN_OTHER);
    CHECK(f.nlanes == 1 && strcmp(f.lanes[0].name, "pid 3 tid 4") == 0 &&
          f.lanes[0].kind == KCTX_DFX_LANE_OTHER);
    CHECK(f.ignored == 2 && !f.has_drops && f.process_name == NULL);
    kctx_dfx_trace_file_free(&f);

    kctx_dfx_trace_file g;
    CHECK(kctx_dfx_trace_read(path_in("does-not-exist.json"), &g, err, sizeof err) == -1);
    CHECK(strstr(err, strerror(ENOENT)) != NULL);
}

/* ---- the callables' names (otherData.callables) ---------------------------- */

/* K32: a trace names its callables (id -> image name, kernels by function
 * id); the reader gives the table back, sorted by id, and a trace without
 * one reads as an empty table. */
static void test_names_table_reads_back(void) {
    static char *k7[] = {"k_add", "k_scale"}, *k9[] = {"k_a", "k_b", "k_mm"};
    static const kctx_dfx_names names[] = {{9, "matmul", k9, 3}, {7, "vadd_chain", k7, 2}};
    synth s;
    synth_known(&s);
    s.t.names = names;
    s.t.nnames = 2;
    char err[256];
    const char *path = path_in("named.names");
    REQUIRE(kctx_dfx_write_chrome(path, &s.t, err, sizeof err) == 0);
    kctx_dfx_trace_file f;
    REQUIRE(kctx_dfx_trace_read(path, &f, err, sizeof err) == 0);
    CHECK(f.ncallables == 2 && f.callables[0].id == 7 && f.callables[1].id == 9);
    const kctx_dfx_callable_names *c7 = kctx_dfx_trace_callable(&f, 7),
                                  *c9 = kctx_dfx_trace_callable(&f, 9);
    CHECK(c7 && strcmp(c7->name, "vadd_chain") == 0 && c7->nkernels == 2 &&
          strcmp(c7->kernels[1], "k_scale") == 0);
    CHECK(c9 && strcmp(c9->name, "matmul") == 0 && c9->nkernels == 3 &&
          strcmp(c9->kernels[2], "k_mm") == 0);
    CHECK(kctx_dfx_trace_callable(&f, 8) == NULL);
    kctx_dfx_trace_file_free(&f);
    CHECK(f.callables == NULL && f.ncallables == 0);

    synth_known(&s); /* no names: an older trace, or names that failed to allocate */
    path = path_in("unnamed.names");
    REQUIRE(kctx_dfx_write_chrome(path, &s.t, err, sizeof err) == 0);
    REQUIRE(kctx_dfx_trace_read(path, &f, err, sizeof err) == 0);
    CHECK(f.ncallables == 0 && f.callables == NULL && kctx_dfx_trace_callable(&f, 7) == NULL);
    kctx_dfx_trace_file_free(&f);
}

/* K32: names come from images and may hold any byte. The file stays valid
 * JSON (UTF-8): a byte that is not well-formed UTF-8 (stray, overlong,
 * surrogate, truncated) is written as U+FFFD, control characters and
 * quotes are escaped, well-formed UTF-8 is kept; a NULL name writes "". */
static void test_hostile_names_stay_valid_json(void) {
    static char *k1[] = {"\xc3\xa9t\xc3\xa9",
                         "e\xed\xa0\x80"
                         "s",
                         NULL};
    static const kctx_dfx_names names[] = {{7,
                                            "q\"<&>\\\x01\xff"
                                            "a\xc0\x80"
                                            "b\xe2\x80",
                                            k1, 3},
                                           {9, NULL, NULL, 2}};
    synth s;
    synth_known(&s);
    s.t.names = names;
    s.t.nnames = 2;
    char err[256];
    const char *path = path_in("hostile.names");
    REQUIRE(kctx_dfx_write_chrome(path, &s.t, err, sizeof err) == 0);
    kctx_dfx_trace_file f;
    int rc = kctx_dfx_trace_read(path, &f, err, sizeof err);
    CHECK(rc == 0, "the reader (Jansson, which checks UTF-8) refused it: %s", err);
    if (rc != 0) return;
    const kctx_dfx_callable_names *c7 = kctx_dfx_trace_callable(&f, 7),
                                  *c9 = kctx_dfx_trace_callable(&f, 9);
    CHECK(c7 && strcmp(c7->name, "q\"<&>\\\x01\xef\xbf\xbd"
                                 "a\xef\xbf\xbd\xef\xbf\xbd"
                                 "b\xef\xbf\xbd\xef\xbf\xbd") == 0,
          "name read back as '%s'", c7 ? c7->name : "(none)");
    CHECK(c7 && c7->nkernels == 3 && strcmp(c7->kernels[0], "\xc3\xa9t\xc3\xa9") == 0 &&
          strcmp(c7->kernels[1], "e\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbds") == 0 &&
          strcmp(c7->kernels[2], "") == 0);
    CHECK(c9 && strcmp(c9->name, "") == 0 && c9->nkernels == 0);
    const kctx_dfx_span *launch = find_span(&f, "launch", 0);
    CHECK(launch && launch->callable_name && c7 && strcmp(launch->callable_name, c7->name) == 0);
    kctx_dfx_trace_file_free(&f);
}

/* The reader trusts nothing in the names table either. */
static void test_reader_rejects_malformed_names(void) {
#define OD(x) "{\"otherData\":{\"callables\":" x "},\"traceEvents\":[]}"
    rejects(OD("{}"), "otherData.callables is not an array");
    rejects(OD("[7]"), "otherData.callables[0] is not an object");
    rejects(OD("[{\"name\":\"a\"}]"), "otherData.callables[0].id");
    rejects(OD("[{\"id\":-1,\"name\":\"a\"}]"), "otherData.callables[0].id");
    rejects(OD("[{\"id\":1,\"name\":\"a\"},{\"id\":2,\"name\":3}]"), "otherData.callables[1].name");
    rejects(OD("[{\"id\":1,\"name\":\"a\",\"kernels\":\"k\"}]"),
            "otherData.callables[0].kernels is not an array");
    rejects(OD("[{\"id\":1,\"name\":\"a\",\"kernels\":[\"k\",null]}]"),
            "otherData.callables[0].kernels[1] is not a string");
    rejects(OD("[{\"id\":1,\"name\":\"a\"},{\"id\":\"1\",\"name\":\"b\"}]"),
            "lists callable 1 twice");
    rejects(OD("[{\"id\":1,\"name\":\"a\xff\"}]"), "not valid JSON");
    rejects(OD("[{\"id\":1,\"name\":\"a\\u0000b\"}]"), "not valid JSON");
#undef OD
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
    if (mkdir(g_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot create %s: %s\n", g_dir, strerror(errno));
        return 1;
    }
    /* Start clean: dfx_export_json_valid checks every .json left here. */
    DIR *d = opendir(g_dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        if (strstr(e->d_name, ".json") != NULL) unlink(path_in(e->d_name));
    if (d != NULL) closedir(d);
    RUN(test_known_trace_round_trips);
    RUN(test_same_input_same_bytes);
    RUN(test_empty_trace_is_valid);
    RUN(test_device_lanes_not_available_are_said_not_drawn);
    RUN(test_large_ids_are_exact);
    RUN(test_odd_records);
    RUN(test_large_trace);
    RUN(test_unwritable_path_fails_with_a_message);
    RUN(test_existing_file_is_replaced_whole);
    RUN(test_reader_rejects_malformed_files);
    RUN(test_reader_accepts_other_chrome_shapes);
    RUN(test_names_table_reads_back);
    RUN(test_hostile_names_stay_valid_json);
    RUN(test_reader_rejects_malformed_names);
    return check_summary();
}
