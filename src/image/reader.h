/*
 * reader.h — a bounded little-endian reader over untrusted bytes.
 *
 * Every load names an absolute offset and a width, is bounds-checked
 * against the buffer before any byte is touched (the subtraction comes
 * before the comparison, so nothing can overflow), and goes through
 * memcpy: no unaligned casts, no reliance on the host's byte order. A load
 * outside the buffer reads nothing, returns 0 and marks the reader
 * `broken` with the first offending offset. The validator checks every
 * range before it reads, so a broken reader means a validator bug; it is
 * checked again before the validator answers OK, so such a bug could only
 * ever cause a rejection, never a false acceptance or an out-of-bounds read.
 */
#ifndef KCTX_IMAGE_READER_H
#define KCTX_IMAGE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct img_reader {
    const uint8_t *base;
    uint64_t size;
    bool broken;        /* a load fell outside [0, size) */
    uint64_t broken_at; /* offset of the first such load */
} img_reader;

static inline img_reader img_reader_make(const void *base, uint64_t size) {
    img_reader r = {(const uint8_t *)base, size, false, 0};
    return r;
}

/* True when [off, off + len) lies inside the buffer. */
static inline bool img_span_ok(const img_reader *r, uint64_t off, uint64_t len) {
    return off <= r->size && len <= r->size - off;
}

/* Pointer to [off, off + len), or NULL (and broken) when outside. */
static inline const uint8_t *img_span(img_reader *r, uint64_t off, uint64_t len) {
    if (img_span_ok(r, off, len)) return r->base + off;
    if (!r->broken) {
        r->broken = true;
        r->broken_at = off;
    }
    return NULL;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define IMG_LE16(x) __builtin_bswap16(x)
#define IMG_LE32(x) __builtin_bswap32(x)
#define IMG_LE64(x) __builtin_bswap64(x)
#else
#define IMG_LE16(x) (x)
#define IMG_LE32(x) (x)
#define IMG_LE64(x) (x)
#endif

static inline uint8_t img_u8(img_reader *r, uint64_t off) {
    const uint8_t *p = img_span(r, off, 1);
    return p ? *p : 0;
}

static inline uint16_t img_u16(img_reader *r, uint64_t off) {
    uint16_t v = 0;
    const uint8_t *p = img_span(r, off, sizeof v);
    if (p) memcpy(&v, p, sizeof v);
    return (uint16_t)IMG_LE16(v);
}

static inline uint32_t img_u32(img_reader *r, uint64_t off) {
    uint32_t v = 0;
    const uint8_t *p = img_span(r, off, sizeof v);
    if (p) memcpy(&v, p, sizeof v);
    return IMG_LE32(v);
}

static inline uint64_t img_u64(img_reader *r, uint64_t off) {
    uint64_t v = 0;
    const uint8_t *p = img_span(r, off, sizeof v);
    if (p) memcpy(&v, p, sizeof v);
    return IMG_LE64(v);
}

/* Little-endian stores, for the builder and reseal (the only writers). */
static inline void img_put16(uint8_t *p, uint16_t v) {
    v = (uint16_t)IMG_LE16(v);
    memcpy(p, &v, sizeof v);
}
static inline void img_put32(uint8_t *p, uint32_t v) {
    v = IMG_LE32(v);
    memcpy(p, &v, sizeof v);
}
static inline void img_put64(uint8_t *p, uint64_t v) {
    v = IMG_LE64(v);
    memcpy(p, &v, sizeof v);
}

#endif /* KCTX_IMAGE_READER_H */
