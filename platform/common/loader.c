/*
 * loader.c — the counted run-time loader of driver tables (loader.h).
 */
#include "loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kctx__loader_open(kctx_loader *l, const char *env, const char *dflt, char *why,
                      size_t why_size) {
    const char *path = env ? getenv(env) : NULL;
    if (!path || !*path) path = dflt;
    l->path = path;
    l->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (l->lib) return 0;
    const char *e = dlerror();
    snprintf(why, why_size, "%s", e ? e : path);
    return -1;
}

void *kctx__loader_sym(const kctx_loader *l, const char *name) {
    return l->lib ? dlsym(l->lib, name) : NULL;
}

int kctx__loader_resolve(kctx_loader *l, kctx_loader_find find, void *cookie, int *code) {
    for (int i = 0; i < l->nresolved; i++) {
        void *fn = NULL;
        int c = 0;
        if (find)
            c = find(cookie, l->names[i], &fn);
        else if (!(fn = kctx__loader_sym(l, l->names[i])))
            c = 1;
        if (c == 0 && !fn) c = 1;
        if (c) {
            memset(l->fns, 0, sizeof *l->fns * (size_t)l->nresolved);
            if (code) *code = c;
            return i;
        }
        l->fns[i] = fn;
    }
    return -1;
}

void kctx__loader_close(kctx_loader *l) {
    if (l->lib) dlclose(l->lib);
    l->lib = NULL;
    memset(l->fns, 0, sizeof *l->fns * (size_t)l->nresolved);
}

long long kctx__loader_calls(const kctx_loader *l, const char *name) {
    for (int i = 0; i < l->count; i++)
        if (strcmp(l->names[i], name) == 0) return (long long)atomic_load(&l->calls[i]);
    return -1;
}
