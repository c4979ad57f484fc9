/* test_dp_pollgrace: a busy poll of a CQ with one QP runs that QP's engines without
 * cq->qps_lock (poll.c: the QP published in cq->poll_one, a read side of one generation), so the
 * detach that ends the QP's polling (iw_qp_stop's first step) must wait for a poller still inside
 * the engines, and a steady poller must not hold the detach off.
 *   detach: a poller thread busy-polls the QP's CQ; the test holds qp->lock and a raw peer sends
 *     a Send, so the poller's RX engine stops inside rx.c waiting for qp->lock (it holds
 *     rx_owned; nobody else reads the socket). A detach started then must not return while the
 *     poller is in there; once qp->lock is let go the receive completes and the detach returns.
 *     Without the wait the detach returns at once and the test fails.
 *   steady: the poller keeps polling an idle CQ as fast as it can while the test detaches and
 *     attaches the QP again and again: every detach returns (each entry a new generation), and
 *     after the last detach the CQ has no QP for a poll to run (poll_one NULL).
 * Usage: test_dp_pollgrace detach|steady */
#include "dptest.h"

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static struct dpt_env env;
static struct dpt_mr m;
static atomic_bool stop_polling, detached;
static atomic_int got;                  /* completions the poller took */
static NDK_RESULT_EX result;

#define RECV_LEN 64u

static void *poller(void *arg)
{
    NDK_CQ *cq = env.s[0].cq;
    (void)arg;
    while (!atomic_load(&stop_polling)) {
        NDK_RESULT_EX r;
        if (cq->Dispatch->NdkGetCqResultsEx(cq, &r, 1) == 1) {
            result = r;
            atomic_fetch_add(&got, 1);
        }
    }
    return NULL;
}

static void *detacher(void *arg)
{
    (void)arg;
    iw_poll_detach(env.s[0].qp);
    atomic_store(&detached, true);
    return NULL;
}

/* Whether the poller sits in the RX engine: it holds rx_owned, and the socket is read empty. */
static bool poller_in_engine(int qfd)
{
    struct iw_dp *dp = env.s[0].qp->dp;
    int avail = -1;

    if (dp_rx_own_try(dp)) {
        dp_rx_own_release(dp);
        return false;
    }
    CHECK(ioctl(qfd, FIONREAD, &avail) == 0);
    return avail == 0;
}

static void wait_polled(void)
{
    uint64_t end = ndk_test_now_ms() + 10000;
    while (!atomic_load(&env.s[0].qp->polled))
        CHECK_MSG(ndk_test_now_ms() < end, "the poller never made the QP polled");
}

static void case_detach(int peer)
{
    struct iw_qp *qp = env.s[0].qp;
    pthread_t pt, dt;

    NDK_SGE r = { .VirtualAddress = m.p, .Length = RECV_LEN, .MemoryRegionToken = m.token };
    CHECK_STATUS(iw_post_receive(env.s[0].ndk, (void *)(uintptr_t)0x77, &r, 1), STATUS_SUCCESS);
    CHECK(pthread_create(&pt, NULL, poller, NULL) == 0);
    wait_polled();
    CHECK_MSG(atomic_load(&to_iw_cq(env.s[0].cq)->poll_one) != NULL, "a CQ with one QP has no QP published for its polls");

    iw_lock_take(&qp->lock);
    uint8_t frame[256];
    struct iw_fpdu_hdr h;
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_SEND;
    h.last = true;
    h.msn = 1;
    uint8_t pay[8];
    dpt_fill(pay, sizeof pay, 7);
    struct iw_iov v = { pay, sizeof pay };
    int n = iw_fpdu_build(&h, &v, 1, true, frame, sizeof frame);
    CHECK(n > 0);
    dpt_raw_send(peer, frame, (size_t)n);

    /* The poller reads the Send and waits for qp->lock: seen steadily for 20 ms. */
    uint64_t end = ndk_test_now_ms() + 10000;
    for (int seen = 0; seen < 20;) {
        seen = poller_in_engine(qp->dp->fd) ? seen + 1 : 0;
        CHECK_MSG(ndk_test_now_ms() < end, "the poller never got into the RX engine");
        usleep(1000);
    }
    CHECK(pthread_create(&dt, NULL, detacher, NULL) == 0);
    usleep(200 * 1000);
    CHECK_MSG(!atomic_load(&detached), "the detach returned while a poller was running the QP's RX engine");
    CHECK_EQ(atomic_load(&got), 0);
    iw_lock_give(&qp->lock);

    CHECK(pthread_join(dt, NULL) == 0);
    CHECK(atomic_load(&detached));
    end = ndk_test_now_ms() + 10000;
    while (atomic_load(&got) == 0)
        CHECK_MSG(ndk_test_now_ms() < end, "the receive never completed");
    atomic_store(&stop_polling, true);
    CHECK(pthread_join(pt, NULL) == 0);
    CHECK_STATUS(result.Status, STATUS_SUCCESS);
    CHECK(result.RequestContext == (void *)(uintptr_t)0x77);
    CHECK_EQ(result.BytesTransferred, sizeof pay);
    CHECK(dpt_check(m.p, sizeof pay, 7));
    CHECK(atomic_load(&to_iw_cq(env.s[0].cq)->poll_one) == NULL);
}

static void case_steady(void)
{
    struct iw_cq *cq = to_iw_cq(env.s[0].cq);
    pthread_t pt;

    CHECK(pthread_create(&pt, NULL, poller, NULL) == 0);
    wait_polled();
    for (int i = 0; i < 2000; i++) {
        iw_poll_detach(env.s[0].qp);
        CHECK(atomic_load(&cq->poll_one) == NULL);
        iw_poll_attach(env.s[0].qp);
        CHECK(atomic_load(&cq->poll_one) != NULL);
    }
    iw_poll_detach(env.s[0].qp);
    CHECK(atomic_load(&cq->poll_one) == NULL);
    atomic_store(&stop_polling, true);
    CHECK(pthread_join(pt, NULL) == 0);
    CHECK_EQ(atomic_load(&got), 0);
}

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 2 && (!strcmp(argv[1], "detach") || !strcmp(argv[1], "steady")),
              "usage: test_dp_pollgrace detach|steady");
    dpt_env_init(&env);
    dpt_mr_reg(&env, &m, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    struct dpt_conn_opts o;
    dpt_conn_opts_default(&o);
    int peer = dpt_connect_raw(&env, &o);
    /* Only the poller reads the QP's socket: the harness thread stops watching it. */
    atomic_store(&env.s[0].live, false);
    if (!strcmp(argv[1], "detach"))
        case_detach(peer);
    else
        case_steady();
    atomic_store(&env.s[0].live, true);
    close(peer);
    dpt_wait_lost(&env, 0, 10000);
    dpt_disconnect(&env);
    dpt_mr_free(&env, &m);
    dpt_env_fini(&env);
    printf("test_dp_pollgrace %s: ok\n", argv[1]);
    return 0;
}
