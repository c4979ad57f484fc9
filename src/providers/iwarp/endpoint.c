/* endpoint.c - ND endpoints (local IP, ND port) and their reference counting (§1.8, §5.11.5),
 * plus the sockaddr helpers the CM uses. For iWARP the ND port is the TCP port (§6.7), so an
 * endpoint is also a TCP local endpoint; the table here enforces the NDK sharing rules inside
 * this process, and bind() enforces them against everyone else.
 *
 * Talks to: nothing of the provider but the runtime's AdapterHasAddress. Called by cm.c,
 * connector.c, listener.c, shared_endpoint.c. */
#include "iwarp.h"

#include <netinet/tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#ifndef IP_LOCAL_PORT_RANGE
#define IP_LOCAL_PORT_RANGE 51   /* Linux 6.3 (linux/in.h); older kernels refuse it (probed ports) */
#endif

socklen_t iw_sa_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? (socklen_t)sizeof(struct sockaddr_in6) : (socklen_t)sizeof(struct sockaddr_in);
}

int iw_sa_from_user(const struct sockaddr *in, ULONG len, SOCKADDR_INET *out)
{
    memset(out, 0, sizeof(*out));
    if (!in || len < sizeof(sa_family_t))
        return -EINVAL;
    if (in->sa_family == AF_INET) {
        if (len < sizeof(struct sockaddr_in))
            return -EINVAL;
        memcpy(&out->Ipv4, in, sizeof(struct sockaddr_in));
        return 0;
    }
    if (in->sa_family == AF_INET6) {
        if (len < sizeof(struct sockaddr_in6))
            return -EINVAL;
        memcpy(&out->Ipv6, in, sizeof(struct sockaddr_in6));
        /* An IPv4-mapped IPv6 address is refused: one family per endpoint keeps the port space
         * rules simple (§8.34). */
        if (IN6_IS_ADDR_V4MAPPED(&out->Ipv6.sin6_addr))
            return -EAFNOSUPPORT;
        return 0;
    }
    return -EAFNOSUPPORT;
}

uint16_t iw_sa_port(const SOCKADDR_INET *a)
{
    return ntohs(a->si_family == AF_INET6 ? a->Ipv6.sin6_port : a->Ipv4.sin_port);
}

void iw_sa_set_port(SOCKADDR_INET *a, uint16_t port)
{
    if (a->si_family == AF_INET6)
        a->Ipv6.sin6_port = htons(port);
    else
        a->Ipv4.sin_port = htons(port);
}

bool iw_sa_is_wildcard(const SOCKADDR_INET *a)
{
    if (a->si_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&a->Ipv6.sin6_addr);
    return a->Ipv4.sin_addr.s_addr == htonl(INADDR_ANY);
}

bool iw_sa_addr_equal(const SOCKADDR_INET *a, const SOCKADDR_INET *b)
{
    if (a->si_family != b->si_family)
        return false;
    if (a->si_family == AF_INET6)
        return memcmp(&a->Ipv6.sin6_addr, &b->Ipv6.sin6_addr, sizeof(struct in6_addr)) == 0;
    return a->Ipv4.sin_addr.s_addr == b->Ipv4.sin_addr.s_addr;
}

bool iw_sa_equal(const SOCKADDR_INET *a, const SOCKADDR_INET *b)
{
    return iw_sa_addr_equal(a, b) && iw_sa_port(a) == iw_sa_port(b);
}

NTSTATUS iw_sa_copy_out(const SOCKADDR_INET *a, PSOCKADDR out, ULONG *len)
{
    ULONG need = (ULONG)iw_sa_len((const struct sockaddr *)a);

    if (!len)
        return STATUS_INVALID_PARAMETER;
    if (a->si_family != AF_INET && a->si_family != AF_INET6) {
        /* §8.37: no address yet (not connected / not listening). */
        *len = 0;
        return STATUS_INVALID_DEVICE_REQUEST;
    }
    if (!out || *len < need) {
        *len = need;
        return STATUS_BUFFER_TOO_SMALL;
    }
    memcpy(out, a, need);
    *len = need;
    return STATUS_SUCCESS;
}

const char *iw_sa_str(const SOCKADDR_INET *a, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (a->si_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->Ipv6.sin6_addr, ip, sizeof ip);
        snprintf(buf, cap, "[%s]:%u", ip, iw_sa_port(a));
    } else if (a->si_family == AF_INET) {
        inet_ntop(AF_INET, &a->Ipv4.sin_addr, ip, sizeof ip);
        snprintf(buf, cap, "%s:%u", ip, iw_sa_port(a));
    } else {
        snprintf(buf, cap, "(none)");
    }
    return buf;
}

/* Does an existing endpoint e conflict with a new one at a (same family and port, and same
 * address or either is the wildcard)? */
static bool iw_ep_conflicts(const struct iw_endpoint *e, const SOCKADDR_INET *a)
{
    if (e->addr.si_family != a->si_family || iw_sa_port(&e->addr) != iw_sa_port(a))
        return false;
    return iw_sa_addr_equal(&e->addr, a) || iw_sa_is_wildcard(&e->addr) || iw_sa_is_wildcard(a);
}

uint32_t iw_sa_hash(const SOCKADDR_INET *a)
{
    uint32_t h = 2166136261u;         /* FNV-1a over address and port */
    const uint8_t *b;
    size_t n;

    if (a->si_family == AF_INET6) {
        b = (const uint8_t *)&a->Ipv6.sin6_addr;
        n = sizeof a->Ipv6.sin6_addr;
    } else {
        b = (const uint8_t *)&a->Ipv4.sin_addr;
        n = sizeof a->Ipv4.sin_addr;
    }
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    h = (h ^ (iw_sa_port(a) & 0xffu)) * 16777619u;
    h = (h ^ (iw_sa_port(a) >> 8)) * 16777619u;
    return h;
}

/* Every endpoint that could conflict with a has a's port, so one chain holds them all. */
static struct iw_hnode **iw_ep_bucket(struct iw_device *dev, uint16_t port)
{
    return &dev->ep_hash[port % IW_EP_BUCKETS];
}

static bool iw_ep_in_use(struct iw_device *dev, const SOCKADDR_INET *a)
{
    for (struct iw_hnode *n = *iw_ep_bucket(dev, iw_sa_port(a)); n; n = n->next) {
        if (iw_ep_conflicts(ndk_container_of(n, struct iw_endpoint, hash), a))
            return true;
    }
    return false;
}

static int iw_ep_bind(int fd, const SOCKADDR_INET *a)
{
    if (fd < 0)
        return 0;
    if (bind(fd, (const struct sockaddr *)a, iw_sa_len((const struct sockaddr *)a)) < 0)
        return -errno;
    return 0;
}

/* ---- the process-wide ephemeral port allocator (§5.11.5) ----
 *
 * Every device of every provider instance in this process draws port-0 endpoints from one
 * allocator, so two devices or two runtimes never probe the same candidates. It starts at a
 * random offset (so processes start apart) and rotates. users[] counts this process's endpoints
 * on each port of the range (explicit ones included) to skip them without a system call; the
 * authority against everyone else is bind() itself: every first bind is exclusive (no
 * SO_REUSEADDR / SO_REUSEPORT before it, cm.c iw_socket), so a port some socket holds fails
 * with EADDRINUSE and the probe moves on. Job of iw_eph.lock: every field; a leaf lock (taken
 * under dev->lock), never held across a system call. */
#define IW_EPH_SPAN (NDK_EPHEMERAL_PORT_LAST - NDK_EPHEMERAL_PORT_FIRST + 1)

static struct {
    pthread_mutex_t lock;
    bool seeded;
    uint32_t cursor;                  /* offset of the next candidate in the range */
    uint16_t users[IW_EPH_SPAN];
} iw_eph = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool iw_eph_in_range(uint16_t port)
{
    return port >= NDK_EPHEMERAL_PORT_FIRST;  /* NDK_EPHEMERAL_PORT_LAST is the top of uint16_t */
}

static void iw_eph_hold(uint16_t port, int delta)
{
    if (!iw_eph_in_range(port))
        return;
    pthread_mutex_lock(&iw_eph.lock);
    iw_eph.users[port - NDK_EPHEMERAL_PORT_FIRST] = (uint16_t)(iw_eph.users[port - NDK_EPHEMERAL_PORT_FIRST] + delta);
    pthread_mutex_unlock(&iw_eph.lock);
}

/* Takes the next candidate no endpoint of this process holds and marks it held (released with
 * iw_eph_hold(port, -1) when the probe fails). 0 when all are held. */
static uint16_t iw_eph_next(void)
{
    uint16_t port = 0;

    pthread_mutex_lock(&iw_eph.lock);
    if (!iw_eph.seeded) {
        uint32_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            r = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() * 2654435761u);
        }
        iw_eph.cursor = r % IW_EPH_SPAN;
        iw_eph.seeded = true;
    }
    for (unsigned i = 0; i < IW_EPH_SPAN; i++) {
        uint32_t off = iw_eph.cursor;
        iw_eph.cursor = (off + 1) % IW_EPH_SPAN;
        if (!iw_eph.users[off]) {
            iw_eph.users[off] = 1;
            port = (uint16_t)(NDK_EPHEMERAL_PORT_FIRST + off);
            break;
        }
    }
    pthread_mutex_unlock(&iw_eph.lock);
    return port;
}

/* Adds the endpoint table's entry for a (port held in iw_eph already; released here on
 * failure). dev->lock held. */
static int iw_ep_new(struct iw_device *dev, const SOCKADDR_INET *a, enum iw_ep_kind kind, struct iw_endpoint **out)
{
    struct iw_endpoint *ep = calloc(1, sizeof(*ep));

    if (!ep) {
        iw_eph_hold(iw_sa_port(a), -1);
        return -ENOMEM;
    }
    ep->kind = kind;
    ep->addr = *a;
    ep->refs = 1;
    ndk_list_init(&ep->conns);
    ndk_list_add_tail(&dev->endpoints, &ep->link);
    iw_hnode_add(iw_ep_bucket(dev, iw_sa_port(a)), &ep->hash);
    *out = ep;
    return 0;
}

int iw_ep_acquire(struct iw_device *dev, const SOCKADDR_INET *addr, enum iw_ep_kind kind, int fd,
                  struct iw_endpoint **out)
{
    SOCKADDR_INET a = *addr;
    int err;

    if (iw_sa_port(&a) != 0) {
        if (iw_ep_in_use(dev, &a))
            return -EADDRINUSE;
        err = iw_ep_bind(fd, &a);
        if (err)
            return err == -EADDRINUSE || err == -EACCES ? -EADDRINUSE : err;
        iw_eph_hold(iw_sa_port(&a), +1);
    } else {
        /* §5.11.5: port 0 -> a free port of 49152-65535, probed with bind() until one is free
         * for everyone (this table, the other devices and instances, other processes). */
        unsigned tries;

        err = -ERANGE;
        for (tries = 0; tries < IW_EPH_SPAN; tries++) {
            uint16_t port = iw_eph_next();
            if (!port)
                break;
            iw_sa_set_port(&a, port);
            err = iw_ep_in_use(dev, &a) ? -EADDRINUSE : iw_ep_bind(fd, &a);
            if (err == 0)
                break;
            iw_eph_hold(port, -1);
            if (err != -EADDRINUSE && err != -EACCES)
                return err;
            err = -ERANGE;
        }
        if (err)
            return -ERANGE;
    }
    return iw_ep_new(dev, &a, kind, out);
}

int iw_ep_acquire_chosen(struct iw_device *dev, const SOCKADDR_INET *addr, struct iw_endpoint **out)
{
    iw_eph_hold(iw_sa_port(addr), +1);
    return iw_ep_new(dev, addr, IW_EP_CONNECT, out);
}

int iw_ep_connect_bind(int fd, const SOCKADDR_INET *src)
{
    SOCKADDR_INET a = *src;
    int one = 1;
    /* IP_LOCAL_PORT_RANGE packs the lowest port in the low half, the highest in the high half. */
    uint32_t range = (uint32_t)NDK_EPHEMERAL_PORT_FIRST | (uint32_t)NDK_EPHEMERAL_PORT_LAST << 16;

    if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one) < 0)
        return -ENOPROTOOPT;
    if (setsockopt(fd, IPPROTO_IP, IP_LOCAL_PORT_RANGE, &range, sizeof range) < 0)
        return -ENOPROTOOPT;
    iw_sa_set_port(&a, 0);
    return iw_ep_bind(fd, &a);
}

void iw_ep_get(struct iw_endpoint *ep)
{
    ep->refs++;
}

void iw_ep_put(struct iw_device *dev, struct iw_endpoint *ep)
{
    (void)dev;
    if (--ep->refs)
        return;
    ndk_list_del(&ep->link);
    iw_hnode_del(&ep->hash);
    iw_eph_hold(iw_sa_port(&ep->addr), -1);
    free(ep);
}

bool iw_ep_is_local(struct iw_device *dev, const struct sockaddr *addr)
{
    SOCKADDR_INET a;

    memset(&a, 0, sizeof a);
    memcpy(&a, addr, iw_sa_len(addr));
    /* §8.34 decision: the wildcard address (0.0.0.0 / ::) is accepted for listeners and shared
     * endpoints and means "every address of this adapter". */
    if (iw_sa_is_wildcard(&a))
        return true;
    if (!dev->prov->drv.services->AdapterHasAddress)
        return true;
    return dev->prov->drv.services->AdapterHasAddress(dev->miniport_handle, addr) != FALSE;
}

int iw_ep_socket(int family, enum iw_sock_use use)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;

    if (fd < 0)
        return -errno;
    /* TCP_NODELAY as siw does: each FPDU leaves as soon as it is built. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (use == IW_SOCK_LISTEN)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (use == IW_SOCK_SEP_CONN)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    if (family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    return fd;
}

void iw_ep_sockname(int fd, SOCKADDR_INET *a, bool peer)
{
    socklen_t len = sizeof(*a);
    SOCKADDR_INET tmp;

    memset(&tmp, 0, sizeof tmp);
    if ((peer ? getpeername(fd, (struct sockaddr *)&tmp, &len) : getsockname(fd, (struct sockaddr *)&tmp, &len)) == 0)
        *a = tmp;
}
