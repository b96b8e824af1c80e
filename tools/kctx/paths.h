/*
 * paths.h — where the tool finds what the build made next to it: the
 * example callable images (demo, probe) and the benchmark executables
 * (bench).
 *
 * The tool lives at <build>/tools/kctx/kctx. A directory is looked for, in
 * order: the one given on the command line (used as it is), the one at its
 * place relative to the executable (<build>/<rel>, found through
 * /proc/self/exe, so a moved build tree still works), the installed place
 * relative to the executable (<prefix>/bin/kctx -> <prefix>/share/kctx/<rel>,
 * where `cmake --install` puts the example images), then the path the
 * build embedded (KCTX_TOOL_BUILD_DIR/<rel>).
 */
#ifndef KCTX_TOOL_PATHS_H
#define KCTX_TOOL_PATHS_H

/* The directory holding the running executable, malloc'd; NULL if unknown. */
char *paths_exe_dir(void);

/* The first of the candidates above that is a directory holding `marker`
 * (a file name; NULL: any directory will do), malloc'd. `given` (may be
 * NULL) is returned as a copy without any check when set, so the caller's
 * own error names the user's path. NULL when nothing was found; then
 * `tried` (may be NULL) receives a description of the places looked in,
 * malloc'd. */
char *paths_find_build_dir(const char *given, const char *rel, const char *marker, char **tried);

#endif /* KCTX_TOOL_PATHS_H */
