/*
 * smbd_wire.h - MS-SMBD message layouts (MS-SMBD 2.2): offsets, sizes and constants, and
 * little-endian accessors. Every field is a little-endian unsigned integer (2.2).
 */
#ifndef SMBD_WIRE_H
#define SMBD_WIRE_H

#include <stdint.h>

#define SMBD_VERSION_1                0x0100      /* 2.2.1: the only version */
#define SMBD_PORT_IWARP               5445        /* 1.9 */

/* Negotiate Request, 20 bytes (2.2.1). */
#define SMBD_NEGREQ_MIN_VERSION       0
#define SMBD_NEGREQ_MAX_VERSION       2
#define SMBD_NEGREQ_RESERVED          4
#define SMBD_NEGREQ_CREDITS_REQUESTED 6
#define SMBD_NEGREQ_PREFERRED_SEND    8
#define SMBD_NEGREQ_MAX_RECEIVE       12
#define SMBD_NEGREQ_MAX_FRAGMENTED    16
#define SMBD_NEGREQ_SIZE              20

/* Negotiate Response, 32 bytes (2.2.2). */
#define SMBD_NEGRESP_MIN_VERSION       0
#define SMBD_NEGRESP_MAX_VERSION       2
#define SMBD_NEGRESP_NEGOTIATED        4
#define SMBD_NEGRESP_RESERVED          6
#define SMBD_NEGRESP_CREDITS_REQUESTED 8
#define SMBD_NEGRESP_CREDITS_GRANTED   10
#define SMBD_NEGRESP_STATUS            12
#define SMBD_NEGRESP_MAX_READ_WRITE    16
#define SMBD_NEGRESP_PREFERRED_SEND    20
#define SMBD_NEGRESP_MAX_RECEIVE       24
#define SMBD_NEGRESP_MAX_FRAGMENTED    28
#define SMBD_NEGRESP_SIZE              32

/* Data Transfer message (2.2.3): a 20-byte header, 4 bytes of padding when there is payload,
 * payload at DataOffset (24 in practice: Windows, ksmbd and Wireshark's heuristic use it). */
#define SMBD_DATA_CREDITS_REQUESTED   0
#define SMBD_DATA_CREDITS_GRANTED     2
#define SMBD_DATA_FLAGS               4
#define SMBD_DATA_RESERVED            6
#define SMBD_DATA_REMAINING           8
#define SMBD_DATA_OFFSET              12
#define SMBD_DATA_LENGTH              16
#define SMBD_DATA_HEADER_SIZE         20
#define SMBD_DATA_PAYLOAD_OFFSET      24
#define SMBD_FLAG_RESPONSE_REQUESTED  0x0001

/* Buffer Descriptor V1, 16 bytes (2.2.3.1). */
#define SMBD_BUFDESC_OFFSET           0
#define SMBD_BUFDESC_TOKEN            8
#define SMBD_BUFDESC_LENGTH           12
#define SMBD_BUFDESC_SIZE             16

/* Protocol minima (3.1.5.2, 3.1.5.7). */
#define SMBD_MIN_RECEIVE_SIZE         128
#define SMBD_MIN_FRAGMENTED_SIZE      131072
/* The client's negotiate receive must hold at least this much (3.1.4.1). */
#define SMBD_NEGOTIATE_RECEIVE_SIZE   512

static inline uint16_t smbd_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t smbd_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t smbd_get64(const uint8_t *p) { return smbd_get32(p) | (uint64_t)smbd_get32(p + 4) << 32; }
static inline void smbd_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void smbd_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void smbd_put64(uint8_t *p, uint64_t v) { smbd_put32(p, (uint32_t)v); smbd_put32(p + 4, (uint32_t)(v >> 32)); }

#endif /* SMBD_WIRE_H */
