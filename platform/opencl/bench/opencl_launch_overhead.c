/*
 * opencl_launch_overhead — host time of one kctx_launch on the opencl
 * platform (PoCL's CPU device), steady state, against the same OpenCL calls
 * issued by hand.
 *
 * The callable: one task, t_count (OpenCL C, kctx's task ABI) adding 1 to a
 * counter in fine-grained SVM; the launch goes onto the caller's own
 * in-order queue, as a framework makes it. A launch on OpenCL is HOST_ORDERED
 * (src/core/launch.c enqueue_chain; platform/opencl/adapter.c maps each
 * operation), 12 commands over the caller's queue and kctx's two:
 *   caller: marker (record START)
 *   AICPU:  barrier on START; acquire kernel (24 B by value); marker (AICORE_START)
 *   AICore: barrier on AICORE_START; the task kernel (header + 2 bindings); marker (AICORE_DONE)
 *   AICPU:  barrier on AICORE_DONE; finalize kernel (24 B); marker (AICPU_DONE)
 *   caller: barrier on AICPU_DONE; marker (SERIAL_TAIL)
 * plus kctx's own check of the caller queue (its context, device and
 * properties: three clGetCommandQueueInfo), made at every launch (kctx
 * never holds or remembers a caller's queue).
 *
 * Baseline (by hand): the same 12 commands, in the same order, on three
 * in-order queues of the same context (a caller queue and two of its own),
 * with hand-written kernels doing the same work without the task ABI: count
 * (counter[0] += value), acquire/finalize (a 64-bit compare-and-swap on a
 * guard word, 24 B by value). Only what a careful hand-writer needs: the
 * markers return events, each released once the barrier that waits for it
 * is enqueued; a marker another queue waits on is followed by a clFlush of
 * its queue (the OpenCL spec's rule for waiting on an event of another
 * queue: clFlush's reference page); the barriers and kernels return none.
 *
 * Held (headline): before N launches, the caller queue gets a barrier on a
 * user event, so nothing of the N launches runs while they are enqueued —
 * only the host path is timed, as launch_overhead does on the sim with a
 * hold. The gate is then completed and the queue finished (not timed).
 * Round trip (information): N x (launch, clFinish of the caller queue).
 * After every measurement each side's counter must equal the number of its
 * launches so far (every task ran exactly once per launch), and kctx_check
 * must be OK at the end, or the program fails without a figure.
 *
 * R repeats, the order of the sides alternating (kctx first on even
 * repeats, the baseline on odd ones); medians:
 *   metric opencl_launch_overhead value=<ns> unit=ns baseline=<ns> ratio=<kctx/hand> n=<R>
 *   metric opencl_launch_overhead_calls value=<ns> unit=ns n=<R>
 *       the hand sequence making every OpenCL call kctx's adapter makes
 *       (adapter_one: each record's event kept until the next record of
 *       that event, the flush at the first wait from another queue, the
 *       task's changing argument set every launch): the difference to the
 *       baseline is the adapter's call pattern, the difference to the
 *       headline's value kctx's own logic and the adapter's locks
 *   metric opencl_launch_roundtrip value=<ns> unit=ns baseline=<ns> ratio=<..> n=<R>
 *       launch + clFinish, both sides (information)
 *   metric opencl_launch_calls value=<calls> unit=calls baseline=<calls> ratio=<kctx/hand>
 *       OpenCL calls per steady-state launch (N in a row after the warm-up,
 *       not timed): kctx's, every entry of kctx_opencl_driver_calls summed
 *       and differenced around the N launches, against the hand sequence's
 *       (base_one's calls, each counted where it is made: HAND)
 *   metric opencl_launch_calls_entry_<clEntry> value=<calls> unit=calls baseline=<calls> [ratio=..]
 *       the same per entry, one line for each entry either side calls
 * Without PoCL (or kctx's opencl platform) it prints
 * "opencl_launch_overhead: not measured: ..." on stderr and exits 0.
 */
#include "ocl_common.h"

#include "../cl_api.h" /* the adapter's entries: KCTX_CL_ENTRIES */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    DEFAULT_REPEATS = 41,
    QUICK_REPEATS = 3,
    WARMUP = 64
};
/* Held launches per measurement: few, because PoCL's enqueue gets slower
 * as the held queue grows (both sides: ~7.5 us per 12-command launch at 20
 * to 80 held launches, ~15 us at 1,280). */
#define DEFAULT_N 50L
#define QUICK_N 30L
#define ROUNDTRIP_DIV 2    /* round trips per measurement: N / 2 */
#define ROUNDTRIP_SETTLE 8 /* untimed round trips before them */

typedef struct bench {
    oc_env env;
    int device; /* kctx's number of the lent pair */
    /* kctx */
    cl_command_queue q;
    kctx_context ctx;
    uint32_t *kcount;
    kctx_arg arg;
    uint64_t klaunches;
    /* baseline */
    cl_command_queue bq, bcpu, bcore;
    cl_program bprog;
    cl_kernel count, acquire, finalize;
    uint32_t *bcount;
    uint64_t *guard;
    uint64_t seq, blaunches;
    cl_event rec[5];               /* the adapter-call variant's records */
    cl_command_queue unflushed[5]; /* their queues, until flushed for a wait */
    int count_set;                 /* the variant set count's counter argument */
} bench;

/* ---- the kctx side ---------------------------------------------------------- */

static void kctx_one(bench *B) {
    kctx_status s = kctx_launch(B->ctx, 1, &B->arg, 1, (uint64_t)(uintptr_t)B->q);
    if (s != KCTX_OK) kb_kctx_check(s, "kctx_launch");
    B->klaunches++;
}

/* ---- OpenCL calls, counted on both sides (opencl_launch_calls) --------------- */

/* Every entry of libkctx's counted table and those it never calls, in the
 * order of its indices (KCTX_CL_E_<name>): kctx's calls are read per entry
 * with kctx_opencl_driver_calls, the hand sequence's are counted under the
 * same indices. */
#define NAME_(name) "cl" #name,
static const char *const k_entries[KCTX_CL_E_COUNT_] = {KCTX_CL_ENTRIES(NAME_)
                                                            KCTX_CL_NEVER(NAME_)};
#undef NAME_

/* The hand sequence's OpenCL calls, counted by construction: every OpenCL
 * call the baseline sequence (base_one and its helpers) makes is written
 * HAND(name, args...), which counts it under entry cl<name> and makes it. */
static uint64_t g_hand_calls[KCTX_CL_E_COUNT_];
#define HAND(name, ...) (g_hand_calls[KCTX_CL_E_##name]++, cl##name(__VA_ARGS__))

static void kctx_calls(uint64_t out[KCTX_CL_E_COUNT_]) {
    for (int i = 0; i < KCTX_CL_E_COUNT_; i++)
        kb_kctx_check(kctx_opencl_driver_calls(k_entries[i], &out[i]), "kctx_opencl_driver_calls");
}

/* ---- the baseline: one launch's OpenCL calls, by hand ------------------------ */

static void enqueue_marker(cl_command_queue q, cl_event *ev) {
    cl_int e = HAND(EnqueueMarkerWithWaitList, q, 0, NULL, ev);
    if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueMarkerWithWaitList");
}

/* A marker whose event another queue waits on: its queue is flushed (the
 * spec's rule; PoCL would run without it, a batching driver need not). */
static void enqueue_marker_for_another_queue(cl_command_queue q, cl_event *ev) {
    enqueue_marker(q, ev);
    cl_int e = HAND(Flush, q);
    if (e != CL_SUCCESS) kb_cl_check(e, "clFlush");
}

static void enqueue_wait(cl_command_queue q, cl_event ev) {
    cl_int e = HAND(EnqueueBarrierWithWaitList, q, 1, &ev, NULL);
    if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueBarrierWithWaitList");
    e = HAND(ReleaseEvent, ev);
    if (e != CL_SUCCESS) kb_cl_check(e, "clReleaseEvent");
}

static void enqueue_kernel(cl_command_queue q, cl_kernel k) {
    const size_t global = 1;
    cl_int e = HAND(EnqueueNDRangeKernel, q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueNDRangeKernel");
}

static void set_step(cl_kernel k, const oc_step *p) {
    cl_int e = HAND(SetKernelArg, k, 0, sizeof *p, p);
    if (e != CL_SUCCESS) kb_cl_check(e, "clSetKernelArg(step)");
}

static void base_one(bench *B) {
    const oc_step step = {(uint64_t)(uintptr_t)B->guard, ++B->seq, 0, 0};
    const cl_ulong one = 1;
    cl_event ev;
    enqueue_marker_for_another_queue(B->bq, &ev); /* START */
    enqueue_wait(B->bcpu, ev);
    set_step(B->acquire, &step);
    enqueue_kernel(B->bcpu, B->acquire);
    enqueue_marker_for_another_queue(B->bcpu, &ev); /* AICORE_START */
    enqueue_wait(B->bcore, ev);
    cl_int e = HAND(SetKernelArgSVMPointer, B->count, 0, B->bcount);
    if (e == CL_SUCCESS) e = HAND(SetKernelArg, B->count, 1, sizeof one, &one);
    if (e != CL_SUCCESS) kb_cl_check(e, "clSetKernelArg(count)");
    enqueue_kernel(B->bcore, B->count);
    enqueue_marker_for_another_queue(B->bcore, &ev); /* AICORE_DONE */
    enqueue_wait(B->bcpu, ev);
    set_step(B->finalize, &step);
    enqueue_kernel(B->bcpu, B->finalize);
    enqueue_marker_for_another_queue(B->bcpu, &ev); /* AICPU_DONE */
    enqueue_wait(B->bq, ev);
    enqueue_marker(B->bq, NULL); /* SERIAL_TAIL */
    B->blaunches++;
}

/* ---- the baseline with every OpenCL call of kctx's adapter ------------------ */
/* The same 12 commands, plus every other OpenCL call kctx's opencl adapter
 * makes for them (platform/opencl/adapter.c), steady state: a record's
 * event is kept until the next record of that kctx event releases it (the
 * SERIAL_TAIL marker returns one too); the record's queue is flushed when
 * another queue first waits on it; the kernels' arguments that change are
 * set (the steps; the task's value stands in for kctx's task header, the
 * counter's address does not change and is set once); the caller queue's
 * check (three clGetCommandQueueInfo, as kctx makes at every launch). Not
 * included: kctx's own logic and the adapter's locks. */

static void ad_record(bench *B, int slot, cl_command_queue q) {
    cl_event ev;
    cl_int e = clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueMarkerWithWaitList");
    cl_event old = B->rec[slot];
    B->rec[slot] = ev;
    B->unflushed[slot] = q;
    if (old) clReleaseEvent(old);
}

static void ad_wait(bench *B, cl_command_queue q, int slot) {
    if (B->unflushed[slot] && B->unflushed[slot] != q) {
        cl_int e = clFlush(B->unflushed[slot]);
        if (e != CL_SUCCESS) kb_cl_check(e, "clFlush");
        B->unflushed[slot] = NULL;
    }
    cl_int e = clEnqueueBarrierWithWaitList(q, 1, &B->rec[slot], NULL);
    if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueBarrierWithWaitList");
}

static void ad_kernel(cl_command_queue q, cl_kernel k) {
    const size_t global = 1;
    cl_int e = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (e != CL_SUCCESS) kb_cl_check(e, "clEnqueueNDRangeKernel");
}

static void adapter_one(bench *B) {
    const oc_step step = {(uint64_t)(uintptr_t)B->guard, ++B->seq, 0, 0};
    const cl_ulong one = 1;
    cl_context qctx;
    cl_device_id qdev;
    cl_command_queue_properties qprops;
    cl_int qe = clGetCommandQueueInfo(B->bq, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, NULL);
    if (qe == CL_SUCCESS)
        qe = clGetCommandQueueInfo(B->bq, CL_QUEUE_DEVICE, sizeof qdev, &qdev, NULL);
    if (qe == CL_SUCCESS)
        qe = clGetCommandQueueInfo(B->bq, CL_QUEUE_PROPERTIES, sizeof qprops, &qprops, NULL);
    if (qe != CL_SUCCESS) kb_cl_check(qe, "clGetCommandQueueInfo");
    ad_record(B, 0, B->bq); /* START */
    ad_wait(B, B->bcpu, 0);
    set_step(B->acquire, &step);
    ad_kernel(B->bcpu, B->acquire);
    ad_record(B, 1, B->bcpu); /* AICORE_START */
    ad_wait(B, B->bcore, 1);
    cl_int e = CL_SUCCESS;
    if (!B->count_set) e = clSetKernelArgSVMPointer(B->count, 0, B->bcount), B->count_set = 1;
    if (e == CL_SUCCESS) e = clSetKernelArg(B->count, 1, sizeof one, &one);
    if (e != CL_SUCCESS) kb_cl_check(e, "clSetKernelArg(count)");
    ad_kernel(B->bcore, B->count);
    ad_record(B, 2, B->bcore); /* AICORE_DONE */
    ad_wait(B, B->bcpu, 2);
    set_step(B->finalize, &step);
    ad_kernel(B->bcpu, B->finalize);
    ad_record(B, 3, B->bcpu); /* AICPU_DONE */
    ad_wait(B, B->bq, 3);
    ad_record(B, 4, B->bq); /* SERIAL_TAIL */
    B->blaunches++;
}

static void adapter_release(bench *B) {
    for (int i = 0; i < 5; i++)
        if (B->rec[i]) clReleaseEvent(B->rec[i]);
}

/* ---- measurements ----------------------------------------------------------- */

enum side {
    SIDE_KCTX,
    SIDE_BASE,
    SIDE_BASE_ADAPTER
};

static void one(bench *B, enum side side) {
    if (side == SIDE_KCTX)
        kctx_one(B);
    else if (side == SIDE_BASE_ADAPTER)
        adapter_one(B);
    else
        base_one(B);
}

static void verify(const bench *B, enum side side) {
    if (side == SIDE_KCTX) {
        if (B->kcount[0] != (uint32_t)B->klaunches)
            kb_fatal("kctx: the task ran %u times in %llu launches", B->kcount[0],
                     (unsigned long long)B->klaunches);
    } else {
        if (B->bcount[0] != (uint32_t)B->blaunches)
            kb_fatal("baseline: the count kernel ran %u times in %llu sequences", B->bcount[0],
                     (unsigned long long)B->blaunches);
        if (B->guard[0] != 0) kb_fatal("baseline: the guard is still held after the sequences");
    }
}

/* ns per launch, held: only the enqueues are timed. */
static double run_held(bench *B, enum side side, long n) {
    cl_command_queue q = side == SIDE_KCTX ? B->q : B->bq;
    cl_int e = CL_SUCCESS;
    cl_event gate = clCreateUserEvent(B->env.context, &e);
    kb_cl_check(e, "clCreateUserEvent");
    kb_cl_check(clEnqueueBarrierWithWaitList(q, 1, &gate, NULL),
                "clEnqueueBarrierWithWaitList(gate)");
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) one(B, side);
    uint64_t t1 = kb_now_ns();
    kb_cl_check(clSetUserEventStatus(gate, CL_COMPLETE), "clSetUserEventStatus");
    kb_cl_check(clFinish(q), "clFinish");
    kb_cl_check(clReleaseEvent(gate), "clReleaseEvent(gate)");
    verify(B, side);
    return (double)(t1 - t0) / (double)n;
}

/* ns per launch + clFinish, after a few untimed ones: the first round
 * trips after a held measurement's release pay for PoCL's clean-up of the
 * drained commands (up to 3x), whichever side follows it. */
static double run_roundtrip(bench *B, enum side side, long n) {
    cl_command_queue q = side == SIDE_KCTX ? B->q : B->bq;
    for (int i = 0; i < ROUNDTRIP_SETTLE; i++) {
        one(B, side);
        kb_cl_check(clFinish(q), "clFinish");
    }
    uint64_t t0 = kb_now_ns();
    for (long i = 0; i < n; i++) {
        one(B, side);
        cl_int e = clFinish(q);
        if (e != CL_SUCCESS) kb_cl_check(e, "clFinish");
    }
    uint64_t t1 = kb_now_ns();
    verify(B, side);
    return (double)(t1 - t0) / (double)n;
}

/* ---- OpenCL calls per launch ------------------------------------------------ */

/* Steady state, after the warm-up: n launches of a side in a row (neither
 * held nor timed), its OpenCL calls differenced around them per entry
 * (kctx: libkctx's counters, every thread; the hand sequence: its own,
 * counted by HAND); then the side's queue is finished and its work
 * verified. Out: per entry, calls per launch. */
static void count_kctx_calls(bench *B, long n, double per_launch[KCTX_CL_E_COUNT_]) {
    uint64_t before[KCTX_CL_E_COUNT_], after[KCTX_CL_E_COUNT_];
    kctx_calls(before);
    for (long i = 0; i < n; i++) kctx_one(B);
    kctx_calls(after);
    kb_cl_check(clFinish(B->q), "clFinish");
    verify(B, SIDE_KCTX);
    for (int i = 0; i < KCTX_CL_E_COUNT_; i++)
        per_launch[i] = (double)(after[i] - before[i]) / (double)n;
}

static void count_hand_calls(bench *B, long n, double per_launch[KCTX_CL_E_COUNT_]) {
    uint64_t before[KCTX_CL_E_COUNT_];
    memcpy(before, g_hand_calls, sizeof before);
    for (long i = 0; i < n; i++) base_one(B);
    for (int i = 0; i < KCTX_CL_E_COUNT_; i++)
        per_launch[i] = (double)(g_hand_calls[i] - before[i]) / (double)n;
    kb_cl_check(clFinish(B->bq), "clFinish");
    verify(B, SIDE_BASE);
}

static double sum_calls(const double per_launch[KCTX_CL_E_COUNT_]) {
    double sum = 0.0;
    for (int i = 0; i < KCTX_CL_E_COUNT_; i++) sum += per_launch[i];
    return sum;
}

/* metric opencl_launch_calls (the totals), then one
 * opencl_launch_calls_entry_<entry> line per entry either side called;
 * baseline=none without the baseline, no ratio where the hand sequence
 * makes none of that call. */
static int print_calls(const double kctx[KCTX_CL_E_COUNT_], const double hand[KCTX_CL_E_COUNT_],
                       int run_b) {
    int bad = kb_metric_print_compared("opencl_launch_calls", sum_calls(kctx), "calls", run_b,
                                       sum_calls(hand), 0) != 0;
    for (int i = 0; i < KCTX_CL_E_COUNT_; i++) {
        if (kctx[i] == 0.0 && (!run_b || hand[i] == 0.0)) continue;
        char name[96];
        snprintf(name, sizeof name, "opencl_launch_calls_entry_%s", k_entries[i]);
        kb_metric m = {name,
                       kctx[i],
                       "calls",
                       run_b ? KB_BASELINE_VALUE : KB_BASELINE_NONE,
                       hand[i],
                       run_b && hand[i] > 0.0,
                       hand[i] > 0.0 ? kctx[i] / hand[i] : 0.0,
                       0};
        bad |= kb_metric_print(&m) != 0;
    }
    return bad;
}

static uint64_t kctx_enqueues(const bench *B) {
    kctx_opencl_live live = KCTX_OPENCL_LIVE_INIT;
    kb_kctx_check(kctx_opencl_live_objects(B->device, &live), "kctx_opencl_live_objects");
    return live.enqueues;
}

int main(int argc, char **argv) {
    kb_options opt;
    kb_set_program_name("kctx_bench_opencl_launch_overhead");
    int rc = kb_parse_options(argc, argv, &opt, DEFAULT_REPEATS, DEFAULT_N, QUICK_REPEATS, QUICK_N);
    if (rc != 0) return rc > 0 ? EXIT_SUCCESS : 2;
    const int R = opt.repeats;
    const long n = opt.n, nrt = opt.n / ROUNDTRIP_DIV > 0 ? opt.n / ROUNDTRIP_DIV : 1;
    const int run_k = !opt.baseline_only, run_b = !opt.kctx_only;

    bench B;
    memset(&B, 0, sizeof B);
    /* kctx: the framework's queue, lent; the one-task counting callable */
    if (!oc_bench_open("opencl_launch_overhead", &B.env, &B.q, &B.ctx)) return EXIT_SUCCESS;
    kb_kctx_check(kctx_opencl_bound(NULL, NULL, &B.device), "kctx_opencl_bound");
    oc_image img = oc_image_dag(0);
    kb_kctx_check(kctx_prepare(B.ctx, 1, img.bytes, img.size), "kctx_prepare(counted task)");
    oc_image_free(&img);
    B.kcount = oc_svm_alloc(&B.env, 64);
    B.arg = KCTX_TENSOR((uint64_t)(uintptr_t)B.kcount, sizeof(uint32_t));

    /* the baseline: its own caller queue, two queues standing in for
     * kctx's, the hand-written kernels */
    B.bq = kb_pocl_queue(&B.env);
    B.bcpu = kb_pocl_queue(&B.env);
    B.bcore = kb_pocl_queue(&B.env);
    B.bprog = kb_pocl_program(&B.env, oc_baseline_source);
    B.count = kb_pocl_kernel(B.bprog, "count");
    B.acquire = kb_pocl_kernel(B.bprog, "acquire");
    B.finalize = kb_pocl_kernel(B.bprog, "finalize");
    B.bcount = oc_svm_alloc(&B.env, 64);
    B.guard = oc_svm_alloc(&B.env, 64);

    /* warm both sides; count kctx's commands per launch */
    uint64_t e0 = kctx_enqueues(&B);
    for (int i = 0; i < WARMUP; i++) kctx_one(&B);
    uint64_t e1 = kctx_enqueues(&B);
    for (int i = 0; i < WARMUP; i++) base_one(&B);
    for (int i = 0; i < WARMUP; i++) adapter_one(&B);
    kb_cl_check(clFinish(B.q), "clFinish");
    kb_cl_check(clFinish(B.bq), "clFinish");
    verify(&B, SIDE_KCTX);
    verify(&B, SIDE_BASE);
    kb_progress("kctx enqueues %.1f OpenCL commands per launch (the baseline: 12)",
                (double)(e1 - e0) / WARMUP);
    double kcalls[KCTX_CL_E_COUNT_] = {0}, hcalls[KCTX_CL_E_COUNT_] = {0};
    if (run_k) count_kctx_calls(&B, n, kcalls);
    if (run_b) count_hand_calls(&B, n, hcalls);
    kb_progress("OpenCL calls per launch over %ld launches: kctx %.2f, the hand sequence %.2f", n,
                sum_calls(kcalls), sum_calls(hcalls));
    kb_progress("%d interleaved repeats of %ld held launches and %ld round trips per side%s", R, n,
                nrt, opt.quick ? " (quick)" : "");

    double *kh = kb_doubles(R), *bh = kb_doubles(R), *qh = kb_doubles(R), *kr = kb_doubles(R),
           *br = kb_doubles(R);
    for (int r = 0; r < R; r++) {
        if (r % 2 == 0) {
            if (run_k) kh[r] = run_held(&B, SIDE_KCTX, n);
            if (run_b) bh[r] = run_held(&B, SIDE_BASE, n);
            if (run_b) qh[r] = run_held(&B, SIDE_BASE_ADAPTER, n);
            if (run_k) kr[r] = run_roundtrip(&B, SIDE_KCTX, nrt);
            if (run_b) br[r] = run_roundtrip(&B, SIDE_BASE, nrt);
        } else {
            if (run_b) br[r] = run_roundtrip(&B, SIDE_BASE, nrt);
            if (run_k) kr[r] = run_roundtrip(&B, SIDE_KCTX, nrt);
            if (run_b) qh[r] = run_held(&B, SIDE_BASE_ADAPTER, n);
            if (run_b) bh[r] = run_held(&B, SIDE_BASE, n);
            if (run_k) kh[r] = run_held(&B, SIDE_KCTX, n);
        }
        kb_progress("repeat %d/%d (%s first): held kctx %.0f ns, hand %.0f ns (with the adapter's "
                    "calls %.0f "
                    "ns); "
                    "round trip kctx %.1f us, hand %.1f us",
                    r + 1, R, r % 2 ? "hand" : "kctx", kh[r], bh[r], qh[r], kr[r] / 1000.0,
                    br[r] / 1000.0);
    }
    kb_progress("every launch ran its task exactly once on every side measured (kctx %llu "
                "launches, hand %llu sequences)",
                (unsigned long long)B.klaunches, (unsigned long long)B.blaunches);

    kb_kctx_close(B.ctx);
    adapter_release(&B);
    kb_cl_check(clReleaseKernel(B.count), "clReleaseKernel");
    kb_cl_check(clReleaseKernel(B.acquire), "clReleaseKernel");
    kb_cl_check(clReleaseKernel(B.finalize), "clReleaseKernel");
    kb_cl_check(clReleaseProgram(B.bprog), "clReleaseProgram");
    clSVMFree(B.env.context, B.kcount);
    clSVMFree(B.env.context, B.bcount);
    clSVMFree(B.env.context, B.guard);
    kb_cl_check(clReleaseCommandQueue(B.q), "clReleaseCommandQueue");
    kb_cl_check(clReleaseCommandQueue(B.bq), "clReleaseCommandQueue");
    kb_cl_check(clReleaseCommandQueue(B.bcpu), "clReleaseCommandQueue");
    kb_cl_check(clReleaseCommandQueue(B.bcore), "clReleaseCommandQueue");
    kb_kctx_check(kctx_opencl_bind(NULL, NULL, NULL), "kctx_opencl_bind(NULL)");
    kb_pocl_close(&B.env);

    int bad = 0;
    if (run_k) {
        bad |= kb_metric_print_compared("opencl_launch_overhead", kb_median(kh, (size_t)R), "ns",
                                        run_b, kb_median(bh, (size_t)R), R) != 0;
    }
    if (run_b) {
        kb_metric m = {"opencl_launch_overhead_calls",
                       kb_median(qh, (size_t)R),
                       "ns",
                       KB_BASELINE_OMIT,
                       0.0,
                       0,
                       0.0,
                       R};
        bad |= kb_metric_print(&m) != 0;
    }
    if (run_k) {
        bad |= kb_metric_print_compared("opencl_launch_roundtrip", kb_median(kr, (size_t)R), "ns",
                                        run_b, kb_median(br, (size_t)R), R) != 0;
        bad |= print_calls(kcalls, hcalls, run_b);
    }
    free(kh), free(bh), free(qh), free(kr), free(br);
    return bad ? EXIT_FAILURE : EXIT_SUCCESS;
}
