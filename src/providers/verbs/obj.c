/* obj.c - the object base: reference counts, antecedents and close ordering (§5.1).
 *
 * A close marks the object, lets it start flushing, and drops the consumer's reference. The last
 * reference drop queues the finish to the progress thread, which destroys the verbs object,
 * calls the close completion, and only then releases the antecedents and uncounts the object
 * on its adapter: so an antecedent's close never completes while a successor's close completion
 * still runs, and the blocking adapter close waits for every completion to return. A close
 * therefore always returns STATUS_PENDING (§0.4 allows it): verbs destroy calls and their
 * completions stay off the consumer's thread and lock context. */
#include "verbs.h"

#include <string.h>

static void vb_obj_finish(struct vb_work *w)
{
    struct vb_obj *o = ndk_container_of(w, struct vb_obj, close_work);
    struct vb_adapter *ad = o->adapter;
    struct vb_obj *ante[VB_OBJ_MAX_ANTE];
    NDK_FN_CLOSE_COMPLETION cb = o->close_cb;
    void *ctx = o->close_ctx;

    memcpy(ante, o->ante, sizeof ante);
    o->ops->destroy(o);      /* frees o */
    if (cb)
        cb(ctx);
    for (int i = 0; i < VB_OBJ_MAX_ANTE; i++)
        if (ante[i])
            vb_obj_put(ante[i]);
    pthread_mutex_lock(&ad->lock);
    if (--ad->nobj == 0)
        pthread_cond_broadcast(&ad->cond);
    pthread_mutex_unlock(&ad->lock);
}

void vb_obj_init(struct vb_obj *o, const struct vb_obj_ops *ops, enum vb_obj_type type, struct vb_adapter *ad,
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
    o->close_work.fn = vb_obj_finish;
    ndk_list_init(&o->close_work.link);
    memset(hdr, 0, sizeof(*hdr));
    hdr->Version = ad->version;
    hdr->ObjectType = (NDK_OBJECT_TYPE)type;
    /* Every public object is { Header; Dispatch } (§1.5). */
    *(const void **)((char *)hdr + sizeof(NDK_OBJECT_HEADER)) = dispatch;
    pthread_mutex_lock(&ad->lock);
    ad->nobj++;
    pthread_mutex_unlock(&ad->lock);
}

/* Any thread, no lock held. */
void vb_obj_put(struct vb_obj *o)
{
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
        vb_work_queue(o->dev, &o->close_work);
}

void vb_obj_set_ante(struct vb_obj *o, int slot, struct vb_obj *ante)
{
    struct vb_obj *old = o->ante[slot];

    if (ante)
        vb_obj_get(ante);
    o->ante[slot] = ante;
    if (old)
        vb_obj_put(old);
}

/* Consumer thread (or a callback); never blocks. */
NTSTATUS vb_obj_close(struct vb_obj *o, NDK_FN_CLOSE_COMPLETION cb, void *ctx)
{
    o->close_cb = cb;
    o->close_ctx = ctx;
    atomic_store_explicit(&o->closing, true, memory_order_release);
    if (o->ops->close_start)
        o->ops->close_start(o);
    vb_obj_put(o);
    return STATUS_PENDING;
}

/* A create that failed after vb_obj_init: no completion, the finish only frees. */
void vb_obj_abort_create(struct vb_obj *o)
{
    o->close_cb = NULL;
    atomic_store(&o->closing, true);
    vb_obj_put(o);
}

NTSTATUS vb_obj_query_extension(NDK_OBJECT_HEADER *o, GUID *id, NDK_VERSION v, NDK_EXTENSION_INTERFACE *out)
{
    /* No extension interfaces are defined for NDK (§2.1); we implement none. */
    (void)o;
    (void)id;
    (void)v;
    (void)out;
    return STATUS_NOT_SUPPORTED;
}

bool vb_obj_check(const NDK_OBJECT_HEADER *hdr, enum vb_obj_type type)
{
    return hdr && hdr->ObjectType == (NDK_OBJECT_TYPE)type;
}
