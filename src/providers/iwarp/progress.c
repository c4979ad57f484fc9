/* progress.c - the per-device progress engine: one thread owning an epoll set (sockets of
 * listeners, connectors and connected QPs), a work queue (deferred callbacks, close
 * completions, PnP events) and the CM timers. No thread per connection, no blocking socket call
 * (architecture.md; style-anchors A3 "progress engine").
 *
 * Lifetime rule for pollables: they are unregistered and their fds closed only on this thread,
 * so an event returned by epoll_wait can never name a freed pollable; objects free themselves
 * through the work queue, which runs only between epoll batches. */
#include "iwarp.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define IW_EPOLL_BATCH 64

uint64_t iw_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void iw_wake(struct iw_device *dev)
{
    uint64_t one = 1;
    ssize_t r;
    do
        r = write(dev->evfd, &one, sizeof one);
    while (r < 0 && errno == EINTR);
    /* EAGAIN means the counter is saturated: the thread is going to wake anyway. */
}

bool iw_work_queue(struct iw_device *dev, struct iw_work *w)
{
    bool queued = false;

    pthread_mutex_lock(&dev->wq_lock);
    if (!w->queued) {
        w->queued = true;
        ndk_list_add_tail(&dev->work, &w->link);
        queued = true;
    }
    pthread_mutex_unlock(&dev->wq_lock);
    if (queued && !iw_on_progress_thread(dev))
        iw_wake(dev);
    return queued;
}

void iw_progress_kick(struct iw_device *dev)
{
    if (!iw_on_progress_thread(dev))
        iw_wake(dev);
}

/* Set by the progress thread itself at start: pthread_create may store the thread id only after
 * the new thread already runs, so comparing pthread_self() with dev->thread would race. */
static __thread const struct iw_device *iw_tls_dev;

bool iw_on_progress_thread(const struct iw_device *dev)
{
    return iw_tls_dev == dev;
}

const struct iw_device *iw_progress_current(void)
{
    return iw_tls_dev;
}

int iw_poll_add(struct iw_device *dev, struct iw_pollable *p, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.ptr = p };

    if (epoll_ctl(dev->epfd, EPOLL_CTL_ADD, p->fd, &ev) < 0)
        return -errno;
    p->events = events;
    return 0;
}

int iw_poll_mod(struct iw_device *dev, struct iw_pollable *p, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.ptr = p };

    if (p->events == events)
        return 0;
    if (epoll_ctl(dev->epfd, EPOLL_CTL_MOD, p->fd, &ev) < 0)
        return -errno;
    p->events = events;
    return 0;
}

void iw_poll_del(struct iw_device *dev, struct iw_pollable *p)
{
    if (p->fd >= 0)
        epoll_ctl(dev->epfd, EPOLL_CTL_DEL, p->fd, NULL);
    p->events = 0;
}

/* Runs every queued work item. Items queued while running are run in the same pass, so a chain
 * of close completions (QP -> PD ...) drains before the next epoll_wait. Progress thread only. */
static void iw_run_work(struct iw_device *dev)
{
    for (;;) {
        struct iw_work *w;

        pthread_mutex_lock(&dev->wq_lock);
        if (ndk_list_empty(&dev->work)) {
            pthread_mutex_unlock(&dev->wq_lock);
            return;
        }
        w = ndk_list_entry(dev->work.next, struct iw_work, link);
        ndk_list_del(&w->link);
        w->queued = false;
        pthread_mutex_unlock(&dev->wq_lock);
        w->fn(w);
    }
}

static bool iw_work_pending(struct iw_device *dev)
{
    bool pending;
    pthread_mutex_lock(&dev->wq_lock);
    pending = !ndk_list_empty(&dev->work);
    pthread_mutex_unlock(&dev->wq_lock);
    return pending;
}

static void *iw_progress_main(void *arg)
{
    struct iw_device *dev = arg;
    struct epoll_event evs[IW_EPOLL_BATCH];

    iw_tls_dev = dev;
    while (!atomic_load(&dev->stopping) || iw_work_pending(dev)) {
        uint64_t now = iw_now_ms();
        int timeout = -1;

        iw_cm_run_timers(dev, now);
        iw_run_work(dev);
        /* Work and the handlers of the last pass may have set deadlines (iw_progress_kick does not
         * wake this thread for its own), so the wait is computed from the timers as they are now. */
        now = iw_now_ms();
        uint64_t next = iw_cm_run_timers(dev, now);
        uint64_t poll_next = iw_cm_poll_expire(dev, now);
        if (poll_next && (!next || poll_next < next))
            next = poll_next;
        if (iw_work_pending(dev))
            timeout = 0;
        else if (next)
            timeout = next > now ? (int)(next - now < 60000 ? next - now : 60000) : 0;
        if (atomic_load(&dev->stopping))
            timeout = timeout < 0 || timeout > 10 ? 10 : timeout;
        int n = epoll_wait(dev->epfd, evs, IW_EPOLL_BATCH, timeout);
        if (n < 0) {
            if (errno != EINTR)
                iw_derr(dev, "%s: epoll_wait: %s", dev->ifname, strerror(errno));
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL) {
                uint64_t v;
                if (read(dev->evfd, &v, sizeof v) < 0 && errno != EAGAIN)
                    iw_derr(dev, "%s: eventfd read: %s", dev->ifname, strerror(errno));
                continue;
            }
            struct iw_pollable *p = evs[i].data.ptr;
            p->handler(p, evs[i].events);
        }
    }
    iw_run_work(dev);
    return NULL;
}

int iw_progress_start(struct iw_device *dev)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    int err;

    ndk_list_init(&dev->work);
    pthread_mutex_init(&dev->wq_lock, NULL);
    atomic_init(&dev->stopping, false);
    dev->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (dev->epfd < 0)
        return -errno;
    dev->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (dev->evfd < 0) {
        err = -errno;
        close(dev->epfd);
        return err;
    }
    if (epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->evfd, &ev) < 0) {
        err = -errno;
        goto fail;
    }
    /* thread_running must be visible before the thread can queue work that checks it. */
    dev->thread_running = true;
    err = -pthread_create(&dev->thread, NULL, iw_progress_main, dev);
    if (err) {
        dev->thread_running = false;
        goto fail;
    }
    return 0;
fail:
    close(dev->evfd);
    close(dev->epfd);
    return err;
}

void iw_progress_stop(struct iw_device *dev)
{
    if (!dev->thread_running)
        return;
    atomic_store(&dev->stopping, true);
    iw_wake(dev);
    pthread_join(dev->thread, NULL);
    dev->thread_running = false;
    close(dev->evfd);
    close(dev->epfd);
    pthread_mutex_destroy(&dev->wq_lock);
}
