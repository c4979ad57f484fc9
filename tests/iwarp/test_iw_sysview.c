/* The iwarp provider's records in the system view (ndk/sysview.h, ndk-iwarp(7) "System view"),
 * read by one of the two processes with ndk_rt_sysview_read, over 127.0.0.1 and ::1, in a
 * runtime directory of the test's own (NDK_RUNTIME_DIR):
 *
 *   the client sends NSEND Sends of SLEN bytes, one Write of WLEN and one Read of RLEN; the
 *   server has posted NSEND + 1 receives, so one stays outstanding with nothing sent for it.
 *   Then, from the client: each process has one QP record in RTS whose 4-tuple is the other's
 *   mirrored, whose pd / cq / connector ids name records of the same process, and whose
 *   counters are exactly what was moved (requests, payload bytes and messages each way, no
 *   error); the server's outstanding receive shows as rq_posted - rq_completed = 1 with an
 *   oldest post time that is set and not in the future; CQ, PD, MR (with its registered length,
 *   never its token or address), connector and listener records are there; neither process's
 *   STags nor buffer addresses appear in any record's bytes; the adapter records say the NDK
 *   counters live there and count the connection; once both processes closed their objects,
 *   none of their records is left. */
#define _GNU_SOURCE
#include "iwtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ndk/sysview.h>

#define TMO 10000
#define NSEND 3u
#define SLEN 1000u
#define WLEN 5000u
#define RLEN 3000u
#define SRV_BUF 16384u
#define SRV_RECV_OFF 8192u
#define CLI_BUF 8192u
#define CLI_READ_OFF 4096u

struct arg {
    int family;
    struct iwt_chan ch;
};

/* What the client learns from the server, and its own, for the checks. */
struct facts {
    uint32_t srv_pid, cli_pid;
    uint32_t srv_token, cli_token;
    uint64_t srv_addr, cli_addr;
    uint16_t srv_port;                /* the listener's */
    int family;
};

static _Atomic(NDK_CONNECTOR *) g_in;
static atomic_int g_ev;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    atomic_store(&g_in, c);
    atomic_fetch_add(&g_ev, 1);
}

static void expect(NDK_CQ *cq, NDK_OPERATION_TYPE type, size_t bytes)
{
    NDK_RESULT_EX r;

    CHECK_MSG(iwt_cq_wait(cq, &r, TMO), "no completion");
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK_EQ(r.Type, type);
    if (type == NdkOperationTypeReceive)
        CHECK_EQ(r.BytesTransferred, bytes);
}

static void disconnect_close(NDK_CONNECTOR *c)
{
    struct iwt_req rq;

    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    st = iwt_req_wait(&rq, st, TMO);
    CHECK_MSG(st == STATUS_SUCCESS || st == STATUS_CONNECTION_INVALID || st == STATUS_CONNECTION_DISCONNECTED,
              "disconnect: 0x%08x", (unsigned)st);
    iwt_close_obj(c, TMO);
}

static int server(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_req rq;
    NDK_PD *pd;
    NDK_CQ *cq;
    NDK_QP *qp;
    NDK_MR *mr;
    PMDL mdl;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;
    uint8_t *buf = aligned_alloc(4096, SRV_BUF);

    CHECK(buf);
    memset(buf, 0x5a, SRV_BUF);
    iwt_open(&t, a->family);
    CHECK_STATUS(t.ad->Dispatch->NdkCreatePd(t.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateCq(t.ad, 64, NULL, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, NSEND + 2, 4, 1, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    mr = iwt_mr_register(pd, buf, SRV_BUF,
                         NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
                         &mdl);
    uint32_t tok = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
    for (uint32_t i = 0; i < NSEND + 1; i++) {
        NDK_SGE sge = { .VirtualAddress = buf + SRV_RECV_OFF + i * SLEN, .Length = SLEN,
                        .MemoryRegionToken = mr->Dispatch->NdkGetLocalTokenFromMr(mr) };
        CHECK_STATUS(qp->Dispatch->NdkReceive(qp, NULL, &sge, 1), STATUS_SUCCESS);
    }
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));
    iwt_send(iwt_srv_tx(&a->ch), (uint32_t)getpid());
    iwt_send(iwt_srv_tx(&a->ch), tok);
    iwt_send(iwt_srv_tx(&a->ch), (uint32_t)(uintptr_t)buf);
    iwt_send(iwt_srv_tx(&a->ch), (uint32_t)((uint64_t)(uintptr_t)buf >> 32));

    CHECK_MSG(iwt_wait_atomic(&g_ev, 1, TMO), "no connect event");
    NDK_CONNECTOR *c = atomic_load(&g_in);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkAccept(c, qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    for (uint32_t i = 0; i < NSEND; i++)
        expect(cq, NdkOperationTypeReceive, SLEN);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 1);       /* the client's Write and Read are done */
    iwt_send(iwt_srv_tx(&a->ch), 1);

    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 2);       /* close everything */
    disconnect_close(c);
    iwt_close_obj(l, TMO);
    iwt_close_obj(qp, TMO);
    iwt_mr_release(mr, mdl, TMO);
    iwt_close_obj(cq, TMO);
    iwt_close_obj(pd, TMO);
    iwt_send(iwt_srv_tx(&a->ch), 2);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 3);       /* the client has looked */
    iwt_close(&t);
    free(buf);
    return 0;
}

/* ---- looking at the registry ---- */

static const ndk_rt_sv_process *find_proc(const ndk_rt_sysview *sv, uint32_t pid)
{
    for (ULONG i = 0; i < sv->count; i++)
        if (sv->processes[i].header.pid == pid)
            return &sv->processes[i];
    return NULL;
}

/* The only record of type in p (NULL when none; *n says how many). */
static const struct ndk_sv_rec *only(const ndk_rt_sv_process *p, unsigned type, unsigned *n)
{
    const struct ndk_sv_rec *r = NULL;

    *n = 0;
    for (ULONG i = 0; p && i < p->count; i++)
        if (p->records[i].type == type) {
            r = &p->records[i];
            ++*n;
        }
    return r;
}

static const struct ndk_sv_rec *by_id(const ndk_rt_sv_process *p, uint64_t id)
{
    for (ULONG i = 0; p && i < p->count; i++)
        if (p->records[i].id == id)
            return &p->records[i];
    return NULL;
}

static bool is_loopback(const struct ndk_sv_addr *a, int family)
{
    static const uint8_t v4[4] = { 127, 0, 0, 1 };
    static const uint8_t v6[16] = { [15] = 1 };

    if (a->family != family)
        return false;
    return family == AF_INET ? memcmp(a->addr, v4, 4) == 0 : memcmp(a->addr, v6, 16) == 0;
}

static bool contains(const void *hay, size_t n, const void *needle, size_t k)
{
    return memmem(hay, n, needle, k) != NULL;
}

/* Why the view is not (yet) what it must be, into why; false when it is. Counters written by
 * the other process's engines may trail what its completions showed, so the caller re-reads. */
static bool traffic_wrong(const ndk_rt_sysview *sv, const struct facts *f, char *why, size_t cap)
{
#define WRONG(...) do { snprintf(why, cap, __VA_ARGS__); return true; } while (0)
    const ndk_rt_sv_process *cp = find_proc(sv, f->cli_pid), *sp = find_proc(sv, f->srv_pid);
    const struct ndk_sv_rec *q[2], *r;
    unsigned n;

    if (!cp || !sp)
        WRONG("process missing from the registry: client %s, server %s", cp ? "there" : "missing",
              sp ? "there" : "missing");
    for (int side = 0; side < 2; side++) {
        const ndk_rt_sv_process *p = side ? sp : cp;
        const char *who = side ? "server" : "client";

        q[side] = only(p, NDK_SV_QP, &n);
        if (n != 1)
            WRONG("%s: %u QP records, expected 1", who, n);
        const struct ndk_sv_qp *x = &q[side]->u.qp;
        if (strncmp(x->state, "RTS", sizeof x->state) != 0)
            WRONG("%s: QP state \"%.16s\", expected RTS", who, x->state);
        if (!is_loopback(&x->local, f->family) || !is_loopback(&x->remote, f->family))
            WRONG("%s: QP addresses not the loopback of the family (%u / %u)", who, x->local.family,
                  x->remote.family);
        if (!(r = by_id(p, x->pd)) || r->type != NDK_SV_PD)
            WRONG("%s: QP's pd %llu is not a PD record", who, (unsigned long long)x->pd);
        if (!(r = by_id(p, x->rcq)) || r->type != NDK_SV_CQ || x->icq != x->rcq)
            WRONG("%s: QP's CQs %llu / %llu are not its CQ record", who, (unsigned long long)x->rcq,
                  (unsigned long long)x->icq);
        if (!(r = by_id(p, x->connector)) || r->type != NDK_SV_CONNECTOR)
            WRONG("%s: QP's connector %llu is not a connector record", who, (unsigned long long)x->connector);
        if (strncmp(r->u.conn.state, "ESTABLISHED", sizeof r->u.conn.state) != 0 || r->u.conn.qp != q[side]->id)
            WRONG("%s: connector \"%.16s\" qp %llu", who, r->u.conn.state, (unsigned long long)r->u.conn.qp);
        if (x->ird != 1 || x->ord != 1 || r->u.conn.ird != 1 || r->u.conn.ord != 1)
            WRONG("%s: ird/ord %u/%u, connector %u/%u, expected 1/1", who, x->ird, x->ord, r->u.conn.ird,
                  r->u.conn.ord);
        if (x->srq || x->first_error || x->errors)
            WRONG("%s: srq %llu first_error %d errors %llu", who, (unsigned long long)x->srq, x->first_error,
                  (unsigned long long)x->errors);
        if (x->sq_oldest_ns || x->sq_posted != x->sq_completed)
            WRONG("%s: SQ posted %llu completed %llu oldest %llu, expected nothing outstanding", who,
                  (unsigned long long)x->sq_posted, (unsigned long long)x->sq_completed,
                  (unsigned long long)x->sq_oldest_ns);
        if (!(r = only(p, NDK_SV_MR, &n)) || n != 1 || r->u.mem.pd != x->pd || !r->u.mem.bound || r->u.mem.fast_register ||
            r->u.mem.length != (side ? SRV_BUF : CLI_BUF))
            WRONG("%s: MR record (%u of them) pd %llu bound %u length %llu", who, n,
                  r ? (unsigned long long)r->u.mem.pd : 0, r ? r->u.mem.bound : 0,
                  r ? (unsigned long long)r->u.mem.length : 0);
        if (!(r = by_id(p, q[side]->adapter)) || r->type != NDK_SV_ADAPTER ||
            !(r->u.adapter.flags & NDK_SV_ADAPTER_COUNTERS))
            WRONG("%s: the QP's adapter record %llu is missing or has no NDK_SV_ADAPTER_COUNTERS", who,
                  (unsigned long long)q[side]->adapter);
        /* NDIS_NDK_PERFORMANCE_COUNTERS: 0 Connect, 1 Accept, 4 ActiveConnection, 27 RDMAOutOctets */
        if (r->u.adapter.counters[side ? 1 : 0] != 1 || r->u.adapter.counters[4] != 1 || !r->u.adapter.counters[27] ||
            !r->u.adapter.counters[26])
            WRONG("%s: adapter counters Connect %llu Accept %llu Active %llu In %llu Out %llu", who,
                  (unsigned long long)r->u.adapter.counters[0], (unsigned long long)r->u.adapter.counters[1],
                  (unsigned long long)r->u.adapter.counters[4], (unsigned long long)r->u.adapter.counters[26],
                  (unsigned long long)r->u.adapter.counters[27]);
    }
    /* The 4-tuple: each end's local is the other's remote. */
    if (q[0]->u.qp.local.port != q[1]->u.qp.remote.port || q[1]->u.qp.local.port != q[0]->u.qp.remote.port ||
        q[1]->u.qp.local.port != f->srv_port)
        WRONG("4-tuple: client %u -> %u, server %u -> %u, listener %u", q[0]->u.qp.local.port,
              q[0]->u.qp.remote.port, q[1]->u.qp.local.port, q[1]->u.qp.remote.port, f->srv_port);
    if (!(r = only(sp, NDK_SV_LISTENER, &n)) || n != 1 || strncmp(r->u.ep.state, "LISTENING", 16) != 0 ||
        r->u.ep.local.port != f->srv_port)
        WRONG("server: listener record (%u) \"%.16s\" port %u", n, r ? r->u.ep.state : "", r ? r->u.ep.local.port : 0);

    const struct ndk_sv_qp *c = &q[0]->u.qp, *s = &q[1]->u.qp;
    /* Client: NSEND Sends + a Write + a Read posted and completed; out go the Sends' and the
     * Write's payload, in comes the Read Response. Server: the mirror, plus one receive left. */
    if (c->sq_posted != NSEND + 2 || c->rq_posted || c->bytes_out != NSEND * SLEN + WLEN || c->ops_out != NSEND + 1 ||
        c->bytes_in != RLEN || c->ops_in != 1)
        WRONG("client QP: sq %llu/%llu rq %llu out %llu B %llu ops in %llu B %llu ops",
              (unsigned long long)c->sq_posted, (unsigned long long)c->sq_completed, (unsigned long long)c->rq_posted,
              (unsigned long long)c->bytes_out, (unsigned long long)c->ops_out, (unsigned long long)c->bytes_in,
              (unsigned long long)c->ops_in);
    if (s->sq_posted || s->rq_posted != NSEND + 1 || s->rq_completed != NSEND || s->bytes_in != NSEND * SLEN + WLEN ||
        s->ops_in != NSEND + 1 || s->bytes_out != RLEN || s->ops_out != 1)
        WRONG("server QP: sq %llu rq %llu/%llu in %llu B %llu ops out %llu B %llu ops",
              (unsigned long long)s->sq_posted, (unsigned long long)s->rq_posted, (unsigned long long)s->rq_completed,
              (unsigned long long)s->bytes_in, (unsigned long long)s->ops_in, (unsigned long long)s->bytes_out,
              (unsigned long long)s->ops_out);
    if (c->rq_oldest_ns)
        WRONG("client: rq_oldest_ns %llu with no receive posted", (unsigned long long)c->rq_oldest_ns);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    if (!s->rq_oldest_ns || s->rq_oldest_ns > now_ns)
        WRONG("server: rq_oldest_ns %llu (now %llu) for its outstanding receive", (unsigned long long)s->rq_oldest_ns,
              (unsigned long long)now_ns);
    r = by_id(cp, c->rcq);
    if (r->u.cq.depth != 64 || r->u.cq.completions != NSEND + 2 || r->u.cq.polled != NSEND + 2 || r->u.cq.errors)
        WRONG("client CQ: depth %u completions %llu polled %llu errors %llu", r->u.cq.depth,
              (unsigned long long)r->u.cq.completions, (unsigned long long)r->u.cq.polled,
              (unsigned long long)r->u.cq.errors);
    r = by_id(sp, s->rcq);
    if (r->u.cq.completions != NSEND || r->u.cq.polled != NSEND || r->u.cq.errors)
        WRONG("server CQ: completions %llu polled %llu errors %llu", (unsigned long long)r->u.cq.completions,
              (unsigned long long)r->u.cq.polled, (unsigned long long)r->u.cq.errors);
    return false;
#undef WRONG
}

/* The bytes of a record's type-specific part a provider fills in: the rest of the union must stay
 * zero. The counters at the end of a QP, CQ or SRQ record are counts the test checks elsewhere;
 * they are left out of the token search, where a count may equal a (small) STag by chance. */
static size_t described_size(unsigned type)
{
    switch (type) {
    case NDK_SV_ADAPTER: return offsetof(struct ndk_sv_adapter, counters);
    case NDK_SV_QP: return offsetof(struct ndk_sv_qp, sq_posted);
    case NDK_SV_CQ: return offsetof(struct ndk_sv_cq, completions);
    case NDK_SV_SRQ: return offsetof(struct ndk_sv_srq, posted);
    case NDK_SV_MR:
    case NDK_SV_MW: return sizeof(struct ndk_sv_mem);
    case NDK_SV_CONNECTOR: return sizeof(struct ndk_sv_conn);
    case NDK_SV_LISTENER:
    case NDK_SV_SHARED_ENDPOINT: return sizeof(struct ndk_sv_endpoint);
    default: return 0;
    }
}

static size_t filled_size(unsigned type)
{
    switch (type) {
    case NDK_SV_ADAPTER: return sizeof(struct ndk_sv_adapter);
    case NDK_SV_QP: return sizeof(struct ndk_sv_qp);
    case NDK_SV_CQ: return sizeof(struct ndk_sv_cq);
    case NDK_SV_SRQ: return sizeof(struct ndk_sv_srq);
    default: return described_size(type);
    }
}

/* No STag (either byte order) and no buffer address of either side in any record's fields (the
 * header holds only the runtime's ids and times), and nothing past the fields its type has. */
static void check_no_secrets(const ndk_rt_sysview *sv, const struct facts *f)
{
    uint32_t toks[4] = { f->srv_token, f->cli_token, __builtin_bswap32(f->srv_token), __builtin_bswap32(f->cli_token) };
    uint64_t addrs[2] = { f->srv_addr, f->cli_addr };
    unsigned looked = 0;

    for (ULONG i = 0; i < sv->count; i++) {
        const ndk_rt_sv_process *p = &sv->processes[i];
        if (p->header.pid != f->srv_pid && p->header.pid != f->cli_pid)
            continue;
        for (ULONG k = 0; k < p->count; k++) {
            const struct ndk_sv_rec *r = &p->records[k];
            const uint8_t *u = r->u.raw;
            size_t desc = described_size(r->type), filled = filled_size(r->type);
            for (size_t b = filled; b < sizeof r->u.raw; b++)
                CHECK_MSG(u[b] == 0, "pid %u record %llu (%s) has byte %zu of its union set, past its fields",
                          p->header.pid, (unsigned long long)r->id, ndk_rt_sysview_type_name(r->type), b);
            for (int j = 0; j < 4; j++)
                CHECK_MSG(!contains(u, desc, &toks[j], 4), "pid %u record %llu (%s) holds an STag",
                          p->header.pid, (unsigned long long)r->id, ndk_rt_sysview_type_name(r->type));
            for (int j = 0; j < 2; j++)
                CHECK_MSG(!contains(u, filled, &addrs[j], 8), "pid %u record %llu (%s) holds a buffer address",
                          p->header.pid, (unsigned long long)r->id, ndk_rt_sysview_type_name(r->type));
            looked++;
        }
    }
    CHECK(looked > 0);
}

/* Object records of pid (everything but the adapter's). */
static unsigned objects_of(const ndk_rt_sysview *sv, uint32_t pid)
{
    const ndk_rt_sv_process *p = find_proc(sv, pid);
    unsigned n = 0;

    for (ULONG i = 0; p && i < p->count; i++)
        if (p->records[i].type != NDK_SV_ADAPTER)
            n++;
    return n;
}

static ndk_rt_sysview *read_view(void)
{
    ndk_rt_sysview *sv = NULL;

    CHECK_STATUS(ndk_rt_sysview_read(NULL, &sv), STATUS_SUCCESS);
    CHECK(sv);
    return sv;
}

static int client(void *p)
{
    struct arg *a = p;
    struct facts f = { .family = a->family, .cli_pid = (uint32_t)getpid() };
    struct iwt t;
    struct iwt_req rq;
    NDK_PD *pd;
    NDK_CQ *cq;
    NDK_QP *qp;
    NDK_MR *mr;
    PMDL mdl;
    NDK_CONNECTOR *c;
    uint8_t *buf = aligned_alloc(4096, CLI_BUF);
    char why[256] = "";

    CHECK(buf);
    memset(buf, 0xc1, CLI_BUF);
    f.srv_port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    f.srv_pid = iwt_recv(iwt_cli_rx(&a->ch), TMO);
    f.srv_token = iwt_recv(iwt_cli_rx(&a->ch), TMO);
    f.srv_addr = iwt_recv(iwt_cli_rx(&a->ch), TMO);
    f.srv_addr |= (uint64_t)iwt_recv(iwt_cli_rx(&a->ch), TMO) << 32;
    f.cli_addr = (uint64_t)(uintptr_t)buf;

    iwt_open(&t, a->family);
    CHECK_STATUS(t.ad->Dispatch->NdkCreatePd(t.ad, NULL, NULL, &pd), STATUS_SUCCESS);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateCq(t.ad, 64, NULL, NULL, NULL, NULL, NULL, &cq), STATUS_SUCCESS);
    CHECK_STATUS(pd->Dispatch->NdkCreateQp(pd, cq, cq, NULL, 4, 16, 1, 1, 0, NULL, NULL, &qp), STATUS_SUCCESS);
    mr = iwt_mr_register(pd, buf, CLI_BUF, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK, &mdl);
    f.cli_token = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
    SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, f.srv_port);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkConnect(c, qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                          iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);

    NDK_SGE sge = { .VirtualAddress = buf, .Length = SLEN, .MemoryRegionToken = f.cli_token };
    for (uint32_t i = 0; i < NSEND; i++) {
        CHECK_STATUS(qp->Dispatch->NdkSend(qp, NULL, &sge, 1, 0), STATUS_SUCCESS);
        expect(cq, NdkOperationTypeSend, 0);
    }
    sge.Length = WLEN;
    CHECK_STATUS(qp->Dispatch->NdkWrite(qp, NULL, &sge, 1, f.srv_addr, f.srv_token, 0), STATUS_SUCCESS);
    expect(cq, NdkOperationTypeWrite, 0);
    memset(buf + CLI_READ_OFF, 0, RLEN);
    sge.VirtualAddress = buf + CLI_READ_OFF;
    sge.Length = RLEN;
    CHECK_STATUS(qp->Dispatch->NdkRead(qp, NULL, &sge, 1, f.srv_addr, f.srv_token, 0), STATUS_SUCCESS);
    expect(cq, NdkOperationTypeRead, 0);
    CHECK_MSG(memcmp(buf + CLI_READ_OFF, buf, RLEN) == 0, "the Read did not bring the Write's bytes");
    iwt_send(iwt_cli_tx(&a->ch), 1);
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 1);       /* the server took its NSEND receives */

    /* The engines' counters may trail the completions by a moment: look again for a while. */
    ndk_rt_sysview *sv = NULL;
    for (int tries = 0;; tries++) {
        sv = read_view();
        if (!traffic_wrong(sv, &f, why, sizeof why))
            break;
        CHECK_MSG(tries < 100, "%s", why);
        ndk_rt_sysview_free(sv);
        usleep(50 * 1000);
    }
    check_no_secrets(sv, &f);
    ndk_rt_sysview_free(sv);

    iwt_send(iwt_cli_tx(&a->ch), 2);
    disconnect_close(c);
    iwt_close_obj(qp, TMO);
    iwt_mr_release(mr, mdl, TMO);
    iwt_close_obj(cq, TMO);
    iwt_close_obj(pd, TMO);
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 2);       /* the server closed its objects */
    sv = read_view();
    CHECK_MSG(find_proc(sv, f.srv_pid) && find_proc(sv, f.cli_pid), "a process left the registry early");
    CHECK_MSG(objects_of(sv, f.cli_pid) == 0, "client: %u object records after every close",
              objects_of(sv, f.cli_pid));
    CHECK_MSG(objects_of(sv, f.srv_pid) == 0, "server: %u object records after every close",
              objects_of(sv, f.srv_pid));
    ndk_rt_sysview_free(sv);
    iwt_send(iwt_cli_tx(&a->ch), 3);
    iwt_close(&t);
    free(buf);
    return 0;
}

static void run(int family)
{
    struct arg a = { .family = family };

    atomic_store(&g_ev, 0);
    iwt_chan_init(&a.ch);
    iwt_run_pair(server, client, &a, 60000);
    iwt_chan_close(&a.ch);
}

int main(void)
{
    iwt_private_runtime_dir();
    unsetenv("NDK_SYSVIEW");
    iwt_for_each_family(run);
    printf("PASS\n");
    return 0;
}
