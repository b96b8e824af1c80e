/*
 * hostalloc.c — counts host allocation calls made directly from libkctx's
 * code (K11: launches allocate nothing in kctx's own code), by interposing
 * the C allocator in this executable.
 *
 * Every call to malloc, calloc, realloc, reallocarray, free, aligned_alloc,
 * posix_memalign and memalign — the allocating functions libkctx imports —
 * lands here first (the executable's definitions take precedence over
 * libc's for every shared object) and is forwarded to glibc's own entry
 * points (__libc_malloc and friends). While counting is on, the call is
 * attributed to the shared object that made it: the return address
 * (__builtin_return_address(0)) is compared with the address ranges of
 * libkctx.so's loaded segments, which hostalloc_counter() looks up once,
 * outside any allocation, with dl_iterate_phdr (and names with dladdr).
 * Nothing here allocates or takes a lock, so it is safe inside the
 * allocator. Indirect allocations (libc functions that allocate on
 * libkctx's behalf) are not attributed; libkctx imports none
 * (nm -D libkctx.so).
 *
 * Sanitizer builds: ASan and TSan replace the allocator themselves;
 * forwarding to glibc behind their back would mix allocators, so the
 * interposer is compiled out and the counter reports why it is missing.
 */
#include "hostalloc.h"

#if defined(KCTX_ASAN) || defined(KCTX_TSAN) || defined(__SANITIZE_ADDRESS__) || \
    defined(__SANITIZE_THREAD__)

const probe_host_allocs *hostalloc_counter(void) {
    static const probe_host_allocs unavailable = {
        "sanitizer build: the sanitizer owns the allocator, so this executable does not interpose "
        "it",
        NULL, NULL};
    return &unavailable;
}

#else

#include <kctx/kctx.h>

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void __libc_free(void *p);
void *__libc_memalign(size_t align, size_t size);

#define MAX_RANGES 8
static uintptr_t g_lo[MAX_RANGES], g_hi[MAX_RANGES];
static int g_nranges;
static atomic_int g_on;
static atomic_ullong g_kctx, g_other;

static inline void note(void *ret) {
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) return;
    uintptr_t a = (uintptr_t)ret;
    for (int i = 0; i < g_nranges; i++) {
        if (a >= g_lo[i] && a < g_hi[i]) {
            atomic_fetch_add_explicit(&g_kctx, 1, memory_order_relaxed);
            return;
        }
    }
    atomic_fetch_add_explicit(&g_other, 1, memory_order_relaxed);
}

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t size) {
    note(__builtin_return_address(0));
    return __libc_malloc(size);
}
EXPORT void *calloc(size_t n, size_t size) {
    note(__builtin_return_address(0));
    return __libc_calloc(n, size);
}
EXPORT void *realloc(void *p, size_t size) {
    note(__builtin_return_address(0));
    return __libc_realloc(p, size);
}
EXPORT void *reallocarray(void *p, size_t n, size_t size) {
    note(__builtin_return_address(0));
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n * size);
}
EXPORT void free(void *p) {
    note(__builtin_return_address(0));
    __libc_free(p);
}
EXPORT void *aligned_alloc(size_t align, size_t size) {
    note(__builtin_return_address(0));
    return __libc_memalign(align, size);
}
EXPORT void *memalign(size_t align, size_t size) {
    note(__builtin_return_address(0));
    return __libc_memalign(align, size);
}
EXPORT int posix_memalign(void **out, size_t align, size_t size) {
    note(__builtin_return_address(0));
    if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
    void *m = __libc_memalign(align, size);
    if (!m) return ENOMEM;
    *out = m;
    return 0;
}

/* The loaded segments of the object that holds `addr`. */
typedef struct find_arg {
    uintptr_t addr;
    int found;
} find_arg;

static int find_object(struct dl_phdr_info *info, size_t size, void *user) {
    (void)size;
    find_arg *fa = user;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (fa->addr >= lo && fa->addr < hi) mine = 1;
    }
    if (!mine) return 0;
    for (int i = 0; i < info->dlpi_phnum && g_nranges < MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        g_lo[g_nranges] = info->dlpi_addr + ph->p_vaddr;
        g_hi[g_nranges] = g_lo[g_nranges] + ph->p_memsz;
        g_nranges++;
    }
    fa->found = 1;
    return 1;
}

static void begin(void) {
    atomic_store(&g_kctx, 0);
    atomic_store(&g_other, 0);
    atomic_store(&g_on, 1);
}

static void end(uint64_t *kctx_calls, uint64_t *other_calls) {
    atomic_store(&g_on, 0);
    *kctx_calls = atomic_load(&g_kctx);
    *other_calls = atomic_load(&g_other);
}

const probe_host_allocs *hostalloc_counter(void) {
    static probe_host_allocs counter = {NULL, begin, end};
    static int looked = 0;
    if (looked) return &counter;
    looked = 1;
    /* Locate libkctx.so through one of its functions, resolved at run time
     * (a function address taken in the executable could be a PLT stub). */
    void *fn = dlsym(RTLD_DEFAULT, "kctx_launch");
    Dl_info di;
    memset(&di, 0, sizeof di);
    if (!fn || !dladdr(fn, &di) || !di.dli_fname || !strstr(di.dli_fname, "libkctx")) {
        counter.unavailable = "cannot locate libkctx.so's code in this process";
        return &counter;
    }
    find_arg fa = {(uintptr_t)fn, 0};
    dl_iterate_phdr(find_object, &fa);
    if (!fa.found || g_nranges == 0)
        counter.unavailable = "cannot find libkctx.so's loaded segments";
    return &counter;
}

#endif
