/*
 * make_trace.c — writes a synthetic trace with kctx's exporter, for the
 * tool tests:  dfx_make_trace known|named|large OUT.json
 * (synth.h describes them; named is known with the callables' names).
 */
#include "synth.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s known|named|large OUT.json\n", argv[0]);
        return 2;
    }
    char err[512];
    int rc;
    if (strcmp(argv[1], "known") == 0) {
        synth s;
        synth_known(&s);
        rc = kctx_dfx_write_chrome(argv[2], &s.t, err, sizeof err);
    } else if (strcmp(argv[1], "named") == 0) {
        /* the known trace with the callables' names, as kctx writes them */
        static char *k7[] = {"k_add", "k_scale"}, *k9[] = {"k_a", "k_b", "k_mm"};
        static const kctx_dfx_names names[] = {{7, "vadd_chain", k7, 2}, {9, "matmul", k9, 3}};
        synth s;
        synth_known(&s);
        s.t.names = names;
        s.t.nnames = 2;
        rc = kctx_dfx_write_chrome(argv[2], &s.t, err, sizeof err);
    } else if (strcmp(argv[1], "large") == 0) {
        kctx_dfx_trace t;
        if (synth_large(&t, 2000, 32, 8) != 0) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        rc = kctx_dfx_write_chrome(argv[2], &t, err, sizeof err);
        synth_free(&t);
    } else {
        fprintf(stderr, "unknown trace '%s'\n", argv[1]);
        return 2;
    }
    if (rc != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    return 0;
}
