/* wire_rnd.h - the wire tests' xorshift64 generator: reproducible streams and splits, so a
 * failure replays exactly. Each test keeps its own seed (WIRE_RND_SEED before including). */
#ifndef WIRE_RND_H
#define WIRE_RND_H

#include <stdint.h>

static uint64_t rng_state = WIRE_RND_SEED;

static inline uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

#endif
