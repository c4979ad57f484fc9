/* CQ notification semantics (§5.7, §5.3, §5.4, §5.1) over the iwarp provider, in one process
 * over 127.0.0.1 and ::1: QP A sends to QP B, and the CQ under test is B's receive CQ, which
 * nothing else feeds. A fresh connected pair per case:
 *
 *   once      unarmed, completions run no callback; one ANY arm gives exactly one callback for a
 *             burst, none after until re-armed; an arm on an empty CQ waits for a completion
 *   queued    an arm finds completions that arrived since the last notification (or with no
 *             notification yet) and must be satisfied at once (rule 2, the "must" half)
 *   solicited a SOLICITED arm ignores unsolicited receives (and an ERRORS arm ignores any
 *             completion), fires on a solicited one and on an error completion (a flush)
 *   race      a thread drains and arms in a loop while A streams Sends and the callback drains
 *             and re-arms; then only the callback: every completion is reached by a callback,
 *             no callback without an arm, callbacks for the CQ never overlap
 *   close     B's QP, then its CQ closed while A streams and slow callbacks may be running: no
 *             callback after (or overlapping) the CQ's close completion
 *
 * "No callback" is checked after a barrier that proves the completions are in B's CQ (an RDMA
 * Read by A, answered by B only after B has taken in every earlier Send, §5.6 ordering) plus a
 * short settle; every wait for something that must happen has a generous timeout, only to avoid
 * hangs. */
#define _GNU_SOURCE
#include "iwtest.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TMO 10000
#define SETTLE_US (100 * 1000)
#define NRECV 64
#define MSG 16
#define STREAM 3000
#define BARRIER_CTX ((void *)(uintptr_t)0xba77)

struct notes {
    pthread_mutex_t m;          /* the consumer's serialization of B's arm/poll/receive (§5.4) */
    atomic_bool drain;          /* the callback drains, reposts and re-arms (race, close) */
    atomic_bool slow;           /* the callback lingers, so that a close overlaps it */
    bool qp_closing;            /* under m: B's QP close was requested: no more receives */
    bool cq_closing;            /* under m: B's CQ close was requested: leave it alone */
    atomic_int in_cb;           /* a callback is running */
    atomic_int overlap;         /* a callback started while another ran */
    atomic_int ncb;             /* callbacks */
    atomic_int narms;           /* NdkArmCq calls, counted before the call */
    atomic_int unarmed;         /* callback k started with fewer than k arms issued */
    atomic_int bad_status;      /* callbacks with CqStatus != SUCCESS */
    atomic_int cq_closed;       /* B's receive CQ close completed */
    atomic_int ncb_at_close;
    atomic_int late;            /* a callback ran, or was still running, after the close completed */
    atomic_int cb_drained, cb_narms;   /* at the last callback's start, for the failure messages */
    atomic_int cb_cq_drained;          /* B's CQ entries taken when it started, ditto */
};

struct pair {
    struct iwt *t;
    NDK_PD *pd;
    NDK_CQ *acq;                /* A: receive and initiator CQ */
    NDK_CQ *bicq, *brcq;        /* B: initiator CQ; receive CQ, the one under test */
    NDK_QP *aqp, *bqp;
    struct iwt_link link;
    NDK_MR *amr, *bmr;
    PMDL amdl, bmdl;
    UINT32 atok, btok;
    uint8_t aread[64], bread[64];
    uint8_t sbuf[NRECV][MSG];   /* A's send slots */
    uint8_t rbuf[NRECV][MSG];   /* B's receive slots */
    /* A's side, used by one thread at a time */
    int sent, a_done, barriers;
    bool tolerate;              /* A's errors end the stream instead of failing (close) */
    atomic_bool stop;
    /* B's side, under n.m */
    int next_seq, cancelled;
    atomic_int drained;         /* receive completions taken on B */
    atomic_int reposted;        /* receives posted on B beyond the first NRECV */
    struct notes n;
};

static void nop_notify(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
}

/* n.m held. Counted before the call: a callback satisfied by this arm may start before
 * NdkArmCq returns. */
static void b_arm(struct pair *p, ULONG type)
{
    atomic_fetch_add(&p->n.narms, 1);
    p->brcq->Dispatch->NdkArmCq(p->brcq, type);
}

static void b_post(struct pair *p, int slot)
{
    NDK_SGE sge = { .VirtualAddress = p->rbuf[slot], .Length = MSG };
    CHECK_STATUS(p->bqp->Dispatch->NdkReceive(p->bqp, (void *)(uintptr_t)slot, &sge, 1), STATUS_SUCCESS);
}

/* n.m held. Takes every completion on B's receive CQ: Sends arrive in order, each carrying its
 * sequence number, into the slot it was posted to; flushed receives complete cancelled. */
static int b_drain(struct pair *p)
{
    NDK_RESULT_EX r[16];
    ULONG got;
    int total = 0;

    while ((got = p->brcq->Dispatch->NdkGetCqResultsEx(p->brcq, r, 16)) > 0) {
        for (ULONG i = 0; i < got; i++) {
            int slot = (int)(uintptr_t)r[i].RequestContext;
            CHECK_MSG(slot >= 0 && slot < NRECV, "B: completion with unknown context %d", slot);
            if (r[i].Status == STATUS_CANCELLED) {
                p->cancelled++;
                continue;
            }
            CHECK_MSG(r[i].Status == STATUS_SUCCESS, "B: receive %d completed with 0x%08x", p->next_seq,
                      (unsigned)r[i].Status);
            uint32_t seq;
            memcpy(&seq, p->rbuf[slot], sizeof seq);
            CHECK_MSG(slot == p->next_seq % NRECV && seq == (uint32_t)p->next_seq && r[i].BytesTransferred == MSG,
                      "B: receive %d: slot %d, seq %u, %u bytes", p->next_seq, slot, seq,
                      (unsigned)r[i].BytesTransferred);
            p->next_seq++;
            atomic_fetch_add(&p->drained, 1);
            if (!p->n.qp_closing) {
                b_post(p, slot);
                atomic_fetch_add(&p->reposted, 1);
            }
        }
        total += (int)got;
    }
    return total;
}

/* Polls B's CQ (unlocked between polls) until n receives were taken in all. */
static void b_wait(struct pair *p, int n, const char *what)
{
    uint64_t end = ndk_test_now_ms() + TMO;
    for (;;) {
        pthread_mutex_lock(&p->n.m);
        b_drain(p);
        pthread_mutex_unlock(&p->n.m);
        if (atomic_load(&p->drained) >= n)
            return;
        CHECK_MSG(ndk_test_now_ms() < end, "%s: B took %d of %d receives", what, atomic_load(&p->drained), n);
        usleep(1000);
    }
}

static void b_lock_arm(struct pair *p, ULONG type)
{
    pthread_mutex_lock(&p->n.m);
    b_arm(p, type);
    pthread_mutex_unlock(&p->n.m);
}

static void on_notify(void *ctx, NTSTATUS st)
{
    struct pair *p = ctx;
    struct notes *n = &p->n;

    if (atomic_exchange(&n->in_cb, 1))
        atomic_fetch_add(&n->overlap, 1);
    if (atomic_load(&n->cq_closed))
        atomic_fetch_add(&n->late, 1);
    /* §5.7 rule 1: callback k needs k arms (two arms may merge into one callback, never one arm
     * into two). */
    atomic_store(&n->cb_drained, atomic_load(&p->drained));
    atomic_store(&n->cb_narms, atomic_load(&n->narms));
    if (atomic_fetch_add(&n->ncb, 1) + 1 > atomic_load(&n->narms))
        atomic_fetch_add(&n->unarmed, 1);
    if (st != STATUS_SUCCESS)
        atomic_fetch_add(&n->bad_status, 1);
    if (atomic_load(&n->drain)) {
        pthread_mutex_lock(&n->m);
        if (!n->cq_closing) {
            b_drain(p);
            b_arm(p, NDK_CQ_NOTIFY_ANY);
        }
        pthread_mutex_unlock(&n->m);
    }
    if (atomic_load(&n->slow))
        usleep(500);
    /* §5.1: the CQ's close must not complete while its callback runs. */
    if (atomic_load(&n->cq_closed))
        atomic_fetch_add(&n->late, 1);
    atomic_store(&n->in_cb, 0);
}

/* A's completions: its Sends and its barrier Reads. */
static int a_poll(struct pair *p)
{
    NDK_RESULT_EX r;
    while (p->acq->Dispatch->NdkGetCqResultsEx(p->acq, &r, 1) == 1) {
        if (r.Status != STATUS_SUCCESS) {
            CHECK_MSG(p->tolerate, "A: request %p completed with 0x%08x", r.RequestContext, (unsigned)r.Status);
            return -1;
        }
        if (r.RequestContext == BARRIER_CTX)
            p->barriers++;
        else
            p->a_done++;
    }
    return 0;
}

/* Sends A's next message once B has a receive for it and A a send slot; returns false when the
 * stream ended (stop, or an error while tolerated). */
static bool a_send(struct pair *p, ULONG flags)
{
    uint64_t end = ndk_test_now_ms() + TMO;

    while (p->sent >= NRECV + atomic_load(&p->reposted) || p->sent - p->a_done >= NRECV) {
        if (a_poll(p) < 0 || atomic_load(&p->stop))
            return false;
        /* Tolerated: B stops reposting once its close begins; A waits for stop. */
        CHECK_MSG(p->tolerate || ndk_test_now_ms() < end, "A: no credit for send %d (B took %d, A done %d)", p->sent,
                  atomic_load(&p->drained), p->a_done);
        usleep(200);
    }
    int slot = p->sent % NRECV;
    uint32_t seq = (uint32_t)p->sent;
    memset(p->sbuf[slot], 0x5a, MSG);
    memcpy(p->sbuf[slot], &seq, sizeof seq);
    NDK_SGE sge = { .VirtualAddress = p->sbuf[slot], .Length = MSG };
    NTSTATUS st = p->aqp->Dispatch->NdkSend(p->aqp, (void *)(uintptr_t)(slot + 1), &sge, 1, flags);
    if (st != STATUS_SUCCESS) {
        CHECK_MSG(p->tolerate, "A: NdkSend %d: 0x%08x", p->sent, (unsigned)st);
        return false;
    }
    p->sent++;
    return true;
}

static void a_sends(struct pair *p, int n, ULONG flags)
{
    for (int i = 0; i < n; i++)
        CHECK(a_send(p, flags));
}

/* An RDMA Read of B's memory: B answers it only after its receive side has taken in every Send
 * A posted before it, so when it completes those Sends' completions are in B's CQ. */
static void a_barrier(struct pair *p)
{
    int want = p->barriers + 1;
    uint64_t end = ndk_test_now_ms() + TMO;
    NDK_SGE sge = { .VirtualAddress = p->aread, .Length = 8, .MemoryRegionToken = p->atok };

    CHECK_STATUS(p->aqp->Dispatch->NdkRead(p->aqp, BARRIER_CTX, &sge, 1, (UINT64)(uintptr_t)p->bread, p->btok, 0),
                 STATUS_SUCCESS);
    while (p->barriers < want) {
        a_poll(p);
        CHECK_MSG(ndk_test_now_ms() < end, "A: the barrier Read did not complete");
        usleep(200);
    }
}

static void pair_open(struct iwt *t, struct pair *p)
{
    NDK_ADAPTER *ad = t->ad;

    memset(p, 0, sizeof *p);
    p->t = t;
    CHECK(pthread_mutex_init(&p->n.m, NULL) == 0);
    CHECK_STATUS(ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &p->pd), STATUS_SUCCESS);
    CHECK_STATUS(ad->Dispatch->NdkCreateCq(ad, 2 * NRECV + 16, nop_notify, NULL, NULL, NULL, NULL, &p->acq),
                 STATUS_SUCCESS);
    CHECK_STATUS(ad->Dispatch->NdkCreateCq(ad, 16, nop_notify, NULL, NULL, NULL, NULL, &p->bicq), STATUS_SUCCESS);
    CHECK_STATUS(ad->Dispatch->NdkCreateCq(ad, NRECV + 16, on_notify, p, NULL, NULL, NULL, &p->brcq), STATUS_SUCCESS);
    CHECK_STATUS(p->pd->Dispatch->NdkCreateQp(p->pd, p->acq, p->acq, p, 4, NRECV + 4, 1, 1, 0, NULL, NULL, &p->aqp),
                 STATUS_SUCCESS);
    CHECK_STATUS(p->pd->Dispatch->NdkCreateQp(p->pd, p->brcq, p->bicq, p, NRECV, 4, 1, 1, 0, NULL, NULL, &p->bqp),
                 STATUS_SUCCESS);
    p->amr = iwt_mr_register(p->pd, p->aread, sizeof p->aread,
                             NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK, &p->amdl);
    p->atok = p->amr->Dispatch->NdkGetLocalTokenFromMr(p->amr);
    p->bmr = iwt_mr_register(p->pd, p->bread, sizeof p->bread,
                             NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ, &p->bmdl);
    p->btok = p->bmr->Dispatch->NdkGetRemoteTokenFromMr(p->bmr);
    for (int i = 0; i < NRECV; i++)
        b_post(p, i);
    iwt_link_open(t, &p->link, p->aqp, p->bqp, TMO);
}

/* Closes what is still open; the listener waits for its connectors (§5.1). */
static void pair_close(struct pair *p)
{
    iwt_link_close(&p->link, TMO);
    iwt_close_obj(p->aqp, TMO);
    if (p->bqp)
        iwt_close_obj(p->bqp, TMO);
    iwt_mr_release(p->amr, p->amdl, TMO);
    iwt_mr_release(p->bmr, p->bmdl, TMO);
    iwt_close_obj(p->acq, TMO);
    iwt_close_obj(p->bicq, TMO);
    if (p->brcq)
        iwt_close_obj(p->brcq, TMO);
    iwt_close_obj(p->pd, TMO);
    pthread_mutex_destroy(&p->n.m);
}

/* What holds in every case: no callback without an arm, none overlapping, CQ healthy. */
static void check_notes(struct pair *p, const char *c)
{
    CHECK_MSG(atomic_load(&p->n.unarmed) == 0, "%s: %d callbacks without an outstanding arm", c,
              atomic_load(&p->n.unarmed));
    CHECK_MSG(atomic_load(&p->n.overlap) == 0, "%s: %d callbacks overlapped another", c, atomic_load(&p->n.overlap));
    CHECK_MSG(atomic_load(&p->n.bad_status) == 0, "%s: %d callbacks reported a CQ error", c,
              atomic_load(&p->n.bad_status));
}

/* After a settle: exactly want callbacks so far. */
static void expect_ncb(struct pair *p, int want, const char *what)
{
    int n = atomic_load(&p->n.ncb);
    CHECK_MSG(n == want,
              "%s: %d callbacks, want %d (the last started with %d receives taken by B and %d arms issued; "
              "now %d taken, %d arms, %d sent)",
              what, n, want, atomic_load(&p->n.cb_drained), atomic_load(&p->n.cb_narms), atomic_load(&p->drained),
              atomic_load(&p->n.narms), p->sent);
}

static void wait_cb(struct pair *p, int n, const char *what)
{
    CHECK_MSG(iwt_wait_atomic(&p->n.ncb, n, TMO), "%s: %d callbacks, want %d", what, atomic_load(&p->n.ncb), n);
}

#define N_BURST 8

static void case_once(struct iwt *t)
{
    struct pair p;

    pair_open(t, &p);
    a_sends(&p, N_BURST, 0);
    b_wait(&p, N_BURST, "unarmed");
    a_barrier(&p);
    usleep(SETTLE_US);
    expect_ncb(&p, 0, "once: the CQ never armed");

    b_lock_arm(&p, NDK_CQ_NOTIFY_ANY);
    a_sends(&p, N_BURST, 0);
    wait_cb(&p, 1, "once: armed ANY, a burst");
    a_barrier(&p);
    usleep(SETTLE_US);
    expect_ncb(&p, 1, "once: one ANY arm and a burst");
    b_wait(&p, 2 * N_BURST, "armed burst");

    a_sends(&p, N_BURST, 0);
    b_wait(&p, 3 * N_BURST, "after the notification");
    a_barrier(&p);
    usleep(SETTLE_US);
    expect_ncb(&p, 1, "once: completions after the notification, not re-armed");

    /* Re-armed with the CQ drained: nothing to report until the next completion. */
    b_lock_arm(&p, NDK_CQ_NOTIFY_ANY);
    usleep(SETTLE_US);
    expect_ncb(&p, 1, "once: an arm on a drained CQ");
    a_sends(&p, 1, 0);
    wait_cb(&p, 2, "once: re-armed, one Send");
    a_barrier(&p);
    usleep(SETTLE_US);
    expect_ncb(&p, 2, __func__);
    b_wait(&p, 3 * N_BURST + 1, "re-armed");
    check_notes(&p, "once");
    pair_close(&p);
    printf("once: ok\n");
}

static void case_queued(struct iwt *t)
{
    struct pair p;

    pair_open(t, &p);
    /* Queued, never notified: the arm is satisfied by what is there. */
    a_sends(&p, 3, 0);
    a_barrier(&p);
    b_lock_arm(&p, NDK_CQ_NOTIFY_ANY);
    wait_cb(&p, 1, "queued: ANY arm with 3 completions queued and never notified");
    usleep(SETTLE_US);
    expect_ncb(&p, 1, __func__);

    /* Not drained; 2 more arrive after that notification: the next arm must see them. */
    a_sends(&p, 2, 0);
    a_barrier(&p);
    b_lock_arm(&p, NDK_CQ_NOTIFY_ANY);
    wait_cb(&p, 2, "queued: ANY arm with 2 completions that arrived after the notification");
    usleep(SETTLE_US);
    expect_ncb(&p, 2, __func__);
    b_wait(&p, 5, "queued");

    /* A queued solicited receive satisfies a SOLICITED arm the same way. */
    a_sends(&p, 1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
    a_barrier(&p);
    b_lock_arm(&p, NDK_CQ_NOTIFY_SOLICITED);
    wait_cb(&p, 3, "queued: SOLICITED arm with a solicited completion queued");
    b_wait(&p, 6, "queued solicited");
    check_notes(&p, "queued");
    pair_close(&p);
    printf("queued: ok\n");
}

static void case_solicited(struct iwt *t)
{
    struct pair p;

    pair_open(t, &p);
    /* ERRORS: no completion, of any kind, fires it. */
    b_lock_arm(&p, NDK_CQ_NOTIFY_ERRORS);
    a_sends(&p, 1, 0);
    a_sends(&p, 1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
    a_barrier(&p);
    b_wait(&p, 2, "ERRORS arm");
    usleep(SETTLE_US);
    expect_ncb(&p, 0, "solicited: an ERRORS arm fired on a successful completion");

    /* SOLICITED (merged with the ERRORS arm still outstanding: SOLICITED, §5.7 rule 4). */
    b_lock_arm(&p, NDK_CQ_NOTIFY_SOLICITED);
    a_sends(&p, 2, 0);
    a_barrier(&p);
    b_wait(&p, 4, "SOLICITED arm, unsolicited Sends");
    usleep(SETTLE_US);
    expect_ncb(&p, 0, "solicited: an unsolicited receive fired a SOLICITED arm");
    a_sends(&p, 1, 0);
    a_sends(&p, 1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
    wait_cb(&p, 1, "solicited: SOLICITED arm, a solicited Send");
    a_barrier(&p);
    usleep(SETTLE_US);
    expect_ncb(&p, 1, __func__);
    b_wait(&p, 6, "solicited Send");

    /* An error completion satisfies SOLICITED: B's flush cancels its posted receives. */
    b_lock_arm(&p, NDK_CQ_NOTIFY_SOLICITED);
    usleep(SETTLE_US);
    expect_ncb(&p, 1, __func__);
    pthread_mutex_lock(&p.n.m);
    p.n.qp_closing = true;          /* no reposting into a flushed QP */
    pthread_mutex_unlock(&p.n.m);
    p.bqp->Dispatch->NdkFlush(p.bqp);
    wait_cb(&p, 2, "solicited: SOLICITED arm, flushed receives");
    uint64_t end = ndk_test_now_ms() + TMO;
    for (;;) {
        pthread_mutex_lock(&p.n.m);
        b_drain(&p);
        int c = p.cancelled;
        pthread_mutex_unlock(&p.n.m);
        if (c == NRECV)
            break;
        CHECK_MSG(ndk_test_now_ms() < end, "solicited: %d of %d receives cancelled by the flush", c, NRECV);
        usleep(1000);
    }
    check_notes(&p, "solicited");
    pair_close(&p);
    printf("solicited: ok\n");
}

static void *sender(void *arg)
{
    struct pair *p = arg;
    while (p->sent < STREAM && !atomic_load(&p->stop))
        if (!a_send(p, 0))
            break;
    while (!p->tolerate && p->a_done < p->sent) {
        a_poll(p);
        usleep(200);
    }
    return NULL;
}

static void *armer(void *arg)
{
    struct pair *p = arg;
    while (atomic_load(&p->drained) < STREAM / 2) {
        pthread_mutex_lock(&p->n.m);
        b_drain(p);
        b_arm(p, NDK_CQ_NOTIFY_ANY);
        pthread_mutex_unlock(&p->n.m);
        sched_yield();
    }
    return NULL;
}

static void case_race(struct iwt *t)
{
    struct pair p;
    pthread_t ts, ta;

    pair_open(t, &p);
    atomic_store(&p.n.drain, true);
    CHECK(pthread_create(&ta, NULL, armer, &p) == 0);
    CHECK(pthread_create(&ts, NULL, sender, &p) == 0);
    CHECK(pthread_join(ta, NULL) == 0);
    int by_armer = atomic_load(&p.drained), arms = atomic_load(&p.n.narms);
    /* From here on only callbacks drain: a completion that finds the CQ armed and runs no
     * callback stays in the CQ, and the stream stalls for want of receives. */
    uint64_t end = ndk_test_now_ms() + TMO;
    while (atomic_load(&p.drained) < STREAM) {
        CHECK_MSG(ndk_test_now_ms() < end, "race: %d of %d receives reached by callbacks (%d callbacks, %d arms)",
                  atomic_load(&p.drained), STREAM, atomic_load(&p.n.ncb), atomic_load(&p.n.narms));
        usleep(1000);
    }
    CHECK(pthread_join(ts, NULL) == 0);
    /* Quiet: the last callback re-armed, nothing else arrives. */
    usleep(SETTLE_US);
    int ncb = atomic_load(&p.n.ncb);
    usleep(SETTLE_US);
    CHECK_MSG(atomic_load(&p.n.ncb) == ncb, "race: callbacks with no completion arriving");
    pthread_mutex_lock(&p.n.m);
    CHECK_EQ(b_drain(&p), 0);
    pthread_mutex_unlock(&p.n.m);
    CHECK_EQ(atomic_load(&p.drained), STREAM);
    CHECK(ncb >= 1);
    check_notes(&p, "race");
    printf("race: %d receives, %d taken by the arming thread (%d arms), %d callbacks, %d arms in all\n", STREAM,
           by_armer, arms, ncb, atomic_load(&p.n.narms));
    pair_close(&p);
}

static void cq_close_cb(void *ctx)
{
    struct pair *p = ctx;
    atomic_store(&p->n.ncb_at_close, atomic_load(&p->n.ncb));
    atomic_store(&p->n.cq_closed, 1);
}

static void case_close(struct iwt *t)
{
    struct pair p;
    pthread_t ts;
    struct iwt_close qc;

    pair_open(t, &p);
    atomic_store(&p.n.drain, true);
    atomic_store(&p.n.slow, true);
    p.tolerate = true;
    b_lock_arm(&p, NDK_CQ_NOTIFY_ANY);
    CHECK(pthread_create(&ts, NULL, sender, &p) == 0);
    CHECK_MSG(iwt_wait_atomic(&p.drained, 4 * NRECV, TMO), "close: only %d receives before the close",
              atomic_load(&p.drained));

    /* The QP's close pends on its connector (§5.1); receives already posted keep arriving. */
    pthread_mutex_lock(&p.n.m);
    p.n.qp_closing = true;
    pthread_mutex_unlock(&p.n.m);
    NTSTATUS qst = iwt_close_start(p.bqp, &qc);
    CHECK_MSG(qst == STATUS_PENDING || qst == STATUS_SUCCESS, "close: NdkCloseQp 0x%08x", (unsigned)qst);
    pthread_mutex_lock(&p.n.m);
    p.n.cq_closing = true;
    pthread_mutex_unlock(&p.n.m);
    NDK_FN_CLOSE_OBJECT close_cq = p.brcq->Dispatch->NdkCloseCq;
    int running = atomic_load(&p.n.in_cb);
    NTSTATUS cst = close_cq(&p.brcq->Header, cq_close_cb, &p);
    CHECK_MSG(cst == STATUS_PENDING || cst == STATUS_SUCCESS, "close: NdkCloseCq 0x%08x", (unsigned)cst);
    if (cst == STATUS_SUCCESS)
        cq_close_cb(&p);
    /* The connector goes last: its abortive close flushes the QP, whose close then completes,
     * then the CQ's, with A still sending. */
    iwt_close_obj(p.link.bc, TMO);
    p.link.bc = NULL;
    if (qst == STATUS_PENDING)
        CHECK_MSG(iwt_wait_atomic(&qc.done, 1, TMO), "close: the QP's close did not complete");
    CHECK_MSG(iwt_wait_atomic(&p.n.cq_closed, 1, TMO), "close: the CQ's close did not complete");
    p.bqp = NULL;
    p.brcq = NULL;
    usleep(2 * SETTLE_US);
    CHECK_MSG(atomic_load(&p.n.ncb) == atomic_load(&p.n.ncb_at_close), "close: %d callbacks after the CQ's close",
              atomic_load(&p.n.ncb) - atomic_load(&p.n.ncb_at_close));
    CHECK_MSG(atomic_load(&p.n.late) == 0, "close: a callback ran or was running after the CQ's close completed");
    atomic_store(&p.stop, true);
    CHECK(pthread_join(ts, NULL) == 0);
    check_notes(&p, "close");
    printf("close: %d receives, %d callbacks before the close completed, %s\n", atomic_load(&p.drained),
           atomic_load(&p.n.ncb), running ? "one running at the CQ's close" : "none running at the CQ's close");
    pair_close(&p);
}

static void body(int family)
{
    struct iwt t;

    iwt_open(&t, family);
    case_once(&t);
    case_queued(&t);
    case_solicited(&t);
    case_race(&t);
    case_close(&t);
    iwt_close(&t);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
