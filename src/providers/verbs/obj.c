/* obj.c - the verbs side of the object base (src/common/ndk_prov_obj, §5.1): the hooks that reach
 * a verbs object's own operations and the finish queued to the progress thread, where every
 * verbs destroy call runs (verbs.h). */
#include "verbs.h"

#include <string.h>

static struct vb_obj *vb_obj_of(struct ndk_prov_obj *b)
{
    return ndk_container_of(b, struct vb_obj, base);
}

/* Progress thread, no lock held. */
static void vb_obj_close_work(struct vb_work *w)
{
    ndk_prov_obj_run_close(&ndk_container_of(w, struct vb_obj, close_work)->base);
}

/* Any thread, any lock held except dev->wq_lock. */
static void vb_obj_queue(struct ndk_prov_obj *b)
{
    struct vb_obj *o = vb_obj_of(b);

    vb_work_queue(o->dev, &o->close_work);
}

/* Consumer's thread, no lock held. */
static void vb_obj_close_start(struct ndk_prov_obj *b)
{
    struct vb_obj *o = vb_obj_of(b);

    if (o->ops->close_start)
        o->ops->close_start(o);
}

/* Progress thread, no lock held; frees o. */
static void vb_obj_destroy(struct ndk_prov_obj *b)
{
    struct vb_obj *o = vb_obj_of(b);

    o->ops->destroy(o);
}

const struct ndk_prov_obj_hooks vb_obj_hooks = {
    .queue = vb_obj_queue,
    .close_start = vb_obj_close_start,
    .destroy = vb_obj_destroy,
    .always_defer = true,
};

void vb_obj_init(struct vb_obj *o, const struct vb_obj_ops *ops, enum vb_obj_type type, struct vb_adapter *ad,
                 NDK_OBJECT_HEADER *hdr, const void *dispatch)
{
    memset(o, 0, sizeof(*o));
    o->ops = ops;
    o->type = type;
    o->adapter = ad;
    o->dev = ad->dev;
    o->close_work.fn = vb_obj_close_work;
    ndk_list_init(&o->close_work.link);
    ndk_prov_obj_init(&o->base, &ad->base, hdr, (NDK_OBJECT_TYPE)type, dispatch);
}
