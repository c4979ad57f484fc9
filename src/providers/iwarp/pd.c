/* pd.c - protection domains (§2.5): the parent of MRs, MWs, SRQs and QPs. A PD has no state of
 * its own beyond the object base; its close pends while any child lives (§5.1).
 *
 * NdkCreatePd, NdkClosePd and the privileged token are src/common/ndk_prov_pd's.
 *
 * Talks to: the creates its dispatch names: mem.c, srq.c, qp.c; obj.c. */
#include "iwarp.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

static void iw_pd_destroy(struct iw_obj *o)
{
    struct iw_pd *pd = ndk_container_of(o, struct iw_pd, obj);

    atomic_fetch_sub(&o->dev->npd, 1);
    free(pd);
}

static const struct iw_obj_ops iw_pd_ops = { .name = "PD", .destroy = iw_pd_destroy };

static const NDK_PD_DISPATCH iw_pd_dispatch = {
    .NdkClosePd = ndk_prov_pd_close,
    .NdkQueryExtension = iw_query_extension,
    .NdkCreateMr = iw_create_mr,
    .NdkCreateMw = iw_create_mw,
    .NdkCreateSrq = iw_create_srq,
    .NdkCreateQp = iw_create_qp,
    .NdkCreateQpWithSrq = iw_create_qp_with_srq,
    /* §2.5: one local-only token; STag index 0 is never given to an MR or MW, so a peer can never
     * name it, and the data path treats SGEs carrying it as logical (= virtual) addresses from a
     * LAM. */
    .NdkGetPrivilegedMemoryRegionToken = ndk_prov_pd_privileged_token,
};

/* Any thread, no lock held. The count is taken first so that racing creates never pass the cap. */
int iw_pd_new(struct ndk_prov_adapter *base, NDK_PD **out)
{
    struct iw_adapter *ad = ndk_container_of(base, struct iw_adapter, base);
    struct iw_pd *pd;

    if (atomic_fetch_add(&ad->dev->npd, 1) >= IW_MAX_PD_COUNT) {
        atomic_fetch_sub(&ad->dev->npd, 1);
        return -ENOMEM;
    }
    pd = calloc(1, sizeof(*pd));
    if (!pd) {
        atomic_fetch_sub(&ad->dev->npd, 1);
        return -ENOMEM;
    }
    iw_obj_init(&pd->obj, &iw_pd_ops, IW_OBJ_PD, ad, &pd->ndk.Header, &iw_pd_dispatch);
    *out = &pd->ndk;
    return 0;
}
