/*
 * test_kernels.c — the rule tests' one kernel module (a sim kernel module,
 * cmake/SimModules.cmake), loaded through the double's
 * aclrtBinaryLoadFromData: kacl_test_add adds `value` to the 32-bit word at
 * `addr` once per block (an atomic add), so that a test sees how often a
 * launch, or a model replaying it, ran.
 */
#include <kctx/sim_kernel.h>

#include <stdatomic.h>
#include <stdint.h>

struct add_args {
    uint64_t addr;
    uint32_t value;
    uint32_t pad;
};

SIM_KERNEL(kacl_test_add) {
    (void)ctx;
    if (!params || params_size < sizeof(struct add_args)) return;
    struct add_args a;
    __builtin_memcpy(&a, params, sizeof a);
    atomic_fetch_add((_Atomic uint32_t *)(uintptr_t)a.addr, a.value);
}
