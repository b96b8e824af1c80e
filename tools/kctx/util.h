/*
 * util.h — file and path helpers of the kctx tool.
 *
 * Functions that can fail return 0 on success and -1 on failure with errno
 * set (util_read_file, util_write_file_atomic), so callers compose their
 * own messages with strerror(errno).
 */
#ifndef KCTX_TOOL_UTIL_H
#define KCTX_TOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Read a whole file ("-" reads stdin) into malloc'd memory. The buffer is
 * aligned for any object type (so at least 8 bytes, as images need) and
 * has one extra NUL byte after the contents. Files above `max_size` bytes
 * fail with EFBIG. Free with free(). */
int util_read_file(const char *path, uint64_t max_size, void **out, size_t *out_size);

/* Write `size` bytes to `path` atomically: into a temporary file in the
 * same directory, flushed, then rename()d over `path`. On failure nothing
 * is left behind (the temporary file is removed) and an existing `path` is
 * unchanged; `*what` (may be NULL) names the step that failed. The new
 * file gets mode 0666 minus the umask, as a plain open() would give. */
int util_write_file_atomic(const char *path, const void *data, size_t size, const char **what);

/* The directory part of `path` ("." when it has none), malloc'd. */
char *util_dirname(const char *path);

/* "dir/name" (just a copy of `name` when it is absolute or dir is NULL),
 * malloc'd; NULL when out of memory. */
char *util_path_join(const char *dir, const char *name);

/* malloc'd copy; NULL when out of memory. */
char *util_strdup(const char *s);

#endif /* KCTX_TOOL_UTIL_H */
