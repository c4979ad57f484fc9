/* Cross-check with an independent decoder: our encoders build a whole iWARP connection (MPA
 * Request/Reply with CRC on, then Sends of every flavour, Write, Read Request, a segmented Read
 * Response, an FPDU split across two TCP segments, a zero-length RTR-style Write and a
 * Terminate), wrapped in Ethernet/IPv4/TCP with correct sequence numbers in both directions,
 * into a pcap in a temporary directory. tshark must dissect it as iwarp_mpa + iwarp_ddp_rdmap,
 * find every CRC good, report nothing malformed, and read back the fields we wrote. Skipped
 * when tshark is not installed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "examples.h"
#include "fpdu.h"
#include "mpa.h"
#include "pcap.h"
#include "streamdec.h"
#include "testlib.h"

static const uint8_t ip_client[4] = { 192, 0, 2, 1 }, ip_server[4] = { 192, 0, 2, 2 };
enum { PORT_CLIENT = 40001, PORT_SERVER = 7174 };

struct side {
    const uint8_t *ip;
    uint16_t port;
    uint32_t seq;               /* next sequence number to send */
};

struct conn {
    struct wpcap_writer w;
    struct side s[2];           /* 0 client, 1 server */
    unsigned opcodes[64];       /* RDMAP opcode of every FPDU in wire order */
    size_t nfpdu;
    /* what the client and server sent, for our own decoder to re-read */
    uint8_t stream[2][20000];
    size_t slen[2];
};

static void seg(struct conn *c, int from, uint8_t flags, const void *p, size_t len)
{
    struct side *a = &c->s[from], *b = &c->s[!from];
    CHECK(wpcap_write_tcp4(&c->w, a->ip, a->port, b->ip, b->port, a->seq, b->seq, flags, p, len) == 0);
    a->seq += (uint32_t)len + ((flags & (WPCAP_SYN | WPCAP_FIN)) ? 1 : 0);
    if (len) {
        CHECK(c->slen[from] + len <= sizeof c->stream[from]);
        memcpy(c->stream[from] + c->slen[from], p, len);
        c->slen[from] += len;
    }
}

/* One FPDU, in one TCP segment or (split) with its CRC in a second one, like siw often does. */
static void fpdu(struct conn *c, int from, const struct iw_fpdu_hdr *h, const void *pay, size_t plen, bool split)
{
    uint8_t buf[2000];
    struct iw_iov iov = { pay, plen };
    int n = iw_fpdu_build(h, &iov, plen ? 1 : 0, true, buf, sizeof buf);
    CHECK_MSG(n > 0, "build: %d", n);
    if (split) {
        seg(c, from, WPCAP_ACK | WPCAP_PSH, buf, (size_t)n - 4);
        seg(c, from, WPCAP_ACK | WPCAP_PSH, buf + n - 4, 4);
    } else {
        seg(c, from, WPCAP_ACK | WPCAP_PSH, buf, (size_t)n);
    }
    c->opcodes[c->nfpdu++] = h->opcode;
}

static void write_capture(struct conn *c, const char *path)
{
    uint8_t buf[600], pay[3000];
    int n;

    for (size_t i = 0; i < sizeof pay; i++)
        pay[i] = (uint8_t)(i * 7 + 3);
    c->s[0] = (struct side){ ip_client, PORT_CLIENT, 0x1000 };
    c->s[1] = (struct side){ ip_server, PORT_SERVER, 0x7f000000 };
    CHECK(wpcap_writer_open(&c->w, path) == 0);

    seg(c, 0, WPCAP_SYN, NULL, 0);
    seg(c, 1, WPCAP_SYN | WPCAP_ACK, NULL, 0);
    seg(c, 0, WPCAP_ACK, NULL, 0);
    c->slen[0] = c->slen[1] = 0;

    /* MPA v2 with CRC, IRD/ORD 16, some ULP private data behind the block. */
    static const uint8_t ulp[] = { 'n', 'd', 'k', 0, 1, 2, 3, 4 };
    struct iw_mpa_frame req = { .kind = IW_MPA_REQUEST, .rev = 2, .enhanced = true, .crc = true,
                                .v2 = { .ird = 16, .ord = 16 }, .ulp_pd = ulp, .ulp_pd_len = sizeof ulp };
    n = iw_mpa_encode(&req, IW_MPA_PD_MAX_INTEROP, buf, sizeof buf);
    CHECK(n > 0);
    seg(c, 0, WPCAP_ACK | WPCAP_PSH, buf, (size_t)n);
    struct iw_mpa_frame rep = req;
    rep.kind = IW_MPA_REPLY;
    rep.ulp_pd_len = 0;
    n = iw_mpa_encode(&rep, IW_MPA_PD_MAX_INTEROP, buf, sizeof buf);
    CHECK(n > 0);
    seg(c, 1, WPCAP_ACK | WPCAP_PSH, buf, (size_t)n);

    /* Client speaks first (RFC 5044 §7.1.2). */
    struct iw_fpdu_hdr h;
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_WRITE, .last = true, .stag = 1, .to = 0 };
    fpdu(c, 0, &h, NULL, 0, false);                                     /* RTR-style zero-length Write */
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_SEND, .last = true, .msn = 1 };
    fpdu(c, 0, &h, pay, 16, false);
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_SEND, .last = true, .msn = 1 };
    fpdu(c, 1, &h, pay, 13, false);                                     /* pad 3 */
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_WRITE, .last = true, .stag = 0x00123456, .to = 0x00007f1234560000 };
    fpdu(c, 1, &h, pay, 100, false);
    /* Read of 3000 bytes, answered in MSS-sized segments (1428 + 1428 + 144 at EMSS 1448). */
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_READ_REQ, .msn = 1,
                              .rr = { .sink_stag = 0x0000ab01, .sink_to = 0x1000, .size = 3000,
                                      .src_stag = 0x00123456, .src_to = 0x00007f1234560000 } };
    fpdu(c, 0, &h, NULL, 0, false);
    uint32_t per = iw_fpdu_max_payload(IW_OP_READ_RESP, iw_fpdu_mulpdu(1448, false));
    for (uint32_t off = 0; off < 3000; off += per) {
        uint32_t len = 3000 - off < per ? 3000 - off : per;
        h = (struct iw_fpdu_hdr){ .opcode = IW_OP_READ_RESP, .last = off + len == 3000, .stag = 0x0000ab01,
                                  .to = 0x1000 + off };
        fpdu(c, 1, &h, pay + off, len, false);
    }
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_SEND_INV, .last = true, .msn = 2, .inv_stag = 0x0000ab01 };
    fpdu(c, 0, &h, pay, 7, false);
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_SEND_SE, .last = true, .msn = 3 };
    fpdu(c, 0, &h, pay, 64, true);                                      /* CRC in its own segment */
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_SEND_SE_INV, .last = true, .msn = 4, .inv_stag = 0x00beef01 };
    fpdu(c, 0, &h, pay, 2, false);
    /* A two-segment Send: MO 0 then MO 1000. */
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_SEND, .last = false, .msn = 2, .mo = 0 };
    fpdu(c, 1, &h, pay, 1000, false);
    h = (struct iw_fpdu_hdr){ .opcode = IW_OP_SEND, .last = true, .msn = 2, .mo = 1000 };
    fpdu(c, 1, &h, pay + 1000, 500, false);
    /* The server ends it: Terminate, DDP tagged invalid STag, with the Write header attached
     * (worked example Ex7). */
    const struct wex_fpdu *e7 = NULL;
    for (size_t i = 0; i < wex_fpdu_count; i++)
        if (strncmp(wex_fpdu[i].name, "Ex7", 3) == 0)
            e7 = &wex_fpdu[i];
    CHECK(e7 != NULL);
    fpdu(c, 1, &e7->hdr, NULL, 0, false);

    seg(c, 1, WPCAP_FIN | WPCAP_ACK, NULL, 0);
    seg(c, 0, WPCAP_FIN | WPCAP_ACK, NULL, 0);
    seg(c, 1, WPCAP_ACK, NULL, 0);
    CHECK(wpcap_writer_close(&c->w) == 0);
}

static char *run(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    CHECK_MSG(p != NULL, "popen %s", cmd);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    CHECK(out != NULL);
    for (size_t n; (n = fread(out + len, 1, cap - len - 1, p)) > 0;) {
        len += n;
        if (cap - len < 4096) {
            cap *= 2;
            out = realloc(out, cap);
            CHECK(out != NULL);
        }
    }
    out[len] = 0;
    int rc = pclose(p);
    CHECK_MSG(rc == 0, "'%s' exited with %d", cmd, rc);
    return out;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

int main(void)
{
    if (system("command -v tshark >/dev/null 2>&1") != 0)
        ndk_test_skip("tshark not installed (Debian package 'tshark'); cannot cross-check our bytes with Wireshark");

    char dir[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/ndk-wire-tshark-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK_MSG(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
    char path[600], cmd[2048];
    snprintf(path, sizeof path, "%s/iwarp-synthetic.pcap", dir);

    struct conn *c = calloc(1, sizeof *c);
    CHECK(c != NULL);
    write_capture(c, path);
    printf("wrote %s: %zu FPDUs\n", path, c->nfpdu);

    /* Our own reader and decoder agree with what we wrote before we ask tshark. */
    char err[256];
    struct wpcap_file pf;
    CHECK_MSG(wpcap_read(path, &pf, err, sizeof err) == 0, "%s", err);
    CHECK_EQ(pf.nconns, 1);
    for (int d = 0; d < 2; d++) {
        CHECK_EQ(pf.conns[0].dir[d].len, c->slen[d]);
        CHECK(memcmp(pf.conns[0].dir[d].data, c->stream[d], c->slen[d]) == 0);
        struct iw_fpdu_rx_cfg cfg = { .crc = true, .check_seq = true, .strict_pad = true };
        struct wsd_log log;
        wsd_log_init(&log);
        wsd_decode_all(d ? IW_MPA_REPLY : IW_MPA_REQUEST, IW_MPA_PD_MAX_INTEROP, &cfg, c->stream[d], c->slen[d], &log);
        CHECK_MSG(!log.error, "own decode: %s", iw_fpdu_rx_reason_str(log.err.reason));
        wsd_log_free(&log);
    }
    wpcap_free(&pf);

    /* 1. Full dissection: every FPDU's CRC good, nothing malformed. tshark's RPC-over-RDMA
     * heuristic tries to parse short Send payloads as RPC and trips over them (perftest's Sends
     * trip it the same way); it is switched off here, and checked below to be the
     * only complaint when it is on. */
    snprintf(cmd, sizeof cmd, "tshark -n -r '%s' -V --disable-protocol rpcordma 2>/dev/null", path);
    char *v = run(cmd);
    size_t good = count(v, "Good CRC32"), bad = count(v, "Bad CRC32"), malformed = count(v, "Malformed");
    printf("tshark -V: Good CRC32 %zu, Bad CRC32 %zu, Malformed %zu\n", good, bad, malformed);
    CHECK_MSG(good == c->nfpdu, "Good CRC32 %zu times for %zu FPDUs", good, c->nfpdu);
    CHECK_EQ(bad, 0);
    CHECK_MSG(malformed == 0, "tshark reports malformed packets:\n%s", v);
    CHECK(count(v, "iWARP Marker Protocol data unit Aligned framing") > 0);
    CHECK(count(v, "iWARP Direct Data Placement and Remote Direct Memory Access Protocol") > 0);
    CHECK_EQ(count(v, "Request frame header"), 1);
    CHECK_EQ(count(v, "Reply frame header"), 1);

    snprintf(cmd, sizeof cmd, "tshark -n -r '%s' -V 2>/dev/null", path);
    char *vh = run(cmd);
    CHECK_EQ(count(vh, "Good CRC32"), c->nfpdu);
    CHECK_MSG(count(vh, "[Malformed Packet:") == count(vh, "[Malformed Packet: RPCoRDMA]"),
              "with all heuristics on, tshark finds something malformed besides RPCoRDMA:\n%s", vh);
    printf("tshark -V with heuristics: %zu Send payloads misread by the RPCoRDMA heuristic only\n",
           count(vh, "[Malformed Packet: RPCoRDMA]"));
    free(vh);

    /* 2. Every FPDU dissected as iwarp_ddp_rdmap, with our opcodes in our order. */
    snprintf(cmd, sizeof cmd, "tshark -n -r '%s' -Y iwarp_ddp_rdmap -T fields -e iwarp_rdma.opcode "
             "--disable-protocol rpcordma 2>/dev/null", path);
    char *ops = run(cmd);
    size_t k = 0;
    for (char *line = strtok(ops, "\n"); line; line = strtok(NULL, "\n"))
        for (char *tok = line; tok && *tok;) {
            char *comma = strchr(tok, ',');
            if (comma)
                *comma = 0;
            CHECK_MSG(k < c->nfpdu, "tshark sees more FPDUs than we wrote");
            unsigned op = (unsigned)strtoul(tok, NULL, 0);
            CHECK_MSG(op == c->opcodes[k], "FPDU %zu: tshark opcode %u, we sent %u", k, op, c->opcodes[k]);
            k++;
            tok = comma ? comma + 1 : NULL;
        }
    CHECK_MSG(k == c->nfpdu, "tshark dissected %zu FPDUs as iwarp_ddp_rdmap, we sent %zu", k, c->nfpdu);

    /* 3. Protocol stacks: MPA frames and FPDUs sit on TCP as the iWARP dissectors. */
    snprintf(cmd, sizeof cmd, "tshark -n -r '%s' -T fields -e frame.protocols --disable-protocol rpcordma 2>/dev/null",
             path);
    char *prot = run(cmd);
    CHECK_EQ(count(prot, "tcp:iwarp_mpa:iwarp_ddp_rdmap"), c->nfpdu);
    CHECK_EQ(count(prot, "tcp:iwarp_mpa\n"), 2);

    /* 4. The MPA fields and a few DDP/RDMAP fields as tshark reads them. */
    snprintf(cmd, sizeof cmd,
             "tshark -n -r '%s' -Y 'iwarp_mpa.req or iwarp_mpa.rep' -T fields -e iwarp_mpa.crc_flag -e iwarp_mpa.rev "
             "-e iwarp_mpa.res -e iwarp_mpa.pdlength -e iwarp_mpa.privatedata 2>/dev/null", path);
    char *mpa = run(cmd);
    CHECK_MSG(strstr(mpa, "1\t2\t0x10\t12\t001000106e646b0001020304\n") != NULL, "MPA Request fields: %s", mpa);
    CHECK_MSG(strstr(mpa, "1\t2\t0x10\t4\t00100010\n") != NULL, "MPA Reply fields: %s", mpa);
    snprintf(cmd, sizeof cmd,
             "tshark -n -r '%s' -Y 'iwarp_rdma.opcode == 1' -T fields -e iwarp_ddp.qn -e iwarp_ddp.msn -e iwarp_ddp.mo "
             "-e iwarp_rdma.sinkstag -e iwarp_rdma.sinkto -e iwarp_rdma.rdmardsz -e iwarp_rdma.srcstag "
             "-e iwarp_rdma.srcto 2>/dev/null", path);
    char *rr = run(cmd);
    CHECK_MSG(strstr(rr, "1\t1\t0\t0x0000ab01\t0x0000000000001000\t3000\t0x00123456\t0x00007f1234560000") != NULL,
              "Read Request fields: %s", rr);
    snprintf(cmd, sizeof cmd,
             "tshark -n -r '%s' -Y 'iwarp_rdma.opcode == 7' -T fields -e iwarp_rdma.term_layer "
             "-e iwarp_rdma.term_etype_ddp "
             "-e iwarp_rdma.term_errcode_ddp_tagged -e iwarp_rdma.term_hdrct_m -e iwarp_rdma.hdrct_d "
             "-e iwarp_rdma.term_ddp_h 2>/dev/null", path);
    char *term = run(cmd);
    CHECK_MSG(strstr(term, "c1400012345600007f1234560000") != NULL, "Terminate fields: %s", term);

    free(v);
    free(ops);
    free(prot);
    free(mpa);
    free(rr);
    free(term);
    free(c);
    unlink(path);
    rmdir(dir);
    printf("tshark: OK\n");
    return 0;
}
