/* cm.c - the connection manager's engine (§2.10-§2.12, §3.5-§3.7, §5.11): the connector state
 * machine, the MPA start-up exchange (RFC 5044 §7.1, RFC 6581), the CM deadlines, establishment
 * (the QP takes the socket over) and teardown. Until ESTABLISHED the connector owns its socket;
 * from then on the QP (qp.c) owns it: reads, writes, watches for the hang-up and closes it.
 *
 * Talks to: qp.c (establish, lose, flush, the first-FPDU grace), endpoint.c,
 * mpa.c and fpdu.c (frames), progress.c (the pollable, work, the deadline timer), obj.c, log.c.
 * connector.c (through cm.h) and listener.c start connections here; qp.c, tx.c and poll.c report
 * a broken connection (iw_cm_connection_failed).
 *
 * Threading. Every connector's CM state and every CM socket operation is protected by dev->lock
 * (the CM lock). Consumer calls (connector.c) only validate, record what they want under the
 * lock, and queue the connector's work item; the progress thread does the socket I/O and the state transitions,
 * collects the consumer callbacks in a struct iw_cm_out while locked, drops the lock and only
 * then calls them (with a reference held on each object named). Sockets are closed only on the
 * progress thread (progress.c's pollable rule).
 *
 * Handshake (RFC 5044 §7.1, RFC 6581), our initiator -> our responder with P2P:
 *   NdkConnect        -> TCP connect, MPA Request (Rev 2, enhanced, A + Write|Read RTR offered)
 *   Reply arrives     -> NdkConnect completes (peer accepted) or fails (R = 1: REFUSED)
 *   NdkCompleteConnect-> RTR (zero-length Write, STag 1) -> completes; ESTABLISHED
 *   responder: NdkAccept sends the Reply, waits for the RTR -> NdkAccept completes; ESTABLISHED
 * Without P2P (Rev 1 peers, siw's default), the responder is ESTABLISHED once its Reply is out
 * and its data path must not transmit before the first inbound FPDU (params.tx_wait_first_rx). */
#define _GNU_SOURCE     /* accept4 */
#include "cm.h"
#include "fpdu.h"
#include "wire.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

const char *const iw_cm_state_name[IW_CM_STATE_COUNT] = {
    [IW_CM_IDLE] = "IDLE", [IW_CM_TCP_CONNECTING] = "TCP_CONNECTING", [IW_CM_AWAIT_REPLY] = "AWAIT_REPLY",
    [IW_CM_REPLY_RECEIVED] = "REPLY_RECEIVED", [IW_CM_AWAIT_READ_RESP] = "AWAIT_READ_RESP",
    [IW_CM_AWAIT_REQUEST] = "AWAIT_REQUEST", [IW_CM_REQUEST_RECEIVED] = "REQUEST_RECEIVED",
    [IW_CM_AWAIT_RTR] = "AWAIT_RTR", [IW_CM_ESTABLISHED] = "ESTABLISHED", [IW_CM_REJECTING] = "REJECTING",
    [IW_CM_DISCONNECTING] = "DISCONNECTING", [IW_CM_CLOSED] = "CLOSED",
};

#define B(s) (1u << (s))
/* The connector state machine: allowed targets per state. Anything may go to CLOSED. */
static const uint32_t iw_cm_next[IW_CM_STATE_COUNT] = {
    [IW_CM_IDLE] = B(IW_CM_TCP_CONNECTING) | B(IW_CM_AWAIT_REQUEST),
    [IW_CM_TCP_CONNECTING] = B(IW_CM_AWAIT_REPLY),
    [IW_CM_AWAIT_REPLY] = B(IW_CM_REPLY_RECEIVED),
    [IW_CM_REPLY_RECEIVED] = B(IW_CM_AWAIT_READ_RESP) | B(IW_CM_ESTABLISHED),
    [IW_CM_AWAIT_READ_RESP] = B(IW_CM_ESTABLISHED),
    [IW_CM_AWAIT_REQUEST] = B(IW_CM_REQUEST_RECEIVED) | B(IW_CM_REJECTING),
    [IW_CM_REQUEST_RECEIVED] = B(IW_CM_AWAIT_RTR) | B(IW_CM_REJECTING),
    [IW_CM_AWAIT_RTR] = B(IW_CM_ESTABLISHED),
    [IW_CM_ESTABLISHED] = B(IW_CM_DISCONNECTING),
    [IW_CM_REJECTING] = 0,
    [IW_CM_DISCONNECTING] = 0,
    [IW_CM_CLOSED] = 0,
};
#undef B

/* The connector's system-view description: its state, addresses, QP and read limits (what
 * was negotiated once established, else what it asks for). Every transition rewrites it, by
 * then the addresses of the state are known. dev->lock held. */
static void iw_cm_sv_describe_locked(struct iw_connector *c)
{
    struct ndk_sv_rec *r = iw_sv_desc(&c->obj);
    bool eff = c->established_once || c->state == IW_CM_ESTABLISHED;

    if (!r)
        return;
    ndk_sv_begin(r);
    iw_sv_set_state(r->u.conn.state, iw_cm_state_name[c->state]);
    iw_sv_set_addr(&r->u.conn.local, &c->local);
    iw_sv_set_addr(&r->u.conn.remote, &c->peer);
    r->u.conn.qp = c->qp ? iw_sv_id(&c->qp->obj) : 0;
    r->u.conn.ird = eff ? c->eff_ird : c->my_ird;
    r->u.conn.ord = eff ? c->eff_ord : c->my_ord;
    ndk_sv_end(r);
}

/* The one transition function of the connector machine. dev->lock held. */
int iw_cm_set_state(struct iw_connector *c, enum iw_cm_state to)
{
    if (c->state == to)
        return 0;
    if (to != IW_CM_CLOSED && !(iw_cm_next[c->state] & (1u << to))) {
        iw_dwarn(c->obj.dev, "CONN[%u] state transition undefined: %s => %s", c->obj.id, iw_cm_state_name[c->state],
                iw_cm_state_name[to]);
        return -EINVAL;
    }
    iw_ddbg(c->obj.dev, "CONN[%u] %s => %s", c->obj.id, iw_cm_state_name[c->state], iw_cm_state_name[to]);
    c->state = to;
    if (to == IW_CM_CLOSED)
        iw_connector_unindex_locked(c);   /* its 4-tuple is free for a new connection */
    iw_cm_sv_describe_locked(c);
    return 0;
}

/* ---- callbacks collected under the lock, run after it is dropped ---- */

enum iw_cb_kind { IW_CB_REQ, IW_CB_CONNECT_EVENT, IW_CB_DISC, IW_CB_DISC_EX };

struct iw_cb {
    enum iw_cb_kind kind;
    NDK_FN_REQUEST_COMPLETION req;
    NDK_FN_CONNECT_EVENT_CALLBACK conn_ev;
    NDK_FN_DISCONNECT_EVENT_CALLBACK disc;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_ex;
    void *ctx;
    NTSTATUS status;
    ULONG reason;
    NDK_CONNECTOR *conn;
    struct iw_obj *ref;               /* dropped after the call */
};

#define IW_CM_OUT_MAX 8
struct iw_cm_out {
    struct iw_cb cb[IW_CM_OUT_MAX];
    int n;
    struct iw_qp *established;        /* call iw_qp_connection_established */
    struct iw_qp *lost;               /* call iw_qp_connection_lost */
    int lost_err;
    struct iw_qp *flush;              /* flush the QP's queues */
    struct iw_qp *release_tx;         /* first-FPDU grace over: let the data path transmit */
    int puts;                         /* connector references to drop at the end */
    struct iw_connector *conn;
};

/* Moves a pending request completion into out (exactly once). The reference taken when the
 * request was accepted travels with it. dev->lock held. */
static void iw_out_req(struct iw_cm_out *out, struct iw_connector *c, NDK_FN_REQUEST_COMPLETION *fn, void **ctx,
                       int err)
{
    if (!*fn)
        return;
    if (out->n == IW_CM_OUT_MAX) {
        iw_derr(c->obj.dev, "CONN[%u] callback batch overflow", c->obj.id);   /* cannot happen: <= 6 per pass */
        return;
    }
    struct iw_cb *cb = &out->cb[out->n++];
    memset(cb, 0, sizeof(*cb));
    cb->kind = IW_CB_REQ;
    cb->req = *fn;
    cb->ctx = *ctx;
    cb->status = ndk_status_from_errno(err);
    cb->ref = &c->obj;
    *fn = NULL;
    *ctx = NULL;
}

/* Stores a pending request completion; takes the reference that keeps c alive until it ran. */
void iw_cm_req_store(struct iw_connector *c, NDK_FN_REQUEST_COMPLETION *fn, void **ctx,
                         NDK_FN_REQUEST_COMPLETION cb, void *cbctx)
{
    iw_obj_get(&c->obj);
    *fn = cb;
    *ctx = cbctx;
}

static void iw_out_run(struct iw_cm_out *out)
{
    if (out->lost) {
        iw_qp_connection_lost(out->lost, out->lost_err);
    }
    if (out->flush) {
        iw_lock_take(&out->flush->lock);
        iw_qp_flush_locked(out->flush);
        iw_lock_give(&out->flush->lock);
    }
    if (out->established)
        iw_qp_connection_established(out->established);
    if (out->release_tx)
        iw_qp_release_first_fpdu(out->release_tx);
    for (int i = 0; i < out->n; i++) {
        struct iw_cb *cb = &out->cb[i];
        switch (cb->kind) {
        case IW_CB_REQ: cb->req(cb->ctx, cb->status); break;
        case IW_CB_CONNECT_EVENT: cb->conn_ev(cb->ctx, cb->conn); break;
        case IW_CB_DISC: cb->disc(cb->ctx); break;
        case IW_CB_DISC_EX: cb->disc_ex(cb->ctx, cb->reason); break;
        }
        if (cb->ref)
            iw_obj_put(cb->ref);
    }
    for (int i = 0; i < out->puts; i++)
        iw_obj_put(&out->conn->obj);
}

/* ---- the connector's CM deadline ---- */

void iw_cm_queue_locked(struct iw_connector *c, unsigned act)
{
    c->actions |= act;
    iw_obj_get(&c->obj);
    if (!iw_progress_queue(c->obj.dev, &c->work))
        iw_obj_put(&c->obj);
}

/* The armed timer holds a reference on the connector (iwarp.h, struct iw_timer). dev->lock held. */
void iw_cm_timer_set_locked(struct iw_connector *c, uint32_t ms)
{
    c->deadline_ms = iw_now_ms() + ms;
    if (iw_progress_timer_arm(c->obj.dev, &c->timer, c->deadline_ms))
        iw_obj_get(&c->obj);
}

static void iw_cm_timer_clear_locked(struct iw_connector *c)
{
    if (c->deadline_ms) {
        c->deadline_ms = 0;
        if (iw_progress_timer_cancel(c->obj.dev, &c->timer))
            iw_obj_put(&c->obj);
    }
}

/* Progress thread, no lock held: the deadline passed, unless it moved or went meanwhile. */
void iw_cm_timer_fired(struct iw_timer *t, uint64_t now)
{
    struct iw_connector *c = ndk_container_of(t, struct iw_connector, timer);

    pthread_mutex_lock(&c->obj.dev->lock);
    if (c->deadline_ms && c->deadline_ms <= now) {
        c->deadline_ms = 0;
        iw_cm_queue_locked(c, IW_CM_ACT_TIMEOUT);
    }
    pthread_mutex_unlock(&c->obj.dev->lock);
    iw_obj_put(&c->obj);                 /* the fired arming's reference */
}

/* ---- sockets ---- */

/* Epoll interest for the connector's state. dev->lock held. */
static uint32_t iw_conn_events(struct iw_connector *c)
{
    uint32_t ev = 0;
    bool txp = c->tx_off < c->tx_len;

    switch (c->state) {
    case IW_CM_TCP_CONNECTING: ev = EPOLLOUT; break;
    case IW_CM_AWAIT_REPLY:
    case IW_CM_AWAIT_READ_RESP:
    case IW_CM_AWAIT_REQUEST:
    case IW_CM_AWAIT_RTR: ev = EPOLLIN; break;
    /* Waiting for the consumer: watch only for the peer going away, not for data (a non-P2P
     * responder like siw may send FPDUs right behind its Reply; they wait for the data path). */
    case IW_CM_REPLY_RECEIVED:
    case IW_CM_REQUEST_RECEIVED: ev = EPOLLRDHUP; break;
    /* The data phase: the QP watches the socket for data and room itself (qp.c); the
     * connector only for the peer going away. */
    case IW_CM_ESTABLISHED:
    case IW_CM_DISCONNECTING: ev = EPOLLRDHUP; break;
    default: break;
    }
    if (txp)
        ev |= EPOLLOUT;
    return ev;
}

static void iw_conn_update_events(struct iw_connector *c)
{
    if (c->polled && c->poll.fd >= 0)
        iw_progress_mod(c->obj.dev, &c->poll, iw_conn_events(c));
}

/* A non-blocking recv() of the handshake; a tapped connection (wire.h) records what it took.
 * dev->lock held. */
static ssize_t iw_conn_recv(struct iw_connector *c, void *buf, size_t len)
{
    ssize_t n = recv(c->poll.fd, buf, len, MSG_DONTWAIT);

    if (c->wire && n > 0)
        iw_wire_received(c->wire, buf, (size_t)n);
    return n;
}

/* Sends what is left of txbuf. 1 = all out, 0 = socket full, <0 = error. dev->lock held. */
static int iw_conn_tx(struct iw_connector *c)
{
    while (c->tx_off < c->tx_len) {
        struct iovec v = { c->txbuf + c->tx_off, (size_t)(c->tx_len - c->tx_off) };
        ssize_t n = c->wire ? iw_wire_send(c->wire, c->poll.fd, &v, 1, false)
                            : send(c->poll.fd, v.iov_base, v.iov_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -errno;
        }
        c->tx_off = (uint16_t)(c->tx_off + n);
        IW_COUNT(c->obj.dev, rdma_out_octets, n);
    }
    c->tx_off = c->tx_len = 0;
    return 1;
}

/* Appends bytes to txbuf (frames are small and at most two are ever pending). */
static int iw_conn_tx_add(struct iw_connector *c, const void *p, size_t len)
{
    if (c->tx_len + len > sizeof c->txbuf)
        return -ENOSPC;
    memcpy(c->txbuf + c->tx_len, p, len);
    c->tx_len = (uint16_t)(c->tx_len + len);
    return 0;
}

/* ---- teardown ---- */

/* Closes the connection. err: 0 for an orderly end, else why. abortive: RST instead of FIN.
 * Completes every pending request, delivers the disconnect event when the peer (not the
 * consumer) ended an established connection, detaches the QP. dev->lock held. */
static void iw_conn_close_locked(struct iw_connector *c, struct iw_cm_out *out, int err, bool abortive)
{
    struct iw_device *dev = c->obj.dev;
    enum iw_cm_state prev = c->state;
    struct iw_qp *qp = c->qp;

    if (prev == IW_CM_CLOSED)
        return;
    if (err && !c->first_error)
        c->first_error = err;
    iw_cm_set_state(c, IW_CM_CLOSED);
    iw_cm_timer_clear_locked(c);

    if (qp) {
        iw_lock_take(&qp->lock);
        if (qp->conn == c) {
            bool flushed_live = iw_qp_flushed_live_locked(qp);
            if (qp->state == IW_QP_RTS || qp->state == IW_QP_CLOSING || qp->state == IW_QP_TERMINATE ||
                flushed_live || c->sock_handed) {
                if (qp->state == IW_QP_RTS || qp->state == IW_QP_CLOSING || qp->state == IW_QP_TERMINATE)
                    iw_qp_modify_locked(qp, IW_QP_ERROR);
                out->lost = qp;          /* the QP closes the socket it took over */
                out->lost_err = err;
            } else if (qp->state == IW_QP_CONNECTING) {
                /* never established: the QP may serve another connector */
                iw_qp_modify_locked(qp, IW_QP_IDLE);
                qp->conn = NULL;
            }
        }
        iw_lock_give(&qp->lock);
        /* §3.6: a peer's graceful disconnect is indicated without flushing; everything else
         * (errors, local disconnect, close) flushes (§5.11.6). */
        if (out->lost && (err != -ESHUTDOWN || c->local_disconnect))
            out->flush = qp;
    }

    if (c->poll.fd >= 0) {
        if (c->polled) {
            iw_progress_del(dev, &c->poll);
            c->polled = false;
            out->puts++;                 /* the epoll registration's reference */
        }
        if (abortive) {
            struct linger lg = { .l_onoff = 1, .l_linger = 0 };
            setsockopt(c->poll.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        }
        /* After establishment the QP owns the socket: it closes it once its engines stopped
         * (out->lost), so no engine ever races a close and no second descriptor is needed. */
        if (!c->sock_handed)
            close(c->poll.fd);
        c->poll.fd = -1;
    }
    c->tx_len = c->tx_off = 0;
    if (c->internal_ref) {
        ndk_list_del(&c->ep_link);       /* off the listener's pending list */
        c->internal_ref = false;
        out->puts++;                     /* nobody else holds the creation reference */
    }

    if (prev == IW_CM_ESTABLISHED || prev == IW_CM_DISCONNECTING) {
        if (c->counted_active) {
            atomic_fetch_sub_explicit(&dev->ndk->active_connection, 1, memory_order_relaxed);
            c->counted_active = false;
        }
        if (err && err != -ESHUTDOWN && !c->local_disconnect)
            IW_COUNT(dev, connection_error, 1);
        if (err == -ESHUTDOWN)
            c->peer_gone = true;
        /* §3.6: exactly one event, only when the consumer did not start the teardown. */
        if (!c->local_disconnect && !c->disc_event_done && (c->disc_event || c->disc_event_ex) &&
            out->n < IW_CM_OUT_MAX) {
            struct iw_cb *cb = &out->cb[out->n++];
            memset(cb, 0, sizeof(*cb));
            cb->kind = c->disc_event_ex ? IW_CB_DISC_EX : IW_CB_DISC;
            cb->disc = c->disc_event;
            cb->disc_ex = c->disc_event_ex;
            cb->ctx = c->disc_event_ctx;
            cb->reason = err == -ESHUTDOWN ? 1u : (err == -ETIMEDOUT ? 3u : 2u);
            cb->ref = &c->obj;
            iw_obj_get(&c->obj);
            c->disc_event_done = true;
        }
    } else if (prev != IW_CM_IDLE && prev != IW_CM_REJECTING && c->obj.handed_out) {
        IW_COUNT(dev, connect_failure, 1);
    }
    c->peer_gone = c->peer_gone || err == -ECONNRESET || err == -ESHUTDOWN || err == -ECONNABORTED;

    /* Pending requests fail with the reason (connect: REFUSED / IO_TIMEOUT / ...). */
    iw_out_req(out, c, &c->connect_cb, &c->connect_ctx, err ? err : -ECONNABORTED);
    iw_out_req(out, c, &c->accept_cb, &c->accept_ctx, err == -ESHUTDOWN || err == -ECONNRESET ? -ECONNABORTED : err);
    iw_out_req(out, c, &c->complete_cb, &c->complete_ctx,
               err == -ESHUTDOWN || err == -ECONNRESET ? -ECONNABORTED : err);
    /* A disconnect completes with success once the peer's FIN arrived (§5.11.6). */
    iw_out_req(out, c, &c->disconnect_cb, &c->disconnect_ctx, err == -ESHUTDOWN ? 0 : err);
}

static void iw_conn_fail_locked(struct iw_connector *c, struct iw_cm_out *out, int err);

/* ---- establishment ---- */

static void iw_conn_establish_locked(struct iw_connector *c, struct iw_cm_out *out)
{
    struct iw_device *dev = c->obj.dev;
    struct iw_qp *qp = c->qp;
    int mss = 0;
    socklen_t len = sizeof mss;

    iw_lock_take(&qp->lock);
    if (qp->state != IW_QP_CONNECTING || qp->conn != c) {
        /* the consumer flushed the QP during the handshake */
        iw_lock_give(&qp->lock);
        iw_conn_fail_locked(c, out, -ECANCELED);
        return;
    }
    iw_lock_give(&qp->lock);
    if (iw_cm_set_state(c, IW_CM_ESTABLISHED) < 0)
        return;
    c->established_once = true;
    iw_cm_timer_clear_locked(c);
    getsockopt(c->poll.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len);
    /* The QP takes the socket over (one descriptor and one epoll registration per connection:
     * epoll cannot hold one fd twice). Its pollable sees data, room and the hang-up, and reports
     * the end of the connection here (iw_cm_connection_failed). The connector keeps the number
     * only for shutdown() and SO_LINGER until its close, which comes before the QP's. */
    if (c->polled) {
        iw_progress_del(dev, &c->poll);
        c->polled = false;
        out->puts++;                     /* the epoll registration's reference */
    }
    c->sock_handed = true;
    iw_lock_take(&qp->lock);
    qp->fd = c->poll.fd;
    if (c->wire) {
        iw_wire_get(c->wire);
        qp->wire = c->wire;
    }
    qp->params.crc = c->crc;
    qp->params.mpa_rev = c->mpa_rev;
    qp->params.p2p = c->p2p;
    qp->params.rtr = c->rtr;
    qp->params.ird = c->eff_ird;
    qp->params.ord = c->eff_ord;
    qp->params.mss = mss > 0 ? (uint32_t)mss : 1460u;
    qp->params.mulpdu = iw_fpdu_mulpdu(qp->params.mss, false);
    /* Without P2P the responder holds its first FPDU for the initiator's (RFC 5044 §7.1.2), and
     * the initiator holds its own briefly for siw's sake (iw_config.first_fpdu_hold_ms); either
     * hold ends at the peer's first FPDU or at the timer. */
    uint32_t hold_ms = c->p2p ? 0 : c->active ? dev->prov->cfg.first_fpdu_hold_ms : dev->prov->cfg.first_fpdu_grace_ms;
    qp->params.tx_wait_first_rx = !c->p2p && (!c->active || hold_ms);
    iw_qp_modify_locked(qp, IW_QP_RTS);
    iw_lock_give(&qp->lock);
    if (hold_ms)
        iw_cm_timer_set_locked(c, hold_ms);
    out->established = qp;
    c->counted_active = true;
    IW_COUNT(dev, active_connection, 1);
    if (c->active)
        IW_COUNT(dev, connect, 1);
    else
        IW_COUNT(dev, accept, 1);
    iw_out_req(out, c, &c->complete_cb, &c->complete_ctx, 0);
    iw_out_req(out, c, &c->accept_cb, &c->accept_ctx, 0);
    iw_conn_update_events(c);
}

/* ---- MPA frames ---- */

int iw_cm_build_request(struct iw_connector *c)
{
    const struct iw_config *cfg = &c->obj.dev->prov->cfg;
    struct iw_mpa_frame f;
    uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD_WIRE];
    int n;

    memset(&f, 0, sizeof f);
    f.kind = IW_MPA_REQUEST;
    f.rev = cfg->mpa_rev;
    f.crc = cfg->crc;
    f.enhanced = cfg->mpa_rev == 2;
    if (f.enhanced) {
        f.v2.ird = (uint16_t)c->my_ird;
        f.v2.ord = (uint16_t)c->my_ord;
        f.v2.p2p = cfg->p2p;
        /* Offer Write and Read RTR (RFC 6581); Read needs one ORD slot of ours. */
        f.v2.rtr = cfg->p2p ? (uint8_t)(IW_MPA_RTR_WRITE | (c->my_ord ? IW_MPA_RTR_READ : 0)) : 0;
        c->rtr_offer = f.v2.rtr;
    }
    f.ulp_pd = c->my_pd;
    f.ulp_pd_len = c->my_pd_len;
    c->mpa_rev = f.rev;
    n = iw_mpa_encode(&f, IW_MPA_MAX_PD_WIRE, buf, sizeof buf);
    if (n < 0)
        return n;
    return iw_conn_tx_add(c, buf, (size_t)n);
}

/* Reply (accept or reject). v2 with the enhanced flag when the Request had it, like siw. */
int iw_cm_build_reply(struct iw_connector *c, bool reject, const void *pd, uint16_t pdlen)
{
    struct iw_mpa_frame f;
    uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_MAX_PD_WIRE];
    int n;

    memset(&f, 0, sizeof f);
    f.kind = IW_MPA_REPLY;
    f.rev = c->mpa_rev;
    f.crc = c->crc;
    f.reject = reject;
    f.enhanced = c->mpa_rev == 2 && c->peer_has_limits;
    if (f.enhanced) {
        f.v2.ird = (uint16_t)(reject ? 0 : c->my_ird);
        f.v2.ord = (uint16_t)(reject ? 0 : c->eff_ord);
        f.v2.p2p = c->p2p && !reject;
        f.v2.rtr = reject ? 0 : c->rtr;
    }
    f.ulp_pd = pd;
    f.ulp_pd_len = pdlen;
    n = iw_mpa_encode(&f, IW_MPA_MAX_PD_WIRE, buf, sizeof buf);
    if (n < 0)
        return n;
    return iw_conn_tx_add(c, buf, (size_t)n);
}

/* Zero-length RTR / Read Response FPDUs (RFC 6581). */
int iw_cm_build_fpdu(struct iw_connector *c, const struct iw_fpdu_hdr *h)
{
    uint8_t buf[IW_FPDU_MAX_HDR_LEN + 8];
    int n = iw_fpdu_build(h, NULL, 0, c->crc, buf, sizeof buf);

    if (n < 0)
        return n;
    return iw_conn_tx_add(c, buf, (size_t)n);
}

/* Peeks at the socket and feeds the MPA parser; consumes exactly the frame. Returns 1 when a
 * frame is complete, 0 for more, <0 on error (-ECONNREFUSED for EOF before a frame: the peer
 * went away / refused, -EPROTO for a malformed frame or trailing bytes behind a Request).
 * dev->lock held. */
static int iw_conn_rx_mpa(struct iw_connector *c)
{
    uint8_t buf[IW_MPA_HDR_LEN + IW_MPA_PD_MAX_RFC + 8];
    ssize_t n;
    size_t used = 0;
    enum iw_mpa_status st;

    n = recv(c->poll.fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
    if (n == 0)
        return -ECONNREFUSED;
    st = iw_mpa_parser_feed(&c->parser, buf, (size_t)n, &used);
    if (used && iw_conn_recv(c, buf, used) != (ssize_t)used)
        return -EIO;
    IW_COUNT(c->obj.dev, rdma_in_octets, used);
    if (st == IW_MPA_ERROR) {
        iw_dwarn(c->obj.dev, "CONN[%u] bad MPA %s: %s", c->obj.id, c->active ? "Reply" : "Request",
                iw_mpa_strerror(c->parser.error));
        return -EPROTO;
    }
    if (st == IW_MPA_NEED_MORE)
        return 0;
    /* RFC 5044 §7.1.2: the initiator may not send behind its Request (siw closes too). */
    if (!c->active && (size_t)n > used) {
        iw_dwarn(c->obj.dev, "CONN[%u] bytes behind the MPA Request", c->obj.id);
        return -EPROTO;
    }
    return 1;
}

/* Peeks one FPDU during the handshake (RTR / Read Response). Returns 1 and fills *h and
 * *len when a whole FPDU is buffered, 0 for more, <0 on error (-EBADMSG: a bad FPDU, *term then
 * describes it). Consumes nothing. */
static int iw_conn_peek_fpdu(struct iw_connector *c, struct iw_fpdu_hdr *h, size_t *len, bool *whole,
                             struct iw_fpdu_term *term)
{
    uint8_t buf[IW_FPDU_MAX_BUFFERED + 16];
    struct iw_fpdu_rx_cfg cfg = { .crc = c->crc };
    struct iw_fpdu_rx rx;
    struct iw_fpdu_event ev;
    size_t off = 0, used;
    ssize_t n;
    bool have_hdr = false;

    n = recv(c->poll.fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
    if (n == 0)
        return -ESHUTDOWN;
    iw_fpdu_rx_init(&rx, &cfg);
    *whole = false;
    while (off < (size_t)n) {
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&rx, buf + off, (size_t)n - off, &used, &ev);
        off += used;
        if (t == IW_FPDU_EV_ERROR) {
            *term = ev.err->term;        /* what the Terminate must say (RFC 5040 §4.8) */
            return -EBADMSG;
        }
        if (t == IW_FPDU_EV_HEADER) {
            *h = *ev.hdr;
            have_hdr = true;
            if (ev.hdr->payload_len)
                return 1;          /* a data FPDU: not an RTR, leave it for the data path */
        }
        if (t == IW_FPDU_EV_END) {
            *whole = true;
            *len = off;
            return 1;
        }
        if (t == IW_FPDU_EV_NEED_MORE)
            break;
    }
    return have_hdr && h->payload_len ? 1 : 0;
}

/* A protocol error after the MPA exchange, when both sides know the FPDU framing (CRC or not):
 * RFC 6581 and RFC 5040 §4.8 want one Terminate describing it before the stream ends. Queues it
 * behind anything still pending in txbuf, sends what the socket takes now (a Terminate is small
 * and best effort), drops unread input so that close() sends a FIN rather than a reset (which
 * would discard the Terminate), and closes: pending requests fail with err. dev->lock held. */
static void iw_conn_terminate_locked(struct iw_connector *c, struct iw_cm_out *out, uint8_t layer, uint8_t etype,
                                     uint8_t ecode, const struct iw_fpdu_term *term, int err)
{
    struct iw_fpdu_term t;
    uint8_t buf[IW_FPDU_MAX_BUFFERED + IW_MPA_CRC_SIZE + 8];
    int n;

    if (term) {
        t = *term;
    } else {
        memset(&t, 0, sizeof t);
        t.layer = layer;
        t.etype = etype;
        t.ecode = ecode;
    }
    iw_dwarn(c->obj.dev, "CONN[%u] protocol error in %s: sending Terminate (layer %u etype %u code 0x%02x)", c->obj.id,
             iw_cm_state_name[c->state], t.layer, t.etype, t.ecode);
    n = iw_fpdu_build_term(&t, c->crc, buf, sizeof buf);
    if (n > 0 && c->poll.fd >= 0 && iw_conn_tx_add(c, buf, (size_t)n) == 0) {
        if (iw_conn_tx(c) == 0)
            iw_ddbg(c->obj.dev, "CONN[%u] Terminate did not fit the socket at once", c->obj.id);
        uint8_t sink[512];
        for (int i = 0; i < 64 && iw_conn_recv(c, sink, sizeof sink) > 0; i++)
            ;
    }
    iw_conn_close_locked(c, out, err, false);
}

static void iw_conn_fail_locked(struct iw_connector *c, struct iw_cm_out *out, int err)
{
    /* A reset or close before the peer's Reply means it refused us (a closed or paused
     * listener, a peer that is not an MPA responder): report STATUS_CONNECTION_REFUSED. */
    if ((c->state == IW_CM_AWAIT_REPLY || c->state == IW_CM_TCP_CONNECTING) &&
        (err == -ECONNRESET || err == -EPIPE || err == -ECONNABORTED))
        err = -ECONNREFUSED;
    iw_conn_close_locked(c, out, err, err != -ESHUTDOWN);
}

/* ---- the connector's engine: runs on the progress thread with dev->lock held ---- */

static void iw_conn_on_reply(struct iw_connector *c, struct iw_cm_out *out)
{
    const struct iw_mpa_frame *f = iw_mpa_parser_frame(&c->parser);

    c->have_peer_data = true;
    c->peer_pd_len = f->ulp_pd_len > IW_MAX_PRIVATE_DATA ? IW_MAX_PRIVATE_DATA : f->ulp_pd_len;
    memset(c->peer_pd, 0, sizeof c->peer_pd);
    if (c->peer_pd_len)
        memcpy(c->peer_pd, f->ulp_pd, c->peer_pd_len);
    if (f->reject) {
        /* RFC 5044 §7.1: R = 1 -> refused; its private data stays readable. */
        c->peer_rejected = true;
        iw_conn_fail_locked(c, out, -ECONNREFUSED);
        return;
    }
    if (f->markers) {
        iw_dwarn(c->obj.dev, "CONN[%u] peer wants MPA markers: not supported", c->obj.id);
        iw_conn_fail_locked(c, out, -ECONNREFUSED);
        return;
    }
    if (c->mpa_rev == 2 && (f->rev != 2 || !f->has_v2)) {
        /* As siw: a Rev 2 initiator needs a Rev 2 enhanced Reply (RFC 6581). */
        iw_dwarn(c->obj.dev, "CONN[%u] MPA Reply rev %u without the enhanced block", c->obj.id, f->rev);
        iw_conn_fail_locked(c, out, -EPROTO);
        return;
    }
    c->crc = f->crc;
    c->peer_has_limits = f->has_v2;
    if (f->has_v2) {
        c->peer_ird = f->v2.ird;
        c->peer_ord = f->v2.ord;
        c->eff_ird = c->my_ird < c->peer_ord ? c->my_ird : c->peer_ord;
        c->eff_ord = c->my_ord < c->peer_ird ? c->my_ord : c->peer_ird;
        if (f->v2.p2p && c->rtr_offer) {
            if (!(f->v2.rtr & c->rtr_offer) || (f->v2.rtr & (f->v2.rtr - 1))) {
                iw_dwarn(c->obj.dev, "CONN[%u] no matching RTR (offered 0x%x, chosen 0x%x)", c->obj.id, c->rtr_offer,
                         f->v2.rtr);
                /* RFC 6581: Terminate "no matching RTR option" instead of
                 * the RTR, then close. */
                iw_conn_terminate_locked(c, out, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA, IW_TERM_LLP_NO_RTR_MATCH,
                                         NULL, -EPROTO);
                return;
            }
            c->p2p = true;
            c->rtr = f->v2.rtr;
        }
    } else {
        c->eff_ird = c->my_ird;
        c->eff_ord = c->my_ord;
    }
    iw_cm_timer_clear_locked(c);
    iw_cm_set_state(c, IW_CM_REPLY_RECEIVED);
    iw_out_req(out, c, &c->connect_cb, &c->connect_ctx, 0);
}

static void iw_conn_on_request(struct iw_connector *c, struct iw_cm_out *out)
{
    const struct iw_mpa_frame *f = iw_mpa_parser_frame(&c->parser);
    struct iw_listener *l = c->listener;

    c->have_peer_data = true;
    c->mpa_rev = f->rev;
    c->peer_pd_len = f->ulp_pd_len > IW_MAX_PRIVATE_DATA ? IW_MAX_PRIVATE_DATA : f->ulp_pd_len;
    memset(c->peer_pd, 0, sizeof c->peer_pd);
    if (c->peer_pd_len)
        memcpy(c->peer_pd, f->ulp_pd, c->peer_pd_len);
    /* RFC 5044: CRC must be used if the peer asks; we may also ask ourselves. */
    c->crc = f->crc || c->obj.dev->prov->cfg.crc;
    c->peer_has_limits = f->has_v2;
    if (f->has_v2) {
        c->peer_ird = f->v2.ird;
        c->peer_ord = f->v2.ord;
        c->p2p = f->v2.p2p;
        c->rtr_offer = f->v2.rtr;
    }
    iw_cm_timer_clear_locked(c);
    if (f->markers || !l->listening || l->paused || iw_obj_closing(&l->obj)) {
        /* Markers are refused with an MPA reject (RFC 5044 §7.1). A paused or closing
         * listener behaves as if absent (§2.12): the peer sees a refusal. */
        c->crc = f->crc;
        c->p2p = false;
        iw_cm_set_state(c, IW_CM_REJECTING);
        if (iw_cm_build_reply(c, true, NULL, 0) < 0 || iw_conn_tx(c) != 0) {
            iw_conn_close_locked(c, out, 0, false);
        } else {
            iw_conn_update_events(c);
        }
        return;
    }
    /* Deliver: the connector becomes the consumer's (§3.5). */
    ndk_list_del(&c->ep_link);
    ndk_list_init(&c->ep_link);
    c->internal_ref = false;
    c->obj.handed_out = true;
    iw_cm_set_state(c, IW_CM_REQUEST_RECEIVED);
    iw_conn_update_events(c);
    struct iw_cb *cb = &out->cb[out->n++];
    memset(cb, 0, sizeof(*cb));
    cb->kind = IW_CB_CONNECT_EVENT;
    cb->conn_ev = l->connect_event;
    cb->ctx = l->connect_event_ctx;
    cb->conn = &c->ndk;
    cb->ref = &l->obj;
    iw_obj_get(&l->obj);
}

/* The first FPDU after a P2P Reply (responder) or the Read Response to our Read RTR
 * (initiator). */
static void iw_conn_on_rtr(struct iw_connector *c, struct iw_cm_out *out)
{
    struct iw_fpdu_hdr h;
    struct iw_fpdu_term term;
    size_t len = 0;
    bool whole = false;
    uint8_t sink[IW_FPDU_MAX_BUFFERED + 16];
    int r;

    if (c->tx_off < c->tx_len)
        return;                          /* our Reply is not out yet: nothing may follow it */
    memset(&h, 0, sizeof h);
    r = iw_conn_peek_fpdu(c, &h, &len, &whole, &term);

    if (r == -EBADMSG) {
        /* a malformed first FPDU (bad CRC, bad header): Terminate with the deframer's reason */
        iw_conn_terminate_locked(c, out, 0, 0, 0, &term, -EPROTO);
        return;
    }
    if (r < 0) {
        iw_conn_fail_locked(c, out, r == -ESHUTDOWN ? -ECONNABORTED : r);
        return;
    }
    if (r == 0)
        return;
    if (c->state == IW_CM_AWAIT_READ_RESP) {
        if (!whole && !h.payload_len && h.opcode == IW_OP_READ_RESP)
            return;                      /* the zero-length Read Response is still arriving */
        if (!whole || h.opcode != IW_OP_READ_RESP || h.payload_len) {
            iw_dwarn(c->obj.dev, "CONN[%u] expected a zero-length Read Response, got %s", c->obj.id,
                     iw_fpdu_opcode_name(h.opcode));
            iw_conn_terminate_locked(c, out, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE,
                                     NULL, -EPROTO);
            return;
        }
        iw_conn_recv(c, sink, len);
        iw_lock_take(&c->qp->lock);
        c->qp->params.rtr_read_sent = true;
        iw_lock_give(&c->qp->lock);
        iw_conn_establish_locked(c, out);
        return;
    }
    /* Responder (RFC 6581). In P2P mode the first FPDU must be the RTR: the
     * kind we chose, or a Write / Read kind the initiator offered; anything else (a data FPDU,
     * a Send we did not choose) is a protocol error answered with a Terminate. */
    unsigned kind = whole ? iw_fpdu_rtr_kind(&h) : 0;
    if (c->p2p && (whole || h.payload_len) &&
        (!kind || (kind != c->rtr && (kind == IW_MPA_RTR_SEND || !(kind & c->rtr_offer))))) {
        iw_dwarn(c->obj.dev, "CONN[%u] P2P: expected the RTR (0x%x), got %s with %u bytes", c->obj.id, c->rtr,
                 iw_fpdu_opcode_name(h.opcode), h.payload_len);
        iw_conn_terminate_locked(c, out, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE,
                                 NULL, -EPROTO);
        return;
    }
    if (whole && (kind == IW_MPA_RTR_WRITE || kind == IW_MPA_RTR_READ)) {
        iw_conn_recv(c, sink, len);
        IW_COUNT(c->obj.dev, rdma_in_octets, len);
        if (kind == IW_MPA_RTR_READ) {
            struct iw_fpdu_hdr resp;
            memset(&resp, 0, sizeof resp);
            resp.opcode = IW_OP_READ_RESP;
            resp.last = true;
            resp.stag = h.rr.sink_stag;
            resp.to = h.rr.sink_to;
            if (iw_cm_build_fpdu(c, &resp) < 0 || iw_conn_tx(c) < 0) {
                iw_conn_fail_locked(c, out, -EIO);
                return;
            }
            iw_lock_take(&c->qp->lock);
            c->qp->params.rtr_read_consumed = true;
            iw_lock_give(&c->qp->lock);
        }
    } else if (!whole && !h.payload_len) {
        return;                        /* a zero-length FPDU still arriving */
    }
    iw_conn_establish_locked(c, out);
}

static void iw_conn_tx_done(struct iw_connector *c, struct iw_cm_out *out)
{
    if (c->state == IW_CM_REJECTING) {
        iw_conn_close_locked(c, out, 0, false);
        return;
    }
    if (c->establish_after_tx) {
        c->establish_after_tx = false;
        iw_conn_establish_locked(c, out);
    }
}

/* Handles socket events (events != 0) and queued actions. dev->lock held, progress thread. */
static void iw_conn_step_locked(struct iw_connector *c, uint32_t events, unsigned act, struct iw_cm_out *out)
{
    int r;

    if (act & IW_CM_ACT_KILL) {
        /* §8.41 decision: closing without NdkDisconnect is an abortive disconnect + flush. */
        if (c->state == IW_CM_REJECTING) {
            /* NdkReject then an immediate close: the reject frame still goes out first (a
             * frame this small always fits the socket buffer), then an orderly FIN. */
            if (c->tx_len)
                iw_conn_tx(c);
            iw_conn_close_locked(c, out, 0, false);
        } else if (c->state != IW_CM_CLOSED) {
            c->local_disconnect = true;
            iw_conn_close_locked(c, out, -ECANCELED, true);
        }
        if (c->qp && c->established_once && !out->flush)
            out->flush = c->qp;
        return;
    }
    if (c->state == IW_CM_CLOSED)
        return;
    if (act & IW_CM_ACT_FAIL) {
        if (c->fail_err == -ESHUTDOWN && c->state == IW_CM_ESTABLISHED)
            iw_ddbg(c->obj.dev, "CONN[%u] peer disconnected", c->obj.id);
        iw_conn_fail_locked(c, out, c->fail_err ? c->fail_err : -ECONNABORTED);
        return;
    }
    if (act & IW_CM_ACT_TIMEOUT) {
        switch (c->state) {
        case IW_CM_TCP_CONNECTING:
        case IW_CM_AWAIT_REPLY:
        case IW_CM_AWAIT_READ_RESP:
        case IW_CM_AWAIT_RTR:
        case IW_CM_DISCONNECTING:
            iw_dwarn(c->obj.dev, "CONN[%u] timed out in %s", c->obj.id, iw_cm_state_name[c->state]);
            iw_conn_fail_locked(c, out, -ETIMEDOUT);
            return;
        case IW_CM_AWAIT_REQUEST:
            /* siw: the responder just closes when its MPA timer runs out */
            iw_conn_close_locked(c, out, -ETIMEDOUT, true);
            return;
        case IW_CM_ESTABLISHED:
            /* a non-P2P first-FPDU hold is over (iw_config.first_fpdu_grace_ms / _hold_ms) */
            out->release_tx = c->qp;
            iw_ddbg(c->obj.dev, "CONN[%u] first-FPDU grace timer fired", c->obj.id);
            break;
        default:
            break;
        }
    }
    if (act & IW_CM_ACT_DISCONNECT && c->state == IW_CM_ESTABLISHED) {
        iw_cm_set_state(c, IW_CM_DISCONNECTING);
        /* RFC 5044 has no MPA goodbye: FIN, then wait for the peer's FIN. */
        if (shutdown(c->poll.fd, SHUT_WR) < 0) {
            iw_conn_fail_locked(c, out, -errno);
            return;
        }
        iw_cm_timer_set_locked(c, c->obj.dev->prov->cfg.disconnect_timeout_ms);
    }
    if (act & IW_CM_ACT_ESTABLISH && c->tx_off >= c->tx_len &&
        (c->state == IW_CM_REPLY_RECEIVED || c->state == IW_CM_AWAIT_RTR)) {
        c->establish_after_tx = false;
        iw_conn_establish_locked(c, out);
    }

    /* errors and hang-ups outside the data phase */
    if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP) && c->state != IW_CM_ESTABLISHED &&
        c->state != IW_CM_DISCONNECTING && c->state != IW_CM_TCP_CONNECTING && !(events & EPOLLIN)) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        getsockopt(c->poll.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        iw_conn_fail_locked(c, out, soerr ? -soerr : -ECONNABORTED);
        return;
    }

    if (c->state == IW_CM_TCP_CONNECTING && events) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        getsockopt(c->poll.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        if (soerr) {
            iw_conn_fail_locked(c, out, -soerr);
            return;
        }
        if (!(events & EPOLLOUT))
            return;
        iw_ep_sockname(c->poll.fd, &c->local, false);
        if (iw_hnode_linked(&c->tuple))
            iw_connector_index_locked(c);     /* a wildcard source became the route's address */
        /* TCP is up and nothing was sent: the tap (capture, wire faults) starts here. */
        c->wire = iw_wire_attach(c->obj.dev->prov, c->poll.fd, true);
        iw_cm_set_state(c, IW_CM_AWAIT_REPLY);
        act |= IW_CM_ACT_TX;
    }

    if ((events & EPOLLOUT) || (act & IW_CM_ACT_TX)) {
        if (c->tx_len && c->poll.fd >= 0) {
            r = iw_conn_tx(c);
            if (r < 0) {
                iw_conn_fail_locked(c, out, r);
                return;
            }
            if (r == 1)
                iw_conn_tx_done(c, out);
            if (c->state == IW_CM_CLOSED)
                return;
        }
    }

    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        switch (c->state) {
        case IW_CM_AWAIT_REPLY:
        case IW_CM_AWAIT_REQUEST:
            r = iw_conn_rx_mpa(c);
            if (r < 0) {
                iw_conn_fail_locked(c, out, r);
                return;
            }
            if (r == 1) {
                if (c->state == IW_CM_AWAIT_REPLY)
                    iw_conn_on_reply(c, out);
                else
                    iw_conn_on_request(c, out);
            }
            break;
        case IW_CM_AWAIT_RTR:
        case IW_CM_AWAIT_READ_RESP:
            iw_conn_on_rtr(c, out);
            break;
        case IW_CM_REJECTING:
            /* the peer's answer to our reject: nothing to read; EOF closes */
            {
                uint8_t tmp[256];
                ssize_t n = iw_conn_recv(c, tmp, sizeof tmp);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                    iw_conn_close_locked(c, out, 0, true);
                    return;
                }
            }
            break;
        default:
            break;
        }
    }
    if (c->state != IW_CM_CLOSED)
        iw_conn_update_events(c);
}

void iw_cm_poll(struct iw_pollable *p, uint32_t events)
{
    struct iw_connector *c = ndk_container_of(p, struct iw_connector, poll);
    struct iw_device *dev = c->obj.dev;
    struct iw_cm_out out;

    memset(&out, 0, sizeof out);
    out.conn = c;
    iw_obj_get(&c->obj);
    pthread_mutex_lock(&dev->lock);
    if (!c->polled || c->sock_handed) {
        /* A stale event of this batch: the socket went to the QP or was closed. */
    } else if (c->state != IW_CM_CLOSED) {
        iw_conn_step_locked(c, events, 0, &out);
    }
    pthread_mutex_unlock(&dev->lock);
    iw_out_run(&out);
    iw_obj_put(&c->obj);
}

void iw_cm_work(struct iw_work *w)
{
    struct iw_connector *c = ndk_container_of(w, struct iw_connector, work);
    struct iw_device *dev = c->obj.dev;
    struct iw_cm_out out;
    unsigned act;

    memset(&out, 0, sizeof out);
    out.conn = c;
    pthread_mutex_lock(&dev->lock);
    act = c->actions;
    c->actions = 0;
    iw_conn_step_locked(c, 0, act, &out);
    pthread_mutex_unlock(&dev->lock);
    iw_out_run(&out);
    iw_obj_put(&c->obj);   /* the queuer's reference */
}

/* ---- data path entry points into the CM ---- */

/* The QP's connector with a reference taken, or NULL once it is being destroyed. Takes and drops
 * qp->lock, which the caller must not hold. */
static struct iw_connector *iw_cm_conn_of_qp(struct iw_qp *qp)
{
    struct iw_connector *c;

    iw_lock_take(&qp->lock);
    c = qp->conn;
    if (c && !iw_obj_tryget(&c->obj))
        c = NULL;
    iw_lock_give(&qp->lock);
    return c;
}

void iw_cm_connection_failed(struct iw_qp *qp, int err)
{
    struct iw_connector *c = iw_cm_conn_of_qp(qp);

    if (!c)
        return;
    pthread_mutex_lock(&c->obj.dev->lock);
    if (!c->fail_err)
        c->fail_err = err;
    iw_cm_queue_locked(c, IW_CM_ACT_FAIL);
    pthread_mutex_unlock(&c->obj.dev->lock);
    iw_obj_put(&c->obj);
}

void iw_cm_abort_locked(struct iw_connector *c)
{
    iw_cm_queue_locked(c, IW_CM_ACT_KILL);
}
