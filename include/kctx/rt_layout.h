/*
 * kctx/rt_layout.h — the runtime's device ABI: the device-visible layout of a
 * kernel context's resident device memory, shared by the host core
 * (src/core), the runtime's device programs of every platform (sim, OpenCL,
 * CUDA), the trace reader and the tools. It is a shared ABI header, not part
 * of the caller's API (kctx.h): it lives here so that no platform, tool or
 * device program includes a header of src/core.
 * All fields are naturally aligned little-endian words; words that host and
 * device programs touch concurrently are accessed atomically.
 */
#ifndef KCTX_RT_LAYOUT_H
#define KCTX_RT_LAYOUT_H
#include <stddef.h>
#include <stdint.h>

#include <kctx/task_abi.h>

#define KCTX_RT_MAGIC 0x4b525431u  /* "KRT1" */
#define KCTX_RT_MAILBOX_STRIDE 64u /* one cache line per core mailbox */

/* Device error word values (K23, K24, K35): the task ABI's. */
enum {
    KCTX_RT_ERR_NONE = KCTX_TASK_ERR_NONE,
    KCTX_RT_ERR_CONCURRENT_LAUNCH =
        KCTX_TASK_ERR_CONCURRENT_LAUNCH, /* a launch found the guard held */
    KCTX_RT_ERR_TASK_FAILED =
        KCTX_TASK_ERR_TASK_FAILED, /* a child kernel reported an error; detail = task */
    KCTX_RT_ERR_POISONED = KCTX_TASK_ERR_POISONED, /* the host poisoned the context */
    KCTX_RT_ERR_QUARANTINED = KCTX_TASK_ERR_QUARANTINED,
    KCTX_RT_ERR_BAD_LAUNCH =
        KCTX_TASK_ERR_BAD_LAUNCH /* a run made no progress for the watchdog's period */
};

/* Device trace records (K32): the task ABI's records and ring protocol
 * (kctx/task_abi.h), written by the device programs and task kernels into
 * the resident ring when tracing is enabled. */
enum {
    KCTX_RT_TRACE_SCHED = KCTX_TASK_TRACE_SCHED,
    KCTX_RT_TRACE_TASK = KCTX_TASK_TRACE_TASK,
    KCTX_RT_TRACE_REFUSED = KCTX_TASK_TRACE_REFUSED
};
typedef kctx_task_trace_rec kctx_rt_trace_rec;
#define KCTX_RT_FLAG_TRACE 1u

/* Parameter blocks of the device programs (by value: a captured launch
 * carries them into every replay). */
typedef struct kctx_rt_acquire_params {
    uint64_t arch;      /* device address of the architecture register table */
    uint64_t launch_id; /* never 0 */
} kctx_rt_acquire_params;

/* The host-ordered strategy's acquire and finalize steps (§0b). */
typedef struct kctx_rt_step_params {
    uint64_t arch;
    uint64_t launch_id;
    uint32_t flags; /* KCTX_RT_FLAG_TRACE */
    uint32_t reserved;
} kctx_rt_step_params;

typedef struct kctx_rt_worker_params {
    uint64_t arch;
    uint64_t launch_id;
    uint64_t callable; /* device address of the callable table */
    uint64_t args;     /* device address of the kernel-args block */
    uint32_t flags;    /* KCTX_RT_FLAG_TRACE */
    uint32_t reserved;
} kctx_rt_worker_params;

enum {
    KCTX_RT_SCHED_RUN = 0,
    KCTX_RT_SCHED_ABORT = 1
};

/* Args travel as (value, size) pairs per callable parameter: a tensor's
 * device address and byte size, or a scalar's value and 0. */
typedef struct kctx_rt_arg {
    uint64_t value;
    uint64_t size;
} kctx_rt_arg;

typedef struct kctx_rt_scheduler_params {
    uint64_t arch;
    uint64_t launch_id;
    uint64_t callable;
    uint64_t args; /* kernel-args block: the snapshot below is copied there */
    uint32_t mode; /* KCTX_RT_SCHED_RUN or _ABORT (K24 compensation) */
    uint32_t nargs;
    uint32_t flags; /* trace flags (K32) */
    uint32_t reserved;
    kctx_rt_arg snapshot[]; /* nargs entries */
} kctx_rt_scheduler_params;

/* Updatable captured launches (K37-K40, kctx_launch_updatable): the
 * arguments a replay runs with live in an argument slot, one of a pool of
 * token_capacity slots made at kernel init (K11) under RESIDENT. A slot is
 * double-buffered: two buffers of `cap` kctx_rt_arg entries (cap comes with
 * every parameter block that names the slot) and a version word
 * `ver` = serial << 32 | generation. The buffer of generation g is
 * buf[(g % 2) * cap ...]. The serial names one use of the slot (one captured
 * launch, kctx_args_handle); a slot whose serial is not the reader's was
 * never updated in this use: the reader takes its by-value snapshot.
 *
 * kctx_rt_update (the writer, one AICPU work item, on the caller's stream):
 *  U1. take the writer lock (compare-and-swap 0 -> 1; wait while held);
 *  U2. read ver; a serial newer than its own (the slot was reused after its
 *      graph was gone): unlock, nothing written; an older serial: the
 *      generation counts from 0;
 *  U3. fill the buffer of generation g + 1 (the one not published), then
 *      publish ver = serial << 32 | g + 1 with release order; unlock.
 * The scheduler (the reader, KCTX_RT_FLAG_ARG_SLOT):
 *  R1. read ver (acquire); its serial is not the launch's: copy the
 *      by-value snapshot (no update yet in this use); else
 *  R2. copy the buffer of its generation into the kernel-args block, then
 *      re-read ver: unchanged, done; changed (a writer published meanwhile:
 *      only an update unordered with the replay, K39), retry, bounded; then
 *      copy under the writer lock.
 * So a replay reads one whole published set, never a half-updated one. */
#define KCTX_RT_FLAG_ARG_SLOT \
    2u /* scheduler: snapshot[nargs] = {slot address, serial | cap << 32} */
typedef struct kctx_rt_arg_slot {
    uint64_t ver;  /* serial << 32 | generation */
    uint32_t lock; /* the writers' lock: 0 free, 1 held */
    uint32_t reserved0;
    uint64_t reserved[2];
    kctx_rt_arg buf[]; /* 2 * cap entries */
} kctx_rt_arg_slot;

typedef struct kctx_rt_update_params {
    uint64_t slot;   /* device address of the kctx_rt_arg_slot */
    uint32_t serial; /* the use of the slot this update is for */
    uint32_t cap;    /* entries per buffer */
    uint32_t nargs;
    uint32_t reserved;
    kctx_rt_arg args[]; /* nargs entries */
} kctx_rt_update_params;

/* Per-core mailbox (KCTX_RT_MAILBOX_STRIDE bytes): a core's report-in
 * slot. Work is not posted through it: workers pull ready tasks from the
 * run's queue (see kctx_rt_image and kctx_rt_callable). */
typedef struct kctx_rt_mailbox {
    uint32_t ready; /* worker: 1 once reported in for the current launch */
    uint32_t reserved[3];
    uint8_t pad[KCTX_RT_MAILBOX_STRIDE - 16];
} kctx_rt_mailbox;

/* The runtime image: this header, then core_count mailboxes. */
typedef struct kctx_rt_image {
    uint32_t magic;
    uint32_t error; /* device error word (KCTX_RT_ERR_*) */
    uint64_t
        error_detail; /* TASK_FAILED: task index; CONCURRENT: refused launch id; BAD_LAUNCH: tasks done */
    uint64_t holder;       /* launch guard: 0 free, else the holder's launch id */
    uint32_t sched_claim;  /* 0 after a successful acquire; the run's scheduler takes it (1), so a
                              * second copy of the same graph (same launch id) cannot run it twice */
    uint32_t live_workers; /* workers inside the run: the guard is released only at 0 */
    uint32_t refused_replays;     /* K35 */
    uint32_t concurrent_launches; /* K23 */
    uint64_t trace_ring;          /* device address of the trace ring (0: off, K32) */
    uint64_t trace_capacity;      /* records in the ring */
    uint64_t trace_head;          /* device: the next record index to reserve (never wraps) */
    uint32_t trace_tail;          /* host: the next index to consume (low 32 bits), written after a
                              * copy-back; a writer reserves only while head - tail < capacity */
    uint32_t trace_dropped;       /* device: records dropped on a full ring (monotonic, mod 2^32) */
    uint32_t abort_launch; /* host (K24): the low 32 bits of a launch whose scheduler could not
                              * be enqueued: its acquire takes no guard, its workers leave */
    uint32_t reserved0;
    uint64_t run_t0; /* host-ordered: when the guard holder's acquire ran (its trace span) */
    uint8_t pad0[128 - 88];
    /* The ready queue of the running launch (see kctx_rt_callable). Words
     * that every worker writes for every task sit on their own cache
     * lines, so the cores do not fight over one line. */
    uint32_t run_state; /* 0 before the scheduler seeds, 1 running, 2 finished or aborted */
    uint32_t q_gen;     /* bumped on every push and state change: idle workers wait on it */
    uint32_t idle;      /* workers waiting on q_gen (pushers skip the wake when 0) */
    uint32_t fail_flag; /* a block failed: later blocks are skipped */
    uint32_t fail_task;
    uint32_t fail_code;
    uint8_t pad1[64 - 24];
    uint32_t q_head; /* next queue slot to take blocks from */
    uint8_t pad2[64 - 4];
    uint32_t q_tail; /* next free queue slot */
    uint8_t pad3[64 - 4];
    uint32_t tasks_done; /* the scheduler waits on it */
    uint8_t pad4[64 - 4];
} kctx_rt_image;
/* The task ABI's view of the runtime image is its prefix. */
_Static_assert(offsetof(kctx_rt_image, error) == offsetof(kctx_task_rt, error), "task ABI");
_Static_assert(offsetof(kctx_rt_image, error_detail) == offsetof(kctx_task_rt, error_detail),
               "task ABI");
_Static_assert(offsetof(kctx_rt_image, trace_ring) == offsetof(kctx_task_rt, trace_ring),
               "task ABI");
_Static_assert(offsetof(kctx_rt_image, trace_capacity) == offsetof(kctx_task_rt, trace_capacity),
               "task ABI");
_Static_assert(offsetof(kctx_rt_image, trace_head) == offsetof(kctx_task_rt, trace_head),
               "task ABI");
_Static_assert(offsetof(kctx_rt_image, trace_tail) == offsetof(kctx_task_rt, trace_tail),
               "task ABI");
_Static_assert(offsetof(kctx_rt_image, trace_dropped) == offsetof(kctx_task_rt, trace_dropped),
               "task ABI");
_Static_assert(sizeof(kctx_rt_image) % 64 == 0,
               "the mailboxes after the runtime image start on cache lines");

/* Architecture register table: where each core's mailbox lives. */
typedef struct kctx_rt_arch {
    uint32_t magic;
    uint32_t core_count;
    uint32_t mailbox_stride;
    uint32_t reserved;
    uint64_t runtime_image; /* device address of the runtime image */
    uint64_t mailbox[];     /* core_count device addresses */
} kctx_rt_arch;

/* A prepared callable's device table (one per distinct image, K14):
 * header, then entry addresses indexed by function id, tasks, bindings,
 * dependencies, successor lists, and per-launch scratch (offsets from the
 * table start). The scratch (per-task counters and the ready queue's
 * slots) is rewritten by the scheduler at the start of every launch; one
 * launch runs at a time per context (K23), so one scratch per table is
 * enough. */
#define KCTX_RT_CALLABLE_MAGIC 0x4b435431u /* "KCT1" */
typedef struct kctx_rt_callable {
    uint32_t magic;
    uint32_t task_count;
    uint32_t child_count;
    uint32_t param_count;
    uint32_t binding_count;
    uint32_t dep_count;
    uint64_t entries_off;  /* u64[child_count]: entry address by function id */
    uint64_t tasks_off;    /* kctx_rt_task[task_count] */
    uint64_t bindings_off; /* kctx_rt_binding[binding_count] */
    uint64_t deps_off;     /* u32[dep_count] */
    uint64_t succ_off;     /* kctx_rt_succ[task_count]: where each task's successors are */
    uint64_t succs_off;    /* u32[succ_count] */
    uint64_t scratch_off;  /* kctx_rt_task_state[task_count] */
    uint64_t queue_off;    /* u32[task_count]: ready queue slots (UINT32_MAX: not yet written) */
    uint32_t succ_count;
    uint32_t reserved;
} kctx_rt_callable;

typedef struct kctx_rt_succ {
    uint32_t first, count;
} kctx_rt_succ;

typedef struct kctx_rt_task_state {
    uint32_t deps_left;  /* predecessors not yet complete */
    uint32_t next_block; /* the next block to claim */
    uint32_t blocks_done;
    uint32_t reserved;
} kctx_rt_task_state;

typedef struct kctx_rt_task {
    uint32_t func_id;
    uint32_t block_dim;
    uint32_t first_binding;
    uint32_t binding_count;
    uint32_t first_dep;
    uint32_t dep_count;
} kctx_rt_task;

typedef struct kctx_rt_binding {
    uint32_t kind; /* kctx_binding_kind */
    uint32_t param;
    uint64_t value;
} kctx_rt_binding;

/* The host-ordered guard programs: the one specification that the sim_elf
 * build's (platform/common/rt_programs_elf.c, C), OpenCL's (platform/opencl/
 * rt_programs.cl, OpenCL C) and CUDA's (platform/cuda/rt_programs.cu, CUDA
 * C++) kctx_rt_ho_acquire and kctx_rt_ho_finalize follow step for step.
 * Each runs alone (one work item) with a kctx_rt_step_params block whose
 * launch_id is the launch's (a replay carries its captured one); every word
 * below is read and written atomically.
 *
 * kctx_rt_ho_acquire:
 *  G1. error word not NONE and not CONCURRENT_LAUNCH (the context is
 *      poisoned): add 1 to refused_replays (K35; trace REFUSED when tracing)
 *      and take nothing.
 *  G2. abort_launch == the low 32 bits of launch_id (the host aborted this
 *      launch, K24): take nothing.
 *  G3. compare-and-swap holder 0 -> launch_id; if it held a launch whose low
 *      32 bits are abort_launch (an aborted holder that never finalizes),
 *      compare-and-swap that value -> launch_id. Taken: record run_t0 (the
 *      device clock where the platform has one) and stop.
 *  G4. not taken (another launch holds the guard, K23): add 1 to
 *      concurrent_launches, and compare-and-swap the error word NONE ->
 *      CONCURRENT_LAUNCH; if that succeeded, error_detail = launch_id.
 * kctx_rt_ho_finalize:
 *  G5. holder == launch_id: write the holder's SCHED trace record from
 *      run_t0 (when tracing and the platform has a device clock), then
 *      compare-and-swap holder launch_id -> 0. Else (the launch was refused
 *      or aborted): nothing.
 *
 * The task kernels between them check the error word through the task ABI
 * (kctx/task_abi.h): a refused launch runs none of its tasks. One
 * conformance check proves each platform's programs: the probes of
 * src/conformance/probes_guard.c (unordered_replays_detected_as_
 * concurrent_launch, two_copies_of_one_graph_detected_as_concurrent_launch,
 * poisoned_context_refuses_launches, concurrent_launch_poison_stops_graphs_
 * at_once) run on every platform under HOST_ORDERED (conformance_*_
 * host_ordered, _opencl, _cuda). */

#endif
