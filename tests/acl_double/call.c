/*
 * call.c — the ACL driver double's one device program (tests only; a sim
 * kernel module, cmake/SimModules.cmake): every kernel launch of the double
 * (aclrtLaunchKernelWithHostArgs, aclrtLaunchKernel) runs its kernel
 * through kacl_double_call, so that a sim kernel's reported error (the
 * sim's non-fatal kernel failure, which makes a sim stream fail for good)
 * is absorbed the way a task kernel that records its failure in kctx's
 * device error word and returns normally leaves an Ascend stream running.
 *
 * Parameter block: the callee's entry (a device address from
 * sim_function_address, 8 bytes), then the callee's own argument block.
 */
#include <kctx/sim_kernel.h>

#include <stdint.h>

SIM_KERNEL(kacl_double_call) {
    if (!params || params_size < sizeof(uint64_t)) return; /* the double never launches that */
    uint64_t entry;
    __builtin_memcpy(&entry, params, sizeof entry);
    /* the report is dropped: the kernel's own effects are what remain */
    (void)ctx->svc->call(entry, ctx, (const unsigned char *)params + sizeof entry,
                         params_size - sizeof entry, 0, 0);
}
