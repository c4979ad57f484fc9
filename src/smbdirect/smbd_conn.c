/*
 * smbd_conn.c - SMB Direct connection lifecycle: resources, connect, negotiation (MS-SMBD
 * 3.1.4.1, 3.1.5.2, 3.1.5.7), the CQ progress loop and bounded teardown (3.1.7.1).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smbd_internal.h"
#include "smbd_wire.h"

/* Teardown never waits longer than this per step for a peer that does not answer. */
#define SMBD_TEARDOWN_MS 1500

static const char *const smbd_state_names[] = { "INIT", "CONNECTING", "NEGOTIATING", "CONNECTED", "FAILED",
                                                "CLOSED" };

void smbd_params_default(smbd_params *p)
{
    memset(p, 0, sizeof *p);
    p->send_credit_target = 255;
    p->recv_credit_max = 255;
    p->max_send_size = 1364;
    p->max_recv_size = 1364;
    p->max_fragmented_size = 1024 * 1024;
    p->max_read_write_size = 8 * 1024 * 1024;
    p->ird = 8;
    p->ord = 1;
    p->send_slots = 64;
    p->mr_count = 32;
    p->timeout_ms = 30000;
    p->keepalive_ms = 0;
}

/* The transition table of 3.1.1.1 as this client walks it; anything else is a bug. */
static bool smbd_transition_ok(smbd_state from, smbd_state to)
{
    switch (to) {
    case SMBD_ST_CONNECTING: return from == SMBD_ST_INIT;
    case SMBD_ST_NEGOTIATING: return from == SMBD_ST_CONNECTING;
    case SMBD_ST_CONNECTED: return from == SMBD_ST_NEGOTIATING;
    case SMBD_ST_FAILED: return from != SMBD_ST_CLOSED && from != SMBD_ST_FAILED;
    case SMBD_ST_CLOSED: return true;
    default: return false;
    }
}

void smbd_set_state(smbd_conn *c, smbd_state to)
{
    if (!smbd_transition_ok(c->state, to)) {
        fprintf(stderr, "smbd: rejected state transition %s -> %s\n", smbd_state_names[c->state],
                smbd_state_names[to]);
        return;
    }
    c->state = to;
}

int smbd_fail(smbd_conn *c, int err, NTSTATUS st, const char *fmt, ...)
{
    if (c->error)
        return c->error;
    c->error = err;
    c->last_status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error_text, sizeof c->error_text, fmt, ap);
    va_end(ap);
    smbd_set_state(c, SMBD_ST_FAILED);
    return err;
}

int smbd_error(const smbd_conn *c) { return c->error; }
NTSTATUS smbd_last_status(const smbd_conn *c) { return c->last_status; }
const char *smbd_error_text(const smbd_conn *c) { return c->error ? c->error_text : ""; }
const smbd_negotiated *smbd_negotiated_info(const smbd_conn *c) { return &c->neg; }
bool smbd_remote_invalidate_ok(const smbd_conn *c) { return !c->p.no_invalidate; }

void smbd_get_stats(const smbd_conn *c, smbd_stats *out)
{
    *out = c->st;
    out->send_credits = c->send_credits;
    out->recv_posted = c->recv_posted;
}

/* NDK_FN_CQ_NOTIFICATION_CALLBACK, provider thread: wake the waiting thread. Takes c->lock. */
static void smbd_cq_notify(PVOID ctx, NTSTATUS status)
{
    smbd_conn *c = ctx;
    pthread_mutex_lock(&c->lock);
    if (status != STATUS_SUCCESS && c->cq_error == STATUS_SUCCESS)
        c->cq_error = status;
    c->events++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* NDK_FN_DISCONNECT_EVENT_CALLBACK, provider thread: the peer went away. Takes c->lock. */
static void smbd_disconnect_event(PVOID ctx)
{
    smbd_conn *c = ctx;
    pthread_mutex_lock(&c->lock);
    __atomic_store_n(&c->disconnected, 1, __ATOMIC_RELEASE);
    c->events++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void smbd_dispatch(smbd_conn *c, const NDK_RESULT_EX *r)
{
    smbd_wr_kind kind = *(const smbd_wr_kind *)r->RequestContext;
    switch (kind) {
    case SMBD_WR_RECV: smbd_recv_complete(c, r); break;
    case SMBD_WR_SEND: smbd_send_complete(c, r); break;
    case SMBD_WR_REG:
    case SMBD_WR_INV: smbd_mr_complete(c, r); break;
    }
}

static ULONG smbd_poll(smbd_conn *c)
{
    NDK_RESULT_EX r[32];
    ULONG n = c->cq->Dispatch->NdkGetCqResultsEx(c->cq, r, 32);
    for (ULONG i = 0; i < n; i++)
        smbd_dispatch(c, &r[i]);
    return n;
}

int smbd_progress(smbd_conn *c, int timeout_ms)
{
    uint64_t deadline = ndk_sync_time_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u;
    for (;;) {
        if (smbd_poll(c))
            return 0;
        pthread_mutex_lock(&c->lock);
        uint64_t seen = c->events;
        NTSTATUS cqe = c->cq_error;
        pthread_mutex_unlock(&c->lock);
        if (cqe != STATUS_SUCCESS)
            return smbd_fail(c, -EIO, cqe, "completion queue failed: %s", ndk_rt_status_name(cqe));
        /* Arm, then look again: a completion racing with the arm is either seen here or
         * notifies (NDKPI §5.7). */
        c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
        if (smbd_poll(c))
            return 0;
        if (__atomic_load_n(&c->disconnected, __ATOMIC_ACQUIRE))
            return smbd_fail(c, -ECONNRESET, STATUS_CONNECTION_DISCONNECTED, "the peer disconnected");
        if (c->error)
            return c->error;
        pthread_mutex_lock(&c->lock);
        bool woke = false;
        while (!(woke = c->events != seen)) {
            uint64_t now = ndk_sync_time_now_ns();
            if (now >= deadline)
                break;
            uint64_t until = now + 100000000u < deadline ? now + 100000000u : deadline;
            struct timespec ts = { (time_t)(until / 1000000000u), (long)(until % 1000000000u) };
            if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT && c->events == seen)
                break;                /* look at the CQ once per slice even without a notification */
        }
        pthread_mutex_unlock(&c->lock);
        if (!woke) {
            if (smbd_poll(c)) {
                /* A completion was there although no notification came for the arm. */
                c->st.missed_notifications++;
                return 0;
            }
            if (ndk_sync_time_now_ns() >= deadline)
                return -ETIMEDOUT;
        }
    }
}

static int smbd_resources(smbd_conn *c, NDK_ADAPTER *adapter)
{
    NTSTATUS st;
    c->ad.adapter = adapter;
    ULONG sz = sizeof c->ad.info;
    st = adapter->Dispatch->NdkQueryAdapterInfo(adapter, &c->ad.info, &sz);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -EIO, st, "NdkQueryAdapterInfo: %s", ndk_rt_status_name(st));
    const NDK_ADAPTER_INFO *info = &c->ad.info;

    c->recv_count = c->p.recv_credit_max;
    if (c->recv_count + 1 > info->MaxReceiveQueueDepth)
        c->recv_count = info->MaxReceiveQueueDepth - 1;
    ULONG iq = c->p.send_slots + 2 * c->p.mr_count * SMBD_MAX_DESCS / 4 + 8;
    if (iq > info->MaxInitiatorQueueDepth)
        iq = info->MaxInitiatorQueueDepth;
    if (c->p.send_slots + 4 > iq)
        c->p.send_slots = iq - 4;
    ULONG cqd = c->recv_count + iq + 8;
    if (cqd > info->MaxCqDepth)
        cqd = info->MaxCqDepth;

    st = ndk_sync_create_pd(adapter, &c->pd);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -EIO, st, "NdkCreatePd: %s", ndk_rt_status_name(st));
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op)
        return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "NdkCreateCq: out of memory");
    NDK_CQ *cq = NULL;
    st = adapter->Dispatch->NdkCreateCq(adapter, cqd, smbd_cq_notify, c, NULL, ndk_sync_op_create_done, op, &cq);
    NDK_OBJECT_HEADER *obj = NULL;
    st = ndk_sync_op_finish(op, st, NDK_SYNC_OP_TIMEOUT_MS, &obj);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -EIO, st, "NdkCreateCq: %s", ndk_rt_status_name(st));
    c->cq = obj ? (NDK_CQ *)obj : cq;
    st = ndk_sync_create_qp(c->pd, c->cq, c->cq, c, c->recv_count + 1, iq, 1, 1, 0, &c->qp);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -EIO, st, "NdkCreateQp: %s", ndk_rt_status_name(st));

    c->recv_slots = calloc(c->recv_count, sizeof *c->recv_slots);
    c->send_slots = calloc(c->p.send_slots, sizeof *c->send_slots);
    if (!c->recv_slots || !c->send_slots)
        return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "out of memory");
    size_t rsz = c->p.max_recv_size < SMBD_NEGOTIATE_RECEIVE_SIZE ? SMBD_NEGOTIATE_RECEIVE_SIZE : c->p.max_recv_size;
    st = ndk_sync_mem_register(c->pd, NULL, rsz * c->recv_count, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &c->recv_mem);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -EIO, st, "receive buffers: %s", ndk_rt_status_name(st));
    st = ndk_sync_mem_register(c->pd, NULL, (size_t)c->p.max_send_size * c->p.send_slots, 0, &c->send_mem);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -EIO, st, "send buffers: %s", ndk_rt_status_name(st));
    for (unsigned i = 0; i < c->recv_count; i++)
        c->recv_slots[i] = (smbd_recv_slot){ SMBD_WR_RECV, i };
    for (unsigned i = 0; i < c->p.send_slots; i++)
        c->send_slots[i] = (smbd_send_slot){ SMBD_WR_SEND, i, false };
    c->send_free = c->p.send_slots;
    return smbd_mr_pool_init(c);
}

static int smbd_check_params(const smbd_params *p)
{
    if (p->max_send_size < SMBD_DATA_PAYLOAD_OFFSET + 1 || p->max_recv_size < SMBD_MIN_RECEIVE_SIZE ||
        p->max_fragmented_size < SMBD_MIN_FRAGMENTED_SIZE || p->send_credit_target == 0 || p->recv_credit_max < 2 ||
        p->send_slots < 2 || p->timeout_ms <= 0)
        return -EINVAL;
    return 0;
}

/* 3.1.5.7: the client's checks of the Negotiate Response, then the settled values. */
static int smbd_negotiate_response(smbd_conn *c, const uint8_t *m, size_t len)
{
    if (len < SMBD_NEGRESP_SIZE)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE, "negotiate response of %zu bytes", len);
    uint32_t status = smbd_get32(m + SMBD_NEGRESP_STATUS);
    if (status != 0)
        return smbd_fail(c, -EPROTO, (NTSTATUS)status, "negotiate refused with status 0x%08x", status);
    uint16_t ver = smbd_get16(m + SMBD_NEGRESP_NEGOTIATED);
    uint16_t creq = smbd_get16(m + SMBD_NEGRESP_CREDITS_REQUESTED);
    uint16_t cgr = smbd_get16(m + SMBD_NEGRESP_CREDITS_GRANTED);
    uint32_t pref = smbd_get32(m + SMBD_NEGRESP_PREFERRED_SEND);
    uint32_t mrecv = smbd_get32(m + SMBD_NEGRESP_MAX_RECEIVE);
    uint32_t mfrag = smbd_get32(m + SMBD_NEGRESP_MAX_FRAGMENTED);
    uint32_t mrw = smbd_get32(m + SMBD_NEGRESP_MAX_READ_WRITE);
    if (ver != SMBD_VERSION_1)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE, "negotiated version 0x%04x", ver);
    if (creq == 0 || cgr == 0)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE,
                         "negotiate response with CreditsRequested %u, CreditsGranted %u", creq, cgr);
    if (mrecv < SMBD_MIN_RECEIVE_SIZE || mfrag < SMBD_MIN_FRAGMENTED_SIZE)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE,
                         "negotiate response with MaxReceiveSize %u, MaxFragmentedSize %u", mrecv, mfrag);
    if (pref > c->p.max_recv_size)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE,
                         "server PreferredSendSize %u above our MaxReceiveSize %u", pref, c->p.max_recv_size);
    c->neg.recv_credit_target = creq;
    c->peer_target = creq;
    c->neg.max_recv_size = pref < c->p.max_recv_size ? pref : c->p.max_recv_size;
    if (c->neg.max_recv_size < SMBD_MIN_RECEIVE_SIZE)
        c->neg.max_recv_size = SMBD_MIN_RECEIVE_SIZE;
    c->neg.max_send_size = mrecv < c->p.max_send_size ? mrecv : c->p.max_send_size;
    c->neg.max_read_write_size = mrw < c->p.max_read_write_size ? mrw : c->p.max_read_write_size;
    c->neg.max_fragmented_send = mfrag;
    c->neg.max_fragmented_recv = c->p.max_fragmented_size;
    c->neg.initial_send_credits = cgr;
    c->send_credits = cgr;
    if (c->neg.max_send_size <= SMBD_DATA_PAYLOAD_OFFSET)
        return smbd_fail(c, -EPROTO, SMBD_STATUS_BAD_MESSAGE, "server MaxReceiveSize %u too small", mrecv);
    return 0;
}

static int smbd_negotiate(smbd_conn *c)
{
    uint8_t *req = c->send_mem.buf;
    memset(req, 0, SMBD_NEGREQ_SIZE);
    smbd_put16(req + SMBD_NEGREQ_MIN_VERSION, SMBD_VERSION_1);
    smbd_put16(req + SMBD_NEGREQ_MAX_VERSION, SMBD_VERSION_1);
    smbd_put16(req + SMBD_NEGREQ_CREDITS_REQUESTED, c->p.send_credit_target);
    smbd_put32(req + SMBD_NEGREQ_PREFERRED_SEND, c->p.max_send_size);
    smbd_put32(req + SMBD_NEGREQ_MAX_RECEIVE, c->p.max_recv_size);
    smbd_put32(req + SMBD_NEGREQ_MAX_FRAGMENTED, c->p.max_fragmented_size);
    NDK_SGE sge = ndk_sync_mem_sge(&c->send_mem, 0, SMBD_NEGREQ_SIZE);
    c->send_slots[0].busy = true;
    c->send_free--;
    NTSTATUS st = c->qp->Dispatch->NdkSend(c->qp, &c->send_slots[0], &sge, 1, 0);
    if (st != STATUS_SUCCESS) {
        c->send_slots[0].busy = false;
        c->send_free++;
        return smbd_fail(c, -EIO, st, "NdkSend (negotiate request): %s", ndk_rt_status_name(st));
    }
    /* The response needs no credit (3.1.5.3); smbd_recv_complete handles it in NEGOTIATING. */
    uint64_t deadline = ndk_sync_time_now_ns() + (uint64_t)c->p.timeout_ms * 1000000u;
    while (c->state == SMBD_ST_NEGOTIATING) {
        uint64_t now = ndk_sync_time_now_ns();
        if (now >= deadline)
            return smbd_fail(c, -ETIMEDOUT, STATUS_IO_TIMEOUT, "no negotiate response within %d ms",
                             c->p.timeout_ms);
        int rc = smbd_progress(c, (int)((deadline - now) / 1000000u) + 1);
        if (rc && rc != -ETIMEDOUT)
            return rc;
    }
    return c->error;
}

/* Called by smbd_recv_complete for the one message received in NEGOTIATING. */
int smbd_negotiate_done(smbd_conn *c, const uint8_t *m, size_t len);
int smbd_negotiate_done(smbd_conn *c, const uint8_t *m, size_t len)
{
    int rc = smbd_negotiate_response(c, m, len);
    if (rc)
        return rc;
    smbd_set_state(c, SMBD_ST_CONNECTED);
    /* Post the data receives; the first data message grants them (ksmbd starts at 0). */
    for (unsigned i = 0; i < c->recv_count; i++) {
        rc = smbd_recv_post(c, i);
        if (rc)
            return rc;
    }
    return 0;
}

int smbd_connect(NDK_ADAPTER *adapter, const SOCKADDR_INET *src, const SOCKADDR_INET *dst,
                 const smbd_params *params, smbd_conn **out)
{
    smbd_params defaults;
    if (!params) {
        smbd_params_default(&defaults);
        params = &defaults;
    }
    if (!adapter || !dst || !out || smbd_check_params(params))
        return -EINVAL;
    *out = NULL;
    smbd_conn *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->p = *params;
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    *out = c;

    int rc = smbd_resources(c, adapter);
    if (rc)
        return rc;
    /* 3.1.4.1: the negotiate receive is posted before connecting; ksmbd answers at once. */
    rc = smbd_recv_post(c, 0);
    if (rc)
        return rc;
    smbd_set_state(c, SMBD_ST_CONNECTING);

    NTSTATUS st = ndk_sync_create_connector(adapter, &c->connector);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -EIO, st, "NdkCreateConnector: %s", ndk_rt_status_name(st));
    SOCKADDR_INET s, d = *dst;
    if (src)
        s = *src;
    else {
        memset(&s, 0, sizeof s);
        s.si_family = d.si_family;
    }
    ULONG ird = c->p.ird > c->ad.info.MaxInboundReadLimit ? c->ad.info.MaxInboundReadLimit : c->p.ird;
    ULONG ord = c->p.ord > c->ad.info.MaxOutboundReadLimit ? c->ad.info.MaxOutboundReadLimit : c->p.ord;
    ndk_sync_op *op = ndk_sync_op_new();
    if (!op)
        return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "NdkConnect: out of memory");
    st = c->connector->Dispatch->NdkConnect(c->connector, c->qp, (PSOCKADDR)&s, ndk_sync_addr_len(&s),
                                            (PSOCKADDR)&d, ndk_sync_addr_len(&d), ird, ord, NULL, 0,
                                            ndk_sync_op_request_done, op);
    st = ndk_sync_op_finish(op, st, c->p.timeout_ms, NULL);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, st == STATUS_IO_TIMEOUT ? -ETIMEDOUT : -ECONNREFUSED, st, "NdkConnect: %s",
                         ndk_rt_status_name(st));
    ULONG plen = 0;
    st = c->connector->Dispatch->NdkGetConnectionData(c->connector, &c->neg.ird, &c->neg.ord, NULL, &plen);
    if (st != STATUS_SUCCESS && st != STATUS_BUFFER_TOO_SMALL)
        return smbd_fail(c, -EIO, st, "NdkGetConnectionData: %s", ndk_rt_status_name(st));
    op = ndk_sync_op_new();
    if (!op)
        return smbd_fail(c, -ENOMEM, STATUS_INSUFFICIENT_RESOURCES, "NdkCompleteConnect: out of memory");
    st = c->connector->Dispatch->NdkCompleteConnect(c->connector, smbd_disconnect_event, c,
                                                    ndk_sync_op_request_done, op);
    st = ndk_sync_op_finish(op, st, c->p.timeout_ms, NULL);
    if (st != STATUS_SUCCESS)
        return smbd_fail(c, -ECONNRESET, st, "NdkCompleteConnect: %s", ndk_rt_status_name(st));
    c->established = true;
    c->last_recv_ns = ndk_sync_time_now_ns();
    smbd_set_state(c, SMBD_ST_NEGOTIATING);
    return smbd_negotiate(c);
}

/* Requests of the initiator queue still in flight: Sends, fast-registers and invalidates. */
static bool smbd_initiator_busy(const smbd_conn *c)
{
    if (c->send_free != c->p.send_slots)
        return true;
    for (unsigned i = 0; i < c->frmr_count; i++)
        if (c->frmrs[i].pending > 0)
            return true;
    return false;
}

void smbd_close(smbd_conn *c)
{
    if (!c)
        return;
    ndk_sync_op *op;
    /* A disconnect with initiator requests outstanding cuts them off (NdkDisconnect: the
     * consumer lets them complete first); a connection still healthy completes them at once,
     * so wait a little for that before disconnecting. */
    if (c->connector && c->established && c->cq && !c->error) {
        uint64_t until = ndk_sync_time_now_ns() + 1000000000u;
        while (smbd_initiator_busy(c) && ndk_sync_time_now_ns() < until)
            if (!smbd_poll(c)) {
                struct timespec ts = { 0, 200000 };
                nanosleep(&ts, NULL);
            }
    }
    /* Without memory for the op the graceful disconnect is skipped: closing the connector
     * aborts the connection anyway. */
    if (c->connector && c->established && (op = ndk_sync_op_new()) != NULL) {
        /* Bounded: a peer that flushed may take seconds to answer (issue 13 item 1). */
        NTSTATUS st = c->connector->Dispatch->NdkDisconnect(c->connector, ndk_sync_op_request_done, op);
        ndk_sync_op_finish(op, st, SMBD_TEARDOWN_MS, NULL);
    }
    if (c->qp)
        c->qp->Dispatch->NdkFlush(c->qp);
    if (c->connector)
        ndk_sync_close(&c->connector->Header, SMBD_TEARDOWN_MS);
    /* Drain the flushed requests so the MR pool sees its invalidations end. */
    if (c->cq) {
        uint64_t until = ndk_sync_time_now_ns() + 200000000u;
        while (c->send_free != c->p.send_slots || c->recv_posted != 0) {
            if (smbd_poll(c))
                continue;
            if (ndk_sync_time_now_ns() >= until)
                break;
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
    }
    if (c->qp)
        ndk_sync_close(&c->qp->Header, SMBD_TEARDOWN_MS);
    smbd_mr_pool_free(c);
    ndk_sync_mem_release(&c->recv_mem);
    ndk_sync_mem_release(&c->send_mem);
    if (c->cq)
        ndk_sync_close(&c->cq->Header, SMBD_TEARDOWN_MS);
    if (c->pd)
        ndk_sync_close(&c->pd->Header, SMBD_TEARDOWN_MS);
    smbd_rxq_free(c);
    free(c->reasm);
    free(c->recv_slots);
    free(c->send_slots);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}
