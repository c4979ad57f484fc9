/* vfy_mem: memory regions and the tokens in SGEs (NDK_SGE, NDK_FN_REGISTER_MR,
 * NDK_FN_DEREGISTER_MR, NDK_FN_INVALIDATE). The filter learns a token when the consumer does
 * (NdkGetLocalTokenFromMr, NdkGetPrivilegedMemoryRegionToken); tokens it never saw are not
 * judged. */
#include "vfy.h"

#include <stdio.h>
#include <stdlib.h>

static unsigned bucket(UINT32 token)
{
    return (token * 2654435761u) >> 24 & (VFY_TOKEN_BUCKETS - 1);
}

/* inst->mu held. */
static struct vfy_token *token_find(struct vfy_inst *inst, UINT32 token)
{
    for (struct vfy_token *t = inst->tokens[bucket(token)]; t; t = t->next)
        if (t->token == token)
            return t;
    return NULL;
}

/* inst->mu held. The newest owner of a token wins (providers reuse token values). */
static void token_learn(struct vfy_inst *inst, UINT32 token, struct vfy_obj *mr, ndk_filter_obj *pd, bool privileged)
{
    struct vfy_token *t = token_find(inst, token);
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t)
            return;
        t->token = token;
        t->next = inst->tokens[bucket(token)];
        inst->tokens[bucket(token)] = t;
    }
    t->mr = mr;
    t->pd = pd;
    t->privileged = privileged;
    t->gone = false;
}

void flt_verify_token_forget_all(struct vfy_inst *inst)
{
    for (unsigned b = 0; b < VFY_TOKEN_BUCKETS; b++) {
        struct vfy_token *t = inst->tokens[b];
        while (t) {
            struct vfy_token *next = t->next;
            free(t);
            t = next;
        }
        inst->tokens[b] = NULL;
    }
}

/* obj_destroy of an MR: its tokens stay known as gone. Takes inst->mu. */
void flt_verify_mem_gone(struct vfy_inst *inst, struct vfy_obj *mr)
{
    pthread_mutex_lock(&inst->mu);
    for (unsigned b = 0; b < VFY_TOKEN_BUCKETS; b++)
        for (struct vfy_token *t = inst->tokens[b]; t; t = t->next)
            if (t->mr == mr) {
                t->mr = NULL;
                t->pd = NULL;
                t->gone = true;
            }
    pthread_mutex_unlock(&inst->mu);
}

/* Is a request still outstanding on a connected QP using one of mr's tokens? Takes inst->mu
 * then the QPs' locks. Writes the QP's name. */
static bool mr_in_use(struct vfy_inst *inst, struct vfy_obj *mr, char *where, size_t n)
{
    bool used = false;
    pthread_mutex_lock(&inst->mu);
    UINT32 toks[8];
    unsigned ntoks = 0;
    for (unsigned b = 0; b < VFY_TOKEN_BUCKETS && ntoks < 8; b++)
        for (struct vfy_token *t = inst->tokens[b]; t && ntoks < 8; t = t->next)
            if (t->mr == mr)
                toks[ntoks++] = t->token;
    struct ndk_list *it;
    ndk_list_for_each(it, &inst->qps) {
        struct vfy_obj *q = ndk_list_entry(it, struct vfy_obj, u.qp.qp_link);
        if (q->type != NdkObjectTypeQp || !ntoks)
            continue;
        /* After the connection ended, all DMA on the QP has stopped (disconnect scheme): requests
         * left outstanding there no longer use the memory. */
        struct vfy_obj *conn = q->u.qp.connector ? flt_verify_obj(q->u.qp.connector) : NULL;
        int cs = conn ? atomic_load(&conn->u.conn.state) : VFY_CONN_IDLE;
        if (!conn || atomic_load(&conn->closing) || cs == VFY_CONN_DISCONNECTED || cs == VFY_CONN_FAILED ||
            cs == VFY_CONN_REJECTED || cs == VFY_CONN_IDLE)
            continue;
        /* Initiator requests only: they move the region's bytes now. Receives left posted when
         * a consumer tears down are in every consumer and are not reported. */
        pthread_mutex_lock(&q->u.qp.mu);
        struct ndk_list *r;
        ndk_list_for_each(r, &q->u.qp.init.outstanding) {
            struct vfy_req *req = ndk_list_entry(r, struct vfy_req, link);
            for (unsigned i = 0; i < req->ntokens && !used; i++)
                for (unsigned j = 0; j < ntoks; j++)
                    if (req->tokens[i] == toks[j])
                        used = true;
            if (used)
                break;
        }
        pthread_mutex_unlock(&q->u.qp.mu);
        if (used) {
            snprintf(where, n, "%s", q->name);
            break;
        }
    }
    pthread_mutex_unlock(&inst->mu);
    return used;
}

/* The consumer's thread, before an MR or PD call goes down. */
void flt_verify_mem_call(struct vfy_inst *inst, struct vfy_obj *o, ndk_filter_call *call)
{
    const char *fn = ndk_filter_fn_name(call->fn);
    char where[32];
    switch (call->fn) {
    case NDK_FILTER_FN_REGISTER_MR:
        if (o->u.mr.fast)
            flt_verify_report(VFY_MR_KIND, o->name, fn, "the MR was created for fast registration");
        break;
    case NDK_FILTER_FN_INITIALIZE_FAST_REGISTER_MR:
        if (!o->u.mr.fast)
            flt_verify_report(VFY_MR_KIND, o->name, fn, "the MR was created with FastRegister == FALSE");
        break;
    case NDK_FILTER_FN_DEREGISTER_MR:
        if (o->u.mr.state != VFY_MR_REGISTERED)
            flt_verify_report(VFY_DEREGISTER_UNREGISTERED, o->name, fn, "the MR is %s",
                              o->u.mr.state == VFY_MR_REGISTERING ? "still being registered" :
                              o->u.mr.state == VFY_MR_DEREGISTERING ? "already being deregistered" : "not registered");
        /* fall through */
    case NDK_FILTER_FN_CLOSE_MR:
        if (mr_in_use(inst, o, where, sizeof where))
            flt_verify_report(VFY_MR_IN_USE, o->name, fn, "a request posted on %s still uses the region", where);
        break;
    default:
        break;
    }
    if (call->fn == NDK_FILTER_FN_REGISTER_MR) {
        o->u.mr.state = VFY_MR_REGISTERING;
        o->u.mr.base = (UINT64)(uintptr_t)MmGetMdlVirtualAddress(call->args.register_mr.mdl);
        o->u.mr.length = call->args.register_mr.length;
        o->u.mr.flags = call->args.register_mr.flags;
    } else if (call->fn == NDK_FILTER_FN_DEREGISTER_MR && o->u.mr.state == VFY_MR_REGISTERED) {
        o->u.mr.state = VFY_MR_DEREGISTERING;
    }
}

static void mr_request_done(struct vfy_obj *mr, ndk_filter_fn fn, NTSTATUS st)
{
    if (fn == NDK_FILTER_FN_REGISTER_MR && mr->u.mr.state == VFY_MR_REGISTERING)
        mr->u.mr.state = NT_SUCCESS(st) ? VFY_MR_REGISTERED : VFY_MR_UNREGISTERED;
    else if (fn == NDK_FILTER_FN_DEREGISTER_MR && mr->u.mr.state == VFY_MR_DEREGISTERING)
        mr->u.mr.state = NT_SUCCESS(st) ? VFY_MR_UNREGISTERED : VFY_MR_REGISTERED;
}

/* After an MR or PD call returned (o is the object called). */
void flt_verify_mem_done(struct vfy_inst *inst, struct vfy_obj *o, ndk_filter_call *call)
{
    switch (call->fn) {
    case NDK_FILTER_FN_REGISTER_MR: case NDK_FILTER_FN_DEREGISTER_MR:
        if (call->status != STATUS_PENDING)
            mr_request_done(o, call->fn, call->status);
        break;
    case NDK_FILTER_FN_GET_LOCAL_TOKEN_FROM_MR:
        pthread_mutex_lock(&inst->mu);
        token_learn(inst, call->args.get_token.token, o, ndk_filter_obj_parent(o->fobj), false);
        pthread_mutex_unlock(&inst->mu);
        break;
    case NDK_FILTER_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN:
        if (call->args.get_privileged_token.token) {
            pthread_mutex_lock(&inst->mu);
            token_learn(inst, *call->args.get_privileged_token.token, NULL, o->fobj, true);
            pthread_mutex_unlock(&inst->mu);
        }
        break;
    default:
        break;
    }
}

/* A request completion of an MR call (the provider's thread). */
void flt_verify_mem_completion(struct vfy_obj *mr, ndk_filter_cb *cb)
{
    mr_request_done(mr, cb->fn, cb->status);
}

/* The consumer's thread, inside a post: each SGE's token against what the consumer registered.
 * Takes inst->mu. */
void flt_verify_sgl(struct vfy_inst *inst, struct vfy_obj *qp, ndk_filter_obj *pd, const char *call,
                    const NDK_SGE *sgl, ULONG n, struct vfy_req *req)
{
    pthread_mutex_lock(&inst->mu);
    for (ULONG i = 0; i < n; i++) {
        UINT32 tok = sgl[i].MemoryRegionToken;
        if (req) {
            bool seen = false;
            for (unsigned k = 0; k < req->ntokens; k++)
                seen |= req->tokens[k] == tok;
            if (!seen && req->ntokens < VFY_REQ_TOKENS)
                req->tokens[req->ntokens++] = tok;
        }
        struct vfy_token *t = token_find(inst, tok);
        if (!t)
            continue;
        if (t->gone) {
            flt_verify_report(VFY_SGE_INVALID_TOKEN, qp->name, call, "SGE %lu: token 0x%08x belongs to a closed MR",
                              (unsigned long)i, (unsigned)tok);
            continue;
        }
        if (t->pd && pd && t->pd != pd) {
            flt_verify_report(VFY_SGE_FOREIGN_PD, qp->name, call, "SGE %lu: token 0x%08x belongs to %s%s%s, the QP to %s",
                              (unsigned long)i, (unsigned)tok, flt_verify_obj(t->pd)->name,
                              t->mr ? " via " : "", t->mr ? t->mr->name : "", flt_verify_obj(pd)->name);
            continue;
        }
        if (t->privileged || !t->mr)
            continue;
        struct vfy_obj *mr = t->mr;
        if (!mr->u.mr.fast && mr->u.mr.state != VFY_MR_REGISTERED && mr->u.mr.state != VFY_MR_REGISTERING) {
            flt_verify_report(VFY_SGE_INVALID_TOKEN, qp->name, call, "SGE %lu: token 0x%08x of %s, which is %s",
                              (unsigned long)i, (unsigned)tok, mr->name,
                              mr->u.mr.state == VFY_MR_DEREGISTERING ? "being deregistered" : "deregistered");
            continue;
        }
        if (mr->u.mr.fast && !mr->u.mr.fr_valid) {
            flt_verify_report(VFY_SGE_INVALID_TOKEN, qp->name, call, "SGE %lu: token 0x%08x of %s, which is invalidated",
                              (unsigned long)i, (unsigned)tok, mr->name);
            continue;
        }
        UINT64 va = (UINT64)(uintptr_t)sgl[i].VirtualAddress;
        if (mr->u.mr.length && (va < mr->u.mr.base || va - mr->u.mr.base > mr->u.mr.length ||
                                sgl[i].Length > mr->u.mr.length - (va - mr->u.mr.base)))
            flt_verify_report(VFY_SGE_RANGE, qp->name, call,
                              "SGE %lu: [0x%llx, +%lu) is outside %s's range [0x%llx, +%llu)", (unsigned long)i,
                              (unsigned long long)va, (unsigned long)sgl[i].Length, mr->name,
                              (unsigned long long)mr->u.mr.base, (unsigned long long)mr->u.mr.length);
    }
    pthread_mutex_unlock(&inst->mu);
}

/* The consumer's thread, before NdkFastRegister / NdkInvalidate / NdkBind goes down: the MR's
 * kind, and the fast-registered range the SGE checks use (the initiator queue runs in order, so
 * state changes at post time). */
void flt_verify_mem_post(struct vfy_obj *qp, ndk_filter_call *call)
{
    const char *fn = ndk_filter_fn_name(call->fn);
    if (call->fn == NDK_FILTER_FN_FAST_REGISTER) {
        struct vfy_obj *mr = flt_verify_obj(ndk_filter_obj_of(qp->fobj, &call->args.fast_register.mr->Header));
        if (!mr)
            return;
        if (!mr->u.mr.fast) {
            flt_verify_report(VFY_MR_KIND, mr->name, fn, "the MR was created with FastRegister == FALSE");
            return;
        }
        mr->u.mr.fr_valid = true;
        mr->u.mr.base = (UINT64)(uintptr_t)call->args.fast_register.base_address;
        mr->u.mr.length = call->args.fast_register.length;
    } else if (call->fn == NDK_FILTER_FN_INVALIDATE) {
        ndk_filter_obj *target = ndk_filter_obj_of(qp->fobj, call->args.invalidate.mr_or_mw);
        struct vfy_obj *mr = flt_verify_obj(target);
        if (!mr || mr->type != NdkObjectTypeMr)
            return;
        if (!mr->u.mr.fast)
            flt_verify_report(VFY_MR_KIND, mr->name, fn,
                              "NdkInvalidate on a region registered with NdkRegisterMr (only NdkDeregisterMr revokes it)");
        else
            mr->u.mr.fr_valid = false;
    }
}
