/*
 * ndk_tool.c - shared plumbing of ndkping and ndkperf (see ndk_tool.h).
 */
#define _GNU_SOURCE
#include "ndk_tool.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */
/* program name, errors, stop flag                                                           */

static const char *tool_progname = "ndktool";
volatile sig_atomic_t ndk_tool_stop;

void ndk_tool_set_progname(const char *name) { tool_progname = name; }
const char *ndk_tool_progname(void) { return tool_progname; }

void ndk_tool_err(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", tool_progname, line);
    fflush(stderr);
}

const char *ndk_tool_status(NTSTATUS st) { return ndk_rt_status_name(st); }

static void tool_on_signal(int sig)
{
    (void)sig;
    __atomic_store_n(&ndk_tool_stop, 1, __ATOMIC_RELAXED);
}

bool ndk_tool_stopped(void) { return __atomic_load_n(&ndk_tool_stop, __ATOMIC_RELAXED) != 0; }
#define tool_stopped ndk_tool_stopped

void ndk_tool_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = tool_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ---------------------------------------------------------------------------------------- */
/* addresses                                                                                 */

ULONG ndk_tool_addr_len(const SOCKADDR_INET *a)
{
    return a->si_family == AF_INET6 ? (ULONG)sizeof(struct sockaddr_in6) : (ULONG)sizeof(struct sockaddr_in);
}

uint16_t ndk_tool_addr_port(const SOCKADDR_INET *a)
{
    return ntohs(a->si_family == AF_INET6 ? a->Ipv6.sin6_port : a->Ipv4.sin_port);
}

void ndk_tool_addr_set_port(SOCKADDR_INET *a, uint16_t port)
{
    if (a->si_family == AF_INET6)
        a->Ipv6.sin6_port = htons(port);
    else
        a->Ipv4.sin_port = htons(port);
}

bool ndk_tool_addr_is_any(const SOCKADDR_INET *a)
{
    if (a->si_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&a->Ipv6.sin6_addr);
    if (a->si_family == AF_INET)
        return a->Ipv4.sin_addr.s_addr == htonl(INADDR_ANY);
    return true;
}

bool ndk_tool_addr_is_loopback(const SOCKADDR_INET *a)
{
    if (a->si_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&a->Ipv6.sin6_addr);
    if (a->si_family == AF_INET)
        return (ntohl(a->Ipv4.sin_addr.s_addr) >> 24) == 127;
    return false;
}

const char *ndk_tool_addr_str(const SOCKADDR_INET *a, bool with_port, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = "?";
    if (a->si_family == AF_INET) {
        inet_ntop(AF_INET, &a->Ipv4.sin_addr, ip, sizeof ip);
        if (with_port)
            snprintf(buf, len, "%s:%u", ip, ndk_tool_addr_port(a));
        else
            snprintf(buf, len, "%s", ip);
    } else if (a->si_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->Ipv6.sin6_addr, ip, INET6_ADDRSTRLEN);
        if (a->Ipv6.sin6_scope_id) {
            char name[IF_NAMESIZE];
            size_t l = strlen(ip);
            if (if_indextoname(a->Ipv6.sin6_scope_id, name))
                snprintf(ip + l, sizeof ip - l, "%%%s", name);
            else
                snprintf(ip + l, sizeof ip - l, "%%%u", a->Ipv6.sin6_scope_id);
        }
        if (with_port)
            snprintf(buf, len, "[%s]:%u", ip, ndk_tool_addr_port(a));
        else
            snprintf(buf, len, "%s", ip);
    } else if (with_port) {
        snprintf(buf, len, "*:%u", ndk_tool_addr_port(a));
    } else {
        snprintf(buf, len, "*");
    }
    return buf;
}

int ndk_tool_parse_ip(const char *text, SOCKADDR_INET *out)
{
    char host[256];
    memset(out, 0, sizeof *out);
    if (!text || strlen(text) >= sizeof host)
        return -1;
    snprintf(host, sizeof host, "%s", text);
    if (inet_pton(AF_INET, host, &out->Ipv4.sin_addr) == 1) {
        out->Ipv4.sin_family = AF_INET;
        return 0;
    }
    char *pct = strchr(host, '%');
    if (pct)
        *pct++ = '\0';
    if (inet_pton(AF_INET6, host, &out->Ipv6.sin6_addr) == 1) {
        out->Ipv6.sin6_family = AF_INET6;
        if (pct) {
            char *end;
            unsigned long idx = strtoul(pct, &end, 10);
            if (*end)
                idx = if_nametoindex(pct);
            if (!idx)
                return -1;
            out->Ipv6.sin6_scope_id = (uint32_t)idx;
        }
        return 0;
    }
    if (pct)
        return -1;
    /* A host name ("localhost"): the first IPv4 or IPv6 address it resolves to. */
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return -1;
    int rc = -1;
    for (struct addrinfo *r = res; r; r = r->ai_next) {
        if (r->ai_family == AF_INET || r->ai_family == AF_INET6) {
            memcpy(out, r->ai_addr, r->ai_addrlen);
            ndk_tool_addr_set_port(out, 0);
            rc = 0;
            break;
        }
    }
    freeaddrinfo(res);
    return rc;
}

static int tool_parse_port(const char *s, uint16_t *port)
{
    char *end;
    if (!*s)
        return -1;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

int ndk_tool_parse_addr(const char *text, uint16_t default_port, SOCKADDR_INET *out, char *why, size_t whylen)
{
    char buf[300];
    const char *host = NULL, *port = NULL;
    uint16_t p = default_port;

    memset(out, 0, sizeof *out);
    if (!text)
        text = "";
    if (strlen(text) >= sizeof buf) {
        snprintf(why, whylen, "address too long");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", text);
    if (buf[0] == '[') {
        char *close = strchr(buf, ']');
        if (!close) {
            snprintf(why, whylen, "'%s': missing ']'", text);
            return -1;
        }
        *close = '\0';
        host = buf + 1;
        if (close[1] == ':')
            port = close + 2;
        else if (close[1]) {
            snprintf(why, whylen, "'%s': junk after ']'", text);
            return -1;
        }
    } else {
        char *first = strchr(buf, ':');
        if (first && strchr(first + 1, ':')) {
            host = buf;                     /* bare IPv6 address, no port */
        } else if (first) {
            *first = '\0';
            host = buf;
            port = first + 1;
        } else {
            host = buf;
        }
    }
    if (port && tool_parse_port(port, &p) != 0) {
        snprintf(why, whylen, "'%s': bad port '%s'", text, port);
        return -1;
    }
    if (!host[0] || !strcmp(host, "*")) {
        out->si_family = AF_UNSPEC;        /* "any address", both families */
        out->Ipv4.sin_port = htons(p);
        return 0;
    }
    if (ndk_tool_parse_ip(host, out) != 0) {
        snprintf(why, whylen, "'%s': not an IPv4/IPv6 address or known host name", host);
        return -1;
    }
    ndk_tool_addr_set_port(out, p);
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* runtime and adapters                                                                      */

NTSTATUS ndk_tool_rt_open(ndk_rt **out)
{
    ndk_rt_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.no_monitor = TRUE;
    return ndk_rt_open(&cfg, out);
}

/* The local address the kernel would use to reach dest. */
static int tool_route_source(const SOCKADDR_INET *dest, SOCKADDR_INET *src, char *why, size_t whylen)
{
    SOCKADDR_INET d = *dest;
    if (!ndk_tool_addr_port(&d))
        ndk_tool_addr_set_port(&d, 9);
    int fd = socket(d.si_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, whylen, "socket: %s", strerror(errno));
        return -1;
    }
    int rc = connect(fd, (struct sockaddr *)&d, ndk_tool_addr_len(&d));
    if (rc == 0) {
        socklen_t len = sizeof *src;
        memset(src, 0, sizeof *src);
        rc = getsockname(fd, (struct sockaddr *)src, &len);
    }
    if (rc != 0) {
        char a[NDK_TOOL_ADDRSTRLEN];
        snprintf(why, whylen, "no route to %s: %s", ndk_tool_addr_str(dest, false, a, sizeof a), strerror(errno));
    }
    close(fd);
    if (rc == 0)
        ndk_tool_addr_set_port(src, 0);
    return rc;
}

NTSTATUS ndk_tool_pick_adapter(ndk_rt *rt, const SOCKADDR_INET *local, const SOCKADDR_INET *dest,
                               const char *provider, ULONG ifindex, ndk_rt_adapter_id *id, SOCKADDR_INET *src,
                               char *why, size_t whylen)
{
    char a[NDK_TOOL_ADDRSTRLEN];
    NTSTATUS st;

    if (local && local->si_family != AF_UNSPEC) {
        *src = *local;
        ndk_tool_addr_set_port(src, 0);
    } else if (ifindex) {
        /* An interface but no address: its first address of the destination's family. */
        st = ndk_rt_find_adapter_by_ifindex(rt, ifindex, provider, id);
        if (st != STATUS_SUCCESS) {
            snprintf(why, whylen, "no NDK adapter on interface index %u%s%s", ifindex, provider ? " for provider " : "",
                     provider ? provider : "");
            return STATUS_OBJECT_NAME_NOT_FOUND;
        }
        ndk_rt_adapter_info *info = calloc(1, sizeof *info);
        if (!info)
            return STATUS_INSUFFICIENT_RESOURCES;
        st = ndk_rt_adapter_query(rt, *id, info);
        bool found = false;
        for (ULONG i = 0; st == STATUS_SUCCESS && i < info->address_count && i < NDK_RT_MAX_ADDRESSES; i++) {
            if (!dest || info->addresses[i].si_family == dest->si_family) {
                *src = info->addresses[i];
                found = true;
                break;
            }
        }
        free(info);
        if (!found) {
            snprintf(why, whylen, "interface index %u has no address of the destination's family", ifindex);
            return STATUS_OBJECT_NAME_NOT_FOUND;
        }
        ndk_tool_addr_set_port(src, 0);
        return STATUS_SUCCESS;
    } else if (dest) {
        if (tool_route_source(dest, src, why, whylen) != 0)
            return STATUS_NETWORK_UNREACHABLE;
    } else {
        snprintf(why, whylen, "no local or destination address");
        return STATUS_INVALID_PARAMETER;
    }
    st = ndk_rt_find_adapter_by_address(rt, (const struct sockaddr *)src, provider, id);
    if (st != STATUS_SUCCESS) {
        snprintf(why, whylen, "no NDK adapter%s%s serves local address %s (see ndkinfo)",
                 provider ? " of provider " : "", provider ? provider : "", ndk_tool_addr_str(src, false, a, sizeof a));
        return STATUS_OBJECT_NAME_NOT_FOUND;
    }
    if (ifindex) {
        ndk_rt_adapter_info *info = calloc(1, sizeof *info);
        if (!info)
            return STATUS_INSUFFICIENT_RESOURCES;
        st = ndk_rt_adapter_query(rt, *id, info);
        bool ok = st == STATUS_SUCCESS && info->ifindex == ifindex;
        free(info);
        if (!ok) {
            snprintf(why, whylen, "address %s is not on interface index %u", ndk_tool_addr_str(src, false, a, sizeof a),
                     ifindex);
            return STATUS_OBJECT_NAME_NOT_FOUND;
        }
    }
    return STATUS_SUCCESS;
}

NTSTATUS ndk_tool_adapter_open(ndk_rt *rt, ndk_rt_adapter_id id, ndk_tool_adapter *out)
{
    ndk_rt_adapter_info *info = calloc(1, sizeof *info);
    NTSTATUS st;

    memset(out, 0, sizeof *out);
    if (!info)
        return STATUS_INSUFFICIENT_RESOURCES;
    st = ndk_rt_adapter_query(rt, id, info);
    if (st == STATUS_SUCCESS)
        st = ndk_rt_open_adapter(rt, id, info->info.Version, &out->adapter);
    if (st == STATUS_SUCCESS) {
        ULONG size = sizeof out->info;
        out->rt = rt;
        out->id = id;
        snprintf(out->provider, sizeof out->provider, "%s", info->provider);
        snprintf(out->ifname, sizeof out->ifname, "%s", info->ifname);
        out->ifindex = info->ifindex;
        st = out->adapter->Dispatch->NdkQueryAdapterInfo(out->adapter, &out->info, &size);
        if (st != STATUS_SUCCESS) {
            ndk_rt_close_adapter(rt, out->adapter);
            out->adapter = NULL;
        }
    }
    free(info);
    return st;
}

NTSTATUS ndk_tool_client_adapter(ndk_rt *rt, const SOCKADDR_INET *local, const SOCKADDR_INET *dst,
                                 const char *provider, ULONG ifindex, ndk_tool_adapter *ad, SOCKADDR_INET *src)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDRSTRLEN];
    ndk_rt_adapter_id id;
    NTSTATUS st = ndk_tool_pick_adapter(rt, local, dst, provider, ifindex, &id, src, why, sizeof why);
    if (st == STATUS_SUCCESS) {
        st = ndk_tool_adapter_open(rt, id, ad);
        if (st != STATUS_SUCCESS)
            snprintf(why, sizeof why, "opening the adapter: %s", ndk_tool_status(st));
    }
    if (st != STATUS_SUCCESS)
        ndk_tool_err("connect to %s failed: %s", ndk_tool_addr_str(dst, true, dst_s, sizeof dst_s), why);
    return st;
}

void ndk_tool_adapter_close(ndk_tool_adapter *a)
{
    if (a->adapter)
        ndk_rt_close_adapter(a->rt, a->adapter);
    a->adapter = NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* asynchronous requests                                                                     */

struct ndk_tool_op {
    pthread_mutex_t    lock;
    pthread_cond_t     cond;
    int                refs;      /* the waiter's and the completion's */
    bool               done;
    NTSTATUS           status;
    NDK_OBJECT_HEADER *obj;
};

static void tool_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
}

static struct timespec tool_deadline_ts(uint64_t deadline_ns)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ns / 1000000000u);
    ts.tv_nsec = (long)(deadline_ns % 1000000000u);
    return ts;
}

ndk_tool_op *ndk_tool_op_new(void)
{
    ndk_tool_op *op = calloc(1, sizeof *op);
    if (!op) {
        ndk_tool_err("out of memory");
        exit(2);
    }
    pthread_mutex_init(&op->lock, NULL);
    tool_cond_init(&op->cond);
    op->refs = 2;
    return op;
}

static void tool_op_put_locked_and_unlock(ndk_tool_op *op)
{
    int left = --op->refs;
    pthread_mutex_unlock(&op->lock);
    if (left == 0) {
        pthread_mutex_destroy(&op->lock);
        pthread_cond_destroy(&op->cond);
        free(op);
    }
}

static void tool_op_complete(ndk_tool_op *op, NTSTATUS status, NDK_OBJECT_HEADER *obj)
{
    pthread_mutex_lock(&op->lock);
    op->done = true;
    op->status = status;
    op->obj = obj;
    pthread_cond_broadcast(&op->cond);
    tool_op_put_locked_and_unlock(op);
}

void ndk_tool_op_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj) { tool_op_complete(ctx, status, obj); }
void ndk_tool_op_request_done(PVOID ctx, NTSTATUS status) { tool_op_complete(ctx, status, NULL); }
void ndk_tool_op_close_done(PVOID ctx) { tool_op_complete(ctx, STATUS_SUCCESS, NULL); }

static NTSTATUS tool_op_wait(ndk_tool_op *op, NTSTATUS returned, int timeout_ms, bool interruptible,
                             NDK_OBJECT_HEADER **obj)
{
    NTSTATUS st;
    pthread_mutex_lock(&op->lock);
    if (returned != STATUS_PENDING) {
        /* Finished inline: the completion will never run, so drop its reference too. */
        op->refs--;
        st = returned;
    } else {
        uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : ndk_tool_now_ns() + (uint64_t)timeout_ms * 1000000u;
        st = STATUS_SUCCESS;
        while (!op->done) {
            uint64_t now = ndk_tool_now_ns();
            if (now >= deadline) {
                st = STATUS_IO_TIMEOUT;
                break;
            }
            if (interruptible && tool_stopped()) {
                st = STATUS_CANCELLED;
                break;
            }
            uint64_t until = now + 100000000u;       /* look at the stop flag every 100 ms */
            if (until > deadline)
                until = deadline;
            struct timespec ts = tool_deadline_ts(until);
            pthread_cond_timedwait(&op->cond, &op->lock, &ts);
        }
        if (op->done) {
            st = op->status;
            if (obj)
                *obj = op->obj;
        }
    }
    tool_op_put_locked_and_unlock(op);
    return st;
}

NTSTATUS ndk_tool_op_finish(ndk_tool_op *op, NTSTATUS returned, int timeout_ms, NDK_OBJECT_HEADER **obj)
{
    return tool_op_wait(op, returned, timeout_ms, false, obj);
}

/* Non-blocking: has the op completed? */
static bool tool_op_done(ndk_tool_op *op)
{
    pthread_mutex_lock(&op->lock);
    bool d = op->done;
    pthread_mutex_unlock(&op->lock);
    return d;
}

NTSTATUS ndk_tool_close(NDK_OBJECT_HEADER *obj, int timeout_ms)
{
    NDK_FN_CLOSE_OBJECT fn = NULL;
    switch (obj->ObjectType) {
    case NdkObjectTypeQp: fn = ((NDK_QP *)obj)->Dispatch->NdkCloseQp; break;
    case NdkObjectTypeCq: fn = ((NDK_CQ *)obj)->Dispatch->NdkCloseCq; break;
    case NdkObjectTypeMr: fn = ((NDK_MR *)obj)->Dispatch->NdkCloseMr; break;
    case NdkObjectTypeMw: fn = ((NDK_MW *)obj)->Dispatch->NdkCloseMw; break;
    case NdkObjectTypePd: fn = ((NDK_PD *)obj)->Dispatch->NdkClosePd; break;
    case NdkObjectTypeSharedEndpoint: fn = ((NDK_SHARED_ENDPOINT *)obj)->Dispatch->NdkCloseSharedEndpoint; break;
    case NdkObjectTypeConnector: fn = ((NDK_CONNECTOR *)obj)->Dispatch->NdkCloseConnector; break;
    case NdkObjectTypeListener: fn = ((NDK_LISTENER *)obj)->Dispatch->NdkCloseListener; break;
    case NdkObjectTypeSrq: fn = ((NDK_SRQ *)obj)->Dispatch->NdkCloseSrq; break;
    default: return STATUS_INVALID_PARAMETER;
    }
    ndk_tool_op *op = ndk_tool_op_new();
    return ndk_tool_op_finish(op, fn(obj, ndk_tool_op_close_done, op), timeout_ms, NULL);
}

/* Runs a create call's result through the create contract: the object comes from the output
 * parameter on inline success and from the completion after STATUS_PENDING. */
static NTSTATUS tool_create_finish(ndk_tool_op *op, NTSTATUS returned, void **out, void *inline_obj)
{
    NDK_OBJECT_HEADER *obj = NULL;
    NTSTATUS st = ndk_tool_op_finish(op, returned, NDK_TOOL_OP_TIMEOUT_MS, &obj);
    if (st != STATUS_SUCCESS)
        return st;
    *out = returned == STATUS_PENDING ? (void *)obj : inline_obj;
    return *out ? STATUS_SUCCESS : STATUS_INTERNAL_ERROR;
}

NTSTATUS ndk_tool_create_pd(NDK_ADAPTER *ad, NDK_PD **out)
{
    ndk_tool_op *op = ndk_tool_op_new();
    NDK_PD *pd = NULL;
    NTSTATUS st = ad->Dispatch->NdkCreatePd(ad, ndk_tool_op_create_done, op, &pd);
    return tool_create_finish(op, st, (void **)out, pd);
}

NTSTATUS ndk_tool_create_connector(NDK_ADAPTER *ad, NDK_CONNECTOR **out)
{
    ndk_tool_op *op = ndk_tool_op_new();
    NDK_CONNECTOR *c = NULL;
    NTSTATUS st = ad->Dispatch->NdkCreateConnector(ad, ndk_tool_op_create_done, op, &c);
    return tool_create_finish(op, st, (void **)out, c);
}

NTSTATUS ndk_tool_create_qp(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, PVOID qp_ctx, ULONG rq_depth, ULONG iq_depth,
                            ULONG rsge, ULONG isge, ULONG inline_size, NDK_QP **out)
{
    ndk_tool_op *op = ndk_tool_op_new();
    NDK_QP *qp = NULL;
    NTSTATUS st = pd->Dispatch->NdkCreateQp(pd, rcq, icq, qp_ctx, rq_depth, iq_depth, rsge, isge, inline_size,
                                            ndk_tool_op_create_done, op, &qp);
    return tool_create_finish(op, st, (void **)out, qp);
}

/* ---------------------------------------------------------------------------------------- */
/* memory                                                                                    */

NTSTATUS ndk_tool_mem_register(NDK_PD *pd, void *buf, size_t len, ULONG flags, ndk_tool_mem *m)
{
    NTSTATUS st;
    memset(m, 0, sizeof *m);
    if (len == 0 || len > 0xFFFFFFFFu)
        return STATUS_INVALID_PARAMETER;
    if (!buf) {
        size_t page = 4096, alloc = (len + page - 1) / page * page;
        if (posix_memalign(&buf, page, alloc) != 0)
            return STATUS_INSUFFICIENT_RESOURCES;
        memset(buf, 0, alloc);
        m->owned = true;
    }
    m->buf = buf;
    m->len = len;
    m->mdl = IoAllocateMdl(buf, (ULONG)len, FALSE, FALSE, NULL);
    if (!m->mdl) {
        st = STATUS_INSUFFICIENT_RESOURCES;
        goto fail;
    }
    ndk_tool_op *op = ndk_tool_op_new();
    NDK_MR *mr = NULL;
    st = pd->Dispatch->NdkCreateMr(pd, FALSE, ndk_tool_op_create_done, op, &mr);
    st = tool_create_finish(op, st, (void **)&m->mr, mr);
    if (st != STATUS_SUCCESS)
        goto fail;
    op = ndk_tool_op_new();
    st = m->mr->Dispatch->NdkRegisterMr(m->mr, m->mdl, len, flags, ndk_tool_op_request_done, op);
    st = ndk_tool_op_finish(op, st, NDK_TOOL_OP_TIMEOUT_MS, NULL);
    if (st != STATUS_SUCCESS)
        goto fail;
    m->ltoken = m->mr->Dispatch->NdkGetLocalTokenFromMr(m->mr);
    m->rtoken = m->mr->Dispatch->NdkGetRemoteTokenFromMr(m->mr);
    return STATUS_SUCCESS;
fail:
    if (m->mr)
        ndk_tool_close(&m->mr->Header, NDK_TOOL_OP_TIMEOUT_MS);
    if (m->mdl)
        IoFreeMdl(m->mdl);
    if (m->owned)
        free(m->buf);
    memset(m, 0, sizeof *m);
    return st;
}

void ndk_tool_mem_release(ndk_tool_mem *m)
{
    if (m->mr) {
        ndk_tool_op *op = ndk_tool_op_new();
        NTSTATUS st = m->mr->Dispatch->NdkDeregisterMr(m->mr, ndk_tool_op_request_done, op);
        ndk_tool_op_finish(op, st, NDK_TOOL_OP_TIMEOUT_MS, NULL);
        ndk_tool_close(&m->mr->Header, NDK_TOOL_OP_TIMEOUT_MS);
    }
    if (m->mdl)
        IoFreeMdl(m->mdl);
    if (m->owned)
        free(m->buf);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------------------------------- */
/* completion queues                                                                         */

#define TOOL_CQ_BATCH 64

/* The CQ's owner (the notification callback, or the thread of ndk_tool_cq_run while it hands
 * the CQ over): feeds the handler until the CQ is empty, then arms and looks once more, since a
 * completion that raced with the arm is either returned by that look or notifies (§5.7 rule 2).
 * Returns false once the handler is finished; true when the CQ is armed, or when the run's
 * thread asked for the CQ back. Never blocks; no tool lock held. */
static bool tool_cq_serve(ndk_tool_cq *c, ndk_tool_cq_handler handler, void *ctx)
{
    NDK_RESULT r[TOOL_CQ_BATCH];
    for (;;) {
        if (__atomic_load_n(&c->cb_reclaim, __ATOMIC_ACQUIRE))
            return true;
        ULONG n = c->cq->Dispatch->NdkGetCqResults(c->cq, r, TOOL_CQ_BATCH);
        if (!n) {
            c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
            n = c->cq->Dispatch->NdkGetCqResults(c->cq, r, TOOL_CQ_BATCH);
            if (!n)
                return true;
        }
        __atomic_add_fetch(&c->batches, 1, __ATOMIC_RELAXED);
        if (!handler(ctx, r, n))
            return false;
    }
}

/* NDK_FN_CQ_NOTIFICATION_CALLBACK: provider thread, must not block; calls into the provider
 * with no tool lock held. While a tool thread owns the CQ it only records and signals; while
 * the callback owns it (ndk_tool_cq_run) it runs the handler, without waking the sleeping
 * thread unless the handler is finished. The provider never runs two at once for one CQ. */
static void tool_cq_notify(PVOID ctx, NTSTATUS status)
{
    ndk_tool_cq *c = ctx;
    pthread_mutex_lock(&c->lock);
    c->events++;
    c->notifications++;
    if (status != STATUS_SUCCESS && c->cq_error == STATUS_SUCCESS)
        c->cq_error = status;
    if (!c->cb_owned || status != STATUS_SUCCESS || __atomic_load_n(&c->cb_reclaim, __ATOMIC_ACQUIRE)) {
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        return;
    }
    c->cb_busy = true;
    ndk_tool_cq_handler handler = c->handler;
    void *hctx = c->handler_ctx;
    pthread_mutex_unlock(&c->lock);

    bool more = tool_cq_serve(c, handler, hctx);

    pthread_mutex_lock(&c->lock);
    c->cb_busy = false;
    if (!more)
        c->cb_owned = false;
    if (!more || __atomic_load_n(&c->cb_reclaim, __ATOMIC_ACQUIRE))
        pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

NTSTATUS ndk_tool_cq_create(NDK_ADAPTER *ad, ULONG depth, bool poll, ndk_tool_cq **out)
{
    ndk_tool_cq *c = calloc(1, sizeof *c);
    if (!c)
        return STATUS_INSUFFICIENT_RESOURCES;
    pthread_mutex_init(&c->lock, NULL);
    tool_cond_init(&c->cond);
    c->poll = poll;
    ndk_tool_op *op = ndk_tool_op_new();
    NDK_CQ *cq = NULL;
    NTSTATUS st = ad->Dispatch->NdkCreateCq(ad, depth, tool_cq_notify, c, NULL, ndk_tool_op_create_done, op, &cq);
    st = tool_create_finish(op, st, (void **)&c->cq, cq);
    if (st != STATUS_SUCCESS) {
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->cond);
        free(c);
        return st;
    }
    *out = c;
    return STATUS_SUCCESS;
}

void ndk_tool_cq_destroy(ndk_tool_cq *c)
{
    if (!c)
        return;
    if (c->cq && ndk_tool_close(&c->cq->Header, NDK_TOOL_OP_TIMEOUT_MS) != STATUS_SUCCESS) {
        /* A notification could still arrive: keep the wrapper alive rather than risk it. */
        ndk_tool_err("closing a CQ did not complete; leaving it");
        return;
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c);
}

ULONG ndk_tool_cq_poll(ndk_tool_cq *c, NDK_RESULT *res, ULONG max)
{
    return c->cq->Dispatch->NdkGetCqResults(c->cq, res, max);
}

void ndk_tool_cq_kick(ndk_tool_cq *c, bool disconnected)
{
    pthread_mutex_lock(&c->lock);
    if (disconnected)
        __atomic_store_n(&c->disconnected, 1, __ATOMIC_RELEASE);
    c->events++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static bool tool_cq_gone(ndk_tool_cq *c) { return __atomic_load_n(&c->disconnected, __ATOMIC_ACQUIRE) != 0; }

ULONG ndk_tool_cq_wait(ndk_tool_cq *c, NDK_RESULT *res, ULONG max, int timeout_ms, NTSTATUS *st)
{
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : ndk_tool_now_ns() + (uint64_t)timeout_ms * 1000000u;
    unsigned spins = 0;
    ULONG n;

    *st = STATUS_SUCCESS;
    for (;;) {
        n = c->cq->Dispatch->NdkGetCqResults(c->cq, res, max);
        if (n)
            return n;
        if (c->poll) {
            if ((++spins & 1023) != 0)
                continue;
            pthread_mutex_lock(&c->lock);
            NTSTATUS err = c->cq_error;
            pthread_mutex_unlock(&c->lock);
            if (err != STATUS_SUCCESS) {
                *st = err;
                return 0;
            }
            if (tool_cq_gone(c)) {
                *st = STATUS_CONNECTION_DISCONNECTED;
                return 0;
            }
            if (tool_stopped()) {
                *st = STATUS_CANCELLED;
                return 0;
            }
            if (ndk_tool_now_ns() >= deadline) {
                *st = STATUS_IO_TIMEOUT;
                return 0;
            }
            continue;
        }
        pthread_mutex_lock(&c->lock);
        uint64_t seen = c->events;
        NTSTATUS err = c->cq_error;
        pthread_mutex_unlock(&c->lock);
        if (err != STATUS_SUCCESS) {
            *st = err;
            return 0;
        }
        /* Arm, then look again: a completion that raced with the arm is either returned here
         * or (§5.7 rule 2) satisfies the arm and notifies. */
        c->cq->Dispatch->NdkArmCq(c->cq, NDK_CQ_NOTIFY_ANY);
        n = c->cq->Dispatch->NdkGetCqResults(c->cq, res, max);
        if (n)
            return n;
        if (tool_cq_gone(c)) {
            *st = STATUS_CONNECTION_DISCONNECTED;
            return 0;
        }
        pthread_mutex_lock(&c->lock);
        while (c->events == seen) {
            uint64_t now = ndk_tool_now_ns();
            if (now >= deadline || tool_stopped())
                break;
            uint64_t until = now + 100000000u;
            if (until > deadline)
                until = deadline;
            struct timespec ts = tool_deadline_ts(until);
            pthread_cond_timedwait(&c->cond, &c->lock, &ts);
        }
        bool woke = c->events != seen;
        pthread_mutex_unlock(&c->lock);
        if (!woke) {
            n = c->cq->Dispatch->NdkGetCqResults(c->cq, res, max);
            if (n)
                return n;
            *st = tool_stopped() ? STATUS_CANCELLED : STATUS_IO_TIMEOUT;
            return 0;
        }
    }
}

/* Calling thread, owning the CQ; blocks: the handler driven by ndk_tool_cq_wait. */
static NTSTATUS tool_cq_run_here(ndk_tool_cq *c, int idle_timeout_ms, ndk_tool_cq_handler handler,
                                 ndk_tool_cq_tick tick, void *ctx)
{
    NDK_RESULT r[TOOL_CQ_BATCH];
    NTSTATUS st;
    for (;;) {
        ULONG n = ndk_tool_cq_wait(c, r, TOOL_CQ_BATCH, idle_timeout_ms, &st);
        if (!n)
            return st;
        __atomic_add_fetch(&c->batches, 1, __ATOMIC_RELAXED);
        if (!handler(ctx, r, n))
            return STATUS_SUCCESS;
        if (tick)
            tick(ctx);
    }
}

NTSTATUS ndk_tool_cq_run(ndk_tool_cq *c, bool in_callback, int idle_timeout_ms, ndk_tool_cq_handler handler,
                         ndk_tool_cq_tick tick, void *ctx)
{
    if (c->poll || !in_callback)
        return tool_cq_run_here(c, idle_timeout_ms, handler, tick, ctx);

    /* Hand-off. Until cb_owned is set the CQ is ours, so we drain and arm it here. A
     * notification that came meanwhile was only counted, its arm spent: go round again. One
     * that comes after the hand-off serves the CQ itself. */
    for (;;) {
        pthread_mutex_lock(&c->lock);
        uint64_t seen = c->notifications;
        pthread_mutex_unlock(&c->lock);
        if (!tool_cq_serve(c, handler, ctx))
            return STATUS_SUCCESS;
        pthread_mutex_lock(&c->lock);
        bool quiet = c->notifications == seen;
        if (quiet) {
            c->handler = handler;
            c->handler_ctx = ctx;
            c->cb_owned = true;
        }
        pthread_mutex_unlock(&c->lock);
        if (quiet)
            break;
    }

    /* Sleep until the handler is finished. Notifications do not wake us; a finished handler, a
     * failed CQ or a disconnect do, and the stop flag is looked at every 100 ms. */
    NTSTATUS st = STATUS_SUCCESS;
    uint64_t now = ndk_tool_now_ns();
    uint64_t idle = idle_timeout_ms < 0 ? 0 : (uint64_t)idle_timeout_ms * 1000000u;
    uint64_t deadline = idle_timeout_ms < 0 ? UINT64_MAX : now + idle;
    uint64_t last = __atomic_load_n(&c->batches, __ATOMIC_RELAXED), next_tick = now + 100000000u;
    pthread_mutex_lock(&c->lock);
    while (c->cb_owned) {
        if (c->cq_error != STATUS_SUCCESS) {
            st = c->cq_error;
            break;
        }
        if (tool_stopped()) {
            st = STATUS_CANCELLED;
            break;
        }
        if (tool_cq_gone(c)) {
            st = STATUS_CONNECTION_DISCONNECTED;
            break;
        }
        now = ndk_tool_now_ns();
        uint64_t b = __atomic_load_n(&c->batches, __ATOMIC_RELAXED);
        if (b != last) {
            last = b;
            if (idle_timeout_ms >= 0)
                deadline = now + idle;
        }
        if (now >= deadline) {
            st = STATUS_IO_TIMEOUT;
            break;
        }
        if (tick && now >= next_tick) {
            pthread_mutex_unlock(&c->lock);
            tick(ctx);
            pthread_mutex_lock(&c->lock);
            next_tick = now + 100000000u;
            continue;
        }
        uint64_t until = now + 100000000u;
        if (until > deadline)
            until = deadline;
        struct timespec ts = tool_deadline_ts(until);
        pthread_cond_timedwait(&c->cond, &c->lock, &ts);
    }
    /* Take the CQ back, waiting out a callback inside the handler (it stops at its next batch
     * and never blocks). A notification still due from its last arm finds cb_owned clear and
     * only counts. */
    __atomic_store_n(&c->cb_reclaim, 1, __ATOMIC_RELEASE);
    while (c->cb_busy)
        pthread_cond_wait(&c->cond, &c->lock);
    c->cb_owned = false;
    c->handler = NULL;
    c->handler_ctx = NULL;
    __atomic_store_n(&c->cb_reclaim, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->lock);

    if (st == STATUS_CONNECTION_DISCONNECTED) {
        /* As ndk_tool_cq_wait does: what the CQ still holds comes before the disconnect. */
        NDK_RESULT r[TOOL_CQ_BATCH];
        ULONG n;
        while ((n = c->cq->Dispatch->NdkGetCqResults(c->cq, r, TOOL_CQ_BATCH)) != 0) {
            __atomic_add_fetch(&c->batches, 1, __ATOMIC_RELAXED);
            if (!handler(ctx, r, n))
                return STATUS_SUCCESS;
        }
    }
    return st;
}

/* ---------------------------------------------------------------------------------------- */
/* connections                                                                               */

/* NDK_FN_DISCONNECT_EVENT_CALLBACK: the peer went away; wake the thread waiting on the CQ. */
static void tool_conn_disconnect_event(PVOID ctx)
{
    ndk_tool_conn *c = ctx;
    ndk_tool_cq_kick(c->cq, true);
}

NTSTATUS ndk_tool_conn_init(ndk_tool_conn *c, ndk_tool_adapter *ad, ULONG rq_depth, ULONG iq_depth, ULONG rsge,
                            ULONG isge, ULONG inline_size, bool poll)
{
    NTSTATUS st;
    memset(c, 0, sizeof *c);
    c->ad = ad;
    st = ndk_tool_create_pd(ad->adapter, &c->pd);
    if (st != STATUS_SUCCESS)
        return st;
    st = ndk_tool_cq_create(ad->adapter, rq_depth + iq_depth, poll, &c->cq);
    if (st != STATUS_SUCCESS)
        return st;
    return ndk_tool_create_qp(c->pd, c->cq->cq, c->cq->cq, c, rq_depth, iq_depth, rsge, isge, inline_size, &c->qp);
}

static void tool_conn_addresses(ndk_tool_conn *c)
{
    ULONG len = sizeof c->local;
    if (c->connector->Dispatch->NdkGetLocalAddress(c->connector, (PSOCKADDR)&c->local, &len) != STATUS_SUCCESS)
        memset(&c->local, 0, sizeof c->local);
    len = sizeof c->peer;
    if (c->connector->Dispatch->NdkGetPeerAddress(c->connector, (PSOCKADDR)&c->peer, &len) != STATUS_SUCCESS)
        memset(&c->peer, 0, sizeof c->peer);
}

NTSTATUS ndk_tool_conn_connect(ndk_tool_conn *c, const SOCKADDR_INET *src, const SOCKADDR_INET *dst, ULONG ird,
                               ULONG ord, const void *pdata, ULONG pdata_len, int timeout_ms)
{
    SOCKADDR_INET s = *src, d = *dst;
    uint8_t data[512];
    NTSTATUS st;

    st = ndk_tool_create_connector(c->ad->adapter, &c->connector);
    if (st != STATUS_SUCCESS)
        return st;
    if (pdata_len > sizeof data)
        return STATUS_INVALID_PARAMETER;
    if (pdata_len)
        memcpy(data, pdata, pdata_len);
    ndk_tool_op *op = ndk_tool_op_new();
    st = c->connector->Dispatch->NdkConnect(c->connector, c->qp, (PSOCKADDR)&s, ndk_tool_addr_len(&s), (PSOCKADDR)&d,
                                            ndk_tool_addr_len(&d), ird, ord, pdata_len ? data : NULL, pdata_len,
                                            ndk_tool_op_request_done, op);
    st = tool_op_wait(op, st, timeout_ms, true, NULL);
    if (st == STATUS_CONNECTION_REFUSED) {
        /* A reject's private data (the peer's reason, if it gave one) stays readable. */
        ULONG len = sizeof c->peer_data;
        NTSTATUS gst = c->connector->Dispatch->NdkGetConnectionData(c->connector, NULL, NULL, c->peer_data, &len);
        c->peer_data_len = gst == STATUS_SUCCESS || gst == STATUS_BUFFER_TOO_SMALL ? len : 0;
        if (c->peer_data_len > sizeof c->peer_data)
            c->peer_data_len = sizeof c->peer_data;
    }
    if (st != STATUS_SUCCESS)
        return st;
    c->peer_data_len = sizeof c->peer_data;
    st = c->connector->Dispatch->NdkGetConnectionData(c->connector, &c->ird, &c->ord, c->peer_data,
                                                      &c->peer_data_len);
    if (st == STATUS_BUFFER_TOO_SMALL)
        c->peer_data_len = sizeof c->peer_data;
    else if (st != STATUS_SUCCESS)
        return st;
    if (c->peer_data_len > sizeof c->peer_data)
        c->peer_data_len = sizeof c->peer_data;
    op = ndk_tool_op_new();
    st = c->connector->Dispatch->NdkCompleteConnect(c->connector, tool_conn_disconnect_event, c,
                                                    ndk_tool_op_request_done, op);
    st = tool_op_wait(op, st, timeout_ms, true, NULL);
    if (st != STATUS_SUCCESS)
        return st;
    c->established = true;
    tool_conn_addresses(c);
    return STATUS_SUCCESS;
}

NTSTATUS ndk_tool_connector_data(NDK_CONNECTOR *conn, ULONG *ird, ULONG *ord, void *buf, ULONG *len)
{
    ULONG cap = *len;
    NTSTATUS st = conn->Dispatch->NdkGetConnectionData(conn, ird, ord, buf, len);
    if (st == STATUS_BUFFER_TOO_SMALL) {
        *len = cap;
        st = STATUS_SUCCESS;
    }
    if (*len > cap)
        *len = cap;
    return st;
}

NTSTATUS ndk_tool_conn_accept(ndk_tool_conn *c, NDK_CONNECTOR *connector, ULONG ird, ULONG ord, const void *pdata,
                              ULONG pdata_len, int timeout_ms)
{
    uint8_t data[512];
    if (pdata_len > sizeof data)
        return STATUS_INVALID_PARAMETER;
    if (pdata_len)
        memcpy(data, pdata, pdata_len);
    c->connector = connector;
    ndk_tool_op *op = ndk_tool_op_new();
    NTSTATUS st = connector->Dispatch->NdkAccept(connector, c->qp, ird, ord, pdata_len ? data : NULL, pdata_len,
                                                 tool_conn_disconnect_event, c, ndk_tool_op_request_done, op);
    st = tool_op_wait(op, st, timeout_ms, true, NULL);
    if (st != STATUS_SUCCESS)
        return st;
    c->established = true;
    tool_conn_addresses(c);
    return STATUS_SUCCESS;
}

void ndk_tool_reject(NDK_CONNECTOR *incoming, const void *pdata, ULONG pdata_len)
{
    incoming->Dispatch->NdkReject(incoming, (PVOID)pdata, pdata_len);
    ndk_tool_close(&incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
}

void ndk_tool_conn_close(ndk_tool_conn *c)
{
    if (c->connector && c->established) {
        ndk_tool_op *op = ndk_tool_op_new();
        NTSTATUS st = c->connector->Dispatch->NdkDisconnect(c->connector, ndk_tool_op_request_done, op);
        ndk_tool_op_finish(op, st, NDK_TOOL_OP_TIMEOUT_MS, NULL);
    }
    NDK_TOOL_CLOSE(c->connector);
    NDK_TOOL_CLOSE(c->qp);
    ndk_tool_cq_destroy(c->cq);
    NDK_TOOL_CLOSE(c->pd);
    c->connector = NULL;
    c->qp = NULL;
    c->cq = NULL;
    c->pd = NULL;
    c->established = false;
}

/* ---------------------------------------------------------------------------------------- */
/* listeners                                                                                 */

#define TOOL_MAX_LISTEN 32

struct tool_pending {
    NDK_CONNECTOR       *conn;
    int                  slot;
    struct tool_pending *next;
};

struct tool_slot {
    ndk_tool_server *srv;
    int              index;
    ndk_tool_adapter ad;
    NDK_LISTENER    *listener;
    SOCKADDR_INET    addr;
    ndk_tool_op     *close_op;
};

struct ndk_tool_server {
    ndk_rt              *rt;
    int                  nslots;
    struct tool_slot     slots[TOOL_MAX_LISTEN];
    pthread_mutex_t      lock;
    pthread_cond_t       cond;
    struct tool_pending *head, *tail;
};

/* NDK_FN_CONNECT_EVENT_CALLBACK: queue the request for ndk_tool_server_next. */
static void tool_connect_event(PVOID ctx, NDK_CONNECTOR *conn)
{
    struct tool_slot *slot = ctx;
    ndk_tool_server *s = slot->srv;
    struct tool_pending *p = calloc(1, sizeof *p);
    if (!p) {
        conn->Dispatch->NdkReject(conn, NULL, 0);
        return;                 /* leaked on purpose: closing here could wait on us */
    }
    p->conn = conn;
    p->slot = slot->index;
    pthread_mutex_lock(&s->lock);
    if (s->tail)
        s->tail->next = p;
    else
        s->head = p;
    s->tail = p;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static NTSTATUS tool_server_add(ndk_tool_server *s, ndk_rt_adapter_id id, const SOCKADDR_INET *addr)
{
    if (s->nslots >= TOOL_MAX_LISTEN)
        return STATUS_TOO_MANY_ADDRESSES;
    struct tool_slot *slot = &s->slots[s->nslots];
    memset(slot, 0, sizeof *slot);
    slot->srv = s;
    slot->index = s->nslots;
    slot->addr = *addr;
    NTSTATUS st = ndk_tool_adapter_open(s->rt, id, &slot->ad);
    if (st != STATUS_SUCCESS)
        return st;
    ndk_tool_op *op = ndk_tool_op_new();
    NDK_LISTENER *l = NULL;
    st = slot->ad.adapter->Dispatch->NdkCreateListener(slot->ad.adapter, tool_connect_event, slot,
                                                       ndk_tool_op_create_done, op, &l);
    st = tool_create_finish(op, st, (void **)&slot->listener, l);
    if (st == STATUS_SUCCESS) {
        SOCKADDR_INET a = *addr;
        op = ndk_tool_op_new();
        st = slot->listener->Dispatch->NdkListen(slot->listener, (PSOCKADDR)&a, ndk_tool_addr_len(&a),
                                                 ndk_tool_op_request_done, op);
        st = ndk_tool_op_finish(op, st, NDK_TOOL_OP_TIMEOUT_MS, NULL);
        if (st == STATUS_SUCCESS) {
            /* Learn the port when the provider chose it. */
            ULONG len = sizeof a;
            if (slot->listener->Dispatch->NdkGetLocalAddress(slot->listener, (PSOCKADDR)&a, &len) == STATUS_SUCCESS)
                slot->addr = a;
            s->nslots++;
            return STATUS_SUCCESS;
        }
        NDK_TOOL_CLOSE(slot->listener);
    }
    ndk_tool_adapter_close(&slot->ad);
    return st;
}

NTSTATUS ndk_tool_server_start(ndk_rt *rt, const SOCKADDR_INET *addr, const char *provider, ULONG ifindex,
                               ndk_tool_server **out, char *why, size_t whylen)
{
    char a[NDK_TOOL_ADDRSTRLEN];
    ndk_tool_server *s = calloc(1, sizeof *s);
    ndk_rt_adapter_info *list = NULL;
    NTSTATUS st, last = STATUS_OBJECT_NAME_NOT_FOUND;
    uint16_t port = ndk_tool_addr_port(addr);

    if (!s)
        return STATUS_INSUFFICIENT_RESOURCES;
    s->rt = rt;
    pthread_mutex_init(&s->lock, NULL);
    tool_cond_init(&s->cond);
    why[0] = '\0';

    if (addr->si_family != AF_UNSPEC && !ndk_tool_addr_is_any(addr)) {
        ndk_rt_adapter_id id;
        st = ndk_rt_find_adapter_by_address(rt, (const struct sockaddr *)addr, provider, &id);
        if (st != STATUS_SUCCESS) {
            snprintf(why, whylen, "no NDK adapter serves %s (see ndkinfo)", ndk_tool_addr_str(addr, false, a, sizeof a));
            goto fail;
        }
        st = tool_server_add(s, id, addr);
        if (st != STATUS_SUCCESS) {
            snprintf(why, whylen, "listen on %s failed: %s", ndk_tool_addr_str(addr, true, a, sizeof a),
                     ndk_tool_status(st));
            goto fail;
        }
        *out = s;
        return STATUS_SUCCESS;
    }

    ULONG count = 64;
    list = calloc(count, sizeof *list);
    if (!list) {
        st = STATUS_INSUFFICIENT_RESOURCES;
        goto fail;
    }
    st = ndk_rt_adapter_list(rt, list, &count);
    if (st == STATUS_BUFFER_TOO_SMALL)
        count = 64;
    else if (st != STATUS_SUCCESS)
        goto fail;

    static const int families[2] = { AF_INET, AF_INET6 };
    for (int fi = 0; fi < 2; fi++) {
        int fam = families[fi];
        if (addr->si_family != AF_UNSPEC && addr->si_family != fam)
            continue;
        SOCKADDR_INET any;
        memset(&any, 0, sizeof any);
        any.si_family = (ADDRESS_FAMILY)fam;
        ndk_tool_addr_set_port(&any, port);
        /* First the wildcard through one adapter: a provider that supports it then serves
         * every address of the family from one listener. */
        int first = -1;
        for (ULONG i = 0; i < count && first < 0; i++) {
            if ((provider && strcmp(list[i].provider, provider)) || (ifindex && list[i].ifindex != ifindex) ||
                !list[i].enabled)
                continue;
            for (ULONG k = 0; k < list[i].address_count && k < NDK_RT_MAX_ADDRESSES; k++)
                if (list[i].addresses[k].si_family == fam) {
                    first = (int)i;
                    break;
                }
        }
        if (first < 0)
            continue;
        if (!ifindex) {
            st = tool_server_add(s, list[first].id, &any);
            if (st == STATUS_SUCCESS)
                continue;
            last = st;
        }
        /* Otherwise every address of the family on every adapter. */
        for (ULONG i = 0; i < count; i++) {
            if ((provider && strcmp(list[i].provider, provider)) || (ifindex && list[i].ifindex != ifindex) ||
                !list[i].enabled)
                continue;
            for (ULONG k = 0; k < list[i].address_count && k < NDK_RT_MAX_ADDRESSES; k++) {
                SOCKADDR_INET one = list[i].addresses[k];
                if (one.si_family != fam)
                    continue;
                ndk_tool_addr_set_port(&one, port);
                st = tool_server_add(s, list[i].id, &one);
                if (st != STATUS_SUCCESS)
                    last = st;
            }
        }
    }
    free(list);
    list = NULL;
    if (s->nslots == 0) {
        st = last;
        snprintf(why, whylen, "cannot listen on %s: %s", ndk_tool_addr_str(addr, true, a, sizeof a),
                 last == STATUS_OBJECT_NAME_NOT_FOUND ? "no NDK adapter has an address of that family (see ndkinfo)"
                                                      : ndk_tool_status(last));
        goto fail;
    }
    *out = s;
    return STATUS_SUCCESS;
fail:
    free(list);
    ndk_tool_server_stop(s);
    return st == STATUS_SUCCESS ? STATUS_OBJECT_NAME_NOT_FOUND : st;
}

const char *ndk_tool_server_where(ndk_tool_server *s, char *buf, size_t len)
{
    char a[NDK_TOOL_ADDRSTRLEN];
    buf[0] = '\0';
    for (int i = 0; i < s->nslots; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s (%s, %s)", i ? ", " : "",
                 ndk_tool_addr_str(&s->slots[i].addr, true, a, sizeof a), s->slots[i].ad.ifname,
                 s->slots[i].ad.provider);
    }
    return buf;
}

NTSTATUS ndk_tool_server_next(ndk_tool_server *s, int timeout_ms, NDK_CONNECTOR **conn, ndk_tool_adapter **ad)
{
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : ndk_tool_now_ns() + (uint64_t)timeout_ms * 1000000u;
    pthread_mutex_lock(&s->lock);
    while (!s->head) {
        uint64_t now = ndk_tool_now_ns();
        if (now >= deadline || tool_stopped()) {
            pthread_mutex_unlock(&s->lock);
            return tool_stopped() ? STATUS_CANCELLED : STATUS_IO_TIMEOUT;
        }
        uint64_t until = now + 100000000u;
        if (until > deadline)
            until = deadline;
        struct timespec ts = tool_deadline_ts(until);
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    struct tool_pending *p = s->head;
    s->head = p->next;
    if (!s->head)
        s->tail = NULL;
    pthread_mutex_unlock(&s->lock);
    *conn = p->conn;
    *ad = &s->slots[p->slot].ad;
    free(p);
    return STATUS_SUCCESS;
}

static void tool_server_drain(ndk_tool_server *s)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        struct tool_pending *p = s->head;
        if (p) {
            s->head = p->next;
            if (!s->head)
                s->tail = NULL;
        }
        pthread_mutex_unlock(&s->lock);
        if (!p)
            return;
        p->conn->Dispatch->NdkReject(p->conn, NULL, 0);
        ndk_tool_close(&p->conn->Header, NDK_TOOL_OP_TIMEOUT_MS);
        free(p);
    }
}

void ndk_tool_server_stop(ndk_tool_server *s)
{
    if (!s)
        return;
    /* Ask every listener to close (no connect events after that), refuse what was queued, and
     * wait: a listener's close completes once the connectors it produced are closed. */
    for (int i = 0; i < s->nslots; i++) {
        struct tool_slot *slot = &s->slots[i];
        slot->close_op = ndk_tool_op_new();
        NTSTATUS st = slot->listener->Dispatch->NdkCloseListener(&slot->listener->Header, ndk_tool_op_close_done,
                                                                 slot->close_op);
        if (st != STATUS_PENDING) {
            ndk_tool_op_finish(slot->close_op, st, 0, NULL);
            slot->close_op = NULL;
        }
    }
    uint64_t deadline = ndk_tool_now_ns() + (uint64_t)NDK_TOOL_OP_TIMEOUT_MS * 1000000u;
    for (;;) {
        tool_server_drain(s);
        bool all = true;
        for (int i = 0; i < s->nslots; i++)
            if (s->slots[i].close_op && !tool_op_done(s->slots[i].close_op))
                all = false;
        if (all || ndk_tool_now_ns() > deadline)
            break;
        usleep(10000);
    }
    bool stuck = false;
    for (int i = 0; i < s->nslots; i++) {
        struct tool_slot *slot = &s->slots[i];
        if (slot->close_op &&
            ndk_tool_op_finish(slot->close_op, STATUS_PENDING, 0, NULL) != STATUS_SUCCESS)
            stuck = true;
    }
    if (stuck) {
        ndk_tool_err("a listener did not finish closing; exiting without closing its adapter");
        return;
    }
    for (int i = 0; i < s->nslots; i++)
        ndk_tool_adapter_close(&s->slots[i].ad);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* time, CPU, statistics                                                                     */

uint64_t ndk_tool_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ndk_tool_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
           (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}

static int tool_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void ndk_tool_sort_u64(uint64_t *v, size_t n) { qsort(v, n, sizeof *v, tool_cmp_u64); }

uint64_t ndk_tool_percentile(uint64_t *sorted, size_t n, double q)
{
    if (!n)
        return 0;
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

const char *ndk_tool_size_str(uint64_t b, char *buf, size_t len)
{
    if (b >= (1u << 30) && b % (1u << 30) == 0)
        snprintf(buf, len, "%lluG", (unsigned long long)(b >> 30));
    else if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(buf, len, "%lluM", (unsigned long long)(b >> 20));
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, len, "%lluK", (unsigned long long)(b >> 10));
    else
        snprintf(buf, len, "%llu", (unsigned long long)b);
    return buf;
}

int ndk_tool_parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    unsigned long long v = strtoull(s, &end, 0);
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'I')
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end)
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}
