/* A valid sim module: functions only, no initialisers, no TLS, no libc. */
#include "fixture.h"

static int bumps; /* per loaded instance */

FIXTURE_EXPORT int fixture_answer(void) { return 42; }
FIXTURE_EXPORT int fixture_bump(void) { return ++bumps; }
/* A data symbol: simelf_sym looks up functions only. */
FIXTURE_EXPORT extern int fixture_data;
FIXTURE_EXPORT int fixture_data = 7;
/* Not exported. */
int fixture_hidden(void);
int fixture_hidden(void) { return 1; }
