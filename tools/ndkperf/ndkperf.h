/*
 * ndkperf.h - what ndkperf's parts share: the wire format of the test (connect and accept
 * private data, control messages), the options, and a test connection (struct perf_conn: an
 * ndk_tool_session with the control ring and the data area) with its helpers in perf.c.
 *   ndkperf.c  the command line (perftest's and NdkPerfCmd's shapes) and main
 *   perf.c     test connections, control messages, payload patterns, output
 *   hello.c    the connect hello's wire form
 *   server.c   ndkperf -s: one thread per connection, the test in the CQ notification callback
 *   client.c   ndkperf -c: the phases, bandwidth and latency, and the result table / JSON
 */
#ifndef NDKPERF_H
#define NDKPERF_H

#include <stdio.h>

#include "ndk_tool_adapter.h"
#include "ndk_tool_cli.h"
#include "ndk_tool_session.h"

#define PERF_DEFAULT_PORT 18515
#define PERF_VERSION      2
#define PERF_MAGIC        "NDKPERF"
#define CTL_MAGIC         "NDKPCTL"
#define CTL_SIZE          64u
#define CTL_RING          8u          /* control Sends in flight per side */
#define CLIENT_RECVS      16u
#define SERVER_SPARE_RECV 4u
#define PERF_MEM_BUDGET   (64ull << 20)   /* per-connection payload memory for slots */
#define SWEEP_MAX         (8u << 20)
#define MAX_CONNS         64

enum perf_op { OP_WRITE = 1, OP_READ = 2, OP_SEND = 3 };
extern const char *const perf_op_name[];     /* "write", "read", "send" */
extern const char *const perf_op_title[];    /* perftest's titles: "RDMA_Write", ... */

enum { HELLO_LAT = 1, HELLO_VERIFY = 2 };

/* The test a client asks for (host order). It travels as the connect private data in the
 * packed form below (hello.c), which fits the smallest caller data of the transports: an IB/RoCE
 * CM REQ carries 56 bytes after rdma_cm's header (MaxCallerData 54 on the verbs provider). */
struct perf_hello {
    char     magic[8];
    uint16_t version;
    uint16_t op;
    uint32_t flags;
    uint64_t session;
    uint32_t conn_index;
    uint32_t conn_count;
    uint32_t depth;          /* data messages in flight (send: receives the server posts) */
    uint32_t inline_size;
    uint64_t max_size;       /* largest message of the run */
    uint64_t client_buf;     /* where the server RDMA-Writes back (write --lat) */
    uint32_t client_token;
    uint32_t client_buf_len;
    uint32_t slots;          /* payload slots of max_size in the server's buffer */
    uint32_t reserved;
};

/* The hello on the wire: big-endian, no padding; 48 bytes (PERF_VERSION 2; version 1 sent
 * struct perf_hello as is, 72 bytes, and is refused as an invalid request). */
#define PERF_HELLO_WIRE 48u
struct perf_hello_wire {
    char     magic[8];       /*  0 PERF_MAGIC */
    uint16_t version;        /*  8 */
    uint8_t  op;             /* 10 enum perf_op */
    uint8_t  flags;          /* 11 HELLO_* */
    uint8_t  conn_index;     /* 12 < conn_count <= MAX_CONNS */
    uint8_t  conn_count;     /* 13 */
    uint16_t depth;          /* 14 */
    uint16_t slots;          /* 16 */
    uint16_t reserved;       /* 18 zero */
    uint32_t inline_size;    /* 20 */
    uint32_t session;        /* 24 the client's session id, low 32 bits */
    uint32_t max_size;       /* 28 at most MaxTransferLength, a ULONG */
    uint64_t client_buf;     /* 32 */
    uint32_t client_token;   /* 40 */
    uint32_t client_buf_len; /* 44 */
} __attribute__((packed));
_Static_assert(sizeof(struct perf_hello_wire) == PERF_HELLO_WIRE, "hello is 48 bytes on the wire");
/* hello.c: 0, or -1 when a field does not fit its wire width (the test cannot be asked for). */
int perf_hello_encode(const struct perf_hello *h, struct perf_hello_wire *w);
/* hello.c: true when buf holds a hello of this version (magic, version, length). */
bool perf_hello_decode(const void *buf, size_t len, struct perf_hello *h);

/* Accept private data, server -> client. */
struct perf_accept {
    char     magic[8];
    uint16_t version;
    uint16_t status;
    uint32_t credits;        /* data receives posted (send) */
    uint64_t buf;            /* server's RDMA buffer */
    uint32_t token;
    uint32_t buf_len;
    uint32_t slots;
    uint32_t pad;
};

/* Reject private data of a refused request, server -> client (big-endian). */
struct perf_refusal {
    char     magic[8];
    uint16_t version;
    uint16_t status;         /* PERF_REFUSED_* */
    char     reason[200];    /* NUL-terminated text for the client's error line */
};
enum { PERF_REFUSED_BAD_REQUEST = 1, PERF_REFUSED_MEMORY = 2, PERF_REFUSED_BUSY = 3 };

enum ctl_type { CTL_START = 1, CTL_PHASE_END, CTL_ACK, CTL_DONE, CTL_RESULT, CTL_CREDIT };

/* CTL_START's a: how the run goes beyond what the hello says. b: the size of the phase that
 * follows (START_LAST_BYTE: the client sends a START before each phase). c: receive buffers the
 * server may cycle its reposted receives through (START_RECV_SHARED). */
enum {
    /* write --lat by last-byte polling: one RDMA Write per direction, each side spins on the
     * last byte of its target buffer (the adapter places in order), no signal Send. */
    START_LAST_BYTE = 1,
    /* send bandwidth without --verify, no message of CTL_SIZE bytes in the run: the payload is
     * thrown away, so the receives may share c buffers (the footprint of an RDMA Write run's
     * one target) instead of one buffer each; a control message still cannot be overwritten
     * before it is read, because the client sends nothing after one until it is answered. */
    START_RECV_SHARED = 2,
};

/* Control message (Send, CTL_SIZE bytes). */
struct perf_ctl {
    char     magic[8];
    uint32_t type;
    uint32_t status;         /* ACK/RESULT: 0 ok, 1 payload mismatch */
    uint64_t a, b, c, d;     /* PHASE_END: size, count, slots, seed; ACK: cpu_us; CREDIT: reposted */
    uint64_t e, f;
};
_Static_assert(sizeof(struct perf_ctl) == CTL_SIZE, "control message size");

/* Write --lat arrival signal (Send after the RDMA Write; not with START_LAST_BYTE). */
struct perf_signal {
    uint8_t  marker;         /* 0x80 | ... : never a control message */
    uint8_t  pad[3];
    uint32_t size;
    uint64_t seq;
};

/* RequestContext: kind in the top byte, index below. */
enum tag_kind { K_DATA = 1, K_RECV, K_CTL, K_SIGNAL, K_ECHO, K_WB };
#define TAG(kind, idx) ((PVOID)(uintptr_t)(((uint64_t)(kind) << 56) | ((uint64_t)(idx) & 0x00FFFFFFFFFFFFFFull)))
#define TAG_KIND(p)    ((int)((uint64_t)(uintptr_t)(p) >> 56))
#define TAG_IDX(p)     ((uint64_t)(uintptr_t)(p) & 0x00FFFFFFFFFFFFFFull)

/* ---- options (ndkperf.c) ---- */

struct perf_opts {
    ndk_tool_cli cli;               /* the shared options */
    bool        lat, sweep, verify, once, quiet, ndkperfcmd, append;
    enum perf_op op;
    const char *logfile, *testtype;
    uint64_t    size;
    bool        size_set;
    uint64_t    iters;
    bool        iters_set;
    double      duration;
    unsigned    conns;
    unsigned    depth;
    bool        depth_set;
    unsigned    inline_size;
    bool        last_byte;         /* write --lat: last-byte polling even without IN_ORDER_DMA */
    bool        no_last_byte;      /* write --lat: always Write + signal Send */
    ULONG       server_if, client_if;
    double      listen_timeout;    /* NdkPerfCmd -W */
    uint64_t    max_mem;           /* server: memory budget of all sessions together */
    double      idle_timeout;      /* server: seconds a session may wait for its first message */
};
extern struct perf_opts perf_opt;
extern FILE *perf_log;             /* NdkPerfCmd -LogFilename */

/* ---- a test connection (perf.c) ---- */

/* Layout of the session's area: the control ring, then from the next page the data buffer. */
#define PERF_CTL_AREA 4096u

struct perf_conn {
    ndk_tool_session s;             /* receive slots: the receive pool */
    size_t           off_ctl, off_data;
    uint64_t         data_len;
    uint64_t         ctl_sent, ctl_done;
    char             error[512];    /* first failure */
    char             note[256];     /* first -v diagnostic, printed by the connection's thread */
};

/* Opens the session: nrecv receive buffers of rbuf bytes, iq_depth initiator requests, and a
 * data buffer of data_len bytes that the peer may read and write. Blocks. */
NTSTATUS perf_conn_open(struct perf_conn *pc, ndk_tool_adapter *ad, uint32_t nrecv, uint32_t rbuf, ULONG iq_depth,
                        ULONG inline_size, uint64_t data_len);
static inline uint8_t *perf_data(struct perf_conn *pc) { return pc->s.mem.buf + pc->off_data; }
static inline uint8_t *perf_rbuf(struct perf_conn *pc, uint32_t k) { return ndk_tool_session_slot(&pc->s, k); }
NTSTATUS perf_post_recv(struct perf_conn *pc, uint32_t k);
/* Records the first failure (any context; never blocks). */
void perf_fail(struct perf_conn *pc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records the first -v diagnostic: a handler may run in the CQ notification callback, which
 * must not block on stderr, so the connection's thread prints it later. */
void perf_note(struct perf_conn *pc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *perf_kind_name(int kind, enum perf_op op);
/* Posts one control message from the ring. The caller made sure a ring slot is free. */
NTSTATUS perf_send_ctl(struct perf_conn *pc, uint32_t type, uint32_t status, uint64_t a, uint64_t b, uint64_t c,
                       uint64_t d);
static inline bool perf_ctl_room(const struct perf_conn *pc) { return pc->ctl_sent - pc->ctl_done < CTL_RING; }
bool perf_is_ctl(const uint8_t *p, ULONG n);

/* ---- payload patterns (perf.c), the shared ndk_pattern ---- */

/* Message `seed`: the pattern from position 0, with bit 7 of byte 0 set so that a data
 * message never looks like control. */
void perf_fill(uint8_t *p, uint64_t len, uint64_t seed);
bool perf_check(const uint8_t *p, uint64_t len, uint64_t seed, uint64_t *bad_at);
/* The server's buffer for RDMA Read: one pattern over the whole buffer, so data read from the
 * wrong offset fails. off is the position of p in the buffer. */
void perf_read_fill(uint8_t *p, uint64_t off, uint64_t len);
bool perf_read_check(const uint8_t *p, uint64_t off, uint64_t len, uint64_t *bad_at);
/* write --lat by last-byte polling: message seq is perf_fill's pattern with its last byte
 * replaced by (uint8_t)seq, the byte the receiver spins on. */
void perf_last_byte_fill(uint8_t *p, uint64_t len, uint64_t seq);
/* Checks message seq once its last byte is seen, through scratch (len bytes of the caller's).
 * Without in-order placement the bytes before it may still be on their way, so a mismatch is
 * rechecked for up to 100 ms; any thread. */
bool perf_last_byte_check(const volatile uint8_t *p, uint64_t len, uint64_t seq, uint8_t *scratch);
/* Reads the byte a last-byte poller spins on. */
uint8_t perf_peek(const volatile uint8_t *p);

/* ---- output (perf.c) ---- */

/* printf to stdout (unless --json) and to the -LogFilename log. */
void perf_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the two sides ---- */
int srv_run(ndk_rt *rt);
int cli_run(ndk_rt *rt);

#endif /* NDKPERF_H */
