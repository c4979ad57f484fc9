/* test_dp_rxmulti: the RX engine reads several Read Response segments per readv() straight into
 * the Read's sink, laid out from a prediction (rx.c rx_layout). A raw socket plays the responder
 * and sends the response whole, in random pieces or a byte at a time: regular segments,
 * irregular ones and an interleaved Send (legal: each must still land where it belongs), and a
 * segment that deviates from the prediction at each header field, or with one CRC bit flipped
 * (a Terminate with the RFC code, the Read failed). Whatever happens, not one byte outside the
 * Read's sink range (nor the receive buffer of the Send) may change.
 *
 *   test_dp_rxmulti crc|nocrc whole|random|onebyte */
#include "dptest.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WIRE_RND_SEED 0x51ce5eedu
#include "wire/wire_rnd.h"

static struct dpt_env env;
static struct dpt_mr m;
static bool crc_on;
static enum { SPLIT_WHOLE, SPLIT_RANDOM, SPLIT_ONEBYTE } split;
static uint32_t seg_size, read_size;

#define SINK_OFF 4096u
#define RECV_OFF (SINK_OFF + read_size + 8192u)
#define RECV_LEN 256u
#define FILLER 0x5C

static void raw_send(int fd, const uint8_t *p, size_t len)
{
    while (len) {
        size_t chunk = len;
        if (split == SPLIT_ONEBYTE)
            chunk = 1;
        else if (split == SPLIT_RANDOM)
            chunk = 1 + (size_t)(rnd() % 6000);
        if (chunk > len)
            chunk = len;
        ssize_t n = send(fd, p, chunk, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
            return;                               /* the QP tore the connection down: fine */
        CHECK_MSG(n > 0, "send: n=%zd errno=%d", n, errno);
        p += n;
        len -= (size_t)n;
    }
}

static size_t build(const struct iw_fpdu_hdr *h, const void *pay, size_t len, uint8_t *out, size_t cap)
{
    struct iw_iov v = { pay, len };
    int n = iw_fpdu_build(h, &v, len ? 1 : 0, crc_on, out, cap);
    CHECK(n > 0);
    return (size_t)n;
}

/* Reads what the QP sends until want_opcode's header; returns it. */
static struct iw_fpdu_hdr read_until(int fd, struct iw_fpdu_rx *rx, uint8_t want_opcode)
{
    uint8_t buf[4096];
    uint64_t end = ndk_test_now_ms() + 10000;

    for (;;) {
        struct pollfd pf = { fd, POLLIN, 0 };
        CHECK_MSG(ndk_test_now_ms() < end, "no %s within 10 s", iw_fpdu_opcode_name(want_opcode));
        if (poll(&pf, 1, 100) <= 0)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT | MSG_PEEK);
        CHECK_MSG(n > 0, "connection closed early (n=%zd errno=%d)", n, errno);
        size_t pos = 0;
        while (pos < (size_t)n) {
            struct iw_fpdu_event ev;
            size_t used;
            enum iw_fpdu_ev_type t = iw_fpdu_rx_step(rx, buf + pos, (size_t)n - pos, &used, &ev);
            pos += used;
            CHECK(t != IW_FPDU_EV_ERROR);
            if (t == IW_FPDU_EV_END && ev.hdr->opcode == want_opcode) {
                CHECK(recv(fd, buf, pos, MSG_DONTWAIT) == (ssize_t)pos);
                return *ev.hdr;
            }
        }
        CHECK(recv(fd, buf, pos, MSG_DONTWAIT) == (ssize_t)pos);
    }
}

enum deviate { DEV_NONE, DEV_IRREGULAR, DEV_SEND, DEV_STAG, DEV_TO, DEV_LEN, DEV_LAST, DEV_OPCODE, DEV_CRC, DEV_COUNT };
static const char *const dev_name[DEV_COUNT] = {
    "regular", "irregular segments", "interleaved Send", "STag", "TO", "length", "L flag", "opcode", "CRC bit",
};

/* The segment size of segment i of the response. */
static uint32_t seg_len(enum deviate d, unsigned i)
{
    static const uint32_t irr[] = { 0, 16384, 1, 40000, 8191, 0, 2, 30000 };
    if (d == DEV_IRREGULAR && i < sizeof irr / sizeof irr[0] && irr[i] && split != SPLIT_ONEBYTE)
        return irr[i];
    if (d == DEV_IRREGULAR && split == SPLIT_ONEBYTE && (i == 1 || i == 3))
        return i == 1 ? 100 : seg_size + 700;
    return seg_size;
}

static void run(enum deviate d)
{
    struct dpt_conn_opts o;
    struct iw_fpdu_rx rx;
    struct iw_fpdu_rx_cfg cfg = { .crc = crc_on };
    struct iw_fpdu_hdr h, rr;
    uint8_t *pay = malloc(read_size), *stream = malloc((size_t)read_size * 2 + 65536);
    size_t slen = 0;
    uint32_t miss = 0;
    int fd;

    CHECK(pay && stream);
    memset(&o, 0, sizeof o);
    o.crc = crc_on;
    fd = dpt_connect_raw(&env, &o);
    int big = 8 << 20;
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
    memset(m.p, FILLER, m.len);
    uint64_t reads0 = dpt_rx_reads(&env);

    if (d == DEV_SEND) {
        NDK_SGE r = { .VirtualAddress = m.p + RECV_OFF, .Length = RECV_LEN, .MemoryRegionToken = m.token };
        CHECK_STATUS(iw_post_receive(env.s[0].ndk, (void *)0x77, &r, 1), STATUS_SUCCESS);
    }
    NDK_SGE s = { .VirtualAddress = m.p + SINK_OFF, .Length = read_size, .MemoryRegionToken = m.token };
    CHECK_STATUS(iw_post_read(env.s[0].ndk, (void *)0x99, &s, 1, 0x1000, 0x4242, 0), STATUS_SUCCESS);
    iw_fpdu_rx_init(&rx, &cfg);
    rr = read_until(fd, &rx, IW_OP_READ_REQ);
    CHECK_EQ(rr.rr.size, read_size);
    CHECK_EQ(rr.rr.src_stag, 0x4242);

    dpt_fill(pay, read_size, 1234 + (uint32_t)d);
    uint32_t done = 0;
    unsigned nseg = 0;
    bool expect_ok = d == DEV_NONE || d == DEV_IRREGULAR || d == DEV_SEND;
    while (done < read_size) {
        uint32_t len = seg_len(d, nseg);
        if (len > read_size - done)
            len = read_size - done;
        memset(&h, 0, sizeof h);
        h.opcode = IW_OP_READ_RESP;
        h.stag = rr.rr.sink_stag;
        h.to = rr.rr.sink_to + done;
        h.last = done + len == read_size;
        if (nseg == 2) {
            switch (d) {
            case DEV_STAG: h.stag ^= 1; break;
            case DEV_TO: h.to += 4; break;
            case DEV_LAST: h.last = true; break;
            case DEV_OPCODE: h.opcode = IW_OP_WRITE; h.stag = m.token; h.to = (uint64_t)(uintptr_t)(m.p + RECV_OFF); break;
            default: break;
            }
        }
        if (d == DEV_LEN && h.last)
            len += 100;                           /* the last segment runs past the sink */
        if (len > read_size - done) {
            /* DEV_LEN: the segment runs past the sink; its tail bytes come from the filler. */
            uint8_t *tmp = malloc(len);
            CHECK(tmp);
            memcpy(tmp, pay + done, read_size - done);
            memset(tmp + (read_size - done), 0xA5, len - (read_size - done));
            slen += build(&h, tmp, len, stream + slen, (size_t)read_size * 2 + 65536 - slen);
            free(tmp);
            break;
        }
        size_t at = slen;
        slen += build(&h, pay + done, len, stream + slen, (size_t)read_size * 2 + 65536 - slen);
        if (d == DEV_CRC && nseg == 3)
            stream[at + 16 + 100] ^= 0x10;                  /* one payload bit */
        if (d == DEV_SEND && nseg == 1) {
            struct iw_fpdu_hdr sh;
            uint8_t msg[RECV_LEN];
            memset(&sh, 0, sizeof sh);
            sh.opcode = IW_OP_SEND;
            sh.last = true;
            sh.qn = IW_QN_SEND;
            sh.msn = 1;
            dpt_fill(msg, sizeof msg, 77);
            slen += build(&sh, msg, sizeof msg, stream + slen, (size_t)read_size * 2 + 65536 - slen);
        }
        done += len;
        nseg++;
        if (d == DEV_LAST && nseg == 3)
            break;                                /* the Read was cut short: nothing more */
    }
    if (d == DEV_CRC && !crc_on)
        expect_ok = true;                         /* nobody checks: the flipped byte lands */
    raw_send(fd, stream, slen);

    NDK_RESULT_EX r;
    if (expect_ok) {
        if (d == DEV_SEND) {
            dpt_poll(&env, 0, &r, 10000);
            CHECK(r.RequestContext == (void *)0x77);
            CHECK_STATUS(r.Status, STATUS_SUCCESS);
            CHECK_EQ(r.BytesTransferred, RECV_LEN);
            CHECK(dpt_check(m.p + RECV_OFF, RECV_LEN, 77));
        }
        dpt_poll(&env, 0, &r, 10000);
        CHECK(r.RequestContext == (void *)0x99);
        CHECK_STATUS(r.Status, STATUS_SUCCESS);
        miss = env.s[0].qp->dp->rx.spec_miss;    /* connection still up: dp is there */
        if (d == DEV_CRC) {
            CHECK(!dpt_check(m.p + SINK_OFF, read_size, 1234 + (uint32_t)d));
        } else {
            CHECK_MSG(dpt_check(m.p + SINK_OFF, read_size, 1234 + (uint32_t)d), "%s: sink data wrong", dev_name[d]);
        }
    } else {
        struct iw_fpdu_hdr t = read_until(fd, &rx, IW_OP_TERMINATE);
        uint8_t layer = IW_TERM_LAYER_DDP, etype = IW_TERM_ETYPE_DDP_TAGGED, ecode = IW_TERM_DDP_T_BASE_BOUNDS;
        if (d == DEV_STAG)
            ecode = IW_TERM_DDP_T_INV_STAG;
        if (d == DEV_OPCODE) {
            layer = IW_TERM_LAYER_RDMAP;
            etype = IW_TERM_ETYPE_RDMAP_REMOTE_OP;
            ecode = IW_TERM_RDMAP_OPCODE;
        }
        if (d == DEV_CRC) {
            layer = IW_TERM_LAYER_LLP;
            etype = IW_TERM_ETYPE_LLP_MPA;
            ecode = IW_TERM_LLP_CRC;
        }
        CHECK_MSG(t.term.layer == layer && t.term.etype == etype && t.term.ecode == ecode,
                  "%s: Terminate layer %u etype %u code 0x%02x, want %u %u 0x%02x", dev_name[d], t.term.layer,
                  t.term.etype, t.term.ecode, layer, etype, ecode);
        dpt_wait_lost(&env, 0, 5000);
        dpt_poll(&env, 0, &r, 5000);
        CHECK(r.RequestContext == (void *)0x99);
        CHECK_MSG(r.Status != STATUS_SUCCESS, "%s: the Read succeeded", dev_name[d]);
        CHECK(!dpt_try_poll(&env, 0, &r, 50));
    }
    /* Not one byte outside the sink (and the receive buffer, when one was posted and used). */
    for (size_t i = 0; i < m.len; i++) {
        bool in_sink = i >= SINK_OFF && i < SINK_OFF + read_size;
        bool in_recv = d == DEV_SEND && i >= RECV_OFF && i < RECV_OFF + RECV_LEN;
        CHECK_MSG(in_sink || in_recv || m.p[i] == FILLER, "%s: byte %zu outside the sink changed", dev_name[d], i);
    }
    CHECK(dpt_mr_guard_ok(&m));
    printf("  %-18s %2u segments, %4llu reads, %u segments not where foreseen\n", dev_name[d], nseg,
           (unsigned long long)(dpt_rx_reads(&env) - reads0), miss);
    close(fd);
    dpt_disconnect(&env);
    free(pay);
    free(stream);
}

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 3, "usage: test_dp_rxmulti crc|nocrc whole|random|onebyte");
    crc_on = !strcmp(argv[1], "crc");
    split = !strcmp(argv[2], "onebyte") ? SPLIT_ONEBYTE : !strcmp(argv[2], "random") ? SPLIT_RANDOM : SPLIT_WHOLE;
    /* Segments above the staging size, so the engine reads ahead; fewer bytes one at a time. */
    seg_size = split == SPLIT_ONEBYTE ? 9000 : 32748;
    read_size = split == SPLIT_ONEBYTE ? 5 * 9000 + 123 : 10 * 32748 + 1000;
    dpt_env_init(&env);
    dpt_mr_reg(&env, &m, (size_t)read_size + 2 * 8192 + 8192, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (int d = 0; d < DEV_COUNT; d++)
        run((enum deviate)d);
    dpt_mr_free(&env, &m);
    dpt_env_fini(&env);
    printf("dp_rxmulti %s %s: ok\n", argv[1], argv[2]);
    return 0;
}
