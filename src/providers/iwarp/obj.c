/* obj.c - the object base: reference counts, antecedents and close ordering (NDKPI §5.1).
 *
 * The rules this file implements, and why:
 *  - A close returns STATUS_SUCCESS only when nothing else references the object (no successor,
 *    no request in flight, no callback running); then it finishes inline without any callback.
 *  - Otherwise it returns STATUS_PENDING and the LAST reference drop queues the close completion
 *    to the progress thread. Queuing (instead of calling it from whichever thread dropped the
 *    reference) keeps consumer callbacks out of consumer calls, so a consumer that holds its own
 *    lock around NdkCloseXxx never deadlocks against its close completion.
 *  - The object's own antecedent references are released only after its close completion has
 *    returned, so an antecedent's close can never complete while a successor's close-completion
 *    callback still runs (§5.1 "ordering of close completions"), and the adapter's object count
 *    drops only then too (the blocking adapter close waits for it, §2.2).
 *
 * Talks to: progress.c (close completions are queued to the progress thread). Called by every
 * object file. */
#include "iwarp.h"

#include <stdlib.h>

static atomic_uint iw_next_obj_id = 1;

/* Called once the object is finished: releases antecedents, frees, uncounts on the adapter.
 * Any thread, no lock held. */
static void iw_obj_finish(struct iw_obj *o)
{
    struct iw_adapter *ad = o->adapter;
    struct iw_obj *ante[IW_OBJ_MAX_ANTE];

    for (int i = 0; i < IW_OBJ_MAX_ANTE; i++) {
        ante[i] = o->ante[i];
        o->ante[i] = NULL;
    }
    o->ops->destroy(o);      /* frees o */
    for (int i = 0; i < IW_OBJ_MAX_ANTE; i++)
        if (ante[i])
            iw_obj_put(ante[i]);

    pthread_mutex_lock(&ad->lock);
    if (--ad->nobj == 0)
        pthread_cond_broadcast(&ad->cond);
    pthread_mutex_unlock(&ad->lock);
}

/* Progress thread: the close completion of an object whose close returned STATUS_PENDING. */
static void iw_obj_close_work(struct iw_work *w)
{
    struct iw_obj *o = ndk_container_of(w, struct iw_obj, close_work);

    if (o->ops->quiesce)
        o->ops->quiesce(o);
    if (o->close_cb)
        o->close_cb(o->close_ctx);
    iw_obj_finish(o);
}

void iw_obj_init(struct iw_obj *o, const struct iw_obj_ops *ops, enum iw_obj_type type, struct iw_adapter *ad,
                 NDK_OBJECT_HEADER *hdr, const void *dispatch)
{
    memset(o, 0, sizeof(*o));
    o->ops = ops;
    o->type = type;
    o->adapter = ad;
    o->dev = ad->dev;
    o->hdr = hdr;
    atomic_init(&o->refs, 1);
    atomic_init(&o->closing, false);
    o->handed_out = true;
    o->close_work.fn = iw_obj_close_work;
    ndk_list_init(&o->close_work.link);
    o->id = atomic_fetch_add_explicit(&iw_next_obj_id, 1, memory_order_relaxed);

    /* §1.4: Version = negotiated, ObjectType set, NdkReserved zeroed; §1.5: Dispatch set. */
    memset(hdr, 0, sizeof(*hdr));
    hdr->Version = ad->version;
    hdr->ObjectType = (NDK_OBJECT_TYPE)type;
    /* The public struct is { Header; Dispatch } for every type (§1.5). */
    *(const void **)((char *)hdr + sizeof(NDK_OBJECT_HEADER)) = dispatch;

    pthread_mutex_lock(&ad->lock);
    ad->nobj++;
    pthread_mutex_unlock(&ad->lock);
}

void iw_obj_put(struct iw_obj *o)
{
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* Last reference. The close function holds the consumer reference until it decided, so
     * reaching zero here means the close returned (or will return) STATUS_PENDING. */
    iw_progress_queue(o->dev, &o->close_work);
}

void iw_obj_set_ante(struct iw_obj *o, int slot, struct iw_obj *ante)
{
    struct iw_obj *old = o->ante[slot];

    if (ante)
        iw_obj_get(ante);
    o->ante[slot] = ante;
    if (old)
        iw_obj_put(old);
}

NTSTATUS iw_obj_close(struct iw_obj *o, NDK_FN_CLOSE_COMPLETION cb, void *ctx)
{
    o->close_cb = cb;
    o->close_ctx = ctx;
    atomic_store_explicit(&o->closing, true, memory_order_release);
    if (o->ops->close_start)
        o->ops->close_start(o);
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) {
        if (o->ops->quiesce)
            o->ops->quiesce(o);
        iw_obj_finish(o);
        return STATUS_SUCCESS;
    }
    return STATUS_PENDING;
}

void iw_obj_abort_create(struct iw_obj *o)
{
    o->close_cb = NULL;
    atomic_store(&o->closing, true);
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        iw_obj_finish(o);
}

NTSTATUS iw_query_extension(NDK_OBJECT_HEADER *o, GUID *id, NDK_VERSION v, NDK_EXTENSION_INTERFACE *out)
{
    /* §2.1: no standard extension interfaces exist; we implement none. */
    (void)o;
    (void)id;
    (void)v;
    (void)out;
    return STATUS_NOT_SUPPORTED;
}
