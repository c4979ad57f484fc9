/* wq.c - the work-queue ring shared by the QP's send and receive queues and the SRQ: a ring of
 * WQEs with push (posting) and pop (the engines, retire, flush), so no other file indexes the
 * ring by hand. The slots are stored in chunks that exist only while something is queued in
 * them (iwarp.h says why).
 *
 * Talks to: obj.c (a WQE's memory references). Locking: the owner's lock (qp->lock or
 * srq->lock) is held around every call but the taker's (iw_wq_take_peek, iw_wq_take_next: the
 * RQ's RX engine, see struct iw_wq). */
#include "iwarp.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static uint32_t wq_nchunks(uint32_t depth)
{
    return (depth + IW_WQ_CHUNK - 1) / IW_WQ_CHUNK;
}

static size_t wq_chunk_bytes(const struct iw_wq *q)
{
    return sizeof(struct iw_wq_chunk) + (size_t)IW_WQ_CHUNK * q->stride;
}

static int wq_init_stride(struct iw_wq *q, uint32_t depth, uint32_t max_sge, uint32_t stride)
{
    memset(q, 0, sizeof(*q));
    q->max_sge = max_sge;
    q->stride = stride;
    if (!depth)
        return 0;
    q->chunk = calloc(wq_nchunks(depth), sizeof(*q->chunk));
    if (!q->chunk)
        return -ENOMEM;
    q->depth = depth;
    return 0;
}

int iw_wq_init(struct iw_wq *q, uint32_t depth, uint32_t max_sge, size_t side_size)
{
    return wq_init_stride(q, depth, max_sge, (uint32_t)(IW_WQ_ALIGN(sizeof(struct iw_wqe)) + IW_WQ_ALIGN(side_size)));
}

/* Every WQE is built from zero except its SGE array (iw_wqe_clear), a free slot is zero, and a
 * pushed WQE's SGEs past nsge are not copied: so those read zero in the ring and in what pop
 * copies out, and only the fields and the first nsge SGEs need copying or clearing. A WQE
 * carries a 256-byte SGE array that a small message would otherwise move three times. */
_Static_assert(offsetof(struct iw_wqe, length) == offsetof(struct iw_wqe, sge) + sizeof(((struct iw_wqe *)0)->sge),
               "iw_wqe_clear and iw_wq_push skip exactly the SGE array: it must sit right before length");

static size_t wq_sge_bytes(const struct iw_wqe *w)
{
    return (size_t)(w->nsge < IW_MAX_SGE ? w->nsge : IW_MAX_SGE) * sizeof(w->sge[0]);
}

void iw_wqe_clear(struct iw_wqe *w)
{
    memset(w, 0, offsetof(struct iw_wqe, sge));
    memset(&w->length, 0, sizeof(*w) - offsetof(struct iw_wqe, length));
}

void iw_wq_entry_release(struct iw_wqe *w)
{
    /* Tested first: most entries own neither, and a receive is released per message. */
    if (w->inline_buf)
        free(w->inline_buf);
    if (w->page_list)
        free(w->page_list);
    if (w->mem)
        iw_obj_put(w->mem);
    if (w->mem2)
        iw_obj_put(w->mem2);
    memset(w->sge, 0, wq_sge_bytes(w));
    iw_wqe_clear(w);
}

/* Frees the storage only: the entries were moved elsewhere or released. */
static void wq_free_chunks(struct iw_wq *q)
{
    for (uint32_t k = 0; q->chunk && k < wq_nchunks(q->depth); k++)
        free(q->chunk[k]);
    free(q->chunk);
    free(q->spare);
    memset(q, 0, sizeof(*q));
}

void iw_wq_free(struct iw_wq *q)
{
    for (uint32_t i = 0; i < q->count; i++)
        iw_wq_entry_release(iw_wq_at(q, i));
    wq_free_chunks(q);
}

/* The tail's slot, its chunk present (it is zero: a free slot); the caller writes the entry there
 * and then counts it with wq_commit. Caller: the queue's owner lock held. */
static int wq_tail(struct iw_wq *q, uint32_t *slot)
{
    struct iw_wq_chunk **c;

    if (iw_wq_full(q))
        return -ENOSPC;
    *slot = iw_wq_slot(q, q->count);
    c = &q->chunk[*slot / IW_WQ_CHUNK];
    if (*c)
        return 0;
    if (q->spare) {
        *c = q->spare;               /* zero: every slot was zeroed when it was popped */
        q->spare = NULL;
        return 0;
    }
    *c = calloc(1, wq_chunk_bytes(q));
    return *c ? 0 : -ENOMEM;
}

int iw_wq_reserve(struct iw_wq *q)
{
    uint32_t slot;

    return wq_tail(q, &slot);
}

static void wq_commit(struct iw_wq *q, uint32_t slot)
{
    q->chunk[slot / IW_WQ_CHUNK]->used++;
    q->count++;
}

int iw_wq_push(struct iw_wq *q, const struct iw_wqe *w)
{
    uint32_t slot;
    int err = wq_tail(q, &slot);

    if (err)
        return err;
    struct iw_wqe *d = iw_wq_slot_ptr(q, slot);
    memcpy(d, w, offsetof(struct iw_wqe, sge) + wq_sge_bytes(w));
    memcpy(&d->length, &w->length, sizeof(*w) - offsetof(struct iw_wqe, length));
    wq_commit(q, slot);
    return 0;
}

int iw_wq_push_receive(struct iw_wq *q, void *rctx, const NDK_SGE *sgl, uint32_t nsge, uint64_t length,
                       uint64_t posted_ns)
{
    uint32_t slot;
    int err = wq_tail(q, &slot);

    if (err)
        return err;
    /* Built where it lies: the free slot is zero, so only what a receive has is written, where
     * a WQE built aside would be cleared, filled and then copied in. */
    struct iw_wqe *d = iw_wq_slot_ptr(q, slot);
    d->op = IW_WR_RECEIVE;
    d->request_context = rctx;
    d->nsge = nsge;
    iw_wqe_copy_sges(d->sge, sgl, nsge);
    d->length = length;
    d->posted_ns = posted_ns;
    wq_commit(q, slot);
    /* One pusher at a time (the lock): a load and a store. */
    atomic_store_explicit(&q->published, atomic_load_explicit(&q->published, memory_order_relaxed) + 1,
                          memory_order_release);
    return 0;
}

/* The head slot was emptied and zeroed: gives its chunk back if it was the chunk's last entry. */
static void wq_advance(struct iw_wq *q)
{
    struct iw_wq_chunk **c = &q->chunk[q->head / IW_WQ_CHUNK];

    if (--(*c)->used == 0) {
        if (!q->spare)
            q->spare = *c;
        else
            free(*c);
        *c = NULL;
    }
    q->head = iw_wq_slot(q, 1);
    q->count--;
}

int iw_wq_pop(struct iw_wq *q, struct iw_wqe *out)
{
    uint32_t slot = q->head;

    if (!q->count)
        return -ENOBUFS;
    memcpy(out, iw_wq_slot_ptr(q, slot), sizeof(*out));
    memset(iw_wq_slot_ptr(q, slot), 0, q->stride);   /* its buffers and references now belong to *out */
    wq_advance(q);
    return 0;
}

/* Retire's pop: it needs a few fields only, so the entry is released where it lies instead of
 * being copied out (a WQE with its SGE array is some 400 bytes, and a small message pays for
 * each copy). */
int iw_wq_drop(struct iw_wq *q)
{
    uint32_t slot = q->head;
    size_t wqe = IW_WQ_ALIGN(sizeof(struct iw_wqe));

    if (!q->count)
        return -ENOBUFS;
    iw_wq_entry_release(iw_wq_slot_ptr(q, slot));    /* zeroes the WQE */
    if (q->stride > wqe)                             /* the RQ has no side state */
        memset(iw_wq_side(q, slot), 0, q->stride - wqe); /* and the side state: a free slot is zero */
    wq_advance(q);
    return 0;
}

int iw_wq_resize(struct iw_wq *q, uint32_t depth)
{
    struct iw_wq n;

    if (depth < q->count)
        return -EINVAL;              /* never drop posted requests */
    if (wq_init_stride(&n, depth, q->max_sge, q->stride) < 0)
        return -ENOMEM;
    for (uint32_t i = 0; i < q->count; i++) {
        uint32_t slot;
        if (wq_tail(&n, &slot) < 0) {
            wq_free_chunks(&n);      /* copies only: the entries still belong to q */
            return -ENOMEM;
        }
        memcpy(iw_wq_slot_ptr(&n, slot), iw_wq_at(q, i), q->stride);
        wq_commit(&n, slot);
    }
    wq_free_chunks(q);
    *q = n;
    return 0;
}

/* ---- the taker ---- */

void iw_wq_take_reset(struct iw_wq *q)
{
    iw_wq_reap(q);
    q->reaped = 0;
    q->take_slot = q->head;
    atomic_store_explicit(&q->taken, 0, memory_order_relaxed);
    atomic_store_explicit(&q->published, q->count, memory_order_release);
}

const struct iw_wqe *iw_wq_take_peek(struct iw_wq *q)
{
    uint32_t t = atomic_load_explicit(&q->taken, memory_order_relaxed);   /* our own */

    /* Acquire: the entry, and its chunk's pointer, were written before they were published. */
    if (atomic_load_explicit(&q->published, memory_order_acquire) == t)
        return NULL;
    return iw_wq_slot_ptr(q, q->take_slot);
}

void iw_wq_take_next(struct iw_wq *q)
{
    q->take_slot = q->take_slot + 1 == q->depth ? 0 : q->take_slot + 1;
    /* Release: our reads of the entry come before the reaper may clear it. */
    atomic_store_explicit(&q->taken, atomic_load_explicit(&q->taken, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* Drops the head entry, a receive the taker took: iw_wq_push_receive wrote only these fields into
 * a zero slot and a receive owns nothing, so clearing them gives the slot back zero, where
 * iw_wq_drop would clear the whole WQE and look for buffers and references. */
static void wq_drop_receive(struct iw_wq *q)
{
    struct iw_wqe *d = iw_wq_slot_ptr(q, q->head);

    if (d->op != IW_WR_RECEIVE || q->stride != IW_WQ_ALIGN(sizeof(struct iw_wqe))) {
        iw_wq_drop(q);                          /* not what the taker's queue holds: the general way */
        return;
    }
    if (d->nsge == 1)
        d->sge[0] = (NDK_SGE){ 0 };             /* the usual one: two stores, not a sized memset */
    else
        memset(d->sge, 0, wq_sge_bytes(d));
    d->op = 0;
    d->request_context = NULL;
    d->nsge = 0;
    d->length = 0;
    d->posted_ns = 0;
    wq_advance(q);
}

void iw_wq_reap(struct iw_wq *q)
{
    uint32_t t = atomic_load_explicit(&q->taken, memory_order_acquire);

    /* Taken entries are the oldest, in order: dropping from the head drops exactly them. */
    while (q->reaped != t) {
        wq_drop_receive(q);
        q->reaped++;
    }
}
