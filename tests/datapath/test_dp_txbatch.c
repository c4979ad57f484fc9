/* test_dp_txbatch: the TX engine sends several queued messages in one batch (one sendmsg).
 * Runs of small Sends and Writes are posted while the test owns A's TX engine (its tx_owned,
 * so posting only queues), then released at once: they must arrive intact and in order,
 * complete in posting order with their byte counts, keep READ_FENCE / Fast Register /
 * Invalidate ordered inside the run, stop at a request that fails validation, and (direct
 * socket pair, room in the socket) take fewer sendmsg calls than messages.
 * Usage: test_dp_txbatch [direct|random|onebyte] [crc|nocrc] [smallbuf]
 * smallbuf: A's socket gets the smallest SO_SNDBUF, so batches are written in pieces. */
#include "dptest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static struct dpt_env env;
static struct dpt_mr ma, mb;
static bool direct_roomy;             /* direct socket pair with its default buffer */

#define SLOT 1024u                    /* bytes of ma / mb per message */
#define NMSG 200u

static NDK_QP *qa(void) { return env.s[0].ndk; }
static NDK_QP *qb(void) { return env.s[1].ndk; }

static uint64_t out_writes(void)
{
    return dpt_tx_writes(&env);
}

/* The test owns A's TX engine: posts queue, kicks return at once (tx_pending stays set). */
static void hold_tx(void)
{
    dp_tx_own_wait(env.s[0].qp->dp);
}

static void release_tx(void)
{
    dp_tx_own_release(env.s[0].qp->dp);
    iw_tx_kick(env.s[0].qp);
}

static void expect(int side, NDK_OPERATION_TYPE type, void *ctx, NTSTATUS st, size_t bytes)
{
    dpt_expect(&env, side, type, ctx, st, bytes);
}

static size_t send_len(uint32_t i)
{
    return i % 17 == 0 ? 0 : (i * 37u) % 300u + (i % 5 == 0 ? 600u : 1u);
}

static void *ctx(uint32_t base, uint32_t i)
{
    return (void *)(uintptr_t)(base + i);
}

/* n Sends of varied small sizes (some zero, every fourth unsignalled) posted back to back. */
static void test_sends(uint32_t n, uint32_t seed)
{
    for (uint32_t i = 0; i < n; i++) {
        NDK_SGE r = dpt_sge(&mb, i * SLOT, SLOT);
        memset(mb.p + i * SLOT, 0, SLOT);
        dpt_fill(ma.p + i * SLOT, SLOT, seed + i);
        CHECK_STATUS(iw_post_receive(qb(), ctx(0x10000, i), &r, 1), STATUS_SUCCESS);
    }
    hold_tx();
    uint64_t w0 = out_writes();
    for (uint32_t i = 0; i < n; i++) {
        NDK_SGE s = dpt_sge(&ma, i * SLOT, send_len(i));
        ULONG fl = i % 4 == 3 ? NDK_OP_FLAG_SILENT_SUCCESS : 0;
        CHECK_STATUS(iw_post_send(qa(), ctx(0x20000, i), &s, 1, fl), STATUS_SUCCESS);
    }
    CHECK_EQ(out_writes(), w0);              /* nothing went out while we owned the engine */
    release_tx();
    /* A completion says the Send's bytes are with TCP: its source (and that of the silent ones
     * before it) may be reused at once, which B must not see. */
    for (uint32_t i = 0, done = 0; i < n; i++)
        if (i % 4 != 3) {
            expect(0, NdkOperationTypeSend, ctx(0x20000, i), STATUS_SUCCESS, send_len(i));
            for (; done <= i; done++)
                memset(ma.p + done * SLOT, 0xAB, SLOT);
        }
    uint64_t used = out_writes() - w0;
    for (uint32_t i = 0; i < n; i++) {
        expect(1, NdkOperationTypeReceive, ctx(0x10000, i), STATUS_SUCCESS, send_len(i));
        CHECK(dpt_check(mb.p + i * SLOT, send_len(i), seed + i));
        CHECK(mb.p[i * SLOT + send_len(i)] == 0);
    }
    printf("  %u Sends: %llu sendmsg calls\n", n, (unsigned long long)used);
    if (direct_roomy && n > 1)
        CHECK(used * 4 <= n);                /* batched: up to DP_TX_MAX_FPDUS messages a call */
}

/* n small Writes to distinct places, then one Send that orders B's view after them. */
static void test_writes(uint32_t n, uint32_t seed)
{
    memset(mb.p, 0, n * SLOT);
    for (uint32_t i = 0; i < n; i++)
        dpt_fill(ma.p + i * SLOT, SLOT, seed + i);
    NDK_SGE r = dpt_sge(&mb, NMSG * SLOT, 16);
    CHECK_STATUS(iw_post_receive(qb(), ctx(0x30000, 0), &r, 1), STATUS_SUCCESS);
    hold_tx();
    uint64_t w0 = out_writes();
    for (uint32_t i = 0; i < n; i++) {
        size_t len = (i * 53u) % 700u + 1u;
        NDK_SGE s = dpt_sge(&ma, i * SLOT, len);
        ULONG fl = i % 3 == 1 ? NDK_OP_FLAG_SILENT_SUCCESS : 0;
        CHECK_STATUS(iw_post_write(qa(), ctx(0x40000, i), &s, 1, (uint64_t)(uintptr_t)(mb.p + i * SLOT + 7), mb.token,
                                 fl),
                     STATUS_SUCCESS);
    }
    CHECK_STATUS(iw_post_send(qa(), ctx(0x40000, n), NULL, 0, 0), STATUS_SUCCESS);
    release_tx();
    for (uint32_t i = 0, done = 0; i < n; i++)
        if (i % 3 != 1) {
            expect(0, NdkOperationTypeWrite, ctx(0x40000, i), STATUS_SUCCESS, (i * 53u) % 700u + 1u);
            for (; done <= i; done++)
                memset(ma.p + done * SLOT, 0xAB, SLOT);   /* reused at completion */
        }
    expect(0, NdkOperationTypeSend, ctx(0x40000, n), STATUS_SUCCESS, 0);
    uint64_t used = out_writes() - w0;
    expect(1, NdkOperationTypeReceive, ctx(0x30000, 0), STATUS_SUCCESS, 0);
    for (uint32_t i = 0; i < n; i++) {
        size_t len = (i * 53u) % 700u + 1u;
        CHECK(dpt_check(mb.p + i * SLOT + 7, len, seed + i));
        for (size_t k = 0; k < 7; k++)
            CHECK(mb.p[i * SLOT + k] == 0);
        CHECK(mb.p[i * SLOT + 7 + len] == 0);
    }
    printf("  %u Writes + 1 Send: %llu sendmsg calls\n", n, (unsigned long long)used);
    if (direct_roomy)
        CHECK(used * 4 <= n + 1);
}

/* A run of small Sends with, in its middle, a Read and a READ_FENCE Send of what it read, a
 * Fast Register and a Send from the new region, an Invalidate, and Writes: every request
 * completes in posting order and each Send carries what its position in the order implies. */
static void test_mixed(uint32_t seed)
{
    const ULONG np = 2;
    NDK_LOGICAL_ADDRESS lam[2];
    uint8_t *pages;
    NDK_MR *fr;
    const size_t rlen = 3000, flen = 500;
    const uint64_t fbase = 0x5000000000ull;
    enum { K_SEND, K_READ, K_FENCED, K_FR, K_FRSEND, K_INV, K_WRITE } kind[64];
    size_t len[64];
    uint32_t n = 0, nrecv = 0;

    CHECK(posix_memalign((void **)&pages, 4096, 4096 * np) == 0);
    dpt_fill(pages, 4096 * np, seed + 999);
    for (ULONG i = 0; i < np; i++)
        lam[i].QuadPart = (LONGLONG)(uintptr_t)(pages + 4096 * i);
    CHECK_STATUS(env.pd->Dispatch->NdkCreateMr(env.pd, TRUE, NULL, NULL, &fr), STATUS_SUCCESS);
    CHECK_STATUS(fr->Dispatch->NdkInitializeFastRegisterMr(fr, np, TRUE, NULL, NULL), STATUS_SUCCESS);

    /* the Read's source on B, its sink on A (zeroed: a fence ignored would send zeros) */
    dpt_fill(mb.p + 80 * SLOT, rlen, seed + 500);
    memset(ma.p + 80 * SLOT, 0, rlen);
    memset(mb.p + 50 * SLOT, 0, 10 * SLOT);
    memset(mb.p + 70 * SLOT, 0, 4 * SLOT);
    for (uint32_t i = 0; i < 40; i++) {
        memset(mb.p + i * SLOT, 0, SLOT);
        dpt_fill(ma.p + i * SLOT, SLOT, seed + i);
    }
    /* B's receive for the k-th Send is at k * SLOT; the fenced Send's at 70 * SLOT. */
    uint32_t recv_slot[40];

    hold_tx();
    for (uint32_t i = 0; i < 38; i++) {
        void *c = ctx(0x60000, n);
        if (i == 10) {
            NDK_SGE d = dpt_sge(&ma, 80 * SLOT, rlen);
            CHECK_STATUS(iw_post_read(qa(), c, &d, 1, (uint64_t)(uintptr_t)(mb.p + 80 * SLOT), mb.token, 0),
                         STATUS_SUCCESS);
            kind[n] = K_READ, len[n++] = rlen;
            c = ctx(0x60000, n);
            NDK_SGE rb = dpt_sge(&mb, 70 * SLOT, 4 * SLOT);
            recv_slot[nrecv] = 70;
            CHECK_STATUS(iw_post_receive(qb(), ctx(0x50000, nrecv), &rb, 1), STATUS_SUCCESS);
            NDK_SGE s = dpt_sge(&ma, 80 * SLOT, rlen);
            CHECK_STATUS(iw_post_send(qa(), c, &s, 1, NDK_OP_FLAG_READ_FENCE), STATUS_SUCCESS);
            kind[n] = K_FENCED, len[n++] = rlen;
            nrecv++;
        } else if (i == 18) {
            CHECK_STATUS(iw_post_fast_register(qa(), c, fr, np, lam, 0, 4096 * np, (void *)(uintptr_t)fbase,
                                             NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
                         STATUS_SUCCESS);
            kind[n] = K_FR, len[n++] = 0;
            c = ctx(0x60000, n);
            NDK_SGE rb = dpt_sge(&mb, nrecv * SLOT, SLOT);
            recv_slot[nrecv] = nrecv;
            CHECK_STATUS(iw_post_receive(qb(), ctx(0x50000, nrecv), &rb, 1), STATUS_SUCCESS);
            NDK_SGE s;
            s.VirtualAddress = (void *)(uintptr_t)(fbase + 4000);   /* across the page boundary */
            s.Length = (ULONG)flen;
            s.MemoryRegionToken = fr->Dispatch->NdkGetLocalTokenFromMr(fr);
            CHECK_STATUS(iw_post_send(qa(), c, &s, 1, 0), STATUS_SUCCESS);
            kind[n] = K_FRSEND, len[n++] = flen;
            nrecv++;
        } else if (i == 25) {
            CHECK_STATUS(iw_post_invalidate(qa(), c, &fr->Header, 0), STATUS_SUCCESS);
            kind[n] = K_INV, len[n++] = 0;
        } else if (i % 7 == 2) {
            NDK_SGE s = dpt_sge(&ma, 50 * SLOT + (i % 10) * 100, 90);
            dpt_fill(ma.p + 50 * SLOT + (i % 10) * 100, 90, seed + 300 + i);
            CHECK_STATUS(iw_post_write(qa(), c, &s, 1, (uint64_t)(uintptr_t)(mb.p + 50 * SLOT + (i % 10) * 100),
                                     mb.token, 0),
                         STATUS_SUCCESS);
            kind[n] = K_WRITE, len[n++] = 90;
        } else {
            size_t l = (i * 29u) % 200u + 1u;
            NDK_SGE rb = dpt_sge(&mb, nrecv * SLOT, SLOT);
            recv_slot[nrecv] = nrecv;
            CHECK_STATUS(iw_post_receive(qb(), ctx(0x50000, nrecv), &rb, 1), STATUS_SUCCESS);
            NDK_SGE s = dpt_sge(&ma, nrecv * SLOT, l);
            CHECK_STATUS(iw_post_send(qa(), c, &s, 1, 0), STATUS_SUCCESS);
            kind[n] = K_SEND, len[n++] = l;
            nrecv++;
        }
    }
    {
        /* a last zero-length Send: B sees the Writes before it once its receive completes */
        NDK_SGE rb = dpt_sge(&mb, nrecv * SLOT, SLOT);
        recv_slot[nrecv] = nrecv;
        CHECK_STATUS(iw_post_receive(qb(), ctx(0x50000, nrecv), &rb, 1), STATUS_SUCCESS);
        CHECK_STATUS(iw_post_send(qa(), ctx(0x60000, n), NULL, 0, 0), STATUS_SUCCESS);
        kind[n] = K_SEND, len[n++] = 0;
        nrecv++;
    }
    release_tx();

    static const NDK_OPERATION_TYPE type[] = {
        [K_SEND] = NdkOperationTypeSend, [K_READ] = NdkOperationTypeRead, [K_FENCED] = NdkOperationTypeSend,
        [K_FR] = NdkOperationTypeFastRegister, [K_FRSEND] = NdkOperationTypeSend,
        [K_INV] = NdkOperationTypeInvalidate, [K_WRITE] = NdkOperationTypeWrite,
    };
    for (uint32_t i = 0; i < n; i++)
        expect(0, type[kind[i]], ctx(0x60000, i), STATUS_SUCCESS, len[i]);
    CHECK(dpt_check(ma.p + 80 * SLOT, rlen, seed + 500));
    for (uint32_t i = 0, k = 0; i < n; i++) {
        if (kind[i] != K_SEND && kind[i] != K_FENCED && kind[i] != K_FRSEND)
            continue;
        uint32_t slot = recv_slot[k];
        expect(1, NdkOperationTypeReceive, ctx(0x50000, k), STATUS_SUCCESS, len[i]);
        k++;
        if (kind[i] == K_FENCED)
            CHECK(dpt_check(mb.p + slot * SLOT, rlen, seed + 500));
        else if (kind[i] == K_FRSEND)
            CHECK(memcmp(mb.p + slot * SLOT, pages + 4000, flen) == 0);
        else
            CHECK(dpt_check(mb.p + slot * SLOT, len[i], seed + slot));
    }
    for (uint32_t i = 0; i < 38; i++)
        if (i % 7 == 2 && i != 18 && i != 25 && i != 10)
            CHECK(dpt_check(mb.p + 50 * SLOT + (i % 10) * 100, 90, seed + 300 + i));
    CHECK_STATUS(fr->Dispatch->NdkCloseMr(&fr->Header, NULL, NULL), STATUS_SUCCESS);
    free(pages);
}

/* A Send that fails validation in the middle of a run: the ones before it arrive and complete,
 * it fails, the ones after it are flushed; nothing after it reaches B. Ends the connection. */
static void test_bad_in_run(uint32_t seed)
{
    NDK_RESULT_EX r;
    const uint32_t n = 12, bad = 6;

    for (uint32_t i = 0; i < n; i++) {
        NDK_SGE rb = dpt_sge(&mb, i * SLOT, SLOT);
        memset(mb.p + i * SLOT, 0, SLOT);
        dpt_fill(ma.p + i * SLOT, SLOT, seed + i);
        CHECK_STATUS(iw_post_receive(qb(), ctx(0x70000, i), &rb, 1), STATUS_SUCCESS);
    }
    hold_tx();
    for (uint32_t i = 0; i < n; i++) {
        NDK_SGE s = dpt_sge(&ma, i * SLOT, 100 + i);
        if (i == bad)
            s.MemoryRegionToken ^= 0x5500u;  /* no such region: local protection error */
        CHECK_STATUS(iw_post_send(qa(), ctx(0x80000, i), &s, 1, 0), STATUS_SUCCESS);
    }
    release_tx();
    for (uint32_t i = 0; i < bad; i++)
        expect(0, NdkOperationTypeSend, ctx(0x80000, i), STATUS_SUCCESS, 100 + i);
    dpt_poll(&env, 0, &r, 20000);
    CHECK(r.RequestContext == ctx(0x80000, bad));
    CHECK_STATUS(r.Status, STATUS_ACCESS_VIOLATION);
    CHECK_EQ(r.ProviderErrorCode & IW_PEC_POSTED, IW_PEC_POSTED);
    for (uint32_t i = bad + 1; i < n; i++)
        expect(0, NdkOperationTypeSend, ctx(0x80000, i), STATUS_CANCELLED, 0);
    for (uint32_t i = 0; i < bad; i++) {
        expect(1, NdkOperationTypeReceive, ctx(0x70000, i), STATUS_SUCCESS, 100 + i);
        CHECK(dpt_check(mb.p + i * SLOT, 100 + i, seed + i));
    }
    for (uint32_t i = bad; i < n; i++) {
        dpt_poll(&env, 1, &r, 20000);
        CHECK(r.RequestContext == ctx(0x70000, i));
        CHECK(r.Status != STATUS_SUCCESS);
        CHECK(mb.p[i * SLOT] == 0);
    }
    dpt_wait_lost(&env, 0, 5000);
    dpt_wait_lost(&env, 1, 5000);
}

int main(int argc, char **argv)
{
    struct dpt_conn_opts o;
    bool smallbuf = false;

    dpt_conn_opts_default(&o);
    for (int i = 1; i < argc; i++)
        if (!dpt_conn_opts_arg(&o, argv[i]) && !strcmp(argv[i], "smallbuf"))
            smallbuf = true;
    o.sq_depth = o.rq_depth = 256;
    o.ord = o.ird = 4;
    dpt_env_init(&env);
    dpt_mr_reg(&env, &ma, (NMSG + 1) * SLOT,
               NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    dpt_mr_reg(&env, &mb, (NMSG + 1) * SLOT,
               NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    dpt_connect(&env, &o);
    if (smallbuf) {
        int v = 1;                           /* the kernel's minimum */
        CHECK(setsockopt(env.s[0].fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) == 0);
    }
    direct_roomy = o.split == DPT_DIRECT && !smallbuf;

    for (uint32_t round = 0; round < 3; round++) {
        test_sends(NMSG, 100 * round);
        test_writes(NMSG, 7000 + 100 * round);
        test_mixed(9000 + 100 * round);
    }
    test_sends(1, 1);                        /* a lone message still goes */
    test_bad_in_run(11000);
    CHECK(dpt_mr_guard_ok(&ma) && dpt_mr_guard_ok(&mb));
    dpt_disconnect(&env);
    dpt_mr_free(&env, &ma);
    dpt_mr_free(&env, &mb);
    dpt_env_fini(&env);
    printf("test_dp_txbatch: OK\n");
    return 0;
}
