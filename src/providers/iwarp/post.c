/*
 * post.c - the QP work-request entry points (NDKPI reference §2.9, §5.5), named by qp.c's
 * dispatch table. Talks to: wq.c (the rings), tx.c (kicks the engine), qp.c (a Receive on a
 * QP in ERROR is flushed at once), access.c, mem.c.
 *
 * Contract (§5.5.2): STATUS_SUCCESS = queued, exactly one completion later (none for a
 * successful SILENT_SUCCESS request); any failure = nothing queued, no completion ever. Every
 * limit is checked here, before queuing, with these statuses (§5.5.2 / §8 item 27 leave the
 * codes to us):
 *   unknown flag bits, too many SGEs, SGL total > MaxTransferLength, inline total >
 *   InlineDataSize, bad page list / FBO / base address / window     STATUS_INVALID_PARAMETER
 *   queue full                                                       STATUS_INSUFFICIENT_RESOURCES
 *   initiator request on a QP that is not connected (§2.9)           STATUS_CONNECTION_INVALID
 *   Receive on a QP that uses an SRQ (§8 item 27)                    STATUS_INVALID_DEVICE_REQUEST
 *   Read on a connection with an outbound read limit of 0 (§5.11.3)  STATUS_INVALID_DEVICE_REQUEST
 *   Bind / Fast Register asking for rights the MR cannot give (§2.9) STATUS_ACCESS_VIOLATION
 * Flags documented for other operations are ignored (§8 item 20: "ignore or reject
 * consistently"); INLINE is accepted on Write (§8 item 20).
 *
 * DEFER (§5.5.4): a DEFER request is queued without running the TX engine; the next request
 * without DEFER runs it, and so does every inline failure (the provider's duty to hand deferred
 * requests over before failing a post).
 *
 * Tokens (§2.9 NdkBind / NdkFastRegister): the new STag is visible to the getters as soon as
 * the call returns, so the fresh random key is chosen here; the registration itself becomes
 * valid when the TX engine executes the request in SQ order (access.c).
 *
 * Context: the consumer's posting thread (§5.4: one poster per queue), no lock held on entry;
 * takes qp->lock briefly, never blocks, never calls a consumer callback.
 *
 * Talks to: wq.c (the rings), tx.c (kicks the engine), access.c, mem.c (token changes). Named by
 * qp.c's dispatch table. */
#include "datapath.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"

#define DP_ALL_OP_FLAGS (NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | \
                         NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_LOCAL_WRITE |                          \
                         NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_INLINE | NDK_OP_FLAG_RDMA_READ_SINK |        \
                         NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE | NDK_OP_FLAG_DEFER)

/* The bit ALLOW_REMOTE_WRITE adds to ALLOW_LOCAL_WRITE (§2.9: 0x30 = 0x20 | 0x10). */
#define DP_OP_REMOTE_WRITE_BIT (NDK_OP_FLAG_ALLOW_REMOTE_WRITE & ~NDK_OP_FLAG_ALLOW_LOCAL_WRITE)

/* An inline failure: deferred requests are handed to the engine first (§5.5.4). */
static NTSTATUS post_fail(struct iw_qp *qp, NTSTATUS st)
{
    bool kick = false;

    iw_lock_take(&qp->lock);
    if (qp->dp && qp->dp->deferred) {
        qp->dp->deferred = false;
        kick = true;
    }
    iw_lock_give(&qp->lock);
    if (kick)
        iw_tx_kick(qp);
    return st;
}

/* §2.9: an initiator request on a QP that is not connected fails with
 * STATUS_CONNECTION_INVALID, whatever else is wrong with it (checked first, and again when the
 * request is queued, since the connection may go away in between). */
static bool post_connected(struct iw_qp *qp)
{
    bool ok;

    iw_lock_take(&qp->lock);
    ok = qp->state == IW_QP_RTS && qp->dp && !qp->dp->stopped;
    iw_lock_give(&qp->lock);
    return ok;
}

/* A request that failed its checks: §2.9's CONNECTION_INVALID comes first. Looked at only on
 * failure, so that a good post takes qp->lock once (post_sq checks the connection there). */
static NTSTATUS post_bad_request(struct iw_qp *qp, NTSTATUS st)
{
    return post_connected(qp) ? st : STATUS_CONNECTION_INVALID;
}

static int sgl_total(const NDK_SGE *sgl, ULONG nsge, uint64_t *total)
{
    uint64_t t = 0;

    if (nsge && !sgl)
        return -EINVAL;
    if (nsge == 1)
        t = sgl[0].Length;                        /* the usual one, without the unrolled loop */
    else
        for (ULONG i = 0; i < nsge; i++)
            t += sgl[i].Length;
    if (t > IW_MAX_TRANSFER)
        return -EINVAL;
    *total = t;
    return 0;
}

/* Queues w on the SQ of an RTS QP and runs the engine unless DEFER; a small Send or Write
 * that would be the next thing on the wire anyway goes straight to the socket instead (tx.c's
 * lean path), after the same checks and with the same outcome. On failure w's owned buffers
 * and references are released. pre(qp, w), when given, runs under qp->lock right before the
 * enqueue (token changes that must be atomic with acceptance). Posting thread, no lock held. */
static NTSTATUS post_sq(struct iw_qp *qp, struct iw_wqe *w, void (*pre)(struct iw_qp *, struct iw_wqe *))
{
    NTSTATUS st = STATUS_SUCCESS;
    bool kick = false, lean = false;
    struct dp_sgl sgl;                        /* the lean path's source (n entries written) */

    iw_lock_take(&qp->lock);
    if (qp->state != IW_QP_RTS || !qp->dp || qp->dp->stopped) {
        st = STATUS_CONNECTION_INVALID;
    } else if (w->op == IW_WR_READ && qp->dp->ord == 0) {
        st = STATUS_INVALID_DEVICE_REQUEST;   /* the peer granted no Read (IRD 0) */
    } else if (iw_wq_reserve(&qp->sq) < 0) {
        st = STATUS_INSUFFICIENT_RESOURCES;   /* full (§5.4), or no memory for the slot */
    } else if (iw_tx_lean_claim_locked(qp, w, &sgl)) {
        qp->dp->deferred = false;             /* nothing is queued: the SQ is empty */
        lean = true;
        ndk_sv_add(&qp->svq->sq_posted, 1);   /* never queued: no post time to keep */
    } else {
        if (pre)
            pre(qp, w);
        w->posted_ns = iw_sv_now();
        if (!qp->sq.count)
            ndk_sv_set(&qp->svq->sq_oldest_ns, w->posted_ns);
        ndk_sv_add(&qp->svq->sq_posted, 1);
        iw_wq_push(&qp->sq, w);
        if (w->flags & NDK_OP_FLAG_DEFER) {
            qp->dp->deferred = true;
        } else {
            qp->dp->deferred = false;
            kick = true;
        }
    }
    iw_lock_give(&qp->lock);
    if (st != STATUS_SUCCESS) {
        iw_wq_entry_release(w);
        return post_fail(qp, st);
    }
    if (lean)
        iw_tx_lean_send(qp, w, &sgl);
    else if (kick)
        iw_tx_kick(qp);
    return STATUS_SUCCESS;
}

/* Send / Send&Inv / Write: SGL or inline copy (§4.4, §5.5.3). */
static NTSTATUS build_sgl_wqe(struct iw_qp *qp, struct iw_wqe *w, enum iw_wr_op op, PVOID rctx, CONST NDK_SGE *sgl,
                              ULONG nsge, ULONG flags, uint32_t max_sge)
{
    iw_wqe_clear(w);                 /* the SGEs past nsge are never read or copied (wq.c) */
    if (flags & ~DP_ALL_OP_FLAGS)
        return STATUS_INVALID_PARAMETER;
    if (sgl_total(sgl, nsge, &w->length) < 0)
        return STATUS_INVALID_PARAMETER;
    w->op = op;
    w->flags = flags;
    w->request_context = rctx;
    if ((flags & NDK_OP_FLAG_INLINE) && op != IW_WR_READ) {
        /* Exempt from the SGE-count limit, bound by InlineDataSize; the token is ignored and
         * the buffers are the consumer's again when we return (§4.4). */
        if (w->length > qp->inline_size)
            return STATUS_INVALID_PARAMETER;
        if (w->length) {
            uint8_t *p = malloc(w->length);
            if (!p)
                return STATUS_INSUFFICIENT_RESOURCES;
            uint64_t off = 0;
            for (ULONG i = 0; i < nsge; i++) {
                if (sgl[i].Length)
                    memcpy(p + off, sgl[i].VirtualAddress, sgl[i].Length);
                off += sgl[i].Length;
            }
            w->inline_buf = p;
        }
        return STATUS_SUCCESS;
    }
    w->flags &= ~(ULONG)NDK_OP_FLAG_INLINE;
    if (nsge > max_sge)
        return STATUS_INVALID_PARAMETER;
    w->nsge = nsge;
    iw_wqe_copy_sges(w->sge, sgl, nsge);
    return STATUS_SUCCESS;
}

NTSTATUS iw_post_send(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    NTSTATUS st;

    st = build_sgl_wqe(qp, &w, IW_WR_SEND, rctx, sgl, nsge, flags, qp->sq.max_sge);
    if (st != STATUS_SUCCESS) {
        iw_wq_entry_release(&w);
        return post_fail(qp, post_bad_request(qp, st));
    }
    return post_sq(qp, &w, NULL);
}

NTSTATUS iw_post_send_inv(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, ULONG flags, UINT32 token)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    NTSTATUS st;

    st = build_sgl_wqe(qp, &w, IW_WR_SEND_INV, rctx, sgl, nsge, flags, qp->sq.max_sge);
    if (st != STATUS_SUCCESS) {
        iw_wq_entry_release(&w);
        return post_fail(qp, post_bad_request(qp, st));
    }
    w.remote_stag = token;
    return post_sq(qp, &w, NULL);
}

NTSTATUS iw_post_write(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 raddr, UINT32 rtoken, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    NTSTATUS st;

    st = build_sgl_wqe(qp, &w, IW_WR_WRITE, rctx, sgl, nsge, flags, qp->sq.max_sge);
    if (st != STATUS_SUCCESS) {
        iw_wq_entry_release(&w);
        return post_fail(qp, post_bad_request(qp, st));
    }
    w.remote_addr = raddr;
    w.remote_stag = rtoken;
    return post_sq(qp, &w, NULL);
}

NTSTATUS iw_post_read(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 raddr, UINT32 rtoken, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;
    /* Reads are never inline; their SGE limit is MaxReadRequestSge (§2.9). */
    NTSTATUS st;

    /* §2.9: without the adapter flag (an NDKPI 1.1 instance) the op flag is ignored. */
    if (!iw_adapter_read_local_invalidate(qp->obj.adapter))
        flags &= ~(ULONG)NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE;
    st = build_sgl_wqe(qp, &w, IW_WR_READ, rctx, sgl, nsge, flags & ~(ULONG)NDK_OP_FLAG_INLINE, qp->max_read_sge);
    if (st != STATUS_SUCCESS) {
        iw_wq_entry_release(&w);
        return post_fail(qp, post_bad_request(qp, st));
    }
    w.remote_addr = raddr;
    w.remote_stag = rtoken;
    return post_sq(qp, &w, NULL);
}

/* Under qp->lock, at acceptance of a bind or a fast register: the window or MR gets its new
 * token and is invalid until the request executes (iw_mem_get requires key.valid). */
static void mem_rekey(struct iw_qp *qp, struct iw_wqe *w)
{
    struct iw_mem_key *k = iw_mem_key_of(w->mem);
    struct iw_device *dev = qp->obj.dev;
    uint32_t old;

    pthread_mutex_lock(&dev->mem_lock);
    old = k->stag;
    iw_mem_write_begin(w->mem);
    IW_MEM_SET(k->valid, false);
    iw_mem_write_end(w->mem);
    iw_mem_sv_describe_locked(w->mem);
    pthread_mutex_unlock(&dev->mem_lock);
    uint32_t ns = iw_mem_rekey(dev, old);
    pthread_mutex_lock(&dev->mem_lock);
    iw_mem_write_begin(w->mem);
    IW_MEM_SET(k->stag, ns);
    iw_mem_write_end(w->mem);
    pthread_mutex_unlock(&dev->mem_lock);
}

NTSTATUS iw_post_bind(NDK_QP *q, PVOID rctx, NDK_MR *m, NDK_MW *mwp, PVOID va, SIZE_T len, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_mr *mr;
    struct iw_wqe w;
    ULONG acc;

    if (!post_connected(qp))
        return post_fail(qp, STATUS_CONNECTION_INVALID);

    if (!m || !mwp || (flags & ~DP_ALL_OP_FLAGS) || len == 0 || len > IW_MAX_WINDOW)
        return post_fail(qp, STATUS_INVALID_PARAMETER);
    mr = to_iw_mr(m);
    pthread_mutex_lock(&mr->lock);
    acc = mr->access;
    bool fast = mr->fast_register;
    pthread_mutex_unlock(&mr->lock);
    /* §2.9 NdkBind: remote write through a window needs an MR with local write (both flag
     * spaces: a fast-registered MR carries NDK_OP_FLAG_ALLOW_*). */
    bool lw = fast ? (acc & NDK_OP_FLAG_ALLOW_LOCAL_WRITE) != 0 : (acc & NDK_MR_FLAG_ALLOW_LOCAL_WRITE) != 0;
    if ((flags & DP_OP_REMOTE_WRITE_BIT) && !lw)
        return post_fail(qp, STATUS_ACCESS_VIOLATION);
    memset(&w, 0, sizeof w);
    w.op = IW_WR_BIND;
    w.flags = flags;
    w.request_context = rctx;
    w.va = (uint64_t)(uintptr_t)va;
    w.length = len;
    w.mem = &to_iw_mw(mwp)->obj;
    w.mem2 = &mr->obj;
    iw_obj_get(w.mem);
    iw_obj_get(w.mem2);
    return post_sq(qp, &w, mem_rekey);
}

NTSTATUS iw_post_fast_register(NDK_QP *q, PVOID rctx, NDK_MR *m, ULONG npages, CONST NDK_LOGICAL_ADDRESS *pages,
                             ULONG fbo, SIZE_T len, PVOID base_va, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    /* ALLOW_REMOTE_WRITE (0x30) contains ALLOW_LOCAL_WRITE (0x10): test the remote bit alone. */
    bool remote = (flags & (NDK_OP_FLAG_ALLOW_REMOTE_READ | DP_OP_REMOTE_WRITE_BIT)) != 0;
    struct iw_mr *mr;
    struct iw_wqe w;
    uint32_t cap;
    bool init, rem_ok;

    if (!post_connected(qp))
        return post_fail(qp, STATUS_CONNECTION_INVALID);

    if (!m || !npages || !pages || fbo >= PAGE_SIZE || (flags & ~DP_ALL_OP_FLAGS) || len > IW_MAX_REGISTRATION)
        return post_fail(qp, STATUS_INVALID_PARAMETER);
    mr = to_iw_mr(m);
    pthread_mutex_lock(&mr->lock);
    cap = mr->page_cap;
    init = mr->fast_register && mr->frmr_initialized;
    rem_ok = mr->frmr_remote;
    pthread_mutex_unlock(&mr->lock);
    if (!init || npages > cap)
        return post_fail(qp, STATUS_INVALID_PARAMETER);
    if (len > (uint64_t)npages * PAGE_SIZE - fbo)
        return post_fail(qp, STATUS_INVALID_PARAMETER);
    /* §2.9: BaseVirtualAddress = FBO + n * PAGE_SIZE (§8 item 13: 0 allowed when FBO is 0). */
    if (((uint64_t)(uintptr_t)base_va - fbo) % PAGE_SIZE)
        return post_fail(qp, STATUS_INVALID_PARAMETER);
    if ((uint64_t)(uintptr_t)base_va > UINT64_MAX - len)
        return post_fail(qp, STATUS_INVALID_PARAMETER);
    for (ULONG i = 0; i < npages; i++)
        if ((uint64_t)pages[i].QuadPart % PAGE_SIZE || pages[i].QuadPart == 0)
            return post_fail(qp, STATUS_INVALID_PARAMETER);   /* §2.9: PAGE_SIZE-aligned pages */
    if (remote && !rem_ok)
        return post_fail(qp, STATUS_ACCESS_VIOLATION);
    memset(&w, 0, sizeof w);
    w.page_list = malloc(npages * sizeof(uint64_t));
    if (!w.page_list)
        return post_fail(qp, STATUS_INSUFFICIENT_RESOURCES);
    for (ULONG i = 0; i < npages; i++)
        w.page_list[i] = (uint64_t)pages[i].QuadPart;
    w.op = IW_WR_FAST_REGISTER;
    w.flags = flags;
    w.request_context = rctx;
    w.page_count = npages;
    w.fbo = fbo;
    w.length = len;
    w.va = (uint64_t)(uintptr_t)base_va;
    w.mem = &mr->obj;
    iw_obj_get(w.mem);
    return post_sq(qp, &w, mem_rekey);
}

NTSTATUS iw_post_invalidate(NDK_QP *q, PVOID rctx, NDK_OBJECT_HEADER *obj, ULONG flags)
{
    struct iw_qp *qp = to_iw_qp(q);
    struct iw_wqe w;

    if (!post_connected(qp))
        return post_fail(qp, STATUS_CONNECTION_INVALID);

    if (!obj || (flags & ~DP_ALL_OP_FLAGS))
        return post_fail(qp, STATUS_INVALID_PARAMETER);
    memset(&w, 0, sizeof w);
    if (obj->ObjectType == NdkObjectTypeMr)
        w.mem = &to_iw_mr((NDK_MR *)obj)->obj;
    else if (obj->ObjectType == NdkObjectTypeMw)
        w.mem = &to_iw_mw((NDK_MW *)obj)->obj;
    else
        return post_fail(qp, STATUS_INVALID_PARAMETER);
    w.op = IW_WR_INVALIDATE;
    w.flags = flags;
    w.request_context = rctx;
    iw_obj_get(w.mem);
    return post_sq(qp, &w, NULL);
}

/* A receive's post with the RQ's gate held (struct iw_qp): gives back the slots of the receives
 * the RX engine took, queues this one, counts it in the system view. 0 or -ENOSPC / -ENOMEM. */
static int post_receive_gated(struct iw_qp *qp, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, uint64_t length,
                              uint64_t now)
{
    IW_TSAN_CONSUMER_POSTED();
    iw_wq_reap(&qp->rq);
    int err = iw_wq_push_receive(&qp->rq, rctx, sgl, nsge, length, now);
    if (err)
        return err;
    /* 0 exactly when no receive is outstanding, queued or being filled: against the RX engine,
     * which clears it without a lock when it completes the last one (rx.c, rx_sv_recv_done): the
     * push published the receive, then we look (a full fence). */
    atomic_thread_fence(memory_order_seq_cst);
    if (!__atomic_load_n(&qp->svq->rq_oldest_ns, __ATOMIC_RELAXED))
        ndk_sv_set(&qp->svq->rq_oldest_ns, now);
    ndk_sv_add(&qp->svq->rq_posted, 1);
    return 0;
}

/* Flattened (the reap and the push inlined), as rx.c's rx_frame_send is. */
__attribute__((flatten)) NTSTATUS iw_post_receive(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge)
{
    struct iw_qp *qp = to_iw_qp(q);
    uint64_t length;
    int err;

    if (qp->srq)
        return STATUS_INVALID_DEVICE_REQUEST;       /* §8 item 27: receives go to the SRQ */
    if (nsge > qp->rq.max_sge)
        return STATUS_INVALID_PARAMETER;
    if (sgl_total(sgl, nsge, &length) < 0)
        return STATUS_INVALID_PARAMETER;
    /* §8 item 28: receives may be posted before the connection exists; the RX engine takes
     * them when a Send arrives. On an ERROR QP they complete at once, CANCELLED (§8 item 29). */
    uint64_t now = iw_sv_now();
    if (iw_qp_rq_gate_try(qp)) {
        /* The usual way: no lock. The state is read under the gate, which every transition
         * takes; a flush after this post finds the receive queued. */
        err = post_receive_gated(qp, rctx, sgl, nsge, length, now);
        bool error = qp->state == IW_QP_ERROR;
        iw_qp_rq_gate_release(qp);
        if (err || !error)
            return err ? STATUS_INSUFFICIENT_RESOURCES : STATUS_SUCCESS;
        iw_lock_take(&qp->lock);
        if (qp->state == IW_QP_ERROR)
            iw_qp_flush_locked(qp);
        iw_lock_give(&qp->lock);
        return STATUS_SUCCESS;
    }
    /* A transition, flush or hand-over holds the gate (with qp->lock), or a consumer posts to
     * this queue from two threads at once against §5.4: wait for it as every post once did. */
    iw_lock_take(&qp->lock);
    iw_qp_rq_gate_wait(qp);
    err = post_receive_gated(qp, rctx, sgl, nsge, length, now);
    iw_qp_rq_gate_release(qp);
    if (!err && qp->state == IW_QP_ERROR)
        iw_qp_flush_locked(qp);
    iw_lock_give(&qp->lock);
    return err ? STATUS_INSUFFICIENT_RESOURCES : STATUS_SUCCESS;
}
