/* ndk_netif monitor inside a private network namespace: each change the runtime depends on (link
 * added, up, IPv4/IPv6 address added and removed, link deleted) must be reported within 2 s and be
 * visible in the snapshot taken after it; a quiet socket drains to 0; IPv6 DAD completion shows as
 * a difference; messages not from the kernel are ignored; an overflowed socket reports a change and
 * keeps working. Addresses are from 198.18.0.0/15 and fd00::/8, inside the namespace only. */
#define _GNU_SOURCE
#include "netif.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IFA "ndkm0"
#define IFB "ndkm0p"
#define EVENT_LIMIT_MS 2000

static struct ndk_netif_monitor *mon;

static int find_if(const struct ndk_netif *v, size_t n, const char *name, struct ndk_netif *out)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0) {
            if (out)
                *out = v[i];
            return 1;
        }
    return 0;
}

/* Returns the address's IFA_F_* flags | 0x80000000 if ifname has it, else 0. */
static uint32_t addr_state(const struct ndk_netif *nif, const char *ip)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        CHECK(inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        CHECK(inet_pton(AF_INET, ip, &s4->sin_addr) == 1);
    }
    for (size_t i = 0; i < nif->naddrs; i++)
        if (ndk_netif_addr_equal((struct sockaddr *)&nif->addrs[i].addr, (struct sockaddr *)&ss))
            return nif->addrs[i].flags | 0x80000000u;
    return 0;
}

/* The state a step waits for, judged on a fresh snapshot. */
struct want {
    int present;       /* IFA exists */
    int up_running;    /* IFF_UP and IFF_RUNNING on IFA */
    const char *addr;  /* this address on IFA ... */
    int addr_present;  /* ... present (1) or absent (0) */
    int settled;       /* ... and not IFA_F_TENTATIVE */
};

static int snapshot_matches(const struct want *w, struct ndk_netif *got)
{
    struct ndk_netif *v;
    size_t n;
    int rc = ndk_netif_snapshot(&v, &n);
    CHECK_MSG(rc == 0, "snapshot: %s", strerror(-rc));
    struct ndk_netif nif;
    int present = find_if(v, n, IFA, &nif);
    free(v);
    if (present != w->present)
        return 0;
    if (!present)
        return 1;
    if (got)
        *got = nif;
    if (w->up_running && (nif.flags & (IFF_UP | IFF_RUNNING)) != (IFF_UP | IFF_RUNNING))
        return 0;
    if (w->addr) {
        uint32_t st = addr_state(&nif, w->addr);
        if (!!st != w->addr_present)
            return 0;
        if (w->settled && (st & IFA_F_TENTATIVE))
            return 0;
    }
    return 1;
}

/* Waits until the monitor reports a change after which the snapshot matches w; returns the ms
 * it took, fails after limit_ms. Only a drain returning 1 counts: the snapshot is not polled. */
static uint64_t wait_change(const char *what, const struct want *w, int limit_ms, struct ndk_netif *got)
{
    uint64_t start = ndk_test_now_ms(), deadline = start + (uint64_t)limit_ms;
    for (;;) {
        uint64_t now = ndk_test_now_ms();
        CHECK_MSG(now < deadline, "%s: no matching change reported within %d ms", what, limit_ms);
        struct pollfd pfd = { .fd = ndk_netif_monitor_fd(mon), .events = POLLIN };
        int pr = poll(&pfd, 1, (int)(deadline - now));
        CHECK_MSG(pr >= 0 || errno == EINTR, "poll: %s", strerror(errno));
        if (pr <= 0)
            continue;
        int rc = ndk_netif_monitor_drain(mon);
        CHECK_MSG(rc >= 0, "%s: drain: %s", what, strerror(-rc));
        if (rc == 1 && snapshot_matches(w, got)) {
            uint64_t ms = ndk_test_now_ms() - start;
            printf("  %-28s reported after %3llu ms\n", what, (unsigned long long)ms);
            return ms;
        }
    }
}

/* Lets late kernel work (linkwatch, DAD) finish: returns once the socket stays quiet for 300 ms,
 * then checks that a drain with nothing pending says 0. */
static void settle(const char *after)
{
    uint64_t deadline = ndk_test_now_ms() + 5000;
    for (;;) {
        CHECK_MSG(ndk_test_now_ms() < deadline, "after %s: notifications never stopped", after);
        struct pollfd pfd = { .fd = ndk_netif_monitor_fd(mon), .events = POLLIN };
        int pr = poll(&pfd, 1, 300);
        if (pr == 0)
            break;
        int rc = ndk_netif_monitor_drain(mon);
        CHECK_MSG(rc >= 0, "drain: %s", strerror(-rc));
    }
    CHECK_MSG(ndk_netif_monitor_drain(mon) == 0, "after %s: drain with nothing pending did not return 0", after);
}

/* Drops the kernel counted for the monitor socket, from /proc/self/net/netlink (by inode). */
static unsigned long socket_drops(int fd)
{
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    FILE *f = fopen("/proc/self/net/netlink", "r");
    CHECK(f != NULL);
    char line[512];
    unsigned long drops = 0;
    int found = 0;
    CHECK(fgets(line, sizeof line, f) != NULL); /* header */
    while (fgets(line, sizeof line, f)) {
        char sk[32];
        int eth;
        unsigned pid, groups, rmem, wmem, dump, locks;
        unsigned long d, ino;
        if (sscanf(line, "%31s %d %u %x %u %u %u %u %lu %lu", sk, &eth, &pid, &groups, &rmem, &wmem, &dump, &locks, &d, &ino) == 10 &&
            ino == (unsigned long)st.st_ino) {
            drops = d;
            found = 1;
        }
    }
    fclose(f);
    CHECK_MSG(found, "monitor socket not in /proc/self/net/netlink");
    return drops;
}

/* The main sequence the runtime relies on. */
static void test_events(void)
{
    settle("opening the monitor");

    int veth = 1;
    if (system("ip link add " IFA " type dummy 2>/dev/null") == 0) {
        veth = 0;
    } else {
        ndk_test_sh("ip link add " IFA " type veth peer name " IFB);
    }
    printf("  using %s\n", veth ? "veth (no dummy module)" : "dummy");
    wait_change("link added", &(struct want){ .present = 1 }, EVENT_LIMIT_MS, NULL);
    /* No automatic link-local addresses: their DAD would keep notifying through later steps. */
    ndk_test_sh("ip link set dev " IFA " addrgenmode none");
    if (veth)
        ndk_test_sh("ip link set dev " IFB " addrgenmode none && ip link set " IFB " up");
    settle("link added");

    ndk_test_sh("ip link set " IFA " up");
    wait_change("link up (UP|RUNNING)", &(struct want){ .present = 1, .up_running = 1 }, EVENT_LIMIT_MS, NULL);
    settle("link up");

    ndk_test_sh("ip addr add 198.18.7.1/24 dev " IFA);
    wait_change("IPv4 address added", &(struct want){ .present = 1, .addr = "198.18.7.1", .addr_present = 1 }, EVENT_LIMIT_MS, NULL);
    settle("IPv4 address added");

    ndk_test_sh("ip -6 addr add fd00:7::1/64 dev " IFA " nodad");
    wait_change("IPv6 address added", &(struct want){ .present = 1, .addr = "fd00:7::1", .addr_present = 1, .settled = 1 }, EVENT_LIMIT_MS, NULL);
    settle("IPv6 address added");

    /* With DAD: first tentative (cannot be bound), then a second notification once DAD is done,
     * up to ~1 s random delay plus one 1 s retransmit later; ndk_netif_differs must see it. */
    ndk_test_sh("ip -6 addr add fd00:7::2/64 dev " IFA);
    struct ndk_netif tentative, settled_if;
    wait_change("IPv6 address added (DAD)", &(struct want){ .present = 1, .addr = "fd00:7::2", .addr_present = 1 }, EVENT_LIMIT_MS, &tentative);
    uint32_t st = addr_state(&tentative, "fd00:7::2");
    printf("  fd00:7::2 first seen with flags 0x%x%s\n", st & 0x7fffffffu, (st & IFA_F_TENTATIVE) ? " (tentative)" : "");
    wait_change("IPv6 DAD completed", &(struct want){ .present = 1, .addr = "fd00:7::2", .addr_present = 1, .settled = 1 }, 6000, &settled_if);
    if (st & IFA_F_TENTATIVE)
        CHECK_EQ(ndk_netif_differs(&tentative, &settled_if), 1);
    settle("IPv6 DAD");

    ndk_test_sh("ip addr del 198.18.7.1/24 dev " IFA);
    wait_change("IPv4 address removed", &(struct want){ .present = 1, .addr = "198.18.7.1", .addr_present = 0 }, EVENT_LIMIT_MS, NULL);
    settle("IPv4 address removed");

    ndk_test_sh("ip -6 addr del fd00:7::1/64 dev " IFA);
    wait_change("IPv6 address removed", &(struct want){ .present = 1, .addr = "fd00:7::1", .addr_present = 0 }, EVENT_LIMIT_MS, NULL);
    settle("IPv6 address removed");

    ndk_test_sh("ip link del " IFA);
    wait_change("link deleted", &(struct want){ .present = 0 }, EVENT_LIMIT_MS, NULL);
    settle("link deleted");

    /* Routes go to groups the monitor did not join: nothing to read, nothing relevant. */
    ndk_test_sh("ip route add 198.18.200.0/24 dev lo && ip route del 198.18.200.0/24 dev lo");
    usleep(100 * 1000);
    CHECK_EQ(ndk_netif_monitor_drain(mon), 0);
}

/* A process with CAP_NET_ADMIN can unicast to the monitor's port; it must not count. */
static void test_foreign_sender(void)
{
    struct sockaddr_nl me = { 0 };
    socklen_t len = sizeof me;
    CHECK(getsockname(ndk_netif_monitor_fd(mon), (struct sockaddr *)&me, &len) == 0);
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    CHECK(fd >= 0);
    struct {
        struct nlmsghdr nh;
        struct ifaddrmsg ifa;
    } fake = {
        .nh = { .nlmsg_len = sizeof fake, .nlmsg_type = RTM_NEWADDR },
        .ifa = { .ifa_family = AF_INET, .ifa_prefixlen = 24, .ifa_index = 1 },
    };
    struct sockaddr_nl to = { .nl_family = AF_NETLINK, .nl_pid = me.nl_pid };
    CHECK_MSG(sendto(fd, &fake, sizeof fake, 0, (struct sockaddr *)&to, sizeof to) == (ssize_t)sizeof fake,
              "sendto monitor: %s", strerror(errno));
    struct pollfd pfd = { .fd = ndk_netif_monitor_fd(mon), .events = POLLIN };
    CHECK_EQ(poll(&pfd, 1, 1000), 1); /* it did arrive ... */
    CHECK_EQ(ndk_netif_monitor_drain(mon), 0); /* ... and was ignored */
    close(fd);
    printf("  forged RTM_NEWADDR from port %u ignored\n", me.nl_pid);
}

/* Overflow: the queue is filled with ignorable messages, so the address notification that follows
 * is dropped and the only sign of it is ENOBUFS; the drain must still report a change. */
static void test_overflow(void)
{
    int fd = ndk_netif_monitor_fd(mon);
    int small = 1; /* the kernel rounds up to its minimum, a few KiB */
    CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small) == 0);
    unsigned long drops_before = socket_drops(fd);

    struct sockaddr_nl me = { 0 };
    socklen_t len = sizeof me;
    CHECK(getsockname(fd, (struct sockaddr *)&me, &len) == 0);
    int sfd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    CHECK(sfd >= 0);
    struct nlmsghdr noop = { .nlmsg_len = sizeof noop, .nlmsg_type = NLMSG_NOOP };
    struct sockaddr_nl to = { .nl_family = AF_NETLINK, .nl_pid = me.nl_pid };
    int queued = 0;
    while (queued < 100000 && sendto(sfd, &noop, sizeof noop, MSG_DONTWAIT, (struct sockaddr *)&to, sizeof to) == (ssize_t)sizeof noop)
        queued++;
    CHECK_MSG(errno == EAGAIN || errno == EWOULDBLOCK, "filling the monitor: %s", strerror(errno));
    close(sfd);

    ndk_test_sh("ip addr add 198.19.2.1/32 dev lo");
    unsigned long drops = socket_drops(fd) - drops_before;
    CHECK_MSG(drops > 0, "the notification was not dropped; cannot test ENOBUFS");
    CHECK_EQ(ndk_netif_monitor_drain(mon), 1);
    printf("  overflow: %d ignorable messages queued, kernel dropped %lu notification(s), drain reported a change\n",
           queued, drops);

    int normal = 1 << 20;
    CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &normal, sizeof normal) == 0);
    settle("overflow");
    /* Still subscribed and working after ENOBUFS. */
    ndk_test_sh("ip addr del 198.19.2.1/32 dev lo");
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    CHECK_EQ(poll(&pfd, 1, EVENT_LIMIT_MS), 1);
    CHECK_EQ(ndk_netif_monitor_drain(mon), 1);
    settle("address removed after overflow");
}

int main(void)
{
    ndk_test_enter_netns();
    CHECK_EQ(ndk_netif_monitor_open(NULL), -EINVAL);
    CHECK_EQ(ndk_netif_monitor_drain(NULL), -EINVAL);
    CHECK_EQ(ndk_netif_monitor_fd(NULL), -EINVAL);
    ndk_netif_monitor_close(NULL);
    int rc = ndk_netif_monitor_open(&mon);
    CHECK_MSG(rc == 0, "monitor_open: %s", strerror(-rc));
    CHECK(ndk_netif_monitor_fd(mon) >= 0);

    test_events();
    test_foreign_sender();
    test_overflow();

    ndk_netif_monitor_close(mon);
    printf("test_netif_monitor: OK\n");
    return 0;
}
