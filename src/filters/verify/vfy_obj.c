/* vfy_obj: the per-object state of the verify filter and the lifetime rules (NDKPI Object
 * Lifetime Requirements, Completion Handling Requirements; CLOSE_NDK_ADAPTER_HANDLER). */
#include "vfy.h"

#include <stdio.h>
#include <string.h>

static _Thread_local int callback_depth;

bool flt_verify_in_callback(void) { return callback_depth > 0; }
void flt_verify_callback_enter(void) { callback_depth++; }
void flt_verify_callback_leave(void) { callback_depth--; }

struct vfy_obj *flt_verify_obj(const ndk_filter_obj *fobj)
{
    return fobj ? (struct vfy_obj *)ndk_filter_obj_ctx(fobj) : NULL;
}

static bool is_close(ndk_filter_fn fn)
{
    switch (fn) {
    case NDK_FILTER_FN_CLOSE_CQ: case NDK_FILTER_FN_CLOSE_PD: case NDK_FILTER_FN_CLOSE_MR:
    case NDK_FILTER_FN_CLOSE_MW: case NDK_FILTER_FN_CLOSE_SRQ: case NDK_FILTER_FN_CLOSE_QP:
    case NDK_FILTER_FN_CLOSE_SHARED_ENDPOINT: case NDK_FILTER_FN_CLOSE_CONNECTOR:
    case NDK_FILTER_FN_CLOSE_LISTENER: case NDK_FILTER_FN_CLOSE_ADAPTER:
        return true;
    default:
        return false;
    }
}

/* Never blocks; takes inst->mu. */
void flt_verify_obj_create(void *inst_ctx, ndk_filter_obj *fobj)
{
    struct vfy_inst *inst = inst_ctx;
    struct vfy_obj *o = flt_verify_obj(fobj);
    o->fobj = fobj;
    o->inst = inst;
    o->type = ndk_filter_obj_type(fobj);
    ndk_filter_obj_name(fobj, o->name, sizeof o->name);
    ndk_list_init(&o->link);
    if (o->type == NdkObjectTypeQp || o->type == NdkObjectTypeSrq) {
        pthread_mutex_init(&o->u.qp.mu, NULL);
        ndk_list_init(&o->u.qp.init.outstanding);
        ndk_list_init(&o->u.qp.recv.outstanding);
        ndk_list_init(&o->u.qp.qp_link);
    }
    pthread_mutex_lock(&inst->mu);
    ndk_list_add_tail(&inst->objects, &o->link);
    if (o->type == NdkObjectTypeQp || o->type == NdkObjectTypeSrq)
        ndk_list_add_tail(&inst->qps, &o->u.qp.qp_link);
    pthread_mutex_unlock(&inst->mu);
    if (o->type == NdkObjectTypeAdapter && !inst->info_known) {
        /* The limits the rules compare with (private data sizes, CQ features). The adapter is
         * being opened at PASSIVE_LEVEL, where NdkQueryAdapterInfo may be called. */
        NDK_ADAPTER *lower = (NDK_ADAPTER *)ndk_filter_obj_lower(fobj);
        ULONG size = sizeof inst->info;
        if (lower && lower->Dispatch->NdkQueryAdapterInfo &&
            NT_SUCCESS(lower->Dispatch->NdkQueryAdapterInfo(lower, &inst->info, &size)))
            inst->info_known = true;
    }
}

/* Never blocks; takes inst->mu, then the QP's lock. */
void flt_verify_obj_destroy(void *inst_ctx, ndk_filter_obj *fobj)
{
    struct vfy_inst *inst = inst_ctx;
    struct vfy_obj *o = flt_verify_obj(fobj);
    if (o->type == NdkObjectTypeMr)
        flt_verify_mem_gone(inst, o);
    pthread_mutex_lock(&inst->mu);
    ndk_list_del(&o->link);
    if (o->type == NdkObjectTypeQp || o->type == NdkObjectTypeSrq)
        ndk_list_del(&o->u.qp.qp_link);
    /* The QP outlives its connector (it is the connector's antecedent): it forgets it here. */
    if (o->type == NdkObjectTypeConnector && o->u.conn.qp) {
        struct vfy_obj *qp = flt_verify_obj(o->u.conn.qp);
        if (qp->u.qp.connector == fobj)
            qp->u.qp.connector = NULL;
    }
    pthread_mutex_unlock(&inst->mu);
    if (o->type == NdkObjectTypeQp || o->type == NdkObjectTypeSrq) {
        pthread_mutex_lock(&o->u.qp.mu);
        flt_verify_queue_free(&o->u.qp.init);
        flt_verify_queue_free(&o->u.qp.recv);
        pthread_mutex_unlock(&o->u.qp.mu);
        pthread_mutex_destroy(&o->u.qp.mu);
    }
}

/* The consumer's thread, before forwarding. Returns false when the call must be answered here:
 * after a close was issued the provider need not cope with further calls (Object Lifetime
 * Requirements), so the filter keeps them from it. */
bool flt_verify_obj_enter(struct vfy_obj *o, ndk_filter_call *call)
{
    const char *fn = ndk_filter_fn_name(call->fn);
    if (is_close(call->fn)) {
        if (atomic_exchange(&o->closing, 1)) {
            flt_verify_report(VFY_DOUBLE_CLOSE, o->name, fn, "the object's close was already issued");
            return false;
        }
        int running = atomic_load(&o->calls);
        if (running > 0 && !flt_verify_in_callback() && call->fn != NDK_FILTER_FN_CLOSE_ADAPTER)
            flt_verify_report(VFY_CLOSE_DURING_CALL, o->name, fn,
                              "%d call(s) into the object still running on other threads", running);
        return true;
    }
    if (atomic_load(&o->closing)) {
        flt_verify_report(VFY_USE_AFTER_CLOSE, o->name, fn, "the object's close was already issued");
        return false;
    }
    atomic_fetch_add(&o->calls, 1);
    return true;
}

void flt_verify_obj_leave(struct vfy_obj *o, ndk_filter_call *call)
{
    if (!is_close(call->fn))
        atomic_fetch_sub(&o->calls, 1);
}

/* The consumer's thread, before the blocking close goes down. Takes inst->mu to list the
 * objects still open (their close not issued). */
void flt_verify_adapter_close(struct vfy_inst *inst, struct vfy_obj *adapter)
{
    if (flt_verify_in_callback())
        flt_verify_report(VFY_BLOCKING_IN_CALLBACK, adapter->name, "CloseNDKAdapter",
                          "the blocking adapter close was called from inside an NDK callback");
    char list[400];
    size_t used = 0;
    unsigned open = 0;
    list[0] = '\0';
    pthread_mutex_lock(&inst->mu);
    struct ndk_list *it;
    ndk_list_for_each(it, &inst->objects) {
        struct vfy_obj *o = ndk_list_entry(it, struct vfy_obj, link);
        if (o == adapter || atomic_load(&o->closing))
            continue;
        open++;
        if (used + strlen(o->name) + 8 < sizeof list) {
            int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", o->name);
            used += w > 0 ? (size_t)w : 0;
        } else if (used + 5 < sizeof list && list[used - 1] != '.') {
            used += (size_t)snprintf(list + used, sizeof list - used, ", ...");
        }
    }
    pthread_mutex_unlock(&inst->mu);
    if (open)
        flt_verify_report(VFY_ADAPTER_CLOSE_OPEN, adapter->name, "CloseNDKAdapter",
                          "%u object(s) still open, the close blocks until they are closed: %s", open, list);
}
