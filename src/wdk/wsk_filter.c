/*
 * wsk_filter.c - the kit's in-process NDK filter, outermost on every adapter WskOpenNdkAdapter
 * opens (ndk-filter(3)). It does two things the kernel does for a Windows driver:
 *
 *   - every consumer callback (completions, CQ and SRQ notifications, connect and disconnect
 *     events) runs with the calling thread's IRQL at DISPATCH_LEVEL, the highest level NDKPI
 *     allows for them ("NDK_FN_REQUEST_COMPLETION callback function (ndkpi.h)" and siblings), so
 *     that a driver which waits or touches paged code in a callback is reported here instead of
 *     failing on Windows;
 *   - it keeps the set of NDK objects open on the instance, so that an object left open at
 *     adapter close or at unload is reported by name ("qp#2"; wsk_ndk.c reports).
 * It also reports NdkQueryAdapterInfo above PASSIVE_LEVEL (that call blocks).
 */
#include "wsk_internal.h"

#include <stdio.h>

#include "wdk_internal.h"

/* Per-object state: the link in the instance's list of live objects. */
struct wsk_flt_obj {
    struct ndk_list link;
    ndk_filter_obj *obj;
    BOOLEAN         live;    /* in the list (under the instance lock) */
};

void wdk_wsk_flt_inst_init(struct wdk_wsk_flt_inst *inst, ULONG ifindex)
{
    pthread_mutex_init(&inst->lock, NULL);
    ndk_list_init(&inst->objs);
    inst->count = 0;
    inst->ifindex = ifindex;
}

void wdk_wsk_flt_inst_fini(struct wdk_wsk_flt_inst *inst)
{
    pthread_mutex_destroy(&inst->lock);
}

ULONG wdk_wsk_flt_open_objects(struct wdk_wsk_flt_inst *inst, char *buf, size_t size)
{
    struct ndk_list *pos;
    size_t used = 0;
    ULONG n;
    if (size)
        buf[0] = '\0';
    pthread_mutex_lock(&inst->lock);
    n = inst->count;
    ndk_list_for_each(pos, &inst->objs) {
        struct wsk_flt_obj *o = ndk_list_entry(pos, struct wsk_flt_obj, link);
        char name[32];
        ndk_filter_obj_name(o->obj, name, sizeof name);
        int w = snprintf(buf + used, size - used, "%s%s", used ? " " : "", name);
        if (w < 0 || (size_t)w >= size - used)
            break;
        used += (size_t)w;
    }
    pthread_mutex_unlock(&inst->lock);
    return n;
}

/* Takes an object off the live list once. Context: any; instance lock only. */
static void wsk_flt_forget(struct wdk_wsk_flt_inst *inst, ndk_filter_obj *obj)
{
    struct wsk_flt_obj *o = ndk_filter_obj_ctx(obj);
    pthread_mutex_lock(&inst->lock);
    if (o->live) {
        o->live = FALSE;
        ndk_list_del(&o->link);
        inst->count--;
    }
    pthread_mutex_unlock(&inst->lock);
}

/* Context: never blocks (instance lock only). */
static void wsk_flt_obj_create(void *inst_ctx, ndk_filter_obj *obj)
{
    struct wdk_wsk_flt_inst *inst = inst_ctx;
    struct wsk_flt_obj *o = ndk_filter_obj_ctx(obj);
    o->obj = obj;
    ndk_list_init(&o->link);
    if (ndk_filter_obj_type(obj) == NdkObjectTypeAdapter)
        return;
    pthread_mutex_lock(&inst->lock);
    ndk_list_add_tail(&inst->objs, &o->link);
    o->live = TRUE;
    inst->count++;
    pthread_mutex_unlock(&inst->lock);
}

static void wsk_flt_obj_destroy(void *inst_ctx, ndk_filter_obj *obj)
{
    wsk_flt_forget(inst_ctx, obj);
}

/* TRUE for the NdkCloseXxx slots of every object but the adapter. */
static BOOLEAN wsk_flt_is_close(ndk_filter_fn fn)
{
    switch (fn) {
    case NDK_FILTER_FN_CLOSE_CQ: case NDK_FILTER_FN_CLOSE_PD: case NDK_FILTER_FN_CLOSE_MR:
    case NDK_FILTER_FN_CLOSE_MW: case NDK_FILTER_FN_CLOSE_SRQ: case NDK_FILTER_FN_CLOSE_QP:
    case NDK_FILTER_FN_CLOSE_SHARED_ENDPOINT: case NDK_FILTER_FN_CLOSE_CONNECTOR:
    case NDK_FILTER_FN_CLOSE_LISTENER:
        return TRUE;
    default:
        return FALSE;
    }
}

/* Every call the driver makes on the instance. Context: the driver's thread, at its IRQL. */
static NTSTATUS wsk_flt_call(void *inst_ctx, ndk_filter_call *call)
{
    KIRQL irql = wdk_irql_get();
    /* The one NDK call that blocks ("NDK_FN_QUERY_ADAPTER_INFO callback function (ndkpi.h)"):
     * from a callback it would stall the provider on Windows. */
    if (call->fn == NDK_FILTER_FN_QUERY_ADAPTER_INFO && irql > PASSIVE_LEVEL)
        wdk_wsk_report("NDK_CALL_IRQL", NULL, "NdkQueryAdapterInfo", "%s called at IRQL %u; it may be called at "
                       "PASSIVE_LEVEL only", ndk_filter_fn_name(call->fn), (unsigned)irql);
    NTSTATUS st = ndk_filter_next(call);
    /* A close done inline: the object is gone for the driver now, whenever the wrapper ends. */
    if (st == STATUS_SUCCESS && wsk_flt_is_close(call->fn))
        wsk_flt_forget(inst_ctx, call->obj);
    return st;
}

/* Every consumer callback: delivered at DISPATCH_LEVEL, the thread's IRQL restored after.
 * Context: the provider's thread (or the driver's, when a completion runs inline). */
static void wsk_flt_callback(void *inst_ctx, ndk_filter_cb *cb)
{
    /* The raw setter: the kit's KeRaiseIrql would name this file as the site of any finding. */
    /* The driver may run on as soon as its close completion returns, before the wrapper's
     * obj_destroy: the object leaves the live set first. */
    if (cb->type == NDK_FILTER_CB_CLOSE_COMPLETION)
        wsk_flt_forget(inst_ctx, cb->obj);
    KIRQL old = wdk_irql_get();
    if (old < DISPATCH_LEVEL)
        wdk_irql_set(DISPATCH_LEVEL);
    ndk_filter_deliver(cb);
    if (old < DISPATCH_LEVEL)
        wdk_irql_set(old);
}

const ndk_filter_ops wdk_wsk_flt_ops = {
    .size = sizeof(ndk_filter_ops),
    .abi_version = NDK_FILTER_ABI_VERSION,
    .name = "wdk-irql",
    .obj_ctx_size = sizeof(struct wsk_flt_obj),
    .obj_create = wsk_flt_obj_create,
    .obj_destroy = wsk_flt_obj_destroy,
    .call = wsk_flt_call,
    .callback = wsk_flt_callback,
};
