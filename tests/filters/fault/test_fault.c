/* The fault filter: one case per fault kind (argv[1]), each checking what the consumer sees
 * through the iwarp provider on 127.0.0.1, and the fault log line (rule, seed, call index).
 * NDK_FILTERS=fault, NDK_FAULT_RULES, NDK_FAULT_SEED and NDK_FAULT_PATH are set here before the
 * runtime opens. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iwtest.h"

static char log_path[256];
static struct iwt T;

static void start(const char *rules, const char *seed)
{
    snprintf(log_path, sizeof log_path, "/tmp/ndk-fault-test.%ld.log", (long)getpid());
    unlink(log_path);
    setenv("NDK_FILTERS", "fault", 1);
    setenv("NDK_FAULT_RULES", rules, 1);
    if (seed)
        setenv("NDK_FAULT_SEED", seed, 1);
    setenv("NDK_FAULT_PATH", log_path, 1);
    iwt_open(&T, AF_INET);
}

static char *slurp(void)
{
    static char buf[1 << 16];
    FILE *f = fopen(log_path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

/* The log has a line containing every one of the fragments. */
static void expect_log(const char *a, const char *b, const char *c)
{
    char *all = slurp();
    for (char *line = all; *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        bool hit = strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c));
        if (hit) {
            printf("fault log: %s\n", line);
            return;
        }
        if (!eol)
            break;
        *eol = '\n';
        line = eol + 1;
    }
    ndk_test_fail(__FILE__, __LINE__, "no fault log line with '%s' '%s' '%s':\n%s", a, b ? b : "", c ? c : "", all);
}

static uint8_t region[4 * 4096] __attribute__((aligned(4096)));

static NDK_MR *mr_register(NDK_PD *pd, PMDL *mdl_out, UINT32 *token)
{
    NDK_MR *mr;
    CHECK_STATUS(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr), STATUS_SUCCESS);
    PMDL mdl = IoAllocateMdl(region, sizeof region, FALSE, FALSE, NULL);
    MmBuildMdlForNonPagedPool(mdl);
    struct iwt_req rq;
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, mr->Dispatch->NdkRegisterMr(mr, mdl, sizeof region, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                                               iwt_req_cb, &rq), 5000), STATUS_SUCCESS);
    *token = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
    *mdl_out = mdl;
    return mr;
}

static NDK_SGE sge(size_t off, ULONG len, UINT32 token)
{
    NDK_SGE s;
    memset(&s, 0, sizeof s);
    s.VirtualAddress = region + off;
    s.Length = len;
    s.MemoryRegionToken = token;
    return s;
}

/* A QP on one CQ (with notify as its notification callback, or none) and a registered region;
 * receives are posted at 64-byte slots of the region. */
struct rxq {
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_QP *qp;
    NDK_MR *mr;
    PMDL    mdl;
    UINT32  tok;
};

static void rxq_open(struct rxq *r, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notify)
{
    CHECK_STATUS(T.ad->Dispatch->NdkCreateCq(T.ad, depth * 2, notify, NULL, NULL, NULL, NULL, &r->cq), STATUS_SUCCESS);
    CHECK_STATUS(T.ad->Dispatch->NdkCreatePd(T.ad, NULL, NULL, &r->pd), STATUS_SUCCESS);
    CHECK_STATUS(r->pd->Dispatch->NdkCreateQp(r->pd, r->cq, r->cq, NULL, depth, depth, 1, 1, 0, NULL, NULL, &r->qp),
                 STATUS_SUCCESS);
    r->mr = mr_register(r->pd, &r->mdl, &r->tok);
}

static NTSTATUS rxq_receive(struct rxq *r, int slot)
{
    NDK_SGE s = sge((size_t)slot * 64, 64, r->tok);
    return r->qp->Dispatch->NdkReceive(r->qp, (PVOID)(uintptr_t)slot, &s, 1);
}

static void rxq_close(struct rxq *r)
{
    iwt_mr_release(r->mr, r->mdl, 5000);
    iwt_close_obj(r->qp, 5000);
    iwt_close_obj(r->pd, 5000);
    iwt_close_obj(r->cq, 5000);
}

/* ---- cases ---- */

/* The second NdkCreateQp fails inline with the rule's status; the others succeed. */
static void case_create_nth(void)
{
    start("NdkCreateQp:nth=2:status=STATUS_INSUFFICIENT_RESOURCES", NULL);
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    NDK_QP *qp2 = NULL, *qp3 = NULL;
    CHECK_STATUS(q.pd->Dispatch->NdkCreateQp(q.pd, q.cq, q.cq, NULL, 4, 4, 1, 1, 0, NULL, NULL, &qp2),
                 STATUS_INSUFFICIENT_RESOURCES);
    CHECK(qp2 == NULL);
    CHECK_STATUS(q.pd->Dispatch->NdkCreateQp(q.pd, q.cq, q.cq, NULL, 4, 4, 1, 1, 0, NULL, NULL, &qp3), STATUS_SUCCESS);
    iwt_close_obj(qp3, 5000);
    iwt_qp_destroy(&q);
    iwt_close(&T);
    expect_log("seed 1 rule 1 'NdkCreateQp:nth=2:status=STATUS_INSUFFICIENT_RESOURCES' call 2:", "pd#1", "NdkCreateQp");
}

/* after= and count=: the first create passes, the next two fail, the rest pass again. */
static void case_after_count(void)
{
    start("NdkCreateCq:after=1:count=2:status=STATUS_INSUFFICIENT_RESOURCES", NULL);
    const NTSTATUS want[5] = { STATUS_SUCCESS, STATUS_INSUFFICIENT_RESOURCES, STATUS_INSUFFICIENT_RESOURCES,
                               STATUS_SUCCESS, STATUS_SUCCESS };
    for (int i = 0; i < 5; i++) {
        NDK_CQ *cq = NULL;
        CHECK_STATUS(T.ad->Dispatch->NdkCreateCq(T.ad, 4, NULL, NULL, NULL, NULL, NULL, &cq), want[i]);
        if (cq)
            iwt_close_obj(cq, 5000);
    }
    iwt_close(&T);
    expect_log("call 2:", "NdkCreateCq", "failed inline");
    expect_log("call 3:", "NdkCreateCq", "failed inline");
}

/* Every third NdkReceive fails inline; only the accepted ones complete (flushed). */
static void case_post_every(void)
{
    start("NdkReceive:every=3:status=STATUS_INSUFFICIENT_RESOURCES", NULL);
    struct rxq q;
    rxq_open(&q, 8, NULL);
    int accepted = 0;
    for (int i = 1; i <= 6; i++) {
        NTSTATUS st = rxq_receive(&q, i);
        CHECK_STATUS(st, i % 3 == 0 ? STATUS_INSUFFICIENT_RESOURCES : STATUS_SUCCESS);
        accepted += st == STATUS_SUCCESS;
    }
    q.qp->Dispatch->NdkFlush(q.qp);
    NDK_RESULT_EX r;
    for (int i = 0; i < accepted; i++) {
        CHECK(iwt_cq_wait(q.cq, &r, 5000));
        CHECK_STATUS(r.Status, STATUS_CANCELLED);
        CHECK((uintptr_t)r.RequestContext % 3 != 0);
    }
    CHECK_MSG(!iwt_cq_wait(q.cq, &r, 300), "a completion for a post that failed inline");
    rxq_close(&q);
    iwt_close(&T);
    expect_log("rule 1 'NdkReceive:every=3", "call 6:", "failed inline with 0xc000009a");
}

/* p=: the same seed gives the same faults, another seed others. Each run is a child process. */
static int seed_child(void *arg)
{
    start("NdkCreateCq:p=0.3:status=STATUS_INSUFFICIENT_RESOURCES", arg);
    char pattern[65];
    for (int i = 0; i < 64; i++) {
        NDK_CQ *cq = NULL;
        NTSTATUS st = T.ad->Dispatch->NdkCreateCq(T.ad, 4, NULL, NULL, NULL, NULL, NULL, &cq);
        pattern[i] = st == STATUS_SUCCESS ? '.' : 'X';
        if (cq)
            iwt_close_obj(cq, 5000);
    }
    pattern[64] = '\0';
    iwt_close(&T);
    FILE *f = fopen(getenv("FAULT_TEST_OUT"), "w");
    fprintf(f, "%s\n", pattern);
    fclose(f);
    unlink(log_path);
    return 0;
}

static void run_seed(const char *seed, char *out)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/ndk-fault-seed.%ld", (long)getpid());
    setenv("FAULT_TEST_OUT", path, 1);
    pid_t pid = ndk_test_spawn(seed_child, (void *)seed);
    ndk_test_wait_ok(pid, 30000, "seed child");
    FILE *f = fopen(path, "r");
    CHECK(f && fgets(out, 80, f));
    fclose(f);
    unlink(path);
    out[strcspn(out, "\n")] = '\0';
    printf("seed %s: %s\n", seed, out);
}

static void case_seed(void)
{
    char a[80], b[80], c[80];
    run_seed("42", a);
    run_seed("42", b);
    run_seed("43", c);
    CHECK_MSG(!strcmp(a, b), "the same seed gave different faults");
    CHECK_MSG(strcmp(a, c), "seeds 42 and 43 gave the same faults");
    int n = 0;
    for (const char *p = a; *p; p++)
        n += *p == 'X';
    CHECK_MSG(n >= 6 && n <= 34, "p=0.3 injected %d of 64", n);
}

/* A listener on a loopback port whose connect events are accepted with qp_b. */
struct acceptor {
    NDK_LISTENER *l;
    SOCKADDR_INET addr;
    NDK_QP *qp;
    _Atomic(NDK_CONNECTOR *) conn;
    struct iwt_req accept;
    atomic_int disconnects;
};

static void acc_disconnect(void *ctx)
{
    atomic_fetch_add(&((struct acceptor *)ctx)->disconnects, 1);
}

static void acc_connect_event(void *ctx, NDK_CONNECTOR *c)
{
    struct acceptor *a = ctx;
    atomic_store(&a->conn, c);
    iwt_req_init(&a->accept);
    NTSTATUS st = c->Dispatch->NdkAccept(c, a->qp, 1, 1, NULL, 0, acc_disconnect, a, iwt_req_cb, &a->accept);
    if (st != STATUS_PENDING) {
        atomic_store(&a->accept.status, st);
        atomic_store(&a->accept.done, 1);
    }
}

static void acceptor_open(struct acceptor *a, NDK_QP *qp)
{
    memset(a, 0, sizeof *a);
    a->qp = qp;
    a->addr = iwt_addr(&T, 0);
    ULONG len = sizeof a->addr;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateListener(T.ad, acc_connect_event, a, NULL, NULL, &a->l), STATUS_SUCCESS);
    struct iwt_req r;
    iwt_req_init(&r);
    CHECK_STATUS(iwt_req_wait(&r, a->l->Dispatch->NdkListen(a->l, (PSOCKADDR)&a->addr, iwt_addr_len(&a->addr),
                                                            iwt_req_cb, &r), 5000), STATUS_SUCCESS);
    CHECK_STATUS(a->l->Dispatch->NdkGetLocalAddress(a->l, (PSOCKADDR)&a->addr, &len), STATUS_SUCCESS);
}

static void acceptor_close(struct acceptor *a)
{
    NDK_CONNECTOR *c = atomic_load(&a->conn);
    if (c)
        iwt_close_obj(c, 5000);
    iwt_close_obj(a->l, 5000);
}

static atomic_int active_disconnects;
static void active_disconnect(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&active_disconnects, 1);
}

/* Connects c (qp) to the acceptor; returns NdkConnect's final status (completing the connect
 * when it succeeded). */
static NTSTATUS connect_to(struct acceptor *a, NDK_CONNECTOR *c, NDK_QP *qp, uint64_t *ms)
{
    struct iwt_req r;
    iwt_req_init(&r);
    SOCKADDR_INET src = iwt_addr(&T, 0);
    uint64_t t0 = ndk_test_now_ms();
    NTSTATUS st = c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&a->addr,
                                          iwt_addr_len(&a->addr), 1, 1, NULL, 0, iwt_req_cb, &r);
    st = iwt_req_wait(&r, st, 10000);
    if (ms)
        *ms = ndk_test_now_ms() - t0;
    if (st != STATUS_SUCCESS)
        return st;
    iwt_req_init(&r);
    CHECK_STATUS(iwt_req_wait(&r, c->Dispatch->NdkCompleteConnect(c, active_disconnect, NULL, iwt_req_cb, &r), 5000),
                 STATUS_SUCCESS);
    CHECK(iwt_wait_atomic(&a->accept.done, 1, 5000));
    CHECK_STATUS(atomic_load(&a->accept.status), STATUS_SUCCESS);
    return st;
}

/* The first connect is refused inline; the second goes through. */
static void case_connect_refused(void)
{
    start("NdkConnect:nth=1:status=STATUS_CONNECTION_REFUSED", NULL);
    struct iwt_qp a, b;
    iwt_qp_create(&T, &a, 4);
    iwt_qp_create(&T, &b, 4);
    struct acceptor acc;
    acceptor_open(&acc, b.qp);
    NDK_CONNECTOR *c1, *c2;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c1), STATUS_SUCCESS);
    CHECK_STATUS(connect_to(&acc, c1, a.qp, NULL), STATUS_CONNECTION_REFUSED);
    iwt_close_obj(c1, 5000);
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c2), STATUS_SUCCESS);
    CHECK_STATUS(connect_to(&acc, c2, a.qp, NULL), STATUS_SUCCESS);
    iwt_close_obj(c2, 5000);
    acceptor_close(&acc);
    iwt_qp_destroy(&a);
    iwt_qp_destroy(&b);
    iwt_close(&T);
    expect_log("call 1:", "NdkConnect", "failed inline with 0xc0000236");
}

/* The first connect times out: STATUS_IO_TIMEOUT through its completion, 300 ms late. The
 * consumer closes that connector; a new one connects. */
static void case_connect_timeout(void)
{
    start("NdkConnect:nth=1:status=STATUS_IO_TIMEOUT:async:delay=300", NULL);
    struct iwt_qp a, b, b2;
    iwt_qp_create(&T, &a, 4);
    iwt_qp_create(&T, &b, 4);
    iwt_qp_create(&T, &b2, 4);
    struct acceptor acc;
    acceptor_open(&acc, b.qp);
    NDK_CONNECTOR *c1, *c2;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c1), STATUS_SUCCESS);
    uint64_t ms;
    CHECK_STATUS(connect_to(&acc, c1, a.qp, &ms), STATUS_IO_TIMEOUT);
    CHECK_MSG(ms >= 290, "the timeout came after %llu ms, the rule says 300", (unsigned long long)ms);
    iwt_close_obj(c1, 5000);
    acceptor_close(&acc);
    struct iwt_qp a2;
    iwt_qp_create(&T, &a2, 4);
    acceptor_open(&acc, b2.qp);
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c2), STATUS_SUCCESS);
    CHECK_STATUS(connect_to(&acc, c2, a2.qp, NULL), STATUS_SUCCESS);
    iwt_close_obj(c2, 5000);
    acceptor_close(&acc);
    iwt_qp_destroy(&a);
    iwt_qp_destroy(&a2);
    iwt_qp_destroy(&b);
    iwt_qp_destroy(&b2);
    iwt_close(&T);
    expect_log("call 1:", "NdkConnect", "its completion will report 0xc00000b5");
}

/* A poll returns at most one result though three are ready. */
static void case_short(void)
{
    start("NdkGetCqResults:short=1", NULL);
    struct rxq q;
    rxq_open(&q, 4, NULL);
    for (int i = 0; i < 3; i++)
        CHECK_STATUS(rxq_receive(&q, i), STATUS_SUCCESS);
    q.qp->Dispatch->NdkFlush(q.qp);
    usleep(200 * 1000);
    NDK_RESULT r[8];
    int total = 0;
    for (int i = 0; i < 50 && total < 3; i++) {
        ULONG n = q.cq->Dispatch->NdkGetCqResults(q.cq, r, 8);
        CHECK_MSG(n <= 1, "a poll returned %lu results", (unsigned long)n);
        total += (int)n;
        if (!n)
            usleep(20 * 1000);
    }
    CHECK_EQ(total, 3);
    rxq_close(&q);
    iwt_close(&T);
    expect_log("'NdkGetCqResults:short=1'", "NdkGetCqResults", "at most 1 result");
}

/* A CQ notification comes 300 ms after the completion that satisfied the arm. */
static atomic_llong notified_ms;
static void on_notify(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
    atomic_store(&notified_ms, (long long)ndk_test_now_ms());
}

/* Waits for on_notify; fails unless it came at least 280 ms after t0 (the rules say 300). */
static long long wait_notified(uint64_t t0)
{
    uint64_t end = t0 + 5000;
    while (!atomic_load(&notified_ms) && ndk_test_now_ms() < end)
        usleep(5000);
    long long got = atomic_load(&notified_ms);
    CHECK_MSG(got, "no notification");
    CHECK_MSG(got - (long long)t0 >= 280, "notified after %lld ms, the rule says 300", got - (long long)t0);
    return got;
}

static void case_notify_delay(void)
{
    start("CqNotification:delay=300", NULL);
    struct rxq q;
    rxq_open(&q, 4, on_notify);
    CHECK_STATUS(rxq_receive(&q, 0), STATUS_SUCCESS);
    q.cq->Dispatch->NdkArmCq(q.cq, NDK_CQ_NOTIFY_ANY);
    uint64_t t0 = ndk_test_now_ms();
    q.qp->Dispatch->NdkFlush(q.qp);
    long long got = wait_notified(t0);
    NDK_RESULT r;
    CHECK_EQ(q.cq->Dispatch->NdkGetCqResults(q.cq, &r, 1), 1);
    CHECK_STATUS(r.Status, STATUS_CANCELLED);
    printf("notification %lld ms after the completion\n", got - (long long)t0);
    rxq_close(&q);
    iwt_close(&T);
    expect_log("'CqNotification:delay=300'", "CqNotification", "delivered 300 ms late");
}

/* Completions 300 ms late: a poll hides the flushed receive's completion; the consumer arms and
 * is notified when it is due (not before), and the next poll returns it. */
static void case_completion_delay(void)
{
    start("NdkGetCqResults:delay=300", NULL);
    struct rxq q;
    rxq_open(&q, 4, on_notify);
    CHECK_STATUS(rxq_receive(&q, 7), STATUS_SUCCESS);
    q.qp->Dispatch->NdkFlush(q.qp);
    usleep(100 * 1000);   /* the flushed completion is in the provider's CQ */
    NDK_RESULT r;
    uint64_t t0 = ndk_test_now_ms();
    CHECK_EQ(q.cq->Dispatch->NdkGetCqResults(q.cq, &r, 1), 0);
    q.cq->Dispatch->NdkArmCq(q.cq, NDK_CQ_NOTIFY_ANY);
    CHECK_EQ(q.cq->Dispatch->NdkGetCqResults(q.cq, &r, 1), 0);
    wait_notified(t0);
    CHECK_EQ(q.cq->Dispatch->NdkGetCqResults(q.cq, &r, 1), 1);
    CHECK_STATUS(r.Status, STATUS_CANCELLED);
    CHECK(r.RequestContext == (PVOID)7);
    printf("completion returned %llu ms after the first poll that took it\n",
           (unsigned long long)(ndk_test_now_ms() - t0));
    rxq_close(&q);
    iwt_close(&T);
    expect_log("'NdkGetCqResults:delay=300'", "NdkGetCqResults", "1 completion(s) held 300 ms");
}

/* break=connection on the first Send: both sides get their disconnect event, our outstanding
 * receive is flushed, and later posts fail: what a real loss gives. */
static void case_break(void)
{
    start("NdkSend:nth=1:break=connection", NULL);
    struct iwt_qp a, b;
    iwt_qp_create(&T, &a, 4);
    iwt_qp_create(&T, &b, 4);
    PMDL mdl;
    UINT32 tok;
    NDK_MR *mra = mr_register(a.pd, &mdl, &tok);
    PMDL mdlb;
    UINT32 tokb;
    NDK_MR *mrb = mr_register(b.pd, &mdlb, &tokb);
    NDK_SGE rb = sge(2048, 64, tokb), ra = sge(1024, 64, tok), sa = sge(0, 64, tok);
    CHECK_STATUS(b.qp->Dispatch->NdkReceive(b.qp, (PVOID)1, &rb, 1), STATUS_SUCCESS);
    CHECK_STATUS(a.qp->Dispatch->NdkReceive(a.qp, (PVOID)2, &ra, 1), STATUS_SUCCESS);
    struct acceptor acc;
    acceptor_open(&acc, b.qp);
    NDK_CONNECTOR *c;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c), STATUS_SUCCESS);
    CHECK_STATUS(connect_to(&acc, c, a.qp, NULL), STATUS_SUCCESS);
    CHECK_STATUS(a.qp->Dispatch->NdkSend(a.qp, (PVOID)3, &sa, 1, 0), STATUS_SUCCESS);
    CHECK_MSG(iwt_wait_atomic(&acc.disconnects, 1, 5000), "the peer saw no disconnect event");
    CHECK_MSG(iwt_wait_atomic(&active_disconnects, 1, 5000), "our side saw no disconnect event");
    /* Our side: the receive is flushed; the send completes (done or flushed); posts then fail. */
    bool recv_flushed = false, send_done = false;
    NDK_RESULT_EX r;
    while ((!recv_flushed || !send_done) && iwt_cq_wait(a.cq, &r, 5000)) {
        if (r.RequestContext == (PVOID)2) {
            CHECK_STATUS(r.Status, STATUS_CANCELLED);
            recv_flushed = true;
        } else if (r.RequestContext == (PVOID)3) {
            send_done = true;
        }
    }
    CHECK_MSG(recv_flushed && send_done, "receive flushed %d, send completed %d", recv_flushed, send_done);
    CHECK(!NT_SUCCESS(a.qp->Dispatch->NdkSend(a.qp, (PVOID)4, &sa, 1, 0)));
    printf("peer disconnect events %d, ours %d\n", atomic_load(&acc.disconnects), atomic_load(&active_disconnects));
    iwt_close_obj(c, 5000);
    acceptor_close(&acc);
    iwt_mr_release(mra, mdl, 5000);
    iwt_mr_release(mrb, mdlb, 5000);
    iwt_qp_destroy(&a);
    iwt_qp_destroy(&b);
    iwt_close(&T);
    expect_log("'NdkSend:nth=1:break=connection' call 1:", "NdkSend", "break=connection");
    expect_log("'NdkSend:nth=1:break=connection' call 1:", "DisconnectEvent", "delivered to the consumer");
}

/* A malformed rule fails the adapter open with a reason, instead of running without faults. */
static void case_bad_rules(void)
{
    snprintf(log_path, sizeof log_path, "/tmp/ndk-fault-test.%ld.log", (long)getpid());
    setenv("NDK_FILTERS", "fault", 1);
    const char *bad[] = { "NdkSend:nth=0:status=STATUS_CANCELLED", "NdkArmCq:nth=1:status=STATUS_INTERNAL_ERROR",
                          "NdkSend:nth=1", "NdkSend:nth=1:status=STATUS_NO_SUCH_NAME", "Bogus:nth=1:status=0xC0000001" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("NDK_FAULT_RULES", bad[i], 1);
        struct iwt t;
        NDK_VERSION v = { 2, 1 };
        NTSTATUS st = iwt_open_version(&t, AF_INET, v);
        CHECK_MSG(!NT_SUCCESS(st), "rules '%s' were accepted", bad[i]);
        printf("'%s': %s\n", bad[i], ndk_rt_status_name(st));
        iwt_close(&t);
    }
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    { "create-nth", case_create_nth },
    { "post-every", case_post_every },
    { "after-count", case_after_count },
    { "seed", case_seed },
    { "connect-refused", case_connect_refused },
    { "connect-timeout", case_connect_timeout },
    { "short", case_short },
    { "notify-delay", case_notify_delay },
    { "completion-delay", case_completion_delay },
    { "break", case_break },
    { "bad-rules", case_bad_rules },
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_fault CASE\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(argv[1], cases[i].name)) {
            cases[i].fn();
            unlink(log_path);
            printf("fault %s: ok\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "test_fault: unknown case %s\n", argv[1]);
    return 2;
}
