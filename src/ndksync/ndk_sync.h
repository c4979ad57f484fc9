/*
 * ndk_sync.h - blocking wrappers over the asynchronous NDKPI requests (NDKPI §0.4): a consumer
 * passes an ndk_sync_op as the RequestContext of one request, with the matching completion
 * callback below, and ndk_sync_op_finish turns what the provider call returned into the final
 * status, waiting for the completion when it returned STATUS_PENDING. On top of that: closing
 * any object, and creating PDs, connectors and QPs, as one call each.
 *
 * Context: the waits block the calling thread, bounded by a timeout; never call them from an
 * NDK callback (the completion they wait for may need that callback's thread). The completion
 * callbacks themselves never block. Uses only the public NDKPI.
 */
#ifndef NDK_SYNC_H
#define NDK_SYNC_H

#include <stdbool.h>

#include <ndkpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Default time allowed for one asynchronous NDK request (create, register, close...). */
#define NDK_SYNC_OP_TIMEOUT_MS 10000

/* One asynchronous request. Heap-allocated and reference-counted so that a late completion
 * after a timeout never touches freed memory. ndk_sync_op_new returns NULL when memory runs
 * out: the caller must then not issue the request (a request without its context cannot be
 * waited for), and answers STATUS_INSUFFICIENT_RESOURCES or, in teardown, skips what close
 * does anyway (ndk_sync_close itself never fails for want of memory). */
typedef struct ndk_sync_op ndk_sync_op;
ndk_sync_op *ndk_sync_op_new(void);
/* Completion callbacks to pass to the provider with the op as RequestContext. */
void ndk_sync_op_create_done(PVOID ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj);
void ndk_sync_op_request_done(PVOID ctx, NTSTATUS status);
void ndk_sync_op_close_done(PVOID ctx);
/* Given what the provider call returned: waits for the completion when it is STATUS_PENDING
 * (STATUS_IO_TIMEOUT after timeout_ms, -1 waits for ever), releases the op and returns the
 * final status; *obj (optional) receives a created object. Blocks. */
NTSTATUS ndk_sync_op_finish(ndk_sync_op *op, NTSTATUS returned, int timeout_ms, NDK_OBJECT_HEADER **obj);
/* ndk_sync_op_finish that also gives up with STATUS_CANCELLED once cancelled() (looked at
 * every 100 ms; NULL: never) returns true. Blocks. */
NTSTATUS ndk_sync_op_wait(ndk_sync_op *op, NTSTATUS returned, int timeout_ms, bool (*cancelled)(void),
                          NDK_OBJECT_HEADER **obj);
/* Non-blocking: has the op completed? The op stays the caller's to finish. */
bool ndk_sync_op_done(ndk_sync_op *op);

/* A create call's result through the create contract: the object comes from the output
 * parameter (inline_obj) on inline success and from the completion after STATUS_PENDING.
 * Waits up to NDK_SYNC_OP_TIMEOUT_MS. Blocks. */
NTSTATUS ndk_sync_create_finish(ndk_sync_op *op, NTSTATUS returned, void **out, void *inline_obj);

/* Closes any NDK object (not the adapter) and waits for its close completion. Blocks. */
NTSTATUS ndk_sync_close(NDK_OBJECT_HEADER *obj, int timeout_ms);
#define NDK_SYNC_CLOSE(p) ((p) ? ndk_sync_close(&(p)->Header, NDK_SYNC_OP_TIMEOUT_MS) : STATUS_SUCCESS)

/* NdkCreatePd, NdkCreateConnector and NdkCreateQp, each waiting up to NDK_SYNC_OP_TIMEOUT_MS. */
NTSTATUS ndk_sync_create_pd(NDK_ADAPTER *ad, NDK_PD **out);
NTSTATUS ndk_sync_create_connector(NDK_ADAPTER *ad, NDK_CONNECTOR **out);
NTSTATUS ndk_sync_create_qp(NDK_PD *pd, NDK_CQ *rcq, NDK_CQ *icq, PVOID qp_ctx, ULONG rq_depth, ULONG iq_depth,
                            ULONG rsge, ULONG isge, ULONG inline_size, NDK_QP **out);

/* The address length NdkConnect, NdkListen and friends take for a SOCKADDR_INET. */
ULONG ndk_sync_addr_len(const SOCKADDR_INET *a);

#ifdef __cplusplus
}
#endif

#endif /* NDK_SYNC_H */
