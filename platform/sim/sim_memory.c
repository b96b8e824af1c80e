/*
 * sim_memory.c — device memory: a per-device heap carved out of one mapping,
 * with capacity, live tracking, red zones, poisoning and range lookup.
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(KCTX_ASAN)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define FREED_BYTE 0xDB

/* A segment of the heap: a live allocation (with its trailing red zone) or
 * a free span. Segments are sorted by offset and cover the heap. */
typedef struct simi_seg {
    uint64_t off, len; /* len includes the red zone for live segments */
    uint64_t user;     /* requested size (live) */
    int live;
} simi_seg;

/* The set of freed block starts (for double-free detection). */
static size_t freed_pos(const simi_heap *h, uint64_t off) {
    size_t lo = 0, hi = h->nfreed;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->freed[mid] < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
static bool freed_has(const simi_heap *h, uint64_t off) {
    size_t i = freed_pos(h, off);
    return i < h->nfreed && h->freed[i] == off;
}
static void freed_add(simi_heap *h, uint64_t off) {
    size_t i = freed_pos(h, off);
    if (i < h->nfreed && h->freed[i] == off) return;
    if (h->nfreed == h->capfreed) {
        size_t nc = h->capfreed ? h->capfreed * 2 : 64;
        uint64_t *n = realloc(h->freed, nc * sizeof *n);
        if (!n) return; /* detection degrades to FOREIGN_FREE; nothing breaks */
        h->freed = n;
        h->capfreed = nc;
    }
    memmove(&h->freed[i + 1], &h->freed[i], (h->nfreed - i) * sizeof *h->freed);
    h->freed[i] = off;
    h->nfreed++;
}
static void freed_del(simi_heap *h, uint64_t off) {
    size_t i = freed_pos(h, off);
    if (i < h->nfreed && h->freed[i] == off) {
        memmove(&h->freed[i], &h->freed[i + 1], (h->nfreed - i - 1) * sizeof *h->freed);
        h->nfreed--;
    }
}

int simi_heap_init(simi_heap *h, uint64_t capacity) {
    /* The mapping is reserved lazily (NORESERVE); pages appear on touch. */
    void *p = mmap(NULL, capacity, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return -1;
    h->base = p;
    h->capacity = capacity;
    h->capsegs = 64;
    h->segs = calloc(h->capsegs, sizeof *h->segs);
    if (!h->segs) return -1;
    h->segs[0] = (simi_seg){.off = 0, .len = capacity};
    h->nsegs = 1;
    POISON(h->base, capacity);
    return 0;
}

void simi_heap_reset(simi_heap *h) {
    for (size_t i = 0; i < h->nsegs; i++)
        if (h->segs[i].live) {
            UNPOISON(h->base + h->segs[i].off, h->segs[i].user);
            memset(h->base + h->segs[i].off, FREED_BYTE, h->segs[i].user);
        }
    POISON(h->base, h->capacity);
    h->segs[0] = (simi_seg){.off = 0, .len = h->capacity};
    h->nsegs = 1;
    h->live_count = h->live_bytes = 0;
    h->nfreed = 0;
    atomic_fetch_add_explicit(&h->frees, 1, memory_order_release);
}

static int seg_insert(simi_heap *h, size_t at, simi_seg s) {
    if (h->nsegs == h->capsegs) {
        size_t nc = h->capsegs * 2;
        simi_seg *n = realloc(h->segs, nc * sizeof *n);
        if (!n) return -1;
        h->segs = n;
        h->capsegs = nc;
    }
    memmove(&h->segs[at + 1], &h->segs[at], (h->nsegs - at) * sizeof *h->segs);
    h->segs[at] = s;
    h->nsegs++;
    return 0;
}

static void seg_remove(simi_heap *h, size_t at) {
    memmove(&h->segs[at], &h->segs[at + 1], (h->nsegs - at - 1) * sizeof *h->segs);
    h->nsegs--;
}

/* Index of the segment containing offset off (segments cover the heap). */
static size_t seg_find(const simi_heap *h, uint64_t off) {
    size_t lo = 0, hi = h->nsegs;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (h->segs[mid].off <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

bool simi_heap_contains(const simi_heap *h, uint64_t p, size_t size) {
    uint64_t b = (uint64_t)(uintptr_t)h->base;
    if (p < b || p - b >= h->capacity) return false;
    uint64_t off = p - b;
    const simi_seg *s = &h->segs[seg_find(h, off)];
    if (!s->live) return false;
    return size <= s->user && off - s->off <= s->user - size;
}

simi_device *simi_heap_owner(uint64_t p) {
    for (int i = 0; i < g_sim.ndevices; i++) {
        simi_heap *h = &g_sim.dev[i].heap;
        uint64_t b = (uint64_t)(uintptr_t)h->base;
        if (p >= b && p - b < h->capacity) return &g_sim.dev[i];
    }
    return NULL;
}

sim_status sim_malloc(sim_devptr *ptr, size_t size) {
    sim_status st = simi_enter(SIM_OP_MALLOC, -1);
    if (st) return st;
    if (!ptr) return simi_fail(SIM_INVALID_VALUE, "ptr is NULL");
    if (size == 0) return simi_fail(SIM_INVALID_VALUE, "size is 0");
    simi_device *dev = simi_cur_dev();
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    if (size > dev->capacity)
        return simi_fail(SIM_OUT_OF_MEMORY, "%zu bytes exceed device %d's capacity of %llu bytes",
                         size, dev->index, (unsigned long long)dev->capacity);
    uint64_t need = ((size + SIMI_ALIGN - 1) / SIMI_ALIGN) * SIMI_ALIGN + SIMI_REDZONE;
    pthread_mutex_lock(&g_sim.lock);
    st = simi_capture_restricted("sim_malloc");
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        return st;
    }
    simi_heap *h = &dev->heap;
    size_t i;
    for (i = 0; i < h->nsegs; i++)
        if (!h->segs[i].live && h->segs[i].len >= need) break;
    if (i == h->nsegs) {
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(
            SIM_OUT_OF_MEMORY, "cannot allocate %zu bytes on device %d (%llu of %llu live)", size,
            dev->index, (unsigned long long)h->live_bytes, (unsigned long long)h->capacity);
    }
    simi_seg *s = &h->segs[i];
    if (s->len > need) {
        simi_seg rest = {.off = s->off + need, .len = s->len - need};
        if (seg_insert(h, i + 1, rest) != 0) {
            pthread_mutex_unlock(&g_sim.lock);
            return simi_fail(SIM_OUT_OF_MEMORY, "host bookkeeping allocation failed");
        }
        s = &h->segs[i];
        s->len = need;
    }
    s->live = 1;
    s->user = size;
    freed_del(h, s->off);
    h->live_count++;
    h->live_bytes += size;
    unsigned char *p = h->base + s->off;
    pthread_mutex_unlock(&g_sim.lock);
    UNPOISON(p, size);
    *ptr = (sim_devptr)(uintptr_t)p;
    return SIM_OK;
}

sim_status sim_free(sim_devptr ptr) {
    simi_ensure_init();
    simi_device *owner = simi_heap_owner(ptr);
    sim_status st = simi_enter(SIM_OP_FREE, owner ? owner->index : -1);
    if (st) return st;
    simi_device *dev = simi_cur_dev();
    if (owner != dev)
        return simi_fail(SIM_FOREIGN_FREE, "address 0x%llx is not device memory of device %d",
                         (unsigned long long)ptr, dev->index);
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    pthread_mutex_lock(&g_sim.lock);
    st = simi_capture_restricted("sim_free");
    if (st) {
        pthread_mutex_unlock(&g_sim.lock);
        return st;
    }
    simi_heap *h = &dev->heap;
    uint64_t off = ptr - (uint64_t)(uintptr_t)h->base;
    size_t i = seg_find(h, off);
    simi_seg *s = &h->segs[i];
    if (s->off != off || !s->live) {
        int dbl = freed_has(h, off);
        pthread_mutex_unlock(&g_sim.lock);
        if (dbl)
            return simi_fail(SIM_DOUBLE_FREE, "address 0x%llx was already freed",
                             (unsigned long long)ptr);
        return simi_fail(SIM_FOREIGN_FREE, "address 0x%llx is not the start of a live allocation",
                         (unsigned long long)ptr);
    }
    memset(h->base + s->off, FREED_BYTE, s->user);
    POISON(h->base + s->off, s->user);
    h->live_count--;
    h->live_bytes -= s->user;
    s->live = 0;
    s->user = 0;
    freed_add(h, off);
    /* before the lock is dropped, so before the block can be handed out again */
    atomic_fetch_add_explicit(&h->frees, 1, memory_order_release);
    /* merge with free neighbours */
    if (i + 1 < h->nsegs && !h->segs[i + 1].live) {
        s->len += h->segs[i + 1].len;
        seg_remove(h, i + 1);
    }
    if (i > 0 && !h->segs[i - 1].live) {
        h->segs[i - 1].len += h->segs[i].len;
        seg_remove(h, i);
    }
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_mem_stats(int device, uint64_t *live_count, uint64_t *live_bytes) {
    simi_ensure_init();
    if (device < 0 || device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range", device);
    pthread_mutex_lock(&g_sim.lock);
    if (live_count) *live_count = g_sim.dev[device].heap.live_count;
    if (live_bytes) *live_bytes = g_sim.dev[device].heap.live_bytes;
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_mem_lookup(int device, sim_devptr ptr, size_t size, sim_devptr *base,
                          size_t *alloc_size) {
    simi_ensure_init();
    sim_status st =
        simi_enter(SIM_OP_MEM_LOOKUP, (device >= 0 && device < g_sim.ndevices) ? device : -1);
    if (st) return st;
    if (device < 0 || device >= g_sim.ndevices)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range", device);
    pthread_mutex_lock(&g_sim.lock);
    simi_heap *h = &g_sim.dev[device].heap;
    if (!simi_heap_contains(h, ptr, size)) {
        pthread_mutex_unlock(&g_sim.lock);
        return simi_fail(SIM_INVALID_ADDRESS,
                         "[0x%llx, +%zu) is not inside one live allocation of device %d",
                         (unsigned long long)ptr, size, device);
    }
    const simi_seg *s = &h->segs[seg_find(h, ptr - (uint64_t)(uintptr_t)h->base)];
    if (base) *base = (uint64_t)(uintptr_t)h->base + s->off;
    if (alloc_size) *alloc_size = s->user;
    pthread_mutex_unlock(&g_sim.lock);
    return SIM_OK;
}

sim_status sim_mem_free_counter(int device, const uint64_t **counter) {
    simi_count_query(SIM_OP_MEM_FREE_COUNTER, device);
    if (device < 0 || device >= g_sim.ndevices || !counter)
        return simi_fail(SIM_INVALID_VALUE, "device %d out of range, or counter NULL", device);
    *counter = (const uint64_t *)&g_sim.dev[device].heap.frees;
    return SIM_OK;
}

sim_status sim_memcpy(void *dst, const void *src, size_t size, sim_copy_kind kind) {
    sim_status st = simi_enter(SIM_OP_MEMCPY, -1);
    if (st) return st;
    if (!dst || !src) return simi_fail(SIM_INVALID_VALUE, "dst or src is NULL");
    if (kind < SIM_COPY_HOST_TO_DEVICE || kind > SIM_COPY_DEVICE_TO_DEVICE)
        return simi_fail(SIM_INVALID_VALUE, "unknown copy kind %d", (int)kind);
    simi_device *dev = simi_cur_dev();
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    pthread_mutex_lock(&g_sim.lock);
    st = simi_capture_restricted("sim_memcpy");
    if (!st && kind != SIM_COPY_HOST_TO_DEVICE &&
        !simi_heap_contains(&dev->heap, (uintptr_t)src, size))
        st = simi_fail(SIM_INVALID_ADDRESS,
                       "source [%p, +%zu) is not inside one live allocation of device %d", src,
                       size, dev->index);
    if (!st && kind != SIM_COPY_DEVICE_TO_HOST &&
        !simi_heap_contains(&dev->heap, (uintptr_t)dst, size))
        st = simi_fail(SIM_INVALID_ADDRESS,
                       "destination [%p, +%zu) is not inside one live allocation of device %d", dst,
                       size, dev->index);
    pthread_mutex_unlock(&g_sim.lock);
    if (st) return st;
    st = simi_device_sync(dev);
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    memmove(dst, src, size);
    (void)st; /* stream errors belong to their streams; the copy itself succeeded */
    return SIM_OK;
}

static sim_status atomic_read(sim_devptr ptr, size_t n, uint64_t *out) {
    sim_status st = simi_enter(SIM_OP_ATOMIC_READ, -1);
    if (st) return st;
    simi_device *dev = simi_cur_dev();
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    pthread_mutex_lock(&g_sim.lock);
    bool ok = simi_heap_contains(&dev->heap, ptr, n);
    pthread_mutex_unlock(&g_sim.lock);
    if (!ok)
        return simi_fail(SIM_INVALID_ADDRESS,
                         "[0x%llx, +%zu) is not inside one live allocation of device %d",
                         (unsigned long long)ptr, n, dev->index);
    if (ptr % n)
        return simi_fail(SIM_INVALID_VALUE, "address 0x%llx not %zu-byte aligned",
                         (unsigned long long)ptr, n);
    if (n == 4)
        *out = atomic_load((_Atomic uint32_t *)(uintptr_t)ptr);
    else
        *out = atomic_load((_Atomic uint64_t *)(uintptr_t)ptr);
    return SIM_OK;
}

sim_status sim_atomic_read_u32(sim_devptr ptr, uint32_t *value) {
    uint64_t v;
    if (!value) return simi_fail(SIM_INVALID_VALUE, "value is NULL");
    sim_status st = atomic_read(ptr, 4, &v);
    if (!st) *value = (uint32_t)v;
    return st;
}

sim_status sim_atomic_read_u64(sim_devptr ptr, uint64_t *value) {
    if (!value) return simi_fail(SIM_INVALID_VALUE, "value is NULL");
    return atomic_read(ptr, 8, value);
}

sim_status sim_atomic_write_u32(sim_devptr ptr, uint32_t value) {
    sim_status st = simi_enter(SIM_OP_ATOMIC_WRITE, -1);
    if (st) return st;
    simi_device *dev = simi_cur_dev();
    if (atomic_load(&dev->lost)) return simi_fail(SIM_DEVICE_LOST, "device %d is lost", dev->index);
    pthread_mutex_lock(&g_sim.lock);
    bool ok = simi_heap_contains(&dev->heap, ptr, 4);
    pthread_mutex_unlock(&g_sim.lock);
    if (!ok)
        return simi_fail(SIM_INVALID_ADDRESS,
                         "[0x%llx, +4) is not inside one live allocation of device %d",
                         (unsigned long long)ptr, dev->index);
    if (ptr % 4)
        return simi_fail(SIM_INVALID_VALUE, "address 0x%llx not 4-byte aligned",
                         (unsigned long long)ptr);
    atomic_store((_Atomic uint32_t *)(uintptr_t)ptr, value);
    simi_wake_word((const uint32_t *)(uintptr_t)ptr);
    return SIM_OK;
}
