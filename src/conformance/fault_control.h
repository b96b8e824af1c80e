/*
 * fault_control.h — the control table of a failing layer below a platform
 * adapter, as the conformance suite reads it. The layers themselves are
 * test code (tests/common/fault_layer.h says what one is: a library that
 * stands in front of a device runtime, counts kctx's calls, fails the Nth
 * and follows every handle); each exports kctx_fault_layer_control()
 * returning this table. A framework driver (fw.h, fault_layer) that finds
 * that entry in the library kctx loaded hands the table to the probes
 * (probes_driver.c); where there is none, nothing here is used. Declared
 * here, with the suite, so that the installed code (the suite in `kctx
 * probe`) includes nothing from tests/.
 */
#ifndef KCTX_CONFORMANCE_FAULT_CONTROL_H
#define KCTX_CONFORMANCE_FAULT_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#define KFL_VERSION 1u

typedef struct kfl_control {
    uint32_t version;  /* KFL_VERSION */
    const char *api;   /* "cuda", "opencl", "acl" */
    int nonfatal_code; /* a code that fails one call and nothing else */
    int fatal_code;    /* a code the adapter classifies as a lost device; 0: none */
    /* Forget every handle, count and violation; disarm. */
    void (*reset)(void);
    /* The calling thread's calls are kctx's (1) or not (0). */
    void (*watch)(int on);
    /* Watched calls since reset. */
    uint64_t (*calls)(void);
    /* Fail the nth watched call since reset (1-based) with `code`, once;
     * nth 0 disarms. */
    void (*arm)(uint64_t nth, int code);
    /* The entry that failed ("" while the armed call has not happened). */
    const char *(*fired)(void);
    /* kctx's handles (made by watched calls since reset) not destroyed. */
    uint64_t (*live)(void);
    /* The number of violations since reset, and the first one's text. */
    uint64_t (*violations)(char *first, size_t size);
    /* The device's owner reset it: every handle is gone (a later call
     * naming one of kctx's is a violation). */
    void (*device_reset)(void);
} kfl_control;

/* kctx_fault_layer_control's type (what a driver's dlsym finds). */
typedef const kfl_control *(*kfl_control_fn)(void);

#endif
