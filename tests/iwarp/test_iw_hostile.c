/* Hostile and broken peers, over 127.0.0.1 and ::1, played by raw TCP sockets in the test:
 * garbage instead of an MPA Request, a truncated Request, a silent peer, bytes behind the
 * Request, a Request asking for markers (must get an MPA reject), a Rev 1 initiator (must be
 * accepted, no P2P); and as responders: garbage, an immediate close, silence (timeout), a Reply
 * choosing an RTR we did not offer, an oversized PD_Length. Every case ends with a clean status
 * and teardown; the listener keeps working throughout. */
#include "iwtest.h"
#include "mpa.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TMO 10000

static int raw_connect(struct iwt *t, uint16_t port)
{
    SOCKADDR_INET a = iwt_addr(t, port);
    int fd = socket(t->family, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK(connect(fd, (struct sockaddr *)&a, iwt_addr_len(&a)) == 0);
    return fd;
}

/* Reads until EOF/reset (returns bytes read before it) or timeout (fails). */
static ssize_t raw_read_until_closed(int fd, uint8_t *buf, size_t cap)
{
    size_t got = 0;
    uint64_t end = ndk_test_now_ms() + TMO;
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        CHECK_MSG(ndk_test_now_ms() < end, "the provider did not close the connection");
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = recv(fd, buf ? buf + got : (uint8_t[64]){ 0 }, buf ? cap - got : 64, 0);
        if (n <= 0)
            return (ssize_t)got;
        if (buf)
            got += (size_t)n;
    }
}

static size_t build(struct iw_mpa_frame *f, uint8_t *buf)
{
    int n = iw_mpa_encode(f, 0, buf, 600);
    CHECK(n > 0);
    return (size_t)n;
}

static void passive_cases(struct iwt *t, uint16_t port)
{
    uint8_t buf[700];
    struct iw_mpa_frame f, r;
    size_t n, flen;
    int fd;

    /* garbage */
    fd = raw_connect(t, port);
    memset(buf, 'X', 64);
    CHECK(send(fd, buf, 64, 0) == 64);
    raw_read_until_closed(fd, NULL, 0);
    close(fd);
    /* truncated Request, then the peer vanishes mid-handshake */
    fd = raw_connect(t, port);
    CHECK(send(fd, "MPA ID Req F", 12, 0) == 12);
    close(fd);
    /* silent peer: the responder's MPA timer closes it */
    fd = raw_connect(t, port);
    raw_read_until_closed(fd, NULL, 0);
    close(fd);
    /* bytes behind the Request (RFC 5044 §7.1.2) */
    memset(&f, 0, sizeof f);
    f.kind = IW_MPA_REQUEST;
    f.rev = 2;
    f.enhanced = true;
    f.v2.ird = f.v2.ord = 1;
    n = build(&f, buf);
    memset(buf + n, 0, 20);
    fd = raw_connect(t, port);
    CHECK(send(fd, buf, n + 20, 0) == (ssize_t)(n + 20));
    raw_read_until_closed(fd, NULL, 0);
    close(fd);
    CHECK_EQ(atomic_load(&iwt_connect_events), 0);

    /* markers requested: an MPA reject (R = 1, M cleared) */
    f.markers = true;
    n = build(&f, buf);
    fd = raw_connect(t, port);
    CHECK(send(fd, buf, n, 0) == (ssize_t)n);
    ssize_t got = raw_read_until_closed(fd, buf, sizeof buf);
    close(fd);
    CHECK_EQ(iw_mpa_decode(buf, (size_t)got, IW_MPA_REPLY, 0, &r, &flen, NULL), IW_MPA_COMPLETE);
    CHECK(r.reject);
    CHECK(!r.markers);
    CHECK_EQ(atomic_load(&iwt_connect_events), 0);

    /* a Rev 1 initiator with private data: accepted without P2P */
    memset(&f, 0, sizeof f);
    f.kind = IW_MPA_REQUEST;
    f.rev = 1;
    f.ulp_pd = (const uint8_t *)"rev1!";
    f.ulp_pd_len = 5;
    n = build(&f, buf);
    fd = raw_connect(t, port);
    CHECK(send(fd, buf, n, 0) == (ssize_t)n);
    CHECK_MSG(iwt_wait_atomic(&iwt_connect_events, 1, TMO), "no connect event for a Rev 1 Request");
    NDK_CONNECTOR *c = atomic_load(&iwt_incoming);
    uint8_t pd[252];
    ULONG len = sizeof pd;
    CHECK_STATUS(c->Dispatch->NdkGetConnectionData(c, NULL, NULL, pd, &len), STATUS_SUCCESS);
    CHECK(memcmp(pd, "rev1!", 5) == 0 && pd[5] == 0);
    struct iwt_qp q;
    struct iwt_req rq;
    iwt_qp_create(t, &q, 4);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, "ok", 2, iwt_on_disconnect, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    struct pollfd p = { .fd = fd, .events = POLLIN };
    CHECK(poll(&p, 1, TMO) == 1);
    got = recv(fd, buf, sizeof buf, 0);
    CHECK_EQ(iw_mpa_decode(buf, (size_t)got, IW_MPA_REPLY, 0, &r, &flen, NULL), IW_MPA_COMPLETE);
    CHECK_EQ(r.rev, 1);
    CHECK(!r.reject && !r.has_v2);
    CHECK(r.ulp_pd_len == 2 && memcmp(r.ulp_pd, "ok", 2) == 0);
    CHECK_EQ((size_t)got, flen);                   /* nothing behind the Reply (§2.2) */
    close(fd);                                     /* the peer goes: one disconnect event */
    CHECK_MSG(iwt_wait_atomic(&iwt_disconnect_events, 1, TMO), "no disconnect event");
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
}

struct raw_srv {
    int lfd;
    uint16_t port;
};

static void raw_listen(struct iwt *t, struct raw_srv *s)
{
    SOCKADDR_INET a = iwt_addr(t, 0);
    socklen_t sl = sizeof a;
    s->lfd = socket(t->family, SOCK_STREAM, 0);
    CHECK(bind(s->lfd, (struct sockaddr *)&a, iwt_addr_len(&a)) == 0 && listen(s->lfd, 8) == 0);
    CHECK(getsockname(s->lfd, (struct sockaddr *)&a, &sl) == 0);
    s->port = iwt_port(&a);
}

static NDK_CONNECTOR *start_connect(struct iwt *t, struct iwt_qp *q, uint16_t port, struct iwt_req *rq)
{
    NDK_CONNECTOR *c;
    SOCKADDR_INET src = iwt_addr(t, 0), dst = iwt_addr(t, port);
    CHECK_STATUS(t->ad->Dispatch->NdkCreateConnector(t->ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(rq);
    NTSTATUS st = c->Dispatch->NdkConnect(c, q->qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst,
                                          iwt_addr_len(&dst), 1, 1, NULL, 0, iwt_req_cb, rq);
    CHECK_STATUS(st, STATUS_PENDING);
    return c;
}

/* Accepts the provider's TCP connection and reads its MPA Request. */
static int raw_accept_request(struct raw_srv *s, struct iw_mpa_frame *req, uint8_t *buf)
{
    int fd = accept(s->lfd, NULL, NULL);
    CHECK(fd >= 0);
    size_t got = 0, flen;
    for (;;) {
        ssize_t n = recv(fd, buf + got, 600 - got, 0);
        CHECK(n > 0);
        got += (size_t)n;
        if (iw_mpa_decode(buf, got, IW_MPA_REQUEST, 0, req, &flen, NULL) == IW_MPA_COMPLETE)
            return fd;
    }
}

static void active_cases(struct iwt *t)
{
    struct raw_srv s;
    struct iwt_qp q;
    struct iwt_req rq;
    struct iw_mpa_frame req, rep;
    uint8_t buf[700];
    NDK_CONNECTOR *c;
    NTSTATUS st;
    int fd;

    raw_listen(t, &s);
    iwt_qp_create(t, &q, 4);

    /* garbage instead of a Reply */
    c = start_connect(t, &q, s.port, &rq);
    fd = raw_accept_request(&s, &req, buf);
    CHECK_EQ(req.rev, 2);
    CHECK(req.enhanced && req.has_v2 && req.crc && req.v2.p2p);    /* our initiator defaults */
    memset(buf, 'Y', 40);
    CHECK(send(fd, buf, 40, 0) == 40);
    st = iwt_req_wait(&rq, STATUS_PENDING, TMO);
    CHECK_MSG(st != STATUS_SUCCESS && st != STATUS_PENDING, "garbage Reply accepted: 0x%08x", (unsigned)st);
    close(fd);
    iwt_close_obj(c, TMO);

    /* the responder closes at once */
    c = start_connect(t, &q, s.port, &rq);
    fd = raw_accept_request(&s, &req, buf);
    close(fd);
    CHECK_STATUS(iwt_req_wait(&rq, STATUS_PENDING, TMO), STATUS_CONNECTION_REFUSED);
    iwt_close_obj(c, TMO);

    /* a Reply choosing a Send RTR we never offered */
    c = start_connect(t, &q, s.port, &rq);
    fd = raw_accept_request(&s, &req, buf);
    memset(&rep, 0, sizeof rep);
    rep.kind = IW_MPA_REPLY;
    rep.rev = 2;
    rep.crc = true;
    rep.enhanced = true;
    rep.v2.p2p = true;
    rep.v2.rtr = IW_MPA_RTR_SEND;
    int n = iw_mpa_encode(&rep, 0, buf, sizeof buf);
    CHECK(send(fd, buf, (size_t)n, 0) == n);
    st = iwt_req_wait(&rq, STATUS_PENDING, TMO);
    CHECK_MSG(st != STATUS_SUCCESS && st != STATUS_PENDING, "bad RTR choice accepted");
    close(fd);
    iwt_close_obj(c, TMO);

    /* PD_Length over the 256 we accept */
    c = start_connect(t, &q, s.port, &rq);
    fd = raw_accept_request(&s, &req, buf);
    memcpy(buf, IW_MPA_KEY_REP, 16);
    buf[16] = 0x50;
    buf[17] = 2;
    buf[18] = 0x02;
    buf[19] = 0x58;     /* 600 */
    CHECK(send(fd, buf, 20, 0) == 20);
    st = iwt_req_wait(&rq, STATUS_PENDING, TMO);
    CHECK_MSG(st != STATUS_SUCCESS && st != STATUS_PENDING, "oversized PD_Length accepted");
    close(fd);
    iwt_close_obj(c, TMO);

    /* silence: the connect times out (connect_timeout_ms = 500 in this test) */
    c = start_connect(t, &q, s.port, &rq);
    fd = raw_accept_request(&s, &req, buf);
    CHECK_STATUS(iwt_req_wait(&rq, STATUS_PENDING, TMO), STATUS_IO_TIMEOUT);
    close(fd);
    iwt_close_obj(c, TMO);

    close(s.lfd);
    iwt_qp_destroy(&q);
}

static void body(int family)
{
    struct iwt t;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;

    atomic_store(&iwt_connect_events, 0);
    atomic_store(&iwt_disconnect_events, 0);
    iwt_open(&t, family);
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, iwt_on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    passive_cases(&t, iwt_port(&la));
    active_cases(&t);
    iwt_close_obj(l, TMO);
    iwt_close(&t);
}

int main(void)
{
    setenv("NDK_IWARP_CONNECT_TIMEOUT_MS", "500", 1);
    setenv("NDK_IWARP_MPA_REQUEST_TIMEOUT_MS", "300", 1);
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
