/*
 * paths.c — locating the build's outputs next to the tool.
 */
#include "paths.h"

#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KCTX_TOOL_BUILD_DIR
#error "KCTX_TOOL_BUILD_DIR comes from tools/kctx/CMakeLists.txt"
#endif
#ifndef KCTX_TOOL_DATA_REL
#error "KCTX_TOOL_DATA_REL comes from tools/kctx/CMakeLists.txt"
#endif

#define PATHS_NCAND 3

char *paths_exe_dir(void) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return NULL;
    buf[n] = '\0';
    return util_dirname(buf);
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* `dir` is a directory that holds `marker` (when given). */
static int usable(const char *dir, const char *marker) {
    if (!is_dir(dir)) return 0;
    if (marker == NULL) return 1;
    char *f = util_path_join(dir, marker);
    struct stat st;
    int ok = f != NULL && stat(f, &st) == 0;
    free(f);
    return ok;
}

char *paths_find_build_dir(const char *given, const char *rel, const char *marker, char **tried) {
    if (tried) *tried = NULL;
    if (given != NULL) return util_strdup(given);
    char *candidates[PATHS_NCAND] = {NULL, NULL, NULL};
    char *exe = paths_exe_dir();
    if (exe != NULL) {
        /* <build>/tools/kctx/kctx -> <build>/<rel> */
        size_t n = strlen(exe) + strlen(rel) + 16;
        candidates[0] = malloc(n);
        if (candidates[0]) snprintf(candidates[0], n, "%s/../../%s", exe, rel);
        /* installed: <prefix>/bin/kctx -> <prefix>/share/kctx/<rel> */
        n = strlen(exe) + strlen(KCTX_TOOL_DATA_REL) + strlen(rel) + 4;
        candidates[1] = malloc(n);
        if (candidates[1]) snprintf(candidates[1], n, "%s/%s/%s", exe, KCTX_TOOL_DATA_REL, rel);
        free(exe);
    }
    candidates[2] = util_path_join(KCTX_TOOL_BUILD_DIR, rel);
    char *found = NULL;
    for (int i = 0; i < PATHS_NCAND && found == NULL; i++)
        if (candidates[i] && usable(candidates[i], marker)) {
            char real[PATH_MAX];
            found = util_strdup(realpath(candidates[i], real) ? real : candidates[i]);
        }
    if (found == NULL && tried != NULL) {
        size_t n = 64;
        for (int i = 0; i < PATHS_NCAND; i++) n += candidates[i] ? strlen(candidates[i]) + 4 : 0;
        *tried = malloc(n);
        if (*tried) {
            size_t at = 0;
            (*tried)[0] = '\0';
            for (int i = 0; i < PATHS_NCAND; i++) {
                if (candidates[i] == NULL) continue;
                at += (size_t)snprintf(*tried + at, n - at, "%s%s", at ? ", " : "", candidates[i]);
            }
        }
    }
    for (int i = 0; i < PATHS_NCAND; i++) free(candidates[i]);
    return found;
}
