/* ndk_pattern.c - the payload pattern shared by the tools and the tests (ndk_pattern.h). */
#include "ndk_pattern.h"

#include <string.h>

/* The stream's base: the seed, mixed (splitmix64's finaliser), so that nearby seeds give
 * unrelated streams. */
static inline uint64_t pattern_base(uint64_t seed)
{
    uint64_t x = seed + 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Word w: a Weyl step from the base, folded so that every byte depends on the high bits. An
 * add, a shift and an xor per word: the loops below vectorise, and each word differs from its
 * neighbours, so data placed at the wrong offset shows. */
#define PATTERN_STEP 0x9E3779B97F4A7C15ull

static inline uint64_t pattern_at(uint64_t base, uint64_t w)
{
    uint64_t x = base + w * PATTERN_STEP;
    return x ^ (x >> 29);
}

static inline uint64_t pattern_word(uint64_t seed, uint64_t w) { return pattern_at(pattern_base(seed), w); }

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
    /* x is the Weyl step of word w (pattern_at), advanced by addition. */
    uint64_t x = pattern_base(seed) + ((origin + i) >> 3) * PATTERN_STEP;
    for (; i + 8 <= len; i += 8, x += PATTERN_STEP) {
        uint64_t v = pattern_le(x ^ (x >> 29));
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
    /* Blocks of 64 bytes compared with one branch, so that the loop vectorises. */
    uint64_t x = pattern_base(seed) + ((origin + i) >> 3) * PATTERN_STEP;
    for (; i + 64 <= len; i += 64, x += 8 * PATTERN_STEP) {
        uint64_t diff = 0, y = x;
        for (unsigned k = 0; k < 8; k++, y += PATTERN_STEP) {
            uint64_t v;
            memcpy(&v, p + i + 8 * k, 8);
            diff |= v ^ pattern_le(y ^ (y >> 29));
        }
        if (diff)
            break;
    }
    for (; i + 8 <= len; i += 8, x += PATTERN_STEP) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        if (v != pattern_le(x ^ (x >> 29)))
            break;
    }
    for (; i < len; i++)
        if (p[i] != ndk_pattern_byte(seed, origin + i))
            return i;
    return len;
}
