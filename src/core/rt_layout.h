/*
 * rt_layout.h — the device-visible layout of a kernel context's resident
 * device memory, shared by the host core and the runtime's device programs.
 * All fields are naturally aligned little-endian words; words that host and
 * device programs touch concurrently are accessed atomically.
 */
#ifndef KCTX_RT_LAYOUT_H
#define KCTX_RT_LAYOUT_H
#include <stdint.h>

#define KCTX_RT_MAGIC 0x4b525431u /* "KRT1" */
#define KCTX_RT_MAILBOX_STRIDE 64u /* one cache line per core mailbox */

/* Device error word values (K23, K24, K35). */
enum {
    KCTX_RT_ERR_NONE = 0,
    KCTX_RT_ERR_CONCURRENT_LAUNCH = 1, /* a launch found the guard held */
    KCTX_RT_ERR_TASK_FAILED = 2,       /* a child kernel reported an error; detail = task */
    KCTX_RT_ERR_POISONED = 3,          /* host poisoned the context */
    KCTX_RT_ERR_QUARANTINED = 4
};

/* Per-core mailbox (KCTX_RT_MAILBOX_STRIDE bytes). */
typedef struct kctx_rt_mailbox {
    uint32_t cmd;    /* 0 idle, 1 run task, 2 exit */
    uint32_t seq;    /* incremented by the scheduler per post */
    uint32_t ack;    /* worker: last seq completed */
    uint32_t ready;  /* worker: reported in for launch `launch_id` */
    uint64_t launch_id;
    uint64_t task;   /* task index */
    uint32_t block;  /* block index */
    uint32_t status; /* worker: status of the last task */
    uint8_t pad[KCTX_RT_MAILBOX_STRIDE - 40];
} kctx_rt_mailbox;

/* The runtime image: header followed by core_count mailboxes. */
typedef struct kctx_rt_image {
    uint32_t magic;
    uint32_t guard;         /* 0 free; else low 32 bits of the holder's launch id */
    uint32_t error;         /* device error word */
    uint32_t error_launch;  /* low 32 bits of the launch that set it */
    uint64_t error_detail;
    uint32_t refused_replays;
    uint32_t concurrent_launches;
    uint64_t launches_done;
    uint64_t holder_launch; /* full id of the guard holder */
    uint64_t trace_ring;    /* device address of the trace ring (0: off) */
    uint64_t trace_capacity;
    uint64_t trace_head;
    uint64_t trace_dropped;
    uint8_t pad[64 - 0]; /* keeps the mailboxes on their own lines */
} kctx_rt_image;

/* Architecture register table: where each core's mailbox lives. */
typedef struct kctx_rt_arch {
    uint32_t magic;
    uint32_t core_count;
    uint32_t mailbox_stride;
    uint32_t reserved;
    uint64_t runtime_image;   /* device address of the runtime image */
    uint64_t mailbox[];       /* core_count device addresses */
} kctx_rt_arch;

/* A prepared callable's device table (one per distinct image, K14):
 * header, then entry addresses indexed by function id, tasks, bindings and
 * dependencies (offsets from the table start). */
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
} kctx_rt_callable;

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

#endif
