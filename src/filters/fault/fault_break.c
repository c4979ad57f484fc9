/* fault_break: break=connection. A real loss is a connection the provider tears down under the
 * consumer; the filter makes the provider do exactly that by disconnecting the lower connector
 * (NDK_FN_DISCONNECT): the peer's provider indicates the disconnect to the peer, our provider
 * flushes the QP (outstanding requests complete with STATUS_CANCELLED, later posts fail), and
 * the connection is gone for both sides. The disconnect is the filter's own request: its
 * completion comes to the filter, never to the consumer. */
#include "fault.h"

#include <stdio.h>

#include <stdlib.h>

struct break_req {
    uint64_t seed;
    unsigned rule_index;
    const struct flt_fault_rule *rule;
    uint64_t call_index;
    char     object[24];
};

/* The provider's thread: the lower disconnect finished. */
static void break_done(PVOID context, NTSTATUS status)
{
    struct break_req *b = context;
    flt_fault_log(b->seed, b->rule_index, b->rule, b->call_index, b->object, "NdkDisconnect",
                  "connection broken under the consumer (lower disconnect completed with 0x%08x)", (unsigned)status);
    free(b);
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

/* The consumer's thread, after the call that fired went down. Takes inst->mu, then the
 * connector's mu, and holds them across the lower NdkDisconnect so that the consumer's close of
 * the connector cannot overtake it. Never blocks otherwise. */
void flt_fault_break(struct flt_fault_inst *inst, struct flt_fault_obj *o, uint64_t seed, unsigned rule_index,
                     const struct flt_fault_rule *rule, uint64_t call_index, const char *slot)
{
    pthread_mutex_lock(&inst->mu);
    ndk_filter_obj *cobj = o->type == NdkObjectTypeConnector ? o->fobj : o->peer;
    if (!cobj) {
        pthread_mutex_unlock(&inst->mu);
        flt_fault_log(seed, rule_index, rule, call_index, o->name, slot, "break=connection: no connection to break");
        return;
    }
    struct flt_fault_obj *c = ndk_filter_obj_ctx(cobj);
    pthread_mutex_lock(&c->mu);
    if (c->closing || c->broken) {
        pthread_mutex_unlock(&c->mu);
        pthread_mutex_unlock(&inst->mu);
        flt_fault_log(seed, rule_index, rule, call_index, o->name, slot,
                      "break=connection: %s is already %s", c->name, c->closing ? "closing" : "broken");
        return;
    }
    c->broken = true;
    struct break_req *b = calloc(1, sizeof *b);
    NTSTATUS st = STATUS_INSUFFICIENT_RESOURCES;
    if (b) {
        b->seed = seed;
        b->rule_index = rule_index;
        b->rule = rule;
        b->call_index = call_index;
        snprintf(b->object, sizeof b->object, "%s", c->name);
        NDK_CONNECTOR *lower = (NDK_CONNECTOR *)ndk_filter_obj_lower(cobj);
        st = lower->Dispatch->NdkDisconnect(lower, break_done, b);
    }
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&inst->mu);
    flt_fault_log(seed, rule_index, rule, call_index, o->name, slot, "break=connection: %s disconnected below (0x%08x)",
                  c->name, (unsigned)st);
    if (st != STATUS_PENDING)
        free(b);
}
