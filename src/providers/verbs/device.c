/* device.c - which RDMA device port serves an interface, what it can do (map §2), and the
 * device-level OIDs (§6.4-§6.8). One vb_device per bound interface; its limits are probed
 * once, with throw-away objects, so only what the device really does is advertised. */
#include "verbs.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* At load: counts the RDMA devices and writes prov->why. May block (sysfs, device open). */
int vb_device_scan(struct vb_provider *prov)
{
    struct ibv_device **list;
    int n = 0, err;
    size_t off = 0;

    errno = 0;
    list = ibv_get_device_list(&n);
    err = errno;
    if (!list || n == 0) {
        /* libibverbs says ENOSYS when the kernel has no user-space verbs (no ib_uverbs). */
        snprintf(prov->why, sizeof prov->why, "no RDMA device (%s); load rdma_rxe/siw or install an RNIC",
                 list ? "none registered" : err == ENOSYS ? "no ib_uverbs in the kernel" : strerror(err ? err : ENODEV));
        if (list)
            ibv_free_device_list(list);
        return 0;
    }
    for (int i = 0; i < n && off < sizeof prov->why; i++)
        off += (size_t)snprintf(prov->why + off, sizeof prov->why - off, "%s%s", i ? " " : "",
                                ibv_get_device_name(list[i]));
    ibv_free_device_list(list);
    return n;
}

/* Binds a throw-away id to addr: the ground truth for which device and port own it (map §2.2).
 * May block. Returns 0 and the context/port, or -errno. */
static int vb_device_resolve(const SOCKADDR_INET *addr, struct ibv_context **ctx, uint8_t *port)
{
    struct rdma_cm_id *id;
    SOCKADDR_INET a = *addr;
    int err = 0;

    if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP))
        return -errno;
    if (a.si_family == AF_INET6)
        a.Ipv6.sin6_port = 0;
    else
        a.Ipv4.sin_port = 0;
    if (rdma_bind_addr(id, (struct sockaddr *)&a))
        err = -errno;
    else if (!id->verbs)
        err = -ENODEV;
    else {
        *ctx = id->verbs;
        *port = id->port_num;
    }
    rdma_destroy_id(id);
    return err;
}

/* The largest inline size the device grants on an RC QP (libfabric probes the same way). */
static uint32_t vb_probe_inline(struct vb_device *dev, struct ibv_cq *cq)
{
    static const uint32_t tries[] = { 1024, 512, 256, 128, 80, 64, 32, 0 };

    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
                                                .max_recv_sge = 1, .max_inline_data = tries[i] } };
        struct ibv_qp *qp = ibv_create_qp(dev->probe_pd, &qa);
        if (qp) {
            ibv_destroy_qp(qp);
            return qa.cap.max_inline_data > tries[i] ? qa.cap.max_inline_data : tries[i];
        }
    }
    return 0;
}

static void vb_device_probe(struct vb_device *dev, const struct ibv_device_attr_ex *ax, const struct ibv_port_attr *pa)
{
    const struct ibv_device_attr *a = &ax->orig_attr;
    struct ibv_cq *cq = ibv_create_cq(dev->ctx, 4, NULL, NULL, 0);
    struct ibv_mw *mw;

    dev->max_inline = cq ? vb_probe_inline(dev, cq) : 0;
    /* CQ resize is optional in verbs (libsiw has none): advertise only what succeeded. */
    dev->can_resize_cq = cq && ibv_resize_cq(cq, 64) == 0;
    if (cq)
        ibv_destroy_cq(cq);
    dev->has_mw2 = false;
    if ((a->device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) && a->max_mw > 0 &&
        (mw = ibv_alloc_mw(dev->probe_pd, IBV_MW_TYPE_2)) != NULL) {
        dev->has_mw2 = true;
        ibv_dealloc_mw(mw);
    }
    dev->cq_mod_count = ax->cq_mod_caps.max_cq_count;
    dev->cq_mod_period = ax->cq_mod_caps.max_cq_period;
    dev->has_srq = a->max_srq > 0 && a->max_srq_wr > 0;
    dev->max_sge_rd = a->max_sge_rd ? (uint32_t)a->max_sge_rd : (uint32_t)a->max_sge;
    dev->max_qp_wr = (uint32_t)a->max_qp_wr;
    dev->max_cqe = (uint32_t)a->max_cqe;
    dev->max_srq_wr = dev->has_srq ? (uint32_t)a->max_srq_wr : 0;
    (void)pa;
}

static NDK_RDMA_TECHNOLOGY vb_device_technology(struct vb_device *dev, int gids)
{
    if (dev->transport == IBV_TRANSPORT_IWARP)
        return NdkiWarp;
    if (dev->link_layer == IBV_LINK_LAYER_INFINIBAND)
        return NdkInfiniBand;
    /* Ethernet: rdma_cm prefers RoCE v2 GIDs; a port without any is RoCE v1 (map §2.1). */
    for (int i = 0; i < gids; i++) {
        struct ibv_gid_entry e;
        if (ibv_query_gid_ex(dev->ctx, dev->port, (uint32_t)i, &e, 0) == 0 && e.gid_type == IBV_GID_TYPE_ROCE_V2)
            return NdkRoCEv2;
    }
    return NdkRoCE;
}

static void vb_fill_info(struct vb_device *dev, const struct ibv_device_attr_ex *ax, const struct ibv_port_attr *pa)
{
    const struct ibv_device_attr *a = &ax->orig_attr;
    NDK_ADAPTER_INFO *i = &dev->info;
    NDIS_NDK_CAPABILITIES *c = &dev->caps;
    uint32_t wr = dev->max_qp_wr > 2 * VB_CQ_RESERVE ? dev->max_qp_wr - VB_CQ_RESERVE : dev->max_qp_wr / 2;

    memset(i, 0, sizeof(*i));
    i->Version.Major = 2;
    i->Version.Minor = VB_VERSION_2_MINOR_MAX;
    i->VendorId = a->vendor_id;
    i->DeviceId = a->vendor_part_id;
    i->MaxRegistrationSize = (SIZE_T)a->max_mr_size;
    i->MaxWindowSize = (SIZE_T)a->max_mr_size;   /* emulated without device MWs (mw.c) */
    i->FRMRPageCount = VB_FRMR_PAGE_COUNT;
    i->MaxInitiatorRequestSge = (ULONG)a->max_sge;
    /* One limit covers QP and SRQ receives (rxe: 32 and 27). */
    i->MaxReceiveRequestSge = (ULONG)(dev->has_srq && a->max_srq_sge < a->max_sge ? a->max_srq_sge : a->max_sge);
    i->MaxReadRequestSge = dev->max_sge_rd;
    i->MaxTransferLength = pa->max_msg_sz > 0x7fffffffu ? 0x7fffffffu : (ULONG)pa->max_msg_sz;
    i->MaxInlineDataSize = dev->max_inline;
    i->MaxInboundReadLimit = a->max_qp_rd_atom > 255 ? 255 : (ULONG)a->max_qp_rd_atom;
    i->MaxOutboundReadLimit = a->max_qp_init_rd_atom > 255 ? 255 : (ULONG)a->max_qp_init_rd_atom;
    i->MaxReceiveQueueDepth = wr;
    i->MaxInitiatorQueueDepth = wr;
    i->MaxSrqDepth = dev->max_srq_wr < VB_SRQ_MAX_DEPTH ? dev->max_srq_wr : VB_SRQ_MAX_DEPTH;
    i->MaxCqDepth = dev->max_cqe > 2 * VB_CQ_RESERVE ? dev->max_cqe - VB_CQ_RESERVE : dev->max_cqe / 2;
    i->LargeRequestThreshold = VB_LARGE_REQUEST;
    /* rdma_cm on IB/RoCE: 56 bytes in a REQ after its own header, 148 in a REJ (the smaller of
     * REP and REJ, since one field covers both), less our 2-byte length frame (connector.c);
     * iWARP: 256 bytes of MPA private data (siw's MPA_MAX_PRIVDATA) less the MPA v2 block. */
    i->MaxCallerData = dev->iwarp ? 252 : 54;
    i->MaxCalleeData = dev->iwarp ? 252 : 146;
    /* Flags (map §2.1): read sinks need no remote right on IB/RoCE; resize only when probed;
     * moderation only with cq_mod_caps (mlx5; not rxe or siw); no in-order or
     * read-local-invalidate claims. Loopback: the device loops to its own address. */
    i->AdapterFlags = NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED;
    if (!dev->iwarp)
        i->AdapterFlags |= NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED;
    if (dev->can_resize_cq)
        i->AdapterFlags |= NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED;
    if (dev->cq_mod_count && dev->cq_mod_period)
        i->AdapterFlags |= NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED;
    i->RdmaTechnology = vb_device_technology(dev, pa->gid_tbl_len);

    memset(c, 0, sizeof(*c));
    c->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
    c->Header.Revision = NDIS_NDK_CAPABILITIES_REVISION_1;
    c->Header.Size = NDIS_SIZEOF_NDK_CAPABILITIES_REVISION_1;
    c->MaxQpCount = (ULONG)a->max_qp;
    c->MaxCqCount = (ULONG)a->max_cq;
    c->MaxMrCount = (ULONG)a->max_mr;
    c->MaxPdCount = (ULONG)a->max_pd;
    c->MaxInboundReadLimit = 0;
    c->MaxOutboundReadLimit = 0;
    c->MaxMwCount = dev->has_mw2 ? (ULONG)a->max_mw : (ULONG)a->max_mr;
    c->MaxSrqCount = dev->has_srq ? (ULONG)a->max_srq : 0;
    /* The connection and CQ counters are kept in software; the octet and frame counters (with
     * their layer-2 overhead, §6.6) only the device could keep, and verbs gives no common way
     * to read them (siw has none, rxe counts packets only): said missing, not reported as 0. */
    c->MissingCounterMask = NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAInOctets) |
                            NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAOutOctets) |
                            NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAInFrames) |
                            NDIS_NDK_PERFORMANCE_COUNTER_MASK(RDMAOutFrames);
    c->NdkInfo = &dev->info;
}

/* The GID rdma_cm addresses the interface by: on RoCE the RoCE v2 (else v1) entry of this
 * netdev holding its first IPv4 address as ::ffff:a.b.c.d, else the first entry of the netdev;
 * iWARP and IB ports: entry 0 (siw's is its MAC). */
static void vb_device_find_gid(struct vb_device *dev, const NDK_PROVIDER_INTERFACE *ifc, int gids)
{
    int best = -1, best_rank = 0;

    dev->gid_index = 0;
    if (ibv_query_gid(dev->ctx, dev->port, 0, &dev->gid))
        memset(&dev->gid, 0, sizeof dev->gid);
    if (dev->iwarp || dev->link_layer != IBV_LINK_LAYER_ETHERNET)
        return;
    for (int i = 0; i < gids; i++) {
        struct ibv_gid_entry e;
        int rank;
        if (ibv_query_gid_ex(dev->ctx, dev->port, (uint32_t)i, &e, 0) || e.ndev_ifindex != ifc->IfIndex)
            continue;
        rank = 1 + (e.gid_type == IBV_GID_TYPE_ROCE_V2);
        for (ULONG k = 0; k < ifc->AddressCount; k++) {
            static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
            const SOCKADDR_INET *a = &ifc->Addresses[k];
            if (a->si_family == AF_INET && !memcmp(e.gid.raw, v4map, 12) &&
                !memcmp(e.gid.raw + 12, &a->Ipv4.sin_addr, 4))
                rank += 2;
        }
        if (rank > best_rank) {
            best = i;
            best_rank = rank;
            dev->gid = e.gid;
        }
    }
    if (best >= 0)
        dev->gid_index = (uint32_t)best;
}

static void vb_pnp_work(struct vb_work *w)
{
    struct vb_device *dev = ndk_container_of(w, struct vb_device, pnp_work);
    int ev = atomic_exchange(&dev->pnp_pending_event, 0);

    if (ev && dev->prov->drv.services->NetPnPEvent)
        dev->prov->drv.services->NetPnPEvent(dev->miniport_handle, (ULONG)ev);
}

static void vb_device_set_addrs(struct vb_device *dev, const NDK_PROVIDER_INTERFACE *ifc)
{
    pthread_mutex_lock(&dev->lock);
    dev->naddrs = 0;
    for (ULONG k = 0; k < ifc->AddressCount && dev->naddrs < VB_MAX_LISTEN_IDS; k++)
        dev->addrs[dev->naddrs++] = ifc->Addresses[k];
    pthread_mutex_unlock(&dev->lock);
}

NDIS_STATUS vb_device_create(struct vb_provider *prov, NDIS_HANDLE handle, const NDK_PROVIDER_INTERFACE *ifc,
                             struct vb_device **out)
{
    struct ibv_context *ctx = NULL;
    struct ibv_device_attr_ex ax;
    struct ibv_port_attr pa;
    struct vb_device *dev;
    uint8_t port = 0;
    int err = -ENODEV;

    for (ULONG k = 0; k < ifc->AddressCount && err; k++)
        err = vb_device_resolve(&ifc->Addresses[k], &ctx, &port);
    if (err)
        return NDIS_STATUS_NOT_SUPPORTED;      /* no RDMA device port on this interface */
    memset(&ax, 0, sizeof ax);
    if (ibv_query_device_ex(ctx, NULL, &ax) || ibv_query_port(ctx, port, &pa))
        return NDIS_STATUS_NOT_SUPPORTED;
    dev = calloc(1, sizeof(*dev));
    if (!dev)
        return NDIS_STATUS_RESOURCES;
    dev->prov = prov;
    dev->miniport_handle = handle;
    dev->ifindex = ifc->IfIndex;
    snprintf(dev->ifname, sizeof dev->ifname, "%s", ifc->IfName);
    dev->ctx = ctx;
    dev->port = port;
    snprintf(dev->devname, sizeof dev->devname, "%s", ibv_get_device_name(ctx->device));
    dev->transport = ctx->device->transport_type;
    dev->iwarp = dev->transport == IBV_TRANSPORT_IWARP;
    dev->link_layer = pa.link_layer;
    dev->rxe_inv_quirk = ax.orig_attr.vendor_id == 0xffffff && !dev->iwarp && pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    /* siw (vendor "bmt", 0x626d74) flushes a QP's queues inside the state change and never after
     * (siw_qp_modify, siw_post_send): drain.c completes what it leaves behind. */
    dev->flush_sync = ax.orig_attr.vendor_id == 0x626d74 && dev->iwarp;
    if (dev->flush_sync)
        vb_memlock_raise(dev);
    pthread_mutex_init(&dev->lock, NULL);
    pthread_mutex_init(&dev->qpt_lock, NULL);
    pthread_mutex_init(&dev->wq_lock, NULL);
    pthread_mutex_init(&dev->rinv_lock, NULL);
    ndk_prov_adapter_list_init(&dev->adapters);
    ndk_list_init(&dev->connectors);
    ndk_list_init(&dev->seps);
    ndk_list_init(&dev->listeners);
    ndk_list_init(&dev->work);
    ndk_list_init(&dev->srqs);
    for (size_t b = 0; b < sizeof dev->qpt / sizeof dev->qpt[0]; b++)
        ndk_list_init(&dev->qpt[b]);
    dev->pnp_work.fn = vb_pnp_work;
    ndk_list_init(&dev->pnp_work.link);
    atomic_init(&dev->enabled, true);
    vb_sv_device_init(dev);
    vb_device_set_addrs(dev, ifc);
    pthread_mutex_init(&dev->win_lock, NULL);
    ndk_list_init(&dev->wins);
    if ((err = vb_token_init(dev)) != 0)
        goto fail;
    dev->probe_pd = ibv_alloc_pd(ctx);
    if (!dev->probe_pd) {
        err = -errno;
        goto fail;
    }
    vb_device_probe(dev, &ax, &pa);
    vb_fill_info(dev, &ax, &pa);
    vb_device_find_gid(dev, ifc, pa.gid_tbl_len);
    err = vb_progress_start(dev);
    if (err)
        goto fail;
    vb_info(dev, "bound to %s (ifindex %u) port %u: %s, max_sge %u/%u rd, inline %u, mw2 %d, srq %d, resize %d",
            dev->ifname, dev->ifindex, dev->port, dev->iwarp ? "iWARP" : "IB/RoCE", dev->info.MaxInitiatorRequestSge,
            dev->max_sge_rd, dev->max_inline, dev->has_mw2, dev->has_srq, dev->can_resize_cq);
    *out = dev;
    return NDIS_STATUS_SUCCESS;
fail:
    vb_err(dev, "%s: cannot bind: %s", ifc->IfName, strerror(-err));
    if (dev->probe_pd)
        ibv_dealloc_pd(dev->probe_pd);
    vb_token_fini(dev);
    pthread_mutex_destroy(&dev->lock);
    pthread_mutex_destroy(&dev->qpt_lock);
    pthread_mutex_destroy(&dev->wq_lock);
    pthread_mutex_destroy(&dev->rinv_lock);
    pthread_mutex_destroy(&dev->win_lock);
    free(dev->rinv);
    free(dev);
    return ndk_status_from_errno(err);
}

void vb_device_update(struct vb_device *dev, const NDK_PROVIDER_INTERFACE *ifc)
{
    vb_device_set_addrs(dev, ifc);
}

void vb_device_destroy(struct vb_device *dev)
{
    /* The runtime closed every adapter instance first, so every object is gone. */
    ndk_prov_adapter_list_destroy(&dev->adapters);
    vb_progress_stop(dev);
    ibv_dealloc_pd(dev->probe_pd);
    vb_token_fini(dev);
    pthread_mutex_destroy(&dev->lock);
    pthread_mutex_destroy(&dev->qpt_lock);
    pthread_mutex_destroy(&dev->wq_lock);
    pthread_mutex_destroy(&dev->rinv_lock);
    pthread_mutex_destroy(&dev->win_lock);
    free(dev->rinv);
    free(dev);
}

bool vb_device_has_address(struct vb_device *dev, const struct sockaddr *sa)
{
    if (vb_sa_is_wildcard(sa))
        return true;
    if (!dev->prov->drv.services->AdapterHasAddress)
        return true;
    return dev->prov->drv.services->AdapterHasAddress(dev->miniport_handle, sa) != FALSE;
}

static NDIS_STATUS vb_oid_statistics(struct vb_device *dev, NDK_OID_REQUEST *req)
{
    NDIS_NDK_STATISTICS_INFO *s = ndk_prov_oid_begin(req, sizeof(*s), NDIS_NDK_STATISTICS_INFO_REVISION_1);

    if (!s)
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    /* This process's counts; where they are in the adapter record the runtime answers with
     * every process's sum instead (sysview.c). */
    ULONG64 *w = (ULONG64 *)&s->CounterSet;
    for (size_t k = 0; k < NDK_SV_COUNTERS; k++)
        w[k] = __atomic_load_n(&dev->cnt[k], __ATOMIC_RELAXED);
    req->BytesWritten = (ULONG)sizeof(*s);
    return NDIS_STATUS_SUCCESS;
}

/* OID_NDK_CONNECTIONS: the established connections (§8.40), local and remote address. */
static NDIS_STATUS vb_oid_connections(struct vb_device *dev, NDK_OID_REQUEST *req)
{
    NDIS_NDK_CONNECTIONS *r = req->InformationBuffer;
    struct ndk_list *pos;
    ULONG n = 0, i = 0;
    size_t need;

    pthread_mutex_lock(&dev->lock);
    ndk_list_for_each(pos, &dev->connectors) {
        struct vb_connector *c = ndk_list_entry(pos, struct vb_connector, link);
        n += c->state == VB_C_ESTABLISHED;
    }
    need = NDIS_SIZEOF_NDK_CONNECTIONS_REVISION_1(n ? n : 1);
    if (!r || req->InformationBufferLength < need) {
        pthread_mutex_unlock(&dev->lock);
        req->BytesNeeded = (ULONG)need;
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
    memset(r, 0, need);
    ndk_list_for_each(pos, &dev->connectors) {
        struct vb_connector *c = ndk_list_entry(pos, struct vb_connector, link);
        if (c->state != VB_C_ESTABLISHED || i >= n)
            continue;
        struct sockaddr *l = rdma_get_local_addr(c->id), *p = rdma_get_peer_addr(c->id);
        memcpy(&r->Connections[i].Local, l, vb_sa_len(l));
        memcpy(&r->Connections[i].Remote, p, vb_sa_len(p));
        r->Connections[i].UserModeOwner = FALSE;  /* an NDKPI consumer's (§6.7) */
        r->Connections[i].OwnerPid = (ULONG)getpid();
        i++;
    }
    pthread_mutex_unlock(&dev->lock);
    r->Header.Type = NDIS_OBJECT_TYPE_DEFAULT;
    r->Header.Revision = NDIS_NDK_CONNECTIONS_REVISION_1;
    r->Header.Size = (USHORT)need;
    r->Count = i;
    req->BytesWritten = (ULONG)need;
    return NDIS_STATUS_SUCCESS;
}

/* OID_NDK_LOCAL_ENDPOINTS: listeners and shared endpoints (§6.8). On iWARP every ND endpoint
 * is also a TCP endpoint (siw binds a kernel socket to the ND port, map §1.7), so each appears
 * twice, as the iwarp provider reports them; on IB/RoCE the RDMA_PS_TCP port space is rdma_cm's
 * own. */
static NDIS_STATUS vb_oid_endpoints(struct vb_device *dev, NDK_OID_REQUEST *req)
{
    NDIS_NDK_LOCAL_ENDPOINTS *r;
    struct ndk_list *pos;
    ULONG n = 0, i = 0, per = dev->iwarp ? 2 : 1;
    size_t need;

    pthread_mutex_lock(&dev->lock);
    ndk_list_for_each(pos, &dev->listeners)
        n++;
    ndk_list_for_each(pos, &dev->seps)
        n++;
    need = NDIS_SIZEOF_NDK_LOCAL_ENDPOINTS_REVISION_1(per * n);
    r = ndk_prov_oid_begin(req, need, NDIS_NDK_LOCAL_ENDPOINTS_REVISION_1);
    if (!r) {
        pthread_mutex_unlock(&dev->lock);
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
    /* The array is declared [1]: index through a pointer (-fsanitize=bounds). */
    NDIS_NDK_LOCAL_ENDPOINT_ENTRY *e =
        (NDIS_NDK_LOCAL_ENDPOINT_ENTRY *)((uint8_t *)r + offsetof(NDIS_NDK_LOCAL_ENDPOINTS, LocalEndpoints));
    for (int pass = 0; pass < 2; pass++) {
        ndk_list_for_each(pos, pass ? &dev->seps : &dev->listeners) {
            const SOCKADDR_INET *a = pass ? &ndk_list_entry(pos, struct vb_sep, link)->addr
                                          : &ndk_list_entry(pos, struct vb_listener, link)->addr;
            e[i].Local = *a;
            e[i].UserModeOwner = FALSE;     /* an NDKPI consumer's, not NDSPI's (§6.8) */
            e[i].Listener = !pass;
            e[i].OwnerPid = (ULONG)getpid();
            i++;
            if (dev->iwarp)
                e[i++].Local = *a;          /* the TCP endpoint behind it */
        }
    }
    pthread_mutex_unlock(&dev->lock);
    r->Count = i;
    r->NDLocalEndpointsMappedtoTCPLocalEndpoints = dev->iwarp;
    req->BytesWritten = (ULONG)need;
    return NDIS_STATUS_SUCCESS;
}

/* OID_OPENNDK_RDMA_DEVICE (ndk/provider.h): which RDMA device port serves the adapter. */
static NDIS_STATUS vb_oid_rdma_device(struct vb_device *dev, NDK_OID_REQUEST *req)
{
    NDK_RDMA_DEVICE_INFO *d = req->InformationBuffer;

    if (!d || req->InformationBufferLength < sizeof(*d)) {
        req->BytesNeeded = (ULONG)sizeof(*d);
        return NDIS_STATUS_BUFFER_TOO_SHORT;
    }
    memset(d, 0, sizeof(*d));
    d->Size = (ULONG)sizeof(*d);
    snprintf(d->Device, sizeof d->Device, "%s", dev->devname);
    d->Port = dev->port;
    d->GidIndex = dev->gid_index;
    memcpy(d->Gid, dev->gid.raw, sizeof d->Gid);
    snprintf(d->LinkLayer, sizeof d->LinkLayer, "%s",
             dev->link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
             : dev->link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "unspecified");
    snprintf(d->Transport, sizeof d->Transport, "%s",
             dev->transport == IBV_TRANSPORT_IWARP ? "iWARP" : dev->transport == IBV_TRANSPORT_IB ? "IB" : "other");
    req->BytesWritten = (ULONG)sizeof(*d);
    return NDIS_STATUS_SUCCESS;
}

NDIS_STATUS vb_device_oid(struct vb_device *dev, NDK_OID_REQUEST *req)
{
    req->BytesWritten = req->BytesRead = req->BytesNeeded = 0;
    switch (req->Oid) {
    case OID_NDK_SET_STATE: {
        int ev;
        NDIS_STATUS st = ndk_prov_oid_set_state(req, &dev->enabled, &ev);

        if (ev) {
            atomic_store(&dev->pnp_pending_event, ev);
            vb_work_queue(dev, &dev->pnp_work);
        }
        return st;
    }
    case OID_NDK_STATISTICS:
        return req->IsSet ? NDIS_STATUS_NOT_SUPPORTED : vb_oid_statistics(dev, req);
    case OID_NDK_CONNECTIONS:
        return req->IsSet ? NDIS_STATUS_NOT_SUPPORTED : vb_oid_connections(dev, req);
    case OID_NDK_LOCAL_ENDPOINTS:
        return req->IsSet ? NDIS_STATUS_NOT_SUPPORTED : vb_oid_endpoints(dev, req);
    case OID_OPENNDK_RDMA_DEVICE:
        return req->IsSet ? NDIS_STATUS_NOT_SUPPORTED : vb_oid_rdma_device(dev, req);
    default:
        return NDIS_STATUS_INVALID_OID;
    }
}
