/* cq.c - completion queues (§2.4, map §1.5, §1.6): ibv_create_cq on the device's completion
 * channel, NDK arming emulated on one-shot verbs arming, and the translation of ibv_wc through
 * the work requests' shadow slots (the wc's opcode is invalid on errors, so wr_id says it all).
 *
 * Arming: ANY -> ibv_req_notify_cq(0), SOLICITED -> (1); ERRORS arms nothing in verbs, as only a
 * CQ error (IBV_EVENT_CQ_ERR) satisfies it. Verbs never fires for entries queued before the arm,
 * so after arming one entry is polled into a look-ahead slot: present (or a provider-made
 * completion queued) means "notify now". Errors seen while unarmed are latched (§8.32). */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void vb_cq_destroy(struct vb_obj *o)
{
    struct vb_cq *cq = ndk_container_of(o, struct vb_cq, obj);

    vb_obj_sv_free(o);
    if (cq->cq && ibv_destroy_cq(cq->cq))
        vb_err(o->dev, "ibv_destroy_cq: %s", strerror(errno));
    while (!ndk_list_empty(&cq->swc)) {
        struct vb_swc *s = ndk_list_entry(cq->swc.next, struct vb_swc, link);
        ndk_list_del(&s->link);
        free(s);
    }
    pthread_mutex_destroy(&cq->lock);
    free(cq);
}

/* Progress thread: one notification, if still armed. No lock held while calling back. */
static void vb_cq_deliver(struct vb_cq *cq, NTSTATUS st)
{
    bool fire;

    pthread_mutex_lock(&cq->lock);
    fire = cq->armed >= 0 && !vb_obj_closing(&cq->obj);
    if (fire)
        cq->armed = -1;
    pthread_mutex_unlock(&cq->lock);
    if (fire && cq->notify)
        cq->notify(cq->notify_ctx, st);
}

static void vb_cq_notify_work(struct vb_work *w)
{
    struct vb_cq *cq = ndk_container_of(w, struct vb_cq, notify_work);
    NTSTATUS st;

    pthread_mutex_lock(&cq->lock);
    cq->notify_queued = false;
    st = cq->notify_status;
    pthread_mutex_unlock(&cq->lock);
    vb_cq_deliver(cq, st);
    vb_obj_put(&cq->obj);
}

/* Queues a notification; cq->lock held. */
static void vb_cq_queue_notify_locked(struct vb_cq *cq, NTSTATUS st)
{
    cq->notify_status = st;
    if (cq->notify_queued)
        return;
    cq->notify_queued = true;
    vb_obj_get(&cq->obj);
    vb_work_queue(cq->obj.dev, &cq->notify_work);
}

/* Progress thread: the completion channel reported cq. */
void vb_cq_on_event(struct vb_device *dev, struct ibv_cq *icq)
{
    struct vb_cq *cq = icq->cq_context;

    (void)dev;
    ibv_ack_cq_events(icq, 1);
    if (cq)
        vb_cq_deliver(cq, STATUS_SUCCESS);
}

/* Progress thread: a CQ error (overrun) or device failure. */
void vb_cq_on_error(struct vb_cq *cq, NTSTATUS st)
{
    VB_COUNT(cq->obj.dev, CQError);
    pthread_mutex_lock(&cq->lock);
    if (cq->armed < 0)
        cq->latched = st;
    pthread_mutex_unlock(&cq->lock);
    vb_cq_deliver(cq, st);
}

/* A completion made by the provider (fast register, invalidate); any thread, takes cq->lock. */
void vb_cq_push_soft(struct vb_cq *cq, const NDK_RESULT_EX *r)
{
    struct vb_swc *s = calloc(1, sizeof(*s));

    if (!s) {
        vb_err(cq->obj.dev, "out of memory for a completion: reporting a CQ overrun");
        pthread_mutex_lock(&cq->lock);
        cq->latched = STATUS_BUFFER_OVERFLOW;
        pthread_mutex_unlock(&cq->lock);
        return;
    }
    s->r = *r;
    pthread_mutex_lock(&cq->lock);
    ndk_list_add_tail(&cq->swc, &s->link);
    atomic_fetch_add(&cq->nswc, 1);
    if (cq->armed == NDK_CQ_NOTIFY_ANY || (cq->armed == NDK_CQ_NOTIFY_SOLICITED && r->Status != STATUS_SUCCESS))
        vb_cq_queue_notify_locked(cq, STATUS_SUCCESS);
    pthread_mutex_unlock(&cq->lock);
}

/* Any thread: wake an armed consumer so that it polls (a QP error whose completions the poll
 * itself may have to make, drain.c). A spurious wake-up costs one empty poll. */
void vb_cq_kick(struct vb_cq *cq)
{
    pthread_mutex_lock(&cq->lock);
    if (cq->armed == NDK_CQ_NOTIFY_ANY || cq->armed == NDK_CQ_NOTIFY_SOLICITED)
        vb_cq_queue_notify_locked(cq, STATUS_SUCCESS);
    pthread_mutex_unlock(&cq->lock);
}

static int vb_arm_rank(int t)
{
    return t == NDK_CQ_NOTIFY_ANY ? 3 : t == NDK_CQ_NOTIFY_SOLICITED ? 2 : t == NDK_CQ_NOTIFY_ERRORS ? 1 : 0;
}

static VOID vb_cq_arm(NDK_CQ *c, ULONG type)
{
    struct vb_cq *cq = to_vb_cq(c);
    bool have_soft, poll_ahead;
    int eff;

    if (type != NDK_CQ_NOTIFY_ANY && type != NDK_CQ_NOTIFY_SOLICITED && type != NDK_CQ_NOTIFY_ERRORS)
        return;
    pthread_mutex_lock(&cq->lock);
    /* §5.7: arming again before the notification keeps the stronger condition. */
    eff = cq->armed >= 0 && vb_arm_rank(cq->armed) > vb_arm_rank((int)type) ? cq->armed : (int)type;
    cq->armed = eff;
    if (cq->latched != STATUS_SUCCESS) {
        vb_cq_queue_notify_locked(cq, cq->latched);
        cq->latched = STATUS_SUCCESS;
        pthread_mutex_unlock(&cq->lock);
        return;
    }
    if (eff != NDK_CQ_NOTIFY_ERRORS && ibv_req_notify_cq(cq->cq, eff == NDK_CQ_NOTIFY_SOLICITED))
        vb_err(cq->obj.dev, "ibv_req_notify_cq: %s", strerror(errno));
    /* Dropped requests of a failed QP waiting to be completed by a poll count as queued. */
    have_soft = !ndk_list_empty(&cq->swc) || atomic_load(&cq->obj.dev->ndrain);
    poll_ahead = eff != NDK_CQ_NOTIFY_ERRORS;
    pthread_mutex_unlock(&cq->lock);
    if (!poll_ahead)
        return;
    /* Poll and arm are serialized by the consumer (§5.4): the look-ahead needs no lock. */
    if (!cq->have_ahead && ibv_poll_cq(cq->cq, 1, &cq->ahead) == 1)
        cq->have_ahead = true;
    pthread_mutex_lock(&cq->lock);
    if ((cq->have_ahead && (eff == NDK_CQ_NOTIFY_ANY || cq->ahead.status != IBV_WC_SUCCESS)) ||
        (have_soft && (eff == NDK_CQ_NOTIFY_ANY || atomic_load(&cq->obj.dev->ndrain))))
        vb_cq_queue_notify_locked(cq, STATUS_SUCCESS);
    pthread_mutex_unlock(&cq->lock);
}

/* Translates one wc into *r; false when the entry is not the consumer's (hidden, stale). */
static bool vb_cq_translate(struct vb_cq *cq, const struct ibv_wc *wc, NDK_RESULT_EX *r)
{
    struct vb_device *dev = cq->obj.dev;
    struct vb_qp *qp;
    bool keep = false;

    memset(r, 0, sizeof(*r));
    pthread_mutex_lock(&dev->qpt_lock);
    qp = vb_qp_lookup(dev, wc->qp_num);
    if (qp && (!(wc->wr_id & VB_WR_RING) || VB_WR_GEN(wc->wr_id) == qp->gen))
        keep = vb_qp_complete(qp, wc, r);
    else if (!(wc->wr_id & VB_WR_RING)) {
        /* An SRQ receive whose QP is gone: the buffer is consumed, the entry is stale. */
        uint32_t idx;
        struct vb_srq *srq = vb_srq_lookup(dev, wc->wr_id, &idx);
        if (srq)
            vb_srq_complete(srq, idx);
    }
    pthread_mutex_unlock(&dev->qpt_lock);
    return keep;
}

/* Provider-made completions first (they were made when their request ended). */
static ULONG vb_cq_pop_soft(struct vb_cq *cq, NDK_RESULT_EX *out, ULONG got, ULONG n)
{
    if (!atomic_load(&cq->nswc))
        return got;
    pthread_mutex_lock(&cq->lock);
    while (got < n && !ndk_list_empty(&cq->swc)) {
        struct vb_swc *s = ndk_list_entry(cq->swc.next, struct vb_swc, link);
        ndk_list_del(&s->link);
        atomic_fetch_sub(&cq->nswc, 1);
        out[got++] = s->r;
        free(s);
    }
    pthread_mutex_unlock(&cq->lock);
    return got;
}

/* The poll's counts into the CQ's record: taken entries (the device's and the provider's, hidden
 * ones included), results returned, and error results other than cancellations. Poll thread
 * (the consumer serializes poll and arm, §5.4), so each word has one writer. */
static void vb_cq_sv_count(struct vb_cq *cq, const NDK_RESULT_EX *out, ULONG got, uint64_t taken)
{
    struct ndk_sv_rec *r = cq->obj.sv;
    uint64_t errs = 0;

    if (!r || !taken)
        return;
    for (ULONG k = 0; k < got; k++)
        errs += out[k].Status != STATUS_SUCCESS && out[k].Status != STATUS_CANCELLED;
    ndk_sv_add(&r->u.cq.completions, taken);
    ndk_sv_add(&r->u.cq.polled, got);
    if (errs)
        ndk_sv_add(&r->u.cq.errors, errs);
}

static ULONG vb_cq_poll(struct vb_cq *cq, NDK_RESULT_EX *out, ULONG n)
{
    struct vb_device *dev = cq->obj.dev;
    ULONG got = 0, soft;
    uint64_t taken = 0;
    bool empty = false;
    /* Read before polling: a QP marked at or before this epoch had its flush in the CQ already
     * (drain.c), so an empty device CQ below means its remaining requests were dropped. */
    uint64_t epoch = atomic_load(&dev->ndrain) ? atomic_load(&dev->drain_epoch) : 0;

    if (!n)
        return 0;
    got = vb_cq_pop_soft(cq, out, got, n);
    taken = got;
    if (got < n && cq->have_ahead) {
        cq->have_ahead = false;
        taken++;
        if (vb_cq_translate(cq, &cq->ahead, &out[got]))
            got++;
    }
    while (got < n) {
        struct ibv_wc wc[16];
        int want = (int)(n - got < 16 ? n - got : 16);
        int k = ibv_poll_cq(cq->cq, want, wc);
        if (k <= 0) {
            empty = k == 0;
            break;
        }
        taken += (uint64_t)k;
        for (int i = 0; i < k; i++)
            if (vb_cq_translate(cq, &wc[i], &out[got]))
                got++;
        if (k < want) {
            empty = true;
            break;
        }
    }
    if (empty && epoch && !cq->have_ahead && vb_drain_cq(cq, epoch)) {
        soft = got;
        got = vb_cq_pop_soft(cq, out, got, n);
        taken += got - soft;
    }
    vb_cq_sv_count(cq, out, got, taken);
    return got;
}

static ULONG vb_cq_get_results(NDK_CQ *c, NDK_RESULT res[], ULONG n)
{
    struct vb_cq *cq = to_vb_cq(c);
    NDK_RESULT_EX tmp[16];
    ULONG got = 0;

    while (got < n) {
        ULONG want = n - got < 16 ? n - got : 16;
        ULONG k = vb_cq_poll(cq, tmp, want);
        for (ULONG i = 0; i < k; i++) {
            res[got + i].Status = tmp[i].Status;
            res[got + i].BytesTransferred = tmp[i].BytesTransferred;
            res[got + i].QPContext = tmp[i].QPContext;
            res[got + i].RequestContext = tmp[i].RequestContext;
        }
        got += k;
        if (k < want)
            break;
    }
    return got;
}

static ULONG vb_cq_get_results_ex(NDK_CQ *c, NDK_RESULT_EX res[], ULONG n)
{
    return vb_cq_poll(to_vb_cq(c), res, n);
}

/* Create or resize (the consumer's thread): the depth the consumer asked for. */
static void vb_cq_sv_depth(struct vb_cq *cq)
{
    struct ndk_sv_rec *r = cq->obj.sv;

    if (!r)
        return;
    ndk_sv_begin(r);
    r->u.cq.depth = cq->depth;
    ndk_sv_end(r);
}

static NTSTATUS vb_cq_resize(NDK_CQ *c, ULONG depth, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct vb_cq *cq = to_vb_cq(c);
    struct vb_device *dev = cq->obj.dev;

    (void)cb;
    (void)ctx;
    if (!dev->can_resize_cq)
        return STATUS_NOT_SUPPORTED;
    if (!depth || depth > dev->info.MaxCqDepth)
        return STATUS_INVALID_PARAMETER;
    /* Verbs refuses a size below the unpolled entries (EINVAL): the NDK answer is the same. */
    if (ibv_resize_cq(cq->cq, (int)(depth + VB_CQ_RESERVE)))
        return errno == EINVAL ? STATUS_INVALID_PARAMETER : vb_status_from_errno(errno);
    cq->depth = depth;
    vb_cq_sv_depth(cq);
    return STATUS_SUCCESS;
}

/* ibv_modify_cq where the device moderates (map §1.1); "count only" and "time only" fill the
 * other field with the device maximum; the 16-bit verbs fields are clamped. */
static NTSTATUS vb_cq_moderation(NDK_CQ *c, ULONG interval, ULONG count)
{
    struct vb_cq *cq = to_vb_cq(c);
    struct vb_device *dev = cq->obj.dev;
    struct ibv_modify_cq_attr a = { .attr_mask = IBV_CQ_ATTR_MODERATE };

    if (!dev->cq_mod_count || !dev->cq_mod_period)
        return STATUS_NOT_SUPPORTED;
    a.moderate.cq_count = (uint16_t)(count ? (count < dev->cq_mod_count ? count : dev->cq_mod_count) : dev->cq_mod_count);
    a.moderate.cq_period = (uint16_t)(interval ? (interval < dev->cq_mod_period ? interval : dev->cq_mod_period)
                                               : dev->cq_mod_period);
    if (!count && !interval)
        a.moderate.cq_count = a.moderate.cq_period = 0;
    return ibv_modify_cq(cq->cq, &a) ? vb_status_from_errno(errno) : STATUS_SUCCESS;
}

static void vb_cq_close_start(struct vb_obj *o)
{
    struct vb_cq *cq = ndk_container_of(o, struct vb_cq, obj);

    pthread_mutex_lock(&cq->lock);
    cq->armed = -1;
    pthread_mutex_unlock(&cq->lock);
}

static NTSTATUS vb_cq_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return vb_obj_close(&to_vb_cq((NDK_CQ *)h)->obj, cb, ctx);
}

static const NDK_CQ_DISPATCH vb_cq_dispatch = {
    .NdkCloseCq = vb_cq_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkResizeCq = vb_cq_resize,
    .NdkArmCq = vb_cq_arm,
    .NdkGetCqResults = vb_cq_get_results,
    .NdkControlCqInterruptModeration = vb_cq_moderation,
    .NdkGetCqResultsEx = vb_cq_get_results_ex,
};

static const struct vb_obj_ops vb_cq_ops_full = { .close_start = vb_cq_close_start, .destroy = vb_cq_destroy };

NTSTATUS vb_cq_create(NDK_ADAPTER *a, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK fn, PVOID fctx, GROUP_AFFINITY *aff,
                      NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_CQ **out)
{
    struct vb_adapter *ad = to_vb_adapter(a);
    struct vb_device *dev = ad->dev;
    struct vb_cq *cq;

    (void)aff;
    (void)cb;
    (void)ctx;
    if (!out || !depth || depth > dev->info.MaxCqDepth)
        return STATUS_INVALID_PARAMETER;
    cq = calloc(1, sizeof(*cq));
    if (!cq)
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_init(&cq->lock, NULL);
    ndk_list_init(&cq->swc);
    cq->depth = depth;
    cq->notify = fn;
    cq->notify_ctx = fctx;
    cq->armed = -1;
    cq->latched = STATUS_SUCCESS;
    cq->notify_work.fn = vb_cq_notify_work;
    ndk_list_init(&cq->notify_work.link);
    vb_obj_init(&cq->obj, &vb_cq_ops_full, VB_OBJ_CQ, ad, &cq->ndk.Header, &vb_cq_dispatch);
    cq->cq = ibv_create_cq(dev->ctx, (int)(depth + VB_CQ_RESERVE), cq, dev->cc, 0);
    if (!cq->cq) {
        int err = errno ? errno : ENOMEM;
        vb_obj_abort_create(&cq->obj);
        return vb_status_from_errno(err);
    }
    vb_cq_sv_depth(cq);
    *out = &cq->ndk;
    return STATUS_SUCCESS;
}
