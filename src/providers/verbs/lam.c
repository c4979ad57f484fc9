/* lam.c - NdkBuildLAM / NdkReleaseLAM (§2.3, map §1.3). User space has no bus addresses: as in
 * the iwarp provider a page's logical address is its virtual address. Each LAM's span is kept
 * so that privileged-token SGEs (map §1.1) and fast registers can find the memory behind it. */
#include "verbs.h"

#include "ndk_prov_lam.h"

#include <stdlib.h>

NTSTATUS vb_lam_build(NDK_ADAPTER *a, MDL *mdl, SIZE_T len, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx,
                      NDK_LOGICAL_ADDRESS_MAPPING *lam, ULONG *lam_size, ULONG *fbo)
{
    struct vb_adapter *ad = to_vb_adapter(a);
    struct vb_lam *rec;
    NTSTATUS st;

    (void)cb;   /* always inline (§8.18 allows a NULL completion) */
    (void)ctx;
    st = ndk_prov_lam_fill(ad, mdl, len, lam, lam_size, fbo);
    if (st != STATUS_SUCCESS)
        return st;
    rec = calloc(1, sizeof(*rec));
    if (!rec)
        return STATUS_INSUFFICIENT_RESOURCES;
    rec->lam = lam;
    rec->va = (uintptr_t)lam->AdapterPageArray[0].QuadPart;
    rec->len = (size_t)lam->AdapterPageCount * PAGE_SIZE;
    pthread_mutex_lock(&ad->lock);
    ndk_list_add_tail(&ad->lams, &rec->link);
    pthread_mutex_unlock(&ad->lock);
    return STATUS_SUCCESS;
}

void vb_lam_release(NDK_ADAPTER *a, NDK_LOGICAL_ADDRESS_MAPPING *lam)
{
    struct vb_adapter *ad = to_vb_adapter(a);
    struct ndk_list *pos;

    pthread_mutex_lock(&ad->lock);
    ndk_list_for_each(pos, &ad->lams) {
        struct vb_lam *l = ndk_list_entry(pos, struct vb_lam, link);
        if (l->lam == lam) {
            ndk_list_del(&l->link);
            pthread_mutex_unlock(&ad->lock);
            free(l);
            return;
        }
    }
    pthread_mutex_unlock(&ad->lock);
    vb_warn(ad->dev, "NdkReleaseLAM: LAM %p was not built by this adapter", (void *)lam);
}

/* The LAM span holding [va, va+len), if any. Any thread; takes ad->lock. */
bool vb_lam_find(struct vb_adapter *ad, uintptr_t va, size_t len, uintptr_t *span_va, size_t *span_len)
{
    struct ndk_list *pos;
    bool found = false;

    pthread_mutex_lock(&ad->lock);
    ndk_list_for_each(pos, &ad->lams) {
        struct vb_lam *l = ndk_list_entry(pos, struct vb_lam, link);
        if (va >= l->va && va + len <= l->va + l->len) {
            *span_va = l->va;
            *span_len = l->len;
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&ad->lock);
    return found;
}
