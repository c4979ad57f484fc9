/* ndk_tool_session.c - a tool's connection with its memory, receive slots and teardown order
 * (ndk_tool_session.h). */
#include "ndk_tool_session.h"

#include <string.h>

#include "ndk_sync.h"

#define SESSION_PAGE 4096u

NTSTATUS ndk_tool_session_open(ndk_tool_session *s, ndk_tool_adapter *ad, const ndk_tool_session_cfg *cfg)
{
    memset(&s->conn, 0, sizeof s->conn);
    memset(&s->mem, 0, sizeof s->mem);
    s->nrecv = cfg->nrecv;
    s->rbuf = cfg->rbuf;
    size_t slots = (size_t)cfg->nrecv * cfg->rbuf;
    s->off_area = (slots + SESSION_PAGE - 1) / SESSION_PAGE * SESSION_PAGE;
    ULONG rq = cfg->rq_depth > cfg->nrecv ? cfg->rq_depth : cfg->nrecv;
    NTSTATUS st = ndk_tool_conn_init(&s->conn, ad, rq ? rq : 1, cfg->iq_depth, 1, 1, cfg->inline_size, cfg->poll);
    if (st != STATUS_SUCCESS)
        return st;
    ULONG flags = cfg->mr_flags ? cfg->mr_flags : NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
    return ndk_sync_mem_register(s->conn.pd, NULL, s->off_area + (cfg->area_len ? cfg->area_len : 1), flags, &s->mem);
}

void ndk_tool_session_close(ndk_tool_session *s)
{
    /* The QP holds no reference on the memory: close it first so that nothing is in flight. */
    if (s->conn.connector && s->conn.established) {
        ndk_sync_op *op = ndk_sync_op_new();
        if (op) {                                  /* else the connector's close aborts */
            NTSTATUS st = s->conn.connector->Dispatch->NdkDisconnect(s->conn.connector, ndk_sync_op_request_done, op);
            ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, NULL);
        }
        s->conn.established = false;
    }
    NDK_SYNC_CLOSE(s->conn.connector);
    s->conn.connector = NULL;
    NDK_SYNC_CLOSE(s->conn.qp);
    s->conn.qp = NULL;
    ndk_sync_mem_release(&s->mem);
    ndk_tool_conn_close(&s->conn);
}

NTSTATUS ndk_tool_session_post_recv(ndk_tool_session *s, PVOID ctx, size_t off, ULONG len)
{
    NDK_SGE sge = ndk_sync_mem_sge(&s->mem, off, len);
    return s->conn.qp->Dispatch->NdkReceive(s->conn.qp, ctx, &sge, 1);
}

NTSTATUS ndk_tool_session_post_slot(ndk_tool_session *s, uint32_t k, PVOID ctx)
{
    return ndk_tool_session_post_recv(s, ctx, (size_t)k * s->rbuf, s->rbuf);
}

NTSTATUS ndk_tool_session_send(ndk_tool_session *s, PVOID ctx, size_t off, ULONG len, ULONG flags)
{
    NDK_SGE sge = ndk_sync_mem_sge(&s->mem, off, len);
    return s->conn.qp->Dispatch->NdkSend(s->conn.qp, ctx, &sge, len ? 1 : 0, flags);
}
