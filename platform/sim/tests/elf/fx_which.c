/* Built several times with different FIXTURE_WHICH: the same symbol name
 * with different behaviour in each module. */
#include "fixture.h"

FIXTURE_EXPORT int fixture_which(void) { return FIXTURE_WHICH; }
