/*
 * adapter.c — the fake platform's adapter (tests/platform_fake): the sim's
 * tables under the name "fake", with an availability check of its own. It
 * exists to prove that a platform declared only in its folder is listed,
 * probed and run by code generated from its declaration (platform.cmake).
 */
#include <kctx/fake.h>
#include <kctx/platform.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

const kctx_platform_entry *kctx_sim_platform_entry(void);
const kctx_platform_entry *kctx_fake_platform_entry(void);

static kctx_platform_desc g_desc;
static kctx_platform_entry g_entry;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static uint64_t g_entry_calls; /* kctx_fake_entry_calls (atomic) */

/* Available unless KCTX_FAKE_UNAVAILABLE is set (the test's control). */
static int fake_available(char *why, size_t why_size) {
    const char *off = getenv("KCTX_FAKE_UNAVAILABLE");
    if (off && *off) {
        snprintf(why, why_size, "KCTX_FAKE_UNAVAILABLE is set");
        return 0;
    }
    return 1;
}

static void init(void) {
    const kctx_platform_entry *sim = kctx_sim_platform_entry();
    g_desc = *sim->desc;
    g_desc.name = "fake";
    g_entry = *sim;
    g_entry.name = "fake";
    g_entry.desc = &g_desc;
    g_entry.available = fake_available;
    g_entry.lifecycle = NULL; /* no program mode */
}

const kctx_platform_entry *kctx_fake_platform_entry(void) {
    __atomic_add_fetch(&g_entry_calls, 1, __ATOMIC_RELAXED);
    pthread_once(&g_once, init);
    return &g_entry;
}

uint64_t kctx_fake_entry_calls(void) { return __atomic_load_n(&g_entry_calls, __ATOMIC_RELAXED); }
