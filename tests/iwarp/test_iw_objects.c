/* Objects without a connection: version negotiation (§2.2), NdkQueryAdapterInfo incl. the old
 * size (§8.38), every create's limit checks against NDK_ADAPTER_INFO (§2.3, §2.5), object
 * headers (§1.4), LAM (§2.3), MR / FRMR / MW tokens (§2.6, §2.7), CQ arm / resize / moderation
 * (§2.4, §5.7), SRQ limit notification (§5.9), flush of posted receives, NDK enable/disable
 * through OID_NDK_SET_STATE (§6.5). */
#include "iwtest.h"

#include <string.h>
#include <unistd.h>

#define TMO 5000

static atomic_int g_cq_notify;
static atomic_int g_cq_status;
static void on_cq(void *ctx, NTSTATUS st)
{
    (void)ctx;
    atomic_store(&g_cq_status, st);
    atomic_fetch_add(&g_cq_notify, 1);
}

static atomic_int g_srq_notify;
static void on_srq(void *ctx, NTSTATUS st)
{
    (void)ctx;
    CHECK_STATUS(st, STATUS_SUCCESS);
    atomic_fetch_add(&g_srq_notify, 1);
}

static void on_conn(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    (void)c;
}

static void versions(int family)
{
    static const struct {
        USHORT maj, min;
        NTSTATUS st;
        USHORT got_min;
    } cases[] = {
        { 1, 0, STATUS_SUCCESS, 2 }, { 1, 1, STATUS_SUCCESS, 2 }, { 1, 2, STATUS_SUCCESS, 2 },
        { 1, 3, NDIS_STATUS_BAD_VERSION, 0 }, { 2, 0, STATUS_SUCCESS, 1 }, { 2, 1, STATUS_SUCCESS, 1 },
        { 2, 2, NDIS_STATUS_BAD_VERSION, 0 }, { 3, 0, NDIS_STATUS_BAD_VERSION, 0 }, { 0, 9, NDIS_STATUS_BAD_VERSION, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct iwt t;
        NDK_VERSION v = { cases[i].maj, cases[i].min };
        NTSTATUS st = iwt_open_version(&t, family, v);
        CHECK_STATUS(st, cases[i].st);
        if (st == STATUS_SUCCESS) {
            NDK_ADAPTER_INFO info;
            ULONG len = sizeof info;
            NDK_PD *pd;
            CHECK_EQ(t.ad->Header.Version.Major, v.Major);
            CHECK_EQ(t.ad->Header.Version.Minor, cases[i].got_min);
            CHECK_STATUS(t.ad->Dispatch->NdkQueryAdapterInfo(t.ad, &info, &len), STATUS_SUCCESS);
            CHECK_EQ(info.Version.Major, v.Major);
            CHECK_EQ(info.Version.Minor, cases[i].got_min);
            CHECK_STATUS(t.ad->Dispatch->NdkCreatePd(t.ad, NULL, NULL, &pd), STATUS_SUCCESS);
            CHECK_EQ(pd->Header.Version.Major, v.Major);
            CHECK_EQ(pd->Header.Version.Minor, cases[i].got_min);
            CHECK_EQ(pd->Header.ObjectType, NdkObjectTypePd);
            iwt_close_obj(pd, TMO);
        }
        iwt_close(&t);
    }
}

static void info_and_limits(int family)
{
    struct iwt t;
    NDK_ADAPTER_INFO info, small;
    ULONG len;
    NDK_CQ *cq, *cq2;
    NDK_PD *pd;
    NDK_QP *qp;
    NDK_SRQ *srq;
    NTSTATUS st;

    atomic_store(&g_cq_notify, 0);
    atomic_store(&g_srq_notify, 0);
    iwt_open(&t, family);
    const NDK_ADAPTER_DISPATCH *d = t.ad->Dispatch;

    len = 0;
    CHECK_STATUS(d->NdkQueryAdapterInfo(t.ad, NULL, &len), STATUS_BUFFER_TOO_SMALL);
    CHECK_EQ(len, sizeof(NDK_ADAPTER_INFO));
    len = 16;
    CHECK_STATUS(d->NdkQueryAdapterInfo(t.ad, &info, &len), STATUS_BUFFER_TOO_SMALL);
    len = sizeof info;
    CHECK_STATUS(d->NdkQueryAdapterInfo(t.ad, &info, &len), STATUS_SUCCESS);
    CHECK_EQ(len, sizeof info);
    CHECK_EQ(info.RdmaTechnology, NdkiWarp);
    CHECK(info.FRMRPageCount >= 16);
    CHECK_EQ(info.MaxCallerData, 252);
    CHECK_EQ(info.MaxCalleeData, 252);
    CHECK(info.AdapterFlags & NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED);
    CHECK(info.MaxCqDepth && info.MaxReceiveQueueDepth && info.MaxInitiatorQueueDepth && info.MaxSrqDepth);
    /* §8.38: an older consumer's smaller buffer gets the prefix */
    memset(&small, 0xab, sizeof small);
    len = NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY;
    CHECK_STATUS(d->NdkQueryAdapterInfo(t.ad, &small, &len), STATUS_SUCCESS);
    CHECK_EQ(len, NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY);
    CHECK(memcmp(&small, &info, len) == 0);
    CHECK_EQ(((uint8_t *)&small)[len], 0xab);

    /* CQ depth */
    CHECK_STATUS(d->NdkCreateCq(t.ad, info.MaxCqDepth + 1, on_cq, NULL, NULL, NULL, NULL, &cq), STATUS_INVALID_PARAMETER);
    CHECK_STATUS(d->NdkCreateCq(t.ad, 0, on_cq, NULL, NULL, NULL, NULL, &cq), STATUS_INVALID_PARAMETER);
    CHECK_STATUS(d->NdkCreateCq(t.ad, info.MaxCqDepth, on_cq, NULL, NULL, NULL, NULL, &cq2), STATUS_SUCCESS);
    iwt_close_obj(cq2, TMO);
    CHECK_STATUS(d->NdkCreateCq(t.ad, 64, on_cq, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    CHECK_EQ(cq->Header.ObjectType, NdkObjectTypeCq);
    CHECK_STATUS(d->NdkCreatePd(t.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    const NDK_PD_DISPATCH *pdd = pd->Dispatch;

    /* QP limits: each of the five, one at a time */
    ULONG ok[5] = { 8, 8, 2, 2, 0 };
    ULONG max[5] = { info.MaxReceiveQueueDepth, info.MaxInitiatorQueueDepth, info.MaxReceiveRequestSge,
                     info.MaxInitiatorRequestSge, info.MaxInlineDataSize };
    for (int i = 0; i < 5; i++) {
        ULONG v[5];
        memcpy(v, ok, sizeof v);
        v[i] = max[i] + 1;
        st = pdd->NdkCreateQp(pd, cq, cq, NULL, v[0], v[1], v[2], v[3], v[4], NULL, NULL, &qp);
        CHECK_MSG(st == STATUS_INVALID_PARAMETER, "QP limit %d: 0x%08x", i, (unsigned)st);
    }
    st = pdd->NdkCreateQp(pd, cq, cq, NULL, max[0], max[1], max[2], max[3], max[4], NULL, NULL, &qp);
    CHECK_STATUS(st, STATUS_SUCCESS);
    iwt_close_obj(qp, TMO);

    /* SRQ limits */
    CHECK_STATUS(pdd->NdkCreateSrq(pd, info.MaxSrqDepth + 1, 1, 0, NULL, NULL, NULL, NULL, NULL, &srq),
                 STATUS_INVALID_PARAMETER);
    CHECK_STATUS(pdd->NdkCreateSrq(pd, 16, info.MaxReceiveRequestSge + 1, 0, NULL, NULL, NULL, NULL, NULL, &srq),
                 STATUS_INVALID_PARAMETER);
    CHECK_STATUS(pdd->NdkCreateSrq(pd, 16, 2, 4, on_srq, NULL, NULL, NULL, NULL, &srq), STATUS_SUCCESS);
    CHECK_STATUS(srq->Dispatch->NdkModifySrq(srq, info.MaxSrqDepth + 1, 0, NULL, NULL), STATUS_INVALID_PARAMETER);
    /* QP with SRQ limits */
    ULONG okx[3] = { 8, 2, 0 };
    ULONG maxx[3] = { info.MaxInitiatorQueueDepth, info.MaxInitiatorRequestSge, info.MaxInlineDataSize };
    for (int i = 0; i < 3; i++) {
        ULONG v[3];
        memcpy(v, okx, sizeof v);
        v[i] = maxx[i] + 1;
        st = pdd->NdkCreateQpWithSrq(pd, cq, cq, srq, NULL, v[0], v[1], v[2], NULL, NULL, &qp);
        CHECK_MSG(st == STATUS_INVALID_PARAMETER, "QP-with-SRQ limit %d: 0x%08x", i, (unsigned)st);
    }
    /* SRQ low-water: 3 posted, threshold 4 armed by modify -> fires at once (§5.9) */
    uint8_t buf[64];
    NDK_SGE sge = { .VirtualAddress = buf, .Length = sizeof buf };
    NDK_SGE sges[3] = { sge, sge, sge };
    CHECK_STATUS(srq->Dispatch->NdkSrqReceive(srq, NULL, sges, 3), STATUS_INVALID_PARAMETER);   /* > 2 SGEs */
    for (int i = 0; i < 3; i++)
        CHECK_STATUS(srq->Dispatch->NdkSrqReceive(srq, NULL, &sge, 1), STATUS_SUCCESS);
    CHECK_EQ(atomic_load(&g_srq_notify), 0);
    CHECK_STATUS(srq->Dispatch->NdkModifySrq(srq, 0, 4, NULL, NULL), STATUS_SUCCESS);
    CHECK_MSG(iwt_wait_atomic(&g_srq_notify, 1, TMO), "SRQ limit event missing");
    usleep(50 * 1000);
    CHECK_EQ(atomic_load(&g_srq_notify), 1);
    CHECK_STATUS(srq->Dispatch->NdkModifySrq(srq, 2, 0, NULL, NULL), STATUS_INVALID_PARAMETER);  /* below queued */
    CHECK_STATUS(srq->Dispatch->NdkModifySrq(srq, 32, 0, NULL, NULL), STATUS_SUCCESS);
    iwt_close_obj(srq, TMO);

    /* CQ resize / moderation */
    CHECK(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED);
    CHECK_STATUS(cq->Dispatch->NdkResizeCq(cq, info.MaxCqDepth + 1, NULL, NULL), STATUS_INVALID_PARAMETER);
    CHECK_STATUS(cq->Dispatch->NdkResizeCq(cq, 128, NULL, NULL), STATUS_SUCCESS);
    CHECK(!(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED));
    CHECK_STATUS(cq->Dispatch->NdkControlCqInterruptModeration(cq, 10, 10), STATUS_NOT_SUPPORTED);

    /* receives before any connection, flushed by NdkFlush; arming reports them (§5.7) */
    CHECK_STATUS(pdd->NdkCreateQp(pd, cq, cq, (void *)0x77, 4, 4, 1, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    for (int i = 0; i < 4; i++)
        CHECK_STATUS(qp->Dispatch->NdkReceive(qp, (void *)(uintptr_t)(i + 1), &sge, 1), STATUS_SUCCESS);
    CHECK_STATUS(qp->Dispatch->NdkReceive(qp, NULL, &sge, 1), STATUS_INSUFFICIENT_RESOURCES);   /* depth 4 */
    CHECK_STATUS(qp->Dispatch->NdkReceive(qp, NULL, sges, 2), STATUS_INVALID_PARAMETER);        /* 1 SGE max */
    CHECK_STATUS(qp->Dispatch->NdkSend(qp, NULL, &sge, 1, 0), STATUS_CONNECTION_INVALID);
    CHECK_STATUS(qp->Dispatch->NdkWrite(qp, NULL, &sge, 1, 0, 0, 0), STATUS_CONNECTION_INVALID);
    CHECK_STATUS(qp->Dispatch->NdkRead(qp, NULL, &sge, 1, 0, 0, 0), STATUS_CONNECTION_INVALID);
    qp->Dispatch->NdkFlush(qp);
    NDK_RESULT_EX r[8];
    CHECK_EQ(cq->Dispatch->NdkGetCqResultsEx(cq, r, 2), 2);
    CHECK_STATUS(r[0].Status, STATUS_CANCELLED);
    CHECK(r[0].RequestContext == (void *)1 && r[1].RequestContext == (void *)2);
    CHECK(r[0].QPContext == (void *)0x77);
    CHECK_EQ(atomic_load(&g_cq_notify), 0);          /* never armed */
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_ANY);     /* two unseen entries: fires at once */
    CHECK_MSG(iwt_wait_atomic(&g_cq_notify, 1, TMO), "arm with queued entries did not notify");
    CHECK_STATUS(atomic_load(&g_cq_status), STATUS_SUCCESS);
    NDK_RESULT plain[4];
    CHECK_EQ(cq->Dispatch->NdkGetCqResults(cq, plain, 4), 2);
    CHECK_STATUS(plain[0].Status, STATUS_CANCELLED);
    CHECK_EQ(cq->Dispatch->NdkGetCqResults(cq, plain, 4), 0);
    /* a post on a flushed QP completes at once with CANCELLED (§8.29) */
    cq->Dispatch->NdkArmCq(cq, NDK_CQ_NOTIFY_SOLICITED);     /* errors satisfy SOLICITED */
    CHECK_STATUS(qp->Dispatch->NdkReceive(qp, (void *)9, &sge, 1), STATUS_SUCCESS);
    CHECK_MSG(iwt_wait_atomic(&g_cq_notify, 2, TMO), "solicited arm not satisfied by an error completion");
    CHECK(iwt_cq_wait(cq, r, TMO));
    CHECK(r[0].RequestContext == (void *)9);
    iwt_close_obj(qp, TMO);

    /* LAM (§2.3) */
    static uint8_t region[3 * 4096 + 100] __attribute__((aligned(4096)));
    MDL *mdl = IoAllocateMdl(region + 100, 2 * 4096, FALSE, FALSE, NULL);
    ULONG lamsz = 0, fbo = 0;
    CHECK_STATUS(d->NdkBuildLAM(t.ad, mdl, 2 * 4096, NULL, NULL, NULL, &lamsz, &fbo), STATUS_BUFFER_TOO_SMALL);
    CHECK_EQ(lamsz, offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + 3 * sizeof(NDK_LOGICAL_ADDRESS));
    NDK_LOGICAL_ADDRESS_MAPPING *lam = calloc(1, lamsz);
    CHECK_STATUS(d->NdkBuildLAM(t.ad, mdl, 2 * 4096, NULL, NULL, lam, &lamsz, &fbo), STATUS_SUCCESS);
    CHECK_EQ(fbo, 100);
    CHECK_EQ(lam->AdapterPageCount, 3);
    CHECK_EQ(lam->AdapterPageArray[0].QuadPart % 4096, 0);
    CHECK_STATUS(d->NdkBuildLAM(t.ad, mdl, 3 * 4096, NULL, NULL, lam, &lamsz, &fbo), STATUS_INVALID_PARAMETER);
    d->NdkReleaseLAM(t.ad, lam);
    free(lam);

    /* MR / FRMR / MW and privileged token */
    UINT32 ptok = 0xffffffff;
    pdd->NdkGetPrivilegedMemoryRegionToken(pd, &ptok);
    NDK_MR *mr, *fr;
    NDK_MW *mw;
    struct iwt_req rq;
    CHECK_STATUS(pdd->NdkCreateMr(pd, FALSE, NULL, NULL, &mr), STATUS_SUCCESS);
    CHECK_STATUS(mr->Dispatch->NdkRegisterMr(mr, mdl, 3 * 4096, 0, iwt_req_cb, &rq), STATUS_INVALID_PARAMETER);
    iwt_req_init(&rq);
    st = mr->Dispatch->NdkRegisterMr(mr, mdl, 4096, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    UINT32 lt = mr->Dispatch->NdkGetLocalTokenFromMr(mr), rt = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
    CHECK(lt != 0 && lt != ptok && rt != ptok);
    iwt_req_init(&rq);
    st = mr->Dispatch->NdkDeregisterMr(mr, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = mr->Dispatch->NdkRegisterMr(mr, mdl, 4096, 0, iwt_req_cb, &rq);      /* re-register */
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK(mr->Dispatch->NdkGetLocalTokenFromMr(mr) != lt);                      /* key changed */
    CHECK_STATUS(pdd->NdkCreateMr(pd, TRUE, NULL, NULL, &fr), STATUS_SUCCESS);
    CHECK_STATUS(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 70000, TRUE, NULL, NULL), STATUS_IMPLEMENTATION_LIMIT);
    CHECK_STATUS(fr->Dispatch->NdkInitializeFastRegisterMr(fr, info.FRMRPageCount, TRUE, NULL, NULL), STATUS_SUCCESS);
    CHECK(fr->Dispatch->NdkGetRemoteTokenFromMr(fr) != 0);
    CHECK_STATUS(pdd->NdkCreateMw(pd, NULL, NULL, &mw), STATUS_SUCCESS);
    CHECK_EQ(mw->Header.ObjectType, NdkObjectTypeMw);
    CHECK(mw->Dispatch->NdkGetRemoteTokenFromMw(mw) != 0);
    GUID g = { 1, 2, 3, { 4 } };
    NDK_EXTENSION_INTERFACE ext;
    CHECK_STATUS(mw->Dispatch->NdkQueryExtension(&mw->Header, &g, (NDK_VERSION){ 1, 0 }, &ext), STATUS_NOT_SUPPORTED);
    CHECK_STATUS(d->NdkQueryExtension(&t.ad->Header, &g, (NDK_VERSION){ 1, 0 }, &ext), STATUS_NOT_SUPPORTED);
    iwt_close_obj(mw, TMO);
    iwt_close_obj(fr, TMO);
    iwt_close_obj(mr, TMO);
    IoFreeMdl(mdl);

    /* connector and listener address checks */
    NDK_LISTENER *l;
    NDK_CONNECTOR *c;
    CHECK_STATUS(d->NdkCreateListener(t.ad, on_conn, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(d->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    ULONG alen = 0;
    CHECK(c->Dispatch->NdkGetLocalAddress(c, NULL, &alen) != STATUS_SUCCESS);   /* none yet (§8.37) */
    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);

    iwt_close_obj(pd, TMO);
    iwt_close_obj(cq, TMO);
    iwt_close(&t);
}

static void set_state(int family)
{
    struct iwt t;
    NDK_ADAPTER *second;
    NDK_VERSION v = { 2, 1 };

    iwt_open(&t, family);
    CHECK_STATUS(ndk_rt_set_state(t.rt, t.id, FALSE), STATUS_SUCCESS);
    CHECK_STATUS(ndk_rt_open_adapter(t.rt, t.id, v, &second), NDIS_STATUS_ADAPTER_NOT_READY);
    CHECK_STATUS(ndk_rt_set_state(t.rt, t.id, TRUE), STATUS_SUCCESS);
    CHECK_STATUS(ndk_rt_open_adapter(t.rt, t.id, v, &second), STATUS_SUCCESS);
    ndk_rt_close_adapter(t.rt, second);
    iwt_close(&t);
}

static void body(int family)
{
    versions(family);
    info_and_limits(family);
    set_state(family);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
