/*
 * Probe kernels for the sim's own tests: they observe the scheduling the
 * sim promises (exclusive graph launches, at most core-count blocks at once).
 * Device addresses travel as uint64_t.
 */
#include <kctx/sim_kernel.h>
#include <stdatomic.h>

#define DEV(T, a) ((T)(uintptr_t)(a))

/* { u64 inside; u64 entries }: *inside += 1; reports error 3 if someone
 * else was inside (an overlapping launch); *entries += 1. */
struct exclusive_params {
    uint64_t inside;
    uint64_t entries;
};
SIM_KERNEL(k_exclusive_enter);
SIM_KERNEL(k_exclusive_enter) {
    const struct exclusive_params *p = params;
    (void)params_size;
    uint32_t before = atomic_fetch_add(DEV(_Atomic uint32_t *, p->inside), 1);
    if (before != 0) ctx->svc->report_error(3, before);
    atomic_fetch_add(DEV(_Atomic uint32_t *, p->entries), 1);
}

/* { u64 inside; u64 entries }: *inside -= 1. */
SIM_KERNEL(k_exclusive_exit);
SIM_KERNEL(k_exclusive_exit) {
    const struct exclusive_params *p = params;
    (void)params_size;
    (void)ctx;
    atomic_fetch_sub(DEV(_Atomic uint32_t *, p->inside), 1);
}

/* { u64 inside; u64 entries }: enter and exit in one kernel. */
SIM_KERNEL(k_exclusive);
SIM_KERNEL(k_exclusive) {
    const struct exclusive_params *p = params;
    (void)params_size;
    uint32_t before = atomic_fetch_add(DEV(_Atomic uint32_t *, p->inside), 1);
    if (before != 0) ctx->svc->report_error(3, before);
    atomic_fetch_add(DEV(_Atomic uint32_t *, p->entries), 1);
    atomic_fetch_sub(DEV(_Atomic uint32_t *, p->inside), 1);
}

/* { u64 inside; u64 max }: counts the blocks running at once and keeps the
 * maximum seen in *max. */
struct max_inside_params {
    uint64_t inside;
    uint64_t max;
};
SIM_KERNEL(k_max_inside);
SIM_KERNEL(k_max_inside) {
    const struct max_inside_params *p = params;
    _Atomic uint32_t *inside = DEV(_Atomic uint32_t *, p->inside);
    _Atomic uint32_t *max = DEV(_Atomic uint32_t *, p->max);
    (void)params_size;
    (void)ctx;
    uint32_t now = atomic_fetch_add(inside, 1) + 1;
    uint32_t seen = atomic_load(max);
    while (now > seen && !atomic_compare_exchange_weak(max, &seen, now)) {
    }
    atomic_fetch_sub(inside, 1);
}

/* { u64 out }: out (u32) = [abi_version, device, core_count, 0], then two
 * u64 readings of the clock service at out + 16. */
struct services_params {
    uint64_t out;
};
SIM_KERNEL(k_services);
SIM_KERNEL(k_services) {
    const struct services_params *p = params;
    (void)params_size;
    uint64_t t0 = ctx->svc->clock_ns();
    uint64_t t1 = ctx->svc->clock_ns();
    uint32_t *o = DEV(uint32_t *, p->out);
    uint64_t *t = DEV(uint64_t *, p->out + 16);
    o[0] = ctx->svc->abi_version;
    o[1] = ctx->device;
    o[2] = ctx->core_count;
    o[3] = 0;
    t[0] = t0;
    t[1] = t1;
}

/* { u32 first; u32 second }: reports two device-side errors in a row (the
 * first report wins). */
struct report_twice_params {
    uint32_t first;
    uint32_t second;
};
SIM_KERNEL(k_report_twice);
SIM_KERNEL(k_report_twice) {
    const struct report_twice_params *p = params;
    (void)params_size;
    ctx->svc->report_error(p->first, 1);
    ctx->svc->report_error(p->second, 2);
}

/* { u64 started; u64 word; u32 expected; u32 pad; u64 timeout_ns;
 *   u64 result }: sets *started = 1 and wakes its waiters (so that another
 * kernel can prove this one is running), then waits until *word !=
 * expected and writes the wait service's return code to *result. */
struct signal_wait_params {
    uint64_t started, word;
    uint32_t expected, pad;
    uint64_t timeout_ns, result;
};
SIM_KERNEL(k_signal_then_wait);
SIM_KERNEL(k_signal_then_wait) {
    const struct signal_wait_params *p = params;
    _Atomic uint32_t *started = DEV(_Atomic uint32_t *, p->started);
    _Atomic uint32_t *w = DEV(_Atomic uint32_t *, p->word);
    int rc = SIM_SVC_OK;
    (void)params_size;
    atomic_store(started, 1);
    ctx->svc->wake_u32((const uint32_t *)started);
    while (atomic_load(w) == p->expected) {
        rc = ctx->svc->wait_u32((const uint32_t *)w, p->expected, p->timeout_ns);
        if (rc != SIM_SVC_OK) break;
    }
    *DEV(uint32_t *, p->result) = (uint32_t)rc;
}
