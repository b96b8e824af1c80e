/*
 * fake.h — the fake platform's public header (tests/platform_fake): a
 * platform's own API beside kctx.h, declared by its folder alone
 * (platform.cmake: PUBLIC_HEADERS include/kctx/fake.h). The fake's libkctx
 * (kctx_fakeplat) exports it and has its folder's include/ on its public
 * include path, as the tree's libkctx does for platform/<name>/include.
 */
#ifndef KCTX_FAKE_H
#define KCTX_FAKE_H

#include <kctx/kctx.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How many times the registry (or anyone) asked for the fake platform's
 * entry in this process: 0 until the first use of the platform "fake". */
KCTX_API uint64_t kctx_fake_entry_calls(void);

#ifdef __cplusplus
}
#endif

#endif /* KCTX_FAKE_H */
