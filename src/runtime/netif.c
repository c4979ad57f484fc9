/* Interfaces and addresses from rtnetlink (see netif.h). Everything the kernel sends is treated as
 * untrusted bytes: every message and attribute is bounds-checked before it is read, and scalars are
 * copied out with memcpy so odd alignment in a caller's buffer cannot trap. */
#define _GNU_SOURCE
#include "netif.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* A dump interrupted by concurrent changes is retried this many times in all. */
#define NETIF_SNAPSHOT_ATTEMPTS 4
/* The kernel fills dump datagrams up to the size we read with, capped at 32 KiB. */
#define NETIF_RECV_INITIAL 32768
/* Protects "may block briefly": the kernel answers dumps at once, so silence this long is a fault. */
#define NETIF_DUMP_TIMEOUT_S 10
/* A drain stops after this many datagrams so a change storm cannot starve its caller. */
#define NETIF_DRAIN_MAX_DATAGRAMS 4096
/* Asked for, not forced: the kernel caps it at net.core.rmem_max; overflow is still handled. */
#define NETIF_MONITOR_RCVBUF (1 << 20)
#define NETIF_SENDER_NOT_KERNEL UINT32_MAX
#ifndef RTEXT_FILTER_SKIP_STATS
#define RTEXT_FILTER_SKIP_STATS (1 << 3) /* older uapi headers; older kernels ignore unknown bits */
#endif

struct nl_buf {
    void *p;
    size_t cap;
};

struct netif_vec {
    struct ndk_netif *v;
    size_t n, cap;
};

struct ndk_netif_monitor {
    int fd;
    int pending; /* a change seen by a drain that then failed, reported by the next drain */
    struct nl_buf buf;
};

/* Grows b to hold at least need bytes. Never blocks. */
static int buf_reserve(struct nl_buf *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : NETIF_RECV_INITIAL;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return -ENOMEM;
        cap *= 2;
    }
    void *p = realloc(b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Receives one whole datagram into b, growing it first (peek) so nothing is ever truncated.
 * Returns its length or -errno; *sender is the sending port, 0 for the kernel.
 * Blocks unless flags has MSG_DONTWAIT; no locks. */
static ssize_t nl_recv(int fd, struct nl_buf *b, int flags, uint32_t *sender)
{
    for (;;) {
        struct sockaddr_nl sa;
        struct iovec iov = { .iov_base = b->p, .iov_len = b->cap };
        struct msghdr msg = { .msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n = recvmsg(fd, &msg, flags | MSG_PEEK | MSG_TRUNC);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if ((size_t)n > b->cap) {
            int rc = buf_reserve(b, (size_t)n);
            if (rc < 0)
                return rc;
            continue;
        }
        memset(&sa, 0, sizeof sa);
        iov = (struct iovec){ .iov_base = b->p, .iov_len = b->cap };
        msg = (struct msghdr){ .msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = &iov, .msg_iovlen = 1 };
        n = recvmsg(fd, &msg, flags);
        if (n < 0) {
            /* The peeked datagram is still queued; ENOBUFS here is a fresh overflow for the caller. */
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (msg.msg_flags & MSG_TRUNC)
            return -EMSGSIZE; /* only if someone else read the socket between peek and read */
        if (msg.msg_namelen >= sizeof sa && sa.nl_family == AF_NETLINK)
            *sender = sa.nl_pid;
        else
            *sender = NETIF_SENDER_NOT_KERNEL;
        return n;
    }
}

/* The whole message at off in buf[0..len), or NULL when none fits. Replaces NLMSG_OK/NLMSG_NEXT,
 * whose int arithmetic mixes signedness; here every length is checked before it is trusted.
 * Never blocks. */
static const struct nlmsghdr *nl_msg_at(const void *buf, size_t len, size_t off)
{
    if (off > len || len - off < sizeof(struct nlmsghdr))
        return NULL;
    const struct nlmsghdr *nh = (const struct nlmsghdr *)((const char *)buf + off);
    if (nh->nlmsg_len < sizeof *nh || nh->nlmsg_len > len - off)
        return NULL;
    return nh;
}

#define NL_FOR_EACH_MSG(nh, buf, len) \
    for (size_t nl_off_ = 0; ((nh) = nl_msg_at((buf), (len), nl_off_)) != NULL; nl_off_ += NLMSG_ALIGN((nh)->nlmsg_len))

/* Bytes of attributes after a family header of hdrlen, as the int RTA_OK wants; clamping only
 * ever shortens what is read. The caller has checked nlmsg_len >= NLMSG_LENGTH(hdrlen). Never blocks. */
static int rta_space(const struct nlmsghdr *nh, size_t hdrlen)
{
    size_t n = nh->nlmsg_len - NLMSG_LENGTH(hdrlen);
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* Reads a scalar attribute of exactly its size; returns 0 if the payload has another size. Never blocks. */
static int rta_get_u32(const struct rtattr *rta, uint32_t *v)
{
    if (RTA_PAYLOAD(rta) != sizeof *v)
        return 0;
    memcpy(v, RTA_DATA(rta), sizeof *v);
    return 1;
}

/* Appends the interface described by an RTM_NEWLINK; ignores malformed or non-link messages.
 * The arrival number is parked in naddrs until sort_links, which needs it for a stable order.
 * Returns 0 or -ENOMEM. Never blocks. */
static int add_link(struct netif_vec *vec, const struct nlmsghdr *nh)
{
    if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
        return 0;
    struct ifinfomsg ifi;
    memcpy(&ifi, NLMSG_DATA(nh), sizeof ifi);
    /* Bridge-port and per-protocol link messages carry other payloads about the same ifindex. */
    if (ifi.ifi_family != AF_UNSPEC || ifi.ifi_index <= 0)
        return 0;
    if (vec->n == vec->cap) {
        size_t cap = vec->cap ? vec->cap * 2 : 16;
        if (cap > SIZE_MAX / sizeof *vec->v)
            return -ENOMEM;
        struct ndk_netif *v = realloc(vec->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        vec->v = v;
        vec->cap = cap;
    }
    struct ndk_netif *nif = &vec->v[vec->n];
    memset(nif, 0, sizeof *nif);
    nif->ifindex = ifi.ifi_index;
    nif->flags = ifi.ifi_flags;
    nif->naddrs = vec->n;

    const struct rtattr *rta = (const struct rtattr *)((const char *)NLMSG_DATA(nh) + NLMSG_ALIGN(sizeof(struct ifinfomsg)));
    int len = rta_space(nh, sizeof(struct ifinfomsg));
    for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
        size_t plen = RTA_PAYLOAD(rta);
        switch (rta->rta_type) {
        case IFLA_IFNAME: {
            /* The kernel NUL-terminates; odd data may not, so never read past the payload. */
            size_t n = strnlen(RTA_DATA(rta), plen);
            if (n >= sizeof nif->name)
                n = sizeof nif->name - 1;
            memcpy(nif->name, RTA_DATA(rta), n);
            nif->name[n] = '\0';
            break;
        }
        case IFLA_MTU: {
            uint32_t mtu;
            if (rta_get_u32(rta, &mtu))
                nif->mtu = mtu;
            break;
        }
        case IFLA_ADDRESS:
            if (plen > sizeof nif->hwaddr)
                plen = sizeof nif->hwaddr;
            memcpy(nif->hwaddr, RTA_DATA(rta), plen);
            nif->hwaddr_len = (unsigned)plen;
            break;
        default:
            break;
        }
    }
    vec->n++;
    return 0;
}

/* Orders by ifindex, then arrival, so that the newest report of a repeated ifindex sorts last. */
static int cmp_link(const void *pa, const void *pb)
{
    const struct ndk_netif *a = pa, *b = pb;
    if (a->ifindex != b->ifindex)
        return a->ifindex < b->ifindex ? -1 : 1;
    return a->naddrs < b->naddrs ? -1 : a->naddrs > b->naddrs;
}

/* Sorts by ifindex and keeps only the newest entry per ifindex (an interrupted dump can repeat
 * one). Returns 1 if a repeat was dropped. Never blocks. */
static int sort_links(struct netif_vec *vec)
{
    int repeated = 0;
    if (vec->n > 1)
        qsort(vec->v, vec->n, sizeof *vec->v, cmp_link);
    size_t out = 0;
    for (size_t i = 0; i < vec->n; i++) {
        if (i + 1 < vec->n && vec->v[i + 1].ifindex == vec->v[i].ifindex) {
            repeated = 1;
            continue;
        }
        if (out != i)
            vec->v[out] = vec->v[i];
        vec->v[out].naddrs = 0;
        out++;
    }
    vec->n = out;
    return repeated;
}

/* Never blocks. */
static int cmp_ifindex_key(const void *key, const void *elem)
{
    int k = *(const int *)key, e = ((const struct ndk_netif *)elem)->ifindex;
    return k < e ? -1 : k > e;
}

/* Records the address in an RTM_NEWADDR on its interface. Returns 1 if that interface is not in
 * vec (it appeared or vanished between the link dump and the address dump), else 0. Never blocks. */
static int add_addr(struct netif_vec *vec, const struct nlmsghdr *nh)
{
    if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifaddrmsg)))
        return 0;
    struct ifaddrmsg ifa;
    memcpy(&ifa, NLMSG_DATA(nh), sizeof ifa);
    size_t alen;
    if (ifa.ifa_family == AF_INET)
        alen = sizeof(struct in_addr);
    else if (ifa.ifa_family == AF_INET6)
        alen = sizeof(struct in6_addr);
    else
        return 0; /* e.g. AF_MCTP addresses share RTM_NEWADDR */

    const void *local = NULL, *address = NULL;
    uint32_t flags = ifa.ifa_flags;
    const struct rtattr *rta = (const struct rtattr *)((const char *)NLMSG_DATA(nh) + NLMSG_ALIGN(sizeof(struct ifaddrmsg)));
    int len = rta_space(nh, sizeof(struct ifaddrmsg));
    for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
        switch (rta->rta_type) {
        case IFA_LOCAL:
            if (RTA_PAYLOAD(rta) == alen)
                local = RTA_DATA(rta);
            break;
        case IFA_ADDRESS:
            if (RTA_PAYLOAD(rta) == alen)
                address = RTA_DATA(rta);
            break;
        case IFA_FLAGS:
            /* ifa_flags is 8 bits; IFA_F_NOPREFIXROUTE and later live only in this attribute. */
            rta_get_u32(rta, &flags);
            break;
        default:
            break;
        }
    }
    /* On point-to-point links IFA_ADDRESS is the peer and IFA_LOCAL ours (both families); otherwise
     * IPv4 sends both equal and IPv6 only IFA_ADDRESS. */
    const void *ip = local ? local : address;
    if (!ip)
        return 0;

    if (ifa.ifa_index == 0 || ifa.ifa_index > INT_MAX || vec->n == 0) /* bsearch wants a real base */
        return 1;
    int key = (int)ifa.ifa_index;
    struct ndk_netif *nif = bsearch(&key, vec->v, vec->n, sizeof *vec->v, cmp_ifindex_key);
    if (!nif)
        return 1;
    if (nif->naddrs >= NDK_NETIF_MAX_ADDRS) {
        if (nif->addrs_dropped < UINT_MAX)
            nif->addrs_dropped++;
        return 0;
    }
    struct ndk_netif_addr *a = &nif->addrs[nif->naddrs++];
    memset(a, 0, sizeof *a);
    if (ifa.ifa_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&a->addr;
        sin->sin_family = AF_INET;
        memcpy(&sin->sin_addr, ip, alen);
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->addr;
        sin6->sin6_family = AF_INET6;
        memcpy(&sin6->sin6_addr, ip, alen);
        if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr))
            sin6->sin6_scope_id = (uint32_t)nif->ifindex;
    }
    a->prefix_len = ifa.ifa_prefixlen;
    a->scope = ifa.ifa_scope;
    a->flags = flags;
    return 0;
}

enum parse_phase { PHASE_LINKS, PHASE_ADDRS };

/* Feeds the messages of one datagram (or buffer) to the phase's parser. Messages are checked
 * against seq/portid when check is set. Sets *done on NLMSG_DONE, *inconsistent on
 * NLM_F_DUMP_INTR or an address without its interface. Returns 0 or -errno. Never blocks. */
static int parse_msgs(struct netif_vec *vec, enum parse_phase phase, const void *buf, size_t size,
                      int check, uint32_t seq, uint32_t portid, int *done, int *inconsistent)
{
    const struct nlmsghdr *nh;
    NL_FOR_EACH_MSG(nh, buf, size) {
        if (check && (nh->nlmsg_seq != seq || nh->nlmsg_pid != portid))
            continue; /* a stale answer to an earlier request, or not for us */
        if (nh->nlmsg_flags & NLM_F_DUMP_INTR)
            *inconsistent = 1;
        switch (nh->nlmsg_type) {
        case NLMSG_DONE:
            if (!check)
                break;
            *done = 1;
            /* Since 4.x the kernel appends the dump's final status. */
            if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
                int err;
                memcpy(&err, NLMSG_DATA(nh), sizeof err);
                if (err < 0)
                    return err;
            }
            return 0;
        case NLMSG_ERROR:
            if (!check)
                break;
            if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                return -EBADMSG;
            struct nlmsgerr e;
            memcpy(&e, NLMSG_DATA(nh), sizeof e);
            *done = 1; /* an error ends the request; 0 would be a plain ACK */
            return e.error < 0 ? e.error : 0;
        case RTM_NEWLINK:
            if (phase == PHASE_LINKS) {
                int rc = add_link(vec, nh);
                if (rc < 0)
                    return rc;
            }
            break;
        case RTM_NEWADDR:
            if (phase == PHASE_ADDRS && add_addr(vec, nh))
                *inconsistent = 1;
            break;
        default:
            break; /* NLMSG_NOOP, NLMSG_OVERRUN, anything new */
        }
    }
    return 0;
}

/* Sends a dump request (header plus family message plus optional u32 attribute). May block
 * briefly; no locks. */
static int send_dump(int fd, uint16_t type, uint32_t seq, const void *fam, size_t famlen, uint16_t attr, uint32_t attrval)
{
    struct {
        struct nlmsghdr nh;
        char body[64];
    } req;
    memset(&req, 0, sizeof req);
    size_t len = NLMSG_LENGTH(famlen);
    memcpy(req.body, fam, famlen);
    if (attr) {
        struct rtattr rta = { .rta_len = RTA_LENGTH(sizeof attrval), .rta_type = attr };
        char *p = (char *)&req + NLMSG_ALIGN(len);
        memcpy(p, &rta, sizeof rta);
        memcpy(p + RTA_LENGTH(0), &attrval, sizeof attrval);
        len = NLMSG_ALIGN(len) + RTA_LENGTH(sizeof attrval);
    }
    req.nh.nlmsg_len = (uint32_t)len;
    req.nh.nlmsg_type = type;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.nh.nlmsg_seq = seq;
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    for (;;) {
        ssize_t n = sendto(fd, &req, len, 0, (struct sockaddr *)&kernel, sizeof kernel);
        if (n >= 0)
            return (size_t)n == len ? 0 : -EIO;
        if (errno != EINTR)
            return -errno;
    }
}

/* Reads one dump to NLMSG_DONE. May block briefly (bounded by SO_RCVTIMEO); no locks. */
static int recv_dump(int fd, struct nl_buf *b, struct netif_vec *vec, enum parse_phase phase,
                     uint32_t seq, uint32_t portid, int *inconsistent)
{
    int done = 0;
    while (!done) {
        uint32_t sender;
        ssize_t n = nl_recv(fd, b, 0, &sender);
        if (n < 0)
            return n == -EAGAIN || n == -EWOULDBLOCK ? -ETIMEDOUT : (int)n;
        if (sender != 0)
            continue; /* only the kernel answers dumps */
        int rc = parse_msgs(vec, phase, b->p, (size_t)n, 1, seq, portid, &done, inconsistent);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* One link dump then one address dump on a fresh socket, so nothing of an abandoned earlier
 * attempt can be read back. May block briefly; no locks. */
static int snapshot_once(struct netif_vec *vec, struct nl_buf *b, uint32_t seq, int *inconsistent)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return -errno;
    int rc;
    struct timeval tv = { .tv_sec = NETIF_DUMP_TIMEOUT_S };
    struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
    socklen_t salen = sizeof sa;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
        rc = -errno;
        goto out;
    }
    uint32_t portid = sa.nl_pid;

    struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
    /* Statistics are most of a link message and the runtime has no use for them. */
    rc = send_dump(fd, RTM_GETLINK, seq, &ifi, sizeof ifi, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
    if (rc == 0)
        rc = recv_dump(fd, b, vec, PHASE_LINKS, seq, portid, inconsistent);
    if (rc < 0)
        goto out;
    if (sort_links(vec))
        *inconsistent = 1;

    struct ifaddrmsg ifa = { .ifa_family = AF_UNSPEC };
    rc = send_dump(fd, RTM_GETADDR, seq + 1, &ifa, sizeof ifa, 0, 0);
    if (rc == 0)
        rc = recv_dump(fd, b, vec, PHASE_ADDRS, seq + 1, portid, inconsistent);
out:
    close(fd);
    return rc;
}

/* Hands vec to the caller as a tight array; an empty result is still a valid allocation.
 * Consumes vec on every path. Returns 0 or -ENOMEM. Never blocks. */
static int vec_finish(struct netif_vec *vec, struct ndk_netif **out, size_t *count)
{
    struct ndk_netif *v;
    if (vec->n == 0) {
        free(vec->v);
        v = calloc(1, sizeof *v);
    } else {
        v = realloc(vec->v, vec->n * sizeof *v);
        if (!v)
            v = vec->v; /* shrinking failed; the larger block is still good */
    }
    size_t n = vec->n;
    *vec = (struct netif_vec){ 0 };
    if (!v)
        return -ENOMEM;
    *out = v;
    *count = n;
    return 0;
}

int ndk_netif_snapshot(struct ndk_netif **out, size_t *count)
{
    if (!out || !count)
        return -EINVAL;
    *out = NULL;
    *count = 0;
    struct nl_buf b = { 0 };
    int rc = buf_reserve(&b, NETIF_RECV_INITIAL);
    if (rc < 0)
        return rc;
    /* Any value works on a private socket; varying it keeps traces of separate calls apart. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint32_t seq = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec;

    for (int attempt = 1;; attempt++, seq += 2) {
        struct netif_vec vec = { 0 };
        int inconsistent = 0;
        rc = snapshot_once(&vec, &b, seq, &inconsistent);
        /* ENOBUFS cannot normally hit a socket without groups, but if it does the dump is unreliable. */
        if (rc == -ENOBUFS) {
            inconsistent = 1;
            if (attempt < NETIF_SNAPSHOT_ATTEMPTS) {
                free(vec.v);
                continue;
            }
        }
        if (rc < 0) {
            free(vec.v);
            break;
        }
        if (inconsistent && attempt < NETIF_SNAPSHOT_ATTEMPTS) {
            free(vec.v);
            continue;
        }
        rc = vec_finish(&vec, out, count);
        break;
    }
    free(b.p);
    return rc;
}

int ndk_netif_parse(const void *buf, size_t len, struct ndk_netif **out, size_t *count)
{
    if (!out || !count || (!buf && len))
        return -EINVAL;
    *out = NULL;
    *count = 0;
    /* Netlink headers are read in place, so give them the alignment they would have off a socket. */
    void *copy = NULL;
    if ((uintptr_t)buf % NLMSG_ALIGNTO) {
        copy = malloc(len);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, buf, len);
        buf = copy;
    }
    struct netif_vec vec = { 0 };
    int done = 0, inconsistent = 0;
    int rc = len ? parse_msgs(&vec, PHASE_LINKS, buf, len, 0, 0, 0, &done, &inconsistent) : 0;
    if (rc == 0) {
        sort_links(&vec);
        if (len)
            rc = parse_msgs(&vec, PHASE_ADDRS, buf, len, 0, 0, 0, &done, &inconsistent);
    }
    if (rc == 0)
        rc = vec_finish(&vec, out, count);
    else
        free(vec.v);
    free(copy);
    return rc;
}

/* IPv6 addresses whose meaning depends on the link they are on. Never blocks. */
static int in6_needs_scope(const struct in6_addr *a)
{
    return IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_MC_LINKLOCAL(a);
}

int ndk_netif_addr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
    if (!a || !b || a->sa_family != b->sa_family)
        return 0;
    if (a->sa_family == AF_INET) {
        struct sockaddr_in x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        return x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    if (a->sa_family == AF_INET6) {
        struct sockaddr_in6 x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        if (memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) != 0)
            return 0;
        /* fe80::1 on two links is two different neighbours; elsewhere the scope id is noise. */
        return !in6_needs_scope(&x.sin6_addr) || x.sin6_scope_id == y.sin6_scope_id;
    }
    return 0;
}

const char *ndk_netif_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    if (!sa || !buf || len == 0) {
        errno = EINVAL;
        return NULL;
    }
    char ip[INET6_ADDRSTRLEN];
    char scope[IF_NAMESIZE + 12] = "";
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in sin;
        memcpy(&sin, sa, sizeof sin);
        if (!inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof ip))
            return NULL;
    } else if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, sa, sizeof sin6);
        if (!inet_ntop(AF_INET6, &sin6.sin6_addr, ip, sizeof ip))
            return NULL;
        if (sin6.sin6_scope_id) {
            char name[IF_NAMESIZE];
            if (if_indextoname(sin6.sin6_scope_id, name))
                snprintf(scope, sizeof scope, "%%%s", name);
            else
                snprintf(scope, sizeof scope, "%%%u", (unsigned)sin6.sin6_scope_id);
        }
    } else {
        errno = EAFNOSUPPORT;
        return NULL;
    }
    int n = snprintf(buf, len, "%s%s", ip, scope);
    if (n < 0 || (size_t)n >= len) {
        buf[0] = '\0';
        errno = ENOSPC;
        return NULL;
    }
    return buf;
}

/* Flags that change whether the runtime can bind the address right now. */
#define NETIF_ADDR_USABILITY_FLAGS (IFA_F_TENTATIVE | IFA_F_DADFAILED)

/* Never blocks. */
static int addr_same(const struct ndk_netif_addr *x, const struct ndk_netif_addr *y)
{
    return x->prefix_len == y->prefix_len &&
           (x->flags & NETIF_ADDR_USABILITY_FLAGS) == (y->flags & NETIF_ADDR_USABILITY_FLAGS) &&
           ndk_netif_addr_equal((const struct sockaddr *)&x->addr, (const struct sockaddr *)&y->addr);
}

/* 1 if every address of a is also in b. Quadratic, but at most 64 x 64 cheap comparisons. Never blocks. */
static int addrs_subset(const struct ndk_netif *a, const struct ndk_netif *b)
{
    for (size_t i = 0; i < a->naddrs && i < NDK_NETIF_MAX_ADDRS; i++) {
        size_t j = 0;
        while (j < b->naddrs && j < NDK_NETIF_MAX_ADDRS && !addr_same(&a->addrs[i], &b->addrs[j]))
            j++;
        if (j == b->naddrs || j == NDK_NETIF_MAX_ADDRS)
            return 0;
    }
    return 1;
}

int ndk_netif_differs(const struct ndk_netif *a, const struct ndk_netif *b)
{
    if (!a || !b)
        return a != b;
    if (a->ifindex != b->ifindex ||
        ((a->flags ^ b->flags) & (IFF_UP | IFF_RUNNING)) ||
        strncmp(a->name, b->name, sizeof a->name) != 0 ||
        a->mtu != b->mtu ||
        a->naddrs != b->naddrs ||
        a->addrs_dropped != b->addrs_dropped) /* the unseen tail changed size */
        return 1;
    /* Kernel order can shift (e.g. a promoted secondary), so compare as sets, both ways. */
    return !addrs_subset(a, b) || !addrs_subset(b, a);
}

int ndk_netif_monitor_open(struct ndk_netif_monitor **out)
{
    if (!out)
        return -EINVAL;
    *out = NULL;
    struct ndk_netif_monitor *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    int rc = buf_reserve(&m->buf, NETIF_RECV_INITIAL);
    if (rc < 0) {
        free(m);
        return rc;
    }
    m->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (m->fd < 0) {
        rc = -errno;
        free(m->buf.p);
        free(m);
        return rc;
    }
    int rcvbuf = NETIF_MONITOR_RCVBUF;
    (void)setsockopt(m->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_nl sa = {
        .nl_family = AF_NETLINK,
        .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
    };
    if (bind(m->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        rc = -errno;
        ndk_netif_monitor_close(m);
        return rc;
    }
    *out = m;
    return 0;
}

int ndk_netif_monitor_fd(const struct ndk_netif_monitor *m)
{
    return m ? m->fd : -EINVAL;
}

/* 1 if a notification datagram holds anything that can change a snapshot. Malformed messages
 * count as changes: a needless resnapshot is cheap, a missed change is not. Never blocks. */
static int notification_relevant(const void *buf, size_t size)
{
    const struct nlmsghdr *nh;
    NL_FOR_EACH_MSG(nh, buf, size) {
        switch (nh->nlmsg_type) {
        case RTM_NEWLINK:
        case RTM_DELLINK: {
            if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
                return 1;
            struct ifinfomsg ifi;
            memcpy(&ifi, NLMSG_DATA(nh), sizeof ifi);
            /* Bridge port state (STP) arrives on the link group too and never alters a snapshot. */
            if (ifi.ifi_family != AF_BRIDGE)
                return 1;
            break;
        }
        case RTM_NEWADDR:
        case RTM_DELADDR: {
            if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifaddrmsg)))
                return 1;
            struct ifaddrmsg ifa;
            memcpy(&ifa, NLMSG_DATA(nh), sizeof ifa);
            if (ifa.ifa_family == AF_INET || ifa.ifa_family == AF_INET6)
                return 1;
            break;
        }
        default:
            break;
        }
    }
    return 0;
}

int ndk_netif_monitor_drain(struct ndk_netif_monitor *m)
{
    if (!m)
        return -EINVAL;
    int changed = m->pending;
    m->pending = 0;
    for (int i = 0; i < NETIF_DRAIN_MAX_DATAGRAMS; i++) {
        uint32_t sender;
        ssize_t n = nl_recv(m->fd, &m->buf, MSG_DONTWAIT, &sender);
        if (n == -EAGAIN || n == -EWOULDBLOCK)
            return changed;
        if (n == -ENOBUFS) {
            /* Notifications were lost; the socket stays usable, but only a snapshot is truth now. */
            changed = 1;
            continue;
        }
        if (n < 0) {
            m->pending = changed;
            return (int)n;
        }
        /* Anyone with CAP_NET_ADMIN can unicast to our port; only the kernel speaks for the system. */
        if (sender == 0 && notification_relevant(m->buf.p, (size_t)n))
            changed = 1;
    }
    /* Still more queued: a storm. Report a change; the fd stays readable for the rest. */
    return 1;
}

void ndk_netif_monitor_close(struct ndk_netif_monitor *m)
{
    if (!m)
        return;
    if (m->fd >= 0)
        close(m->fd);
    free(m->buf.p);
    free(m);
}
