/* ndk_prov_pd.c - the protection domain's NDK face (§2.5). */
#include "ndk_prov_pd.h"

#include <errno.h>

#include "ndk_prov_adapter.h"
#include "ndk_status.h"

NTSTATUS ndk_prov_pd_create(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_PD **out)
{
    struct ndk_prov_adapter *ad = ndk_container_of(a, struct ndk_prov_adapter, ndk);

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    return ndk_status_from_errno(ad->kind->pd_new(ad, out));
}

NTSTATUS ndk_prov_pd_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    struct ndk_prov_obj *o = (struct ndk_prov_obj *)((char *)h + sizeof(struct ndk_prov_handle));

    return ndk_prov_obj_close(o, cb, ctx);
}

VOID ndk_prov_pd_privileged_token(NDK_PD *pd, UINT32 *token)
{
    (void)pd;
    if (token)
        *token = NDK_PROV_PD_PRIVILEGED_TOKEN;
}
