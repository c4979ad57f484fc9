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
    ndk_filter_cb     *cb;
};

/* timer_mu guards items, running and stopping; timer_cv wakes the thread. */
static pthread_mutex_t timer_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timer_cv;
static struct timer_item *items;   /* sorted by due_ns */
static pthread_t timer_thread;
static bool running, stopping;

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
        pthread_mutex_unlock(&timer_mu);
        ndk_filter_deliver(it->cb);
        free(it);
        pthread_mutex_lock(&timer_mu);
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
    it->due_ns = now_ns() + (uint64_t)delay_ms * 1000000ull;
    struct timer_item **p = &items;
    while (*p && (*p)->due_ns <= it->due_ns)
        p = &(*p)->next;
    it->next = *p;
    *p = it;
    pthread_cond_signal(&timer_cv);
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
