/*
 * crc32c.h — CRC32C internals, visible to the image library and its tests
 * (not part of the public API; kctx_crc32c() in kctx/image.h is).
 *
 * All functions work on the raw CRC register: kctx_crc32c(data, n) is
 * ~kctx_crc32c_update(~0u, data, n). Both implementations compute the same
 * function; the dispatcher picks the SSE4.2 one when the CPU has it.
 */
#ifndef KCTX_IMAGE_CRC32C_H
#define KCTX_IMAGE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define KCTX_CRC32C_HAVE_SSE42_IMPL 1
#else
#define KCTX_CRC32C_HAVE_SSE42_IMPL 0
#endif

/* Table-driven (slicing-by-8), any CPU, any byte order. */
uint32_t kctx_crc32c_update_portable(uint32_t crc, const void *data, size_t size);

/* The SSE4.2 crc32 instruction, three interleaved streams. Only call it
 * when kctx_crc32c_have_sse42() is true. On other builds it is the
 * portable version. */
uint32_t kctx_crc32c_update_sse42(uint32_t crc, const void *data, size_t size);

/* 1 when the running CPU has SSE4.2 and this build has the SSE4.2 code. */
int kctx_crc32c_have_sse42(void);

/* Dispatches to the fastest implementation available. */
uint32_t kctx_crc32c_update(uint32_t crc, const void *data, size_t size);

/* GF(2) arithmetic modulo the CRC32C polynomial, in the reflected
 * representation of the CRC register (bit 31 is the coefficient of x^0).
 * kctx_crc32c_shift(crc, n) is the register after n zero bytes:
 * crc * x^(8n) mod P. Used to combine interleaved streams; exposed for
 * the tests, which check the stream constants against it. */
uint32_t kctx_crc32c_gf_mul(uint32_t a, uint32_t b);
uint32_t kctx_crc32c_xpow8n(uint64_t n);

/* The interleaved stream lengths of the SSE4.2 implementation and their
 * shift constants x^(8 * len) mod P. */
#define KCTX_CRC32C_LONG_STREAM 16384u
#define KCTX_CRC32C_LONG_SHIFT 0xBF455269u
#define KCTX_CRC32C_SHORT_STREAM 2048u
#define KCTX_CRC32C_SHORT_SHIFT 0x0D65762Au

#endif /* KCTX_IMAGE_CRC32C_H */
