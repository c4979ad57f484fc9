/* The provider's lookup tables with many entries (issue 14 item 2): endpoints indexed by port,
 * connectors by 4-tuple. One process over 127.0.0.1 and ::1, both ends on one device, so the
 * tables hold the active and the passive side of every connection.
 *
 *   - N port-0 connections to one listener: NdkGetLocalAddress of each reports the port
 *     connect() chose (49152-65535, §5.11.5), no two alike (one destination), and the accepted
 *     side's NdkGetPeerAddress names the same address and port.
 *   - NdkListen on the port of a live connection: STATUS_SHARING_VIOLATION (§5.11.5).
 *   - Half of the connections aborted: NdkListen on their ports succeeds (their endpoints left
 *     the table; an abort leaves no TIME_WAIT), for those ports no older TIME_WAIT holds in
 *     the kernel. The other half keep their reservations.
 *   - An explicit source port: the same 4-tuple again is STATUS_ADDRESS_ALREADY_EXISTS (the
 *     4-tuple index; without it the endpoint table would answer SHARING_VIOLATION), the same
 *     port toward another listener is STATUS_SHARING_VIOLATION.
 *   - A shared endpoint on port 0: its port is reserved (NdkListen and an explicit-port
 *     NdkConnect on it fail), a second connection through it to the same listener is
 *     STATUS_ADDRESS_ALREADY_EXISTS, and after all is closed its port is free.
 * Correctness only, no timings. */
#include "iwtest.h"

#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 30000
#define N 600

struct end {
    struct iwt_qp q;
    NDK_CONNECTOR *c;
    struct iwt_req rq;
    SOCKADDR_INET local;
};

static struct {
    struct iwt t;
    struct end cli[N + 4], srv[N + 4];
    atomic_int events;       /* connect events seen */
    atomic_int bad;
} G;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    uint8_t pd[256];
    ULONG len = sizeof pd;
    uint32_t idx = UINT32_MAX;

    if (c->Dispatch->NdkGetConnectionData(c, NULL, NULL, pd, &len) == STATUS_SUCCESS && len >= sizeof idx)
        memcpy(&idx, pd, sizeof idx);
    if (idx >= N + 4 || G.srv[idx].c) {
        atomic_fetch_add(&G.bad, 1);
        c->Dispatch->NdkReject(c, NULL, 0);
        return;
    }
    struct end *e = &G.srv[idx];
    e->c = c;
    iwt_req_init(&e->rq);
    NTSTATUS st = c->Dispatch->NdkAccept(c, e->q.qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &e->rq);
    if (st != STATUS_PENDING) {
        atomic_store(&e->rq.status, st);
        atomic_store(&e->rq.done, 1);
    }
    atomic_fetch_add(&G.events, 1);
}

/* Can a socket of ours bind port now (SO_REUSEADDR, as a listener)? Tells a port our table
 * holds from one another process took meanwhile: the machine is shared. */
static bool os_port_free(uint16_t port)
{
    SOCKADDR_INET a = iwt_addr(&G.t, port);
    int fd = socket(G.t.family, SOCK_STREAM, 0), one = 1;
    CHECK(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bool ok = bind(fd, (struct sockaddr *)&a, iwt_addr_len(&a)) == 0;
    close(fd);
    return ok;
}

static NDK_LISTENER *listen_on(uint16_t port, NTSTATUS want, uint16_t *bound)
{
    NDK_LISTENER *l;
    SOCKADDR_INET a = iwt_addr(&G.t, port);
    ULONG len = sizeof a;

    CHECK_STATUS(G.t.ad->Dispatch->NdkCreateListener(G.t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    NTSTATUS st = l->Dispatch->NdkListen(l, (PSOCKADDR)&a, iwt_addr_len(&a), iwt_req_cb, NULL);
    if (want == STATUS_SUCCESS && st == STATUS_SHARING_VIOLATION && port && !os_port_free(port)) {
        printf("   port %u is taken outside this process now; not counted\n", port);
        iwt_close_obj(l, TMO);
        return NULL;
    }
    CHECK_MSG(st == want, "NdkListen on port %u: 0x%08x, expected 0x%08x", port, (unsigned)st, (unsigned)want);
    if (st != STATUS_SUCCESS) {
        iwt_close_obj(l, TMO);
        return NULL;
    }
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&a, &len), STATUS_SUCCESS);
    if (bound)
        *bound = iwt_port(&a);
    return l;
}

/* Starts a connect from src (port 0: connect() chooses) with index i in the private data;
 * returns what NdkConnect returned. */
static NTSTATUS connect_from(struct end *e, uint16_t sport, uint16_t dport, uint32_t i)
{
    SOCKADDR_INET src = iwt_addr(&G.t, sport), dst = iwt_addr(&G.t, dport);

    if (!e->c)
        CHECK_STATUS(G.t.ad->Dispatch->NdkCreateConnector(G.t.ad, NULL, NULL, &e->c), STATUS_SUCCESS);
    iwt_req_init(&e->rq);
    return e->c->Dispatch->NdkConnect(e->c, e->q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                      iwt_addr_len(&dst), 1, 1, &i, sizeof i, iwt_req_cb, &e->rq);
}

static void connect_done(struct end *e, NTSTATUS st, int i)
{
    st = iwt_req_wait(&e->rq, st, TMO);
    CHECK_MSG(st == STATUS_SUCCESS, "connection %d: NdkConnect 0x%08x", i, (unsigned)st);
    iwt_req_init(&e->rq);
    st = e->c->Dispatch->NdkCompleteConnect(e->c, NULL, NULL, iwt_req_cb, &e->rq);
    CHECK_MSG(iwt_req_wait(&e->rq, st, TMO) == STATUS_SUCCESS, "connection %d: NdkCompleteConnect", i);
    ULONG len = sizeof e->local;
    CHECK_STATUS(e->c->Dispatch->NdkGetLocalAddress(e->c, (PSOCKADDR)&e->local, &len), STATUS_SUCCESS);
}

static void accept_done(int i)
{
    CHECK_MSG(iwt_wait_atomic(&G.srv[i].rq.done, 1, TMO), "accept %d never completed", i);
    CHECK_STATUS(atomic_load(&G.srv[i].rq.status), STATUS_SUCCESS);
}

/* A port no socket holds right now (the kernel's pick for a throwaway socket). */
static uint16_t free_port(void)
{
    SOCKADDR_INET a = iwt_addr(&G.t, 0);
    socklen_t len = (socklen_t)iwt_addr_len(&a);
    int fd = socket(G.t.family, SOCK_STREAM, 0);

    CHECK(fd >= 0);
    CHECK(bind(fd, (struct sockaddr *)&a, len) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return iwt_port(&a);
}

static void body(int family)
{
    uint16_t lport, lport2;
    NDK_LISTENER *l, *l2;
    static uint8_t seen[65536];

    memset(&G, 0, sizeof G);
    iwt_raise_nofile(~0ul);
    iwt_open(&G.t, family);
    for (int i = 0; i < N + 4; i++) {
        iwt_qp_create(&G.t, &G.cli[i].q, 4);
        iwt_qp_create(&G.t, &G.srv[i].q, 4);
    }
    l = listen_on(0, STATUS_SUCCESS, &lport);
    l2 = listen_on(0, STATUS_SUCCESS, &lport2);

    /* N port-0 connections, 32 in flight. */
    for (int started = 0, done = 0; done < N;) {
        while (started < N && started - done < 32) {
            NTSTATUS st = connect_from(&G.cli[started], 0, lport, (uint32_t)started);
            if (st != STATUS_PENDING) {
                atomic_store(&G.cli[started].rq.status, st);
                atomic_store(&G.cli[started].rq.done, 1);
            }
            started++;
        }
        connect_done(&G.cli[done], STATUS_PENDING, done);
        done++;
    }
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < N; i++) {
        SOCKADDR_INET peer;
        ULONG len = sizeof peer;
        uint16_t p = iwt_port(&G.cli[i].local);
        accept_done(i);
        CHECK_MSG(p >= NDK_EPHEMERAL_PORT_FIRST, "connection %d: local port %u is not ephemeral (§5.11.5)", i, p);
        CHECK_MSG(!seen[p], "connection %d: local port %u twice toward one listener", i, p);
        seen[p] = 1;
        CHECK_STATUS(G.srv[i].c->Dispatch->NdkGetPeerAddress(G.srv[i].c, (PSOCKADDR)&peer, &len), STATUS_SUCCESS);
        CHECK_MSG(len == iwt_addr_len(&peer) && memcmp(&peer, &G.cli[i].local, len) == 0,
                  "connection %d: the accepted side's peer is not the connector's local address", i);
    }

    /* Live connections hold their ports; aborted ones give them back. */
    for (int i = 0; i < N; i += 61)
        listen_on(iwt_port(&G.cli[i].local), STATUS_SHARING_VIOLATION, NULL);
    for (int i = 0; i < N; i += 2) {
        iwt_close_obj(G.cli[i].c, TMO);
        G.cli[i].c = NULL;
    }
    for (int i = 0; i < N; i += 2) {
        iwt_close_obj(G.srv[i].c, TMO);
        G.srv[i].c = NULL;
    }
    /* Only ports the kernel would let a listener have count: a port connect() chose may also
     * carry TIME_WAITs of older connections to other peers (an earlier test's, or another
     * process's), which refuse the listener whatever our table says. */
    int counted = 0;
    for (int i = 0; i < N; i += 38) {
        if (!os_port_free(iwt_port(&G.cli[i].local)))
            continue;
        NDK_LISTENER *x = listen_on(iwt_port(&G.cli[i].local), STATUS_SUCCESS, NULL);
        if (x) {
            iwt_close_obj(x, TMO);
            counted++;
        }
    }
    printf("   %d of 16 freed ports checked (the others are held by TIME_WAITs outside the test)\n", counted);
    for (int i = 1; i < N; i += 38)
        listen_on(iwt_port(&G.cli[i].local), STATUS_SHARING_VIOLATION, NULL);

    /* An explicit source port: the 4-tuple index decides a duplicate. */
    {
        struct end *e = &G.cli[N], *dup = &G.cli[N + 1], *other = &G.cli[N + 2];
        NTSTATUS st = STATUS_UNSUCCESSFUL;
        uint16_t sport = 0;
        for (int tries = 0; tries < 20 && st != STATUS_PENDING; tries++) {
            sport = free_port();
            st = connect_from(e, sport, lport, N);
        }
        connect_done(e, st, N);
        CHECK_EQ(iwt_port(&e->local), sport);
        accept_done(N);
        CHECK_STATUS(connect_from(dup, sport, lport, N + 1), STATUS_ADDRESS_ALREADY_EXISTS);
        CHECK_STATUS(connect_from(other, sport, lport2, N + 2), STATUS_SHARING_VIOLATION);
        listen_on(sport, STATUS_SHARING_VIOLATION, NULL);
    }

    /* A shared endpoint on port 0. */
    {
        NDK_SHARED_ENDPOINT *sep;
        SOCKADDR_INET a = iwt_addr(&G.t, 0), dst = iwt_addr(&G.t, lport);
        ULONG len = sizeof a;
        struct end *e = &G.cli[N + 3], *dup = &G.cli[N + 1];
        CHECK_STATUS(G.t.ad->Dispatch->NdkCreateSharedEndpoint(G.t.ad, (PSOCKADDR)&a, iwt_addr_len(&a), NULL, NULL, &sep),
                     STATUS_SUCCESS);
        CHECK_STATUS(sep->Dispatch->NdkGetLocalAddress(sep, (PSOCKADDR)&a, &len), STATUS_SUCCESS);
        uint16_t sport = iwt_port(&a);
        CHECK_MSG(sport >= NDK_EPHEMERAL_PORT_FIRST, "shared endpoint port %u is not ephemeral (§5.11.5)", sport);
        listen_on(sport, STATUS_SHARING_VIOLATION, NULL);
        CHECK_STATUS(connect_from(&G.cli[N + 2], sport, lport2, N + 2),
                     STATUS_SHARING_VIOLATION);
        CHECK_STATUS(G.t.ad->Dispatch->NdkCreateConnector(G.t.ad, NULL, NULL, &e->c), STATUS_SUCCESS);
        uint32_t idx = N + 3;
        iwt_req_init(&e->rq);
        NTSTATUS st = e->c->Dispatch->NdkConnectWithSharedEndpoint(e->c, e->q.qp, sep, (PSOCKADDR)&dst,
                                                                  iwt_addr_len(&dst), 1, 1, &idx, sizeof idx,
                                                                  iwt_req_cb, &e->rq);
        connect_done(e, st, N + 3);
        CHECK_EQ(iwt_port(&e->local), sport);
        accept_done(N + 3);
        iwt_req_init(&dup->rq);
        st = dup->c->Dispatch->NdkConnectWithSharedEndpoint(dup->c, dup->q.qp, sep, (PSOCKADDR)&dst, iwt_addr_len(&dst),
                                                           1, 1, &idx, sizeof idx, iwt_req_cb, &dup->rq);
        CHECK_STATUS(iwt_req_wait(&dup->rq, st, TMO), STATUS_ADDRESS_ALREADY_EXISTS);
        iwt_close_obj(e->c, TMO);
        e->c = NULL;
        iwt_close_obj(G.srv[N + 3].c, TMO);
        G.srv[N + 3].c = NULL;
        iwt_close_obj(sep, TMO);
        NDK_LISTENER *x = listen_on(sport, STATUS_SUCCESS, NULL);
        if (x)
            iwt_close_obj(x, TMO);
    }

    CHECK_EQ(atomic_load(&G.bad), 0);
    for (int i = 0; i < N + 4; i++) {
        if (G.cli[i].c)
            iwt_close_obj(G.cli[i].c, TMO);
        if (G.srv[i].c)
            iwt_close_obj(G.srv[i].c, TMO);
        iwt_qp_destroy(&G.cli[i].q);
        iwt_qp_destroy(&G.srv[i].q);
    }
    iwt_close_obj(l, TMO);
    iwt_close_obj(l2, TMO);
    iwt_close(&G.t);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
