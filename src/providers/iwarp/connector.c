/* connector.c - the connector object (§2.10, §2.11, §3.5-§3.7, §5.11): the consumer's calls
 * (NdkConnect, NdkConnectWithSharedEndpoint, NdkCompleteConnect, NdkAccept, NdkReject,
 * NdkDisconnect, the getters) and the passive connectors a listener accepts. Consumer calls
 * only validate, record what they want under dev->lock and queue the connector's work; the
 * connection manager (cm.c) does the socket I/O and the transitions on the progress thread.
 *
 * Talks to: cm.c (through cm.h: the state machine, deadlines, MPA frames, handlers), endpoint.c
 * (endpoints and sockets), qp.c (the QP tie, its flush), obj.c, progress.c (the timer).
 * Locking: dev->lock (the CM lock) protects every connector's state; qp->lock is taken inside
 * it. */
#include "cm.h"
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static void iw_conn_close_start(struct iw_obj *o)
{
    struct iw_connector *c = ndk_container_of(o, struct iw_connector, obj);

    pthread_mutex_lock(&o->dev->lock);
    iw_cm_queue_locked(c, IW_CM_ACT_KILL);
    pthread_mutex_unlock(&o->dev->lock);
}

static void iw_conn_destroy(struct iw_obj *o)
{
    struct iw_connector *c = ndk_container_of(o, struct iw_connector, obj);
    struct iw_device *dev = o->dev;

    pthread_mutex_lock(&dev->lock);
    ndk_list_del(&c->link);
    ndk_list_del(&c->ep_link);
    iw_connector_unindex_locked(c);
    if (c->ep)
        iw_ep_put(dev, c->ep);     /* §5.11.5: -1 when the connector is closed */
    pthread_mutex_unlock(&dev->lock);
    if (c->qp) {
        iw_lock_take(&c->qp->lock);
        if (c->qp->conn == c)
            c->qp->conn = NULL;
        iw_lock_give(&c->qp->lock);
    }
    if (c->poll.fd >= 0)           /* never registered (failed before connect) */
        close(c->poll.fd);
    iw_wire_put(c->wire);          /* the QP may hold the tap on */
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

static struct iw_hnode **iw_conn_bucket(struct iw_device *dev, const SOCKADDR_INET *local, const SOCKADDR_INET *peer)
{
    return &dev->conn_hash[(iw_sa_hash(local) ^ iw_sa_hash(peer) * 31u) % IW_CONN_BUCKETS];
}

void iw_connector_index_locked(struct iw_connector *c)
{
    iw_hnode_del(&c->tuple);
    iw_hnode_add(iw_conn_bucket(c->obj.dev, &c->local, &c->peer), &c->tuple);
}

void iw_connector_unindex_locked(struct iw_connector *c)
{
    iw_hnode_del(&c->tuple);
}

struct iw_connector *iw_connector_find_locked(struct iw_device *dev, const SOCKADDR_INET *local,
                                              const SOCKADDR_INET *peer, const struct iw_connector *self)
{
    for (struct iw_hnode *n = *iw_conn_bucket(dev, local, peer); n; n = n->next) {
        struct iw_connector *o = ndk_container_of(n, struct iw_connector, tuple);
        if (o != self && o->state != IW_CM_CLOSED && iw_sa_equal(&o->local, local) && iw_sa_equal(&o->peer, peer))
            return o;
    }
    return NULL;
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
    iw_lock_take(&qp->lock);
    if (qp->conn || qp->state != IW_QP_IDLE)
        err = -EINVAL;
    else {
        qp->conn = c;
        iw_qp_modify_locked(qp, IW_QP_CONNECTING);
    }
    iw_lock_give(&qp->lock);
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
    iw_lock_take(&qp->lock);
    if (qp->conn == c) {
        qp->conn = NULL;
        iw_qp_modify_locked(qp, IW_QP_IDLE);
    }
    iw_lock_give(&qp->lock);
}

/* Common tail of NdkConnect / NdkConnectWithSharedEndpoint: fd is bound; start connect().
 * chosen: connect() chooses the port (iw_ep_connect_bind) and c->ep is recorded here;
 * STATUS_TOO_MANY_ADDRESSES when it found none. dev->lock held. */
static NTSTATUS iw_conn_start(struct iw_connector *c, int fd, const SOCKADDR_INET *dst, bool chosen, ULONG ird,
                              ULONG ord, const void *pd, ULONG pdlen, NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
    struct iw_device *dev = c->obj.dev;
    int err;

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
        if (err == -EADDRNOTAVAIL)
            err = chosen ? -ERANGE : -EEXIST;
        return ndk_status_from_errno(err);
    }
    if (chosen) {
        SOCKADDR_INET local;
        memset(&local, 0, sizeof local);
        iw_ep_sockname(fd, &local, false);
        err = iw_sa_port(&local) ? iw_ep_acquire_chosen(dev, &local, &c->ep) : -EIO;
        if (err)
            return ndk_status_from_errno(err);
        c->local = local;
    }
    /* Built before the state moves: a failure leaves the connector IDLE, as it found it. */
    err = iw_cm_build_request(c);
    if (err < 0)
        return ndk_status_from_errno(err);
    c->active = true;
    c->poll.fd = fd;
    c->poll.handler = iw_cm_poll;
    iw_cm_set_state(c, IW_CM_TCP_CONNECTING);
    iw_cm_req_store(c, &c->connect_cb, &c->connect_ctx, cb, ctx);
    iw_obj_get(&c->obj);                 /* the epoll registration's reference */
    c->polled = true;
    iw_cm_timer_set_locked(c, c->obj.dev->prov->cfg.connect_timeout_ms);
    if (iw_progress_add(dev, &c->poll, EPOLLOUT) < 0) {
        /* fall back to the progress thread noticing through the timer; should not happen */
        iw_derr(c->obj.dev, "CONN[%u] epoll_ctl: %s", c->obj.id, strerror(errno));
        c->polled = false;
        iw_obj_put(&c->obj);
        iw_cm_queue_locked(c, IW_CM_ACT_FAIL);
        c->fail_err = -ENOMEM;
    }
    return STATUS_PENDING;
}

/* Opens the connection's socket and takes dev->lock for a connector that is still IDLE (one
 * connect per connector). On failure nothing is held and no socket is left open. */
static NTSTATUS iw_conn_begin(struct iw_connector *c, int family, enum iw_sock_use use, int *fd)
{
    *fd = iw_ep_socket(family, use);
    if (*fd < 0)
        return ndk_status_from_errno(*fd);
    pthread_mutex_lock(&c->obj.dev->lock);
    if (c->state != IW_CM_IDLE) {
        pthread_mutex_unlock(&c->obj.dev->lock);
        close(*fd);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    return STATUS_SUCCESS;
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
        return ndk_status_from_errno(err);
    if (s.si_family != d.si_family || iw_sa_is_wildcard(&d) || iw_sa_port(&d) == 0)
        return STATUS_INVALID_ADDRESS;
    if (!iw_ep_is_local(dev, (const struct sockaddr *)&s))
        return STATUS_INVALID_ADDRESS;
    if ((st = iw_conn_begin(c, s.si_family, IW_SOCK_CONNECT, &fd)) != STATUS_SUCCESS)
        return st;
    /* §5.11.5: duplicate 4-tuple -> STATUS_ADDRESS_ALREADY_EXISTS. */
    if (iw_sa_port(&s) && iw_connector_find_locked(dev, &s, &d, c)) {
        st = STATUS_ADDRESS_ALREADY_EXISTS;
        goto fail;
    }
    err = iw_conn_attach_qp(c, q);
    if (err) {
        st = ndk_status_from_errno(err);
        goto fail;
    }
    /* Port 0: connect() chooses from 49152-65535 (§5.11.5). A port already used toward another
     * peer, or sitting in TIME_WAIT toward one, serves again: only the 4-tuple must be new. When
     * no port of the range is free toward this peer the connect fails with
     * STATUS_TOO_MANY_ADDRESSES, as the reference says. */
    if (!iw_sa_port(&s)) {
        err = iw_ep_connect_bind(fd, &s);
        if (err != -ENOPROTOOPT) {       /* else an older kernel: probe ports ourselves, below */
            st = err ? ndk_status_from_errno(err) : iw_conn_start(c, fd, &d, true, ird, ord, pd, pdlen, cb, ctx);
            if (st == STATUS_PENDING) {
                iw_connector_index_locked(c);
                pthread_mutex_unlock(&dev->lock);
                return STATUS_PENDING;
            }
            if (c->ep) {
                iw_ep_put(dev, c->ep);
                c->ep = NULL;
            }
            goto fail_qp;
        }
    }
    for (int attempt = 0;; attempt++) {
        err = iw_ep_acquire(dev, &s, IW_EP_CONNECT, fd, &c->ep);
        if (err) {
            st = ndk_status_from_errno(err);
            goto fail_qp;
        }
        c->local = c->ep->addr;
        st = iw_conn_start(c, fd, &d, false, ird, ord, pd, pdlen, cb, ctx);
        if (st == STATUS_PENDING)
            break;
        iw_ep_put(dev, c->ep);
        c->ep = NULL;
        /* A port of our choosing whose 4-tuple to d is still taken (TIME_WAIT, or a socket
         * someone shares the port with): choose another one (§5.11.5). */
        if (st != STATUS_ADDRESS_ALREADY_EXISTS || iw_sa_port(&s) || attempt == 15)
            goto fail_qp;
        close(fd);
        fd = iw_ep_socket(s.si_family, IW_SOCK_CONNECT);
        if (fd < 0) {
            st = ndk_status_from_errno(fd);
            iw_conn_detach_qp(c);
            pthread_mutex_unlock(&dev->lock);
            return st;
        }
    }
    iw_connector_index_locked(c);
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
    int err, fd;
    NTSTATUS st;

    if (!cb || !ns || pdlen > IW_MAX_PRIVATE_DATA || (pdlen && !pd))
        return STATUS_INVALID_PARAMETER;
    sep = to_iw_shared_endpoint(ns);
    if ((err = iw_sa_from_user(dst, dstlen, &d)) < 0)
        return ndk_status_from_errno(err);
    if (d.si_family != sep->local.si_family || iw_sa_is_wildcard(&d) || iw_sa_port(&d) == 0)
        return STATUS_INVALID_ADDRESS;
    if ((st = iw_conn_begin(c, d.si_family, IW_SOCK_SEP_CONN, &fd)) != STATUS_SUCCESS)
        return st;
    /* §2.11: this endpoint already has a connection to that destination. */
    if (iw_connector_find_locked(dev, &sep->local, &d, c)) {
        st = STATUS_ADDRESS_ALREADY_EXISTS;
        goto fail;
    }
    if (bind(fd, (const struct sockaddr *)&sep->local, iw_sa_len((const struct sockaddr *)&sep->local)) < 0) {
        st = ndk_status_from_errno(-errno);
        goto fail;
    }
    err = iw_conn_attach_qp(c, q);
    if (err) {
        st = ndk_status_from_errno(err);
        goto fail;
    }
    c->local = sep->local;
    st = iw_conn_start(c, fd, &d, false, ird, ord, pd, pdlen, cb, ctx);
    if (st != STATUS_PENDING) {
        iw_conn_detach_qp(c);
        goto fail;
    }
    /* §5.11.5: +1 on the shared endpoint per connector through it. */
    c->ep = sep->ep;
    iw_ep_get(c->ep);
    ndk_list_add_tail(&sep->ep->conns, &c->ep_link);
    iw_connector_index_locked(c);
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
        iw_cm_req_store(c, &c->complete_cb, &c->complete_ctx, cb, ctx);
        if (c->p2p && c->rtr) {
            struct iw_fpdu_hdr h;
            memset(&h, 0, sizeof h);
            h.last = true;
            if (c->rtr == IW_MPA_RTR_WRITE) {
                /* zero-length Write, STag 1 (Chelsio drops STag 0; RFC 6581 RTR) */
                h.opcode = IW_OP_WRITE;
                h.stag = 1;
                c->establish_after_tx = true;
            } else if (c->rtr == IW_MPA_RTR_READ) {
                h.opcode = IW_OP_READ_REQ;
                h.msn = 1;
                h.rr.src_stag = 1;
                iw_cm_set_state(c, IW_CM_AWAIT_READ_RESP);
                iw_cm_timer_set_locked(c, c->obj.dev->prov->cfg.connect_timeout_ms);
            } else {
                h.opcode = IW_OP_SEND;   /* zero-length Send: only if it was the sole choice */
                h.msn = 1;
                c->establish_after_tx = true;
            }
            if (iw_cm_build_fpdu(c, &h) < 0) {
                c->fail_err = -EIO;
                iw_cm_queue_locked(c, IW_CM_ACT_FAIL);
            } else {
                iw_cm_queue_locked(c, IW_CM_ACT_TX);
            }
        } else {
            iw_cm_queue_locked(c, IW_CM_ACT_ESTABLISH);
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
        /* RFC 6581: pick Write if offered, else Read, else Write (as siw). */
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
    if (iw_cm_build_reply(c, false, pd, (uint16_t)pdlen) < 0) {
        iw_conn_detach_qp(c);
        st = STATUS_INVALID_PARAMETER;
        goto out;
    }
    iw_cm_req_store(c, &c->accept_cb, &c->accept_ctx, cb, ctx);
    iw_cm_set_state(c, IW_CM_AWAIT_RTR);
    if (c->p2p) {
        iw_cm_timer_set_locked(c, c->obj.dev->prov->cfg.accept_timeout_ms);
    } else {
        /* RFC 5044 §7.1.2 without P2P: full operation once our Reply is out; the data path
         * holds its first FPDU until the initiator's arrives (params.tx_wait_first_rx). */
        c->establish_after_tx = true;
    }
    iw_cm_queue_locked(c, IW_CM_ACT_TX);
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
        if (iw_cm_build_reply(c, true, pd, (uint16_t)pdlen) < 0) {
            st = STATUS_INVALID_PARAMETER;
        } else {
            iw_cm_set_state(c, IW_CM_REJECTING);
            iw_cm_queue_locked(c, IW_CM_ACT_TX);
        }
    } else if (c->state == IW_CM_REPLY_RECEIVED) {
        /* Active, after the peer accepted: there is no MPA message for this; close the
         * connection, so the peer's Accept fails with STATUS_CONNECTION_ABORTED (§5.11.1). */
        c->local_disconnect = true;
        c->fail_err = -ECONNABORTED;
        iw_cm_queue_locked(c, IW_CM_ACT_FAIL);
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
        iw_lock_take(&c->qp->lock);
        if (c->qp->state == IW_QP_RTS)
            iw_qp_modify_locked(c->qp, IW_QP_CLOSING);   /* no new TX from here on */
        iw_lock_give(&c->qp->lock);
        iw_cm_req_store(c, &c->disconnect_cb, &c->disconnect_ctx, cb, ctx);
        iw_cm_queue_locked(c, IW_CM_ACT_DISCONNECT);
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
        /* CLOSED, but the progress thread may not have stopped the engines yet. */
        iw_qp_dma_stop(flush);
        iw_lock_take(&flush->lock);
        iw_qp_flush_locked(flush);
        iw_lock_give(&flush->lock);
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
    if (iw_progress_timer_init(ad->dev, &c->timer, iw_cm_timer_fired) < 0) {
        free(c);
        return NULL;
    }
    iw_obj_init(&c->obj, &iw_conn_ops, IW_OBJ_CONNECTOR, ad, &c->ndk.Header, &iw_connector_dispatch);
    c->poll.fd = -1;
    c->state = IW_CM_IDLE;
    c->work.fn = iw_cm_work;
    ndk_list_init(&c->work.link);
    ndk_list_init(&c->ep_link);
    pthread_mutex_lock(&ad->dev->lock);
    ndk_list_add_tail(&ad->dev->connectors, &c->link);
    struct ndk_sv_rec *r = iw_sv_desc(&c->obj);
    if (r) {                                 /* IDLE, nothing else known yet (dev->lock) */
        ndk_sv_begin(r);
        iw_sv_set_state(r->u.conn.state, iw_cm_state_name[c->state]);
        ndk_sv_end(r);
    }
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

/* ---- the passive side's start (listener.c hands over each accepted socket) ---- */

int iw_connector_accept_request(struct iw_listener *l, int fd, const SOCKADDR_INET *peer)
{
    struct iw_device *dev = l->obj.dev;
    struct iw_connector *c = iw_conn_alloc(l->obj.adapter);
    if (!c) {
        close(fd);
        return -ENOMEM;
    }
    pthread_mutex_lock(&dev->lock);
    if (!l->listening || iw_obj_closing(&l->obj)) {
        pthread_mutex_unlock(&dev->lock);
        close(fd);
        iw_obj_abort_create(&c->obj);
        return -ESHUTDOWN;
    }
    /* An internal connector until its MPA Request arrives (§3.5: one event per request). */
    c->obj.handed_out = false;
    c->internal_ref = true;
    c->active = false;
    c->listener = l;
    iw_obj_set_ante(&c->obj, IW_CONN_ANTE_PARENT, &l->obj);
    c->ep = l->ep;
    iw_ep_get(c->ep);                /* §5.11.5: +1 per connector accepted through it */
    c->peer = *peer;
    iw_ep_sockname(fd, &c->local, false);
    iw_connector_index_locked(c);
    iw_mpa_parser_init(&c->parser, IW_MPA_REQUEST, IW_MPA_MAX_PD_WIRE);
    ndk_list_add_tail(&l->pending, &c->ep_link);
    c->poll.fd = fd;
    c->poll.handler = iw_cm_poll;
    c->wire = iw_wire_attach(dev->prov, fd, false);   /* capture / wire faults from the SYN on */
    iw_cm_set_state(c, IW_CM_AWAIT_REQUEST);
    iw_cm_timer_set_locked(c, c->obj.dev->prov->cfg.mpa_request_timeout_ms);
    iw_obj_get(&c->obj);             /* epoll registration */
    c->polled = true;
    if (iw_progress_add(dev, &c->poll, EPOLLIN) < 0) {
        c->polled = false;
        iw_obj_put(&c->obj);
        c->fail_err = -ENOMEM;
        iw_cm_queue_locked(c, IW_CM_ACT_KILL);
    }
    pthread_mutex_unlock(&dev->lock);
    return 0;
}
