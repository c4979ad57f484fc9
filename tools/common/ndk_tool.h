/*
 * ndk_tool.h - shared plumbing of the OpenNDK admin and performance tools (ndkping, ndkperf):
 * address parsing, choosing and opening the adapter that serves an address, blocking wrappers
 * around the asynchronous NDK calls, CQ waiting (notification or busy poll), connections and
 * listeners, timing / CPU accounting and JSON output.
 *
 * Threading: NDK callbacks never wait; every wait happens on the tool's own threads. Most
 * callbacks only record state and signal a condition variable. The exception is
 * ndk_tool_cq_run in notification mode, which lends a CQ (and the QPs feeding it) to the CQ
 * notification callback: the caller's handler then runs inside that callback, as NDK consumers
 * do, to save the second wake-up of a waiting thread. At any moment a CQ and its QPs have one
 * owner, either one tool thread or the notification callback, and only the owner polls, arms
 * and posts (NDKPI §5.4).
 */
#ifndef NDK_TOOL_H
#define NDK_TOOL_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ndkpi.h>
#include <ndk/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Default time allowed for one asynchronous NDK request (create, register, close...). */
#define NDK_TOOL_OP_TIMEOUT_MS      10000
/* Connection establishment: the provider's own connect timeout plus margin. */
#define NDK_TOOL_CONNECT_TIMEOUT_MS 20000
#define NDK_TOOL_INFINITE           (-1)

/* ---- program name, errors, stop flag ---- */

/* Name used in error lines ("ndkping: ..."). */
void ndk_tool_set_progname(const char *name);
const char *ndk_tool_progname(void);
/* Prints "<prog>: <message>\n" on stderr. */
void ndk_tool_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Status name for messages ("STATUS_CONNECTION_REFUSED"). */
const char *ndk_tool_status(NTSTATUS st);

/* Set by SIGINT/SIGTERM once ndk_tool_install_signals() ran; waits return STATUS_CANCELLED. */
extern volatile sig_atomic_t ndk_tool_stop;
void ndk_tool_install_signals(void);
/* Reads ndk_tool_stop (atomically: any thread may ask). */
bool ndk_tool_stopped(void);

/* ---- addresses ---- */

/* Parses "ADDR", "ADDR:PORT", "[V6]:PORT", "[V6]", "V6" (more than one colon, no port),
 * ":PORT" and "" (the last two give the wildcard of family AF_UNSPEC, i.e. "any").
 * default_port applies when no port is given. Returns 0, or -1 with a reason in why. */
int ndk_tool_parse_addr(const char *text, uint16_t default_port, SOCKADDR_INET *out, char *why, size_t whylen);
/* Address without port ("127.0.0.1", "::1"); same syntax as inet_pton plus "%scope". */
int ndk_tool_parse_ip(const char *text, SOCKADDR_INET *out);
ULONG ndk_tool_addr_len(const SOCKADDR_INET *a);
uint16_t ndk_tool_addr_port(const SOCKADDR_INET *a);
void ndk_tool_addr_set_port(SOCKADDR_INET *a, uint16_t port);
bool ndk_tool_addr_is_any(const SOCKADDR_INET *a);
bool ndk_tool_addr_is_loopback(const SOCKADDR_INET *a);
/* "1.2.3.4:7174", "[::1]:7174"; with_port false drops the port. Returns buf. */
const char *ndk_tool_addr_str(const SOCKADDR_INET *a, bool with_port, char *buf, size_t len);
#define NDK_TOOL_ADDRSTRLEN 80

/* ---- runtime and adapters ---- */

typedef struct ndk_tool_adapter {
    ndk_rt           *rt;
    ndk_rt_adapter_id id;
    NDK_ADAPTER      *adapter;
    NDK_ADAPTER_INFO  info;           /* from NdkQueryAdapterInfo on the open instance */
    char              provider[NDK_PROVIDER_NAME_MAX];
    char              ifname[NDK_PROVIDER_IFNAME_MAX];
    ULONG             ifindex;
} ndk_tool_adapter;

/* Opens the runtime for a one-shot tool (no PnP monitor; warnings to stderr). */
NTSTATUS ndk_tool_rt_open(ndk_rt **out);

/* Chooses the adapter for a connection: the one owning `local` when given; otherwise the one
 * owning the source address the kernel routes `dest` from (for a local or loopback destination
 * that is the destination address itself). ifindex (nonzero) restricts to that interface.
 * *src receives the local address to connect from (port 0). STATUS_OBJECT_NAME_NOT_FOUND and a
 * reason in why when no adapter fits. */
NTSTATUS ndk_tool_pick_adapter(ndk_rt *rt, const SOCKADDR_INET *local, const SOCKADDR_INET *dest,
                               const char *provider, ULONG ifindex, ndk_rt_adapter_id *id, SOCKADDR_INET *src,
                               char *why, size_t whylen);
/* Opens an NDK_ADAPTER instance at the version the provider advertises and queries its info. */
NTSTATUS ndk_tool_adapter_open(ndk_rt *rt, ndk_rt_adapter_id id, ndk_tool_adapter *out);
void ndk_tool_adapter_close(ndk_tool_adapter *a);
/* A client's adapter: ndk_tool_pick_adapter, then ndk_tool_adapter_open. On failure prints
 * "connect to DST failed: <why>" and returns the status. */
NTSTATUS ndk_tool_client_adapter(ndk_rt *rt, const SOCKADDR_INET *local, const SOCKADDR_INET *dst,
                                 const char *provider, ULONG ifindex, ndk_tool_adapter *ad, SOCKADDR_INET *src);

/* ---- blocking wrappers for asynchronous requests (§0.4) ---- */

/* One asynchronous request. Heap-allocated and reference-counted so that a late completion
 * after a timeout never touches freed memory. */
typedef struct ndk_tool_op ndk_tool_op;
ndk_tool_op *ndk_tool_op_new(void);
/* Completion callbacks to pass to the provider with the op as RequestContext. */
void ndk_tool_op_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj);
void ndk_tool_op_request_done(PVOID ctx, NTSTATUS status);
void ndk_tool_op_close_done(PVOID ctx);
/* Given what the provider call returned: waits for the completion when it is STATUS_PENDING
 * (STATUS_IO_TIMEOUT after timeout_ms, STATUS_CANCELLED on ndk_tool_stop when interruptible),
 * releases the op and returns the final status; *obj (optional) receives a created object. */
NTSTATUS ndk_tool_op_finish(ndk_tool_op *op, NTSTATUS returned, int timeout_ms, NDK_OBJECT_HEADER **obj);

/* Closes any NDK object (not the adapter) and waits for its close completion. */
NTSTATUS ndk_tool_close(NDK_OBJECT_HEADER *obj, int timeout_ms);
#define NDK_TOOL_CLOSE(p) ((p) ? ndk_tool_close(&(p)->Header, NDK_TOOL_OP_TIMEOUT_MS) : STATUS_SUCCESS)

NTSTATUS ndk_tool_create_pd(NDK_ADAPTER *ad, NDK_PD **out);
NTSTATUS ndk_tool_create_connector(NDK_ADAPTER *ad, NDK_CONNECTOR **out);
NTSTATUS ndk_tool_create_qp(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, PVOID qp_ctx, ULONG rq_depth, ULONG iq_depth,
                            ULONG rsge, ULONG isge, ULONG inline_size, NDK_QP **out);

/* ---- registered memory ---- */

typedef struct ndk_tool_mem {
    uint8_t *buf;
    size_t   len;
    MDL     *mdl;
    NDK_MR  *mr;
    UINT32   ltoken;    /* for SGEs */
    UINT32   rtoken;    /* for the peer */
    bool     owned;     /* buf was allocated by ndk_tool_mem_register */
} ndk_tool_mem;

/* Registers len bytes (page-aligned zeroed allocation when buf is NULL) with NDK_MR_FLAG_*. */
NTSTATUS ndk_tool_mem_register(NDK_PD *pd, void *buf, size_t len, ULONG flags, ndk_tool_mem *m);
void ndk_tool_mem_release(ndk_tool_mem *m);
static inline NDK_SGE ndk_tool_sge(const ndk_tool_mem *m, size_t off, ULONG len)
{
    NDK_SGE s;
    s.VirtualAddress = m->buf + off;
    s.Length = len;
    s.MemoryRegionToken = m->ltoken;
    return s;
}

/* ---- completion queues ---- */

/* Handles n completions taken from the CQ; returns false when it wants no more (the run is
 * over). Runs on whichever side owns the CQ: the thread in ndk_tool_cq_run, or the CQ
 * notification callback on a provider thread. It may post to the QPs of the CQ; it must not
 * block, poll or arm the CQ itself, or close anything. */
typedef bool (*ndk_tool_cq_handler)(void *ctx, NDK_RESULT *res, ULONG n);
/* Called now and then on the thread in ndk_tool_cq_run (progress lines); while the callback
 * owns the CQ it runs concurrently with the handler, so it may only read atomics. */
typedef void (*ndk_tool_cq_tick)(void *ctx);

typedef struct ndk_tool_cq {
    NDK_CQ         *cq;
    bool            poll;           /* busy-poll instead of arming for notifications */
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    uint64_t        events;         /* notifications and kicks, under lock */
    NTSTATUS        cq_error;       /* CqStatus of a failed notification */
    volatile int    disconnected;   /* set through ndk_tool_cq_kick by a disconnect event */
    uint64_t        notifications;  /* notifications delivered, under lock */
    /* ndk_tool_cq_run in the callback: */
    bool            cb_owned;       /* under lock: the notification callback owns the CQ */
    bool            cb_busy;        /* under lock: the callback is running the handler */
    int             cb_reclaim;     /* atomic: the run's thread wants the CQ back */
    ndk_tool_cq_handler handler;    /* set before cb_owned, under lock */
    void           *handler_ctx;
    uint64_t        batches;        /* atomic: batches given to a handler (progress) */
} ndk_tool_cq;

NTSTATUS ndk_tool_cq_create(NDK_ADAPTER *ad, ULONG depth, bool poll, ndk_tool_cq **out);
/* Closes the CQ (after its QPs) and frees the wrapper. */
void ndk_tool_cq_destroy(ndk_tool_cq *c);
/* Non-blocking: takes up to max results. */
ULONG ndk_tool_cq_poll(ndk_tool_cq *c, NDK_RESULT *res, ULONG max);
/* Waits until at least one result is available (notification after NdkArmCq(ANY), or busy
 * poll) and returns how many were taken. Returns 0 with *st set to STATUS_IO_TIMEOUT,
 * STATUS_CANCELLED (ndk_tool_stop), STATUS_CONNECTION_DISCONNECTED (peer disconnected and the
 * CQ is empty) or the CQ's failure status. */
ULONG ndk_tool_cq_wait(ndk_tool_cq *c, NDK_RESULT *res, ULONG max, int timeout_ms, NTSTATUS *st);
/* Wakes a waiter (from a callback); with disconnected, marks the connection as gone. */
void ndk_tool_cq_kick(ndk_tool_cq *c, bool disconnected);
/* Feeds the CQ's completions to handler until it returns false. A busy-polling CQ, or
 * in_callback false: on the calling thread, like a loop over ndk_tool_cq_wait. Otherwise the
 * CQ is handed to its notification callback, which runs handler, re-arms and polls once more,
 * while the calling thread sleeps until handler is finished. Either way the CQ and its QPs are
 * the calling thread's again on return (no callback is inside handler any more). Returns
 * STATUS_SUCCESS once handler returned false; STATUS_IO_TIMEOUT (no completion for
 * idle_timeout_ms), STATUS_CANCELLED (ndk_tool_stop), STATUS_CONNECTION_DISCONNECTED (peer
 * gone and the CQ drained) or the CQ's failure status otherwise. Calling thread, blocks. */
NTSTATUS ndk_tool_cq_run(ndk_tool_cq *c, bool in_callback, int idle_timeout_ms, ndk_tool_cq_handler handler,
                         ndk_tool_cq_tick tick, void *ctx);

/* ---- connections ---- */

typedef struct ndk_tool_conn {
    ndk_tool_adapter *ad;
    NDK_PD           *pd;
    ndk_tool_cq      *cq;             /* one CQ for receives and initiator requests */
    NDK_QP           *qp;
    NDK_CONNECTOR    *connector;
    bool              established;
    ULONG             ird, ord;       /* effective read limits */
    SOCKADDR_INET     local, peer;
    uint8_t           peer_data[512]; /* peer's private data (connect or accept) */
    ULONG             peer_data_len;  /* RDS as the provider reports it */
} ndk_tool_conn;

/* Creates PD, CQ (rq_depth + iq_depth entries) and QP on the adapter. */
NTSTATUS ndk_tool_conn_init(ndk_tool_conn *c, ndk_tool_adapter *ad, ULONG rq_depth, ULONG iq_depth, ULONG rsge,
                            ULONG isge, ULONG inline_size, bool poll);
/* Active side: NdkConnect, NdkGetConnectionData (peer_data), NdkCompleteConnect. When the peer
 * rejects (STATUS_CONNECTION_REFUSED), peer_data holds the reject's private data. */
NTSTATUS ndk_tool_conn_connect(ndk_tool_conn *c, const SOCKADDR_INET *src, const SOCKADDR_INET *dst, ULONG ird,
                               ULONG ord, const void *pdata, ULONG pdata_len, int timeout_ms);
/* Reads an incoming connector's private data and the requested read limits (before accept). */
NTSTATUS ndk_tool_connector_data(NDK_CONNECTOR *conn, ULONG *ird, ULONG *ord, void *buf, ULONG *len);
/* Rejects an incoming connection request (optional private data: the reason, for the peer) and
 * closes the connector. Blocks. */
void ndk_tool_reject(NDK_CONNECTOR *incoming, const void *pdata, ULONG pdata_len);
/* Passive side: takes ownership of connector and accepts it on c's QP. */
NTSTATUS ndk_tool_conn_accept(ndk_tool_conn *c, NDK_CONNECTOR *connector, ULONG ird, ULONG ord, const void *pdata,
                              ULONG pdata_len, int timeout_ms);
/* Graceful disconnect when established, then closes connector, QP, CQ and PD (memory regions
 * of the PD must have been released first). Safe on a partly initialised connection. */
void ndk_tool_conn_close(ndk_tool_conn *c);
static inline bool ndk_tool_conn_disconnected(const ndk_tool_conn *c)
{
    /* Written by the disconnect callback on a provider thread. */
    return c->cq && __atomic_load_n(&c->cq->disconnected, __ATOMIC_ACQUIRE) != 0;
}

/* ---- listeners (servers) ---- */

typedef struct ndk_tool_server ndk_tool_server;
/* Listens on addr through the adapters that serve it. A wildcard address listens on every
 * adapter of that family; AF_UNSPEC (no address given) listens on IPv4 and IPv6. */
NTSTATUS ndk_tool_server_start(ndk_rt *rt, const SOCKADDR_INET *addr, const char *provider, ULONG ifindex,
                               ndk_tool_server **out, char *why, size_t whylen);
/* Next incoming connection request; STATUS_IO_TIMEOUT / STATUS_CANCELLED when none came. */
NTSTATUS ndk_tool_server_next(ndk_tool_server *s, int timeout_ms, NDK_CONNECTOR **conn, ndk_tool_adapter **ad);
/* Human-readable list of where the server listens ("127.0.0.1:7174 (lo), [::1]:7174 (lo)"). */
const char *ndk_tool_server_where(ndk_tool_server *s, char *buf, size_t len);
/* Stops listening, rejects unanswered requests and closes the adapters. Every accepted
 * connection must have been closed first. */
void ndk_tool_server_stop(ndk_tool_server *s);

/* ---- time, CPU, statistics ---- */

uint64_t ndk_tool_now_ns(void);
/* CPU time (user + system) of the whole process, providers' threads included, in µs. */
uint64_t ndk_tool_cpu_us(void);
/* Sorts a copy and returns the value at fraction q (0..1) of samples (ns). */
uint64_t ndk_tool_percentile(uint64_t *sorted, size_t n, double q);
void ndk_tool_sort_u64(uint64_t *v, size_t n);
/* "64", "4K", "1M": sizes as perftest prints them are plain numbers; this is for headings. */
const char *ndk_tool_size_str(uint64_t bytes, char *buf, size_t len);
/* Parses "4096", "4k", "64K", "1m", "1M", "1g"; returns 0 or -1. */
int ndk_tool_parse_size(const char *s, uint64_t *out);

/* ---- JSON writer ---- */

typedef struct ndk_tool_json {
    FILE *f;
    int   depth;
    bool  first[32];
} ndk_tool_json;

void ndk_tool_json_init(ndk_tool_json *j, FILE *f);
void ndk_tool_json_open(ndk_tool_json *j, const char *key, char bracket);   /* key NULL inside arrays */
void ndk_tool_json_close(ndk_tool_json *j, char bracket);
void ndk_tool_json_str(ndk_tool_json *j, const char *key, const char *v);
void ndk_tool_json_u64(ndk_tool_json *j, const char *key, uint64_t v);
void ndk_tool_json_dbl(ndk_tool_json *j, const char *key, double v);
void ndk_tool_json_bool(ndk_tool_json *j, const char *key, bool v);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_H */
