/*
 * kctx_test_fatal_sweep.c — the per-process fatal sweep below a platform adapter
 * (kctx_test_fatal_sweep.h says what it checks). Its checks count in this
 * translation unit (kctx_test_check.h): ktc_fatal_one prints their summary.
 */
#include "kctx_test_fatal_sweep.h"

#include <kctx/kctx.h>
#include <kctx/sim.h>

#include "kctx_test_common.h"

#include <dlfcn.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "kctx_test_check.h"

/* The call just made (st) by a step is refused DEVICE_LOST, with no call
 * of the runtime (K29, K30). */
static void refused_without_a_call(kctx_status st, uint64_t made, const char *api, uint64_t k,
                                   const char *fired, const char *what) {
    CHECK(st == KCTX_DEVICE_LOST, "call %llu (%s): %s of a quarantined context: %s (K29, K30)",
          (unsigned long long)k, fired, what, kctx_status_name(st));
    CHECK(made == 0, "call %llu (%s): %s of a quarantined context made %llu %s call(s) (K30)",
          (unsigned long long)k, fired, what, (unsigned long long)made, api);
}

/* A new context's kernel init on the device (its calls watched). */
static kctx_status init_another(const char *platform, const kfl_control *L, uint32_t strategy,
                                kctx_context *d) {
    CHECK_K(kctx_context_create(platform, d), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = strategy;
    L->watch(1);
    kctx_status st = kctx_kernel_init(*d, &cfg);
    L->watch(0);
    return st;
}

int ktc_fatal_one(const char *platform, const kfl_control *L, uint32_t strategy, const void *img,
                  size_t img_size, uint64_t k) {
    kctx_context c = 0;
    CHECK_K(kctx_context_create(platform, &c), KCTX_OK);
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    cfg.strategy = strategy;
    L->reset();
    L->arm(k, L->fatal_code);
    L->watch(1);
    const char *step = "kernel init";
    kctx_status st = kctx_kernel_init(c, &cfg);
    if (st == KCTX_OK) step = "prepare", st = kctx_prepare(c, 1, img, img_size);
    if (st == KCTX_OK) step = "close", st = kctx_close(c);
    L->watch(0);
    char fired[100];
    snprintf(fired, sizeof fired, "%s", L->fired());
    L->arm(0, 0);
    if (!fired[0]) {
        CHECK_K(kctx_destroy(c), KCTX_OK);
        return ktc_check_summary() ? 1 : 3;
    }
    kctx_status lost = KCTX_OK;
    (void)kctx_runtime_error(c, &lost, NULL, 0);
    printf("call %llu (%s) fatal: %s answers %s, runtime error %s\n", (unsigned long long)k, fired,
           step, kctx_status_name(st), kctx_status_name(lost));
    if (lost == KCTX_DEVICE_LOST) {
        CHECK(st == KCTX_DEVICE_LOST, "call %llu (%s): %s answers %s, not DEVICE_LOST (K29)",
              (unsigned long long)k, fired, step, kctx_status_name(st));
        kctx_phase ph = KCTX_PHASE_NEW;
        (void)kctx_get_phase(c, &ph);
        CHECK(ph == KCTX_PHASE_QUARANTINED, "call %llu (%s): phase %s, not QUARANTINED (K29)",
              (unsigned long long)k, fired, kctx_phase_name(ph));
        uint64_t before = L->calls();
        L->watch(1);
        st = kctx_prepare(c, 2, img, img_size);
        L->watch(0);
        refused_without_a_call(st, L->calls() - before, L->api, k, fired, "prepare");
        before = L->calls();
        L->watch(1);
        st = kctx_close(c);
        L->watch(0);
        refused_without_a_call(st, L->calls() - before, L->api, k, fired, "close");
        CHECK_K(kctx_destroy(c), KCTX_BUSY);
        /* the claim is kept: a new context cannot take the device */
        kctx_context d = 0;
        st = init_another(platform, L, strategy, &d);
        CHECK(st != KCTX_OK,
              "call %llu (%s): a new context's init succeeds beside a quarantined "
              "one (K30: the claim is kept)",
              (unsigned long long)k, fired);
    } else if (st == KCTX_DEVICE_LOST) {
        /* lost before the context held anything (the claim not taken):
         * nothing to quarantine; the device is free */
        kctx_phase ph = KCTX_PHASE_READY;
        (void)kctx_get_phase(c, &ph);
        CHECK(ph == KCTX_PHASE_NEW,
              "call %llu (%s): %s answers DEVICE_LOST, phase %s, not "
              "quarantined (K29)",
              (unsigned long long)k, fired, step, kctx_phase_name(ph));
        CHECK_K(kctx_destroy(c), KCTX_OK);
        kctx_context d = 0;
        CHECK_K(init_another(platform, L, strategy, &d), KCTX_OK);
        L->watch(1);
        CHECK_K(kctx_close(d), KCTX_OK);
        L->watch(0);
        CHECK_K(kctx_destroy(d), KCTX_OK);
        CHECK(L->live() == 0, "call %llu (%s): %llu handle(s) kctx made are still alive",
              (unsigned long long)k, fired, (unsigned long long)L->live());
    } else {
        /* the adapter absorbed the one failure: nothing failed */
        CHECK(st == KCTX_OK, "call %llu (%s): %s answers %s, neither DEVICE_LOST nor OK (K29)",
              (unsigned long long)k, fired, step, kctx_status_name(st));
        kctx_phase ph = KCTX_PHASE_NEW;
        (void)kctx_get_phase(c, &ph);
        L->watch(1);
        if (ph != KCTX_PHASE_NEW && ph != KCTX_PHASE_CLOSED) CHECK_K(kctx_close(c), KCTX_OK);
        L->watch(0);
        CHECK_K(kctx_destroy(c), KCTX_OK);
        CHECK(L->live() == 0, "call %llu (%s): %llu handle(s) kctx made are still alive",
              (unsigned long long)k, fired, (unsigned long long)L->live());
    }
    char first[400];
    uint64_t v = L->violations(first, sizeof first);
    CHECK(v == 0, "call %llu (%s): %llu violation(s) below the adapter; first: %s",
          (unsigned long long)k, fired, (unsigned long long)v, first);
    return ktc_check_summary();
}

uint64_t ktc_fatal_sweep(const char *self, const char *const *args, size_t nargs) {
    enum {
        MAX_ARGS = 8
    };
    if (nargs > MAX_ARGS) {
        printf("FAIL ktc_fatal_sweep: %zu arguments, at most %d\n", nargs, MAX_ARGS);
        return 0;
    }
    for (uint64_t k = 1; k < 1000; k++) {
        char ks[32];
        snprintf(ks, sizeof ks, "%llu", (unsigned long long)k);
        char *argv[MAX_ARGS + 3] = {(char *)self};
        for (size_t i = 0; i < nargs; i++) argv[1 + i] = (char *)args[i];
        argv[1 + nargs] = ks;
        extern char **environ;
        pid_t pid = 0;
        int wst = 0;
        if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0 ||
            waitpid(pid, &wst, 0) != pid) {
            printf("FAIL ktc_fatal_sweep: cannot run %s %s\n", self, nargs ? args[0] : "");
            return 0;
        }
        const int code = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128;
        if (code == 3) return k - 1;
        if (code != 0) {
            printf("FAIL ktc_fatal_sweep: call %llu: the child exits %d\n", (unsigned long long)k,
                   code);
            return 0;
        }
    }
    printf("FAIL ktc_fatal_sweep: call 999 still reached\n");
    return 0;
}

/* ---- K28's destroy paths (ktc_destroy_paths) ------------------------------ */

static uint64_t (*g_served)(void); /* the double's served-calls count */

static void destroy_calls_nothing(kctx_context c, kctx_status want, const char *what) {
    uint64_t d0 = g_served(), s0 = sim_thread_calls(SIM_OP_ANY);
    kctx_status st = kctx_destroy(c);
    uint64_t d = g_served() - d0, s = sim_thread_calls(SIM_OP_ANY) - s0;
    CHECK(st == want, "K28: destroy of %s: %s, expected %s", what, kctx_status_name(st),
          kctx_status_name(want));
    CHECK(d == 0, "K28: destroy of %s: the driver double served it %llu calls", what,
          (unsigned long long)d);
    CHECK(s == 0, "K28: destroy of %s: the sim under the double served it %llu calls", what,
          (unsigned long long)s);
}

static kctx_phase phase_of(kctx_context c) {
    kctx_phase ph = KCTX_PHASE_NEW;
    CHECK_K(kctx_get_phase(c, &ph), KCTX_OK);
    return ph;
}

/* A sim fault on this thread's next call of `op` (the double's entries run
 * on the sim: the runtime call built on it fails). */
static void sim_fault_once(int op) {
    sim_fault f = SIM_FAULT_INIT;
    f.op = op;
    f.this_thread_only = 1;
    int id = -1;
    CHECK(sim_fault_arm(&f, &id) == SIM_OK, "sim_fault_arm: %s", sim_last_error_message());
}

void ktc_destroy_paths(const char *platform, const char *library_env, const char *served_symbol,
                       const void *img, size_t img_size) {
    kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
    CHECK_K(kctx_get_platform_caps(platform, &caps), KCTX_OK); /* loads the runtime */
    const char *path = getenv(library_env);
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (lib) *(void **)&g_served = dlsym(lib, served_symbol);
    CHECK(g_served != NULL, "the double's served-calls hook %s (%s=%s)", served_symbol, library_env,
          path ? path : "(unset)");
    if (!g_served) return;
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;

    /* NEW, then its dead handle, and a handle that was never issued */
    kctx_context c = 0;
    CHECK_K(kctx_context_create(platform, &c), KCTX_OK);
    destroy_calls_nothing(c, KCTX_OK, "a NEW context");
    destroy_calls_nothing(c, KCTX_INVALID_HANDLE, "a destroyed handle");
    destroy_calls_nothing(0, KCTX_INVALID_HANDLE, "handle 0");

    /* the rulers count (before trusting a zero): kernel init is served */
    CHECK_K(kctx_context_create(platform, &c), KCTX_OK);
    uint64_t d0 = g_served(), s0 = sim_thread_calls(SIM_OP_ANY);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
    CHECK(g_served() > d0 && sim_thread_calls(SIM_OP_ANY) > s0,
          "kernel init: %llu runtime calls, %llu sim calls", (unsigned long long)(g_served() - d0),
          (unsigned long long)(sim_thread_calls(SIM_OP_ANY) - s0));
    CHECK_K(kctx_prepare(c, 1, img, img_size), KCTX_OK);
    destroy_calls_nothing(c, KCTX_BUSY, "a READY context");
    /* CLOSING: a release fails (the stream destroy, on the sim's) */
    sim_fault_once(SIM_OP_STREAM_DESTROY);
    CHECK(kctx_close(c) != KCTX_OK, "close with a failing release");
    sim_fault_clear_all();
    CHECK(phase_of(c) == KCTX_PHASE_CLOSING, "phase %s", kctx_phase_name(phase_of(c)));
    destroy_calls_nothing(c, KCTX_BUSY, "a CLOSING context");
    CHECK_K(kctx_close(c), KCTX_OK);
    destroy_calls_nothing(c, KCTX_OK, "a CLOSED context");

    /* NEW after a rolled-back init (the allocation fails, on the sim's malloc) */
    CHECK_K(kctx_context_create(platform, &c), KCTX_OK);
    sim_fault_once(SIM_OP_MALLOC);
    CHECK(kctx_kernel_init(c, &cfg) != KCTX_OK, "init with a failing allocation");
    sim_fault_clear_all();
    CHECK(phase_of(c) == KCTX_PHASE_NEW, "phase %s", kctx_phase_name(phase_of(c)));
    destroy_calls_nothing(c, KCTX_OK, "a NEW context after a rollback");

    /* QUARANTINED (last: the device stays lost; no epoch on these platforms, K30) */
    CHECK_K(kctx_context_create(platform, &c), KCTX_OK);
    CHECK_K(kctx_kernel_init(c, &cfg), KCTX_OK);
    CHECK(sim_device_make_fatal(0) == SIM_OK, "sim_device_make_fatal");
    CHECK_K(kctx_prepare(c, 1, img, img_size), KCTX_DEVICE_LOST);
    CHECK(phase_of(c) == KCTX_PHASE_QUARANTINED, "phase %s", kctx_phase_name(phase_of(c)));
    destroy_calls_nothing(c, KCTX_BUSY, "a QUARANTINED context");
}
