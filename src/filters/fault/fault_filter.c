/*
 * fault_filter: the fault filter module (ndk-filter-fault.so). Settings (ndk-filters(7)):
 *   fault.rules  the rules (fault_rules.h)
 *   fault.seed   the seed of every p= draw (default 1); logged with every fault
 *   fault.path   file for the fault log (default stderr); %p is the pid
 * Only what a provider may legally do is injected: an inline failure (no completion follows),
 * a connect-family completion that reports a failure, a connection the provider tears down, a
 * CQ notification or completion that comes late, a poll that returns fewer results. Never a
 * duplicate completion, a completion for a request never posted, or a callback after a close.
 */
#include "fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The module is loaded once per runtime, and a process may open several runtimes; they share
 * the timer thread and the log, started by the first load and stopped by the last unload
 * (load_mu). */
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned loads;

/* Once per runtime: parses the rules, starts the timer. May block. */
static NTSTATUS fault_load(ndk_filter_module *module, void **module_ctx)
{
    struct flt_fault_module *m = calloc(1, sizeof *m);
    if (!m)
        return STATUS_INSUFFICIENT_RESOURCES;
    m->module = module;
    const char *rules = ndk_filter_config(module, "rules");
    const char *seed_text = ndk_filter_config(module, "seed");
    uint64_t seed = 1;
    if (seed_text) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(seed_text, &end, 0);
        if (errno || end == seed_text || *end) {
            ndk_filter_log(module, NDK_LOG_ERROR, "fault.seed=%s: expected an integer", seed_text);
            free(m);
            return STATUS_INVALID_PARAMETER;
        }
        seed = s;
    }
    char err[256];
    if (flt_fault_rules_parse(&m->rules, rules, seed, err, sizeof err)) {
        ndk_filter_log(module, NDK_LOG_ERROR, "fault.rules: %s", err);
        free(m);
        return STATUS_INVALID_PARAMETER;
    }
    const char *path = ndk_filter_config(module, "path");
    int rc = 0;
    pthread_mutex_lock(&load_mu);
    if (!loads) {
        if (flt_fault_timer_start()) {
            pthread_mutex_unlock(&load_mu);
            flt_fault_rules_free(&m->rules);
            free(m);
            return STATUS_INSUFFICIENT_RESOURCES;
        }
        rc = flt_fault_log_open(path);
    }
    loads++;
    pthread_mutex_unlock(&load_mu);
    if (rc)
        ndk_filter_log(module, NDK_LOG_WARNING, "fault.path=%s: cannot open (%s); logging to stderr", path, strerror(-rc));
    ndk_filter_log(module, NDK_LOG_INFO, "%u rule(s), seed %llu", m->rules.n, (unsigned long long)seed);
    *module_ctx = m;
    return STATUS_SUCCESS;
}

static void fault_unload(void *module_ctx)
{
    struct flt_fault_module *m = module_ctx;
    pthread_mutex_lock(&load_mu);
    if (!--loads) {
        flt_fault_timer_stop();
        flt_fault_log_close();
    }
    pthread_mutex_unlock(&load_mu);
    flt_fault_rules_free(&m->rules);
    free(m);
}

static NTSTATUS fault_open(void *module_ctx, ndk_filter_module *module, const char *adapter_name, void **inst_ctx)
{
    (void)module;
    (void)adapter_name;
    struct flt_fault_inst *inst = calloc(1, sizeof *inst);
    if (!inst)
        return STATUS_INSUFFICIENT_RESOURCES;
    inst->m = module_ctx;
    pthread_mutex_init(&inst->mu, NULL);
    *inst_ctx = inst;
    return STATUS_SUCCESS;
}

static void fault_close(void *inst_ctx)
{
    struct flt_fault_inst *inst = inst_ctx;
    pthread_mutex_destroy(&inst->mu);
    free(inst);
}

/* Never blocks. */
static void fault_obj_create(void *inst_ctx, ndk_filter_obj *fobj)
{
    struct flt_fault_obj *o = ndk_filter_obj_ctx(fobj);
    o->fobj = fobj;
    o->inst = inst_ctx;
    o->type = ndk_filter_obj_type(fobj);
    ndk_filter_obj_name(fobj, o->name, sizeof o->name);
    pthread_mutex_init(&o->mu, NULL);
}

static void fault_obj_destroy(void *inst_ctx, ndk_filter_obj *fobj)
{
    struct flt_fault_obj *o = ndk_filter_obj_ctx(fobj);
    flt_fault_unlink(inst_ctx, o);
    free(o->held);
    pthread_mutex_destroy(&o->mu);
}

static bool connect_family(ndk_filter_fn fn)
{
    return fn == NDK_FILTER_FN_CONNECT || fn == NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT ||
           fn == NDK_FILTER_FN_COMPLETE_CONNECT || fn == NDK_FILTER_FN_COMPLETE_CONNECT_EX ||
           fn == NDK_FILTER_FN_ACCEPT || fn == NDK_FILTER_FN_ACCEPT_EX;
}

static PVOID request_context(const ndk_filter_call *call)
{
    switch (call->fn) {
    case NDK_FILTER_FN_CONNECT: case NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT: return call->args.connect.context;
    case NDK_FILTER_FN_COMPLETE_CONNECT: case NDK_FILTER_FN_COMPLETE_CONNECT_EX: return call->args.complete_connect.context;
    case NDK_FILTER_FN_ACCEPT: case NDK_FILTER_FN_ACCEPT_EX: return call->args.accept.context;
    default: return NULL;
    }
}

/* The consumer's thread. Rules are tried in order; the first that fires decides the call. */
static NTSTATUS fault_call(void *inst_ctx, ndk_filter_call *call)
{
    struct flt_fault_inst *inst = inst_ctx;
    struct flt_fault_module *m = inst->m;
    struct flt_fault_obj *o = ndk_filter_obj_ctx(call->obj);
    const char *slot = ndk_filter_fn_name(call->fn);

    /* Links the break needs, and the connector's close state. */
    if (call->fn == NDK_FILTER_FN_CONNECT || call->fn == NDK_FILTER_FN_CONNECT_WITH_SHARED_ENDPOINT)
        flt_fault_link(inst, o, ndk_filter_obj_of(call->obj, call->args.connect.qp ? &call->args.connect.qp->Header : NULL));
    else if (call->fn == NDK_FILTER_FN_ACCEPT || call->fn == NDK_FILTER_FN_ACCEPT_EX)
        flt_fault_link(inst, o, ndk_filter_obj_of(call->obj, call->args.accept.qp ? &call->args.accept.qp->Header : NULL));
    else if (call->fn == NDK_FILTER_FN_CLOSE_CONNECTOR)
        flt_fault_break_close(o);

    else if (call->fn == NDK_FILTER_FN_CLOSE_CQ)
        flt_fault_delay_close(o);

    if (call->fn == NDK_FILTER_FN_GET_CQ_RESULTS || call->fn == NDK_FILTER_FN_GET_CQ_RESULTS_EX) {
        for (unsigned i = 0; i < m->rules.n; i++) {
            struct flt_fault_rule *r = &m->rules.rule[i];
            if (r->kind != FLT_FAULT_DELAY || !flt_fault_rule_matches(r, slot))
                continue;
            uint64_t idx;
            bool fire = flt_fault_rule_decide(r, &idx);
            pthread_mutex_lock(&o->mu);
            bool held = o->held_n != 0;
            pthread_mutex_unlock(&o->mu);
            /* Once completions are held, every poll goes through the hold so that order stays. */
            if (fire || held)
                return flt_fault_delay_poll(inst, o, call, i, r, idx, fire);
            break;
        }
    }
    if (call->fn == NDK_FILTER_FN_ARM_CQ) {
        NTSTATUS st = ndk_filter_next(call);
        flt_fault_delay_armed(o);
        return st;
    }

    for (unsigned i = 0; i < m->rules.n; i++) {
        struct flt_fault_rule *r = &m->rules.rule[i];
        if (!flt_fault_rule_matches(r, slot))
            continue;
        if (r->kind == FLT_FAULT_DELAY && !r->async)
            continue;   /* completions and notifications: the callback hook */
        uint64_t idx;
        if (!flt_fault_rule_decide(r, &idx))
            continue;
        switch (r->kind) {
        case FLT_FAULT_STATUS:
            if (r->async && connect_family(call->fn)) {
                pthread_mutex_lock(&o->mu);
                o->override = (struct flt_fault_override){ true, call->fn, request_context(call), r->status, r->delay_ms };
                pthread_mutex_unlock(&o->mu);
                NTSTATUS st = ndk_filter_next(call);
                pthread_mutex_lock(&o->mu);
                bool still = o->override.armed && st != STATUS_PENDING;
                if (still)
                    o->override.armed = false;
                pthread_mutex_unlock(&o->mu);
                if (still && NT_SUCCESS(st)) {
                    flt_fault_log(m->rules.seed, i, r, idx, o->name, slot, "completed inline; failed with 0x%08x instead",
                                  (unsigned)r->status);
                    call->status = r->status;
                    return r->status;
                }
                if (st == STATUS_PENDING)
                    flt_fault_log(m->rules.seed, i, r, idx, o->name, slot, "its completion will report 0x%08x%s",
                                  (unsigned)r->status, r->delay_ms ? " late" : "");
                return st;
            }
            flt_fault_log(m->rules.seed, i, r, idx, o->name, slot, "failed inline with 0x%08x", (unsigned)r->status);
            call->status = r->status;
            return r->status;
        case FLT_FAULT_SHORT:
            if (call->fn == NDK_FILTER_FN_GET_CQ_RESULTS && call->args.get_cq_results.count > r->short_max) {
                call->args.get_cq_results.count = r->short_max;
                flt_fault_log(m->rules.seed, i, r, idx, o->name, slot, "at most %u result(s)", r->short_max);
            } else if (call->fn == NDK_FILTER_FN_GET_CQ_RESULTS_EX && call->args.get_cq_results_ex.count > r->short_max) {
                call->args.get_cq_results_ex.count = r->short_max;
                flt_fault_log(m->rules.seed, i, r, idx, o->name, slot, "at most %u result(s)", r->short_max);
            }
            return ndk_filter_next(call);
        case FLT_FAULT_BREAK: {
            NTSTATUS st = ndk_filter_next(call);
            flt_fault_break(inst, o, m->rules.seed, i, r, idx, slot);
            return st;
        }
        default:
            break;
        }
    }
    return ndk_filter_next(call);
}

/* The provider's thread; never blocks. */
static void fault_callback(void *inst_ctx, ndk_filter_cb *cb)
{
    struct flt_fault_inst *inst = inst_ctx;
    struct flt_fault_module *m = inst->m;
    if (cb->type == NDK_FILTER_CB_REQUEST_COMPLETION && cb->obj && connect_family(cb->fn)) {
        struct flt_fault_obj *o = ndk_filter_obj_ctx(cb->obj);
        pthread_mutex_lock(&o->mu);
        struct flt_fault_override ov = o->override;
        bool hit = ov.armed && ov.fn == cb->fn && ov.context == cb->context;
        if (hit)
            o->override.armed = false;
        pthread_mutex_unlock(&o->mu);
        if (hit && NT_SUCCESS(cb->status)) {
            cb->status = ov.status;
            if (ov.delay_ms) {
                ndk_filter_cb *held = ndk_filter_cb_hold(cb);
                if (held) {
                    flt_fault_timer_deliver_later(held, ov.delay_ms);
                    return;
                }
            }
        }
        ndk_filter_deliver(cb);
        return;
    }
    if (cb->type == NDK_FILTER_CB_CQ_NOTIFICATION) {
        for (unsigned i = 0; i < m->rules.n; i++) {
            struct flt_fault_rule *r = &m->rules.rule[i];
            if (r->kind != FLT_FAULT_DELAY || strcmp(r->call, "CqNotification"))
                continue;
            uint64_t idx;
            if (!flt_fault_rule_decide(r, &idx))
                continue;
            ndk_filter_cb *held = ndk_filter_cb_hold(cb);
            if (!held)
                break;
            char name[24];
            flt_fault_log(m->rules.seed, i, r, idx, ndk_filter_obj_name(cb->obj, name, sizeof name), "CqNotification",
                          "delivered %u ms late", r->delay_ms);
            flt_fault_timer_deliver_later(held, r->delay_ms);
            return;
        }
    }
    ndk_filter_deliver(cb);
}

static const ndk_filter_ops fault_ops = {
    .size = sizeof(ndk_filter_ops),
    .abi_version = NDK_FILTER_ABI_VERSION,
    .name = "fault",
    .obj_ctx_size = sizeof(struct flt_fault_obj),
    .load = fault_load,
    .unload = fault_unload,
    .open = fault_open,
    .close = fault_close,
    .obj_create = fault_obj_create,
    .obj_destroy = fault_obj_destroy,
    .call = fault_call,
    .callback = fault_callback,
};

__attribute__((visibility("default"))) NTSTATUS NdkFilterEntry(ULONG abi_version, const ndk_filter_ops **ops)
{
    if (abi_version < NDK_FILTER_ABI_VERSION)
        return STATUS_NOT_SUPPORTED;
    *ops = &fault_ops;
    return STATUS_SUCCESS;
}
