/* Writes the seed corpora of the fuzz targets: the worked examples of tests/wire/examples.c and
 * the TCP payloads of the siw capture fixtures in tests/wire/captures (via tests/wire's pcap
 * reader), each prefixed with the parameter bytes its target reads first. The output is
 * committed under tests/fuzz/corpus; rerun it with
 *   seedgen OUTDIR            (OUTDIR gets mpa/, fpdu/, term/, tx/, rx/)
 * when the examples, the captures or a target's input layout change. File names are the
 * CRC-32C of the content, so a rerun rewrites identical seeds in place. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capdir.h"
#include "crc32c.h"
#include "examples.h"
#include "fpdu.h"
#include "mpa.h"
#include "pcap.h"

#define SEED_MAX 4000           /* below libFuzzer's default -max_len of 4096 */

static const char *outdir;
static size_t written;

static void put_seed(const char *target, const char *what, const uint8_t *pre, size_t npre,
                     const uint8_t *body, size_t nbody)
{
    static uint8_t buf[SEED_MAX + 256];
    if (nbody > SEED_MAX)
        nbody = SEED_MAX;
    if (npre)
        memcpy(buf, pre, npre);
    if (nbody)
        memcpy(buf + npre, body, nbody);
    size_t n = npre + nbody;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", outdir, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%08x", outdir, target, iw_crc32c(buf, n));
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        exit(1);
    }
    printf("%-5s %s  %s (%zu bytes)\n", target, path + strlen(outdir) + strlen(target) + 2, what, n);
    written++;
}

/* fuzz_mpa: kind, max_pd (0 = 512), split seed. */
static void mpa_seed(const char *what, int kind, const uint8_t *s, size_t n, uint8_t seed)
{
    uint8_t pre[4] = { (uint8_t)(kind == IW_MPA_REQUEST ? 0 : kind == IW_MPA_REPLY ? 1 : 2), 0, 0, seed };
    put_seed("mpa", what, pre, sizeof pre, s, n);
}

/* fuzz_fpdu: flags, max_ulpdu, piece sizes. Each stream three times: both runs stepping as the
 * wire tools do; the one-piece run taking whole frames as FRAME events (flags bit 5) against
 * the split run's HEADER + PAYLOAD; and the one-piece run also taking their trailers (bit 7,
 * IW_FPDU_RX_END) as rx.c does. */
static void fpdu_seed(const char *what, bool crc, bool check_seq, int mpa, const uint8_t *s, size_t n)
{
    uint8_t pre[] = { (uint8_t)((crc ? 1 : 0) | (check_seq ? 4 : 0) | (mpa << 3)), 0, 0, 3, 1, 7, 200 };
    put_seed("fpdu", what, pre, sizeof pre, s, n);
    pre[0] |= 0x20;
    put_seed("fpdu", what, pre, sizeof pre, s, n);
    pre[0] |= 0x80;
    put_seed("fpdu", what, pre, sizeof pre, s, n);
}

static void term_seed(const char *what, const uint8_t *fpdu, size_t n)
{
    /* The body is the ULPDU after the untagged DDP header. */
    size_t ulpdu = iw_get_be16(fpdu);
    if (ulpdu < IW_DDP_UNTAGGED_HDR_LEN || ulpdu + 2 > n)
        return;
    put_seed("term", what, NULL, 0, fpdu + IW_OFF_TERM_CTRL, ulpdu - IW_DDP_UNTAGGED_HDR_LEN);
}

static void be(uint8_t **p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        *(*p)++ = (uint8_t)(v >> (8 * i));
}

/* fuzz_tx, FPDU branch: the parameters in the order fuzz_tx.c reads them. */
static void tx_fpdu_seed(const char *what, const struct iw_fpdu_hdr *h, const uint8_t *pay, size_t plen, bool crc)
{
    uint8_t pre[256], *p = pre;
    const struct iw_fpdu_term *t = &h->term;
    be(&p, 0, 1);                                   /* selector: FPDU */
    be(&p, h->opcode, 1);
    be(&p, (h->last ? 1 : 0) | (crc ? 2 : 0) | (1 << 4), 1);   /* exact capacity, two iovs */
    be(&p, h->stag, 4);
    be(&p, h->to, 8);
    be(&p, h->inv_stag, 4);
    be(&p, h->msn, 4);
    be(&p, h->mo, 4);
    be(&p, h->rr.sink_stag, 4);
    be(&p, h->rr.sink_to, 8);
    be(&p, h->rr.size, 4);
    be(&p, h->rr.src_stag, 4);
    be(&p, h->rr.src_to, 8);
    be(&p, (uint64_t)(t->layer << 4 | t->etype), 1);
    be(&p, t->ecode, 1);
    be(&p, t->hdrct, 1);
    be(&p, t->ddp_seg_len, 2);
    be(&p, t->ddp_hdr_len, 1);
    memcpy(p, t->ddp_hdr, sizeof t->ddp_hdr);
    p += sizeof t->ddp_hdr;
    memcpy(p, t->rdmap_hdr, sizeof t->rdmap_hdr);
    p += sizeof t->rdmap_hdr;
    be(&p, plen, 4);
    be(&p, 0, 2);                                   /* capacity selector */
    be(&p, 1460, 2);                                /* EMSS */
    be(&p, plen / 2, 2);                            /* cut points */
    be(&p, 0, 2);
    be(&p, 0, 2);
    put_seed("tx", what, pre, (size_t)(p - pre), pay, plen);
}

static void tx_mpa_seed(const char *what, const struct iw_mpa_frame *f)
{
    uint8_t pre[32], *p = pre;
    be(&p, 1, 1);                                   /* selector: MPA */
    be(&p, f->kind, 1);
    be(&p, f->rev, 1);
    be(&p, (f->markers ? 1 : 0) | (f->crc ? 2 : 0) | (f->reject ? 4 : 0) | (f->enhanced ? 8 : 0) |
           (f->v2.p2p ? 0x40 : 0), 1);
    be(&p, f->v2.ird, 2);
    be(&p, f->v2.ord, 2);
    be(&p, f->v2.rtr, 1);
    be(&p, f->ulp_pd_len, 2);
    be(&p, 0, 2);                                   /* max_pd: RFC limit */
    be(&p, 0, 2);                                   /* exact capacity */
    put_seed("tx", what, pre, (size_t)(p - pre), f->ulp_pd, f->ulp_pd_len);
}

/* ---- fuzz_rx: the header fields and records in the order fuzz_rx.c reads them ---- */

struct rx_seed {
    uint8_t b[SEED_MAX];
    size_t n;
};

static void rxs_put(struct rx_seed *r, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        if (r->n < sizeof r->b)
            r->b[r->n++] = (uint8_t)(v >> (8 * i));
}

/* flags, IRD 8, the piece sizes, regions of 16 KiB, nrecv whole-region receives, a Read of
 * read_len bytes (when flags ask for one; its Responses must add up to it). */
static void rxs_begin_read(struct rx_seed *r, uint8_t flags, const uint8_t *sizes, size_t nsizes, unsigned nrecv,
                           uint16_t read_len)
{
    r->n = 0;
    rxs_put(r, flags, 1);
    rxs_put(r, 7, 1);
    rxs_put(r, nsizes, 1);
    for (size_t i = 0; i < nsizes; i++)
        rxs_put(r, sizes[i], 1);
    for (int i = 0; i < 4; i++)
        rxs_put(r, 16383, 2);
    rxs_put(r, nrecv, 1);
    for (unsigned i = 0; i < nrecv * ((flags & 0x20) ? 2u : 1u); i++) {
        rxs_put(r, (flags & 0x20) ? 100u * i : 0, 2);
        rxs_put(r, (flags & 0x20) ? 100 : 16384, 2);
    }
    rxs_put(r, 0, 2);
    rxs_put(r, read_len - 1u, 2);
}

static void rxs_begin(struct rx_seed *r, uint8_t flags, const uint8_t *sizes, size_t nsizes, unsigned nrecv)
{
    rxs_begin_read(r, flags, sizes, nsizes, nrecv, 4096);
}

/* An FPDU record with automatic sequencing and a pattern payload. sel: fuzz_rx's STag selector
 * (region 0-3, or 7 for none) with an offset into that region. */
static void rxs_fpdu(struct rx_seed *r, uint8_t opcode, bool last, uint8_t sel, uint16_t off, uint32_t plen)
{
    rxs_put(r, 0x80u | 0x20u | (last ? 0x10u : 0) | (opcode & 15u), 1);
    rxs_put(r, sel, 1);
    rxs_put(r, off, 2);
    rxs_put(r, 0x8000u | (plen > 0x3fff ? 0x3fff : plen), 2);
    if (opcode == IW_OP_SEND_INV || opcode == IW_OP_SEND_SE_INV)
        rxs_put(r, 0, 1);                           /* invalidate region 0's token */
}

static void rxs_read_req_sel(struct rx_seed *r, uint32_t sink_stag, uint64_t sink_to, uint32_t size, uint8_t src_sel,
                             uint16_t src_off)
{
    rxs_put(r, 0x80u | 0x20u | 0x10u | IW_OP_READ_REQ, 1);
    rxs_put(r, 7, 1);
    rxs_put(r, 0, 2);
    rxs_put(r, 0, 2);
    rxs_put(r, sink_stag, 4);
    rxs_put(r, sink_to, 8);
    rxs_put(r, size > 16384 ? 4096 : size, 2);
    rxs_put(r, src_sel, 1);
    rxs_put(r, src_off, 2);
}

static void rxs_read_req(struct rx_seed *r, uint32_t sink_stag, uint64_t sink_to, uint32_t size, uint16_t src_off)
{
    rxs_read_req_sel(r, sink_stag, sink_to, size, 1, src_off);   /* source: region 1 */
}

static void rxs_term(struct rx_seed *r, const struct iw_fpdu_term *t)
{
    rxs_put(r, 0x80u | 0x20u | 0x10u | IW_OP_TERMINATE, 1);
    rxs_put(r, 7, 1);
    rxs_put(r, 0, 2);
    rxs_put(r, 0, 2);
    rxs_put(r, t->layer, 1);
    rxs_put(r, t->etype, 1);
    rxs_put(r, t->ecode, 1);
}

static void rxs_raw(struct rx_seed *r, const uint8_t *p, size_t n)
{
    while (n) {
        size_t k = n > 128 ? 128 : n;
        rxs_put(r, k - 1, 1);
        for (size_t i = 0; i < k; i++)
            rxs_put(r, p[i], 1);
        p += k;
        n -= k;
    }
}

static void rx_put(const char *what, const struct rx_seed *r)
{
    put_seed("rx", what, NULL, 0, r->b, r->n);
}

/* One connection's stream re-addressed to fuzz_rx's regions: each FPDU of the capture becomes a
 * record with its opcode, L bit and length, its STags and offsets pointing into our regions. */
static void rx_capture_seed(const char *what, const uint8_t *s, size_t n, const struct iw_fpdu_rx_cfg *cfg)
{
    static const uint8_t sizes[] = { 199, 6, 0, 254 };
    static struct iw_fpdu_rx rx;
    static struct rx_seed r;
    struct iw_fpdu_rx_cfg c = *cfg;
    struct iw_fpdu_event ev;
    size_t pos = 0, used, k = 0;

    c.check_seq = false;
    /* Our Read is as long as the stream's first Read Response message, so it completes. */
    uint32_t rresp = 0;
    iw_fpdu_rx_init(&rx, &c);
    while (pos < n) {
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&rx, s + pos, n - pos, &used, &ev);
        pos += used;
        if (t == IW_FPDU_EV_ERROR || t == IW_FPDU_EV_NEED_MORE)
            break;
        if (t == IW_FPDU_EV_HEADER && ev.hdr->opcode == IW_OP_READ_RESP) {
            rresp += ev.hdr->payload_len;
            if (ev.hdr->last)
                break;
        }
    }
    pos = 0;
    iw_fpdu_rx_init(&rx, &c);
    rxs_begin_read(&r, (uint8_t)((cfg->crc ? 1 : 0) | (rresp && rresp <= 16384 ? 4 : 0)), sizes, sizeof sizes, 8,
                   (uint16_t)(rresp && rresp <= 16384 ? rresp : 1));
    while (pos < n && r.n < SEED_MAX - 64) {
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&rx, s + pos, n - pos, &used, &ev);
        pos += used;
        if (t == IW_FPDU_EV_ERROR || t == IW_FPDU_EV_NEED_MORE)
            break;
        if (t != IW_FPDU_EV_HEADER)
            continue;
        const struct iw_fpdu_hdr *h = ev.hdr;
        k++;
        switch (h->opcode) {
        case IW_OP_WRITE:
            rxs_fpdu(&r, h->opcode, h->last, 0, (uint16_t)(h->to & 0x1fff), h->payload_len);
            break;
        case IW_OP_READ_RESP:
            rxs_fpdu(&r, h->opcode, h->last, 3, 0, h->payload_len);
            break;
        case IW_OP_READ_REQ:
            rxs_read_req(&r, h->rr.sink_stag, h->rr.sink_to, h->rr.size, (uint16_t)(h->rr.src_to & 0x1fff));
            break;
        case IW_OP_TERMINATE:
            rxs_term(&r, &h->term);
            break;
        default:
            rxs_fpdu(&r, h->opcode, h->last, 7, 0, h->payload_len);
            break;
        }
    }
    if (k)
        rx_put(what, &r);
}

static void rx_example_seeds(void)
{
    static struct rx_seed r;
    static const uint8_t one[] = { 0 }, mixed[] = { 40, 0, 3, 254 };
    struct iw_fpdu_term t = { .layer = IW_TERM_LAYER_RDMAP, .etype = IW_TERM_ETYPE_RDMAP_REMOTE_PROT,
                              .ecode = IW_TERM_RDMAP_ACCESS };
    for (int v = 0; v < 4; v++) {
        uint8_t flags = (uint8_t)((v & 1) | ((v & 2) ? 2 : 0) | 4 | 0x10);
        char what[128];
        /* Every operation the engine places or answers, one after another. */
        rxs_begin(&r, flags, v < 2 ? mixed : one, v < 2 ? sizeof mixed : 0, 4);
        rxs_fpdu(&r, IW_OP_SEND, true, 7, 0, 100);
        rxs_fpdu(&r, IW_OP_SEND, false, 7, 0, 1000);
        rxs_fpdu(&r, IW_OP_SEND, true, 7, 0, 500);
        rxs_fpdu(&r, IW_OP_SEND_SE, true, 7, 0, 20);
        rxs_fpdu(&r, IW_OP_WRITE, false, 0, 10, 1400);
        rxs_fpdu(&r, IW_OP_WRITE, true, 0, 1410, 600);
        rxs_read_req(&r, 0x1234, 0x10000, 300, 100);
        rxs_fpdu(&r, IW_OP_READ_RESP, false, 3, 0, 2048);
        rxs_fpdu(&r, IW_OP_READ_RESP, true, 3, 0, 2048);
        rxs_fpdu(&r, IW_OP_SEND_INV, true, 7, 0, 10);
        rxs_term(&r, &t);
        snprintf(what, sizeof what, "every operation (CRC %s, %s, %s pieces)", (v & 1) ? "on" : "off",
                 (v & 2) ? "SRQ" : "RQ", v < 2 ? "mixed" : "one-byte");
        rx_put(what, &r);
    }
    /* Accesses that end exactly at a region's last byte or start at its first (fuzz_rx's
     * selector bits 5-6: 2 counts back from the end), flush with either guard page. */
    for (int low = 0; low < 2; low++) {
        rxs_begin(&r, (uint8_t)(low ? 0x08 : 0), mixed, sizeof mixed, 1);
        rxs_fpdu(&r, IW_OP_WRITE, true, 0x40, 64, 64);
        rxs_fpdu(&r, IW_OP_WRITE, true, 0x00, 0, 64);
        rxs_read_req_sel(&r, 0x1234, 0x10000, 32, 0x41, 32);
        rxs_read_req_sel(&r, 0x1234, 0x10000, 32, 0x01, 0);
        rxs_fpdu(&r, IW_OP_SEND, true, 7, 0, 16384);
        rx_put(low ? "edges of the regions, low-aligned" : "edges of the regions, high-aligned", &r);
    }
    /* Receives of two SGEs each, a Send across both, buffers flush with the lower guard page. */
    rxs_begin(&r, 0x20 | 0x08, one, 0, 2);
    rxs_fpdu(&r, IW_OP_SEND, true, 7, 0, 150);
    rx_put("Send across two SGEs, low-aligned buffers", &r);
    /* The worked examples as raw bytes (their STags match nothing here). */
    for (size_t i = 0; i < wex_fpdu_count; i++) {
        const struct wex_fpdu *e = &wex_fpdu[i];
        rxs_begin(&r, (uint8_t)((e->crc ? 1 : 0) | 4), mixed, sizeof mixed, 2);
        rxs_raw(&r, e->bytes, e->len);
        rx_put(e->name, &r);
    }
}

/* The starts of a stream's FPDUs, with their opcodes, from a one-shot run. */
static size_t fpdu_starts(const uint8_t *s, size_t n, const struct iw_fpdu_rx_cfg *cfg, size_t *starts,
                          uint8_t *ops, size_t max)
{
    static struct iw_fpdu_rx rx;
    struct iw_fpdu_event ev;
    size_t pos = 0, k = 0, used;
    iw_fpdu_rx_init(&rx, cfg);
    while (pos < n && k < max) {
        size_t at = pos;
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&rx, s + pos, n - pos, &used, &ev);
        pos += used;
        if (t == IW_FPDU_EV_HEADER) {
            starts[k] = (size_t)(rx.fpdu_start);
            ops[k++] = ev.hdr->opcode;
            if (ev.hdr->opcode == IW_OP_TERMINATE)
                term_seed("capture Terminate", s + rx.fpdu_start, n - rx.fpdu_start);
        } else if (t == IW_FPDU_EV_ERROR || t == IW_FPDU_EV_NEED_MORE) {
            break;
        }
        (void)at;
    }
    return k;
}

static void captures(void)
{
    const char *dir = wcap_dir();
    char **names;
    size_t nn = wcap_list(dir, &names);
    if (nn == 0) {
        fprintf(stderr, "no siw capture fixtures in %s (tests/wire/captures/README.md)\n", dir);
        exit(1);
    }
    for (size_t i = 0; i < nn; i++) {
        char path[1024], err[256];
        struct wpcap_file pf;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (wpcap_read(path, &pf, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", path, err);
            exit(1);
        }
        for (size_t c = 0; c < pf.nconns; c++) {
            const struct wpcap_conn *cn = &pf.conns[c];
            struct iw_mpa_frame req, rep;
            struct iw_fpdu_rx_cfg cfg;
            if (!wcap_conn_setup(cn, &req, &rep, &cfg))
                continue;
            for (int d = 0; d < 2; d++) {
                const struct wpcap_stream *st = &cn->dir[d];
                int kind = d == 0 ? IW_MPA_REQUEST : IW_MPA_REPLY;
                char what[600];
                size_t mlen = IW_MPA_HDR_LEN + (d == 0 ? req.pd_len : rep.pd_len);
                snprintf(what, sizeof what, "%s conn %zu %s", names[i], c, d == 0 ? "client" : "server");
                /* The MPA frame with the first bytes behind it (siw's trailing-data check). */
                mpa_seed(what, kind, st->data, st->len < mlen + 24 ? st->len : mlen + 24, 0);
                mpa_seed(what, kind, st->data, st->len < mlen ? st->len : mlen, 5);
                fpdu_seed(what, cfg.crc, true, kind, st->data, st->len);
                if (st->len > mlen)
                    rx_capture_seed(what, st->data + mlen, st->len - mlen, &cfg);
                /* Windows at the first FPDU of each opcode further in, without stream checks
                 * (they start mid-stream) and without the MPA frame. */
                size_t starts[4096];
                uint8_t ops[4096];
                size_t k = fpdu_starts(st->data + mlen, st->len - mlen, &cfg, starts, ops, 4096);
                bool seen[16] = { 0 };
                for (size_t j = 0; j < k; j++) {
                    if (seen[ops[j] & 15] || starts[j] + mlen < SEED_MAX / 2)
                        continue;
                    seen[ops[j] & 15] = true;
                    char w2[700];
                    snprintf(w2, sizeof w2, "%s, from its first %s", what, iw_fpdu_opcode_name(ops[j]));
                    fpdu_seed(w2, cfg.crc, false, 0, st->data + mlen + starts[j], st->len - mlen - starts[j]);
                }
            }
        }
        wpcap_free(&pf);
    }
    wcap_list_free(names, nn);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    mkdir(outdir, 0755);

    for (size_t i = 0; i < wex_mpa_count; i++) {
        const struct wex_mpa *m = &wex_mpa[i];
        mpa_seed(m->name, m->frame.kind, m->bytes, m->len, 0);
        mpa_seed(m->name, IW_MPA_ANY, m->bytes, m->len, 3);
        tx_mpa_seed(m->name, &m->frame);
    }
    /* All examples back to back, as one CRC stream (their MSNs are not a sequence). */
    uint8_t all[4096];
    size_t alln = 0;
    for (size_t i = 0; i < wex_fpdu_count; i++) {
        const struct wex_fpdu *e = &wex_fpdu[i];
        fpdu_seed(e->name, e->crc, true, 0, e->bytes, e->len);
        /* The same bytes on a connection without CRC: the CRC field is then neither checked nor
         * zero, and a whole frame's trailer taken with it (IW_FPDU_RX_END) must leave the
         * deframer as the CRC step does (the fuzzer compares them whole). */
        if (e->crc && e->payload_len)
            fpdu_seed(e->name, false, true, 0, e->bytes, e->len);
        tx_fpdu_seed(e->name, &e->hdr, e->payload, e->payload_len, e->crc);
        if (e->hdr.opcode == IW_OP_TERMINATE)
            term_seed(e->name, e->bytes, e->len);
        if (e->crc && alln + e->len <= sizeof all) {
            memcpy(all + alln, e->bytes, e->len);
            alln += e->len;
        }
    }
    fpdu_seed("all CRC examples", true, false, 0, all, alln);
    fpdu_seed("siw Terminate, CRC", true, true, 0, wex_siw_term_crc, sizeof wex_siw_term_crc);
    fpdu_seed("siw Terminate, no buffer", true, true, 0, wex_siw_term_nobuf, sizeof wex_siw_term_nobuf);
    term_seed("siw Terminate, CRC", wex_siw_term_crc, sizeof wex_siw_term_crc);
    term_seed("siw Terminate, no buffer", wex_siw_term_nobuf, sizeof wex_siw_term_nobuf);

    /* A Terminate with every attachment (M, D and R), built as our provider would send it. */
    struct iw_fpdu_hdr h;
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_TERMINATE;
    h.msn = 1;
    h.term.layer = IW_TERM_LAYER_RDMAP;
    h.term.etype = IW_TERM_ETYPE_RDMAP_REMOTE_PROT;
    h.term.ecode = IW_TERM_RDMAP_ACCESS;
    h.term.hdrct = IW_TERM_HDRCT_M | IW_TERM_HDRCT_D | IW_TERM_HDRCT_R;
    h.term.ddp_seg_len = IW_READ_REQ_ULPDU_LEN;
    h.term.ddp_hdr_len = IW_DDP_UNTAGGED_HDR_LEN;
    for (size_t i = 0; i < wex_fpdu_count; i++)
        if (wex_fpdu[i].hdr.opcode == IW_OP_READ_REQ) {
            memcpy(h.term.ddp_hdr, wex_fpdu[i].bytes + IW_MPA_LEN_SIZE, IW_DDP_UNTAGGED_HDR_LEN);
            memcpy(h.term.rdmap_hdr, wex_fpdu[i].bytes + IW_OFF_READ_REQ, IW_READ_REQ_LEN);
            break;
        }
    uint8_t fp[128];
    int n = iw_fpdu_build(&h, NULL, 0, true, fp, sizeof fp);
    if (n > 0) {
        term_seed("Terminate with M, D and R", fp, (size_t)n);
        fpdu_seed("Terminate with M, D and R", true, true, 0, fp, (size_t)n);
        tx_fpdu_seed("Terminate with M, D and R", &h, NULL, 0, true);
    }
    rx_example_seeds();
    captures();
    printf("%zu seeds written\n", written);
    return 0;
}
