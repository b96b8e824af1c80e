/*
 * test_crc32c.c — CRC32C: the standard check value, the checked-in tables
 * against the bitwise definition, and the SSE4.2 implementation against the
 * portable one on random data of every interesting length and alignment.
 */
#include <kctx/image.h>

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "crc32c.h"
#include "crc32c_tables.h"

#define POLY 0x82F63B78u

/* The definition: one bit at a time. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n) {
    while (n-- > 0) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (POLY & (0u - (crc & 1u)));
    }
    return crc;
}

static void fill_random(uint8_t *buf, size_t n, uint64_t *state) {
    for (size_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(*state >> 56);
    }
}

static void test_check_value(void) {
    const char *s = "123456789";
    CHECK(kctx_crc32c(s, 9) == 0xE3069283u);
    CHECK(~kctx_crc32c_update_portable(~0u, s, 9) == 0xE3069283u);
    CHECK(~kctx_crc32c_update_sse42(~0u, s, 9) == 0xE3069283u);
    CHECK(~crc_bitwise(~0u, (const uint8_t *)s, 9) == 0xE3069283u);
    CHECK(kctx_crc32c(NULL, 0) == 0);
    CHECK(kctx_crc32c("", 0) == 0);
    /* 32 bytes of zeros: a published CRC32C test vector (RFC 3720, B.4). */
    uint8_t zeros[32] = {0};
    CHECK(kctx_crc32c(zeros, sizeof zeros) == 0x8A9136AAu);
    uint8_t ones[32];
    memset(ones, 0xFF, sizeof ones);
    CHECK(kctx_crc32c(ones, sizeof ones) == 0x62A8AB43u);
}

static void test_tables_match_definition(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint8_t byte = (uint8_t)n, zero[7] = {0};
        uint32_t c = crc_bitwise(0, &byte, 1);
        CHECK(kctx_crc32c_table[0][n] == c, "table[0][%u]", n);
        for (int s = 1; s < 8; s++) {
            c = crc_bitwise(c, zero, 1);
            CHECK(kctx_crc32c_table[s][n] == c, "table[%d][%u]", s, n);
        }
    }
}

static void test_shift_constants(void) {
    /* x^(8n) mod P is the register after n zero bytes from x^0. */
    uint8_t zeros[64] = {0};
    for (uint32_t n = 0; n < 64; n++)
        CHECK(kctx_crc32c_xpow8n(n) == crc_bitwise(0x80000000u, zeros, n), "n=%u", n);
    CHECK(kctx_crc32c_xpow8n(KCTX_CRC32C_LONG_STREAM) == KCTX_CRC32C_LONG_SHIFT);
    CHECK(kctx_crc32c_xpow8n(KCTX_CRC32C_SHORT_STREAM) == KCTX_CRC32C_SHORT_SHIFT);
    /* Multiplication is shifting: crc * x^(8n) == crc after n zero bytes. */
    uint64_t st = 7;
    for (int i = 0; i < 100; i++) {
        uint8_t r[4];
        fill_random(r, 4, &st);
        uint32_t crc =
            (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16 | (uint32_t)r[3] << 24;
        uint32_t n = (uint32_t)(i % 64);
        CHECK(kctx_crc32c_gf_mul(crc, kctx_crc32c_xpow8n(n)) == crc_bitwise(crc, zeros, n));
    }
}

static void test_implementations_agree(void) {
    if (!kctx_crc32c_have_sse42())
        printf("note: this CPU or build has no SSE4.2: checking the portable version only\n");
    const size_t max = 2 * 3 * KCTX_CRC32C_LONG_STREAM + 3 * KCTX_CRC32C_SHORT_STREAM + 4099;
    uint8_t *buf = malloc(max + 16);
    REQUIRE(buf != NULL);
    uint64_t st = 42;
    fill_random(buf, max + 16, &st);
    /* Every length up to 3 short streams and a bit, then lengths around the
     * stream boundaries, each at several misalignments. */
    size_t lens[64];
    size_t nl = 0;
    const size_t marks[] = {3 * KCTX_CRC32C_SHORT_STREAM, 3 * KCTX_CRC32C_LONG_STREAM,
                            2 * 3 * KCTX_CRC32C_LONG_STREAM + 3 * KCTX_CRC32C_SHORT_STREAM};
    for (size_t m = 0; m < sizeof marks / sizeof marks[0]; m++)
        for (int d = -9; d <= 9; d += 3) lens[nl++] = marks[m] + (size_t)d;
    lens[nl++] = max;
    for (size_t len = 0; len <= 3 * KCTX_CRC32C_SHORT_STREAM + 40; len += (len < 300 ? 1 : 61)) {
        for (size_t off = 0; off < 8; off += 3) {
            uint32_t ref = crc_bitwise(~0u, buf + off, len);
            CHECK(kctx_crc32c_update_portable(~0u, buf + off, len) == ref,
                  "portable len=%zu off=%zu", len, off);
            CHECK(kctx_crc32c_update_sse42(~0u, buf + off, len) == ref, "sse42 len=%zu off=%zu",
                  len, off);
        }
    }
    for (size_t i = 0; i < nl; i++) {
        for (size_t off = 0; off < 16; off += 5) {
            uint32_t ref = crc_bitwise(~0u, buf + off, lens[i]);
            CHECK(kctx_crc32c_update_portable(~0u, buf + off, lens[i]) == ref, "len=%zu", lens[i]);
            CHECK(kctx_crc32c_update_sse42(~0u, buf + off, lens[i]) == ref, "len=%zu", lens[i]);
            CHECK(kctx_crc32c(buf + off, lens[i]) == ~ref);
        }
    }
    /* Incremental use: splitting the input anywhere gives the same CRC. */
    uint32_t whole = kctx_crc32c_update(~0u, buf, 100000);
    for (size_t cut = 0; cut <= 100000; cut += 9973)
        CHECK(kctx_crc32c_update(kctx_crc32c_update(~0u, buf, cut), buf + cut, 100000 - cut) ==
              whole);
    free(buf);
}

int main(void) {
    RUN(test_check_value);
    RUN(test_tables_match_definition);
    RUN(test_shift_constants);
    RUN(test_implementations_agree);
    return check_summary();
}
