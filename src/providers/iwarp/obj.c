/* obj.c - the iwarp side of the object base (src/common/ndk_prov_obj, §5.1): the hooks that reach
 * an iwarp object's own operations, the finish queued to the progress thread, and the ids.
 *
 * Talks to: progress.c (the finish runs there). Called by every object file. */
#include "iwarp.h"

#include <string.h>

static atomic_uint iw_next_obj_id = 1;

/* Any thread, any lock held except dev->wq_lock. */
static void iw_obj_queue(struct iw_obj *o)
{
    iw_progress_queue(o->dev, &o->close_work);
}

NDK_PROV_OBJ_HOOK_(iw_obj_hooks, struct iw_obj, close_start)
NDK_PROV_OBJ_HOOK_(iw_obj_hooks, struct iw_obj, quiesce)

/* The type's destroy frees o; its system-view record goes after it, when nothing can write it
 * any more. Any thread, no lock held. */
static void iw_obj_hooks_destroy(struct ndk_prov_obj *b)
{
    struct iw_obj *o = ndk_container_of(b, struct iw_obj, base);
    struct iw_device *dev = o->dev;
    struct ndk_sv_rec *sv = o->sv;
    uint8_t kind = o->sv_kind;

    o->ops->destroy(o);
    iw_sv_free(dev, sv, kind);
}

/* Nothing here needs the progress thread to be destroyed: a close may finish inline. */
static void iw_obj_hooks_queue(struct ndk_prov_obj *b)
{
    iw_obj_queue(ndk_container_of(b, struct iw_obj, base));
}

const struct ndk_prov_obj_hooks iw_obj_hooks = {
    .queue = iw_obj_hooks_queue,
    .close_start = iw_obj_hooks_close_start,
    .quiesce = iw_obj_hooks_quiesce,
    .destroy = iw_obj_hooks_destroy,
    .always_defer = false,
};

/* Progress thread, no lock held: the finish of an object whose close returned STATUS_PENDING. */
static void iw_obj_close_work(struct iw_work *w)
{
    ndk_prov_obj_run_close(&ndk_container_of(w, struct iw_obj, close_work)->base);
}

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
    o->sv = iw_sv_alloc(o->dev, type, &o->sv_kind);
    ndk_prov_obj_init(&o->base, &ad->base, hdr, (NDK_OBJECT_TYPE)type, dispatch);
}
