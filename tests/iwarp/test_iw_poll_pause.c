/* A busy-polling consumer that pauses (poll.c, cq.c): once its polls come further apart than the
 * provider's busy rule allows (IW_POLL_GAP_NS), the CQ no longer counts it as busy, but its QP's
 * socket is still out of the progress thread's epoll set until the QP's expiry check. Over
 * 127.0.0.1 and ::1, in one process, A sends to B; B's consumer (this thread) first busy-polls
 * B's CQ until its QP is polled, then:
 *   slow     polls once a millisecond: A's Send must still arrive (each poll runs the polled
 *            QP's engines; nobody else reads its socket);
 *   arm      after slow polls, arms the CQ and waits: the notification must come (the arm hands
 *            the socket back to the progress thread although the CQ no longer counted the
 *            consumer as busy).
 * The expiry check runs after 600 s here (NDK_IWARP_POLL_IDLE_MS), so either mistake hangs the
 * wait (10 s) instead of costing a few milliseconds. Correctness only, no timings. */
#include "iwtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 10000
#define NRECV 8
#define MSG 32

struct pair {
    struct iwt_qp a;            /* the sender: its own CQ, PD for both */
    NDK_CQ *bcq;                /* B: receive and initiator CQ, the one under test */
    NDK_QP *bqp;
    struct iwt_link link;
    atomic_int notified;        /* B's CQ notifications */
    UINT32 tok;                 /* the PD's privileged token */
    uint8_t sbuf[MSG];
    uint8_t rbuf[NRECV][MSG];
    int seq;
};

static void on_notify(void *ctx, NTSTATUS st)
{
    struct pair *p = ctx;

    CHECK_STATUS(st, STATUS_SUCCESS);
    atomic_fetch_add(&p->notified, 1);
}

static void b_post(struct pair *p, int slot)
{
    NDK_SGE sge = { .VirtualAddress = p->rbuf[slot], .Length = MSG, .MemoryRegionToken = p->tok };
    CHECK_STATUS(p->bqp->Dispatch->NdkReceive(p->bqp, (void *)(uintptr_t)slot, &sge, 1), STATUS_SUCCESS);
}

static void pair_open(struct iwt *t, struct pair *p)
{
    NDK_ADAPTER *ad = t->ad;

    memset(p, 0, sizeof *p);
    iwt_qp_create(t, &p->a, 16);
    p->a.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(p->a.pd, &p->tok);
    CHECK_STATUS(ad->Dispatch->NdkCreateCq(ad, 2 * NRECV + 16, on_notify, p, NULL, NULL, NULL, &p->bcq),
                 STATUS_SUCCESS);
    CHECK_STATUS(p->a.pd->Dispatch->NdkCreateQp(p->a.pd, p->bcq, p->bcq, p, NRECV, 4, 1, 1, 0, NULL, NULL, &p->bqp),
                 STATUS_SUCCESS);
    for (int i = 0; i < NRECV; i++)
        b_post(p, i);
    iwt_link_open(t, &p->link, p->a.qp, p->bqp, TMO);
}

static void pair_close(struct pair *p)
{
    iwt_link_close(&p->link, TMO);
    iwt_close_obj(p->bqp, TMO);
    iwt_close_obj(p->bcq, TMO);
    iwt_qp_destroy(&p->a);
}

/* A sends the next message; its completion is collected at once (A's CQ is A's own). */
static void a_send(struct pair *p)
{
    NDK_SGE sge = { .VirtualAddress = p->sbuf, .Length = MSG, .MemoryRegionToken = p->tok };
    NDK_RESULT_EX r;

    memset(p->sbuf, 0, MSG);
    memcpy(p->sbuf, &p->seq, sizeof p->seq);
    CHECK_STATUS(p->a.qp->Dispatch->NdkSend(p->a.qp, NULL, &sge, 1, 0), STATUS_SUCCESS);
    CHECK_MSG(iwt_cq_wait(p->a.cq, &r, TMO), "A: no Send completion");
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
}

/* B takes the receive of message p->seq (checked) and reposts its slot. */
static void b_took(struct pair *p, const NDK_RESULT_EX *r)
{
    int slot = (int)(uintptr_t)r->RequestContext, seq;

    CHECK_STATUS(r->Status, STATUS_SUCCESS);
    CHECK(slot == p->seq % NRECV && r->BytesTransferred == MSG);
    memcpy(&seq, p->rbuf[slot], sizeof seq);
    CHECK_EQ(seq, p->seq);
    b_post(p, slot);
    p->seq++;
}

/* B busy-polls (back to back, never armed) for a message A sends meanwhile: by the end of these
 * polls B's QP is polled (the busy rule wants 16 short polls in a row, each soon after the last;
 * here there are thousands). */
static void b_busy(struct pair *p)
{
    NDK_RESULT_EX r;
    uint64_t end = ndk_test_now_ms() + TMO;

    for (int i = 0; i < 10000; i++)
        CHECK_EQ(p->bcq->Dispatch->NdkGetCqResultsEx(p->bcq, &r, 1), 0);
    a_send(p);
    while (p->bcq->Dispatch->NdkGetCqResultsEx(p->bcq, &r, 1) == 0)
        CHECK_MSG(ndk_test_now_ms() < end, "B: a busy-polled Send never arrived");
    b_took(p, &r);
    for (int i = 0; i < 10000; i++)
        CHECK_EQ(p->bcq->Dispatch->NdkGetCqResultsEx(p->bcq, &r, 1), 0);
}

/* Polls a millisecond apart, more of them than the provider lets pass before it reads the clock
 * again (IW_POLL_CLOCK_EVERY): afterwards the CQ no longer counts B as busy. */
static void b_slow(struct pair *p)
{
    NDK_RESULT_EX r;

    for (int i = 0; i < 40; i++) {
        usleep(1000);
        CHECK_EQ(p->bcq->Dispatch->NdkGetCqResultsEx(p->bcq, &r, 1), 0);
    }
}

static void case_slow(struct iwt *t)
{
    struct pair p;
    NDK_RESULT_EX r;
    uint64_t end;

    pair_open(t, &p);
    for (int round = 0; round < 3; round++) {
        b_busy(&p);
        b_slow(&p);
        a_send(&p);
        end = ndk_test_now_ms() + TMO;
        while (p.bcq->Dispatch->NdkGetCqResultsEx(p.bcq, &r, 1) == 0) {
            CHECK_MSG(ndk_test_now_ms() < end, "B: a Send to a QP polled a millisecond apart never arrived");
            usleep(1000);
        }
        b_took(&p, &r);
    }
    pair_close(&p);
    printf("  slow: Sends arrive under polls a millisecond apart (3 rounds)\n");
}

static void case_arm(struct iwt *t)
{
    struct pair p;
    NDK_RESULT_EX r;

    pair_open(t, &p);
    for (int round = 0; round < 3; round++) {
        int before = atomic_load(&p.notified);
        b_busy(&p);
        b_slow(&p);
        p.bcq->Dispatch->NdkArmCq(p.bcq, NDK_CQ_NOTIFY_ANY);
        a_send(&p);
        CHECK_MSG(iwt_wait_atomic(&p.notified, before + 1, TMO),
                  "B: armed after slow polls, no notification for a Send");
        CHECK_EQ(p.bcq->Dispatch->NdkGetCqResultsEx(p.bcq, &r, 1), 1);
        b_took(&p, &r);
    }
    pair_close(&p);
    printf("  arm: an arm after slow polls gets its notification (3 rounds)\n");
}

static void body(int family)
{
    struct iwt t;

    iwt_open(&t, family);
    case_slow(&t);
    case_arm(&t);
    iwt_close(&t);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    setenv("NDK_IWARP_POLL_IDLE_MS", "600000", 1);
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
