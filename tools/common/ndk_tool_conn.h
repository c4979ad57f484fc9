/*
 * ndk_tool_conn.h - one connection of a tool: PD, one CQ and a QP on an adapter, the active
 * side (connect, read the peer's data, complete), the passive side (read a request, accept or
 * reject), and the graceful close. Calling thread; connect and accept block, and give up with
 * STATUS_CANCELLED once ndk_tool_stop is set.
 */
#ifndef NDK_TOOL_CONN_H
#define NDK_TOOL_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <ndkpi.h>

#include "ndk_tool_adapter.h"
#include "ndk_tool_cq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Connection establishment: the provider's own connect timeout plus margin. */
#define NDK_TOOL_CONN_TIMEOUT_MS 20000

typedef struct ndk_tool_conn {
    ndk_tool_adapter *ad;
    NDK_PD           *pd;
    ndk_tool_cq      *cq;             /* one CQ for receives and initiator requests */
    NDK_QP           *qp;
    NDK_CONNECTOR    *connector;
    bool              established;
    ULONG             ird, ord;       /* effective read limits */
    SOCKADDR_INET     local, peer;
    uint8_t           peer_data[512]; /* peer's private data (connect or accept) */
    ULONG             peer_data_len;  /* RDS as the provider reports it */
} ndk_tool_conn;

/* Creates PD, CQ (rq_depth + iq_depth entries) and QP on the adapter. */
NTSTATUS ndk_tool_conn_init(ndk_tool_conn *c, ndk_tool_adapter *ad, ULONG rq_depth, ULONG iq_depth, ULONG rsge,
                            ULONG isge, ULONG inline_size, bool poll);
/* Active side: NdkConnect, NdkGetConnectionData (peer_data), NdkCompleteConnect. When the peer
 * rejects (STATUS_CONNECTION_REFUSED), peer_data holds the reject's private data. */
NTSTATUS ndk_tool_conn_connect(ndk_tool_conn *c, const SOCKADDR_INET *src, const SOCKADDR_INET *dst, ULONG ird,
                               ULONG ord, const void *pdata, ULONG pdata_len, int timeout_ms);
/* Reads an incoming connector's private data and the requested read limits (before accept). */
NTSTATUS ndk_tool_conn_data(NDK_CONNECTOR *conn, ULONG *ird, ULONG *ord, void *buf, ULONG *len);
/* Rejects an incoming connection request (optional private data: the reason, for the peer) and
 * closes the connector. Blocks. */
void ndk_tool_conn_reject(NDK_CONNECTOR *incoming, const void *pdata, ULONG pdata_len);
/* Passive side: takes ownership of connector and accepts it on c's QP. */
NTSTATUS ndk_tool_conn_accept(ndk_tool_conn *c, NDK_CONNECTOR *connector, ULONG ird, ULONG ord, const void *pdata,
                              ULONG pdata_len, int timeout_ms);
/* Graceful disconnect when established, then closes connector, QP, CQ and PD (memory regions
 * of the PD must have been released first). Safe on a partly initialised connection. */
void ndk_tool_conn_close(ndk_tool_conn *c);
static inline bool ndk_tool_conn_disconnected(const ndk_tool_conn *c)
{
    /* Written by the disconnect callback on a provider thread. */
    return c->cq && __atomic_load_n(&c->cq->disconnected, __ATOMIC_ACQUIRE) != 0;
}

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_CONN_H */
