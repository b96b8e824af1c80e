/*
 * fw_pool.c — the framework's graph memory pool as an arena (fw.h, GRAPH
 * MEMORY POOL): one device allocation made when the pool is created,
 * handed out in 256-byte-aligned blocks by host bookkeeping alone, so that
 * allocating and freeing inside a capture makes no runtime call. This is
 * how torch's caching allocators serve a graph's private pool (blocks of
 * segments reserved before the capture); the stream-ordered reuse rule is
 * theirs too: a block freed on a stream goes back to that stream's free
 * list and is handed out again only to a later allocation on the same
 * stream, which that stream orders after the work that used it.
 */
#include "fw.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define ARENA_ALIGN 256u
#define ARENA_MAX_BLOCKS 256u

typedef struct arena_block {
    fw_devptr base;
    size_t bytes;
    fw_stream freed_on; /* the stream of its last free */
    int live;
} arena_block;

typedef struct arena {
    pthread_mutex_t lock;
    fw_status (*release)(fw_devptr);
    fw_devptr base;
    size_t bytes, used; /* used: the tail handed out so far */
    arena_block blocks[ARENA_MAX_BLOCKS];
    unsigned nblocks;
} arena;

static _Thread_local char tl_msg[256];

static fw_status fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static fw_status fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_msg, sizeof tl_msg, fmt, ap);
    va_end(ap);
    return FW_ERROR;
}

const char *fw_arena_last_error(void) { return tl_msg; }

static size_t round_up(size_t n) { return (n + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

fw_status fw_arena_create(fw_status (*alloc)(size_t, fw_devptr *), fw_status (*release)(fw_devptr),
                          size_t bytes, fw_pool *pool) {
    if (!alloc || !release || !pool || bytes == 0) return fail("fw_arena_create: bad argument");
    arena *a = calloc(1, sizeof *a);
    if (!a) return fail("fw_arena_create: host allocation failed");
    a->bytes = round_up(bytes);
    fw_status st = alloc(a->bytes, &a->base);
    if (st != FW_OK) {
        free(a);
        snprintf(tl_msg, sizeof tl_msg, "fw_arena_create: the device allocation of %zu bytes: %s",
                 bytes, fw_status_name(st));
        return st;
    }
    pthread_mutex_init(&a->lock, NULL);
    a->release = release;
    *pool = (fw_pool)(uintptr_t)a;
    return FW_OK;
}

fw_status fw_arena_alloc(fw_pool pool, size_t bytes, fw_stream s, fw_devptr *p) {
    arena *a = (arena *)(uintptr_t)pool;
    if (!a || !p || bytes == 0) return fail("fw_arena_alloc: bad argument");
    size_t need = round_up(bytes);
    fw_status st = FW_OK;
    pthread_mutex_lock(&a->lock);
    arena_block *hit = NULL;
    for (unsigned i = 0; i < a->nblocks && !hit; i++) {
        arena_block *b = &a->blocks[i];
        if (!b->live && b->freed_on == s && b->bytes >= need) hit = b;
    }
    if (!hit) {
        if (a->nblocks == ARENA_MAX_BLOCKS)
            st = fail("fw_arena_alloc: the arena's %u blocks are in use", ARENA_MAX_BLOCKS);
        else if (a->bytes - a->used < need)
            st = fail("fw_arena_alloc: %zu bytes asked, %zu of %zu left", bytes, a->bytes - a->used,
                      a->bytes);
        else {
            hit = &a->blocks[a->nblocks++];
            hit->base = a->base + a->used;
            hit->bytes = need;
            a->used += need;
        }
    }
    if (hit) {
        hit->live = 1;
        hit->freed_on = 0;
        *p = hit->base;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

fw_status fw_arena_free(fw_pool pool, fw_devptr p, fw_stream s) {
    arena *a = (arena *)(uintptr_t)pool;
    if (!a) return fail("fw_arena_free: bad argument");
    fw_status st = FW_OK;
    pthread_mutex_lock(&a->lock);
    arena_block *b = NULL;
    for (unsigned i = 0; i < a->nblocks && !b; i++)
        if (a->blocks[i].base == p && a->blocks[i].live) b = &a->blocks[i];
    if (b) {
        b->live = 0;
        b->freed_on = s;
    } else {
        st = fail("fw_arena_free: 0x%llx is not a live block of the pool", (unsigned long long)p);
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

fw_status fw_arena_destroy(fw_pool pool) {
    arena *a = (arena *)(uintptr_t)pool;
    if (!a) return fail("fw_arena_destroy: bad argument");
    fw_status st = a->release(a->base);
    if (st != FW_OK) {
        snprintf(tl_msg, sizeof tl_msg, "fw_arena_destroy: freeing the arena: %s",
                 fw_status_name(st));
        return st;
    }
    pthread_mutex_destroy(&a->lock);
    free(a);
    return FW_OK;
}
