/* adapter.c - the device (one bound interface: limits, capabilities, counters, NDK state, OIDs)
 * and the NDK_ADAPTER instances opened on it (§2.2, §2.3, §6.3-§6.8).
 *
 * Talks to: progress.c (the device's engine), log.c, and the creates its dispatch names: pd.c,
 * cq.c, connector.c, listener.c, shared_endpoint.c. Called by provider.c. */
#include "iwarp.h"
#include "datapath.h"
#include "ndk_prov_lam.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- device ---- */

static void iw_fill_info(struct iw_device *dev)
{
    NDK_ADAPTER_INFO *i = &dev->info;

    memset(i, 0, sizeof(*i));
    i->Version.Major = 2;
    i->Version.Minor = IW_VERSION_2_MINOR_MAX;
    i->VendorId = 0;          /* no IEEE OUI: a software device */
    i->DeviceId = 0x1;
    i->MaxRegistrationSize = IW_MAX_REGISTRATION;
    i->MaxWindowSize = IW_MAX_WINDOW;
    i->FRMRPageCount = IW_FRMR_PAGE_COUNT;
    i->MaxInitiatorRequestSge = IW_MAX_SGE;
    i->MaxReceiveRequestSge = IW_MAX_SGE;
    i->MaxReadRequestSge = IW_MAX_SGE;
    i->MaxTransferLength = IW_MAX_TRANSFER;
    i->MaxInlineDataSize = IW_MAX_INLINE;
    i->MaxInboundReadLimit = IW_MAX_IRD;
    i->MaxOutboundReadLimit = IW_MAX_ORD;
    i->MaxReceiveQueueDepth = IW_MAX_QP_DEPTH;
    i->MaxInitiatorQueueDepth = IW_MAX_QP_DEPTH;
    i->MaxSrqDepth = IW_MAX_SRQ_DEPTH;
    i->MaxCqDepth = IW_MAX_CQ_DEPTH;
    i->LargeRequestThreshold = IW_LARGE_REQUEST;
    /* 252 + the 4-byte MPA v2 block = 256, the most siw and cxgb4 accept (RFC 5044 §7.1 allows 512). */
    i->MaxCallerData = IW_MAX_PRIVATE_DATA;
    i->MaxCalleeData = IW_MAX_PRIVATE_DATA;
    /* LOOPBACK: connections over the same address work (kernel TCP does it).
     * RDMA_READ_SINK_NOT_REQUIRED: like siw, the requester places Read Response data by its own
     * outstanding-read record into the SGL it posted, so a read sink needs only local write;
     * the sink STag on the wire is a label.
     * CQ_RESIZE: implemented (cq.c).
     * RDMA_READ_LOCAL_INVALIDATE: a Read's success invalidates its first SGE's token (rx.c);
     * NDKPI 1.2+, so instances opened at 1.1 neither see the flag nor honour the op flag.
     * No interrupt moderation (no interrupts), no multi-engine (one progress thread), and no
     * IN_ORDER_DMA: placement is a memcpy / recv, whose stores the CPU may make visible out of
     * order within one copy, so "a later byte is never written before an earlier one" is not
     * a promise we can keep at byte granularity. */
    i->AdapterFlags = NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED | NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED |
                      NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED | NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED;
    i->RdmaTechnology = NdkiWarp;

    NDIS_NDK_CAPABILITIES *c = &dev->caps;
    memset(c, 0, sizeof(*c));
    c->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
    c->Header.Revision = NDIS_NDK_CAPABILITIES_REVISION_1;
    c->Header.Size = NDIS_SIZEOF_NDK_CAPABILITIES_REVISION_1;
    c->MaxQpCount = IW_MAX_QP_COUNT;
    c->MaxCqCount = IW_MAX_CQ_COUNT;
    c->MaxMrCount = IW_MAX_MR_COUNT;
    c->MaxPdCount = IW_MAX_PD_COUNT;
    c->MaxInboundReadLimit = 0;        /* no adapter-wide cap beyond the per-QP ones (§6.4) */
    c->MaxOutboundReadLimit = 0;
    c->MaxMwCount = IW_MAX_MW_COUNT;
    c->MaxSrqCount = IW_MAX_SRQ_COUNT;
    c->MissingCounterMask = 0;         /* every counter is maintained */
    c->NdkInfo = &dev->info;
}

static void iw_pnp_work(struct iw_work *w)
{
    struct iw_device *dev = ndk_container_of(w, struct iw_device, pnp_work);
    int ev = atomic_exchange(&dev->pnp_pending_event, 0);

    /* §6.5: NetPnPEvent only from our own thread, never inside the OID handler. */
    if (ev && dev->prov->drv.services->NetPnPEvent)
        dev->prov->drv.services->NetPnPEvent(dev->miniport_handle, (ULONG)ev);
}

NDIS_STATUS iw_device_create(struct iw_provider *prov, NDIS_HANDLE handle, const NDK_PROVIDER_INTERFACE *ifc,
                             struct iw_device **out)
{
    struct iw_device *dev = calloc(1, sizeof(*dev));
    int err;

    if (!dev)
        return NDIS_STATUS_RESOURCES;
    dev->prov = prov;
    dev->miniport_handle = handle;
    dev->ifindex = ifc->IfIndex;
    snprintf(dev->ifname, sizeof dev->ifname, "%s", ifc->IfName);
    dev->mtu = ifc->Mtu;
    dev->is_loopback = ifc->IsLoopback;
    dev->no_poll_progress = !prov->cfg.poll_progress;
    dev->no_progress_ring = !prov->cfg.progress_ring;
    dev->poll_idle_ms = prov->cfg.poll_idle_ms;
    iw_fill_info(dev);
    iw_sv_device_init(dev);
    atomic_init(&dev->enabled, true);
    dev->pnp_work.fn = iw_pnp_work;
    ndk_list_init(&dev->pnp_work.link);
    pthread_mutex_init(&dev->lock, NULL);
    pthread_mutex_init(&dev->mem_lock, NULL);
    pthread_mutex_init(&dev->qps_lock, NULL);
    ndk_list_init(&dev->qps);
    iw_mem_device_init(dev);
    ndk_list_init(&dev->endpoints);
    ndk_list_init(&dev->connectors);
    ndk_list_init(&dev->listeners);
    ndk_prov_adapter_list_init(&dev->adapters);
    err = iw_progress_start(dev);
    if (err) {
        iw_derr(dev, "%s: cannot start the progress engine: %s", dev->ifname, strerror(-err));
        ndk_prov_adapter_list_destroy(&dev->adapters);
        pthread_mutex_destroy(&dev->lock);
        pthread_mutex_destroy(&dev->mem_lock);
        pthread_mutex_destroy(&dev->qps_lock);
        free(dev);
        return ndk_status_from_errno(err);
    }
    iw_dinfo(dev, "bound to %s (ifindex %u, mtu %u)", dev->ifname, dev->ifindex, dev->mtu);
    *out = dev;
    return NDIS_STATUS_SUCCESS;
}

VOID iw_device_update(NDIS_HANDLE ctx, CONST NDK_PROVIDER_INTERFACE *ifc)
{
    struct iw_device *dev = ctx;

    /* Address membership is asked from the runtime at each use; only the MTU is cached. */
    dev->mtu = ifc->Mtu;
}

VOID iw_device_destroy(NDIS_HANDLE ctx)
{
    struct iw_device *dev = ctx;

    /* The runtime closed every adapter instance first (provider.h), so no object is left. */
    if (ndk_prov_adapter_list_destroy(&dev->adapters))
        iw_derr(dev, "%s: halted with adapter instances still open", dev->ifname);
    iw_progress_stop(dev);              /* runs the last reclaim of retired MRs and MWs */
    iw_rx_bufs_free(dev);
    iw_tx_batch_free(dev);
    iw_stag_table_destroy(&dev->stags);
    pthread_mutex_destroy(&dev->lock);
    pthread_mutex_destroy(&dev->mem_lock);
    pthread_mutex_destroy(&dev->qps_lock);
    free(dev);
}

static NDIS_STATUS iw_oid_statistics(struct iw_device *dev, NDK_OID_REQUEST *req)
{
    NDIS_NDK_STATISTICS_INFO *s = ndk_prov_oid_begin(req, sizeof(*s), NDIS_NDK_STATISTICS_INFO_REVISION_1);

    if (!s)
        return NDIS_STATUS_BUFFER_TOO_SHORT;
#define LD(f) atomic_load_explicit(&dev->ndk->f, memory_order_relaxed)
    s->CounterSet.Connect = LD(connect);
    s->CounterSet.Accept = LD(accept);
    s->CounterSet.ConnectFailure = LD(connect_failure);
    s->CounterSet.ConnectionError = LD(connection_error);
    s->CounterSet.ActiveConnection = LD(active_connection);
    s->CounterSet.CQError = LD(cq_error);
    s->CounterSet.RDMAInOctets = LD(rdma_in_octets);
    s->CounterSet.RDMAOutOctets = LD(rdma_out_octets);
    s->CounterSet.RDMAInFrames = LD(rdma_in_frames);
    s->CounterSet.RDMAOutFrames = LD(rdma_out_frames);
#undef LD
    req->BytesWritten = (ULONG)sizeof(*s);
    return NDIS_STATUS_SUCCESS;
}

/* ====================================================================================
 * OIDs (§6.7, §6.8): TCP-mapped pairs, even index = ND addressing, odd = TCP (identical here
 * because the ND port is the TCP port).
 * ==================================================================================== */

static NDIS_STATUS iw_oid_connections(struct iw_device *dev, NDK_OID_REQUEST *req)
{
    NDIS_NDK_CONNECTIONS *r;
    struct ndk_list *pos;
    ULONG n = 0, i = 0;
    size_t need;

    pthread_mutex_lock(&dev->lock);
    /* §8.40 decision: only established connections are "active". */
    ndk_list_for_each(pos, &dev->connectors) {
        struct iw_connector *c = ndk_list_entry(pos, struct iw_connector, link);
        if (c->state == IW_CM_ESTABLISHED || c->state == IW_CM_DISCONNECTING)
            n++;
    }
    need = NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(2 * n);
    r = ndk_prov_oid_begin(req, need, NDIS_NDK_CONNECTIONS_REVISION_1);
    if (!r) {
        pthread_mutex_unlock(&dev->lock);
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
    r->NDConnectionsMappedtoTCPConnections = TRUE;
    /* Connections[] is declared [1] (the Windows layout): index through a plain pointer so
     * -fsanitize=bounds does not flag the variable-length tail. */
    NDIS_NDK_CONNECTION_ENTRY *ents =
        (NDIS_NDK_CONNECTION_ENTRY *)((uint8_t *)r + offsetof(NDIS_NDK_CONNECTIONS, Connections));
    ndk_list_for_each(pos, &dev->connectors) {
        struct iw_connector *c = ndk_list_entry(pos, struct iw_connector, link);
        if (c->state != IW_CM_ESTABLISHED && c->state != IW_CM_DISCONNECTING)
            continue;
        NDIS_NDK_CONNECTION_ENTRY *nd = &ents[i++], *tcp = &ents[i++];
        nd->Local = c->local;
        nd->Remote = c->peer;
        nd->UserModeOwner = FALSE;       /* NDKPI consumer (our consumers are all "kernel") */
        nd->OwnerPid = (ULONG)getpid();
        tcp->Local = c->local;
        tcp->Remote = c->peer;
    }
    r->Count = i;
    pthread_mutex_unlock(&dev->lock);
    req->BytesWritten = (ULONG)need;
    return NDIS_STATUS_SUCCESS;
}

static NDIS_STATUS iw_oid_endpoints(struct iw_device *dev, NDK_OID_REQUEST *req)
{
    NDIS_NDK_LOCAL_ENDPOINTS *r;
    struct ndk_list *pos;
    ULONG n = 0, i = 0;
    size_t need;

    pthread_mutex_lock(&dev->lock);
    ndk_list_for_each(pos, &dev->endpoints) {
        struct iw_endpoint *e = ndk_list_entry(pos, struct iw_endpoint, link);
        if (e->open && (e->kind == IW_EP_LISTENER || e->kind == IW_EP_SHARED))
            n++;
    }
    need = NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(2 * n);
    r = ndk_prov_oid_begin(req, need, NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1);
    if (!r) {
        pthread_mutex_unlock(&dev->lock);
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
    r->NDLocalEndpointsMappedtoTCPLocalEndpoints = TRUE;
    NDIS_NDK_LOCAL_ENDPOINT_ENTRY *ents =
        (NDIS_NDK_LOCAL_ENDPOINT_ENTRY *)((uint8_t *)r + offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints));
    ndk_list_for_each(pos, &dev->endpoints) {
        struct iw_endpoint *e = ndk_list_entry(pos, struct iw_endpoint, link);
        if (!e->open || (e->kind != IW_EP_LISTENER && e->kind != IW_EP_SHARED))
            continue;
        NDIS_NDK_LOCAL_ENDPOINT_ENTRY *nd = &ents[i++], *tcp = &ents[i++];
        nd->Local = e->addr;
        nd->UserModeOwner = FALSE;
        nd->Listener = e->kind == IW_EP_LISTENER;
        nd->OwnerPid = (ULONG)getpid();
        tcp->Local = e->addr;
    }
    r->Count = i;
    pthread_mutex_unlock(&dev->lock);
    req->BytesWritten = (ULONG)need;
    return NDIS_STATUS_SUCCESS;
}

NDIS_STATUS iw_device_oid(NDIS_HANDLE ctx, NDK_OID_REQUEST *req)
{
    struct iw_device *dev = ctx;

    req->BytesWritten = 0;
    req->BytesRead = 0;
    req->BytesNeeded = 0;
    switch (req->Oid) {
    case OID_NDK_SET_STATE: {
        int ev;
        NDIS_STATUS st = ndk_prov_oid_set_state(req, &dev->enabled, &ev);

        if (ev) {
            iw_dinfo(dev, "%s: NDK %s", dev->ifname, ev == NetEventNDKEnable ? "enabled" : "disabled");
            atomic_store(&dev->pnp_pending_event, ev);
            iw_progress_queue(dev, &dev->pnp_work);
        }
        return st;   /* §6.5: never pending */
    }
    case OID_NDK_STATISTICS:
        return req->IsSet ? NDIS_STATUS_NOT_SUPPORTED : iw_oid_statistics(dev, req);
    case OID_NDK_CONNECTIONS:
        return req->IsSet ? NDIS_STATUS_NOT_SUPPORTED : iw_oid_connections(dev, req);
    case OID_NDK_LOCAL_ENDPOINTS:
        return req->IsSet ? NDIS_STATUS_NOT_SUPPORTED : iw_oid_endpoints(dev, req);
    default:
        return NDIS_STATUS_INVALID_OID;
    }
}

/* ---- adapter instances ---- */

/* ---- LAM (§2.3 NdkBuildLAM): the "adapter logical address" of a page is its process virtual
 * address, since our DMA engine is the CPU in this process. ---- */

NTSTATUS iw_build_lam(NDK_ADAPTER *a, MDL *mdl, SIZE_T len, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx,
                      NDK_LOGICAL_ADDRESS_MAPPING *lam, ULONG *lam_size, ULONG *fbo)
{
    (void)cb;     /* always synchronous: §8.18 allows a NULL completion, so we never pend */
    (void)ctx;
    return ndk_prov_lam_fill(to_iw_adapter(a), mdl, len, lam, lam_size, fbo);
}

void iw_release_lam(NDK_ADAPTER *a, NDK_LOGICAL_ADDRESS_MAPPING *lam)
{
    /* Nothing is mapped, so nothing to undo; the MDL is untouched (§2.3 NdkReleaseLAM). */
    if (lam && lam->AdapterContext != to_iw_adapter(a))
        iw_dwarn(to_iw_adapter(a)->dev, "NdkReleaseLAM: LAM %p was not built by this adapter", (void *)lam);
}

static const NDK_ADAPTER_DISPATCH iw_adapter_dispatch = {
    .NdkQueryExtension = iw_query_extension,
    .NdkQueryAdapterInfo = ndk_prov_adapter_query_info,
    .NdkCreateCq = iw_create_cq,
    .NdkCreatePd = ndk_prov_pd_create,
    .NdkCreateSharedEndpoint = iw_create_shared_endpoint,
    .NdkCreateConnector = iw_create_connector,
    .NdkCreateListener = iw_create_listener,
    .NdkBuildLAM = iw_build_lam,
    .NdkReleaseLAM = iw_release_lam,
};

/* The instance, then what its objects use. */
static const struct ndk_prov_adapter_kind iw_adapter_kind = {
    .minor_max = { IW_VERSION_1_MINOR_MAX, IW_VERSION_2_MINOR_MAX }, .size = sizeof(struct iw_adapter),
    .dispatch = &iw_adapter_dispatch, .hooks = &iw_obj_hooks, .pd_new = iw_pd_new,
};

/* PASSIVE, no lock held; takes the instance list's lock. */
NDIS_STATUS iw_open_adapter(NDIS_HANDLE ctx, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params, NDK_ADAPTER **out)
{
    struct iw_device *dev = ctx;
    struct ndk_prov_adapter *base;
    NDIS_STATUS st = ndk_prov_adapter_open(&iw_adapter_kind, &dev->adapters, &dev->info, atomic_load(&dev->enabled),
                                           params, out, &base);

    if (st == NDIS_STATUS_SUCCESS)
        ndk_container_of(base, struct iw_adapter, base)->dev = dev;
    return st;
}

/* Blocks (§2.2): never from an NDK callback. */
void iw_close_adapter(NDIS_HANDLE ctx, NDK_ADAPTER *a)
{
    struct iw_device *dev = ctx;

    if (iw_progress_on_thread(dev))
        iw_derr(dev, "CloseNDKAdapterHandler called from inside an NDK callback: this deadlocks (§5.1)");
    /* §8 item 1 decision: block until every object of the instance is closed and its close
     * completion has returned (objects are uncounted only after their completion returned). */
    ndk_prov_adapter_close(&to_iw_adapter(a)->base);
}
