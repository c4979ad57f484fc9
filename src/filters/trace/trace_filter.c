/* trace_filter.c - the trace filter (ndk-filter-trace.so): NdkFilterEntry and its hooks. Every
 * call becomes an `ev=call` record after it returned (arguments, status, duration), posts are
 * remembered per QP (before they go down: their completion may be polled first), every poll
 * that returned results gives one `ev=cqe` record per completion with its latency from post,
 * every consumer callback an `ev=cb` record with how long the consumer spent in it, and every
 * object its `ev=new` and `ev=end`. Polls that return nothing are only counted (a busy-polling
 * consumer would otherwise fill the disk); the count is written at unload.
 * Settings (ndk-filters(7)): trace.path (%p = pid; default stderr), trace.format (text|json),
 * trace.stall_ms (0 = no stall watcher). */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_post(ndk_filter_fn fn)
{
    switch (fn) {
    case NDK_FILTER_FN_SEND:
    case NDK_FILTER_FN_SEND_AND_INVALIDATE:
    case NDK_FILTER_FN_RECEIVE:
    case NDK_FILTER_FN_SRQ_RECEIVE:
    case NDK_FILTER_FN_READ:
    case NDK_FILTER_FN_WRITE:
    case NDK_FILTER_FN_BIND:
    case NDK_FILTER_FN_FAST_REGISTER:
    case NDK_FILTER_FN_INVALIDATE:
        return 1;
    default:
        return 0;
    }
}

static void post_info(const ndk_filter_call *c, PVOID *ctx, ULONG *flags)
{
    const ndk_filter_args *a = &c->args;
    *flags = 0;
    switch (c->fn) {
    case NDK_FILTER_FN_READ:
    case NDK_FILTER_FN_WRITE: *ctx = a->rdma.request_context; *flags = a->rdma.flags; break;
    case NDK_FILTER_FN_BIND: *ctx = a->bind.request_context; *flags = a->bind.flags; break;
    case NDK_FILTER_FN_FAST_REGISTER: *ctx = a->fast_register.request_context; *flags = a->fast_register.flags; break;
    case NDK_FILTER_FN_INVALIDATE: *ctx = a->invalidate.request_context; *flags = a->invalidate.flags; break;
    default: *ctx = a->post.request_context; *flags = a->post.flags; break;
    }
}

static struct flt_trace_obj *st_of(const ndk_filter_obj *obj)
{
    return obj ? ndk_filter_obj_ctx(obj) : NULL;
}

/* After a QP was made below: what its completions are matched by. */
static void qp_made(struct flt_trace_module *mod, const ndk_filter_call *c)
{
    struct flt_trace_obj *qp = st_of(c->created);
    const ndk_filter_args *a = &c->args;
    pthread_mutex_lock(&mod->lock);
    if (c->fn == NDK_FILTER_FN_CREATE_QP) {
        qp->qp_context = a->create_qp.qp_context;
        qp->rcq = ndk_filter_obj_of(c->obj, (NDK_OBJECT_HEADER *)a->create_qp.receive_cq);
        qp->icq = ndk_filter_obj_of(c->obj, (NDK_OBJECT_HEADER *)a->create_qp.initiator_cq);
    } else {
        qp->qp_context = a->create_qp_with_srq.qp_context;
        qp->rcq = ndk_filter_obj_of(c->obj, (NDK_OBJECT_HEADER *)a->create_qp_with_srq.receive_cq);
        qp->icq = ndk_filter_obj_of(c->obj, (NDK_OBJECT_HEADER *)a->create_qp_with_srq.initiator_cq);
        qp->srq = ndk_filter_obj_of(c->obj, (NDK_OBJECT_HEADER *)a->create_qp_with_srq.srq);
    }
    ndk_list_add_tail(&mod->qps, &qp->link);
    pthread_mutex_unlock(&mod->lock);
}

static void conn_bind(struct flt_trace_module *mod, ndk_filter_obj *conn, const void *qp_header)
{
    ndk_filter_obj *qp = ndk_filter_obj_of(conn, qp_header);
    if (!qp)
        return;
    pthread_mutex_lock(&mod->lock);
    st_of(conn)->conn = qp;
    st_of(qp)->conn = conn;
    pthread_mutex_unlock(&mod->lock);
}

/* Connection and arm state from the calls (the stall report shows them). */
static void track_call(struct flt_trace_module *mod, const ndk_filter_call *c)
{
    struct flt_trace_obj *s = st_of(c->obj);
    int ok = NT_SUCCESS(c->status);   /* STATUS_PENDING included */
    switch (c->fn) {
    case NDK_FILTER_FN_CREATE_QP:
    case NDK_FILTER_FN_CREATE_QP_WITH_SRQ:
        if (c->created)
            qp_made(mod, c);
        break;
    case NDK_FILTER_FN_CONNECT:
    case NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT:
        if (ok) {
            conn_bind(mod, c->obj, c->args.connect.qp);
            atomic_store(&s->conn_state, FLT_CONN_CONNECTING);
        }
        break;
    case NDK_FILTER_FN_ACCEPT:
    case NDK_FILTER_FN_ACCEPT_EX:
        if (ok) {
            conn_bind(mod, c->obj, c->args.accept.qp);
            atomic_store(&s->conn_state, c->status == STATUS_SUCCESS ? FLT_CONN_CONNECTED : FLT_CONN_CONNECTING);
        }
        break;
    case NDK_FILTER_FN_COMPLETE_CONNECT:
    case NDK_FILTER_FN_COMPLETE_CONNECT_EX:
        if (c->status == STATUS_SUCCESS)
            atomic_store(&s->conn_state, FLT_CONN_CONNECTED);
        break;
    case NDK_FILTER_FN_DISCONNECT:
        atomic_store(&s->conn_state, FLT_CONN_DISCONNECTED);
        break;
    case NDK_FILTER_FN_CLOSE_CONNECTOR:
        atomic_store(&s->conn_state, FLT_CONN_CLOSING);
        break;
    case NDK_FILTER_FN_ARM_CQ:
        atomic_store(&s->arm_type, c->args.arm_cq.type);
        atomic_store(&s->armed, 1);
        break;
    default:
        break;
    }
}

static NTSTATUS trace_call(void *ctx, ndk_filter_call *c)
{
    struct flt_trace_module *mod = ctx;
    uint64_t t0 = flt_trace_now_ns(), seq = 0;
    struct flt_trace_obj *poster = NULL;
    if (is_post(c->fn)) {
        PVOID rctx;
        ULONG flags;
        post_info(c, &rctx, &flags);
        poster = st_of(c->obj);
        flt_trace_wr_posted(poster, c->fn, rctx, flags, t0, &seq);
    }
    NTSTATUS st = ndk_filter_next(c);
    uint64_t t1 = flt_trace_now_ns();
    if (poster && !NT_SUCCESS(st))
        flt_trace_wr_unpost(poster, c->fn, seq);
    ULONG got = c->fn == NDK_FILTER_FN_GET_CQ_RESULTS ? c->args.get_cq_results.returned
              : c->fn == NDK_FILTER_FN_GET_CQ_RESULTS_EX ? c->args.get_cq_results_ex.returned : 1;
    if (!got) {
        atomic_fetch_add_explicit(&mod->empty_polls, 1, memory_order_relaxed);
        return st;
    }
    struct flt_trace_rec r;
    flt_trace_rec_begin(&r, mod, "call", t0);
    flt_trace_rec_obj(&r, "obj", c->obj);
    flt_trace_rec_str(&r, "fn", ndk_filter_fn_name(c->fn));
    flt_trace_args(&r, c, 1);
    if (poster)
        flt_trace_rec_u64(&r, "wr", seq);
    flt_trace_rec_status(&r, "status", st);
    flt_trace_rec_u64(&r, "dur_ns", t1 - t0);
    flt_trace_rec_end(&r);
    if (c->fn == NDK_FILTER_FN_GET_CQ_RESULTS || c->fn == NDK_FILTER_FN_GET_CQ_RESULTS_EX) {
        struct flt_trace_obj *cq = st_of(c->obj);
        flt_trace_wr_polled(mod, c->obj, c->fn == NDK_FILTER_FN_GET_CQ_RESULTS ? c->args.get_cq_results.results : NULL,
                            c->fn == NDK_FILTER_FN_GET_CQ_RESULTS_EX ? c->args.get_cq_results_ex.results : NULL, got,
                            t1);
        (void)cq;
    }
    track_call(mod, c);
    return st;
}

static void trace_callback(void *ctx, ndk_filter_cb *cb)
{
    struct flt_trace_module *mod = ctx;
    struct flt_trace_obj *s = st_of(cb->obj);
    switch (cb->type) {
    case NDK_FILTER_CB_CQ_NOTIFICATION:
        atomic_store(&s->armed, 2);
        break;
    case NDK_FILTER_CB_DISCONNECT_EVENT:
    case NDK_FILTER_CB_DISCONNECT_EVENT_EX:
        atomic_store(&s->conn_state, FLT_CONN_DISCONNECTED);
        break;
    case NDK_FILTER_CB_REQUEST_COMPLETION:
        if (cb->fn == NDK_FILTER_FN_CONNECT || cb->fn == NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT ||
            cb->fn == NDK_FILTER_FN_COMPLETE_CONNECT || cb->fn == NDK_FILTER_FN_COMPLETE_CONNECT_EX ||
            cb->fn == NDK_FILTER_FN_ACCEPT || cb->fn == NDK_FILTER_FN_ACCEPT_EX) {
            int connected = cb->fn != NDK_FILTER_FN_CONNECT && cb->fn != NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT;
            if (!NT_SUCCESS(cb->status))
                atomic_store(&s->conn_state, FLT_CONN_DISCONNECTED);
            else if (connected)
                atomic_store(&s->conn_state, FLT_CONN_CONNECTED);
        }
        break;
    default:
        break;
    }
    /* Names now: a close completion ends the object, and the consumer may close a new one. */
    struct flt_trace_rec r;
    uint64_t t0 = flt_trace_now_ns();
    flt_trace_rec_begin(&r, mod, "cb", t0);
    flt_trace_rec_obj(&r, "obj", cb->obj);
    flt_trace_rec_str(&r, "fn", ndk_filter_cb_name(cb->type));
    if (cb->fn != NDK_FILTER_FN_NONE)
        flt_trace_rec_str(&r, "call", ndk_filter_fn_name(cb->fn));
    flt_trace_rec_hex(&r, "ctx", (uint64_t)(uintptr_t)cb->context);
    flt_trace_rec_status(&r, "status", cb->status);
    if (cb->type == NDK_FILTER_CB_DISCONNECT_EVENT_EX)
        flt_trace_rec_u64(&r, "reason", cb->reason);
    if (cb->created)
        flt_trace_rec_obj(&r, "new", cb->created);
    ndk_filter_deliver(cb);
    flt_trace_rec_u64(&r, "dur_ns", flt_trace_now_ns() - t0);
    flt_trace_rec_end(&r);
}

static void trace_obj_create(void *ctx, ndk_filter_obj *obj)
{
    struct flt_trace_module *mod = ctx;
    struct flt_trace_obj *s = st_of(obj);
    s->mod = mod;
    s->obj = obj;
    ndk_list_init(&s->link);
    flt_trace_wr_init(s);
    struct flt_trace_rec r;
    flt_trace_rec_begin(&r, mod, "new", flt_trace_now_ns());
    flt_trace_rec_obj(&r, "obj", obj);
    flt_trace_rec_obj(&r, "parent", ndk_filter_obj_parent(obj));
    flt_trace_rec_end(&r);
}

static void trace_obj_destroy(void *ctx, ndk_filter_obj *obj)
{
    struct flt_trace_module *mod = ctx;
    struct flt_trace_obj *s = st_of(obj);
    pthread_mutex_lock(&mod->lock);
    ndk_list_del(&s->link);
    if (s->conn)
        st_of(s->conn)->conn = NULL;
    pthread_mutex_unlock(&mod->lock);
    flt_trace_wr_free(s);
    struct flt_trace_rec r;
    flt_trace_rec_begin(&r, mod, "end", flt_trace_now_ns());
    flt_trace_rec_obj(&r, "obj", obj);
    flt_trace_rec_end(&r);
}

static NTSTATUS trace_open(void *module_ctx, ndk_filter_module *module, const char *adapter_name, void **inst_ctx)
{
    struct flt_trace_module *mod = module_ctx;
    struct flt_trace_rec r;
    flt_trace_rec_begin(&r, mod, "open", flt_trace_now_ns());
    flt_trace_rec_str(&r, "adapter", adapter_name);
    flt_trace_rec_u64(&r, "pid", (uint64_t)getpid());
    flt_trace_rec_end(&r);
    *inst_ctx = mod;
    return STATUS_SUCCESS;
}

static NTSTATUS trace_load(ndk_filter_module *module, void **module_ctx)
{
    struct flt_trace_module *mod = calloc(1, sizeof *mod);
    if (!mod)
        return STATUS_INSUFFICIENT_RESOURCES;
    mod->module = module;
    pthread_mutex_init(&mod->lock, NULL);
    ndk_list_init(&mod->qps);
    const char *fmt = ndk_filter_config(module, "format");
    if (fmt && strcmp(fmt, "json") == 0)
        mod->format = FLT_TRACE_JSON;
    else if (fmt && *fmt && strcmp(fmt, "text") != 0)
        ndk_filter_log(module, NDK_LOG_WARNING, "trace.format=%s: not text or json; writing text", fmt);
    const char *stall = ndk_filter_config(module, "stall_ms");
    if (stall && *stall) {
        char *end;
        unsigned long v = strtoul(stall, &end, 10);
        if (*end || v > 3600000u)
            ndk_filter_log(module, NDK_LOG_WARNING, "trace.stall_ms=%s: not a number of ms up to 3600000; no stall watcher",
                           stall);
        else
            mod->stall_ms = (unsigned)v;
    }
    const char *path = ndk_filter_config(module, "path");
    int rc = flt_trace_out_open(mod, path);
    if (rc < 0) {
        ndk_filter_log(module, NDK_LOG_ERROR, "trace.path=%s: %s", path, strerror(-rc));
        pthread_mutex_destroy(&mod->lock);
        free(mod);
        return STATUS_ACCESS_DENIED;
    }
    rc = flt_trace_stall_start(mod);
    if (rc < 0) {
        ndk_filter_log(module, NDK_LOG_ERROR, "no stall watcher thread: %s", strerror(-rc));
        if (mod->own_fd)
            close(mod->fd);
        pthread_mutex_destroy(&mod->lock);
        free(mod);
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    *module_ctx = mod;
    return STATUS_SUCCESS;
}

static void trace_unload(void *module_ctx)
{
    struct flt_trace_module *mod = module_ctx;
    flt_trace_stall_stop(mod);
    struct flt_trace_rec r;
    flt_trace_rec_begin(&r, mod, "unload", flt_trace_now_ns());
    flt_trace_rec_u64(&r, "empty_polls", atomic_load(&mod->empty_polls));
    flt_trace_rec_end(&r);
    if (mod->own_fd)
        close(mod->fd);
    pthread_mutex_destroy(&mod->lock);
    free(mod);
}

static const ndk_filter_ops trace_ops = {
    .size = sizeof(ndk_filter_ops),
    .abi_version = NDK_FILTER_ABI_VERSION,
    .name = "trace",
    .obj_ctx_size = sizeof(struct flt_trace_obj),
    .load = trace_load,
    .unload = trace_unload,
    .open = trace_open,
    .obj_create = trace_obj_create,
    .obj_destroy = trace_obj_destroy,
    .call = trace_call,
    .callback = trace_callback,
};

__attribute__((visibility("default"))) NTSTATUS NdkFilterEntry(ULONG abi_version, const ndk_filter_ops **ops)
{
    if (abi_version < NDK_FILTER_ABI_VERSION)
        return STATUS_NOT_SUPPORTED;
    *ops = &trace_ops;
    return STATUS_SUCCESS;
}
