/* vfy_post: work-request posting (NDKPI Work Request Posting Requirements, NDK_SGE, Deferred
 * Processing Scheme) and the CQ calls (NDK_FN_GET_CQ_RESULTS, NDK_FN_ARM_CQ). A request counts
 * as outstanding from the moment it is handed down until the consumer polls its completion. */
#include "vfy.h"

#include <stdlib.h>

static const struct {
    ndk_filter_fn fn;
    ULONG         flags;
} documented_flags[] = {
    { NDK_FILTER_FN_SEND, NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT |
                              NDK_OP_FLAG_INLINE | NDK_OP_FLAG_DEFER },
    { NDK_FILTER_FN_SEND_AND_INVALIDATE, NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE |
                              NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT | NDK_OP_FLAG_INLINE | NDK_OP_FLAG_DEFER },
    { NDK_FILTER_FN_READ, NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE |
                              NDK_OP_FLAG_DEFER },
    /* INLINE on a Write is not in its page's list but in the header's use; accepted. */
    { NDK_FILTER_FN_WRITE, NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_INLINE | NDK_OP_FLAG_DEFER },
    { NDK_FILTER_FN_BIND, NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_ALLOW_REMOTE_READ |
                              NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_DEFER },
    { NDK_FILTER_FN_FAST_REGISTER, NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_ALLOW_REMOTE_READ |
                              NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_WRITE |
                              NDK_OP_FLAG_RDMA_READ_SINK | NDK_OP_FLAG_DEFER },
    { NDK_FILTER_FN_INVALIDATE, NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_DEFER },
};

/* Per thread: the serialized things (queues, CQs) this thread is inside. A provider may run a
 * callback inline (a CQ notification from inside NdkArmCq or a post) and the consumer may call
 * the same queue or CQ from it: that nests on one thread and is not concurrency. */
static _Thread_local const void *inside[8];
static _Thread_local unsigned ninside;

/* Enters a serialized section; returns true when another thread is inside it. */
static bool busy_enter(atomic_int *busy, const void *key)
{
    bool nested = false;
    for (unsigned i = 0; i < ninside && i < 8; i++)
        if (inside[i] == key)
            nested = true;
    if (ninside < 8)
        inside[ninside] = key;
    ninside++;
    return atomic_fetch_add(busy, 1) > 0 && !nested;
}

static void busy_leave(atomic_int *busy)
{
    if (ninside)
        ninside--;
    atomic_fetch_sub(busy, 1);
}

void flt_verify_queue_free(struct vfy_queue *q)
{
    struct ndk_list *it, *tmp;
    ndk_list_for_each_safe(it, tmp, &q->outstanding) {
        ndk_list_del(it);
        free(ndk_list_entry(it, struct vfy_req, link));
    }
    q->counted = 0;
}

/* The consumer's thread, inside the create call or its completion. */
void flt_verify_qp_created(struct vfy_inst *inst, struct vfy_obj *parent_pd, ndk_filter_call *call, struct vfy_obj *qp)
{
    (void)parent_pd;
    ndk_filter_obj *any = qp->fobj;
    if (call->fn == NDK_FILTER_FN_CREATE_QP) {
        qp->u.qp.recv.depth = call->args.create_qp.receive_depth;
        qp->u.qp.recv.max_sge = call->args.create_qp.max_receive_sge;
        qp->u.qp.init.depth = call->args.create_qp.initiator_depth;
        qp->u.qp.init.max_sge = call->args.create_qp.max_initiator_sge;
        qp->u.qp.inline_size = call->args.create_qp.inline_size;
        qp->u.qp.qp_context = call->args.create_qp.qp_context;
        qp->u.qp.receive_cq = ndk_filter_obj_of(any, &call->args.create_qp.receive_cq->Header);
        qp->u.qp.initiator_cq = ndk_filter_obj_of(any, &call->args.create_qp.initiator_cq->Header);
    } else if (call->fn == NDK_FILTER_FN_CREATE_QP_WITH_SRQ) {
        qp->u.qp.init.depth = call->args.create_qp_with_srq.initiator_depth;
        qp->u.qp.init.max_sge = call->args.create_qp_with_srq.max_initiator_sge;
        qp->u.qp.inline_size = call->args.create_qp_with_srq.inline_size;
        qp->u.qp.qp_context = call->args.create_qp_with_srq.qp_context;
        qp->u.qp.receive_cq = ndk_filter_obj_of(any, &call->args.create_qp_with_srq.receive_cq->Header);
        qp->u.qp.initiator_cq = ndk_filter_obj_of(any, &call->args.create_qp_with_srq.initiator_cq->Header);
        qp->u.qp.srq = ndk_filter_obj_of(any, &call->args.create_qp_with_srq.srq->Header);
    } else if (call->fn == NDK_FILTER_FN_CREATE_SRQ) {
        qp->u.qp.recv.depth = call->args.create_srq.depth;
        qp->u.qp.recv.max_sge = call->args.create_srq.max_sge;
    }
    (void)inst;
}

static bool initiator_fn(ndk_filter_fn fn)
{
    return fn != NDK_FILTER_FN_RECEIVE && fn != NDK_FILTER_FN_SRQ_RECEIVE;
}

ULONG flt_verify_qp_outstanding(struct vfy_obj *qp)
{
    pthread_mutex_lock(&qp->u.qp.mu);
    ULONG n = qp->u.qp.init.untracked ? 0 : qp->u.qp.init.counted;
    pthread_mutex_unlock(&qp->u.qp.mu);
    return n;
}

/* The SGE list, flags and request context of any work request. */
static void post_fields(const ndk_filter_call *call, const NDK_SGE **sgl, ULONG *nsge, ULONG *flags, PVOID *ctx)
{
    *sgl = NULL;
    *nsge = 0;
    *flags = 0;
    *ctx = NULL;
    switch (call->fn) {
    case NDK_FILTER_FN_SEND: case NDK_FILTER_FN_SEND_AND_INVALIDATE:
    case NDK_FILTER_FN_RECEIVE: case NDK_FILTER_FN_SRQ_RECEIVE:
        *sgl = call->args.post.sgl;
        *nsge = call->args.post.sge_count;
        *flags = call->args.post.flags;
        *ctx = call->args.post.request_context;
        break;
    case NDK_FILTER_FN_READ: case NDK_FILTER_FN_WRITE:
        *sgl = call->args.rdma.sgl;
        *nsge = call->args.rdma.sge_count;
        *flags = call->args.rdma.flags;
        *ctx = call->args.rdma.request_context;
        break;
    case NDK_FILTER_FN_BIND:
        *flags = call->args.bind.flags;
        *ctx = call->args.bind.request_context;
        break;
    case NDK_FILTER_FN_FAST_REGISTER:
        *flags = call->args.fast_register.flags;
        *ctx = call->args.fast_register.request_context;
        break;
    case NDK_FILTER_FN_INVALIDATE:
        *flags = call->args.invalidate.flags;
        *ctx = call->args.invalidate.request_context;
        break;
    default:
        break;
    }
}

/* The consumer's thread, before a work request goes down. Checks the request, then enters it
 * as outstanding (before forwarding, as its completion may be polled before the post returns).
 * Returns false when the request must not be forwarded (never: the provider decides). */
bool flt_verify_post_before(struct vfy_inst *inst, struct vfy_obj *qp, ndk_filter_call *call, struct vfy_req **out)
{
    const char *fn = ndk_filter_fn_name(call->fn);
    bool init = initiator_fn(call->fn);
    struct vfy_queue *q = init ? &qp->u.qp.init : &qp->u.qp.recv;
    *out = NULL;
    if (busy_enter(&q->busy, q))
        flt_verify_report(VFY_CONCURRENT_QUEUE, qp->name, fn, "another work request call is running on the %s queue",
                          call->fn == NDK_FILTER_FN_SRQ_RECEIVE ? "shared receive" : init ? "initiator" : "receive");
    if (call->fn == NDK_FILTER_FN_RECEIVE && qp->u.qp.srq)
        flt_verify_report(VFY_RECEIVE_ON_SRQ_QP, qp->name, fn, "the QP was created with an SRQ (%s)",
                          flt_verify_obj(qp->u.qp.srq)->name);

    const NDK_SGE *sgl;
    ULONG nsge, flags;
    PVOID ctx;
    post_fields(call, &sgl, &nsge, &flags, &ctx);
    if (init) {
        for (size_t i = 0; i < sizeof documented_flags / sizeof documented_flags[0]; i++)
            if (documented_flags[i].fn == call->fn && (flags & ~documented_flags[i].flags))
                flt_verify_report(VFY_OP_FLAGS, qp->name, fn, "flags 0x%x are not documented for this call",
                                  (unsigned)(flags & ~documented_flags[i].flags));
    }
    bool is_inline = (flags & NDK_OP_FLAG_INLINE) &&
                     (call->fn == NDK_FILTER_FN_SEND || call->fn == NDK_FILTER_FN_SEND_AND_INVALIDATE ||
                      call->fn == NDK_FILTER_FN_WRITE);
    if (is_inline) {
        unsigned long long total = 0;
        for (ULONG i = 0; sgl && i < nsge; i++)
            total += sgl[i].Length;
        if (total > qp->u.qp.inline_size)
            flt_verify_report(VFY_INLINE_SIZE, qp->name, fn, "%llu inline bytes, the QP's InlineDataSize is %lu",
                              total, (unsigned long)qp->u.qp.inline_size);
    } else if (call->fn == NDK_FILTER_FN_READ) {
        /* A Read's SGE count is bounded by the adapter's MaxReadRequestSge, not by the QP's
         * initiator SGE limit (Work Request Posting Requirements). */
        if (inst->info_known && nsge > inst->info.MaxReadRequestSge)
            flt_verify_report(VFY_SGE_COUNT, qp->name, fn, "%lu SGEs, the adapter's MaxReadRequestSge is %lu",
                              (unsigned long)nsge, (unsigned long)inst->info.MaxReadRequestSge);
    } else if (sgl || nsge) {
        if (nsge > q->max_sge)
            flt_verify_report(VFY_SGE_COUNT, qp->name, fn, "%lu SGEs, the queue was created with at most %lu",
                              (unsigned long)nsge, (unsigned long)q->max_sge);
    }

    struct vfy_req *req = calloc(1, sizeof *req);
    if (req) {
        req->context = ctx;
        req->silent = (flags & NDK_OP_FLAG_SILENT_SUCCESS) != 0;
        ndk_list_init(&req->link);
    }
    if (sgl && !is_inline) {
        ndk_filter_obj *pd = ndk_filter_obj_parent(qp->fobj);
        flt_verify_sgl(inst, qp, pd, fn, sgl, nsge, req);
    }
    if (!req)
        return true;
    pthread_mutex_lock(&qp->u.qp.mu);
    if (!req->silent) {
        if (!q->untracked && q->depth && q->counted >= q->depth)
            flt_verify_report(VFY_QUEUE_DEPTH, qp->name, fn,
                              "%lu requests already outstanding, the queue's depth is %lu",
                              (unsigned long)q->counted, (unsigned long)q->depth);
        q->counted++;
    }
    ndk_list_add_tail(&q->outstanding, &req->link);
    pthread_mutex_unlock(&qp->u.qp.mu);
    *out = req;
    return true;
}

/* After the post returned: a failed post never completes, so it is no longer outstanding. */
void flt_verify_post_after(struct vfy_obj *qp, ndk_filter_call *call, struct vfy_req *req)
{
    bool init = initiator_fn(call->fn);
    struct vfy_queue *q = init ? &qp->u.qp.init : &qp->u.qp.recv;
    pthread_mutex_lock(&qp->u.qp.mu);
    if (req && !NT_SUCCESS(call->status)) {
        /* It may have been retired already if the CQ returned a same-context completion. */
        struct ndk_list *it;
        ndk_list_for_each(it, &q->outstanding) {
            if (it == &req->link) {
                ndk_list_del(&req->link);
                if (!req->silent && q->counted)
                    q->counted--;
                free(req);
                break;
            }
        }
    }
    if (init && NT_SUCCESS(call->status)) {
        const NDK_SGE *sgl;
        ULONG nsge, flags;
        PVOID ctx;
        post_fields(call, &sgl, &nsge, &flags, &ctx);
        q->defer_open = (flags & NDK_OP_FLAG_DEFER) != 0;
    } else if (init && !NT_SUCCESS(call->status)) {
        /* An inline failure ends a chain: the provider hands over what it deferred
         * (Deferred Processing Scheme). */
        q->defer_open = false;
    }
    pthread_mutex_unlock(&qp->u.qp.mu);
    busy_leave(&q->busy);
}

/* Retires the oldest outstanding request with this context from q, and the SILENT_SUCCESS ones
 * posted before it (a queue completes in order). Returns false when none matches. qp->u.qp.mu
 * held. */
static bool retire(struct vfy_queue *q, PVOID ctx)
{
    struct ndk_list *it;
    struct vfy_req *hit = NULL;
    ndk_list_for_each(it, &q->outstanding) {
        struct vfy_req *r = ndk_list_entry(it, struct vfy_req, link);
        if (r->context == ctx) {
            hit = r;
            break;
        }
    }
    if (!hit)
        return false;
    struct ndk_list *tmp;
    ndk_list_for_each_safe(it, tmp, &q->outstanding) {
        struct vfy_req *r = ndk_list_entry(it, struct vfy_req, link);
        if (r != hit && !r->silent)
            continue;
        ndk_list_del(&r->link);
        if (!r->silent && q->counted)
            q->counted--;
        bool last = r == hit;
        free(r);
        if (last)
            break;
    }
    return true;
}

static bool holds(struct vfy_queue *q, PVOID ctx)
{
    struct ndk_list *it;
    ndk_list_for_each(it, &q->outstanding)
        if (ndk_list_entry(it, struct vfy_req, link)->context == ctx)
            return true;
    return false;
}

/* One polled completion: finds its queue; when it cannot tell, stops counting for the
 * candidates instead of guessing. inst->mu held (the QP list); takes each QP's lock. */
static void attribute(struct vfy_inst *inst, ndk_filter_obj *cq, PVOID qp_context, PVOID ctx, int type)
{
    struct vfy_obj *cands[8];
    unsigned n = 0;
    struct ndk_list *it;
    ndk_list_for_each(it, &inst->qps) {
        struct vfy_obj *o = ndk_list_entry(it, struct vfy_obj, u.qp.qp_link);
        if (o->type != NdkObjectTypeQp || o->u.qp.qp_context != qp_context)
            continue;
        if (o->u.qp.receive_cq != cq && o->u.qp.initiator_cq != cq)
            continue;
        if (n < 8)
            cands[n] = o;
        n++;
    }
    if (n != 1) {
        for (unsigned i = 0; i < n && i < 8; i++) {
            pthread_mutex_lock(&cands[i]->u.qp.mu);
            cands[i]->u.qp.init.untracked = cands[i]->u.qp.recv.untracked = true;
            pthread_mutex_unlock(&cands[i]->u.qp.mu);
        }
        return;
    }
    struct vfy_obj *qp = cands[0];
    struct vfy_obj *srq = qp->u.qp.srq ? flt_verify_obj(qp->u.qp.srq) : NULL;
    struct vfy_queue *recvq = srq ? &srq->u.qp.recv : &qp->u.qp.recv;
    struct vfy_obj *recv_owner = srq ? srq : qp;
    bool may_init = qp->u.qp.initiator_cq == cq, may_recv = qp->u.qp.receive_cq == cq;
    if (type > 0) {   /* NDK_RESULT_EX.Type tells */
        bool is_recv = type == NdkOperationTypeReceive || type == NdkOperationTypeReceiveAndInvalidate;
        may_init = may_init && !is_recv;
        may_recv = may_recv && is_recv;
    }
    pthread_mutex_lock(&qp->u.qp.mu);
    if (recv_owner != qp)
        pthread_mutex_lock(&recv_owner->u.qp.mu);
    bool in_init = may_init && holds(&qp->u.qp.init, ctx);
    bool in_recv = may_recv && holds(recvq, ctx);
    if (in_init && in_recv) {
        qp->u.qp.init.untracked = true;
        recvq->untracked = true;
    } else if (in_init) {
        retire(&qp->u.qp.init, ctx);
    } else if (in_recv) {
        retire(recvq, ctx);
    }
    if (recv_owner != qp)
        pthread_mutex_unlock(&recv_owner->u.qp.mu);
    pthread_mutex_unlock(&qp->u.qp.mu);
}

/* The consumer's thread, before a CQ call. */
void flt_verify_cq_before(struct vfy_inst *inst, struct vfy_obj *cq, ndk_filter_call *call)
{
    const char *fn = ndk_filter_fn_name(call->fn);
    switch (call->fn) {
    case NDK_FILTER_FN_ARM_CQ:
        if (call->args.arm_cq.type > NDK_CQ_NOTIFY_SOLICITED)
            flt_verify_report(VFY_ARM_TYPE, cq->name, fn, "type %lu is none of NDK_CQ_NOTIFY_ERRORS/ANY/SOLICITED",
                              (unsigned long)call->args.arm_cq.type);
        /* fall through */
    case NDK_FILTER_FN_GET_CQ_RESULTS: case NDK_FILTER_FN_GET_CQ_RESULTS_EX:
        if (busy_enter(&cq->u.cq.busy, cq))
            flt_verify_report(VFY_CONCURRENT_CQ, cq->name, fn,
                              "another NdkGetCqResults(Ex)/NdkArmCq call is running on this CQ");
        break;
    case NDK_FILTER_FN_CONTROL_CQ_INTERRUPT_MODERATION:
        if (inst->info_known && !(inst->info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED))
            flt_verify_report(VFY_CQ_FEATURE, cq->name, fn,
                              "the adapter does not advertise NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED");
        if (busy_enter(&cq->u.cq.busy, cq))
            flt_verify_report(VFY_CONCURRENT_CQ, cq->name, fn, "another moderation or poll call is running on this CQ");
        break;
    case NDK_FILTER_FN_RESIZE_CQ:
        if (inst->info_known && !(inst->info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED))
            flt_verify_report(VFY_CQ_FEATURE, cq->name, fn, "the adapter does not advertise NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED");
        break;
    default:
        break;
    }
}

/* After a CQ call: polled completions retire their requests. */
void flt_verify_cq_after(struct vfy_inst *inst, struct vfy_obj *cq, ndk_filter_call *call)
{
    switch (call->fn) {
    case NDK_FILTER_FN_GET_CQ_RESULTS: {
        const NDK_RESULT *r = call->args.get_cq_results.results;
        ULONG n = call->args.get_cq_results.returned;
        if (n) {
            pthread_mutex_lock(&inst->mu);
            for (ULONG i = 0; i < n; i++)
                attribute(inst, cq->fobj, r[i].QPContext, r[i].RequestContext, 0);
            pthread_mutex_unlock(&inst->mu);
        }
        busy_leave(&cq->u.cq.busy);
        break;
    }
    case NDK_FILTER_FN_GET_CQ_RESULTS_EX: {
        const NDK_RESULT_EX *r = call->args.get_cq_results_ex.results;
        ULONG n = call->args.get_cq_results_ex.returned;
        if (n) {
            pthread_mutex_lock(&inst->mu);
            for (ULONG i = 0; i < n; i++)
                attribute(inst, cq->fobj, r[i].QPContext, r[i].RequestContext, (int)r[i].Type);
            pthread_mutex_unlock(&inst->mu);
        }
        busy_leave(&cq->u.cq.busy);
        break;
    }
    case NDK_FILTER_FN_ARM_CQ: case NDK_FILTER_FN_CONTROL_CQ_INTERRUPT_MODERATION:
        busy_leave(&cq->u.cq.busy);
        break;
    default:
        break;
    }
}
