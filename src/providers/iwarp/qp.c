/* qp.c - queue pairs (§2.5, §2.9, §5.4-§5.6): the QP object, its state machine (one transition
 * function) and the flush of its queues.
 *
 * The posting functions, NdkFlush and the DATA PATH HOOKS of iwarp.h are the data path's
 * (issue 4): post.c, tx.c, rx.c, access.c (datapath.h). */
#include "iwarp.h"
#include "datapath.h"

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

/* NdkFlush and the posting entry points (§2.9, §5.5) are the data path's: post.c. */

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

    iw_dp_qp_destroy(qp);        /* the data path's engines and buffers (tx.c) */
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
    .NdkFlush = iw_dp_flush,
    .NdkSend = iw_dp_send,
    .NdkReceive = iw_dp_receive,
    .NdkBind = iw_dp_bind,
    .NdkFastRegister = iw_dp_fast_register,
    .NdkInvalidate = iw_dp_invalidate,
    .NdkRead = iw_dp_read,
    .NdkWrite = iw_dp_write,
    .NdkSendAndInvalidate = iw_dp_send_inv,
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
