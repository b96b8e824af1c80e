/* Invalid: thread-local storage (PT_TLS). */
#include "fixture.h"

static _Thread_local int per_thread;
FIXTURE_EXPORT int fixture_tls_bump(void) { return ++per_thread; }
