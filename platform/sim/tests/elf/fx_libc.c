/* Invalid: linked as an ordinary shared object, with the C runtime's start
 * files (DT_INIT / DT_FINI from crti.o) and libc. */
#include "fixture.h"
#include <string.h>

FIXTURE_EXPORT size_t fixture_strlen(const char *s) { return strlen(s); }
