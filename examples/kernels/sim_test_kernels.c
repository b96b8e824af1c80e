/*
 * Kernels used by the sim's own tests and demo. Each documents its
 * parameter block; device addresses travel as uint64_t.
 */
#include <kctx/sim_kernel.h>
#include <kctx/task_abi.h>
#include <stdatomic.h>

#define DEV(T, a) ((T)(uintptr_t)(a))

/* Does nothing (benchmarks, protocol tests). */
SIM_KERNEL(k_noop) {
    (void)ctx;
    (void)params;
    (void)params_size;
}

/* { u64 buf; u32 n; u32 value }: buf[i] += value for every i, blocks share
 * the range round-robin. */
struct add_u32_params {
    uint64_t buf;
    uint32_t n;
    uint32_t value;
};
SIM_KERNEL(k_add_u32) {
    const struct add_u32_params *p = params;
    if (params_size < sizeof *p) {
        ctx->svc->report_error(1, params_size);
        return;
    }
    uint32_t *b = DEV(uint32_t *, p->buf);
    for (uint32_t i = ctx->block_idx; i < p->n; i += ctx->block_dim) b[i] += p->value;
}

/* { u64 a, b, c; u32 n }: c = a + b (float). */
struct vadd_params {
    uint64_t a, b, c;
    uint32_t n;
    uint32_t pad;
};
SIM_KERNEL(k_vadd_f32) {
    const struct vadd_params *p = params;
    const float *a = DEV(const float *, p->a), *b = DEV(const float *, p->b);
    float *c = DEV(float *, p->c);
    (void)params_size;
    for (uint32_t i = ctx->block_idx; i < p->n; i += ctx->block_dim) c[i] = a[i] + b[i];
}

/* { u64 log; u32 value }: log[0] is an atomic count, log[1 + k] the k-th
 * value appended. Shows execution order. */
struct append_params {
    uint64_t log;
    uint32_t value;
    uint32_t pad;
};
SIM_KERNEL(k_append) {
    const struct append_params *p = params;
    _Atomic uint32_t *cnt = DEV(_Atomic uint32_t *, p->log);
    uint32_t *vals = DEV(uint32_t *, p->log) + 1;
    (void)params_size;
    if (ctx->block_idx != 0) return;
    uint32_t k = atomic_fetch_add(cnt, 1);
    vals[k] = p->value;
}

/* Gang check. { u64 arrived; u64 cores; u64 timeout_ns }: each block
 * records its core id in cores[block_idx], increments *arrived, then waits
 * until every block of the launch has arrived (proves all blocks run at the
 * same time). A block that times out reports error 2. */
struct gang_params {
    uint64_t arrived;
    uint64_t cores;
    uint64_t timeout_ns;
};
SIM_KERNEL(k_gang) {
    const struct gang_params *p = params;
    _Atomic uint32_t *arrived = DEV(_Atomic uint32_t *, p->arrived);
    uint32_t *cores = DEV(uint32_t *, p->cores);
    (void)params_size;
    cores[ctx->block_idx] = ctx->core_id;
    uint32_t now = atomic_fetch_add(arrived, 1) + 1;
    ctx->svc->wake_u32((const uint32_t *)arrived);
    while (now < ctx->block_dim) {
        int rc = ctx->svc->wait_u32((const uint32_t *)arrived, now, p->timeout_ns);
        if (rc == SIM_SVC_TIMEOUT || rc == SIM_SVC_DEVICE_LOST) {
            ctx->svc->report_error(2, now);
            return;
        }
        now = atomic_load(arrived);
    }
}

/* { u64 word; u32 expected; u32 pad; u64 timeout_ns; u64 result }: waits
 * until *word != expected; writes the service's return code to *result. */
struct wait_params {
    uint64_t word;
    uint32_t expected;
    uint32_t pad;
    uint64_t timeout_ns;
    uint64_t result;
};
SIM_KERNEL(k_wait_word) {
    const struct wait_params *p = params;
    _Atomic uint32_t *w = DEV(_Atomic uint32_t *, p->word);
    uint32_t *res = DEV(uint32_t *, p->result);
    int rc = SIM_SVC_OK;
    (void)params_size;
    while (atomic_load(w) == p->expected) {
        rc = ctx->svc->wait_u32((const uint32_t *)w, p->expected, p->timeout_ns);
        if (rc != SIM_SVC_OK) break;
    }
    *res = (uint32_t)rc;
}

/* { u64 word; u32 value }: *word = value, then wakes its waiters. */
struct set_params {
    uint64_t word;
    uint32_t value;
    uint32_t pad;
};
SIM_KERNEL(k_set_word) {
    const struct set_params *p = params;
    _Atomic uint32_t *w = DEV(_Atomic uint32_t *, p->word);
    (void)params_size;
    (void)ctx;
    atomic_store(w, p->value);
    ctx->svc->wake_u32((const uint32_t *)w);
}

/* { u32 code; u32 pad; u64 detail }: reports a device-side error. */
struct error_params {
    uint32_t code;
    uint32_t pad;
    uint64_t detail;
};
SIM_KERNEL(k_report_error) {
    const struct error_params *p = params;
    (void)params_size;
    ctx->svc->report_error(p->code, p->detail);
}

/* { u64 out }: out[block_idx] = ctx fields (block_idx, block_dim, core_id,
 * core_count) as four u32. */
SIM_KERNEL(k_whoami) {
    const uint64_t *p = params;
    uint32_t *out = DEV(uint32_t *, p[0]) + 4u * ctx->block_idx;
    (void)params_size;
    out[0] = ctx->block_idx;
    out[1] = ctx->block_dim;
    out[2] = ctx->core_id;
    out[3] = ctx->core_count;
}

/* ---- task kernels (kctx/task_abi.h) ------------------------------------------
 * The callables of kctx's tests and benchmarks use these: each is the
 * framework kernel above under KCTX_TASK, its bindings being exactly the
 * u64 slots of that kernel's parameter block. */
/* () */
KCTX_TASK(t_noop) {
    (void)ctx;
    (void)arg;
    (void)nargs;
}

/* (buf: tensor; n | value << 32: scalar or immediate) */
KCTX_TASK(t_add_u32) {
    if (nargs < 2) {
        ctx->svc->report_error(1, nargs);
        return;
    }
    k_add_u32(ctx, arg, 2 * sizeof(uint64_t));
}

/* (a, b, c: tensor; n: scalar) */
KCTX_TASK(t_vadd_f32) {
    if (nargs < 4) {
        ctx->svc->report_error(1, nargs);
        return;
    }
    k_vadd_f32(ctx, arg, 4 * sizeof(uint64_t));
}

/* (log: tensor[; value]): appends `value` (0 when not bound) to log */
KCTX_TASK(t_append) {
    if (nargs < 1) {
        ctx->svc->report_error(1, nargs);
        return;
    }
    struct append_params p = {arg[0], nargs > 1 ? (uint32_t)arg[1] : 0u, 0};
    k_append(ctx, &p, sizeof p);
}

/* (code | pad << 32, detail): reports a device-side error */
KCTX_TASK(t_report_error) {
    if (nargs < 2) {
        ctx->svc->report_error(1, nargs);
        return;
    }
    k_report_error(ctx, arg, 2 * sizeof(uint64_t));
}
