/* ndk_prov_adapter.c - NDK_ADAPTER instances (§2.2): negotiation, the instance list, the object
 * count and the blocking close. */
#include "ndk_prov_adapter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ndk_status.h"

void ndk_prov_adapter_list_init(struct ndk_prov_adapter_list *l)
{
    pthread_mutex_init(&l->lock, NULL);
    ndk_list_init(&l->head);
}

unsigned ndk_prov_adapter_list_destroy(struct ndk_prov_adapter_list *l)
{
    struct ndk_list *pos;
    unsigned n = 0;

    pthread_mutex_lock(&l->lock);
    ndk_list_for_each(pos, &l->head)
        n++;
    pthread_mutex_unlock(&l->lock);
    pthread_mutex_destroy(&l->lock);
    return n;
}

/* §2.2: the consumer names a major and the lowest minor it accepts; the instance runs at our
 * highest minor of that major. Returns 0, or -EPROTONOSUPPORT (NDIS_STATUS_BAD_VERSION). */
static int ndk_prov_adapter_negotiate(const struct ndk_prov_adapter_kind *k, NDK_VERSION req, NDK_VERSION *out)
{
    if (req.Major < 1 || req.Major > 2 || req.Minor > k->minor_max[req.Major - 1])
        return -EPROTONOSUPPORT;
    out->Major = req.Major;
    out->Minor = k->minor_max[req.Major - 1];
    return 0;
}

void ndk_prov_adapter_init(struct ndk_prov_adapter *ad, const struct ndk_prov_adapter_kind *k, NDK_VERSION v)
{
    ad->version = v;
    ad->kind = k;
    ad->hooks = k->hooks;
    ad->list = NULL;
    ndk_list_init(&ad->link);
    pthread_mutex_init(&ad->lock, NULL);
    pthread_cond_init(&ad->cond, NULL);
    ad->nobj = 0;
    ad->ndk.Header.Version = v;
    ad->ndk.Header.ObjectType = NdkObjectTypeAdapter;
    ad->ndk.Dispatch = k->dispatch;
}

NDIS_STATUS ndk_prov_adapter_open(const struct ndk_prov_adapter_kind *k, struct ndk_prov_adapter_list *l,
                                  const NDK_ADAPTER_INFO *info, bool enabled, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params,
                                  NDK_ADAPTER **out, struct ndk_prov_adapter **adp)
{
    struct ndk_prov_adapter *ad;
    NDK_VERSION v;

    if (!params || !out)
        return NDIS_STATUS_INVALID_PARAMETER;
    if (!enabled)
        return NDIS_STATUS_ADAPTER_NOT_READY;
    if (ndk_prov_adapter_negotiate(k, params->Version, &v) < 0)
        return NDIS_STATUS_BAD_VERSION;
    ad = calloc(1, k->size);
    if (!ad)
        return NDIS_STATUS_RESOURCES;
    ndk_prov_adapter_init(ad, k, v);
    ad->info = info;
    ad->list = l;
    pthread_mutex_lock(&l->lock);
    ndk_list_add_tail(&l->head, &ad->link);
    pthread_mutex_unlock(&l->lock);
    *out = &ad->ndk;
    *adp = ad;
    return NDIS_STATUS_SUCCESS;
}

void ndk_prov_adapter_drain(struct ndk_prov_adapter *ad)
{
    pthread_mutex_lock(&ad->lock);
    while (ad->nobj)
        pthread_cond_wait(&ad->cond, &ad->lock);
    pthread_mutex_unlock(&ad->lock);
}

void ndk_prov_adapter_close(struct ndk_prov_adapter *ad)
{
    ndk_prov_adapter_drain(ad);
    if (ad->list) {
        pthread_mutex_lock(&ad->list->lock);
        ndk_list_del(&ad->link);
        pthread_mutex_unlock(&ad->list->lock);
    }
    pthread_cond_destroy(&ad->cond);
    pthread_mutex_destroy(&ad->lock);
    free(ad);
}

void ndk_prov_adapter_hold(struct ndk_prov_adapter *ad)
{
    pthread_mutex_lock(&ad->lock);
    ad->nobj++;
    pthread_mutex_unlock(&ad->lock);
}

void ndk_prov_adapter_release(struct ndk_prov_adapter *ad)
{
    pthread_mutex_lock(&ad->lock);
    if (--ad->nobj == 0)
        pthread_cond_broadcast(&ad->cond);
    pthread_mutex_unlock(&ad->lock);
}

NTSTATUS ndk_prov_adapter_query_info(NDK_ADAPTER *a, NDK_ADAPTER_INFO *info, ULONG *size)
{
    struct ndk_prov_adapter *ad = ndk_container_of(a, struct ndk_prov_adapter, ndk);
    ULONG full = (ULONG)sizeof(NDK_ADAPTER_INFO);
    NDK_ADAPTER_INFO tmp;

    if (!size)
        return STATUS_INVALID_PARAMETER;
    tmp = *ad->info;
    tmp.Version = ad->version;
    if (ad->version.Major == 1 && ad->version.Minor < 2)
        tmp.AdapterFlags &= ~(ULONG)NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED;
    if (info && *size >= full) {
        *info = tmp;
        *size = full;
        return STATUS_SUCCESS;
    }
    if (info && *size >= NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY) {
        memcpy(info, &tmp, NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY);
        *size = NDK_ADAPTER_INFO_SIZE_WITHOUT_TECHNOLOGY;
        return STATUS_SUCCESS;
    }
    *size = full;
    return STATUS_BUFFER_TOO_SMALL;
}
