/*
 * fake_caps_query.c — the fake platform's benchmark (its declaration's
 * BENCH_DIRS and BENCHMARKS): the time of one capability query of "fake"
 * against one of "sim" (the adapter under the fake name is the sim's, so
 * the ratio is the registry's cost of a fifth platform's lookup: about 1).
 * Prints (docs/benchmarks.md's format):
 *   metric fake_caps_query value=<ns> unit=ns baseline=<ns> ratio=<fake/sim> n=<rounds>
 * --quick: fewer rounds.
 */
#include <kctx/kctx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns per query of `name`, over n queries; -1 when a query fails. */
static double per_query(const char *name, int n) {
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        kctx_platform_caps caps = KCTX_PLATFORM_CAPS_INIT;
        if (kctx_get_platform_caps(name, &caps) != KCTX_OK || !caps.available) return -1;
    }
    return (now_ns() - t0) / n;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int n = quick ? 2000 : 200000;
    double fake = per_query("fake", n), sim = per_query("sim", n);
    if (fake < 0 || sim <= 0) {
        fprintf(stderr, "fake_caps_query: error: a capability query failed: %s\n",
                kctx_thread_last_error());
        return EXIT_FAILURE;
    }
    printf("metric fake_caps_query value=%.1f unit=ns baseline=%.1f ratio=%.3f n=%d\n", fake, sim,
           fake / sim, n);
    return EXIT_SUCCESS;
}
