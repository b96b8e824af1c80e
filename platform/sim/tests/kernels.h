/*
 * kernels.h — the test kernels (examples/kernels/sim_test_kernels.c and
 * platform/sim/tests/kernels/sim_probe_kernels.c), their parameter blocks as
 * documented there, and helpers to launch them and to move device memory.
 */
#ifndef KCTX_TESTS_SIM_KERNELS_H
#define KCTX_TESTS_SIM_KERNELS_H

#include "harness.h"

#include <kctx/sim.h>

/* A device address as the copy functions take it. */
#define DEVP(p) ((void *)(uintptr_t)(p))

/* Parameter blocks, as documented next to each kernel. */
struct add_u32_params {
    uint64_t buf;
    uint32_t n;
    uint32_t value;
};
struct vadd_params {
    uint64_t a, b, c;
    uint32_t n;
    uint32_t pad;
};
struct append_params {
    uint64_t log;
    uint32_t value;
    uint32_t pad;
};
struct gang_params {
    uint64_t arrived;
    uint64_t cores;
    uint64_t timeout_ns;
};
struct wait_params {
    uint64_t word;
    uint32_t expected;
    uint32_t pad;
    uint64_t timeout_ns;
    uint64_t result;
};
struct set_params {
    uint64_t word;
    uint32_t value;
    uint32_t pad;
};
struct error_params {
    uint32_t code;
    uint32_t pad;
    uint64_t detail;
};
struct whoami_params {
    uint64_t out;
};
/* Probe kernels (platform/sim/tests/kernels/sim_probe_kernels.c). */
struct exclusive_params {
    uint64_t inside;
    uint64_t entries;
};
struct max_inside_params {
    uint64_t inside;
    uint64_t max;
};
struct services_params {
    uint64_t out;
};
struct report_twice_params {
    uint32_t first;
    uint32_t second;
};
struct signal_wait_params {
    uint64_t started, word;
    uint32_t expected, pad;
    uint64_t timeout_ns, result;
};

/* Return codes of the wait service as k_wait_word stores them. */
#define WAIT_RESULT_OK 0u
#define WAIT_RESULT_DEVICE_LOST 5u
#define WAIT_RESULT_TIMEOUT 8u
/* A timeout long enough never to expire in a passing test, short enough that
 * a wrong implementation fails the test instead of hanging it. */
#define TEST_WAIT_TIMEOUT_NS (20ull * 1000000000ull)
/* How long a test waits for a hold to be reached by work that must reach it. */
#define HOLD_REACH_MS 10000u

typedef struct test_kernels {
    sim_module module;
    sim_function noop, add_u32, vadd_f32, append, gang, wait_word, set_word, report_error, whoami;
} test_kernels;

typedef struct probe_kernels {
    sim_module module;
    sim_function exclusive_enter, exclusive_exit, exclusive, max_inside, services, report_twice,
        signal_then_wait;
} probe_kernels;

/* Load on the calling thread's current device; 1 on success (failures are
 * reported as check failures). */
int kernels_load(test_kernels *k);
void kernels_unload(test_kernels *k);
int probes_load(probe_kernels *p);
void probes_unload(probe_kernels *p);

/* Launch helpers (AICPU unless a block count is given). */
sim_status launch_add(sim_stream s, const test_kernels *k, sim_devptr buf, uint32_t n,
                      uint32_t value, uint32_t blocks);
sim_status launch_append(sim_stream s, const test_kernels *k, sim_devptr log, uint32_t value);
sim_status launch_set(sim_stream s, const test_kernels *k, sim_devptr word, uint32_t value,
                      sim_target target);
sim_status launch_wait(sim_stream s, const test_kernels *k, sim_devptr word, uint32_t expected,
                       uint64_t timeout_ns, sim_devptr result, sim_target target);
sim_status launch_error(sim_stream s, const test_kernels *k, uint32_t code, uint64_t detail);

/* Device memory (current device) through synchronous calls; each reports
 * failures as check failures. Not for use while a capture restricts the
 * thread or while held work must stay held (sim_memcpy waits for the
 * device). */
sim_devptr dev_alloc(size_t size); /* zero-filled; 0 on failure */
void dev_free(sim_devptr p);
void dev_write(sim_devptr dst, const void *src, size_t size);
void dev_read(void *dst, sim_devptr src, size_t size);
uint32_t dev_read_u32(sim_devptr src);
/* Atomic read: never waits for work. */
uint32_t dev_peek_u32(sim_devptr src);

/* An ordered log written by k_append: count and up to `max` values. */
uint32_t log_read(sim_devptr log, uint32_t *values, uint32_t max);

/* Arm a hold on the nth execution of `fn` (any device). */
int hold_kernel(sim_function fn, uint64_t nth);
int hold_kind(sim_exec_kind kind, uint64_t nth);

/* Start, on `s`, a kernel that blocks in the wait service on `word` (until
 * it changes, or forever) and will write the service's return code to
 * `result`; return once it provably runs (a kernel on `helper` waited for
 * its start signal in `scratch`, 8 bytes). */
void start_blocked_kernel(sim_stream s, sim_stream helper, const test_kernels *k,
                          const probe_kernels *pk, sim_devptr word, sim_devptr scratch,
                          sim_devptr result);

#endif
