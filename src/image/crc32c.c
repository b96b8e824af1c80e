/*
 * crc32c.c — CRC32C (Castagnoli): reflected polynomial 0x82F63B78, initial
 * value and final xor 0xFFFFFFFF; CRC32C("123456789") = 0xE3069283.
 *
 * Two implementations of one function: a portable slicing-by-8 table walk
 * and, on x86-64, the SSE4.2 crc32 instruction chosen at run time. The
 * instruction has a latency of about three cycles and a throughput of one
 * per cycle, so one dependent chain runs at a third of the possible speed;
 * long buffers are therefore cut into three equal streams computed side by
 * side and joined with a multiplication by x^(8 * stream length) mod P.
 * That is what lets validation (which is mostly this checksum) run at
 * memcpy-like speed.
 */
#include "crc32c.h"

#include <kctx/image.h>

#include <string.h>

#include "crc32c_tables.h"

#define CRC32C_POLY 0x82F63B78u

uint32_t kctx_crc32c_gf_mul(uint32_t a, uint32_t b) {
    uint32_t prod = 0;
    for (int i = 0; i < 32; i++) {
        /* b holds the original b times x^i; bit 31 - i of a is a's x^i. */
        prod ^= b & (0u - ((a >> (31 - i)) & 1u));
        b = (b >> 1) ^ (CRC32C_POLY & (0u - (b & 1u)));
    }
    return prod;
}

uint32_t kctx_crc32c_xpow8n(uint64_t n) {
    uint32_t result = 0x80000000u; /* x^0 */
    uint32_t square = 0x00800000u; /* x^8: one byte */
    while (n != 0) {
        if (n & 1u) result = kctx_crc32c_gf_mul(result, square);
        square = kctx_crc32c_gf_mul(square, square);
        n >>= 1;
    }
    return result;
}

static uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t kctx_crc32c_update_portable(uint32_t crc, const void *data, size_t size) {
    const uint8_t *p = data;
    const uint32_t(*t)[256] = kctx_crc32c_table;
    while (size >= 8) {
        uint32_t lo = load_le32(p) ^ crc;
        uint32_t hi = load_le32(p + 4);
        crc = t[7][lo & 0xFFu] ^ t[6][(lo >> 8) & 0xFFu] ^ t[5][(lo >> 16) & 0xFFu] ^
              t[4][lo >> 24] ^ t[3][hi & 0xFFu] ^ t[2][(hi >> 8) & 0xFFu] ^
              t[1][(hi >> 16) & 0xFFu] ^ t[0][hi >> 24];
        p += 8;
        size -= 8;
    }
    while (size-- > 0) crc = t[0][(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
    return crc;
}

#if KCTX_CRC32C_HAVE_SSE42_IMPL
#include <nmmintrin.h>

#define SSE42 __attribute__((target("sse4.2")))

SSE42 static uint64_t crc_hw_chain(uint64_t crc, const uint8_t *p, size_t size) {
    while (size >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        crc = _mm_crc32_u64(crc, w);
        p += 8;
        size -= 8;
    }
    while (size-- > 0) crc = _mm_crc32_u8((uint32_t)crc, *p++);
    return crc;
}

/* Rounds of three streams of `len` bytes (a multiple of 8) while at least
 * 3 * len bytes remain; advances *pp and *sizep. */
SSE42 static uint32_t crc_hw_3way(uint32_t crc, const uint8_t **pp, size_t *sizep, size_t len,
                                  uint32_t shift) {
    const uint8_t *p = *pp;
    size_t size = *sizep;
    while (size >= 3 * len) {
        uint64_t c0 = crc, c1 = 0, c2 = 0;
        const uint8_t *p1 = p + len, *p2 = p + 2 * len;
        for (size_t i = 0; i < len; i += 8) {
            uint64_t w0, w1, w2;
            memcpy(&w0, p + i, 8);
            memcpy(&w1, p1 + i, 8);
            memcpy(&w2, p2 + i, 8);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
        }
        /* crc(A B C) = ((crc(A) x^8len) ^ crc0(B)) x^8len ^ crc0(C): the raw
         * register is linear, and a stream started at 0 contributes alone. */
        crc = kctx_crc32c_gf_mul((uint32_t)c0, shift) ^ (uint32_t)c1;
        crc = kctx_crc32c_gf_mul(crc, shift) ^ (uint32_t)c2;
        p += 3 * len;
        size -= 3 * len;
    }
    *pp = p;
    *sizep = size;
    return crc;
}

SSE42 uint32_t kctx_crc32c_update_sse42(uint32_t crc, const void *data, size_t size) {
    const uint8_t *p = data;
    crc = crc_hw_3way(crc, &p, &size, KCTX_CRC32C_LONG_STREAM, KCTX_CRC32C_LONG_SHIFT);
    crc = crc_hw_3way(crc, &p, &size, KCTX_CRC32C_SHORT_STREAM, KCTX_CRC32C_SHORT_SHIFT);
    return (uint32_t)crc_hw_chain(crc, p, size);
}

int kctx_crc32c_have_sse42(void) {
    /* cpu_init is a no-op once libgcc's constructor has run; it matters
     * only for a caller that validates from a constructor of its own. */
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

#else

uint32_t kctx_crc32c_update_sse42(uint32_t crc, const void *data, size_t size) {
    return kctx_crc32c_update_portable(crc, data, size);
}

int kctx_crc32c_have_sse42(void) { return 0; }

#endif

uint32_t kctx_crc32c_update(uint32_t crc, const void *data, size_t size) {
    if (kctx_crc32c_have_sse42()) return kctx_crc32c_update_sse42(crc, data, size);
    return kctx_crc32c_update_portable(crc, data, size);
}

uint32_t kctx_crc32c(const void *data, size_t size) {
    if (data == NULL) size = 0;
    return ~kctx_crc32c_update(0xFFFFFFFFu, data, size);
}
