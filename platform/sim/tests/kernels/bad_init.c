/* A module with an initialiser (DT_INIT, set at link time): the sim's
 * loader must refuse it. */
#include <kctx/sim_kernel.h>

void bad_module_init(void);
void bad_module_init(void) {}

SIM_KERNEL(k_bad_init_noop);
SIM_KERNEL(k_bad_init_noop) {
    (void)ctx;
    (void)params;
    (void)params_size;
}
