/*
 * ndk_tool_adapter.h - the adapter a tool works through: choosing the one that serves an
 * address (or the route to one), opening an instance at the version its provider advertises
 * with its NDK_ADAPTER_INFO, and closing it. Calling thread; blocks.
 */
#ifndef NDK_TOOL_ADAPTER_H
#define NDK_TOOL_ADAPTER_H

#include <stddef.h>

#include <ndkpi.h>
#include <ndk/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ndk_tool_adapter {
    ndk_rt           *rt;
    ndk_rt_adapter_id id;
    NDK_ADAPTER      *adapter;
    NDK_ADAPTER_INFO  info;           /* from NdkQueryAdapterInfo on the open instance */
    char              provider[NDK_PROVIDER_NAME_MAX];
    char              ifname[NDK_PROVIDER_IFNAME_MAX];
    ULONG             ifindex;
} ndk_tool_adapter;

/* Chooses the adapter for a connection: the one owning `local` when given; otherwise the one
 * owning the source address the kernel routes `dest` from (for a local or loopback destination
 * that is the destination address itself). ifindex (nonzero) restricts to that interface.
 * *src receives the local address to connect from (port 0). STATUS_OBJECT_NAME_NOT_FOUND and a
 * reason in why when no adapter fits. */
NTSTATUS ndk_tool_adapter_pick(ndk_rt *rt, const SOCKADDR_INET *local, const SOCKADDR_INET *dest,
                               const char *provider, ULONG ifindex, ndk_rt_adapter_id *id, SOCKADDR_INET *src,
                               char *why, size_t whylen);
/* Opens an NDK_ADAPTER instance at the version the provider advertises and queries its info. */
NTSTATUS ndk_tool_adapter_open(ndk_rt *rt, ndk_rt_adapter_id id, ndk_tool_adapter *out);
void ndk_tool_adapter_close(ndk_tool_adapter *a);
/* A client's adapter: ndk_tool_adapter_pick, then ndk_tool_adapter_open. On failure prints
 * "connect to DST failed: <why>" and returns the status. */
NTSTATUS ndk_tool_adapter_client(ndk_rt *rt, const SOCKADDR_INET *local, const SOCKADDR_INET *dst,
                                 const char *provider, ULONG ifindex, ndk_tool_adapter *ad, SOCKADDR_INET *src);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_ADAPTER_H */
