/* Invalid: a constructor (.init_array, DT_INIT_ARRAYSZ != 0). The store is
 * volatile so that no compiler evaluates the constructor at build time
 * (clang's optimiser removes a constructor that only sets a constant). */
#include "fixture.h"

static volatile int ready;
__attribute__((constructor)) static void fixture_ctor(void) { ready = 1; }
FIXTURE_EXPORT int fixture_answer(void) { return ready ? 42 : 0; }
