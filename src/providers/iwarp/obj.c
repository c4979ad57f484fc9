/* obj.c - the iwarp side of the object base (src/common/ndk_prov_obj, §5.1): the hooks that reach
 * an iwarp object's own operations, the finish queued to the progress thread, and the ids.
 *
 * Talks to: progress.c (the finish runs there). Called by every object file. */
#include "iwarp.h"

#include <string.h>

static atomic_uint iw_next_obj_id = 1;

static struct iw_obj *iw_obj_of(struct ndk_prov_obj *b)
{
    return ndk_container_of(b, struct iw_obj, base);
}

/* Progress thread, no lock held: the finish of an object whose close returned STATUS_PENDING. */
static void iw_obj_close_work(struct iw_work *w)
{
    ndk_prov_obj_run_close(&ndk_container_of(w, struct iw_obj, close_work)->base);
}

/* Any thread, any lock held except dev->wq_lock. */
static void iw_obj_queue(struct ndk_prov_obj *b)
{
    struct iw_obj *o = iw_obj_of(b);

    iw_progress_queue(o->dev, &o->close_work);
}

/* Consumer's thread, no lock held. */
static void iw_obj_close_start(struct ndk_prov_obj *b)
{
    struct iw_obj *o = iw_obj_of(b);

    if (o->ops->close_start)
        o->ops->close_start(o);
}

/* Any thread, no lock held. */
static void iw_obj_quiesce(struct ndk_prov_obj *b)
{
    struct iw_obj *o = iw_obj_of(b);

    if (o->ops->quiesce)
        o->ops->quiesce(o);
}

/* Any thread, no lock held; frees o. */
static void iw_obj_destroy(struct ndk_prov_obj *b)
{
    struct iw_obj *o = iw_obj_of(b);

    o->ops->destroy(o);
}

const struct ndk_prov_obj_hooks iw_obj_hooks = {
    .queue = iw_obj_queue,
    .close_start = iw_obj_close_start,
    .quiesce = iw_obj_quiesce,
    .destroy = iw_obj_destroy,
    .always_defer = false,
};

void iw_obj_init(struct iw_obj *o, const struct iw_obj_ops *ops, enum iw_obj_type type, struct iw_adapter *ad,
                 NDK_OBJECT_HEADER *hdr, const void *dispatch)
{
    memset(o, 0, sizeof(*o));
    o->ops = ops;
    o->type = type;
    o->adapter = ad;
    o->dev = ad->dev;
    o->handed_out = true;
    o->close_work.fn = iw_obj_close_work;
    ndk_list_init(&o->close_work.link);
    o->id = atomic_fetch_add_explicit(&iw_next_obj_id, 1, memory_order_relaxed);
    ndk_prov_obj_init(&o->base, &ad->base, hdr, (NDK_OBJECT_TYPE)type, dispatch);
}
