/* The provider's RX engine (rx.c) under a hostile peer. Each input builds one connected QP in RTS
 * from the provider's own objects (PD, CQ, RQ or SRQ, MRs, QP, both engines; no CM, no runtime,
 * as tests/datapath does) over a socket pair, plays the peer's byte stream into the other end in
 * pieces the input chooses (down to one byte per read), and runs the RX engine after every piece,
 * as the progress thread does when the socket turns readable.
 *
 * Every buffer the peer can reach sits between PROT_NONE pages (mmap), flush against one of them
 * (the input picks which), with a canary in the slack on the other side: a byte written outside a
 * buffer faults at once, shows in the canary, or, where the engines hand the address to readv()
 * or sendmsg(), makes the kernel fail them with EFAULT, which the harness rejects. Only region 1
 * is remotely readable and nothing writes it, so every Read Response byte the QP sends must be
 * its fill. Inside the buffers every byte the peer may not write keeps its fill pattern, checked
 * after every input:
 *   region 0  MR with remote write: the peer may write all of it
 *   region 1  MR with remote read only: never written
 *   region 2  receive buffers (local write only): written only inside the posted SGEs
 *   region 3  Read sink (local write): written only inside our posted Read's SGE
 * Invariants checked on the way: every completion belongs to a posted request, completes it once
 * and with the right type, its byte count is at most the posted buffer's; no completion for an
 * inbound tagged Write, and no more successful receives than the stream held whole Sends; the QP
 * sends at most one Terminate and nothing after it, and everything it sends decodes; after
 * teardown every posted request has completed (but a receive the SRQ still holds), and no
 * memory, MR, descriptor or mapping is left over.
 *
 * Input: flags (1 byte: bit 0 CRC, bit 1 SRQ instead of RQ, bit 2 post a Read, bit 3 buffers
 * flush with the lower guard page instead of the upper, bit 4 FIN after the stream, bit 5 two
 * SGEs per receive), IRD (1 byte), n (1 byte, mod 33), n piece sizes (1 byte each, used in turn;
 * 255 = the rest at once; n = 0: one byte at a time), four region lengths (2 bytes each), the
 * receive count (1 byte, mod 9) with each receive's offset and length (2 + 2 bytes), the Read's
 * sink offset and length (2 + 2 bytes), then records up to the end:
 *   kind < 0x80: kind + 1 raw bytes
 *   kind >= 0x80: an FPDU built by iw_fpdu_build: opcode = kind & 15, L bit = kind & 0x10,
 *     auto sequencing = kind & 0x20 (MSN / MO / Read Response offsets follow the stream's own
 *     order), corrupt one byte = kind & 0x40; then an STag selector (1 byte: low 3 bits region
 *     0-3's token, 4 a raw STag, 5 a token with a wrong key, 6 a token of the next index, 7 zero;
 *     bits 3-4 the region for 5 and 6; bits 5-6 where the offset counts from: 0 on from the
 *     region's start, 1 back from it, 2 back from its end, 3 on from its end; bit 7 a raw TO
 *     instead of an offset), the TO or offset, the payload length (2 bytes: bit 15 a pattern instead of input bytes, 14 bits
 *     of length then; else 11 bits of length and the payload bytes follow), the opcode's fields
 *     (Send: MSN and MO unless auto, and the invalidated STag's selector; Read Request: MSN
 *     unless auto, sink STag, sink TO, size, and the source as selector + TO; Terminate: MSN
 *     unless auto, layer, type and code), and the corruption's offset and XOR mask. */
#include "datapath.h"
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- stand-ins for what the data path calls above it (the progress engine, the CM, logging) */

/* FUZZ_RX_VERBOSE=1 prints the provider's warnings (each Terminate's reason), 2 its notices, 3
 * and up its debug lines; FUZZ_RX_DEBUG prints every record as built. */
void iw_log(int level, const char *fmt, ...)
{
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("FUZZ_RX_VERBOSE") ? atoi(getenv("FUZZ_RX_VERBOSE")) : 0;
    if (level > NDK_LOG_ERROR + verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[iw %d] ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static struct iw_device g_dev;
static struct iw_adapter g_ad;
static NDK_PD *g_pd;
static int g_cm_failed;                 /* iw_cm_connection_failed's error, 0 none */

bool iw_progress_queue(struct iw_device *dev, struct iw_work *w)
{
    bool q = false;
    pthread_mutex_lock(&dev->wq_lock);
    if (!w->queued) {
        w->queued = true;
        ndk_list_add_tail(&dev->work, &w->link);
        q = true;
    }
    pthread_mutex_unlock(&dev->wq_lock);
    return q;
}

void iw_cm_connection_failed(struct iw_qp *qp, int err)
{
    (void)qp;
    if (!g_cm_failed)
        g_cm_failed = err ? err : -EIO;
}

/* The progress engine's registrations and timers: progress_stub.c (tests/datapath). */

static void run_work(void)
{
    for (;;) {
        pthread_mutex_lock(&g_dev.wq_lock);
        if (ndk_list_empty(&g_dev.work)) {
            pthread_mutex_unlock(&g_dev.wq_lock);
            return;
        }
        struct iw_work *w = ndk_list_entry(g_dev.work.next, struct iw_work, link);
        ndk_list_del(&w->link);
        w->queued = false;
        pthread_mutex_unlock(&g_dev.wq_lock);
        w->fn(w);
    }
}

/* The harness's adapter instance: iwarp's object hooks, no dispatch (nothing opens it). */
static const struct ndk_prov_adapter_kind fz_adapter_kind = {
    .hooks = &iw_obj_hooks, .size = sizeof(struct iw_adapter), .pd_new = iw_pd_new,
};

static void env_init(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    pthread_mutex_init(&g_dev.lock, NULL);
    pthread_mutex_init(&g_dev.mem_lock, NULL);
    pthread_mutex_init(&g_dev.wq_lock, NULL);
    pthread_mutex_init(&g_dev.qps_lock, NULL);
    ndk_list_init(&g_dev.qps);
    iw_mem_device_init(&g_dev);
    /* The harness is the progress thread (iw_progress_on_thread): a CQ poll from it never runs
     * the engines inline, so the pieces the input chose are exactly the reads the engine sees. */
    atomic_store(&g_dev.progress_self, pthread_self());
    ndk_list_init(&g_dev.work);
    ndk_list_init(&g_dev.endpoints);
    ndk_list_init(&g_dev.connectors);
    ndk_list_init(&g_dev.listeners);
    ndk_prov_adapter_list_init(&g_dev.adapters);
    strcpy(g_dev.ifname, "fuzz_rx");
    g_ad.dev = &g_dev;
    ndk_prov_adapter_init(&g_ad.base, &fz_adapter_kind, (NDK_VERSION){ .Major = 2, .Minor = 1 });
    FZ_CHECK(ndk_prov_pd_create(&g_ad.base.ndk, NULL, NULL, &g_pd) == STATUS_SUCCESS, "cannot create the PD");
}

/* ---- guard-paged regions ---- */

#define NREG      4
#define REG_MAX   16384u
#define PG        4096u
#define FILL      0x5Au
#define CANARY    0xC3u

struct region {
    uint8_t *map;           /* guard page, body pages, guard page */
    size_t maplen;
    uint8_t *lo, *hi;       /* the body pages */
    uint8_t *p;             /* the registered buffer, flush with one guard page */
    size_t len;
    uint8_t *allowed;       /* per byte: the peer may write it */
    NDK_MR *mr;
    MDL *mdl;
    uint32_t token;
};

static void region_make(struct region *r, size_t len, bool low, ULONG flags)
{
    size_t body = (len + PG - 1) / PG * PG;
    if (!body)
        body = PG;
    memset(r, 0, sizeof *r);
    r->len = len;
    r->maplen = body + 2 * PG;
    r->map = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FZ_CHECK(r->map != MAP_FAILED, "mmap: %s", strerror(errno));
    FZ_CHECK(mprotect(r->map, PG, PROT_NONE) == 0 && mprotect(r->map + PG + body, PG, PROT_NONE) == 0,
             "mprotect: %s", strerror(errno));
    r->lo = r->map + PG;
    r->hi = r->lo + body;
    r->p = low ? r->lo : r->hi - len;
    memset(r->lo, CANARY, body);
    memset(r->p, FILL, len);
    r->allowed = calloc(len ? len : 1, 1);
    FZ_CHECK(r->allowed, "out of memory");
    FZ_CHECK(g_pd->Dispatch->NdkCreateMr(g_pd, FALSE, NULL, NULL, &r->mr) == STATUS_SUCCESS, "NdkCreateMr");
    r->mdl = IoAllocateMdl(r->p, (ULONG)(len ? len : 1), FALSE, FALSE, NULL);
    FZ_CHECK(r->mdl, "IoAllocateMdl");
    NTSTATUS st = r->mr->Dispatch->NdkRegisterMr(r->mr, r->mdl, len ? len : 1, flags, NULL, NULL);
    FZ_CHECK(st == STATUS_SUCCESS, "NdkRegisterMr: 0x%08x", (unsigned)st);
    r->token = r->mr->Dispatch->NdkGetRemoteTokenFromMr(r->mr);
}

static void region_allow(struct region *r, size_t off, size_t len)
{
    if (off < r->len)
        memset(r->allowed + off, 1, len < r->len - off ? len : r->len - off);
}

/* No byte outside what the peer may write changed, inside the buffer or in the slack beside it. */
static void region_check(const struct region *r, int idx)
{
    for (const uint8_t *b = r->lo; b < r->p; b++)
        FZ_CHECK(*b == CANARY, "region %d: byte %td before the buffer was written", idx, b - r->p);
    for (const uint8_t *b = r->p + r->len; b < r->hi; b++)
        FZ_CHECK(*b == CANARY, "region %d: byte %td past the end of the buffer (length %zu) was written", idx,
                 b - r->p, r->len);
    for (size_t i = 0; i < r->len; i++)
        FZ_CHECK(r->allowed[i] || r->p[i] == FILL, "region %d: byte %zu of %zu written, which the peer may not write",
                 idx, i, r->len);
}

static void region_free(struct region *r)
{
    NTSTATUS st = r->mr->Dispatch->NdkCloseMr(&r->mr->Header, NULL, NULL);
    FZ_CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING, "NdkCloseMr: 0x%08x", (unsigned)st);
    run_work();
    IoFreeMdl(r->mdl);
    free(r->allowed);
    FZ_CHECK(munmap(r->map, r->maplen) == 0, "munmap");
}

/* ---- posted requests and their completions ---- */

#define MAX_RECV 8
#define CTX_RECV 0x100u
#define CTX_READ 0x200u

struct posted {
    uintptr_t ctx;
    uint64_t len;           /* bytes the request's SGL holds */
    bool is_read;
    int done;               /* completions seen */
};

struct run {
    struct region reg[NREG];
    NDK_CQ *cq;
    NDK_SRQ *srq;
    NDK_QP *ndk;
    struct iw_qp *qp;
    int fd;                 /* the peer's end */
    int qpfd;
    bool crc;
    struct posted req[MAX_RECV + 1];
    unsigned nreq;
    /* what the QP sends, decoded */
    struct iw_fpdu_rx out;
    unsigned terms;
    bool out_after_term;
    unsigned recv_ok;       /* receives completed successfully */
    unsigned sends_in;      /* whole Send messages in the peer's stream (up to its first error) */
    uint64_t out_bytes;
};

static struct posted *find_req(struct run *r, uintptr_t ctx)
{
    for (unsigned i = 0; i < r->nreq; i++)
        if (r->req[i].ctx == ctx)
            return &r->req[i];
    return NULL;
}

static void poll_cq(struct run *r)
{
    NDK_RESULT_EX res[16];
    ULONG n;
    run_work();
    while ((n = r->cq->Dispatch->NdkGetCqResultsEx(r->cq, res, 16)) > 0) {
        for (ULONG i = 0; i < n; i++) {
            struct posted *p = find_req(r, (uintptr_t)res[i].RequestContext);
            FZ_CHECK(p, "a completion (type %d, status 0x%08x, %u bytes) for nothing we posted: context %p", res[i].Type,
                     (unsigned)res[i].Status, (unsigned)res[i].BytesTransferred, res[i].RequestContext);
            FZ_CHECK(res[i].Type != NdkOperationTypeWrite, "a completion of type Write: nothing of ours was a Write");
            if (p->is_read)
                FZ_CHECK(res[i].Type == NdkOperationTypeRead, "the Read completed as type %d", res[i].Type);
            else
                FZ_CHECK(res[i].Type == NdkOperationTypeReceive || res[i].Type == NdkOperationTypeReceiveAndInvalidate,
                         "a receive completed as type %d", res[i].Type);
            FZ_CHECK(!p->done, "request %p completed twice (status 0x%08x)", res[i].RequestContext,
                     (unsigned)res[i].Status);
            FZ_CHECK(res[i].BytesTransferred <= p->len, "request %p completed with %u bytes into a %llu-byte buffer",
                     res[i].RequestContext, (unsigned)res[i].BytesTransferred, (unsigned long long)p->len);
            p->done++;
            if (!p->is_read && res[i].Status == STATUS_SUCCESS)
                r->recv_ok++;
        }
        /* Only a Send completes a receive: never a Write, a Read Response or a Read Request. */
        FZ_CHECK(r->recv_ok <= r->sends_in, "%u receives completed successfully, but the peer sent only %u Sends",
                 r->recv_ok, r->sends_in);
        run_work();
    }
}

/* EFAULT from an engine means it aimed a socket read or write at a guard page: memory outside
 * every region, caught by the kernel instead of by a fault. */
static void check_err(int err, const char *who)
{
    FZ_CHECK(err != -EFAULT, "%s touched memory outside the regions (EFAULT)", who);
}

/* Reads and decodes what the QP sent; lets its TX engine go on when it waited for room. */
static void drain_out(struct run *r)
{
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = recv(r->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n <= 0) {
            FZ_CHECK(n == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNRESET,
                     "recv from the QP: %s", strerror(errno));
            break;
        }
        r->out_bytes += (uint64_t)n;
        size_t pos = 0;
        while (pos < (size_t)n) {
            struct iw_fpdu_event ev;
            size_t used = 0;
            enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&r->out, buf + pos, (size_t)n - pos, &used, &ev);
            pos += used;
            FZ_CHECK(t != IW_FPDU_EV_ERROR, "the QP sent a stream that does not decode: %s at offset %llu",
                     iw_fpdu_rx_reason_str(ev.err ? ev.err->reason : IW_FPDU_RXERR_NONE),
                     (unsigned long long)(ev.err ? ev.err->fpdu_offset : 0));
            /* Only region 1 is remotely readable, and nothing writes it: a Read Response byte
             * that is not its fill came from outside it. */
            if (t == IW_FPDU_EV_PAYLOAD && ev.hdr->opcode == IW_OP_READ_RESP)
                for (uint32_t i = 0; i < ev.len; i++)
                    FZ_CHECK(ev.data[i] == FILL, "a Read Response carries 0x%02x at offset %u: not region 1's bytes",
                             ev.data[i], ev.off + i);
            if (t == IW_FPDU_EV_HEADER) {
                if (r->terms)
                    r->out_after_term = true;
                if (ev.hdr->opcode == IW_OP_TERMINATE)
                    r->terms++;
            }
            if (t == IW_FPDU_EV_NEED_MORE)
                break;
        }
        FZ_CHECK(r->terms <= 1, "the QP sent %u Terminates", r->terms);
        FZ_CHECK(!r->out_after_term, "the QP sent an FPDU after its Terminate");
    }
    bool want = false;
    iw_lock_take(&r->qp->lock);
    if (r->qp->dp)
        want = r->qp->dp->want_out && !r->qp->dp->stopped;
    iw_lock_give(&r->qp->lock);
    if (want)
        check_err(iw_tx_run(r->qp), "the TX engine");
}

/* ---- the peer's stream ---- */

struct peer {
    uint32_t msn[3];        /* next MSN per queue (RFC 5041 §5.1: from 1) */
    uint32_t mo;            /* next MO of the open Send */
    uint64_t rresp_off;     /* Read Response bytes sent so far */
    uint64_t read_to;       /* the posted Read's sink TO */
};

static uint32_t stag_sel(struct run *r, struct fz_in *in, uint8_t sel)
{
    unsigned which = sel & 7, reg = (sel >> 3) & 3;
    switch (which) {
    case 0: case 1: case 2: case 3:
        return r->reg[which].token;
    case 4:
        return fz_u32(in);
    case 5:
        return r->reg[reg].token ^ (1u + fz_u8(in) % 255u);
    case 6:
        return r->reg[reg].token + 0x100u;
    default:
        return 0;
    }
}

/* A TO near the region's edges is where bounds checks live: bits 5-6 of the selector count the
 * offset from the start, back from the start, back from the end or on from the end. */
static uint64_t to_sel(struct run *r, struct fz_in *in, uint8_t sel)
{
    if (sel & 0x80)
        return fz_u64(in);
    unsigned which = sel & 7, reg = which < NREG ? which : (sel >> 3) & 3;
    uint64_t p = (uint64_t)(uintptr_t)r->reg[reg].p, len = r->reg[reg].len, off = fz_u16(in);
    switch ((sel >> 5) & 3) {
    case 0: return p + off;
    case 1: return p - off;
    case 2: return p + len - off;
    default: return p + len + off;
    }
}

/* Appends one record's bytes to the stream; false at the end of the input. */
static bool next_record(struct run *r, struct peer *pr, struct fz_in *in, struct fz_log *s)
{
    if (!in->n)
        return false;
    uint8_t kind = fz_u8(in);
    if (kind < 0x80) {
        size_t n = (size_t)kind + 1 < in->n ? (size_t)kind + 1 : in->n;
        fz_log_put(s, in->p, n);
        in->p += n;
        in->n -= n;
        return true;
    }
    struct iw_fpdu_hdr h;
    memset(&h, 0, sizeof h);
    h.opcode = kind & 15;
    h.last = (kind & 0x10) != 0;
    bool autoseq = (kind & 0x20) != 0, corrupt = (kind & 0x40) != 0;
    uint8_t sel = fz_u8(in);
    h.stag = stag_sel(r, in, sel);
    h.to = to_sel(r, in, sel);
    uint16_t pl = fz_u16(in);
    static uint8_t pay[16384];
    size_t plen;
    if (pl & 0x8000) {
        plen = pl & 0x3fff;
        for (size_t i = 0; i < plen; i++)
            pay[i] = (uint8_t)(i * 7 + 1);
    } else {
        plen = pl & 0x7ff;
        fz_bytes(in, pay, plen);
    }
    switch (h.opcode) {
    case IW_OP_SEND: case IW_OP_SEND_SE: case IW_OP_SEND_INV: case IW_OP_SEND_SE_INV:
        if (autoseq) {
            h.msn = pr->msn[IW_QN_SEND];
            h.mo = pr->mo;
        } else {
            h.msn = fz_u32(in);
            h.mo = fz_u32(in);
        }
        if (h.opcode == IW_OP_SEND_INV || h.opcode == IW_OP_SEND_SE_INV)
            h.inv_stag = stag_sel(r, in, fz_u8(in));
        break;
    case IW_OP_READ_RESP:
        if (autoseq) {
            h.stag = r->reg[3].token;
            h.to = pr->read_to + pr->rresp_off;
        }
        break;
    case IW_OP_READ_REQ: {
        h.last = true;
        plen = 0;
        h.msn = autoseq ? pr->msn[IW_QN_READ_REQ] : fz_u32(in);
        h.rr.sink_stag = fz_u32(in);
        h.rr.sink_to = fz_u64(in);
        h.rr.size = fz_u16(in);
        uint8_t ssel = fz_u8(in);
        h.rr.src_stag = stag_sel(r, in, ssel);
        h.rr.src_to = to_sel(r, in, ssel);
        break;
    }
    case IW_OP_TERMINATE:
        h.last = true;
        plen = 0;
        h.msn = autoseq ? pr->msn[IW_QN_TERMINATE] : fz_u32(in);
        h.term.layer = fz_u8(in) & 15;
        h.term.etype = fz_u8(in) & 15;
        h.term.ecode = fz_u8(in);
        break;
    default:
        break;
    }
    static uint8_t fp[16384 + 256];
    struct iw_iov v = { pay, plen };
    int n = iw_fpdu_build(&h, &v, plen ? 1 : 0, r->crc, fp, sizeof fp);
    uint16_t at = corrupt ? fz_u16(in) : 0;
    uint8_t mask = corrupt ? (uint8_t)(fz_u8(in) | 1) : 0;
    if (n <= 0)
        return true;                              /* an opcode we cannot send: nothing */
    if (corrupt)
        fp[at % (unsigned)n] ^= mask;
    static int debug = -1;
    if (debug < 0)
        debug = getenv("FUZZ_RX_DEBUG") != NULL;
    if (debug)
        fprintf(stderr, "record op %u last %d stag %08x to %llx plen %zu msn %u mo %u at %zu len %d\n", h.opcode, h.last,
                h.stag, (unsigned long long)h.to, plen, h.msn, h.mo, s->n, n);
    fz_log_put(s, fp, (size_t)n);
    if (autoseq) {
        switch (h.opcode) {
        case IW_OP_SEND: case IW_OP_SEND_SE: case IW_OP_SEND_INV: case IW_OP_SEND_SE_INV:
            pr->mo += (uint32_t)plen;
            if (h.last) {
                pr->msn[IW_QN_SEND]++;
                pr->mo = 0;
            }
            break;
        case IW_OP_READ_RESP:
            pr->rresp_off += plen;
            break;
        case IW_OP_READ_REQ:
            pr->msn[IW_QN_READ_REQ]++;
            break;
        case IW_OP_TERMINATE:
            pr->msn[IW_QN_TERMINATE]++;
            break;
        default:
            break;
        }
    }
    return true;
}

/* ---- one connection ---- */

static void set_nb(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    FZ_CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0, "fcntl: %s", strerror(errno));
}

static void post_recv(struct run *r, struct fz_in *in, bool two)
{
    struct region *g = &r->reg[2];
    NDK_SGE sge[2];
    uint64_t total = 0;
    unsigned n = two ? 2 : 1;
    for (unsigned i = 0; i < n; i++) {
        size_t off = fz_u16(in) % g->len;
        size_t len = fz_u16(in) % (g->len - off + 1);
        sge[i].VirtualAddress = g->p + off;
        sge[i].Length = (ULONG)len;
        sge[i].MemoryRegionToken = r->reg[2].mr->Dispatch->NdkGetLocalTokenFromMr(r->reg[2].mr);
        region_allow(g, off, len);
        total += len;
    }
    struct posted *p = &r->req[r->nreq];
    p->ctx = CTX_RECV + r->nreq;
    p->len = total;
    NTSTATUS st = r->srq ? r->srq->Dispatch->NdkSrqReceive(r->srq, (void *)p->ctx, sge, n)
                         : r->ndk->Dispatch->NdkReceive(r->ndk, (void *)p->ctx, sge, n);
    FZ_CHECK(st == STATUS_SUCCESS, "posting a receive: 0x%08x", (unsigned)st);
    r->nreq++;
}

static void connect_qp(struct run *r, uint8_t ird)
{
    int sv[2];
    FZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s", strerror(errno));
    set_nb(sv[0]);
    set_nb(sv[1]);
    r->qpfd = sv[0];
    r->fd = sv[1];
    struct iw_qp *qp = r->qp;
    iw_lock_take(&qp->lock);
    qp->fd = sv[0];
    qp->params.crc = r->crc;
    qp->params.mpa_rev = 2;
    qp->params.ird = 1u + ird % 8u;
    qp->params.ord = 4;
    qp->params.mss = 1460;
    qp->params.mulpdu = iw_fpdu_mulpdu(qp->params.mss, false);
    FZ_CHECK(iw_qp_modify_locked(qp, IW_QP_CONNECTING) == 0 && iw_qp_modify_locked(qp, IW_QP_RTS) == 0,
             "QP to RTS");
    iw_lock_give(&qp->lock);
    iw_qp_connection_established(qp);
    FZ_CHECK(!g_cm_failed, "the data path did not come up: %d", g_cm_failed);
}

/* Tears the connection down as the CM does when it is lost, then closes everything. */
static void teardown(struct run *r, int err)
{
    struct iw_qp *qp = r->qp;
    drain_out(r);
    iw_lock_take(&qp->lock);
    iw_qp_set_error_locked(qp, err);
    if (qp->state != IW_QP_ERROR)
        iw_qp_modify_locked(qp, IW_QP_ERROR);
    iw_lock_give(&qp->lock);
    iw_qp_connection_lost(qp, err);
    check_err(g_cm_failed, "the TX engine");
    iw_lock_take(&qp->lock);
    iw_qp_flush_locked(qp);
    iw_lock_give(&qp->lock);
    drain_out(r);
    poll_cq(r);
    /* A receive still in the SRQ belongs to the SRQ, not to the QP: the QP's flush leaves it. */
    for (unsigned i = 0; i < r->nreq; i++)
        FZ_CHECK(r->req[i].done == 1 || (r->srq && !r->req[i].is_read && !r->req[i].done),
                 "request %p completed %d times", (void *)r->req[i].ctx, r->req[i].done);
    errno = 0;
    FZ_CHECK(fcntl(r->qpfd, F_GETFD) == -1 && errno == EBADF, "the QP's socket is still open after the teardown");
    FZ_CHECK(r->ndk->Dispatch->NdkCloseQp(&r->ndk->Header, NULL, NULL) == STATUS_SUCCESS, "NdkCloseQp");
    run_work();
    if (r->srq)
        FZ_CHECK(r->srq->Dispatch->NdkCloseSrq(&r->srq->Header, NULL, NULL) == STATUS_SUCCESS, "NdkCloseSrq");
    FZ_CHECK(r->cq->Dispatch->NdkCloseCq(&r->cq->Header, NULL, NULL) == STATUS_SUCCESS, "NdkCloseCq");
    run_work();
    close(r->fd);
    for (int i = 0; i < NREG; i++) {
        region_check(&r->reg[i], i);
        region_free(&r->reg[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const ULONG reg_flags[NREG] = {
        NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
        NDK_MR_FLAG_ALLOW_REMOTE_READ,
        NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
        NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
    };
    struct fz_in in = { data, size };
    static struct run r;
    struct peer pr = { .msn = { 1, 1, 1 } };
    struct fz_log stream = { 0 };
    uint8_t sizes[32];

    env_init();
    memset(&r, 0, sizeof r);
    g_cm_failed = 0;
    uint8_t flags = fz_u8(&in);
    uint8_t ird = fz_u8(&in);
    size_t nsizes = fz_u8(&in) % 33u;
    fz_bytes(&in, sizes, nsizes);
    r.crc = flags & 1;
    bool low = (flags & 8) != 0;
    for (int i = 0; i < NREG; i++)
        region_make(&r.reg[i], 1u + fz_u16(&in) % REG_MAX, low, reg_flags[i]);
    region_allow(&r.reg[0], 0, r.reg[0].len);

    FZ_CHECK(iw_create_cq(&g_ad.base.ndk, 256, NULL, NULL, NULL, NULL, NULL, &r.cq) == STATUS_SUCCESS, "create CQ");
    if (flags & 2) {
        FZ_CHECK(iw_create_srq(g_pd, 16, 2, 0, NULL, NULL, NULL, NULL, NULL, &r.srq) == STATUS_SUCCESS, "create SRQ");
        FZ_CHECK(iw_create_qp_with_srq(g_pd, r.cq, r.cq, r.srq, (void *)1, 8, 2, 64, NULL, NULL, &r.ndk) ==
                     STATUS_SUCCESS, "create QP");
    } else {
        FZ_CHECK(iw_create_qp(g_pd, r.cq, r.cq, (void *)1, 16, 8, 2, 2, 64, NULL, NULL, &r.ndk) == STATUS_SUCCESS,
                 "create QP");
    }
    r.qp = to_iw_qp(r.ndk);
    unsigned nrecv = fz_u8(&in) % (MAX_RECV + 1u);
    for (unsigned i = 0; i < nrecv; i++)
        post_recv(&r, &in, (flags & 0x20) != 0);
    size_t roff = fz_u16(&in) % r.reg[3].len;
    size_t rlen = 1u + fz_u16(&in) % (r.reg[3].len - roff);
    struct iw_fpdu_rx_cfg ocfg = { .crc = r.crc, .check_seq = true };
    iw_fpdu_rx_init(&r.out, &ocfg);
    connect_qp(&r, ird);

    if (flags & 4) {
        /* Our Read: its Response may land in [roff, roff + rlen) of the sink and nowhere else. */
        NDK_SGE s = { .VirtualAddress = r.reg[3].p + roff, .Length = (ULONG)rlen,
                      .MemoryRegionToken = r.reg[3].mr->Dispatch->NdkGetLocalTokenFromMr(r.reg[3].mr) };
        struct posted *p = &r.req[r.nreq++];
        p->ctx = CTX_READ;
        p->len = rlen;
        p->is_read = true;
        region_allow(&r.reg[3], roff, rlen);
        pr.read_to = (uint64_t)(uintptr_t)s.VirtualAddress;
        NTSTATUS st = r.ndk->Dispatch->NdkRead(r.ndk, (void *)p->ctx, &s, 1, (uint64_t)(uintptr_t)r.reg[1].p + 16,
                                                r.reg[1].token ^ 0x5a5a00u, 0);
        FZ_CHECK(st == STATUS_SUCCESS, "posting the Read: 0x%08x", (unsigned)st);
        drain_out(&r);
    }

    while (stream.n < (1u << 20) && next_record(&r, &pr, &in, &stream))
        ;

    /* The stream's Send messages, as a deframer with the engine's settings sees them: the
     * engine cannot act on anything after the first error this one finds. */
    static struct iw_fpdu_rx model;
    struct iw_fpdu_rx_cfg mcfg = { .crc = r.crc, .check_seq = true };
    iw_fpdu_rx_init(&model, &mcfg);
    for (size_t mpos = 0; mpos < stream.n;) {
        struct iw_fpdu_event ev;
        size_t used = 0;
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&model, stream.b + mpos, stream.n - mpos, &used, &ev);
        mpos += used;
        if (t == IW_FPDU_EV_ERROR || t == IW_FPDU_EV_NEED_MORE)
            break;
        if (t == IW_FPDU_EV_END && ev.hdr->last &&
            (ev.hdr->opcode == IW_OP_SEND || ev.hdr->opcode == IW_OP_SEND_SE || ev.hdr->opcode == IW_OP_SEND_INV ||
             ev.hdr->opcode == IW_OP_SEND_SE_INV))
            r.sends_in++;
    }

    int err = 0;
    size_t pos = 0, k = 0;
    while (pos < stream.n && !err) {
        uint8_t sz = nsizes ? sizes[k++ % nsizes] : 0;
        size_t want = !nsizes ? 1 : sz == 255 ? stream.n - pos : (size_t)sz + 1;
        if (want > stream.n - pos)
            want = stream.n - pos;
        ssize_t w = send(r.fd, stream.b + pos, want, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            FZ_CHECK(errno == EAGAIN || errno == EWOULDBLOCK || errno == EPIPE || errno == ECONNRESET,
                     "send to the QP: %s", strerror(errno));
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                break;
            w = 0;
        }
        pos += (size_t)w;
        err = iw_rx_run(r.qp);
        check_err(err, "the RX engine");
        drain_out(&r);
        poll_cq(&r);
        if (w == 0 && !err) {
            /* The QP's receive buffer is full and the engine read nothing: it refuses to read
             * (a dead stream); nothing more can go in. */
            break;
        }
    }
    if (!err && (flags & 0x10)) {
        shutdown(r.fd, SHUT_WR);
        err = iw_rx_run(r.qp);
        check_err(err, "the RX engine");
        FZ_CHECK(err != 0, "the engine ignored the peer's FIN");
    }
    drain_out(&r);
    poll_cq(&r);
    teardown(&r, err ? err : -ESHUTDOWN);
    fz_log_free(&stream);
    return 0;
}
