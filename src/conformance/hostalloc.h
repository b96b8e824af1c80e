/*
 * hostalloc.h — the test executable's counter of host allocation calls
 * made from libkctx (hostalloc.c). Part of the test runner only: a runner
 * that cannot interpose the allocator passes no counter (NULL) and the
 * probe that needs it reports that sub-check as not applicable.
 */
#ifndef KCTX_CONFORMANCE_HOSTALLOC_H
#define KCTX_CONFORMANCE_HOSTALLOC_H

#include "suite.h"

/* Never NULL; ->unavailable says why counting is impossible in this build. */
const probe_host_allocs *hostalloc_counter(void);

#endif
