/* cases_objects.c - every create/close pair with the header and dispatch rules, out-of-order
 * close, and the asynchronous completion contract (NDKPI reference §0.4, §1.4, §1.5, §2.1,
 * §5.1, §5.2). */
#define _GNU_SOURCE
#include "conform.h"

#include <arpa/inet.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A dispatch table of NULL entries: once the consumer has interposed it (§1.5 allows the consumer
 * to overwrite Dispatch), a provider that reads Dispatch itself calls NULL and the case dies. */
static const void *const poison_table[16];

/* The consumer's side of the header after creation (§1.4, §1.5): scribble NdkReserved, interpose
 * Dispatch. Returns the real table, through which the case keeps calling. */
static const void *take_over(void *obj)
{
    struct cf_obj *o = obj;
    const void *table = o->Dispatch;
    memset(&o->Header.NdkReserved, 0xA5, sizeof o->Header.NdkReserved);
    o->Dispatch = poison_table;
    return table;
}

static void close_via(const void *table, void *obj)
{
    NTSTATUS st;
    struct cf_op *op = cf_close_start_with(table, obj, &st);
    CHECK_MSG(cf_close_wait(op, cf_ms(10000)), "close never completed");
}

#define ROUNDS 3

void case_create_close_pd(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    for (int r = 0; r < ROUNDS; r++) {
        NDK_PD *pd = cf_pd(&a);
        const NDK_PD_DISPATCH *d = take_over(pd);
        /* The token is the PD's, synchronous and stable (§2.5): two reads into different
         * sentinels give one value, so the call really wrote it. */
        UINT32 tok = 0x12345678, tok2 = 0x87654321;
        d->NdkGetPrivilegedMemoryRegionToken(pd, &tok);
        d->NdkGetPrivilegedMemoryRegionToken(pd, &tok2);
        CHECK_MSG(tok == tok2, "privileged token not stable: %#x then %#x", tok, tok2);
        /* A child created through the real table while Dispatch is interposed. */
        struct cf_op *op = cf_op_new("NdkCreateMr");
        NDK_MR *mr = CF_SENTINEL, *out;
        NTSTATUS st = d->NdkCreateMr(pd, FALSE, cf_create_cb, op, &mr);
        CHECK_ST(cf_create_done(op, st, (void *const *)&mr, NdkObjectTypeMr, a.version, (void **)&out), STATUS_SUCCESS);
        cf_close(out);
        close_via(d, pd);
    }
    cf_ad_close(&a);
}

void case_create_close_cq(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    for (int r = 0; r < ROUNDS; r++) {
        struct cf_cq *cq = cf_cq(&a, 16 << r);
        const NDK_CQ_DISPATCH *d = take_over(cq->cq);
        NDK_RESULT_EX res[2];
        NDK_RESULT res1[2];
        CHECK_EQ(d->NdkGetCqResultsEx(cq->cq, res, 2), 0);
        CHECK_EQ(d->NdkGetCqResults(cq->cq, res1, 2), 0);
        d->NdkArmCq(cq->cq, NDK_CQ_NOTIFY_ANY);
        close_via(d, cq->cq);
        CHECK_MSG(cf_cq_notifies(cq) == 0, "a notification for an empty CQ (§5.7)");
    }
    cf_ad_close(&a);
}

void case_create_close_qp(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *rcq = cf_cq(&a, 64), *icq = cf_cq(&a, 64);
    struct cf_mem m;
    cf_mem_alloc(&m, 4096, 0, 0);
    cf_mem_reg(&m, &a, pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (int r = 0; r < ROUNDS; r++) {
        NDK_QP *qp;
        /* Distinct and shared receive/initiator CQs (§8.26). */
        struct cf_cq *i2 = (r & 1) ? rcq : icq;
        CHECK_ST(cf_try_qp(&a, pd, rcq, i2, (void *)(uintptr_t)(0x900 + r), 8, 8, 2, 2, 0, &qp), STATUS_SUCCESS);
        const NDK_QP_DISPATCH *d = take_over(qp);
        /* Receives may be posted before the connection exists (§8.28). */
        NDK_SGE sge = cf_sge(&m, 0, 4096);
        CHECK_ST(d->NdkReceive(qp, (PVOID)(uintptr_t)0x77, &sge, 1), STATUS_SUCCESS);
        d->NdkFlush(qp);
        close_via(d, qp);
        /* The flushed receive either completed with STATUS_CANCELLED or vanished with its QP. */
        NDK_RESULT_EX res[4];
        ULONG n = cf_cq_poll(rcq, res, 4);
        CHECK_MSG(n <= 1, "%u completions for one receive", n);
        if (n == 1) {
            CHECK_ST(res[0].Status, STATUS_CANCELLED);
            CHECK_EQ((uintptr_t)res[0].RequestContext, 0x77);
            CHECK_EQ((uintptr_t)res[0].QPContext, 0x900 + r);
        }
    }
    cf_mem_free(&m);
    cf_cq_close(icq);
    cf_cq_close(rcq);
    cf_close(pd);
    cf_ad_close(&a);
}

void case_create_close_qp_srq(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    if (!a.info.MaxSrqDepth)
        ndk_test_skip("the adapter has no SRQ support (MaxSrqDepth 0)");
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *cq = cf_cq(&a, 64);
    struct cf_srq *s = cf_srq(pd, &a, 16, 1, 0);
    for (int r = 0; r < ROUNDS; r++) {
        NDK_QP *qp;
        CHECK_ST(cf_try_qp_srq(&a, pd, cq, cq, s->srq, NULL, 8, 2, 0, &qp), STATUS_SUCCESS);
        const NDK_QP_DISPATCH *d = take_over(qp);
        d->NdkFlush(qp);
        close_via(d, qp);
    }
    cf_srq_close(s);
    cf_cq_close(cq);
    cf_close(pd);
    cf_ad_close(&a);
}

void case_create_close_srq(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    if (!a.info.MaxSrqDepth)
        ndk_test_skip("the adapter has no SRQ support (MaxSrqDepth 0)");
    NDK_PD *pd = cf_pd(&a);
    struct cf_mem m;
    cf_mem_alloc(&m, 4096, 0, 0);
    cf_mem_reg(&m, &a, pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (int r = 0; r < ROUNDS; r++) {
        struct cf_srq *s = cf_srq(pd, &a, 16, 2, 0);
        const NDK_SRQ_DISPATCH *d = take_over(s->srq);
        NDK_SGE sge = cf_sge(&m, 0, 4096);
        CHECK_ST(d->NdkSrqReceive(s->srq, NULL, &sge, 1), STATUS_SUCCESS);
        struct cf_op *op = cf_op_new("NdkModifySrq");
        CHECK_ST(cf_req_done(op, d->NdkModifySrq(s->srq, 32, 0, cf_req_cb, op)), STATUS_SUCCESS);
        close_via(d, s->srq);
        CHECK_MSG(cf_srq_notifies(s) == 0, "SRQ notification without a threshold (§5.9)");
    }
    cf_mem_free(&m);
    cf_close(pd);
    cf_ad_close(&a);
}

void case_create_close_mr(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    struct cf_mem m;
    cf_mem_alloc(&m, 3 * 4096 + 17, 0, 123);
    MDL *mdl = IoAllocateMdl(m.buf, (ULONG)m.len, FALSE, FALSE, NULL);
    ULONG flags[] = { NDK_MR_FLAG_ALLOW_LOCAL_READ, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, NDK_MR_FLAG_ALLOW_REMOTE_READ,
                      NDK_MR_FLAG_ALLOW_REMOTE_WRITE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                                                          NDK_MR_FLAG_RDMA_READ_SINK };
    for (size_t r = 0; r < sizeof flags / sizeof flags[0]; r++) {
        NDK_MR *mr = cf_mr(&a, pd, FALSE);
        const NDK_MR_DISPATCH *d = take_over(mr);
        struct cf_op *op = cf_op_new("NdkRegisterMr");
        CHECK_ST(cf_req_done(op, d->NdkRegisterMr(mr, mdl, m.len, flags[r], cf_req_cb, op)), STATUS_SUCCESS);
        UINT32 l = d->NdkGetLocalTokenFromMr(mr), rt = d->NdkGetRemoteTokenFromMr(mr);
        cf_note("flags %#x: local token %#x remote token %#x", flags[r], l, rt);
        UINT32 priv;
        pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &priv);
        CHECK_MSG(l != priv, "an MR's local token equals the privileged token");
        /* Deregistered MRs can be registered again (§2.6). */
        op = cf_op_new("NdkDeregisterMr");
        CHECK_ST(cf_req_done(op, d->NdkDeregisterMr(mr, cf_req_cb, op)), STATUS_SUCCESS);
        op = cf_op_new("NdkRegisterMr(again)");
        CHECK_ST(cf_req_done(op, d->NdkRegisterMr(mr, mdl, m.len, flags[r], cf_req_cb, op)), STATUS_SUCCESS);
        /* Closing a registered MR is allowed. */
        close_via(d, mr);
    }
    NdkMdlChainFree(mdl);
    cf_mem_free(&m);
    cf_close(pd);
    cf_ad_close(&a);
}

void case_create_close_frmr(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    UINT32 priv;
    pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &priv);
    for (int r = 0; r < ROUNDS; r++) {
        /* Two live FRMRs, so that their tokens can be told apart. */
        NDK_MR *mr = cf_mr(&a, pd, TRUE), *other = cf_mr(&a, pd, TRUE);
        const NDK_MR_DISPATCH *d = take_over(mr);
        struct cf_op *op = cf_op_new("NdkInitializeFastRegisterMr");
        CHECK_ST(cf_req_done(op, d->NdkInitializeFastRegisterMr(mr, a.info.FRMRPageCount, r & 1, cf_req_cb, op)),
                 STATUS_SUCCESS);
        /* May be called repeatedly (§2.6). */
        op = cf_op_new("NdkInitializeFastRegisterMr(again)");
        CHECK_ST(cf_req_done(op, d->NdkInitializeFastRegisterMr(mr, 16, TRUE, cf_req_cb, op)), STATUS_SUCCESS);
        op = cf_op_new("NdkInitializeFastRegisterMr(other)");
        CHECK_ST(cf_req_done(op, other->Dispatch->NdkInitializeFastRegisterMr(other, 16, TRUE, cf_req_cb, op)),
                 STATUS_SUCCESS);
        /* Valid once the initialisation completed (§2.6): stable, the MR's own, never the
         * privileged token (which must not grant remote access, §2.5). */
        UINT32 l = d->NdkGetLocalTokenFromMr(mr), rt = d->NdkGetRemoteTokenFromMr(mr);
        CHECK_EQ(d->NdkGetLocalTokenFromMr(mr), l);
        CHECK_EQ(d->NdkGetRemoteTokenFromMr(mr), rt);
        CHECK_MSG(l != priv && rt != priv, "an FRMR token (local %#x, remote %#x) is the privileged token", l, rt);
        UINT32 ol = other->Dispatch->NdkGetLocalTokenFromMr(other), ort = other->Dispatch->NdkGetRemoteTokenFromMr(other);
        CHECK_MSG(l != ol && rt != ort, "two live FRMRs share a token (local %#x/%#x, remote %#x/%#x)", l, ol, rt, ort);
        cf_close(other);
        close_via(d, mr);
    }
    cf_close(pd);
    cf_ad_close(&a);
}

void case_create_close_mw(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    UINT32 priv;
    pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &priv);
    for (int r = 0; r < ROUNDS; r++) {
        NDK_MW *mw = cf_mw(&a, pd), *other = cf_mw(&a, pd);
        const NDK_MW_DISPATCH *d = take_over(mw);
        /* The token is meaningful only after a bind (§2.7, checked by the bind cases); before
         * one it is still a synchronous, stable read, and a window's token never names the
         * privileged region, which must not be reachable remotely (§2.5). */
        UINT32 t = d->NdkGetRemoteTokenFromMw(mw), o = other->Dispatch->NdkGetRemoteTokenFromMw(other);
        CHECK_EQ(d->NdkGetRemoteTokenFromMw(mw), t);
        CHECK_MSG(t != priv && o != priv, "an MW token (%#x, %#x) is the privileged token %#x", t, o, priv);
        CHECK_MSG(t != o, "two live MWs share the token %#x", t);
        cf_close(other);
        close_via(d, mw);
    }
    cf_close(pd);
    cf_ad_close(&a);
}

void case_create_close_connector(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    for (int r = 0; r < ROUNDS; r++) {
        NDK_CONNECTOR *c = cf_connector(&a);
        const NDK_CONNECTOR_DISPATCH *d = take_over(c);
        /* Before a connection exists the address getters may fail, but must not pend or crash
         * (§8.37); with a too-small buffer they never write beyond it. */
        for (int peer = 0; peer < 2; peer++) {
            const char *fn = peer ? "NdkGetPeerAddress" : "NdkGetLocalAddress";
            NDK_FN_GET_LOCAL_ADDRESS get = peer ? d->NdkGetPeerAddress : d->NdkGetLocalAddress;
            unsigned char buf[sizeof(SOCKADDR_INET) + 16];
            for (ULONG give = 0; give <= sizeof(SOCKADDR_INET); give += sizeof(SOCKADDR_INET) / 2) {
                memset(buf, 0xA5, sizeof buf);
                ULONG len = give;
                NTSTATUS st = get(c, give ? (PSOCKADDR)buf : NULL, &len);
                CHECK_MSG(st != STATUS_PENDING, "%s on an unconnected connector pended (§8.37)", fn);
                if (st == STATUS_SUCCESS)
                    CHECK_MSG(len <= give, "%s succeeded with %u bytes into a %u-byte buffer", fn, len, give);
                for (size_t i = give; i < sizeof buf; i++)
                    CHECK_MSG(buf[i] == 0xA5, "%s wrote byte %zu of a %u-byte buffer", fn, i, give);
            }
        }
        close_via(d, c);
    }
    cf_ad_close(&a);
}

static void no_connect_cb(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    (void)c;
}

void case_create_close_listener(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    uint16_t last_port = 0;
    for (int r = 0; r < ROUNDS; r++) {
        struct cf_op *op = cf_op_new("NdkCreateListener");
        NDK_LISTENER *l = CF_SENTINEL, *out;
        NTSTATUS st = a.ad->Dispatch->NdkCreateListener(a.ad, no_connect_cb, NULL, cf_create_cb, op, &l);
        CHECK_ST(cf_create_done(op, st, (void *const *)&l, NdkObjectTypeListener, a.version, (void **)&out),
                 STATUS_SUCCESS);
        l = out;
        const NDK_LISTENER_DISPATCH *d = take_over(l);
        SOCKADDR_INET addr = cf_addr(r == 2 ? last_port : 0);
        op = cf_op_new("NdkListen");
        st = cf_req_done(op, d->NdkListen(l, (PSOCKADDR)&addr, cf_addr_len(&addr), cf_req_cb, op));
        /* Round 2 reuses the port of round 1, whose listener was closed: it must be free again. */
        CHECK_MSG(st == STATUS_SUCCESS, "NdkListen (round %d, port %u): %s", r, cf_port(&addr), cf_status_name(st));
        SOCKADDR_INET got;
        ULONG len = 0;
        st = d->NdkGetLocalAddress(l, NULL, &len);
        CHECK_MSG(st == STATUS_BUFFER_TOO_SMALL && len == cf_addr_len(&addr),
                  "NdkGetLocalAddress(NULL, 0): %s, size %u (§5.11.7)", cf_status_name(st), len);
        len = sizeof got;
        CHECK_ST(d->NdkGetLocalAddress(l, (PSOCKADDR)&got, &len), STATUS_SUCCESS);
        CHECK_EQ(len, cf_addr_len(&addr));
        CHECK_MSG(cf_addr_same_ip(&got, &addr), "listener address differs from the one listened on");
        if (r < 2) {
            CHECK_MSG(cf_port(&got) >= NDK_EPHEMERAL_PORT_FIRST,
                      "port 0 gave port %u, outside the ephemeral range 49152-65535 (§2.12, §5.11.5)", cf_port(&got));
        } else {
            CHECK_EQ(cf_port(&got), last_port);
        }
        last_port = cf_port(&got);
        d->NdkControlConnectEvents(l, TRUE);
        d->NdkControlConnectEvents(l, FALSE);
        close_via(d, l);
    }
    cf_ad_close(&a);
}

void case_create_close_sep(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    SOCKADDR_INET any = cf_addr(0);
    for (int r = 0; r < ROUNDS; r++) {
        NDK_SHARED_ENDPOINT *sep;
        CHECK_ST(cf_try_sep(&a, &any, &sep), STATUS_SUCCESS);
        const NDK_SHARED_ENDPOINT_DISPATCH *d = take_over(sep);
        SOCKADDR_INET got;
        ULONG len = 4;
        NTSTATUS st = d->NdkGetLocalAddress(sep, (PSOCKADDR)&got, &len);
        CHECK_MSG(st == STATUS_BUFFER_TOO_SMALL && len == cf_addr_len(&any),
                  "NdkGetSharedEndpointLocalAddress with 4 bytes: %s, size %u (§2.10)", cf_status_name(st), len);
        len = sizeof got;
        CHECK_ST(d->NdkGetLocalAddress(sep, (PSOCKADDR)&got, &len), STATUS_SUCCESS);
        CHECK_MSG(cf_addr_same_ip(&got, &any), "shared endpoint address differs");
        uint16_t port = cf_port(&got);
        CHECK_MSG(port >= NDK_EPHEMERAL_PORT_FIRST, "port 0 gave %u, outside 49152-65535 (§2.3)", port);
        /* The same address/port again: STATUS_SHARING_VIOLATION (§2.3), inline or async. */
        NDK_SHARED_ENDPOINT *dup;
        st = cf_try_sep(&a, &got, &dup);
        CHECK_MSG(st == STATUS_SHARING_VIOLATION, "second shared endpoint on port %u: %s, expected "
                  "STATUS_SHARING_VIOLATION", port, cf_status_name(st));
        /* Not an address of this adapter: STATUS_INVALID_ADDRESS. */
        SOCKADDR_INET foreign = cf_foreign_addr(0);
        st = cf_try_sep(&a, &foreign, &dup);
        CHECK_MSG(st == STATUS_INVALID_ADDRESS, "shared endpoint on a foreign address: %s", cf_status_name(st));
        close_via(d, sep);
        /* Closed: the port is free again. */
        st = cf_try_sep(&a, &got, &dup);
        CHECK_MSG(st == STATUS_SUCCESS, "port %u still taken after the shared endpoint closed: %s", port,
                  cf_status_name(st));
        cf_close(dup);
    }
    cf_ad_close(&a);
}

/* ---- out-of-order close (§5.1) ---- */

static void expect_pending_close(struct cf_op *op, NTSTATUS st, const char *what)
{
    CHECK_MSG(st == STATUS_PENDING, "closing %s with live successors returned %s; it must pend (§5.1)", what,
              cf_status_name(st));
    cf_sleep_ms(50);
    CHECK_MSG(!cf_close_finished(op), "close of %s completed while successors were still open (§5.1)", what);
}

/* The antecedent's completion must not start before the successor's completion returned. */
static void expect_after(struct cf_op *ante, struct cf_op *succ, const char *what)
{
    CHECK_MSG(cf_close_wait(ante, cf_ms(10000)), "close of %s never completed after its last successor closed", what);
    if (succ->seq_leave && ante->seq_enter)
        CHECK_MSG(ante->seq_enter > succ->seq_leave,
                  "close of %s completed while a successor's close completion was still running (§5.1)", what);
}

void case_close_order_pd(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *cq = cf_cq(&a, 16);
    struct cf_mem m;
    cf_mem_alloc(&m, 8192, 0, 0);
    cf_mem_reg(&m, &a, pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_MW *mw = cf_mw(&a, pd);
    NDK_MR *fr = cf_mr(&a, pd, TRUE);
    NDK_QP *qp;
    CHECK_ST(cf_try_qp(&a, pd, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
    struct cf_srq *s = a.info.MaxSrqDepth ? cf_srq(pd, &a, 4, 1, 0) : NULL;

    NTSTATUS st;
    struct cf_op *pdc = cf_close_start(pd, &st);
    expect_pending_close(pdc, st, "a PD");
    struct cf_op *last = cf_close_start_ex(((struct cf_obj *)mw)->Dispatch, mw, 20, &st);
    CHECK(cf_close_wait(last, cf_ms(10000)));
    CHECK_MSG(!cf_close_finished(pdc), "PD close completed with children open");
    last = cf_close_start_ex(((struct cf_obj *)fr)->Dispatch, fr, 20, &st);
    CHECK(cf_close_wait(last, cf_ms(10000)));
    CHECK_MSG(!cf_close_finished(pdc), "PD close completed with children open");
    if (s) {
        last = cf_close_start_ex(((struct cf_obj *)s->srq)->Dispatch, s->srq, 20, &st);
        CHECK(cf_close_wait(last, cf_ms(10000)));
        CHECK_MSG(!cf_close_finished(pdc), "PD close completed with children open");
    }
    last = cf_close_start_ex(((struct cf_obj *)qp)->Dispatch, qp, 20, &st);
    CHECK(cf_close_wait(last, cf_ms(10000)));
    CHECK_MSG(!cf_close_finished(pdc), "PD close completed while its MR was open");
    CHECK_ST(cf_deregister(m.mr), STATUS_SUCCESS);
    last = cf_close_start_ex(((struct cf_obj *)m.mr)->Dispatch, m.mr, 20, &st);
    m.mr = NULL;
    expect_after(pdc, last, "the PD");
    cf_mem_free(&m);
    cf_cq_close(cq);
    cf_ad_close(&a);
}

void case_close_order_cq(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *ca = cf_cq(&a, 16), *cb = cf_cq(&a, 16);
    NDK_QP *q1, *q2 = NULL;
    CHECK_ST(cf_try_qp(&a, pd, ca, cb, NULL, 4, 4, 1, 1, 0, &q1), STATUS_SUCCESS);
    struct cf_srq *s = NULL;
    if (a.info.MaxSrqDepth) {
        s = cf_srq(pd, &a, 4, 1, 0);
        CHECK_ST(cf_try_qp_srq(&a, pd, cb, cb, s->srq, NULL, 4, 1, 0, &q2), STATUS_SUCCESS);
    }
    NTSTATUS st;
    struct cf_op *ca_c = cf_close_start(ca->cq, &st);
    expect_pending_close(ca_c, st, "a receive CQ of a live QP");
    struct cf_op *cb_c = cf_close_start(cb->cq, &st);
    expect_pending_close(cb_c, st, "an initiator CQ of a live QP");
    struct cf_op *s_c = NULL;
    if (s) {
        s_c = cf_close_start(s->srq, &st);
        expect_pending_close(s_c, st, "the SRQ of a live QP");
    }
    struct cf_op *q1c = cf_close_start_ex(((struct cf_obj *)q1)->Dispatch, q1, 20, &st);
    CHECK(cf_close_wait(q1c, cf_ms(10000)));
    expect_after(ca_c, q1c, "the receive CQ");
    if (q2) {
        cf_sleep_ms(30);
        CHECK_MSG(!cf_close_finished(cb_c), "CQ close completed while a QP with SRQ still used it");
        CHECK_MSG(!cf_close_finished(s_c), "SRQ close completed while its QP was open");
        struct cf_op *q2c = cf_close_start_ex(((struct cf_obj *)q2)->Dispatch, q2, 20, &st);
        CHECK(cf_close_wait(q2c, cf_ms(10000)));
        expect_after(cb_c, q2c, "the shared CQ");
        expect_after(s_c, q2c, "the SRQ");
    } else {
        expect_after(cb_c, q1c, "the initiator CQ");
    }
    cf_close(pd);
    cf_ad_close(&a);
}

struct adclose {
    struct cf_ad *a;
    _Atomic int done;
};

static void *adapter_closer(void *arg)
{
    struct adclose *c = arg;
    ndk_rt_close_adapter(c->a->rt, c->a->ad);
    atomic_store(&c->done, 1);
    return NULL;
}

void case_close_order_adapter(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *cq = cf_cq(&a, 16);
    struct adclose c = { &a, 0 };
    pthread_t t;
    CHECK(pthread_create(&t, NULL, adapter_closer, &c) == 0);
    cf_sleep_ms(200);
    CHECK_MSG(atomic_load(&c.done) == 0, "the blocking adapter close returned while a PD and a CQ were open (§8.1)");
    cf_close(pd);
    cf_sleep_ms(50);
    CHECK_MSG(atomic_load(&c.done) == 0, "the blocking adapter close returned while a CQ was open (§8.1)");
    cf_cq_close(cq);
    uint64_t end = cf_now_ms() + (uint64_t)cf_ms(10000);
    while (!atomic_load(&c.done) && cf_now_ms() < end)
        cf_sleep_ms(5);
    CHECK_MSG(atomic_load(&c.done), "the adapter close did not return after its last child closed");
    pthread_join(t, NULL);
    a.ad = NULL;
    cf_ad_close(&a);
}

/* ---- close from inside callbacks (§5.2, §2.4) ---- */

/* An address of the family under test whose port nothing listens on: a TCP port the kernel
 * handed out and that was closed again. */
static SOCKADDR_INET dead_port(void)
{
    SOCKADDR_INET a = cf_addr(0);
    socklen_t len = cf_addr_len(&a);
    int fd = socket(a.si_family, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK(bind(fd, (struct sockaddr *)&a, len) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return a;
}

static struct cf_op *hook_close_op;
static _Atomic uint64_t notify_leave_seq;

static void close_in_hook(struct cf_op *op)
{
    NTSTATUS st;
    hook_close_op = cf_close_start(op->hook_arg, &st);
}

static void close_cq_in_notify(struct cf_cq *cq, NTSTATUS st)
{
    (void)st;
    NTSTATUS cst;
    hook_close_op = cf_close_start(cq->cq, &cst);
    /* §2.4: the close stays pending until this callback returns; spin to give a buggy provider
     * the chance to complete it early. */
    uint64_t t0 = cf_now_ms();
    while (cf_now_ms() - t0 < 30)
        ;
    atomic_store(&notify_leave_seq, cf_seq());
}

void case_async_close_in_callback(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *cq = cf_cq(&a, 16);
    NDK_QP *qp;
    CHECK_ST(cf_try_qp(&a, pd, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
    int exercised = 0;

    /* 1. The documented example (§5.2): a connect that fails, the connector closed from inside
     * its completion. A port with nothing behind it: a listener opened and closed. */
    SOCKADDR_INET dst = dead_port();
    NDK_CONNECTOR *cn = cf_connector(&a);
    struct cf_op *op = cf_op_new("NdkConnect(refused)");
    op->hook = close_in_hook;
    op->hook_arg = cn;
    SOCKADDR_INET src = cf_addr(0);
    hook_close_op = NULL;
    NTSTATUS st = cn->Dispatch->NdkConnect(cn, qp, (PSOCKADDR)&src, cf_addr_len(&src), (PSOCKADDR)&dst,
                                           cf_addr_len(&dst), 1, 1, NULL, 0, cf_req_cb, op);
    if (st == STATUS_PENDING) {
        /* Do not touch cn from here on: the callback owns it. */
        CHECK_MSG(cf_op_wait(op, cf_ms(20000)), "NdkConnect never completed");
        CHECK_MSG(!NT_SUCCESS(op->status), "connect to a closed port succeeded");
        CHECK(hook_close_op);
        CHECK_MSG(cf_close_wait(hook_close_op, cf_ms(10000)), "connector close issued in the connect completion "
                  "never completed");
        exercised++;
    } else {
        cf_req_done(op, st);
        CHECK_FAILED(st);
        cf_close(cn);
    }

    /* 2. A CQ closed from inside its notification (§2.4): pending until the callback returned.
     * The notification comes from a flushed receive on the (unconnected) QP. */
    struct cf_mem m;
    cf_mem_alloc(&m, 4096, 0, 0);
    cf_mem_reg(&m, &a, pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE sge = cf_sge(&m, 0, 4096);
    CHECK_ST(qp->Dispatch->NdkReceive(qp, (PVOID)1, &sge, 1), STATUS_SUCCESS);
    cq->hook = close_cq_in_notify;
    hook_close_op = NULL;
    cf_cq_arm(cq, NDK_CQ_NOTIFY_ANY);
    qp->Dispatch->NdkFlush(qp);
    CHECK_MSG(cf_cq_wait_notifies(cq, 1, cf_ms(10000)), "no notification for a flushed receive on an armed CQ");
    CHECK(hook_close_op);
    CHECK_MSG(hook_close_op->has_returned && hook_close_op->returned == STATUS_PENDING,
              "NdkCloseCq called inside the CQ's notification returned %s; it must pend until the callback returns "
              "(§2.4)", cf_status_name(hook_close_op->returned));
    struct cf_op *cqc = hook_close_op;
    cf_close(qp);
    CHECK_MSG(cf_close_wait(cqc, cf_ms(10000)), "CQ close never completed");
    CHECK_MSG(cqc->seq_enter > atomic_load(&notify_leave_seq), "CQ close completed before its notification returned");
    exercised++;

    /* 3. An MR closed from inside its registration completion, when registration pends. */
    NDK_MR *mr = cf_mr(&a, pd, FALSE);
    MDL *mdl = IoAllocateMdl(m.buf, 4096, FALSE, FALSE, NULL);
    op = cf_op_new("NdkRegisterMr");
    op->hook = close_in_hook;
    op->hook_arg = mr;
    hook_close_op = NULL;
    st = mr->Dispatch->NdkRegisterMr(mr, mdl, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, cf_req_cb, op);
    if (st == STATUS_PENDING) {
        CHECK(cf_op_wait(op, cf_ms(10000)));
        CHECK(hook_close_op);
        CHECK(cf_close_wait(hook_close_op, cf_ms(10000)));
        exercised++;
    } else {
        op->hook = NULL;
        cf_req_done(op, st);
        cf_close(mr);
    }
    NdkMdlChainFree(mdl);
    cf_mem_free(&m);
    cf_close(pd);
    cf_ad_close(&a);
    cf_note("%d close-from-callback paths exercised", exercised);
}

/* Two runtime instances in one process (the runtime API allows it): closing one must leave the
 * provider working for the other. */
void case_multi_instance(void)
{
    struct cf_ad a, b;
    cf_ad_open(&a);
    cf_ad_open(&b);
    NDK_PD *pb = cf_pd(&b);
    cf_close(pb);
    ndk_rt_close_adapter(b.rt, b.ad);
    ndk_rt_close(b.rt);
    /* The first instance: objects, and a connect (to a port nothing listens on). */
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *cq = cf_cq(&a, 16);
    NDK_QP *qp;
    CHECK_ST(cf_try_qp(&a, pd, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
    NDK_CONNECTOR *cn = cf_connector(&a);
    SOCKADDR_INET dst = dead_port(), src = cf_addr(0);
    struct cf_op *op = cf_op_new("NdkConnect");
    NTSTATUS st = cn->Dispatch->NdkConnect(cn, qp, (PSOCKADDR)&src, cf_addr_len(&src), (PSOCKADDR)&dst,
                                           cf_addr_len(&dst), 1, 1, NULL, 0, cf_req_cb, op);
    st = cf_req_done(op, st);
    CHECK_MSG(st == STATUS_CONNECTION_REFUSED, "connect to a closed port after another runtime instance closed: %s",
              cf_status_name(st));
    cf_close(cn);
    cf_close(qp);
    cf_cq_close(cq);
    cf_close(pd);
    cf_ad_close(&a);
}
