/*
 * alloc_track.c — see alloc_track.h. Link into an executable only: its
 * malloc family replaces the C library's for the whole process.
 */
#include "alloc_track.h"

#include <kctx/kctx.h>
#include <kctx/sim.h>

#include <stdio.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define AT_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(KCTX_ASAN) || \
    defined(KCTX_TSAN)
#undef AT_SANITIZER
#define AT_SANITIZER 1
#endif

#ifdef AT_SANITIZER

int at_available(void) { return 0; }
int at_init(void) { return -1; }
void at_snapshot(at_counts *out) { memset(out, 0, sizeof *out); }
const char *at_unavailable_reason(void) {
#if defined(__SANITIZE_THREAD__) || defined(KCTX_TSAN)
    return "ThreadSanitizer build (the sanitizer owns the allocator)";
#else
    return "AddressSanitizer build (the sanitizer owns the allocator)";
#endif
}

#else /* !AT_SANITIZER */

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h> /* memalign, pvalloc */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* glibc's own entry points: forwarding to them never re-enters us. */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void __libc_free(void *p);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);

#define AT_EXPORT __attribute__((visibility("default")))

/* ---- owners: the executable segments of the two libraries ---------------- */
enum {
    MAX_RANGES = 4
};
typedef struct range {
    uintptr_t lo, hi;
} range;
static range g_ranges[AT_OWNERS][MAX_RANGES];
static int g_nranges[AT_OWNERS];
static atomic_int g_ready;

static at_owner owner_of(const void *ra) {
    if (!atomic_load_explicit(&g_ready, memory_order_acquire)) return AT_OTHER;
    uintptr_t a = (uintptr_t)ra;
    for (int o = AT_KCTX; o < AT_OWNERS; o++)
        for (int i = 0; i < g_nranges[o]; i++)
            if (a >= g_ranges[o][i].lo && a < g_ranges[o][i].hi) return (at_owner)o;
    return AT_OTHER;
}

/* ---- counters ------------------------------------------------------------ */
static atomic_ullong g_allocs[AT_OWNERS], g_frees[AT_OWNERS];

/* Live blocks of AT_KCTX / AT_SIM: an open-addressing table (linear
 * probing, backward-shift deletion) in static storage, under a mutex. */
#define TABLE_BITS 20
#define TABLE_SIZE (1u << TABLE_BITS)
typedef struct block {
    uintptr_t p; /* 0: empty */
    uint64_t size : 62;
    uint64_t owner : 2;
} block;
static block g_table[TABLE_SIZE];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_live_bytes[AT_OWNERS];
static uint64_t g_live_blocks[AT_OWNERS];
static uint64_t g_used;
static int g_overflow;

static uint32_t slot_of(uintptr_t p) {
    return (uint32_t)(((uint64_t)p * 0x9E3779B97F4A7C15ull) >> (64 - TABLE_BITS));
}

static void table_insert(uintptr_t p, size_t size, at_owner o) {
    pthread_mutex_lock(&g_lock);
    if (g_used + 1 >= TABLE_SIZE / 2) {
        g_overflow = 1;
    } else {
        uint32_t i = slot_of(p);
        while (g_table[i].p != 0 && g_table[i].p != p) i = (i + 1) & (TABLE_SIZE - 1);
        if (g_table[i].p == 0)
            g_used++;
        else { /* stale entry (cannot happen unless a free was missed) */
            g_live_bytes[g_table[i].owner] -= (int64_t)g_table[i].size;
            g_live_blocks[g_table[i].owner]--;
        }
        g_table[i] = (block){p, size, (uint64_t)o};
        g_live_bytes[o] += (int64_t)size;
        g_live_blocks[o]++;
    }
    pthread_mutex_unlock(&g_lock);
}

static void table_remove(uintptr_t p) {
    pthread_mutex_lock(&g_lock);
    if (g_used > 0) {
        uint32_t i = slot_of(p);
        while (g_table[i].p != 0 && g_table[i].p != p) i = (i + 1) & (TABLE_SIZE - 1);
        if (g_table[i].p == p) {
            g_live_bytes[g_table[i].owner] -= (int64_t)g_table[i].size;
            g_live_blocks[g_table[i].owner]--;
            g_used--;
            /* backward-shift deletion keeps every probe chain unbroken */
            uint32_t hole = i, j = i;
            for (;;) {
                j = (j + 1) & (TABLE_SIZE - 1);
                if (g_table[j].p == 0) break;
                uint32_t home = slot_of(g_table[j].p);
                /* move j into the hole unless its home lies cyclically in (hole, j] */
                int in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
                if (!in_range) {
                    g_table[hole] = g_table[j];
                    hole = j;
                }
            }
            g_table[hole] = (block){0, 0, 0};
        }
    }
    pthread_mutex_unlock(&g_lock);
}

static void note_alloc(void *p, size_t size, at_owner o) {
    if (p == NULL) return;
    atomic_fetch_add_explicit(&g_allocs[o], 1, memory_order_relaxed);
    if (o != AT_OTHER) table_insert((uintptr_t)p, size, o);
}

static void note_free(void *p, at_owner o) {
    if (p == NULL) return;
    atomic_fetch_add_explicit(&g_frees[o], 1, memory_order_relaxed);
    if (atomic_load_explicit(&g_ready, memory_order_acquire)) table_remove((uintptr_t)p);
}

/* ---- the interposed allocator ---------------------------------------------- */
AT_EXPORT void *malloc(size_t size) {
    void *p = __libc_malloc(size);
    note_alloc(p, size, owner_of(__builtin_return_address(0)));
    return p;
}

AT_EXPORT void *calloc(size_t n, size_t size) {
    void *p = __libc_calloc(n, size);
    note_alloc(p, n * size, owner_of(__builtin_return_address(0)));
    return p;
}

AT_EXPORT void *realloc(void *old, size_t size) {
    at_owner o = owner_of(__builtin_return_address(0));
    if (old != NULL && atomic_load_explicit(&g_ready, memory_order_acquire))
        table_remove((uintptr_t)old);
    /* Removed first: once realloc returns, another thread may be handed
     * the old address. (A failed realloc leaves the old block live but
     * untracked; no benchmark runs out of memory.) */
    void *p = __libc_realloc(old, size);
    note_alloc(p, size, o);
    return p;
}

AT_EXPORT void free(void *p) {
    note_free(p, owner_of(__builtin_return_address(0)));
    __libc_free(p);
}

AT_EXPORT void *aligned_alloc(size_t alignment, size_t size) {
    void *p = __libc_memalign(alignment, size);
    note_alloc(p, size, owner_of(__builtin_return_address(0)));
    return p;
}

AT_EXPORT void *memalign(size_t alignment, size_t size) {
    void *p = __libc_memalign(alignment, size);
    note_alloc(p, size, owner_of(__builtin_return_address(0)));
    return p;
}

AT_EXPORT int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (p == NULL) return ENOMEM;
    note_alloc(p, size, owner_of(__builtin_return_address(0)));
    *out = p;
    return 0;
}

AT_EXPORT void *valloc(size_t size) {
    void *p = __libc_valloc(size);
    note_alloc(p, size, owner_of(__builtin_return_address(0)));
    return p;
}

AT_EXPORT void *pvalloc(size_t size) {
    void *p = __libc_pvalloc(size);
    note_alloc(p, size, owner_of(__builtin_return_address(0)));
    return p;
}

/* ---- setup -------------------------------------------------------------------- */
typedef struct find_arg {
    uintptr_t anchor;
    at_owner owner;
    int found;
} find_arg;

static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
    find_arg *fa = data;
    (void)size;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && fa->anchor >= lo && fa->anchor < lo + ph->p_memsz) mine = 1;
    }
    if (!mine) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        if (g_nranges[fa->owner] == MAX_RANGES) break;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        g_ranges[fa->owner][g_nranges[fa->owner]++] = (range){lo, lo + ph->p_memsz};
    }
    fa->found = 1;
    return 1;
}

static int locate(const void *fn, at_owner o, const char *lib) {
    Dl_info di;
    memset(&di, 0, sizeof di);
    if (dladdr(fn, &di) == 0 || di.dli_fname == NULL || strstr(di.dli_fname, lib) == NULL) {
        fprintf(stderr, "alloc_track: %s not found through dladdr (got %s)\n", lib,
                di.dli_fname ? di.dli_fname : "nothing");
        return -1;
    }
    find_arg fa = {(uintptr_t)fn, o, 0};
    dl_iterate_phdr(find_object, &fa);
    if (!fa.found || g_nranges[o] == 0) {
        fprintf(stderr, "alloc_track: no executable segment of %s\n", di.dli_fname);
        return -1;
    }
    return 0;
}

int at_available(void) { return 1; }

const char *at_unavailable_reason(void) { return "available"; }

int at_init(void) {
    if (atomic_load(&g_ready)) return 0;
    /* Through volatile pointers, so that the addresses are the libraries'
     * own and not the executable's PLT stubs. */
    const void *volatile kfn = (const void *)&kctx_version;
    const void *volatile sfn = (const void *)&sim_status_name;
    void *volatile k = dlsym(RTLD_DEFAULT, "kctx_version");
    void *volatile s = dlsym(RTLD_DEFAULT, "sim_status_name");
    if (k != NULL) kfn = k;
    if (s != NULL) sfn = s;
    if (locate(kfn, AT_KCTX, "libkctx.so") != 0 || locate(sfn, AT_SIM, "libkctx_sim.so") != 0)
        return -1;
    atomic_store_explicit(&g_ready, 1, memory_order_release);
    return 0;
}

void at_snapshot(at_counts *out) {
    memset(out, 0, sizeof *out);
    for (int o = 0; o < AT_OWNERS; o++) {
        out->allocs[o] = atomic_load(&g_allocs[o]);
        out->frees[o] = atomic_load(&g_frees[o]);
    }
    pthread_mutex_lock(&g_lock);
    for (int o = 0; o < AT_OWNERS; o++) {
        out->live_bytes[o] = g_live_bytes[o];
        out->live_blocks[o] = g_live_blocks[o];
    }
    int overflow = g_overflow;
    pthread_mutex_unlock(&g_lock);
    if (overflow)
        fprintf(stderr,
                "alloc_track: the live-block table overflowed; live bytes are incomplete\n");
}

#endif /* AT_SANITIZER */
