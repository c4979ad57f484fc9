/* §5.1 close ordering, every rule: an antecedent's close pends until its successors are closed
 * (PD with live children, CQ/SRQ used by a QP, QP tied to a connector); a CQ closed from its
 * own notification callback; a connector closed from its request completion; a close with a
 * request outstanding completes that request first; an antecedent's close completion never runs
 * while a successor's close completion is still running; the blocking adapter close returns only
 * after every child is closed. */
#include "iwtest.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TMO 5000

static void nop_cq(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
}

/* ---- A: PD with live children ---- */
static void pd_children(struct iwt *t)
{
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_MR *mr;
    NDK_QP *qp;
    struct iwt_close c;

    CHECK_STATUS(t->ad->Dispatch->NdkCreateCq(t->ad, 8, nop_cq, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    CHECK_STATUS(t->ad->Dispatch->NdkCreatePd(t->ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 2, 2, 1, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    CHECK_STATUS(iwt_close_start(pd, &c), STATUS_PENDING);
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&c.done), 0);
    iwt_close_obj(mr, TMO);
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&c.done), 0);          /* the QP still lives */
    iwt_close_obj(qp, TMO);
    CHECK_MSG(iwt_wait_atomic(&c.done, 1, TMO), "PD close never completed");
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&c.done), 1);
    iwt_close_obj(cq, TMO);
}

/* ---- B: CQ closed from its own notification callback ---- */
static struct {
    NDK_CQ *cq;
    struct iwt_close close;
    atomic_int calls;
    atomic_int returned;
    atomic_int close_status;
    atomic_int done_before_return;
} g_b;

static void b_close_cb(void *ctx)
{
    (void)ctx;
    if (!atomic_load(&g_b.returned))
        atomic_store(&g_b.done_before_return, 1);
    atomic_fetch_add(&g_b.close.done, 1);
}

static void b_notify(void *ctx, NTSTATUS st)
{
    (void)ctx;
    CHECK_STATUS(st, STATUS_SUCCESS);
    if (atomic_fetch_add(&g_b.calls, 1) == 0) {
        NDK_FN_CLOSE_OBJECT fn = g_b.cq->Dispatch->NdkCloseCq;
        atomic_store(&g_b.close_status, fn(&g_b.cq->Header, b_close_cb, NULL));
        usleep(30 * 1000);       /* widen the window for a premature completion */
    }
    atomic_store(&g_b.returned, 1);
}

static void cq_from_callback(struct iwt *t)
{
    NDK_PD *pd;
    NDK_QP *qp;
    uint8_t buf[8];
    NDK_SGE sge = { .VirtualAddress = buf, .Length = sizeof buf };

    memset(&g_b, 0, sizeof g_b);
    CHECK_STATUS(t->ad->Dispatch->NdkCreateCq(t->ad, 8, b_notify, NULL, NULL, NULL, NULL, &g_b.cq), STATUS_SUCCESS);
    CHECK_STATUS(t->ad->Dispatch->NdkCreatePd(t->ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateQp(pd, g_b.cq, g_b.cq, NULL, 2, 2, 1, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    CHECK_STATUS(qp->Dispatch->NdkReceive(qp, NULL, &sge, 1), STATUS_SUCCESS);
    g_b.cq->Dispatch->NdkArmCq(g_b.cq, NDK_CQ_NOTIFY_ANY);
    qp->Dispatch->NdkFlush(qp);                              /* -> completion -> notification */
    CHECK_MSG(iwt_wait_atomic(&g_b.returned, 1, TMO), "no CQ notification");
    CHECK_STATUS(atomic_load(&g_b.close_status), STATUS_PENDING);  /* the QP still uses the CQ */
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&g_b.close.done), 0);
    iwt_close_obj(qp, TMO);
    CHECK_MSG(iwt_wait_atomic(&g_b.close.done, 1, TMO), "CQ close never completed");
    CHECK_EQ(atomic_load(&g_b.done_before_return), 0);
    CHECK_EQ(atomic_load(&g_b.calls), 1);
    iwt_close_obj(pd, TMO);

    /* same, but the CQ's last user goes away first: the close pends only for the callback */
    memset(&g_b, 0, sizeof g_b);
    CHECK_STATUS(t->ad->Dispatch->NdkCreateCq(t->ad, 8, b_notify, NULL, NULL, NULL, NULL, &g_b.cq), STATUS_SUCCESS);
    CHECK_STATUS(t->ad->Dispatch->NdkCreatePd(t->ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateQp(pd, g_b.cq, g_b.cq, NULL, 2, 2, 1, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    CHECK_STATUS(qp->Dispatch->NdkReceive(qp, NULL, &sge, 1), STATUS_SUCCESS);
    g_b.cq->Dispatch->NdkArmCq(g_b.cq, NDK_CQ_NOTIFY_ANY);
    iwt_close_obj(qp, TMO);                                  /* its flush notifies */
    CHECK_MSG(iwt_wait_atomic(&g_b.close.done, 1, TMO), "CQ close never completed");
    CHECK_STATUS(atomic_load(&g_b.close_status), STATUS_PENDING);  /* the callback was running */
    CHECK_EQ(atomic_load(&g_b.done_before_return), 0);
    iwt_close_obj(pd, TMO);
}

/* ---- C: close completions in successor -> antecedent order, never overlapping ---- */
static struct {
    atomic_int seq;
    atomic_int order[4];         /* sequence number at which each completion started */
    atomic_int running;          /* a completion callback is executing */
    atomic_int overlap;
    atomic_int conn_req_done;    /* connect request completed before the connector's close */
} g_c;

enum { C_CONN, C_QP, C_SRQ, C_PD };

static void c_close_cb(void *ctx)
{
    int who = (int)(intptr_t)ctx;

    if (atomic_fetch_add(&g_c.running, 1) != 0)
        atomic_store(&g_c.overlap, 1);
    atomic_store(&g_c.order[who], atomic_fetch_add(&g_c.seq, 1) + 1);
    usleep(40 * 1000);
    atomic_fetch_sub(&g_c.running, 1);
}

static atomic_int g_c_req;
static void c_req_cb(void *ctx, NTSTATUS st)
{
    (void)ctx;
    atomic_store(&g_c.conn_req_done, (int)st);
    atomic_fetch_add(&g_c_req, 1);
}

static void chain(struct iwt *t)
{
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_SRQ *srq;
    NDK_QP *qp;
    NDK_CONNECTOR *conn;
    SOCKADDR_INET src = iwt_addr(t, 0), dst;
    int lfd;
    socklen_t sl = sizeof dst;

    memset(&g_c, 0, sizeof g_c);
    atomic_store(&g_c_req, 0);
    CHECK_STATUS(t->ad->Dispatch->NdkCreateCq(t->ad, 8, nop_cq, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    CHECK_STATUS(t->ad->Dispatch->NdkCreatePd(t->ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateSrq(pd, 8, 1, 0, NULL, NULL, NULL, NULL, NULL, &srq), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateQpWithSrq(pd, cq, cq, srq, NULL, 2, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    CHECK_STATUS(t->ad->Dispatch->NdkCreateConnector(t->ad, NULL, NULL, &conn), STATUS_SUCCESS);

    /* a TCP listener that never speaks MPA: the connect stays pending (outstanding request) */
    dst = iwt_addr(t, 0);
    lfd = socket(t->family, SOCK_STREAM, 0);
    CHECK(bind(lfd, (struct sockaddr *)&dst, iwt_addr_len(&dst)) == 0 && listen(lfd, 4) == 0);
    CHECK(getsockname(lfd, (struct sockaddr *)&dst, &sl) == 0);
    NTSTATUS st = conn->Dispatch->NdkConnect(conn, qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                             iwt_addr_len(&dst), 1, 1, NULL, 0, c_req_cb, NULL);
    CHECK_STATUS(st, STATUS_PENDING);

    NDK_FN_CLOSE_OBJECT close_pd = pd->Dispatch->NdkClosePd, close_srq = srq->Dispatch->NdkCloseSrq,
                        close_qp = qp->Dispatch->NdkCloseQp, close_conn = conn->Dispatch->NdkCloseConnector;
    CHECK_STATUS(close_pd(&pd->Header, c_close_cb, (void *)(intptr_t)C_PD), STATUS_PENDING);
    CHECK_STATUS(close_srq(&srq->Header, c_close_cb, (void *)(intptr_t)C_SRQ), STATUS_PENDING);
    CHECK_STATUS(close_qp(&qp->Header, c_close_cb, (void *)(intptr_t)C_QP), STATUS_PENDING);
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&g_c.seq), 0);
    CHECK_EQ(atomic_load(&g_c_req), 0);
    /* The connector's close may finish inline (STATUS_SUCCESS) when the progress thread has
     * already completed the cancelled connect by the time the close drops its reference. */
    NTSTATUS cst = close_conn(&conn->Header, c_close_cb, (void *)(intptr_t)C_CONN);
    int expect = cst == STATUS_SUCCESS ? 3 : 4;
    if (cst != STATUS_SUCCESS)
        CHECK_STATUS(cst, STATUS_PENDING);
    CHECK_MSG(iwt_wait_atomic(&g_c.seq, expect, TMO), "close chain did not finish (%d done)", atomic_load(&g_c.seq));
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&g_c.seq), expect);
    if (cst == STATUS_PENDING)
        CHECK(atomic_load(&g_c.order[C_CONN]) < atomic_load(&g_c.order[C_QP]));
    CHECK(atomic_load(&g_c.order[C_QP]) < atomic_load(&g_c.order[C_SRQ]));
    CHECK(atomic_load(&g_c.order[C_SRQ]) < atomic_load(&g_c.order[C_PD]));
    CHECK_EQ(atomic_load(&g_c.overlap), 0);
    /* the outstanding connect completed (once, cancelled) before the connector's close */
    CHECK_EQ(atomic_load(&g_c_req), 1);
    CHECK_STATUS(atomic_load(&g_c.conn_req_done), STATUS_CANCELLED);
    close(lfd);
    iwt_close_obj(cq, TMO);
}

/* ---- D: connector closed from its own request completion ---- */
static struct {
    NDK_CONNECTOR *conn;
    struct iwt_close close;
    atomic_int req;
    atomic_int req_status;
    atomic_int close_status;
    atomic_int returned;
    atomic_int early;
} g_d;

static void d_close_cb(void *ctx)
{
    (void)ctx;
    if (!atomic_load(&g_d.returned))
        atomic_store(&g_d.early, 1);
    atomic_fetch_add(&g_d.close.done, 1);
}

static void d_req_cb(void *ctx, NTSTATUS st)
{
    (void)ctx;
    atomic_store(&g_d.req_status, st);
    atomic_fetch_add(&g_d.req, 1);
    NDK_FN_CLOSE_OBJECT fn = g_d.conn->Dispatch->NdkCloseConnector;
    atomic_store(&g_d.close_status, fn(&g_d.conn->Header, d_close_cb, NULL));
    usleep(20 * 1000);
    atomic_store(&g_d.returned, 1);
}

static void conn_from_completion(struct iwt *t)
{
    struct iwt_qp q;
    SOCKADDR_INET src = iwt_addr(t, 0), dst = iwt_addr(t, 0);
    socklen_t sl = sizeof dst;
    int fd = socket(t->family, SOCK_STREAM, 0);

    /* a port with no listener: bind to learn a free port, then release it */
    CHECK(bind(fd, (struct sockaddr *)&dst, iwt_addr_len(&dst)) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&dst, &sl) == 0);
    close(fd);
    memset(&g_d, 0, sizeof g_d);
    iwt_qp_create(t, &q, 4);
    CHECK_STATUS(t->ad->Dispatch->NdkCreateConnector(t->ad, NULL, NULL, &g_d.conn), STATUS_SUCCESS);
    NTSTATUS st = g_d.conn->Dispatch->NdkConnect(g_d.conn, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                                 iwt_addr_len(&dst), 1, 1, NULL, 0, d_req_cb, NULL);
    if (st != STATUS_PENDING) {
        CHECK_STATUS(st, STATUS_CONNECTION_REFUSED);   /* inline refusal is legal too */
        iwt_close_obj(g_d.conn, TMO);
    } else {
        CHECK_MSG(iwt_wait_atomic(&g_d.returned, 1, TMO), "connect never completed");
        CHECK_STATUS(atomic_load(&g_d.req_status), STATUS_CONNECTION_REFUSED);
        NTSTATUS cs = atomic_load(&g_d.close_status);
        CHECK(cs == STATUS_SUCCESS || cs == STATUS_PENDING);
        if (cs == STATUS_PENDING)
            CHECK_MSG(iwt_wait_atomic(&g_d.close.done, 1, TMO), "connector close never completed");
        usleep(50 * 1000);
        CHECK_EQ(atomic_load(&g_d.close.done), cs == STATUS_PENDING ? 1 : 0);
        CHECK_EQ(atomic_load(&g_d.req), 1);
        CHECK_EQ(atomic_load(&g_d.early), 0);
    }
    iwt_qp_destroy(&q);    /* the QP is reusable / closable once its connector is gone */
}

/* ---- E: the blocking adapter close waits for the children ---- */
static struct {
    struct iwt *t;
    atomic_int returned;
} g_e;

static void *e_thread(void *p)
{
    (void)p;
    ndk_rt_close_adapter(g_e.t->rt, g_e.t->ad);
    atomic_store(&g_e.returned, 1);
    return NULL;
}

static void adapter_close_blocks(struct iwt *t)
{
    NDK_PD *pd;
    NDK_CQ *cq;
    pthread_t th;
    struct iwt_close c;

    CHECK_STATUS(t->ad->Dispatch->NdkCreatePd(t->ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(t->ad->Dispatch->NdkCreateCq(t->ad, 8, nop_cq, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    g_e.t = t;
    atomic_store(&g_e.returned, 0);
    CHECK(pthread_create(&th, NULL, e_thread, NULL) == 0);
    usleep(100 * 1000);
    CHECK_EQ(atomic_load(&g_e.returned), 0);
    iwt_close_obj(pd, TMO);
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&g_e.returned), 0);
    NTSTATUS st = iwt_close_start(cq, &c);
    CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    pthread_join(th, NULL);
    CHECK_EQ(atomic_load(&g_e.returned), 1);
    if (st == STATUS_PENDING)
        CHECK_EQ(atomic_load(&c.done), 1);    /* its completion returned before the adapter close */
    t->ad = NULL;
}

static void body(int family)
{
    struct iwt t;

    iwt_open(&t, family);
    pd_children(&t);
    cq_from_callback(&t);
    chain(&t);
    conn_from_completion(&t);
    adapter_close_blocks(&t);
    iwt_close(&t);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
