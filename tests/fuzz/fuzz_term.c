/* Terminate decoder (RFC 5040 §4.8; siw's bitfield variant, fpdu.h).
 *
 * Input: the Terminate body (control word onward). Checks that iw_fpdu_term_decode() stays inside
 * the body and reports truncation instead of failing; that both control-word readings give
 * in-range fields; that the same body inside a Terminate FPDU decodes identically through the
 * deframer; and that a complete decoded Terminate rebuilds to the same bytes (reserved bits
 * aside) through the TX builder. */
#include <errno.h>
#include <string.h>

#include "fpdu.h"
#include "fuzz.h"

/* Wraps body into an untagged Terminate FPDU (QN 2, MSN 1, MO 0, L set) and deframes it. */
static void through_deframer(const uint8_t *body, size_t len, int dec_rc, const struct iw_fpdu_term *t)
{
    uint8_t fpdu[IW_FPDU_UNTAGGED_HDR_LEN + 256 + 8];
    size_t ulpdu = IW_DDP_UNTAGGED_HDR_LEN + len;

    if (len > 256)
        return;
    memset(fpdu, 0, sizeof fpdu);
    iw_put_be16(fpdu + IW_OFF_MPA_LEN, (uint16_t)ulpdu);
    fpdu[IW_OFF_DDP_CTRL] = IW_DDP_CTRL_L | IW_DDP_VERSION;
    fpdu[IW_OFF_RDMAP_CTRL] = IW_RDMAP_VERSION << IW_RDMAP_CTRL_RV_SHIFT | IW_OP_TERMINATE;
    iw_put_be32(fpdu + IW_OFF_QN, IW_QN_TERMINATE);
    iw_put_be32(fpdu + IW_OFF_MSN, 1);
    memcpy(fpdu + IW_OFF_TERM_CTRL, body, len);
    size_t total = iw_mpa_fpdu_len((uint32_t)ulpdu);

    static struct iw_fpdu_rx rx;
    struct iw_fpdu_rx_cfg cfg = { .check_seq = true };
    iw_fpdu_rx_init(&rx, &cfg);
    struct iw_fpdu_event ev;
    size_t used;
    enum iw_fpdu_ev_type ty = iw_fpdu_rx_step(&rx, fpdu, total, &used, &ev);
    if (dec_rc < 0 || ulpdu > IW_TERM_ULPDU_MAX) {
        /* No control word, or more than a Terminate may hold: the deframer refuses it. */
        FZ_CHECK(ty == IW_FPDU_EV_ERROR, "deframer took a %zu-byte Terminate body", len);
        FZ_CHECK(rx.error.reason == (dec_rc < 0 ? IW_FPDU_RXERR_ULPDU_SHORT : IW_FPDU_RXERR_MSG_TOO_LONG),
                 "refused for %s", iw_fpdu_rx_reason_str(rx.error.reason));
        return;
    }
    FZ_CHECK(ty == IW_FPDU_EV_HEADER, "deframer refused a %zu-byte Terminate body: %s", len,
             iw_fpdu_rx_reason_str(rx.error.reason));
    FZ_CHECK(memcmp(&ev.hdr->term, t, sizeof *t) == 0, "deframer and iw_fpdu_term_decode disagree");
    FZ_CHECK(iw_fpdu_rx_step(&rx, fpdu + used, total - used, &used, &ev) == IW_FPDU_EV_END, "no END");
}

static void rebuild(const uint8_t *body, size_t len, const struct iw_fpdu_term *t)
{
    struct iw_fpdu_hdr h;
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_TERMINATE;
    h.last = true;
    h.term = *t;
    uint8_t buf[IW_FPDU_MAX_BUFFERED + 8];
    int n = iw_fpdu_build(&h, NULL, 0, false, buf, sizeof buf);
    FZ_CHECK(n > 0, "a decoded Terminate does not rebuild: %d", n);
    size_t blen = (size_t)iw_fpdu_hdr_len(&h) - IW_OFF_TERM_CTRL;
    FZ_CHECK(blen <= len, "rebuilt body (%zu) longer than the decoded one (%zu)", blen, len);
    const uint8_t *b = buf + IW_OFF_TERM_CTRL;
    FZ_CHECK(b[0] == body[0] && b[1] == body[1], "control word bytes 0-1 differ");
    FZ_CHECK(b[2] == (body[2] & ~IW_TERM_HDRCT_RSVD) && b[3] == 0, "control word bytes 2-3");
    FZ_CHECK(memcmp(b + IW_TERM_CTRL_LEN, body + IW_TERM_CTRL_LEN, blen - IW_TERM_CTRL_LEN) == 0,
             "rebuilt attachments differ");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct iw_fpdu_term t;
    /* Exact copy: libFuzzer's buffer is exact too, but the corpus driver's is the same size. */
    int rc = iw_fpdu_term_decode(data, size, &t);

    if (size < IW_TERM_CTRL_LEN) {
        FZ_CHECK(rc == -EBADMSG, "decoded %zu bytes with no control word", size);
        through_deframer(data, size, rc, &t);
        return 0;
    }
    FZ_CHECK(rc == 0, "rc %d on %zu bytes", rc, size);
    FZ_CHECK(t.layer <= 0xF && t.etype <= 0xF && !(t.hdrct & IW_TERM_HDRCT_RSVD), "control word fields");
    FZ_CHECK(memcmp(t.ctrl, data, IW_TERM_CTRL_LEN) == 0, "control word not kept as received");
    FZ_CHECK(t.ddp_hdr_len == 0 || t.ddp_hdr_len == IW_DDP_TAGGED_HDR_LEN ||
             t.ddp_hdr_len == IW_DDP_UNTAGGED_HDR_LEN, "ddp_hdr_len %u", t.ddp_hdr_len);
    FZ_CHECK(t.ddp_hdr_len == 0 || (t.hdrct & IW_TERM_HDRCT_D), "DDP header without D");

    size_t want = IW_TERM_CTRL_LEN;
    if (t.hdrct & IW_TERM_HDRCT_D) {
        if (size < want + IW_TERM_DDP_SEGLEN_LEN + 1) {
            want = SIZE_MAX;
        } else {
            size_t hl = (data[want + IW_TERM_DDP_SEGLEN_LEN] & IW_DDP_CTRL_T) ? IW_DDP_TAGGED_HDR_LEN
                                                                               : IW_DDP_UNTAGGED_HDR_LEN;
            want += IW_TERM_DDP_SEGLEN_LEN + hl;
        }
    }
    if (want != SIZE_MAX && (t.hdrct & IW_TERM_HDRCT_R))
        want += IW_READ_REQ_LEN;
    FZ_CHECK(t.truncated == (want == SIZE_MAX || want > size), "truncated %d, body %zu, needs %zu",
             t.truncated, size, want);

    struct iw_term_ctrl rfc, siw;
    iw_fpdu_term_ctrl_rfc(data, &rfc);
    iw_fpdu_term_ctrl_siw(data, &siw);
    FZ_CHECK(rfc.layer == t.layer && rfc.etype == t.etype && rfc.ecode == t.ecode && rfc.hdrct == t.hdrct,
             "RFC reading disagrees with the decoder");
    FZ_CHECK(siw.layer <= 0xF && siw.etype <= 0xF && !(siw.hdrct & IW_TERM_HDRCT_RSVD) &&
             siw.ecode == data[IW_TERM_OFF_ECODE], "siw reading out of range");

    through_deframer(data, size, rc, &t);
    if (!t.truncated)
        rebuild(data, size, &t);
    return 0;
}
