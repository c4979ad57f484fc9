/* Network interfaces and their IPv4/IPv6 addresses, read from rtnetlink, and a monitor that says
 * when they changed. The runtime binds NDK adapters to interfaces with this: it opens a monitor,
 * takes a snapshot, and takes a fresh one whenever the monitor reports a change.
 *
 * Nothing here keeps global state. A snapshot call is independent of every other call and may run
 * on any thread; a monitor object is used by one thread at a time (the caller serialises). */
#ifndef NDK_NETIF_H
#define NDK_NETIF_H

#include <linux/rtnetlink.h> /* RT_SCOPE_*, and IFA_F_* via linux/if_addr.h; no clash with net/if.h */
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NDK_NETIF_MAX_ADDRS 64
/* Big enough for ndk_netif_addr_str of any address: IPv6 text, '%', an interface name, NUL. */
#define NDK_NETIF_ADDRSTRLEN (INET6_ADDRSTRLEN + IF_NAMESIZE + 2)

struct ndk_netif_addr {
    struct sockaddr_storage addr; /* AF_INET or AF_INET6, sin6_scope_id set for link-local */
    uint8_t prefix_len;
    uint8_t scope;   /* RT_SCOPE_* */
    uint32_t flags;  /* IFA_F_*: IFA_F_TENTATIVE / IFA_F_DADFAILED mean the address cannot be bound yet */
};

struct ndk_netif {
    int ifindex;
    char name[IF_NAMESIZE];
    unsigned flags;  /* IFF_UP, IFF_RUNNING, IFF_LOOPBACK ... */
    unsigned mtu;
    uint8_t hwaddr[32];
    unsigned hwaddr_len;
    size_t naddrs;
    struct ndk_netif_addr addrs[NDK_NETIF_MAX_ADDRS];
    /* Addresses the kernel reported beyond NDK_NETIF_MAX_ADDRS, which are not in addrs[]. */
    unsigned addrs_dropped;
};

/* Snapshot of every interface in the caller's network namespace with all its addresses, sorted by
 * ifindex. Returns 0 and a malloc'd array (free with free()), or -errno. May block briefly
 * (netlink dump); no locks. Addresses are in kernel order (IPv4 primaries before secondaries).
 * Retries internally when the kernel flags the dump as interrupted; if changes keep interrupting it,
 * returns the last best-effort view, and those changes are reported by any monitor opened
 * beforehand, so open the monitor first. */
int ndk_netif_snapshot(struct ndk_netif **out, size_t *count);

/* Builds a snapshot from rtnetlink messages already in memory (RTM_NEWLINK and RTM_NEWADDR in any
 * order, e.g. a captured dump) exactly as ndk_netif_snapshot parses them; other messages are
 * skipped, malformed ones ignored. Lets tests and offline tools feed arbitrary bytes.
 * Returns 0 and a malloc'd array, or -errno. Never blocks; no locks. */
int ndk_netif_parse(const void *buf, size_t len, struct ndk_netif **out, size_t *count);

/* Returns 1 if a and b differ in anything the runtime cares about (flags IFF_UP/IFF_RUNNING, name,
 * mtu, address set), else 0. The address set is compared without regard to order, by address
 * (with scope id for link-local), prefix length and the IFA_F_TENTATIVE/IFA_F_DADFAILED flags.
 * Never blocks; no locks. */
int ndk_netif_differs(const struct ndk_netif *a, const struct ndk_netif *b);

struct ndk_netif_monitor;
/* Opens a non-blocking NETLINK_ROUTE socket subscribed to link, IPv4 address and IPv6 address
 * groups. Returns 0 or -errno. Does not block; no locks. */
int ndk_netif_monitor_open(struct ndk_netif_monitor **out);
/* For poll/epoll (readable when messages are pending). Never blocks. */
int ndk_netif_monitor_fd(const struct ndk_netif_monitor *m);
/* Reads every pending message without blocking. Returns 1 if something relevant changed (link
 * added/removed/changed, address added/removed) or the socket overflowed (ENOBUFS: the caller must
 * resnapshot), 0 if nothing relevant, -errno on a real error. A 1 can be spurious (e.g. an IPv6
 * lifetime refresh); compare snapshots with ndk_netif_differs. Never blocks; caller serialises. */
int ndk_netif_monitor_drain(struct ndk_netif_monitor *m);
/* Closes the socket and frees m (NULL is fine). Never blocks; caller serialises. */
void ndk_netif_monitor_close(struct ndk_netif_monitor *m);

/* Same family+IP (+scope id for IPv6 link-local), port ignored. Never blocks. */
int ndk_netif_addr_equal(const struct sockaddr *a, const struct sockaddr *b);
/* "127.0.0.1", "::1", "fe80::1%eth0" (scope shown as the interface name, or its number if the
 * index has no name here). Returns buf, or NULL with errno set (EAFNOSUPPORT, ENOSPC, EINVAL).
 * NDK_NETIF_ADDRSTRLEN is always enough. May block briefly (interface name lookup); no locks. */
const char *ndk_netif_addr_str(const struct sockaddr *sa, char *buf, size_t len);

#endif
