/* fixture.h — the functions exported by the loader test's fixture modules. */
#ifndef KCTX_ELF_FIXTURE_H
#define KCTX_ELF_FIXTURE_H
#include <stddef.h>

#define FIXTURE_EXPORT __attribute__((visibility("default")))

FIXTURE_EXPORT int fixture_answer(void);        /* 42 */
FIXTURE_EXPORT int fixture_bump(void);          /* 1, 2, ... per loaded instance */
FIXTURE_EXPORT int fixture_which(void);         /* FIXTURE_WHICH of the build */
FIXTURE_EXPORT int fixture_calls_missing(void); /* calls an undefined function */
FIXTURE_EXPORT int fixture_tls_bump(void);      /* uses _Thread_local */
FIXTURE_EXPORT size_t fixture_strlen(const char *s);
#endif
