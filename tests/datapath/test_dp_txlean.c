/* test_dp_txlean: the TX engine's lean path (tx.c, issue 15 item 4). A small Send,
 * Send&Invalidate or Write posted while nothing is outstanding goes to the socket from the
 * posting thread and completes at once, never queued. Checks that it is taken (dp_tx.lean_done)
 * with the bytes, MSNs, CRC and counters of the engine, that SILENT_SUCCESS holds, that it is
 * not taken behind an outstanding Read (completions stay in posting order), that a lean write
 * the socket does not take whole (a full socket of the smallest SO_SNDBUF, or a short write or
 * EAGAIN forced by the send() below) finishes through the engine intact and in order, and that
 * a lean candidate whose SGL fails its check fails as before.
 * Usage: test_dp_txlean [crc|nocrc] (direct socket pair) */
#include "dptest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct dpt_env env;
static struct dpt_mr ma, mb;

#define SLOT 512u                     /* bytes of ma / mb per message */
#define NSLOT 256u

static NDK_QP *qa(void) { return env.s[0].ndk; }
static NDK_QP *qb(void) { return env.s[1].ndk; }

/* ---- short writes on demand ----
 * The provider's sends go through iw_sys_send (sysio.h), which this definition replaces (the
 * provider's is weak): the next short_calls calls on short_fd take at most short_cap bytes, and none with
 * EAGAIN when it is 0, as a TCP socket with little room may. Only A's TX engine writes to its
 * socket, under its tx_owned. */
static atomic_int short_fd = -1;
static atomic_int short_calls;
static atomic_uint short_cap;
/* Run once, by the next send on A's socket: inside the lean path, A's tx_owned held. */
static void (*_Atomic send_hook)(void);

ssize_t iw_sys_send(int fd, const void *buf, size_t len, int flags)
{
    if (env.s[0].qp && fd == env.s[0].fd && atomic_load(&send_hook)) {
        void (*h)(void) = atomic_exchange(&send_hook, NULL);
        if (h)
            h();
    }
    if (fd == atomic_load(&short_fd) && atomic_load(&short_calls) > 0) {
        atomic_fetch_sub(&short_calls, 1);
        unsigned cap = atomic_load(&short_cap);
        if (cap == 0) {
            errno = EAGAIN;
            return -1;
        }
        if (len > cap)
            len = cap;
    }
    return sendto(fd, buf, len, flags, NULL, 0);
}

static void force_short(unsigned cap, int calls)
{
    atomic_store(&short_cap, cap);
    atomic_store(&short_calls, calls);
    atomic_store(&short_fd, env.s[0].fd);
}

/* ---- observing A's engine ---- */

struct counts {
    uint64_t lean, lean_short;        /* dp_tx: completed by the poster / handed to the engine */
    uint64_t frames, writes, octets;  /* the device counters; the TX engines' socket writes */
};

static struct counts counts_now(void)
{
    struct iw_dp *dp = env.s[0].qp->dp;
    struct counts c;

    dp_tx_own_wait(dp);
    c.lean = dp->tx.lean_done;
    c.lean_short = dp->tx.lean_short;
    dp_tx_own_release(dp);
    c.frames = atomic_load(&env.dev.counters.rdma_out_frames);
    c.writes = dpt_tx_writes(&env);
    c.octets = atomic_load(&env.dev.counters.rdma_out_octets);
    return c;
}

/* The wire bytes of a one-FPDU Send (untagged header) or Write (tagged). */
static uint64_t fpdu_bytes(bool send_op, size_t len)
{
    return iw_mpa_fpdu_len((uint32_t)((send_op ? IW_DDP_UNTAGGED_HDR_LEN : IW_DDP_TAGGED_HDR_LEN) + len));
}

/* Waits until nobody else runs A's engines: an RX run (it kicks TX after a Read Response) and
 * a TX run (the harness resumes a blocked engine on POLLOUT) that began before this returns
 * are over, so the next post finds A's engine free and, with nothing outstanding, goes lean. */
static void quiesce_a(void)
{
    struct iw_dp *dp = env.s[0].qp->dp;

    dp_rx_own_wait(dp);
    dp_rx_own_release(dp);
    dp_tx_own_wait(dp);
    dp_tx_own_release(dp);
}

/* B's RX engine paused (the harness thread waits for it), so A's socket fills up. */
static void pause_b(void)
{
    dp_rx_own_wait(env.s[1].qp->dp);
}

static void resume_b(void)
{
    dp_rx_own_release(env.s[1].qp->dp);
}

static void *ctx(uint32_t base, uint32_t i)
{
    return (void *)(uintptr_t)(base + i);
}

static void expect(int side, NDK_OPERATION_TYPE type, void *c, NTSTATUS st, size_t bytes)
{
    dpt_expect(&env, side, type, c, st, bytes);
}

static void expect_none(int side)
{
    NDK_RESULT_EX r;
    bool got = dpt_try_poll(&env, side, &r, 50);
    if (got)
        fprintf(stderr, "side %d: unexpected completion %p status %#x\n", side, r.RequestContext, (unsigned)r.Status);
    CHECK(!got);
}

/* One Send of len bytes from ma's slot i into B's slot i, its receive posted first. */
static NTSTATUS post_send_slot(uint32_t i, size_t len, ULONG flags, uint32_t seed, void *c)
{
    NDK_SGE r = dpt_sge(&mb, i * SLOT, SLOT), s = dpt_sge(&ma, i * SLOT, len);
    memset(mb.p + i * SLOT, 0, SLOT);
    dpt_fill(ma.p + i * SLOT, SLOT, seed);
    CHECK_STATUS(iw_post_receive(qb(), ctx(0x10000, i), &r, 1), STATUS_SUCCESS);
    return iw_post_send(qa(), c, &s, 1, flags);
}

static void check_recv_slot(uint32_t i, size_t len, uint32_t seed)
{
    expect(1, NdkOperationTypeReceive, ctx(0x10000, i), STATUS_SUCCESS, len);
    CHECK(dpt_check(mb.p + i * SLOT, len, seed));
    CHECK(mb.p[i * SLOT + len] == 0);
}

/* One Write of len bytes from ma's slot i to B's slot i, 3 bytes in. */
static NTSTATUS post_write_slot(uint32_t i, size_t len, ULONG flags, uint32_t seed, void *c)
{
    NDK_SGE s = dpt_sge(&ma, i * SLOT, len);
    memset(mb.p + i * SLOT, 0, SLOT);
    dpt_fill(ma.p + i * SLOT, SLOT, seed);
    return iw_post_write(qa(), c, &s, 1, (uint64_t)(uintptr_t)(mb.p + i * SLOT + 3), mb.token, flags);
}

static void check_write_slot(uint32_t i, size_t len, uint32_t seed)
{
    CHECK(mb.p[i * SLOT + 2] == 0);
    CHECK(dpt_check(mb.p + i * SLOT + 3, len, seed));
    CHECK(mb.p[i * SLOT + 3 + len] == 0);
}

/* A zero-length Send: B has placed A's earlier Writes once its receive completes. */
static void barrier(uint32_t i)
{
    CHECK_STATUS(post_send_slot(i, 0, 0, 0, ctx(0x90000, i)), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, ctx(0x90000, i), STATUS_SUCCESS, 0);
    check_recv_slot(i, 0, 0);
}

/* One lean message after another: Sends of every size up to the lean limit (zero included),
 * inline Sends, unsignalled Sends, Writes, a Send&Invalidate. Each waits until B has it, so each
 * finds the SQ empty and must go the lean way: one FPDU, one write, the engine's bytes (B checks
 * MSN, CRC and placement), completed before the post returns. */
static void test_lean_run(uint32_t seed)
{
    const uint32_t lim = env.s[0].qp->dp->tx.lean_max;
    struct counts c0 = counts_now();
    uint64_t octets = 0, n = 0;
    NDK_MW *mw;

    CHECK(lim >= 8);
    quiesce_a();
    CHECK_STATUS(env.pd->Dispatch->NdkCreateMw(env.pd, NULL, NULL, &mw), STATUS_SUCCESS);
    uint64_t wva = (uint64_t)(uintptr_t)(mb.p + (NSLOT - 1) * SLOT);
    CHECK_STATUS(iw_post_bind(qb(), ctx(0x20000, 0), mb.mr, mw, (void *)(uintptr_t)wva, SLOT,
                              NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
                 STATUS_SUCCESS);
    expect(1, NdkOperationTypeBind, ctx(0x20000, 0), STATUS_SUCCESS, 0);
    uint32_t wt = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);

    for (uint32_t i = 0; i < 120; i++) {
        uint32_t kind = i % 6, sd = seed + i;
        size_t len = i < 40 ? (size_t)(i * lim / 39) : (i * 37u) % (lim + 1);
        void *c = ctx(0x30000, i);
        switch (kind) {
        case 0:
        case 1:
            CHECK_STATUS(post_send_slot(i, len, 0, sd, c), STATUS_SUCCESS);
            expect(0, NdkOperationTypeSend, c, STATUS_SUCCESS, 0);
            check_recv_slot(i, len, sd);
            octets += fpdu_bytes(true, len);
            break;
        case 2:
            CHECK_STATUS(post_write_slot(i, len, i % 4 == 0 ? NDK_OP_FLAG_SILENT_SUCCESS : 0, sd, c), STATUS_SUCCESS);
            if (i % 4 != 0)
                expect(0, NdkOperationTypeWrite, c, STATUS_SUCCESS, 0);
            octets += fpdu_bytes(false, len);
            barrier(i + 1);                  /* itself lean; its receive in the next slot */
            octets += fpdu_bytes(true, 0);
            n++;
            check_write_slot(i, len, sd);
            break;
        case 3:
            /* inline: the source is ours again when the call returns (§5.5.3) */
            CHECK_STATUS(post_send_slot(i, len, NDK_OP_FLAG_INLINE, sd, c), STATUS_SUCCESS);
            memset(ma.p + i * SLOT, 0xAB, SLOT);
            expect(0, NdkOperationTypeSend, c, STATUS_SUCCESS, 0);
            check_recv_slot(i, len, sd);
            octets += fpdu_bytes(true, len);
            break;
        case 4:
            /* §5.5.2: no completion for a successful SILENT_SUCCESS request */
            CHECK_STATUS(post_send_slot(i, len, NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT, sd, c),
                         STATUS_SUCCESS);
            check_recv_slot(i, len, sd);
            expect_none(0);
            octets += fpdu_bytes(true, len);
            break;
        default:
            if (i == 5) {
                NDK_SGE r = dpt_sge(&mb, i * SLOT, SLOT), s = dpt_sge(&ma, i * SLOT, len);
                dpt_fill(ma.p + i * SLOT, SLOT, sd);
                CHECK_STATUS(iw_post_receive(qb(), ctx(0x10000, i), &r, 1), STATUS_SUCCESS);
                CHECK_STATUS(iw_post_send_inv(qa(), c, &s, 1, 0, wt), STATUS_SUCCESS);
                expect(0, NdkOperationTypeSend, c, STATUS_SUCCESS, 0);
                expect(1, NdkOperationTypeReceiveAndInvalidate, ctx(0x10000, i), STATUS_SUCCESS, len);
                CHECK(dpt_check(mb.p + i * SLOT, len, sd));
            } else {
                CHECK_STATUS(post_send_slot(i, len, 0, sd, c), STATUS_SUCCESS);
                expect(0, NdkOperationTypeSend, c, STATUS_SUCCESS, 0);
                check_recv_slot(i, len, sd);
            }
            octets += fpdu_bytes(true, len);
            break;
        }
        n++;
    }
    struct counts c1 = counts_now();
    printf("  %llu lean messages, %llu writes\n", (unsigned long long)(c1.lean - c0.lean),
           (unsigned long long)(c1.writes - c0.writes));
    CHECK_EQ(c1.lean - c0.lean, n);
    CHECK_EQ(c1.lean_short - c0.lean_short, 0);
    CHECK_EQ(c1.frames - c0.frames, n);
    CHECK_EQ(c1.writes - c0.writes, n);
    CHECK_EQ(c1.octets - c0.octets, octets);
    expect_none(0);
    NTSTATUS st = mw->Dispatch->NdkCloseMw(&mw->Header, NULL, NULL);
    CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

/* Lean Sends around a batch of Sends queued while the test owns the engine: the MSNs of both
 * ways follow one another (B's deframer checks them), and the first post after the batch is out
 * is lean again. */
static void test_lean_around_batch(uint32_t seed)
{
    struct iw_dp *dp = env.s[0].qp->dp;

    quiesce_a();
    struct counts c0 = counts_now();
    CHECK_STATUS(post_send_slot(0, 8, 0, seed, ctx(0x40000, 0)), STATUS_SUCCESS);
    dp_tx_own_wait(dp);                 /* posts queue, kicks return */
    for (uint32_t i = 1; i <= 6; i++)
        CHECK_STATUS(post_send_slot(i, 8 * i, 0, seed + i, ctx(0x40000, i)), STATUS_SUCCESS);
    dp_tx_own_release(dp);
    iw_tx_kick(env.s[0].qp);
    for (uint32_t i = 0; i <= 6; i++)
        expect(0, NdkOperationTypeSend, ctx(0x40000, i), STATUS_SUCCESS, 0);
    CHECK_STATUS(post_send_slot(7, 100, 0, seed + 7, ctx(0x40000, 7)), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, ctx(0x40000, 7), STATUS_SUCCESS, 0);
    check_recv_slot(0, 8, seed);
    for (uint32_t i = 1; i <= 6; i++)
        check_recv_slot(i, 8 * i, seed + i);
    check_recv_slot(7, 100, seed + 7);
    struct counts c1 = counts_now();
    CHECK_EQ(c1.lean - c0.lean, 2);
}

/* A small Send and Write posted while a Read is outstanding must not go the lean way (their
 * completions would pass the Read's, §5.6): B is paused, so the Read stays outstanding. */
static void test_behind_read(uint32_t seed)
{
    const size_t rlen = 300;
    struct counts c0 = counts_now();

    dpt_fill(mb.p + 200 * SLOT, rlen, seed + 50);
    memset(ma.p + 200 * SLOT, 0, rlen);
    pause_b();
    NDK_SGE d = dpt_sge(&ma, 200 * SLOT, rlen);
    CHECK_STATUS(iw_post_read(qa(), ctx(0x50000, 0), &d, 1, (uint64_t)(uintptr_t)(mb.p + 200 * SLOT), mb.token, 0),
                 STATUS_SUCCESS);
    CHECK_STATUS(post_send_slot(1, 8, 0, seed + 1, ctx(0x50000, 1)), STATUS_SUCCESS);
    CHECK_STATUS(post_write_slot(2, 8, 0, seed + 2, ctx(0x50000, 2)), STATUS_SUCCESS);
    CHECK_STATUS(post_send_slot(3, 8, NDK_OP_FLAG_SILENT_SUCCESS, seed + 3, ctx(0x50000, 3)), STATUS_SUCCESS);
    CHECK_STATUS(post_send_slot(4, 8, 0, seed + 4, ctx(0x50000, 4)), STATUS_SUCCESS);
    struct counts c1 = counts_now();
    CHECK_EQ(c1.lean - c0.lean, 0);
    CHECK_EQ(c1.lean_short - c0.lean_short, 0);
    resume_b();
    expect(0, NdkOperationTypeRead, ctx(0x50000, 0), STATUS_SUCCESS, 0);
    expect(0, NdkOperationTypeSend, ctx(0x50000, 1), STATUS_SUCCESS, 0);
    expect(0, NdkOperationTypeWrite, ctx(0x50000, 2), STATUS_SUCCESS, 0);
    expect(0, NdkOperationTypeSend, ctx(0x50000, 4), STATUS_SUCCESS, 0);
    expect_none(0);
    CHECK(dpt_check(ma.p + 200 * SLOT, rlen, seed + 50));
    check_recv_slot(1, 8, seed + 1);
    check_recv_slot(3, 8, seed + 3);
    check_recv_slot(4, 8, seed + 4);
    check_write_slot(2, 8, seed + 2);
    quiesce_a();                                       /* the Read Response's kick of A's TX */
}

/* A's socket at the smallest SO_SNDBUF and B paused: lean Writes fill the socket until one is
 * refused; it must go on through the engine (one handover), the requests after it queue, and
 * once B reads again everything arrives intact and completes in posting order. Then the engine
 * is idle again and the next small message is lean. */
static void test_full_socket(uint32_t seed)
{
    struct counts c0 = counts_now(), c;
    uint32_t nfill = 0;
    int v = 1;                                         /* the kernel's minimum */

    CHECK(setsockopt(env.s[0].fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) == 0);
    quiesce_a();
    pause_b();
    for (;;) {
        CHECK(nfill < 100);                            /* fills after a handful */
        ULONG fl = nfill % 3 == 1 ? NDK_OP_FLAG_SILENT_SUCCESS : 0;
        CHECK_STATUS(post_write_slot(nfill, 200, fl, seed + nfill, ctx(0x60000, nfill)), STATUS_SUCCESS);
        nfill++;
        c = counts_now();
        if (c.lean_short != c0.lean_short)
            break;
    }
    CHECK_EQ(c.lean - c0.lean, nfill - 1);
    /* queued behind it: Sends, a Write, unsignalled ones */
    uint32_t n = nfill;
    for (uint32_t k = 0; k < 12; k++, n++) {
        ULONG fl = k % 4 == 3 ? NDK_OP_FLAG_SILENT_SUCCESS : 0;
        if (k % 3 == 2)
            CHECK_STATUS(post_write_slot(n, 150, fl, seed + n, ctx(0x60000, n)), STATUS_SUCCESS);
        else
            CHECK_STATUS(post_send_slot(n, 40 + k, fl, seed + n, ctx(0x60000, n)), STATUS_SUCCESS);
    }
    c = counts_now();
    printf("  full socket after %u lean Writes; %u queued behind\n", nfill - 1, n - nfill);
    CHECK_EQ(c.lean - c0.lean, nfill - 1);
    CHECK_EQ(c.lean_short - c0.lean_short, 1);
    resume_b();
    for (uint32_t i = 0; i < n; i++) {
        bool silent = i < nfill ? i % 3 == 1 : (i - nfill) % 4 == 3;
        bool wr = i < nfill || (i - nfill) % 3 == 2;
        if (!silent)
            expect(0, wr ? NdkOperationTypeWrite : NdkOperationTypeSend, ctx(0x60000, i), STATUS_SUCCESS, 0);
    }
    expect_none(0);
    for (uint32_t i = nfill; i < n; i++)
        if ((i - nfill) % 3 != 2)
            check_recv_slot(i, 40 + (i - nfill), seed + i);
    barrier(n);
    for (uint32_t i = 0; i < n; i++)
        if (i < nfill || (i - nfill) % 3 == 2)
            check_write_slot(i, i < nfill ? 200 : 150, seed + i);
    quiesce_a();                                       /* the harness's resumed TX run */
    c0 = counts_now();
    CHECK_STATUS(post_send_slot(0, 8, 0, seed, ctx(0x60000, 999)), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, ctx(0x60000, 999), STATUS_SUCCESS, 0);
    check_recv_slot(0, 8, seed);
    c = counts_now();
    CHECK_EQ(c.lean - c0.lean, 1);
}

/* The lean write cut at every boundary (header, payload, pad, CRC) or refused, once or twice
 * (then the engine keeps the batch and waits for room): the message goes on through the engine
 * from where the socket stopped, is counted as one FPDU, and completes (or not, when silent)
 * before the next, lean, one. */
static void test_short_writes(uint32_t seed)
{
    static const unsigned caps[] = { 0, 1, 2, 3, 5, 13, 19, 20, 21, 27, 30, 31 };
    uint32_t i = 0;

    for (size_t k = 0; k < sizeof caps / sizeof caps[0] * 2; k++, i += 2) {
        unsigned cap = caps[k % (sizeof caps / sizeof caps[0])];
        bool second = k >= sizeof caps / sizeof caps[0];
        bool wr = k % 3 == 1, silent = k % 4 == 2;
        size_t len = 8 + k % 5;
        uint64_t bytes = fpdu_bytes(!wr, len);
        ULONG fl = silent ? NDK_OP_FLAG_SILENT_SUCCESS : 0;
        void *c = ctx(0x70000, i);

        if (cap >= bytes)
            cap = (unsigned)bytes - 1;                 /* a Write's FPDU is shorter */
        quiesce_a();
        struct counts c0 = counts_now();
        force_short(cap, second && cap == 0 ? 2 : 1);
        if (wr)
            CHECK_STATUS(post_write_slot(i, len, fl, seed + i, c), STATUS_SUCCESS);
        else
            CHECK_STATUS(post_send_slot(i, len, fl, seed + i, c), STATUS_SUCCESS);
        CHECK_STATUS(post_send_slot(i + 1, 8, 0, seed + i + 1, ctx(0x70000, i + 1)), STATUS_SUCCESS);
        if (!silent)
            expect(0, wr ? NdkOperationTypeWrite : NdkOperationTypeSend, c, STATUS_SUCCESS, 0);
        expect(0, NdkOperationTypeSend, ctx(0x70000, i + 1), STATUS_SUCCESS, 0);
        if (!wr)
            check_recv_slot(i, len, seed + i);
        check_recv_slot(i + 1, 8, seed + i + 1);
        if (wr)
            check_write_slot(i, len, seed + i);
        CHECK_EQ(atomic_load(&short_calls), 0);
        struct counts c1 = counts_now();
        CHECK_EQ(c1.lean_short - c0.lean_short, 1);
        CHECK_EQ(c1.frames - c0.frames, 2);
        CHECK_EQ(c1.octets - c0.octets, bytes + fpdu_bytes(true, 8));
        CHECK(c1.writes - c0.writes >= 3);
        /* the message behind the cut one: lean when the engine was done before it came */
        CHECK(c1.lean - c0.lean <= 1);
    }
    atomic_store(&short_fd, -1);
    expect_none(0);
}

/* From inside A's lean send(): B reads from A, and A's RX queues the Read Response and kicks
 * A's TX, which it finds busy (the kick waits in tx_pending). */
static void hook_read_from_b(void)
{
    NDK_SGE d = dpt_sge(&mb, 210 * SLOT, 100);
    uint64_t end = ndk_test_now_ms() + 20000;

    CHECK_STATUS(iw_post_read(qb(), ctx(0xA0000, 0), &d, 1, (uint64_t)(uintptr_t)(ma.p + 210 * SLOT), ma.token, 0),
                 STATUS_SUCCESS);
    while (!atomic_load(&env.s[0].qp->dp->tx_pending)) {
        CHECK(ndk_test_now_ms() < end);
        usleep(50);
    }
}

/* A kick that came while the lean path owned A's engine is not lost: the Read Response it
 * asked for goes out when the lean Send is done, with nothing else posted on A. */
static void test_kick_during_lean(uint32_t seed)
{
    dpt_fill(ma.p + 210 * SLOT, 100, seed);
    memset(mb.p + 210 * SLOT, 0, 100);
    quiesce_a();
    struct counts c0 = counts_now();
    atomic_store(&send_hook, hook_read_from_b);
    CHECK_STATUS(post_send_slot(0, 8, 0, seed + 1, ctx(0xA0000, 1)), STATUS_SUCCESS);
    CHECK(atomic_load(&send_hook) == NULL);
    expect(0, NdkOperationTypeSend, ctx(0xA0000, 1), STATUS_SUCCESS, 0);
    check_recv_slot(0, 8, seed + 1);
    expect(1, NdkOperationTypeRead, ctx(0xA0000, 0), STATUS_SUCCESS, 0);
    CHECK(dpt_check(mb.p + 210 * SLOT, 100, seed));
    struct counts c1 = counts_now();
    CHECK_EQ(c1.lean - c0.lean, 1);
    quiesce_a();
}

/* A lean candidate whose source fails the local check: the post succeeds and the request fails
 * as the engine has always failed it (§2.9 / datapath.h: local protection error, the
 * connection ends). Last: it ends the connection. */
static void test_bad_sgl(void)
{
    NDK_RESULT_EX r;
    struct counts c0 = counts_now();
    NDK_SGE s = dpt_sge(&ma, 0, 8);

    s.MemoryRegionToken ^= 0x5500u;                    /* no such region */
    CHECK_STATUS(iw_post_send(qa(), ctx(0x80000, 0), &s, 1, 0), STATUS_SUCCESS);
    dpt_poll(&env, 0, &r, 20000);
    CHECK(r.RequestContext == ctx(0x80000, 0));
    CHECK_STATUS(r.Status, STATUS_ACCESS_VIOLATION);
    CHECK_EQ(r.ProviderErrorCode & IW_PEC_POSTED, IW_PEC_POSTED);
    struct counts c1 = counts_now();
    CHECK_EQ(c1.lean - c0.lean, 0);
    CHECK_EQ(c1.lean_short - c0.lean_short, 0);
    dpt_wait_lost(&env, 0, 5000);
    dpt_wait_lost(&env, 1, 5000);
}

int main(int argc, char **argv)
{
    struct dpt_conn_opts o;

    dpt_conn_opts_default(&o);
    for (int i = 1; i < argc; i++)
        CHECK(!strcmp(argv[i], "crc") || dpt_conn_opts_arg(&o, argv[i]));   /* crc: the default */
    CHECK(o.split == DPT_DIRECT);                      /* the socket filling needs A's own socket */
    o.sq_depth = o.rq_depth = 256;
    dpt_env_init(&env);
    dpt_mr_reg(&env, &ma, NSLOT * SLOT,
               NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    dpt_mr_reg(&env, &mb, NSLOT * SLOT,
               NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    dpt_connect(&env, &o);

    for (uint32_t round = 0; round < 2; round++) {
        test_lean_run(1000 * round);
        test_lean_around_batch(3000 + 100 * round);
        test_behind_read(4000 + 100 * round);
        test_short_writes(5000 + 1000 * round);
        test_kick_during_lean(6000 + 100 * round);
    }
    test_full_socket(8000);                            /* leaves the smallest SO_SNDBUF */
    test_short_writes(9000);
    test_bad_sgl();
    CHECK(dpt_mr_guard_ok(&ma) && dpt_mr_guard_ok(&mb));
    dpt_disconnect(&env);
    dpt_mr_free(&env, &ma);
    dpt_mr_free(&env, &mb);
    dpt_env_fini(&env);
    printf("test_dp_txlean: OK\n");
    return 0;
}
