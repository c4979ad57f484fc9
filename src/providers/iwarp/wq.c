/* wq.c - the work-queue ring shared by the QP's send and receive queues and the SRQ: a ring of
 * WQEs with push (posting) and pop (the engines, retire, flush), so no other file indexes the
 * ring by hand.
 *
 * Talks to: obj.c (a WQE's memory references). Locking: the owner's lock (qp->lock or srq->lock) is held around every call. */
#include "iwarp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int iw_wq_init(struct iw_wq *q, uint32_t depth, uint32_t max_sge)
{
    memset(q, 0, sizeof(*q));
    if (!depth)
        return 0;
    q->ring = calloc(depth, sizeof(*q->ring));
    if (!q->ring)
        return -ENOMEM;
    q->depth = depth;
    q->max_sge = max_sge;
    return 0;
}

void iw_wq_entry_release(struct iw_wqe *w)
{
    free(w->inline_buf);
    free(w->page_list);
    if (w->mem)
        iw_obj_put(w->mem);
    if (w->mem2)
        iw_obj_put(w->mem2);
    memset(w, 0, sizeof(*w));
}

void iw_wq_free(struct iw_wq *q)
{
    for (uint32_t i = 0; i < q->count; i++)
        iw_wq_entry_release(iw_wq_at(q, i));
    free(q->ring);
    memset(q, 0, sizeof(*q));
}

int iw_wq_push(struct iw_wq *q, const struct iw_wqe *w)
{
    if (iw_wq_full(q))
        return -ENOSPC;
    *iw_wq_at(q, q->count) = *w;
    q->count++;
    return 0;
}

int iw_wq_pop(struct iw_wq *q, struct iw_wqe *out)
{
    struct iw_wqe *w;

    if (!q->count)
        return -ENOBUFS;
    w = iw_wq_at(q, 0);
    *out = *w;
    memset(w, 0, sizeof(*w));        /* the entry's buffers and references now belong to *out */
    q->head = (q->head + 1) % q->depth;
    q->count--;
    return 0;
}

int iw_wq_resize(struct iw_wq *q, uint32_t depth)
{
    struct iw_wqe *ring;

    if (depth < q->count)
        return -EINVAL;              /* never drop posted requests */
    ring = calloc(depth, sizeof(*ring));
    if (!ring)
        return -ENOMEM;
    for (uint32_t i = 0; i < q->count; i++)
        ring[i] = *iw_wq_at(q, i);
    free(q->ring);
    q->ring = ring;
    q->head = 0;
    q->depth = depth;
    return 0;
}
