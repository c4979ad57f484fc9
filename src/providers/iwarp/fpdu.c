/* FPDU build (TX) and the resumable FPDU deframer (RX). See fpdu.h for the contract.
 *
 * Talks to: crc32c.c. Called by rx.c, tx.c, cm.c. */
#include "fpdu.h"

#include <errno.h>
#include <string.h>

#include "copy.h"
#include "crc32c.h"

/* ---------------------------------------------------------------------------------------
 * Opcode properties (RFC 5040 §4 table)
 * --------------------------------------------------------------------------------------- */

static bool op_known(uint8_t op)
{
    /* RFC 7306 opcodes 0x8..0xB are not implemented (nor by siw): they count as unknown. */
    return op <= IW_OP_RFC5040_MAX;
}

static bool op_tagged(uint8_t op)
{
    return op == IW_OP_WRITE || op == IW_OP_READ_RESP;
}

static bool op_has_inv_stag(uint8_t op)
{
    return op == IW_OP_SEND_INV || op == IW_OP_SEND_SE_INV;
}

static uint32_t op_qn(uint8_t op)
{
    if (op == IW_OP_READ_REQ)
        return IW_QN_READ_REQ;
    if (op == IW_OP_TERMINATE)
        return IW_QN_TERMINATE;
    return IW_QN_SEND;
}

/* Read Request and Terminate are single-segment messages with a fixed body and no payload. */
static bool op_single(uint8_t op)
{
    return op == IW_OP_READ_REQ || op == IW_OP_TERMINATE;
}

static uint32_t ddp_hdr_len(bool tagged)
{
    return tagged ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
}

const char *iw_fpdu_opcode_name(uint8_t opcode)
{
    static const char *const names[16] = {
        [IW_OP_WRITE] = "Write",
        [IW_OP_READ_REQ] = "Read Request",
        [IW_OP_READ_RESP] = "Read Response",
        [IW_OP_SEND] = "Send",
        [IW_OP_SEND_INV] = "Send with Invalidate",
        [IW_OP_SEND_SE] = "Send with SE",
        [IW_OP_SEND_SE_INV] = "Send with SE and Invalidate",
        [IW_OP_TERMINATE] = "Terminate",
        [IW_OP_IMM_DATA] = "Immediate Data",
        [IW_OP_IMM_DATA_SE] = "Immediate Data with SE",
        [IW_OP_ATOMIC_REQ] = "Atomic Request",
        [IW_OP_ATOMIC_RESP] = "Atomic Response",
    };
    if (opcode >= 16 || !names[opcode])
        return "unassigned";
    return names[opcode];
}

/* ---------------------------------------------------------------------------------------
 * TX
 * --------------------------------------------------------------------------------------- */

uint32_t iw_fpdu_mulpdu(uint32_t emss, bool markers)
{
    /* RFC 5044 §4: MULPDU = EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4),
     * the marker term only with markers. With ULPDU = MULPDU the FPDU is exactly the largest
     * multiple of 4 not above EMSS, so any shorter ULPDU fits too once padded. */
    uint64_t overhead = IW_MPA_LEN_SIZE + IW_MPA_CRC_SIZE + emss % 4;
    if (markers) {
        uint64_t spans = ((uint64_t)emss + IW_MPA_MARKER_SPACING - 1) / IW_MPA_MARKER_SPACING;
        overhead += IW_MPA_MARKER_SIZE * spans;
    }
    if (emss <= overhead)
        return 0;
    uint64_t m = emss - overhead;
    return m > IW_MPA_ULPDU_MAX ? IW_MPA_ULPDU_MAX : (uint32_t)m;
}

uint32_t iw_fpdu_max_payload(uint8_t opcode, uint32_t mulpdu)
{
    if (!op_known(opcode) || op_single(opcode))
        return 0;
    uint32_t h = ddp_hdr_len(op_tagged(opcode));
    if (mulpdu > IW_MPA_ULPDU_MAX)
        mulpdu = IW_MPA_ULPDU_MAX;
    return mulpdu > h ? mulpdu - h : 0;
}

/* Bytes of a Terminate body (control word and attachments) as hdrct asks, or -EINVAL. */
static int term_body_len(const struct iw_fpdu_term *t)
{
    int n = IW_TERM_CTRL_LEN;

    if (t->layer > 0xF || t->etype > 0xF || (t->hdrct & IW_TERM_HDRCT_RSVD))
        return -EINVAL;
    if (t->hdrct & IW_TERM_HDRCT_D) {
        /* The receiver sizes the attached header by its T bit, so the two must agree. */
        uint32_t want = ddp_hdr_len((t->ddp_hdr[0] & IW_DDP_CTRL_T) != 0);
        if (t->ddp_hdr_len != want)
            return -EINVAL;
        n += IW_TERM_DDP_SEGLEN_LEN + t->ddp_hdr_len;
    }
    if (t->hdrct & IW_TERM_HDRCT_R)
        n += IW_READ_REQ_LEN;
    return n;
}

int iw_fpdu_hdr_len(const struct iw_fpdu_hdr *h)
{
    if (!op_known(h->opcode))
        return -EINVAL;
    if (h->opcode == IW_OP_READ_REQ)
        return IW_FPDU_READ_REQ_HDR_LEN;
    if (h->opcode == IW_OP_TERMINATE) {
        int body = term_body_len(&h->term);
        return body < 0 ? body : IW_FPDU_UNTAGGED_HDR_LEN + body;
    }
    return IW_MPA_LEN_SIZE + (int)ddp_hdr_len(op_tagged(h->opcode));
}

static void put_term_body(const struct iw_fpdu_term *t, uint8_t *p)
{
    p[IW_TERM_OFF_LAYER_ETYPE] = (uint8_t)(t->layer << IW_TERM_LAYER_SHIFT | t->etype);
    p[IW_TERM_OFF_ECODE] = t->ecode;
    p[IW_TERM_OFF_HDRCT] = t->hdrct;
    p[3] = 0;
    p += IW_TERM_CTRL_LEN;
    if (t->hdrct & IW_TERM_HDRCT_D) {
        iw_put_be16(p, t->ddp_seg_len);
        memcpy(p + IW_TERM_DDP_SEGLEN_LEN, t->ddp_hdr, t->ddp_hdr_len);
        p += IW_TERM_DDP_SEGLEN_LEN + t->ddp_hdr_len;
    }
    if (t->hdrct & IW_TERM_HDRCT_R)
        memcpy(p, t->rdmap_hdr, IW_READ_REQ_LEN);
}

/* The MPA length and the untagged DDP and RDMAP header fields (RFC 5041 §5.1, RFC 5040 §4.3):
 * what iw_fpdu_put_hdr and iw_fpdu_put_send_hdr share. inv_stag is written for the two Send with
 * Invalidate opcodes only. */
static inline __attribute__((always_inline)) void put_untagged(uint8_t *b, uint8_t op, bool last, uint32_t inv_stag,
                                                               uint32_t qn, uint32_t msn, uint32_t mo, uint32_t ulpdu)
{
    iw_put_be16(b + IW_OFF_MPA_LEN, (uint16_t)ulpdu);
    b[IW_OFF_DDP_CTRL] = (uint8_t)((last ? IW_DDP_CTRL_L : 0) | IW_DDP_VERSION);
    b[IW_OFF_RDMAP_CTRL] = (uint8_t)(IW_RDMAP_VERSION << IW_RDMAP_CTRL_RV_SHIFT | op);
    iw_put_be32(b + IW_OFF_INV_STAG, op_has_inv_stag(op) ? inv_stag : 0);
    iw_put_be32(b + IW_OFF_QN, qn);
    iw_put_be32(b + IW_OFF_MSN, msn);
    iw_put_be32(b + IW_OFF_MO, mo);
}

/* iw_fpdu_put_hdr with h's L bit, TO and MO given apart: a message's segments share one
 * template. */
static inline __attribute__((always_inline)) int put_hdr(const struct iw_fpdu_hdr *h, bool seg_last, uint64_t to,
                                                         uint32_t mo, size_t payload_len, void *buf, size_t cap)
{
    uint8_t *b = buf;
    uint8_t op = h->opcode;
    int hl = iw_fpdu_hdr_len(h);

    if (hl < 0)
        return hl;
    if (op_single(op) && payload_len)
        return -EINVAL;
    if (payload_len > IW_MPA_ULPDU_MAX || hl - IW_MPA_LEN_SIZE + payload_len > IW_MPA_ULPDU_MAX)
        return -EMSGSIZE;
    if (cap < (size_t)hl)
        return -ENOSPC;

    bool last = seg_last || op_single(op);
    if (op_tagged(op)) {
        iw_put_be16(b + IW_OFF_MPA_LEN, (uint16_t)(hl - IW_MPA_LEN_SIZE + payload_len));
        b[IW_OFF_DDP_CTRL] = (uint8_t)(IW_DDP_CTRL_T | (last ? IW_DDP_CTRL_L : 0) | IW_DDP_VERSION);
        b[IW_OFF_RDMAP_CTRL] = (uint8_t)(IW_RDMAP_VERSION << IW_RDMAP_CTRL_RV_SHIFT | op);
        iw_put_be32(b + IW_OFF_STAG, h->stag);
        iw_put_be64(b + IW_OFF_TO, to);
        return hl;
    }
    put_untagged(b, op, last, h->inv_stag, op_qn(op), h->msn, op_single(op) ? 0 : mo,
                 (uint32_t)(hl - IW_MPA_LEN_SIZE + payload_len));
    if (op == IW_OP_READ_REQ) {
        uint8_t *r = b + IW_OFF_READ_REQ;
        iw_put_be32(r + IW_RR_OFF_SINK_STAG, h->rr.sink_stag);
        iw_put_be64(r + IW_RR_OFF_SINK_TO, h->rr.sink_to);
        iw_put_be32(r + IW_RR_OFF_SIZE, h->rr.size);
        iw_put_be32(r + IW_RR_OFF_SRC_STAG, h->rr.src_stag);
        iw_put_be64(r + IW_RR_OFF_SRC_TO, h->rr.src_to);
    } else if (op == IW_OP_TERMINATE) {
        put_term_body(&h->term, b + IW_OFF_TERM_CTRL);
    }
    return hl;
}

int iw_fpdu_put_hdr(const struct iw_fpdu_hdr *h, size_t payload_len, void *buf, size_t cap)
{
    return put_hdr(h, h->last, h->to, h->mo, payload_len, buf, cap);
}

int iw_fpdu_put_seg_hdr(const struct iw_fpdu_hdr *h, bool last, uint64_t off, size_t payload_len, void *buf,
                        size_t cap)
{
    return put_hdr(h, last, h->to + off, (uint32_t)off, payload_len, buf, cap);
}

int iw_fpdu_put_send_hdr(uint8_t op, uint32_t inv_stag, uint32_t msn, size_t payload_len, void *buf)
{
    put_untagged(buf, op, true, inv_stag, IW_QN_SEND, msn, 0,
                 (uint32_t)(IW_FPDU_UNTAGGED_HDR_LEN - IW_MPA_LEN_SIZE + payload_len));
    return IW_FPDU_UNTAGGED_HDR_LEN;
}

int iw_fpdu_put_trailer(uint32_t ulpdu_len, bool crc, uint32_t crc_state, void *buf, size_t cap)
{
    uint8_t *b = buf;
    uint32_t pad = iw_mpa_pad_len(ulpdu_len);

    if (cap < pad + IW_MPA_CRC_SIZE)
        return -ENOSPC;
    memset(b, 0, pad);
    if (crc) {
        /* RFC 5044 §4: the CRC covers the pad too. */
        crc_state = iw_crc32c_update(crc_state, b, pad);
        iw_put_le32(b + pad, iw_crc32c_final(crc_state));
    } else {
        iw_put_le32(b + pad, 0);
    }
    return (int)(pad + IW_MPA_CRC_SIZE);
}

int iw_fpdu_build_term(const struct iw_fpdu_term *term, bool crc, void *buf, size_t cap)
{
    struct iw_fpdu_hdr h;

    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_TERMINATE;
    h.last = true;
    h.qn = IW_QN_TERMINATE;
    h.msn = 1;                           /* the first and only message on QN 2 */
    h.term = *term;
    return iw_fpdu_build(&h, NULL, 0, crc, buf, cap);
}

int iw_fpdu_build(const struct iw_fpdu_hdr *h, const struct iw_iov *iov, size_t iovcnt, bool crc,
                  void *buf, size_t cap)
{
    uint8_t *b = buf;
    size_t payload = 0;

    for (size_t i = 0; i < iovcnt; i++) {
        if (iov[i].len && !iov[i].base)
            return -EINVAL;
        if (iov[i].len > IW_MPA_ULPDU_MAX || payload + iov[i].len > IW_MPA_ULPDU_MAX)
            return -EMSGSIZE;
        payload += iov[i].len;
    }
    int hl = iw_fpdu_put_hdr(h, payload, buf, cap);
    if (hl < 0)
        return hl;
    uint32_t ulpdu = (uint32_t)(hl - IW_MPA_LEN_SIZE + payload);
    uint32_t total = iw_mpa_fpdu_len(ulpdu);
    if (cap < total)
        return -ENOSPC;

    size_t pos = (size_t)hl;
    for (size_t i = 0; i < iovcnt; i++) {
        if (iov[i].len)
            memcpy(b + pos, iov[i].base, iov[i].len);
        pos += iov[i].len;
    }
    uint32_t st = crc ? iw_crc32c_update(iw_crc32c_init(), b, pos) : 0;
    int tl = iw_fpdu_put_trailer(ulpdu, crc, st, b + pos, cap - pos);
    if (tl < 0)
        return tl;
    return (int)total;
}

/* ---------------------------------------------------------------------------------------
 * Terminate and RTR helpers
 * --------------------------------------------------------------------------------------- */

void iw_fpdu_term_ctrl_rfc(const uint8_t ctrl[IW_TERM_CTRL_LEN], struct iw_term_ctrl *c)
{
    c->layer = ctrl[IW_TERM_OFF_LAYER_ETYPE] >> IW_TERM_LAYER_SHIFT;
    c->etype = ctrl[IW_TERM_OFF_LAYER_ETYPE] & IW_TERM_ETYPE_MASK;
    c->ecode = ctrl[IW_TERM_OFF_ECODE];
    c->hdrct = ctrl[IW_TERM_OFF_HDRCT] & (IW_TERM_HDRCT_M | IW_TERM_HDRCT_D | IW_TERM_HDRCT_R);
}

void iw_fpdu_term_ctrl_siw(const uint8_t ctrl[IW_TERM_CTRL_LEN], struct iw_term_ctrl *c)
{
    /* siw's bitfield on a little-endian host: layer:4 then etype:4 fill byte 0 from its low
     * bit, and flag_m/d/r are bits 0/1/2 of byte 2 (RFC 5040 §4.8 has them the other way). */
    uint8_t b2 = ctrl[IW_TERM_OFF_HDRCT];
    c->layer = ctrl[IW_TERM_OFF_LAYER_ETYPE] & 0x0F;
    c->etype = ctrl[IW_TERM_OFF_LAYER_ETYPE] >> 4;
    c->ecode = ctrl[IW_TERM_OFF_ECODE];
    c->hdrct = (uint8_t)((b2 & 0x01 ? IW_TERM_HDRCT_M : 0) | (b2 & 0x02 ? IW_TERM_HDRCT_D : 0) |
                         (b2 & 0x04 ? IW_TERM_HDRCT_R : 0));
}

int iw_fpdu_term_decode(const uint8_t *body, size_t len, struct iw_fpdu_term *t)
{
    struct iw_term_ctrl c;
    size_t pos = IW_TERM_CTRL_LEN;

    memset(t, 0, sizeof *t);
    if (len < IW_TERM_CTRL_LEN)
        return -EBADMSG;
    memcpy(t->ctrl, body, IW_TERM_CTRL_LEN);
    iw_fpdu_term_ctrl_rfc(t->ctrl, &c);
    t->layer = c.layer;
    t->etype = c.etype;
    t->ecode = c.ecode;
    t->hdrct = c.hdrct;

    if (t->hdrct & IW_TERM_HDRCT_D) {
        /* Segment length, then a DDP header whose size its own T bit tells. */
        if (len - pos < IW_TERM_DDP_SEGLEN_LEN + 1) {
            t->truncated = true;
            return 0;
        }
        uint32_t hl = ddp_hdr_len((body[pos + IW_TERM_DDP_SEGLEN_LEN] & IW_DDP_CTRL_T) != 0);
        if (len - pos < IW_TERM_DDP_SEGLEN_LEN + hl) {
            t->truncated = true;
            return 0;
        }
        t->ddp_seg_len = iw_get_be16(body + pos);
        t->ddp_hdr_len = (uint8_t)hl;
        memcpy(t->ddp_hdr, body + pos + IW_TERM_DDP_SEGLEN_LEN, hl);
        pos += IW_TERM_DDP_SEGLEN_LEN + hl;
    }
    if (t->hdrct & IW_TERM_HDRCT_R) {
        if (len - pos < IW_READ_REQ_LEN) {
            t->truncated = true;
            return 0;
        }
        memcpy(t->rdmap_hdr, body + pos, IW_READ_REQ_LEN);
    }
    return 0;
}

unsigned iw_fpdu_rtr_kind(const struct iw_fpdu_hdr *h)
{
    /* RFC 6581: the RTR is a zero-length message of the negotiated kind. */
    switch (h->opcode) {
    case IW_OP_WRITE:
        return h->last && h->payload_len == 0 ? IW_MPA_RTR_WRITE : 0;
    case IW_OP_READ_REQ:
        return h->rr.size == 0 ? IW_MPA_RTR_READ : 0;
    case IW_OP_SEND:
        return h->last && h->payload_len == 0 && h->mo == 0 ? IW_MPA_RTR_SEND : 0;
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------------------------------
 * RX deframer
 * --------------------------------------------------------------------------------------- */

#define RX_BIT(s) (1u << (s))

/* Every legal transition; anything else is a bug and stops the deframer. ERROR is reachable from
 * every live state because a peer error or a caller-reported error can strike anywhere. */
static const uint8_t rx_next_ok[IW_FPDU_RX_STATE_COUNT] = {
    [IW_FPDU_RX_HDR_START] = RX_BIT(IW_FPDU_RX_HDR_REST) | RX_BIT(IW_FPDU_RX_ERROR),
    [IW_FPDU_RX_HDR_REST]  = RX_BIT(IW_FPDU_RX_PAYLOAD) | RX_BIT(IW_FPDU_RX_PAD) |
                             RX_BIT(IW_FPDU_RX_CRC) | RX_BIT(IW_FPDU_RX_ERROR),
    /* PAYLOAD -> HDR_START: a whole frame's trailer taken with its payload (IW_FPDU_RX_END). */
    [IW_FPDU_RX_PAYLOAD]   = RX_BIT(IW_FPDU_RX_PAD) | RX_BIT(IW_FPDU_RX_CRC) | RX_BIT(IW_FPDU_RX_HDR_START) |
                             RX_BIT(IW_FPDU_RX_ERROR),
    [IW_FPDU_RX_PAD]       = RX_BIT(IW_FPDU_RX_CRC) | RX_BIT(IW_FPDU_RX_ERROR),
    [IW_FPDU_RX_CRC]       = RX_BIT(IW_FPDU_RX_HDR_START) | RX_BIT(IW_FPDU_RX_ERROR),
    [IW_FPDU_RX_ERROR]     = 0,
};

const char *iw_fpdu_rx_state_name(enum iw_fpdu_rx_state s)
{
    static const char *const names[IW_FPDU_RX_STATE_COUNT] = {
        [IW_FPDU_RX_HDR_START] = "HDR_START",
        [IW_FPDU_RX_HDR_REST] = "HDR_REST",
        [IW_FPDU_RX_PAYLOAD] = "PAYLOAD",
        [IW_FPDU_RX_PAD] = "PAD",
        [IW_FPDU_RX_CRC] = "CRC",
        [IW_FPDU_RX_ERROR] = "ERROR",
    };
    if ((unsigned)s >= IW_FPDU_RX_STATE_COUNT)
        return "INVALID";
    return names[s];
}

const char *iw_fpdu_rx_reason_str(enum iw_fpdu_rx_reason r)
{
    static const char *const names[IW_FPDU_RXERR_COUNT] = {
        [IW_FPDU_RXERR_NONE] = "no error",
        [IW_FPDU_RXERR_DDP_VERSION] = "DDP version is not 1",
        [IW_FPDU_RXERR_RDMAP_VERSION] = "RDMAP version is not 1",
        [IW_FPDU_RXERR_OPCODE] = "unknown RDMAP opcode",
        [IW_FPDU_RXERR_TAGGED_MISMATCH] = "DDP T bit does not match the opcode",
        [IW_FPDU_RXERR_ULPDU_SHORT] = "ULPDU_Length shorter than the header",
        [IW_FPDU_RXERR_ULPDU_LONG] = "ULPDU_Length above the configured maximum",
        [IW_FPDU_RXERR_MSG_TOO_LONG] = "Read Request or Terminate longer than its fixed size",
        [IW_FPDU_RXERR_QN] = "queue number does not match the opcode",
        [IW_FPDU_RXERR_MSN] = "unexpected MSN",
        [IW_FPDU_RXERR_MO] = "unexpected MO",
        [IW_FPDU_RXERR_MO_WRAP] = "MO + payload wraps",
        [IW_FPDU_RXERR_TO_WRAP] = "TO + payload wraps",
        [IW_FPDU_RXERR_INTERLEAVE] = "message interleaved into an unfinished one",
        [IW_FPDU_RXERR_STAG_CHANGE] = "tagged continuation with a different STag",
        [IW_FPDU_RXERR_TO_GAP] = "tagged continuation not contiguous",
        [IW_FPDU_RXERR_PAD] = "non-zero PAD bytes",
        [IW_FPDU_RXERR_CRC] = "MPA CRC mismatch",
        [IW_FPDU_RXERR_CALLER] = "error reported by the consumer",
        [IW_FPDU_RXERR_INTERNAL] = "internal deframer error",
    };
    if ((unsigned)r >= IW_FPDU_RXERR_COUNT)
        return "unknown";
    return names[r];
}

void iw_fpdu_rx_init(struct iw_fpdu_rx *rx, const struct iw_fpdu_rx_cfg *cfg)
{
    memset(rx, 0, sizeof *rx);
    if (cfg)
        rx->cfg = *cfg;
    if (rx->cfg.max_ulpdu == 0 || rx->cfg.max_ulpdu > IW_MPA_ULPDU_MAX)
        rx->cfg.max_ulpdu = IW_MPA_ULPDU_MAX;
    /* Below this a legal Terminate or Read Request would be refused. */
    if (rx->cfg.max_ulpdu < IW_TERM_ULPDU_MAX)
        rx->cfg.max_ulpdu = IW_TERM_ULPDU_MAX;
    rx->state = IW_FPDU_RX_HDR_START;
    rx->hneed = 4;
    /* RFC 5041 §5: each untagged queue's MSN starts at 1. */
    for (size_t i = 0; i < sizeof rx->uq / sizeof rx->uq[0]; i++)
        rx->uq[i].msn = 1;
}

/* Whether rx->hdr / rx->hbuf describe a header of this stream that may be attached. */
static bool rx_hdr_valid(const struct iw_fpdu_rx *rx)
{
    switch (rx->state) {
    case IW_FPDU_RX_PAYLOAD:
    case IW_FPDU_RX_PAD:
    case IW_FPDU_RX_CRC:
        return true;
    case IW_FPDU_RX_HDR_START:
        /* Right after END, before the next FPDU's first byte: the previous header is intact. */
        return rx->hgot == 0 && rx->fpdus > 0;
    default:
        return false;
    }
}

/* Fills rx->error (first error only) and enters ERROR. attach: the header is complete and may
 * go into the Terminate. RFC 5040 §4.8: DDP and RDMAP errors carry the DDP header (M + D), a
 * Read Request error at the RDMAP layer also its 28-byte header (R); MPA errors carry none,
 * since the framing itself is in doubt. */
static void rx_fail(struct iw_fpdu_rx *rx, int err, enum iw_fpdu_rx_reason reason, uint8_t layer,
                    uint8_t etype, uint8_t ecode, bool attach)
{
    struct iw_fpdu_rx_error *e = &rx->error;

    rx->state = IW_FPDU_RX_ERROR;
    if (e->err)
        return;                                 /* keep the first error */
    memset(e, 0, sizeof *e);
    e->err = err;
    e->reason = reason;
    e->fpdu_offset = rx->fpdu_start;
    e->term.layer = layer;
    e->term.etype = etype;
    e->term.ecode = ecode;
    if (attach && layer != IW_TERM_LAYER_LLP) {
        uint8_t hl = (uint8_t)ddp_hdr_len(rx->hdr.tagged);
        e->term.hdrct = IW_TERM_HDRCT_M | IW_TERM_HDRCT_D;
        /* RFC 5041 calls the ULPDU the DDP segment, hence ULPDU_Length (siw sends the payload
         * length here instead; both decode, the field is informational). */
        e->term.ddp_seg_len = rx->hdr.ulpdu_len;
        e->term.ddp_hdr_len = hl;
        memcpy(e->term.ddp_hdr, rx->hbuf + IW_MPA_LEN_SIZE, hl);
        if (layer == IW_TERM_LAYER_RDMAP && rx->hdr.opcode == IW_OP_READ_REQ) {
            e->term.hdrct |= IW_TERM_HDRCT_R;
            memcpy(e->term.rdmap_hdr, rx->hbuf + IW_OFF_READ_REQ, IW_READ_REQ_LEN);
        }
    }
    e->term.ctrl[IW_TERM_OFF_LAYER_ETYPE] = (uint8_t)(layer << IW_TERM_LAYER_SHIFT | (etype & 0xF));
    e->term.ctrl[IW_TERM_OFF_ECODE] = ecode;
    e->term.ctrl[IW_TERM_OFF_HDRCT] = e->term.hdrct;
}

/* rx_goto's refusal, out of line: the transition is taken up to three times per small frame. */
static __attribute__((noinline)) bool rx_goto_refused(struct iw_fpdu_rx *rx)
{
    rx_fail(rx, -ENOTRECOVERABLE, IW_FPDU_RXERR_INTERNAL, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_CATASTROPHIC,
            IW_TERM_RDMAP_UNSPECIFIED, false);
    return false;
}

/* The one way states change. An undefined transition is our bug, never the peer's: it stops
 * the stream with a local catastrophic error rather than guessing. */
static inline bool rx_goto(struct iw_fpdu_rx *rx, enum iw_fpdu_rx_state to)
{
    if ((unsigned)rx->state >= IW_FPDU_RX_STATE_COUNT || (unsigned)to >= IW_FPDU_RX_STATE_COUNT ||
        !(rx_next_ok[rx->state] & RX_BIT(to)))
        return rx_goto_refused(rx);
    rx->state = to;
    return true;
}

static bool rx_peer_fail(struct iw_fpdu_rx *rx, enum iw_fpdu_rx_reason reason, uint8_t layer,
                         uint8_t etype, uint8_t ecode, bool attach)
{
    rx_fail(rx, -EBADMSG, reason, layer, etype, ecode, attach);
    return false;
}

/* Length, DDP control and RDMAP control are in: check them in siw's order (DV, RV, opcode) and
 * decide how many header bytes to collect. No header is attached yet: it is incomplete. */
static bool rx_hdr_start(struct iw_fpdu_rx *rx)
{
    uint16_t ulpdu = iw_get_be16(rx->hbuf + IW_OFF_MPA_LEN);
    uint8_t ddp = rx->hbuf[IW_OFF_DDP_CTRL];
    uint8_t rdmap = rx->hbuf[IW_OFF_RDMAP_CTRL];
    bool tagged = (ddp & IW_DDP_CTRL_T) != 0;
    uint8_t op = rdmap & IW_RDMAP_CTRL_OP_MASK;

    /* RFC 5041 §7: invalid DDP version, per buffer model. */
    if ((ddp & IW_DDP_CTRL_DV_MASK) != IW_DDP_VERSION)
        return rx_peer_fail(rx, IW_FPDU_RXERR_DDP_VERSION, IW_TERM_LAYER_DDP,
                            tagged ? IW_TERM_ETYPE_DDP_TAGGED : IW_TERM_ETYPE_DDP_UNTAGGED,
                            tagged ? IW_TERM_DDP_T_VERSION : IW_TERM_DDP_U_VERSION, false);
    /* RFC 5040 §7: invalid RDMAP version, unexpected opcode. */
    if ((rdmap & IW_RDMAP_CTRL_RV_MASK) >> IW_RDMAP_CTRL_RV_SHIFT != IW_RDMAP_VERSION)
        return rx_peer_fail(rx, IW_FPDU_RXERR_RDMAP_VERSION, IW_TERM_LAYER_RDMAP,
                            IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_VERSION, false);
    if (!op_known(op))
        return rx_peer_fail(rx, IW_FPDU_RXERR_OPCODE, IW_TERM_LAYER_RDMAP,
                            IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE, false);
    if (tagged != op_tagged(op))
        return rx_peer_fail(rx, IW_FPDU_RXERR_TAGGED_MISMATCH, IW_TERM_LAYER_RDMAP,
                            IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE, false);

    uint32_t min = op == IW_OP_READ_REQ ? IW_READ_REQ_ULPDU_LEN
                 : op == IW_OP_TERMINATE ? IW_TERM_ULPDU_MIN : ddp_hdr_len(tagged);
    /* A length that cannot hold the header means the framing is wrong: LLP "FPDU start"
     * (RFC 5044 §8 code 3), the class siw uses for the same check. An over-long ULPDU against
     * our configured maximum gets the same code: we cannot trust where the next FPDU starts. */
    if (ulpdu < min)
        return rx_peer_fail(rx, IW_FPDU_RXERR_ULPDU_SHORT, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA,
                            IW_TERM_LLP_MARKER_LEN, false);
    if (ulpdu > rx->cfg.max_ulpdu)
        return rx_peer_fail(rx, IW_FPDU_RXERR_ULPDU_LONG, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA,
                            IW_TERM_LLP_MARKER_LEN, false);
    /* A Read Request or Terminate bigger than its fixed body overflows the one buffer its queue
     * has for it: DDP untagged "message too long" (RFC 5041 §7 code 5). */
    if ((op == IW_OP_READ_REQ && ulpdu != IW_READ_REQ_ULPDU_LEN) ||
        (op == IW_OP_TERMINATE && ulpdu > IW_TERM_ULPDU_MAX))
        return rx_peer_fail(rx, IW_FPDU_RXERR_MSG_TOO_LONG, IW_TERM_LAYER_DDP,
                            IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_TOO_LONG, false);

    if (op == IW_OP_TERMINATE)
        rx->hneed = (uint16_t)(IW_MPA_LEN_SIZE + ulpdu);
    else if (op == IW_OP_READ_REQ)
        rx->hneed = IW_FPDU_READ_REQ_HDR_LEN;
    else
        rx->hneed = (uint16_t)(IW_MPA_LEN_SIZE + ddp_hdr_len(tagged));
    return rx_goto(rx, IW_FPDU_RX_HDR_REST);
}

/* Moves the stream's expectations (RFC 5041 §5) past the segment in rx->hdr, which the checks
 * accepted: rx_check_seq's and rx_frame_fast's. */
static void rx_seq_advance(struct iw_fpdu_rx *rx)
{
    const struct iw_fpdu_hdr *h = &rx->hdr;

    if (h->tagged) {
        rx->tq.open = !h->last;
        rx->tq.opcode = h->opcode;
        rx->tq.stag = h->stag;
        rx->tq.to = h->to + h->payload_len;
        return;
    }
    struct iw_fpdu_rx_queue *q = &rx->uq[h->qn];
    if (h->last) {
        q->open = false;
        q->msn++;
        q->mo = 0;
    } else {
        q->open = true;
        q->opcode = h->opcode;
        q->mo = h->mo + h->payload_len;
    }
}

/* RFC 5041 §5 stream rules, per queue for untagged, and for the one tagged message in flight
 * (siw refuses interleaved tagged messages too). */
static bool rx_check_seq(struct iw_fpdu_rx *rx)
{
    const struct iw_fpdu_hdr *h = &rx->hdr;

    if (h->tagged) {
        if (rx->tq.open) {
            if (h->opcode != rx->tq.opcode)
                return rx_peer_fail(rx, IW_FPDU_RXERR_INTERLEAVE, IW_TERM_LAYER_RDMAP,
                                    IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE, true);
            if (h->stag != rx->tq.stag)
                return rx_peer_fail(rx, IW_FPDU_RXERR_STAG_CHANGE, IW_TERM_LAYER_DDP,
                                    IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_INV_STAG, true);
            if (h->to != rx->tq.to)
                return rx_peer_fail(rx, IW_FPDU_RXERR_TO_GAP, IW_TERM_LAYER_DDP,
                                    IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_BASE_BOUNDS, true);
        }
        rx_seq_advance(rx);
        return true;
    }

    const struct iw_fpdu_rx_queue *q = &rx->uq[h->qn];   /* qn already checked against the opcode */
    if (h->msn != q->msn)
        return rx_peer_fail(rx, IW_FPDU_RXERR_MSN, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED,
                            IW_TERM_DDP_U_MSN_RANGE, true);
    if (q->open && h->opcode != q->opcode)
        return rx_peer_fail(rx, IW_FPDU_RXERR_INTERLEAVE, IW_TERM_LAYER_RDMAP,
                            IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE, true);
    if (h->mo != (q->open ? q->mo : 0))
        return rx_peer_fail(rx, IW_FPDU_RXERR_MO, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED,
                            IW_TERM_DDP_U_INV_MO, true);
    rx_seq_advance(rx);
    return true;
}

/* The whole header is buffered: decode every field, then validate what a single segment can
 * tell. Errors from here on attach the header. */
static bool rx_hdr_rest(struct iw_fpdu_rx *rx)
{
    struct iw_fpdu_hdr *h = &rx->hdr;
    const uint8_t *b = rx->hbuf;

    /* Every field but the two bodies is written below, and a body only ever holds something
     * after its own opcode (the header is zero from iw_fpdu_rx_init): clearing the 136 bytes
     * whole on every segment cost more than the rest of the decoding. */
    if (h->opcode == IW_OP_READ_REQ)
        memset(&h->rr, 0, sizeof h->rr);
    else if (h->opcode == IW_OP_TERMINATE)
        memset(&h->term, 0, sizeof h->term);
    h->ulpdu_len = iw_get_be16(b + IW_OFF_MPA_LEN);
    h->ddp_ctrl = b[IW_OFF_DDP_CTRL];
    h->rdmap_ctrl = b[IW_OFF_RDMAP_CTRL];
    h->opcode = h->rdmap_ctrl & IW_RDMAP_CTRL_OP_MASK;
    h->tagged = (h->ddp_ctrl & IW_DDP_CTRL_T) != 0;
    h->last = (h->ddp_ctrl & IW_DDP_CTRL_L) != 0;
    h->hdr_len = (uint8_t)rx->hneed;
    h->payload_len = (uint32_t)h->ulpdu_len + IW_MPA_LEN_SIZE - rx->hneed;
    if (h->tagged) {
        h->stag = iw_get_be32(b + IW_OFF_STAG);
        h->to = iw_get_be64(b + IW_OFF_TO);
        h->inv_stag = h->qn = h->msn = h->mo = 0;
    } else {
        h->stag = 0;
        h->to = 0;
        h->inv_stag = iw_get_be32(b + IW_OFF_INV_STAG);
        h->qn = iw_get_be32(b + IW_OFF_QN);
        h->msn = iw_get_be32(b + IW_OFF_MSN);
        h->mo = iw_get_be32(b + IW_OFF_MO);
    }
    if (h->opcode == IW_OP_READ_REQ) {
        const uint8_t *r = b + IW_OFF_READ_REQ;
        h->rr.sink_stag = iw_get_be32(r + IW_RR_OFF_SINK_STAG);
        h->rr.sink_to = iw_get_be64(r + IW_RR_OFF_SINK_TO);
        h->rr.size = iw_get_be32(r + IW_RR_OFF_SIZE);
        h->rr.src_stag = iw_get_be32(r + IW_RR_OFF_SRC_STAG);
        h->rr.src_to = iw_get_be64(r + IW_RR_OFF_SRC_TO);
    } else if (h->opcode == IW_OP_TERMINATE) {
        /* Cannot fail: rx_hdr_start() guaranteed at least the control word. */
        iw_fpdu_term_decode(b + IW_OFF_TERM_CTRL, rx->hneed - IW_OFF_TERM_CTRL, &h->term);
    }
    rx->pad_len = (uint8_t)iw_mpa_pad_len(h->ulpdu_len);
    if (rx->cfg.crc)
        rx->crc_state = iw_crc32c_update(iw_crc32c_init(), b, rx->hneed);

    if (!h->tagged) {
        /* RFC 5040 §5: each untagged opcode has its queue. */
        if (h->qn != op_qn(h->opcode))
            return rx_peer_fail(rx, IW_FPDU_RXERR_QN, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED,
                                IW_TERM_DDP_U_INV_QN, true);
        if (op_single(h->opcode) && !h->last)
            return rx_peer_fail(rx, IW_FPDU_RXERR_MSG_TOO_LONG, IW_TERM_LAYER_DDP,
                                IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_TOO_LONG, true);
        if (op_single(h->opcode) && h->mo != 0)
            return rx_peer_fail(rx, IW_FPDU_RXERR_MO, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED,
                                IW_TERM_DDP_U_INV_MO, true);
        /* RFC 5041 §4.3: MO is a 32-bit offset; a segment may not run past 2^32. */
        if ((uint64_t)h->mo + h->payload_len > UINT32_MAX + UINT64_C(1))
            return rx_peer_fail(rx, IW_FPDU_RXERR_MO_WRAP, IW_TERM_LAYER_DDP,
                                IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_INV_MO, true);
    } else if (h->payload_len && UINT64_MAX - h->to < (uint64_t)h->payload_len - 1) {
        /* RFC 5041 §7 code 3: TO wrap. */
        return rx_peer_fail(rx, IW_FPDU_RXERR_TO_WRAP, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED,
                            IW_TERM_DDP_T_TO_WRAP, true);
    }
    if (rx->cfg.check_seq && !rx_check_seq(rx))
        return false;

    if (h->payload_len)
        return rx_goto(rx, IW_FPDU_RX_PAYLOAD);
    return rx_goto(rx, rx->pad_len ? IW_FPDU_RX_PAD : IW_FPDU_RX_CRC);
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Copies n input bytes into the header buffer at hgot. The sizes of a header that arrives
 * whole (the 4 bytes of HDR_START, the rest of a tagged or untagged header) become
 * constant-size copies the compiler inlines: a library call each costs as much as the copy's
 * neighbours in the small-message path. */
static void rx_copy_hdr(struct iw_fpdu_rx *rx, const uint8_t *src, size_t n)
{
    uint8_t *dst = rx->hbuf + rx->hgot;

    switch (n) {
    case 4:
        memcpy(dst, src, 4);
        break;
    case IW_DDP_TAGGED_HDR_LEN - 2:
        memcpy(dst, src, IW_DDP_TAGGED_HDR_LEN - 2);
        break;
    case IW_DDP_UNTAGGED_HDR_LEN - 2:
        memcpy(dst, src, IW_DDP_UNTAGGED_HDR_LEN - 2);
        break;
    default:
        memcpy(dst, src, n);
        break;
    }
}

enum iw_fpdu_ev_type iw_fpdu_rx_step(struct iw_fpdu_rx *rx, const void *data, size_t len,
                                     size_t *consumed, struct iw_fpdu_event *ev)
{
    return iw_fpdu_rx_step_ex(rx, data, len, 0, consumed, ev);
}

/* Bytes owed may only be settled before the next step; afterwards the CRC check at END would
 * compare against a register that skipped them. */
static uint32_t rx_owed_take(struct iw_fpdu_rx *rx, size_t n)
{
    uint32_t t = n < rx->crc_owed ? (uint32_t)n : rx->crc_owed;

    rx->crc_owed -= t;
    return t;
}

void iw_fpdu_rx_place_copy(struct iw_fpdu_rx *rx, void *dst, const void *src, size_t n)
{
    uint32_t t = rx_owed_take(rx, n);

    if (t)
        rx->crc_state = iw_crc32c_copy(dst, src, t, rx->crc_state);
    if (n > t)
        iw_copy((uint8_t *)dst + t, (const uint8_t *)src + t, n - t);
}

void iw_fpdu_rx_place_skip(struct iw_fpdu_rx *rx, const void *src, size_t n)
{
    uint32_t t = rx_owed_take(rx, n);

    if (t)
        rx->crc_state = iw_crc32c_update(rx->crc_state, src, t);
}

/* The segment's trailer is consumed: the next byte starts an FPDU. */
static void rx_end_reset(struct iw_fpdu_rx *rx)
{
    rx->fpdus++;
    rx->hgot = 0;
    rx->hneed = 4;
    rx->pay_done = 0;
    rx->pad_got = 0;
    rx->pad_nonzero = false;
    rx->crc_got = 0;
}

/* IW_FPDU_RX_END: takes the trailer at t (all of it is there: the frame is whole) when nothing
 * in it can fail, so that the FRAME already ends the segment. With CRC on, the verdict needs the
 * caller's placement first (IW_FPDU_RX_CALLER_CRC) and has to stay after its checks; a non-zero
 * PAD is strict mode's error or END's pad_nonzero. Returns the bytes taken, 0 when the trailer
 * stays for the next step. Payload all consumed, state PAYLOAD. */
static size_t rx_end_whole(struct iw_fpdu_rx *rx, const uint8_t *t, struct iw_fpdu_event *ev)
{
    uint8_t pad = 0;

    if (rx->cfg.crc)
        return 0;
    for (unsigned i = 0; i < rx->pad_len; i++)
        pad |= t[i];
    if (pad || !rx_goto(rx, IW_FPDU_RX_HDR_START))
        return 0;
    /* Kept as the CRC step keeps it: equal histories leave equal deframers, however they were
     * fed (the differential fuzzer compares them whole). */
    memcpy(rx->crc_buf, t + rx->pad_len, IW_MPA_CRC_SIZE);
    ev->crc_wire = iw_get_le32(rx->crc_buf);
    ev->ended = true;
    rx_end_reset(rx);
    return (size_t)rx->pad_len + IW_MPA_CRC_SIZE;
}

/* IW_FPDU_RX_WHOLE | IW_FPDU_RX_END with CRC off, at a frame's first byte (HDR_START, nothing
 * buffered): a Send or a tagged segment with payload whose frame in[0, len) holds whole, and that
 * passes every check of rx_hdr_start, rx_hdr_rest and rx_check_seq, decoded and ended in one pass.
 * It leaves the deframer and *ev exactly as the general steps do (HDR_START -> HDR_REST -> PAYLOAD
 * -> HDR_START, each transition legal; fuzz_fpdu compares the two whole). Anything else (a check
 * that fails, a Read Request or Terminate, no payload, a non-zero PAD) returns 0 having changed
 * nothing, and the general steps take the frame, errors included. Returns the bytes taken. */
static size_t rx_frame_fast(struct iw_fpdu_rx *rx, const uint8_t *in, size_t len, struct iw_fpdu_event *ev)
{
    if (len < IW_FPDU_TAGGED_HDR_LEN)
        return 0;
    uint16_t ulpdu = iw_get_be16(in + IW_OFF_MPA_LEN);
    uint8_t ddp = in[IW_OFF_DDP_CTRL];
    uint8_t rdmap = in[IW_OFF_RDMAP_CTRL];
    uint8_t op = rdmap & IW_RDMAP_CTRL_OP_MASK;
    bool tagged = (ddp & IW_DDP_CTRL_T) != 0;
    bool last = (ddp & IW_DDP_CTRL_L) != 0;
    uint32_t hneed = IW_MPA_LEN_SIZE + ddp_hdr_len(tagged);
    uint32_t pad = iw_mpa_pad_len(ulpdu);
    size_t total = (size_t)IW_MPA_LEN_SIZE + ulpdu + pad + IW_MPA_CRC_SIZE;

    if ((ddp & IW_DDP_CTRL_DV_MASK) != IW_DDP_VERSION ||
        (rdmap & IW_RDMAP_CTRL_RV_MASK) >> IW_RDMAP_CTRL_RV_SHIFT != IW_RDMAP_VERSION || !op_known(op) ||
        tagged != op_tagged(op) || op_single(op))
        return 0;
    /* A payload (the FRAME's condition), within the configured maximum, the frame all here. */
    if ((uint32_t)ulpdu + IW_MPA_LEN_SIZE <= hneed || ulpdu > rx->cfg.max_ulpdu || len < total)
        return 0;
    uint32_t payload = (uint32_t)ulpdu + IW_MPA_LEN_SIZE - hneed;
    const uint8_t *t = in + IW_MPA_LEN_SIZE + ulpdu;
    uint8_t padbits = 0;
    for (uint32_t i = 0; i < pad; i++)
        padbits |= t[i];
    if (padbits)
        return 0;

    struct iw_fpdu_hdr *h = &rx->hdr;
    uint32_t stag = 0, qn = 0, msn = 0, mo = 0, inv = 0;
    uint64_t to = 0;
    if (tagged) {
        stag = iw_get_be32(in + IW_OFF_STAG);
        to = iw_get_be64(in + IW_OFF_TO);
        if (UINT64_MAX - to < (uint64_t)payload - 1)
            return 0;
        if (rx->cfg.check_seq && rx->tq.open && (op != rx->tq.opcode || stag != rx->tq.stag || to != rx->tq.to))
            return 0;
    } else {
        inv = iw_get_be32(in + IW_OFF_INV_STAG);
        qn = iw_get_be32(in + IW_OFF_QN);
        msn = iw_get_be32(in + IW_OFF_MSN);
        mo = iw_get_be32(in + IW_OFF_MO);
        if (qn != op_qn(op) || (uint64_t)mo + payload > UINT32_MAX + UINT64_C(1))
            return 0;
        const struct iw_fpdu_rx_queue *q = &rx->uq[IW_QN_SEND];
        if (rx->cfg.check_seq && (msn != q->msn || (q->open && op != q->opcode) || mo != (q->open ? q->mo : 0)))
            return 0;
    }

    /* Commit: what rx_hdr_rest, rx_check_seq, the PAYLOAD step and rx_end_whole write. */
    if (h->opcode == IW_OP_READ_REQ)
        memset(&h->rr, 0, sizeof h->rr);
    else if (h->opcode == IW_OP_TERMINATE)
        memset(&h->term, 0, sizeof h->term);
    if (tagged)
        memcpy(rx->hbuf, in, IW_FPDU_TAGGED_HDR_LEN);
    else
        memcpy(rx->hbuf, in, IW_FPDU_UNTAGGED_HDR_LEN);
    h->ulpdu_len = ulpdu;
    h->ddp_ctrl = ddp;
    h->rdmap_ctrl = rdmap;
    h->opcode = op;
    h->tagged = tagged;
    h->last = last;
    h->hdr_len = (uint8_t)hneed;
    h->payload_len = payload;
    h->stag = stag;
    h->to = to;
    h->inv_stag = inv;
    h->qn = qn;
    h->msn = msn;
    h->mo = mo;
    rx->pad_len = (uint8_t)pad;
    if (rx->cfg.check_seq)
        rx_seq_advance(rx);
    rx->fpdu_start = rx->offset;
    rx->offset += total;
    rx->frames++;
    memcpy(rx->crc_buf, t + pad, IW_MPA_CRC_SIZE);
    rx_end_reset(rx);
    ev->type = IW_FPDU_EV_FRAME;
    ev->hdr = h;
    ev->data = in + hneed;
    ev->len = payload;
    ev->crc_wire = iw_get_le32(rx->crc_buf);
    ev->ended = true;
    return total;
}

enum iw_fpdu_ev_type iw_fpdu_rx_step_ex(struct iw_fpdu_rx *rx, const void *data, size_t len, unsigned flags,
                                        size_t *consumed, struct iw_fpdu_event *ev)
{
    const uint8_t *in = data;
    size_t used = 0;
    bool whole = false;                         /* this step reports a FRAME */

    memset(ev, 0, sizeof *ev);
    if (rx->crc_owed) {
        rx->crc_owed = 0;                       /* an earlier error, if any, stays the first */
        rx_fail(rx, -ENOTRECOVERABLE, IW_FPDU_RXERR_INTERNAL, IW_TERM_LAYER_RDMAP,
                IW_TERM_ETYPE_RDMAP_CATASTROPHIC, IW_TERM_RDMAP_UNSPECIFIED, false);
        goto error;
    }
    if ((flags & (IW_FPDU_RX_WHOLE | IW_FPDU_RX_END)) == (IW_FPDU_RX_WHOLE | IW_FPDU_RX_END) &&
        rx->state == IW_FPDU_RX_HDR_START && rx->hgot == 0 && !rx->cfg.crc) {
        used = rx_frame_fast(rx, in, len, ev);
        if (used)
            goto out;
    }
    for (;;) {
        size_t avail = len - used;
        size_t take;

        switch (rx->state) {
        case IW_FPDU_RX_HDR_START:
        case IW_FPDU_RX_HDR_REST:
            take = min_size((size_t)(rx->hneed - rx->hgot), avail);
            if (take) {
                if (rx->hgot == 0)
                    rx->fpdu_start = rx->offset;
                rx_copy_hdr(rx, in + used, take);
                rx->hgot = (uint16_t)(rx->hgot + take);
                used += take;
                rx->offset += take;
            }
            if (rx->hgot < rx->hneed)
                goto need_more;
            if (rx->state == IW_FPDU_RX_HDR_START) {
                if (!rx_hdr_start(rx))
                    goto error;
                continue;
            }
            if (!rx_hdr_rest(rx))
                goto error;
            ev->hdr = &rx->hdr;
            /* The rest of the frame is in this input: go on into the payload and report both at
             * once. The trailer waits for the next step, as after the last PAYLOAD. */
            if ((flags & IW_FPDU_RX_WHOLE) && rx->state == IW_FPDU_RX_PAYLOAD &&
                len - used >= (size_t)rx->hdr.payload_len + rx->pad_len + IW_MPA_CRC_SIZE) {
                whole = true;
                continue;
            }
            ev->type = IW_FPDU_EV_HEADER;
            goto out;

        case IW_FPDU_RX_PAYLOAD:
            if (!avail)
                goto need_more;
            take = min_size(rx->hdr.payload_len - rx->pay_done, avail);
            if (rx->cfg.crc && (flags & IW_FPDU_RX_CALLER_CRC)) {
                rx->crc_owed = (uint32_t)take;
                ev->crc_owed = true;
            } else if (rx->cfg.crc) {
                rx->crc_state = iw_crc32c_update(rx->crc_state, in + used, take);
            }
            ev->type = whole ? IW_FPDU_EV_FRAME : IW_FPDU_EV_PAYLOAD;
            rx->frames += whole;
            ev->hdr = &rx->hdr;
            ev->data = in + used;
            ev->len = (uint32_t)take;
            ev->off = rx->pay_done;
            rx->pay_done += (uint32_t)take;
            used += take;
            rx->offset += take;
            if (rx->pay_done == rx->hdr.payload_len) {
                size_t t = whole && (flags & IW_FPDU_RX_END) ? rx_end_whole(rx, in + used, ev) : 0;
                if (t) {
                    used += t;
                    rx->offset += t;
                } else if (!rx_goto(rx, rx->pad_len ? IW_FPDU_RX_PAD : IW_FPDU_RX_CRC)) {
                    goto error;
                }
            }
            goto out;

        case IW_FPDU_RX_PAD:
            take = min_size((size_t)(rx->pad_len - rx->pad_got), avail);
            for (size_t i = 0; i < take; i++)
                rx->pad_nonzero |= in[used + i] != 0;
            if (take && rx->cfg.crc)
                rx->crc_state = iw_crc32c_update(rx->crc_state, in + used, take);
            rx->pad_got = (uint8_t)(rx->pad_got + take);
            used += take;
            rx->offset += take;
            if (rx->pad_got < rx->pad_len)
                goto need_more;
            /* RFC 5044 §4 says the receiver ignores PAD contents; strict mode is for peers we
             * test. Reported as an FPDU framing error, there being no closer code. */
            if (rx->cfg.strict_pad && rx->pad_nonzero) {
                rx_peer_fail(rx, IW_FPDU_RXERR_PAD, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA,
                             IW_TERM_LLP_MARKER_LEN, false);
                goto error;
            }
            if (!rx_goto(rx, IW_FPDU_RX_CRC))
                goto error;
            continue;

        case IW_FPDU_RX_CRC:
            take = min_size((size_t)(IW_MPA_CRC_SIZE - rx->crc_got), avail);
            if (take) {
                if (take == IW_MPA_CRC_SIZE)            /* the usual whole field: no library call */
                    memcpy(rx->crc_buf, in + used, IW_MPA_CRC_SIZE);
                else
                    memcpy(rx->crc_buf + rx->crc_got, in + used, take);
                rx->crc_got = (uint8_t)(rx->crc_got + take);
                used += take;
                rx->offset += take;
            }
            if (rx->crc_got < IW_MPA_CRC_SIZE)
                goto need_more;
            ev->crc_wire = iw_get_le32(rx->crc_buf);
            ev->pad_nonzero = rx->pad_nonzero;
            if (rx->cfg.crc) {
                ev->crc_checked = true;
                ev->crc_calc = iw_crc32c_final(rx->crc_state);
                /* RFC 5044 §8 code 2; no header attached, it may be the corrupt part. */
                if (ev->crc_calc != ev->crc_wire) {
                    rx_peer_fail(rx, IW_FPDU_RXERR_CRC, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA,
                                 IW_TERM_LLP_CRC, false);
                    goto error;
                }
            }
            if (!rx_goto(rx, IW_FPDU_RX_HDR_START))
                goto error;
            rx_end_reset(rx);
            ev->type = IW_FPDU_EV_END;
            ev->hdr = &rx->hdr;
            goto out;

        case IW_FPDU_RX_ERROR:
            goto error;

        default:
            rx_goto(rx, IW_FPDU_RX_ERROR);      /* unreachable; records an internal error */
            goto error;
        }
    }

need_more:
    ev->type = IW_FPDU_EV_NEED_MORE;
    goto out;
error:
    memset(ev, 0, sizeof *ev);
    ev->type = IW_FPDU_EV_ERROR;
    ev->err = &rx->error;
out:
    *consumed = used;
    return ev->type;
}

int iw_fpdu_rx_set_error(struct iw_fpdu_rx *rx, uint8_t layer, uint8_t etype, uint8_t ecode)
{
    if (rx->error.err)
        return -EALREADY;
    rx_fail(rx, -EPROTO, IW_FPDU_RXERR_CALLER, layer, etype, ecode, rx_hdr_valid(rx));
    return 0;
}

const struct iw_fpdu_rx_error *iw_fpdu_rx_error(const struct iw_fpdu_rx *rx)
{
    return rx->state == IW_FPDU_RX_ERROR ? &rx->error : NULL;
}
