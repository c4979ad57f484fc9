/* cases_mem.c - memory windows, fast registration, and protection violations (NDKPI reference
 * §2.6, §2.7, §2.9 Bind/FastRegister/Invalidate, §5.10). */
#define _GNU_SOURCE
#include "conform.h"

#include <stdlib.h>
#include <string.h>

#define T_MEM  0x7001u
#define T_DONE 0x7002u
#define T_NEXT 0x7003u
#define T_END  0x700Eu

#define RALL (NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ)
#define RSINK (NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK)

/* Waits until the target side notices the broken connection: its posted receive completes with
 * an error or a disconnect event arrives. */
static void expect_target_error(struct cf_conn *c, uintptr_t rx_ctx)
{
    uint64_t end = cf_now_ms() + (uint64_t)cf_ms(15000);
    for (;;) {
        NDK_RESULT_EX r;
        if (cf_cq_poll(c->rcq, &r, 1) == 1) {
            CHECK_EQ((uintptr_t)r.RequestContext, rx_ctx);
            CHECK_MSG(!NT_SUCCESS(r.Status), "the target's receive completed with %s after a violation",
                      cf_status_name(r.Status));
            cf_note("target: receive completed with %s", cf_status_name(r.Status));
            return;
        }
        if (cf_conn_disc_events(c) > 0) {
            cf_note("target: disconnect event");
            return;
        }
        CHECK_MSG(cf_now_ms() < end, "the target of a protection violation saw no error: no failed completion, no "
                  "disconnect event");
        cf_sleep_ms(5);
    }
}

/* The initiator's view of a remote protection violation. An RDMA Read fails by itself (its
 * response never comes). A Write may complete successfully at the initiator before the target
 * judged it (iWARP completes a Write once it is handed to the transport; the target answers a
 * bad access with a Terminate), so the initiator follows it with a probe Read of a valid remote
 * buffer: either the Write's completion or the probe's must be an error - a probe that succeeds
 * means the connection survived a protection violation unnoticed. */
static void expect_initiator_error(struct cf_conn *c, uintptr_t ctx, bool is_read, const struct cf_msg *probe,
                                   struct cf_mem *sink)
{
    if (is_read) {
        cf_cq_expect_error(c->icq, ctx, NdkOperationTypeRead);
        return;
    }
    NDK_SGE ps = cf_sge(sink, 0, 8);
    NTSTATUS st = c->qp->Dispatch->NdkRead(c->qp, (PVOID)(ctx + 1), &ps, 1, probe->addr, probe->token, 0);
    NDK_RESULT_EX w;
    CHECK_MSG(cf_cq_next(c->icq, &w, cf_ms(15000)), "the violating Write %#lx never completed", (unsigned long)ctx);
    CHECK_EQ((uintptr_t)w.RequestContext, ctx);
    CHECK_EQ(w.Type, NdkOperationTypeWrite);
    if (!NT_SUCCESS(w.Status)) {
        cf_note("the violating Write failed: %s (provider code %#x)", cf_status_name(w.Status), w.ProviderErrorCode);
        if (st == STATUS_SUCCESS) {
            NDK_RESULT_EX r;
            CHECK_MSG(cf_cq_next(c->icq, &r, cf_ms(15000)), "the probe Read never completed");
        }
        return;
    }
    CHECK_MSG(st == STATUS_SUCCESS || st == STATUS_CONNECTION_INVALID, "probe Read after the Write: %s",
              cf_status_name(st));
    if (st == STATUS_SUCCESS) {
        NDK_RESULT_EX r;
        CHECK_MSG(cf_cq_next(c->icq, &r, cf_ms(15000)), "the probe Read after the violating Write never completed");
        CHECK_EQ((uintptr_t)r.RequestContext, ctx + 1);
        CHECK_MSG(!NT_SUCCESS(r.Status), "a protection violation went unnoticed at the initiator: the Write completed "
                  "with STATUS_SUCCESS and a later Read on the same connection succeeded too");
        cf_note("the Write completed locally; the next request failed: %s", cf_status_name(r.Status));
    } else {
        cf_note("the Write completed locally; the QP refused the next request: %s", cf_status_name(st));
    }
}

/* A readable buffer the initiator's probe Read targets. */
static void expose_probe(struct cf_conn *c, struct cf_mem *m, int fd)
{
    cf_mem_alloc(m, 64, 0, 0);
    cf_mem_reg(m, &c->ad, c->pd, NDK_MR_FLAG_ALLOW_REMOTE_READ);
    cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)m->buf, m->rtok, 64, 0);
}

/* ==== memory windows ==== */

static void mw_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem m, ro, rx;
    cf_mem_alloc(&m, 4 * 4096, 256, 0);
    cf_mem_reg(&m, &c.ad, c.pd, RALL);
    cf_mem_alloc(&ro, 4096, 0, 0);
    cf_mem_reg(&ro, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_REMOTE_READ);
    cf_mem_alloc(&rx, 64, 0, 0);
    cf_mem_reg(&rx, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_MW *mw = cf_mw(&c.ad, c.pd), *mw2 = cf_mw(&c.ad, c.pd), *mw3 = cf_mw(&c.ad, c.pd);

    /* A window needing remote write over an MR without local write: STATUS_ACCESS_VIOLATION (§2.9). */
    NTSTATUS st = c.qp->Dispatch->NdkBind(c.qp, (PVOID)0xB0, ro.mr, mw3, ro.buf, 4096, NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    CHECK_MSG(st == STATUS_ACCESS_VIOLATION, "NdkBind of a remote-write window over an MR without local write: %s, "
              "expected STATUS_ACCESS_VIOLATION (§2.9 NdkBind)", cf_status_name(st));

    /* Window over pages 1-2 with remote read and write; a second one over page 3. */
    st = c.qp->Dispatch->NdkBind(c.qp, (PVOID)0xB1, m.mr, mw, m.buf + 4096, 8192,
                                 NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    CHECK_ST(st, STATUS_SUCCESS);
    UINT32 tok = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);   /* valid once Bind returned (§2.7) */
    cf_cq_expect(c.icq, 0xB1, STATUS_SUCCESS, NdkOperationTypeBind);
    CHECK_MSG(tok != m.rtok, "the window's token equals its MR's remote token");
    st = c.qp->Dispatch->NdkBind(c.qp, (PVOID)0xB2, m.mr, mw2, m.buf + 3 * 4096, 4096, NDK_OP_FLAG_ALLOW_REMOTE_READ);
    CHECK_ST(st, STATUS_SUCCESS);
    cf_cq_expect(c.icq, 0xB2, STATUS_SUCCESS, NdkOperationTypeBind);

    NDK_SGE s = cf_sge(&rx, 0, 64);
    cf_post_recv(&c, 0xC1, &s, 1);
    struct cf_mem probe;
    expose_probe(&c, &probe, fd);
    cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)m.buf + 4096, tok, 8192, 0x3344);
    /* The client writes 8 KiB through the window, reads it back, then sends. */
    cf_cq_expect(c.rcq, 0xC1, STATUS_SUCCESS, NdkOperationTypeReceive);
    CHECK_PATTERN(m.buf + 4096, 8192, 0x3344, 0);
    CHECK_MSG(cf_all(m.buf, 4096, 0) && cf_all(m.buf + 3 * 4096, 4096, 0) && cf_mem_guards_ok(&m),
              "a write through a window touched memory outside the window");

    /* Invalidate the window (§2.9): its token stops working. */
    st = c.qp->Dispatch->NdkInvalidate(c.qp, (PVOID)0x1A, &mw->Header, 0);
    CHECK_ST(st, STATUS_SUCCESS);
    cf_cq_expect(c.icq, 0x1A, STATUS_SUCCESS, NdkOperationTypeInvalidate);
    memset(m.buf + 4096, 0, 8192);
    cf_post_recv(&c, 0xC2, &s, 1);
    cf_tell(fd, T_NEXT, 0, 0, 0, 0);
    expect_target_error(&c, 0xC2);
    cf_hear(fd, T_DONE);
    CHECK_MSG(cf_all(m.buf, m.len, 0) && cf_mem_guards_ok(&m), "a write through an invalidated window reached memory");

    /* The MR is an antecedent of the window still bound to it (§1.7): its close pends. */
    CHECK_ST(cf_deregister(ro.mr), STATUS_SUCCESS);
    cf_close(ro.mr);
    ro.mr = NULL;
    cf_close(mw3);
    cf_close(mw);
    struct cf_op *mrc = cf_close_start(m.mr, &st);
    CHECK_MSG(st == STATUS_PENDING, "closing an MR with a bound window returned %s; it must pend (§5.1, §1.7)",
              cf_status_name(st));
    cf_sleep_ms(50);
    CHECK_MSG(!cf_close_finished(mrc), "MR close completed while a window was bound to it");
    cf_close(mw2);
    CHECK_MSG(cf_close_wait(mrc, cf_ms(10000)), "MR close did not complete after its window closed");
    m.mr = NULL;
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&probe);
    cf_mem_free(&m);
    cf_mem_free(&ro);
    cf_mem_free(&rx);
    cf_conn_fini(&c);
}

static void mw_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    struct cf_mem l, back;
    cf_mem_alloc(&l, 8192, 0, 0);
    cf_mem_reg(&l, &c.ad, c.pd, 0);
    cf_mem_alloc(&back, 8192, 0, 0);
    cf_mem_reg(&back, &c.ad, c.pd, RSINK);
    struct cf_msg probe = cf_hear(fd, T_MEM);
    struct cf_msg w = cf_hear(fd, T_MEM);
    cf_fill(l.buf, 8192, (uint32_t)w.arg, 0);
    NDK_SGE s = cf_sge(&l, 0, 8192);
    cf_post_write(&c, 0x11, &s, 1, w.addr, w.token, 0);
    cf_cq_expect(c.icq, 0x11, STATUS_SUCCESS, NdkOperationTypeWrite);
    NDK_SGE b = cf_sge(&back, 0, 8192);
    cf_post_read(&c, 0x12, &b, 1, w.addr, w.token, 0);
    cf_cq_expect(c.icq, 0x12, STATUS_SUCCESS, NdkOperationTypeRead);
    CHECK_PATTERN(back.buf, 8192, (uint32_t)w.arg, 0);
    NDK_SGE n = cf_sge(&l, 0, 8);
    cf_post_send(&c, 0x13, &n, 1, 0);
    cf_cq_expect(c.icq, 0x13, STATUS_SUCCESS, NdkOperationTypeSend);
    cf_hear(fd, T_NEXT);
    /* Through the invalidated window: an error. */
    cf_post_write(&c, 0x14, &s, 1, w.addr, w.token, 0);
    expect_initiator_error(&c, 0x14, false, &probe, &back);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_END);
    cf_mem_free(&back);
    cf_mem_free(&l);
    cf_conn_fini(&c);
}

void case_mw_bind_invalidate(void)
{
    cf_pair(mw_server, mw_client, NULL, cf_ms(50000));
}

/* A QP closed while a window bound through it stays open (§1.7: a window's antecedents are its
 * PD and the MR under the binding, not the QP): the QP's close completes in time, then the window
 * and the MR close. rxe used to hold such a QP for 50 s in ibv_destroy_qp. */
static void mw_qp_first_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem m;
    cf_mem_alloc(&m, 8192, 0, 0);
    cf_mem_reg(&m, &c.ad, c.pd, RALL);
    NDK_MW *mw = cf_mw(&c.ad, c.pd);
    NTSTATUS st = c.qp->Dispatch->NdkBind(c.qp, (PVOID)0xB1, m.mr, mw, m.buf, 4096,
                                          NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    CHECK_ST(st, STATUS_SUCCESS);
    cf_cq_expect(c.icq, 0xB1, STATUS_SUCCESS, NdkOperationTypeBind);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_END);
    cf_close(c.conn);
    c.conn = NULL;
    cf_close(c.qp);         /* fails after 20 s when the close does not complete */
    c.qp = NULL;
    cf_close(mw);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

static void mw_qp_first_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    cf_hear(fd, T_DONE);
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_conn_fini(&c);
}

void case_mw_qp_closes_first(void)
{
    cf_pair(mw_qp_first_server, mw_qp_first_client, NULL, cf_ms(50000));
}

/* ==== fast register ==== */

struct lam {
    MDL *mdl;
    NDK_LOGICAL_ADDRESS_MAPPING *map;
    ULONG fbo;
};

static void lam_build(struct cf_conn *c, struct lam *l, void *buf, size_t len)
{
    l->mdl = IoAllocateMdl(buf, (ULONG)len, FALSE, FALSE, NULL);
    ULONG size = 0;
    struct cf_op *op = cf_op_new("NdkBuildLAM(size)");
    NTSTATUS st = cf_req_done(op, c->ad.ad->Dispatch->NdkBuildLAM(c->ad.ad, l->mdl, len, cf_req_cb, op, NULL, &size,
                                                                   &l->fbo));
    CHECK_ST(st, STATUS_BUFFER_TOO_SMALL);
    l->map = calloc(1, size);
    op = cf_op_new("NdkBuildLAM");
    st = cf_req_done(op, c->ad.ad->Dispatch->NdkBuildLAM(c->ad.ad, l->mdl, len, cf_req_cb, op, l->map, &size, &l->fbo));
    CHECK_ST(st, STATUS_SUCCESS);
}

static void lam_free(struct cf_conn *c, struct lam *l)
{
    c->ad.ad->Dispatch->NdkReleaseLAM(c->ad.ad, l->map);
    free(l->map);
    NdkMdlChainFree(l->mdl);
}

#define FR_LABEL 0x70000000ull

static void fr_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem m, m2, rx;
    cf_mem_alloc(&m, 3 * 4096, 256, 200);     /* FBO 200 */
    cf_mem_alloc(&m2, 4096, 0, 0);            /* page aligned: base address 0 allowed (§8.13) */
    cf_mem_alloc(&rx, 4096, 0, 0);
    cf_mem_reg(&rx, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    struct lam l1, l2;
    lam_build(&c, &l1, m.buf, m.len);
    lam_build(&c, &l2, m2.buf, m2.len);
    CHECK_EQ(l1.fbo, 200);
    CHECK_EQ(l1.map->AdapterPageCount, 4);

    NDK_MR *fr = cf_mr(&c.ad, c.pd, TRUE);
    CHECK_ST(cf_init_frmr(fr, c.ad.info.FRMRPageCount, TRUE), STATUS_SUCCESS);
    /* Remote rights on an FRMR initialised without RemoteAccess: STATUS_ACCESS_VIOLATION (§2.9). */
    NDK_MR *local = cf_mr(&c.ad, c.pd, TRUE);
    CHECK_ST(cf_init_frmr(local, 4, FALSE), STATUS_SUCCESS);
    NTSTATUS st = c.qp->Dispatch->NdkFastRegister(c.qp, (PVOID)0xF0, local, 1, l2.map->AdapterPageArray, 0, 4096,
                                                  NULL, NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    CHECK_MSG(st == STATUS_ACCESS_VIOLATION, "NdkFastRegister with remote write on an MR initialised without "
              "RemoteAccess: %s, expected STATUS_ACCESS_VIOLATION", cf_status_name(st));

    /* Register over the LAM: the region starts at FBO in the first page; peers address it by the
     * label BaseVirtualAddress, which is not the buffer's address (§2.9, §5.10). */
    size_t len = 2 * 4096 + 100;
    uint64_t base = FR_LABEL + l1.fbo;
    st = c.qp->Dispatch->NdkFastRegister(c.qp, (PVOID)0xF1, fr, l1.map->AdapterPageCount, l1.map->AdapterPageArray,
                                         l1.fbo, len, (PVOID)(uintptr_t)base,
                                         NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_READ |
                                             NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_RDMA_READ_SINK);
    CHECK_ST(st, STATUS_SUCCESS);
    UINT32 tok = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
    cf_cq_expect(c.icq, 0xF1, STATUS_SUCCESS, NdkOperationTypeFastRegister);
    NDK_SGE s = cf_sge(&rx, 0, 4096);
    cf_post_recv(&c, 0xC1, &s, 1);
    cf_tell(fd, T_MEM, base, tok, len, 0xF00D);
    cf_cq_expect(c.rcq, 0xC1, STATUS_SUCCESS, NdkOperationTypeReceive);
    CHECK_PATTERN(m.buf, len, 0xF00D, 0);
    CHECK_MSG(cf_all(m.buf + len, m.len - len, 0) && cf_mem_guards_ok(&m), "write beyond the fast-registered length");
    /* The client also sent 300 bytes gathered from a privileged-token LAM buffer (§4.4). */
    CHECK_PATTERN(rx.buf, 300, 0xAB, 0);

    /* Invalidate, then register the same MR again at base address 0. */
    st = c.qp->Dispatch->NdkInvalidate(c.qp, (PVOID)0x1A, &fr->Header, 0);
    CHECK_ST(st, STATUS_SUCCESS);
    cf_cq_expect(c.icq, 0x1A, STATUS_SUCCESS, NdkOperationTypeInvalidate);
    st = c.qp->Dispatch->NdkFastRegister(c.qp, (PVOID)0xF2, fr, 1, l2.map->AdapterPageArray, 0, 4096, NULL,
                                         NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    CHECK_MSG(st == STATUS_SUCCESS, "NdkFastRegister with BaseVirtualAddress 0 and FBO 0: %s (§8.13)",
              cf_status_name(st));
    UINT32 tok2 = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
    cf_cq_expect(c.icq, 0xF2, STATUS_SUCCESS, NdkOperationTypeFastRegister);
    cf_post_recv(&c, 0xC2, &s, 1);
    cf_tell(fd, T_MEM, 10, tok2, 50, 0xBEEF);
    cf_cq_expect(c.rcq, 0xC2, STATUS_SUCCESS, NdkOperationTypeReceive);
    CHECK_PATTERN(m2.buf + 10, 50, 0xBEEF, 0);
    CHECK_MSG(cf_all(m2.buf, 10, 0) && cf_all(m2.buf + 60, 4096 - 60, 0), "write at label 0+10 landed elsewhere");
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_hear(fd, T_DONE);
    cf_close(fr);
    cf_close(local);
    lam_free(&c, &l1);
    lam_free(&c, &l2);
    cf_mem_free(&rx);
    cf_mem_free(&m2);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

static void fr_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    struct cf_mem l, back, p;
    cf_mem_alloc(&l, 3 * 4096, 0, 0);
    cf_mem_reg(&l, &c.ad, c.pd, 0);
    cf_mem_alloc(&back, 3 * 4096, 0, 0);
    cf_mem_reg(&back, &c.ad, c.pd, RSINK);
    cf_mem_alloc(&p, 4096, 0, 0);
    struct lam pl;
    lam_build(&c, &pl, p.buf, 300);
    UINT32 priv;
    c.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(c.pd, &priv);
    for (int round = 0;; round++) {
        struct cf_msg w = cf_hear_any(fd);
        if (w.tag == T_END)
            break;
        cf_fill(l.buf, w.len, (uint32_t)w.arg, 0);
        NDK_SGE s = cf_sge(&l, 0, (ULONG)w.len);
        cf_post_write(&c, 0x21, &s, 1, w.addr, w.token, 0);
        cf_cq_expect(c.icq, 0x21, STATUS_SUCCESS, NdkOperationTypeWrite);
        NDK_SGE b = cf_sge(&back, 0, (ULONG)w.len);
        if (round == 0) {
            cf_post_read(&c, 0x22, &b, 1, w.addr, w.token, 0);
            cf_cq_expect(c.icq, 0x22, STATUS_SUCCESS, NdkOperationTypeRead);
            CHECK_PATTERN(back.buf, w.len, (uint32_t)w.arg, 0);
            /* A Send whose source is a LAM page under the privileged token (§2.5, §4.4). */
            cf_fill(p.buf, 300, 0xAB, 0);
            NDK_SGE ps;
            memset(&ps, 0, sizeof ps);
            ps.LogicalAddress.QuadPart = pl.map->AdapterPageArray[0].QuadPart + pl.fbo;
            ps.Length = 300;
            ps.MemoryRegionToken = priv;
            cf_post_send(&c, 0x23, &ps, 1, 0);
            cf_cq_expect(c.icq, 0x23, STATUS_SUCCESS, NdkOperationTypeSend);
        } else {
            NDK_SGE n = cf_sge(&l, 0, 8);
            cf_post_send(&c, 0x24, &n, 1, 0);
            cf_cq_expect(c.icq, 0x24, STATUS_SUCCESS, NdkOperationTypeSend);
        }
    }
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    lam_free(&c, &pl);
    cf_mem_free(&p);
    cf_mem_free(&back);
    cf_mem_free(&l);
    cf_conn_fini(&c);
}

void case_fast_register(void)
{
    cf_pair(fr_server, fr_client, NULL, cf_ms(50000));
}

/* ==== protection violations ==== */

enum viol {
    V_BAD_TOKEN_W,
    V_BAD_TOKEN_R,
    V_WRONG_PD,
    V_BOUNDS_W,
    V_BOUNDS_R,
    V_NORIGHT_W,
    V_NORIGHT_R,
    V_AFTER_INV,
    V_LOCAL_TOKEN,
};

#define VLEN (4 * 4096)

static void viol_server(int fd, void *arg)
{
    enum viol v = *(enum viol *)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem m, rx;
    cf_mem_alloc(&m, VLEN, 512, 0);
    memset(m.buf, 0x3C, VLEN);
    cf_mem_alloc(&rx, 64, 0, 0);
    cf_mem_reg(&rx, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_PD *pd2 = NULL;
    NDK_MR *fr = NULL;
    struct lam l;
    memset(&l, 0, sizeof l);
    ULONG flags = RALL;
    if (v == V_NORIGHT_W)
        flags = NDK_MR_FLAG_ALLOW_REMOTE_READ;
    if (v == V_NORIGHT_R)
        flags = NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
    UINT32 tok;
    uint64_t addr = (uint64_t)(uintptr_t)m.buf;
    if (v == V_WRONG_PD) {
        pd2 = cf_pd(&c.ad);
        cf_mem_reg(&m, &c.ad, pd2, RALL);
        tok = m.rtok;
    } else if (v == V_AFTER_INV) {
        lam_build(&c, &l, m.buf, VLEN);
        fr = cf_mr(&c.ad, c.pd, TRUE);
        CHECK_ST(cf_init_frmr(fr, l.map->AdapterPageCount, TRUE), STATUS_SUCCESS);
        CHECK_ST(c.qp->Dispatch->NdkFastRegister(c.qp, (PVOID)0xF1, fr, l.map->AdapterPageCount,
                                                 l.map->AdapterPageArray, l.fbo, VLEN, m.buf,
                                                 NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_READ),
                 STATUS_SUCCESS);
        cf_cq_expect(c.icq, 0xF1, STATUS_SUCCESS, NdkOperationTypeFastRegister);
        tok = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
        CHECK_ST(c.qp->Dispatch->NdkInvalidate(c.qp, (PVOID)0x1A, &fr->Header, 0), STATUS_SUCCESS);
        cf_cq_expect(c.icq, 0x1A, STATUS_SUCCESS, NdkOperationTypeInvalidate);
    } else {
        cf_mem_reg(&m, &c.ad, c.pd, flags);
        tok = m.rtok;
        if (v == V_BAD_TOKEN_W || v == V_BAD_TOKEN_R)
            tok ^= 0x00ABCD00u;
    }
    if (v == V_BOUNDS_W || v == V_BOUNDS_R)
        addr += VLEN - 100;     /* 4 KiB from here runs 3996 bytes past the end */
    NDK_SGE s = cf_sge(&rx, 0, 64);
    cf_post_recv(&c, 0xC1, &s, 1);
    struct cf_mem probe;
    expose_probe(&c, &probe, fd);
    cf_tell(fd, T_MEM, addr, tok, 4096, v);
    if (v != V_LOCAL_TOKEN)
        expect_target_error(&c, 0xC1);
    cf_hear(fd, T_DONE);
    /* Target memory: untouched outside the region always; entirely untouched unless the access
     * was a write that started inside the region (bounds). */
    CHECK_MSG(cf_mem_guards_ok(&m), "memory outside the region was written by a failed access");
    if (v != V_BOUNDS_W)
        CHECK_MSG(cf_all(m.buf, VLEN, 0x3C), "a failed access changed the target memory");
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&probe);
    if (fr)
        cf_close(fr);
    if (l.map)
        lam_free(&c, &l);
    cf_mem_free(&m);
    if (pd2)
        cf_close(pd2);
    cf_mem_free(&rx);
    cf_conn_fini(&c);
}

static void viol_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    struct cf_mem l;
    cf_mem_alloc(&l, 4096, 256, 0);
    cf_mem_reg(&l, &c.ad, c.pd, RSINK);
    memset(l.buf, 0x11, 4096);
    struct cf_msg probe = cf_hear(fd, T_MEM);
    struct cf_msg msg = cf_hear(fd, T_MEM);
    enum viol v = (enum viol)msg.arg;
    struct cf_mem sink;
    cf_mem_alloc(&sink, 64, 0, 0);
    cf_mem_reg(&sink, &c.ad, c.pd, RSINK);
    NDK_SGE s = cf_sge(&l, 0, 4096);
    bool read = v == V_BAD_TOKEN_R || v == V_BOUNDS_R || v == V_NORIGHT_R;
    if (v == V_LOCAL_TOKEN)
        s.MemoryRegionToken ^= 0x00ABCD00u;
    if (read)
        cf_post_read(&c, 0x31, &s, 1, msg.addr, msg.token, 0);
    else
        cf_post_write(&c, 0x31, &s, 1, msg.addr, msg.token, 0);
    if (v == V_LOCAL_TOKEN)
        cf_cq_expect_error(c.icq, 0x31, NdkOperationTypeWrite);   /* found locally: the request itself */
    else
        expect_initiator_error(&c, 0x31, read, &probe, &sink);
    CHECK_MSG(cf_mem_guards_ok(&l), "memory around the local buffer was written");
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_END);
    cf_mem_free(&sink);
    cf_mem_free(&l);
    cf_conn_fini(&c);
}

static void run_viol(enum viol v)
{
    cf_pair(viol_server, viol_client, &v, cf_ms(50000));
}

void case_viol_bad_token_write(void) { run_viol(V_BAD_TOKEN_W); }
void case_viol_bad_token_read(void) { run_viol(V_BAD_TOKEN_R); }
void case_viol_wrong_pd(void) { run_viol(V_WRONG_PD); }
void case_viol_bounds_write(void) { run_viol(V_BOUNDS_W); }
void case_viol_bounds_read(void) { run_viol(V_BOUNDS_R); }
void case_viol_no_right_write(void) { run_viol(V_NORIGHT_W); }
void case_viol_no_right_read(void) { run_viol(V_NORIGHT_R); }
void case_viol_after_invalidate(void) { run_viol(V_AFTER_INV); }
void case_viol_local_token(void) { run_viol(V_LOCAL_TOKEN); }
