/* mem.c - memory regions and windows (§2.6, §2.7, §5.10) and the STag table.
 *
 * STag = 24-bit index << 8 | 8-bit key (the verbs layout; RFC 5040 leaves it to the RNIC). Index 0 is the
 * privileged token and is never allocated. A region's local token equals its remote token
 * (siw does the same); whether a peer may use it is decided by the access checks of the data
 * path. The core never dereferences a registered address: MDL virtual addresses are labels.
 *
 * Talks to: obj.c, progress.c (the deregistration completion), qp.c (an invalidation that waited
 * for placements in flight). Called by access.c, post.c, pd.c, tx.c. */
#include "iwarp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Gives o a token. dev->mem_lock taken inside. */
static int iw_mem_stag_alloc(struct iw_device *dev, struct iw_obj *o, uint32_t *stag)
{
    pthread_mutex_lock(&dev->mem_lock);
    int err = iw_stag_alloc(&dev->stags, o, stag);
    pthread_mutex_unlock(&dev->mem_lock);
    return err;
}

/* Frees the slot of stag if it still maps to o. dev->mem_lock taken inside. */
static void iw_mem_stag_free(struct iw_device *dev, uint32_t stag, struct iw_obj *o)
{
    pthread_mutex_lock(&dev->mem_lock);
    iw_stag_free(&dev->stags, stag, o);
    pthread_mutex_unlock(&dev->mem_lock);
}

uint32_t iw_mem_rekey(struct iw_device *dev, uint32_t stag)
{
    pthread_mutex_lock(&dev->mem_lock);
    uint32_t ns = iw_stag_rekey(&dev->stags, stag);
    pthread_mutex_unlock(&dev->mem_lock);
    return ns ? ns : stag;
}

int iw_mem_get(struct iw_device *dev, uint32_t stag, struct iw_obj **out, struct iw_mem_view *view)
{
    struct iw_obj *o;
    int err = -ENOENT;

    pthread_mutex_lock(&dev->mem_lock);
    if (!(o = iw_stag_find(&dev->stags, stag)) || iw_obj_closing(o))
        goto out;
    if (o->type == IW_OBJ_MR) {
        struct iw_mr *mr = ndk_container_of(o, struct iw_mr, obj);
        if (mr->stag != stag || !mr->registered)
            goto out;
        atomic_fetch_add(&mr->dma_users, 1);
        if (view)
            *view = (struct iw_mem_view){ mr->base_va, mr->length, mr->rights };
    } else {
        struct iw_mw *mw = ndk_container_of(o, struct iw_mw, obj);
        if (mw->stag != stag || !mw->bound)
            goto out;
        atomic_fetch_add(&mw->dma_users, 1);
        if (view)
            *view = (struct iw_mem_view){ mw->base_va, mw->length, mw->rights };
    }
    iw_obj_get(o);
    *out = o;
    err = 0;
out:
    pthread_mutex_unlock(&dev->mem_lock);
    return err;
}

static void iw_mr_dereg_work(struct iw_work *w)
{
    struct iw_mr *mr = ndk_container_of(w, struct iw_mr, dereg_work);
    NDK_FN_REQUEST_COMPLETION cb = mr->dereg_cb;

    mr->dereg_cb = NULL;
    if (cb)
        cb(mr->dereg_ctx, STATUS_SUCCESS);
    iw_obj_put(&mr->obj);
}

static atomic_int *iw_mem_users(struct iw_obj *o)
{
    return o->type == IW_OBJ_MR ? &ndk_container_of(o, struct iw_mr, obj)->dma_users
                                : &ndk_container_of(o, struct iw_mw, obj)->dma_users;
}

static struct iw_mem_inval *iw_mem_inval_of(struct iw_obj *o)
{
    return o->type == IW_OBJ_MR ? &ndk_container_of(o, struct iw_mr, obj)->inval
                                : &ndk_container_of(o, struct iw_mw, obj)->inval;
}

/* Progress thread: the last placement into the object ended; completes the invalidation that
 * waited for it, unless iw_mem_inval_wait took it back. Holds the reference taken by iw_mem_put. */
static void iw_mem_inval_work(struct iw_work *w)
{
    struct iw_mem_inval *inv = ndk_container_of(w, struct iw_mem_inval, work);
    struct iw_qp *qp = atomic_exchange(&inv->qp, NULL);

    if (qp) {
        iw_qp_sq_mem_released(qp, inv->obj);
        iw_obj_put(&qp->obj);
    }
    iw_obj_put(inv->obj);
}

static void iw_mem_inval_init(struct iw_mem_inval *inv, struct iw_obj *o)
{
    atomic_init(&inv->qp, NULL);
    inv->work.fn = iw_mem_inval_work;
    ndk_list_init(&inv->work.link);
    inv->obj = o;
}

void iw_mem_put(struct iw_obj *o)
{
    struct iw_device *dev = o->dev;
    bool done = false;
    /* Against iw_deregister_mr and iw_mem_inval_wait: each publishes its waiting, then reads
     * dma_users; we lower dma_users, then read what waits (all sequentially consistent), so at
     * least one of the two sides sees the other. For the deregister the recheck under mem_lock
     * lets only one complete; for an invalidation the exchange of inval.qp does. */
    bool last = atomic_fetch_sub(iw_mem_users(o), 1) == 1;

    if (last && o->type == IW_OBJ_MR) {
        struct iw_mr *mr = ndk_container_of(o, struct iw_mr, obj);
        if (atomic_load(&mr->dereg_waiting)) {
            pthread_mutex_lock(&dev->mem_lock);
            done = atomic_load(&mr->dereg_waiting) && atomic_load(&mr->dma_users) == 0;
            if (done)
                atomic_store(&mr->dereg_waiting, false);
            pthread_mutex_unlock(&dev->mem_lock);
        }
        if (done)
            iw_progress_queue(dev, &mr->dereg_work);   /* carries the ref taken by the deregister */
    }
    if (last) {
        struct iw_mem_inval *inv = iw_mem_inval_of(o);
        if (atomic_load(&inv->qp)) {
            iw_obj_get(o);
            if (!iw_progress_queue(dev, &inv->work))
                iw_obj_put(o);                         /* queued already: it holds one */
        }
    }
    iw_obj_put(o);
}

bool iw_mem_placing(struct iw_obj *o)
{
    return atomic_load(iw_mem_users(o)) != 0;
}

bool iw_mem_inval_wait(struct iw_qp *qp, struct iw_obj *o)
{
    struct iw_mem_inval *inv = iw_mem_inval_of(o);
    struct iw_qp *prev = NULL;

    /* Nothing in flight: none can start either, the token being invalid under mem_lock. */
    if (!atomic_load(iw_mem_users(o)))
        return false;
    iw_obj_get(&qp->obj);
    if (!atomic_compare_exchange_strong(&inv->qp, &prev, qp)) {
        iw_obj_put(&qp->obj);                          /* not the last reference: the caller's */
        return prev == qp;                             /* its work completes every one of qp's */
    }
    if (atomic_load(iw_mem_users(o)))
        return true;
    if (atomic_exchange(&inv->qp, NULL) == qp) {
        iw_obj_put(&qp->obj);
        return false;
    }
    return true;                                       /* the last user's work has it */
}

/* ---- the system view ---- */

void iw_mem_sv_describe_locked(struct iw_obj *o)
{
    struct ndk_sv_rec *r = iw_sv_desc(o);

    if (!r)
        return;
    ndk_sv_begin(r);
    r->u.mem.pd = iw_sv_id(iw_obj_ante(o, 0));
    if (o->type == IW_OBJ_MR) {
        struct iw_mr *mr = ndk_container_of(o, struct iw_mr, obj);
        r->u.mem.fast_register = mr->fast_register;
        r->u.mem.bound = mr->registered;
        r->u.mem.length = mr->registered ? mr->length : 0;
    } else {
        struct iw_mw *mw = ndk_container_of(o, struct iw_mw, obj);
        r->u.mem.bound = mw->bound;
        r->u.mem.length = mw->bound ? mw->length : 0;
    }
    ndk_sv_end(r);
}

/* ---- MR ---- */

static NTSTATUS iw_register_mr(NDK_MR *m, MDL *mdl, SIZE_T len, ULONG flags, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct iw_mr *mr = to_iw_mr(m);
    uint32_t stag;
    int err;

    (void)cb;
    (void)ctx;
    if (!mdl || !len || len > IW_MAX_REGISTRATION || (flags & ~0xFu))
        return STATUS_INVALID_PARAMETER;
    if (len > NdkMdlChainByteCount(mdl) || !NdkMdlChainIsContiguous(mdl, len))
        return STATUS_INVALID_PARAMETER;
    pthread_mutex_lock(&mr->lock);
    if (mr->fast_register || mr->registered || mr->dereg_cb) {
        pthread_mutex_unlock(&mr->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    mr->base_va = (uint64_t)(uintptr_t)MmGetMdlVirtualAddress(mdl);
    mr->length = len;
    mr->access = flags;
    mr->rights = iw_access_rights(flags, false, false);
    err = iw_mem_stag_alloc(mr->obj.dev, &mr->obj, &stag);
    if (!err) {
        pthread_mutex_lock(&mr->obj.dev->mem_lock);
        mr->stag = stag;
        mr->registered = true;
        iw_mem_sv_describe_locked(&mr->obj);
        pthread_mutex_unlock(&mr->obj.dev->mem_lock);
    }
    pthread_mutex_unlock(&mr->lock);
    return err ? STATUS_INSUFFICIENT_RESOURCES : STATUS_SUCCESS;
}

static NTSTATUS iw_deregister_mr(NDK_MR *m, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx)
{
    struct iw_mr *mr = to_iw_mr(m);
    struct iw_device *dev = mr->obj.dev;
    NTSTATUS st = STATUS_SUCCESS;

    pthread_mutex_lock(&mr->lock);
    if (mr->fast_register || !mr->registered) {
        pthread_mutex_unlock(&mr->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    iw_mem_stag_free(dev, mr->stag, &mr->obj);
    pthread_mutex_lock(&dev->mem_lock);
    mr->registered = false;
    iw_mem_sv_describe_locked(&mr->obj);
    mr->dereg_cb = cb;
    mr->dereg_ctx = ctx;
    atomic_store(&mr->dereg_waiting, true);
    if (atomic_load(&mr->dma_users) > 0) {
        /* DMA in flight still uses the pages: complete when the data path lets go. */
        iw_obj_get(&mr->obj);
        st = STATUS_PENDING;
    } else {
        atomic_store(&mr->dereg_waiting, false);
        mr->dereg_cb = NULL;
        mr->dereg_ctx = NULL;
    }
    pthread_mutex_unlock(&dev->mem_lock);
    pthread_mutex_unlock(&mr->lock);
    return st;
}

static NTSTATUS iw_init_fast_register_mr(NDK_MR *m, ULONG pages, BOOLEAN remote, NDK_FN_REQUEST_COMPLETION cb,
                                         PVOID ctx)
{
    struct iw_mr *mr = to_iw_mr(m);
    NTSTATUS st = STATUS_SUCCESS;

    (void)cb;
    (void)ctx;
    if (!pages)
        return STATUS_INVALID_PARAMETER;
    if (pages > IW_MAX_FRMR_PAGES)
        return STATUS_IMPLEMENTATION_LIMIT;
    pthread_mutex_lock(&mr->lock);
    if (!mr->fast_register) {
        st = STATUS_INVALID_DEVICE_REQUEST;
    } else if (pages > mr->page_cap) {
        uint64_t *np = realloc(mr->pages, pages * sizeof(uint64_t));
        if (!np)
            st = STATUS_INSUFFICIENT_RESOURCES;
        else {
            mr->pages = np;
            mr->page_cap = pages;
        }
    }
    if (st == STATUS_SUCCESS) {
        if (remote)
            mr->frmr_remote = true;
        if (!mr->frmr_initialized) {
            uint32_t stag;
            if (iw_mem_stag_alloc(mr->obj.dev, &mr->obj, &stag) < 0) {
                st = STATUS_INSUFFICIENT_RESOURCES;
            } else {
                pthread_mutex_lock(&mr->obj.dev->mem_lock);
                mr->stag = stag;
                pthread_mutex_unlock(&mr->obj.dev->mem_lock);
                mr->frmr_initialized = true;
            }
        }
    }
    pthread_mutex_unlock(&mr->lock);
    return st;
}

static UINT32 iw_mr_token(NDK_MR *m)
{
    struct iw_mr *mr = to_iw_mr(m);
    uint32_t stag;

    pthread_mutex_lock(&mr->obj.dev->mem_lock);
    stag = mr->stag;
    pthread_mutex_unlock(&mr->obj.dev->mem_lock);
    return stag;
}

static NTSTATUS iw_close_mr(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_mr((NDK_MR *)h)->obj, cb, ctx);
}

static void iw_mr_close_start(struct iw_obj *o)
{
    struct iw_mr *mr = ndk_container_of(o, struct iw_mr, obj);

    /* Closing revokes access at once; in-flight DMA holds references, so the close pends. */
    pthread_mutex_lock(&mr->lock);
    if (mr->stag)
        iw_mem_stag_free(o->dev, mr->stag, o);
    pthread_mutex_lock(&o->dev->mem_lock);
    mr->registered = false;
    iw_mem_sv_describe_locked(o);
    pthread_mutex_unlock(&o->dev->mem_lock);
    pthread_mutex_unlock(&mr->lock);
}

static void iw_mr_destroy(struct iw_obj *o)
{
    struct iw_mr *mr = ndk_container_of(o, struct iw_mr, obj);

    atomic_fetch_sub(&o->dev->nmr, 1);
    free(mr->pages);
    pthread_mutex_destroy(&mr->lock);
    free(mr);
}

static const struct iw_obj_ops iw_mr_ops = { .name = "MR", .close_start = iw_mr_close_start, .destroy = iw_mr_destroy };

static const NDK_MR_DISPATCH iw_mr_dispatch = {
    .NdkCloseMr = iw_close_mr,
    .NdkQueryExtension = iw_query_extension,
    .NdkRegisterMr = iw_register_mr,
    .NdkDeregisterMr = iw_deregister_mr,
    .NdkInitializeFastRegisterMr = iw_init_fast_register_mr,
    .NdkGetRemoteTokenFromMr = iw_mr_token,
    .NdkGetLocalTokenFromMr = iw_mr_token,
};

NTSTATUS iw_create_mr(NDK_PD *p, BOOLEAN fast, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MR **out)
{
    struct iw_pd *pd = to_iw_pd(p);
    struct iw_device *dev = pd->obj.dev;
    struct iw_mr *mr;

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    if (atomic_fetch_add(&dev->nmr, 1) >= IW_MAX_MR_COUNT) {
        atomic_fetch_sub(&dev->nmr, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    mr = calloc(1, sizeof(*mr));
    if (!mr) {
        atomic_fetch_sub(&dev->nmr, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    iw_obj_init(&mr->obj, &iw_mr_ops, IW_OBJ_MR, pd->obj.adapter, &mr->ndk.Header, &iw_mr_dispatch);
    pthread_mutex_init(&mr->lock, NULL);
    mr->fast_register = fast != 0;
    atomic_init(&mr->dma_users, 0);
    mr->dereg_work.fn = iw_mr_dereg_work;
    ndk_list_init(&mr->dereg_work.link);
    iw_mem_inval_init(&mr->inval, &mr->obj);
    iw_obj_set_ante(&mr->obj, 0, &pd->obj);
    pthread_mutex_lock(&dev->mem_lock);
    iw_mem_sv_describe_locked(&mr->obj);
    pthread_mutex_unlock(&dev->mem_lock);
    *out = &mr->ndk;
    return STATUS_SUCCESS;
}

/* ---- MW ---- */

static UINT32 iw_mw_token(NDK_MW *m)
{
    struct iw_mw *mw = to_iw_mw(m);
    uint32_t stag;

    pthread_mutex_lock(&mw->obj.dev->mem_lock);
    stag = mw->stag;
    pthread_mutex_unlock(&mw->obj.dev->mem_lock);
    return stag;
}

static NTSTATUS iw_close_mw(NDK_OBJECT_HEADER *h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx)
{
    return iw_obj_close(&to_iw_mw((NDK_MW *)h)->obj, cb, ctx);
}

static void iw_mw_close_start(struct iw_obj *o)
{
    struct iw_mw *mw = ndk_container_of(o, struct iw_mw, obj);

    iw_mem_stag_free(o->dev, mw->stag, o);
    pthread_mutex_lock(&o->dev->mem_lock);
    mw->bound = false;
    iw_mem_sv_describe_locked(o);
    pthread_mutex_unlock(&o->dev->mem_lock);
}

static void iw_mw_destroy(struct iw_obj *o)
{
    struct iw_mw *mw = ndk_container_of(o, struct iw_mw, obj);

    atomic_fetch_sub(&o->dev->nmw, 1);
    pthread_mutex_destroy(&mw->lock);
    free(mw);
}

static const struct iw_obj_ops iw_mw_ops = { .name = "MW", .close_start = iw_mw_close_start, .destroy = iw_mw_destroy };

static const NDK_MW_DISPATCH iw_mw_dispatch = {
    .NdkCloseMw = iw_close_mw,
    .NdkQueryExtension = iw_query_extension,
    .NdkGetRemoteTokenFromMw = iw_mw_token,
};

NTSTATUS iw_create_mw(NDK_PD *p, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MW **out)
{
    struct iw_pd *pd = to_iw_pd(p);
    struct iw_device *dev = pd->obj.dev;
    struct iw_mw *mw;
    uint32_t stag;

    (void)cb;
    (void)ctx;
    if (!out)
        return STATUS_INVALID_PARAMETER;
    if (atomic_fetch_add(&dev->nmw, 1) >= IW_MAX_MW_COUNT) {
        atomic_fetch_sub(&dev->nmw, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    mw = calloc(1, sizeof(*mw));
    if (!mw) {
        atomic_fetch_sub(&dev->nmw, 1);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    iw_obj_init(&mw->obj, &iw_mw_ops, IW_OBJ_MW, pd->obj.adapter, &mw->ndk.Header, &iw_mw_dispatch);
    pthread_mutex_init(&mw->lock, NULL);
    atomic_init(&mw->dma_users, 0);
    iw_mem_inval_init(&mw->inval, &mw->obj);
    iw_obj_set_ante(&mw->obj, 0, &pd->obj);
    /* The window's STag exists from creation but is invalid until a bind (mw->bound). */
    if (iw_mem_stag_alloc(dev, &mw->obj, &stag) < 0) {
        iw_obj_abort_create(&mw->obj);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    pthread_mutex_lock(&dev->mem_lock);
    mw->stag = stag;
    iw_mem_sv_describe_locked(&mw->obj);
    pthread_mutex_unlock(&dev->mem_lock);
    *out = &mw->ndk;
    return STATUS_SUCCESS;
}
