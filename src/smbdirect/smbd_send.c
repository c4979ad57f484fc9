/*
 * smbd_send.c - SMB Direct send side: the send rules and credit manager (MS-SMBD 3.1.5.1,
 * 3.1.5.9), fragmentation (3.1.4.2), send-slot accounting, and the prompt credit/keep-alive
 * replies of 3.1.5.8.
 */
#include <errno.h>
#include <string.h>

#include "smbd_internal.h"
#include "smbd_wire.h"

uint16_t smbd_grant_now(smbd_conn *c)
{
    uint32_t grantable = c->recv_posted - c->granted;
    uint32_t target = c->peer_target < c->recv_count ? c->peer_target : c->recv_count;
    /* 3.1.5.9: a peer with no credit left must always get one. */
    if (target == 0)
        target = 1;
    if (c->granted >= target)
        return 0;
    uint32_t want = target - c->granted;
    uint32_t g = want < grantable ? want : grantable;
    return (uint16_t)(g > 255 ? 255 : g);
}

/* Whether the rules let a message go now: a credit, a slot, and never the last credit on a
 * message that grants nothing (3.1.5.1 step 3, which keeps both sides from deadlocking). */
static bool smbd_can_send(smbd_conn *c)
{
    if (c->send_free == 0 || c->send_credits == 0)
        return false;
    if (c->send_credits == 1 && smbd_grant_now(c) == 0)
        return false;
    return true;
}

int smbd_send_one(smbd_conn *c, const uint8_t *payload, uint32_t len, uint32_t remaining, uint16_t flags,
                  bool allow_wait)
{
    if (c->error)
        return c->error;
    if (!smbd_can_send(c)) {
        if (!allow_wait)
            return -EAGAIN;
        c->st.credit_waits++;
        uint64_t deadline = ndk_sync_time_now_ns() + (uint64_t)c->p.timeout_ms * 1000000u;
        while (!smbd_can_send(c)) {
            uint64_t now = ndk_sync_time_now_ns();
            if (now >= deadline)
                return smbd_fail(c, -ETIMEDOUT, STATUS_IO_TIMEOUT,
                                 c->send_free == 0 ? "sends did not complete within %d ms"
                                                   : "no send credit granted by the peer within %d ms",
                                 c->p.timeout_ms);
            int rc = smbd_progress(c, (int)((deadline - now) / 1000000u) + 1);
            if (rc && rc != -ETIMEDOUT)
                return rc;
            if (c->error)
                return c->error;
        }
    }
    unsigned idx = 0;
    while (c->send_slots[idx].busy)
        idx++;
    smbd_send_slot *slot = &c->send_slots[idx];
    uint8_t *m = c->send_mem.buf + (size_t)c->p.max_send_size * idx;
    uint16_t grant = smbd_grant_now(c);
    smbd_put16(m + SMBD_DATA_CREDITS_REQUESTED, c->p.send_credit_target);
    smbd_put16(m + SMBD_DATA_CREDITS_GRANTED, grant);
    smbd_put16(m + SMBD_DATA_FLAGS, flags);
    smbd_put16(m + SMBD_DATA_RESERVED, 0);
    smbd_put32(m + SMBD_DATA_REMAINING, len ? remaining : 0);
    smbd_put32(m + SMBD_DATA_OFFSET, len ? SMBD_DATA_PAYLOAD_OFFSET : 0);
    smbd_put32(m + SMBD_DATA_LENGTH, len);
    ULONG total = SMBD_DATA_HEADER_SIZE;
    if (len) {
        /* DataOffset 24 with zero padding: ksmbd and Wireshark's heuristic expect it. */
        smbd_put32(m + SMBD_DATA_HEADER_SIZE, 0);
        memcpy(m + SMBD_DATA_PAYLOAD_OFFSET, payload, len);
        total = SMBD_DATA_PAYLOAD_OFFSET + len;
    }
    NDK_SGE sge = ndk_sync_mem_sge(&c->send_mem, (size_t)c->p.max_send_size * idx, total);
    slot->busy = true;
    c->send_free--;
    NTSTATUS st = c->qp->Dispatch->NdkSend(c->qp, slot, &sge, 1, 0);
    if (st != STATUS_SUCCESS) {
        slot->busy = false;
        c->send_free++;
        return smbd_fail(c, -EIO, st, "NdkSend: %s", ndk_rt_status_name(st));
    }
    c->send_credits--;
    c->granted += grant;
    if (len)
        c->st.frags_sent++;
    else
        c->st.empty_sent++;
    if (flags & SMBD_FLAG_RESPONSE_REQUESTED)
        c->keepalive_sent = true;
    return 0;
}

void smbd_send_complete(smbd_conn *c, const NDK_RESULT_EX *r)
{
    smbd_send_slot *slot = r->RequestContext;
    if (slot->busy) {
        slot->busy = false;
        c->send_free++;
    }
    if (r->Status != STATUS_SUCCESS && c->state != SMBD_ST_CLOSED)
        smbd_fail(c, -ECONNRESET, r->Status, "send failed: %s", ndk_rt_status_name(r->Status));
}

int smbd_send(smbd_conn *c, const void *msg, size_t len)
{
    if (!c || (!msg && len))
        return -EINVAL;
    if (c->error)
        return c->error;
    if (c->state != SMBD_ST_CONNECTED)
        return -ENOTCONN;
    if (len == 0)
        return -EINVAL;
    /* 3.1.4.2: refuse locally what the peer could not reassemble. */
    if (len > c->neg.max_fragmented_send)
        return -EMSGSIZE;
    uint32_t seg = c->neg.max_send_size - SMBD_DATA_PAYLOAD_OFFSET;
    const uint8_t *p = msg;
    size_t left = len;
    while (left) {
        uint32_t n = left < seg ? (uint32_t)left : seg;
        left -= n;
        int rc = smbd_send_one(c, p, n, (uint32_t)left, 0, true);
        if (rc)
            return rc;
        p += n;
    }
    c->st.msgs_sent++;
    return 0;
}

void smbd_credit_service(smbd_conn *c)
{
    if (c->state != SMBD_ST_CONNECTED)
        return;
    if (c->response_requested) {
        if (smbd_send_one(c, NULL, 0, 0, 0, false) == 0)
            c->response_requested = false;
        return;
    }
    /* Top the peer up before it runs dry: it may hold a long fragmented reply. */
    uint32_t target = c->peer_target < c->recv_count ? c->peer_target : c->recv_count;
    if (c->granted < target / 2 + 1 && smbd_grant_now(c) > 0)
        smbd_send_one(c, NULL, 0, 0, 0, false);
}
