/*
 * example.h - the plumbing every OpenNDK example needs, in one header so that each example's .c
 * file shows only what it is about. Copy it along with the example you start from.
 *
 * Only the public API is used: <ndkpi.h> (the NDKPI, as on Windows) and <ndk/runtime.h> (libndk,
 * which plays NDIS: it finds adapters and opens NDK_ADAPTER instances).
 *
 * The one rule behind most of this file (docs/ndkpi.md, "The asynchronous contract"; Microsoft's
 * "NDKPI Object Lifetime Requirements"): a call that takes a completion callback either finishes
 * inline - any status but STATUS_PENDING, and then the callback is NOT called - or returns
 * STATUS_PENDING and calls the callback exactly once later, possibly on another thread, possibly
 * before the call has returned. ex_finish() turns that into a blocking call for these programs.
 *
 * Errors during set-up end the program with a message (ex_die): an example must not hide them.
 */
#ifndef NDK_EXAMPLE_H
#define NDK_EXAMPLE_H

#include <ndkpi.h>
#include <ndk/runtime.h>

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EX_TIMEOUT_S 10                      /* how long any single step may take */

static const char *ex_prog = "example";      /* first word of every line we print */

static inline void ex_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void ex_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", ex_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);                                 /* no teardown: the peer sees the connection drop */
}

static inline void ex_check(NTSTATUS st, const char *what)
{
    if (st != STATUS_SUCCESS)
        ex_die("%s: %s", what, ndk_rt_status_name(st));
}

/* A deadline EX_TIMEOUT_S from now, on the clock ex_cond_init's conditions wait on. */
static inline struct timespec ex_deadline(int seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += seconds;
    return ts;
}

static inline void ex_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);   /* immune to wall-clock steps */
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

/* ---- one asynchronous request ---- */
struct ex_wait {
    pthread_mutex_t    lock;                 /* guards done, status, obj */
    pthread_cond_t     cond;
    int                done;
    NTSTATUS           status;
    NDK_OBJECT_HEADER *obj;                  /* what a create completion handed over */
};

static inline struct ex_wait *ex_wait_init(struct ex_wait *w)
{
    pthread_mutex_init(&w->lock, NULL);
    ex_cond_init(&w->cond);
    w->done = 0;
    w->status = STATUS_PENDING;
    w->obj = NULL;
    return w;
}

/* The three completion shapes (NDK_FN_CREATE_COMPLETION, _REQUEST_COMPLETION, _CLOSE_COMPLETION).
 * They run on a provider thread or inside the call: signal and return, never block. */
static inline void ex_signal(struct ex_wait *w, NTSTATUS st, NDK_OBJECT_HEADER *obj)
{
    pthread_mutex_lock(&w->lock);
    w->done = 1;
    w->status = st;
    w->obj = obj;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}
static inline VOID ex_create_done(PVOID ctx, NTSTATUS st, NDK_OBJECT_HEADER *obj) { ex_signal(ctx, st, obj); }
static inline VOID ex_request_done(PVOID ctx, NTSTATUS st) { ex_signal(ctx, st, NULL); }
static inline VOID ex_close_done(PVOID ctx) { ex_signal(ctx, STATUS_SUCCESS, NULL); }
static inline VOID ex_close_ignored(PVOID ctx) { (void)ctx; }     /* for a close nobody waits for */

/* Finishes a request issued with w as its RequestContext. w must be initialised before the call
 * is made (pass ex_wait_init(&w) as the call's context argument): the completion may run on
 * another thread before the call even returns. `returned` is what the call returned.
 * Blocks. A request that never completes ends the program: w must outlive it. */
static inline NTSTATUS ex_finish(struct ex_wait *w, NTSTATUS returned)
{
    NTSTATUS st = returned;
    if (returned == STATUS_PENDING) {
        struct timespec until = ex_deadline(EX_TIMEOUT_S);
        pthread_mutex_lock(&w->lock);
        while (!w->done)
            if (pthread_cond_timedwait(&w->cond, &w->lock, &until) == ETIMEDOUT)
                ex_die("a request did not complete within %d s", EX_TIMEOUT_S);
        st = w->status;
        pthread_mutex_unlock(&w->lock);
    }
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    return st;
}

/* For create calls: an inline success returns the object through the pp argument (inline_obj);
 * a pending one hands it to the completion instead. Dies with `what` on failure. */
static inline void *ex_created(struct ex_wait *w, NTSTATUS returned, void *inline_obj, const char *what)
{
    ex_check(ex_finish(w, returned), what);
    return returned == STATUS_PENDING ? (void *)w->obj : inline_obj;
}

/* Closes any NDK object and waits for its close completion; NULL is fine. Close children before
 * parents (connector, QP, SRQ, CQ, MR, PD): a parent's close otherwise stays pending until its
 * last child is closed (docs/ndkpi.md, "Teardown"). */
static inline void ex_close(void *object)
{
    NDK_OBJECT_HEADER *h = object;
    NDK_FN_CLOSE_OBJECT close_fn;
    struct ex_wait w;
    if (!h)
        return;
    switch (h->ObjectType) {
    case NdkObjectTypeConnector: close_fn = ((NDK_CONNECTOR *)h)->Dispatch->NdkCloseConnector; break;
    case NdkObjectTypeListener: close_fn = ((NDK_LISTENER *)h)->Dispatch->NdkCloseListener; break;
    case NdkObjectTypeQp: close_fn = ((NDK_QP *)h)->Dispatch->NdkCloseQp; break;
    case NdkObjectTypeSrq: close_fn = ((NDK_SRQ *)h)->Dispatch->NdkCloseSrq; break;
    case NdkObjectTypeCq: close_fn = ((NDK_CQ *)h)->Dispatch->NdkCloseCq; break;
    case NdkObjectTypeMr: close_fn = ((NDK_MR *)h)->Dispatch->NdkCloseMr; break;
    case NdkObjectTypePd: close_fn = ((NDK_PD *)h)->Dispatch->NdkClosePd; break;
    default: ex_die("ex_close: object type %d is not closed here", (int)h->ObjectType);
    }
    NTSTATUS st = close_fn(h, ex_close_done, ex_wait_init(&w));   /* w is ready before the call */
    ex_check(ex_finish(&w, st), "closing an object");
}

/* ---- addresses: "127.0.0.1", "127.0.0.1:4000", "::1", "[::1]:4000" ---- */
static inline ULONG ex_addr_len(const SOCKADDR_INET *a)
{
    return a->si_family == AF_INET6 ? (ULONG)sizeof(SOCKADDR_IN6) : (ULONG)sizeof(SOCKADDR_IN);
}

static inline USHORT ex_addr_port(const SOCKADDR_INET *a)
{
    return ntohs(a->si_family == AF_INET6 ? a->Ipv6.sin6_port : a->Ipv4.sin_port);
}

static inline void ex_addr_set_port(SOCKADDR_INET *a, USHORT port)
{
    if (a->si_family == AF_INET6)
        a->Ipv6.sin6_port = htons(port);
    else
        a->Ipv4.sin_port = htons(port);
}

static inline int ex_addr_parse(const char *text, USHORT default_port, SOCKADDR_INET *out)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *port = NULL;
    memset(out, 0, sizeof *out);
    if (text[0] == '[') {                                    /* [v6]:port */
        const char *end = strchr(text, ']');
        if (!end || (size_t)(end - text - 1) >= sizeof host || (end[1] && end[1] != ':'))
            return -1;
        snprintf(host, sizeof host, "%.*s", (int)(end - text - 1), text + 1);
        port = end[1] ? end + 2 : NULL;
    } else if (strchr(text, ':') != strrchr(text, ':')) {    /* bare v6, no port */
        snprintf(host, sizeof host, "%s", text);
    } else {                                                 /* v4[:port] */
        const char *colon = strchr(text, ':');
        snprintf(host, sizeof host, "%.*s", colon ? (int)(colon - text) : (int)strlen(text), text);
        port = colon ? colon + 1 : NULL;
    }
    if (inet_pton(AF_INET6, host, &out->Ipv6.sin6_addr) == 1)
        out->si_family = AF_INET6;
    else if (inet_pton(AF_INET, host, &out->Ipv4.sin_addr) == 1)
        out->si_family = AF_INET;
    else
        return -1;
    char *end = NULL;
    long p = port ? strtol(port, &end, 10) : default_port;
    if ((port && (!*port || *end)) || p < 0 || p > 65535)
        return -1;
    ex_addr_set_port(out, (USHORT)p);
    return 0;
}

/* "127.0.0.1:4000" / "[::1]:4000", or without the port. buf: at least 64 bytes. */
static inline const char *ex_addr_str(const SOCKADDR_INET *a, int with_port, char *buf)
{
    char ip[INET6_ADDRSTRLEN];
    int v6 = a->si_family == AF_INET6;
    inet_ntop(a->si_family, v6 ? (const void *)&a->Ipv6.sin6_addr : (const void *)&a->Ipv4.sin_addr, ip, sizeof ip);
    if (!with_port)
        snprintf(buf, 64, "%s", ip);
    else
        snprintf(buf, 64, v6 ? "[%s]:%u" : "%s:%u", ip, ex_addr_port(a));
    return buf;
}

/* The command line all examples share: -s ADDR[:PORT] (server) or -c ADDR[:PORT] (client); -n
 * COUNT where the example takes a count, -f where it takes the "first" flag. */
struct ex_args {
    int           server;
    SOCKADDR_INET addr;
    int           count;
    int           first;
};

static inline void ex_parse_args(int argc, char **argv, USHORT port, const char *extra, struct ex_args *a)
{
    int opt, given = 0;
    char optstring[16];
    snprintf(optstring, sizeof optstring, "s:c:h%s", extra ? extra : "");
    while ((opt = getopt(argc, argv, optstring)) != -1) {
        if (opt == 's' || opt == 'c') {
            a->server = opt == 's';
            if (ex_addr_parse(optarg, port, &a->addr) != 0)
                ex_die("bad address '%s' (expected 192.0.2.1, 192.0.2.1:%u, 2001:db8::1 or [2001:db8::1]:%u)",
                       optarg, port, port);
            given = 1;
        } else if (opt == 'n') {
            a->count = atoi(optarg);
        } else if (opt == 'f') {
            a->first = 1;
        } else {
            fprintf(stderr, "usage: %s -s ADDR[:PORT] | -c ADDR[:PORT]%s\n", ex_prog,
                    !extra ? "" : strchr(extra, 'n') ? " [-n COUNT]" : " [-f]");
            exit(opt == 'h' ? 0 : 2);
        }
    }
    if (!given || optind != argc) {
        fprintf(stderr, "%s: give -s ADDR[:PORT] (server) or -c ADDR[:PORT] (client)\n", ex_prog);
        exit(2);
    }
}

/* ---- the adapter ---- */

/* The local address the kernel would use to reach dst (a UDP socket's connect picks it). */
static inline void ex_route_source(const SOCKADDR_INET *dst, SOCKADDR_INET *src)
{
    socklen_t len = sizeof *src;
    int fd = socket(dst->si_family, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr *)dst, ex_addr_len(dst)) != 0 ||
        getsockname(fd, (struct sockaddr *)src, &len) != 0)
        ex_die("no route to the server: %s", strerror(errno));
    close(fd);
    ex_addr_set_port(src, 0);                /* the provider picks the source port */
}

/* Opens the runtime and an NDK_ADAPTER instance on the adapter that owns `local` (docs/ndkpi.md,
 * "The object model"; man libndk(3)). We ask for NDKPI 2.0 or any later minor. */
static inline NDK_ADAPTER *ex_open_adapter(ndk_rt **rt, const SOCKADDR_INET *local, NDK_ADAPTER_INFO *info)
{
    ndk_rt_adapter_id id;
    NDK_ADAPTER *ad;
    char a[64];
    ULONG size = sizeof *info;
    ex_check(ndk_rt_open(NULL, rt), "opening the NDK runtime");
    if (ndk_rt_find_adapter_by_address(*rt, (const struct sockaddr *)local, NULL, &id) != STATUS_SUCCESS)
        ex_die("no NDK adapter has address %s (ndkinfo lists them)", ex_addr_str(local, 0, a));
    ex_check(ndk_rt_open_adapter(*rt, id, (NDK_VERSION){ NDK_VERSION_2_MAJOR, 0 }, &ad), "opening the adapter");
    ex_check(ad->Dispatch->NdkQueryAdapterInfo(ad, info, &size), "NdkQueryAdapterInfo");
    return ad;
}

/* ---- registered memory (docs/ndkpi.md, "Memory registration") ---- */
struct ex_mem {
    unsigned char *buf;
    ULONG          len;
    MDL           *mdl;                      /* describes buf to the provider */
    NDK_MR        *mr;
    UINT32         token;                    /* local token: goes in our own SGEs */
    UINT32         remote_token;             /* what a peer needs to Read or Write buf */
};

static inline void ex_mem_register(NDK_PD *pd, ULONG len, ULONG flags, struct ex_mem *m)
{
    struct ex_wait w;
    NDK_MR *mr = NULL;
    memset(m, 0, sizeof *m);
    m->len = len;
    if (posix_memalign((void **)&m->buf, 4096, len) != 0)
        ex_die("out of memory");
    memset(m->buf, 0, len);
    m->mdl = IoAllocateMdl(m->buf, len, FALSE, FALSE, NULL);
    if (!m->mdl)
        ex_die("out of memory");
    NTSTATUS st = pd->Dispatch->NdkCreateMr(pd, FALSE, ex_create_done, ex_wait_init(&w), &mr);
    m->mr = ex_created(&w, st, mr, "NdkCreateMr");
    st = m->mr->Dispatch->NdkRegisterMr(m->mr, m->mdl, len, flags, ex_request_done, ex_wait_init(&w));
    ex_check(ex_finish(&w, st), "NdkRegisterMr");
    m->token = m->mr->Dispatch->NdkGetLocalTokenFromMr(m->mr);
    m->remote_token = m->mr->Dispatch->NdkGetRemoteTokenFromMr(m->mr);
}

/* Only once nothing in flight uses it: after the QP that used it is closed. */
static inline void ex_mem_release(struct ex_mem *m)
{
    struct ex_wait w;
    if (!m->mr)
        return;
    NTSTATUS st = m->mr->Dispatch->NdkDeregisterMr(m->mr, ex_request_done, ex_wait_init(&w));
    ex_check(ex_finish(&w, st), "NdkDeregisterMr");
    ex_close(m->mr);
    IoFreeMdl(m->mdl);
    free(m->buf);
    memset(m, 0, sizeof *m);
}

static inline NDK_SGE ex_sge(const struct ex_mem *m, ULONG offset, ULONG len)
{
    NDK_SGE sge = { .VirtualAddress = m->buf + offset, .Length = len, .MemoryRegionToken = m->token };
    return sge;
}

/* ---- a CQ waited on without spinning: arm, look again, sleep until the notification ---- */
struct ex_cq {
    NDK_CQ         *cq;
    pthread_mutex_t lock;                    /* guards events and peer_gone */
    pthread_cond_t  cond;
    unsigned        events;                  /* notifications and disconnects seen */
    int             peer_gone;               /* the disconnect event came */
};

/* NDK_FN_CQ_NOTIFICATION_CALLBACK: provider thread, must not block. */
static inline VOID ex_cq_notify(PVOID ctx, NTSTATUS cq_status)
{
    struct ex_cq *c = ctx;
    (void)cq_status;                         /* CQ health; a failed request shows in its result */
    pthread_mutex_lock(&c->lock);
    c->events++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* NDK_FN_DISCONNECT_EVENT_CALLBACK with the connection's ex_cq as context: the peer left. */
static inline VOID ex_peer_disconnected(PVOID ctx)
{
    struct ex_cq *c = ctx;
    pthread_mutex_lock(&c->lock);
    c->peer_gone = 1;
    c->events++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static inline void ex_cq_create(NDK_ADAPTER *ad, ULONG depth, struct ex_cq *c)
{
    struct ex_wait w;
    NDK_CQ *cq = NULL;
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    ex_cond_init(&c->cond);
    NTSTATUS st = ad->Dispatch->NdkCreateCq(ad, depth, ex_cq_notify, c, NULL, ex_create_done, ex_wait_init(&w), &cq);
    c->cq = ex_created(&w, st, cq, "NdkCreateCq");
}

enum { EX_GOT = 1, EX_TIMEOUT = 0, EX_PEER_GONE = -1 };

/* The next completion into *r. EX_PEER_GONE when the CQ is empty and the peer has disconnected.
 * Arming and then looking once more closes the race with a completion that arrived just before
 * the arm (docs/ndkpi.md, "CQ notifications"; Microsoft: "NDK_FN_ARM_CQ"). Blocks. */
static inline int ex_cq_next(struct ex_cq *c, NDK_RESULT *r, int timeout_s)
{
    struct timespec until = ex_deadline(timeout_s);
    for (;;) {
        pthread_mutex_lock(&c->lock);
        unsigned seen = c->events;
        int gone = c->peer_gone;
        pthread_mutex_unlock(&c->lock);
        if (c->cq->Dispatch->NdkGetCqResults(c->cq, r, 1) == 1)
            return EX_GOT;
        if (gone)
            return EX_PEER_GONE;
        c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
        if (c->cq->Dispatch->NdkGetCqResults(c->cq, r, 1) == 1)
            return EX_GOT;
        pthread_mutex_lock(&c->lock);
        int rc = 0;
        while (c->events == seen && rc == 0)
            rc = pthread_cond_timedwait(&c->cond, &c->lock, &until);
        pthread_mutex_unlock(&c->lock);
        if (rc == ETIMEDOUT)
            return EX_TIMEOUT;
    }
}

/* Waits for one completion that must succeed, with `what` in the error message. */
static inline NDK_RESULT ex_cq_expect(struct ex_cq *c, const char *what)
{
    NDK_RESULT r;
    int got = ex_cq_next(c, &r, EX_TIMEOUT_S);
    if (got == EX_TIMEOUT)
        ex_die("no %s within %d s", what, EX_TIMEOUT_S);
    if (got == EX_PEER_GONE)
        ex_die("the peer disconnected before the %s", what);
    if (r.Status != STATUS_SUCCESS)
        ex_die("%s completed with %s", what, ndk_rt_status_name(r.Status));
    return r;
}

static inline void ex_cq_close(struct ex_cq *c)
{
    ex_close(c->cq);                         /* its close waits out a running notification */
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
}

/* ---- connections (docs/ndkpi.md, "Connection set-up"; Microsoft: "NDK_FN_CONNECT") ---- */

/* Active side: NdkConnect, read the server's private data (peer_data, *peer_len: in the buffer
 * size, out the length), then NdkCompleteConnect, after which the connection is established.
 * Returns the connector; dies on failure. The disconnect event goes to `gone_ctx`. */
static inline NDK_CONNECTOR *ex_connect(NDK_ADAPTER *ad, NDK_QP *qp, const SOCKADDR_INET *dst, const void *pdata,
                                 ULONG pdata_len, void *peer_data, ULONG *peer_len, struct ex_cq *gone_ctx)
{
    struct ex_wait w;
    NDK_CONNECTOR *conn = NULL;
    SOCKADDR_INET src, to = *dst;
    char a[64];
    ex_route_source(dst, &src);
    NTSTATUS st = ad->Dispatch->NdkCreateConnector(ad, ex_create_done, ex_wait_init(&w), &conn);
    conn = ex_created(&w, st, conn, "NdkCreateConnector");
    /* Read limits 1/1: one RDMA Read in flight each way is all these examples need. */
    st = conn->Dispatch->NdkConnect(conn, qp, (PSOCKADDR)&src, ex_addr_len(&src), (PSOCKADDR)&to, ex_addr_len(&to), 1,
                                    1, (PVOID)pdata, pdata_len, ex_request_done, ex_wait_init(&w));
    st = ex_finish(&w, st);
    if (st != STATUS_SUCCESS)
        ex_die("connecting to %s: %s", ex_addr_str(dst, 1, a), ndk_rt_status_name(st));
    ULONG cap = peer_len ? *peer_len : 0;
    if (peer_len) {
        st = conn->Dispatch->NdkGetConnectionData(conn, NULL, NULL, peer_data, peer_len);
        if (st == STATUS_BUFFER_TOO_SMALL)   /* the peer sent more than we read: we got the start */
            *peer_len = cap;
        else
            ex_check(st, "NdkGetConnectionData");
    }
    st = conn->Dispatch->NdkCompleteConnect(conn, ex_peer_disconnected, gone_ctx, ex_request_done, ex_wait_init(&w));
    ex_check(ex_finish(&w, st), "NdkCompleteConnect");
    return conn;
}

/* Passive side: accept the request `conn` onto qp with our private data. Returns the status
 * (a server goes on serving others when one accept fails). */
static inline NTSTATUS ex_accept(NDK_CONNECTOR *conn, NDK_QP *qp, const void *pdata, ULONG pdata_len,
                          struct ex_cq *gone_ctx)
{
    struct ex_wait w;
    NTSTATUS st = conn->Dispatch->NdkAccept(conn, qp, 1, 1, (PVOID)pdata, pdata_len, ex_peer_disconnected, gone_ctx,
                                            ex_request_done, ex_wait_init(&w));
    return ex_finish(&w, st);
}

/* Graceful disconnect. Completes once the peer has acknowledged and all DMA on the QP stopped;
 * then the provider flushes what is still posted (Microsoft: "NDK_FN_DISCONNECT"). */
static inline NTSTATUS ex_disconnect(NDK_CONNECTOR *conn)
{
    struct ex_wait w;
    NTSTATUS st = conn->Dispatch->NdkDisconnect(conn, ex_request_done, ex_wait_init(&w));
    return ex_finish(&w, st);
}

static inline const char *ex_peer_str(NDK_CONNECTOR *conn, int with_port, char *buf)
{
    SOCKADDR_INET peer;
    ULONG len = sizeof peer;
    memset(&peer, 0, sizeof peer);
    if (conn->Dispatch->NdkGetPeerAddress(conn, (PSOCKADDR)&peer, &len) != STATUS_SUCCESS)
        return strcpy(buf, "?");
    return ex_addr_str(&peer, with_port, buf);
}

/* ---- a listener whose connect events queue up for the main thread ---- */
#define EX_BACKLOG 16
struct ex_listener {
    NDK_LISTENER   *listener;
    pthread_mutex_t lock;                    /* guards queue, head, tail, and whatever the program adds */
    pthread_cond_t  cond;                    /* signalled on a new request; programs may signal it too */
    NDK_CONNECTOR  *queue[EX_BACKLOG];
    unsigned        head, tail;
    int             closing;                 /* set once we stop taking requests */
};

/* NDK_FN_CONNECT_EVENT_CALLBACK: provider thread, must not block. Queue the request: accepting
 * blocks, so the main thread does it. A full queue, or a listener being closed, refuses the
 * request at once; nobody waits for that connector's close. */
static inline VOID ex_on_connect(PVOID ctx, NDK_CONNECTOR *conn)
{
    struct ex_listener *l = ctx;
    pthread_mutex_lock(&l->lock);
    int refuse = l->closing || l->tail - l->head == EX_BACKLOG;
    if (!refuse) {
        l->queue[l->tail++ % EX_BACKLOG] = conn;
        pthread_cond_broadcast(&l->cond);
    }
    pthread_mutex_unlock(&l->lock);
    if (refuse) {
        conn->Dispatch->NdkReject(conn, NULL, 0);
        conn->Dispatch->NdkCloseConnector(&conn->Header, ex_close_ignored, NULL);
    }
}

/* Listens on *addr (port 0: the provider picks one; *addr then holds it). */
static inline void ex_listen(NDK_ADAPTER *ad, SOCKADDR_INET *addr, struct ex_listener *l)
{
    struct ex_wait w;
    NDK_LISTENER *lst = NULL;
    ULONG len = sizeof *addr;
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    ex_cond_init(&l->cond);
    NTSTATUS st = ad->Dispatch->NdkCreateListener(ad, ex_on_connect, l, ex_create_done, ex_wait_init(&w), &lst);
    l->listener = ex_created(&w, st, lst, "NdkCreateListener");
    st = l->listener->Dispatch->NdkListen(l->listener, (PSOCKADDR)addr, ex_addr_len(addr), ex_request_done,
                                          ex_wait_init(&w));
    ex_check(ex_finish(&w, st), "NdkListen");
    ex_check(l->listener->Dispatch->NdkGetLocalAddress(l->listener, (PSOCKADDR)addr, &len), "listener address");
}

/* The next queued request, or NULL after timeout_s. Caller holds l->lock. */
static inline NDK_CONNECTOR *ex_next_request_locked(struct ex_listener *l, int timeout_s)
{
    struct timespec until = ex_deadline(timeout_s);
    while (l->head == l->tail)
        if (pthread_cond_timedwait(&l->cond, &l->lock, &until) == ETIMEDOUT)
            return NULL;
    return l->queue[l->head++ % EX_BACKLOG];
}

/* Refuses a connection request and closes its connector (it is ours to close). Blocks. */
static inline void ex_refuse(NDK_CONNECTOR *request)
{
    request->Dispatch->NdkReject(request, NULL, 0);
    ex_close(request);
}

/* Closing the listener: it completes only once every connector it produced is closed
 * (Microsoft: "NDK_FN_CLOSE_OBJECT"), so the requests still queued are refused and closed
 * here, and any that races in is refused by ex_on_connect. Blocks. */
static inline void ex_listener_close(struct ex_listener *l)
{
    struct ex_wait w;
    pthread_mutex_lock(&l->lock);
    l->closing = 1;
    pthread_mutex_unlock(&l->lock);
    NTSTATUS st = l->listener->Dispatch->NdkCloseListener(&l->listener->Header, ex_close_done, ex_wait_init(&w));
    pthread_mutex_lock(&l->lock);
    while (l->head != l->tail) {
        NDK_CONNECTOR *conn = l->queue[l->head++ % EX_BACKLOG];
        pthread_mutex_unlock(&l->lock);
        ex_refuse(conn);
        pthread_mutex_lock(&l->lock);
    }
    pthread_mutex_unlock(&l->lock);
    ex_check(ex_finish(&w, st), "closing the listener");
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
}

/* ---- one connection's objects, opened and closed in the right order ----
 * (docs/ndkpi.md, "The object model"; Microsoft: "NDKPI Overview"): an adapter instance gives a
 * protection domain (PD) and a completion queue (CQ); a queue pair (QP) lives in the PD and
 * reports to the CQ; memory is registered in the PD (MR); a connector joins the QP to the peer's. */
#define EX_NODE_MEMS 2
struct ex_node {
    ndk_rt          *rt;
    NDK_ADAPTER     *adapter;
    NDK_ADAPTER_INFO info;
    NDK_PD          *pd;
    struct ex_cq     cq;                     /* one CQ for both queues of the QP */
    NDK_QP          *qp;
    NDK_CONNECTOR   *conn;
    struct ex_mem    mem[EX_NODE_MEMS];      /* registrations the program makes in pd */
};

/* Runtime, adapter (the one that owns `local`), PD, CQ and a QP with room for rq receives and
 * iq initiator requests (Send, Read, Write), one SGE each, no inline data. */
static inline void ex_node_open(struct ex_node *n, const SOCKADDR_INET *local, ULONG rq, ULONG iq)
{
    struct ex_wait w;
    NDK_PD *pd = NULL;
    NDK_QP *qp = NULL;
    memset(n, 0, sizeof *n);
    n->adapter = ex_open_adapter(&n->rt, local, &n->info);
    NTSTATUS st = n->adapter->Dispatch->NdkCreatePd(n->adapter, ex_create_done, ex_wait_init(&w), &pd);
    n->pd = ex_created(&w, st, pd, "NdkCreatePd");
    ex_cq_create(n->adapter, rq + iq, &n->cq);
    st = n->pd->Dispatch->NdkCreateQp(n->pd, n->cq.cq, n->cq.cq, n, rq, iq, 1, 1, 0, ex_create_done, ex_wait_init(&w),
                                      &qp);
    n->qp = ex_created(&w, st, qp, "NdkCreateQp");
}

/* A one-client server's start: listen on *addr with n's adapter, say where (a script waits for
 * that line), take the first request and accept it onto n's QP with our private data. */
static inline void ex_node_accept_one(struct ex_node *n, SOCKADDR_INET *addr, struct ex_listener *l,
                                      const void *pdata, ULONG pdata_len)
{
    char a[64];
    ex_listen(n->adapter, addr, l);
    printf("%s: listening on %s\n", ex_prog, ex_addr_str(addr, 1, a));
    fflush(stdout);
    pthread_mutex_lock(&l->lock);
    n->conn = ex_next_request_locked(l, 60);
    pthread_mutex_unlock(&l->lock);
    if (!n->conn)
        ex_die("no client within 60 s");
    ex_check(ex_accept(n->conn, n->qp, pdata, pdata_len, &n->cq), "NdkAccept");
}

/* Waits for the peer's disconnect event, then disconnects our side. Our NdkDisconnect completes
 * at once then, with success or "already disconnected" depending on the race; either is fine. */
static inline void ex_node_wait_peer_gone(struct ex_node *n)
{
    NDK_RESULT r;
    int got = ex_cq_next(&n->cq, &r, EX_TIMEOUT_S);
    if (got == EX_TIMEOUT)
        ex_die("the peer did not disconnect within %d s", EX_TIMEOUT_S);
    if (got == EX_GOT)
        ex_die("a request completed (%s) while waiting for the peer to disconnect", ndk_rt_status_name(r.Status));
    ex_disconnect(n->conn);
}

/* A client's node: on the adapter that our route to the server goes out of. */
static inline void ex_node_open_client(struct ex_node *n, const SOCKADDR_INET *server, ULONG rq, ULONG iq)
{
    SOCKADDR_INET local;
    ex_route_source(server, &local);
    ex_node_open(n, &local, rq, iq);
}

/* Teardown, children before parents. The QP goes before the memory it used: once it is closed
 * nothing can touch the buffers. A listener closes after its connectors (its close completes
 * only then) and before the adapter. The adapter close blocks until every callback has
 * returned, so it is never called from a callback (docs/ndkpi.md, "Teardown"). */
static inline void ex_node_close(struct ex_node *n, struct ex_listener *l)
{
    ex_close(n->conn);
    ex_close(n->qp);
    if (l)
        ex_listener_close(l);
    for (int i = 0; i < EX_NODE_MEMS; i++)
        ex_mem_release(&n->mem[i]);
    ex_cq_close(&n->cq);
    ex_close(n->pd);
    ndk_rt_close_adapter(n->rt, n->adapter);
    ndk_rt_close(n->rt);
}

#endif /* NDK_EXAMPLE_H */
