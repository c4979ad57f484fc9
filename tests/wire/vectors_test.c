/* Byte-exact worked examples (examples.c): our encoders must produce exactly
 * the published bytes and CRCs, and our decoders must read every field back. Also the FPDU
 * sizing helpers against RFC 5044 §4 (MULPDU) and RFC 5041 (a message cut into segments). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "examples.h"
#include "fpdu.h"
#include "mpa.h"
#include "streamdec.h"
#include "testlib.h"

static void hexdiff(const char *what, const uint8_t *got, size_t glen, const uint8_t *want, size_t wlen)
{
    if (glen == wlen && memcmp(got, want, wlen) == 0)
        return;
    fprintf(stderr, "%s: got %zu bytes, want %zu\n", what, glen, wlen);
    for (size_t i = 0; i < (glen > wlen ? glen : wlen); i++)
        fprintf(stderr, "  %3zu: %s%02x %02x\n", i, (i < glen && i < wlen && got[i] == want[i]) ? " " : "*",
                i < glen ? got[i] : 0, i < wlen ? want[i] : 0);
    CHECK_MSG(false, "%s: bytes differ", what);
}

static void test_mpa_examples(void)
{
    for (size_t i = 0; i < wex_mpa_count; i++) {
        const struct wex_mpa *ex = &wex_mpa[i];
        uint8_t buf[64];

        CHECK_EQ(iw_mpa_frame_len(&ex->frame), ex->len);
        int n = iw_mpa_encode(&ex->frame, IW_MPA_PD_MAX_INTEROP, buf, sizeof buf);
        CHECK_MSG(n > 0, "%s: encode %d", ex->name, n);
        hexdiff(ex->name, buf, (size_t)n, ex->bytes, ex->len);

        struct iw_mpa_frame f;
        size_t flen = 0;
        enum iw_mpa_error err = IW_MPA_ERR_NONE;
        CHECK_EQ(iw_mpa_decode(ex->bytes, ex->len, ex->frame.kind, 0, &f, &flen, &err), IW_MPA_COMPLETE);
        CHECK_EQ(flen, ex->len);
        CHECK_EQ(f.kind, ex->frame.kind);
        CHECK_EQ(f.rev, ex->frame.rev);
        CHECK_EQ(f.crc, ex->frame.crc);
        CHECK_EQ(f.markers, false);
        CHECK_EQ(f.reject, false);
        CHECK_EQ(f.enhanced, true);
        CHECK_EQ(f.has_v2, true);
        CHECK_EQ(f.pd_len, 4);
        CHECK_EQ(f.ulp_pd_len, 0);
        CHECK_EQ(f.v2.ird, ex->frame.v2.ird);
        CHECK_EQ(f.v2.ord, ex->frame.v2.ord);
        CHECK_EQ(f.v2.p2p, ex->frame.v2.p2p);
        CHECK_EQ(f.v2.rtr, ex->frame.v2.rtr);
        /* The wrong key must be refused at byte 9. */
        CHECK_EQ(iw_mpa_decode(ex->bytes, ex->len, ex->frame.kind == IW_MPA_REQUEST ? IW_MPA_REPLY : IW_MPA_REQUEST,
                               0, &f, &flen, &err), IW_MPA_ERROR);
        CHECK_EQ(err, IW_MPA_ERR_KEY);
    }

    /* Variants the examples do not cover: Rev 1 (siw with SIW_MPA_VERSION=1, hostfwd-mpa.pcap),
     * a reject with private data, and v2 with ULP data behind the block. */
    static const uint8_t v1_rep[] = { 0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52, 0x65, 0x70, 0x20, 0x46,
                                      0x72, 0x61, 0x6d, 0x65, 0x00, 0x01, 0x00, 0x00 };
    uint8_t buf[600];
    struct iw_mpa_frame f = { .kind = IW_MPA_REPLY, .rev = 1 };
    CHECK_EQ(iw_mpa_encode(&f, 0, buf, sizeof buf), (int)sizeof v1_rep);
    hexdiff("MPA v1 reply", buf, sizeof v1_rep, v1_rep, sizeof v1_rep);

    static const uint8_t why[] = "no";
    struct iw_mpa_frame rej = { .kind = IW_MPA_REPLY, .rev = 2, .enhanced = true, .reject = true, .crc = true,
                                .v2 = { .ird = 1, .ord = 1 }, .ulp_pd = why, .ulp_pd_len = 2 };
    int n = iw_mpa_encode(&rej, 256, buf, sizeof buf);
    CHECK_EQ(n, 26);
    CHECK_EQ(buf[16], IW_MPA_FLAG_C | IW_MPA_FLAG_R | IW_MPA_FLAG_ENHANCED);
    CHECK_EQ(buf[18], 0);
    CHECK_EQ(buf[19], 6);
    CHECK(memcmp(buf + 20, "\x00\x01\x00\x01no", 6) == 0);
    struct iw_mpa_frame back;
    size_t flen;
    CHECK_EQ(iw_mpa_decode(buf, (size_t)n, IW_MPA_REPLY, 256, &back, &flen, NULL), IW_MPA_COMPLETE);
    CHECK(back.reject && back.crc && back.has_v2 && back.ulp_pd_len == 2 && memcmp(back.ulp_pd, "no", 2) == 0);

    /* The interop limit counts the v2 block: 252 ULP bytes fit in 256, 253 do not. */
    static uint8_t ulp[512];
    struct iw_mpa_frame big = { .kind = IW_MPA_REQUEST, .rev = 2, .enhanced = true, .ulp_pd = ulp, .ulp_pd_len = 252 };
    CHECK_EQ(iw_mpa_encode(&big, IW_MPA_PD_MAX_INTEROP, buf, sizeof buf), 20 + 256);
    big.ulp_pd_len = 253;
    CHECK_EQ(iw_mpa_encode(&big, IW_MPA_PD_MAX_INTEROP, buf, sizeof buf), -EMSGSIZE);
    big.ulp_pd_len = 508;
    CHECK_EQ(iw_mpa_encode(&big, 0, buf, sizeof buf), 20 + 512);
    big.ulp_pd_len = 509;
    CHECK_EQ(iw_mpa_encode(&big, 0, buf, sizeof buf), -EMSGSIZE);
}

/* Builds ex through iw_fpdu_build() and through put_hdr + payload + put_trailer; both must give
 * the published bytes, whose last four are the stated CRC stored LSB first. */
static void build_checks(const struct wex_fpdu *ex)
{
    uint8_t buf[128];
    struct iw_iov iov = { ex->payload, ex->payload_len };

    int n = iw_fpdu_build(&ex->hdr, &iov, ex->payload_len ? 1 : 0, ex->crc, buf, sizeof buf);
    CHECK_MSG(n > 0, "%s: build %d", ex->name, n);
    hexdiff(ex->name, buf, (size_t)n, ex->bytes, ex->len);
    CHECK_EQ(iw_get_le32(ex->bytes + ex->len - 4), ex->crc_value);
    if (ex->crc)
        CHECK_EQ(iw_crc32c(ex->bytes, ex->len - 4), ex->crc_value);

    /* Exactly the right storage is enough; one byte less is refused. */
    CHECK_EQ(iw_fpdu_build(&ex->hdr, &iov, ex->payload_len ? 1 : 0, ex->crc, buf, ex->len), (int)ex->len);
    CHECK_EQ(iw_fpdu_build(&ex->hdr, &iov, ex->payload_len ? 1 : 0, ex->crc, buf, ex->len - 1), -ENOSPC);

    /* The zero-copy path: header, payload elsewhere, trailer from a running CRC. */
    uint8_t hdr[IW_FPDU_MAX_BUFFERED], trl[8];
    int hl = iw_fpdu_put_hdr(&ex->hdr, ex->payload_len, hdr, sizeof hdr);
    CHECK_EQ(hl, iw_fpdu_hdr_len(&ex->hdr));
    uint32_t st = iw_crc32c_update(iw_crc32c_init(), hdr, (size_t)hl);
    if (ex->payload_len)
        st = iw_crc32c_update(st, ex->payload, ex->payload_len);
    int tl = iw_fpdu_put_trailer((uint32_t)(hl - 2 + (int)ex->payload_len), ex->crc, st, trl, sizeof trl);
    CHECK_EQ((size_t)hl + ex->payload_len + (size_t)tl, ex->len);
    CHECK(memcmp(hdr, ex->bytes, (size_t)hl) == 0);
    CHECK(memcmp(trl, ex->bytes + ex->len - (size_t)tl, (size_t)tl) == 0);

    /* Payload gathered from several pieces gives the same bytes. */
    if (ex->payload_len >= 3) {
        const uint8_t *p = ex->payload;
        struct iw_iov parts[3] = { { p, 1 }, { p + 1, 0 }, { p + 1, ex->payload_len - 1 } };
        CHECK_EQ(iw_fpdu_build(&ex->hdr, parts, 3, ex->crc, buf, sizeof buf), (int)ex->len);
        CHECK(memcmp(buf, ex->bytes, ex->len) == 0);
    }
}

static void decode_checks(const struct wex_fpdu *ex)
{
    struct iw_fpdu_rx_cfg cfg = { .crc = ex->crc, .strict_pad = true };
    struct wsd_log log;

    wsd_log_init(&log);
    wsd_decode_all(0, 0, &cfg, ex->bytes, ex->len, &log);
    CHECK_MSG(!log.error, "%s: %s", ex->name, iw_fpdu_rx_reason_str(log.err.reason));
    CHECK_EQ(log.n, 1);
    const struct wsd_fpdu *f = &log.fpdus[0];
    const struct iw_fpdu_hdr *h = &f->hdr, *w = &ex->hdr;
    CHECK_EQ(h->opcode, w->opcode);
    CHECK_EQ(h->last, w->last);
    CHECK_EQ(h->ulpdu_len, iw_get_be16(ex->bytes));
    CHECK_EQ(h->payload_len, ex->payload_len);
    CHECK_EQ(h->hdr_len, iw_fpdu_hdr_len(w));
    if (h->tagged) {
        CHECK_EQ(h->stag, w->stag);
        CHECK_EQ(h->to, w->to);
    } else {
        CHECK_EQ(h->msn, w->msn);
        CHECK_EQ(h->mo, w->mo);
        CHECK_EQ(h->inv_stag, 0);
        CHECK_EQ(h->qn, h->opcode == IW_OP_READ_REQ ? 1 : h->opcode == IW_OP_TERMINATE ? 2 : 0);
    }
    CHECK_EQ(h->rr.sink_stag, w->rr.sink_stag);
    CHECK_EQ(h->rr.sink_to, w->rr.sink_to);
    CHECK_EQ(h->rr.size, w->rr.size);
    CHECK_EQ(h->rr.src_stag, w->rr.src_stag);
    CHECK_EQ(h->rr.src_to, w->rr.src_to);
    if (h->opcode == IW_OP_TERMINATE) {
        CHECK(memcmp(h->term.ctrl, ex->bytes + IW_OFF_TERM_CTRL, 4) == 0);
        CHECK_EQ(h->term.layer, w->term.layer);
        CHECK_EQ(h->term.etype, w->term.etype);
        CHECK_EQ(h->term.ecode, w->term.ecode);
        CHECK_EQ(h->term.hdrct, w->term.hdrct);
        CHECK_EQ(h->term.ddp_seg_len, w->term.ddp_seg_len);
        CHECK_EQ(h->term.ddp_hdr_len, w->term.ddp_hdr_len);
        CHECK(memcmp(h->term.ddp_hdr, w->term.ddp_hdr, w->term.ddp_hdr_len) == 0);
        CHECK(!h->term.truncated);
    }
    CHECK_EQ(f->payload_crc, iw_crc32c(ex->payload, ex->payload_len));
    CHECK_EQ(f->crc_checked, ex->crc);
    CHECK_EQ(f->crc_wire, ex->crc_value);
    if (ex->crc)
        CHECK_EQ(f->crc_calc, ex->crc_value);
    CHECK(!f->pad_nonzero);
    CHECK_EQ(log.end_state, IW_FPDU_RX_HDR_START);
    CHECK_EQ(log.end_hgot, 0);
    CHECK_EQ(log.consumed, ex->len);

    /* The RTR examples are recognised as such; nothing else is. */
    unsigned rtr = iw_fpdu_rtr_kind(h);
    if (strstr(ex->name, "RTR"))
        CHECK_EQ(rtr, h->opcode == IW_OP_WRITE ? IW_MPA_RTR_WRITE : IW_MPA_RTR_READ);
    else
        CHECK_EQ(rtr, 0);

    /* Rebuilding from what we decoded gives the bytes back. */
    struct iw_iov iov = { ex->payload, ex->payload_len };
    uint8_t buf[128];
    int n = iw_fpdu_build(h, &iov, ex->payload_len ? 1 : 0, ex->crc, buf, sizeof buf);
    CHECK_EQ(n, (int)ex->len);
    CHECK(memcmp(buf, ex->bytes, ex->len) == 0);
    wsd_log_free(&log);
}

static void test_fpdu_examples(void)
{
    for (size_t i = 0; i < wex_fpdu_count; i++) {
        build_checks(&wex_fpdu[i]);
        decode_checks(&wex_fpdu[i]);
    }
}

/* siw's Terminates decode under the RFC layout as tshark shows them, and under siw's
 * layout as what siw meant. Their CRCs are valid. */
static void test_siw_terms(void)
{
    struct iw_fpdu_rx_cfg cfg = { .crc = true };
    struct wsd_log log;
    struct iw_term_ctrl rfc, siw;

    wsd_log_init(&log);
    wsd_decode_all(0, 0, &cfg, wex_siw_term_crc, sizeof wex_siw_term_crc, &log);
    CHECK(!log.error && log.n == 1);
    iw_fpdu_term_ctrl_rfc(log.fpdus[0].hdr.term.ctrl, &rfc);
    iw_fpdu_term_ctrl_siw(log.fpdus[0].hdr.term.ctrl, &siw);
    /* tshark: "Layer RDMA, Remote Operation Error, (code) 0x02, M/D/R not set" */
    CHECK(rfc.layer == IW_TERM_LAYER_RDMAP && rfc.etype == IW_TERM_ETYPE_RDMAP_REMOTE_OP && rfc.ecode == 2 &&
          rfc.hdrct == 0);
    /* meant: LLP, MPA, CRC error */
    CHECK(siw.layer == IW_TERM_LAYER_LLP && siw.etype == IW_TERM_ETYPE_LLP_MPA && siw.ecode == IW_TERM_LLP_CRC &&
          siw.hdrct == 0);
    CHECK_EQ(log.fpdus[0].hdr.term.layer, rfc.layer);
    wsd_log_free(&log);

    wsd_log_init(&log);
    wsd_decode_all(0, 0, &cfg, wex_siw_term_nobuf, sizeof wex_siw_term_nobuf, &log);
    CHECK(!log.error && log.n == 1);
    iw_fpdu_term_ctrl_rfc(log.fpdus[0].hdr.term.ctrl, &rfc);
    iw_fpdu_term_ctrl_siw(log.fpdus[0].hdr.term.ctrl, &siw);
    /* tshark: "Layer LLP, EType Unknown (0x1), Error Code 0x02, M/D/R not set" */
    CHECK(rfc.layer == IW_TERM_LAYER_LLP && rfc.etype == 1 && rfc.ecode == 2 && rfc.hdrct == 0);
    /* meant: DDP, untagged, no buffer, M+D */
    CHECK(siw.layer == IW_TERM_LAYER_DDP && siw.etype == IW_TERM_ETYPE_DDP_UNTAGGED &&
          siw.ecode == IW_TERM_DDP_U_MSN_NOBUF && siw.hdrct == (IW_TERM_HDRCT_M | IW_TERM_HDRCT_D));
    /* Read with siw's bits the attachment is there: payload length 16, then Send QN 0 MSN 5. */
    const uint8_t *att = wex_siw_term_nobuf + IW_OFF_TERM_CTRL + 4;
    CHECK_EQ(iw_get_be16(att), 16);
    CHECK_EQ(att[2], 0x41);
    CHECK_EQ(iw_get_be32(att + 2 + 10), 5);
    wsd_log_free(&log);
}

static void test_sizing(void)
{
    /* RFC 5044 §4: MSS 1448 -> ULPDU 1442, payload 1424 per Send segment, 1428 per Write segment. */
    CHECK_EQ(iw_fpdu_mulpdu(1448, false), 1442);
    CHECK_EQ(iw_fpdu_max_payload(IW_OP_SEND, 1442), 1424);
    CHECK_EQ(iw_fpdu_max_payload(IW_OP_SEND_SE_INV, 1442), 1424);
    CHECK_EQ(iw_fpdu_max_payload(IW_OP_WRITE, 1442), 1428);
    CHECK_EQ(iw_fpdu_max_payload(IW_OP_READ_RESP, 1442), 1428);
    CHECK_EQ(iw_fpdu_max_payload(IW_OP_READ_REQ, 1442), 0);
    CHECK_EQ(iw_fpdu_max_payload(IW_OP_TERMINATE, 1442), 0);
    CHECK_EQ(iw_fpdu_max_payload(IW_OP_ATOMIC_REQ, 1442), 0);
    CHECK_EQ(iw_fpdu_max_payload(IW_OP_WRITE, 14), 0);
    CHECK_EQ(iw_fpdu_mulpdu(1460, false), 1454);
    CHECK_EQ(iw_fpdu_mulpdu(1460, true), 1460 - (6 + 4 * 3));
    CHECK_EQ(iw_fpdu_mulpdu(6, false), 0);
    CHECK_EQ(iw_fpdu_mulpdu(100000, false), 65535);
    /* For every EMSS the largest FPDU fits, and one more ULPDU byte would not. */
    for (uint32_t emss = 24; emss <= 9100; emss++) {
        uint32_t m = iw_fpdu_mulpdu(emss, false);
        CHECK_MSG(iw_mpa_fpdu_len(m) <= emss, "emss %u: FPDU %u", emss, iw_mpa_fpdu_len(m));
        CHECK_MSG(iw_mpa_fpdu_len(m + 1) > emss, "emss %u: MULPDU %u not maximal", emss, m);
        for (uint32_t u = m > 8 ? m - 8 : 0; u <= m; u++)
            CHECK(iw_mpa_fpdu_len(u) <= emss);
    }

    /* RFC 5041: a 3000-byte Send at MSS 1448 is cut (MO, payload, L) = (0,1424,0) (1424,1424,0)
     * (2848,152,1), and each FPDU is at most one MSS. */
    static uint8_t msg[3000];
    uint8_t buf[1500];
    uint32_t per = iw_fpdu_max_payload(IW_OP_SEND, iw_fpdu_mulpdu(1448, false));
    const uint32_t want[3][3] = { { 0, 1424, 0 }, { 1424, 1424, 0 }, { 2848, 152, 1 } };
    uint32_t mo = 0;
    for (int seg = 0; mo < sizeof msg; seg++) {
        uint32_t n = sizeof msg - mo < per ? (uint32_t)sizeof msg - mo : per;
        struct iw_fpdu_hdr h = { .opcode = IW_OP_SEND, .msn = 1, .mo = mo, .last = mo + n == sizeof msg };
        struct iw_iov iov = { msg + mo, n };
        int len = iw_fpdu_build(&h, &iov, 1, true, buf, sizeof buf);
        CHECK(seg < 3);
        CHECK(len > 0 && len <= 1448);
        CHECK_EQ(iw_get_be32(buf + IW_OFF_MO), want[seg][0]);
        CHECK_EQ(n, want[seg][1]);
        CHECK_EQ((buf[IW_OFF_DDP_CTRL] & IW_DDP_CTRL_L) != 0, want[seg][2]);
        mo += n;
    }

    /* Encoder refusals. */
    struct iw_fpdu_hdr rr = { .opcode = IW_OP_READ_REQ };
    CHECK_EQ(iw_fpdu_put_hdr(&rr, 1, buf, sizeof buf), -EINVAL);
    struct iw_fpdu_hdr bad = { .opcode = IW_OP_ATOMIC_REQ };
    CHECK_EQ(iw_fpdu_put_hdr(&bad, 0, buf, sizeof buf), -EINVAL);
    struct iw_fpdu_hdr big = { .opcode = IW_OP_SEND };
    CHECK_EQ(iw_fpdu_put_hdr(&big, 65535 - 18, buf, sizeof buf), 20);
    CHECK_EQ(iw_fpdu_put_hdr(&big, 65535 - 17, buf, sizeof buf), -EMSGSIZE);
    struct iw_fpdu_hdr term = { .opcode = IW_OP_TERMINATE, .term = { .hdrct = IW_TERM_HDRCT_D, .ddp_hdr_len = 18,
                                                                     .ddp_hdr = { 0xc1 } } };
    CHECK_EQ(iw_fpdu_hdr_len(&term), -EINVAL);      /* tagged header, untagged length */
    term.term.ddp_hdr_len = 14;
    CHECK_EQ(iw_fpdu_hdr_len(&term), 20 + 4 + 2 + 14);
}

/* The small Send's header writer (iw_fpdu_put_send_hdr, tx.c's lean path) writes what the
 * general one writes for a whole Send in one segment: every Send opcode, payloads from 0 to
 * 300 bytes, MSNs and invalidated STags with every byte set (a field at the wrong offset, in the
 * wrong order, or an STag left in a plain Send, shows). */
static void test_send_hdr(void)
{
    static const uint8_t ops[] = { IW_OP_SEND, IW_OP_SEND_SE, IW_OP_SEND_INV, IW_OP_SEND_SE_INV };
    static const uint32_t vals[] = { 0, 1, 0x01020304u, 0xfedcba98u, 0xffffffffu };

    for (size_t o = 0; o < sizeof ops; o++)
        for (size_t len = 0; len <= 300; len += len < 20 ? 1 : 37)
            for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
                struct iw_fpdu_hdr h = { .opcode = ops[o], .last = true, .msn = vals[v],
                                         .inv_stag = ~vals[v] };
                uint8_t want[IW_FPDU_MAX_BUFFERED], got[IW_FPDU_MAX_BUFFERED];
                memset(got, 0xa5, sizeof got);
                int wl = iw_fpdu_put_hdr(&h, len, want, sizeof want);
                int gl = iw_fpdu_put_send_hdr(ops[o], h.inv_stag, h.msn, len, got);
                CHECK_EQ(gl, IW_FPDU_UNTAGGED_HDR_LEN);
                hexdiff("small Send header", got, (size_t)gl, want, (size_t)wl);
                CHECK_EQ(got[gl], 0xa5);                 /* nothing written past it */
            }
}

int main(void)
{
    test_mpa_examples();
    test_fpdu_examples();
    test_siw_terms();
    test_sizing();
    test_send_hdr();
    printf("vectors: OK\n");
    return 0;
}
