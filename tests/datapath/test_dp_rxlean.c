/* test_dp_rxlean: the RX engine's path for small whole FPDUs (rx.c with IW_FPDU_RX_WHOLE: one
 * FRAME event for header + payload when the read holds the whole frame). A raw socket plays the
 * peer against one QP and writes whole frames in one send(), so each arrives in one read:
 *   1. several whole Sends in one read: each completes, in order, with its bytes, and each took
 *      the lean path (the deframer's FRAME count);
 *   2. a whole Send followed by part of the next: the first takes the lean path, the second the
 *      resumable one, and both complete intact;
 *   3. (CRC) after a good Send, a whole Send with one CRC bit flipped: exactly one Terminate,
 *      LLP / MPA / CRC with no header, and its receive never completes successfully;
 *   4. after a good Send, a whole Send longer than the receive, with (CRC) its CRC bit flipped
 *      too: the receive's check comes before the CRC, as on the resumable path, so the
 *      Terminate is DDP untagged "too long" with the header, and not one byte lands in the
 *      receive buffer.
 * Whole Sends take rx_frame_send (taking the receive, placing and completing it in one go):
 * cases 1, 3 and 4 check that they did.
 *
 *   test_dp_rxlean crc|nocrc */
#include "dptest.h"

#include <string.h>
#include <unistd.h>

static struct dpt_env env;
static struct dpt_mr m;
static bool crc_on;

#define RECV_LEN 256u

/* Appends a Send of len bytes of pattern seed with MSN msn to buf at *at. */
static void put_send(uint8_t *buf, size_t cap, size_t *at, uint32_t msn, size_t len, uint32_t seed)
{
    uint8_t pay[1024];
    struct iw_fpdu_hdr h;
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_SEND;
    h.last = true;
    h.msn = msn;
    CHECK(len <= sizeof pay);
    dpt_fill(pay, len, seed);
    struct iw_iov v = { pay, len };
    int n = iw_fpdu_build(&h, &v, 1, crc_on, buf + *at, cap - *at);
    CHECK(n > 0);
    *at += (size_t)n;
}

/* FRAME events the QP's deframer reported so far, and the whole Sends the engine completed
 * in one qp->lock section (read under the engine's mutex). */
static uint64_t rx_count(bool sends)
{
    struct iw_dp *dp = env.s[0].qp->dp;
    dp_rx_own_wait(dp);
    uint64_t n = sends ? dp->rx.frame_sends : dp->rx.fr.frames;
    dp_rx_own_release(dp);
    return n;
}

static uint64_t frames(void)
{
    return rx_count(false);
}

static int setup(unsigned nrecv)
{
    struct dpt_conn_opts o;
    memset(&o, 0, sizeof o);
    o.crc = crc_on;
    int fd = dpt_connect_raw(&env, &o);
    memset(m.p, 0, m.len);
    for (unsigned i = 0; i < nrecv; i++) {
        NDK_SGE r = { .VirtualAddress = m.p + 1024 + i * 512, .Length = RECV_LEN, .MemoryRegionToken = m.token };
        CHECK_STATUS(iw_post_receive(env.s[0].ndk, (void *)(uintptr_t)(0x100 + i), &r, 1), STATUS_SUCCESS);
    }
    return fd;
}

static void expect_recv(unsigned i, size_t len, uint32_t seed)
{
    NDK_RESULT_EX r;
    dpt_poll(&env, 0, &r, 5000);
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK(r.RequestContext == (void *)(uintptr_t)(0x100 + i));
    CHECK_EQ(r.BytesTransferred, len);
    CHECK(dpt_check(m.p + 1024 + i * 512, len, seed));
}

/* The connection is torn down and the receive completes once, with status. */
static void expect_failed(int fd, void *ctx, NTSTATUS status)
{
    NDK_RESULT_EX r;
    dpt_wait_lost(&env, 0, 5000);
    dpt_poll(&env, 0, &r, 2000);
    CHECK(r.RequestContext == ctx);
    CHECK_STATUS(r.Status, status);
    CHECK(!dpt_try_poll(&env, 0, &r, 50));
    CHECK(dpt_mr_guard_ok(&m));
    close(fd);
    dpt_disconnect(&env);
}

int main(int argc, char **argv)
{
    static uint8_t f[8192];
    size_t n;
    uint64_t f0;
    int fd;

    crc_on = argc > 1 && !strcmp(argv[1], "crc");
    dpt_env_init(&env);
    dpt_mr_reg(&env, &m, 1 << 16, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);

    /* 1. Three whole Sends (8 bytes, a padded 13, 200) in one read. */
    fd = setup(3);
    f0 = frames();
    n = 0;
    put_send(f, sizeof f, &n, 1, 8, 11);
    put_send(f, sizeof f, &n, 2, 13, 12);
    put_send(f, sizeof f, &n, 3, 200, 13);
    dpt_raw_send(fd, f, n);
    expect_recv(0, 8, 11);
    expect_recv(1, 13, 12);
    expect_recv(2, 200, 13);
    CHECK_EQ(frames() - f0, 3);
    /* All three were whole Sends taken and completed by rx_frame_send, the connection's first
     * FPDU too (its release of the hold-back, RFC 5044 §7.1.2, is rx_on_end's). */
    CHECK_EQ(rx_count(true), 3);
    close(fd);
    dpt_disconnect(&env);

    /* 2. A whole Send, then the next one's header and 10 bytes of its payload in the same read:
     * the rest later. (A frame whose header alone was split, and whose rest then comes whole,
     * may take the lean path: its header is complete before the payload is looked at.) */
    fd = setup(2);
    f0 = frames();
    n = 0;
    put_send(f, sizeof f, &n, 1, 8, 21);
    size_t second = n;
    put_send(f, sizeof f, &n, 2, 100, 22);
    dpt_raw_send(fd, f, second + IW_FPDU_UNTAGGED_HDR_LEN + 10);
    expect_recv(0, 8, 21);
    CHECK_EQ(frames() - f0, 1);
    dpt_raw_send(fd, f + second + IW_FPDU_UNTAGGED_HDR_LEN + 10, n - second - IW_FPDU_UNTAGGED_HDR_LEN - 10);
    expect_recv(1, 100, 22);
    CHECK_EQ(frames() - f0, 1);                 /* the split frame took the resumable path */
    close(fd);
    dpt_disconnect(&env);

    /* 3. One CRC bit flipped in a whole Send. */
    if (crc_on) {
        fd = setup(2);
        n = 0;
        put_send(f, sizeof f, &n, 1, 8, 30);
        dpt_raw_send(fd, f, n);
        expect_recv(0, 8, 30);
        f0 = frames();
        uint64_t s0 = rx_count(true);
        n = 0;
        put_send(f, sizeof f, &n, 2, 8, 31);
        f[n - 1] ^= 0x10;
        dpt_raw_send(fd, f, n);
        struct iw_fpdu_hdr t = dpt_read_term(fd, crc_on, NULL);
        dpt_expect_term(&t, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA, IW_TERM_LLP_CRC, 0);
        CHECK_EQ(frames() - f0, 1);
        CHECK_EQ(rx_count(true), s0);           /* nothing completed by rx_frame_send */
        expect_failed(fd, (void *)0x101, STATUS_DATA_ERROR);
    }

    /* 4. A Send of 300 bytes into a 256-byte receive, its CRC bit flipped as well (CRC on). */
    fd = setup(2);
    n = 0;
    put_send(f, sizeof f, &n, 1, 8, 40);
    dpt_raw_send(fd, f, n);
    expect_recv(0, 8, 40);
    memset(m.p, 0, m.len);
    f0 = frames();
    uint64_t s4 = rx_count(true);
    n = 0;
    put_send(f, sizeof f, &n, 2, 300, 41);
    if (crc_on)
        f[n - 1] ^= 0x01;
    dpt_raw_send(fd, f, n);
    struct iw_fpdu_hdr t = dpt_read_term(fd, crc_on, NULL);
    dpt_expect_term(&t, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_TOO_LONG,
                    IW_TERM_HDRCT_M | IW_TERM_HDRCT_D);
    CHECK_EQ(frames() - f0, 1);
    CHECK_EQ(rx_count(true), s4);
    for (size_t i = 0; i < m.len; i++)
        CHECK_MSG(m.p[i] == 0, "byte %zu of the region written by a refused Send", i);
    expect_failed(fd, (void *)0x101, STATUS_BUFFER_TOO_SMALL);

    dpt_mr_free(&env, &m);
    dpt_env_fini(&env);
    printf("dp_rxlean %s: OK\n", crc_on ? "crc" : "nocrc");
    return 0;
}
