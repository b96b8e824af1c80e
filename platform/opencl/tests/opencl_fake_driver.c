/*
 * opencl_fake_driver.c — the opencl platform over OpenCL libraries no real
 * machine here has (fake_opencl.c, through KCTX_OPENCL_LIBRARY):
 *
 *   opencl_fake_driver no-svm       a device without fine-grained SVM:
 *                                   kctx_opencl_bind is UNSUPPORTED with
 *                                   the reason; nothing is lent
 *   opencl_fake_driver old-library  a library without clSVMAlloc: the
 *                                   platform is unavailable, the reason
 *                                   names the missing entry
 */
#include <kctx/kctx.h>
#include <kctx/opencl.h>

#include "kctx_test_check.h"
#include "kctx_test_common.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK(kctx_get_platform_caps("opencl", &caps) == KCTX_OK, "the caps query answers");
    printf("     reason: '%s'\n", caps.reason ? caps.reason : "(null)");
    if (strcmp(mode, "no-svm") == 0) {
        CHECK(caps.built && caps.available, "the fake library loads: available");
        int dev = -7;
        kctx_status st = kctx_opencl_bind((struct _cl_context *)(uintptr_t)0x1000,
                                          (struct _cl_device_id *)(uintptr_t)0x2000, &dev);
        printf("     bind: %s\n", kctx_thread_last_error());
        CHECK(st == KCTX_UNSUPPORTED, "a device without fine-grained SVM: UNSUPPORTED");
        CHECK(strstr(kctx_thread_last_error(), "fine-grained") != NULL, "the message says why");
        CHECK(dev == -7, "no number given");
        CHECK(kctx_opencl_bound(NULL, NULL, NULL) == KCTX_INVALID_STATE, "nothing lent");
        /* a context of it: kernel init finds no lent device */
        kctx_context c = 0;
        CHECK(kctx_context_create("opencl", &c) == KCTX_OK, "a context can be created");
        kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
        CHECK(kctx_kernel_init(c, &cfg) != KCTX_OK &&
                  strstr(kctx_thread_last_error(), "kctx_opencl_bind") != NULL,
              "kernel init without a lent device is refused, naming the way out");
        CHECK(kctx_destroy(c) == KCTX_OK, "and destroyed");
    } else if (strcmp(mode, "old-library") == 0) {
        CHECK(caps.built && !caps.available, "built, not available");
        CHECK(caps.reason && strstr(caps.reason, "clSVMAlloc") != NULL,
              "the reason names the missing entry");
    } else {
        printf("usage: %s no-svm|old-library (with KCTX_OPENCL_LIBRARY set)\n", argv[0]);
        return 2;
    }
    return ktc_check_summary();
}
