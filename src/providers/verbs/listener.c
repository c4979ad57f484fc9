/* listener.c - listeners (§2.11, §5.11.5, map §1.7): rdma_bind_addr + rdma_listen; a wildcard
 * address becomes one id per address of the adapter (a wildcard id would listen on every RDMA
 * device). A CONNECT_REQUEST becomes a passive connector handed to the connect-event callback;
 * while paused or closing, requests are rejected at once (the peer sees a refusal). */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Progress thread: one CONNECT_REQUEST on one of our ids. */
void vb_listener_on_request(struct vb_listener *l, struct rdma_cm_id *id, const struct rdma_cm_event *ev,
                            const uint8_t *pd, ULONG pd_len)
{
    struct vb_device *dev = l->obj.dev;
    struct vb_connector *c;
    bool take;

    pthread_mutex_lock(&dev->lock);
    take = l->listening && !l->paused && !vb_obj_closing(&l->obj) && l->connect_event;
    pthread_mutex_unlock(&dev->lock);
    if (!take || id->verbs != dev->ctx || !(c = vb_connector_new_passive(l->obj.adapter, id, ev))) {
        rdma_reject(id, NULL, 0);
        rdma_destroy_id(id);
        return;
    }
    pthread_mutex_lock(&dev->lock);
    vb_connector_set_request_data(c, ev, pd, pd_len);
    pthread_mutex_unlock(&dev->lock);
    /* The port stays the listener's while a connector it produced lives (§5.11.5). */
    vb_obj_set_ante(&c->obj, 2, &l->obj);
    l->connect_event(l->connect_ctx, &c->ndk);
}

/* dev->lock held, or the listener not yet shared: its state and address in its record. */
static void vb_listener_sv(struct vb_listener *l)
{
    struct ndk_sv_rec *r = l->obj.sv;

    if (!r)
        return;
    ndk_sv_begin(r);
    vb_sv_name(r->u.ep.state, !l->listening ? (l->nids ? "CLOSED" : "IDLE") : l->paused ? "PAUSED" : "LISTENING");
    vb_sv_addr(&r->u.ep.local, l->nids ? (const struct sockaddr *)&l->addr : NULL);
    ndk_sv_end(r);
}

static NTSTATUS vb_listener_listen(NDK_LISTENER *n, CONST PSOCKADDR addr, ULONG len, NDK_FN_REQUEST_COMPLETION cb,
                                   PVOID ctx)
{
    struct vb_listener *l = to_vb_listener(n);
    struct vb_device *dev = l->obj.dev;
    SOCKADDR_INET want[VB_MAX_LISTEN_IDS];
    struct rdma_cm_id *ids[VB_MAX_LISTEN_IDS];
    int nwant = 0, nids = 0, err = 0;
    uint16_t port;

    (void)cb;
    (void)ctx;
    if (vb_sa_check(addr, len))
        return STATUS_INVALID_PARAMETER;
    if (!vb_device_has_address(dev, addr))
        return STATUS_INVALID_ADDRESS;
    port = addr->sa_family == AF_INET6 ? ((struct sockaddr_in6 *)addr)->sin6_port : ((struct sockaddr_in *)addr)->sin_port;
    pthread_mutex_lock(&dev->lock);
    if (l->listening || l->nids) {
        pthread_mutex_unlock(&dev->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    if (vb_sa_is_wildcard(addr)) {
        for (ULONG k = 0; k < dev->naddrs; k++)
            if (dev->addrs[k].si_family == addr->sa_family)
                want[nwant++] = dev->addrs[k];
    } else {
        memset(&want[0], 0, sizeof want[0]);
        memcpy(&want[0], addr, vb_sa_len(addr));
        nwant = 1;
    }
    pthread_mutex_unlock(&dev->lock);
    if (!nwant)
        return STATUS_INVALID_ADDRESS;
    for (int k = 0; k < nwant && !err; k++) {
        struct rdma_cm_id *id;
        if (want[k].si_family == AF_INET6)
            want[k].Ipv6.sin6_port = port;
        else
            want[k].Ipv4.sin_port = port;
        err = vb_cm_create_id(dev, &l->obj, &id);
        if (err)
            break;
        ids[nids++] = id;
        err = vb_cm_bind(id, (struct sockaddr *)&want[k]);
        if (!err && rdma_listen(id, VB_BACKLOG))
            err = -errno;
        if (!err && k == 0)
            port = rdma_get_src_port(id) ? rdma_get_src_port(id) : port;   /* both network order */
    }
    if (err) {
        for (int k = 0; k < nids; k++)
            rdma_destroy_id(ids[k]);
        return vb_status_from_bind(err, !port);
    }
    pthread_mutex_lock(&dev->lock);
    memcpy(l->ids, ids, sizeof(ids[0]) * (size_t)nids);
    l->nids = nids;
    memset(&l->addr, 0, sizeof l->addr);
    memcpy(&l->addr, addr, vb_sa_len(addr));
    if (l->addr.si_family == AF_INET6)
        l->addr.Ipv6.sin6_port = port;
    else
        l->addr.Ipv4.sin_port = port;
    l->listening = true;
    ndk_list_add_tail(&dev->listeners, &l->link);
    vb_listener_sv(l);
    pthread_mutex_unlock(&dev->lock);
    return STATUS_SUCCESS;
}

static NTSTATUS vb_listener_local(NDK_LISTENER *n, PSOCKADDR out, ULONG *len)
{
    struct vb_listener *l = to_vb_listener(n);
    SOCKADDR_INET a;

    pthread_mutex_lock(&l->obj.dev->lock);
    if (!l->listening) {
        pthread_mutex_unlock(&l->obj.dev->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    a = l->addr;
    pthread_mutex_unlock(&l->obj.dev->lock);
    return vb_sa_copy_out((struct sockaddr *)&a, out, len);
}

static VOID vb_listener_pause(NDK_LISTENER *n, BOOLEAN pause)
{
    struct vb_listener *l = to_vb_listener(n);

    pthread_mutex_lock(&l->obj.dev->lock);
    l->paused = pause != FALSE;
    vb_listener_sv(l);
    pthread_mutex_unlock(&l->obj.dev->lock);
}

/* §5.11.5: a listener stops accepting the moment its close is asked; its ids (the port) stay
 * until the last connector it produced has closed, since those hold it as antecedent. */
static void vb_listener_close_start(struct vb_obj *o)
{
    struct vb_listener *l = ndk_container_of(o, struct vb_listener, obj);

    pthread_mutex_lock(&o->dev->lock);
    if (l->listening)
        ndk_list_del(&l->link);
    l->listening = false;
    vb_listener_sv(l);
    pthread_mutex_unlock(&o->dev->lock);
}

/* Progress thread (the only place ids are destroyed, see cm.c). */
static void vb_listener_destroy(struct vb_obj *o)
{
    struct vb_listener *l = ndk_container_of(o, struct vb_listener, obj);

    vb_obj_sv_free(o);
    for (int k = 0; k < l->nids; k++)
        rdma_destroy_id(l->ids[k]);
    free(l);
}

static const struct vb_obj_ops vb_listener_ops = { .close_start = vb_listener_close_start,
                                                   .destroy = vb_listener_destroy };

static NTSTATUS vb_listener_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return vb_obj_close(&to_vb_listener((NDK_LISTENER *)h)->obj, cb, ctx);
}

static const NDK_LISTENER_DISPATCH vb_listener_dispatch = {
    .NdkCloseListener = vb_listener_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkListen = vb_listener_listen,
    .NdkGetLocalAddress = vb_listener_local,
    .NdkControlConnectEvents = vb_listener_pause,
};

NTSTATUS vb_listener_create(NDK_ADAPTER *a, NDK_FN_CONNECT_EVENT_CALLBACK fn, PVOID fctx, NDK_FN_CREATE_COMPLETION cb,
                            PVOID ctx, NDK_LISTENER **out)
{
    struct vb_listener *l;

    (void)cb;
    (void)ctx;
    if (!out || !fn)
        return STATUS_INVALID_PARAMETER;
    l = calloc(1, sizeof(*l));
    if (!l)
        return STATUS_INSUFFICIENT_RESOURCES;
    l->connect_event = fn;
    l->connect_ctx = fctx;
    vb_obj_init(&l->obj, &vb_listener_ops, VB_OBJ_LISTENER, to_vb_adapter(a), &l->ndk.Header, &vb_listener_dispatch);
    vb_listener_sv(l);
    *out = &l->ndk;
    return STATUS_SUCCESS;
}
