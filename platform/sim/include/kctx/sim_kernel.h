/*
 * kctx/sim_kernel.h — the kernel ABI of the simulated accelerator.
 *
 * A sim kernel is a function with external linkage in an ELF shared object
 * (a "module") built for the sim:
 *
 *     #include <kctx/sim_kernel.h>
 *     SIM_KERNEL(vector_add) {
 *         const struct my_params *p = params;      // copied at enqueue
 *         ... ctx->block_idx, ctx->block_dim ...
 *     }
 *
 * Rules for module code (the loader enforces the first two):
 *  - no initialisers or finalisers (constructors, destructors, init/fini
 *    arrays) and no thread-local storage;
 *  - no libc: kernels talk to the device only through `ctx->svc`;
 *  - device memory shared between kernels that run at the same time is
 *    accessed with C11 atomics; kernels that wait for each other wait
 *    through svc->wait_u32 (they block; never spin: the host may have two
 *    cores).
 */
#ifndef KCTX_SIM_KERNEL_H
#define KCTX_SIM_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIM_KERNEL_ABI_VERSION 1u

/* Return values of the services (a subset of sim_status values). */
#define SIM_SVC_OK 0
#define SIM_SVC_DEVICE_LOST 5
#define SIM_SVC_TIMEOUT 8

struct sim_kernel_ctx;
typedef struct sim_kernel_services {
    uint32_t abi_version; /* SIM_KERNEL_ABI_VERSION */
    uint32_t reserved;
    /* Block until *word != expected, or a wake on `word`, or timeout_ns
     * elapsed (UINT64_MAX: no timeout). Returns SIM_SVC_OK when the value
     * differs or a wake arrived (callers re-check), SIM_SVC_TIMEOUT, or
     * SIM_SVC_DEVICE_LOST when the device is lost or being reset (the
     * kernel should return). `word` must be a 4-byte aligned device word. */
    int (*wait_u32)(const uint32_t *word, uint32_t expected, uint64_t timeout_ns);
    /* Wake every kernel waiting on `word`. */
    void (*wake_u32)(const uint32_t *word);
    /* Report a device-side error: once the kernel returns, its stream (or
     * graph replay) fails with SIM_KERNEL_ERROR; `code` and `detail` are
     * kept for the host's error message. The first report wins. */
    void (*report_error)(uint32_t code, uint64_t detail);
    /* Monotonic nanoseconds, the same clock for every core and the host. */
    uint64_t (*clock_ns)(void);
    /* Call another kernel's entry point (a device address from
     * sim_function_address) on this core, with `ctx` describing the block
     * it runs. A device-side error the callee reports is captured and
     * returned instead of failing the caller: returns 0, or 1 with the
     * callee's *code and *detail (either may be NULL). How a runtime's
     * worker runs the kernels of a task graph. */
    int (*call)(uint64_t entry, const struct sim_kernel_ctx *ctx, const void *params,
                size_t params_size, uint32_t *code, uint64_t *detail);
} sim_kernel_services;

typedef struct sim_kernel_ctx {
    uint32_t block_idx;  /* 0 .. block_dim-1 */
    uint32_t block_dim;  /* blocks of this launch (1 on the AICPU) */
    uint32_t core_id;    /* AICore core running the block; UINT32_MAX on the AICPU */
    uint32_t core_count; /* AICore cores of the device */
    uint32_t device;     /* device index */
    uint32_t reserved;
    const sim_kernel_services *svc;
} sim_kernel_ctx;

typedef void (*sim_kernel_fn)(const sim_kernel_ctx *ctx, const void *params, size_t params_size);

/* Declares (so -Wmissing-prototypes is satisfied) and defines an exported
 * kernel entry point. */
#define SIM_KERNEL(name)                                                                      \
    __attribute__((visibility("default"))) void name(const sim_kernel_ctx *ctx,               \
                                                     const void *params, size_t params_size); \
    __attribute__((visibility("default"))) void name(const sim_kernel_ctx *ctx,               \
                                                     const void *params, size_t params_size)

#ifdef __cplusplus
}
#endif
#endif /* KCTX_SIM_KERNEL_H */
