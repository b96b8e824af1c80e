/*
 * hand_kernels.cu — the kernels of cuda_launch_overhead on a GPU
 * (platform/cuda/bench): the callables' task kernels (t_noop, t_vadd_f32, with
 * kctx/cuda.h's task ABI, the entries the sim test kernels have) and the
 * hand chain's kernels, each taking its parameter block by value at the
 * size the chain passes (the acquire and finalize steps: 24 bytes; a task's
 * header: 32 bytes, + 8 per binding). On the CUDA driver double the
 * benchmark uses the sim test kernels instead (the double runs no CUDA
 * code).
 */
#include <kctx/cuda.h>

struct hand_step_block {
    unsigned long long w[3];
};
struct hand_task0_block {
    unsigned long long w[4];
};
struct hand_task4_block {
    unsigned long long w[8];
};

extern "C" __global__ void hand_step(hand_step_block p) { (void)p; }
extern "C" __global__ void hand_task0(hand_task0_block p) { (void)p; }
extern "C" __global__ void hand_task4(hand_task4_block p) { (void)p; }

KCTX_CUDA_TASK(t_noop) {
    (void)arg;
    (void)nargs;
    return 0;
}

/* (a, b, c: tensor; n: scalar): c = a + b over n floats */
KCTX_CUDA_TASK(t_vadd_f32) {
    if (nargs != 4) return 1;
    const float *a = (const float *)(uintptr_t)arg[0];
    const float *b = (const float *)(uintptr_t)arg[1];
    float *c = (float *)(uintptr_t)arg[2];
    const uint64_t n = arg[3];
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
    return 0;
}
