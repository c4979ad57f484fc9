/*
 * ndk_tool_server.h - a tool's listeners: listening on an address through every adapter that
 * serves it, the queue of incoming connection requests, and the stop that refuses what is
 * still queued. The connect-event callback only queues; every wait is on the tool's thread.
 */
#ifndef NDK_TOOL_SERVER_H
#define NDK_TOOL_SERVER_H

#include <stddef.h>

#include <ndkpi.h>
#include <ndk/runtime.h>

#include "ndk_tool_adapter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ndk_tool_server ndk_tool_server;
/* Listens on addr through the adapters that serve it. A wildcard address listens on every
 * adapter of that family; AF_UNSPEC (no address given) listens on IPv4 and IPv6. */
NTSTATUS ndk_tool_server_start(ndk_rt *rt, const SOCKADDR_INET *addr, const char *provider, ULONG ifindex,
                               ndk_tool_server **out, char *why, size_t whylen);
/* Next incoming connection request; STATUS_IO_TIMEOUT / STATUS_CANCELLED when none came. */
NTSTATUS ndk_tool_server_next(ndk_tool_server *s, int timeout_ms, NDK_CONNECTOR **conn, ndk_tool_adapter **ad);
/* Human-readable list of where the server listens ("127.0.0.1:7174 (lo), [::1]:7174 (lo)"). */
const char *ndk_tool_server_where(ndk_tool_server *s, char *buf, size_t len);
/* Stops listening, rejects unanswered requests and closes the adapters. Every accepted
 * connection must have been closed first. */
void ndk_tool_server_stop(ndk_tool_server *s);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_SERVER_H */
