/*
 * ndk_tool_session.h - one connection of a tool with everything it owns: the queue pair and its
 * CQ (ndk_tool_conn), one memory registration holding the receive slots and the tool's own
 * area, and the teardown order (disconnect, connector, QP, memory, CQ, PD). ndkping's modes
 * and ndkperf's client and server connections are all sessions.
 *
 * Registration layout: nrecv receive slots of rbuf bytes from offset 0, then the tool's area
 * from a page boundary (off_area).
 *
 * Context: the owner of the session's CQ (ndk_tool_cq.h) posts; open and close block.
 */
#ifndef NDK_TOOL_SESSION_H
#define NDK_TOOL_SESSION_H

#include "ndk_sync_mem.h"
#include "ndk_tool_addr.h"
#include "ndk_tool_conn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ndk_tool_session_cfg {
    ULONG    rq_depth;      /* receive queue depth; at least nrecv is used */
    ULONG    iq_depth;      /* initiator queue depth */
    ULONG    inline_size;
    bool     poll;          /* busy-poll the CQ */
    uint32_t nrecv, rbuf;   /* receive slots */
    size_t   area_len;      /* bytes of the tool's area */
    ULONG    mr_flags;      /* NDK_MR_FLAG_*; 0 means local write only */
} ndk_tool_session_cfg;

typedef struct ndk_tool_session {
    ndk_tool_conn conn;
    ndk_sync_mem  mem;
    uint32_t      nrecv, rbuf;
    size_t        off_area;
    char          where[NDK_TOOL_ADDR_STRLEN];   /* the peer, for messages */
} ndk_tool_session;

/* Creates PD, CQ and QP on ad and registers the slots and the area (zeroed). On failure the
 * caller still calls ndk_tool_session_close. Blocks. */
NTSTATUS ndk_tool_session_open(ndk_tool_session *s, ndk_tool_adapter *ad, const ndk_tool_session_cfg *cfg);
/* Disconnects gracefully when established, then closes the connector, the QP, the memory
 * region, the CQ and the PD, in that order (nothing may be in flight on the memory once its
 * region goes). Safe on a partly opened or already closed session. Blocks. */
void ndk_tool_session_close(ndk_tool_session *s);

static inline uint8_t *ndk_tool_session_slot(const ndk_tool_session *s, uint32_t k)
{
    return s->mem.buf + (size_t)k * s->rbuf;
}
static inline uint8_t *ndk_tool_session_area(const ndk_tool_session *s)
{
    return s->mem.buf + s->off_area;
}
/* Posts receive slot k (all rbuf bytes) with RequestContext ctx. CQ owner. */
NTSTATUS ndk_tool_session_post_slot(ndk_tool_session *s, uint32_t k, PVOID ctx);
/* Posts a receive of len bytes at offset off of the registration. CQ owner. */
NTSTATUS ndk_tool_session_post_recv(ndk_tool_session *s, PVOID ctx, size_t off, ULONG len);
/* Sends len bytes from offset off of the registration (no SGE when len is 0). CQ owner. */
NTSTATUS ndk_tool_session_send(ndk_tool_session *s, PVOID ctx, size_t off, ULONG len, ULONG flags);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_SESSION_H */
