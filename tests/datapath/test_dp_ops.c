/* test_dp_ops: every work request between two QPs of the isolated data path, byte for byte,
 * with CRC on and off, over a direct socket pair and through a relay that splits the stream
 * at random points or into single bytes (RFC 5044: any TCP split).
 * Usage: test_dp_ops [direct|random|onebyte] [crc|nocrc] */
#include "dptest.h"

#include <stdlib.h>
#include <string.h>

static struct dpt_env env;
static struct dpt_mr ma, mb;          /* A's and B's registered buffers */
static size_t big;                    /* largest transfer in this mode */

static NDK_QP *qa(void) { return env.s[0].ndk; }
static NDK_QP *qb(void) { return env.s[1].ndk; }

static void expect(int side, NDK_OPERATION_TYPE type, void *ctx, NTSTATUS st)
{
    NDK_RESULT_EX r;
    dpt_poll(&env, side, &r, 20000);
    CHECK_STATUS(r.Status, st);
    CHECK_EQ(r.Type, type);
    CHECK(r.RequestContext == ctx);
    CHECK(r.QPContext == (void *)(uintptr_t)(0x1000 + side));
}

/* A zero-length Send A -> B and its receive: orders B's view after A's earlier Writes. */
static void barrier(void)
{
    CHECK_STATUS(qb()->Dispatch->NdkReceive(qb(), (void *)0xB0, NULL, 0), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_send(qa(), (void *)0xA0, NULL, 0, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, (void *)0xA0, STATUS_SUCCESS);
    expect(1, NdkOperationTypeReceive, (void *)0xB0, STATUS_SUCCESS);
}

static void test_send(size_t len, uint32_t seed, bool se)
{
    NDK_SGE s = dpt_sge(&ma, 0, len), r = dpt_sge(&mb, 0, len + 16);
    NDK_RESULT_EX res;

    dpt_fill(ma.p, len, seed);
    memset(mb.p, 0, len + 16);
    CHECK_STATUS(iw_post_receive(qb(), (void *)1, &r, 1), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_send(qa(), (void *)2, &s, 1, se ? NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT : 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, (void *)2, STATUS_SUCCESS);
    dpt_poll(&env, 1, &res, 20000);
    CHECK_STATUS(res.Status, STATUS_SUCCESS);
    CHECK_EQ(res.Type, NdkOperationTypeReceive);
    CHECK_EQ(res.BytesTransferred, len);
    CHECK(dpt_check(mb.p, len, seed));
    CHECK(mb.p[len] == 0);
}

/* n SGEs on both sides, cut at different places. */
static void test_send_sges(uint32_t n, size_t len)
{
    NDK_SGE s[IW_MAX_SGE], r[IW_MAX_SGE];
    size_t per = len / n;

    dpt_fill(ma.p, len, 77 + n);
    memset(mb.p, 0, len + 64);
    for (uint32_t i = 0; i < n; i++) {
        size_t l = i == n - 1 ? len - per * i : per;
        s[i] = dpt_sge(&ma, per * i, l);
    }
    /* receive SGEs: uneven split, with gaps of 8 bytes between them in B's buffer */
    size_t off = 0, placed = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t l = i == n - 1 ? len - placed : (per / 2 + 1 + i) < len - placed ? per / 2 + 1 + i : len - placed;
        r[i] = dpt_sge(&mb, off, l);
        off += l + 8;
        placed += l;
    }
    CHECK_EQ(placed, len);
    CHECK_STATUS(iw_post_receive(qb(), (void *)3, r, n), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_send(qa(), (void *)4, s, n, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, (void *)4, STATUS_SUCCESS);
    NDK_RESULT_EX res;
    dpt_poll(&env, 1, &res, 20000);
    CHECK_STATUS(res.Status, STATUS_SUCCESS);
    CHECK_EQ(res.BytesTransferred, len);
    /* gather B's pieces and compare */
    uint8_t *g = malloc(len ? len : 1);
    size_t go = 0;
    for (uint32_t i = 0; i < n; i++) {
        memcpy(g + go, r[i].VirtualAddress, r[i].Length);
        go += r[i].Length;
    }
    CHECK(dpt_check(g, len, 77 + n));
    free(g);
}

static void test_write(size_t len, size_t roff, uint32_t seed, uint32_t nsge)
{
    NDK_SGE s[IW_MAX_SGE];
    size_t per = nsge ? len / nsge : 0;

    dpt_fill(ma.p, len, seed);
    memset(mb.p + roff, 0, len);
    for (uint32_t i = 0; i < nsge; i++)
        s[i] = dpt_sge(&ma, per * i, i == nsge - 1 ? len - per * i : per);
    CHECK_STATUS(iw_post_write(qa(), (void *)5, s, nsge, (uint64_t)(uintptr_t)(mb.p + roff), mb.token, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeWrite, (void *)5, STATUS_SUCCESS);
    barrier();
    CHECK(dpt_check(mb.p + roff, len, seed));
}

static void test_read(size_t len, uint32_t nsge, ULONG flags)
{
    NDK_SGE s[IW_MAX_SGE];
    size_t per = len / nsge;

    dpt_fill(mb.p, len, 999 + (uint32_t)len);
    memset(ma.p, 0, len);
    for (uint32_t i = 0; i < nsge; i++)
        s[i] = dpt_sge(&ma, per * i, i == nsge - 1 ? len - per * i : per);
    CHECK_STATUS(iw_post_read(qa(), (void *)6, s, nsge, (uint64_t)(uintptr_t)mb.p, mb.token, flags), STATUS_SUCCESS);
    expect(0, NdkOperationTypeRead, (void *)6, STATUS_SUCCESS);
    CHECK(dpt_check(ma.p, len, 999 + (uint32_t)len));
    /* B's sendmsg() of the Response may still be returning when A has all of it, and B's buffer
     * is reused next. The bytes' way through the socket is no ordering TSan sees, and the
     * barrier's receive may be run by this thread's poll rather than by B's engine thread: B's
     * TX mutex, held across that sendmsg(), orders the two. */
    dp_tx_own_wait(env.s[1].qp->dp);
    dp_tx_own_release(env.s[1].qp->dp);
    barrier();
}

/* More reads than ORD, a fenced Send behind them, silent successes: completions in order. */
static void test_read_queue(void)
{
    const int n = 24;
    NDK_SGE s;
    dpt_fill(mb.p, 4096 * n, 4242);
    memset(ma.p, 0, 4096 * n);
    for (int i = 0; i < n; i++) {
        s = dpt_sge(&ma, 4096 * (size_t)i, 4096);
        ULONG fl = (i % 3 == 1 ? NDK_OP_FLAG_SILENT_SUCCESS : 0) | (i < n - 1 ? NDK_OP_FLAG_DEFER : 0);
        CHECK_STATUS(iw_post_read(qa(), (void *)(uintptr_t)(100 + i), &s, 1,
                                (uint64_t)(uintptr_t)(mb.p + 4096 * (size_t)i), mb.token, fl),
                     STATUS_SUCCESS);
    }
    CHECK_STATUS(qb()->Dispatch->NdkReceive(qb(), (void *)0xB1, NULL, 0), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_send(qa(), (void *)0xA1, NULL, 0, NDK_OP_FLAG_READ_FENCE), STATUS_SUCCESS);
    for (int i = 0; i < n; i++)
        if (i % 3 != 1)
            expect(0, NdkOperationTypeRead, (void *)(uintptr_t)(100 + i), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, (void *)0xA1, STATUS_SUCCESS);
    expect(1, NdkOperationTypeReceive, (void *)0xB1, STATUS_SUCCESS);
    CHECK(dpt_check(ma.p, 4096 * n, 4242));
}

static void test_inline(void)
{
    uint8_t tmp[IW_MAX_INLINE];
    NDK_SGE s[2] = { { .VirtualAddress = tmp, .Length = 100, .MemoryRegionToken = 0xdeadbeef },
                     { .VirtualAddress = tmp + 100, .Length = IW_MAX_INLINE - 100, .MemoryRegionToken = 7 } };
    NDK_SGE r = dpt_sge(&mb, 0, IW_MAX_INLINE);
    NDK_RESULT_EX res;

    dpt_fill(tmp, sizeof tmp, 31);
    CHECK_STATUS(iw_post_receive(qb(), (void *)7, &r, 1), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_send(qa(), (void *)8, s, 2, NDK_OP_FLAG_INLINE), STATUS_SUCCESS);
    memset(tmp, 0, sizeof tmp);               /* §5.5.3: the buffer is ours again at once */
    expect(0, NdkOperationTypeSend, (void *)8, STATUS_SUCCESS);
    dpt_poll(&env, 1, &res, 20000);
    CHECK_EQ(res.BytesTransferred, IW_MAX_INLINE);
    CHECK(dpt_check(mb.p, IW_MAX_INLINE, 31));
    /* inline write (§8 item 20) */
    dpt_fill(tmp, sizeof tmp, 32);
    CHECK_STATUS(iw_post_write(qa(), (void *)9, s, 2, (uint64_t)(uintptr_t)(mb.p + 1000), mb.token, NDK_OP_FLAG_INLINE),
                 STATUS_SUCCESS);
    expect(0, NdkOperationTypeWrite, (void *)9, STATUS_SUCCESS);
    barrier();
    CHECK(dpt_check(mb.p + 1000, IW_MAX_INLINE, 32));
    /* too much inline data */
    NDK_SGE t = { .VirtualAddress = tmp, .Length = IW_MAX_INLINE + 1, .MemoryRegionToken = 0 };
    CHECK_STATUS(iw_post_send(qa(), (void *)10, &t, 1, NDK_OP_FLAG_INLINE), STATUS_INVALID_PARAMETER);
}

static void test_limits(void)
{
    NDK_SGE s[IW_MAX_SGE + 1];
    for (int i = 0; i <= (int)IW_MAX_SGE; i++)
        s[i] = dpt_sge(&ma, 0, 1);
    CHECK_STATUS(iw_post_send(qa(), NULL, s, IW_MAX_SGE + 1, 0), STATUS_INVALID_PARAMETER);
    CHECK_STATUS(iw_post_receive(qb(), NULL, s, IW_MAX_SGE + 1), STATUS_INVALID_PARAMETER);
    CHECK_STATUS(iw_post_send(qa(), NULL, s, 1, 0x80000000u), STATUS_INVALID_PARAMETER);
    NDK_SGE huge[2] = { dpt_sge(&ma, 0, 0x7fffffff), dpt_sge(&ma, 0, 0x7fffffff) };
    CHECK_STATUS(iw_post_write(qa(), NULL, huge, 2, 0, mb.token, 0), STATUS_INVALID_PARAMETER);
}

/* DEFER chain: nothing is lost; an inline failure hands deferred requests over (§5.5.4). */
static void test_defer(void)
{
    NDK_SGE s = dpt_sge(&ma, 0, 512);
    dpt_fill(ma.p, 512, 55);
    CHECK_STATUS(iw_post_write(qa(), (void *)11, &s, 1, (uint64_t)(uintptr_t)mb.p, mb.token, NDK_OP_FLAG_DEFER),
                 STATUS_SUCCESS);
    CHECK_STATUS(iw_post_send(qa(), NULL, &s, 1, 0x80000000u | NDK_OP_FLAG_DEFER), STATUS_INVALID_PARAMETER);
    expect(0, NdkOperationTypeWrite, (void *)11, STATUS_SUCCESS);
    barrier();
    CHECK(dpt_check(mb.p, 512, 55));
}

/* Fast register from a LAM-style page list on B, A writes and reads through the new token,
 * A's Send&Invalidate revokes it (B sees ReceiveAndInvalidate with the token). */
static void test_frmr_and_inv(void)
{
    NDK_MR *fr;
    uint8_t *pages;
    const ULONG np = 8;
    NDK_LOGICAL_ADDRESS lam[8];
    NDK_RESULT_EX res;

    CHECK(posix_memalign((void **)&pages, 4096, 4096 * np) == 0);
    memset(pages, 0, 4096 * np);
    /* logical pages deliberately out of order: page i of the region is host page (i ^ 1) */
    for (ULONG i = 0; i < np; i++)
        lam[i].QuadPart = (LONGLONG)(uintptr_t)(pages + 4096 * (i ^ 1));
    CHECK_STATUS(env.pd->Dispatch->NdkCreateMr(env.pd, TRUE, NULL, NULL, &fr), STATUS_SUCCESS);
    CHECK_STATUS(fr->Dispatch->NdkInitializeFastRegisterMr(fr, np, TRUE, NULL, NULL), STATUS_SUCCESS);
    uint32_t t0 = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
    const ULONG fbo = 100;
    const size_t len = 4096 * np - fbo - 50;
    uint64_t base = 0x7000000000ull + fbo;
    CHECK_STATUS(iw_post_fast_register(qb(), (void *)12, fr, np, lam, fbo, len, (void *)(uintptr_t)base,
                                     NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_READ),
                 STATUS_SUCCESS);
    uint32_t t1 = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
    CHECK(t1 != t0 && (t1 >> 8) == (t0 >> 8));    /* same index, fresh key */
    expect(1, NdkOperationTypeFastRegister, (void *)12, STATUS_SUCCESS);

    /* A writes the whole region through the FR token, reads it back */
    NDK_SGE s = dpt_sge(&ma, 0, len);
    dpt_fill(ma.p, len, 1234);
    CHECK_STATUS(iw_post_write(qa(), (void *)13, &s, 1, base, t1, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeWrite, (void *)13, STATUS_SUCCESS);
    barrier();
    for (size_t i = 0; i < len; i++) {
        size_t pos = fbo + i, pg = pos / 4096;
        CHECK(pages[4096 * (pg ^ 1) + pos % 4096] == ma.p[i]);
    }
    memset(ma.p + len, 0, len);
    NDK_SGE d = dpt_sge(&ma, len, len);
    CHECK_STATUS(iw_post_read(qa(), (void *)14, &d, 1, base, t1, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeRead, (void *)14, STATUS_SUCCESS);
    CHECK(memcmp(ma.p, ma.p + len, len) == 0);

    /* Send&Invalidate of t1 */
    NDK_SGE r = dpt_sge(&mb, 0, 64);
    CHECK_STATUS(iw_post_receive(qb(), (void *)15, &r, 1), STATUS_SUCCESS);
    NDK_SGE s2 = dpt_sge(&ma, 0, 64);
    CHECK_STATUS(iw_post_send_inv(qa(), (void *)16, &s2, 1, 0, t1), STATUS_SUCCESS);
    expect(0, NdkOperationTypeSend, (void *)16, STATUS_SUCCESS);
    dpt_poll(&env, 1, &res, 20000);
    CHECK_STATUS(res.Status, STATUS_SUCCESS);
    CHECK_EQ(res.Type, NdkOperationTypeReceiveAndInvalidate);
    CHECK_EQ((uint32_t)res.TypeSpecificCompletionOutput, t1);
    CHECK_EQ(res.BytesTransferred, 64);
    /* non-Ex polling sees ordinary receives (§5.6): not exercised here beyond the Ex path */

    /* re-register with a new key; local Invalidate works once */
    CHECK_STATUS(iw_post_fast_register(qb(), (void *)17, fr, np, lam, 0, 4096, (void *)0x10000,
                                     NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_SILENT_SUCCESS),
                 STATUS_SUCCESS);
    uint32_t t2 = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
    CHECK(t2 != t1);
    CHECK_STATUS(iw_post_invalidate(qb(), (void *)18, &fr->Header, 0), STATUS_SUCCESS);
    expect(1, NdkOperationTypeInvalidate, (void *)18, STATUS_SUCCESS);   /* FR was silent */
    CHECK_STATUS(fr->Dispatch->NdkCloseMr(&fr->Header, NULL, NULL), STATUS_SUCCESS);
    free(pages);
}

/* Memory window: B binds a window over part of its MR; A writes and reads through it. */
static void test_bind(void)
{
    NDK_MW *mw;
    CHECK_STATUS(env.pd->Dispatch->NdkCreateMw(env.pd, NULL, NULL, &mw), STATUS_SUCCESS);
    uint64_t wva = (uint64_t)(uintptr_t)(mb.p + 8192);
    CHECK_STATUS(iw_post_bind(qb(), (void *)19, mb.mr, mw, (void *)(uintptr_t)wva, 4096,
                            NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_READ),
                 STATUS_SUCCESS);
    uint32_t wt = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
    expect(1, NdkOperationTypeBind, (void *)19, STATUS_SUCCESS);
    NDK_SGE s = dpt_sge(&ma, 0, 4096);
    dpt_fill(ma.p, 4096, 808);
    CHECK_STATUS(iw_post_write(qa(), (void *)20, &s, 1, wva, wt, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeWrite, (void *)20, STATUS_SUCCESS);
    barrier();
    CHECK(dpt_check(mb.p + 8192, 4096, 808));
    NDK_SGE d = dpt_sge(&ma, 8192, 4096);
    CHECK_STATUS(iw_post_read(qa(), (void *)21, &d, 1, wva, wt, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeRead, (void *)21, STATUS_SUCCESS);
    CHECK(dpt_check(ma.p + 8192, 4096, 808));
    CHECK_STATUS(iw_post_invalidate(qb(), (void *)22, &mw->Header, 0), STATUS_SUCCESS);
    expect(1, NdkOperationTypeInvalidate, (void *)22, STATUS_SUCCESS);
    NTSTATUS st = mw->Dispatch->NdkCloseMw(&mw->Header, NULL, NULL);
    CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
}

/* Read with local invalidate of the sink (an FR MR on A). */
static void test_read_local_inv(void)
{
    NDK_MR *fr;
    uint8_t *pages;
    NDK_LOGICAL_ADDRESS lam[2];

    CHECK(posix_memalign((void **)&pages, 4096, 8192) == 0);
    lam[0].QuadPart = (LONGLONG)(uintptr_t)pages;
    lam[1].QuadPart = (LONGLONG)(uintptr_t)(pages + 4096);
    CHECK_STATUS(env.pd->Dispatch->NdkCreateMr(env.pd, TRUE, NULL, NULL, &fr), STATUS_SUCCESS);
    CHECK_STATUS(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 2, FALSE, NULL, NULL), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_fast_register(qa(), (void *)23, fr, 2, lam, 0, 8192, (void *)(uintptr_t)0x20000,
                                     NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_DEFER),
                 STATUS_SUCCESS);
    uint32_t t = fr->Dispatch->NdkGetLocalTokenFromMr(fr);
    dpt_fill(mb.p, 8192, 61);
    NDK_SGE s[2] = { { .VirtualAddress = (void *)(uintptr_t)0x20000, .Length = 5000, .MemoryRegionToken = t },
                     { .VirtualAddress = (void *)(uintptr_t)(0x20000 + 5000), .Length = 3192, .MemoryRegionToken = t } };
    CHECK_STATUS(iw_post_read(qa(), (void *)24, s, 2, (uint64_t)(uintptr_t)mb.p, mb.token,
                            NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE),
                 STATUS_SUCCESS);
    expect(0, NdkOperationTypeFastRegister, (void *)23, STATUS_SUCCESS);
    expect(0, NdkOperationTypeRead, (void *)24, STATUS_SUCCESS);
    CHECK(dpt_check(pages, 8192, 61));
    /* the token is gone: using it now fails the request (local protection) and the QP */
    CHECK_STATUS(iw_post_invalidate(qa(), (void *)25, &fr->Header, 0), STATUS_SUCCESS);
    expect(0, NdkOperationTypeInvalidate, (void *)25, STATUS_ACCESS_VIOLATION);
    NTSTATUS cst = fr->Dispatch->NdkCloseMr(&fr->Header, NULL, NULL);
    CHECK(cst == STATUS_SUCCESS || cst == STATUS_PENDING);   /* the flush may still hold it */
    free(pages);
}

static void test_srq(void)
{
    /* side 1 created with an SRQ in this connection */
    NDK_SRQ *srq = env.s[1].srq;
    NDK_RESULT_EX res;
    for (int i = 0; i < 4; i++) {
        NDK_SGE r = dpt_sge(&mb, 4096 * (size_t)i, 4096);
        CHECK_STATUS(srq->Dispatch->NdkSrqReceive(srq, (void *)(uintptr_t)(200 + i), &r, 1), STATUS_SUCCESS);
    }
    CHECK_STATUS(iw_post_receive(qb(), NULL, NULL, 0), STATUS_INVALID_DEVICE_REQUEST);
    for (int i = 0; i < 4; i++) {
        NDK_SGE s = dpt_sge(&ma, 0, 1000 + (size_t)i);
        dpt_fill(ma.p, 1000 + (size_t)i, 300 + (uint32_t)i);
        CHECK_STATUS(iw_post_send(qa(), (void *)(uintptr_t)(210 + i), &s, 1, 0), STATUS_SUCCESS);
        expect(0, NdkOperationTypeSend, (void *)(uintptr_t)(210 + i), STATUS_SUCCESS);
        dpt_poll(&env, 1, &res, 20000);
        CHECK(res.RequestContext == (void *)(uintptr_t)(200 + i));
        CHECK(res.QPContext == (void *)(uintptr_t)0x1001);
        CHECK_EQ(res.BytesTransferred, 1000 + i);
        CHECK(dpt_check(mb.p + 4096 * (size_t)i, 1000 + (size_t)i, 300 + (uint32_t)i));
    }
}

int main(int argc, char **argv)
{
    struct dpt_conn_opts o;
    dpt_conn_opts_default(&o);
    for (int i = 1; i < argc; i++)
        dpt_conn_opts_arg(&o, argv[i]);
    big = o.split == DPT_DIRECT ? 16u << 20 : o.split == DPT_RANDOM ? 1u << 20 : 65536;
    o.ord = 4;
    o.ird = 4;
    dpt_env_init(&env);
    dpt_mr_reg(&env, &ma, 2 * big + 65536,
               NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    dpt_mr_reg(&env, &mb, 2 * big + 65536,
               NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    dpt_connect(&env, &o);

    const size_t sizes[] = { 0, 1, 4095, 4096, 65536, 1u << 20, 16u << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && sizes[i] <= big; i++) {
        test_send(sizes[i], 10 + (uint32_t)i, i & 1);
        test_write(sizes[i], 3, 20 + (uint32_t)i, 1);
        if (sizes[i])
            test_read(sizes[i], sizes[i] >= 16 ? 3 : 1, 0);
    }
    for (uint32_t n = 1; n <= IW_MAX_SGE; n++) {
        test_send_sges(n, 5000 + n * 777);
        test_write(3000 + n * 100, 17, 40 + n, n);
        test_read(2000 + n * 333, n, 0);
    }
    test_read_queue();
    test_inline();
    test_limits();
    test_defer();
    test_frmr_and_inv();
    test_bind();
    CHECK(dpt_mr_guard_ok(&ma) && dpt_mr_guard_ok(&mb));
    test_read_local_inv();   /* ends with a failed Invalidate: QP A goes to error */
    dpt_wait_lost(&env, 0, 5000);
    dpt_disconnect(&env);

    /* SRQ on side 1 */
    o.srq_b = true;
    dpt_connect(&env, &o);
    test_srq();
    dpt_disconnect(&env);

    dpt_mr_free(&env, &ma);
    dpt_mr_free(&env, &mb);
    dpt_env_fini(&env);
    printf("test_dp_ops: OK\n");
    return 0;
}
