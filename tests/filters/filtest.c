#define _GNU_SOURCE
#include "filtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_MAGIC 0x5eed5eedu

static NTSTATUS count_call(void *ctx, ndk_filter_call *call)
{
    struct ft_count *c = ctx;
    atomic_fetch_add(&c->calls[call->fn], 1);
    /* The object called is this layer's and carries the state obj_create left. */
    if (ndk_filter_obj_of(call->obj, ndk_filter_obj_header(call->obj)) != call->obj ||
        ndk_filter_fn_object_type(call->fn) != ndk_filter_obj_type(call->obj) ||
        *(unsigned *)ndk_filter_obj_ctx(call->obj) != FT_MAGIC)
        atomic_fetch_add(&c->bad, 1);
    return ndk_filter_next(call);
}

static void count_callback(void *ctx, ndk_filter_cb *cb)
{
    struct ft_count *c = ctx;
    atomic_fetch_add(&c->cbs[cb->type], 1);
    if ((cb->type == NDK_FILTER_CB_CONNECT_EVENT && !cb->created) || !cb->obj)
        atomic_fetch_add(&c->bad, 1);
    ndk_filter_deliver(cb);
}

static void count_create(void *ctx, ndk_filter_obj *obj)
{
    struct ft_count *c = ctx;
    *(unsigned *)ndk_filter_obj_ctx(obj) = FT_MAGIC;
    atomic_fetch_add(&c->created[ndk_filter_obj_type(obj)], 1);
}

static void count_destroy(void *ctx, ndk_filter_obj *obj)
{
    struct ft_count *c = ctx;
    if (*(unsigned *)ndk_filter_obj_ctx(obj) != FT_MAGIC)
        atomic_fetch_add(&c->bad, 1);
    atomic_fetch_add(&c->destroyed[ndk_filter_obj_type(obj)], 1);
}

static NTSTATUS count_open(void *module_ctx, ndk_filter_module *module, const char *adapter_name, void **inst_ctx)
{
    struct ft_count *c = module_ctx;
    (void)module;
    (void)adapter_name;
    atomic_fetch_add(&c->opens, 1);
    *inst_ctx = c;
    return STATUS_SUCCESS;
}

static void count_close(void *ctx)
{
    struct ft_count *c = ctx;
    atomic_fetch_add(&c->closes, 1);
}

const ndk_filter_ops ft_count_ops = {
    .size = sizeof(ndk_filter_ops),
    .abi_version = NDK_FILTER_ABI_VERSION,
    .name = "count",
    .obj_ctx_size = sizeof(unsigned),
    .open = count_open,
    .close = count_close,
    .obj_create = count_create,
    .obj_destroy = count_destroy,
    .call = count_call,
    .callback = count_callback,
};

void ft_env(const char *filters)
{
    const char *bin = getenv("NDK_TEST_BINARY_DIR");
    const char *prov = getenv("NDK_PROVIDER_PATH");
    char path[4096];
    CHECK_MSG(bin && prov, "NDK_TEST_BINARY_DIR and NDK_PROVIDER_PATH must be set (run through ctest)");
    snprintf(path, sizeof path, "%s:%s/test-filters", prov, bin);
    setenv("NDK_PROVIDER_PATH", path, 1);
    if (filters)
        setenv("NDK_FILTERS", filters, 1);
    else
        unsetenv("NDK_FILTERS");
}

void ft_reopen(struct iwt *t, const ndk_filter_inproc *f, ULONG n)
{
    NDK_VERSION v = { 2, 1 };
    ndk_rt_open_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.filter_count = n;
    o.filters = f;
    ndk_rt_close_adapter(t->rt, t->ad);
    t->ad = NULL;
    NTSTATUS st = ndk_rt_open_adapter_ex(t->rt, t->id, v, &o, &t->ad);
    CHECK_MSG(st == STATUS_SUCCESS, "ndk_rt_open_adapter_ex: %s", ndk_rt_status_name(st));
}

void ft_reopen_counted(struct iwt *t, struct ft_count *count)
{
    ndk_filter_inproc f = { .ops = &ft_count_ops, .context = count };
    ft_reopen(t, &f, 1);
}

#define FT_LEN (64 * 1024)
#define FT_TAIL 4096   /* after the payload: where the fence message lands */

struct ft_buf {
    uint8_t *mem;
    MDL *mdl;
    NDK_MR *mr;
};

static void buf_open(struct iwt_qp *q, struct ft_buf *b, ULONG flags)
{
    struct iwt_req rq;
    b->mem = aligned_alloc(4096, FT_LEN + FT_TAIL);
    CHECK(b->mem);
    memset(b->mem, 0, FT_LEN + FT_TAIL);
    b->mdl = IoAllocateMdl(b->mem, FT_LEN + FT_TAIL, FALSE, FALSE, NULL);
    CHECK(b->mdl);
    MmBuildMdlForNonPagedPool(b->mdl);
    CHECK_STATUS(q->pd->Dispatch->NdkCreateMr(q->pd, FALSE, NULL, NULL, &b->mr), STATUS_SUCCESS);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, b->mr->Dispatch->NdkRegisterMr(b->mr, b->mdl, FT_LEN + FT_TAIL, flags, iwt_req_cb, &rq), 5000),
                 STATUS_SUCCESS);
}

static void buf_close(struct ft_buf *b)
{
    iwt_mr_release(b->mr, b->mdl, 5000);
    free(b->mem);
}

static void wait_one(NDK_CQ *cq, void *ctx, ULONG bytes)
{
    NDK_RESULT_EX r;
    CHECK_MSG(iwt_cq_wait(cq, &r, 5000), "no completion");
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK(r.RequestContext == ctx);
    if (bytes)
        CHECK_EQ(r.BytesTransferred, bytes);
}

void ft_exchange(struct iwt *t)
{
    struct iwt_qp a, b;
    struct iwt_link k;
    struct ft_buf ab, bb;
    iwt_qp_create(t, &a, 8);
    iwt_qp_create(t, &b, 8);
    buf_open(&a, &ab, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    buf_open(&b, &bb, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    UINT32 alt = ab.mr->Dispatch->NdkGetLocalTokenFromMr(ab.mr);
    UINT32 blt = bb.mr->Dispatch->NdkGetLocalTokenFromMr(bb.mr);
    UINT32 brt = bb.mr->Dispatch->NdkGetRemoteTokenFromMr(bb.mr);

    /* Send: two SGEs (the QP's most) into one receive. */
    NDK_SGE rsge = { .VirtualAddress = bb.mem, .Length = FT_LEN, .MemoryRegionToken = blt };
    CHECK_STATUS(b.qp->Dispatch->NdkReceive(b.qp, &rsge, &rsge, 1), STATUS_SUCCESS);
    iwt_link_open(t, &k, a.qp, b.qp, 5000);
    ndk_test_fill(ab.mem, FT_LEN, 1);
    NDK_SGE ssge[2] = {
        { .VirtualAddress = ab.mem, .Length = 1000, .MemoryRegionToken = alt },
        { .VirtualAddress = ab.mem + 1000, .Length = FT_LEN - 1000, .MemoryRegionToken = alt },
    };
    CHECK_STATUS(a.qp->Dispatch->NdkSend(a.qp, ssge, ssge, 2, 0), STATUS_SUCCESS);
    wait_one(a.cq, ssge, 0);
    wait_one(b.cq, &rsge, FT_LEN);
    CHECK(ndk_test_check(bb.mem, FT_LEN, 1));

    /* Write A -> B, then Read B -> A. */
    ndk_test_fill(ab.mem, FT_LEN, 2);
    NDK_SGE wsge = { .VirtualAddress = ab.mem, .Length = FT_LEN, .MemoryRegionToken = alt };
    CHECK_STATUS(a.qp->Dispatch->NdkWrite(a.qp, &wsge, &wsge, 1, (UINT64)(uintptr_t)bb.mem, brt, 0), STATUS_SUCCESS);
    wait_one(a.cq, &wsge, 0);
    /* A Write's completion says nothing about placement at B; a Send after it arrives after it. */
    NDK_SGE fr = { .VirtualAddress = bb.mem + FT_LEN, .Length = FT_TAIL, .MemoryRegionToken = blt };
    NDK_SGE fs = { .VirtualAddress = ab.mem + FT_LEN, .Length = 8, .MemoryRegionToken = alt };
    CHECK_STATUS(b.qp->Dispatch->NdkReceive(b.qp, &fr, &fr, 1), STATUS_SUCCESS);
    CHECK_STATUS(a.qp->Dispatch->NdkSend(a.qp, &fs, &fs, 1, 0), STATUS_SUCCESS);
    wait_one(a.cq, &fs, 0);
    wait_one(b.cq, &fr, 8);
    CHECK(ndk_test_check(bb.mem, FT_LEN, 2));
    ndk_test_fill(bb.mem, FT_LEN, 3);
    memset(ab.mem, 0, FT_LEN);
    NDK_SGE rdsge = { .VirtualAddress = ab.mem, .Length = FT_LEN, .MemoryRegionToken = alt };
    CHECK_STATUS(a.qp->Dispatch->NdkRead(a.qp, &rdsge, &rdsge, 1, (UINT64)(uintptr_t)bb.mem, brt, 0), STATUS_SUCCESS);
    wait_one(a.cq, &rdsge, 0);   /* BytesTransferred is defined for receives only */
    CHECK(ndk_test_check(ab.mem, FT_LEN, 3));

    iwt_link_close(&k, 5000);
    buf_close(&ab);
    buf_close(&bb);
    iwt_qp_destroy(&a);
    iwt_qp_destroy(&b);
}
