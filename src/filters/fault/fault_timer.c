/* fault_timer: one thread that delivers held callbacks (delayed notifications, delayed
 * connect failures) when their time comes. The layer keeps an object's close completion, and
 * the adapter close, waiting until a held callback was delivered, so nothing is delivered after
 * a close. */
#include "fault.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

struct timer_item {
    struct timer_item *next;
    uint64_t           due_ns;
    ndk_filter_cb     *cb;            /* a held callback to deliver, or */
    void             (*fn)(void *);   /* a function to run */
    void              *arg;
    const void        *key;           /* for flt_fault_timer_cancel */
};

/* timer_mu guards items, running and stopping; timer_cv wakes the thread. */
static pthread_mutex_t timer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_cv;
static struct timer_item *items;   /* sorted by due_ns */
static pthread_t timer_thread;
static bool running, stopping;
static const void *running_key;    /* the key of the item being run, NULL when none */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The timer thread: delivers due callbacks with no lock held. */
static void *timer_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&timer_mu);
    for (;;) {
        if (!items) {
            if (stopping)
                break;
            pthread_cond_wait(&timer_cv, &timer_mu);
            continue;
        }
        uint64_t now = now_ns();
        if (items->due_ns > now && !stopping) {
            struct timespec ts = { (time_t)(items->due_ns / 1000000000ull), (long)(items->due_ns % 1000000000ull) };
            pthread_cond_timedwait(&timer_cv, &timer_mu, &ts);
            continue;
        }
        struct timer_item *it = items;
        items = it->next;
        running_key = it->key;
        pthread_mutex_unlock(&timer_mu);
        if (it->cb)
            ndk_filter_deliver(it->cb);
        else
            it->fn(it->arg);
        free(it);
        pthread_mutex_lock(&timer_mu);
        running_key = NULL;
        pthread_cond_broadcast(&timer_cv);
    }
    pthread_mutex_unlock(&timer_mu);
    return NULL;
}

/* At load; may block. */
int flt_fault_timer_start(void)
{
    pthread_mutex_lock(&timer_mu);
    int rc = 0;
    if (!running) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&timer_cv, &ca);
        pthread_condattr_destroy(&ca);
        stopping = false;
        rc = -pthread_create(&timer_thread, NULL, timer_main, NULL);
        running = rc == 0;
    }
    pthread_mutex_unlock(&timer_mu);
    return rc;
}

/* Queues it; timer_mu held. */
static void enqueue(struct timer_item *it, unsigned delay_ms)
{
    it->due_ns = now_ns() + (uint64_t)delay_ms * 1000000ull;
    struct timer_item **p = &items;
    while (*p && (*p)->due_ns <= it->due_ns)
        p = &(*p)->next;
    it->next = *p;
    *p = it;
    pthread_cond_broadcast(&timer_cv);
}

/* Any thread; never blocks beyond timer_mu. */
void flt_fault_timer_deliver_later(ndk_filter_cb *cb, unsigned delay_ms)
{
    struct timer_item *it = calloc(1, sizeof *it);
    pthread_mutex_lock(&timer_mu);
    if (!it || !running) {
        pthread_mutex_unlock(&timer_mu);
        free(it);
        ndk_filter_deliver(cb);
        return;
    }
    it->cb = cb;
    enqueue(it, delay_ms);
    pthread_mutex_unlock(&timer_mu);
}

/* Any thread; never blocks beyond timer_mu. Returns -ENOMEM (nothing queued) or 0. */
int flt_fault_timer_call_later(const void *key, unsigned delay_ms, void (*fn)(void *), void *arg)
{
    struct timer_item *it = calloc(1, sizeof *it);
    if (!it)
        return -ENOMEM;
    it->fn = fn;
    it->arg = arg;
    it->key = key;
    pthread_mutex_lock(&timer_mu);
    if (!running) {
        pthread_mutex_unlock(&timer_mu);
        free(it);
        return -ESRCH;
    }
    enqueue(it, delay_ms);
    pthread_mutex_unlock(&timer_mu);
    return 0;
}

/* Drops the queued functions of key and waits while one of them runs (on another thread: never
 * call it from such a function). Waits only for a function already running. */
void flt_fault_timer_cancel(const void *key)
{
    pthread_mutex_lock(&timer_mu);
    for (struct timer_item **p = &items; *p;) {
        if ((*p)->key == key && !(*p)->cb) {
            struct timer_item *dead = *p;
            *p = dead->next;
            free(dead);
        } else {
            p = &(*p)->next;
        }
    }
    /* From the timer thread itself (a consumer closing the CQ from the notification we run),
     * the running function is the caller: nothing to wait for. */
    while (running && running_key == key && !pthread_equal(pthread_self(), timer_thread))
        pthread_cond_wait(&timer_cv, &timer_mu);
    pthread_mutex_unlock(&timer_mu);
}

/* At unload: whatever is still held is delivered now. May block (joins). */
void flt_fault_timer_stop(void)
{
    pthread_mutex_lock(&timer_mu);
    if (!running) {
        pthread_mutex_unlock(&timer_mu);
        return;
    }
    stopping = true;
    pthread_cond_signal(&timer_cv);
    pthread_mutex_unlock(&timer_mu);
    pthread_join(timer_thread, NULL);
    pthread_mutex_lock(&timer_mu);
    running = false;
    pthread_cond_destroy(&timer_cv);
    pthread_mutex_unlock(&timer_mu);
}
