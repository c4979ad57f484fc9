/* trace_args.c - the arguments of a call that matter for reading a trace: sizes, SGE counts
 * and bytes, tokens, flags, addresses, depths, and what the call gave back (the new object, the
 * token, the number of results). Context: the caller's thread, after the call returned. */
#define _GNU_SOURCE
#include "trace.h"

static void sgl(struct flt_trace_rec *r, const NDK_SGE *sge, ULONG n)
{
    uint64_t bytes = 0;
    for (ULONG i = 0; sge && i < n; i++)
        bytes += sge[i].Length;
    flt_trace_rec_u64(r, "sge", n);
    flt_trace_rec_u64(r, "bytes", bytes);
    if (sge && n) {
        flt_trace_rec_hex(r, "addr", (uint64_t)(uintptr_t)sge[0].VirtualAddress);
        flt_trace_rec_hex(r, "token", sge[0].MemoryRegionToken);
    }
}

static void obj_arg(struct flt_trace_rec *r, const char *key, const ndk_filter_call *call, const void *object)
{
    flt_trace_rec_obj(r, key, ndk_filter_obj_of(call->obj, object));
}

void flt_trace_args(struct flt_trace_rec *r, const ndk_filter_call *c, int after)
{
    const ndk_filter_args *a = &c->args;
    switch (c->fn) {
    case NDK_FILTER_FN_CREATE_CQ:
        flt_trace_rec_u64(r, "depth", a->create_cq.depth);
        break;
    case NDK_FILTER_FN_CREATE_SHARED_ENDPOINT:
        flt_trace_rec_addr(r, "address", a->create_shared_endpoint.address);
        break;
    case NDK_FILTER_FN_CREATE_MR:
        flt_trace_rec_u64(r, "fast_register", a->create_mr.fast_register);
        break;
    case NDK_FILTER_FN_CREATE_SRQ:
        flt_trace_rec_u64(r, "depth", a->create_srq.depth);
        flt_trace_rec_u64(r, "max_sge", a->create_srq.max_sge);
        flt_trace_rec_u64(r, "threshold", a->create_srq.notify_threshold);
        break;
    case NDK_FILTER_FN_CREATE_QP:
        obj_arg(r, "rcq", c, a->create_qp.receive_cq);
        obj_arg(r, "icq", c, a->create_qp.initiator_cq);
        flt_trace_rec_u64(r, "rdepth", a->create_qp.receive_depth);
        flt_trace_rec_u64(r, "idepth", a->create_qp.initiator_depth);
        flt_trace_rec_u64(r, "rsge", a->create_qp.max_receive_sge);
        flt_trace_rec_u64(r, "isge", a->create_qp.max_initiator_sge);
        flt_trace_rec_u64(r, "inline", a->create_qp.inline_size);
        break;
    case NDK_FILTER_FN_CREATE_QP_WITH_SRQ:
        obj_arg(r, "rcq", c, a->create_qp_with_srq.receive_cq);
        obj_arg(r, "icq", c, a->create_qp_with_srq.initiator_cq);
        obj_arg(r, "srq", c, a->create_qp_with_srq.srq);
        flt_trace_rec_u64(r, "idepth", a->create_qp_with_srq.initiator_depth);
        flt_trace_rec_u64(r, "isge", a->create_qp_with_srq.max_initiator_sge);
        flt_trace_rec_u64(r, "inline", a->create_qp_with_srq.inline_size);
        break;
    case NDK_FILTER_FN_RESIZE_CQ:
        flt_trace_rec_u64(r, "depth", a->resize_cq.depth);
        break;
    case NDK_FILTER_FN_ARM_CQ:
        flt_trace_rec_u64(r, "type", a->arm_cq.type);
        break;
    case NDK_FILTER_FN_GET_CQ_RESULTS:
        flt_trace_rec_u64(r, "max", a->get_cq_results.count);
        flt_trace_rec_u64(r, "got", a->get_cq_results.returned);
        break;
    case NDK_FILTER_FN_GET_CQ_RESULTS_EX:
        flt_trace_rec_u64(r, "max", a->get_cq_results_ex.count);
        flt_trace_rec_u64(r, "got", a->get_cq_results_ex.returned);
        break;
    case NDK_FILTER_FN_CONTROL_CQ_INTERRUPT_MODERATION:
        flt_trace_rec_u64(r, "interval", a->control_cq_interrupt_moderation.interval);
        flt_trace_rec_u64(r, "count", a->control_cq_interrupt_moderation.count);
        break;
    case NDK_FILTER_FN_REGISTER_MR:
        flt_trace_rec_u64(r, "length", a->register_mr.length);
        flt_trace_rec_hex(r, "flags", a->register_mr.flags);
        break;
    case NDK_FILTER_FN_INITIALIZE_FAST_REGISTER_MR:
        flt_trace_rec_u64(r, "pages", a->initialize_fast_register_mr.page_count);
        flt_trace_rec_u64(r, "remote", a->initialize_fast_register_mr.remote_access);
        break;
    case NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MR:
    case NDK_FILTER_FN_GET_LOCAL_TOKEN_FROM_MR:
    case NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MW:
        if (after)
            flt_trace_rec_hex(r, "token", a->get_token.token);
        break;
    case NDK_FILTER_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN:
        if (after && a->get_privileged_token.token)
            flt_trace_rec_hex(r, "token", *a->get_privileged_token.token);
        break;
    case NDK_FILTER_FN_MODIFY_SRQ:
        flt_trace_rec_u64(r, "depth", a->modify_srq.depth);
        flt_trace_rec_u64(r, "threshold", a->modify_srq.notify_threshold);
        break;
    case NDK_FILTER_FN_SEND:
    case NDK_FILTER_FN_SEND_AND_INVALIDATE:
    case NDK_FILTER_FN_RECEIVE:
    case NDK_FILTER_FN_SRQ_RECEIVE:
        flt_trace_rec_hex(r, "ctx", (uint64_t)(uintptr_t)a->post.request_context);
        sgl(r, a->post.sgl, a->post.sge_count);
        if (c->fn == NDK_FILTER_FN_SEND || c->fn == NDK_FILTER_FN_SEND_AND_INVALIDATE)
            flt_trace_rec_hex(r, "flags", a->post.flags);
        if (c->fn == NDK_FILTER_FN_SEND_AND_INVALIDATE)
            flt_trace_rec_hex(r, "rtoken", a->post.remote_token);
        break;
    case NDK_FILTER_FN_READ:
    case NDK_FILTER_FN_WRITE:
        flt_trace_rec_hex(r, "ctx", (uint64_t)(uintptr_t)a->rdma.request_context);
        sgl(r, a->rdma.sgl, a->rdma.sge_count);
        flt_trace_rec_hex(r, "raddr", a->rdma.remote_address);
        flt_trace_rec_hex(r, "rtoken", a->rdma.remote_token);
        flt_trace_rec_hex(r, "flags", a->rdma.flags);
        break;
    case NDK_FILTER_FN_BIND:
        flt_trace_rec_hex(r, "ctx", (uint64_t)(uintptr_t)a->bind.request_context);
        obj_arg(r, "mr", c, a->bind.mr);
        obj_arg(r, "mw", c, a->bind.mw);
        flt_trace_rec_hex(r, "addr", (uint64_t)(uintptr_t)a->bind.address);
        flt_trace_rec_u64(r, "length", a->bind.length);
        flt_trace_rec_hex(r, "flags", a->bind.flags);
        break;
    case NDK_FILTER_FN_FAST_REGISTER:
        flt_trace_rec_hex(r, "ctx", (uint64_t)(uintptr_t)a->fast_register.request_context);
        obj_arg(r, "mr", c, a->fast_register.mr);
        flt_trace_rec_u64(r, "pages", a->fast_register.page_count);
        flt_trace_rec_u64(r, "length", a->fast_register.length);
        flt_trace_rec_hex(r, "addr", (uint64_t)(uintptr_t)a->fast_register.base_address);
        flt_trace_rec_hex(r, "flags", a->fast_register.flags);
        break;
    case NDK_FILTER_FN_INVALIDATE:
        flt_trace_rec_hex(r, "ctx", (uint64_t)(uintptr_t)a->invalidate.request_context);
        obj_arg(r, "target", c, a->invalidate.mr_or_mw);
        flt_trace_rec_hex(r, "flags", a->invalidate.flags);
        break;
    case NDK_FILTER_FN_CONNECT:
    case NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT:
        obj_arg(r, "qp", c, a->connect.qp);
        if (a->connect.shared_endpoint)
            obj_arg(r, "sep", c, a->connect.shared_endpoint);
        else
            flt_trace_rec_addr(r, "src", a->connect.source);
        flt_trace_rec_addr(r, "dst", a->connect.destination);
        flt_trace_rec_u64(r, "ird", a->connect.inbound_read_limit);
        flt_trace_rec_u64(r, "ord", a->connect.outbound_read_limit);
        flt_trace_rec_u64(r, "pdata", a->connect.private_data_length);
        break;
    case NDK_FILTER_FN_ACCEPT:
    case NDK_FILTER_FN_ACCEPT_EX:
        obj_arg(r, "qp", c, a->accept.qp);
        flt_trace_rec_u64(r, "ird", a->accept.inbound_read_limit);
        flt_trace_rec_u64(r, "ord", a->accept.outbound_read_limit);
        flt_trace_rec_u64(r, "pdata", a->accept.private_data_length);
        break;
    case NDK_FILTER_FN_REJECT:
        flt_trace_rec_u64(r, "pdata", a->reject.private_data_length);
        break;
    case NDK_FILTER_FN_LISTEN:
        flt_trace_rec_addr(r, "address", a->listen.address);
        break;
    case NDK_FILTER_FN_CONTROL_CONNECT_EVENTS:
        flt_trace_rec_u64(r, "pause", a->control_connect_events.pause);
        break;
    case NDK_FILTER_FN_SHARED_ENDPOINT_GET_LOCAL_ADDRESS:
    case NDK_FILTER_FN_CONNECTOR_GET_LOCAL_ADDRESS:
    case NDK_FILTER_FN_GET_PEER_ADDRESS:
    case NDK_FILTER_FN_LISTENER_GET_LOCAL_ADDRESS:
        if (after && NT_SUCCESS(c->status))
            flt_trace_rec_addr(r, "address", a->get_address.address);
        break;
    case NDK_FILTER_FN_BUILD_LAM:
        flt_trace_rec_u64(r, "length", a->build_lam.length);
        break;
    default:
        break;
    }
    if (after && c->created)
        flt_trace_rec_obj(r, "new", c->created);
}
