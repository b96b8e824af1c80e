/*
 * embed.c — the smallest program that uses an installed kctx: create a
 * context on the simulated accelerator, make it a kernel context, close it
 * and destroy it. Built against an installed tree with pkg-config
 * (Makefile) or with CMake's find_package(kctx) (CMakeLists.txt); see
 * README.md and docs/building.md, "Installing and using the library".
 */
#include <kctx/kctx.h>

#include <stdio.h>

static int check(const char *what, kctx_status s) {
    if (s == KCTX_OK) return 1;
    fprintf(stderr, "embed: %s: %s (%s)\n", what, kctx_status_name(s), kctx_thread_last_error());
    return 0;
}

int main(void) {
    kctx_context ctx = 0;
    if (!check("kctx_context_create", kctx_context_create("sim", &ctx))) return 1;
    kctx_kernel_config cfg = KCTX_KERNEL_CONFIG_INIT;
    kctx_status init = kctx_kernel_init(ctx, &cfg);
    kctx_phase phase = KCTX_PHASE_NEW;
    int ok =
        check("kctx_kernel_init", init) && check("kctx_get_phase", kctx_get_phase(ctx, &phase));
    if (ok)
        printf("embed: kctx %d: a kernel context on the sim, phase %s\n", kctx_version(),
               kctx_phase_name(phase));
    ok = check("kctx_close", kctx_close(ctx)) && ok;
    ok = check("kctx_destroy", kctx_destroy(ctx)) && ok;
    if (ok) printf("embed: closed and destroyed\n");
    return ok ? 0 : 1;
}
