/*
 * iwarp.h - the iwarp provider's internal object model: a software RNIC over kernel TCP sockets
 * that speaks standard iWARP (MPA / DDP / RDMAP) on the wire. Included by every provider file;
 * includes the public NDK headers, src/common, iwarp_wire.h and mpa.h.
 *
 * Shape (NDKPI reference §1, §6; architecture.md):
 *
 *   struct iw_provider     driver context (one per loaded module): services, configuration
 *   struct iw_device       one per bound network interface = MiniportAdapterContext: limits,
 *                          capabilities, counters, endpoint table, progress engine, STag table
 *   struct iw_adapter      one NDK_ADAPTER instance (OpenNDKAdapterHandler); negotiated version
 *   struct iw_obj          base of every NDK object below the adapter: refcount, antecedents,
 *                          close completion (§5.1)
 *   iw_pd iw_cq iw_srq iw_mr iw_mw iw_qp iw_connector iw_listener iw_shared_endpoint
 *
 * Every object struct starts with its public NDK_xxx struct, then `struct iw_obj obj`. Private
 * state is found from the public pointer with container_of (the to_iw_xxx() helpers), never via
 * ->Dispatch, which the consumer may overwrite (§1.5).
 *
 * Conventions:
 *   - Internal functions return 0 or -errno; NTSTATUS only at the NDK boundary, through
 *     ndk_status_from_errno() (src/common/ndk_status.c, the one table).
 *   - No consumer callback is ever called with a provider lock held. Callbacks run either on the
 *     device's progress thread, or inline in a provider function after every lock was dropped
 *     (and then only where §0.4 allows it: never create/close completions inline).
 *   - Close completions always run on the progress thread (never inside the consumer's call), so
 *     a consumer holding its own lock around NdkCloseXxx cannot deadlock against itself.
 *   - Lock order (outermost first): dev->qps_lock (the walk of iw_qp_lookups_quiesce) ->
 *     cq->qps_lock (consumer-driven progress) -> the data path's dp->rx_owned / dp->tx_owned
 *     (datapath.h) -> dev->lock (CM) -> qp->lock -> qp->rq_gate -> srq->lock -> cq->lock ->
 *     dev->mem_lock -> dev->wq_lock. The adapter instance's and the
 *     instance list's locks (src/common/ndk_prov_adapter.h) and dev->timer_lock are leaves.
 *   - Names: a non-static function iw_<object>_* is defined in <object>.c: access, cm (cm.c,
 *     cm.h), connector, cq, listener, mem, obj, poll, post, progress, qp, rx, srq, tx, wq
 *     (with its entries, iw_wq_entry_*), crc32c / mpa / fpdu (the wire layer). Named otherwise,
 *     and where: the NDK entry points keep the NDK call's name in the object's file
 *     (iw_create_<object>; iw_open_adapter, iw_close_adapter, iw_build_lam, iw_release_lam in
 *     adapter.c; iw_query_extension is ndk_prov_obj's); adapter.c also holds the device (iw_device_*);
 *     endpoint.c holds endpoints (iw_ep_*) and socket addresses (iw_sa_*); log.c the loggers
 *     (iw_log, iw_dev_log, iw_prov_log). Engine-private functions are static and may carry a
 *     short prefix (tx_, rx_, post_); dp_ names only datapath.h's engine types.
 *     scripts/provider-deps.sh shows which file defines what each file uses.
 *
 * Files: provider.c (module entry, config) -> adapter.c (device, NDK_ADAPTER, OIDs) -> the
 * objects (pd.c cq.c srq.c mem.c qp.c connector.c listener.c shared_endpoint.c, obj.c below
 * them all). The connection manager (cm.c) runs the handshake and hands the socket to the QP
 * at ESTABLISHED; the QP (qp.c) owns its life cycle and runs the engines (tx.c, rx.c) from its
 * pollable; poll.c lets a busy-polling consumer run them. progress.c (epoll, work, timers) and
 * log.c sit below everything.
 */
#ifndef IWARP_H
#define IWARP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include <ndkpi.h>
#include <ndisndk.h>
#include <ndk/provider.h>

#include "lock.h"
#include "stag.h"

#include "ndk_list.h"
#include "ndk_status.h"
#include "ndk_prov_adapter.h"
#include "ndk_prov_entry.h"
#include "ndk_prov_pd.h"
#include "ndk_prov_oid.h"
#include "iwarp_wire.h"
#include "mpa.h"

#define IW_EXPORT __attribute__((visibility("default")))

/* ====================================================================================
 * Limits (NDK_ADAPTER_INFO / NDIS_NDK_CAPABILITIES). Software limits: memory bounds them, so
 * these are the sizes every create is checked against, chosen generously but finite.
 * ==================================================================================== */
#define IW_MAX_SGE               16u          /* initiator, receive and read SGEs per request */
#define IW_MAX_INLINE            256u         /* inline bytes per send / write */
#define IW_MAX_TRANSFER          (1u << 30)   /* bytes per request (DDP message: 32-bit length) */
#define IW_MAX_IRD               128u         /* same as siw */
#define IW_MAX_ORD               128u
#define IW_MAX_QP_DEPTH          32768u       /* receive and initiator queue depth */
#define IW_MAX_SRQ_DEPTH         32768u
#define IW_MAX_CQ_DEPTH          65536u
#define IW_MAX_REGISTRATION      ((SIZE_T)1 << 36)
#define IW_MAX_WINDOW            ((SIZE_T)1 << 36)
#define IW_FRMR_PAGE_COUNT       256u         /* advertised preferred FRMR size (>= 16) */
#define IW_MAX_FRMR_PAGES        65536u       /* NdkInitializeFastRegisterMr upper bound */
#define IW_LARGE_REQUEST         16384u
#define IW_MAX_PRIVATE_DATA      252u         /* 256 on the wire incl. the 4-byte MPA v2 block */
#define IW_MPA_MAX_PD_WIRE       (IW_MAX_PRIVATE_DATA + IW_MPA_V2_LEN)   /* 256 */
#define IW_MAX_QP_COUNT          65536u
#define IW_MAX_CQ_COUNT          65536u
#define IW_MAX_PD_COUNT          65536u
#define IW_MAX_MR_COUNT          (1u << 20)
#define IW_MAX_MW_COUNT          (1u << 20)
#define IW_MAX_SRQ_COUNT         4096u

/* Version negotiation (§2.2): per supported major, the highest minor. */
#define IW_VERSION_1_MINOR_MAX   2
#define IW_VERSION_2_MINOR_MAX   1

struct iw_provider;
struct iw_device;
struct iw_rx_bufs;
struct dp_tx_batch;
struct iw_adapter;
struct iw_obj;
struct iw_qp;
struct iw_cq;
struct iw_srq;
struct iw_connector;
struct iw_listener;
struct iw_shared_endpoint;
struct iw_endpoint;
struct iw_dp;
struct dp_cq_ref;
struct iw_wire;
struct iw_wire_prov;

/* An intrusive hash chain (the endpoint and 4-tuple indexes of struct iw_device). A zeroed
 * head is an empty chain and a zeroed node is on none, so the tables need no initialization
 * in a calloc'ed device. Callers hold the lock of the table (dev->lock for both). */
struct iw_hnode {
    struct iw_hnode *next, **pprev;
};
static inline bool iw_hnode_linked(const struct iw_hnode *n)
{
    return n->pprev != NULL;
}
static inline void iw_hnode_add(struct iw_hnode **head, struct iw_hnode *n)
{
    n->next = *head;
    if (n->next)
        n->next->pprev = &n->next;
    *head = n;
    n->pprev = head;
}
static inline void iw_hnode_del(struct iw_hnode *n)
{
    if (!n->pprev)
        return;
    *n->pprev = n->next;
    if (n->next)
        n->next->pprev = n->pprev;
    n->next = NULL;
    n->pprev = NULL;
}
#define IW_EP_BUCKETS   4096u         /* endpoints by local port */
#define IW_CONN_BUCKETS 16384u        /* connectors by 4-tuple */

/* ====================================================================================
 * Progress engine (progress.c): one thread per device owning an epoll set, a work queue and
 * a timer heap. Handlers, work and timer callbacks run on that thread only.
 * ==================================================================================== */

/* Something registered with the device's epoll set. handler runs on the progress thread with no
 * lock held; events are EPOLL* bits. The owner guarantees the pollable outlives its
 * registration: it is only unregistered (and its fd closed) on the progress thread. */
struct iw_pollable {
    int fd;
    uint32_t events;                  /* currently registered EPOLL* mask */
    void (*handler)(struct iw_pollable *p, uint32_t events);
    /* For a socket whose reads it lends to the progress thread's ring (iw_progress_lend), both
     * on the progress thread with no lock held. ring_arm: may a receive be queued now? true
     * makes that receive the socket's only reader until ring_done. ring_done: what it brought
     * (res: bytes, 0 at the peer's FIN, or -errno, -ECANCELED when reclaimed first); returns 0
     * or the connection's error, which the pollable acts on itself unless reclaiming. */
    bool (*ring_arm)(struct iw_pollable *p);
    int (*ring_done)(struct iw_pollable *p, const uint8_t *buf, int res, bool reclaiming);
};

/* A deferred job for the progress thread. Embedded in the object it acts on; the queuer holds a
 * reference on that object until fn has run (fn drops it). */
struct iw_work {
    struct ndk_list link;
    void (*fn)(struct iw_work *w);
    atomic_bool queued;               /* on dev->work or dev->local_work (the exchange decides) */
};

/* A deadline with a callback, kept in the device's min-heap (O(log n) arm / cancel / fire, so
 * tens of thousands of connections' timers cost little). fn runs on the progress thread with no
 * lock held, at or after the deadline. A fire can race an arm or cancel made by another thread
 * (the timer leaves the heap just before fn runs), so owners keep their own deadline under
 * their own lock and fn re-checks it. Owners hold a reference on their object while the timer
 * is armed: iw_progress_timer_arm returns true when it armed an idle timer (take one),
 * iw_progress_timer_cancel returns true when it disarmed an armed one (drop it), and fn drops
 * the one of the arming that fired. */
struct iw_timer {
    uint64_t deadline_ms;             /* dev->timer_lock */
    uint32_t slot;                    /* index in the heap, IW_TIMER_IDLE when not armed */
    void (*fn)(struct iw_timer *t, uint64_t now);
};
#define IW_TIMER_IDLE UINT32_MAX

/* May be called from any thread, any lock held except dev->wq_lock. Returns false when the work
 * was already queued (then nothing changes). Never blocks. */
bool iw_progress_queue(struct iw_device *dev, struct iw_work *w);
/* Registers / re-arms / removes a pollable. Any thread; never blocks. The caller serializes
 * the calls for one pollable (its owner's lock). */
int iw_progress_add(struct iw_device *dev, struct iw_pollable *p, uint32_t events);
int iw_progress_mod(struct iw_device *dev, struct iw_pollable *p, uint32_t events);
void iw_progress_del(struct iw_device *dev, struct iw_pollable *p);
/* iw_progress_mod for a pollable whose empty mask means out of the epoll set (EPOLL_CTL_DEL),
 * and back in (EPOLL_CTL_ADD) with the next mask that is not empty. Same context. */
int iw_progress_watch(struct iw_device *dev, struct iw_pollable *p, uint32_t events);
/* Reserves the timer's room in the heap, so that arming never allocates: at the owner's
 * creation (-ENOMEM), released by fini (which cancels). Any thread; no lock held. */
int iw_progress_timer_init(struct iw_device *dev, struct iw_timer *t, void (*fn)(struct iw_timer *t, uint64_t now));
void iw_progress_timer_fini(struct iw_device *dev, struct iw_timer *t);
/* Arms or moves t to deadline_ms (iw_now_ms() clock); wakes the progress thread when t became
 * the earliest. Any thread, any lock held except dev->timer_lock / dev->wq_lock; never blocks. */
bool iw_progress_timer_arm(struct iw_device *dev, struct iw_timer *t, uint64_t deadline_ms);
bool iw_progress_timer_cancel(struct iw_device *dev, struct iw_timer *t);
/* The ring wait (progress.c): while a socket's reads are lent to it, the progress thread
 * sleeps in one io_uring_enter that waits for the epoll set and receives that socket's next
 * bytes, where epoll_wait would wake it only to call recv (one system call per message, as a
 * blocking recv). At most one pollable at a time; -EBUSY, or -EOPNOTSUPP without a ring (no
 * liburing at build time, io_uring unavailable, or config progress_ring = 0). The pollable
 * must not be registered for EPOLLIN meanwhile. reclaim cancels a queued receive, hands what
 * it brought to ring_done (reclaiming) and returns its result; afterwards nothing is lent.
 * Progress thread only; no lock held. */
int iw_progress_lend(struct iw_device *dev, struct iw_pollable *p);
int iw_progress_reclaim(struct iw_device *dev, struct iw_pollable *p);
#define IW_RING_BUF 8192u              /* a ring receive's size: the RX staging buffer's */
/* CLOCK_MONOTONIC in ms and ns (vDSO: tens of ns, cheap enough for every short CQ poll). */
static inline uint64_t iw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static inline uint64_t iw_now_ms(void)
{
    return iw_now_ns() / 1000000u;
}

int iw_progress_start(struct iw_device *dev);   /* may block; called from Initialize */
void iw_progress_stop(struct iw_device *dev);   /* may block; called from Halt */

/* ====================================================================================
 * Provider and device
 * ==================================================================================== */

struct iw_config {
    bool     crc;                     /* request MPA CRC as initiator / in our Reply ("crc") */
    bool     p2p;                     /* initiator asks for peer-to-peer mode + RTR ("p2p") */
    uint8_t  mpa_rev;                 /* initiator's MPA revision, 1 or 2 ("mpa_rev") */
    uint32_t connect_timeout_ms;      /* TCP connect + MPA Reply wait ("connect_timeout_ms") */
    uint32_t mpa_request_timeout_ms;  /* responder waits for the Request ("mpa_request_timeout_ms") */
    uint32_t accept_timeout_ms;       /* Accept waits for the RTR ("accept_timeout_ms") */
    uint32_t disconnect_timeout_ms;   /* NdkDisconnect waits for the peer ("disconnect_timeout_ms") */
    /* Responder without P2P: RFC 5044 §7.1.2 holds our first FPDU until the initiator's arrives;
     * after this long we send anyway, as siw does, so ULPs whose passive side speaks first do
     * not deadlock ("first_fpdu_grace_ms"; 0 = wait for the initiator forever, strictly). */
    uint32_t first_fpdu_grace_ms;
    /* Initiator without P2P: hold our first FPDU this long after the Reply, or until the
     * responder's first FPDU shows it is reading. Linux siw 6.1 as a responder can leave an FPDU
     * that arrives right behind its Reply unread (docs/providers.md, "Interoperating with siw")
     * ("first_fpdu_hold_ms"; 0 = send at once, strictly as RFC 5044 allows). */
    uint32_t first_fpdu_hold_ms;
    /* Consumer-driven progress (poll.c): a busy-polling consumer runs its QPs' engines itself
     * ("poll_progress", 0 = never), and a QP nobody polled for "poll_idle_ms" goes back to the
     * progress thread. */
    bool     poll_progress;
    uint32_t poll_idle_ms;
    /* The progress thread waits in io_uring for a connection's next bytes ("progress_ring",
     * 0 = epoll_wait only; progress.c). */
    bool     progress_ring;
};

/* One per NdkProviderEntry call (the DriverContext): each runtime in the process that loads the
 * module gets its own, so no runtime state lives in a module global (provider.c). */
struct iw_provider {
    struct ndk_prov_driver drv;       /* first: services, driver handle (ndk_prov_entry.h) */
    struct iw_config cfg;
    struct ndk_list reg_link;         /* process-wide registry of live instances (log.c) */
    unsigned log_users;               /* context-free loggers using this instance (registry lock) */
    /* Capture and wire faults (wire.h): NULL unless iwarp.capture or iwarp.fault is set. */
    struct iw_wire_prov *wire;
};
/* Logging through the runtime (Services->Log) of the right instance (log.c). Never blocks for
 * long; any context. iw_dev_log / iw_prov_log name the instance; the context-free iw_log
 * (iw_err ...) uses the progress thread's device, else the oldest live instance. Lines carry no
 * prefix of ours: the runtime names the provider. */
void iw_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void iw_dev_log(const struct iw_device *dev, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void iw_prov_log(struct iw_provider *prov, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The instance registry behind context-free logging: provider.c adds each instance at entry
 * and removes it at unload (waiting out loggers using it). The progress thread binds itself to
 * its device. */
void iw_log_register(struct iw_provider *prov);
void iw_log_unregister(struct iw_provider *prov);
void iw_log_bind_thread(const struct iw_device *dev);
#define iw_err(...)   iw_log(NDK_LOG_ERROR, __VA_ARGS__)
#define iw_warn(...)  iw_log(NDK_LOG_WARNING, __VA_ARGS__)
#define iw_info(...)  iw_log(NDK_LOG_INFO, __VA_ARGS__)
#define iw_dbg(...)   iw_log(NDK_LOG_DEBUG, __VA_ARGS__)
#define iw_derr(dev, ...)   iw_dev_log((dev), NDK_LOG_ERROR, __VA_ARGS__)
#define iw_dwarn(dev, ...)  iw_dev_log((dev), NDK_LOG_WARNING, __VA_ARGS__)
#define iw_dinfo(dev, ...)  iw_dev_log((dev), NDK_LOG_INFO, __VA_ARGS__)
#define iw_ddbg(dev, ...)   iw_dev_log((dev), NDK_LOG_DEBUG, __VA_ARGS__)

/* Performance counters (§6.6), as atomics so any thread may bump them lock-free. The ten NDK
 * counters are laid out as NDIS_NDK_PERFORMANCE_COUNTERS (30 words), so that they can live in
 * the adapter's system-view record (sysview.c: every process's record of the adapter is summed
 * for OID_NDK_STATISTICS); dev->ndk points there, or at counters.ndk below when the runtime has
 * no system view. IW_COUNT goes through that pointer: one relaxed atomic add. The socket calls
 * the tests count are the data path's own, per QP (datapath.h: dp_rx.reads, dp_tx.writes). */
#define IW_NDK_COUNTER_WORDS                                                                          \
    _Atomic uint64_t connect, accept, connect_failure, connection_error, active_connection;        \
    _Atomic uint64_t reserved_[20];                                                                 \
    _Atomic uint64_t cq_error, rdma_in_octets, rdma_out_octets, rdma_in_frames, rdma_out_frames
struct iw_ndk_counters {
    IW_NDK_COUNTER_WORDS;
};
struct iw_counters {
    union {                           /* the same words, by either name */
        struct iw_ndk_counters ndk;
        struct { IW_NDK_COUNTER_WORDS; };
    };
};
_Static_assert(sizeof(struct iw_ndk_counters) == NDK_SV_COUNTERS * sizeof(uint64_t) &&
                   sizeof(struct iw_ndk_counters) == sizeof(NDIS_NDK_PERFORMANCE_COUNTERS) &&
                   offsetof(struct iw_ndk_counters, active_connection) ==
                       offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, ActiveConnection) &&
                   offsetof(struct iw_ndk_counters, cq_error) == offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, CQError) &&
                   offsetof(struct iw_ndk_counters, rdma_out_frames) ==
                       offsetof(NDIS_NDK_PERFORMANCE_COUNTERS, RDMAOutFrames) &&
                   sizeof(_Atomic uint64_t) == sizeof(uint64_t),
               "iw_ndk_counters is NDIS_NDK_PERFORMANCE_COUNTERS");
/* An NDK counter (dev->ndk, any thread). */
#define IW_COUNT(dev, field, n) atomic_fetch_add_explicit(&(dev)->ndk->field, (uint64_t)(n), memory_order_relaxed)

/* One bound network interface (MiniportAdapterContext). */
struct iw_device {
    struct iw_provider *prov;
    NDIS_HANDLE miniport_handle;      /* the runtime's handle for NetPnPEvent / AdapterHasAddress */
    ULONG ifindex;
    char ifname[NDK_PROVIDER_IFNAME_MAX];
    ULONG mtu;
    bool is_loopback;

    NDK_ADAPTER_INFO info;            /* limits, at the highest version; per instance Version differs */
    NDIS_NDK_CAPABILITIES caps;       /* caps.NdkInfo = &info */
    atomic_bool enabled;              /* OID_NDK_SET_STATE; open fails while false */
    struct iw_work pnp_work;          /* raises NetPnPEvent from the progress thread (§6.5) */
    atomic_int pnp_pending_event;     /* last requested NetEvent, 0 = none */
    struct iw_counters counters;
    struct iw_ndk_counters *ndk;      /* the NDK counters' words: the adapter's system-view record
                                       * or counters.ndk (sysview.c); set before any object */
    struct ndk_sv_rec *sv;            /* the adapter's record (the runtime's), NULL without */

    /* Object-count caps (NDIS_NDK_CAPABILITIES); creates fail with INSUFFICIENT_RESOURCES. */
    atomic_uint nqp, ncq, npd, nmr, nmw, nsrq;

    /* The CM lock. Job: the endpoint table, every listener's and connector's CM state and CM
     * socket I/O. Held only briefly, never across a consumer callback. */
    pthread_mutex_t lock;
    struct ndk_list endpoints;        /* struct iw_endpoint (§5.11.5), for the OID listing */
    struct ndk_list connectors;       /* every live iw_connector (OID_NDK_CONNECTIONS) */
    /* Indexes under dev->lock, so a connect or accept costs the same with 20,000 connections
     * as with one (issue 14): endpoints by local port (a conflict shares the port, §5.11.5),
     * connectors not CLOSED by their 4-tuple (the duplicate check of NdkConnect). */
    struct iw_hnode *ep_hash[IW_EP_BUCKETS];
    struct iw_hnode *conn_hash[IW_CONN_BUCKETS];
    struct ndk_list listeners;        /* every listening iw_listener */
    struct ndk_prov_adapter_list adapters;   /* open iw_adapter instances (its own leaf lock) */

    /* STag table (stag.c, used by mem.c). Job of mem_lock: the table's writers, every MR's / MW's
     * key (struct iw_mem_key, which lookups read without it: key.seq), and the lists
     * of retired MRs and MWs. */
    pthread_mutex_t mem_lock;
    struct iw_stag_table stags;
    /* Closed MRs and MWs, kept in memory until no lookup can still hold them (mem.c). */
    struct ndk_list mr_retired, mw_retired;
    struct iw_work mem_reclaim_work;
    /* Every QP of the device, so that a walk can wait out the lookups running under their locks
     * (iw_qp_lookups_quiesce). Job of qps_lock: the list; the walk takes QP locks under it. */
    pthread_mutex_t qps_lock;
    struct ndk_list qps;

    /* Progress engine (progress.c). Job of wq_lock: the work list. */
    pthread_t thread;
    /* The progress thread's iw_thread_self(), stored by that thread at start and cleared (0: no
     * thread has that value) before it ends: pthread_create may store `thread` only after the
     * new thread runs, so reading `thread` there would race. */
    _Atomic(uintptr_t) progress_self;
    /* The RX engine's and the TX engine's buffers for the progress thread (rx.c, tx.c): other
     * threads use thread-locals, each a __tls_get_addr call in a dlopen'ed provider. Allocated
     * by the progress thread at its first use, only ever touched by it, freed at the destroy. */
    struct iw_rx_bufs *prog_rx_bufs;
    struct dp_tx_batch *prog_tx_batch;
    bool thread_running;
    int epfd, evfd;
    atomic_bool stopping;
    bool no_poll_progress;            /* config poll_progress = 0 (set before any CQ exists) */
    bool no_progress_ring;            /* config progress_ring = 0 (set before the thread starts) */
    struct iw_ring *ring;             /* the ring wait (progress.c), NULL without; progress thread */
    /* The QP whose reads are lent to the ring, and how many epoll wake-ups for other QPs' data
     * came since it last received (qp.c). Progress thread only. */
    struct iw_qp *ring_qp;
    uint32_t ring_misses;
    /* A QP nobody polled for this long goes back to the progress thread (qp.c), so Read Requests
     * and the peer's data never wait on a consumer that stopped polling without arming. */
    uint32_t poll_idle_ms;
    pthread_mutex_t wq_lock;
    struct ndk_list work;
    /* Items on work, written under wq_lock: the progress thread reads it without the lock to
     * skip an empty list (another thread's queueing also writes evfd, so a stale 0 only defers
     * the item to the wake-up that follows). */
    atomic_uint nwork;
    /* Work the progress thread queued itself (a CQ notification from its own engines): no lock,
     * nothing else touches it. */
    struct ndk_list local_work;
    /* Timers (progress.c). Job of timer_lock: the heap and every timer's deadline and slot.
     * A leaf lock. */
    pthread_mutex_t timer_lock;
    struct iw_timer **timer_heap;
    uint32_t timer_count, timer_cap, timer_reserved;
    /* The heap's earliest deadline (0: none), written under timer_lock whenever the heap
     * changes: the progress thread reads it without the lock to skip a pass with nothing due
     * (another thread that arms an earlier timer wakes it, as before). */
    _Atomic uint64_t timer_next;
};

#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
#define IW_THREAD_POINTER 1
#endif
#endif
/* A value no other live thread has: the thread pointer where the compiler reads it (one
 * instruction; a pthread_self() is a call through the PLT, and a call in a small function makes
 * it save registers), else pthread_self(). Any thread. */
static inline uintptr_t iw_thread_self(void)
{
#ifdef IW_THREAD_POINTER
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
}

/* TRUE when the caller is dev's progress thread; asked at every CQ poll. Not a thread-local: the
 * provider is dlopen'ed, where reading one costs a __tls_get_addr call, and glibc's static TLS
 * reserve is too small for the initial-exec model (dlopen fails). Relaxed: the progress thread
 * reads its own store; any other thread sees 0 or its own value, never the progress thread's.
 * Any thread. */
static inline bool iw_progress_on_thread(const struct iw_device *dev)
{
    return iw_thread_self() == atomic_load_explicit(&dev->progress_self, memory_order_relaxed);
}

/* The runtime's view: Initialize / Halt / OID (provider.c, adapter.c). */
NDIS_STATUS iw_device_create(struct iw_provider *prov, NDIS_HANDLE handle, const NDK_PROVIDER_INTERFACE *ifc,
                             struct iw_device **out);
/* The HaltHandler, InterfaceChangeHandler and OidRequestHandler (ctx: the struct iw_device). */
VOID iw_device_destroy(NDIS_HANDLE ctx);
VOID iw_device_update(NDIS_HANDLE ctx, CONST NDK_PROVIDER_INTERFACE *ifc);
NDIS_STATUS iw_device_oid(NDIS_HANDLE ctx, NDK_OID_REQUEST *req);

/* ====================================================================================
 * Adapter instance
 * ==================================================================================== */

struct iw_adapter {
    struct ndk_prov_adapter base;     /* first: base.ndk is handed to the consumer */
    struct iw_device *dev;
};

NDIS_STATUS iw_open_adapter(NDIS_HANDLE ctx, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS params, NDK_ADAPTER **out);
void iw_close_adapter(NDIS_HANDLE ctx, NDK_ADAPTER *adapter);
/* The instance's NDKPI version has RDMA_READ_LOCAL_INVALIDATE (1.2+). Any thread, no lock (the
 * version is fixed at open). Inline: the data path, built without adapter.c, asks it too. */
static inline bool iw_adapter_read_local_invalidate(const struct iw_adapter *ad)
{
    return !ad || ad->base.version.Major > 1 || ad->base.version.Minor >= 2;
}

static inline struct iw_adapter *to_iw_adapter(NDK_ADAPTER *a)
{
    return ndk_container_of(a, struct iw_adapter, base.ndk);
}

/* ====================================================================================
 * Object base (obj.c over src/common/ndk_prov_obj: §5.1 lifetime and close ordering; the rules
 * are stated there). The iwarp part adds the type, the device, the progress-thread work item
 * that runs the finish, and an id for logs. A close that drops the last reference finishes
 * inline and returns STATUS_SUCCESS (nothing here must be destroyed on the progress thread).
 * ==================================================================================== */

enum iw_obj_type {
    IW_OBJ_PD = NdkObjectTypePd,
    IW_OBJ_CQ = NdkObjectTypeCq,
    IW_OBJ_SRQ = NdkObjectTypeSrq,
    IW_OBJ_QP = NdkObjectTypeQp,
    IW_OBJ_MR = NdkObjectTypeMr,
    IW_OBJ_MW = NdkObjectTypeMw,
    IW_OBJ_CONNECTOR = NdkObjectTypeConnector,
    IW_OBJ_LISTENER = NdkObjectTypeListener,
    IW_OBJ_SHARED_ENDPOINT = NdkObjectTypeSharedEndpoint,
};

struct iw_obj_ops {
    const char *name;
    /* Close side effects that must happen at once (§5.1 rule 3: flush, stop accepting, abort the
     * connection). Consumer's thread, no lock held; must not call consumer callbacks inline. */
    void (*close_start)(struct iw_obj *o);
    /* Optional. Runs after the last reference is gone and BEFORE the close completion: flushes
     * whatever requests are still queued so that they complete first (§5.1). Any thread; no
     * lock held; antecedents are still alive. */
    void (*quiesce)(struct iw_obj *o);
    /* Frees type-specific resources after the last reference. Any thread; no lock held. */
    void (*destroy)(struct iw_obj *o);
};

struct iw_obj {
    struct ndk_prov_obj base;         /* refs, closing, close completion, antecedents */
    const struct iw_obj_ops *ops;
    enum iw_obj_type type;
    struct iw_adapter *adapter;
    struct iw_device *dev;
    bool handed_out;                  /* FALSE for connectors not yet given to the consumer */
    struct iw_work close_work;        /* runs the finish on the progress thread */
    uint32_t id;                      /* for logs */
    /* Its system-view record (sysview.c), from iw_obj_init until after ops->destroy: never
     * NULL. Counters are written by whoever the object's file names; the descriptive fields
     * only between ndk_sv_begin/ndk_sv_end, through iw_sv_desc, under the object's lock. */
    struct ndk_sv_rec *sv;
    uint8_t sv_kind;                  /* enum iw_sv_kind: who frees the record */
};

/* ====================================================================================
 * The system view (sysview.c; ndk/sysview.h, ndk-iwarp(7) "System view"): a record per object
 * and the adapter's NDK counters, published through the runtime's SysviewAlloc / SysviewFree /
 * SysviewAdapter. Never an STag, a token, a buffer address or data.
 * ==================================================================================== */
enum iw_sv_kind { IW_SV_RUNTIME, IW_SV_PRIVATE, IW_SV_SINK };
/* Points dev->ndk at the adapter record's counters (and flags them as ours), or at the
 * device's own words with a runtime that has no system view. Runtime's thread, at bind. */
void iw_sv_device_init(struct iw_device *dev);
/* A zeroed record for an object of type: the runtime's, else private memory, else (out of
 * memory) a shared sink whose counters anyone may bump and whose description nobody writes;
 * never NULL. Any thread, at create (the runtime takes a lock briefly). */
struct ndk_sv_rec *iw_sv_alloc(struct iw_device *dev, enum iw_obj_type type, uint8_t *kind);
void iw_sv_free(struct iw_device *dev, struct ndk_sv_rec *r, uint8_t kind);
/* The record whose descriptive fields o may rewrite: NULL for the sink (the ndk_sv_* helpers
 * and the setters below take NULL). Any thread. */
static inline struct ndk_sv_rec *iw_sv_desc(const struct iw_obj *o)
{
    return o->sv_kind == IW_SV_SINK ? NULL : o->sv;
}
/* The record id of an object (0 for none). */
static inline uint64_t iw_sv_id(const struct iw_obj *o)
{
    return o ? o->sv->id : 0;
}
/* Descriptive setters: call between ndk_sv_begin and ndk_sv_end (r may be NULL). */
void iw_sv_set_state(char dst[16], const char *name);
void iw_sv_set_addr(struct ndk_sv_addr *dst, const SOCKADDR_INET *a);
/* CLOCK_MONOTONIC_COARSE in ns: the post time of a request (a vDSO read, no system call). */
static inline uint64_t iw_sv_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The hooks of every iwarp object (obj.c), named by every adapter instance. */
extern const struct ndk_prov_obj_hooks iw_obj_hooks;

/* Initializes the base and the public header (Version = adapter's, ObjectType, zeroed
 * NdkReserved, Dispatch). Counts the object on the adapter. refs starts at 1 (the consumer). */
void iw_obj_init(struct iw_obj *o, const struct iw_obj_ops *ops, enum iw_obj_type type, struct iw_adapter *ad,
                 NDK_OBJECT_HEADER *hdr, const void *dispatch);
/* iw_obj_get, _put, _tryget, _set_ante, _ante, _close, _abort_create, _closing: ndk_prov_obj's
 * (same contexts; the provider's work-queue lock is dev->wq_lock). */
NDK_PROV_OBJ_TYPED(iw_obj, struct iw_obj)
/* No extension is offered. The RSS extension (ndkrss.h) would name the processors receive work
 * is steered to; the progress threads run wherever the scheduler puts them, so there are none to
 * name, and the query gets STATUS_NOT_SUPPORTED (docs/status.md). */
#define iw_query_extension ndk_prov_obj_query_extension

/* ====================================================================================
 * PD
 * ==================================================================================== */
struct iw_pd {
    NDK_PD ndk;
    struct iw_obj obj;
};
static inline struct iw_pd *to_iw_pd(NDK_PD *p) { return ndk_container_of(p, struct iw_pd, ndk); }
/* The adapter kind's pd_new. ndk_prov_pd_close finds the base right after the public handle; the
 * data path's privileged STag is the PD's token. */
int iw_pd_new(struct ndk_prov_adapter *ad, NDK_PD **out);
_Static_assert(offsetof(struct iw_pd, obj) == sizeof(struct ndk_prov_handle) && offsetof(struct iw_obj, base) == 0,
               "iw_pd layout");
_Static_assert(IW_PRIVILEGED_STAG == NDK_PROV_PD_PRIVILEGED_TOKEN, "privileged token");

/* ====================================================================================
 * CQ (cq.c)
 * ==================================================================================== */
/* The arm's kind, numbered by §5.7 rule 4's rank (the broadest arm wins: ANY > SOLICITED >
 * ERRORS), so that merging two arms keeps the larger. */
enum iw_cq_arm {
    IW_CQ_ARM_NONE = 0,
    IW_CQ_ARM_ERRORS = 1,
    IW_CQ_ARM_SOLICITED = 2,
    IW_CQ_ARM_ANY = 3,
};
#define IW_CQ_ARM_MASK 3u
#define IW_CQ_ARM_AT_SHIFT 2

struct iw_cq {
    NDK_CQ ndk;
    struct iw_obj obj;
    /* Pushes take no lock (issue 39): a push claims the next position of the stream (a CAS
     * on prod), waits for its turn (pushes equal to its position: the pushes before it are
     * published), checks for room, writes its slot and the per-push marks, and publishes by
     * storing pushes = position + 1. The turns order the pushers like a ticket lock; the ring
     * and its depth hold still meanwhile, a resize closing the gate (IW_CQ_GATE) and waiting
     * for the turns it let in. Arming and firing take no lock either (armw). Job of lock: the
     * error latch and its one notification, and resizing; a push takes it only when the CQ is
     * overrun or the gate is closed. Never held across a callback. The consumer's side
     * (pops, drained) takes no lock: NdkGetCqResults(Ex) and NdkArmCq are serialized by the
     * consumer (§5.4), so one thread at a time pops, and it meets the producers only through
     * pushes and pops (release / acquire). It holds popping while it takes: a resize (which
     * §5.4 does not serialize with the polls) and a second poller (a consumer breaking §5.4)
     * wait for it rather than tear the ring. Positions are 64-bit: they never wrap. */
    pthread_mutex_t lock;
    NDK_RESULT_EX *ring;              /* mask + 1 slots (a power of two); position p in p & mask */
    uint32_t mask;
    uint32_t depth;                   /* at most depth entries queued (§3.4) */
    _Atomic uint64_t prod;            /* positions claimed << IW_CQ_POS_SHIFT | IW_CQ_GATE | IW_CQ_DEAD */
    /* The arm and §5.7 rule 2's "completions since the last notification" in one word:
     * notified_at << IW_CQ_ARM_AT_SHIFT | enum iw_cq_arm, notified_at being pushes when the last
     * notification was queued (positions in the stream of pushes: the consumer draining the ring
     * forgets those it took). The consumer's arm raises the kind; whoever satisfies it swaps in
     * NONE and the new mark with one compare-exchange, which is the right to fire: one
     * notification per arming, and the mark moves with it (iw_cq_fire). */
    _Atomic uint64_t armw;
    _Atomic uint64_t last_sol_at;     /* pushes just after the last solicited or failed one
                                       * (written in the pusher's turn, read by the arm) */
    _Atomic uint64_t drained;         /* pops when a pop last found the ring empty after it */
    _Atomic(NTSTATUS) error;          /* latched CQ error: STATUS_BUFFER_OVERFLOW (overrun; written
                                       * under lock, an arm looks without it) */
    bool error_notified;              /* lock */
    NDK_FN_CQ_NOTIFICATION_CALLBACK notify_cb;
    void *notify_ctx;
    _Atomic(NTSTATUS) notify_status;  /* for the queued notification: written by its firer */
    struct iw_work notify_work;       /* serialized notifications (§5.7 rule 3) */
    _Atomic uint64_t pushes;          /* entries published, in order (sequentially consistent
                                       * store: the entry before it, and against the arm);
                                       * pushes - pops are in the ring */
    _Atomic uint64_t pops;            /* entries ever taken, written by the popping thread
                                       * (release: its reads of the slots before it) */
    atomic_bool popping;              /* a pop takes entries (iw_cq_pop_begin) */
    /* The busy-poll heuristic (iw_cq_short_poll), kept by the polling threads without a lock
     * (relaxed: two threads polling one CQ at once may lose a count, which only delays the
     * switch to busy-polling by a poll). */
    atomic_uint short_polls;          /* short polls in a row, each soon after the last */
    atomic_uint busy_unclocked;       /* busy short polls since the clock was last read */
    _Atomic uint64_t last_short_ns;   /* when the last one was */
    /* Consumer-driven progress (poll.c). Job of qps_lock: the list of connected QPs that
     * complete here, and their engines' use by a polling consumer (a QP leaves the list only
     * under it, so a poller holding it may run the QP's engines; a CQ's one QP is run without
     * it, see poll_one). The outermost lock of the provider: taken with no other lock held. */
    pthread_mutex_t qps_lock;
    struct ndk_list qps;              /* struct dp_cq_ref (datapath.h) */
    uint32_t poll_nqps;               /* entries of qps (qps_lock) */
    /* With two or more QPs, a busy poll asks this epoll set which sockets have data instead of
     * reading each (issue 14 item 5); made at the second QP, closed with the last (qps_lock). */
    int poll_ep;
    bool poll_ep_on;
    /* The CQ's one QP while it has exactly one (its struct dp_cq_ref), else NULL: a busy poll
     * runs it without qps_lock (an empty poll is most of them), inside the read side below.
     * Written under qps_lock; a detach waits out the read side that may still run the QP's
     * engines (poll.c: poll_gen is odd while a poller is inside; the detach waits for it to
     * change, so a steady poller cannot hold it off). */
    _Atomic(struct dp_cq_ref *) poll_one;
    _Atomic uint64_t poll_gen;
    /* TX engines of these QPs that found their socket full since the poller last looked: the
     * poller retries them (a hint: the poller recounts; incremented by tx.c, any thread). */
    atomic_uint poll_tx_blocked;
    /* Its QPs whose sockets left the progress thread for the consumer's polls (poll_on, counted
     * by iw_poll_count). While there are any, every poll runs them, busy or not, and an arm
     * hands them back: nothing else reads those sockets until the QP's expiry check. */
    atomic_uint polled_qps;
};
static inline struct iw_cq *to_iw_cq(NDK_CQ *c) { return ndk_container_of(c, struct iw_cq, ndk); }
NTSTATUS iw_create_cq(NDK_ADAPTER *a, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK cb, PVOID cbctx,
                      GROUP_AFFINITY *aff, NDK_FN_CREATE_COMPLETION ccb, PVOID ctx, NDK_CQ **out);

/* Appends one completion (the engines, retire and flush). solicited: a solicited receive (arms of type
 * SOLICITED match it; failures always match). Returns 0, or -EOVERFLOW when the CQ was full (the
 * CQ is then in error and its consumer is told with STATUS_BUFFER_OVERFLOW, §3.4). Any thread;
 * may wait for pushes to the same CQ that came first, and takes cq->lock when the CQ is overrun
 * or being resized (callers may hold qp->lock / srq->lock); may queue a notification. */
int iw_cq_push(struct iw_cq *cq, const NDK_RESULT_EX *res, bool solicited);

/* Consumer-driven progress (poll.c), called by cq.c. iw_poll_cq: a consumer polled cq and found
 * it (nearly) empty: run the engines of its QPs in this thread (busy: the consumer counts as
 * busy-polling, and its QPs become polled; otherwise only the QPs that are polled already).
 * iw_poll_cq_stop: the consumer armed cq (it is going to wait for a notification): hand the
 * QPs back to the progress thread. iw_poll_cq: consumer threads, never the progress
 * thread; iw_poll_cq_stop: any thread. No lock held. */
void iw_poll_cq(struct iw_cq *cq, bool busy);
void iw_poll_cq_stop(struct iw_cq *cq);
/* Short polls of an unarmed CQ in a row, each at most IW_POLL_GAP_NS after the previous one,
 * after which the consumer counts as busy-polling. A consumer that waits for notifications polls
 * once or twice before it arms; one that polls now and then is served by the progress thread. */
#define IW_POLL_ENTER 16u
#define IW_POLL_GAP_NS 200000u
/* Once busy, the clock is read on every IW_POLL_CLOCK_EVERY-th short poll only: an empty busy
 * poll costs a few hundred ns, and the clock read was a tenth of it. 16 of them stay far below
 * the gap, so a consumer that slowed down is still told apart within 16 polls. */
#define IW_POLL_CLOCK_EVERY 16u

/* ====================================================================================
 * Work requests and the work-queue ring (wq.c), shared by the QP's queues and the SRQ. A WQE is
 * what post.c validated and copied; the engines execute it (tx.c, rx.c).
 * ==================================================================================== */
enum iw_wr_op {
    IW_WR_RECEIVE = NdkOperationTypeReceive,
    IW_WR_SEND = NdkOperationTypeSend,
    IW_WR_FAST_REGISTER = NdkOperationTypeFastRegister,
    IW_WR_BIND = NdkOperationTypeBind,
    IW_WR_INVALIDATE = NdkOperationTypeInvalidate,
    IW_WR_READ = NdkOperationTypeRead,
    IW_WR_WRITE = NdkOperationTypeWrite,
    IW_WR_SEND_INV = 0x1002,          /* NdkSendAndInvalidate; completes as NdkOperationTypeSend */
};

struct iw_wqe {
    enum iw_wr_op op;
    ULONG flags;                      /* NDK_OP_FLAG_* */
    void *request_context;
    uint32_t nsge;
    NDK_SGE sge[IW_MAX_SGE];
    uint64_t length;                  /* total bytes of the SGL (or inline bytes) */
    uint8_t *inline_buf;              /* NDK_OP_FLAG_INLINE: copy taken at post time (owned) */
    uint64_t remote_addr;             /* read / write */
    uint32_t remote_stag;             /* read / write / send-and-invalidate */
    struct iw_obj *mem;               /* bind: MW, fast register / invalidate: MR or MW (ref held) */
    struct iw_obj *mem2;              /* bind: MR (ref held) */
    uint64_t va;                      /* bind / fast register: base virtual address */
    uint32_t fbo;                     /* fast register */
    uint32_t page_count;              /* fast register: pages copied to page_list */
    uint64_t *page_list;              /* fast register (owned) */
    uint64_t posted_ns;               /* iw_sv_now() at post: the queue's oldest age (sysview) */
};

/* The work-queue ring (wq.c). Producer: the posting consumer (serialized per queue by §5.4).
 * Consumer: the engines, retire and flush. Every call is made with the owning object's lock
 * held (qp->lock / srq->lock; for a QP's RQ its gate, qp->rq_gate, instead) but the taker's (the
 * RQ's RX engine, below); none blocks.
 * Storage follows what is queued, not the depth (issue 14 item 3): the slots live in chunks of
 * IW_WQ_CHUNK, allocated zeroed when a push first needs one and given back when the last entry
 * in it leaves; one emptied chunk is kept as a spare, so a queue that carries one request at a
 * time does not allocate per request. A slot reserved for a request that never entered (the TX
 * lean path wrote it whole, tx.c) leaves its chunk allocated and empty for the next push. Each slot carries side_size bytes of its owner's per-slot
 * state after the WQE (the SQ's struct dp_sqe, datapath.h), zero while the slot is free. */
#define IW_WQ_CHUNK 4u
#define IW_WQ_ALIGN(n) (((n) + _Alignof(max_align_t) - 1) & ~(size_t)(_Alignof(max_align_t) - 1))
struct iw_wq_chunk {
    size_t used;                      /* queued entries in this chunk */
    max_align_t slots[];              /* IW_WQ_CHUNK slots of stride bytes */
};
struct iw_wq {
    struct iw_wq_chunk **chunk;       /* [ceil(depth / IW_WQ_CHUNK)], NULL where nothing is queued */
    struct iw_wq_chunk *spare;
    uint32_t depth, head, count;
    uint32_t max_sge;
    uint32_t stride;                  /* bytes per slot: the WQE, then the side state */
    /* A taker: one consumer that takes entries in order without the owner's lock (the QP's RQ
     * and its RX engine, issue 39; iw_wq_take_*). A taken entry keeps its slot, and stays in
     * count, until a holder of the lock (the RQ's gate) reaps it (iw_wq_reap): head, count and
     * the chunks stay the lock's. published: receives ever pushed (iw_wq_push_receive, release:
     * after the entry); taken: entries ever taken (the taker, release: after its reads of them);
     * reaped: taken entries dropped (the lock); take_slot: the taker's next slot. */
    _Atomic uint32_t published, taken;
    uint32_t reaped;
    uint32_t take_slot;
};
int iw_wq_init(struct iw_wq *q, uint32_t depth, uint32_t max_sge, size_t side_size);
void iw_wq_free(struct iw_wq *q);
/* Makes sure the next push has its slot: -ENOSPC when full, -ENOMEM when the slot's chunk cannot
 * be allocated; after 0 the next iw_wq_push cannot fail. The slot is iw_wq_slot(q, q->count). */
int iw_wq_reserve(struct iw_wq *q);
/* Appends a copy of *w (which then owns nothing); -ENOSPC when full, -ENOMEM. */
int iw_wq_push(struct iw_wq *q, const struct iw_wqe *w);
/* Appends a receive of the nsge (<= max_sge) SGEs at sgl, length bytes in all, written in its
 * slot; -ENOSPC when full, -ENOMEM. */
int iw_wq_push_receive(struct iw_wq *q, void *rctx, const NDK_SGE *sgl, uint32_t nsge, uint64_t length,
                       uint64_t posted_ns);
/* Moves the oldest entry into *out (its buffers and references with it) and zeroes its slot,
 * side state included (the owner releases what the side state holds first); -ENOBUFS when
 * empty. */
int iw_wq_pop(struct iw_wq *q, struct iw_wqe *out);
int iw_wq_drop(struct iw_wq *q);   /* releases the head entry in place */
/* New depth, entries kept in order; -EINVAL below the queued count, -ENOMEM. */
int iw_wq_resize(struct iw_wq *q, uint32_t depth);
/* The taker (struct iw_wq). iw_wq_take_reset: makes every queued entry untaken, before a taker
 * starts (the lock held, no taker running). iw_wq_take_peek: the oldest entry not taken yet, or
 * NULL; the taker only. iw_wq_take_next: takes it (the taker reads nothing of it after). iw_wq_reap:
 * drops the taken entries, giving their slots back; the lock held. */
void iw_wq_take_reset(struct iw_wq *q);
const struct iw_wqe *iw_wq_take_peek(struct iw_wq *q);
void iw_wq_take_next(struct iw_wq *q);
void iw_wq_reap(struct iw_wq *q);
/* Frees a WQE's owned buffers and drops its memory-object references. */
void iw_wq_entry_release(struct iw_wqe *w);
void iw_wqe_clear(struct iw_wqe *w);   /* zeroes all but the SGE array (wq.c) */
/* Copies a request's SGE list into a WQE's: the usual single SGE as one assignment, not a
 * library call sized at run time (post.c, wq.c). nsge <= the WQE's room. */
static inline void iw_wqe_copy_sges(NDK_SGE *dst, const NDK_SGE *src, uint32_t nsge)
{
    if (nsge == 1)
        dst[0] = src[0];
    else if (nsge)
        memcpy(dst, src, (size_t)nsge * sizeof(NDK_SGE));
}
/* The i-th queued entry (0 = oldest) and its ring slot (the index of per-slot side arrays).
 * head < depth and i <= count <= depth, so one subtraction wraps it: a division here (7 per
 * small message's round trip) costs about 3.5 ns in a dependent chain, the subtraction 1
 * (docs/performance.md). */
static inline uint32_t iw_wq_slot(const struct iw_wq *q, uint32_t i)
{
    uint32_t s = q->head + i;

    return s >= q->depth ? s - q->depth : s;
}
/* A queued slot's WQE and side state (the slot's chunk exists while the slot is queued). */
static inline void *iw_wq_slot_ptr(struct iw_wq *q, uint32_t slot)
{
    return (char *)q->chunk[slot / IW_WQ_CHUNK]->slots + (size_t)(slot % IW_WQ_CHUNK) * q->stride;
}
static inline struct iw_wqe *iw_wq_at(struct iw_wq *q, uint32_t i) { return iw_wq_slot_ptr(q, iw_wq_slot(q, i)); }
static inline void *iw_wq_side(struct iw_wq *q, uint32_t slot)
{
    return (char *)iw_wq_slot_ptr(q, slot) + IW_WQ_ALIGN(sizeof(struct iw_wqe));
}
static inline bool iw_wq_full(const struct iw_wq *q) { return q->count == q->depth; }
/* Whether slot holds a queued entry (a slot's storage may be gone once its entry left). */
static inline bool iw_wq_slot_queued(const struct iw_wq *q, uint32_t slot)
{
    uint32_t age = slot + q->depth - q->head;     /* slot < depth: one subtraction wraps it */

    return q->depth && (age >= q->depth ? age - q->depth : age) < q->count;
}
/* NDK_OPERATION_TYPE of a WQE's completion. */
static inline NDK_OPERATION_TYPE iw_wr_type(enum iw_wr_op op)
{
    return op == IW_WR_SEND_INV ? NdkOperationTypeSend : (NDK_OPERATION_TYPE)op;
}

/* ====================================================================================
 * SRQ (srq.c)
 * ==================================================================================== */
struct iw_srq {
    NDK_SRQ ndk;
    struct iw_obj obj;
    /* Job of lock: rq, threshold/arm state. */
    pthread_mutex_t lock;
    struct iw_wq rq;
    uint32_t threshold;
    bool armed;
    NDK_FN_SRQ_NOTIFICATION_CALLBACK notify_cb;
    void *notify_ctx;
    struct iw_work notify_work;
};
static inline struct iw_srq *to_iw_srq(NDK_SRQ *s) { return ndk_container_of(s, struct iw_srq, ndk); }
NTSTATUS iw_create_srq(NDK_PD *pd, ULONG depth, ULONG max_sge, ULONG threshold, NDK_FN_SRQ_NOTIFICATION_CALLBACK cb,
                       PVOID cbctx, GROUP_AFFINITY *aff, NDK_FN_CREATE_COMPLETION ccb, PVOID ctx, NDK_SRQ **out);
/* Takes the oldest posted receive (into *out) for a QP that needs one; returns
 * -ENOBUFS when the SRQ is empty. May queue the low-water notification (§5.9). srq->lock is
 * taken inside; callers may hold qp->lock. */
int iw_srq_take(struct iw_srq *srq, struct iw_wqe *out);

/* ====================================================================================
 * MR / MW and the STag table (mem.c)
 * ==================================================================================== */
/* An NdkInvalidate of an MR or MW that waits for the placements into it that began before it
 * (mem.c, iw_mem_inval_wait): the QP whose SQ holds it (a reference held while set), and the
 * work that completes it once the object's last data-path user lets go. */
struct iw_mem_inval {
    _Atomic(struct iw_qp *) qp;
    struct iw_work work;
    struct iw_obj *obj;               /* the MR or MW it is part of */
};

/* What a key lookup (iw_mem_get) reads without a lock, laid out alike in an MR and an MW so
 * that the data path takes it from the object without asking which of the two it is. */
struct iw_mem_key {
    /* stag, valid, base_va, length and rights: written under dev->mem_lock, between
     * iw_mem_write_begin and _end (seq odd meanwhile). 64 bits, so that a value a QP's lookup
     * cache kept (struct iw_mem_cache) can never come round again. */
    _Atomic(uint64_t) seq;
    uint32_t stag;                    /* an MR's local token = its remote token (siw: lkey == rkey) */
    bool valid;                       /* MR: registered (NdkRegisterMr, or fast-registered); MW: bound */
    unsigned rights;                  /* the access as DP_ACC_* bits (iw_access_rights) */
    uint64_t base_va;                 /* label of the first byte (never dereferenced by the core) */
    uint64_t length;
    /* DMA users (data path uses counted by iw_mem_get). A deregister while they are non-zero
     * pends until the last iw_mem_put (§5.10: memory is the consumer's after it), and so does
     * a close: the lookups take no object reference. */
    atomic_int users;
    /* The close found users: it took one object reference for all of them, which the last
     * iw_mem_put drops (whoever exchanges this from true owns the drop). */
    atomic_bool close_hold;
    struct iw_mem_inval inval;        /* an invalidation waiting for users (fast MR, MW) */
    /* Someone has waited for users here (a deregister, an invalidation, a close): set, never
     * cleared, after the waiter's own field and before its look at users, so that the last
     * iw_mem_put of a key nobody waited on reads this one field instead of three (iw_mem_put). */
    atomic_bool waited;
};

struct iw_mr {
    NDK_MR ndk;
    struct iw_obj obj;
    struct iw_mem_key key;            /* at the MW's offset from obj (IW_MEM_KEY_OFF) */
    /* Job of lock: the registration state and the page list (key's fields are dev->mem_lock's:
     * a fast register's rekeying at acceptance writes them without this lock). */
    pthread_mutex_t lock;
    bool fast_register;               /* created with FastRegister = TRUE */
    bool frmr_initialized;            /* NdkInitializeFastRegisterMr done */
    bool frmr_remote;                 /* RemoteAccess given at initialization */
    struct ndk_list retired;          /* dev->mr_retired once destroyed (mem_lock) */
    ULONG access;                     /* NDK_MR_FLAG_* (registered) or NDK_OP_FLAG_ALLOW_* (fast) */
    uint32_t page_cap;                /* fast register: pages reserved */
    uint64_t *pages;                  /* fast register: adapter (virtual) page addresses */
    uint32_t npages;
    uint32_t fbo;
    /* A deregister waits for key.users to reach 0: lets iw_mem_put skip dev->mem_lock on the
     * data path when none waits. Set and cleared under dev->mem_lock. */
    atomic_bool dereg_waiting;
    NDK_FN_REQUEST_COMPLETION dereg_cb;
    void *dereg_ctx;
    struct iw_work dereg_work;
};
static inline struct iw_mr *to_iw_mr(NDK_MR *m) { return ndk_container_of(m, struct iw_mr, ndk); }

struct iw_mw {
    NDK_MW ndk;
    struct iw_obj obj;
    struct iw_mem_key key;            /* valid: bound; at the MR's offset from obj */
    pthread_mutex_t lock;             /* job: the binding (written by the data path's bind) */
    struct ndk_list retired;          /* dev->mw_retired once destroyed (mem_lock) */
    ULONG access;                     /* NDK_OP_FLAG_ALLOW_* of the bind */
    /* the bound MR is obj.ante[1] (a successor reference: §1.7 MR -> MW) */
};
static inline struct iw_mw *to_iw_mw(NDK_MW *m) { return ndk_container_of(m, struct iw_mw, ndk); }
#define IW_MW_ANTE_MR 1

/* The key of an MR's or MW's obj (struct iw_mem_key). */
#define IW_MEM_KEY_OFF (offsetof(struct iw_mr, key) - offsetof(struct iw_mr, obj))
_Static_assert(IW_MEM_KEY_OFF == offsetof(struct iw_mw, key) - offsetof(struct iw_mw, obj),
               "an MR's and an MW's key lie at one offset from their obj");
static inline struct iw_mem_key *iw_mem_key_of(struct iw_obj *o)
{
    return (struct iw_mem_key *)((char *)o + IW_MEM_KEY_OFF);
}

NTSTATUS iw_create_mr(NDK_PD *pd, BOOLEAN fast, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MR **out);
/* Rewrites an MR's or MW's system-view description (PD, length, fast register, registered or
 * bound; never the STag or the address) after its registered / bound state changed.
 * dev->mem_lock held (every writer of those fields holds it). */
void iw_mem_sv_describe_locked(struct iw_obj *o);
NTSTATUS iw_create_mw(NDK_PD *pd, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MW **out);

/* What a registration or binding covers, read at one moment with its validity. */
struct iw_mem_view {
    uint64_t base, length;
    unsigned rights;                  /* DP_ACC_* (datapath.h) */
    uint64_t seq;                     /* the key's seq they were read at */
};

/* The DP_ACC_* rights (datapath.h) that access grants: NDK_MR_FLAG_* of a registered MR,
 * NDK_OP_FLAG_ALLOW_* of a fast-registered one (fast) or of a window's binding (window).
 * Computed when the access is set, not per lookup. Any thread, no lock (access.c). */
unsigned iw_access_rights(ULONG access, bool fast, bool window);

/* Looks up an STag (access.c); on success returns the MR or MW object with a DMA-user count
 * held, which keeps it (its close and deregistration pend until the count is dropped): release
 * it with iw_mem_put. With view, also what it covers at that moment. -ENOENT when the STag is
 * not valid (wrong key, free index, deregistered, closed). Takes no lock and no reference: the
 * caller holds a QP's qp->lock, its datapath's rx_owned or its TX engine (tx_owned), which is
 * what keeps an object it may find alive (iw_qp_lookups_quiesce). */
int iw_mem_get(struct iw_device *dev, uint32_t stag, struct iw_obj **out, struct iw_mem_view *view);
/* A writer of what iw_mem_get reads without a lock (struct iw_mem_key, key.seq): the fields
 * are set with IW_MEM_SET between the two. dev->mem_lock held. */
void iw_mem_write_begin(struct iw_obj *o);
void iw_mem_write_end(struct iw_obj *o);
#define IW_MEM_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
/* Drops the count iw_mem_get took. The caller holds one of the three that iw_mem_get names
 * (any QP's): once the count is down the object may be closed, and that section is what keeps
 * its memory until this returns. Never blocks. */
void iw_mem_put(struct iw_obj *mem);

/* A data path's last good lookup of a local key (iw_access_sgl_resolve): the MR found, the STag
 * and what the key said then (v, with the seq it was read at). One per engine side, guarded by
 * the lock of its section (struct dp_tx / dp_rx). The object stays in memory while it is cached:
 * iw_qp_lookups_quiesce empties every cache, under that lock, before a retired MR is freed. */
struct iw_mem_cache {
    struct iw_obj *obj;               /* NULL: empty */
    uint32_t stag;
    struct iw_mem_view v;
};
/* Counts a user of c's object (release with iw_mem_put) when nothing its key says has changed
 * since c was filled: the count, then the key's seq, as iw_mem_get does, so that a writer who
 * moved seq after c's read either sees the count or is seen here (seq is 64 bits: a value never
 * returns). false, with c emptied, when it has. c->obj set; the caller holds c's lock. */
static inline bool iw_mem_cache_hit(struct iw_mem_cache *c)
{
    struct iw_mem_key *k = iw_mem_key_of(c->obj);

    atomic_fetch_add(&k->users, 1);
    if (atomic_load(&k->seq) == c->v.seq)
        return true;
    iw_mem_put(c->obj);
    c->obj = NULL;
    return false;
}
/* An NdkInvalidate of mem has just made its token invalid on qp's SQ: returns true when
 * placements that began before are still running, so that the request's completion must wait
 * for them (qp then completes it through iw_qp_sq_mem_released when the last one ends); false
 * when it completes now. A second QP invalidating the same object while the first waits is not
 * made to wait (a re-registration and a new invalidation within one placement). qp->lock held;
 * never blocks. */
bool iw_mem_inval_wait(struct iw_qp *qp, struct iw_obj *mem);
/* The last placement into mem ended: the invalidations of it waiting on qp's SQ are done (qp.c,
 * called by mem.c). Progress thread; takes qp->lock. */
void iw_qp_sq_mem_released(struct iw_qp *qp, struct iw_obj *mem);
/* Returns once every key lookup (iw_mem_get) and every iw_mem_put that was running when it
 * was called has ended: each runs under a QP's qp->lock, its datapath's rx_owned or tx_owned,
 * and each QP's three are taken and released once (qp.c), and every QP's key caches (struct
 * iw_mem_cache) are emptied under theirs. Progress thread, no lock held; blocks (yields) while a
 * holder finishes. */
void iw_qp_lookups_quiesce(struct iw_device *dev);
/* Sets up the device's lists of retired MRs and MWs (mem.c); iw_device_destroy finds them
 * empty, the progress thread having run the last reclaim before it stopped. */
void iw_mem_device_init(struct iw_device *dev);
/* Whether the data path holds mem (iw_mem_get without its iw_mem_put yet). Any thread. */
bool iw_mem_placing(struct iw_obj *mem);
/* A fresh random key for stag's slot when a fast register / bind issues a new token (RFC 5040
 * §8). Returns the new STag (the old one if no random byte could be had). mem_lock not held. */
uint32_t iw_mem_rekey(struct iw_device *dev, uint32_t stag);

/* ====================================================================================
 * QP (qp.c) - state machine, association with a connector, flush
 * ==================================================================================== */
enum iw_qp_state {
    IW_QP_IDLE,                       /* created, not associated with a connection */
    IW_QP_CONNECTING,                 /* tied to a connector that is establishing */
    IW_QP_RTS,                        /* established: data moves */
    IW_QP_CLOSING,                    /* local graceful disconnect: no new TX, draining */
    IW_QP_TERMINATE,                  /* protocol error: one TERMINATE goes out, then ERROR */
    IW_QP_ERROR,                      /* flushed / dead; posts complete with STATUS_CANCELLED */
    IW_QP_STATE_COUNT
};
extern const char *const iw_qp_state_name[IW_QP_STATE_COUNT];

/* Connection parameters negotiated by the CM and handed to the data path at establishment. */
struct iw_conn_params {
    bool crc;                         /* MPA CRC on the FPDUs of both directions */
    uint8_t mpa_rev;
    bool p2p;                         /* RFC 6581 peer-to-peer: RTR exchanged by the CM */
    uint8_t rtr;                      /* IW_MPA_RTR_* used (0: none) */
    uint32_t ird, ord;                /* effective inbound / outbound read limits (§5.11.3) */
    uint32_t mss;                     /* TCP_MAXSEG at establishment (EMSS, RFC 5044 §4) */
    uint32_t mulpdu;                  /* largest ULPDU we send */
    /* The CM consumed a zero-length Read Request RTR (MSN 1 on QN 1) and answered it: the data
     * path's next inbound Read Request MSN is 2 and one IRD slot is already free again. */
    bool rtr_read_consumed;
    /* The peer's Read RTR was sent by us (initiator, Read RTR) and its zero-length Read Response
     * was consumed by the CM: our next outbound Read Request MSN is 2. */
    bool rtr_read_sent;
    /* Responder in non-P2P mode: RFC 5044 §7.1.2 forbids our first FPDU until one FPDU from the
     * initiator was received and validated. The data path's TX must hold back while this is set
     * and clear it (under qp->lock) on its first good inbound FPDU. */
    bool tx_wait_first_rx;
};

struct iw_qp {
    NDK_QP ndk;
    struct iw_obj obj;
    struct ndk_list dev_link;         /* dev->qps (qps_lock) */
    /* Job of lock: state, conn, fd, params, both work queues (indices and contents; the RQ's
     * posts take rq_gate instead, below, and the RX engine takes its receives without either,
     * struct iw_wq's taker). The data path may split TX/RX progress under its own finer locks,
     * but the state transition and the fd detach always happen under this lock, so a holder
     * that sees RTS may use fd. An iw_lock (lock.h): every post takes it. */
    struct iw_lock lock;
    enum iw_qp_state state;           /* written with lock and rq_gate held */
    /* The RQ's posting gate. A receive's post takes it instead of lock: §5.4 keeps posts to one
     * queue to one at a time, so only those who change the RQ or the state under lock contend
     * (every state transition, the flush, the establishment's hand-over to the RX engine), and
     * they take it too, waiting by yielding for the post, which takes no lock inside. So a post
     * reads the state and works the queue as a holder of lock would. */
    atomic_bool rq_gate;
    void *qp_context;                 /* copied into every completion */
    struct iw_pd *pd;                 /* obj.ante[0] */
    struct iw_cq *rcq, *icq;          /* obj.ante[1], ante[2] (may be the same CQ, §8.26) */
    struct iw_srq *srq;               /* obj.ante[3] or NULL */
    struct iw_wq sq;                  /* initiator queue (depth, max SGE) */
    struct iw_wq rq;                  /* receive queue (unused with an SRQ) */
    uint32_t max_read_sge;
    uint32_t inline_size;             /* InlineDataSize */
    struct iw_connector *conn;        /* current connector (it holds a ref on us), or NULL */
    int fd;                           /* the socket, taken over from the CM at ESTABLISHED until
                                       * the loss (qp.c closes it; qp->lock), else -1 */
    struct iw_wire *wire;             /* the connection's tap with fd (a reference), until the
                                       * data path takes it (qp->lock) */
    struct iw_conn_params params;
    int first_error;                  /* first protocol error (-errno), kept (siw init_terminate) */
    struct iw_dp *dp;                 /* the engines' state (datapath.h), from establishment on */
    /* obj.sv's QP part (sysview.c). Description: qp->lock. Counters: sq_posted (post_sq), rq_posted
     * and the oldest ages (posters and completers), *_completed and errors (completers): all
     * under qp->lock, but for the TX lean path's completion (tx_owned, with the SQ empty and
     * only its poster able to post, so no other completer runs) and the RQ's posted count and
     * oldest age (rq_gate); bytes_out / ops_out: the TX engine (tx_owned); bytes_in / ops_in:
     * the RX engine (rx_owned). */
    struct ndk_sv_qp *svq;
    /* Consumer-driven progress: the connection's socket is serviced by a polling consumer, not
     * by the progress thread (set through iw_qp_set_polled; poll_on is authoritative). */
    atomic_bool polled;
    atomic_uint poll_seq;             /* moved by every consumer poll that ran the engines */
    bool poll_on;                     /* the progress thread left data and room to the poller (lock;
                                       * written atomically: rx.c reads it without) */
    unsigned poll_seq_seen;           /* poll_seq at the last expiry check (lock) */
    uint64_t poll_since_ms;           /* when that check was (lock) */
    struct iw_timer poll_timer;       /* the expiry check (dev->poll_idle_ms after the last) */
    struct iw_work unwatched_work;    /* the socket could not go back to the progress thread */
    struct iw_work unlend_work;       /* a poller takes the socket: the ring gives it back */
};
static inline struct iw_qp *to_iw_qp(NDK_QP *q) { return ndk_container_of(q, struct iw_qp, ndk); }
#define IW_QP_ANTE_PD 0
#define IW_QP_ANTE_RCQ 1
#define IW_QP_ANTE_ICQ 2
#define IW_QP_ANTE_SRQ 3

NTSTATUS iw_create_qp(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, PVOID qpctx, ULONG rq_depth, ULONG sq_depth,
                      ULONG rq_sge, ULONG sq_sge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx,
                      NDK_QP **out);
NTSTATUS iw_create_qp_with_srq(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, NDK_SRQ *srq, PVOID qpctx, ULONG sq_depth,
                               ULONG sq_sge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb, PVOID ctx,
                               NDK_QP **out);

/* Takes the RQ's posting gate (struct iw_qp) if it is free: one compare-exchange, whose acquire
 * pairs with the last holder's release. Any thread, never waits. */
static inline bool iw_qp_rq_gate_try(struct iw_qp *qp)
{
    bool f = false;

    return atomic_compare_exchange_strong_explicit(&qp->rq_gate, &f, true, memory_order_acquire,
                                                   memory_order_relaxed);
}

/* Takes it, yielding while a post holds it. qp->lock held (so no other waiter). */
void iw_qp_rq_gate_wait(struct iw_qp *qp);

static inline void iw_qp_rq_gate_release(struct iw_qp *qp)
{
    atomic_store_explicit(&qp->rq_gate, false, memory_order_release);
}

/* The one QP state transition function: validates from -> to, logs "QP[id] A => B", and logs and
 * rejects (-EINVAL) undefined transitions. Caller holds qp->lock (takes rq_gate). Never blocks
 * but for a receive's post, which takes no lock. */
int iw_qp_modify_locked(struct iw_qp *qp, enum iw_qp_state to);
/* Completes every queued request of both queues with STATUS_CANCELLED (§2.9 NdkFlush) and moves
 * the QP to ERROR; while the engines still run, the completions wait for iw_qp_stop. Caller
 * holds qp->lock (takes the CQ locks inside). */
void iw_qp_flush_locked(struct iw_qp *qp);
/* Records the first protocol error (later ones are ignored). Caller holds qp->lock. */
void iw_qp_set_error_locked(struct iw_qp *qp, int err);

/* The connection's life cycle, driven by the CM (cm.c). */
/* Progress thread, no lock held, right after the QP entered RTS (qp->fd and qp->params are
 * set): the QP sets up its engines and starts transmitting. */
void iw_qp_connection_established(struct iw_qp *qp);
/* NdkFlush ran while the connection was up: the QP is in ERROR but still holds the socket, so
 * the CM's close must still take it down. qp->lock held. */
bool iw_qp_flushed_live_locked(struct iw_qp *qp);
/* Progress thread, no lock held, when the connection is gone (peer FIN, reset, local
 * disconnect done, abort) and after the QP left RTS; the CM's fd is already detached. The QP
 * stops its engines; the CM flushes the queues right after when it should. */
void iw_qp_connection_lost(struct iw_qp *qp, int err);
/* The data-path part of iw_qp_connection_lost (what arrived is placed, then the engines stop),
 * for NdkDisconnect of a connection the CM closed before its progress thread got there: no
 * DMA may follow the disconnect's completion (§5.11.6). Consumer's thread, no lock held. */
void iw_qp_dma_stop(struct iw_qp *qp);
/* A non-P2P responder's first-FPDU grace period is over (RFC 5044 §7.1.2 hold-back): transmit.
 * Progress thread, no lock held. */
void iw_qp_release_first_fpdu(struct iw_qp *qp);
/* Asks the progress engine for EPOLLOUT on the QP's socket (TX engine blocked on a full socket)
 * or withdraws it. Any thread; no lock held except dp->tx_owned (takes qp->lock). */
void iw_qp_want_writable(struct iw_qp *qp, bool on);
/* Moves the connection's socket between the progress thread (on = false: EPOLLIN, EPOLLRDHUP,
 * EPOLLOUT as the TX engine asks) and a polling consumer (on = true: out of the progress
 * thread's epoll set; the poller's reads see the peer going away). Only while the QP is connected and not
 * CLOSING; a QP nobody polled for dev->poll_idle_ms goes back by itself. Any thread except
 * inside the engines; no lock held except cq->qps_lock, or inside a poll's read side (takes
 * qp->lock). */
void iw_qp_set_polled(struct iw_qp *qp, bool on);

/* ====================================================================================
 * Endpoints (endpoint.c) - §5.11.5 reference counting of local (IP, ND port) pairs.
 * ND port == TCP port for iWARP.
 * ==================================================================================== */
enum iw_ep_kind {
    IW_EP_LISTENER,                   /* +1 listener, +1 per connector accepted through it */
    IW_EP_SHARED,                     /* +1 shared endpoint, +1 per connector through it */
    IW_EP_CONNECT,                    /* exactly one reference, the connector's */
};

struct iw_endpoint {
    struct ndk_list link;             /* in dev->endpoints; protected by dev->lock */
    struct iw_hnode hash;             /* in dev->ep_hash by port; dev->lock */
    enum iw_ep_kind kind;
    SOCKADDR_INET addr;               /* local IP + port (port != 0 once acquired) */
    unsigned refs;                    /* protected by dev->lock */
    bool open;                        /* its listener / shared endpoint is open (OID listing) */
    struct ndk_list conns;            /* shared endpoints: connectors through it (dup 4-tuple check) */
};

/* Reserves addr for kind; port 0 picks a free ephemeral port (49152-65535) that bind() accepts
 * on fd when fd >= 0 (the socket is bound here). Returns -EADDRINUSE (SHARING_VIOLATION) when
 * taken in this process or by the OS, -ERANGE (TOO_MANY_ADDRESSES) when no ephemeral port is
 * free. Caller holds dev->lock. Never blocks. */
int iw_ep_acquire(struct iw_device *dev, const SOCKADDR_INET *addr, enum iw_ep_kind kind, int fd,
                  struct iw_endpoint **out);
/* NdkConnect with port 0 (issue 14 item 4): connect() itself chooses the port, as the kernel
 * does for its own ephemeral ports, so a port may serve several connections to different peers
 * and its old connections in TIME_WAIT to another 4-tuple do not hold it. fd gets
 * IP_BIND_ADDRESS_NO_PORT, the range 49152-65535 (§5.11.5), and is bound to src's
 * address. -ENOPROTOOPT when the kernel lacks either option (then iw_ep_acquire probes). Any
 * thread. Once connect() chose, iw_ep_acquire_chosen records the endpoint at the chosen
 * address: no conflict check, as connect() never picks a port that bind() holds (a listener,
 * a shared endpoint) and the 4-tuple is unique by construction. dev->lock held. */
int iw_ep_connect_bind(int fd, const SOCKADDR_INET *src);
int iw_ep_acquire_chosen(struct iw_device *dev, const SOCKADDR_INET *addr, struct iw_endpoint **out);
void iw_ep_get(struct iw_endpoint *ep);                          /* dev->lock held */
void iw_ep_put(struct iw_device *dev, struct iw_endpoint *ep);   /* dev->lock held */

/* TRUE when addr (port ignored) is an address of this device, or the wildcard (§8.34). Any
 * thread. */
bool iw_ep_is_local(struct iw_device *dev, const struct sockaddr *addr);

/* What a socket is for decides its sharing flags (§5.11.5: a port is shared only on purpose):
 *   LISTEN     SO_REUSEADDR, as siw: a listener can come back while its
 *              old connections sit in TIME_WAIT; two listeners never share a port on Linux.
 *   CONNECT    nothing: its bind (explicit or ephemeral port) is exclusive against every socket.
 *   SEP_ANCHOR a shared endpoint's placeholder: bound exclusively, then SO_REUSEPORT so that
 *              the connections through it can join (shared_endpoint.c).
 *   SEP_CONN   a connection through a shared endpoint: SO_REUSEPORT, joins the placeholder. */
enum iw_sock_use { IW_SOCK_LISTEN, IW_SOCK_CONNECT, IW_SOCK_SEP_ANCHOR, IW_SOCK_SEP_CONN };
/* A non-blocking TCP socket for use (TCP_NODELAY, as siw). Returns the fd or -errno. */
int iw_ep_socket(int family, enum iw_sock_use use);
/* The socket's local (peer = false) or peer address into *a; *a unchanged on failure. */
void iw_ep_sockname(int fd, SOCKADDR_INET *a, bool peer);

/* Address helpers (any thread). */
socklen_t iw_sa_len(const struct sockaddr *sa);
int iw_sa_from_user(const struct sockaddr *in, ULONG len, SOCKADDR_INET *out);   /* -EINVAL / -EAFNOSUPPORT */
uint16_t iw_sa_port(const SOCKADDR_INET *a);
void iw_sa_set_port(SOCKADDR_INET *a, uint16_t port);
bool iw_sa_is_wildcard(const SOCKADDR_INET *a);
bool iw_sa_equal(const SOCKADDR_INET *a, const SOCKADDR_INET *b);       /* address and port */
bool iw_sa_addr_equal(const SOCKADDR_INET *a, const SOCKADDR_INET *b);  /* address only */
/* The "size in / size out / STATUS_BUFFER_TOO_SMALL" getter protocol (§5.11.7). */
NTSTATUS iw_sa_copy_out(const SOCKADDR_INET *a, PSOCKADDR out, ULONG *len);
const char *iw_sa_str(const SOCKADDR_INET *a, char *buf, size_t cap);
/* A hash of address and port (the 4-tuple index). */
uint32_t iw_sa_hash(const SOCKADDR_INET *a);

/* ====================================================================================
 * Connection management (cm.c)
 * ==================================================================================== */

/* The connector's CM state machine (one transition function, iw_cm_set_state). */
enum iw_cm_state {
    IW_CM_IDLE,                       /* created, unused */
    IW_CM_TCP_CONNECTING,             /* active: non-blocking connect() in progress */
    IW_CM_AWAIT_REPLY,                /* active: MPA Request (being) sent, waiting for the Reply */
    IW_CM_REPLY_RECEIVED,             /* active: peer accepted; NdkConnect completed; waiting for
                                       * NdkCompleteConnect / NdkReject */
    IW_CM_AWAIT_READ_RESP,            /* active: Read RTR sent, waiting for its Read Response */
    IW_CM_AWAIT_REQUEST,              /* passive: TCP accepted, waiting for the MPA Request */
    IW_CM_REQUEST_RECEIVED,           /* passive: connect event delivered; waiting for Accept/Reject */
    IW_CM_AWAIT_RTR,                  /* passive: Reply sent (P2P), waiting for the RTR */
    IW_CM_ESTABLISHED,                /* connection up; the QP's data path owns socket I/O */
    IW_CM_REJECTING,                  /* passive: MPA reject (R = 1) being sent, then close */
    IW_CM_DISCONNECTING,              /* NdkDisconnect: FIN sent, waiting for the peer's */
    IW_CM_CLOSED,                     /* socket gone (refused, rejected, failed, disconnected) */
    IW_CM_STATE_COUNT
};
extern const char *const iw_cm_state_name[IW_CM_STATE_COUNT];

struct iw_connector {
    NDK_CONNECTOR ndk;
    struct iw_obj obj;
    struct ndk_list link;             /* dev->connectors (dev->lock) */
    struct ndk_list ep_link;          /* shared endpoint's conns (dev->lock) */
    struct iw_hnode tuple;            /* dev->conn_hash while local + peer are set and not
                                       * CLOSED (dev->lock) */
    struct iw_pollable poll;          /* the TCP socket; fd -1 when none */
    bool polled;                      /* registered with epoll (dev->lock) */
    struct iw_wire *wire;             /* capture / wire faults (wire.h), NULL when none;
                                       * set at TCP setup, a reference handed to the QP */

    /* Everything below is protected by dev->lock (the CM lock). */
    enum iw_cm_state state;
    bool active;                      /* TRUE: we sent the MPA Request */
    struct iw_qp *qp;                 /* obj.ante[0] once connected/accepted */
    struct iw_listener *listener;     /* passive: obj.ante[1] */
    struct iw_shared_endpoint *sep;   /* active via a shared endpoint: obj.ante[1] */
    struct iw_endpoint *ep;           /* the endpoint reference this connector holds */
    SOCKADDR_INET local, peer;        /* ND (= TCP) addresses */
    uint64_t deadline_ms;             /* CM deadline, 0 = none (timer armed while set) */
    struct iw_timer timer;

    /* requested read limits (capped by adapter maxima) and what the peer stated */
    uint32_t my_ird, my_ord;
    uint32_t peer_ird, peer_ord;
    bool peer_has_limits;             /* MPA v2 block present */
    uint32_t eff_ird, eff_ord;        /* §5.11.3 effective values */

    /* MPA negotiation */
    uint8_t mpa_rev;
    bool crc;
    bool p2p;
    uint8_t rtr_offer;                /* initiator: kinds offered / passive: kinds the peer offered */
    uint8_t rtr;                      /* the kind chosen */
    struct iw_mpa_parser parser;      /* the peer's Request / Reply */
    uint8_t peer_pd[IW_MAX_PRIVATE_DATA];
    uint16_t peer_pd_len;
    uint8_t my_pd[IW_MAX_PRIVATE_DATA];
    uint16_t my_pd_len;

    /* pending transmit during the handshake (Request / Reply / reject / RTR / Read Response) */
    uint8_t txbuf[IW_MPA_HDR_LEN + IW_MPA_PD_MAX_RFC + 64];
    uint16_t tx_len, tx_off;
    bool close_after_tx;              /* reject: close the socket once the frame is out */
    uint8_t rxbuf[64];                /* RTR / Read Response being received */
    uint16_t rx_len;

    /* pending requests (§3.3): at most one of each kind at a time */
    NDK_FN_REQUEST_COMPLETION connect_cb;    void *connect_ctx;     /* Connect(WithSharedEndpoint) */
    NDK_FN_REQUEST_COMPLETION complete_cb;   void *complete_ctx;    /* CompleteConnect(Ex) */
    NDK_FN_REQUEST_COMPLETION accept_cb;     void *accept_ctx;      /* Accept(Ex) */
    NDK_FN_REQUEST_COMPLETION disconnect_cb; void *disconnect_ctx;  /* Disconnect */
    NDK_FN_DISCONNECT_EVENT_CALLBACK disc_event;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_event_ex;
    void *disc_event_ctx;
    bool disc_event_done;             /* §3.6: at most once */
    bool local_disconnect;            /* NdkDisconnect or close came first: no disconnect event */
    bool peer_gone;                   /* peer FIN / reset seen */
    bool counted_active;              /* counted in ActiveConnection */
    int first_error;                  /* first failure (-errno), kept */
    bool have_peer_data;              /* peer's Request / Reply / reject was parsed */
    bool peer_rejected;               /* the peer's Reply had R = 1 */
    bool establish_after_tx;          /* go ESTABLISHED once txbuf is out (Accept v1, Write RTR) */
    bool internal_ref;                /* passive, not yet delivered: the CM holds the creation ref */
    bool established_once;            /* reached ESTABLISHED (its QP is spent afterwards) */
    bool sock_handed;                 /* the QP owns the socket (and its epoll registration) */
    unsigned actions;                 /* IW_CM_ACT_*: work for the progress thread */
    int fail_err;                     /* with IW_CM_ACT_FAIL */
    struct iw_work work;              /* runs the actions on the progress thread */
};
#define IW_CM_ACT_KILL        0x1u    /* connector closed: abort and release */
#define IW_CM_ACT_TX          0x2u    /* something was put in txbuf */
#define IW_CM_ACT_TIMEOUT     0x4u    /* CM deadline passed */
#define IW_CM_ACT_FAIL        0x8u    /* data path / flush reported the connection broken */
#define IW_CM_ACT_DISCONNECT  0x10u   /* NdkDisconnect: send FIN */
#define IW_CM_ACT_ESTABLISH   0x20u   /* establish now (Accept without P2P, CompleteConnect v1) */
static inline struct iw_connector *to_iw_connector(NDK_CONNECTOR *c)
{
    return ndk_container_of(c, struct iw_connector, ndk);
}
#define IW_CONN_ANTE_QP 0
#define IW_CONN_ANTE_PARENT 1         /* listener or shared endpoint */

struct iw_listener {
    NDK_LISTENER ndk;
    struct iw_obj obj;
    struct ndk_list link;             /* dev->listeners (dev->lock) */
    struct iw_pollable poll;          /* listening socket */
    bool polled;
    /* protected by dev->lock */
    bool listening;
    bool paused;                      /* NdkControlConnectEvents(TRUE) (§2.12) */
    uint64_t backoff_until;           /* accept() out of fds: not polled until then (0 = polled) */
    struct iw_timer backoff_timer;    /* armed while backoff_until is set */
    bool backoff_logged;              /* that was logged once already */
    struct iw_endpoint *ep;
    SOCKADDR_INET local;
    NDK_FN_CONNECT_EVENT_CALLBACK connect_event;
    void *connect_event_ctx;
    struct ndk_list pending;          /* iw_connector (internal) waiting for their MPA Request */
    struct iw_work kill_work;
};
static inline struct iw_listener *to_iw_listener(NDK_LISTENER *l)
{
    return ndk_container_of(l, struct iw_listener, ndk);
}

struct iw_shared_endpoint {
    NDK_SHARED_ENDPOINT ndk;
    struct iw_obj obj;
    struct iw_endpoint *ep;           /* dev->lock */
    SOCKADDR_INET local;
    int fd;                           /* bound placeholder socket that reserves the port in the OS */
};
static inline struct iw_shared_endpoint *to_iw_shared_endpoint(NDK_SHARED_ENDPOINT *s)
{
    return ndk_container_of(s, struct iw_shared_endpoint, ndk);
}

NTSTATUS iw_create_connector(NDK_ADAPTER *a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_CONNECTOR **out);
NTSTATUS iw_create_listener(NDK_ADAPTER *a, NDK_FN_CONNECT_EVENT_CALLBACK ev, PVOID evctx,
                            NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_LISTENER **out);
NTSTATUS iw_create_shared_endpoint(NDK_ADAPTER *a, CONST PSOCKADDR addr, ULONG len, NDK_FN_CREATE_COMPLETION cb,
                                   PVOID ctx, NDK_SHARED_ENDPOINT **out);
/* A listener accepted fd from peer (connector.c): it becomes a passive connector that waits for the MPA
 * Request (§3.5: delivered as a connect event only once it arrived). Progress thread, no lock
 * held. Returns 0, -ENOMEM (fd closed; accept the next), -ESHUTDOWN (the listener stopped; fd
 * closed). */
int iw_connector_accept_request(struct iw_listener *l, int fd, const SOCKADDR_INET *peer);
/* The 4-tuple index (dev->conn_hash): index c under its local and peer address, take it out
 * (at CLOSED and destroy; idempotent), find a connector not CLOSED with that 4-tuple other
 * than self. dev->lock held; never block. */
void iw_connector_index_locked(struct iw_connector *c);
void iw_connector_unindex_locked(struct iw_connector *c);
struct iw_connector *iw_connector_find_locked(struct iw_device *dev, const SOCKADDR_INET *local,
                                              const SOCKADDR_INET *peer, const struct iw_connector *self);
/* Aborts a passive connector not yet delivered (its listener closes). dev->lock held. */
void iw_cm_abort_locked(struct iw_connector *c);

/* The QP, its engines or a polling consumer found the connection broken (fatal RX error after sending a
 * TERMINATE, or a socket error on TX from a posting thread). The CM tears the connection down on
 * the progress thread (disconnect event to the consumer when it did not start it). Any thread. */
void iw_cm_connection_failed(struct iw_qp *qp, int err);

/* ---- LAM (adapter.c) ---- */
NTSTATUS iw_build_lam(NDK_ADAPTER *a, MDL *mdl, SIZE_T len, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx,
                      NDK_LOGICAL_ADDRESS_MAPPING *lam, ULONG *lam_size, ULONG *fbo);
void iw_release_lam(NDK_ADAPTER *a, NDK_LOGICAL_ADDRESS_MAPPING *lam);

#endif /* IWARP_H */
