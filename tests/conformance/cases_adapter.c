/* cases_adapter.c - adapter information, version negotiation, extension queries, limits of the
 * create/modify calls, CQ interrupt moderation, LAM building (NDKPI reference §2.2-§2.8, §4.7). */
#define _GNU_SOURCE
#include "conform.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KNOWN_ADAPTER_FLAGS                                                                                          \
    (NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED | NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED |                        \
     NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED | NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED |                  \
     NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED | NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED |                  \
     NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED)

void case_adapter_info(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_ADAPTER *ad = a.ad;
    const ULONG min_size = (ULONG)RTL_SIZEOF_THROUGH_FIELD(NDK_ADAPTER_INFO, AdapterFlags);

    /* Size protocol (§2.3): no buffer -> STATUS_BUFFER_TOO_SMALL with the required size. */
    ULONG size = 0;
    CHECK_ST(ad->Dispatch->NdkQueryAdapterInfo(ad, NULL, &size), STATUS_BUFFER_TOO_SMALL);
    ULONG need = size;
    CHECK_MSG(need >= min_size && need <= sizeof(NDK_ADAPTER_INFO),
              "required NDK_ADAPTER_INFO size %u outside [%u, %zu]", need, min_size, sizeof(NDK_ADAPTER_INFO));

    /* One byte short: too small (with the required size) or a prefix fill (§8.38); never a write
     * beyond the buffer. */
    uint8_t buf[sizeof(NDK_ADAPTER_INFO) + 64];
    memset(buf, 0xCC, sizeof buf);
    size = need - 1;
    NTSTATUS st = ad->Dispatch->NdkQueryAdapterInfo(ad, (NDK_ADAPTER_INFO *)buf, &size);
    CHECK_MSG(st == STATUS_BUFFER_TOO_SMALL || st == STATUS_SUCCESS, "short buffer: %s", cf_status_name(st));
    if (st == STATUS_BUFFER_TOO_SMALL)
        CHECK_EQ(size, need);
    else
        CHECK_MSG(size <= need - 1, "prefix fill reported %u bytes written into a %u-byte buffer", size, need - 1);
    CHECK_MSG(cf_all(buf + need - 1, sizeof buf - (need - 1), 0xCC), "NdkQueryAdapterInfo wrote past *pBufferSize");

    /* Full query: bytes written reported, nothing past them. */
    memset(buf, 0xCC, sizeof buf);
    size = sizeof buf;
    CHECK_ST(ad->Dispatch->NdkQueryAdapterInfo(ad, (NDK_ADAPTER_INFO *)buf, &size), STATUS_SUCCESS);
    CHECK_EQ(size, need);
    CHECK_MSG(cf_all(buf + need, sizeof buf - need, 0xCC), "NdkQueryAdapterInfo wrote past the reported size");
    NDK_ADAPTER_INFO info;
    memset(&info, 0, sizeof info);
    memcpy(&info, buf, need);

    cf_note("version %u.%u vendor %#x device %#x flags %#x", info.Version.Major, info.Version.Minor, info.VendorId,
            info.DeviceId, info.AdapterFlags);
    CHECK_MSG(info.Version.Major == ad->Header.Version.Major && info.Version.Minor == ad->Header.Version.Minor,
              "NDK_ADAPTER_INFO.Version %u.%u differs from the adapter header %u.%u (§2.2)", info.Version.Major,
              info.Version.Minor, ad->Header.Version.Major, ad->Header.Version.Minor);
    CHECK_MSG(info.Version.Major == 1 || info.Version.Major == 2, "unknown major version %u", info.Version.Major);

#define NONZERO(f) CHECK_MSG(info.f != 0, #f " is 0 (§4.7)")
    NONZERO(MaxRegistrationSize);
    NONZERO(MaxWindowSize);
    NONZERO(MaxInitiatorRequestSge);
    NONZERO(MaxReceiveRequestSge);
    NONZERO(MaxReadRequestSge);
    NONZERO(MaxTransferLength);
    NONZERO(MaxInboundReadLimit);
    NONZERO(MaxOutboundReadLimit);
    NONZERO(MaxReceiveQueueDepth);
    NONZERO(MaxInitiatorQueueDepth);
    NONZERO(MaxCqDepth);
    NONZERO(MaxCallerData);
    NONZERO(MaxCalleeData);
#undef NONZERO
    CHECK_MSG(info.FRMRPageCount >= 16, "FRMRPageCount %u < 16 (§2.6, §4.7)", info.FRMRPageCount);
    CHECK_MSG((SIZE_T)info.FRMRPageCount * PAGE_SIZE <= info.MaxRegistrationSize,
              "FRMRPageCount %u pages exceed MaxRegistrationSize %zu", info.FRMRPageCount, info.MaxRegistrationSize);
    /* Private data rides in one CM message; 64 KiB is far above every transport's maximum. */
    CHECK_MSG(info.MaxCallerData <= 65536 && info.MaxCalleeData <= 65536, "private data sizes %u/%u are not sane",
              info.MaxCallerData, info.MaxCalleeData);
    CHECK_MSG((info.AdapterFlags & ~(ULONG)KNOWN_ADAPTER_FLAGS) == 0, "unknown adapter flags %#x",
              info.AdapterFlags & ~(ULONG)KNOWN_ADAPTER_FLAGS);
    if (info.Version.Major == 1 && info.Version.Minor < 2)
        CHECK_MSG(!(info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED),
                  "RDMA_READ_LOCAL_INVALIDATE_SUPPORTED advertised at NDKPI 1.1 (it is 1.2+, §7)");
    if (need >= RTL_SIZEOF_THROUGH_FIELD(NDK_ADAPTER_INFO, RdmaTechnology))
        CHECK_MSG(info.RdmaTechnology > NdkUndefined && info.RdmaTechnology < NdkMaxTechnology,
                  "RdmaTechnology %d is not a known technology (§4.8)", (int)info.RdmaTechnology);
    cf_note("SGE i/r/rd %u/%u/%u xfer %u inline %u ird/ord %u/%u depth rq/iq/srq/cq %u/%u/%u/%u pd %u/%u frmr %u",
            info.MaxInitiatorRequestSge, info.MaxReceiveRequestSge, info.MaxReadRequestSge, info.MaxTransferLength,
            info.MaxInlineDataSize, info.MaxInboundReadLimit, info.MaxOutboundReadLimit, info.MaxReceiveQueueDepth,
            info.MaxInitiatorQueueDepth, info.MaxSrqDepth, info.MaxCqDepth, info.MaxCallerData, info.MaxCalleeData,
            info.FRMRPageCount);

    /* Stable across queries, and the same limits the provider advertised to the runtime (§6.4). */
    NDK_ADAPTER_INFO again = cf_query_info(ad);
    CHECK_MSG(memcmp(&again, &info, need) == 0, "two NdkQueryAdapterInfo calls disagree");
    ndk_rt_adapter_info ri;
    CHECK_ST(ndk_rt_adapter_query(a.rt, a.id, &ri), STATUS_SUCCESS);
    size_t lim_off = offsetof(NDK_ADAPTER_INFO, VendorId), lim_end = offsetof(NDK_ADAPTER_INFO, AdapterFlags);
    CHECK_MSG(memcmp((uint8_t *)&ri.info + lim_off, (uint8_t *)&info + lim_off, lim_end - lim_off) == 0,
              "the instance's limits differ from those advertised in NDIS_NDK_CAPABILITIES.NdkInfo (§6.4)");
    cf_ad_close(&a);
}

void case_adapter_version(void)
{
    struct cf_ad base;
    cf_ad_open(&base);
    NDK_VERSION v = base.version;
    cf_note("negotiated %u.%u when asking for 2.0 (or 1.2)", v.Major, v.Minor);

    struct cf_ad x = base;
    x.ad = NULL;
    /* Unsupported major, and a minor above the provider's highest: NDIS_STATUS_BAD_VERSION. */
    CHECK_ST(cf_ad_open_version(&x, (NDK_VERSION){ 99, 0 }), NDIS_STATUS_BAD_VERSION);
    CHECK_ST(cf_ad_open_version(&x, (NDK_VERSION){ v.Major, (USHORT)(v.Minor + 1) }), NDIS_STATUS_BAD_VERSION);

    /* Each supported major, lowest minor: the provider runs at its highest minor there, and every
     * object header carries exactly that version (§1.4, §2.2). */
    for (USHORT major = 1; major <= 2; major++) {
        struct cf_ad y = base;
        y.ad = NULL;
        NTSTATUS st = cf_ad_open_version(&y, (NDK_VERSION){ major, 0 });
        if (st == NDIS_STATUS_BAD_VERSION) {
            cf_note("major %u not supported", major);
            CHECK_MSG(major != v.Major, "major %u refused although it was negotiated", major);
            continue;
        }
        CHECK_ST(st, STATUS_SUCCESS);
        CHECK_EQ(y.version.Major, major);
        if (major == v.Major)
            CHECK_MSG(y.version.Minor == v.Minor, "asking %u.0 gave %u.%u, asking %u.%u gave %u.%u (highest minor expected)",
                      major, y.version.Major, y.version.Minor, v.Major, major == 2 ? 0 : 2, v.Major, v.Minor);
        cf_note("asked %u.0, runs at %u.%u", major, y.version.Major, y.version.Minor);
        CHECK_MSG(y.ad->Header.Version.Major == y.version.Major && y.ad->Header.Version.Minor == y.version.Minor,
                  "adapter header version differs from NDK_ADAPTER_INFO.Version");
        /* Objects of every kind on this instance (cf_try_* check the headers). */
        NDK_PD *pd = cf_pd(&y);
        struct cf_cq *cq = cf_cq(&y, 16);
        NDK_QP *qp;
        CHECK_ST(cf_try_qp(&y, pd, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
        NDK_MR *mr = cf_mr(&y, pd, FALSE);
        NDK_MW *mw = cf_mw(&y, pd);
        NDK_CONNECTOR *cn = cf_connector(&y);
        cf_close(cn);
        cf_close(mw);
        cf_close(mr);
        cf_close(qp);
        cf_cq_close(cq);
        cf_close(pd);
        ndk_rt_close_adapter(y.rt, y.ad);
    }
    cf_ad_close(&base);
}

static NTSTATUS query_ext(const void *obj, int slot)
{
    const struct cf_obj *o = obj;
    NDK_FN_QUERY_EXTENSION_INTERFACE fn = ((const NDK_FN_QUERY_EXTENSION_INTERFACE *)o->Dispatch)[slot];
    GUID g = { 0x0c0ffee5, 0x1234, 0x5678, { 1, 2, 3, 4, 5, 6, 7, 8 } };
    NDK_EXTENSION_INTERFACE ext = { (const void *)0x1 };
    NTSTATUS st = fn((NDK_OBJECT_HEADER *)obj, &g, (NDK_VERSION){ 1, 0 }, &ext);
    return st;
}

void case_query_extension(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *cq = cf_cq(&a, 16);
    NDK_QP *qp;
    CHECK_ST(cf_try_qp(&a, pd, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
    NDK_MR *mr = cf_mr(&a, pd, FALSE);
    NDK_MW *mw = cf_mw(&a, pd);
    NDK_CONNECTOR *cn = cf_connector(&a);
    NDK_SHARED_ENDPOINT *sep = NULL;
    SOCKADDR_INET any = cf_addr(0);
    CHECK_ST(cf_try_sep(&a, &any, &sep), STATUS_SUCCESS);
    struct cf_conn lc;
    memset(&lc, 0, sizeof lc);

    /* Adapter: slot 0; every other table: slot 1 (§1.6). No standard extension exists (§2.1). */
    CHECK_ST(query_ext(a.ad, 0), STATUS_NOT_SUPPORTED);
    const void *objs[] = { pd, cq->cq, qp, mr, mw, cn, sep };
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
        NTSTATUS st = query_ext(objs[i], 1);
        CHECK_MSG(st == STATUS_NOT_SUPPORTED, "NdkQueryExtension on object type %d: %s, expected STATUS_NOT_SUPPORTED",
                  (int)((const struct cf_obj *)objs[i])->Header.ObjectType, cf_status_name(st));
    }
    if (a.info.MaxSrqDepth) {
        struct cf_srq *s = cf_srq(pd, &a, 4, 1, 0);
        CHECK_ST(query_ext(s->srq, 1), STATUS_NOT_SUPPORTED);
        cf_srq_close(s);
    }
    cf_close(sep);
    cf_close(cn);
    cf_close(mw);
    cf_close(mr);
    cf_close(qp);
    cf_cq_close(cq);
    cf_close(pd);
    cf_ad_close(&a);

    /* Listener (needs its own connection struct for the event callback). */
    cf_conn_init(&lc, NULL);
    cf_conn_listen(&lc);
    CHECK_ST(query_ext(lc.lis, 1), STATUS_NOT_SUPPORTED);
    cf_conn_fini(&lc);
}

/* A create that must fail inline with want (§2.3-§2.5: "STATUS_INVALID_PARAMETER (... out of range)"). */
#define EXPECT_INLINE(what, call, want)                                                                              \
    do {                                                                                                             \
        NTSTATUS _st = (call);                                                                                       \
        CHECK_MSG(_st == (want), "%s: returned %s, expected %s inline", what, cf_status_name(_st),                  \
                  cf_status_name(want));                                                                             \
    } while (0)

static void nop_cq_cb(void *ctx, NTSTATUS st)
{
    (void)ctx;
    (void)st;
}

void case_limits_create(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    const NDK_ADAPTER_INFO *in = &a.info;
    NDK_ADAPTER *ad = a.ad;
    NDK_PD *pd = cf_pd(&a);
    struct cf_op *op;
    void *obj;

    /* CQ depth (§2.3). */
    if (in->MaxCqDepth < MAXULONG) {
        op = cf_op_new("NdkCreateCq(MaxCqDepth+1)");
        obj = CF_SENTINEL;
        EXPECT_INLINE("NdkCreateCq(MaxCqDepth + 1)",
                      ad->Dispatch->NdkCreateCq(ad, in->MaxCqDepth + 1, nop_cq_cb, NULL, NULL, cf_create_cb, op,
                                                (NDK_CQ **)&obj),
                      STATUS_INVALID_PARAMETER);
        cf_req_done(op, STATUS_INVALID_PARAMETER);
    }
    struct cf_cq *cq = NULL;
    if (in->MaxCqDepth <= (1u << 20)) {
        CHECK_ST(cf_try_cq(&a, in->MaxCqDepth, &cq), STATUS_SUCCESS);
        cf_cq_close(cq);
    }
    cq = cf_cq(&a, 64);

    /* CQ resize (§2.4), only when advertised. */
    if (in->AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED) {
        if (in->MaxCqDepth < MAXULONG) {
            op = cf_op_new("NdkResizeCq(MaxCqDepth+1)");
            NTSTATUS st = cq->cq->Dispatch->NdkResizeCq(cq->cq, in->MaxCqDepth + 1, cf_req_cb, op);
            CHECK_MSG(st == STATUS_INVALID_PARAMETER, "NdkResizeCq(MaxCqDepth + 1): %s, expected STATUS_INVALID_PARAMETER",
                      cf_status_name(st));
            cf_req_done(op, st);
        }
        op = cf_op_new("NdkResizeCq(128)");
        CHECK_ST(cf_req_done(op, cq->cq->Dispatch->NdkResizeCq(cq->cq, 128, cf_req_cb, op)), STATUS_SUCCESS);
    }

    /* QP: each of the five limits one above the adapter maximum (§2.5 NdkCreateQp). */
    struct {
        const char *what;
        ULONG rq, iq, rs, is, inl;
    } qcases[] = {
        { "ReceiveQueueDepth", in->MaxReceiveQueueDepth + 1, 4, 1, 1, 0 },
        { "InitiatorQueueDepth", 4, in->MaxInitiatorQueueDepth + 1, 1, 1, 0 },
        { "MaxReceiveRequestSge", 4, 4, in->MaxReceiveRequestSge + 1, 1, 0 },
        { "MaxInitiatorRequestSge", 4, 4, 1, in->MaxInitiatorRequestSge + 1, 0 },
        { "InlineDataSize", 4, 4, 1, 1, in->MaxInlineDataSize + 1 },
    };
    for (size_t i = 0; i < sizeof qcases / sizeof qcases[0]; i++) {
        op = cf_op_new("NdkCreateQp(limit+1)");
        obj = CF_SENTINEL;
        NTSTATUS st = pd->Dispatch->NdkCreateQp(pd, cq->cq, cq->cq, NULL, qcases[i].rq, qcases[i].iq, qcases[i].rs,
                                                qcases[i].is, qcases[i].inl, cf_create_cb, op, (NDK_QP **)&obj);
        CHECK_MSG(st == STATUS_INVALID_PARAMETER, "NdkCreateQp with %s one above the adapter maximum: %s, expected "
                  "STATUS_INVALID_PARAMETER inline", qcases[i].what, cf_status_name(st));
        cf_req_done(op, st);
    }
    /* All five at their maxima (queue depths bounded so the test stays small in memory). */
    NDK_QP *qp;
    ULONG rq = in->MaxReceiveQueueDepth > 65536 ? 65536 : in->MaxReceiveQueueDepth;
    ULONG iq = in->MaxInitiatorQueueDepth > 65536 ? 65536 : in->MaxInitiatorQueueDepth;
    CHECK_ST(cf_try_qp(&a, pd, cq, cq, NULL, rq, iq, in->MaxReceiveRequestSge, in->MaxInitiatorRequestSge,
                       in->MaxInlineDataSize, &qp),
             STATUS_SUCCESS);
    cf_close(qp);

    if (in->MaxSrqDepth) {
        /* SRQ (§2.5 NdkCreateSrq). */
        op = cf_op_new("NdkCreateSrq(depth+1)");
        obj = CF_SENTINEL;
        NTSTATUS st = pd->Dispatch->NdkCreateSrq(pd, in->MaxSrqDepth + 1, 1, 0, NULL, NULL, NULL, cf_create_cb, op,
                                                 (NDK_SRQ **)&obj);
        CHECK_MSG(st == STATUS_INVALID_PARAMETER, "NdkCreateSrq(MaxSrqDepth + 1): %s", cf_status_name(st));
        cf_req_done(op, st);
        op = cf_op_new("NdkCreateSrq(sge+1)");
        obj = CF_SENTINEL;
        st = pd->Dispatch->NdkCreateSrq(pd, 4, in->MaxReceiveRequestSge + 1, 0, NULL, NULL, NULL, cf_create_cb, op,
                                        (NDK_SRQ **)&obj);
        CHECK_MSG(st == STATUS_INVALID_PARAMETER, "NdkCreateSrq(MaxReceiveRequestSge + 1): %s", cf_status_name(st));
        cf_req_done(op, st);
        ULONG sd = in->MaxSrqDepth > 65536 ? 65536 : in->MaxSrqDepth;
        struct cf_srq *s = cf_srq(pd, &a, sd, in->MaxReceiveRequestSge, 0);
        /* Modify above the maximum (§2.8). */
        op = cf_op_new("NdkModifySrq(depth+1)");
        st = s->srq->Dispatch->NdkModifySrq(s->srq, in->MaxSrqDepth + 1, 0, cf_req_cb, op);
        CHECK_MSG(st == STATUS_INVALID_PARAMETER, "NdkModifySrq(MaxSrqDepth + 1): %s", cf_status_name(st));
        cf_req_done(op, st);
        /* QP with SRQ: its three limits (§2.5 NdkCreateQpWithSrq). */
        struct {
            const char *what;
            ULONG iq, is, inl;
        } scases[] = {
            { "InitiatorQueueDepth", in->MaxInitiatorQueueDepth + 1, 1, 0 },
            { "MaxInitiatorRequestSge", 4, in->MaxInitiatorRequestSge + 1, 0 },
            { "InlineDataSize", 4, 1, in->MaxInlineDataSize + 1 },
        };
        for (size_t i = 0; i < sizeof scases / sizeof scases[0]; i++) {
            op = cf_op_new("NdkCreateQpWithSrq(limit+1)");
            obj = CF_SENTINEL;
            st = pd->Dispatch->NdkCreateQpWithSrq(pd, cq->cq, cq->cq, s->srq, NULL, scases[i].iq, scases[i].is,
                                                  scases[i].inl, cf_create_cb, op, (NDK_QP **)&obj);
            CHECK_MSG(st == STATUS_INVALID_PARAMETER, "NdkCreateQpWithSrq with %s one above the maximum: %s",
                      scases[i].what, cf_status_name(st));
            cf_req_done(op, st);
        }
        cf_srq_close(s);
    }

    /* Fast-register MR: more pages than the largest registration -> STATUS_IMPLEMENTATION_LIMIT
     * (inline or through the completion); FRMRPageCount pages work (§2.6). */
    NDK_MR *fr = cf_mr(&a, pd, TRUE);
    uint64_t too_many = (uint64_t)(in->MaxRegistrationSize / PAGE_SIZE) + 1;
    if (too_many <= MAXULONG) {
        NTSTATUS st = cf_init_frmr(fr, (ULONG)too_many, TRUE);
        CHECK_MSG(st == STATUS_IMPLEMENTATION_LIMIT, "NdkInitializeFastRegisterMr(%llu pages > MaxRegistrationSize): %s, "
                  "expected STATUS_IMPLEMENTATION_LIMIT", (unsigned long long)too_many, cf_status_name(st));
    }
    CHECK_ST(cf_init_frmr(fr, in->FRMRPageCount, TRUE), STATUS_SUCCESS);
    cf_close(fr);

    /* Registration larger than MaxRegistrationSize fails (§4.7) - only when it is mappable. */
    if (in->MaxRegistrationSize < ((SIZE_T)1 << 40) && in->MaxRegistrationSize + 1 <= MAXULONG) {
        size_t len = in->MaxRegistrationSize + 1;
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            NDK_MR *mr = cf_mr(&a, pd, FALSE);
            MDL *mdl = IoAllocateMdl(p, (ULONG)len, FALSE, FALSE, NULL);
            CHECK_FAILED(cf_register(mr, mdl, len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE));
            NdkMdlChainFree(mdl);
            cf_close(mr);
            munmap(p, len);
        }
    }
    cf_cq_close(cq);
    cf_close(pd);
    cf_ad_close(&a);
}

void case_cq_moderation(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    struct cf_cq *cq = cf_cq(&a, 32);
    NDK_CQ *c = cq->cq;
    if (a.info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED) {
        CHECK_ST(c->Dispatch->NdkControlCqInterruptModeration(c, MAXULONG, MAXULONG), STATUS_INVALID_PARAMETER_MIX);
        CHECK_ST(c->Dispatch->NdkControlCqInterruptModeration(c, MAXULONG, 64), STATUS_INVALID_PARAMETER_MIX);
        CHECK_ST(c->Dispatch->NdkControlCqInterruptModeration(c, 10, 4), STATUS_SUCCESS);
        CHECK_ST(c->Dispatch->NdkControlCqInterruptModeration(c, 0, 0), STATUS_SUCCESS);
    } else {
        /* §2.4: the only legal answer without the flag. */
        CHECK_ST(c->Dispatch->NdkControlCqInterruptModeration(c, 10, 4), STATUS_NOT_SUPPORTED);
        CHECK_ST(c->Dispatch->NdkControlCqInterruptModeration(c, 0, 0), STATUS_NOT_SUPPORTED);
    }
    cf_cq_close(cq);
    cf_ad_close(&a);
}

void case_lam_build(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    NDK_ADAPTER *ad = a.ad;
    struct cf_mem m;
    cf_mem_alloc(&m, 3 * PAGE_SIZE, 0, 100);      /* starts 100 bytes into a page: 4 pages touched */
    MDL *mdl = IoAllocateMdl(m.buf, (ULONG)m.len, FALSE, FALSE, NULL);
    ULONG size = 0, fbo = 12345;

    /* Size protocol: no buffer -> STATUS_BUFFER_TOO_SMALL with the bytes required. */
    struct cf_op *op = cf_op_new("NdkBuildLAM(size 0)");
    NTSTATUS st = cf_req_done(op, ad->Dispatch->NdkBuildLAM(ad, mdl, m.len, cf_req_cb, op, NULL, &size, &fbo));
    CHECK_ST(st, STATUS_BUFFER_TOO_SMALL);
    ULONG want = (ULONG)(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + 4 * sizeof(NDK_LOGICAL_ADDRESS));
    CHECK_MSG(size == want, "NdkBuildLAM required size %u, expected %u (4 pages)", size, want);

    NDK_LOGICAL_ADDRESS_MAPPING *lam = calloc(1, size);
    op = cf_op_new("NdkBuildLAM");
    st = cf_req_done(op, ad->Dispatch->NdkBuildLAM(ad, mdl, m.len, cf_req_cb, op, lam, &size, &fbo));
    CHECK_ST(st, STATUS_SUCCESS);
    CHECK_EQ(lam->AdapterPageCount, 4);
    CHECK_EQ(fbo, 100);
    CHECK_EQ(size, want);
    for (ULONG i = 0; i < lam->AdapterPageCount; i++)
        CHECK_MSG((lam->AdapterPageArray[i].QuadPart & (PAGE_SIZE - 1)) == 0, "LAM page %u not PAGE_SIZE aligned", i);
    ad->Dispatch->NdkReleaseLAM(ad, lam);
    CHECK_MSG(mdl->ByteCount == m.len && MmGetMdlVirtualAddress(mdl) == m.buf, "NdkReleaseLAM changed the MDL (§2.3)");

    /* §8.18: a NULL completion means the call completes synchronously. */
    size = want;
    st = ad->Dispatch->NdkBuildLAM(ad, mdl, m.len, NULL, NULL, lam, &size, &fbo);
    CHECK_MSG(st == STATUS_SUCCESS, "NdkBuildLAM without a completion: %s (§8.18: never pending)", cf_status_name(st));
    ad->Dispatch->NdkReleaseLAM(ad, lam);

    /* A chain that is not virtually contiguous: STATUS_INVALID_PARAMETER for BuildLAM and RegisterMr. */
    struct cf_mem m2;
    cf_mem_alloc(&m2, PAGE_SIZE, PAGE_SIZE, 0);
    PVOID bufs[2] = { m.buf, m2.buf };
    ULONG lens[2] = { PAGE_SIZE, PAGE_SIZE };
    MDL *chain = NdkMdlChainBuild(bufs, lens, 2);
    CHECK(chain);
    size = 4096;
    NDK_LOGICAL_ADDRESS_MAPPING *lam2 = calloc(1, size);
    op = cf_op_new("NdkBuildLAM(non-contiguous)");
    st = cf_req_done(op, ad->Dispatch->NdkBuildLAM(ad, chain, 2 * PAGE_SIZE, cf_req_cb, op, lam2, &size, &fbo));
    CHECK_MSG(st == STATUS_INVALID_PARAMETER, "NdkBuildLAM over a non-contiguous chain: %s", cf_status_name(st));
    NDK_PD *pd = cf_pd(&a);
    NDK_MR *mr = cf_mr(&a, pd, FALSE);
    st = cf_register(mr, chain, 2 * PAGE_SIZE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    CHECK_MSG(st == STATUS_INVALID_PARAMETER, "NdkRegisterMr over a non-contiguous chain: %s", cf_status_name(st));
    /* Length beyond the chain: a failure. */
    CHECK_FAILED(cf_register(mr, mdl, m.len + PAGE_SIZE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE));
    /* A contiguous two-descriptor chain registers fine. */
    PVOID cbufs[2] = { m.buf, m.buf + PAGE_SIZE };
    MDL *cchain = NdkMdlChainBuild(cbufs, lens, 2);
    CHECK_ST(cf_register(mr, cchain, 2 * PAGE_SIZE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE), STATUS_SUCCESS);
    CHECK_ST(cf_deregister(mr), STATUS_SUCCESS);
    cf_close(mr);
    cf_close(pd);
    NdkMdlChainFree(cchain);
    NdkMdlChainFree(chain);
    NdkMdlChainFree(mdl);
    free(lam);
    free(lam2);
    cf_mem_free(&m2);
    cf_mem_free(&m);
    cf_ad_close(&a);
}

/* ---- OID_NDK_LOCAL_ENDPOINTS (§6.8) ---- */

static void ep_connect_cb(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    (void)c;
}

struct ep_list {
    uint8_t *buf;
    ULONG count;                    /* entries, TCP twins included */
    bool mapped;                    /* NDLocalEndpointsMappedtoTCPLocalEndpoints */
    NDIS_NDK_LOCAL_ENDPOINT_ENTRY *e;
};

/* One query by the size protocol: no buffer, one byte short (nothing written past it), exact. */
static struct ep_list ep_query(struct cf_ad *a)
{
    struct ep_list l = { 0 };
    ULONG wr = 0, need = 0;
    const ULONG hdr = (ULONG)offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints);

    NTSTATUS st = ndk_rt_query_oid(a->rt, a->id, OID_NDK_LOCAL_ENDPOINTS, NULL, 0, &wr, &need);
    CHECK_MSG(st == NDIS_STATUS_BUFFER_TOO_SHORT, "OID_NDK_LOCAL_ENDPOINTS without a buffer: 0x%08x, expected "
              "NDIS_STATUS_BUFFER_TOO_SHORT", (unsigned)st);
    CHECK_MSG(need >= hdr && (need - hdr) % sizeof(NDIS_NDK_LOCAL_ENDPOINT_ENTRY) == 0,
              "BytesNeeded %u is not 16 + 36 * n (§6.8)", need);
    l.buf = malloc(need + 64);
    CHECK(l.buf);
    memset(l.buf, 0xCC, need + 64);
    ULONG need2 = 0;
    st = ndk_rt_query_oid(a->rt, a->id, OID_NDK_LOCAL_ENDPOINTS, l.buf, need - 1, &wr, &need2);
    CHECK_MSG(st == NDIS_STATUS_BUFFER_TOO_SHORT && need2 == need, "one byte short: 0x%08x, BytesNeeded %u (was %u)",
              (unsigned)st, need2, need);
    CHECK_MSG(cf_all(l.buf + need - 1, 65, 0xCC), "the short query wrote past its buffer");
    st = ndk_rt_query_oid(a->rt, a->id, OID_NDK_LOCAL_ENDPOINTS, l.buf, need, &wr, &need2);
    CHECK_MSG(st == STATUS_SUCCESS, "OID_NDK_LOCAL_ENDPOINTS with %u bytes: 0x%08x", need, (unsigned)st);
    CHECK_MSG(cf_all(l.buf + need, 64, 0xCC), "the query wrote past BytesNeeded");
    NDIS_NDK_LOCAL_ENDPOINTS *r = (NDIS_NDK_LOCAL_ENDPOINTS *)l.buf;
    size_t size = NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(r->Count);
    CHECK_EQ(r->Header.Type, NDIS_OBJECT_TYPE_DEFAULT);
    CHECK_EQ(r->Header.Revision, NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1);
    CHECK_MSG(r->Header.Size == (size > 0xffff ? 0xffff : size), "Header.Size %u for %u entries, expected %zu (§6.8)",
              r->Header.Size, r->Count, size);
    CHECK_EQ(r->Flags, 0);
    CHECK_MSG(size <= need && wr >= size && wr <= need, "%u entries (%zu bytes) in BytesNeeded %u, BytesWritten %u",
              r->Count, size, need, wr);
    l.count = r->Count;
    l.mapped = r->NDLocalEndpointsMappedtoTCPLocalEndpoints != FALSE;
    l.e = (NDIS_NDK_LOCAL_ENDPOINT_ENTRY *)(l.buf + hdr);
    if (l.mapped) {
        /* §6.8: the ND endpoint at an even index, its TCP endpoint at the next. */
        CHECK_MSG(l.count % 2 == 0, "TCP-mapped list with an odd count %u", l.count);
        for (ULONG i = 0; i < l.count; i += 2)
            CHECK_MSG(cf_port(&l.e[i].Local) == cf_port(&l.e[i + 1].Local) &&
                          cf_addr_same_ip(&l.e[i].Local, &l.e[i + 1].Local),
                      "entry %u (ND) and %u (its TCP endpoint) differ", i, i + 1);
    }
    return l;
}

/* The ND entries of l that are at want (address and port): how many, the last one in *out. */
static int ep_find(const struct ep_list *l, const SOCKADDR_INET *want, NDIS_NDK_LOCAL_ENDPOINT_ENTRY *out)
{
    int n = 0;
    for (ULONG i = 0; i < l->count; i += l->mapped ? 2 : 1) {
        if (l->e[i].Local.si_family == want->si_family && cf_port(&l->e[i].Local) == cf_port(want) &&
            cf_addr_same_ip(&l->e[i].Local, want)) {
            *out = l->e[i];
            n++;
        }
    }
    return n;
}

static ULONG ep_nd_count(const struct ep_list *l)
{
    return l->mapped ? l->count / 2 : l->count;
}

void case_oid_local_endpoints(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    struct ep_list base = ep_query(&a);
    ULONG n0 = ep_nd_count(&base);

    /* A listener is an endpoint once it listens; a shared endpoint from its creation. */
    struct cf_op *op = cf_op_new("NdkCreateListener");
    NDK_LISTENER *l = CF_SENTINEL, *lis;
    NTSTATUS st = a.ad->Dispatch->NdkCreateListener(a.ad, ep_connect_cb, NULL, cf_create_cb, op, &l);
    CHECK_ST(cf_create_done(op, st, (void *const *)&l, NdkObjectTypeListener, a.version, (void **)&lis), STATUS_SUCCESS);
    struct ep_list x = ep_query(&a);
    CHECK_MSG(ep_nd_count(&x) == n0, "a listener that has not listened is listed (%u entries, %u before)",
              ep_nd_count(&x), n0);
    free(x.buf);
    SOCKADDR_INET any = cf_addr(0);
    CHECK_ST(cf_listen(lis, &any), STATUS_SUCCESS);
    SOCKADDR_INET la = cf_listener_addr(lis);
    NDK_SHARED_ENDPOINT *sep;
    CHECK_ST(cf_try_sep(&a, &any, &sep), STATUS_SUCCESS);
    SOCKADDR_INET sa;
    ULONG len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    CHECK_ST(sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&sa, &len), STATUS_SUCCESS);
    cf_note("listener on port %u, shared endpoint on port %u", cf_port(&la), cf_port(&sa));

    struct ep_list both = ep_query(&a);
    CHECK_MSG(ep_nd_count(&both) == n0 + 2, "%u ND entries with a listener and a shared endpoint, %u before",
              ep_nd_count(&both), n0);
    CHECK_MSG(both.mapped == base.mapped, "NDLocalEndpointsMappedtoTCPLocalEndpoints changed between queries");
    NDIS_NDK_LOCAL_ENDPOINT_ENTRY e;
    CHECK_MSG(ep_find(&both, &la, &e) == 1, "the listener (port %u) is not listed once", cf_port(&la));
    CHECK_MSG(e.Listener, "the listener's entry has Listener FALSE");
    CHECK_MSG(!e.UserModeOwner, "the listener's entry has UserModeOwner TRUE: its owner is an NDKPI consumer (§6.8)");
    CHECK_EQ(e.OwnerPid, (ULONG)getpid());
    CHECK_MSG(ep_find(&both, &sa, &e) == 1, "the shared endpoint (port %u) is not listed once", cf_port(&sa));
    CHECK_MSG(!e.Listener, "the shared endpoint's entry has Listener TRUE");
    CHECK_MSG(!e.UserModeOwner, "the shared endpoint's entry has UserModeOwner TRUE (§6.8)");
    CHECK_EQ(e.OwnerPid, (ULONG)getpid());
    free(both.buf);

    /* Closing each removes exactly its entry. */
    cf_close(sep);
    x = ep_query(&a);
    CHECK_MSG(ep_nd_count(&x) == n0 + 1 && ep_find(&x, &sa, &e) == 0 && ep_find(&x, &la, &e) == 1,
              "after closing the shared endpoint: %u ND entries (%u before), it or the listener wrong", ep_nd_count(&x), n0);
    free(x.buf);
    cf_close(lis);
    x = ep_query(&a);
    CHECK_MSG(ep_nd_count(&x) == n0 && ep_find(&x, &la, &e) == 0, "after closing the listener: %u ND entries (%u before)",
              ep_nd_count(&x), n0);
    free(x.buf);
    free(base.buf);
    cf_ad_close(&a);
}
