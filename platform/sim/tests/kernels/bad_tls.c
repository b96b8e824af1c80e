/* A module with thread-local storage (PT_TLS): the sim's loader must refuse
 * it. */
#include <kctx/sim_kernel.h>

_Thread_local uint32_t bad_tls_counter;

SIM_KERNEL(k_bad_tls);
SIM_KERNEL(k_bad_tls) {
    (void)ctx;
    (void)params;
    (void)params_size;
    bad_tls_counter++;
}
