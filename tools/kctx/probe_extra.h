/*
 * probe_extra.h — kept for tools/kctx/platforms.h only: the tool's own
 * probes (the K4 probe and the init, prepare and close fault sweeps) moved
 * into the conformance library (tests/conformance/probes_lifecycle.c), and
 * the device lifecycle counters they need are now a hook of the framework
 * driver (fw.h, fw_lifecycle). `kctx probe` uses the driver's; a
 * tool_platform's `lifecycle` member is no longer read.
 */
#ifndef KCTX_TOOL_PROBE_EXTRA_H
#define KCTX_TOOL_PROBE_EXTRA_H

#include "suite.h"

#define PROBE_LIFECYCLE_MAX_OPS FW_LIFECYCLE_MAX_OPS
typedef fw_lifecycle probe_lifecycle;

#endif /* KCTX_TOOL_PROBE_EXTRA_H */
