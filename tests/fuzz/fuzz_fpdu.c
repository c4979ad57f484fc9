/* FPDU deframer (RFC 5044 §4, RFC 5041, RFC 5040), as a differential: the stream decoded in one
 * piece and decoded in pieces whose sizes the fuzzer picks must give the same events, payload
 * bytes, error and final state. Each run also checks the step contract of fpdu.h on every call,
 * and that the Terminate an error asks for can be built and reads back the same; the one-piece
 * run also holds every FPDU to a model of the receive rules.
 *
 * Input: flags (1 byte: bit 0 CRC, bit 1 strict PAD, bit 2 stream checks, bits 3-4 MPA frame
 * first: 0 none, 1 Request, 2 Reply, 3 either; bit 5 the one-piece run, bit 6 the split run
 * takes whole frames as FRAME events, IW_FPDU_RX_WHOLE, which must log as HEADER + PAYLOAD;
 * bit 7 that run of the two takes their trailers too, IW_FPDU_RX_END: HEADER + PAYLOAD + END),
 * max_ulpdu (2 bytes), n (1 byte, mod 32), then n piece sizes (1 byte each, used in turn; n = 0
 * means one byte at a time), then the stream. */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "fpdu.h"
#include "fuzz.h"
#include "mpa.h"

struct cfg {
    struct iw_fpdu_rx_cfg rx;
    int mpa;                        /* 0, or the iw_mpa_kind to parse first */
    uint8_t sizes[32];
    size_t nsizes;
};

struct run {
    struct iw_mpa_parser mpa;
    bool in_mpa;
    struct iw_fpdu_rx rx;
    struct fz_log log;
    uint32_t pay_next;              /* next expected PAYLOAD offset */
    bool have_hdr;
    bool dead;
    unsigned flags;                 /* step flags: IW_FPDU_RX_WHOLE (and IW_FPDU_RX_END) or not */
    /* One-piece run only: the deframer's stream in memory, for the model. */
    const uint8_t *base;
    size_t base_len;
};

static void log_hdr(struct fz_log *l, const struct iw_fpdu_hdr *h)
{
    uint64_t v[] = { h->opcode, h->last, h->tagged, h->stag, h->to, h->inv_stag, h->qn, h->msn, h->mo,
                     h->rr.sink_stag, h->rr.sink_to, h->rr.size, h->rr.src_stag, h->rr.src_to,
                     h->term.layer, h->term.etype, h->term.ecode, h->term.hdrct, h->term.ddp_seg_len,
                     h->term.ddp_hdr_len, h->term.truncated, h->ulpdu_len, h->ddp_ctrl, h->rdmap_ctrl,
                     h->hdr_len, h->payload_len };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        fz_log_u64(l, v[i]);
    fz_log_put(l, h->term.ctrl, sizeof h->term.ctrl);
    fz_log_put(l, h->term.ddp_hdr, sizeof h->term.ddp_hdr);
    fz_log_put(l, h->term.rdmap_hdr, sizeof h->term.rdmap_hdr);
}

static void term_equal(const struct iw_fpdu_term *a, const struct iw_fpdu_term *b)
{
    FZ_CHECK(a->layer == b->layer && a->etype == b->etype && a->ecode == b->ecode && a->hdrct == b->hdrct,
             "Terminate control word differs: %x/%x/%x/%x vs %x/%x/%x/%x", a->layer, a->etype, a->ecode,
             a->hdrct, b->layer, b->etype, b->ecode, b->hdrct);
    if (a->hdrct & IW_TERM_HDRCT_D)
        FZ_CHECK(a->ddp_seg_len == b->ddp_seg_len && a->ddp_hdr_len == b->ddp_hdr_len &&
                 memcmp(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len) == 0, "Terminate DDP attachment differs");
    if (a->hdrct & IW_TERM_HDRCT_R)
        FZ_CHECK(memcmp(a->rdmap_hdr, b->rdmap_hdr, IW_READ_REQ_LEN) == 0, "Terminate RDMAP attachment differs");
}

/* The Terminate the provider would send for this error must build, and read back the same. */
static void check_error_term(const struct iw_fpdu_rx_error *e)
{
    struct iw_fpdu_hdr h;
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_TERMINATE;
    h.last = true;
    h.msn = 1;
    h.term = e->term;
    uint8_t buf[IW_FPDU_MAX_BUFFERED + 8];
    int n = iw_fpdu_build(&h, NULL, 0, true, buf, sizeof buf);
    FZ_CHECK(n > 0, "the error's Terminate does not build: %d", n);

    struct iw_fpdu_rx_cfg cfg = { .crc = true, .strict_pad = true, .check_seq = true };
    static struct iw_fpdu_rx rx;
    iw_fpdu_rx_init(&rx, &cfg);
    struct iw_fpdu_event ev;
    size_t used;
    FZ_CHECK(iw_fpdu_rx_step(&rx, buf, (size_t)n, &used, &ev) == IW_FPDU_EV_HEADER,
             "the error's Terminate does not parse: %s", rx.error.err ? iw_fpdu_rx_reason_str(rx.error.reason) : "?");
    term_equal(&e->term, &ev.hdr->term);
    FZ_CHECK(iw_fpdu_rx_step(&rx, buf + used, (size_t)n - used, &used, &ev) == IW_FPDU_EV_END,
             "the error's Terminate has no END");
}

/* The per-FPDU receive rules (RFC 5044 §4 and §8, RFC 5041 §7, RFC 5040 §7, in the order
 * fpdu.h documents: DV, RV, opcode, T bit, lengths, then the decoded header), written apart from
 * fpdu.c. Given the FPDU's bytes from its start (avail of them), returns the reason the deframer
 * must stop with, or NONE. The stream rules of check_seq are not modelled. */
static bool m_tagged_op(unsigned op)
{
    return op == IW_OP_WRITE || op == IW_OP_READ_RESP;
}

static enum iw_fpdu_rx_reason model_fpdu(const uint8_t *b, size_t avail, const struct iw_fpdu_rx_cfg *cfg)
{
    if (avail < 4)
        return IW_FPDU_RXERR_NONE;
    unsigned ulpdu = iw_get_be16(b), ddp = b[2], rdmap = b[3], op = rdmap & 0x0F;
    bool tagged = ddp & 0x80, last = ddp & 0x40;
    bool rr = op == IW_OP_READ_REQ, term = op == IW_OP_TERMINATE;
    unsigned maxu = cfg->max_ulpdu == 0 || cfg->max_ulpdu > 65535 ? 65535 : cfg->max_ulpdu < 70 ? 70 : cfg->max_ulpdu;

    if ((ddp & 3) != 1)
        return IW_FPDU_RXERR_DDP_VERSION;
    if (rdmap >> 6 != 1)
        return IW_FPDU_RXERR_RDMAP_VERSION;
    if (op > IW_OP_TERMINATE)
        return IW_FPDU_RXERR_OPCODE;
    if (tagged != m_tagged_op(op))
        return IW_FPDU_RXERR_TAGGED_MISMATCH;
    if (ulpdu < (rr ? 46u : term ? 22u : tagged ? 14u : 18u))
        return IW_FPDU_RXERR_ULPDU_SHORT;
    if (ulpdu > maxu)
        return IW_FPDU_RXERR_ULPDU_LONG;
    if ((rr && ulpdu != 46) || (term && ulpdu > 70))
        return IW_FPDU_RXERR_MSG_TOO_LONG;
    size_t hlen = term ? 2 + ulpdu : rr ? 48 : tagged ? 16 : 20;
    if (avail < hlen)
        return IW_FPDU_RXERR_NONE;
    uint64_t payload = 2 + ulpdu - hlen;
    if (!tagged) {
        uint32_t qn = iw_get_be32(b + 8), mo = iw_get_be32(b + 16);
        if (qn != (rr ? 1u : term ? 2u : 0u))
            return IW_FPDU_RXERR_QN;
        if ((rr || term) && !last)
            return IW_FPDU_RXERR_MSG_TOO_LONG;
        if ((rr || term) && mo)
            return IW_FPDU_RXERR_MO;
        if (mo + payload > UINT64_C(0x100000000))
            return IW_FPDU_RXERR_MO_WRAP;
    } else if (payload && iw_get_be64(b + 8) + (payload - 1) < iw_get_be64(b + 8)) {
        return IW_FPDU_RXERR_TO_WRAP;
    }
    size_t pad = (4 - ((ulpdu + 2) & 3)) & 3, body = 2 + ulpdu;
    if (avail < body + pad)
        return IW_FPDU_RXERR_NONE;
    bool nonzero = false;
    for (size_t i = 0; i < pad; i++)
        nonzero |= b[body + i] != 0;
    if (cfg->strict_pad && nonzero)
        return IW_FPDU_RXERR_PAD;
    if (avail < body + pad + 4)
        return IW_FPDU_RXERR_NONE;
    if (cfg->crc && iw_crc32c(b, body + pad) != iw_get_le32(b + body + pad))
        return IW_FPDU_RXERR_CRC;
    return IW_FPDU_RXERR_NONE;
}

static bool seq_reason(enum iw_fpdu_rx_reason r)
{
    return r == IW_FPDU_RXERR_MSN || r == IW_FPDU_RXERR_MO || r == IW_FPDU_RXERR_INTERLEAVE ||
           r == IW_FPDU_RXERR_STAG_CHANGE || r == IW_FPDU_RXERR_TO_GAP;
}

/* A HEADER event, or the header half of a FRAME. */
static void on_header(struct run *r, const struct iw_fpdu_hdr *h)
{
    FZ_CHECK(h == &r->rx.hdr, "header pointer");
    FZ_CHECK(h->hdr_len + h->payload_len == (uint32_t)h->ulpdu_len + IW_MPA_LEN_SIZE,
             "hdr_len %u + payload %u != ULPDU %u + 2", h->hdr_len, h->payload_len, h->ulpdu_len);
    FZ_CHECK(h->ulpdu_len <= r->rx.cfg.max_ulpdu, "ULPDU above the maximum");
    FZ_CHECK(h->opcode <= IW_OP_RFC5040_MAX, "opcode %u passed", h->opcode);
    FZ_CHECK(!(h->opcode == IW_OP_READ_REQ || h->opcode == IW_OP_TERMINATE) || h->payload_len == 0,
             "payload on a single-segment message");
    if (r->base) {
        /* The model looks at the whole FPDU: a HEADER is fine if nothing before its
         * payload is wrong; the trailer is checked at END. */
        uint64_t at = r->rx.fpdu_start;
        enum iw_fpdu_rx_reason m = model_fpdu(r->base + at, h->hdr_len, &r->rx.cfg);
        FZ_CHECK(m == IW_FPDU_RXERR_NONE, "HEADER at %llu, the rules say: %s", (unsigned long long)at,
                 iw_fpdu_rx_reason_str(m));
    }
    fz_log_put(&r->log, "H", 1);
    log_hdr(&r->log, h);
    r->pay_next = 0;
    r->have_hdr = true;
}

/* A PAYLOAD event, or the payload half of a FRAME. */
static void on_payload(struct run *r, const struct iw_fpdu_event *ev)
{
    FZ_CHECK(r->have_hdr, "PAYLOAD before HEADER");
    FZ_CHECK(ev->off == r->pay_next && ev->off + ev->len <= ev->hdr->payload_len,
             "payload offset %u len %u, expected %u of %u", ev->off, ev->len, r->pay_next, ev->hdr->payload_len);
    r->pay_next += ev->len;
    /* Logged as bytes, not chunks: the chunking depends on the split. */
    fz_log_put(&r->log, ev->data, ev->len);
}

/* An END event, or the END half of an ended FRAME. */
static void on_end(struct run *r, const struct iw_fpdu_event *ev)
{
    FZ_CHECK(r->have_hdr && r->pay_next == ev->hdr->payload_len, "END after %u of %u payload bytes", r->pay_next,
             ev->hdr->payload_len);
    FZ_CHECK(!ev->crc_checked || ev->crc_calc == ev->crc_wire, "END with a bad CRC");
    FZ_CHECK(ev->crc_checked == r->rx.cfg.crc, "CRC checked without CRC, or not with it");
    if (r->base) {
        uint64_t at = r->rx.fpdu_start;
        enum iw_fpdu_rx_reason m = model_fpdu(r->base + at, (size_t)(r->rx.offset - at), &r->rx.cfg);
        FZ_CHECK(m == IW_FPDU_RXERR_NONE, "END of the FPDU at %llu, the rules say: %s", (unsigned long long)at,
                 iw_fpdu_rx_reason_str(m));
    }
    fz_log_put(&r->log, "E", 1);
    fz_log_u64(&r->log, ev->crc_checked);
    fz_log_u64(&r->log, ev->crc_wire);
    fz_log_u64(&r->log, ev->crc_calc);
    fz_log_u64(&r->log, ev->pad_nonzero);
    r->have_hdr = false;
}

/* Feeds one piece: first to the MPA parser while it runs, then step by step to the deframer. */
static void feed(struct run *r, const uint8_t *data, size_t len)
{
    size_t pos = 0;

    if (r->dead)
        return;
    if (r->in_mpa) {
        size_t used;
        enum iw_mpa_status st = iw_mpa_parser_feed(&r->mpa, data, len, &used);
        FZ_CHECK(used <= len, "MPA consumed too much");
        pos = used;
        if (st == IW_MPA_NEED_MORE)
            return;
        uint8_t b[2] = { 'M', (uint8_t)st };
        fz_log_put(&r->log, b, 2);
        fz_log_u64(&r->log, r->mpa.error);
        fz_log_u64(&r->log, r->mpa.got);
        if (st == IW_MPA_ERROR) {
            r->dead = true;
            return;
        }
        r->in_mpa = false;
        if (r->base) {
            r->base += pos;
            r->base_len -= pos;
        }
    }
    /* Every event consumes at least one byte, so this bound is never reached by a correct
     * deframer; reaching it means a step loops without progress. */
    size_t guard = 2 * (len - pos) + 4;
    for (;;) {
        FZ_CHECK(guard-- > 0, "deframer makes no progress at offset %llu", (unsigned long long)r->rx.offset);
        const uint8_t *p = data + pos;
        size_t avail = len - pos, used = (size_t)-1;
        struct iw_fpdu_event ev;
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step_ex(&r->rx, p, avail, r->flags, &used, &ev);
        FZ_CHECK(t == ev.type, "return %d, event %d", t, ev.type);
        FZ_CHECK(used <= avail, "consumed %zu of %zu", used, avail);
        pos += used;
        switch (t) {
        case IW_FPDU_EV_NEED_MORE:
            FZ_CHECK(used == avail, "NEED_MORE after %zu of %zu", used, avail);
            return;
        case IW_FPDU_EV_HEADER:
            on_header(r, ev.hdr);
            break;
        case IW_FPDU_EV_PAYLOAD:
            FZ_CHECK(ev.data == p && ev.len == used && ev.len > 0, "payload is not the consumed input");
            on_payload(r, &ev);
            break;
        case IW_FPDU_EV_FRAME: {
            /* HEADER + the whole PAYLOAD; the trailer is still in the input, or, ended, taken
             * too (+ END), which only a trailer that cannot fail may be. */
            size_t trailer = iw_mpa_pad_len(ev.hdr->ulpdu_len) + IW_MPA_CRC_SIZE;
            FZ_CHECK(r->flags & IW_FPDU_RX_WHOLE, "FRAME without IW_FPDU_RX_WHOLE");
            FZ_CHECK(ev.len > 0 && ev.len == ev.hdr->payload_len &&
                     ev.data + ev.len + (ev.ended ? trailer : 0) == p + used,
                     "frame payload%s is not the end of the consumed input", ev.ended ? " + trailer" : "");
            FZ_CHECK(ev.ended || avail - used >= trailer, "FRAME without its trailer in the input");
            FZ_CHECK(!ev.ended || ((r->flags & IW_FPDU_RX_END) && !r->rx.cfg.crc && !ev.pad_nonzero),
                     "FRAME ended without IW_FPDU_RX_END, with CRC on, or over a non-zero PAD");
            on_header(r, ev.hdr);
            on_payload(r, &ev);
            if (ev.ended)
                on_end(r, &ev);
            break;
        }
        case IW_FPDU_EV_END:
            on_end(r, &ev);
            break;
        case IW_FPDU_EV_ERROR: {
            const struct iw_fpdu_rx_error *e = ev.err;
            FZ_CHECK(e != NULL && e == iw_fpdu_rx_error(&r->rx), "error pointer");
            FZ_CHECK(e->err == -EBADMSG, "peer input gave err %d (%s)", e->err, iw_fpdu_rx_reason_str(e->reason));
            FZ_CHECK(e->reason != IW_FPDU_RXERR_NONE && e->reason < IW_FPDU_RXERR_COUNT, "reason %d", e->reason);
            FZ_CHECK(e->fpdu_offset <= r->rx.offset, "error offset beyond the stream");
            check_error_term(e);
            if (r->base && !(r->rx.cfg.check_seq && seq_reason(e->reason))) {
                enum iw_fpdu_rx_reason m = model_fpdu(r->base + e->fpdu_offset,
                                                      r->base_len - (size_t)e->fpdu_offset, &r->rx.cfg);
                FZ_CHECK(m == e->reason, "error at %llu: %s, the rules say: %s", (unsigned long long)e->fpdu_offset,
                         iw_fpdu_rx_reason_str(e->reason), iw_fpdu_rx_reason_str(m));
            }
            fz_log_put(&r->log, "X", 1);
            fz_log_u64(&r->log, (uint64_t)(int64_t)e->err);
            fz_log_u64(&r->log, e->reason);
            fz_log_u64(&r->log, e->fpdu_offset);
            fz_log_put(&r->log, e->term.ctrl, sizeof e->term.ctrl);
            fz_log_u64(&r->log, e->term.ddp_seg_len);
            fz_log_put(&r->log, e->term.ddp_hdr, e->term.ddp_hdr_len);
            fz_log_put(&r->log, e->term.rdmap_hdr, sizeof e->term.rdmap_hdr);
            /* The first error sticks and nothing more is consumed. */
            uint8_t more[4] = { 0 };
            struct iw_fpdu_event ev2;
            FZ_CHECK(iw_fpdu_rx_step(&r->rx, more, sizeof more, &used, &ev2) == IW_FPDU_EV_ERROR && used == 0,
                     "deframer moved after an error");
            FZ_CHECK(iw_fpdu_rx_set_error(&r->rx, 0, 0, 0) == -EALREADY, "second error recorded");
            r->dead = true;
            return;
        }
        default:
            FZ_CHECK(0, "event type %d", t);
        }
    }
}

static void run_init(struct run *r, const struct cfg *c)
{
    memset(r, 0, sizeof *r);
    iw_fpdu_rx_init(&r->rx, &c->rx);
    if (c->mpa) {
        iw_mpa_parser_init(&r->mpa, (enum iw_mpa_kind)c->mpa, 0);
        r->in_mpa = true;
    }
}

static void run_finish(struct run *r)
{
    fz_log_put(&r->log, "F", 1);
    fz_log_u64(&r->log, r->rx.state);
    fz_log_u64(&r->log, r->rx.offset);
    fz_log_u64(&r->log, r->rx.fpdus);
    fz_log_u64(&r->log, r->rx.hgot);
    fz_log_u64(&r->log, r->rx.pay_done);
    fz_log_u64(&r->log, r->rx.crc_state);
    fz_log_u64(&r->log, r->mpa.got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz_in in = { data, size };
    struct cfg c;
    memset(&c, 0, sizeof c);
    uint8_t flags = fz_u8(&in);
    c.rx.crc = flags & 1;
    c.rx.strict_pad = flags & 2;
    c.rx.check_seq = flags & 4;
    c.mpa = (flags >> 3) & 3;
    c.rx.max_ulpdu = fz_u16(&in);
    c.nsizes = fz_u8(&in) % 32;
    fz_bytes(&in, c.sizes, c.nsizes);
    const uint8_t *s = in.p;
    size_t n = in.n;

    static struct run one, split;
    run_init(&one, &c);
    run_init(&split, &c);
    one.flags = flags & 0x20 ? IW_FPDU_RX_WHOLE : 0;
    split.flags = flags & 0x40 ? IW_FPDU_RX_WHOLE : 0;
    if (flags & 0x80)
        one.flags |= one.flags ? IW_FPDU_RX_END : 0;
    else
        split.flags |= split.flags ? IW_FPDU_RX_END : 0;

    one.base = s;
    one.base_len = n;
    feed(&one, s, n);
    run_finish(&one);

    size_t pos = 0, k = 0, zeros = 0;
    while (pos < n) {
        size_t piece = c.nsizes ? c.sizes[k++ % c.nsizes] : 1;
        /* Empty pieces are legal input, but a cycle of only zeros would never end. */
        if (piece == 0 && ++zeros > c.nsizes)
            piece = 1;
        if (piece)
            zeros = 0;
        if (piece > n - pos)
            piece = n - pos;
        /* Each piece in its own exact allocation, so reading past it is an ASan report. */
        uint8_t *buf = malloc(piece ? piece : 1);
        FZ_CHECK(buf != NULL, "malloc");
        memcpy(buf, s + pos, piece);
        feed(&split, buf, piece);
        free(buf);
        pos += piece;
    }
    run_finish(&split);

    size_t d = fz_log_diff(&one.log, &split.log);
    FZ_CHECK(d == (size_t)-1, "split feeding differs from one piece at log byte %zu (of %zu / %zu)", d,
             one.log.n, split.log.n);
    /* The deframer is plain data: equal histories must leave equal states. */
    one.rx.frames = split.rx.frames = 0;        /* the one field the way of reporting changes */
    FZ_CHECK(memcmp(&one.rx, &split.rx, sizeof one.rx) == 0, "deframer states differ");
    fz_log_free(&one.log);
    fz_log_free(&split.log);
    return 0;
}
