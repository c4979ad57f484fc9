/* The non-P2P initiator's first-FPDU hold (issue 13 item 5; docs/providers.md, "Interoperating with siw"):
 * against a raw MPA responder on 127.0.0.1, our initiator (NDK_IWARP_P2P=0) sends nothing for
 * first_fpdu_hold_ms after the connection is up, then its first Send; with the hold at 0 the
 * Send goes out at once (RFC 5044 allows it). What is checked is the hold's existence, with a
 * wide margin (nothing in the first half of a 400 ms hold), not its timing. */
#include "iwtest.h"
#include "mpa.h"

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 10000

struct raw {
    int lfd;
    uint16_t port;
    int hold_ms;
    atomic_int done;
    int quiet_ms;                 /* how long nothing came after the Reply */
    int got;                      /* bytes of the first FPDU seen */
};

static void *responder(void *p)
{
    struct raw *r = p;
    uint8_t buf[1024];
    struct iw_mpa_frame req, rep;
    size_t got = 0, flen;

    int fd = accept(r->lfd, NULL, NULL);
    CHECK(fd >= 0);
    for (;;) {
        ssize_t n = recv(fd, buf + got, sizeof buf - got, 0);
        CHECK(n > 0);
        got += (size_t)n;
        if (iw_mpa_decode(buf, got, IW_MPA_REQUEST, 0, &req, &flen, NULL) == IW_MPA_COMPLETE)
            break;
    }
    CHECK_MSG(!req.v2.p2p, "the initiator asked for P2P although NDK_IWARP_P2P=0");
    memset(&rep, 0, sizeof rep);
    rep.kind = IW_MPA_REPLY;
    rep.rev = req.rev;
    rep.crc = false;
    rep.enhanced = req.rev == 2;
    rep.v2.ird = 1;
    rep.v2.ord = 1;
    int n = iw_mpa_encode(&rep, 0, buf, sizeof buf);
    CHECK(n > 0 && send(fd, buf, (size_t)n, 0) == n);
    uint64_t t0 = ndk_test_now_ms();
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    CHECK_MSG(poll(&pf, 1, TMO) == 1, "no FPDU from the initiator within %d ms", TMO);
    r->quiet_ms = (int)(ndk_test_now_ms() - t0);
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    CHECK(k > 0);
    r->got = (int)k;
    atomic_store(&r->done, 1);
    close(fd);
    return NULL;
}

static void run(int hold_ms)
{
    char v[16];
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    struct raw r = { .hold_ms = hold_ms };
    NDK_CONNECTOR *c;
    pthread_t th;
    static uint8_t msg[16] = "first FPDU";

    snprintf(v, sizeof v, "%d", hold_ms);
    setenv("NDK_IWARP_FIRST_FPDU_HOLD_MS", v, 1);
    setenv("NDK_IWARP_P2P", "0", 1);
    setenv("NDK_IWARP_CRC", "0", 1);
    iwt_open(&t, AF_INET);
    iwt_qp_create(&t, &q, 4);
    SOCKADDR_INET a = iwt_addr(&t, 0);
    socklen_t sl = sizeof a;
    r.lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(bind(r.lfd, (struct sockaddr *)&a, iwt_addr_len(&a)) == 0 && listen(r.lfd, 4) == 0);
    CHECK(getsockname(r.lfd, (struct sockaddr *)&a, &sl) == 0);
    r.port = iwt_port(&a);
    CHECK(pthread_create(&th, NULL, responder, &r) == 0);

    SOCKADDR_INET src = iwt_addr(&t, 0), dst = iwt_addr(&t, r.port);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                          iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    NDK_SGE sge = { .VirtualAddress = msg, .Length = sizeof msg, .MemoryRegionToken = 0 };
    UINT32 priv;
    q.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(q.pd, &priv);
    sge.MemoryRegionToken = priv;
    CHECK_STATUS(q.qp->Dispatch->NdkSend(q.qp, NULL, &sge, 1, 0), STATUS_SUCCESS);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(atomic_load(&r.done) == 1 && r.got > 0);
    printf("hold %d ms: first FPDU %d ms after the Reply (%d bytes)\n", hold_ms, r.quiet_ms, r.got);
    if (hold_ms)
        CHECK_MSG(r.quiet_ms >= hold_ms / 2, "first FPDU %d ms after the Reply: the %d ms hold did not hold",
                  r.quiet_ms, hold_ms);
    close(r.lfd);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
    iwt_close(&t);
}

int main(void)
{
    run(400);
    run(0);
    printf("PASS\n");
    return 0;
}
