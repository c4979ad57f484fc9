/* Two processes over 127.0.0.1 and ::1: listen on port 0, connect with private data both ways
 * (bytes compared, §2.11 RDS protocol), read limits (§5.11.3), address getters (§5.11.7),
 * OID_NDK_CONNECTIONS / LOCAL_ENDPOINTS / STATISTICS while the connection is up (§6.6-§6.8),
 * graceful disconnect from the client: exactly one disconnect event at the server, none at the
 * client, disconnect completions, implicit flush of a posted receive (§5.11.6). */
#include "iwtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 10000

struct arg {
    int family;
    struct iwt_chan ch;
};

static _Atomic(NDK_CONNECTOR *) g_incoming;
static atomic_int g_events;
static atomic_int g_disc;
static atomic_int g_disc_ex_reason;
/* "v1": the initiator offers MPA v1, which carries no IRD/ORD (docs/providers.md, "Connections"):
 * each side's effective limits are its own, capped; before Accept the adapter maxima. */
static bool g_v1;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    atomic_store(&g_incoming, c);
    atomic_fetch_add(&g_events, 1);
}

static void on_disc(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&g_disc, 1);
}

static void on_disc_ex(void *ctx, ULONG reason)
{
    (void)ctx;
    atomic_store(&g_disc_ex_reason, (int)reason);
    atomic_fetch_add(&g_disc, 1);
}

static void check_addr_getter(NTSTATUS (*fn)(NDK_CONNECTOR *, PSOCKADDR, ULONG *), NDK_CONNECTOR *c, int family,
                              SOCKADDR_INET *out)
{
    ULONG len = 0;
    NTSTATUS st = fn(c, NULL, &len);

    CHECK_STATUS(st, STATUS_BUFFER_TOO_SMALL);
    CHECK_EQ(len, family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    len = sizeof(*out);
    memset(out, 0, sizeof *out);
    st = fn(c, (PSOCKADDR)out, &len);
    CHECK_STATUS(st, STATUS_SUCCESS);
    CHECK_EQ(out->si_family, family);
}

static int server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_LISTENER *l;
    NDK_CONNECTOR *c;
    SOCKADDR_INET la, addr;
    ULONG len, in = 0, out = 0;
    uint8_t pd[300], want[252];
    NTSTATUS st;

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 16);
    st = t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l);
    CHECK_STATUS(st, STATUS_SUCCESS);
    addr = iwt_addr(&t, 0);
    iwt_req_init(&rq);
    st = iwt_req_wait(&rq, l->Dispatch->NdkListen(l, (PSOCKADDR)&addr, iwt_addr_len(&addr), iwt_req_cb, &rq), TMO);
    CHECK_STATUS(st, STATUS_SUCCESS);
    len = sizeof la;
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    CHECK(iwt_port(&la) >= NDK_EPHEMERAL_PORT_FIRST);
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));

    CHECK_MSG(iwt_wait_atomic(&g_events, 1, TMO), "no connect event");
    c = atomic_load(&g_incoming);
    CHECK_EQ(c->Header.ObjectType, NdkObjectTypeConnector);
    CHECK_EQ(c->Header.Version.Major, 2);

    /* §2.11 RDS protocol */
    len = 0;
    CHECK_STATUS(c->Dispatch->NdkGetConnectionData(c, NULL, NULL, NULL, &len), STATUS_SUCCESS);
    CHECK_EQ(len, 252);
    len = 10;
    memset(pd, 0xee, sizeof pd);
    CHECK_STATUS(c->Dispatch->NdkGetConnectionData(c, NULL, NULL, pd, &len), STATUS_BUFFER_TOO_SMALL);
    CHECK_EQ(len, 252);
    iwt_fill_pd(want, 100, 1);
    memset(want + 100, 0, sizeof want - 100);
    CHECK(memcmp(pd, want, 10) == 0);
    CHECK_EQ(pd[10], 0xee);
    len = sizeof pd;
    CHECK_STATUS(c->Dispatch->NdkGetConnectionData(c, &in, &out, pd, &len), STATUS_SUCCESS);
    CHECK_EQ(len, 252);
    CHECK(memcmp(pd, want, 252) == 0);
    if (g_v1) {
        NDK_ADAPTER_INFO info;
        ULONG isz = sizeof info;
        CHECK_STATUS(t.ad->Dispatch->NdkQueryAdapterInfo(t.ad, &info, &isz), STATUS_SUCCESS);
        CHECK_EQ(in, info.MaxInboundReadLimit);     /* nothing stated: the most Accept can ask */
        CHECK_EQ(out, info.MaxOutboundReadLimit);
    } else {
        /* the initiator asked IRD 4 / ORD 8: mirrored before Accept (§8.22) */
        CHECK_EQ(in, 8);
        CHECK_EQ(out, 4);
    }

    uint8_t mine[200];
    iwt_fill_pd(mine, sizeof mine, 2);
    iwt_req_init(&rq);
    atomic_store(&g_disc, 0);
    st = c->Dispatch->NdkAcceptEx(c, q.qp, 16, 2, mine, sizeof mine, on_disc_ex, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK_STATUS(c->Dispatch->NdkGetConnectionData(c, &in, &out, NULL, &(ULONG){ 0 }), STATUS_SUCCESS);
    CHECK_EQ(in, g_v1 ? 16 : 8);     /* v2: min(our IRD 16, the initiator's ORD 8); v1: ours */
    CHECK_EQ(out, 2);

    check_addr_getter(c->Dispatch->NdkGetLocalAddress, c, a->family, &addr);
    CHECK_EQ(iwt_port(&addr), iwt_port(&la));
    check_addr_getter(c->Dispatch->NdkGetPeerAddress, c, a->family, &addr);
    uint32_t cport = iwt_recv(iwt_srv_rx(&a->ch), TMO);
    CHECK_EQ(iwt_port(&addr), cport);

    /* OIDs while the connection is up: TCP-mapped pairs */
    {
        union {
            NDIS_NDK_CONNECTIONS c;
            uint8_t b[1024];
        } u;
        ULONG wr = 0, need = 0;
        st = ndk_rt_query_oid(t.rt, t.id, OID_NDK_CONNECTIONS, u.b, 8, &wr, &need);
        CHECK_STATUS(st, NDIS_STATUS_BUFFER_TOO_SHORT);
        CHECK_EQ(need, NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(2));
        st = ndk_rt_query_oid(t.rt, t.id, OID_NDK_CONNECTIONS, u.b, sizeof u.b, &wr, &need);
        CHECK_STATUS(st, STATUS_SUCCESS);
        CHECK_EQ(u.c.Count, 2);
        CHECK(u.c.NDConnectionsMappedtoTCPConnections);
        CHECK_EQ(u.c.Header.Type, NDIS_OBJECT_TYPE_DEFAULT);
        /* the arrays are declared [1]: index through pointers (-fsanitize=bounds) */
        NDIS_NDK_CONNECTION_ENTRY *ce = (NDIS_NDK_CONNECTION_ENTRY *)(u.b + offsetof(NDIS_NDK_CONNECTIONS, Connections));
        CHECK_EQ(iwt_port(&ce[0].Local), iwt_port(&la));
        CHECK_EQ(iwt_port(&ce[0].Remote), cport);
        CHECK_EQ(iwt_port(&ce[1].Local), iwt_port(&la));
        CHECK_EQ(iwt_port(&ce[1].Remote), cport);
        CHECK_EQ(ce[0].OwnerPid, (ULONG)getpid());

        NDIS_NDK_LOCAL_ENDPOINTS *e = (NDIS_NDK_LOCAL_ENDPOINTS *)u.b;
        st = ndk_rt_query_oid(t.rt, t.id, OID_NDK_LOCAL_ENDPOINTS, u.b, 4, &wr, &need);
        CHECK_STATUS(st, NDIS_STATUS_BUFFER_TOO_SHORT);
        CHECK_EQ(need, NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(2));
        st = ndk_rt_query_oid(t.rt, t.id, OID_NDK_LOCAL_ENDPOINTS, u.b, sizeof u.b, &wr, &need);
        CHECK_STATUS(st, STATUS_SUCCESS);
        CHECK_EQ(e->Count, 2);
        CHECK(e->NDLocalEndpointsMappedtoTCPLocalEndpoints);
        NDIS_NDK_LOCAL_ENDPOINT_ENTRY *ee =
            (NDIS_NDK_LOCAL_ENDPOINT_ENTRY *)(u.b + offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints));
        CHECK(ee[0].Listener);
        CHECK_EQ(iwt_port(&ee[0].Local), iwt_port(&la));
        CHECK_EQ(iwt_port(&ee[1].Local), iwt_port(&la));

        NDIS_NDK_STATISTICS_INFO *s = (NDIS_NDK_STATISTICS_INFO *)u.b;
        st = ndk_rt_query_oid(t.rt, t.id, OID_NDK_STATISTICS, u.b, sizeof u.b, &wr, &need);
        CHECK_STATUS(st, STATUS_SUCCESS);
        /* The whole adapter (every process's counters, the test's runtime directory): the
         * client's Connect, our Accept, and both ends of the connection on lo. */
        CHECK_EQ(s->CounterSet.Accept, 1);
        CHECK_EQ(s->CounterSet.Connect, 1);
        CHECK_EQ(s->CounterSet.ActiveConnection, 2);
    }

    /* a receive that the disconnect must flush */
    NDK_SGE sge = { .VirtualAddress = pd, .Length = 16, .MemoryRegionToken = 0 };
    CHECK_STATUS(q.qp->Dispatch->NdkReceive(q.qp, (void *)0x1234, &sge, 1), STATUS_SUCCESS);

    iwt_send(iwt_srv_tx(&a->ch), 1);               /* client: disconnect now */
    CHECK_MSG(iwt_wait_atomic(&g_disc, 1, TMO), "no disconnect event");
    usleep(200 * 1000);                              /* a second event would be a bug */
    CHECK_EQ(atomic_load(&g_disc), 1);
    CHECK_EQ(atomic_load(&g_disc_ex_reason), 1);     /* graceful */

    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    NDK_RESULT_EX r;
    CHECK(iwt_cq_wait(q.cq, &r, TMO));
    CHECK_STATUS(r.Status, STATUS_CANCELLED);
    CHECK(r.RequestContext == (void *)0x1234);
    CHECK(r.QPContext == &q);
    CHECK_EQ(r.Type, NdkOperationTypeReceive);

    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    return 0;
}

static int client(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_CONNECTOR *c;
    SOCKADDR_INET src, dst, addr;
    uint8_t pd[252], want[252];
    ULONG len, in = 0, out = 0;
    NTSTATUS st;
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);

    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 16);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    src = iwt_addr(&t, 0);
    dst = iwt_addr(&t, port);
    iwt_fill_pd(pd, 100, 1);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst, iwt_addr_len(&dst),
                                 4, 8, pd, 100, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);

    len = sizeof pd;
    CHECK_STATUS(c->Dispatch->NdkGetConnectionData(c, &in, &out, pd, &len), STATUS_SUCCESS);
    CHECK_EQ(len, 252);
    iwt_fill_pd(want, 200, 2);
    memset(want + 200, 0, sizeof want - 200);
    CHECK(memcmp(pd, want, sizeof want) == 0);
    CHECK_EQ(in, g_v1 ? 4 : 2);   /* v2: min(our IRD 4, the responder's ORD 2); v1: ours */
    CHECK_EQ(out, 8);             /* min(our ORD 8, the responder's IRD 16); v1: ours */

    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, on_disc, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);

    check_addr_getter(c->Dispatch->NdkGetLocalAddress, c, a->family, &addr);
    CHECK(iwt_port(&addr) >= NDK_EPHEMERAL_PORT_FIRST);
    iwt_send(iwt_cli_tx(&a->ch), iwt_port(&addr));
    check_addr_getter(c->Dispatch->NdkGetPeerAddress, c, a->family, &addr);
    CHECK_EQ(iwt_port(&addr), port);

    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 1);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    /* a second disconnect of a closed connection finishes inline */
    usleep(100 * 1000);
    CHECK_EQ(atomic_load(&g_disc), 0);   /* we disconnected: no event for us (§5.11.6) */

    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    return 0;
}

static void body(int family)
{
    struct arg a = { .family = family };

    iwt_chan_init(&a.ch);
    iwt_run_pair(server, client, &a, 30000);
    iwt_chan_close(&a.ch);
}

int main(int argc, char **argv)
{
    g_v1 = argc > 1 && !strcmp(argv[1], "v1");
    iwt_private_runtime_dir();
    if (g_v1)
        setenv("NDK_IWARP_MPA_REV", "1", 1);
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
