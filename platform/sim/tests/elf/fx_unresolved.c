/* Passes the container check but references a function nobody defines:
 * RTLD_NOW must fail. */
#include "fixture.h"

extern int kctx_elf_fixture_missing(void);
FIXTURE_EXPORT int fixture_calls_missing(void) { return kctx_elf_fixture_missing() + 1; }
