/* progress_stub.c - the progress engine's registrations and timers for the harnesses that run the
 * provider's objects without a progress thread (dp_stub.c, tests/fuzz/fuzz_rx.c): the harness
 * watches the QPs' sockets itself (reading the TX engine's wish for room from the pollable), and
 * no timer fires (a polled QP stays polled). Any thread; the callers' locks as in progress.c.
 * iw_progress_watch fails with iw_progress_stub_watch_err while a test sets it (dptest.h). */
#include "datapath.h"

#include <errno.h>

int iw_progress_add(struct iw_device *dev, struct iw_pollable *p, uint32_t events)
{
    (void)dev;
    p->events = events;
    return 0;
}

int iw_progress_mod(struct iw_device *dev, struct iw_pollable *p, uint32_t events)
{
    (void)dev;
    p->events = events;
    return 0;
}

atomic_int iw_progress_stub_watch_err;

int iw_progress_watch(struct iw_device *dev, struct iw_pollable *p, uint32_t events)
{
    int err = atomic_load(&iw_progress_stub_watch_err);

    (void)dev;
    if (err)
        return err;
    p->events = events;
    return 0;
}

void iw_progress_del(struct iw_device *dev, struct iw_pollable *p)
{
    (void)dev;
    p->events = 0;
}

int iw_progress_timer_init(struct iw_device *dev, struct iw_timer *t, void (*fn)(struct iw_timer *t, uint64_t now))
{
    (void)dev;
    t->fn = fn;
    t->slot = IW_TIMER_IDLE;
    return 0;
}

void iw_progress_timer_fini(struct iw_device *dev, struct iw_timer *t)
{
    (void)dev;
    t->slot = IW_TIMER_IDLE;
}

bool iw_progress_timer_arm(struct iw_device *dev, struct iw_timer *t, uint64_t deadline_ms)
{
    bool idle = t->slot == IW_TIMER_IDLE;
    (void)dev;
    t->deadline_ms = deadline_ms;
    t->slot = 0;
    return idle;
}

bool iw_progress_timer_cancel(struct iw_device *dev, struct iw_timer *t)
{
    bool armed = t->slot != IW_TIMER_IDLE;
    (void)dev;
    t->slot = IW_TIMER_IDLE;
    return armed;
}

/* No ring here unless a test plays it (iw_progress_stub_ring, dptest.h): then a lend is
 * accepted and the test queues and completes the receives itself; a reclaim finds none queued. */
atomic_int iw_progress_stub_ring;

int iw_progress_lend(struct iw_device *dev, struct iw_pollable *p)
{
    (void)dev;
    (void)p;
    return atomic_load(&iw_progress_stub_ring) ? 0 : -EOPNOTSUPP;
}

int iw_progress_reclaim(struct iw_device *dev, struct iw_pollable *p)
{
    (void)dev;
    (void)p;
    return 0;
}
