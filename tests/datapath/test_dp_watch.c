/* test_dp_watch: where a QP's socket stands with the progress thread's epoll set (qp.c,
 * iw_qp_events_locked). While a consumer busy-polls the QP's CQ, the socket is out of the set
 * altogether (the poller reads it and sees a hang-up itself); arming the CQ puts it back, watched
 * for data and the hang-up; a busy poll takes it out again; and when putting it back fails, the
 * connection fails rather than leave a socket that nobody watches.
 * The epoll set is progress_stub.c's record of the last registration (its iw_progress_watch can
 * be made to fail); the harness thread reads the sockets itself, as in the other isolated tests.
 * Usage: test_dp_watch */
#include "dptest.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static struct dpt_env env;
static struct dpt_mr ma, mb;

/* Busy-polls side 0's CQ (nothing expected) until its QP counts as polled: the provider's rule is
 * IW_POLL_ENTER short polls in a row of an unarmed CQ, each soon after the last. */
static void busy_poll_until_polled(void)
{
    struct iw_qp *qp = env.s[0].qp;
    NDK_RESULT_EX r;
    uint64_t end = ndk_test_now_ms() + 5000;
    bool on = false;

    while (!on) {
        CHECK_MSG(ndk_test_now_ms() < end, "busy polls never made the QP polled");
        for (int i = 0; i < 64; i++)
            CHECK_EQ(env.s[0].cq->Dispatch->NdkGetCqResultsEx(env.s[0].cq, &r, 1), 0);
        iw_lock_take(&qp->lock);
        on = qp->poll_on;
        iw_lock_give(&qp->lock);
    }
}

static uint32_t watched(void)
{
    struct iw_qp *qp = env.s[0].qp;

    iw_lock_take(&qp->lock);
    uint32_t ev = qp->dp->poll.events;
    iw_lock_give(&qp->lock);
    return ev;
}

/* One Send from side 1 into a receive of side 0, taken by side 0's busy poll. */
static void ping(uint32_t seed)
{
    NDK_SGE rs = dpt_sge(&ma, 0, 64), ss = dpt_sge(&mb, 0, 48);
    NDK_RESULT_EX r;
    uint64_t end = ndk_test_now_ms() + 5000;

    dpt_fill(mb.p, 48, seed);
    CHECK_STATUS(env.s[0].ndk->Dispatch->NdkReceive(env.s[0].ndk, (void *)0xA1, &rs, 1), STATUS_SUCCESS);
    CHECK_STATUS(env.s[1].ndk->Dispatch->NdkSend(env.s[1].ndk, (void *)0xB1, &ss, 1, 0), STATUS_SUCCESS);
    while (env.s[0].cq->Dispatch->NdkGetCqResultsEx(env.s[0].cq, &r, 1) == 0)
        CHECK_MSG(ndk_test_now_ms() < end, "the Send never arrived");
    CHECK(r.RequestContext == (void *)0xA1);
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK_EQ(r.BytesTransferred, 48);
    CHECK(dpt_check(ma.p, 48, seed));
    dpt_expect(&env, 1, NdkOperationTypeSend, (void *)0xB1, STATUS_SUCCESS, 0);
}

int main(void)
{
    struct dpt_conn_opts o;
    NDK_CQ *cq;

    dpt_conn_opts_default(&o);
    o.crc = false;
    dpt_env_init(&env);
    dpt_mr_reg(&env, &ma, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    dpt_mr_reg(&env, &mb, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    dpt_connect(&env, &o);
    cq = env.s[0].cq;

    /* Established, nobody polling: the progress thread watches data and the hang-up. */
    CHECK_EQ(watched() & (EPOLLIN | EPOLLRDHUP), EPOLLIN | EPOLLRDHUP);
    for (uint32_t round = 0; round < 3; round++) {
        /* The harness armed the CQ; a completion fires that arm, and only an unarmed CQ's
         * polls count as busy. */
        ping(2 * round);
        busy_poll_until_polled();
        CHECK_EQ(watched(), 0);                        /* out of the set */
        ping(2 * round + 1);
        CHECK_EQ(watched(), 0);
        cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY); /* the consumer is going to wait */
        CHECK_EQ(watched() & (EPOLLIN | EPOLLRDHUP), EPOLLIN | EPOLLRDHUP);
        NDK_RESULT_EX r;
        CHECK_EQ(cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1), 0);
    }
    printf("watch: out of the epoll set while busy-polled, back in at each arm (3 rounds)\n");

    /* The consumer's polls came further apart (more than IW_POLL_GAP_NS: the CQ no longer counts
     * it as busy) before it armed: its QP is still polled (no expiry check here), and the
     * arm must hand the socket back, not leave it to the expiry check (up to
     * IW_POLL_CHECK_MAX_MS later, a notification that late). */
    ping(50);
    busy_poll_until_polled();
    for (int i = 0; i < 40; i++) {                  /* more than IW_POLL_CLOCK_EVERY */
        NDK_RESULT_EX r;
        usleep(1000);
        CHECK_EQ(cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1), 0);
    }
    CHECK_EQ(watched(), 0);
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
    CHECK_EQ(watched() & (EPOLLIN | EPOLLRDHUP), EPOLLIN | EPOLLRDHUP);
    printf("watch: an arm after a pause in the busy polls hands the socket back too\n");

    /* Putting it back fails: the connection fails, as when the registration at establishment
     * fails (qp.c), instead of a socket nobody reads. */
    ping(100);
    busy_poll_until_polled();
    atomic_store(&iw_progress_stub_watch_err, -ENOMEM);
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);
    atomic_store(&iw_progress_stub_watch_err, 0);
    dpt_wait_lost(&env, 0, 5000);
    CHECK_EQ(atomic_load(&env.s[0].failed), -ENOMEM);
    printf("watch: a failed return to the epoll set fails the connection (-ENOMEM)\n");

    dpt_disconnect(&env);
    dpt_mr_free(&env, &ma);
    dpt_mr_free(&env, &mb);
    dpt_env_fini(&env);
    return 0;
}
