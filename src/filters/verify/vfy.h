/*
 * vfy.h - the verify filter's state: one instance per NDK_ADAPTER, one vfy_obj per wrapped
 * object (the filter layer's per-object context), and the checks each part of the filter runs
 * from the call and callback hooks. Rules and their sections: vfy_rules.h, ndk-filters(7).
 *
 * Locks: vfy_inst.mu guards the instance's object lists and token table; vfy_obj.qp.mu guards a
 * queue pair's (or SRQ's) outstanding-request lists. Neither is held across a call below or a
 * consumer callback. Every check is "never a false positive": where the filter cannot be sure
 * (a completion it cannot attribute, a request posted with SILENT_SUCCESS) it stops counting
 * rather than guess.
 */
#ifndef VFY_H
#define VFY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <ndk/filter.h>
#include <ndk/provider.h>
#include "ndk_list.h"
#include "vfy_report.h"

#define VFY_REQ_TOKENS 4        /* distinct memory tokens remembered per outstanding request */
#define VFY_TOKEN_BUCKETS 256

struct vfy_inst;

/* One outstanding work request (posted, its completion not yet polled by the consumer). */
struct vfy_req {
    struct ndk_list link;
    PVOID           context;
    bool            silent;
    unsigned        ntokens;
    UINT32          tokens[VFY_REQ_TOKENS];
};

/* One work queue: a QP's initiator or receive queue, or an SRQ. */
struct vfy_queue {
    struct ndk_list outstanding;   /* vfy_req, oldest first */
    ULONG           depth;
    ULONG           max_sge;
    ULONG           counted;       /* outstanding requests without SILENT_SUCCESS */
    bool            untracked;     /* a completion could not be attributed: depth no longer checked */
    atomic_int      busy;          /* work-request calls running on it (concurrent-queue) */
    bool            defer_open;    /* the last accepted initiator request carried DEFER */
};

enum vfy_mr_state { VFY_MR_UNREGISTERED = 0, VFY_MR_REGISTERING, VFY_MR_REGISTERED, VFY_MR_DEREGISTERING };

enum vfy_conn_state {
    VFY_CONN_IDLE = 0,       /* created, nothing issued */
    VFY_CONN_CONNECTING,     /* NdkConnect(WithSharedEndpoint) pending */
    VFY_CONN_ACCEPTED,       /* the peer accepted: CompleteConnect or Reject next */
    VFY_CONN_COMPLETING,     /* NdkCompleteConnect(Ex) pending */
    VFY_CONN_INCOMING,       /* delivered by a connect event: Accept or Reject next */
    VFY_CONN_ACCEPTING,      /* NdkAccept(Ex) pending */
    VFY_CONN_ESTABLISHED,
    VFY_CONN_REJECTED,
    VFY_CONN_FAILED,         /* a connect, complete or accept failed */
    VFY_CONN_DISCONNECTED    /* NdkDisconnect issued, or the disconnect event came */
};

struct vfy_obj {
    ndk_filter_obj  *fobj;
    struct vfy_inst *inst;
    struct ndk_list  link;         /* inst->objects */
    char             name[24];     /* "qp#7" */
    NDK_OBJECT_TYPE  type;
    atomic_int       closing;      /* the consumer issued its close */
    atomic_int       calls;        /* consumer calls into it that are running */
    union {
        struct {
            atomic_int busy;       /* GetCqResults(Ex) / ArmCq / moderation running */
        } cq;
        struct {
            UINT32 privileged_token;
            bool   privileged_known;
        } pd;
        struct {
            bool              fast;
            enum vfy_mr_state state;
            bool              fr_valid;    /* fast-registered and not invalidated */
            UINT64            base;
            UINT64            length;
            ULONG             flags;
        } mr;
        struct {
            pthread_mutex_t  mu;           /* the lists of init and recv (or srq) */
            struct ndk_list  qp_link;      /* inst->qps */
            struct vfy_queue init, recv;   /* an SRQ uses recv only */
            ndk_filter_obj  *receive_cq, *initiator_cq, *srq;
            PVOID            qp_context;
            ULONG            inline_size;
            atomic_int       bound;        /* tied to a connection attempt */
            ndk_filter_obj  *connector;    /* the connector it is bound to */
        } qp;
        struct {
            _Atomic int      state;        /* enum vfy_conn_state */
            ndk_filter_obj  *qp;
        } conn;
    } u;
};

struct vfy_inst {
    ndk_filter_module *module;
    char               adapter_name[64];
    pthread_mutex_t    mu;             /* objects, qps, tokens */
    struct ndk_list    objects;        /* every vfy_obj of the instance */
    struct ndk_list    qps;            /* vfy_obj of QPs and SRQs (completion attribution) */
    struct vfy_token  *tokens[VFY_TOKEN_BUCKETS];
    bool               info_known;
    NDK_ADAPTER_INFO   info;
};

/* A memory token as the consumer learned it (NdkGetLocalTokenFromMr, the privileged token). */
struct vfy_token {
    struct vfy_token *next;
    UINT32            token;
    struct vfy_obj   *mr;          /* NULL: the privileged token of pd, or an MR that is gone */
    ndk_filter_obj   *pd;          /* NULL once the MR is gone */
    bool              privileged;
    bool              gone;        /* the MR was closed */
};

/* vfy_obj.c: the wrapper's state and lifetime rules. */
struct vfy_obj *flt_verify_obj(const ndk_filter_obj *fobj);
void flt_verify_obj_create(void *inst_ctx, ndk_filter_obj *fobj);
void flt_verify_obj_destroy(void *inst_ctx, ndk_filter_obj *fobj);
/* Before a call: lifetime checks; returns false when the call must not be forwarded. */
bool flt_verify_obj_enter(struct vfy_obj *o, ndk_filter_call *call);
void flt_verify_obj_leave(struct vfy_obj *o, ndk_filter_call *call);
/* Adapter close: the open objects (warning) and a close from inside a callback (error). */
void flt_verify_adapter_close(struct vfy_inst *inst, struct vfy_obj *adapter);
/* Per thread: how deep inside consumer callbacks the thread is. */
bool flt_verify_in_callback(void);
void flt_verify_callback_enter(void);
void flt_verify_callback_leave(void);

/* vfy_post.c: work requests, queue accounting, completions, CQ calls. */
void flt_verify_qp_created(struct vfy_inst *inst, struct vfy_obj *parent_pd, ndk_filter_call *call,
                           struct vfy_obj *qp);
bool flt_verify_post_before(struct vfy_inst *inst, struct vfy_obj *qp, ndk_filter_call *call, struct vfy_req **req);
void flt_verify_post_after(struct vfy_obj *qp, ndk_filter_call *call, struct vfy_req *req);
void flt_verify_cq_before(struct vfy_inst *inst, struct vfy_obj *cq, ndk_filter_call *call);
void flt_verify_cq_after(struct vfy_inst *inst, struct vfy_obj *cq, ndk_filter_call *call);
void flt_verify_queue_free(struct vfy_queue *q);
/* Initiator requests outstanding on qp, counted (no SILENT_SUCCESS). */
ULONG flt_verify_qp_outstanding(struct vfy_obj *qp);

/* vfy_mem.c: memory regions and tokens. */
void flt_verify_mem_call(struct vfy_inst *inst, struct vfy_obj *o, ndk_filter_call *call);
void flt_verify_mem_done(struct vfy_inst *inst, struct vfy_obj *o, ndk_filter_call *call);
void flt_verify_mem_completion(struct vfy_obj *mr, ndk_filter_cb *cb);
void flt_verify_mem_gone(struct vfy_inst *inst, struct vfy_obj *mr);
/* Checks one SGE list of a post made on a QP (or SRQ) of pd. */
void flt_verify_sgl(struct vfy_inst *inst, struct vfy_obj *qp, ndk_filter_obj *pd, const char *call,
                    const NDK_SGE *sgl, ULONG n, struct vfy_req *req);
void flt_verify_token_forget_all(struct vfy_inst *inst);
void flt_verify_mem_post(struct vfy_obj *qp, ndk_filter_call *call);

/* vfy_cm.c: connectors, listeners, addresses. */
void flt_verify_cm_call(struct vfy_inst *inst, struct vfy_obj *o, ndk_filter_call *call);
void flt_verify_cm_done(struct vfy_inst *inst, struct vfy_obj *o, ndk_filter_call *call, int before);
void flt_verify_cm_callback(struct vfy_inst *inst, ndk_filter_cb *cb);

#endif
