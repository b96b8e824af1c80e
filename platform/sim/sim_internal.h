/*
 * sim_internal.h — shared internals of the simulated accelerator.
 *
 * Locking (outermost first; never taken in the other order):
 *   g_sim.lock     handle table, object states, capture state, event record
 *                  pointers, device heaps, module use counts
 *   stream->qlock  a stream's queue and error
 *   exec->lock     an executable graph's replay state
 *   dev->done_lock completion of event records
 *   core / launch locks (execution of AICore blocks)
 * Execution threads (stream workers, graph lanes, AICore cores) never take
 * g_sim.lock while executing work, so enqueueing never waits for execution.
 */
#ifndef KCTX_SIM_INTERNAL_H
#define KCTX_SIM_INTERNAL_H

#include <kctx/sim.h>
#include <kctx/sim_kernel.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SIMI_MAX_DEVICES 16
#define SIMI_MAX_CORES 64
#define SIMI_MAX_PARAMS 4096u
#define SIMI_MAX_BLOCK_DIM 65536u
#define SIMI_ALIGN 256u
#define SIMI_REDZONE 256u
#define SIMI_DEFAULT_SPIN_US 20 /* KCTX_SIM_SPIN_US when unset (docs/sim.md: measured) */

/* ---- hand-offs (sim_core.c) ----
 *
 * The sim's threads (stream workers, AICore cores, graph lanes and the
 * host's synchronising threads) hand work to each other through condition
 * variables. A thread parked in pthread_cond_wait takes a futex wake-up to
 * resume, which costs tens of microseconds on a virtual machine; real
 * runtimes' host threads therefore spin briefly before they sleep (CUDA's
 * cudaDeviceScheduleAuto). A simi_cv is a condition variable with a
 * generation that every signal and broadcast advances (under the mutex):
 *
 *     pthread_mutex_lock(m);
 *     SIMI_WAIT_WHILE(&cv, m, !ready);    // instead of while (!ready) cond_wait
 *     ...
 *     ready = 1; simi_cv_broadcast(&cv);  // under m, as before
 *
 * Each wait first watches the generation with the mutex released for up to
 * KCTX_SIM_SPIN_US microseconds (g_sim.spin_ns; 0: park at once) — as a
 * spinner while fewer than g_sim.spinners threads spin (pause instructions),
 * otherwise yielding the processor (sched_yield) at every look — re-taking
 * the mutex and re-checking its condition whenever the generation moves; then
 * it parks in pthread_cond_wait. The device's threads (stream workers,
 * cores, host synchronisers and event waits: SIMI_WAIT_WHILE_BUSY) stretch
 * that active phase while any stream of their device has work queued or
 * running: at the end of each spin period they look at the device's count
 * of active streams and park at the first period end that finds it 0 (or
 * at the cap, see simi_wait): on a busy device the next hand-off is usually
 * microseconds away, and a parked thread costs a futex wake-up, which on
 * a virtual machine with an idle processor costs tens of microseconds.
 * The condition is only ever decided under the mutex and the signal is
 * always sent, so the spin can delay nothing but its own thread, and a
 * wake-up cannot be lost: a waiter that parks checked its condition under
 * the mutex the signaller must take. */
typedef struct simi_cv {
    pthread_cond_t cond;
    atomic_uint gen; /* advanced under the mutex by every signal and broadcast */
} simi_cv;
typedef struct simi_wait {
    uint64_t deadline; /* end of the spin (ns, simi_now_ns) */
    int phase;         /* 0 not waited yet, 1 spinning, 2 parking */
    /* SIMI_WAIT_WHILE_BUSY: at the end of each spin period the active
     * phase goes on for another period while *busy (the device's active
     * streams) is above 0, so it ends at the first period end that reads 0,
     * and at the latest at cap (SIMI_BUSY_SPIN_FACTOR spins after the wait
     * began, at most SIMI_BUSY_SPIN_MAX_NS more than one spin). */
    const atomic_int *busy;
    uint64_t cap;
} simi_wait;
#define SIMI_BUSY_SPIN_FACTOR 25
#define SIMI_BUSY_SPIN_MAX_NS 1000000ull
void simi_cv_init(simi_cv *cv);
void simi_cv_destroy(simi_cv *cv);
/* mutex held */
void simi_cv_signal(simi_cv *cv);
void simi_cv_broadcast(simi_cv *cv);
/* One step of a wait (mutex held in and out): spin or park once. */
void simi_cv_wait(simi_cv *cv, pthread_mutex_t *m, simi_wait *w);
/* A statement (a while loop in its own block, not a for loop: the condition
 * often reads a variable only another thread changes, under the mutex, which
 * clang's -Wfor-loop-analysis would take for a loop that never ends). */
#define SIMI_WAIT_WHILE(cv, m, cond)                    \
    do {                                                \
        simi_wait simi_w_ = {0, 0, NULL, 0};            \
        while (cond) simi_cv_wait((cv), (m), &simi_w_); \
    } while (0)
/* The same, waiting actively for longer while *busy > 0 (see simi_wait). */
#define SIMI_WAIT_WHILE_BUSY(cv, m, busy, cond)         \
    do {                                                \
        simi_wait simi_w_ = {0, 0, (busy), 0};          \
        while (cond) simi_cv_wait((cv), (m), &simi_w_); \
    } while (0)

/* ---- handle table (sim_core.c) ---- */
enum simi_type {
    SIMI_T_NONE = 0,
    SIMI_T_STREAM = 1,
    SIMI_T_EVENT = 2,
    SIMI_T_MODULE = 3,
    SIMI_T_FUNCTION = 4,
    SIMI_T_GRAPH = 5,
    SIMI_T_EXEC = 6
};

typedef struct simi_device simi_device;
typedef struct simi_stream simi_stream;
typedef struct simi_event simi_event;
typedef struct simi_module simi_module;
typedef struct simi_function simi_function;
typedef struct simi_graph simi_graph;
typedef struct simi_exec simi_exec;
typedef struct simi_capture simi_capture;
typedef struct simi_hook simi_hook;

/* Allocate a slot for obj (g_sim.lock held). Returns 0 if the table is full. */
uint64_t simi_handle_new(int type, int device, void *obj);
/* Object of a live handle of `type`, or NULL (g_sim.lock held). */
void *simi_handle_get(uint64_t h, int type);
/* Invalidate a handle (g_sim.lock held). */
void simi_handle_free(uint64_t h);
/* Device index encoded in a handle without validating it (-1 if none).
 * Called only for the argument of simi_enter: it notes the handle for the
 * handle watch (simi_watch_arg). */
int simi_handle_device(uint64_t h);
/* Visit every live handle of a device (g_sim.lock held). */
typedef void (*simi_visit_fn)(uint64_t h, int type, void *obj, void *user);
void simi_handle_visit(int device, simi_visit_fn fn, void *user);

/* ---- record instances (one per event record) ---- */
typedef struct simi_rec {
    atomic_int refs;
    int done;          /* dev->done_lock */
    sim_status status; /* error carried by the record */
    uint64_t t_ns;
    simi_device *dev;
} simi_rec;
simi_rec *simi_rec_new(simi_device *dev);
typedef struct simi_rec_waiter simi_rec_waiter;
void simi_rec_put(simi_rec *r);

/* ---- operations: stream queue entries and graph node payloads ---- */
enum simi_op_kind {
    SIMI_OP_KERNEL = 1,
    SIMI_OP_COPY,
    SIMI_OP_FILL,
    SIMI_OP_HOST,
    SIMI_OP_RECORD,
    SIMI_OP_WAIT,
    SIMI_OP_GRAPH,
    SIMI_OP_EXIT
};
typedef struct simi_op {
    struct simi_op *next;
    int kind;
    union {
        struct {
            sim_kernel_fn entry;
            sim_function fnh;
            simi_module *module; /* holds a use */
            int target;
            uint32_t block_dim;
            uint32_t psize;
        } k;
        struct {
            void *dst;
            const void *src;
            size_t size;
        } copy;
        struct {
            void *dst;
            size_t size;
            uint8_t value;
        } fill;
        struct {
            sim_host_fn fn;
            void *user;
        } host;
        struct {
            simi_rec *rec;
        } rec;
        struct {
            simi_exec *exec;
        } graph;
    } u;
    _Alignas(16) unsigned char params[]; /* kernel parameter block */
} simi_op;
simi_op *simi_op_alloc(size_t psize);
simi_op *simi_op_clone(const simi_op *op); /* kernel/copy/fill/host only; takes a module use */
void simi_op_free(simi_op *op);            /* drops module use / rec ref */

/* ---- devices ---- */
typedef struct simi_core {
    pthread_t thread;
    pthread_mutex_t lock;
    simi_cv cond;
    struct simi_block_job *job;
} simi_core;

typedef struct simi_heap {
    unsigned char *base;
    uint64_t capacity;
    struct simi_seg *segs; /* sorted by offset, covering the heap */
    size_t nsegs, capsegs;
    uint64_t live_count, live_bytes;
    uint64_t *freed; /* sorted start offsets of freed, not reallocated blocks */
    size_t nfreed, capfreed;
    _Atomic uint64_t frees; /* +1 per allocation ended (sim_mem_free_counter) */
} simi_heap;

struct simi_device {
    int index;
    int cores;
    uint64_t capacity;
    _Atomic uint64_t epoch; /* +1 per reset; readable on a lost device */
    atomic_int lost;        /* fatal: every op fails DEVICE_LOST */
    atomic_int resetting;   /* reset in progress: pending work abandoned */
    simi_heap heap;         /* g_sim.lock */
    /* execution */
    pthread_mutex_t core_lock;
    simi_cv core_cond;
    uint64_t core_free_mask; /* core_lock */
    simi_core core[SIMI_MAX_CORES];
    atomic_int active_streams; /* streams with work queued or running (see simi_stream.active) */
    pthread_mutex_t done_lock;
    struct simi_rec_waiter *rec_waiters; /* done_lock: threads waiting for a record */
    /* stream worker threads alive (for reset) */
    pthread_mutex_t thr_lock;
    pthread_cond_t thr_cond;
    int live_threads;
    uint64_t lifecycle[SIM_LIFECYCLE_COUNT_]; /* g_sim.lock */
    /* live object counts (g_sim.lock) */
    uint64_t n_streams, n_events, n_modules, n_graphs, n_execs;
    atomic_ullong hooks_pending;
    /* last device-side error report (for messages) */
    _Atomic uint32_t kerr_code;
    _Atomic uint64_t kerr_detail;
};

typedef struct simi_global {
    pthread_mutex_t lock;
    int ndevices;
    int cores;
    uint64_t memory;
    uint64_t spin_ns; /* KCTX_SIM_SPIN_US: spin of a hand-off wait before it parks */
    int spinners;     /* KCTX_SIM_SPINNERS: threads spinning at once; the others yield */
    simi_device dev[SIMI_MAX_DEVICES];
    uint64_t next_capture_id;
    simi_capture *captures; /* active (not ended) captures, linked */
} simi_global;
extern simi_global g_sim;

/* Make sure the sim is initialised (idempotent, thread-safe). */
void simi_ensure_init(void);
/* Common entry: init, callback check, counters, fault injection. Returns
 * SIM_OK or the status the call must return at once. `device` is the
 * device the call is attributed to (-1: the thread's current device). */
sim_status simi_enter(sim_op op, int device);
/* Entry of a counted query that is never refused and never fault-injected
 * (sim_get_device, sim_device_epoch, sim_mem_free_counter: sim.h): init and
 * the counters only. `device` out of range: the thread's current device. */
void simi_count_query(sim_op op, int device);
simi_device *simi_cur_dev(void);
/* Set the thread's last error message and return s. */
sim_status simi_fail(sim_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool simi_in_callback(void);
void simi_set_in_callback(bool on);
uint64_t simi_thread_id(void);
uint64_t simi_now_ns(void);
bool simi_dev_dead(const simi_device *dev); /* lost or resetting */

/* ---- faults, counters, holds (sim_fault.c) ---- */
sim_status simi_fault_check(sim_op op, int device);
/* Counts the call being entered; also counts it for the handle watch when
 * one of its handle arguments was noted (simi_watch_arg) since the
 * previous call of the thread. */
void simi_count(sim_op op, int device);
/* Handle watch (sim_handle_watch): note that the API call about to be
 * entered names `h` among its handle arguments. Every handle argument of
 * every API function is noted before simi_enter: the one the call is
 * attributed to through simi_handle_device, a second one explicitly. */
void simi_watch_arg(uint64_t h);
/* Execution hold point: blocks while a matching hold is armed and reached. */
void simi_hold_point(simi_device *dev, int kind, sim_function fn);
/* Execution failure point (sim_exec_fail_arm): SIM_OK, or the error the
 * matching armed failure makes this execution fail with (it must not run). */
sim_status simi_exec_fail_point(simi_device *dev, int kind, sim_function fn);
void simi_hold_release_device(int device);

/* ---- memory (sim_memory.c) ---- */
int simi_heap_init(simi_heap *h, uint64_t capacity);
void simi_heap_reset(simi_heap *h); /* frees every allocation */
/* g_sim.lock held: the [p, p+size) range lies in one live allocation. */
bool simi_heap_contains(const simi_heap *h, uint64_t p, size_t size);
/* Which device's heap holds address p (any state), or NULL. */
simi_device *simi_heap_owner(uint64_t p);

/* ---- streams and execution (sim_stream.c) ---- */
struct simi_stream {
    atomic_int refs;
    simi_device *dev;
    sim_stream handle;
    pthread_t thread;
    pthread_mutex_t qlock;
    simi_cv qcond;    /* worker waits for work */
    simi_cv idlecond; /* synchronisers wait for idle */
    simi_op *head, *tail;
    int busy;
    int active; /* qlock: counted in dev->active_streams (work queued or running) */
    int exiting;
    sim_status error; /* qlock: sticky error */
    /* capture state (g_sim.lock) */
    simi_capture *cap;
    int lane;
    uint32_t *deps;
    uint32_t ndeps, capdeps;
};
void simi_stream_put(simi_stream *s);
void simi_stream_push(simi_stream *s, simi_op *op); /* g_sim.lock held */
/* Waits until the stream is idle; returns its error. */
sim_status simi_stream_wait_idle(simi_stream *s);
/* Execute one op on the calling execution thread; *err is the stream (or
 * node) error state in and out. */
void simi_exec_op(simi_device *dev, simi_op *op, sim_status *err);
int simi_device_start(simi_device *dev);   /* core threads */
void simi_wake_word(const uint32_t *word); /* wake kernels waiting on a device word */
void simi_device_wake_all(simi_device *dev);
sim_status simi_device_sync(simi_device *dev);
/* Reset internals: destroy every object of the device (called with nothing
 * held). */
void simi_device_teardown(simi_device *dev);

struct simi_event {
    simi_device *dev;
    unsigned flags;
    simi_rec *last;  /* last eager record, or NULL */
    uint64_t cap_id; /* capture of the last record if it was captured */
    uint32_t *cap_deps;
    uint32_t ncap_deps;
};

/* ---- modules (sim_module.c) ---- */
struct simi_module {
    simi_device *dev;
    void *dl;
    atomic_int uses; /* enqueued kernel ops and graph nodes using it */
    sim_function *fns;
    size_t nfns, capfns;
};
/* Unload a module's code and free it (no handle bookkeeping). */
void simi_module_free_obj(simi_module *m);

struct simi_function {
    simi_module *module;
    sim_kernel_fn entry;
};

/* ---- capture and graphs (sim_capture.c) ---- */
/* g_sim.lock held. If a capture restricts the calling thread, invalidates
 * the restricting captures and returns SIM_CAPTURE_UNSUPPORTED. */
sim_status simi_capture_restricted(const char *what);
/* g_sim.lock held: record op as a node of the stream's capture. Takes
 * ownership of op on success. */
sim_status simi_capture_add(simi_stream *s, simi_op *op);
void simi_capture_invalidate(simi_capture *c);
simi_capture *simi_capture_find(uint64_t id); /* active capture by id */
/* Event record/wait on a capturing stream, or a wait that joins a capture
 * (g_sim.lock held). */
sim_status simi_capture_record(simi_stream *s, simi_event *e);
sim_status simi_capture_wait(simi_stream *s, simi_event *e);
sim_status simi_capture_join(simi_stream *s, simi_event *e, simi_capture *c);
/* Run one launch of an executable graph on an execution thread. */
void simi_exec_run(simi_exec *x, sim_status *err);
void simi_exec_put(simi_exec *x);
/* Free a graph (its nodes, its hook references: hooks may run). */
void simi_graph_free_obj(simi_graph *g);
/* Reset: abandon captures and drop graphs/execs of a device. Called with
 * g_sim.lock held; returns objects to drop after unlocking via the lists. */
void simi_capture_abandon_device(simi_device *dev);

#endif
