/* srq.c - shared receive queues (§2.8, §3.8, §5.9): a ring of posted receives that QPs draw
 * from, with the one-shot low-water notification.
 *
 * Talks to: wq.c (the ring), progress.c (the low-water notification), obj.c. Called by rx.c
 * (iw_srq_take) and pd.c. */
#include "iwarp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void iw_srq_notify_work(struct iw_work *w)
{
    struct iw_srq *srq = ndk_container_of(w, struct iw_srq, notify_work);

    if (!iw_obj_closing(&srq->obj) && srq->notify_cb)
        srq->notify_cb(srq->notify_ctx, STATUS_SUCCESS);
    iw_obj_put(&srq->obj);
}

/* §5.9: fires once when the queued count is below the armed threshold. srq->lock held. */
static void iw_srq_check_limit_locked(struct iw_srq *srq)
{
    if (!srq->armed || !srq->notify_cb || srq->rq.count >= srq->threshold)
        return;
    srq->armed = false;
    iw_obj_get(&srq->obj);
    if (!iw_progress_queue(srq->obj.dev, &srq->notify_work))
        iw_obj_put(&srq->obj);
}

int iw_srq_take(struct iw_srq *srq, struct iw_wqe *out)
{
    int err;

    pthread_mutex_lock(&srq->lock);
    err = iw_wq_pop(&srq->rq, out);
    if (!err)   /* "completed" here: handed to a QP, whose record counts its completion */
        ndk_sv_add(&srq->obj.sv->u.srq.completed, 1);
    iw_srq_check_limit_locked(srq);
    pthread_mutex_unlock(&srq->lock);
    return err;
}

static NTSTATUS iw_srq_receive(NDK_SRQ *s, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge)
{
    struct iw_srq *srq = to_iw_srq(s);
    NTSTATUS st = STATUS_SUCCESS;
    uint64_t length = 0;

    if (nsge > srq->rq.max_sge || (nsge && !sgl))
        return STATUS_INVALID_PARAMETER;
    for (ULONG i = 0; i < nsge; i++)
        length += sgl[i].Length;
    if (length > IW_MAX_TRANSFER)
        return STATUS_INVALID_PARAMETER;
    uint64_t now = iw_sv_now();
    pthread_mutex_lock(&srq->lock);
    if (iw_wq_push_receive(&srq->rq, rctx, sgl, nsge, length, now) < 0)
        st = STATUS_INSUFFICIENT_RESOURCES;
    else
        ndk_sv_add(&srq->obj.sv->u.srq.posted, 1);   /* srq->lock orders the writers */
    pthread_mutex_unlock(&srq->lock);
    return st;
}

/* The SRQ's system-view description. srq->lock held. */
static void iw_srq_sv_describe_locked(struct iw_srq *srq)
{
    struct ndk_sv_rec *r = iw_sv_desc(&srq->obj);

    if (!r)
        return;
    ndk_sv_begin(r);
    r->u.srq.pd = iw_sv_id(iw_obj_ante(&srq->obj, 0));
    r->u.srq.depth = srq->rq.depth;
    ndk_sv_end(r);
}

static NTSTATUS iw_modify_srq(NDK_SRQ *s, ULONG depth, ULONG threshold, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct iw_srq *srq = to_iw_srq(s);
    int err;

    (void)cb;
    (void)ctx;
    if (depth > IW_MAX_SRQ_DEPTH)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&srq->lock);
    /* Never drop posted receives: shrinking below them is refused (-EINVAL). */
    if (depth && (err = iw_wq_resize(&srq->rq, depth)) < 0) {
        pthread_mutex_unlock(&srq->lock);
        return ndk_status_from_errno(err);
    }
    iw_srq_sv_describe_locked(srq);
    if (threshold) {
        /* §5.9: a nonzero threshold (re)arms; fire at once if already below it. */
        srq->threshold = threshold;
        srq->armed = true;
        iw_srq_check_limit_locked(srq);
    }
    pthread_mutex_unlock(&srq->lock);
    return STATUS_SUCCESS;
}

static NTSTATUS iw_close_srq(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_srq((NDK_SRQ *)h)->obj, cb, ctx);
}

static void iw_srq_destroy(struct iw_obj *o)
{
    struct iw_srq *srq = ndk_container_of(o, struct iw_srq, obj);

    /* Receives still posted have no QP left whose CQ could report them (every QP using the SRQ
     * is a successor and is gone); they are discarded, as verbs does on SRQ destroy. */
    iw_wq_free(&srq->rq);
    atomic_fetch_sub(&o->dev->nsrq, 1);
    pthread_mutex_destroy(&srq->lock);
    free(srq);
}

static const struct iw_obj_ops iw_srq_ops = { .name = "SRQ", .destroy = iw_srq_destroy };

static const NDK_SRQ_DISPATCH iw_srq_dispatch = {
    .NdkCloseSrq = iw_close_srq,
    .NdkQueryExtension = iw_query_extension,
    .NdkModifySrq = iw_modify_srq,
    .NdkSrqReceive = iw_srq_receive,
};

NTSTATUS iw_create_srq(NDK_PD *p, ULONG depth, ULONG max_sge, ULONG threshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK cb,
                       PVOID cbctx, GROUP_AFFINITY *aff, NDK_FN_CREATE_COMPLETION ccb, PVOID ctx, NDK_SRQ **out)
{
    struct iw_pd *pd = to_iw_pd(p);
    struct iw_device *dev = pd->obj.dev;
    struct iw_srq *srq;

    (void)aff;
    (void)ccb;
    (void)ctx;
    if (!out || depth == 0 || depth > IW_MAX_SRQ_DEPTH || max_sge == 0 || max_sge > IW_MAX_SGE ||
        threshold > depth)
        return STATUS_INVALID_PARAMETER;
    if (atomic_fetch_add(&dev->nsrq, 1) >= IW_MAX_SRQ_COUNT) {
        atomic_fetch_sub(&dev->nsrq, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    srq = calloc(1, sizeof(*srq));
    if (!srq || iw_wq_init(&srq->rq, depth, max_sge, 0) < 0) {
        free(srq);
        atomic_fetch_sub(&dev->nsrq, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    iw_obj_init(&srq->obj, &iw_srq_ops, IW_OBJ_SRQ, pd->obj.adapter, &srq->ndk.Header, &iw_srq_dispatch);
    pthread_mutex_init(&srq->lock, NULL);
    srq->notify_cb = cb;
    srq->notify_ctx = cbctx;
    srq->notify_work.fn = iw_srq_notify_work;
    ndk_list_init(&srq->notify_work.link);
    /* §8.30 decision: a nonzero threshold with a callback starts armed. */
    srq->threshold = threshold;
    srq->armed = threshold && cb;
    iw_obj_set_ante(&srq->obj, 0, &pd->obj);
    pthread_mutex_lock(&srq->lock);
    iw_srq_sv_describe_locked(srq);
    pthread_mutex_unlock(&srq->lock);
    *out = &srq->ndk;
    return STATUS_SUCCESS;
}
