/*
 * poll.c - consumer-driven progress. A consumer that busy-polls a CQ (NdkGetCqResults over and
 * over without arming it, cq.c) runs the RX and TX engines of the CQ's connected QPs in its own
 * thread, like a busy-polled socket or libfabric's manual progress. Meanwhile those sockets
 * leave the progress thread's epoll set (qp.c; a peer that goes away is seen by the poller's
 * own read), so a message costs no thread wake-up: on a machine with few cores that wake-up
 * would preempt the spinning consumer and cost more than the message itself.
 *
 * Life of a QP here: on its CQs' lists from establishment (iw_poll_attach) until the engines
 * stop (iw_poll_detach, from iw_qp_stop). Polled (iw_qp_set_polled) from the first busy poll of
 * one of its CQs until one of them is armed (the consumer is going to wait), or until nobody
 * busy-polled it for poll_idle_ms (qp.c, the QP's poll timer: Read Requests and the peer's data
 * must not wait on a consumer that stopped polling without arming). Meanwhile every poll of
 * its CQs runs it, also once the polls come too far apart to count as busy: nothing else reads
 * its socket (cq->polled_qps says whether a CQ has such QPs).
 *
 * Readiness (issue 14 item 5): a CQ with one QP reads that QP's socket on every poll; from its
 * second QP on, the CQ keeps an epoll set of its QPs' sockets (level-triggered EPOLLIN), so a
 * poll runs only the QPs that have data, and 19,000 idle QPs beside a busy one cost one
 * epoll_wait. A full socket has no readiness there: TX engines that found one are counted
 * (iw_poll_tx_blocked) and retried by the poll, once poll() says the socket has room
 * (iw_tx_poll), until they get their bytes out. A QP nobody
 * polls stays with the progress thread until its first data.
 *
 * A CQ with one QP (the usual latency case) is polled without cq->qps_lock: its QP is published
 * in cq->poll_one and run inside a read side, which one poller at a time enters by making
 * cq->poll_gen odd (a compare-exchange) and leaves by making it even again (a store). A detach,
 * after taking the QP off, waits for an odd generation it sees to change, so no poller still
 * runs the QP's engines when it returns, and one that keeps polling cannot hold it off (each
 * entry is a new generation). A second poller finding the read side taken leaves the QPs to the
 * first, as a failed trylock of the engine would. With two QPs or more the poll takes qps_lock
 * and asks the epoll set, a system call beside which the lock is small.
 *
 * Errors the engines return are reported to the CM once (iw_cm_connection_failed), which closes
 * the connection on the progress thread exactly as if that thread had found them.
 *
 * Talks to: rx.c and tx.c (it runs them), qp.c (iw_qp_set_polled), cm.c (a failure it found).
 * Called by cq.c and qp.c. */
#include "datapath.h"

#include <errno.h>
#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Runs the QP's engines once. busy: the consumer counts as busy-polling, and the QP becomes (or
 * stays) polled; otherwise only a QP that is polled already runs (the consumer slowed down, but
 * nobody else reads its socket), and the poll does not keep it polled. Consumer thread;
 * cq->qps_lock held or inside the read side of iw_poll_cq (the QP cannot go away). */
static void poll_qp(struct iw_qp *qp, bool busy)
{
    struct iw_dp *dp = qp->dp;
    int err = 0;

    if (busy) {
        if (!atomic_load_explicit(&qp->polled, memory_order_relaxed))
            iw_qp_set_polled(qp, true);
        /* A load and a store, not a locked add, on every busy poll: the expiry check only asks
         * whether the count moved. Two pollers at once may store one value; at worst that hands
         * the QP back one check early, and the next busy poll takes it again. */
        atomic_store_explicit(&qp->poll_seq, atomic_load_explicit(&qp->poll_seq, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    } else if (!atomic_load_explicit(&qp->polled, memory_order_relaxed)) {
        return;
    }
    /* The progress thread no longer waits for room in the socket on our behalf. */
    if (atomic_load_explicit(&dp->tx_blocked, memory_order_relaxed))
        err = iw_tx_poll(qp);
    if (!err)
        err = iw_rx_poll(qp);
    if (err && !atomic_exchange(&dp->poll_failed, true)) {
        iw_dbg("QP[%u] connection ends under a polling consumer (%d)", qp->obj.id, err);
        iw_cm_connection_failed(qp, err);
    }
}

#define POLL_EVENTS 64

/* Runs the QPs whose TX engine waits for room; returns how many still wait. qps_lock held. */
static unsigned poll_tx_sweep(struct iw_cq *cq, bool busy)
{
    struct ndk_list *pos;
    unsigned still = 0;

    ndk_list_for_each(pos, &cq->qps) {
        struct iw_qp *qp = ndk_container_of(pos, struct dp_cq_ref, link)->qp;
        if (atomic_load_explicit(&qp->dp->tx_blocked, memory_order_relaxed)) {
            poll_qp(qp, busy);
            still += atomic_load_explicit(&qp->dp->tx_blocked, memory_order_relaxed);
        }
    }
    return still;
}

void iw_poll_cq(struct iw_cq *cq, bool busy)
{
    struct ndk_list *pos;
    /* The read side: enter, then look (both sequentially consistent, against the detach's
     * store of poll_one and its look at poll_gen). One locked instruction per poll. */
    uint64_t gen = atomic_load_explicit(&cq->poll_gen, memory_order_relaxed);
    if ((gen & 1) || !atomic_compare_exchange_strong(&cq->poll_gen, &gen, gen + 1))
        return;                                   /* another poller is inside and runs them */
    struct dp_cq_ref *one = atomic_load(&cq->poll_one);
    if (one)
        poll_qp(one->qp, busy);
    atomic_store_explicit(&cq->poll_gen, gen + 2, memory_order_release);
    if (one)
        return;

    pthread_mutex_lock(&cq->qps_lock);
    if (!cq->poll_ep_on) {
        ndk_list_for_each(pos, &cq->qps)
            poll_qp(ndk_container_of(pos, struct dp_cq_ref, link)->qp, busy);
        pthread_mutex_unlock(&cq->qps_lock);
        return;
    }
    /* Only the QPs with data (level-triggered: what one pass leaves is reported again). */
    struct epoll_event evs[POLL_EVENTS];
    int n = iw_sys_epoll_wait(cq->poll_ep, evs, POLL_EVENTS, 0);
    for (int i = 0; i < n; i++)
        poll_qp(((struct dp_cq_ref *)evs[i].data.ptr)->qp, busy);
    /* Increments after this load survive the subtraction below; those before it are replaced
     * by the recount of the QPs still waiting. */
    unsigned blocked = atomic_load_explicit(&cq->poll_tx_blocked, memory_order_acquire);
    if (blocked) {
        unsigned still = poll_tx_sweep(cq, busy);
        atomic_fetch_sub_explicit(&cq->poll_tx_blocked, blocked, memory_order_relaxed);
        atomic_fetch_add_explicit(&cq->poll_tx_blocked, still, memory_order_relaxed);
    }
    pthread_mutex_unlock(&cq->qps_lock);
}

void iw_poll_tx_blocked(struct iw_dp *dp, bool on)
{
    if (!on) {
        atomic_store_explicit(&dp->tx_blocked, false, memory_order_relaxed);
        return;
    }
    if (atomic_exchange_explicit(&dp->tx_blocked, true, memory_order_relaxed))
        return;
    for (int i = 0; i < 2; i++) {
        if (dp->cqref[i].cq)
            atomic_fetch_add_explicit(&dp->cqref[i].cq->poll_tx_blocked, 1, memory_order_release);
    }
}

void iw_poll_count(struct iw_dp *dp, bool on)
{
    for (int i = 0; i < 2; i++) {
        struct iw_cq *cq = dp->cqref[i].cq;
        if (!cq)
            continue;
        if (on)
            atomic_fetch_add_explicit(&cq->polled_qps, 1, memory_order_relaxed);
        else
            atomic_fetch_sub_explicit(&cq->polled_qps, 1, memory_order_relaxed);
    }
}

/* Adds r's socket to its CQ's epoll set. qps_lock held. */
static void ref_watch(struct dp_cq_ref *r)
{
    struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = r };

    if (epoll_ctl(r->cq->poll_ep, EPOLL_CTL_ADD, r->qp->dp->fd, &ev) < 0) {
        /* No readiness for this one: back to reading every QP (correct, only slower). */
        iw_warn("QP[%u] CQ epoll_ctl: %d; the CQ's busy polls read every QP", r->qp->obj.id, errno);
        close(r->cq->poll_ep);
        r->cq->poll_ep_on = false;
    }
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

/* Publishes the CQ's one QP, or none. qps_lock held. */
static void poll_one_update(struct iw_cq *cq)
{
    struct dp_cq_ref *one = NULL;

    if (cq->poll_nqps == 1)
        one = ndk_container_of(cq->qps.next, struct dp_cq_ref, link);
    atomic_store(&cq->poll_one, one);
}

/* Returns once the read side of iw_poll_cq that may have begun before the call has ended: one
 * that begins later reads poll_one after the caller's store to it. The generation seen moves
 * when that poller leaves, whatever the next one does. qps_lock held. */
static void poll_grace(struct iw_cq *cq)
{
    uint64_t gen = atomic_load(&cq->poll_gen);

    if (!(gen & 1))
        return;
    for (unsigned spins = 0; atomic_load(&cq->poll_gen) == gen; spins++) {
        if (spins > 64)
            sched_yield();                  /* a reader runs the engines once: never for long */
    }
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
        if (++cq->poll_nqps == 2 && !cq->poll_ep_on && !cq->obj.dev->no_poll_progress) {
            cq->poll_ep = epoll_create1(EPOLL_CLOEXEC);
            cq->poll_ep_on = cq->poll_ep >= 0;
            struct ndk_list *pos;
            ndk_list_for_each(pos, &cq->qps) {
                if (cq->poll_ep_on)
                    ref_watch(ndk_container_of(pos, struct dp_cq_ref, link));
            }
        } else if (cq->poll_ep_on) {
            ref_watch(r);
        }
        poll_one_update(cq);
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
        if (cq->poll_ep_on)
            epoll_ctl(cq->poll_ep, EPOLL_CTL_DEL, r->qp->dp->fd, NULL);
        if (--cq->poll_nqps == 0 && cq->poll_ep_on) {
            close(cq->poll_ep);
            cq->poll_ep_on = false;
        }
        poll_one_update(cq);
        /* A poller may have found r as the CQ's one QP before, even before an attach that
         * replaced it: always wait. */
        poll_grace(cq);
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
