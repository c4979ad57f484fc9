/* trace_wr.c - requests posted and not yet completed, per QP and queue, so that a completion
 * gets its request's latency from post and the stall watcher sees what is outstanding.
 * Completions of one queue arrive in posting order (docs/ndkpi.md, completions), so a
 * completion is matched with the oldest outstanding request of its QP that has its request
 * context; silent-success requests before it completed too. Context: the consumer's posting and
 * polling threads; takes the QP's lock (never held while calling anything). */
#define _GNU_SOURCE
#include "trace.h"

#include <stdlib.h>
#include <string.h>

void flt_trace_wr_init(struct flt_trace_obj *qp)
{
    pthread_mutex_init(&qp->lock, NULL);
}

void flt_trace_wr_free(struct flt_trace_obj *qp)
{
    free(qp->sq.wr);
    free(qp->rq.wr);
    pthread_mutex_destroy(&qp->lock);
}

static struct flt_trace_wr *at(struct flt_trace_queue *q, size_t i)
{
    return &q->wr[(q->head + i) % q->cap];
}

static int push(struct flt_trace_queue *q, const struct flt_trace_wr *wr)
{
    if (q->count == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        struct flt_trace_wr *n = malloc(cap * sizeof *n);
        if (!n)
            return -1;
        for (size_t i = 0; i < q->count; i++)
            n[i] = *at(q, i);
        free(q->wr);
        q->wr = n;
        q->cap = cap;
        q->head = 0;
    }
    *at(q, q->count++) = *wr;
    return 0;
}

static void remove_at(struct flt_trace_queue *q, size_t i)
{
    for (size_t j = i; j > 0; j--)
        *at(q, j) = *at(q, j - 1);
    q->head = (q->head + 1) % q->cap;
    q->count--;
}

void flt_trace_wr_posted(struct flt_trace_obj *qp, ndk_filter_fn fn, PVOID ctx, ULONG flags, uint64_t now,
                         uint64_t *seq)
{
    struct flt_trace_wr wr = {
        .seq = atomic_fetch_add(&qp->mod->next_seq, 1) + 1, .ctx = ctx, .fn = fn, .post_ns = now,
        .silent = (flags & NDK_OP_FLAG_SILENT_SUCCESS) != 0,
    };
    *seq = wr.seq;
    struct flt_trace_queue *q = fn == NDK_FILTER_FN_RECEIVE || fn == NDK_FILTER_FN_SRQ_RECEIVE ? &qp->rq : &qp->sq;
    pthread_mutex_lock(&qp->lock);
    if (qp->sq.count + qp->rq.count == 0) {
        qp->progress_ns = now;   /* a busy period starts */
        qp->stalled = 0;
    }
    push(q, &wr);
    pthread_mutex_unlock(&qp->lock);
}

/* The post failed inline: it will never complete. */
void flt_trace_wr_unpost(struct flt_trace_obj *qp, ndk_filter_fn fn, uint64_t seq)
{
    struct flt_trace_queue *q = fn == NDK_FILTER_FN_RECEIVE || fn == NDK_FILTER_FN_SRQ_RECEIVE ? &qp->rq : &qp->sq;
    pthread_mutex_lock(&qp->lock);
    for (size_t i = q->count; i-- > 0;) {
        if (at(q, i)->seq == seq) {
            for (size_t j = i; j + 1 < q->count; j++)
                *at(q, j) = *at(q, j + 1);
            q->count--;
            break;
        }
    }
    pthread_mutex_unlock(&qp->lock);
}

static const char *op_name(ndk_filter_fn fn)
{
    switch (fn) {
    case NDK_FILTER_FN_SEND: return "Send";
    case NDK_FILTER_FN_SEND_AND_INVALIDATE: return "SendAndInvalidate";
    case NDK_FILTER_FN_RECEIVE: return "Receive";
    case NDK_FILTER_FN_SRQ_RECEIVE: return "SrqReceive";
    case NDK_FILTER_FN_READ: return "Read";
    case NDK_FILTER_FN_WRITE: return "Write";
    case NDK_FILTER_FN_BIND: return "Bind";
    case NDK_FILTER_FN_FAST_REGISTER: return "FastRegister";
    case NDK_FILTER_FN_INVALIDATE: return "Invalidate";
    default: return "?";
    }
}

/* Finds and removes the request a completion is for; 1 with *out, else 0. qp->lock held. */
static int take(struct flt_trace_obj *qp, PVOID ctx, int receive, struct flt_trace_wr *out)
{
    struct flt_trace_queue *qs[2] = { receive ? &qp->rq : &qp->sq, receive ? &qp->sq : &qp->rq };
    for (int k = 0; k < 2; k++) {
        struct flt_trace_queue *q = qs[k];
        for (size_t i = 0; i < q->count; i++) {
            if (at(q, i)->ctx != ctx)
                continue;
            *out = *at(q, i);
            remove_at(q, i);
            /* Earlier silent requests of this queue completed before it, unreported. */
            while (q->count && at(q, 0)->silent && at(q, 0)->seq < out->seq)
                remove_at(q, 0);
            return 1;
        }
    }
    return 0;
}

static void one(struct flt_trace_module *mod, ndk_filter_obj *cq, PVOID qp_ctx, PVOID ctx, NTSTATUS status,
                ULONG bytes, int type, uint64_t now)
{
    struct flt_trace_obj *found = NULL;
    struct flt_trace_wr wr;
    int receive = type == NdkOperationTypeReceive || type == NdkOperationTypeReceiveAndInvalidate;
    struct ndk_list *it;
    pthread_mutex_lock(&mod->lock);
    ndk_list_for_each(it, &mod->qps) {
        struct flt_trace_obj *qp = ndk_list_entry(it, struct flt_trace_obj, link);
        if (qp->qp_context != qp_ctx || (qp->rcq != cq && qp->icq != cq))
            continue;
        pthread_mutex_lock(&qp->lock);
        int hit = take(qp, ctx, receive, &wr);
        if (hit) {
            qp->progress_ns = now;
            qp->stalled = 0;
        }
        pthread_mutex_unlock(&qp->lock);
        if (!hit && qp->srq) {
            /* A receive of the QP's SRQ: the request was posted on the SRQ. */
            struct flt_trace_obj *srq = ndk_filter_obj_ctx(qp->srq);
            pthread_mutex_lock(&srq->lock);
            hit = take(srq, ctx, 1, &wr);
            pthread_mutex_unlock(&srq->lock);
        }
        if (hit) {
            found = qp;
            break;
        }
    }
    struct flt_trace_rec r;
    flt_trace_rec_begin(&r, mod, "cqe", now);
    flt_trace_rec_obj(&r, "obj", cq);
    flt_trace_rec_obj(&r, "qp", found ? found->obj : NULL);
    flt_trace_rec_hex(&r, "ctx", (uint64_t)(uintptr_t)ctx);
    flt_trace_rec_status(&r, "status", status);
    flt_trace_rec_u64(&r, "bytes", bytes);
    if (found) {
        flt_trace_rec_str(&r, "op", op_name(wr.fn));
        flt_trace_rec_u64(&r, "wr", wr.seq);
        flt_trace_rec_u64(&r, "latency_ns", now - wr.post_ns);
    }
    pthread_mutex_unlock(&mod->lock);
    flt_trace_rec_end(&r);
}

void flt_trace_wr_polled(struct flt_trace_module *mod, ndk_filter_obj *cq, const NDK_RESULT *res,
                         const NDK_RESULT_EX *res_ex, ULONG n, uint64_t now)
{
    for (ULONG i = 0; i < n; i++) {
        if (res_ex)
            one(mod, cq, res_ex[i].QPContext, res_ex[i].RequestContext, res_ex[i].Status, res_ex[i].BytesTransferred,
                res_ex[i].Type, now);
        else
            one(mod, cq, res[i].QPContext, res[i].RequestContext, res[i].Status, res[i].BytesTransferred, 0, now);
    }
}
