/*
 * rx.c - the receive engine: reads the socket, drives the resumable FPDU deframer (fpdu.c),
 * checks every segment before placing a byte, places payload straight into registered memory,
 * completes receives and reads, answers Read Requests, and turns every protocol error into
 * exactly one Terminate.
 *
 * Two state machines nest: the deframer's (MPA/DDP framing, CRC, MSN/MO/TO continuity, any TCP
 * split down to one byte) and the engine's (enum dp_rx_state, rx_goto): RUN until an error of
 * ours (FAILED: Terminate queued) or the peer's Terminate (TERMINATED). Per segment the engine
 * decides a placement target at the HEADER event, after the checks of RFC 5040 §7 /
 * §3.5; payload then goes there either by recvmsg() straight into the target (the deframer is
 * fed the target bytes in place, so it only runs the CRC over them) or, for bytes that arrived
 * in the staging buffer together with headers, by one copy that also runs the CRC
 * (IW_FPDU_RX_CALLER_CRC): either way each payload byte passes through the CRC once.
 *
 * Context: the progress thread, or a consumer busy-polling a CQ of the QP (poll.c), holding
 * dp->rx_owned; qp->lock is taken briefly for state shared with TX and posting (ORQ, IRQ, SQE
 * states). Receives are taken from the RQ without it (the RQ's taker, struct iw_wq). Never
 * blocks: the socket is read with MSG_DONTWAIT semantics (non-blocking fd) and a bounded number
 * of reads per call (epoll is level-triggered, so the rest comes on the next call).
 *
 * Talks to: fpdu.c (the deframer), access.c (checks, placement), qp.c (the first error, SQ
 * retire), tx.c (kicks it: Read Responses, the Terminate), wq.c and srq.c (receives), cq.c. Run
 * by qp.c (the pollable), poll.c and cm.c (the hang-up). */
#include "datapath.h"
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *const dp_rx_state_name[DP_RX_STATE_COUNT] = {
    [DP_RX_RUN] = "RUN", [DP_RX_FAILED] = "FAILED", [DP_RX_TERMINATED] = "TERMINATED",
};

/* The one RX engine transition function: RUN -> FAILED | TERMINATED, both final. */
static void rx_goto(struct iw_qp *qp, struct iw_dp *dp, enum dp_rx_state to)
{
    if (dp->rx.state != DP_RX_RUN && dp->rx.state != to) {
        iw_warn("QP[%u] RX transition undefined: %s => %s", qp->obj.id, dp_rx_state_name[dp->rx.state],
                dp_rx_state_name[to]);
        return;
    }
    dp->rx.state = to;
}

/* Runs the TX engine from RX (a Read Response, the Terminate, a freed ORD slot). A socket
 * error is kept for iw_rx_run to return: reporting it to the CM from here would run
 * the CM with rx_owned held. */
static void rx_kick_tx(struct iw_qp *qp, struct iw_dp *dp)
{
    int err = iw_tx_run(qp);

    if (err < 0 && !dp->rx.tx_err)
        dp->rx.tx_err = err;
}

/* Records an error found by the engine in the current segment; the deframer then reports it
 * as an ERROR event with the header attached as RFC 5040 §4.8 wants. */
static void rx_fail(struct iw_dp *dp, uint8_t layer, uint8_t etype, uint8_t ecode)
{
    iw_fpdu_rx_set_error(&dp->rx.fr, layer, etype, ecode);
}

static const struct dp_sgl *rx_target_sgl(struct iw_dp *dp)
{
    switch (dp->rx.tgt) {
    case DP_RXT_SEND:
        return &dp->rx.recv_sgl;
    case DP_RXT_WRITE:
        return &dp->rx.wsgl;
    case DP_RXT_RRESP:
        return dp->rx.rsgl;
    default:
        return NULL;
    }
}

/* ---- HEADER: checks before placement ---- */

static void rx_hdr_write(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    struct dp_term_code tc;
    struct iw_obj *mem;

    /* RFC 5040: a zero-length tagged segment places nothing and is not validated. */
    if (h->payload_len == 0)
        return;
    if (iw_access_check_remote(qp, h->stag, h->to, h->payload_len, DP_ACC_REMOTE_WRITE, false, &mem, &tc) < 0) {
        rx_fail(dp, tc.layer, tc.etype, tc.ecode);
        return;
    }
    iw_access_sgl_mem(&dp->rx.wsgl, mem, h->to, h->payload_len);
    dp->rx.tgt = DP_RXT_WRITE;
    dp->rx.tgt_base = 0;
}

static void rx_hdr_read_resp(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    struct dp_orq_ent *o;

    iw_lock_take(&qp->lock);
    if (!dp->orq_count) {
        iw_lock_give(&qp->lock);
        /* A Response nobody asked for (RFC 5040 §7.2: unexpected opcode). */
        rx_fail(dp, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE);
        return;
    }
    o = &dp->orq[dp->orq_head];
    /* RFC 5040 §4.4: aimed at the oldest Read's sink STag and TO, adding up to its size. */
    if (h->stag != o->sink_stag) {
        iw_lock_give(&qp->lock);
        rx_fail(dp, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_INV_STAG);
        return;
    }
    if (h->to != o->sink_to + o->got || (uint64_t)o->got + h->payload_len > o->size) {
        iw_lock_give(&qp->lock);
        rx_fail(dp, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_BASE_BOUNDS);
        return;
    }
    dp->rx.rsgl = &iw_dp_sqe(qp, o->slot)->sgl;
    dp->rx.tgt_base = o->got;
    iw_lock_give(&qp->lock);
    if (h->payload_len)
        dp->rx.tgt = DP_RXT_RRESP;
}

static void rx_hdr_read_req(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    struct dp_term_code tc;
    struct iw_obj *mem = NULL;
    bool full;

    iw_lock_take(&qp->lock);
    /* RFC 5040 §5.3: at most IRD outstanding; a response whose last bytes are going out no
     * longer counts (DP_IRQ_SLOTS). */
    full = dp->irq_count >= dp->ird + (dp->rresp_last_out ? 1u : 0u);
    iw_lock_give(&qp->lock);
    if (full) {
        /* More Read Requests in flight than our IRD: what siw answers (RFC 5040 §4.8). */
        rx_fail(dp, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_CATA_STREAM);
        return;
    }
    /* A sink range that wraps 2^64 cannot be answered: every Read Response segment would carry
     * a TO + length the requester must reject (RFC 5041 §7.2, DDP TO wrap). Refused like a
     * source that wraps (RFC 5040 §7), before anything is sent. */
    if (h->rr.size && UINT64_MAX - h->rr.sink_to < (uint64_t)h->rr.size - 1) {
        rx_fail(dp, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_PROT, IW_TERM_RDMAP_TO_WRAP);
        return;
    }
    memset(&dp->rx.rr, 0, sizeof dp->rx.rr);
    dp->rx.rr.sink_stag = h->rr.sink_stag;
    dp->rx.rr.sink_to = h->rr.sink_to;
    dp->rx.rr.size = h->rr.size;
    /* RFC 5040: a zero-length Read is answered without validating the source. */
    if (h->rr.size) {
        if (iw_access_check_remote(qp, h->rr.src_stag, h->rr.src_to, h->rr.size, DP_ACC_REMOTE_READ, true, &mem, &tc) < 0) {
            rx_fail(dp, tc.layer, tc.etype, tc.ecode);
            return;
        }
        iw_access_sgl_mem(&dp->rx.rr.src, mem, h->rr.src_to, h->rr.size);
    }
    dp->rx.rr_pending = true;
}

/* Takes the oldest posted receive (RQ or SRQ, §5.6 / §8 item 25): keeps its context and its
 * SGL resolved for writing (*res the resolve's result, *bad its bad SGE). An RQ entry is
 * resolved where it lies, without qp->lock (the RQ's taker, struct iw_wq), and left for the
 * poster to reap: a WQE is some 400 bytes that a small message would otherwise copy out and
 * clear twice. Returns 0 or -ENOBUFS. RX engine (takes the SRQ's lock inside it). */
static int rx_take_recv(struct iw_qp *qp, struct dp_rx *rx, int *res, uint32_t *bad)
{
    struct iw_wqe copy;
    const struct iw_wqe *w = NULL;
    int got;

    if (qp->srq) {
        got = iw_srq_take(qp->srq, &copy);
        w = &copy;
    } else {
        w = iw_wq_take_peek(&qp->rq);
        got = w ? 0 : -ENOBUFS;
    }
    if (got == 0) {
        if (qp->srq) {                             /* outstanding on this QP from now on */
            ndk_sv_add(&qp->svq->rq_posted, 1);
            ndk_sv_set(&qp->svq->rq_oldest_ns, w->posted_ns);
        }
        rx->have_recv = true;
        rx->recv_ctx = w->request_context;
        rx->recv_status = STATUS_SUCCESS;
        rx->recv_pec = 0;
        *res = iw_access_sgl_resolve(qp, &rx->kc, w->sge, w->nsge, DP_ACC_LOCAL_WRITE, &rx->recv_sgl, bad);
        if (qp->srq)
            iw_wq_entry_release(&copy);
        else
            iw_wq_take_next(&qp->rq);
    }
    return got;
}

/* A Send's checks before placement: its receive, the receive's SGL, the length. A failure is
 * recorded in the deframer (rx_fail, no lock of its own). RX engine, no lock needed. */
static void rx_hdr_send(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    struct dp_rx *rx = &dp->rx;

    if (h->mo == 0 && !rx->have_recv) {
        /* First segment: consume the oldest posted receive. */
        uint32_t bad = 0;
        int res = 0;
        if (rx_take_recv(qp, rx, &res, &bad) < 0) {
            /* iWARP has no receiver-not-ready retry: RFC 5041 §7.3 code 2, connection dies. */
            rx_fail(dp, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_MSN_NOBUF);
            return;
        }
        if (res < 0) {
            /* Our consumer's receive buffer is not writable: local protection error on the
             * receive; the stream cannot continue (RFC 5041 §7 local catastrophic). */
            rx->recv_status = STATUS_ACCESS_VIOLATION;
            rx->recv_pec = IW_PEC(IW_PEC_POSTED, 0, 0, bad);
            rx_fail(dp, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_CATASTROPHIC, IW_TERM_DDP_CATASTROPHIC);
            return;
        }
    } else if (!rx->have_recv) {
        rx_fail(dp, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_INV_MO);
        return;
    }
    if ((uint64_t)h->mo + h->payload_len > rx->recv_sgl.total) {
        /* RFC 5041 §7.3 code 5: DDP message too long for the available buffer. */
        rx->recv_status = STATUS_BUFFER_TOO_SMALL;
        rx->recv_pec = IW_PEC(IW_PEC_LOCAL, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_TOO_LONG);
        rx_fail(dp, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_UNTAGGED, IW_TERM_DDP_U_TOO_LONG);
        return;
    }
    if (h->payload_len) {
        rx->tgt = DP_RXT_SEND;
        rx->tgt_base = h->mo;
    }
}

static void rx_on_header(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    dp->rx.tgt = DP_RXT_NONE;
    switch (h->opcode) {
    case IW_OP_WRITE:
        rx_hdr_write(qp, dp, h);
        break;
    case IW_OP_READ_RESP:
        rx_hdr_read_resp(qp, dp, h);
        break;
    case IW_OP_READ_REQ:
        rx_hdr_read_req(qp, dp, h);
        break;
    case IW_OP_SEND:
    case IW_OP_SEND_SE:
    case IW_OP_SEND_INV:
    case IW_OP_SEND_SE_INV:
        rx_hdr_send(qp, dp, h);
        break;
    case IW_OP_TERMINATE:
        break;                                    /* acted on at END, once the CRC is good */
    default:
        rx_fail(dp, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE);
        break;
    }
}

/* ---- PAYLOAD: placement ---- */

/* Copies a chunk of segment payload to its target; a chunk that was read straight into the
 * target (recvmsg) is already there and costs only the CRC. The deframer leaves the CRC to us
 * (IW_FPDU_RX_CALLER_CRC), so staged bytes are read once, by the copy that runs it. */
static void rx_place(struct iw_dp *dp, const struct iw_fpdu_event *ev)
{
    struct iw_fpdu_rx *fr = &dp->rx.fr;
    const struct dp_sgl *s = rx_target_sgl(dp);
    const uint8_t *src = ev->data;
    uint64_t off = dp->rx.tgt_base + ev->off, left = ev->len;

    while (s && left) {
        struct iovec iov[16];
        uint64_t mapped;
        int n = iw_access_sgl_iov(s, off, left, iov, 16, &mapped);
        if (n == 0 || mapped == 0)
            break;                                /* cannot happen: the header was checked */
        for (int i = 0; i < n; i++) {
            if (iov[i].iov_base != (const void *)src)
                iw_fpdu_rx_place_copy(fr, iov[i].iov_base, src, iov[i].iov_len);
            else
                iw_fpdu_rx_place_skip(fr, src, iov[i].iov_len);
            src += iov[i].iov_len;
        }
        off += mapped;
        left -= mapped;
    }
    if (left)
        iw_fpdu_rx_place_skip(fr, src, (size_t)left); /* no target: the CRC still covers them */
}

/* ---- END: completion ---- */

static int rx_error(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_rx_error *e);

static void rx_end_read_resp(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    struct dp_orq_ent *o;
    struct dp_term_code tc;
    bool short_resp = false;

    iw_lock_take(&qp->lock);
    if (!dp->orq_count) {
        iw_lock_give(&qp->lock);
        return;
    }
    o = &dp->orq[dp->orq_head];
    o->got += h->payload_len;
    if (h->last) {
        struct dp_sqe *s = iw_dp_sqe(qp, o->slot);
        struct iw_wqe *w = NULL;
        if (o->got != o->size) {
            short_resp = true;
        } else {
            for (uint32_t i = 0; i < qp->sq.count; i++)
                if (iw_wq_slot(&qp->sq, i) == o->slot)
                    w = iw_wq_at(&qp->sq, i);
            s->status = STATUS_SUCCESS;
            /* §5.5.3 READ_LOCAL_INVALIDATE: success also means the first SGE's token is gone. */
            if (w && (w->flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) && w->nsge &&
                iw_access_invalidate(qp, w->sge[0].MemoryRegionToken, false, &tc) < 0) {
                s->status = STATUS_ACCESS_VIOLATION;
                s->pec = IW_PEC(IW_PEC_POSTED, tc.layer, tc.etype, tc.ecode);
            }
            s->state = DP_SQE_DONE;
            dp->orq_head = iw_dp_ring_index(dp->orq_head, 1, dp->orq_cap);
            dp->orq_count--;
            iw_qp_sq_retire_locked(qp);
        }
    }
    iw_lock_give(&qp->lock);
    if (short_resp)
        rx_fail(dp, IW_TERM_LAYER_DDP, IW_TERM_ETYPE_DDP_TAGGED, IW_TERM_DDP_T_BASE_BOUNDS);
}

/* The messages whose payload the system view counts (bytes_in / ops_in): all but the Read
 * Request and the Terminate. */
#define RX_SV_PAYLOAD_OPS                                                                           \
    (1u << IW_OP_WRITE | 1u << IW_OP_READ_RESP | 1u << IW_OP_SEND | 1u << IW_OP_SEND_INV |           \
     1u << IW_OP_SEND_SE | 1u << IW_OP_SEND_SE_INV)

/* The system view's count of a completed receive; the oldest outstanding one is now the next
 * the RQ's taker would take (none with an SRQ: a QP fills one receive at a time). RX engine, or
 * the stop; a failed receive only with qp->lock held (errors has other writers under it). */
static inline void rx_sv_recv_done(struct iw_qp *qp, NTSTATUS st)
{
    const struct iw_wqe *next = qp->srq ? NULL : iw_wq_take_peek(&qp->rq);

    ndk_sv_add(&qp->svq->rq_completed, 1);
    if (st != STATUS_SUCCESS)
        ndk_sv_add(&qp->svq->errors, 1);
    if (next) {
        ndk_sv_set(&qp->svq->rq_oldest_ns, next->posted_ns);
        return;
    }
    /* 0 exactly when none is outstanding, against a receive posted meanwhile: we clear, then
     * look for it; iw_post_receive publishes it, then looks at the mark (a full fence between
     * each one's store and load), so at least one of us sets the mark. */
    ndk_sv_set(&qp->svq->rq_oldest_ns, 0);
    if (qp->srq)
        return;
    atomic_thread_fence(memory_order_seq_cst);
    next = iw_wq_take_peek(&qp->rq);
    if (next)
        ndk_sv_set(&qp->svq->rq_oldest_ns, next->posted_ns);
}

/* Completes the receive at the end of its message. RX engine, no lock needed: the receive was
 * taken from the RQ without it, and a flush comes only after the stop, which waits for the
 * engine (rx_owned). */
static void rx_end_send(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    struct dp_rx *rx = &dp->rx;
    bool inv = h->opcode == IW_OP_SEND_INV || h->opcode == IW_OP_SEND_SE_INV;
    bool se = h->opcode == IW_OP_SEND_SE || h->opcode == IW_OP_SEND_SE_INV;
    struct dp_term_code tc;

    if (!h->last || !rx->have_recv)
        return;
    /* RFC 5040 §5.3: invalidate after the whole message arrived and
     * before the receive completes (§5.6). An invalid token aborts the connection (§2.9). */
    if (inv && iw_access_invalidate(qp, h->inv_stag, true, &tc) < 0) {
        rx->recv_status = STATUS_ACCESS_VIOLATION;
        rx->recv_pec = IW_PEC(IW_PEC_LOCAL, tc.layer, tc.etype, tc.ecode);
        rx_fail(dp, tc.layer, tc.etype, tc.ecode);
        return;
    }
    iw_access_sgl_release(&rx->recv_sgl);          /* before the completion is visible (§5.10) */
    NDK_RESULT_EX r = {
        .Status = STATUS_SUCCESS,
        .BytesTransferred = (ULONG)((uint64_t)h->mo + h->payload_len),
        .QPContext = qp->qp_context,
        .RequestContext = rx->recv_ctx,
        .Type = inv ? NdkOperationTypeReceiveAndInvalidate : NdkOperationTypeReceive,
        .TypeSpecificCompletionOutput = inv ? h->inv_stag : 0,
    };
    iw_cq_push(qp->rcq, &r, se);
    rx->have_recv = false;
    rx_sv_recv_done(qp, STATUS_SUCCESS);
}

static int rx_end_terminate(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    struct iw_term_ctrl rfc, siw;
    struct dp_term_code tc;

    /* siw sends the control word bit-swapped (fpdu.h); log both readings and pick
     * siw's only when the M/D/R bits sit where siw puts them (or the RFC layer is invalid). */
    iw_fpdu_term_ctrl_rfc(h->term.ctrl, &rfc);
    iw_fpdu_term_ctrl_siw(h->term.ctrl, &siw);
    uint8_t b2 = h->term.ctrl[IW_TERM_OFF_HDRCT];
    bool use_siw = (!(b2 & 0xE0) && (b2 & 0x07)) || (rfc.layer > IW_TERM_LAYER_LLP && siw.layer <= IW_TERM_LAYER_LLP);
    const struct iw_term_ctrl *c = use_siw ? &siw : &rfc;
    iw_warn("QP[%u] Terminate received: RFC layout layer %u etype %u code 0x%02x hdrct 0x%02x; "
            "siw layout layer %u etype %u code 0x%02x hdrct 0x%02x (using %s)",
            qp->obj.id, rfc.layer, rfc.etype, rfc.ecode, rfc.hdrct, siw.layer, siw.etype, siw.ecode, siw.hdrct,
            use_siw ? "siw" : "RFC");
    tc.layer = c->layer;
    tc.etype = c->etype;
    tc.ecode = c->ecode;

    iw_lock_take(&qp->lock);
    iw_qp_set_error_locked(qp, -ECONNRESET);
    /* The oldest outstanding request is the one the peer refused (a Read still waiting, or the
     * request behind a Write already completed on transmit): it completes with the peer's
     * reason (§5.2 "completes with a remote access error on both sides"). */
    if (qp->sq.count) {
        struct dp_sqe *s = iw_dp_sqe(qp, iw_wq_slot(&qp->sq, 0));
        if (!s->failed) {
            s->failed = true;
            s->status = iw_access_term_status(&tc);
            s->pec = IW_PEC(IW_PEC_REMOTE, tc.layer, tc.etype, tc.ecode);
        }
    }
    /* Never answer a Terminate with one (RFC 5040 §5.3); TX stops at its next FPDU boundary. */
    dp->term_pending = true;
    dp->term_sent = true;
    if (qp->state == IW_QP_RTS || qp->state == IW_QP_CLOSING)
        iw_qp_modify_locked(qp, IW_QP_TERMINATE);
    iw_lock_give(&qp->lock);
    rx_goto(qp, dp, DP_RX_TERMINATED);
    return -ECONNRESET;
}

/* Returns 0 to go on, or a fatal -errno. RX engine; takes qp->lock as needed. */
static int rx_on_end(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_event *ev)
{
    const struct iw_fpdu_hdr *h = ev->hdr;
    struct dp_rx *rx = &dp->rx;
    int ret = 0;

    /* RFC 5044 §7.1.2: the responder's TX waits for one good FPDU from the initiator. */
    if (!rx->first_done) {
        bool kick = false;
        rx->first_done = true;
        iw_lock_take(&qp->lock);
        if (qp->params.tx_wait_first_rx) {
            qp->params.tx_wait_first_rx = false;
            kick = true;
        }
        iw_lock_give(&qp->lock);
        if (kick)
            rx_kick_tx(qp, dp);
    }
    IW_COUNT(qp->obj.dev, rdma_in_frames, 1);
    if ((1u << (h->opcode & 31u)) & RX_SV_PAYLOAD_OPS) {
        ndk_sv_add(&qp->svq->bytes_in, h->payload_len);   /* RX engine: the one writer */
        if (h->last)
            ndk_sv_add(&qp->svq->ops_in, 1);
    }
    switch (h->opcode) {
    case IW_OP_WRITE:
        iw_access_sgl_release(&rx->wsgl);
        break;
    case IW_OP_READ_RESP:
        rx_end_read_resp(qp, dp, h);
        if (h->last)
            rx_kick_tx(qp, dp);                   /* an ORD slot / the fence may have freed */
        break;
    case IW_OP_READ_REQ:
        if (rx->rr_pending) {
            iw_lock_take(&qp->lock);
            dp->irq[iw_dp_ring_index(dp->irq_head, dp->irq_count, dp->irq_slots)] = rx->rr;
            dp->irq_count++;
            rx->rr_pending = false;
            memset(&rx->rr, 0, sizeof rx->rr);
            iw_lock_give(&qp->lock);
            rx_kick_tx(qp, dp);
        }
        break;
    case IW_OP_SEND:
    case IW_OP_SEND_SE:
    case IW_OP_SEND_INV:
    case IW_OP_SEND_SE_INV:
        rx_end_send(qp, dp, h);
        break;
    case IW_OP_TERMINATE:
        ret = rx_end_terminate(qp, dp, h);
        break;
    default:
        break;
    }
    rx->tgt = DP_RXT_NONE;
    return ret;
}

/* ---- errors: one Terminate ---- */

static int rx_error(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_rx_error *e)
{
    struct dp_rx *rx = &dp->rx;
    struct dp_term_code tc = { e->term.layer, e->term.etype, e->term.ecode };
    NTSTATUS st = iw_access_term_status(&tc);
    const struct iw_wqe *w;

    iw_warn("QP[%u] RX error at stream offset %llu: %s (layer %u etype %u code 0x%02x); sending Terminate",
            qp->obj.id, (unsigned long long)e->fpdu_offset, iw_fpdu_rx_reason_str(e->reason), tc.layer, tc.etype,
            tc.ecode);
    iw_access_sgl_release(&rx->wsgl);
    iw_access_sgl_release(&rx->rr.src);
    rx->rr_pending = false;
    iw_lock_take(&qp->lock);
    if (rx->have_recv) {
        if (rx->recv_status == STATUS_SUCCESS) {
            rx->recv_status = st;
            rx->recv_pec = IW_PEC(IW_PEC_LOCAL, tc.layer, tc.etype, tc.ecode);
        }
    } else if (!qp->srq && (st == STATUS_ACCESS_VIOLATION || st == STATUS_REMOTE_RESOURCES) &&
               (w = iw_wq_take_peek(&qp->rq))) {
        /* A protection violation by the peer is reported on this side too (issue 4: "a
         * remote access error on both sides"): the oldest receive carries it. */
        rx->recv_ctx = w->request_context;
        iw_wq_take_next(&qp->rq);
        memset(&rx->recv_sgl, 0, sizeof rx->recv_sgl);
        rx->have_recv = true;
        rx->recv_status = st;
        rx->recv_pec = IW_PEC(IW_PEC_LOCAL, tc.layer, tc.etype, tc.ecode);
    }
    /* A bad Read Response fails the Read it was aimed at. */
    if (dp->orq_count && rx->tgt == DP_RXT_RRESP) {
        struct dp_sqe *s = iw_dp_sqe(qp, dp->orq[dp->orq_head].slot);
        s->failed = true;
        s->status = st;
        s->pec = IW_PEC(IW_PEC_LOCAL, tc.layer, tc.etype, tc.ecode);
    }
    iw_qp_terminate_locked(qp, &e->term, e->err ? e->err : -EBADMSG);
    iw_lock_give(&qp->lock);
    rx_goto(qp, dp, DP_RX_FAILED);
    rx_kick_tx(qp, dp);                           /* the Terminate goes out now if it can */
    return -EBADMSG;
}

/* ---- the engine ---- */

/* What the engine expects the next header to say when it reads that frame's payload straight
 * into the sink in the same recvmsg() (rx_layout). */
struct rx_pred {
    uint32_t stag, len;
    uint64_t to;
    uint64_t base;            /* SGL offset of the payload's first byte */
    const struct dp_sgl *sgl;
    bool last;
};

/* TRUE when the header just decoded, and the target rx_on_header chose for it, are what pred
 * foresaw, so the bytes behind it in the recvmsg() already sit where they belong. */
static bool rx_pred_ok(const struct dp_rx *rx, const struct iw_fpdu_hdr *h, const struct rx_pred *p)
{
    return h->opcode == IW_OP_READ_RESP && h->stag == p->stag && h->to == p->to && h->payload_len == p->len &&
           h->last == p->last && rx->tgt == DP_RXT_RRESP && rx->rsgl == p->sgl && rx->tgt_base == p->base &&
           rx->fr.state == IW_FPDU_RX_PAYLOAD && rx->fr.pay_done == 0;
}

/* Whether a FRAME is a whole Send message (one segment, L set, MO 0) that rx_frame_send can
 * take: a receive to consume. */
static bool rx_frame_send_ok(const struct dp_rx *rx, const struct iw_fpdu_hdr *h)
{
    bool send = h->opcode == IW_OP_SEND || h->opcode == IW_OP_SEND_SE || h->opcode == IW_OP_SEND_INV ||
                h->opcode == IW_OP_SEND_SE_INV;

    return send && h->last && h->mo == 0 && !rx->have_recv;
}

/* A whole Send in one FRAME, its trailer in in[0, len) or taken by the FRAME already
 * (fev->ended): the receive's checks, placement, the trailer (the deframer's END or ERROR) and
 * the completion in one go, in the order of the resumable path. A failed check or a bad trailer
 * stays in the deframer, which reports it at the caller's next step. *used: trailer bytes
 * consumed here. Returns 0 or a fatal -errno (rx_on_end). RX engine; takes qp->lock only as
 * rx_on_end does (the receive is the RQ taker's). Flattened, as the posts' and the CQ's hot
 * functions are: every small message comes here, and the calls it makes across files cost
 * about a tenth of a round trip's instructions when left as calls (docs/performance.md). */
static __attribute__((flatten)) int rx_frame_send(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_event *fev,
                                                  const uint8_t *in,
                         size_t len, size_t *used)
{
    struct iw_fpdu_event ev;
    int ret = 0;

    *used = 0;
    dp->rx.tgt = DP_RXT_NONE;
    rx_hdr_send(qp, dp, fev->hdr);
    if (dp->rx.fr.state != IW_FPDU_RX_ERROR) {
        rx_place(dp, fev);
        if (fev->ended) {
            dp->rx.frame_sends++;
            ret = rx_on_end(qp, dp, fev);
        } else if (iw_fpdu_rx_step_ex(&dp->rx.fr, in, len, IW_FPDU_RX_CALLER_CRC, used, &ev) == IW_FPDU_EV_END) {
            dp->rx.frame_sends++;
            ret = rx_on_end(qp, dp, &ev);
        }
    }
    return ret;
}

/* Runs the deframer over len bytes at data. Returns 0 (all consumed) or a fatal -errno. With
 * pred (the bytes are a trailer and the next header, and speculatively placed payload follows
 * them), it also returns 1 when the stream is not what pred says, with *fed the bytes consumed:
 * the caller then feeds the rest itself, none of it having been placed yet. */
static int rx_feed_pred(struct iw_qp *qp, struct iw_dp *dp, const uint8_t *data, size_t len,
                        const struct rx_pred *pred, size_t *fed)
{
    size_t pos = 0;
    int ret = 0;

    for (;;) {
        struct iw_fpdu_event ev;
        size_t used = 0;
        /* Whole frames in one event, their trailers with them, but not behind a prediction:
         * there the engine stops after the header, before a byte of its payload is placed. */
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step_ex(&dp->rx.fr, data + pos, len - pos,
                                                    IW_FPDU_RX_CALLER_CRC |
                                                        (pred ? 0 : IW_FPDU_RX_WHOLE | IW_FPDU_RX_END),
                                                    &used, &ev);
        int err;

        pos += used;
        switch (t) {
        case IW_FPDU_EV_NEED_MORE:
            ret = pred ? 1 : 0;                   /* the header did not end here */
            goto out;
        case IW_FPDU_EV_HEADER:
            rx_on_header(qp, dp, ev.hdr);
            if (pred && dp->rx.fr.state != IW_FPDU_RX_ERROR) {
                /* Stop before a byte of this segment is placed: the copy could land on
                 * speculatively read bytes not yet fed. */
                ret = rx_pred_ok(&dp->rx, ev.hdr, pred) && pos == len ? 0 : 1;
                goto out;
            }
            break;
        case IW_FPDU_EV_PAYLOAD:
            rx_place(dp, &ev);
            break;
        case IW_FPDU_EV_FRAME:
            if (rx_frame_send_ok(&dp->rx, ev.hdr)) {
                size_t more = 0;
                err = rx_frame_send(qp, dp, &ev, data + pos, len - pos, &more);
                pos += more;
                if (err) {
                    ret = err;
                    goto out;
                }
                break;
            }
            /* HEADER and PAYLOAD at once (and END when the FRAME ended the segment): the
             * header's checks first, as for HEADER; a failed one places nothing (the next step
             * reports it). */
            rx_on_header(qp, dp, ev.hdr);
            if (dp->rx.fr.state == IW_FPDU_RX_ERROR)
                break;
            rx_place(dp, &ev);
            if (ev.ended) {
                err = rx_on_end(qp, dp, &ev);
                if (err) {
                    ret = err;
                    goto out;
                }
            }
            break;
        case IW_FPDU_EV_END:
            err = rx_on_end(qp, dp, &ev);
            if (err) {
                ret = err;
                goto out;
            }
            break;
        case IW_FPDU_EV_ERROR:
        default:
            ret = rx_error(qp, dp, ev.err ? ev.err : iw_fpdu_rx_error(&dp->rx.fr));
            goto out;
        }
        /* The deframer makes no event from zero bytes but an error (one a handler above may
         * have recorded): without one, a step over nothing would only say NEED_MORE. */
        if (!pred && pos == len && dp->rx.fr.state != IW_FPDU_RX_ERROR)
            goto out;
    }
out:
    if (fed)
        *fed = pos;
    return ret;
}

static int rx_feed(struct iw_qp *qp, struct iw_dp *dp, const uint8_t *data, size_t len)
{
    return rx_feed_pred(qp, dp, data, len, NULL, NULL);
}

/* The staging buffer and the tail buffers are the thread's, not the QP's (issue 14 item 3:
 * 8 KiB per connection otherwise; the progress thread's are its device's, rx_bufs_mine):
 * rx_engine feeds all of them to the deframer before it
 * returns (st_off == st_len on every return), and nothing it calls runs another QP's RX
 * engine. */
struct iw_rx_bufs {
    uint8_t stage[DP_RX_STAGE];
    uint8_t tail[DP_RX_TAILS][DP_RX_TAIL_LEN];
    /* DP_RX_BULK bytes for reading a backlog, allocated by the first read of one in an
     * rx_engine call and freed when the call returns: a thread that never meets a backlog keeps
     * no more than the small buffers, and none outlives the call (threads and the module may end
     * at any time after it). */
    uint8_t *bulk;
};
/* Other threads' buffers; the address is taken once per rx_engine call and passed down: in a
 * shared object each lookup is a __tls_get_addr call. */
static __thread struct iw_rx_bufs rx_bufs_tls;
_Static_assert(3 + IW_MPA_CRC_SIZE + IW_FPDU_UNTAGGED_HDR_LEN <= DP_RX_TAIL_LEN, "a tail holds pad, CRC, header");

/* Feeds what the last read left in the staging buffer. RX engine (rx_owned held). */
static int rx_consume_stage(struct iw_qp *qp, struct iw_dp *dp)
{
    struct dp_rx *rx = &dp->rx;

    if (rx->st_off < rx->st_len) {
        int err = rx_feed(qp, dp, rx->st_buf + rx->st_off, rx->st_len - rx->st_off);
        rx->st_off = rx->st_len;
        if (err)
            return err;
    }
    rx->st_off = rx->st_len = 0;
    return 0;
}

enum rx_piece { RXP_DIRECT, RXP_TAIL, RXP_STAGE };

/* One recvmsg()'s layout: iov[i] is a piece of kind[i]; a tail with pred[i] >= 0 is followed by
 * the payload preds[pred[i]] foresees. */
struct rx_layout {
    struct iovec iov[DP_RX_MAX_IOV + 2];
    uint8_t kind[DP_RX_MAX_IOV + 2];
    int8_t pred[DP_RX_MAX_IOV + 2];
    struct rx_pred preds[DP_RX_TAILS];
    int n;
    uint64_t asked;
};

static void rx_lay(struct rx_layout *l, void *base, size_t len, enum rx_piece kind, int pred)
{
    l->iov[l->n].iov_base = base;
    l->iov[l->n].iov_len = len;
    l->kind[l->n] = (uint8_t)kind;
    l->pred[l->n] = (int8_t)pred;
    l->asked += len;
    l->n++;
}

/* Whether the next read goes through the bulk buffer: the socket is backlogged, and the last
 * header was not a Read Response's (their segments are laid out straight into the sink once a
 * header is in, rx_layout). The deframer keeps the last header until the next one. */
static bool rx_bulk_wanted(const struct dp_rx *rx)
{
    return rx->bulk && rx->fr.hdr.opcode != IW_OP_READ_RESP;
}

/* Lays a staging buffer: the bulk one when rx_bulk_wanted (allocated here, once per rx_engine
 * call; without memory the small one does), else the small one, so that a read that brings a
 * large segment's head leaves the rest of that segment to go straight to its target. */
static void rx_lay_stage(const struct dp_rx *rx, struct iw_rx_bufs *b, struct rx_layout *l)
{
    bool bulk = rx_bulk_wanted(rx);

    if (bulk && !b->bulk)
        b->bulk = malloc(DP_RX_BULK);
    if (bulk && b->bulk)
        rx_lay(l, b->bulk, DP_RX_BULK, RXP_STAGE, -1);
    else
        rx_lay(l, b->stage, sizeof b->stage, RXP_STAGE, -1);
}

/* Bytes of sink that the Read being answered still has to receive after the current segment,
 * or 0 when there is none to speculate on. */
static uint64_t rx_rresp_left(struct iw_qp *qp, struct iw_dp *dp, const struct iw_fpdu_hdr *h)
{
    uint64_t left = 0;

    if (h->opcode != IW_OP_READ_RESP || h->last || dp->rx.tgt != DP_RXT_RRESP || dp->rx.spec_miss >= DP_RX_SPEC_MISS_MAX)
        return 0;
    iw_lock_take(&qp->lock);
    if (dp->orq_count) {
        const struct dp_orq_ent *o = &dp->orq[dp->orq_head];
        if ((uint64_t)o->got + h->payload_len < o->size)
            left = o->size - o->got - h->payload_len;
    }
    iw_lock_give(&qp->lock);
    return left;
}

/* Lays out the next recvmsg(). Inside a segment whose target is checked, the rest of its payload
 * goes straight to the target (issue 15 item 1). Then, for a large segment, only its trailer
 * (pad + CRC) and the next header go into a small buffer of exactly that size, guessing the
 * header is the common one of the same opcode (the next segment's when L=0; any other header is
 * simply incomplete there and finishes through staging). So does the first small segment whose
 * header came that way (the short last segment of a large message: the next message is likely
 * large too). Any other small segment is followed by the staging buffer instead: many small
 * FPDUs per read beat a read each.
 *
 * Only a Read Response goes further: the requester knows the Read's length, so the sink range
 * the rest of the response covers is known, and with the segment size of the previous segment
 * the following segments are laid out too, [payload k][trailer k + header k+1][payload k+1]...,
 * each header checked against its prediction before a byte behind it is used (rx_run_layout).
 * Nothing lands outside the Read's sink: the local buffer the Read owns until it completes,
 * whose contents are undefined if it fails.
 *
 * While the socket holds more than the reads ask for (the last read got all it asked: rx->bulk),
 * a large Write or Send segment is followed by a bulk staging buffer (DP_RX_BULK) instead of a
 * tail, and so is a read that starts outside a segment, unless the last header was a Read
 * Response's (rx_bulk_wanted): one read then brings several segments, whose payload the
 * deframer copies to its targets with the CRC in the same pass. A receiver that keeps up reads a segment per call straight into place; one that has fallen
 * behind (a sender nothing paces, as under cubic) spent a third of its time entering and
 * leaving those calls, and a copy from a buffer still in cache costs less (bench/history/,
 * the changes and what was tried).
 *
 * Writes and Sends are not speculated on: a Write carries no total length (RFC 5040 §4.3), so
 * payload read ahead for a next segment that turns out shorter or absent would overwrite bytes
 * of the remote peer's MR outside the Write's extent, which the Write has no right to touch
 * (RFC 5040 §5.1.1). A Send's receive buffer beyond the received length is the consumer's:
 * NDKPI defines the received length as BytesTransferred (docs/ndkpi.md, Completions and
 * notifications) and nowhere licenses writing past it, so bytes of other FPDUs must not pass
 * through it. */
static void rx_layout(struct iw_qp *qp, struct iw_dp *dp, struct iw_rx_bufs *b, struct rx_layout *l)
{
    struct dp_rx *rx = &dp->rx;
    const struct iw_fpdu_hdr *h = &rx->fr.hdr;
    const struct dp_sgl *sgl = rx_target_sgl(dp);
    uint64_t left = h->payload_len - rx->fr.pay_done, mapped = 0;
    int ntail = 0;

    l->n = 0;
    l->asked = 0;
    int n = iw_access_sgl_iov(sgl, rx->tgt_base + rx->fr.pay_done, left, l->iov, DP_RX_MAX_IOV, &mapped);
    for (int i = 0; i < n; i++) {
        l->kind[i] = RXP_DIRECT;
        l->pred[i] = -1;
        l->asked += l->iov[i].iov_len;
    }
    l->n = n;
    if (mapped < left || (h->payload_len < DP_RX_STAGE && !rx->tail_mode)) {
        rx->tail_mode = false;
        rx_lay_stage(rx, b, l);
        return;
    }
    /* One small segment in tail mode keeps it (the short end of a large message), a second
     * ends it: a stream of small messages must not cost a read each. */
    rx->tail_mode = h->payload_len >= DP_RX_STAGE;

    uint64_t spec = rx_rresp_left(qp, dp, h);
    if (!spec && rx_bulk_wanted(rx)) {
        rx->tail_mode = false;
        rx_lay_stage(rx, b, l);
        return;
    }
    uint32_t seg = h->payload_len;
    uint32_t trailer = rx->fr.pad_len + IW_MPA_CRC_SIZE;
    uint64_t base = rx->tgt_base + h->payload_len, to = h->to + h->payload_len;

    for (;;) {
        uint32_t next = spec < seg ? (uint32_t)spec : seg;
        uint64_t got = 0;

        if (!next || ntail == DP_RX_TAILS - 1 || l->n + 2 > DP_RX_MAX_IOV) {
            rx_lay(l, b->tail[ntail], trailer + h->hdr_len, RXP_TAIL, -1);
            return;
        }
        struct rx_pred *p = &l->preds[ntail];
        p->stag = h->stag;
        p->len = next;
        p->to = to;
        p->base = base;
        p->sgl = sgl;
        p->last = next == spec;
        rx_lay(l, b->tail[ntail], trailer + h->hdr_len, RXP_TAIL, ntail);
        ntail++;
        n = iw_access_sgl_iov(sgl, base, next, l->iov + l->n, DP_RX_MAX_IOV - l->n, &got);
        for (int i = 0; i < n; i++) {
            l->kind[l->n + i] = RXP_DIRECT;
            l->pred[l->n + i] = -1;
            l->asked += l->iov[l->n + i].iov_len;
        }
        l->n += n;
        if (got < next)
            return;                               /* out of iovecs: the rest next time */
        spec -= next;
        base += next;
        to += next;
        trailer = iw_mpa_pad_len(h->hdr_len - IW_MPA_LEN_SIZE + next) + IW_MPA_CRC_SIZE;
    }
}

/* Feeds what one recvmsg() brought, piece by piece. When a header is not what was foreseen, the
 * bytes after it were read to the wrong places: they are gathered, before any is placed, into a
 * buffer of their own and fed from there, so the deframer copies each where it belongs (or
 * rejects it, Terminate), and nothing is placed from a piece a copy already overwrote.
 * Returns 0 or a fatal -errno. */
static int rx_run_layout(struct iw_qp *qp, struct iw_dp *dp, const struct rx_layout *l, size_t got)
{
    struct dp_rx *rx = &dp->rx;
    size_t left = got;

    for (int i = 0; i < l->n && left; i++) {
        size_t take = left < l->iov[i].iov_len ? left : l->iov[i].iov_len;
        const struct rx_pred *p = l->pred[i] >= 0 && take == l->iov[i].iov_len && take < left ? &l->preds[l->pred[i]] : NULL;
        size_t fed = 0;
        int r;

        if (l->kind[i] == RXP_STAGE) {
            rx->st_buf = l->iov[i].iov_base;
            rx->st_off = 0;
            rx->st_len = take;
            return 0;
        }
        r = rx_feed_pred(qp, dp, l->iov[i].iov_base, take, p, &fed);
        left -= take;
        if (r < 0)
            return r;
        if (r == 0)
            continue;
        /* Diverged: take - fed bytes of this piece and left bytes of the next ones. */
        size_t rest = take - fed + left, o = 0;
        uint8_t *buf = malloc(rest);
        if (!buf)
            return -ENOMEM;
        memcpy(buf, (const uint8_t *)l->iov[i].iov_base + fed, take - fed);
        o = take - fed;
        for (int j = i + 1; j < l->n && o < rest; j++) {
            size_t t = rest - o < l->iov[j].iov_len ? rest - o : l->iov[j].iov_len;
            memcpy(buf + o, l->iov[j].iov_base, t);
            o += t;
        }
        rx->spec_miss++;
        r = rx_feed(qp, dp, buf, rest);
        free(buf);
        return r;
    }
    return 0;
}

/* After a read that ended in a tail, the bytes still missing of the trailer and the header the deframer is inside:
 * exact once the next header's control bytes are in, else up to the end of a header as long as
 * the previous one (the one a tail asked for). 0 when the rest would not fit a tail buffer. */
static uint32_t rx_tail_rest_len(const struct iw_fpdu_rx *fr)
{
    uint32_t guess = fr->hdr.hdr_len > 4u ? fr->hdr.hdr_len : 4u, want;

    switch (fr->state) {
    case IW_FPDU_RX_PAD:
        want = (uint32_t)(fr->pad_len - fr->pad_got) + IW_MPA_CRC_SIZE + guess;
        break;
    case IW_FPDU_RX_CRC:
        want = (uint32_t)(IW_MPA_CRC_SIZE - fr->crc_got) + guess;
        break;
    case IW_FPDU_RX_HDR_REST:
        want = fr->hneed > fr->hgot ? (uint32_t)(fr->hneed - fr->hgot) : 0;
        break;
    case IW_FPDU_RX_HDR_START:
        want = guess > fr->hgot ? guess - fr->hgot : 0;
        break;
    default:
        return 0;
    }
    return want <= DP_RX_TAIL_LEN ? want : 0;
}

#define DP_RX_READS_PER_CALL 64

/* One read of the layout. Socket calls, not readv(): a busy poller mostly finds nothing, and
 * readv's way through the VFS (file position lock, permission hooks, iovec import) costs more
 * than the empty read itself; recv() takes no iovec at all. */
static ssize_t rx_read(const struct iw_dp *dp, int fd, struct rx_layout *l)
{
    ssize_t n;

    if (__builtin_expect(dp->wire != NULL, 0)) {
        n = iw_wire_recv(dp->wire, fd, l->iov, (size_t)l->n);   /* capture / faults (wire.h) */
    } else if (l->n == 1) {
        n = iw_sys_recv(fd, l->iov[0].iov_base, l->iov[0].iov_len, MSG_DONTWAIT);
    } else {
        struct msghdr m = { .msg_iov = l->iov, .msg_iovlen = (size_t)l->n };
        n = iw_sys_recvmsg(fd, &m, MSG_DONTWAIT);
    }
    if (n > 0)
        IW_TSAN_WIRE_RECEIVED();
    return n;
}

/* Reads the socket and runs what came through the deframer (rx_engine). rx_owned held. */
static int rx_engine_reads(struct iw_qp *qp, struct iw_dp *dp, struct iw_rx_bufs *b)
{
    struct dp_rx *rx = &dp->rx;
    struct rx_layout l;
    int err;

    if (rx->state == DP_RX_FAILED)
        return -EBADMSG;
    if (rx->state == DP_RX_TERMINATED)
        return -ECONNRESET;
    if (rx->ring_owned)
        return 0;                                 /* the ring's receive reads for us */
    for (int round = 0; round < DP_RX_READS_PER_CALL; round++) {
        err = rx_consume_stage(qp, dp);
        if (err)
            return err;
        if (rx->fr.state == IW_FPDU_RX_PAYLOAD && rx->tgt != DP_RXT_NONE) {
            rx_layout(qp, dp, b, &l);
        } else if (rx->tail_last && rx_tail_rest_len(&rx->fr)) {
            /* A trailer and header read alone arrived in part: the rest of them alone, so the
             * payload behind still goes straight to its target. */
            l.n = 0;
            l.asked = 0;
            rx_lay(&l, b->tail[0], rx_tail_rest_len(&rx->fr), RXP_TAIL, -1);
        } else {
            rx->tail_mode = false;
            l.n = 0;
            l.asked = 0;
            rx_lay_stage(rx, b, &l);
        }
        ssize_t got = rx_read(dp, dp->fd, &l);
        IW_DP_COUNT(rx->reads);
        if (got == 0)
            return -ESHUTDOWN;                    /* orderly FIN from the peer */
        if (got < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -errno;
        }
        rx->rx_bytes += (uint64_t)got;
        IW_COUNT(qp->obj.dev, rdma_in_octets, got);
        rx->tail_last = l.kind[l.n - 1] == RXP_TAIL;
        if (l.kind[l.n - 1] == RXP_STAGE && l.iov[l.n - 1].iov_base == b->bulk)
            IW_DP_COUNT(rx->bulk_reads);
        rx->bulk = (uint64_t)got == l.asked;
        err = rx_run_layout(qp, dp, &l, (size_t)got);
        if (err)
            return err;
        /* Less than asked for: the socket was drained, and another recvmsg() would only say
         * EAGAIN (one syscall per message saved). Whoever runs the engine comes back when more
         * arrives (level-triggered epoll, or the polling consumer). */
        if ((uint64_t)got < l.asked)
            break;
    }
    return rx_consume_stage(qp, dp);
}

/* The buffers of the calling thread: the device's own on its progress thread, where most
 * engine runs happen (no __tls_get_addr), a thread-local elsewhere or if the allocation fails.
 * Never blocks. */
static struct iw_rx_bufs *rx_bufs_mine(struct iw_device *dev)
{
    if (!iw_progress_on_thread(dev))
        return &rx_bufs_tls;
    if (!dev->prog_rx_bufs)
        dev->prog_rx_bufs = calloc(1, sizeof(*dev->prog_rx_bufs));
    return dev->prog_rx_bufs ? dev->prog_rx_bufs : &rx_bufs_tls;
}

void iw_rx_bufs_free(struct iw_device *dev)
{
    free(dev->prog_rx_bufs);
    dev->prog_rx_bufs = NULL;
}

/* Reads the socket and runs what came through the deframer; every byte read is fed before it
 * returns (st_off == st_len), so the bulk buffer goes with the call. rx_owned held; never
 * blocks. */
static int rx_engine(struct iw_qp *qp, struct iw_dp *dp)
{
    struct iw_rx_bufs *b = rx_bufs_mine(qp->obj.dev);
    int err = rx_engine_reads(qp, dp, b);

    if (b->bulk) {                                /* most calls (every empty poll) have none */
        free(b->bulk);
        b->bulk = NULL;
    }
    return err;
}

int iw_rx_discard_locked(struct iw_dp *dp)
{
    /* Bounded per call: the socket is level-triggered, so a busy peer cannot hold the progress
     * thread here. */
    static char sink[65536];

    if (dp->rx.ring_owned)
        return 0;                                 /* the ring's receive reads, and drops (below) */
    for (int i = 0; i < 64; i++) {
        struct iovec v = { sink, sizeof sink };
        ssize_t n = dp->wire ? iw_wire_recv(dp->wire, dp->fd, &v, 1)
                             : iw_sys_recv(dp->fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n == 0)
            return -ESHUTDOWN;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno == EINTR ? 0 : -errno;
    }
    return 0;
}

int iw_rx_run(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    bool stopped;
    int err;

    if (!dp)
        return -ENOTCONN;
    dp_rx_own_wait(dp);
    stopped = dp->stopped;                        /* rx_owned suffices (datapath.h) */
    if (stopped && dp->discard && dp->fd >= 0)
        err = iw_rx_discard_locked(dp);   /* flushed, connection up: nothing is placed (§5.11.6) */
    else
        err = stopped || dp->fd < 0 ? -ECONNABORTED : rx_engine(qp, dp);
    if (!err && dp->rx.tx_err)
        err = dp->rx.tx_err;
    dp_rx_own_release(dp);
    return err;
}

/* Whether the ring may queue a receive now: the engine runs (or discards), the connection is
 * not tapped (wire.h: it reads through its tap only), and no consumer polls the socket. poll_on
 * is read without qp->lock: a consumer that starts polling just after finds the socket lent and
 * queues its taking back (iw_qp_set_polled), as when it starts just after an arm. rx_owned held. */
static bool rx_ring_may_arm(struct iw_qp *qp, struct iw_dp *dp)
{
    return !__atomic_load_n(&qp->poll_on, __ATOMIC_RELAXED) && dp->fd >= 0 && !dp->wire &&
           (dp->stopped ? dp->discard : dp->rx.state == DP_RX_RUN);
}

bool iw_rx_ring_arm(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    bool ok;

    dp_rx_own_wait(dp);
    ok = rx_ring_may_arm(qp, dp);
    dp->rx.ring_owned = ok;
    dp_rx_own_release(dp);
    return ok;
}

void iw_rx_ring_disown(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;

    if (!dp->rx.ring_armed)
        return;
    dp->rx.ring_armed = false;
    dp_rx_own_wait(dp);
    dp->rx.ring_owned = false;
    dp_rx_own_release(dp);
}

int iw_rx_ring_take(struct iw_qp *qp, const uint8_t *buf, int res, size_t cap, bool rearm)
{
    struct iw_dp *dp = qp->dp;
    struct dp_rx *rx = &dp->rx;
    int err;

    dp_rx_own_wait(dp);
    rx->ring_owned = false;
    if (res == -ECANCELED || res == -EINTR || res == -EAGAIN)
        err = 0;
    else if (res == 0)
        err = -ESHUTDOWN;                         /* orderly FIN from the peer */
    else if (res < 0)
        err = res;
    else if (dp->stopped)
        err = dp->discard ? iw_rx_discard_locked(dp) : -ECONNABORTED;   /* as iw_rx_run */
    else if (rx->state != DP_RX_RUN)
        err = rx->state == DP_RX_TERMINATED ? -ECONNRESET : -EBADMSG;
    else {
        IW_TSAN_WIRE_RECEIVED();                  /* the ring's read (datapath.h) */
        IW_DP_COUNT(rx->reads);
        IW_COUNT(qp->obj.dev, rdma_in_octets, res);
        rx->rx_bytes += (uint64_t)res;
        /* Read as the staging buffer would be: the next read of the engine is laid out anew. */
        rx->tail_mode = false;
        rx->tail_last = false;
        rx->bulk = (size_t)res == cap;
        err = rx_feed(qp, dp, buf, (size_t)res);
        /* A receive that took less than it could emptied the socket (rx_engine's rule). */
        if (!err && (size_t)res == cap)
            err = rx_engine(qp, dp);
    }
    if (!err && rx->tx_err)
        err = rx->tx_err;
    /* The next receive's arm, while rx_owned is held anyway (iw_rx_ring_arm would take it again). */
    rx->ring_armed = rearm && !err && rx_ring_may_arm(qp, dp);
    rx->ring_owned = rx->ring_armed;
    dp_rx_own_release(dp);
    return err;
}

int iw_rx_poll(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    bool stopped;
    int err;

    if (!dp_rx_own_try(dp))
        return 0;                                 /* the owner reads the socket right now */
    stopped = dp->stopped;                        /* rx_owned suffices (datapath.h) */
    err = stopped || dp->fd < 0 ? 0 : rx_engine(qp, dp);
    if (!err && dp->rx.tx_err)
        err = dp->rx.tx_err;
    dp_rx_own_release(dp);
    return err;
}

int iw_rx_drain(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    bool stopped;
    int err = 0;

    if (!dp)
        return 0;
    dp_rx_own_wait(dp);
    stopped = dp->stopped;                        /* rx_owned suffices (datapath.h) */
    if (!stopped && dp->fd >= 0 && dp->rx.state == DP_RX_RUN)
        err = rx_engine(qp, dp);
    else if (stopped && dp->discard && dp->fd >= 0)
        err = iw_rx_discard_locked(dp);   /* unread bytes would turn our FIN into a reset */
    dp_rx_own_release(dp);
    return err;
}

/* ---- set-up and stop, for the QP's life cycle (qp.c) ---- */

void iw_rx_init(struct iw_qp *qp, struct iw_dp *dp)
{
    struct iw_fpdu_rx_cfg cfg = { .max_ulpdu = 0, .crc = qp->params.crc, .check_seq = true };

    iw_fpdu_rx_init(&dp->rx.fr, &cfg);
    if (qp->params.rtr_read_consumed)
        dp->rx.fr.uq[IW_QN_READ_REQ].msn = 2;
}

void iw_rx_stop_locked(struct iw_qp *qp, struct iw_dp *dp)
{
    if (dp->rx.have_recv) {
        NDK_RESULT_EX r = {
            .Status = dp->rx.recv_status ? dp->rx.recv_status : STATUS_CANCELLED,
            .ProviderErrorCode = dp->rx.recv_status ? dp->rx.recv_pec : 0,
            .QPContext = qp->qp_context,
            .RequestContext = dp->rx.recv_ctx,
            .Type = NdkOperationTypeReceive,
        };
        iw_access_sgl_release(&dp->rx.recv_sgl);
        iw_cq_push(qp->rcq, &r, false);
        dp->rx.have_recv = false;
        rx_sv_recv_done(qp, r.Status);
    }
    iw_access_sgl_release(&dp->rx.wsgl);
    iw_access_sgl_release(&dp->rx.rr.src);
    dp->rx.rr_pending = false;
}
