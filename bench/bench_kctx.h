/*
 * bench_kctx.h — the kctx side every kctx benchmark shares (library
 * kctx_bench_kctx: platform/sim/bench/launch/ on the sim, platform/opencl/bench/ on PoCL).
 */
#ifndef KCTX_BENCH_KCTX_H
#define KCTX_BENCH_KCTX_H

#include "bench_util.h"

#include <kctx/kctx.h>

/* Fatal unless s is KCTX_OK; the message names `what` and kctx's detail. */
void kb_kctx_check(kctx_status s, const char *what);
/* kctx_check (must be OK), then close — retried for a while when BUSY
 * because a destroyed graph's lifetime token is released by a platform
 * thread shortly after the destroy — then destroy. */
void kb_kctx_close(kctx_context ctx);

#endif /* KCTX_BENCH_KCTX_H */
