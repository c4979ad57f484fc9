/* ndk_pattern.c - the payload pattern shared by the tools and the tests (ndk_pattern.h). */
#include "ndk_pattern.h"

#include <string.h>

/* One multiply-xorshift round per word: cheap, and every bit of w and seed reaches every byte,
 * so a shifted or swapped word shows. */
static inline uint64_t pattern_word(uint64_t seed, uint64_t w)
{
    uint64_t x = (w ^ seed) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

static inline uint64_t pattern_le(uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(v);
#else
    return v;
#endif
}

uint8_t ndk_pattern_byte(uint64_t seed, uint64_t pos)
{
    return (uint8_t)(pattern_word(seed, pos >> 3) >> (8 * (pos & 7)));
}

void ndk_pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t origin)
{
    uint8_t *p = buf;
    size_t i = 0;
    for (; i < len && ((origin + i) & 7); i++)
        p[i] = ndk_pattern_byte(seed, origin + i);
    for (uint64_t w = (origin + i) >> 3; i + 8 <= len; i += 8, w++) {
        uint64_t v = pattern_le(pattern_word(seed, w));
        memcpy(p + i, &v, 8);
    }
    for (; i < len; i++)
        p[i] = ndk_pattern_byte(seed, origin + i);
}

size_t ndk_pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t origin)
{
    const uint8_t *p = buf;
    size_t i = 0;
    for (; i < len && ((origin + i) & 7); i++)
        if (p[i] != ndk_pattern_byte(seed, origin + i))
            return i;
    for (uint64_t w = (origin + i) >> 3; i + 8 <= len; i += 8, w++) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        if (v != pattern_le(pattern_word(seed, w)))
            break;
    }
    for (; i < len; i++)
        if (p[i] != ndk_pattern_byte(seed, origin + i))
            return i;
    return len;
}
