/* Two processes over 127.0.0.1 and ::1: N (default 1000) connections established at once:
 * the client issues every NdkConnect before waiting for any; the server accepts each request
 * from its connect-event callback. Then all are torn down. RLIMIT_NOFILE is raised first. */
#include "iwtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 60000

static int g_n = 1000;

struct arg {
    int family;
    struct iwt_chan ch;
};

struct srv_conn {
    NDK_CONNECTOR *c;
    struct iwt_req rq;
};

static struct {
    struct iwt *t;
    NDK_CQ *cq;
    NDK_PD *pd;
    struct srv_conn *conns;
    NDK_QP **qps;
    atomic_int n;
} g_s;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    int i = atomic_fetch_add(&g_s.n, 1);
    CHECK(i < g_n);
    struct srv_conn *s = &g_s.conns[i];
    s->c = c;
    iwt_req_init(&s->rq);
    /* accept from inside the callback: allowed (§5.2), and the provider holds no lock now */
    NTSTATUS st = c->Dispatch->NdkAccept(c, g_s.qps[i], 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &s->rq);
    if (st != STATUS_PENDING) {
        atomic_store(&s->rq.status, st);
        atomic_store(&s->rq.done, 1);
    }
}

static void nop_cq(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
}

static int server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;

    iwt_raise_nofile((unsigned long)g_n * 2 + 256);
    iwt_open(&t, a->family);
    g_s.conns = calloc((size_t)g_n, sizeof *g_s.conns);
    g_s.qps = calloc((size_t)g_n, sizeof *g_s.qps);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateCq(t.ad, 4 * (ULONG)g_n, nop_cq, NULL, NULL, NULL, NULL, &g_s.cq), STATUS_SUCCESS);
    CHECK_STATUS(t.ad->Dispatch->NdkCreatePd(t.ad, NULL, NULL, &g_s.pd), STATUS_SUCCESS);
    for (int i = 0; i < g_n; i++)
        CHECK_STATUS(g_s.pd->Dispatch->NdkCreateQp(g_s.pd, g_s.cq, g_s.cq, NULL, 2, 2, 1, 1, 0, NULL, NULL, &g_s.qps[i]),
                     STATUS_SUCCESS);
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));
    CHECK_MSG(iwt_wait_atomic(&g_s.n, g_n, TMO), "only %d of %d connect events", atomic_load(&g_s.n), g_n);
    for (int i = 0; i < g_n; i++) {
        CHECK_MSG(iwt_wait_atomic(&g_s.conns[i].rq.done, 1, TMO), "accept %d did not complete", i);
        CHECK_STATUS(atomic_load(&g_s.conns[i].rq.status), STATUS_SUCCESS);
    }
    {
        ULONG wr = 0, need = 0;
        CHECK_STATUS(ndk_rt_query_oid(t.rt, t.id, OID_NDK_CONNECTIONS, NULL, 0, &wr, &need), NDIS_STATUS_BUFFER_TOO_SHORT);
        CHECK_EQ(need, NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(2 * g_n));
    }
    iwt_send(iwt_srv_tx(&a->ch), 1);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 2);   /* client closed everything */
    for (int i = 0; i < g_n; i++) {
        iwt_close_obj(g_s.conns[i].c, TMO);
        iwt_close_obj(g_s.qps[i], TMO);
    }
    iwt_close_obj(l, TMO);
    iwt_close_obj(g_s.pd, TMO);
    iwt_close_obj(g_s.cq, TMO);
    iwt_close(&t);
    free(g_s.conns);
    free(g_s.qps);
    return 0;
}

static int client(void *p)
{
    struct arg *a = p;
    struct iwt t;
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_QP **qps = calloc((size_t)g_n, sizeof *qps);
    NDK_CONNECTOR **cs = calloc((size_t)g_n, sizeof *cs);
    struct iwt_req *rs = calloc((size_t)g_n, sizeof *rs);

    iwt_raise_nofile((unsigned long)g_n * 2 + 256);
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    iwt_open(&t, a->family);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateCq(t.ad, 4 * (ULONG)g_n, nop_cq, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    CHECK_STATUS(t.ad->Dispatch->NdkCreatePd(t.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, port);
    for (int i = 0; i < g_n; i++) {
        CHECK_STATUS(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 2, 2, 1, 1, 0, NULL, NULL, &qps[i]), STATUS_SUCCESS);
        CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &cs[i]), STATUS_SUCCESS);
        iwt_req_init(&rs[i]);
        NTSTATUS st = cs[i]->Dispatch->NdkConnect(cs[i], qps[i], (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                                  iwt_addr_len(&dst), 1, 1, &i, sizeof i, iwt_req_cb, &rs[i]);
        CHECK_MSG(st == STATUS_PENDING, "connect %d: 0x%08x", i, (unsigned)st);
    }
    for (int i = 0; i < g_n; i++)
        CHECK_STATUS(iwt_req_wait(&rs[i], STATUS_PENDING, TMO), STATUS_SUCCESS);
    for (int i = 0; i < g_n; i++) {
        iwt_req_init(&rs[i]);
        NTSTATUS st = cs[i]->Dispatch->NdkCompleteConnect(cs[i], NULL, NULL, iwt_req_cb, &rs[i]);
        CHECK_MSG(st == STATUS_PENDING || st == STATUS_SUCCESS, "complete %d: 0x%08x", i, (unsigned)st);
        if (st != STATUS_PENDING) {
            atomic_store(&rs[i].status, st);
            atomic_store(&rs[i].done, 1);
        }
    }
    for (int i = 0; i < g_n; i++)
        CHECK_STATUS(iwt_req_wait(&rs[i], STATUS_PENDING, TMO), STATUS_SUCCESS);
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 1);
    for (int i = 0; i < g_n; i++) {
        iwt_close_obj(cs[i], TMO);
        iwt_close_obj(qps[i], TMO);
    }
    iwt_send(iwt_cli_tx(&a->ch), 2);
    iwt_close_obj(pd, TMO);
    iwt_close_obj(cq, TMO);
    iwt_close(&t);
    free(qps);
    free(cs);
    free(rs);
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
    if (getenv("IWT_MANY"))
        g_n = atoi(getenv("IWT_MANY"));
    printf("%d connections\n", g_n);
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
