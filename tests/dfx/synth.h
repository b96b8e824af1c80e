/*
 * synth.h — synthetic traces for the dfx tests: a known trace whose every
 * span the tests can predict, and a large one for the picture's merging.
 */
#ifndef KCTX_TESTS_DFX_SYNTH_H
#define KCTX_TESTS_DFX_SYNTH_H

#include "trace.h"

/* The known trace (all times ns from SYNTH_BASE):
 *  host thread 1: init [0, 50000], prepare 7 [60000, 80000],
 *                 prepare 9 [80000, 90000], launch 7 (launch 1)
 *                 [100000, 112345], launch 7 (launch 2) [200000, 210000],
 *                 close [900000, 950000]
 *  host thread 7: launch 9 (launch 3) [300000, 305000] status
 *                 KCTX_BUSY, flush [800000, 801000]
 *  AICPU:         scheduler of launch 1 [101000, 150000], of launch 1
 *                 again (a graph replay) [400000, 440000], of launch 3
 *                 [306000, 330000]; refused replay of launch 2
 *                 [500000, 500500]
 *  cores (4):     launch 1: task 0 f0 blocks 0,1 on cores 0,1
 *                 [102000, 120000]; task 1 f1 block 0 on core 2
 *                 [121000, 140000]; the replay: the same, shifted by
 *                 299000 ns; launch 3: task 0 f2 blocks 0..3 on cores 0..3
 *                 [307000, 317000 + 1000 * block]
 *  dropped:       host 2, device 5
 */
#define SYNTH_BASE UINT64_C(5000000000000)
#define SYNTH_CONTEXT UINT64_C(0x4b43000001000002)
#define SYNTH_CORES 4u

typedef struct synth {
    kctx_dfx_host_span host[16];
    kctx_rt_trace_rec dev[32];
    kctx_dfx_trace t;
} synth;

/* Fill `s` with the known trace; s->t points into s. */
void synth_known(synth *s);

/* A trace of `launches` launches of callable 1, each a scheduler span and
 * `tasks` one-block tasks spread over `cores` cores; malloc'd buffers
 * (synth_free). */
int synth_large(kctx_dfx_trace *t, uint32_t launches, uint32_t tasks, uint32_t cores);
void synth_free(kctx_dfx_trace *t);

#endif
