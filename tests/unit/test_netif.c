/* ndk_netif snapshot, parser and helpers: pure checks of differs/addr_equal/addr_str, the parser
 * fed hand-made and mutated rtnetlink bytes, then real snapshots inside a private network
 * namespace (lo, a veth or dummy pair with test addresses, point-to-point, truncation, and
 * snapshots racing interface churn from several threads). Addresses are from 198.18.0.0/15 and
 * fd00::/8 and only ever exist inside the namespace this test creates. */
#define _GNU_SOURCE
#include "netif.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#ifndef AF_MCTP
#define AF_MCTP 45
#endif

/* ---------- helpers ---------- */

static struct sockaddr_storage ss4(const char *ip, uint16_t port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    CHECK(inet_pton(AF_INET, ip, &sin->sin_addr) == 1);
    return ss;
}

static struct sockaddr_storage ss6(const char *ip, uint32_t scope, uint16_t port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    sin6->sin6_scope_id = scope;
    CHECK(inet_pton(AF_INET6, ip, &sin6->sin6_addr) == 1);
    return ss;
}

#define SA(ss) ((const struct sockaddr *)&(ss))

static const struct ndk_netif *find_if(const struct ndk_netif *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

static const struct ndk_netif_addr *find_addr(const struct ndk_netif *nif, const struct sockaddr_storage *ss)
{
    for (size_t i = 0; i < nif->naddrs; i++)
        if (ndk_netif_addr_equal(SA(nif->addrs[i].addr), SA(*ss)))
            return &nif->addrs[i];
    return NULL;
}

/* Invariants every snapshot or parse result must hold, whatever bytes produced it. */
static void check_invariants(const struct ndk_netif *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        CHECK(v[i].ifindex > 0);
        if (i)
            CHECK_MSG(v[i - 1].ifindex < v[i].ifindex, "not sorted/unique at %zu: %d then %d", i, v[i - 1].ifindex, v[i].ifindex);
        CHECK(memchr(v[i].name, '\0', sizeof v[i].name) != NULL);
        CHECK(v[i].naddrs <= NDK_NETIF_MAX_ADDRS);
        CHECK(v[i].hwaddr_len <= sizeof v[i].hwaddr);
        for (size_t j = 0; j < v[i].naddrs; j++) {
            const struct sockaddr_storage *a = &v[i].addrs[j].addr;
            CHECK(a->ss_family == AF_INET || a->ss_family == AF_INET6);
            if (a->ss_family == AF_INET6) {
                const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;
                if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
                    CHECK_EQ(s6->sin6_scope_id, v[i].ifindex);
                else
                    CHECK_EQ(s6->sin6_scope_id, 0);
            }
        }
    }
}

/* ---------- (3) differs / addr_equal / addr_str ---------- */

static void add_test_addr(struct ndk_netif *nif, struct sockaddr_storage ss, uint8_t plen, uint32_t flags)
{
    CHECK(nif->naddrs < NDK_NETIF_MAX_ADDRS);
    struct ndk_netif_addr *a = &nif->addrs[nif->naddrs++];
    memset(a, 0, sizeof *a);
    a->addr = ss;
    a->prefix_len = plen;
    a->flags = flags;
}

static void test_helpers(void)
{
    /* addr_equal */
    struct sockaddr_storage a = ss4("198.18.1.1", 1), b = ss4("198.18.1.1", 2), c = ss4("198.18.1.2", 1);
    CHECK_EQ(ndk_netif_addr_equal(SA(a), SA(b)), 1); /* port ignored */
    CHECK_EQ(ndk_netif_addr_equal(SA(a), SA(c)), 0);
    struct sockaddr_storage g1 = ss6("fd00:7::1", 0, 1), g2 = ss6("fd00:7::1", 9, 5);
    CHECK_EQ(ndk_netif_addr_equal(SA(g1), SA(g2)), 1); /* scope id is noise off-link */
    struct sockaddr_storage l2 = ss6("fe80::1", 2, 0), l2b = ss6("fe80::1", 2, 99), l3 = ss6("fe80::1", 3, 0), l0 = ss6("fe80::1", 0, 0);
    CHECK_EQ(ndk_netif_addr_equal(SA(l2), SA(l2b)), 1);
    CHECK_EQ(ndk_netif_addr_equal(SA(l2), SA(l3)), 0);
    CHECK_EQ(ndk_netif_addr_equal(SA(l2), SA(l0)), 0);
    struct sockaddr_storage m2 = ss6("ff02::1", 2, 0), m3 = ss6("ff02::1", 3, 0);
    CHECK_EQ(ndk_netif_addr_equal(SA(m2), SA(m3)), 0);
    struct sockaddr_storage mapped = ss6("::ffff:198.18.1.1", 0, 0);
    CHECK_EQ(ndk_netif_addr_equal(SA(a), SA(mapped)), 0); /* families differ */
    CHECK_EQ(ndk_netif_addr_equal(SA(a), NULL), 0);
    CHECK_EQ(ndk_netif_addr_equal(NULL, NULL), 0);
    struct sockaddr_storage un;
    memset(&un, 0, sizeof un);
    un.ss_family = AF_UNIX;
    CHECK_EQ(ndk_netif_addr_equal(SA(un), SA(un)), 0);

    /* addr_str; a plain struct sockaddr_in (not storage) must be enough for IPv4 */
    char buf[NDK_NETIF_ADDRSTRLEN];
    struct sockaddr_in small;
    memcpy(&small, &a, sizeof small);
    CHECK(strcmp(ndk_netif_addr_str((struct sockaddr *)&small, buf, sizeof buf), "198.18.1.1") == 0);
    struct sockaddr_storage lo4 = ss4("127.0.0.1", 0), lo6 = ss6("::1", 0, 0);
    CHECK(strcmp(ndk_netif_addr_str(SA(lo4), buf, sizeof buf), "127.0.0.1") == 0);
    CHECK(strcmp(ndk_netif_addr_str(SA(lo6), buf, sizeof buf), "::1") == 0);
    char lo_name[IF_NAMESIZE];
    CHECK(if_indextoname(1, lo_name) != NULL); /* lo is ifindex 1 in every namespace */
    char want[64];
    snprintf(want, sizeof want, "fe80::1%%%s", lo_name);
    struct sockaddr_storage ll1 = ss6("fe80::1", 1, 0);
    CHECK_MSG(strcmp(ndk_netif_addr_str(SA(ll1), buf, sizeof buf), want) == 0, "got %s want %s", buf, want);
    struct sockaddr_storage llx = ss6("fe80::1", 999999, 0);
    CHECK(strcmp(ndk_netif_addr_str(SA(llx), buf, sizeof buf), "fe80::1%999999") == 0);
    /* The longest possible form fits NDK_NETIF_ADDRSTRLEN. */
    struct sockaddr_storage longest = ss6("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", 4294967295u, 0);
    CHECK(ndk_netif_addr_str(SA(longest), buf, sizeof buf) != NULL);
    char tiny[4];
    CHECK(strcmp(ndk_netif_addr_str(SA(lo6), tiny, 4), "::1") == 0);
    errno = 0;
    CHECK(ndk_netif_addr_str(SA(lo6), tiny, 3) == NULL && errno == ENOSPC);
    CHECK(ndk_netif_addr_str(SA(lo4), tiny, sizeof tiny) == NULL && errno == ENOSPC && tiny[0] == '\0');
    CHECK(ndk_netif_addr_str(SA(un), buf, sizeof buf) == NULL && errno == EAFNOSUPPORT);
    CHECK(ndk_netif_addr_str(NULL, buf, sizeof buf) == NULL && errno == EINVAL);
    CHECK(ndk_netif_addr_str(SA(lo4), buf, 0) == NULL && errno == EINVAL);

    /* differs */
    static struct ndk_netif x, y;
    memset(&x, 0, sizeof x);
    x.ifindex = 4;
    strcpy(x.name, "ndkt0");
    x.flags = IFF_UP | IFF_RUNNING | IFF_BROADCAST;
    x.mtu = 1500;
    add_test_addr(&x, ss4("198.18.7.1", 0), 24, IFA_F_PERMANENT);
    add_test_addr(&x, ss6("fd00:7::1", 0, 0), 64, IFA_F_PERMANENT);
    add_test_addr(&x, ss6("fe80::7:1", 4, 0), 64, IFA_F_PERMANENT);
    y = x;
    CHECK_EQ(ndk_netif_differs(&x, &y), 0);
    CHECK_EQ(ndk_netif_differs(&x, &x), 0);
    CHECK_EQ(ndk_netif_differs(NULL, NULL), 0);
    CHECK_EQ(ndk_netif_differs(&x, NULL), 1);
    CHECK_EQ(ndk_netif_differs(NULL, &x), 1);
#define DIFFERS_AFTER(stmt, expect) do { y = x; stmt; CHECK_MSG(ndk_netif_differs(&x, &y) == (expect) && ndk_netif_differs(&y, &x) == (expect), "differs after %s != %d", #stmt, (expect)); } while (0)
    DIFFERS_AFTER(y.flags &= ~IFF_RUNNING, 1);
    DIFFERS_AFTER(y.flags &= ~IFF_UP, 1);
    DIFFERS_AFTER(y.flags |= IFF_PROMISC, 0);
    DIFFERS_AFTER(y.flags &= ~IFF_BROADCAST, 0);
    DIFFERS_AFTER(strcpy(y.name, "ndkt1"), 1);
    DIFFERS_AFTER(y.mtu = 9000, 1);
    DIFFERS_AFTER(y.ifindex = 5, 1);
    DIFFERS_AFTER(y.hwaddr[0] = 2, 0);
    DIFFERS_AFTER(add_test_addr(&y, ss4("198.18.7.2", 0), 24, 0), 1);
    DIFFERS_AFTER(y.naddrs--, 1);
    DIFFERS_AFTER(y.addrs[0].prefix_len = 16, 1);
    DIFFERS_AFTER(y.addrs[1].flags |= IFA_F_TENTATIVE, 1);
    DIFFERS_AFTER(y.addrs[1].flags |= IFA_F_DADFAILED, 1);
    DIFFERS_AFTER(y.addrs[1].flags &= ~IFA_F_PERMANENT, 0);
    DIFFERS_AFTER(y.addrs[1].flags |= IFA_F_DEPRECATED, 0);
    DIFFERS_AFTER(((struct sockaddr_in6 *)&y.addrs[2].addr)->sin6_scope_id = 5, 1);
    DIFFERS_AFTER(((struct sockaddr_in6 *)&y.addrs[1].addr)->sin6_port = 7, 0);
    DIFFERS_AFTER(y.addrs_dropped = 1, 1);
    /* Same set in another order is no change. */
    DIFFERS_AFTER((y.addrs[0] = x.addrs[2], y.addrs[2] = x.addrs[0]), 0);
    /* Same count, one address swapped for another. */
    DIFFERS_AFTER(y.addrs[0].addr = ss4("198.18.7.9", 0), 1);
    /* Duplicates on one side must not mask a missing address on the other. */
    DIFFERS_AFTER(y.addrs[2] = y.addrs[1], 1);
#undef DIFFERS_AFTER
}

/* ---------- parser fed hand-made bytes ---------- */

struct msgs {
    _Alignas(8) unsigned char b[1 << 16];
    size_t len;
};

static struct nlmsghdr *put_msg(struct msgs *m, uint16_t type, const void *fam, size_t famlen)
{
    CHECK(m->len + NLMSG_SPACE(famlen) <= sizeof m->b);
    struct nlmsghdr *nh = (struct nlmsghdr *)(m->b + m->len);
    memset(nh, 0, NLMSG_SPACE(famlen));
    nh->nlmsg_len = NLMSG_LENGTH(famlen);
    nh->nlmsg_type = type;
    memcpy(NLMSG_DATA(nh), fam, famlen);
    m->len += NLMSG_ALIGN(nh->nlmsg_len);
    return nh;
}

static void put_attr(struct msgs *m, struct nlmsghdr *nh, uint16_t type, const void *data, size_t len)
{
    CHECK((unsigned char *)nh + NLMSG_ALIGN(nh->nlmsg_len) == m->b + m->len); /* last message only */
    CHECK(m->len + RTA_SPACE(len) <= sizeof m->b);
    struct rtattr *rta = (struct rtattr *)(m->b + m->len);
    memset(rta, 0, RTA_SPACE(len));
    rta->rta_len = (unsigned short)RTA_LENGTH(len);
    rta->rta_type = type;
    memcpy(RTA_DATA(rta), data, len);
    nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_LENGTH(len);
    m->len = (size_t)((unsigned char *)nh - m->b) + NLMSG_ALIGN(nh->nlmsg_len);
}

static struct nlmsghdr *put_link(struct msgs *m, int ifindex, const char *name, unsigned flags, uint32_t mtu)
{
    struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex, .ifi_flags = flags };
    struct nlmsghdr *nh = put_msg(m, RTM_NEWLINK, &ifi, sizeof ifi);
    if (name)
        put_attr(m, nh, IFLA_IFNAME, name, strlen(name) + 1);
    put_attr(m, nh, IFLA_MTU, &mtu, sizeof mtu);
    static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 7 };
    put_attr(m, nh, IFLA_ADDRESS, mac, sizeof mac);
    return nh;
}

static struct nlmsghdr *put_addr(struct msgs *m, int family, int ifindex, const char *local, const char *address, uint8_t plen)
{
    struct ifaddrmsg ifa = { .ifa_family = (uint8_t)family, .ifa_prefixlen = plen, .ifa_index = (uint32_t)ifindex };
    struct nlmsghdr *nh = put_msg(m, RTM_NEWADDR, &ifa, sizeof ifa);
    unsigned char raw[16];
    size_t alen = family == AF_INET ? 4 : 16;
    if (address) {
        CHECK(inet_pton(family, address, raw) == 1);
        put_attr(m, nh, IFA_ADDRESS, raw, alen);
    }
    if (local) {
        CHECK(inet_pton(family, local, raw) == 1);
        put_attr(m, nh, IFA_LOCAL, raw, alen);
    }
    return nh;
}

static void build_valid(struct msgs *m)
{
    m->len = 0;
    put_link(m, 5, "eth0", IFF_UP | IFF_RUNNING, 1500);
    put_link(m, 1, "lo", IFF_UP | IFF_RUNNING | IFF_LOOPBACK, 65536);
    put_addr(m, AF_INET, 1, "127.0.0.1", "127.0.0.1", 8);
    put_addr(m, AF_INET, 5, "198.18.5.1", "198.18.5.1", 24);
    put_addr(m, AF_INET, 5, "198.18.6.1", "198.18.6.2", 32); /* point-to-point */
    put_addr(m, AF_INET6, 1, NULL, "::1", 128);
    struct nlmsghdr *nh = put_addr(m, AF_INET6, 5, NULL, "fe80::5", 64);
    uint32_t fl = IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE;
    put_attr(m, nh, IFA_FLAGS, &fl, sizeof fl);
    put_addr(m, AF_INET6, 5, "fd00:5::1", "fd00:5::2", 128); /* IPv6 with peer */
    put_addr(m, AF_INET, 77, "198.18.9.9", "198.18.9.9", 24); /* interface vanished */
}

static void test_parser(void)
{
    static struct msgs m, m2;
    struct ndk_netif *v;
    size_t n;

    build_valid(&m);
    CHECK_EQ(ndk_netif_parse(m.b, m.len, &v, &n), 0);
    check_invariants(v, n);
    CHECK_EQ(n, 2);
    CHECK_EQ(v[0].ifindex, 1);
    CHECK(strcmp(v[0].name, "lo") == 0);
    CHECK_EQ(v[0].mtu, 65536);
    CHECK_EQ(v[0].naddrs, 2);
    CHECK_EQ(v[1].ifindex, 5);
    CHECK_EQ(v[1].hwaddr_len, 6);
    CHECK_EQ(v[1].hwaddr[5], 7);
    CHECK_EQ(v[1].naddrs, 4);
    struct sockaddr_storage p2p_local = ss4("198.18.6.1", 0), p2p_peer = ss4("198.18.6.2", 0);
    CHECK(find_addr(&v[1], &p2p_local) != NULL);
    CHECK(find_addr(&v[1], &p2p_peer) == NULL);
    struct sockaddr_storage v6_local = ss6("fd00:5::1", 0, 0), v6_peer = ss6("fd00:5::2", 0, 0);
    CHECK(find_addr(&v[1], &v6_local) != NULL);
    CHECK(find_addr(&v[1], &v6_peer) == NULL);
    struct sockaddr_storage ll = ss6("fe80::5", 5, 0);
    const struct ndk_netif_addr *lla = find_addr(&v[1], &ll);
    CHECK(lla != NULL);
    CHECK_EQ(lla->flags, IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE); /* IFA_FLAGS beats the 8-bit field */
    CHECK_EQ(lla->prefix_len, 64);
    free(v);

    /* The same bytes at an odd address parse the same. */
    static unsigned char odd[sizeof m.b + 1];
    memcpy(odd + 1, m.b, m.len);
    CHECK_EQ(ndk_netif_parse(odd + 1, m.len, &v, &n), 0);
    CHECK_EQ(n, 2);
    CHECK_EQ(v[1].naddrs, 4);
    free(v);

    /* Empty input is an empty, freeable snapshot; bad arguments are refused. */
    CHECK_EQ(ndk_netif_parse(NULL, 0, &v, &n), 0);
    CHECK_EQ(n, 0);
    free(v);
    CHECK_EQ(ndk_netif_parse(NULL, 5, &v, &n), -EINVAL);
    CHECK_EQ(ndk_netif_parse(m.b, m.len, NULL, &n), -EINVAL);
    CHECK_EQ(ndk_netif_snapshot(NULL, &n), -EINVAL);

    /* Odd attributes: overlong unterminated name, oversized hwaddr, short MTU, short IPv4 address,
     * foreign families, a repeated ifindex (the later report wins). */
    m.len = 0;
    struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = 3, .ifi_flags = IFF_UP };
    struct nlmsghdr *nh = put_msg(&m, RTM_NEWLINK, &ifi, sizeof ifi);
    char longname[40];
    memset(longname, 'x', sizeof longname);
    put_attr(&m, nh, IFLA_IFNAME, longname, sizeof longname);
    unsigned char bighw[100];
    memset(bighw, 0xab, sizeof bighw);
    put_attr(&m, nh, IFLA_ADDRESS, bighw, sizeof bighw);
    uint16_t shortmtu = 1500;
    put_attr(&m, nh, IFLA_MTU, &shortmtu, sizeof shortmtu);
    put_link(&m, 4, "old", 0, 1000);
    put_link(&m, 4, "new", IFF_UP, 2000);
    struct ifinfomsg br = { .ifi_family = AF_BRIDGE, .ifi_index = 9 };
    put_msg(&m, RTM_NEWLINK, &br, sizeof br);
    struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = 24, .ifa_index = 3 };
    nh = put_msg(&m, RTM_NEWADDR, &ifa, sizeof ifa);
    put_attr(&m, nh, IFA_LOCAL, "\xc6\x12\x07", 3);
    struct ifaddrmsg mctp = { .ifa_family = AF_MCTP, .ifa_index = 3 };
    nh = put_msg(&m, RTM_NEWADDR, &mctp, sizeof mctp);
    put_attr(&m, nh, IFA_LOCAL, "\x08", 1);
    put_addr(&m, AF_INET, 4, "198.18.4.4", "198.18.4.4", 24);
    CHECK_EQ(ndk_netif_parse(m.b, m.len, &v, &n), 0);
    check_invariants(v, n);
    CHECK_EQ(n, 2);
    CHECK_EQ(strlen(v[0].name), IF_NAMESIZE - 1);
    CHECK_EQ(v[0].hwaddr_len, 32);
    CHECK_EQ(v[0].mtu, 0);
    CHECK_EQ(v[0].naddrs, 0);
    CHECK(strcmp(v[1].name, "new") == 0);
    CHECK_EQ(v[1].mtu, 2000);
    CHECK_EQ(v[1].naddrs, 1);
    free(v);

    /* More than NDK_NETIF_MAX_ADDRS: keep the first ones, count the rest, and keep going for
     * the next interface. */
    m.len = 0;
    put_link(&m, 2, "many", IFF_UP, 1500);
    put_link(&m, 3, "after", IFF_UP, 1500);
    for (int i = 0; i < NDK_NETIF_MAX_ADDRS + 6; i++) {
        char ip[32];
        snprintf(ip, sizeof ip, "198.19.1.%d", i + 1);
        put_addr(&m, AF_INET, 2, ip, ip, 32);
    }
    put_addr(&m, AF_INET6, 3, NULL, "fd00:3::1", 64);
    CHECK_EQ(ndk_netif_parse(m.b, m.len, &v, &n), 0);
    CHECK_EQ(n, 2);
    CHECK_EQ(v[0].naddrs, NDK_NETIF_MAX_ADDRS);
    CHECK_EQ(v[0].addrs_dropped, 6);
    struct sockaddr_storage first = ss4("198.19.1.1", 0), last_kept = ss4("198.19.1.64", 0), dropped = ss4("198.19.1.65", 0);
    CHECK(find_addr(&v[0], &first) && find_addr(&v[0], &last_kept) && !find_addr(&v[0], &dropped));
    CHECK_EQ(v[1].naddrs, 1);
    free(v);

    /* Broken framing: attribute shorter than its header, attribute longer than its message,
     * message longer than the buffer, message shorter than its header. None may be read past. */
    build_valid(&m);
    size_t rta_off = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct ifinfomsg)); /* first attribute of eth0 */
    memcpy(&m2, &m, sizeof m);
    ((struct rtattr *)(m2.b + rta_off))->rta_len = 2;
    CHECK_EQ(ndk_netif_parse(m2.b, m2.len, &v, &n), 0);
    check_invariants(v, n);
    CHECK_EQ(n, 2);
    CHECK_EQ(v[1].name[0], '\0'); /* eth0's attributes are unreadable, the rest still parse */
    free(v);
    memcpy(&m2, &m, sizeof m);
    ((struct rtattr *)(m2.b + rta_off))->rta_len = 60000;
    CHECK_EQ(ndk_netif_parse(m2.b, m2.len, &v, &n), 0);
    check_invariants(v, n);
    free(v);
    memcpy(&m2, &m, sizeof m);
    ((struct nlmsghdr *)m2.b)->nlmsg_len = (uint32_t)m2.len + 4;
    CHECK_EQ(ndk_netif_parse(m2.b, m2.len, &v, &n), 0);
    CHECK_EQ(n, 0);
    free(v);
    memcpy(&m2, &m, sizeof m);
    ((struct nlmsghdr *)m2.b)->nlmsg_len = 8;
    CHECK_EQ(ndk_netif_parse(m2.b, m2.len, &v, &n), 0);
    CHECK_EQ(n, 0);
    free(v);

    /* Every prefix of a valid buffer (cut anywhere, as a short read would). */
    build_valid(&m);
    for (size_t cut = 0; cut <= m.len; cut++) {
        CHECK_EQ(ndk_netif_parse(m.b, cut, &v, &n), 0);
        check_invariants(v, n);
        free(v);
    }

    /* Mutation fuzz with a fixed seed, so a failure reproduces. ASan/UBSan builds make it count. */
    unsigned seed = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(m2.b, m.b, m.len);
        m2.len = m.len;
        int flips = 1 + rand_r(&seed) % 8;
        for (int k = 0; k < flips; k++)
            m2.b[(size_t)rand_r(&seed) % m2.len] = (unsigned char)rand_r(&seed);
        size_t len = iter % 3 == 0 ? (size_t)rand_r(&seed) % (m2.len + 1) : m2.len;
        CHECK_EQ(ndk_netif_parse(m2.b, len, &v, &n), 0);
        check_invariants(v, n);
        free(v);
    }
    for (int iter = 0; iter < 2000; iter++) {
        size_t len = (size_t)rand_r(&seed) % 512;
        for (size_t k = 0; k < len; k++)
            m2.b[k] = (unsigned char)rand_r(&seed);
        CHECK_EQ(ndk_netif_parse(m2.b, len, &v, &n), 0);
        check_invariants(v, n);
        free(v);
    }
}

/* ---------- real snapshots ---------- */

static void test_host_readonly(void)
{
    /* Only reads the host's interfaces: the call must work and its result be well-formed. */
    struct ndk_netif *v;
    size_t n;
    int rc = ndk_netif_snapshot(&v, &n);
    CHECK_MSG(rc == 0, "snapshot of the current namespace: %s", strerror(-rc));
    check_invariants(v, n);
    CHECK_MSG(find_if(v, n, "lo") != NULL, "no lo among %zu interfaces", n);
    free(v);
}

static void test_lo(void)
{
    struct ndk_netif *v;
    size_t n;
    CHECK_EQ(ndk_netif_snapshot(&v, &n), 0);
    check_invariants(v, n);
    const struct ndk_netif *lo = find_if(v, n, "lo");
    CHECK(lo != NULL);
    CHECK_EQ(lo->ifindex, 1);
    CHECK((lo->flags & (IFF_UP | IFF_LOOPBACK)) == (IFF_UP | IFF_LOOPBACK));
    CHECK(lo->mtu > 0);
    struct sockaddr_storage l4 = ss4("127.0.0.1", 0), l6 = ss6("::1", 0, 0);
    const struct ndk_netif_addr *a4 = find_addr(lo, &l4), *a6 = find_addr(lo, &l6);
    CHECK_MSG(a4 != NULL, "lo lacks 127.0.0.1 (%zu addresses)", lo->naddrs);
    CHECK_MSG(a6 != NULL, "lo lacks ::1 (%zu addresses)", lo->naddrs);
    CHECK_EQ(a4->prefix_len, 8);
    CHECK_EQ(a4->scope, RT_SCOPE_HOST);
    CHECK_EQ(a6->prefix_len, 128);
    CHECK_EQ(a6->scope, RT_SCOPE_HOST);
    /* Two snapshots of an idle namespace agree. */
    struct ndk_netif *w;
    size_t m;
    CHECK_EQ(ndk_netif_snapshot(&w, &m), 0);
    CHECK_EQ(m, n);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(ndk_netif_differs(&v[i], &w[i]), 0);
    free(w);
    free(v);
}

/* Creates interfaces a and b: dummies where the kernel has them, else a veth pair. Returns 1 for veth. */
static int make_pair(const char *a, const char *b)
{
    if (system("ip link add ndkprobe0 type dummy 2>/dev/null") == 0) {
        ndk_test_sh("ip link del ndkprobe0");
        ndk_test_sh("ip link add %s type dummy && ip link add %s type dummy", a, b);
        return 0;
    }
    ndk_test_sh("ip link add %s type veth peer name %s", a, b);
    return 1;
}

static void test_pair(void)
{
    char cmd[128];
    make_pair("ndkt0", "ndkt0p");
    /* No automatic link-local on the truncation target, so its address count is exact. */
    ndk_test_sh("ip link set dev ndkt0p addrgenmode none");
    ndk_test_sh("ip link set ndkt0 up && ip link set ndkt0p up");
    ndk_test_sh("ip addr add 198.18.7.1/24 dev ndkt0");
    ndk_test_sh("ip -6 addr add fd00:7::1/64 dev ndkt0 nodad");
    ndk_test_sh("ip -6 addr add fe80::7:1/64 dev ndkt0 nodad");
    ndk_test_sh("ip addr add 198.18.8.1 peer 198.18.8.2/32 dev ndkt0");
    ndk_test_sh("ip -6 addr add fd00:8::1 peer fd00:8::2/128 dev ndkt0 nodad");
    ndk_test_sh("ip link set ndkt0 mtu 1400");

    struct ndk_netif *v;
    size_t n;
    CHECK_EQ(ndk_netif_snapshot(&v, &n), 0);
    check_invariants(v, n);
    const struct ndk_netif *t = find_if(v, n, "ndkt0");
    CHECK(t != NULL);
    CHECK_EQ((unsigned)t->ifindex, if_nametoindex("ndkt0"));
    CHECK(t->flags & IFF_UP);
    CHECK_EQ(t->mtu, 1400);
    CHECK_EQ(t->hwaddr_len, 6);
    struct sockaddr_storage a4 = ss4("198.18.7.1", 0), a6 = ss6("fd00:7::1", 0, 0);
    struct sockaddr_storage ll = ss6("fe80::7:1", (uint32_t)t->ifindex, 0);
    const struct ndk_netif_addr *x4 = find_addr(t, &a4), *x6 = find_addr(t, &a6), *xl = find_addr(t, &ll);
    CHECK(x4 && x6 && xl);
    CHECK_EQ(x4->prefix_len, 24);
    CHECK_EQ(x4->scope, RT_SCOPE_UNIVERSE);
    CHECK_EQ(x6->prefix_len, 64);
    CHECK_EQ(x6->flags & IFA_F_TENTATIVE, 0); /* nodad */
    CHECK(x6->flags & IFA_F_NODAD);
    CHECK_EQ(xl->scope, RT_SCOPE_LINK);
    char buf[NDK_NETIF_ADDRSTRLEN];
    CHECK_MSG(strcmp(ndk_netif_addr_str(SA(xl->addr), buf, sizeof buf), "fe80::7:1%ndkt0") == 0, "got %s", buf);
    /* Point-to-point: our side, never the peer. */
    struct sockaddr_storage p4 = ss4("198.18.8.1", 0), p4peer = ss4("198.18.8.2", 0);
    struct sockaddr_storage p6 = ss6("fd00:8::1", 0, 0), p6peer = ss6("fd00:8::2", 0, 0);
    CHECK(find_addr(t, &p4) && !find_addr(t, &p4peer));
    CHECK(find_addr(t, &p6) && !find_addr(t, &p6peer));
    free(v);

    /* 70 IPv4 and one IPv6 address on ndkt0p: the IPv4 dump comes first, so 64 IPv4 are kept and
     * 7 dropped; ndkt0, dumped around it, keeps all of its addresses. */
    char batch[] = "/tmp/ndk_netif_batch.XXXXXX";
    int bfd = mkstemp(batch);
    CHECK(bfd >= 0);
    FILE *f = fdopen(bfd, "w");
    CHECK(f != NULL);
    for (int i = 1; i <= 70; i++)
        fprintf(f, "addr add 198.19.1.%d/32 dev ndkt0p\n", i);
    fprintf(f, "addr add fd00:9::1/64 dev ndkt0p nodad\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "ip -batch %s", batch);
    int brc = system(cmd);
    unlink(batch);
    CHECK_MSG(brc == 0, "ip -batch failed (%d)", brc);
    CHECK_EQ(ndk_netif_snapshot(&v, &n), 0);
    check_invariants(v, n);
    const struct ndk_netif *p = find_if(v, n, "ndkt0p");
    CHECK(p != NULL);
    CHECK_EQ(p->naddrs, NDK_NETIF_MAX_ADDRS);
    CHECK_EQ(p->addrs_dropped, 7);
    t = find_if(v, n, "ndkt0");
    CHECK(t && find_addr(t, &a4) && find_addr(t, &a6) && find_addr(t, &p6));
    /* A change only in the dropped tail still shows. */
    ndk_test_sh("ip addr add 198.19.1.71/32 dev ndkt0p");
    struct ndk_netif *w;
    size_t m;
    CHECK_EQ(ndk_netif_snapshot(&w, &m), 0);
    const struct ndk_netif *p2 = find_if(w, m, "ndkt0p");
    CHECK(p2 && p2->naddrs == NDK_NETIF_MAX_ADDRS && p2->addrs_dropped == 8);
    CHECK_EQ(ndk_netif_differs(p, p2), 1);
    free(w);
    free(v);

    ndk_test_sh("ip link del ndkt0; ip link del ndkt0p 2>/dev/null; true");
    CHECK_EQ(ndk_netif_snapshot(&v, &n), 0);
    CHECK(find_if(v, n, "ndkt0") == NULL && find_if(v, n, "ndkt0p") == NULL);
    free(v);
}

/* ---------- snapshots racing churn, from several threads ---------- */

static atomic_int churn_stop;

static int churn(void *arg)
{
    (void)arg;
    /* Interfaces and addresses appear and vanish while dumps are running. */
    return system("for i in $(seq 1 60); do "
                  "ip link add ndkc$i type veth peer name ndkc${i}p && "
                  "ip addr add 198.18.100.$i/32 dev ndkc$i && "
                  "ip -6 addr add fd00:100::$i/64 dev ndkc${i}p nodad && "
                  "ip link set ndkc$i up && "
                  "ip link del ndkc$i || exit 1; done") == 0 ? 0 : 1;
}

static void *snapshot_loop(void *arg)
{
    long *count = arg;
    while (!atomic_load(&churn_stop)) {
        struct ndk_netif *v;
        size_t n;
        int rc = ndk_netif_snapshot(&v, &n);
        CHECK_MSG(rc == 0, "snapshot during churn: %s", strerror(-rc));
        check_invariants(v, n);
        CHECK(find_if(v, n, "lo") != NULL);
        free(v);
        (*count)++;
        /* Leave the churn's ip(8) processes some CPU: four spinning dumpers on a loaded 2-core
         * machine starved them past the deadline, and a dump per millisecond still races. */
        usleep(1000);
    }
    return NULL;
}

static void test_churn(void)
{
    pid_t pid = ndk_test_spawn(churn, NULL);
    enum { THREADS = 4 };
    pthread_t th[THREADS];
    long counts[THREADS] = { 0 };
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&th[i], NULL, snapshot_loop, &counts[i]), 0);
    ndk_test_wait_ok(pid, 90000, "interface churn");
    atomic_store(&churn_stop, 1);
    long total = 0;
    for (int i = 0; i < THREADS; i++) {
        CHECK_EQ(pthread_join(th[i], NULL), 0);
        total += counts[i];
    }
    CHECK(total > 0);
    printf("churn: %ld snapshots across %d threads\n", total, THREADS);
}

int main(void)
{
    test_helpers();
    test_parser();
    test_host_readonly();
    ndk_test_enter_netns();
    test_lo();
    test_pair();
    test_churn();
    printf("test_netif: OK\n");
    return 0;
}
