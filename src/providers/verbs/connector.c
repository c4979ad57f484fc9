/* connector.c - connectors (§2.10, §5.11, map §1.7): one rdma_cm id each on the device's event
 * channel, driving a self-managed QP (map D1). The state machine is explicit (vb_connector_set):
 *
 *   active:  IDLE -> RESOLVING (addr, route) -> CONNECTING (rdma_connect) -> CONNECTED
 *            (IB: CONNECT_RESPONSE; iWARP: ESTABLISHED) -> ESTABLISHED (NdkCompleteConnect:
 *            IB RTR/RTS + rdma_establish)
 *   passive: REQUEST (CONNECT_REQUEST) -> ACCEPTING (RTR/RTS on IB, rdma_accept) -> ESTABLISHED
 *   both:    ESTABLISHED -> DISCONNECTING (rdma_disconnect) -> DISCONNECTED; any -> FAILED
 *
 * Context: every function here except the NDK entry points runs on the progress thread. Job of
 * dev->lock: the state and the fields marked in verbs.h. Callbacks are called after unlocking. */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define B(s) (1u << (s))
static const uint32_t vb_connector_next[VB_C_NSTATES] = {
    [VB_C_IDLE] = B(VB_C_RESOLVING) | B(VB_C_FAILED),
    [VB_C_RESOLVING] = B(VB_C_CONNECTING) | B(VB_C_FAILED),
    [VB_C_CONNECTING] = B(VB_C_CONNECTED) | B(VB_C_FAILED),
    [VB_C_CONNECTED] = B(VB_C_ESTABLISHED) | B(VB_C_DISCONNECTED) | B(VB_C_FAILED),
    [VB_C_REQUEST] = B(VB_C_ACCEPTING) | B(VB_C_DISCONNECTED) | B(VB_C_FAILED),
    [VB_C_ACCEPTING] = B(VB_C_ESTABLISHED) | B(VB_C_FAILED),
    [VB_C_ESTABLISHED] = B(VB_C_DISCONNECTING) | B(VB_C_DISCONNECTED) | B(VB_C_FAILED),
    [VB_C_DISCONNECTING] = B(VB_C_DISCONNECTED) | B(VB_C_FAILED),
    [VB_C_DISCONNECTED] = B(VB_C_FAILED),
    [VB_C_FAILED] = B(VB_C_FAILED),
};
#undef B

const char *vb_cstate_name(enum vb_cstate s)
{
    static const char *const n[VB_C_NSTATES] = { "IDLE", "RESOLVING", "CONNECTING", "CONNECTED", "REQUEST",
                                                 "ACCEPTING", "ESTABLISHED", "DISCONNECTING", "DISCONNECTED",
                                                 "FAILED" };
    return (unsigned)s < VB_C_NSTATES ? n[s] : "?";
}

/* dev->lock held (or the connector not yet shared): the connector's system view record, and on
 * establishment its QP's (under the QP's sq_lock, the lock of its descriptive fields). */
static void vb_connector_sv(struct vb_connector *c)
{
    struct ndk_sv_rec *r = c->obj.sv;
    bool addrs = c->id && c->state != VB_C_IDLE && c->state != VB_C_RESOLVING && c->state != VB_C_FAILED;

    if (!r)
        return;
    ndk_sv_begin(r);
    vb_sv_name(r->u.conn.state, vb_cstate_name(c->state));
    if (addrs) {
        vb_sv_addr(&r->u.conn.local, rdma_get_local_addr(c->id));
        vb_sv_addr(&r->u.conn.remote, rdma_get_peer_addr(c->id));
    }
    r->u.conn.qp = c->qp ? vb_sv_id(c->qp->obj.sv) : 0;
    r->u.conn.ird = c->ird;
    r->u.conn.ord = c->ord;
    ndk_sv_end(r);
    struct ndk_sv_rec *q = c->qp ? c->qp->obj.sv : NULL;
    if (!q || c->state != VB_C_ESTABLISHED)
        return;
    pthread_mutex_lock(&c->qp->sq_lock);
    ndk_sv_begin(q);
    vb_sv_name(q->u.qp.state, "RTS");
    vb_sv_addr(&q->u.qp.local, rdma_get_local_addr(c->id));
    vb_sv_addr(&q->u.qp.remote, rdma_get_peer_addr(c->id));
    q->u.qp.ird = c->ird;
    q->u.qp.ord = c->ord;
    q->u.qp.connector = vb_sv_id(r);
    ndk_sv_end(q);
    pthread_mutex_unlock(&c->qp->sq_lock);
}

/* dev->lock held. false (and a log line) for a transition the machine does not define. */
static bool vb_connector_set(struct vb_connector *c, enum vb_cstate to)
{
    if (!(vb_connector_next[c->state] & (1u << to))) {
        vb_warn(c->obj.dev, "connector: no transition %s -> %s", vb_cstate_name(c->state), vb_cstate_name(to));
        return false;
    }
    c->state = to;
    vb_connector_sv(c);
    return true;
}

/* dev->lock held: takes the pending request's completion out for calling after unlock. */
static struct vb_call vb_connector_take_req(struct vb_connector *c, NTSTATUS st)
{
    struct vb_call r = c->req;

    r.status = st;
    if (!c->req_pending)
        r.fn = NULL;
    c->req_pending = false;
    c->req.fn = NULL;
    return r;
}

static void vb_call_now(struct vb_call r)
{
    if (r.fn)
        r.fn(r.ctx, r.status);
}

/* IB/RoCE CM messages carry private data in fixed-size fields, zero-padded (map §1.7 "RDS"): an
 * NDK consumer must see the length its peer sent, so our side frames it as VB_PD_TAG, length,
 * bytes. Data without the frame (a plain rdma_cm peer) is passed on as the transport gave it. */
#define VB_PD_TAG 0x4e
static ULONG vb_pd_frame(struct vb_connector *c, uint8_t *out, const void *pd, ULONG len)
{
    if (c->obj.dev->iwarp) {
        memcpy(out, pd, len);
        return len;
    }
    out[0] = VB_PD_TAG;
    out[1] = (uint8_t)len;
    memcpy(out + 2, pd, len);
    return len + 2;
}

static void vb_connector_save_peer(struct vb_connector *c, const struct rdma_cm_event *ev, const uint8_t *pd,
                                   ULONG pd_len)
{
    if (!c->obj.dev->iwarp && pd_len >= 2 && pd[0] == VB_PD_TAG && pd[1] <= pd_len - 2) {
        pd_len = pd[1];
        pd += 2;
    }
    memcpy(c->peer_pd, pd, pd_len);
    c->peer_pd_len = pd_len;
    /* In the receiver's view (rdma_get_cm_event(3)): responder_resources = reads the peer will
     * issue to us. The iWARP CM hands the two over the other way round in the initiator's
     * ESTABLISHED event only (map §7 question 5; cm-connect on siw: the passive side's reading
     * is IB's, the active side's is swapped). */
    if (c->obj.dev->iwarp && !c->passive) {
        c->peer_ird = ev->param.conn.initiator_depth;
        c->peer_ord = ev->param.conn.responder_resources;
    } else {
        c->peer_ird = ev->param.conn.responder_resources;
        c->peer_ord = ev->param.conn.initiator_depth;
    }
    c->have_peer_data = true;
    vb_dbg(c->obj.dev, "connector: %s: responder_resources %u, initiator_depth %u; ours ird %u ord %u",
           rdma_event_str(ev->event), ev->param.conn.responder_resources, ev->param.conn.initiator_depth,
           (unsigned)c->ird, (unsigned)c->ord);
}

static void vb_connector_disc_work(struct vb_work *w)
{
    struct vb_connector *c = ndk_container_of(w, struct vb_connector, disc_work);
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX fx;
    NDK_FN_DISCONNECT_EVENT_CALLBACK f;
    void *ctx;

    pthread_mutex_lock(&c->obj.dev->lock);
    fx = c->disc_ex;
    f = c->disc;
    ctx = c->disc_ctx;
    c->disc_ex = NULL;
    c->disc = NULL;
    pthread_mutex_unlock(&c->obj.dev->lock);
    if (!vb_obj_closing(&c->obj)) {
        if (fx)
            fx(ctx, c->disc_reason);
        else if (f)
            f(ctx);
    }
    vb_obj_put(&c->obj);
}

/* dev->lock held: the peer went away after the connection was up; one callback (§5.11.6). */
static void vb_connector_peer_gone(struct vb_connector *c, int reason)
{
    if (c->peer_disconnected)
        return;
    c->peer_disconnected = true;
    c->disc_reason = (uint32_t)reason;
    /* No flush merely for the event: the consumer's NdkDisconnect or close flushes (§5.11.6);
     * requests posted from now on fail inline instead of waiting out the transport's retries. */
    if (c->qp) {
        atomic_store(&c->qp->peer_gone, true);
        /* iWARP over siw: the connection's end flushes the QP in the device (siw_qp_llp_close),
         * but not what siw dropped (drain.c); completing that is the same flush, not a new one. */
        vb_drain_error_seen(c->qp);
    }
    if (c->state == VB_C_ESTABLISHED)
        VB_COUNT(c->obj.dev, ConnectionError);
    if (c->disc_ex || c->disc) {
        vb_obj_get(&c->obj);
        vb_work_queue(c->obj.dev, &c->disc_work);
    }
}

static void vb_connector_fill_param(struct vb_connector *c, struct rdma_conn_param *p)
{
    memset(p, 0, sizeof(*p));
    p->qp_num = c->qp->qpn;
    p->private_data = c->my_pd_len ? c->my_pd : NULL;
    p->private_data_len = c->my_pd_len;
    p->responder_resources = (uint8_t)c->ird;
    p->initiator_depth = (uint8_t)c->ord;
    p->retry_count = 7;
    p->rnr_retry_count = 6;
    p->flow_control = 1;
}

/* Progress thread: one rdma_cm event of this connector's id. */
void vb_connector_on_event(struct vb_connector *c, const struct rdma_cm_event *ev, const uint8_t *pd, ULONG pd_len)
{
    struct vb_device *dev = c->obj.dev;
    struct vb_call done = { .fn = NULL };
    struct rdma_conn_param p;
    NTSTATUS st;

    pthread_mutex_lock(&dev->lock);
    if (ev->id != c->id) {
        pthread_mutex_unlock(&dev->lock);
        return;
    }
    switch (ev->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (c->state != VB_C_RESOLVING)
            break;
        if (c->id->verbs != dev->ctx) {
            /* The route leaves through another device: not this adapter's to serve. */
            vb_connector_set(c, VB_C_FAILED);
            done = vb_connector_take_req(c, STATUS_INVALID_ADDRESS);
        } else if (rdma_resolve_route(c->id, VB_CM_TIMEOUT_MS)) {
            vb_connector_set(c, VB_C_FAILED);
            done = vb_connector_take_req(c, vb_status_from_errno(errno));
        }
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        if (c->state != VB_C_RESOLVING)
            break;
        vb_connector_fill_param(c, &p);
        /* siw's rdma_connect blocks in a kernel TCP connect and reports its errors here. */
        if (rdma_connect(c->id, &p)) {
            int err = errno;
            vb_info(dev, "rdma_connect: %s", strerror(err));
            vb_connector_set(c, VB_C_FAILED);
            VB_COUNT(dev, ConnectFailure);
            done = vb_connector_take_req(c, err == EINVAL ? STATUS_INVALID_PARAMETER : vb_status_from_errno(err));
        } else
            vb_connector_set(c, VB_C_CONNECTING);
        break;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_ESTABLISHED:
        if (c->state == VB_C_CONNECTING) {
            vb_connector_save_peer(c, ev, pd, pd_len);
            vb_connector_set(c, VB_C_CONNECTED);
            VB_COUNT(dev, Connect);
            done = vb_connector_take_req(c, STATUS_SUCCESS);
        } else if (c->state == VB_C_ACCEPTING && ev->event == RDMA_CM_EVENT_ESTABLISHED) {
            vb_connector_set(c, VB_C_ESTABLISHED);
            atomic_store(&c->qp->connected, true);
            VB_COUNT(dev, Accept);
            VB_COUNT(dev, ActiveConnection);
            done = vb_connector_take_req(c, STATUS_SUCCESS);
        }
        break;
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        st = vb_status_from_cm(ev->event, ev->status, dev->iwarp, c->passive);
        vb_info(dev, "connector %s: %s (status %d) -> %s", vb_cstate_name(c->state), rdma_event_str(ev->event),
                ev->status, ndk_status_lookup_name(st) ? ndk_status_lookup_name(st) : "?");
        if (c->state == VB_C_RESOLVING || c->state == VB_C_CONNECTING || c->state == VB_C_ACCEPTING) {
            if (ev->event == RDMA_CM_EVENT_REJECTED && !c->passive)
                vb_connector_save_peer(c, ev, pd, pd_len);
            vb_connector_set(c, VB_C_FAILED);
            if (!c->passive)
                VB_COUNT(dev, ConnectFailure);
            done = vb_connector_take_req(c, st);
        } else if (c->state == VB_C_ESTABLISHED || c->state == VB_C_CONNECTED) {
            vb_connector_peer_gone(c, ev->status);
        }
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
        if (c->state == VB_C_DISCONNECTING) {
            vb_connector_set(c, VB_C_DISCONNECTED);
            done = vb_connector_take_req(c, vb_status_from_cm(ev->event, ev->status, dev->iwarp, c->passive));
        } else if (c->state == VB_C_ACCEPTING) {
            vb_connector_set(c, VB_C_FAILED);
            done = vb_connector_take_req(c, STATUS_CONNECTION_ABORTED);
        } else if (c->state == VB_C_ESTABLISHED || c->state == VB_C_CONNECTED || c->state == VB_C_REQUEST) {
            vb_connector_peer_gone(c, ev->status);
        }
        break;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        if (c->qp)
            vb_qp_to_err(c->qp);
        vb_connector_set(c, VB_C_FAILED);
        done = vb_connector_take_req(c, STATUS_CANCELLED);
        break;
    default:
        break;
    }
    pthread_mutex_unlock(&dev->lock);
    vb_call_now(done);
}

/* ---- NDK entry points (consumer threads) ---- */

static NTSTATUS vb_connector_start(struct vb_connector *c, struct vb_qp *qp, const struct sockaddr *src,
                                   const struct sockaddr *dst, ULONG dst_len, ULONG ird, ULONG ord, const void *pd,
                                   ULONG pd_len, NDK_FN_REQUEST_COMPLETION cb, void *ctx, struct vb_sep *sep)
{
    struct vb_device *dev = c->obj.dev;
    struct rdma_cm_id *id = NULL;
    int err;

    if (!qp || vb_sa_check(dst, dst_len) || (pd_len && !pd))
        return STATUS_INVALID_PARAMETER;
    if (pd_len > dev->info.MaxCallerData)
        return STATUS_INVALID_PARAMETER;
    if (ird > dev->info.MaxInboundReadLimit || ord > dev->info.MaxOutboundReadLimit)
        return STATUS_INVALID_PARAMETER;
    if (src && !vb_device_has_address(dev, src))
        return STATUS_INVALID_ADDRESS;
    if (src && src->sa_family != dst->sa_family)
        return STATUS_INVALID_ADDRESS;
    pthread_mutex_lock(&dev->lock);
    if (c->state != VB_C_IDLE || c->id || qp->conn) {
        pthread_mutex_unlock(&dev->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    err = vb_cm_create_id(dev, &c->obj, &id);
    if (!err && sep)
        err = rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &(int){ 1 }, sizeof(int)) ? -errno : 0;
    if (!err && src) {
        err = vb_cm_bind(id, src);
        if (err) {
            NTSTATUS st = vb_status_from_bind(err, false);
            rdma_destroy_id(id);
            pthread_mutex_unlock(&dev->lock);
            return st;
        }
        if (id->verbs && id->verbs != dev->ctx) {
            rdma_destroy_id(id);
            pthread_mutex_unlock(&dev->lock);
            return STATUS_INVALID_ADDRESS;
        }
    }
    if (err) {
        if (id)
            rdma_destroy_id(id);
        pthread_mutex_unlock(&dev->lock);
        return vb_status_from_errno(err);
    }
    c->id = id;
    c->qp = qp;
    qp->conn = c;
    vb_obj_set_ante(&c->obj, 0, &qp->obj);
    if (sep)
        vb_obj_set_ante(&c->obj, 1, &sep->obj);
    c->ird = ird;
    c->ord = ord;
    c->asked = true;
    c->my_pd_len = (uint8_t)vb_pd_frame(c, c->my_pd, pd, pd_len);
    memcpy(&c->dst, dst, vb_sa_len(dst));
    c->req.fn = cb;
    c->req.ctx = ctx;
    c->req_pending = true;
    vb_connector_set(c, VB_C_RESOLVING);
    if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&c->dst, VB_CM_TIMEOUT_MS)) {
        err = errno;
        c->req_pending = false;
        vb_connector_set(c, VB_C_FAILED);
        pthread_mutex_unlock(&dev->lock);
        return err == ENODEV || err == EADDRNOTAVAIL ? STATUS_INVALID_ADDRESS : vb_status_from_errno(err);
    }
    pthread_mutex_unlock(&dev->lock);
    return STATUS_PENDING;
}

static NTSTATUS vb_connector_connect(NDK_CONNECTOR *n, NDK_QP *q, CONST PSOCKADDR src, ULONG src_len,
                                     CONST PSOCKADDR dst, ULONG dst_len, ULONG ird, ULONG ord, CONST PVOID pd,
                                     ULONG pd_len, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    if (vb_sa_check(src, src_len))
        return STATUS_INVALID_PARAMETER;
    return vb_connector_start(to_vb_connector(n), q ? to_vb_qp(q) : NULL, src, dst, dst_len, ird, ord, pd, pd_len, cb,
                              ctx, NULL);
}

static NTSTATUS vb_connector_connect_sep(NDK_CONNECTOR *n, NDK_QP *q, NDK_SHARED_ENDPOINT *e, CONST PSOCKADDR dst,
                                         ULONG dst_len, ULONG ird, ULONG ord, CONST PVOID pd, ULONG pd_len,
                                         NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct vb_sep *sep;

    if (!e)
        return STATUS_INVALID_PARAMETER;
    sep = to_vb_sep(e);
    return vb_connector_start(to_vb_connector(n), q ? to_vb_qp(q) : NULL, (struct sockaddr *)&sep->addr, dst, dst_len,
                              ird, ord, pd, pd_len, cb, ctx, sep);
}

static void vb_connector_set_disc(struct vb_connector *c, NDK_FN_DISCONNECT_EVENT_CALLBACK f,
                                  NDK_FN_DISCONNECT_EVENT_CALLBACK_EX fx, void *ctx)
{
    c->disc = f;
    c->disc_ex = fx;
    c->disc_ctx = ctx;
    /* The peer left before the consumer registered: the event is still owed (§5.11.6). */
    if (c->peer_disconnected && (f || fx)) {
        vb_obj_get(&c->obj);
        vb_work_queue(c->obj.dev, &c->disc_work);
    }
}

static NTSTATUS vb_connector_complete_common(NDK_CONNECTOR *n, NDK_FN_DISCONNECT_EVENT_CALLBACK f,
                                             NDK_FN_DISCONNECT_EVENT_CALLBACK_EX fx, void *dctx)
{
    struct vb_connector *c = to_vb_connector(n);
    struct vb_device *dev = c->obj.dev;
    int err = 0;

    pthread_mutex_lock(&dev->lock);
    if (c->state != VB_C_CONNECTED || c->passive) {
        pthread_mutex_unlock(&dev->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    if (c->peer_disconnected) {
        pthread_mutex_unlock(&dev->lock);
        return STATUS_CONNECTION_ABORTED;
    }
    if (!dev->iwarp) {
        err = vb_qp_to_rts(c->qp, c->id);
        if (!err && rdma_establish(c->id))
            err = -errno;
    }
    if (err) {
        vb_connector_set(c, VB_C_FAILED);
        pthread_mutex_unlock(&dev->lock);
        vb_err(dev, "complete connect: %s", strerror(-err));
        return STATUS_CONNECTION_ABORTED;
    }
    vb_connector_set(c, VB_C_ESTABLISHED);
    atomic_store(&c->qp->connected, true);
    VB_COUNT(dev, ActiveConnection);
    vb_connector_set_disc(c, f, fx, dctx);
    pthread_mutex_unlock(&dev->lock);
    return STATUS_SUCCESS;
}

static NTSTATUS vb_connector_complete(NDK_CONNECTOR *n, NDK_FN_DISCONNECT_EVENT_CALLBACK f, PVOID dctx,
                                      NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    (void)cb;
    (void)ctx;
    return vb_connector_complete_common(n, f, NULL, dctx);
}

static NTSTATUS vb_connector_complete_ex(NDK_CONNECTOR *n, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX fx, PVOID dctx,
                                         NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    (void)cb;
    (void)ctx;
    return vb_connector_complete_common(n, NULL, fx, dctx);
}

static ULONG vb_min(ULONG a, ULONG b)
{
    return a < b ? a : b;
}

static NTSTATUS vb_connector_accept_common(NDK_CONNECTOR *n, NDK_QP *q, ULONG ird, ULONG ord, const void *pd,
                                           ULONG pd_len, NDK_FN_DISCONNECT_EVENT_CALLBACK f,
                                           NDK_FN_DISCONNECT_EVENT_CALLBACK_EX fx, void *dctx,
                                           NDK_FN_REQUEST_COMPLETION cb, void *ctx)
{
    struct vb_connector *c = to_vb_connector(n);
    struct vb_device *dev = c->obj.dev;
    struct rdma_conn_param p;
    struct vb_qp *qp;
    int err;

    if (!q || (pd_len && !pd))
        return STATUS_INVALID_PARAMETER;
    if (pd_len > dev->info.MaxCalleeData)
        return STATUS_INVALID_PARAMETER;
    if (ird > dev->info.MaxInboundReadLimit || ord > dev->info.MaxOutboundReadLimit)
        return STATUS_INVALID_PARAMETER;
    qp = to_vb_qp(q);
    pthread_mutex_lock(&dev->lock);
    if (c->state != VB_C_REQUEST || qp->conn) {
        NTSTATUS st = c->peer_disconnected ? STATUS_CONNECTION_ABORTED : STATUS_INVALID_DEVICE_REQUEST;
        pthread_mutex_unlock(&dev->lock);
        return st;
    }
    c->qp = qp;
    qp->conn = c;
    vb_obj_set_ante(&c->obj, 0, &qp->obj);
    /* Pass exactly the effective limits: siw refuses more than the MPA request offered. */
    c->ird = vb_min(ird, c->peer_ird);
    c->ord = vb_min(ord, c->peer_ord);
    c->asked = true;
    c->my_pd_len = (uint8_t)vb_pd_frame(c, c->my_pd, pd, pd_len);
    vb_connector_fill_param(c, &p);
    err = vb_qp_to_rts(qp, c->id);
    if (!err && rdma_accept(c->id, &p))
        err = -errno;
    if (err) {
        vb_connector_set(c, VB_C_FAILED);
        pthread_mutex_unlock(&dev->lock);
        vb_warn(dev, "accept: %s", strerror(-err));
        return err == -EINVAL ? STATUS_INVALID_PARAMETER : STATUS_CONNECTION_ABORTED;
    }
    vb_connector_set(c, VB_C_ACCEPTING);
    c->req.fn = cb;
    c->req.ctx = ctx;
    c->req_pending = true;
    c->disc = f;
    c->disc_ex = fx;
    c->disc_ctx = dctx;
    pthread_mutex_unlock(&dev->lock);
    return STATUS_PENDING;
}

static NTSTATUS vb_connector_accept(NDK_CONNECTOR *n, NDK_QP *q, ULONG ird, ULONG ord, CONST PVOID pd, ULONG pd_len,
                                    NDK_FN_DISCONNECT_EVENT_CALLBACK f, PVOID dctx, NDK_FN_REQUEST_COMPLETION cb,
                                    PVOID ctx)
{
    return vb_connector_accept_common(n, q, ird, ord, pd, pd_len, f, NULL, dctx, cb, ctx);
}

static NTSTATUS vb_connector_accept_ex(NDK_CONNECTOR *n, NDK_QP *q, ULONG ird, ULONG ord, CONST PVOID pd,
                                       ULONG pd_len, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX fx, PVOID dctx,
                                       NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    return vb_connector_accept_common(n, q, ird, ord, pd, pd_len, NULL, fx, dctx, cb, ctx);
}

static NTSTATUS vb_connector_reject(NDK_CONNECTOR *n, CONST PVOID pd, ULONG pd_len)
{
    struct vb_connector *c = to_vb_connector(n);
    struct vb_device *dev = c->obj.dev;
    NTSTATUS st = STATUS_SUCCESS;

    if (pd_len && !pd)
        return STATUS_INVALID_PARAMETER;
    if (pd_len > dev->info.MaxCalleeData)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&dev->lock);
    c->my_pd_len = (uint8_t)vb_pd_frame(c, c->my_pd, pd, pd_len);
    if (c->state == VB_C_REQUEST) {
        if (rdma_reject(c->id, c->my_pd, c->my_pd_len))
            st = vb_status_from_errno(errno);
        vb_connector_set(c, VB_C_FAILED);
    } else if (c->state == VB_C_CONNECTED && !c->passive) {
        /* IB/RoCE: a REJ after the REP; iWARP: the connection is up, so only an abortive
         * close is left (map §1.7 "NdkReject"). */
        if (dev->iwarp)
            rdma_disconnect(c->id);
        else if (rdma_reject(c->id, c->my_pd, c->my_pd_len))
            st = vb_status_from_errno(errno);
        if (c->qp)
            vb_qp_to_err(c->qp);
        vb_connector_set(c, VB_C_FAILED);
    } else
        st = STATUS_INVALID_DEVICE_REQUEST;
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static NTSTATUS vb_connector_get_data(NDK_CONNECTOR *n, ULONG *ird, ULONG *ord, PVOID pd, ULONG *pd_len)
{
    struct vb_connector *c = to_vb_connector(n);
    struct vb_device *dev = c->obj.dev;
    NTSTATUS st = STATUS_SUCCESS;

    pthread_mutex_lock(&dev->lock);
    if (!c->have_peer_data) {
        pthread_mutex_unlock(&dev->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    /* Effective limits (§5.11.3, map §1.7): the peer's offer capped by the device, and once we
     * made our own request (NdkConnect, NdkAccept) by that too; before NdkAccept the passive
     * side sees the initiator's request mirrored (§8.22). */
    if (ird)
        *ird = vb_min(vb_min(c->peer_ird, dev->info.MaxInboundReadLimit), c->asked ? c->ird : ~0u);
    if (ord)
        *ord = vb_min(vb_min(c->peer_ord, dev->info.MaxOutboundReadLimit), c->asked ? c->ord : ~0u);
    if (pd_len) {
        /* A NULL buffer asks for the length only (§2.10). */
        if (c->peer_pd_len && pd && *pd_len < c->peer_pd_len) {
            memcpy(pd, c->peer_pd, *pd_len);     /* the prefix that fits (§2.11) */
            st = STATUS_BUFFER_TOO_SMALL;
        } else if (c->peer_pd_len && pd)
            memcpy(pd, c->peer_pd, c->peer_pd_len);
        *pd_len = c->peer_pd_len;
    }
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static NTSTATUS vb_connector_addr(NDK_CONNECTOR *n, PSOCKADDR out, ULONG *len, bool peer)
{
    struct vb_connector *c = to_vb_connector(n);
    struct vb_device *dev = c->obj.dev;
    SOCKADDR_INET a;

    pthread_mutex_lock(&dev->lock);
    if (!c->id || c->state == VB_C_IDLE || c->state == VB_C_RESOLVING || c->state == VB_C_FAILED) {
        pthread_mutex_unlock(&dev->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    struct sockaddr *sa = peer ? rdma_get_peer_addr(c->id) : rdma_get_local_addr(c->id);
    memset(&a, 0, sizeof a);
    memcpy(&a, sa, vb_sa_len(sa));
    pthread_mutex_unlock(&dev->lock);
    return vb_sa_copy_out((struct sockaddr *)&a, out, len);
}

static NTSTATUS vb_connector_local(NDK_CONNECTOR *n, PSOCKADDR out, ULONG *len)
{
    return vb_connector_addr(n, out, len, false);
}

static NTSTATUS vb_connector_peer(NDK_CONNECTOR *n, PSOCKADDR out, ULONG *len)
{
    return vb_connector_addr(n, out, len, true);
}

static NTSTATUS vb_connector_disconnect(NDK_CONNECTOR *n, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct vb_connector *c = to_vb_connector(n);
    struct vb_device *dev = c->obj.dev;

    pthread_mutex_lock(&dev->lock);
    if (c->state != VB_C_ESTABLISHED) {
        NTSTATUS st = c->state == VB_C_DISCONNECTED ? STATUS_SUCCESS : STATUS_CONNECTION_INVALID;
        pthread_mutex_unlock(&dev->lock);
        return st;
    }
    VB_COUNT_ADD(dev, ActiveConnection, -1);
    /* IB/RoCE: stop the QP first (rdma_cm leaves a self-managed QP alone, map D1). */
    if (!dev->iwarp)
        vb_qp_to_err(c->qp);
    if (rdma_disconnect(c->id) || c->peer_disconnected) {
        /* The peer already left: our DREP (IB) or nothing (iWARP) ends it here. */
        vb_connector_set(c, VB_C_DISCONNECTING);
        vb_connector_set(c, VB_C_DISCONNECTED);
        vb_qp_to_err(c->qp);
        pthread_mutex_unlock(&dev->lock);
        return STATUS_SUCCESS;
    }
    vb_connector_set(c, VB_C_DISCONNECTING);
    c->req.fn = cb;
    c->req.ctx = ctx;
    c->req_pending = true;
    pthread_mutex_unlock(&dev->lock);
    return STATUS_PENDING;
}

/* Progress thread: a close's side effects: abort the connection, cancel the pending request,
 * destroy the id (only here, so no event of it can still be handled). */
static void vb_connector_stop_work(struct vb_work *w)
{
    struct vb_connector *c = ndk_container_of(w, struct vb_connector, start_work);
    struct vb_device *dev = c->obj.dev;
    struct rdma_cm_id *id;
    struct vb_call done;

    pthread_mutex_lock(&dev->lock);
    if (c->state == VB_C_ESTABLISHED || c->state == VB_C_DISCONNECTING)
        VB_COUNT_ADD(dev, ActiveConnection, -(int)(c->state == VB_C_ESTABLISHED));
    /* A QP whose connection attempt failed or never started stays usable for another (§2.10). */
    if (c->qp && (c->state == VB_C_ESTABLISHED || c->state == VB_C_CONNECTED || c->state == VB_C_ACCEPTING ||
                  c->state == VB_C_DISCONNECTING || c->state == VB_C_DISCONNECTED || c->peer_disconnected))
        vb_qp_to_err(c->qp);
    if (c->id && (c->state == VB_C_ESTABLISHED || c->state == VB_C_CONNECTED || c->state == VB_C_ACCEPTING))
        rdma_disconnect(c->id);
    if (c->id && c->state == VB_C_REQUEST)
        rdma_reject(c->id, NULL, 0);
    vb_connector_set(c, VB_C_FAILED);
    done = vb_connector_take_req(c, STATUS_CANCELLED);
    id = c->id;
    c->id = NULL;
    if (c->qp)
        c->qp->conn = NULL;
    ndk_list_del(&c->link);
    ndk_list_init(&c->link);
    pthread_mutex_unlock(&dev->lock);
    vb_call_now(done);
    vb_cm_destroy_id(id);
    vb_obj_put(&c->obj);
}

static void vb_connector_close_start(struct vb_obj *o)
{
    struct vb_connector *c = ndk_container_of(o, struct vb_connector, obj);

    vb_obj_get(o);
    vb_work_queue(o->dev, &c->start_work);
}

static void vb_connector_destroy(struct vb_obj *o)
{
    vb_obj_sv_free(o);
    free(ndk_container_of(o, struct vb_connector, obj));
}

static const struct vb_obj_ops vb_connector_ops = { .close_start = vb_connector_close_start,
                                                    .destroy = vb_connector_destroy };

static NTSTATUS vb_connector_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return vb_obj_close(&to_vb_connector((NDK_CONNECTOR *)h)->obj, cb, ctx);
}

static const NDK_CONNECTOR_DISPATCH vb_connector_dispatch = {
    .NdkCloseConnector = vb_connector_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkConnect = vb_connector_connect,
    .NdkConnectWithSharedEndpoint = vb_connector_connect_sep,
    .NdkCompleteConnect = vb_connector_complete,
    .NdkAccept = vb_connector_accept,
    .NdkReject = vb_connector_reject,
    .NdkGetConnectionData = vb_connector_get_data,
    .NdkGetLocalAddress = vb_connector_local,
    .NdkGetPeerAddress = vb_connector_peer,
    .NdkDisconnect = vb_connector_disconnect,
    .NdkCompleteConnectEx = vb_connector_complete_ex,
    .NdkAcceptEx = vb_connector_accept_ex,
};

static struct vb_connector *vb_connector_alloc(struct vb_adapter *ad)
{
    struct vb_connector *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    vb_obj_init(&c->obj, &vb_connector_ops, VB_OBJ_CONNECTOR, ad, &c->ndk.Header, &vb_connector_dispatch);
    c->state = VB_C_IDLE;
    vb_connector_sv(c);
    c->disc_work.fn = vb_connector_disc_work;
    ndk_list_init(&c->disc_work.link);
    c->start_work.fn = vb_connector_stop_work;
    ndk_list_init(&c->start_work.link);
    pthread_mutex_lock(&ad->dev->lock);
    ndk_list_add_tail(&ad->dev->connectors, &c->link);
    pthread_mutex_unlock(&ad->dev->lock);
    return c;
}

NTSTATUS vb_connector_create(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_CONNECTOR **out)
{
    struct vb_connector *c;

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    c = vb_connector_alloc(to_vb_adapter(a));
    if (!c)
        return STATUS_INSUFFICIENT_RESOURCES;
    *out = &c->ndk;
    return STATUS_SUCCESS;
}

/* Progress thread, dev->lock NOT held: wraps a CONNECT_REQUEST's new id. */
struct vb_connector *vb_connector_new_passive(struct vb_adapter *ad, struct rdma_cm_id *id, const struct rdma_cm_event *ev)
{
    struct vb_connector *c = vb_connector_alloc(ad);

    if (!c)
        return NULL;
    pthread_mutex_lock(&ad->dev->lock);
    c->passive = true;
    c->id = id;
    id->context = &c->obj;
    c->state = VB_C_REQUEST;
    vb_connector_sv(c);
    pthread_mutex_unlock(&ad->dev->lock);
    (void)ev;
    return c;
}

/* Progress thread, dev->lock held. */
void vb_connector_set_request_data(struct vb_connector *c, const struct rdma_cm_event *ev, const uint8_t *pd,
                                   ULONG pd_len)
{
    vb_connector_save_peer(c, ev, pd, pd_len);
}
