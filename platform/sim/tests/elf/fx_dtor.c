/* Invalid: a destructor (.fini_array, DT_FINI_ARRAYSZ != 0). */
#include "fixture.h"

static volatile int done;
__attribute__((destructor)) static void fixture_dtor(void) { done = 1; }
FIXTURE_EXPORT int fixture_answer(void) { return 42 + done; }
