/*
 * probes.h — declarations of the probe functions (probe_list.h), defined in
 * probes_*.c and tabled by suite.c.
 */
#ifndef KCTX_CONFORMANCE_PROBES_H
#define KCTX_CONFORMANCE_PROBES_H

#include "support.h"

#define PROBE(name, rule, threads, needs, summary) void probe_##name(probe *p);
#include "probe_list.h"
#undef PROBE

#endif
