/* mw.c - memory windows (§2.7, map §1.3): type-2 windows where the device has them (rxe, mlx5,
 * irdma). Elsewhere (siw: no MWs at all) a window is emulated: NdkBind registers the bound range
 * as its own MR with the window's rights, whose rkey is the window token, and NdkInvalidate
 * deregisters it. The device then enforces bounds and rights as for a real window; the costs are
 * a registration per bind and that a peer's Send-with-Invalidate cannot end it (libsiw does not
 * report remote invalidation anyway, map §1.6). Unbound, the window's token is the rkey of a
 * placeholder registration without rights (token.c): a real key of this window alone, so two
 * windows never share a token and none names the privileged region (§2.5). */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static UINT32 vb_mw_remote_token(NDK_MW *w)
{
    return atomic_load(&to_vb_mw(w)->rkey);
}

/* What the system view shows of a window (never its token or the bound address): its PD and
 * the bound length, 0 when unbound. Writers: the window's create, and its binds and
 * invalidations, which the consumer does not race (one binding at a time, §2.7); emulated
 * windows call it under mw->lock. */
void vb_mw_sv(struct vb_mw *mw, uint64_t len)
{
    struct ndk_sv_rec *r = mw->obj.sv;

    if (!r)
        return;
    ndk_sv_begin(r);
    r->u.mem.pd = vb_sv_id(mw->pd->obj.sv);
    r->u.mem.length = len;
    r->u.mem.bound = len != 0;
    ndk_sv_end(r);
}

/* Posting thread: (re)binds an emulated window. Returns 0 or -errno. */
int vb_mw_emu_bind(struct vb_mw *mw, void *va, size_t len, int access)
{
    struct ibv_mr *mr = ibv_reg_mr(mw->pd->pd, va, len, access | (access ? IBV_ACCESS_LOCAL_WRITE : 0));
    struct ibv_mr *old;

    if (!mr)
        return -(errno ? errno : ENOMEM);
    pthread_mutex_lock(&mw->lock);
    old = mw->emu;
    mw->emu = mr;
    atomic_store(&mw->rkey, mr->rkey);
    vb_mw_sv(mw, len);
    pthread_mutex_unlock(&mw->lock);
    if (old)
        ibv_dereg_mr(old);
    return 0;
}

void vb_mw_emu_invalidate(struct vb_mw *mw)
{
    struct ibv_mr *old;

    pthread_mutex_lock(&mw->lock);
    old = mw->emu;
    mw->emu = NULL;
    if (mw->ph)
        atomic_store(&mw->rkey, mw->ph->rkey);
    vb_mw_sv(mw, 0);
    pthread_mutex_unlock(&mw->lock);
    if (old)
        ibv_dereg_mr(old);
}

/* win.c's renew (progress thread, win_lock held): the QP the window was last bound through is
 * being destroyed; a fresh unbound window takes its place, so the token changes. */
static void vb_mw_win_renew(struct vb_win *w)
{
    struct vb_mw *mw = ndk_container_of(w, struct vb_mw, win);
    struct vb_device *dev = mw->obj.dev;

    pthread_mutex_lock(&mw->lock);
    vb_rinv_take(dev, atomic_load(&mw->rkey));
    vb_rinv_take(dev, vb_win_swap(dev, mw->pd->pd, &mw->mw));
    atomic_store(&mw->rkey, mw->mw ? mw->mw->rkey : 0);
    vb_mw_sv(mw, 0);
    pthread_mutex_unlock(&mw->lock);
}

static void vb_mw_destroy(struct vb_obj *o)
{
    struct vb_mw *mw = ndk_container_of(o, struct vb_mw, obj);

    vb_obj_sv_free(o);
    vb_win_del(o->dev, &mw->win);
    if (mw->mw)
        vb_rinv_take(o->dev, atomic_load(&mw->rkey));
    if (mw->mw && ibv_dealloc_mw(mw->mw))
        vb_err(o->dev, "ibv_dealloc_mw: %s", strerror(errno));
    vb_mw_emu_invalidate(mw);
    if (mw->ph && ibv_dereg_mr(mw->ph))
        vb_err(o->dev, "ibv_dereg_mr (window placeholder): %s", strerror(errno));
    pthread_mutex_destroy(&mw->lock);
    free(mw);
}

static const struct vb_obj_ops vb_mw_ops = { .destroy = vb_mw_destroy };

static NTSTATUS vb_mw_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return vb_obj_close(&to_vb_mw((NDK_MW *)h)->obj, cb, ctx);
}

static const NDK_MW_DISPATCH vb_mw_dispatch = {
    .NdkCloseMw = vb_mw_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkGetRemoteTokenFromMw = vb_mw_remote_token,
};

NTSTATUS vb_mw_create(NDK_PD *p, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MW **out)
{
    struct vb_pd *pd = to_vb_pd(p);
    struct vb_mw *mw;

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    mw = calloc(1, sizeof(*mw));
    if (!mw)
        return STATUS_INSUFFICIENT_RESOURCES;
    mw->pd = pd;
    pthread_mutex_init(&mw->lock, NULL);
    vb_obj_init(&mw->obj, &vb_mw_ops, VB_OBJ_MW, pd->obj.adapter, &mw->ndk.Header, &vb_mw_dispatch);
    vb_obj_set_ante(&mw->obj, 0, &pd->obj);
    vb_mw_sv(mw, 0);
    if (!pd->obj.dev->has_mw2) {
        mw->ph = vb_token_placeholder(pd->obj.dev, pd->pd);
        if (!mw->ph) {
            int err = errno ? errno : ENOMEM;
            vb_obj_abort_create(&mw->obj);
            return vb_status_from_errno(err);
        }
        atomic_init(&mw->rkey, mw->ph->rkey);
        *out = &mw->ndk;
        return STATUS_SUCCESS;
    }
    mw->mw = ibv_alloc_mw(pd->pd, IBV_MW_TYPE_2);
    if (!mw->mw) {
        int err = errno ? errno : ENOMEM;
        vb_obj_abort_create(&mw->obj);
        return vb_status_from_errno(err);
    }
    atomic_init(&mw->rkey, mw->mw->rkey);
    vb_win_add(pd->obj.dev, &mw->win, vb_mw_win_renew);
    *out = &mw->ndk;
    return STATUS_SUCCESS;
}
