/* CRC-32C (Castagnoli), the MPA FPDU CRC (RFC 5044 §4, same algorithm as iSCSI RFC 3720 B.4).
 *
 * Reflected polynomial 0x82F63B78, register preset to all ones, final complement. The API is
 * incremental so a resumable receive engine can feed a frame in whatever pieces TCP hands it:
 *
 *     uint32_t st = iw_crc32c_init();
 *     st = iw_crc32c_update(st, part1, n1);
 *     st = iw_crc32c_update(st, part2, n2);
 *     uint32_t crc = iw_crc32c_final(st);      // write with iw_put_le32() on the wire
 *
 * Where the receiver copies the data anyway, iw_crc32c_copy() computes the same state in the
 * same pass as the copy, so the bytes are read once.
 *
 * iw_crc32c_update() and iw_crc32c_copy() pick, once at first use, the fastest implementation
 * this CPU runs: on x86-64 with AVX-512 and VPCLMULQDQ folding by 512-bit carry-less
 * multiplication side by side with three crc32 streams (the copying form folds alone), with
 * AVX2 and VPCLMULQDQ folding by 256 bits, with PCLMULQDQ three interleaved streams of the
 * SSE4.2 crc32 instruction, with SSE4.2 alone one stream, elsewhere a slicing-by-8 table. All
 * give identical results. Thread-safe.
 *
 * Talks to: nothing (included by fpdu.c, tx.c, the wire tests and bench/crc_bench). */
#ifndef IWARP_CRC32C_H
#define IWARP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#define IW_CRC32C_INIT      0xFFFFFFFFu
/* CRC-32C over a frame followed by its own correct trailer (LSB first) is this constant, so a
 * receiver may run the trailer through the CRC instead of comparing (RFC 5044 §4.4). */
#define IW_CRC32C_RESIDUE   0x48674BC7u

static inline uint32_t iw_crc32c_init(void)
{
    return IW_CRC32C_INIT;
}

static inline uint32_t iw_crc32c_final(uint32_t state)
{
    return ~state;
}

/* Feeds len bytes into a running state; returns the new state. len may be 0. */
uint32_t iw_crc32c_update(uint32_t state, const void *buf, size_t len);

/* Copies len bytes from src to dst (which must not overlap, as for memcpy) and feeds them into
 * a running state; returns the new state, the same as iw_crc32c_update(state, src, len). */
uint32_t iw_crc32c_copy(void *dst, const void *src, size_t len, uint32_t state);

/* One-shot CRC-32C of a buffer. */
uint32_t iw_crc32c(const void *buf, size_t len);

/* The implementations, exposed so tests can prove they agree and benchmarks can compare them. */
struct iw_crc32c_impl {
    const char *name;
    uint32_t (*update)(uint32_t state, const void *buf, size_t len);
    uint32_t (*copy)(void *dst, const void *src, size_t len, uint32_t state);
};
/* Sets *list to the implementations this CPU runs and returns their count (at least 1): the
 * portable one first, the one iw_crc32c_update() uses last. */
size_t iw_crc32c_impls(const struct iw_crc32c_impl **list);

/* The portable implementation, and the fastest one this CPU runs (the same as
 * iw_crc32c_update()); iw_crc32c_hw_available() is non-zero when that one uses CPU
 * instructions rather than the table. */
uint32_t iw_crc32c_update_sw(uint32_t state, const void *buf, size_t len);
uint32_t iw_crc32c_copy_sw(void *dst, const void *src, size_t len, uint32_t state);
uint32_t iw_crc32c_update_hw(uint32_t state, const void *buf, size_t len);
int iw_crc32c_hw_available(void);

/* Which implementation iw_crc32c_update() uses on this CPU ("avx512 fold+crc32 3-way",
 * "avx2+vpclmulqdq fold", "sse4.2+pclmul 3-way", "sse4.2" or "slicing-by-8"), for logs. */
const char *iw_crc32c_impl_name(void);

#endif
