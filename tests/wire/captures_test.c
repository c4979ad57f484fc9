/* Decodes every siw reference capture (/work/shared/interop/pcaps, see its README.md and
 * tshark-check*.txt) through our MPA parser and FPDU deframer, with CRC checking as negotiated
 * and all stream checks on, and compares field by field with what the README and tshark report:
 * FPDU and opcode counts, MPA Request/Reply fields and IRD/ORD blocks, CRCs, the P2P RTR, the
 * failed attempts, Read Request / Read Response pairing and siw's FPDU sizing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capdir.h"
#include "fpdu.h"
#include "mpa.h"
#include "pcap.h"
#include "streamdec.h"
#include "testlib.h"

#define SIW_MSS 1448            /* lo at MTU 1500 with TCP timestamps */

enum kind { K_NORMAL, K_P2P, K_STALL, K_MPAV1_FAIL, K_HOSTFWD };

struct exp_mpa {
    uint8_t  rev;
    uint8_t  flags;
    uint16_t pd_len;
    uint8_t  pd[4];
};

struct exp_file {
    const char *name;
    enum kind kind;
    size_t nconns;
    struct exp_mpa req[2], rep[2];
    size_t fpdus;
    unsigned ops[8];            /* per RDMAP opcode 0..7 */
    bool crc;
    size_t pad_nonzero;         /* FPDUs whose PAD bytes are not zero (siw quirk) */
    /* per-direction opcode counts for the rping family (client, server); all zero = unchecked */
    unsigned dir_ops[2][8];
};

#define V2(a, b, c, d) { 2, 0x10, 4, { a, b, c, d } }
#define V2C(a, b, c, d) { 2, 0x50, 4, { a, b, c, d } }
#define V1 { 1, 0x00, 0, { 0 } }

/* Numbers from tshark-check.txt, tshark-check-variants.txt and the README table. */
static const struct exp_file expected[] = {
    { "siw-rping.pcap", K_NORMAL, 1, { V2(0, 1, 0, 1) }, { V2(0, 1, 0, 1) }, 35, { 5, 5, 5, 20 }, false, 0,
      { { 0, 0, 5, 10 }, { 5, 5, 0, 10 } } },
    { "siw-crc-rping.pcap", K_NORMAL, 1, { V2C(0, 1, 0, 1) }, { V2C(0, 1, 0, 1) }, 35, { 5, 5, 5, 20 }, true, 0,
      { { 0, 0, 5, 10 }, { 5, 5, 0, 10 } } },
    { "siw-p2p-rping.pcap", K_P2P, 1, { V2(0x80, 1, 0xc0, 1) }, { V2(0x80, 1, 0x80, 1) }, 36, { 6, 5, 5, 20 }, false, 0,
      { { 1, 0, 5, 10 }, { 5, 5, 0, 10 } } },
    { "siw-ib_write_bw.pcap", K_NORMAL, 2, { V2(0, 0, 0, 0), V2(0, 0, 0, 0) }, { V2(0, 0, 0, 0), V2(0, 0, 0, 0) },
      92, { 60, 0, 0, 32 }, false, 2, { { 0 } } },
    { "siw-crc-ib_write_bw.pcap", K_NORMAL, 2, { V2C(0, 0, 0, 0), V2C(0, 0, 0, 0) },
      { V2C(0, 0, 0, 0), V2C(0, 0, 0, 0) }, 92, { 60, 0, 0, 32 }, true, 2, { { 0 } } },
    { "siw-ib_read_bw.pcap", K_NORMAL, 2, { V2(0, 0, 0, 0), V2(0, 0x80, 0, 0x80) },
      { V2(0, 0, 0, 0), V2(0, 0x80, 0, 0x80) }, 112, { 0, 20, 60, 32 }, false, 2, { { 0 } } },
    { "siw-ib_send_bw.pcap", K_NORMAL, 2, { V2(0, 0, 0, 0), V2(0, 0, 0, 0) }, { V2(0, 0, 0, 0), V2(0, 0, 0, 0) },
      86, { 4, 0, 0, 82 }, false, 2, { { 0 } } },
    { "siw-mpav1-ib_write_bw.pcap", K_NORMAL, 2, { V1, V1 }, { V1, V1 }, 92, { 60, 0, 0, 32 }, false, 2, { { 0 } } },
    { "siw-mpav1-rping.pcap", K_MPAV1_FAIL, 1, { V1 }, { V1 }, 1, { 0, 0, 0, 1 }, false, 0,
      { { 0, 0, 0, 1 }, { 0 } } },
    { "siw-ib_send_bw-stall.pcap", K_STALL, 1, { V2(0, 0, 0, 0) }, { V2(0, 0, 0, 0) }, 1, { 0, 0, 0, 1 }, false, 0,
      { { 0, 0, 0, 1 }, { 0 } } },
    { "hostfwd-mpa.pcap", K_HOSTFWD, 1, { V1 }, { V1 }, 0, { 0 }, false, 0, { { 0 } } },
};

static const struct exp_file *find_expected(const char *name)
{
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        if (strcmp(expected[i].name, name) == 0)
            return &expected[i];
    return NULL;
}

static void check_mpa(const char *file, size_t ci, const char *what, const struct iw_mpa_frame *f,
                      const uint8_t *stream, const struct exp_mpa *e)
{
    CHECK_MSG(f->rev == e->rev, "%s conn %zu %s: rev %u, want %u", file, ci, what, f->rev, e->rev);
    CHECK_MSG(f->flags == e->flags, "%s conn %zu %s: flags %02x, want %02x", file, ci, what, f->flags, e->flags);
    CHECK_MSG(f->pd_len == e->pd_len, "%s conn %zu %s: PD_Length %u, want %u", file, ci, what, f->pd_len, e->pd_len);
    CHECK(!f->markers && !f->reject);
    CHECK_EQ(f->crc, (e->flags & IW_MPA_FLAG_C) != 0);
    CHECK_EQ(f->has_v2, e->rev == 2);
    if (e->pd_len)
        CHECK_MSG(memcmp(stream + IW_MPA_HDR_LEN, e->pd, e->pd_len) == 0, "%s conn %zu %s: private data differs",
                  file, ci, what);
    if (f->has_v2) {
        /* The block decoded as RFC 6581 reads it. */
        struct iw_mpa_v2 v;
        iw_mpa_v2_unpack(e->pd, &v);
        CHECK_EQ(f->v2.ird, v.ird);
        CHECK_EQ(f->v2.ord, v.ord);
        CHECK_EQ(f->v2.p2p, v.p2p);
        CHECK_EQ(f->v2.rtr, v.rtr);
        CHECK_EQ(f->ulp_pd_len, 0);     /* rdma_cm apps here send no private data */
    }
}

/* Pairs the Read Requests sent in one direction with the Read Response messages coming back
 * (RFC 5040 §4.4: answered in order, to the sink STag/TO, exactly the requested size). */
static size_t check_reads(const char *file, const struct wsd_log *req_dir, const struct wsd_log *resp_dir)
{
    size_t ri = 0;
    bool open = false;
    uint32_t stag = 0;
    uint64_t to = 0, total = 0;

    for (size_t i = 0; i < resp_dir->n; i++) {
        const struct iw_fpdu_hdr *h = &resp_dir->fpdus[i].hdr;
        if (h->opcode != IW_OP_READ_RESP)
            continue;
        if (!open) {
            stag = h->stag;
            to = h->to;
            total = 0;
            open = true;
        }
        total += h->payload_len;
        if (!h->last)
            continue;
        open = false;
        /* find the ri-th Read Request */
        const struct iw_fpdu_hdr *rr = NULL;
        for (size_t j = 0, k = 0; j < req_dir->n; j++)
            if (req_dir->fpdus[j].hdr.opcode == IW_OP_READ_REQ && k++ == ri) {
                rr = &req_dir->fpdus[j].hdr;
                break;
            }
        CHECK_MSG(rr != NULL, "%s: Read Response %zu without a Read Request", file, ri);
        CHECK_MSG(stag == rr->rr.sink_stag && to == rr->rr.sink_to && total == rr->rr.size,
                  "%s: Read Response %zu (STag %08x TO %llx len %llu) does not answer its request "
                  "(%08x %llx %u)", file, ri, stag, (unsigned long long)to, (unsigned long long)total,
                  rr->rr.sink_stag, (unsigned long long)rr->rr.sink_to, rr->rr.size);
        ri++;
    }
    CHECK_MSG(!open, "%s: unfinished Read Response", file);
    size_t nrr = 0;
    for (size_t j = 0; j < req_dir->n; j++)
        nrr += req_dir->fpdus[j].hdr.opcode == IW_OP_READ_REQ;
    CHECK_MSG(nrr == ri, "%s: %zu Read Requests, %zu answered", file, nrr, ri);
    return ri;
}

/* FPDUs whose 4-byte CRC trailer travelled in a TCP segment of its own. */
static size_t crc_split_count(const struct wpcap_stream *s, const struct wsd_log *log, unsigned opcode)
{
    size_t n = 0;
    for (size_t i = 0; i < log->n; i++) {
        const struct wsd_fpdu *f = &log->fpdus[i];
        if (f->hdr.opcode != opcode)
            continue;
        size_t end = (size_t)f->offset + iw_mpa_fpdu_len(f->hdr.ulpdu_len);
        n += wpcap_pkt_at(s, end - 4) != wpcap_pkt_at(s, end - 5);
    }
    return n;
}

static void check_file(const char *dir, const char *name)
{
    char path[4200];
    char err[256];
    struct wpcap_file pf;
    const struct exp_file *e = find_expected(name);
    size_t fpdus = 0, ops[16] = { 0 }, reads = 0, crc_split = 0, crc_checked = 0, pads = 0;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK_MSG(wpcap_read(path, &pf, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(pf.nconns > 0, "%s: no TCP connection", name);
    if (e)
        CHECK_MSG(pf.nconns == e->nconns, "%s: %zu connections, want %zu", name, pf.nconns, e->nconns);

    for (size_t ci = 0; ci < pf.nconns; ci++) {
        const struct wpcap_conn *c = &pf.conns[ci];
        struct iw_mpa_frame req, rep;
        struct iw_fpdu_rx_cfg cfg;
        struct wsd_log log[2];

        for (int d = 0; d < 2; d++)
            CHECK_MSG(c->dir[d].holes == 0, "%s conn %zu dir %d: %zu bytes missing", name, ci, d, c->dir[d].holes);
        CHECK_MSG(c->dir[0].syn && c->dir[1].syn, "%s conn %zu: handshake not captured", name, ci);
        CHECK_MSG(wcap_conn_setup(c, &req, &rep, &cfg), "%s conn %zu: MPA Request/Reply do not decode", name, ci);
        /* RFC 5044 §7.1: a Responder must answer C=1 when the Request asked for CRC. */
        CHECK(!req.crc || rep.crc);

        for (int d = 0; d < 2; d++) {
            wsd_log_init(&log[d]);
            wsd_decode_all(d == 0 ? IW_MPA_REQUEST : IW_MPA_REPLY, IW_MPA_PD_MAX_INTEROP, &cfg,
                           c->dir[d].data, c->dir[d].len, &log[d]);
            CHECK_MSG(log[d].mpa_status == IW_MPA_COMPLETE, "%s conn %zu dir %d: MPA %s", name, ci, d,
                      iw_mpa_strerror(log[d].mpa_err));
            CHECK_MSG(!log[d].error, "%s conn %zu dir %d: deframer error at %llu: %s (Terminate %u/%u/%u)",
                      name, ci, d, (unsigned long long)log[d].err.fpdu_offset,
                      iw_fpdu_rx_reason_str(log[d].err.reason), log[d].err.term.layer, log[d].err.term.etype,
                      log[d].err.term.ecode);
            /* Every byte belongs to a complete FPDU: no capture stops mid-FPDU. */
            CHECK_MSG(log[d].end_state == IW_FPDU_RX_HDR_START && log[d].end_hgot == 0,
                      "%s conn %zu dir %d: stream ends inside an FPDU (%s)", name, ci, d,
                      iw_fpdu_rx_state_name(log[d].end_state));
            CHECK_EQ(log[d].consumed, c->dir[d].len);
            /* siw's startup strictness (iwarp-wire.md §2.2): its MPA frame ends a TCP segment. */
            if (c->dir[d].len > log[d].mpa_len)
                CHECK_MSG(wpcap_pkt_at(&c->dir[d], log[d].mpa_len) != wpcap_pkt_at(&c->dir[d], log[d].mpa_len - 1),
                          "%s conn %zu dir %d: FPDU bytes share a segment with the MPA frame", name, ci, d);

            for (size_t i = 0; i < log[d].n; i++) {
                const struct wsd_fpdu *f = &log[d].fpdus[i];
                uint32_t flen = iw_mpa_fpdu_len(f->hdr.ulpdu_len);
                ops[f->hdr.opcode]++;
                fpdus++;
                pads += f->pad_nonzero;
                if (cfg.crc) {
                    CHECK(f->crc_checked && f->crc_calc == f->crc_wire);
                    crc_checked++;
                } else {
                    CHECK_MSG(f->crc_wire == 0, "%s: CRC field %08x without CRC negotiated", name, f->crc_wire);
                }
                /* siw sizing (§2.8): no FPDU above one MSS; a non-last segment is exactly one. */
                CHECK_MSG(flen <= SIW_MSS, "%s: FPDU of %u bytes", name, flen);
                if (!f->hdr.last)
                    CHECK_MSG(flen == SIW_MSS, "%s: non-final segment of %u bytes", name, flen);
            }
            if (e && e->dir_ops[0][0] + e->dir_ops[0][1] + e->dir_ops[0][2] + e->dir_ops[0][3] +
                e->dir_ops[1][0] + e->dir_ops[1][1] + e->dir_ops[1][2] + e->dir_ops[1][3]) {
                unsigned got[8] = { 0 };
                for (size_t i = 0; i < log[d].n; i++)
                    got[log[d].fpdus[i].hdr.opcode]++;
                for (int op = 0; op < 8; op++)
                    CHECK_MSG(got[op] == e->dir_ops[d][op], "%s dir %d: %u x %s, want %u", name, d, got[op],
                              iw_fpdu_opcode_name((uint8_t)op), e->dir_ops[d][op]);
            }
        }

        if (e) {
            check_mpa(name, ci, "Request", &log[0].mpa, c->dir[0].data, &e->req[ci]);
            check_mpa(name, ci, "Reply", &log[1].mpa, c->dir[1].data, &e->rep[ci]);
            CHECK_EQ(log[0].mpa.kind, IW_MPA_REQUEST);
            CHECK_EQ(log[1].mpa.kind, IW_MPA_REPLY);
        }
        reads += check_reads(name, &log[0], &log[1]);
        reads += check_reads(name, &log[1], &log[0]);
        for (int d = 0; d < 2; d++)
            crc_split += crc_split_count(&c->dir[d], &log[d], IW_OP_WRITE);

        if (e && e->kind == K_P2P) {
            /* README: Request offers both RTR kinds with P2P; the Reply echoes P2P and picks Write.
             * Frame 8 is the RTR: a zero-length tagged Write, STag 1, TO 0; the responder sends
             * nothing before it. */
            CHECK(req.v2.p2p && req.v2.rtr == (IW_MPA_RTR_WRITE | IW_MPA_RTR_READ));
            CHECK(rep.v2.p2p && rep.v2.rtr == IW_MPA_RTR_WRITE);
            CHECK(log[0].n > 0 && log[1].n > 0);
            const struct wsd_fpdu *rtr = &log[0].fpdus[0];
            CHECK_EQ(iw_fpdu_rtr_kind(&rtr->hdr), IW_MPA_RTR_WRITE);
            CHECK(rtr->hdr.ulpdu_len == 14 && rtr->hdr.stag == 1 && rtr->hdr.to == 0 && rtr->hdr.payload_len == 0);
            size_t rtr_pkt = wpcap_pkt_at(&c->dir[0], (size_t)rtr->offset);
            CHECK_EQ(rtr_pkt, 8);
            size_t first_resp = wpcap_pkt_at(&c->dir[1], (size_t)log[1].fpdus[0].offset);
            CHECK_MSG(first_resp > rtr_pkt, "responder's first FPDU (frame %zu) before the RTR (frame %zu)",
                      first_resp, rtr_pkt);
            /* Nothing after the RTR is an RTR-shaped Write from the initiator: rping's traffic follows. */
            CHECK_EQ(log[0].fpdus[1].hdr.opcode, IW_OP_SEND);
        } else {
            CHECK(!req.v2.p2p && !rep.v2.p2p);
        }
        if (e && e->kind == K_STALL) {
            /* README: the client's first Send is ACKed, nobody answers, then a RST from the server. */
            CHECK(log[0].n == 1 && log[0].fpdus[0].hdr.opcode == IW_OP_SEND && log[0].fpdus[0].hdr.msn == 1);
            CHECK_EQ(log[1].n, 0);
            CHECK(c->dir[1].rst);
            CHECK(!c->dir[1].fin);
        }
        if (e && e->kind == K_MPAV1_FAIL) {
            /* README: Rev 1 Request and Reply, the client's first Send, then the server's FIN. */
            CHECK(log[0].n == 1 && log[0].fpdus[0].hdr.opcode == IW_OP_SEND);
            CHECK_EQ(log[1].n, 0);
            CHECK(c->dir[1].fin && !c->dir[1].rst);
            CHECK(!req.has_v2 && !rep.has_v2);
        }
        if (e && e->kind == K_HOSTFWD) {
            /* A host-side Python client through qemu slirp: MPA v1 both ways, then FIN. */
            static const uint8_t client[4] = { 10, 0, 2, 2 }, server[4] = { 10, 0, 2, 15 };
            CHECK_EQ(c->af, 4);
            CHECK(memcmp(c->addr[0], client, 4) == 0 && memcmp(c->addr[1], server, 4) == 0);
            CHECK_EQ(c->port[1], 7174);
            CHECK(log[0].n == 0 && log[1].n == 0);
            CHECK_EQ(c->dir[0].len, 20);
            CHECK_EQ(c->dir[1].len, 20);
        }
        for (int d = 0; d < 2; d++)
            wsd_log_free(&log[d]);
    }

    printf("%-28s conns %zu  FPDUs %3zu  Write %2zu ReadReq %2zu ReadResp %2zu Send %2zu  reads paired %2zu  "
           "CRC-checked %3zu  Writes with split-off CRC %2zu  non-zero PAD %zu\n",
           name, pf.nconns, fpdus, ops[0], ops[1], ops[2], ops[3], reads, crc_checked, crc_split, pads);
    if (e) {
        CHECK_MSG(fpdus == e->fpdus, "%s: %zu FPDUs, want %zu", name, fpdus, e->fpdus);
        for (int op = 0; op < 8; op++)
            CHECK_MSG(ops[op] == e->ops[op], "%s: %zu x %s, want %u", name, ops[op],
                      iw_fpdu_opcode_name((uint8_t)op), e->ops[op]);
        if (e->crc)
            CHECK_EQ(crc_checked, e->fpdus);
        CHECK_MSG(pads == e->pad_nonzero, "%s: %zu FPDUs with non-zero PAD, want %zu", name, pads, e->pad_nonzero);
        /* README: 57 of the 60 Write FPDUs of the CRC write_bw run went out as FPDU + 4-byte CRC. */
        if (strcmp(name, "siw-crc-ib_write_bw.pcap") == 0)
            CHECK_EQ(crc_split, 57);
    } else {
        printf("  note: %s is not in the expectation table; decoded without count checks\n", name);
    }
    wpcap_free(&pf);
}

int main(void)
{
    const char *dir = wcap_dir();
    char **names;

    if (!dir)
        ndk_test_skip("siw reference captures not found ($NDK_TEST_SOURCE_DIR/../shared/interop/pcaps "
                      "or /work/shared/interop/pcaps)");
    size_t n = wcap_list(dir, &names);
    printf("captures in %s: %zu\n", dir, n);
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        bool found = false;
        for (size_t j = 0; j < n; j++)
            found |= strcmp(names[j], expected[i].name) == 0;
        CHECK_MSG(found, "expected capture %s is missing from %s", expected[i].name, dir);
    }
    for (size_t i = 0; i < n; i++)
        check_file(dir, names[i]);
    wcap_list_free(names, n);
    printf("captures: OK\n");
    return 0;
}
