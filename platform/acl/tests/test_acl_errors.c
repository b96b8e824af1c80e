/*
 * test_acl_errors.c — the acl adapter's error mapping (acl-platform.md
 * §A.7, docs/acl.md "Error mapping"), class by class, on the ACL driver
 * double (KCTX_ACL_LIBRARY). The adapter's file is compiled into this test
 * (its ops are static), so each code is provoked through the adapter's own
 * op on the double, then classified by the adapter's classify, and its
 * message (last_message) must carry the ACL code and the runtime's text
 * (aclGetRecentErrMsg). Where the double cannot raise a code (207008,
 * 207005: it has no stream or resource limit), the code's class and its
 * message shape are checked directly, and the test says so.
 */
#include "../adapter.c"

#include <kctx/sim.h>

#include "kctx_test_common.h"

#include <dlfcn.h>

#include "kctx_test_check.h"

/* st is `code`, classified `cls`, and the message names it with the
 * double's own text. */
static void expect(int st, int code, kctx_pclass cls, const char *what) {
    CHECK(st == code, "%s: status %d, expected %d (%s)", what, st, code, a_last_message());
    CHECK(classify(st) == cls, "%s: class %d, expected %d", what, (int)classify(st), (int)cls);
    char want[32];
    snprintf(want, sizeof want, "ACL %d", code);
    const char *m = a_last_message();
    CHECK(code < 0 || (strstr(m, want) && strstr(m, "EE9999")),
          "%s: message '%s' lacks '%s' and "
          "the runtime's text",
          what, m, want);
}

static kacl_stream new_stream(void) {
    kctx_pstream s = 0;
    CHECK(a_stream_create(&s) == 0, "stream_create: %s", a_last_message());
    return AS_STREAM(s);
}

int main(void) {
    char why[300];
    CHECK(a_available(why, sizeof why), "available: %s", why);
    if (!loaded()) return ktc_check_summary();
    CHECK(ACL(aclrtGetDevice, &(int32_t){0}) == 0, "a current device");
    kctx_pstream s = (kctx_pstream)(uintptr_t)new_stream();

    /* capture class: 107027 (query of a capturing stream), then 507903 at
     * its end (the query invalidated it) */
    CHECK(ACL(aclmdlRICaptureBegin, AS_STREAM(s), KACL_MODEL_RI_CAPTURE_MODE_GLOBAL) == 0, "begin");
    expect(a_stream_query(s), KACL_ERROR_RT_STREAM_CAPTURED, KCTX_PCLASS_CAPTURE,
           "stream_query in a capture");
    kacl_model m = NULL;
    expect(note(ACL(aclmdlRICaptureEnd, AS_STREAM(s), &m), "aclmdlRICaptureEnd"),
           KACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED, KCTX_PCLASS_CAPTURE,
           "end of an invalidated capture");

    /* capture class: 107024, a wait inside a capture on a record made
     * outside it (K21) */
    kctx_pevent e = 0;
    CHECK(a_event_create(&e) == 0, "event_create: %s", a_last_message());
    kctx_pstream o = (kctx_pstream)(uintptr_t)new_stream();
    CHECK(a_event_record(e, o) == 0, "record outside");
    CHECK(ACL(aclmdlRICaptureBegin, AS_STREAM(s), KACL_MODEL_RI_CAPTURE_MODE_GLOBAL) == 0, "begin");
    expect(a_stream_wait_event(s, e), KACL_ERROR_RT_CAPTURE_DEPENDENCY, KCTX_PCLASS_CAPTURE,
           "wait in a capture on an outside record");

    /* capture mode: 107030, a synchronous copy while a GLOBAL capture
     * restricts the thread; the adapter's word access (RELAXED) is legal */
    kctx_pdevptr w = 0;
    ACL(aclmdlRICaptureEnd, AS_STREAM(s), &m); /* the refused wait left it valid */
    if (m) ACL(aclmdlRIDestroy, m);
    CHECK(a_mem_alloc(256, &w) == 0, "mem_alloc: %s", a_last_message());
    CHECK(ACL(aclmdlRICaptureBegin, AS_STREAM(s), KACL_MODEL_RI_CAPTURE_MODE_GLOBAL) == 0, "begin");
    uint32_t v = 7, got = 0;
    expect(note(ACL(aclrtMemcpy, (void *)(uintptr_t)w, 4, &v, 4, KACL_MEMCPY_HOST_TO_DEVICE),
                "aclrtMemcpy"),
           KACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, KCTX_PCLASS_CAPTURE, "a sync copy under GLOBAL");
    CHECK(a_atomic_write_u32(w, v) == 0 && a_atomic_read_u32(w, &got) == 0 && got == 7,
          "the word access works during the capture (RELAXED): %s", a_last_message());

    /* UNSUPPORTED: 207000, a non-Ex event recorded into a capture */
    kacl_fn_aclrtCreateEventWithFlag nonex = NULL;
    *(void **)&nonex = kctx__loader_sym(&g_ld, "aclrtCreateEventWithFlag");
    kacl_event ne = NULL;
    CHECK(nonex && nonex(&ne, KACL_EVENT_SYNC) == 0, "a non-Ex event");
    expect(a_event_record((kctx_pevent)(uintptr_t)ne, s), KACL_ERROR_RT_FEATURE_NOT_SUPPORT,
           KCTX_PCLASS_UNSUPPORTED, "a non-Ex event recorded into a capture");
    ACL(aclmdlRICaptureEnd, AS_STREAM(s), &m);
    if (m) ACL(aclmdlRIDestroy, m);

    /* OUT_OF_MEMORY: 207001 (device memory) provoked; 207008 and 207005
     * (stream and resource exhaustion, vLLM-Ascend's) cannot be on the
     * double: their class, name and message shape */
    kctx_pdevptr big = 0;
    expect(a_mem_alloc((size_t)1 << 40, &big), KACL_ERROR_RT_MEMORY_ALLOCATION,
           KCTX_PCLASS_NO_MEMORY, "a 1 TiB allocation");
    static const int k_exhausted[] = {KACL_ERROR_RT_NO_STREAM_RESOURCE,
                                      KACL_ERROR_RT_RESOURCE_ALLOC_FAIL};
    for (int i = 0; i < 2; i++) {
        int c = k_exhausted[i];
        (void)note(c, "aclmdlRICaptureEnd");
        char want[64];
        snprintf(want, sizeof want, "%s (ACL %d)", a_status_name(c), c);
        CHECK(classify(c) == KCTX_PCLASS_NO_MEMORY && strstr(a_last_message(), want),
              "%d: class %d, message '%s'", c, (int)classify(c), a_last_message());
    }

    /* INCOMPATIBLE_IMAGE (BAD_MODULE): a module the runtime refuses, a
     * kernel the module lacks */
    unsigned char junk[64] = {0x7f, 'E', 'L', 'F', 1};
    kctx_pmodule mod = 0;
    expect(a_module_load(junk, sizeof junk, &mod), ACLA_BAD_MODULE, KCTX_PCLASS_BAD_MODULE,
           "a 32-bit ELF");
    CHECK(strstr(a_last_message(), "ACL 107000") != NULL, "the code kept: %s", a_last_message());
    CHECK(a_module_load(kctx_rt_elf_programs, kctx_rt_elf_programs_size, &mod) == 0,
          "the runtime programs load on the double: %s", a_last_message());
    kctx_pfunction fn = 0;
    expect(a_module_function(mod, "kctx_no_such_kernel", &fn), ACLA_BAD_MODULE,
           KCTX_PCLASS_BAD_MODULE, "a kernel the module lacks");
    CHECK(a_module_unload(mod) == 0, "unload");

    /* UNSUPPORTED: the runtime refuses kctx's runtime programs */
    setenv("KCTX_ACL_DOUBLE_REFUSE_RT", "1", 1);
    expect(a_module_load(kctx_rt_elf_programs, kctx_rt_elf_programs_size, &mod), ACLA_NO_PROGRAMS,
           KCTX_PCLASS_UNSUPPORTED, "refused runtime programs");
    CHECK(strstr(a_last_message(), "CANN") && strstr(a_last_message(), "ACL 107000"),
          "says what is missing, keeps the code: %s", a_last_message());
    unsetenv("KCTX_ACL_DOUBLE_REFUSE_RT");

    /* TIMEOUT: 507046, a bounded stream wait on held work */
    sim_hold h = SIM_HOLD_INIT;
    h.kind = SIM_EXEC_FILL;
    int hid = -1;
    CHECK(sim_hold_arm(&h, &hid) == SIM_OK, "hold");
    CHECK(a_memset_async(w, 0, 4, s) == 0, "fill");
    expect(a_stream_sync(s, 20), KACL_ERROR_RT_STREAM_SYNC_TIMEOUT, KCTX_PCLASS_TIMEOUT,
           "a 20 ms wait on a held fill");
    sim_hold_release_all();
    CHECK(a_stream_sync(s, 10000) == 0, "drained: %s", a_last_message());

    /* INVALID: the adapter's own refusal (not the current device) */
    kctx_device_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    expect(a_device_info(63, &info), ACLA_INVALID, KCTX_PCLASS_INVALID, "device_info(63)");

    /* the test's objects, before the device is lost */
    CHECK(a_event_destroy(e) == 0 && ACL(aclrtDestroyEvent, ne) == 0 && a_mem_free(w) == 0 &&
              a_stream_destroy(o) == 0 && a_stream_destroy(s) == 0,
          "teardown: %s", a_last_message());

    /* DEVICE_LOST: the device made fatal (507899 from the double) */
    CHECK(sim_device_make_fatal(0) == SIM_OK, "make fatal");
    expect(a_mem_alloc(64, &big), KACL_ERROR_RT_DRV_INTERNAL_ERROR, KCTX_PCLASS_DEVICE_LOST,
           "an allocation on a lost device");
    /* and the other fatal 507xxx codes of §A.7 */
    static const int k_fatal[] = {KACL_ERROR_RT_LOST_HEARTBEAT, KACL_ERROR_RT_AICORE_EXCEPTION,
                                  KACL_ERROR_RT_AICPU_EXCEPTION,
                                  KACL_ERROR_RT_AICPU_INTERNAL_ERROR};
    for (int i = 0; i < 4; i++)
        CHECK(classify(k_fatal[i]) == KCTX_PCLASS_DEVICE_LOST, "%d is fatal", k_fatal[i]);
    return ktc_check_summary();
}
