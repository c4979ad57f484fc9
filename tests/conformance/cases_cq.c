/* cases_cq.c - CQ arming and notification (§5.7), overflow (§3.4), SRQ limit (§5.9).
 *
 * The server is the side under observation: it arms its receive CQ and counts notifications.
 * The client is a sender that follows the server's commands over the sync channel. */
#define _GNU_SOURCE
#include "conform.h"

#include <string.h>

#define T_SEND 0x5E11u     /* client: send len messages of 8 bytes with flags arg, then T_SENT */
#define T_SENT 0x5E12u
#define T_END  0x5E1Du
#define T_LENIENT 0x80000000u   /* in T_SEND's flags: the receiver may break the connection */

struct sender_cfg {
    struct cf_qp_attr srv, cli;
};

/* The client of every case here. */
static void sender_client(int fd, void *arg)
{
    struct sender_cfg *cfg = arg;
    struct cf_conn c;
    cf_client_up(&c, fd, &cfg->cli);
    struct cf_mem m;
    cf_mem_alloc(&m, 4096, 0, 0);
    cf_mem_reg(&m, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    uintptr_t ctx = 0x1000;
    for (;;) {
        struct cf_msg msg = cf_hear_any(fd);
        if (msg.tag == T_END)
            break;
        CHECK_EQ(msg.tag, T_SEND);
        bool lenient = (msg.arg & T_LENIENT) != 0;
        ULONG flags = (ULONG)(msg.arg & ~(uint64_t)T_LENIENT);
        for (uint64_t i = 0; i < msg.len; i++) {
            cf_fill(m.buf, 8, (uint32_t)ctx, 0);
            NDK_SGE sge = cf_sge(&m, 0, 8);
            if (lenient) {
                /* The receiver overflows its CQ on purpose; it may end the connection. */
                if (c.qp->Dispatch->NdkSend(c.qp, (PVOID)ctx, &sge, 1, flags) == STATUS_SUCCESS) {
                    NDK_RESULT_EX res;
                    CHECK_MSG(cf_cq_next(c.icq, &res, cf_ms(15000)), "send %#lx never completed", (unsigned long)ctx);
                }
            } else {
                cf_post_send(&c, ctx, &sge, 1, flags);
                cf_cq_expect(c.icq, ctx, STATUS_SUCCESS, NdkOperationTypeSend);
            }
            ctx++;
        }
        cf_tell(fd, T_SENT, 0, 0, 0, 0);
    }
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

/* Server helpers. */
struct rx {
    struct cf_conn c;
    struct cf_mem m;
    int fd;
    uintptr_t next_ctx, next_expected;
};

static void rx_up(struct rx *r, int fd, const struct cf_qp_attr *attr, int nrecv)
{
    r->fd = fd;
    cf_server_up(&r->c, fd, attr);
    cf_mem_alloc(&r->m, 64 * 1024, 0, 0);
    cf_mem_reg(&r->m, &r->c.ad, r->c.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    r->next_ctx = r->next_expected = 0x2000;
    for (int i = 0; i < nrecv; i++) {
        NDK_SGE sge = cf_sge(&r->m, (size_t)(i % 64) * 1024, 1024);
        cf_post_recv(&r->c, r->next_ctx++, &sge, 1);
    }
}

static void rx_send(struct rx *r, int n, ULONG flags)
{
    cf_tell(r->fd, T_SEND, 0, 0, (uint64_t)n, flags);
    cf_hear(r->fd, T_SENT);
}

/* Polls (no arming) until n receive completions arrived, checking them. */
static void rx_drain(struct rx *r, int n)
{
    uint64_t end = cf_now_ms() + (uint64_t)cf_ms(10000);
    int got = 0;
    while (got < n) {
        NDK_RESULT_EX res;
        if (cf_cq_poll(r->c.rcq, &res, 1) == 1) {
            /* Receive completions come in message order; SRQ buffers may be taken in any order. */
            CHECK_MSG(r->c.srq || (uintptr_t)res.RequestContext == r->next_expected,
                      "receive completion %#lx, expected %#lx (posting order)", (unsigned long)(uintptr_t)res.RequestContext,
                      (unsigned long)r->next_expected);
            CHECK_ST(res.Status, STATUS_SUCCESS);
            CHECK_EQ(res.BytesTransferred, 8);
            CHECK_EQ(res.Type, NdkOperationTypeReceive);
            CHECK_MSG(res.QPContext == &r->c, "QPContext %p, expected %p", res.QPContext, (void *)&r->c);
            r->next_expected++;
            got++;
            continue;
        }
        CHECK_MSG(cf_now_ms() < end, "only %d of %d receive completions arrived", got, n);
        cf_sleep_ms(2);
    }
}

static void rx_down(struct rx *r)
{
    cf_tell(r->fd, T_END, 0, 0, 0, 0);
    cf_mem_free(&r->m);
    cf_conn_fini(&r->c);
}

static const int QUIET_MS = 300;   /* how long "no notification" is watched */

static void expect_no_notify(struct cf_cq *cq, int have, const char *why)
{
    cf_sleep_ms(QUIET_MS);
    int n = cf_cq_notifies(cq);
    CHECK_MSG(n == have, "%d notification(s), expected %d: %s (§5.7)", n, have, why);
}

static void expect_notify(struct cf_cq *cq, int want, NTSTATUS st, const char *why)
{
    CHECK_MSG(cf_cq_wait_notifies(cq, want, cf_ms(10000)), "no notification: %s (§5.7)", why);
    CHECK_MSG(cf_cq_last(cq) == st, "notification status %s, expected %s: %s", cf_status_name(cf_cq_last(cq)),
              cf_status_name(st), why);
    cf_sleep_ms(50);
    CHECK_MSG(cf_cq_notifies(cq) == want, "%d notifications, expected %d: %s (one per arming)", cf_cq_notifies(cq),
              want, why);
}

static void arm_any_server(int fd, void *arg)
{
    (void)arg;
    struct rx r;
    rx_up(&r, fd, NULL, 32);
    struct cf_cq *cq = r.c.rcq;
    cf_cq_arm(cq, NDK_CQ_NOTIFY_ANY);
    expect_no_notify(cq, 0, "armed, nothing completed");
    rx_send(&r, 1, 0);
    expect_notify(cq, 1, STATUS_SUCCESS, "ANY armed, one receive completed");
    rx_send(&r, 1, 0);
    expect_no_notify(cq, 1, "a second completion without re-arming");
    /* Re-arm with an entry that arrived after the last notification: immediate (rule 2). */
    cf_cq_arm(cq, NDK_CQ_NOTIFY_ANY);
    expect_notify(cq, 2, STATUS_SUCCESS, "re-armed with a completion newer than the last notification");
    rx_drain(&r, 2);
    /* Two arms before anything happens merge into one (rule 4): exactly one notification. */
    cf_cq_arm(cq, NDK_CQ_NOTIFY_ANY);
    cf_cq_arm(cq, NDK_CQ_NOTIFY_ANY);
    rx_send(&r, 3, 0);
    expect_notify(cq, 3, STATUS_SUCCESS, "ANY armed twice, three receives");
    expect_no_notify(cq, 3, "three completions after one (merged) arm");
    rx_drain(&r, 3);
    /* The initiator CQ is independent: arming the receive CQ never notified the other one. */
    CHECK_EQ(cf_cq_notifies(r.c.icq), 0);
    rx_down(&r);
}

void case_cq_arm_any(void)
{
    struct sender_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cf_pair(arm_any_server, sender_client, &cfg, cf_ms(50000));
}

static void arm_solicited_server(int fd, void *arg)
{
    (void)arg;
    struct rx r;
    rx_up(&r, fd, NULL, 32);
    struct cf_cq *cq = r.c.rcq;
    cf_cq_arm(cq, NDK_CQ_NOTIFY_SOLICITED);
    rx_send(&r, 2, 0);
    rx_drain(&r, 2);
    expect_no_notify(cq, 0, "SOLICITED armed, two unsolicited receives");
    rx_send(&r, 1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
    expect_notify(cq, 1, STATUS_SUCCESS, "SOLICITED armed, a Send with SEND_AND_SOLICIT_EVENT arrived");
    rx_drain(&r, 1);
    /* A group: plain, plain, solicited -> one notification (§2.9 NdkSend). */
    cf_cq_arm(cq, NDK_CQ_NOTIFY_SOLICITED);
    rx_send(&r, 2, 0);
    rx_drain(&r, 2);
    expect_no_notify(cq, 1, "unsolicited sends of a group");
    rx_send(&r, 1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
    expect_notify(cq, 2, STATUS_SUCCESS, "the solicited last message of a group");
    rx_drain(&r, 1);
    /* Any completion with an error status satisfies SOLICITED (§5.7 rule 5): flush the QP. */
    cf_cq_arm(cq, NDK_CQ_NOTIFY_SOLICITED);
    r.c.qp->Dispatch->NdkFlush(r.c.qp);
    expect_notify(cq, 3, STATUS_SUCCESS, "SOLICITED armed, flushed receives completed with STATUS_CANCELLED");
    NDK_RESULT_EX res;
    CHECK(cf_cq_poll(cq, &res, 1) == 1);
    CHECK_ST(res.Status, STATUS_CANCELLED);
    rx_down(&r);
}

void case_cq_arm_solicited(void)
{
    struct sender_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cf_pair(arm_solicited_server, sender_client, &cfg, cf_ms(50000));
}

static void arm_errors_server(int fd, void *arg)
{
    (void)arg;
    struct rx r;
    struct cf_qp_attr at = { .cq_depth = 8, .rq_depth = 32 };
    rx_up(&r, fd, &at, 32);
    struct cf_cq *cq = r.c.rcq;
    cf_cq_arm(cq, NDK_CQ_NOTIFY_ERRORS);
    rx_send(&r, 2, 0);
    rx_send(&r, 1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
    rx_drain(&r, 3);
    expect_no_notify(cq, 0, "ERRORS armed: ordinary and solicited completions do not match");
    /* Overflow the 8-entry CQ: the ERRORS arm reports it. */
    rx_send(&r, 12, T_LENIENT);
    expect_notify(cq, 1, STATUS_BUFFER_OVERFLOW, "ERRORS armed, the CQ overflowed");
    rx_down(&r);
}

void case_cq_arm_errors(void)
{
    struct sender_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cf_pair(arm_errors_server, sender_client, &cfg, cf_ms(50000));
}

static ULONG merge(ULONG a, ULONG b)
{
    if (a == NDK_CQ_NOTIFY_ANY || b == NDK_CQ_NOTIFY_ANY)
        return NDK_CQ_NOTIFY_ANY;
    if (a == NDK_CQ_NOTIFY_SOLICITED || b == NDK_CQ_NOTIFY_SOLICITED)
        return NDK_CQ_NOTIFY_SOLICITED;
    return NDK_CQ_NOTIFY_ERRORS;
}

static const char *arm_name(ULONG t)
{
    return t == NDK_CQ_NOTIFY_ANY ? "ANY" : t == NDK_CQ_NOTIFY_SOLICITED ? "SOLICITED" : "ERRORS";
}

static void rearm_server(int fd, void *arg)
{
    (void)arg;
    struct rx r;
    rx_up(&r, fd, NULL, 32);
    struct cf_cq *cq = r.c.rcq;
    const ULONG types[3] = { NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_ERRORS, NDK_CQ_NOTIFY_SOLICITED };
    int want = 0;
    bool leftover_errors = false;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            ULONG a1 = types[i], a2 = types[j], eff = merge(a1, a2);
            if (leftover_errors)
                eff = merge(eff, NDK_CQ_NOTIFY_ERRORS);   /* same: ERRORS is the identity */
            char why[128];
            snprintf(why, sizeof why, "armed %s then %s (effective %s)", arm_name(a1), arm_name(a2), arm_name(eff));
            cf_cq_arm(cq, a1);
            cf_cq_arm(cq, a2);
            rx_send(&r, 1, 0);
            rx_drain(&r, 1);
            if (eff == NDK_CQ_NOTIFY_ANY) {
                expect_notify(cq, ++want, STATUS_SUCCESS, why);
                leftover_errors = false;
                continue;
            }
            expect_no_notify(cq, want, why);
            rx_send(&r, 1, NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT);
            rx_drain(&r, 1);
            if (eff == NDK_CQ_NOTIFY_SOLICITED) {
                expect_notify(cq, ++want, STATUS_SUCCESS, why);
                leftover_errors = false;
            } else {
                expect_no_notify(cq, want, why);
                leftover_errors = true;   /* the ERRORS arm stays outstanding */
            }
        }
        cf_note("row %s done", arm_name(types[i]));
    }
    rx_down(&r);
}

void case_cq_rearm_merge(void)
{
    struct sender_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cf_pair(rearm_server, sender_client, &cfg, cf_ms(80000));
}

static void overflow_server(int fd, void *arg)
{
    (void)arg;
    struct rx r;
    struct cf_qp_attr at = { .cq_depth = 4, .rq_depth = 16 };
    rx_up(&r, fd, &at, 16);
    struct cf_cq *cq = r.c.rcq;
    /* Overflow while not armed at all; the error is latched and reported at the next arm of any
     * type (§8.32), with STATUS_BUFFER_OVERFLOW (§3.4). */
    rx_send(&r, 10, T_LENIENT);
    cf_sleep_ms(300);
    CHECK_EQ(cf_cq_notifies(cq), 0);
    cf_cq_arm(cq, NDK_CQ_NOTIFY_SOLICITED);
    expect_notify(cq, 1, STATUS_BUFFER_OVERFLOW, "a CQ of depth 4 received 10 completions before it was armed");
    rx_down(&r);
}

void case_cq_overflow(void)
{
    struct sender_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cf_pair(overflow_server, sender_client, &cfg, cf_ms(50000));
}

static void srq_limit_server(int fd, void *arg)
{
    (void)arg;
    struct rx r;
    struct cf_qp_attr at = { .use_srq = true, .srq_depth = 32 };
    rx_up(&r, fd, &at, 8);
    struct cf_srq *s = r.c.srq;
    /* Armed at 4 with 8 queued: nothing. */
    CHECK_ST(cf_srq_modify(s, 0, 4), STATUS_SUCCESS);
    cf_sleep_ms(QUIET_MS);
    CHECK_EQ(cf_srq_notifies(s), 0);
    /* 8 -> 4 queued: not below 4. */
    rx_send(&r, 4, 0);
    rx_drain(&r, 4);
    cf_sleep_ms(QUIET_MS);
    CHECK_MSG(cf_srq_notifies(s) == 0, "SRQ notification at 4 queued with threshold 4 (fires below, §5.9)");
    /* 4 -> 3: below -> exactly one notification. */
    rx_send(&r, 1, 0);
    rx_drain(&r, 1);
    CHECK_MSG(cf_srq_wait_notifies(s, 1, cf_ms(10000)), "no SRQ notification when the queued count fell below the "
              "threshold (§5.9)");
    rx_send(&r, 1, 0);
    rx_drain(&r, 1);
    cf_sleep_ms(QUIET_MS);
    CHECK_MSG(cf_srq_notifies(s) == 1, "%d SRQ notifications for one arming (§5.9)", cf_srq_notifies(s));
    pthread_mutex_lock(&s->m);
    NTSTATUS last = s->last;
    pthread_mutex_unlock(&s->m);
    CHECK_ST(last, STATUS_SUCCESS);
    /* Threshold 0 keeps the (disarmed) state. */
    CHECK_ST(cf_srq_modify(s, 0, 0), STATUS_SUCCESS);
    cf_sleep_ms(QUIET_MS);
    CHECK_EQ(cf_srq_notifies(s), 1);
    /* Re-arm while already below: notification right away. */
    CHECK_ST(cf_srq_modify(s, 0, 4), STATUS_SUCCESS);
    CHECK_MSG(cf_srq_wait_notifies(s, 2, cf_ms(10000)), "re-armed SRQ already below its threshold did not notify "
              "(§5.9)");
    /* Refill above a new threshold: quiet. */
    for (int i = 0; i < 10; i++) {
        NDK_SGE sge = cf_sge(&r.m, (size_t)i * 1024, 1024);
        cf_post_recv(&r.c, r.next_ctx++, &sge, 1);
    }
    CHECK_ST(cf_srq_modify(s, 0, 3), STATUS_SUCCESS);
    cf_sleep_ms(QUIET_MS);
    CHECK_EQ(cf_srq_notifies(s), 2);
    rx_down(&r);
}

void case_srq_limit(void)
{
    struct sender_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cf_pair(srq_limit_server, sender_client, &cfg, cf_ms(50000));
}
