/* pd.c - protection domains (§2.5): ibv_alloc_pd, the child create functions, and the
 * privileged token (map §1.1): user-space verbs has no reserved lkey, so the token is a value no
 * device lkey takes here and SGEs carrying it are translated to a per-PD registration of the LAM
 * span that holds them, made on first use and kept until the PD closes. */
#include "verbs.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

struct vb_lam_mr {
    struct ndk_list link;
    uintptr_t va;
    size_t len;
    struct ibv_mr *mr;
};

static void vb_pd_destroy(struct vb_obj *o)
{
    struct vb_pd *pd = ndk_container_of(o, struct vb_pd, obj);

    vb_obj_sv_free(o);
    while (!ndk_list_empty(&pd->lam_mrs)) {
        struct vb_lam_mr *m = ndk_list_entry(pd->lam_mrs.next, struct vb_lam_mr, link);
        ndk_list_del(&m->link);
        ibv_dereg_mr(m->mr);
        free(m);
    }
    if (pd->pd && ibv_dealloc_pd(pd->pd))
        vb_err(o->dev, "ibv_dealloc_pd: %s", strerror(errno));
    pthread_mutex_destroy(&pd->lock);
    free(pd);
}

static const struct vb_obj_ops vb_pd_ops = { .destroy = vb_pd_destroy };

static const NDK_PD_DISPATCH vb_pd_dispatch = {
    .NdkClosePd = ndk_prov_pd_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkCreateMr = vb_mr_create,
    .NdkCreateMw = vb_mw_create,
    .NdkCreateSrq = vb_srq_create,
    .NdkCreateQp = vb_qp_create,
    .NdkCreateQpWithSrq = vb_qp_create_with_srq,
    .NdkGetPrivilegedMemoryRegionToken = ndk_prov_pd_privileged_token,
};

/* Any thread, no lock held; ibv_alloc_pd is a system call. A failure after vb_obj_init is undone
 * on the progress thread, like every verbs destroy. */
int vb_pd_new(struct ndk_prov_adapter *base, NDK_PD **out)
{
    struct vb_adapter *ad = ndk_container_of(base, struct vb_adapter, base);
    struct vb_pd *pd = calloc(1, sizeof(*pd));

    if (!pd)
        return -ENOMEM;
    pthread_mutex_init(&pd->lock, NULL);
    ndk_list_init(&pd->lam_mrs);
    vb_obj_init(&pd->obj, &vb_pd_ops, VB_OBJ_PD, ad, &pd->ndk.Header, &vb_pd_dispatch);
    pd->pd = ibv_alloc_pd(ad->dev->ctx);
    if (!pd->pd) {
        int err = errno ? errno : ENOMEM;
        vb_obj_abort_create(&pd->obj);
        return -err;
    }
    *out = &pd->ndk;
    return 0;
}

/* The lkey that covers a privileged-token SGE. Posting thread; takes pd->lock, may register
 * (a syscall) on first use of a LAM span in this PD. */
int vb_pd_priv_lkey(struct vb_pd *pd, uintptr_t va, size_t len, uint32_t *lkey)
{
    struct ndk_list *pos;
    struct vb_lam_mr *m;
    uintptr_t sva;
    size_t slen;

    pthread_mutex_lock(&pd->lock);
    ndk_list_for_each(pos, &pd->lam_mrs) {
        m = ndk_list_entry(pos, struct vb_lam_mr, link);
        if (va >= m->va && va + len <= m->va + m->len) {
            *lkey = m->mr->lkey;
            pthread_mutex_unlock(&pd->lock);
            return 0;
        }
    }
    if (!vb_lam_find(pd->obj.adapter, va, len, &sva, &slen)) {
        pthread_mutex_unlock(&pd->lock);
        return -EACCES;
    }
    m = calloc(1, sizeof(*m));
    if (m)
        m->mr = ibv_reg_mr(pd->pd, (void *)sva, slen, IBV_ACCESS_LOCAL_WRITE);
    if (!m || !m->mr) {
        int err = errno ? errno : ENOMEM;
        free(m);
        pthread_mutex_unlock(&pd->lock);
        return -err;
    }
    m->va = sva;
    m->len = slen;
    ndk_list_add_tail(&pd->lam_mrs, &m->link);
    *lkey = m->mr->lkey;
    pthread_mutex_unlock(&pd->lock);
    return 0;
}
