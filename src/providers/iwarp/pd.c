/* pd.c - protection domains (§2.5): the parent of MRs, MWs, SRQs and QPs. A PD has no state of
 * its own beyond the object base; its close pends while any child lives (§5.1).
 *
 * Talks to: the creates its dispatch names: mem.c, srq.c, qp.c; obj.c. */
#include "iwarp.h"

#include <stdlib.h>

static void iw_pd_destroy(struct iw_obj *o)
{
    struct iw_pd *pd = ndk_container_of(o, struct iw_pd, obj);

    atomic_fetch_sub(&o->dev->npd, 1);
    free(pd);
}

static const struct iw_obj_ops iw_pd_ops = { .name = "PD", .destroy = iw_pd_destroy };

static NTSTATUS iw_close_pd(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_pd((NDK_PD *)h)->obj, cb, ctx);
}

static VOID iw_get_privileged_token(NDK_PD *pd, UINT32 *token)
{
    /* §2.5: one local-only token; STag index 0 is never given to an MR or MW, so a peer can
     * never name it, and the data path treats SGEs carrying it as logical (= virtual)
     * addresses from a LAM. */
    (void)pd;
    if (token)
        *token = IW_PRIVILEGED_STAG;
}

static const NDK_PD_DISPATCH iw_pd_dispatch = {
    .NdkClosePd = iw_close_pd,
    .NdkQueryExtension = iw_query_extension,
    .NdkCreateMr = iw_create_mr,
    .NdkCreateMw = iw_create_mw,
    .NdkCreateSrq = iw_create_srq,
    .NdkCreateQp = iw_create_qp,
    .NdkCreateQpWithSrq = iw_create_qp_with_srq,
    .NdkGetPrivilegedMemoryRegionToken = iw_get_privileged_token,
};

NTSTATUS iw_create_pd(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_PD **out)
{
    struct iw_adapter *ad = to_iw_adapter(a);
    struct iw_pd *pd;

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    if (atomic_fetch_add(&ad->dev->npd, 1) >= IW_MAX_PD_COUNT) {
        atomic_fetch_sub(&ad->dev->npd, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    pd = calloc(1, sizeof(*pd));
    if (!pd) {
        atomic_fetch_sub(&ad->dev->npd, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    iw_obj_init(&pd->obj, &iw_pd_ops, IW_OBJ_PD, ad, &pd->ndk.Header, &iw_pd_dispatch);
    *out = &pd->ndk;
    return STATUS_SUCCESS;
}
