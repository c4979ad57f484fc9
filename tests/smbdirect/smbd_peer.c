/* smbd_peer.c - the scripted MS-SMBD server of the transport tests (see smbd_peer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ndk_sync.h"
#include "ndk_sync_time.h"
#include "ndk_tool.h"
#include "ndk_tool_addr.h"
#include "smbd_peer.h"
#include "smbd_wire.h"
#include "testlib.h"

/* Receive completions seen while waiting for something else. */
static struct { void *ctx; uint32_t len; NTSTATUS st; } peer_stash[PEER_RECVS * 2];
static unsigned peer_nstash;

void peer_start(peer *p)
{
    memset(p, 0, sizeof *p);
    CHECK_STATUS(ndk_tool_rt_open(&p->rt), STATUS_SUCCESS);
    char why[256];
    for (int attempt = 0; attempt < 50; attempt++) {
        uint16_t port = (uint16_t)(20000 + (getpid() * 7 + attempt * 131) % 30000);
        char text[64];
        snprintf(text, sizeof text, "127.0.0.1:%u", port);
        CHECK(ndk_tool_addr_parse(text, 0, &p->addr, why, sizeof why) == 0);
        if (ndk_tool_server_start(p->rt, &p->addr, "iwarp", 0, &p->srv, why, sizeof why) == STATUS_SUCCESS)
            return;
    }
    ndk_test_skip("cannot listen on loopback through the iwarp provider: %s", why);
}

void peer_stop(peer *p)
{
    peer_drop(p);
    ndk_tool_server_stop(p->srv);
    ndk_rt_close(p->rt);
}

bool peer_accept(peer *p)
{
    NDK_CONNECTOR *conn;
    ndk_tool_adapter *ad;
    if (ndk_tool_server_next(p->srv, PEER_TMO, &conn, &ad) != STATUS_SUCCESS)
        return false;
    CHECK_STATUS(ndk_tool_conn_init(&p->conn, ad, PEER_RECVS, 64, 1, 1, 0, false), STATUS_SUCCESS);
    CHECK_STATUS(ndk_sync_mem_register(p->conn.pd, NULL, PEER_RECV_SIZE * PEER_RECVS, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                       &p->rmem), STATUS_SUCCESS);
    CHECK_STATUS(ndk_sync_mem_register(p->conn.pd, NULL, 64 * 1024, 0, &p->smem), STATUS_SUCCESS);
    CHECK_STATUS(ndk_sync_mem_register(p->conn.pd, NULL, 4 << 20, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &p->dmem),
                 STATUS_SUCCESS);
    for (unsigned i = 0; i < PEER_RECVS; i++) {
        NDK_SGE s = ndk_sync_mem_sge(&p->rmem, (size_t)i * PEER_RECV_SIZE, PEER_RECV_SIZE);
        CHECK_STATUS(p->conn.qp->Dispatch->NdkReceive(p->conn.qp, (void *)(uintptr_t)(i + 1), &s, 1), STATUS_SUCCESS);
    }
    peer_nstash = 0;
    p->credits_granted = p->client_granted = p->violations = p->last_credit_violations = 0;
    /* ksmbd offers IRD 0 and ORD 8 (notes §1.6); reads need ORD. */
    return ndk_tool_conn_accept(&p->conn, conn, 0, 8, NULL, 0, PEER_TMO) == STATUS_SUCCESS;
}

/* Waits for the completion with context want (a send: its pointer), stashing receives. */
static bool peer_wait(peer *p, void *want, int timeout_ms, NTSTATUS *status)
{
    uint64_t deadline = ndk_sync_time_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        if (!want && peer_nstash)
            return true;
        NDK_RESULT r[8];
        NTSTATUS st;
        uint64_t now = ndk_sync_time_now_ns();
        if (now >= deadline)
            return false;
        ULONG n = ndk_tool_cq_wait(p->conn.cq, r, 8, (int)((deadline - now) / 1000000u) + 1, &st);
        if (n == 0)
            return false;
        bool got = false;
        for (ULONG i = 0; i < n; i++) {
            if ((uintptr_t)r[i].RequestContext <= PEER_RECVS) {
                if (peer_nstash < sizeof peer_stash / sizeof peer_stash[0])
                    peer_stash[peer_nstash++] = (typeof(peer_stash[0])){ r[i].RequestContext, r[i].BytesTransferred,
                                                                        r[i].Status };
            } else if (r[i].RequestContext == want) {
                got = true;
                if (status)
                    *status = r[i].Status;
            }
        }
        if (got)
            return true;
    }
}

bool peer_recv(peer *p, int timeout_ms)
{
    if (!peer_wait(p, NULL, timeout_ms, NULL))
        return false;
    void *ctx = peer_stash[0].ctx;
    uint32_t len = peer_stash[0].len;
    NTSTATUS st = peer_stash[0].st;
    memmove(peer_stash, peer_stash + 1, --peer_nstash * sizeof peer_stash[0]);
    if (st != STATUS_SUCCESS)
        return false;
    unsigned i = (unsigned)(uintptr_t)ctx - 1;
    memcpy(p->last, p->rmem.buf + (size_t)i * PEER_RECV_SIZE, len);
    p->last_len = len;
    NDK_SGE s = ndk_sync_mem_sge(&p->rmem, (size_t)i * PEER_RECV_SIZE, PEER_RECV_SIZE);
    p->conn.qp->Dispatch->NdkReceive(p->conn.qp, ctx, &s, 1);
    /* The negotiate request (20 bytes, version words 0x0100) uses no credit. */
    bool negreq = len == SMBD_NEGREQ_SIZE && smbd_get16(p->last) == SMBD_VERSION_1 &&
                  smbd_get16(p->last + 2) == SMBD_VERSION_1 && smbd_get16(p->last + 4) == 0;
    if (!negreq && len >= SMBD_DATA_HEADER_SIZE) {
        if (p->credits_granted == 0)
            p->violations++;
        else {
            if (p->credits_granted == 1 && smbd_get16(p->last + SMBD_DATA_CREDITS_GRANTED) == 0)
                p->last_credit_violations++;
            p->credits_granted--;
        }
        p->client_granted += smbd_get16(p->last + SMBD_DATA_CREDITS_GRANTED);
    }
    return true;
}

bool peer_send_raw(peer *p, const void *m, uint32_t len, uint32_t inv)
{
    static int ctx_token;
    memcpy(p->smem.buf, m, len);
    NDK_SGE s = ndk_sync_mem_sge(&p->smem, 0, len);
    NTSTATUS st = inv ? p->conn.qp->Dispatch->NdkSendAndInvalidate(p->conn.qp, &ctx_token, &s, 1, 0, inv)
                      : p->conn.qp->Dispatch->NdkSend(p->conn.qp, &ctx_token, &s, 1, 0);
    if (st != STATUS_SUCCESS)
        return false;
    if (p->client_granted)
        p->client_granted--;
    NTSTATUS done = STATUS_SUCCESS;
    return peer_wait(p, &ctx_token, PEER_TMO, &done) && done == STATUS_SUCCESS;
}

bool peer_send_data(peer *p, uint16_t granted, uint16_t flags, uint32_t remaining, const void *payload,
                    uint32_t len, uint32_t inv)
{
    uint8_t m[PEER_RECV_SIZE];
    CHECK(len + SMBD_DATA_PAYLOAD_OFFSET <= sizeof m);
    memset(m, 0, SMBD_DATA_PAYLOAD_OFFSET);
    smbd_put16(m + SMBD_DATA_CREDITS_REQUESTED, 255);
    smbd_put16(m + SMBD_DATA_CREDITS_GRANTED, granted);
    smbd_put16(m + SMBD_DATA_FLAGS, flags);
    smbd_put32(m + SMBD_DATA_REMAINING, remaining);
    smbd_put32(m + SMBD_DATA_OFFSET, len ? SMBD_DATA_PAYLOAD_OFFSET : 0);
    smbd_put32(m + SMBD_DATA_LENGTH, len);
    if (len)
        memcpy(m + SMBD_DATA_PAYLOAD_OFFSET, payload, len);
    p->credits_granted += granted;
    return peer_send_raw(p, m, len ? SMBD_DATA_PAYLOAD_OFFSET + len : SMBD_DATA_HEADER_SIZE, inv);
}

void peer_negresp(uint8_t out[32], uint16_t granted, uint32_t preferred_send, uint32_t max_recv, uint32_t max_frag)
{
    memset(out, 0, 32);
    smbd_put16(out + SMBD_NEGRESP_MIN_VERSION, SMBD_VERSION_1);
    smbd_put16(out + SMBD_NEGRESP_MAX_VERSION, SMBD_VERSION_1);
    smbd_put16(out + SMBD_NEGRESP_NEGOTIATED, SMBD_VERSION_1);
    smbd_put16(out + SMBD_NEGRESP_CREDITS_REQUESTED, 255);
    smbd_put16(out + SMBD_NEGRESP_CREDITS_GRANTED, granted);
    smbd_put32(out + SMBD_NEGRESP_MAX_READ_WRITE, 8 << 20);
    smbd_put32(out + SMBD_NEGRESP_PREFERRED_SEND, preferred_send);
    smbd_put32(out + SMBD_NEGRESP_MAX_RECEIVE, max_recv);
    smbd_put32(out + SMBD_NEGRESP_MAX_FRAGMENTED, max_frag);
}

bool peer_rdma(peer *p, bool to_client, size_t off, uint64_t raddr, uint32_t token, uint32_t len)
{
    static int ctx_token;
    NDK_SGE s = ndk_sync_mem_sge(&p->dmem, off, len);
    NTSTATUS st = to_client ? p->conn.qp->Dispatch->NdkWrite(p->conn.qp, &ctx_token, &s, 1, raddr, token, 0)
                            : p->conn.qp->Dispatch->NdkRead(p->conn.qp, &ctx_token, &s, 1, raddr, token, 0);
    if (st != STATUS_SUCCESS)
        return false;
    NTSTATUS done = STATUS_SUCCESS;
    return peer_wait(p, &ctx_token, PEER_TMO, &done) && done == STATUS_SUCCESS;
}

void peer_drop(peer *p)
{
    if (!p->conn.qp)
        return;
    if (p->conn.established) {
        /* Bounded: the client may already be gone. */
        ndk_sync_op *op = ndk_sync_op_new();
        CHECK(op != NULL);
        NTSTATUS st = p->conn.connector->Dispatch->NdkDisconnect(p->conn.connector, ndk_sync_op_request_done, op);
        ndk_sync_op_finish(op, st, 2000, NULL);
        p->conn.established = false;
    }
    ndk_sync_close(&p->conn.connector->Header, 2000);
    p->conn.connector = NULL;
    ndk_sync_close(&p->conn.qp->Header, 2000);
    p->conn.qp = NULL;
    ndk_sync_mem_release(&p->rmem);
    ndk_sync_mem_release(&p->smem);
    ndk_sync_mem_release(&p->dmem);
    ndk_tool_conn_close(&p->conn);
    memset(&p->conn, 0, sizeof p->conn);
}
