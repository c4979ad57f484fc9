/* srq.c - shared receive queues (§2.8, map §1.1): ibv_create_srq, the one-shot limit event
 * (ibv_modify_srq IBV_SRQ_LIMIT, IBV_EVENT_SRQ_LIMIT_REACHED), and the slot free list that gives
 * each receive its wr_id. Verbs does not promise a limit event when the queue is already below
 * the threshold at arm time, so our own posted count fires it then (§5.9). */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VB_SLOT_NONE 0xffffffffu

struct vb_srq *vb_srq_lookup(struct vb_device *dev, uint64_t wr_id, uint32_t *idx)
{
    struct vb_srq *want = (struct vb_srq *)(uintptr_t)(wr_id & 0xffffffffffffull);
    struct ndk_list *pos;

    ndk_list_for_each(pos, &dev->srqs) {
        struct vb_srq *s = ndk_list_entry(pos, struct vb_srq, link);
        if (s == want) {
            *idx = (uint32_t)((wr_id >> 48) & 0x7fff);
            return *idx < s->nslots ? s : NULL;
        }
    }
    return NULL;
}

static void vb_srq_notify_work(struct vb_work *w)
{
    struct vb_srq *srq = ndk_container_of(w, struct vb_srq, notify_work);
    NTSTATUS st;

    pthread_mutex_lock(&srq->lock);
    srq->notify_queued = false;
    st = srq->notify_status;
    pthread_mutex_unlock(&srq->lock);
    if (!vb_obj_closing(&srq->obj) && srq->notify)
        srq->notify(srq->notify_ctx, st);
    vb_obj_put(&srq->obj);
}

/* srq->lock held. */
static void vb_srq_queue_notify_locked(struct vb_srq *srq, NTSTATUS st)
{
    srq->notify_status = st;
    if (srq->notify_queued)
        return;
    srq->notify_queued = true;
    vb_obj_get(&srq->obj);
    vb_work_queue(srq->obj.dev, &srq->notify_work);
}

/* Progress thread: the device's limit or error event. */
void vb_srq_on_event(struct vb_srq *srq, NTSTATUS st)
{
    pthread_mutex_lock(&srq->lock);
    if (st != STATUS_SUCCESS || srq->limit_armed) {
        srq->limit_armed = false;
        vb_srq_queue_notify_locked(srq, st);
    }
    pthread_mutex_unlock(&srq->lock);
}

/* A receive of srq completed: frees its slot, returns its RequestContext. qpt_lock held. */
void *vb_srq_complete(struct vb_srq *srq, uint32_t idx)
{
    void *ctx;

    pthread_mutex_lock(&srq->lock);
    ctx = srq->slots[idx].ctx;
    srq->slots[idx].next_free = srq->free_head;
    srq->free_head = idx;
    srq->posted--;
    if (srq->obj.sv)
        ndk_sv_add(&srq->obj.sv->u.srq.completed, 1);
    if (srq->limit_armed && srq->posted < srq->threshold) {
        srq->limit_armed = false;
        vb_srq_queue_notify_locked(srq, STATUS_SUCCESS);
    }
    pthread_mutex_unlock(&srq->lock);
    return ctx;
}

/* Arms the limit; srq->lock held. Returns 0 or -errno. */
static int vb_srq_arm_locked(struct vb_srq *srq, ULONG threshold)
{
    struct ibv_srq_attr a = { .srq_limit = threshold };

    srq->threshold = threshold;
    srq->limit_armed = threshold > 0;
    if (!threshold)
        return 0;
    if (srq->posted < threshold) {
        srq->limit_armed = false;
        vb_srq_queue_notify_locked(srq, STATUS_SUCCESS);
        return 0;
    }
    return ibv_modify_srq(srq->srq, &a, IBV_SRQ_LIMIT) ? -errno : 0;
}

NTSTATUS vb_post_srq_receive(NDK_SRQ *s, PVOID ctx, CONST NDK_SGE *sgl, ULONG n)
{
    struct vb_srq *srq = to_vb_srq(s);
    struct ibv_sge sge[32];
    struct ibv_recv_wr wr, *bad;
    uint32_t idx;
    int err;

    if (n > srq->max_sge || n > 32 || (n && !sgl))
        return STATUS_INVALID_PARAMETER;
    if ((err = vb_post_sges(ndk_container_of(vb_obj_ante(&srq->obj, 0), struct vb_pd, obj), sgl, n, sge)) != 0)
        return err == -EACCES ? STATUS_ACCESS_VIOLATION : STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&srq->lock);
    if (srq->free_head == VB_SLOT_NONE || srq->posted >= srq->depth) {
        pthread_mutex_unlock(&srq->lock);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    idx = srq->free_head;
    srq->free_head = srq->slots[idx].next_free;
    srq->slots[idx].ctx = ctx;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = ((uint64_t)idx << 48) | (uint64_t)(uintptr_t)srq;
    wr.sg_list = sge;
    wr.num_sge = (int)n;
    if (!n && srq->obj.dev->iwarp) {
        /* libsiw refuses a receive without SGEs; one empty SGE places nothing, as none would. */
        memset(sge, 0, sizeof sge[0]);
        wr.num_sge = 1;
    }
    err = ibv_post_srq_recv(srq->srq, &wr, &bad);
    if (err) {
        srq->slots[idx].next_free = srq->free_head;
        srq->free_head = idx;
    } else {
        srq->posted++;
        if (srq->obj.sv)
            ndk_sv_add(&srq->obj.sv->u.srq.posted, 1);
    }
    pthread_mutex_unlock(&srq->lock);
    return err ? (err == ENOMEM ? STATUS_INSUFFICIENT_RESOURCES : STATUS_INVALID_PARAMETER) : STATUS_SUCCESS;
}

/* srq->lock held, or the SRQ not yet shared: its PD and depth in its record. */
static void vb_srq_sv(struct vb_srq *srq)
{
    struct ndk_sv_rec *r = srq->obj.sv;

    if (!r)
        return;
    ndk_sv_begin(r);
    r->u.srq.pd = vb_sv_id(vb_obj_ante(&srq->obj, 0) ? vb_obj_ante(&srq->obj, 0)->sv : NULL);
    r->u.srq.depth = srq->depth;
    ndk_sv_end(r);
}

static NTSTATUS vb_srq_modify(NDK_SRQ *s, ULONG depth, ULONG threshold, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct vb_srq *srq = to_vb_srq(s);
    int err;

    (void)cb;
    (void)ctx;
    pthread_mutex_lock(&srq->lock);
    /* The device queue was made with headroom (vb_srq_create): a depth up to it is ours to set;
     * beyond it the device must resize (IBV_SRQ_MAX_WR) and the slot table grows with it. */
    if (depth && depth < srq->posted) {
        pthread_mutex_unlock(&srq->lock);
        return STATUS_INVALID_PARAMETER;
    }
    if (depth > srq->nslots) {
        struct ibv_srq_attr a = { .max_wr = depth };
        struct vb_rslot *ns;
        if (depth > srq->obj.dev->info.MaxSrqDepth || ibv_modify_srq(srq->srq, &a, IBV_SRQ_MAX_WR) ||
            !(ns = realloc(srq->slots, depth * sizeof(*ns)))) {
            pthread_mutex_unlock(&srq->lock);
            return depth > srq->obj.dev->info.MaxSrqDepth ? STATUS_INVALID_PARAMETER : STATUS_NOT_SUPPORTED;
        }
        srq->slots = ns;
        for (uint32_t k = srq->nslots; k < depth; k++) {
            srq->slots[k].next_free = srq->free_head;
            srq->free_head = k;
        }
        srq->nslots = depth;
    }
    if (depth)
        srq->depth = depth;
    vb_srq_sv(srq);
    if (threshold > srq->depth) {
        pthread_mutex_unlock(&srq->lock);
        return STATUS_INVALID_PARAMETER;
    }
    err = vb_srq_arm_locked(srq, threshold);
    pthread_mutex_unlock(&srq->lock);
    return err ? vb_status_from_errno(err) : STATUS_SUCCESS;
}

static void vb_srq_destroy(struct vb_obj *o)
{
    struct vb_srq *srq = ndk_container_of(o, struct vb_srq, obj);

    pthread_mutex_lock(&o->dev->qpt_lock);
    if (srq->link.next)
        ndk_list_del(&srq->link);
    pthread_mutex_unlock(&o->dev->qpt_lock);
    vb_obj_sv_free(o);     /* out of dev->srqs: no poll writes the record now */
    if (srq->srq && ibv_destroy_srq(srq->srq))
        vb_err(o->dev, "ibv_destroy_srq: %s", strerror(errno));
    pthread_mutex_destroy(&srq->lock);
    free(srq->slots);
    free(srq);
}

static const struct vb_obj_ops vb_srq_ops = { .destroy = vb_srq_destroy };

static NTSTATUS vb_srq_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return vb_obj_close(&to_vb_srq((NDK_SRQ *)h)->obj, cb, ctx);
}

static const NDK_SRQ_DISPATCH vb_srq_dispatch = {
    .NdkCloseSrq = vb_srq_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkModifySrq = vb_srq_modify,
    .NdkSrqReceive = vb_post_srq_receive,
};

NTSTATUS vb_srq_create(NDK_PD *p, ULONG depth, ULONG max_sge, ULONG threshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK fn,
                       PVOID fctx, GROUP_AFFINITY *aff, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_SRQ **out)
{
    struct vb_pd *pd = to_vb_pd(p);
    struct vb_device *dev = pd->obj.dev;
    struct ibv_srq_init_attr sa;
    struct vb_srq *srq;
    int err;

    (void)aff;
    (void)cb;
    (void)ctx;
    if (!dev->has_srq)
        return STATUS_NOT_SUPPORTED;
    if (!out || !depth || depth > dev->info.MaxSrqDepth || max_sge > dev->info.MaxReceiveRequestSge ||
        threshold > depth)
        return STATUS_INVALID_PARAMETER;
    srq = calloc(1, sizeof(*srq));
    if (!srq)
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_init(&srq->lock, NULL);
    srq->depth = depth;
    srq->max_sge = max_sge ? max_sge : 1;
    srq->notify = fn;
    srq->notify_ctx = fctx;
    srq->notify_work.fn = vb_srq_notify_work;
    ndk_list_init(&srq->notify_work.link);
    vb_obj_init(&srq->obj, &vb_srq_ops, VB_OBJ_SRQ, pd->obj.adapter, &srq->ndk.Header, &vb_srq_dispatch);
    vb_obj_set_ante(&srq->obj, 0, &pd->obj);
    /* Headroom: NdkModifySrq may grow the queue, and not every device resizes SRQs (siw). */
    srq->nslots = depth * 4 > 64 ? depth * 4 : 64;
    if (srq->nslots > dev->info.MaxSrqDepth)
        srq->nslots = dev->info.MaxSrqDepth > depth ? dev->info.MaxSrqDepth : depth;
    srq->slots = calloc(srq->nslots, sizeof(*srq->slots));
    if (!srq->slots) {
        vb_obj_abort_create(&srq->obj);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    for (uint32_t k = 0; k < srq->nslots; k++)
        srq->slots[k].next_free = k + 1 < srq->nslots ? k + 1 : VB_SLOT_NONE;
    srq->free_head = 0;
    memset(&sa, 0, sizeof sa);
    sa.srq_context = srq;
    sa.attr.max_wr = srq->nslots;
    sa.attr.max_sge = srq->max_sge;
    srq->srq = ibv_create_srq(pd->pd, &sa);
    if (!srq->srq) {
        err = errno ? errno : ENOMEM;
        vb_obj_abort_create(&srq->obj);
        return err == EINVAL ? STATUS_INVALID_PARAMETER : vb_status_from_errno(err);
    }
    pthread_mutex_lock(&dev->qpt_lock);
    ndk_list_add_tail(&dev->srqs, &srq->link);
    pthread_mutex_unlock(&dev->qpt_lock);
    pthread_mutex_lock(&srq->lock);
    err = vb_srq_arm_locked(srq, threshold);
    pthread_mutex_unlock(&srq->lock);
    if (err)
        vb_warn(dev, "SRQ limit %u: %s", threshold, strerror(-err));
    vb_srq_sv(srq);
    *out = &srq->ndk;
    return STATUS_SUCCESS;
}
