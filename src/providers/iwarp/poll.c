/*
 * poll.c - consumer-driven progress. A consumer that busy-polls a CQ (NdkGetCqResults over and
 * over without arming it, cq.c) runs the RX and TX engines of the CQ's connected QPs in its own
 * thread, like a busy-polled socket or libfabric's manual progress. Meanwhile the progress
 * thread stops watching those sockets for data and room (cm.c keeps EPOLLRDHUP, so a peer that
 * goes away is still seen), so a message costs no thread wake-up: on a machine with few cores
 * that wake-up would preempt the spinning consumer and cost more than the message itself.
 *
 * Life of a QP here: on its CQs' lists from establishment (iw_poll_attach) until the engines
 * stop (iw_poll_detach, from iw_qp_stop). Polled (iw_qp_set_polled) from the first busy poll of
 * one of its CQs until that CQ is armed (the consumer is going to wait), or until nobody
 * polled it for poll_idle_ms (qp.c, the QP's poll timer: Read Requests and the peer's data
 * must not wait on a consumer that stopped polling without arming).
 *
 * Errors the engines return are reported to the CM once (iw_cm_connection_failed), which closes
 * the connection on the progress thread exactly as if that thread had found them.
 *
 * Talks to: rx.c and tx.c (it runs them), qp.c (iw_qp_set_polled), cm.c (a failure it found).
 * Called by cq.c and qp.c. */
#include "datapath.h"

#include <errno.h>

/* Runs the QP's engines once. Consumer thread; cq->qps_lock held (the QP cannot go away). */
static void poll_qp(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    int err = 0;

    if (!atomic_load_explicit(&qp->polled, memory_order_relaxed))
        iw_qp_set_polled(qp, true);
    atomic_fetch_add_explicit(&qp->poll_seq, 1, memory_order_relaxed);
    /* The progress thread no longer waits for room in the socket on our behalf. */
    if (atomic_load_explicit(&dp->tx_blocked, memory_order_relaxed))
        err = iw_tx_run(qp);
    if (!err)
        err = iw_rx_poll(qp);
    if (err && !atomic_exchange(&dp->poll_failed, true)) {
        iw_dbg("QP[%u] connection ends under a polling consumer (%d)", qp->obj.id, err);
        iw_cm_connection_failed(qp, err);
    }
}

void iw_poll_cq(struct iw_cq *cq)
{
    struct ndk_list *pos;

    pthread_mutex_lock(&cq->qps_lock);
    ndk_list_for_each(pos, &cq->qps)
        poll_qp(ndk_container_of(pos, struct dp_cq_ref, link)->qp);
    pthread_mutex_unlock(&cq->qps_lock);
}

void iw_poll_cq_stop(struct iw_cq *cq)
{
    struct ndk_list *pos;

    pthread_mutex_lock(&cq->qps_lock);
    ndk_list_for_each(pos, &cq->qps) {
        struct iw_qp *qp = ndk_container_of(pos, struct dp_cq_ref, link)->qp;
        if (atomic_load_explicit(&qp->polled, memory_order_relaxed))
            iw_qp_set_polled(qp, false);
    }
    pthread_mutex_unlock(&cq->qps_lock);
}

static void ref_attach(struct dp_cq_ref *r)
{
    struct iw_cq *cq = r->cq;

    if (!cq)
        return;                                   /* the QP's other CQ is the same one */
    pthread_mutex_lock(&cq->qps_lock);
    if (!r->on) {
        r->on = true;
        ndk_list_add_tail(&cq->qps, &r->link);
    }
    pthread_mutex_unlock(&cq->qps_lock);
}

static void ref_detach(struct dp_cq_ref *r)
{
    struct iw_cq *cq = r->cq;

    if (!cq)
        return;
    pthread_mutex_lock(&cq->qps_lock);
    if (r->on) {
        ndk_list_del(&r->link);
        r->on = false;
    }
    pthread_mutex_unlock(&cq->qps_lock);
}

void iw_poll_init(struct iw_qp *qp, struct iw_dp *dp)
{
    dp->cqref[0].qp = dp->cqref[1].qp = qp;
    dp->cqref[0].cq = qp->rcq;
    dp->cqref[1].cq = qp->icq != qp->rcq ? qp->icq : NULL;
}

void iw_poll_attach(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;

    ref_attach(&dp->cqref[0]);
    ref_attach(&dp->cqref[1]);
}

void iw_poll_detach(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;

    ref_detach(&dp->cqref[0]);
    ref_detach(&dp->cqref[1]);
}
