/* filter_next.c - ndk_filter_next(): forwards one call to the layer below. Object arguments
 * are unwrapped to the lower layer's objects (an object that is not one of this layer's gets
 * STATUS_INVALID_PARAMETER, never a crash), consumer callbacks are replaced by the layer's own
 * (filter_cb.c) with a context that finds the consumer's again, and created objects are wrapped.
 *
 * Context: the consumer's thread, from the filter's call hook; no lock held. After a lower call
 * that may complete through a callback returns STATUS_PENDING, nothing here touches the request
 * or the new object again: the callback may already have run on another thread (§0.4, §5.2). */
#define _GNU_SOURCE
#pragma GCC visibility push(default)
#include <ndk/filter.h>
#pragma GCC visibility pop
#include "filter_internal.h"
#include "rt_internal.h"

#include <stdlib.h>
#include <string.h>

#define LOWER(o, T) ((T *)(o)->lower)
#define NF_NEXT_CALLED ((void *)1)

/* Calls that may run a consumer callback before they return: the wrapper stays referenced for
 * the duration (nf_dispatch). Posting and polling are not among them: they never call back. */
int nf_fn_guarded(ndk_filter_fn fn)
{
    switch (fn) {
    case NDK_FILTER_FN_SEND:
    case NDK_FILTER_FN_RECEIVE:
    case NDK_FILTER_FN_SRQ_RECEIVE:
    case NDK_FILTER_FN_READ:
    case NDK_FILTER_FN_WRITE:
    case NDK_FILTER_FN_SEND_AND_INVALIDATE:
    case NDK_FILTER_FN_BIND:
    case NDK_FILTER_FN_FAST_REGISTER:
    case NDK_FILTER_FN_INVALIDATE:
    case NDK_FILTER_FN_GET_CQ_RESULTS:
    case NDK_FILTER_FN_GET_CQ_RESULTS_EX:
    case NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MR:
    case NDK_FILTER_FN_GET_LOCAL_TOKEN_FROM_MR:
    case NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MW:
    case NDK_FILTER_FN_FLUSH:
    case NDK_FILTER_FN_CLOSE_ADAPTER:
    case NDK_FILTER_FN_GET_RSS_PROCESSOR_INFO:
        return 0;
    default:
        return 1;
    }
}

/* Unwraps an object argument: 0 with *lower set (NULL for NULL), or -1 when it is not one of
 * this layer's objects of that type. */
static int unwrap(struct ndk_filter_obj *o, const NDK_OBJECT_HEADER *h, NDK_OBJECT_TYPE type, void **lower,
                  struct ndk_filter_obj **wrapper)
{
    *lower = NULL;
    if (wrapper)
        *wrapper = NULL;
    if (!h)
        return 0;
    struct ndk_filter_obj *w = nf_obj_check(o->layer, h, type);
    if (!w || !w->lower)
        return -1;
    *lower = w->lower;
    if (wrapper)
        *wrapper = w;
    return 0;
}

static struct nf_req *req_new(struct ndk_filter_obj *o, ndk_filter_fn fn, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct nf_req *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    r->obj = o;
    r->fn = fn;
    r->cb = cb;
    r->ctx = ctx;
    nf_obj_ref(o);
    nf_layer_live_add(o->layer, 1);
    return r;
}

/* The request ends without a callback (the lower call did not pend). */
static NTSTATUS req_settle(struct nf_req *r, NTSTATUS st)
{
    if (st != STATUS_PENDING) {
        struct ndk_filter_obj *o = r->obj;
        free(r);
        nf_layer_live_add(o->layer, -1);
        nf_obj_release(o);
    }
    return st;
}

static struct ndk_filter_obj *create_begin(ndk_filter_call *c, NDK_OBJECT_TYPE type, NDK_FN_CREATE_COMPLETION cb,
                                           PVOID ctx)
{
    struct ndk_filter_obj *n = nf_obj_new(c->obj->layer, type, c->obj);
    if (n) {
        n->create_fn = c->fn;
        n->create_cb = cb;
        n->create_ctx = ctx;
    }
    return n;
}

/* After the lower create: wrap on inline success, give up the wrapper on failure; on
 * STATUS_PENDING the wrapper belongs to nf_cb_create_done. */
static NTSTATUS create_end(ndk_filter_call *c, struct ndk_filter_obj *n, NTSTATUS st, NDK_OBJECT_HEADER *lower,
                           void *out)
{
    if (st == STATUS_SUCCESS && lower) {
        nf_obj_activate(n, lower);
        c->created = n;
        if (out)
            *(NDK_OBJECT_HEADER **)out = &n->pub.hdr;
    } else if (st != STATUS_PENDING) {
        if (st == STATUS_SUCCESS)
            st = STATUS_INTERNAL_ERROR;   /* success without an object: a lower-layer bug */
        nf_obj_discard(n);
    }
    return st;
}

NDK_FN_CLOSE_OBJECT nf_lower_close(struct ndk_filter_obj *o)
{
    switch (o->type) {
    case NdkObjectTypeCq: return LOWER(o, NDK_CQ)->Dispatch->NdkCloseCq;
    case NdkObjectTypePd: return LOWER(o, NDK_PD)->Dispatch->NdkClosePd;
    case NdkObjectTypeMr: return LOWER(o, NDK_MR)->Dispatch->NdkCloseMr;
    case NdkObjectTypeMw: return LOWER(o, NDK_MW)->Dispatch->NdkCloseMw;
    case NdkObjectTypeSrq: return LOWER(o, NDK_SRQ)->Dispatch->NdkCloseSrq;
    case NdkObjectTypeQp: return LOWER(o, NDK_QP)->Dispatch->NdkCloseQp;
    case NdkObjectTypeSharedEndpoint: return LOWER(o, NDK_SHARED_ENDPOINT)->Dispatch->NdkCloseSharedEndpoint;
    case NdkObjectTypeConnector: return LOWER(o, NDK_CONNECTOR)->Dispatch->NdkCloseConnector;
    case NdkObjectTypeListener: return LOWER(o, NDK_LISTENER)->Dispatch->NdkCloseListener;
    default: return NULL;
    }
}

static NDK_FN_QUERY_EXTENSION_INTERFACE lower_query_extension(struct ndk_filter_obj *o)
{
    switch (o->type) {
    case NdkObjectTypeAdapter: return LOWER(o, NDK_ADAPTER)->Dispatch->NdkQueryExtension;
    case NdkObjectTypeCq: return LOWER(o, NDK_CQ)->Dispatch->NdkQueryExtension;
    case NdkObjectTypePd: return LOWER(o, NDK_PD)->Dispatch->NdkQueryExtension;
    case NdkObjectTypeMr: return LOWER(o, NDK_MR)->Dispatch->NdkQueryExtension;
    case NdkObjectTypeMw: return LOWER(o, NDK_MW)->Dispatch->NdkQueryExtension;
    case NdkObjectTypeSrq: return LOWER(o, NDK_SRQ)->Dispatch->NdkQueryExtension;
    case NdkObjectTypeQp: return LOWER(o, NDK_QP)->Dispatch->NdkQueryExtension;
    case NdkObjectTypeSharedEndpoint: return LOWER(o, NDK_SHARED_ENDPOINT)->Dispatch->NdkQueryExtension;
    case NdkObjectTypeConnector: return LOWER(o, NDK_CONNECTOR)->Dispatch->NdkQueryExtension;
    case NdkObjectTypeListener: return LOWER(o, NDK_LISTENER)->Dispatch->NdkQueryExtension;
    default: return NULL;
    }
}

/* The close of a wrapper: forwards, then drops the open reference once the lower close is
 * done. The consumer sees STATUS_SUCCESS only when nothing else holds the wrapper (only the
 * guard of this call remains); otherwise STATUS_PENDING and the close completion follows when
 * the last reference goes (nf_obj_release). */
static NTSTATUS next_close(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj;
    if (o->closing)
        return STATUS_INVALID_DEVICE_REQUEST;   /* a second close of the same object */
    o->close_cb = c->args.close.completion;
    o->close_ctx = c->args.close.context;
    o->closing = 1;
    NTSTATUS st = nf_lower_close(o)(o->lower, nf_cb_close_done, o);
    if (st == STATUS_PENDING)
        return st;                            /* nf_cb_close_done drops the open reference */
    if (!NT_SUCCESS(st)) {
        o->closing = 0;                       /* still open below */
        return st;
    }
    /* Our caller's guard still holds the wrapper, so this never reaches zero here. */
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 2) {
        o->close_silent = 1;
        return STATUS_SUCCESS;
    }
    return STATUS_PENDING;
}

static int is_rss(const GUID *id)
{
    static const GUID rss = NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH_INIT;
    return id && memcmp(id, &rss, sizeof rss) == 0;
}

static NTSTATUS next_query_extension(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj;
    typeof(c->args.query_extension) *a = &c->args.query_extension;
    NTSTATUS st = lower_query_extension(o)(o->lower, a->id, a->version, a->out);
    if (st != STATUS_SUCCESS)
        return st;
    if (o->type == NdkObjectTypeAdapter && is_rss(a->id) && a->out && a->out->Dispatch) {
        /* A table the layer knows: the consumer gets the layer's, which forwards through the
         * filters to the lower one. */
        atomic_store(&o->ext_rss, (const NDK_EXTENSION_ADAPTER_RSS_DISPATCH *)a->out->Dispatch);
        a->out->Dispatch = &nf_rss_dispatch;
        return st;
    }
    /* An extension's table has no layout the layer knows, so it cannot be wrapped; handing the
     * lower table up would let the consumer call past every filter with objects the provider
     * does not know. The stack hides it. */
    static atomic_int told;
    if (!atomic_exchange(&told, 1))
        rt_log(o->layer->stack->rt, NDK_LOG_INFO,
               "filter stack: an extension interface of the provider is not offered through filters");
    if (a->out)
        a->out->Dispatch = NULL;
    return STATUS_NOT_SUPPORTED;
}

static NTSTATUS next_adapter(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj, *n;
    NDK_ADAPTER *low = LOWER(o, NDK_ADAPTER);
    NTSTATUS st;
    switch (c->fn) {
    case NDK_FILTER_FN_QUERY_ADAPTER_INFO:
        return low->Dispatch->NdkQueryAdapterInfo(low, c->args.query_adapter_info.info, c->args.query_adapter_info.size);
    case NDK_FILTER_FN_CREATE_CQ: {
        typeof(c->args.create_cq) *a = &c->args.create_cq;
        if (!(n = create_begin(c, NdkObjectTypeCq, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        n->ev.cq = a->notify;
        n->ev_ctx = a->notify_context;
        NDK_CQ *made = NULL;
        st = low->Dispatch->NdkCreateCq(low, a->depth, a->notify ? nf_cb_cq_notify : NULL, n, a->affinity,
                                        nf_cb_create_done, n, &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_CREATE_PD: {
        typeof(c->args.create_pd) *a = &c->args.create_pd;
        if (!(n = create_begin(c, NdkObjectTypePd, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NDK_PD *made = NULL;
        st = low->Dispatch->NdkCreatePd(low, nf_cb_create_done, n, &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_CREATE_SHARED_ENDPOINT: {
        typeof(c->args.create_shared_endpoint) *a = &c->args.create_shared_endpoint;
        if (!(n = create_begin(c, NdkObjectTypeSharedEndpoint, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NDK_SHARED_ENDPOINT *made = NULL;
        st = low->Dispatch->NdkCreateSharedEndpoint(low, a->address, a->address_length, nf_cb_create_done, n, &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_CREATE_CONNECTOR: {
        typeof(c->args.create_connector) *a = &c->args.create_connector;
        if (!(n = create_begin(c, NdkObjectTypeConnector, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NDK_CONNECTOR *made = NULL;
        st = low->Dispatch->NdkCreateConnector(low, nf_cb_create_done, n, &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_CREATE_LISTENER: {
        typeof(c->args.create_listener) *a = &c->args.create_listener;
        if (!(n = create_begin(c, NdkObjectTypeListener, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        n->ev.connect = a->connect_event;
        n->ev_ctx = a->connect_event_context;
        NDK_LISTENER *made = NULL;
        st = low->Dispatch->NdkCreateListener(low, a->connect_event ? nf_cb_connect_event : NULL, n,
                                              nf_cb_create_done, n, &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_BUILD_LAM: {
        typeof(c->args.build_lam) *a = &c->args.build_lam;
        struct nf_req *r = req_new(o, c->fn, a->completion, a->context);
        if (!r)
            return STATUS_INSUFFICIENT_RESOURCES;
        st = low->Dispatch->NdkBuildLAM(low, a->mdl, a->length, nf_cb_request_done, r, a->lam, a->lam_size, a->fbo);
        return req_settle(r, st);
    }
    case NDK_FILTER_FN_RELEASE_LAM:
        low->Dispatch->NdkReleaseLAM(low, c->args.release_lam.lam);
        return STATUS_SUCCESS;
    case NDK_FILTER_FN_CLOSE_ADAPTER:
        nf_layer_close_below(o->layer);
        return STATUS_SUCCESS;
    case NDK_FILTER_FN_GET_RSS_PROCESSOR_INFO: {
        const NDK_EXTENSION_ADAPTER_RSS_DISPATCH *rss = atomic_load(&o->ext_rss);
        if (!rss || !rss->NdkGetRssProcessorInfo)
            return STATUS_NOT_SUPPORTED;   /* never handed up by this layer */
        return rss->NdkGetRssProcessorInfo(low, c->args.get_rss_processor_info.info, c->args.get_rss_processor_info.size);
    }
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

static NTSTATUS next_cq(ndk_filter_call *c)
{
    NDK_CQ *low = LOWER(c->obj, NDK_CQ);
    switch (c->fn) {
    case NDK_FILTER_FN_RESIZE_CQ: {
        struct nf_req *r = req_new(c->obj, c->fn, c->args.resize_cq.completion, c->args.resize_cq.context);
        if (!r)
            return STATUS_INSUFFICIENT_RESOURCES;
        return req_settle(r, low->Dispatch->NdkResizeCq(low, c->args.resize_cq.depth, nf_cb_request_done, r));
    }
    case NDK_FILTER_FN_ARM_CQ:
        atomic_store(&c->obj->armed, 1);   /* before the lower arm: its notification may be immediate */
        low->Dispatch->NdkArmCq(low, c->args.arm_cq.type);
        return STATUS_SUCCESS;
    case NDK_FILTER_FN_GET_CQ_RESULTS:
        c->args.get_cq_results.returned =
            low->Dispatch->NdkGetCqResults(low, c->args.get_cq_results.results, c->args.get_cq_results.count);
        return STATUS_SUCCESS;
    case NDK_FILTER_FN_GET_CQ_RESULTS_EX:
        c->args.get_cq_results_ex.returned =
            low->Dispatch->NdkGetCqResultsEx(low, c->args.get_cq_results_ex.results, c->args.get_cq_results_ex.count);
        return STATUS_SUCCESS;
    case NDK_FILTER_FN_CONTROL_CQ_INTERRUPT_MODERATION:
        return low->Dispatch->NdkControlCqInterruptModeration(low, c->args.control_cq_interrupt_moderation.interval,
                                                              c->args.control_cq_interrupt_moderation.count);
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

static NTSTATUS next_pd(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj, *n, *rcq, *icq, *srq;
    NDK_PD *low = LOWER(o, NDK_PD);
    NTSTATUS st;
    switch (c->fn) {
    case NDK_FILTER_FN_CREATE_MR: {
        typeof(c->args.create_mr) *a = &c->args.create_mr;
        if (!(n = create_begin(c, NdkObjectTypeMr, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NDK_MR *made = NULL;
        st = low->Dispatch->NdkCreateMr(low, a->fast_register, nf_cb_create_done, n, &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_CREATE_MW: {
        typeof(c->args.create_mw) *a = &c->args.create_mw;
        if (!(n = create_begin(c, NdkObjectTypeMw, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NDK_MW *made = NULL;
        st = low->Dispatch->NdkCreateMw(low, nf_cb_create_done, n, &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_CREATE_SRQ: {
        typeof(c->args.create_srq) *a = &c->args.create_srq;
        if (!(n = create_begin(c, NdkObjectTypeSrq, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        n->ev.srq = a->notify;
        n->ev_ctx = a->notify_context;
        NDK_SRQ *made = NULL;
        st = low->Dispatch->NdkCreateSrq(low, a->depth, a->max_sge, a->notify_threshold,
                                         a->notify ? nf_cb_srq_notify : NULL, n, a->affinity, nf_cb_create_done, n,
                                         &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_CREATE_QP: {
        typeof(c->args.create_qp) *a = &c->args.create_qp;
        void *lrcq, *licq;
        if (unwrap(o, a->receive_cq ? &a->receive_cq->Header : NULL, NdkObjectTypeCq, &lrcq, &rcq) ||
            unwrap(o, a->initiator_cq ? &a->initiator_cq->Header : NULL, NdkObjectTypeCq, &licq, &icq))
            return STATUS_INVALID_PARAMETER;
        if (!(n = create_begin(c, NdkObjectTypeQp, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        if (rcq)
            nf_obj_add_dep(n, rcq);
        if (icq)
            nf_obj_add_dep(n, icq);
        NDK_QP *made = NULL;
        st = low->Dispatch->NdkCreateQp(low, lrcq, licq, a->qp_context, a->receive_depth, a->initiator_depth,
                                        a->max_receive_sge, a->max_initiator_sge, a->inline_size, nf_cb_create_done, n,
                                        &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_CREATE_QP_WITH_SRQ: {
        typeof(c->args.create_qp_with_srq) *a = &c->args.create_qp_with_srq;
        void *lrcq, *licq, *lsrq;
        if (unwrap(o, a->receive_cq ? &a->receive_cq->Header : NULL, NdkObjectTypeCq, &lrcq, &rcq) ||
            unwrap(o, a->initiator_cq ? &a->initiator_cq->Header : NULL, NdkObjectTypeCq, &licq, &icq) ||
            unwrap(o, a->srq ? &a->srq->Header : NULL, NdkObjectTypeSrq, &lsrq, &srq))
            return STATUS_INVALID_PARAMETER;
        if (!(n = create_begin(c, NdkObjectTypeQp, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        if (rcq)
            nf_obj_add_dep(n, rcq);
        if (icq)
            nf_obj_add_dep(n, icq);
        if (srq)
            nf_obj_add_dep(n, srq);
        NDK_QP *made = NULL;
        st = low->Dispatch->NdkCreateQpWithSrq(low, lrcq, licq, lsrq, a->qp_context, a->initiator_depth,
                                               a->max_initiator_sge, a->inline_size, nf_cb_create_done, n, &made);
        return create_end(c, n, st, made ? &made->Header : NULL, a->out);
    }
    case NDK_FILTER_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN:
        low->Dispatch->NdkGetPrivilegedMemoryRegionToken(low, c->args.get_privileged_token.token);
        return STATUS_SUCCESS;
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

static NTSTATUS next_mr_mw(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj;
    struct nf_req *r;
    switch (c->fn) {
    case NDK_FILTER_FN_REGISTER_MR: {
        typeof(c->args.register_mr) *a = &c->args.register_mr;
        if (!(r = req_new(o, c->fn, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NDK_MR *low = LOWER(o, NDK_MR);
        return req_settle(r, low->Dispatch->NdkRegisterMr(low, a->mdl, a->length, a->flags, nf_cb_request_done, r));
    }
    case NDK_FILTER_FN_DEREGISTER_MR: {
        if (!(r = req_new(o, c->fn, c->args.request.completion, c->args.request.context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NDK_MR *low = LOWER(o, NDK_MR);
        return req_settle(r, low->Dispatch->NdkDeregisterMr(low, nf_cb_request_done, r));
    }
    case NDK_FILTER_FN_INITIALIZE_FAST_REGISTER_MR: {
        typeof(c->args.initialize_fast_register_mr) *a = &c->args.initialize_fast_register_mr;
        if (!(r = req_new(o, c->fn, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NDK_MR *low = LOWER(o, NDK_MR);
        return req_settle(r, low->Dispatch->NdkInitializeFastRegisterMr(low, a->page_count, a->remote_access,
                                                                        nf_cb_request_done, r));
    }
    case NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MR:
        c->args.get_token.token = LOWER(o, NDK_MR)->Dispatch->NdkGetRemoteTokenFromMr(LOWER(o, NDK_MR));
        return STATUS_SUCCESS;
    case NDK_FILTER_FN_GET_LOCAL_TOKEN_FROM_MR:
        c->args.get_token.token = LOWER(o, NDK_MR)->Dispatch->NdkGetLocalTokenFromMr(LOWER(o, NDK_MR));
        return STATUS_SUCCESS;
    case NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MW:
        c->args.get_token.token = LOWER(o, NDK_MW)->Dispatch->NdkGetRemoteTokenFromMw(LOWER(o, NDK_MW));
        return STATUS_SUCCESS;
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

static NTSTATUS next_srq(ndk_filter_call *c)
{
    NDK_SRQ *low = LOWER(c->obj, NDK_SRQ);
    switch (c->fn) {
    case NDK_FILTER_FN_MODIFY_SRQ: {
        typeof(c->args.modify_srq) *a = &c->args.modify_srq;
        struct nf_req *r = req_new(c->obj, c->fn, a->completion, a->context);
        if (!r)
            return STATUS_INSUFFICIENT_RESOURCES;
        return req_settle(r, low->Dispatch->NdkModifySrq(low, a->depth, a->notify_threshold, nf_cb_request_done, r));
    }
    case NDK_FILTER_FN_SRQ_RECEIVE:
        return low->Dispatch->NdkSrqReceive(low, c->args.post.request_context, c->args.post.sgl, c->args.post.sge_count);
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

static NTSTATUS next_qp(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj;
    NDK_QP *low = LOWER(o, NDK_QP);
    typeof(c->args.post) *p = &c->args.post;
    typeof(c->args.rdma) *d = &c->args.rdma;
    void *l1, *l2;
    switch (c->fn) {
    case NDK_FILTER_FN_FLUSH:
        low->Dispatch->NdkFlush(low);
        return STATUS_SUCCESS;
    case NDK_FILTER_FN_SEND:
        return low->Dispatch->NdkSend(low, p->request_context, p->sgl, p->sge_count, p->flags);
    case NDK_FILTER_FN_SEND_AND_INVALIDATE:
        return low->Dispatch->NdkSendAndInvalidate(low, p->request_context, p->sgl, p->sge_count, p->flags,
                                                   p->remote_token);
    case NDK_FILTER_FN_RECEIVE:
        return low->Dispatch->NdkReceive(low, p->request_context, p->sgl, p->sge_count);
    case NDK_FILTER_FN_READ:
        return low->Dispatch->NdkRead(low, d->request_context, d->sgl, d->sge_count, d->remote_address,
                                      d->remote_token, d->flags);
    case NDK_FILTER_FN_WRITE:
        return low->Dispatch->NdkWrite(low, d->request_context, d->sgl, d->sge_count, d->remote_address,
                                       d->remote_token, d->flags);
    case NDK_FILTER_FN_BIND: {
        typeof(c->args.bind) *a = &c->args.bind;
        if (unwrap(o, a->mr ? &a->mr->Header : NULL, NdkObjectTypeMr, &l1, NULL) ||
            unwrap(o, a->mw ? &a->mw->Header : NULL, NdkObjectTypeMw, &l2, NULL))
            return STATUS_INVALID_PARAMETER;
        return low->Dispatch->NdkBind(low, a->request_context, l1, l2, a->address, a->length, a->flags);
    }
    case NDK_FILTER_FN_FAST_REGISTER: {
        typeof(c->args.fast_register) *a = &c->args.fast_register;
        if (unwrap(o, a->mr ? &a->mr->Header : NULL, NdkObjectTypeMr, &l1, NULL))
            return STATUS_INVALID_PARAMETER;
        return low->Dispatch->NdkFastRegister(low, a->request_context, l1, a->page_count, a->pages, a->fbo,
                                              a->length, a->base_address, a->flags);
    }
    case NDK_FILTER_FN_INVALIDATE: {
        typeof(c->args.invalidate) *a = &c->args.invalidate;
        struct ndk_filter_obj *w = nf_obj_check(o->layer, a->mr_or_mw, NdkObjectTypeUndefined);
        if (a->mr_or_mw && (!w || (w->type != NdkObjectTypeMr && w->type != NdkObjectTypeMw) || !w->lower))
            return STATUS_INVALID_PARAMETER;
        return low->Dispatch->NdkInvalidate(low, a->request_context, w ? w->lower : NULL, a->flags);
    }
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

static NTSTATUS get_address(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj;
    PSOCKADDR address = c->args.get_address.address;
    ULONG *length = c->args.get_address.address_length;
    switch (c->fn) {
    case NDK_FILTER_FN_SHARED_ENDPOINT_GET_LOCAL_ADDRESS:
        return LOWER(o, NDK_SHARED_ENDPOINT)->Dispatch->NdkGetLocalAddress(LOWER(o, NDK_SHARED_ENDPOINT), address, length);
    case NDK_FILTER_FN_CONNECTOR_GET_LOCAL_ADDRESS:
        return LOWER(o, NDK_CONNECTOR)->Dispatch->NdkGetLocalAddress(LOWER(o, NDK_CONNECTOR), address, length);
    case NDK_FILTER_FN_GET_PEER_ADDRESS:
        return LOWER(o, NDK_CONNECTOR)->Dispatch->NdkGetPeerAddress(LOWER(o, NDK_CONNECTOR), address, length);
    case NDK_FILTER_FN_LISTENER_GET_LOCAL_ADDRESS:
        return LOWER(o, NDK_LISTENER)->Dispatch->NdkGetLocalAddress(LOWER(o, NDK_LISTENER), address, length);
    default:
        return STATUS_NOT_SUPPORTED;
    }
}

static NTSTATUS next_connector(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj;
    NDK_CONNECTOR *low = LOWER(o, NDK_CONNECTOR);
    struct nf_req *r;
    void *lqp, *lsep;
    switch (c->fn) {
    case NDK_FILTER_FN_CONNECT:
    case NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT: {
        typeof(c->args.connect) *a = &c->args.connect;
        if (unwrap(o, a->qp ? &a->qp->Header : NULL, NdkObjectTypeQp, &lqp, NULL) ||
            unwrap(o, a->shared_endpoint ? &a->shared_endpoint->Header : NULL, NdkObjectTypeSharedEndpoint, &lsep,
                   NULL))
            return STATUS_INVALID_PARAMETER;
        if (!(r = req_new(o, c->fn, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        NTSTATUS st;
        if (c->fn == NDK_FILTER_FN_CONNECT)
            st = low->Dispatch->NdkConnect(low, lqp, a->source, a->source_length, a->destination,
                                           a->destination_length, a->inbound_read_limit, a->outbound_read_limit,
                                           a->private_data, a->private_data_length, nf_cb_request_done, r);
        else
            st = low->Dispatch->NdkConnectWithSharedEndpoint(low, lqp, lsep, a->destination, a->destination_length,
                                                             a->inbound_read_limit, a->outbound_read_limit,
                                                             a->private_data, a->private_data_length,
                                                             nf_cb_request_done, r);
        return req_settle(r, st);
    }
    case NDK_FILTER_FN_COMPLETE_CONNECT:
    case NDK_FILTER_FN_COMPLETE_CONNECT_EX: {
        typeof(c->args.complete_connect) *a = &c->args.complete_connect;
        if (!(r = req_new(o, c->fn, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        o->ev_ctx = a->disconnect_context;
        o->ev_ex = c->fn == NDK_FILTER_FN_COMPLETE_CONNECT_EX;
        NTSTATUS st;
        if (c->fn == NDK_FILTER_FN_COMPLETE_CONNECT) {
            o->ev.disconnect = a->disconnect_event;
            st = low->Dispatch->NdkCompleteConnect(low, a->disconnect_event ? nf_cb_disconnect : NULL, o,
                                                   nf_cb_request_done, r);
        } else {
            o->ev.disconnect_ex = a->disconnect_event_ex;
            st = low->Dispatch->NdkCompleteConnectEx(low, a->disconnect_event_ex ? nf_cb_disconnect_ex : NULL, o,
                                                     nf_cb_request_done, r);
        }
        return req_settle(r, st);
    }
    case NDK_FILTER_FN_ACCEPT:
    case NDK_FILTER_FN_ACCEPT_EX: {
        typeof(c->args.accept) *a = &c->args.accept;
        if (unwrap(o, a->qp ? &a->qp->Header : NULL, NdkObjectTypeQp, &lqp, NULL))
            return STATUS_INVALID_PARAMETER;
        if (!(r = req_new(o, c->fn, a->completion, a->context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        o->ev_ctx = a->disconnect_context;
        o->ev_ex = c->fn == NDK_FILTER_FN_ACCEPT_EX;
        NTSTATUS st;
        if (c->fn == NDK_FILTER_FN_ACCEPT) {
            o->ev.disconnect = a->disconnect_event;
            st = low->Dispatch->NdkAccept(low, lqp, a->inbound_read_limit, a->outbound_read_limit, a->private_data,
                                          a->private_data_length, a->disconnect_event ? nf_cb_disconnect : NULL, o,
                                          nf_cb_request_done, r);
        } else {
            o->ev.disconnect_ex = a->disconnect_event_ex;
            st = low->Dispatch->NdkAcceptEx(low, lqp, a->inbound_read_limit, a->outbound_read_limit, a->private_data,
                                            a->private_data_length, a->disconnect_event_ex ? nf_cb_disconnect_ex : NULL,
                                            o, nf_cb_request_done, r);
        }
        return req_settle(r, st);
    }
    case NDK_FILTER_FN_REJECT:
        return low->Dispatch->NdkReject(low, c->args.reject.private_data, c->args.reject.private_data_length);
    case NDK_FILTER_FN_GET_CONNECTION_DATA: {
        typeof(c->args.get_connection_data) *a = &c->args.get_connection_data;
        return low->Dispatch->NdkGetConnectionData(low, a->inbound_read_limit, a->outbound_read_limit,
                                                   a->private_data, a->private_data_length);
    }
    case NDK_FILTER_FN_DISCONNECT:
        if (!(r = req_new(o, c->fn, c->args.request.completion, c->args.request.context)))
            return STATUS_INSUFFICIENT_RESOURCES;
        return req_settle(r, low->Dispatch->NdkDisconnect(low, nf_cb_request_done, r));
    default:
        return get_address(c);
    }
}

static NTSTATUS next_listener(ndk_filter_call *c)
{
    NDK_LISTENER *low = LOWER(c->obj, NDK_LISTENER);
    switch (c->fn) {
    case NDK_FILTER_FN_LISTEN: {
        typeof(c->args.listen) *a = &c->args.listen;
        struct nf_req *r = req_new(c->obj, c->fn, a->completion, a->context);
        if (!r)
            return STATUS_INSUFFICIENT_RESOURCES;
        return req_settle(r, low->Dispatch->NdkListen(low, a->address, a->address_length, nf_cb_request_done, r));
    }
    case NDK_FILTER_FN_CONTROL_CONNECT_EVENTS:
        low->Dispatch->NdkControlConnectEvents(low, c->args.control_connect_events.pause);
        return STATUS_SUCCESS;
    default:
        return get_address(c);
    }
}

static NTSTATUS next_any(ndk_filter_call *c)
{
    switch (c->fn) {
    case NDK_FILTER_FN_CLOSE_CQ:
    case NDK_FILTER_FN_CLOSE_PD:
    case NDK_FILTER_FN_CLOSE_MR:
    case NDK_FILTER_FN_CLOSE_MW:
    case NDK_FILTER_FN_CLOSE_SRQ:
    case NDK_FILTER_FN_CLOSE_QP:
    case NDK_FILTER_FN_CLOSE_SHARED_ENDPOINT:
    case NDK_FILTER_FN_CLOSE_CONNECTOR:
    case NDK_FILTER_FN_CLOSE_LISTENER:
        return next_close(c);
    case NDK_FILTER_FN_ADAPTER_QUERY_EXTENSION:
    case NDK_FILTER_FN_CQ_QUERY_EXTENSION:
    case NDK_FILTER_FN_PD_QUERY_EXTENSION:
    case NDK_FILTER_FN_MR_QUERY_EXTENSION:
    case NDK_FILTER_FN_MW_QUERY_EXTENSION:
    case NDK_FILTER_FN_SRQ_QUERY_EXTENSION:
    case NDK_FILTER_FN_QP_QUERY_EXTENSION:
    case NDK_FILTER_FN_SHARED_ENDPOINT_QUERY_EXTENSION:
    case NDK_FILTER_FN_CONNECTOR_QUERY_EXTENSION:
    case NDK_FILTER_FN_LISTENER_QUERY_EXTENSION:
        return next_query_extension(c);
    default:
        break;
    }
    switch (c->obj->type) {
    case NdkObjectTypeAdapter: return next_adapter(c);
    case NdkObjectTypeCq: return next_cq(c);
    case NdkObjectTypePd: return next_pd(c);
    case NdkObjectTypeMr:
    case NdkObjectTypeMw: return next_mr_mw(c);
    case NdkObjectTypeSrq: return next_srq(c);
    case NdkObjectTypeQp: return next_qp(c);
    case NdkObjectTypeConnector: return next_connector(c);
    case NdkObjectTypeSharedEndpoint:
    case NdkObjectTypeListener: return next_listener(c);
    default: return STATUS_NOT_SUPPORTED;
    }
}

NTSTATUS ndk_filter_next(ndk_filter_call *call)
{
    if (!call || !call->obj || call->obj->magic != NF_OBJ_MAGIC)
        return STATUS_INVALID_PARAMETER;
    if (call->layer_private_[0] == NF_NEXT_CALLED)
        return call->status;   /* forwarded once already */
    call->layer_private_[0] = NF_NEXT_CALLED;
    if (ndk_filter_fn_object_type(call->fn) != call->obj->type)
        return call->status = STATUS_INVALID_PARAMETER;
    call->status = next_any(call);
    return call->status;
}

int nf_call_forwarded(const ndk_filter_call *call)
{
    return call->layer_private_[0] == NF_NEXT_CALLED;
}
