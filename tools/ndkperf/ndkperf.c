/*
 * ndkperf - RDMA Write / Read / Send bandwidth and latency through the OpenNDK runtime and a
 * chosen NDK adapter, perftest-style.
 *
 *   ndkperf -s [ADDR][:PORT]                  serve (IPv4 and IPv6, any address by default)
 *   ndkperf -c ADDR[:PORT] -t write|read|send [--lat] [-z SIZE | --sweep] [-n ITERS | -D SECONDS]
 *           [-q CONNECTIONS] [-d DEPTH] [--inline N] [--crc] [--poll] [--json] [--verify]
 *   ndkperf -S|-C -ServerAddr IP:PORT [-ServerIf N] [-ClientAddr IP] [-ClientIf N]
 *           -TestType rping|rperf [-W SECONDS] [-ts SIZE]   (NdkPerfCmd's command shape)
 *
 * The client states the test in its connect private data, so the server needs nothing beyond
 * -s. Control messages (phase boundaries, credits, CPU reports) travel as Sends on the same
 * connection. Without --poll, completions come through CQ notifications (NdkArmCq) and the
 * data path of a phase (on the server, the whole test up to the client's DONE) runs inside the
 * CQ notification callback, as NDK consumers do: each message costs the receiving side one
 * wake-up, not two. The connection's thread waits for the control exchanges between phases.
 * With --poll that thread busy-polls the CQ for everything.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <endian.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ndk_tool.h"

#define PERF_DEFAULT_PORT 18515
#define PERF_VERSION      1
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
static const char *const op_name[] = { "?", "write", "read", "send" };
static const char *const op_title[] = { "?", "RDMA_Write", "RDMA_Read", "Send" };

enum { HELLO_LAT = 1, HELLO_VERIFY = 2 };

/* Connect private data, client -> server (big-endian). */
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
_Static_assert(sizeof(struct perf_hello) == 72, "hello is 72 bytes");

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

enum ctl_type { CTL_START = 1, CTL_PHASE_END, CTL_ACK, CTL_DONE, CTL_RESULT, CTL_CREDIT };

/* Control message (Send, CTL_SIZE bytes). */
struct perf_ctl {
    char     magic[8];
    uint32_t type;
    uint32_t status;         /* ACK/RESULT: 0 ok, 1 payload mismatch */
    uint64_t a, b, c, d;     /* PHASE_END: size, count, slots, seed; ACK: cpu_us; CREDIT: reposted */
    uint64_t e, f;
};
_Static_assert(sizeof(struct perf_ctl) == CTL_SIZE, "control message size");

/* Write --lat arrival signal (Send after the RDMA Write). */
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

/* ---------------------------------------------------------------------------------------------- */
/* options                                                                                        */

static struct {
    bool        server, client, lat, sweep, poll, json, verify, crc, once, quiet, ndkperfcmd, append;
    int         verbose;
    enum perf_op op;
    const char *addr, *local, *provider, *logfile, *testtype;
    uint64_t    size;
    bool        size_set;
    uint64_t    iters;
    bool        iters_set;
    double      duration;
    unsigned    conns;
    unsigned    depth;
    bool        depth_set;
    unsigned    inline_size;
    ULONG       server_if, client_if;
    double      listen_timeout;    /* NdkPerfCmd -W */
} opt = { .conns = 1, .depth = 128, .size = 65536 };

static FILE *perf_log;                 /* NdkPerfCmd -LogFilename */

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
    va_list ap;
    if (!opt.json) {
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
    }
    if (perf_log) {
        va_start(ap, fmt);
        vfprintf(perf_log, fmt, ap);
        va_end(ap);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* payload patterns                                                                               */

/* Message-specific pattern; byte 0 has bit 7 set so a data message never looks like control. */
static void fill_seed(uint8_t *p, uint64_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    for (uint64_t i = 0; i < len; i++) {
        if ((i & 7) == 0)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (uint8_t)(x >> (8 * (i & 7)));
    }
    if (len)
        p[0] |= 0x80;
}

static bool check_seed(const uint8_t *p, uint64_t len, uint64_t seed, uint64_t *bad_at)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    for (uint64_t i = 0; i < len; i++) {
        if ((i & 7) == 0)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint8_t want = (uint8_t)(x >> (8 * (i & 7)));
        if (i == 0)
            want |= 0x80;
        if (p[i] != want) {
            *bad_at = i;
            return false;
        }
    }
    return true;
}

/* Position-dependent pattern of the server's buffer for RDMA Read: a table with a prime period,
 * copied in chunks, so that filling and checking large buffers costs little (the server fills
 * before it accepts, inside the peer's connect timeout). */
#define ABS_PERIOD 65521u
static uint8_t abs_table[ABS_PERIOD];

static void abs_init(void) { fill_seed(abs_table, ABS_PERIOD, 0xABCDEFu); }

static void fill_abs(uint8_t *p, uint64_t off, uint64_t len)
{
    while (len) {
        uint64_t at = off % ABS_PERIOD, n = ABS_PERIOD - at < len ? ABS_PERIOD - at : len;
        memcpy(p, abs_table + at, n);
        p += n;
        off += n;
        len -= n;
    }
}

static bool check_abs(const uint8_t *p, uint64_t off, uint64_t len, uint64_t *bad_at)
{
    uint64_t done = 0;
    while (done < len) {
        uint64_t at = off % ABS_PERIOD, n = ABS_PERIOD - at < len - done ? ABS_PERIOD - at : len - done;
        if (memcmp(p, abs_table + at, n) != 0) {
            for (uint64_t i = 0; i < n; i++)
                if (p[i] != abs_table[at + i]) {
                    *bad_at = done + i;
                    return false;
                }
        }
        p += n;
        off += n;
        done += n;
    }
    return true;
}

static bool is_ctl(const uint8_t *p, ULONG n)
{
    return n == CTL_SIZE && memcmp(p, CTL_MAGIC, sizeof CTL_MAGIC) == 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* a connection's buffers, shared by both sides                                                   */

struct perf_conn {
    ndk_tool_conn conn;
    ndk_tool_mem  mem;
    /* layout inside mem */
    uint32_t      nrecv, rbuf;      /* receive pool: nrecv buffers of rbuf bytes */
    size_t        off_recv, off_ctl, off_data;
    uint64_t      data_len;
    uint32_t      slots;
    uint64_t      ctl_sent, ctl_done;
    char          where[NDK_TOOL_ADDRSTRLEN];
    char          error[512];       /* first failure */
    char          note[256];        /* first -v diagnostic, printed by the connection's thread */
};

static NTSTATUS perf_mem_setup(struct perf_conn *pc, uint32_t nrecv, uint32_t rbuf, uint64_t data_len)
{
    pc->nrecv = nrecv;
    pc->rbuf = rbuf;
    pc->off_recv = 0;
    pc->off_ctl = (size_t)nrecv * rbuf;
    pc->off_ctl = (pc->off_ctl + 63) & ~(size_t)63;
    pc->off_data = pc->off_ctl + CTL_RING * CTL_SIZE;
    pc->off_data = (pc->off_data + 4095) & ~(size_t)4095;
    pc->data_len = data_len;
    return ndk_tool_mem_register(pc->conn.pd, NULL, pc->off_data + (data_len ? data_len : 1),
                                 NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                                     NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_RDMA_READ_SINK,
                                 &pc->mem);
}

static inline uint8_t *perf_data(struct perf_conn *pc) { return pc->mem.buf + pc->off_data; }
static inline uint8_t *perf_rbuf(struct perf_conn *pc, uint32_t k) { return pc->mem.buf + pc->off_recv + (size_t)k * pc->rbuf; }

static NTSTATUS perf_post_recv(struct perf_conn *pc, uint32_t k)
{
    NDK_SGE sge = ndk_tool_sge(&pc->mem, pc->off_recv + (size_t)k * pc->rbuf, pc->rbuf);
    return pc->conn.qp->Dispatch->NdkReceive(pc->conn.qp, TAG(K_RECV, k), &sge, 1);
}

static void perf_fail(struct perf_conn *pc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perf_fail(struct perf_conn *pc, const char *fmt, ...)
{
    if (pc->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pc->error, sizeof pc->error, fmt, ap);
    va_end(ap);
}

/* The first -v diagnostic of a handler: a handler may run in the CQ notification callback,
 * which must not block on stderr, so the connection's thread prints it later. */
static void perf_note(struct perf_conn *pc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perf_note(struct perf_conn *pc, const char *fmt, ...)
{
    if (!opt.verbose || pc->note[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pc->note, sizeof pc->note, fmt, ap);
    va_end(ap);
}

static void perf_conn_free(struct perf_conn *pc)
{
    if (pc->conn.connector && pc->conn.established) {
        ndk_tool_op *op = ndk_tool_op_new();
        NTSTATUS st = pc->conn.connector->Dispatch->NdkDisconnect(pc->conn.connector, ndk_tool_op_request_done, op);
        ndk_tool_op_finish(op, st, NDK_TOOL_OP_TIMEOUT_MS, NULL);
        pc->conn.established = false;
    }
    NDK_TOOL_CLOSE(pc->conn.connector);
    pc->conn.connector = NULL;
    NDK_TOOL_CLOSE(pc->conn.qp);
    pc->conn.qp = NULL;
    ndk_tool_mem_release(&pc->mem);
    ndk_tool_conn_close(&pc->conn);
}

static const char *kind_name(int kind, enum perf_op op)
{
    switch (kind) {
    case K_DATA: return op == OP_WRITE ? "RDMA Write" : op == OP_READ ? "RDMA Read" : "Send";
    case K_RECV: return "Receive";
    case K_CTL: return "control Send";
    case K_SIGNAL: return "signal Send";
    case K_ECHO: return "echo Send";
    case K_WB: return "RDMA Write back";
    default: return "request";
    }
}


/* Posts one control message from the ring. The caller made sure a ring slot is free. */
static NTSTATUS perf_send_ctl(struct perf_conn *pc, uint32_t type, uint32_t status, uint64_t a, uint64_t b,
                              uint64_t c, uint64_t d)
{
    struct perf_ctl m;
    memset(&m, 0, sizeof m);
    memcpy(m.magic, CTL_MAGIC, sizeof CTL_MAGIC);
    m.type = htobe32(type);
    m.status = htobe32(status);
    m.a = htobe64(a);
    m.b = htobe64(b);
    m.c = htobe64(c);
    m.d = htobe64(d);
    size_t off = pc->off_ctl + (size_t)(pc->ctl_sent % CTL_RING) * CTL_SIZE;
    memcpy(pc->mem.buf + off, &m, sizeof m);
    NDK_SGE sge = ndk_tool_sge(&pc->mem, off, CTL_SIZE);
    NTSTATUS st = pc->conn.qp->Dispatch->NdkSend(pc->conn.qp, TAG(K_CTL, pc->ctl_sent), &sge, 1, 0);
    if (st == STATUS_SUCCESS)
        pc->ctl_sent++;
    return st;
}

static inline bool perf_ctl_room(const struct perf_conn *pc) { return pc->ctl_sent - pc->ctl_done < CTL_RING; }

/* ================================================================================================ */
/* server                                                                                           */

struct srv_conn {
    struct perf_conn  pc;
    NDK_CONNECTOR    *incoming;
    ndk_tool_adapter *ad;
    struct perf_hello h;            /* host order */
    pthread_t         thread;
    volatile int      finished;
    int               rc;
    bool              done;         /* DONE received, RESULT queued */
    bool              over;         /* the connection failed or ended (srv_handle returned false) */
    uint64_t          mismatches;
    uint64_t          data_rx, reposted, credited, credit_batch;
    /* control replies waiting for a free ring slot */
    int               pending_type;
    uint32_t          pending_status;
};

static void srv_flush_pending(struct srv_conn *sc)
{
    struct perf_conn *pc = &sc->pc;
    NTSTATUS st = STATUS_SUCCESS;
    if (sc->pending_type && perf_ctl_room(pc)) {
        st = perf_send_ctl(pc, (uint32_t)sc->pending_type, sc->pending_status, ndk_tool_cpu_us(), ndk_tool_now_ns(),
                           sc->data_rx, 0);
        sc->pending_type = 0;
    }
    if (st == STATUS_SUCCESS && sc->h.op == OP_SEND && !(sc->h.flags & HELLO_LAT) &&
        sc->reposted - sc->credited >= sc->credit_batch && perf_ctl_room(pc)) {
        st = perf_send_ctl(pc, CTL_CREDIT, 0, sc->reposted, 0, 0, 0);
        if (st == STATUS_SUCCESS)
            sc->credited = sc->reposted;
    }
    if (st != STATUS_SUCCESS)
        perf_fail(pc, "sending a control message failed: %s", ndk_tool_status(st));
}

/* Handles one receive; returns false on a fatal error. */
static bool srv_on_recv(struct srv_conn *sc, uint32_t k, ULONG bytes)
{
    struct perf_conn *pc = &sc->pc;
    uint8_t *p = perf_rbuf(pc, k);
    NTSTATUS st;

    if (is_ctl(p, bytes)) {
        struct perf_ctl m;
        memcpy(&m, p, sizeof m);
        uint32_t type = be32toh(m.type), status = 0;
        if (type == CTL_PHASE_END && sc->h.op == OP_WRITE && (sc->h.flags & HELLO_VERIFY) &&
            !(sc->h.flags & HELLO_LAT)) {
            /* Every slot holds the pattern of the last write aimed at it. */
            uint64_t size = be64toh(m.a), count = be64toh(m.b), slots = be64toh(m.c), seed = be64toh(m.d);
            for (uint64_t s = 0; s < slots && s < count; s++) {
                uint64_t last = s + slots * ((count - 1 - s) / slots), bad = 0;
                if ((s + 1) * size > pc->data_len || !check_seed(perf_data(pc) + s * size, size, seed + last, &bad)) {
                    perf_note(pc, "%s: slot %llu of the %llu-byte phase differs at byte %llu", pc->where,
                              (unsigned long long)s, (unsigned long long)size, (unsigned long long)bad);
                    sc->mismatches++;
                    break;
                }
            }
        }
        if (type == CTL_START || type == CTL_PHASE_END || type == CTL_DONE) {
            status = sc->mismatches ? 1 : 0;
            if (type == CTL_DONE)
                sc->done = true;
            sc->pending_type = type == CTL_DONE ? CTL_RESULT : CTL_ACK;
            sc->pending_status = status;
        }
    } else if (sc->h.op == OP_SEND && !(sc->h.flags & HELLO_LAT)) {
        if (sc->h.flags & HELLO_VERIFY) {
            uint64_t bad;
            if (!check_seed(p, bytes, sc->data_rx, &bad)) {
                perf_note(pc, "%s: message %llu differs at byte %llu", pc->where, (unsigned long long)sc->data_rx,
                          (unsigned long long)bad);
                sc->mismatches++;
            }
        }
        sc->data_rx++;
        sc->reposted++;
    } else if (sc->h.flags & HELLO_LAT) {
        /* send --lat: echo the message; write --lat: the signal says the Write has landed,
         * verify it, write it back and echo the signal. Both from the receive buffer. */
        if (sc->h.op == OP_WRITE) {
            struct perf_signal sig;
            if (bytes != sizeof sig) {
                perf_fail(pc, "unexpected %u-byte message", bytes);
                return false;
            }
            memcpy(&sig, p, sizeof sig);
            uint32_t size = be32toh(sig.size);
            uint64_t seq = be64toh(sig.seq), bad;
            if (size > pc->data_len || size > sc->h.client_buf_len) {
                perf_fail(pc, "write of %u bytes does not fit the buffers", size);
                return false;
            }
            if ((sc->h.flags & HELLO_VERIFY) && !check_seed(perf_data(pc), size, seq, &bad))
                sc->mismatches++;
            NDK_SGE sge = ndk_tool_sge(&pc->mem, pc->off_data, size);
            ULONG flags = size <= sc->h.inline_size ? NDK_OP_FLAG_INLINE : 0;
            st = pc->conn.qp->Dispatch->NdkWrite(pc->conn.qp, TAG(K_WB, 0), &sge, 1, sc->h.client_buf,
                                                 sc->h.client_token, flags);
            if (st != STATUS_SUCCESS) {
                perf_fail(pc, "posting RDMA Write failed: %s", ndk_tool_status(st));
                return false;
            }
        }
        NDK_SGE sge = ndk_tool_sge(&pc->mem, pc->off_recv + (size_t)k * pc->rbuf, bytes);
        ULONG flags = bytes <= sc->h.inline_size ? NDK_OP_FLAG_INLINE : 0;
        st = pc->conn.qp->Dispatch->NdkSend(pc->conn.qp, TAG(K_ECHO, k), &sge, bytes ? 1 : 0, flags);
        if (st != STATUS_SUCCESS) {
            perf_fail(pc, "posting the echo failed: %s", ndk_tool_status(st));
            return false;
        }
        return true;            /* reposted when the echo completes */
    } else {
        perf_fail(pc, "unexpected %u-byte message", bytes);
        return false;
    }
    st = perf_post_recv(pc, k);
    if (st != STATUS_SUCCESS) {
        perf_fail(pc, "posting a receive failed: %s", ndk_tool_status(st));
        return false;
    }
    return true;
}

/* The wait for completions ended without any. A disconnect may be seen before the provider
 * flushed our receives, so it is a failure by itself unless the client said DONE. */
static void srv_wait_failed(struct srv_conn *sc, NTSTATUS st)
{
    if (st == STATUS_CONNECTION_DISCONNECTED && !sc->done)
        perf_fail(&sc->pc, "the client went away before the end of the test");
    else if (!sc->done)
        perf_fail(&sc->pc, "waiting for completions: %s", ndk_tool_status(st));
    sc->over = true;
}

/* One batch of completions; false when the connection is over (cleanly or not). Runs on the
 * CQ's owner: the connection's thread, or the notification callback (must not block). */
static bool srv_handle(struct srv_conn *sc, NDK_RESULT *r, ULONG n)
{
    struct perf_conn *pc = &sc->pc;
    NTSTATUS st;
    for (ULONG i = 0; i < n; i++) {
        int kind = TAG_KIND(r[i].RequestContext);
        uint64_t idx = TAG_IDX(r[i].RequestContext);
        if (r[i].Status != STATUS_SUCCESS) {
            if (!sc->done && !ndk_tool_conn_disconnected(&pc->conn) && r[i].Status != STATUS_CANCELLED)
                perf_fail(pc, "%s completed with %s", kind_name(kind, (enum perf_op)sc->h.op),
                          ndk_tool_status(r[i].Status));
            else if (!sc->done)
                perf_fail(pc, "the client went away before the end of the test");
            sc->over = true;
            return false;
        }
        switch (kind) {
        case K_CTL: pc->ctl_done++; break;
        case K_ECHO:
            if ((st = perf_post_recv(pc, (uint32_t)idx)) != STATUS_SUCCESS) {
                perf_fail(pc, "posting a receive failed: %s", ndk_tool_status(st));
                sc->over = true;
                return false;
            }
            break;
        case K_RECV:
            if (!srv_on_recv(sc, (uint32_t)idx, r[i].BytesTransferred)) {
                sc->over = true;
                return false;
            }
            break;
        default: break;
        }
    }
    srv_flush_pending(sc);
    if (pc->error[0])
        sc->over = true;
    return !sc->over;
}

/* ndk_tool_cq_handler (callback or connection thread): serves the test; once the client said
 * DONE, the rest (waiting for its disconnect) is left to the connection's thread. */
static bool srv_handler(void *ctx, NDK_RESULT *r, ULONG n)
{
    struct srv_conn *sc = ctx;
    return srv_handle(sc, r, n) && !sc->done;
}

/* Connection thread, blocks: waits for and handles one batch; false when the connection is over. */
static bool srv_pump(struct srv_conn *sc)
{
    NDK_RESULT r[64];
    NTSTATUS st;
    ULONG n = ndk_tool_cq_wait(sc->pc.conn.cq, r, 64, sc->done ? 10000 : NDK_TOOL_INFINITE, &st);
    if (!n) {
        srv_wait_failed(sc, st);
        return false;
    }
    return srv_handle(sc, r, n);
}

static void *srv_conn_main(void *arg)
{
    struct srv_conn *sc = arg;
    struct perf_conn *pc = &sc->pc;
    struct perf_hello *h = &sc->h;
    NTSTATUS st;
    char peer[NDK_TOOL_ADDRSTRLEN];

    uint64_t rmax = h->max_size > CTL_SIZE ? h->max_size : CTL_SIZE;
    uint32_t nrecv = 8, rbuf = CTL_SIZE;
    uint64_t data_len = 0;
    if (h->op == OP_SEND) {
        rbuf = (uint32_t)rmax;
        nrecv = (h->flags & HELLO_LAT) ? 4 + SERVER_SPARE_RECV : h->depth + SERVER_SPARE_RECV;
    } else if (h->flags & HELLO_LAT) {
        data_len = h->max_size;
        rbuf = CTL_SIZE;
    } else {
        data_len = h->max_size * h->slots;
    }
    ULONG inl = h->inline_size < sc->ad->info.MaxInlineDataSize ? h->inline_size : sc->ad->info.MaxInlineDataSize;
    h->inline_size = inl;
    st = ndk_tool_conn_init(&pc->conn, sc->ad, nrecv, 16, 1, 1, inl, opt.poll);
    if (st == STATUS_SUCCESS)
        st = perf_mem_setup(pc, nrecv, rbuf, data_len);
    for (uint32_t k = 0; st == STATUS_SUCCESS && k < nrecv; k++)
        st = perf_post_recv(pc, k);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up a connection failed: %s", ndk_tool_status(st));
        sc->incoming->Dispatch->NdkReject(sc->incoming, NULL, 0);
        ndk_tool_close(&sc->incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
        perf_conn_free(pc);
        sc->rc = 1;
        __atomic_store_n(&sc->finished, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    if (h->op == OP_READ)
        fill_abs(perf_data(pc), 0, data_len);
    sc->credit_batch = h->depth / 4 ? h->depth / 4 : 1;

    struct perf_accept acc;
    memset(&acc, 0, sizeof acc);
    memcpy(acc.magic, PERF_MAGIC, sizeof PERF_MAGIC);
    acc.version = htobe16(PERF_VERSION);
    acc.credits = htobe32(h->op == OP_SEND ? h->depth : 0);
    acc.buf = htobe64((uint64_t)(uintptr_t)perf_data(pc));
    acc.token = htobe32(pc->mem.rtoken);
    acc.buf_len = htobe32((uint32_t)data_len);
    acc.slots = htobe32(h->slots);
    ULONG ird = sc->ad->info.MaxInboundReadLimit, ord = sc->ad->info.MaxOutboundReadLimit;
    st = ndk_tool_conn_accept(&pc->conn, sc->incoming, ird, ord, &acc, sizeof acc, NDK_TOOL_CONNECT_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("accept failed: %s", ndk_tool_status(st));
        perf_conn_free(pc);
        sc->rc = 1;
        __atomic_store_n(&sc->finished, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    ndk_tool_addr_str(&pc->conn.peer, true, peer, sizeof peer);
    snprintf(pc->where, sizeof pc->where, "%s", peer);
    if (opt.verbose)
        fprintf(stderr, "ndkperf: %s: %s %s test, up to %llu bytes, depth %u, connection %u of %u\n", peer,
                op_name[h->op], (h->flags & HELLO_LAT) ? "latency" : "bandwidth", (unsigned long long)h->max_size,
                h->depth, h->conn_index + 1, h->conn_count);
    /* The test itself in the notification callback (busy-polled here with --poll). */
    st = ndk_tool_cq_run(pc->conn.cq, true, NDK_TOOL_INFINITE, srv_handler, NULL, sc);
    if (st != STATUS_SUCCESS)
        srv_wait_failed(sc, st);
    while (!sc->over && srv_pump(sc))
        ;
    if (pc->note[0])
        ndk_tool_err("%s", pc->note);
    if (pc->error[0]) {
        ndk_tool_err("%s: %s", peer, pc->error);
        sc->rc = 1;
    } else if (sc->mismatches) {
        ndk_tool_err("%s: payload verification failed (%llu mismatches)", peer, (unsigned long long)sc->mismatches);
        sc->rc = 1;
    } else if (!opt.quiet) {
        if (opt.ndkperfcmd)
            printf("ndkperf: %s test with %s completes\n", opt.testtype ? opt.testtype : op_name[h->op], peer);
        else
            printf("%s: %s %s test finished%s\n", peer, op_name[h->op], (h->flags & HELLO_LAT) ? "latency" : "bandwidth",
                   (h->flags & HELLO_VERIFY) ? ", payload verified" : "");
        fflush(stdout);
    }
    perf_conn_free(pc);
    __atomic_store_n(&sc->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int run_server(ndk_rt *rt)
{
    char why[256], where[1024];
    SOCKADDR_INET addr;
    ndk_tool_server *srv = NULL;
    struct srv_conn *conns[256];
    unsigned nconns = 0, expected = 0;
    int rc = 0;

    if (ndk_tool_parse_addr(opt.addr, PERF_DEFAULT_PORT, &addr, why, sizeof why) != 0) {
        ndk_tool_err("bad address %s", why);
        return 2;
    }
    NTSTATUS st = ndk_tool_server_start(rt, &addr, opt.provider, opt.server_if, &srv, why, sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("%s", why);
        return 1;
    }
    if (!opt.quiet) {
        printf("ndkperf server listening on %s\n", ndk_tool_server_where(srv, where, sizeof where));
        fflush(stdout);
    }
    for (;;) {
        NDK_CONNECTOR *incoming;
        ndk_tool_adapter *ad;
        int timeout = NDK_TOOL_INFINITE;
        if (opt.listen_timeout > 0 && nconns == 0)
            timeout = (int)(opt.listen_timeout * 1000);
        else if (opt.once && expected && nconns >= expected)
            break;
        st = ndk_tool_server_next(srv, opt.once ? (nconns ? 200 : timeout) : 200, &incoming, &ad);
        if (st == STATUS_IO_TIMEOUT) {
            if (nconns == 0 && opt.listen_timeout > 0) {
                ndk_tool_err("no client connected within %g s", opt.listen_timeout);
                rc = 1;
                break;
            }
            /* Reap finished connections so a long-running server does not pile them up. */
            for (unsigned i = 0; i < nconns;) {
                if (__atomic_load_n(&conns[i]->finished, __ATOMIC_ACQUIRE) && !opt.once) {
                    pthread_join(conns[i]->thread, NULL);
                    if (conns[i]->rc)
                        rc = conns[i]->rc;
                    free(conns[i]);
                    conns[i] = conns[--nconns];
                } else {
                    i++;
                }
            }
            continue;
        }
        if (st != STATUS_SUCCESS)
            break;
        struct srv_conn *sc = calloc(1, sizeof *sc);
        struct perf_hello h;
        ULONG ird = 0, ord = 0, len = sizeof h;
        memset(&h, 0, sizeof h);
        st = ndk_tool_connector_data(incoming, &ird, &ord, &h, &len);
        bool ok = sc && st == STATUS_SUCCESS && len >= sizeof h && !memcmp(h.magic, PERF_MAGIC, sizeof PERF_MAGIC) &&
                  be16toh(h.version) == PERF_VERSION;
        if (ok) {
            sc->h = h;
            sc->h.op = be16toh(h.op);
            sc->h.flags = be32toh(h.flags);
            sc->h.session = be64toh(h.session);
            sc->h.conn_index = be32toh(h.conn_index);
            sc->h.conn_count = be32toh(h.conn_count);
            sc->h.depth = be32toh(h.depth);
            sc->h.inline_size = be32toh(h.inline_size);
            sc->h.max_size = be64toh(h.max_size);
            sc->h.client_buf = be64toh(h.client_buf);
            sc->h.client_token = be32toh(h.client_token);
            sc->h.client_buf_len = be32toh(h.client_buf_len);
            sc->h.slots = be32toh(h.slots);
            ok = sc->h.op >= OP_WRITE && sc->h.op <= OP_SEND && sc->h.max_size >= 1 &&
                 sc->h.max_size <= ad->info.MaxTransferLength && sc->h.depth >= 1 && sc->h.depth <= 4096 &&
                 sc->h.slots >= 1 && sc->h.slots <= 4096 && sc->h.max_size * sc->h.slots <= 4 * PERF_MEM_BUDGET &&
                 sc->h.conn_count >= 1 && sc->h.conn_count <= MAX_CONNS;
        }
        if (!ok || nconns >= sizeof conns / sizeof conns[0]) {
            ndk_tool_err("rejecting a connection request that is not a valid ndkperf request");
            incoming->Dispatch->NdkReject(incoming, NULL, 0);
            ndk_tool_close(&incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
            free(sc);
            continue;
        }
        sc->incoming = incoming;
        sc->ad = ad;
        if (!expected)
            expected = sc->h.conn_count;
        if (pthread_create(&sc->thread, NULL, srv_conn_main, sc) != 0) {
            ndk_tool_err("cannot start a thread");
            incoming->Dispatch->NdkReject(incoming, NULL, 0);
            ndk_tool_close(&incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
            free(sc);
            rc = 1;
            break;
        }
        conns[nconns++] = sc;
    }
    for (unsigned i = 0; i < nconns; i++) {
        pthread_join(conns[i]->thread, NULL);
        if (conns[i]->rc)
            rc = conns[i]->rc;
        free(conns[i]);
    }
    ndk_tool_server_stop(srv);
    return rc;
}

/* ================================================================================================ */
/* client                                                                                           */

struct phase_res {
    uint64_t  size;
    uint64_t  count;           /* operations completed */
    uint64_t  elapsed_ns;
    double    peak_Bps;
    uint64_t  srv_cpu_before, srv_cpu_after;
    uint64_t *lat;             /* latency samples (ns), --lat */
    size_t    nlat;
    bool      verify_ok;
};

struct cli_conn {
    struct perf_conn pc;
    unsigned         index;
    uint64_t         rbuf_addr;
    uint32_t         rtoken, rlen, slots, depth, credits0;
    uint64_t         credits_cum, data_sent, data_done, recv_data;
    uint32_t         last_recv_bytes;
    struct perf_ctl  ack;
    uint64_t         acks;
    uint64_t         srv_status;
    uint64_t         verify_fail;
    uint64_t         cur_size, cur_seed, lat_seq;
    struct phase_res *res;
    pthread_t        thread;
    /* the running phase, advanced by its handler on the CQ's owner */
    struct bw_state {
        uint64_t size, iters, posted, done0, t0, t_end, win_t, win_n;
        double   peak;
        bool     stop;
    } bw;
    struct lat_state {
        uint64_t  size, iters, i, t_start, t_end, t0, t, data0, recv0;
        bool      answered;         /* the current iteration's answer is in, t taken */
        uint64_t *samples;
        size_t    n, cap;
        size_t    dst_off, sig_off;
        ULONG     flags;
    } lat;
    uint64_t         progress;      /* atomic: operations done in the phase (progress line) */
    uint64_t         last_progress; /* connection thread only */
};

static struct {
    struct cli_conn  *conns;
    unsigned          nconns;
    uint64_t         *sizes;
    unsigned          nsizes;
    pthread_barrier_t barrier;
    volatile int      abort;
    uint64_t         *cpu_before, *cpu_after;       /* per phase, client process CPU */
    bool              progress;
    ndk_tool_adapter  ad;
    SOCKADDR_INET     dst, src;
} cl;

static void cli_abort(struct cli_conn *cc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cli_abort(struct cli_conn *cc, const char *fmt, ...)
{
    if (!cc->pc.error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cc->pc.error, sizeof cc->pc.error, fmt, ap);
        va_end(ap);
    }
    __atomic_store_n(&cl.abort, 1, __ATOMIC_RELEASE);
}

static bool cli_aborted(void) { return __atomic_load_n(&cl.abort, __ATOMIC_ACQUIRE) || ndk_tool_stopped(); }

/* The wait for completions ended without any. */
static void cli_wait_failed(struct cli_conn *cc, NTSTATUS st, int timeout_ms)
{
    if (st == STATUS_CONNECTION_DISCONNECTED)
        cli_abort(cc, "the server disconnected");
    else if (st == STATUS_IO_TIMEOUT)
        cli_abort(cc, "no completion within %d ms", timeout_ms);
    else
        cli_abort(cc, "waiting for completions: %s", ndk_tool_status(st));
}

/* One batch of completions. false on failure (recorded in the connection). Runs on the CQ's
 * owner: the connection's thread, or the notification callback (must not block). */
static bool cli_handle(struct cli_conn *cc, NDK_RESULT *r, ULONG n)
{
    struct perf_conn *pc = &cc->pc;
    NTSTATUS st;
    for (ULONG i = 0; i < n; i++) {
        int kind = TAG_KIND(r[i].RequestContext);
        uint64_t idx = TAG_IDX(r[i].RequestContext);
        if (r[i].Status != STATUS_SUCCESS) {
            cli_abort(cc, "%s completed with %s", kind_name(kind, opt.op), ndk_tool_status(r[i].Status));
            return false;
        }
        switch (kind) {
        case K_DATA:
            cc->data_done++;
            if (opt.op == OP_READ && opt.verify && !opt.lat) {
                uint64_t slot = idx % cc->slots, bad;
                if (!check_abs(perf_data(pc) + slot * cc->cur_size, slot * cc->cur_size, cc->cur_size, &bad)) {
                    perf_note(pc, "read %llu: byte %llu differs", (unsigned long long)idx, (unsigned long long)bad);
                    cc->verify_fail++;
                }
            }
            break;
        case K_CTL: pc->ctl_done++; break;
        case K_SIGNAL: break;
        case K_RECV: {
            uint32_t k = (uint32_t)idx;
            uint8_t *p = perf_rbuf(pc, k);
            ULONG bytes = r[i].BytesTransferred;
            if (is_ctl(p, bytes)) {
                struct perf_ctl m;
                memcpy(&m, p, sizeof m);
                uint32_t type = be32toh(m.type);
                if (type == CTL_CREDIT) {
                    uint64_t c = be64toh(m.a);
                    if (c > cc->credits_cum)
                        cc->credits_cum = c;
                } else if (type == CTL_ACK || type == CTL_RESULT) {
                    cc->ack = m;
                    cc->acks++;
                }
            } else {
                cc->recv_data++;
                cc->last_recv_bytes = bytes;
                if (opt.verify && opt.lat) {
                    uint64_t bad;
                    bool ok = true;
                    if (opt.op == OP_SEND)
                        ok = bytes == cc->cur_size && check_seed(p, bytes, cc->lat_seq, &bad);
                    else if (opt.op == OP_WRITE)    /* the sink the server wrote back into */
                        ok = check_seed(perf_data(pc) + (pc->data_len - 64) / 2, cc->cur_size, cc->lat_seq, &bad);
                    if (!ok)
                        cc->verify_fail++;
                }
            }
            if ((st = perf_post_recv(pc, k)) != STATUS_SUCCESS) {
                cli_abort(cc, "posting a receive failed: %s", ndk_tool_status(st));
                return false;
            }
            break;
        }
        default: break;
        }
    }
    return true;
}

/* Connection thread, blocks: waits for and handles one batch. */
static bool cli_pump(struct cli_conn *cc, int timeout_ms)
{
    NDK_RESULT r[64];
    NTSTATUS st;
    ULONG n = ndk_tool_cq_wait(cc->pc.conn.cq, r, 64, timeout_ms, &st);
    if (!n) {
        cli_wait_failed(cc, st, timeout_ms);
        return false;
    }
    return cli_handle(cc, r, n);
}

#define CLI_WAIT_MS 30000

static bool cli_ctl(struct cli_conn *cc, uint32_t type, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    while (!perf_ctl_room(&cc->pc))
        if (!cli_pump(cc, CLI_WAIT_MS))
            return false;
    uint64_t acks = cc->acks;
    NTSTATUS st = perf_send_ctl(&cc->pc, type, 0, a, b, c, d);
    if (st != STATUS_SUCCESS) {
        cli_abort(cc, "sending a control message failed: %s", ndk_tool_status(st));
        return false;
    }
    /* The server may verify a whole phase's payload before it answers. */
    while (cc->acks == acks)
        if (!cli_pump(cc, 4 * CLI_WAIT_MS))
            return false;
    cc->srv_status = be32toh(cc->ack.status);
    return true;
}

static NTSTATUS cli_post_data(struct cli_conn *cc, uint64_t j, uint64_t size)
{
    struct perf_conn *pc = &cc->pc;
    NDK_QP *qp = pc->conn.qp;
    uint64_t slot = j % cc->slots;
    size_t off = pc->off_data + (size_t)(slot * size);
    NDK_SGE sge = ndk_tool_sge(&pc->mem, off, (ULONG)size);
    ULONG flags = size <= opt.inline_size ? NDK_OP_FLAG_INLINE : 0;
    switch (opt.op) {
    case OP_WRITE:
        if (opt.verify)
            fill_seed(pc->mem.buf + off, size, cc->cur_seed + j);
        return qp->Dispatch->NdkWrite(qp, TAG(K_DATA, j), &sge, 1, cc->rbuf_addr + slot * size, cc->rtoken, flags);
    case OP_READ:
        if (opt.verify)
            memset(pc->mem.buf + off, 0, size);
        return qp->Dispatch->NdkRead(qp, TAG(K_DATA, j), &sge, 1, cc->rbuf_addr + slot * size, cc->rtoken, 0);
    case OP_SEND:
        if (opt.verify)
            fill_seed(pc->mem.buf + off, size, cc->data_sent);
        return qp->Dispatch->NdkSend(qp, TAG(K_DATA, j), &sge, 1, flags);
    }
    return STATUS_INVALID_PARAMETER;
}

static void progress_line(const char *what, uint64_t size, uint64_t done, uint64_t total, double mbps)
{
    if (total)
        fprintf(stderr, "\r  %s %llu B: %llu/%llu iterations, %.1f MB/s   ", what, (unsigned long long)size,
                (unsigned long long)done, (unsigned long long)total, mbps);
    else
        fprintf(stderr, "\r  %s %llu B: %llu iterations, %.1f MB/s   ", what, (unsigned long long)size,
                (unsigned long long)done, mbps);
}

/* ---- bandwidth phase: keep depth requests in flight ---- */

/* Posts up to the depth (and, for Send, the credits) and decides whether the phase stops;
 * false when it is over (everything posted has completed) or posting failed. On the CQ's owner. */
static bool cli_bw_post(struct cli_conn *cc)
{
    struct bw_state *b = &cc->bw;
    uint64_t completed = cc->data_done - b->done0;
    while (!b->stop && b->posted - completed < cc->depth && (!b->iters || b->posted < b->iters)) {
        if (opt.op == OP_SEND && cc->credits0 + cc->credits_cum - cc->data_sent == 0)
            break;
        NTSTATUS st = cli_post_data(cc, b->posted, b->size);
        if (st != STATUS_SUCCESS) {
            cli_abort(cc, "posting %s #%llu failed: %s", kind_name(K_DATA, opt.op), (unsigned long long)b->posted,
                      ndk_tool_status(st));
            return false;
        }
        b->posted++;
        if (opt.op == OP_SEND)
            cc->data_sent++;
    }
    uint64_t now = ndk_tool_now_ns();
    if ((b->iters && b->posted == b->iters) || (!b->iters && now >= b->t_end) || cli_aborted())
        b->stop = true;
    return !(b->stop && completed == b->posted);
}

/* ndk_tool_cq_handler (callback or connection thread). */
static bool cli_bw_handler(void *ctx, NDK_RESULT *r, ULONG n)
{
    struct cli_conn *cc = ctx;
    struct bw_state *b = &cc->bw;
    if (!cli_handle(cc, r, n))
        return false;
    uint64_t now = ndk_tool_now_ns(), completed = cc->data_done - b->done0;
    if (now - b->win_t >= 50000000u) {        /* peak: the best 50 ms window */
        double rate = (double)(completed - b->win_n) * (double)b->size / ((double)(now - b->win_t) / 1e9);
        if (rate > b->peak)
            b->peak = rate;
        b->win_t = now;
        b->win_n = completed;
    }
    __atomic_store_n(&cc->progress, completed, __ATOMIC_RELAXED);
    return cli_bw_post(cc);
}

/* Whether connection cc prints its progress line now (the first connection, on a terminal,
 * every half second); *now is the time read. Connection thread. */
static bool cli_progress_due(struct cli_conn *cc, uint64_t *now)
{
    if (!cl.progress || cc->index != 0)
        return false;
    *now = ndk_tool_now_ns();
    return *now - cc->last_progress > 500000000u;
}

/* ndk_tool_cq_tick (connection thread): reads only the atomic progress count. */
static void cli_bw_tick(void *ctx)
{
    struct cli_conn *cc = ctx;
    uint64_t now;
    if (!cli_progress_due(cc, &now))
        return;
    uint64_t completed = __atomic_load_n(&cc->progress, __ATOMIC_RELAXED);
    progress_line(op_name[opt.op], cc->bw.size, completed, cc->bw.iters,
                  (double)completed * (double)cc->bw.size / ((double)(now - cc->bw.t0) / 1e9) / 1e6);
    cc->last_progress = now;
}

/* Connection thread, blocks until the phase is over. */
static void cli_bw_phase(struct cli_conn *cc, uint64_t size, struct phase_res *res)
{
    struct bw_state *b = &cc->bw;
    memset(b, 0, sizeof *b);
    b->size = size;
    b->iters = opt.duration > 0 ? 0 : opt.iters;
    b->done0 = cc->data_done;
    b->t0 = ndk_tool_now_ns();
    b->t_end = b->t0 + (uint64_t)(opt.duration * 1e9);
    b->win_t = b->t0;
    cc->last_progress = b->t0;
    __atomic_store_n(&cc->progress, 0, __ATOMIC_RELAXED);

    cc->cur_size = size;
    if (cli_bw_post(cc)) {
        NTSTATUS st = ndk_tool_cq_run(cc->pc.conn.cq, true, CLI_WAIT_MS, cli_bw_handler, cli_bw_tick, cc);
        if (st != STATUS_SUCCESS)
            cli_wait_failed(cc, st, CLI_WAIT_MS);
    }
    res->elapsed_ns = ndk_tool_now_ns() - b->t0;
    res->count = cc->data_done - b->done0;
    double avg = res->elapsed_ns ? (double)res->count * (double)size / ((double)res->elapsed_ns / 1e9) : 0;
    res->peak_Bps = b->peak > avg ? b->peak : avg;
}

/* ---- latency phase: one message (or read) at a time ---- */

/* Starts the next iteration; false when the phase is over or posting failed. On the CQ's owner. */
static bool cli_lat_next(struct cli_conn *cc)
{
    struct perf_conn *pc = &cc->pc;
    struct lat_state *l = &cc->lat;
    NDK_QP *qp = pc->conn.qp;
    uint64_t size = l->size;
    NTSTATUS st;

    if ((l->iters && l->i >= l->iters) || cli_aborted())
        return false;
    if (!l->iters && ndk_tool_now_ns() >= l->t_end)
        return false;
    cc->lat_seq++;
    if (opt.verify && opt.op != OP_READ)
        fill_seed(perf_data(pc), size, cc->lat_seq);
    l->data0 = cc->data_done;
    l->recv0 = cc->recv_data;
    l->answered = false;
    l->t0 = ndk_tool_now_ns();
    if (opt.op == OP_SEND) {
        NDK_SGE sge = ndk_tool_sge(&pc->mem, pc->off_data, (ULONG)size);
        st = qp->Dispatch->NdkSend(qp, TAG(K_DATA, l->i), &sge, 1, l->flags);
    } else if (opt.op == OP_WRITE) {
        NDK_SGE sge = ndk_tool_sge(&pc->mem, pc->off_data, (ULONG)size);
        st = qp->Dispatch->NdkWrite(qp, TAG(K_DATA, l->i), &sge, 1, cc->rbuf_addr, cc->rtoken, l->flags);
        if (st == STATUS_SUCCESS) {
            struct perf_signal sig;
            memset(&sig, 0, sizeof sig);
            sig.marker = 0x80;
            sig.size = htobe32((uint32_t)size);
            sig.seq = htobe64(cc->lat_seq);
            memcpy(pc->mem.buf + pc->off_data + l->sig_off, &sig, sizeof sig);
            NDK_SGE s2 = ndk_tool_sge(&pc->mem, pc->off_data + l->sig_off, sizeof sig);
            st = qp->Dispatch->NdkSend(qp, TAG(K_SIGNAL, l->i), &s2, 1, NDK_OP_FLAG_INLINE);
            if (st == STATUS_INVALID_PARAMETER || st == STATUS_NOT_SUPPORTED)
                st = qp->Dispatch->NdkSend(qp, TAG(K_SIGNAL, l->i), &s2, 1, 0);
        }
    } else {
        NDK_SGE sge = ndk_tool_sge(&pc->mem, pc->off_data + l->dst_off, (ULONG)size);
        if (opt.verify)
            memset(pc->mem.buf + pc->off_data + l->dst_off, 0, size);
        st = qp->Dispatch->NdkRead(qp, TAG(K_DATA, l->i), &sge, 1, cc->rbuf_addr, cc->rtoken, 0);
    }
    if (st != STATUS_SUCCESS) {
        cli_abort(cc, "posting %s failed: %s", kind_name(K_DATA, opt.op), ndk_tool_status(st));
        return false;
    }
    l->i++;
    return true;
}

/* ndk_tool_cq_handler (callback or connection thread): takes the sample once the answer (Read:
 * the read's completion; Send/Write: the peer's echo) is in and our own request has completed
 * (its buffer is reused), then starts the next iteration. */
static bool cli_lat_handler(void *ctx, NDK_RESULT *r, ULONG n)
{
    struct cli_conn *cc = ctx;
    struct perf_conn *pc = &cc->pc;
    struct lat_state *l = &cc->lat;

    if (!cli_handle(cc, r, n))
        return false;
    if (!l->answered) {
        if (opt.op == OP_READ ? cc->data_done == l->data0 : cc->recv_data == l->recv0)
            return true;
        l->answered = true;
        l->t = ndk_tool_now_ns() - l->t0;
        if (opt.op == OP_READ && opt.verify) {
            uint64_t bad;
            if (!check_abs(pc->mem.buf + pc->off_data + l->dst_off, 0, l->size, &bad))
                cc->verify_fail++;
        }
    }
    if (cc->data_done == l->data0)
        return true;
    if (l->n == l->cap) {
        uint64_t *bigger = realloc(l->samples, l->cap * 2 * sizeof *l->samples);
        if (!bigger) {
            cli_abort(cc, "out of memory");
            return false;
        }
        l->samples = bigger;
        l->cap *= 2;
    }
    l->samples[l->n++] = opt.op == OP_READ ? l->t : l->t / 2;
    __atomic_store_n(&cc->progress, l->n, __ATOMIC_RELAXED);
    return cli_lat_next(cc);
}

/* ndk_tool_cq_tick (connection thread): reads only the atomic progress count. */
static void cli_lat_tick(void *ctx)
{
    struct cli_conn *cc = ctx;
    uint64_t now;
    if (!cli_progress_due(cc, &now))
        return;
    fprintf(stderr, "\r  %s --lat %llu B: %llu iterations   ", op_name[opt.op], (unsigned long long)cc->lat.size,
            (unsigned long long)__atomic_load_n(&cc->progress, __ATOMIC_RELAXED));
    cc->last_progress = now;
}

/* Connection thread, blocks until the phase is over. */
static void cli_lat_phase(struct cli_conn *cc, uint64_t size, struct phase_res *res)
{
    struct perf_conn *pc = &cc->pc;
    struct lat_state *l = &cc->lat;
    memset(l, 0, sizeof *l);
    l->size = size;
    l->iters = opt.duration > 0 ? 0 : opt.iters;
    l->t_start = ndk_tool_now_ns();
    l->t_end = l->t_start + (uint64_t)(opt.duration * 1e9);
    l->cap = l->iters ? l->iters : 65536;
    l->samples = malloc(l->cap * sizeof *l->samples);
    /* write --lat layout: [source][sink the server writes back into][signal]; read: sink at 0 */
    l->dst_off = opt.op == OP_WRITE ? (size_t)((pc->data_len - 64) / 2) : 0;
    l->sig_off = opt.op == OP_WRITE ? (size_t)(pc->data_len - 64) : 0;
    l->flags = size <= opt.inline_size ? NDK_OP_FLAG_INLINE : 0;
    cc->last_progress = l->t_start;
    __atomic_store_n(&cc->progress, 0, __ATOMIC_RELAXED);

    if (!l->samples) {
        cli_abort(cc, "out of memory");
        return;
    }
    cc->cur_size = size;
    if (cli_lat_next(cc)) {
        NTSTATUS st = ndk_tool_cq_run(pc->conn.cq, true, CLI_WAIT_MS, cli_lat_handler, cli_lat_tick, cc);
        if (st != STATUS_SUCCESS)
            cli_wait_failed(cc, st, CLI_WAIT_MS);
    }
    res->elapsed_ns = ndk_tool_now_ns() - l->t_start;
    res->count = l->n;
    res->lat = l->samples;
    res->nlat = l->n;
    l->samples = NULL;
}

static void *cli_conn_main(void *arg)
{
    struct cli_conn *cc = arg;
    bool ok = true;

    /* Server CPU baseline. */
    if (!cli_ctl(cc, CTL_START, 0, 0, 0, 0))
        ok = false;
    uint64_t srv_prev = ok ? be64toh(cc->ack.a) : 0;
    for (unsigned p = 0; p < cl.nsizes; p++) {
        struct phase_res *res = &cc->res[p];
        res->size = cl.sizes[p];
        pthread_barrier_wait(&cl.barrier);
        if (cc->index == 0)
            cl.cpu_before[p] = ndk_tool_cpu_us();
        pthread_barrier_wait(&cl.barrier);
        ok = ok && !cli_aborted();
        cc->cur_seed = (uint64_t)(p + 1) << 40;
        if (ok) {
            if (opt.lat)
                cli_lat_phase(cc, res->size, res);
            else
                cli_bw_phase(cc, res->size, res);
            ok = !cc->pc.error[0];
        }
        pthread_barrier_wait(&cl.barrier);
        if (cc->index == 0) {
            cl.cpu_after[p] = ndk_tool_cpu_us();
            if (cl.progress)
                fprintf(stderr, "\r\033[K");
        }
        res->srv_cpu_before = srv_prev;
        if (ok && cli_ctl(cc, CTL_PHASE_END, res->size, res->count, cc->slots, cc->cur_seed)) {
            res->srv_cpu_after = be64toh(cc->ack.a);
            srv_prev = res->srv_cpu_after;
            res->verify_ok = cc->verify_fail == 0 && cc->srv_status == 0;
        } else {
            ok = false;
        }
        pthread_barrier_wait(&cl.barrier);
    }
    if (ok && !cli_ctl(cc, CTL_DONE, 0, 0, 0, 0))
        ok = false;
    if (ok && cc->srv_status)
        cc->verify_fail++;
    return NULL;
}

/* ---- reporting ---- */

struct agg {
    uint64_t size, count, bytes, elapsed_ns, cli_cpu_us, srv_cpu_us;
    double   avg_Bps, peak_Bps;
    bool     verified;
    uint64_t *lat;
    size_t   nlat;
};

static void aggregate(unsigned p, struct agg *a)
{
    memset(a, 0, sizeof *a);
    a->size = cl.sizes[p];
    a->verified = opt.verify;
    uint64_t srv_min = UINT64_MAX, srv_max = 0;
    for (unsigned c = 0; c < cl.nconns; c++) {
        struct phase_res *r = &cl.conns[c].res[p];
        a->count += r->count;
        if (r->elapsed_ns > a->elapsed_ns)
            a->elapsed_ns = r->elapsed_ns;
        a->peak_Bps += r->peak_Bps;
        if (r->srv_cpu_before < srv_min)
            srv_min = r->srv_cpu_before;
        if (r->srv_cpu_after > srv_max)
            srv_max = r->srv_cpu_after;
        if (!r->verify_ok)
            a->verified = false;
        a->nlat += r->nlat;
    }
    a->bytes = a->count * a->size;
    a->avg_Bps = a->elapsed_ns ? (double)a->bytes / ((double)a->elapsed_ns / 1e9) : 0;
    if (a->peak_Bps < a->avg_Bps)
        a->peak_Bps = a->avg_Bps;
    a->cli_cpu_us = cl.cpu_after[p] - cl.cpu_before[p];
    a->srv_cpu_us = srv_max > srv_min ? srv_max - srv_min : 0;
    if (opt.lat && a->nlat) {
        a->lat = malloc(a->nlat * sizeof *a->lat);
        size_t k = 0;
        for (unsigned c = 0; a->lat && c < cl.nconns; c++) {
            struct phase_res *r = &cl.conns[c].res[p];
            memcpy(a->lat + k, r->lat, r->nlat * sizeof *r->lat);
            k += r->nlat;
        }
        if (a->lat)
            ndk_tool_sort_u64(a->lat, a->nlat);
        else
            a->nlat = 0;
    }
}

static double ns_per_byte(uint64_t cpu_us, uint64_t bytes) { return bytes ? (double)cpu_us * 1000.0 / (double)bytes : 0; }

static void lat_stats(const struct agg *a, double *min, double *max, double *typ, double *avg, double *sd, double *p99,
                      double *p999)
{
    double sum = 0, sq = 0;
    for (size_t i = 0; i < a->nlat; i++) {
        sum += (double)a->lat[i];
        sq += (double)a->lat[i] * (double)a->lat[i];
    }
    double n = (double)(a->nlat ? a->nlat : 1);
    *avg = sum / n / 1e3;
    double var = sq / n - (sum / n) * (sum / n);
    *sd = sqrt(var > 0 ? var : 0) / 1e3;
    *min = a->nlat ? (double)a->lat[0] / 1e3 : 0;
    *max = a->nlat ? (double)a->lat[a->nlat - 1] / 1e3 : 0;
    *typ = (double)ndk_tool_percentile(a->lat, a->nlat, 0.5) / 1e3;
    *p99 = (double)ndk_tool_percentile(a->lat, a->nlat, 0.99) / 1e3;
    *p999 = (double)ndk_tool_percentile(a->lat, a->nlat, 0.999) / 1e3;
}

static const char *dashes = "---------------------------------------------------------------------------------------------------------";

static void print_header(void)
{
    char l[NDK_TOOL_ADDRSTRLEN], r[NDK_TOOL_ADDRSTRLEN];
    out("%s\n", dashes);
    out("                    %s %s Test\n", op_title[opt.op], opt.lat ? "Latency" : "BW");
    out(" Provider: %s   Adapter: %s (id %u)   Connections: %u   Depth: %u   Inline: %u\n", cl.ad.provider,
        cl.ad.ifname, cl.ad.id, cl.nconns, opt.lat ? 1 : cl.conns[0].depth, opt.inline_size);
    out(" Local: %s   Remote: %s   MPA CRC: %s   Completions: %s   Verify: %s\n",
        ndk_tool_addr_str(&cl.conns[0].pc.conn.local, true, l, sizeof l),
        ndk_tool_addr_str(&cl.conns[0].pc.conn.peer, true, r, sizeof r), opt.crc ? "requested" : "not requested",
        opt.poll ? "busy poll" : "notifications", opt.verify ? "on" : "off");
    out("%s\n", dashes);
    if (opt.lat)
        out(" %-10s %-12s %-12s %-12s %-15s %-12s %-13s %-10s %-10s %s\n", "#bytes", "#iterations", "t_min[usec]",
            "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99%[usec]", "99.9%[usec]",
            "CPU[ns/B] client/server");
    else
        out(" %-10s %-12s %-16s %-19s %-14s %-19s %s\n", "#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]",
            "MsgRate[Mpps]", "BW average[Gb/sec]", "CPU[ns/B] client/server");
}

static void print_row(const struct agg *a)
{
    double cc = ns_per_byte(a->cli_cpu_us, a->bytes), sc = ns_per_byte(a->srv_cpu_us, a->bytes);
    if (opt.lat) {
        double mn, mx, typ, avg, sd, p99, p999;
        lat_stats(a, &mn, &mx, &typ, &avg, &sd, &p99, &p999);
        out(" %-10llu %-12llu %-12.2f %-12.2f %-15.2f %-12.2f %-13.2f %-10.2f %-10.2f %.2f/%.2f\n",
            (unsigned long long)a->size, (unsigned long long)a->count, mn, mx, typ, avg, sd, p99, p999, cc, sc);
    } else {
        double secs = (double)a->elapsed_ns / 1e9;
        out(" %-10llu %-12llu %-16.2f %-19.2f %-14.6f %-19.3f %.3f/%.3f\n", (unsigned long long)a->size,
            (unsigned long long)a->count, a->peak_Bps / 1e6, a->avg_Bps / 1e6,
            secs > 0 ? (double)a->count / secs / 1e6 : 0, a->avg_Bps * 8 / 1e9, cc, sc);
    }
}

static void print_json(struct agg *rows)
{
    char l[NDK_TOOL_ADDRSTRLEN], r[NDK_TOOL_ADDRSTRLEN];
    ndk_tool_json j;
    ndk_tool_json_init(&j, stdout);
    ndk_tool_json_open(&j, NULL, '{');
    ndk_tool_json_str(&j, "tool", "ndkperf");
    ndk_tool_json_u64(&j, "version", PERF_VERSION);
    ndk_tool_json_str(&j, "test", op_name[opt.op]);
    ndk_tool_json_str(&j, "mode", opt.lat ? "latency" : "bandwidth");
    ndk_tool_json_str(&j, "provider", cl.ad.provider);
    ndk_tool_json_str(&j, "adapter", cl.ad.ifname);
    ndk_tool_json_str(&j, "local", ndk_tool_addr_str(&cl.conns[0].pc.conn.local, true, l, sizeof l));
    ndk_tool_json_str(&j, "remote", ndk_tool_addr_str(&cl.conns[0].pc.conn.peer, true, r, sizeof r));
    ndk_tool_json_u64(&j, "connections", cl.nconns);
    ndk_tool_json_u64(&j, "depth", opt.lat ? 1 : cl.conns[0].depth);
    ndk_tool_json_u64(&j, "inline", opt.inline_size);
    ndk_tool_json_bool(&j, "crc", opt.crc);
    ndk_tool_json_str(&j, "completions", opt.poll ? "poll" : "notify");
    ndk_tool_json_bool(&j, "verify", opt.verify);
    if (opt.duration > 0)
        ndk_tool_json_dbl(&j, "duration_s", opt.duration);
    else
        ndk_tool_json_u64(&j, "iterations_per_size", opt.iters);
    ndk_tool_json_open(&j, "results", '[');
    for (unsigned p = 0; p < cl.nsizes; p++) {
        struct agg *a = &rows[p];
        ndk_tool_json_open(&j, NULL, '{');
        ndk_tool_json_u64(&j, "bytes", a->size);
        ndk_tool_json_u64(&j, "iterations", a->count);
        ndk_tool_json_dbl(&j, "seconds", (double)a->elapsed_ns / 1e9);
        if (opt.lat) {
            double mn, mx, typ, avg, sd, p99, p999;
            lat_stats(a, &mn, &mx, &typ, &avg, &sd, &p99, &p999);
            ndk_tool_json_dbl(&j, "t_min_us", mn);
            ndk_tool_json_dbl(&j, "t_max_us", mx);
            ndk_tool_json_dbl(&j, "t_typical_us", typ);
            ndk_tool_json_dbl(&j, "t_avg_us", avg);
            ndk_tool_json_dbl(&j, "t_stdev_us", sd);
            ndk_tool_json_dbl(&j, "t_p99_us", p99);
            ndk_tool_json_dbl(&j, "t_p999_us", p999);
        } else {
            double secs = (double)a->elapsed_ns / 1e9;
            ndk_tool_json_dbl(&j, "bw_peak_MBps", a->peak_Bps / 1e6);
            ndk_tool_json_dbl(&j, "bw_avg_MBps", a->avg_Bps / 1e6);
            ndk_tool_json_dbl(&j, "bw_avg_Gbps", a->avg_Bps * 8 / 1e9);
            ndk_tool_json_dbl(&j, "msg_rate_Mpps", secs > 0 ? (double)a->count / secs / 1e6 : 0);
        }
        ndk_tool_json_u64(&j, "client_cpu_us", a->cli_cpu_us);
        ndk_tool_json_u64(&j, "server_cpu_us", a->srv_cpu_us);
        ndk_tool_json_dbl(&j, "client_cpu_ns_per_byte", ns_per_byte(a->cli_cpu_us, a->bytes));
        ndk_tool_json_dbl(&j, "server_cpu_ns_per_byte", ns_per_byte(a->srv_cpu_us, a->bytes));
        if (opt.verify)
            ndk_tool_json_bool(&j, "verified", a->verified);
        ndk_tool_json_close(&j, '}');
    }
    ndk_tool_json_close(&j, ']');
    ndk_tool_json_close(&j, '}');
    fflush(stdout);
}

static int run_client(ndk_rt *rt)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDRSTRLEN];
    SOCKADDR_INET local;
    ndk_rt_adapter_id id;
    NTSTATUS st;
    int rc = 0;

    if (ndk_tool_parse_addr(opt.addr, PERF_DEFAULT_PORT, &cl.dst, why, sizeof why) != 0 ||
        cl.dst.si_family == AF_UNSPEC) {
        ndk_tool_err("bad server address %s", why[0] ? why : "(none)");
        return 2;
    }
    if (opt.local && ndk_tool_parse_ip(opt.local, &local) != 0) {
        ndk_tool_err("bad local address '%s'", opt.local);
        return 2;
    }
    ndk_tool_addr_str(&cl.dst, true, dst_s, sizeof dst_s);
    st = ndk_tool_pick_adapter(rt, opt.local ? &local : NULL, &cl.dst, opt.provider, opt.client_if, &id, &cl.src, why,
                               sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, why);
        return 1;
    }
    st = ndk_tool_adapter_open(rt, id, &cl.ad);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("opening the adapter failed: %s", ndk_tool_status(st));
        return 1;
    }
    const NDK_ADAPTER_INFO *info = &cl.ad.info;

    /* Sizes of the run. */
    uint64_t sweep_sizes[64];
    if (opt.sweep) {
        cl.nsizes = 0;
        for (uint64_t s = 1; s <= SWEEP_MAX && s <= info->MaxTransferLength; s *= 2)
            sweep_sizes[cl.nsizes++] = s;
        cl.sizes = sweep_sizes;
    } else {
        cl.sizes = &opt.size;
        cl.nsizes = 1;
    }
    uint64_t max_size = cl.sizes[cl.nsizes - 1];
    if (max_size > info->MaxTransferLength) {
        ndk_tool_err("message size %llu exceeds the adapter's MaxTransferLength %u", (unsigned long long)max_size,
                     info->MaxTransferLength);
        ndk_tool_adapter_close(&cl.ad);
        return 2;
    }
    if (opt.inline_size > info->MaxInlineDataSize) {
        ndk_tool_err("--inline %u exceeds the adapter's MaxInlineDataSize %u", opt.inline_size, info->MaxInlineDataSize);
        ndk_tool_adapter_close(&cl.ad);
        return 2;
    }
    /* Depth and slots: messages in flight, bounded by memory (and by the read limit). */
    uint32_t depth = opt.lat ? 1 : opt.depth, slots = 1;
    uint64_t per = max_size > CTL_SIZE ? max_size : CTL_SIZE;
    uint64_t fit = PERF_MEM_BUDGET / per ? PERF_MEM_BUDGET / per : 1;
    if (!opt.lat && opt.op == OP_SEND && depth > fit)
        depth = (uint32_t)fit;
    if (!opt.lat && opt.verify) {
        if (depth > fit)
            depth = (uint32_t)fit;
        slots = depth;
    }
    if (!opt.lat && opt.op == OP_READ && depth > info->MaxOutboundReadLimit)
        depth = info->MaxOutboundReadLimit;
    if (depth > info->MaxInitiatorQueueDepth - CTL_RING - 4)
        depth = info->MaxInitiatorQueueDepth - CTL_RING - 4;
    if (depth < 1)
        depth = 1;
    if (opt.verify && !opt.lat)
        slots = depth;

    uint64_t session = ((uint64_t)getpid() << 32) ^ ndk_tool_now_ns();
    cl.nconns = opt.conns;
    cl.conns = calloc(cl.nconns, sizeof *cl.conns);
    cl.cpu_before = calloc(cl.nsizes, sizeof *cl.cpu_before);
    cl.cpu_after = calloc(cl.nsizes, sizeof *cl.cpu_after);
    if (!cl.conns || !cl.cpu_before || !cl.cpu_after) {
        ndk_tool_err("out of memory");
        exit(1);
    }
    unsigned connected = 0;
    for (unsigned c = 0; c < cl.nconns; c++) {
        struct cli_conn *cc = &cl.conns[c];
        struct perf_conn *pc = &cc->pc;
        cc->index = c;
        cc->depth = depth;
        cc->slots = slots;
        cc->res = calloc(cl.nsizes, sizeof *cc->res);
        snprintf(pc->where, sizeof pc->where, "%s", dst_s);
        uint32_t rbuf = (opt.op == OP_SEND && opt.lat) ? (uint32_t)per : CTL_SIZE;
        uint64_t data_len = opt.lat ? max_size : (uint64_t)slots * max_size;
        if (opt.lat && opt.op == OP_WRITE)
            data_len = 2 * ((max_size + 63) & ~63ull) + 64;
        st = cc->res ? ndk_tool_conn_init(&pc->conn, &cl.ad, CLIENT_RECVS, depth + CTL_RING + 4, 1, 1,
                                          opt.inline_size, opt.poll)
                     : STATUS_INSUFFICIENT_RESOURCES;
        if (st == STATUS_SUCCESS)
            st = perf_mem_setup(pc, CLIENT_RECVS, rbuf, data_len);
        for (uint32_t k = 0; st == STATUS_SUCCESS && k < CLIENT_RECVS; k++)
            st = perf_post_recv(pc, k);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("setting up connection %u failed: %s", c + 1, ndk_tool_status(st));
            rc = 1;
            break;
        }
        struct perf_hello h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, PERF_MAGIC, sizeof PERF_MAGIC);
        h.version = htobe16(PERF_VERSION);
        h.op = htobe16((uint16_t)opt.op);
        h.flags = htobe32((opt.lat ? HELLO_LAT : 0) | (opt.verify ? HELLO_VERIFY : 0));
        h.session = htobe64(session);
        h.conn_index = htobe32(c);
        h.conn_count = htobe32(cl.nconns);
        h.depth = htobe32(depth);
        h.inline_size = htobe32(opt.inline_size);
        h.max_size = htobe64(max_size);
        size_t dst_off = opt.lat && opt.op == OP_WRITE ? (size_t)((pc->data_len - 64) / 2) : 0;
        h.client_buf = htobe64((uint64_t)(uintptr_t)(perf_data(pc) + dst_off));
        h.client_token = htobe32(pc->mem.rtoken);
        h.client_buf_len = htobe32((uint32_t)max_size);
        h.slots = htobe32(slots);
        ULONG ird = info->MaxInboundReadLimit, ord = info->MaxOutboundReadLimit;
        st = ndk_tool_conn_connect(&pc->conn, &cl.src, &cl.dst, ird, ord, &h, sizeof h, NDK_TOOL_CONNECT_TIMEOUT_MS);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("connect to %s failed: %s", dst_s, ndk_tool_status(st));
            rc = 1;
            break;
        }
        connected++;
        struct perf_accept acc;
        if (pc->conn.peer_data_len < sizeof acc || memcmp(pc->conn.peer_data, PERF_MAGIC, sizeof PERF_MAGIC)) {
            ndk_tool_err("%s accepted but is not an ndkperf server", dst_s);
            rc = 1;
            break;
        }
        memcpy(&acc, pc->conn.peer_data, sizeof acc);
        cc->rbuf_addr = be64toh(acc.buf);
        cc->rtoken = be32toh(acc.token);
        cc->rlen = be32toh(acc.buf_len);
        cc->credits0 = be32toh(acc.credits);
        if (opt.op == OP_READ && cc->depth > pc->conn.ord && pc->conn.ord)
            cc->depth = pc->conn.ord;
    }
    if (rc == 0) {
        cl.progress = isatty(2) && !opt.quiet;
        if (!opt.json || perf_log)
            print_header();
        fflush(stdout);
        pthread_barrier_init(&cl.barrier, NULL, cl.nconns);
        for (unsigned c = 0; c < cl.nconns; c++)
            if (pthread_create(&cl.conns[c].thread, NULL, cli_conn_main, &cl.conns[c]) != 0) {
                ndk_tool_err("cannot start a thread");
                exit(1);
            }
        for (unsigned c = 0; c < cl.nconns; c++)
            pthread_join(cl.conns[c].thread, NULL);
        pthread_barrier_destroy(&cl.barrier);

        struct agg *rows = calloc(cl.nsizes, sizeof *rows);
        for (unsigned c = 0; c < cl.nconns; c++)
            if (cl.conns[c].pc.note[0])
                ndk_tool_err("connection %u to %s: %s", c + 1, dst_s, cl.conns[c].pc.note);
        for (unsigned c = 0; c < cl.nconns; c++)
            if (cl.conns[c].pc.error[0]) {
                ndk_tool_err("connection %u to %s: %s", c + 1, dst_s, cl.conns[c].pc.error);
                rc = 1;
            }
        if (ndk_tool_stopped() && rc == 0) {
            ndk_tool_err("interrupted");
            rc = 1;
        }
        bool verified = true;
        for (unsigned c = 0; c < cl.nconns; c++)
            if (cl.conns[c].verify_fail)
                verified = false;
        if (rc == 0 && rows) {
            for (unsigned p = 0; p < cl.nsizes; p++) {
                aggregate(p, &rows[p]);
                if (!opt.json || perf_log)
                    print_row(&rows[p]);
                if (!rows[p].verified)
                    verified = false;
            }
            if (!opt.json || perf_log)
                out("%s\n", dashes);
            if (opt.json)
                print_json(rows);
        }
        if (opt.verify && !verified && rc == 0) {
            ndk_tool_err("payload verification failed");
            rc = 1;
        }
        for (unsigned p = 0; rows && p < cl.nsizes; p++)
            free(rows[p].lat);
        free(rows);
        if (rc == 0 && opt.ndkperfcmd) {
            out("ndkperf: %s test completes\n", opt.testtype);
            if (opt.json && !perf_log)
                fprintf(stderr, "ndkperf: %s test completes\n", opt.testtype);
        }
    }
    (void)connected;
    for (unsigned c = 0; c < cl.nconns; c++) {
        perf_conn_free(&cl.conns[c].pc);
        for (unsigned p = 0; cl.conns[c].res && p < cl.nsizes; p++)
            free(cl.conns[c].res[p].lat);
        free(cl.conns[c].res);
    }
    free(cl.conns);
    free(cl.cpu_before);
    free(cl.cpu_after);
    ndk_tool_adapter_close(&cl.ad);
    fflush(stdout);
    return rc;
}

/* ================================================================================================ */
/* command line                                                                                     */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ndkperf -s [ADDR][:PORT] [--once] [--poll] [--provider NAME]\n"
            "       ndkperf -c ADDR[:PORT] -t write|read|send [--lat] [-z SIZE | --sweep] [-n ITERS | -D SECONDS]\n"
            "               [-q CONNECTIONS] [-d DEPTH] [--inline N] [--crc] [--poll] [--json] [--verify]\n"
            "               [-I LOCAL] [--provider NAME]\n"
            "       ndkperf -S|-C -ServerAddr IP:PORT [-ServerIf N] [-ClientAddr IP] [-ClientIf N]\n"
            "               -TestType rping|rperf [-W SECONDS] [-ts SIZE] [-LogFilename FILE [-A]] [-V]\n"
            "RDMA Write/Read/Send bandwidth or latency through an NDK adapter (default port %u).\n"
            "  -s [ADDR][:PORT]  serve (IPv4 and IPv6, any address by default; IPv6 as [ADDR]:PORT)\n"
            "  -c ADDR[:PORT]    run a test against a server\n"
            "  -t OP             write (default), read or send\n"
            "  --lat             latency (ping-pong; read: one read at a time) instead of bandwidth\n"
            "  -z SIZE           message size (default 65536; k/m suffixes)\n"
            "  --sweep, -a       sizes 1 B .. 8 MiB in powers of two\n"
            "  -n ITERS          iterations per size (default 5000 for bandwidth, 1000 for latency)\n"
            "  -D SECONDS        run each size for a time instead\n"
            "  -q N              N connections in parallel (default 1)\n"
            "  -d DEPTH          requests in flight per connection (default 128)\n"
            "  --inline N        QP inline size; messages up to N bytes are posted inline\n"
            "  --crc             ask for MPA CRC (sets NDK_IWARP_CRC=1; the default here is off)\n"
            "  --poll            busy-poll the CQs instead of waiting for notifications\n"
            "  --json            one JSON document on stdout instead of the table\n"
            "  --verify          check every payload\n"
            "  -I LOCAL          local address (picks the adapter; default: the route to ADDR)\n"
            "  --once            server: exit after the first test session\n"
            "  --report_gbits    accepted for perftest compatibility (Gb/s is always shown)\n",
            PERF_DEFAULT_PORT);
}

static int parse_secs(const char *s, double *out_s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end || v <= 0 || v > 86400)
        return -1;
    *out_s = v;
    return 0;
}

/* NdkPerfCmd.exe's command shape (Test-NetStack). */
static bool is_ndkperfcmd(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-S") || !strcmp(argv[i], "-C") || !strcasecmp(argv[i], "-ServerAddr") ||
            !strcasecmp(argv[i], "-TestType"))
            return true;
    return false;
}

static int parse_ndkperfcmd(int argc, char **argv)
{
    static char addrbuf[300];
    const char *server_addr = NULL;
    opt.ndkperfcmd = true;
    opt.testtype = "rping";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) { ndk_tool_err("%s needs a value", a); return -1; } i++; } while (0)
        if (!strcmp(a, "-S")) {
            opt.server = true;
        } else if (!strcmp(a, "-C")) {
            opt.client = true;
        } else if (!strcasecmp(a, "-ServerAddr")) {
            NEEDV();
            server_addr = v;
        } else if (!strcasecmp(a, "-ServerIf")) {
            NEEDV();
            opt.server_if = (ULONG)strtoul(v, NULL, 10);
        } else if (!strcasecmp(a, "-ClientAddr")) {
            NEEDV();
            opt.local = v;
        } else if (!strcasecmp(a, "-ClientIf")) {
            NEEDV();
            opt.client_if = (ULONG)strtoul(v, NULL, 10);
        } else if (!strcasecmp(a, "-TestType")) {
            NEEDV();
            if (strcasecmp(v, "rping") && strcasecmp(v, "rperf")) {
                ndk_tool_err("-TestType %s: only rping and rperf exist", v);
                return -1;
            }
            opt.testtype = !strcasecmp(v, "rping") ? "rping" : "rperf";
        } else if (!strcasecmp(a, "-W")) {
            NEEDV();
            if (parse_secs(v, &opt.listen_timeout) != 0) {
                ndk_tool_err("bad -W '%s'", v);
                return -1;
            }
        } else if (!strcasecmp(a, "-ts")) {
            NEEDV();
            if (ndk_tool_parse_size(v, &opt.size) != 0 || opt.size == 0) {
                ndk_tool_err("bad -ts '%s'", v);
                return -1;
            }
            opt.size_set = true;
        } else if (!strcasecmp(a, "-LogFilename")) {
            NEEDV();
            opt.logfile = v;
        } else if (!strcasecmp(a, "-A")) {
            opt.append = true;
        } else if (!strcasecmp(a, "-V")) {
            /* results on screen as well as in the log: they always are */
        } else if (!strcmp(a, "--provider")) {
            NEEDV();
            opt.provider = v;
        } else if (!strcmp(a, "--json")) {
            opt.json = true;
        } else if (!strcmp(a, "--poll")) {
            opt.poll = true;
        } else {
            ndk_tool_err("unknown NdkPerfCmd option '%s'", a);
            return -1;
        }
#undef NEEDV
    }
    if (opt.server == opt.client || !server_addr) {
        ndk_tool_err("NdkPerfCmd syntax needs -S or -C and -ServerAddr IP:PORT");
        return -1;
    }
    snprintf(addrbuf, sizeof addrbuf, "%s", server_addr);
    opt.addr = addrbuf;
    /* Both test types are Send/Receive: rping a ping-pong, rperf a bandwidth run. */
    opt.op = OP_SEND;
    if (!strcmp(opt.testtype, "rping")) {
        opt.lat = true;
        if (!opt.size_set)
            opt.size = 64;
        opt.iters = 1000;
    } else {
        if (!opt.size_set)
            opt.size = 65536;
        opt.iters = 5000;
    }
    opt.once = true;
    return 0;
}

static int parse_args(int argc, char **argv)
{
    static const struct option longs[] = {
        { "lat", no_argument, NULL, 'L' },
        { "sweep", no_argument, NULL, 'a' },
        { "inline", required_argument, NULL, 'i' },
        { "crc", no_argument, NULL, 'K' },
        { "poll", no_argument, NULL, 'P' },
        { "json", no_argument, NULL, 'J' },
        { "verify", no_argument, NULL, 'V' },
        { "once", no_argument, NULL, 'O' },
        { "provider", required_argument, NULL, 'X' },
        { "report_gbits", no_argument, NULL, 'G' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    opt.op = OP_WRITE;
    while ((c = getopt_long(argc, argv, "s::c:t:z:an:D:q:d:I:vh", longs, NULL)) != -1) {
        switch (c) {
        case 's':
            opt.server = true;
            if (optarg)
                opt.addr = optarg;
            else if (optind < argc && argv[optind][0] != '-')
                opt.addr = argv[optind++];
            break;
        case 'c': opt.client = true; opt.addr = optarg; break;
        case 't':
            if (!strcmp(optarg, "write"))
                opt.op = OP_WRITE;
            else if (!strcmp(optarg, "read"))
                opt.op = OP_READ;
            else if (!strcmp(optarg, "send"))
                opt.op = OP_SEND;
            else {
                ndk_tool_err("-t %s: use write, read or send", optarg);
                return -1;
            }
            break;
        case 'z':
            if (ndk_tool_parse_size(optarg, &opt.size) != 0 || opt.size == 0 || opt.size > (1u << 30)) {
                ndk_tool_err("bad size '%s'", optarg);
                return -1;
            }
            opt.size_set = true;
            break;
        case 'a': opt.sweep = true; break;
        case 'n': {
            char *end;
            opt.iters = strtoull(optarg, &end, 10);
            if (*end || opt.iters == 0) {
                ndk_tool_err("bad iteration count '%s'", optarg);
                return -1;
            }
            opt.iters_set = true;
            break;
        }
        case 'D':
            if (parse_secs(optarg, &opt.duration) != 0) {
                ndk_tool_err("bad duration '%s'", optarg);
                return -1;
            }
            break;
        case 'q': {
            char *end;
            unsigned long v = strtoul(optarg, &end, 10);
            if (*end || v < 1 || v > MAX_CONNS) {
                ndk_tool_err("bad connection count '%s' (1..%u)", optarg, MAX_CONNS);
                return -1;
            }
            opt.conns = (unsigned)v;
            break;
        }
        case 'd': {
            char *end;
            unsigned long v = strtoul(optarg, &end, 10);
            if (*end || v < 1 || v > 4096) {
                ndk_tool_err("bad depth '%s' (1..4096)", optarg);
                return -1;
            }
            opt.depth = (unsigned)v;
            opt.depth_set = true;
            break;
        }
        case 'i': {
            char *end;
            unsigned long v = strtoul(optarg, &end, 10);
            if (*end || v > 65536) {
                ndk_tool_err("bad inline size '%s'", optarg);
                return -1;
            }
            opt.inline_size = (unsigned)v;
            break;
        }
        case 'I': opt.local = optarg; break;
        case 'L': opt.lat = true; break;
        case 'K': opt.crc = true; break;
        case 'P': opt.poll = true; break;
        case 'J': opt.json = true; break;
        case 'V': opt.verify = true; break;
        case 'O': opt.once = true; break;
        case 'X': opt.provider = optarg; break;
        case 'G': break;
        case 'v': opt.verbose++; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc || opt.server == opt.client) {
        usage(stderr);
        return -1;
    }
    if (opt.sweep && opt.size_set) {
        ndk_tool_err("-z and --sweep exclude each other");
        return -1;
    }
    if (opt.iters_set && opt.duration > 0) {
        ndk_tool_err("-n and -D exclude each other");
        return -1;
    }
    if (!opt.iters_set)
        opt.iters = opt.lat ? 1000 : 5000;
    return 0;
}

int main(int argc, char **argv)
{
    ndk_tool_set_progname("ndkperf");
    abs_init();
    int prc = is_ndkperfcmd(argc, argv) ? parse_ndkperfcmd(argc, argv) : parse_args(argc, argv);
    if (prc != 0)
        return 2;
    if (opt.logfile) {
        perf_log = fopen(opt.logfile, opt.append ? "a" : "w");
        if (!perf_log) {
            ndk_tool_err("cannot open log file %s", opt.logfile);
            return 2;
        }
    }
    /* MPA CRC: off unless asked for (the environment still wins when it says something). */
    if (opt.crc)
        setenv("NDK_IWARP_CRC", "1", 1);
    else
        setenv("NDK_IWARP_CRC", "0", 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    ndk_tool_install_signals();

    ndk_rt *rt = NULL;
    NTSTATUS st = ndk_tool_rt_open(&rt);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("opening the NDK runtime failed: %s", ndk_tool_status(st));
        return 1;
    }
    int rc = opt.server ? run_server(rt) : run_client(rt);
    ndk_rt_close(rt);
    if (perf_log)
        fclose(perf_log);
    return rc;
}
