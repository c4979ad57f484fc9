/* adapter.c - NDK_ADAPTER instances opened on a bound device (§2.2, §2.3): version negotiation,
 * NdkQueryAdapterInfo from the probed limits, the dispatch table, the blocking close. */
#include "verbs.h"

#include <stdlib.h>
#include <string.h>

static NTSTATUS vb_adapter_query_info(NDK_ADAPTER *a, NDK_ADAPTER_INFO *info, ULONG *size)
{
    struct vb_adapter *ad = to_vb_adapter(a);
    NDK_ADAPTER_INFO tmp;
    ULONG full = (ULONG)sizeof(NDK_ADAPTER_INFO);

    if (!size)
        return STATUS_INVALID_PARAMETER;
    tmp = ad->dev->info;
    tmp.Version = ad->base.version;
    if (info && *size >= full) {
        *info = tmp;
        *size = full;
        return STATUS_SUCCESS;
    }
    /* §8.38: an older consumer's buffer ends before RdmaTechnology. */
    if (info && *size >= NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY) {
        memcpy(info, &tmp, NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY);
        *size = NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY;
        return STATUS_SUCCESS;
    }
    *size = full;
    return STATUS_BUFFER_TOO_SMALL;
}

static const NDK_ADAPTER_DISPATCH vb_adapter_dispatch = {
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkQueryAdapterInfo = vb_adapter_query_info,
    .NdkCreateCq = vb_cq_create,
    .NdkCreatePd = vb_pd_create,
    .NdkCreateSharedEndpoint = vb_sep_create,
    .NdkCreateConnector = vb_connector_create,
    .NdkCreateListener = vb_listener_create,
    .NdkBuildLAM = vb_lam_build,
    .NdkReleaseLAM = vb_lam_release,
};

static const struct ndk_prov_adapter_kind vb_adapter_kind = {
    .minor_max = { VB_VERSION_1_MINOR_MAX, VB_VERSION_2_MINOR_MAX },
    .dispatch = &vb_adapter_dispatch,
    .hooks = &vb_obj_hooks,
    .size = sizeof(struct vb_adapter),
};

/* PASSIVE, no lock held; takes the instance list's lock. */
NDIS_STATUS vb_adapter_open(NDIS_HANDLE ctx, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params, NDK_ADAPTER **out)
{
    struct vb_device *dev = ctx;
    struct ndk_prov_adapter *base;
    struct vb_adapter *ad;
    NDIS_STATUS st = ndk_prov_adapter_open(&vb_adapter_kind, &dev->adapters, atomic_load(&dev->enabled), params,
                                           out, &base);

    if (st != NDIS_STATUS_SUCCESS)
        return st;
    ad = ndk_container_of(base, struct vb_adapter, base);
    ad->dev = dev;
    pthread_mutex_init(&ad->lock, NULL);
    ndk_list_init(&ad->lams);
    return st;
}

/* Blocks until every object of the instance has finished (§8 item 1 decision, as iwarp); never
 * from an NDK callback. */
void vb_adapter_close(NDIS_HANDLE ctx, NDK_ADAPTER *a)
{
    struct vb_device *dev = ctx;
    struct vb_adapter *ad = to_vb_adapter(a);

    if (vb_progress_on_thread(dev))
        vb_err(dev, "CloseNDKAdapterHandler called from inside an NDK callback: this deadlocks (§5.1)");
    ndk_prov_adapter_drain(&ad->base);
    pthread_mutex_lock(&ad->lock);
    while (!ndk_list_empty(&ad->lams)) {
        struct vb_lam *l = ndk_list_entry(ad->lams.next, struct vb_lam, link);
        ndk_list_del(&l->link);
        free(l);
    }
    pthread_mutex_unlock(&ad->lock);
    pthread_mutex_destroy(&ad->lock);
    ndk_prov_adapter_close(&ad->base);
}
