/*
 * make_trace.c — writes a synthetic trace with kctx's exporter, for the
 * tool tests:  dfx_make_trace known|named|hostile|large OUT.json
 * (synth.h describes them; named is known with the callables' names,
 * hostile the same with names an image could hold but a viewer must not
 * trust: quotes, markup, control characters, bytes that are not UTF-8, a
 * bidirectional override and a 5000-character kernel name).
 */
#include "synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hostile names (tests/dfx/test_trace_tool.py expects exactly these). */
static int write_hostile(const char *path, char *err, size_t errsz) {
    static char *k7[] = {"</text><script>x</script>", "\x01"
                                                      "ctl"};
    char *k9[3] = {"k\"<&>", "\xc3\xa9t\xc3\xa9", NULL};
    k9[2] = malloc(5001);
    if (k9[2] == NULL) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    memset(k9[2], 'k', 5000);
    k9[2][5000] = '\0';
    kctx_dfx_names names[] = {{7, "q\"uote<tag>&amp;\\back", k7, 2},
                              {9,
                               "bad\xff\xfeutf8\x1b[31mred\xe2\x80\xae"
                               "end",
                               k9, 3}};
    synth s;
    synth_known(&s);
    s.t.names = names;
    s.t.nnames = 2;
    int rc = kctx_dfx_write_chrome(path, &s.t, err, errsz);
    free(k9[2]);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s known|named|hostile|large OUT.json\n", argv[0]);
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
    } else if (strcmp(argv[1], "hostile") == 0) {
        rc = write_hostile(argv[2], err, sizeof err);
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
