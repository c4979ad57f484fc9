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
#include <sched.h>
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

void iw_mem_write_begin(struct iw_obj *o)
{
    _Atomic(uint64_t) *seq = &iw_mem_key_of(o)->seq;

    /* Odd: a lookup that read the fields meanwhile reads them again. Sequentially consistent,
     * so that it comes before this writer's later look at key.users (iw_mem_get's count and
     * second read of seq are the other half); the fence keeps the fields' stores after it. */
    atomic_store(seq, atomic_load_explicit(seq, memory_order_relaxed) + 1);
    atomic_thread_fence(memory_order_release);
}

void iw_mem_write_end(struct iw_obj *o)
{
    _Atomic(uint64_t) *seq = &iw_mem_key_of(o)->seq;

    atomic_store_explicit(seq, atomic_load_explicit(seq, memory_order_relaxed) + 1, memory_order_release);
}

/* One consistent read of what a lookup checks, between two equal even values of k->seq. */
static void iw_mem_read(struct iw_mem_key *k, uint64_t *s, uint32_t *stag, bool *valid, struct iw_mem_view *v)
{
    for (unsigned spins = 0;; spins++) {
        uint64_t s1 = atomic_load_explicit(&k->seq, memory_order_acquire);
        if (s1 & 1) {
            if (spins > 64)
                sched_yield();                    /* a writer holds mem_lock: never for long */
            continue;
        }
        *stag = __atomic_load_n(&k->stag, __ATOMIC_RELAXED);
        *valid = __atomic_load_n(&k->valid, __ATOMIC_RELAXED);
        *v = (struct iw_mem_view){ __atomic_load_n(&k->base_va, __ATOMIC_RELAXED),
                                   __atomic_load_n(&k->length, __ATOMIC_RELAXED),
                                   __atomic_load_n(&k->rights, __ATOMIC_RELAXED), s1 };
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&k->seq, memory_order_relaxed) == s1) {
            *s = s1;
            return;
        }
    }
}

int iw_mem_get(struct iw_device *dev, uint32_t stag, struct iw_obj **out, struct iw_mem_view *view)
{
    /* The object a slot gives stays in memory while the caller holds its QP lock (or rx_owned,
     * or tx_owned), even if it is closed and its references are gone (iw_mem_retire). */
    struct iw_obj *o = iw_stag_find(&dev->stags, stag);

    if (!o)
        return -ENOENT;
    struct iw_mem_key *k = iw_mem_key_of(o);
    for (;;) {
        struct iw_mem_view v;
        uint32_t ostag;
        uint64_t s;
        bool valid;

        iw_mem_read(k, &s, &ostag, &valid, &v);
        if (ostag != stag || !valid || iw_obj_closing(o))
            return -ENOENT;
        /* Against a writer that makes the token invalid and then looks at key.users (the
         * deregistration, the close, an invalidation waiting for placements): we count
         * ourselves, then read seq again (both sequentially consistent), so either it sees us
         * or we see it. Every such writer changes seq after it set closing. */
        atomic_fetch_add(&k->users, 1);
        if (atomic_load(&k->seq) == s) {
            if (view)
                *view = v;
            *out = o;
            return 0;
        }
        iw_mem_put(o);
    }
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

/* Wakes what waited for the count to drop. The caller's section (iwarp.h) keeps o in memory:
 * its references may all be gone once the count is down. */
void iw_mem_put(struct iw_obj *o)
{
    struct iw_device *dev = o->dev;
    struct iw_mem_key *k = iw_mem_key_of(o);
    bool done = false;
    /* Against iw_deregister_mr, iw_mem_inval_wait and iw_mem_close_hold: each publishes its
     * waiting, then reads key.users; we lower key.users, then read what waits (all sequentially
     * consistent), so at least one of the two sides sees the other. For the deregister the
     * recheck under mem_lock lets only one complete; for an invalidation the exchange of
     * inval.qp does, for the close the exchange of close_hold. */
    if (atomic_fetch_sub(&k->users, 1) != 1)
        return;
    /* A waiter stores its field, then waited, then reads users (all sequentially consistent):
     * waited read unset, our decrement came before that read of users, which sees it, and the
     * waiter does not wait; read set, the field stored before it is visible here too. */
    if (!atomic_load(&k->waited))
        return;
    if (o->type == IW_OBJ_MR) {
        struct iw_mr *mr = ndk_container_of(o, struct iw_mr, obj);
        if (atomic_load(&mr->dereg_waiting)) {
            pthread_mutex_lock(&dev->mem_lock);
            done = atomic_load(&mr->dereg_waiting) && atomic_load(&mr->key.users) == 0;
            if (done)
                atomic_store(&mr->dereg_waiting, false);
            pthread_mutex_unlock(&dev->mem_lock);
        }
        if (done)
            iw_progress_queue(dev, &mr->dereg_work);   /* carries the ref taken by the deregister */
    }
    struct iw_mem_inval *inv = &k->inval;
    if (atomic_load(&inv->qp)) {
        /* The waiting request's WQE names o with a reference, so o is not finishing while it
         * waits; if it is (the request was flushed, then o closed), nothing waits any more and
         * only the QP's reference in inval.qp is left to drop. */
        if (iw_obj_tryget(o)) {
            if (!iw_progress_queue(dev, &inv->work))
                iw_obj_put(o);                         /* queued already: it holds one */
        } else {
            struct iw_qp *qp = atomic_exchange(&inv->qp, NULL);
            if (qp)
                iw_obj_put(&qp->obj);
        }
    }
    /* Last: the close's reference may be the object's last (its finish is queued, not run). */
    if (atomic_load(&k->close_hold) && atomic_exchange(&k->close_hold, false))
        iw_obj_put(o);
}

/* The close of an MR or MW, after it made the token invalid: uses counted before keep the
 * object, and its close pending, until the last ends (the lookups take no reference). One
 * reference stands for all of them. Consumer's thread (close_start), no lock held. */
static void iw_mem_close_hold(struct iw_obj *o)
{
    struct iw_mem_key *k = iw_mem_key_of(o);

    iw_obj_get(o);
    atomic_store(&k->close_hold, true);
    atomic_store(&k->waited, true);
    if (atomic_load(&k->users) == 0 && atomic_exchange(&k->close_hold, false))
        iw_obj_put(o);                                 /* not the last: the consumer's is held */
}

bool iw_mem_placing(struct iw_obj *o)
{
    return atomic_load(&iw_mem_key_of(o)->users) != 0;
}

bool iw_mem_inval_wait(struct iw_qp *qp, struct iw_obj *o)
{
    struct iw_mem_inval *inv = &iw_mem_key_of(o)->inval;
    struct iw_qp *prev = NULL;

    /* Nothing in flight: none can start either, the token being invalid (a lookup that counts
     * itself after this read finds key.seq changed and lets go without placing a byte). */
    if (!atomic_load(&iw_mem_key_of(o)->users))
        return false;
    iw_obj_get(&qp->obj);
    if (!atomic_compare_exchange_strong(&inv->qp, &prev, qp)) {
        iw_obj_put(&qp->obj);                          /* not the last reference: the caller's */
        return prev == qp;                             /* its work completes every one of qp's */
    }
    atomic_store(&iw_mem_key_of(o)->waited, true);
    if (atomic_load(&iw_mem_key_of(o)->users))
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
        r->u.mem.bound = mr->key.valid;
        r->u.mem.length = mr->key.valid ? mr->key.length : 0;
    } else {
        struct iw_mw *mw = ndk_container_of(o, struct iw_mw, obj);
        r->u.mem.bound = mw->key.valid;
        r->u.mem.length = mw->key.valid ? mw->key.length : 0;
    }
    ndk_sv_end(r);
}

/* ---- keeping closed MRs and MWs until no lookup can hold them ---- */

/* A lookup may have read an object's slot just before its close emptied it, and then look at the
 * object under its QP lock (iw_mem_get); the last iw_mem_put may still read it after its count
 * let the close complete. So a destroyed MR or MW waits on a list until the progress thread has
 * seen every QP's lock, rx_owned and TX engine free once (iw_qp_lookups_quiesce). The type's
 * destroy, any thread that may run it (the progress thread, or the consumer's close), no lock
 * held. */
static void iw_mem_retire(struct iw_device *dev, struct ndk_list *list, struct ndk_list *link)
{
    pthread_mutex_lock(&dev->mem_lock);
    ndk_list_add_tail(list, link);
    pthread_mutex_unlock(&dev->mem_lock);
    iw_progress_queue(dev, &dev->mem_reclaim_work);   /* merges with one queued: it takes all */
}

static void iw_mr_free(struct iw_mr *mr);
static void iw_mw_free(struct iw_mw *mw);

/* Moves the entries of list up to last (included) to out. mem_lock held. */
static void iw_mem_take_retired(struct ndk_list *list, struct ndk_list *last, struct ndk_list *out)
{
    if (last == list)
        return;                                       /* it was empty */
    for (struct ndk_list *pos = list->next, *next;; pos = next) {
        next = pos->next;
        ndk_list_del(pos);
        ndk_list_add_tail(out, pos);
        if (pos == last)
            return;
    }
}

/* Progress thread, no lock held: one walk for every object retired before it began. They stay
 * on the device's lists meanwhile; those retired during the walk wait for the next one (a lookup
 * may hold them under a lock the walk had passed). */
static void iw_mem_reclaim_work(struct iw_work *w)
{
    struct iw_device *dev = ndk_container_of(w, struct iw_device, mem_reclaim_work);
    struct ndk_list mrs, mws, *pos, *tmp;

    pthread_mutex_lock(&dev->mem_lock);
    struct ndk_list *mr_last = dev->mr_retired.prev, *mw_last = dev->mw_retired.prev;
    pthread_mutex_unlock(&dev->mem_lock);
    /* Every slot these held was emptied before their destroy: a lookup that starts now cannot
     * find them, and the walk waits for those that may have. */
    iw_qp_lookups_quiesce(dev);
    ndk_list_init(&mrs);
    ndk_list_init(&mws);
    pthread_mutex_lock(&dev->mem_lock);
    iw_mem_take_retired(&dev->mr_retired, mr_last, &mrs);
    iw_mem_take_retired(&dev->mw_retired, mw_last, &mws);
    pthread_mutex_unlock(&dev->mem_lock);
    ndk_list_for_each_safe(pos, tmp, &mrs)
        iw_mr_free(ndk_list_entry(pos, struct iw_mr, retired));
    ndk_list_for_each_safe(pos, tmp, &mws)
        iw_mw_free(ndk_list_entry(pos, struct iw_mw, retired));
}

void iw_mem_device_init(struct iw_device *dev)
{
    ndk_list_init(&dev->mr_retired);
    ndk_list_init(&dev->mw_retired);
    dev->mem_reclaim_work.fn = iw_mem_reclaim_work;
    ndk_list_init(&dev->mem_reclaim_work.link);
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
    if (mr->fast_register || mr->key.valid || mr->dereg_cb) {
        pthread_mutex_unlock(&mr->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    err = iw_mem_stag_alloc(mr->obj.dev, &mr->obj, &stag);
    if (!err) {
        /* The slot may give this MR to a lookup already: until the bracket ends, its STag is
         * not the new one, so the lookup turns it down. */
        pthread_mutex_lock(&mr->obj.dev->mem_lock);
        iw_mem_write_begin(&mr->obj);
        IW_MEM_SET(mr->key.base_va, (uint64_t)(uintptr_t)MmGetMdlVirtualAddress(mdl));
        IW_MEM_SET(mr->key.length, (uint64_t)len);
        mr->access = flags;
        IW_MEM_SET(mr->key.rights, iw_access_rights(flags, false, false));
        IW_MEM_SET(mr->key.stag, stag);
        IW_MEM_SET(mr->key.valid, true);
        iw_mem_write_end(&mr->obj);
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
    if (mr->fast_register || !mr->key.valid) {
        pthread_mutex_unlock(&mr->lock);
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    iw_mem_stag_free(dev, mr->key.stag, &mr->obj);
    pthread_mutex_lock(&dev->mem_lock);
    iw_mem_write_begin(&mr->obj);
    IW_MEM_SET(mr->key.valid, false);
    iw_mem_write_end(&mr->obj);
    iw_mem_sv_describe_locked(&mr->obj);
    mr->dereg_cb = cb;
    mr->dereg_ctx = ctx;
    atomic_store(&mr->dereg_waiting, true);
    atomic_store(&mr->key.waited, true);
    if (atomic_load(&mr->key.users) > 0) {
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
                iw_mem_write_begin(&mr->obj);
                IW_MEM_SET(mr->key.stag, stag);
                iw_mem_write_end(&mr->obj);
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
    stag = mr->key.stag;
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
    if (mr->key.stag)
        iw_mem_stag_free(o->dev, mr->key.stag, o);
    pthread_mutex_lock(&o->dev->mem_lock);
    iw_mem_write_begin(o);
    IW_MEM_SET(mr->key.valid, false);
    iw_mem_write_end(o);
    iw_mem_sv_describe_locked(o);
    pthread_mutex_unlock(&o->dev->mem_lock);
    pthread_mutex_unlock(&mr->lock);
    iw_mem_close_hold(o);
}

static void iw_mr_free(struct iw_mr *mr)
{
    free(mr->pages);
    pthread_mutex_destroy(&mr->lock);
    free(mr);
}

/* Retired: freed by iw_mem_reclaim_work. */
static void iw_mr_destroy(struct iw_obj *o)
{
    struct iw_mr *mr = ndk_container_of(o, struct iw_mr, obj);

    atomic_fetch_sub(&o->dev->nmr, 1);
    iw_mem_retire(o->dev, &o->dev->mr_retired, &mr->retired);
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
    atomic_init(&mr->key.users, 0);
    atomic_init(&mr->key.close_hold, false);
    atomic_init(&mr->key.waited, false);
    mr->dereg_work.fn = iw_mr_dereg_work;
    ndk_list_init(&mr->dereg_work.link);
    iw_mem_inval_init(&mr->key.inval, &mr->obj);
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
    stag = mw->key.stag;
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

    iw_mem_stag_free(o->dev, mw->key.stag, o);
    pthread_mutex_lock(&o->dev->mem_lock);
    iw_mem_write_begin(o);
    IW_MEM_SET(mw->key.valid, false);
    iw_mem_write_end(o);
    iw_mem_sv_describe_locked(o);
    pthread_mutex_unlock(&o->dev->mem_lock);
    iw_mem_close_hold(o);
}

static void iw_mw_free(struct iw_mw *mw)
{
    pthread_mutex_destroy(&mw->lock);
    free(mw);
}

/* Retired: freed by iw_mem_reclaim_work. */
static void iw_mw_destroy(struct iw_obj *o)
{
    struct iw_mw *mw = ndk_container_of(o, struct iw_mw, obj);

    atomic_fetch_sub(&o->dev->nmw, 1);
    iw_mem_retire(o->dev, &o->dev->mw_retired, &mw->retired);
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
    atomic_init(&mw->key.users, 0);
    atomic_init(&mw->key.close_hold, false);
    atomic_init(&mw->key.waited, false);
    iw_mem_inval_init(&mw->key.inval, &mw->obj);
    iw_obj_set_ante(&mw->obj, 0, &pd->obj);
    /* The window's STag exists from creation but is invalid until a bind (mw->key.valid). */
    if (iw_mem_stag_alloc(dev, &mw->obj, &stag) < 0) {
        iw_obj_abort_create(&mw->obj);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    pthread_mutex_lock(&dev->mem_lock);
    iw_mem_write_begin(&mw->obj);
    IW_MEM_SET(mw->key.stag, stag);
    iw_mem_write_end(&mw->obj);
    iw_mem_sv_describe_locked(&mw->obj);
    pthread_mutex_unlock(&dev->mem_lock);
    *out = &mw->ndk;
    return STATUS_SUCCESS;
}
