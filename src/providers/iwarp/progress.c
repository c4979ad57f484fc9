/* progress.c - the per-device progress engine: one thread owning an epoll set (sockets of
 * listeners, connectors and connected QPs), a work queue (deferred callbacks, close
 * completions, PnP events) and a heap of timers (CM deadlines, the listener's accept back-off,
 * the polled-QP expiry). No thread per connection, no blocking socket call
 * (docs/architecture.md). Where io_uring is there, the thread
 * sleeps in a ring that waits for the epoll set and receives the next bytes of one lent socket
 * (the ring wait below).
 *
 * Lifetime rule for pollables: they are unregistered and their fds closed only on this thread,
 * so an event returned by epoll_wait can never name a freed pollable; objects free themselves
 * through the work queue, which runs only between epoll batches.
 *
 * Talks to: log.c only; everything else reaches it (pollables, work, timers) and it calls back
 * only through the handlers registered with it (and a lent pollable's ring_arm / ring_done). */
#include "iwarp.h"
#include "sysio.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#ifdef IW_HAVE_URING
#include <liburing.h>
#endif

#define IW_EPOLL_BATCH 64

static void iw_wake(struct iw_device *dev)
{
    uint64_t one = 1;
    ssize_t r;
    do
        r = write(dev->evfd, &one, sizeof one);
    while (r < 0 && errno == EINTR);
    /* EAGAIN means the counter is saturated: the thread is going to wake anyway. */
}

bool iw_progress_queue(struct iw_device *dev, struct iw_work *w)
{
    /* Whoever turns queued on owns putting w on a list; the progress thread turns it off only
     * after taking w off, so w is never on two lists. acq_rel: the item's state written before
     * the queueing is seen by the run, and a run that ended is seen by the next queueing. */
    if (atomic_exchange_explicit(&w->queued, true, memory_order_acq_rel))
        return false;
    if (iw_progress_on_thread(dev)) {
        /* The progress thread runs it before it next waits: no lock, no wake-up. */
        ndk_list_add_tail(&dev->local_work, &w->link);
        return true;
    }
    pthread_mutex_lock(&dev->wq_lock);
    ndk_list_add_tail(&dev->work, &w->link);
    atomic_fetch_add_explicit(&dev->nwork, 1, memory_order_relaxed);
    pthread_mutex_unlock(&dev->wq_lock);
    iw_wake(dev);
    return true;
}

/* One epoll_ctl() on p's socket; p->events follows it when it succeeds. */
static int progress_ctl(struct iw_device *dev, struct iw_pollable *p, int op, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.ptr = p };

    if (epoll_ctl(dev->epfd, op, p->fd, &ev) < 0)
        return -errno;
    p->events = events;
    return 0;
}

int iw_progress_add(struct iw_device *dev, struct iw_pollable *p, uint32_t events)
{
    return progress_ctl(dev, p, EPOLL_CTL_ADD, events);
}

int iw_progress_mod(struct iw_device *dev, struct iw_pollable *p, uint32_t events)
{
    return p->events == events ? 0 : progress_ctl(dev, p, EPOLL_CTL_MOD, events);
}

int iw_progress_watch(struct iw_device *dev, struct iw_pollable *p, uint32_t events)
{
    int op = !events ? EPOLL_CTL_DEL : p->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;

    return p->events == events ? 0 : progress_ctl(dev, p, op, events);
}

void iw_progress_del(struct iw_device *dev, struct iw_pollable *p)
{
    if (p->fd >= 0)
        epoll_ctl(dev->epfd, EPOLL_CTL_DEL, p->fd, NULL);
    p->events = 0;
}

/* ---- timers: a binary min-heap of deadlines (dev->timer_lock) ---- */

static bool iw_heap_before(const struct iw_timer *a, const struct iw_timer *b)
{
    return a->deadline_ms < b->deadline_ms;
}

static void iw_heap_place(struct iw_device *dev, uint32_t i, struct iw_timer *t)
{
    dev->timer_heap[i] = t;
    t->slot = i;
}

/* After every change of the heap. timer_lock held. */
static void iw_heap_publish(struct iw_device *dev)
{
    uint64_t d = dev->timer_count ? dev->timer_heap[0]->deadline_ms : 0;

    /* 0 means none: a deadline of 0 (due at once) is published as 1, due as well. */
    atomic_store_explicit(&dev->timer_next, dev->timer_count && d == 0 ? 1 : d, memory_order_relaxed);
}

/* Moves the timer at slot i up or down until the heap order holds again. timer_lock held. */
static void iw_heap_fix(struct iw_device *dev, uint32_t i)
{
    struct iw_timer **h = dev->timer_heap;
    struct iw_timer *t = h[i];

    while (i > 0 && iw_heap_before(t, h[(i - 1) / 2])) {
        iw_heap_place(dev, i, h[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= dev->timer_count)
            break;
        if (c + 1 < dev->timer_count && iw_heap_before(h[c + 1], h[c]))
            c++;
        if (!iw_heap_before(h[c], t))
            break;
        iw_heap_place(dev, i, h[c]);
        i = c;
    }
    iw_heap_place(dev, i, t);
    iw_heap_publish(dev);
}

static void iw_heap_remove(struct iw_device *dev, struct iw_timer *t)
{
    uint32_t i = t->slot;
    struct iw_timer *last = dev->timer_heap[--dev->timer_count];

    t->slot = IW_TIMER_IDLE;
    if (last != t) {
        iw_heap_place(dev, i, last);
        iw_heap_fix(dev, i);
    } else {
        iw_heap_publish(dev);
    }
}

int iw_progress_timer_init(struct iw_device *dev, struct iw_timer *t, void (*fn)(struct iw_timer *t, uint64_t now))
{
    int err = 0;

    t->fn = fn;
    t->slot = IW_TIMER_IDLE;
    t->deadline_ms = 0;
    pthread_mutex_lock(&dev->timer_lock);
    if (dev->timer_reserved == dev->timer_cap) {
        uint32_t cap = dev->timer_cap ? 2 * dev->timer_cap : 64;
        struct iw_timer **h = realloc(dev->timer_heap, cap * sizeof(*h));
        if (h) {
            dev->timer_heap = h;
            dev->timer_cap = cap;
        } else {
            err = -ENOMEM;
        }
    }
    if (!err)
        dev->timer_reserved++;
    pthread_mutex_unlock(&dev->timer_lock);
    return err;
}

void iw_progress_timer_fini(struct iw_device *dev, struct iw_timer *t)
{
    pthread_mutex_lock(&dev->timer_lock);
    if (t->slot != IW_TIMER_IDLE)
        iw_heap_remove(dev, t);
    dev->timer_reserved--;
    pthread_mutex_unlock(&dev->timer_lock);
}

bool iw_progress_timer_arm(struct iw_device *dev, struct iw_timer *t, uint64_t deadline_ms)
{
    bool was_idle, earliest;

    pthread_mutex_lock(&dev->timer_lock);
    was_idle = t->slot == IW_TIMER_IDLE;
    t->deadline_ms = deadline_ms;
    if (was_idle)
        iw_heap_place(dev, dev->timer_count++, t);   /* room reserved by iw_progress_timer_init */
    iw_heap_fix(dev, t->slot);
    earliest = t->slot == 0;
    pthread_mutex_unlock(&dev->timer_lock);
    /* The progress thread recomputes its wait after every pass, so only others must wake it. */
    if (earliest && !iw_progress_on_thread(dev))
        iw_wake(dev);
    return was_idle;
}

bool iw_progress_timer_cancel(struct iw_device *dev, struct iw_timer *t)
{
    bool armed;

    pthread_mutex_lock(&dev->timer_lock);
    armed = t->slot != IW_TIMER_IDLE;
    if (armed)
        iw_heap_remove(dev, t);
    pthread_mutex_unlock(&dev->timer_lock);
    return armed;
}

/* Fires the due timers, each with no lock held; returns the next deadline (0 = none) and in
 * *now the time it read, which it reads only when a timer is armed (between a connection's
 * messages none is). Progress thread only. */
static uint64_t iw_run_timers(struct iw_device *dev, uint64_t *now_out)
{
    uint64_t next = atomic_load_explicit(&dev->timer_next, memory_order_relaxed), now;

    if (next == 0)
        return 0;                                  /* no timer: no clock read, no lock */
    now = *now_out = iw_now_ms();
    if (next > now)
        return next;                               /* nothing due: no lock */
    pthread_mutex_lock(&dev->timer_lock);
    while (dev->timer_count && dev->timer_heap[0]->deadline_ms <= now) {
        struct iw_timer *t = dev->timer_heap[0];
        iw_heap_remove(dev, t);
        pthread_mutex_unlock(&dev->timer_lock);
        t->fn(t, now);
        pthread_mutex_lock(&dev->timer_lock);
    }
    next = dev->timer_count ? dev->timer_heap[0]->deadline_ms : 0;
    pthread_mutex_unlock(&dev->timer_lock);
    return next;
}

/* Runs every queued work item, the progress thread's own (local_work) first. Items queued while
 * running are run in the same pass, so a chain of close completions (QP -> PD ...) drains before
 * the next epoll_wait. Order between the two lists does not matter: every item that calls back
 * for an object holds a reference, so that object's close cannot finish before it runs. Progress
 * thread only: no other thread takes items off either list, so a non-zero nwork means one is on
 * dev->work. */
static void iw_run_work(struct iw_device *dev)
{
    for (;;) {
        struct iw_work *w;

        if (!ndk_list_empty(&dev->local_work)) {
            w = ndk_list_entry(dev->local_work.next, struct iw_work, link);
            ndk_list_del(&w->link);
        } else if (atomic_load_explicit(&dev->nwork, memory_order_relaxed)) {
            pthread_mutex_lock(&dev->wq_lock);
            w = ndk_list_entry(dev->work.next, struct iw_work, link);
            ndk_list_del(&w->link);
            atomic_fetch_sub_explicit(&dev->nwork, 1, memory_order_relaxed);
            pthread_mutex_unlock(&dev->wq_lock);
        } else {
            return;
        }
        /* An exchange, not a store: it reads the last queueing attempt (one merged into this
         * run included), so what that attempt wrote before it is visible to fn. */
        atomic_exchange_explicit(&w->queued, false, memory_order_acq_rel);
        w->fn(w);
    }
}

static bool iw_work_pending(struct iw_device *dev)
{
    return !ndk_list_empty(&dev->local_work) || atomic_load_explicit(&dev->nwork, memory_order_relaxed) != 0;
}

/* One epoll_wait and the handlers of what it returned. Progress thread. */
static void iw_progress_epoll(struct iw_device *dev, int timeout)
{
    struct epoll_event evs[IW_EPOLL_BATCH];
    int n = iw_sys_epoll_wait(dev->epfd, evs, IW_EPOLL_BATCH, timeout);

    if (n < 0) {
        if (errno != EINTR)
            iw_derr(dev, "%s: epoll_wait: %s", dev->ifname, strerror(errno));
        return;
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

/* ---- the ring wait (iw_progress_lend): io_uring beside the epoll set ----
 * The ring holds at most a receive on the lent socket and a one-shot poll of the epoll set (a
 * one-shot poll checks the set when queued, so what level-triggered epoll still holds from the
 * last batch is not missed, as it would be by a multishot poll that fires only on wake-ups).
 * Created by the progress thread itself: single issuer with deferred task work, so completions
 * run only inside this thread's own io_uring_enter, which is the cheapest wake-up measured
 * (bench/wait_floor). All of it is the progress thread's: no lock. */
#ifdef IW_HAVE_URING
enum { IW_RING_EPOLL = 1, IW_RING_RECV, IW_RING_CANCEL };

struct iw_ring {
    struct io_uring uring;
    struct iw_pollable *lent;
    bool recv_queued, epoll_queued;
    uint8_t buf[IW_RING_BUF];
};

static void iw_ring_open(struct iw_device *dev)
{
    struct iw_ring *r = calloc(1, sizeof *r);
    int err;

    if (!r)
        return;
    err = io_uring_queue_init(8, &r->uring, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
    if (err == -EINVAL)                   /* kernels before 6.1 */
        err = io_uring_queue_init(8, &r->uring, 0);
    if (err < 0) {
        iw_dinfo(dev, "%s: no io_uring (%s): the progress thread waits in epoll_wait only", dev->ifname,
                 strerror(-err));
        free(r);
        return;
    }
    (void)io_uring_register_ring_fd(&r->uring);   /* only saves a file lookup per enter */
    dev->ring = r;
}

/* At the thread's end. A socket still lent (its QP outlived the device's stop) gets its reads
 * back first, so that no receive can still write into the buffer freed here. */
static void iw_ring_close(struct iw_device *dev)
{
    if (dev->ring && dev->ring->lent)
        (void)iw_progress_reclaim(dev, dev->ring->lent);   /* may abandon the ring */
    if (dev->ring) {
        io_uring_queue_exit(&dev->ring->uring);
        free(dev->ring);
        dev->ring = NULL;
    }
}

/* io_uring_get_sqe cannot fail here: at most three entries are ever queued in eight. */
static struct io_uring_sqe *iw_ring_sqe(struct iw_ring *r, uint64_t tag)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->uring);

    io_uring_sqe_set_data64(sqe, tag);
    return sqe;
}

/* Takes one completion off the ring and acts on it; returns its tag (0: none there). The
 * receive's result goes to the lent pollable (reclaiming: from iw_progress_reclaim) and its
 * error into *err. */
static int iw_ring_take(struct iw_ring *r, bool reclaiming, int *err)
{
    struct io_uring_cqe *cqe;

    if (io_uring_peek_cqe(&r->uring, &cqe) != 0)
        return 0;
    int tag = (int)io_uring_cqe_get_data64(cqe), res = cqe->res;
    io_uring_cqe_seen(&r->uring, cqe);
    if (tag == IW_RING_EPOLL) {
        r->epoll_queued = false;
    } else if (tag == IW_RING_RECV) {
        r->recv_queued = false;
        /* ring_done may reclaim (its error path unregisters the socket): nothing is queued now. */
        int e = r->lent ? r->lent->ring_done(r->lent, r->buf, res, reclaiming) : 0;
        if (err)
            *err = e;
    }
    return tag;
}

/* Sleeps in the ring while a socket is lent to it; false when none is (then the caller waits in
 * epoll_wait). */
static bool iw_ring_wait(struct iw_device *dev, int timeout)
{
    struct iw_ring *r = dev->ring;
    struct io_uring_cqe *cqe;
    bool epoll_ready = false;

    if (!r || !r->lent)
        return false;
    if (!r->recv_queued) {
        struct iw_pollable *p = r->lent;
        if (!p->ring_arm(p))
            return false;                 /* the pollable took its reads back (reclaim) */
        io_uring_prep_recv(iw_ring_sqe(r, IW_RING_RECV), p->fd, r->buf, sizeof r->buf, 0);
        r->recv_queued = true;
    }
    if (!r->epoll_queued) {
        io_uring_prep_poll_add(iw_ring_sqe(r, IW_RING_EPOLL), dev->epfd, POLLIN);
        r->epoll_queued = true;
    }
    struct __kernel_timespec ts = { .tv_sec = timeout / 1000, .tv_nsec = (long long)(timeout % 1000) * 1000000 };
    int err = io_uring_submit_and_wait_timeout(&r->uring, &cqe, 1, timeout >= 0 ? &ts : NULL, NULL);
    if (err < 0 && err != -ETIME && err != -EINTR && err != -EBUSY)
        iw_derr(dev, "%s: io_uring_enter: %s", dev->ifname, strerror(-err));
    for (int tag; (tag = iw_ring_take(r, false, NULL)) != 0;)
        epoll_ready |= tag == IW_RING_EPOLL;
    if (epoll_ready)
        iw_progress_epoll(dev, 0);
    return true;
}

/* The ring cannot say what became of the queued receive: it may have taken bytes of the
 * stream, so the lent connection fails (the caller's -EIO), and the device goes on with epoll
 * alone. The ring and its buffer are left to the kernel, never freed: the receive may still
 * write into that buffer. */
static void iw_ring_abandon(struct iw_device *dev, int e)
{
    iw_derr(dev, "%s: io_uring wait for a cancelled receive: %s; the progress thread waits in epoll_wait only "
            "from now on", dev->ifname, strerror(-e));
    dev->ring = NULL;
}

int iw_progress_lend(struct iw_device *dev, struct iw_pollable *p)
{
    if (!dev->ring)
        return -EOPNOTSUPP;
    if (dev->ring->lent)
        return -EBUSY;
    dev->ring->lent = p;
    return 0;
}

int iw_progress_reclaim(struct iw_device *dev, struct iw_pollable *p)
{
    struct iw_ring *r = dev->ring;
    int err = 0;

    if (!r || r->lent != p)
        return 0;
    if (r->recv_queued) {
        io_uring_prep_cancel64(iw_ring_sqe(r, IW_RING_CANCEL), IW_RING_RECV, 0);
        io_uring_submit(&r->uring);
        /* The receive completes, cancelled or with bytes that arrived first (they are handed
         * over, not lost); the poll of the epoll set that may complete meanwhile is queued
         * again by the next wait, and finds what epoll holds then. */
        while (r->recv_queued) {
            struct io_uring_cqe *cqe;
            int e = io_uring_wait_cqe(&r->uring, &cqe);
            if (e < 0 && e != -EINTR) {
                iw_ring_abandon(dev, e);
                return p->ring_done(p, NULL, -EIO, true);
            }
            while (r->recv_queued && iw_ring_take(r, true, &err) != 0)
                ;
        }
    }
    r->lent = NULL;
    return err;
}
#else
static void iw_ring_open(struct iw_device *dev)
{
    iw_dinfo(dev, "%s: built without liburing: the progress thread waits in epoll_wait only", dev->ifname);
}

static void iw_ring_close(struct iw_device *dev)
{
    (void)dev;
}

static bool iw_ring_wait(struct iw_device *dev, int timeout)
{
    (void)dev;
    (void)timeout;
    return false;
}

int iw_progress_lend(struct iw_device *dev, struct iw_pollable *p)
{
    (void)dev;
    (void)p;
    return -EOPNOTSUPP;
}

int iw_progress_reclaim(struct iw_device *dev, struct iw_pollable *p)
{
    (void)dev;
    (void)p;
    return 0;
}
#endif

static void *iw_progress_main(void *arg)
{
    struct iw_device *dev = arg;

    atomic_store_explicit(&dev->progress_self, iw_thread_self(), memory_order_relaxed);
    iw_log_bind_thread(dev);
    if (!dev->no_progress_ring)
        iw_ring_open(dev);
    while (!atomic_load(&dev->stopping) || iw_work_pending(dev)) {
        int timeout = -1;

        iw_run_work(dev);
        /* After the work: the timers that fell due during the wait run now, and the work and the
         * handlers of the last pass may have set deadlines (arming a timer does not wake this
         * thread for its own), so the wait is computed from the timers as they are now. At most
         * one clock read per pass: work a timer queues makes the next wait a look (timeout 0). */
        uint64_t now = 0;
        uint64_t next = iw_run_timers(dev, &now);
        if (iw_work_pending(dev))
            timeout = 0;
        else if (next)
            timeout = next > now ? (int)(next - now < 60000 ? next - now : 60000) : 0;
        if (atomic_load(&dev->stopping))
            timeout = timeout < 0 || timeout > 10 ? 10 : timeout;
        if (!iw_ring_wait(dev, timeout))
            iw_progress_epoll(dev, timeout);
    }
    iw_run_work(dev);
    iw_ring_close(dev);
    atomic_store_explicit(&dev->progress_self, 0, memory_order_relaxed);
    return NULL;
}

int iw_progress_start(struct iw_device *dev)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    int err;

    ndk_list_init(&dev->work);
    ndk_list_init(&dev->local_work);
    pthread_mutex_init(&dev->wq_lock, NULL);
    pthread_mutex_init(&dev->timer_lock, NULL);
    atomic_init(&dev->stopping, false);
    atomic_init(&dev->nwork, 0);
    atomic_init(&dev->timer_next, 0);
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
    pthread_mutex_destroy(&dev->timer_lock);
    free(dev->timer_heap);
    dev->timer_heap = NULL;
}
