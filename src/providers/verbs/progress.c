/* progress.c - the device's progress thread (map §4): one epoll loop over the rdma_cm event
 * channel, the completion channel, the context's async-event fd and an eventfd for queued work
 * (rdma_write_cm_event is absent from rdma-core 44). It runs every consumer callback and destroys
 * every verbs object, so no event can be handled for an object being freed. */
#include "verbs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

static __thread const struct vb_device *vb_current;

bool vb_progress_on_thread(const struct vb_device *dev)
{
    return vb_current == dev;
}

/* Any thread, no lock needed; never blocks. */
void vb_work_queue(struct vb_device *dev, struct vb_work *w)
{
    uint64_t one = 1;
    bool first;

    pthread_mutex_lock(&dev->wq_lock);
    first = ndk_list_empty(&dev->work);
    ndk_list_add_tail(&dev->work, &w->link);
    pthread_mutex_unlock(&dev->wq_lock);
    if (first && write(dev->evfd, &one, sizeof one) < 0 && errno != EAGAIN)
        vb_err(dev, "eventfd write: %s", strerror(errno));
}

static void vb_call_run(struct vb_work *w)
{
    struct vb_call *c = ndk_container_of(w, struct vb_call, work);
    NDK_FN_REQUEST_COMPLETION fn = c->fn;
    void *ctx = c->ctx;
    NTSTATUS st = c->status;
    struct vb_obj *hold = c->hold;

    c->fn = NULL;
    c->hold = NULL;
    if (fn)
        fn(ctx, st);
    if (hold)
        vb_obj_put(hold);
}

/* Queues a request completion; hold (may be NULL) keeps the object until it has returned. */
void vb_call_queue(struct vb_device *dev, struct vb_call *c, NDK_FN_REQUEST_COMPLETION fn, void *ctx, NTSTATUS st,
                   struct vb_obj *hold)
{
    c->work.fn = vb_call_run;
    c->fn = fn;
    c->ctx = ctx;
    c->status = st;
    c->hold = hold;
    if (hold)
        vb_obj_get(hold);
    vb_work_queue(dev, &c->work);
}

static void vb_run_work(struct vb_device *dev)
{
    uint64_t v;

    if (read(dev->evfd, &v, sizeof v) < 0 && errno != EAGAIN)
        vb_err(dev, "eventfd read: %s", strerror(errno));
    for (;;) {
        struct vb_work *w = NULL;
        pthread_mutex_lock(&dev->wq_lock);
        if (!ndk_list_empty(&dev->work)) {
            w = ndk_list_entry(dev->work.next, struct vb_work, link);
            ndk_list_del(&w->link);
            ndk_list_init(&w->link);
        }
        pthread_mutex_unlock(&dev->wq_lock);
        if (!w)
            return;
        w->fn(w);
    }
}

/* One event per wake-up: a CQ raises at most one per arming, and the channel is level-triggered
 * in epoll, so a second read would mostly be an EAGAIN, a syscall per message on the event path
 * (a ping-pong wakes once per message). */
static void vb_on_comp(struct vb_device *dev)
{
    struct ibv_cq *cq;
    void *cq_ctx;

    if (ibv_get_cq_event(dev->cc, &cq, &cq_ctx) == 0)
        vb_cq_on_event(dev, cq);
}

/* Async events (map §1.5 step 2, §3 "async"): acked before acting, as the objects they name
 * are destroyed only on this thread. */
static void vb_on_async(struct vb_device *dev)
{
    struct ibv_async_event ev;

    while (ibv_get_async_event(dev->ctx, &ev) == 0) {
        struct ibv_async_event e = ev;
        ibv_ack_async_event(&ev);
        switch (e.event_type) {
        case IBV_EVENT_CQ_ERR:
            if (e.element.cq->cq_context)
                vb_cq_on_error(e.element.cq->cq_context, STATUS_BUFFER_OVERFLOW);
            break;
        case IBV_EVENT_SRQ_LIMIT_REACHED:
            if (e.element.srq->srq_context)
                vb_srq_on_event(e.element.srq->srq_context, STATUS_SUCCESS);
            break;
        case IBV_EVENT_SRQ_ERR:
            if (e.element.srq->srq_context)
                vb_srq_on_event(e.element.srq->srq_context, STATUS_INTERNAL_ERROR);
            break;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
            /* The QP's remaining work must complete (flushed), also where the device drops it. */
            vb_dbg(dev, "async event %s", ibv_event_type_str(e.event_type));
            if (e.element.qp->qp_context)
                vb_drain_on_qp_error(e.element.qp->qp_context);
            break;
        case IBV_EVENT_DEVICE_FATAL:
            vb_err(dev, "device fatal error");
            break;
        default:
            vb_dbg(dev, "async event %s", ibv_event_type_str(e.event_type));
            break;
        }
    }
}

static void *vb_progress_main(void *arg)
{
    struct vb_device *dev = arg;
    struct epoll_event evs[8];

    vb_current = dev;
    while (!dev->stop) {
        int n = epoll_wait(dev->epfd, evs, 8, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            vb_err(dev, "epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            switch (evs[i].data.u32) {
            case 0: vb_run_work(dev); break;
            case 1: vb_cm_on_events(dev); break;
            case 2: vb_on_comp(dev); break;
            case 3: vb_on_async(dev); break;
            }
        }
    }
    vb_run_work(dev);
    return NULL;
}

static int vb_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

static int vb_epoll_add(struct vb_device *dev, int fd, uint32_t tag)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = tag };
    int err = vb_nonblock(fd);

    if (!err && epoll_ctl(dev->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        err = -errno;
    return err;
}

int vb_progress_start(struct vb_device *dev)
{
    int err;

    dev->epfd = epoll_create1(EPOLL_CLOEXEC);
    dev->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    dev->ech = rdma_create_event_channel();
    dev->cc = ibv_create_comp_channel(dev->ctx);
    if (dev->epfd < 0 || dev->evfd < 0 || !dev->ech || !dev->cc) {
        err = -(errno ? errno : ENOMEM);
        goto fail;
    }
    if ((err = vb_epoll_add(dev, dev->evfd, 0)) || (err = vb_epoll_add(dev, dev->ech->fd, 1)) ||
        (err = vb_epoll_add(dev, dev->cc->fd, 2)) || (err = vb_epoll_add(dev, dev->ctx->async_fd, 3)))
        goto fail;
    err = -pthread_create(&dev->thread, NULL, vb_progress_main, dev);
    if (!err)
        return 0;
fail:
    if (dev->cc)
        ibv_destroy_comp_channel(dev->cc);
    if (dev->ech)
        rdma_destroy_event_channel(dev->ech);
    if (dev->evfd >= 0)
        close(dev->evfd);
    if (dev->epfd >= 0)
        close(dev->epfd);
    return err;
}

struct vb_stop {
    struct vb_work work;
    struct vb_device *dev;
};

/* Progress thread: the loop ends after this batch (dev->stop is the thread's own variable). */
static void vb_stop_work(struct vb_work *w)
{
    ndk_container_of(w, struct vb_stop, work)->dev->stop = true;
}

void vb_progress_stop(struct vb_device *dev)
{
    struct vb_stop stop = { .work.fn = vb_stop_work, .dev = dev };

    ndk_list_init(&stop.work.link);
    vb_work_queue(dev, &stop.work);
    pthread_join(dev->thread, NULL);
    /* The async fd belongs to the context (librdmacm's): leave it blocking-agnostic but unwatched. */
    epoll_ctl(dev->epfd, EPOLL_CTL_DEL, dev->ctx->async_fd, NULL);
    ibv_destroy_comp_channel(dev->cc);
    rdma_destroy_event_channel(dev->ech);
    close(dev->evfd);
    close(dev->epfd);
}
