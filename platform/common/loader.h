/*
 * loader.h — the counted run-time loader of a driver table, for every
 * adapter and every test framework driver that reaches a vendor runtime
 * through dlopen (docs/platforms.md, "The support layer"). libkctx links no
 * vendor runtime: a platform whose library is missing is unavailable, with
 * the reason.
 *
 * A table is an X-macro list of the entries its user calls (resolved by
 * name at load) and a second list of entries it must never call (never
 * resolved): both get a counter, so the count of a never-call entry is 0 and
 * that zero is an answer (K4, K19: "the adapter never calls cuCtxSetCurrent",
 * "never clWaitForEvents"). Every call goes through the user's macro, which
 * counts it (kctx__loader_count) and then makes it: CUDA's CU(), OpenCL's
 * KCTX_CL(). The user keeps the typed pointers; the loader keeps the
 * library, the names and the counters.
 *
 *     static const char *const k_names[] = {"cuInit", ..., "cuCtxSetCurrent", ...};
 *     static void *g_fns[NRESOLVED];
 *     static _Atomic uint64_t g_calls[NCOUNT];
 *     static kctx_loader g_ld = KCTX_LOADER_INIT(k_names, NRESOLVED, NCOUNT, g_fns, g_calls);
 *
 *     kctx__loader_open(&g_ld, "KCTX_CUDA_DRIVER", "libcuda.so.1", why, n);
 *     kctx__loader_resolve(&g_ld, find, cookie, &code);   (find NULL: dlsym)
 *
 * Not thread-safe before the load (callers load once, pthread_once); the
 * counters are atomic.
 */
#ifndef KCTX_PLATFORM_COMMON_LOADER_H
#define KCTX_PLATFORM_COMMON_LOADER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kctx_loader {
    const char *const *names; /* [0, nresolved): resolved; [nresolved, count): never called */
    int nresolved, count;
    void **fns;              /* nresolved: the resolved entries (NULL until resolved) */
    _Atomic uint64_t *calls; /* count: calls per entry */
    void *lib;               /* the open library, or NULL */
    const char *path;        /* the file opened (the environment's, else the default) */
} kctx_loader;

#define KCTX_LOADER_INIT(names, nresolved, count, fns, calls) \
    { (names), (nresolved), (count), (fns), (calls), NULL, NULL }

/* A table with no never-call list, written as an X-macro list of
 * X(name, ...) (the tests' driver copies): KCTX_LOADER_TABLE(LIST) declares
 * the indices KCTX_LE_<name> and KCTX_LE_COUNT_ and the loader
 * kctx_loader_table, whose entries are kctx_loader_table_fns[KCTX_LE_<name>]
 * (one table per file). */
#define KCTX_LOADER_INDEX_(name, ...) KCTX_LE_##name,
#define KCTX_LOADER_NAME_(name, ...) #name,
#define KCTX_LOADER_TABLE(LIST)                                                                   \
    enum {                                                                                        \
        LIST(KCTX_LOADER_INDEX_) KCTX_LE_COUNT_                                                   \
    };                                                                                            \
    static const char *const kctx_loader_table_names[KCTX_LE_COUNT_] = {LIST(KCTX_LOADER_NAME_)}; \
    static void *kctx_loader_table_fns[KCTX_LE_COUNT_];                                           \
    static _Atomic uint64_t kctx_loader_table_calls[KCTX_LE_COUNT_];                              \
    static kctx_loader kctx_loader_table =                                                        \
        KCTX_LOADER_INIT(kctx_loader_table_names, KCTX_LE_COUNT_, KCTX_LE_COUNT_,                 \
                         kctx_loader_table_fns, kctx_loader_table_calls)

/* dlopen (RTLD_NOW | RTLD_LOCAL) of getenv(env) when set and not empty,
 * else of dflt. 0; or -1 with dlerror's text (or the path) in why. */
int kctx__loader_open(kctx_loader *l, const char *env, const char *dflt, char *why,
                      size_t why_size);

/* dlsym of one symbol of the open library (NULL when it has none). */
void *kctx__loader_sym(const kctx_loader *l, const char *name);

/* find(cookie, name, &fn): 0 and fn set, or a nonzero code. */
typedef int (*kctx_loader_find)(void *cookie, const char *name, void **fn);

/* Resolve every entry of the first list by name through find (NULL:
 * dlsym, code 1 for a missing symbol). -1 when all resolved; else the index
 * of the first entry that did not, its code in *code, and no entry set. */
int kctx__loader_resolve(kctx_loader *l, kctx_loader_find find, void *cookie, int *code);

/* dlclose, and forget the entries. */
void kctx__loader_close(kctx_loader *l);

/* One call of entry e (an index into names). */
static inline void kctx__loader_count(kctx_loader *l, int e) {
    atomic_fetch_add_explicit(&l->calls[e], 1, memory_order_relaxed);
}

/* The calls of the entry called `name` (either list), or -1 for a name in
 * neither. */
long long kctx__loader_calls(const kctx_loader *l, const char *name);

#endif
