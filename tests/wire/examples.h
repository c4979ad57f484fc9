/* The worked examples (examples.c) Ex1 to Ex7: the exact bytes, and the header each
 * FPDU is built from. Shared by the vector, split, hostile and tshark tests. */
#ifndef WIRE_TEST_EXAMPLES_H
#define WIRE_TEST_EXAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fpdu.h"
#include "mpa.h"

struct wex_mpa {
    const char *name;
    struct iw_mpa_frame frame;
    const uint8_t *bytes;
    size_t len;
};

struct wex_fpdu {
    const char *name;
    struct iw_fpdu_hdr hdr;     /* TX description (opcode, last, stag/to or msn/mo, rr, term) */
    const uint8_t *payload;
    size_t payload_len;
    bool crc;                   /* CRC field computed (true) or zero */
    uint32_t crc_value;         /* the value the spec states, 0 when crc is false */
    const uint8_t *bytes;
    size_t len;
};

extern const struct wex_mpa wex_mpa[];
extern const size_t wex_mpa_count;
extern const struct wex_fpdu wex_fpdu[];
extern const size_t wex_fpdu_count;

/* siw-style Terminates (x86 bitfield layout, tests/interop/README.md), as bytes only. */
extern const uint8_t wex_siw_term_crc[28];
extern const uint8_t wex_siw_term_nobuf[48];

#endif
