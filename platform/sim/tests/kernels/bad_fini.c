/* A module with a finaliser (DT_FINI, set at link time): the sim's loader
 * must refuse it. */
#include <kctx/sim_kernel.h>

void bad_module_fini(void);
void bad_module_fini(void) {}

SIM_KERNEL(k_bad_fini_noop);
SIM_KERNEL(k_bad_fini_noop) {
    (void)ctx;
    (void)params;
    (void)params_size;
}
