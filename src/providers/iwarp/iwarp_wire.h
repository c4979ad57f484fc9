/* iWARP on-the-wire layouts and protocol codes: MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and
 * RDMAP (RFC 5040), as numbers only.
 *
 * Why offsets and accessors instead of packed structs: every field is big-endian and most are
 * unaligned relative to the FPDU start, so accessors that copy the bytes out (below) are both
 * exact and free of alignment and strict-aliasing traps on hostile buffers. Offsets named IW_OFF_* are measured
 * from the first byte of an FPDU, i.e. they include the 2-byte MPA ULPDU_Length (this is the
 * layout siw's iwarp_ctrl_* structs use too), because that is the buffer the RX and TX engines
 * hold. Bit values are given on the byte they live in; bit 0 in the RFC pictures is the most
 * significant bit of the first byte.
 *
 * This header includes nothing but <stdint.h> on purpose: tests, fuzzers and packet dumpers
 * use it without pulling in the provider.
 *
 * Talks to: nothing: wire formats only, no includes of ours. */
#ifndef IWARP_WIRE_H
#define IWARP_WIRE_H

#include <stdint.h>

/* ---- Big-endian (network order) accessors; the MPA CRC trailer is the only LE field. ----
 * Each is one unaligned load or store through __builtin_memcpy (no include needed, and no
 * aliasing or alignment assumption about the buffer) plus a byte swap where the host is
 * little-endian: a byte-at-a-time form compiles to shifts and ors for every field (about 15
 * instructions for a 32-bit one at an odd offset, where the swap is 2). */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define IW_WIRE_BE16(v) (v)
#define IW_WIRE_BE32(v) (v)
#define IW_WIRE_LE32(v) __builtin_bswap32(v)
#else
#define IW_WIRE_BE16(v) __builtin_bswap16(v)
#define IW_WIRE_BE32(v) __builtin_bswap32(v)
#define IW_WIRE_LE32(v) (v)
#endif

static inline uint16_t iw_get_be16(const uint8_t *p)
{
    uint16_t v;

    __builtin_memcpy(&v, p, sizeof v);
    return (uint16_t)IW_WIRE_BE16(v);
}

static inline uint32_t iw_get_be32(const uint8_t *p)
{
    uint32_t v;

    __builtin_memcpy(&v, p, sizeof v);
    return IW_WIRE_BE32(v);
}

static inline uint64_t iw_get_be64(const uint8_t *p)
{
    return (uint64_t)iw_get_be32(p) << 32 | iw_get_be32(p + 4);
}

static inline void iw_put_be16(uint8_t *p, uint16_t v)
{
    uint16_t w = (uint16_t)IW_WIRE_BE16(v);

    __builtin_memcpy(p, &w, sizeof w);
}

static inline void iw_put_be32(uint8_t *p, uint32_t v)
{
    uint32_t w = IW_WIRE_BE32(v);

    __builtin_memcpy(p, &w, sizeof w);
}

static inline void iw_put_be64(uint8_t *p, uint64_t v)
{
    iw_put_be32(p, (uint32_t)(v >> 32));
    iw_put_be32(p + 4, (uint32_t)v);
}

/* RFC 5044 §4.4: the CRC-32C value goes on the wire least-significant
 * byte first (the same four bytes iSCSI sends). */
static inline uint32_t iw_get_le32(const uint8_t *p)
{
    uint32_t v;

    __builtin_memcpy(&v, p, sizeof v);
    return IW_WIRE_LE32(v);
}

static inline void iw_put_le32(uint8_t *p, uint32_t v)
{
    uint32_t w = IW_WIRE_LE32(v);

    __builtin_memcpy(p, &w, sizeof w);
}

/* ======================================================================================
 * MPA Request / Reply frames (RFC 5044 §7.1, RFC 6581)
 * ====================================================================================== */

#define IW_MPA_KEY_LEN          16
/* The two keys differ only in byte 9 ('q' vs 'p'); neither is NUL-terminated on the wire. */
#define IW_MPA_KEY_REQ          "MPA ID Req Frame"
#define IW_MPA_KEY_REP          "MPA ID Rep Frame"
#define IW_MPA_KEY_DIFF_OFF     9
#define IW_MPA_KEY_REQ_BYTE9    0x71u
#define IW_MPA_KEY_REP_BYTE9    0x70u

#define IW_MPA_OFF_KEY          0
#define IW_MPA_OFF_FLAGS        16
#define IW_MPA_OFF_REV          17
#define IW_MPA_OFF_PD_LEN       18
#define IW_MPA_OFF_PD           20
#define IW_MPA_HDR_LEN          20

/* Flags byte (offset 16). */
#define IW_MPA_FLAG_M           0x80u   /* markers wanted toward the sender of this frame */
#define IW_MPA_FLAG_C           0x40u   /* CRC requested (Request) / in use (Reply) */
#define IW_MPA_FLAG_R           0x20u   /* connection rejected; meaningful in a Reply only */
#define IW_MPA_FLAG_ENHANCED    0x10u   /* RFC 6581: with Rev 2, PD starts with IRD/ORD block */
#define IW_MPA_FLAG_RSVD        0x0Fu   /* send 0, ignore on receive */

#define IW_MPA_REV_PRESTD       0       /* pre-standard RDMAC framing; not implemented */
#define IW_MPA_REV1             1       /* RFC 5044 */
#define IW_MPA_REV2             2       /* RFC 6581 */

/* RFC 5044 §7.1: at most 512 private-data bytes. siw and cxgb4 take at most 256, counted with the
 * 4-byte v2 block (RFC 6581), so that is the interoperable limit. */
#define IW_MPA_PD_MAX_RFC       512
#define IW_MPA_PD_MAX_INTEROP   256

/* RFC 6581 enhanced-setup block: the first 4 private-data bytes, two big-endian words. */
#define IW_MPA_V2_LEN           4
#define IW_MPA_V2_OFF_IRD       0       /* word: A | B | IRD */
#define IW_MPA_V2_OFF_ORD       2       /* word: C | D | ORD */
#define IW_MPA_V2_IRD_P2P       0x8000u /* A: peer-to-peer mode requested / accepted */
#define IW_MPA_V2_IRD_RTR_SEND  0x4000u /* B: zero-length Send may serve as RTR */
#define IW_MPA_V2_ORD_RTR_WRITE 0x8000u /* C: zero-length RDMA Write may serve as RTR */
#define IW_MPA_V2_ORD_RTR_READ  0x4000u /* D: zero-length RDMA Read may serve as RTR */
#define IW_MPA_V2_VALUE_MASK    0x3FFFu /* 14-bit IRD / ORD */
#define IW_MPA_V2_NO_PREF       0x3FFFu /* irdma reads this as "no IRD/ORD preference" */

/* ======================================================================================
 * FPDU framing (RFC 5044 §4): ULPDU_Length(2) | ULPDU | PAD(0..3) | CRC(4)
 * ====================================================================================== */

#define IW_MPA_LEN_SIZE         2
#define IW_MPA_CRC_SIZE         4
#define IW_MPA_ALIGN            4
#define IW_MPA_ULPDU_MAX        0xFFFFu
/* Markers (RFC 5044 §5): 4 bytes every 512 bytes of stream. Not used by siw; kept for sizing. */
#define IW_MPA_MARKER_SIZE      4
#define IW_MPA_MARKER_SPACING   512

/* PAD makes 2 + ULPDU_Length a multiple of 4 (RFC 5044 §4). */
static inline uint32_t iw_mpa_pad_len(uint32_t ulpdu_len)
{
    return (4u - ((ulpdu_len + IW_MPA_LEN_SIZE) & 3u)) & 3u;
}

/* Whole FPDU on the wire, without markers. */
static inline uint32_t iw_mpa_fpdu_len(uint32_t ulpdu_len)
{
    return IW_MPA_LEN_SIZE + ulpdu_len + iw_mpa_pad_len(ulpdu_len) + IW_MPA_CRC_SIZE;
}

/* ======================================================================================
 * DDP (RFC 5041 §4) and RDMAP (RFC 5040 §4) headers
 * ====================================================================================== */

#define IW_OFF_MPA_LEN          0
#define IW_OFF_DDP_CTRL         2
#define IW_OFF_RDMAP_CTRL       3
/* Tagged buffer model (RFC 5041 §4.2) */
#define IW_OFF_STAG             4
#define IW_OFF_TO               8
/* Untagged buffer model (RFC 5041 §4.3); offsets 4..7 are reserved for the ULP, where RDMAP
 * puts the Invalidate STag of Send with Invalidate (RFC 5040 §4). */
#define IW_OFF_INV_STAG         4
#define IW_OFF_QN               8
#define IW_OFF_MSN              12
#define IW_OFF_MO               16

#define IW_DDP_TAGGED_HDR_LEN   14      /* DDP + RDMAP bytes, without the MPA length */
#define IW_DDP_UNTAGGED_HDR_LEN 18
#define IW_FPDU_TAGGED_HDR_LEN  (IW_MPA_LEN_SIZE + IW_DDP_TAGGED_HDR_LEN)     /* 16 */
#define IW_FPDU_UNTAGGED_HDR_LEN (IW_MPA_LEN_SIZE + IW_DDP_UNTAGGED_HDR_LEN)  /* 20 */

/* DDP control byte (offset 2), RFC 5041 §4.1. */
#define IW_DDP_CTRL_T           0x80u   /* tagged buffer model */
#define IW_DDP_CTRL_L           0x40u   /* last segment of the DDP message */
#define IW_DDP_CTRL_RSVD        0x3Cu   /* send 0, ignore on receive */
#define IW_DDP_CTRL_DV_MASK     0x03u
#define IW_DDP_VERSION          1

/* RDMAP control byte (offset 3), RFC 5040 §4. */
#define IW_RDMAP_CTRL_RV_MASK   0xC0u
#define IW_RDMAP_CTRL_RV_SHIFT  6
#define IW_RDMAP_CTRL_RSVD      0x30u
#define IW_RDMAP_CTRL_OP_MASK   0x0Fu
#define IW_RDMAP_VERSION        1

/* RDMAP opcodes (RFC 5040 §4; 0x8..0xB from RFC 7306, which siw does not implement). */
enum iw_rdmap_opcode {
    IW_OP_WRITE             = 0x0,
    IW_OP_READ_REQ          = 0x1,
    IW_OP_READ_RESP         = 0x2,
    IW_OP_SEND              = 0x3,
    IW_OP_SEND_INV          = 0x4,
    IW_OP_SEND_SE           = 0x5,
    IW_OP_SEND_SE_INV       = 0x6,
    IW_OP_TERMINATE         = 0x7,
    IW_OP_IMM_DATA          = 0x8,
    IW_OP_IMM_DATA_SE       = 0x9,
    IW_OP_ATOMIC_REQ        = 0xA,
    IW_OP_ATOMIC_RESP       = 0xB,
};
#define IW_OP_RFC5040_MAX       IW_OP_TERMINATE

/* Untagged queue numbers used by RDMAP (RFC 5040 §5). */
#define IW_QN_SEND              0
#define IW_QN_READ_REQ          1
#define IW_QN_TERMINATE         2

/* RDMA Read Request header (RFC 5040 §4.4): 28 bytes after the untagged DDP header. */
#define IW_READ_REQ_LEN         28
#define IW_RR_OFF_SINK_STAG     0
#define IW_RR_OFF_SINK_TO       4
#define IW_RR_OFF_SIZE          12
#define IW_RR_OFF_SRC_STAG      16
#define IW_RR_OFF_SRC_TO        20
#define IW_OFF_READ_REQ         IW_FPDU_UNTAGGED_HDR_LEN                      /* 20 */
#define IW_FPDU_READ_REQ_HDR_LEN (IW_FPDU_UNTAGGED_HDR_LEN + IW_READ_REQ_LEN) /* 48 */
#define IW_READ_REQ_ULPDU_LEN   (IW_DDP_UNTAGGED_HDR_LEN + IW_READ_REQ_LEN)   /* 46 */

/* ======================================================================================
 * Terminate (RFC 5040 §4.8) and the error codes it carries (RFC 5040 §7, RFC 5041 §7,
 * RFC 5044 §8, RFC 6581, IANA per RFC 6580)
 * ====================================================================================== */

#define IW_TERM_CTRL_LEN        4
#define IW_TERM_OFF_LAYER_ETYPE 0       /* Layer high nibble, EType low nibble */
#define IW_TERM_OFF_ECODE       1
#define IW_TERM_OFF_HDRCT       2       /* M | D | R | reserved */
#define IW_TERM_LAYER_SHIFT     4
#define IW_TERM_ETYPE_MASK      0x0Fu
#define IW_TERM_HDRCT_M         0x80u   /* DDP Segment Length is valid */
#define IW_TERM_HDRCT_D         0x40u   /* the terminated DDP header is attached */
#define IW_TERM_HDRCT_R         0x20u   /* the terminated RDMAP (Read Request) header is attached */
#define IW_TERM_HDRCT_RSVD      0x1Fu
#define IW_TERM_DDP_SEGLEN_LEN  2
#define IW_OFF_TERM_CTRL        IW_FPDU_UNTAGGED_HDR_LEN                      /* 20 */
/* Smallest and largest Terminate ULPDU: control word only, or control word + segment length +
 * untagged DDP header + Read Request header. */
#define IW_TERM_ULPDU_MIN       (IW_DDP_UNTAGGED_HDR_LEN + IW_TERM_CTRL_LEN)  /* 22 */
#define IW_TERM_ULPDU_MAX       (IW_TERM_ULPDU_MIN + IW_TERM_DDP_SEGLEN_LEN + \
                                 IW_DDP_UNTAGGED_HDR_LEN + IW_READ_REQ_LEN)   /* 70 */

enum iw_term_layer {
    IW_TERM_LAYER_RDMAP     = 0x0,
    IW_TERM_LAYER_DDP       = 0x1,
    IW_TERM_LAYER_LLP       = 0x2,      /* MPA over TCP */
};

/* RDMAP layer error types and codes (RFC 5040 §7). */
enum iw_term_rdmap_etype {
    IW_TERM_ETYPE_RDMAP_CATASTROPHIC = 0x0,
    IW_TERM_ETYPE_RDMAP_REMOTE_PROT  = 0x1,
    IW_TERM_ETYPE_RDMAP_REMOTE_OP    = 0x2,
};
enum iw_term_rdmap_ecode {
    IW_TERM_RDMAP_INV_STAG         = 0x00,
    IW_TERM_RDMAP_BASE_BOUNDS      = 0x01,
    IW_TERM_RDMAP_ACCESS           = 0x02,
    IW_TERM_RDMAP_STAG_NOT_STREAM  = 0x03,
    IW_TERM_RDMAP_TO_WRAP          = 0x04,
    IW_TERM_RDMAP_VERSION          = 0x05,
    IW_TERM_RDMAP_OPCODE           = 0x06,
    IW_TERM_RDMAP_CATA_STREAM      = 0x07,
    IW_TERM_RDMAP_CATA_GLOBAL      = 0x08,
    IW_TERM_RDMAP_CANT_INVALIDATE  = 0x09,
    IW_TERM_RDMAP_UNSPECIFIED      = 0xFF,
};

/* DDP layer error types and codes (RFC 5041 §7). */
enum iw_term_ddp_etype {
    IW_TERM_ETYPE_DDP_CATASTROPHIC = 0x0,
    IW_TERM_ETYPE_DDP_TAGGED       = 0x1,
    IW_TERM_ETYPE_DDP_UNTAGGED     = 0x2,
};
enum iw_term_ddp_ecode {
    IW_TERM_DDP_CATASTROPHIC       = 0x00,  /* with IW_TERM_ETYPE_DDP_CATASTROPHIC */
    IW_TERM_DDP_T_INV_STAG         = 0x00,
    IW_TERM_DDP_T_BASE_BOUNDS      = 0x01,
    IW_TERM_DDP_T_STAG_NOT_STREAM  = 0x02,
    IW_TERM_DDP_T_TO_WRAP          = 0x03,
    IW_TERM_DDP_T_VERSION          = 0x04,
    IW_TERM_DDP_U_INV_QN           = 0x01,
    IW_TERM_DDP_U_MSN_NOBUF        = 0x02,
    IW_TERM_DDP_U_MSN_RANGE        = 0x03,
    IW_TERM_DDP_U_INV_MO           = 0x04,
    IW_TERM_DDP_U_TOO_LONG         = 0x05,
    IW_TERM_DDP_U_VERSION          = 0x06,
};

/* LLP (MPA) layer: one error type (RFC 5044 §8), codes 5..7 added by RFC 6581. */
enum iw_term_llp_etype {
    IW_TERM_ETYPE_LLP_MPA          = 0x0,
};
enum iw_term_llp_ecode {
    IW_TERM_LLP_CONN_LOST          = 0x01,
    IW_TERM_LLP_CRC                = 0x02,
    IW_TERM_LLP_MARKER_LEN         = 0x03,  /* marker / ULPDU_Length disagree on FPDU start */
    IW_TERM_LLP_BAD_MPA_FRAME      = 0x04,
    IW_TERM_LLP_CATASTROPHIC       = 0x05,
    IW_TERM_LLP_IRD_INSUFFICIENT   = 0x06,
    IW_TERM_LLP_NO_RTR_MATCH       = 0x07,
};

/* Largest FPDU header any opcode has (Read Request), and the largest thing the RX engine buffers
 * before it can decide (a whole Terminate ULPDU plus its MPA length). */
#define IW_FPDU_MAX_HDR_LEN     IW_FPDU_READ_REQ_HDR_LEN
#define IW_FPDU_MAX_BUFFERED    (IW_MPA_LEN_SIZE + IW_TERM_ULPDU_MAX)         /* 72 */

#endif
