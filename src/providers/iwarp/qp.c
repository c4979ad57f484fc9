/* qp.c - queue pairs (§2.5, §2.9, §5.4-§5.6): the QP object, its state machine (one transition
 * function), flush, the posting entry points and the minimal data-path hooks.
 *
 * The posting functions validate against the QP's limits and queue work requests; the transmit
 * and receive engines that move them are the data path (issue 4), which replaces the
 * "DATA PATH HOOK" functions at the bottom of this file with tx.c / rx.c. */
#include "iwarp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

const char *const iw_qp_state_name[IW_QP_STATE_COUNT] = {
    [IW_QP_IDLE] = "IDLE", [IW_QP_CONNECTING] = "CONNECTING", [IW_QP_RTS] = "RTS",
    [IW_QP_CLOSING] = "CLOSING", [IW_QP_TERMINATE] = "TERMINATE", [IW_QP_ERROR] = "ERROR",
};

/* Allowed transitions, one bit per target state. A failed connection attempt returns the QP
 * to IDLE so it can be given to another connector; once RTS was reached the QP is spent
 * (§5.11.6: a disconnected QP may not be reused). */
static const uint8_t iw_qp_next[IW_QP_STATE_COUNT] = {
    [IW_QP_IDLE] = 1u << IW_QP_CONNECTING | 1u << IW_QP_ERROR,
    [IW_QP_CONNECTING] = 1u << IW_QP_RTS | 1u << IW_QP_IDLE | 1u << IW_QP_ERROR,
    [IW_QP_RTS] = 1u << IW_QP_CLOSING | 1u << IW_QP_TERMINATE | 1u << IW_QP_ERROR,
    [IW_QP_CLOSING] = 1u << IW_QP_TERMINATE | 1u << IW_QP_ERROR,
    [IW_QP_TERMINATE] = 1u << IW_QP_ERROR,
    [IW_QP_ERROR] = 0,
};

int iw_qp_modify_locked(struct iw_qp *qp, enum iw_qp_state to)
{
    enum iw_qp_state from = qp->state;

    if (from == to)
        return 0;
    if (to >= IW_QP_STATE_COUNT || !(iw_qp_next[from] & (1u << to))) {
        iw_warn("QP[%u] state transition undefined: %s => %s", qp->obj.id, iw_qp_state_name[from],
                to < IW_QP_STATE_COUNT ? iw_qp_state_name[to] : "?");
        return -EINVAL;
    }
    iw_dbg("QP[%u] %s => %s", qp->obj.id, iw_qp_state_name[from], iw_qp_state_name[to]);
    qp->state = to;
    return 0;
}

void iw_qp_set_error_locked(struct iw_qp *qp, int err)
{
    if (!qp->first_error && err)
        qp->first_error = err;
}

static NDK_OPERATION_TYPE iw_wr_type(enum iw_wr_op op)
{
    return op == IW_WR_SEND_INV ? NdkOperationTypeSend : (NDK_OPERATION_TYPE)op;
}

static void iw_wq_flush_locked(struct iw_qp *qp, struct iw_wq *q, struct iw_cq *cq)
{
    while (q->count) {
        struct iw_wqe *w = iw_wq_at(q, 0);
        NDK_RESULT_EX r = {
            .Status = STATUS_CANCELLED,
            .QPContext = qp->qp_context,
            .RequestContext = w->request_context,
            .Type = iw_wr_type(w->op),
        };
        /* A flushed request failed, so it is reported even with SILENT_SUCCESS (§5.5.2). */
        iw_cq_push(cq, &r, false);
        iw_wqe_release(w);
        q->head = (q->head + 1) % q->depth;
        q->count--;
    }
}

void iw_qp_flush_locked(struct iw_qp *qp)
{
    if (qp->state != IW_QP_ERROR && iw_qp_modify_locked(qp, IW_QP_ERROR) < 0)
        qp->state = IW_QP_ERROR;   /* flush always wins; the transition was logged */
    iw_wq_flush_locked(qp, &qp->sq, qp->icq);
    if (!qp->srq)
        iw_wq_flush_locked(qp, &qp->rq, qp->rcq);
}

/* NdkFlush (§2.9): cancel everything outstanding; the QP stays in ERROR until closed (§8.29).
 * A connected QP loses its connection: the CM aborts it on the progress thread. */
void iw_qp_dispatch_flush(NDK_QP *q)
{
    struct iw_qp *qp = to_iw_qp(q);
    bool was_connected;

    pthread_mutex_lock(&qp->lock);
    was_connected = qp->state == IW_QP_RTS || qp->state == IW_QP_CLOSING || qp->state == IW_QP_TERMINATE;
    iw_qp_flush_locked(qp);
    pthread_mutex_unlock(&qp->lock);
    if (was_connected)
        iw_cm_connection_failed(qp, -ECANCELED);
}

/* ---- posting ---- */

static int iw_sgl_total(const NDK_SGE *sgl, ULONG nsge, uint64_t *total)
{
    uint64_t t = 0;

    if (nsge && !sgl)
        return -EINVAL;
    for (ULONG i = 0; i < nsge; i++)
        t += sgl[i].Length;
    if (t > IW_MAX_TRANSFER)
        return -EINVAL;
    *total = t;
    return 0;
}

/* Queues w on q; posts on an ERROR QP complete at once with STATUS_CANCELLED (verbs semantics,
 * §8.29). qp->lock held. */
static NTSTATUS iw_qp_enqueue_locked(struct iw_qp *qp, struct iw_wq *q, struct iw_cq *cq, const struct iw_wqe *w)
{
    if (iw_wq_full(q))
        return STATUS_INSUFFICIENT_RESOURCES;
    *iw_wq_at(q, q->count) = *w;
    q->count++;
    if (qp->state == IW_QP_ERROR)
        iw_wq_flush_locked(qp, q, cq);
    return STATUS_SUCCESS;
}

static NTSTATUS iw_qp_receive(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    NTSTATUS st;

    if (qp->srq)
        return STATUS_INVALID_DEVICE_REQUEST;   /* §8.27: receives go to the SRQ */
    if (nsge > qp->rq.max_sge)
        return STATUS_INVALID_PARAMETER;
    memset(&w, 0, sizeof w);
    if (iw_sgl_total(sgl, nsge, &w.length) < 0)
        return STATUS_INVALID_PARAMETER;
    w.op = IW_WR_RECEIVE;
    w.request_context = rctx;
    w.nsge = nsge;
    if (nsge)
        memcpy(w.sge, sgl, nsge * sizeof(NDK_SGE));
    pthread_mutex_lock(&qp->lock);
    st = iw_qp_enqueue_locked(qp, &qp->rq, qp->rcq, &w);
    pthread_mutex_unlock(&qp->lock);
    return st;
}

/* Common part of the initiator requests: connected check (§2.9: STATUS_CONNECTION_INVALID),
 * queue space, enqueue, kick the TX engine. Frees w's owned buffers on failure. */
static NTSTATUS iw_qp_post_sq(struct iw_qp *qp, struct iw_wqe *w)
{
    NTSTATUS st;
    bool kick = false;

    pthread_mutex_lock(&qp->lock);
    if (qp->state != IW_QP_RTS) {
        st = STATUS_CONNECTION_INVALID;
    } else {
        st = iw_qp_enqueue_locked(qp, &qp->sq, qp->icq, w);
        kick = st == STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&qp->lock);
    if (st != STATUS_SUCCESS)
        iw_wqe_release(w);
    else if (kick)
        iw_qp_kick_tx(qp);
    return st;
}

/* Builds a send / write WQE from an SGL, honouring NDK_OP_FLAG_INLINE (copy now, §5.5.3). */
static NTSTATUS iw_qp_build_sgl_wqe(struct iw_qp *qp, struct iw_wqe *w, enum iw_wr_op op, PVOID rctx,
                                    CONST NDK_SGE *sgl, ULONG nsge, ULONG flags, uint32_t max_sge)
{
    memset(w, 0, sizeof(*w));
    if (iw_sgl_total(sgl, nsge, &w->length) < 0)
        return STATUS_INVALID_PARAMETER;
    w->op = op;
    w->flags = flags;
    w->request_context = rctx;
    if ((flags & NDK_OP_FLAG_INLINE) && (op == IW_WR_SEND || op == IW_WR_SEND_INV || op == IW_WR_WRITE)) {
        /* Inline requests are exempt from the SGE-count limit but bound by InlineDataSize. */
        if (w->length > qp->inline_size)
            return STATUS_INVALID_PARAMETER;
        if (w->length) {
            uint8_t *p = malloc(w->length);
            if (!p)
                return STATUS_INSUFFICIENT_RESOURCES;
            uint64_t off = 0;
            for (ULONG i = 0; i < nsge; i++) {
                memcpy(p + off, sgl[i].VirtualAddress, sgl[i].Length);
                off += sgl[i].Length;
            }
            w->inline_buf = p;
        }
        return STATUS_SUCCESS;
    }
    if (nsge > max_sge)
        return STATUS_INVALID_PARAMETER;
    w->nsge = nsge;
    if (nsge)
        memcpy(w->sge, sgl, nsge * sizeof(NDK_SGE));
    return STATUS_SUCCESS;
}

static NTSTATUS iw_qp_send(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    NTSTATUS st = iw_qp_build_sgl_wqe(qp, &w, IW_WR_SEND, rctx, sgl, nsge, flags, qp->sq.max_sge);

    return st == STATUS_SUCCESS ? iw_qp_post_sq(qp, &w) : st;
}

static NTSTATUS iw_qp_send_inv(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, ULONG flags, UINT32 token)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    NTSTATUS st = iw_qp_build_sgl_wqe(qp, &w, IW_WR_SEND_INV, rctx, sgl, nsge, flags, qp->sq.max_sge);

    if (st != STATUS_SUCCESS)
        return st;
    w.remote_stag = token;
    return iw_qp_post_sq(qp, &w);
}

static NTSTATUS iw_qp_write(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 raddr, UINT32 rtoken,
                            ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    NTSTATUS st = iw_qp_build_sgl_wqe(qp, &w, IW_WR_WRITE, rctx, sgl, nsge, flags, qp->sq.max_sge);

    if (st != STATUS_SUCCESS)
        return st;
    w.remote_addr = raddr;
    w.remote_stag = rtoken;
    return iw_qp_post_sq(qp, &w);
}

static NTSTATUS iw_qp_read(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 raddr, UINT32 rtoken,
                           ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    /* Reads are never inline; their SGE limit is MaxReadRequestSge (§2.9). */
    NTSTATUS st = iw_qp_build_sgl_wqe(qp, &w, IW_WR_READ, rctx, sgl, nsge, flags & ~(ULONG)NDK_OP_FLAG_INLINE,
                                      qp->max_read_sge);

    if (st != STATUS_SUCCESS)
        return st;
    w.remote_addr = raddr;
    w.remote_stag = rtoken;
    return iw_qp_post_sq(qp, &w);
}

static NTSTATUS iw_qp_bind(NDK_QP *q, PVOID rctx, NDK_MR *m, NDK_MW *mw, PVOID va, SIZE_T len, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_mr *mr;
    struct iw_wqe w;

    if (!m || !mw)
        return STATUS_INVALID_PARAMETER;
    mr = to_iw_mr(m);
    /* §2.9 NdkBind: remote write through a window needs an MR with local write. */
    if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) && !(mr->access & NDK_MR_FLAG_ALLOW_LOCAL_WRITE))
        return STATUS_ACCESS_VIOLATION;
    if (len > IW_MAX_WINDOW)
        return STATUS_INVALID_PARAMETER;
    memset(&w, 0, sizeof w);
    w.op = IW_WR_BIND;
    w.flags = flags;
    w.request_context = rctx;
    w.va = (uint64_t)(uintptr_t)va;
    w.length = len;
    w.mem = &to_iw_mw(mw)->obj;
    w.mem2 = &mr->obj;
    iw_obj_get(w.mem);
    iw_obj_get(w.mem2);
    return iw_qp_post_sq(qp, &w);
}

static NTSTATUS iw_qp_fast_register(NDK_QP *q, PVOID rctx, NDK_MR *m, ULONG npages, CONST NDK_LOGICAL_ADDRESS *pages,
                                    ULONG fbo, SIZE_T len, PVOID base_va, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_mr *mr;
    struct iw_wqe w;
    bool remote = (flags & (NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE)) != 0;
    uint32_t cap;
    bool init, rem_ok;

    if (!m || !npages || !pages || fbo >= PAGE_SIZE)
        return STATUS_INVALID_PARAMETER;
    mr = to_iw_mr(m);
    pthread_mutex_lock(&mr->lock);
    cap = mr->page_cap;
    init = mr->fast_register && mr->frmr_initialized;
    rem_ok = mr->frmr_remote;
    pthread_mutex_unlock(&mr->lock);
    if (!init || npages > cap)
        return STATUS_INVALID_PARAMETER;
    if (len > (uint64_t)npages * PAGE_SIZE - fbo)
        return STATUS_INVALID_PARAMETER;
    /* §2.9: BaseVirtualAddress = FBO + n * PAGE_SIZE (§8.13: 0 allowed when FBO is 0). */
    if (((uint64_t)(uintptr_t)base_va - fbo) % PAGE_SIZE)
        return STATUS_INVALID_PARAMETER;
    if (remote && !rem_ok)
        return STATUS_ACCESS_VIOLATION;
    memset(&w, 0, sizeof w);
    w.page_list = malloc(npages * sizeof(uint64_t));
    if (!w.page_list)
        return STATUS_INSUFFICIENT_RESOURCES;
    for (ULONG i = 0; i < npages; i++)
        w.page_list[i] = (uint64_t)pages[i].QuadPart;
    w.op = IW_WR_FAST_REGISTER;
    w.flags = flags;
    w.request_context = rctx;
    w.page_count = npages;
    w.fbo = fbo;
    w.length = len;
    w.va = (uint64_t)(uintptr_t)base_va;
    w.mem = &mr->obj;
    iw_obj_get(w.mem);
    return iw_qp_post_sq(qp, &w);
}

static NTSTATUS iw_qp_invalidate(NDK_QP *q, PVOID rctx, NDK_OBJECT_HEADER *obj, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;

    if (!obj)
        return STATUS_INVALID_PARAMETER;
    memset(&w, 0, sizeof w);
    if (obj->ObjectType == NdkObjectTypeMr)
        w.mem = &to_iw_mr((NDK_MR *)obj)->obj;
    else if (obj->ObjectType == NdkObjectTypeMw)
        w.mem = &to_iw_mw((NDK_MW *)obj)->obj;
    else
        return STATUS_INVALID_PARAMETER;
    w.op = IW_WR_INVALIDATE;
    w.flags = flags;
    w.request_context = rctx;
    iw_obj_get(w.mem);
    return iw_qp_post_sq(qp, &w);
}

static NTSTATUS iw_close_qp(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_qp((NDK_QP *)h)->obj, cb, ctx);
}

/* Last reference gone (so no connector uses it): complete whatever is still queued before the
 * close completion runs (§5.1). */
static void iw_qp_quiesce(struct iw_obj *o)
{
    struct iw_qp *qp = ndk_container_of(o, struct iw_qp, obj);

    pthread_mutex_lock(&qp->lock);
    iw_qp_flush_locked(qp);
    pthread_mutex_unlock(&qp->lock);
}

static void iw_qp_destroy(struct iw_obj *o)
{
    struct iw_qp *qp = ndk_container_of(o, struct iw_qp, obj);

    iw_wq_free(&qp->sq);
    iw_wq_free(&qp->rq);
    atomic_fetch_sub(&o->dev->nqp, 1);
    pthread_mutex_destroy(&qp->lock);
    free(qp);
}

static const struct iw_obj_ops iw_qp_ops = {
    .name = "QP", .quiesce = iw_qp_quiesce, .destroy = iw_qp_destroy,
};

static const NDK_QP_DISPATCH iw_qp_dispatch = {
    .NdkCloseQp = iw_close_qp,
    .NdkQueryExtension = iw_query_extension,
    .NdkFlush = iw_qp_dispatch_flush,
    .NdkSend = iw_qp_send,
    .NdkReceive = iw_qp_receive,
    .NdkBind = iw_qp_bind,
    .NdkFastRegister = iw_qp_fast_register,
    .NdkInvalidate = iw_qp_invalidate,
    .NdkRead = iw_qp_read,
    .NdkWrite = iw_qp_write,
    .NdkSendAndInvalidate = iw_qp_send_inv,
};

static NTSTATUS iw_qp_create_common(struct iw_pd *pd, NDK_CQ *rcq, NDK_CQ *icq, struct iw_srq *srq, PVOID qpctx,
                                    ULONG rq_depth, ULONG sq_depth, ULONG rq_sge, ULONG sq_sge, ULONG inline_size,
                                    NDK_QP **out)
{
    struct iw_device *dev = pd->obj.dev;
    struct iw_qp *qp;

    /* §2.5: each limit <= the same-named NDK_ADAPTER_INFO maximum, else INVALID_PARAMETER. */
    if (!out || !rcq || !icq || sq_depth == 0 || sq_depth > IW_MAX_QP_DEPTH || sq_sge > IW_MAX_SGE ||
        inline_size > IW_MAX_INLINE)
        return STATUS_INVALID_PARAMETER;
    if (!srq && (rq_depth == 0 || rq_depth > IW_MAX_QP_DEPTH || rq_sge > IW_MAX_SGE))
        return STATUS_INVALID_PARAMETER;
    if (atomic_fetch_add(&dev->nqp, 1) >= IW_MAX_QP_COUNT) {
        atomic_fetch_sub(&dev->nqp, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    qp = calloc(1, sizeof(*qp));
    if (!qp || iw_wq_init(&qp->sq, sq_depth, sq_sge) < 0 || iw_wq_init(&qp->rq, srq ? 0 : rq_depth, rq_sge) < 0) {
        if (qp) {
            iw_wq_free(&qp->sq);
            free(qp);
        }
        atomic_fetch_sub(&dev->nqp, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    iw_obj_init(&qp->obj, &iw_qp_ops, IW_OBJ_QP, pd->obj.adapter, &qp->ndk.Header, &iw_qp_dispatch);
    pthread_mutex_init(&qp->lock, NULL);
    qp->state = IW_QP_IDLE;
    qp->qp_context = qpctx;
    qp->fd = -1;
    qp->max_read_sge = IW_MAX_SGE;
    qp->inline_size = inline_size;
    qp->pd = pd;
    qp->rcq = to_iw_cq(rcq);
    qp->icq = to_iw_cq(icq);
    qp->srq = srq;
    iw_obj_set_ante(&qp->obj, IW_QP_ANTE_PD, &pd->obj);
    iw_obj_set_ante(&qp->obj, IW_QP_ANTE_RCQ, &qp->rcq->obj);
    iw_obj_set_ante(&qp->obj, IW_QP_ANTE_ICQ, &qp->icq->obj);
    if (srq)
        iw_obj_set_ante(&qp->obj, IW_QP_ANTE_SRQ, &srq->obj);
    *out = &qp->ndk;
    return STATUS_SUCCESS;
}

NTSTATUS iw_create_qp(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, PVOID qpctx, ULONG rq_depth, ULONG sq_depth,
                      ULONG rq_sge, ULONG sq_sge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx,
                      NDK_QP **out)
{
    (void)cb;
    (void)ctx;
    return iw_qp_create_common(to_iw_pd(pd), rcq, icq, NULL, qpctx, rq_depth, sq_depth, rq_sge, sq_sge, inline_size,
                               out);
}

NTSTATUS iw_create_qp_with_srq(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, NDK_SRQ *srq, PVOID qpctx, ULONG sq_depth,
                               ULONG sq_sge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx,
                               NDK_QP **out)
{
    (void)cb;
    (void)ctx;
    if (!srq)
        return STATUS_INVALID_PARAMETER;
    return iw_qp_create_common(to_iw_pd(pd), rcq, icq, to_iw_srq(srq), qpctx, 0, sq_depth, 0, sq_sge, inline_size,
                               out);
}

/* ====================================================================================
 * DATA PATH HOOKS - minimal versions. Issue 4 replaces these in tx.c / rx.c (delete them
 * here then). They keep the CM honest: a connected QP notices the peer's FIN and resets.
 * ==================================================================================== */

void iw_qp_connection_established(struct iw_qp *qp)
{
    (void)qp;
}

int iw_qp_on_readable(struct iw_qp *qp)
{
    uint8_t buf[4096];
    int fd;
    ssize_t n;

    pthread_mutex_lock(&qp->lock);
    fd = qp->fd;
    pthread_mutex_unlock(&qp->lock);
    if (fd < 0)
        return -ENOTCONN;
    /* No RX engine yet: drain and discard FPDUs, report FIN / errors to the CM. */
    for (;;) {
        n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            IW_COUNT(qp->obj.dev, rdma_in_octets, n);
            continue;
        }
        if (n == 0)
            return -ESHUTDOWN;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno == EINTR)
            continue;
        return -errno;
    }
}

int iw_qp_on_writable(struct iw_qp *qp)
{
    (void)qp;
    return 0;
}

void iw_qp_connection_lost(struct iw_qp *qp, int err)
{
    (void)qp;
    (void)err;
}

void iw_qp_kick_tx(struct iw_qp *qp)
{
    (void)qp;
}
