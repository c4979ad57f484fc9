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

static uint16_t vb_obj_sv_type(enum vb_obj_type t)
{
    switch (t) {
    case VB_OBJ_QP: return NDK_SV_QP;
    case VB_OBJ_CQ: return NDK_SV_CQ;
    case VB_OBJ_SRQ: return NDK_SV_SRQ;
    case VB_OBJ_PD: return NDK_SV_PD;
    case VB_OBJ_MR: return NDK_SV_MR;
    case VB_OBJ_MW: return NDK_SV_MW;
    case VB_OBJ_CONNECTOR: return NDK_SV_CONNECTOR;
    case VB_OBJ_LISTENER: return NDK_SV_LISTENER;
    case VB_OBJ_SEP: return NDK_SV_SHARED_ENDPOINT;
    }
    return NDK_SV_FREE;
}

/* Create time, no provider lock held: the object's system view record is asked for here and
 * given back by vb_obj_sv_free in its destroy. */
void vb_obj_init(struct vb_obj *o, const struct vb_obj_ops *ops, enum vb_obj_type type, struct vb_adapter *ad,
                 NDK_OBJECT_HEADER *hdr, const void *dispatch)
{
    *o = (struct vb_obj){ .ops = ops, .type = type, .adapter = ad, .dev = ad->dev };
    o->close_work = (struct vb_work){ .fn = vb_obj_finish };
    ndk_list_init(&o->close_work.link);
    ndk_prov_obj_init(&o->base, &ad->base, hdr, (NDK_OBJECT_TYPE)type, dispatch);
    o->sv = vb_sv_alloc(o->dev, vb_obj_sv_type(type));
}

/* Destroy (progress thread): nothing writes the record any more. */
void vb_obj_sv_free(struct vb_obj *o)
{
    vb_sv_free(o->dev, o->sv);
    o->sv = NULL;
}
