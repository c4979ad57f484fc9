/* The verify filter: one case per rule (argv[1]) breaks it on purpose through the iwarp provider
 * on 127.0.0.1 and checks the report (one line with the rule id, section, object and call, then
 * a backtrace, and the rule in the close summary); `clean` runs a correct consumer and checks
 * that nothing is reported. NDK_FILTERS=verify and NDK_VERIFY_PATH are set here, before the
 * runtime opens. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "iwtest.h"

static char report_path[256];
static struct iwt T;

static void start(void)
{
    snprintf(report_path, sizeof report_path, "/tmp/ndk-verify-test.%ld.log", (long)getpid());
    unlink(report_path);
    setenv("NDK_FILTERS", "verify", 1);
    setenv("NDK_VERIFY_PATH", report_path, 1);
    iwt_open(&T, AF_INET);
}

static char *slurp(void)
{
    FILE *f = fopen(report_path, "r");
    if (!f)
        return strdup("");
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

/* The report has a line for rule at severity, naming object (prefix, may be NULL) and call, with
 * a backtrace after it, and the summary counts the rule. */
static void expect(const char *severity, const char *rule, const char *object, const char *call)
{
    char *all = slurp();
    char head[128];
    snprintf(head, sizeof head, "ndk-verify: %s %s [", severity, rule);
    char *line = NULL, *eol = NULL;
    for (char *p = strstr(all, head); p; p = strstr(eol + 1, head)) {
        eol = strchr(p, '\n');
        CHECK(eol);
        *eol = '\0';
        bool match = (!object || strstr(p, object)) && (!call || strstr(p, call));
        if (match) {
            line = p;
            break;
        }
        *eol = '\n';
    }
    CHECK_MSG(line, "no '%s' report naming %s and %s; the report was:\n%s", head, object ? object : "-",
              call ? call : "-", all);
    printf("report: %s\n", line);
    CHECK_MSG(strstr(line, "] ") && strchr(strstr(line, "] "), ':'), "no section/call in: %s", line);
    /* backtrace_symbols_fd writes "binary(fn+0x..)[0x...]" lines. */
    char *bt = eol + 1;
    CHECK_MSG(strstr(bt, "[0x") && (size_t)(strstr(bt, "[0x") - bt) < 400, "no backtrace after the report line");
    char sum[128];
    snprintf(sum, sizeof sum, "%s %s [", severity, rule);
    char *s = strstr(bt, "ndk-verify: summary");
    CHECK_MSG(s && strstr(s, sum), "the close summary does not count %s", rule);
    free(all);
}

static void finish(void)
{
    iwt_close(&T);
}

/* ---- helpers ---- */

static uint8_t region[8 * 4096] __attribute__((aligned(4096)));

static NDK_MR *mr_register(NDK_PD *pd, size_t off, size_t len, PMDL *mdl_out, UINT32 *token)
{
    NDK_MR *mr;
    CHECK_STATUS(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr), STATUS_SUCCESS);
    PMDL mdl = IoAllocateMdl(region + off, (ULONG)len, FALSE, FALSE, NULL);
    CHECK(mdl);
    MmBuildMdlForNonPagedPool(mdl);
    struct iwt_req rq;
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, mr->Dispatch->NdkRegisterMr(mr, mdl, len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, iwt_req_cb, &rq),
                              5000), STATUS_SUCCESS);
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

/* A PD whose close pends: an MR of it is still open (the antecedent rule). */
static NDK_PD *pd_with_mr(NDK_MR **mr, BOOLEAN fast)
{
    NDK_PD *pd;
    CHECK_STATUS(T.ad->Dispatch->NdkCreatePd(T.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateMr(pd, fast, NULL, NULL, mr), STATUS_SUCCESS);
    return pd;
}

/* Posts one receive on q; when the provider took it, flushes it and polls its completion. */
static void receive_flushed(struct iwt_qp *q, NDK_SGE s)
{
    if (NT_SUCCESS(q->qp->Dispatch->NdkReceive(q->qp, NULL, &s, 1))) {
        q->qp->Dispatch->NdkFlush(q->qp);
        NDK_RESULT_EX r;
        CHECK(iwt_cq_wait(q->cq, &r, 5000));
    }
}

/* A connection: QPs a and b, a region on each (a's at 0, b's at 4096), a receive posted on b. */
struct conn {
    struct iwt_qp a, b;
    PMDL ma, mb;
    UINT32 ta, tb;
    NDK_MR *mra, *mrb;
    struct iwt_link k;
};

static void conn_open(struct conn *c)
{
    iwt_qp_create(&T, &c->a, 4);
    iwt_qp_create(&T, &c->b, 4);
    c->mra = mr_register(c->a.pd, 0, 4096, &c->ma, &c->ta);
    c->mrb = mr_register(c->b.pd, 4096, 4096, &c->mb, &c->tb);
    NDK_SGE rb = sge(4096, 64, c->tb);
    CHECK_STATUS(c->b.qp->Dispatch->NdkReceive(c->b.qp, (PVOID)1, &rb, 1), STATUS_SUCCESS);
    iwt_link_open(&T, &c->k, c->a.qp, c->b.qp, 5000);
}

/* Closes in order what is still set (a case that released a region itself clears it). */
static void conn_close(struct conn *c)
{
    iwt_link_close(&c->k, 5000);
    if (c->mra)
        iwt_mr_release(c->mra, c->ma, 5000);
    if (c->mrb)
        iwt_mr_release(c->mrb, c->mb, 5000);
    iwt_qp_destroy(&c->a);
    iwt_qp_destroy(&c->b);
}

/* ---- cases ---- */

/* A PD's close pends while its MR is open (the antecedent rule); a call on it meanwhile is a use
 * after close, and a second close a double close. */
static void case_use_after_close(void)
{
    start();
    NDK_MR *mr, *mr2;
    NDK_PD *pd = pd_with_mr(&mr, FALSE);
    struct iwt_close c = { 0 };
    CHECK_STATUS(iwt_close_start(pd, &c), STATUS_PENDING);
    NTSTATUS st = pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr2);
    CHECK_MSG(!NT_SUCCESS(st), "a create on a closing PD went through");
    iwt_close_obj(mr, 5000);
    CHECK(iwt_wait_atomic(&c.done, 1, 5000));
    finish();
    expect("error", "use-after-close", "pd#", "NdkCreateMr");
}

static void case_double_close(void)
{
    start();
    NDK_MR *mr;
    NDK_PD *pd = pd_with_mr(&mr, FALSE);
    struct iwt_close c = { 0 }, c2 = { 0 };
    CHECK_STATUS(iwt_close_start(pd, &c), STATUS_PENDING);
    CHECK(!NT_SUCCESS(iwt_close_start(pd, &c2)));
    iwt_close_obj(mr, 5000);
    CHECK(iwt_wait_atomic(&c.done, 1, 5000));
    CHECK_EQ(atomic_load(&c2.done), 0);
    finish();
    expect("error", "double-close", "pd#", "NdkClosePd");
}

/* A thread polls a CQ while another closes it (the close pends: a QP still uses the CQ). */
static NDK_CQ *volatile spin_cq;
static atomic_int spin_stop;
static void *spin_poll(void *arg)
{
    (void)arg;
    NDK_RESULT r[4];
    while (!atomic_load(&spin_stop))
        spin_cq->Dispatch->NdkGetCqResults(spin_cq, r, 4);
    return NULL;
}

static void case_close_during_call(void)
{
    start();
    bool seen = false;
    for (int round = 0; round < 50 && !seen; round++) {
        struct iwt_qp q;
        iwt_qp_create(&T, &q, 4);
        spin_cq = q.cq;
        atomic_store(&spin_stop, 0);
        pthread_t th;
        CHECK(pthread_create(&th, NULL, spin_poll, NULL) == 0);
        usleep(2000);
        struct iwt_close c = { 0 };
        NTSTATUS st = iwt_close_start(q.cq, &c);
        atomic_store(&spin_stop, 1);
        pthread_join(th, NULL);
        iwt_close_obj(q.qp, 5000);
        iwt_close_obj(q.pd, 5000);
        if (st == STATUS_PENDING)
            CHECK(iwt_wait_atomic(&c.done, 1, 5000));
        char *all = slurp();
        seen = strstr(all, "close-during-call") != NULL;
        free(all);
    }
    finish();
    expect("error", "close-during-call", "cq#", "NdkCloseCq");
}

/* The adapter closes with a CQ open: the close blocks until another thread closes the CQ. */
static NDK_CQ *late_cq;
static void *late_close(void *arg)
{
    (void)arg;
    usleep(300 * 1000);
    iwt_close_obj(late_cq, 5000);
    return NULL;
}

static void case_adapter_close_open(void)
{
    start();
    CHECK_STATUS(T.ad->Dispatch->NdkCreateCq(T.ad, 8, NULL, NULL, NULL, NULL, NULL, &late_cq), STATUS_SUCCESS);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, late_close, NULL) == 0);
    finish();
    pthread_join(th, NULL);
    expect("warning", "adapter-close-open-objects", "adapter#", "CloseNDKAdapter");
    char *all = slurp();
    CHECK_MSG(strstr(all, "cq#1"), "the warning does not name cq#1");
    free(all);
}

/* NdkQueryAdapterInfo (PASSIVE_LEVEL, blocking) from a close completion. */
static void query_in_callback(void *ctx)
{
    NDK_ADAPTER_INFO info;
    ULONG size = sizeof info;
    T.ad->Dispatch->NdkQueryAdapterInfo(T.ad, &info, &size);
    atomic_fetch_add(&((struct iwt_close *)ctx)->done, 1);
}

static void case_blocking_in_callback(void)
{
    start();
    NDK_MR *mr;
    NDK_PD *pd = pd_with_mr(&mr, FALSE);
    struct iwt_close c = { 0 };
    CHECK_STATUS(pd->Dispatch->NdkClosePd(&pd->Header, query_in_callback, &c), STATUS_PENDING);
    iwt_close_obj(mr, 5000);
    CHECK(iwt_wait_atomic(&c.done, 1, 5000));
    finish();
    expect("error", "blocking-in-callback", "adapter#", "NdkQueryAdapterInfo");
}

/* verify.action=abort: ndk_rt_close_adapter from inside a callback is reported, then the
 * process aborts before the close could deadlock. */
static void close_adapter_in_callback(void *ctx)
{
    (void)ctx;
    ndk_rt_close_adapter(T.rt, T.ad);
}

static int abort_child(void *arg)
{
    (void)arg;
    setenv("NDK_VERIFY_ACTION", "abort", 1);
    iwt_open(&T, AF_INET);
    NDK_MR *mr;
    NDK_PD *pd = pd_with_mr(&mr, FALSE);
    CHECK_STATUS(pd->Dispatch->NdkClosePd(&pd->Header, close_adapter_in_callback, NULL), STATUS_PENDING);
    mr->Dispatch->NdkCloseMr(&mr->Header, NULL, NULL);
    sleep(10);
    return 0;
}

static void case_abort(void)
{
    snprintf(report_path, sizeof report_path, "/tmp/ndk-verify-test.%ld.log", (long)getpid());
    unlink(report_path);
    setenv("NDK_FILTERS", "verify", 1);
    setenv("NDK_VERIFY_PATH", report_path, 1);
    pid_t pid = ndk_test_spawn(abort_child, NULL);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "the child did not abort (status 0x%x)", status);
    char *all = slurp();
    CHECK_MSG(strstr(all, "ndk-verify: error blocking-in-callback ["), "no report before the abort:\n%s", all);
    CHECK(strstr(all, "CloseNDKAdapter"));
    free(all);
}

static void case_queue_depth(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 2);
    PMDL mdl;
    UINT32 tok;
    NDK_MR *mr = mr_register(q.pd, 0, 4096, &mdl, &tok);
    for (int i = 0; i < 3; i++) {
        NDK_SGE s = sge((size_t)i * 64, 64, tok);
        q.qp->Dispatch->NdkReceive(q.qp, (PVOID)(uintptr_t)(i + 1), &s, 1);
    }
    q.qp->Dispatch->NdkFlush(q.qp);
    NDK_RESULT_EX r;
    while (iwt_cq_wait(q.cq, &r, 500))
        ;
    iwt_mr_release(mr, mdl, 5000);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "queue-depth", "qp#", "NdkReceive");
}

static void case_sge_count(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);   /* 2 SGEs per request */
    PMDL mdl;
    UINT32 tok;
    NDK_MR *mr = mr_register(q.pd, 0, 4096, &mdl, &tok);
    NDK_SGE s[3] = { sge(0, 8, tok), sge(8, 8, tok), sge(16, 8, tok) };
    CHECK(!NT_SUCCESS(q.qp->Dispatch->NdkReceive(q.qp, NULL, s, 3)));
    iwt_mr_release(mr, mdl, 5000);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "sge-count", "qp#", "NdkReceive");
}

static void case_inline_size(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);   /* InlineDataSize 0 */
    NDK_SGE s = sge(0, 64, 0);
    q.qp->Dispatch->NdkSend(q.qp, NULL, &s, 1, NDK_OP_FLAG_INLINE);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "inline-size", "qp#", "NdkSend");
}

static void case_sge_foreign_pd(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    NDK_PD *pd2;
    CHECK_STATUS(T.ad->Dispatch->NdkCreatePd(T.ad, NULL, NULL, &pd2), STATUS_SUCCESS);
    PMDL mdl;
    UINT32 tok;
    NDK_MR *mr = mr_register(pd2, 0, 4096, &mdl, &tok);
    receive_flushed(&q, sge(0, 64, tok));
    iwt_mr_release(mr, mdl, 5000);
    iwt_close_obj(pd2, 5000);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "sge-foreign-pd", "qp#", "NdkReceive");
}

static void case_sge_invalid_token(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    PMDL mdl;
    UINT32 tok;
    NDK_MR *mr = mr_register(q.pd, 0, 4096, &mdl, &tok);
    struct iwt_req rq;
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, mr->Dispatch->NdkDeregisterMr(mr, iwt_req_cb, &rq), 5000), STATUS_SUCCESS);
    receive_flushed(&q, sge(0, 64, tok));
    iwt_close_obj(mr, 5000);
    IoFreeMdl(mdl);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "sge-invalid-token", "qp#", "NdkReceive");
}

static void case_sge_range(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    PMDL mdl;
    UINT32 tok;
    NDK_MR *mr = mr_register(q.pd, 0, 4096, &mdl, &tok);
    receive_flushed(&q, sge(4000, 200, tok));
    iwt_mr_release(mr, mdl, 5000);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "sge-range", "qp#", "NdkReceive");
}

/* Deregistering a region that a Send on a connected QP still uses (its completion not polled). */
static void case_mr_in_use(void)
{
    start();
    struct conn c;
    conn_open(&c);
    NDK_SGE s = sge(0, 64, c.ta);
    CHECK_STATUS(c.a.qp->Dispatch->NdkSend(c.a.qp, NULL, &s, 1, 0), STATUS_SUCCESS);
    struct iwt_req rq;
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, c.mra->Dispatch->NdkDeregisterMr(c.mra, iwt_req_cb, &rq), 5000), STATUS_SUCCESS);
    iwt_close_obj(c.mra, 5000);
    IoFreeMdl(c.ma);
    c.mra = NULL;
    conn_close(&c);
    finish();
    expect("warning", "mr-in-use", "mr#", "NdkDeregisterMr");
}

static void case_mr_kind(void)
{
    start();
    NDK_MR *mr;
    NDK_PD *pd = pd_with_mr(&mr, TRUE);
    PMDL mdl = IoAllocateMdl(region, 4096, FALSE, FALSE, NULL);
    MmBuildMdlForNonPagedPool(mdl);
    struct iwt_req rq;
    iwt_req_init(&rq);
    NTSTATUS st = iwt_req_wait(&rq, mr->Dispatch->NdkRegisterMr(mr, mdl, 4096, 0, iwt_req_cb, &rq), 5000);
    if (NT_SUCCESS(st)) {
        iwt_req_init(&rq);
        iwt_req_wait(&rq, mr->Dispatch->NdkDeregisterMr(mr, iwt_req_cb, &rq), 5000);
    }
    iwt_close_obj(mr, 5000);
    IoFreeMdl(mdl);
    iwt_close_obj(pd, 5000);
    finish();
    expect("error", "mr-kind", "mr#", "NdkRegisterMr");
}

static void case_deregister_unregistered(void)
{
    start();
    NDK_MR *mr;
    NDK_PD *pd = pd_with_mr(&mr, FALSE);
    struct iwt_req rq;
    iwt_req_init(&rq);
    iwt_req_wait(&rq, mr->Dispatch->NdkDeregisterMr(mr, iwt_req_cb, &rq), 5000);
    iwt_close_obj(mr, 5000);
    iwt_close_obj(pd, 5000);
    finish();
    expect("error", "deregister-unregistered", "mr#", "NdkDeregisterMr");
}

/* Two threads post on one initiator queue at once (the posts fail inline: not connected). */
static NDK_QP *race_qp;
static atomic_int race_go;
static void *race_send(void *arg)
{
    (void)arg;
    NDK_SGE s = sge(0, 8, 0);
    while (!atomic_load(&race_go))
        ;
    for (int i = 0; i < 200000; i++)
        race_qp->Dispatch->NdkSend(race_qp, NULL, &s, 1, 0);
    return NULL;
}

static void case_concurrent_queue(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    q.qp->Dispatch->NdkFlush(q.qp);
    race_qp = q.qp;
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, race_send, NULL) == 0);
    atomic_store(&race_go, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "concurrent-queue", "qp#", "NdkSend");
}

static void *race_poll(void *arg)
{
    NDK_CQ *cq = arg;
    NDK_RESULT r[2];
    while (!atomic_load(&race_go))
        ;
    for (int i = 0; i < 200000; i++)
        cq->Dispatch->NdkGetCqResults(cq, r, 2);
    return NULL;
}

static void case_concurrent_cq(void)
{
    start();
    NDK_CQ *cq;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateCq(T.ad, 8, NULL, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, race_poll, cq) == 0);
    atomic_store(&race_go, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    iwt_close_obj(cq, 5000);
    finish();
    expect("error", "concurrent-cq", "cq#", "NdkGetCqResults");
}

static void case_arm_type(void)
{
    start();
    NDK_CQ *cq;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateCq(T.ad, 8, NULL, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    cq->Dispatch->NdkArmCq(cq, 7);
    iwt_close_obj(cq, 5000);
    finish();
    expect("error", "arm-type", "cq#", "NdkArmCq");
}

static void case_cq_feature(void)
{
    start();
    NDK_CQ *cq;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateCq(T.ad, 8, NULL, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    cq->Dispatch->NdkControlCqInterruptModeration(cq, 10, 4);
    iwt_close_obj(cq, 5000);
    finish();
    expect("error", "cq-feature", "cq#", "NdkControlCqInterruptModeration");
}

static void case_connector_state(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    NDK_CONNECTOR *c;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c), STATUS_SUCCESS);
    struct iwt_req rq;
    iwt_req_init(&rq);
    iwt_req_wait(&rq, c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &rq), 5000);
    c->Dispatch->NdkReject(c, NULL, 0);
    iwt_close_obj(c, 5000);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "connector-state", "connector#", "NdkAccept");
    expect("error", "connector-state", "connector#", "NdkReject");
}

static void case_connection_data_state(void)
{
    start();
    struct conn c;
    conn_open(&c);
    ULONG ird, ord, len = 0;
    c.k.ac->Dispatch->NdkGetConnectionData(c.k.ac, &ird, &ord, NULL, &len);
    conn_close(&c);
    finish();
    expect("warning", "connection-data-state", "connector#", "NdkGetConnectionData");
}

static void case_qp_reuse(void)
{
    start();
    struct conn c;
    conn_open(&c);
    NDK_CONNECTOR *second;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &second), STATUS_SUCCESS);
    SOCKADDR_INET dst = iwt_addr(&T, 9);
    struct iwt_req rq;
    iwt_req_init(&rq);
    iwt_req_wait(&rq, second->Dispatch->NdkConnect(second, c.a.qp, NULL, 0, (PSOCKADDR)&dst, iwt_addr_len(&dst), 1, 1,
                                                   NULL, 0, iwt_req_cb, &rq), 5000);
    iwt_close_obj(second, 5000);
    conn_close(&c);
    finish();
    expect("error", "qp-reuse", "connector#", "NdkConnect");
}

static void case_address_length(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    NDK_CONNECTOR *c;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c), STATUS_SUCCESS);
    SOCKADDR_INET dst = iwt_addr(&T, 9);
    struct iwt_req rq;
    iwt_req_init(&rq);
    iwt_req_wait(&rq, c->Dispatch->NdkConnect(c, q.qp, NULL, 0, (PSOCKADDR)&dst, 8, 1, 1, NULL, 0, iwt_req_cb, &rq), 5000);
    iwt_close_obj(c, 5000);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "address-length", "connector#", "NdkConnect");
}

static void case_private_data_length(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    NDK_ADAPTER_INFO info;
    ULONG size = sizeof info;
    CHECK_STATUS(T.ad->Dispatch->NdkQueryAdapterInfo(T.ad, &info, &size), STATUS_SUCCESS);
    NDK_CONNECTOR *c;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c), STATUS_SUCCESS);
    SOCKADDR_INET dst = iwt_addr(&T, 9);
    static uint8_t pd[65536];
    struct iwt_req rq;
    iwt_req_init(&rq);
    iwt_req_wait(&rq, c->Dispatch->NdkConnect(c, q.qp, NULL, 0, (PSOCKADDR)&dst, iwt_addr_len(&dst), 1, 1, pd,
                                              info.MaxCallerData + 1, iwt_req_cb, &rq), 5000);
    iwt_close_obj(c, 5000);
    iwt_qp_destroy(&q);
    finish();
    expect("error", "private-data-length", "connector#", "NdkConnect");
}

static void case_buffer_protocol(void)
{
    start();
    NDK_CONNECTOR *c;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateConnector(T.ad, NULL, NULL, &c), STATUS_SUCCESS);
    ULONG len = 16;
    c->Dispatch->NdkGetConnectionData(c, NULL, NULL, NULL, &len);
    iwt_close_obj(c, 5000);
    finish();
    expect("error", "buffer-protocol", "connector#", "NdkGetConnectionData");
}

static void case_op_flags(void)
{
    start();
    struct iwt_qp q;
    iwt_qp_create(&T, &q, 4);
    NDK_SGE s = sge(0, 8, 0);
    q.qp->Dispatch->NdkSend(q.qp, NULL, &s, 1, NDK_OP_FLAG_INLINE | NDK_OP_FLAG_ALLOW_REMOTE_READ);
    iwt_qp_destroy(&q);
    finish();
    expect("warning", "op-flags", "qp#", "NdkSend");
}

/* A connection with a receive posted on B; A sends with the given flags, then disconnects at
 * once without polling. */
static void send_then_disconnect(ULONG flags)
{
    struct conn c;
    conn_open(&c);
    NDK_SGE s = sge(0, 16, c.ta);
    CHECK_STATUS(c.a.qp->Dispatch->NdkSend(c.a.qp, NULL, &s, 1, flags), STATUS_SUCCESS);
    struct iwt_req rq;
    iwt_req_init(&rq);
    iwt_req_wait(&rq, c.k.ac->Dispatch->NdkDisconnect(c.k.ac, iwt_req_cb, &rq), 5000);
    conn_close(&c);
}

static void case_defer_unterminated(void)
{
    start();
    send_then_disconnect(NDK_OP_FLAG_DEFER);
    finish();
    expect("warning", "defer-unterminated", "qp#", "NdkDisconnect");
}

static void case_disconnect_outstanding(void)
{
    start();
    send_then_disconnect(0);
    finish();
    expect("warning", "disconnect-outstanding", "connector#", "NdkDisconnect");
}

static void case_receive_on_srq_qp(void)
{
    start();
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_SRQ *srq;
    NDK_QP *qp;
    CHECK_STATUS(T.ad->Dispatch->NdkCreateCq(T.ad, 8, NULL, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    CHECK_STATUS(T.ad->Dispatch->NdkCreatePd(T.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateSrq(pd, 4, 1, 0, NULL, NULL, NULL, NULL, NULL, &srq), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateQpWithSrq(pd, cq, cq, srq, NULL, 4, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    NDK_SGE s = sge(0, 8, 0);
    qp->Dispatch->NdkReceive(qp, NULL, &s, 1);
    iwt_close_obj(qp, 5000);
    iwt_close_obj(srq, 5000);
    iwt_close_obj(pd, 5000);
    iwt_close_obj(cq, 5000);
    finish();
    expect("warning", "receive-on-srq-qp", "qp#", "NdkReceive");
}

/* A correct consumer: connect, a Send/Receive each way, an RDMA Write, polling, disconnect,
 * close in order. Nothing may be reported. */
static void case_clean(void)
{
    start();
    struct conn c;
    conn_open(&c);
    NDK_SGE sa = sge(0, 64, c.ta);
    CHECK_STATUS(c.a.qp->Dispatch->NdkSend(c.a.qp, (PVOID)2, &sa, 1, 0), STATUS_SUCCESS);
    NDK_RESULT_EX r;
    CHECK(iwt_cq_wait(c.a.cq, &r, 5000));
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK(iwt_cq_wait(c.b.cq, &r, 5000));
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    struct iwt_req rq;
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, c.k.ac->Dispatch->NdkDisconnect(c.k.ac, iwt_req_cb, &rq), 5000), STATUS_SUCCESS);
    conn_close(&c);
    finish();
    char *all = slurp();
    printf("%s", all);
    CHECK_MSG(!strstr(all, "ndk-verify: error") && !strstr(all, "ndk-verify: warning"), "reports for a correct consumer");
    CHECK_MSG(strstr(all, "summary") && strstr(all, "no violations"), "no clean summary");
    free(all);
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    { "use-after-close", case_use_after_close },
    { "double-close", case_double_close },
    { "close-during-call", case_close_during_call },
    { "adapter-close-open-objects", case_adapter_close_open },
    { "blocking-in-callback", case_blocking_in_callback },
    { "abort", case_abort },
    { "queue-depth", case_queue_depth },
    { "sge-count", case_sge_count },
    { "inline-size", case_inline_size },
    { "sge-foreign-pd", case_sge_foreign_pd },
    { "sge-invalid-token", case_sge_invalid_token },
    { "sge-range", case_sge_range },
    { "mr-in-use", case_mr_in_use },
    { "mr-kind", case_mr_kind },
    { "deregister-unregistered", case_deregister_unregistered },
    { "concurrent-queue", case_concurrent_queue },
    { "concurrent-cq", case_concurrent_cq },
    { "arm-type", case_arm_type },
    { "cq-feature", case_cq_feature },
    { "connector-state", case_connector_state },
    { "connection-data-state", case_connection_data_state },
    { "qp-reuse", case_qp_reuse },
    { "address-length", case_address_length },
    { "private-data-length", case_private_data_length },
    { "buffer-protocol", case_buffer_protocol },
    { "op-flags", case_op_flags },
    { "defer-unterminated", case_defer_unterminated },
    { "disconnect-outstanding", case_disconnect_outstanding },
    { "receive-on-srq-qp", case_receive_on_srq_qp },
    { "clean", case_clean },
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_verify CASE\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(argv[1], cases[i].name)) {
            cases[i].fn();
            unlink(report_path);
            printf("verify %s: ok\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "test_verify: unknown case %s\n", argv[1]);
    return 2;
}
