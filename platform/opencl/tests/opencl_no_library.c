/*
 * opencl_no_library.c — the opencl platform where OpenCL cannot be loaded
 * (ctest kctx_opencl_no_library runs it with KCTX_OPENCL_LIBRARY naming a
 * missing file): the platform is built but unavailable, with the reason; a
 * context of it is refused with that reason; kctx/opencl.h's functions say
 * UNSUPPORTED. Nothing crashes, and libkctx itself loads (it does not link
 * OpenCL).
 */
#include <kctx/kctx.h>
#include <kctx/opencl.h>

#include "kctx_test_check.h"
#include "kctx_test_common.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK(kctx_get_platform_caps("opencl", &caps) == KCTX_OK, "the caps query answers");
    if (caps.available) {
        FAIL("the OpenCL library loads here: run with KCTX_OPENCL_LIBRARY naming a missing file");
        return ktc_check_summary();
    }
    CHECK(caps.built && !caps.available, "built, not available");
    CHECK(caps.reason && strstr(caps.reason, "not installed or not loadable") != NULL,
          "the reason says the library does not load");
    printf("     reason: %s\n", caps.reason ? caps.reason : "(null)");
    kctx_context c = 0;
    kctx_status st = kctx_context_create("opencl", &c);
    CHECK(st != KCTX_OK && c == 0, "a context of it is refused");
    CHECK(strstr(kctx_thread_last_error(), "not loadable") != NULL, "with the reason");
    printf("     create: %s\n", kctx_thread_last_error());
    int dev = -1;
    CHECK(kctx_opencl_bind_queue((struct _cl_command_queue *)&caps, &dev) == KCTX_UNSUPPORTED &&
              dev == -1,
          "kctx_opencl_bind_queue: UNSUPPORTED, touching nothing");
    CHECK(kctx_opencl_bind((struct _cl_context *)&caps, (struct _cl_device_id *)&caps, &dev) ==
              KCTX_UNSUPPORTED,
          "kctx_opencl_bind: UNSUPPORTED");
    uint64_t n = 77;
    CHECK(kctx_opencl_driver_calls("clFlush", &n) == KCTX_UNSUPPORTED && n == 77,
          "kctx_opencl_driver_calls: UNSUPPORTED, touching nothing");
    /* the sim is unaffected */
    CHECK(kctx_context_create("sim", &c) == KCTX_OK && kctx_destroy(c) == KCTX_OK,
          "the sim still works");
    return ktc_check_summary();
}
