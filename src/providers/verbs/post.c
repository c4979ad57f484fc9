/* post.c - work requests (§2.9, map §1.2, §1.4): NDK requests become ibv_send_wr / ibv_recv_wr
 * with a shadow slot each (wr_id), DEFER becomes one chained ibv_post_send, SILENT_SUCCESS an
 * unsignaled WR (every sq_depth/2-th one signaled in secret, so verbs can retire them), INLINE a
 * copy into the slot's staging bytes (one SGE: verbs counts SGEs even for inline data). */
#include "verbs.h"

#include <errno.h>
#include <string.h>

/* NDK SGEs to verbs SGEs; the privileged token (map §1.1) and fast-register MRs' minted tokens
 * (token.c) are translated. Returns 0 or -errno. */
int vb_post_sges(struct vb_pd *pd, CONST NDK_SGE *sgl, ULONG n, struct ibv_sge *out)
{
    for (ULONG k = 0; k < n; k++) {
        out[k].addr = (uint64_t)(uintptr_t)sgl[k].VirtualAddress;
        out[k].length = sgl[k].Length;
        out[k].lkey = sgl[k].MemoryRegionToken;
        if (sgl[k].MemoryRegionToken == VB_PRIV_TOKEN) {
            int err = vb_pd_priv_lkey(pd, (uintptr_t)sgl[k].VirtualAddress, sgl[k].Length, &out[k].lkey);
            if (err)
                return err;
        } else {
            vb_token_translate(pd->obj.dev, &out[k]);
        }
    }
    return 0;
}

static NTSTATUS vb_post_fail_status(int err)
{
    return err == -ENOMEM ? STATUS_INSUFFICIENT_RESOURCES : err == -EACCES ? STATUS_ACCESS_VIOLATION
                                                                              : STATUS_INVALID_PARAMETER;
}

/* Posts the DEFER chain plus wr (which may be NULL). sq_lock held. */
static NTSTATUS vb_post_chain(struct vb_qp *qp, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *head = qp->chain, *bad = NULL;
    int err;

    if (wr) {
        wr->next = NULL;
        if (qp->chain_tail)
            qp->chain_tail->next = wr;
        else
            head = wr;
    }
    qp->chain = qp->chain_tail = NULL;
    if (!head)
        return STATUS_SUCCESS;
    err = ibv_post_send(qp->qp, head, &bad);
    if (!err)
        return STATUS_SUCCESS;
    /* Full validation at call time keeps this theoretical (map §1.4); the slots from bad on
     * never reach the device, so the ring gives them back. */
    for (struct ibv_send_wr *w = bad; w; w = w->next)
        qp->sq_head--;
    vb_qp_sv_sq(qp);
    vb_err(qp->obj.dev, "ibv_post_send: %s", strerror(err));
    return err == ENOMEM ? STATUS_INSUFFICIENT_RESOURCES : STATUS_INVALID_PARAMETER;
}

static void vb_post_soft(struct vb_qp *qp, void *ctx, NDK_OPERATION_TYPE type, ULONG flags, NTSTATUS st);

/* A post failed inline: what DEFER queued is submitted anyway (§5.5.4). Takes sq_lock. */
static NTSTATUS vb_post_fail(struct vb_qp *qp, NTSTATUS st)
{
    pthread_mutex_lock(&qp->sq_lock);
    if (qp->chain)
        vb_post_chain(qp, NULL);
    pthread_mutex_unlock(&qp->sq_lock);
    return st;
}

/* The shared path of every initiator request. tmpl carries opcode and its fields. */
static NTSTATUS vb_post_sq(struct vb_qp *qp, void *ctx, enum vb_sop op, CONST NDK_SGE *sgl, ULONG n, ULONG flags,
                           const struct ibv_send_wr *tmpl, struct vb_mw *mw)
{
    struct ibv_send_wr *wr;
    struct ibv_sge *sge;
    struct vb_sslot *s;
    uint64_t c;
    bool inl = (flags & NDK_OP_FLAG_INLINE) && (op == VB_SOP_SEND || op == VB_SOP_WRITE);
    bool silent = flags & NDK_OP_FLAG_SILENT_SUCCESS;
    NTSTATUS st;
    int err;

    if (!atomic_load(&qp->connected) || atomic_load(&qp->flushed) || atomic_load(&qp->peer_gone))
        return STATUS_CONNECTION_INVALID;
    if (n && !sgl)
        return vb_post_fail(qp, STATUS_INVALID_PARAMETER);
    if (!inl && n > (op == VB_SOP_READ ? qp->obj.dev->max_sge_rd : qp->max_ssge))
        return vb_post_fail(qp, STATUS_INVALID_PARAMETER);
    uint64_t total = 0;
    for (ULONG k = 0; k < n; k++)
        total += sgl[k].Length;
    if (total > qp->obj.dev->info.MaxTransferLength)
        return vb_post_fail(qp, STATUS_INVALID_PARAMETER);
    pthread_mutex_lock(&qp->sq_lock);
    if (qp->sq_head - qp->sq_tail >= qp->sq_depth) {
        if (qp->chain)
            vb_post_chain(qp, NULL);
        pthread_mutex_unlock(&qp->sq_lock);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    c = qp->sq_head;
    s = &qp->sq[c & (qp->sq_n - 1)];
    wr = &qp->chain_wrs[c & (qp->sq_n - 1)];
    sge = &qp->chain_sges[(size_t)(c & (qp->sq_n - 1)) * qp->wr_sges];
    *wr = *tmpl;
    wr->sg_list = sge;
    wr->num_sge = (int)n;
    if (inl) {
        uint8_t *buf = qp->inl + (size_t)(c & (qp->sq_n - 1)) * qp->inline_size;
        size_t used = 0;
        for (ULONG k = 0; k < n; k++) {
            if (sgl[k].Length > qp->inline_size - used) {
                /* A failed inline request still posts what DEFER queued (§5.5.4). */
                vb_post_chain(qp, NULL);
                pthread_mutex_unlock(&qp->sq_lock);
                return STATUS_INVALID_PARAMETER;
            }
            memcpy(buf + used, sgl[k].VirtualAddress, sgl[k].Length);
            used += sgl[k].Length;
        }
        sge->addr = (uint64_t)(uintptr_t)buf;
        sge->length = (uint32_t)used;
        sge->lkey = 0;
        wr->num_sge = used ? 1 : 0;
        wr->send_flags |= IBV_SEND_INLINE;
    } else if ((err = vb_post_sges(qp->pd, sgl, n, sge)) != 0) {
        vb_post_chain(qp, NULL);
        pthread_mutex_unlock(&qp->sq_lock);
        return vb_post_fail_status(err);
    }
    s->ctx = ctx;
    s->type = (uint8_t)op;
    s->mw = mw;
    s->len = (uint32_t)total;
    s->posted_ns = qp->obj.sv ? vb_sv_now() : 0;
    s->silent = silent;
    s->forced = silent && ++qp->silent_run >= (qp->sq_depth + 1) / 2 && !qp->forced_inflight;
    s->signaled = !silent || s->forced;
    if (s->forced)
        qp->forced_inflight = true;
    if (s->signaled)
        qp->silent_run = 0;
    if (s->signaled)
        wr->send_flags |= IBV_SEND_SIGNALED;
    if (flags & NDK_OP_FLAG_READ_FENCE)
        wr->send_flags |= IBV_SEND_FENCE;
    if ((flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) && op == VB_SOP_SEND)
        wr->send_flags |= IBV_SEND_SOLICITED;
    wr->wr_id = VB_WR_RING | ((uint64_t)qp->gen << 32) | (uint32_t)c;
    qp->sq_head++;
    vb_qp_sv_sq(qp);
    if (flags & NDK_OP_FLAG_DEFER) {
        wr->next = NULL;
        if (qp->chain_tail)
            qp->chain_tail->next = wr;
        else
            qp->chain = wr;
        qp->chain_tail = wr;
        pthread_mutex_unlock(&qp->sq_lock);
        return STATUS_SUCCESS;
    }
    st = vb_post_chain(qp, wr);
    pthread_mutex_unlock(&qp->sq_lock);
    return st;
}

NTSTATUS vb_post_send(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n, ULONG flags)
{
    struct ibv_send_wr t = { .opcode = IBV_WR_SEND };

    return vb_post_sq(to_vb_qp(q), ctx, VB_SOP_SEND, sgl, n, flags, &t, NULL);
}

NTSTATUS vb_post_send_inv(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n, ULONG flags, UINT32 token)
{
    struct ibv_send_wr t = { .opcode = IBV_WR_SEND_WITH_INV, .invalidate_rkey = token };

    return vb_post_sq(to_vb_qp(q), ctx, VB_SOP_SEND, sgl, n, flags, &t, NULL);
}

NTSTATUS vb_post_write(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n, UINT64 ra, UINT32 token, ULONG flags)
{
    struct ibv_send_wr t = { .opcode = IBV_WR_RDMA_WRITE, .wr.rdma = { .remote_addr = ra, .rkey = token } };

    return vb_post_sq(to_vb_qp(q), ctx, VB_SOP_WRITE, sgl, n, flags, &t, NULL);
}

NTSTATUS vb_post_read(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n, UINT64 ra, UINT32 token, ULONG flags)
{
    struct ibv_send_wr t = { .opcode = IBV_WR_RDMA_READ, .wr.rdma = { .remote_addr = ra, .rkey = token } };

    return vb_post_sq(to_vb_qp(q), ctx, VB_SOP_READ, sgl, n, flags & ~(ULONG)NDK_OP_FLAG_INLINE, &t, NULL);
}

/* NdkBind (map §1.3 "MW"): a type-2 window bound by IBV_WR_BIND_MW with a new key per bind,
 * so the token is known at post time. Rights are checked here, as verbs would fail only later. */
NTSTATUS vb_post_bind(NDK_QP *q, PVOID ctx, NDK_MR *m, NDK_MW *w, PVOID va, SIZE_T len, ULONG flags)
{
    struct vb_qp *qp = to_vb_qp(q);
    struct vb_device *dev = qp->obj.dev;
    struct vb_mr *mr;
    struct vb_mw *mw;
    struct ibv_send_wr t = { .opcode = IBV_WR_BIND_MW };
    int acc = 0;

    if (!atomic_load(&qp->connected) || atomic_load(&qp->flushed) || atomic_load(&qp->peer_gone))
        return STATUS_CONNECTION_INVALID;
    if (!m || !w)
        return STATUS_INVALID_PARAMETER;
    mr = to_vb_mr(m);
    mw = to_vb_mw(w);
    /* win_lock: mw->mw stays the window read here until the bind is posted (win.c). */
    pthread_mutex_lock(&dev->win_lock);
    pthread_mutex_lock(&mr->lock);
    /* §2.9 NdkBind: in range, and a remote-write window needs an MR with local write. */
    if (!mr->mr || (uintptr_t)va < (uintptr_t)mr->mr->addr ||
        (uintptr_t)va + len > (uintptr_t)mr->mr->addr + mr->mr->length ||
        ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE &&
         !(mr->access & IBV_ACCESS_LOCAL_WRITE))) {
        pthread_mutex_unlock(&mr->lock);
        pthread_mutex_unlock(&dev->win_lock);
        return vb_post_fail(qp, STATUS_ACCESS_VIOLATION);
    }
    if (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ)
        acc |= IBV_ACCESS_REMOTE_READ;
    if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE)
        acc |= IBV_ACCESS_REMOTE_WRITE;
    if (!mw->mw) {
        pthread_mutex_unlock(&mr->lock);
        pthread_mutex_unlock(&dev->win_lock);
        int err = vb_mw_emu_bind(mw, va, len, acc);
        if (err)
            return vb_post_fail(qp, vb_post_fail_status(err));
        vb_obj_set_ante(&mw->obj, 1, &mr->obj);
        vb_post_soft(qp, ctx, NdkOperationTypeBind, flags, STATUS_SUCCESS);
        return STATUS_SUCCESS;
    }
    t.bind_mw.mw = mw->mw;
    t.bind_mw.rkey = ibv_inc_rkey(atomic_load(&mw->rkey));
    /* A record of the old key (the peer invalidated it) or of a wrapped new one is stale now. */
    vb_rinv_take(dev, atomic_load(&mw->rkey));
    vb_rinv_take(dev, t.bind_mw.rkey);
    t.bind_mw.bind_info.mr = mr->mr;
    t.bind_mw.bind_info.addr = (uint64_t)(uintptr_t)va;
    t.bind_mw.bind_info.length = len;
    t.bind_mw.bind_info.mw_access_flags = (unsigned)acc;
    pthread_mutex_unlock(&mr->lock);
    /* The MR is the bound window's antecedent (§1.7): its close pends while the window lives. */
    vb_obj_set_ante(&mw->obj, 1, &mr->obj);
    NTSTATUS st = vb_post_sq(qp, ctx, VB_SOP_BIND, NULL, 0, flags & ~(ULONG)NDK_OP_FLAG_INLINE, &t, mw);
    if (st == STATUS_SUCCESS) {
        atomic_store(&mw->rkey, t.bind_mw.rkey);
        mw->mw->rkey = t.bind_mw.rkey;     /* the window's name in the next bind (vb_mr_bound) */
        mw->win.qp = qp;
        vb_mw_sv(mw, len);
    }
    pthread_mutex_unlock(&dev->win_lock);
    return st;
}

/* A request the provider completes itself (fast register, invalidate of a fast-register MR):
 * the work is done by the time the call returns, so later requests see it (map §1.3). */
static void vb_post_soft(struct vb_qp *qp, void *ctx, NDK_OPERATION_TYPE type, ULONG flags, NTSTATUS st)
{
    NDK_RESULT_EX r = { .Status = st, .QPContext = qp->qp_ctx, .RequestContext = ctx, .Type = type };

    if (st == STATUS_SUCCESS && (flags & NDK_OP_FLAG_SILENT_SUCCESS))
        return;
    vb_cq_push_soft(qp->scq, &r);
}

/* NdkFastRegister: user-space verbs has no FRWR. The MR is registered over the pages with
 * ibv_reg_mr_iova2 at BaseVirtualAddress (map §1.3 option B). siw ignores the iova
 * (siw_reg_user_mr leaves rnic_va unused), so there a label base works only for local access:
 * the registration stays at the pages' address and SGEs with the MR's token are shifted to it
 * (token.c); a peer's requests name the label, which siw cannot map. */
NTSTATUS vb_post_fast_register(NDK_QP *q, PVOID ctx, NDK_MR *m, ULONG npages, CONST NDK_LOGICAL_ADDRESS *pages,
                               ULONG fbo, SIZE_T len, PVOID base, ULONG flags)
{
    struct vb_qp *qp = to_vb_qp(q);
    struct vb_mr *mr;
    uintptr_t va;
    int err;

    if (!atomic_load(&qp->connected) || atomic_load(&qp->flushed) || atomic_load(&qp->peer_gone))
        return STATUS_CONNECTION_INVALID;
    if (!m || !pages || !npages || !len)
        return STATUS_INVALID_PARAMETER;
    mr = to_vb_mr(m);
    if (!mr->fast || npages > mr->max_pages || fbo >= PAGE_SIZE ||
        fbo + len > (uint64_t)npages * PAGE_SIZE)
        return STATUS_INVALID_PARAMETER;
    for (ULONG k = 1; k < npages; k++)
        if ((uint64_t)pages[k].QuadPart != (uint64_t)pages[0].QuadPart + (uint64_t)k * PAGE_SIZE)
            return STATUS_NOT_SUPPORTED;   /* scattered pages need a real FRWR */
    va = (uintptr_t)pages[0].QuadPart + fbo;
    /* ALLOW_REMOTE_WRITE (0x30) contains ALLOW_LOCAL_WRITE (0x10): only its own bit is remote. */
    bool remote = (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ) ||
                  (flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE;
    if (remote && !mr->remote)
        return vb_post_fail(qp, STATUS_ACCESS_VIOLATION);
    uint64_t iova = (uint64_t)(uintptr_t)base;
    int64_t delta = 0;
    if (base != (PVOID)va && qp->obj.dev->iwarp) {
        if (remote)
            return vb_post_fail(qp, STATUS_NOT_SUPPORTED);
        iova = va;
        delta = (int64_t)(va - (uintptr_t)base);
    }
    /* Remote access where the device has type-2 windows: the token is a window bound over the
     * registration, which a peer's Send with Invalidate ends (rxe refuses it for a user MR's
     * key); the bind is a work request, so the fast register completes in send-queue order. */
    bool mw = remote && qp->obj.dev->has_mw2 && mr->ph_mw;
    err = vb_mr_fast_register(mr, va, len, iova, delta, flags, mw);
    if (err)
        return vb_post_fail(qp, vb_post_fail_status(err));
    if (mw) {
        struct ibv_send_wr t;
        pthread_mutex_lock(&qp->obj.dev->win_lock);     /* ph_mw stays until posted (win.c) */
        vb_mr_bind_wr(mr, iova, len, flags, &t);
        NTSTATUS st = vb_post_sq(qp, ctx, VB_SOP_FR, NULL, 0, flags & ~(ULONG)NDK_OP_FLAG_INLINE, &t, NULL);
        vb_mr_bound(mr, qp, st == STATUS_SUCCESS ? t.bind_mw.rkey : 0);
        pthread_mutex_unlock(&qp->obj.dev->win_lock);
        return st;
    }
    vb_post_soft(qp, ctx, NdkOperationTypeFastRegister, flags, STATUS_SUCCESS);
    return STATUS_SUCCESS;
}

NTSTATUS vb_post_invalidate(NDK_QP *q, PVOID ctx, NDK_OBJECT_HEADER *target, ULONG flags)
{
    struct vb_qp *qp = to_vb_qp(q);

    if (!atomic_load(&qp->connected) || atomic_load(&qp->flushed) || atomic_load(&qp->peer_gone))
        return STATUS_CONNECTION_INVALID;
    if (!target)
        return STATUS_INVALID_PARAMETER;
    if (target->ObjectType == NdkObjectTypeMw) {
        struct vb_mw *mw = to_vb_mw((NDK_MW *)target);
        if (!mw->mw) {
            vb_mw_emu_invalidate(mw);
            vb_post_soft(qp, ctx, NdkOperationTypeInvalidate, flags, STATUS_SUCCESS);
            return STATUS_SUCCESS;
        }
        struct ibv_send_wr t = { .opcode = IBV_WR_LOCAL_INV, .invalidate_rkey = atomic_load(&mw->rkey) };
        /* Already invalidated by the peer: the key is dead, and rxe oopses on it (rinv.c). */
        if (vb_rinv_take(qp->obj.dev, t.invalidate_rkey)) {
            vb_post_soft(qp, ctx, NdkOperationTypeInvalidate, flags & ~(ULONG)NDK_OP_FLAG_SILENT_SUCCESS,
                         STATUS_ACCESS_VIOLATION);
            return STATUS_SUCCESS;
        }
        NTSTATUS st = vb_post_sq(qp, ctx, VB_SOP_INV, NULL, 0, flags & ~(ULONG)NDK_OP_FLAG_INLINE, &t, mw);
        if (st == STATUS_SUCCESS)
            vb_mw_sv(mw, 0);
        return st;
    }
    if (target->ObjectType == NdkObjectTypeMr) {
        struct vb_mr *mr = to_vb_mr((NDK_MR *)target);
        if (!mr->fast)
            return STATUS_INVALID_PARAMETER;
        uint32_t rkey;
        vb_mr_invalidate(mr, &rkey);
        if (rkey && vb_rinv_take(qp->obj.dev, rkey)) {
            vb_post_soft(qp, ctx, NdkOperationTypeInvalidate, flags & ~(ULONG)NDK_OP_FLAG_SILENT_SUCCESS,
                         STATUS_ACCESS_VIOLATION);
            return STATUS_SUCCESS;
        }
        if (rkey) {
            struct ibv_send_wr t = { .opcode = IBV_WR_LOCAL_INV, .invalidate_rkey = rkey };
            return vb_post_sq(qp, ctx, VB_SOP_INV, NULL, 0, flags & ~(ULONG)NDK_OP_FLAG_INLINE, &t, NULL);
        }
        vb_post_soft(qp, ctx, NdkOperationTypeInvalidate, flags, STATUS_SUCCESS);
        return STATUS_SUCCESS;
    }
    return STATUS_INVALID_PARAMETER;
}

NTSTATUS vb_post_receive(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n)
{
    struct vb_qp *qp = to_vb_qp(q);
    struct ibv_sge sge[32];
    struct ibv_recv_wr wr, *bad;
    uint64_t c;
    int err;

    if (qp->srq || n > qp->max_rsge || n > 32 || (n && !sgl))
        return STATUS_INVALID_PARAMETER;
    if ((err = vb_post_sges(qp->pd, sgl, n, sge)) != 0)
        return vb_post_fail_status(err);
    if (atomic_load(&qp->flushed)) {
        /* §8.29: after a flush, receives complete at once as cancelled. */
        NDK_RESULT_EX r = { .Status = STATUS_CANCELLED, .QPContext = qp->qp_ctx, .RequestContext = ctx,
                            .Type = NdkOperationTypeReceive };
        vb_cq_push_soft(qp->rcq, &r);
        return STATUS_SUCCESS;
    }
    pthread_mutex_lock(&qp->rq_lock);
    if (qp->rq_head - qp->rq_tail >= qp->rq_depth) {
        pthread_mutex_unlock(&qp->rq_lock);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    c = qp->rq_head;
    qp->rq[c & (qp->rq_n - 1)] = ctx;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = VB_WR_RING | VB_WR_RECV | ((uint64_t)qp->gen << 32) | (uint32_t)c;
    wr.sg_list = sge;
    wr.num_sge = (int)n;
    if (!n && qp->obj.dev->iwarp) {
        /* libsiw refuses a receive without SGEs; one empty SGE places nothing, as none would. */
        memset(sge, 0, sizeof sge[0]);
        wr.num_sge = 1;
    }
    qp->rq_ns[c & (qp->rq_n - 1)] = qp->obj.sv ? vb_sv_now() : 0;
    err = ibv_post_recv(qp->qp, &wr, &bad);
    if (!err) {
        qp->rq_head++;
        vb_qp_sv_rq(qp);
    }
    pthread_mutex_unlock(&qp->rq_lock);
    return err ? (err == ENOMEM ? STATUS_INSUFFICIENT_RESOURCES : STATUS_INVALID_PARAMETER) : STATUS_SUCCESS;
}
