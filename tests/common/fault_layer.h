/*
 * fault_layer.h — a failing layer below a platform adapter (tests only,
 * never installed): a library that stands in front of a device runtime
 * (the CUDA driver double, the OpenCL ICD loader with PoCL, the ACL double),
 * exports the entries kctx's adapter resolves, and passes each call through
 * to the runtime behind it, so that a test can
 *  - count the calls kctx makes (the calls of "watched" threads: a test
 *    watches its own thread around kctx's entries, so the framework's own
 *    calls, made by the test between them, are neither counted nor failed);
 *  - fail the Nth watched call with a code of the runtime (the runtime is
 *    then not called: the call failed and changed nothing);
 *  - follow every handle: made by a watched call (kctx's) or not (the
 *    framework's); destroyed; named by a later call.
 * Violations it records: a kctx handle destroyed twice, or named by any call
 * after its successful destroy (or after the owner's device reset); a handle
 * kctx did not make destroyed by a watched call (kctx touched the
 * framework's objects). `live` counts kctx's handles not yet destroyed.
 *
 * The layer for one API is a thin file of typed wrappers (the entries, their
 * handle arguments) over this core: platform/cuda/double/fault_layer.c, ...
 * Each exports kctx_fault_layer_control() returning kfl_control_of(...); the
 * framework drivers (src/conformance/fw.h, fault_layer) find it in the
 * library kctx loaded, and read the table it returns
 * (src/conformance/fault_control.h).
 */
#ifndef KCTX_TEST_FAULT_LAYER_H
#define KCTX_TEST_FAULT_LAYER_H

#include <stddef.h>
#include <stdint.h>

/* The control table (kfl_control, kfl_control_fn, KFL_VERSION): declared
 * with the conformance suite that reads it (src/conformance). */
#include "fault_control.h"

/* The kinds of handle the layer follows (for messages). */
typedef enum kfl_kind {
    KFL_STREAM = 1,
    KFL_EVENT,
    KFL_MODULE,
    KFL_MEMORY,
    KFL_OBJECT, /* anything else with a create and a destroy */
} kfl_kind;

/* ---- the core, for the layers' wrappers ------------------------------- */

/* At the top of every wrapper: counts a watched call; returns the code the
 * call must fail with (0: pass it through). */
int kfl_enter(const char *entry);
/* A call made handle h (after the runtime succeeded). */
void kfl_made(uint64_t h, kfl_kind kind, const char *entry);
/* A call names handle h (before passing it through). */
void kfl_use(uint64_t h, const char *entry);
/* A call is about to destroy h: checks it (before passing it through). */
void kfl_destroying(uint64_t h, const char *entry);
/* The destroy of h succeeded (after the runtime): for a reference-counted
 * handle, one reference less; the last makes it gone. */
void kfl_gone(uint64_t h);
/* A call took one more reference to h (a retain; OpenCL). */
void kfl_retain(uint64_t h, const char *entry);
/* The layer's control table (kctx_fault_layer_control returns it): the
 * core's operations with the layer's API name and codes (each layer
 * library links its own copy of the core, so the table is the layer's). */
const kfl_control *kfl_control_of(const char *api, int nonfatal_code, int fatal_code);

#endif
