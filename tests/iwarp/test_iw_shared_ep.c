/* NdkConnectWithSharedEndpoint (§2.11, §5.1, §5.11.5), two processes over 127.0.0.1 and ::1.
 * The server listens on two ports. The client creates one shared endpoint on port 0 (the
 * provider picks an ephemeral port; NdkGetLocalAddress reports it) and connects two connectors
 * through it, one to each listener: both succeed, both report the shared local port. A second
 * connection to the same destination through it fails with STATUS_ADDRESS_ALREADY_EXISTS. The
 * port is reserved while the endpoint or a connector through it lives (NdkListen on it ->
 * STATUS_SHARING_VIOLATION); closing the shared endpoint pends until its connectors are
 * closed, then the port is free again. */
#include "iwtest.h"

#include <string.h>
#include <unistd.h>

#define TMO 10000

struct arg {
    int family;
    struct iwt_chan ch;
};

static _Atomic(NDK_CONNECTOR *) g_in[2];
static atomic_int g_ev;        /* connect events published: g_in[0 .. g_ev-1] are set */
static atomic_int g_slot;      /* slots handed out (taken before the store, published after) */

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    int i = atomic_fetch_add(&g_slot, 1);
    if (i < 2)
        atomic_store(&g_in[i], c);
    atomic_fetch_add(&g_ev, 1);
}

static int server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q[2];
    struct iwt_req rq[2];
    NDK_LISTENER *l[2];
    SOCKADDR_INET addr;
    ULONG len;

    iwt_open(&t, a->family);
    for (int i = 0; i < 2; i++) {
        iwt_qp_create(&t, &q[i], 4);
        CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l[i]), STATUS_SUCCESS);
        addr = iwt_addr(&t, 0);
        CHECK_STATUS(l[i]->Dispatch->NdkListen(l[i], (PSOCKADDR)&addr, iwt_addr_len(&addr), NULL, NULL),
                     STATUS_SUCCESS);
        len = sizeof addr;
        CHECK_STATUS(l[i]->Dispatch->NdkGetLocalAddress(l[i], (PSOCKADDR)&addr, &len), STATUS_SUCCESS);
        iwt_send(iwt_srv_tx(&a->ch), iwt_port(&addr));
    }
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(iwt_wait_atomic(&g_ev, i + 1, TMO), "connect event %d missing", i);
        NDK_CONNECTOR *c = atomic_load(&g_in[i]);
        iwt_req_init(&rq[i]);
        NTSTATUS st = c->Dispatch->NdkAccept(c, q[i].qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &rq[i]);
        CHECK_STATUS(iwt_req_wait(&rq[i], st, TMO), STATUS_SUCCESS);
    }
    /* the duplicate connection must not even reach us */
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 1);
    CHECK_EQ(atomic_load(&g_ev), 2);
    iwt_send(iwt_srv_tx(&a->ch), 1);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), 3 * TMO), 2);
    for (int i = 0; i < 2; i++) {
        iwt_close_obj(atomic_load(&g_in[i]), TMO);
        iwt_close_obj(l[i], TMO);
        iwt_qp_destroy(&q[i]);
    }
    iwt_close(&t);
    return 0;
}

static NTSTATUS try_listen(struct iwt *t, uint16_t port, NDK_LISTENER **out)
{
    NDK_LISTENER *l;
    SOCKADDR_INET addr = iwt_addr(t, port);

    CHECK_STATUS(t->ad->Dispatch->NdkCreateListener(t->ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    NTSTATUS st = l->Dispatch->NdkListen(l, (PSOCKADDR)&addr, iwt_addr_len(&addr), NULL, NULL);
    if (st == STATUS_SUCCESS && out) {
        *out = l;
        return st;
    }
    iwt_close_obj(l, TMO);
    return st;
}

static int client(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q[3];
    struct iwt_req rq[3];
    NDK_CONNECTOR *c[3];
    NDK_SHARED_ENDPOINT *sep;
    SOCKADDR_INET addr, got;
    ULONG len;
    uint16_t lport[2], sport;
    struct iwt_close sc;
    NTSTATUS st;

    iwt_open(&t, a->family);
    lport[0] = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    lport[1] = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);

    /* one shared endpoint, port 0 -> the provider's choice */
    addr = iwt_addr(&t, 0);
    st = t.ad->Dispatch->NdkCreateSharedEndpoint(t.ad, (PSOCKADDR)&addr, iwt_addr_len(&addr), NULL, NULL, &sep);
    CHECK_STATUS(st, STATUS_SUCCESS);
    len = 0;
    CHECK_STATUS(sep->Dispatch->NdkGetLocalAddress(sep, NULL, &len), STATUS_BUFFER_TOO_SMALL);
    CHECK_EQ(len, iwt_addr_len(&addr));
    len = sizeof got;
    CHECK_STATUS(sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&got, &len), STATUS_SUCCESS);
    CHECK_EQ(got.si_family, a->family);
    sport = iwt_port(&got);
    CHECK_MSG(sport >= NDK_EPHEMERAL_PORT_FIRST, "shared endpoint port %u is not ephemeral (§5.11.5)", sport);
    printf("   shared endpoint on port %u\n", sport);

    /* the port is taken: a listener on it is a sharing violation */
    CHECK_STATUS(try_listen(&t, sport, NULL), STATUS_SHARING_VIOLATION);

    /* two connectors through it to two different listeners */
    for (int i = 0; i < 3; i++) {
        iwt_qp_create(&t, &q[i], 4);
        CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c[i]), STATUS_SUCCESS);
    }
    for (int i = 0; i < 2; i++) {
        SOCKADDR_INET dst = iwt_addr(&t, lport[i]);
        iwt_req_init(&rq[i]);
        st = c[i]->Dispatch->NdkConnectWithSharedEndpoint(c[i], q[i].qp, sep, (PSOCKADDR)&dst, iwt_addr_len(&dst), 1,
                                                          1, NULL, 0, iwt_req_cb, &rq[i]);
        CHECK_STATUS(iwt_req_wait(&rq[i], st, TMO), STATUS_SUCCESS);
        iwt_req_init(&rq[i]);
        st = c[i]->Dispatch->NdkCompleteConnect(c[i], NULL, NULL, iwt_req_cb, &rq[i]);
        CHECK_STATUS(iwt_req_wait(&rq[i], st, TMO), STATUS_SUCCESS);
        len = sizeof got;
        CHECK_STATUS(c[i]->Dispatch->NdkGetLocalAddress(c[i], (PSOCKADDR)&got, &len), STATUS_SUCCESS);
        CHECK_MSG(iwt_port(&got) == sport, "connector %d is on local port %u, not the shared %u", i, iwt_port(&got),
                  sport);
        len = sizeof got;
        CHECK_STATUS(c[i]->Dispatch->NdkGetPeerAddress(c[i], (PSOCKADDR)&got, &len), STATUS_SUCCESS);
        CHECK_EQ(iwt_port(&got), lport[i]);
    }

    /* the same destination again through the same endpoint */
    {
        SOCKADDR_INET dst = iwt_addr(&t, lport[0]);
        iwt_req_init(&rq[2]);
        st = c[2]->Dispatch->NdkConnectWithSharedEndpoint(c[2], q[2].qp, sep, (PSOCKADDR)&dst, iwt_addr_len(&dst), 1,
                                                          1, NULL, 0, iwt_req_cb, &rq[2]);
        CHECK_STATUS(iwt_req_wait(&rq[2], st, TMO), STATUS_ADDRESS_ALREADY_EXISTS);
    }
    iwt_send(iwt_cli_tx(&a->ch), 1);
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 1);

    /* closing the endpoint pends while connectors use it; the port stays reserved */
    st = iwt_close_start(sep, &sc);
    CHECK_STATUS(st, STATUS_PENDING);
    usleep(100 * 1000);
    CHECK_EQ(atomic_load(&sc.done), 0);
    CHECK_STATUS(try_listen(&t, sport, NULL), STATUS_SHARING_VIOLATION);
    iwt_close_obj(c[0], TMO);
    usleep(100 * 1000);
    CHECK_EQ(atomic_load(&sc.done), 0);
    CHECK_STATUS(try_listen(&t, sport, NULL), STATUS_SHARING_VIOLATION);
    iwt_close_obj(c[2], TMO);            /* never connected: not a user of the endpoint */
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&sc.done), 0);
    iwt_close_obj(c[1], TMO);
    CHECK_MSG(iwt_wait_atomic(&sc.done, 1, TMO), "shared endpoint close never completed");
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&sc.done), 1);

    /* everything is gone (the connections were reset, nothing in TIME_WAIT): the port is free */
    NDK_LISTENER *l = NULL;
    st = try_listen(&t, sport, &l);
    CHECK_MSG(st == STATUS_SUCCESS, "port %u still reserved after the shared endpoint closed: %s", sport,
              ndk_rt_status_name(st));
    iwt_close_obj(l, TMO);
    iwt_send(iwt_cli_tx(&a->ch), 2);
    for (int i = 0; i < 3; i++)
        iwt_qp_destroy(&q[i]);
    iwt_close(&t);
    return 0;
}

static void body(int family)
{
    struct arg a = { .family = family };

    atomic_store(&g_ev, 0);
    atomic_store(&g_slot, 0);
    iwt_chan_init(&a.ch);
    iwt_run_pair(server, client, &a, 60000);
    iwt_chan_close(&a.ch);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
