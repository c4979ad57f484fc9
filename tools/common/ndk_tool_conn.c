/* ndk_tool_conn.c - one connection of a tool: set-up, connect, accept, reject and the
 * graceful close (ndk_tool_conn.h). */
#include "ndk_tool_conn.h"

#include <string.h>

#include "ndk_sync.h"
#include "ndk_tool.h"

/* NDK_FN_DISCONNECT_EVENT_CALLBACK: the peer went away; wake the thread waiting on the CQ. */
static void tool_conn_disconnect_event(PVOID ctx)
{
    ndk_tool_conn *c = ctx;
    ndk_tool_cq_kick(c->cq, true);
}

NTSTATUS ndk_tool_conn_init(ndk_tool_conn *c, ndk_tool_adapter *ad, ULONG rq_depth, ULONG iq_depth, ULONG rsge,
                            ULONG isge, ULONG inline_size, bool poll)
{
    NTSTATUS st;
    memset(c, 0, sizeof *c);
    c->ad = ad;
    st = ndk_sync_create_pd(ad->adapter, &c->pd);
    if (st != STATUS_SUCCESS)
        return st;
    st = ndk_tool_cq_create(ad->adapter, rq_depth + iq_depth, poll, &c->cq);
    if (st != STATUS_SUCCESS)
        return st;
    return ndk_sync_create_qp(c->pd, c->cq->cq, c->cq->cq, c, rq_depth, iq_depth, rsge, isge, inline_size, &c->qp);
}

static void tool_conn_addresses(ndk_tool_conn *c)
{
    ULONG len = sizeof c->local;
    if (c->connector->Dispatch->NdkGetLocalAddress(c->connector, (PSOCKADDR)&c->local, &len) != STATUS_SUCCESS)
        memset(&c->local, 0, sizeof c->local);
    len = sizeof c->peer;
    if (c->connector->Dispatch->NdkGetPeerAddress(c->connector, (PSOCKADDR)&c->peer, &len) != STATUS_SUCCESS)
        memset(&c->peer, 0, sizeof c->peer);
}

NTSTATUS ndk_tool_conn_connect(ndk_tool_conn *c, const SOCKADDR_INET *src, const SOCKADDR_INET *dst, ULONG ird,
                               ULONG ord, const void *pdata, ULONG pdata_len, int timeout_ms)
{
    SOCKADDR_INET s = *src, d = *dst;
    uint8_t data[512];
    NTSTATUS st;

    st = ndk_sync_create_connector(c->ad->adapter, &c->connector);
    if (st != STATUS_SUCCESS)
        return st;
    if (pdata_len > sizeof data)
        return STATUS_INVALID_PARAMETER;
    if (pdata_len)
        memcpy(data, pdata, pdata_len);
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op)
        return STATUS_INSUFFICIENT_RESOURCES;
    st = c->connector->Dispatch->NdkConnect(c->connector, c->qp, (PSOCKADDR)&s, ndk_sync_addr_len(&s), (PSOCKADDR)&d,
                                            ndk_sync_addr_len(&d), ird, ord, pdata_len ? data : NULL, pdata_len,
                                            ndk_sync_op_request_done, op);
    st = ndk_sync_op_wait(op, st, timeout_ms, ndk_tool_stopped, NULL);
    if (st == STATUS_CONNECTION_REFUSED) {
        /* A reject's private data (the peer's reason, if it gave one) stays readable. */
        ULONG len = sizeof c->peer_data;
        NTSTATUS gst = c->connector->Dispatch->NdkGetConnectionData(c->connector, NULL, NULL, c->peer_data, &len);
        c->peer_data_len = gst == STATUS_SUCCESS || gst == STATUS_BUFFER_TOO_SMALL ? len : 0;
        if (c->peer_data_len > sizeof c->peer_data)
            c->peer_data_len = sizeof c->peer_data;
    }
    if (st != STATUS_SUCCESS)
        return st;
    c->peer_data_len = sizeof c->peer_data;
    st = c->connector->Dispatch->NdkGetConnectionData(c->connector, &c->ird, &c->ord, c->peer_data,
                                                      &c->peer_data_len);
    if (st == STATUS_BUFFER_TOO_SMALL)
        c->peer_data_len = sizeof c->peer_data;
    else if (st != STATUS_SUCCESS)
        return st;
    if (c->peer_data_len > sizeof c->peer_data)
        c->peer_data_len = sizeof c->peer_data;
    op = ndk_sync_op_new();
    if (!op)
        return STATUS_INSUFFICIENT_RESOURCES;
    st = c->connector->Dispatch->NdkCompleteConnect(c->connector, tool_conn_disconnect_event, c,
                                                    ndk_sync_op_request_done, op);
    st = ndk_sync_op_wait(op, st, timeout_ms, ndk_tool_stopped, NULL);
    if (st != STATUS_SUCCESS)
        return st;
    c->established = true;
    tool_conn_addresses(c);
    return STATUS_SUCCESS;
}

NTSTATUS ndk_tool_conn_data(NDK_CONNECTOR *conn, ULONG *ird, ULONG *ord, void *buf, ULONG *len)
{
    ULONG cap = *len;
    NTSTATUS st = conn->Dispatch->NdkGetConnectionData(conn, ird, ord, buf, len);
    if (st == STATUS_BUFFER_TOO_SMALL) {
        *len = cap;
        st = STATUS_SUCCESS;
    }
    if (*len > cap)
        *len = cap;
    return st;
}

NTSTATUS ndk_tool_conn_accept(ndk_tool_conn *c, NDK_CONNECTOR *connector, ULONG ird, ULONG ord, const void *pdata,
                              ULONG pdata_len, int timeout_ms)
{
    uint8_t data[512];
    if (pdata_len > sizeof data)
        return STATUS_INVALID_PARAMETER;
    if (pdata_len)
        memcpy(data, pdata, pdata_len);
    c->connector = connector;
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op)
        return STATUS_INSUFFICIENT_RESOURCES;
    NTSTATUS st = connector->Dispatch->NdkAccept(connector, c->qp, ird, ord, pdata_len ? data : NULL, pdata_len,
                                                 tool_conn_disconnect_event, c, ndk_sync_op_request_done, op);
    st = ndk_sync_op_wait(op, st, timeout_ms, ndk_tool_stopped, NULL);
    if (st != STATUS_SUCCESS)
        return st;
    c->established = true;
    tool_conn_addresses(c);
    return STATUS_SUCCESS;
}

void ndk_tool_conn_reject(NDK_CONNECTOR *incoming, const void *pdata, ULONG pdata_len)
{
    incoming->Dispatch->NdkReject(incoming, (PVOID)pdata, pdata_len);
    ndk_sync_close(&incoming->Header, NDK_SYNC_OP_TIMEOUT_MS);
}

void ndk_tool_conn_close(ndk_tool_conn *c)
{
    ndk_sync_op *op;
    if (c->connector && c->established && (op = ndk_sync_op_new()) != NULL) {  /* else close aborts */
        NTSTATUS st = c->connector->Dispatch->NdkDisconnect(c->connector, ndk_sync_op_request_done, op);
        ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, NULL);
    }
    NDK_SYNC_CLOSE(c->connector);
    NDK_SYNC_CLOSE(c->qp);
    ndk_tool_cq_destroy(c->cq);
    NDK_SYNC_CLOSE(c->pd);
    c->connector = NULL;
    c->qp = NULL;
    c->cq = NULL;
    c->pd = NULL;
    c->established = false;
}
