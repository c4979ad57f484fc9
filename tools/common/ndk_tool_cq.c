/* ndk_tool_cq.c - a tool's completion queue: waits, kicks and handler runs (ndk_tool_cq.h). */
#include "ndk_tool_cq.h"

#include <stdlib.h>

#include "ndk_sync.h"
#include "ndk_sync_time.h"
#include "ndk_tool.h"

#define TOOL_CQ_BATCH 64
#define TOOL_CQ_CB_OWNED 1
#define TOOL_CQ_CB_BUSY 2

/* Counts a batch for the progress display. One writer at a time, the CQ's owner (its hand-offs
 * order one owner's writes before the next's), so a load and a store, not a locked add. */
static void tool_cq_count_batch(ndk_tool_cq *c)
{
    __atomic_store_n(&c->batches, __atomic_load_n(&c->batches, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* The CQ's owner (the notification callback, or the thread of ndk_tool_cq_run while it hands
 * the CQ over): feeds the handler until the CQ is empty, then arms. No look after the arm: a
 * completion that came between the empty poll and the arm satisfies it at once (§5.7 rule 2,
 * both providers), so its notification follows this one, and a look would cost every message a
 * poll.
 * Returns false once the handler is finished; true when the CQ is armed, or when the run's
 * thread asked for the CQ back. Never blocks; no tool lock held. */
static bool tool_cq_serve(ndk_tool_cq *c, ndk_tool_cq_handler handler, void *ctx)
{
    NDK_RESULT r[TOOL_CQ_BATCH];
    for (;;) {
        if (__atomic_load_n(&c->cb_reclaim, __ATOMIC_ACQUIRE))
            return true;
        ULONG n = c->cq->Dispatch->NdkGetCqResults(c->cq, r, TOOL_CQ_BATCH);
        if (!n) {
            c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
            return true;
        }
        tool_cq_count_batch(c);
        if (!handler(ctx, r, n))
            return false;
    }
}

/* Wakes the run's thread. Under the lock, so that it cannot miss it between its look at the
 * state and its wait. */
static void tool_cq_wake(ndk_tool_cq *c)
{
    pthread_mutex_lock(&c->lock);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* NDK_FN_CQ_NOTIFICATION_CALLBACK: provider thread, must not block; calls into the provider
 * with no tool lock held. While a tool thread owns the CQ it only records and signals; while
 * the callback owns it (ndk_tool_cq_run) it runs the handler, taking no lock and waking the
 * sleeping thread only when the handler is finished or the CQ is wanted back (one message's
 * callback then costs the tool no lock, as a consumer with its own callback would have). The
 * provider never runs two at once for one CQ. */
static void tool_cq_notify(PVOID ctx, NTSTATUS status)
{
    ndk_tool_cq *c = ctx;
    int owned = TOOL_CQ_CB_OWNED;

    /* Counted before the state is looked at (sequentially consistent, against the hand-off in
     * ndk_tool_cq_run, which sets the state and then reads the count). */
    __atomic_add_fetch(&c->notifications, 1, __ATOMIC_SEQ_CST);
    /* Acquire: the handler the run's thread stored before it handed the CQ over. */
    if (status == STATUS_SUCCESS && !__atomic_load_n(&c->cb_reclaim, __ATOMIC_ACQUIRE) &&
        __atomic_compare_exchange_n(&c->cb_state, &owned, TOOL_CQ_CB_OWNED | TOOL_CQ_CB_BUSY, false,
                                    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        bool more = tool_cq_serve(c, c->handler, c->handler_ctx);
        if (!more) {
            __atomic_store_n(&c->cb_state, 0, __ATOMIC_RELEASE);
            tool_cq_wake(c);
            return;
        }
        /* Against the reclaim in ndk_tool_cq_run: it publishes cb_reclaim, then looks at BUSY;
         * we clear BUSY, then look at cb_reclaim (both sequentially consistent), so one of the
         * two sees the other and the run's thread is never left waiting for a BUSY gone. */
        __atomic_and_fetch(&c->cb_state, ~TOOL_CQ_CB_BUSY, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&c->cb_reclaim, __ATOMIC_SEQ_CST))
            tool_cq_wake(c);
        return;
    }
    pthread_mutex_lock(&c->lock);
    c->events++;
    if (status != STATUS_SUCCESS && c->cq_error == STATUS_SUCCESS)
        c->cq_error = status;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

NTSTATUS ndk_tool_cq_create(NDK_ADAPTER *ad, ULONG depth, bool poll, ndk_tool_cq **out)
{
    ndk_tool_cq *c = calloc(1, sizeof *c);
    if (!c)
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_init(&c->lock, NULL);
    ndk_sync_time_cond_init(&c->cond);
    c->poll = poll;
    ndk_sync_op *op = ndk_sync_op_new();
    NDK_CQ *cq = NULL;
    NTSTATUS st = STATUS_INSUFFICIENT_RESOURCES;
    if (op) {
        st = ad->Dispatch->NdkCreateCq(ad, depth, tool_cq_notify, c, NULL, ndk_sync_op_create_done, op, &cq);
        st = ndk_sync_create_finish(op, st, (void **)&c->cq, cq);
    }
    if (st != STATUS_SUCCESS) {
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->cond);
        free(c);
        return st;
    }
    *out = c;
    return STATUS_SUCCESS;
}

void ndk_tool_cq_destroy(ndk_tool_cq *c)
{
    if (!c)
        return;
    if (c->cq && ndk_sync_close(&c->cq->Header, NDK_SYNC_OP_TIMEOUT_MS) != STATUS_SUCCESS) {
        /* A notification could still arrive: keep the wrapper alive rather than risk it. */
        ndk_tool_err("closing a CQ did not complete; leaving it");
        return;
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

ULONG ndk_tool_cq_poll(ndk_tool_cq *c, NDK_RESULT *res, ULONG max)
{
    return c->cq->Dispatch->NdkGetCqResults(c->cq, res, max);
}

void ndk_tool_cq_kick(ndk_tool_cq *c, bool disconnected)
{
    pthread_mutex_lock(&c->lock);
    if (disconnected)
        __atomic_fetch_add(&c->disconnected, 1, __ATOMIC_RELEASE);
    c->events++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static bool tool_cq_gone(ndk_tool_cq *c) { return __atomic_load_n(&c->disconnected, __ATOMIC_ACQUIRE) != 0; }

ULONG ndk_tool_cq_wait(ndk_tool_cq *c, NDK_RESULT *res, ULONG max, int timeout_ms, NTSTATUS *st)
{
    uint64_t deadline = 0;       /* from the first empty poll: a busy poller's wait mostly ends at the first */
    unsigned spins = 0;
    ULONG n;

    *st = STATUS_SUCCESS;
    for (;;) {
        n = c->cq->Dispatch->NdkGetCqResults(c->cq, res, max);
        if (n)
            return n;
        if (!deadline)
            deadline = timeout_ms < 0 ? UINT64_MAX : ndk_sync_time_now_ns() + (uint64_t)timeout_ms * 1000000u;
        if (c->poll) {
            if ((++spins & 1023) != 0)
                continue;
            pthread_mutex_lock(&c->lock);
            NTSTATUS err = c->cq_error;
            pthread_mutex_unlock(&c->lock);
            if (err != STATUS_SUCCESS) {
                *st = err;
                return 0;
            }
            if (tool_cq_gone(c)) {
                *st = STATUS_CONNECTION_DISCONNECTED;
                return 0;
            }
            if (ndk_tool_stopped()) {
                *st = STATUS_CANCELLED;
                return 0;
            }
            if (ndk_sync_time_now_ns() >= deadline) {
                *st = STATUS_IO_TIMEOUT;
                return 0;
            }
            continue;
        }
        pthread_mutex_lock(&c->lock);
        uint64_t seen = c->events;
        NTSTATUS err = c->cq_error;
        pthread_mutex_unlock(&c->lock);
        if (err != STATUS_SUCCESS) {
            *st = err;
            return 0;
        }
        /* Arm, then look again: a completion that raced with the arm is either returned here
         * or (§5.7 rule 2) satisfies the arm and notifies. */
        c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
        n = c->cq->Dispatch->NdkGetCqResults(c->cq, res, max);
        if (n)
            return n;
        if (tool_cq_gone(c)) {
            *st = STATUS_CONNECTION_DISCONNECTED;
            return 0;
        }
        pthread_mutex_lock(&c->lock);
        while (c->events == seen) {
            uint64_t now = ndk_sync_time_now_ns();
            if (now >= deadline || ndk_tool_stopped())
                break;
            uint64_t until = now + 100000000u;
            if (until > deadline)
                until = deadline;
            struct timespec ts = ndk_sync_time_ts(until);
            pthread_cond_timedwait(&c->cond, &c->lock, &ts);
        }
        bool woke = c->events != seen;
        pthread_mutex_unlock(&c->lock);
        if (!woke) {
            n = c->cq->Dispatch->NdkGetCqResults(c->cq, res, max);
            if (n)
                return n;
            *st = ndk_tool_stopped() ? STATUS_CANCELLED : STATUS_IO_TIMEOUT;
            return 0;
        }
    }
}

/* Calling thread, owning the CQ; blocks: the handler driven by ndk_tool_cq_wait. */
static NTSTATUS tool_cq_run_here(ndk_tool_cq *c, int idle_timeout_ms, ndk_tool_cq_handler handler,
                                 ndk_tool_cq_tick tick, void *ctx)
{
    NDK_RESULT r[TOOL_CQ_BATCH];
    NTSTATUS st;
    for (;;) {
        ULONG n = ndk_tool_cq_wait(c, r, TOOL_CQ_BATCH, idle_timeout_ms, &st);
        if (!n)
            return st;
        tool_cq_count_batch(c);
        if (!handler(ctx, r, n))
            return STATUS_SUCCESS;
        if (tick)
            tick(ctx);
    }
}

NTSTATUS ndk_tool_cq_run(ndk_tool_cq *c, bool in_callback, int idle_timeout_ms, ndk_tool_cq_handler handler,
                         ndk_tool_cq_tick tick, void *ctx)
{
    if (c->poll || !in_callback)
        return tool_cq_run_here(c, idle_timeout_ms, handler, tick, ctx);

    /* Hand-off. Until cb_state is set the CQ is ours, so we drain and arm it here. A
     * notification that came meanwhile was only counted, its arm spent: go round again. One
     * that comes after the hand-off serves the CQ itself. */
    for (;;) {
        uint64_t seen = __atomic_load_n(&c->notifications, __ATOMIC_SEQ_CST);
        if (!tool_cq_serve(c, handler, ctx))
            return STATUS_SUCCESS;
        pthread_mutex_lock(&c->lock);
        c->handler = handler;
        c->handler_ctx = ctx;
        /* The handler before the state (release). A notification counted after the look below
         * finds the state set, and its callback serves the CQ. One counted before it spent the
         * arm: take the CQ back and go round again, unless its callback took the CQ already. */
        __atomic_store_n(&c->cb_state, TOOL_CQ_CB_OWNED, __ATOMIC_SEQ_CST);
        bool quiet = __atomic_load_n(&c->notifications, __ATOMIC_SEQ_CST) == seen;
        int owned = TOOL_CQ_CB_OWNED;
        if (!quiet && !__atomic_compare_exchange_n(&c->cb_state, &owned, 0, false, __ATOMIC_ACQUIRE,
                                                   __ATOMIC_RELAXED))
            quiet = true;
        pthread_mutex_unlock(&c->lock);
        if (quiet)
            break;
    }

    /* Sleep until the handler is finished. Notifications do not wake us; a finished handler, a
     * failed CQ or a disconnect do, and the stop flag is looked at every 100 ms. */
    NTSTATUS st = STATUS_SUCCESS;
    uint64_t now = ndk_sync_time_now_ns();
    uint64_t idle = idle_timeout_ms < 0 ? 0 : (uint64_t)idle_timeout_ms * 1000000u;
    uint64_t deadline = idle_timeout_ms < 0 ? UINT64_MAX : now + idle;
    uint64_t last = __atomic_load_n(&c->batches, __ATOMIC_RELAXED), next_tick = now + 100000000u;
    pthread_mutex_lock(&c->lock);
    while (__atomic_load_n(&c->cb_state, __ATOMIC_ACQUIRE) & TOOL_CQ_CB_OWNED) {
        if (c->cq_error != STATUS_SUCCESS) {
            st = c->cq_error;
            break;
        }
        if (ndk_tool_stopped()) {
            st = STATUS_CANCELLED;
            break;
        }
        if (tool_cq_gone(c)) {
            st = STATUS_CONNECTION_DISCONNECTED;
            break;
        }
        now = ndk_sync_time_now_ns();
        uint64_t b = __atomic_load_n(&c->batches, __ATOMIC_RELAXED);
        if (b != last) {
            last = b;
            if (idle_timeout_ms >= 0)
                deadline = now + idle;
        }
        if (now >= deadline) {
            st = STATUS_IO_TIMEOUT;
            break;
        }
        if (tick && now >= next_tick) {
            pthread_mutex_unlock(&c->lock);
            tick(ctx);
            pthread_mutex_lock(&c->lock);
            next_tick = now + 100000000u;
            continue;
        }
        uint64_t until = now + 100000000u;
        if (until > deadline)
            until = deadline;
        struct timespec ts = ndk_sync_time_ts(until);
        pthread_cond_timedwait(&c->cond, &c->lock, &ts);
    }
    /* Take the CQ back, waiting out a callback inside the handler (it stops at its next batch
     * and never blocks). A notification still due from its last arm finds the state clear and
     * only counts. The exchange decides against a callback entering the handler meanwhile. */
    __atomic_store_n(&c->cb_reclaim, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        int s = __atomic_load_n(&c->cb_state, __ATOMIC_SEQ_CST);
        if (s & TOOL_CQ_CB_BUSY)
            pthread_cond_wait(&c->cond, &c->lock);
        else if (__atomic_compare_exchange_n(&c->cb_state, &s, 0, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            break;
    }
    c->handler = NULL;
    c->handler_ctx = NULL;
    __atomic_store_n(&c->cb_reclaim, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->lock);

    if (st == STATUS_CONNECTION_DISCONNECTED) {
        /* As ndk_tool_cq_wait does: what the CQ still holds comes before the disconnect. */
        NDK_RESULT r[TOOL_CQ_BATCH];
        ULONG n;
        while ((n = c->cq->Dispatch->NdkGetCqResults(c->cq, r, TOOL_CQ_BATCH)) != 0) {
            tool_cq_count_batch(c);
            if (!handler(ctx, r, n))
                return STATUS_SUCCESS;
        }
    }
    return st;
}
