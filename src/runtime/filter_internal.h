/*
 * filter_internal.h - the filter layer's private state (include/ndk/filter.h is the public side).
 *
 * A stack is built per NDK_ADAPTER instance that ndk_rt_open_adapter opens with filters: one
 * layer per filter, outermost first. Each layer wraps every object of the layer below in a
 * struct ndk_filter_obj whose public part (header + dispatch) is what the layer above holds.
 *
 * Lifetime of a wrapper, by reference count (refs):
 *   1 while the object is open below (dropped when the lower close completed),
 *   +1 per call in flight that may call back (guarded calls, see nf_fn_guarded),
 *   +1 per request in flight (struct nf_req) and per callback a filter holds,
 *   +1 per successor that depends on it (children of a PD, QPs of a CQ/SRQ, connectors of a
 *      listener or QP), so that a close completion never precedes a successor's (§5.1).
 * At zero the object is finalised: its close completion goes up (unless the close completed
 * inline), obj_destroy runs and it is freed. Reference counts are atomics; the layer takes no
 * lock on any call or callback path.
 */
#ifndef NDK_FILTER_INTERNAL_H
#define NDK_FILTER_INTERNAL_H

#include <ndk/filter.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ndk_list.h"

struct ndk_rt;
struct rt_kv;

#define NF_OBJ_MAGIC 0x4e444b46u   /* "NDKF": identifies a wrapper behind a header */
#define NF_MAX_DEPS  3

/* A filter module (ndk-filter-<name>.so) or an in-process filter. */
struct ndk_filter_module {
    struct ndk_list        link;            /* rt->filter_modules; rt->lock (modules only) */
    struct ndk_rt         *rt;
    char                   name[NDK_FILTER_NAME_MAX];
    char                   path[512];
    void                  *dl;
    const ndk_filter_ops  *ops;
    void                  *module_ctx;
    NTSTATUS               status;          /* STATUS_SUCCESS once loaded and its load hook ran */
    int                    inproc;          /* owned by one stack, freed with it */
    _Atomic ULONG          next_id[NdkObjectTypeMax];
    struct rt_kv          *config_cache;    /* strings handed out by ndk_filter_config */
    pthread_mutex_t        config_lock;     /* guards config_cache only */
};

struct nf_stack;

/* One filter in one adapter instance's stack. */
struct nf_layer {
    struct nf_stack          *stack;
    int                       index;        /* 0 = outermost (what the consumer holds) */
    struct ndk_filter_module *module;
    const ndk_filter_ops     *ops;
    void                     *ctx;          /* the instance context from ops->open */
    int                       opened;
    struct ndk_filter_obj    *adapter;
    /* Wrappers other than the adapter, requests in flight and held callbacks of this layer;
     * the adapter close waits for zero. drain_lock guards live only (a leaf lock: nothing is
     * called with it held). */
    long                      live;
    pthread_mutex_t           drain_lock;
    pthread_cond_t            drain_cond;
};

/* Closes the provider's adapter instance under the bottom layer (the runtime's close handler). */
typedef void (*nf_close_bottom_fn)(void *ctx, NDK_ADAPTER *adapter);

struct nf_stack {
    struct ndk_rt      *rt;
    int                 count;
    struct nf_layer    *layers;             /* count of them, outermost first */
    NDK_ADAPTER        *bottom;             /* the provider's adapter */
    nf_close_bottom_fn  close_bottom;
    void               *close_ctx;
    struct ndk_filter_module **owned;       /* in-process filters' modules, freed with the stack */
    int                 owned_count;
};

struct ndk_filter_obj {
    union {
        NDK_OBJECT_HEADER   hdr;
        NDK_ADAPTER         adapter;
        NDK_PD              pd;
        NDK_CQ              cq;
        NDK_QP              qp;
        NDK_SRQ             srq;
        NDK_MR              mr;
        NDK_MW              mw;
        NDK_CONNECTOR       connector;
        NDK_LISTENER        listener;
        NDK_SHARED_ENDPOINT sep;
    } pub;                                  /* what the layer above holds */
    uint32_t                magic;
    NDK_OBJECT_TYPE         type;
    struct nf_layer        *layer;
    NDK_OBJECT_HEADER      *lower;          /* the object below; NULL until created below */
    struct ndk_filter_obj  *parent;         /* referenced, except the adapter */
    struct ndk_filter_obj  *deps[NF_MAX_DEPS]; /* referenced antecedents */
    ULONG                   id;
    _Atomic long            refs;
    int                     active;         /* obj_create ran */
    atomic_int              closing;        /* a close was issued (read by ndk_filter_raise) */
    int                     close_silent;   /* the close completed inline: no close completion */
    /* the consumer's event callback, fixed before the lower call that registers it */
    union {
        NDK_FN_CQ_NOTIFICATION_CALLBACK     cq;
        NDK_FN_SRQ_NOTIFICATION_CALLBACK    srq;
        NDK_FN_CONNECT_EVENT_CALLBACK       connect;
        NDK_FN_DISCONNECT_EVENT_CALLBACK    disconnect;
        NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disconnect_ex;
    } ev;
    PVOID                   ev_ctx;
    int                     ev_ex;          /* connector: the disconnect callback is the _EX form */
    /* adapter: the lower layer's RSS extension table, once the consumer asked for it */
    _Atomic(const NDK_EXTENSION_ADAPTER_RSS_DISPATCH *) ext_rss;
    atomic_int              disconnected;   /* connector: its disconnect event went up (once only) */
    atomic_int              armed;          /* CQ: armed at this layer, not notified since */
    atomic_int              raised;         /* CQ: a filter raised a notification on it once */
    atomic_int              notify_busy;    /* CQ: notifications delivering + queued (serialised) */
    atomic_int              notify_status;  /* CQ: the status of the last queued notification */
    /* a create in flight (the object does not exist below yet) */
    ndk_filter_fn           create_fn;
    NDK_FN_CREATE_COMPLETION create_cb;
    PVOID                   create_ctx;
    /* the close */
    NDK_FN_CLOSE_COMPLETION close_cb;
    PVOID                   close_ctx;
    alignas(max_align_t) unsigned char ctx[]; /* ops->obj_ctx_size bytes for the filter */
};

/* A request completion in flight: what the consumer passed, for the layer's trampoline. */
struct nf_req {
    struct ndk_filter_obj    *obj;          /* referenced */
    ndk_filter_fn             fn;
    NDK_FN_REQUEST_COMPLETION cb;
    PVOID                     ctx;
};

/* filter_obj.c: wrappers. Never block, no lock. */
struct ndk_filter_obj *nf_obj_new(struct nf_layer *layer, NDK_OBJECT_TYPE type, struct ndk_filter_obj *parent);
void nf_obj_activate(struct ndk_filter_obj *obj, NDK_OBJECT_HEADER *lower);
void nf_obj_discard(struct ndk_filter_obj *obj);   /* never activated: free without hooks */
void nf_obj_ref(struct ndk_filter_obj *obj);
int nf_obj_tryref(struct ndk_filter_obj *obj);     /* 0 when it is already finalising */
void nf_obj_release(struct ndk_filter_obj *obj);   /* may finalise: runs callbacks, no lock held */
void nf_obj_destroy(struct ndk_filter_obj *obj);   /* obj_destroy hook, drop references, free */
void nf_obj_add_dep(struct ndk_filter_obj *obj, struct ndk_filter_obj *dep);
/* The wrapper behind header if it is one of layer's objects of that type (any type for
 * NdkObjectTypeUndefined); NULL otherwise. */
struct ndk_filter_obj *nf_obj_check(const struct nf_layer *layer, const NDK_OBJECT_HEADER *header, NDK_OBJECT_TYPE type);
void nf_layer_live_add(struct nf_layer *layer, long delta);

/* filter_dispatch.c: the wrapper tables and the call path into a filter's call hook. */
extern const NDK_ADAPTER_DISPATCH nf_adapter_dispatch;
const void *nf_dispatch_table(NDK_OBJECT_TYPE type);
extern const NDK_EXTENSION_ADAPTER_RSS_DISPATCH nf_rss_dispatch;
ndk_filter_fn nf_close_fn(NDK_OBJECT_TYPE type);   /* NDK_FILTER_FN_CLOSE_<TYPE> */
NTSTATUS nf_dispatch(ndk_filter_call *call);

/* filter_next.c: forwarding to the layer below (ndk_filter_next is its public face). */
int nf_fn_guarded(ndk_filter_fn fn);
int nf_call_forwarded(const ndk_filter_call *call);   /* ndk_filter_next ran for it */
NDK_FN_CLOSE_OBJECT nf_lower_close(struct ndk_filter_obj *obj);

/* filter_cb.c: the layer's callbacks given to the layer below, and delivery up. */
VOID nf_cb_close_done(PVOID ctx);
VOID nf_cb_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *lower);
VOID nf_cb_request_done(PVOID ctx, NTSTATUS status);
VOID nf_cb_cq_notify(PVOID ctx, NTSTATUS status);
VOID nf_cb_srq_notify(PVOID ctx, NTSTATUS status);
VOID nf_cb_connect_event(PVOID ctx, NDK_CONNECTOR *lower);
VOID nf_cb_disconnect(PVOID ctx);
VOID nf_cb_disconnect_ex(PVOID ctx, ULONG reason);
/* Finalises an object whose close completion is owed: through the callback hook. */
void nf_cb_close_completion(struct ndk_filter_obj *obj);

/* filter_stack.c: building and closing the stack of one adapter instance. */
/* modules: outermost first; the stack takes the in-process ones (inproc set) and frees them. On
 * failure the caller still owns bottom and closes it. */
NTSTATUS nf_stack_open(struct ndk_rt *rt, struct ndk_filter_module *const *modules, int count, NDK_ADAPTER *bottom,
                       nf_close_bottom_fn close_bottom, void *close_ctx, const char *adapter_name,
                       struct nf_stack **out);
NDK_ADAPTER *nf_stack_top(const struct nf_stack *stack);
void nf_stack_close(struct nf_stack *stack);          /* blocking, like the adapter close */
void nf_layer_close_adapter(struct nf_layer *layer);  /* CLOSE_ADAPTER through this layer's hook */
void nf_layer_close_below(struct nf_layer *layer);    /* the next layer's, or the provider's */

/* filter_module.c: finding and loading modules, settings, logging. May block; no lock held. */
struct ndk_filter_module *nf_module_load(struct ndk_rt *rt, const char *name);
struct ndk_filter_module *nf_module_inproc(struct ndk_rt *rt, const ndk_filter_inproc *f);
void nf_module_unload(struct ndk_filter_module *m);
void nf_module_free(struct ndk_filter_module *m);

#endif
