/*
 * alloc_track.h — host heap accounting by calling library, for the
 * allocation and footprint benchmarks.
 *
 * The executable that links alloc_track.c interposes the C allocator
 * (malloc, calloc, realloc, free, aligned_alloc, posix_memalign, memalign,
 * valloc, pvalloc), forwarding to glibc's __libc_* entry points, and
 * attributes every call to the library its return address lies in:
 * libkctx.so, libkctx_sim.so or anything else. It counts calls per owner
 * and keeps the live bytes of the blocks libkctx and libkctx_sim allocated
 * (a block freed by anyone leaves its owner's live bytes).
 *
 * Limits: an allocation a libc function makes on a library's behalf (say
 * strdup) is attributed to libc, not to the library; memory obtained with
 * mmap is not seen.
 *
 * Sanitizer builds (ASan, TSan) own the allocator: there the interposition
 * is compiled out and at_available() returns 0; the benchmarks then skip
 * their host figures with a note on stderr.
 */
#ifndef KCTX_BENCH_ALLOC_TRACK_H
#define KCTX_BENCH_ALLOC_TRACK_H

#include <stdint.h>

typedef enum at_owner {
    AT_OTHER = 0,
    AT_KCTX = 1,
    AT_SIM = 2,
    AT_OWNERS = 3
} at_owner;

typedef struct at_counts {
    uint64_t allocs[AT_OWNERS]; /* malloc-family calls that returned a block (realloc included) */
    uint64_t frees[AT_OWNERS];  /* free calls with a non-NULL pointer, by the caller's owner */
    int64_t live_bytes[AT_OWNERS]; /* requested bytes of live blocks (AT_KCTX and AT_SIM only) */
    uint64_t live_blocks[AT_OWNERS];
} at_counts;

/* 1 when the interposition is compiled in (not a sanitizer build). */
int at_available(void);
/* Locate libkctx.so and libkctx_sim.so in the process (through dladdr on
 * one of their exported functions) and start attributing. Call once, first
 * thing in main. Returns 0, or -1 (message on stderr) when unavailable or
 * the libraries cannot be found. */
int at_init(void);
/* A consistent copy of the counters. */
void at_snapshot(at_counts *out);
/* Why at_available() is 0 ("AddressSanitizer build", ...). */
const char *at_unavailable_reason(void);

#endif
