/*
 * synth.c — the dfx tests' synthetic traces (synth.h).
 */
#include "synth.h"

#include <stdlib.h>
#include <string.h>

static void host(synth *s, uint32_t kind, uint64_t t0, uint64_t t1, uint64_t id, uint64_t launch,
                 uint32_t status, uint64_t thread) {
    s->host[s->t.nhost++] =
        (kctx_dfx_host_span){SYNTH_BASE + t0, SYNTH_BASE + t1, id, launch, kind, status, thread};
}

static void dev(synth *s, uint32_t kind, uint64_t t0, uint64_t t1, uint64_t launch, uint32_t core,
                uint32_t task, uint32_t func_id, uint32_t block) {
    s->dev[s->t.ndev++] = (kctx_rt_trace_rec){
        SYNTH_BASE + t0, SYNTH_BASE + t1, launch, kind, core, task, func_id, block, 0};
}

/* Launch 1 of callable 7 from `at` (its first run starts at 101000). */
static void run_callable7(synth *s, uint64_t at) {
    uint64_t d = at - 101000;
    dev(s, KCTX_RT_TRACE_TASK, 102000 + d, 120000 + d, 1, 0, 0, 0, 0);
    dev(s, KCTX_RT_TRACE_TASK, 102000 + d, 120000 + d, 1, 1, 0, 0, 1);
    dev(s, KCTX_RT_TRACE_TASK, 121000 + d, 140000 + d, 1, 2, 1, 1, 0);
}

void synth_known(synth *s) {
    memset(s, 0, sizeof *s);
    s->t.platform = "sim";
    s->t.context = SYNTH_CONTEXT;
    s->t.device = 0;
    s->t.core_count = SYNTH_CORES;
    s->t.host = s->host;
    s->t.dev = s->dev;
    s->t.host_dropped = 2;
    s->t.dev_dropped = 5;

    host(s, KCTX_DFX_INIT, 0, 50000, 0, 0, 0, 1);
    host(s, KCTX_DFX_PREPARE, 60000, 80000, 7, 0, 0, 1);
    host(s, KCTX_DFX_PREPARE, 80000, 90000, 9, 0, 0, 1);
    host(s, KCTX_DFX_LAUNCH, 100000, 112345, 7, 1, 0, 1);
    host(s, KCTX_DFX_LAUNCH, 200000, 210000, 7, 2, 0, 1);
    host(s, KCTX_DFX_LAUNCH, 300000, 305000, 9, 3, 4 /* KCTX_BUSY */, 7);
    host(s, KCTX_DFX_FLUSH, 800000, 801000, 0, 0, 0, 7);
    host(s, KCTX_DFX_CLOSE, 900000, 950000, 0, 0, 0, 1);

    dev(s, KCTX_RT_TRACE_SCHED, 101000, 150000, 1, UINT32_MAX, 0, 0, 0);
    run_callable7(s, 101000);
    dev(s, KCTX_RT_TRACE_SCHED, 306000, 330000, 3, UINT32_MAX, 0, 0, 0);
    for (uint32_t b = 0; b < 4; b++)
        dev(s, KCTX_RT_TRACE_TASK, 307000, 317000 + 1000 * b, 3, b, 0, 2, b);
    dev(s, KCTX_RT_TRACE_SCHED, 400000, 440000, 1, UINT32_MAX, 0, 0, 0);
    run_callable7(s, 400000);
    dev(s, KCTX_RT_TRACE_REFUSED, 500000, 500500, 2, UINT32_MAX, 0, 0, 0);
}

int synth_large(kctx_dfx_trace *t, uint32_t launches, uint32_t tasks, uint32_t cores) {
    memset(t, 0, sizeof *t);
    kctx_dfx_host_span *h = calloc(launches, sizeof *h);
    kctx_rt_trace_rec *d = calloc((size_t)launches * (tasks + 1), sizeof *d);
    if (h == NULL || d == NULL) {
        free(h);
        free(d);
        return -1;
    }
    uint64_t now = SYNTH_BASE;
    size_t nd = 0;
    for (uint32_t l = 0; l < launches; l++) {
        h[l] = (kctx_dfx_host_span){now, now + 2000, 1, l + 1, KCTX_DFX_LAUNCH, 0, 1};
        uint64_t s0 = now + 2500, c = s0 + 500;
        for (uint32_t k = 0; k < tasks; k++) {
            uint32_t core = k % cores;
            d[nd++] = (kctx_rt_trace_rec){
                c, c + 800 + 10 * (k % 7), l + 1, KCTX_RT_TRACE_TASK, core, k, k % 3, 0, 0};
            if (core == cores - 1) c += 900;
        }
        d[nd++] =
            (kctx_rt_trace_rec){s0, c + 1000, l + 1, KCTX_RT_TRACE_SCHED, UINT32_MAX, 0, 0, 0, 0};
        now = c + 2000;
    }
    t->platform = "sim";
    t->context = SYNTH_CONTEXT;
    t->core_count = cores;
    t->host = h;
    t->nhost = launches;
    t->dev = d;
    t->ndev = nd;
    return 0;
}

void synth_free(kctx_dfx_trace *t) {
    free((void *)t->host);
    free((void *)t->dev);
    memset(t, 0, sizeof *t);
}
