/* ndk_prov_adapter: the NDK_ADAPTER instances a provider opens on one bound device (§2.2): version
 * negotiation, the instance list, the live-object count and the blocking close.
 *
 * The provider's adapter struct starts with struct ndk_prov_adapter (so the NDK_ADAPTER handed to
 * the consumer is the first byte of both) and keeps its own fields after it. */
#ifndef NDK_PROV_ADAPTER_H
#define NDK_PROV_ADAPTER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <ndisndk.h>
#include <ndkpi.h>

#include "ndk_list.h"
#include "ndk_prov_obj.h"

/* The open instances of one device. */
struct ndk_prov_adapter_list {
    pthread_mutex_t lock;             /* job: head. A leaf lock. */
    struct ndk_list head;
};

/* What a provider's adapter instances are: fixed per provider. */
struct ndk_prov_adapter_kind {
    USHORT minor_max[2];              /* highest minor of major 1 and of major 2 (§2.2) */
    const NDK_ADAPTER_DISPATCH *dispatch;
    const struct ndk_prov_obj_hooks *hooks;   /* for every object of the instance */
    size_t size;                      /* the provider's adapter struct, ndk_prov_adapter first */
    /* Makes a PD on the instance (ndk_prov_pd_create): 0 and *out, or -errno. Any thread. */
    int (*pd_new)(struct ndk_prov_adapter *ad, NDK_PD **out);
};

struct ndk_prov_adapter {
    NDK_ADAPTER ndk;                  /* first: handed to the consumer */
    NDK_VERSION version;              /* negotiated (§2.2); written into every object header */
    const struct ndk_prov_adapter_kind *kind;
    const struct ndk_prov_obj_hooks *hooks;   /* kind->hooks */
    const NDK_ADAPTER_INFO *info;     /* the device's limits at its highest version */
    struct ndk_prov_adapter_list *list;   /* NULL when not listed (an instance set up by hand) */
    struct ndk_list link;             /* in list->head */
    pthread_mutex_t lock;             /* job: nobj and the close wait. A leaf lock. */
    pthread_cond_t cond;
    unsigned nobj;                    /* live objects, a close in progress included */
};

/* Any thread that owns the list (device bind / unbind). */
void ndk_prov_adapter_list_init(struct ndk_prov_adapter_list *l);
/* Returns how many instances were still open (0 when the runtime closed them all first, as it
 * must before a halt). Device unbind; takes the list's lock. */
unsigned ndk_prov_adapter_list_destroy(struct ndk_prov_adapter_list *l);

/* Sets up an instance in memory the caller owns (header, dispatch, version, lock, count), not
 * listed. Any thread, no lock. */
void ndk_prov_adapter_init(struct ndk_prov_adapter *ad, const struct ndk_prov_adapter_kind *k, NDK_VERSION v);

/* OpenNDKAdapterHandler's common part: checks the parameters and the NDK state (enabled),
 * keeps info (the device's, it outlives the instance),
 * negotiates the version, allocates kind->size zeroed bytes, sets the instance up, lists it and
 * returns it in *out and *ad; the provider fills its own fields before returning. Returns
 * NDIS_STATUS_SUCCESS, _INVALID_PARAMETER, _ADAPTER_NOT_READY, _BAD_VERSION or _RESOURCES.
 * PASSIVE (any thread but a provider callback); takes the list's lock. */
NDIS_STATUS ndk_prov_adapter_open(const struct ndk_prov_adapter_kind *k, struct ndk_prov_adapter_list *l,
                                  const NDK_ADAPTER_INFO *info, bool enabled, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params,
                                  NDK_ADAPTER **out, struct ndk_prov_adapter **ad);

/* NdkQueryAdapterInfo (§2.3): the device's limits with the instance's version; an instance below
 * 1.2 does not see RDMA_READ_LOCAL_INVALIDATE (a 1.2 flag, §4); a buffer that ends before
 * RdmaTechnology (an older consumer, §8.38) gets that prefix. Any thread, no lock. */
NTSTATUS ndk_prov_adapter_query_info(NDK_ADAPTER *a, NDK_ADAPTER_INFO *info, ULONG *size);

/* Blocks until every object of the instance has finished, its close completion included (§5.1:
 * when the adapter close returns, every callback has returned). Never from a provider callback
 * (the finishes run there: it would wait for itself). Takes ad->lock. */
void ndk_prov_adapter_drain(struct ndk_prov_adapter *ad);

/* CloseNDKAdapterHandler's common part: drains, unlists and frees an instance that
 * ndk_prov_adapter_open made. Same context as drain; takes ad->lock, then the list's lock. */
void ndk_prov_adapter_close(struct ndk_prov_adapter *ad);

/* Counts an object on the instance / uncounts it (waking the close). Any thread; takes ad->lock. */
void ndk_prov_adapter_hold(struct ndk_prov_adapter *ad);
void ndk_prov_adapter_release(struct ndk_prov_adapter *ad);

#endif
