/* obj.c - the verbs side of the object base (src/common/ndk_prov_obj, §5.1): the hooks that reach
 * a verbs object's own operations and the finish queued to the progress thread, where every
 * verbs destroy call runs (verbs.h). */
#include "verbs.h"

static void vb_obj_queue(struct vb_obj *o)
{
    vb_work_queue(o->dev, &o->close_work);
}

/* rdma-core objects are destroyed on the progress thread only: every close pends. */
NDK_PROV_OBJ_HOOKS(vb_obj_hooks, struct vb_obj, vb_obj_queue, true);

/* Progress thread, no lock held. */
static void vb_obj_finish(struct vb_work *w)
{
    struct vb_obj *o = ndk_container_of(w, struct vb_obj, close_work);

    ndk_prov_obj_run_close(&o->base);
}

void vb_obj_init(struct vb_obj *o, const struct vb_obj_ops *ops, enum vb_obj_type type, struct vb_adapter *ad,
                 NDK_OBJECT_HEADER *hdr, const void *dispatch)
{
    *o = (struct vb_obj){ .ops = ops, .type = type, .adapter = ad, .dev = ad->dev };
    o->close_work = (struct vb_work){ .fn = vb_obj_finish };
    ndk_list_init(&o->close_work.link);
    ndk_prov_obj_init(&o->base, &ad->base, hdr, (NDK_OBJECT_TYPE)type, dispatch);
}
