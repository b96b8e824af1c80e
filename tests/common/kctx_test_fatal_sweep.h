/*
 * kctx_test_fatal_sweep.h — the per-process fatal sweep below a platform adapter
 * (and, below, K28's destroy paths seen from a driver double)
 * (K29, K30 on a platform whose quarantine is terminal: no device epoch, no
 * owner reset, so the conformance probe driver_fault_sweep_fatal, which
 * recovers with the owner's reset, is N/A there). Shared by the platform
 * test programs that run it (platform/acl/tests/test_acl.c,
 * platform/cuda/tests/test_cuda.c): each has a sweep mode, which runs itself once
 * per call k as a child in a fatal_one mode, which calls ktc_fatal_one.
 */
#ifndef KCTX_TEST_FATAL_SWEEP_H
#define KCTX_TEST_FATAL_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "fault_layer.h"

/* One child: through the failing layer L (kctx's platform `platform`
 * loaded it as its runtime), call k of kernel init (strategy), prepare of
 * `img` and close fails with L's fatal code. Checks: the step answers
 * DEVICE_LOST and the context is quarantined (K29), unless the call came
 * before the context held anything (then it is NEW, destroy succeeds and
 * the device is free) or the adapter absorbed that one failure (then the
 * lifecycle ends OK); quarantined, prepare answers DEVICE_LOST and close
 * DEVICE_LOST, neither making a runtime call, destroy BUSY, and the claim
 * is kept: a new context's init is refused (K30); the layer saw no
 * violation. Prints its own checks' summary. Returns the exit status: 0
 * passed, 1 failed, 3 call k was not reached (the sweep is done). */
int ktc_fatal_one(const char *platform, const kfl_control *L, uint32_t strategy, const void *img,
                  size_t img_size, uint64_t k);

/* The sweep: runs `self args[0] .. args[nargs-1] K` for K = 1, 2, ..., each
 * a child process of its own, until one exits 3 (call K not reached).
 * Returns the number of calls swept; 0 where a child failed or could not
 * be run (said on stdout). */
uint64_t ktc_fatal_sweep(const char *self, const char *const *args, size_t nargs);

/* K28 from the platform's side, on a driver double built on the sim: kctx
 * loads the runtime named by $library_env, whose `served_symbol`
 * (uint64_t (*)(void): the calls it served this thread) and the sim's
 * per-thread count are the rulers. Destroy of a NEW context, of a dead
 * handle, of handle 0, of a READY, a CLOSING (a release failed: the sim's
 * stream destroy), a CLOSED, a rolled-back NEW (the sim's malloc failed)
 * and a QUARANTINED context (last: the device stays lost) each answer as
 * K27 says and are served no call by either; the rulers are first seen to
 * count (kernel init is served). `img`: an image `platform` can prepare. */
void ktc_destroy_paths(const char *platform, const char *library_env, const char *served_symbol,
                       const void *img, size_t img_size);

#endif
