/*
 * ndkping - RDMA connectivity check through a chosen NDK adapter.
 *
 *   ndkping -s [ADDR][:PORT]               serve (any address by default)
 *   ndkping -c ADDR[:PORT] [-a LOCAL]      Send/Receive ping-pong, per-ping round-trip times and a
 *                                          min/avg/max/mdev summary, like ping
 *   ndkping --rping -s|-c [-a ADDR] ...    rdma-core rping's message layout and sequence (the
 *                                          client advertises its buffer, the server RDMA-Reads it
 *                                          and RDMA-Writes it back), so it talks to Linux rping
 *   ndkping --cmatose [-s SERVER] ...      rdma-core (u)cmatose's Send/Receive exchange, with
 *                                          optional private data in connect and accept
 *   ndkping --rdma-server|--rdma-client    librdmacm's rdma_server / rdma_client examples: one
 *          [-s ADDR] [-p PORT]             16-byte Send each way
 *
 * Exits 0 on success, 1 with a one-line reason on any failure, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <endian.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ndk_tool.h"

#define PING_DEFAULT_PORT 7174
#define PING_MAX_SIZE     (16u << 20)
#define PING_MAGIC        "NDKPING"
#define PING_VERSION      1

/* Connect private data of the plain ping mode (big-endian fields). */
struct ping_hello {
    char     magic[8];
    uint32_t version;
    uint32_t size;
    uint32_t count;
    uint32_t flags;
};

/* RequestContext tags of our work requests. */
enum ping_tag { TAG_SEND = 1, TAG_READ, TAG_WRITE, TAG_RECV0, TAG_COUNT };
/* Receives carry TAG_RECV0 + slot (slots 0..PING_SLOTS-1) and are all booked under TAG_RECV0. */
#define PING_SLOTS 4
static const char *const tag_name[TAG_COUNT] = { "?", "Send", "RDMA Read", "RDMA Write", "Receive" };

/* ---- options ---- */
static struct {
    bool        server, client, rping, cmatose, rdmacm, poll, once, quiet, persistent, validate;
    unsigned    connections;        /* cmatose -c */
    const char *pdata;              /* cmatose --pdata */
    int         verbose;
    const char *addr;           /* -s / -c argument, or rping's -a */
    const char *local;          /* -a (ping) / -I (rping) */
    const char *provider;
    uint16_t    port;           /* rping -p, or default */
    bool        port_set;
    uint32_t    size;
    uint64_t    count;
    bool        count_set;
    double      interval;
    double      wait_s;
} opt = { .size = 64, .count = 4, .interval = 1.0, .wait_s = 5.0 };

/* ---- a connection plus completion bookkeeping ---- */
struct session {
    ndk_tool_conn conn;
    ndk_tool_mem  mem;          /* every buffer lives in one registration */
    unsigned      done[TAG_COUNT];
    /* receive completions, in order: which slot and how many bytes */
    unsigned      rq_head, rq_tail;
    int           rq_slot[64];      /* a pump books at most 16 at a time; callers consume them */
    ULONG         rq_bytes[64];
    char          where[NDK_TOOL_ADDRSTRLEN];
};

static void fail_exit(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

static void session_free(struct session *s)
{
    /* The QP holds no reference on the memory, but close it first so nothing is in flight. */
    if (s->conn.connector && s->conn.established) {
        ndk_tool_op *op = ndk_tool_op_new();
        NTSTATUS st = s->conn.connector->Dispatch->NdkDisconnect(s->conn.connector, ndk_tool_op_request_done, op);
        ndk_tool_op_finish(op, st, NDK_TOOL_OP_TIMEOUT_MS, NULL);
        s->conn.established = false;
    }
    NDK_TOOL_CLOSE(s->conn.connector);
    s->conn.connector = NULL;
    NDK_TOOL_CLOSE(s->conn.qp);
    s->conn.qp = NULL;
    ndk_tool_mem_release(&s->mem);
    ndk_tool_conn_close(&s->conn);
}

static void fail_exit(struct session *s, const char *fmt, ...)
{
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ndk_tool_err("%s", line);
    (void)s;
    /* Exit without an orderly teardown: the peer sees the connection drop. */
    fflush(stdout);
    _exit(1);
}

/* Waits for one batch of completions and books them; STATUS_SUCCESS or why it failed.
 * *failed_tag tells which request failed when a completion carried an error. */
static NTSTATUS pump(struct session *s, int timeout_ms, int *failed_tag)
{
    NDK_RESULT r[16];
    NTSTATUS st;
    ULONG n = ndk_tool_cq_wait(s->conn.cq, r, 16, timeout_ms, &st);
    *failed_tag = 0;
    if (!n)
        return st;
    for (ULONG i = 0; i < n; i++) {
        int tag = (int)(uintptr_t)r[i].RequestContext, slot = 0;
        if (tag >= TAG_RECV0 && tag < TAG_RECV0 + PING_SLOTS) {
            slot = tag - TAG_RECV0;
            tag = TAG_RECV0;
        } else if (tag <= 0 || tag >= TAG_COUNT) {
            tag = 0;
        }
        if (r[i].Status != STATUS_SUCCESS) {
            *failed_tag = tag;
            return r[i].Status;
        }
        s->done[tag]++;
        if (tag == TAG_RECV0) {
            unsigned k = s->rq_tail++ % 64;
            s->rq_slot[k] = slot;
            s->rq_bytes[k] = r[i].BytesTransferred;
        }
    }
    return STATUS_SUCCESS;
}

static NTSTATUS post_recv(struct session *s, int slot, size_t off, ULONG len)
{
    NDK_SGE sge = ndk_tool_sge(&s->mem, off, len);
    return s->conn.qp->Dispatch->NdkReceive(s->conn.qp, (PVOID)(uintptr_t)(TAG_RECV0 + slot), &sge, 1);
}

static NTSTATUS post_send(struct session *s, size_t off, ULONG len)
{
    NDK_SGE sge = ndk_tool_sge(&s->mem, off, len);
    return s->conn.qp->Dispatch->NdkSend(s->conn.qp, (PVOID)(uintptr_t)TAG_SEND, &sge, len ? 1 : 0, 0);
}

/* Waits until `want` completions of tag have been booked in total. */
static void wait_tag(struct session *s, int tag, unsigned want, int timeout_ms, const char *what)
{
    while (s->done[tag] < want) {
        int failed;
        NTSTATUS st = pump(s, timeout_ms, &failed);
        if (st == STATUS_SUCCESS)
            continue;
        if (failed)
            fail_exit(s, "%s: %s completed with %s", s->where, tag_name[failed], ndk_tool_status(st));
        if (st == STATUS_IO_TIMEOUT)
            fail_exit(s, "%s: no %s within %d ms", s->where, what, timeout_ms);
        if (st == STATUS_CONNECTION_DISCONNECTED)
            fail_exit(s, "%s: peer disconnected while waiting for %s", s->where, what);
        if (st == STATUS_CANCELLED)
            fail_exit(s, "interrupted");
        fail_exit(s, "%s: waiting for %s: %s", s->where, what, ndk_tool_status(st));
    }
}

static int wait_ms(void) { return (int)(opt.wait_s * 1000.0); }

/* ============================================================================================ */
/* plain ping mode                                                                               */

static void fill_payload(uint8_t *p, uint32_t size, uint64_t seq)
{
    for (uint32_t i = 0; i < size; i++)
        p[i] = (uint8_t)(seq * 131u + i * 7u + (i >> 8));
    uint64_t be = htobe64(seq);
    memcpy(p, &be, size < 8 ? size : 8);
}

static int ping_client(ndk_rt *rt)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDRSTRLEN], src_s[NDK_TOOL_ADDRSTRLEN];
    SOCKADDR_INET dst, local, src;
    ndk_rt_adapter_id id;
    ndk_tool_adapter ad;
    struct session s;
    NTSTATUS st;

    memset(&s, 0, sizeof s);
    if (ndk_tool_parse_addr(opt.addr, opt.port, &dst, why, sizeof why) != 0 || dst.si_family == AF_UNSPEC) {
        ndk_tool_err("bad destination %s", dst.si_family == AF_UNSPEC && !why[0] ? "(no address)" : why);
        return 2;
    }
    if (opt.local && ndk_tool_parse_ip(opt.local, &local) != 0) {
        ndk_tool_err("bad local address '%s'", opt.local);
        return 2;
    }
    ndk_tool_addr_str(&dst, true, dst_s, sizeof dst_s);
    st = ndk_tool_pick_adapter(rt, opt.local ? &local : NULL, &dst, opt.provider, 0, &id, &src, why, sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, why);
        return 1;
    }
    st = ndk_tool_adapter_open(rt, id, &ad);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("opening the adapter for %s failed: %s", ndk_tool_addr_str(&src, false, src_s, sizeof src_s),
                     ndk_tool_status(st));
        return 1;
    }
    if (opt.size > ad.info.MaxTransferLength) {
        ndk_tool_err("payload size %u exceeds the adapter's MaxTransferLength %u", opt.size, ad.info.MaxTransferLength);
        ndk_tool_adapter_close(&ad);
        return 2;
    }
    snprintf(s.where, sizeof s.where, "%s", dst_s);
    st = ndk_tool_conn_init(&s.conn, &ad, 2, 2, 1, 1, 0, opt.poll);
    if (st == STATUS_SUCCESS)
        st = ndk_tool_mem_register(s.conn.pd, NULL, (size_t)opt.size * 2, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &s.mem);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up the queue pair on %s failed: %s", ad.ifname, ndk_tool_status(st));
        session_free(&s);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    uint8_t *tx = s.mem.buf, *rx = s.mem.buf + opt.size;
    st = post_recv(&s, 0, opt.size, opt.size);
    if (st != STATUS_SUCCESS)
        fail_exit(&s, "posting a receive failed: %s", ndk_tool_status(st));

    struct ping_hello h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PING_MAGIC, sizeof PING_MAGIC);
    h.version = htobe32(PING_VERSION);
    h.size = htobe32(opt.size);
    h.count = htobe32((uint32_t)opt.count);
    uint64_t t_conn = ndk_tool_now_ns();
    st = ndk_tool_conn_connect(&s.conn, &src, &dst, 1, 1, &h, sizeof h, NDK_TOOL_CONNECT_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, ndk_tool_status(st));
        session_free(&s);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    double conn_ms = (double)(ndk_tool_now_ns() - t_conn) / 1e6;
    if (s.conn.peer_data_len < sizeof h || memcmp(s.conn.peer_data, PING_MAGIC, sizeof PING_MAGIC) != 0)
        fail_exit(&s, "%s accepted but is not an ndkping server (no ndkping reply in the private data)", dst_s);

    if (!opt.quiet)
        printf("NDKPING %s from %s via %s (%s, adapter %u): %u data bytes, connected in %.3f ms\n", dst_s,
               ndk_tool_addr_str(&s.conn.local, true, src_s, sizeof src_s), ad.ifname, ad.provider, ad.id, opt.size,
               conn_ms);
    fflush(stdout);

    uint64_t n = 0, sum = 0, min = UINT64_MAX, max = 0;
    double sumsq = 0;
    uint64_t t_start = ndk_tool_now_ns();
    for (uint64_t seq = 1; opt.count == 0 || seq <= opt.count; seq++) {
        if (ndk_tool_stopped())
            break;
        fill_payload(tx, opt.size, seq);
        uint64_t t0 = ndk_tool_now_ns();
        st = post_send(&s, 0, opt.size);
        if (st != STATUS_SUCCESS)
            fail_exit(&s, "%s: posting Send seq=%llu failed: %s", dst_s, (unsigned long long)seq, ndk_tool_status(st));
        wait_tag(&s, TAG_RECV0, (unsigned)seq, wait_ms(), "reply");
        uint64_t rtt = ndk_tool_now_ns() - t0;
        wait_tag(&s, TAG_SEND, (unsigned)seq, wait_ms(), "Send completion");
        unsigned k = s.rq_head++ % 64;
        if (s.rq_bytes[k] != opt.size)
            fail_exit(&s, "%s: reply seq=%llu has %u bytes, expected %u", dst_s, (unsigned long long)seq,
                      s.rq_bytes[k], opt.size);
        if (memcmp(rx, tx, opt.size) != 0) {
            uint32_t at = 0;
            while (at < opt.size && rx[at] == tx[at])
                at++;
            fail_exit(&s, "%s: reply seq=%llu differs from the request at byte %u", dst_s, (unsigned long long)seq, at);
        }
        memset(rx, 0, opt.size);
        st = post_recv(&s, 0, opt.size, opt.size);
        if (st != STATUS_SUCCESS)
            fail_exit(&s, "posting a receive failed: %s", ndk_tool_status(st));
        n++;
        sum += rtt;
        sumsq += (double)rtt * (double)rtt;
        if (rtt < min)
            min = rtt;
        if (rtt > max)
            max = rtt;
        if (!opt.quiet) {
            printf("%u bytes from %s: seq=%llu time=%.3f ms\n", opt.size, dst_s, (unsigned long long)seq,
                   (double)rtt / 1e6);
            fflush(stdout);
        }
        if (opt.count && seq == opt.count)
            break;
        /* Sleep the interval, waking for Ctrl-C. */
        uint64_t until = ndk_tool_now_ns() + (uint64_t)(opt.interval * 1e9);
        while (!ndk_tool_stopped()) {
            uint64_t now = ndk_tool_now_ns();
            if (now >= until)
                break;
            uint64_t d = until - now > 50000000u ? 50000000u : until - now;
            struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
            nanosleep(&ts, NULL);
        }
    }
    uint64_t elapsed = ndk_tool_now_ns() - t_start;
    session_free(&s);
    ndk_tool_adapter_close(&ad);

    printf("--- %s ndkping statistics ---\n", dst_s);
    printf("%llu pings transmitted, %llu received, 0%% loss, time %llums\n", (unsigned long long)n,
           (unsigned long long)n, (unsigned long long)(elapsed / 1000000u));
    if (n) {
        double avg = (double)sum / (double)n;
        double var = sumsq / (double)n - avg * avg;
        printf("rtt min/avg/max/mdev = %.3f/%.3f/%.3f/%.3f ms\n", (double)min / 1e6, avg / 1e6, (double)max / 1e6,
               sqrt(var > 0 ? var : 0) / 1e6);
    }
    fflush(stdout);
    if (n == 0) {
        ndk_tool_err("%s: no ping completed", dst_s);
        return 1;
    }
    return 0;
}

/* Serves one plain-ping connection: echo every message back. */
static int ping_serve_one(NDK_CONNECTOR *incoming, ndk_tool_adapter *ad)
{
    struct ping_hello h;
    ULONG ird = 0, ord = 0, len = sizeof h;
    struct session s;
    char peer[NDK_TOOL_ADDRSTRLEN];
    NTSTATUS st;

    memset(&s, 0, sizeof s);
    memset(&h, 0, sizeof h);
    st = ndk_tool_connector_data(incoming, &ird, &ord, &h, &len);
    uint32_t size = be32toh(h.size);
    if (st != STATUS_SUCCESS || len < sizeof h || memcmp(h.magic, PING_MAGIC, sizeof PING_MAGIC) != 0 ||
        size == 0 || size > PING_MAX_SIZE || size > ad->info.MaxTransferLength) {
        ndk_tool_err("rejecting a connection that is not a valid ndkping request");
        incoming->Dispatch->NdkReject(incoming, NULL, 0);
        ndk_tool_close(&incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
        return 1;
    }
    /* Spare slots: a ping may land before the previous echo's completion was reaped. */
    st = ndk_tool_conn_init(&s.conn, ad, PING_SLOTS, PING_SLOTS, 1, 1, 0, opt.poll);
    if (st == STATUS_SUCCESS)
        st = ndk_tool_mem_register(s.conn.pd, NULL, (size_t)size * PING_SLOTS, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &s.mem);
    for (int k = 0; st == STATUS_SUCCESS && k < PING_SLOTS; k++)
        st = post_recv(&s, k, (size_t)k * size, size);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up a queue pair failed: %s", ndk_tool_status(st));
        incoming->Dispatch->NdkReject(incoming, NULL, 0);
        ndk_tool_close(&incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
        session_free(&s);
        return 1;
    }
    struct ping_hello reply = h;
    reply.flags = 0;
    st = ndk_tool_conn_accept(&s.conn, incoming, 1, 1, &reply, sizeof reply, NDK_TOOL_CONNECT_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("accept failed: %s", ndk_tool_status(st));
        session_free(&s);
        return 1;
    }
    ndk_tool_addr_str(&s.conn.peer, true, peer, sizeof peer);
    snprintf(s.where, sizeof s.where, "%s", peer);
    if (!opt.quiet) {
        printf("connection from %s on %s: %u-byte pings\n", peer, ad->ifname, size);
        fflush(stdout);
    }
    unsigned echoed = 0, sends_posted = 0;
    int rc = 0;
    int pending_slot[PING_SLOTS];       /* slots whose echo Send is in flight, in order */
    for (;;) {
        int failed;
        st = pump(&s, NDK_TOOL_INFINITE, &failed);
        if (st != STATUS_SUCCESS) {
            if (st == STATUS_CONNECTION_DISCONNECTED || (st == STATUS_CANCELLED && failed) ||
                (failed && ndk_tool_conn_disconnected(&s.conn)))
                break;                     /* the client is done */
            if (st == STATUS_CANCELLED) {
                rc = 1;
                break;                     /* we are interrupted */
            }
            ndk_tool_err("%s: %s%s%s", peer, failed ? tag_name[failed] : "waiting for completions",
                         failed ? " completed with " : ": ", ndk_tool_status(st));
            rc = 1;
            break;
        }
        /* Echo every new receive back from its own slot. */
        while (s.rq_head != s.rq_tail) {
            unsigned k = s.rq_head++ % 64;
            int slot = s.rq_slot[k];
            st = post_send(&s, (size_t)slot * size, s.rq_bytes[k]);
            if (st != STATUS_SUCCESS) {
                ndk_tool_err("%s: posting the echo failed: %s", peer, ndk_tool_status(st));
                rc = 1;
                goto out;
            }
            pending_slot[sends_posted++ % PING_SLOTS] = slot;
        }
        /* A finished echo gives its slot back to the receive queue. */
        while (echoed < s.done[TAG_SEND]) {
            int slot = pending_slot[echoed++ % PING_SLOTS];
            st = post_recv(&s, slot, (size_t)slot * size, size);
            if (st != STATUS_SUCCESS) {
                ndk_tool_err("%s: posting a receive failed: %s", peer, ndk_tool_status(st));
                rc = 1;
                goto out;
            }
        }
    }
out:
    if (!opt.quiet) {
        printf("%s: %u pings echoed\n", peer, echoed);
        fflush(stdout);
    }
    session_free(&s);
    return rc;
}

/* ============================================================================================ */
/* rping-compatible mode                                                                         */

/* The advertisement rping sends: buffer address, rkey and size, big-endian. */
struct rping_info {
    uint64_t buf;
    uint32_t rkey;
    uint32_t size;
} __attribute__((packed));
_Static_assert(sizeof(struct rping_info) == 16, "rping advertisement is 16 bytes");

#define RPING_MAX_SIZE 65535u

/* The text rping's client puts in its buffer for ping number `ping`. */
static void rping_fill(uint8_t *buf, uint32_t size, unsigned ping)
{
    unsigned char c = (unsigned char)(65 + ping % 58);
    int cc = snprintf((char *)buf, size, "rdma-ping-%u: ", ping);
    for (uint32_t i = cc < 0 ? 0 : (uint32_t)cc; i < size; i++) {
        buf[i] = c;
        if (++c > 122)
            c = 65;
    }
    buf[size - 1] = 0;
}

/* Buffer layout of an rping session inside s->mem. */
enum { RP_RECV = 0, RP_SEND = 32, RP_DATA = 64 };

static int rping_setup(struct session *s, ndk_tool_adapter *ad, uint32_t data_len, bool client)
{
    /* Client: start_buf and rdma_buf; server: rdma_buf only. */
    size_t total = RP_DATA + (size_t)data_len * (client ? 2 : 1);
    NTSTATUS st = ndk_tool_conn_init(&s->conn, ad, 2, 16, 1, 1, 0, opt.poll);
    if (st == STATUS_SUCCESS)
        st = ndk_tool_mem_register(s->conn.pd, NULL, total,
                                   NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ |
                                       NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_RDMA_READ_SINK,
                                   &s->mem);
    for (int k = 0; st == STATUS_SUCCESS && k < 2; k++)
        st = post_recv(s, k, RP_RECV + (size_t)k * 16, 16);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up the queue pair on %s failed: %s", ad->ifname, ndk_tool_status(st));
        return -1;
    }
    return 0;
}

/* Takes the next receive (16-byte advertisement or go-ahead) and posts its slot again. */
static struct rping_info rping_take_recv(struct session *s)
{
    unsigned k = s->rq_head++ % 64;
    int slot = s->rq_slot[k];
    struct rping_info info;
    if (s->rq_bytes[k] != sizeof info)
        fail_exit(s, "%s: received %u bytes, expected a %zu-byte rping message", s->where, s->rq_bytes[k],
                  sizeof info);
    memcpy(&info, s->mem.buf + RP_RECV + (size_t)slot * 16, sizeof info);
    NTSTATUS st = post_recv(s, slot, RP_RECV + (size_t)slot * 16, 16);
    if (st != STATUS_SUCCESS)
        fail_exit(s, "%s: posting a receive failed: %s", s->where, ndk_tool_status(st));
    info.buf = be64toh(info.buf);
    info.rkey = be32toh(info.rkey);
    info.size = be32toh(info.size);
    return info;
}

static void rping_send_info(struct session *s, unsigned *sends, const uint8_t *buf, uint32_t rkey, uint32_t size)
{
    struct rping_info info;
    info.buf = htobe64((uint64_t)(uintptr_t)buf);
    info.rkey = htobe32(rkey);
    info.size = htobe32(size);
    memcpy(s->mem.buf + RP_SEND, &info, sizeof info);
    NTSTATUS st = post_send(s, RP_SEND, sizeof info);
    if (st != STATUS_SUCCESS)
        fail_exit(s, "%s: posting Send failed: %s", s->where, ndk_tool_status(st));
    ++*sends;
    wait_tag(s, TAG_SEND, *sends, wait_ms(), "Send completion");
}

static int rping_client(ndk_rt *rt)
{
    char why[256], dst_s[NDK_TOOL_ADDRSTRLEN];
    SOCKADDR_INET dst, local, src;
    ndk_rt_adapter_id id;
    ndk_tool_adapter ad;
    struct session s;
    NTSTATUS st;

    memset(&s, 0, sizeof s);
    if (!opt.addr) {
        ndk_tool_err("--rping client needs the server address (-a)");
        return 2;
    }
    if (ndk_tool_parse_ip(opt.addr, &dst) != 0) {
        ndk_tool_err("bad server address '%s'", opt.addr);
        return 2;
    }
    ndk_tool_addr_set_port(&dst, opt.port);
    if (opt.local && ndk_tool_parse_ip(opt.local, &local) != 0) {
        ndk_tool_err("bad source address '%s'", opt.local);
        return 2;
    }
    ndk_tool_addr_str(&dst, true, dst_s, sizeof dst_s);
    snprintf(s.where, sizeof s.where, "%s", dst_s);
    st = ndk_tool_pick_adapter(rt, opt.local ? &local : NULL, &dst, opt.provider, 0, &id, &src, why, sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, why);
        return 1;
    }
    st = ndk_tool_adapter_open(rt, id, &ad);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("opening the adapter failed: %s", ndk_tool_status(st));
        return 1;
    }
    if (rping_setup(&s, &ad, opt.size, true) != 0) {
        session_free(&s);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    /* rping asks for one read each way and sends no private data. */
    st = ndk_tool_conn_connect(&s.conn, &src, &dst, 1, 1, NULL, 0, NDK_TOOL_CONNECT_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, ndk_tool_status(st));
        session_free(&s);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    if (opt.verbose > 1 || (!opt.quiet && opt.verbose))
        fprintf(stderr, "%s: connected to %s from %s via %s (%s)\n", ndk_tool_progname(), dst_s,
                ndk_tool_addr_str(&s.conn.local, true, why, sizeof why), ad.ifname, ad.provider);
    uint8_t *start_buf = s.mem.buf + RP_DATA, *rdma_buf = start_buf + opt.size;
    unsigned sends = 0, recvs = 0, ping;
    uint64_t t0 = ndk_tool_now_ns();
    for (ping = 0; opt.count == 0 || ping < opt.count; ping++) {
        if (ndk_tool_stopped())
            break;
        rping_fill(start_buf, opt.size, ping);
        memset(rdma_buf, 0, opt.size);
        /* 1. Advertise the source; the server RDMA-Reads it and says go ahead. */
        rping_send_info(&s, &sends, start_buf, s.mem.rtoken, opt.size);
        while (s.done[TAG_RECV0] < recvs + 1) {
            int failed;
            st = pump(&s, wait_ms(), &failed);
            if (st != STATUS_SUCCESS)
                fail_exit(&s, "%s: ping %u: waiting for the server's go-ahead after its RDMA Read: %s%s%s", dst_s,
                          ping, failed ? tag_name[failed] : "", failed ? " completed with " : "", ndk_tool_status(st));
        }
        recvs++;
        rping_take_recv(&s);
        /* 2. Advertise the sink; the server RDMA-Writes the data back and says go ahead. */
        rping_send_info(&s, &sends, rdma_buf, s.mem.rtoken, opt.size);
        while (s.done[TAG_RECV0] < recvs + 1) {
            int failed;
            st = pump(&s, wait_ms(), &failed);
            if (st != STATUS_SUCCESS)
                fail_exit(&s, "%s: ping %u: waiting for the server's go-ahead after its RDMA Write: %s%s%s", dst_s,
                          ping, failed ? tag_name[failed] : "", failed ? " completed with " : "", ndk_tool_status(st));
        }
        recvs++;
        rping_take_recv(&s);
        if (memcmp(start_buf, rdma_buf, opt.size) != 0) {
            uint32_t at = 0;
            while (at < opt.size && start_buf[at] == rdma_buf[at])
                at++;
            fail_exit(&s, "%s: data mismatch in ping %u at byte %u of %u", dst_s, ping, at, opt.size);
        }
        if (opt.verbose)
            printf("ping data: %s\n", (const char *)rdma_buf);
    }
    double secs = (double)(ndk_tool_now_ns() - t0) / 1e9;
    session_free(&s);
    ndk_tool_adapter_close(&ad);
    if (!opt.quiet)
        printf("ndkping --rping client: %u pings of %u bytes with %s, data compared byte for byte: ok (%.3f s)\n",
               ping, opt.size, dst_s, secs);
    fflush(stdout);
    return 0;
}

/* The rping server side on one accepted connection. Returns 0 when the client finished. */
static int rping_serve_one(NDK_CONNECTOR *incoming, ndk_tool_adapter *ad)
{
    char peer[NDK_TOOL_ADDRSTRLEN];
    struct session s;
    NTSTATUS st;
    const uint32_t cap = opt.size > RPING_MAX_SIZE + 1 ? opt.size : RPING_MAX_SIZE + 1;

    memset(&s, 0, sizeof s);
    if (rping_setup(&s, ad, cap, false) != 0) {
        incoming->Dispatch->NdkReject(incoming, NULL, 0);
        ndk_tool_close(&incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
        session_free(&s);
        return 1;
    }
    st = ndk_tool_conn_accept(&s.conn, incoming, 1, 1, NULL, 0, NDK_TOOL_CONNECT_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("accept failed: %s", ndk_tool_status(st));
        session_free(&s);
        return 1;
    }
    ndk_tool_addr_str(&s.conn.peer, true, peer, sizeof peer);
    snprintf(s.where, sizeof s.where, "%s", peer);
    if (opt.verbose)
        fprintf(stderr, "%s: connection from %s\n", ndk_tool_progname(), peer);
    uint8_t *rdma_buf = s.mem.buf + RP_DATA;
    uint8_t *expect = malloc(cap);
    unsigned sends = 0, recvs = 0, ping = 0, reads = 0, writes = 0;
    uint64_t bytes = 0, mismatches = 0;
    uint32_t last_size = 0;
    int rc = 0;
    if (!expect)
        fail_exit(&s, "out of memory");
    for (;;) {
        /* Wait for the client's source advertisement, or its disconnect. */
        bool gone = false;
        while (s.done[TAG_RECV0] < recvs + 1) {
            int failed;
            st = pump(&s, NDK_TOOL_INFINITE, &failed);
            if (st == STATUS_SUCCESS)
                continue;
            if (st == STATUS_CONNECTION_DISCONNECTED || ndk_tool_conn_disconnected(&s.conn) ||
                (failed && (st == STATUS_CANCELLED || st == STATUS_CONNECTION_DISCONNECTED ||
                            st == STATUS_CONNECTION_RESET || st == STATUS_CONNECTION_ABORTED))) {
                gone = true;
                break;
            }
            ndk_tool_err("%s: ping %u: waiting for the client's advertisement: %s%s%s", peer, ping,
                         failed ? tag_name[failed] : "", failed ? " completed with " : "", ndk_tool_status(st));
            rc = 1;
            goto out;
        }
        if (gone)
            break;
        recvs++;
        struct rping_info src = rping_take_recv(&s);
        if (src.size == 0 || src.size > cap)
            fail_exit(&s, "%s: ping %u: client advertised %u bytes; this server takes 1..%u", peer, ping, src.size,
                      cap);
        /* RDMA Read the client's data. */
        NDK_SGE sge = ndk_tool_sge(&s.mem, RP_DATA, src.size);
        st = s.conn.qp->Dispatch->NdkRead(s.conn.qp, (PVOID)(uintptr_t)TAG_READ, &sge, 1, src.buf, src.rkey, 0);
        if (st != STATUS_SUCCESS)
            fail_exit(&s, "%s: posting RDMA Read failed: %s", peer, ndk_tool_status(st));
        wait_tag(&s, TAG_READ, ++reads, wait_ms(), "RDMA Read completion");
        rping_fill(expect, src.size, ping);
        if (memcmp(expect, rdma_buf, src.size) != 0) {
            mismatches++;
            if (opt.verbose)
                fprintf(stderr, "%s: ping %u: data read from %s is not rping's pattern\n", ndk_tool_progname(), ping,
                        peer);
        }
        if (opt.verbose)
            printf("server ping data: %.*s\n", (int)strnlen((const char *)rdma_buf, src.size),
                   (const char *)rdma_buf);
        /* Go ahead: a 16-byte Send (rping's server sends its untouched message buffer). */
        memset(s.mem.buf + RP_SEND, 0, 16);
        st = post_send(&s, RP_SEND, 16);
        if (st != STATUS_SUCCESS)
            fail_exit(&s, "%s: posting Send failed: %s", peer, ndk_tool_status(st));
        wait_tag(&s, TAG_SEND, ++sends, wait_ms(), "Send completion");
        /* The client's sink advertisement. */
        while (s.done[TAG_RECV0] < recvs + 1) {
            int failed;
            st = pump(&s, wait_ms(), &failed);
            if (st != STATUS_SUCCESS)
                fail_exit(&s, "%s: ping %u: waiting for the sink advertisement: %s%s%s", peer, ping,
                          failed ? tag_name[failed] : "", failed ? " completed with " : "", ndk_tool_status(st));
        }
        recvs++;
        struct rping_info dst = rping_take_recv(&s);
        /* rping writes back strlen(data) + 1 bytes. */
        uint32_t wlen = (uint32_t)strnlen((const char *)rdma_buf, src.size) + 1;
        if (wlen > src.size)
            wlen = src.size;
        if (wlen > dst.size)
            fail_exit(&s, "%s: ping %u: sink of %u bytes is smaller than the %u bytes to write back", peer, ping,
                      dst.size, wlen);
        sge = ndk_tool_sge(&s.mem, RP_DATA, wlen);
        st = s.conn.qp->Dispatch->NdkWrite(s.conn.qp, (PVOID)(uintptr_t)TAG_WRITE, &sge, 1, dst.buf, dst.rkey, 0);
        if (st != STATUS_SUCCESS)
            fail_exit(&s, "%s: posting RDMA Write failed: %s", peer, ndk_tool_status(st));
        wait_tag(&s, TAG_WRITE, ++writes, wait_ms(), "RDMA Write completion");
        st = post_send(&s, RP_SEND, 16);
        if (st != STATUS_SUCCESS)
            fail_exit(&s, "%s: posting Send failed: %s", peer, ndk_tool_status(st));
        wait_tag(&s, TAG_SEND, ++sends, wait_ms(), "Send completion");
        bytes += src.size;
        last_size = src.size;
        ping++;
    }
    /* The client went away between pings. Linux rping's client disconnects only after its
     * last ping, so that is a complete session unless no ping was ever completed; a client
     * that dies in the middle of a ping fails one of the waits above. */
    if (ping == 0) {
        ndk_tool_err("%s: the client disconnected before completing a ping (incomplete rping session)", peer);
        rc = 1;
    }
out:
    free(expect);
    session_free(&s);
    if (rc == 0 && !opt.quiet) {
        if (mismatches)
            printf("ndkping --rping server: %u pings (%llu bytes) from %s; %llu did not carry rping's pattern\n", ping,
                   (unsigned long long)bytes, peer, (unsigned long long)mismatches);
        else
            printf("ndkping --rping server: %u pings of %u bytes from %s, data compared byte for byte: ok\n", ping,
                   last_size, peer);
    }
    fflush(stdout);
    return rc;
}


/* ============================================================================================ */
/* ucmatose-compatible mode                                                                      */

/* (u)cmatose: both sides post message_count receives before connecting; once every connection
 * is up the server Sends message_count messages on each and then waits for as many replies;
 * the client waits for the messages, replies, and waits for the server to disconnect. */

#define CMATOSE_DEFAULT_PORT 7471
#define CMATOSE_MAX_CONNS    64

struct cm_node {
    struct session s;
    ndk_tool_adapter *ad;
    unsigned sends, recvs;
};

static void cm_fill(uint8_t *p, uint32_t size, unsigned conn, unsigned msg)
{
    for (uint32_t i = 0; i < size; i++)
        p[i] = (uint8_t)(conn * 31u + msg * 7u + i);
}

/* Private data as text: printable bytes up to the first NUL. */
static void cm_print_pdata(const char *who, const uint8_t *d, ULONG len)
{
    ULONG n = 0;
    while (n < len && d[n])
        n++;
    if (!n)
        return;
    printf("%s private data: \"", who);
    for (ULONG i = 0; i < n; i++)
        putchar(isprint(d[i]) ? d[i] : '.');
    printf("\" (%u bytes)\n", n);
}

static int cm_setup(struct cm_node *n, ndk_tool_adapter *ad)
{
    unsigned cnt = opt.count ? (unsigned)opt.count : 1;
    n->ad = ad;
    NTSTATUS st = ndk_tool_conn_init(&n->s.conn, ad, cnt, cnt, 1, 1, 0, opt.poll);
    if (st == STATUS_SUCCESS)
        st = ndk_tool_mem_register(n->s.conn.pd, NULL, (size_t)opt.size * (cnt + 1), NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                   &n->s.mem);
    /* One receive buffer per message, so every message can be checked; slot 0 tags them all. */
    for (unsigned k = 0; st == STATUS_SUCCESS && opt.count && k < cnt; k++) {
        NDK_SGE sge = ndk_tool_sge(&n->s.mem, (size_t)opt.size * (k + 1), opt.size);
        st = n->s.conn.qp->Dispatch->NdkReceive(n->s.conn.qp, (PVOID)(uintptr_t)TAG_RECV0, &sge, 1);
    }
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up a queue pair failed: %s", ndk_tool_status(st));
        return -1;
    }
    return 0;
}

static int cm_send_all(struct cm_node *n, unsigned idx)
{
    for (unsigned m = 0; m < opt.count; m++) {
        cm_fill(n->s.mem.buf, opt.size, idx, m);
        NTSTATUS st = post_send(&n->s, 0, opt.size);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("%s: posting Send %u failed: %s", n->s.where, m, ndk_tool_status(st));
            return -1;
        }
        /* One send buffer: wait for each before refilling it. */
        wait_tag(&n->s, TAG_SEND, ++n->sends, wait_ms(), "Send completion");
    }
    return 0;
}

static int cm_recv_all(struct cm_node *n, unsigned idx)
{
    for (unsigned m = 0; m < opt.count; m++) {
        /* Receives complete in posting order: message m is in buffer m + 1. */
        wait_tag(&n->s, TAG_RECV0, ++n->recvs, wait_ms(), "messages");
        unsigned k = n->s.rq_head++ % 64;
        if (n->s.rq_bytes[k] != opt.size)
            fail_exit(&n->s, "%s: message %u has %u bytes, expected %u", n->s.where, m, n->s.rq_bytes[k], opt.size);
        if (opt.validate) {
            uint8_t *want = malloc(opt.size);
            if (!want)
                fail_exit(&n->s, "out of memory");
            cm_fill(want, opt.size, idx, m);
            if (memcmp(want, n->s.mem.buf + (size_t)opt.size * (m + 1), opt.size) != 0)
                fail_exit(&n->s, "%s: message %u differs from the expected pattern", n->s.where, m);
            free(want);
        }
    }
    return 0;
}

static int cmatose_server(ndk_rt *rt)
{
    char why[256], where[1024];
    SOCKADDR_INET addr;
    ndk_tool_server *srv = NULL;
    struct cm_node *nodes = calloc(opt.connections, sizeof *nodes);
    int rc = 0;

    if (!nodes)
        return 1;
    printf("cmatose: starting server\n");
    if (opt.local) {
        if (ndk_tool_parse_ip(opt.local, &addr) != 0) {
            ndk_tool_err("bad bind address '%s'", opt.local);
            return 2;
        }
    } else {
        memset(&addr, 0, sizeof addr);
        addr.si_family = AF_UNSPEC;
    }
    ndk_tool_addr_set_port(&addr, opt.port);
    NTSTATUS st = ndk_tool_server_start(rt, &addr, opt.provider, 0, &srv, why, sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("%s", why);
        free(nodes);
        return 1;
    }
    if (opt.verbose)
        printf("ndkping --cmatose listening on %s\n", ndk_tool_server_where(srv, where, sizeof where));
    unsigned up = 0;
    for (; up < opt.connections; up++) {
        NDK_CONNECTOR *incoming;
        ndk_tool_adapter *ad;
        st = ndk_tool_server_next(srv, NDK_TOOL_INFINITE, &incoming, &ad);
        if (st != STATUS_SUCCESS) {
            rc = 1;
            break;
        }
        uint8_t pd[256];
        ULONG ird = 0, ord = 0, len = sizeof pd;
        memset(pd, 0, sizeof pd);
        if (ndk_tool_connector_data(incoming, &ird, &ord, pd, &len) == STATUS_SUCCESS)
            cm_print_pdata("client", pd, len);
        struct cm_node *n = &nodes[up];
        if (cm_setup(n, ad) != 0) {
            incoming->Dispatch->NdkReject(incoming, NULL, 0);
            ndk_tool_close(&incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
            rc = 1;
            break;
        }
        ULONG plen = opt.pdata ? (ULONG)strlen(opt.pdata) + 1 : 0;
        st = ndk_tool_conn_accept(&n->s.conn, incoming, 1, 1, opt.pdata, plen, NDK_TOOL_CONNECT_TIMEOUT_MS);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("accept failed: %s", ndk_tool_status(st));
            rc = 1;
            break;
        }
        ndk_tool_addr_str(&n->s.conn.peer, true, n->s.where, sizeof n->s.where);
    }
    if (rc == 0 && opt.count) {
        printf("initiating data transfers\n");
        for (unsigned i = 0; i < up && rc == 0; i++)
            rc = cm_send_all(&nodes[i], i);
        printf("completing sends\n");
        printf("receiving data transfers\n");
        for (unsigned i = 0; i < up && rc == 0; i++)
            rc = cm_recv_all(&nodes[i], i);
        if (rc == 0)
            printf("data transfers complete\n");
    }
    printf("cmatose: disconnecting\n");
    for (unsigned i = 0; i < opt.connections; i++)
        session_free(&nodes[i].s);
    printf("disconnected\n");
    ndk_tool_server_stop(srv);
    if (rc == 0)
        printf("ndkping --cmatose server: %u connection(s), %llu messages of %u bytes each way%s: ok\n", up,
               (unsigned long long)opt.count, opt.size, opt.validate ? ", data compared" : "");
    printf("test complete\nreturn status %d\n", rc);
    free(nodes);
    return rc;
}

static int cmatose_client(ndk_rt *rt)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDRSTRLEN];
    SOCKADDR_INET dst, local, src;
    ndk_rt_adapter_id id;
    ndk_tool_adapter ad;
    struct cm_node *nodes = calloc(opt.connections, sizeof *nodes);
    int rc = 0;

    if (!nodes)
        return 1;
    printf("cmatose: starting client\n");
    if (ndk_tool_parse_ip(opt.addr, &dst) != 0) {
        ndk_tool_err("bad server address '%s'", opt.addr);
        return 2;
    }
    ndk_tool_addr_set_port(&dst, opt.port);
    if (opt.local && ndk_tool_parse_ip(opt.local, &local) != 0) {
        ndk_tool_err("bad bind address '%s'", opt.local);
        return 2;
    }
    ndk_tool_addr_str(&dst, true, dst_s, sizeof dst_s);
    NTSTATUS st = ndk_tool_pick_adapter(rt, opt.local ? &local : NULL, &dst, opt.provider, 0, &id, &src, why, sizeof why);
    if (st == STATUS_SUCCESS)
        st = ndk_tool_adapter_open(rt, id, &ad);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, why[0] ? why : ndk_tool_status(st));
        free(nodes);
        return 1;
    }
    printf("cmatose: connecting\n");
    ULONG plen = opt.pdata ? (ULONG)strlen(opt.pdata) + 1 : 0;
    unsigned up = 0;
    for (; up < opt.connections; up++) {
        struct cm_node *n = &nodes[up];
        snprintf(n->s.where, sizeof n->s.where, "%s", dst_s);
        if (cm_setup(n, &ad) != 0) {
            rc = 1;
            break;
        }
        st = ndk_tool_conn_connect(&n->s.conn, &src, &dst, 1, 1, opt.pdata, plen, NDK_TOOL_CONNECT_TIMEOUT_MS);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("connect to %s failed: %s", dst_s, ndk_tool_status(st));
            rc = 1;
            break;
        }
        cm_print_pdata("server", n->s.conn.peer_data, n->s.conn.peer_data_len);
    }
    if (rc == 0 && opt.count) {
        printf("receiving data transfers\n");
        for (unsigned i = 0; i < up && rc == 0; i++)
            rc = cm_recv_all(&nodes[i], i);
        printf("sending replies\n");
        for (unsigned i = 0; i < up && rc == 0; i++)
            rc = cm_send_all(&nodes[i], i);
        if (rc == 0)
            printf("data transfers complete\n");
    }
    /* The server disconnects first; then we do. */
    for (unsigned i = 0; i < up && rc == 0; i++) {
        NDK_RESULT r[8];
        NTSTATUS wst = STATUS_SUCCESS;
        while (!ndk_tool_conn_disconnected(&nodes[i].s.conn)) {
            if (!ndk_tool_cq_wait(nodes[i].s.conn.cq, r, 8, NDK_TOOL_CONNECT_TIMEOUT_MS, &wst) &&
                wst != STATUS_CONNECTION_DISCONNECTED) {
                ndk_tool_err("%s: waiting for the server to disconnect: %s", dst_s, ndk_tool_status(wst));
                rc = 1;
                break;
            }
        }
    }
    for (unsigned i = 0; i < opt.connections; i++)
        session_free(&nodes[i].s);
    ndk_tool_adapter_close(&ad);
    if (rc == 0)
        printf("ndkping --cmatose client: %u connection(s), %llu messages of %u bytes each way%s: ok\n", up,
               (unsigned long long)opt.count, opt.size, opt.validate ? ", data compared" : "");
    printf("test complete\nreturn status %d\n", rc);
    free(nodes);
    return rc;
}

/* ============================================================================================ */
/* librdmacm rdma_server / rdma_client-compatible mode                                           */

/* librdmacm's examples/rdma_server.c and rdma_client.c: both sides post one 16-byte receive
 * before connecting / accepting; the client Sends 16 bytes as soon as it is connected, the
 * server Sends 16 bytes back once that arrived, then both disconnect. Their message buffers
 * are static and never written, so each side sends 16 zero bytes; that is what we send and
 * what we expect (the examples themselves compare nothing). */

#define RDMACM_DEFAULT_PORT 7471
#define RDMACM_MSG          16
/* Our receive buffer starts out as this pattern, so bytes a receive did not write show. */
#define RDMACM_CANARY       0xa5
/* A 16-byte exchange right after connecting: generous, the guests are emulated. */
#define RDMACM_WAIT_MS      NDK_TOOL_CONNECT_TIMEOUT_MS

enum { RC_RECV = 0, RC_SEND = RDMACM_MSG };

static int rdmacm_setup(struct session *s, ndk_tool_adapter *ad)
{
    NTSTATUS st = ndk_tool_conn_init(&s->conn, ad, 1, 1, 1, 1, 0, opt.poll);
    if (st == STATUS_SUCCESS)
        st = ndk_tool_mem_register(s->conn.pd, NULL, 2 * RDMACM_MSG, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &s->mem);
    if (st == STATUS_SUCCESS) {
        memset(s->mem.buf + RC_RECV, RDMACM_CANARY, RDMACM_MSG);
        memset(s->mem.buf + RC_SEND, 0, RDMACM_MSG);
        st = post_recv(s, 0, RC_RECV, RDMACM_MSG);
    }
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up the queue pair on %s failed: %s", ad->ifname, ndk_tool_status(st));
        return -1;
    }
    return 0;
}

/* Checks the one receive against the example's 16 zero bytes; exits with the reason if not. */
static void rdmacm_check(struct session *s, const char *sender)
{
    unsigned k = s->rq_head++ % 64;
    const uint8_t *r = s->mem.buf + RC_RECV;
    if (s->rq_bytes[k] != RDMACM_MSG)
        fail_exit(s, "%s: received %u bytes, expected %s's %u", s->where, s->rq_bytes[k], sender, RDMACM_MSG);
    for (unsigned i = 0; i < RDMACM_MSG; i++)
        if (r[i] != 0)
            fail_exit(s, "%s: received bytes differ from %s's %u zero bytes at byte %u (0x%02x)", s->where, sender,
                      RDMACM_MSG, i, r[i]);
}

static int rdmacm_client(ndk_rt *rt)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDRSTRLEN];
    SOCKADDR_INET dst, src;
    ndk_rt_adapter_id id;
    ndk_tool_adapter ad;
    struct session s;
    NTSTATUS st;

    memset(&s, 0, sizeof s);
    /* rdma_client's default server is 127.0.0.1. */
    if (ndk_tool_parse_ip(opt.addr ? opt.addr : "127.0.0.1", &dst) != 0) {
        ndk_tool_err("bad server address '%s'", opt.addr);
        return 2;
    }
    ndk_tool_addr_set_port(&dst, opt.port);
    ndk_tool_addr_str(&dst, true, dst_s, sizeof dst_s);
    snprintf(s.where, sizeof s.where, "%s", dst_s);
    st = ndk_tool_pick_adapter(rt, NULL, &dst, opt.provider, 0, &id, &src, why, sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, why);
        return 1;
    }
    st = ndk_tool_adapter_open(rt, id, &ad);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("opening the adapter failed: %s", ndk_tool_status(st));
        return 1;
    }
    if (rdmacm_setup(&s, &ad) != 0) {
        session_free(&s);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    /* rdma_connect(id, NULL): no private data. */
    st = ndk_tool_conn_connect(&s.conn, &src, &dst, 1, 1, NULL, 0, NDK_TOOL_CONNECT_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("connect to %s failed: %s", dst_s, ndk_tool_status(st));
        session_free(&s);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    if (opt.verbose)
        printf("ndkping --rdma-client: connected to %s from %s via %s (%s)\n", dst_s,
               ndk_tool_addr_str(&s.conn.local, true, why, sizeof why), ad.ifname, ad.provider);
    st = post_send(&s, RC_SEND, RDMACM_MSG);
    if (st != STATUS_SUCCESS)
        fail_exit(&s, "%s: posting Send failed: %s", dst_s, ndk_tool_status(st));
    wait_tag(&s, TAG_SEND, 1, RDMACM_WAIT_MS, "the Send completion");
    wait_tag(&s, TAG_RECV0, 1, RDMACM_WAIT_MS, "the server's 16-byte reply");
    rdmacm_check(&s, "rdma_server");
    session_free(&s);
    ndk_tool_adapter_close(&ad);
    printf("ndkping --rdma-client: sent %u zero bytes to %s, received %u bytes back, compared byte for byte with "
           "rdma_server's %u zero bytes: ok\n", RDMACM_MSG, dst_s, RDMACM_MSG, RDMACM_MSG);
    fflush(stdout);
    return 0;
}

static int rdmacm_server(ndk_rt *rt)
{
    char why[256], where[1024], peer[NDK_TOOL_ADDRSTRLEN];
    SOCKADDR_INET addr;
    ndk_tool_server *srv = NULL;
    NDK_CONNECTOR *incoming;
    ndk_tool_adapter *ad;
    struct session s;

    memset(&s, 0, sizeof s);
    if (opt.addr) {
        if (ndk_tool_parse_ip(opt.addr, &addr) != 0) {
            ndk_tool_err("bad address '%s'", opt.addr);
            return 2;
        }
    } else {
        /* rdma_server binds the wildcard: listen on IPv4 and IPv6. */
        memset(&addr, 0, sizeof addr);
        addr.si_family = AF_UNSPEC;
    }
    ndk_tool_addr_set_port(&addr, opt.port);
    NTSTATUS st = ndk_tool_server_start(rt, &addr, opt.provider, 0, &srv, why, sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("%s", why);
        return 1;
    }
    printf("ndkping --rdma-server listening on %s\n", ndk_tool_server_where(srv, where, sizeof where));
    fflush(stdout);
    st = ndk_tool_server_next(srv, NDK_TOOL_INFINITE, &incoming, &ad);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("no connection request: %s", ndk_tool_status(st));
        ndk_tool_server_stop(srv);
        return 1;
    }
    if (rdmacm_setup(&s, ad) != 0) {
        incoming->Dispatch->NdkReject(incoming, NULL, 0);
        ndk_tool_close(&incoming->Header, NDK_TOOL_OP_TIMEOUT_MS);
        session_free(&s);
        ndk_tool_server_stop(srv);
        return 1;
    }
    /* rdma_accept(id, NULL): no private data. */
    st = ndk_tool_conn_accept(&s.conn, incoming, 1, 1, NULL, 0, NDK_TOOL_CONNECT_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("accept failed: %s", ndk_tool_status(st));
        session_free(&s);
        ndk_tool_server_stop(srv);
        return 1;
    }
    ndk_tool_addr_str(&s.conn.peer, true, peer, sizeof peer);
    snprintf(s.where, sizeof s.where, "%s", peer);
    if (opt.verbose)
        printf("ndkping --rdma-server: connection from %s on %s\n", peer, ad->ifname);
    wait_tag(&s, TAG_RECV0, 1, RDMACM_WAIT_MS, "the client's 16-byte message");
    rdmacm_check(&s, "rdma_client");
    st = post_send(&s, RC_SEND, RDMACM_MSG);
    if (st != STATUS_SUCCESS)
        fail_exit(&s, "%s: posting Send failed: %s", peer, ndk_tool_status(st));
    wait_tag(&s, TAG_SEND, 1, RDMACM_WAIT_MS, "the Send completion");
    session_free(&s);
    ndk_tool_server_stop(srv);
    printf("ndkping --rdma-server: received %u bytes from %s, compared byte for byte with rdma_client's %u zero "
           "bytes: ok; sent %u zero bytes back\n", RDMACM_MSG, peer, RDMACM_MSG, RDMACM_MSG);
    fflush(stdout);
    return 0;
}

/* ============================================================================================ */
/* server loop (both modes)                                                                      */

static int run_server(ndk_rt *rt)
{
    char why[256], where[1024];
    SOCKADDR_INET addr;
    ndk_tool_server *srv = NULL;

    if (opt.rping) {
        /* rping's server binds INADDR_ANY unless -a says otherwise. */
        if (opt.addr) {
            if (ndk_tool_parse_ip(opt.addr, &addr) != 0) {
                ndk_tool_err("bad address '%s'", opt.addr);
                return 2;
            }
        } else {
            memset(&addr, 0, sizeof addr);
            addr.si_family = AF_INET;
        }
        ndk_tool_addr_set_port(&addr, opt.port);
    } else if (ndk_tool_parse_addr(opt.addr, opt.port, &addr, why, sizeof why) != 0) {
        ndk_tool_err("bad address %s", why);
        return 2;
    }
    NTSTATUS st = ndk_tool_server_start(rt, &addr, opt.provider, 0, &srv, why, sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("%s", why);
        return 1;
    }
    if (!opt.quiet && (!opt.rping || opt.verbose)) {
        printf("%s listening on %s\n", opt.rping ? "ndkping --rping" : "ndkping", ndk_tool_server_where(srv, where, sizeof where));
        fflush(stdout);
    }
    int rc = 0;
    bool once = opt.once || (opt.rping && !opt.persistent);
    for (;;) {
        NDK_CONNECTOR *conn;
        ndk_tool_adapter *ad;
        st = ndk_tool_server_next(srv, NDK_TOOL_INFINITE, &conn, &ad);
        if (st != STATUS_SUCCESS)
            break;
        int r = opt.rping ? rping_serve_one(conn, ad) : ping_serve_one(conn, ad);
        if (r)
            rc = r;
        if (once || ndk_tool_stopped())
            break;
    }
    ndk_tool_server_stop(srv);
    return rc;
}

/* ============================================================================================ */
/* command line                                                                                  */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ndkping -s [ADDR][:PORT] [--once] [options]\n"
            "       ndkping -c ADDR[:PORT] [-a LOCAL] [-S SIZE] [-C COUNT] [-i SECONDS] [-W SECONDS] [options]\n"
            "       ndkping --rping -s [-a ADDR] [-p PORT] [-S SIZE] [-P] [-v]\n"
            "       ndkping --rping -c -a ADDR [-I SOURCE] [-p PORT] [-S SIZE] [-C COUNT] [-v] [-V]\n"
            "RDMA connectivity check through the NDK adapter that serves the address.\n"
            "  -s ADDR[:PORT]   serve (default any address, port %u); IPv6 as [ADDR]:PORT\n"
            "  -c ADDR[:PORT]   Send/Receive ping-pong with a server\n"
            "  -a LOCAL         local address (picks the adapter; default: the route to ADDR)\n"
            "  -S SIZE          payload bytes (default 64)\n"
            "  -C COUNT         pings (default 4; 0 = until interrupted)\n"
            "  -i SECONDS       interval between pings (default 1)\n"
            "  -W SECONDS       time to wait for each reply (default 5)\n"
            "  --once           server: exit after the first client\n"
            "  --poll           busy-poll the CQ instead of waiting for notifications\n"
            "  --provider NAME  only adapters of this provider\n"
            "  -q               quiet: summary only\n"
            "rping mode (rdma-core rping's wire sequence; options as rping's):\n"
            "  -s | -c, -a ADDR (server address), -I SOURCE, -p PORT (7174), -S SIZE (64, max 65535),\n"
            "  -C COUNT (0 = forever), -v (print ping data), -V (validate; always done), -P (server:\n"
            "  keep serving), -d (debug), -q/-t accepted and ignored\n"
            "cmatose mode (rdma-core ucmatose's exchange; options as cmatose's):\n"
            "  ndkping --cmatose [-s SERVER_ADDR] [-b BIND_ADDR] [-c CONNECTIONS] [-C COUNT (10)]\n"
            "                    [-S SIZE (100)] [-p PORT (7471)] [--pdata TEXT] [-V]\n"
            "  without -s it serves; --pdata sends TEXT as connect/accept private data and the peer's\n"
            "  private data is printed; -V compares the messages (both ends must be ndkping)\n"
            "librdmacm rdma_server / rdma_client mode (one 16-byte Send each way, 16 zero bytes as the\n"
            "examples send, compared byte for byte):\n"
            "  ndkping --rdma-server [-s ADDR (any)] [-p PORT (%u)] [-v]\n"
            "  ndkping --rdma-client [-s SERVER (127.0.0.1)] [-p PORT (%u)] [-v]\n",
            PING_DEFAULT_PORT, RDMACM_DEFAULT_PORT, RDMACM_DEFAULT_PORT);
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    *out = strtoull(s, &end, 10);
    return *end ? -1 : 0;
}

static int parse_common_size(const char *s)
{
    uint64_t v;
    if (ndk_tool_parse_size(s, &v) != 0 || v == 0 || v > PING_MAX_SIZE) {
        ndk_tool_err("bad size '%s' (1..%u)", s, PING_MAX_SIZE);
        return -1;
    }
    opt.size = (uint32_t)v;
    return 0;
}

static int parse_rping_args(int argc, char **argv)
{
    static const struct option longs[] = {
        { "rping", no_argument, NULL, 'R' },
        { "provider", required_argument, NULL, 'X' },
        { "poll", no_argument, NULL, 'B' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    opt.count = 0;          /* rping: ping forever unless -C */
    opt.port = PING_DEFAULT_PORT;
    while ((c = getopt_long(argc, argv, "a:I:Pp:C:S:t:scvVdqh", longs, NULL)) != -1) {
        switch (c) {
        case 'R': break;
        case 'a': opt.addr = optarg; break;
        case 'I': opt.local = optarg; break;
        case 'P': opt.persistent = true; break;
        case 'p': {
            uint64_t v;
            if (parse_u64(optarg, &v) != 0 || v > 65535) {
                ndk_tool_err("bad port '%s'", optarg);
                return -1;
            }
            opt.port = (uint16_t)v;
            break;
        }
        case 'C':
            if (parse_u64(optarg, &opt.count) != 0) {
                ndk_tool_err("bad count '%s'", optarg);
                return -1;
            }
            break;
        case 'S':
            if (parse_common_size(optarg) != 0)
                return -1;
            if (opt.size > RPING_MAX_SIZE) {
                ndk_tool_err("rping sizes go up to %u bytes", RPING_MAX_SIZE);
                return -1;
            }
            break;
        case 't': case 'q': case 'V': case 'd': break;
        case 's': opt.server = true; break;
        case 'c': opt.client = true; break;
        case 'v': opt.verbose++; break;
        case 'X': opt.provider = optarg; break;
        case 'B': opt.poll = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc || opt.server == opt.client) {
        usage(stderr);
        return -1;
    }
    return 0;
}

static int parse_cmatose_args(int argc, char **argv)
{
    static const struct option longs[] = {
        { "cmatose", no_argument, NULL, 'M' },
        { "pdata", required_argument, NULL, 'D' },
        { "provider", required_argument, NULL, 'X' },
        { "poll", no_argument, NULL, 'B' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    uint64_t v;
    opt.count = 10;
    opt.size = 100;
    opt.connections = 1;
    opt.port = CMATOSE_DEFAULT_PORT;
    while ((c = getopt_long(argc, argv, "s:b:f:P:c:C:S:t:p:mVvh", longs, NULL)) != -1) {
        switch (c) {
        case 'M': break;
        case 's': opt.addr = optarg; break;
        case 'b': opt.local = optarg; break;
        case 'f': case 'P': case 't': case 'm': break;
        case 'c':
            if (parse_u64(optarg, &v) != 0 || v < 1 || v > CMATOSE_MAX_CONNS) {
                ndk_tool_err("bad connection count '%s' (1..%u)", optarg, CMATOSE_MAX_CONNS);
                return -1;
            }
            opt.connections = (unsigned)v;
            break;
        case 'C':
            if (parse_u64(optarg, &opt.count) != 0 || opt.count > 100000) {
                ndk_tool_err("bad message count '%s'", optarg);
                return -1;
            }
            break;
        case 'S':
            if (parse_common_size(optarg) != 0)
                return -1;
            break;
        case 'p':
            if (parse_u64(optarg, &v) != 0 || v > 65535) {
                ndk_tool_err("bad port '%s'", optarg);
                return -1;
            }
            opt.port = (uint16_t)v;
            break;
        case 'D':
            if (strlen(optarg) > 200) {
                ndk_tool_err("--pdata takes up to 200 characters");
                return -1;
            }
            opt.pdata = optarg;
            break;
        case 'V': opt.validate = true; break;
        case 'v': opt.verbose++; break;
        case 'X': opt.provider = optarg; break;
        case 'B': opt.poll = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return -1;
    }
    opt.client = opt.addr != NULL;
    opt.server = !opt.client;
    return 0;
}

static int parse_rdmacm_args(int argc, char **argv)
{
    static const struct option longs[] = {
        { "rdma-server", no_argument, NULL, 'Y' },
        { "rdma-client", no_argument, NULL, 'Z' },
        { "provider", required_argument, NULL, 'X' },
        { "poll", no_argument, NULL, 'B' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    uint64_t v;
    opt.port = RDMACM_DEFAULT_PORT;
    while ((c = getopt_long(argc, argv, "s:p:vh", longs, NULL)) != -1) {
        switch (c) {
        case 'Y': opt.server = true; break;
        case 'Z': opt.client = true; break;
        case 's': opt.addr = optarg; break;
        case 'p':
            if (parse_u64(optarg, &v) != 0 || v > 65535) {
                ndk_tool_err("bad port '%s'", optarg);
                return -1;
            }
            opt.port = (uint16_t)v;
            break;
        case 'v': opt.verbose++; break;
        case 'X': opt.provider = optarg; break;
        case 'B': opt.poll = true; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc || opt.server == opt.client) {
        usage(stderr);
        return -1;
    }
    return 0;
}

static int parse_ping_args(int argc, char **argv)
{
    static const struct option longs[] = {
        { "once", no_argument, NULL, 'O' },
        { "poll", no_argument, NULL, 'B' },
        { "provider", required_argument, NULL, 'X' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    opt.port = PING_DEFAULT_PORT;
    while ((c = getopt_long(argc, argv, "s::c:a:S:C:i:W:p:qvh", longs, NULL)) != -1) {
        switch (c) {
        case 's':
            opt.server = true;
            /* -s takes an optional address, also as the next word ("-s 127.0.0.1"). */
            if (optarg)
                opt.addr = optarg;
            else if (optind < argc && argv[optind][0] != '-')
                opt.addr = argv[optind++];
            break;
        case 'c': opt.client = true; opt.addr = optarg; break;
        case 'a': opt.local = optarg; break;
        case 'S':
            if (parse_common_size(optarg) != 0)
                return -1;
            break;
        case 'C':
            if (parse_u64(optarg, &opt.count) != 0) {
                ndk_tool_err("bad count '%s'", optarg);
                return -1;
            }
            break;
        case 'i': case 'W': {
            char *end;
            double v = strtod(optarg, &end);
            if (*end || v < 0 || v > 3600) {
                ndk_tool_err("bad time '%s' (seconds)", optarg);
                return -1;
            }
            if (c == 'i')
                opt.interval = v;
            else
                opt.wait_s = v > 0 ? v : 0.001;
            break;
        }
        case 'p': {
            uint64_t v;
            if (parse_u64(optarg, &v) != 0 || v > 65535) {
                ndk_tool_err("bad port '%s'", optarg);
                return -1;
            }
            opt.port = (uint16_t)v;
            break;
        }
        case 'q': opt.quiet = true; break;
        case 'v': opt.verbose++; break;
        case 'O': opt.once = true; break;
        case 'B': opt.poll = true; break;
        case 'X': opt.provider = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc || opt.server == opt.client) {
        usage(stderr);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    ndk_tool_set_progname("ndkping");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rping"))
            opt.rping = true;
        if (!strcmp(argv[i], "--cmatose"))
            opt.cmatose = true;
        if (!strcmp(argv[i], "--rdma-server") || !strcmp(argv[i], "--rdma-client"))
            opt.rdmacm = true;
    }
    if (opt.rping + opt.cmatose + opt.rdmacm > 1) {
        ndk_tool_err("--rping, --cmatose and --rdma-server/--rdma-client exclude each other");
        return 2;
    }
    if ((opt.rping     ? parse_rping_args(argc, argv)
         : opt.cmatose ? parse_cmatose_args(argc, argv)
         : opt.rdmacm  ? parse_rdmacm_args(argc, argv)
                       : parse_ping_args(argc, argv)) != 0)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    ndk_tool_install_signals();

    ndk_rt *rt = NULL;
    NTSTATUS st = ndk_tool_rt_open(&rt);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("opening the NDK runtime failed: %s", ndk_tool_status(st));
        return 1;
    }
    int rc;
    if (opt.cmatose)
        rc = opt.server ? cmatose_server(rt) : cmatose_client(rt);
    else if (opt.rdmacm)
        rc = opt.server ? rdmacm_server(rt) : rdmacm_client(rt);
    else if (opt.server)
        rc = run_server(rt);
    else
        rc = opt.rping ? rping_client(rt) : ping_client(rt);
    ndk_rt_close(rt);
    return rc;
}
