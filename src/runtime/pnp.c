/* pnp.c - the runtime's event thread: watches rtnetlink for interface and address changes
 * (re-binding adapters), and delivers PnP events to registered consumers one at a time, with no
 * runtime lock held, the way the PnP manager calls a protocol driver's PnP handler. */
#define _GNU_SOURCE
#include "rt_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* rt->lock held. */
void rt_pnp_queue_locked(struct ndk_rt *rt, ndk_rt_event_type type, const struct rt_adapter *a, ULONG target)
{
    /* Once the runtime is closing nobody will deliver it (a provider may still raise an event
     * while it is halted). */
    if (rt->stop)
        return;
    struct rt_event *e = calloc(1, sizeof *e);
    if (!e) {
        rt_log(rt, NDK_LOG_ERROR, "out of memory: PnP event %s for adapter %u lost", ndk_rt_event_name(type), a->id);
        return;
    }
    e->target = target;
    e->ev.type = type;
    e->ev.adapter = a->id;
    snprintf(e->ev.provider, sizeof e->ev.provider, "%s", a->prov->info.name);
    snprintf(e->ev.ifname, sizeof e->ev.ifname, "%s", a->netif.name);
    e->ev.ifindex = (ULONG)a->netif.ifindex;
    ndk_list_add_tail(&rt->events, &e->link);
}

/* Never blocks for long; any thread; rt->lock must not be held (it guards wake_fd against the
 * close in rt_pnp_stop, which provider threads raising PnP events could otherwise race). */
void rt_pnp_wake(struct ndk_rt *rt)
{
    uint64_t one = 1;
    int err = 0;
    pthread_mutex_lock(&rt->lock);
    if (rt->wake_fd >= 0 && write(rt->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        err = errno;
    pthread_mutex_unlock(&rt->lock);
    if (err)
        rt_log(rt, NDK_LOG_ERROR, "event thread wake-up failed: %s", strerror(err));
}

/* Event thread only; rt->lock not held on entry or exit. Delivers every queued event. */
static void deliver_events(struct ndk_rt *rt)
{
    pthread_mutex_lock(&rt->lock);
    while (!ndk_list_empty(&rt->events)) {
        struct rt_event *e = ndk_list_entry(rt->events.next, struct rt_event, link);
        ndk_list_del(&e->link);
        /* Each registration is called with the lock dropped; running keeps unregister waiting. */
        ULONG next_id = 0;
        for (;;) {
            struct rt_registration *r = NULL;
            struct ndk_list *it;
            ndk_list_for_each(it, &rt->registrations) {
                struct rt_registration *c = ndk_list_entry(it, struct rt_registration, link);
                if (c->id > next_id && !c->dead && (e->target == 0 || e->target == c->id) && (!r || c->id < r->id))
                    r = c;
            }
            if (!r)
                break;
            next_id = r->id;
            r->running = 1;
            pthread_mutex_unlock(&rt->lock);
            r->fn(r->ctx, &e->ev);
            pthread_mutex_lock(&rt->lock);
            r->running = 0;
            pthread_cond_broadcast(&rt->cond);
        }
        free(e);
    }
    /* Reap unregistered entries nobody is calling any more. */
    struct ndk_list *it, *tmp;
    ndk_list_for_each_safe(it, tmp, &rt->registrations) {
        struct rt_registration *r = ndk_list_entry(it, struct rt_registration, link);
        if (r->dead && !r->running) {
            ndk_list_del(&r->link);
            free(r);
        }
    }
    pthread_mutex_unlock(&rt->lock);
}

static void *event_thread(void *arg)
{
    struct ndk_rt *rt = arg;
    for (;;) {
        struct pollfd fds[2] = { { rt->wake_fd, POLLIN, 0 }, { -1, POLLIN, 0 } };
        if (rt->monitor)
            fds[1].fd = ndk_netif_monitor_fd(rt->monitor);
        int n = poll(fds, rt->monitor ? 2 : 1, -1);
        if (n < 0 && errno != EINTR) {
            rt_log(rt, NDK_LOG_ERROR, "event thread poll: %s", strerror(errno));
            usleep(10000);
        }
        if (fds[0].revents & POLLIN) {
            uint64_t v;
            if (read(rt->wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
                rt_log(rt, NDK_LOG_ERROR, "event thread read: %s", strerror(errno));
        }
        pthread_mutex_lock(&rt->lock);
        int stop = rt->stop;
        pthread_mutex_unlock(&rt->lock);
        if (stop)
            break;
        if (rt->monitor && (fds[1].revents & (POLLIN | POLLERR))) {
            int rc = ndk_netif_monitor_drain(rt->monitor);
            int resync = rc != 0;
            if (rc < 0) {
                /* A broken monitor socket would make poll spin: replace it and resynchronise,
                 * since changes may have been lost with it. */
                rt_log(rt, NDK_LOG_ERROR, "rtnetlink monitor: %s; reopening it", strerror(-rc));
                ndk_netif_monitor_close(rt->monitor);
                rt->monitor = NULL;
                rc = ndk_netif_monitor_open(&rt->monitor);
                if (rc < 0) {
                    rt_log(rt, NDK_LOG_ERROR, "cannot reopen the rtnetlink monitor: %s", strerror(-rc));
                    rt->monitor = NULL;
                }
            }
            if (resync)
                rt_registry_sync(rt);
        }
        deliver_events(rt);
    }
    /* Consumers registered until the end still get what was queued before the stop. */
    deliver_events(rt);
    return NULL;
}

/* May block briefly; rt->lock not held. */
int rt_pnp_start(struct ndk_rt *rt)
{
    rt->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (rt->wake_fd < 0)
        return -errno;
    int rc = pthread_create(&rt->thread, NULL, event_thread, rt);
    if (rc != 0)
        return -rc;
    rt->thread_started = 1;
    return 0;
}

/* May block (joins the event thread); rt->lock not held; never from the event thread. */
void rt_pnp_stop(struct ndk_rt *rt)
{
    pthread_mutex_lock(&rt->lock);
    rt->stop = 1;
    pthread_mutex_unlock(&rt->lock);
    if (rt->thread_started) {
        rt_pnp_wake(rt);
        pthread_join(rt->thread, NULL);
        rt->thread_started = 0;
    }
    pthread_mutex_lock(&rt->lock);
    if (rt->wake_fd >= 0)
        close(rt->wake_fd);
    rt->wake_fd = -1;
    pthread_mutex_unlock(&rt->lock);
    while (!ndk_list_empty(&rt->events)) {
        struct rt_event *e = ndk_list_entry(rt->events.next, struct rt_event, link);
        ndk_list_del(&e->link);
        free(e);
    }
    while (!ndk_list_empty(&rt->registrations)) {
        struct rt_registration *r = ndk_list_entry(rt->registrations.next, struct rt_registration, link);
        ndk_list_del(&r->link);
        free(r);
    }
}
