/* dpe2e.c: see dpe2e.h. */
#include "dpe2e.h"

#include <stdlib.h>
#include <string.h>

static void cq_nop(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
}

void dpe_side_open(struct dpe_side *s, int family, size_t len, NDK_FN_CQ_NOTIFICATION_CALLBACK cq_cb, void *ctx)
{
    struct iwt_req rq;
    NTSTATUS st;

    memset(s, 0, sizeof(*s));
    iwt_open(&s->t, family);
    CHECK_STATUS(s->t.ad->Dispatch->NdkCreateCq(s->t.ad, 1024, cq_cb ? cq_cb : cq_nop, ctx, NULL, NULL, NULL, &s->cq),
                 STATUS_SUCCESS);
    CHECK_STATUS(s->t.ad->Dispatch->NdkCreatePd(s->t.ad, NULL, NULL, &s->pd), STATUS_SUCCESS);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateQp(s->pd, s->cq, s->cq, s, 256, 256, DPE_MAXSGE, DPE_MAXSGE, 128, NULL, NULL,
                                              &s->qp),
                 STATUS_SUCCESS);
    s->len = len;
    CHECK(posix_memalign((void **)&s->buf, 4096, len) == 0);
    memset(s->buf, 0, len);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateMr(s->pd, FALSE, NULL, NULL, &s->mr), STATUS_SUCCESS);
    s->mdl = IoAllocateMdl(s->buf, (ULONG)len, FALSE, FALSE, NULL);
    iwt_req_init(&rq);
    st = s->mr->Dispatch->NdkRegisterMr(s->mr, s->mdl, len,
                                        NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                                            NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
                                        iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, DPE_TMO), STATUS_SUCCESS);
    s->token = s->mr->Dispatch->NdkGetLocalTokenFromMr(s->mr);
}

void dpe_side_close(struct dpe_side *s)
{
    struct iwt_req rq;
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, s->mr->Dispatch->NdkDeregisterMr(s->mr, iwt_req_cb, &rq), DPE_TMO), STATUS_SUCCESS);
    iwt_close_obj(s->mr, DPE_TMO);
    iwt_close_obj(s->qp, DPE_TMO);
    iwt_close_obj(s->pd, DPE_TMO);
    iwt_close_obj(s->cq, DPE_TMO);
    IoFreeMdl(s->mdl);
    free(s->buf);
    iwt_close(&s->t);
}

static _Atomic(NDK_CONNECTOR *) dpe_incoming;
static void dpe_on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    atomic_store(&dpe_incoming, c);
}

NDK_LISTENER *dpe_listen(struct dpe_side *s, int tx_fd)
{
    struct iwt_req rq;
    NDK_LISTENER *l;
    SOCKADDR_INET addr = iwt_addr(&s->t, 0), la;
    ULONG len = sizeof la;

    atomic_store(&dpe_incoming, NULL);
    CHECK_STATUS(s->t.ad->Dispatch->NdkCreateListener(s->t.ad, dpe_on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, l->Dispatch->NdkListen(l, (PSOCKADDR)&addr, iwt_addr_len(&addr), iwt_req_cb, &rq),
                              DPE_TMO),
                 STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    uint64_t va = (uint64_t)(uintptr_t)s->buf;
    iwt_send(tx_fd, iwt_port(&la));
    iwt_send(tx_fd, s->token);
    iwt_send(tx_fd, (uint32_t)(va >> 32));
    iwt_send(tx_fd, (uint32_t)va);
    return l;
}

NDK_CONNECTOR *dpe_accept(struct dpe_side *s, NDK_FN_DISCONNECT_EVENT_CALLBACK on_disc)
{
    struct iwt_req rq;
    NDK_CONNECTOR *c;
    uint64_t end = ndk_test_now_ms() + DPE_TMO;

    while (!(c = atomic_load(&dpe_incoming)))
        CHECK_MSG(ndk_test_now_ms() < end, "no connection request");
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, c->Dispatch->NdkAccept(c, s->qp, 16, 16, NULL, 0, on_disc, NULL, iwt_req_cb, &rq),
                              DPE_TMO),
                 STATUS_SUCCESS);
    return c;
}

void dpe_recv_peer(struct dpe_peer *p, int rx_fd)
{
    p->port = (uint16_t)iwt_recv(rx_fd, DPE_TMO);
    p->token = iwt_recv(rx_fd, DPE_TMO);
    p->va = (uint64_t)iwt_recv(rx_fd, DPE_TMO) << 32;
    p->va |= iwt_recv(rx_fd, DPE_TMO);
}

NDK_CONNECTOR *dpe_connect(struct dpe_side *s, uint16_t port, NDK_FN_DISCONNECT_EVENT_CALLBACK on_disc)
{
    struct iwt_req rq;
    NDK_CONNECTOR *c;
    SOCKADDR_INET src = iwt_addr(&s->t, 0), dst = iwt_addr(&s->t, port);
    NTSTATUS st;

    CHECK_STATUS(s->t.ad->Dispatch->NdkCreateConnector(s->t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkConnect(c, s->qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst, iwt_addr_len(&dst),
                                 16, 16, NULL, 0, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, DPE_TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, on_disc, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, DPE_TMO), STATUS_SUCCESS);
    return c;
}
