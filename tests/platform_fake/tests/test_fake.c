/*
 * test_fake.c — the fake platform's own test (its declaration's TEST_DIRS):
 * a test program of a platform folder, built against the platform's public
 * header (<kctx/fake.h>, found through the fake libkctx's public include
 * path) and run by ctest like any platform's tests.
 *
 * Checks: before any use the entry was never asked for; the capability
 * query of "fake" answers available (the registry asks for the entry, and
 * the header's counter shows it); a context on it is created and destroyed.
 */
#include "kctx_test_check.h"
#include "kctx_test_common.h"

#include <kctx/fake.h>
#include <kctx/kctx.h>

#include <stdio.h>
#include <stdlib.h>

int main(void) {
    uint64_t before = kctx_fake_entry_calls();
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    kctx_status st = kctx_get_platform_caps("fake", &caps);
    CHECK(st == KCTX_OK, "kctx_get_platform_caps(fake): %s", kctx_thread_last_error());
    CHECK(caps.available, "the fake platform is available (%s)", caps.note ? caps.note : "");
    CHECK(kctx_fake_entry_calls() > before,
          "the registry asked for the fake's entry (%llu -> %llu)", (unsigned long long)before,
          (unsigned long long)kctx_fake_entry_calls());
    kctx_context c = 0;
    st = kctx_context_create("fake", &c);
    CHECK(st == KCTX_OK && c != 0, "kctx_context_create(fake): %s", kctx_thread_last_error());
    if (c != 0) CHECK(kctx_destroy(c) == KCTX_OK, "destroy: %s", kctx_thread_last_error());
    printf("platform fake: its own test: %s\n", ktc_checks_failed() ? "FAILED" : "passed");
    return ktc_check_summary();
}
