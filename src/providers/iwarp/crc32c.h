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
 * iw_crc32c_update() uses the SSE4.2 crc32 instruction when the CPU has it (detected once, at
 * first use) and a slicing-by-8 table otherwise; both give identical results. Thread-safe.
 *
 * Talks to: nothing (included by fpdu.c, tx.c and the wire tests). */
#ifndef IWARP_CRC32C_H
#define IWARP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#define IW_CRC32C_INIT      0xFFFFFFFFu
/* CRC-32C over a frame followed by its own correct trailer (LSB first) is this constant, so a
 * receiver may run the trailer through the CRC instead of comparing (iwarp-wire.md §2.6). */
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

/* One-shot CRC-32C of a buffer. */
uint32_t iw_crc32c(const void *buf, size_t len);

/* The two implementations, exposed so tests can prove they agree. iw_crc32c_update_hw() must only
 * be called when iw_crc32c_hw_available() returns non-zero. */
uint32_t iw_crc32c_update_sw(uint32_t state, const void *buf, size_t len);
uint32_t iw_crc32c_update_hw(uint32_t state, const void *buf, size_t len);
int iw_crc32c_hw_available(void);

/* "sse4.2" or "slicing-by-8": what iw_crc32c_update() uses on this CPU, for logs. */
const char *iw_crc32c_impl_name(void);

#endif
