/*
 * ndkinfo - what the OpenNDK runtime sees on this machine: providers (loaded or why not),
 * adapters with their interface, addresses, NDK state and every NDK_ADAPTER_INFO field;
 * with --stats the NDK performance counters, with --connections / --endpoints the ND
 * connections and listeners of every process (the `netstat -xan` view of Windows admins), with
 * --resources every process's NDK objects (ndkinfo_sv.c, ndk-sysview(7)). --json for scripts.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <getopt.h>
#include <net/if.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ndk/runtime.h>

#include "ndk_status.h"
#include "ndk_tool_json.h"
#include "ndkinfo_sv.h"

static int opt_json, opt_stats, opt_connections, opt_endpoints, opt_resources, opt_verbose;
static long opt_pid;
static const char *opt_provider, *opt_adapter;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ndkinfo [--json] [--stats] [--connections] [--endpoints] [--resources] [--pid PID]\n"
            "               [--provider NAME] [--adapter IFNAME|ADDRESS] [--verbose]\n"
            "Lists NDK providers and adapters as the OpenNDK runtime binds them, and what every\n"
            "OpenNDK process on the machine publishes (the system view, ndk-sysview(7)).\n"
            "  --stats        NDK performance counters (OID_NDK_STATISTICS, whole adapter) and\n"
            "                 each process's counters\n"
            "  --connections  ND connections of every process, like netstat -xan: owner, peer\n"
            "  --endpoints    ND listeners and shared endpoints of every process\n"
            "  --resources    each process's adapters, QPs, CQs, SRQs, PDs, MRs, MWs, connectors\n"
            "                 and endpoints, like rdma res show (outstanding requests and their age)\n"
            "  --pid PID      the system view of that process only (alone: --resources)\n"
            "  --json         one JSON document on stdout\n"
            "Environment: NDK_PROVIDER_PATH, NDK_CONFIG, NDK_PROVIDERS, NDK_INTERFACES,\n"
            "NDK_RUNTIME_DIR (the registry read).\n");
}

static const char *addr_str(const SOCKADDR_INET *a, int with_port, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?", scope[IF_NAMESIZE + 2] = "";
    unsigned port = 0;
    if (a->si_family == AF_INET) {
        inet_ntop(AF_INET, &a->Ipv4.sin_addr, ip, sizeof ip);
        port = ntohs(a->Ipv4.sin_port);
        if (with_port)
            snprintf(buf, len, "%s:%u", ip, port);
        else
            snprintf(buf, len, "%s", ip);
        return buf;
    }
    if (a->si_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->Ipv6.sin6_addr, ip, sizeof ip);
        port = ntohs(a->Ipv6.sin6_port);
        char name[IF_NAMESIZE];
        if (a->Ipv6.sin6_scope_id)
            snprintf(scope, sizeof scope, "%%%s",
                     if_indextoname(a->Ipv6.sin6_scope_id, name) ? name : "?");
        if (with_port)
            snprintf(buf, len, "[%s%s]:%u", ip, scope, port);
        else
            snprintf(buf, len, "%s%s", ip, scope);
        return buf;
    }
    snprintf(buf, len, "(family %u)", a->si_family);
    return buf;
}

static const char *tech_name(NDK_RDMA_TECHNOLOGY t)
{
    switch (t) {
    case NdkiWarp: return "iWARP";
    case NdkInfiniBand: return "InfiniBand";
    case NdkRoCE: return "RoCE";
    case NdkRoCEv2: return "RoCEv2";
    default: return "Undefined";
    }
}

/* --json: the tools' shared writer, on stdout. */
static ndk_tool_json json;

struct field {
    const char *name;
    unsigned long long value;
    int hex;
};

static size_t info_fields(const NDK_ADAPTER_INFO *i, struct field *f)
{
    size_t n = 0;
#define F(name, hex) f[n++] = (struct field){ #name, (unsigned long long)i->name, hex }
    F(VendorId, 1); F(DeviceId, 1); F(MaxRegistrationSize, 0); F(MaxWindowSize, 0); F(FRMRPageCount, 0);
    F(MaxInitiatorRequestSge, 0); F(MaxReceiveRequestSge, 0); F(MaxReadRequestSge, 0); F(MaxTransferLength, 0);
    F(MaxInlineDataSize, 0); F(MaxInboundReadLimit, 0); F(MaxOutboundReadLimit, 0); F(MaxReceiveQueueDepth, 0);
    F(MaxInitiatorQueueDepth, 0); F(MaxSrqDepth, 0); F(MaxCqDepth, 0); F(LargeRequestThreshold, 0);
    F(MaxCallerData, 0); F(MaxCalleeData, 0); F(AdapterFlags, 1);
#undef F
    return n;
}

static size_t caps_fields(const NDIS_NDK_CAPABILITIES *c, struct field *f)
{
    size_t n = 0;
#define F(name, hex) f[n++] = (struct field){ #name, (unsigned long long)c->name, hex }
    F(MaxQpCount, 0); F(MaxCqCount, 0); F(MaxMrCount, 0); F(MaxPdCount, 0); F(MaxInboundReadLimit, 0);
    F(MaxOutboundReadLimit, 0); F(MaxMwCount, 0); F(MaxSrqCount, 0); F(MissingCounterMask, 1);
#undef F
    return n;
}

static const struct {
    ULONG flag;
    const char *name;
} adapter_flags[] = {
    { NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, "IN_ORDER_DMA" },
    { NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, "RDMA_READ_SINK_NOT_REQUIRED" },
    { NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, "CQ_INTERRUPT_MODERATION" },
    { NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, "MULTI_ENGINE" },
    { NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED, "RDMA_READ_LOCAL_INVALIDATE" },
    { NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, "CQ_RESIZE" },
    { NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED, "LOOPBACK_CONNECTIONS" },
};

static const char *flags_str(ULONG flags, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof adapter_flags / sizeof adapter_flags[0]; i++)
        if (flags & adapter_flags[i].flag)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? " " : "", adapter_flags[i].name);
    return buf;
}

/* The adapter info as a consumer sees it: open an instance and ask the provider. Falls back
 * to what the provider advertised at initialisation when the adapter cannot be opened now. */
static NTSTATUS query_live_info(ndk_rt *rt, const ndk_rt_adapter_info *a, NDK_ADAPTER_INFO *out)
{
    NDK_ADAPTER *ad = NULL;
    NTSTATUS st = ndk_rt_open_adapter(rt, a->id, a->info.Version, &ad);
    if (st != STATUS_SUCCESS)
        return st;
    ULONG size = sizeof *out;
    st = ad->Dispatch->NdkQueryAdapterInfo(ad, out, &size);
    ndk_rt_close_adapter(rt, ad);
    return st;
}

static void show_stats(ndk_rt *rt, const ndk_rt_adapter_info *a)
{
    NDIS_NDK_STATISTICS_INFO s;
    ULONG written = 0, needed = 0;
    NTSTATUS st = ndk_rt_query_oid(rt, a->id, OID_NDK_STATISTICS, &s, sizeof s, &written, &needed);
    if (opt_json)
        ndk_tool_json_open(&json, "statistics", '{');
    if (st != STATUS_SUCCESS) {
        if (opt_json) {
            ndk_tool_json_str(&json, "error", ndk_rt_status_name(st));
            ndk_tool_json_close(&json, '}');
        } else
            printf("    statistics: unavailable (%s)\n", ndk_rt_status_name(st));
        return;
    }
    const ULONG64 *c = &s.CounterSet.Connect;
    /* A counter the provider says it cannot keep (NDIS_NDK_CAPABILITIES.MissingCounterMask) is
     * not a count of 0. */
    ULONG64 missing = a->capabilities.MissingCounterMask;
    if (!opt_json)
        printf("    NDK performance counters (OID_NDK_STATISTICS):\n");
    for (int i = 0; i < 30; i++) {
        const char *name = ndkinfo_counter_names[i];
        bool kept = !(missing & (1ull << i));
        if (!name)
            continue;
        if (opt_json && kept)
            ndk_tool_json_u64(&json, name, c[i]);
        else if (!opt_json && kept)
            printf("      %-24s %llu\n", name, (unsigned long long)c[i]);
        else if (!opt_json)
            printf("      %-24s not kept by the provider\n", name);
    }
    if (opt_json && missing) {
        char names[256];
        ndkinfo_counters_missing(missing, names, sizeof names);
        ndk_tool_json_str(&json, "missing", names);
    }
    if (opt_json)
        ndk_tool_json_close(&json, '}');
}

/* Queries a variable-size OID, growing the buffer as the provider asks. */
static void *query_var(ndk_rt *rt, ndk_rt_adapter_id id, NDIS_OID oid, NTSTATUS *pst)
{
    ULONG len = 4096, written = 0, needed = 0;
    for (int tries = 0; tries < 8; tries++) {
        void *buf = calloc(1, len);
        if (!buf) {
            *pst = STATUS_INSUFFICIENT_RESOURCES;
            return NULL;
        }
        NTSTATUS st = ndk_rt_query_oid(rt, id, oid, buf, len, &written, &needed);
        if (st == STATUS_SUCCESS) {
            *pst = st;
            return buf;
        }
        free(buf);
        /* A provider may answer with ndis.h's code or its STATUS_NDIS_ twin (docs/status.md). */
        if (!ndk_status_same(st, NDIS_STATUS_BUFFER_TOO_SHORT) || needed <= len) {
            *pst = st;
            return NULL;
        }
        len = needed;
    }
    *pst = NDIS_STATUS_BUFFER_TOO_SHORT;
    return NULL;
}

static void show_connections(ndk_rt *rt, const ndk_rt_adapter_info *a)
{
    NTSTATUS st;
    NDIS_NDK_CONNECTIONS *c = query_var(rt, a->id, OID_NDK_CONNECTIONS, &st);
    char l[80], r[80];
    if (opt_json)
        ndk_tool_json_open(&json, "connections", '[');
    else
        printf("    ND connections (OID_NDK_CONNECTIONS)%s:\n", c && c->NDConnectionsMappedtoTCPConnections
                                                                    ? ", each followed by its TCP connection" : "");
    if (!c) {
        if (!opt_json)
            printf("      unavailable (%s)\n", ndk_rt_status_name(st));
    } else {
        if (!opt_json && c->Count)
            printf("      %-6s %-46s %-46s %s\n", "Proto", "Local Address", "Foreign Address", "Owner");
        /* Through a pointer: Connections[1] is the Windows variable-length idiom. */
        const NDIS_NDK_CONNECTION_ENTRY *entries = c->Connections;
        for (ULONG i = 0; i < c->Count; i++) {
            const NDIS_NDK_CONNECTION_ENTRY *e = &entries[i];
            int tcp_row = c->NDConnectionsMappedtoTCPConnections && (i % 2) == 1;
            addr_str(&e->Local, 1, l, sizeof l);
            addr_str(&e->Remote, 1, r, sizeof r);
            if (opt_json) {
                ndk_tool_json_open(&json, NULL, '{');
                ndk_tool_json_str(&json, "kind", tcp_row ? "tcp" : "nd");
                ndk_tool_json_str(&json, "local", l);
                ndk_tool_json_str(&json, "remote", r);
                if (!tcp_row) {
                    ndk_tool_json_bool(&json, "user_mode", e->UserModeOwner);
                    ndk_tool_json_u64(&json, "pid", e->OwnerPid);
                }
                ndk_tool_json_close(&json, '}');
            } else if (tcp_row) {
                printf("      %-6s %-46s %-46s\n", "TCP", l, r);
            } else {
                printf("      %-6s %-46s %-46s %s pid %u\n", "ND", l, r, e->UserModeOwner ? "user" : "kernel",
                       e->OwnerPid);
            }
        }
        if (!opt_json && c->Count == 0)
            printf("      (none in ndkinfo's own process; the system view below has every process's)\n");
    }
    if (opt_json)
        ndk_tool_json_close(&json, ']');
    free(c);
}

static void show_endpoints(ndk_rt *rt, const ndk_rt_adapter_info *a)
{
    NTSTATUS st;
    NDIS_NDK_LOCAL_ENDPOINTS *e = query_var(rt, a->id, OID_NDK_LOCAL_ENDPOINTS, &st);
    char l[80];
    if (opt_json)
        ndk_tool_json_open(&json, "endpoints", '[');
    else
        printf("    ND local endpoints (OID_NDK_LOCAL_ENDPOINTS):\n");
    if (!e) {
        if (!opt_json)
            printf("      unavailable (%s)\n", ndk_rt_status_name(st));
    } else {
        const NDIS_NDK_LOCAL_ENDPOINT_ENTRY *entries = e->LocalEndpoints;
        for (ULONG i = 0; i < e->Count; i++) {
            const NDIS_NDK_LOCAL_ENDPOINT_ENTRY *x = &entries[i];
            int tcp_row = e->NDLocalEndpointsMappedtoTCPLocalEndpoints && (i % 2) == 1;
            addr_str(&x->Local, 1, l, sizeof l);
            if (opt_json) {
                ndk_tool_json_open(&json, NULL, '{');
                ndk_tool_json_str(&json, "kind", tcp_row ? "tcp" : (x->Listener ? "listener" : "shared"));
                ndk_tool_json_str(&json, "local", l);
                if (!tcp_row)
                    ndk_tool_json_u64(&json, "pid", x->OwnerPid);
                ndk_tool_json_close(&json, '}');
            } else if (tcp_row) {
                printf("      %-9s %-46s\n", "TCP", l);
            } else {
                printf("      %-9s %-46s pid %u\n", x->Listener ? "LISTENER" : "SHARED", l, x->OwnerPid);
            }
        }
        if (!opt_json && e->Count == 0)
            printf("      (none in ndkinfo's own process; the system view below has every process's)\n");
    }
    if (opt_json)
        ndk_tool_json_close(&json, ']');
    free(e);
}

static int adapter_selected(const ndk_rt_adapter_info *a)
{
    if (opt_provider && strcmp(opt_provider, a->provider) != 0)
        return 0;
    if (!opt_adapter)
        return 1;
    if (strcmp(opt_adapter, a->ifname) == 0)
        return 1;
    char buf[80];
    for (ULONG i = 0; i < a->address_count; i++)
        if (strcmp(opt_adapter, addr_str(&a->addresses[i], 0, buf, sizeof buf)) == 0)
            return 1;
    return 0;
}

/* The RDMA device port behind an adapter (OID_OPENNDK_RDMA_DEVICE); false for providers that
 * drive no device (they answer that the OID is not theirs). */
static bool query_rdma_device(ndk_rt *rt, const ndk_rt_adapter_info *a, NDK_RDMA_DEVICE_INFO *d, char *gid,
                              size_t gid_len)
{
    ULONG written = 0, needed = 0;
    memset(d, 0, sizeof *d);
    if (ndk_rt_query_oid(rt, a->id, OID_OPENNDK_RDMA_DEVICE, d, sizeof *d, &written, &needed) != STATUS_SUCCESS ||
        written < sizeof *d)
        return false;
    d->Device[sizeof d->Device - 1] = 0;
    d->LinkLayer[sizeof d->LinkLayer - 1] = 0;
    d->Transport[sizeof d->Transport - 1] = 0;
    if (!inet_ntop(AF_INET6, d->Gid, gid, (socklen_t)gid_len))
        snprintf(gid, gid_len, "?");
    return true;
}

static void show_adapter(ndk_rt *rt, const ndk_rt_adapter_info *a)
{
    NDK_RDMA_DEVICE_INFO dev;
    char gid[INET6_ADDRSTRLEN];
    bool have_dev = query_rdma_device(rt, a, &dev, gid, sizeof gid);
    char buf[256];
    NDK_ADAPTER_INFO info = a->info;
    NTSTATUS live = query_live_info(rt, a, &info);
    struct field f[32];
    size_t n;
    if (opt_json) {
        ndk_tool_json_open(&json, NULL, '{');
        ndk_tool_json_u64(&json, "id", a->id);
        ndk_tool_json_str(&json, "provider", a->provider);
        ndk_tool_json_str(&json, "interface", a->ifname);
        ndk_tool_json_u64(&json, "ifindex", a->ifindex);
        ndk_tool_json_u64(&json, "mtu", a->mtu);
        ndk_tool_json_bool(&json, "loopback", a->is_loopback);
        ndk_tool_json_bool(&json, "ndk_enabled", a->enabled);
        ndk_tool_json_u64(&json, "open_instances", a->open_instances);
        ndk_tool_json_open(&json, "addresses", '[');
        for (ULONG i = 0; i < a->address_count; i++) {
            ndk_tool_json_str(&json, NULL, addr_str(&a->addresses[i], 0, buf, sizeof buf));
        }
        ndk_tool_json_close(&json, ']');
        if (have_dev) {
            ndk_tool_json_open(&json, "rdma_device", '{');
            ndk_tool_json_str(&json, "device", dev.Device);
            ndk_tool_json_u64(&json, "port", dev.Port);
            ndk_tool_json_u64(&json, "gid_index", dev.GidIndex);
            ndk_tool_json_str(&json, "gid", gid);
            ndk_tool_json_str(&json, "link_layer", dev.LinkLayer);
            ndk_tool_json_str(&json, "transport", dev.Transport);
            ndk_tool_json_close(&json, '}');
        }
        ndk_tool_json_open(&json, "adapter_info", '{');
        snprintf(buf, sizeof buf, "%u.%u", info.Version.Major, info.Version.Minor);
        ndk_tool_json_str(&json, "Version", buf);
        n = info_fields(&info, f);
        for (size_t i = 0; i < n; i++)
            ndk_tool_json_u64(&json, f[i].name, f[i].value);
        ndk_tool_json_str(&json, "AdapterFlagNames", flags_str(info.AdapterFlags, buf, sizeof buf));
        ndk_tool_json_str(&json, "RdmaTechnology", tech_name(info.RdmaTechnology));
        ndk_tool_json_str(&json, "source", live == STATUS_SUCCESS ? "NdkQueryAdapterInfo" : "advertised");
        ndk_tool_json_close(&json, '}');
        ndk_tool_json_open(&json, "capabilities", '{');
        n = caps_fields(&a->capabilities, f);
        for (size_t i = 0; i < n; i++)
            ndk_tool_json_u64(&json, f[i].name, f[i].value);
        ndk_tool_json_close(&json, '}');
    } else {
        printf("\nAdapter %u: %s on %s (ifindex %u, MTU %u%s)\n", a->id, a->provider, a->ifname, a->ifindex, a->mtu,
               a->is_loopback ? ", loopback" : "");
        printf("    NDK %s, %u instance(s) open in this process\n", a->enabled ? "enabled" : "DISABLED",
               a->open_instances);
        for (ULONG i = 0; i < a->address_count; i++)
            printf("    %-5s %s\n", a->addresses[i].si_family == AF_INET ? "IPv4" : "IPv6",
                   addr_str(&a->addresses[i], 0, buf, sizeof buf));
        if (have_dev)
            printf("    RDMA device %s port %u, GID[%u] %s, link layer %s (%s transport)\n", dev.Device, dev.Port,
                   dev.GidIndex, gid, dev.LinkLayer, dev.Transport);
        printf("    NDK_ADAPTER_INFO (%s):\n", live == STATUS_SUCCESS ? "NdkQueryAdapterInfo"
                                                                       : "as advertised; the adapter could not be opened now");
        printf("      %-24s %u.%u\n", "Version", info.Version.Major, info.Version.Minor);
        n = info_fields(&info, f);
        for (size_t i = 0; i < n; i++) {
            if (f[i].hex)
                printf("      %-24s 0x%llx\n", f[i].name, f[i].value);
            else
                printf("      %-24s %llu\n", f[i].name, f[i].value);
        }
        printf("      %-24s %s\n", "(flags)", flags_str(info.AdapterFlags, buf, sizeof buf));
        printf("      %-24s %s\n", "RdmaTechnology", tech_name(info.RdmaTechnology));
        if (opt_verbose) {
            printf("    NDIS_NDK_CAPABILITIES:\n");
            n = caps_fields(&a->capabilities, f);
            for (size_t i = 0; i < n; i++)
                printf(f[i].hex ? "      %-24s 0x%llx\n" : "      %-24s %llu\n", f[i].name, f[i].value);
        }
    }
    if (opt_stats)
        show_stats(rt, a);
    if (opt_connections)
        show_connections(rt, a);
    if (opt_endpoints)
        show_endpoints(rt, a);
    if (opt_json)
        ndk_tool_json_close(&json, '}');
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },        { "stats", no_argument, NULL, 's' },
        { "connections", no_argument, NULL, 'c' }, { "endpoints", no_argument, NULL, 'e' },
        { "provider", required_argument, NULL, 'p' }, { "adapter", required_argument, NULL, 'a' },
        { "resources", no_argument, NULL, 'r' },   { "pid", required_argument, NULL, 'P' },
        { "verbose", no_argument, NULL, 'v' },     { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "jscerP:p:a:vh", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'j': opt_json = 1; break;
        case 's': opt_stats = 1; break;
        case 'c': opt_connections = 1; break;
        case 'e': opt_endpoints = 1; break;
        case 'r': opt_resources = 1; break;
        case 'P':
            errno = 0;
            opt_pid = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || opt_pid <= 0) {
                fprintf(stderr, "ndkinfo: --pid wants a process id, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'p': opt_provider = optarg; break;
        case 'a': opt_adapter = optarg; break;
        case 'v': opt_verbose = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }

    if (opt_pid && !opt_stats && !opt_connections && !opt_endpoints)
        opt_resources = 1;
    struct ndkinfo_sv_opts sv = { opt_json, opt_connections, opt_endpoints, opt_stats, opt_resources, opt_pid };
    int want_sv = opt_connections || opt_endpoints || opt_stats || opt_resources;
    /* --resources (or --pid) alone is about other processes: no runtime of our own. */
    if (opt_resources && !opt_stats && !opt_connections && !opt_endpoints && !opt_provider && !opt_adapter &&
        !opt_verbose) {
        if (opt_json) {
            ndk_tool_json_init(&json, stdout);
            ndk_tool_json_open(&json, NULL, '{');
        }
        int rc = ndkinfo_sv_show(&sv, &json);
        if (opt_json)
            ndk_tool_json_close(&json, '}');
        return rc;
    }

    ndk_rt_config cfg = { 0 };
    cfg.no_monitor = TRUE;
    ndk_rt *rt = NULL;
    NTSTATUS st = ndk_rt_open(&cfg, &rt);
    if (st != STATUS_SUCCESS) {
        fprintf(stderr, "ndkinfo: cannot open the NDK runtime: %s\n", ndk_rt_status_name(st));
        return 1;
    }
    ULONG nprov = ndk_rt_provider_count(rt);
    if (opt_json) {
        ndk_tool_json_init(&json, stdout);
        ndk_tool_json_open(&json, NULL, '{');
        ndk_tool_json_open(&json, "providers", '[');
    } else {
        printf("Providers:%s\n", nprov ? "" : " none found (the runtime's warning names the path it searched)");
    }
    for (ULONG i = 0; i < nprov; i++) {
        ndk_rt_provider_info p;
        if (ndk_rt_provider_get(rt, i, &p) != STATUS_SUCCESS)
            continue;
        if (opt_json) {
            ndk_tool_json_open(&json, NULL, '{');
            ndk_tool_json_str(&json, "name", p.name);
            ndk_tool_json_str(&json, "path", p.path);
            ndk_tool_json_str(&json, "status", ndk_rt_status_name(p.status));
            ndk_tool_json_bool(&json, "loaded", p.status == STATUS_SUCCESS);
            ndk_tool_json_str(&json, "description", p.description);
            ndk_tool_json_str(&json, "message", p.message);
            ndk_tool_json_u64(&json, "adapters", p.adapter_count);
            ndk_tool_json_bool(&json, "software", (p.flags & NDK_PROVIDER_FLAG_SOFTWARE) != 0);
            ndk_tool_json_close(&json, '}');
        } else if (p.status == STATUS_SUCCESS) {
            printf("  %-14s loaded   %u adapter(s)  %s%s  (%s)\n", p.name, p.adapter_count,
                   (p.flags & NDK_PROVIDER_FLAG_SOFTWARE) ? "[software] " : "", p.description, p.path);
        } else {
            printf("  %-14s SKIPPED  %s: %s  (%s)\n", p.name, ndk_rt_status_name(p.status), p.message, p.path);
        }
    }
    if (opt_json)
        ndk_tool_json_close(&json, ']');

    ULONG count = 0;
    ndk_rt_adapter_list(rt, NULL, &count);
    ndk_rt_adapter_info *list = calloc(count ? count : 1, sizeof *list);
    if (!list) {
        fprintf(stderr, "ndkinfo: out of memory\n");
        ndk_rt_close(rt);
        return 1;
    }
    ndk_rt_adapter_list(rt, list, &count);
    if (opt_json)
        ndk_tool_json_open(&json, "adapters", '[');
    int shown = 0;
    for (ULONG i = 0; i < count; i++) {
        if (!adapter_selected(&list[i]))
            continue;
        show_adapter(rt, &list[i]);
        shown++;
    }
    if (opt_json)
        ndk_tool_json_close(&json, ']');
    else if (!shown)
        printf("\nNo adapters%s.\n", opt_adapter || opt_provider ? " match the selection" : "");
    int rc = (opt_adapter || opt_provider) && !shown ? 1 : 0;
    if (want_sv && ndkinfo_sv_show(&sv, &json) != 0)
        rc = 1;
    if (opt_json)
        ndk_tool_json_close(&json, '}');
    free(list);
    ndk_rt_close(rt);
    return rc;
}
