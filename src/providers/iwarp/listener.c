/* listener.c - the listener (§2.12, §3.5, §5.11.5): a listening socket on the progress engine
 * that accepts TCP connections and hands each to the CM as a passive connector waiting for its
 * MPA Request, with a back-off when accept() runs out of descriptors.
 *
 * Talks to: connector.c (iw_connector_accept_request), cm.c (iw_cm_abort_locked), endpoint.c (the local endpoint and
 * its socket), progress.c (the pollable and the back-off timer), obj.c. Locking: dev->lock (the
 * CM lock) protects the listener's state, as it does the connectors'. */
#define _GNU_SOURCE     /* accept4 */
#include "iwarp.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

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

    (void)events;
    /* Bounded burst so one listener cannot starve the other sockets. */
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
        if (iw_connector_accept_request(l, fd, &peer) == -ESHUTDOWN)
            return;
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
        iw_cm_abort_locked(c);
    }
    pthread_mutex_unlock(&dev->lock);
    if (put_poll)
        iw_obj_put(&l->obj);
    if (put_timer)
        iw_obj_put(&l->obj);
    iw_obj_put(&l->obj);                 /* the queuer's reference */
}

/* The listener's system-view description: LISTENING, PAUSED or CLOSED, and its address.
 * dev->lock held. */
static void iw_listener_sv_describe_locked(struct iw_listener *l)
{
    struct ndk_sv_rec *r = iw_sv_desc(&l->obj);

    if (!r)
        return;
    ndk_sv_begin(r);
    iw_sv_set_state(r->u.ep.state, !l->listening ? "CLOSED" : l->paused ? "PAUSED" : "LISTENING");
    iw_sv_set_addr(&r->u.ep.local, &l->local);
    ndk_sv_end(r);
}

static void iw_listener_close_start(struct iw_obj *o)
{
    struct iw_listener *l = ndk_container_of(o, struct iw_listener, obj);

    /* §5.11.5: stop accepting the moment the close is requested. */
    pthread_mutex_lock(&o->dev->lock);
    l->listening = false;
    iw_listener_sv_describe_locked(l);
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
        return ndk_status_from_errno(err);
    if (!iw_ep_is_local(dev, (const struct sockaddr *)&a))
        return STATUS_INVALID_ADDRESS;
    fd = iw_ep_socket(a.si_family, IW_SOCK_LISTEN);
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
        st = ndk_status_from_errno(-errno);
        iw_ep_put(dev, l->ep);
        l->ep = NULL;
        goto fail;
    }
    l->ep->open = true;
    l->local = l->ep->addr;
    l->poll.fd = fd;
    l->poll.handler = iw_listener_poll;
    l->listening = true;
    iw_listener_sv_describe_locked(l);
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
    iw_listener_sv_describe_locked(l);
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
