/* cases_wr.c - work requests: payloads at every size, flags (inline, silent success, read fence,
 * DEFER), send without a receive, flush, per-post limits, queue depths (NDKPI reference §2.8,
 * §2.9, §4.4, §5.5, §5.6).
 *
 * The server exposes memory and posts receives; the client initiates. Payloads are a seeded
 * stream (cf_fill); the side that ends up holding the data verifies it. Placement of RDMA Writes
 * is confirmed the RDMA way: a Send posted after them on the same QP is received after they are
 * placed. */
#define _GNU_SOURCE
#include "conform.h"

#include <stdlib.h>
#include <string.h>

#define T_GO    0x6001u
#define T_DONE  0x6002u
#define T_MEM   0x6003u
#define T_NEXT  0x6004u
#define T_END   0x600Eu

/* ---- scatter/gather layouts: SGE k holds stream bytes [soff, soff+len) and sits at buffer
 * offset pos; pieces are placed in reverse order with gaps, so a provider that ignores the SGL
 * order or spills across pieces is caught. ---- */
#define GAP 64
#define MAX_PIECES 16
struct layout {
    ULONG n;
    size_t len[MAX_PIECES], pos[MAX_PIECES], soff[MAX_PIECES];
    size_t buflen;
};

static void mk_layout(struct layout *l, size_t size, ULONG n)
{
    if (n > MAX_PIECES)
        n = MAX_PIECES;
    if (size < n)
        n = size ? (ULONG)size : 1;
    memset(l, 0, sizeof *l);
    l->n = n;
    size_t base = size / n, soff = 0;
    for (ULONG k = 0; k < n; k++) {
        l->len[k] = base + (k == n - 1 ? size % n : 0);
        l->soff[k] = soff;
        soff += l->len[k];
    }
    size_t pos = 0;
    for (int k = (int)n - 1; k >= 0; k--) {
        l->pos[k] = pos;
        pos += l->len[k] + GAP;
    }
    l->buflen = pos;
}

static void layout_sges(const struct layout *l, const struct cf_mem *m, NDK_SGE *sge)
{
    for (ULONG k = 0; k < l->n; k++)
        sge[k] = cf_sge(m, l->pos[k], (ULONG)l->len[k]);
}

static void layout_fill(const struct layout *l, struct cf_mem *m, uint32_t seed)
{
    for (ULONG k = 0; k < l->n; k++)
        cf_fill(m->buf + l->pos[k], l->len[k], seed, l->soff[k]);
}

static void layout_verify(const struct layout *l, const struct cf_mem *m, uint32_t seed)
{
    for (ULONG k = 0; k < l->n; k++) {
        long long o = cf_verify(m->buf + l->pos[k], l->len[k], seed, l->soff[k]);
        CHECK_MSG(o < 0, "SGE %u of %u: payload mismatch at byte %lld (stream offset %zu)", k, l->n, o,
                  l->soff[k] + (size_t)(o < 0 ? 0 : o));
        CHECK_MSG(cf_all(m->buf + l->pos[k] + l->len[k], GAP, 0), "bytes after SGE %u were written", k);
    }
    CHECK_MSG(cf_mem_guards_ok(m), "memory outside the registered buffer was written");
}

static void mem_for(struct cf_mem *m, struct cf_conn *c, size_t len, ULONG flags)
{
    cf_mem_alloc(m, len ? len : 1, 256, 0);
    cf_mem_reg(m, &c->ad, c->pd, flags);
}

#define RSINK (NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK)
#define RALL (NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ)

static ULONG nsge_for(const struct cf_conn *c)
{
    return c->attr.isge < 3 ? c->attr.isge : 3;
}

/* ==== Send / Receive ==== */

static void send_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    size_t sizes[CF_NSIZES];
    cf_sizes(&c.ad.info, sizes);
    for (int i = 0; i < CF_NSIZES + 1; i++) {
        bool se = i == CF_NSIZES;     /* one more: Send + SOLICIT_EVENT at 4 KiB */
        size_t size = se ? 4096 : sizes[i];
        uint32_t seed = 0x5E00u + (uint32_t)i;
        struct layout l;
        mk_layout(&l, size, c.attr.rsge < 3 ? c.attr.rsge : 3);
        struct cf_mem m;
        mem_for(&m, &c, l.buflen, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        NDK_SGE sge[MAX_PIECES];
        layout_sges(&l, &m, sge);
        cf_post_recv(&c, 0x100 + (uintptr_t)i, sge, l.n);
        cf_tell(fd, T_GO, 0, 0, size, seed);
        NDK_RESULT_EX r = cf_cq_expect_xfer(c.rcq, 0x100 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeReceive, size);
        CHECK_MSG(r.BytesTransferred == size, "size %zu: BytesTransferred %u", size, r.BytesTransferred);
        CHECK_MSG(r.QPContext == &c, "QPContext %p, expected %p", r.QPContext, (void *)&c);
        layout_verify(&l, &m, seed);
        cf_note("send/receive of %zu bytes in %u SGEs%s: ok", size, l.n, se ? " (solicited)" : "");
        cf_mem_free(&m);
    }
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_cq_expect_none(c.icq, 50);
    cf_conn_fini(&c);
}

static void send_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    for (int i = 0;; i++) {
        struct cf_msg msg = cf_hear_any(fd);
        if (msg.tag == T_END)
            break;
        CHECK_EQ(msg.tag, T_GO);
        struct layout l;
        mk_layout(&l, msg.len, nsge_for(&c));
        struct cf_mem m;
        mem_for(&m, &c, l.buflen, 0);
        layout_fill(&l, &m, (uint32_t)msg.arg);
        NDK_SGE sge[MAX_PIECES];
        layout_sges(&l, &m, sge);
        ULONG flags = i == CF_NSIZES ? NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT : 0;
        cf_post_send(&c, 0x200 + (uintptr_t)i, sge, l.n, flags);
        NDK_RESULT_EX r = cf_cq_expect_xfer(c.icq, 0x200 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeSend, msg.len);
        CHECK_MSG(r.QPContext == &c, "QPContext %p, expected %p", r.QPContext, (void *)&c);
        cf_mem_free(&m);
    }
    cf_conn_fini(&c);
}

void case_wr_send(void)
{
    cf_pair(send_server, send_client, NULL, cf_ms(170000));
}

/* ==== Send with Invalidate ==== */

static void sendinv_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    if (c.ad.version.Major == 1 && c.ad.version.Minor < 2)
        ndk_test_skip("NdkSendAndInvalidate is NDKPI 1.2+; negotiated %u.%u", c.ad.version.Major, c.ad.version.Minor);
    struct cf_mem m, rx;
    mem_for(&m, &c, 8192, RALL);
    mem_for(&rx, &c, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    /* A memory window over the first page. */
    NDK_MW *mw = cf_mw(&c.ad, c.pd);
    NTSTATUS st = c.qp->Dispatch->NdkBind(c.qp, (PVOID)0xB1, m.mr, mw, m.buf, 4096,
                                          NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_READ);
    CHECK_ST(st, STATUS_SUCCESS);
    cf_cq_expect(c.icq, 0xB1, STATUS_SUCCESS, NdkOperationTypeBind);
    UINT32 tok = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);

    /* Round 1: polled with NdkGetCqResultsEx: ReceiveAndInvalidate with the token. */
    NDK_SGE sge = cf_sge(&rx, 0, 4096);
    cf_post_recv(&c, 0xC1, &sge, 1);
    cf_tell(fd, T_GO, 0, tok, 100, 0x51);
    NDK_RESULT_EX r = cf_cq_expect(c.rcq, 0xC1, STATUS_SUCCESS, NdkOperationTypeReceiveAndInvalidate);
    CHECK_MSG((UINT32)r.TypeSpecificCompletionOutput == tok, "ReceiveAndInvalidate names token %#x, expected %#x (§4.2)",
              (UINT32)r.TypeSpecificCompletionOutput, tok);
    CHECK_EQ(r.BytesTransferred, 100);
    CHECK_PATTERN(rx.buf, 100, 0x51, 0);

    /* Round 2: a fast-registered MR, the completion retrieved with plain NdkGetCqResults (§5.6). */
    NDK_MR *fr = cf_mr(&c.ad, c.pd, TRUE);
    CHECK_ST(cf_init_frmr(fr, 4, TRUE), STATUS_SUCCESS);
    ULONG lsz = 4096, fbo;
    NDK_LOGICAL_ADDRESS_MAPPING *lam = calloc(1, lsz);
    MDL *mdl = IoAllocateMdl(m.buf + 4096, 4096, FALSE, FALSE, NULL);
    struct cf_op *op = cf_op_new("NdkBuildLAM");
    CHECK_ST(cf_req_done(op, c.ad.ad->Dispatch->NdkBuildLAM(c.ad.ad, mdl, 4096, cf_req_cb, op, lam, &lsz, &fbo)),
             STATUS_SUCCESS);
    st = c.qp->Dispatch->NdkFastRegister(c.qp, (PVOID)0xF1, fr, lam->AdapterPageCount, lam->AdapterPageArray, fbo, 4096,
                                         (PVOID)(uintptr_t)(0x10000000u + fbo), NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    CHECK_ST(st, STATUS_SUCCESS);
    cf_cq_expect(c.icq, 0xF1, STATUS_SUCCESS, NdkOperationTypeFastRegister);
    UINT32 ftok = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
    cf_post_recv(&c, 0xC2, &sge, 1);
    cf_tell(fd, T_GO, 0, ftok, 1, 0x52);
    NDK_RESULT res;
    uint64_t end = cf_now_ms() + (uint64_t)cf_ms(10000);
    ULONG n;
    while ((n = c.rcq->cq->Dispatch->NdkGetCqResults(c.rcq->cq, &res, 1)) == 0 && cf_now_ms() < end)
        cf_sleep_ms(2);
    CHECK_MSG(n == 1, "the receive of a Send-and-Invalidate is not retrievable through NdkGetCqResults (§5.6)");
    CHECK_EQ((uintptr_t)res.RequestContext, 0xC2);
    CHECK_ST(res.Status, STATUS_SUCCESS);
    CHECK_EQ(res.BytesTransferred, 1);
    CHECK_PATTERN(rx.buf, 1, 0x52, 0);
    cf_hear(fd, T_DONE);

    /* The window's token is dead: a local Invalidate of it fails like any already-invalid token
     * (§2.9 NdkInvalidate, §5.6), inline or as an error completion. */
    st = c.qp->Dispatch->NdkInvalidate(c.qp, (PVOID)0x1A, &mw->Header, 0);
    if (st == STATUS_SUCCESS)
        cf_cq_expect_error(c.icq, 0x1A, NdkOperationTypeInvalidate);
    else
        cf_note("NdkInvalidate of a remotely invalidated window failed inline: %s", cf_status_name(st));
    cf_tell(fd, T_END, 0, 0, 0, 0);
    c.ad.ad->Dispatch->NdkReleaseLAM(c.ad.ad, lam);
    free(lam);
    NdkMdlChainFree(mdl);
    cf_close(mw);
    cf_close(fr);
    cf_mem_free(&rx);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

static void sendinv_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    struct cf_mem m;
    mem_for(&m, &c, 4096, 0);
    for (int i = 0; i < 2; i++) {
        struct cf_msg msg = cf_hear_any(fd);
        if (msg.tag == T_END) {
            cf_conn_fini(&c);
            return;
        }
        cf_fill(m.buf, msg.len, (uint32_t)msg.arg, 0);
        NDK_SGE sge = cf_sge(&m, 0, (ULONG)msg.len);
        NTSTATUS st = c.qp->Dispatch->NdkSendAndInvalidate(c.qp, (PVOID)(uintptr_t)(0xD0 + i), &sge, 1, 0, msg.token);
        CHECK_ST(st, STATUS_SUCCESS);
        NDK_RESULT_EX r = cf_cq_expect(c.icq, 0xD0 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeSend);
        (void)r;
    }
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_END);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

void case_wr_send_inv(void)
{
    cf_pair(sendinv_server, sendinv_client, NULL, cf_ms(50000));
}

/* ==== SRQ receives ==== */

static void srq_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    struct cf_qp_attr at = { .use_srq = true, .srq_depth = 16 };
    cf_server_up(&c, fd, &at);
    size_t sizes[CF_NSIZES];
    cf_sizes(&c.ad.info, sizes);
    for (int i = 0; i < CF_NSIZES; i++) {
        size_t size = sizes[i] > (1u << 24) ? (1u << 24) : sizes[i];
        uint32_t seed = 0x5A00u + (uint32_t)i;
        struct layout l;
        mk_layout(&l, size, c.attr.rsge < 2 ? c.attr.rsge : 2);
        struct cf_mem m;
        mem_for(&m, &c, l.buflen, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        NDK_SGE sge[MAX_PIECES];
        layout_sges(&l, &m, sge);
        CHECK_ST(c.srq->srq->Dispatch->NdkSrqReceive(c.srq->srq, (PVOID)(uintptr_t)(0x300 + i), sge, l.n),
                 STATUS_SUCCESS);
        cf_tell(fd, T_GO, 0, 0, size, seed);
        /* §8.25: the receive CQ and the QPContext of the QP that consumed the buffer. */
        NDK_RESULT_EX r = cf_cq_expect_xfer(c.rcq, 0x300 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeReceive, size);
        CHECK_MSG(r.QPContext == &c, "SRQ receive completion carries QPContext %p, expected the QP's %p", r.QPContext,
                  (void *)&c);
        CHECK_MSG(r.BytesTransferred == size, "BytesTransferred %u, expected %zu (§8.24)", r.BytesTransferred, size);
        layout_verify(&l, &m, seed);
        cf_note("SRQ receive of %zu bytes: ok", size);
        cf_mem_free(&m);
    }
    CHECK_EQ(cf_cq_poll(c.icq, (NDK_RESULT_EX[1]){ 0 }, 1), 0);
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_conn_fini(&c);
}

void case_wr_srq_recv(void)
{
    cf_pair(srq_server, send_client, NULL, cf_ms(110000));
}

/* ==== RDMA Write ==== */

/* Server side of write-style cases: per round, exposes a zeroed region, posts a receive for the
 * client's trailing Send, and verifies after that Send arrived. */
static void write_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    size_t sizes[CF_NSIZES];
    cf_sizes(&c.ad.info, sizes);
    struct cf_mem note;
    mem_for(&note, &c, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (int i = 0; i < CF_NSIZES; i++) {
        size_t size = sizes[i], off = 24;
        uint32_t seed = 0x3700u + (uint32_t)i;
        struct cf_mem m;
        mem_for(&m, &c, size + 2 * off, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
        NDK_SGE sge = cf_sge(&note, 0, 64);
        cf_post_recv(&c, 0x400 + (uintptr_t)i, &sge, 1);
        cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)m.buf + off, m.rtok, size, seed);
        cf_cq_expect_xfer(c.rcq, 0x400 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeReceive, size);
        CHECK_PATTERN(m.buf + off, size, seed, 0);
        CHECK_MSG(cf_all(m.buf, off, 0) && cf_all(m.buf + off + size, off, 0),
                  "RDMA Write of %zu bytes touched bytes outside [addr, addr+len)", size);
        CHECK_MSG(cf_mem_guards_ok(&m), "memory outside the region was written");
        /* The target of a Write gets no completion (§2.9). */
        cf_cq_expect_none(c.rcq, 20);
        cf_cq_expect_none(c.icq, 1);
        cf_note("RDMA Write of %zu bytes: ok", size);
        cf_mem_free(&m);
    }
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&note);
    cf_conn_fini(&c);
}

static void write_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    struct cf_mem note;
    mem_for(&note, &c, 64, 0);
    for (int i = 0;; i++) {
        struct cf_msg msg = cf_hear_any(fd);
        if (msg.tag == T_END)
            break;
        CHECK_EQ(msg.tag, T_MEM);
        struct layout l;
        mk_layout(&l, msg.len, nsge_for(&c));
        struct cf_mem m;
        mem_for(&m, &c, l.buflen, 0);
        layout_fill(&l, &m, (uint32_t)msg.arg);
        NDK_SGE sge[MAX_PIECES];
        layout_sges(&l, &m, sge);
        cf_post_write(&c, 0x500 + (uintptr_t)i, sge, l.n, msg.addr, msg.token, 0);
        NDK_SGE ns = cf_sge(&note, 0, 8);
        cf_post_send(&c, 0x600 + (uintptr_t)i, &ns, 1, 0);
        cf_cq_expect_xfer(c.icq, 0x500 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeWrite, msg.len);
        cf_cq_expect(c.icq, 0x600 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeSend);
        cf_mem_free(&m);
    }
    cf_mem_free(&note);
    cf_conn_fini(&c);
}

void case_wr_write(void)
{
    cf_pair(write_server, write_client, NULL, cf_ms(170000));
}

/* ==== RDMA Read ==== */

static void read_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    size_t sizes[CF_NSIZES + 1];
    cf_sizes(&c.ad.info, sizes);
    sizes[CF_NSIZES] = 65536;   /* once more with the adapter's MaxReadRequestSge SGEs */
    for (int i = 0; i < CF_NSIZES + 1; i++) {
        size_t size = sizes[i], off = 40;
        uint32_t seed = 0x4E00u + (uint32_t)i;
        struct cf_mem m;
        /* Contents first, registration after: the registration orders our writes before the
         * provider's reads for thread checkers (the real ordering goes through the peer). */
        cf_mem_alloc(&m, size + 2 * off, 256, 0);
        cf_fill(m.buf + off, size, seed, 0);
        memset(m.buf, 0xEE, off);
        memset(m.buf + off + size, 0xEE, off);
        cf_mem_reg(&m, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_REMOTE_READ);
        cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)m.buf + off, m.rtok, size, seed | (uint64_t)(i == CF_NSIZES) << 32);
        cf_hear(fd, T_DONE);
        CHECK_MSG(cf_verify(m.buf + off, size, seed, 0) < 0 && cf_all(m.buf, off, 0xEE) &&
                  cf_all(m.buf + off + size, off, 0xEE) && cf_mem_guards_ok(&m),
                  "the source of an RDMA Read changed");
        cf_cq_expect_none(c.rcq, 1);
        cf_cq_expect_none(c.icq, 1);
        cf_mem_free(&m);
    }
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_conn_fini(&c);
}

static void read_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    struct cf_qp_attr at;
    memset(&at, 0, sizeof at);
    cf_client_up(&c, fd, &at);
    for (int i = 0;; i++) {
        struct cf_msg msg = cf_hear_any(fd);
        if (msg.tag == T_END)
            break;
        CHECK_EQ(msg.tag, T_MEM);
        bool many = (msg.arg >> 32) != 0;
        ULONG n = many ? c.ad.info.MaxReadRequestSge : (c.ad.info.MaxReadRequestSge < 3 ? c.ad.info.MaxReadRequestSge : 3);
        if (!many && n > c.attr.isge)
            n = c.attr.isge;
        struct layout l;
        mk_layout(&l, msg.len, n);
        struct cf_mem m;
        mem_for(&m, &c, l.buflen, RSINK);
        NDK_SGE sge[MAX_PIECES];
        layout_sges(&l, &m, sge);
        NTSTATUS st = c.qp->Dispatch->NdkRead(c.qp, (PVOID)(0x700 + (uintptr_t)i), sge, l.n, msg.addr, msg.token, 0);
        if (many && st != STATUS_SUCCESS && l.n > c.attr.isge)
            ndk_test_fail(__FILE__, __LINE__, "NdkRead with %u SGEs (<= MaxReadRequestSge %u) refused: %s (§2.9: "
                          "MaxReadRequestSge governs reads)", l.n, c.ad.info.MaxReadRequestSge, cf_status_name(st));
        CHECK_ST(st, STATUS_SUCCESS);
        cf_cq_expect_xfer(c.icq, 0x700 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeRead, msg.len);
        layout_verify(&l, &m, (uint32_t)msg.arg);
        cf_note("RDMA Read of %zu bytes into %u SGEs: ok", (size_t)msg.len, l.n);
        cf_mem_free(&m);
        cf_tell(fd, T_DONE, 0, 0, 0, 0);
    }
    cf_conn_fini(&c);
}

void case_wr_read(void)
{
    cf_pair(read_server, read_client, NULL, cf_ms(170000));
}

/* ==== Read with local invalidate ==== */

static void readinv_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem m;
    cf_mem_alloc(&m, 4096, 256, 0);
    cf_fill(m.buf, 4096, 0x4F00, 0);
    cf_mem_reg(&m, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_REMOTE_READ);
    cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)m.buf, m.rtok, 4096, 0x4F00);
    cf_hear(fd, T_END);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

/* NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE (§2.9 NdkRead, §5.5.3): where the adapter advertises
 * NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED a successful Read has invalidated the
 * first SGE's token; where it does not, the flag is ignored and the token still works. */
static void readinv_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    bool supported = (c.ad.info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED) != 0;
    if (c.ad.version.Major == 1 && c.ad.version.Minor < 2)
        CHECK_MSG(!supported, "RDMA_READ_LOCAL_INVALIDATE_SUPPORTED advertised at NDKPI %u.%u", c.ad.version.Major,
                  c.ad.version.Minor);
    struct cf_msg msg = cf_hear(fd, T_MEM);
    struct cf_mem sink;
    cf_mem_alloc(&sink, 8192, 0, 0);
    NDK_MR *fr = cf_mr(&c.ad, c.pd, TRUE);
    /* A read sink is remotely writable on iWARP unless the adapter says otherwise (§5.10). */
    CHECK_ST(cf_init_frmr(fr, 4, TRUE), STATUS_SUCCESS);
    ULONG lsz = 4096, fbo;
    NDK_LOGICAL_ADDRESS_MAPPING *lam = calloc(1, lsz);
    MDL *mdl = IoAllocateMdl(sink.buf, 4096, FALSE, FALSE, NULL);
    struct cf_op *op = cf_op_new("NdkBuildLAM");
    CHECK_ST(cf_req_done(op, c.ad.ad->Dispatch->NdkBuildLAM(c.ad.ad, mdl, 4096, cf_req_cb, op, lam, &lsz, &fbo)),
             STATUS_SUCCESS);
    PVOID va = (PVOID)(uintptr_t)(0x20000000u + fbo);
    CHECK_ST(c.qp->Dispatch->NdkFastRegister(c.qp, (PVOID)0xF1, fr, lam->AdapterPageCount, lam->AdapterPageArray, fbo,
                                             4096, va, NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_RDMA_READ_SINK),
             STATUS_SUCCESS);
    cf_cq_expect(c.icq, 0xF1, STATUS_SUCCESS, NdkOperationTypeFastRegister);
    NDK_SGE sge = { .VirtualAddress = va, .Length = 4096, .MemoryRegionToken = fr->Dispatch->NdkGetLocalTokenFromMr(fr) };
    CHECK_ST(c.qp->Dispatch->NdkRead(c.qp, (PVOID)0x7A0, &sge, 1, msg.addr, msg.token,
                                     NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE),
             STATUS_SUCCESS);
    cf_cq_expect_xfer(c.icq, 0x7A0, STATUS_SUCCESS, NdkOperationTypeRead, 4096);
    CHECK_PATTERN(sink.buf, 4096, (uint32_t)msg.arg, 0);
    if (supported) {
        /* The token is dead: invalidating it again fails like any invalid token (§2.9
         * NdkInvalidate, §5.6), inline or as an error completion. Last, since it may break the QP. */
        NTSTATUS st = c.qp->Dispatch->NdkInvalidate(c.qp, (PVOID)0x1B, &fr->Header, 0);
        if (st == STATUS_SUCCESS)
            cf_cq_expect_error(c.icq, 0x1B, NdkOperationTypeInvalidate);
        cf_note("advertised: the Read invalidated its sink token");
    } else {
        memset(sink.buf, 0, 4096);
        CHECK_ST(c.qp->Dispatch->NdkRead(c.qp, (PVOID)0x7A1, &sge, 1, msg.addr, msg.token, 0), STATUS_SUCCESS);
        cf_cq_expect_xfer(c.icq, 0x7A1, STATUS_SUCCESS, NdkOperationTypeRead, 4096);
        CHECK_PATTERN(sink.buf, 4096, (uint32_t)msg.arg, 0);
        cf_note("not advertised: the flag was ignored, the token still works");
    }
    cf_tell(fd, T_END, 0, 0, 0, 0);
    c.ad.ad->Dispatch->NdkReleaseLAM(c.ad.ad, lam);
    free(lam);
    NdkMdlChainFree(mdl);
    cf_close(fr);
    cf_mem_free(&sink);
    cf_conn_fini(&c);
}

void case_wr_read_local_inv(void)
{
    cf_pair(readinv_server, readinv_client, NULL, cf_ms(60000));
}

/* ==== inline ==== */

static void inline_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    ULONG max = c.ad.info.MaxInlineDataSize;
    if (!max) {
        cf_tell(fd, T_END, 0, 0, 0, 0);
        cf_conn_fini(&c);
        ndk_test_skip("the adapter supports no inline data (MaxInlineDataSize 0)");
    }
    struct cf_mem rx, wm;
    mem_for(&rx, &c, max + 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    mem_for(&wm, &c, max + 64, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    ULONG sizes[3] = { 1, max / 2 ? max / 2 : 1, max };
    for (int i = 0; i < 3; i++) {
        memset(rx.buf, 0, rx.len);
        NDK_SGE sge = cf_sge(&rx, 0, (ULONG)rx.len);
        cf_post_recv(&c, 0x800 + (uintptr_t)i, &sge, 1);
        cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)wm.buf, wm.rtok, sizes[i], 0x1100 + (uint64_t)i);
        /* The client sends an inline Send of sizes[i], then an inline Write of the same size
         * followed by a plain 8-byte Send. */
        NDK_RESULT_EX r = cf_cq_expect(c.rcq, 0x800 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeReceive);
        CHECK_EQ(r.BytesTransferred, sizes[i]);
        CHECK_PATTERN(rx.buf, sizes[i], 0x1100 + (uint32_t)i, 0);
        cf_post_recv(&c, 0x900 + (uintptr_t)i, &sge, 1);
        cf_tell(fd, T_NEXT, 0, 0, 0, 0);
        cf_cq_expect(c.rcq, 0x900 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeReceive);
        CHECK_PATTERN(wm.buf, sizes[i], 0x2200 + (uint32_t)i, 0);
        cf_note("inline send and write of %u bytes: ok", sizes[i]);
    }
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&rx);
    cf_mem_free(&wm);
    cf_conn_fini(&c);
}

static void inline_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    struct cf_qp_attr at;
    cf_conn_init(&c, NULL);
    ULONG max = c.ad.info.MaxInlineDataSize;
    cf_conn_fini(&c);
    memset(&at, 0, sizeof at);
    at.inline_size = max;
    cf_client_up(&c, fd, &at);
    struct cf_mem note;
    mem_for(&note, &c, 64, 0);
    uint8_t *buf = malloc(max + 16);   /* not registered: inline ignores the token (§4.4) */
    for (int i = 0;; i++) {
        struct cf_msg msg = cf_hear_any(fd);
        if (msg.tag == T_END)
            break;
        CHECK_EQ(msg.tag, T_MEM);
        ULONG len = (ULONG)msg.len;
        /* Send: two SGEs with a garbage token; the buffer is scribbled right after the call. */
        cf_fill(buf, len, (uint32_t)msg.arg, 0);
        NDK_SGE sge[2];
        memset(sge, 0, sizeof sge);
        ULONG a = len / 2;
        sge[0].VirtualAddress = buf;
        sge[0].Length = a;
        sge[0].MemoryRegionToken = 0xDEADBEEF;
        sge[1].VirtualAddress = buf + a;
        sge[1].Length = len - a;
        sge[1].MemoryRegionToken = 0xBADC0DE;
        ULONG ns = a ? 2 : 1;
        if (!a)
            sge[0] = sge[1];
        cf_post_send(&c, 0xA00 + (uintptr_t)i, sge, ns, NDK_OP_FLAG_INLINE);
        memset(buf, 0x66, len);
        cf_cq_expect(c.icq, 0xA00 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeSend);
        cf_hear(fd, T_NEXT);
        /* Write (§8.20: inline accepted on writes), then a plain Send for placement. */
        cf_fill(buf, len, (uint32_t)msg.arg + 0x1100, 0);
        NDK_SGE ws = { .VirtualAddress = buf, .Length = len, .MemoryRegionToken = 0x13579BDF };
        NTSTATUS st = c.qp->Dispatch->NdkWrite(c.qp, (PVOID)(0xB00 + (uintptr_t)i), &ws, 1, msg.addr, msg.token,
                                               NDK_OP_FLAG_INLINE);
        CHECK_MSG(st == STATUS_SUCCESS, "inline NdkWrite of %u bytes: %s (§8.20)", len, cf_status_name(st));
        memset(buf, 0x77, len);
        NDK_SGE nsg = cf_sge(&note, 0, 8);
        cf_post_send(&c, 0xC00 + (uintptr_t)i, &nsg, 1, 0);
        cf_cq_expect(c.icq, 0xB00 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeWrite);
        cf_cq_expect(c.icq, 0xC00 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeSend);
    }
    free(buf);
    cf_mem_free(&note);
    cf_conn_fini(&c);
}

void case_wr_inline(void)
{
    cf_pair(inline_server, inline_client, NULL, cf_ms(50000));
}

/* ==== silent success ==== */

static void silent_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem m, rx;
    mem_for(&m, &c, 5 * 4096, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    mem_for(&rx, &c, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE sge = cf_sge(&rx, 0, 64);
    cf_post_recv(&c, 0xE1, &sge, 1);
    cf_post_recv(&c, 0xE2, &sge, 1);
    cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)m.buf, m.rtok, m.len, 0);
    cf_cq_expect(c.rcq, 0xE1, STATUS_SUCCESS, NdkOperationTypeReceive);
    for (int i = 0; i < 5; i++)
        CHECK_PATTERN(m.buf + (size_t)i * 4096, 4096, 0x77 + (uint32_t)i, 0);
    cf_tell(fd, T_NEXT, 0, 0, 0, 0);
    cf_hear(fd, T_DONE);
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&rx);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

static void silent_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    struct cf_mem m;
    mem_for(&m, &c, 5 * 4096, 0);
    struct cf_msg msg = cf_hear(fd, T_MEM);
    for (int i = 0; i < 5; i++) {
        cf_fill(m.buf + (size_t)i * 4096, 4096, 0x77 + (uint32_t)i, 0);
        NDK_SGE s = cf_sge(&m, (size_t)i * 4096, 4096);
        cf_post_write(&c, 0xF0 + (uintptr_t)i, &s, 1, msg.addr + (uint64_t)i * 4096, msg.token,
                      NDK_OP_FLAG_SILENT_SUCCESS);
    }
    NDK_SGE s = cf_sge(&m, 0, 8);
    cf_post_send(&c, 0xFF, &s, 1, 0);
    /* Only the Send reports (§5.5.2). */
    cf_cq_expect(c.icq, 0xFF, STATUS_SUCCESS, NdkOperationTypeSend);
    cf_cq_expect_none(c.icq, 200);
    cf_hear(fd, T_NEXT);
    /* A failing silent request is still reported (§5.5.2): a Write whose local SGE carries a
     * token that names no MR (a local protection error, found by the initiator itself). */
    NDK_SGE bad = s;
    bad.MemoryRegionToken ^= 0x00ABCD00u;
    cf_post_write(&c, 0xEE, &bad, 1, msg.addr, msg.token, NDK_OP_FLAG_SILENT_SUCCESS);
    cf_cq_expect_error(c.icq, 0xEE, NdkOperationTypeWrite);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_END);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

void case_wr_silent_success(void)
{
    cf_pair(silent_server, silent_client, NULL, cf_ms(50000));
}

/* ==== read fence ==== */

#define FENCE_LEN (4u << 20)
#define FENCE_ROUNDS 4

static void fence_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem src, dst, rx;
    mem_for(&dst, &c, FENCE_LEN, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    mem_for(&rx, &c, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (int i = 0; i < FENCE_ROUNDS; i++) {
        uint32_t seed = 0xFE00u + (uint32_t)i;
        /* A fresh source each round, filled before it is registered (see read_server). */
        cf_mem_alloc(&src, FENCE_LEN, 256, 0);
        cf_fill(src.buf, FENCE_LEN, seed, 0);
        cf_mem_reg(&src, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_REMOTE_READ);
        memset(dst.buf, 0, FENCE_LEN);
        NDK_SGE sge = cf_sge(&rx, 0, 64);
        cf_post_recv(&c, 0x1000 + (uintptr_t)i, &sge, 1);
        cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)src.buf, src.rtok, FENCE_LEN, (uint64_t)(uintptr_t)dst.buf);
        cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)dst.buf, dst.rtok, FENCE_LEN, seed);
        cf_cq_expect(c.rcq, 0x1000 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeReceive);
        long long o = cf_verify(dst.buf, FENCE_LEN, seed, 0);
        CHECK_MSG(o < 0, "round %d: the READ_FENCE write carried stale data at byte %lld: it started before the "
                  "earlier read completed (§5.5.3)", i, o);
        cf_mem_free(&src);
    }
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&rx);
    cf_mem_free(&dst);
    cf_conn_fini(&c);
}

static void fence_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    struct cf_mem l, note;
    mem_for(&l, &c, FENCE_LEN, RSINK);
    mem_for(&note, &c, 64, 0);
    for (int i = 0;; i++) {
        struct cf_msg src = cf_hear_any(fd);
        if (src.tag == T_END)
            break;
        struct cf_msg dst = cf_hear(fd, T_MEM);
        memset(l.buf, 0, FENCE_LEN);
        NDK_SGE s = cf_sge(&l, 0, FENCE_LEN);
        cf_post_read(&c, 0x1100 + (uintptr_t)i, &s, 1, src.addr, src.token, 0);
        cf_post_write(&c, 0x1200 + (uintptr_t)i, &s, 1, dst.addr, dst.token, NDK_OP_FLAG_READ_FENCE);
        NDK_SGE ns = cf_sge(&note, 0, 8);
        cf_post_send(&c, 0x1300 + (uintptr_t)i, &ns, 1, 0);
        cf_cq_expect(c.icq, 0x1100 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeRead);
        cf_cq_expect(c.icq, 0x1200 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeWrite);
        cf_cq_expect(c.icq, 0x1300 + (uintptr_t)i, STATUS_SUCCESS, NdkOperationTypeSend);
    }
    cf_mem_free(&note);
    cf_mem_free(&l);
    cf_conn_fini(&c);
}

void case_wr_read_fence(void)
{
    cf_pair(fence_server, fence_client, NULL, cf_ms(50000));
}

/* ==== DEFER ==== */

static void defer_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem m, rx;
    mem_for(&m, &c, 4 * 4096, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    mem_for(&rx, &c, 64, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE sge = cf_sge(&rx, 0, 64);
    cf_post_recv(&c, 0x21, &sge, 1);
    cf_post_recv(&c, 0x22, &sge, 1);
    cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)m.buf, m.rtok, m.len, 0);
    cf_cq_expect(c.rcq, 0x21, STATUS_SUCCESS, NdkOperationTypeReceive);
    for (int i = 0; i < 3; i++)
        CHECK_PATTERN(m.buf + (size_t)i * 4096, 4096, 0xDE0 + (uint32_t)i, 0);
    cf_cq_expect(c.rcq, 0x22, STATUS_SUCCESS, NdkOperationTypeReceive);
    CHECK_MSG(cf_verify(m.buf + 3 * 4096, 4096, 0xDEF, 0) < 0, "the deferred Write accepted before an inline failure "
              "was never executed (§5.5.4)");
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&rx);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

static void defer_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    if (c.ad.version.Major == 1 && c.ad.version.Minor < 2)
        ndk_test_skip("NDK_OP_FLAG_DEFER is NDKPI 1.2+");
    struct cf_mem m;
    mem_for(&m, &c, 4 * 4096, 0);
    struct cf_msg msg = cf_hear(fd, T_MEM);
    /* A chain: three deferred Writes, then a Send without DEFER (§5.5.4). */
    for (int i = 0; i < 3; i++) {
        cf_fill(m.buf + (size_t)i * 4096, 4096, 0xDE0 + (uint32_t)i, 0);
        NDK_SGE s = cf_sge(&m, (size_t)i * 4096, 4096);
        cf_post_write(&c, 0x30 + (uintptr_t)i, &s, 1, msg.addr + (uint64_t)i * 4096, msg.token, NDK_OP_FLAG_DEFER);
    }
    NDK_SGE s = cf_sge(&m, 0, 8);
    cf_post_send(&c, 0x33, &s, 1, 0);
    for (int i = 0; i < 4; i++)
        cf_cq_expect(c.icq, 0x30 + (uintptr_t)i, STATUS_SUCCESS, i < 3 ? NdkOperationTypeWrite : NdkOperationTypeSend);
    /* A deferred Write, then a post that fails inline (too many SGEs): the provider must hand the
     * deferred one to the hardware while failing the second; nothing else is posted. */
    cf_fill(m.buf + 3 * 4096, 4096, 0xDEF, 0);
    NDK_SGE d = cf_sge(&m, 3 * 4096, 4096);
    cf_post_write(&c, 0x40, &d, 1, msg.addr + 3 * 4096, msg.token, NDK_OP_FLAG_DEFER);
    ULONG n = c.attr.isge + 1;
    NDK_SGE *many = calloc(n, sizeof *many);
    for (ULONG k = 0; k < n; k++)
        many[k] = cf_sge(&m, 0, 8);
    NTSTATUS st = c.qp->Dispatch->NdkSend(c.qp, (PVOID)0x41, many, n, NDK_OP_FLAG_DEFER);
    CHECK_MSG(!NT_SUCCESS(st), "a Send with %u SGEs on a QP created for %u was accepted", n, c.attr.isge);
    NDK_RESULT_EX r;
    CHECK_MSG(cf_cq_next(c.icq, &r, cf_ms(5000)), "the deferred Write never completed after the next post failed "
              "inline: the provider must submit deferred requests when failing a post (§5.5.4)");
    CHECK_EQ((uintptr_t)r.RequestContext, 0x40);
    CHECK_ST(r.Status, STATUS_SUCCESS);
    cf_post_send(&c, 0x42, &s, 1, 0);
    cf_cq_expect(c.icq, 0x42, STATUS_SUCCESS, NdkOperationTypeSend);
    free(many);
    cf_hear(fd, T_END);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

void case_wr_defer(void)
{
    cf_pair(defer_server, defer_client, NULL, cf_ms(50000));
}

/* ==== Send without a posted receive ==== */

static void norecv_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem probe;
    mem_for(&probe, &c, 64, NDK_MR_FLAG_ALLOW_REMOTE_READ);
    cf_tell(fd, T_GO, (uint64_t)(uintptr_t)probe.buf, probe.rtok, 64, 0);
    cf_hear(fd, T_DONE);
    cf_mem_free(&probe);
    /* Whatever the provider did to the connection, closing must not hang. */
    cf_conn_fini(&c);
}

static void norecv_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    struct cf_mem m;
    mem_for(&m, &c, 64, RSINK);
    struct cf_msg probe = cf_hear(fd, T_GO);
    NDK_SGE s = cf_sge(&m, 0, 64);
    cf_post_send(&c, 0x51, &s, 1, 0);
    /* The Send may complete locally before the peer found no receive for it (iWARP completes a
     * Send once the transport took it); then the next request on the connection must fail: a
     * Read of a valid peer buffer, which needs the peer's answer. */
    NDK_SGE ps = cf_sge(&m, 0, 8);
    NTSTATUS pst = c.qp->Dispatch->NdkRead(c.qp, (PVOID)0x52, &ps, 1, probe.addr, probe.token, 0);
    NDK_RESULT_EX r;
    CHECK_MSG(cf_cq_next(c.icq, &r, cf_ms(30000)), "a Send to a peer with no posted receive never completed");
    CHECK_EQ((uintptr_t)r.RequestContext, 0x51);
    if (!NT_SUCCESS(r.Status)) {
        cf_note("the Send failed with %s (provider code %#x)", cf_status_name(r.Status), r.ProviderErrorCode);
    } else if (pst == STATUS_SUCCESS) {
        NDK_RESULT_EX p;
        CHECK_MSG(cf_cq_next(c.icq, &p, cf_ms(30000)), "the Read after the unreceivable Send never completed");
        CHECK_EQ((uintptr_t)p.RequestContext, 0x52);
        CHECK_MSG(!NT_SUCCESS(p.Status), "a Send the peer had no receive for went unnoticed: the Send and a later "
                  "Read on the connection both succeeded");
        cf_note("the Send completed locally; the next request failed: %s", cf_status_name(p.Status));
    } else {
        cf_note("the Send completed locally; the QP refused the next request: %s", cf_status_name(pst));
    }
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

void case_wr_send_no_recv(void)
{
    cf_pair(norecv_server, norecv_client, NULL, cf_ms(50000));
}

/* ==== flush ==== */

#define FLUSH_N 24

static void collect_exactly_once(struct cf_cq *cq, uintptr_t base, int n, bool allow_success, int type)
{
    int seen[64] = { 0 };
    for (int k = 0; k < n; k++) {
        NDK_RESULT_EX r;
        CHECK_MSG(cf_cq_next(cq, &r, cf_ms(15000)), "only %d of %d flushed requests completed", k, n);
        uintptr_t ctx = (uintptr_t)r.RequestContext;
        CHECK_MSG(ctx >= base && ctx < base + (uintptr_t)n, "completion for unknown request %#lx",
                  (unsigned long)ctx);
        CHECK_MSG(++seen[ctx - base] == 1, "request %#lx completed twice", (unsigned long)ctx);
        CHECK_MSG(r.Status == STATUS_CANCELLED || (allow_success && r.Status == STATUS_SUCCESS),
                  "flushed request %#lx completed with %s, expected STATUS_CANCELLED", (unsigned long)ctx,
                  cf_status_name(r.Status));
        CHECK_EQ((int)r.Type, type);
    }
    cf_cq_expect_none(cq, 200);
}

static void flush_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    struct cf_qp_attr at = { .rq_depth = 64 };
    cf_server_up(&c, fd, &at);
    struct cf_mem m, rx;
    mem_for(&m, &c, 64 * 65536, NDK_MR_FLAG_ALLOW_REMOTE_READ);
    mem_for(&rx, &c, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    cf_tell(fd, T_MEM, (uint64_t)(uintptr_t)m.buf, m.rtok, m.len, 0);
    cf_hear(fd, T_DONE);
    /* Receive queue: FLUSH_N receives, no sends coming; flush cancels every one exactly once. */
    for (int i = 0; i < FLUSH_N; i++) {
        NDK_SGE s = cf_sge(&rx, (size_t)i * 64, 64);
        cf_post_recv(&c, 0x2000 + (uintptr_t)i, &s, 1);
    }
    c.qp->Dispatch->NdkFlush(c.qp);
    collect_exactly_once(c.rcq, 0x2000, FLUSH_N, false, NdkOperationTypeReceive);
    /* A flushed QP is in error (§8.29): a new post fails inline or completes cancelled. */
    NDK_SGE s = cf_sge(&rx, 0, 64);
    NTSTATUS st = c.qp->Dispatch->NdkReceive(c.qp, (PVOID)0x2100, &s, 1);
    if (st == STATUS_SUCCESS)
        cf_cq_expect(c.rcq, 0x2100, STATUS_CANCELLED, NdkOperationTypeReceive);
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&rx);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

static void flush_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    struct cf_qp_attr at = { .iq_depth = 64 };
    cf_client_up(&c, fd, &at);
    struct cf_mem l;
    mem_for(&l, &c, 64 * 65536, RSINK);
    struct cf_msg msg = cf_hear(fd, T_MEM);
    /* Initiator queue: reads in flight, flushed at once: each completes exactly once, either
     * done or cancelled. */
    for (int i = 0; i < FLUSH_N; i++) {
        NDK_SGE s = cf_sge(&l, (size_t)i * 65536, 65536);
        cf_post_read(&c, 0x3000 + (uintptr_t)i, &s, 1, msg.addr + (uint64_t)i * 65536, msg.token, 0);
    }
    c.qp->Dispatch->NdkFlush(c.qp);
    collect_exactly_once(c.icq, 0x3000, FLUSH_N, true, NdkOperationTypeRead);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_END);
    cf_mem_free(&l);
    cf_conn_fini(&c);
}

void case_wr_flush(void)
{
    cf_pair(flush_server, flush_client, NULL, cf_ms(50000));
}

/* ==== per-post limits (§5.5.2) ==== */

static void limits_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem rx;
    mem_for(&rx, &c, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    /* Receive with one SGE more than the QP allows: inline failure, no completion. */
    ULONG n = c.attr.rsge + 1;
    NDK_SGE *many = calloc(n, sizeof *many);
    for (ULONG k = 0; k < n; k++)
        many[k] = cf_sge(&rx, k * 8, 8);
    NTSTATUS st = c.qp->Dispatch->NdkReceive(c.qp, (PVOID)0x66, many, n);
    CHECK_MSG(!NT_SUCCESS(st), "NdkReceive with %u SGEs on a QP created for %u: %s", n, c.attr.rsge,
              cf_status_name(st));
    free(many);
    NDK_SGE s = cf_sge(&rx, 0, 4096);
    cf_post_recv(&c, 0x67, &s, 1);
    cf_tell(fd, T_GO, 0, 0, 0, 0);
    /* Only the valid Send arrives, into the valid receive. */
    NDK_RESULT_EX r = cf_cq_expect(c.rcq, 0x67, STATUS_SUCCESS, NdkOperationTypeReceive);
    CHECK_EQ(r.BytesTransferred, 16);
    cf_cq_expect_none(c.rcq, 100);
    cf_hear(fd, T_DONE);
    cf_mem_free(&rx);
    cf_conn_fini(&c);
}

static void limits_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    struct cf_ad probe;
    cf_ad_open(&probe);
    NDK_ADAPTER_INFO in = probe.info;
    cf_ad_close(&probe);
    struct cf_qp_attr at = { .isge = in.MaxInitiatorRequestSge > 32 ? 32 : in.MaxInitiatorRequestSge,
                             .inline_size = in.MaxInlineDataSize > 4096 ? 4096 : in.MaxInlineDataSize };
    cf_client_up(&c, fd, &at);
    ULONG isge = c.attr.isge;
    cf_hear(fd, T_GO);

    /* Memory covering MaxTransferLength + 1 bytes across the QP's SGEs (not touched: NORESERVE,
     * and the post must fail before any byte moves). */
    uint64_t over = (uint64_t)in.MaxTransferLength + 1;
    size_t chunk = (size_t)((over + isge - 1) / isge);
    struct cf_mem big;
    cf_mem_alloc(&big, chunk, 0, 0);
    cf_mem_reg(&big, &c.ad, c.pd, RALL | NDK_MR_FLAG_RDMA_READ_SINK);
    NDK_SGE *sg = calloc(isge + 1, sizeof *sg);
    uint64_t left = over;
    for (ULONG k = 0; k < isge; k++) {
        ULONG len = (ULONG)(left < chunk ? left : chunk);
        sg[k] = cf_sge(&big, 0, len);
        left -= len;
    }
    CHECK_EQ(left, 0);
    NTSTATUS st = c.qp->Dispatch->NdkSend(c.qp, (PVOID)0x70, sg, isge, 0);
    CHECK_MSG(!NT_SUCCESS(st), "NdkSend of MaxTransferLength + 1 bytes accepted (§5.5.2)");
    st = c.qp->Dispatch->NdkWrite(c.qp, (PVOID)0x71, sg, isge, (uint64_t)(uintptr_t)big.buf, big.rtok, 0);
    CHECK_MSG(!NT_SUCCESS(st), "NdkWrite of MaxTransferLength + 1 bytes accepted (§5.5.2)");
    ULONG rn = isge < in.MaxReadRequestSge ? isge : in.MaxReadRequestSge;
    if ((uint64_t)rn * chunk >= over) {
        st = c.qp->Dispatch->NdkRead(c.qp, (PVOID)0x72, sg, rn, (uint64_t)(uintptr_t)big.buf, big.rtok, 0);
        CHECK_MSG(!NT_SUCCESS(st), "NdkRead of MaxTransferLength + 1 bytes accepted (§5.5.2)");
    }
    /* One SGE above the QP's initiator limit, and above the adapter's read limit. */
    for (ULONG k = 0; k <= isge; k++)
        sg[k] = cf_sge(&big, 0, 8);
    st = c.qp->Dispatch->NdkSend(c.qp, (PVOID)0x73, sg, isge + 1, 0);
    CHECK_MSG(!NT_SUCCESS(st), "NdkSend with %u SGEs on a QP created for %u accepted", isge + 1, isge);
    st = c.qp->Dispatch->NdkWrite(c.qp, (PVOID)0x74, sg, isge + 1, (uint64_t)(uintptr_t)big.buf, big.rtok, 0);
    CHECK_MSG(!NT_SUCCESS(st), "NdkWrite with %u SGEs on a QP created for %u accepted", isge + 1, isge);
    if (in.MaxReadRequestSge < 4096) {
        ULONG rr = in.MaxReadRequestSge + 1;
        NDK_SGE *rs = calloc(rr, sizeof *rs);
        for (ULONG k = 0; k < rr; k++)
            rs[k] = cf_sge(&big, 0, 8);
        st = c.qp->Dispatch->NdkRead(c.qp, (PVOID)0x75, rs, rr, (uint64_t)(uintptr_t)big.buf, big.rtok, 0);
        CHECK_MSG(!NT_SUCCESS(st), "NdkRead with MaxReadRequestSge + 1 = %u SGEs accepted", rr);
        free(rs);
    }
    /* Inline above the QP's InlineDataSize (inline is exempt from the SGE count, not the size). */
    if (c.attr.inline_size) {
        uint8_t *buf = calloc(1, c.attr.inline_size + 1);
        NDK_SGE is = { .VirtualAddress = buf, .Length = c.attr.inline_size + 1, .MemoryRegionToken = 0 };
        st = c.qp->Dispatch->NdkSend(c.qp, (PVOID)0x76, &is, 1, NDK_OP_FLAG_INLINE);
        CHECK_MSG(!NT_SUCCESS(st), "inline NdkSend of InlineDataSize + 1 = %u bytes accepted (§4.4)",
                  c.attr.inline_size + 1);
        free(buf);
    }
    /* None of those produced a completion: the next one is the valid Send's (§5.5.2). */
    sg[0] = cf_sge(&big, 0, 16);
    memset(big.buf, 0x42, 16);
    cf_post_send(&c, 0x7F, sg, 1, 0);
    cf_cq_expect(c.icq, 0x7F, STATUS_SUCCESS, NdkOperationTypeSend);
    cf_cq_expect_none(c.icq, 100);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    free(sg);
    cf_mem_free(&big);
    cf_conn_fini(&c);
}

void case_limits_post(void)
{
    cf_pair(limits_server, limits_client, NULL, cf_ms(50000));
}

/* ==== initiator requests on an unconnected QP ==== */

void case_post_unconnected(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *cq = cf_cq(&a, 32);
    NDK_QP *qp;
    CHECK_ST(cf_try_qp(&a, pd, cq, cq, NULL, 8, 8, 2, 2, 0, &qp), STATUS_SUCCESS);
    struct cf_mem m;
    cf_mem_alloc(&m, 8192, 0, 0);
    cf_mem_reg(&m, &a, pd, RALL | NDK_MR_FLAG_RDMA_READ_SINK);
    NDK_MW *mw = cf_mw(&a, pd);
    NDK_MR *fr = cf_mr(&a, pd, TRUE);
    CHECK_ST(cf_init_frmr(fr, 2, TRUE), STATUS_SUCCESS);
    NDK_SGE s = cf_sge(&m, 0, 64);
    const NDK_QP_DISPATCH *d = qp->Dispatch;
    /* Valid pages (from a LAM), so only the connection state is wrong. */
    MDL *lmdl = IoAllocateMdl(m.buf, 8192, FALSE, FALSE, NULL);
    ULONG lsz = 4096, fbo = 0;
    NDK_LOGICAL_ADDRESS_MAPPING *lam = calloc(1, lsz);
    struct cf_op *lop = cf_op_new("NdkBuildLAM");
    CHECK_ST(cf_req_done(lop, a.ad->Dispatch->NdkBuildLAM(a.ad, lmdl, 8192, cf_req_cb, lop, lam, &lsz, &fbo)),
             STATUS_SUCCESS);
    const NDK_LOGICAL_ADDRESS *pages = lam->AdapterPageArray;
#define UNCONN(what, call) do { NTSTATUS _s = (call); CHECK_MSG(_s == STATUS_CONNECTION_INVALID, \
        "%s on an unconnected QP: %s, expected STATUS_CONNECTION_INVALID (§2.9)", what, cf_status_name(_s)); } while (0)
    UNCONN("NdkSend", d->NdkSend(qp, NULL, &s, 1, 0));
    UNCONN("NdkWrite", d->NdkWrite(qp, NULL, &s, 1, (uint64_t)(uintptr_t)m.buf, m.rtok, 0));
    UNCONN("NdkRead", d->NdkRead(qp, NULL, &s, 1, (uint64_t)(uintptr_t)m.buf, m.rtok, 0));
    UNCONN("NdkBind", d->NdkBind(qp, NULL, m.mr, mw, m.buf, 4096, NDK_OP_FLAG_ALLOW_REMOTE_READ));
    UNCONN("NdkFastRegister", d->NdkFastRegister(qp, NULL, fr, lam->AdapterPageCount, pages, fbo, 8192, m.buf,
                                                 NDK_OP_FLAG_ALLOW_LOCAL_WRITE));
    UNCONN("NdkInvalidate", d->NdkInvalidate(qp, NULL, &mw->Header, 0));
    if (a.version.Major > 1 || a.version.Minor >= 2)
        UNCONN("NdkSendAndInvalidate", d->NdkSendAndInvalidate(qp, NULL, &s, 1, 0, 0x1234));
    /* Receives may be posted before the connection (§8.28). */
    CHECK_ST(d->NdkReceive(qp, (PVOID)0x81, &s, 1), STATUS_SUCCESS);
    /* Nothing above produced a completion. */
    cf_cq_expect_none(cq, 100);
    a.ad->Dispatch->NdkReleaseLAM(a.ad, lam);
    free(lam);
    NdkMdlChainFree(lmdl);
    cf_close(qp);
    cf_close(mw);
    cf_close(fr);
    cf_mem_free(&m);
    cf_cq_close(cq);
    cf_close(pd);
    cf_ad_close(&a);
}

/* ==== queue depths at their maximum ==== */

static ULONG cap_depth(ULONG v)
{
    return v > (1u << 17) ? (1u << 17) : v;
}

static void depth_server(int fd, void *arg)
{
    (void)arg;
    struct cf_ad probe;
    cf_ad_open(&probe);
    NDK_ADAPTER_INFO in = probe.info;
    cf_ad_close(&probe);
    ULONG rq = cap_depth(in.MaxReceiveQueueDepth), cqd = cap_depth(in.MaxCqDepth);
    struct cf_qp_attr at = { .rq_depth = rq, .iq_depth = 4, .cq_depth = cqd };
    struct cf_conn c;
    cf_server_up(&c, fd, &at);
    /* Fill the receive queue (zero-length receives), then one more: inline failure. */
    for (ULONG i = 0; i < rq; i++) {
        NTSTATUS st = c.qp->Dispatch->NdkReceive(c.qp, (PVOID)(uintptr_t)(i + 1), NULL, 0);
        CHECK_MSG(st == STATUS_SUCCESS, "receive %u of a %u-deep queue refused: %s", i + 1, rq, cf_status_name(st));
    }
    NTSTATUS st = c.qp->Dispatch->NdkReceive(c.qp, (PVOID)(uintptr_t)0xFFFFFF, NULL, 0);
    CHECK_MSG(!NT_SUCCESS(st), "receive %u on a %u-deep receive queue accepted (§5.5.2)", rq + 1, rq);
    /* The SRQ at its maximum. */
    if (in.MaxSrqDepth) {
        ULONG sd = cap_depth(in.MaxSrqDepth);
        struct cf_srq *s = cf_srq(c.pd, &c.ad, sd, 1, 0);
        for (ULONG i = 0; i < sd; i++)
            CHECK_ST(s->srq->Dispatch->NdkSrqReceive(s->srq, NULL, NULL, 0), STATUS_SUCCESS);
        st = s->srq->Dispatch->NdkSrqReceive(s->srq, NULL, NULL, 0);
        CHECK_MSG(!NT_SUCCESS(st), "SRQ receive %u on a %u-deep SRQ accepted", sd + 1, sd);
        cf_srq_close(s);
    }
    struct cf_msg go;
    cf_tell(fd, T_GO, 0, 0, rq, 0);
    go = cf_hear(fd, T_DONE);
    /* Every one of the client's sends consumed one receive, in order. */
    for (uint64_t i = 0; i < go.len; i++) {
        NDK_RESULT_EX r;
        CHECK_MSG(cf_cq_next(c.rcq, &r, cf_ms(15000)), "receive completion %llu of %llu missing",
                  (unsigned long long)i + 1, (unsigned long long)go.len);
        CHECK_EQ((uintptr_t)r.RequestContext, i + 1);
        CHECK_ST(r.Status, STATUS_SUCCESS);
    }
    cf_note("%u receives, %llu sends at full depth: ok", rq, (unsigned long long)go.len);
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_conn_fini(&c);
}

static void depth_client(int fd, void *arg)
{
    (void)arg;
    struct cf_ad probe;
    cf_ad_open(&probe);
    NDK_ADAPTER_INFO in = probe.info;
    cf_ad_close(&probe);
    ULONG iq = cap_depth(in.MaxInitiatorQueueDepth), cqd = cap_depth(in.MaxCqDepth);
    struct cf_qp_attr at = { .rq_depth = 4, .iq_depth = iq, .cq_depth = cqd };
    struct cf_conn c;
    cf_client_up(&c, fd, &at);
    struct cf_msg go = cf_hear(fd, T_GO);
    ULONG n = iq < go.len ? iq : (ULONG)go.len;
    if (n > cqd)
        n = cqd;
    /* The whole initiator queue posted back to back: the provider must accept every one. */
    for (ULONG i = 0; i < n; i++) {
        NTSTATUS st = c.qp->Dispatch->NdkSend(c.qp, (PVOID)(uintptr_t)(i + 1), NULL, 0, 0);
        CHECK_MSG(st == STATUS_SUCCESS, "send %u of a %u-deep initiator queue refused: %s", i + 1, iq,
                  cf_status_name(st));
    }
    for (ULONG i = 0; i < n; i++) {
        NDK_RESULT_EX r;
        CHECK_MSG(cf_cq_next(c.icq, &r, cf_ms(15000)), "send completion %u of %u missing", i + 1, n);
        CHECK_EQ((uintptr_t)r.RequestContext, i + 1);
        CHECK_ST(r.Status, STATUS_SUCCESS);
    }
    cf_tell(fd, T_DONE, 0, 0, n, 0);
    cf_hear(fd, T_END);
    cf_conn_fini(&c);
}

void case_queue_depth_max(void)
{
    cf_pair(depth_server, depth_client, NULL, cf_ms(170000));
}
