/* fault_break: break=connection. A real loss is a connection the provider tears down under the
 * consumer; the filter makes the provider do exactly that by disconnecting the lower connector
 * (NDK_FN_DISCONNECT): the peer's provider indicates the disconnect to the peer, our provider
 * flushes the QP (outstanding requests complete with STATUS_CANCELLED, later posts fail), and
 * the connection is gone for both sides. The disconnect is the filter's own request: its
 * completion comes to the filter, never to the consumer. */
#include "fault.h"

#include <stdio.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

struct break_req {
    uint64_t seed;
    unsigned rule_index;
    const struct flt_fault_rule *rule;
    uint64_t call_index;
    char     object[24];
    struct flt_fault_obj *c;
    /* Who delivers the disconnect event: 1 = the issuer returned from NdkDisconnect, 2 = the
     * completion ran; whichever comes second raises (the connector is alive then: its close
     * waits for the issuer, and the provider's close waits for the completion). */
    atomic_int state;
};

/* The disconnect a real loss indicates, which the provider does not give to the side that
 * disconnected. Called with no lock held; the connector is alive. */
static void raise_disconnect(struct break_req *b)
{
    NTSTATUS st = ndk_filter_raise(b->c->fobj, NDK_FILTER_CB_DISCONNECT_EVENT, STATUS_SUCCESS, 0);
    flt_fault_log(b->seed, b->rule_index, b->rule, b->call_index, b->object, "DisconnectEvent",
                  st == STATUS_SUCCESS ? "disconnect event delivered to the consumer"
                                       : "no disconnect event for the consumer (none registered, or already indicated)");
}

/* The provider's thread: the lower disconnect finished. */
static void break_done(PVOID context, NTSTATUS status)
{
    struct break_req *b = context;
    flt_fault_log(b->seed, b->rule_index, b->rule, b->call_index, b->object, "NdkDisconnect",
                  "connection broken under the consumer (lower disconnect completed with 0x%08x)", (unsigned)status);
    if (atomic_exchange(&b->state, 2) == 1) {
        raise_disconnect(b);
        free(b);
    }
}

/* The consumer's close of a connector: not while a break is being issued on it by another
 * thread (the lower connector must not be closed under that NdkDisconnect). Spins for the few
 * instructions the issue takes; never waits for the provider. */
void flt_fault_break_close(struct flt_fault_obj *c)
{
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    while (c->breaking && !pthread_equal(c->breaking_thread, pthread_self())) {
        pthread_mutex_unlock(&c->mu);
        sched_yield();
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
}

/* Takes inst->mu. */
void flt_fault_link(struct flt_fault_inst *inst, struct flt_fault_obj *connector, ndk_filter_obj *qp)
{
    if (!qp)
        return;
    struct flt_fault_obj *q = ndk_filter_obj_ctx(qp);
    pthread_mutex_lock(&inst->mu);
    connector->peer = qp;
    q->peer = connector->fobj;
    pthread_mutex_unlock(&inst->mu);
}

/* obj_destroy: the other side forgets the link. Takes inst->mu. */
void flt_fault_unlink(struct flt_fault_inst *inst, struct flt_fault_obj *o)
{
    pthread_mutex_lock(&inst->mu);
    if (o->peer) {
        struct flt_fault_obj *p = ndk_filter_obj_ctx(o->peer);
        if (p->peer == o->fobj)
            p->peer = NULL;
        o->peer = NULL;
    }
    pthread_mutex_unlock(&inst->mu);
}

/* The consumer's thread, after the call that fired went down. Takes inst->mu and the
 * connector's mu to claim the break, then calls the lower NdkDisconnect with no lock held (its
 * completion may run inline). Never blocks. */
void flt_fault_break(struct flt_fault_inst *inst, struct flt_fault_obj *o, uint64_t seed, unsigned rule_index,
                     const struct flt_fault_rule *rule, uint64_t call_index, const char *slot)
{
    struct break_req *b = calloc(1, sizeof *b);
    if (!b) {
        flt_fault_log(seed, rule_index, rule, call_index, o->name, slot, "break=connection: out of memory");
        return;
    }
    pthread_mutex_lock(&inst->mu);
    ndk_filter_obj *cobj = o->type == NdkObjectTypeConnector ? o->fobj : o->peer;
    struct flt_fault_obj *c = cobj ? ndk_filter_obj_ctx(cobj) : NULL;
    const char *why = NULL;
    if (!c)
        why = "no connection to break";
    else {
        pthread_mutex_lock(&c->mu);
        if (c->closing)
            why = "the connector is closing";
        else if (c->broken)
            why = "the connection is already broken";
        else {
            c->broken = true;
            c->breaking = true;
            c->breaking_thread = pthread_self();
        }
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&inst->mu);
    if (why) {
        flt_fault_log(seed, rule_index, rule, call_index, o->name, slot, "break=connection: %s", why);
        free(b);
        return;
    }
    b->seed = seed;
    b->rule_index = rule_index;
    b->rule = rule;
    b->call_index = call_index;
    b->c = c;
    snprintf(b->object, sizeof b->object, "%s", c->name);
    NDK_CONNECTOR *lower = (NDK_CONNECTOR *)ndk_filter_obj_lower(cobj);
    NTSTATUS st = lower->Dispatch->NdkDisconnect(lower, break_done, b);
    flt_fault_log(seed, rule_index, rule, call_index, o->name, slot, "break=connection: %s disconnected below (0x%08x)",
                  c->name, (unsigned)st);
    if (st == STATUS_PENDING) {
        if (atomic_exchange(&b->state, 1) == 2) {
            raise_disconnect(b);
            free(b);
        }
    } else {
        if (NT_SUCCESS(st))
            raise_disconnect(b);
        free(b);
    }
    pthread_mutex_lock(&c->mu);
    c->breaking = false;
    pthread_mutex_unlock(&c->mu);
}
