/*
 * support.h — what the probes share: the checks (kctx_test_check.h's, whose
 * failures suite_run records into the running probe: the first is its
 * detail),
 * a "rig" (one kernel context plus the framework objects a probe creates,
 * torn down with proof that everything was released), callable images, and
 * "jobs" (a launch of an example callable with its inputs, outputs and host
 * reference).
 */
#ifndef KCTX_CONFORMANCE_SUPPORT_H
#define KCTX_CONFORMANCE_SUPPORT_H

#include "kctx_test_check.h"
#include "suite.h"

#include <kctx/kctx.h>

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Bounded waits. SYNC_MS is generous (sanitizer builds are slow); HANG_MS
 * is how long a launch may take before a probe calls it a hang. */
#define SYNC_MS 60000u
#define HANG_MS 10000u
#define HOLD_MS 30000u

struct probe {
    const probe_env *env;
    const fw_driver *fw;
    const probe_def *def;
    unsigned failures;
    int na;
    char detail[512]; /* first failure, or the N/A reason */
    /* The PASS detail the runners print: the probe's note (or, without
     * one, its summary), then "; NOT CHECKED: ..." naming every sub-check
     * the probe dropped (pr_dropped). Written by pr_note and pr_dropped. */
    char note[640];
    char note_text[512]; /* what pr_note said */
    char dropped[384];   /* what pr_dropped said, "; "-separated */
};

/* ---- checks --------------------------------------------------------- */
/* The checks are kctx_test_check.h's: CHECK(cond, fmt, ...), CHECK_K,
 * CHECK_FW(p->fw, ...), FAIL(...). While suite_run runs a probe, their
 * failures are the probe's (pr_record_failure is the sink): counted in
 * p->failures, and the first one, "file:line: what: seen", is its detail. */
void pr_record_failure(void *probe, const char *file, int line, const char *text);
/* An optional hook's result: 1 when FW_OK; FW_NA makes the probe N/A
 * (returns 0); any other status is a failure. */
int pr_hook_ok(probe *p, fw_status got, const char *expr, const char *file, int line);
#define HOOK_OK(p, expr) pr_hook_ok((p), (expr), #expr, __FILE__, __LINE__)
/* Marks the probe N/A (unless it already failed). Returns 0. */
int pr_na(probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The PASS detail. */
void pr_note(probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A sub-check the probe could not make here (an optional hook or counter
 * the driver or runner lacks) while the rest of the probe still runs: the
 * probe may pass, but its line says "NOT CHECKED: <what>" — a dropped
 * check is never silent. */
void pr_dropped(probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An optional hook's status where only a sub-check depends on it: 1 when
 * FW_OK; 0 and the sub-check dropped (pr_dropped naming `what`) when the
 * hook is absent or says FW_NA; 0 and a failure for any other status. */
int pr_optional(probe *p, fw_status got, const char *what, const char *expr, const char *file,
                int line);
#define OPTIONAL_HOOK(p, h, what, ...) \
    pr_optional((p), (p)->fw->h ? (p)->fw->h(__VA_ARGS__) : FW_NA, (what), #h, __FILE__, __LINE__)
/* A progress line under the probe ("  <probe>: ..."). */
void pr_log(probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pr_ok(const probe *p); /* no failure and not N/A so far */

/* The driver offers optional hook `h` (a member of fw_driver), else N/A. */
/* The fault sweeps' counting and fault injection: kctx's own platform seam
 * (kctx.h: kctx_thread_platform_calls, kctx_fault_arm), restricted to the
 * calling thread, so that the sweeps run on every platform. seam_thread_calls
 * gives the platform calls this thread made through kctx so far, and the
 * enqueue operations among them; seam_fault_arm makes the nth such call
 * after arming fail once (PLATFORM_ERROR class), before the platform sees
 * it; seam_fault_hits says whether it did. Each returns FW_OK, or FW_ERROR
 * with the reason in the thread's kctx message. */
fw_status seam_thread_calls(uint64_t *calls, uint64_t *enqueues);
fw_status seam_fault_arm(uint64_t nth, int *fault);
fw_status seam_fault_hits(int fault, uint64_t *hits);
fw_status seam_fault_clear(void);

#define HAS_HOOK(p, h) \
    ((p)->fw->h ? 1 : pr_na((p), "the %s driver has no " #h " hook", (p)->fw->name))

/* ---- rig: a kernel context and what a probe created around it ------- */
#define RIG_MAX_STREAMS 16
#define RIG_MAX_BUFS 512
#define RIG_MAX_GRAPHS 64
#define RIG_MAX_HOST 512

typedef struct rig_graph {
    fw_graph g;
    fw_exec x;
} rig_graph;

typedef struct rig {
    probe *p;
    const fw_driver *fw;
    int device;
    kctx_context ctx;
    int ctx_live;
    int have_base;
    fw_counts base;
    int device_reset; /* an owner reset happened: handles are stale, the device is empty */
    int hung;         /* a probe saw work that never completes: teardown does not wait for it */
    fw_stream streams[RIG_MAX_STREAMS];
    unsigned nstreams;
    fw_devptr bufs[RIG_MAX_BUFS];
    unsigned nbufs;
    rig_graph graphs[RIG_MAX_GRAPHS];
    unsigned ngraphs;
    void *host[RIG_MAX_HOST];
    unsigned nhost;
} rig;

/* The kernel config every probe's context uses: KCTX_KERNEL_CONFIG_INIT
 * with the run's strategy (env->strategy). */
kctx_kernel_config probe_config(const probe *p);
/* The run's strategy is HOST_ORDERED. */
int pr_host_ordered(const probe *p);

/* Record the device's live counts (the teardown baseline), create a
 * context on the driver's platform and kernel-init it on the thread's
 * current device, and check that the strategy in effect is the run's.
 * cfg NULL: probe_config(p); a cfg whose strategy is DEFAULT gets the run's. */
int rig_open(probe *p, rig *r, const kctx_kernel_config *cfg);
/* Framework objects the rig tears down. */
int rig_stream(rig *r, fw_stream *s);
int rig_alloc(rig *r, size_t bytes, fw_devptr *d);
void *rig_host(rig *r, size_t bytes); /* zeroed; NULL records a failure */
/* Prepare example callable `name` (<images_dir>/<name>.kctx) under `id`. */
int rig_prepare(rig *r, uint64_t id, const char *name);
/* The image bytes of an example callable (rig-owned). */
int rig_image(rig *r, const char *name, const void **bytes, size_t *size);
/* A callable whose only task fails on the device: blocked_matmul's tile
 * kernel bound with zero tiles, which it reports as CALLABLE_ERR_SHAPE
 * (examples/callables/kernels/matmul.c). Params: A, B, C tensors; M, N, K. */
int rig_failing_image(rig *r, const void **bytes, size_t *size);

/* Arm a hold on the next launch of the rig's context, right after its
 * acquire step (fw.h: the scheduler under RESIDENT, the first task kernel
 * under HOST_ORDERED): the launch then holds the launch guard if its acquire
 * took it, and none of its tasks has run. FW_NA without the hold hooks. */
fw_status rig_arm_after_acquire(rig *r, int *hold);

int rig_begin_capture(rig *r, fw_stream s);
/* End the capture on s and instantiate the graph; *gi indexes r->graphs. */
int rig_end_capture(rig *r, fw_stream s, int *gi);
int rig_replay(rig *r, int gi, fw_stream s);
int rig_drop_graph(rig *r, int gi);
/* Synchronise a stream (SYNC_MS); the result must be OK. */
int rig_sync(rig *r, fw_stream s);

/* Teardown with proof: holds released, captures ended, streams drained
 * (a stream still busy after SYNC_MS is a hang: failure; after a hang the
 * probe already reported, r->hung, nothing is waited for), graphs
 * destroyed, close OK (a close that cannot complete is recovered by an
 * owner reset where the driver can, and fails the probe), context
 * destroyed, framework objects released, and the device's live counts
 * back to the baseline. Returns whether all of that held. */
int rig_close(rig *r);

/* kctx_get_resources into a freshly initialised struct. */
kctx_status get_resources(kctx_context ctx, kctx_resource_info *info);
/* Phase of the rig's context. */
kctx_phase rig_phase(rig *r);
/* The message names the number n (as a separate run of digits). */
int msg_has_number(const char *msg, uint64_t n);

/* ---- jobs: one launch of an example callable ------------------------ */
typedef enum job_kind {
    JOB_VADD = 1,
    JOB_CHAIN = 2,
    JOB_MATMUL = 3
} job_kind;

typedef struct job {
    job_kind kind;
    uint64_t id;
    kctx_arg args[8];
    uint32_t nargs;
    fw_devptr in[2];
    size_t in_bytes[2];
    float *host_in[2];
    unsigned nin;
    fw_devptr out[2];
    size_t out_bytes[2];
    float *want[2];
    float *bound[2]; /* per-element error bound (float mode), NULL: exact */
    unsigned nout;
    size_t n;
    uint64_t M, N, K;
    int random_floats;
    float alpha; /* scale_add_chain: a scalar argument, fixed when the job is made */
} job;

/* vector_add over n floats into `out` (0: a new buffer). Integer values:
 * results are exact. `salt` varies the values. */
int job_vadd(rig *r, job *j, uint64_t id, size_t n, uint64_t salt, fw_devptr out);
/* scale_add_chain over n floats into `out` (0: a new buffer). */
int job_chain(rig *r, job *j, uint64_t id, size_t n, uint64_t salt, fw_devptr out);
/* blocked_matmul M x K times K x N. Integer entries (exact) or, with
 * random_floats, floats in [-1, 1) checked within the bound
 * 2 (K + N + 2) FLT_EPSILON sum |a||b|. */
int job_matmul(rig *r, job *j, uint64_t id, uint64_t M, uint64_t N, uint64_t K, uint64_t salt,
               int random_floats);
/* New input tensor values (uploaded now; scalars stay) and the matching
 * host reference. */
int job_set_inputs(rig *r, job *j, uint64_t salt);
kctx_status job_launch(rig *r, const job *j, fw_stream s);
/* Outputs hold the host reference. */
int job_expect(rig *r, const job *j, const char *when);
/* Enqueue a fill of the outputs with the sentinel (all bytes 0xFF). */
int job_clear(rig *r, const job *j, fw_stream s);
/* Outputs still hold the sentinel (nothing wrote them). */
int job_untouched(rig *r, const job *j, const char *when);

/* ---- threads ---------------------------------------------------------- */
/* Wait until *flag (written under mu, signalled on cv) is set, at most ms;
 * returns the flag. For a probe's helper thread that reports "returned". */
int pr_wait_flag(pthread_mutex_t *mu, pthread_cond_t *cv, const int *flag, unsigned ms);

/* ---- deterministic pseudo-random numbers (splitmix64) --------------- */
uint64_t rng_next(uint64_t *state);

#endif
