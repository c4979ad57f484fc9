/*
 * tx.c - the transmit engine (as siw_qp_tx.c): picks the next message, frames FPDUs and writes
 * them without blocking. Talks to: fpdu.c and crc32c.c (framing), access.c (SGLs, the local
 * memory operations), qp.c (SQ retire, the one Terminate, the wish for room), cm.c (a socket
 * error from a posting thread). Run by qp.c, post.c, rx.c and poll.c.
 *
 * The TX engine is a resumable state machine (enum dp_tx_state, one transition function
 * tx_goto) owned by whoever holds dp->tx_owned (datapath.h). Kickers never wait for it:
 * iw_tx_kick sets tx_pending and tries the flag; the owner loops until tx_pending stays clear,
 * so a kick is never lost. Kicker (store tx_pending, then read the flag) and owner (release,
 * then read tx_pending) are the store-buffering pattern: each needs a full fence between its
 * store and its load (tx_kick_fence), or both may read the old value and the kick is lost (a
 * failed try orders nothing; seen as a Read Response never sent, rping's server waiting 5 s).
 * Socket writes are non-blocking sendmsg() calls straight from registered memory (header,
 * payload iovecs, trailer; several FPDUs per call); a short write just leaves the batch in
 * DP_TX_SENDING and asks the progress engine for EPOLLOUT.
 * A batch carries whole messages one after another, as tx_pick would send them, until it is
 * full (datapath.h: FPDU slots, iovecs, DP_TX_BATCH_BYTES / DP_TX_JOIN_BYTES), so queued
 * small messages share one sendmsg. It ends before a message that must not be framed ahead of
 * the write of those before it: our Terminate, a Read Response while it holds one, a Bind /
 * Fast Register / Invalidate (executed when the batch is out), a Read held by READ_FENCE or
 * ORD, and a request that fails validation (its Terminate follows the batch).
 *
 * Message choice (tx_pick, qp->lock held): our Terminate first (after the FPDU in flight: an
 * FPDU is never cut), then queued Read Responses (RFC 5040 §5.3: in request order), then the SQ
 * in posting order. Messages are never interleaved (RFC 5041 lets a sender interleave; siw refuses it).
 * SQ rules: READ_FENCE waits until every earlier Read has completed (§5.5.3); a Read waits for
 * an ORD slot (§5.11.3: excess reads queue); Bind / Fast Register / Invalidate execute when the
 * engine reaches them, so they are ordered with the transfers around them.
 * The lean path (below, issue 15 item 4): a small Send / Write that would be the next thing on
 * the wire anyway is framed and written by the posting thread itself, without the SQ.
 * Completions: Send / Write when the last byte went to TCP (RFC 5040 has no acknowledgement),
 * so after each sendmsg the batch's messages wholly written are retired, in batch order (which
 * is posting order); Read when its Response has arrived (rx.c); always retired in posting
 * order (§5.6).
 */
#include "datapath.h"
#include "wire.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "crc32c.h"

#define DP_IOV_MAX 1024   /* Linux UIO_MAXIOV */

static const char *const dp_tx_state_name[DP_TX_STATE_COUNT] = {
    [DP_TX_IDLE] = "IDLE", [DP_TX_SENDING] = "SENDING", [DP_TX_DEAD] = "DEAD",
};

/* The one TX state transition function. IDLE <-> SENDING, either -> DEAD, DEAD is final. */
static void tx_goto(struct iw_qp *qp, struct iw_dp *dp, enum dp_tx_state to)
{
    static const uint8_t ok[DP_TX_STATE_COUNT] = {
        [DP_TX_IDLE] = 1u << DP_TX_SENDING | 1u << DP_TX_DEAD | 1u << DP_TX_IDLE,
        [DP_TX_SENDING] = 1u << DP_TX_IDLE | 1u << DP_TX_DEAD | 1u << DP_TX_SENDING,
        [DP_TX_DEAD] = 1u << DP_TX_DEAD,
    };
    unsigned from = (unsigned)dp->tx.state;
    if (from >= DP_TX_STATE_COUNT || (unsigned)to >= DP_TX_STATE_COUNT || !(ok[from] & (1u << to))) {
        iw_err("QP[%u] TX transition undefined: %s => %s", qp->obj.id,
               from < DP_TX_STATE_COUNT ? dp_tx_state_name[from] : "?",
               (unsigned)to < DP_TX_STATE_COUNT ? dp_tx_state_name[to] : "?");
        to = DP_TX_DEAD;
    }
    dp->tx.state = to;
}

/* A local work request failed in a way that kills the QP (verbs semantics: a failed SQ
 * completion moves the QP to error): record its status, Terminate with RDMAP local
 * catastrophic (what siw sends when its own side moves to TERMINATE). qp->lock held. */
static void tx_fail_sqe_locked(struct iw_qp *qp, struct iw_dp *dp, uint32_t slot, NTSTATUS st, ULONG pec)
{
    struct iw_fpdu_term t;

    iw_dp_sqe(qp, slot)->status = st;
    iw_dp_sqe(qp, slot)->pec = pec;
    iw_dp_sqe(qp, slot)->failed = true;
    memset(&t, 0, sizeof t);
    t.layer = IW_TERM_LAYER_RDMAP;
    t.etype = IW_TERM_ETYPE_RDMAP_CATASTROPHIC;
    t.ecode = IW_TERM_RDMAP_UNSPECIFIED;
    iw_qp_terminate_locked(qp, &t, -EACCES);
}

/* ---- picking the next message (qp->lock held) ---- */

static uint8_t send_opcode(const struct iw_wqe *w)
{
    bool se = (w->flags & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) != 0;

    if (w->op == IW_WR_SEND_INV)
        return se ? IW_OP_SEND_SE_INV : IW_OP_SEND_INV;
    return se ? IW_OP_SEND_SE : IW_OP_SEND;
}

/* The header template of a Send / Send&Inv / Write. Only the fields of the opcode's model are
 * written (fpdu.h: iw_fpdu_put_hdr reads the opcode, last and those; tx_frame sets last and the
 * TO / MO of each segment): clearing the whole template, with its Read Request and Terminate
 * bodies, cost as much as writing the header itself. Takes the Send's MSN (RFC 5041 §5.1).
 * tx_owned held. */
static void tx_hdr_transfer(struct dp_tx *tx, const struct iw_wqe *w)
{
    if (w->op == IW_WR_WRITE) {
        tx->h.opcode = IW_OP_WRITE;
        tx->h.stag = w->remote_stag;
        tx->h.to = w->remote_addr;
    } else {
        tx->h.opcode = send_opcode(w);
        tx->h.inv_stag = w->remote_stag;
        tx->h.msn = tx->msn_send++;
    }
}

/* The source of a Send / Write: its inline copy, or its SGL resolved with the local access
 * checks (§4.4). 0, or -EACCES with *bad the failing SGE. qp->lock held. */
static int tx_sgl_source(struct iw_qp *qp, const struct iw_wqe *w, struct dp_sgl *sgl, uint32_t *bad)
{
    if (w->inline_buf || ((w->flags & NDK_OP_FLAG_INLINE) && w->length == 0)) {
        iw_access_sgl_inline(sgl, w->inline_buf, w->length);
        return 0;
    }
    return iw_access_sgl_resolve(qp, &qp->dp->tx.kc, w->sge, w->nsge, 0, sgl, bad);
}

/* Returns 1 when a message was set up in dp->tx, 0 when there is nothing to send now.
 * more: the message would join the batch being built (tx->b) behind whole messages not yet
 * written; then it returns 0 for a message that must wait for the batch (tx.c's header).
 * Recursion depth is at most 2 (a failure queues the Terminate, which the second call picks). */
static int tx_pick_locked(struct iw_qp *qp, struct iw_dp *dp, bool more);

static int tx_pick_one_locked(struct iw_qp *qp, struct iw_dp *dp, bool more)
{
    struct dp_tx *tx = &dp->tx;
    bool rresp_in = more && tx->b->has_rresp;

    if (dp->stopped)
        return 0;
    if (dp->term_pending && more)
        return 0;                                  /* the Terminate goes alone, after the batch */
    if (dp->term_pending && !dp->term_sent) {
        memset(&tx->h, 0, sizeof tx->h);
        tx->h.opcode = IW_OP_TERMINATE;
        tx->h.last = true;
        tx->h.msn = 1;                             /* the first and only message on QN 2 */
        tx->h.term = dp->term;
        tx->src = NULL;
        tx->off = tx->len = 0;
        tx->msg = DP_MSG_TERM;
        return 1;
    }
    if (dp->term_pending || (qp->state != IW_QP_RTS && qp->state != IW_QP_CLOSING))
        return 0;
    /* RFC 5044 §7.1.2: a non-P2P responder sends nothing before the first FPDU arrived (and a
     * non-P2P initiator holds its first one briefly, iw_config.first_fpdu_hold_ms). */
    if (qp->params.tx_wait_first_rx)
        return 0;

    if (rresp_in && dp->irq_count > 1)
        return 0;                                  /* the next Response waits (DP_IRQ_SLOTS) */
    if (dp->irq_count && !rresp_in) {
        struct dp_irq_ent *e = &dp->irq[dp->irq_head];
        memset(&tx->h, 0, sizeof tx->h);
        tx->h.opcode = IW_OP_READ_RESP;
        tx->h.stag = e->sink_stag;
        tx->h.to = e->sink_to;
        tx->src = &e->src;
        tx->off = 0;
        tx->len = e->size;
        tx->msg = DP_MSG_RRESP;
        return 1;
    }

    while (dp->sq_issued < qp->sq.count) {
        struct iw_wqe *w = iw_wq_at(&qp->sq, dp->sq_issued);
        uint32_t slot = iw_wq_slot(&qp->sq, dp->sq_issued);
        struct dp_sqe *s = iw_dp_sqe(qp, slot);
        uint32_t bad;

        if ((w->flags & NDK_OP_FLAG_READ_FENCE) && dp->orq_count)
            return 0;                              /* §5.5.3: wait for earlier reads */
        if (w->op == IW_WR_READ && dp->orq_count >= dp->ord)
            return 0;                              /* ORD reached: queue (RFC 5040 §5.3) */

        switch (w->op) {
        case IW_WR_BIND:
        case IW_WR_FAST_REGISTER:
        case IW_WR_INVALIDATE:
            if (more)
                return 0;                          /* after the transfers before it are out */
            s->status = w->op == IW_WR_BIND ? iw_access_exec_bind(qp, w)
                      : w->op == IW_WR_FAST_REGISTER ? iw_access_exec_fast_register(qp, w)
                      : iw_access_exec_invalidate(qp, w);
            dp->sq_issued++;
            if (s->status != STATUS_SUCCESS) {
                tx_fail_sqe_locked(qp, dp, slot, s->status, IW_PEC(IW_PEC_POSTED, 0, 0, 0));
                return tx_pick_locked(qp, dp, more); /* sets up the Terminate */
            }
            /* The token is invalid now, but a Write that passed its check may still be placing
             * bytes: the completion tells the consumer the memory is its own again. */
            if (w->op == IW_WR_INVALIDATE && iw_mem_inval_wait(qp, w->mem)) {
                s->state = DP_SQE_WAIT_MEM;
                continue;
            }
            s->state = DP_SQE_DONE;
            iw_qp_sq_retire_locked(qp);
            continue;
        case IW_WR_READ:
            if (iw_access_sgl_resolve(qp, &dp->tx.kc, w->sge, w->nsge, DP_ACC_LOCAL_WRITE, &s->sgl, &bad) < 0) {
                dp->sq_issued++;
                tx_fail_sqe_locked(qp, dp, slot, STATUS_ACCESS_VIOLATION, IW_PEC(IW_PEC_POSTED, 0, 0, bad));
                return tx_pick_locked(qp, dp, more);
            }
            memset(&tx->h, 0, sizeof tx->h);
            tx->h.opcode = IW_OP_READ_REQ;
            tx->h.last = true;
            tx->h.msn = tx->msn_rreq++;
            /* RFC 5040 §4.4: the sink STag / TO label our sink; we place the Response by the SGL
             * we keep in the ORQ (adapter.c: RDMA_READ_SINK_NOT_REQUIRED), so the first SGE's
             * token and address serve. Never STag 0 on the wire (Chelsio drops it). */
            tx->h.rr.sink_stag = w->nsge && w->sge[0].MemoryRegionToken ? w->sge[0].MemoryRegionToken : 0x100u;
            tx->h.rr.sink_to = w->nsge ? (uint64_t)(uintptr_t)w->sge[0].VirtualAddress : 0;
            tx->h.rr.size = (uint32_t)w->length;
            tx->h.rr.src_stag = w->remote_stag;
            tx->h.rr.src_to = w->remote_addr;
            /* Into the ORQ before the request leaves, so its Response always finds it. */
            {
                struct dp_orq_ent *o = &dp->orq[iw_dp_ring_index(dp->orq_head, dp->orq_count, dp->orq_cap)];
                o->slot = slot;
                o->sink_stag = tx->h.rr.sink_stag;
                o->sink_to = tx->h.rr.sink_to;
                o->size = tx->h.rr.size;
                o->got = 0;
                dp->orq_count++;
            }
            s->state = DP_SQE_WAIT_RESP;
            tx->src = NULL;
            tx->off = tx->len = 0;
            break;
        case IW_WR_SEND:
        case IW_WR_SEND_INV:
        case IW_WR_WRITE:
            if (tx_sgl_source(qp, w, &s->sgl, &bad) < 0) {
                dp->sq_issued++;
                tx_fail_sqe_locked(qp, dp, slot, STATUS_ACCESS_VIOLATION, IW_PEC(IW_PEC_POSTED, 0, 0, bad));
                return tx_pick_locked(qp, dp, more);
            }
            tx_hdr_transfer(tx, w);
            s->state = DP_SQE_ACTIVE;
            tx->src = &s->sgl;
            tx->off = 0;
            tx->len = s->sgl.total;
            break;
        default:
            dp->sq_issued++;
            tx_fail_sqe_locked(qp, dp, slot, STATUS_INVALID_PARAMETER, IW_PEC(IW_PEC_POSTED, 0, 0, 0));
            return tx_pick_locked(qp, dp, more);
        }
        tx->slot = slot;
        tx->msg = DP_MSG_SQ;
        dp->sq_issued++;
        return 1;
    }
    return 0;
}

/* tx_pick_one_locked, noting whether anything else was waiting (dp_tx.more_hint). */
static int tx_pick_locked(struct iw_qp *qp, struct iw_dp *dp, bool more)
{
    /* Nothing queued (the usual look after a batch, tx_retire's prepick): every way
     * tx_pick_one_locked finds a message needs one of these, and the full look cost as much
     * as framing a small message. */
    if (!dp->term_pending && !dp->irq_count && dp->sq_issued == qp->sq.count) {
        dp->tx.more_hint = false;
        return 0;
    }
    int r = tx_pick_one_locked(qp, dp, more);

    dp->tx.more_hint = r && (dp->sq_issued < qp->sq.count || dp->term_pending ||
                             dp->irq_count > (dp->tx.msg == DP_MSG_RRESP ? 1u : 0u));
    return r;
}

/* The pick of the IDLE state. A Terminate (ours or the peer's) ends the stream at this FPDU
 * boundary: the rest of the current message is abandoned (its request is flushed). qp->lock
 * held. */
static int tx_idle_pick_locked(struct iw_qp *qp, struct iw_dp *dp)
{
    struct dp_tx *tx = &dp->tx;

    if (dp->term_pending && tx->msg != DP_MSG_TERM)
        tx->msg = DP_MSG_NONE;
    if (tx->msg != DP_MSG_NONE) {
        tx->more_hint = true;                      /* the rest of a message: look on after it */
        return 1;
    }
    return tx_pick_locked(qp, dp, false);
}

/* ---- building a batch of FPDUs ---- */

/* Batches are built here, the thread's (the progress thread's is its device's, tx_batch_mine),
 * not in each QP (5.5 KB per connection otherwise): a
 * batch the socket takes whole never needs more, and one it does not moves to the QP
 * (tx_keep). Nothing the engine calls runs another QP's TX engine on this thread. */
static __thread struct dp_tx_batch tx_thread_batch;

/* The socket left part of the batch: it moves to the QP's own copy, the iovecs that point to
 * its headers and trailers with it. The copy's storage stays with the QP until it stops: a
 * connection that fills its socket once does so on every large message, and a malloc and free
 * per full socket would sit on the data path. Only the parts in use are copied (a batch of a
 * few small messages uses a fraction of it). -ENOMEM when there is no memory. tx_owned held. */
static int tx_keep(struct dp_tx *tx)
{
    struct dp_tx_batch *b = tx->b, *k;
    uintptr_t lo = (uintptr_t)b, hi = lo + sizeof(*b);

    if (tx->kept && b == tx->kept)
        return 0;
    if (!tx->kept)
        tx->kept = malloc(sizeof(*tx->kept));
    if (!tx->kept)
        return -ENOMEM;
    k = tx->kept;
    memcpy(&k->iov[tx->iovpos], &b->iov[tx->iovpos], sizeof b->iov[0] * (size_t)(tx->iovcnt - tx->iovpos));
    memcpy(k->hdr, b->hdr, sizeof b->hdr[0] * (size_t)b->nfpdu);
    memcpy(k->trl, b->trl, sizeof b->trl[0] * (size_t)b->nfpdu);
    memcpy(k->m, b->m, sizeof b->m[0] * (size_t)b->nmsg);
    k->nfpdu = b->nfpdu;
    k->nmsg = b->nmsg;
    k->mdone = b->mdone;
    k->has_rresp = b->has_rresp;
    for (int i = tx->iovpos; i < tx->iovcnt; i++) {
        uintptr_t a = (uintptr_t)b->iov[i].iov_base;
        if (a >= lo && a < hi)
            k->iov[i].iov_base = (uint8_t *)k + (a - lo);
    }
    tx->b = k;
    return 0;
}

/* The QP stops: its copy goes. All engine locks held. */
static void tx_unkeep(struct dp_tx *tx)
{
    free(tx->kept);
    tx->kept = NULL;
    tx->b = NULL;
}

/* The header of the current message's segment at tx->off with seg payload bytes, into buf
 * (cap bytes). Returns its length or -errno. Inlined, as is tx_seg_trl: a batch of small
 * messages pays for them once per message. Engine-private (tx_owned). */
static inline __attribute__((always_inline)) int tx_seg_hdr(struct iw_qp *qp, struct dp_tx *tx, uint64_t seg, uint8_t *buf, size_t cap)
{
    int hl = iw_fpdu_put_seg_hdr(&tx->h, tx->off + seg == tx->len, tx->off, (size_t)seg, buf, cap);

    if (hl < 0)
        iw_err("QP[%u] cannot frame %s: %d", qp->obj.id, iw_fpdu_opcode_name(tx->h.opcode), hl);
    return hl;
}

/* The trailer (pad, CRC) of a segment whose header hdr (hl bytes) carries seg payload bytes in
 * pay[0..np), into trl (cap bytes); the CRC (RFC 5044 §4) when it was negotiated. Returns its
 * length or -errno. Engine-private (tx_owned). */
static inline __attribute__((always_inline)) int tx_seg_trl(const struct iw_dp *dp, const uint8_t *hdr, int hl,
                                                            uint64_t seg, const struct iovec *pay, int np,
                                                            uint8_t *trl, size_t cap)
{
    uint32_t crc = 0;

    if (dp->crc) {
        crc = iw_crc32c_update(iw_crc32c_init(), hdr, (size_t)hl);
        for (int i = 0; i < np; i++)
            crc = iw_crc32c_update(crc, pay[i].iov_base, pay[i].iov_len);
    }
    return iw_fpdu_put_trailer((uint32_t)(hl - IW_MPA_LEN_SIZE + seg), dp->crc, crc, trl, cap);
}

#define DP_TX_MSS_EVERY 8u         /* first interval, and again after the MSS changed */
#define DP_TX_MSS_EVERY_MAX 1024u  /* a connection whose MSS settled reads it this seldom */

/* Sizes segments by the socket's MSS as it is now (RFC 5044 §4: EMSS is the TCP send
 * MSS, which siw reads before every message). Linux caps it at half the largest window the peer
 * has offered so far, so the value read at establishment is often far below what the path
 * carries (32 KiB of 64 KiB on loopback): a 1 MiB message then costs the receiver twice the
 * reads. Only between messages, so every segment of one message has the same size (the
 * receiver lays Read Responses out by it, rx.c). The MSS settles early in a connection, so the
 * interval doubles while it stays the same: a stream of 64 KiB messages (two segments each)
 * would otherwise pay a system call every few hundred KiB. A socket without an MSS (a socket
 * pair in the tests) keeps the size it had. Engine-private (tx_owned); a system call. */
static void tx_mss_refresh(struct iw_dp *dp)
{
    struct dp_tx *tx = &dp->tx;
    uint32_t was = tx->mulpdu;
    int mss = 0;
    socklen_t len = sizeof mss;

    tx->mss_reads++;
    if (getsockopt(dp->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) == 0 && mss > 0) {
        uint32_t m = iw_fpdu_mulpdu((uint32_t)mss, false);
        if (m >= IW_FPDU_READ_REQ_HDR_LEN + 4)
            tx->mulpdu = m;
    }
    if (tx->mulpdu != was)
        tx->mss_every = DP_TX_MSS_EVERY;
    else if (tx->mss_every < DP_TX_MSS_EVERY_MAX)
        tx->mss_every *= 2;
    tx->mss_countdown = tx->mss_every;
}

/* Frames segments of the current message into the batch until its last one is in (returns 1)
 * or the batch is full (0: the message goes on in the next batch), else -errno. Records the
 * message's part in the batch. Inlined into tx_build, which runs it once per message.
 * Engine-private (tx_owned). */
static inline __attribute__((always_inline)) int tx_frame(struct iw_qp *qp, struct iw_dp *dp, int *nf)
{
    struct dp_tx *tx = &dp->tx;
    struct dp_tx_batch *b = tx->b;
    uint32_t maxpay = iw_fpdu_max_payload(tx->h.opcode, tx->mulpdu);
    int first = *nf;
    bool last = false;

    if (tx->off == 0 && tx->len > maxpay && --tx->mss_countdown == 0) {
        tx_mss_refresh(dp);
        maxpay = iw_fpdu_max_payload(tx->h.opcode, tx->mulpdu);
    }

    while (*nf < DP_TX_MAX_FPDUS) {
        uint64_t seg = tx->len - tx->off;
        int room = DP_TX_MAX_IOV - tx->iovcnt - 2;
        uint64_t mapped = 0;
        int np = 0;

        if (seg > maxpay)
            seg = maxpay;
        if (*nf && tx->batch_bytes + seg + IW_FPDU_MAX_BUFFERED + sizeof b->trl[0] > DP_TX_BATCH_BYTES)
            break;
        if (room < 0)
            break;
        if (seg) {
            if (room == 0)
                break;
            np = iw_access_sgl_iov(tx->src, tx->off, seg, &b->iov[tx->iovcnt + 1], room, &mapped);
            if (mapped == 0)
                break;                             /* out of iovecs: next batch */
            seg = mapped;                          /* a shorter segment is fine (RFC 5041 §5) */
        }
        int hl = tx_seg_hdr(qp, tx, seg, b->hdr[*nf], sizeof b->hdr[*nf]);
        if (hl < 0)
            return hl;
        b->iov[tx->iovcnt].iov_base = b->hdr[*nf];
        b->iov[tx->iovcnt].iov_len = (size_t)hl;
        int tl = tx_seg_trl(dp, b->hdr[*nf], hl, seg, &b->iov[tx->iovcnt + 1], np, b->trl[*nf], sizeof b->trl[*nf]);
        if (tl < 0)
            return tl;
        tx->iovcnt += 1 + np;
        b->iov[tx->iovcnt].iov_base = b->trl[*nf];
        b->iov[tx->iovcnt].iov_len = (size_t)tl;
        tx->iovcnt++;
        tx->batch_bytes += iw_mpa_fpdu_len((uint32_t)(hl - IW_MPA_LEN_SIZE + seg));
        tx->off += seg;
        (*nf)++;
        if (tx->off == tx->len) {
            last = true;
            break;
        }
    }
    if (*nf > first) {
        struct dp_tx_bmsg *m = &b->m[b->nmsg++];
        m->slot = tx->slot;
        m->iov_end = (uint16_t)tx->iovcnt;
        m->msg = (uint8_t)tx->msg;
        m->last = last;
        if (tx->msg == DP_MSG_RRESP)
            b->has_rresp = true;
    }
    return last ? 1 : 0;
}

/* The batch storage of the calling thread: the device's own on its progress thread (no
 * __tls_get_addr), the thread-local elsewhere or if the allocation fails. Never blocks. */
static struct dp_tx_batch *tx_batch_mine(struct iw_device *dev)
{
    if (!iw_progress_on_thread(dev))
        return &tx_thread_batch;
    if (!dev->prog_tx_batch)
        dev->prog_tx_batch = malloc(sizeof(*dev->prog_tx_batch));
    return dev->prog_tx_batch ? dev->prog_tx_batch : &tx_thread_batch;
}

void iw_tx_batch_free(struct iw_device *dev)
{
    free(dev->prog_tx_batch);
    dev->prog_tx_batch = NULL;
}

/* Starts an empty batch in the thread's storage (the last batch is out). tx_owned held. */
static void tx_batch_begin(struct iw_qp *qp, struct dp_tx *tx)
{
    tx->b = tx_batch_mine(qp->obj.dev);
    tx->b->nmsg = tx->b->mdone = 0;
    tx->b->has_rresp = false;
    tx->iovcnt = tx->iovpos = 0;
    tx->batch_bytes = 0;
}

/* Closes a batch of nf FPDUs. tx_owned held. */
static void tx_batch_end(struct iw_qp *qp, struct dp_tx *tx, int nf)
{
    tx->b->nfpdu = nf;
    IW_COUNT(qp->obj.dev, rdma_out_frames, nf);
}

/* Builds the next batch in the thread's storage: the current message, then (while there is
 * room) the messages tx_pick chooses after it. Engine-private (tx_owned); takes qp->lock. */
static int tx_build(struct iw_qp *qp, struct iw_dp *dp)
{
    struct dp_tx *tx = &dp->tx;
    int nf = 0;

    tx_batch_begin(qp, tx);
    for (;;) {
        int r = tx_frame(qp, dp, &nf);
        if (r < 0)
            return r;
        if (r == 0)
            break;                                 /* full: the message goes on next time */
        bool rresp = tx->msg == DP_MSG_RRESP;
        bool more = tx->msg != DP_MSG_TERM && nf < DP_TX_MAX_FPDUS && DP_TX_MAX_IOV - tx->iovcnt >= 3 &&
                    tx->batch_bytes < DP_TX_JOIN_BYTES;
        int picked = 0;
        tx->msg = DP_MSG_NONE;                     /* framed whole; the batch retires it */
        if (!tx->more_hint)
            more = false;
        if (!rresp && !more)
            break;
        iw_lock_take(&qp->lock);
        if (rresp)
            dp->rresp_last_out = true;
        if (more)
            picked = tx_pick_locked(qp, dp, true);
        iw_lock_give(&qp->lock);
        if (!picked)
            break;
    }
    if (nf == 0)
        return -ENOBUFS;                           /* cannot happen: one FPDU always fits */
    tx_batch_end(qp, tx, nf);
    return 0;
}

/* Retires the batch's messages whose last byte went to TCP, in batch order; once the batch
 * is out whole, also makes the IDLE state's pick (dp_tx.prepick). qp->lock NOT held; takes it.
 * Engine-private (tx_owned). */
static void tx_retire(struct iw_qp *qp, struct iw_dp *dp)
{
    struct dp_tx *tx = &dp->tx;
    struct dp_tx_batch *b = tx->b;
    struct dp_sgl drop;
    bool sq = false;

    if (b->mdone >= b->nmsg || b->m[b->mdone].iov_end > tx->iovpos)
        return;
    drop.n = 0;
    iw_lock_take(&qp->lock);
    while (b->mdone < b->nmsg && b->m[b->mdone].iov_end <= tx->iovpos) {
        const struct dp_tx_bmsg *m = &b->m[b->mdone++];
        struct dp_sqe *s;

        if (!m->last)
            continue;                              /* more segments in the next batch */
        switch (m->msg) {
        case DP_MSG_SQ:
            /* A Read may have had its Response and gone meanwhile (rx.c), its slot with it. */
            s = iw_wq_slot_queued(&qp->sq, m->slot) ? iw_dp_sqe(qp, m->slot) : NULL;
            if (s && s->state == DP_SQE_ACTIVE) {
                ndk_sv_add(&qp->svq->bytes_out, s->sgl.total);   /* TX engine: the one writer */
                ndk_sv_add(&qp->svq->ops_out, 1);
                /* A failure recorded meanwhile (the peer's Terminate named this request) stays. */
                s->state = DP_SQE_DONE;
                if (!s->failed)
                    s->status = STATUS_SUCCESS;
                sq = true;
            }
            break;
        case DP_MSG_RRESP:
            ndk_sv_add(&qp->svq->bytes_out, dp->irq[dp->irq_head].size);
            ndk_sv_add(&qp->svq->ops_out, 1);
            drop = dp->irq[dp->irq_head].src;
            memset(&dp->irq[dp->irq_head], 0, sizeof dp->irq[0]);
            dp->irq_head = iw_dp_ring_index(dp->irq_head, 1, dp->irq_slots);
            dp->irq_count--;
            dp->rresp_last_out = false;
            break;
        case DP_MSG_TERM:
            dp->term_sent = true;
            tx_goto(qp, dp, DP_TX_DEAD);           /* RFC 5040 §5.3: nothing after a Terminate */
            break;
        default:
            break;
        }
    }
    if (sq)
        iw_qp_sq_retire_locked(qp);
    if (tx->iovpos == tx->iovcnt && tx->state != DP_TX_DEAD)
        tx->prepick = (int8_t)tx_idle_pick_locked(qp, dp);
    iw_lock_give(&qp->lock);
    iw_access_sgl_release(&drop);
}

/* A batch this small is copied into one buffer and written with send(): the kernel then copies
 * one user buffer instead of importing an iovec array and copying each piece (for an 8-byte
 * message, header, payload and trailer), which in a busy-polled ping-pong over loopback costs
 * about 3% of the one-way latency. */
#define DP_TX_LINEAR_MAX 256u

#ifdef IW_TSAN
char iw_tx_tsan_wire;                              /* datapath.h */
#endif

/* One contiguous buffer to the socket, without waiting. */
static ssize_t tx_send_buf(const struct iw_dp *dp, const void *buf, size_t len)
{
    IW_TSAN_WIRE_SENT();
    if (__builtin_expect(dp->wire != NULL, 0)) {   /* capture / faults (wire.h) */
        struct iovec v = { (void *)buf, len };
        return iw_wire_send(dp->wire, dp->fd, &v, 1, true);
    }
    return iw_sys_send(dp->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* One socket write of what is left of the batch: send() of a copy when it is small and in
 * several pieces, else sendmsg() straight from the iovecs. */
static ssize_t tx_send(struct iw_dp *dp)
{
    struct dp_tx *tx = &dp->tx;
    const struct iovec *v = &tx->b->iov[tx->iovpos];
    size_t cnt = (size_t)(tx->iovcnt - tx->iovpos);

    if (cnt > 1 && cnt <= 8 && tx->batch_bytes <= DP_TX_LINEAR_MAX) {
        uint8_t lin[DP_TX_LINEAR_MAX];
        size_t len = 0;
        for (size_t i = 0; i < cnt; i++) {
            if (v[i].iov_len > sizeof lin - len)
                goto gather;                       /* cannot happen: the batch holds them all */
            memcpy(lin + len, v[i].iov_base, v[i].iov_len);
            len += v[i].iov_len;
        }
        return tx_send_buf(dp, lin, len);
    }
gather:;
    struct msghdr m = { .msg_iov = (struct iovec *)v, .msg_iovlen = cnt < DP_IOV_MAX ? cnt : DP_IOV_MAX };
    IW_TSAN_WIRE_SENT();
    if (__builtin_expect(dp->wire != NULL, 0))
        return iw_wire_send(dp->wire, dp->fd, v, m.msg_iovlen, true);
    return iw_sys_sendmsg(dp->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Accounts one socket write (n: what send / sendmsg returned): 0 when it took bytes, -EINTR to
 * write again, -EAGAIN when the socket is full, else -errno. Engine-private (tx_owned). */
static int tx_wrote(struct iw_qp *qp, ssize_t n)
{
    IW_DP_COUNT(qp->dp->tx.writes);
    if (n < 0) {
        if (errno == EINTR)
            return -EINTR;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return -EAGAIN;
        return -errno;
    }
    IW_COUNT(qp->obj.dev, rdma_out_octets, n);
    return 0;
}

/* Moves the batch past n written bytes: a short write resumes inside an iovec. Engine-private
 * (tx_owned). */
static void tx_advance(struct dp_tx *tx, size_t n)
{
    while (n && tx->iovpos < tx->iovcnt) {
        struct iovec *v = &tx->b->iov[tx->iovpos];
        if (n >= v->iov_len) {
            n -= v->iov_len;
            tx->iovpos++;
        } else {
            v->iov_base = (uint8_t *)v->iov_base + n;
            v->iov_len -= n;
            n = 0;
        }
    }
    while (tx->iovpos < tx->iovcnt && tx->b->iov[tx->iovpos].iov_len == 0)
        tx->iovpos++;
}

/* Writes what is left of the batch, retiring messages as they are out. 0 = all written,
 * -EAGAIN = socket full, else -errno. Engine-private (tx_owned). */
static int tx_write(struct iw_qp *qp, struct iw_dp *dp)
{
    struct dp_tx *tx = &dp->tx;

    while (tx->iovpos < tx->iovcnt) {
        ssize_t n = tx_send(dp);
        int err = tx_wrote(qp, n);
        if (err == -EINTR)
            continue;
        if (err < 0)
            return err;
        tx_advance(tx, (size_t)n);
        tx_retire(qp, dp);
    }
    return 0;
}

/* The SENDING state after tx_write (its result err): 1 when the batch is out (IDLE again), 0
 * when the socket is full (the batch is kept, and the engine waits for room), else a fatal
 * -errno (DEAD). tx_owned held. */
static int tx_sent(struct iw_qp *qp, struct iw_dp *dp, int err)
{
    struct dp_tx *tx = &dp->tx;

    if (err == -EAGAIN && tx_keep(tx) < 0) {
        iw_err("QP[%u] no memory to keep a batch the socket did not take", qp->obj.id);
        err = -ENOMEM;
    } else if (err == -EAGAIN) {
        iw_poll_tx_blocked(dp, true);
        if (!tx->want_out) {
            tx->want_out = true;
            iw_qp_want_writable(qp, true);
        }
        return 0;
    }
    if (err < 0) {
        tx_goto(qp, dp, DP_TX_DEAD);
        return err;
    }
    tx->b = NULL;                                  /* out; tx_build takes the thread's next */
    iw_poll_tx_blocked(dp, false);
    if (tx->state == DP_TX_DEAD)
        return -EPROTO;                            /* our Terminate is out: the CM aborts */
    tx_goto(qp, dp, DP_TX_IDLE);
    return 1;
}

/* The engine proper: runs until idle, blocked or dead. tx_owned held. Returns 0 or a fatal
 * socket error (-errno). */
static int tx_engine(struct iw_qp *qp, struct iw_dp *dp)
{
    struct dp_tx *tx = &dp->tx;
    int err;

    for (;;) {
        switch (tx->state) {
        case DP_TX_DEAD:
            return 0;
        case DP_TX_SENDING:
            err = tx_sent(qp, dp, tx_write(qp, dp));
            if (err <= 0)
                return err;
            continue;
        case DP_TX_IDLE: {
            int picked = tx->prepick;
            tx->prepick = -1;
            if (picked < 0) {
                iw_lock_take(&qp->lock);
                picked = tx_idle_pick_locked(qp, dp);
                iw_lock_give(&qp->lock);
            }
            if (!picked) {
                if (tx->want_out) {
                    tx->want_out = false;
                    iw_qp_want_writable(qp, false);
                }
                return 0;
            }
            err = tx_build(qp, dp);
            if (err < 0) {
                tx_goto(qp, dp, DP_TX_DEAD);
                return err;
            }
            tx_goto(qp, dp, DP_TX_SENDING);
            continue;
        }
        default:
            tx_goto(qp, dp, DP_TX_DEAD);
            return -ENOTRECOVERABLE;
        }
    }
}

/* The fence of the file's header: between a kicker's store of tx_pending and its try, and
 * between an owner's release and its look at tx_pending. */
static inline void tx_kick_fence(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}

/* Returns the first fatal error seen (the caller reports it to the CM without locks). */
int iw_tx_run(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    struct dp_tx *tx;
    int ret = 0;

    if (!dp)
        return 0;
    tx = &dp->tx;
    atomic_store_explicit(&dp->tx_pending, true, memory_order_relaxed);
    tx_kick_fence();
    while (atomic_load_explicit(&dp->tx_pending, memory_order_relaxed)) {
        if (!dp_tx_own_try(dp))
            return ret;                            /* the owner will see tx_pending */
        atomic_store_explicit(&dp->tx_pending, false, memory_order_relaxed);
        /* A stopped engine is DEAD (iw_qp_stop holds tx_owned) or never sent (a failed
         * establishment: its picks find dp->stopped), so no check of dp->stopped here. */
        tx->prepick = -1;
        int err = tx_engine(qp, dp);
        dp_tx_own_release(dp);
        tx_kick_fence();
        if (err < 0 && !ret)
            ret = err;
    }
    return ret;
}

int iw_tx_poll(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;
    bool ready;

    if (!dp || !dp_tx_own_try(dp))
        return 0;                                  /* the owner runs it */
    struct pollfd pf = { .fd = dp->fd, .events = POLLOUT };
    /* An error or a hang-up makes poll() return too: the engine's write then reports it. */
    ready = dp->tx.state != DP_TX_SENDING || dp->fd < 0 || poll(&pf, 1, 0) != 0;
    dp_tx_own_release(dp);
    /* A kick that found tx_owned ours waits in tx_pending, as for any owner (iw_tx_run). */
    if (!ready)
        tx_kick_fence();
    if (ready || atomic_load_explicit(&dp->tx_pending, memory_order_relaxed))
        return iw_tx_run(qp);
    return 0;
}

/* A fatal socket error of a run from a posting or progress thread goes to the CM. No lock held. */
static void tx_report(struct iw_qp *qp, int err)
{
    if (err < 0) {
        iw_dbg("QP[%u] TX socket error %d", qp->obj.id, err);
        iw_cm_connection_failed(qp, err);
    }
}

void iw_tx_kick(struct iw_qp *qp)
{
    tx_report(qp, iw_tx_run(qp));
}

/* ---- the lean path: a small Send or Write written by the posting thread itself ----
 *
 * Issue 15 item 4. The ordinary path queues a request, then runs the engine, which picks it
 * back from the SQ, frames it, writes it, retires it through the SQ and looks for more: three
 * qp->lock round trips and the WQE pushed and dropped again, about three times the work of
 * framing and writing an 8-byte message. When the request could only be the next thing on the
 * wire anyway (nothing outstanding on the SQ, nothing the engine must send first, the engine
 * idle and ours), post_sq hands it here instead. It is framed as one FPDU straight into one
 * buffer, the bytes the engine would write for it (same header, MSN, CRC, counters), and
 * written with one send(); when the socket takes it whole it completes at once, never having
 * been on the SQ. Otherwise it becomes what the ordinary path would have made of it
 * (tx_lean_handover). */

bool iw_tx_lean_claim_locked(struct iw_qp *qp, const struct iw_wqe *w, struct dp_sgl *sgl)
{
    struct iw_dp *dp = qp->dp;
    struct dp_tx *tx = &dp->tx;
    uint32_t bad;

    if ((w->op != IW_WR_SEND && w->op != IW_WR_SEND_INV && w->op != IW_WR_WRITE) || (w->flags & NDK_OP_FLAG_DEFER) ||
        w->length > tx->lean_max)
        return false;
    /* Nothing outstanding on the SQ, so a completion pushed now is in posting order (§5.6), and
     * nothing to go first: our Terminate (RFC 5040 §5.3: nothing after it), a Read Response
     * (RFC 5040 §5.3: in request order), the first-FPDU hold (RFC 5044 §7.1.2). */
    if (qp->sq.count || dp->term_pending || dp->term_sent || dp->irq_count || qp->params.tx_wait_first_rx)
        return false;
    /* A try never waits, so taking tx_owned inside qp->lock here cannot deadlock with the
     * engine, which takes them the other way round. Someone else's engine: the ordinary way. */
    if (!dp_tx_own_try(dp))
        return false;
    /* The engine idle: no batch or message in progress, not waiting for room. A bad SGL is left
     * to tx_pick, which fails it as it always has (its Terminate, its completion). A kick that
     * came while we held tx_owned is served by the ordinary path's own kick (no DEFER here). */
    if (tx->state != DP_TX_IDLE || tx->msg != DP_MSG_NONE || tx->want_out ||
        atomic_load_explicit(&dp->tx_blocked, memory_order_relaxed) || tx_sgl_source(qp, w, sgl, &bad) < 0) {
        dp_tx_own_release(dp);
        return false;
    }
    tx->slot = iw_wq_slot(&qp->sq, 0);             /* where post_sq reserved it room */
    return true;
}

/* The lean message is out whole, or cannot be handed over: its memory references go first,
 * then its completion (§5.10: a consumer that deregisters right after it must not find the
 * region still in use; §5.5.2: none for a successful SILENT_SUCCESS request). tx_owned held,
 * qp->lock not held (takes cq->lock). Flattened (the CQ's push inlined), as rx_frame_send is. */
static __attribute__((flatten)) void tx_lean_complete(struct iw_qp *qp, struct iw_wqe *w, struct dp_sgl *sgl,
                                                      NTSTATUS st)
{
    NDK_RESULT_EX r = {
        .Status = st,
        .QPContext = qp->qp_context,
        .RequestContext = w->request_context,
        .Type = iw_wr_type(w->op),
    };
    bool report = !(st == STATUS_SUCCESS && (w->flags & NDK_OP_FLAG_SILENT_SUCCESS));

    /* The system view: no other SQ completion can run now (iw_qp.svq). The error word is the
     * RX completions' too, so a failure (never on the lean path's way) counts under qp->lock. */
    ndk_sv_add(&qp->svq->sq_completed, 1);
    if (st == STATUS_SUCCESS) {
        ndk_sv_add(&qp->svq->bytes_out, sgl->total);
        ndk_sv_add(&qp->svq->ops_out, 1);
    } else {
        iw_lock_take(&qp->lock);
        ndk_sv_add(&qp->svq->errors, 1);
        iw_lock_give(&qp->lock);
    }
    iw_access_sgl_release(sgl);
    if (w->inline_buf)
        iw_wq_entry_release(w);                    /* all a Send / Write WQE owns (post.c) */
    if (report)
        iw_cq_push(qp->icq, &r, false);
}

/* The lean message as one FPDU in buf (cap bytes), the bytes tx_frame would put in a batch
 * for it: its header, its payload copied, pad and CRC. Returns the FPDU's length, 0 when its
 * source needs more pieces than a small message may have (the engine frames it), or -errno.
 * tx_owned held. Flattened (the header's encoding inlined), as rx_frame_send is. */
static __attribute__((flatten)) int tx_lean_frame(struct iw_qp *qp, struct iw_dp *dp, uint8_t *buf, size_t cap)
{
    struct dp_tx *tx = &dp->tx;
    struct iovec pay[2 * IW_MAX_SGE];              /* an SGE crosses at most one page boundary */
    uint64_t mapped = 0;
    int np = 0, hl, tl;

    if (tx->len) {
        np = iw_access_sgl_iov(tx->src, 0, tx->len, pay, (int)(sizeof pay / sizeof pay[0]), &mapped);
        if (mapped < tx->len)
            return 0;
    }
    /* A Send is one segment here (lean_max, iw_tx_lean_claim_locked): its header needs none of
     * the general writer's checks. */
    if (tx->h.opcode != IW_OP_WRITE && cap >= IW_FPDU_UNTAGGED_HDR_LEN)
        hl = iw_fpdu_put_send_hdr(tx->h.opcode, tx->h.inv_stag, tx->h.msn, tx->len, buf);
    else
        hl = tx_seg_hdr(qp, tx, tx->len, buf, cap);
    if (hl < 0)
        return hl;
    uint8_t *p = buf + hl;
    for (int i = 0; i < np; i++) {
        iw_copy(p, pay[i].iov_base, pay[i].iov_len);
        p += pay[i].iov_len;
    }
    tl = tx_seg_trl(dp, buf, hl, tx->len, pay, np, p, cap - (size_t)(p - buf));
    if (tl < 0)
        return tl;
    return (int)(p - buf) + tl;
}

/* The socket did not take the lean message whole (len: tx_lean_frame's result; when it is
 * positive, n and err: its write's): it becomes what the ordinary path would have made of it,
 * SQ entry 0 being sent. The engine frames it into a batch again (the same bytes: the header
 * template and its MSN are kept), skips what the socket took, and goes on in SENDING with the
 * rest (kept by tx_keep while the socket is full), so nothing is lost or reordered and it
 * completes through tx_retire. Returns the engine's result. tx_owned held. */
static int tx_lean_handover(struct iw_qp *qp, struct iw_dp *dp, struct iw_wqe *w, struct dp_sgl *sgl, int len,
                            ssize_t n, int err)
{
    struct dp_tx *tx = &dp->tx;
    struct dp_sqe *s = NULL;
    int nf = 0, framed;

    tx->lean_short++;
    iw_lock_take(&qp->lock);
    /* Cannot fail: post_sq reserved the slot under qp->lock, and an empty SQ has nothing to pop
     * while only this thread posts (§5.4). */
    w->posted_ns = iw_sv_now();                    /* queued after all: outstanding */
    if (iw_wq_push(&qp->sq, w) == 0) {
        ndk_sv_set(&qp->svq->sq_oldest_ns, iw_wq_at(&qp->sq, 0)->posted_ns);
        s = iw_dp_sqe(qp, tx->slot);
        s->sgl.n = sgl->n;
        s->sgl.total = sgl->total;
        memcpy(s->sgl.e, sgl->e, sizeof sgl->e[0] * sgl->n);
        s->state = DP_SQE_ACTIVE;
        dp->sq_issued++;
    }
    iw_lock_give(&qp->lock);
    if (!s) {
        iw_err("QP[%u] no SQ slot for a message partly written", qp->obj.id);
        tx_lean_complete(qp, w, sgl, STATUS_INSUFFICIENT_RESOURCES);
        tx_goto(qp, dp, DP_TX_DEAD);               /* the stream may hold part of an FPDU */
        return -ENOMEM;
    }
    tx->src = &s->sgl;
    tx->off = 0;
    tx_batch_begin(qp, tx);
    framed = tx_frame(qp, dp, &nf);
    if (framed < 0) {
        tx_goto(qp, dp, DP_TX_DEAD);
        return framed;
    }
    if (len > 0)
        tx->b->nfpdu = nf;                         /* counted when it was framed first */
    else
        tx_batch_end(qp, tx, nf);
    if (framed == 1)
        tx->msg = DP_MSG_NONE;                     /* framed whole: the batch retires it */
    if (len > 0 && n > 0)
        tx_advance(tx, (size_t)n);
    tx->prepick = -1;
    tx_goto(qp, dp, DP_TX_SENDING);
    if (err == 0 || err == -EINTR)
        err = tx_write(qp, dp);
    err = tx_sent(qp, dp, err);
    return err > 0 ? tx_engine(qp, dp) : err;
}

void iw_tx_lean_send(struct iw_qp *qp, struct iw_wqe *w, struct dp_sgl *sgl)
{
    struct iw_dp *dp = qp->dp;
    struct dp_tx *tx = &dp->tx;
    uint8_t buf[DP_TX_LINEAR_MAX];
    ssize_t n = 0;
    int len, err = 0;

    tx_hdr_transfer(tx, w);
    tx->src = sgl;
    tx->off = 0;
    tx->len = sgl->total;
    tx->msg = DP_MSG_SQ;
    len = tx_lean_frame(qp, dp, buf, sizeof buf);
    if (len > 0) {
        IW_COUNT(qp->obj.dev, rdma_out_frames, 1);
        n = tx_send_buf(dp, buf, (size_t)len);
        err = tx_wrote(qp, n);
    }
    if (len > 0 && n == len) {
        tx->msg = DP_MSG_NONE;
        tx->src = NULL;                            /* the caller's: gone when we return */
        tx->lean_done++;
        tx_lean_complete(qp, w, sgl, STATUS_SUCCESS);
    } else {
        err = tx_lean_handover(qp, dp, w, sgl, len, n, err);
    }
    dp_tx_own_release(dp);
    /* A kick that found tx_owned ours (RX: a Read Response, our Terminate) waits in tx_pending,
     * as it would for any owner of the engine (iw_tx_run). */
    tx_kick_fence();
    if (atomic_load_explicit(&dp->tx_pending, memory_order_relaxed)) {
        int e = iw_tx_run(qp);
        if (!err)
            err = e;
    }
    tx_report(qp, err);
}

/* ---- set-up and stop, for the QP's life cycle (qp.c) ---- */

void iw_tx_init(struct iw_qp *qp, struct iw_dp *dp)
{
    dp->tx.msn_send = 1;
    /* The CM's Read RTR (RFC 6581 §7.1) used MSN 1 on QN 1 in the direction it went. */
    dp->tx.msn_rreq = qp->params.rtr_read_sent ? 2 : 1;
    dp->tx.mulpdu = qp->params.mulpdu ? qp->params.mulpdu
                  : iw_fpdu_mulpdu(qp->params.mss ? qp->params.mss : 1460, false);
    if (dp->tx.mulpdu < IW_FPDU_READ_REQ_HDR_LEN + 4)
        dp->tx.mulpdu = IW_FPDU_READ_REQ_HDR_LEN + 4;
    dp->tx.mss_countdown = 1;                      /* the first multi-segment message reads it */
    dp->tx.mss_every = DP_TX_MSS_EVERY / 2;        /* the first read sets DP_TX_MSS_EVERY */
    /* A small message: one FPDU of any of the three transfers (a Send's header is the longest),
     * and with the longest header and pad it fits the lean path's one buffer. */
    dp->tx.lean_max = iw_fpdu_max_payload(IW_OP_SEND, dp->tx.mulpdu);
    if (dp->tx.lean_max > DP_TX_LINEAR_MAX - IW_FPDU_UNTAGGED_HDR_LEN - 3 - IW_MPA_CRC_SIZE)
        dp->tx.lean_max = DP_TX_LINEAR_MAX - IW_FPDU_UNTAGGED_HDR_LEN - 3 - IW_MPA_CRC_SIZE;
}

void iw_tx_stop_locked(struct iw_qp *qp, struct iw_dp *dp)
{
    tx_goto(qp, dp, DP_TX_DEAD);
    dp->tx.msg = DP_MSG_NONE;
    tx_unkeep(&dp->tx);
}

void iw_tx_disarm(struct iw_qp *qp)
{
    struct iw_dp *dp = qp->dp;

    dp_tx_own_wait(dp);
    if (dp->tx.want_out) {
        dp->tx.want_out = false;
        iw_qp_want_writable(qp, false);
    }
    dp_tx_own_release(dp);
}
