/* A passive side that speaks first, without MPA peer-to-peer mode (NDK_IWARP_P2P=0), the way
 * ucmatose's server does over siw: RFC 5044 §7.1.2 holds the responder's first FPDU until the
 * initiator's arrives, so after first_fpdu_grace_ms the provider transmits anyway (as siw does,
 * RFC 5044 §7.1.2); with the grace set to 0 it waits strictly for the initiator's first FPDU.
 * Two processes over 127.0.0.1 and ::1; payloads compared byte for byte. */
#include "iwtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 10000
#define LEN 64

struct arg {
    int family;
    int strict;                  /* first_fpdu_grace_ms = 0 */
    struct iwt_chan ch;
};

static _Atomic(NDK_CONNECTOR *) g_incoming;
static atomic_int g_events;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    atomic_store(&g_incoming, c);
    atomic_fetch_add(&g_events, 1);
}

/* Registers buf for local access; returns the local token. */
static UINT32 reg(NDK_PD *pd, void *buf, ULONG len, NDK_MR **mr_out, PMDL *mdl_out)
{
    NDK_MR *mr = NULL;
    struct iwt_req rq;
    CHECK_STATUS(pd->Dispatch->NdkCreateMr(pd, FALSE, NULL, NULL, &mr), STATUS_SUCCESS);
    PMDL mdl = IoAllocateMdl(buf, len, FALSE, FALSE, NULL);
    CHECK(mdl);
    iwt_req_init(&rq);
    NTSTATUS st = mr->Dispatch->NdkRegisterMr(mr, mdl, len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    *mr_out = mr;
    *mdl_out = mdl;
    return mr->Dispatch->NdkGetLocalTokenFromMr(mr);
}

static void set_env(const struct arg *a)
{
    setenv("NDK_IWARP_P2P", "0", 1);
    setenv("NDK_IWARP_FIRST_FPDU_GRACE_MS", a->strict ? "0" : "100", 1);
}

static int server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_LISTENER *l;
    SOCKADDR_INET addr, la;
    ULONG len = sizeof la;
    static uint8_t out[LEN], in[LEN];
    NDK_RESULT_EX r;
    NDK_MR *mr;
    PMDL mdl;

    set_env(a);
    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 16);
    UINT32 tok = reg(q.pd, out, sizeof out, &mr, &mdl);
    NDK_MR *mr2;
    PMDL mdl2;
    UINT32 tok2 = reg(q.pd, in, sizeof in, &mr2, &mdl2);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    addr = iwt_addr(&t, 0);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, l->Dispatch->NdkListen(l, (PSOCKADDR)&addr, iwt_addr_len(&addr), iwt_req_cb, &rq),
                              TMO), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));

    CHECK_MSG(iwt_wait_atomic(&g_events, 1, TMO), "no connect event");
    NDK_CONNECTOR *c = atomic_load(&g_incoming);
    NDK_SGE rs = { .VirtualAddress = in, .Length = LEN, .MemoryRegionToken = tok2 };
    CHECK_STATUS(q.qp->Dispatch->NdkReceive(q.qp, (void *)2, &rs, 1), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);

    /* The passive side speaks first. */
    for (int i = 0; i < LEN; i++)
        out[i] = (uint8_t)(i * 7 + a->family);
    NDK_SGE s = { .VirtualAddress = out, .Length = LEN, .MemoryRegionToken = tok };
    CHECK_STATUS(q.qp->Dispatch->NdkSend(q.qp, (void *)1, &s, 1, 0), STATUS_SUCCESS);
    if (a->strict) {
        /* RFC 5044 §7.1.2 strictly: nothing leaves before the initiator's first FPDU. */
        CHECK_MSG(!iwt_cq_wait(q.cq, &r, 500), "the responder transmitted before the initiator's first FPDU");
        iwt_send(iwt_srv_tx(&a->ch), 1);                     /* client: send yours now */
        CHECK_MSG(iwt_cq_wait(q.cq, &r, TMO), "no completion after the initiator's FPDU");
        /* the client's Send (receive completion) and ours may complete in either order */
        NDK_RESULT_EX r2;
        CHECK_MSG(iwt_cq_wait(q.cq, &r2, TMO), "missing second completion");
        CHECK_STATUS(r.Status, STATUS_SUCCESS);
        CHECK_STATUS(r2.Status, STATUS_SUCCESS);
    } else {
        CHECK_MSG(iwt_cq_wait(q.cq, &r, TMO), "the responder's first Send never completed");
        CHECK_STATUS(r.Status, STATUS_SUCCESS);
        CHECK(r.RequestContext == (void *)1);
    }
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 2);         /* client got our bytes */
    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);
    iwt_mr_release(mr, mdl, TMO);
    iwt_mr_release(mr2, mdl2, TMO);
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
    static uint8_t in[LEN], out[LEN];
    NDK_RESULT_EX r;
    NDK_MR *mr, *mr2;
    PMDL mdl, mdl2;
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);

    set_env(a);
    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, 16);
    UINT32 tok = reg(q.pd, in, sizeof in, &mr, &mdl);
    UINT32 tok2 = reg(q.pd, out, sizeof out, &mr2, &mdl2);
    NDK_SGE rs = { .VirtualAddress = in, .Length = LEN, .MemoryRegionToken = tok };
    CHECK_STATUS(q.qp->Dispatch->NdkReceive(q.qp, (void *)3, &rs, 1), STATUS_SUCCESS);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, port);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                          iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, c->Dispatch->NdkCompleteConnect(c, NULL, NULL, iwt_req_cb, &rq), TMO),
                 STATUS_SUCCESS);
    if (a->strict) {
        CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 1);
        NDK_SGE s = { .VirtualAddress = out, .Length = 8, .MemoryRegionToken = tok2 };
        CHECK_STATUS(q.qp->Dispatch->NdkSend(q.qp, (void *)4, &s, 1, 0), STATUS_SUCCESS);
    }
    /* our receive completes with the server's bytes (the send completion, in strict mode, may
     * come first on the shared CQ) */
    for (;;) {
        CHECK_MSG(iwt_cq_wait(q.cq, &r, TMO), "the passive side's first message never arrived");
        CHECK_STATUS(r.Status, STATUS_SUCCESS);
        if (r.RequestContext == (void *)3)
            break;
    }
    CHECK_EQ(r.BytesTransferred, LEN);
    for (int i = 0; i < LEN; i++)
        CHECK_EQ(in[i], (uint8_t)(i * 7 + a->family));
    iwt_send(iwt_cli_tx(&a->ch), 2);
    iwt_close_obj(c, TMO);
    iwt_mr_release(mr, mdl, TMO);
    iwt_mr_release(mr2, mdl2, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    return 0;
}

static void run(int family, int strict)
{
    struct arg a = { .family = family, .strict = strict };
    atomic_store(&g_events, 0);
    iwt_chan_init(&a.ch);
    iwt_run_pair(server, client, &a, 30000);
    iwt_chan_close(&a.ch);
    printf("%s, %s: the passive side's first Send arrived, bytes compared\n", iwt_family_name(family),
           strict ? "strict RFC 5044 start-up" : "start-up grace");
}

static void body(int family)
{
    run(family, 0);
    run(family, 1);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
