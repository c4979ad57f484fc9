/* client.c - ndkperf -c: connects the test's connections, runs its phases (one size each;
 * bandwidth keeps depth requests in flight, latency one at a time) with the data path in the
 * CQ notification callback (busy-polled with --poll), and prints the perftest-style table or
 * JSON. One thread per connection; the phases are synchronised by a barrier. */
#define _GNU_SOURCE
#include <endian.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ndk_sync_time.h"
#include "ndk_tool.h"
#include "ndk_tool_json.h"
#include "ndk_tool_stat.h"
#include "ndkperf.h"

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
    uint64_t         cur_size, cur_seed, lat_seq;   /* lat_seq: last-byte tags are (uint8_t)lat_seq */
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
    /* --lat: receives consumed by a batch are reposted after the next request is posted, so
     * that the repost is not on the round trip's path (the other CLIENT_RECVS - 1 stay posted
     * for the answer). */
    bool             defer_repost;
    unsigned         nrepost;
    uint32_t         repost[CLIENT_RECVS];
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
    bool              last_byte;        /* write --lat by last-byte polling */
    uint64_t          start_how;        /* CTL_START's a: START_* */
    uint32_t          recv_shared;      /* START_RECV_SHARED: the server's receive buffers */
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
            cli_abort(cc, "%s completed with %s", perf_kind_name(kind, perf_opt.op), ndk_tool_status(r[i].Status));
            return false;
        }
        switch (kind) {
        case K_DATA:
            cc->data_done++;
            if (perf_opt.op == OP_READ && perf_opt.verify && !perf_opt.lat) {
                uint64_t slot = idx % cc->slots, bad;
                if (!perf_read_check(perf_data(pc) + slot * cc->cur_size, slot * cc->cur_size, cc->cur_size, &bad)) {
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
            if (perf_is_ctl(p, bytes)) {
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
                if (perf_opt.verify && perf_opt.lat) {
                    uint64_t bad;
                    bool ok = true;
                    if (perf_opt.op == OP_SEND)
                        ok = bytes == cc->cur_size && perf_check(p, bytes, cc->lat_seq, &bad);
                    else if (perf_opt.op == OP_WRITE)    /* the sink the server wrote back into */
                        ok = perf_check(perf_data(pc) + (pc->data_len - 64) / 2, cc->cur_size, cc->lat_seq, &bad);
                    if (!ok)
                        cc->verify_fail++;
                }
            }
            if (cc->defer_repost && cc->nrepost < CLIENT_RECVS) {
                cc->repost[cc->nrepost++] = k;
            } else if ((st = perf_post_recv(pc, k)) != STATUS_SUCCESS) {
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
    ULONG n = ndk_tool_cq_wait(cc->pc.s.conn.cq, r, 64, timeout_ms, &st);
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

/* more: another request follows at once (NDK_OP_FLAG_DEFER, §5.5.4: the provider may hold
 * this one until a request without it). */
static NTSTATUS cli_post_data(struct cli_conn *cc, uint64_t j, uint64_t size, bool more)
{
    struct perf_conn *pc = &cc->pc;
    NDK_QP *qp = pc->s.conn.qp;
    uint64_t slot = j % cc->slots;
    size_t off = pc->off_data + (size_t)(slot * size);
    NDK_SGE sge = ndk_sync_mem_sge(&pc->s.mem, off, (ULONG)size);
    ULONG flags = (size <= perf_opt.inline_size ? NDK_OP_FLAG_INLINE : 0) | (more ? NDK_OP_FLAG_DEFER : 0);
    switch (perf_opt.op) {
    case OP_WRITE:
        if (perf_opt.verify)
            perf_fill(pc->s.mem.buf + off, size, cc->cur_seed + j);
        return qp->Dispatch->NdkWrite(qp, TAG(K_DATA, j), &sge, 1, cc->rbuf_addr + slot * size, cc->rtoken, flags);
    case OP_READ:
        if (perf_opt.verify)
            memset(pc->s.mem.buf + off, 0, size);
        return qp->Dispatch->NdkRead(qp, TAG(K_DATA, j), &sge, 1, cc->rbuf_addr + slot * size, cc->rtoken,
                                     more ? NDK_OP_FLAG_DEFER : 0);
    case OP_SEND:
        if (perf_opt.verify)
            perf_fill(pc->s.mem.buf + off, size, cc->data_sent);
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
    /* How many go now: all but the last are posted with DEFER, so the provider may send them
     * together (one TCP write for several small messages). */
    uint64_t inflight = b->posted - completed;
    uint64_t n = b->stop || inflight >= cc->depth ? 0 : cc->depth - inflight;
    if (b->iters && n > b->iters - b->posted)
        n = b->iters - b->posted;
    if (perf_opt.op == OP_SEND && n > cc->credits0 + cc->credits_cum - cc->data_sent)
        n = cc->credits0 + cc->credits_cum - cc->data_sent;
    while (n) {
        NTSTATUS st = cli_post_data(cc, b->posted, b->size, --n != 0);
        if (st != STATUS_SUCCESS) {
            cli_abort(cc, "posting %s #%llu failed: %s", perf_kind_name(K_DATA, perf_opt.op), (unsigned long long)b->posted,
                      ndk_tool_status(st));
            return false;
        }
        b->posted++;
        if (perf_opt.op == OP_SEND)
            cc->data_sent++;
    }
    uint64_t now = ndk_sync_time_now_ns();
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
    uint64_t now = ndk_sync_time_now_ns(), completed = cc->data_done - b->done0;
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
    *now = ndk_sync_time_now_ns();
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
    progress_line(perf_op_name[perf_opt.op], cc->bw.size, completed, cc->bw.iters,
                  (double)completed * (double)cc->bw.size / ((double)(now - cc->bw.t0) / 1e9) / 1e6);
    cc->last_progress = now;
}

/* Connection thread, blocks until the phase is over. */
static void cli_bw_phase(struct cli_conn *cc, uint64_t size, struct phase_res *res)
{
    struct bw_state *b = &cc->bw;
    memset(b, 0, sizeof *b);
    b->size = size;
    b->iters = perf_opt.duration > 0 ? 0 : perf_opt.iters;
    b->done0 = cc->data_done;
    b->t0 = ndk_sync_time_now_ns();
    b->t_end = b->t0 + (uint64_t)(perf_opt.duration * 1e9);
    b->win_t = b->t0;
    cc->last_progress = b->t0;
    __atomic_store_n(&cc->progress, 0, __ATOMIC_RELAXED);

    cc->cur_size = size;
    if (cli_bw_post(cc)) {
        NTSTATUS st = ndk_tool_cq_run(cc->pc.s.conn.cq, true, CLI_WAIT_MS, cli_bw_handler, cli_bw_tick, cc);
        if (st != STATUS_SUCCESS)
            cli_wait_failed(cc, st, CLI_WAIT_MS);
    }
    res->elapsed_ns = ndk_sync_time_now_ns() - b->t0;
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
    NDK_QP *qp = pc->s.conn.qp;
    uint64_t size = l->size;
    NTSTATUS st;

    if ((l->iters && l->i >= l->iters) || cli_aborted())
        return false;
    if (!l->iters && ndk_sync_time_now_ns() >= l->t_end)
        return false;
    cc->lat_seq++;
    if (perf_opt.verify && perf_opt.op != OP_READ)
        perf_fill(perf_data(pc), size, cc->lat_seq);
    l->data0 = cc->data_done;
    l->recv0 = cc->recv_data;
    l->answered = false;
    l->t0 = ndk_sync_time_now_ns();
    if (perf_opt.op == OP_SEND) {
        NDK_SGE sge = ndk_sync_mem_sge(&pc->s.mem, pc->off_data, (ULONG)size);
        st = qp->Dispatch->NdkSend(qp, TAG(K_DATA, l->i), &sge, 1, l->flags);
    } else if (perf_opt.op == OP_WRITE) {
        NDK_SGE sge = ndk_sync_mem_sge(&pc->s.mem, pc->off_data, (ULONG)size);
        st = qp->Dispatch->NdkWrite(qp, TAG(K_DATA, l->i), &sge, 1, cc->rbuf_addr, cc->rtoken, l->flags);
        if (st == STATUS_SUCCESS) {
            struct perf_signal sig;
            memset(&sig, 0, sizeof sig);
            sig.marker = 0x80;
            sig.size = htobe32((uint32_t)size);
            sig.seq = htobe64(cc->lat_seq);
            memcpy(pc->s.mem.buf + pc->off_data + l->sig_off, &sig, sizeof sig);
            NDK_SGE s2 = ndk_sync_mem_sge(&pc->s.mem, pc->off_data + l->sig_off, sizeof sig);
            /* Inline only where the QP was created with room for it: the flag on a QP whose
             * InlineDataSize is smaller is a consumer error (NDK_SGE; verify's inline-size). */
            st = qp->Dispatch->NdkSend(qp, TAG(K_SIGNAL, l->i), &s2, 1,
                                       sizeof sig <= perf_opt.inline_size ? NDK_OP_FLAG_INLINE : 0);
        }
    } else {
        NDK_SGE sge = ndk_sync_mem_sge(&pc->s.mem, pc->off_data + l->dst_off, (ULONG)size);
        if (perf_opt.verify)
            memset(pc->s.mem.buf + pc->off_data + l->dst_off, 0, size);
        st = qp->Dispatch->NdkRead(qp, TAG(K_DATA, l->i), &sge, 1, cc->rbuf_addr, cc->rtoken, 0);
    }
    if (st != STATUS_SUCCESS) {
        cli_abort(cc, "posting %s failed: %s", perf_kind_name(K_DATA, perf_opt.op), ndk_tool_status(st));
        return false;
    }
    l->i++;
    return true;
}

/* One batch of --lat completions (callback or connection thread): takes the sample once the
 * answer (Read: the read's completion; Send/Write: the peer's echo) is in and our own request
 * has completed (its buffer is reused), then starts the next iteration. */
static bool cli_lat_step(struct cli_conn *cc, NDK_RESULT *r, ULONG n)
{
    struct perf_conn *pc = &cc->pc;
    struct lat_state *l = &cc->lat;

    if (!cli_handle(cc, r, n))
        return false;
    if (!l->answered) {
        if (perf_opt.op == OP_READ ? cc->data_done == l->data0 : cc->recv_data == l->recv0)
            return true;
        l->answered = true;
        l->t = ndk_sync_time_now_ns() - l->t0;
        if (perf_opt.op == OP_READ && perf_opt.verify) {
            uint64_t bad;
            if (!perf_read_check(pc->s.mem.buf + pc->off_data + l->dst_off, 0, l->size, &bad))
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
    l->samples[l->n++] = perf_opt.op == OP_READ ? l->t : l->t / 2;
    __atomic_store_n(&cc->progress, l->n, __ATOMIC_RELAXED);
    return cli_lat_next(cc);
}

/* ndk_tool_cq_handler for --lat (callback or connection thread): the batch's receives are
 * reposted once the next request is out (cli_conn.defer_repost). */
static bool cli_lat_handler(void *ctx, NDK_RESULT *r, ULONG n)
{
    struct cli_conn *cc = ctx;
    NTSTATUS st = STATUS_SUCCESS;

    cc->defer_repost = true;
    bool ok = cli_lat_step(cc, r, n);
    cc->defer_repost = false;
    for (unsigned i = 0; i < cc->nrepost && st == STATUS_SUCCESS; i++)
        st = perf_post_recv(&cc->pc, cc->repost[i]);
    cc->nrepost = 0;
    if (st != STATUS_SUCCESS) {
        cli_abort(cc, "posting a receive failed: %s", ndk_tool_status(st));
        return false;
    }
    return ok;
}

/* ndk_tool_cq_tick (connection thread): reads only the atomic progress count. */
static void cli_lat_tick(void *ctx)
{
    struct cli_conn *cc = ctx;
    uint64_t now;
    if (!cli_progress_due(cc, &now))
        return;
    fprintf(stderr, "\r  %s --lat %llu B: %llu iterations   ", perf_op_name[perf_opt.op], (unsigned long long)cc->lat.size,
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
    l->iters = perf_opt.duration > 0 ? 0 : perf_opt.iters;
    l->t_start = ndk_sync_time_now_ns();
    l->t_end = l->t_start + (uint64_t)(perf_opt.duration * 1e9);
    l->cap = l->iters ? l->iters : 65536;
    l->samples = malloc(l->cap * sizeof *l->samples);
    /* write --lat layout: [source][sink the server writes back into][signal]; read: sink at 0 */
    l->dst_off = perf_opt.op == OP_WRITE ? (size_t)((pc->data_len - 64) / 2) : 0;
    l->sig_off = perf_opt.op == OP_WRITE ? (size_t)(pc->data_len - 64) : 0;
    l->flags = size <= perf_opt.inline_size ? NDK_OP_FLAG_INLINE : 0;
    cc->last_progress = l->t_start;
    __atomic_store_n(&cc->progress, 0, __ATOMIC_RELAXED);

    if (!l->samples) {
        cli_abort(cc, "out of memory");
        return;
    }
    cc->cur_size = size;
    if (cli_lat_next(cc)) {
        NTSTATUS st = ndk_tool_cq_run(pc->s.conn.cq, true, CLI_WAIT_MS, cli_lat_handler, cli_lat_tick, cc);
        if (st != STATUS_SUCCESS)
            cli_wait_failed(cc, st, CLI_WAIT_MS);
    }
    res->elapsed_ns = ndk_sync_time_now_ns() - l->t_start;
    res->count = l->n;
    res->lat = l->samples;
    res->nlat = l->n;
    l->samples = NULL;
}

/* write --lat by last-byte polling (ib_write_lat's method): one RDMA Write per direction; the
 * Write lands so that it ends at the end of the server's target, the server spins on that byte
 * and answers with a Write of the same size from a buffer of its own to the end of our sink,
 * and we spin on its last byte (each message's last byte is its tag, (uint8_t)seq), polling
 * the CQ all the while so that the provider progresses and our Write's completion is seen.
 * A sample is the round trip halved. Connection thread, busy-polls until the phase is over. */
static void cli_last_byte_phase(struct cli_conn *cc, uint64_t size, struct phase_res *res)
{
    struct perf_conn *pc = &cc->pc;
    struct lat_state *l = &cc->lat;
    NDK_QP *qp = pc->s.conn.qp;
    memset(l, 0, sizeof *l);
    l->size = size;
    l->iters = perf_opt.duration > 0 ? 0 : perf_opt.iters;
    l->t_start = ndk_sync_time_now_ns();
    l->t_end = l->t_start + (uint64_t)(perf_opt.duration * 1e9);
    l->cap = l->iters ? l->iters : 65536;
    l->samples = malloc(l->cap * sizeof *l->samples);
    l->dst_off = (size_t)((pc->data_len - 64) / 2);
    l->flags = size <= perf_opt.inline_size ? NDK_OP_FLAG_INLINE : 0;
    cc->last_progress = l->t_start;
    cc->cur_size = size;
    __atomic_store_n(&cc->progress, 0, __ATOMIC_RELAXED);
    if (!l->samples) {
        cli_abort(cc, "out of memory");
        return;
    }
    uint8_t *src = perf_data(pc);
    size_t sink_end = l->dst_off + (size_t)cl.sizes[cl.nsizes - 1];      /* the sink: max_size bytes */
    volatile uint8_t *last = perf_data(pc) + sink_end - 1;
    const uint8_t *back = perf_data(pc) + sink_end - size;
    uint8_t *scratch = perf_opt.verify ? malloc(size) : NULL;
    NDK_RESULT r[64];
    if (perf_opt.verify && !scratch) {
        cli_abort(cc, "out of memory");
        l->iters = 1;
        l->i = 1;
    }

    while ((!l->iters || l->i < l->iters) && !cli_aborted() && (l->iters || ndk_sync_time_now_ns() < l->t_end)) {
        cc->lat_seq++;
        if (perf_opt.verify)
            perf_last_byte_fill(src, size, cc->lat_seq);
        else
            src[size - 1] = (uint8_t)cc->lat_seq;
        uint64_t data0 = cc->data_done;
        NDK_SGE sge = ndk_sync_mem_sge(&pc->s.mem, pc->off_data, (ULONG)size);
        l->t0 = ndk_sync_time_now_ns();
        NTSTATUS st = qp->Dispatch->NdkWrite(qp, TAG(K_DATA, l->i), &sge, 1, cc->rbuf_addr + cc->rlen - size,
                                             cc->rtoken, l->flags);
        if (st != STATUS_SUCCESS) {
            cli_abort(cc, "posting RDMA Write failed: %s", ndk_tool_status(st));
            break;
        }
        l->i++;
        bool answered = false;
        uint64_t t = 0;
        while (!answered || cc->data_done == data0) {
            ULONG n = ndk_tool_cq_poll(pc->s.conn.cq, r, 64);
            if (n && !cli_handle(cc, r, n))
                break;
            if (!answered && perf_peek(last) == (uint8_t)cc->lat_seq) {
                t = ndk_sync_time_now_ns() - l->t0;
                answered = true;
                continue;
            }
            if (!n && (cli_aborted() || ndk_tool_conn_disconnected(&pc->s.conn) ||
                       ndk_sync_time_now_ns() - l->t0 > (uint64_t)CLI_WAIT_MS * 1000000u)) {
                if (!cli_aborted())
                    cli_abort(cc, ndk_tool_conn_disconnected(&pc->s.conn) ? "the server disconnected"
                                                                           : "no answer within %d ms", CLI_WAIT_MS);
                break;
            }
        }
        if (!answered || cc->data_done == data0 || pc->error[0])
            break;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (perf_opt.verify && !perf_last_byte_check(back, size, cc->lat_seq, scratch)) {
            perf_note(pc, "write %llu of %llu bytes came back different", (unsigned long long)cc->lat_seq,
                      (unsigned long long)size);
            cc->verify_fail++;
        }
        if (l->n == l->cap) {
            uint64_t *bigger = realloc(l->samples, l->cap * 2 * sizeof *l->samples);
            if (!bigger) {
                cli_abort(cc, "out of memory");
                break;
            }
            l->samples = bigger;
            l->cap *= 2;
        }
        l->samples[l->n++] = t / 2;
        __atomic_store_n(&cc->progress, l->n, __ATOMIC_RELAXED);
        uint64_t now;
        if (cli_progress_due(cc, &now)) {
            fprintf(stderr, "\r  write --lat (last byte) %llu B: %llu iterations   ", (unsigned long long)size,
                    (unsigned long long)l->n);
            cc->last_progress = now;
        }
    }
    free(scratch);
    res->elapsed_ns = ndk_sync_time_now_ns() - l->t_start;
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
    if (!cli_ctl(cc, CTL_START, cl.start_how, 0, cl.recv_shared, 0))
        ok = false;
    uint64_t srv_prev = ok ? be64toh(cc->ack.a) : 0;
    for (unsigned p = 0; p < cl.nsizes; p++) {
        struct phase_res *res = &cc->res[p];
        res->size = cl.sizes[p];
        /* The server learns each phase's size, the end of its buffer being where it looks. */
        if (ok && cl.last_byte && !cli_ctl(cc, CTL_START, START_LAST_BYTE, res->size, 0, 0))
            ok = false;
        pthread_barrier_wait(&cl.barrier);
        if (cc->index == 0)
            cl.cpu_before[p] = ndk_tool_stat_cpu_us();
        pthread_barrier_wait(&cl.barrier);
        ok = ok && !cli_aborted();
        cc->cur_seed = (uint64_t)(p + 1) << 40;
        if (ok) {
            if (cl.last_byte)
                cli_last_byte_phase(cc, res->size, res);
            else if (perf_opt.lat)
                cli_lat_phase(cc, res->size, res);
            else
                cli_bw_phase(cc, res->size, res);
            ok = !cc->pc.error[0];
        }
        pthread_barrier_wait(&cl.barrier);
        if (cc->index == 0) {
            cl.cpu_after[p] = ndk_tool_stat_cpu_us();
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
    uint64_t *lat;                           /* nlat samples, in no order */
    size_t   nlat;
    uint64_t lat_at[5];                      /* at agg_lat_q of them */
};

static const double agg_lat_q[5] = { 0, 0.5, 0.99, 0.999, 1 };   /* min, typical, p99, p99.9, max */

static void aggregate(unsigned p, struct agg *a)
{
    memset(a, 0, sizeof *a);
    a->size = cl.sizes[p];
    a->verified = perf_opt.verify;
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
    if (perf_opt.lat && a->nlat) {
        a->lat = malloc(a->nlat * sizeof *a->lat);
        size_t k = 0;
        for (unsigned c = 0; a->lat && c < cl.nconns; c++) {
            struct phase_res *r = &cl.conns[c].res[p];
            memcpy(a->lat + k, r->lat, r->nlat * sizeof *r->lat);
            k += r->nlat;
        }
        if (!a->lat)
            a->nlat = 0;
        ndk_tool_stat_percentiles(a->lat, a->nlat, agg_lat_q, 5, a->lat_at);
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
    *min = (double)a->lat_at[0] / 1e3;
    *typ = (double)a->lat_at[1] / 1e3;
    *p99 = (double)a->lat_at[2] / 1e3;
    *p999 = (double)a->lat_at[3] / 1e3;
    *max = (double)a->lat_at[4] / 1e3;
}

static const char *dashes = "---------------------------------------------------------------------------------------------------------";

/* write --lat: what one sample is. */
static const char *write_lat_method_text(void)
{
    if (cl.last_byte)
        return (cl.ad.info.AdapterFlags & NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED)
                   ? "one RDMA Write each way, last-byte polling (the adapter places in order), busy poll"
                   : "one RDMA Write each way, last-byte polling (--last-byte; the adapter does not "
                     "advertise IN_ORDER_DMA), busy poll";
    return (cl.ad.info.AdapterFlags & NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED)
               ? "RDMA Write + signal Send each way (--no-last-byte)"
               : "RDMA Write + signal Send each way (the adapter does not advertise IN_ORDER_DMA, so the "
                 "last byte cannot be polled; --last-byte forces it)";
}

static void print_header(void)
{
    char l[NDK_TOOL_ADDR_STRLEN], r[NDK_TOOL_ADDR_STRLEN];
    perf_out("%s\n", dashes);
    perf_out("                    %s %s Test\n", perf_op_title[perf_opt.op], perf_opt.lat ? "Latency" : "BW");
    perf_out(" Provider: %s   Adapter: %s (id %u)   Connections: %u   Depth: %u   Inline: %u\n", cl.ad.provider,
        cl.ad.ifname, cl.ad.id, cl.nconns, perf_opt.lat ? 1 : cl.conns[0].depth, perf_opt.inline_size);
    perf_out(" Local: %s   Remote: %s   MPA CRC: %s   Completions: %s   Verify: %s\n",
        ndk_tool_addr_str(&cl.conns[0].pc.s.conn.local, true, l, sizeof l),
        ndk_tool_addr_str(&cl.conns[0].pc.s.conn.peer, true, r, sizeof r), perf_opt.cli.crc ? "requested" : "not requested",
        perf_opt.cli.poll || cl.last_byte ? "busy poll" : "notifications", perf_opt.verify ? "on" : "off");
    if (perf_opt.op == OP_WRITE && perf_opt.lat)
        perf_out(" Method: %s\n", write_lat_method_text());
    perf_out("%s\n", dashes);
    if (perf_opt.lat)
        perf_out(" %-10s %-12s %-12s %-12s %-15s %-12s %-13s %-10s %-10s %s\n", "#bytes", "#iterations", "t_min[usec]",
            "t_max[usec]", "t_typical[usec]", "t_avg[usec]", "t_stdev[usec]", "99%[usec]", "99.9%[usec]",
            "CPU[ns/B] client/server");
    else
        perf_out(" %-10s %-12s %-16s %-19s %-14s %-19s %s\n", "#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]",
            "MsgRate[Mpps]", "BW average[Gb/sec]", "CPU[ns/B] client/server");
}

static void print_row(const struct agg *a)
{
    double cc = ns_per_byte(a->cli_cpu_us, a->bytes), sc = ns_per_byte(a->srv_cpu_us, a->bytes);
    if (perf_opt.lat) {
        double mn, mx, typ, avg, sd, p99, p999;
        lat_stats(a, &mn, &mx, &typ, &avg, &sd, &p99, &p999);
        perf_out(" %-10llu %-12llu %-12.2f %-12.2f %-15.2f %-12.2f %-13.2f %-10.2f %-10.2f %.2f/%.2f\n",
            (unsigned long long)a->size, (unsigned long long)a->count, mn, mx, typ, avg, sd, p99, p999, cc, sc);
    } else {
        double secs = (double)a->elapsed_ns / 1e9;
        perf_out(" %-10llu %-12llu %-16.2f %-19.2f %-14.6f %-19.3f %.3f/%.3f\n", (unsigned long long)a->size,
            (unsigned long long)a->count, a->peak_Bps / 1e6, a->avg_Bps / 1e6,
            secs > 0 ? (double)a->count / secs / 1e6 : 0, a->avg_Bps * 8 / 1e9, cc, sc);
    }
}

static void print_json(struct agg *rows)
{
    char l[NDK_TOOL_ADDR_STRLEN], r[NDK_TOOL_ADDR_STRLEN];
    ndk_tool_json j;
    ndk_tool_json_init(&j, stdout);
    ndk_tool_json_open(&j, NULL, '{');
    ndk_tool_json_str(&j, "tool", "ndkperf");
    ndk_tool_json_u64(&j, "version", PERF_VERSION);
    ndk_tool_json_str(&j, "test", perf_op_name[perf_opt.op]);
    ndk_tool_json_str(&j, "mode", perf_opt.lat ? "latency" : "bandwidth");
    ndk_tool_json_str(&j, "provider", cl.ad.provider);
    ndk_tool_json_str(&j, "adapter", cl.ad.ifname);
    ndk_tool_json_str(&j, "local", ndk_tool_addr_str(&cl.conns[0].pc.s.conn.local, true, l, sizeof l));
    ndk_tool_json_str(&j, "remote", ndk_tool_addr_str(&cl.conns[0].pc.s.conn.peer, true, r, sizeof r));
    ndk_tool_json_u64(&j, "connections", cl.nconns);
    ndk_tool_json_u64(&j, "depth", perf_opt.lat ? 1 : cl.conns[0].depth);
    ndk_tool_json_u64(&j, "inline", perf_opt.inline_size);
    ndk_tool_json_bool(&j, "crc", perf_opt.cli.crc);
    ndk_tool_json_str(&j, "completions", perf_opt.cli.poll || cl.last_byte ? "poll" : "notify");
    if (perf_opt.op == OP_WRITE && perf_opt.lat) {
        ndk_tool_json_str(&j, "write_lat_method", cl.last_byte ? "last-byte" : "write+send");
        ndk_tool_json_bool(&j, "in_order_dma", (cl.ad.info.AdapterFlags & NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED) != 0);
    }
    if (perf_opt.op == OP_SEND && !perf_opt.lat)
        ndk_tool_json_u64(&j, "server_recv_buffers", cl.recv_shared);
    ndk_tool_json_bool(&j, "verify", perf_opt.verify);
    if (perf_opt.duration > 0)
        ndk_tool_json_dbl(&j, "duration_s", perf_opt.duration);
    else
        ndk_tool_json_u64(&j, "iterations_per_size", perf_opt.iters);
    ndk_tool_json_open(&j, "results", '[');
    for (unsigned p = 0; p < cl.nsizes; p++) {
        struct agg *a = &rows[p];
        ndk_tool_json_open(&j, NULL, '{');
        ndk_tool_json_u64(&j, "bytes", a->size);
        ndk_tool_json_u64(&j, "iterations", a->count);
        ndk_tool_json_dbl(&j, "seconds", (double)a->elapsed_ns / 1e9);
        if (perf_opt.lat) {
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
        if (perf_opt.verify)
            ndk_tool_json_bool(&j, "verified", a->verified);
        ndk_tool_json_close(&j, '}');
    }
    ndk_tool_json_close(&j, ']');
    ndk_tool_json_close(&j, '}');
    fflush(stdout);
}

int cli_run(ndk_rt *rt)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDR_STRLEN];
    SOCKADDR_INET local;
    NTSTATUS st;
    int rc = 0;

    if (ndk_tool_addr_parse(perf_opt.cli.addr, PERF_DEFAULT_PORT, &cl.dst, why, sizeof why) != 0 ||
        cl.dst.si_family == AF_UNSPEC) {
        ndk_tool_err("bad server address %s", why[0] ? why : "(none)");
        return 2;
    }
    if (perf_opt.cli.local && ndk_tool_addr_parse_ip(perf_opt.cli.local, &local) != 0) {
        ndk_tool_err("bad local address '%s'", perf_opt.cli.local);
        return 2;
    }
    ndk_tool_addr_str(&cl.dst, true, dst_s, sizeof dst_s);
    st = ndk_tool_adapter_client(rt, perf_opt.cli.local ? &local : NULL, &cl.dst, perf_opt.cli.provider,
                                 perf_opt.client_if, &cl.ad, &cl.src);
    if (st != STATUS_SUCCESS)
        return 1;
    const NDK_ADAPTER_INFO *info = &cl.ad.info;

    /* Sizes of the run. */
    uint64_t sweep_sizes[64];
    if (perf_opt.sweep) {
        cl.nsizes = 0;
        for (uint64_t s = 1; s <= SWEEP_MAX && s <= info->MaxTransferLength; s *= 2)
            sweep_sizes[cl.nsizes++] = s;
        cl.sizes = sweep_sizes;
    } else {
        cl.sizes = &perf_opt.size;
        cl.nsizes = 1;
    }
    uint64_t max_size = cl.sizes[cl.nsizes - 1];
    if (max_size > info->MaxTransferLength) {
        ndk_tool_err("message size %llu exceeds the adapter's MaxTransferLength %u", (unsigned long long)max_size,
                     info->MaxTransferLength);
        ndk_tool_adapter_close(&cl.ad);
        return 2;
    }
    if (perf_opt.inline_size > info->MaxInlineDataSize) {
        ndk_tool_err("--inline %u exceeds the adapter's MaxInlineDataSize %u", perf_opt.inline_size, info->MaxInlineDataSize);
        ndk_tool_adapter_close(&cl.ad);
        return 2;
    }
    /* write --lat: last-byte polling where the adapter promises in-order placement (or the
     * user says so with --last-byte); otherwise a Write plus a signal Send each way. */
    if (perf_opt.op == OP_WRITE && perf_opt.lat && !perf_opt.no_last_byte &&
        (perf_opt.last_byte || (info->AdapterFlags & NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED)))
        cl.last_byte = true;
    /* Busy-polled from the start, control exchanges included: the provider then places the
     * peer's Writes in this process's polling thread, the one that reads the last byte (with
     * notifications its progress thread would place them while this thread spins). */
    if (cl.last_byte) {
        cl.start_how |= START_LAST_BYTE;
        perf_opt.cli.poll = true;
    }
    /* send bandwidth, payload unchecked: the server's reposted receives share one buffer, as
     * an RDMA Write run's messages share one target, unless a message could pass for control. */
    bool ctl_sized = false;
    for (unsigned i = 0; i < cl.nsizes; i++)
        ctl_sized = ctl_sized || cl.sizes[i] == CTL_SIZE;
    if (perf_opt.op == OP_SEND && !perf_opt.lat && !perf_opt.verify && !ctl_sized) {
        cl.start_how |= START_RECV_SHARED;
        cl.recv_shared = 1;
    }
    /* Depth and slots: messages in flight, bounded by memory (and by the read limit). */
    uint32_t depth = perf_opt.lat ? 1 : perf_opt.depth, slots = 1;
    uint64_t per = max_size > CTL_SIZE ? max_size : CTL_SIZE;
    uint64_t fit = PERF_MEM_BUDGET / per ? PERF_MEM_BUDGET / per : 1;
    if (!perf_opt.lat && perf_opt.op == OP_SEND && depth > fit)
        depth = (uint32_t)fit;
    if (!perf_opt.lat && perf_opt.verify) {
        if (depth > fit)
            depth = (uint32_t)fit;
        slots = depth;
    }
    if (!perf_opt.lat && perf_opt.op == OP_READ && depth > info->MaxOutboundReadLimit)
        depth = info->MaxOutboundReadLimit;
    if (depth > info->MaxInitiatorQueueDepth - CTL_RING - 4)
        depth = info->MaxInitiatorQueueDepth - CTL_RING - 4;
    if (depth < 1)
        depth = 1;
    if (perf_opt.verify && !perf_opt.lat)
        slots = depth;

    uint64_t session = ((uint64_t)getpid() << 32) ^ ndk_sync_time_now_ns();
    cl.nconns = perf_opt.conns;
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
        snprintf(pc->s.where, sizeof pc->s.where, "%s", dst_s);
        uint32_t rbuf = (perf_opt.op == OP_SEND && perf_opt.lat) ? (uint32_t)per : CTL_SIZE;
        uint64_t data_len = perf_opt.lat ? max_size : (uint64_t)slots * max_size;
        if (perf_opt.lat && perf_opt.op == OP_WRITE)
            data_len = 2 * ((max_size + 63) & ~63ull) + 64;
        st = cc->res ? perf_conn_open(pc, &cl.ad, CLIENT_RECVS, rbuf, depth + CTL_RING + 4, perf_opt.inline_size, data_len)
                     : STATUS_INSUFFICIENT_RESOURCES;
        for (uint32_t k = 0; st == STATUS_SUCCESS && k < CLIENT_RECVS; k++)
            st = perf_post_recv(pc, k);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("setting up connection %u failed: %s", c + 1, ndk_tool_status(st));
            rc = 1;
            break;
        }
        struct perf_hello h;
        struct perf_hello_wire hw;
        memset(&h, 0, sizeof h);
        h.op = (uint16_t)perf_opt.op;
        h.flags = (perf_opt.lat ? HELLO_LAT : 0) | (perf_opt.verify ? HELLO_VERIFY : 0);
        h.session = session;
        h.conn_index = c;
        h.conn_count = cl.nconns;
        h.depth = depth;
        h.inline_size = perf_opt.inline_size;
        h.max_size = max_size;
        size_t dst_off = perf_opt.lat && perf_opt.op == OP_WRITE ? (size_t)((pc->data_len - 64) / 2) : 0;
        h.client_buf = (uint64_t)(uintptr_t)(perf_data(pc) + dst_off);
        h.client_token = pc->s.mem.rtoken;
        h.client_buf_len = (uint32_t)max_size;
        h.slots = slots;
        if (perf_hello_encode(&h, &hw) != 0) {
            ndk_tool_err("the test (depth %u, %u slots of %llu bytes) does not fit ndkperf's connect hello", depth,
                         slots, (unsigned long long)max_size);
            rc = 1;
            break;
        }
        ULONG ird = info->MaxInboundReadLimit, ord = info->MaxOutboundReadLimit;
        st = ndk_tool_conn_connect(&pc->s.conn, &cl.src, &cl.dst, ird, ord, &hw, sizeof hw, NDK_TOOL_CONN_TIMEOUT_MS);
        struct perf_refusal ref;
        if (st == STATUS_CONNECTION_REFUSED && pc->s.conn.peer_data_len > offsetof(struct perf_refusal, reason) &&
            !memcmp(pc->s.conn.peer_data, PERF_MAGIC, sizeof PERF_MAGIC)) {
            memset(&ref, 0, sizeof ref);
            memcpy(&ref, pc->s.conn.peer_data,
                   pc->s.conn.peer_data_len < sizeof ref ? pc->s.conn.peer_data_len : sizeof ref);
            ref.reason[sizeof ref.reason - 1] = 0;
            ndk_tool_err("connect to %s failed: the server refused the test: %s", dst_s, ref.reason);
            rc = 1;
            break;
        }
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("connect to %s failed: %s", dst_s, ndk_tool_status(st));
            rc = 1;
            break;
        }
        connected++;
        struct perf_accept acc;
        if (pc->s.conn.peer_data_len < sizeof acc || memcmp(pc->s.conn.peer_data, PERF_MAGIC, sizeof PERF_MAGIC)) {
            ndk_tool_err("%s accepted but is not an ndkperf server", dst_s);
            rc = 1;
            break;
        }
        memcpy(&acc, pc->s.conn.peer_data, sizeof acc);
        cc->rbuf_addr = be64toh(acc.buf);
        cc->rtoken = be32toh(acc.token);
        cc->rlen = be32toh(acc.buf_len);
        cc->credits0 = be32toh(acc.credits);
        if (perf_opt.op == OP_READ && cc->depth > pc->s.conn.ord && pc->s.conn.ord)
            cc->depth = pc->s.conn.ord;
    }
    if (rc == 0) {
        cl.progress = isatty(2) && !perf_opt.quiet;
        if (!perf_opt.cli.json || perf_log)
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
                if (!perf_opt.cli.json || perf_log)
                    print_row(&rows[p]);
                if (!rows[p].verified)
                    verified = false;
            }
            if (!perf_opt.cli.json || perf_log)
                perf_out("%s\n", dashes);
            if (perf_opt.cli.json)
                print_json(rows);
        }
        if (perf_opt.verify && !verified && rc == 0) {
            ndk_tool_err("payload verification failed");
            rc = 1;
        }
        for (unsigned p = 0; rows && p < cl.nsizes; p++)
            free(rows[p].lat);
        free(rows);
        if (rc == 0 && perf_opt.ndkperfcmd) {
            perf_out("ndkperf: %s test completes\n", perf_opt.testtype);
            if (perf_opt.cli.json && !perf_log)
                fprintf(stderr, "ndkperf: %s test completes\n", perf_opt.testtype);
        }
    }
    (void)connected;
    for (unsigned c = 0; c < cl.nconns; c++) {
        ndk_tool_session_close(&cl.conns[c].pc.s);
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
