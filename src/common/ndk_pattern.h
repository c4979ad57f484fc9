/* ndk_pattern: the one payload pattern of the tools (ndkping, ndkperf) and the tests. A pattern
 * is an endless stream of 64-bit words named by a seed; word w of the stream is a mix of seed
 * and w, stored little-endian. A buffer holds the stream from some byte position ("origin")
 * on, so the same data placed at the wrong offset fails the check. Filling and checking run a
 * word at a time, fast enough to verify payloads at link speed. */
#ifndef NDK_PATTERN_H
#define NDK_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* The stream's byte at position pos. */
uint8_t ndk_pattern_byte(uint64_t seed, uint64_t pos);
/* Writes bytes origin .. origin + len - 1 of stream seed into buf. Never blocks. */
void ndk_pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t origin);
/* Compares buf with bytes origin .. origin + len - 1 of stream seed; returns len when all of
 * them match, otherwise the index (in buf) of the first byte that differs. Never blocks. */
size_t ndk_pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t origin);

#endif
