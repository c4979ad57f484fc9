/* test_dp_hostile: a raw socket plays a hostile (or merely wrong) peer against one QP. Every bad
 * segment must give exactly one Terminate with the RFC 5040/5041/5044 codes, a torn-down QP, the
 * affected local request completed with the mapped status, and not one byte written outside
 * (or, for a rejected segment, inside) the registered region. */
#include "dptest.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crc32c.h"

static struct dpt_env env;
static struct dpt_mr m;
static bool crc_on;

static size_t build(const struct iw_fpdu_hdr *h, const void *pay, size_t len, uint8_t *out, size_t cap)
{
    struct iw_iov v = { pay, len };
    int n = iw_fpdu_build(h, &v, len ? 1 : 0, crc_on, out, cap);
    CHECK(n > 0);
    return (size_t)n;
}

/* Connection with one posted receive of 256 bytes at m.p + 1024. */
static int setup(void)
{
    struct dpt_conn_opts o;
    memset(&o, 0, sizeof o);
    o.crc = crc_on;
    int fd = dpt_connect_raw(&env, &o);
    memset(m.p, 0, m.len);
    NDK_SGE r = { .VirtualAddress = m.p + 1024, .Length = 256, .MemoryRegionToken = m.token };
    CHECK_STATUS(iw_post_receive(env.s[0].ndk, (void *)0x77, &r, 1), STATUS_SUCCESS);
    return fd;
}

/* Waits for the teardown and the receive's one completion. The completion is also what
 * orders our reads of the region after the RX engine's writes (as for any consumer). */
static void settle(NTSTATUS recv_status)
{
    NDK_RESULT_EX r;
    dpt_wait_lost(&env, 0, 5000);
    dpt_poll(&env, 0, &r, 2000);
    CHECK(r.RequestContext == (void *)0x77);
    CHECK_STATUS(r.Status, recv_status);
    CHECK(!dpt_try_poll(&env, 0, &r, 50));            /* exactly one completion */
}

static void done(int fd)
{
    CHECK(dpt_mr_guard_ok(&m));
    close(fd);
    dpt_disconnect(&env);
}

static void finish(int fd, NTSTATUS recv_status)
{
    settle(recv_status);
    done(fd);
}

static bool region_zero(void)
{
    for (size_t i = 0; i < m.len; i++)
        if (m.p[i])
            return false;
    return true;
}

int main(int argc, char **argv)
{
    uint8_t f[70000], pay[4096];
    struct iw_fpdu_hdr h, t;
    int fd;

    crc_on = argc > 1 && !strcmp(argv[1], "crc");
    dpt_env_init(&env);
    dpt_mr_reg(&env, &m, 16384, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    memset(pay, 0xAB, sizeof pay);
    uint64_t base = (uint64_t)(uintptr_t)m.p;

    /* 1. Write with a stale key: DDP tagged invalid STag (RFC 5041 §7.2), M+D attached. */
    fd = setup();
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_WRITE;
    h.last = true;
    h.stag = m.token ^ 0x5A;
    h.to = base;
    dpt_raw_send(fd, f, build(&h, pay, 100, f, sizeof f));
    t = dpt_read_term(fd, crc_on, NULL);
    dpt_expect_term(&t, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_INV_STAG,
                IW_TERM_HDRCT_M | IW_TERM_HDRCT_D);
    CHECK_EQ(t.term.ddp_hdr_len, IW_DDP_TAGGED_HDR_LEN);
    settle(STATUS_ACCESS_VIOLATION);
    CHECK(region_zero());
    done(fd);

    /* 2. Write crossing the end of the region: base/bounds. */
    fd = setup();
    h.stag = m.token;
    h.to = base + m.len - 10;
    dpt_raw_send(fd, f, build(&h, pay, 100, f, sizeof f));
    t = dpt_read_term(fd, crc_on, NULL);
    dpt_expect_term(&t, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_BASE_BOUNDS,
                IW_TERM_HDRCT_M | IW_TERM_HDRCT_D);
    settle(STATUS_REMOTE_RESOURCES);
    CHECK(region_zero());
    done(fd);

    /* 3. Write below the base, TO wrap. */
    fd = setup();
    h.to = UINT64_MAX - 10;
    dpt_raw_send(fd, f, build(&h, pay, 100, f, sizeof f));
    t = dpt_read_term(fd, crc_on, NULL);
    dpt_expect_term(&t, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_TO_WRAP,
                IW_TERM_HDRCT_M | IW_TERM_HDRCT_D);
    settle(STATUS_ACCESS_VIOLATION);
    CHECK(region_zero());
    done(fd);

    /* 4. Read Request for a region without remote read: RDMAP access violation with R. */
    fd = setup();
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_READ_REQ;
    h.msn = 1;
    h.rr.sink_stag = 0x1234;
    h.rr.size = 64;
    h.rr.src_stag = m.token;
    h.rr.src_to = base;
    dpt_raw_send(fd, f, build(&h, NULL, 0, f, sizeof f));
    t = dpt_read_term(fd, crc_on, NULL);
    dpt_expect_term(&t, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_PROT, IW_TERM_RDMAP_ACCESS,
                IW_TERM_HDRCT_M | IW_TERM_HDRCT_D | IW_TERM_HDRCT_R);
    finish(fd, STATUS_ACCESS_VIOLATION);

    /* 4b. Read Request whose sink range wraps 2^64, from a source the peer may read: refused
     * with RDMAP TO wrap before any Read Response (each would carry a TO + length that wraps,
     * which the requester must reject). Found by fuzz_rx. */
    {
        struct dpt_mr src;
        struct iw_fpdu_hdr other;
        dpt_mr_reg(&env, &src, 4096, NDK_MR_FLAG_ALLOW_REMOTE_READ);
        fd = setup();
        memset(&h, 0, sizeof h);
        h.opcode = IW_OP_READ_REQ;
        h.msn = 1;
        h.rr.sink_stag = 0x1234;
        h.rr.sink_to = UINT64_MAX - 10;
        h.rr.size = 64;
        h.rr.src_stag = src.token;
        h.rr.src_to = (uint64_t)(uintptr_t)src.p;
        dpt_raw_send(fd, f, build(&h, NULL, 0, f, sizeof f));
        t = dpt_read_term(fd, crc_on, &other);
        dpt_expect_term(&t, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_PROT, IW_TERM_RDMAP_TO_WRAP,
                        IW_TERM_HDRCT_M | IW_TERM_HDRCT_D | IW_TERM_HDRCT_R);
        CHECK(other.opcode != IW_OP_READ_RESP);   /* no Read Response went out before it */
        finish(fd, STATUS_ACCESS_VIOLATION);
        dpt_mr_free(&env, &src);
    }

    /* 5. Send with a wrong MSN: DDP untagged MSN out of range. */
    fd = setup();
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_SEND;
    h.last = true;
    h.msn = 5;
    dpt_raw_send(fd, f, build(&h, pay, 10, f, sizeof f));
    t = dpt_read_term(fd, crc_on, NULL);
    dpt_expect_term(&t, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_MSN_RANGE,
                IW_TERM_HDRCT_M | IW_TERM_HDRCT_D);
    settle(STATUS_CANCELLED);
    CHECK(region_zero());
    done(fd);

    /* 6. Send longer than the receive (two segments; the second overflows): too long, and the
     * receive reports BUFFER_TOO_SMALL; nothing beyond the receive buffer is written. */
    fd = setup();
    h.msn = 1;
    h.last = false;
    size_t n1 = build(&h, pay, 200, f, sizeof f);
    h.last = true;
    h.mo = 200;
    size_t n2 = build(&h, pay, 100, f + n1, sizeof f - n1);
    dpt_raw_send(fd, f, n1 + n2);
    t = dpt_read_term(fd, crc_on, NULL);
    dpt_expect_term(&t, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_TOO_LONG,
                IW_TERM_HDRCT_M | IW_TERM_HDRCT_D);
    settle(STATUS_BUFFER_TOO_SMALL);
    for (size_t i = 0; i < m.len; i++)
        CHECK(m.p[i] == ((i >= 1024 && i < 1224) ? 0xAB : 0));
    done(fd);

    /* 7. Unknown opcode (RFC 7306 Immediate Data): RDMAP unexpected opcode. */
    fd = setup();
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_SEND;
    h.last = true;
    h.msn = 1;
    size_t n7 = build(&h, pay, 8, f, sizeof f);
    f[IW_OFF_RDMAP_CTRL] = (uint8_t)(IW_RDMAP_VERSION << IW_RDMAP_CTRL_RV_SHIFT | IW_OP_IMM_DATA);
    dpt_raw_send(fd, f, n7);
    t = dpt_read_term(fd, crc_on, NULL);
    dpt_expect_term(&t, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE, 0);
    finish(fd, STATUS_CANCELLED);

    /* 8. Bad CRC (when negotiated): LLP CRC error, no header attached. */
    if (crc_on) {
        fd = setup();
        memset(&h, 0, sizeof h);
        h.opcode = IW_OP_WRITE;
        h.last = true;
        h.stag = m.token;
        h.to = base;
        size_t n8 = build(&h, pay, 100, f, sizeof f);
        f[n8 - 1] ^= 1;
        dpt_raw_send(fd, f, n8);
        t = dpt_read_term(fd, crc_on, NULL);
        dpt_expect_term(&t, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA, IW_TERM_LLP_CRC, 0);
        finish(fd, STATUS_CANCELLED);
    }

    /* 9. Truncated frame, then FIN: clean teardown, the receive is flushed. */
    fd = setup();
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_SEND;
    h.last = true;
    h.msn = 1;
    size_t n9 = build(&h, pay, 100, f, sizeof f);
    dpt_raw_send(fd, f, n9 / 2);
    shutdown(fd, SHUT_WR);
    finish(fd, STATUS_CANCELLED);

    /* 10. Send with no receive posted: DDP untagged "no buffer" (iWARP has no RNR retry). */
    {
        struct dpt_conn_opts o;
        memset(&o, 0, sizeof o);
        o.crc = crc_on;
        fd = dpt_connect_raw(&env, &o);
        dpt_raw_send(fd, f, build(&h, pay, 10, f, sizeof f));
        t = dpt_read_term(fd, crc_on, NULL);
        dpt_expect_term(&t, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_MSN_NOBUF,
                    IW_TERM_HDRCT_M | IW_TERM_HDRCT_D);
        dpt_wait_lost(&env, 0, 5000);
        close(fd);
        dpt_disconnect(&env);
    }

    /* 11. The peer's Terminate, siw's swapped layout (fpdu.h): our outstanding
     * Read completes with the decoded reason (RDMAP remote protection / invalid STag). */
    for (int layout = 0; layout < 2; layout++) {
        fd = setup();
        NDK_SGE s = { .VirtualAddress = m.p, .Length = 64, .MemoryRegionToken = m.token };
        CHECK_STATUS(iw_post_read(env.s[0].ndk, (void *)0x88, &s, 1, 0x1000, 0x4242, 0), STATUS_SUCCESS);
        /* wait for the Read Request */
        struct iw_fpdu_rx rx;
        struct iw_fpdu_rx_cfg cfg = { .crc = crc_on };
        iw_fpdu_rx_init(&rx, &cfg);
        bool got = false;
        while (!got) {
            struct pollfd pf = { fd, POLLIN, 0 };
            CHECK(poll(&pf, 1, 5000) == 1);
            ssize_t n = recv(fd, f, sizeof f, 0);
            CHECK(n > 0);
            size_t pos = 0;
            while (pos < (size_t)n) {
                struct iw_fpdu_event ev;
                size_t used;
                if (iw_fpdu_rx_step(&rx, f + pos, (size_t)n - pos, &used, &ev) == IW_FPDU_EV_HEADER) {
                    CHECK_EQ(ev.hdr->opcode, IW_OP_READ_REQ);
                    CHECK_EQ(ev.hdr->rr.size, 64);
                    CHECK_EQ(ev.hdr->rr.src_stag, 0x4242);
                    CHECK_EQ(ev.hdr->msn, 1);
                    got = true;
                }
                pos += used;
            }
        }
        memset(&h, 0, sizeof h);
        h.opcode = IW_OP_TERMINATE;
        h.msn = 1;
        h.term.layer = IW_TERM_LAYER_RDMAP;
        h.term.etype = IW_TERM_ETYPE_RDMAP_REMOTE_PROT;
        h.term.ecode = IW_TERM_RDMAP_INV_STAG;
        size_t nt = build(&h, NULL, 0, f, sizeof f);
        if (layout == 1) {
            /* siw on x86: "10 00 07 00" for RDMAP remote protection / invalid STag, M+D+R */
            f[IW_OFF_TERM_CTRL] = 0x10;
            f[IW_OFF_TERM_CTRL + 1] = 0x00;
            f[IW_OFF_TERM_CTRL + 2] = 0x07;
            if (crc_on) {
                uint32_t c = iw_crc32c(f, nt - 4);
                iw_put_le32(f + nt - 4, c);
            }
        }
        dpt_raw_send(fd, f, nt);
        dpt_wait_lost(&env, 0, 5000);
        /* two completions, one per queue (no order between the queues, §5.6) */
        for (int k = 0; k < 2; k++) {
            NDK_RESULT_EX r;
            dpt_poll(&env, 0, &r, 2000);
            if (r.RequestContext == (void *)0x77) {
                CHECK_STATUS(r.Status, STATUS_CANCELLED);  /* the receive: flushed */
            } else {
                CHECK(r.RequestContext == (void *)0x88);
                CHECK_STATUS(r.Status, STATUS_ACCESS_VIOLATION);
                CHECK_EQ(r.ProviderErrorCode, IW_PEC(IW_PEC_REMOTE, 0, 1, 0));
            }
        }
        close(fd);
        dpt_disconnect(&env);
    }

    /* 12. A local request fails (Invalidate of a window never bound): the request completes
     * with an error, the one FPDU that goes out is our Terminate (RDMAP local catastrophic). */
    {
        NDK_MW *mw;
        struct iw_fpdu_hdr other;
        CHECK_STATUS(env.pd->Dispatch->NdkCreateMw(env.pd, NULL, NULL, &mw), STATUS_SUCCESS);
        fd = setup();
        CHECK_STATUS(iw_post_invalidate(env.s[0].ndk, (void *)0x99, &mw->Header, 0), STATUS_SUCCESS);
        t = dpt_read_term(fd, crc_on, &other);
        CHECK_EQ(other.opcode, 0);                     /* nothing before the Terminate */
        dpt_expect_term(&t, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_CATASTROPHIC, IW_TERM_RDMAP_UNSPECIFIED, 0);
        dpt_wait_lost(&env, 0, 5000);
        for (int k = 0; k < 2; k++) {
            NDK_RESULT_EX r;
            dpt_poll(&env, 0, &r, 2000);
            if (r.RequestContext == (void *)0x99)
                CHECK_STATUS(r.Status, STATUS_ACCESS_VIOLATION);
            else
                CHECK_STATUS(r.Status, STATUS_CANCELLED);
        }
        done(fd);
        NTSTATUS st = mw->Dispatch->NdkCloseMw(&mw->Header, NULL, NULL);
        CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    }

    /* 13. The peer resets the connection in the middle of a segment (killed mid-transfer). */
    fd = setup();
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_WRITE;
    h.last = true;
    h.stag = m.token;
    h.to = base;
    size_t n13 = build(&h, pay, 4000, f, sizeof f);
    dpt_raw_send(fd, f, n13 - 1000);
    {
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(fd);
    }
    settle(STATUS_CANCELLED);
    for (size_t i = 4000; i < m.len; i++)
        CHECK(m.p[i] == 0);                            /* nothing beyond the segment */
    CHECK(dpt_mr_guard_ok(&m));
    dpt_disconnect(&env);

    dpt_mr_free(&env, &m);
    dpt_env_fini(&env);
    printf("test_dp_hostile: OK\n");
    return 0;
}
