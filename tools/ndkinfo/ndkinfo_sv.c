/*
 * ndkinfo_sv.c - ndkinfo's machine-wide view: reads every registry the caller may read
 * (ndk_rt_sysview_read, ndk-sysview(7)) and lists connections with their owners and peers,
 * listeners and shared endpoints, per-process counters, and each process's objects the way
 * `rdma res show` does. Everything here runs in ndkinfo's one thread.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ndk/runtime.h>
#include <ndk/sysview.h>

#include "ndkinfo_sv.h"

typedef const ndk_rt_sv_process proc_t;
typedef const struct ndk_sv_rec rec_t;

/* One ND connection: a connector with a peer, or a connected QP no listed connector names. */
struct conn_row {
    proc_t *p;
    rec_t  *conn;                     /* NULL for a QP without a connector record */
    rec_t  *qp;                       /* NULL while no QP is attached */
    const struct ndk_sv_addr *local, *remote;
    proc_t *peer;                     /* the other end's process, when it is on this machine */
};

_Static_assert(NDK_SV_COUNTERS == 30, "the system view's counters are NDIS_NDK_PERFORMANCE_COUNTERS' words");
const char *const ndkinfo_counter_names[30] = {
    "Connect", "Accept", "ConnectFailure", "ConnectionError", "ActiveConnection",
    [25] = "CQError", [26] = "RDMAInOctets", [27] = "RDMAOutOctets", [28] = "RDMAInFrames", [29] = "RDMAOutFrames",
};

void ndkinfo_counters_missing(uint64_t mask, char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (int i = 0; i < 30; i++) {
        if (ndkinfo_counter_names[i] && (mask & (1ull << i)) && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? " " : "", ndkinfo_counter_names[i]);
    }
}

static uint64_t sv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *sv_addr(const struct ndk_sv_addr *a, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?", name[IF_NAMESIZE];
    if (a->family == AF_INET) {
        inet_ntop(AF_INET, a->addr, ip, sizeof ip);
        snprintf(buf, len, "%s:%u", ip, a->port);
    } else if (a->family == AF_INET6) {
        inet_ntop(AF_INET6, a->addr, ip, sizeof ip);
        if (a->scope_id)
            snprintf(buf, len, "[%s%%%s]:%u", ip, if_indextoname(a->scope_id, name) ? name : "?", a->port);
        else
            snprintf(buf, len, "[%s]:%u", ip, a->port);
    } else {
        snprintf(buf, len, "-");
    }
    return buf;
}

static int sv_addr_eq(const struct ndk_sv_addr *a, const struct ndk_sv_addr *b)
{
    if (a->family != b->family || a->port != b->port || !a->family)
        return 0;
    return memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

/* "qp#12" for a record id of process p; "-" for 0. */
static const char *sv_name(proc_t *p, uint64_t id, char *buf, size_t len)
{
    if (!id) {
        snprintf(buf, len, "-");
        return buf;
    }
    for (ULONG i = 0; i < p->count; i++)
        if (p->records[i].id == id) {
            snprintf(buf, len, "%s#%llu", ndk_rt_sysview_type_name(p->records[i].type), (unsigned long long)id);
            return buf;
        }
    snprintf(buf, len, "#%llu", (unsigned long long)id);
    return buf;
}

static rec_t *sv_find(proc_t *p, uint64_t id, unsigned type)
{
    if (!id)
        return NULL;
    for (ULONG i = 0; i < p->count; i++)
        if (p->records[i].id == id && p->records[i].type == type)
            return &p->records[i];
    return NULL;
}

/* "iwarp:lo" for a record's adapter. */
static const char *sv_adapter(proc_t *p, rec_t *r, char *buf, size_t len)
{
    rec_t *a = sv_find(p, r->adapter, NDK_SV_ADAPTER);
    if (a)
        snprintf(buf, len, "%s:%s", a->u.adapter.provider, a->u.adapter.ifname);
    else
        snprintf(buf, len, "-");
    return buf;
}

static uint64_t sv_age_ms(uint64_t since_ns, uint64_t now)
{
    return since_ns && now > since_ns ? (now - since_ns) / 1000000u : 0;
}

/* Outstanding requests: posted minus completed, read as two words the owner writes separately. */
static uint64_t sv_outstanding(uint64_t posted, uint64_t completed)
{
    return posted > completed ? posted - completed : 0;
}

static size_t sv_conn_rows(const ndk_rt_sysview *sv, long pid, struct conn_row *rows)
{
    size_t n = 0;
    for (ULONG i = 0; i < sv->count; i++) {
        proc_t *p = &sv->processes[i];
        for (ULONG j = 0; j < p->count; j++) {
            rec_t *r = &p->records[j];
            if (r->type == NDK_SV_CONNECTOR && r->u.conn.remote.family) {
                rec_t *qp = sv_find(p, r->u.conn.qp, NDK_SV_QP);
                rows[n++] = (struct conn_row){ p, r, qp, &r->u.conn.local, &r->u.conn.remote, NULL };
            } else if (r->type == NDK_SV_QP && r->u.qp.remote.family) {
                rec_t *c = sv_find(p, r->u.qp.connector, NDK_SV_CONNECTOR);
                int named = c && c->u.conn.remote.family;
                for (ULONG k = 0; k < p->count && !named; k++)
                    named = p->records[k].type == NDK_SV_CONNECTOR && p->records[k].u.conn.qp == r->id &&
                            p->records[k].u.conn.remote.family;
                if (!named)
                    rows[n++] = (struct conn_row){ p, NULL, r, &r->u.qp.local, &r->u.qp.remote, NULL };
            }
        }
    }
    /* The peer: a row of this machine (same network namespace) whose ends are ours crossed. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n && !rows[i].peer; j++)
            if (j != i && rows[j].p->header.net_ns == rows[i].p->header.net_ns &&
                sv_addr_eq(rows[j].local, rows[i].remote) && sv_addr_eq(rows[j].remote, rows[i].local))
                rows[i].peer = rows[j].p;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (!pid || rows[i].p->header.pid == (uint32_t)pid)
            rows[kept++] = rows[i];
    return kept;
}

static void sv_show_connections(const ndk_rt_sysview *sv, const struct ndkinfo_sv_opts *o, ndk_tool_json *j)
{
    size_t total = 0;
    for (ULONG i = 0; i < sv->count; i++)
        total += sv->processes[i].count;
    struct conn_row *rows = calloc(total ? total : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "ndkinfo: out of memory\n");
        return;
    }
    size_t n = sv_conn_rows(sv, o->pid, rows);
    char l[80], r[80], ad[64], name[48], qpn[48];
    if (o->json)
        ndk_tool_json_open(j, "connections", '[');
    else
        printf("  ND connections of every process:\n");
    if (!o->json && n)
        printf("    %-5s %-24s %-24s %-12s %7s %-15s %8s  %s\n", "Proto", "Local Address", "Foreign Address", "State",
               "PID", "Command", "Peer PID", "Adapter");
    for (size_t i = 0; i < n; i++) {
        const struct conn_row *c = &rows[i];
        const char *state = c->conn ? c->conn->u.conn.state : c->qp->u.qp.state;
        sv_addr(c->local, l, sizeof l);
        sv_addr(c->remote, r, sizeof r);
        sv_adapter(c->p, c->conn ? c->conn : c->qp, ad, sizeof ad);
        if (o->json) {
            ndk_tool_json_open(j, NULL, '{');
            ndk_tool_json_u64(j, "pid", c->p->header.pid);
            ndk_tool_json_str(j, "comm", c->p->header.comm);
            ndk_tool_json_str(j, "adapter", ad);
            ndk_tool_json_str(j, "object", sv_name(c->p, c->conn ? c->conn->id : c->qp->id, name, sizeof name));
            ndk_tool_json_str(j, "qp", c->qp ? sv_name(c->p, c->qp->id, qpn, sizeof qpn) : "");
            ndk_tool_json_str(j, "state", state);
            ndk_tool_json_str(j, "local", l);
            ndk_tool_json_str(j, "remote", r);
            if (c->peer) {
                ndk_tool_json_u64(j, "peer_pid", c->peer->header.pid);
                ndk_tool_json_str(j, "peer_comm", c->peer->header.comm);
            }
            if (c->qp) {
                const struct ndk_sv_qp *q = &c->qp->u.qp;
                ndk_tool_json_u64(j, "bytes_out", q->bytes_out);
                ndk_tool_json_u64(j, "bytes_in", q->bytes_in);
                ndk_tool_json_u64(j, "ops_out", q->ops_out);
                ndk_tool_json_u64(j, "ops_in", q->ops_in);
                ndk_tool_json_u64(j, "errors", q->errors);
            }
            ndk_tool_json_close(j, '}');
        } else {
            char peer[16] = "-";
            if (c->peer)
                snprintf(peer, sizeof peer, "%u", c->peer->header.pid);
            printf("    %-5s %-24s %-24s %-12s %7u %-15s %8s  %s\n", "ND", l, r, state, c->p->header.pid,
                   c->p->header.comm, peer, ad);
        }
    }
    if (o->json)
        ndk_tool_json_close(j, ']');
    else if (!n)
        printf("    no process has an ND connection\n");
    free(rows);
}

static void sv_show_endpoints(const ndk_rt_sysview *sv, const struct ndkinfo_sv_opts *o, ndk_tool_json *j)
{
    char l[80], ad[64], name[48];
    size_t n = 0;
    if (o->json)
        ndk_tool_json_open(j, "endpoints", '[');
    else
        printf("  ND listeners and shared endpoints of every process:\n");
    for (ULONG i = 0; i < sv->count; i++) {
        proc_t *p = &sv->processes[i];
        if (o->pid && p->header.pid != (uint32_t)o->pid)
            continue;
        for (ULONG k = 0; k < p->count; k++) {
            rec_t *r = &p->records[k];
            if (r->type != NDK_SV_LISTENER && r->type != NDK_SV_SHARED_ENDPOINT)
                continue;
            const char *kind = r->type == NDK_SV_LISTENER ? "listener" : "shared";
            sv_addr(&r->u.ep.local, l, sizeof l);
            sv_adapter(p, r, ad, sizeof ad);
            if (o->json) {
                ndk_tool_json_open(j, NULL, '{');
                ndk_tool_json_str(j, "kind", kind);
                ndk_tool_json_str(j, "object", sv_name(p, r->id, name, sizeof name));
                ndk_tool_json_str(j, "state", r->u.ep.state);
                ndk_tool_json_str(j, "local", l);
                ndk_tool_json_u64(j, "pid", p->header.pid);
                ndk_tool_json_str(j, "comm", p->header.comm);
                ndk_tool_json_str(j, "adapter", ad);
                ndk_tool_json_close(j, '}');
            } else {
                if (!n)
                    printf("    %-9s %-24s %-12s %7s %-15s %s\n", "Kind", "Local Address", "State", "PID", "Command",
                           "Adapter");
                printf("    %-9s %-24s %-12s %7u %-15s %s\n", r->type == NDK_SV_LISTENER ? "LISTENER" : "SHARED", l,
                       r->u.ep.state, p->header.pid, p->header.comm, ad);
            }
            n++;
        }
    }
    if (o->json)
        ndk_tool_json_close(j, ']');
    else if (!n)
        printf("    no process has a listener or shared endpoint\n");
}

/* Sums of the QP, CQ and SRQ counters of one process. */
struct sv_sums {
    uint64_t objects[NDK_SV_TYPE_COUNT];
    uint64_t sq_posted, sq_completed, rq_posted, rq_completed;
    uint64_t bytes_out, bytes_in, ops_out, ops_in, errors, cq_errors;
};

static void sv_sum(proc_t *p, struct sv_sums *s)
{
    memset(s, 0, sizeof *s);
    for (ULONG k = 0; k < p->count; k++) {
        rec_t *r = &p->records[k];
        if (r->type < NDK_SV_TYPE_COUNT)
            s->objects[r->type]++;
        if (r->type == NDK_SV_QP) {
            const struct ndk_sv_qp *q = &r->u.qp;
            s->sq_posted += q->sq_posted;
            s->sq_completed += q->sq_completed;
            s->rq_posted += q->rq_posted;
            s->rq_completed += q->rq_completed;
            s->bytes_out += q->bytes_out;
            s->bytes_in += q->bytes_in;
            s->ops_out += q->ops_out;
            s->ops_in += q->ops_in;
            s->errors += q->errors;
        } else if (r->type == NDK_SV_CQ) {
            s->cq_errors += r->u.cq.errors;
        }
    }
}

static void sv_process_stats(proc_t *p, const struct ndkinfo_sv_opts *o, ndk_tool_json *j)
{
    struct sv_sums s;
    sv_sum(p, &s);
    if (o->json) {
        ndk_tool_json_open(j, "objects", '{');
        for (unsigned t = NDK_SV_ADAPTER; t < NDK_SV_TYPE_COUNT; t++)
            ndk_tool_json_u64(j, ndk_rt_sysview_type_name(t), s.objects[t]);
        ndk_tool_json_close(j, '}');
        ndk_tool_json_open(j, "counters", '{');
#define C(name) ndk_tool_json_u64(j, #name, s.name)
        C(sq_posted); C(sq_completed); C(rq_posted); C(rq_completed); C(bytes_out); C(bytes_in); C(ops_out);
        C(ops_in); C(errors); C(cq_errors);
#undef C
        ndk_tool_json_close(j, '}');
    } else {
        printf("    objects: %llu qp, %llu cq, %llu srq, %llu pd, %llu mr, %llu mw, %llu connector, %llu listener, "
               "%llu shared-endpoint\n",
               (unsigned long long)s.objects[NDK_SV_QP], (unsigned long long)s.objects[NDK_SV_CQ],
               (unsigned long long)s.objects[NDK_SV_SRQ], (unsigned long long)s.objects[NDK_SV_PD],
               (unsigned long long)s.objects[NDK_SV_MR], (unsigned long long)s.objects[NDK_SV_MW],
               (unsigned long long)s.objects[NDK_SV_CONNECTOR], (unsigned long long)s.objects[NDK_SV_LISTENER],
               (unsigned long long)s.objects[NDK_SV_SHARED_ENDPOINT]);
        printf("    requests: send queue %llu posted, %llu completed; receive queue %llu posted, %llu completed\n",
               (unsigned long long)s.sq_posted, (unsigned long long)s.sq_completed, (unsigned long long)s.rq_posted,
               (unsigned long long)s.rq_completed);
        printf("    traffic: out %llu bytes in %llu operations, in %llu bytes in %llu operations; "
               "%llu error completions (%llu on CQs)\n",
               (unsigned long long)s.bytes_out, (unsigned long long)s.ops_out, (unsigned long long)s.bytes_in,
               (unsigned long long)s.ops_in, (unsigned long long)s.errors, (unsigned long long)s.cq_errors);
    }
}

static void sv_adapter_rec(proc_t *p, rec_t *r, const struct ndkinfo_sv_opts *o, ndk_tool_json *j)
{
    const struct ndk_sv_adapter *a = &r->u.adapter;
    char name[48];
    int counters = o->stats && (a->flags & NDK_SV_ADAPTER_COUNTERS);
    if (o->json) {
        ndk_tool_json_str(j, "provider", a->provider);
        ndk_tool_json_str(j, "interface", a->ifname);
        ndk_tool_json_u64(j, "ifindex", a->ifindex);
        ndk_tool_json_u64(j, "open_instances", a->open_instances);
        if (counters) {
            ndk_tool_json_open(j, "counters", '{');
            for (int i = 0; i < NDK_SV_COUNTERS; i++)   /* one not kept is not a count of 0 */
                if (ndkinfo_counter_names[i] && !(a->missing & (1u << i)))
                    ndk_tool_json_u64(j, ndkinfo_counter_names[i], a->counters[i]);
            if (a->missing) {
                char missing[256];
                ndkinfo_counters_missing(a->missing, missing, sizeof missing);
                ndk_tool_json_str(j, "missing", missing);
            }
            ndk_tool_json_close(j, '}');
        }
        return;
    }
    printf("    %-14s %s on %s (ifindex %u), %u instance(s) open\n", sv_name(p, r->id, name, sizeof name), a->provider,
           a->ifname, a->ifindex, a->open_instances);
    if (counters) {
        printf("      this process's NDK counters:");
        for (int i = 0; i < NDK_SV_COUNTERS; i++)
            if (ndkinfo_counter_names[i] && !(a->missing & (1u << i)))
                printf(" %s %llu", ndkinfo_counter_names[i], (unsigned long long)a->counters[i]);
        if (a->missing)
            printf(" (the provider keeps no other)");
        printf("\n");
    }
}

/* One object of --resources: one text line, or one JSON object. */
static void sv_resource(proc_t *p, rec_t *r, uint64_t now, const struct ndkinfo_sv_opts *o, ndk_tool_json *j)
{
    char name[48], b1[80], b2[80], n1[48], n2[48], n3[48], n4[48], n5[48];
    sv_name(p, r->id, name, sizeof name);
    if (o->json) {
        ndk_tool_json_open(j, NULL, '{');
        ndk_tool_json_str(j, "name", name);
        ndk_tool_json_str(j, "type", ndk_rt_sysview_type_name(r->type));
        ndk_tool_json_u64(j, "age_ms", sv_age_ms(r->created_ns, now));
    }
    switch (r->type) {
    case NDK_SV_ADAPTER:
        sv_adapter_rec(p, r, o, j);
        break;
    case NDK_SV_QP: {
        const struct ndk_sv_qp *q = &r->u.qp;
        uint64_t sq_out = sv_outstanding(q->sq_posted, q->sq_completed);
        uint64_t rq_out = sv_outstanding(q->rq_posted, q->rq_completed);
        uint64_t sq_age = sq_out ? sv_age_ms(q->sq_oldest_ns, now) : 0;
        uint64_t rq_age = rq_out ? sv_age_ms(q->rq_oldest_ns, now) : 0;
        sv_addr(&q->local, b1, sizeof b1);
        sv_addr(&q->remote, b2, sizeof b2);
        if (o->json) {
            ndk_tool_json_str(j, "state", q->state);
            ndk_tool_json_str(j, "local", b1);
            ndk_tool_json_str(j, "remote", b2);
            ndk_tool_json_u64(j, "sq_depth", q->sq_depth);
            ndk_tool_json_u64(j, "rq_depth", q->rq_depth);
            ndk_tool_json_u64(j, "ird", q->ird);
            ndk_tool_json_u64(j, "ord", q->ord);
            ndk_tool_json_u64(j, "sq_outstanding", sq_out);
            ndk_tool_json_u64(j, "sq_oldest_ms", sq_age);
            ndk_tool_json_u64(j, "rq_outstanding", rq_out);
            ndk_tool_json_u64(j, "rq_oldest_ms", rq_age);
            ndk_tool_json_u64(j, "bytes_out", q->bytes_out);
            ndk_tool_json_u64(j, "bytes_in", q->bytes_in);
            ndk_tool_json_u64(j, "ops_out", q->ops_out);
            ndk_tool_json_u64(j, "ops_in", q->ops_in);
            ndk_tool_json_u64(j, "errors", q->errors);
            if (q->first_error)
                ndk_tool_json_str(j, "first_error", strerror(-q->first_error));
            ndk_tool_json_str(j, "pd", sv_name(p, q->pd, n1, sizeof n1));
            ndk_tool_json_str(j, "rcq", sv_name(p, q->rcq, n2, sizeof n2));
            ndk_tool_json_str(j, "icq", sv_name(p, q->icq, n3, sizeof n3));
            ndk_tool_json_str(j, "srq", sv_name(p, q->srq, n4, sizeof n4));
            ndk_tool_json_str(j, "connector", sv_name(p, q->connector, n5, sizeof n5));
        } else {
            printf("    %-14s %s %s -> %s sq %llu/%u", name, q->state, b1, b2, (unsigned long long)sq_out, q->sq_depth);
            if (sq_out)
                printf(" oldest %llums", (unsigned long long)sq_age);
            printf(" rq %llu/%u", (unsigned long long)rq_out, q->rq_depth);
            if (rq_out)
                printf(" oldest %llums", (unsigned long long)rq_age);
            printf(" ird %u ord %u out %lluB/%lluops in %lluB/%lluops errors %llu", q->ird, q->ord,
                   (unsigned long long)q->bytes_out, (unsigned long long)q->ops_out, (unsigned long long)q->bytes_in,
                   (unsigned long long)q->ops_in, (unsigned long long)q->errors);
            if (q->first_error)
                printf(" (first: %s)", strerror(-q->first_error));
            printf(" pd %s rcq %s icq %s", sv_name(p, q->pd, n1, sizeof n1), sv_name(p, q->rcq, n2, sizeof n2),
                   sv_name(p, q->icq, n3, sizeof n3));
            if (q->srq)
                printf(" srq %s", sv_name(p, q->srq, n4, sizeof n4));
            if (q->connector)
                printf(" %s", sv_name(p, q->connector, n5, sizeof n5));
            printf("\n");
        }
        break;
    }
    case NDK_SV_CQ: {
        const struct ndk_sv_cq *c = &r->u.cq;
        uint64_t pending = sv_outstanding(c->completions, c->polled);
        if (o->json) {
            ndk_tool_json_u64(j, "depth", c->depth);
            ndk_tool_json_u64(j, "completions", c->completions);
            ndk_tool_json_u64(j, "polled", c->polled);
            ndk_tool_json_u64(j, "unpolled", pending);
            ndk_tool_json_u64(j, "errors", c->errors);
        } else {
            printf("    %-14s depth %u completions %llu polled %llu unpolled %llu errors %llu\n", name, c->depth,
                   (unsigned long long)c->completions, (unsigned long long)c->polled, (unsigned long long)pending,
                   (unsigned long long)c->errors);
        }
        break;
    }
    case NDK_SV_SRQ: {
        const struct ndk_sv_srq *s = &r->u.srq;
        uint64_t out = sv_outstanding(s->posted, s->completed);
        if (o->json) {
            ndk_tool_json_str(j, "pd", sv_name(p, s->pd, n1, sizeof n1));
            ndk_tool_json_u64(j, "depth", s->depth);
            ndk_tool_json_u64(j, "posted", s->posted);
            ndk_tool_json_u64(j, "completed", s->completed);
            ndk_tool_json_u64(j, "outstanding", out);
        } else {
            printf("    %-14s depth %u outstanding %llu posted %llu completed %llu pd %s\n", name, s->depth,
                   (unsigned long long)out, (unsigned long long)s->posted, (unsigned long long)s->completed,
                   sv_name(p, s->pd, n1, sizeof n1));
        }
        break;
    }
    case NDK_SV_MR:
    case NDK_SV_MW: {
        const struct ndk_sv_mem *m = &r->u.mem;
        const char *what = r->type == NDK_SV_MR ? (m->bound ? "registered" : "unregistered")
                                                : (m->bound ? "bound" : "unbound");
        if (o->json) {
            ndk_tool_json_str(j, "pd", sv_name(p, m->pd, n1, sizeof n1));
            ndk_tool_json_str(j, "state", what);
            ndk_tool_json_u64(j, "length", m->length);
            if (r->type == NDK_SV_MR)
                ndk_tool_json_bool(j, "fast_register", m->fast_register != 0);
        } else {
            printf("    %-14s %s length %llu pd %s%s\n", name, what, (unsigned long long)m->length,
                   sv_name(p, m->pd, n1, sizeof n1), m->fast_register ? " fast-register" : "");
        }
        break;
    }
    case NDK_SV_CONNECTOR: {
        const struct ndk_sv_conn *c = &r->u.conn;
        sv_addr(&c->local, b1, sizeof b1);
        sv_addr(&c->remote, b2, sizeof b2);
        if (o->json) {
            ndk_tool_json_str(j, "state", c->state);
            ndk_tool_json_str(j, "local", b1);
            ndk_tool_json_str(j, "remote", b2);
            ndk_tool_json_str(j, "qp", sv_name(p, c->qp, n1, sizeof n1));
            ndk_tool_json_u64(j, "ird", c->ird);
            ndk_tool_json_u64(j, "ord", c->ord);
        } else {
            printf("    %-14s %s %s -> %s %s ird %u ord %u\n", name, c->state, b1, b2, sv_name(p, c->qp, n1, sizeof n1),
                   c->ird, c->ord);
        }
        break;
    }
    case NDK_SV_LISTENER:
    case NDK_SV_SHARED_ENDPOINT:
        sv_addr(&r->u.ep.local, b1, sizeof b1);
        if (o->json) {
            ndk_tool_json_str(j, "state", r->u.ep.state);
            ndk_tool_json_str(j, "local", b1);
        } else {
            printf("    %-14s %s %s\n", name, r->u.ep.state, b1);
        }
        break;
    case NDK_SV_PD:
    default:
        if (!o->json)
            printf("    %s\n", name);
        break;
    }
    if (o->json)
        ndk_tool_json_close(j, '}');
}

/* --resources lists adapters first, then the objects in the order rdma res show uses. */
static const unsigned sv_order[] = { NDK_SV_ADAPTER, NDK_SV_PD, NDK_SV_CQ, NDK_SV_SRQ, NDK_SV_QP, NDK_SV_MR,
                                     NDK_SV_MW, NDK_SV_CONNECTOR, NDK_SV_LISTENER, NDK_SV_SHARED_ENDPOINT };

static void sv_show_process(proc_t *p, uint64_t now, const struct ndkinfo_sv_opts *o, ndk_tool_json *j)
{
    const struct ndk_sv_header *h = &p->header;
    if (o->json) {
        ndk_tool_json_open(j, NULL, '{');
        ndk_tool_json_u64(j, "pid", h->pid);
        ndk_tool_json_str(j, "comm", h->comm);
        ndk_tool_json_str(j, "command", h->exe);
        ndk_tool_json_u64(j, "uid", h->uid);
        ndk_tool_json_u64(j, "net_ns", h->net_ns);
        ndk_tool_json_u64(j, "records", p->count);
        ndk_tool_json_open(j, "adapters", '[');
        for (ULONG k = 0; k < p->count; k++)
            if (p->records[k].type == NDK_SV_ADAPTER) {
                char name[48];
                ndk_tool_json_open(j, NULL, '{');
                ndk_tool_json_str(j, "name", sv_name(p, p->records[k].id, name, sizeof name));
                sv_adapter_rec(p, &p->records[k], o, j);
                ndk_tool_json_close(j, '}');
            }
        ndk_tool_json_close(j, ']');
    } else {
        printf("  pid %u %s (%s), uid %u, %u record(s)\n", h->pid, h->comm, h->exe[0] ? h->exe : "?", h->uid, p->count);
        if (!o->resources)
            for (ULONG k = 0; k < p->count; k++)
                if (p->records[k].type == NDK_SV_ADAPTER)
                    sv_adapter_rec(p, &p->records[k], o, j);
    }
    if (o->stats)
        sv_process_stats(p, o, j);
    if (o->resources) {
        if (o->json)
            ndk_tool_json_open(j, "resources", '[');
        for (size_t t = 0; t < sizeof sv_order / sizeof sv_order[0]; t++)
            for (ULONG k = 0; k < p->count; k++)
                if (p->records[k].type == sv_order[t])
                    sv_resource(p, &p->records[k], now, o, j);
        if (o->json)
            ndk_tool_json_close(j, ']');
        else if (!p->count)
            printf("    no NDK object\n");
    }
    if (o->json)
        ndk_tool_json_close(j, '}');
}

/* Where the reader looked, for messages when it could not say itself. */
static const char *sv_dir_hint(const ndk_rt_sysview *sv)
{
    if (sv && sv->dir[0])
        return sv->dir;
    const char *env = getenv("NDK_RUNTIME_DIR");
    return env && *env ? env : "the default runtime directory (see ndk-sysview(7))";
}

int ndkinfo_sv_show(const struct ndkinfo_sv_opts *o, ndk_tool_json *j)
{
    ndk_rt_sysview *sv = NULL;
    NTSTATUS st = ndk_rt_sysview_read(NULL, &sv);
    int rc = 0;
    if (o->json) {
        ndk_tool_json_open(j, "sysview", '{');
        ndk_tool_json_str(j, "dir", sv_dir_hint(sv));
    } else {
        printf("\nSystem view (ndk-sysview(7)), %s:\n", sv_dir_hint(sv));
    }
    if (st == STATUS_NOT_FOUND) {
        if (o->json)
            ndk_tool_json_str(j, "error", "no registry directory: no OpenNDK process has published here");
        else
            printf("  no registry directory: no OpenNDK process has published here\n");
        if (o->pid) {
            fprintf(stderr, "ndkinfo: no OpenNDK process with pid %ld publishes in %s\n", o->pid, sv_dir_hint(sv));
            rc = 1;
        }
        goto out;
    }
    if (st != STATUS_SUCCESS) {
        fprintf(stderr, "ndkinfo: cannot read the system view in %s: %s\n", sv_dir_hint(sv), ndk_rt_status_name(st));
        if (o->json)
            ndk_tool_json_str(j, "error", ndk_rt_status_name(st));
        rc = 1;
        goto out;
    }
    /* ndkinfo's own runtime publishes too; it is not what anyone asks about. */
    ULONG shown = 0;
    for (ULONG i = 0; i < sv->count; i++) {
        ndk_rt_sv_process *p = &sv->processes[i];
        if (p->header.pid == (uint32_t)getpid())
            p->count = 0;
        else if (!o->pid || p->header.pid == (uint32_t)o->pid)
            shown++;
    }
    if (o->json)
        ndk_tool_json_u64(j, "skipped", sv->skipped);
    if (!o->json && sv->skipped)
        printf("  %u registr%s skipped: another user's (root may read them), or in a directory others may "
               "write\n", sv->skipped, sv->skipped == 1 ? "y" : "ies");
    if (!shown && sv->skipped && !o->pid) {
        /* Something is there, and none of it may be read: an error, not an empty machine. */
        fprintf(stderr, "ndkinfo: cannot read the system view in %s: %u registr%s skipped\n", sv_dir_hint(sv),
                sv->skipped, sv->skipped == 1 ? "y" : "ies");
        if (o->json)
            ndk_tool_json_str(j, "error", "no registry here may be read");
        rc = 1;
        goto out;
    }
    if (!shown) {
        const char *why = o->pid ? "no OpenNDK process with that pid publishes here"
                                 : "no other OpenNDK process publishes here";
        if (o->json)
            ndk_tool_json_str(j, "error", why);
        else if (o->pid)
            printf("  no OpenNDK process with pid %ld publishes here\n", o->pid);
        else
            printf("  %s\n", why);
        if (o->pid) {
            fprintf(stderr, "ndkinfo: no OpenNDK process with pid %ld publishes in %s\n", o->pid, sv_dir_hint(sv));
            rc = 1;
        }
        goto out;
    }
    if (o->connections)
        sv_show_connections(sv, o, j);
    if (o->endpoints)
        sv_show_endpoints(sv, o, j);
    if (o->stats || o->resources) {
        uint64_t now = sv_now_ns();
        if (o->json)
            ndk_tool_json_open(j, "processes", '[');
        else
            printf("  %s of every process:\n", o->resources ? "Resources" : "Counters");
        for (ULONG i = 0; i < sv->count; i++) {
            proc_t *p = &sv->processes[i];
            if (p->header.pid == (uint32_t)getpid() || (o->pid && p->header.pid != (uint32_t)o->pid))
                continue;
            sv_show_process(p, now, o, j);
        }
        if (o->json)
            ndk_tool_json_close(j, ']');
    }
out:
    if (o->json)
        ndk_tool_json_close(j, '}');
    ndk_rt_sysview_free(sv);
    return rc;
}
