/*
 * kernels.c — loading the test kernels, launch helpers and device memory
 * helpers shared by the sim tests.
 */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

static int lookup(sim_function *fn, sim_module m, const char *name) {
    sim_status st = sim_module_get_function(fn, m, name);
    return CHECK(st == SIM_OK, "kernel %s: %s (%s)", name, sim_status_name(st),
                 sim_last_error_message());
}

int kernels_load(test_kernels *k) {
    memset(k, 0, sizeof *k);
    if (!CHECK_SIM_OK(harness_module_load_file(&k->module, SIM_TEST_KERNELS))) return 0;
    int ok = lookup(&k->noop, k->module, "k_noop") & lookup(&k->add_u32, k->module, "k_add_u32") &
             lookup(&k->vadd_f32, k->module, "k_vadd_f32") &
             lookup(&k->append, k->module, "k_append") & lookup(&k->gang, k->module, "k_gang") &
             lookup(&k->wait_word, k->module, "k_wait_word") &
             lookup(&k->set_word, k->module, "k_set_word") &
             lookup(&k->report_error, k->module, "k_report_error") &
             lookup(&k->whoami, k->module, "k_whoami");
    if (!ok) {
        sim_module_unload(k->module);
        k->module = 0;
    }
    return ok;
}

void kernels_unload(test_kernels *k) {
    if (k->module) CHECK_SIM_OK(sim_module_unload(k->module));
    k->module = 0;
}

int probes_load(probe_kernels *p) {
    memset(p, 0, sizeof *p);
    if (!CHECK_SIM_OK(harness_module_load_file(&p->module, SIM_PROBE_KERNELS))) return 0;
    int ok = lookup(&p->exclusive_enter, p->module, "k_exclusive_enter") &
             lookup(&p->exclusive_exit, p->module, "k_exclusive_exit") &
             lookup(&p->exclusive, p->module, "k_exclusive") &
             lookup(&p->max_inside, p->module, "k_max_inside") &
             lookup(&p->services, p->module, "k_services") &
             lookup(&p->report_twice, p->module, "k_report_twice") &
             lookup(&p->signal_then_wait, p->module, "k_signal_then_wait");
    if (!ok) {
        sim_module_unload(p->module);
        p->module = 0;
    }
    return ok;
}

void probes_unload(probe_kernels *p) {
    if (p->module) CHECK_SIM_OK(sim_module_unload(p->module));
    p->module = 0;
}

sim_status launch_add(sim_stream s, const test_kernels *k, sim_devptr buf, uint32_t n,
                      uint32_t value, uint32_t blocks) {
    struct add_u32_params p = {buf, n, value};
    return sim_launch_kernel(s, k->add_u32, blocks ? SIM_TARGET_AICORE : SIM_TARGET_AICPU,
                             blocks ? blocks : 1, &p, sizeof p);
}

sim_status launch_append(sim_stream s, const test_kernels *k, sim_devptr log, uint32_t value) {
    struct append_params p = {log, value, 0};
    return sim_launch_kernel(s, k->append, SIM_TARGET_AICPU, 1, &p, sizeof p);
}

sim_status launch_set(sim_stream s, const test_kernels *k, sim_devptr word, uint32_t value,
                      sim_target target) {
    struct set_params p = {word, value, 0};
    return sim_launch_kernel(s, k->set_word, target, 1, &p, sizeof p);
}

sim_status launch_wait(sim_stream s, const test_kernels *k, sim_devptr word, uint32_t expected,
                       uint64_t timeout_ns, sim_devptr result, sim_target target) {
    struct wait_params p = {word, expected, 0, timeout_ns, result};
    return sim_launch_kernel(s, k->wait_word, target, 1, &p, sizeof p);
}

sim_status launch_error(sim_stream s, const test_kernels *k, uint32_t code, uint64_t detail) {
    struct error_params p = {code, 0, detail};
    return sim_launch_kernel(s, k->report_error, SIM_TARGET_AICPU, 1, &p, sizeof p);
}

sim_devptr dev_alloc(size_t size) {
    sim_devptr p = 0;
    if (!CHECK_SIM_OK(sim_malloc(&p, size))) return 0;
    void *zeros = calloc(1, size);
    if (zeros) {
        CHECK_SIM_OK(sim_memcpy(DEVP(p), zeros, size, SIM_COPY_HOST_TO_DEVICE));
        free(zeros);
    }
    return p;
}

void dev_free(sim_devptr p) {
    if (p) CHECK_SIM_OK(sim_free(p));
}

void dev_write(sim_devptr dst, const void *src, size_t size) {
    CHECK_SIM_OK(sim_memcpy(DEVP(dst), src, size, SIM_COPY_HOST_TO_DEVICE));
}

void dev_read(void *dst, sim_devptr src, size_t size) {
    CHECK_SIM_OK(sim_memcpy(dst, DEVP(src), size, SIM_COPY_DEVICE_TO_HOST));
}

uint32_t dev_read_u32(sim_devptr src) {
    uint32_t v = 0xFFFFFFFFu;
    dev_read(&v, src, sizeof v);
    return v;
}

uint32_t dev_peek_u32(sim_devptr src) {
    uint32_t v = 0xFFFFFFFFu;
    CHECK_SIM_OK(sim_atomic_read_u32(src, &v));
    return v;
}

uint32_t log_read(sim_devptr log, uint32_t *values, uint32_t max) {
    uint32_t *buf = calloc(1u + max, sizeof *buf);
    if (!buf) return 0;
    dev_read(buf, log, (1u + max) * sizeof *buf);
    uint32_t n = buf[0];
    memcpy(values, buf + 1, max * sizeof *buf);
    free(buf);
    return n;
}

int hold_kernel(sim_function fn, uint64_t nth) {
    sim_hold h = SIM_HOLD_INIT;
    int id = -1;
    h.kind = SIM_EXEC_KERNEL;
    h.nth = nth;
    h.fn = fn;
    CHECK_SIM_OK(sim_hold_arm(&h, &id));
    return id;
}

int hold_kind(sim_exec_kind kind, uint64_t nth) {
    sim_hold h = SIM_HOLD_INIT;
    int id = -1;
    h.kind = kind;
    h.nth = nth;
    CHECK_SIM_OK(sim_hold_arm(&h, &id));
    return id;
}

void start_blocked_kernel(sim_stream s, sim_stream helper, const test_kernels *k,
                          const probe_kernels *pk, sim_devptr word, sim_devptr scratch,
                          sim_devptr result) {
    struct signal_wait_params p = {scratch, word, 0, 0, UINT64_MAX, result};
    CHECK_SIM_OK(sim_launch_kernel(s, pk->signal_then_wait, SIM_TARGET_AICPU, 1, &p, sizeof p));
    /* The helper's AICPU kernel returns once the blocked kernel has started. */
    CHECK_SIM_OK(
        launch_wait(helper, k, scratch, 0, TEST_WAIT_TIMEOUT_NS, scratch + 4, SIM_TARGET_AICPU));
    CHECK_SIM_OK(sim_stream_synchronize(helper));
    CHECK_EQ(dev_peek_u32(scratch), 1);
    CHECK_EQ(dev_peek_u32(scratch + 4), WAIT_RESULT_OK);
}
