/* filter_obj.c - the filter layer's wrappers: one struct ndk_filter_obj per NDK object per
 * filter, with its own header and dispatch table, forwarding to the object below. Lifetime by
 * reference count (filter_internal.h says which references exist). Nothing here blocks or takes
 * a lock; a release that finalises an object runs its close completion on the releasing thread,
 * which is always a callback or a call that may complete inline (NDKPI reference §0.4, §5.2). */
#define _GNU_SOURCE
#pragma GCC visibility push(default)
#include <ndk/filter.h>
#pragma GCC visibility pop
#include "filter_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Never blocks: drain_lock is a leaf lock, held only to change or wait for the count (a
 * waiter that sees zero must not free the layer under a thread still signalling). */
void nf_layer_live_add(struct nf_layer *layer, long delta)
{
    pthread_mutex_lock(&layer->drain_lock);
    layer->live += delta;
    if (layer->live == 0)
        pthread_cond_broadcast(&layer->drain_cond);
    pthread_mutex_unlock(&layer->drain_lock);
}

/* A wrapper not yet visible to anyone: one reference (the object's open reference). */
struct ndk_filter_obj *nf_obj_new(struct nf_layer *layer, NDK_OBJECT_TYPE type, struct ndk_filter_obj *parent)
{
    size_t extra = layer->ops->obj_ctx_size;
    struct ndk_filter_obj *obj = calloc(1, sizeof *obj + extra);
    if (!obj)
        return NULL;
    obj->magic = NF_OBJ_MAGIC;
    obj->type = type;
    obj->layer = layer;
    obj->pub.hdr.ObjectType = type;
    obj->pub.adapter.Dispatch = nf_dispatch_table(type);
    atomic_init(&obj->refs, 1);
    if (parent) {
        obj->pub.hdr.Version = parent->pub.hdr.Version;
        obj->parent = parent;
        if (parent->type != NdkObjectTypeAdapter)
            nf_obj_ref(parent);
    }
    if (type != NdkObjectTypeAdapter)
        nf_layer_live_add(layer, 1);
    return obj;
}

/* The object now exists below: take its header's version, give it an id, tell the filter. */
void nf_obj_activate(struct ndk_filter_obj *obj, NDK_OBJECT_HEADER *lower)
{
    obj->lower = lower;
    obj->pub.hdr.Version = lower->Version;
    obj->id = atomic_fetch_add(&obj->layer->module->next_id[obj->type], 1) + 1;
    obj->active = 1;
    if (obj->layer->ops->obj_create)
        obj->layer->ops->obj_create(obj->layer->ctx, obj);
}

static void drop_links(struct ndk_filter_obj *obj)
{
    struct nf_layer *layer = obj->layer;
    struct ndk_filter_obj *parent = obj->parent;
    struct ndk_filter_obj *deps[NF_MAX_DEPS];
    memcpy(deps, obj->deps, sizeof deps);
    int counted = obj->type != NdkObjectTypeAdapter;
    obj->magic = 0;
    free(obj);
    for (int i = 0; i < NF_MAX_DEPS; i++)
        if (deps[i])
            nf_obj_release(deps[i]);
    if (parent && parent->type != NdkObjectTypeAdapter)
        nf_obj_release(parent);
    if (counted)
        nf_layer_live_add(layer, -1);
}

void nf_obj_discard(struct ndk_filter_obj *obj)
{
    drop_links(obj);
}

void nf_obj_destroy(struct ndk_filter_obj *obj)
{
    if (obj->active && obj->layer->ops->obj_destroy)
        obj->layer->ops->obj_destroy(obj->layer->ctx, obj);
    drop_links(obj);
}

void nf_obj_ref(struct ndk_filter_obj *obj)
{
    atomic_fetch_add_explicit(&obj->refs, 1, memory_order_relaxed);
}

int nf_obj_tryref(struct ndk_filter_obj *obj)
{
    long n = atomic_load(&obj->refs);
    while (n > 0)
        if (atomic_compare_exchange_weak(&obj->refs, &n, n + 1))
            return 1;
    return 0;
}

void nf_obj_release(struct ndk_filter_obj *obj)
{
    if (atomic_fetch_sub_explicit(&obj->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (obj->closing && !obj->close_silent)
        nf_cb_close_completion(obj);   /* destroys it once delivered */
    else
        nf_obj_destroy(obj);
}

void nf_obj_add_dep(struct ndk_filter_obj *obj, struct ndk_filter_obj *dep)
{
    for (int i = 0; i < NF_MAX_DEPS; i++) {
        if (!obj->deps[i]) {
            nf_obj_ref(dep);
            obj->deps[i] = dep;
            return;
        }
    }
}

struct ndk_filter_obj *nf_obj_check(const struct nf_layer *layer, const NDK_OBJECT_HEADER *header, NDK_OBJECT_TYPE type)
{
    if (!header)
        return NULL;
    struct ndk_filter_obj *obj = ndk_container_of(header, struct ndk_filter_obj, pub.hdr);
    if (obj->magic != NF_OBJ_MAGIC || obj->layer != layer || (type != NdkObjectTypeUndefined && obj->type != type))
        return NULL;
    return obj;
}

/* ---- public accessors (ndk/filter.h) ---- */

NDK_OBJECT_TYPE ndk_filter_obj_type(const ndk_filter_obj *obj)
{
    return obj ? obj->type : NdkObjectTypeUndefined;
}

ULONG ndk_filter_obj_id(const ndk_filter_obj *obj)
{
    return obj ? obj->id : 0;
}

char *ndk_filter_obj_name(const ndk_filter_obj *obj, char *buf, size_t size)
{
    if (!buf || !size)
        return buf;
    if (!obj)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%s#%u", ndk_filter_object_type_name(obj->type), obj->id);
    return buf;
}

void *ndk_filter_obj_ctx(const ndk_filter_obj *obj)
{
    return obj ? (void *)obj->ctx : NULL;
}

NDK_OBJECT_HEADER *ndk_filter_obj_header(const ndk_filter_obj *obj)
{
    return obj ? (NDK_OBJECT_HEADER *)&obj->pub.hdr : NULL;
}

NDK_OBJECT_HEADER *ndk_filter_obj_lower(const ndk_filter_obj *obj)
{
    return obj ? obj->lower : NULL;
}

ndk_filter_obj *ndk_filter_obj_parent(const ndk_filter_obj *obj)
{
    return obj ? obj->parent : NULL;
}

ndk_filter_obj *ndk_filter_obj_of(const ndk_filter_obj *any, const NDK_OBJECT_HEADER *header)
{
    return any ? nf_obj_check(any->layer, header, NdkObjectTypeUndefined) : NULL;
}
