/* filter_dispatch.c - the wrappers' dispatch tables: every slot of every NDK table, each
 * packing its arguments into an ndk_filter_call and running the filter's call hook (or
 * forwarding when the filter has none). The consumer may overwrite a wrapper's Dispatch pointer
 * (NDKPI reference §1.5, docs/ndkpi.md); the layer never reads it back. */
#define _GNU_SOURCE
#pragma GCC visibility push(default)
#include <ndk/filter.h>
#pragma GCC visibility pop
#include "filter_internal.h"

#define OBJ(p) ndk_container_of(&(p)->Header, struct ndk_filter_obj, pub.hdr)
#define HOBJ(h) ndk_container_of((h), struct ndk_filter_obj, pub.hdr)
#define CALL(objp, FN) ndk_filter_call c = { .fn = NDK_FILTER_FN_##FN, .obj = (objp) }

/* Context: the consumer's thread; no lock held. Guarded calls (those that may call back before
 * they return) keep the wrapper referenced until the hook returns, so that a filter may look at
 * it after ndk_filter_next() even when the consumer closed it from the callback (§5.2). */
NTSTATUS nf_dispatch(ndk_filter_call *c)
{
    struct ndk_filter_obj *o = c->obj;
    struct nf_layer *l = o->layer;
    int guard = nf_fn_guarded(c->fn);
    if (guard)
        nf_obj_ref(o);
    NTSTATUS st = l->ops->call ? l->ops->call(l->ctx, c) : ndk_filter_next(c);
    if (guard)
        nf_obj_release(o);
    return st;
}

/* ---- every object: close and extension query ---- */

static NTSTATUS w_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx, ndk_filter_fn fn)
{
    ndk_filter_call c = { .fn = fn, .obj = HOBJ(h) };
    c.args.close.completion = cb;
    c.args.close.context = ctx;
    return nf_dispatch(&c);
}

ndk_filter_fn nf_close_fn(NDK_OBJECT_TYPE type)
{
    switch (type) {
    case NdkObjectTypeCq: return NDK_FILTER_FN_CLOSE_CQ;
    case NdkObjectTypePd: return NDK_FILTER_FN_CLOSE_PD;
    case NdkObjectTypeMr: return NDK_FILTER_FN_CLOSE_MR;
    case NdkObjectTypeMw: return NDK_FILTER_FN_CLOSE_MW;
    case NdkObjectTypeSrq: return NDK_FILTER_FN_CLOSE_SRQ;
    case NdkObjectTypeQp: return NDK_FILTER_FN_CLOSE_QP;
    case NdkObjectTypeSharedEndpoint: return NDK_FILTER_FN_CLOSE_SHARED_ENDPOINT;
    case NdkObjectTypeConnector: return NDK_FILTER_FN_CLOSE_CONNECTOR;
    case NdkObjectTypeListener: return NDK_FILTER_FN_CLOSE_LISTENER;
    default: return NDK_FILTER_FN_NONE;
    }
}

static ndk_filter_fn query_extension_fn(NDK_OBJECT_TYPE type)
{
    switch (type) {
    case NdkObjectTypeAdapter: return NDK_FILTER_FN_ADAPTER_QUERY_EXTENSION;
    case NdkObjectTypeCq: return NDK_FILTER_FN_CQ_QUERY_EXTENSION;
    case NdkObjectTypePd: return NDK_FILTER_FN_PD_QUERY_EXTENSION;
    case NdkObjectTypeMr: return NDK_FILTER_FN_MR_QUERY_EXTENSION;
    case NdkObjectTypeMw: return NDK_FILTER_FN_MW_QUERY_EXTENSION;
    case NdkObjectTypeSrq: return NDK_FILTER_FN_SRQ_QUERY_EXTENSION;
    case NdkObjectTypeQp: return NDK_FILTER_FN_QP_QUERY_EXTENSION;
    case NdkObjectTypeSharedEndpoint: return NDK_FILTER_FN_SHARED_ENDPOINT_QUERY_EXTENSION;
    case NdkObjectTypeConnector: return NDK_FILTER_FN_CONNECTOR_QUERY_EXTENSION;
    case NdkObjectTypeListener: return NDK_FILTER_FN_LISTENER_QUERY_EXTENSION;
    default: return NDK_FILTER_FN_NONE;
    }
}

static NTSTATUS w_close_object(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return w_close(h, cb, ctx, nf_close_fn(HOBJ(h)->type));
}

static NTSTATUS w_query_extension(NDK_OBJECT_HEADER *h, GUID *id, NDK_VERSION version, NDK_EXTENSION_INTERFACE *out)
{
    ndk_filter_call c = { .fn = query_extension_fn(HOBJ(h)->type), .obj = HOBJ(h) };
    c.args.query_extension.id = id;
    c.args.query_extension.version = version;
    c.args.query_extension.out = out;
    return nf_dispatch(&c);
}

/* ---- adapter ---- */

static NTSTATUS w_query_adapter_info(NDK_ADAPTER *a, NDK_ADAPTER_INFO *info, ULONG *size)
{
    CALL(OBJ(a), QUERY_ADAPTER_INFO);
    c.args.query_adapter_info.info = info;
    c.args.query_adapter_info.size = size;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_cq(NDK_ADAPTER *a, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notify, PVOID notify_ctx,
                            GROUP_AFFINITY *affinity, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_CQ **out)
{
    CALL(OBJ(a), CREATE_CQ);
    c.args.create_cq.depth = depth;
    c.args.create_cq.notify = notify;
    c.args.create_cq.notify_context = notify_ctx;
    c.args.create_cq.affinity = affinity;
    c.args.create_cq.completion = cb;
    c.args.create_cq.context = ctx;
    c.args.create_cq.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_pd(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_PD **out)
{
    CALL(OBJ(a), CREATE_PD);
    c.args.create_pd.completion = cb;
    c.args.create_pd.context = ctx;
    c.args.create_pd.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_shared_endpoint(NDK_ADAPTER *a, CONST PSOCKADDR address, ULONG length,
                                         NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_SHARED_ENDPOINT **out)
{
    CALL(OBJ(a), CREATE_SHARED_ENDPOINT);
    c.args.create_shared_endpoint.address = address;
    c.args.create_shared_endpoint.address_length = length;
    c.args.create_shared_endpoint.completion = cb;
    c.args.create_shared_endpoint.context = ctx;
    c.args.create_shared_endpoint.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_connector(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_CONNECTOR **out)
{
    CALL(OBJ(a), CREATE_CONNECTOR);
    c.args.create_connector.completion = cb;
    c.args.create_connector.context = ctx;
    c.args.create_connector.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_listener(NDK_ADAPTER *a, NDK_FN_CONNECT_EVENT_CALLBACK ev, PVOID ev_ctx,
                                  NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_LISTENER **out)
{
    CALL(OBJ(a), CREATE_LISTENER);
    c.args.create_listener.connect_event = ev;
    c.args.create_listener.connect_event_context = ev_ctx;
    c.args.create_listener.completion = cb;
    c.args.create_listener.context = ctx;
    c.args.create_listener.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_build_lam(NDK_ADAPTER *a, MDL *mdl, SIZE_T length, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx,
                            NDK_LOGICAL_ADDRESS_MAPPING *lam, ULONG *lam_size, ULONG *fbo)
{
    CALL(OBJ(a), BUILD_LAM);
    c.args.build_lam.mdl = mdl;
    c.args.build_lam.length = length;
    c.args.build_lam.completion = cb;
    c.args.build_lam.context = ctx;
    c.args.build_lam.lam = lam;
    c.args.build_lam.lam_size = lam_size;
    c.args.build_lam.fbo = fbo;
    return nf_dispatch(&c);
}

static VOID w_release_lam(NDK_ADAPTER *a, NDK_LOGICAL_ADDRESS_MAPPING *lam)
{
    CALL(OBJ(a), RELEASE_LAM);
    c.args.release_lam.lam = lam;
    nf_dispatch(&c);
}

/* The adapter RSS extension (ndkrss.h), handed up by NdkQueryExtension in place of the lower one. */
static NDIS_STATUS w_get_rss_processor_info(NDK_ADAPTER *a, PNDIS_RSS_PROCESSOR_INFO info, PSIZE_T size)
{
    CALL(OBJ(a), GET_RSS_PROCESSOR_INFO);
    c.args.get_rss_processor_info.info = info;
    c.args.get_rss_processor_info.size = size;
    return nf_dispatch(&c);
}

const NDK_EXTENSION_ADAPTER_RSS_DISPATCH nf_rss_dispatch = {
    .NdkGetRssProcessorInfo = w_get_rss_processor_info,
};

const NDK_ADAPTER_DISPATCH nf_adapter_dispatch = {
    .NdkQueryExtension = w_query_extension,
    .NdkQueryAdapterInfo = w_query_adapter_info,
    .NdkCreateCq = w_create_cq,
    .NdkCreatePd = w_create_pd,
    .NdkCreateSharedEndpoint = w_create_shared_endpoint,
    .NdkCreateConnector = w_create_connector,
    .NdkCreateListener = w_create_listener,
    .NdkBuildLAM = w_build_lam,
    .NdkReleaseLAM = w_release_lam,
};

/* ---- CQ ---- */

static NTSTATUS w_resize_cq(NDK_CQ *q, ULONG depth, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(q), RESIZE_CQ);
    c.args.resize_cq.depth = depth;
    c.args.resize_cq.completion = cb;
    c.args.resize_cq.context = ctx;
    return nf_dispatch(&c);
}

static VOID w_arm_cq(NDK_CQ *q, ULONG type)
{
    CALL(OBJ(q), ARM_CQ);
    c.args.arm_cq.type = type;
    nf_dispatch(&c);
}

static ULONG w_get_cq_results(NDK_CQ *q, NDK_RESULT results[], ULONG count)
{
    CALL(OBJ(q), GET_CQ_RESULTS);
    c.args.get_cq_results.results = results;
    c.args.get_cq_results.count = count;
    nf_dispatch(&c);
    return c.args.get_cq_results.returned;
}

static NTSTATUS w_control_cq_interrupt_moderation(NDK_CQ *q, ULONG interval, ULONG count)
{
    CALL(OBJ(q), CONTROL_CQ_INTERRUPT_MODERATION);
    c.args.control_cq_interrupt_moderation.interval = interval;
    c.args.control_cq_interrupt_moderation.count = count;
    return nf_dispatch(&c);
}

static ULONG w_get_cq_results_ex(NDK_CQ *q, NDK_RESULT_EX results[], ULONG count)
{
    CALL(OBJ(q), GET_CQ_RESULTS_EX);
    c.args.get_cq_results_ex.results = results;
    c.args.get_cq_results_ex.count = count;
    nf_dispatch(&c);
    return c.args.get_cq_results_ex.returned;
}

static const NDK_CQ_DISPATCH cq_dispatch = {
    .NdkCloseCq = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkResizeCq = w_resize_cq,
    .NdkArmCq = w_arm_cq,
    .NdkGetCqResults = w_get_cq_results,
    .NdkControlCqInterruptModeration = w_control_cq_interrupt_moderation,
    .NdkGetCqResultsEx = w_get_cq_results_ex,
};

/* ---- PD ---- */

static NTSTATUS w_create_mr(NDK_PD *p, BOOLEAN fast_register, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MR **out)
{
    CALL(OBJ(p), CREATE_MR);
    c.args.create_mr.fast_register = fast_register;
    c.args.create_mr.completion = cb;
    c.args.create_mr.context = ctx;
    c.args.create_mr.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_mw(NDK_PD *p, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MW **out)
{
    CALL(OBJ(p), CREATE_MW);
    c.args.create_mw.completion = cb;
    c.args.create_mw.context = ctx;
    c.args.create_mw.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_srq(NDK_PD *p, ULONG depth, ULONG max_sge, ULONG threshold,
                             NDK_FN_SRQ_NOTIFICATION_CALLBACK notify, PVOID notify_ctx, GROUP_AFFINITY *affinity,
                             NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_SRQ **out)
{
    CALL(OBJ(p), CREATE_SRQ);
    c.args.create_srq.depth = depth;
    c.args.create_srq.max_sge = max_sge;
    c.args.create_srq.notify_threshold = threshold;
    c.args.create_srq.notify = notify;
    c.args.create_srq.notify_context = notify_ctx;
    c.args.create_srq.affinity = affinity;
    c.args.create_srq.completion = cb;
    c.args.create_srq.context = ctx;
    c.args.create_srq.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_qp(NDK_PD *p, NDK_CQ *rcq, NDK_CQ *icq, PVOID qp_ctx, ULONG rdepth, ULONG idepth,
                            ULONG rsge, ULONG isge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx,
                            NDK_QP **out)
{
    CALL(OBJ(p), CREATE_QP);
    c.args.create_qp.receive_cq = rcq;
    c.args.create_qp.initiator_cq = icq;
    c.args.create_qp.qp_context = qp_ctx;
    c.args.create_qp.receive_depth = rdepth;
    c.args.create_qp.initiator_depth = idepth;
    c.args.create_qp.max_receive_sge = rsge;
    c.args.create_qp.max_initiator_sge = isge;
    c.args.create_qp.inline_size = inline_size;
    c.args.create_qp.completion = cb;
    c.args.create_qp.context = ctx;
    c.args.create_qp.out = out;
    return nf_dispatch(&c);
}

static NTSTATUS w_create_qp_with_srq(NDK_PD *p, NDK_CQ *rcq, NDK_CQ *icq, NDK_SRQ *srq, PVOID qp_ctx,
                                     ULONG idepth, ULONG isge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb,
                                     PVOID ctx, NDK_QP **out)
{
    CALL(OBJ(p), CREATE_QP_WITH_SRQ);
    c.args.create_qp_with_srq.receive_cq = rcq;
    c.args.create_qp_with_srq.initiator_cq = icq;
    c.args.create_qp_with_srq.srq = srq;
    c.args.create_qp_with_srq.qp_context = qp_ctx;
    c.args.create_qp_with_srq.initiator_depth = idepth;
    c.args.create_qp_with_srq.max_initiator_sge = isge;
    c.args.create_qp_with_srq.inline_size = inline_size;
    c.args.create_qp_with_srq.completion = cb;
    c.args.create_qp_with_srq.context = ctx;
    c.args.create_qp_with_srq.out = out;
    return nf_dispatch(&c);
}

static VOID w_get_privileged_token(NDK_PD *p, UINT32 *token)
{
    CALL(OBJ(p), GET_PRIVILEGED_MEMORY_REGION_TOKEN);
    c.args.get_privileged_token.token = token;
    nf_dispatch(&c);
}

static const NDK_PD_DISPATCH pd_dispatch = {
    .NdkClosePd = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkCreateMr = w_create_mr,
    .NdkCreateMw = w_create_mw,
    .NdkCreateSrq = w_create_srq,
    .NdkCreateQp = w_create_qp,
    .NdkCreateQpWithSrq = w_create_qp_with_srq,
    .NdkGetPrivilegedMemoryRegionToken = w_get_privileged_token,
};

/* ---- MR, MW ---- */

static NTSTATUS w_register_mr(NDK_MR *m, MDL *mdl, SIZE_T length, ULONG flags, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(m), REGISTER_MR);
    c.args.register_mr.mdl = mdl;
    c.args.register_mr.length = length;
    c.args.register_mr.flags = flags;
    c.args.register_mr.completion = cb;
    c.args.register_mr.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_deregister_mr(NDK_MR *m, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(m), DEREGISTER_MR);
    c.args.request.completion = cb;
    c.args.request.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_initialize_fast_register_mr(NDK_MR *m, ULONG pages, BOOLEAN remote, NDK_FN_REQUEST_COMPLETION cb,
                                              PVOID ctx)
{
    CALL(OBJ(m), INITIALIZE_FAST_REGISTER_MR);
    c.args.initialize_fast_register_mr.page_count = pages;
    c.args.initialize_fast_register_mr.remote_access = remote;
    c.args.initialize_fast_register_mr.completion = cb;
    c.args.initialize_fast_register_mr.context = ctx;
    return nf_dispatch(&c);
}

static UINT32 w_get_remote_token_from_mr(NDK_MR *m)
{
    CALL(OBJ(m), GET_REMOTE_TOKEN_FROM_MR);
    nf_dispatch(&c);
    return c.args.get_token.token;
}

static UINT32 w_get_local_token_from_mr(NDK_MR *m)
{
    CALL(OBJ(m), GET_LOCAL_TOKEN_FROM_MR);
    nf_dispatch(&c);
    return c.args.get_token.token;
}

static const NDK_MR_DISPATCH mr_dispatch = {
    .NdkCloseMr = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkRegisterMr = w_register_mr,
    .NdkDeregisterMr = w_deregister_mr,
    .NdkInitializeFastRegisterMr = w_initialize_fast_register_mr,
    .NdkGetRemoteTokenFromMr = w_get_remote_token_from_mr,
    .NdkGetLocalTokenFromMr = w_get_local_token_from_mr,
};

static UINT32 w_get_remote_token_from_mw(NDK_MW *w)
{
    CALL(OBJ(w), GET_REMOTE_TOKEN_FROM_MW);
    nf_dispatch(&c);
    return c.args.get_token.token;
}

static const NDK_MW_DISPATCH mw_dispatch = {
    .NdkCloseMw = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkGetRemoteTokenFromMw = w_get_remote_token_from_mw,
};

/* ---- SRQ ---- */

static NTSTATUS w_modify_srq(NDK_SRQ *s, ULONG depth, ULONG threshold, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(s), MODIFY_SRQ);
    c.args.modify_srq.depth = depth;
    c.args.modify_srq.notify_threshold = threshold;
    c.args.modify_srq.completion = cb;
    c.args.modify_srq.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_srq_receive(NDK_SRQ *s, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge)
{
    CALL(OBJ(s), SRQ_RECEIVE);
    c.args.post.request_context = rctx;
    c.args.post.sgl = sgl;
    c.args.post.sge_count = nsge;
    return nf_dispatch(&c);
}

static const NDK_SRQ_DISPATCH srq_dispatch = {
    .NdkCloseSrq = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkModifySrq = w_modify_srq,
    .NdkSrqReceive = w_srq_receive,
};

/* ---- QP ---- */

static VOID w_flush(NDK_QP *q)
{
    CALL(OBJ(q), FLUSH);
    nf_dispatch(&c);
}

static NTSTATUS w_send(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, ULONG flags)
{
    CALL(OBJ(q), SEND);
    c.args.post.request_context = rctx;
    c.args.post.sgl = sgl;
    c.args.post.sge_count = nsge;
    c.args.post.flags = flags;
    return nf_dispatch(&c);
}

static NTSTATUS w_send_and_invalidate(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, ULONG flags, UINT32 token)
{
    CALL(OBJ(q), SEND_AND_INVALIDATE);
    c.args.post.request_context = rctx;
    c.args.post.sgl = sgl;
    c.args.post.sge_count = nsge;
    c.args.post.flags = flags;
    c.args.post.remote_token = token;
    return nf_dispatch(&c);
}

static NTSTATUS w_receive(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge)
{
    CALL(OBJ(q), RECEIVE);
    c.args.post.request_context = rctx;
    c.args.post.sgl = sgl;
    c.args.post.sge_count = nsge;
    return nf_dispatch(&c);
}

static NTSTATUS w_bind(NDK_QP *q, PVOID rctx, NDK_MR *mr, NDK_MW *mw, PVOID va, SIZE_T length, ULONG flags)
{
    CALL(OBJ(q), BIND);
    c.args.bind.request_context = rctx;
    c.args.bind.mr = mr;
    c.args.bind.mw = mw;
    c.args.bind.address = va;
    c.args.bind.length = length;
    c.args.bind.flags = flags;
    return nf_dispatch(&c);
}

static NTSTATUS w_fast_register(NDK_QP *q, PVOID rctx, NDK_MR *mr, ULONG pages, CONST NDK_LOGICAL_ADDRESS *array,
                                ULONG fbo, SIZE_T length, PVOID base, ULONG flags)
{
    CALL(OBJ(q), FAST_REGISTER);
    c.args.fast_register.request_context = rctx;
    c.args.fast_register.mr = mr;
    c.args.fast_register.page_count = pages;
    c.args.fast_register.pages = array;
    c.args.fast_register.fbo = fbo;
    c.args.fast_register.length = length;
    c.args.fast_register.base_address = base;
    c.args.fast_register.flags = flags;
    return nf_dispatch(&c);
}

static NTSTATUS w_invalidate(NDK_QP *q, PVOID rctx, NDK_OBJECT_HEADER *target, ULONG flags)
{
    CALL(OBJ(q), INVALIDATE);
    c.args.invalidate.request_context = rctx;
    c.args.invalidate.mr_or_mw = target;
    c.args.invalidate.flags = flags;
    return nf_dispatch(&c);
}

static NTSTATUS w_rdma(NDK_QP *q, ndk_filter_fn fn, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 address,
                       UINT32 token, ULONG flags)
{
    ndk_filter_call c = { .fn = fn, .obj = OBJ(q) };
    c.args.rdma.request_context = rctx;
    c.args.rdma.sgl = sgl;
    c.args.rdma.sge_count = nsge;
    c.args.rdma.remote_address = address;
    c.args.rdma.remote_token = token;
    c.args.rdma.flags = flags;
    return nf_dispatch(&c);
}

static NTSTATUS w_read(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 address, UINT32 token, ULONG flags)
{
    return w_rdma(q, NDK_FILTER_FN_READ, rctx, sgl, nsge, address, token, flags);
}

static NTSTATUS w_write(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 address, UINT32 token, ULONG flags)
{
    return w_rdma(q, NDK_FILTER_FN_WRITE, rctx, sgl, nsge, address, token, flags);
}

static const NDK_QP_DISPATCH qp_dispatch = {
    .NdkCloseQp = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkFlush = w_flush,
    .NdkSend = w_send,
    .NdkReceive = w_receive,
    .NdkBind = w_bind,
    .NdkFastRegister = w_fast_register,
    .NdkInvalidate = w_invalidate,
    .NdkRead = w_read,
    .NdkWrite = w_write,
    .NdkSendAndInvalidate = w_send_and_invalidate,
};

/* ---- shared endpoint ---- */

static NTSTATUS w_get_address(NDK_OBJECT_HEADER *h, ndk_filter_fn fn, PSOCKADDR address, ULONG *length)
{
    ndk_filter_call c = { .fn = fn, .obj = HOBJ(h) };
    c.args.get_address.address = address;
    c.args.get_address.address_length = length;
    return nf_dispatch(&c);
}

static NTSTATUS w_sep_get_local_address(NDK_SHARED_ENDPOINT *s, PSOCKADDR address, ULONG *length)
{
    return w_get_address(&s->Header, NDK_FILTER_FN_SHARED_ENDPOINT_GET_LOCAL_ADDRESS, address, length);
}

static const NDK_SHARED_ENDPOINT_DISPATCH sep_dispatch = {
    .NdkCloseSharedEndpoint = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkGetLocalAddress = w_sep_get_local_address,
};

/* ---- connector ---- */

static NTSTATUS w_connect(NDK_CONNECTOR *k, NDK_QP *qp, CONST PSOCKADDR src, ULONG src_len, CONST PSOCKADDR dst,
                          ULONG dst_len, ULONG ird, ULONG ord, CONST PVOID pdata, ULONG pdata_len,
                          NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(k), CONNECT);
    c.args.connect.qp = qp;
    c.args.connect.source = src;
    c.args.connect.source_length = src_len;
    c.args.connect.destination = dst;
    c.args.connect.destination_length = dst_len;
    c.args.connect.inbound_read_limit = ird;
    c.args.connect.outbound_read_limit = ord;
    c.args.connect.private_data = pdata;
    c.args.connect.private_data_length = pdata_len;
    c.args.connect.completion = cb;
    c.args.connect.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_connect_with_shared_endpoint(NDK_CONNECTOR *k, NDK_QP *qp, NDK_SHARED_ENDPOINT *sep,
                                               CONST PSOCKADDR dst, ULONG dst_len, ULONG ird, ULONG ord,
                                               CONST PVOID pdata, ULONG pdata_len, NDK_FN_REQUEST_COMPLETION cb,
                                               PVOID ctx)
{
    CALL(OBJ(k), CONNECT_WITH_SHARED_ENDPOINT);
    c.args.connect.qp = qp;
    c.args.connect.shared_endpoint = sep;
    c.args.connect.destination = dst;
    c.args.connect.destination_length = dst_len;
    c.args.connect.inbound_read_limit = ird;
    c.args.connect.outbound_read_limit = ord;
    c.args.connect.private_data = pdata;
    c.args.connect.private_data_length = pdata_len;
    c.args.connect.completion = cb;
    c.args.connect.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_complete_connect(NDK_CONNECTOR *k, NDK_FN_DISCONNECT_EVENT_CALLBACK ev, PVOID ev_ctx,
                                   NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(k), COMPLETE_CONNECT);
    c.args.complete_connect.disconnect_event = ev;
    c.args.complete_connect.disconnect_context = ev_ctx;
    c.args.complete_connect.completion = cb;
    c.args.complete_connect.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_complete_connect_ex(NDK_CONNECTOR *k, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev, PVOID ev_ctx,
                                      NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(k), COMPLETE_CONNECT_EX);
    c.args.complete_connect.disconnect_event_ex = ev;
    c.args.complete_connect.disconnect_context = ev_ctx;
    c.args.complete_connect.completion = cb;
    c.args.complete_connect.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_accept(NDK_CONNECTOR *k, NDK_QP *qp, ULONG ird, ULONG ord, CONST PVOID pdata, ULONG pdata_len,
                         NDK_FN_DISCONNECT_EVENT_CALLBACK ev, PVOID ev_ctx, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(k), ACCEPT);
    c.args.accept.qp = qp;
    c.args.accept.inbound_read_limit = ird;
    c.args.accept.outbound_read_limit = ord;
    c.args.accept.private_data = pdata;
    c.args.accept.private_data_length = pdata_len;
    c.args.accept.disconnect_event = ev;
    c.args.accept.disconnect_context = ev_ctx;
    c.args.accept.completion = cb;
    c.args.accept.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_accept_ex(NDK_CONNECTOR *k, NDK_QP *qp, ULONG ird, ULONG ord, CONST PVOID pdata, ULONG pdata_len,
                            NDK_FN_DISCONNECT_EVENT_CALLBACK_EX ev, PVOID ev_ctx, NDK_FN_REQUEST_COMPLETION cb,
                            PVOID ctx)
{
    CALL(OBJ(k), ACCEPT_EX);
    c.args.accept.qp = qp;
    c.args.accept.inbound_read_limit = ird;
    c.args.accept.outbound_read_limit = ord;
    c.args.accept.private_data = pdata;
    c.args.accept.private_data_length = pdata_len;
    c.args.accept.disconnect_event_ex = ev;
    c.args.accept.disconnect_context = ev_ctx;
    c.args.accept.completion = cb;
    c.args.accept.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_reject(NDK_CONNECTOR *k, CONST PVOID pdata, ULONG pdata_len)
{
    CALL(OBJ(k), REJECT);
    c.args.reject.private_data = pdata;
    c.args.reject.private_data_length = pdata_len;
    return nf_dispatch(&c);
}

static NTSTATUS w_get_connection_data(NDK_CONNECTOR *k, ULONG *ird, ULONG *ord, PVOID pdata, ULONG *pdata_len)
{
    CALL(OBJ(k), GET_CONNECTION_DATA);
    c.args.get_connection_data.inbound_read_limit = ird;
    c.args.get_connection_data.outbound_read_limit = ord;
    c.args.get_connection_data.private_data = pdata;
    c.args.get_connection_data.private_data_length = pdata_len;
    return nf_dispatch(&c);
}

static NTSTATUS w_connector_get_local_address(NDK_CONNECTOR *k, PSOCKADDR address, ULONG *length)
{
    return w_get_address(&k->Header, NDK_FILTER_FN_CONNECTOR_GET_LOCAL_ADDRESS, address, length);
}

static NTSTATUS w_get_peer_address(NDK_CONNECTOR *k, PSOCKADDR address, ULONG *length)
{
    return w_get_address(&k->Header, NDK_FILTER_FN_GET_PEER_ADDRESS, address, length);
}

static NTSTATUS w_disconnect(NDK_CONNECTOR *k, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(k), DISCONNECT);
    c.args.request.completion = cb;
    c.args.request.context = ctx;
    return nf_dispatch(&c);
}

static const NDK_CONNECTOR_DISPATCH connector_dispatch = {
    .NdkCloseConnector = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkConnect = w_connect,
    .NdkConnectWithSharedEndpoint = w_connect_with_shared_endpoint,
    .NdkCompleteConnect = w_complete_connect,
    .NdkAccept = w_accept,
    .NdkReject = w_reject,
    .NdkGetConnectionData = w_get_connection_data,
    .NdkGetLocalAddress = w_connector_get_local_address,
    .NdkGetPeerAddress = w_get_peer_address,
    .NdkDisconnect = w_disconnect,
    .NdkCompleteConnectEx = w_complete_connect_ex,
    .NdkAcceptEx = w_accept_ex,
};

/* ---- listener ---- */

static NTSTATUS w_listen(NDK_LISTENER *l, CONST PSOCKADDR address, ULONG length, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    CALL(OBJ(l), LISTEN);
    c.args.listen.address = address;
    c.args.listen.address_length = length;
    c.args.listen.completion = cb;
    c.args.listen.context = ctx;
    return nf_dispatch(&c);
}

static NTSTATUS w_listener_get_local_address(NDK_LISTENER *l, PSOCKADDR address, ULONG *length)
{
    return w_get_address(&l->Header, NDK_FILTER_FN_LISTENER_GET_LOCAL_ADDRESS, address, length);
}

static VOID w_control_connect_events(NDK_LISTENER *l, BOOLEAN pause)
{
    CALL(OBJ(l), CONTROL_CONNECT_EVENTS);
    c.args.control_connect_events.pause = pause;
    nf_dispatch(&c);
}

static const NDK_LISTENER_DISPATCH listener_dispatch = {
    .NdkCloseListener = w_close_object,
    .NdkQueryExtension = w_query_extension,
    .NdkListen = w_listen,
    .NdkGetLocalAddress = w_listener_get_local_address,
    .NdkControlConnectEvents = w_control_connect_events,
};

const void *nf_dispatch_table(NDK_OBJECT_TYPE type)
{
    switch (type) {
    case NdkObjectTypeAdapter: return &nf_adapter_dispatch;
    case NdkObjectTypeCq: return &cq_dispatch;
    case NdkObjectTypePd: return &pd_dispatch;
    case NdkObjectTypeMr: return &mr_dispatch;
    case NdkObjectTypeMw: return &mw_dispatch;
    case NdkObjectTypeSrq: return &srq_dispatch;
    case NdkObjectTypeQp: return &qp_dispatch;
    case NdkObjectTypeSharedEndpoint: return &sep_dispatch;
    case NdkObjectTypeConnector: return &connector_dispatch;
    case NdkObjectTypeListener: return &listener_dispatch;
    default: return NULL;
    }
}
