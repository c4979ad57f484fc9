/* adapter.c - NDK_ADAPTER instances opened on a bound device (§2.2, §2.3) over
 * src/common/ndk_prov_adapter (negotiation, NdkQueryAdapterInfo from the probed limits, the
 * blocking close): the dispatch table and the instance's LAM records. */
#include "verbs.h"

#include <stdlib.h>
#include <string.h>

static const NDK_ADAPTER_DISPATCH vb_adapter_dispatch = {
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkQueryAdapterInfo = ndk_prov_adapter_query_info,
    .NdkCreateCq = vb_cq_create,
    .NdkCreatePd = ndk_prov_pd_create,
    .NdkCreateSharedEndpoint = vb_sep_create,
    .NdkCreateConnector = vb_connector_create,
    .NdkCreateListener = vb_listener_create,
    .NdkBuildLAM = vb_lam_build,
    .NdkReleaseLAM = vb_lam_release,
};

/* The instance, then what its objects use. */
static const struct ndk_prov_adapter_kind vb_adapter_kind = {
    .minor_max = { VB_VERSION_1_MINOR_MAX, VB_VERSION_2_MINOR_MAX }, .size = sizeof(struct vb_adapter),
    .dispatch = &vb_adapter_dispatch, .hooks = &vb_obj_hooks, .pd_new = vb_pd_new,
};

/* PASSIVE, no lock held; takes the instance list's lock. */
NDIS_STATUS vb_adapter_open(NDIS_HANDLE ctx, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params, NDK_ADAPTER **out)
{
    struct vb_device *dev = ctx;
    struct ndk_prov_adapter *base;
    struct vb_adapter *ad;
    NDIS_STATUS st = ndk_prov_adapter_open(&vb_adapter_kind, &dev->adapters, &dev->info, atomic_load(&dev->enabled),
                                           params, out, &base);

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
