/* Every slot of every dispatch table is wrapped: one object of each of the ten types is made
 * through a stack with a hook-less module filter (testempty) and, beside it, straight from the
 * provider; each slot of the wrapper's table must be set and must not be the provider's own
 * function (a slot added to ndkpi.h without a wrapper would be NULL or, if copied, the
 * provider's). A table is read as the array of function pointers it is. */
#define _GNU_SOURCE
#include "filtest.h"

#include <string.h>

struct set {
    NDK_ADAPTER *ad;
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_QP *qp;
    NDK_SRQ *srq;
    NDK_MR *mr;
    NDK_MW *mw;
    NDK_CONNECTOR *conn;
    NDK_LISTENER *lis;
    NDK_SHARED_ENDPOINT *sep;
};

static void nop_cq(void *ctx, NTSTATUS st) { (void)ctx; (void)st; }
static void nop_conn(void *ctx, NDK_CONNECTOR *c) { (void)ctx; (void)c; }

static void make(struct iwt *t, struct set *s)
{
    NDK_ADAPTER *ad = t->ad;
    SOCKADDR_INET a = iwt_addr(t, 0);
    memset(s, 0, sizeof *s);
    s->ad = ad;
    CHECK_STATUS(ad->Dispatch->NdkCreateCq(ad, 8, nop_cq, NULL, NULL, NULL, NULL, &s->cq), STATUS_SUCCESS);
    CHECK_STATUS(ad->Dispatch->NdkCreatePd(ad, NULL, NULL, &s->pd), STATUS_SUCCESS);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateQp(s->pd, s->cq, s->cq, NULL, 4, 4, 1, 1, 0, NULL, NULL, &s->qp), STATUS_SUCCESS);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateSrq(s->pd, 4, 1, 0, NULL, NULL, NULL, NULL, NULL, &s->srq), STATUS_SUCCESS);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateMr(s->pd, FALSE, NULL, NULL, &s->mr), STATUS_SUCCESS);
    CHECK_STATUS(s->pd->Dispatch->NdkCreateMw(s->pd, NULL, NULL, &s->mw), STATUS_SUCCESS);
    CHECK_STATUS(ad->Dispatch->NdkCreateConnector(ad, NULL, NULL, &s->conn), STATUS_SUCCESS);
    CHECK_STATUS(ad->Dispatch->NdkCreateListener(ad, nop_conn, NULL, NULL, NULL, &s->lis), STATUS_SUCCESS);
    CHECK_STATUS(ad->Dispatch->NdkCreateSharedEndpoint(ad, (PSOCKADDR)&a, iwt_addr_len(&a), NULL, NULL, &s->sep),
                 STATUS_SUCCESS);
}

static void unmake(struct set *s)
{
    iwt_close_obj(s->sep, 5000);
    iwt_close_obj(s->lis, 5000);
    iwt_close_obj(s->conn, 5000);
    iwt_close_obj(s->mw, 5000);
    iwt_close_obj(s->mr, 5000);
    iwt_close_obj(s->qp, 5000);
    iwt_close_obj(s->srq, 5000);
    iwt_close_obj(s->pd, 5000);
    iwt_close_obj(s->cq, 5000);
}

/* Dispatch of an object: the pointer after the header (every object is { Header; Dispatch }). */
static void *const *table(const void *object)
{
    return *(void *const *const *)((const char *)object + sizeof(NDK_OBJECT_HEADER));
}

static int compare(const char *what, const void *wrapped, const void *provider, size_t bytes)
{
    const NDK_OBJECT_HEADER *w = wrapped, *p = provider;
    CHECK_MSG(w->ObjectType == p->ObjectType, "%s: object type %d, provider's %d", what, w->ObjectType, p->ObjectType);
    CHECK_MSG(wrapped != provider, "%s: the consumer got the provider's object", what);
    size_t n = bytes / sizeof(void *);
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(table(wrapped)[i] != NULL, "%s: slot %zu of the wrapper's table is NULL", what, i);
        CHECK_MSG(table(wrapped)[i] != table(provider)[i], "%s: slot %zu is the provider's own function", what, i);
    }
    return (int)n;
}

int main(void)
{
    struct iwt plain, filtered;
    struct set p, f;
    ft_env(NULL);
    iwt_open(&plain, AF_INET);
    ft_env("testempty");
    iwt_open(&filtered, AF_INET);
    make(&plain, &p);
    make(&filtered, &f);
    int slots = 0;
    slots += compare("adapter", f.ad, p.ad, sizeof(NDK_ADAPTER_DISPATCH));
    slots += compare("cq", f.cq, p.cq, sizeof(NDK_CQ_DISPATCH));
    slots += compare("pd", f.pd, p.pd, sizeof(NDK_PD_DISPATCH));
    slots += compare("qp", f.qp, p.qp, sizeof(NDK_QP_DISPATCH));
    slots += compare("srq", f.srq, p.srq, sizeof(NDK_SRQ_DISPATCH));
    slots += compare("mr", f.mr, p.mr, sizeof(NDK_MR_DISPATCH));
    slots += compare("mw", f.mw, p.mw, sizeof(NDK_MW_DISPATCH));
    slots += compare("connector", f.conn, p.conn, sizeof(NDK_CONNECTOR_DISPATCH));
    slots += compare("listener", f.lis, p.lis, sizeof(NDK_LISTENER_DISPATCH));
    slots += compare("shared endpoint", f.sep, p.sep, sizeof(NDK_SHARED_ENDPOINT_DISPATCH));
    /* Every slot has its function id: the filter API names every one. */
    CHECK_EQ(slots + 1, NDK_FILTER_FN_COUNT - 1);   /* + CloseNDKAdapter, - NONE */
    /* The extension query goes through and the stack answers for what it cannot wrap. */
    GUID g = { 0x12345678, 0x1234, 0x1234, { 1, 2, 3, 4, 5, 6, 7, 8 } };
    NDK_VERSION v = { 1, 0 };
    NDK_EXTENSION_INTERFACE ext = { (const void *)0x1 };
    CHECK_STATUS(f.qp->Dispatch->NdkQueryExtension(&f.qp->Header, &g, v, &ext), STATUS_NOT_SUPPORTED);
    unmake(&f);
    unmake(&p);
    iwt_close(&filtered);
    iwt_close(&plain);
    printf("%d slots wrapped in 10 tables\n", slots);
    return 0;
}
