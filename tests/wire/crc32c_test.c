/* CRC-32C: published vectors (RFC 3720 B.4, the CRC catalogue check value, iwarp-wire.md §10.1),
 * and agreement of the SSE4.2 path, the slicing-by-8 path and a bit-at-a-time reference on random
 * buffers of every length 0..4096, at every alignment, fed in random pieces. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "iwarp_wire.h"
#include "testlib.h"

/* The definition itself, one bit at a time: reflected polynomial 0x82F63B78. */
static uint32_t ref_update(uint32_t c, const uint8_t *p, size_t len)
{
    while (len--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return c;
}

static uint32_t ref_crc(const uint8_t *p, size_t len)
{
    return ~ref_update(0xFFFFFFFFu, p, len);
}

/* Deterministic xorshift so failures reproduce. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef uint32_t (*update_fn)(uint32_t, const void *, size_t);

static void check_vector(const char *what, const uint8_t *p, size_t len, uint32_t want,
                         const uint8_t wire[4])
{
    uint8_t le[4];
    CHECK_MSG(ref_crc(p, len) == want, "%s: reference gives %08x, want %08x", what, ref_crc(p, len), want);
    CHECK_MSG(iw_crc32c(p, len) == want, "%s: iw_crc32c %08x, want %08x", what, iw_crc32c(p, len), want);
    CHECK_EQ(iw_crc32c_final(iw_crc32c_update_sw(iw_crc32c_init(), p, len)), want);
    if (iw_crc32c_hw_available())
        CHECK_EQ(iw_crc32c_final(iw_crc32c_update_hw(iw_crc32c_init(), p, len)), want);
    /* The value goes on the wire LSB first: these are the bytes RFC 3720 prints. */
    iw_put_le32(le, want);
    if (wire)
        CHECK_MSG(memcmp(le, wire, 4) == 0, "%s: wire bytes differ", what);
    /* Residue: the CRC over data + its own trailer is a constant. */
    uint8_t *buf = malloc(len + 4);
    CHECK(buf != NULL);
    memcpy(buf, p, len);
    memcpy(buf + len, le, 4);
    CHECK_EQ(iw_crc32c(buf, len + 4), IW_CRC32C_RESIDUE);
    free(buf);
}

static void test_vectors(void)
{
    uint8_t b[48];

    check_vector("123456789", (const uint8_t *)"123456789", 9, 0xE3069283u, NULL);
    check_vector("empty", b, 0, 0x00000000u, NULL);

    memset(b, 0, 32);
    check_vector("32 x 00", b, 32, 0x8A9136AAu, (const uint8_t[]){ 0xaa, 0x36, 0x91, 0x8a });
    memset(b, 0xff, 32);
    check_vector("32 x ff", b, 32, 0x62A8AB43u, (const uint8_t[]){ 0x43, 0xab, 0xa8, 0x62 });
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    check_vector("00..1f", b, 32, 0x46DD794Eu, (const uint8_t[]){ 0x4e, 0x79, 0xdd, 0x46 });
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    check_vector("1f..00", b, 32, 0x113FDB5Cu, (const uint8_t[]){ 0x5c, 0xdb, 0x3f, 0x11 });
    /* RFC 3720 B.4: an iSCSI SCSI Read (10) command PDU. */
    memset(b, 0, 48);
    b[0] = 0x01, b[1] = 0xc0, b[16] = 0x14, b[22] = 0x04, b[27] = 0x14, b[31] = 0x18, b[32] = 0x28, b[40] = 0x02;
    check_vector("iSCSI read PDU", b, 48, 0xD9963A56u, (const uint8_t[]){ 0x56, 0x3a, 0x96, 0xd9 });
}

/* Feeds buf in pieces cut at random points and checks the result. */
static uint32_t split_crc(update_fn fn, const uint8_t *p, size_t len)
{
    uint32_t st = iw_crc32c_init();
    size_t pos = 0;
    while (pos < len) {
        size_t n = (size_t)(rnd() % 4 == 0 ? rnd() % 8 : rnd() % (len - pos + 1));
        if (n > len - pos)
            n = len - pos;
        st = fn(st, p + pos, n);
        pos += n;
    }
    return iw_crc32c_final(st);
}

static void test_random(void)
{
    enum { MAXLEN = 4096 };
    uint8_t *buf = malloc(MAXLEN + 16);
    int hw = iw_crc32c_hw_available();
    CHECK(buf != NULL);

    for (size_t len = 0; len <= MAXLEN; len++) {
        size_t align = len % 8;             /* every length also walks every alignment */
        uint8_t *p = buf + align;
        for (size_t i = 0; i < len; i++)
            p[i] = (uint8_t)rnd();
        uint32_t want = ref_crc(p, len);
        uint32_t sw = iw_crc32c_final(iw_crc32c_update_sw(iw_crc32c_init(), p, len));
        CHECK_MSG(sw == want, "len %zu: slicing-by-8 %08x, reference %08x", len, sw, want);
        CHECK_MSG(split_crc(iw_crc32c_update_sw, p, len) == want, "len %zu: split sw differs", len);
        CHECK_EQ(iw_crc32c(p, len), want);
        CHECK_EQ(split_crc(iw_crc32c_update, p, len), want);
        if (hw) {
            uint32_t h = iw_crc32c_final(iw_crc32c_update_hw(iw_crc32c_init(), p, len));
            CHECK_MSG(h == want, "len %zu: sse4.2 %08x, reference %08x", len, h, want);
            CHECK_MSG(split_crc(iw_crc32c_update_hw, p, len) == want, "len %zu: split hw differs", len);
        }
    }
    /* A non-initial state carried between the two implementations mid-stream. */
    if (hw) {
        for (int i = 0; i < 2000; i++) {
            size_t len = (size_t)(rnd() % MAXLEN), cut = len ? (size_t)(rnd() % len) : 0;
            for (size_t j = 0; j < len; j++)
                buf[j] = (uint8_t)rnd();
            uint32_t st = iw_crc32c_update_sw(iw_crc32c_init(), buf, cut);
            st = iw_crc32c_update_hw(st, buf + cut, len - cut);
            CHECK_EQ(iw_crc32c_final(st), ref_crc(buf, len));
        }
    }
    free(buf);
}

int main(void)
{
    printf("crc32c implementation: %s\n", iw_crc32c_impl_name());
    test_vectors();
    test_random();
    if (!iw_crc32c_hw_available())
        printf("note: no SSE4.2 on this CPU; only the table path was compared\n");
    printf("crc32c: OK\n");
    return 0;
}
