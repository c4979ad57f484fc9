/* Teardown in every order, two processes over 127.0.0.1 and ::1 (issue 13 item 1; §3.6,
 * §5.11.6). Each process connects one QP, posts receives, exchanges one Send each way, then
 * the scenario named on the command line runs:
 *
 *   disconnect-{active,passive}  that side NdkDisconnects; the other reacts to its disconnect
 *                                event with NdkDisconnect
 *   flush-{active,passive}       that side NdkFlushes, then NdkDisconnects; the other reacts
 *   flush-other-{active,passive} that side NdkFlushes only; the other side NdkDisconnects; the
 *                                flushed side reacts to its event with NdkDisconnect
 *   close-{active,passive}       that side closes its connector with receives still posted,
 *                                then its QP; the other reacts
 *   both                         both NdkDisconnect at once
 *   both-flush                   both NdkFlush, then NdkDisconnect at once
 *
 * Required on each side whose connector is open: exactly one disconnect event when the peer
 * acted first (none more in any case; the side that acted first may see one by race, §5.11.6),
 * every posted request completed exactly once (the receives that did not run with
 * STATUS_CANCELLED), and an NdkDisconnect that completes with STATUS_SUCCESS when the peer
 * cooperates, without waiting for the disconnect timer (set to 30 s here, so a timer-driven
 * completion cannot pass). */
#include "iwtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 10000
#define NRECV 4
/* Well below the 30 s disconnect timer the processes run with. */
#define PROMPT_MS 10000

enum act { ACT_DISCONNECT, ACT_FLUSH_DISCONNECT, ACT_FLUSH_ONLY, ACT_CLOSE };

struct scenario {
    const char *name;
    int first;              /* 0 = passive (server) acts first, 1 = active (client), 2 = both */
    enum act act;
};

static const struct scenario scenarios[] = {
    { "disconnect-active", 1, ACT_DISCONNECT },      { "disconnect-passive", 0, ACT_DISCONNECT },
    { "flush-active", 1, ACT_FLUSH_DISCONNECT },     { "flush-passive", 0, ACT_FLUSH_DISCONNECT },
    { "flush-other-active", 1, ACT_FLUSH_ONLY },     { "flush-other-passive", 0, ACT_FLUSH_ONLY },
    { "close-active", 1, ACT_CLOSE },                { "close-passive", 0, ACT_CLOSE },
    { "both", 2, ACT_DISCONNECT },                   { "both-flush", 2, ACT_FLUSH_DISCONNECT },
};

struct arg {
    int family;
    const struct scenario *sc;
    struct iwt_chan ch;
};

static _Atomic(NDK_CONNECTOR *) g_in;
static atomic_int g_ev, g_disc;
static _Atomic uint64_t g_disc_at;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    atomic_store(&g_in, c);
    atomic_fetch_add(&g_ev, 1);
}

static void on_disc(void *ctx)
{
    (void)ctx;
    atomic_store(&g_disc_at, ndk_test_now_ms());
    atomic_fetch_add(&g_disc, 1);
}

struct side {
    const char *role;
    bool active;
    struct iwt t;
    struct iwt_qp q;
    NDK_CONNECTOR *c;
    uint8_t rbuf[NRECV][64];
    uint8_t sbuf[64];
    int seen[NRECV + 1];     /* receives 0..NRECV-1, the Send at NRECV */
    NTSTATUS status[NRECV + 1];
    int completions;
};

static void post_receives(struct side *s)
{
    for (int i = 0; i < NRECV; i++) {
        NDK_SGE sge = { .VirtualAddress = s->rbuf[i], .Length = sizeof s->rbuf[i] };
        CHECK_STATUS(s->q.qp->Dispatch->NdkReceive(s->q.qp, (void *)(uintptr_t)(100 + i), &sge, 1), STATUS_SUCCESS);
    }
}

/* Takes whatever completions are there, each request at most once. */
static void drain(struct side *s)
{
    NDK_RESULT_EX r;
    while (s->q.cq->Dispatch->NdkGetCqResultsEx(s->q.cq, &r, 1) == 1) {
        uintptr_t c = (uintptr_t)r.RequestContext;
        int i = c == 200 ? NRECV : (int)c - 100;
        CHECK_MSG(i >= 0 && i <= NRECV, "%s: completion with unknown context %#lx", s->role, (unsigned long)c);
        CHECK_MSG(s->seen[i]++ == 0, "%s: request %d completed twice", s->role, i);
        s->status[i] = r.Status;
        s->completions++;
    }
}

static void wait_completions(struct side *s, int n, const char *what)
{
    uint64_t end = ndk_test_now_ms() + TMO;
    for (;;) {
        drain(s);
        if (s->completions >= n)
            return;
        CHECK_MSG(ndk_test_now_ms() < end, "%s: %d of %d completions after %s", s->role, s->completions, n, what);
        usleep(1000);
    }
}

/* One Send each way, so that the connection has carried data before it goes down. */
static void exchange(struct side *s)
{
    NDK_SGE sge = { .VirtualAddress = s->sbuf, .Length = sizeof s->sbuf };
    memset(s->sbuf, s->active ? 'a' : 'p', sizeof s->sbuf);
    CHECK_STATUS(s->q.qp->Dispatch->NdkSend(s->q.qp, (void *)200, &sge, 1, 0), STATUS_SUCCESS);
    wait_completions(s, 2, "the Send exchange");
    CHECK_EQ(s->seen[NRECV], 1);
    CHECK_STATUS(s->status[NRECV], STATUS_SUCCESS);
    CHECK_EQ(s->seen[0], 1);                     /* receives complete in posting order */
    CHECK_STATUS(s->status[0], STATUS_SUCCESS);
}

static NTSTATUS disconnect(struct side *s, uint64_t *ms)
{
    struct iwt_req rq;
    uint64_t t0 = ndk_test_now_ms();
    iwt_req_init(&rq);
    NTSTATUS st = s->c->Dispatch->NdkDisconnect(s->c, iwt_req_cb, &rq);
    st = iwt_req_wait(&rq, st, PROMPT_MS + 5000);
    *ms = ndk_test_now_ms() - t0;
    return st;
}

static void flush(struct side *s)
{
    s->q.qp->Dispatch->NdkFlush(s->q.qp);
}

/* Every receive that did not run completes once, cancelled. */
static void check_all_completed(struct side *s)
{
    wait_completions(s, NRECV + 1, "teardown");
    for (int i = 1; i < NRECV; i++)
        CHECK_MSG(s->status[i] == STATUS_CANCELLED, "%s: receive %d completed with 0x%08x, not CANCELLED", s->role,
                  i, (unsigned)s->status[i]);
    usleep(100 * 1000);
    drain(s);
    CHECK_EQ(s->completions, NRECV + 1);
}

static void teardown(struct arg *a, struct side *s)
{
    const struct scenario *sc = a->sc;
    int rx = s->active ? iwt_cli_rx(&a->ch) : iwt_srv_rx(&a->ch);
    int tx = s->active ? iwt_cli_tx(&a->ch) : iwt_srv_tx(&a->ch);
    bool first = sc->first == 2 || sc->first == (int)s->active;
    uint64_t ms = 0;
    NTSTATUS st;

    /* Both sides are connected and idle before anyone acts. */
    iwt_send(tx, 1);
    CHECK_EQ(iwt_recv(rx, TMO), 1);
    if (sc->act == ACT_FLUSH_ONLY) {
        /* The flushing side acts first, then the other side disconnects and the flushed side
         * answers its disconnect event like any other cooperating peer. */
        if (first) {
            flush(s);
            wait_completions(s, NRECV + 1, "NdkFlush");
            iwt_send(tx, 2);
            CHECK_MSG(iwt_wait_atomic(&g_disc, 1, PROMPT_MS), "%s: no disconnect event", s->role);
            st = disconnect(s, &ms);
        } else {
            CHECK_EQ(iwt_recv(rx, TMO), 2);
            st = disconnect(s, &ms);
        }
        CHECK_MSG(st == STATUS_SUCCESS, "%s: NdkDisconnect after the peer's flush: 0x%08x in %llu ms", s->role,
                  (unsigned)st, (unsigned long long)ms);
    } else if (first && sc->act == ACT_CLOSE) {
        iwt_close_obj(s->c, TMO);
        s->c = NULL;
        /* Closing the connector is an abortive disconnect plus a flush (§5.11.6). */
        check_all_completed(s);
        printf("%s: connector closed with %d receives posted\n", s->role, NRECV - 1);
        return;
    } else if (first) {
        if (sc->act == ACT_FLUSH_DISCONNECT) {
            flush(s);
            wait_completions(s, NRECV + 1, "NdkFlush");
        }
        if (sc->first == 2) {
            /* Both at once: meet, then go. */
            iwt_send(tx, 3);
            CHECK_EQ(iwt_recv(rx, TMO), 3);
        }
        st = disconnect(s, &ms);
        CHECK_MSG(st == STATUS_SUCCESS, "%s: NdkDisconnect (peer cooperating): 0x%08x in %llu ms", s->role,
                  (unsigned)st, (unsigned long long)ms);
    } else {
        uint64_t t0 = ndk_test_now_ms();
        CHECK_MSG(iwt_wait_atomic(&g_disc, 1, PROMPT_MS), "%s: no disconnect event after the peer's %s", s->role,
                  sc->name);
        printf("%s: disconnect event after %llu ms\n", s->role, (unsigned long long)(atomic_load(&g_disc_at) - t0));
        st = disconnect(s, &ms);
        if (sc->act == ACT_CLOSE)
            CHECK_MSG(st != STATUS_IO_TIMEOUT && ms < PROMPT_MS, "%s: NdkDisconnect after the peer closed: 0x%08x in %llu ms",
                      s->role, (unsigned)st, (unsigned long long)ms);
        else
            CHECK_MSG(st == STATUS_SUCCESS, "%s: NdkDisconnect answering the peer: 0x%08x in %llu ms", s->role,
                      (unsigned)st, (unsigned long long)ms);
    }
    CHECK_MSG(ms < PROMPT_MS, "%s: NdkDisconnect took %llu ms (a timer, not the peer, completed it)", s->role,
              (unsigned long long)ms);
    printf("%s: NdkDisconnect 0x%08x in %llu ms\n", s->role, (unsigned)st, (unsigned long long)ms);
    check_all_completed(s);
    /* Let a late event show itself, then count. */
    usleep(200 * 1000);
    int ev = atomic_load(&g_disc);
    /* Exactly one where the peer disconnected first; by race at most one where this side did. */
    bool peer_went_first = sc->first != 2 && (sc->act == ACT_FLUSH_ONLY ? first : !first);
    if (peer_went_first)
        CHECK_MSG(ev == 1, "%s: %d disconnect events, want exactly 1", s->role, ev);
    else
        CHECK_MSG(ev <= 1, "%s: %d disconnect events", s->role, ev);
}

/* The listener's close waits for its connectors' (§5.1), so the connector goes first. */
static void side_close(struct side *s, NDK_LISTENER *l)
{
    fflush(stdout);
    if (s->c)
        iwt_close_obj(s->c, TMO);
    if (l)
        iwt_close_obj(l, TMO);
    iwt_qp_destroy(&s->q);
    iwt_close(&s->t);
}

static void side_env(void)
{
    /* A disconnect that waits for this timer fails the PROMPT_MS check. */
    setenv("NDK_IWARP_DISCONNECT_TIMEOUT_MS", "30000", 1);
}

static int server(void *p)
{
    struct arg *a = p;
    struct side s = { .role = "passive", .active = false };
    struct iwt_req rq;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;

    side_env();
    iwt_open(&s.t, a->family);
    iwt_qp_create(&s.t, &s.q, 16);
    la = iwt_addr(&s.t, 0);
    CHECK_STATUS(s.t.ad->Dispatch->NdkCreateListener(s.t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, &rq), TMO),
                 STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), iwt_port(&la));
    CHECK_MSG(iwt_wait_atomic(&g_ev, 1, TMO), "no connect event");
    s.c = atomic_load(&g_in);
    post_receives(&s);
    iwt_req_init(&rq);
    NTSTATUS st = s.c->Dispatch->NdkAccept(s.c, s.q.qp, 1, 1, NULL, 0, on_disc, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), 9);     /* the client has its receives posted */
    exchange(&s);
    teardown(a, &s);
    side_close(&s, l);
    return 0;
}

static int client(void *p)
{
    struct arg *a = p;
    struct side s = { .role = "active", .active = true };
    struct iwt_req rq;
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);

    side_env();
    iwt_open(&s.t, a->family);
    iwt_qp_create(&s.t, &s.q, 16);
    SOCKADDR_INET src = iwt_addr(&s.t, 0), dst = iwt_addr(&s.t, port);
    CHECK_STATUS(s.t.ad->Dispatch->NdkCreateConnector(s.t.ad, NULL, NULL, &s.c), STATUS_SUCCESS);
    post_receives(&s);
    iwt_req_init(&rq);
    NTSTATUS st = s.c->Dispatch->NdkConnect(s.c, s.q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                            iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = s.c->Dispatch->NdkCompleteConnect(s.c, on_disc, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_send(iwt_cli_tx(&a->ch), 9);
    exchange(&s);
    teardown(a, &s);
    side_close(&s, NULL);
    return 0;
}

static const struct scenario *g_sc;

static void body(int family)
{
    struct arg a = { .family = family, .sc = g_sc };
    iwt_chan_init(&a.ch);
    iwt_run_pair(server, client, &a, 60000);
    iwt_chan_close(&a.ch);
}

int main(int argc, char **argv)
{
    for (size_t i = 0; argc == 2 && i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (!strcmp(argv[1], scenarios[i].name))
            g_sc = &scenarios[i];
    if (!g_sc) {
        fprintf(stderr, "usage: %s SCENARIO\n", argv[0]);
        return 2;
    }
    printf("scenario %s\n", g_sc->name);
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
