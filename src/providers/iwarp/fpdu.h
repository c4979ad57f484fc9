/* FPDUs: MPA framing (RFC 5044 §4) around one DDP segment (RFC 5041) carrying RDMAP (RFC 5040).
 *
 * TX: iw_fpdu_build() writes a whole FPDU into caller storage; iw_fpdu_put_hdr() and
 * iw_fpdu_put_trailer() write the two ends separately, for a sender that hands the payload to
 * the socket straight from registered memory. iw_fpdu_mulpdu() / iw_fpdu_max_payload() size
 * segments so that one FPDU fits one TCP segment (RFC 5044 §4).
 *
 * RX: struct iw_fpdu_rx is a resumable deframer. Feed it the byte stream in whatever pieces TCP
 * delivers (down to single bytes); each iw_fpdu_rx_step() call consumes input up to the next
 * event and reports it:
 *
 *   HEADER   the DDP/RDMAP header is in and validated: rx->hdr holds every field. A Read
 *            Request's 28-byte body and a Terminate's whole body are part of the header.
 *   PAYLOAD  a chunk of the segment's payload, pointing INTO the caller's input buffer, with
 *            its offset inside the segment, so it can be placed straight into registered memory.
 *            With IW_FPDU_RX_CALLER_CRC the deframer leaves the chunk's CRC to the caller, who
 *            places it with iw_fpdu_rx_place_copy() / iw_fpdu_rx_place_skip(): bytes that must
 *            be copied anyway are then read once, by the copy that also runs the CRC.
 *   END      pad and CRC trailer consumed (CRC verified when enabled).
 *   FRAME    with IW_FPDU_RX_WHOLE only: HEADER and the segment's whole payload in one event,
 *            when the input holds the rest of the frame, trailer included. The trailer is
 *            left for the next step, which reports END (or ERROR) without needing more input:
 *            so the caller's own checks on the header still come before the CRC verdict, and
 *            the completion after it, as with HEADER + PAYLOAD + END. With IW_FPDU_RX_END too,
 *            a trailer that cannot fail (CRC off, PAD zero) is taken in the same step and the
 *            FRAME carries END's fields (ev->ended): HEADER + PAYLOAD + END in one event.
 *   ERROR    a protocol error; rx->error holds the RFC Terminate layer / etype / code to send,
 *            with the offending header attached where the RFC wants it. The first error sticks:
 *            the deframer consumes nothing more.
 *   NEED_MORE  all input was consumed without completing an event.
 *
 * The deframer is a plain struct with no pointers into itself, so it may be copied (tests
 * snapshot it). It never allocates and never reads outside the input it is given.
 *
 * Talks to: iwarp_wire.h, crc32c.h only. */
#ifndef IWARP_FPDU_H
#define IWARP_FPDU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp_wire.h"
#include "mpa.h"

struct iw_iov {
    const void *base;
    size_t      len;
};

/* RDMA Read Request header (RFC 5040 §4.4). */
struct iw_fpdu_rr {
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t size;
    uint32_t src_stag;
    uint64_t src_to;
};

/* Terminate body (RFC 5040 §4.8): control word plus optional attachments. On TX the hdrct bits
 * decide what is written: D writes ddp_seg_len and ddp_hdr (ddp_hdr_len 14 or 18 bytes, the
 * terminated segment's DDP/RDMAP header without its MPA length); R writes rdmap_hdr (the
 * terminated Read Request's 28-byte header). M only flags ddp_seg_len as valid. */
struct iw_fpdu_term {
    uint8_t  layer;             /* enum iw_term_layer */
    uint8_t  etype;
    uint8_t  ecode;
    uint8_t  hdrct;             /* IW_TERM_HDRCT_M | _D | _R */
    uint16_t ddp_seg_len;
    uint8_t  ddp_hdr_len;       /* 0, 14 or 18 */
    bool     truncated;         /* RX: hdrct promised more bytes than the message held */
    uint8_t  ctrl[IW_TERM_CTRL_LEN];   /* RX: the control word as received */
    uint8_t  ddp_hdr[IW_DDP_UNTAGGED_HDR_LEN];
    uint8_t  rdmap_hdr[IW_READ_REQ_LEN];
};

/* Terminate control word read two ways: the RFC layout, and the layout siw's C bitfield puts on
 * the wire on little-endian hosts (nibbles of byte 0 swapped, M/D/R in bits 0/1/2 of byte 2;
 * RFC 5040 §4.8 has the other layout). Log both for a Terminate that may come from siw. */
struct iw_term_ctrl {
    uint8_t layer, etype, ecode, hdrct;
};

/* One DDP segment's header. For TX fill opcode, last and the fields of its model; the queue
 * number, the T bit and the versions follow from the opcode. The rest is decoded on RX. */
struct iw_fpdu_hdr {
    uint8_t  opcode;            /* enum iw_rdmap_opcode */
    bool     last;              /* DDP L bit; always set for Read Request and Terminate */
    bool     tagged;            /* DDP T bit */
    uint32_t stag;              /* tagged: data sink STag */
    uint64_t to;                /* tagged: data sink tagged offset */
    uint32_t inv_stag;          /* untagged: Send with Invalidate's STag, else 0 */
    uint32_t qn;                /* untagged */
    uint32_t msn;               /* untagged */
    uint32_t mo;                /* untagged */
    struct iw_fpdu_rr   rr;     /* IW_OP_READ_REQ */
    struct iw_fpdu_term term;   /* IW_OP_TERMINATE */
    /* RX outputs */
    uint16_t ulpdu_len;
    uint8_t  ddp_ctrl;
    uint8_t  rdmap_ctrl;
    uint8_t  hdr_len;           /* header bytes including the MPA length (and RR / Terminate body) */
    uint32_t payload_len;       /* bytes of payload in this segment */
};

/* ---- TX ---- */

/* RFC 5044 §4 MULPDU: the largest ULPDU whose FPDU fits in emss bytes of TCP payload, with or
 * without markers. 0 when emss is too small for any FPDU. */
uint32_t iw_fpdu_mulpdu(uint32_t emss, bool markers);

/* Payload bytes one segment of this opcode may carry when its ULPDU may be at most mulpdu
 * (0 for Read Request and Terminate, which carry none, and when the header alone won't fit). */
uint32_t iw_fpdu_max_payload(uint8_t opcode, uint32_t mulpdu);

/* Header length (MPA length included, Read Request / Terminate body included) for h, or -EINVAL
 * for an opcode we cannot send or a malformed Terminate description. */
int iw_fpdu_hdr_len(const struct iw_fpdu_hdr *h);

/* Writes the MPA length and the DDP/RDMAP header for a segment of payload_len bytes.
 * Returns the header length, -EINVAL (bad opcode, payload on a Read Request / Terminate, bad
 * Terminate attachments), -EMSGSIZE (ULPDU over 65535) or -ENOSPC. */
int iw_fpdu_put_hdr(const struct iw_fpdu_hdr *h, size_t payload_len, void *buf, size_t cap);
/* The same for one segment of the message h describes: L set when last, the TO (tagged) or the
 * MO (untagged) advanced by off, the payload's offset in the message; h itself is left alone. */
int iw_fpdu_put_seg_hdr(const struct iw_fpdu_hdr *h, bool last, uint64_t off, size_t payload_len, void *buf,
                        size_t cap);

/* iw_fpdu_put_hdr's bytes for a whole Send in one segment (L set, MO 0): op one of the four
 * Send opcodes, inv_stag written for the two with Invalidate, payload_len small enough that the
 * ULPDU fits (the caller's small message), buf at least IW_FPDU_UNTAGGED_HDR_LEN bytes. None of
 * iw_fpdu_put_hdr's checks or its look at the other opcodes: a small Send's post writes its
 * header here (tx.c's lean path). Returns IW_FPDU_UNTAGGED_HDR_LEN. */
int iw_fpdu_put_send_hdr(uint8_t op, uint32_t inv_stag, uint32_t msn, size_t payload_len, void *buf);

/* Writes PAD and the CRC field after a ULPDU of ulpdu_len bytes. crc_state is the running CRC
 * (iw_crc32c_update) over the MPA length, header and payload; the pad is folded in here. With crc
 * false the field is zero, as RFC 5044 §4 asks when CRC was not negotiated. Returns the
 * bytes written (pad + 4) or -ENOSPC. */
int iw_fpdu_put_trailer(uint32_t ulpdu_len, bool crc, uint32_t crc_state, void *buf, size_t cap);

/* Builds a whole FPDU: header, the payload gathered from iov[0..iovcnt), pad, CRC. Returns the
 * FPDU length or the errors of iw_fpdu_put_hdr(). iw_fpdu_build_term: a connection's one
 * Terminate (RFC 5040 §4.8: QN 2, MSN 1, Last) carrying term, no DDP/RDMAP header copy. */
int iw_fpdu_build_term(const struct iw_fpdu_term *term, bool crc, void *buf, size_t cap);
int iw_fpdu_build(const struct iw_fpdu_hdr *h, const struct iw_iov *iov, size_t iovcnt, bool crc,
                  void *buf, size_t cap);

/* ---- Terminate helpers ---- */

/* Decodes a Terminate body (control word onward: the ULPDU bytes after the untagged DDP header).
 * Returns 0, or -EBADMSG when even the control word is missing. Missing attachments set
 * t->truncated instead of failing: a Terminate is informational and the stream is over anyway. */
int iw_fpdu_term_decode(const uint8_t *body, size_t len, struct iw_fpdu_term *t);

void iw_fpdu_term_ctrl_rfc(const uint8_t ctrl[IW_TERM_CTRL_LEN], struct iw_term_ctrl *c);
void iw_fpdu_term_ctrl_siw(const uint8_t ctrl[IW_TERM_CTRL_LEN], struct iw_term_ctrl *c);

/* If h (a decoded header) is a valid RTR message of RFC 6581 (zero-length Write, zero-length
 * Read Request, zero-length Send), returns its IW_MPA_RTR_* kind, else 0. */
unsigned iw_fpdu_rtr_kind(const struct iw_fpdu_hdr *h);

const char *iw_fpdu_opcode_name(uint8_t opcode);

/* ---- RX ---- */

enum iw_fpdu_rx_state {
    IW_FPDU_RX_HDR_START,       /* MPA length and the two control bytes */
    IW_FPDU_RX_HDR_REST,        /* rest of the header, Read Request body, Terminate body */
    IW_FPDU_RX_PAYLOAD,
    IW_FPDU_RX_PAD,
    IW_FPDU_RX_CRC,
    IW_FPDU_RX_ERROR,           /* terminal */
    IW_FPDU_RX_STATE_COUNT
};

struct iw_fpdu_rx_cfg {
    uint32_t max_ulpdu;         /* largest ULPDU_Length accepted; 0 = 65535; at least 70 */
    bool     crc;               /* CRC negotiated: verify every FPDU */
    bool     strict_pad;        /* treat non-zero PAD bytes as an error (RFC: ignore them) */
    bool     check_seq;         /* stream checks of RFC 5041 §5: MSN and MO continuity per
                                 * queue, tagged continuity, no interleaving within a class */
};

enum iw_fpdu_rx_reason {
    IW_FPDU_RXERR_NONE = 0,
    IW_FPDU_RXERR_DDP_VERSION,
    IW_FPDU_RXERR_RDMAP_VERSION,
    IW_FPDU_RXERR_OPCODE,           /* unknown or unimplemented opcode */
    IW_FPDU_RXERR_TAGGED_MISMATCH,  /* T bit contradicts the opcode */
    IW_FPDU_RXERR_ULPDU_SHORT,      /* ULPDU_Length too small for the header */
    IW_FPDU_RXERR_ULPDU_LONG,       /* ULPDU_Length above the configured maximum */
    IW_FPDU_RXERR_MSG_TOO_LONG,     /* Read Request / Terminate longer than its fixed size, or not last */
    IW_FPDU_RXERR_QN,
    IW_FPDU_RXERR_MSN,
    IW_FPDU_RXERR_MO,
    IW_FPDU_RXERR_MO_WRAP,
    IW_FPDU_RXERR_TO_WRAP,
    IW_FPDU_RXERR_INTERLEAVE,       /* a different message started inside an unfinished one */
    IW_FPDU_RXERR_STAG_CHANGE,      /* tagged continuation with another STag */
    IW_FPDU_RXERR_TO_GAP,           /* tagged continuation not at the previous end */
    IW_FPDU_RXERR_PAD,
    IW_FPDU_RXERR_CRC,
    IW_FPDU_RXERR_CALLER,           /* recorded by iw_fpdu_rx_set_error() */
    IW_FPDU_RXERR_INTERNAL,         /* undefined state transition: a bug, never peer input */
    IW_FPDU_RXERR_COUNT
};

struct iw_fpdu_rx_error {
    int      err;               /* -EBADMSG (peer), -EPROTO (caller), -ENOTRECOVERABLE (bug) */
    enum iw_fpdu_rx_reason reason;
    uint64_t fpdu_offset;       /* stream offset of the FPDU in error */
    struct iw_fpdu_term term;   /* what the Terminate should say, attachments included */
};

enum iw_fpdu_ev_type {
    IW_FPDU_EV_NEED_MORE = 0,
    IW_FPDU_EV_HEADER,
    IW_FPDU_EV_PAYLOAD,
    IW_FPDU_EV_END,
    IW_FPDU_EV_ERROR,
    IW_FPDU_EV_FRAME,
};

struct iw_fpdu_event {
    enum iw_fpdu_ev_type type;
    const struct iw_fpdu_hdr *hdr;      /* HEADER, PAYLOAD, END, FRAME */
    const uint8_t *data;                /* PAYLOAD, FRAME: inside the input passed to this step */
    uint32_t len;                       /* PAYLOAD, FRAME */
    uint32_t off;                       /* PAYLOAD: offset within this segment's payload; FRAME: 0 */
    bool     crc_checked;               /* END: CRC enabled and verified */
    uint32_t crc_wire;                  /* END: CRC field value (read LSB first) */
    uint32_t crc_calc;                  /* END: computed value, when crc_checked */
    bool     crc_owed;                  /* PAYLOAD, FRAME: the CRC over these bytes is the caller's */
    bool     pad_nonzero;               /* END */
    bool     ended;                     /* FRAME: the trailer was taken too (IW_FPDU_RX_END) */
    const struct iw_fpdu_rx_error *err; /* ERROR */
};

struct iw_fpdu_rx_queue {               /* check_seq state of one untagged queue */
    uint32_t msn;                       /* expected MSN of the current / next message */
    uint32_t mo;                        /* expected MO of the next segment */
    uint8_t  opcode;
    bool     open;                      /* a message is partly received */
};

struct iw_fpdu_rx {
    struct iw_fpdu_rx_cfg cfg;
    enum iw_fpdu_rx_state state;
    uint16_t hgot;                      /* header bytes buffered */
    uint16_t hneed;                     /* header bytes wanted (4 until the control bytes are in) */
    uint32_t pay_done;
    uint8_t  pad_len;
    uint8_t  pad_got;
    bool     pad_nonzero;
    uint8_t  crc_got;
    uint32_t crc_state;
    uint32_t crc_owed;                  /* bytes of the last PAYLOAD event not yet in crc_state */
    uint64_t offset;                    /* stream bytes consumed */
    uint64_t fpdu_start;                /* stream offset of the current FPDU */
    uint64_t fpdus;                     /* FPDUs completed */
    uint64_t frames;                    /* FRAME events reported (IW_FPDU_RX_WHOLE) */
    struct iw_fpdu_hdr hdr;             /* current (or last completed) segment */
    struct iw_fpdu_rx_error error;
    struct iw_fpdu_rx_queue uq[3];      /* QN 0 Send, 1 Read Request, 2 Terminate */
    struct {
        bool     open;
        uint8_t  opcode;
        uint32_t stag;
        uint64_t to;                    /* expected TO of the next segment */
    } tq;
    uint8_t  crc_buf[IW_MPA_CRC_SIZE];
    uint8_t  hbuf[IW_FPDU_MAX_BUFFERED];
};

/* cfg may be NULL for defaults (no CRC, 65535, lenient pad, no stream checks). */
void iw_fpdu_rx_init(struct iw_fpdu_rx *rx, const struct iw_fpdu_rx_cfg *cfg);

/* Consumes input up to the next event (see the top of this file) and describes it in *ev.
 * *consumed is always set; NEED_MORE means all len bytes were consumed. */
enum iw_fpdu_ev_type iw_fpdu_rx_step(struct iw_fpdu_rx *rx, const void *data, size_t len,
                                     size_t *consumed, struct iw_fpdu_event *ev);

/* iw_fpdu_rx_step() with flags. IW_FPDU_RX_CALLER_CRC: when CRC is on, a PAYLOAD event's bytes
 * are not run through the CRC (ev->crc_owed); before the next step the caller passes every one
 * of them, in order, through iw_fpdu_rx_place_copy() or iw_fpdu_rx_place_skip(). A step with
 * bytes still owed records an internal error (a bug of the caller, never peer input). */
#define IW_FPDU_RX_CALLER_CRC 1u
/* IW_FPDU_RX_WHOLE: a segment with payload whose frame the input holds whole is reported as one
 * FRAME event instead of HEADER + PAYLOAD (the small-message path: one step less per FPDU).
 * Every check is the same, in the same order. */
#define IW_FPDU_RX_WHOLE      2u
/* IW_FPDU_RX_END, with IW_FPDU_RX_WHOLE: a FRAME whose trailer nothing can fail (CRC off, PAD
 * zero) ends the segment in the same step, ev->ended set and END's fields filled (the
 * small-message path: the trailer's step less per FPDU). With CRC on, or a PAD that strict mode
 * would refuse or END would report, the trailer stays for the next step as without it. */
#define IW_FPDU_RX_END        4u
enum iw_fpdu_ev_type iw_fpdu_rx_step_ex(struct iw_fpdu_rx *rx, const void *data, size_t len, unsigned flags,
                                        size_t *consumed, struct iw_fpdu_event *ev);

/* Copies n bytes of the last PAYLOAD event (src inside it, the next unplaced bytes) to dst,
 * running the CRC over them in the same pass when they are owed; a plain memcpy otherwise. */
void iw_fpdu_rx_place_copy(struct iw_fpdu_rx *rx, void *dst, const void *src, size_t n);

/* The same for n bytes that stay where they are (read straight into their target, or dropped):
 * runs the CRC over them when owed. */
void iw_fpdu_rx_place_skip(struct iw_fpdu_rx *rx, const void *src, size_t n);

/* Records an error the caller found in the current segment (bad STag, no receive buffer, ...),
 * attaching the header as RFC 5040 §4.8 describes, and stops the deframer. Keeps an earlier
 * error: returns 0 when recorded, -EALREADY when one was already there. */
int iw_fpdu_rx_set_error(struct iw_fpdu_rx *rx, uint8_t layer, uint8_t etype, uint8_t ecode);

/* The recorded error, or NULL. */
const struct iw_fpdu_rx_error *iw_fpdu_rx_error(const struct iw_fpdu_rx *rx);

const char *iw_fpdu_rx_state_name(enum iw_fpdu_rx_state s);
const char *iw_fpdu_rx_reason_str(enum iw_fpdu_rx_reason r);

#endif
