/*
 * util.c — file and path helpers of the kctx tool.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Images must start 8-byte aligned; malloc's result is aligned for
 * max_align_t, so reading into malloc'd memory is enough. */
_Static_assert(alignof(max_align_t) >= 8, "malloc alignment is below what images need");

static int read_all(int fd, uint64_t max_size, void **out, size_t *out_size) {
    size_t cap = 64 * 1024, len = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if ((uint64_t)st.st_size > max_size) {
            errno = EFBIG;
            return -1;
        }
        cap = (size_t)st.st_size + 1;
    }
    char *buf = malloc(cap);
    if (buf == NULL) return -1;
    for (;;) {
        if (len + 1 >= cap) { /* keep room for the trailing NUL */
            if ((uint64_t)len > max_size) {
                free(buf);
                errno = EFBIG;
                return -1;
            }
            size_t ncap = cap * 2;
            char *nbuf = realloc(buf, ncap);
            if (nbuf == NULL) {
                free(buf);
                return -1;
            }
            buf = nbuf;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0) {
            if (errno == EINTR) continue;
            int saved = errno;
            free(buf);
            errno = saved;
            return -1;
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    if ((uint64_t)len > max_size) {
        free(buf);
        errno = EFBIG;
        return -1;
    }
    buf[len] = '\0';
    *out = buf;
    *out_size = len;
    return 0;
}

int util_read_file(const char *path, uint64_t max_size, void **out, size_t *out_size) {
    if (strcmp(path, "-") == 0) return read_all(STDIN_FILENO, max_size, out, out_size);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = read_all(fd, max_size, out, out_size);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

static int write_all(int fd, const void *data, size_t size) {
    const char *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

int util_write_file_atomic(const char *path, const void *data, size_t size, const char **what) {
    const char *step = "create a temporary file";
    size_t len = strlen(path);
    static const char suffix[] = ".tmp.XXXXXX";
    char *tmp = malloc(len + sizeof suffix);
    if (tmp == NULL) {
        if (what) *what = step;
        return -1;
    }
    memcpy(tmp, path, len);
    memcpy(tmp + len, suffix, sizeof suffix);

    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) goto fail_nofile;

    /* mkstemp creates 0600; give the mode an ordinary open() would. */
    mode_t mask = umask(0);
    umask(mask);
    step = "set the file mode";
    if (fchmod(fd, 0666 & ~mask) != 0) goto fail;
    step = "write";
    if (write_all(fd, data, size) != 0) goto fail;
    step = "flush";
    if (fsync(fd) != 0) goto fail;
    step = "close";
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    step = "rename the temporary file into place";
    if (rename(tmp, path) != 0) goto fail;
    free(tmp);
    return 0;

fail : {
    int saved = errno;
    if (fd >= 0) close(fd);
    unlink(tmp);
    errno = saved;
}
fail_nofile : {
    int saved = errno;
    free(tmp);
    if (what) *what = step;
    errno = saved;
    return -1;
}
}

char *util_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

char *util_dirname(const char *path) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL) return util_strdup(".");
    while (slash > path && slash[-1] == '/') slash--; /* "a//b" -> "a" */
    if (slash == path) return util_strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d == NULL) return NULL;
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

char *util_path_join(const char *dir, const char *name) {
    if (dir == NULL || name[0] == '/') return util_strdup(name);
    size_t dl = strlen(dir), nl = strlen(name);
    int sep = dl > 0 && dir[dl - 1] != '/';
    char *p = malloc(dl + (size_t)sep + nl + 1);
    if (p == NULL) return NULL;
    memcpy(p, dir, dl);
    if (sep) p[dl] = '/';
    memcpy(p + dl + (size_t)sep, name, nl + 1);
    return p;
}
