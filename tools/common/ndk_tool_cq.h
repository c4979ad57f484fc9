/*
 * ndk_tool_cq.h - a tool's completion queue: waiting for completions (notification after
 * NdkArmCq, or busy poll), waking a waiter from a callback, and running a handler over the
 * completions, either on the calling thread or inside the CQ notification callback.
 *
 * Threading: most callbacks only record state and signal a condition variable. The exception is
 * ndk_tool_cq_run in notification mode, which lends a CQ (and the QPs feeding it) to the CQ
 * notification callback: the caller's handler then runs inside that callback, as NDK consumers
 * do, to save the second wake-up of a waiting thread. At any moment a CQ and its QPs have one
 * owner, either one tool thread or the notification callback, and only the owner polls, arms
 * and posts (NDKPI §5.4).
 */
#ifndef NDK_TOOL_CQ_H
#define NDK_TOOL_CQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ndkpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Handles n completions taken from the CQ; returns false when it wants no more (the run is
 * over). Runs on whichever side owns the CQ: the thread in ndk_tool_cq_run, or the CQ
 * notification callback on a provider thread. It may post to the QPs of the CQ; it must not
 * block, poll or arm the CQ itself, or close anything. */
typedef bool (*ndk_tool_cq_handler)(void *ctx, NDK_RESULT *res, ULONG n);
/* Called now and then on the thread in ndk_tool_cq_run (progress lines); while the callback
 * owns the CQ it runs concurrently with the handler, so it may only read atomics. */
typedef void (*ndk_tool_cq_tick)(void *ctx);

typedef struct ndk_tool_cq {
    NDK_CQ         *cq;
    bool            poll;           /* busy-poll instead of arming for notifications */
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    uint64_t        events;         /* notifications and kicks, under lock */
    NTSTATUS        cq_error;       /* CqStatus of a failed notification */
    volatile int    disconnected;   /* disconnect events, counted by ndk_tool_cq_kick */
    uint64_t        notifications;  /* atomic: notifications delivered */
    /* ndk_tool_cq_run in the callback. cb_state: TOOL_CQ_CB_OWNED (the notification callback
     * owns the CQ) | TOOL_CQ_CB_BUSY (the callback is running the handler); changed by
     * compare-exchange, so that a callback entering the handler and the run's thread taking
     * the CQ back decide between them without the lock (ndk_tool_cq.c). */
    int             cb_state;
    int             cb_reclaim;     /* atomic: the run's thread wants the CQ back */
    ndk_tool_cq_handler handler;    /* set under lock before cb_state */
    void           *handler_ctx;
    uint64_t        batches;        /* atomic, one writer: batches given to a handler (progress) */
} ndk_tool_cq;

NTSTATUS ndk_tool_cq_create(NDK_ADAPTER *ad, ULONG depth, bool poll, ndk_tool_cq **out);
/* Closes the CQ (after its QPs) and frees the wrapper. */
void ndk_tool_cq_destroy(ndk_tool_cq *c);
/* Non-blocking: takes up to max results. */
ULONG ndk_tool_cq_poll(ndk_tool_cq *c, NDK_RESULT *res, ULONG max);
/* Waits until at least one result is available (notification after NdkArmCq(ANY), or busy
 * poll) and returns how many were taken. Returns 0 with *st set to STATUS_IO_TIMEOUT,
 * STATUS_CANCELLED (ndk_tool_stop), STATUS_CONNECTION_DISCONNECTED (peer disconnected and the
 * CQ is empty) or the CQ's failure status. */
ULONG ndk_tool_cq_wait(ndk_tool_cq *c, NDK_RESULT *res, ULONG max, int timeout_ms, NTSTATUS *st);
/* Wakes a waiter (from a callback); with disconnected, marks the connection as gone. */
void ndk_tool_cq_kick(ndk_tool_cq *c, bool disconnected);
/* Feeds the CQ's completions to handler until it returns false. A busy-polling CQ, or
 * in_callback false: on the calling thread, like a loop over ndk_tool_cq_wait. Otherwise the
 * CQ is handed to its notification callback, which runs handler, re-arms and polls once more,
 * while the calling thread sleeps until handler is finished. Either way the CQ and its QPs are
 * the calling thread's again on return (no callback is inside handler any more). Returns
 * STATUS_SUCCESS once handler returned false; STATUS_IO_TIMEOUT (no completion for
 * idle_timeout_ms), STATUS_CANCELLED (ndk_tool_stop), STATUS_CONNECTION_DISCONNECTED (peer
 * gone and the CQ drained) or the CQ's failure status otherwise. Calling thread, blocks. */
NTSTATUS ndk_tool_cq_run(ndk_tool_cq *c, bool in_callback, int idle_timeout_ms, ndk_tool_cq_handler handler,
                         ndk_tool_cq_tick tick, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_CQ_H */
