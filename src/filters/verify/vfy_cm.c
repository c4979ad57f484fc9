/* vfy_cm: connection management (NDK_FN_CONNECT, NDK_FN_COMPLETE_CONNECT, NDK_FN_ACCEPT,
 * NDK_FN_REJECT, NDK_FN_GET_CONNECTION_DATA, NDK_FN_DISCONNECT, NDK_FN_LISTEN). The connector's
 * state machine follows what the consumer issued and what the provider completed. */
#include "vfy.h"

#include <netinet/in.h>
#include <stdio.h>

static const char *const state_names[] = {
    "idle", "connecting", "accepted by the peer", "completing", "incoming", "accepting",
    "established", "rejected", "failed", "disconnected",
};

static const char *state_name(int s)
{
    return s >= 0 && (size_t)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "?";
}

/* Moves the connector from one of the states in `from` (bit mask) to `to`; returns false (and
 * changes nothing) when it is in none of them. */
static bool transition(struct vfy_obj *c, unsigned from, int to)
{
    int cur = atomic_load(&c->u.conn.state);
    while (from & (1u << cur)) {
        if (atomic_compare_exchange_weak(&c->u.conn.state, &cur, to))
            return true;
    }
    return false;
}

#define S(x) (1u << VFY_CONN_##x)

static void check_address(struct vfy_obj *o, const char *fn, const char *what, const SOCKADDR *a, ULONG len)
{
    if (!a) {
        flt_verify_report(VFY_ADDRESS_LENGTH, o->name, fn, "the %s address is NULL", what);
        return;
    }
    if (len < sizeof a->sa_family) {
        flt_verify_report(VFY_ADDRESS_LENGTH, o->name, fn, "the %s address is %lu bytes", what, (unsigned long)len);
        return;
    }
    ULONG need = a->sa_family == AF_INET ? sizeof(struct sockaddr_in) : a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
    if (!need)
        flt_verify_report(VFY_ADDRESS_LENGTH, o->name, fn, "the %s address has family %u, not AF_INET or AF_INET6", what,
                          (unsigned)a->sa_family);
    else if (len < need)
        flt_verify_report(VFY_ADDRESS_LENGTH, o->name, fn, "the %s address is %lu bytes, its family needs %lu", what,
                          (unsigned long)len, (unsigned long)need);
}

static void check_private_data(struct vfy_inst *inst, struct vfy_obj *o, const char *fn, const void *data, ULONG len,
                               bool caller)
{
    if (!data && len)
        flt_verify_report(VFY_BUFFER_PROTOCOL, o->name, fn, "private data NULL with length %lu", (unsigned long)len);
    if (!inst->info_known)
        return;
    ULONG max = caller ? inst->info.MaxCallerData : inst->info.MaxCalleeData;
    if (len > max)
        flt_verify_report(VFY_PRIVATE_DATA_LENGTH, o->name, fn, "%lu bytes of private data, the adapter's %s is %lu",
                          (unsigned long)len, caller ? "MaxCallerData" : "MaxCalleeData", (unsigned long)max);
}

/* Binds qp to connector c for a connect or an accept. */
static void bind_qp(struct vfy_obj *c, const char *fn, NDK_QP *qp_header)
{
    struct vfy_obj *qp = flt_verify_obj(ndk_filter_obj_of(c->fobj, qp_header ? &qp_header->Header : NULL));
    if (!qp)
        return;
    pthread_mutex_lock(&c->inst->mu);
    bool again = atomic_exchange(&qp->u.qp.bound, 1);
    char old[24] = "a connection";
    if (again && qp->u.qp.connector)
        snprintf(old, sizeof old, "%s", flt_verify_obj(qp->u.qp.connector)->name);
    qp->u.qp.connector = c->fobj;
    c->u.conn.qp = qp->fobj;
    pthread_mutex_unlock(&c->inst->mu);
    if (again)
        flt_verify_report(VFY_QP_REUSE, c->name, fn, "%s is already bound to %s", qp->name, old);
}

/* A connection attempt failed: its QP may be tried again. */
static void unbind_qp(struct vfy_obj *c)
{
    pthread_mutex_lock(&c->inst->mu);
    struct vfy_obj *qp = c->u.conn.qp ? flt_verify_obj(c->u.conn.qp) : NULL;
    if (qp && qp->u.qp.connector == c->fobj)
        atomic_store(&qp->u.qp.bound, 0);
    pthread_mutex_unlock(&c->inst->mu);
}

static void wrong_state(struct vfy_obj *c, const char *fn, const char *want)
{
    flt_verify_report(VFY_CONNECTOR_STATE, c->name, fn, "the connector is %s; the call needs %s",
                      state_name(atomic_load(&c->u.conn.state)), want);
}

/* The consumer's thread, before a connector or listener call goes down. */
void flt_verify_cm_call(struct vfy_inst *inst, struct vfy_obj *o, ndk_filter_call *call)
{
    const char *fn = ndk_filter_fn_name(call->fn);
    switch (call->fn) {
    case NDK_FILTER_FN_CONNECT: case NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT:
        if (call->fn == NDK_FILTER_FN_CONNECT && call->args.connect.source)
            check_address(o, fn, "source", call->args.connect.source, call->args.connect.source_length);
        check_address(o, fn, "destination", call->args.connect.destination, call->args.connect.destination_length);
        check_private_data(inst, o, fn, call->args.connect.private_data, call->args.connect.private_data_length, true);
        /* A connector whose attempt failed may try again; one that connected may not. */
        if (!transition(o, S(IDLE) | S(FAILED), VFY_CONN_CONNECTING))
            wrong_state(o, fn, "a new connector");
        else
            bind_qp(o, fn, call->args.connect.qp);
        break;
    case NDK_FILTER_FN_COMPLETE_CONNECT: case NDK_FILTER_FN_COMPLETE_CONNECT_EX:
        if (!transition(o, S(ACCEPTED), VFY_CONN_COMPLETING))
            wrong_state(o, fn, "a successful NdkConnect before it");
        break;
    case NDK_FILTER_FN_ACCEPT: case NDK_FILTER_FN_ACCEPT_EX:
        check_private_data(inst, o, fn, call->args.accept.private_data, call->args.accept.private_data_length, false);
        if (!transition(o, S(INCOMING), VFY_CONN_ACCEPTING))
            wrong_state(o, fn, "a connector delivered by a connect event, not yet accepted or rejected");
        else
            bind_qp(o, fn, call->args.accept.qp);
        break;
    case NDK_FILTER_FN_REJECT:
        check_private_data(inst, o, fn, call->args.reject.private_data, call->args.reject.private_data_length, false);
        if (!transition(o, S(INCOMING) | S(ACCEPTED), VFY_CONN_REJECTED))
            wrong_state(o, fn, "an incoming connector, or one whose NdkConnect succeeded");
        break;
    case NDK_FILTER_FN_GET_CONNECTION_DATA: {
        ULONG *len = call->args.get_connection_data.private_data_length;
        if (!len)
            flt_verify_report(VFY_BUFFER_PROTOCOL, o->name, fn, "pPrivateDataLength is NULL");
        else if (!call->args.get_connection_data.private_data && *len)
            flt_verify_report(VFY_BUFFER_PROTOCOL, o->name, fn, "pPrivateData is NULL with *pPrivateDataLength %lu",
                              (unsigned long)*len);
        int s = atomic_load(&o->u.conn.state);
        if (s == VFY_CONN_ESTABLISHED || s == VFY_CONN_COMPLETING || s == VFY_CONN_ACCEPTING)
            flt_verify_report(VFY_CONNECTION_DATA_STATE, o->name, fn, "the connector is %s", state_name(s));
        break;
    }
    case NDK_FILTER_FN_CONNECTOR_GET_LOCAL_ADDRESS: case NDK_FILTER_FN_GET_PEER_ADDRESS:
    case NDK_FILTER_FN_LISTENER_GET_LOCAL_ADDRESS: case NDK_FILTER_FN_SHARED_ENDPOINT_GET_LOCAL_ADDRESS:
        if (!call->args.get_address.address_length)
            flt_verify_report(VFY_BUFFER_PROTOCOL, o->name, fn, "pAddressLength is NULL");
        break;
    case NDK_FILTER_FN_LISTEN:
        check_address(o, fn, "listen", call->args.listen.address, call->args.listen.address_length);
        break;
    case NDK_FILTER_FN_CREATE_SHARED_ENDPOINT:
        check_address(o, fn, "local", call->args.create_shared_endpoint.address,
                      call->args.create_shared_endpoint.address_length);
        break;
    case NDK_FILTER_FN_DISCONNECT: {
        struct vfy_obj *qp = o->u.conn.qp ? flt_verify_obj(o->u.conn.qp) : NULL;
        if (qp && atomic_load(&o->u.conn.state) == VFY_CONN_ESTABLISHED) {
            ULONG n = flt_verify_qp_outstanding(qp);
            if (n)
                flt_verify_report(VFY_DISCONNECT_OUTSTANDING, o->name, fn,
                                  "%lu initiator request(s) on %s not yet completed", (unsigned long)n, qp->name);
            pthread_mutex_lock(&qp->u.qp.mu);
            bool open = qp->u.qp.init.defer_open;
            pthread_mutex_unlock(&qp->u.qp.mu);
            if (open)
                flt_verify_report(VFY_DEFER_UNTERMINATED, qp->name, fn,
                                  "the last request posted on the QP carried NDK_OP_FLAG_DEFER");
        }
        atomic_store(&o->u.conn.state, VFY_CONN_DISCONNECTED);
        break;
    }
    default:
        break;
    }
}

/* The outcome of a connect, complete-connect or accept (inline or through its completion). */
static void outcome(struct vfy_obj *c, ndk_filter_fn fn, NTSTATUS st)
{
    switch (fn) {
    case NDK_FILTER_FN_CONNECT: case NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT:
        if (!transition(c, S(CONNECTING), NT_SUCCESS(st) ? VFY_CONN_ACCEPTED : VFY_CONN_FAILED))
            return;
        break;
    case NDK_FILTER_FN_COMPLETE_CONNECT: case NDK_FILTER_FN_COMPLETE_CONNECT_EX:
        if (!transition(c, S(COMPLETING), NT_SUCCESS(st) ? VFY_CONN_ESTABLISHED : VFY_CONN_FAILED))
            return;
        break;
    case NDK_FILTER_FN_ACCEPT: case NDK_FILTER_FN_ACCEPT_EX:
        if (!transition(c, S(ACCEPTING), NT_SUCCESS(st) ? VFY_CONN_ESTABLISHED : VFY_CONN_FAILED))
            return;
        break;
    default:
        return;
    }
    if (!NT_SUCCESS(st))
        unbind_qp(c);
}

/* After a connector call returned. An Accept or Reject that failed inline did nothing: the
 * incoming request (or the accepted connect) can still be accepted or rejected. */
void flt_verify_cm_done(struct vfy_inst *inst, struct vfy_obj *o, ndk_filter_call *call, int before)
{
    (void)inst;
    bool inline_failure = !NT_SUCCESS(call->status) && call->status != STATUS_PENDING;
    if (inline_failure && (call->fn == NDK_FILTER_FN_ACCEPT || call->fn == NDK_FILTER_FN_ACCEPT_EX) &&
        transition(o, S(ACCEPTING), VFY_CONN_INCOMING)) {
        unbind_qp(o);
        return;
    }
    if (inline_failure && call->fn == NDK_FILTER_FN_REJECT && call->status != STATUS_CONNECTION_ABORTED &&
        (before == VFY_CONN_INCOMING || before == VFY_CONN_ACCEPTED)) {
        transition(o, S(REJECTED), before);
        return;
    }
    if (call->status != STATUS_PENDING)
        outcome(o, call->fn, call->status);
    if (call->fn == NDK_FILTER_FN_REJECT && inline_failure)
        atomic_store(&o->u.conn.state, VFY_CONN_FAILED);
}

/* The provider's thread, before a callback is delivered (so that a call the consumer makes from
 * inside it sees the new state). */
void flt_verify_cm_callback(struct vfy_inst *inst, ndk_filter_cb *cb)
{
    (void)inst;
    switch (cb->type) {
    case NDK_FILTER_CB_REQUEST_COMPLETION:
        if (cb->obj && ndk_filter_obj_type(cb->obj) == NdkObjectTypeConnector)
            outcome(flt_verify_obj(cb->obj), cb->fn, cb->status);
        break;
    case NDK_FILTER_CB_CONNECT_EVENT:
        if (cb->created)
            atomic_store(&flt_verify_obj(cb->created)->u.conn.state, VFY_CONN_INCOMING);
        break;
    case NDK_FILTER_CB_DISCONNECT_EVENT: case NDK_FILTER_CB_DISCONNECT_EVENT_EX:
        if (cb->obj)
            atomic_store(&flt_verify_obj(cb->obj)->u.conn.state, VFY_CONN_DISCONNECTED);
        break;
    default:
        break;
    }
}
