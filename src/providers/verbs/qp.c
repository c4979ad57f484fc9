/* qp.c - queue pairs (§2.5 NdkCreateQp, §2.9 NdkFlush, map §1.2, D1): self-managed RC QPs made
 * with ibv_create_qp (never rdma_create_qp, since NDK creates QPs before connectors), moved to
 * INIT at once so receives may be posted before the connection (§8.28), to RTR/RTS by the
 * connector through rdma_init_qp_attr on IB/RoCE (the iWARP CM moves them itself), and the
 * translation of their completions through the shadow rings. */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint vb_qp_next_gen = 1;

static uint32_t vb_pow2(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

struct vb_qp *vb_qp_lookup(struct vb_device *dev, uint32_t qpn)
{
    struct ndk_list *pos;

    ndk_list_for_each(pos, &dev->qpt[qpn % 64]) {
        struct vb_qp *qp = ndk_list_entry(pos, struct vb_qp, qpt_link);
        if (qp->qpn == qpn)
            return qp;
    }
    return NULL;
}

/* The completion-side words of one completion (dev->qpt_lock held, no ring lock): a receive's
 * bytes, the error count, and the first protocol error with the state it leaves. */
static void vb_qp_sv_done(struct vb_qp *qp, enum ibv_wc_status st, bool ok, uint32_t bytes, bool recv)
{
    struct ndk_sv_rec *r = qp->obj.sv;

    if (!r)
        return;
    if (ok) {
        if (recv) {
            ndk_sv_add(&r->u.qp.ops_in, 1);
            ndk_sv_add(&r->u.qp.bytes_in, bytes);
        }
        return;
    }
    if (st == IBV_WC_WR_FLUSH_ERR)
        return;                     /* a flush ends requests; it is no error of theirs */
    ndk_sv_add(&r->u.qp.errors, 1);
    if (vb_sv_qp_error(r, vb_sv_wc_errno(st)))
        vb_qp_sv_state(qp, "ERROR");
}

/* sq_lock and dev->qpt_lock held: the initiator requests a completion at ring counter c
 * retires (the unsignaled ones before it too) into the byte and operation counts. */
static void vb_qp_sv_retire(struct vb_qp *qp, uint32_t c, enum ibv_wc_status st)
{
    struct ndk_sv_rec *r = qp->obj.sv;

    for (uint32_t k = (uint32_t)qp->sq_tail;; k++) {
        const struct vb_sslot *s = &qp->sq[k & (qp->sq_n - 1)];
        if (k == c && st != IBV_WC_SUCCESS)
            break;
        if (s->type == VB_SOP_SEND || s->type == VB_SOP_WRITE) {
            ndk_sv_add(&r->u.qp.ops_out, 1);
            ndk_sv_add(&r->u.qp.bytes_out, s->len);
        } else if (s->type == VB_SOP_READ) {
            ndk_sv_add(&r->u.qp.ops_out, 1);
            ndk_sv_add(&r->u.qp.bytes_in, s->len);
        }
        if (k == c)
            break;
    }
}

/* Where the QP's state changes (create, connection, error); any thread, no ring lock held. */
void vb_qp_sv_state(struct vb_qp *qp, const char *state)
{
    struct ndk_sv_rec *r = qp->obj.sv;

    if (!r)
        return;
    pthread_mutex_lock(&qp->sq_lock);
    ndk_sv_begin(r);
    vb_sv_name(r->u.qp.state, state);
    ndk_sv_end(r);
    pthread_mutex_unlock(&qp->sq_lock);
}

/* Called by the CQ with dev->qpt_lock held: translates a completion of this QP. */
bool vb_qp_complete(struct vb_qp *qp, const struct ibv_wc *wc, NDK_RESULT_EX *r)
{
    bool ok = wc->status == IBV_WC_SUCCESS;
    bool recv = !(wc->wr_id & VB_WR_RING) || (wc->wr_id & VB_WR_RECV);

    r->QPContext = qp->qp_ctx;
    r->Status = vb_status_from_wc(wc->status, recv);
    r->ProviderErrorCode = ok ? 0 : ((uint32_t)wc->status << 24) | (wc->vendor_err & 0xffffffu);
    if (!ok && wc->status != IBV_WC_WR_FLUSH_ERR)
        vb_dbg(qp->obj.dev, "QP %u: %s completion: %s (vendor error 0x%x)", qp->qpn, recv ? "receive" : "send queue",
               ibv_wc_status_str(wc->status), wc->vendor_err);
    if (recv) {
        if (wc->wr_id & VB_WR_RING) {
            uint32_t c = (uint32_t)wc->wr_id;
            pthread_mutex_lock(&qp->rq_lock);
            if ((uint32_t)(c - (uint32_t)qp->rq_tail) >= (uint32_t)(qp->rq_head - qp->rq_tail)) {
                pthread_mutex_unlock(&qp->rq_lock);
                return false;       /* already completed by the provider (drain.c) */
            }
            r->RequestContext = qp->rq[c & (qp->rq_n - 1)];
            qp->rq_tail += (uint32_t)(c - (uint32_t)qp->rq_tail) + 1;
            vb_qp_sv_rq(qp);
            pthread_mutex_unlock(&qp->rq_lock);
        } else {
            uint32_t idx;
            struct vb_srq *srq = vb_srq_lookup(qp->obj.dev, wc->wr_id, &idx);
            if (!srq)
                return false;
            r->RequestContext = vb_srq_complete(srq, idx);
        }
        r->Type = NdkOperationTypeReceive;
        vb_qp_sv_done(qp, wc->status, ok, ok ? wc->byte_len : 0, true);
        if (ok) {
            r->BytesTransferred = wc->byte_len;
            if ((wc->wc_flags & IBV_WC_WITH_INV) ||
                (qp->obj.dev->rxe_inv_quirk && (wc->wc_flags & IBV_WC_IP_CSUM_OK))) {
                r->Type = NdkOperationTypeReceiveAndInvalidate;
                r->TypeSpecificCompletionOutput = wc->invalidated_rkey;
                vb_rinv_note(qp->obj.dev, wc->invalidated_rkey);
            }
        }
        return true;
    }
    uint32_t c = (uint32_t)wc->wr_id;
    struct vb_sslot s;
    pthread_mutex_lock(&qp->sq_lock);
    if ((uint32_t)(c - (uint32_t)qp->sq_tail) >= (uint32_t)(qp->sq_head - qp->sq_tail)) {
        pthread_mutex_unlock(&qp->sq_lock);
        return false;               /* already completed by the provider (drain.c) */
    }
    s = qp->sq[c & (qp->sq_n - 1)];
    if (qp->obj.sv)
        vb_qp_sv_retire(qp, c, wc->status);
    /* Verbs retires every unsignaled WR before a completed one (RC completes in order). */
    qp->sq_tail += (uint32_t)(c - (uint32_t)qp->sq_tail) + 1;
    if (s.forced)
        qp->forced_inflight = false;
    vb_qp_sv_sq(qp);
    pthread_mutex_unlock(&qp->sq_lock);
    vb_qp_sv_done(qp, wc->status, ok, 0, false);
    if (!ok) {
        atomic_store(&qp->peer_gone, true);   /* the QP is in error: later posts fail inline */
        vb_drain_error_seen(qp);
    }
    if (ok && s.silent)
        return false;      /* a hidden signal on a silent-success request (map §1.4) */
    r->RequestContext = s.ctx;
    r->Type = vb_qp_op_type(s.type);
    return true;
}

NDK_OPERATION_TYPE vb_qp_op_type(uint8_t sop)
{
    return sop == VB_SOP_SEND ? NdkOperationTypeSend : sop == VB_SOP_WRITE ? NdkOperationTypeWrite
         : sop == VB_SOP_READ ? NdkOperationTypeRead : sop == VB_SOP_BIND ? NdkOperationTypeBind
         : sop == VB_SOP_FR ? NdkOperationTypeFastRegister
         : NdkOperationTypeInvalidate;
}

/* IB/RoCE: INIT -> RTR -> RTS with the attributes rdma_cm negotiated (map D1). iWARP: the kernel
 * CM does it. Progress thread or connector call; may block. Returns 0 or -errno. */
int vb_qp_to_rts(struct vb_qp *qp, struct rdma_cm_id *id)
{
    struct ibv_qp_attr a;
    int mask;

    if (qp->obj.dev->iwarp)
        return 0;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    if (rdma_init_qp_attr(id, &a, &mask))
        return -errno;
    /* rdma_cm's default RNR timer (0) means 655 ms; 12 is 0.64 ms, as most ULPs use. */
    a.min_rnr_timer = 12;
    if (ibv_modify_qp(qp->qp, &a, mask))
        return -errno;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    if (rdma_init_qp_attr(id, &a, &mask))
        return -errno;
    /* Finite RNR retries: 7 means forever, which hangs a Send without a Receive (map §1.7). */
    a.rnr_retry = 6;
    mask |= IBV_QP_RNR_RETRY;
    if (ibv_modify_qp(qp->qp, &a, mask))
        return -errno;
    return 0;
}

/* Any thread: stops the QP; every outstanding request completes with a flush status. */
void vb_qp_to_err(struct vb_qp *qp)
{
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

    if (atomic_exchange(&qp->flushed, true))
        return;
    if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE))
        vb_warn(qp->obj.dev, "QP %u to ERR: %s", qp->qpn, strerror(errno));
    vb_qp_sv_state(qp, "ERROR");
    vb_drain_arm(qp);
}

void vb_qp_flush(NDK_QP *q)
{
    vb_qp_to_err(to_vb_qp(q));
}

static void vb_qp_close_start(struct vb_obj *o)
{
    vb_qp_to_err(ndk_container_of(o, struct vb_qp, obj));
}

static void vb_qp_destroy(struct vb_obj *o)
{
    struct vb_qp *qp = ndk_container_of(o, struct vb_qp, obj);

    if (qp->qp) {
        pthread_mutex_lock(&o->dev->qpt_lock);
        if (qp->qpt_link.next)
            ndk_list_del(&qp->qpt_link);
        pthread_mutex_unlock(&o->dev->qpt_lock);
        vb_drain_forget(qp);
        vb_win_release_qp(qp);
        if (ibv_destroy_qp(qp->qp))
            vb_err(o->dev, "ibv_destroy_qp: %s", strerror(errno));
    }
    vb_obj_sv_free(o);     /* out of dev->qpt: no poll writes the record now */
    pthread_mutex_destroy(&qp->sq_lock);
    pthread_mutex_destroy(&qp->rq_lock);
    free(qp->sq);
    free(qp->rq);
    free(qp->rq_ns);
    free(qp->inl);
    free(qp->chain_wrs);
    free(qp->chain_sges);
    free(qp);
}

static const struct vb_obj_ops vb_qp_ops = { .close_start = vb_qp_close_start, .destroy = vb_qp_destroy };

static NTSTATUS vb_qp_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return vb_obj_close(&to_vb_qp((NDK_QP *)h)->obj, cb, ctx);
}

static const NDK_QP_DISPATCH vb_qp_dispatch = {
    .NdkCloseQp = vb_qp_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkFlush = vb_qp_flush,
    .NdkSend = vb_post_send,
    .NdkReceive = vb_post_receive,
    .NdkBind = vb_post_bind,
    .NdkFastRegister = vb_post_fast_register,
    .NdkInvalidate = vb_post_invalidate,
    .NdkRead = vb_post_read,
    .NdkWrite = vb_post_write,
    .NdkSendAndInvalidate = vb_post_send_inv,
};

/* Create time, no lock: what the QP is made of. */
static void vb_qp_sv_init(struct vb_qp *qp)
{
    struct ndk_sv_rec *r = qp->obj.sv;

    if (!r)
        return;
    ndk_sv_begin(r);
    vb_sv_name(r->u.qp.state, "INIT");
    r->u.qp.pd = vb_sv_id(qp->pd->obj.sv);
    r->u.qp.rcq = vb_sv_id(qp->rcq->obj.sv);
    r->u.qp.icq = vb_sv_id(qp->scq->obj.sv);
    r->u.qp.srq = qp->srq ? vb_sv_id(qp->srq->obj.sv) : 0;
    r->u.qp.sq_depth = qp->sq_depth;
    r->u.qp.rq_depth = qp->rq_depth;
    ndk_sv_end(r);
}

static NTSTATUS vb_qp_create_common(NDK_PD *p, NDK_CQ *rcq, NDK_CQ *scq, NDK_SRQ *s, PVOID qpctx, ULONG rq_depth,
                                    ULONG sq_depth, ULONG max_rsge, ULONG max_ssge, ULONG inline_size, NDK_QP **out)
{
    struct vb_pd *pd = to_vb_pd(p);
    struct vb_device *dev = pd->obj.dev;
    const NDK_ADAPTER_INFO *i = &dev->info;
    struct vb_srq *srq = s ? to_vb_srq(s) : NULL;
    struct ibv_qp_init_attr qa;
    struct ibv_qp_attr a;
    struct vb_qp *qp;
    int err;

    if (!out || !rcq || !scq || !sq_depth || sq_depth > i->MaxInitiatorQueueDepth ||
        max_ssge > i->MaxInitiatorRequestSge || inline_size > i->MaxInlineDataSize ||
        (!srq && (!rq_depth || rq_depth > i->MaxReceiveQueueDepth || max_rsge > i->MaxReceiveRequestSge)))
        return STATUS_INVALID_PARAMETER;
    if (to_vb_cq(rcq)->obj.adapter != pd->obj.adapter || to_vb_cq(scq)->obj.adapter != pd->obj.adapter ||
        (srq && srq->obj.adapter != pd->obj.adapter))
        return STATUS_INVALID_PARAMETER;
    qp = calloc(1, sizeof(*qp));
    if (!qp)
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_init(&qp->sq_lock, NULL);
    pthread_mutex_init(&qp->rq_lock, NULL);
    vb_obj_init(&qp->obj, &vb_qp_ops, VB_OBJ_QP, pd->obj.adapter, &qp->ndk.Header, &vb_qp_dispatch);
    qp->pd = pd;
    qp->rcq = to_vb_cq(rcq);
    qp->scq = to_vb_cq(scq);
    qp->srq = srq;
    qp->qp_ctx = qpctx;
    qp->sq_depth = sq_depth;
    qp->rq_depth = srq ? 0 : rq_depth;
    qp->max_ssge = max_ssge ? max_ssge : 1;
    qp->max_rsge = max_rsge ? max_rsge : 1;
    qp->inline_size = inline_size;
    /* Reads may carry up to MaxReadRequestSge SGEs whatever the QP's initiator SGE count (§2.9),
     * and verbs counts read SGEs against the send queue's max_send_sge. */
    qp->wr_sges = qp->max_ssge > dev->max_sge_rd ? qp->max_ssge : dev->max_sge_rd;
    qp->sq_n = vb_pow2(sq_depth);
    qp->rq_n = srq ? 1 : vb_pow2(rq_depth);
    qp->gen = atomic_fetch_add(&vb_qp_next_gen, 1) & 0x3fffffffu;
    atomic_init(&qp->flushed, false);
    atomic_init(&qp->connected, false);
    atomic_init(&qp->peer_gone, false);
    atomic_init(&qp->drain_sq, 0);
    atomic_init(&qp->drain_rq, 0);
    atomic_init(&qp->err_queued, false);
    vb_obj_set_ante(&qp->obj, 0, &pd->obj);
    vb_obj_set_ante(&qp->obj, 1, &qp->rcq->obj);
    vb_obj_set_ante(&qp->obj, 2, &qp->scq->obj);
    if (srq)
        vb_obj_set_ante(&qp->obj, 3, &srq->obj);
    qp->sq = calloc(qp->sq_n, sizeof(*qp->sq));
    qp->rq = calloc(qp->rq_n, sizeof(*qp->rq));
    qp->rq_ns = srq ? NULL : calloc(qp->rq_n, sizeof(*qp->rq_ns));
    qp->chain_wrs = calloc(qp->sq_n, sizeof(*qp->chain_wrs));
    qp->chain_sges = calloc((size_t)qp->sq_n * qp->wr_sges, sizeof(*qp->chain_sges));
    qp->inl = inline_size ? calloc(qp->sq_n, inline_size) : NULL;
    if (!qp->sq || !qp->rq || (!srq && !qp->rq_ns) || !qp->chain_wrs || !qp->chain_sges || (inline_size && !qp->inl)) {
        vb_obj_abort_create(&qp->obj);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    memset(&qa, 0, sizeof qa);
    qa.qp_context = qp;
    qa.send_cq = qp->scq->cq;
    qa.recv_cq = qp->rcq->cq;
    qa.srq = srq ? srq->srq : NULL;
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.cap.max_send_wr = sq_depth;
    qa.cap.max_recv_wr = srq ? 0 : rq_depth;
    qa.cap.max_send_sge = qp->wr_sges;
    qa.cap.max_recv_sge = srq ? 0 : qp->max_rsge;
    qa.cap.max_inline_data = inline_size;
    qp->qp = ibv_create_qp(pd->pd, &qa);
    if (!qp->qp) {
        err = errno ? errno : ENOMEM;
        vb_obj_abort_create(&qp->obj);
        return err == EINVAL ? STATUS_INVALID_PARAMETER : vb_status_from_errno(err);
    }
    qp->qpn = qp->qp->qp_num;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = dev->port;
    a.pkey_index = 0;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                        (dev->has_mw2 ? IBV_ACCESS_MW_BIND : 0);
    if (ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) &&
        ibv_modify_qp(qp->qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS)) {
        err = errno;
        vb_err(dev, "QP %u to INIT: %s", qp->qpn, strerror(err));
        vb_obj_abort_create(&qp->obj);
        return vb_status_from_errno(err);
    }
    vb_qp_sv_init(qp);
    pthread_mutex_lock(&dev->qpt_lock);
    ndk_list_add_tail(&dev->qpt[qp->qpn % 64], &qp->qpt_link);
    pthread_mutex_unlock(&dev->qpt_lock);
    *out = &qp->ndk;
    return STATUS_SUCCESS;
}

NTSTATUS vb_qp_create(NDK_PD *p, NDK_CQ *rcq, NDK_CQ *scq, PVOID qpctx, ULONG rq_depth, ULONG sq_depth, ULONG max_rsge,
                      ULONG max_ssge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_QP **out)
{
    (void)cb;
    (void)ctx;
    return vb_qp_create_common(p, rcq, scq, NULL, qpctx, rq_depth, sq_depth, max_rsge, max_ssge, inline_size, out);
}

NTSTATUS vb_qp_create_with_srq(NDK_PD *p, NDK_CQ *rcq, NDK_CQ *scq, NDK_SRQ *srq, PVOID qpctx, ULONG sq_depth,
                               ULONG max_ssge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_QP **out)
{
    (void)cb;
    (void)ctx;
    if (!srq)
        return STATUS_INVALID_PARAMETER;
    return vb_qp_create_common(p, rcq, scq, srq, qpctx, 0, sq_depth, 0, max_ssge, inline_size, out);
}
