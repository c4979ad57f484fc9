/* mr.c - memory regions (§2.6, map §1.3): NdkRegisterMr is ibv_reg_mr over the MDL chain's
 * contiguous span; a fast-register MR holds no registration of its pages until NdkFastRegister
 * makes one (user-space verbs has no FRWR: option B of the mapping) and an invalidate drops it.
 * Its tokens are minted at NdkInitializeFastRegisterMr (token.c), so they are valid and stable
 * from then on as §2.6 requires. */
#include "verbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* NDK rights to verbs access bits: remote write needs local write in verbs; an iWARP read sink
 * needs remote write (Read Responses are tagged writes); MW_BIND where windows exist. */
int vb_mr_access(ULONG f, bool iwarp, bool mw)
{
    int a = 0;

    if (f & NDK_MR_FLAG_ALLOW_LOCAL_WRITE)
        a |= IBV_ACCESS_LOCAL_WRITE;
    if (f & NDK_MR_FLAG_ALLOW_REMOTE_READ)
        a |= IBV_ACCESS_REMOTE_READ;
    if ((f & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == NDK_MR_FLAG_ALLOW_REMOTE_WRITE)
        a |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (f & NDK_MR_FLAG_RDMA_READ_SINK)
        a |= IBV_ACCESS_LOCAL_WRITE | (iwarp ? IBV_ACCESS_REMOTE_WRITE : 0);
    if (mw)
        a |= IBV_ACCESS_MW_BIND;
    return a;
}

/* mr->lock held, or the MR not yet shared: what the system view shows of it (never a key or an
 * address): its PD, whether it is a fast-register MR, and the registered length. */
static void vb_mr_sv(struct vb_mr *mr, uint64_t len)
{
    struct ndk_sv_rec *r = mr->obj.sv;

    if (!r)
        return;
    ndk_sv_begin(r);
    r->u.mem.pd = vb_sv_id(mr->pd->obj.sv);
    r->u.mem.fast_register = mr->fast;
    r->u.mem.length = len;
    r->u.mem.bound = len != 0;
    ndk_sv_end(r);
}

static NTSTATUS vb_mr_register(NDK_MR *m, MDL *mdl, SIZE_T len, ULONG flags, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct vb_mr *mr = to_vb_mr(m);
    struct vb_device *dev = mr->obj.dev;
    struct ibv_mr *r;

    (void)cb;
    (void)ctx;
    if (mr->fast || !mdl || !len || len > NdkMdlChainByteCount(mdl) || !NdkMdlChainIsContiguous(mdl, len) ||
        len > dev->info.MaxRegistrationSize)
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&mr->lock);
    if (mr->mr) {
        pthread_mutex_unlock(&mr->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    r = ibv_reg_mr(mr->pd->pd, MmGetMdlVirtualAddress(mdl), len, vb_mr_access(flags, dev->iwarp, dev->has_mw2));
    if (!r) {
        int err = errno ? errno : ENOMEM;
        pthread_mutex_unlock(&mr->lock);
        vb_memlock_explain(dev, "NdkRegisterMr", len, err);
        return err == EFAULT ? STATUS_ACCESS_VIOLATION : vb_status_from_errno(err);
    }
    mr->mr = r;
    mr->access = vb_mr_access(flags, dev->iwarp, dev->has_mw2);
    vb_mr_sv(mr, len);
    pthread_mutex_unlock(&mr->lock);
    return STATUS_SUCCESS;
}

static NTSTATUS vb_mr_deregister(NDK_MR *m, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct vb_mr *mr = to_vb_mr(m);
    NTSTATUS st = STATUS_SUCCESS;

    (void)cb;
    (void)ctx;
    pthread_mutex_lock(&mr->lock);
    if (!mr->mr || mr->fast)
        st = STATUS_INVALID_DEVICE_REQUEST;
    else if (mr->nmw)
        st = STATUS_INVALID_DEVICE_REQUEST;        /* windows still bound over it (§1.7) */
    else if (ibv_dereg_mr(mr->mr))
        st = vb_status_from_errno(errno);
    else {
        mr->mr = NULL;
        vb_mr_sv(mr, 0);
    }
    pthread_mutex_unlock(&mr->lock);
    return st;
}

/* win.c's renew of ph_mw (progress thread, win_lock held): its QP is being destroyed, so the
 * window goes, and with it the remote token; the registration under it has local rights only. */
static void vb_mr_win_renew(struct vb_win *w)
{
    struct vb_mr *mr = ndk_container_of(w, struct vb_mr, ph_win);
    struct vb_device *dev = mr->obj.dev;

    pthread_mutex_lock(&mr->lock);
    vb_rinv_take(dev, vb_win_swap(dev, mr->pd->pd, &mr->ph_mw));
    if (mr->mw_rkey)
        vb_rinv_take(dev, mr->mw_rkey);
    mr->mw_rkey = 0;
    mr->mw_backed = false;
    pthread_mutex_unlock(&mr->lock);
}

static NTSTATUS vb_mr_init_fast(NDK_MR *m, ULONG npages, BOOLEAN remote, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct vb_mr *mr = to_vb_mr(m);

    (void)cb;
    (void)ctx;
    if (!mr->fast || !npages)
        return STATUS_INVALID_PARAMETER;
    if (npages > VB_MAX_FRMR_PAGES)
        return STATUS_IMPLEMENTATION_LIMIT;
    pthread_mutex_lock(&mr->lock);
    if (!mr->ph) {
        /* The tokens (token.c): once per MR, as the initialisation may be repeated (§2.6). */
        struct ibv_mr *ph = vb_token_placeholder(mr->obj.dev, mr->pd->pd);
        if (!ph) {
            int err = errno ? errno : ENOMEM;
            pthread_mutex_unlock(&mr->lock);
            return vb_status_from_errno(err);
        }
        if (mr->obj.dev->has_mw2 && !(mr->ph_mw = ibv_alloc_mw(mr->pd->pd, IBV_MW_TYPE_2))) {
            int err = errno ? errno : ENOMEM;
            ibv_dereg_mr(ph);
            pthread_mutex_unlock(&mr->lock);
            return vb_status_from_errno(err);
        }
        mr->ph = ph;
        vb_token_add(mr);
        if (mr->ph_mw)
            vb_win_add(mr->obj.dev, &mr->ph_win, vb_mr_win_renew);
    }
    mr->max_pages = npages;
    mr->remote = remote != FALSE;
    pthread_mutex_unlock(&mr->lock);
    return STATUS_SUCCESS;
}

/* mr->lock held: drops a window-backed MR's last registration. The device refuses while the
 * window is still bound over it (rxe_dereg_mr: -EINVAL with MWs bound), which is the case when
 * the consumer posted NdkInvalidate and this fast register back to back (§5.5: in send-queue
 * order): then the registration is parked until its LOCAL_INV has run. A window never
 * invalidated makes the new bind fail on the device, as a fast register of a valid MR does.
 * Returns 0 or -EBUSY. */
static int vb_mr_retire(struct vb_mr *mr)
{
    int k = 0;

    for (int i = 0; i < mr->nstale; i++)
        if (ibv_dereg_mr(mr->stale[i]))
            mr->stale[k++] = mr->stale[i];
    mr->nstale = k;
    if (!mr->mr)
        return 0;
    if (!mr->mw_backed)
        return -EBUSY;      /* still registered: NDK requires an invalidate first (§5.10) */
    if (ibv_dereg_mr(mr->mr)) {
        if (mr->nstale == VB_MR_STALE)
            return -EBUSY;
        mr->stale[mr->nstale++] = mr->mr;
    }
    mr->mr = NULL;
    mr->mw_backed = false;
    return 0;
}

/* Posting thread: replaces the fast-register MR's registration, addressed at iova; SGEs carrying
 * the MR's local token are shifted by delta (a label base the device cannot take, post.c).
 * With mw (remote access on a device with type-2 windows) the registration gets local rights
 * and MW_BIND only, the caller binds ph_mw over it with the remote ones (vb_mr_bind_wr).
 * Returns 0 or -errno. */
int vb_mr_fast_register(struct vb_mr *mr, uintptr_t va, size_t len, uint64_t iova, int64_t delta, ULONG flags, bool mw)
{
    struct vb_device *dev = mr->obj.dev;
    ULONG f = 0;
    struct ibv_mr *r;
    int err;

    if (flags & NDK_OP_FLAG_ALLOW_LOCAL_WRITE)
        f |= NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
    if (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ)
        f |= NDK_MR_FLAG_ALLOW_REMOTE_READ;
    if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE)
        f |= NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
    if (flags & NDK_OP_FLAG_RDMA_READ_SINK)
        f |= NDK_MR_FLAG_RDMA_READ_SINK;
    if (mw)     /* the window carries the remote rights; a remote-write window needs local write */
        f = (f & ~(ULONG)(NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE)) |
            ((f & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == NDK_MR_FLAG_ALLOW_REMOTE_WRITE ? NDK_MR_FLAG_ALLOW_LOCAL_WRITE : 0);
    pthread_mutex_lock(&mr->lock);
    if (!mr->ph || (mw && !mr->ph_mw)) {
        pthread_mutex_unlock(&mr->lock);
        return -EINVAL;     /* not initialised (§2.6 NdkInitializeFastRegisterMr) */
    }
    if ((err = vb_mr_retire(mr)) != 0) {
        pthread_mutex_unlock(&mr->lock);
        return err;
    }
    /* The peer addresses the region by BaseVirtualAddress (a label): the registration's iova. */
    r = ibv_reg_mr_iova2(mr->pd->pd, (void *)va, len, iova, (unsigned)vb_mr_access(f, dev->iwarp, mw));
    if (!r) {
        err = errno ? errno : ENOMEM;
        pthread_mutex_unlock(&mr->lock);
        vb_memlock_explain(dev, "NdkFastRegister", len, err);
        return -err;
    }
    mr->mr = r;
    mr->mw_backed = mw;
    mr->access = vb_mr_access(f, dev->iwarp, mw);
    vb_token_set(mr, r->lkey, delta);
    vb_mr_sv(mr, len);
    pthread_mutex_unlock(&mr->lock);
    return 0;
}

/* Posting thread, after vb_mr_fast_register(mw), dev->win_lock held until the bind is posted:
 * the bind of ph_mw over the new registration [iova, iova+len) with the remote rights of flags;
 * the key takes effect once posted. */
void vb_mr_bind_wr(struct vb_mr *mr, uint64_t iova, size_t len, ULONG flags, struct ibv_send_wr *t)
{
    unsigned acc = 0;

    if (flags & NDK_OP_FLAG_ALLOW_REMOTE_READ)
        acc |= IBV_ACCESS_REMOTE_READ;
    if ((flags & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE)
        acc |= IBV_ACCESS_REMOTE_WRITE;
    memset(t, 0, sizeof(*t));
    t->opcode = IBV_WR_BIND_MW;
    pthread_mutex_lock(&mr->lock);
    t->bind_mw.mw = mr->ph_mw;
    t->bind_mw.rkey = ibv_inc_rkey(mr->ph_mw->rkey);
    t->bind_mw.bind_info.mr = mr->mr;
    if (mr->mw_rkey)
        vb_rinv_take(mr->obj.dev, mr->mw_rkey);
    vb_rinv_take(mr->obj.dev, t->bind_mw.rkey);
    pthread_mutex_unlock(&mr->lock);
    t->bind_mw.bind_info.addr = iova;
    t->bind_mw.bind_info.length = len;
    t->bind_mw.bind_info.mw_access_flags = acc;
}

/* Posting thread, dev->win_lock held: the bind of vb_mr_bind_wr was posted on qp (rkey) or
 * refused (0: the registration goes again). */
void vb_mr_bound(struct vb_mr *mr, struct vb_qp *qp, uint32_t rkey)
{
    pthread_mutex_lock(&mr->lock);
    if (rkey) {
        mr->ph_win.qp = qp;
        /* libibverbs leaves a type-2 window's key at its allocation value; the next bind names the
         * window by mw->rkey, which rxe checks against its current key (rxe_bind_mw). */
        mr->mw_rkey = rkey;
        mr->ph_mw->rkey = rkey;
    } else {
        if (mr->ph)
            vb_token_set(mr, mr->ph->lkey, 0);
        if (mr->mr && !ibv_dereg_mr(mr->mr))
            mr->mr = NULL;
        mr->mw_backed = false;
        vb_mr_sv(mr, 0);
    }
    pthread_mutex_unlock(&mr->lock);
}

/* The local side of NdkInvalidate. A window-backed registration stays until its window is
 * unbound (the caller posts the LOCAL_INV; *rkey gets the window's key, else 0). */
int vb_mr_invalidate(struct vb_mr *mr, uint32_t *rkey)
{
    int err = 0;

    *rkey = 0;
    pthread_mutex_lock(&mr->lock);
    if (mr->ph)
        vb_token_set(mr, mr->ph->lkey, 0);
    if (mr->mr && mr->mw_backed)
        *rkey = mr->mw_rkey;
    else if (mr->mr && ibv_dereg_mr(mr->mr))
        err = -errno;
    else
        mr->mr = NULL;
    if (!err)
        vb_mr_sv(mr, 0);
    pthread_mutex_unlock(&mr->lock);
    return err;
}

static UINT32 vb_mr_remote_token(NDK_MR *m)
{
    struct vb_mr *mr = to_vb_mr(m);
    UINT32 t;

    pthread_mutex_lock(&mr->lock);
    t = mr->mr && mr->mw_backed ? mr->mw_rkey : mr->mr ? mr->mr->rkey : mr->ph_mw ? mr->ph_mw->rkey
      : mr->ph ? mr->ph->rkey : 0;
    pthread_mutex_unlock(&mr->lock);
    return t;
}

static UINT32 vb_mr_local_token(NDK_MR *m)
{
    struct vb_mr *mr = to_vb_mr(m);
    UINT32 t;

    pthread_mutex_lock(&mr->lock);
    t = mr->fast ? (mr->ph ? mr->ph->lkey : 0) : mr->mr ? mr->mr->lkey : 0;
    pthread_mutex_unlock(&mr->lock);
    return t;
}

static void vb_mr_destroy(struct vb_obj *o)
{
    struct vb_mr *mr = ndk_container_of(o, struct vb_mr, obj);

    vb_obj_sv_free(o);
    if (mr->mw_rkey)
        vb_rinv_take(o->dev, mr->mw_rkey);
    /* The window first: a registration with a window bound over it cannot go (rxe_dereg_mr). */
    vb_win_del(o->dev, &mr->ph_win);
    if (mr->ph_mw && ibv_dealloc_mw(mr->ph_mw))
        vb_err(o->dev, "ibv_dealloc_mw (token placeholder): %s", strerror(errno));
    if (mr->mr && ibv_dereg_mr(mr->mr))
        vb_err(o->dev, "ibv_dereg_mr: %s", strerror(errno));
    for (int i = 0; i < mr->nstale; i++)
        if (ibv_dereg_mr(mr->stale[i]))
            vb_err(o->dev, "ibv_dereg_mr (retired registration): %s", strerror(errno));
    vb_token_del(mr);
    if (mr->ph && ibv_dereg_mr(mr->ph))
        vb_err(o->dev, "ibv_dereg_mr (token placeholder): %s", strerror(errno));
    pthread_mutex_destroy(&mr->lock);
    free(mr);
}

static const struct vb_obj_ops vb_mr_ops = { .destroy = vb_mr_destroy };

static NTSTATUS vb_mr_close(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return vb_obj_close(&to_vb_mr((NDK_MR *)h)->obj, cb, ctx);
}

static const NDK_MR_DISPATCH vb_mr_dispatch = {
    .NdkCloseMr = vb_mr_close,
    .NdkQueryExtension = vb_obj_query_extension,
    .NdkRegisterMr = vb_mr_register,
    .NdkDeregisterMr = vb_mr_deregister,
    .NdkInitializeFastRegisterMr = vb_mr_init_fast,
    .NdkGetRemoteTokenFromMr = vb_mr_remote_token,
    .NdkGetLocalTokenFromMr = vb_mr_local_token,
};

NTSTATUS vb_mr_create(NDK_PD *p, BOOLEAN fast, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MR **out)
{
    struct vb_pd *pd = to_vb_pd(p);
    struct vb_mr *mr;

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    mr = calloc(1, sizeof(*mr));
    if (!mr)
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_init(&mr->lock, NULL);
    mr->pd = pd;
    mr->fast = fast != FALSE;
    vb_obj_init(&mr->obj, &vb_mr_ops, VB_OBJ_MR, pd->obj.adapter, &mr->ndk.Header, &vb_mr_dispatch);
    vb_obj_set_ante(&mr->obj, 0, &pd->obj);
    vb_mr_sv(mr, 0);
    *out = &mr->ndk;
    return STATUS_SUCCESS;
}
