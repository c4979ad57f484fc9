/* Two processes over 127.0.0.1 and ::1: refusals of every kind.
 *  1. passive NdkReject with private data -> the connect completes STATUS_CONNECTION_REFUSED and
 *     the reject's private data is readable with NdkGetConnectionData (§2.11, RFC 5044 §7.1);
 *  2. active NdkReject after the peer accepted -> the peer's NdkAccept fails with
 *     STATUS_CONNECTION_ABORTED (§5.11.1);
 *  3. a port with no listener -> STATUS_CONNECTION_REFUSED;
 *  4. NdkControlConnectEvents: paused -> refused without a connect event, resumed -> accepted;
 *  5. the listener closed while connects are pending: every pending connect fails (no hang),
 *     the listener's close pends until the delivered connectors are closed (§5.11.5),
 *     and later connects are refused;
 *  plus the local errors: an address of no adapter (STATUS_INVALID_ADDRESS), a port in use
 *  (STATUS_SHARING_VIOLATION), oversized private data (STATUS_INVALID_PARAMETER). */
#include "iwtest.h"

#include <arpa/inet.h>

#include <string.h>
#include <unistd.h>

#define TMO 10000
#define NPEND 6

struct arg {
    int family;
    struct iwt_chan ch;
};

static _Atomic(NDK_CONNECTOR *) g_conn[64];
static atomic_int g_nconn;     /* connect events published: g_conn[0 .. g_nconn-1] are set */
static atomic_int g_slot;      /* slots handed out */

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    /* The slot is filled before the event is counted: next_conn() reads it once counted. */
    int i = atomic_fetch_add(&g_slot, 1);
    if (i < 64)
        atomic_store(&g_conn[i], c);
    atomic_fetch_add(&g_nconn, 1);
}

static NDK_LISTENER *listen_on(struct iwt *t, uint16_t *port)
{
    NDK_LISTENER *l;
    SOCKADDR_INET a = iwt_addr(t, 0);
    ULONG len = sizeof a;

    CHECK_STATUS(t->ad->Dispatch->NdkCreateListener(t->ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&a, iwt_addr_len(&a), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&a, &len), STATUS_SUCCESS);
    *port = iwt_port(&a);
    return l;
}

static NDK_CONNECTOR *next_conn(int i)
{
    CHECK_MSG(iwt_wait_atomic(&g_nconn, i + 1, TMO), "connect event %d missing", i);
    return atomic_load(&g_conn[i]);
}

static int server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    uint16_t port;
    NDK_CONNECTOR *c;
    uint8_t pd[252];
    NTSTATUS st;
    int rx = iwt_srv_rx(&a->ch), tx = iwt_srv_tx(&a->ch);

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 4);
    NDK_LISTENER *l = listen_on(&t, &port);

    /* local errors */
    {
        NDK_LISTENER *l2;
        SOCKADDR_INET b = iwt_addr(&t, port);
        CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l2), STATUS_SUCCESS);
        CHECK_STATUS(l2->Dispatch->NdkListen(l2, (PSOCKADDR)&b, iwt_addr_len(&b), iwt_req_cb, NULL),
                     STATUS_SHARING_VIOLATION);
        SOCKADDR_INET foreign = b;
        if (a->family == AF_INET)
            foreign.Ipv4.sin_addr.s_addr = htonl(0xC0000201);   /* 192.0.2.1: not ours */
        else
            foreign.Ipv6.sin6_addr.s6_addr[0] = 0x20, foreign.Ipv6.sin6_addr.s6_addr[1] = 0x01,
            foreign.Ipv6.sin6_addr.s6_addr[2] = 0x0d, foreign.Ipv6.sin6_addr.s6_addr[3] = 0xb8;
        CHECK_STATUS(l2->Dispatch->NdkListen(l2, (PSOCKADDR)&foreign, iwt_addr_len(&foreign), iwt_req_cb, NULL),
                     STATUS_INVALID_ADDRESS);
        iwt_close_obj(l2, TMO);
    }

    /* 1: passive reject */
    iwt_send(tx, port);
    c = next_conn(0);
    iwt_fill_pd(pd, 40, 9);
    CHECK_STATUS(c->Dispatch->NdkReject(c, pd, 253), STATUS_INVALID_PARAMETER);
    CHECK_STATUS(c->Dispatch->NdkReject(c, pd, 40), STATUS_SUCCESS);
    iwt_close_obj(c, TMO);
    CHECK_EQ(iwt_recv(rx, TMO), 1);

    /* 2: active reject after our accept */
    iwt_send(tx, 2);
    c = next_conn(1);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_CONNECTION_ABORTED);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
    iwt_qp_create(&t, &q, 4);
    CHECK_EQ(iwt_recv(rx, TMO), 2);

    /* 4: pause -> refused, no event; resume -> accepted */
    l->Dispatch->NdkControlConnectEvents(l, TRUE);
    iwt_send(tx, 4);
    CHECK_EQ(iwt_recv(rx, TMO), 41);           /* the client saw its refusal */
    CHECK_EQ(atomic_load(&g_nconn), 2);
    l->Dispatch->NdkControlConnectEvents(l, FALSE);
    iwt_send(tx, 42);
    c = next_conn(2);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK_EQ(iwt_recv(rx, TMO), 43);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);

    /* 5: listener closed while connects are pending */
    iwt_send(tx, 5);
    next_conn(3);                               /* at least one request delivered */
    struct iwt_close lc;
    CHECK_STATUS(iwt_close_start(l, &lc), STATUS_PENDING);   /* delivered connectors remain */
    usleep(100 * 1000);
    CHECK_EQ(atomic_load(&lc.done), 0);
    int delivered = atomic_load(&g_nconn);
    for (int i = 3; i < delivered; i++)
        iwt_close_obj(atomic_load(&g_conn[i]), TMO);
    CHECK_MSG(iwt_wait_atomic(&lc.done, 1, TMO), "listener close never completed");
    CHECK_EQ(iwt_recv(rx, TMO), 5);
    CHECK_EQ(atomic_load(&g_nconn), delivered);   /* no event after the close request */
    iwt_close(&t);
    return 0;
}

static NTSTATUS do_connect(struct iwt *t, uint16_t port, NDK_QP **qpout, struct iwt_qp *q, NDK_CONNECTOR **cout,
                           uint8_t *pd, ULONG *pdlen)
{
    struct iwt_req rq;
    SOCKADDR_INET src = iwt_addr(t, 0), dst = iwt_addr(t, port);
    NDK_CONNECTOR *c;
    NTSTATUS st;

    (void)qpout;
    CHECK_STATUS(t->ad->Dispatch->NdkCreateConnector(t->ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkConnect(c, q->qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst, iwt_addr_len(&dst), 1,
                                 1, "hi", 2, iwt_req_cb, &rq);
    st = iwt_req_wait(&rq, st, TMO);
    if (pd) {
        NTSTATUS g = c->Dispatch->NdkGetConnectionData(c, NULL, NULL, pd, pdlen);
        CHECK_STATUS(g, STATUS_SUCCESS);
    }
    if (cout)
        *cout = c;
    else
        iwt_close_obj(c, TMO);
    return st;
}

static int client(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    NDK_CONNECTOR *c;
    uint8_t pd[252], want[252];
    ULONG len = sizeof pd;
    int rx = iwt_cli_rx(&a->ch), tx = iwt_cli_tx(&a->ch);
    uint16_t port = (uint16_t)iwt_recv(rx, TMO);

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 4);

    /* oversized private data is refused inline */
    {
        SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, port);
        uint8_t big[253] = { 0 };
        CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
        CHECK_STATUS(c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                             iwt_addr_len(&dst), 1, 1, big, sizeof big, iwt_req_cb, NULL),
                     STATUS_INVALID_PARAMETER);
        SOCKADDR_INET taken = iwt_addr(&t, port);   /* the listener's port as our source */
        CHECK_STATUS(c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&taken, iwt_addr_len(&taken), (PSOCKADDR)&dst,
                                             iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, NULL),
                     STATUS_SHARING_VIOLATION);
        iwt_close_obj(c, TMO);
    }

    /* 1 */
    CHECK_STATUS(do_connect(&t, port, NULL, &q, NULL, pd, &len), STATUS_CONNECTION_REFUSED);
    iwt_fill_pd(want, 40, 9);
    memset(want + 40, 0, sizeof want - 40);
    CHECK_EQ(len, 252);
    CHECK(memcmp(pd, want, sizeof want) == 0);
    iwt_send(tx, 1);

    /* 2 */
    CHECK_EQ(iwt_recv(rx, TMO), 2);
    CHECK_STATUS(do_connect(&t, port, NULL, &q, &c, NULL, NULL), STATUS_SUCCESS);
    CHECK_STATUS(c->Dispatch->NdkReject(c, NULL, 0), STATUS_SUCCESS);
    iwt_close_obj(c, TMO);
    iwt_send(tx, 2);

    /* 3: nobody listens on port + 1 ... find a surely free port: our own closed listener's */
    {
        SOCKADDR_INET b = iwt_addr(&t, 0);
        socklen_t sl = sizeof b;
        int fd = socket(a->family, SOCK_STREAM, 0);
        CHECK(bind(fd, (struct sockaddr *)&b, iwt_addr_len(&b)) == 0);
        CHECK(getsockname(fd, (struct sockaddr *)&b, &sl) == 0);
        close(fd);
        CHECK_STATUS(do_connect(&t, iwt_port(&b), NULL, &q, NULL, NULL, NULL), STATUS_CONNECTION_REFUSED);
    }

    /* 4 */
    CHECK_EQ(iwt_recv(rx, TMO), 4);
    CHECK_STATUS(do_connect(&t, port, NULL, &q, NULL, NULL, NULL), STATUS_CONNECTION_REFUSED);
    iwt_send(tx, 41);
    CHECK_EQ(iwt_recv(rx, TMO), 42);
    CHECK_STATUS(do_connect(&t, port, NULL, &q, &c, NULL, NULL), STATUS_SUCCESS);
    struct iwt_req rq;
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, c->Dispatch->NdkCompleteConnect(c, NULL, NULL, iwt_req_cb, &rq), TMO),
                 STATUS_SUCCESS);
    iwt_send(tx, 43);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);

    /* 5: NPEND connects at once; the server closes its listener after the first request */
    CHECK_EQ(iwt_recv(rx, TMO), 5);
    struct iwt_qp qs[NPEND];
    NDK_CONNECTOR *cs[NPEND];
    struct iwt_req rs[NPEND];
    for (int i = 0; i < NPEND; i++) {
        SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, port);
        iwt_qp_create(&t, &qs[i], 2);
        CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &cs[i]), STATUS_SUCCESS);
        iwt_req_init(&rs[i]);
        NTSTATUS st = cs[i]->Dispatch->NdkConnect(cs[i], qs[i].qp, (PSOCKADDR)&src, iwt_addr_len(&src),
                                                  (PSOCKADDR)&dst, iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, &rs[i]);
        CHECK(st == STATUS_PENDING || st == STATUS_CONNECTION_REFUSED);
        if (st != STATUS_PENDING) {
            atomic_store(&rs[i].status, st);
            atomic_store(&rs[i].done, 1);
        }
    }
    for (int i = 0; i < NPEND; i++) {
        CHECK_MSG(iwt_wait_atomic(&rs[i].done, 1, TMO), "pending connect %d hung after the listener closed", i);
        NTSTATUS st = atomic_load(&rs[i].status);
        CHECK_MSG(st == STATUS_CONNECTION_REFUSED, "pending connect %d: 0x%08x", i, (unsigned)st);
        iwt_close_obj(cs[i], TMO);
        iwt_qp_destroy(&qs[i]);
    }
    iwt_send(tx, 5);
    iwt_qp_create(&t, &q, 2);
    CHECK_STATUS(do_connect(&t, port, NULL, &q, NULL, NULL, NULL), STATUS_CONNECTION_REFUSED);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    return 0;
}

static void body(int family)
{
    struct arg a = { .family = family };

    atomic_store(&g_nconn, 0);
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
