/*
 * access.c - memory protection for the data path: the data-sink / data-source STag checks of
 * RFC 5040 §7 / RFC 5041 §7, local SGE resolution (§4.4, §5.10), address
 * translation from a registration's address labels to host memory, and the local memory
 * operations (Bind, Fast Register, Invalidate) executed by the TX engine in SQ order.
 *
 * Address labels: a registered MR's addresses are the MDL virtual addresses, which in this
 * user-space port are the process addresses of the buffer (MmGetSystemAddressForMdlSafe returns
 * the same pointer, nt.h), so a label inside a checked range IS the host address. A
 * fast-registered MR maps labels through its LAM page list (adapter.c: a logical page address
 * is the page's process address). A window maps through the MR it is bound to. Nothing is ever
 * dereferenced before the whole range passed the checks below.
 *
 * Talks to: mem.c (STag lookups and references), obj.c. Called by rx.c, tx.c, post.c, qp.c. */
#include "datapath.h"

#include <errno.h>
#include <string.h>

/* ---- helpers ---- */

static struct iw_mr *obj_mr(struct iw_obj *o) { return ndk_container_of(o, struct iw_mr, obj); }
static struct iw_mw *obj_mw(struct iw_obj *o) { return ndk_container_of(o, struct iw_mw, obj); }

unsigned iw_access_rights(ULONG access, bool fast, bool window)
{
    unsigned r = 0;

    if (window) {
        if ((access & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE)
            r |= DP_ACC_REMOTE_WRITE;
        if (access & NDK_OP_FLAG_ALLOW_REMOTE_READ)
            r |= DP_ACC_REMOTE_READ;
    } else if (fast) {
        /* NDK_OP_FLAG_ALLOW_* (§2.9): REMOTE_WRITE (0x30) includes LOCAL_WRITE (0x10). */
        if (access & NDK_OP_FLAG_ALLOW_LOCAL_WRITE)
            r |= DP_ACC_LOCAL_WRITE;
        if ((access & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE)
            r |= DP_ACC_REMOTE_WRITE;
        if (access & NDK_OP_FLAG_ALLOW_REMOTE_READ)
            r |= DP_ACC_REMOTE_READ;
        if (access & NDK_OP_FLAG_RDMA_READ_SINK)
            r |= DP_ACC_READ_SINK;
    } else {
        /* NDK_MR_FLAG_* (§2.6): REMOTE_WRITE (0x5) includes LOCAL_WRITE (0x1). */
        if (access & NDK_MR_FLAG_ALLOW_LOCAL_WRITE)
            r |= DP_ACC_LOCAL_WRITE;
        if ((access & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == NDK_MR_FLAG_ALLOW_REMOTE_WRITE)
            r |= DP_ACC_REMOTE_WRITE;
        if (access & NDK_MR_FLAG_ALLOW_REMOTE_READ)
            r |= DP_ACC_REMOTE_READ;
        if (access & NDK_MR_FLAG_RDMA_READ_SINK)
            r |= DP_ACC_READ_SINK;
    }
    return r;
}

/* [to, to + len) inside [base, base + length)? len > 0; the caller checked the wrap. */
static bool in_bounds(uint64_t base, uint64_t length, uint64_t to, uint64_t len)
{
    return to >= base && to - base <= length && len <= length - (to - base);
}

static void set_tc(struct dp_term_code *tc, uint8_t layer, uint8_t etype, uint8_t ecode)
{
    tc->layer = layer;
    tc->etype = etype;
    tc->ecode = ecode;
}

NTSTATUS iw_access_term_status(const struct dp_term_code *tc)
{
    bool bounds = (tc->layer == IW_TERM_LAYER_RDMAP && tc->etype == IW_TERM_ETYPE_RDMAP_REMOTE_PROT &&
                   tc->ecode == IW_TERM_RDMAP_BASE_BOUNDS) ||
                  (tc->layer == IW_TERM_LAYER_DDP && tc->etype == IW_TERM_ETYPE_DDP_TAGGED &&
                   tc->ecode == IW_TERM_DDP_T_BASE_BOUNDS);
    bool prot = (tc->layer == IW_TERM_LAYER_RDMAP && tc->etype == IW_TERM_ETYPE_RDMAP_REMOTE_PROT) ||
                (tc->layer == IW_TERM_LAYER_RDMAP && tc->ecode == IW_TERM_RDMAP_CANT_INVALIDATE) ||
                (tc->layer == IW_TERM_LAYER_DDP && tc->etype == IW_TERM_ETYPE_DDP_TAGGED &&
                 tc->ecode != IW_TERM_DDP_T_VERSION);
    bool too_long = tc->layer == IW_TERM_LAYER_DDP && tc->etype == IW_TERM_ETYPE_DDP_UNTAGGED &&
                    tc->ecode == IW_TERM_DDP_U_TOO_LONG;

    if (bounds)
        return STATUS_REMOTE_RESOURCES;
    if (prot)
        return STATUS_ACCESS_VIOLATION;
    if (too_long)
        return STATUS_BUFFER_TOO_SMALL;
    return STATUS_DATA_ERROR;
}

/* ---- remote checks (data sink / data source) ---- */

int iw_access_check_remote(struct iw_qp *qp, uint32_t stag, uint64_t to, uint64_t len, unsigned need, bool rdmap,
                    struct iw_obj **mem, struct dp_term_code *tc)
{
    struct iw_device *dev = qp->obj.dev;
    struct iw_obj *o = NULL;
    /* Codes per check (RFC 5041 §7.2, RFC 5040 §7.2): DDP tagged for Write / Read Response sinks,
     * RDMAP remote protection for a Read Request's source. DDP has no access-rights code, so
     * a Write into a region without remote write gets RDMAP 0/1/0x02 (RFC 5040 §7.2). */
    const uint8_t L = rdmap ? IW_TERM_LAYER_RDMAP : IW_TERM_LAYER_DDP;
    const uint8_t E = rdmap ? IW_TERM_ETYPE_RDMAP_REMOTE_PROT : IW_TERM_ETYPE_DDP_TAGGED;
    struct iw_mem_view v;
    struct iw_obj *pd;

    *mem = NULL;
    /* 1. STag valid: index allocated, key matches, registered / bound. STag 0 is the
     * privileged token, never valid remotely (§2.5). */
    if (stag == IW_PRIVILEGED_STAG || iw_mem_get(dev, stag, &o, &v) < 0) {
        set_tc(tc, L, E, rdmap ? IW_TERM_RDMAP_INV_STAG : IW_TERM_DDP_T_INV_STAG);
        return -EACCES;
    }
    pd = iw_obj_ante(o, 0);
    /* 2. Same protection domain (RFC 5040 §7.2 code 3 / RFC 5041 code 2). */
    if (pd != &qp->pd->obj) {
        set_tc(tc, L, E, rdmap ? IW_TERM_RDMAP_STAG_NOT_STREAM : IW_TERM_DDP_T_STAG_NOT_STREAM);
        goto fail;
    }
    /* 3. Access rights. */
    if ((v.rights & need) != need) {
        set_tc(tc, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_PROT, IW_TERM_RDMAP_ACCESS);
        goto fail;
    }
    /* 4. TO wrap. */
    if (len && UINT64_MAX - to < len - 1) {
        set_tc(tc, L, E, rdmap ? IW_TERM_RDMAP_TO_WRAP : IW_TERM_DDP_T_TO_WRAP);
        goto fail;
    }
    /* 5. Base and bounds. */
    if (!in_bounds(v.base, v.length, to, len)) {
        set_tc(tc, L, E, rdmap ? IW_TERM_RDMAP_BASE_BOUNDS : IW_TERM_DDP_T_BASE_BOUNDS);
        goto fail;
    }
    *mem = o;
    return 0;
fail:
    iw_mem_put(o);
    return -EACCES;
}

/* ---- local SGLs ---- */

void iw_access_sgl_release(struct dp_sgl *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->e[i].mem)
            iw_mem_put(s->e[i].mem);
    s->n = 0;
    s->total = 0;
}

void iw_access_sgl_inline(struct dp_sgl *out, const void *buf, uint64_t len)
{
    memset(out, 0, sizeof(*out));
    if (len) {
        out->n = 1;
        out->e[0].va = (uint64_t)(uintptr_t)buf;
        out->e[0].len = len;
    }
    out->total = len;
}

void iw_access_sgl_mem(struct dp_sgl *out, struct iw_obj *mem, uint64_t va, uint64_t len)
{
    memset(out, 0, sizeof(*out));
    out->n = 1;
    out->e[0].mem = mem;
    out->e[0].va = va;
    out->e[0].len = len;
    out->total = len;
}

/* The SGEs from i on, each looked up in the STag table (the key cache filled by the lookups
 * that pass the MR checks); the entries before i are in out already. iw_access_sgl_resolve's
 * result. Flattened: the lookup inside (mem.c) is then inlined in the link-time optimised build. */
static __attribute__((flatten, noinline)) int sgl_resolve_from(struct iw_qp *qp, struct iw_mem_cache *kc,
                                                               const NDK_SGE *sge, uint32_t i, uint32_t nsge,
                                                               unsigned need, struct dp_sgl *out, uint32_t *bad_sge)
{
    struct iw_device *dev = qp->obj.dev;

    for (; i < nsge; i++) {
        uint64_t va = (uint64_t)(uintptr_t)sge[i].VirtualAddress;
        uint64_t len = sge[i].Length;
        struct iw_obj *o = NULL;

        if (len == 0)
            continue;               /* an empty SGE places nothing and needs no check */
        if (UINT64_MAX - va < len - 1)
            goto bad;
        if (sge[i].MemoryRegionToken == IW_PRIVILEGED_STAG) {
            /* §2.5: the privileged token grants local read and write on LAM logical addresses
             * (RDMA_READ_SINK_NOT_REQUIRED is advertised, so read sinks too, §2.9 NdkRead). */
            if (va == 0)
                goto bad;
        } else {
            struct iw_mem_view v;
            if (iw_mem_get(dev, sge[i].MemoryRegionToken, &o, &v) < 0)
                goto bad;
            if (o->type != IW_OBJ_MR || iw_obj_ante(o, 0) != &qp->pd->obj)
                goto bad_put;   /* windows are remote-only; other PDs are not ours (§5.10) */
            if (kc) {
                kc->obj = o;
                kc->stag = sge[i].MemoryRegionToken;
                kc->v = v;
            }
            if (!in_bounds(v.base, v.length, va, len) || (v.rights & need) != need)
                goto bad_put;
        }
        out->e[out->n].mem = o;
        out->e[out->n].va = va;
        out->e[out->n].len = len;
        out->n++;
        out->total += len;
        continue;
    bad_put:
        iw_mem_put(o);
    bad:
        *bad_sge = i;
        iw_access_sgl_release(out);
        return -EACCES;
    }
    return 0;
}

/* The SGEs whose key is the one the engine side last resolved (its cache, the usual case: a
 * consumer's buffers lie in few MRs) cost a count and a look at the key's seq; the first that is
 * not goes to the table with the rest. iw_access_sgl_resolve's general way. */
static __attribute__((noinline)) int sgl_resolve_all(struct iw_qp *qp, struct iw_mem_cache *kc, const NDK_SGE *sge,
                                                     uint32_t nsge, unsigned need, struct dp_sgl *out,
                                                     uint32_t *bad_sge)
{
    out->n = 0;                     /* entries past n are never read: no need to clear 16 */
    out->total = 0;
    for (uint32_t i = 0; i < nsge; i++) {
        uint64_t va = (uint64_t)(uintptr_t)sge[i].VirtualAddress;
        uint64_t len = sge[i].Length;

        if (len == 0)
            continue;
        /* The key as it was when it passed the table's checks: only the range and the rights
         * asked for are new. A cache never holds the privileged token (only table lookups fill
         * it). Anything else, failures included, is the table's to answer. */
        if (!kc || !kc->obj || kc->stag != sge[i].MemoryRegionToken || UINT64_MAX - va < len - 1 ||
            !iw_mem_cache_hit(kc))
            return sgl_resolve_from(qp, kc, sge, i, nsge, need, out, bad_sge);
        if (!in_bounds(kc->v.base, kc->v.length, va, len) || (kc->v.rights & need) != need) {
            iw_mem_put(kc->obj);
            return sgl_resolve_from(qp, kc, sge, i, nsge, need, out, bad_sge);
        }
        out->e[out->n].mem = kc->obj;
        out->e[out->n].va = va;
        out->e[out->n].len = len;
        out->n++;
        out->total += len;
    }
    return 0;
}

/* A single SGE counted in its cached key whose seq then had moved: the count goes, the cache is
 * emptied (as iw_mem_cache_hit does), and the general way asks the table. Same arguments as
 * iw_access_sgl_resolve, so that both calls to it are tail calls. */
static __attribute__((noinline)) int sgl_resolve_stale(struct iw_qp *qp, struct iw_mem_cache *kc, const NDK_SGE *sge,
                                                       uint32_t nsge, unsigned need, struct dp_sgl *out,
                                                       uint32_t *bad_sge)
{
    iw_mem_put(kc->obj);
    kc->obj = NULL;
    return sgl_resolve_all(qp, kc, sge, nsge, need, out, bad_sge);
}

/* Both posts of every message come here. The usual request, one SGE inside the cached key with
 * the rights asked for, is taken here without a call (so without saving registers for one):
 * the checks on the cached view first, then the count and the look at seq that make the view
 * current (iw_mem_cache_hit's order). Anything else goes the general way. */
int iw_access_sgl_resolve(struct iw_qp *qp, struct iw_mem_cache *kc, const NDK_SGE *sge, uint32_t nsge,
                          unsigned need, struct dp_sgl *out, uint32_t *bad_sge)
{
    if (nsge == 1 && kc && kc->obj && kc->stag == sge[0].MemoryRegionToken) {
        uint64_t va = (uint64_t)(uintptr_t)sge[0].VirtualAddress;
        uint64_t len = sge[0].Length;

        if (len && UINT64_MAX - va >= len - 1 && in_bounds(kc->v.base, kc->v.length, va, len) &&
            (kc->v.rights & need) == need) {
            struct iw_mem_key *k = iw_mem_key_of(kc->obj);
            atomic_fetch_add(&k->users, 1);
            if (atomic_load(&k->seq) != kc->v.seq)
                return sgl_resolve_stale(qp, kc, sge, nsge, need, out, bad_sge);
            out->e[0].mem = kc->obj;
            out->e[0].va = va;
            out->e[0].len = len;
            out->n = 1;
            out->total = len;
            return 0;
        }
    }
    return sgl_resolve_all(qp, kc, sge, nsge, need, out, bad_sge);
}

/* Maps [va, va + len) of one SGE to iovecs. mem NULL: the label is the host address. */
static int mem_iov(struct iw_obj *mem, uint64_t va, uint64_t len, struct iovec *iov, int max, uint64_t *mapped)
{
    *mapped = 0;
    if (max <= 0 || len == 0)
        return 0;
    if (mem && mem->type == IW_OBJ_MW)
        mem = iw_obj_ante(mem, IW_MW_ANTE_MR);        /* a window's labels are its MR's labels */
    if (!mem || !obj_mr(mem)->fast_register) {
        iov[0].iov_base = (void *)(uintptr_t)va;
        iov[0].iov_len = len;
        *mapped = len;
        return 1;
    }
    /* Fast-registered: label -> (FBO + offset) in the page list (§2.9 NdkFastRegister). */
    struct iw_mr *mr = obj_mr(mem);
    int n = 0;
    pthread_mutex_lock(&mr->lock);
    uint64_t pos = mr->fbo + (va - mr->key.base_va);
    while (len && n < max) {
        uint64_t pg = pos / PAGE_SIZE, in = pos % PAGE_SIZE;
        if (pg >= mr->npages)
            break;                                /* cannot happen after the bounds check */
        uint64_t take = PAGE_SIZE - in;
        if (take > len)
            take = len;
        uint8_t *host = (uint8_t *)(uintptr_t)mr->pages[pg] + in;
        if (n && (uint8_t *)iov[n - 1].iov_base + iov[n - 1].iov_len == host) {
            iov[n - 1].iov_len += take;           /* adjacent pages merge */
        } else {
            iov[n].iov_base = host;
            iov[n].iov_len = take;
            n++;
        }
        pos += take;
        len -= take;
        *mapped += take;
    }
    pthread_mutex_unlock(&mr->lock);
    return n;
}

/* The general walk of iw_access_sgl_iov: several SGEs, an offset past the first, fast-registered
 * pages, or a window. */
static __attribute__((noinline)) int sgl_iov_walk(const struct dp_sgl *s, uint64_t off, uint64_t len,
                                                  struct iovec *iov, int max, uint64_t *mapped)
{
    int n = 0;

    *mapped = 0;
    for (uint32_t i = 0; i < s->n && len && n < max; i++) {
        const struct dp_sge *e = &s->e[i];
        if (off >= e->len) {
            off -= e->len;
            continue;
        }
        uint64_t take = e->len - off < len ? e->len - off : len;
        uint64_t got;
        n += mem_iov(e->mem, e->va + off, take, iov + n, max - n, &got);
        *mapped += got;
        len -= got;
        off = 0;
        if (got < take)
            break;                                /* out of iovecs */
    }
    return n;
}

int iw_access_sgl_iov(const struct dp_sgl *s, uint64_t off, uint64_t len, struct iovec *iov, int max, uint64_t *mapped)
{
    const struct dp_sge *e = &s->e[0];

    /* A small message's usual case, without the walk's frame (some 45 instructions a call, two
     * calls per round trip): the bytes inside one SGE of a region registered with its labels as
     * host addresses. Same result as the walk. */
    if (s->n && off < e->len && len && len <= e->len - off && max > 0 &&
        (!e->mem || (e->mem->type == IW_OBJ_MR && !obj_mr(e->mem)->fast_register))) {
        iov[0].iov_base = (void *)(uintptr_t)(e->va + off);
        iov[0].iov_len = len;
        *mapped = len;
        return 1;
    }
    return sgl_iov_walk(s, off, len, iov, max, mapped);
}

/* ---- invalidation and the local memory operations ---- */

int iw_access_invalidate(struct iw_qp *qp, uint32_t stag, bool remote, struct dp_term_code *tc)
{
    struct iw_device *dev = qp->obj.dev;
    struct iw_obj *o;
    int err = 0;

    /* RFC 5040 §7.2: unknown or already invalid -> 0/2/0x09; not in our PD
     * or not invalidatable (a regular registration: §2.9 NdkInvalidate, revoke it with
     * NdkDeregisterMr) -> 0/1/0x09. */
    if (stag == IW_PRIVILEGED_STAG || iw_mem_get(dev, stag, &o, NULL) < 0) {
        set_tc(tc, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_CANT_INVALIDATE);
        return -EACCES;
    }
    if (iw_obj_ante(o, 0) != &qp->pd->obj || (o->type == IW_OBJ_MR && !obj_mr(o)->fast_register)) {
        set_tc(tc, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_PROT, IW_TERM_RDMAP_CANT_INVALIDATE);
        err = -EACCES;
    } else {
        pthread_mutex_lock(&dev->mem_lock);
        iw_mem_write_begin(o);
        IW_MEM_SET(iw_mem_key_of(o)->valid, false);
        iw_mem_write_end(o);
        iw_mem_sv_describe_locked(o);
        pthread_mutex_unlock(&dev->mem_lock);
    }
    (void)remote;
    iw_mem_put(o);
    return err;
}

NTSTATUS iw_access_exec_invalidate(struct iw_qp *qp, struct iw_wqe *w)
{
    struct dp_term_code tc;
    uint32_t stag;

    pthread_mutex_lock(&qp->obj.dev->mem_lock);
    stag = iw_mem_key_of(w->mem)->stag;
    pthread_mutex_unlock(&qp->obj.dev->mem_lock);
    /* §2.9: invalidating a token that is already invalid (e.g. by the peer's Send with
     * Invalidate) fails as a completion with an error status. */
    return iw_access_invalidate(qp, stag, false, &tc) < 0 ? STATUS_ACCESS_VIOLATION : STATUS_SUCCESS;
}

NTSTATUS iw_access_exec_bind(struct iw_qp *qp, struct iw_wqe *w)
{
    struct iw_device *dev = qp->obj.dev;
    struct iw_mw *mw = obj_mw(w->mem);
    struct iw_mr *mr = obj_mr(w->mem2);
    bool ok;

    /* §2.9 NdkBind: the window lies inside the registered MR of the same PD. */
    pthread_mutex_lock(&mr->lock);
    pthread_mutex_lock(&dev->mem_lock);
    ok = mr->key.valid && w->length && UINT64_MAX - w->va >= w->length - 1 &&
         in_bounds(mr->key.base_va, mr->key.length, w->va, w->length);
    pthread_mutex_unlock(&dev->mem_lock);
    pthread_mutex_unlock(&mr->lock);
    if (!ok || iw_obj_ante(w->mem, 0) != iw_obj_ante(w->mem2, 0) || iw_obj_ante(w->mem, 0) != &qp->pd->obj)
        return STATUS_ACCESS_VIOLATION;
    pthread_mutex_lock(&mw->lock);
    /* §1.7: the MR becomes the window's antecedent. */
    iw_obj_set_ante(&mw->obj, IW_MW_ANTE_MR, &mr->obj);
    pthread_mutex_lock(&dev->mem_lock);            /* iw_mem_get's view */
    iw_mem_write_begin(&mw->obj);
    IW_MEM_SET(mw->key.base_va, w->va);
    IW_MEM_SET(mw->key.length, w->length);
    mw->access = w->flags & (NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE);
    IW_MEM_SET(mw->key.rights, iw_access_rights(mw->access, false, true));
    IW_MEM_SET(mw->key.valid, true);
    iw_mem_write_end(&mw->obj);
    iw_mem_sv_describe_locked(&mw->obj);
    pthread_mutex_unlock(&dev->mem_lock);
    pthread_mutex_unlock(&mw->lock);
    return STATUS_SUCCESS;
}

NTSTATUS iw_access_exec_fast_register(struct iw_qp *qp, struct iw_wqe *w)
{
    struct iw_device *dev = qp->obj.dev;
    struct iw_mr *mr = obj_mr(w->mem);
    NTSTATUS st = STATUS_SUCCESS;

    if (iw_obj_ante(w->mem, 0) != &qp->pd->obj)
        return STATUS_ACCESS_VIOLATION;
    pthread_mutex_lock(&mr->lock);
    if (!mr->fast_register || !mr->frmr_initialized || w->page_count > mr->page_cap) {
        st = STATUS_INVALID_PARAMETER;
    } else {
        memcpy(mr->pages, w->page_list, (size_t)w->page_count * sizeof(uint64_t));
        mr->npages = w->page_count;
        mr->fbo = w->fbo;
        pthread_mutex_lock(&dev->mem_lock);        /* iw_mem_get's view */
        iw_mem_write_begin(&mr->obj);
        IW_MEM_SET(mr->key.base_va, w->va);
        IW_MEM_SET(mr->key.length, w->length);
        mr->access = w->flags & (NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_LOCAL_WRITE |
                                 NDK_OP_FLAG_ALLOW_REMOTE_WRITE | NDK_OP_FLAG_RDMA_READ_SINK);
        IW_MEM_SET(mr->key.rights, iw_access_rights(mr->access, true, false));
        IW_MEM_SET(mr->key.valid, true);
        iw_mem_write_end(&mr->obj);
        iw_mem_sv_describe_locked(&mr->obj);
        pthread_mutex_unlock(&dev->mem_lock);
    }
    pthread_mutex_unlock(&mr->lock);
    return st;
}
