/*
 * probe_extra.h — the probes `kctx probe` runs after the capture
 * conformance suite's table (tests/conformance/probe_list.h): the
 * zero-lifecycle check (K4) and the fault sweeps of kernel init, prepare
 * and close (K7, K17, K26). They are written like the suite's probes,
 * against its framework driver (fw.h) and support code (support.h), so
 * they run on every platform that has a driver.
 *
 * K4 needs one thing fw.h does not offer: the platform's counters of device
 * lifecycle calls (init, finalize, set device, reset device). A platform
 * that has them describes them with a probe_lifecycle (platforms.c gives
 * the sim's); without one the K4 probe is N/A and says so.
 */
#ifndef KCTX_TOOL_PROBE_EXTRA_H
#define KCTX_TOOL_PROBE_EXTRA_H

#include "suite.h"

#include <stddef.h>
#include <stdint.h>

#define PROBE_LIFECYCLE_MAX_OPS 8

typedef struct probe_lifecycle {
    unsigned nops;
    const char *op_names[PROBE_LIFECYCLE_MAX_OPS]; /* "set device", ... */
    /* The lifecycle calls of each op attributed to `device` so far. */
    int (*counts)(int device, uint64_t *out);
    /* As the device's owner, make one call of every op on purpose (so a
     * probe sees the counters count before it trusts a zero). Called when
     * no object of the probe lives; leaves `device` current for the calling
     * thread. Returns 0, or -1 with a message in why. */
    int (*prove)(int device, char *why, size_t why_size);
} probe_lifecycle;

/* The lifecycle counters of the platform under test; NULL: it has none. */
void probe_extra_set_lifecycle(const probe_lifecycle *lc);

/* The extra probes, in run order. */
const probe_def *probe_extra_probes(size_t *count);

#endif /* KCTX_TOOL_PROBE_EXTRA_H */
