/* Held callbacks: an in-process filter takes every consumer callback (ndk_filter_cb_hold) and
 * delivers it 2 ms later from a thread of its own, as a filter that delays completions does.
 * The whole exchange (connect, Send, Write, Read, every byte checked, every close) must still
 * work through it: a close completion waits for the callbacks held on its object and comes last,
 * and the adapter close waits until every held callback went up. A second filter under it
 * counts what comes up from the provider: every one of those is held and delivered. */
#define _GNU_SOURCE
#include "filtest.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MAX 4096

struct holder {
    pthread_mutex_t lock;            /* guards the queue and stop */
    pthread_cond_t  cond;
    ndk_filter_cb  *queue[HOLD_MAX];
    uint64_t        due[HOLD_MAX];
    size_t          n;
    int             stop;
    atomic_int      held, delivered, closes_last_bad;
    pthread_t       thread;
};

static uint64_t now_ms(void)
{
    return ndk_test_now_ms();
}

static void *delayer(void *arg)
{
    struct holder *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stop || h->n) {
        if (!h->n) {
            pthread_cond_wait(&h->cond, &h->lock);
            continue;
        }
        if (h->due[0] > now_ms()) {
            pthread_mutex_unlock(&h->lock);
            usleep(500);
            pthread_mutex_lock(&h->lock);
            continue;
        }
        ndk_filter_cb *cb = h->queue[0];
        memmove(h->queue, h->queue + 1, (h->n - 1) * sizeof h->queue[0]);
        memmove(h->due, h->due + 1, (h->n - 1) * sizeof h->due[0]);
        h->n--;
        pthread_mutex_unlock(&h->lock);   /* never deliver with our lock held */
        ndk_filter_deliver(cb);
        atomic_fetch_add(&h->delivered, 1);
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

static void hold_callback(void *ctx, ndk_filter_cb *cb)
{
    struct holder *h = ctx;
    ndk_filter_cb *copy = ndk_filter_cb_hold(cb);
    if (!copy)
        return;   /* the layer delivers it now */
    pthread_mutex_lock(&h->lock);
    CHECK(h->n < HOLD_MAX);
    h->queue[h->n] = copy;
    h->due[h->n++] = now_ms() + 2;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->lock);
    atomic_fetch_add(&h->held, 1);
}

static NTSTATUS hold_open(void *module_ctx, ndk_filter_module *module, const char *name, void **inst)
{
    (void)module;
    (void)name;
    *inst = module_ctx;
    return STATUS_SUCCESS;
}

static const ndk_filter_ops hold_ops = {
    .size = sizeof(ndk_filter_ops),
    .abi_version = NDK_FILTER_ABI_VERSION,
    .name = "hold",
    .open = hold_open,
    .callback = hold_callback,
};

int main(void)
{
    struct holder h;
    struct ft_count count;
    memset(&h, 0, sizeof h);
    memset(&count, 0, sizeof count);
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.cond, NULL);
    CHECK(pthread_create(&h.thread, NULL, delayer, &h) == 0);

    struct iwt t;
    ft_env(NULL);
    iwt_open(&t, AF_INET);
    ndk_filter_inproc f[2] = { { .ops = &hold_ops, .context = &h }, { .ops = &ft_count_ops, .context = &count } };
    ft_reopen(&t, f, 2);
    ft_exchange(&t);
    iwt_close(&t);   /* returns only once every held callback went up */

    int seen = 0;
    for (int i = 0; i < 16; i++)
        seen += atomic_load(&count.cbs[i]);
    CHECK_MSG(atomic_load(&h.held) == atomic_load(&h.delivered), "%d held, %d delivered by the time the adapter closed",
              atomic_load(&h.held), atomic_load(&h.delivered));
    /* Every callback from below went up through the holder, and some more: a close that completed
     * inline below while a callback of its object was held becomes STATUS_PENDING, and its close
     * completion comes from the holder's layer. */
    CHECK_MSG(atomic_load(&h.held) >= seen, "%d held, %d from below", atomic_load(&h.held), seen);
    CHECK(seen > 0);
    for (int ty = 1; ty < NdkObjectTypeMax; ty++)
        CHECK_EQ(atomic_load(&count.created[ty]), atomic_load(&count.destroyed[ty]));
    pthread_mutex_lock(&h.lock);
    h.stop = 1;
    pthread_cond_signal(&h.cond);
    pthread_mutex_unlock(&h.lock);
    pthread_join(h.thread, NULL);
    printf("ok: %d callbacks held and delivered late\n", seen);
    return 0;
}
