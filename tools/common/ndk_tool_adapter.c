/* ndk_tool_adapter.c - choosing, opening and closing the adapter a tool works through
 * (ndk_tool_adapter.h). */
#include "ndk_tool_adapter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ndk_sync.h"
#include "ndk_tool.h"
#include "ndk_tool_addr.h"

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
    int rc = connect(fd, (struct sockaddr *)&d, ndk_sync_addr_len(&d));
    if (rc == 0) {
        socklen_t len = sizeof *src;
        memset(src, 0, sizeof *src);
        rc = getsockname(fd, (struct sockaddr *)src, &len);
    }
    if (rc != 0) {
        char a[NDK_TOOL_ADDR_STRLEN];
        snprintf(why, whylen, "no route to %s: %s", ndk_tool_addr_str(dest, false, a, sizeof a), strerror(errno));
    }
    close(fd);
    if (rc == 0)
        ndk_tool_addr_set_port(src, 0);
    return rc;
}

NTSTATUS ndk_tool_adapter_pick(ndk_rt *rt, const SOCKADDR_INET *local, const SOCKADDR_INET *dest,
                               const char *provider, ULONG ifindex, ndk_rt_adapter_id *id, SOCKADDR_INET *src,
                               char *why, size_t whylen)
{
    char a[NDK_TOOL_ADDR_STRLEN];
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

NTSTATUS ndk_tool_adapter_client(ndk_rt *rt, const SOCKADDR_INET *local, const SOCKADDR_INET *dst,
                                 const char *provider, ULONG ifindex, ndk_tool_adapter *ad, SOCKADDR_INET *src)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDR_STRLEN];
    ndk_rt_adapter_id id;
    NTSTATUS st = ndk_tool_adapter_pick(rt, local, dst, provider, ifindex, &id, src, why, sizeof why);
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
