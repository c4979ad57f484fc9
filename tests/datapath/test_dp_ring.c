/* test_dp_ring: the ring wait's hand-over of a socket's reads (qp.c, rx.c), with this thread
 * playing the progress thread's io_uring (progress_stub.c lets the lend through). Side 0 sends;
 * side 1's socket, left alone by the harness, is read here:
 *   1. data in the epoll set: the QP runs its engine and lends its reads to the ring;
 *   2. the ring's receive (this thread's recv) is taken: the Send completes, and the take arms
 *      the next receive itself, so the ring's next arm takes no lock (ring_armed);
 *   3. a consumer starts busy-polling before that receive is queued: the socket is taken back
 *      from the ring, and the consumer's own polls must read the next Send. A take's arm the
 *      ring never used must not keep the socket to itself (iw_rx_ring_disown): without that,
 *      the poller would find nothing forever;
 *   4. the other order: the arm used, then reclaimed with the receive cancelled.
 * Usage: test_dp_ring */
#include "dptest.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static struct dpt_env env;
static struct dpt_mr ma, mb;

static void send_one(uint32_t seed, void *ctx)
{
    NDK_SGE ss = dpt_sge(&ma, 0, 48);

    dpt_fill(ma.p, 48, seed);
    CHECK_STATUS(env.s[0].ndk->Dispatch->NdkSend(env.s[0].ndk, ctx, &ss, 1, 0), STATUS_SUCCESS);
}

static void post_recv(void *ctx)
{
    NDK_SGE rs = dpt_sge(&mb, 0, 64);

    CHECK_STATUS(env.s[1].ndk->Dispatch->NdkReceive(env.s[1].ndk, ctx, &rs, 1), STATUS_SUCCESS);
}

static void wait_readable(int fd)
{
    struct pollfd pf = { .fd = fd, .events = POLLIN };

    CHECK_MSG(poll(&pf, 1, 5000) == 1, "side 1's socket never became readable");
}

/* Takes side 1's next completion, which must be the receive ctx of a 48-byte Send of seed. */
static void expect_recv(void *ctx, uint32_t seed, bool run_poll)
{
    NDK_RESULT_EX r;
    uint64_t end = ndk_test_now_ms() + 3000;

    while (env.s[1].cq->Dispatch->NdkGetCqResultsEx(env.s[1].cq, &r, 1) == 0) {
        CHECK_MSG(ndk_test_now_ms() < end, "receive %p never completed", ctx);
        if (run_poll)
            CHECK_EQ(iw_rx_poll(env.s[1].qp), 0);
    }
    CHECK(r.RequestContext == ctx);
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK_EQ(r.BytesTransferred, 48);
    CHECK(dpt_check(mb.p, 48, seed));
}

/* The sender's completions, taken by the harness's side 0 CQ. */
static void expect_sent(void *ctx)
{
    dpt_expect(&env, 0, NdkOperationTypeSend, ctx, STATUS_SUCCESS, 0);
}

static bool lent(struct iw_qp *qp)
{
    iw_lock_take(&qp->lock);
    bool l = qp->dp->lent;
    iw_lock_give(&qp->lock);
    return l;
}

/* The socket's reads go to the ring again: a Send in the epoll set, then the QP's handler. */
static void lend_again(struct iw_qp *qp, struct iw_pollable *p, uint32_t seed, void *ctx)
{
    post_recv(ctx);
    send_one(seed, ctx);
    wait_readable(p->fd);
    p->handler(p, EPOLLIN);
    CHECK_MSG(lent(qp), "data in the epoll set did not lend the socket's reads to the ring");
    expect_recv(ctx, seed, false);
    expect_sent(ctx);
}

/* This thread as the ring: the receive armed before, its recv, and ring_done. */
static void ring_receive(struct iw_pollable *p, uint32_t seed, void *ctx)
{
    uint8_t buf[IW_RING_BUF];

    post_recv(ctx);
    send_one(seed, ctx);
    wait_readable(p->fd);
    ssize_t n = recv(p->fd, buf, sizeof buf, MSG_DONTWAIT);
    CHECK_MSG(n > 0, "the ring's recv got %zd", n);
    CHECK_EQ(p->ring_done(p, buf, (int)n, false), 0);
    expect_recv(ctx, seed, false);
    expect_sent(ctx);
}

/* A consumer starts busy-polling: the socket leaves the ring (the QP's taking-back work runs on
 * the harness thread); then its own polls must read the next Send. */
static void poller_takes_over(struct iw_qp *qp, uint32_t seed, void *ctx)
{
    uint64_t end = ndk_test_now_ms() + 3000;

    iw_qp_set_polled(qp, true);
    while (lent(qp))
        CHECK_MSG(ndk_test_now_ms() < end, "the socket was never taken back from the ring");
    post_recv(ctx);
    send_one(seed, ctx);
    expect_recv(ctx, seed, true);
    expect_sent(ctx);
    iw_qp_set_polled(qp, false);
}

int main(void)
{
    struct dpt_conn_opts o;

    dpt_conn_opts_default(&o);
    dpt_env_init(&env);
    dpt_mr_reg(&env, &ma, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    dpt_mr_reg(&env, &mb, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    dpt_connect(&env, &o);
    atomic_store(&iw_progress_stub_ring, 1);
    /* The harness stops reading side 1 (a poll() already under way may run it once more). */
    atomic_store(&env.s[1].live, false);
    usleep(20000);

    struct iw_qp *qp = env.s[1].qp;
    struct iw_pollable *p = &qp->dp->poll;
    uint32_t seed = 1;

    for (int round = 0; round < 3; round++) {
        /* 1, 2, 3: the take's arm never used. */
        lend_again(qp, p, seed++, (void *)0x11);
        CHECK(p->ring_arm(p));
        ring_receive(p, seed++, (void *)0x12);
        CHECK_MSG(qp->dp->rx.ring_armed, "the take did not arm the next receive");
        poller_takes_over(qp, seed++, (void *)0x13);

        /* 4: the arm used (no lock), then the receive reclaimed, cancelled. */
        lend_again(qp, p, seed++, (void *)0x14);
        CHECK(p->ring_arm(p));
        ring_receive(p, seed++, (void *)0x15);
        CHECK(p->ring_arm(p));
        CHECK_MSG(!qp->dp->rx.ring_armed, "the ring's arm did not use the take's");
        CHECK_EQ(p->ring_done(p, NULL, -ECANCELED, true), 0);
        poller_takes_over(qp, seed++, (void *)0x16);
    }
    printf("ring: the take arms the next receive; an arm the ring never used leaves the socket to "
           "the poller (3 rounds)\n");

    atomic_store(&iw_progress_stub_ring, 0);
    atomic_store(&env.s[1].live, true);
    dpt_disconnect(&env);
    dpt_mr_free(&env, &ma);
    dpt_mr_free(&env, &mb);
    dpt_env_fini(&env);
    return 0;
}
