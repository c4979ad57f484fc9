/* MPA Request / Reply / Reject frames (RFC 5044 §7.1) with the RFC 6581 enhanced-setup block:
 * pure encode and decode over byte buffers, and a resumable parser for the connection manager.
 *
 * Private data is handled as the two parts the wire carries: the optional 4-byte IRD/ORD block
 * (present when Rev = 2 and the enhanced flag is set) and the ULP's own bytes behind it. The
 * ULP never sees the block, just as with siw (RFC 6581).
 *
 * Every decode failure here is "invalid MPA Request or Reply frame": the Terminate to report it
 * is LLP / MPA / IW_TERM_LLP_BAD_MPA_FRAME (RFC 5044 §8), although during startup the usual
 * action is simply to close the TCP connection (siw does).
 *
 * Talks to: iwarp_wire.h only. */
#ifndef IWARP_MPA_H
#define IWARP_MPA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp_wire.h"

enum iw_mpa_kind {
    IW_MPA_REQUEST = 1,
    IW_MPA_REPLY   = 2,
    IW_MPA_ANY     = 3,         /* parser only: accept either key (packet dumpers) */
};

/* RTR message kinds a P2P peer may offer or choose (RFC 6581), as a bit mask. */
#define IW_MPA_RTR_SEND     0x1u
#define IW_MPA_RTR_WRITE    0x2u
#define IW_MPA_RTR_READ     0x4u
#define IW_MPA_RTR_ALL      (IW_MPA_RTR_SEND | IW_MPA_RTR_WRITE | IW_MPA_RTR_READ)

/* The RFC 6581 IRD/ORD block, decoded. */
struct iw_mpa_v2 {
    uint16_t ird;               /* 14 bits */
    uint16_t ord;               /* 14 bits */
    bool     p2p;               /* A bit */
    uint8_t  rtr;               /* IW_MPA_RTR_* offered (Request) or chosen (Reply) */
};

/* One MPA frame. For encoding, fill kind, rev, the flag booleans, v2 (used iff rev == 2 and
 * enhanced) and ulp_pd/ulp_pd_len; the other members are outputs of decoding. */
struct iw_mpa_frame {
    enum iw_mpa_kind kind;      /* IW_MPA_REQUEST or IW_MPA_REPLY */
    uint8_t  rev;               /* 1 or 2 */
    bool     markers;           /* M */
    bool     crc;               /* C */
    bool     reject;            /* R (Reply only) */
    bool     enhanced;          /* 0x10, RFC 6581 */
    struct iw_mpa_v2 v2;
    const uint8_t *ulp_pd;      /* ULP private data (after the v2 block) */
    uint16_t ulp_pd_len;
    /* decode outputs */
    uint8_t  flags;             /* the raw flags byte, reserved bits included */
    bool     has_v2;            /* the IRD/ORD block was present */
    uint16_t pd_len;            /* PD_Length as on the wire (counts the v2 block) */
};

enum iw_mpa_status {
    IW_MPA_NEED_MORE = 0,       /* every byte offered was consumed; feed more */
    IW_MPA_COMPLETE  = 1,       /* a whole frame was parsed; bytes after it were NOT consumed */
    IW_MPA_ERROR     = 2,       /* the frame is invalid; see the reason */
};

enum iw_mpa_error {
    IW_MPA_ERR_NONE = 0,
    IW_MPA_ERR_KEY,             /* not the expected "MPA ID Req/Rep Frame" key */
    IW_MPA_ERR_REV,             /* revision other than 1 or 2 */
    IW_MPA_ERR_PD_RFC,          /* PD_Length above the RFC 5044 limit of 512 */
    IW_MPA_ERR_PD_LIMIT,        /* PD_Length above our configured limit */
    IW_MPA_ERR_V2_SHORT,        /* Rev 2 + enhanced, but fewer than 4 private-data bytes */
    IW_MPA_ERR_COUNT
};

/* Packs / unpacks the 4-byte IRD/ORD block. Pack returns -EINVAL when IRD or ORD exceeds 14 bits
 * or rtr has unknown bits. */
int iw_mpa_v2_pack(const struct iw_mpa_v2 *v, uint8_t out[IW_MPA_V2_LEN]);
void iw_mpa_v2_unpack(const uint8_t in[IW_MPA_V2_LEN], struct iw_mpa_v2 *v);

/* Bytes iw_mpa_encode() will write for f (header + v2 block + ULP private data). */
size_t iw_mpa_frame_len(const struct iw_mpa_frame *f);

/* Encodes f into buf. max_pd limits PD_Length (v2 block included); 0 means the RFC's 512.
 * Returns the frame length, -EINVAL for a frame we must not send (bad kind or rev, R in a
 * Request, enhanced with Rev 1, bad v2 values, NULL private data with a length), -EMSGSIZE when
 * the private data exceeds the limit, -ENOSPC when cap is too small. Reserved flag bits are
 * always sent as 0. */
int iw_mpa_encode(const struct iw_mpa_frame *f, uint16_t max_pd, void *buf, size_t cap);

/* Resumable parser: feed it the stream in any pieces; it consumes exactly the frame and stops,
 * so the caller sees whether bytes trail the frame (siw treats that as a protocol error, §2.2).
 * The parsed frame's ulp_pd points into the parser, so it lives as long as the parser. */
struct iw_mpa_parser {
    enum iw_mpa_kind   expect;
    uint16_t           max_pd;
    enum iw_mpa_status status;
    enum iw_mpa_error  error;
    uint16_t           got;                 /* bytes of the frame received so far */
    uint16_t           need;                /* frame length, once the header is in */
    struct iw_mpa_frame frame;
    uint8_t            buf[IW_MPA_HDR_LEN + IW_MPA_PD_MAX_RFC];
};

/* expect: the key to accept. max_pd: our limit for PD_Length (0 or > 512 means 512). */
void iw_mpa_parser_init(struct iw_mpa_parser *p, enum iw_mpa_kind expect, uint16_t max_pd);

/* Consumes bytes from data[0..len) and reports progress; *consumed says how many were used.
 * After COMPLETE or ERROR further calls consume nothing and return the same status. A bad key
 * is reported at the first wrong byte, a bad header as soon as its 20 bytes are in. */
enum iw_mpa_status iw_mpa_parser_feed(struct iw_mpa_parser *p, const void *data, size_t len,
                                      size_t *consumed);

/* The frame once COMPLETE, else NULL. */
const struct iw_mpa_frame *iw_mpa_parser_frame(const struct iw_mpa_parser *p);

/* One-shot decode of a frame at the start of buf. On COMPLETE fills *f (its ulp_pd points into
 * buf) and *frame_len; on ERROR sets *err when err is non-NULL. */
enum iw_mpa_status iw_mpa_decode(const void *buf, size_t len, enum iw_mpa_kind expect,
                                 uint16_t max_pd, struct iw_mpa_frame *f, size_t *frame_len,
                                 enum iw_mpa_error *err);

const char *iw_mpa_strerror(enum iw_mpa_error e);

#endif
