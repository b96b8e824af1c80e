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
struct exclusive_params { uint64_t inside; uint64_t entries; };
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
struct max_inside_params { uint64_t inside; uint64_t max; };
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
