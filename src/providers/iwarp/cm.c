/* cm.c - connection management (§2.10-§2.12, §3.5-§3.7, §5.11): listeners, connectors, shared
 * endpoints, the MPA start-up exchange (iwarp-wire.md §2, §9) and the CM timers.
 *
 * Threading. Every connector's CM state and every CM socket operation is protected by dev->lock
 * (the CM lock). Consumer calls only validate, record what they want under the lock, and queue
 * the connector's work item; the progress thread does the socket I/O and the state transitions,
 * collects the consumer callbacks in a struct iw_cm_out while locked, drops the lock and only
 * then calls them (with a reference held on each object named). Sockets are closed only on the
 * progress thread (progress.c's pollable rule).
 *
 * Handshake (iwarp-wire.md §9), our initiator -> our responder with P2P:
 *   NdkConnect        -> TCP connect, MPA Request (Rev 2, enhanced, A + Write|Read RTR offered)
 *   Reply arrives     -> NdkConnect completes (peer accepted) or fails (R = 1: REFUSED)
 *   NdkCompleteConnect-> RTR (zero-length Write, STag 1) -> completes; ESTABLISHED
 *   responder: NdkAccept sends the Reply, waits for the RTR -> NdkAccept completes; ESTABLISHED
 * Without P2P (Rev 1 peers, siw's default), the responder is ESTABLISHED once its Reply is out
 * and its data path must not transmit before the first inbound FPDU (params.tx_wait_first_rx). */
#define _GNU_SOURCE     /* accept4 */
#include "iwarp.h"
#include "fpdu.h"

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

/* The one transition function of the connector machine. dev->lock held. */
static int iw_cm_set_state(struct iw_connector *c, enum iw_cm_state to)
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
static void iw_req_store(struct iw_connector *c, NDK_FN_REQUEST_COMPLETION *fn, void **ctx,
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
        pthread_mutex_lock(&out->flush->lock);
        iw_qp_flush_locked(out->flush);
        pthread_mutex_unlock(&out->flush->lock);
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

static void iw_conn_queue_locked(struct iw_connector *c, unsigned act)
{
    c->actions |= act;
    iw_obj_get(&c->obj);
    if (!iw_progress_queue(c->obj.dev, &c->work))
        iw_obj_put(&c->obj);
}

/* The armed timer holds a reference on the connector (iwarp.h, struct iw_timer). dev->lock held. */
static void iw_timer_set_locked(struct iw_connector *c, uint32_t ms)
{
    c->deadline_ms = iw_now_ms() + ms;
    if (iw_progress_timer_arm(c->obj.dev, &c->timer, c->deadline_ms))
        iw_obj_get(&c->obj);
}

static void iw_timer_clear_locked(struct iw_connector *c)
{
    if (c->deadline_ms) {
        c->deadline_ms = 0;
        if (iw_progress_timer_cancel(c->obj.dev, &c->timer))
            iw_obj_put(&c->obj);
    }
}

/* Progress thread, no lock held: the deadline passed, unless it moved or went meanwhile. */
static void iw_conn_timer_fired(struct iw_timer *t, uint64_t now)
{
    struct iw_connector *c = ndk_container_of(t, struct iw_connector, timer);

    pthread_mutex_lock(&c->obj.dev->lock);
    if (c->deadline_ms && c->deadline_ms <= now) {
        c->deadline_ms = 0;
        iw_conn_queue_locked(c, IW_CM_ACT_TIMEOUT);
    }
    pthread_mutex_unlock(&c->obj.dev->lock);
    iw_obj_put(&c->obj);                 /* the fired arming's reference */
}

/* ---- sockets ---- */

/* What a socket is for decides its sharing flags (§5.11.5: a port is shared only on purpose):
 *   LISTEN     SO_REUSEADDR, as siw (iwarp-wire.md §7.8): a listener can come back while its
 *              old connections sit in TIME_WAIT; two listeners never share a port on Linux.
 *   CONNECT    nothing: its bind (explicit or ephemeral port) is exclusive against every socket.
 *   SEP_ANCHOR a shared endpoint's placeholder: bound exclusively, then SO_REUSEPORT so that
 *              the connections through it can join (iw_create_shared_endpoint).
 *   SEP_CONN   a connection through a shared endpoint: SO_REUSEPORT, joins the placeholder. */
enum iw_sock_use { IW_SOCK_LISTEN, IW_SOCK_CONNECT, IW_SOCK_SEP_ANCHOR, IW_SOCK_SEP_CONN };

static int iw_socket(int family, enum iw_sock_use use)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;

    if (fd < 0)
        return -errno;
    /* iwarp-wire.md §2.8: TCP_NODELAY as siw does. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (use == IW_SOCK_LISTEN)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (use == IW_SOCK_SEP_CONN)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    return fd;
}

static void iw_sockname(int fd, SOCKADDR_INET *a, bool peer)
{
    socklen_t len = sizeof(*a);
    SOCKADDR_INET tmp;

    memset(&tmp, 0, sizeof tmp);
    if ((peer ? getpeername(fd, (struct sockaddr *)&tmp, &len) : getsockname(fd, (struct sockaddr *)&tmp, &len)) == 0)
        *a = tmp;
}

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

/* Sends what is left of txbuf. 1 = all out, 0 = socket full, <0 = error. dev->lock held. */
static int iw_conn_tx(struct iw_connector *c)
{
    while (c->tx_off < c->tx_len) {
        ssize_t n = send(c->poll.fd, c->txbuf + c->tx_off, c->tx_len - c->tx_off, MSG_NOSIGNAL | MSG_DONTWAIT);
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
    iw_timer_clear_locked(c);

    if (qp) {
        pthread_mutex_lock(&qp->lock);
        if (qp->conn == c) {
            if (qp->state == IW_QP_RTS || qp->state == IW_QP_CLOSING || qp->state == IW_QP_TERMINATE) {
                qp->fd = -1;
                iw_qp_modify_locked(qp, IW_QP_ERROR);
                out->lost = qp;
                out->lost_err = err;
            } else if (qp->state == IW_QP_CONNECTING) {
                /* never established: the QP may serve another connector */
                iw_qp_modify_locked(qp, IW_QP_IDLE);
                qp->conn = NULL;
            }
        }
        pthread_mutex_unlock(&qp->lock);
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
            atomic_fetch_sub(&dev->counters.active_connection, 1);
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

    pthread_mutex_lock(&qp->lock);
    if (qp->state != IW_QP_CONNECTING || qp->conn != c) {
        /* the consumer flushed the QP during the handshake */
        pthread_mutex_unlock(&qp->lock);
        iw_conn_fail_locked(c, out, -ECANCELED);
        return;
    }
    pthread_mutex_unlock(&qp->lock);
    if (iw_cm_set_state(c, IW_CM_ESTABLISHED) < 0)
        return;
    c->established_once = true;
    iw_timer_clear_locked(c);
    getsockopt(c->poll.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len);
    pthread_mutex_lock(&qp->lock);
    qp->fd = c->poll.fd;
    qp->params.crc = c->crc;
    qp->params.mpa_rev = c->mpa_rev;
    qp->params.p2p = c->p2p;
    qp->params.rtr = c->rtr;
    qp->params.ird = c->eff_ird;
    qp->params.ord = c->eff_ord;
    qp->params.mss = mss > 0 ? (uint32_t)mss : 1460u;
    qp->params.mulpdu = iw_fpdu_mulpdu(qp->params.mss, false);
    qp->params.tx_wait_first_rx = !c->active && !c->p2p;
    iw_qp_modify_locked(qp, IW_QP_RTS);
    pthread_mutex_unlock(&qp->lock);
    if (!c->active && !c->p2p && dev->prov->cfg.first_fpdu_grace_ms)
        iw_timer_set_locked(c, dev->prov->cfg.first_fpdu_grace_ms);
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

static int iw_conn_build_request(struct iw_connector *c)
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
        /* Offer Write and Read RTR (iwarp-wire.md §8); Read needs one ORD slot of ours. */
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
static int iw_conn_build_reply(struct iw_connector *c, bool reject, const void *pd, uint16_t pdlen)
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

/* Zero-length RTR / Read Response FPDUs (iwarp-wire.md §2.3, §7.5). */
static int iw_conn_build_fpdu(struct iw_connector *c, const struct iw_fpdu_hdr *h)
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
    if (used && recv(c->poll.fd, buf, used, MSG_DONTWAIT) != (ssize_t)used)
        return -EIO;
    IW_COUNT(c->obj.dev, rdma_in_octets, used);
    if (st == IW_MPA_ERROR) {
        iw_dwarn(c->obj.dev, "CONN[%u] bad MPA %s: %s", c->obj.id, c->active ? "Reply" : "Request",
                iw_mpa_strerror(c->parser.error));
        return -EPROTO;
    }
    if (st == IW_MPA_NEED_MORE)
        return 0;
    /* iwarp-wire.md §2.2: the initiator may not send behind its Request (siw closes too). */
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
            *term = ev.err->term;        /* what the Terminate must say (iwarp-wire.md §4.4) */
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
 * iwarp-wire.md §2.3 / §4.4 want one Terminate describing it before the stream ends. Queues it
 * behind anything still pending in txbuf, sends what the socket takes now (a Terminate is small
 * and best effort), drops unread input so that close() sends a FIN rather than a reset (which
 * would discard the Terminate), and closes: pending requests fail with err. dev->lock held. */
static void iw_conn_terminate_locked(struct iw_connector *c, struct iw_cm_out *out, uint8_t layer, uint8_t etype,
                                     uint8_t ecode, const struct iw_fpdu_term *term, int err)
{
    struct iw_fpdu_hdr h;
    uint8_t buf[IW_FPDU_MAX_BUFFERED + IW_MPA_CRC_SIZE + 8];
    int n;

    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_TERMINATE;
    h.last = true;
    h.qn = IW_QN_TERMINATE;
    h.msn = 1;                           /* the first and only message on QN 2 */
    if (term) {
        h.term = *term;
    } else {
        h.term.layer = layer;
        h.term.etype = etype;
        h.term.ecode = ecode;
    }
    iw_dwarn(c->obj.dev, "CONN[%u] protocol error in %s: sending Terminate (layer %u etype %u code 0x%02x)", c->obj.id,
             iw_cm_state_name[c->state], h.term.layer, h.term.etype, h.term.ecode);
    n = iw_fpdu_build(&h, NULL, 0, c->crc, buf, sizeof buf);
    if (n > 0 && c->poll.fd >= 0 && iw_conn_tx_add(c, buf, (size_t)n) == 0) {
        if (iw_conn_tx(c) == 0)
            iw_ddbg(c->obj.dev, "CONN[%u] Terminate did not fit the socket at once", c->obj.id);
        uint8_t sink[512];
        for (int i = 0; i < 64 && recv(c->poll.fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
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
        /* iwarp-wire.md §2.4: R = 1 -> refused; its private data stays readable. */
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
        /* As siw: a Rev 2 initiator needs a Rev 2 enhanced Reply (iwarp-wire.md §2.3). */
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
                /* RFC 6581 / iwarp-wire.md §2.3: Terminate "no matching RTR option" instead of
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
    iw_timer_clear_locked(c);
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
    iw_timer_clear_locked(c);
    if (f->markers || !l->listening || l->paused || iw_obj_closing(&l->obj)) {
        /* Markers are refused with an MPA reject (iwarp-wire.md §2.7). A paused or closing
         * listener behaves as if absent (§2.12): the peer sees a refusal. */
        c->crc = f->crc;
        c->p2p = false;
        iw_cm_set_state(c, IW_CM_REJECTING);
        if (iw_conn_build_reply(c, true, NULL, 0) < 0 || iw_conn_tx(c) != 0) {
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
        recv(c->poll.fd, sink, len, MSG_DONTWAIT);
        pthread_mutex_lock(&c->qp->lock);
        c->qp->params.rtr_read_sent = true;
        pthread_mutex_unlock(&c->qp->lock);
        iw_conn_establish_locked(c, out);
        return;
    }
    /* Responder (iwarp-wire.md §2.3, §7.5). In P2P mode the first FPDU must be the RTR: the
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
        recv(c->poll.fd, sink, len, MSG_DONTWAIT);
        IW_COUNT(c->obj.dev, rdma_in_octets, len);
        if (kind == IW_MPA_RTR_READ) {
            struct iw_fpdu_hdr resp;
            memset(&resp, 0, sizeof resp);
            resp.opcode = IW_OP_READ_RESP;
            resp.last = true;
            resp.stag = h.rr.sink_stag;
            resp.to = h.rr.sink_to;
            if (iw_conn_build_fpdu(c, &resp) < 0 || iw_conn_tx(c) < 0) {
                iw_conn_fail_locked(c, out, -EIO);
                return;
            }
            pthread_mutex_lock(&c->qp->lock);
            c->qp->params.rtr_read_consumed = true;
            pthread_mutex_unlock(&c->qp->lock);
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
            /* siw: the responder just closes (iwarp-wire.md §2.5) */
            iw_conn_close_locked(c, out, -ETIMEDOUT, true);
            return;
        case IW_CM_ESTABLISHED:
            /* the first-FPDU grace of a non-P2P responder is over (iw_config.first_fpdu_grace_ms) */
            out->release_tx = c->qp;
            iw_ddbg(c->obj.dev, "CONN[%u] first-FPDU grace timer fired", c->obj.id);
            break;
        default:
            break;
        }
    }
    if (act & IW_CM_ACT_DISCONNECT && c->state == IW_CM_ESTABLISHED) {
        iw_cm_set_state(c, IW_CM_DISCONNECTING);
        /* iwarp-wire.md §6: no MPA goodbye; FIN, then wait for the peer's FIN. */
        if (shutdown(c->poll.fd, SHUT_WR) < 0) {
            iw_conn_fail_locked(c, out, -errno);
            return;
        }
        iw_timer_set_locked(c, c->obj.dev->prov->cfg.disconnect_timeout_ms);
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
        iw_sockname(c->poll.fd, &c->local, false);
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
                ssize_t n = recv(c->poll.fd, tmp, sizeof tmp, MSG_DONTWAIT);
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

static void iw_conn_poll(struct iw_pollable *p, uint32_t events)
{
    struct iw_connector *c = ndk_container_of(p, struct iw_connector, poll);
    struct iw_device *dev = c->obj.dev;
    struct iw_cm_out out;

    memset(&out, 0, sizeof out);
    out.conn = c;
    iw_obj_get(&c->obj);
    pthread_mutex_lock(&dev->lock);
    if (c->state == IW_CM_ESTABLISHED || c->state == IW_CM_DISCONNECTING) {
        struct iw_qp *qp = c->qp;
        int r = 0;

        pthread_mutex_unlock(&dev->lock);
        /* The data phase: the peer went away or the socket failed. The QP reads what is left,
         * without the CM lock (only this thread closes the socket, so it stays valid). */
        if (events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
            r = iw_qp_on_hangup(qp);
        pthread_mutex_lock(&dev->lock);
        if (r && c->state != IW_CM_CLOSED) {
            /* The first error wins: the QP may have reported one already (its own watch saw the
             * reset that this read now only sees as the end of the stream). */
            if (!c->fail_err)
                c->fail_err = r;
            r = c->fail_err;
            if (r == -ESHUTDOWN && c->state == IW_CM_ESTABLISHED)
                iw_ddbg(c->obj.dev, "CONN[%u] peer disconnected", c->obj.id);
            /* FIN: close our side too (no half-closed connections, §5.11.6). */
            iw_conn_close_locked(c, &out, r, r != -ESHUTDOWN);
        }
    } else if (c->state != IW_CM_CLOSED) {
        iw_conn_step_locked(c, events, 0, &out);
    }
    pthread_mutex_unlock(&dev->lock);
    iw_out_run(&out);
    iw_obj_put(&c->obj);
}

static void iw_conn_work(struct iw_work *w)
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

/* ---- connector object ---- */

static void iw_conn_close_start(struct iw_obj *o)
{
    struct iw_connector *c = ndk_container_of(o, struct iw_connector, obj);

    pthread_mutex_lock(&o->dev->lock);
    iw_conn_queue_locked(c, IW_CM_ACT_KILL);
    pthread_mutex_unlock(&o->dev->lock);
}

static void iw_conn_destroy(struct iw_obj *o)
{
    struct iw_connector *c = ndk_container_of(o, struct iw_connector, obj);
    struct iw_device *dev = o->dev;

    pthread_mutex_lock(&dev->lock);
    ndk_list_del(&c->link);
    ndk_list_del(&c->ep_link);
    if (c->ep)
        iw_ep_put(dev, c->ep);     /* §5.11.5: -1 when the connector is closed */
    pthread_mutex_unlock(&dev->lock);
    if (c->qp) {
        pthread_mutex_lock(&c->qp->lock);
        if (c->qp->conn == c)
            c->qp->conn = NULL;
        pthread_mutex_unlock(&c->qp->lock);
    }
    if (c->poll.fd >= 0)           /* never registered (failed before connect) */
        close(c->poll.fd);
    iw_progress_timer_fini(dev, &c->timer);   /* idle: an armed timer holds a reference */
    free(c);
}

static const struct iw_obj_ops iw_conn_ops = {
    .name = "CONNECTOR", .close_start = iw_conn_close_start, .destroy = iw_conn_destroy,
};

static NTSTATUS iw_close_connector(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_connector((NDK_CONNECTOR *)h)->obj, cb, ctx);
}

static uint32_t iw_cap(ULONG v, uint32_t max)
{
    return v > max ? max : (uint32_t)v;
}

/* Ties qp to c (§1.7: the QP becomes an antecedent of the connector). dev->lock held. */
static int iw_conn_attach_qp(struct iw_connector *c, NDK_QP *q)
{
    struct iw_qp *qp;
    int err = 0;

    if (!q)
        return -EINVAL;
    qp = to_iw_qp(q);
    if (qp->obj.adapter != c->obj.adapter)
        return -EINVAL;
    pthread_mutex_lock(&qp->lock);
    if (qp->conn || qp->state != IW_QP_IDLE)
        err = -EINVAL;
    else {
        qp->conn = c;
        iw_qp_modify_locked(qp, IW_QP_CONNECTING);
    }
    pthread_mutex_unlock(&qp->lock);
    if (err)
        return err;
    c->qp = qp;
    iw_obj_set_ante(&c->obj, IW_CONN_ANTE_QP, &qp->obj);
    return 0;
}

static void iw_conn_detach_qp(struct iw_connector *c)
{
    struct iw_qp *qp = c->qp;

    if (!qp)
        return;
    pthread_mutex_lock(&qp->lock);
    if (qp->conn == c) {
        qp->conn = NULL;
        iw_qp_modify_locked(qp, IW_QP_IDLE);
    }
    pthread_mutex_unlock(&qp->lock);
}

/* Common tail of NdkConnect / NdkConnectWithSharedEndpoint: fd is bound; start connect(). */
static NTSTATUS iw_conn_start(struct iw_connector *c, int fd, const SOCKADDR_INET *dst, ULONG ird, ULONG ord,
                              const void *pd, ULONG pdlen, NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
    struct iw_device *dev = c->obj.dev;
    int err;

    c->active = true;
    c->peer = *dst;
    c->my_ird = iw_cap(ird, IW_MAX_IRD);
    c->my_ord = iw_cap(ord, IW_MAX_ORD);
    c->my_pd_len = (uint16_t)pdlen;
    if (pdlen)
        memcpy(c->my_pd, pd, pdlen);
    iw_mpa_parser_init(&c->parser, IW_MPA_REPLY, IW_MPA_MAX_PD_WIRE);
    if (connect(fd, (const struct sockaddr *)dst, iw_sa_len((const struct sockaddr *)dst)) < 0 &&
        errno != EINPROGRESS) {
        err = -errno;
        return ndk_status_from_errno(err == -EADDRNOTAVAIL ? -EEXIST : err);
    }
    c->poll.fd = fd;
    c->poll.handler = iw_conn_poll;
    iw_cm_set_state(c, IW_CM_TCP_CONNECTING);
    err = iw_conn_build_request(c);
    if (err < 0) {
        c->poll.fd = -1;
        c->state = IW_CM_IDLE;
        return ndk_status_from_errno(err);
    }
    iw_req_store(c, &c->connect_cb, &c->connect_ctx, cb, ctx);
    iw_obj_get(&c->obj);                 /* the epoll registration's reference */
    c->polled = true;
    iw_timer_set_locked(c, c->obj.dev->prov->cfg.connect_timeout_ms);
    if (iw_progress_add(dev, &c->poll, EPOLLOUT) < 0) {
        /* fall back to the progress thread noticing through the timer; should not happen */
        iw_derr(c->obj.dev, "CONN[%u] epoll_ctl: %s", c->obj.id, strerror(errno));
        c->polled = false;
        iw_obj_put(&c->obj);
        iw_conn_queue_locked(c, IW_CM_ACT_FAIL);
        c->fail_err = -ENOMEM;
    }
    return STATUS_PENDING;
}

static NTSTATUS iw_connect(NDK_CONNECTOR *nc, NDK_QP *q, CONST PSOCKADDR src, ULONG srclen, CONST PSOCKADDR dst,
                           ULONG dstlen, ULONG ird, ULONG ord, CONST PVOID pd, ULONG pdlen,
                           NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct iw_connector *c = to_iw_connector(nc);
    struct iw_device *dev = c->obj.dev;
    SOCKADDR_INET s, d;
    int err, fd;
    NTSTATUS st;

    if (!cb || pdlen > IW_MAX_PRIVATE_DATA || (pdlen && !pd))
        return STATUS_INVALID_PARAMETER;
    if ((err = iw_sa_from_user(src, srclen, &s)) < 0 || (err = iw_sa_from_user(dst, dstlen, &d)) < 0)
        return err == -EINVAL ? STATUS_INVALID_PARAMETER : STATUS_INVALID_ADDRESS;
    if (s.si_family != d.si_family || iw_sa_is_wildcard(&d) || iw_sa_port(&d) == 0)
        return STATUS_INVALID_ADDRESS;
    if (!iw_device_has_address(dev, (const struct sockaddr *)&s))
        return STATUS_INVALID_ADDRESS;
    fd = iw_socket(s.si_family, IW_SOCK_CONNECT);
    if (fd < 0)
        return ndk_status_from_errno(fd);

    pthread_mutex_lock(&dev->lock);
    if (c->state != IW_CM_IDLE) {
        st = STATUS_INVALID_DEVICE_REQUEST;
        goto fail;
    }
    /* §5.11.5: duplicate 4-tuple -> STATUS_ADDRESS_ALREADY_EXISTS. */
    if (iw_sa_port(&s)) {
        struct ndk_list *pos;
        ndk_list_for_each(pos, &dev->connectors) {
            struct iw_connector *o = ndk_list_entry(pos, struct iw_connector, link);
            if (o != c && o->state != IW_CM_CLOSED && iw_sa_equal(&o->local, &s) && iw_sa_equal(&o->peer, &d)) {
                st = STATUS_ADDRESS_ALREADY_EXISTS;
                goto fail;
            }
        }
    }
    err = iw_conn_attach_qp(c, q);
    if (err) {
        st = STATUS_INVALID_PARAMETER;
        goto fail;
    }
    for (int attempt = 0;; attempt++) {
        err = iw_ep_acquire(dev, &s, IW_EP_CONNECT, fd, &c->ep);
        if (err) {
            st = ndk_status_from_errno(err);
            goto fail_qp;
        }
        c->local = c->ep->addr;
        st = iw_conn_start(c, fd, &d, ird, ord, pd, pdlen, cb, ctx);
        if (st == STATUS_PENDING)
            break;
        iw_ep_put(dev, c->ep);
        c->ep = NULL;
        /* A port of our choosing whose 4-tuple to d is still taken (TIME_WAIT, or a socket
         * someone shares the port with): choose another one (§5.11.5). */
        if (st != STATUS_ADDRESS_ALREADY_EXISTS || iw_sa_port(&s) || attempt == 15)
            goto fail_qp;
        close(fd);
        fd = iw_socket(s.si_family, IW_SOCK_CONNECT);
        if (fd < 0) {
            st = ndk_status_from_errno(fd);
            iw_conn_detach_qp(c);
            pthread_mutex_unlock(&dev->lock);
            return st;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    return STATUS_PENDING;
fail_qp:
    iw_conn_detach_qp(c);
fail:
    pthread_mutex_unlock(&dev->lock);
    close(fd);
    return st;
}

static NTSTATUS iw_connect_sep(NDK_CONNECTOR *nc, NDK_QP *q, NDK_SHARED_ENDPOINT *ns, CONST PSOCKADDR dst,
                               ULONG dstlen, ULONG ird, ULONG ord, CONST PVOID pd, ULONG pdlen,
                               NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct iw_connector *c = to_iw_connector(nc);
    struct iw_device *dev = c->obj.dev;
    struct iw_shared_endpoint *sep;
    SOCKADDR_INET d;
    struct ndk_list *pos;
    int err, fd;
    NTSTATUS st;

    if (!cb || !ns || pdlen > IW_MAX_PRIVATE_DATA || (pdlen && !pd))
        return STATUS_INVALID_PARAMETER;
    sep = to_iw_shared_endpoint(ns);
    if ((err = iw_sa_from_user(dst, dstlen, &d)) < 0)
        return err == -EINVAL ? STATUS_INVALID_PARAMETER : STATUS_INVALID_ADDRESS;
    if (d.si_family != sep->local.si_family || iw_sa_is_wildcard(&d) || iw_sa_port(&d) == 0)
        return STATUS_INVALID_ADDRESS;
    fd = iw_socket(d.si_family, IW_SOCK_SEP_CONN);
    if (fd < 0)
        return ndk_status_from_errno(fd);
    pthread_mutex_lock(&dev->lock);
    if (c->state != IW_CM_IDLE) {
        st = STATUS_INVALID_DEVICE_REQUEST;
        goto fail;
    }
    /* §2.11: this endpoint already has a connection to that destination. */
    ndk_list_for_each(pos, &sep->ep->conns) {
        struct iw_connector *o = ndk_list_entry(pos, struct iw_connector, ep_link);
        if (o->state != IW_CM_CLOSED && iw_sa_equal(&o->peer, &d)) {
            st = STATUS_ADDRESS_ALREADY_EXISTS;
            goto fail;
        }
    }
    if (bind(fd, (const struct sockaddr *)&sep->local, iw_sa_len((const struct sockaddr *)&sep->local)) < 0) {
        st = ndk_status_from_errno(errno == EADDRINUSE ? -EADDRINUSE : -errno);
        goto fail;
    }
    err = iw_conn_attach_qp(c, q);
    if (err) {
        st = STATUS_INVALID_PARAMETER;
        goto fail;
    }
    c->local = sep->local;
    st = iw_conn_start(c, fd, &d, ird, ord, pd, pdlen, cb, ctx);
    if (st != STATUS_PENDING) {
        iw_conn_detach_qp(c);
        goto fail;
    }
    /* §5.11.5: +1 on the shared endpoint per connector through it. */
    c->ep = sep->ep;
    iw_ep_get(c->ep);
    ndk_list_add_tail(&sep->ep->conns, &c->ep_link);
    c->sep = sep;
    iw_obj_set_ante(&c->obj, IW_CONN_ANTE_PARENT, &sep->obj);
    pthread_mutex_unlock(&dev->lock);
    return STATUS_PENDING;
fail:
    pthread_mutex_unlock(&dev->lock);
    close(fd);
    return st;
}

static NTSTATUS iw_complete_connect_common(struct iw_connector *c, NDK_FN_DISCONNECT_EVENT_CALLBACK ev,
                                           NDK_FN_DISCONNECT_EVENT_CALLBACK_EX evx, void *evctx,
                                           NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
    struct iw_device *dev = c->obj.dev;
    NTSTATUS st = STATUS_PENDING;

    if (!cb)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&dev->lock);
    if (c->state == IW_CM_CLOSED && c->active && c->have_peer_data && !c->peer_rejected) {
        st = STATUS_CONNECTION_ABORTED;    /* the accepting peer went away meanwhile */
    } else if (c->state != IW_CM_REPLY_RECEIVED || c->complete_cb) {
        st = STATUS_CONNECTION_INVALID;
    } else {
        c->disc_event = ev;
        c->disc_event_ex = evx;
        c->disc_event_ctx = evctx;
        iw_req_store(c, &c->complete_cb, &c->complete_ctx, cb, ctx);
        if (c->p2p && c->rtr) {
            struct iw_fpdu_hdr h;
            memset(&h, 0, sizeof h);
            h.last = true;
            if (c->rtr == IW_MPA_RTR_WRITE) {
                /* zero-length Write, STag 1 (Chelsio drops STag 0; iwarp-wire.md §2.3) */
                h.opcode = IW_OP_WRITE;
                h.stag = 1;
                c->establish_after_tx = true;
            } else if (c->rtr == IW_MPA_RTR_READ) {
                h.opcode = IW_OP_READ_REQ;
                h.msn = 1;
                h.rr.src_stag = 1;
                iw_cm_set_state(c, IW_CM_AWAIT_READ_RESP);
                iw_timer_set_locked(c, c->obj.dev->prov->cfg.connect_timeout_ms);
            } else {
                h.opcode = IW_OP_SEND;   /* zero-length Send: only if it was the sole choice */
                h.msn = 1;
                c->establish_after_tx = true;
            }
            if (iw_conn_build_fpdu(c, &h) < 0) {
                c->fail_err = -EIO;
                iw_conn_queue_locked(c, IW_CM_ACT_FAIL);
            } else {
                iw_conn_queue_locked(c, IW_CM_ACT_TX);
            }
        } else {
            iw_conn_queue_locked(c, IW_CM_ACT_ESTABLISH);
        }
    }
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static NTSTATUS iw_complete_connect(NDK_CONNECTOR *nc, NDK_FN_DISCONNECT_EVENT_CALLBACK ev, PVOID evctx,
                                    NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    return iw_complete_connect_common(to_iw_connector(nc), ev, NULL, evctx, cb, ctx);
}

static NTSTATUS iw_complete_connect_ex(NDK_CONNECTOR *nc, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev, PVOID evctx,
                                       NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    return iw_complete_connect_common(to_iw_connector(nc), NULL, ev, evctx, cb, ctx);
}

static NTSTATUS iw_accept_common(struct iw_connector *c, NDK_QP *q, ULONG ird, ULONG ord, const void *pd,
                                 ULONG pdlen, NDK_FN_DISCONNECT_EVENT_CALLBACK ev,
                                 NDK_FN_DISCONNECT_EVENT_CALLBACK_EX evx, void *evctx,
                                 NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
    struct iw_device *dev = c->obj.dev;
    NTSTATUS st = STATUS_PENDING;

    if (!cb || pdlen > IW_MAX_PRIVATE_DATA || (pdlen && !pd))
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&dev->lock);
    if (c->state == IW_CM_CLOSED && !c->active && c->have_peer_data) {
        st = STATUS_CONNECTION_ABORTED;    /* the connecting peer gave up */
        goto out;
    }
    if (c->state != IW_CM_REQUEST_RECEIVED) {
        st = STATUS_CONNECTION_INVALID;
        goto out;
    }
    if (iw_conn_attach_qp(c, q) < 0) {
        st = STATUS_INVALID_PARAMETER;
        goto out;
    }
    c->my_ird = iw_cap(ird, IW_MAX_IRD);
    c->my_ord = iw_cap(ord, IW_MAX_ORD);
    if (c->peer_has_limits) {
        /* §5.11.3 / RFC 6581: our ORD <= the initiator's IRD; our IRD vs its ORD. */
        c->eff_ord = c->my_ord < c->peer_ird ? c->my_ord : c->peer_ird;
        c->eff_ird = c->my_ird < c->peer_ord ? c->my_ird : c->peer_ord;
    } else {
        c->eff_ord = c->my_ord;
        c->eff_ird = c->my_ird;
    }
    if (c->p2p) {
        /* iwarp-wire.md §8: pick Write if offered, else Read, else Write (as siw). */
        if (c->rtr_offer & IW_MPA_RTR_WRITE)
            c->rtr = IW_MPA_RTR_WRITE;
        else if (c->rtr_offer & IW_MPA_RTR_READ)
            c->rtr = IW_MPA_RTR_READ;
        else
            c->rtr = IW_MPA_RTR_WRITE;
        if (c->rtr == IW_MPA_RTR_READ && c->my_ird == 0)
            c->my_ird = 1;      /* we must answer the zero-length Read */
    }
    c->disc_event = ev;
    c->disc_event_ex = evx;
    c->disc_event_ctx = evctx;
    if (iw_conn_build_reply(c, false, pd, (uint16_t)pdlen) < 0) {
        iw_conn_detach_qp(c);
        st = STATUS_INVALID_PARAMETER;
        goto out;
    }
    iw_req_store(c, &c->accept_cb, &c->accept_ctx, cb, ctx);
    iw_cm_set_state(c, IW_CM_AWAIT_RTR);
    if (c->p2p) {
        iw_timer_set_locked(c, c->obj.dev->prov->cfg.accept_timeout_ms);
    } else {
        /* RFC 5044 §7.1.2 without P2P: full operation once our Reply is out; the data path
         * holds its first FPDU until the initiator's arrives (params.tx_wait_first_rx). */
        c->establish_after_tx = true;
    }
    iw_conn_queue_locked(c, IW_CM_ACT_TX);
out:
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static NTSTATUS iw_accept(NDK_CONNECTOR *nc, NDK_QP *q, ULONG ird, ULONG ord, CONST PVOID pd, ULONG pdlen,
                          NDK_FN_DISCONNECT_EVENT_CALLBACK ev, PVOID evctx, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    return iw_accept_common(to_iw_connector(nc), q, ird, ord, pd, pdlen, ev, NULL, evctx, cb, ctx);
}

static NTSTATUS iw_accept_ex(NDK_CONNECTOR *nc, NDK_QP *q, ULONG ird, ULONG ord, CONST PVOID pd, ULONG pdlen,
                             NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev, PVOID evctx, NDK_FN_REQUEST_COMPLETION cb,
                             PVOID ctx)
{
    return iw_accept_common(to_iw_connector(nc), q, ird, ord, pd, pdlen, NULL, ev, evctx, cb, ctx);
}

static NTSTATUS iw_reject(NDK_CONNECTOR *nc, CONST PVOID pd, ULONG pdlen)
{
    struct iw_connector *c = to_iw_connector(nc);
    struct iw_device *dev = c->obj.dev;
    NTSTATUS st = STATUS_SUCCESS;

    if (pdlen > IW_MAX_PRIVATE_DATA || (pdlen && !pd))
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&dev->lock);
    if (c->state == IW_CM_REQUEST_RECEIVED) {
        /* Passive: MPA Reply with R = 1 and the private data, then close (§2.4). */
        c->p2p = false;
        if (iw_conn_build_reply(c, true, pd, (uint16_t)pdlen) < 0) {
            st = STATUS_INVALID_PARAMETER;
        } else {
            iw_cm_set_state(c, IW_CM_REJECTING);
            iw_conn_queue_locked(c, IW_CM_ACT_TX);
        }
    } else if (c->state == IW_CM_REPLY_RECEIVED) {
        /* Active, after the peer accepted: there is no MPA message for this; close the
         * connection, so the peer's Accept fails with STATUS_CONNECTION_ABORTED (§5.11.1). */
        c->local_disconnect = true;
        c->fail_err = -ECONNABORTED;
        iw_conn_queue_locked(c, IW_CM_ACT_FAIL);
    } else if (c->state == IW_CM_CLOSED && c->have_peer_data) {
        st = STATUS_CONNECTION_ABORTED;
    } else {
        st = STATUS_CONNECTION_INVALID;
    }
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static NTSTATUS iw_get_connection_data(NDK_CONNECTOR *nc, ULONG *in, ULONG *outl, PVOID pd, ULONG *pdlen)
{
    struct iw_connector *c = to_iw_connector(nc);
    struct iw_device *dev = c->obj.dev;
    const ULONG rds = IW_MAX_PRIVATE_DATA;
    NTSTATUS st = STATUS_SUCCESS;

    if (!pdlen || (!pd && *pdlen))
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&dev->lock);
    if (!c->have_peer_data) {
        pthread_mutex_unlock(&dev->lock);
        return STATUS_CONNECTION_INVALID;
    }
    if (in || outl) {
        ULONG ird, ord;
        if (c->active || c->qp) {
            ird = c->eff_ird;
            ord = c->eff_ord;
        } else if (c->peer_has_limits) {
            /* §8.22 decision: before Accept, the initiator's request mirrored and capped. */
            ird = iw_cap(c->peer_ord, IW_MAX_IRD);
            ord = iw_cap(c->peer_ird, IW_MAX_ORD);
        } else {
            ird = IW_MAX_IRD;    /* MPA v1 peer: it stated nothing */
            ord = IW_MAX_ORD;
        }
        if (in)
            *in = ird;
        if (outl)
            *outl = ord;
    }
    /* §2.11 RDS protocol: RDS is our transport maximum; unused bytes are zero. */
    if (pd) {
        memcpy(pd, c->peer_pd, *pdlen < rds ? *pdlen : rds);
        if (*pdlen < rds)
            st = STATUS_BUFFER_TOO_SMALL;
    }
    *pdlen = rds;
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static NTSTATUS iw_conn_get_address(NDK_CONNECTOR *nc, PSOCKADDR addr, ULONG *len, bool peer)
{
    struct iw_connector *c = to_iw_connector(nc);
    SOCKADDR_INET a;

    pthread_mutex_lock(&c->obj.dev->lock);
    a = peer ? c->peer : c->local;
    pthread_mutex_unlock(&c->obj.dev->lock);
    return iw_sa_copy_out(&a, addr, len);
}

static NTSTATUS iw_conn_get_local(NDK_CONNECTOR *nc, PSOCKADDR addr, ULONG *len)
{
    return iw_conn_get_address(nc, addr, len, false);
}

static NTSTATUS iw_conn_get_peer(NDK_CONNECTOR *nc, PSOCKADDR addr, ULONG *len)
{
    return iw_conn_get_address(nc, addr, len, true);
}

static NTSTATUS iw_disconnect(NDK_CONNECTOR *nc, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct iw_connector *c = to_iw_connector(nc);
    struct iw_device *dev = c->obj.dev;
    struct iw_qp *flush = NULL;
    NTSTATUS st = STATUS_PENDING;

    if (!cb)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&dev->lock);
    if (c->disconnect_cb) {
        st = STATUS_INVALID_DEVICE_REQUEST;
    } else if (c->state == IW_CM_ESTABLISHED) {
        c->local_disconnect = true;
        pthread_mutex_lock(&c->qp->lock);
        iw_qp_modify_locked(c->qp, IW_QP_CLOSING);   /* no new TX from here on */
        pthread_mutex_unlock(&c->qp->lock);
        iw_req_store(c, &c->disconnect_cb, &c->disconnect_ctx, cb, ctx);
        iw_conn_queue_locked(c, IW_CM_ACT_DISCONNECT);
    } else if (c->state == IW_CM_CLOSED && c->established_once && c->peer_gone) {
        /* The peer already went: the connection is fully closed; flush and finish inline. */
        c->local_disconnect = true;
        flush = c->qp;
        st = STATUS_SUCCESS;
    } else if (c->state == IW_CM_CLOSED && c->established_once) {
        flush = c->qp;
        st = ndk_status_from_errno(c->first_error ? c->first_error : -ENOTCONN);
        if (st == STATUS_CANCELLED)
            st = STATUS_SUCCESS;
    } else {
        st = STATUS_CONNECTION_INVALID;
    }
    pthread_mutex_unlock(&dev->lock);
    if (flush) {
        pthread_mutex_lock(&flush->lock);
        iw_qp_flush_locked(flush);
        pthread_mutex_unlock(&flush->lock);
    }
    return st;
}

static const NDK_CONNECTOR_DISPATCH iw_connector_dispatch = {
    .NdkCloseConnector = iw_close_connector,
    .NdkQueryExtension = iw_query_extension,
    .NdkConnect = iw_connect,
    .NdkConnectWithSharedEndpoint = iw_connect_sep,
    .NdkCompleteConnect = iw_complete_connect,
    .NdkAccept = iw_accept,
    .NdkReject = iw_reject,
    .NdkGetConnectionData = iw_get_connection_data,
    .NdkGetLocalAddress = iw_conn_get_local,
    .NdkGetPeerAddress = iw_conn_get_peer,
    .NdkDisconnect = iw_disconnect,
    .NdkCompleteConnectEx = iw_complete_connect_ex,
    .NdkAcceptEx = iw_accept_ex,
};

static struct iw_connector *iw_conn_alloc(struct iw_adapter *ad)
{
    struct iw_connector *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    if (iw_progress_timer_init(ad->dev, &c->timer, iw_conn_timer_fired) < 0) {
        free(c);
        return NULL;
    }
    iw_obj_init(&c->obj, &iw_conn_ops, IW_OBJ_CONNECTOR, ad, &c->ndk.Header, &iw_connector_dispatch);
    c->poll.fd = -1;
    c->state = IW_CM_IDLE;
    c->work.fn = iw_conn_work;
    ndk_list_init(&c->work.link);
    ndk_list_init(&c->ep_link);
    pthread_mutex_lock(&ad->dev->lock);
    ndk_list_add_tail(&ad->dev->connectors, &c->link);
    pthread_mutex_unlock(&ad->dev->lock);
    return c;
}

NTSTATUS iw_create_connector(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_CONNECTOR **out)
{
    struct iw_connector *c;

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    c = iw_conn_alloc(to_iw_adapter(a));
    if (!c)
        return STATUS_INSUFFICIENT_RESOURCES;
    *out = &c->ndk;
    return STATUS_SUCCESS;
}

/* ---- data path entry points into the CM ---- */

static bool iw_obj_tryget(struct iw_obj *o)
{
    int r = atomic_load(&o->refs);
    while (r > 0)
        if (atomic_compare_exchange_weak(&o->refs, &r, r + 1))
            return true;
    return false;
}

static struct iw_connector *iw_qp_conn_get(struct iw_qp *qp)
{
    struct iw_connector *c;

    pthread_mutex_lock(&qp->lock);
    c = qp->conn;
    if (c && !iw_obj_tryget(&c->obj))
        c = NULL;
    pthread_mutex_unlock(&qp->lock);
    return c;
}

void iw_cm_connection_failed(struct iw_qp *qp, int err)
{
    struct iw_connector *c = iw_qp_conn_get(qp);

    if (!c)
        return;
    pthread_mutex_lock(&c->obj.dev->lock);
    if (!c->fail_err)
        c->fail_err = err;
    iw_conn_queue_locked(c, IW_CM_ACT_FAIL);
    pthread_mutex_unlock(&c->obj.dev->lock);
    iw_obj_put(&c->obj);
}

/* ====================================================================================
 * Listener
 * ==================================================================================== */

#define IW_ACCEPT_BACKOFF_MS 100

/* accept() failed for want of file descriptors (or memory): the connection stays in the kernel
 * backlog and the listening socket stays readable, so polling it would spin this thread. Stop
 * polling it for a while (its back-off timer resumes), and say so once per listener. Progress
 * thread, no lock held. */
static void iw_listener_backoff(struct iw_listener *l, int e)
{
    struct iw_device *dev = l->obj.dev;
    bool first;

    pthread_mutex_lock(&dev->lock);
    first = !l->backoff_logged;
    l->backoff_logged = true;
    if (l->listening && l->polled) {
        iw_progress_mod(dev, &l->poll, 0);
        l->backoff_until = iw_now_ms() + IW_ACCEPT_BACKOFF_MS;
        if (iw_progress_timer_arm(dev, &l->backoff_timer, l->backoff_until))
            iw_obj_get(&l->obj);
    }
    pthread_mutex_unlock(&dev->lock);
    iw_dev_log(dev, first ? NDK_LOG_WARNING : NDK_LOG_DEBUG,
               "LISTENER[%u] accept: %s; not accepting for %u ms (connections wait in the backlog)", l->obj.id,
               strerror(e), IW_ACCEPT_BACKOFF_MS);
}

/* Progress thread, no lock held: the back-off is over; poll the listening socket again. */
static void iw_listener_backoff_over(struct iw_timer *t, uint64_t now)
{
    struct iw_listener *l = ndk_container_of(t, struct iw_listener, backoff_timer);
    struct iw_device *dev = l->obj.dev;

    pthread_mutex_lock(&dev->lock);
    if (l->backoff_until && l->backoff_until <= now) {
        l->backoff_until = 0;
        if (l->listening && l->polled)
            iw_progress_mod(dev, &l->poll, EPOLLIN);
    }
    pthread_mutex_unlock(&dev->lock);
    iw_obj_put(&l->obj);                 /* the fired arming's reference */
}

static void iw_listener_poll(struct iw_pollable *p, uint32_t events)
{
    struct iw_listener *l = ndk_container_of(p, struct iw_listener, poll);
    struct iw_device *dev = l->obj.dev;

    (void)events;
    /* Bounded burst so one listener cannot starve the other sockets (style-anchors A5). */
    for (int i = 0; i < 64; i++) {
        SOCKADDR_INET peer;
        socklen_t plen = sizeof peer;
        int fd = accept4(l->poll.fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        int one = 1;

        if (fd < 0) {
            int e = errno;
            if (e == EINTR || e == ECONNABORTED)
                continue;
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                iw_listener_backoff(l, e);
                return;
            }
            if (e != EAGAIN && e != EWOULDBLOCK)
                iw_dwarn(l->obj.dev, "LISTENER[%u] accept: %s", l->obj.id, strerror(e));
            return;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct iw_connector *c = iw_conn_alloc(l->obj.adapter);
        if (!c) {
            close(fd);
            continue;
        }
        pthread_mutex_lock(&dev->lock);
        if (!l->listening || iw_obj_closing(&l->obj)) {
            pthread_mutex_unlock(&dev->lock);
            close(fd);
            iw_obj_abort_create(&c->obj);
            return;
        }
        /* An internal connector until its MPA Request arrives (§3.5: one event per request). */
        c->obj.handed_out = false;
        c->internal_ref = true;
        c->active = false;
        c->listener = l;
        iw_obj_set_ante(&c->obj, IW_CONN_ANTE_PARENT, &l->obj);
        c->ep = l->ep;
        iw_ep_get(c->ep);                /* §5.11.5: +1 per connector accepted through it */
        c->peer = peer;
        iw_sockname(fd, &c->local, false);
        iw_mpa_parser_init(&c->parser, IW_MPA_REQUEST, IW_MPA_MAX_PD_WIRE);
        ndk_list_add_tail(&l->pending, &c->ep_link);
        c->poll.fd = fd;
        c->poll.handler = iw_conn_poll;
        iw_cm_set_state(c, IW_CM_AWAIT_REQUEST);
        iw_timer_set_locked(c, c->obj.dev->prov->cfg.mpa_request_timeout_ms);
        iw_obj_get(&c->obj);             /* epoll registration */
        c->polled = true;
        if (iw_progress_add(dev, &c->poll, EPOLLIN) < 0) {
            c->polled = false;
            iw_obj_put(&c->obj);
            c->fail_err = -ENOMEM;
            iw_conn_queue_locked(c, IW_CM_ACT_KILL);
        }
        pthread_mutex_unlock(&dev->lock);
    }
}

/* Progress thread: closes the listening socket and drops the requests not yet delivered. */
static void iw_listener_kill_work(struct iw_work *w)
{
    struct iw_listener *l = ndk_container_of(w, struct iw_listener, kill_work);
    struct iw_device *dev = l->obj.dev;
    struct ndk_list *pos, *tmp;
    bool put_poll = false, put_timer = false;

    pthread_mutex_lock(&dev->lock);
    if (l->backoff_until) {
        l->backoff_until = 0;
        put_timer = iw_progress_timer_cancel(dev, &l->backoff_timer);
    }
    if (l->poll.fd >= 0) {
        if (l->polled) {
            iw_progress_del(dev, &l->poll);
            l->polled = false;
            put_poll = true;
        }
        close(l->poll.fd);
        l->poll.fd = -1;
    }
    if (l->ep) {
        l->ep->open = false;
        iw_ep_put(dev, l->ep);           /* §5.11.5: -1 when the listener is closed */
        l->ep = NULL;
    }
    ndk_list_del(&l->link);
    ndk_list_init(&l->link);
    /* Requests still in their MPA phase are refused: the peer sees its connection close. */
    ndk_list_for_each_safe(pos, tmp, &l->pending) {
        struct iw_connector *c = ndk_list_entry(pos, struct iw_connector, ep_link);
        iw_conn_queue_locked(c, IW_CM_ACT_KILL);
    }
    pthread_mutex_unlock(&dev->lock);
    if (put_poll)
        iw_obj_put(&l->obj);
    if (put_timer)
        iw_obj_put(&l->obj);
    iw_obj_put(&l->obj);                 /* the queuer's reference */
}

static void iw_listener_close_start(struct iw_obj *o)
{
    struct iw_listener *l = ndk_container_of(o, struct iw_listener, obj);

    /* §5.11.5: stop accepting the moment the close is requested. */
    pthread_mutex_lock(&o->dev->lock);
    l->listening = false;
    pthread_mutex_unlock(&o->dev->lock);
    iw_obj_get(o);
    if (!iw_progress_queue(o->dev, &l->kill_work))
        iw_obj_put(o);
}

static void iw_listener_destroy(struct iw_obj *o)
{
    struct iw_listener *l = ndk_container_of(o, struct iw_listener, obj);

    if (l->poll.fd >= 0)
        close(l->poll.fd);
    iw_progress_timer_fini(o->dev, &l->backoff_timer);
    free(l);
}

static const struct iw_obj_ops iw_listener_ops = {
    .name = "LISTENER", .close_start = iw_listener_close_start, .destroy = iw_listener_destroy,
};

static NTSTATUS iw_close_listener(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_listener((NDK_LISTENER *)h)->obj, cb, ctx);
}

static NTSTATUS iw_listen(NDK_LISTENER *nl, CONST PSOCKADDR addr, ULONG len, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct iw_listener *l = to_iw_listener(nl);
    struct iw_device *dev = l->obj.dev;
    SOCKADDR_INET a;
    int err, fd;
    NTSTATUS st;

    (void)cb;
    (void)ctx;
    if ((err = iw_sa_from_user(addr, len, &a)) < 0)
        return err == -EINVAL ? STATUS_INVALID_PARAMETER : STATUS_INVALID_ADDRESS;
    if (!iw_device_has_address(dev, (const struct sockaddr *)&a))
        return STATUS_INVALID_ADDRESS;
    fd = iw_socket(a.si_family, IW_SOCK_LISTEN);
    if (fd < 0)
        return ndk_status_from_errno(fd);
    pthread_mutex_lock(&dev->lock);
    if (l->listening || l->ep) {
        st = STATUS_INVALID_DEVICE_REQUEST;
        goto fail;
    }
    err = iw_ep_acquire(dev, &a, IW_EP_LISTENER, fd, &l->ep);
    if (err) {
        st = ndk_status_from_errno(err);
        goto fail;
    }
    /* No backlog parameter (§8.35): a large kernel backlog; unaccepted requests wait there. */
    if (listen(fd, 4096) < 0) {
        st = ndk_status_from_errno(errno == EADDRINUSE ? -EADDRINUSE : -errno);
        iw_ep_put(dev, l->ep);
        l->ep = NULL;
        goto fail;
    }
    l->ep->open = true;
    l->local = l->ep->addr;
    l->poll.fd = fd;
    l->poll.handler = iw_listener_poll;
    l->listening = true;
    ndk_list_add_tail(&dev->listeners, &l->link);
    iw_obj_get(&l->obj);                 /* epoll registration */
    l->polled = true;
    if (iw_progress_add(dev, &l->poll, EPOLLIN) < 0) {
        l->polled = false;
        iw_obj_put(&l->obj);
        iw_derr(l->obj.dev, "LISTENER[%u] epoll_ctl: %s", l->obj.id, strerror(errno));
    }
    pthread_mutex_unlock(&dev->lock);
    return STATUS_SUCCESS;
fail:
    pthread_mutex_unlock(&dev->lock);
    close(fd);
    return st;
}

static NTSTATUS iw_listener_get_local(NDK_LISTENER *nl, PSOCKADDR addr, ULONG *len)
{
    struct iw_listener *l = to_iw_listener(nl);
    SOCKADDR_INET a;

    pthread_mutex_lock(&l->obj.dev->lock);
    a = l->local;
    pthread_mutex_unlock(&l->obj.dev->lock);
    return iw_sa_copy_out(&a, addr, len);
}

static VOID iw_control_connect_events(NDK_LISTENER *nl, BOOLEAN pause)
{
    struct iw_listener *l = to_iw_listener(nl);

    pthread_mutex_lock(&l->obj.dev->lock);
    l->paused = pause != 0;
    pthread_mutex_unlock(&l->obj.dev->lock);
}

static const NDK_LISTENER_DISPATCH iw_listener_dispatch = {
    .NdkCloseListener = iw_close_listener,
    .NdkQueryExtension = iw_query_extension,
    .NdkListen = iw_listen,
    .NdkGetLocalAddress = iw_listener_get_local,
    .NdkControlConnectEvents = iw_control_connect_events,
};

NTSTATUS iw_create_listener(NDK_ADAPTER *a, NDK_FN_CONNECT_EVENT_CALLBACK ev, PVOID evctx,
                            NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_LISTENER **out)
{
    struct iw_adapter *ad = to_iw_adapter(a);
    struct iw_listener *l;

    (void)cb;
    (void)ctx;
    if (!out || !ev)
        return STATUS_INVALID_PARAMETER;
    l = calloc(1, sizeof(*l));
    if (!l)
        return STATUS_INSUFFICIENT_RESOURCES;
    if (iw_progress_timer_init(ad->dev, &l->backoff_timer, iw_listener_backoff_over) < 0) {
        free(l);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    iw_obj_init(&l->obj, &iw_listener_ops, IW_OBJ_LISTENER, ad, &l->ndk.Header, &iw_listener_dispatch);
    l->poll.fd = -1;
    l->connect_event = ev;
    l->connect_event_ctx = evctx;
    ndk_list_init(&l->link);
    ndk_list_init(&l->pending);
    l->kill_work.fn = iw_listener_kill_work;
    ndk_list_init(&l->kill_work.link);
    *out = &l->ndk;
    return STATUS_SUCCESS;
}

/* ====================================================================================
 * Shared endpoint
 * ==================================================================================== */

static NTSTATUS iw_sep_get_local(NDK_SHARED_ENDPOINT *ns, PSOCKADDR addr, ULONG *len)
{
    struct iw_shared_endpoint *s = to_iw_shared_endpoint(ns);
    return iw_sa_copy_out(&s->local, addr, len);
}

static NTSTATUS iw_close_sep(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_shared_endpoint((NDK_SHARED_ENDPOINT *)h)->obj, cb, ctx);
}

static void iw_sep_close_start(struct iw_obj *o)
{
    struct iw_shared_endpoint *s = ndk_container_of(o, struct iw_shared_endpoint, obj);

    pthread_mutex_lock(&o->dev->lock);
    if (s->ep)
        s->ep->open = false;
    pthread_mutex_unlock(&o->dev->lock);
}

static void iw_sep_destroy(struct iw_obj *o)
{
    struct iw_shared_endpoint *s = ndk_container_of(o, struct iw_shared_endpoint, obj);

    pthread_mutex_lock(&o->dev->lock);
    if (s->ep)
        iw_ep_put(o->dev, s->ep);        /* §5.11.5: -1 when the shared endpoint is closed */
    pthread_mutex_unlock(&o->dev->lock);
    if (s->fd >= 0)
        close(s->fd);
    free(s);
}

static const struct iw_obj_ops iw_sep_ops = {
    .name = "SHARED_ENDPOINT", .close_start = iw_sep_close_start, .destroy = iw_sep_destroy,
};

static const NDK_SHARED_ENDPOINT_DISPATCH iw_sep_dispatch = {
    .NdkCloseSharedEndpoint = iw_close_sep,
    .NdkQueryExtension = iw_query_extension,
    .NdkGetLocalAddress = iw_sep_get_local,
};

NTSTATUS iw_create_shared_endpoint(NDK_ADAPTER *a, CONST PSOCKADDR addr, ULONG len, NDK_FN_CREATE_COMPLETION cb,
                                   PVOID ctx, NDK_SHARED_ENDPOINT **out)
{
    struct iw_adapter *ad = to_iw_adapter(a);
    struct iw_device *dev = ad->dev;
    struct iw_shared_endpoint *s;
    SOCKADDR_INET sa;
    int err, fd;

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    if ((err = iw_sa_from_user(addr, len, &sa)) < 0)
        return err == -EINVAL ? STATUS_INVALID_PARAMETER : STATUS_INVALID_ADDRESS;
    if (!iw_device_has_address(dev, (const struct sockaddr *)&sa))
        return STATUS_INVALID_ADDRESS;
    /* A bound (not listening) placeholder reserves the port in the OS; connections through
     * the endpoint bind the same address with SO_REUSEPORT (iw_socket). */
    fd = iw_socket(sa.si_family, IW_SOCK_SEP_ANCHOR);
    if (fd < 0)
        return ndk_status_from_errno(fd);
    s = calloc(1, sizeof(*s));
    if (!s) {
        close(fd);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    pthread_mutex_lock(&dev->lock);
    err = iw_ep_acquire(dev, &sa, IW_EP_SHARED, fd, &s->ep);
    if (!err) {
        int one = 1;
        s->ep->open = true;
        /* Only now, after the exclusive bind: our own connections may join the port. */
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) {
            err = -errno;
            iw_ep_put(dev, s->ep);
        }
    }
    pthread_mutex_unlock(&dev->lock);
    if (err) {
        close(fd);
        free(s);
        return ndk_status_from_errno(err);
    }
    iw_obj_init(&s->obj, &iw_sep_ops, IW_OBJ_SHARED_ENDPOINT, ad, &s->ndk.Header, &iw_sep_dispatch);
    s->local = s->ep->addr;
    s->fd = fd;
    *out = &s->ndk;
    return STATUS_SUCCESS;
}

/* ====================================================================================
 * OIDs (§6.7, §6.8): TCP-mapped pairs, even index = ND addressing, odd = TCP (identical here
 * because the ND port is the TCP port).
 * ==================================================================================== */

NDIS_STATUS iw_cm_oid_connections(struct iw_device *dev, NDK_OID_REQUEST *req)
{
    NDIS_NDK_CONNECTIONS *r = req->InformationBuffer;
    struct ndk_list *pos;
    ULONG n = 0, i = 0;
    size_t need;

    pthread_mutex_lock(&dev->lock);
    /* §8.40 decision: only established connections are "active". */
    ndk_list_for_each(pos, &dev->connectors) {
        struct iw_connector *c = ndk_list_entry(pos, struct iw_connector, link);
        if (c->state == IW_CM_ESTABLISHED || c->state == IW_CM_DISCONNECTING)
            n++;
    }
    need = NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(2 * n);
    if (!r || req->InformationBufferLength < need) {
        pthread_mutex_unlock(&dev->lock);
        req->BytesNeeded = (ULONG)need;
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
    memset(r, 0, need);
    r->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
    r->Header.Revision = NDIS_NDK_CONNECTIONS_REVISION_1;
    r->Header.Size = (USHORT)(need > MAXUSHORT ? MAXUSHORT : need);
    r->NDConnectionsMappedtoTCPConnections = TRUE;
    /* Connections[] is declared [1] (the Windows layout): index through a plain pointer so
     * -fsanitize=bounds does not flag the variable-length tail. */
    NDIS_NDK_CONNECTION_ENTRY *ents =
        (NDIS_NDK_CONNECTION_ENTRY *)((uint8_t *)r + offsetof(NDIS_NDK_CONNECTIONS, Connections));
    ndk_list_for_each(pos, &dev->connectors) {
        struct iw_connector *c = ndk_list_entry(pos, struct iw_connector, link);
        if (c->state != IW_CM_ESTABLISHED && c->state != IW_CM_DISCONNECTING)
            continue;
        NDIS_NDK_CONNECTION_ENTRY *nd = &ents[i++], *tcp = &ents[i++];
        nd->Local = c->local;
        nd->Remote = c->peer;
        nd->UserModeOwner = FALSE;       /* NDKPI consumer (our consumers are all "kernel") */
        nd->OwnerPid = (ULONG)getpid();
        tcp->Local = c->local;
        tcp->Remote = c->peer;
    }
    r->Count = i;
    pthread_mutex_unlock(&dev->lock);
    req->BytesWritten = (ULONG)need;
    return NDIS_STATUS_SUCCESS;
}

NDIS_STATUS iw_cm_oid_endpoints(struct iw_device *dev, NDK_OID_REQUEST *req)
{
    NDIS_NDK_LOCAL_ENDPOINTS *r = req->InformationBuffer;
    struct ndk_list *pos;
    ULONG n = 0, i = 0;
    size_t need;

    pthread_mutex_lock(&dev->lock);
    ndk_list_for_each(pos, &dev->endpoints) {
        struct iw_endpoint *e = ndk_list_entry(pos, struct iw_endpoint, link);
        if (e->open && (e->kind == IW_EP_LISTENER || e->kind == IW_EP_SHARED))
            n++;
    }
    need = NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(2 * n);
    if (!r || req->InformationBufferLength < need) {
        pthread_mutex_unlock(&dev->lock);
        req->BytesNeeded = (ULONG)need;
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
    memset(r, 0, need);
    r->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
    r->Header.Revision = NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1;
    r->Header.Size = (USHORT)(need > MAXUSHORT ? MAXUSHORT : need);
    r->NDLocalEndpointsMappedtoTCPLocalEndpoints = TRUE;
    NDIS_NDK_LOCAL_ENDPOINT_ENTRY *ents =
        (NDIS_NDK_LOCAL_ENDPOINT_ENTRY *)((uint8_t *)r + offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints));
    ndk_list_for_each(pos, &dev->endpoints) {
        struct iw_endpoint *e = ndk_list_entry(pos, struct iw_endpoint, link);
        if (!e->open || (e->kind != IW_EP_LISTENER && e->kind != IW_EP_SHARED))
            continue;
        NDIS_NDK_LOCAL_ENDPOINT_ENTRY *nd = &ents[i++], *tcp = &ents[i++];
        nd->Local = e->addr;
        nd->UserModeOwner = FALSE;
        nd->Listener = e->kind == IW_EP_LISTENER;
        nd->OwnerPid = (ULONG)getpid();
        tcp->Local = e->addr;
    }
    r->Count = i;
    pthread_mutex_unlock(&dev->lock);
    req->BytesWritten = (ULONG)need;
    return NDIS_STATUS_SUCCESS;
}
