/* test_dp_rqgate: a receive's post takes the RQ's gate (qp->rq_gate) instead of qp->lock, and
 * whoever changes the RQ or the QP's state under qp->lock takes the gate too (iwarp.h).
 *   flush-waits  this thread holds the gate, as a post inside it would; an NdkFlush started
 *                meanwhile must neither return nor complete a queued receive until the gate is
 *                let go, then complete each receive once, CANCELLED. Fails when the state
 *                transition or the flush of the RQ skips the gate.
 *   storm        a thread posts receives as fast as it can while this one flushes the QP at a
 *                different post each time and polls the CQ, for 12 connections: every receive
 *                posted with STATUS_SUCCESS completes exactly once, CANCELLED (queued before the
 *                flush, or at once after it, §8 item 29), and none other does. Under TSan, a
 *                post's look at the state or the queue outside the gate is a reported race.
 * Usage: test_dp_rqgate flush-waits|storm */
#include "dptest.h"

#include <string.h>
#include <unistd.h>

static struct dpt_env env;

/* ---- flush-waits ---- */

static atomic_bool flush_done;

static void *flusher(void *arg)
{
    NDK_QP *q = arg;

    q->Dispatch->NdkFlush(q);
    atomic_store(&flush_done, true);
    return NULL;
}

static void flush_waits(void)
{
    struct iw_qp *qp = env.s[0].qp;
    struct dpt_mr m;
    NDK_RESULT_EX r;
    enum { NRECV = 4 };
    int seen[NRECV] = { 0 };
    pthread_t t;

    dpt_mr_reg(&env, &m, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (int i = 0; i < NRECV; i++) {
        NDK_SGE s = dpt_sge(&m, 0, 64);
        CHECK_STATUS(env.s[0].ndk->Dispatch->NdkReceive(env.s[0].ndk, (void *)(uintptr_t)(100 + i), &s, 1),
                     STATUS_SUCCESS);
    }
    /* The harness thread stops looking at the sides: its polls would wait on the QP's lock,
     * which the flush holds while it waits for the gate. */
    for (int i = 0; i < 2; i++)
        atomic_store(&env.s[i].live, false);
    CHECK_MSG(iw_qp_rq_gate_try(qp), "the RQ's gate is held with no post and no flush running");
    atomic_store(&flush_done, false);
    CHECK_EQ(pthread_create(&t, NULL, flusher, env.s[0].ndk), 0);
    usleep(300 * 1000);
    CHECK_MSG(!atomic_load(&flush_done), "NdkFlush returned while a post held the RQ's gate");
    CHECK_MSG(qp->state != IW_QP_ERROR, "the QP moved to ERROR while a post held the RQ's gate");
    CHECK_MSG(!dpt_try_poll(&env, 0, &r, 50), "a completion arrived while a post held the RQ's gate");
    iw_qp_rq_gate_release(qp);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK(atomic_load(&flush_done));
    for (int n = 0; n < NRECV; n++) {
        CHECK_MSG(dpt_try_poll(&env, 0, &r, 5000), "receive %d of %d never completed after the flush", n + 1,
                  NRECV);
        uintptr_t c = (uintptr_t)r.RequestContext;
        CHECK(c >= 100 && c < 100 + NRECV);
        CHECK_STATUS(r.Status, STATUS_CANCELLED);
        CHECK_EQ(seen[c - 100]++, 0);
    }
    CHECK(!dpt_try_poll(&env, 0, &r, 100));
    for (int i = 0; i < 2; i++)
        atomic_store(&env.s[i].live, true);
    dpt_mr_free(&env, &m);
}

/* ---- storm ---- */

#define STORM_POSTS 6000u

struct storm {
    NDK_QP *q;
    const struct dpt_mr *m;
    uint8_t posted[STORM_POSTS];      /* 1: NdkReceive returned STATUS_SUCCESS */
    atomic_uint ok;
    atomic_uint tried;                /* posts made so far */
    atomic_bool ended;
};

static void *poster(void *arg)
{
    struct storm *s = arg;

    for (uint32_t i = 0; i < STORM_POSTS; i++) {
        NDK_SGE sge = dpt_sge(s->m, (i % 16) * 64, 64);
        NTSTATUS st = s->q->Dispatch->NdkReceive(s->q, (void *)(uintptr_t)(i + 1), &sge, 1);
        /* A full RQ (no Send arrives to take them) refuses; nothing else may. */
        CHECK_MSG(st == STATUS_SUCCESS || st == STATUS_INSUFFICIENT_RESOURCES, "NdkReceive returned %#x",
                  (unsigned)st);
        if (st == STATUS_SUCCESS) {
            s->posted[i] = 1;
            atomic_fetch_add(&s->ok, 1);
        }
        atomic_store(&s->tried, i + 1);
        if (i % 64 == 0)
            sched_yield();
    }
    atomic_store(&s->ended, true);
    return NULL;
}

static void storm_round(unsigned round)
{
    static struct storm s;
    static uint8_t done[STORM_POSTS];
    struct dpt_conn_opts o;
    struct dpt_mr m;
    NDK_RESULT_EX r;
    pthread_t t;
    unsigned got = 0;

    dpt_conn_opts_default(&o);
    o.rq_depth = 64;
    o.cq_depth = 2 * STORM_POSTS;
    dpt_connect(&env, &o);
    dpt_mr_reg(&env, &m, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    memset(&s, 0, sizeof(s));
    memset(done, 0, sizeof(done));
    s.q = env.s[0].ndk;
    s.m = &m;
    CHECK_EQ(pthread_create(&t, NULL, poster, &s), 0);
    /* The flush lands at a different post each round, the poster running on. */
    unsigned at = (round * 7919u) % (STORM_POSTS / 2);
    while (atomic_load(&s.tried) < at)
        sched_yield();
    env.s[0].ndk->Dispatch->NdkFlush(env.s[0].ndk);
    for (;;) {
        bool ended = atomic_load(&s.ended);   /* before the poll: what it posted is in then */
        if (!dpt_try_poll(&env, 0, &r, 200)) {
            if (ended)
                break;
            continue;
        }
        uintptr_t c = (uintptr_t)r.RequestContext;
        CHECK_MSG(c >= 1 && c <= STORM_POSTS, "a completion with context %#lx", (unsigned long)c);
        CHECK_STATUS(r.Status, STATUS_CANCELLED);
        CHECK_MSG(done[c - 1]++ == 0, "receive %lu completed twice", (unsigned long)c);
        got++;
    }
    CHECK_EQ(pthread_join(t, NULL), 0);
    for (uint32_t i = 0; i < STORM_POSTS; i++)
        CHECK_MSG(done[i] == s.posted[i], "receive %u: posted %s, completed %u times", i + 1,
                  s.posted[i] ? "with success" : "in vain", done[i]);
    CHECK_EQ(got, atomic_load(&s.ok));
    printf("round %u: %u receives posted, each completed once\n", round, got);
    dpt_mr_free(&env, &m);
    dpt_disconnect(&env);
}

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 2, "usage: test_dp_rqgate flush-waits|storm");
    dpt_env_init(&env);
    if (!strcmp(argv[1], "flush-waits")) {
        struct dpt_conn_opts o;
        dpt_conn_opts_default(&o);
        dpt_connect(&env, &o);
        flush_waits();
        dpt_disconnect(&env);
    } else if (!strcmp(argv[1], "storm")) {
        for (unsigned round = 0; round < 12; round++)
            storm_round(round);
    } else {
        CHECK_MSG(0, "unknown mode %s", argv[1]);
    }
    dpt_env_fini(&env);
    printf("test_dp_rqgate %s: OK\n", argv[1]);
    return 0;
}
