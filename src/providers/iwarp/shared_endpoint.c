/* shared_endpoint.c - the shared endpoint (§2.11, §5.11.5): a local address and port reserved
 * by a bound placeholder socket, which NdkConnectWithSharedEndpoint connections join
 * (SO_REUSEPORT, cm.c).
 *
 * Talks to: endpoint.c (the endpoint reference and the socket), obj.c. Locking: dev->lock. */
#include "iwarp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
        return ndk_status_from_errno(err);
    if (!iw_ep_is_local(dev, (const struct sockaddr *)&sa))
        return STATUS_INVALID_ADDRESS;
    /* A bound (not listening) placeholder reserves the port in the OS; connections through
     * the endpoint bind the same address with SO_REUSEPORT (iw_ep_socket). */
    fd = iw_ep_socket(sa.si_family, IW_SOCK_SEP_ANCHOR);
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
    struct ndk_sv_rec *r = iw_sv_desc(&s->obj);
    if (r) {                                 /* fixed from here on; nobody else has s yet */
        ndk_sv_begin(r);
        iw_sv_set_state(r->u.ep.state, "BOUND");
        iw_sv_set_addr(&r->u.ep.local, &s->local);
        ndk_sv_end(r);
    }
    *out = &s->ndk;
    return STATUS_SUCCESS;
}
