/* filter_cb.c - the callbacks the filter layer gives the layer below in place of the
 * consumer's, and their way up: each builds an ndk_filter_cb, runs the filter's callback hook,
 * and ndk_filter_deliver() calls the consumer's callback with the consumer's context and this
 * layer's objects (a created object or an incoming connector is wrapped first).
 *
 * Context: the lower layer's callback thread (the provider's: NDKPI reference §3, callbacks
 * must not block); no lock is held anywhere here. A held callback (ndk_filter_cb_hold) keeps
 * its object referenced, so the object's close completion, which is always the last callback
 * (§3.1, §5.1), waits for it. */
#define _GNU_SOURCE
#pragma GCC visibility push(default)
#include <ndk/filter.h>
#pragma GCC visibility pop
#include "filter_internal.h"
#include "rt_internal.h"

#include <stdlib.h>
#include <string.h>

/* layer_private_[1]: where the callback is in its life. */
#define CB_NEW       ((void *)0)
#define CB_DELIVERED ((void *)1)
#define CB_HELD      ((void *)2)   /* the hook took it; a heap copy will be delivered */
#define CB_COPY      ((void *)3)   /* the heap copy of a held callback */

static void run_hook(struct nf_layer *layer, ndk_filter_cb *cb)
{
    cb->layer_private_[2] = layer;
    if (layer->ops->callback)
        layer->ops->callback(layer->ctx, cb);
    if (cb->layer_private_[1] == CB_NEW)
        ndk_filter_deliver(cb);   /* the hook neither delivered nor held it */
}

void nf_cb_close_completion(struct ndk_filter_obj *obj)
{
    ndk_filter_cb cb = {
        .type = NDK_FILTER_CB_CLOSE_COMPLETION, .fn = nf_close_fn(obj->type), .obj = obj,
        .context = obj->close_ctx,
    };
    cb.layer_private_[0] = obj;
    run_hook(obj->layer, &cb);
}

VOID nf_cb_close_done(PVOID ctx)
{
    nf_obj_release(ctx);   /* the open reference: the object is closed below */
}

VOID nf_cb_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *lower)
{
    struct ndk_filter_obj *n = ctx;
    if (status == STATUS_SUCCESS && !lower)
        status = STATUS_INTERNAL_ERROR;   /* success without an object: a lower-layer bug */
    if (status == STATUS_SUCCESS)
        nf_obj_activate(n, lower);
    ndk_filter_cb cb = {
        .type = NDK_FILTER_CB_CREATE_COMPLETION, .fn = n->create_fn, .obj = n->parent,
        .created = status == STATUS_SUCCESS ? n : NULL, .status = status, .context = n->create_ctx,
    };
    cb.layer_private_[0] = n;
    run_hook(n->layer, &cb);
}

VOID nf_cb_request_done(PVOID ctx, NTSTATUS status)
{
    struct nf_req *r = ctx;
    ndk_filter_cb cb = {
        .type = NDK_FILTER_CB_REQUEST_COMPLETION, .fn = r->fn, .obj = r->obj, .status = status, .context = r->ctx,
    };
    cb.layer_private_[0] = r;
    run_hook(r->obj->layer, &cb);
}

static void event(struct ndk_filter_obj *obj, ndk_filter_cb_type type, NTSTATUS status, ULONG reason)
{
    ndk_filter_cb cb = { .type = type, .obj = obj, .status = status, .reason = reason, .context = obj->ev_ctx };
    cb.layer_private_[0] = obj;
    run_hook(obj->layer, &cb);
}

VOID nf_cb_cq_notify(PVOID ctx, NTSTATUS status)
{
    struct ndk_filter_obj *o = ctx;
    /* Once per arm (§3.4): an arm a filter's raised notification consumed is spent. */
    if (!atomic_exchange(&o->armed, 0) && atomic_load(&o->raised))
        return;
    event(o, NDK_FILTER_CB_CQ_NOTIFICATION, status, 0);
}

VOID nf_cb_srq_notify(PVOID ctx, NTSTATUS status)
{
    event(ctx, NDK_FILTER_CB_SRQ_NOTIFICATION, status, 0);
}

/* At most once per connection (§3.6): a filter may have raised it already. */
VOID nf_cb_disconnect(PVOID ctx)
{
    struct ndk_filter_obj *o = ctx;
    if (!atomic_exchange(&o->disconnected, 1))
        event(o, NDK_FILTER_CB_DISCONNECT_EVENT, STATUS_SUCCESS, 0);
}

VOID nf_cb_disconnect_ex(PVOID ctx, ULONG reason)
{
    struct ndk_filter_obj *o = ctx;
    if (!atomic_exchange(&o->disconnected, 1))
        event(o, NDK_FILTER_CB_DISCONNECT_EVENT_EX, STATUS_SUCCESS, reason);
}

/* CQ notifications are serialised (§3.4, §5.7): one that becomes due while another runs is
 * delivered by the running thread after it returns (the provider's own and a filter's raised
 * ones can otherwise overlap). */
static void cq_notify_up(struct ndk_filter_obj *o, NTSTATUS status)
{
    atomic_store(&o->notify_status, (int)status);
    if (atomic_fetch_add(&o->notify_busy, 1) != 0)
        return;
    do
        o->ev.cq(o->ev_ctx, (NTSTATUS)atomic_load(&o->notify_status));
    while (atomic_fetch_sub(&o->notify_busy, 1) != 1);
}

/* A create the hook turned into a failure: the object exists below, so close it there. */
static void undo_create(struct ndk_filter_obj *n)
{
    n->closing = 1;
    n->close_silent = 1;
    n->close_cb = NULL;
    if (nf_lower_close(n)(n->lower, nf_cb_close_done, n) != STATUS_PENDING)
        nf_obj_release(n);
}

static VOID discard_close_done(PVOID ctx)
{
    (void)ctx;
}

VOID nf_cb_connect_event(PVOID ctx, NDK_CONNECTOR *lower)
{
    struct ndk_filter_obj *listener = ctx;
    struct ndk_filter_obj *n = lower ? nf_obj_new(listener->layer, NdkObjectTypeConnector, listener) : NULL;
    if (!n) {
        /* No wrapper, no way to hand it up: refuse the request below, as a consumer that
         * cannot take it would. */
        rt_log(listener->layer->stack->rt, NDK_LOG_ERROR, "filter %s: out of memory: incoming connection rejected",
               listener->layer->module->name);
        if (lower) {
            lower->Dispatch->NdkReject(lower, NULL, 0);
            lower->Dispatch->NdkCloseConnector(&lower->Header, discard_close_done, NULL);
        }
        return;
    }
    nf_obj_activate(n, &lower->Header);
    ndk_filter_cb cb = {
        .type = NDK_FILTER_CB_CONNECT_EVENT, .obj = listener, .created = n, .context = listener->ev_ctx,
    };
    cb.layer_private_[0] = listener;
    run_hook(listener->layer, &cb);
}

/* Calls the consumer's callback. Context: a callback thread or a filter's own thread (held
 * callbacks); no lock held. */
void ndk_filter_deliver(ndk_filter_cb *cb)
{
    if (!cb || cb->layer_private_[1] == CB_DELIVERED || cb->layer_private_[1] == CB_HELD)
        return;   /* delivered (or taken) already: once only */
    int copy = cb->layer_private_[1] == CB_COPY;
    struct nf_layer *layer = cb->layer_private_[2];
    cb->layer_private_[1] = CB_DELIVERED;
    struct ndk_filter_obj *hold_obj = cb->type == NDK_FILTER_CB_CLOSE_COMPLETION ? NULL : cb->obj;
    switch (cb->type) {
    case NDK_FILTER_CB_CLOSE_COMPLETION: {
        struct ndk_filter_obj *o = cb->layer_private_[0];
        if (o->close_cb)
            o->close_cb(o->close_ctx);
        nf_obj_destroy(o);
        break;
    }
    case NDK_FILTER_CB_CREATE_COMPLETION: {
        struct ndk_filter_obj *n = cb->layer_private_[0];
        int made = cb->status == STATUS_SUCCESS && n->active;
        if (n->create_cb)
            n->create_cb(n->create_ctx, cb->status, made ? &n->pub.hdr : NULL);
        if (!made && n->active)
            undo_create(n);
        else if (!made)
            nf_obj_discard(n);
        break;
    }
    case NDK_FILTER_CB_REQUEST_COMPLETION: {
        struct nf_req *r = cb->layer_private_[0];
        struct ndk_filter_obj *o = r->obj;
        if (r->cb)
            r->cb(r->ctx, cb->status);
        free(r);
        nf_layer_live_add(o->layer, -1);
        nf_obj_release(o);
        break;
    }
    case NDK_FILTER_CB_CQ_NOTIFICATION:
        cq_notify_up(cb->layer_private_[0], cb->status);
        break;
    case NDK_FILTER_CB_SRQ_NOTIFICATION: {
        struct ndk_filter_obj *o = cb->layer_private_[0];
        o->ev.srq(o->ev_ctx, cb->status);
        break;
    }
    case NDK_FILTER_CB_CONNECT_EVENT: {
        struct ndk_filter_obj *o = cb->layer_private_[0];
        o->ev.connect(o->ev_ctx, &cb->created->pub.connector);
        break;
    }
    case NDK_FILTER_CB_DISCONNECT_EVENT: {
        struct ndk_filter_obj *o = cb->layer_private_[0];
        o->ev.disconnect(o->ev_ctx);
        break;
    }
    case NDK_FILTER_CB_DISCONNECT_EVENT_EX: {
        struct ndk_filter_obj *o = cb->layer_private_[0];
        o->ev.disconnect_ex(o->ev_ctx, cb->reason);
        break;
    }
    }
    if (copy) {
        free(cb);
        if (hold_obj)
            nf_obj_release(hold_obj);
        nf_layer_live_add(layer, -1);
    }
}

ndk_filter_cb *ndk_filter_cb_hold(ndk_filter_cb *cb)
{
    if (!cb || cb->layer_private_[1] != CB_NEW)
        return NULL;
    ndk_filter_cb *copy = malloc(sizeof *copy);
    if (!copy)
        return NULL;
    memcpy(copy, cb, sizeof *copy);
    copy->layer_private_[1] = CB_COPY;
    cb->layer_private_[1] = CB_HELD;
    /* The object stays until the copy is delivered: its close completion waits (for a held close
     * completion the object is already finalising; the adapter close waits for it). */
    if (cb->type != NDK_FILTER_CB_CLOSE_COMPLETION)
        nf_obj_ref(cb->obj);
    nf_layer_live_add(cb->layer_private_[2], 1);
    return copy;
}

NTSTATUS ndk_filter_raise(ndk_filter_obj *obj, ndk_filter_cb_type type, NTSTATUS status, ULONG reason)
{
    if (!obj || obj->magic != NF_OBJ_MAGIC || obj->closing)
        return STATUS_INVALID_PARAMETER;
    ndk_filter_cb cb = { .type = type, .obj = obj, .status = status, .reason = reason, .context = obj->ev_ctx };
    cb.layer_private_[0] = obj;
    cb.layer_private_[2] = obj->layer;
    switch (type) {
    case NDK_FILTER_CB_CQ_NOTIFICATION:
        if (obj->type != NdkObjectTypeCq || !obj->ev.cq)
            return STATUS_INVALID_PARAMETER;
        atomic_store(&obj->raised, 1);
        if (!atomic_exchange(&obj->armed, 0))
            return STATUS_INVALID_DEVICE_REQUEST;   /* not armed, or notified since */
        break;
    case NDK_FILTER_CB_DISCONNECT_EVENT:
    case NDK_FILTER_CB_DISCONNECT_EVENT_EX:
        if (obj->type != NdkObjectTypeConnector)
            return STATUS_INVALID_PARAMETER;
        if (!obj->ev.disconnect || atomic_exchange(&obj->disconnected, 1))
            return STATUS_INVALID_DEVICE_REQUEST;   /* nobody registered, or it went up already */
        cb.type = obj->ev_ex ? NDK_FILTER_CB_DISCONNECT_EVENT_EX : NDK_FILTER_CB_DISCONNECT_EVENT;
        break;
    default:
        return STATUS_INVALID_PARAMETER;
    }
    /* Keeps the close completion behind this callback; refuses once the object is finalising. */
    if (!nf_obj_tryref(obj))
        return STATUS_INVALID_DEVICE_REQUEST;
    ndk_filter_deliver(&cb);
    nf_obj_release(obj);
    return STATUS_SUCCESS;
}
