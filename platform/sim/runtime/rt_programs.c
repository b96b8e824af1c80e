/*
 * rt_programs.c — the kctx runtime's device programs for the sim: three
 * kernels loaded as one module at kernel init (rule K11's "device
 * programs"): the acquire step and the scheduler on the AICPU, the worker
 * on the AICore cores. Their parameter blocks carry the launch identity by
 * value (see src/core/rt_layout.h).
 *
 * Status: the module is loaded and its entry points resolved at init (issue
 * 4). Launch, which runs them, is issue 5; until then nothing enqueues them,
 * and should anything do so each reports a device-side error instead of
 * pretending to work.
 */
#include <kctx/sim_kernel.h>

#define KCTX_RT_NOT_BUILT 0x4e42u /* "NB" */

SIM_KERNEL(kctx_rt_acquire) {
    (void)params;
    (void)params_size;
    ctx->svc->report_error(KCTX_RT_NOT_BUILT, 1);
}

SIM_KERNEL(kctx_rt_scheduler) {
    (void)params;
    (void)params_size;
    ctx->svc->report_error(KCTX_RT_NOT_BUILT, 2);
}

SIM_KERNEL(kctx_rt_worker) {
    (void)params;
    (void)params_size;
    ctx->svc->report_error(KCTX_RT_NOT_BUILT, 3);
}
