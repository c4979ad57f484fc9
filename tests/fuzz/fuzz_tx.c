/* TX builders: iw_fpdu_build(), iw_fpdu_put_hdr() + iw_fpdu_put_trailer(), iw_mpa_encode(),
 * iw_fpdu_mulpdu() / iw_fpdu_max_payload(), from fuzzed parameters.
 *
 * Each builder must return an error exactly when one of the errors its header documents applies
 * (the model below), never write beyond the capacity it was given (every buffer is an exact
 * allocation), and whatever it builds must parse back to the parameters it was given: FPDUs
 * through the deframer with CRC and strict PAD, MPA frames through the decoder and the parser.
 *
 * Input: selector (1 byte: bit 0 MPA frame instead of FPDU), then the parameters in the order the
 * code reads them, then payload / private-data bytes (repeated to the asked length). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "crc32c.h"
#include "fpdu.h"
#include "fuzz.h"
#include "mpa.h"

/* Set of documented errors a call may return (a bit per errno). */
#define E_INVAL   1u
#define E_MSGSIZE 2u
#define E_NOSPC   4u

static unsigned err_bit(int rc)
{
    return rc == -EINVAL ? E_INVAL : rc == -EMSGSIZE ? E_MSGSIZE : rc == -ENOSPC ? E_NOSPC : 0x80;
}

static void check_rc(int rc, unsigned allowed, const char *what)
{
    if (allowed)
        FZ_CHECK(rc < 0 && (err_bit(rc) & allowed), "%s returned %d, expected one of mask %x", what, rc, allowed);
    else
        FZ_CHECK(rc >= 0, "%s refused valid parameters: %d", what, rc);
}

/* n bytes of src repeated (a fixed pattern when the input has no bytes left). */
static void fill(uint8_t *out, size_t n, const uint8_t *src, size_t srclen)
{
    static const uint8_t pattern[8] = { 0x00, 0x07, 0x0e, 0x15, 0x1c, 0x23, 0x2a, 0x31 };
    if (!srclen) {
        src = pattern;
        srclen = sizeof pattern;
    }
    size_t have = n < srclen ? n : srclen;
    memcpy(out, src, have);
    while (have < n) {                  /* doubling: a few copies, not one per repetition */
        size_t k = n - have < have ? n - have : have;
        memcpy(out + have, out, k);
        have += k;
    }
}

static bool op_tagged(uint8_t op)
{
    return op == IW_OP_WRITE || op == IW_OP_READ_RESP;
}

static bool op_single(uint8_t op)
{
    return op == IW_OP_READ_REQ || op == IW_OP_TERMINATE;
}

/* Header length the builder must use, or -1 when the description is invalid. */
static int model_hdr_len(const struct iw_fpdu_hdr *h)
{
    uint8_t op = h->opcode;
    if (op > IW_OP_RFC5040_MAX)
        return -1;
    if (op == IW_OP_READ_REQ)
        return IW_FPDU_READ_REQ_HDR_LEN;
    if (op != IW_OP_TERMINATE)
        return op_tagged(op) ? IW_FPDU_TAGGED_HDR_LEN : IW_FPDU_UNTAGGED_HDR_LEN;
    const struct iw_fpdu_term *t = &h->term;
    if (t->layer > 0xF || t->etype > 0xF || (t->hdrct & IW_TERM_HDRCT_RSVD))
        return -1;
    int n = IW_FPDU_UNTAGGED_HDR_LEN + IW_TERM_CTRL_LEN;
    if (t->hdrct & IW_TERM_HDRCT_D) {
        unsigned want = (t->ddp_hdr[0] & IW_DDP_CTRL_T) ? IW_DDP_TAGGED_HDR_LEN : IW_DDP_UNTAGGED_HDR_LEN;
        if (t->ddp_hdr_len != want)
            return -1;
        n += IW_TERM_DDP_SEGLEN_LEN + (int)want;
    }
    if (t->hdrct & IW_TERM_HDRCT_R)
        n += IW_READ_REQ_LEN;
    return n;
}

static void check_parse_back(const struct iw_fpdu_hdr *h, const uint8_t *payload, size_t plen, bool crc,
                             const uint8_t *fpdu, size_t flen)
{
    static struct iw_fpdu_rx rx;
    struct iw_fpdu_rx_cfg cfg = { .crc = crc, .strict_pad = true };
    struct iw_fpdu_event ev;
    size_t used, pos = 0, got = 0;
    uint8_t op = h->opcode;
    bool wraps = op_tagged(op) ? (plen && UINT64_MAX - h->to < plen - 1)
                               : (!op_single(op) && (uint64_t)h->mo + plen > UINT64_C(1) << 32);

    iw_fpdu_rx_init(&rx, &cfg);
    enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&rx, fpdu, flen, &used, &ev);
    if (wraps) {
        /* The builder does not police offsets (the caller sizes messages); the receiver must. */
        FZ_CHECK(t == IW_FPDU_EV_ERROR && (rx.error.reason == IW_FPDU_RXERR_MO_WRAP ||
                                           rx.error.reason == IW_FPDU_RXERR_TO_WRAP),
                 "a wrapping segment was not refused for wrapping");
        return;
    }
    FZ_CHECK(t == IW_FPDU_EV_HEADER, "built FPDU does not parse: %s",
             rx.error.err ? iw_fpdu_rx_reason_str(rx.error.reason) : "no header");
    pos += used;
    const struct iw_fpdu_hdr *r = ev.hdr;
    FZ_CHECK(r->opcode == op && r->tagged == op_tagged(op) && r->last == (h->last || op_single(op)),
             "opcode / T / L do not round-trip");
    FZ_CHECK(r->payload_len == plen && (int)r->hdr_len == iw_fpdu_hdr_len(h), "lengths do not round-trip");
    if (r->tagged) {
        FZ_CHECK(r->stag == h->stag && r->to == h->to, "STag / TO do not round-trip");
    } else {
        uint32_t qn = op == IW_OP_READ_REQ ? IW_QN_READ_REQ : op == IW_OP_TERMINATE ? IW_QN_TERMINATE : IW_QN_SEND;
        bool inv = op == IW_OP_SEND_INV || op == IW_OP_SEND_SE_INV;
        FZ_CHECK(r->qn == qn && r->msn == h->msn && r->mo == (op_single(op) ? 0 : h->mo) &&
                 r->inv_stag == (inv ? h->inv_stag : 0), "QN / MSN / MO / invalidate STag do not round-trip");
    }
    if (op == IW_OP_READ_REQ)
        FZ_CHECK(r->rr.sink_stag == h->rr.sink_stag && r->rr.sink_to == h->rr.sink_to && r->rr.size == h->rr.size &&
                 r->rr.src_stag == h->rr.src_stag && r->rr.src_to == h->rr.src_to, "Read Request does not round-trip");
    if (op == IW_OP_TERMINATE) {
        const struct iw_fpdu_term *a = &h->term, *b = &r->term;
        FZ_CHECK(a->layer == b->layer && a->etype == b->etype && a->ecode == b->ecode && a->hdrct == b->hdrct &&
                 !b->truncated, "Terminate control word does not round-trip");
        if (a->hdrct & IW_TERM_HDRCT_D)
            FZ_CHECK(a->ddp_seg_len == b->ddp_seg_len && a->ddp_hdr_len == b->ddp_hdr_len &&
                     memcmp(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len) == 0, "Terminate DDP header");
        if (a->hdrct & IW_TERM_HDRCT_R)
            FZ_CHECK(memcmp(a->rdmap_hdr, b->rdmap_hdr, IW_READ_REQ_LEN) == 0, "Terminate RDMAP header");
    }
    for (;;) {
        t = iw_fpdu_rx_step(&rx, fpdu + pos, flen - pos, &used, &ev);
        pos += used;
        if (t != IW_FPDU_EV_PAYLOAD)
            break;
        FZ_CHECK(ev.off == got && memcmp(ev.data, payload + got, ev.len) == 0, "payload does not round-trip");
        got += ev.len;
    }
    FZ_CHECK(t == IW_FPDU_EV_END && got == plen && pos == flen, "no END at the FPDU's end: %s",
             t == IW_FPDU_EV_ERROR ? iw_fpdu_rx_reason_str(rx.error.reason) : "");
    FZ_CHECK(ev.crc_checked == crc && (crc || ev.crc_wire == 0), "CRC field");
}

static void fuzz_fpdu(struct fz_in *in)
{
    struct iw_fpdu_hdr h;
    memset(&h, 0, sizeof h);
    uint8_t opsel = fz_u8(in);
    h.opcode = (opsel & 0x80) ? opsel : (opsel & 0x0F);   /* mostly 0..15, sometimes anything */
    uint8_t bits = fz_u8(in);
    h.last = bits & 1;
    bool crc = bits & 2;
    unsigned capmode = (bits >> 2) & 3;
    size_t niov = (bits >> 4) & 3;
    h.stag = fz_u32(in);
    h.to = fz_u64(in);
    h.inv_stag = fz_u32(in);
    h.msn = fz_u32(in);
    h.mo = fz_u32(in);
    h.rr.sink_stag = fz_u32(in);
    h.rr.sink_to = fz_u64(in);
    h.rr.size = fz_u32(in);
    h.rr.src_stag = fz_u32(in);
    h.rr.src_to = fz_u64(in);
    uint8_t le = fz_u8(in);
    h.term.layer = le >> 4;
    h.term.etype = le & 0x0F;
    if (bits & 0x40)                /* out-of-range nibbles, which the builder must refuse */
        h.term.layer |= 0x10;
    h.term.ecode = fz_u8(in);
    h.term.hdrct = fz_u8(in);
    h.term.ddp_seg_len = fz_u16(in);
    h.term.ddp_hdr_len = fz_u8(in);
    fz_bytes(in, h.term.ddp_hdr, sizeof h.term.ddp_hdr);
    fz_bytes(in, h.term.rdmap_hdr, sizeof h.term.rdmap_hdr);
    /* Mostly small payloads (fast); a set top bit reaches past the 65535-byte ULPDU limit. */
    uint32_t plsel = fz_u32(in);
    size_t plen = (plsel & 0x80000000u) ? (plsel & 0x7FFFFFFFu) % 70001 : plsel % 4097;
    uint16_t capsel = fz_u16(in);
    uint16_t emss = fz_u16(in);
    uint16_t cuts[3] = { fz_u16(in), fz_u16(in), fz_u16(in) };

    uint8_t *payload = malloc(plen ? plen : 1);
    FZ_CHECK(payload != NULL, "malloc");
    fill(payload, plen, in->p, in->n);

    /* Gather list: niov + 1 pieces at fuzzed cut points (niov 0: no iov at all). */
    struct iw_iov iov[4];
    size_t n = 0;
    if (niov || plen) {
        size_t prev = 0;
        for (size_t i = 0; i < niov; i++) {
            size_t c = prev + (plen - prev ? cuts[i] % (plen - prev + 1) : 0);
            iov[n].base = payload + prev;
            iov[n].len = c - prev;
            n++;
            prev = c;
        }
        iov[n].base = payload + prev;
        iov[n].len = plen - prev;
        n++;
    }

    int hl = model_hdr_len(&h);
    unsigned allowed = 0;
    size_t total = 0;
    if (plen > IW_MPA_ULPDU_MAX || (hl >= 0 && (size_t)hl - IW_MPA_LEN_SIZE + plen > IW_MPA_ULPDU_MAX))
        allowed |= E_MSGSIZE;
    if (hl < 0 || (hl >= 0 && op_single(h.opcode) && plen))
        allowed |= E_INVAL;
    if (!allowed)
        total = iw_mpa_fpdu_len((uint32_t)(hl - IW_MPA_LEN_SIZE + plen));
    size_t cap = capmode == 0 ? total : capmode == 1 ? (total > capsel % 8 ? total - capsel % 8 : 0)
               : capmode == 2 ? total + capsel % 8 : capsel;
    if (!allowed && cap < total)
        allowed |= E_NOSPC;
    if (allowed && cap < (size_t)(hl > 0 ? hl : 0))
        allowed |= E_NOSPC;

    uint8_t *buf = malloc(cap ? cap : 1);
    FZ_CHECK(buf != NULL, "malloc");
    int rc = iw_fpdu_build(&h, n ? iov : NULL, n, crc, buf, cap);
    check_rc(rc, allowed, "iw_fpdu_build");

    if (rc >= 0) {
        FZ_CHECK((size_t)rc == total && rc % 4 == 0, "built %d bytes, expected %zu", rc, total);
        FZ_CHECK(iw_fpdu_hdr_len(&h) == hl, "iw_fpdu_hdr_len %d, expected %d", iw_fpdu_hdr_len(&h), hl);
        /* The zero-copy path (header, payload from elsewhere, trailer) must give the same bytes. */
        uint8_t *alt = malloc(total);
        FZ_CHECK(alt != NULL, "malloc");
        int h2 = iw_fpdu_put_hdr(&h, plen, alt, (size_t)hl);
        FZ_CHECK(h2 == hl, "iw_fpdu_put_hdr returned %d, expected %d", h2, hl);
        memcpy(alt + hl, payload, plen);
        uint32_t st = crc ? iw_crc32c_update(iw_crc32c_init(), alt, (size_t)hl + plen) : 0;
        uint32_t ulpdu = (uint32_t)((size_t)hl - IW_MPA_LEN_SIZE + plen);
        size_t tlen = total - (size_t)hl - plen;
        FZ_CHECK(iw_fpdu_put_trailer(ulpdu, crc, st, alt + hl + plen, tlen) == (int)tlen, "trailer length");
        if (tlen)
            FZ_CHECK(iw_fpdu_put_trailer(ulpdu, crc, st, alt + hl + plen, tlen - 1) == -ENOSPC,
                     "trailer into too small a buffer");
        FZ_CHECK(memcmp(alt, buf, total) == 0, "iw_fpdu_build and put_hdr + put_trailer differ");
        if (hl > 0)
            FZ_CHECK(iw_fpdu_put_hdr(&h, plen, alt, (size_t)hl - 1) == -ENOSPC, "header into too small a buffer");
        free(alt);
        check_parse_back(&h, payload, plen, crc, buf, total);
    }

    /* Segment sizing: a ULPDU of MULPDU bytes fits the EMSS; a full segment fits the MULPDU. */
    for (int markers = 0; markers < 2; markers++) {
        uint32_t m = iw_fpdu_mulpdu(emss, markers);
        FZ_CHECK(m <= IW_MPA_ULPDU_MAX, "MULPDU %u", m);
        if (m) {
            uint64_t wire = iw_mpa_fpdu_len(m);
            if (markers)
                wire += IW_MPA_MARKER_SIZE * (((uint64_t)emss + IW_MPA_MARKER_SPACING - 1) / IW_MPA_MARKER_SPACING);
            FZ_CHECK(wire <= emss, "EMSS %u: MULPDU %u needs %llu bytes", emss, m, (unsigned long long)wire);
        }
        uint32_t mp = iw_fpdu_max_payload(h.opcode, m);
        if (hl > 0 && mp)
            FZ_CHECK((uint64_t)hl - IW_MPA_LEN_SIZE + mp <= m, "max payload %u over MULPDU %u", mp, m);
        FZ_CHECK(!mp || (h.opcode <= IW_OP_RFC5040_MAX && !op_single(h.opcode)), "payload for opcode %u", h.opcode);
    }
    free(buf);
    free(payload);
}

static void fuzz_mpa(struct fz_in *in)
{
    struct iw_mpa_frame f;
    memset(&f, 0, sizeof f);
    f.kind = (enum iw_mpa_kind)(fz_u8(in) & 3);
    f.rev = fz_u8(in) & 3;
    uint8_t bits = fz_u8(in);
    f.markers = bits & 1;
    f.crc = bits & 2;
    f.reject = bits & 4;
    f.enhanced = bits & 8;
    bool null_pd = (bits & 0x30) == 0x30;
    f.v2.p2p = bits & 0x40;
    f.v2.ird = fz_u16(in);
    f.v2.ord = fz_u16(in);
    f.v2.rtr = fz_u8(in);
    if (!(bits & 0x80)) {           /* mostly in range, so valid frames are common */
        f.v2.ird &= IW_MPA_V2_VALUE_MASK;
        f.v2.ord &= IW_MPA_V2_VALUE_MASK;
        f.v2.rtr &= IW_MPA_RTR_ALL;
    }
    f.ulp_pd_len = fz_u16(in) % 600;
    uint16_t max_pd = fz_u16(in) % 600;
    uint16_t capsel = fz_u16(in);
    uint8_t *pd = malloc(f.ulp_pd_len ? f.ulp_pd_len : 1);
    FZ_CHECK(pd != NULL, "malloc");
    fill(pd, f.ulp_pd_len, in->p, in->n);
    f.ulp_pd = null_pd ? NULL : pd;

    bool v2 = f.rev == IW_MPA_REV2 && f.enhanced;
    size_t pdl = (v2 ? IW_MPA_V2_LEN : 0) + f.ulp_pd_len;
    size_t limit = (max_pd == 0 || max_pd > IW_MPA_PD_MAX_RFC) ? IW_MPA_PD_MAX_RFC : max_pd;
    unsigned allowed = 0;
    if ((f.kind != IW_MPA_REQUEST && f.kind != IW_MPA_REPLY) || (f.rev != IW_MPA_REV1 && f.rev != IW_MPA_REV2) ||
        (f.kind == IW_MPA_REQUEST && f.reject) || (f.rev == IW_MPA_REV1 && f.enhanced) ||
        (f.ulp_pd_len && !f.ulp_pd) ||
        (v2 && (f.v2.ird > IW_MPA_V2_VALUE_MASK || f.v2.ord > IW_MPA_V2_VALUE_MASK || (f.v2.rtr & ~IW_MPA_RTR_ALL))))
        allowed |= E_INVAL;
    if (pdl > limit)
        allowed |= E_MSGSIZE;
    size_t need = IW_MPA_HDR_LEN + pdl;
    size_t cap = (capsel & 0x8000) ? capsel % 600 : need - (capsel & 1);
    if (cap < need)
        allowed |= E_NOSPC;

    uint8_t *buf = malloc(cap ? cap : 1);
    FZ_CHECK(buf != NULL, "malloc");
    int rc = iw_mpa_encode(&f, max_pd, buf, cap);
    check_rc(rc, allowed, "iw_mpa_encode");
    if (rc >= 0) {
        FZ_CHECK((size_t)rc == need && iw_mpa_frame_len(&f) == need, "encoded %d bytes, expected %zu", rc, need);
        FZ_CHECK(!(buf[IW_MPA_OFF_FLAGS] & IW_MPA_FLAG_RSVD), "reserved flag bits sent");
        struct iw_mpa_frame d;
        size_t flen = 0;
        enum iw_mpa_error err = IW_MPA_ERR_NONE;
        enum iw_mpa_status st = iw_mpa_decode(buf, (size_t)rc, f.kind, max_pd, &d, &flen, &err);
        FZ_CHECK(st == IW_MPA_COMPLETE && flen == (size_t)rc, "encoded frame does not decode: %s", iw_mpa_strerror(err));
        FZ_CHECK(d.kind == f.kind && d.rev == f.rev && d.markers == f.markers && d.crc == f.crc &&
                 d.reject == f.reject && d.enhanced == f.enhanced && d.has_v2 == v2 && d.pd_len == pdl &&
                 d.ulp_pd_len == f.ulp_pd_len, "MPA fields do not round-trip");
        FZ_CHECK(!v2 || (d.v2.ird == f.v2.ird && d.v2.ord == f.v2.ord && d.v2.p2p == f.v2.p2p && d.v2.rtr == f.v2.rtr),
                 "IRD/ORD block does not round-trip");
        FZ_CHECK(!f.ulp_pd_len || memcmp(d.ulp_pd, pd, f.ulp_pd_len) == 0, "private data does not round-trip");
        static struct iw_mpa_parser p;
        iw_mpa_parser_init(&p, f.kind, max_pd);
        size_t used;
        FZ_CHECK(iw_mpa_parser_feed(&p, buf, (size_t)rc, &used) == IW_MPA_COMPLETE && used == (size_t)rc,
                 "the parser does not take the encoded frame");
        if (v2) {
            uint8_t blk[IW_MPA_V2_LEN];
            struct iw_mpa_v2 back;
            FZ_CHECK(iw_mpa_v2_pack(&f.v2, blk) == 0, "v2 pack");
            iw_mpa_v2_unpack(blk, &back);
            FZ_CHECK(back.ird == f.v2.ird && back.ord == f.v2.ord && back.p2p == f.v2.p2p && back.rtr == f.v2.rtr,
                     "v2 pack / unpack");
        }
    }
    free(buf);
    free(pd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_in in = { data, size };
    if (fz_u8(&in) & 1)
        fuzz_mpa(&in);
    else
        fuzz_fpdu(&in);
    return 0;
}
