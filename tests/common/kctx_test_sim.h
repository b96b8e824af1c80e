/*
 * kctx_test_sim.h — sim helpers shared by the sim tests and the benchmarks
 * (tests/common, library kctx_test_sim: libkctx_sim and kctx_test_common).
 */
#ifndef KCTX_TESTS_COMMON_SIM_H
#define KCTX_TESTS_COMMON_SIM_H

#include <kctx/sim.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loads a kernel module file with sim_module_load on the calling thread's
 * current device; *status receives the sim's status. The bytes are
 * scribbled over and freed before it returns, so a sim that kept a pointer
 * into them would be caught. Returns 0 when the file was read (whatever the
 * sim said; why holds the sim's message on a failure), -1 when it could not
 * be read (reason in why; *status is SIM_INVALID_VALUE). why may be NULL. */
int ktc_sim_module_load_file(sim_module *module, const char *path, sim_status *status, char *why,
                             size_t why_size);

#ifdef __cplusplus
}
#endif
#endif /* KCTX_TESTS_COMMON_SIM_H */
