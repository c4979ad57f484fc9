/* test_dp_polled: consumer-driven progress (src/providers/iwarp/poll.c) between two processes
 * over 127.0.0.1 and ::1. A consumer that busy-polls its CQ runs the engines itself and the
 * progress thread stops reading the socket; these phases check that nothing gets stuck there:
 *   1. ping-pong with both sides busy-polling (payloads checked);
 *   2. RDMA Writes far larger than the socket buffers, to a server that stopped polling, while
 *      the writer busy-polls: the writer's poll must resume its blocked TX engine itself (its
 *      progress thread no longer watches EPOLLOUT), the server's progress thread must take its
 *      socket back (IW_POLL_IDLE_MS) and place the data;
 *   3. the server stops polling without arming: the client's RDMA Read of its memory must still
 *      be answered (the progress thread takes the socket back after IW_POLL_IDLE_MS);
 *   4. the server busy-polls, then arms and sleeps: a Send must produce the notification;
 *   5. the client disconnects while the server busy-polls: the disconnect event arrives; the
 *      server's own disconnect then flushes the receives still posted. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpe2e.h"

#define TMO DPE_TMO
#define NPING 2000
#define NRECV 32
#define RBUF 64
#define WR_AREA (1u << 20)      /* written by the client in phase 2 */
#define WR_LEN (16u << 20)
#define RD_AREA (20u << 20)     /* read by the client in phase 3 */
#define RD_LEN (1u << 20)
#define SRV_LEN (24u << 20)

struct arg {
    int family;
    struct iwt_chan ch;
};

static atomic_int g_disc, g_notified;
static void on_disc(void *ctx) { (void)ctx; atomic_store(&g_disc, 1); }
static void on_notify(void *ctx, NTSTATUS st)
{
    (void)ctx;
    if (st == STATUS_SUCCESS)
        atomic_fetch_add(&g_notified, 1);
}

/* Busy-polls for one completion: no sleep, no arm (the way ndkperf --poll waits). */
static bool spin(NDK_CQ *cq, NDK_RESULT_EX *r, int timeout_ms)
{
    uint64_t end = ndk_test_now_ms() + (uint64_t)timeout_ms;

    for (unsigned k = 1;; k++) {
        if (cq->Dispatch->NdkGetCqResultsEx(cq, r, 1) == 1)
            return true;
        if (!(k & 1023) && ndk_test_now_ms() > end)
            return false;
    }
}

/* Spins for a completion and checks it. */
static NDK_RESULT_EX spin_expect(struct dpe_side *s, void *ctx, NDK_OPERATION_TYPE type)
{
    NDK_RESULT_EX r;
    CHECK_MSG(spin(s->cq, &r, TMO), "no completion for %p", ctx);
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK(r.RequestContext == ctx);
    CHECK_EQ(r.Type, type);
    return r;
}

static void post_recv(struct dpe_side *s, uint32_t k)
{
    NDK_SGE sg = { .VirtualAddress = s->buf + (size_t)k * RBUF, .Length = RBUF, .MemoryRegionToken = s->token };
    CHECK_STATUS(s->qp->Dispatch->NdkReceive(s->qp, (void *)(uintptr_t)(1000 + k), &sg, 1), STATUS_SUCCESS);
}

static int server(void *p)
{
    struct arg *a = p;
    struct dpe_side s;
    struct iwt_req rq;
    NDK_LISTENER *l;
    NDK_CONNECTOR *c;
    NTSTATUS st;
    NDK_RESULT_EX r;
    uint64_t end;

    dpe_side_open(&s, a->family, SRV_LEN, on_notify, NULL);
    ndk_test_fill(s.buf + RD_AREA, RD_LEN, 3);
    for (uint32_t k = 0; k < NRECV; k++)
        post_recv(&s, k);
    l = dpe_listen(&s, iwt_srv_tx(&a->ch));
    c = dpe_accept(&s, on_disc);

    /* 1: echo every message from the receive buffer it landed in. Our Send's completion and the
     * next ping share the CQ and may come in either order (different queues). */
    uint32_t echoing = NRECV;            /* receive buffer of the echo in flight, NRECV = none */
    for (uint32_t i = 0; i < NPING || echoing < NRECV;) {
        CHECK_MSG(spin(s.cq, &r, TMO), "ping %u did not arrive", i);
        CHECK_STATUS(r.Status, STATUS_SUCCESS);
        if (r.Type == NdkOperationTypeSend) {
            CHECK(echoing < NRECV && r.RequestContext == (void *)(uintptr_t)(5000 + echoing));
            post_recv(&s, echoing);
            echoing = NRECV;
            continue;
        }
        CHECK_EQ(r.Type, NdkOperationTypeReceive);
        CHECK_EQ(r.BytesTransferred, 8u);
        uint32_t k = (uint32_t)((uintptr_t)r.RequestContext - 1000);
        CHECK(k < NRECV && k != echoing);
        CHECK(ndk_test_check(s.buf + (size_t)k * RBUF, 8, 100 + i));
        while (echoing < NRECV) {        /* one echo at a time: its buffer is still in use */
            NDK_RESULT_EX w;
            CHECK_MSG(spin(s.cq, &w, TMO), "echo %u did not complete", i);
            CHECK_STATUS(w.Status, STATUS_SUCCESS);
            CHECK(w.Type == NdkOperationTypeSend && w.RequestContext == (void *)(uintptr_t)(5000 + echoing));
            post_recv(&s, echoing);
            echoing = NRECV;
        }
        NDK_SGE sg = { .VirtualAddress = s.buf + (size_t)k * RBUF, .Length = 8, .MemoryRegionToken = s.token };
        CHECK_STATUS(s.qp->Dispatch->NdkSend(s.qp, (void *)(uintptr_t)(5000 + k), &sg, 1, 0), STATUS_SUCCESS);
        echoing = k;
        i++;
    }
    /* 2: we stop polling (without arming) while the Writes come; the Send behind them is here
     * once the client saw all its requests complete */
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), 120000), 2);
    CHECK_MSG(spin(s.cq, &r, TMO), "the Send after the Writes did not arrive");
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK(ndk_test_check(s.buf + WR_AREA, WR_LEN, 2));
    post_recv(&s, (uint32_t)((uintptr_t)r.RequestContext - 1000));
    iwt_send(iwt_srv_tx(&a->ch), 2);
    /* 3: not polling, not armed, while the client reads */
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), 60000), 3);
    /* 4: busy long enough to be a poller, then arm and sleep */
    end = ndk_test_now_ms() + 20;
    while (ndk_test_now_ms() < end)
        CHECK(s.cq->Dispatch->NdkGetCqResultsEx(s.cq, &r, 1) == 0);
    s.cq->Dispatch->NdkArmCq(s.cq, NDK_CQ_NOTIFY_ANY);
    iwt_send(iwt_srv_tx(&a->ch), 4);
    CHECK_MSG(iwt_wait_atomic(&g_notified, 1, TMO), "no notification after arming");
    CHECK_EQ(s.cq->Dispatch->NdkGetCqResultsEx(s.cq, &r, 1), 1u);
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK_EQ(r.BytesTransferred, 8u);
    /* 5: spin until the peer's disconnect shows (§3.6: indicated without a flush), then our
     * disconnect flushes the receives still posted */
    iwt_send(iwt_srv_tx(&a->ch), 5);
    end = ndk_test_now_ms() + TMO;
    while (!atomic_load(&g_disc)) {
        CHECK_MSG(ndk_test_now_ms() < end, "no disconnect event while polling");
        CHECK(s.cq->Dispatch->NdkGetCqResultsEx(s.cq, &r, 1) == 0);
    }
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    iwt_req_wait(&rq, st, TMO);
    for (uint32_t k = 0; k < NRECV - 1; k++) {
        CHECK_MSG(spin(s.cq, &r, TMO), "%u of %u receives flushed", k, NRECV - 1);
        CHECK_STATUS(r.Status, STATUS_CANCELLED);
    }
    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);
    dpe_side_close(&s);
    return 0;
}

static int client(void *p)
{
    struct arg *a = p;
    struct dpe_side s;
    struct iwt_req rq;
    struct dpe_peer peer;
    NDK_CONNECTOR *c;
    NTSTATUS st;

    dpe_recv_peer(&peer, iwt_cli_rx(&a->ch));
    uint32_t rtok = peer.token;
    uint64_t rva = peer.va;
    /* Our QP never goes back to the progress thread while we poll, however long the scheduler
     * keeps us off the CPU: phase 2 must find the poll itself resuming the blocked TX engine. */
    setenv("NDK_IWARP_POLL_IDLE_MS", "600000", 1);
    /* [Write source][receive buffers][ping source] */
    dpe_side_open(&s, a->family, WR_LEN + RBUF * NRECV + RBUF, NULL, NULL);
    uint8_t *rbufs = s.buf + WR_LEN, *ping = rbufs + RBUF * NRECV;
    ndk_test_fill(s.buf, WR_LEN, 2);
    for (uint32_t k = 0; k < NRECV; k++) {
        NDK_SGE sg = { .VirtualAddress = rbufs + (size_t)k * RBUF, .Length = RBUF, .MemoryRegionToken = s.token };
        CHECK_STATUS(s.qp->Dispatch->NdkReceive(s.qp, (void *)(uintptr_t)(1000 + k), &sg, 1), STATUS_SUCCESS);
    }
    c = dpe_connect(&s, peer.port, on_disc);

    /* 1: the echo and our Send's completion, in either order */
    for (uint32_t i = 0; i < NPING; i++) {
        NDK_SGE sg = { .VirtualAddress = ping, .Length = 8, .MemoryRegionToken = s.token };
        NDK_RESULT_EX r;
        bool sent = false, echoed = false;
        ndk_test_fill(ping, 8, 100 + i);
        CHECK_STATUS(s.qp->Dispatch->NdkSend(s.qp, (void *)(uintptr_t)(5000 + i), &sg, 1, 0), STATUS_SUCCESS);
        while (!sent || !echoed) {
            CHECK_MSG(spin(s.cq, &r, TMO), "ping %u: sent %d echoed %d", i, sent, echoed);
            CHECK_STATUS(r.Status, STATUS_SUCCESS);
            if (r.Type == NdkOperationTypeSend) {
                CHECK(r.RequestContext == (void *)(uintptr_t)(5000 + i));
                sent = true;
                continue;
            }
            uint32_t k = (uint32_t)((uintptr_t)r.RequestContext - 1000);
            CHECK(k < NRECV);
            CHECK_EQ(r.BytesTransferred, 8u);
            CHECK(ndk_test_check(rbufs + (size_t)k * RBUF, 8, 100 + i));
            NDK_SGE rs = { .VirtualAddress = rbufs + (size_t)k * RBUF, .Length = RBUF, .MemoryRegionToken = s.token };
            CHECK_STATUS(s.qp->Dispatch->NdkReceive(s.qp, r.RequestContext, &rs, 1), STATUS_SUCCESS);
            echoed = true;
        }
    }
    /* 2: one 16 MiB Write, far beyond what the sockets hold, posted while we
     * count as a busy poller (so our progress thread no longer waits for socket room) */
    {
        NDK_RESULT_EX r;
        uint64_t until = ndk_test_now_ms() + 20;
        while (ndk_test_now_ms() < until)
            CHECK(s.cq->Dispatch->NdkGetCqResultsEx(s.cq, &r, 1) == 0);
    }
    {
        NDK_SGE sg = { .VirtualAddress = s.buf, .Length = WR_LEN, .MemoryRegionToken = s.token };
        CHECK_STATUS(s.qp->Dispatch->NdkWrite(s.qp, (void *)(uintptr_t)200, &sg, 1, rva + WR_AREA, rtok, 0),
                     STATUS_SUCCESS);
    }
    CHECK_STATUS(s.qp->Dispatch->NdkSend(s.qp, (void *)(uintptr_t)300, NULL, 0, 0), STATUS_SUCCESS);
    spin_expect(&s, (void *)(uintptr_t)200, NdkOperationTypeWrite);
    spin_expect(&s, (void *)(uintptr_t)300, NdkOperationTypeSend);
    iwt_send(iwt_cli_tx(&a->ch), 2);
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), 60000), 2);
    /* 3: the server neither polls nor arms now */
    memset(s.buf, 0, RD_LEN);
    {
        NDK_SGE sg = { .VirtualAddress = s.buf, .Length = RD_LEN, .MemoryRegionToken = s.token };
        CHECK_STATUS(s.qp->Dispatch->NdkRead(s.qp, (void *)(uintptr_t)400, &sg, 1, rva + RD_AREA, rtok, 0),
                     STATUS_SUCCESS);
        spin_expect(&s, (void *)(uintptr_t)400, NdkOperationTypeRead);
        CHECK(ndk_test_check(s.buf, RD_LEN, 3));
    }
    iwt_send(iwt_cli_tx(&a->ch), 3);
    /* 4: a Send to the armed, sleeping server */
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 4);
    {
        NDK_SGE sg = { .VirtualAddress = s.buf, .Length = 8, .MemoryRegionToken = s.token };
        CHECK_STATUS(s.qp->Dispatch->NdkSend(s.qp, (void *)(uintptr_t)500, &sg, 1, 0), STATUS_SUCCESS);
        spin_expect(&s, (void *)(uintptr_t)500, NdkOperationTypeSend);
    }
    /* 5 */
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 5);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_close_obj(c, TMO);
    dpe_side_close(&s);
    return 0;
}

static void body(int family)
{
    struct arg a = { .family = family };
    iwt_chan_init(&a.ch);
    atomic_store(&g_disc, 0);
    atomic_store(&g_notified, 0);
    iwt_run_pair(server, client, &a, 170000);
    iwt_chan_close(&a.ch);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("test_dp_polled: OK\n");
    return 0;
}
