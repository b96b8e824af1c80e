/*
 * cuda_common.cuh — what the CUDA C example kernels share (kctx/cuda.h's
 * KCTX_CUDA_TASK form): a grid-stride loop over every thread of the task's
 * blocks, and the float carried in a scalar (callable_abi.h's encoding).
 */
#ifndef KCTX_EXAMPLES_CUDA_COMMON_CUH
#define KCTX_EXAMPLES_CUDA_COMMON_CUH
#include <kctx/cuda.h>

#include "callable_abi.h"

/* The calling thread's index among all threads of the task, and their count. */
#define CUDA_GID ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x)
#define CUDA_THREADS ((uint64_t)gridDim.x * blockDim.x)

/* The float whose bit pattern is in the low 32 bits of a scalar. */
__device__ static inline float cuda_f32(uint64_t scalar) { return __uint_as_float((unsigned)scalar); }
#endif
