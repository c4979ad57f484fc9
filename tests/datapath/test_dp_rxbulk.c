/* test_dp_rxbulk: a receiver that fell behind reads several segments per call through its
 * staging buffer (rx.c rx_layout, rx->bulk). A raw socket plays the peer and queues a backlog
 * while the QP's RX engine is held off (its rx_owned): large RDMA Writes in regular and
 * irregular segments, a two-segment Send, small Sends between them, then the rest of the stream
 * after the engine runs again. Every Write must land byte for byte where its segments say,
 * every Send in its receive with its length, and not one byte elsewhere in the region may
 * change (the receives' bytes past what their Send brought included); the engine must have
 * taken bulk reads, fewer reads than there were segments.
 *
 *   test_dp_rxbulk crc|nocrc whole|random */
#include "dptest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WIRE_RND_SEED 0xb01c5eedu
#include "wire/wire_rnd.h"

static struct dpt_env env;
static struct dpt_mr m;
static bool crc_on, split_random;

#define FILLER 0x5C
#define SEG 65456u                 /* a Write segment at the loopback MSS */
#define W1_OFF 4096u
#define W1_LEN (10u * SEG + 777u)
#define W2_OFF (W1_OFF + W1_LEN + 8192u)
#define W2_LEN (3u * SEG + 12345u)
#define R1_OFF (W2_OFF + W2_LEN + 8192u)
#define R1_LEN (160u << 10)        /* receive for the two-segment Send */
#define S1_LEN (SEG + 40000u)
#define R2_OFF (R1_OFF + R1_LEN + 4096u)
#define R_SMALL 256u               /* receives for the small Sends, one after another */
#define NSMALL 4
#define REGION (R2_OFF + NSMALL * R_SMALL + 4096u)

struct stream {
    uint8_t *p;
    size_t len, cap;
    unsigned nseg;
};

static void put(struct stream *s, const struct iw_fpdu_hdr *h, const uint8_t *pay, size_t len)
{
    struct iw_iov v = { pay, len };
    int n = iw_fpdu_build(h, &v, len ? 1 : 0, crc_on, s->p + s->len, s->cap - s->len);
    CHECK(n > 0);
    s->len += (size_t)n;
    s->nseg++;
}

/* One Write of len bytes to region offset off, in segments of the sizes in seg[] (the last
 * one repeated), taken from pay. */
static void put_write(struct stream *s, size_t off, const uint8_t *pay, size_t len, const uint32_t *seg, int nseg)
{
    size_t done = 0;
    for (int i = 0; done < len; i++) {
        struct iw_fpdu_hdr h;
        size_t l = seg[i < nseg ? i : nseg - 1];
        if (l > len - done)
            l = len - done;
        memset(&h, 0, sizeof h);
        h.opcode = IW_OP_WRITE;
        h.stag = m.token;
        h.to = (uint64_t)(uintptr_t)(m.p + off + done);
        h.last = done + l == len;
        put(s, &h, pay + done, l);
        done += l;
    }
}

/* One Send of len bytes (MSN msn) in segments of at most SEG bytes. */
static void put_send(struct stream *s, uint32_t msn, const uint8_t *pay, size_t len)
{
    size_t done = 0;
    do {
        struct iw_fpdu_hdr h;
        size_t l = len - done < SEG ? len - done : SEG;
        memset(&h, 0, sizeof h);
        h.opcode = IW_OP_SEND;
        h.qn = IW_QN_SEND;
        h.msn = msn;
        h.mo = (uint32_t)done;
        h.last = done + l == len;
        put(s, &h, pay + done, l);
        done += l;
    } while (done < len);
}

/* Writes what the socket takes now without blocking; returns how much. */
static size_t send_now(int fd, const uint8_t *p, size_t len)
{
    size_t sent = 0;
    while (sent < len) {
        size_t chunk = len - sent;
        if (split_random && chunk > 1)
            chunk = 1 + (size_t)(rnd() % (chunk < 9000 ? chunk : 9000));
        ssize_t n = send(fd, p + sent, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        CHECK_MSG(n > 0, "send: n=%zd errno=%d", n, errno);
        sent += (size_t)n;
    }
    return sent;
}

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 3, "usage: test_dp_rxbulk crc|nocrc whole|random");
    crc_on = !strcmp(argv[1], "crc");
    split_random = !strcmp(argv[2], "random");
    dpt_env_init(&env);
    dpt_mr_reg(&env, &m, REGION, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    memset(m.p, FILLER, m.len);

    struct dpt_conn_opts o;
    memset(&o, 0, sizeof o);
    o.crc = crc_on;
    int fd = dpt_connect_raw(&env, &o);
    int big = 8 << 20;
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);

    NDK_SGE r1 = { .VirtualAddress = m.p + R1_OFF, .Length = R1_LEN, .MemoryRegionToken = m.token };
    CHECK_STATUS(iw_post_receive(env.s[0].ndk, (void *)0x100, &r1, 1), STATUS_SUCCESS);
    for (int i = 0; i < NSMALL; i++) {
        NDK_SGE r = { .VirtualAddress = m.p + R2_OFF + (size_t)i * R_SMALL, .Length = R_SMALL,
                      .MemoryRegionToken = m.token };
        CHECK_STATUS(iw_post_receive(env.s[0].ndk, (void *)(uintptr_t)(0x200 + i), &r, 1), STATUS_SUCCESS);
    }

    uint8_t *w1 = malloc(W1_LEN), *w2 = malloc(W2_LEN), *s1 = malloc(S1_LEN), small[NSMALL][64];
    struct stream s = { .cap = W1_LEN + W2_LEN + S1_LEN + 65536 };
    s.p = malloc(s.cap);
    CHECK(w1 && w2 && s1 && s.p);
    dpt_fill(w1, W1_LEN, 11);
    dpt_fill(w2, W2_LEN, 22);
    dpt_fill(s1, S1_LEN, 33);
    for (int i = 0; i < NSMALL; i++)
        dpt_fill(small[i], sizeof small[i], 40 + (uint32_t)i);

    /* Receives take Sends in the order they were posted (MSN 1 is the long one). Write 2's
     * segments are irregular: one byte, a short one, one below the staging threshold
     * (DP_RX_SMALL) and a tiny one between full ones. */
    static const uint32_t seg1[] = { SEG };
    static const uint32_t seg2[] = { 1, 40000, SEG, 8191, 300, SEG };
    put_write(&s, W1_OFF, w1, W1_LEN, seg1, 1);
    put_send(&s, 1, s1, S1_LEN);
    put_send(&s, 2, small[0], 40);
    put_write(&s, W2_OFF, w2, W2_LEN, seg2, 6);
    put_send(&s, 3, small[1], 64);
    put_send(&s, 4, small[2], 1);
    put_send(&s, 5, small[3], 17);

    uint64_t reads0 = dpt_rx_reads(&env);
    uint64_t bulk0 = dpt_rx_bulk_reads(&env);
    /* The backlog: all the socket takes while the engine cannot read, then the rest. */
    dp_rx_own_wait(env.s[0].qp->dp);
    size_t early = send_now(fd, s.p, s.len);
    dp_rx_own_release(env.s[0].qp->dp);
    dpt_raw_send(fd, s.p + early, s.len - early);

    dpt_expect(&env, 0, NdkOperationTypeReceive, (void *)0x100, STATUS_SUCCESS, S1_LEN);
    dpt_expect(&env, 0, NdkOperationTypeReceive, (void *)0x200, STATUS_SUCCESS, 40);
    dpt_expect(&env, 0, NdkOperationTypeReceive, (void *)0x201, STATUS_SUCCESS, 64);
    dpt_expect(&env, 0, NdkOperationTypeReceive, (void *)0x202, STATUS_SUCCESS, 1);
    dpt_expect(&env, 0, NdkOperationTypeReceive, (void *)0x203, STATUS_SUCCESS, 17);
    uint64_t reads = dpt_rx_reads(&env) - reads0;
    uint64_t bulk = dpt_rx_bulk_reads(&env) - bulk0;

    CHECK_MSG(!memcmp(m.p + W1_OFF, w1, W1_LEN), "Write 1 landed wrong");
    CHECK_MSG(!memcmp(m.p + W2_OFF, w2, W2_LEN), "Write 2 landed wrong");
    CHECK_MSG(!memcmp(m.p + R1_OFF, s1, S1_LEN), "the long Send landed wrong");
    static const size_t small_len[NSMALL] = { 40, 64, 1, 17 };
    for (int i = 0; i < NSMALL; i++)
        CHECK_MSG(!memcmp(m.p + R2_OFF + (size_t)i * R_SMALL, small[i], small_len[i]), "small Send %d wrong", i);
    for (size_t i = 0; i < m.len; i++) {
        bool in = (i >= W1_OFF && i < W1_OFF + W1_LEN) || (i >= W2_OFF && i < W2_OFF + W2_LEN) ||
                  (i >= R1_OFF && i < R1_OFF + S1_LEN);
        for (int k = 0; k < NSMALL; k++)
            in = in || (i >= R2_OFF + (size_t)k * R_SMALL && i < R2_OFF + (size_t)k * R_SMALL + small_len[k]);
        CHECK_MSG(in || m.p[i] == FILLER, "byte %zu outside every message changed", i);
    }
    CHECK(dpt_mr_guard_ok(&m));
    printf("  %u segments (%zu bytes, %zu queued before the engine ran): %llu reads, %llu of them bulk\n", s.nseg,
           s.len, early, (unsigned long long)reads, (unsigned long long)bulk);
    /* A backlog is read several segments at a time: with one segment per read (the layout
     * for a receiver that keeps up) there would be at least as many reads as segments. */
    CHECK_MSG(early >= 2u * SEG, "only %zu bytes queued: no backlog to test", early);
    CHECK_MSG(bulk > 0, "no bulk read of the backlog");
    CHECK_MSG(reads < s.nseg, "%llu reads for %u segments", (unsigned long long)reads, s.nseg);

    close(fd);
    dpt_disconnect(&env);
    dpt_mr_free(&env, &m);
    dpt_env_fini(&env);
    free(w1);
    free(w2);
    free(s1);
    free(s.p);
    printf("dp_rxbulk %s %s: ok\n", argv[1], argv[2]);
    return 0;
}
