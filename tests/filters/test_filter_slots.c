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

/* A filter that offers the RSS extension itself (as a provider would), under a counting one:
 * the layer above must hand up its own table and forward through the counting filter. */
static NDK_ADAPTER *rss_expected;
static atomic_int rss_calls;

static NDIS_STATUS fake_rss(NDK_ADAPTER *a, PNDIS_RSS_PROCESSOR_INFO info, PSIZE_T size)
{
    (void)info;
    if (a == rss_expected)
        atomic_fetch_add(&rss_calls, 1);
    *size = 1234;
    return NDIS_STATUS_BUFFER_TOO_SHORT;
}

static const NDK_EXTENSION_ADAPTER_RSS_DISPATCH fake_rss_table = { .NdkGetRssProcessorInfo = fake_rss };

static NTSTATUS rss_call(void *ctx, ndk_filter_call *call)
{
    static const GUID rss = NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH_INIT;
    (void)ctx;
    if (call->fn == NDK_FILTER_FN_ADAPTER_QUERY_EXTENSION && !memcmp(call->args.query_extension.id, &rss, sizeof rss)) {
        rss_expected = (NDK_ADAPTER *)ndk_filter_obj_header(call->obj);
        call->args.query_extension.out->Dispatch = &fake_rss_table;
        return STATUS_SUCCESS;
    }
    return ndk_filter_next(call);
}

static const ndk_filter_ops rss_ops = {
    .size = sizeof(ndk_filter_ops), .abi_version = NDK_FILTER_ABI_VERSION, .name = "rssfake", .call = rss_call,
};

static void rss_extension(void)
{
    struct iwt t;
    struct ft_count count;
    memset(&count, 0, sizeof count);
    ft_env(NULL);
    iwt_open(&t, AF_INET);
    ndk_filter_inproc f[2] = { { .ops = &ft_count_ops, .context = &count }, { .ops = &rss_ops, .context = NULL } };
    ft_reopen(&t, f, 2);
    GUID g = NDK_EXTENSION_ID_ADAPTER_RSS_DISPATCH_INIT;
    NDK_VERSION ev = { 1, 0 };
    NDK_EXTENSION_INTERFACE ext = { NULL };
    CHECK_STATUS(t.ad->Dispatch->NdkQueryExtension(&t.ad->Header, &g, ev, &ext), STATUS_SUCCESS);
    CHECK(ext.Dispatch && ext.Dispatch != &fake_rss_table);   /* the layer's table, not the one below */
    const NDK_EXTENSION_ADAPTER_RSS_DISPATCH *d = ext.Dispatch;
    SIZE_T size = 0;
    CHECK_STATUS(d->NdkGetRssProcessorInfo(t.ad, NULL, &size), NDIS_STATUS_BUFFER_TOO_SHORT);
    CHECK_EQ(size, 1234);
    CHECK_EQ(atomic_load(&rss_calls), 1);   /* reached below with the lower layer's adapter */
    CHECK_EQ(atomic_load(&count.calls[NDK_FILTER_FN_GET_RSS_PROCESSOR_INFO]), 1);
    iwt_close(&t);
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
    /* Every slot has its function id: the filter API names every one (and CloseNDKAdapter and
     * the RSS extension's NdkGetRssProcessorInfo). */
    CHECK_EQ(slots + 2, NDK_FILTER_FN_COUNT - 1);
    CHECK(!strcmp(ndk_filter_fn_name(NDK_FILTER_FN_GET_RSS_PROCESSOR_INFO), "NdkGetRssProcessorInfo"));
    /* The extension query goes through and the stack answers for what it cannot wrap. */
    GUID g = { 0x12345678, 0x1234, 0x1234, { 1, 2, 3, 4, 5, 6, 7, 8 } };
    NDK_VERSION v = { 1, 0 };
    NDK_EXTENSION_INTERFACE ext = { (const void *)0x1 };
    CHECK_STATUS(f.qp->Dispatch->NdkQueryExtension(&f.qp->Header, &g, v, &ext), STATUS_NOT_SUPPORTED);
    unmake(&f);
    unmake(&p);
    iwt_close(&filtered);
    iwt_close(&plain);
    rss_extension();
    printf("%d slots wrapped in 10 tables, and the RSS extension\n", slots);
    return 0;
}
