/*
 * smbd_recv.c - SMB Direct receive side: posting receives, validating data transfer messages
 * (MS-SMBD 3.1.5.8), credit bookkeeping on arrival (3.1.5.9), reassembly by
 * RemainingDataLength (3.1.4.2, 3.1.5.8) and the queue smbd_recv reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "smbd_internal.h"
#include "smbd_wire.h"

int smbd_negotiate_done(smbd_conn *c, const uint8_t *m, size_t len);

static size_t smbd_recv_slot_size(const smbd_conn *c)
{
    return c->p.max_recv_size < SMBD_NEGOTIATE_RECEIVE_SIZE ? SMBD_NEGOTIATE_RECEIVE_SIZE : c->p.max_recv_size;
}

int smbd_recv_post(smbd_conn *c, unsigned index)
{
    size_t sz = smbd_recv_slot_size(c);
    NDK_SGE sge = ndk_sync_mem_sge(&c->recv_mem, sz * index, (ULONG)sz);
    NTSTATUS st = c->qp->Dispatch->NdkReceive(c->qp, &c->recv_slots[index], &sge, 1);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -EIO, st, "NdkReceive: %s", ndk_rt_status_name(st));
    c->recv_posted++;
    return 0;
}

static int smbd_deliver(smbd_conn *c, uint8_t *data, size_t len, uint32_t inv)
{
    smbd_msg *m = malloc(sizeof *m);
    if (!m) {
        free(data);
        return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "out of memory");
    }
    m->next = NULL;
    m->data = data;
    m->len = len;
    m->invalidated = inv;
    if (c->rxq_tail)
        c->rxq_tail->next = m;
    else
        c->rxq_head = m;
    c->rxq_tail = m;
    c->st.msgs_recv++;
    return 0;
}

/* 3.1.5.8 checks and reassembly of one data transfer message of len bytes. */
static int smbd_data_message(smbd_conn *c, const uint8_t *m, size_t len, uint32_t inv)
{
    if (len < SMBD_DATA_HEADER_SIZE)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE, "data message of %zu bytes", len);
    uint16_t creq = smbd_get16(m + SMBD_DATA_CREDITS_REQUESTED);
    uint16_t cgr = smbd_get16(m + SMBD_DATA_CREDITS_GRANTED);
    uint16_t flags = smbd_get16(m + SMBD_DATA_FLAGS);
    uint32_t remaining = smbd_get32(m + SMBD_DATA_REMAINING);
    uint32_t doff = smbd_get32(m + SMBD_DATA_OFFSET);
    uint32_t dlen = smbd_get32(m + SMBD_DATA_LENGTH);
    if (creq == 0)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE, "data message with CreditsRequested 0");
    if (dlen && (doff % 8 || doff < SMBD_DATA_HEADER_SIZE || (uint64_t)doff + dlen > len))
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE,
                         "data message with DataOffset %u, DataLength %u in %zu bytes", doff, dlen, len);
    if ((uint64_t)dlen + remaining > c->neg.max_fragmented_recv)
        return smbd_fail(c, -EMSGSIZE, SMBD_STATUS_BAD_MESSAGE,
                         "message of %llu bytes above our MaxFragmentedSize %u",
                         (unsigned long long)dlen + remaining, c->neg.max_fragmented_recv);
    if (dlen == 0 && remaining != 0)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE,
                         "empty data message with RemainingDataLength %u", remaining);

    /* Credits (3.1.5.9): the peer's target, then its grant, which restarts queued sends. */
    c->peer_target = creq;
    if ((uint32_t)c->send_credits + cgr > 0xFFFF)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE, "peer granted more than 65535 credits");
    c->send_credits += cgr;
    if (flags & SMBD_FLAG_RESPONSE_REQUESTED)
        c->response_requested = true;
    c->keepalive_sent = false;

    if (dlen == 0) {
        c->st.empty_recv++;
        return 0;
    }
    c->st.frags_recv++;
    const uint8_t *payload = m + doff;
    if (inv)
        c->reasm_inv = inv;
    if (!c->reasm) {
        size_t total = (size_t)dlen + remaining;
        uint8_t *buf = malloc(total ? total : 1);
        if (!buf)
            return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "out of memory");
        memcpy(buf, payload, dlen);
        if (remaining == 0) {
            uint32_t tok = c->reasm_inv;
            c->reasm_inv = 0;
            return smbd_deliver(c, buf, total, tok);
        }
        c->reasm = buf;
        c->reasm_total = total;
        c->reasm_len = dlen;
        return 0;
    }
    /* A continuation must account for exactly the bytes still missing. */
    if ((uint64_t)c->reasm_len + dlen + remaining != c->reasm_total)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE,
                         "fragment of %u bytes with %u remaining does not continue a message of %zu (have %zu)",
                         dlen, remaining, c->reasm_total, c->reasm_len);
    memcpy(c->reasm + c->reasm_len, payload, dlen);
    c->reasm_len += dlen;
    if (remaining)
        return 0;
    uint8_t *buf = c->reasm;
    size_t total = c->reasm_total;
    uint32_t tok = c->reasm_inv;
    c->reasm = NULL;
    c->reasm_len = c->reasm_total = 0;
    c->reasm_inv = 0;
    return smbd_deliver(c, buf, total, tok);
}

int smbd_recv_complete(smbd_conn *c, const NDK_RESULT_EX *r)
{
    const smbd_recv_slot *slot = r->RequestContext;
    c->recv_posted--;
    if (c->state == SMBD_ST_FAILED || c->state == SMBD_ST_CLOSED)
        return c->error;
    if (r->Status != STATUS_SUCCESS)
        return smbd_fail(c, -ECONNRESET, r->Status, "receive failed: %s", ndk_rt_status_name(r->Status));
    c->last_recv_ns = ndk_sync_time_now_ns();
    size_t sz = smbd_recv_slot_size(c);
    const uint8_t *m = c->recv_mem.buf + sz * slot->index;
    size_t len = r->BytesTransferred;
    uint32_t inv = 0;
    if (r->Type == NdkOperationTypeReceiveAndInvalidate) {
        inv = (uint32_t)r->TypeSpecificCompletionOutput;
        c->st.remote_invalidations++;
    }
    if (c->state == SMBD_ST_NEGOTIATING)
        return smbd_negotiate_done(c, m, len);
    /* 3.1.5.9: a message uses one of the credits we granted; one beyond them is a peer bug
     * (on iWARP it would normally have been a DDP error already). */
    if (c->granted == 0)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE, "peer sent without a credit");
    c->granted--;
    int rc = smbd_data_message(c, m, len, inv);
    if (rc)
        return rc;
    /* The payload was copied out: the buffer goes straight back (notes §1.7 deadlock hazard). */
    return smbd_recv_post(c, slot->index);
}

void smbd_rxq_free(smbd_conn *c)
{
    while (c->rxq_head) {
        smbd_msg *m = c->rxq_head;
        c->rxq_head = m->next;
        free(m->data);
        free(m);
    }
    c->rxq_tail = NULL;
}

int smbd_recv(smbd_conn *c, uint8_t **msg, size_t *len, uint32_t *invalidated, int timeout_ms)
{
    if (!c || !msg || !len)
        return -EINVAL;
    *msg = NULL;
    *len = 0;
    if (invalidated)
        *invalidated = 0;
    if (timeout_ms < 0)
        timeout_ms = c->p.timeout_ms;
    uint64_t deadline = ndk_sync_time_now_ns() + (uint64_t)timeout_ms * 1000000u;
    while (!c->rxq_head) {
        if (c->error)
            return c->error;
        if (c->state != SMBD_ST_CONNECTED)
            return -ENOTCONN;
        uint64_t now = ndk_sync_time_now_ns();
        if (now >= deadline)
            return -ETIMEDOUT;
        /* The idle timer (3.1.6.2): probe once, then give up if the probe stays unanswered. */
        if (c->p.keepalive_ms > 0 && now - c->last_recv_ns >= (uint64_t)c->p.keepalive_ms * 1000000u) {
            if (c->keepalive_sent && now - c->last_recv_ns >= (uint64_t)c->p.keepalive_ms * 2000000u)
                return smbd_fail(c, -ETIMEDOUT, STATUS_IO_TIMEOUT, "keep-alive unanswered");
            if (!c->keepalive_sent && smbd_send_one(c, NULL, 0, 0, SMBD_FLAG_RESPONSE_REQUESTED, false) == 0)
                c->keepalive_sent = true;
        }
        int slice = (int)((deadline - now) / 1000000u) + 1;
        if (c->p.keepalive_ms > 0 && slice > c->p.keepalive_ms)
            slice = c->p.keepalive_ms;
        int rc = smbd_progress(c, slice);
        if (rc && rc != -ETIMEDOUT)
            return rc;
        if (!c->error)
            smbd_credit_service(c);
    }
    smbd_msg *m = c->rxq_head;
    c->rxq_head = m->next;
    if (!c->rxq_head)
        c->rxq_tail = NULL;
    *msg = m->data;
    *len = m->len;
    if (invalidated)
        *invalidated = m->invalidated;
    free(m);
    if (!c->error)
        smbd_credit_service(c);
    return 0;
}
