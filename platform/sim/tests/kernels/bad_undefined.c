/* A module that calls a function nothing defines: the sim's loader must
 * refuse it (unresolvable symbol). */
#include <kctx/sim_kernel.h>

void kctx_sim_test_symbol_nobody_defines(void);

SIM_KERNEL(k_bad_undefined);
SIM_KERNEL(k_bad_undefined) {
    (void)ctx;
    (void)params;
    (void)params_size;
    kctx_sim_test_symbol_nobody_defines();
}
