/*
 * ndk_sync.c - blocking wrappers over the asynchronous NDKPI requests (ndk_sync.h).
 */
#define _GNU_SOURCE
#include "ndk_sync.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "ndk_sync_time.h"

struct ndk_sync_op {
    pthread_mutex_t    lock;
    pthread_cond_t     cond;
    int                refs;      /* the waiter's and the completion's */
    bool               done;
    NTSTATUS           status;
    NDK_OBJECT_HEADER *obj;
};

ndk_sync_op *ndk_sync_op_new(void)
{
    ndk_sync_op *op = calloc(1, sizeof *op);
    if (!op)
        return NULL;
    pthread_mutex_init(&op->lock, NULL);
    ndk_sync_time_cond_init(&op->cond);
    op->refs = 2;
    return op;
}

static void sync_op_put_locked_and_unlock(ndk_sync_op *op)
{
    int left = --op->refs;
    pthread_mutex_unlock(&op->lock);
    if (left == 0) {
        pthread_mutex_destroy(&op->lock);
        pthread_cond_destroy(&op->cond);
        free(op);
    }
}

static void sync_op_complete(ndk_sync_op *op, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
    if (!op)
        return;                                    /* issued without a waiter (no memory) */
    pthread_mutex_lock(&op->lock);
    op->done = true;
    op->status = status;
    op->obj = obj;
    pthread_cond_broadcast(&op->cond);
    sync_op_put_locked_and_unlock(op);
}

void ndk_sync_op_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj) { sync_op_complete(ctx, status, obj); }
void ndk_sync_op_request_done(PVOID ctx, NTSTATUS status) { sync_op_complete(ctx, status, NULL); }
void ndk_sync_op_close_done(PVOID ctx) { sync_op_complete(ctx, STATUS_SUCCESS, NULL); }

NTSTATUS ndk_sync_op_wait(ndk_sync_op *op, NTSTATUS returned, int timeout_ms, bool (*cancelled)(void),
                          NDK_OBJECT_HEADER **obj)
{
    NTSTATUS st;
    pthread_mutex_lock(&op->lock);
    if (returned != STATUS_PENDING) {
        /* Finished inline: the completion will never run, so drop its reference too. */
        op->refs--;
        st = returned;
    } else {
        uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : ndk_sync_time_now_ns() + (uint64_t)timeout_ms * 1000000u;
        st = STATUS_SUCCESS;
        while (!op->done) {
            uint64_t now = ndk_sync_time_now_ns();
            if (now >= deadline) {
                st = STATUS_IO_TIMEOUT;
                break;
            }
            if (cancelled && cancelled()) {
                st = STATUS_CANCELLED;
                break;
            }
            uint64_t until = now + 100000000u;       /* look at cancelled() every 100 ms */
            if (until > deadline)
                until = deadline;
            struct timespec ts = ndk_sync_time_ts(until);
            pthread_cond_timedwait(&op->cond, &op->lock, &ts);
        }
        if (op->done) {
            st = op->status;
            if (obj)
                *obj = op->obj;
        }
    }
    sync_op_put_locked_and_unlock(op);
    return st;
}

NTSTATUS ndk_sync_op_finish(ndk_sync_op *op, NTSTATUS returned, int timeout_ms, NDK_OBJECT_HEADER **obj)
{
    return ndk_sync_op_wait(op, returned, timeout_ms, NULL, obj);
}

bool ndk_sync_op_done(ndk_sync_op *op)
{
    pthread_mutex_lock(&op->lock);
    bool d = op->done;
    pthread_mutex_unlock(&op->lock);
    return d;
}

NTSTATUS ndk_sync_close(NDK_OBJECT_HEADER *obj, int timeout_ms)
{
    NDK_FN_CLOSE_OBJECT fn = NULL;
    switch (obj->ObjectType) {
    case NdkObjectTypeQp: fn = ((NDK_QP *)obj)->Dispatch->NdkCloseQp; break;
    case NdkObjectTypeCq: fn = ((NDK_CQ *)obj)->Dispatch->NdkCloseCq; break;
    case NdkObjectTypeMr: fn = ((NDK_MR *)obj)->Dispatch->NdkCloseMr; break;
    case NdkObjectTypeMw: fn = ((NDK_MW *)obj)->Dispatch->NdkCloseMw; break;
    case NdkObjectTypePd: fn = ((NDK_PD *)obj)->Dispatch->NdkClosePd; break;
    case NdkObjectTypeSharedEndpoint: fn = ((NDK_SHARED_ENDPOINT *)obj)->Dispatch->NdkCloseSharedEndpoint; break;
    case NdkObjectTypeConnector: fn = ((NDK_CONNECTOR *)obj)->Dispatch->NdkCloseConnector; break;
    case NdkObjectTypeListener: fn = ((NDK_LISTENER *)obj)->Dispatch->NdkCloseListener; break;
    case NdkObjectTypeSrq: fn = ((NDK_SRQ *)obj)->Dispatch->NdkCloseSrq; break;
    default: return STATUS_INVALID_PARAMETER;
    }
    ndk_sync_op *op = ndk_sync_op_new();
    if (op)
        return ndk_sync_op_finish(op, fn(obj, ndk_sync_op_close_done, op), timeout_ms, NULL);
    /* No memory for an op, but an object must still close: wait on the stack with no timeout,
     * which is safe because every close completes (docs/ndkpi.md, Teardown), so no
     * completion can come after this frame is gone. */
    ndk_sync_op local = { .refs = 3 };             /* waiter's, completion's, and the frame's: never freed */
    pthread_mutex_init(&local.lock, NULL);
    ndk_sync_time_cond_init(&local.cond);
    NTSTATUS st = ndk_sync_op_finish(&local, fn(obj, ndk_sync_op_close_done, &local), -1, NULL);
    pthread_mutex_destroy(&local.lock);
    pthread_cond_destroy(&local.cond);
    return st;
}

NTSTATUS ndk_sync_create_finish(ndk_sync_op *op, NTSTATUS returned, void **out, void *inline_obj)
{
    NDK_OBJECT_HEADER *obj = NULL;
    NTSTATUS st = ndk_sync_op_finish(op, returned, NDK_SYNC_OP_TIMEOUT_MS, &obj);
    if (st != STATUS_SUCCESS)
        return st;
    *out = returned == STATUS_PENDING ? (void *)obj : inline_obj;
    return *out ? STATUS_SUCCESS : STATUS_INTERNAL_ERROR;
}

NTSTATUS ndk_sync_create_pd(NDK_ADAPTER *ad, NDK_PD **out)
{
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op)
        return STATUS_INSUFFICIENT_RESOURCES;
    NDK_PD *pd = NULL;
    NTSTATUS st = ad->Dispatch->NdkCreatePd(ad, ndk_sync_op_create_done, op, &pd);
    return ndk_sync_create_finish(op, st, (void **)out, pd);
}

NTSTATUS ndk_sync_create_connector(NDK_ADAPTER *ad, NDK_CONNECTOR **out)
{
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op)
        return STATUS_INSUFFICIENT_RESOURCES;
    NDK_CONNECTOR *c = NULL;
    NTSTATUS st = ad->Dispatch->NdkCreateConnector(ad, ndk_sync_op_create_done, op, &c);
    return ndk_sync_create_finish(op, st, (void **)out, c);
}

NTSTATUS ndk_sync_create_qp(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, PVOID qp_ctx, ULONG rq_depth, ULONG iq_depth,
                            ULONG rsge, ULONG isge, ULONG inline_size, NDK_QP **out)
{
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op)
        return STATUS_INSUFFICIENT_RESOURCES;
    NDK_QP *qp = NULL;
    NTSTATUS st = pd->Dispatch->NdkCreateQp(pd, rcq, icq, qp_ctx, rq_depth, iq_depth, rsge, isge, inline_size,
                                            ndk_sync_op_create_done, op, &qp);
    return ndk_sync_create_finish(op, st, (void **)out, qp);
}

ULONG ndk_sync_addr_len(const SOCKADDR_INET *a)
{
    return a->si_family == AF_INET6 ? (ULONG)sizeof(struct sockaddr_in6) : (ULONG)sizeof(struct sockaddr_in);
}
