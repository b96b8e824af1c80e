/*
 * double_call.c — the driver doubles' one device program (tests only; a
 * sim kernel module, cmake/SimModules.cmake, target kctx_double_call): every
 * kernel launch of the CUDA double (cuLaunchKernel, platform/cuda/double) and
 * of the ACL double (aclrtLaunchKernel*, platform/acl/double) runs its kernel
 * through kctx_double_call, so that a sim kernel's reported error (the sim's
 * non-fatal kernel failure, which makes a sim stream fail for good) is
 * absorbed the way a CUDA kernel or an Ascend task kernel that records its
 * failure in kctx's device error word and returns normally leaves its
 * stream running: the kernel's own effects are all that remain.
 *
 * Parameter block: the callee's entry (a device address from
 * sim_function_address, 8 bytes), then the callee's own parameter block.
 */
#include <kctx/sim_kernel.h>

#include <stdint.h>

SIM_KERNEL(kctx_double_call) {
    if (!params || params_size < sizeof(uint64_t)) return; /* the double never launches that */
    uint64_t entry;
    __builtin_memcpy(&entry, params, sizeof entry);
    /* the report is captured and dropped: neither runtime has a non-fatal kernel error */
    (void)ctx->svc->call(entry, ctx, (const unsigned char *)params + sizeof entry,
                         params_size - sizeof entry, 0, 0);
}
