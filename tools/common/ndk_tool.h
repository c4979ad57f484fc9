/*
 * ndk_tool.h - the tool process itself, for ndkinfo, ndkping, ndkperf and ndksmb: its name in
 * error lines, status names for messages, the stop flag SIGINT/SIGTERM set, and the one-shot
 * runtime it opens. The rest of the tools' plumbing is one header per concept: ndk_tool_addr.h
 * (addresses), ndk_tool_adapter.h (choosing and opening adapters), ndk_tool_cq.h (CQ waiting),
 * ndk_tool_conn.h (connections), ndk_tool_server.h (listeners), ndk_tool_session.h (a
 * connection with its memory), ndk_tool_cli.h (options), ndk_tool_stat.h, ndk_tool_size.h and
 * ndk_tool_json.h (measuring and reporting); the blocking NDK requests under them are
 * src/ndksync (ndk_sync.h).
 *
 * Threading: NDK callbacks never wait; every wait happens on the tool's own threads.
 */
#ifndef NDK_TOOL_H
#define NDK_TOOL_H

#include <signal.h>
#include <stdbool.h>

#include <ndkpi.h>
#include <ndk/runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A timeout argument that waits for ever. */
#define NDK_TOOL_INFINITE (-1)

/* Name used in error lines ("ndkping: ..."). */
void ndk_tool_set_progname(const char *name);
const char *ndk_tool_progname(void);
/* Prints "<prog>: <message>\n" on stderr. */
void ndk_tool_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Status name for messages ("STATUS_CONNECTION_REFUSED"). */
const char *ndk_tool_status(NTSTATUS st);

/* Set by SIGINT/SIGTERM once ndk_tool_install_signals() ran; waits return STATUS_CANCELLED. */
extern volatile sig_atomic_t ndk_tool_stop;
void ndk_tool_install_signals(void);
/* Reads ndk_tool_stop (atomically: any thread may ask). */
bool ndk_tool_stopped(void);

/* Opens the runtime for a one-shot tool (no PnP monitor; warnings to stderr). */
NTSTATUS ndk_tool_rt_open(ndk_rt **out);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_H */
