/*
 * conform.h - helpers for the NDKPI provider conformance suite (ndkconform).
 *
 * The suite is provider-agnostic: it reaches a provider only through the runtime (libndk) and the
 * NDKPI dispatch tables, and checks it against the rules of the NDKPI reference
 * (Microsoft's NDKPI documentation; docs/ndkpi.md restates them). Every case runs in its own process;
 * two-sided cases fork a second process (the "client") and synchronise with it over a
 * socketpair that carries test coordination only (addresses, tokens, go/done tags), never the
 * data under test: payloads are generated from a seed on each side and verified in place.
 *
 * Failure model: a broken rule fails the case at once (CHECK*: message with file:line, exit 1);
 * a case that cannot run here exits 77 after "SKIP: <reason>" (notrun). Nothing here blocks
 * inside an NDK callback: callbacks record what happened under a mutex and signal a condvar;
 * the case thread waits with a timeout.
 *
 * Asynchronous calls: every create/close/request call goes through a struct cf_op, which counts
 * callback invocations. The call's return value is recorded; cf_audit() (run by cf_ad_close
 * after the blocking adapter close, when every callback must have returned) checks the §0.4
 * contract for every op of the process: pending -> exactly one callback, anything else -> none.
 */
#ifndef NDK_CONFORM_H
#define NDK_CONFORM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include <ndkpi.h>
#include <ndk/runtime.h>
#include "testlib.h"

/* ==== environment chosen by the runner ==== */
struct cf_env {
    const char *provider;           /* provider name (--provider) */
    int family;                     /* AF_INET / AF_INET6 */
    SOCKADDR_INET addr;             /* the address under test, port 0 (--addr) */
    char addr_text[64];
    double tscale;                  /* timeout multiplier (NDK_CONFORM_TIMEOUT_SCALE) */
    bool verbose;
    const char *case_name;
};
extern struct cf_env cf_env;

/* A timeout in ms, scaled for slow (sanitizer) builds. */
int cf_ms(int ms);
/* Progress line on stdout, prefixed with the process role. */
void cf_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *cf_status_name(NTSTATUS st);
void cf_sleep_ms(int ms);
uint64_t cf_now_ms(void);

/* Checks that print status names. */
#define CHECK_ST(got, want) do { NTSTATUS _g = (got), _w = (want); \
    if (_g != _w) ndk_test_fail(__FILE__, __LINE__, "%s: %s (0x%08x), expected %s", #got, cf_status_name(_g), \
                                (unsigned)_g, cf_status_name(_w)); } while (0)
#define CHECK_FAILED(got) do { NTSTATUS _g = (got); \
    if (NT_SUCCESS(_g)) ndk_test_fail(__FILE__, __LINE__, "%s: %s (0x%08x), expected a failure status", #got, \
                                      cf_status_name(_g), (unsigned)_g); } while (0)

/* ==== asynchronous operations (§0.4) ==== */
struct cf_op {
    const char *what;
    pthread_mutex_t m;
    pthread_cond_t c;
    int calls;                      /* callback invocations */
    NTSTATUS status;                /* from the callback */
    NDK_OBJECT_HEADER *obj;         /* create completion's object */
    NTSTATUS returned;              /* what the call returned */
    bool has_returned;
    /* Optional: runs inside the callback after recording (e.g. to close the object, §5.2). */
    void (*hook)(struct cf_op *op);
    void *hook_arg;
    uint64_t seq_enter, seq_leave;  /* global callback sequence numbers (close ordering) */
    int spin_ms;                    /* busy work inside the callback to widen race windows */
};
struct cf_op *cf_op_new(const char *what);
void cf_create_cb(void *ctx, NTSTATUS status, NDK_OBJECT_HEADER *obj);
void cf_req_cb(void *ctx, NTSTATUS status);
void cf_close_cb(void *ctx);
/* Waits until the op's callback ran at least once; false on timeout. */
bool cf_op_wait(struct cf_op *op, int ms);
int cf_op_calls(struct cf_op *op);
/* Finishes a request call (§0.4): records st; PENDING -> waits for exactly one completion and
 * returns its status; otherwise checks no callback ran and returns st. */
NTSTATUS cf_req_done(struct cf_op *op, NTSTATUS st);
/* Finishes a create call: as cf_req_done, plus: on PENDING *pp must still hold CF_SENTINEL; on
 * success the object is checked (header rules, dispatch slots) and stored in *out (else NULL). */
#define CF_SENTINEL ((void *)(uintptr_t)0x5e5e5e5e5e5e5e50ull)
NTSTATUS cf_create_done(struct cf_op *op, NTSTATUS st, void *const *pp, NDK_OBJECT_TYPE type,
                        NDK_VERSION version, void **out);
/* Checks every op of this process against §0.4 (call after every callback has returned). */
void cf_audit(void);
/* A global, monotonically increasing callback sequence number. */
uint64_t cf_seq(void);

/* The generic object shape: header + dispatch pointer; slot 0 is close for all but the adapter. */
struct cf_obj {
    NDK_OBJECT_HEADER Header;
    const void *Dispatch;
};
/* Header rules of §1.4 and the §1.1 "every slot filled" rule for a fresh object. */
void cf_check_object(const void *obj, NDK_OBJECT_TYPE type, NDK_VERSION version);
/* Number of dispatch slots of an object type at a version (§1.6). */
unsigned cf_dispatch_slots(NDK_OBJECT_TYPE type, NDK_VERSION version);

/* Closes through slot 0 of obj's table (or of the table given, for interposed objects):
 * returns the op, st receives the call's status, which must be SUCCESS or PENDING (§8.2). */
struct cf_op *cf_close_start(void *obj, NTSTATUS *st);
struct cf_op *cf_close_start_with(const void *table, void *obj, NTSTATUS *st);
/* As above; the close callback spins spin_ms (CPU only) to widen ordering windows. */
struct cf_op *cf_close_start_ex(const void *table, void *obj, int spin_ms, NTSTATUS *st);
/* Blocking close: start, then wait for the completion when pending. */
void cf_close(void *obj);
/* TRUE once the close started by cf_close_start has finished (returned SUCCESS, or completed). */
bool cf_close_finished(struct cf_op *op);
bool cf_close_wait(struct cf_op *op, int ms);

/* ==== adapter ==== */
struct cf_ad {
    ndk_rt *rt;
    ndk_rt_adapter_id id;
    NDK_ADAPTER *ad;
    NDK_ADAPTER_INFO info;
    NDK_VERSION version;            /* negotiated (info.Version) */
    SOCKADDR_INET addr;             /* address under test, port 0 */
    ULONG addr_len;
};
/* Opens the runtime and an adapter instance serving cf_env.addr: asks for 2.0, falls back to 1.2
 * (a 1.x provider). Skips the case when no adapter of the provider serves the address. */
void cf_ad_open(struct cf_ad *a);
/* Same with an explicit version; returns the open status (a->ad NULL unless success). */
NTSTATUS cf_ad_open_version(struct cf_ad *a, NDK_VERSION v);
/* Blocking adapter close and runtime close, then cf_audit(). */
void cf_ad_close(struct cf_ad *a);
/* Runtime open only (for cases that open several instances). */
void cf_rt_open(struct cf_ad *a);
NDK_ADAPTER_INFO cf_query_info(NDK_ADAPTER *ad);

/* Addresses of the family under test. */
SOCKADDR_INET cf_addr(uint16_t port);
uint16_t cf_port(const SOCKADDR_INET *a);
ULONG cf_addr_len(const SOCKADDR_INET *a);
bool cf_addr_same_ip(const SOCKADDR_INET *a, const SOCKADDR_INET *b);
/* An address that is certainly not on any local adapter (TEST-NET-1 / 2001:db8::). */
SOCKADDR_INET cf_foreign_addr(uint16_t port);

/* ==== objects (blocking wrappers; cf_try_* return the final status, others CHECK success) ==== */
NTSTATUS cf_try_pd(struct cf_ad *a, NDK_PD **out);
NDK_PD *cf_pd(struct cf_ad *a);

struct cf_cq {
    NDK_CQ *cq;
    struct cf_ad *a;
    ULONG depth;
    pthread_mutex_t m;
    pthread_cond_t c;
    int notifies;                   /* notification callback calls */
    NTSTATUS last;                  /* CqStatus of the last one */
    int in_cb;                      /* callbacks running now (serialization, §5.7 rule 3) */
    bool overlap;                   /* two callbacks ran at once */
    void (*hook)(struct cf_cq *cq, NTSTATUS st);   /* optional, runs inside the callback */
    void *hook_arg;
};
NTSTATUS cf_try_cq(struct cf_ad *a, ULONG depth, struct cf_cq **out);
struct cf_cq *cf_cq(struct cf_ad *a, ULONG depth);
void cf_cq_close(struct cf_cq *cq);           /* closes (blocking) and frees */
void cf_cq_arm(struct cf_cq *cq, ULONG type);
int cf_cq_notifies(struct cf_cq *cq);
NTSTATUS cf_cq_last(struct cf_cq *cq);
/* Waits until at least n notifications were delivered; false on timeout. */
bool cf_cq_wait_notifies(struct cf_cq *cq, int n, int ms);
ULONG cf_cq_poll(struct cf_cq *cq, NDK_RESULT_EX *r, ULONG n);
/* Waits for one completion: polls, arms ANY, polls again, sleeps on the notification. */
bool cf_cq_next(struct cf_cq *cq, NDK_RESULT_EX *r, int ms);
/* Waits for the next completion and checks its RequestContext, Status and Type (type 0: any). */
NDK_RESULT_EX cf_cq_expect(struct cf_cq *cq, uintptr_t ctx, NTSTATUS st, int type);
/* Same, waiting long enough for a transfer of bytes (15 s + 1 s per 16 MiB, scaled). */
NDK_RESULT_EX cf_cq_expect_xfer(struct cf_cq *cq, uintptr_t ctx, NTSTATUS st, int type, size_t bytes);
/* Checks that no completion arrives within ms. */
void cf_cq_expect_none(struct cf_cq *cq, int ms);
/* Waits for the next completion and checks ctx and that it failed (status printed). */
NDK_RESULT_EX cf_cq_expect_error(struct cf_cq *cq, uintptr_t ctx, int type);

struct cf_srq {
    NDK_SRQ *srq;
    pthread_mutex_t m;
    pthread_cond_t c;
    int notifies;
    NTSTATUS last;
};
NTSTATUS cf_try_srq(NDK_PD *pd, struct cf_ad *a, ULONG depth, ULONG sge, ULONG threshold, struct cf_srq **out);
struct cf_srq *cf_srq(NDK_PD *pd, struct cf_ad *a, ULONG depth, ULONG sge, ULONG threshold);
void cf_srq_close(struct cf_srq *s);
int cf_srq_notifies(struct cf_srq *s);
bool cf_srq_wait_notifies(struct cf_srq *s, int n, int ms);
NTSTATUS cf_srq_modify(struct cf_srq *s, ULONG depth, ULONG threshold);

NTSTATUS cf_try_qp(struct cf_ad *a, NDK_PD *pd, struct cf_cq *rcq, struct cf_cq *icq, void *qpctx, ULONG rq_depth,
                   ULONG iq_depth, ULONG rsge, ULONG isge, ULONG inline_size, NDK_QP **out);
NTSTATUS cf_try_qp_srq(struct cf_ad *a, NDK_PD *pd, struct cf_cq *rcq, struct cf_cq *icq, NDK_SRQ *srq,
                       void *qpctx, ULONG iq_depth, ULONG isge, ULONG inline_size, NDK_QP **out);
NTSTATUS cf_try_mr(struct cf_ad *a, NDK_PD *pd, BOOLEAN fast, NDK_MR **out);
NDK_MR *cf_mr(struct cf_ad *a, NDK_PD *pd, BOOLEAN fast);
NTSTATUS cf_try_mw(struct cf_ad *a, NDK_PD *pd, NDK_MW **out);
NDK_MW *cf_mw(struct cf_ad *a, NDK_PD *pd);
NTSTATUS cf_try_connector(struct cf_ad *a, NDK_CONNECTOR **out);
NDK_CONNECTOR *cf_connector(struct cf_ad *a);
NTSTATUS cf_try_sep(struct cf_ad *a, const SOCKADDR_INET *addr, NDK_SHARED_ENDPOINT **out);

/* Requests. */
NTSTATUS cf_register(NDK_MR *mr, MDL *mdl, SIZE_T len, ULONG flags);
NTSTATUS cf_deregister(NDK_MR *mr);
NTSTATUS cf_init_frmr(NDK_MR *mr, ULONG pages, BOOLEAN remote);
NTSTATUS cf_listen(NDK_LISTENER *l, const SOCKADDR_INET *addr);
NTSTATUS cf_disconnect(NDK_CONNECTOR *c);
SOCKADDR_INET cf_listener_addr(NDK_LISTENER *l);

/* ==== memory ==== */
struct cf_mem {
    uint8_t *map;                   /* whole mapping: guard | region | guard */
    size_t map_len;
    uint8_t *buf;                   /* the region (registered / used) */
    size_t len;
    size_t guard;
    MDL *mdl;
    NDK_MR *mr;
    UINT32 ltok, rtok;
};
/* Maps len bytes with guard bytes on each side (guards filled with a pattern); offset shifts the
 * region start within its page (to test unaligned registrations). Contents of the region: 0. */
void cf_mem_alloc(struct cf_mem *m, size_t len, size_t guard, size_t offset);
/* Creates an MR, builds an MDL for the region and registers it (§2.6). CHECKs success. */
void cf_mem_reg(struct cf_mem *m, struct cf_ad *a, NDK_PD *pd, ULONG flags);
void cf_mem_free(struct cf_mem *m);          /* deregister, close MR, unmap */
bool cf_mem_guards_ok(const struct cf_mem *m);
NDK_SGE cf_sge(const struct cf_mem *m, size_t off, ULONG len);

/* Deterministic payload: byte j of stream seed. fill/verify a range [off, off+n) of a stream. */
void cf_fill(void *p, size_t n, uint32_t seed, size_t stream_off);
/* Returns -1 when equal, else the first differing offset. */
long long cf_verify(const void *p, size_t n, uint32_t seed, size_t stream_off);
#define CHECK_PATTERN(p, n, seed, off) do { long long _o = cf_verify((p), (n), (seed), (off)); \
    if (_o >= 0) ndk_test_fail(__FILE__, __LINE__, "payload mismatch at byte %lld of %zu (seed %u)", _o, \
                               (size_t)(n), (unsigned)(seed)); } while (0)
/* TRUE when every byte is v. */
bool cf_all(const void *p, size_t n, uint8_t v);

/* ==== two processes ==== */
/* Runs server(fd, arg) here and client(fd, arg) in a forked child (which dies with its parent),
 * joined by a socketpair; fails when either side fails or the child outlives timeout_ms. */
void cf_pair(void (*server)(int fd, void *arg), void (*client)(int fd, void *arg), void *arg, int timeout_ms);
/* The child's pid (for peer-death cases), valid in the server during cf_pair. */
extern pid_t cf_peer_pid;
/* Test synchronisation messages. */
struct cf_msg {
    uint32_t tag;
    uint32_t token;
    uint64_t addr;
    uint64_t len;
    uint64_t arg;
};
void cf_tell(int fd, uint32_t tag, uint64_t addr, uint32_t token, uint64_t len, uint64_t arg);
struct cf_msg cf_hear(int fd, uint32_t tag);
struct cf_msg cf_hear_any(int fd);
/* Both sides call it with the same tag: a barrier. */
void cf_sync(int fd, uint32_t tag);
void cf_send_bytes(int fd, const void *p, size_t n);
void cf_recv_bytes(int fd, void *p, size_t n);
/* TRUE when the peer closed the channel (or died) within ms. */
bool cf_peer_gone(int fd, int ms);

/* ==== connections ==== */
struct cf_qp_attr {
    ULONG cq_depth;                 /* 0: rq + iq depth + 8 */
    ULONG rq_depth, iq_depth;       /* 0: 32 */
    ULONG rsge, isge;               /* 0: min(4, adapter max) */
    ULONG inline_size;
    bool shared_cq;                 /* one CQ for receive and initiator */
    bool use_srq;
    ULONG srq_depth, srq_threshold;
    ULONG ird, ord;                 /* 0: 8 (capped by the adapter) */
};
struct cf_conn {
    struct cf_ad ad;
    struct cf_qp_attr attr;
    NDK_PD *pd;
    struct cf_cq *rcq, *icq;
    struct cf_srq *srq;
    NDK_QP *qp;
    NDK_CONNECTOR *conn;
    NDK_LISTENER *lis;
    SOCKADDR_INET lis_addr;
    pthread_mutex_t m;
    pthread_cond_t c;
    int disc_events;                /* disconnect event callbacks */
    NDK_CONNECTOR *incoming[16];    /* connect events not yet taken */
    int n_incoming, total_incoming;
};
/* Opens the adapter and creates PD, CQ(s), SRQ if asked, and the QP (QPContext = c). */
void cf_conn_init(struct cf_conn *c, const struct cf_qp_attr *attr);
/* Listener on port 0 of the address under test; stores the bound address in c->lis_addr. */
void cf_conn_listen(struct cf_conn *c);
/* Waits for the next connect event; NULL on timeout. */
NDK_CONNECTOR *cf_conn_next_incoming(struct cf_conn *c, int ms);
/* Accepts (blocking: completes once the peer called NdkCompleteConnect). Returns the status. */
NTSTATUS cf_conn_accept(struct cf_conn *c, NDK_CONNECTOR *in, const void *pdata, ULONG len);
/* Creates a connector and connects to dst (blocking), then NdkCompleteConnect (blocking).
 * Returns the first failure or SUCCESS. */
NTSTATUS cf_conn_connect(struct cf_conn *c, const SOCKADDR_INET *dst, const void *pdata, ULONG len);
/* Only the NdkConnect part (blocking); the caller then completes or rejects. */
NTSTATUS cf_conn_connect_only(struct cf_conn *c, const SOCKADDR_INET *dst, const void *pdata, ULONG len);
NTSTATUS cf_conn_complete(struct cf_conn *c);
int cf_conn_disc_events(struct cf_conn *c);
bool cf_conn_wait_disc(struct cf_conn *c, int n, int ms);
/* Closes everything that exists (connector, QP, SRQ, CQs, PD, listener), then the adapter. */
void cf_conn_fini(struct cf_conn *c);

/* The usual two-sided setup: the server listens, tells the client its address, accepts; the
 * client connects. Both return with an established connection. */
void cf_server_up(struct cf_conn *c, int fd, const struct cf_qp_attr *attr);
void cf_client_up(struct cf_conn *c, int fd, const struct cf_qp_attr *attr);

/* Post helpers that CHECK the inline status is SUCCESS. */
void cf_post_recv(struct cf_conn *c, uintptr_t ctx, const NDK_SGE *sge, ULONG n);
void cf_post_send(struct cf_conn *c, uintptr_t ctx, const NDK_SGE *sge, ULONG n, ULONG flags);
void cf_post_write(struct cf_conn *c, uintptr_t ctx, const NDK_SGE *sge, ULONG n, uint64_t raddr, UINT32 rtok,
                   ULONG flags);
void cf_post_read(struct cf_conn *c, uintptr_t ctx, const NDK_SGE *sge, ULONG n, uint64_t raddr, UINT32 rtok,
                  ULONG flags);

/* Sizes every data-path case covers: 0, 1, 4 KiB - 1, 4 KiB, 64 KiB and the max transfer. */
#define CF_NSIZES 6
void cf_sizes(const NDK_ADAPTER_INFO *info, size_t sizes[CF_NSIZES]);

/* Keeps a CQ/SRQ wrapper allocated and reachable for the life of the process, so that a late
 * callback (a provider bug) hits valid memory and is reported by the case instead of crashing
 * the allocator. cf_try_cq / cf_try_srq call it for every wrapper they create. */
void cf_keep_for_late_callbacks(void *wrapper);

#endif
