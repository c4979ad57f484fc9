/* Wire faults (iwarp.fault, ndk-iwarp(7) WIRE FAULTS) between two processes over 127.0.0.1: one
 * scenario per run (argv[1]). The client posts Sends of 4 KiB one after another (each one FPDU
 * on loopback), the server has a receive posted for each in one buffer with guard bytes around
 * every slot. For every fault both sides end as docs/providers.md says: exactly one disconnect
 * event on a side whose peer went first (none on the side that disconnected first), every
 * posted request completed exactly once, no hang (every wait is bounded), every object closed
 * and the runtime closed.
 *   reset-fpdu / reset-bytes  the client resets TCP before its 4th FPDU / after 6000 bytes
 *   corrupt-crc               byte 40 of FPDU 3 flipped with CRC: the server's receive fails
 *   corrupt-payload           the same without CRC: placed wrong, inside the receive buffer
 *   corrupt-header            without CRC, a byte of FPDU 3's MSN: refused with a TERMINATE
 *   corrupt-offset            without CRC, a byte of FPDU 3's message offset: refused,
 *                             nothing placed outside the granted receive buffer (guards intact)
 *   stall                     the client's sends stall 400 ms after 2 FPDUs: all arrive, late
 *   stall-rx                  the server stops reading for 400 ms after 8600 bytes: the client's
 *                             Sends go on into TCP's buffers, all arrive, the last at least
 *                             400 ms after the accept
 *   terminate                 the client sends a TERMINATE (DDP, untagged, code 1) in place
 *                             of FPDU 3
 *   drop-reply / delay-reply  the server's MPA Reply never comes / comes after the client's
 *                             500 ms connect timeout: the connect fails with STATUS_IO_TIMEOUT
 *   delay-short               the Reply comes 200 ms late, within the timeout: all works */
#include "iwtest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TMO 10000
#define NMSG 8
#define MSG 4096
#define GUARD 64
#define SLOT (MSG + 2 * GUARD)

enum outcome { DATA_BREAKS, DATA_OK, CONNECT_FAILS };

struct scenario {
    const char *name;
    const char *client_fault, *server_fault;
    int crc;
    enum outcome out;
};

static const struct scenario scenarios[] = {
    { "reset-fpdu", "reset:fpdu=4", NULL, 1, DATA_BREAKS },
    { "reset-bytes", "reset:bytes=6000", NULL, 1, DATA_BREAKS },
    { "corrupt-crc", "corrupt:fpdu=3,offset=40", NULL, 1, DATA_BREAKS },
    { "corrupt-payload", "corrupt:fpdu=3,offset=40", NULL, 0, DATA_OK },
    /* An untagged Send's FPDU (RFC 5044 §4, RFC 5041 §4.3, RFC 5040 §4): MPA length 2, DDP and
     * RDMAP control 2, Invalidate STag 4, QN 4, MSN 4, MO 4: byte 12 is the MSN's most
     * significant byte, byte 17 one of the message offset's (the data would land 64 KiB into a
     * 4 KiB buffer). */
    { "corrupt-header", "corrupt:fpdu=3,offset=12", NULL, 0, DATA_BREAKS },
    { "corrupt-offset", "corrupt:fpdu=3,offset=17", NULL, 0, DATA_BREAKS },
    { "stall", "stall:dir=tx,ms=400,bytes=8600", NULL, 1, DATA_OK },
    { "stall-rx", NULL, "stall:dir=rx,ms=400,bytes=8600", 1, DATA_OK },
    { "terminate", "terminate:fpdu=3,layer=1,type=2,code=1", NULL, 1, DATA_BREAKS },
    { "drop-reply", NULL, "drop_reply", 1, CONNECT_FAILS },
    { "delay-reply", NULL, "delay_reply:ms=1500", 1, CONNECT_FAILS },
    { "delay-short", NULL, "delay_reply:ms=200", 1, DATA_OK },
};

struct arg {
    const struct scenario *sc;
    struct iwt_chan ch;
};

/* Collects completions until every one of n requests (contexts 1..n) completed, then checks
 * for 300 ms that none completes twice. Returns how many succeeded; *first_fail gets the
 * lowest failed context (0 when none failed). */
static int collect(NDK_CQ *cq, int n, int *first_fail)
{
    int seen[NMSG + 1] = { 0 }, total = 0, ok = 0;
    NDK_RESULT_EX r;

    *first_fail = 0;
    while (total < n) {
        CHECK_MSG(iwt_cq_wait(cq, &r, TMO), "only %d of %d requests completed", total, n);
        uintptr_t k = (uintptr_t)r.RequestContext;
        CHECK_MSG(k >= 1 && k <= (uintptr_t)n, "unknown request context %zu", (size_t)k);
        CHECK_MSG(!seen[k]++, "request %zu completed twice", (size_t)k);
        total++;
        if (r.Status == STATUS_SUCCESS)
            ok++;
        else if (!*first_fail || (int)k < *first_fail)
            *first_fail = (int)k;
    }
    CHECK_MSG(!iwt_cq_wait(cq, &r, 300), "a request completed after all had (context %zu)", (size_t)(uintptr_t)r.RequestContext);
    return ok;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint8_t pattern(int msg, int i)
{
    return (uint8_t)(msg * 31 + i * 7 + 1);
}

static int client(void *p)
{
    struct arg *a = p;
    const struct scenario *sc = a->sc;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_CONNECTOR *c;
    static uint8_t buf[NMSG][MSG];
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    SOCKADDR_INET src, dst;
    NTSTATUS st;

    if (sc->client_fault)
        setenv("NDK_IWARP_FAULT", sc->client_fault, 1);
    setenv("NDK_IWARP_FAULT_SEED", "38", 1);
    setenv("NDK_IWARP_CONNECT_TIMEOUT_MS", "500", 1);
    iwt_open(&t, AF_INET);
    iwt_qp_create(&t, &q, NMSG * 2);
    src = iwt_addr(&t, 0);
    dst = iwt_addr(&t, port);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst, iwt_addr_len(&dst), 1, 1,
                                 NULL, 0, iwt_req_cb, &rq);
    st = iwt_req_wait(&rq, st, TMO);
    if (sc->out == CONNECT_FAILS) {
        CHECK_STATUS(st, STATUS_IO_TIMEOUT);
        CHECK_EQ(atomic_load(&rq.done), 1);
        iwt_send(iwt_cli_tx(&a->ch), 2);
        iwt_close_obj(c, TMO);
        iwt_qp_destroy(&q);
        iwt_close(&t);
        return 0;
    }
    CHECK_STATUS(st, STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, iwt_on_disconnect, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    uint64_t t0 = now_ms();
    /* One Send at a time, each waited for, so that each is one FPDU and a fault hits the
     * FPDU it names. A broken connection fails or flushes the rest. */
    int posted = 0, ok = 0;
    for (int m = 0; m < NMSG; m++) {
        NDK_SGE sge = { .VirtualAddress = buf[m], .Length = MSG };
        NDK_RESULT_EX r;
        for (int i = 0; i < MSG; i++)
            buf[m][i] = pattern(m, i);
        st = q.qp->Dispatch->NdkSend(q.qp, (void *)(uintptr_t)(m + 1), &sge, 1, 0);
        if (st != STATUS_SUCCESS)
            break;                    /* the QP is in error: nothing more is accepted */
        posted++;
        CHECK_MSG(iwt_cq_wait(q.cq, &r, TMO), "send %d never completed", m + 1);
        CHECK_MSG((uintptr_t)r.RequestContext == (uintptr_t)(m + 1), "send %d completed out of order", m + 1);
        if (r.Status != STATUS_SUCCESS)
            break;
        ok++;
        usleep(20 * 1000);            /* let the peer answer a broken FPDU before the next */
    }
    uint64_t took = now_ms() - t0;
    if (sc->out == DATA_OK) {
        CHECK_EQ(ok, NMSG);
        if (!strcmp(sc->name, "stall"))
            CHECK_MSG(took >= 400, "the stalled sends took only %llu ms", (unsigned long long)took);
        CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 1);   /* the server has them all */
        iwt_req_init(&rq);
        st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
        CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
        CHECK_EQ(atomic_load(&iwt_disconnect_events), 0);                 /* we went first */
    } else {
        CHECK_MSG(ok < NMSG || posted == NMSG, "impossible");
        /* the peer went away (or we reset): one disconnect event */
        CHECK_MSG(iwt_wait_atomic(&iwt_disconnect_events, 1, TMO), "no disconnect event on the client (%d sends ok)",
                  ok);
        iwt_req_init(&rq);
        st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
        iwt_req_wait(&rq, st, TMO);                        /* completes, whatever its status */
        CHECK_EQ(atomic_load(&rq.done), st == STATUS_PENDING ? 1 : 0);   /* once, or inline */
    }
    usleep(200 * 1000);
    CHECK_EQ(atomic_load(&iwt_disconnect_events), sc->out == DATA_OK ? 0 : 1);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    printf("client: %d of %d sends completed successfully (%d posted) in %llu ms\n", ok, NMSG, posted,
           (unsigned long long)took);
    return 0;
}

static void server(const struct scenario *sc)
{
    struct arg a = { .sc = sc };
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;
    static uint8_t rbuf[NMSG][SLOT];
    NTSTATUS st;
    int first_fail;

    iwt_chan_init(&a.ch);
    pid_t pid = ndk_test_spawn(client, &a);
    if (sc->server_fault)
        setenv("NDK_IWARP_FAULT", sc->server_fault, 1);
    setenv("NDK_IWARP_FAULT_SEED", "38", 1);
    iwt_open(&t, AF_INET);
    iwt_qp_create(&t, &q, NMSG * 2);
    memset(rbuf, 0xee, sizeof rbuf);
    for (int m = 0; m < NMSG; m++) {
        NDK_SGE sge = { .VirtualAddress = rbuf[m] + GUARD, .Length = MSG };
        CHECK_STATUS(q.qp->Dispatch->NdkReceive(q.qp, (void *)(uintptr_t)(m + 1), &sge, 1), STATUS_SUCCESS);
    }
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, iwt_on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a.ch), iwt_port(&la));
    CHECK_MSG(iwt_wait_atomic(&iwt_connect_events, 1, TMO), "no connect event");
    NDK_CONNECTOR *c = atomic_load(&iwt_incoming);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, iwt_on_disconnect, NULL, iwt_req_cb, &rq);
    st = iwt_req_wait(&rq, st, TMO);
    if (sc->out == CONNECT_FAILS) {
        /* the client gave up: the accept fails (the peer closed before the RTR) */
        CHECK_MSG(st != STATUS_SUCCESS, "accept succeeded though the client timed out");
        CHECK_EQ(atomic_load(&rq.done), 1);
        CHECK_EQ(iwt_recv(iwt_srv_rx(&a.ch), TMO), 2);
        CHECK_EQ(atomic_load(&iwt_disconnect_events), 0);                 /* never connected: no event */
        iwt_close_obj(c, TMO);
        iwt_close_obj(l, TMO);
        /* the receives were never used: the QP's close flushes them */
        NDK_RESULT_EX r;
        int n = 0;
        q.qp->Dispatch->NdkFlush(q.qp);
        while (iwt_cq_wait(q.cq, &r, 2000)) {
            CHECK_STATUS(r.Status, STATUS_CANCELLED);
            n++;
        }
        CHECK_EQ(n, NMSG);
        iwt_qp_destroy(&q);
        iwt_close(&t);
        ndk_test_wait_ok(pid, TMO, "client");
        iwt_chan_close(&a.ch);
        return;
    }
    CHECK_STATUS(st, STATUS_SUCCESS);
    uint64_t t_acc = now_ms();
    int ok;
    if (sc->out == DATA_OK) {
        /* all NMSG arrive; then the client disconnects first: one event here */
        NDK_RESULT_EX r;
        ok = 0;
        for (int m = 0; m < NMSG; m++) {
            CHECK_MSG(iwt_cq_wait(q.cq, &r, TMO), "receive %d never completed", m + 1);
            CHECK_STATUS(r.Status, STATUS_SUCCESS);
            CHECK_EQ(r.BytesTransferred, MSG);
            ok++;
        }
        /* the stall began after the accept, so the last message cannot be earlier than it */
        uint64_t took = now_ms() - t_acc;
        if (!strcmp(sc->name, "stall-rx"))
            CHECK_MSG(took >= 400, "the receives with a 400 ms rx stall took only %llu ms", (unsigned long long)took);
        printf("server: all %d receives %llu ms after the accept\n", NMSG, (unsigned long long)took);
        iwt_send(iwt_srv_tx(&a.ch), 1);
        CHECK_MSG(iwt_wait_atomic(&iwt_disconnect_events, 1, TMO), "no disconnect event on the server");
        iwt_req_init(&rq);
        st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
        CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
        first_fail = 0;
    } else {
        CHECK_MSG(iwt_wait_atomic(&iwt_disconnect_events, 1, TMO), "no disconnect event on the server");
        iwt_req_init(&rq);
        st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
        iwt_req_wait(&rq, st, TMO);
        CHECK_EQ(atomic_load(&rq.done), st == STATUS_PENDING ? 1 : 0);
        ok = collect(q.cq, NMSG, &first_fail);
        CHECK_MSG(ok < NMSG, "every receive succeeded although the connection broke");
        if (!strncmp(sc->name, "reset", 5) || !strcmp(sc->name, "terminate") || !strncmp(sc->name, "corrupt", 7))
            CHECK_MSG(ok <= 3, "%d receives succeeded; the fault was at the client's third/fourth FPDU", ok);
    }
    usleep(200 * 1000);
    CHECK_EQ(atomic_load(&iwt_disconnect_events), 1);
    /* Nothing outside the granted receive slots changed; inside, what the client sent (the
     * payload corruption: exactly one byte differs). */
    int diffs = 0;
    for (int m = 0; m < NMSG; m++) {
        for (int i = 0; i < GUARD; i++) {
            CHECK_MSG(rbuf[m][i] == 0xee && rbuf[m][GUARD + MSG + i] == 0xee, "slot %d: a guard byte changed", m);
        }
        if (m < ok)
            for (int i = 0; i < MSG; i++)
                diffs += rbuf[m][GUARD + i] != pattern(m, i);
    }
    if (!strcmp(sc->name, "corrupt-payload"))
        CHECK_MSG(diffs == 1, "%d bytes differ; the one flipped byte should be placed as received", diffs);
    else
        CHECK_MSG(diffs == 0, "%d bytes of successful receives differ from what was sent", diffs);
    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
    ndk_test_wait_ok(pid, TMO, "client");
    iwt_chan_close(&a.ch);
    printf("server: %d receives succeeded, first failure %d; disconnect events %d\n", ok, first_fail,
           atomic_load(&iwt_disconnect_events));
}

int main(int argc, char **argv)
{
    const struct scenario *sc = NULL;

    for (size_t i = 0; argc > 1 && i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (!strcmp(argv[1], scenarios[i].name))
            sc = &scenarios[i];
    if (!sc) {
        fprintf(stderr, "usage: test_iw_wire_fault SCENARIO\n");
        return 2;
    }
    setenv("NDK_IWARP_CRC", sc->crc ? "1" : "0", 1);
    setenv("NDK_IWARP_P2P", "1", 1);
    setenv("NDK_IWARP_ACCEPT_TIMEOUT_MS", "3000", 1);
    server(sc);
    printf("PASS %s\n", sc->name);
    return 0;
}
