/* drain.c - every request completes exactly once (§5.5, §8.29), also where the device drops
 * some after a QP error. siw does (Linux 6.1 drivers/infiniband/sw/siw, the guest's source):
 *   - siw_post_send() in ERROR flushes only the kernel WR list it is given, and a user QP's
 *     doorbell passes none, so an SQE that libsiw writes after the QP reached ERROR is never
 *     completed (the same for receives, siw_post_receive());
 *   - siw_qp_nextstate_from_term() and siw_qp_nextstate_from_close() (TERMINATE or CLOSING ->
 *     ERROR) call siw_sq_flush() only when a transmit WQE is active, so queued SQEs and Read
 *     Requests waiting in the ORQ stay unflushed until an LLP close that may never come;
 *   - siw_qp_cm_drop(qp, 0) after a transmit error releases the socket without
 *     siw_qp_llp_close(), leaving the QP in RTS with its queues unflushed.
 * Every siw flush runs inside the state change under qp->state_lock, so once our own
 * ibv_modify_qp(ERR) has returned, every completion siw will write for the QP is in the CQ.
 * The provider then marks the QP's rings "draining" with the device's drain epoch; the next poll
 * of the CQ that started after the mark and finds the device CQ empty completes every request
 * still in the rings with STATUS_CANCELLED. A completion siw writes later (a late LLP close
 * flush) finds its slot retired and is dropped (qp.c), so nothing completes twice.
 * Devices that flush everything themselves, including work posted in ERROR (rxe, mlx5), do not
 * need this (dev->flush_sync false). Talks to qp.c (rings), cq.c (poll, soft completions). */
#include "verbs.h"

#include <string.h>

static void vb_drain_kick(struct vb_qp *qp)
{
    vb_cq_kick(qp->scq);
    if (qp->rcq != qp->scq)
        vb_cq_kick(qp->rcq);
}

/* Any thread, no lock held; the QP is in ERROR on the device (ibv_modify_qp returned). */
void vb_drain_arm(struct vb_qp *qp)
{
    struct vb_device *dev = qp->obj.dev;

    if (!dev->flush_sync) {
        vb_drain_kick(qp);
        return;
    }
    uint64_t epoch = atomic_fetch_add(&dev->drain_epoch, 1) + 1;
    uint64_t none = 0;
    if (atomic_compare_exchange_strong(&qp->drain_sq, &none, epoch))
        atomic_fetch_add(&dev->ndrain, 1);
    none = 0;
    if (!qp->srq && atomic_compare_exchange_strong(&qp->drain_rq, &none, epoch))
        atomic_fetch_add(&dev->ndrain, 1);
    vb_drain_kick(qp);
}

/* sq_lock held: one CANCELLED completion per request still in the send ring. */
static void vb_drain_sq(struct vb_qp *qp)
{
    for (uint64_t c = qp->sq_tail; c != qp->sq_head; c++) {
        const struct vb_sslot *s = &qp->sq[c & (qp->sq_n - 1)];
        NDK_RESULT_EX r = { .Status = STATUS_CANCELLED, .QPContext = qp->qp_ctx, .RequestContext = s->ctx,
                            .Type = vb_qp_op_type(s->type) };
        if (s->type != VB_SOP_HIDDEN)
            vb_cq_push_soft(qp->scq, &r);
    }
    qp->sq_tail = qp->sq_head;
    vb_qp_sv_sq(qp);
    qp->forced_inflight = false;
    qp->chain = qp->chain_tail = NULL;      /* a DEFER chain never reached the device */
}

/* rq_lock held. */
static void vb_drain_rq(struct vb_qp *qp)
{
    for (uint64_t c = qp->rq_tail; c != qp->rq_head; c++) {
        NDK_RESULT_EX r = { .Status = STATUS_CANCELLED, .QPContext = qp->qp_ctx,
                            .RequestContext = qp->rq[c & (qp->rq_n - 1)], .Type = NdkOperationTypeReceive };
        vb_cq_push_soft(qp->rcq, &r);
    }
    qp->rq_tail = qp->rq_head;
    vb_qp_sv_rq(qp);
}

/* The consumer's poll of cq (poll and arm serialized, §5.4) found the device CQ empty, and
 * epoch is the device's drain epoch read before that poll began. Returns true if it queued
 * completions. Takes dev->qpt_lock, then the rings' locks, then cq->lock (push). */
bool vb_drain_cq(struct vb_cq *cq, uint64_t epoch)
{
    struct vb_device *dev = cq->obj.dev;
    bool any = false;

    pthread_mutex_lock(&dev->qpt_lock);
    for (size_t b = 0; b < sizeof dev->qpt / sizeof dev->qpt[0] && atomic_load(&dev->ndrain); b++) {
        struct ndk_list *pos;
        ndk_list_for_each(pos, &dev->qpt[b]) {
            struct vb_qp *qp = ndk_list_entry(pos, struct vb_qp, qpt_link);
            uint64_t e = atomic_load(&qp->drain_sq);
            if (qp->scq == cq && e && e <= epoch && atomic_compare_exchange_strong(&qp->drain_sq, &e, UINT64_MAX)) {
                pthread_mutex_lock(&qp->sq_lock);
                any |= qp->sq_tail != qp->sq_head;
                vb_drain_sq(qp);
                pthread_mutex_unlock(&qp->sq_lock);
                atomic_fetch_sub(&dev->ndrain, 1);
            }
            e = atomic_load(&qp->drain_rq);
            if (qp->rcq == cq && e && e <= epoch && atomic_compare_exchange_strong(&qp->drain_rq, &e, UINT64_MAX)) {
                pthread_mutex_lock(&qp->rq_lock);
                any |= qp->rq_tail != qp->rq_head;
                vb_drain_rq(qp);
                pthread_mutex_unlock(&qp->rq_lock);
                atomic_fetch_sub(&dev->ndrain, 1);
            }
        }
    }
    pthread_mutex_unlock(&dev->qpt_lock);
    return any;
}

/* QP destroy (progress thread, the QP already out of dev->qpt): forget a pending mark. */
void vb_drain_forget(struct vb_qp *qp)
{
    struct vb_device *dev = qp->obj.dev;
    uint64_t e = atomic_exchange(&qp->drain_sq, UINT64_MAX);

    if (e && e != UINT64_MAX)
        atomic_fetch_sub(&dev->ndrain, 1);
    e = atomic_exchange(&qp->drain_rq, UINT64_MAX);
    if (e && e != UINT64_MAX)
        atomic_fetch_sub(&dev->ndrain, 1);
}

/* Progress thread: a QP error reported asynchronously (IBV_EVENT_QP_FATAL, QP_REQ_ERR,
 * QP_ACCESS_ERR) or by an error completion. The device stops the QP; on siw our own transition
 * to ERROR is what flushes it (see above), elsewhere it is harmless. */
void vb_drain_on_qp_error(struct vb_qp *qp)
{
    atomic_store(&qp->peer_gone, true);
    if (qp->obj.dev->flush_sync)
        vb_qp_to_err(qp);
    else
        vb_drain_kick(qp);
}

static void vb_drain_err_work(struct vb_work *w)
{
    struct vb_qp *qp = ndk_container_of(w, struct vb_qp, err_work);

    if (!vb_obj_closing(&qp->obj))
        vb_drain_on_qp_error(qp);
    vb_obj_put(&qp->obj);
}

/* Any thread (a poll, dev->qpt_lock held): an error completion of qp; the rest of its work is
 * flushed from the progress thread, once. */
void vb_drain_error_seen(struct vb_qp *qp)
{
    if (!qp->obj.dev->flush_sync || vb_obj_closing(&qp->obj) || atomic_exchange(&qp->err_queued, true))
        return;
    /* A reference only while the consumer's is still there: a close may drop it concurrently. */
    if (!vb_obj_tryget(&qp->obj))
        return;
    qp->err_work.fn = vb_drain_err_work;
    ndk_list_init(&qp->err_work.link);
    vb_work_queue(qp->obj.dev, &qp->err_work);
}
