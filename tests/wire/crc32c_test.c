/* CRC-32C: published vectors (RFC 3720 B.4, the CRC catalogue check value, worked-example CRCs),
 * and agreement of every implementation this CPU runs (slicing-by-8, one crc32 stream, three
 * interleaved streams joined by carry-less multiplication, folding by 256- and 512-bit
 * carry-less multiplication, the latter beside three crc32 streams), plain and copying, with a
 * bit-at-a-time reference: every length 0..4096 at every alignment, every length within 64
 * bytes of the folds' step and block sizes, random lengths up to 2 MiB at random source and
 * destination offsets, and the same data fed in random pieces, including pieces handed from one
 * implementation to another. The copying form must copy exactly and write nothing outside the
 * destination. On a CPU with AVX-512 and VPCLMULQDQ the fold beside crc32 must be the one used. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

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
#define WIRE_RND_SEED 0x9E3779B97F4A7C15ull
#include "wire_rnd.h"

static const struct iw_crc32c_impl *impls;
static size_t nimpl;

enum { GUARD = 64 };
static uint8_t *copy_buf;      /* GUARD + up to MAXCOPY + 64 + GUARD bytes */
#define MAXCOPY ((size_t)2 << 20)

/* Runs the copying form of impl into a destination at offset doff inside guard bytes; checks
 * that it copied exactly, wrote nothing else, and returns the final CRC. */
static uint32_t copy_crc(const struct iw_crc32c_impl *im, const uint8_t *p, size_t len, size_t doff)
{
    uint8_t *d = copy_buf + GUARD + doff;
    uint8_t fill = (uint8_t)(rnd() | 1);
    memset(copy_buf, fill, GUARD + doff + len + GUARD);
    uint32_t c = iw_crc32c_final(im->copy(d, p, len, iw_crc32c_init()));
    CHECK_MSG(memcmp(d, p, len) == 0, "%s copy, len %zu: the copy differs", im->name, len);
    for (size_t i = 0; i < GUARD + doff; i++)
        CHECK_MSG(copy_buf[i] == fill, "%s copy, len %zu: wrote before the destination", im->name, len);
    for (size_t i = 0; i < GUARD; i++)
        CHECK_MSG(d[len + i] == fill, "%s copy, len %zu: wrote past the destination", im->name, len);
    return c;
}

static void check_vector(const char *what, const uint8_t *p, size_t len, uint32_t want,
                         const uint8_t wire[4])
{
    uint8_t le[4];
    CHECK_MSG(ref_crc(p, len) == want, "%s: reference gives %08x, want %08x", what, ref_crc(p, len), want);
    CHECK_MSG(iw_crc32c(p, len) == want, "%s: iw_crc32c %08x, want %08x", what, iw_crc32c(p, len), want);
    for (size_t i = 0; i < nimpl; i++) {
        uint32_t u = iw_crc32c_final(impls[i].update(iw_crc32c_init(), p, len));
        CHECK_MSG(u == want, "%s: %s gives %08x, want %08x", what, impls[i].name, u, want);
        u = copy_crc(&impls[i], p, len, i);
        CHECK_MSG(u == want, "%s: %s copy gives %08x, want %08x", what, impls[i].name, u, want);
    }
    CHECK_EQ(iw_crc32c_final(iw_crc32c_copy(copy_buf, p, len, iw_crc32c_init())), want);
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

/* Feeds p in pieces cut at random points, each piece through an implementation picked at random
 * (plain or copying), so a state handed between implementations mid-stream is checked too. */
static uint32_t split_crc(const uint8_t *p, size_t len, int mix, size_t which)
{
    uint32_t st = iw_crc32c_init();
    size_t pos = 0;
    while (pos < len) {
        size_t n;
        switch (rnd() % 4) {
        case 0: n = (size_t)(rnd() % 8); break;
        case 1: n = (size_t)(rnd() % 20000); break;
        default: n = (size_t)(rnd() % (len - pos + 1)); break;
        }
        if (n > len - pos)
            n = len - pos;
        const struct iw_crc32c_impl *im = &impls[mix ? (size_t)(rnd() % nimpl) : which];
        if (rnd() & 1)
            st = im->update(st, p + pos, n);
        else {
            st = im->copy(copy_buf + pos, p + pos, n, st);
            CHECK_MSG(memcmp(copy_buf + pos, p + pos, n) == 0, "%s copy of a piece differs", im->name);
        }
        pos += n;
    }
    return iw_crc32c_final(st);
}

/* Every length 0..4096, each at alignment len % 8 (so every length also walks every alignment). */
static void test_small(void)
{
    enum { MAXLEN = 4096 };
    uint8_t *buf = malloc(MAXLEN + 16);
    CHECK(buf != NULL);

    for (size_t len = 0; len <= MAXLEN; len++) {
        uint8_t *p = buf + len % 8;
        for (size_t i = 0; i < len; i++)
            p[i] = (uint8_t)rnd();
        uint32_t want = ref_crc(p, len);
        CHECK_EQ(iw_crc32c(p, len), want);
        for (size_t k = 0; k < nimpl; k++) {
            const struct iw_crc32c_impl *im = &impls[k];
            uint32_t u = iw_crc32c_final(im->update(iw_crc32c_init(), p, len));
            CHECK_MSG(u == want, "len %zu: %s %08x, reference %08x", len, im->name, u, want);
            u = copy_crc(im, p, len, (len / 8 + k) % 8);
            CHECK_MSG(u == want, "len %zu: %s copy %08x, reference %08x", len, im->name, u, want);
            CHECK_MSG(split_crc(p, len, 0, k) == want, "len %zu: %s in pieces differs", len, im->name);
        }
        CHECK_MSG(split_crc(p, len, 1, 0) == want, "len %zu: mixed implementations differ", len);
    }
    free(buf);
}

/* Random lengths up to 2 MiB at random offsets, plus the lengths around every block boundary
 * of the interleaved implementation (3 x 256 and 3 x 4096 bytes). */
static void test_large(void)
{
    static const size_t edges[] = { 767, 768, 769, 775, 776, 1535, 1536, 12287, 12288, 12289, 12295,
                                    12288 + 768, 12288 + 767, 24576 + 768 + 7, 65536, 65535, 65537,
                                    1048576, MAXCOPY - 64, MAXCOPY };
    const size_t nedge = sizeof edges / sizeof edges[0];
    uint8_t *buf = malloc(MAXCOPY + 128);
    CHECK(buf != NULL);
    for (size_t i = 0; i < MAXCOPY + 128; i++)
        buf[i] = (uint8_t)rnd();

    for (size_t t = 0; t < nedge + 120; t++) {
        size_t len = t < nedge ? edges[t] : (size_t)(rnd() % (MAXCOPY + 1));
        size_t soff = (size_t)(rnd() % 64);
        if (len > MAXCOPY + 64 - soff)
            len = MAXCOPY + 64 - soff;
        if (len > MAXCOPY)
            len = MAXCOPY;
        const uint8_t *p = buf + soff;
        uint32_t want = ref_crc(p, len);
        CHECK_MSG(iw_crc32c(p, len) == want, "len %zu at +%zu: iw_crc32c differs", len, soff);
        for (size_t k = 0; k < nimpl; k++) {
            const struct iw_crc32c_impl *im = &impls[k];
            uint32_t u = iw_crc32c_final(im->update(iw_crc32c_init(), p, len));
            CHECK_MSG(u == want, "len %zu at +%zu: %s %08x, reference %08x", len, soff, im->name, u, want);
            size_t doff = (size_t)(rnd() % 64);
            u = copy_crc(im, p, len, doff);
            CHECK_MSG(u == want, "len %zu at +%zu -> +%zu: %s copy %08x, reference %08x", len, soff, doff,
                      im->name, u, want);
            if (t % 8 == 0)
                CHECK_MSG(split_crc(p, len, 0, k) == want, "len %zu: %s in pieces differs", len, im->name);
        }
        if (t % 4 == 0)
            CHECK_MSG(split_crc(p, len, 1, 0) == want, "len %zu: mixed implementations differ", len);
    }
    free(buf);
}

/* Lengths within 64 bytes either side of where the folds change step: 256 and 384 (the zmm
 * steps), 512 (where the zmm fold starts), multiples of 4608 (a block of the fold beside crc32)
 * and such a multiple plus a step, and 32768 (where that fold starts); each at a source offset
 * and, for the copy, a destination offset that move with the length, so the copy's alignment
 * head pushes some lengths back below a boundary. */
static void test_edges(void)
{
    static const size_t bases[] = { 256, 384, 512, 768, 1024, 4608, 4608 + 384, 2 * 4608, 32768,
                                    8 * 4608, 8 * 4608 + 384, 9 * 4608 + 1024, 65536 };
    enum { MAXLEN = 65536 + 64 };
    uint8_t *buf = malloc(MAXLEN + 64);
    CHECK(buf != NULL);
    for (size_t i = 0; i < MAXLEN + 64; i++)
        buf[i] = (uint8_t)rnd();

    for (size_t b = 0; b < sizeof bases / sizeof bases[0]; b++) {
        for (size_t len = bases[b] - 64; len <= bases[b] + 64; len++) {
            const uint8_t *p = buf + (len + b) % 64;
            uint32_t want = ref_crc(p, len);
            for (size_t k = 0; k < nimpl; k++) {
                const struct iw_crc32c_impl *im = &impls[k];
                uint32_t u = iw_crc32c_final(im->update(iw_crc32c_init(), p, len));
                CHECK_MSG(u == want, "len %zu: %s %08x, reference %08x", len, im->name, u, want);
                u = copy_crc(im, p, len, (len * 7 + k) % 64);
                CHECK_MSG(u == want, "len %zu: %s copy %08x, reference %08x", len, im->name, u, want);
            }
        }
    }
    free(buf);
}

/* Whether this CPU and OS run the 512-bit fold: AVX512F, AVX512VL and VPCLMULQDQ, and XCR0
 * saving the SSE, AVX, opmask and both zmm states. Checked here independently of crc32c.c. */
static int cpu_has_avx512_fold(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)) || !(c & (1u << 20)) || !(c & (1u << 1)))
        return 0;                                  /* OSXSAVE, SSE4.2, PCLMULQDQ */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    if (!(b & (1u << 16)) || !(b & (1u << 31)) || !(b & (1u << 5)) || !(c & (1u << 10)))
        return 0;                                  /* AVX512F, AVX512VL, AVX2, VPCLMULQDQ */
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 0xE6) == 0xE6;
#else
    return 0;
#endif
}

int main(void)
{
    copy_buf = malloc(GUARD + MAXCOPY + 64 + GUARD);
    CHECK(copy_buf != NULL);
    nimpl = iw_crc32c_impls(&impls);
    CHECK(nimpl >= 1);
    CHECK_MSG(strcmp(impls[nimpl - 1].name, iw_crc32c_impl_name()) == 0, "iw_crc32c_update uses %s, not the last of the list",
              iw_crc32c_impl_name());
    if (cpu_has_avx512_fold())
        CHECK_MSG(strcmp(iw_crc32c_impl_name(), "avx512 fold+crc32 3-way") == 0,
                  "this CPU runs AVX-512 and VPCLMULQDQ, but iw_crc32c_update uses %s", iw_crc32c_impl_name());
    printf("crc32c implementation: %s; comparing:", iw_crc32c_impl_name());
    for (size_t i = 0; i < nimpl; i++)
        printf(" [%s]", impls[i].name);
    printf("\n");
    test_vectors();
    test_small();
    test_edges();
    test_large();
    if (nimpl == 1)
        printf("note: no SSE4.2 on this CPU; only the table path was compared with the reference\n");
    else if (nimpl == 2)
        printf("note: no PCLMULQDQ on this CPU; the interleaved path was not run\n");
    free(copy_buf);
    printf("crc32c: OK\n");
    return 0;
}
