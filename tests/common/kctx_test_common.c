/*
 * kctx_test_common.c — see kctx_test_common.h.
 */
#include "kctx_test_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void set_why(char *why, size_t why_size, const char *what, const char *path, int err) {
    if (why != NULL && why_size > 0)
        snprintf(why, why_size, "%s %s: %s", what, path, err ? strerror(err) : "short read");
}

void *ktc_read_file(const char *path, size_t *size, char *why, size_t why_size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        set_why(why, why_size, "cannot open", path, errno);
        return NULL;
    }
    /* Read to the end rather than trusting a size from fseek/ftell, so
     * that pipes and files that change size are read as they are. */
    size_t len = 0, cap = 0;
    char *buf = NULL;
    for (;;) {
        if (cap - len < 2) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, ncap);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                set_why(why, why_size, "out of memory reading", path, ENOMEM);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
    }
    int err = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (err) {
        free(buf);
        set_why(why, why_size, "cannot read", path, err);
        return NULL;
    }
    buf[len] = '\0';
    if (size != NULL) *size = len;
    return buf;
}

/* ktc_exit_status, ktc_summary and the checks: src/check/kctx_check.c. */
