/* test_dp_errors: access violations between two QPs of the data path (the requester's request
 * completes with an error, the target Terminates, both QPs go to error, nothing is written),
 * and NdkFlush with requests outstanding (each completes exactly once, CANCELLED), also when
 * a flush comes before the engines stopped. */
#include "dptest.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static struct dpt_env env;
static struct dpt_mr ma, mb, mro;     /* mro: B's MR without remote rights */

static bool zero(const struct dpt_mr *m)
{
    for (size_t i = 0; i < m->len; i++)
        if (m->p[i])
            return false;
    return true;
}

/* Posts a bad Write (DEFER) and a good Read behind it from A; B has one receive. Returns after
 * both sides went down; checks the statuses. */
static void violation(uint64_t raddr, uint32_t rtoken, NTSTATUS want, uint32_t pec_low)
{
    struct dpt_conn_opts o;
    NDK_RESULT_EX r;

    memset(&o, 0, sizeof o);
    o.crc = true;
    dpt_connect(&env, &o);
    memset(mb.p, 0, mb.len);
    memset(mro.p, 0, mro.len);
    NDK_SGE rb = dpt_sge(&mb, 0, 100);
    CHECK_STATUS(iw_post_receive(env.s[1].ndk, (void *)0xB1, &rb, 1), STATUS_SUCCESS);
    NDK_SGE s = dpt_sge(&ma, 0, 4096);
    dpt_fill(ma.p, 4096, 5);
    CHECK_STATUS(iw_post_write(env.s[0].ndk, (void *)0xA1, &s, 1, raddr, rtoken, NDK_OP_FLAG_DEFER), STATUS_SUCCESS);
    NDK_SGE d = dpt_sge(&ma, 8192, 64);
    CHECK_STATUS(iw_post_read(env.s[0].ndk, (void *)0xA2, &d, 1, (uint64_t)(uintptr_t)mb.p, mb.token, 0),
                 STATUS_SUCCESS);
    dpt_wait_lost(&env, 1, 5000);
    dpt_wait_lost(&env, 0, 5000);
    /* A: the oldest request still outstanding when the Terminate arrived carries the peer's
     * reason: the Write itself if it was not completed yet, else the Read behind it (a Write
     * completes on transmit: RFC 5040 has no acknowledgement). In posting order. */
    dpt_poll(&env, 0, &r, 2000);
    CHECK(r.RequestContext == (void *)0xA1);
    bool write_failed = r.Status != STATUS_SUCCESS;
    if (write_failed) {
        CHECK_STATUS(r.Status, want);
        CHECK_EQ(r.ProviderErrorCode, IW_PEC_REMOTE | pec_low);
    }
    dpt_poll(&env, 0, &r, 2000);
    CHECK(r.RequestContext == (void *)0xA2);
    CHECK_STATUS(r.Status, write_failed ? STATUS_CANCELLED : want);
    if (!write_failed)
        CHECK_EQ(r.ProviderErrorCode, IW_PEC_REMOTE | pec_low);
    CHECK(!dpt_try_poll(&env, 0, &r, 50));
    /* B: its receive reports the violation too */
    dpt_poll(&env, 1, &r, 2000);
    CHECK(r.RequestContext == (void *)0xB1);
    CHECK_STATUS(r.Status, want);
    CHECK_EQ(r.ProviderErrorCode, IW_PEC_LOCAL | pec_low);
    CHECK(!dpt_try_poll(&env, 1, &r, 50));
    CHECK(zero(&mb) && zero(&mro));
    CHECK(dpt_mr_guard_ok(&mb) && dpt_mr_guard_ok(&mro));
    dpt_disconnect(&env);
}

static void flush_test(void)
{
    struct dpt_conn_opts o;
    NDK_RESULT_EX r;
    const int nrecv = 50, nsq = 60;
    int seen_r[50] = { 0 }, seen_s[60] = { 0 };

    memset(&o, 0, sizeof o);
    o.ord = 1;
    dpt_connect(&env, &o);
    for (int i = 0; i < nrecv; i++) {
        NDK_SGE rb = dpt_sge(&ma, 0, 10);
        CHECK_STATUS(iw_post_receive(env.s[0].ndk, (void *)(uintptr_t)(1000 + i), &rb, 1), STATUS_SUCCESS);
    }
    /* Reads, big Writes and silent Sends (B has no receives: B would Terminate on the first
     * Send, so only Reads and Writes here) */
    for (int i = 0; i < nsq; i++) {
        NDK_SGE s = dpt_sge(&ma, 0, 1u << 20);
        ULONG fl = i % 5 == 0 ? NDK_OP_FLAG_SILENT_SUCCESS : 0;
        if (i % 2)
            CHECK_STATUS(iw_post_read(env.s[0].ndk, (void *)(uintptr_t)(2000 + i), &s, 1, (uint64_t)(uintptr_t)mb.p,
                                    mb.token, fl),
                         STATUS_SUCCESS);
        else
            CHECK_STATUS(iw_post_write(env.s[0].ndk, (void *)(uintptr_t)(2000 + i), &s, 1, (uint64_t)(uintptr_t)mb.p,
                                     mb.token, fl),
                         STATUS_SUCCESS);
    }
    env.s[0].ndk->Dispatch->NdkFlush(env.s[0].ndk);
    /* posts after the flush fail inline (not connected) or complete CANCELLED */
    NDK_SGE s = dpt_sge(&ma, 0, 1);
    CHECK_STATUS(iw_post_send(env.s[0].ndk, NULL, &s, 1, 0), STATUS_CONNECTION_INVALID);
    int nr = 0, ns = 0;
    uint64_t last_sq = 0;
    while (dpt_try_poll(&env, 0, &r, 500)) {
        uintptr_t c = (uintptr_t)r.RequestContext;
        if (c >= 1000 && c < 1000 + (uintptr_t)nrecv) {
            CHECK_STATUS(r.Status, STATUS_CANCELLED);
            CHECK_EQ(seen_r[c - 1000]++, 0);
            nr++;
        } else {
            CHECK(c >= 2000 && c < 2000 + (uintptr_t)nsq);
            CHECK(r.Status == STATUS_SUCCESS || r.Status == STATUS_CANCELLED);
            /* A silent-success request reports only when it did not succeed (§2.9). */
            if ((c - 2000) % 5 == 0)
                CHECK_STATUS(r.Status, STATUS_CANCELLED);
            CHECK_EQ(seen_s[c - 2000]++, 0);
            CHECK(c > last_sq);                      /* posting order (§5.6) */
            last_sq = c;
            ns++;
        }
    }
    CHECK_EQ(nr, nrecv);
    int ns_expected = 0;
    for (int i = 0; i < nsq; i++) {
        if (i % 5)
            CHECK_EQ(seen_s[i], 1);
        ns_expected += seen_s[i];
    }
    /* Every non-silent request once, plus the silent ones the flush cancelled. */
    CHECK_EQ(ns, ns_expected);
    CHECK(ns >= nsq - nsq / 5);
    dpt_disconnect(&env);
}

/* A flush that comes after the CM moved the QP to ERROR but before its connection_lost stopped
 * the engines (here a receive posted then; NdkDisconnect of the CLOSED connector is the other
 * way) must leave the SQ to the stop: a Write being sent holds references on its MR that only
 * the stop gives back. Lost, a deregistration would pend for ever (ndkperf hung in teardown). */
static void early_flush_test(void)
{
    enum { N = 16 };
    const size_t len = 256u << 10;
    struct dpt_conn_opts o;
    struct dpt_mr mc;
    NDK_RESULT_EX r;
    int seen[N] = { 0 };

    dpt_conn_opts_default(&o);
    int peer = dpt_connect_raw(&env, &o);            /* never reads: the TX engine blocks */
    struct iw_qp *qp = env.s[0].qp;
    dpt_mr_reg(&env, &mc, len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE s = dpt_sge(&mc, 0, len);
    for (int i = 0; i < N; i++)
        CHECK_STATUS(iw_post_write(env.s[0].ndk, (void *)(uintptr_t)(3000 + i), &s, 1, 0x10000, 0x1234, 0),
                     STATUS_SUCCESS);
    uint64_t end = ndk_test_now_ms() + 5000;
    bool blocked = false;
    while (!blocked) {
        CHECK_MSG(ndk_test_now_ms() < end, "the TX engine never waited for room");
        usleep(1000);
        iw_lock_take(&qp->lock);
        blocked = qp->dp->want_out && qp->dp->sq_issued > 0;
        iw_lock_give(&qp->lock);
    }
    iw_lock_take(&qp->lock);
    CHECK_EQ(iw_qp_modify_locked(qp, IW_QP_ERROR), 0);   /* cm.c iw_conn_close_locked */
    iw_lock_give(&qp->lock);
    NDK_SGE rb = dpt_sge(&ma, 0, 10);
    CHECK_STATUS(iw_post_receive(env.s[0].ndk, (void *)0xC1, &rb, 1), STATUS_SUCCESS);
    atomic_store(&env.s[0].failed, -ECONNRESET);      /* the harness tears down as the CM would */
    dpt_wait_lost(&env, 0, 5000);
    int n = 0, recv = 0;
    uintptr_t last = 0;
    while (dpt_try_poll(&env, 0, &r, 200)) {
        uintptr_t c = (uintptr_t)r.RequestContext;
        if (c == 0xC1) {
            CHECK_STATUS(r.Status, STATUS_CANCELLED);
            recv++;
            continue;
        }
        CHECK(c >= 3000 && c < 3000 + N);
        CHECK(r.Status == STATUS_SUCCESS || r.Status == STATUS_CANCELLED);
        CHECK_EQ(seen[c - 3000]++, 0);
        CHECK(c > last);                             /* posting order (§5.6) */
        last = c;
        n++;
    }
    CHECK_EQ(recv, 1);
    CHECK_EQ(n, N);
    /* Nothing holds the region any more: the deregistration completes inline. */
    CHECK_STATUS(mc.mr->Dispatch->NdkDeregisterMr(mc.mr, NULL, NULL), STATUS_SUCCESS);
    dpt_disconnect(&env);
    close(peer);
    dpt_mr_free(&env, &mc);
    printf("early flush: %d Writes and a receive completed once each, the MR deregistered inline\n", n);
}

int main(void)
{
    dpt_env_init(&env);
    ULONG all = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
    dpt_mr_reg(&env, &ma, 2u << 20, all);
    dpt_mr_reg(&env, &mb, 2u << 20, all);
    dpt_mr_reg(&env, &mro, 8192, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);

    /* invalid STag (stale key) */
    violation((uint64_t)(uintptr_t)mb.p, mb.token ^ 0x11, STATUS_ACCESS_VIOLATION, 0x010100);
    /* beyond the region */
    violation((uint64_t)(uintptr_t)(mb.p + mb.len - 100), mb.token, STATUS_REMOTE_RESOURCES, 0x010101);
    /* no remote write right: RDMAP access violation */
    violation((uint64_t)(uintptr_t)mro.p, mro.token, STATUS_ACCESS_VIOLATION, 0x000102);
    CHECK(dpt_mr_guard_ok(&ma));

    flush_test();
    early_flush_test();

    dpt_mr_free(&env, &ma);
    dpt_mr_free(&env, &mb);
    dpt_mr_free(&env, &mro);
    dpt_env_fini(&env);
    printf("test_dp_errors: OK\n");
    return 0;
}
