/*
 * datapath.h - the data path: the QP's connected state (struct iw_dp, qp.c), work-request
 * posting (post.c), the transmit engine (tx.c), the receive engine (rx.c), the STag protection
 * checks (access.c) and consumer-driven progress (poll.c). Included by those files only;
 * includes iwarp.h and fpdu.h.
 *
 * Per connected QP the engines' state is a struct iw_dp in qp->dp (created at establishment by
 * qp.c, freed with the QP).
 *
 * Locks (outermost first; iwarp.h gives the whole order):
 *   cq->qps_lock  job: the CQ's list of connected QPs (poll.c); a consumer busy-polling the CQ
 *                 runs the QPs' engines under it (a CQ's one QP: inside the poll's read side
 *                 instead, which a detach waits out), and iw_qp_stop takes the QP off the list
 *                 first.
 *   dp->rx_owned  job: ownership of the RX engine (deframer, current receive / write target).
 *                 Held by the progress thread or a polling consumer while it reads the socket
 *                 with MSG_DONTWAIT (never blocks), and by iw_qp_stop. Never taken by TX or
 *                 posting. An iw_lock (lock.h): a polling consumer only tries it
 *                 (dp_rx_own_try); the progress thread's reads, the ring's hand-offs and the
 *                 stop and set-up paths wait for it asleep (dp_rx_own_wait), as on a mutex: a
 *                 waiter that yielded instead took the CPU from a busy-polling owner on the
 *                 same core (7112719).
 *   dp->tx_owned  job: ownership of the TX engine (current message, FPDU batch, socket writes).
 *                 A flag, not a mutex: every kicker (posting threads, RX, progress thread) only
 *                 tries it (dp_tx_own_try: one compare-exchange, where a mutex's trylock and
 *                 unlock are two atomics and some 60 instructions), so nobody waits for it but
 *                 the stop and set-up paths (dp_tx_own_wait, which yields), and the holder only
 *                 does non-blocking send() / sendmsg(); a close or RX never waits behind a
 *                 blocked write. The one acquisition inside qp->lock, against this order, is the
 *                 TX lean path's claim (iw_tx_lean_claim_locked): a try, so it cannot deadlock.
 *   qp->lock      (core) state, queues (the RQ's receives are taken without it: its taker,
 *                 struct iw_wq); here also every field shared between RX and TX: the ORQ, the
 *                 IRQ, the per-SQE state array, the pending Terminate.
 *   srq->lock -> cq->lock -> dev->mem_lock (core, taken inside iw_srq_take / iw_cq_push /
 *                 iw_mem_put when it wakes a deregistration; key lookups take none) ;
 *                 mr->lock / mw->lock are taken with qp->lock held and before dev->mem_lock.
 *   Every key lookup (iw_mem_get) and every drop of its count (iw_mem_put) runs under rx_owned,
 *                 qp->lock or tx_owned: the walk that frees closed MRs and MWs
 *                 (iw_qp_lookups_quiesce) relies on it, the lookups taking no reference.
 * No consumer callback is ever called from the data path: completions go through iw_cq_push,
 * which queues notifications to the progress thread.
 */
#ifndef IWARP_DATAPATH_H
#define IWARP_DATAPATH_H

#include <sched.h>
#include <sys/uio.h>

#include "iwarp.h"
#include "fpdu.h"
#include "sysio.h"

/* ThreadSanitizer cannot see that the bytes one QP sends are the bytes another QP of the
 * process receives: the kernel orders them, and io_uring's completions are not intercepted at
 * all. In a TSan build every socket write of the data path releases, and every read that
 * brought bytes acquires, one process-wide sync object (iw_tx_tsan_wire, tx.c), so that what a
 * poster wrote before its request is ordered before what the peer's engines do on receiving it,
 * as it is on the wire. Nothing in other builds. */
#ifdef IW_TSAN                                     /* sysio.h */
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char iw_tx_tsan_wire;
#define IW_TSAN_WIRE_SENT() __tsan_release(&iw_tx_tsan_wire)
#define IW_TSAN_WIRE_RECEIVED() __tsan_acquire(&iw_tx_tsan_wire)
#else
#define IW_TSAN_WIRE_SENT() ((void)0)
#define IW_TSAN_WIRE_RECEIVED() ((void)0)
#endif
/* A receive's post, which takes no lock the engines take (qp->rq_gate): it releases the same
 * object, for a consumer that wrote memory, posted, and then told its peer by a channel TSan
 * cannot see (a pipe, another connection) to read or write that memory. On the wire that order
 * holds; every post taking qp->lock once gave TSan the same order by accident. */
#define IW_TSAN_CONSUMER_POSTED() IW_TSAN_WIRE_SENT()

/* One more on a count of an engine's own that other threads read (the tests: dp_rx.reads,
 * dp_tx.writes): its one writer is the engine's owner, so a relaxed load and store do, not a
 * read-modify-write. */
#define IW_DP_COUNT(c) __atomic_store_n(&(c), (c) + 1, __ATOMIC_RELAXED)

/* ---- completion status mapping (the NDKPI status rules, docs/ndkpi.md), fixed and documented ----
 *   remote access error (Terminate: invalid STag, not associated, access rights, TO wrap,
 *     "cannot invalidate")                               -> STATUS_ACCESS_VIOLATION
 *   remote base/bounds violation (§8 item 19)            -> STATUS_REMOTE_RESOURCES
 *   local protection error (bad local token, bounds, rights of an SGE) -> STATUS_ACCESS_VIOLATION
 *   inbound Send longer than the receive buffer          -> STATUS_BUFFER_TOO_SMALL
 *   any other protocol error (ours or the peer's)        -> STATUS_DATA_ERROR
 *   flushed (NdkFlush, disconnect, connection loss)      -> STATUS_CANCELLED
 * NDK_RESULT_EX.ProviderErrorCode of a failed completion = IW_PEC(...) below: which side found
 * the error and the RFC 5040/5041/5044 Terminate layer / error type / error code. */
#define IW_PEC_REMOTE   0x01000000u   /* reported by the peer in a Terminate we received */
#define IW_PEC_LOCAL    0x02000000u   /* found by our RX engine (we sent the Terminate) */
#define IW_PEC_POSTED   0x04000000u   /* found while processing a local work request */
#define IW_PEC(src, layer, etype, ecode) \
    ((src) | (uint32_t)(layer) << 16 | (uint32_t)(etype) << 8 | (uint32_t)(ecode))

/* Access rights, normalized from NDK_MR_FLAG_* (registered MRs) and NDK_OP_FLAG_ALLOW_*
 * (fast-registered MRs, windows): the two flag spaces differ (§2.6 vs §2.9). */
#define DP_ACC_LOCAL_WRITE   0x1u
#define DP_ACC_REMOTE_READ   0x2u
#define DP_ACC_REMOTE_WRITE  0x4u
#define DP_ACC_READ_SINK     0x8u

/* A Terminate reason: RFC 5040 §4.8 layer / error type / error code. */
struct dp_term_code {
    uint8_t layer, etype, ecode;
};

/* One resolved local SGE: the memory object (reference + DMA user held; NULL for the privileged
 * token and for inline data) and the address label the consumer gave. */
struct dp_sge {
    struct iw_obj *mem;
    uint64_t va;
    uint64_t len;
};

/* A resolved scatter/gather list. Built at the time the engine starts using a request, so a
 * deregistration in between is seen (it fails the request instead of touching freed pages). */
struct dp_sgl {
    uint32_t n;
    uint64_t total;
    struct dp_sge e[IW_MAX_SGE];
};

/* ---- access.c ---- */

/* Data sink / data source check of an inbound tagged access or Read Request source, in the
 * order of RFC 5040 §7 / RFC 5041 §7 (valid STag + key, same PD, rights, TO wrap, bounds). need is
 * DP_ACC_REMOTE_WRITE or DP_ACC_REMOTE_READ. rdmap: report with RDMAP layer codes (Read
 * Request source, RFC 5040 §7.2) instead of DDP tagged codes (RFC 5041 §7.2). On success *mem
 * holds a reference (release with iw_mem_put). Returns 0 or -EACCES with *tc filled.
 * RX engine (rx_owned held); takes no lock but dev->mem_lock to wake a deregistration. */
int iw_access_check_remote(struct iw_qp *qp, uint32_t stag, uint64_t to, uint64_t len, unsigned need, bool rdmap,
                    struct iw_obj **mem, struct dp_term_code *tc);

/* Resolves a local SGL (§4.4): the privileged token means a LAM logical address (= host
 * virtual address, adapter.c), any other token must be a registered MR of the QP's PD with
 * the range inside it and the rights in need (DP_ACC_LOCAL_WRITE for sinks). Returns 0, or
 * -EACCES (local protection error, *bad_sge set); takes references released by
 * iw_access_sgl_release. kc: the engine side's key cache (its lock held), or NULL. Any thread
 * in one of iw_mem_get's sections; qp->lock may be held. */
int iw_access_sgl_resolve(struct iw_qp *qp, struct iw_mem_cache *kc, const NDK_SGE *sge, uint32_t nsge,
                          unsigned need, struct dp_sgl *out, uint32_t *bad_sge);
/* An SGL over one private buffer (inline copy). */
void iw_access_sgl_inline(struct dp_sgl *out, const void *buf, uint64_t len);
/* An SGL of one memory range inside mem (Read Response source); takes over the reference. */
void iw_access_sgl_mem(struct dp_sgl *out, struct iw_obj *mem, uint64_t va, uint64_t len);
void iw_access_sgl_release(struct dp_sgl *s);

/* Maps [off, off + len) of the SGL to host iovecs (at most max). Stops early when max is
 * reached; *mapped says how many bytes the iovecs cover. Returns the iovec count.
 * Any thread; takes mr->lock of fast-registered MRs (their page list may be replaced). */
int iw_access_sgl_iov(const struct dp_sgl *s, uint64_t off, uint64_t len, struct iovec *iov, int max, uint64_t *mapped);

/* Invalidates stag (Send with Invalidate received, Read with local invalidate, Invalidate
 * work request). remote: the request came from the peer (RFC 5040 §7.2 codes 0/1/0x09 PD
 * mismatch or not invalidatable, 0/2/0x09 unknown). Returns 0 or -EACCES with *tc filled.
 * Any thread; qp->lock may be held. */
int iw_access_invalidate(struct iw_qp *qp, uint32_t stag, bool remote, struct dp_term_code *tc);
/* The local Invalidate / Bind / Fast Register work requests, executed in SQ order by the TX
 * engine. Return an NTSTATUS for the completion. qp->lock held. */
NTSTATUS iw_access_exec_invalidate(struct iw_qp *qp, struct iw_wqe *w);
NTSTATUS iw_access_exec_bind(struct iw_qp *qp, struct iw_wqe *w);
NTSTATUS iw_access_exec_fast_register(struct iw_qp *qp, struct iw_wqe *w);

/* ---- per-QP data-path state ---- */

enum dp_sqe_state {
    DP_SQE_QUEUED = 0,        /* posted, TX has not reached it */
    DP_SQE_ACTIVE,            /* TX is transmitting it (Send / Write / Read Request) */
    DP_SQE_WAIT_RESP,         /* Read Request out, waiting for the Read Response (in the ORQ) */
    DP_SQE_WAIT_MEM,          /* an invalidation waiting for placements into its object */
    DP_SQE_DONE,              /* finished; retired (completed) in posting order */
};

/* Data-path state of one SQ ring slot, kept beside its WQE (iw_dp_sqe). Protected by qp->lock. */
struct dp_sqe {
    enum dp_sqe_state state;
    NTSTATUS status;          /* completion status once DONE (or failure recorded early) */
    ULONG pec;                /* ProviderErrorCode */
    bool failed;              /* status recorded by an error path; retire it when stopping */
    struct dp_sgl sgl;        /* resolved source / sink */
};

/* Outbound read (ORQ, RFC 5040 §5.3: at most ORD in flight). */
struct dp_orq_ent {
    uint32_t slot;            /* SQ ring slot of the Read */
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t size;
    uint32_t got;             /* Read Response bytes received */
};

/* Inbound read (IRQ, at most IRD): a Read Response to send. */
struct dp_irq_ent {
    uint32_t sink_stag;
    uint64_t sink_to;
    uint32_t size;
    struct dp_sgl src;        /* the source range (reference held); n == 0 for zero length */
};

/* ---- TX engine (tx.c) ---- */
enum dp_tx_state {
    DP_TX_IDLE,               /* no FPDU batch pending: pick / build the next */
    DP_TX_SENDING,            /* a batch of FPDUs is built and (partly) unwritten */
    DP_TX_DEAD,               /* Terminate sent, socket error or stopped: never sends again */
    DP_TX_STATE_COUNT
};
enum dp_tx_msg {
    DP_MSG_NONE,
    DP_MSG_SQ,                /* Send / Send&Inv / Write / Read Request of SQ slot tx.slot */
    DP_MSG_RRESP,             /* Read Response for the IRQ head */
    DP_MSG_TERM,              /* our one Terminate */
};

/* A batch (one sendmsg, resumed after a short write) holds FPDUs of one or more whole messages
 * in pick order, the last possibly unfinished. Limits: header / trailer slots (DP_TX_MAX_FPDUS,
 * so at most as many messages), iovecs, and bytes: DP_TX_BATCH_BYTES bounds what one batch
 * offers TCP (16 FPDUs of 64 KiB, the loopback MULPDU, as before, so large transfers keep
 * their calls), and another message joins only while the batch holds under DP_TX_JOIN_BYTES,
 * which bounds how long a Read Response or our Terminate, which never cut into a batch, waits
 * behind small messages (about one 256 KiB socket buffer's worth). */
#define DP_TX_MAX_FPDUS   64
#define DP_TX_MAX_IOV     256
#define DP_TX_BATCH_BYTES (1u << 20)
#define DP_TX_JOIN_BYTES  (256u << 10)

/* One message's part of a batch: retired once iovecs [0, iov_end) are written. */
struct dp_tx_bmsg {
    uint32_t slot;            /* SQ ring slot (DP_MSG_SQ) */
    uint16_t iov_end;
    uint8_t msg;              /* enum dp_tx_msg */
    bool last;                /* its last segment is in this batch */
};

/* A batch of FPDUs: the iovecs sendmsg() gets, with the headers and trailers they point to and
 * the messages they carry. */
struct dp_tx_batch {
    struct iovec iov[DP_TX_MAX_IOV];
    uint8_t hdr[DP_TX_MAX_FPDUS][IW_FPDU_MAX_BUFFERED];
    uint8_t trl[DP_TX_MAX_FPDUS][8];
    struct dp_tx_bmsg m[DP_TX_MAX_FPDUS];
    int nfpdu;                /* header / trailer slots used */
    int nmsg, mdone;          /* messages in the batch / retired so far */
    bool has_rresp;           /* holds a Read Response (at most one: DP_IRQ_SLOTS) */
};

struct dp_tx {
    enum dp_tx_state state;
    enum dp_tx_msg msg;
    uint32_t slot;
    struct iw_fpdu_hdr h;     /* template of the message's segments */
    const struct dp_sgl *src; /* payload source */
    uint64_t off, len;        /* message bytes framed so far / total */
    int iovcnt, iovpos;
    size_t batch_bytes;       /* wire bytes framed into the batch */
    /* The batch is built in the thread's struct dp_tx_batch (tx.c) and written from there; only
     * a batch the socket did not take whole moves to one of the QP's own (kept), freed when it
     * is out (issue 14 item 3: an idle QP holds no batch). */
    struct dp_tx_batch *b;    /* the current batch: the thread's, or kept */
    struct dp_tx_batch *kept; /* malloc'ed while a short write left part of the batch */
    uint32_t msn_send;        /* next MSN on QN 0 / QN 1 (RFC 5041 §5.1: starts at 1) */
    uint32_t msn_rreq;
    /* Largest ULPDU we build, from the socket's current MSS (RFC 5044 §4: MULPDU), read again
     * now and then between multi-segment messages (tx_mss_refresh): Linux's value starts at
     * half the peer's first window (32 KiB on loopback) and grows with it, as siw's does. */
    uint32_t mulpdu;
    uint32_t mss_countdown;   /* multi-segment messages until the next read of the MSS */
    uint32_t mss_every;       /* the interval, doubled while the MSS stays the same */
    uint64_t mss_reads;       /* reads so far (observed by the tests) */
    uint64_t writes;          /* socket writes (IW_DP_COUNT, as rx.reads) */
    bool want_out;            /* EPOLLOUT requested */
    /* Saved qp->lock round trips (engine-private): more_hint is false when the last pick saw
     * nothing else to send, so the batch does not look again (a later post kicks the engine);
     * prepick >= 0 is the result of the pick tx_retire made for the IDLE state in the critical
     * section that retired a batch written whole. */
    bool more_hint;
    int8_t prepick;
    /* The lean path (tx.c, iw_tx_lean_claim_locked): payload bytes that fit one FPDU of any
     * transfer, and how many messages it wrote whole and completed / handed to the engine after
     * a short write (observed by the tests). */
    uint32_t lean_max;
    uint64_t lean_done, lean_short;
    /* The last local key a Send's, Write's or Read's SGL resolved to (qp->lock: every resolve
     * on this side holds it, and iw_qp_lookups_quiesce empties it under it). */
    struct iw_mem_cache kc;
};

/* ---- RX engine (rx.c) ---- */
enum dp_rx_state {
    DP_RX_RUN,                /* placing FPDUs */
    DP_RX_FAILED,             /* we found an error: Terminate queued, stream dead */
    DP_RX_TERMINATED,         /* the peer's Terminate arrived: stream dead */
    DP_RX_STATE_COUNT
};
enum dp_rx_target {
    DP_RXT_NONE,              /* nothing to place (no payload) */
    DP_RXT_SEND,              /* into the current receive's SGL at base + offset */
    DP_RXT_WRITE,             /* into rx.wmem at rx.wva + offset */
    DP_RXT_RRESP,             /* into the ORQ head Read's SGL */
};

#define DP_RX_STAGE   8192u   /* the RX staging buffer, one per thread (rx.c) */
/* A read of a backlog through staging (rx.c, rx->bulk). 512 KiB: against 256 KiB, a 1 MiB Write's
 * receiver made 3.23 reads per MiB instead of 4.03 (Send 3.71 instead of 4.39, medians of 16 and
 * 12 interleaved runs) at the same bandwidth (ratio 1.02 and 0.99); it still fits the L2 cache. */
#define DP_RX_BULK    (512u << 10)
#define DP_RX_MAX_IOV 64
#define DP_RX_TAILS   33u     /* small buffers for trailer + next header, one recvmsg()'s worth, per thread */
#define DP_RX_TAIL_LEN 32u    /* pad (<= 3) + CRC (4) + the longest common header (20) */
#define DP_RX_SPEC_MISS_MAX 4u /* Read Responses laid out ahead that may go wrong before a QP stops */

struct dp_rx {
    enum dp_rx_state state;
    struct iw_fpdu_rx fr;
    enum dp_rx_target tgt;
    uint64_t tgt_base;        /* SGL offset of the segment's first payload byte */
    struct dp_sgl wsgl;       /* Write target (one entry, reference held for the segment) */
    const struct dp_sgl *rsgl;/* Read Response target (the Read's SQE sgl) */
    bool have_recv;           /* a receive is being filled (untagged message open) */
    void *recv_ctx;           /* its RequestContext (the WQE itself is released when taken) */
    struct dp_sgl recv_sgl;
    NTSTATUS recv_status;     /* error recorded for it (else it is flushed CANCELLED) */
    ULONG recv_pec;
    bool rr_pending;          /* a Read Request header passed its checks; queue it at END */
    struct dp_irq_ent rr;
    uint64_t rx_bytes;
    /* Socket reads of this engine, and of those the ones of several segments through staging
     * (IW_DP_COUNT; observed by the tests: per QP, so that no read costs an atomic on a
     * device-wide line). */
    uint64_t reads, bulk_reads;
    bool first_done;          /* one good FPDU seen (RFC 5044 §7.1.2 hold-back released) */
    int tx_err;               /* socket error the TX engine hit while RX kicked it */
    const uint8_t *st_buf;    /* the thread's staging buffer the last read used (rx.c), */
    size_t st_off, st_len;    /* and its unfed bytes: within an rx_engine call only */
    uint32_t spec_miss;       /* Read Response segments that were not where rx_layout foresaw */
    bool tail_mode;           /* the current header was read alone, after a large segment (rx.c) */
    bool tail_last;           /* the last read ended in a tail buffer (rx.c) */
    bool bulk;                /* the last read got all it asked for: the socket holds more (rx.c) */
    bool ring_owned;          /* a receive of the progress thread's ring is queued on the socket,
                               * or about to be (ring_armed): nobody else reads it until that
                               * receive is taken (rx.c) */
    bool ring_armed;          /* iw_rx_ring_take armed the next ring receive: the ring's next
                               * ring_arm needs no lock (progress thread only) */
    uint64_t frame_sends;     /* whole Sends completed in one qp->lock section (rx_frame_send) */
    /* The last local key a receive's SGL resolved to (rx_owned, as the engine's state; emptied
     * under it by iw_qp_lookups_quiesce). */
    struct iw_mem_cache kc;
};

/* The data-path state of a queued SQ slot (wq.c stores it beside the WQE). qp->lock held. */
static inline struct dp_sqe *iw_dp_sqe(struct iw_qp *qp, uint32_t slot)
{
    return iw_wq_side(&qp->sq, slot);
}

/* The entry off places after head in the ORQ or IRQ ring of cap entries. head < cap and
 * off <= cap, so one subtraction wraps it: no division per Read. */
static inline uint32_t iw_dp_ring_index(uint32_t head, uint32_t off, uint32_t cap)
{
    uint32_t i = head + off;

    return i >= cap ? i - cap : i;
}

/* The QP's place in one of its CQs' lists of QPs to progress when a consumer busy-polls the CQ
 * (poll.c). Protected by that CQ's qps_lock. */
struct dp_cq_ref {
    struct ndk_list link;     /* in cq->qps while on */
    struct iw_qp *qp;
    struct iw_cq *cq;         /* NULL for the second entry when both CQs are one */
    bool on;
};

/* The IRQ holds IRD entries plus one: once the last bytes of a Read Response are on their way,
 * the peer may see them, free its ORD slot and send its next Read Request before our TX engine
 * has retired the entry (it does so after sendmsg returns, on another thread than RX). */
#define DP_IRQ_SLOTS(ird) ((ird) + 1u)

struct iw_dp {
    struct iw_qp *qp;
    /* The connection's socket with the progress engine, from establishment until the
     * connection is lost (qp.c). Its fd is fd below; the fields are protected by qp->lock, the
     * registration holds a reference on the QP. */
    struct iw_pollable poll;
    atomic_bool watching;     /* registered (written under qp->lock; iw_qp_poll reads it without) */
    bool want_out;            /* the TX engine waits for room (EPOLLOUT) */
    bool lent;                /* reads lent to the progress thread's ring, not in epoll (qp.c;
                               * written on the progress thread under qp->lock) */
    struct iw_lock rx_owned;  /* the RX engine's owner (the lock order above) */
    atomic_bool tx_owned;     /* the TX engine's owner (the lock order above; dp_tx_own_*) */
    atomic_bool tx_pending;   /* someone asked the TX engine to run (see iw_tx_kick) */
    atomic_bool tx_blocked;   /* the TX engine waits for room in the socket (a poller retries) */
    atomic_bool poll_failed;  /* a poller reported the connection's failure to the CM (once) */
    struct dp_cq_ref cqref[2];/* receive CQ, initiator CQ (unused when it is the same CQ) */
    int fd;                   /* the connection's socket (qp->fd, taken over from the CM) */
    struct iw_wire *wire;     /* its tap (wire.h) or NULL: every socket call branches on it */
    bool crc;
    /* written with rx_owned, tx_owned and qp->lock held, so any one of them reads it: */
    bool stopped;             /* iw_qp_stop ran: engines never run again */
    /* below: protected by qp->lock */
    bool discard;             /* NdkFlush on a live connection: RX reads and drops what arrives */
    bool flush_on_stop;       /* a flush came before iw_qp_stop: the stop does it (qp.c) */
    bool deferred;            /* DEFER requests queued without a kick (§5.5.4) */
    uint32_t sq_issued;       /* SQ entries from the head that TX has started */
    uint32_t ord, ird;
    /* Sized by the negotiated limits at establishment (issue 14 item 3: a QP's memory follows
     * what it may have in flight, not the adapter maxima): orq_cap = max(ord, 1) entries,
     * irq_slots = ird + 1 (DP_IRQ_SLOTS explains the one more). */
    struct dp_orq_ent *orq;
    uint32_t orq_cap, orq_head, orq_count;
    struct dp_irq_ent *irq;
    uint32_t irq_slots, irq_head, irq_count;
    bool rresp_last_out;      /* the head Read Response's last FPDUs are going to the socket */
    bool term_pending, term_sent;
    struct iw_fpdu_term term;
    /* engine-private state, owned by rx_owned and tx_owned */
    struct dp_tx tx;
    struct dp_rx rx;
};

/* Takes the TX engine if nobody owns it. The acquire pairs with the last owner's release: its
 * work on the engine's state is ours to see. Any thread, never waits. */
static inline bool dp_tx_own_try(struct iw_dp *dp)
{
    bool f = false;

    return atomic_compare_exchange_strong_explicit(&dp->tx_owned, &f, true, memory_order_acquire,
                                                   memory_order_relaxed);
}

/* Takes it, waiting for the owner: only paths allowed to wait (the stop, a failed set-up,
 * withdrawing the wish for room), with no lock held that an owner takes (the lock order). The
 * owner never blocks, so yielding beats a sleep. */
static inline void dp_tx_own_wait(struct iw_dp *dp)
{
    while (!dp_tx_own_try(dp))
        sched_yield();
}

static inline void dp_tx_own_release(struct iw_dp *dp)
{
    atomic_store_explicit(&dp->tx_owned, false, memory_order_release);
}

/* The RX engine's owner (dp->rx_owned, an iw_lock): a polling consumer only tries it; the
 * progress thread's reads, the ring's hand-offs and the stop and set-up paths wait for it
 * asleep, with no lock held that an owner takes (the lock order). Any thread. */
static inline bool dp_rx_own_try(struct iw_dp *dp) { return iw_lock_try(&dp->rx_owned); }
static inline void dp_rx_own_wait(struct iw_dp *dp) { iw_lock_take(&dp->rx_owned); }
static inline void dp_rx_own_release(struct iw_dp *dp) { iw_lock_give(&dp->rx_owned); }

/* ---- the QP's life cycle and the state the engines report to (qp.c) ---- */
/* Completes finished SQ entries from the head, in posting order (§5.6). qp->lock held. */
void iw_qp_sq_retire_locked(struct iw_qp *qp);
/* Queues our Terminate (first error only) and moves the QP to TERMINATE. qp->lock held. */
void iw_qp_terminate_locked(struct iw_qp *qp, const struct iw_fpdu_term *t, int err);
/* Stops both engines for good and completes what only the engines hold (the receive being
 * filled, SQ entries with a recorded error); the rest is flushed by iw_qp_flush_locked.
 * Any thread except inside the engines; no lock held (takes rx_owned, tx_owned, qp->lock). */
void iw_qp_stop(struct iw_qp *qp);

/* ---- TX engine (tx.c) ---- */
/* Runs the TX engine unless another thread runs it (then that one loops again). Any thread,
 * no lock held; never blocks (trylock + non-blocking sendmsg). A fatal socket error goes to
 * the CM (iw_cm_connection_failed). */
void iw_tx_kick(struct iw_qp *qp);
/* Same, but returns a fatal socket error instead of reporting it to the CM. */
int iw_tx_run(struct iw_qp *qp);
/* A polling consumer's retry of an engine that waits for room (poll.c): iw_tx_run, but only once
 * the socket is writable as epoll reports it (POLLOUT: a third of the send buffer free). Retried
 * at every poll, the engine wrote whatever the last ACKs had freed: with a slow receiver 3-5 KB
 * per sendmsg(), 200-250 calls per MiB against libfabric's one. Consumer thread, no lock held;
 * never blocks. */
int iw_tx_poll(struct iw_qp *qp);
/* Frees the progress thread's batch storage (dev->prog_tx_batch) once that thread has ended. */
void iw_tx_batch_free(struct iw_device *dev);
/* Engine set-up at establishment (qp->lock held) and stop (all three engine locks held). */
void iw_tx_init(struct iw_qp *qp, struct iw_dp *dp);
void iw_tx_stop_locked(struct iw_qp *qp, struct iw_dp *dp);
/* Withdraws the engine's request for writability. No lock held (takes tx_owned). */
void iw_tx_disarm(struct iw_qp *qp);
/* The lean path of a small Send / Send&Inv / Write (issue 15 item 4). post_sq, with qp->lock
 * held, the QP in RTS and the request's SQ slot reserved: true when the request may go straight
 * to the socket (not DEFER, fits one FPDU, nothing outstanding on the SQ, nothing the engine
 * must send first, the engine idle); then the engine is ours (tx_owned held) and *sgl the
 * resolved source. Never blocks (trylock). */
bool iw_tx_lean_claim_locked(struct iw_qp *qp, const struct iw_wqe *w, struct dp_sgl *sgl);
/* Then, with qp->lock released: frames and writes the request; completes it when the socket
 * took it whole, else queues it as the SQ entry being sent. Releases tx_owned, runs a kick
 * that came meanwhile and reports a fatal socket error to the CM. w and sgl are taken over. */
void iw_tx_lean_send(struct iw_qp *qp, struct iw_wqe *w, struct dp_sgl *sgl);

/* ---- RX engine (rx.c) ---- */
/* Reads and places what the socket holds. Progress thread, no lock held. Returns 0 to keep
 * going, -ESHUTDOWN when the peer closed its side (orderly FIN, read 0), another -errno on a
 * fatal error (-EBADMSG/-EPROTO/-ECONNRESET for a protocol error or the peer's Terminate). */
int iw_rx_run(struct iw_qp *qp);
/* Last look at the socket when the connection is lost: FPDUs already received (typically the
 * peer's Terminate, which names the request it refused) are still processed, so a connection
 * that dies right after a Terminate reports the reason instead of CANCELLED. Progress thread,
 * no lock held (takes rx_owned). Returns the engine's result (ignored by the caller). */
int iw_rx_drain(struct iw_qp *qp);
/* Reads and drops what the socket holds (a flushed QP whose connection is still up): 0 when it
 * would block, -ESHUTDOWN at the peer's FIN, else -errno. rx_owned held. */
int iw_rx_discard_locked(struct iw_dp *dp);
/* The progress thread's ring (iw_progress_lend) and the RX engine. ring_arm: whether a ring
 * receive may be queued now (the engine runs, or discards, and no consumer polls the socket),
 * and if so makes it the socket's only reader. ring_take: what that receive brought
 * (res as its result), fed as a read of the engine would be, then the socket read on if the
 * receive filled all cap bytes; returns as iw_rx_run. Progress thread, no lock held. */
bool iw_rx_ring_arm(struct iw_qp *qp);
int iw_rx_ring_take(struct iw_qp *qp, const uint8_t *buf, int res, size_t cap, bool rearm);
/* With rearm (the ring goes on waiting), ring_take also arms the next receive: then ring_armed
 * is set, and the next ring_arm only consumes it. disown: the ring stopped before queueing that
 * receive (the socket was taken back); the socket has other readers again. Progress thread. */
void iw_rx_ring_disown(struct iw_qp *qp);
/* RX engine run by a polling consumer: like iw_rx_run, but returns 0 at once when another
 * thread owns the engine. Any thread; no lock held except cq->qps_lock (or none, inside the
 * read side of iw_poll_cq). */
int iw_rx_poll(struct iw_qp *qp);
/* Frees the progress thread's RX buffers (dev->prog_rx_bufs) once that thread has ended. */
void iw_rx_bufs_free(struct iw_device *dev);
/* Engine set-up at establishment (qp->lock held) and stop (all three engine locks held;
 * completes the receive being filled). */
void iw_rx_init(struct iw_qp *qp, struct iw_dp *dp);
void iw_rx_stop_locked(struct iw_qp *qp, struct iw_dp *dp);

/* ---- consumer-driven progress (poll.c) ---- */
/* Puts the connected QP on its CQs' lists / takes it off (idempotent). Any thread, no lock
 * held (takes cq->qps_lock; detach waits for a poller that is running the QP's engines). */
void iw_poll_attach(struct iw_qp *qp);
/* Fills dp's list entries (at creation, before dp is published). */
void iw_poll_init(struct iw_qp *qp, struct iw_dp *dp);
void iw_poll_detach(struct iw_qp *qp);
/* The TX engine found the socket full (on) or got its bytes out: a polling consumer retries it
 * (there is no readiness for room in its CQs' epoll sets). dp->tx_owned held. */
void iw_poll_tx_blocked(struct iw_dp *dp, bool on);
/* The QP's socket left the progress thread for its CQs' pollers (on) or came back: counted in
 * each of its CQs' polled_qps. qp->lock held. */
void iw_poll_count(struct iw_dp *dp, bool on);

/* ---- posting (post.c): the QP dispatch slots (§2.9) ---- */
NTSTATUS iw_post_send(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, ULONG flags);
NTSTATUS iw_post_send_inv(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, ULONG flags, UINT32 token);
NTSTATUS iw_post_receive(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge);
NTSTATUS iw_post_write(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 raddr, UINT32 rtoken, ULONG flags);
NTSTATUS iw_post_read(NDK_QP *q, PVOID rctx, CONST NDK_SGE *sgl, ULONG nsge, UINT64 raddr, UINT32 rtoken, ULONG flags);
NTSTATUS iw_post_bind(NDK_QP *q, PVOID rctx, NDK_MR *m, NDK_MW *mw, PVOID va, SIZE_T len, ULONG flags);
NTSTATUS iw_post_fast_register(NDK_QP *q, PVOID rctx, NDK_MR *m, ULONG npages, CONST NDK_LOGICAL_ADDRESS *pages,
                             ULONG fbo, SIZE_T len, PVOID base_va, ULONG flags);
NTSTATUS iw_post_invalidate(NDK_QP *q, PVOID rctx, NDK_OBJECT_HEADER *obj, ULONG flags);
/* Completion status for a Terminate reason (the table above). */
NTSTATUS iw_access_term_status(const struct dp_term_code *tc);

#endif
