/* Two processes over 127.0.0.1 and ::1: the client process is SIGKILLed while connected; the
 * server gets exactly one disconnect event (§3.6), its posted receive is flushed by the
 * disconnect that follows, and a server killed before accepting makes the connect fail. */
#include "iwtest.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TMO 10000

struct arg {
    int family;
    struct iwt_chan ch;
};

/* Connects, completes, reports "up" and waits to be killed. */
static int victim(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_CONNECTOR *c;
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    SOCKADDR_INET src, dst;

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 4);
    src = iwt_addr(&t, 0);
    dst = iwt_addr(&t, port);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                          iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_send(iwt_cli_tx(&a->ch), 1);
    for (;;)
        pause();
}

static void killed_client(int family)
{
    struct arg a = { .family = family };
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;
    uint8_t buf[16];
    NDK_SGE sge = { .VirtualAddress = buf, .Length = sizeof buf };

    atomic_store(&iwt_connect_events, 0);
    atomic_store(&iwt_disconnect_events, 0);
    iwt_chan_init(&a.ch);
    pid_t pid = ndk_test_spawn(victim, &a);

    iwt_open(&t, family);
    iwt_qp_create(&t, &q, 4);
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, iwt_on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a.ch), iwt_port(&la));
    CHECK_MSG(iwt_wait_atomic(&iwt_connect_events, 1, TMO), "no connect event");
    NDK_CONNECTOR *c = atomic_load(&iwt_incoming);
    CHECK_STATUS(q.qp->Dispatch->NdkReceive(q.qp, (void *)7, &sge, 1), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, iwt_on_disconnect, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a.ch), TMO), 1);

    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    CHECK_MSG(iwt_wait_atomic(&iwt_disconnect_events, 1, TMO), "no disconnect event after the peer was killed");
    usleep(300 * 1000);
    CHECK_EQ(atomic_load(&iwt_disconnect_events), 1);
    /* the peer's death is graceful at TCP level (the kernel sends FIN): no flush yet (§3.6) */
    NDK_RESULT_EX r;
    CHECK_EQ(q.cq->Dispatch->NdkGetCqResultsEx(q.cq, &r, 1), 0);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK(iwt_cq_wait(q.cq, &r, TMO));
    CHECK_STATUS(r.Status, STATUS_CANCELLED);
    CHECK(r.RequestContext == (void *)7);
    CHECK_EQ(atomic_load(&iwt_disconnect_events), 1);
    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    iwt_chan_close(&a.ch);
}

/* A server process that dies with a request undelivered-to-accept: the connect fails. */
static int dying_server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;

    iwt_open(&t, a->family);
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, iwt_on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));
    CHECK_MSG(iwt_wait_atomic(&iwt_connect_events, 1, TMO), "no connect event");
    kill(getpid(), SIGKILL);
    return 1;
}

static void killed_server(int family)
{
    struct arg a = { .family = family };
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_CONNECTOR *c;

    atomic_store(&iwt_connect_events, 0);
    iwt_chan_init(&a.ch);
    pid_t pid = ndk_test_spawn(dying_server, &a);
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a.ch), TMO);
    iwt_open(&t, family);
    iwt_qp_create(&t, &q, 4);
    SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, port);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                          iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, &rq);
    st = iwt_req_wait(&rq, st, TMO);
    CHECK_STATUS(st, STATUS_CONNECTION_REFUSED);
    waitpid(pid, NULL, 0);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    iwt_chan_close(&a.ch);
}

static void body(int family)
{
    killed_client(family);
    killed_server(family);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
