/* qp.c - queue pairs (§2.5, §2.9, §5.4-§5.6), as siw_qp.c: the QP object and its state machine
 * (one transition function), its life cycle with a connection (engines set up at
 * establishment, its own pollable registered with the progress engine, stopped and flushed when
 * the connection is lost), the one TERMINATE and the completion of SQ entries in order, which
 * the engines report here, and consumer polling (the socket handed to a busy-polling consumer
 * and back, with an expiry timer).
 *
 * Talks to: tx.c and rx.c (runs and stops the engines), wq.c, cq.c, poll.c (the CQs' lists of
 * QPs), cm.c (a broken connection), progress.c (pollable, timer), access.c, obj.c, log.c; its
 * dispatch names post.c. Called by cm.c (establish, lose), the engines, poll.c. */
#include "iwarp.h"
#include "datapath.h"
#include "wire.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

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

static void iw_qp_unpoll_locked(struct iw_qp *qp);

/* Rewrites the QP's system-view description: its state, and once connected its connection (the
 * CM holds dev->lock whenever the QP moves to RTS, so qp->conn's addresses are stable). qp->lock
 * held. */
static void iw_qp_sv_describe_locked(struct iw_qp *qp)
{
    struct ndk_sv_rec *r = iw_sv_desc(&qp->obj);

    if (!r)
        return;
    ndk_sv_begin(r);
    iw_sv_set_state(r->u.qp.state, iw_qp_state_name[qp->state]);
    if (qp->state == IW_QP_RTS && qp->conn) {
        iw_sv_set_addr(&r->u.qp.local, &qp->conn->local);
        iw_sv_set_addr(&r->u.qp.remote, &qp->conn->peer);
        r->u.qp.connector = iw_sv_id(&qp->conn->obj);
        r->u.qp.ird = qp->params.ird;
        r->u.qp.ord = qp->params.ord;
    }
    r->u.qp.first_error = qp->first_error;
    ndk_sv_end(r);
}

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
    iw_qp_rq_gate_wait(qp);              /* a receive's post reads the state under the gate */
    qp->state = to;
    iw_qp_rq_gate_release(qp);
    iw_qp_sv_describe_locked(qp);
    /* A local disconnect waits for the peer's FIN: the progress thread reads the socket again
     * even for a polling consumer, who may stop polling now. */
    if (to == IW_QP_CLOSING)
        iw_qp_unpoll_locked(qp);
    return 0;
}

void iw_qp_set_error_locked(struct iw_qp *qp, int err)
{
    if (!qp->first_error && err) {
        qp->first_error = err;
        iw_qp_sv_describe_locked(qp);
    }
}

/* Pops every entry of q and completes it on cq with STATUS_CANCELLED. qp->lock held. */
static void iw_qp_flush_wq_locked(struct iw_qp *qp, struct iw_wq *q, struct iw_cq *cq)
{
    struct iw_wqe w;
    uint64_t *done = q == &qp->sq ? &qp->svq->sq_completed : &qp->svq->rq_completed;

    ndk_sv_set(q == &qp->sq ? &qp->svq->sq_oldest_ns : &qp->svq->rq_oldest_ns, 0);
    while (iw_wq_pop(q, &w) == 0) {
        NDK_RESULT_EX r = {
            .Status = STATUS_CANCELLED,
            .QPContext = qp->qp_context,
            .RequestContext = w.request_context,
            .Type = iw_wr_type(w.op),
        };
        /* A flushed request failed, so it is reported even with SILENT_SUCCESS (§5.5.2). */
        iw_cq_push(cq, &r, false);
        iw_wq_entry_release(&w);
        ndk_sv_add(done, 1);
        ndk_sv_add(&qp->svq->errors, 1);
    }
}

void iw_qp_flush_locked(struct iw_qp *qp)
{
    if (qp->state != IW_QP_ERROR && iw_qp_modify_locked(qp, IW_QP_ERROR) < 0) {
        iw_qp_rq_gate_wait(qp);
        qp->state = IW_QP_ERROR;   /* flush always wins; the transition was logged */
        iw_qp_rq_gate_release(qp);
        iw_qp_sv_describe_locked(qp);
    }
    /* Running engines still send from the SQ's sources (an entry's resolved SGL holds memory
     * references that only iw_qp_stop gives back) and complete the receive being filled first.
     * A flush between the CM's move to ERROR and its iw_qp_connection_lost (a receive posted
     * then) is left to that stop, which comes next. */
    if (qp->dp && !qp->dp->stopped) {
        qp->dp->flush_on_stop = true;
        return;
    }
    iw_qp_flush_wq_locked(qp, &qp->sq, qp->icq);
    if (!qp->srq) {
        iw_qp_rq_gate_wait(qp);
        iw_wq_reap(&qp->rq);             /* the RX engine's taken receives completed already */
        iw_qp_flush_wq_locked(qp, &qp->rq, qp->rcq);
        iw_qp_rq_gate_release(qp);
    }
}

void iw_qp_rq_gate_wait(struct iw_qp *qp)
{
    while (!iw_qp_rq_gate_try(qp))
        sched_yield();
}

/* ---- completion of SQ entries and the one TERMINATE (the engines report here) ---- */

void iw_qp_sq_retire_locked(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;

    while (qp->sq.count) {
        struct dp_sqe *s = iw_dp_sqe(qp, iw_wq_slot(&qp->sq, 0));

        if (s->state != DP_SQE_DONE)
            break;
        NTSTATUS status = s->status;
        const struct iw_wqe *w = iw_wq_at(&qp->sq, 0);
        /* §5.5.2: a successful SILENT_SUCCESS request is not reported; a failure always is. */
        bool report = !(status == STATUS_SUCCESS && (w->flags & NDK_OP_FLAG_SILENT_SUCCESS));
        NDK_RESULT_EX r = {
            .Status = status,
            .QPContext = qp->qp_context,
            .RequestContext = w->request_context,
            .Type = iw_wr_type(w->op),
            .ProviderErrorCode = status == STATUS_SUCCESS ? 0 : s->pec,
        };
        /* Memory references go before the completion is visible: a consumer that deregisters
         * right after it must not find the region still in use by us (§5.10). */
        iw_access_sgl_release(&s->sgl);
        iw_wq_drop(&qp->sq);                 /* releases the WQE, zeroes s; its chunk may go */
        if (report)
            iw_cq_push(qp->icq, &r, false);
        if (dp->sq_issued)
            dp->sq_issued--;
        ndk_sv_add(&qp->svq->sq_completed, 1);
        if (status != STATUS_SUCCESS)
            ndk_sv_add(&qp->svq->errors, 1);
        ndk_sv_set(&qp->svq->sq_oldest_ns, qp->sq.count ? iw_wq_at(&qp->sq, 0)->posted_ns : 0);
    }
}

/* Marks done the invalidations waiting on qp's SQ for mem (NULL: for any object no placement
 * holds any more). qp->lock held, qp->dp set. */
static void iw_qp_sq_wait_mem_done_locked(struct iw_qp *qp, struct iw_obj *mem)
{
    for (uint32_t i = 0; i < qp->sq.count; i++) {
        struct dp_sqe *s = iw_dp_sqe(qp, iw_wq_slot(&qp->sq, i));
        struct iw_obj *o = iw_wq_at(&qp->sq, i)->mem;
        if (s->state == DP_SQE_WAIT_MEM && (mem ? o == mem : !iw_mem_placing(o)))
            s->state = DP_SQE_DONE;
    }
}

void iw_qp_sq_mem_released(struct iw_qp *qp, struct iw_obj *mem)
{
    iw_lock_take(&qp->lock);
    /* Nothing waits when the QP stopped meanwhile: the stop settled or flushed the entry. */
    if (qp->dp) {
        iw_qp_sq_wait_mem_done_locked(qp, mem);
        iw_qp_sq_retire_locked(qp);
    }
    iw_lock_give(&qp->lock);
}

void iw_qp_terminate_locked(struct iw_qp *qp, const struct iw_fpdu_term *t, int err)
{
    struct iw_dp *dp = qp->dp;

    iw_qp_set_error_locked(qp, err);
    /* Keep the first error and send exactly one Terminate (RFC 5040 §5.3, siw init_terminate). */
    if (dp->term_pending || dp->term_sent)
        return;
    dp->term = *t;
    dp->term_pending = true;
    if (qp->state == IW_QP_RTS || qp->state == IW_QP_CLOSING)
        iw_qp_modify_locked(qp, IW_QP_TERMINATE);
}

/* ---- the connection's socket with the progress engine ---- */

/* What the progress thread watches the socket for: data, the hang-up and, when the TX engine
 * waits, room; only room while its reads are lent to the ring; nothing while a consumer polls.
 * The poller reads the socket on every poll and sees a hang-up there itself (recv() returns 0
 * or the error, poll.c), so the socket then leaves the epoll set altogether: even registered
 * for the hang-up alone, every segment that arrives runs epoll's wake-up hook in the kernel,
 * 3-4% of a loopback round trip. */
static uint32_t iw_qp_events_locked(const struct iw_qp *qp)
{
    const struct iw_dp *dp = qp->dp;

    if (qp->poll_on)
        return 0;
    /* Lent to the ring, whose receive sees data, the hang-up and errors (iw_qp_lend). */
    return (dp->lent ? 0 : EPOLLRDHUP | EPOLLIN) | (dp->want_out ? EPOLLOUT : 0);
}

/* Progress thread, no lock held: the socket could not go back into the epoll set, so nothing
 * would see its data or its end. The connection fails rather than hang. */
static void iw_qp_unwatched(struct iw_work *w)
{
    struct iw_qp *qp = ndk_container_of(w, struct iw_qp, unwatched_work);

    iw_cm_connection_failed(qp, -ENOMEM);
    iw_obj_put(&qp->obj);
}

/* qp->lock held. */
static void iw_qp_update_events_locked(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;

    if (!dp || !atomic_load_explicit(&dp->watching, memory_order_relaxed))
        return;
    int err = iw_progress_watch(qp->obj.dev, &dp->poll, iw_qp_events_locked(qp));
    if (!err)
        return;
    if (qp->poll_on) {
        iw_warn("QP[%u] epoll_ctl: %d; the progress thread still watches the socket", qp->obj.id, err);
        return;                          /* correct, only slower */
    }
    iw_err("QP[%u] epoll_ctl: %d; nothing would read the socket: the connection fails", qp->obj.id, err);
    iw_obj_get(&qp->obj);
    if (!iw_progress_queue(qp->obj.dev, &qp->unwatched_work))
        iw_obj_put(&qp->obj);
}

/* Ends consumer polling without giving the socket back yet. qp->lock held. */
static bool iw_qp_poll_off_locked(struct iw_qp *qp)
{
    if (!qp->poll_on)
        return false;
    __atomic_store_n(&qp->poll_on, false, __ATOMIC_RELAXED);   /* rx.c reads it without the lock */
    iw_poll_count(qp->dp, false);
    atomic_store_explicit(&qp->polled, false, memory_order_relaxed);
    if (iw_progress_timer_cancel(qp->obj.dev, &qp->poll_timer))
        iw_obj_put(&qp->obj);
    return true;
}

/* Ends consumer polling (the socket goes back to the progress thread). qp->lock held. */
static void iw_qp_unpoll_locked(struct iw_qp *qp)
{
    if (iw_qp_poll_off_locked(qp))
        iw_qp_update_events_locked(qp);
}

/* ---- the socket's reads lent to the progress thread's ring (progress.c) ----
 * A QP whose socket brings the progress thread data while no QP is lent lends it its reads, so
 * that the thread waits for that connection's next message and reads it in one system call
 * (issue 15 item 4). One QP per device; another takes its place once IW_RING_MISSES epoll wake-ups
 * served other QPs while it received nothing. A consumer that starts polling, and the end of
 * the connection, take the reads back (iw_qp_unlend). */
#define IW_RING_MISSES 64u

static void iw_qp_unwatch(struct iw_qp *qp);

/* Progress thread, no lock held: the socket's reads go back to epoll. Returns the error the
 * ring's last receive found (the caller acts on it or not). */
static int iw_qp_unlend(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    struct iw_device *dev = qp->obj.dev;
    int err;

    if (!dp || !dp->lent)
        return 0;
    err = iw_progress_reclaim(dev, &dp->poll);
    iw_rx_ring_disown(qp);               /* a take armed a receive the ring never queued */
    if (dev->ring_qp == qp)
        dev->ring_qp = NULL;
    iw_lock_take(&qp->lock);
    dp->lent = false;
    iw_qp_update_events_locked(qp);
    iw_lock_give(&qp->lock);
    return err;
}

/* The connection fails on an error a ring receive found. Progress thread, no lock held. */
static void iw_qp_ring_failed(struct iw_qp *qp, int err)
{
    iw_obj_get(&qp->obj);
    if (atomic_load_explicit(&qp->dp->watching, memory_order_relaxed)) {
        iw_qp_unwatch(qp);
        iw_cm_connection_failed(qp, err);
    }
    iw_obj_put(&qp->obj);
}

/* Progress thread, no lock held: iw_qp_poll found data on the socket. */
static void iw_qp_lend(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    struct iw_device *dev = qp->obj.dev;
    bool ok;

    if (dev->ring_qp) {
        if (++dev->ring_misses < IW_RING_MISSES)
            return;
        struct iw_qp *old = dev->ring_qp;
        int err = iw_qp_unlend(old);
        if (err)
            iw_qp_ring_failed(old, err);
    }
    if (iw_progress_lend(dev, &dp->poll) < 0)
        return;
    iw_lock_take(&qp->lock);
    ok = !qp->poll_on && atomic_load_explicit(&dp->watching, memory_order_relaxed);
    if (ok) {
        dp->lent = true;
        iw_qp_update_events_locked(qp);
    }
    iw_lock_give(&qp->lock);
    if (!ok) {
        (void)iw_progress_reclaim(dev, &dp->poll);   /* nothing queued yet */
        return;
    }
    dev->ring_qp = qp;
    dev->ring_misses = 0;
}

/* The pollable's ring_arm (iw_pollable): a QP that can no longer lend (a consumer polls, the
 * engines stopped) takes its reads back at once. */
static bool iw_qp_ring_arm(struct iw_pollable *p)
{
    struct iw_dp *dp = ndk_container_of(p, struct iw_dp, poll);

    if (dp->rx.ring_armed) {
        dp->rx.ring_armed = false;       /* the last take armed it (iw_rx_ring_take) */
        return true;
    }
    if (iw_rx_ring_arm(dp->qp))
        return true;
    (void)iw_qp_unlend(dp->qp);          /* nothing was queued: no error to act on */
    return false;
}

/* The pollable's ring_done (iw_pollable). */
static int iw_qp_ring_done(struct iw_pollable *p, const uint8_t *buf, int res, bool reclaiming)
{
    struct iw_dp *dp = ndk_container_of(p, struct iw_dp, poll);
    struct iw_qp *qp = dp->qp;
    int err = iw_rx_ring_take(qp, buf, res, IW_RING_BUF, !reclaiming);

    if (res > 0)
        qp->obj.dev->ring_misses = 0;
    if (err && !reclaiming)
        iw_qp_ring_failed(qp, err);      /* as iw_qp_poll: the CM tears the connection down */
    return err;
}

/* Progress thread, no lock held: a consumer started polling the socket while it was lent. */
static void iw_qp_unlend_work(struct iw_work *w)
{
    struct iw_qp *qp = ndk_container_of(w, struct iw_qp, unlend_work);
    int err = iw_qp_unlend(qp);

    if (err)
        iw_qp_ring_failed(qp, err);
    iw_obj_put(&qp->obj);
}

/* Takes the socket off the progress engine. Progress thread (pollables are unregistered only
 * there); no lock held. */
static void iw_qp_unwatch(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    bool put;

    (void)iw_qp_unlend(qp);              /* the connection ends: what it finds no longer counts */
    iw_lock_take(&qp->lock);
    iw_qp_poll_off_locked(qp);           /* not back into the set it is about to leave */
    put = atomic_load_explicit(&dp->watching, memory_order_relaxed);
    if (put) {
        iw_progress_del(qp->obj.dev, &dp->poll);
        atomic_store_explicit(&dp->watching, false, memory_order_relaxed);
    }
    iw_lock_give(&qp->lock);
    if (put)
        iw_obj_put(&qp->obj);            /* the registration's reference */
}

/* The pollable's handler: the socket is readable or writable, or the peer hung up (then the
 * RX engine reads what is left and reports the end). The data phase goes to the engines, the
 * end of the connection to the CM. Progress thread, no lock held. An event of a batch can
 * come after the connection was lost in the same batch: then the QP no longer watches and the
 * event is stale. */
static void iw_qp_poll(struct iw_pollable *p, uint32_t events)
{
    struct iw_dp *dp = ndk_container_of(p, struct iw_dp, poll);
    struct iw_qp *qp = dp->qp;
    int r = 0;

    /* Only this thread unregisters (iw_qp_unwatch): a registered socket stays so meanwhile. */
    if (!atomic_load_explicit(&dp->watching, memory_order_relaxed))
        return;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
        r = iw_rx_run(qp);
    if (!r && (events & EPOLLOUT))
        r = iw_tx_run(qp);
    if (!r && (events & EPOLLIN) && !dp->lent)
        iw_qp_lend(qp);
    if (r) {
        /* The connection ends (the peer's FIN, an error, our or the peer's Terminate): the CM
         * tears it down; until then nothing is read here. */
        iw_qp_unwatch(qp);
        iw_cm_connection_failed(qp, r);
    }
}

void iw_qp_want_writable(struct iw_qp *qp, bool on)
{
    struct iw_dp *dp = qp->dp;

    iw_lock_take(&qp->lock);
    dp->want_out = on;
    iw_qp_update_events_locked(qp);
    iw_lock_give(&qp->lock);
}

void iw_qp_set_polled(struct iw_qp *qp, bool on)
{
    struct iw_dp *dp = qp->dp;

    /* The QP's flag follows the request even when polling cannot start (not connected): it only
     * spares pollers this call; poll_on says whether the socket really left the progress thread. */
    iw_lock_take(&qp->lock);
    atomic_store_explicit(&qp->polled, on, memory_order_relaxed);
    if (!on) {
        iw_qp_unpoll_locked(qp);
    } else if (!qp->poll_on && dp && atomic_load_explicit(&dp->watching, memory_order_relaxed) &&
               qp->state != IW_QP_CLOSING) {
        __atomic_store_n(&qp->poll_on, true, __ATOMIC_RELAXED);
        iw_poll_count(dp, true);
        qp->poll_seq_seen = atomic_load_explicit(&qp->poll_seq, memory_order_relaxed);
        qp->poll_since_ms = iw_now_ms();
        if (iw_progress_timer_arm(qp->obj.dev, &qp->poll_timer, qp->poll_since_ms + qp->obj.dev->poll_idle_ms))
            iw_obj_get(&qp->obj);
        iw_qp_update_events_locked(qp);
        /* Until the ring's receive is taken back, the poller's reads find nothing (rx.c). */
        if (dp->lent) {
            iw_obj_get(&qp->obj);
            if (!iw_progress_queue(qp->obj.dev, &qp->unlend_work))
                iw_obj_put(&qp->obj);
        }
    }
    iw_lock_give(&qp->lock);
}

/* The expiry check's interval doubles while the consumer keeps polling, up to this many
 * poll_idle_ms: each check wakes the progress thread, which on a machine with few cores preempts
 * the very consumer that spins (every 2 ms at a fixed interval, 500 context switches a second
 * per side for a syscall the raw-TCP peer never makes). A consumer that stops polling without
 * arming gets its socket back within two intervals (32 ms at the default poll_idle_ms of 2). */
#define IW_POLL_CHECK_MAX 8u
/* ... and never past this, unless poll_idle_ms itself is longer (no growth then). */
#define IW_POLL_CHECK_MAX_MS 100u

/* Progress thread, no lock held: hands the socket back to the progress thread when no consumer
 * polled since the last check (at least poll_idle_ms ago), so Read Requests and the peer's data
 * never wait long on a consumer that stopped polling without arming its CQ. */
static void iw_qp_poll_expired(struct iw_timer *t, uint64_t now)
{
    struct iw_qp *qp = ndk_container_of(t, struct iw_qp, poll_timer);
    struct iw_device *dev = qp->obj.dev;

    iw_lock_take(&qp->lock);
    if (qp->poll_on) {
        unsigned seq = atomic_load_explicit(&qp->poll_seq, memory_order_relaxed);
        uint64_t idle = dev->poll_idle_ms, max = (uint64_t)IW_POLL_CHECK_MAX * idle;
        if (max > IW_POLL_CHECK_MAX_MS)
            max = idle > IW_POLL_CHECK_MAX_MS ? idle : IW_POLL_CHECK_MAX_MS;
        uint64_t deadline = 0;
        if (seq != qp->poll_seq_seen) {
            /* Polled during the interval that just ended (armed at the last check): the next
             * one is twice as long. */
            uint64_t last = t->deadline_ms > qp->poll_since_ms ? t->deadline_ms - qp->poll_since_ms : 0;
            uint64_t next = 2 * last < idle ? idle : 2 * last > max ? max : 2 * last;
            qp->poll_seq_seen = seq;
            qp->poll_since_ms = now;
            deadline = now + next;
        } else if (now - qp->poll_since_ms < idle) {
            deadline = qp->poll_since_ms + idle;
        }
        if (deadline) {
            if (iw_progress_timer_arm(dev, &qp->poll_timer, deadline))
                iw_obj_get(&qp->obj);
        } else {
            iw_dbg("QP[%u] not polled for %u ms: back to the progress thread", qp->obj.id, dev->poll_idle_ms);
            iw_qp_unpoll_locked(qp);
        }
    }
    iw_lock_give(&qp->lock);
    iw_obj_put(&qp->obj);                /* the fired arming's reference */
}

/* ---- the connection's life cycle: engines up at establishment, down at loss ---- */

void iw_qp_connection_established(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    bool nomem = false;
    int fd;

    if (!dp) {
        dp = calloc(1, sizeof(*dp));
        if (!dp) {
            iw_cm_connection_failed(qp, -ENOMEM);
            return;
        }
        iw_lock_init(&dp->rx_owned);
        atomic_init(&dp->tx_owned, false);
        dp->qp = qp;
        dp->fd = -1;
        dp->poll.fd = -1;
        dp->poll.handler = iw_qp_poll;
        dp->poll.ring_arm = iw_qp_ring_arm;
        dp->poll.ring_done = iw_qp_ring_done;
        iw_poll_init(qp, dp);
    }
    iw_lock_take(&qp->lock);
    fd = qp->fd;
    dp->crc = qp->params.crc;
    if (qp->wire && !dp->wire) {         /* the tap goes with the socket; framing starts here */
        dp->wire = qp->wire;
        qp->wire = NULL;
        iw_wire_data_start(dp->wire, dp->crc);
    }
    dp->ord = qp->params.ord > IW_MAX_ORD ? IW_MAX_ORD : qp->params.ord;
    dp->ird = qp->params.ird > IW_MAX_IRD ? IW_MAX_IRD : qp->params.ird;
    if (!dp->orq) {
        dp->orq_cap = dp->ord ? dp->ord : 1;
        dp->irq_slots = DP_IRQ_SLOTS(dp->ird);
        dp->orq = calloc(dp->orq_cap, sizeof(*dp->orq));
        dp->irq = calloc(dp->irq_slots, sizeof(*dp->irq));
        if (!dp->orq || !dp->irq)
            nomem = true;                 /* fails the establishment below */
    }
    iw_tx_init(qp, dp);
    iw_rx_init(qp, dp);
    if (!qp->srq) {
        iw_qp_rq_gate_wait(qp);
        iw_wq_take_reset(&qp->rq);       /* the receives posted so far are the RX engine's to take */
        iw_qp_rq_gate_release(qp);
    }
    iw_lock_give(&qp->lock);

    /* The socket is ours now (the CM handed it over): closed in iw_qp_connection_lost once the
     * engines stopped, so no engine races its close. No new descriptor is needed here, so a
     * process out of descriptors never loses a connection at establishment. */
    if (fd < 0 || nomem) {
        iw_lock_take(&qp->lock);
        qp->dp = dp;                      /* under the lock for iw_qp_lookups_quiesce */
        iw_lock_give(&qp->lock);
        dp_rx_own_wait(dp);
        dp_tx_own_wait(dp);
        iw_lock_take(&qp->lock);
        dp->stopped = true;
        iw_lock_give(&qp->lock);
        dp_tx_own_release(dp);
        dp_rx_own_release(dp);
        iw_cm_connection_failed(qp, -ENOMEM);
        return;
    }
    dp->fd = fd;
    dp->poll.fd = fd;
    iw_lock_take(&qp->lock);
    qp->dp = dp;                         /* under the lock for iw_qp_lookups_quiesce */
    iw_obj_get(&qp->obj);                /* the registration's reference */
    bool watching = iw_progress_add(qp->obj.dev, &dp->poll, iw_qp_events_locked(qp)) == 0;
    atomic_store_explicit(&dp->watching, watching, memory_order_relaxed);
    iw_lock_give(&qp->lock);
    if (!watching) {
        iw_obj_put(&qp->obj);
        iw_cm_connection_failed(qp, -ENOMEM);
        return;
    }
    iw_poll_attach(qp);
    iw_dbg("QP[%u] data path up: crc %d ird %u ord %u mulpdu %u", qp->obj.id, dp->crc, dp->ird, dp->ord,
           dp->tx.mulpdu);
    iw_tx_kick(qp);
}

void iw_qp_release_first_fpdu(struct iw_qp *qp)
{
    bool held;

    iw_lock_take(&qp->lock);
    held = qp->params.tx_wait_first_rx;
    qp->params.tx_wait_first_rx = false;
    iw_lock_give(&qp->lock);
    if (held) {
        iw_dbg("QP[%u] no FPDU from the peer within the first-FPDU hold; transmitting", qp->obj.id);
        iw_tx_kick(qp);
    }
}

void iw_qp_stop(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;

    if (!dp)
        return;
    /* First off the CQs' lists: waits for a polling consumer inside the engines, and no poller
     * can find the QP afterwards (cq->qps_lock and the poll's read side come before the
     * engines' owner flags in the lock order). */
    iw_poll_detach(qp);
    dp_rx_own_wait(dp);
    dp_tx_own_wait(dp);
    iw_lock_take(&qp->lock);
    if (!dp->stopped) {
        dp->stopped = true;
        iw_tx_stop_locked(qp, dp);
        /* The receive being filled left the RQ: complete it first (it is the oldest). */
        iw_rx_stop_locked(qp, dp);
        /* An invalidation that waited for placements: this connection's ended with its RX
         * engine just now (often the Write after the invalidation met the invalid token and
         * ended it); it is done unless another connection still places into the object. */
        iw_qp_sq_wait_mem_done_locked(qp, NULL);
        /* SQ entries with a recorded error (local failure, or the one the peer's Terminate
         * named) complete with it, in order; the rest is flushed CANCELLED by the core. */
        uint32_t last_failed = UINT32_MAX;
        for (uint32_t i = 0; i < qp->sq.count; i++)
            if (iw_dp_sqe(qp, iw_wq_slot(&qp->sq, i))->failed)
                last_failed = i;
        for (uint32_t i = 0; last_failed != UINT32_MAX && i <= last_failed; i++) {
            struct dp_sqe *s = iw_dp_sqe(qp, iw_wq_slot(&qp->sq, i));
            if (!s->failed && s->state != DP_SQE_DONE) {
                s->status = STATUS_CANCELLED;     /* older than a failed one: keep the order */
                s->pec = 0;
            }
            s->state = DP_SQE_DONE;
        }
        iw_qp_sq_retire_locked(qp);
        for (uint32_t i = 0; i < qp->sq.count; i++) {
            struct dp_sqe *s = iw_dp_sqe(qp, iw_wq_slot(&qp->sq, i));
            iw_access_sgl_release(&s->sgl);
            memset(s, 0, sizeof(*s));
        }
        dp->sq_issued = 0;
        dp->orq_count = 0;
        while (dp->irq_count) {
            iw_access_sgl_release(&dp->irq[dp->irq_head].src);
            dp->irq_head = iw_dp_ring_index(dp->irq_head, 1, dp->irq_slots);
            dp->irq_count--;
        }
        dp->rresp_last_out = false;
        if (dp->flush_on_stop) {
            dp->flush_on_stop = false;
            iw_qp_flush_locked(qp);
        }
    }
    iw_lock_give(&qp->lock);
    dp_tx_own_release(dp);
    dp_rx_own_release(dp);
}

bool iw_qp_flushed_live_locked(struct iw_qp *qp)
{
    return qp->state == IW_QP_ERROR && qp->dp && qp->dp->discard;
}

/* Closes the socket the QP took over (engines stopped, pollable unregistered). Progress
 * thread (sockets are closed only there); no lock held. */
static void iw_qp_sock_close(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    int fd;

    if (dp)
        dp_rx_own_wait(dp);
    iw_lock_take(&qp->lock);
    fd = qp->fd;
    qp->fd = -1;
    if (dp) {
        dp->fd = -1;
        dp->poll.fd = -1;
    }
    iw_lock_give(&qp->lock);
    if (dp)
        dp_rx_own_release(dp);
    if (fd >= 0)
        close(fd);
}

void iw_qp_dma_stop(struct iw_qp *qp)
{
    if (qp->dp) {
        (void)iw_rx_drain(qp);
        iw_qp_stop(qp);
    }
}

void iw_qp_connection_lost(struct iw_qp *qp, int err)
{
    struct iw_dp *dp = qp->dp;

    if (dp) {
        iw_dbg("QP[%u] data path down (%d)", qp->obj.id, err);
        (void)iw_qp_unlend(qp);          /* the drain below reads what is left itself */
        iw_qp_dma_stop(qp);
        iw_tx_disarm(qp);
        iw_qp_unwatch(qp);
    }
    iw_qp_sock_close(qp);
    /* A capture holds the connection's last frames in its buffer: they reach the file now,
     * before the consumer hears of the loss (a process that then ends with _exit or crashes
     * would lose them). The engines are stopped: nothing is framed for it any more. */
    if (dp && dp->wire && dp->wire->file)
        iw_pcapng_flush(dp->wire->file);
}

void iw_qp_lookups_quiesce(struct iw_device *dev)
{
    struct ndk_list *pos;

    pthread_mutex_lock(&dev->qps_lock);
    ndk_list_for_each(pos, &dev->qps) {
        struct iw_qp *qp = ndk_list_entry(pos, struct iw_qp, dev_link);
        iw_lock_take(&qp->lock);
        struct iw_dp *dp = qp->dp;       /* lives until the QP's destroy, which waits for us */
        if (dp)
            dp->tx.kc.obj = NULL;        /* the key caches may name what is to be freed */
        iw_lock_give(&qp->lock);
        if (dp) {
            dp_rx_own_wait(dp);
            dp->rx.kc.obj = NULL;
            dp_rx_own_release(dp);
            dp_tx_own_wait(dp);          /* the TX engine's iw_mem_put (tx_lean_complete) */
            dp_tx_own_release(dp);
        }
    }
    pthread_mutex_unlock(&dev->qps_lock);
}

/* Frees the engines' state (QP destroy; nothing runs them any more). */
static void iw_qp_engines_free(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;

    iw_wire_put(qp->wire);               /* a tap never taken over by the data path */
    qp->wire = NULL;
    if (!dp)
        return;
    iw_qp_stop(qp);
    iw_wire_put(dp->wire);
    free(dp->orq);
    free(dp->irq);
    free(dp);
    qp->dp = NULL;
}

/* NdkFlush (§2.9): every outstanding request completes exactly once with STATUS_CANCELLED. The
 * engines are stopped first, so no request is completed by them and by the flush, and no DMA
 * runs after (§5.11.6). The QP stays in ERROR (§8 item 29); the connection is left to
 * NdkDisconnect or the close.
 * Consumer thread, no lock held. */
static void iw_qp_ndk_flush(NDK_QP *q)
{
    struct iw_qp *qp = to_iw_qp(q);
    bool terminating;

    iw_qp_stop(qp);
    if (qp->dp)
        dp_rx_own_wait(qp->dp);
    iw_lock_take(&qp->lock);
    terminating = qp->state == IW_QP_TERMINATE;
    /* A live connection stays up: ULPs (SMB Direct) flush, then NdkDisconnect, and expect the
     * graceful exchange of §5.11.6. Until then what the peer sends is read and dropped. */
    if (qp->dp && (qp->state == IW_QP_RTS || qp->state == IW_QP_CLOSING))
        qp->dp->discard = true;
    iw_qp_flush_locked(qp);
    iw_lock_give(&qp->lock);
    if (qp->dp)
        dp_rx_own_release(qp->dp);
    if (terminating)
        iw_cm_connection_failed(qp, -ECANCELED);   /* a Terminate already ends the connection */
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

    iw_qp_stop(qp);                      /* nothing may run them now; the flush needs them stopped */
    iw_lock_take(&qp->lock);
    iw_qp_flush_locked(qp);
    iw_lock_give(&qp->lock);
}

static void iw_qp_destroy(struct iw_obj *o)
{
    struct iw_qp *qp = ndk_container_of(o, struct iw_qp, obj);

    if (qp->fd >= 0) {                   /* never registered: its connector never saw the end */
        close(qp->fd);
        qp->fd = -1;
    }
    /* Off the walk before its locks go (nothing runs its engines any more). */
    pthread_mutex_lock(&o->dev->qps_lock);
    ndk_list_del(&qp->dev_link);
    pthread_mutex_unlock(&o->dev->qps_lock);
    iw_qp_engines_free(qp);
    iw_progress_timer_fini(o->dev, &qp->poll_timer);   /* idle: an armed timer holds a reference */
    iw_wq_free(&qp->sq);
    iw_wq_free(&qp->rq);
    atomic_fetch_sub(&o->dev->nqp, 1);
    free(qp);
}

static const struct iw_obj_ops iw_qp_ops = {
    .name = "QP", .quiesce = iw_qp_quiesce, .destroy = iw_qp_destroy,
};

static const NDK_QP_DISPATCH iw_qp_dispatch = {
    .NdkCloseQp = iw_close_qp,
    .NdkQueryExtension = iw_query_extension,
    .NdkFlush = iw_qp_ndk_flush,
    .NdkSend = iw_post_send,
    .NdkReceive = iw_post_receive,
    .NdkBind = iw_post_bind,
    .NdkFastRegister = iw_post_fast_register,
    .NdkInvalidate = iw_post_invalidate,
    .NdkRead = iw_post_read,
    .NdkWrite = iw_post_write,
    .NdkSendAndInvalidate = iw_post_send_inv,
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
    if (!qp || iw_wq_init(&qp->sq, sq_depth, sq_sge, sizeof(struct dp_sqe)) < 0 || iw_wq_init(&qp->rq, srq ? 0 : rq_depth, rq_sge, 0) < 0 ||
        iw_progress_timer_init(dev, &qp->poll_timer, iw_qp_poll_expired) < 0) {
        if (qp) {
            iw_wq_free(&qp->sq);
            iw_wq_free(&qp->rq);
            free(qp);
        }
        atomic_fetch_sub(&dev->nqp, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    iw_obj_init(&qp->obj, &iw_qp_ops, IW_OBJ_QP, pd->obj.adapter, &qp->ndk.Header, &iw_qp_dispatch);
    iw_lock_init(&qp->lock);
    qp->state = IW_QP_IDLE;
    atomic_init(&qp->rq_gate, false);
    qp->qp_context = qpctx;
    qp->fd = -1;
    qp->unwatched_work.fn = iw_qp_unwatched;
    qp->unlend_work.fn = iw_qp_unlend_work;
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
    qp->svq = &qp->obj.sv->u.qp;
    struct ndk_sv_rec *r = iw_sv_desc(&qp->obj);
    if (r) {                                  /* nobody else has the QP yet */
        ndk_sv_begin(r);
        r->u.qp.pd = iw_sv_id(&pd->obj);
        r->u.qp.rcq = iw_sv_id(&qp->rcq->obj);
        r->u.qp.icq = iw_sv_id(&qp->icq->obj);
        r->u.qp.srq = srq ? iw_sv_id(&srq->obj) : 0;
        r->u.qp.sq_depth = sq_depth;
        r->u.qp.rq_depth = srq ? 0 : rq_depth;
        ndk_sv_end(r);
    }
    iw_lock_take(&qp->lock);
    iw_qp_sv_describe_locked(qp);
    iw_lock_give(&qp->lock);
    pthread_mutex_lock(&dev->qps_lock);
    ndk_list_add_tail(&dev->qps, &qp->dev_link);
    pthread_mutex_unlock(&dev->qps_lock);
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
