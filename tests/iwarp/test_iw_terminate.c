/* Protocol errors after the MPA exchange, over 127.0.0.1 and ::1, with a raw TCP peer in the
 * test: the provider must send exactly one Terminate (RFC 6581, RFC 5040 §4.8) and then close,
 * and the consumer's pending request must complete with STATUS_DATA_ERROR.
 *   responder (our NdkAccept pending, P2P with a Write RTR chosen):
 *     - a data Send instead of the RTR        -> Terminate RDMAP / remote operation / opcode
 *     - a zero-length Write RTR with a bad CRC -> Terminate LLP / MPA / CRC error
 *   initiator:
 *     - a P2P Reply whose RTR choice matches none offered (our NdkConnect pending)
 *                                              -> Terminate LLP / MPA / no matching RTR
 *     - Read RTR chosen; a zero-length Write comes back instead of the Read Response (our
 *       NdkCompleteConnect pending)           -> Terminate RDMAP / remote operation / opcode */
#include "iwtest.h"
#include "fpdu.h"
#include "mpa.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TMO 10000

static _Atomic(NDK_CONNECTOR *) g_in;
static atomic_int g_ev;

static void on_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    atomic_store(&g_in, c);
    atomic_fetch_add(&g_ev, 1);
}

/* Reads until the provider closes the connection (EOF or reset); returns the bytes read. */
static size_t read_until_closed(int fd, uint8_t *buf, size_t cap)
{
    size_t got = 0;
    uint64_t end = ndk_test_now_ms() + TMO;

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        CHECK_MSG(ndk_test_now_ms() < end, "the provider did not close the connection");
        if (poll(&p, 1, 100) <= 0)
            continue;
        CHECK(got < cap);
        ssize_t n = recv(fd, buf + got, cap - got, 0);
        if (n <= 0)
            return got;
        got += (size_t)n;
    }
}

/* Reads exactly one MPA frame of kind from fd (the peer sends nothing behind it yet). */
static void read_mpa(int fd, enum iw_mpa_kind kind, struct iw_mpa_frame *f, uint8_t *buf)
{
    size_t got = 0, flen;

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        CHECK_MSG(poll(&p, 1, TMO) == 1, "no MPA frame");
        ssize_t n = recv(fd, buf + got, 600 - got, 0);
        CHECK(n > 0);
        got += (size_t)n;
        if (iw_mpa_decode(buf, got, kind, 0, f, &flen, NULL) == IW_MPA_COMPLETE) {
            CHECK_EQ(flen, got);
            return;
        }
    }
}

/* bytes must be exactly one Terminate FPDU with the given layer / etype / code. */
static void check_terminate(const uint8_t *bytes, size_t len, bool crc, uint8_t layer, uint8_t etype, uint8_t code)
{
    struct iw_fpdu_rx_cfg cfg = { .crc = crc };
    struct iw_fpdu_rx rx;
    struct iw_fpdu_event ev;
    struct iw_fpdu_hdr h;
    size_t off = 0, used;
    int terms = 0;

    CHECK_MSG(len > 0, "the provider closed without a Terminate");
    iw_fpdu_rx_init(&rx, &cfg);
    memset(&h, 0, sizeof h);
    while (off < len) {
        enum iw_fpdu_ev_type t = iw_fpdu_rx_step(&rx, bytes + off, len - off, &used, &ev);
        off += used;
        CHECK_MSG(t != IW_FPDU_EV_ERROR, "the provider sent a malformed FPDU (%s)",
                  iw_fpdu_rx_reason_str(ev.err->reason));
        if (t == IW_FPDU_EV_HEADER)
            h = *ev.hdr;
        if (t == IW_FPDU_EV_END) {
            CHECK_MSG(h.opcode == IW_OP_TERMINATE, "the provider sent %s, not a Terminate",
                      iw_fpdu_opcode_name(h.opcode));
            terms++;
        }
        if (t == IW_FPDU_EV_NEED_MORE)
            break;
    }
    CHECK_MSG(off == len && rx.state == IW_FPDU_RX_HDR_START && rx.hgot == 0, "trailing bytes after the Terminate");
    CHECK_EQ(terms, 1);
    CHECK_EQ(h.qn, IW_QN_TERMINATE);
    CHECK_EQ(h.msn, 1);
    CHECK_MSG(h.term.layer == layer && h.term.etype == etype && h.term.ecode == code,
              "Terminate says layer %u etype %u code 0x%02x, expected %u %u 0x%02x", h.term.layer, h.term.etype,
              h.term.ecode, layer, etype, code);
}

static int raw_connect(struct iwt *t, uint16_t port)
{
    SOCKADDR_INET a = iwt_addr(t, port);
    int fd = socket(t->family, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK(connect(fd, (struct sockaddr *)&a, iwt_addr_len(&a)) == 0);
    return fd;
}

/* Raw P2P initiator against our listener; sends first (its first FPDU) and checks the answer. */
static void passive_case(struct iwt *t, uint16_t port, const uint8_t *first, size_t first_len, bool corrupt_crc,
                         uint8_t layer, uint8_t etype, uint8_t code)
{
    struct iw_mpa_frame f, r;
    uint8_t buf[700], fpdu[128];
    struct iwt_qp q;
    struct iwt_req rq;
    int n, fd;

    atomic_store(&g_ev, 0);
    memset(&f, 0, sizeof f);
    f.kind = IW_MPA_REQUEST;
    f.rev = 2;
    f.crc = true;
    f.enhanced = true;
    f.v2.ird = f.v2.ord = 1;
    f.v2.p2p = true;
    f.v2.rtr = IW_MPA_RTR_WRITE;
    n = iw_mpa_encode(&f, 0, buf, sizeof buf);
    CHECK(n > 0);
    fd = raw_connect(t, port);
    CHECK(send(fd, buf, (size_t)n, 0) == n);
    CHECK_MSG(iwt_wait_atomic(&g_ev, 1, TMO), "no connect event");
    NDK_CONNECTOR *c = atomic_load(&g_in);
    iwt_qp_create(t, &q, 4);
    iwt_req_init(&rq);
    NTSTATUS st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(st, STATUS_PENDING);
    read_mpa(fd, IW_MPA_REPLY, &r, buf);
    CHECK(!r.reject && r.v2.p2p && r.v2.rtr == IW_MPA_RTR_WRITE && r.crc);
    CHECK(first_len <= sizeof fpdu);
    memcpy(fpdu, first, first_len);
    if (corrupt_crc)
        fpdu[first_len - 1] ^= 0x5a;
    CHECK(send(fd, fpdu, first_len, 0) == (ssize_t)first_len);
    size_t got = read_until_closed(fd, buf, sizeof buf);
    check_terminate(buf, got, r.crc, layer, etype, code);
    CHECK_STATUS(iwt_req_wait(&rq, STATUS_PENDING, TMO), STATUS_DATA_ERROR);
    close(fd);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
}

static size_t build_fpdu(const struct iw_fpdu_hdr *h, const void *payload, size_t len, bool crc, uint8_t *out)
{
    struct iw_iov iov = { payload, len };
    int n = iw_fpdu_build(h, len ? &iov : NULL, len ? 1 : 0, crc, out, 128);
    CHECK(n > 0);
    return (size_t)n;
}

static void passive_cases(struct iwt *t, uint16_t port)
{
    struct iw_fpdu_hdr h;
    uint8_t fp[128];
    size_t n;

    /* a data Send where the RTR belongs */
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_SEND;
    h.last = true;
    h.msn = 1;
    n = build_fpdu(&h, "hello, world", 12, true, fp);
    passive_case(t, port, fp, n, false, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE);

    /* the right RTR (zero-length Write, STag 1) with a broken CRC */
    memset(&h, 0, sizeof h);
    h.opcode = IW_OP_WRITE;
    h.last = true;
    h.stag = 1;
    n = build_fpdu(&h, NULL, 0, true, fp);
    passive_case(t, port, fp, n, true, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA, IW_TERM_LLP_CRC);
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

static int send_reply(struct raw_srv *s, const struct iw_mpa_frame *rep, struct iw_mpa_frame *req)
{
    uint8_t buf[700];
    int fd = accept(s->lfd, NULL, NULL);
    CHECK(fd >= 0);
    read_mpa(fd, IW_MPA_REQUEST, req, buf);
    CHECK(req->v2.p2p && (req->v2.rtr & IW_MPA_RTR_WRITE) && (req->v2.rtr & IW_MPA_RTR_READ));
    int n = iw_mpa_encode(rep, 0, buf, sizeof buf);
    CHECK(n > 0 && send(fd, buf, (size_t)n, 0) == n);
    return fd;
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
    size_t got;
    int fd;

    raw_listen(t, &s);
    iwt_qp_create(t, &q, 4);
    memset(&rep, 0, sizeof rep);
    rep.kind = IW_MPA_REPLY;
    rep.rev = 2;
    rep.crc = true;
    rep.enhanced = true;
    rep.v2.ird = rep.v2.ord = 1;
    rep.v2.p2p = true;

    /* a Reply choosing a Send RTR: none of what we offered */
    c = start_connect(t, &q, s.port, &rq);
    rep.v2.rtr = IW_MPA_RTR_SEND;
    fd = send_reply(&s, &rep, &req);
    got = read_until_closed(fd, buf, sizeof buf);
    check_terminate(buf, got, true, IW_TERM_LAYER_LLP, IW_TERM_ETYPE_LLP_MPA, IW_TERM_LLP_NO_RTR_MATCH);
    CHECK_STATUS(iwt_req_wait(&rq, STATUS_PENDING, TMO), STATUS_DATA_ERROR);
    close(fd);
    iwt_close_obj(c, TMO);

    /* Read RTR chosen; the answer to our zero-length Read Request is a zero-length Write */
    c = start_connect(t, &q, s.port, &rq);
    rep.v2.rtr = IW_MPA_RTR_READ;
    fd = send_reply(&s, &rep, &req);
    CHECK_STATUS(iwt_req_wait(&rq, STATUS_PENDING, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, NULL, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(st, STATUS_PENDING);
    {
        /* our Read Request RTR, read one byte at a time so that nothing behind it is consumed */
        struct iw_fpdu_rx_cfg cfg = { .crc = true };
        struct iw_fpdu_rx rx;
        struct iw_fpdu_event ev;
        uint8_t op = 0xff;
        bool end = false;
        iw_fpdu_rx_init(&rx, &cfg);
        while (!end) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            uint8_t b;
            size_t used;
            CHECK_MSG(poll(&p, 1, TMO) == 1, "no Read RTR");
            CHECK(recv(fd, &b, 1, 0) == 1);
            enum iw_fpdu_ev_type ty = iw_fpdu_rx_step(&rx, &b, 1, &used, &ev);
            CHECK(ty != IW_FPDU_EV_ERROR);
            if (ty == IW_FPDU_EV_HEADER)
                op = ev.hdr->opcode;
            end = ty == IW_FPDU_EV_END;
        }
        CHECK_EQ(op, IW_OP_READ_REQ);
        struct iw_fpdu_hdr h;
        uint8_t fp[128];
        memset(&h, 0, sizeof h);
        h.opcode = IW_OP_WRITE;
        h.last = true;
        h.stag = 1;
        size_t n = build_fpdu(&h, NULL, 0, true, fp);
        CHECK(send(fd, fp, n, 0) == (ssize_t)n);
    }
    got = read_until_closed(fd, buf, sizeof buf);
    check_terminate(buf, got, true, IW_TERM_LAYER_RDMAP, IW_TERM_ETYPE_RDMAP_REMOTE_OP, IW_TERM_RDMAP_OPCODE);
    CHECK_STATUS(iwt_req_wait(&rq, STATUS_PENDING, TMO), STATUS_DATA_ERROR);
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

    iwt_open(&t, family);
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), NULL, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    passive_cases(&t, iwt_port(&la));
    active_cases(&t);
    iwt_close_obj(l, TMO);
    iwt_close(&t);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
