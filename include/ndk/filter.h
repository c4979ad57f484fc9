/*
 * ndk/filter.h - the public NDK filter API of the OpenNDK runtime (libndk).
 *
 * A filter sits between an NDK consumer and the provider, the place where NDIS puts its filter
 * drivers. When filters are configured (NDK_FILTERS=trace,verify,fault, outermost first, or
 * `filters =` in openndk.conf), ndk_rt_open_adapter() hands the consumer the top of an ordered
 * stack: every filter has its own wrapper of every NDK object (its own NDK_OBJECT_HEADER and
 * dispatch tables), and each wrapper forwards to the object of the layer below, down to the
 * provider. With no filter configured the consumer gets the provider's objects directly.
 *
 * The runtime's filter layer does all the wrapping: objects passed as arguments are unwrapped to
 * the lower layer's objects, objects delivered up (create completions, connect events) are
 * wrapped, every consumer callback and callback context is replaced by the layer's own. A filter
 * implements a few hooks with typed arguments:
 *
 *   call      every call of every dispatch slot (and the adapter close); the filter looks at or
 *             changes the arguments, forwards with ndk_filter_next(), looks at the result, or
 *             answers itself without forwarding;
 *   callback  every consumer callback (completions and events); the filter passes it up with
 *             ndk_filter_deliver(), now or later (ndk_filter_cb_hold());
 *   obj_create / obj_destroy   a wrapper starts and ends its life (per-object filter state).
 *
 * A filter is a module ndk-filter-<name>.so in the provider path (found like providers) that
 * exports NdkFilterEntry, or an in-process filter a library passes to ndk_rt_open_adapter_ex()
 * (see ndk/runtime.h). The module links against libndk for the functions declared here.
 * Settings are read with ndk_filter_config(): "<filter>.<key>" in openndk.conf, overridden by
 * NDK_<FILTER>_<KEY> in the environment. See ndk-filter(3).
 *
 * Threading: hooks run on the thread of the call or of the callback, concurrently for different
 * objects, with no runtime lock held. The layer holds no lock while calling a hook, the lower
 * layer or a consumer callback. The consumer's serialisation (NDKPI reference §5.4, docs/ndkpi.md)
 * carries over: calls on one queue never overlap.
 */
#ifndef NDK_FILTER_H
#define NDK_FILTER_H

#include <stddef.h>

#include "../ndkpi.h"
#include "../ndkrss.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* v1: this header as first committed. Later versions only add (new hooks at the end of
 * ndk_filter_ops, new function ids, new functions); a v1 filter keeps working. */
#define NDK_FILTER_ABI_VERSION  1
#define NDK_FILTER_ENTRY_SYMBOL "NdkFilterEntry"
#define NDK_FILTER_NAME_MAX     32

/* Every dispatch slot an NDK consumer can call, one id each (slots that share a name in several
 * tables, NdkQueryExtension and the per-table getters, get one id per table), the adapter close,
 * and the slots of the extension interfaces the layer wraps (ndkrss.h's adapter RSS table). The
 * X macro gives (ID, slot name, object type the call is made on). Ids are stable: new ones are
 * appended. */
#define NDK_FILTER_FN_LIST(X) \
    X(ADAPTER_QUERY_EXTENSION,            NdkQueryExtension,                 Adapter)        \
    X(QUERY_ADAPTER_INFO,                 NdkQueryAdapterInfo,               Adapter)        \
    X(CREATE_CQ,                          NdkCreateCq,                       Adapter)        \
    X(CREATE_PD,                          NdkCreatePd,                       Adapter)        \
    X(CREATE_SHARED_ENDPOINT,             NdkCreateSharedEndpoint,           Adapter)        \
    X(CREATE_CONNECTOR,                   NdkCreateConnector,                Adapter)        \
    X(CREATE_LISTENER,                    NdkCreateListener,                 Adapter)        \
    X(BUILD_LAM,                          NdkBuildLAM,                       Adapter)        \
    X(RELEASE_LAM,                        NdkReleaseLAM,                     Adapter)        \
    X(CLOSE_CQ,                           NdkCloseCq,                        Cq)             \
    X(CQ_QUERY_EXTENSION,                 NdkQueryExtension,                 Cq)             \
    X(RESIZE_CQ,                          NdkResizeCq,                       Cq)             \
    X(ARM_CQ,                             NdkArmCq,                          Cq)             \
    X(GET_CQ_RESULTS,                     NdkGetCqResults,                   Cq)             \
    X(CONTROL_CQ_INTERRUPT_MODERATION,    NdkControlCqInterruptModeration,   Cq)             \
    X(GET_CQ_RESULTS_EX,                  NdkGetCqResultsEx,                 Cq)             \
    X(CLOSE_PD,                           NdkClosePd,                        Pd)             \
    X(PD_QUERY_EXTENSION,                 NdkQueryExtension,                 Pd)             \
    X(CREATE_MR,                          NdkCreateMr,                       Pd)             \
    X(CREATE_MW,                          NdkCreateMw,                       Pd)             \
    X(CREATE_SRQ,                         NdkCreateSrq,                      Pd)             \
    X(CREATE_QP,                          NdkCreateQp,                       Pd)             \
    X(CREATE_QP_WITH_SRQ,                 NdkCreateQpWithSrq,                Pd)             \
    X(GET_PRIVILEGED_MEMORY_REGION_TOKEN, NdkGetPrivilegedMemoryRegionToken, Pd)             \
    X(CLOSE_MR,                           NdkCloseMr,                        Mr)             \
    X(MR_QUERY_EXTENSION,                 NdkQueryExtension,                 Mr)             \
    X(REGISTER_MR,                        NdkRegisterMr,                     Mr)             \
    X(DEREGISTER_MR,                      NdkDeregisterMr,                   Mr)             \
    X(INITIALIZE_FAST_REGISTER_MR,        NdkInitializeFastRegisterMr,       Mr)             \
    X(GET_REMOTE_TOKEN_FROM_MR,           NdkGetRemoteTokenFromMr,           Mr)             \
    X(GET_LOCAL_TOKEN_FROM_MR,            NdkGetLocalTokenFromMr,            Mr)             \
    X(CLOSE_MW,                           NdkCloseMw,                        Mw)             \
    X(MW_QUERY_EXTENSION,                 NdkQueryExtension,                 Mw)             \
    X(GET_REMOTE_TOKEN_FROM_MW,           NdkGetRemoteTokenFromMw,           Mw)             \
    X(CLOSE_SRQ,                          NdkCloseSrq,                       Srq)            \
    X(SRQ_QUERY_EXTENSION,                NdkQueryExtension,                 Srq)            \
    X(MODIFY_SRQ,                         NdkModifySrq,                      Srq)            \
    X(SRQ_RECEIVE,                        NdkSrqReceive,                     Srq)            \
    X(CLOSE_QP,                           NdkCloseQp,                        Qp)             \
    X(QP_QUERY_EXTENSION,                 NdkQueryExtension,                 Qp)             \
    X(FLUSH,                              NdkFlush,                          Qp)             \
    X(SEND,                               NdkSend,                           Qp)             \
    X(RECEIVE,                            NdkReceive,                        Qp)             \
    X(BIND,                               NdkBind,                           Qp)             \
    X(FAST_REGISTER,                      NdkFastRegister,                   Qp)             \
    X(INVALIDATE,                         NdkInvalidate,                     Qp)             \
    X(READ,                               NdkRead,                           Qp)             \
    X(WRITE,                              NdkWrite,                          Qp)             \
    X(SEND_AND_INVALIDATE,                NdkSendAndInvalidate,              Qp)             \
    X(CLOSE_SHARED_ENDPOINT,              NdkCloseSharedEndpoint,            SharedEndpoint) \
    X(SHARED_ENDPOINT_QUERY_EXTENSION,    NdkQueryExtension,                 SharedEndpoint) \
    X(SHARED_ENDPOINT_GET_LOCAL_ADDRESS,  NdkGetLocalAddress,                SharedEndpoint) \
    X(CLOSE_CONNECTOR,                    NdkCloseConnector,                 Connector)      \
    X(CONNECTOR_QUERY_EXTENSION,          NdkQueryExtension,                 Connector)      \
    X(CONNECT,                            NdkConnect,                        Connector)      \
    X(CONNECT_WITH_SHARED_ENDPOINT,       NdkConnectWithSharedEndpoint,      Connector)      \
    X(COMPLETE_CONNECT,                   NdkCompleteConnect,                Connector)      \
    X(ACCEPT,                             NdkAccept,                         Connector)      \
    X(REJECT,                             NdkReject,                         Connector)      \
    X(GET_CONNECTION_DATA,                NdkGetConnectionData,              Connector)      \
    X(CONNECTOR_GET_LOCAL_ADDRESS,        NdkGetLocalAddress,                Connector)      \
    X(GET_PEER_ADDRESS,                   NdkGetPeerAddress,                 Connector)      \
    X(DISCONNECT,                         NdkDisconnect,                     Connector)      \
    X(COMPLETE_CONNECT_EX,                NdkCompleteConnectEx,              Connector)      \
    X(ACCEPT_EX,                          NdkAcceptEx,                       Connector)      \
    X(CLOSE_LISTENER,                     NdkCloseListener,                  Listener)       \
    X(LISTENER_QUERY_EXTENSION,           NdkQueryExtension,                 Listener)       \
    X(LISTEN,                             NdkListen,                         Listener)       \
    X(LISTENER_GET_LOCAL_ADDRESS,         NdkGetLocalAddress,                Listener)       \
    X(CONTROL_CONNECT_EVENTS,             NdkControlConnectEvents,           Listener)       \
    X(CLOSE_ADAPTER,                      CloseNDKAdapter,                   Adapter)        \
    X(GET_RSS_PROCESSOR_INFO,             NdkGetRssProcessorInfo,            Adapter)

typedef enum ndk_filter_fn {
    NDK_FILTER_FN_NONE = 0,
#define NDK_FILTER_FN_ENUM_(id, slot, type) NDK_FILTER_FN_##id,
    NDK_FILTER_FN_LIST(NDK_FILTER_FN_ENUM_)
#undef NDK_FILTER_FN_ENUM_
    NDK_FILTER_FN_COUNT
} ndk_filter_fn;

/* "NdkSend", "NdkCloseQp", "CloseNDKAdapter"; "?" for an unknown id. */
const char *ndk_filter_fn_name(ndk_filter_fn fn);
/* The object type whose table holds the slot (NdkObjectTypeUndefined for an unknown id). */
NDK_OBJECT_TYPE ndk_filter_fn_object_type(ndk_filter_fn fn);
/* "adapter", "qp", "cq", "mr", "mw", "pd", "sep", "connector", "listener", "srq". */
const char *ndk_filter_object_type_name(NDK_OBJECT_TYPE type);

/* A wrapper: this filter's view of one NDK object. Lives from obj_create to obj_destroy. */
typedef struct ndk_filter_obj ndk_filter_obj;
/* One filter module or in-process filter, loaded once per runtime. */
typedef struct ndk_filter_module ndk_filter_module;

/* ---- the arguments of every call, as the consumer of this layer passed them ----
 * Object arguments are this layer's objects (what the consumer above holds); ndk_filter_obj_of()
 * gives their wrappers. Callback arguments are the consumer's (the layer substitutes its own in
 * ndk_filter_next()). A filter may change scalar arguments before forwarding. */
typedef union ndk_filter_args {
    struct { GUID *id; NDK_VERSION version; NDK_EXTENSION_INTERFACE *out; } query_extension;
    struct { NDK_ADAPTER_INFO *info; ULONG *size; } query_adapter_info;
    struct {
        ULONG depth; NDK_FN_CQ_NOTIFICATION_CALLBACK notify; PVOID notify_context;
        GROUP_AFFINITY *affinity; NDK_FN_CREATE_COMPLETION completion; PVOID context; NDK_CQ **out;
    } create_cq;
    struct { NDK_FN_CREATE_COMPLETION completion; PVOID context; NDK_PD **out; } create_pd;
    struct {
        PSOCKADDR address; ULONG address_length; NDK_FN_CREATE_COMPLETION completion; PVOID context;
        NDK_SHARED_ENDPOINT **out;
    } create_shared_endpoint;
    struct { NDK_FN_CREATE_COMPLETION completion; PVOID context; NDK_CONNECTOR **out; } create_connector;
    struct {
        NDK_FN_CONNECT_EVENT_CALLBACK connect_event; PVOID connect_event_context;
        NDK_FN_CREATE_COMPLETION completion; PVOID context; NDK_LISTENER **out;
    } create_listener;
    struct {
        MDL *mdl; SIZE_T length; NDK_FN_REQUEST_COMPLETION completion; PVOID context;
        NDK_LOGICAL_ADDRESS_MAPPING *lam; ULONG *lam_size; ULONG *fbo;
    } build_lam;
    struct { NDK_LOGICAL_ADDRESS_MAPPING *lam; } release_lam;
    /* every NdkCloseXxx */
    struct { NDK_FN_CLOSE_COMPLETION completion; PVOID context; } close;
    struct { ULONG depth; NDK_FN_REQUEST_COMPLETION completion; PVOID context; } resize_cq;
    struct { ULONG type; } arm_cq;
    /* returned: the result count the call returns (set by ndk_filter_next) */
    struct { NDK_RESULT *results; ULONG count; ULONG returned; } get_cq_results;
    struct { NDK_RESULT_EX *results; ULONG count; ULONG returned; } get_cq_results_ex;
    struct { ULONG interval; ULONG count; } control_cq_interrupt_moderation;
    struct { BOOLEAN fast_register; NDK_FN_CREATE_COMPLETION completion; PVOID context; NDK_MR **out; } create_mr;
    struct { NDK_FN_CREATE_COMPLETION completion; PVOID context; NDK_MW **out; } create_mw;
    struct {
        ULONG depth; ULONG max_sge; ULONG notify_threshold; NDK_FN_SRQ_NOTIFICATION_CALLBACK notify;
        PVOID notify_context; GROUP_AFFINITY *affinity; NDK_FN_CREATE_COMPLETION completion;
        PVOID context; NDK_SRQ **out;
    } create_srq;
    struct {
        NDK_CQ *receive_cq; NDK_CQ *initiator_cq; PVOID qp_context; ULONG receive_depth;
        ULONG initiator_depth; ULONG max_receive_sge; ULONG max_initiator_sge; ULONG inline_size;
        NDK_FN_CREATE_COMPLETION completion; PVOID context; NDK_QP **out;
    } create_qp;
    struct {
        NDK_CQ *receive_cq; NDK_CQ *initiator_cq; NDK_SRQ *srq; PVOID qp_context;
        ULONG initiator_depth; ULONG max_initiator_sge; ULONG inline_size;
        NDK_FN_CREATE_COMPLETION completion; PVOID context; NDK_QP **out;
    } create_qp_with_srq;
    struct { UINT32 *token; } get_privileged_token;
    struct {
        MDL *mdl; SIZE_T length; ULONG flags; NDK_FN_REQUEST_COMPLETION completion; PVOID context;
    } register_mr;
    /* NdkDeregisterMr, NdkDisconnect: a request completion only */
    struct { NDK_FN_REQUEST_COMPLETION completion; PVOID context; } request;
    struct {
        ULONG page_count; BOOLEAN remote_access; NDK_FN_REQUEST_COMPLETION completion; PVOID context;
    } initialize_fast_register_mr;
    /* NdkGetRemoteTokenFromMr, NdkGetLocalTokenFromMr, NdkGetRemoteTokenFromMw: set by next */
    struct { UINT32 token; } get_token;
    struct {
        ULONG depth; ULONG notify_threshold; NDK_FN_REQUEST_COMPLETION completion; PVOID context;
    } modify_srq;
    /* NdkSrqReceive, NdkReceive (flags 0), NdkSend, NdkSendAndInvalidate (remote_token) */
    struct {
        PVOID request_context; const NDK_SGE *sgl; ULONG sge_count; ULONG flags; UINT32 remote_token;
    } post;
    /* NdkRead, NdkWrite */
    struct {
        PVOID request_context; const NDK_SGE *sgl; ULONG sge_count; UINT64 remote_address;
        UINT32 remote_token; ULONG flags;
    } rdma;
    struct {
        PVOID request_context; NDK_MR *mr; NDK_MW *mw; PVOID address; SIZE_T length; ULONG flags;
    } bind;
    struct {
        PVOID request_context; NDK_MR *mr; ULONG page_count; const NDK_LOGICAL_ADDRESS *pages;
        ULONG fbo; SIZE_T length; PVOID base_address; ULONG flags;
    } fast_register;
    struct { PVOID request_context; NDK_OBJECT_HEADER *mr_or_mw; ULONG flags; } invalidate;
    /* every NdkGetLocalAddress, NdkGetPeerAddress */
    struct { PSOCKADDR address; ULONG *address_length; } get_address;
    /* NdkConnect, NdkConnectWithSharedEndpoint (shared_endpoint set, source NULL) */
    struct {
        NDK_QP *qp; NDK_SHARED_ENDPOINT *shared_endpoint; PSOCKADDR source; ULONG source_length;
        PSOCKADDR destination; ULONG destination_length; ULONG inbound_read_limit;
        ULONG outbound_read_limit; PVOID private_data; ULONG private_data_length;
        NDK_FN_REQUEST_COMPLETION completion; PVOID context;
    } connect;
    /* NdkCompleteConnect (disconnect_event), NdkCompleteConnectEx (disconnect_event_ex) */
    struct {
        NDK_FN_DISCONNECT_EVENT_CALLBACK disconnect_event;
        NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disconnect_event_ex; PVOID disconnect_context;
        NDK_FN_REQUEST_COMPLETION completion; PVOID context;
    } complete_connect;
    /* NdkAccept (disconnect_event), NdkAcceptEx (disconnect_event_ex) */
    struct {
        NDK_QP *qp; ULONG inbound_read_limit; ULONG outbound_read_limit; PVOID private_data;
        ULONG private_data_length; NDK_FN_DISCONNECT_EVENT_CALLBACK disconnect_event;
        NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disconnect_event_ex; PVOID disconnect_context;
        NDK_FN_REQUEST_COMPLETION completion; PVOID context;
    } accept;
    struct { PVOID private_data; ULONG private_data_length; } reject;
    struct {
        ULONG *inbound_read_limit; ULONG *outbound_read_limit; PVOID private_data;
        ULONG *private_data_length;
    } get_connection_data;
    struct {
        PSOCKADDR address; ULONG address_length; NDK_FN_REQUEST_COMPLETION completion; PVOID context;
    } listen;
    struct { BOOLEAN pause; } control_connect_events;
    /* the adapter RSS extension (ndkrss.h); status is its NDIS_STATUS */
    struct { PNDIS_RSS_PROCESSOR_INFO info; PSIZE_T size; } get_rss_processor_info;
} ndk_filter_args;

/* One call, built by the layer on the caller's stack and passed to the filter's call hook. */
typedef struct ndk_filter_call {
    ndk_filter_fn    fn;
    ndk_filter_obj  *obj;        /* the object called (the adapter for CLOSE_ADAPTER) */
    ndk_filter_args  args;
    NTSTATUS         status;     /* what the layer below returned (set by ndk_filter_next) */
    /* For a create that returned STATUS_SUCCESS inline: the new object's wrapper (set by
     * ndk_filter_next; obj_create has run). NULL otherwise. */
    ndk_filter_obj  *created;
    void            *layer_private_[2];   /* the layer's; do not touch */
} ndk_filter_call;

/* Forwards the call to the layer below, with object arguments unwrapped and consumer callbacks
 * replaced by the layer's; sets call->status (and returned/token/created where they apply) and
 * returns call->status. Call at most once per call; a call hook that returns without calling
 * it answers the consumer itself (then it must not return STATUS_PENDING, and for creates no
 * object is made). May block where the forwarded call may. */
NTSTATUS ndk_filter_next(ndk_filter_call *call);

typedef enum ndk_filter_cb_type {
    NDK_FILTER_CB_CLOSE_COMPLETION    = 1,   /* obj: the object closed */
    NDK_FILTER_CB_CREATE_COMPLETION   = 2,   /* obj: the parent; created: the new object or NULL */
    NDK_FILTER_CB_REQUEST_COMPLETION  = 3,   /* obj: the object the request was made on */
    NDK_FILTER_CB_CQ_NOTIFICATION     = 4,   /* obj: the CQ */
    NDK_FILTER_CB_CONNECT_EVENT       = 5,   /* obj: the listener; created: the new connector */
    NDK_FILTER_CB_DISCONNECT_EVENT    = 6,   /* obj: the connector */
    NDK_FILTER_CB_DISCONNECT_EVENT_EX = 7,   /* obj: the connector; reason set */
    NDK_FILTER_CB_SRQ_NOTIFICATION    = 8    /* obj: the SRQ */
} ndk_filter_cb_type;

/* "NdkCloseCompletion", "NdkCreateCompletion", "NdkRequestCompletion", ... */
const char *ndk_filter_cb_name(ndk_filter_cb_type type);

/* One consumer callback on its way up, passed to the filter's callback hook. */
typedef struct ndk_filter_cb {
    ndk_filter_cb_type type;
    ndk_filter_fn      fn;        /* the call this completes (completions); NONE for events */
    ndk_filter_obj    *obj;
    ndk_filter_obj    *created;   /* CREATE_COMPLETION on success, CONNECT_EVENT */
    NTSTATUS           status;    /* Status, CqStatus or SrqStatus; STATUS_SUCCESS otherwise */
    ULONG              reason;    /* DISCONNECT_EVENT_EX: ProviderDisconnectReason */
    PVOID              context;   /* the consumer's context for this callback */
    void              *layer_private_[3];   /* the layer's; do not touch */
} ndk_filter_cb;

/* A callback hook may change cb->status before it delivers or holds the callback; the consumer
 * gets the changed status (a create completion changed to a failure gets no object: the layer
 * closes the object below). Nothing else in cb may change. */

/* Runs the consumer's callback (the layer above's). Call exactly once per callback: from the
 * callback hook, or later, from any thread, for a callback taken with ndk_filter_cb_hold().
 * Never call it with a lock held that the consumer's callback or close path may need. When it
 * returns for a CLOSE_COMPLETION, the object is gone (obj_destroy has run). */
void ndk_filter_deliver(ndk_filter_cb *cb);
/* Called from the callback hook: takes the callback out of this call so that the filter can
 * deliver it later (a delayed completion or notification). Returns a heap copy to pass to
 * ndk_filter_deliver() once, or NULL (out of memory: deliver cb now instead). Until it is
 * delivered, the object's close completion and the adapter's close wait for it. */
ndk_filter_cb *ndk_filter_cb_hold(ndk_filter_cb *cb);

/* A callback that the filter itself originates, delivered to the consumer of this layer (not
 * through this filter's callback hook), on the calling thread:
 *   NDK_FILTER_CB_DISCONNECT_EVENT or _EX on a connector whose consumer registered a disconnect
 *     callback (the form it registered is used; reason goes to the _EX form): at most once per
 *     connection, counting the provider's own;
 *   NDK_FILTER_CB_CQ_NOTIFICATION on a CQ armed at this layer and not notified since (status is
 *     CqStatus): it spends the arm, serialised with the provider's notifications.
 * Returns STATUS_SUCCESS when delivered, STATUS_INVALID_DEVICE_REQUEST when it may not be raised
 * now, STATUS_INVALID_PARAMETER for another type or object, or once the object's close was
 * issued. obj must be alive (obj_destroy not run). Must not be called with a lock held that the
 * consumer's callback may need; never from inside this object's own callback hook. */
NTSTATUS ndk_filter_raise(ndk_filter_obj *obj, ndk_filter_cb_type type, NTSTATUS status, ULONG reason);

/* ---- wrappers ---- */
NDK_OBJECT_TYPE ndk_filter_obj_type(const ndk_filter_obj *obj);
/* Per filter and object type, from 1, never reused in the process: "qp#7" is (Qp, 7). */
ULONG ndk_filter_obj_id(const ndk_filter_obj *obj);
/* Writes "qp#7" (at most size bytes, NUL-terminated); returns buf. */
char *ndk_filter_obj_name(const ndk_filter_obj *obj, char *buf, size_t size);
/* The filter's per-object state: ndk_filter_ops.obj_ctx_size zeroed bytes, max_align_t aligned. */
void *ndk_filter_obj_ctx(const ndk_filter_obj *obj);
/* The object as the consumer of this layer sees it (its header). */
NDK_OBJECT_HEADER *ndk_filter_obj_header(const ndk_filter_obj *obj);
/* The object of the layer below (the next filter's or the provider's). A filter may call into
 * it directly (e.g. to abort a connection); callbacks it passes there are its own. */
NDK_OBJECT_HEADER *ndk_filter_obj_lower(const ndk_filter_obj *obj);
/* The object this one was created from: the adapter (CQ, PD, shared endpoint, connector,
 * listener), the PD (MR, MW, QP, SRQ), the listener (a connector of a connect event); NULL for
 * the adapter. Valid as long as obj is. */
ndk_filter_obj *ndk_filter_obj_parent(const ndk_filter_obj *obj);
/* The wrapper of this filter for an object of this layer (an object argument of a call), or
 * NULL when header is NULL or not one of this filter's objects in the same adapter instance. */
ndk_filter_obj *ndk_filter_obj_of(const ndk_filter_obj *any, const NDK_OBJECT_HEADER *header);

/* ---- the module ---- */
/* The filter's name ("trace"). */
const char *ndk_filter_module_name(const ndk_filter_module *module);
/* A setting: NDK_<FILTER>_<KEY> in the environment, else "<filter>.<key>" in openndk.conf;
 * NULL when unset. The string lives until the module is unloaded. */
const char *ndk_filter_config(ndk_filter_module *module, const char *key);
/* Logs a line through the runtime's logger, prefixed with the filter's name. */
void ndk_filter_log(ndk_filter_module *module, int level, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Opens a filter's output file (a <filter>.path setting): "%p" becomes the process id; NULL, ""
 * or "-" is standard error (STDERR_FILENO, not to be closed). Opened O_WRONLY | O_CREAT |
 * O_APPEND | O_CLOEXEC, mode 0644, so that one write(2) per record never interleaves with
 * another's. Returns the fd or -errno. May block. */
int ndk_filter_open_path(const char *path);

/* ---- what a filter implements ---- */
typedef struct ndk_filter_ops {
    ULONG       size;            /* sizeof(ndk_filter_ops) as the filter was built */
    ULONG       abi_version;     /* NDK_FILTER_ABI_VERSION */
    const char *name;            /* for in-process filters (modules: the entry sets it too) */
    size_t      obj_ctx_size;    /* bytes of per-object state (ndk_filter_obj_ctx) */

    /* Once per module and runtime, before the first instance; may block; optional. Returns 0
     * or a failure status (the runtime then refuses to open adapters with this filter). */
    NTSTATUS (*load)(ndk_filter_module *module, void **module_ctx);
    /* Once, when the runtime closes; every instance is closed; may block; optional. */
    void (*unload)(void *module_ctx);

    /* Per NDK_ADAPTER instance (every ndk_rt_open_adapter): before the adapter wrapper is made.
     * adapter_name is "<provider>:<ifname>". May block. Optional; *inst_ctx defaults to
     * module_ctx. A failure status fails the open. */
    NTSTATUS (*open)(void *module_ctx, ndk_filter_module *module, const char *adapter_name, void **inst_ctx);
    /* After the instance's adapter was closed below and every object is gone. May block. */
    void (*close)(void *inst_ctx);

    /* A wrapper begins (before the consumer sees the object) / ends (after the object was
     * closed below and its close completion, if any, was delivered). Never block; optional. */
    void (*obj_create)(void *inst_ctx, ndk_filter_obj *obj);
    void (*obj_destroy)(void *inst_ctx, ndk_filter_obj *obj);

    /* Every call; forwards with ndk_filter_next(). Optional (NULL: forward). Context: the
     * consumer's thread, possibly inside a callback of this or another object; blocks only
     * where the call itself may. Returns the status the consumer gets (ignored for VOID slots;
     * for slots that return a count or token, the layer returns args.*.returned/.token). */
    NTSTATUS (*call)(void *inst_ctx, ndk_filter_call *call);
    /* Every consumer callback; passes it up with ndk_filter_deliver() (or holds it). Optional
     * (NULL: deliver). Context: the provider's callback thread; must not block. If the hook
     * returns without delivering or holding, the layer delivers. */
    void (*callback)(void *inst_ctx, ndk_filter_cb *cb);
} ndk_filter_ops;

/* The exported entry point of ndk-filter-<name>.so. abi_version is the runtime's
 * NDK_FILTER_ABI_VERSION; the filter sets *ops to its table (whose abi_version the runtime
 * checks) and returns STATUS_SUCCESS, or a failure status (the module is then not used). */
typedef NTSTATUS (*NDK_FILTER_ENTRY_FN)(ULONG abi_version, const ndk_filter_ops **ops);
NTSTATUS NdkFilterEntry(ULONG abi_version, const ndk_filter_ops **ops);

/* An in-process filter (ndk_rt_open_adapter_ex): ops and the module_ctx its hooks get. */
typedef struct ndk_filter_inproc {
    const ndk_filter_ops *ops;
    void                 *context;   /* passed as module_ctx to open (load is not called) */
} ndk_filter_inproc;

/* ---- opening an adapter with in-process filters (libndk; see also ndk/runtime.h) ---- */

/* Options of ndk_rt_open_adapter_ex. Zero-initialise and set size. */
typedef struct ndk_rt_open_options {
    ULONG                     size;           /* sizeof(ndk_rt_open_options) */
    /* In-process filters placed above the configured ones, outermost first (filters[0] is what
     * the consumer holds). Each gets its own module (named ops->name) for this instance. */
    ULONG                     filter_count;
    const ndk_filter_inproc  *filters;
    /* TRUE: stack only the in-process filters, not those the configuration names. */
    BOOLEAN                   no_configured_filters;
} ndk_rt_open_options;

/* ndk_rt_open_adapter with options; opts may be NULL (then it is ndk_rt_open_adapter). The
 * adapter returned is the top of the stack; ndk_rt_close_adapter closes it through every filter.
 * Returns what ndk_rt_open_adapter returns, and STATUS_INVALID_PARAMETER for malformed options,
 * the status of a configured filter that could not be loaded (STATUS_DLL_NOT_FOUND, ...), or the
 * status a filter's open hook refused the adapter with. May block. */
NTSTATUS ndk_rt_open_adapter_ex(ndk_rt *rt, ndk_rt_adapter_id id, NDK_VERSION version,
                                const ndk_rt_open_options *opts, NDK_ADAPTER **out);

#ifdef __cplusplus
}
#endif

#endif /* NDK_FILTER_H */
