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
    tmp.Version = ad->version;
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

/* §2.2: the consumer names a major and the lowest minor it accepts; we run our highest minor. */
static int vb_adapter_negotiate(NDK_VERSION req, NDK_VERSION *out)
{
    USHORT max;

    if (req.Major == 1)
        max = VB_VERSION_1_MINOR_MAX;
    else if (req.Major == 2)
        max = VB_VERSION_2_MINOR_MAX;
    else
        return -1;
    if (req.Minor > max)
        return -1;
    out->Major = req.Major;
    out->Minor = max;
    return 0;
}

NDIS_STATUS vb_adapter_open(NDIS_HANDLE ctx, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params, NDK_ADAPTER **out)
{
    struct vb_device *dev = ctx;
    struct vb_adapter *ad;
    NDK_VERSION v;

    if (!params || !out)
        return NDIS_STATUS_INVALID_PARAMETER;
    if (!atomic_load(&dev->enabled))
        return NDIS_STATUS_ADAPTER_NOT_READY;
    if (vb_adapter_negotiate(params->Version, &v) < 0)
        return NDIS_STATUS_BAD_VERSION;
    ad = calloc(1, sizeof(*ad));
    if (!ad)
        return NDIS_STATUS_RESOURCES;
    ad->dev = dev;
    ad->version = v;
    pthread_mutex_init(&ad->lock, NULL);
    pthread_cond_init(&ad->cond, NULL);
    ndk_list_init(&ad->lams);
    ad->ndk.Header.Version = v;
    ad->ndk.Header.ObjectType = NdkObjectTypeAdapter;
    ad->ndk.Dispatch = &vb_adapter_dispatch;
    pthread_mutex_lock(&dev->lock);
    ndk_list_add_tail(&dev->adapters, &ad->link);
    pthread_mutex_unlock(&dev->lock);
    *out = &ad->ndk;
    return NDIS_STATUS_SUCCESS;
}

/* Blocks until every object of the instance has finished (§8 item 1 decision, as iwarp). */
void vb_adapter_close(NDIS_HANDLE ctx, NDK_ADAPTER *a)
{
    struct vb_device *dev = ctx;
    struct vb_adapter *ad = to_vb_adapter(a);

    if (vb_progress_on_thread(dev))
        vb_err(dev, "CloseNDKAdapterHandler called from inside an NDK callback: this deadlocks (§5.1)");
    pthread_mutex_lock(&ad->lock);
    while (ad->nobj)
        pthread_cond_wait(&ad->cond, &ad->lock);
    while (!ndk_list_empty(&ad->lams)) {
        struct vb_lam *l = ndk_list_entry(ad->lams.next, struct vb_lam, link);
        ndk_list_del(&l->link);
        free(l);
    }
    pthread_mutex_unlock(&ad->lock);
    pthread_mutex_lock(&dev->lock);
    ndk_list_del(&ad->link);
    pthread_mutex_unlock(&dev->lock);
    pthread_cond_destroy(&ad->cond);
    pthread_mutex_destroy(&ad->lock);
    free(ad);
}
