/*
 * verbs.h - the verbs provider's internal object model: NDKPI 2.1 over rdma-core (libibverbs +
 * librdmacm), so that real RNICs (mlx5, irdma, cxgb4) and Linux's rxe and siw sit under the NDK
 * tables. Nothing of the data path is done by hand: posting is ibv_post_send/recv/srq_recv,
 * completions come from ibv_poll_cq and one completion channel, connections from rdma_cm.
 * Mapping decisions: ndk-verbs(7) and docs/providers.md (cited "map §x"); NDK rules: Microsoft's
 * NDKPI reference, restated in docs/ndkpi.md (cited "§x").
 *
 *   struct vb_provider   driver context: services, why no device was found, bound devices
 *   struct vb_device     one bound (interface, RDMA device, port) = MiniportAdapterContext:
 *                        limits probed from the device, the rdma_cm event channel, the completion
 *                        channel and the progress thread that owns both (progress.c)
 *   struct vb_adapter    one NDK_ADAPTER instance (negotiated version, object count)
 *   struct vb_obj        base of every object below the adapter: refcount, antecedents, close
 *   vb_pd vb_cq vb_srq vb_qp vb_mr vb_mw vb_connector vb_listener vb_sep
 *
 * Threads and callbacks (map D5, §4): every consumer callback runs on the device's progress
 * thread with no provider lock held. Every verbs object is destroyed on that thread too, and the
 * thread is the only reader of the rdma_cm, completion-channel and async event queues, so an
 * event's context pointer is always alive while it is handled (no destroy can race it).
 * Lock order (outermost first): dev->lock -> dev->qpt_lock (a poll's QP lookup) ->
 * qp->sq_lock / qp->rq_lock -> srq->lock -> mr->lock -> pd->lock -> cq->lock -> dev->wq_lock.
 * The adapter instance's locks (its LAM list's, and src/common/ndk_prov_adapter.h's object count
 * and instance list) are leaves.
 */
#ifndef VB_VERBS_H
#define VB_VERBS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <ndkpi.h>
#include <ndisndk.h>
#include <ndk/provider.h>
#include <ndk/sysview.h>

#include "ndk_list.h"
#include "ndk_status.h"
#include "ndk_prov_adapter.h"
#include "ndk_prov_entry.h"
#include "ndk_prov_pd.h"
#include "ndk_prov_oid.h"

#define VB_EXPORT __attribute__((visibility("default")))

#define VB_VERSION_1_MINOR_MAX 2
#define VB_VERSION_2_MINOR_MAX 1

#define VB_CQ_RESERVE      0u      /* extra device CQEs: none, so an overrun shows at the NDK depth */
#define VB_FRMR_PAGE_COUNT 256u    /* advertised FRMR size; the emulation has no hard limit */
#define VB_MAX_FRMR_PAGES  65536u
#define VB_LARGE_REQUEST   16384u
#define VB_BACKLOG         128
#define VB_CM_TIMEOUT_MS   5000
#define VB_MAX_LISTEN_IDS  8       /* a wildcard listen: one rdma_cm id per adapter address */
#define VB_MAX_PD_LEN      256     /* librdmacm's private-data ceiling (RDMA_MAX_PRIVATE_DATA) */
#define VB_PRIV_TOKEN      0u      /* privileged token: never an lkey on the devices we run on */

struct vb_device;
struct vb_adapter;

/* ---- log ---- */
void vb_log(const struct vb_device *dev, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define vb_err(d, ...)   vb_log((d), NDK_LOG_ERROR, __VA_ARGS__)
#define vb_warn(d, ...)  vb_log((d), NDK_LOG_WARNING, __VA_ARGS__)
#define vb_info(d, ...)  vb_log((d), NDK_LOG_INFO, __VA_ARGS__)
#define vb_dbg(d, ...)   vb_log((d), NDK_LOG_DEBUG, __VA_ARGS__)

/* ---- provider (provider.c) ---- */
struct vb_provider {
    struct ndk_prov_driver drv;   /* first: services, driver handle (ndk_prov_entry.h) */
    int ndevices;                 /* RDMA devices rdma-core saw at load */
    char why[96];                 /* one line: why no adapter can be offered, or the device names */
};
/* ---- progress thread work (progress.c) ---- */
struct vb_work {
    void (*fn)(struct vb_work *w);
    struct ndk_list link;
};

/* A queued consumer request completion (NDK_FN_REQUEST_COMPLETION) holding a reference. */
struct vb_call {
    struct vb_work work;
    NDK_FN_REQUEST_COMPLETION fn;
    void *ctx;
    NTSTATUS status;
    struct vb_obj *hold;
};

/* ---- device (device.c) ---- */
/* The NDK counters the provider keeps (OID_NDK_STATISTICS), by NDIS_NDK_PERFORMANCE_COUNTERS
 * member: words of dev->cnt, added to from any thread (sysview.c). */
#define VB_CNT(f) (offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, f) / sizeof(ULONG64))
#define VB_COUNT_ADD(dev, f, n) ndk_sv_add_shared(&(dev)->cnt[VB_CNT(f)], (uint64_t)(n))
#define VB_COUNT(dev, f) VB_COUNT_ADD(dev, f, 1)

struct vb_device {
    struct vb_provider *prov;
    NDIS_HANDLE miniport_handle;
    ULONG ifindex;
    char ifname[NDK_PROVIDER_IFNAME_MAX];

    /* The RDMA device port serving the interface, found by binding its address (map §2.2). */
    struct ibv_context *ctx;      /* librdmacm's context (map D2): cm_id->verbs == ctx */
    uint8_t port;
    char devname[IBV_SYSFS_NAME_MAX];
    enum ibv_transport_type transport;
    uint8_t link_layer;
    bool iwarp;                   /* iWARP CM: no CONNECT_RESPONSE, the kernel moves the QP */
    bool has_mw2;                 /* type-2 memory windows usable */
    bool has_srq;
    /* rxe passes the kernel's IB_WC_WITH_INVALIDATE (bit 2) through to user space, where bit 2
     * is IBV_WC_IP_CSUM_OK, never set on an RC receive: read it as the invalidate flag. */
    bool rxe_inv_quirk;
    bool can_resize_cq;
    uint16_t cq_mod_count, cq_mod_period;   /* ibv_query_device_ex cq_mod_caps (0: none) */
    uint32_t max_sge_rd;
    uint32_t max_inline;
    uint32_t max_qp_wr, max_cqe, max_srq_wr;
    struct ibv_pd *probe_pd;
    NDK_ADAPTER_INFO info;
    NDIS_NDK_CAPABILITIES caps;
    atomic_bool enabled;
    atomic_int pnp_pending_event;
    struct vb_work pnp_work;
    /* The NDK counters: the adapter record's (whole adapter, sysview.c) or own_cnt. */
    uint64_t *cnt;
    uint64_t own_cnt[NDK_SV_COUNTERS];
    bool sv;                        /* the runtime offers the system view services */

    /* Addresses of the interface (from the runtime), for wildcard listens. Job of lock. */
    SOCKADDR_INET addrs[VB_MAX_LISTEN_IDS];
    ULONG naddrs;

    struct rdma_event_channel *ech;
    struct ibv_comp_channel *cc;
    /* progress.c. Job of wq_lock: the work list. */
    pthread_t thread;
    int epfd, evfd;
    pthread_mutex_t wq_lock;
    struct ndk_list work;
    bool stop;

    /* QP lookup by qp_num for completions (error CQEs carry only wr_id/status/qp_num).
     * Job of qpt_lock: the buckets. */
    pthread_mutex_t qpt_lock;
    struct ndk_list qpt[64];
    struct ndk_list srqs;           /* live SRQs, to validate an SRQ receive's wr_id */

    /* Job of lock: connectors, listeners, addrs. */
    pthread_mutex_t lock;
    struct ndk_prov_adapter_list adapters;   /* open instances (its own leaf lock) */
    struct ndk_list connectors;
    struct ndk_list seps;
    struct ndk_list listeners;      /* listening listeners, for OID_NDK_LOCAL_ENDPOINTS */
    /* The GID rdma_cm uses for the interface's address (RoCE) or the port's first (iWARP, IB). */
    union ibv_gid gid;
    uint32_t gid_index;

    /* token.c: provider-minted local tokens (fast-register MRs) and the placeholder page their
     * registrations cover. Job of tok_lock (a leaf): the buckets and each entry's translation. */
    pthread_mutex_t tok_lock;
    struct ndk_list tok[64];
    atomic_uint ntok;
    void *ph_page;

    /* win.c: every type-2 window, with the QP of its last bind (see win.c for win_lock's job). */
    pthread_mutex_t win_lock;
    struct ndk_list wins;

    /* rinv.c: window keys a peer invalidated, which a LOCAL_INV must not reach (rxe). */
    pthread_mutex_t rinv_lock;
    uint32_t *rinv;
    size_t rinv_n, rinv_cap;

    /* drain.c: siw completes nothing posted after its QP reached ERROR and skips the SQ flush on
     * some transitions (siw_qp.c), so the provider completes what the device dropped. */
    bool flush_sync;                /* the device's flush is done when ibv_modify_qp(ERR) returns */
    atomic_uint ndrain;             /* QP rings whose dropped requests wait for a CQ poll */
    _Atomic uint64_t drain_epoch;
};

NDIS_STATUS vb_device_create(struct vb_provider *prov, NDIS_HANDLE handle, const NDK_PROVIDER_INTERFACE *ifc,
                             struct vb_device **out);
void vb_device_update(struct vb_device *dev, const NDK_PROVIDER_INTERFACE *ifc);
void vb_device_destroy(struct vb_device *dev);
NDIS_STATUS vb_device_oid(struct vb_device *dev, NDK_OID_REQUEST *req);
bool vb_device_has_address(struct vb_device *dev, const struct sockaddr *sa);
int vb_device_scan(struct vb_provider *prov);

/* ---- system view (sysview.c): records of the objects, the adapter's counters ---- */
bool vb_sv_services(const NDK_RUNTIME_SERVICES *s);
void vb_sv_device_init(struct vb_device *dev);
struct ndk_sv_rec *vb_sv_alloc(struct vb_device *dev, uint16_t type);
void vb_sv_free(struct vb_device *dev, struct ndk_sv_rec *rec);
uint64_t vb_sv_id(const struct ndk_sv_rec *rec);
void vb_sv_name(char dst[16], const char *name);
void vb_sv_addr(struct ndk_sv_addr *out, const struct sockaddr *sa);
uint64_t vb_sv_now(void);
bool vb_sv_qp_error(struct ndk_sv_rec *rec, int err);
int vb_sv_wc_errno(enum ibv_wc_status st);

/* ---- token table (token.c, map D4) ---- */
int vb_token_init(struct vb_device *dev);
void vb_token_fini(struct vb_device *dev);
struct ibv_mr *vb_token_placeholder(struct vb_device *dev, struct ibv_pd *pd);
struct vb_mr;
void vb_token_add(struct vb_mr *mr);
void vb_token_del(struct vb_mr *mr);
void vb_token_set(struct vb_mr *mr, uint32_t lkey, int64_t delta);
/* Rewrites an SGE whose lkey is a minted token; false if it is none. tok_lock inside. */
bool vb_token_translate(struct vb_device *dev, struct ibv_sge *sge);

/* ---- remotely invalidated window keys (rinv.c) ---- */
void vb_rinv_note(struct vb_device *dev, uint32_t key);
bool vb_rinv_take(struct vb_device *dev, uint32_t key);

/* ---- locked-memory limit (memlock.c) ---- */
void vb_memlock_raise(struct vb_device *dev);
void vb_memlock_explain(struct vb_device *dev, const char *what, size_t len, int err);

/* ---- progress (progress.c) ---- */
int vb_progress_start(struct vb_device *dev);
void vb_progress_stop(struct vb_device *dev);
bool vb_progress_on_thread(const struct vb_device *dev);
void vb_work_queue(struct vb_device *dev, struct vb_work *w);
void vb_call_queue(struct vb_device *dev, struct vb_call *c, NDK_FN_REQUEST_COMPLETION fn, void *ctx, NTSTATUS st,
                   struct vb_obj *hold);

/* ---- adapter (adapter.c) ---- */
struct vb_adapter {
    struct ndk_prov_adapter base;  /* first: base.ndk is handed to the consumer */
    struct vb_device *dev;
    pthread_mutex_t lock;          /* job: lams. A leaf lock. */
    struct ndk_list lams;
};
#define to_vb_adapter(p) ndk_container_of((p), struct vb_adapter, base.ndk)
NDIS_STATUS vb_adapter_open(NDIS_HANDLE ctx, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params, NDK_ADAPTER **out);
void vb_adapter_close(NDIS_HANDLE ctx, NDK_ADAPTER *a);

/* ---- object base (obj.c over src/common/ndk_prov_obj: §5.1; the rules are stated there) ----
 * Every verbs object is destroyed on the progress thread (above), so every close returns
 * STATUS_PENDING (§0.4 allows it) and a failed create's undo is queued too. */
enum vb_obj_type {
    VB_OBJ_QP = NdkObjectTypeQp, VB_OBJ_CQ = NdkObjectTypeCq, VB_OBJ_MR = NdkObjectTypeMr,
    VB_OBJ_MW = NdkObjectTypeMw, VB_OBJ_PD = NdkObjectTypePd, VB_OBJ_SEP = NdkObjectTypeSharedEndpoint,
    VB_OBJ_CONNECTOR = NdkObjectTypeConnector, VB_OBJ_LISTENER = NdkObjectTypeListener,
    VB_OBJ_SRQ = NdkObjectTypeSrq,
};
struct vb_obj;
struct vb_obj_ops {
    void (*close_start)(struct vb_obj *o);   /* consumer thread, no lock: start flushing */
    void (*quiesce)(struct vb_obj *o);       /* optional, progress thread: flush before the completion */
    void (*destroy)(struct vb_obj *o);       /* progress thread: free the verbs objects and o */
};
struct vb_obj {
    struct ndk_prov_obj base;      /* refs, closing, close completion, antecedents */
    const struct vb_obj_ops *ops;
    enum vb_obj_type type;
    struct vb_adapter *adapter;
    struct vb_device *dev;
    struct vb_work close_work;     /* runs the finish on the progress thread */
    struct ndk_sv_rec *sv;         /* the system view record, NULL when none (sysview.c) */
};
/* The hooks of every verbs object (obj.c), named by every adapter instance. */
extern const struct ndk_prov_obj_hooks vb_obj_hooks;
void vb_obj_init(struct vb_obj *o, const struct vb_obj_ops *ops, enum vb_obj_type type, struct vb_adapter *ad,
                 NDK_OBJECT_HEADER *hdr, const void *dispatch);
void vb_obj_sv_free(struct vb_obj *o);
/* vb_obj_get, _put, _tryget, _set_ante, _ante, _close, _abort_create, _closing: ndk_prov_obj's
 * (same contexts; the provider's work-queue lock is dev->wq_lock). */
NDK_PROV_OBJ_TYPED(vb_obj, struct vb_obj)
/* No extension is offered. The RSS extension (ndkrss.h) would name the processors receive work
 * is steered to; the provider does not learn which processors the RNIC's completion vectors
 * interrupt, so it cannot name them, and the query gets STATUS_NOT_SUPPORTED (docs/status.md). */
#define vb_obj_query_extension ndk_prov_obj_query_extension

/* ---- status (status.c): the one table (map §3) ---- */
NTSTATUS vb_status_from_wc(enum ibv_wc_status st, bool receive);
NTSTATUS vb_status_from_cm(enum rdma_cm_event_type ev, int status, bool iwarp, bool passive);
NTSTATUS vb_status_from_bind(int err, bool port_zero);
NTSTATUS vb_status_from_errno(int err);

/* ---- PD (pd.c) ---- */
struct vb_lam_mr;
struct vb_pd {
    NDK_PD ndk;
    struct vb_obj obj;
    struct ibv_pd *pd;
    /* Job of lock: lam_mrs (per-PD registrations backing LAMs for privileged tokens). */
    pthread_mutex_t lock;
    struct ndk_list lam_mrs;
};
#define to_vb_pd(p) ndk_container_of((p), struct vb_pd, ndk)
int vb_pd_new(struct ndk_prov_adapter *ad, NDK_PD **out);   /* the adapter kind's */
/* ndk_prov_pd_close finds the base right after the public handle; the posting path's privileged
 * token is the PD's. */
_Static_assert(offsetof(struct vb_pd, obj) == sizeof(struct ndk_prov_handle) && offsetof(struct vb_obj, base) == 0,
               "vb_pd layout");
_Static_assert(VB_PRIV_TOKEN == NDK_PROV_PD_PRIVILEGED_TOKEN, "privileged token");
int vb_pd_priv_lkey(struct vb_pd *pd, uintptr_t va, size_t len, uint32_t *lkey);

/* ---- LAM (lam.c) ---- */
struct vb_lam {
    struct ndk_list link;          /* in adapter->lams */
    NDK_LOGICAL_ADDRESS_MAPPING *lam;
    uintptr_t va;
    size_t len;
};
NTSTATUS vb_lam_build(NDK_ADAPTER *a, MDL *mdl, SIZE_T len, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx,
                      NDK_LOGICAL_ADDRESS_MAPPING *lam, ULONG *lam_size, ULONG *fbo);
void vb_lam_release(NDK_ADAPTER *a, NDK_LOGICAL_ADDRESS_MAPPING *lam);
bool vb_lam_find(struct vb_adapter *ad, uintptr_t va, size_t len, uintptr_t *span_va, size_t *span_len);

/* ---- CQ (cq.c) ---- */
struct vb_swc {                     /* a provider-made completion (fast register, invalidate) */
    struct ndk_list link;
    NDK_RESULT_EX r;
};
struct vb_cq {
    NDK_CQ ndk;
    struct vb_obj obj;
    struct ibv_cq *cq;
    ULONG depth;
    NDK_FN_CQ_NOTIFICATION_CALLBACK notify;
    void *notify_ctx;
    /* Job of lock: arm state, the software completion list, the error latch. */
    pthread_mutex_t lock;
    int armed;                      /* -1 unarmed, else NDK_CQ_NOTIFY_* in effect */
    NTSTATUS latched;               /* CQ error seen while unarmed (§8.32) */
    struct ndk_list swc;
    atomic_uint nswc;               /* entries in swc, read by the poll without the lock */
    struct vb_work notify_work;
    bool notify_queued;
    NTSTATUS notify_status;
    /* Poll-side state; the consumer serializes poll and arm (§5.4). */
    bool have_ahead;
    struct ibv_wc ahead;
};
#define to_vb_cq(p) ndk_container_of((p), struct vb_cq, ndk)
NTSTATUS vb_cq_create(NDK_ADAPTER *a, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK fn, PVOID fctx, GROUP_AFFINITY *aff,
                      NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_CQ **out);
void vb_cq_push_soft(struct vb_cq *cq, const NDK_RESULT_EX *r);
void vb_cq_kick(struct vb_cq *cq);
void vb_cq_on_event(struct vb_device *dev, struct ibv_cq *cq);
void vb_cq_on_error(struct vb_cq *cq, NTSTATUS st);

/* ---- SRQ (srq.c) ---- */
struct vb_rslot {                   /* an SRQ receive's shadow (map D3) */
    void *ctx;
    uint32_t next_free;
};
/* wr_id of an SRQ receive: bit 63 clear, bits 62..48 the slot, bits 47..0 the vb_srq. */
#define VB_SRQ_MAX_DEPTH 32767u
struct vb_srq {
    NDK_SRQ ndk;
    struct vb_obj obj;
    struct ibv_srq *srq;
    struct ndk_list link;           /* dev->srqs (dev->qpt_lock) */
    ULONG depth, max_sge;
    NDK_FN_SRQ_NOTIFICATION_CALLBACK notify;
    void *notify_ctx;
    /* Job of lock: slots' free list, posted count, threshold. */
    pthread_mutex_t lock;
    struct vb_rslot *slots;
    uint32_t nslots, free_head, posted;
    ULONG threshold;
    bool limit_armed;
    struct vb_work notify_work;
    NTSTATUS notify_status;
    bool notify_queued;
};
#define to_vb_srq(p) ndk_container_of((p), struct vb_srq, ndk)
NTSTATUS vb_srq_create(NDK_PD *p, ULONG depth, ULONG max_sge, ULONG threshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK fn,
                       PVOID fctx, GROUP_AFFINITY *aff, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_SRQ **out);
void *vb_srq_complete(struct vb_srq *srq, uint32_t idx);
struct vb_srq *vb_srq_lookup(struct vb_device *dev, uint64_t wr_id, uint32_t *idx);
void vb_srq_on_event(struct vb_srq *srq, NTSTATUS st);

/* ---- QP (qp.c: objects and states; post.c: work requests) ----
 * wr_id of a QP's own ring entry: bit 63 set, bit 62 receive, bits 61..32 the QP's generation
 * (a qp_num may be reused after destroy), bits 31..0 the ring counter. Rings are powers of two. */
#define VB_WR_RING  (1ull << 63)
#define VB_WR_RECV  (1ull << 62)
#define VB_WR_GEN(id) ((uint32_t)(((id) >> 32) & 0x3fffffffu))
enum vb_sop { VB_SOP_SEND, VB_SOP_WRITE, VB_SOP_READ, VB_SOP_BIND, VB_SOP_INV, VB_SOP_HIDDEN, VB_SOP_FR };
struct vb_sslot {                   /* a send-queue request's shadow (map D3) */
    void *ctx;
    uint8_t type;                   /* NDK_OPERATION_TYPE low byte via vb_sop */
    bool signaled, silent;
    bool forced;                    /* a silent request signaled in secret (map §1.4) */
    struct vb_mw *mw;               /* bind / invalidate target, made valid on completion */
    uint32_t len;                   /* payload bytes posted (the system view's byte counts) */
    uint64_t posted_ns;             /* vb_sv_now() at post: the age of the oldest request */
};
struct vb_qp {
    NDK_QP ndk;
    struct vb_obj obj;
    struct ibv_qp *qp;
    struct vb_pd *pd;
    struct vb_cq *rcq, *scq;
    struct vb_srq *srq;
    void *qp_ctx;
    uint32_t qpn, gen;
    struct ndk_list qpt_link;       /* in dev->qpt */
    ULONG sq_depth, rq_depth, max_ssge, max_rsge, inline_size;
    ULONG wr_sges;                  /* SGEs per send WR slot: max(max_ssge, the device's read SGEs) */
    /* Job of sq_lock: the send ring, the DEFER chain, flushed. */
    pthread_mutex_t sq_lock;
    struct vb_sslot *sq;
    uint32_t sq_n;                  /* ring size (depth + hidden reserve) */
    uint64_t sq_head, sq_tail;
    uint32_t silent_run;
    bool forced_inflight;           /* at most one hidden completion per QP in a CQ */
    uint8_t *inl;                   /* sq_n * inline_size staging bytes */
    struct ibv_send_wr *chain, *chain_tail;
    struct ibv_sge *chain_sges;     /* sq_n * max_ssge */
    struct ibv_send_wr *chain_wrs;  /* sq_n */
    /* Job of rq_lock: the receive ring. */
    pthread_mutex_t rq_lock;
    void **rq;
    uint64_t *rq_ns;                /* each receive's post time (vb_sv_now) */
    uint32_t rq_n;
    uint64_t rq_head, rq_tail;
    atomic_bool flushed;
    atomic_bool connected;
    atomic_bool peer_gone;          /* the peer disconnected: new initiator requests fail inline */
    struct vb_connector *conn;      /* set under dev->lock while a connector uses the QP */
    /* drain.c: the drain epoch at which each ring was marked (0 none, UINT64_MAX done). */
    _Atomic uint64_t drain_sq, drain_rq;
    atomic_bool err_queued;
    struct vb_work err_work;
};
#define to_vb_qp(p) ndk_container_of((p), struct vb_qp, ndk)
NTSTATUS vb_qp_create(NDK_PD *p, NDK_CQ *rcq, NDK_CQ *scq, PVOID qpctx, ULONG rq_depth, ULONG sq_depth, ULONG max_rsge,
                      ULONG max_ssge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_QP **out);
NTSTATUS vb_qp_create_with_srq(NDK_PD *p, NDK_CQ *rcq, NDK_CQ *scq, NDK_SRQ *srq, PVOID qpctx, ULONG sq_depth,
                               ULONG max_ssge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_QP **out);
struct vb_qp *vb_qp_lookup(struct vb_device *dev, uint32_t qpn);
int vb_qp_to_rts(struct vb_qp *qp, struct rdma_cm_id *id);
void vb_qp_to_err(struct vb_qp *qp);
void vb_qp_flush(NDK_QP *q);
/* The CQ's translation of one ibv_wc of this QP; returns false for hidden entries. */
bool vb_qp_complete(struct vb_qp *qp, const struct ibv_wc *wc, NDK_RESULT_EX *r);
NDK_OPERATION_TYPE vb_qp_op_type(uint8_t sop);
/* The QP's system view record (sysview.c): sq_lock is the lock of its descriptive fields, taken
 * only where the state changes; vb_qp_sv_state must not be called with sq_lock held. The ring
 * words are written under the ring's lock by the poster and the poller (every translation also
 * holds dev->qpt_lock, which keeps the completion-side words to one writer). */
void vb_qp_sv_state(struct vb_qp *qp, const char *state);
/* sq_lock held: the send ring's posted/completed counts and the age of its oldest request. */
static inline void vb_qp_sv_sq(struct vb_qp *qp)
{
    struct ndk_sv_rec *r = qp->obj.sv;

    if (!r)
        return;
    ndk_sv_set(&r->u.qp.sq_posted, qp->sq_head);
    ndk_sv_set(&r->u.qp.sq_completed, qp->sq_tail);
    ndk_sv_set(&r->u.qp.sq_oldest_ns,
               qp->sq_head == qp->sq_tail ? 0 : qp->sq[qp->sq_tail & (qp->sq_n - 1)].posted_ns);
}
/* rq_lock held: the same for the receive ring (a QP with an SRQ has none: the SRQ's record). */
static inline void vb_qp_sv_rq(struct vb_qp *qp)
{
    struct ndk_sv_rec *r = qp->obj.sv;

    if (!r || !qp->rq_ns)
        return;
    ndk_sv_set(&r->u.qp.rq_posted, qp->rq_head);
    ndk_sv_set(&r->u.qp.rq_completed, qp->rq_tail);
    ndk_sv_set(&r->u.qp.rq_oldest_ns, qp->rq_head == qp->rq_tail ? 0 : qp->rq_ns[qp->rq_tail & (qp->rq_n - 1)]);
}

/* ---- drain (drain.c): completions the device dropped after a QP error ---- */
void vb_drain_arm(struct vb_qp *qp);
bool vb_drain_cq(struct vb_cq *cq, uint64_t epoch);
void vb_drain_forget(struct vb_qp *qp);
void vb_drain_on_qp_error(struct vb_qp *qp);
void vb_drain_error_seen(struct vb_qp *qp);

NTSTATUS vb_post_send(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n, ULONG flags);
NTSTATUS vb_post_send_inv(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n, ULONG flags, UINT32 token);
NTSTATUS vb_post_receive(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n);
NTSTATUS vb_post_write(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n, UINT64 ra, UINT32 token, ULONG flags);
NTSTATUS vb_post_read(NDK_QP *q, PVOID ctx, CONST NDK_SGE *sgl, ULONG n, UINT64 ra, UINT32 token, ULONG flags);
NTSTATUS vb_post_bind(NDK_QP *q, PVOID ctx, NDK_MR *mr, NDK_MW *mw, PVOID va, SIZE_T len, ULONG flags);
NTSTATUS vb_post_fast_register(NDK_QP *q, PVOID ctx, NDK_MR *mr, ULONG npages, CONST NDK_LOGICAL_ADDRESS *pages,
                               ULONG fbo, SIZE_T len, PVOID base, ULONG flags);
NTSTATUS vb_post_invalidate(NDK_QP *q, PVOID ctx, NDK_OBJECT_HEADER *target, ULONG flags);
NTSTATUS vb_post_srq_receive(NDK_SRQ *s, PVOID ctx, CONST NDK_SGE *sgl, ULONG n);
int vb_post_sges(struct vb_pd *pd, CONST NDK_SGE *sgl, ULONG n, struct ibv_sge *out);

/* ---- MR / MW (mr.c, mw.c) ---- */
#define VB_MR_STALE 4
/* A type-2 window's entry in dev->wins (win.c). */
struct vb_win {
    struct ndk_list link;
    struct vb_qp *qp;               /* QP of the last bind posted (compared, never dereferenced) */
    void (*renew)(struct vb_win *w);   /* owner: swaps its window (vb_win_swap); win_lock held */
};
void vb_win_add(struct vb_device *dev, struct vb_win *w, void (*renew)(struct vb_win *w));
void vb_win_del(struct vb_device *dev, struct vb_win *w);
void vb_win_release_qp(struct vb_qp *qp);
uint32_t vb_win_swap(struct vb_device *dev, struct ibv_pd *pd, struct ibv_mw **mw);

struct vb_mr {
    NDK_MR ndk;
    struct vb_obj obj;
    struct vb_pd *pd;
    bool fast;                      /* fast-register MR (map §1.3 option C) */
    ULONG max_pages;
    bool remote;
    /* A fast-register MR's stable tokens (§2.6: valid from NdkInitializeFastRegisterMr on): the
     * keys of a placeholder registration; SGEs carrying its lkey are rewritten to the current
     * registration (tok_lkey, tok_delta: address shift of a label base; token.c). */
    struct ibv_mr *ph;
    struct ibv_mw *ph_mw;           /* unbound window whose rkey is the remote token until the first
                                     * fast register, where the device has MWs (rxe gives a rights-less
                                     * MR rkey 0) */
    struct vb_win ph_win;           /* ph_mw's entry (win.c) */
    struct ndk_list tok_link;       /* dev->tok (dev->tok_lock) */
    uint32_t tok_lkey;
    int64_t tok_delta;
    /* Job of lock: mr (the registration; replaced by fast registers) and nmw. */
    pthread_mutex_t lock;
    struct ibv_mr *mr;
    int nmw;                        /* windows bound over mr */
    int access;                     /* mr's verbs access bits */
    /* A remote fast register where the device has type-2 windows (rxe, mlx5): ph_mw is bound
     * over mr and its key is the remote token, so a peer's Send with Invalidate ends it (map §1.3
     * option A). mr stays until the window is known unbound: the next fast register or close. */
    bool mw_backed;
    uint32_t mw_rkey;               /* ph_mw's key of the current (or last) bind */
    struct ibv_mr *stale[VB_MR_STALE];   /* earlier registrations whose window was still bound */
    int nstale;
};
#define to_vb_mr(p) ndk_container_of((p), struct vb_mr, ndk)
NTSTATUS vb_mr_create(NDK_PD *p, BOOLEAN fast, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MR **out);
int vb_mr_fast_register(struct vb_mr *mr, uintptr_t va, size_t len, uint64_t iova, int64_t delta, ULONG flags, bool mw);
void vb_mr_bind_wr(struct vb_mr *mr, uint64_t iova, size_t len, ULONG flags, struct ibv_send_wr *t);
void vb_mr_bound(struct vb_mr *mr, struct vb_qp *qp, uint32_t rkey);
int vb_mr_invalidate(struct vb_mr *mr, uint32_t *rkey);
int vb_mr_access(ULONG ndk_flags, bool iwarp, bool mw);

struct vb_mw {
    NDK_MW ndk;
    struct vb_obj obj;
    struct vb_pd *pd;
    struct ibv_mw *mw;              /* NULL: emulated window (a device without MWs, mw.c) */
    /* Job of lock: emu, the emulated window's registration of the bound range. */
    pthread_mutex_t lock;
    struct ibv_mr *emu;
    struct ibv_mr *ph;              /* emulated window: placeholder whose rkey is the unbound token */
    atomic_uint rkey;               /* the token of the current (or pending) binding */
    struct vb_mr *bound;            /* MR under the binding; taken as antecedent (§1.7) */
    struct vb_win win;              /* mw's entry (win.c), where mw is a device window */
};
#define to_vb_mw(p) ndk_container_of((p), struct vb_mw, ndk)
NTSTATUS vb_mw_create(NDK_PD *p, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MW **out);
int vb_mw_emu_bind(struct vb_mw *mw, void *va, size_t len, int access);
void vb_mw_emu_invalidate(struct vb_mw *mw);
void vb_mw_sv(struct vb_mw *mw, uint64_t len);

/* ---- connection management (connector.c, listener.c, endpoint.c, cm.c) ---- */
enum vb_cstate {
    VB_C_IDLE,          /* created, nothing asked */
    VB_C_RESOLVING,     /* NdkConnect: address and route resolution */
    VB_C_CONNECTING,    /* rdma_connect sent */
    VB_C_CONNECTED,     /* NdkConnect done, NdkCompleteConnect due */
    VB_C_REQUEST,       /* passive: a CONNECT_REQUEST handed to the consumer */
    VB_C_ACCEPTING,     /* rdma_accept sent */
    VB_C_ESTABLISHED,
    VB_C_DISCONNECTING, /* our rdma_disconnect sent, waiting for DISCONNECTED */
    VB_C_DISCONNECTED,
    VB_C_FAILED,
    VB_C_NSTATES
};
struct vb_listener;
struct vb_sep;
struct vb_connector {
    NDK_CONNECTOR ndk;
    struct vb_obj obj;
    struct ndk_list link;           /* dev->connectors (dev->lock) */
    /* Job of dev->lock: state, id, qp, the pending request and the disconnect callback. */
    enum vb_cstate state;
    struct rdma_cm_id *id;
    struct vb_qp *qp;
    bool passive;
    struct vb_call req;             /* the one pending Connect/CompleteConnect/Accept/Disconnect */
    bool req_pending;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_ex;
    NDK_FN_DISCONNECT_EVENT_CALLBACK disc;
    void *disc_ctx;
    struct vb_work disc_work;
    uint32_t disc_reason;
    bool peer_disconnected;
    /* What NdkConnect/NdkAccept asked for, and what the peer sent (map §1.7). */
    ULONG ird, ord;
    bool asked;                     /* ird/ord hold our own NdkConnect / NdkAccept request */
    uint8_t my_pd[VB_MAX_PD_LEN];
    uint8_t my_pd_len;
    uint8_t peer_pd[VB_MAX_PD_LEN];
    ULONG peer_pd_len;
    ULONG peer_ird, peer_ord;       /* peer's responder resources / initiator depth */
    bool have_peer_data;
    SOCKADDR_INET dst;
    struct vb_work start_work;
};
#define to_vb_connector(p) ndk_container_of((p), struct vb_connector, ndk)
NTSTATUS vb_connector_create(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_CONNECTOR **out);
struct vb_connector *vb_connector_new_passive(struct vb_adapter *ad, struct rdma_cm_id *id, const struct rdma_cm_event *ev);
void vb_connector_set_request_data(struct vb_connector *c, const struct rdma_cm_event *ev, const uint8_t *pd,
                                   ULONG pd_len);
void vb_connector_on_event(struct vb_connector *c, const struct rdma_cm_event *ev, const uint8_t *pd, ULONG pd_len);
const char *vb_cstate_name(enum vb_cstate s);

struct vb_listener {
    NDK_LISTENER ndk;
    struct vb_obj obj;
    NDK_FN_CONNECT_EVENT_CALLBACK connect_event;
    void *connect_ctx;
    /* Job of dev->lock: ids, paused, listening. */
    struct rdma_cm_id *ids[VB_MAX_LISTEN_IDS];
    int nids;
    bool paused, listening;
    SOCKADDR_INET addr;
    struct ndk_list link;           /* dev->listeners while listening (dev->lock) */
};
#define to_vb_listener(p) ndk_container_of((p), struct vb_listener, ndk)
NTSTATUS vb_listener_create(NDK_ADAPTER *a, NDK_FN_CONNECT_EVENT_CALLBACK fn, PVOID fctx, NDK_FN_CREATE_COMPLETION cb,
                            PVOID ctx, NDK_LISTENER **out);
void vb_listener_on_request(struct vb_listener *l, struct rdma_cm_id *id, const struct rdma_cm_event *ev,
                            const uint8_t *pd, ULONG pd_len);

struct vb_sep {
    NDK_SHARED_ENDPOINT ndk;
    struct vb_obj obj;
    struct rdma_cm_id *id;          /* placeholder REUSEADDR id holding address:port */
    SOCKADDR_INET addr;
    struct ndk_list link;           /* dev->seps (dev->lock) */
};
#define to_vb_sep(p) ndk_container_of((p), struct vb_sep, ndk)
NTSTATUS vb_sep_create(NDK_ADAPTER *a, CONST PSOCKADDR addr, ULONG len, NDK_FN_CREATE_COMPLETION cb, PVOID ctx,
                       NDK_SHARED_ENDPOINT **out);

/* cm.c: the rdma_cm side shared by connectors, listeners and shared endpoints. */
/* Drains the device's event channel (progress thread). */
void vb_cm_on_events(struct vb_device *dev);
int vb_cm_create_id(struct vb_device *dev, void *context, struct rdma_cm_id **out);
/* Destroys an id on the progress thread (the only reader of its events). */
void vb_cm_destroy_id(struct rdma_cm_id *id);
int vb_cm_bind(struct rdma_cm_id *id, const struct sockaddr *sa);
ULONG vb_sa_len(const struct sockaddr *sa);
int vb_sa_check(const struct sockaddr *sa, ULONG len);
bool vb_sa_is_wildcard(const struct sockaddr *sa);
NTSTATUS vb_sa_copy_out(const struct sockaddr *sa, PSOCKADDR out, ULONG *len);
/* Every rdma_cm id's context is the vb_obj of its owner (connector, listener, shared endpoint). */

#endif /* VB_VERBS_H */
