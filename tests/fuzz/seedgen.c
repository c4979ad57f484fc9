/* Writes the seed corpora of the fuzz targets: the worked examples of iwarp-wire.md §10 (via
 * tests/wire/examples.c) and the TCP payloads of the siw captures in
 * ../shared/interop/pcaps (via tests/wire's pcap reader), each prefixed with the parameter
 * bytes its target reads first. The output is committed under tests/fuzz/corpus; rerun it with
 *   seedgen OUTDIR            (OUTDIR gets mpa/, fpdu/, term/, tx/)
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

/* fuzz_fpdu: flags, max_ulpdu, piece sizes. */
static void fpdu_seed(const char *what, bool crc, bool check_seq, int mpa, const uint8_t *s, size_t n)
{
    uint8_t pre[] = { (uint8_t)((crc ? 1 : 0) | (check_seq ? 4 : 0) | (mpa << 3)), 0, 0, 3, 1, 7, 200 };
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
    if (!dir) {
        printf("no siw captures found: examples only\n");
        return;
    }
    char **names;
    size_t nn = wcap_list(dir, &names);
    for (size_t i = 0; i < nn; i++) {
        char path[1024], err[256];
        struct wpcap_file pf;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (wpcap_read(path, &pf, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", path, err);
            continue;
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
    captures();
    printf("%zu seeds written\n", written);
    return 0;
}
