/* server.c - ndkperf -s: accepts test connections (the client states the test in its connect
 * private data), one thread per connection; the data path of a test runs in the CQ
 * notification callback (busy-polled on the thread with --poll) up to the client's DONE.
 *
 * The server stays up for legitimate clients: every session's memory is reserved from one
 * budget (--max-mem) before it is accepted, a session whose client sends nothing within
 * --idle-timeout is closed, and a refused request gets its reason in the reject's private data
 * (struct perf_refusal) as well as in the server's log. */
#define _GNU_SOURCE
#include <endian.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ndk_sync_time.h"
#include "ndk_tool.h"
#include "ndk_tool_server.h"
#include "ndk_tool_stat.h"
#include "ndkperf.h"

/* What a session costs beyond its registration: the provider's queues and buffers for one QP
 * and CQ, and the session thread's stack in use; counted against the budget as well. */
#define SRV_SESSION_OVERHEAD (256u << 10)
/* Sessions at once, whatever the budget says (each holds a thread and descriptors). */
#define SRV_MAX_SESSIONS     4096u

/* write --lat: where the source half of the server's data buffer starts. */
#define SRV_LAT_SRC_OFF(max) (((max) + 63) & ~63ull)

/* Bytes reserved by live sessions; the accept loop adds, a session's thread subtracts. */
static uint64_t srv_mem_used;

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
    bool              started;      /* the client sent its first message */
    uint64_t          cost;         /* bytes reserved from the budget */
    uint64_t          mismatches;
    uint64_t          data_rx, reposted, credited, credit_batch;
    uint32_t          recv_bufs;     /* receives are reposted into slots 0..recv_bufs-1 */
    /* write --lat by last-byte polling (START_LAST_BYTE) */
    bool              last_byte;
    uint64_t          lb_size;       /* the running phase's size; 0 between phases */
    uint64_t          lb_seq;        /* messages seen; the last byte carries (uint8_t)lb_seq */
    uint64_t          wb_done;       /* RDMA Writes back completed */
    /* control replies waiting for a free ring slot */
    int               pending_type;
    uint32_t          pending_status;
};

static void srv_flush_pending(struct srv_conn *sc)
{
    struct perf_conn *pc = &sc->pc;
    NTSTATUS st = STATUS_SUCCESS;
    if (sc->pending_type && perf_ctl_room(pc)) {
        st = perf_send_ctl(pc, (uint32_t)sc->pending_type, sc->pending_status, ndk_tool_stat_cpu_us(),
                           ndk_sync_time_now_ns(), sc->data_rx, 0);
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

    sc->started = true;
    if (perf_is_ctl(p, bytes)) {
        struct perf_ctl m;
        memcpy(&m, p, sizeof m);
        uint32_t type = be32toh(m.type), status = 0;
        if (type == CTL_PHASE_END && sc->h.op == OP_WRITE && (sc->h.flags & HELLO_VERIFY) &&
            !(sc->h.flags & HELLO_LAT)) {
            /* Every slot holds the pattern of the last write aimed at it. */
            uint64_t size = be64toh(m.a), count = be64toh(m.b), slots = be64toh(m.c), seed = be64toh(m.d);
            for (uint64_t s = 0; s < slots && s < count; s++) {
                uint64_t last = s + slots * ((count - 1 - s) / slots), bad = 0;
                if ((s + 1) * size > pc->data_len || !perf_check(perf_data(pc) + s * size, size, seed + last, &bad)) {
                    perf_note(pc, "%s: slot %llu of the %llu-byte phase differs at byte %llu", pc->s.where,
                              (unsigned long long)s, (unsigned long long)size, (unsigned long long)bad);
                    sc->mismatches++;
                    break;
                }
            }
        }
        if (type == CTL_START) {
            uint64_t how = be64toh(m.a), size = be64toh(m.b), bufs = be64toh(m.c);
            if ((how & START_LAST_BYTE) && sc->h.op == OP_WRITE && (sc->h.flags & HELLO_LAT)) {
                if (size > sc->h.max_size || size > sc->h.client_buf_len) {
                    perf_fail(pc, "write of %llu bytes does not fit the buffers", (unsigned long long)size);
                    return false;
                }
                sc->last_byte = true;
                sc->lb_size = size;
            }
            if ((how & START_RECV_SHARED) && sc->h.op == OP_SEND && !(sc->h.flags & (HELLO_LAT | HELLO_VERIFY)) &&
                bufs >= 1 && bufs < sc->recv_bufs)
                sc->recv_bufs = (uint32_t)bufs;
        } else if (type == CTL_PHASE_END) {
            sc->lb_size = 0;
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
            if (!perf_check(p, bytes, sc->data_rx, &bad)) {
                perf_note(pc, "%s: message %llu differs at byte %llu", pc->s.where, (unsigned long long)sc->data_rx,
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
            if ((sc->h.flags & HELLO_VERIFY) && !perf_check(perf_data(pc), size, seq, &bad))
                sc->mismatches++;
            NDK_SGE sge = ndk_sync_mem_sge(&pc->s.mem, pc->off_data, size);
            ULONG flags = size <= sc->h.inline_size ? NDK_OP_FLAG_INLINE : 0;
            st = pc->s.conn.qp->Dispatch->NdkWrite(pc->s.conn.qp, TAG(K_WB, 0), &sge, 1, sc->h.client_buf,
                                                 sc->h.client_token, flags);
            if (st != STATUS_SUCCESS) {
                perf_fail(pc, "posting RDMA Write failed: %s", ndk_tool_status(st));
                return false;
            }
        }
        ULONG flags = bytes <= sc->h.inline_size ? NDK_OP_FLAG_INLINE : 0;
        st = ndk_tool_session_send(&pc->s, TAG(K_ECHO, k), (size_t)k * pc->s.rbuf, bytes, flags);
        if (st != STATUS_SUCCESS) {
            perf_fail(pc, "posting the echo failed: %s", ndk_tool_status(st));
            return false;
        }
        return true;            /* reposted when the echo completes */
    } else {
        perf_fail(pc, "unexpected %u-byte message", bytes);
        return false;
    }
    st = perf_post_recv(pc, k % sc->recv_bufs);
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
            if (!sc->done && !ndk_tool_conn_disconnected(&pc->s.conn) && r[i].Status != STATUS_CANCELLED)
                perf_fail(pc, "%s completed with %s", perf_kind_name(kind, (enum perf_op)sc->h.op),
                          ndk_tool_status(r[i].Status));
            else if (!sc->done)
                perf_fail(pc, "the client went away before the end of the test");
            sc->over = true;
            return false;
        }
        switch (kind) {
        case K_CTL: pc->ctl_done++; break;
        case K_WB: sc->wb_done++; break;
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
    ULONG n = ndk_tool_cq_wait(sc->pc.s.conn.cq, r, 64, sc->done ? 10000 : NDK_TOOL_INFINITE, &st);
    if (!n) {
        srv_wait_failed(sc, st);
        return false;
    }
    return srv_handle(sc, r, n);
}

/* write --lat by last-byte polling, as ib_write_lat does it: spins on the last byte of the
 * target half of the data buffer (the client writes each message so that it ends there) while
 * polling the CQ, which lets the provider progress and serves the control messages; answers
 * each message with an RDMA Write of the same size from the other half, ending at the end of
 * the client's sink, its last byte the message's tag. Session thread, busy-polls until DONE or
 * failure. */
static void srv_last_byte_run(struct srv_conn *sc)
{
    struct perf_conn *pc = &sc->pc;
    uint64_t max = sc->h.max_size, src_off = SRV_LAT_SRC_OFF(max);
    volatile uint8_t *last = perf_data(pc) + max - 1;
    uint8_t *scratch = (sc->h.flags & HELLO_VERIFY) ? malloc(max) : NULL;
    NDK_RESULT r[64];

    if ((sc->h.flags & HELLO_VERIFY) && !scratch) {
        perf_fail(pc, "out of memory");
        sc->over = true;
        return;
    }
    while (!sc->done && !sc->over && !ndk_tool_stopped()) {
        ULONG n = ndk_tool_cq_poll(pc->s.conn.cq, r, 64);
        if (n && !srv_handle(sc, r, n))
            break;
        if (!n && ndk_tool_conn_disconnected(&pc->s.conn)) {
            srv_wait_failed(sc, STATUS_CONNECTION_DISCONNECTED);
            break;
        }
        uint64_t size = sc->lb_size;
        /* The source is rewritten only once the previous answer's Write has completed. */
        if (!size || sc->wb_done != sc->lb_seq || perf_peek(last) != (uint8_t)(sc->lb_seq + 1))
            continue;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        sc->lb_seq++;
        if ((sc->h.flags & HELLO_VERIFY) &&
            !perf_last_byte_check(perf_data(pc) + max - size, size, sc->lb_seq, scratch)) {
            perf_note(pc, "%s: write %llu of %llu bytes differs", pc->s.where, (unsigned long long)sc->lb_seq,
                      (unsigned long long)size);
            sc->mismatches++;
        }
        uint8_t *src = perf_data(pc) + src_off;
        if (sc->h.flags & HELLO_VERIFY)
            perf_last_byte_fill(src, size, sc->lb_seq);
        else
            src[size - 1] = (uint8_t)sc->lb_seq;
        NDK_SGE sge = ndk_sync_mem_sge(&pc->s.mem, pc->off_data + src_off, (ULONG)size);
        ULONG flags = size <= sc->h.inline_size ? NDK_OP_FLAG_INLINE : 0;
        NTSTATUS st = pc->s.conn.qp->Dispatch->NdkWrite(pc->s.conn.qp, TAG(K_WB, sc->lb_seq), &sge, 1,
                                                      sc->h.client_buf + sc->h.client_buf_len - size,
                                                      sc->h.client_token, flags);
        if (st != STATUS_SUCCESS) {
            perf_fail(pc, "posting RDMA Write failed: %s", ndk_tool_status(st));
            sc->over = true;
            break;
        }
    }
    free(scratch);
}

/* The session's receive pool and data buffer for the test in h (host order), and what it
 * costs in all (the registration rounded as ndk_tool_session lays it out, plus overhead). */
static uint64_t srv_layout(const struct perf_hello *h, uint32_t *nrecv, uint32_t *rbuf, uint64_t *data_len)
{
    uint64_t rmax = h->max_size > CTL_SIZE ? h->max_size : CTL_SIZE;
    *nrecv = 8;
    *rbuf = CTL_SIZE;
    *data_len = 0;
    if (h->op == OP_SEND) {
        *rbuf = (uint32_t)rmax;
        *nrecv = (h->flags & HELLO_LAT) ? 4 + SERVER_SPARE_RECV : h->depth + SERVER_SPARE_RECV;
    } else if ((h->flags & HELLO_LAT) && h->op == OP_WRITE) {
        *data_len = SRV_LAT_SRC_OFF(h->max_size) + h->max_size;   /* target, then last-byte's source */
    } else if (h->flags & HELLO_LAT) {
        *data_len = h->max_size;
    } else {
        *data_len = h->max_size * h->slots;
    }
    uint64_t slots = ((uint64_t)*nrecv * *rbuf + 4095) & ~4095ull;
    return slots + PERF_CTL_AREA + ((*data_len + 4095) & ~4095ull) + SRV_SESSION_OVERHEAD;
}

/* Waits on the session's thread for the client's first message, at most --idle-timeout;
 * false when the session is over (closed for idleness, or failed). */
static bool srv_wait_start(struct srv_conn *sc)
{
    uint64_t deadline = ndk_sync_time_now_ns() + (uint64_t)(perf_opt.idle_timeout * 1e9);
    while (!sc->started && !sc->over) {
        NDK_RESULT r[64];
        NTSTATUS st;
        uint64_t now = ndk_sync_time_now_ns();
        int left = now < deadline ? (int)((deadline - now + 999999) / 1000000) : 0;
        ULONG n = left ? ndk_tool_cq_wait(sc->pc.s.conn.cq, r, 64, left, &st) : 0;
        if (!n) {
            if (!left || st == STATUS_IO_TIMEOUT)
                perf_fail(&sc->pc, "closing the session: the client sent nothing within %g s (--idle-timeout)",
                          perf_opt.idle_timeout);
            else
                srv_wait_failed(sc, st);
            sc->over = true;
            return false;
        }
        if (!srv_handle(sc, r, n))
            return false;
    }
    return !sc->over;
}

static void srv_conn_end(struct srv_conn *sc)
{
    __atomic_sub_fetch(&srv_mem_used, sc->cost, __ATOMIC_RELAXED);
    __atomic_store_n(&sc->finished, 1, __ATOMIC_RELEASE);
}

static void *srv_conn_main(void *arg)
{
    struct srv_conn *sc = arg;
    struct perf_conn *pc = &sc->pc;
    struct perf_hello *h = &sc->h;
    NTSTATUS st;
    char peer[NDK_TOOL_ADDR_STRLEN];
    uint32_t nrecv, rbuf;
    uint64_t data_len;

    srv_layout(h, &nrecv, &rbuf, &data_len);
    sc->recv_bufs = nrecv;
    ULONG inl = h->inline_size < sc->ad->info.MaxInlineDataSize ? h->inline_size : sc->ad->info.MaxInlineDataSize;
    h->inline_size = inl;
    st = perf_conn_open(pc, sc->ad, nrecv, rbuf, 16, inl, data_len);
    for (uint32_t k = 0; st == STATUS_SUCCESS && k < nrecv; k++)
        st = perf_post_recv(pc, k);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up a connection failed: %s", ndk_tool_status(st));
        ndk_tool_conn_reject(sc->incoming, NULL, 0);
        ndk_tool_session_close(&pc->s);
        sc->rc = 1;
        srv_conn_end(sc);
        return NULL;
    }
    if (h->op == OP_READ)
        perf_read_fill(perf_data(pc), 0, data_len);
    /* Credits go back every quarter of the window, and with large messages once per MiB
     * received, so that freed receives are not held back for several MiB. Credit messages are
     * not credited themselves: with depth / batch at most CLIENT_RECVS / 2 of them can be
     * unread at the client, whose receives they (and the one ACK) must find posted. */
    uint64_t batch = h->depth / 4 ? h->depth / 4 : 1, min_batch = (h->depth + CLIENT_RECVS / 2 - 1) / (CLIENT_RECVS / 2);
    if (batch > (1u << 20) / h->max_size)
        batch = (1u << 20) / h->max_size;
    sc->credit_batch = batch > min_batch ? batch : min_batch ? min_batch : 1;

    struct perf_accept acc;
    memset(&acc, 0, sizeof acc);
    memcpy(acc.magic, PERF_MAGIC, sizeof PERF_MAGIC);
    acc.version = htobe16(PERF_VERSION);
    acc.credits = htobe32(h->op == OP_SEND ? h->depth : 0);
    acc.buf = htobe64((uint64_t)(uintptr_t)perf_data(pc));
    acc.token = htobe32(pc->s.mem.rtoken);
    /* write --lat: the client sees the target half only. */
    acc.buf_len = htobe32((uint32_t)(h->op == OP_WRITE && (h->flags & HELLO_LAT) ? h->max_size : data_len));
    acc.slots = htobe32(h->slots);
    ULONG ird = sc->ad->info.MaxInboundReadLimit, ord = sc->ad->info.MaxOutboundReadLimit;
    st = ndk_tool_conn_accept(&pc->s.conn, sc->incoming, ird, ord, &acc, sizeof acc, NDK_TOOL_CONN_TIMEOUT_MS);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("accept failed: %s", ndk_tool_status(st));
        ndk_tool_session_close(&pc->s);
        sc->rc = 1;
        srv_conn_end(sc);
        return NULL;
    }
    ndk_tool_addr_str(&pc->s.conn.peer, true, peer, sizeof peer);
    snprintf(pc->s.where, sizeof pc->s.where, "%s", peer);
    if (perf_opt.cli.verbose)
        fprintf(stderr, "ndkperf: %s: %s %s test, up to %llu bytes, depth %u, connection %u of %u\n", peer,
                perf_op_name[h->op], (h->flags & HELLO_LAT) ? "latency" : "bandwidth", (unsigned long long)h->max_size,
                h->depth, h->conn_index + 1, h->conn_count);
    /* The test itself in the notification callback (busy-polled here with --poll), once the
     * client has started it. */
    if (srv_wait_start(sc) && !sc->done && sc->last_byte) {
        srv_last_byte_run(sc);
    } else if (!sc->over && !sc->done) {
        st = ndk_tool_cq_run(pc->s.conn.cq, true, NDK_TOOL_INFINITE, srv_handler, NULL, sc);
        if (st != STATUS_SUCCESS)
            srv_wait_failed(sc, st);
    }
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
    } else if (!perf_opt.quiet) {
        if (perf_opt.ndkperfcmd)
            printf("ndkperf: %s test with %s completes\n", perf_opt.testtype ? perf_opt.testtype : perf_op_name[h->op], peer);
        else
            printf("%s: %s %s test finished%s\n", peer, perf_op_name[h->op], (h->flags & HELLO_LAT) ? "latency" : "bandwidth",
                   (h->flags & HELLO_VERIFY) ? ", payload verified" : "");
        fflush(stdout);
    }
    ndk_tool_session_close(&pc->s);
    srv_conn_end(sc);
    return NULL;
}

/* Refuses a connection request: the reason goes to the log and, in the reject's private data,
 * to the client. */
static void srv_refuse(NDK_CONNECTOR *incoming, uint16_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void srv_refuse(NDK_CONNECTOR *incoming, uint16_t code, const char *fmt, ...)
{
    struct perf_refusal r;
    char peer[NDK_TOOL_ADDR_STRLEN] = "a client";
    SOCKADDR_INET a;
    ULONG alen = sizeof a;
    va_list ap;

    memset(&r, 0, sizeof r);
    memcpy(r.magic, PERF_MAGIC, sizeof PERF_MAGIC);
    r.version = htobe16(PERF_VERSION);
    r.status = htobe16(code);
    va_start(ap, fmt);
    vsnprintf(r.reason, sizeof r.reason, fmt, ap);
    va_end(ap);
    memset(&a, 0, sizeof a);
    if (incoming->Dispatch->NdkGetPeerAddress(incoming, (PSOCKADDR)&a, &alen) == STATUS_SUCCESS)
        ndk_tool_addr_str(&a, true, peer, sizeof peer);
    ndk_tool_err("refusing %s: %s", peer, r.reason);
    ndk_tool_conn_reject(incoming, &r, (ULONG)(offsetof(struct perf_refusal, reason) + strlen(r.reason) + 1));
}

/* Joins the sessions that ended (all of them with all); returns the last failing status. */
static int srv_reap(struct srv_conn **conns, unsigned *nconns, bool all)
{
    int rc = 0;
    for (unsigned i = 0; i < *nconns;) {
        struct srv_conn *sc = conns[i];
        if (all || __atomic_load_n(&sc->finished, __ATOMIC_ACQUIRE)) {
            pthread_join(sc->thread, NULL);
            if (sc->rc)
                rc = sc->rc;
            free(sc);
            conns[i] = conns[--*nconns];
        } else {
            i++;
        }
    }
    return rc;
}

int srv_run(ndk_rt *rt)
{
    char why[256], where[1024];
    SOCKADDR_INET addr;
    ndk_tool_server *srv = NULL;
    struct srv_conn **conns = calloc(SRV_MAX_SESSIONS, sizeof *conns);
    unsigned nconns = 0, expected = 0;
    int rc = 0;

    if (ndk_tool_addr_parse(perf_opt.cli.addr, PERF_DEFAULT_PORT, &addr, why, sizeof why) != 0) {
        ndk_tool_err("bad address %s", why);
        return 2;
    }
    if (!conns) {
        ndk_tool_err("out of memory");
        return 1;
    }
    NTSTATUS st = ndk_tool_server_start(rt, &addr, perf_opt.cli.provider, perf_opt.server_if, &srv, why, sizeof why);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("%s", why);
        free(conns);
        return 1;
    }
    if (!perf_opt.quiet) {
        printf("ndkperf server listening on %s\n", ndk_tool_server_where(srv, where, sizeof where));
        fflush(stdout);
    }
    for (;;) {
        NDK_CONNECTOR *incoming;
        ndk_tool_adapter *ad;
        int timeout = NDK_TOOL_INFINITE;
        if (perf_opt.listen_timeout > 0 && nconns == 0)
            timeout = (int)(perf_opt.listen_timeout * 1000);
        else if (perf_opt.once && expected && nconns >= expected)
            break;
        /* Reap ended sessions so a long-running server does not pile them up. */
        if (!perf_opt.once) {
            int r = srv_reap(conns, &nconns, false);
            if (r)
                rc = r;
        }
        st = ndk_tool_server_next(srv, perf_opt.once ? (nconns ? 200 : timeout) : 200, &incoming, &ad);
        if (st == STATUS_IO_TIMEOUT) {
            if (nconns == 0 && perf_opt.listen_timeout > 0) {
                ndk_tool_err("no client connected within %g s", perf_opt.listen_timeout);
                rc = 1;
                break;
            }
            continue;
        }
        if (st != STATUS_SUCCESS)
            break;
        struct srv_conn *sc = calloc(1, sizeof *sc);
        uint8_t hbuf[256];          /* RDS can exceed the hello: IB pads a REQ to 56 bytes */
        ULONG ird = 0, ord = 0, len = sizeof hbuf;
        memset(hbuf, 0, sizeof hbuf);
        st = ndk_tool_conn_data(incoming, &ird, &ord, hbuf, &len);
        bool ok = sc && st == STATUS_SUCCESS && perf_hello_decode(hbuf, len, &sc->h);
        if (ok) {
            ok = sc->h.op >= OP_WRITE && sc->h.op <= OP_SEND && sc->h.max_size >= 1 &&
                 sc->h.max_size <= ad->info.MaxTransferLength && sc->h.depth >= 1 && sc->h.depth <= 4096 &&
                 sc->h.slots >= 1 && sc->h.slots <= 4096 && sc->h.max_size * sc->h.slots <= 4 * PERF_MEM_BUDGET &&
                 sc->h.conn_count >= 1 && sc->h.conn_count <= MAX_CONNS;
        }
        if (!ok) {
            srv_refuse(incoming, PERF_REFUSED_BAD_REQUEST, "not a valid ndkperf request");
            free(sc);
            continue;
        }
        uint32_t nrecv, rbuf;
        uint64_t data_len, used = __atomic_load_n(&srv_mem_used, __ATOMIC_RELAXED);
        sc->cost = srv_layout(&sc->h, &nrecv, &rbuf, &data_len);
        if (nconns >= SRV_MAX_SESSIONS) {
            srv_refuse(incoming, PERF_REFUSED_BUSY, "the server runs %u sessions, its maximum", nconns);
            free(sc);
            continue;
        }
        if (sc->cost > perf_opt.max_mem - (used < perf_opt.max_mem ? used : perf_opt.max_mem)) {
            srv_refuse(incoming, PERF_REFUSED_MEMORY,
                       "the test needs %llu MiB of memory; %llu MiB of the server's %llu MiB budget (--max-mem) are free",
                       (unsigned long long)(sc->cost >> 20),
                       (unsigned long long)((used < perf_opt.max_mem ? perf_opt.max_mem - used : 0) >> 20),
                       (unsigned long long)(perf_opt.max_mem >> 20));
            free(sc);
            continue;
        }
        __atomic_add_fetch(&srv_mem_used, sc->cost, __ATOMIC_RELAXED);
        sc->incoming = incoming;
        sc->ad = ad;
        if (!expected)
            expected = sc->h.conn_count;
        if (pthread_create(&sc->thread, NULL, srv_conn_main, sc) != 0) {
            __atomic_sub_fetch(&srv_mem_used, sc->cost, __ATOMIC_RELAXED);
            srv_refuse(incoming, PERF_REFUSED_BUSY, "the server cannot start another session thread");
            free(sc);
            continue;
        }
        conns[nconns++] = sc;
    }
    int r = srv_reap(conns, &nconns, true);
    if (r)
        rc = r;
    free(conns);
    ndk_tool_server_stop(srv);
    return rc;
}
