/* Busy polling a CQ that many connected QPs share (issue 14 item 5: the poll path asks the CQ's
 * epoll set which sockets have data instead of reading every QP). Two processes over 127.0.0.1,
 * K connections, on each side one CQ for all of them; both sides busy-poll it (NdkGetCqResultsEx
 * in a loop, never armed):
 *   1. ping-pong on one connection in the middle (payloads checked), the others idle;
 *   2. one Send on every connection, in reverse order: each must complete at the server, whose
 *      poller must find every socket that became readable;
 *   3. an RDMA Write far larger than the socket buffers on one connection while the writer
 *      busy-polls: its TX engine blocks on a full socket, and only the poller retries it (its
 *      progress thread does not watch for room while the QP is polled); a Send behind the Write
 *      tells the server it is placed, and the server checks the bytes.
 * A polled QP returns to the progress thread only after 600 s here (NDK_IWARP_POLL_IDLE_MS), so a
 * readiness the poller misses hangs the test instead of costing poll_idle_ms. Correctness
 * only, no timings. */
#include "iwtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 60000
#define K 200
#define PING 137             /* the ping-pong connection */
#define WRITER PING          /* the big Write: on a connection its client polls already */
#define NPING 500
#define BIG (16u << 20)
#define SLOT 64

struct arg {
    int family;
    struct iwt_chan ch;
};

struct side {
    struct iwt t;
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_MR *mr;
    MDL *mdl;
    uint8_t *buf;            /* K receive slots, K send slots, then the big area */
    NDK_QP *qp[K];
    NDK_CONNECTOR *c[K];
    struct iwt_req rq[K];
};

static struct side S;

static void nop_cq(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
}

static void side_open(struct side *s, int family)
{
    iwt_raise_nofile(~0ul);
    iwt_open(&s->t, family);
    CHECK_STATUS(s->t.ad->Dispatch->NdkCreateCq(s->t.ad, 4 * K + 64, nop_cq, NULL, NULL, NULL, NULL, &s->cq),
                 STATUS_SUCCESS);
    CHECK_STATUS(s->t.ad->Dispatch->NdkCreatePd(s->t.ad, NULL, NULL, &s->pd), STATUS_SUCCESS);
    s->buf = calloc(1, 2 * K * SLOT + BIG);
    CHECK(s->buf);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateMr(s->pd, FALSE, NULL, NULL, &s->mr), STATUS_SUCCESS);
    s->mdl = IoAllocateMdl(s->buf, 2 * K * SLOT + BIG, FALSE, FALSE, NULL);
    struct iwt_req rq;
    iwt_req_init(&rq);
    NTSTATUS st = s->mr->Dispatch->NdkRegisterMr(s->mr, s->mdl, 2 * K * SLOT + BIG,
                                                 NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
                                                 iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    for (uintptr_t i = 0; i < K; i++)
        CHECK_STATUS(s->pd->Dispatch->NdkCreateQp(s->pd, s->cq, s->cq, (void *)i, 8, 8, 1, 1, 0, NULL, NULL, &s->qp[i]),
                     STATUS_SUCCESS);
}

static void side_close(struct side *s)
{
    for (int i = 0; i < K; i++) {
        if (s->c[i])
            iwt_close_obj(s->c[i], TMO);
        iwt_close_obj(s->qp[i], TMO);
    }
    iwt_close_obj(s->mr, TMO);
    NdkMdlChainFree(s->mdl);
    iwt_close_obj(s->pd, TMO);
    iwt_close_obj(s->cq, TMO);
    free(s->buf);
    iwt_close(&s->t);
}

static NDK_SGE sge(struct side *s, uint8_t *p, ULONG len)
{
    NDK_SGE g = { .VirtualAddress = p, .Length = len, .MemoryRegionToken = s->mr->Dispatch->NdkGetLocalTokenFromMr(s->mr) };
    return g;
}

static void post_recv(struct side *s, int i)
{
    NDK_SGE g = sge(s, s->buf + i * SLOT, SLOT);
    CHECK_STATUS(s->qp[i]->Dispatch->NdkReceive(s->qp[i], (void *)(uintptr_t)i, &g, 1), STATUS_SUCCESS);
}

static void send_on(struct side *s, int i, uint8_t *p, ULONG len)
{
    NDK_SGE g = sge(s, p, len);
    CHECK_STATUS(s->qp[i]->Dispatch->NdkSend(s->qp[i], (void *)(uintptr_t)(1000 + i), &g, 1, 0), STATUS_SUCCESS);
}

/* Busy-polls the shared CQ for one completion of type type on QP i (others are kept count of
 * in *sends when they are Send completions). */
static NDK_RESULT_EX busy_wait(struct side *s, int i, NDK_OPERATION_TYPE type, int *sends)
{
    uint64_t end = ndk_test_now_ms() + TMO;
    NDK_RESULT_EX r;

    for (;;) {
        if (s->cq->Dispatch->NdkGetCqResultsEx(s->cq, &r, 1) == 1) {
            CHECK_MSG(r.Status == STATUS_SUCCESS, "completion on QP %d: 0x%08x", (int)(uintptr_t)r.QPContext,
                      (unsigned)r.Status);
            if ((int)(uintptr_t)r.QPContext == i && r.Type == type)
                return r;
            CHECK_MSG(sends && r.Type == NdkOperationTypeSend, "unexpected completion type %d on QP %d", (int)r.Type,
                      (int)(uintptr_t)r.QPContext);
            (*sends)++;
            continue;
        }
        CHECK_MSG(ndk_test_now_ms() < end, "QP %d: no completion of type %d in %d ms", i, (int)type, TMO);
    }
}

static atomic_int g_events;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    uint8_t pd[256];
    ULONG len = sizeof pd;
    uint32_t i = K;
    if (c->Dispatch->NdkGetConnectionData(c, NULL, NULL, pd, &len) == STATUS_SUCCESS && len >= 4)
        memcpy(&i, pd, 4);
    CHECK_MSG(i < K && !S.c[i], "connect event with index %u", i);
    S.c[i] = c;
    iwt_req_init(&S.rq[i]);
    NTSTATUS st = c->Dispatch->NdkAccept(c, S.qp[i], 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &S.rq[i]);
    if (st != STATUS_PENDING) {
        atomic_store(&S.rq[i].status, st);
        atomic_store(&S.rq[i].done, 1);
    }
    atomic_fetch_add(&g_events, 1);
}

static int server(void *p)
{
    struct arg *a = p;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;

    side_open(&S, a->family);
    for (int i = 0; i < K; i++)
        post_recv(&S, i);
    la = iwt_addr(&S.t, 0);
    CHECK_STATUS(S.t.ad->Dispatch->NdkCreateListener(S.t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));
    uint8_t *area = S.buf + 2 * K * SLOT;
    uint64_t va = (uint64_t)(uintptr_t)area;
    iwt_send(iwt_srv_tx(&a->ch), (uint32_t)va);
    iwt_send(iwt_srv_tx(&a->ch), (uint32_t)(va >> 32));
    iwt_send(iwt_srv_tx(&a->ch), S.mr->Dispatch->NdkGetRemoteTokenFromMr(S.mr));
    CHECK_MSG(iwt_wait_atomic(&g_events, K, TMO), "%d connect events of %d", atomic_load(&g_events), K);
    for (int i = 0; i < K; i++)
        CHECK_STATUS(iwt_req_wait(&S.rq[i], STATUS_PENDING, TMO), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), 1);

    /* 1. ping-pong: echo every message back */
    int sends = 0;
    for (int n = 0; n < NPING; n++) {
        NDK_RESULT_EX r = busy_wait(&S, PING, NdkOperationTypeReceive, &sends);
        CHECK_EQ(r.BytesTransferred, 8u);
        uint8_t *m = S.buf + PING * SLOT;
        for (int j = 0; j < 8; j++)
            CHECK_EQ(m[j], (uint8_t)(n + j));
        uint8_t *echo = S.buf + (K + PING) * SLOT;
        memcpy(echo, m, 8);
        post_recv(&S, PING);
        send_on(&S, PING, echo, 8);
    }
    /* 2. one Send on every connection */
    {
        int seen[K] = { 0 }, got = 0;
        uint64_t end = ndk_test_now_ms() + TMO;
        while (got < K) {
            NDK_RESULT_EX r;
            if (S.cq->Dispatch->NdkGetCqResultsEx(S.cq, &r, 1) != 1) {
                CHECK_MSG(ndk_test_now_ms() < end, "%d of %d Sends arrived", got, K);
                continue;
            }
            CHECK_STATUS(r.Status, STATUS_SUCCESS);
            if (r.Type == NdkOperationTypeSend) {
                sends++;
                continue;
            }
            int i = (int)(uintptr_t)r.QPContext;
            CHECK_MSG(r.Type == NdkOperationTypeReceive && !seen[i], "QP %d: receive twice or type %d", i, (int)r.Type);
            CHECK_EQ(S.buf[i * SLOT], (uint8_t)(i ^ 0x5a));
            seen[i] = 1;
            got++;
        }
        post_recv(&S, WRITER);
    }
    /* 3. the big Write, then a Send behind it */
    busy_wait(&S, WRITER, NdkOperationTypeReceive, &sends);
    for (uint32_t j = 0; j < BIG; j += 4093)
        CHECK_MSG(area[j] == (uint8_t)(j * 7 + 1), "Write byte %u: %u", j, area[j]);
    while (sends < NPING) {
        NDK_RESULT_EX r;
        if (S.cq->Dispatch->NdkGetCqResultsEx(S.cq, &r, 1) == 1) {
            CHECK_EQ((int)r.Type, (int)NdkOperationTypeSend);
            sends++;
        }
    }
    iwt_send(iwt_srv_tx(&a->ch), 2);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 3);
    for (int i = 0; i < K; i++) {           /* the listener is their antecedent (§1.7) */
        iwt_close_obj(S.c[i], TMO);
        S.c[i] = NULL;
    }
    iwt_close_obj(l, TMO);
    side_close(&S);
    return 0;
}

static int client(void *p)
{
    struct arg *a = p;
    static struct side C;
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    uint64_t va = iwt_recv(iwt_cli_rx(&a->ch), TMO);
    va |= (uint64_t)iwt_recv(iwt_cli_rx(&a->ch), TMO) << 32;
    uint32_t token = iwt_recv(iwt_cli_rx(&a->ch), TMO);

    side_open(&C, a->family);
    for (int i = 0; i < K; i++) {
        SOCKADDR_INET src = iwt_addr(&C.t, 0), dst = iwt_addr(&C.t, port);
        uint32_t idx = (uint32_t)i;
        CHECK_STATUS(C.t.ad->Dispatch->NdkCreateConnector(C.t.ad, NULL, NULL, &C.c[i]), STATUS_SUCCESS);
        iwt_req_init(&C.rq[i]);
        NTSTATUS st = C.c[i]->Dispatch->NdkConnect(C.c[i], C.qp[i], (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                                  iwt_addr_len(&dst), 1, 1, &idx, sizeof idx, iwt_req_cb, &C.rq[i]);
        CHECK_STATUS(iwt_req_wait(&C.rq[i], st, TMO), STATUS_SUCCESS);
        iwt_req_init(&C.rq[i]);
        st = C.c[i]->Dispatch->NdkCompleteConnect(C.c[i], NULL, NULL, iwt_req_cb, &C.rq[i]);
        CHECK_STATUS(iwt_req_wait(&C.rq[i], st, TMO), STATUS_SUCCESS);
    }
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 1);

    /* 1. ping-pong */
    int sends = 0;
    uint8_t *msg = C.buf + (K + PING) * SLOT;
    for (int n = 0; n < NPING; n++) {
        for (int j = 0; j < 8; j++)
            msg[j] = (uint8_t)(n + j);
        post_recv(&C, PING);
        send_on(&C, PING, msg, 8);
        NDK_RESULT_EX r = busy_wait(&C, PING, NdkOperationTypeReceive, &sends);
        CHECK_EQ(r.BytesTransferred, 8u);
        CHECK_MSG(memcmp(C.buf + PING * SLOT, msg, 8) == 0, "ping %d: echo differs", n);
    }
    /* 2. a Send on every connection, last first */
    for (int i = K - 1; i >= 0; i--) {
        uint8_t *one = C.buf + (K + i) * SLOT;
        one[0] = (uint8_t)(i ^ 0x5a);
        send_on(&C, i, one, 1);
    }
    /* 3. the big Write, then a Send on the same connection */
    uint8_t *area = C.buf + 2 * K * SLOT;
    for (uint32_t j = 0; j < BIG; j++)
        area[j] = (uint8_t)(j * 7 + 1);
    NDK_SGE g = sge(&C, area, BIG);
    CHECK_STATUS(C.qp[WRITER]->Dispatch->NdkWrite(C.qp[WRITER], (void *)2, &g, 1, va, token, 0), STATUS_SUCCESS);
    uint8_t *fin = C.buf + (K + WRITER) * SLOT + 8;
    send_on(&C, WRITER, fin, 1);
    busy_wait(&C, WRITER, NdkOperationTypeWrite, &sends);
    while (sends < NPING + K + 1) {
        NDK_RESULT_EX r;
        if (C.cq->Dispatch->NdkGetCqResultsEx(C.cq, &r, 1) == 1) {
            CHECK_STATUS(r.Status, STATUS_SUCCESS);
            CHECK_EQ((int)r.Type, (int)NdkOperationTypeSend);
            sends++;
        }
    }
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 2);
    iwt_send(iwt_cli_tx(&a->ch), 3);
    side_close(&C);
    return 0;
}

static void body(int family)
{
    struct arg a = { .family = family };
    iwt_chan_init(&a.ch);
    iwt_run_pair(server, client, &a, 240000);
    iwt_chan_close(&a.ch);
}

int main(void)
{
    /* A polled QP goes back to its progress thread only after this long: the test fails if the
     * pollers miss a socket's readiness or a blocked TX engine, instead of being rescued. */
    setenv("NDK_IWARP_POLL_IDLE_MS", "600000", 0);
    body(AF_INET);
    printf("PASS\n");
    return 0;
}
