/* Decodes every siw capture fixture (tests/wire/captures: our provider against Linux siw in the
 * interop guest, made by captures/regenerate.sh, described in captures/README.md) through our
 * MPA parser and FPDU deframer, with CRC checking as negotiated and every stream check on, and
 * compares with what each cell must put on the wire: the MPA Request/Reply fields and IRD/ORD
 * blocks (RFC 6581), our ULP private data, CRCs (RFC 5044 §4.4), the P2P RTR, FPDU and opcode
 * counts per direction, Read Request / Read Response pairing (RFC 5040 §4.4) and FPDU sizing by
 * the MSS (RFC 5044 §4). Then a copy of one CRC stream with one payload byte flipped must be
 * refused, so a broken CRC check cannot pass unnoticed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capdir.h"
#include "fpdu.h"
#include "mpa.h"
#include "pcap.h"
#include "streamdec.h"
#include "testlib.h"

/* The guest's lo runs at MTU 1500 for these cells: MSS 1448 with TCP timestamps, and both sides
 * size their FPDUs to it. */
#define MSS 1448
/* regenerate.sh's cells: rping ITERS x SIZE, ucmatose ITERS messages of 100 bytes each way. */
#define RPING_ITERS 3
#define RPING_SIZE 3000
#define UCMA_ITERS 3
#define UCMA_SIZE 100
/* What ndkping --cmatose --pdata sends in those cells (tests/interop/guest/matrix.sh), with its
 * terminating NUL as ucmatose's peer would print it. */
#define OUR_PDATA "openndk-interop"

enum app { RPING, UCMA };

struct fixture {
    const char *name;
    enum app app;
    bool ours_client;           /* our provider sent the SYN and the MPA Request */
    uint8_t rev;                /* MPA revision of both frames */
    bool crc, p2p;
    /* IRD, ORD of the Request's and the Reply's RFC 6581 block (rev 2) */
    uint16_t req_ird, req_ord, rep_ird, rep_ord;
    uint8_t req_rtr;            /* RTR kinds the Request offers (P2P) */
};

/* The responder's IRD/ORD answer follows the initiator's ORD/IRD and its own limits; the
 * values are those each side's stack chose in these cells. */
static const struct fixture fixtures[] = {
    { "default-rping-ours2siw.pcap", RPING, true, 2, false, false, 1, 1, 1, 1, 0 },
    { "default-rping-siw2ours.pcap", RPING, false, 2, false, false, 1, 1, 1, 1, 0 },
    { "default-ucmatose-ours2siw.pcap", UCMA, true, 2, false, false, 1, 1, 1, 1, 0 },
    { "default-ucmatose-siw2ours.pcap", UCMA, false, 2, false, false, 1, 1, 1, 1, 0 },
    { "crc-rping-ours2siw.pcap", RPING, true, 2, true, false, 1, 1, 1, 1, 0 },
    { "crc-rping-siw2ours.pcap", RPING, false, 2, true, false, 1, 1, 1, 1, 0 },
    { "crc-ucmatose-ours2siw.pcap", UCMA, true, 2, true, false, 1, 1, 1, 1, 0 },
    { "crc-ucmatose-siw2ours.pcap", UCMA, false, 2, true, false, 1, 1, 1, 1, 0 },
    { "mpav1-rping-siw2ours.pcap", RPING, false, 1, false, false, 0, 0, 0, 0, 0 },
    { "mpav1-ucmatose-ours2siw.pcap", UCMA, true, 1, false, false, 0, 0, 0, 0, 0 },
    { "mpav1-ucmatose-siw2ours.pcap", UCMA, false, 1, false, false, 0, 0, 0, 0, 0 },
    { "p2p-rping-ours2siw.pcap", RPING, true, 2, false, true, 1, 1, 1, 1, IW_MPA_RTR_WRITE | IW_MPA_RTR_READ },
    { "p2p-rping-siw2ours.pcap", RPING, false, 2, false, true, 1, 1, 1, 1, IW_MPA_RTR_WRITE | IW_MPA_RTR_READ },
    { "p2p-ucmatose-ours2siw.pcap", UCMA, true, 2, false, true, 1, 1, 1, 1, IW_MPA_RTR_WRITE | IW_MPA_RTR_READ },
    { "p2p-ucmatose-siw2ours.pcap", UCMA, false, 2, false, true, 1, 1, 1, 1, IW_MPA_RTR_WRITE | IW_MPA_RTR_READ },
};
#define NFIXTURES (sizeof fixtures / sizeof fixtures[0])

static const struct fixture *find_fixture(const char *name)
{
    for (size_t i = 0; i < NFIXTURES; i++)
        if (strcmp(fixtures[i].name, name) == 0)
            return &fixtures[i];
    return NULL;
}

/* Tagged segments of one SIZE-byte message: each FPDU fills one MSS (RFC 5044 §4: MULPDU). */
static unsigned tagged_segments(unsigned size)
{
    unsigned per = iw_fpdu_mulpdu(MSS, false) - IW_DDP_TAGGED_HDR_LEN;
    return (size + per - 1) / per;
}

/* Expected RDMAP opcodes per direction ([0] client -> server, [1] server -> client).
 * rping, per iteration: the client advertises its source buffer (Send), the server reads it
 * (Read Request, Read Response segments), says go (Send), the client advertises its sink (Send),
 * the server writes it (Write segments) and says done (Send). ucmatose: the server sends each
 * message, the client answers it. P2P adds the initiator's RTR, a zero-length Write. */
static void expected_ops(const struct fixture *f, unsigned ops[2][8])
{
    memset(ops, 0, sizeof(unsigned[2][8]));
    if (f->app == RPING) {
        unsigned segs = tagged_segments(RPING_SIZE);
        ops[0][IW_OP_SEND] = 2 * RPING_ITERS;
        ops[0][IW_OP_READ_RESP] = segs * RPING_ITERS;
        ops[1][IW_OP_READ_REQ] = RPING_ITERS;
        ops[1][IW_OP_SEND] = 2 * RPING_ITERS;
        ops[1][IW_OP_WRITE] = segs * RPING_ITERS;
    } else {
        ops[0][IW_OP_SEND] = UCMA_ITERS;
        ops[1][IW_OP_SEND] = UCMA_ITERS;
    }
    if (f->p2p)
        ops[0][IW_OP_WRITE]++;
}

static void check_mpa(const char *file, const char *what, const struct iw_mpa_frame *m, const struct fixture *f,
                      uint16_t ird, uint16_t ord, bool ours)
{
    CHECK_MSG(m->rev == f->rev, "%s %s: rev %u, want %u", file, what, m->rev, f->rev);
    CHECK_MSG(!m->markers && !m->reject, "%s %s: M or R set", file, what);
    CHECK_MSG(m->crc == f->crc, "%s %s: C=%d, want %d", file, what, m->crc, f->crc);
    /* RFC 6581: revision 2 with the enhanced bit carries the IRD/ORD block; revision 1 has none. */
    CHECK_MSG(m->has_v2 == (f->rev == 2) && m->enhanced == (f->rev == 2), "%s %s: enhanced %d block %d", file, what,
              m->enhanced, m->has_v2);
    if (m->has_v2) {
        CHECK_MSG(m->v2.ird == ird && m->v2.ord == ord, "%s %s: IRD %u ORD %u, want %u %u", file, what, m->v2.ird,
                  m->v2.ord, ird, ord);
        CHECK_MSG(m->v2.p2p == f->p2p, "%s %s: P2P %d, want %d", file, what, m->v2.p2p, f->p2p);
    }
    /* ucmatose: our side sends OUR_PDATA, siw's ucmatose and both rpings send none. */
    if (f->app == UCMA && ours)
        CHECK_MSG(m->ulp_pd_len == sizeof OUR_PDATA && memcmp(m->ulp_pd, OUR_PDATA, sizeof OUR_PDATA) == 0,
                  "%s %s: our private data '%s' is not there (%u bytes)", file, what, OUR_PDATA, m->ulp_pd_len);
    else
        CHECK_MSG(m->ulp_pd_len == 0, "%s %s: %u bytes of ULP private data, want none", file, what, m->ulp_pd_len);
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

/* Decodes one direction of c; fails the test on any decode error. */
static void decode_dir(const char *name, const struct wpcap_conn *c, int d, const struct iw_fpdu_rx_cfg *cfg,
                       struct wsd_log *log)
{
    wsd_log_init(log);
    wsd_decode_all(d == 0 ? IW_MPA_REQUEST : IW_MPA_REPLY, IW_MPA_PD_MAX_INTEROP, cfg, c->dir[d].data, c->dir[d].len,
                   log);
    CHECK_MSG(log->mpa_status == IW_MPA_COMPLETE, "%s dir %d: MPA %s", name, d, iw_mpa_strerror(log->mpa_err));
    CHECK_MSG(!log->error, "%s dir %d: deframer error at %llu: %s (Terminate %u/%u/%u)", name, d,
              (unsigned long long)log->err.fpdu_offset, iw_fpdu_rx_reason_str(log->err.reason), log->err.term.layer,
              log->err.term.etype, log->err.term.ecode);
    /* Every byte belongs to a complete FPDU: no capture stops mid-FPDU. */
    CHECK_MSG(log->end_state == IW_FPDU_RX_HDR_START && log->end_hgot == 0,
              "%s dir %d: stream ends inside an FPDU (%s)", name, d, iw_fpdu_rx_state_name(log->end_state));
    CHECK_EQ(log->consumed, c->dir[d].len);
}

static void check_file(const char *dir, const char *name)
{
    char path[4200];
    char err[256];
    struct wpcap_file pf;
    const struct fixture *f = find_fixture(name);
    unsigned want[2][8];

    CHECK_MSG(f != NULL, "%s is not in the fixture table of captures_test.c (captures/README.md lists them)", name);
    expected_ops(f, want);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    CHECK_MSG(wpcap_read(path, &pf, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(pf.nconns == 1, "%s: %zu TCP connections, want 1", name, pf.nconns);

    const struct wpcap_conn *c = &pf.conns[0];
    struct iw_mpa_frame req, rep;
    struct iw_fpdu_rx_cfg cfg;
    struct wsd_log log[2];
    size_t fpdus = 0, crc_checked = 0, reads;

    for (int d = 0; d < 2; d++)
        CHECK_MSG(c->dir[d].holes == 0, "%s dir %d: %zu bytes missing", name, d, c->dir[d].holes);
    CHECK_MSG(c->dir[0].syn && c->dir[1].syn, "%s: handshake not captured", name);
    CHECK_MSG(c->dir[0].fin && c->dir[1].fin, "%s: the connection does not end with a FIN each way", name);
    CHECK_MSG(wcap_conn_setup(c, &req, &rep, &cfg), "%s: MPA Request/Reply do not decode", name);
    /* RFC 5044 §7.1: a Responder must answer C=1 when the Request asked for CRC. */
    CHECK(!req.crc || rep.crc);

    for (int d = 0; d < 2; d++) {
        unsigned got[8] = { 0 };
        decode_dir(name, c, d, &cfg, &log[d]);
        /* Both stacks send their MPA frame alone in its segment: siw refuses FPDU bytes behind it. */
        if (c->dir[d].len > log[d].mpa_len)
            CHECK_MSG(wpcap_pkt_at(&c->dir[d], log[d].mpa_len) != wpcap_pkt_at(&c->dir[d], log[d].mpa_len - 1),
                      "%s dir %d: FPDU bytes share a segment with the MPA frame", name, d);
        for (size_t i = 0; i < log[d].n; i++) {
            const struct wsd_fpdu *fp = &log[d].fpdus[i];
            uint32_t flen = iw_mpa_fpdu_len(fp->hdr.ulpdu_len);
            CHECK_MSG(fp->hdr.opcode < 8, "%s dir %d: opcode %u", name, d, fp->hdr.opcode);
            got[fp->hdr.opcode]++;
            fpdus++;
            if (cfg.crc) {
                CHECK_MSG(fp->crc_checked && fp->crc_calc == fp->crc_wire, "%s dir %d FPDU %zu: CRC %08x, want %08x",
                          name, d, i, fp->crc_wire, fp->crc_calc);
                crc_checked++;
            } else {
                CHECK_MSG(fp->crc_wire == 0, "%s: CRC field %08x without CRC negotiated", name, fp->crc_wire);
            }
            /* RFC 5044 §4 sizing, which both sides follow: no FPDU above one MSS, and every
             * non-final segment of a message fills it. */
            CHECK_MSG(flen <= MSS, "%s dir %d: FPDU of %u bytes", name, d, flen);
            if (!fp->hdr.last)
                CHECK_MSG(flen == MSS, "%s dir %d: non-final segment of %u bytes", name, d, flen);
        }
        for (int op = 0; op < 8; op++)
            CHECK_MSG(got[op] == want[d][op], "%s %s: %u x %s, want %u", name, d ? "server->client" : "client->server",
                      got[op], iw_fpdu_opcode_name((uint8_t)op), want[d][op]);
    }

    CHECK_EQ(log[0].mpa.kind, IW_MPA_REQUEST);
    CHECK_EQ(log[1].mpa.kind, IW_MPA_REPLY);
    check_mpa(name, "Request", &log[0].mpa, f, f->req_ird, f->req_ord, f->ours_client);
    check_mpa(name, "Reply", &log[1].mpa, f, f->rep_ird, f->rep_ord, !f->ours_client);
    reads = check_reads(name, &log[0], &log[1]) + check_reads(name, &log[1], &log[0]);
    CHECK_EQ(reads, f->app == RPING ? RPING_ITERS : 0);

    if (f->p2p) {
        /* RFC 6581: the initiator offers RTR kinds, the responder picks one, and the
         * initiator's first FPDU is that RTR (a zero-length Write here); the responder sends
         * nothing before it has arrived. */
        CHECK_MSG(req.v2.rtr == f->req_rtr, "%s: Request offers RTR %x, want %x", name, req.v2.rtr, f->req_rtr);
        CHECK_MSG(rep.v2.rtr == IW_MPA_RTR_WRITE, "%s: Reply picks RTR %x, want Write", name, rep.v2.rtr);
        CHECK(log[0].n > 1 && log[1].n > 0);
        const struct wsd_fpdu *rtr = &log[0].fpdus[0];
        CHECK_EQ(iw_fpdu_rtr_kind(&rtr->hdr), IW_MPA_RTR_WRITE);
        CHECK_EQ(rtr->hdr.payload_len, 0);
        size_t rtr_pkt = wpcap_pkt_at(&c->dir[0], (size_t)rtr->offset);
        size_t first_resp = wpcap_pkt_at(&c->dir[1], (size_t)log[1].fpdus[0].offset);
        CHECK_MSG(first_resp > rtr_pkt, "%s: responder's first FPDU (frame %zu) before the RTR (frame %zu)", name,
                  first_resp, rtr_pkt);
        CHECK_EQ(log[0].fpdus[1].hdr.opcode, IW_OP_SEND);
    } else {
        CHECK(!req.v2.p2p && !rep.v2.p2p);
    }

    printf("%-32s FPDUs %3zu (client %3zu, server %3zu)  reads paired %zu  CRC-checked %3zu  MPA rev %u%s\n", name,
           fpdus, log[0].n, log[1].n, reads, crc_checked, f->rev, f->p2p ? " P2P" : "");
    for (int d = 0; d < 2; d++)
        wsd_log_free(&log[d]);
    wpcap_free(&pf);
}

/* The checks above must be able to fail: one payload byte flipped in a copy of a CRC stream
 * makes the deframer stop at that FPDU with a CRC error (RFC 5044 §4.4), and a flipped ULPDU
 * length in a stream without CRC derails the framing. */
static void check_corruption_found(const char *dir)
{
    static const char *const files[2] = { "crc-rping-ours2siw.pcap", "default-rping-ours2siw.pcap" };
    for (int k = 0; k < 2; k++) {
        char path[4200], err[256];
        struct wpcap_file pf;
        struct iw_mpa_frame req, rep;
        struct iw_fpdu_rx_cfg cfg;
        struct wsd_log good, bad;

        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        CHECK_MSG(wpcap_read(path, &pf, err, sizeof err) == 0, "%s", err);
        const struct wpcap_conn *c = &pf.conns[0];
        CHECK(wcap_conn_setup(c, &req, &rep, &cfg));
        CHECK_EQ(cfg.crc, k == 0);
        decode_dir(files[k], c, 0, &cfg, &good);
        /* the client's first Read Response (its error offset counts from the end of the MPA frame) */
        const struct wsd_fpdu *target = NULL;
        for (size_t i = 0; i < good.n && !target; i++)
            if (good.fpdus[i].hdr.opcode == IW_OP_READ_RESP)
                target = &good.fpdus[i];
        CHECK_MSG(target != NULL, "%s: no Read Response", files[k]);
        uint8_t *copy = malloc(c->dir[0].len);
        CHECK(copy != NULL);
        memcpy(copy, c->dir[0].data, c->dir[0].len);
        size_t at = (size_t)target->offset + (k == 0 ? IW_MPA_LEN_SIZE + IW_DDP_TAGGED_HDR_LEN + 100 : 0);
        copy[at] ^= k == 0 ? 0x01 : 0x40;
        wsd_log_init(&bad);
        wsd_decode_all(IW_MPA_REQUEST, IW_MPA_PD_MAX_INTEROP, &cfg, copy, c->dir[0].len, &bad);
        if (k == 0) {
            CHECK_MSG(bad.error && bad.err.reason == IW_FPDU_RXERR_CRC &&
                          bad.err.fpdu_offset + bad.mpa_len == target->offset,
                      "%s: a flipped payload byte at %zu went unnoticed (error %d, reason %s)", files[k], at,
                      bad.error, iw_fpdu_rx_reason_str(bad.err.reason));
        } else {
            CHECK_MSG(bad.error || bad.end_state != IW_FPDU_RX_HDR_START || bad.n != good.n,
                      "%s: a flipped ULPDU_Length at %zu went unnoticed", files[k], at);
        }
        printf("corrupted copy of %s (byte %zu): %s\n", files[k], at,
               bad.error ? iw_fpdu_rx_reason_str(bad.err.reason) : "stream ends inside an FPDU");
        free(copy);
        wsd_log_free(&bad);
        wsd_log_free(&good);
        wpcap_free(&pf);
    }
}

int main(void)
{
    const char *dir = wcap_dir();
    char **names;
    size_t n = wcap_list(dir, &names);

    printf("captures in %s: %zu\n", dir, n);
    CHECK_MSG(n > 0, "no capture fixtures in %s (tests/wire/captures/README.md)", dir);
    for (size_t i = 0; i < NFIXTURES; i++) {
        bool found = false;
        for (size_t j = 0; j < n; j++)
            found |= strcmp(names[j], fixtures[i].name) == 0;
        CHECK_MSG(found, "fixture %s is missing from %s", fixtures[i].name, dir);
    }
    for (size_t i = 0; i < n; i++)
        check_file(dir, names[i]);
    wcap_list_free(names, n);
    check_corruption_found(dir);
    printf("captures: OK\n");
    return 0;
}
