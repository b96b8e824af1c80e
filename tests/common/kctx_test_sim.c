/*
 * kctx_test_sim.c — see kctx_test_sim.h.
 */
#include "kctx_test_sim.h"

#include "kctx_test_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ktc_sim_module_load_file(sim_module *module, const char *path, sim_status *status, char *why,
                             size_t why_size) {
    size_t size = 0;
    *status = SIM_INVALID_VALUE;
    void *bytes = ktc_read_file(path, &size, why, why_size);
    if (bytes == NULL) return -1;
    *status = sim_module_load(module, bytes, size);
    if (*status != SIM_OK && why != NULL && why_size > 0)
        snprintf(why, why_size, "sim_module_load(%s): %s: %s", path, sim_status_name(*status),
                 sim_last_error_message());
    memset(bytes, 0xA5, size);
    free(bytes);
    return 0;
}
