/* iwtest: helpers for the iwarp provider tests. Every test opens the provider through the real
 * runtime (ndk_rt_open with NDK_PROVIDER_PATH from the test environment), on the loopback
 * interface, by address (127.0.0.1 or ::1). Two-process tests fork a server and a client; each
 * child opens its own runtime (threads do not survive fork) and they synchronise over pipes. */
#ifndef IWTEST_H
#define IWTEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include <ndk/runtime.h>
#include "testlib.h"

struct iwt {
    ndk_rt *rt;
    ndk_rt_adapter_id id;
    NDK_ADAPTER *ad;
    int family;
    SOCKADDR_INET addr;          /* 127.0.0.1 / ::1, port 0 */
};

/* Opens the runtime and an adapter instance (NDKPI 2.1) on the loopback address of family.
 * Skips the test when ::1 is unavailable. */
void iwt_open(struct iwt *t, int family);
/* Same, with an explicit version; returns the open status (adapter NULL unless success). */
NTSTATUS iwt_open_version(struct iwt *t, int family, NDK_VERSION v);
/* Blocking adapter close, then the runtime. */
void iwt_close(struct iwt *t);
/* TRUE when ::1 exists here (so IPv6 tests can run). */
bool iwt_have_ipv6(void);
const char *iwt_family_name(int family);

/* An address of the adapter's family: the loopback address with port. */
SOCKADDR_INET iwt_addr(const struct iwt *t, uint16_t port);
uint16_t iwt_port(const SOCKADDR_INET *a);
ULONG iwt_addr_len(const SOCKADDR_INET *a);

/* A request completion that tests can wait for. */
struct iwt_req {
    atomic_int done;             /* number of calls (must end up 1) */
    atomic_int status;
};
void iwt_req_init(struct iwt_req *r);
void iwt_req_cb(void *ctx, NTSTATUS status);
/* st is what the call returned: anything but STATUS_PENDING is returned as is (and the
 * completion must never run); STATUS_PENDING waits up to timeout_ms for the completion. */
NTSTATUS iwt_req_wait(struct iwt_req *r, NTSTATUS st, int timeout_ms);

/* A close completion counter. */
struct iwt_close {
    atomic_int done;
};
void iwt_close_cb(void *ctx);
/* Closes any object through its dispatch table (slot 0) and waits for the close to finish. */
void iwt_close_obj(void *ndk_object, int timeout_ms);
/* Creates an MR in pd and registers len bytes of buf with flags (NDK_MR_FLAG_*), waiting for
 * both; *mdl is the MDL to hand back to iwt_mr_release. */
NDK_MR *iwt_mr_register(NDK_PD *pd, void *buf, ULONG len, ULONG flags, PMDL *mdl);
/* Deregisters mr (blocking), closes it and frees its MDL. */
void iwt_mr_release(NDK_MR *mr, PMDL mdl, int timeout_ms);
/* Starts a close; returns the status (SUCCESS / PENDING); c counts the completion. */
NTSTATUS iwt_close_start(void *ndk_object, struct iwt_close *c);
/* Polls until *flag >= value or timeout; returns true on success. */
bool iwt_wait_atomic(atomic_int *flag, int value, int timeout_ms);
/* One listener's incoming connections and one connection's disconnect events per test process:
 * the callbacks for NdkCreateListener and NdkAccept / NdkCompleteConnect (ctx unused). */
extern _Atomic(NDK_CONNECTOR *) iwt_incoming;
extern atomic_int iwt_connect_events, iwt_disconnect_events;
void iwt_on_connect(void *ctx, NDK_CONNECTOR *c);
void iwt_on_disconnect(void *ctx);

/* A CQ + PD + QP set. */
struct iwt_qp {
    NDK_CQ *cq;
    NDK_PD *pd;
    NDK_QP *qp;
};
void iwt_qp_create(struct iwt *t, struct iwt_qp *q, ULONG depth);
void iwt_qp_destroy(struct iwt_qp *q);
/* Polls the CQ for one completion (timeout_ms); returns 1 with *res, 0 on timeout. */
int iwt_cq_wait(NDK_CQ *cq, NDK_RESULT_EX *res, int timeout_ms);

/* A connection between two QPs of one adapter, in one process: a listener on the loopback
 * address (port 0), A's connector to it, B's accepted connector (IRD and ORD 1, no private data,
 * disconnect events ignored). Post B's receives before iwt_link_open if A sends at once.
 * iwt_link_close closes the connectors still set (a test may close one itself and clear it),
 * then the listener. */
struct iwt_link {
    NDK_LISTENER *l;
    NDK_CONNECTOR *ac, *bc;
    _Atomic(NDK_CONNECTOR *) incoming;
    atomic_int nconn;
};
void iwt_link_open(struct iwt *t, struct iwt_link *k, NDK_QP *aqp, NDK_QP *bqp, int timeout_ms);
void iwt_link_close(struct iwt_link *k, int timeout_ms);

/* Pipes between the test's processes. */
struct iwt_chan {
    int to_client[2];
    int to_server[2];
};
void iwt_chan_init(struct iwt_chan *c);
void iwt_chan_close(struct iwt_chan *c);
void iwt_send(int fd, uint32_t v);
/* Fails the test on timeout or EOF. */
uint32_t iwt_recv(int fd, int timeout_ms);
/* Role ends of a channel. */
static inline int iwt_srv_tx(struct iwt_chan *c) { return c->to_client[1]; }
static inline int iwt_srv_rx(struct iwt_chan *c) { return c->to_server[0]; }
static inline int iwt_cli_tx(struct iwt_chan *c) { return c->to_server[1]; }
static inline int iwt_cli_rx(struct iwt_chan *c) { return c->to_client[0]; }

/* Runs server(arg) and client(arg) as two processes, waits for both (timeout_ms). */
void iwt_run_pair(int (*server)(void *), int (*client)(void *), void *arg, int timeout_ms);
/* Runs body(family) for AF_INET and, when available, AF_INET6, printing what ran. */
void iwt_for_each_family(void (*body)(int family));

/* Points NDK_RUNTIME_DIR at a fresh directory of the test's own, so that the system view (and
 * OID_NDK_STATISTICS, which sums it over every process of the adapter) sees only the test's
 * processes; the directory is removed when the calling process exits. Call before forking. */
void iwt_private_runtime_dir(void);

/* Raises RLIMIT_NOFILE to at least n (or the hard limit); returns the new soft limit. */
unsigned long iwt_raise_nofile(unsigned long n);

/* Makes 252 bytes of recognisable private data from a seed. */
void iwt_fill_pd(uint8_t *buf, size_t len, uint8_t seed);

#endif
