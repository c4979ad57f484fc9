/*
 * vfy_filter: the verify filter module (ndk-filter-verify.so), a Driver Verifier for NDK
 * consumers. Its hooks run every check of vfy_obj.c, vfy_post.c, vfy_mem.c and vfy_cm.c on the
 * calls and callbacks the filter layer (ndk/filter.h) hands it. Settings (ndk-filters(7)):
 *   verify.action    report (default) | abort   abort the process after an error
 *   verify.path      file for reports (default stderr); %p is the pid
 *   verify.backtrace 1 (default) | 0
 */
#include "vfy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A create that pended: its arguments wait for the create completion. inst->mu guards the list. */
struct vfy_pending_create {
    struct vfy_pending_create *next;
    ndk_filter_call            call;
};

struct vfy_module {
    ndk_filter_module *module;
};

static struct vfy_pending_create *pending_creates;
static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;   /* pending_creates */

/* The module is loaded once per runtime, and a process may open several runtimes; they share
 * the report output, opened by the first load and closed by the last unload (load_mu). */
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned loads;

/* Once per runtime; may block (opens the report file). */
static NTSTATUS vfy_load(ndk_filter_module *module, void **module_ctx)
{
    struct vfy_module *m = calloc(1, sizeof *m);
    if (!m)
        return STATUS_INSUFFICIENT_RESOURCES;
    m->module = module;
    const char *action = ndk_filter_config(module, "action");
    const char *path = ndk_filter_config(module, "path");
    const char *bt = ndk_filter_config(module, "backtrace");
    enum flt_verify_action a = VFY_ACTION_REPORT;
    if (action && !strcmp(action, "abort"))
        a = VFY_ACTION_ABORT;
    else if (action && strcmp(action, "report"))
        ndk_filter_log(module, NDK_LOG_WARNING, "verify.action=%s: expected report or abort; reporting", action);
    pthread_mutex_lock(&load_mu);
    int rc = loads++ ? 0 : flt_verify_report_open(path, a, !(bt && !strcmp(bt, "0")));
    pthread_mutex_unlock(&load_mu);
    if (rc)
        ndk_filter_log(module, NDK_LOG_WARNING, "verify.path=%s: cannot open (%s); reporting to stderr", path,
                       strerror(-rc));
    *module_ctx = m;
    return STATUS_SUCCESS;
}

static void vfy_unload(void *module_ctx)
{
    pthread_mutex_lock(&load_mu);
    if (!--loads)
        flt_verify_report_close();
    pthread_mutex_unlock(&load_mu);
    free(module_ctx);
}

/* Per adapter instance; may block. */
static NTSTATUS vfy_open(void *module_ctx, ndk_filter_module *module, const char *adapter_name, void **inst_ctx)
{
    (void)module_ctx;
    struct vfy_inst *inst = calloc(1, sizeof *inst);
    if (!inst)
        return STATUS_INSUFFICIENT_RESOURCES;
    inst->module = module;
    snprintf(inst->adapter_name, sizeof inst->adapter_name, "%s", adapter_name ? adapter_name : "?");
    pthread_mutex_init(&inst->mu, NULL);
    ndk_list_init(&inst->objects);
    ndk_list_init(&inst->qps);
    *inst_ctx = inst;
    return STATUS_SUCCESS;
}

/* After the adapter and every object are gone: the summary. May block. */
static void vfy_close(void *inst_ctx)
{
    struct vfy_inst *inst = inst_ctx;
    char what[96];
    snprintf(what, sizeof what, "at close of %s (since load)", inst->adapter_name);
    flt_verify_report_summary(what);
    flt_verify_token_forget_all(inst);
    pthread_mutex_destroy(&inst->mu);
    free(inst);
}

static bool is_post(ndk_filter_fn fn)
{
    switch (fn) {
    case NDK_FILTER_FN_SEND: case NDK_FILTER_FN_SEND_AND_INVALIDATE: case NDK_FILTER_FN_RECEIVE:
    case NDK_FILTER_FN_SRQ_RECEIVE: case NDK_FILTER_FN_BIND: case NDK_FILTER_FN_FAST_REGISTER:
    case NDK_FILTER_FN_INVALIDATE: case NDK_FILTER_FN_READ: case NDK_FILTER_FN_WRITE:
        return true;
    default:
        return false;
    }
}

static bool is_qp_create(ndk_filter_fn fn)
{
    return fn == NDK_FILTER_FN_CREATE_QP || fn == NDK_FILTER_FN_CREATE_QP_WITH_SRQ || fn == NDK_FILTER_FN_CREATE_SRQ;
}

/* Applies what a create's arguments say to the new object. */
static void created(struct vfy_inst *inst, struct vfy_obj *parent, ndk_filter_call *call, ndk_filter_obj *obj)
{
    if (is_qp_create(call->fn))
        flt_verify_qp_created(inst, parent, call, flt_verify_obj(obj));
    else if (call->fn == NDK_FILTER_FN_CREATE_MR)
        flt_verify_obj(obj)->u.mr.fast = call->args.create_mr.fast_register != 0;
}

static PVOID create_context(const ndk_filter_call *call)
{
    switch (call->fn) {
    case NDK_FILTER_FN_CREATE_QP: return call->args.create_qp.context;
    case NDK_FILTER_FN_CREATE_QP_WITH_SRQ: return call->args.create_qp_with_srq.context;
    case NDK_FILTER_FN_CREATE_SRQ: return call->args.create_srq.context;
    case NDK_FILTER_FN_CREATE_MR: return call->args.create_mr.context;
    default: return NULL;
    }
}

/* A value for the consumer when the filter keeps a call from the provider. */
static NTSTATUS refused(ndk_filter_call *call)
{
    switch (call->fn) {
    case NDK_FILTER_FN_GET_CQ_RESULTS: call->args.get_cq_results.returned = 0; break;
    case NDK_FILTER_FN_GET_CQ_RESULTS_EX: call->args.get_cq_results_ex.returned = 0; break;
    case NDK_FILTER_FN_GET_LOCAL_TOKEN_FROM_MR: case NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MR:
    case NDK_FILTER_FN_GET_REMOTE_TOKEN_FROM_MW:
        call->args.get_token.token = 0;
        break;
    default: break;
    }
    call->status = STATUS_INVALID_HANDLE;
    return STATUS_INVALID_HANDLE;
}

/* The consumer's thread; blocks only where the call itself may. */
static NTSTATUS vfy_call(void *inst_ctx, ndk_filter_call *call)
{
    struct vfy_inst *inst = inst_ctx;
    struct vfy_obj *o = flt_verify_obj(call->obj);
    if (!flt_verify_obj_enter(o, call))
        return refused(call);
    struct vfy_req *req = NULL;
    NDK_OBJECT_TYPE type = o->type;
    int conn_before = type == NdkObjectTypeConnector ? atomic_load(&o->u.conn.state) : 0;

    if (call->fn == NDK_FILTER_FN_CLOSE_ADAPTER)
        flt_verify_adapter_close(inst, o);
    else if (call->fn == NDK_FILTER_FN_QUERY_ADAPTER_INFO && flt_verify_in_callback())
        flt_verify_report(VFY_BLOCKING_IN_CALLBACK, o->name, ndk_filter_fn_name(call->fn),
                          "NdkQueryAdapterInfo is PASSIVE_LEVEL only and blocks; it was called from an NDK callback");
    if (is_post(call->fn)) {
        flt_verify_mem_post(o, call);
        flt_verify_post_before(inst, o, call, &req);
    } else if (type == NdkObjectTypeCq) {
        flt_verify_cq_before(inst, o, call);
    } else if (type == NdkObjectTypeMr || type == NdkObjectTypePd) {
        flt_verify_mem_call(inst, o, call);
    } else if (type == NdkObjectTypeConnector || type == NdkObjectTypeListener ||
               call->fn == NDK_FILTER_FN_CREATE_SHARED_ENDPOINT ||
               call->fn == NDK_FILTER_FN_SHARED_ENDPOINT_GET_LOCAL_ADDRESS) {
        flt_verify_cm_call(inst, o, call);
    } else if (call->fn == NDK_FILTER_FN_CLOSE_QP || call->fn == NDK_FILTER_FN_FLUSH) {
        /* nothing: closing or flushing a QP with requests outstanding is legal */
    }

    struct vfy_pending_create *pc = NULL;
    if (is_qp_create(call->fn) || call->fn == NDK_FILTER_FN_CREATE_MR) {
        pc = calloc(1, sizeof *pc);
        if (pc) {
            pc->call = *call;
            pthread_mutex_lock(&pending_mu);
            pc->next = pending_creates;
            pending_creates = pc;
            pthread_mutex_unlock(&pending_mu);
        }
    }

    NTSTATUS st = ndk_filter_next(call);
    flt_verify_obj_leave(o, call);

    if (pc && st != STATUS_PENDING) {
        pthread_mutex_lock(&pending_mu);
        for (struct vfy_pending_create **p = &pending_creates; *p; p = &(*p)->next)
            if (*p == pc) {
                *p = pc->next;
                break;
            }
        pthread_mutex_unlock(&pending_mu);
        free(pc);
        if (st == STATUS_SUCCESS && call->created)
            created(inst, o, call, call->created);
    }
    if (is_post(call->fn))
        flt_verify_post_after(o, call, req);
    else if (type == NdkObjectTypeCq)
        flt_verify_cq_after(inst, o, call);
    else if (type == NdkObjectTypeMr || type == NdkObjectTypePd)
        flt_verify_mem_done(inst, o, call);
    else if (type == NdkObjectTypeConnector)
        flt_verify_cm_done(inst, o, call, conn_before);
    return st;
}

/* The provider's thread; never blocks. State changes first, so that calls the consumer makes
 * from inside the callback see them; the thread counts as inside a callback while it runs. */
static void vfy_callback(void *inst_ctx, ndk_filter_cb *cb)
{
    struct vfy_inst *inst = inst_ctx;
    if (cb->type == NDK_FILTER_CB_CREATE_COMPLETION &&
        (is_qp_create(cb->fn) || cb->fn == NDK_FILTER_FN_CREATE_MR)) {
        struct vfy_pending_create *pc = NULL;
        pthread_mutex_lock(&pending_mu);
        for (struct vfy_pending_create **p = &pending_creates; *p; p = &(*p)->next)
            if ((*p)->call.fn == cb->fn && create_context(&(*p)->call) == cb->context) {
                pc = *p;
                *p = pc->next;
                break;
            }
        pthread_mutex_unlock(&pending_mu);
        if (pc && cb->created && NT_SUCCESS(cb->status))
            created(inst, flt_verify_obj(cb->obj), &pc->call, cb->created);
        free(pc);
    }
    if (cb->type == NDK_FILTER_CB_REQUEST_COMPLETION && cb->obj && ndk_filter_obj_type(cb->obj) == NdkObjectTypeMr)
        flt_verify_mem_completion(flt_verify_obj(cb->obj), cb);
    flt_verify_cm_callback(inst, cb);
    flt_verify_callback_enter();
    ndk_filter_deliver(cb);
    flt_verify_callback_leave();
}

static const ndk_filter_ops vfy_ops = {
    .size = sizeof(ndk_filter_ops),
    .abi_version = NDK_FILTER_ABI_VERSION,
    .name = "verify",
    .obj_ctx_size = sizeof(struct vfy_obj),
    .load = vfy_load,
    .unload = vfy_unload,
    .open = vfy_open,
    .close = vfy_close,
    .obj_create = flt_verify_obj_create,
    .obj_destroy = flt_verify_obj_destroy,
    .call = vfy_call,
    .callback = vfy_callback,
};

__attribute__((visibility("default"))) NTSTATUS NdkFilterEntry(ULONG abi_version, const ndk_filter_ops **ops)
{
    if (abi_version < NDK_FILTER_ABI_VERSION)
        return STATUS_NOT_SUPPORTED;
    *ops = &vfy_ops;
    return STATUS_SUCCESS;
}
