/* cases_cm.c - connection management: connect/accept/reject, private data, read limits,
 * listener close, peer death, address errors (NDKPI reference §2.11, §2.12, §3.5, §3.6, §5.11). */
#define _GNU_SOURCE
#include "conform.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define T_ADDR 0x8001u
#define T_GO   0x8002u
#define T_DONE 0x8003u
#define T_END  0x800Eu

static void pd_fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 13);
}

/* Reads the peer's private data with the RDS protocol of §2.11 and checks the first n bytes. */
static void check_conn_data(NDK_CONNECTOR *cn, size_t n, uint8_t seed)
{
    ULONG rds = 0;
    CHECK_ST(cn->Dispatch->NdkGetConnectionData(cn, NULL, NULL, NULL, &rds), STATUS_SUCCESS);
    CHECK_MSG(rds >= n, "RDS %u is smaller than the %zu bytes the peer sent (§2.11)", rds, n);
    uint8_t *buf = malloc(rds + 16);
    uint8_t want[65536];
    pd_fill(want, n, seed);
    if (rds > 1) {
        /* Too small: STATUS_BUFFER_TOO_SMALL, the prefix copied, RDS stored. */
        ULONG len = rds / 2;
        memset(buf, 0xEE, rds + 16);
        CHECK_ST(cn->Dispatch->NdkGetConnectionData(cn, NULL, NULL, buf, &len), STATUS_BUFFER_TOO_SMALL);
        CHECK_EQ(len, rds);
        size_t cmp = n < rds / 2 ? n : rds / 2;
        CHECK_MSG(memcmp(buf, want, cmp) == 0, "a short private-data buffer did not get the prefix");
        CHECK_MSG(cf_all(buf + rds / 2, rds + 16 - rds / 2, 0xEE), "NdkGetConnectionData wrote past the buffer");
    }
    ULONG len = rds + 16;
    memset(buf, 0xEE, rds + 16);
    CHECK_ST(cn->Dispatch->NdkGetConnectionData(cn, NULL, NULL, buf, &len), STATUS_SUCCESS);
    CHECK_EQ(len, rds);
    CHECK_MSG(memcmp(buf, want, n) == 0, "private data differs from what the peer sent");
    free(buf);
}

static void nop_connect(void *ctx, NDK_CONNECTOR *c)
{
    (void)ctx;
    (void)c;
}

static ULONG umin(ULONG a, ULONG b)
{
    return a < b ? a : b;
}

static SOCKADDR_INET conn_addr(NDK_CONNECTOR *cn, bool peer)
{
    SOCKADDR_INET a;
    memset(&a, 0, sizeof a);
    ULONG len = 2;
    NTSTATUS st = peer ? cn->Dispatch->NdkGetPeerAddress(cn, (PSOCKADDR)&a, &len)
                       : cn->Dispatch->NdkGetLocalAddress(cn, (PSOCKADDR)&a, &len);
    CHECK_MSG(st == STATUS_BUFFER_TOO_SMALL, "address getter with 2 bytes: %s (§5.11.7)", cf_status_name(st));
    CHECK_EQ(len, cf_addr_len(&cf_env.addr));
    len = sizeof a;
    st = peer ? cn->Dispatch->NdkGetPeerAddress(cn, (PSOCKADDR)&a, &len)
              : cn->Dispatch->NdkGetLocalAddress(cn, (PSOCKADDR)&a, &len);
    CHECK_ST(st, STATUS_SUCCESS);
    CHECK_EQ(len, cf_addr_len(&cf_env.addr));
    CHECK_MSG(cf_addr_same_ip(&a, &cf_env.addr), "connection address of another IP");
    return a;
}

/* ==== connect / accept / disconnect ==== */

static void connect_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    struct cf_qp_attr at = { .ird = 4, .ord = 2 };
    cf_conn_init(&c, &at);
    CHECK_MSG(c.ad.info.MaxInboundReadLimit >= 4 && c.ad.info.MaxOutboundReadLimit >= 5,
              "this case needs IRD >= 4 and ORD >= 5");
    cf_conn_listen(&c);
    cf_send_bytes(fd, &c.lis_addr, sizeof c.lis_addr);
    NDK_CONNECTOR *in = cf_conn_next_incoming(&c, cf_ms(15000));
    CHECK_MSG(in, "no connect event");
    check_conn_data(in, 40, 0x10);
    ULONG ird = 99, ord = 99, z = 0;
    CHECK_ST(in->Dispatch->NdkGetConnectionData(in, &ird, &ord, NULL, &z), STATUS_SUCCESS);
    /* Before the accept only the initiator's offer is known (§8.22): never more than it offered. */
    CHECK_MSG(ird <= 5 && ord <= 3, "passive side reports inbound %u / outbound %u, more than the initiator offered "
              "(outbound 5 / inbound 3)", ird, ord);
    uint8_t pd[30];
    pd_fill(pd, sizeof pd, 0x20);
    struct cf_mem rx;
    cf_mem_alloc(&rx, 4096, 0, 0);
    cf_mem_reg(&rx, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE s = cf_sge(&rx, 0, 64);
    cf_post_recv(&c, 0x41, &s, 1);
    s = cf_sge(&rx, 64, 64);
    cf_post_recv(&c, 0x42, &s, 1);
    CHECK_ST(cf_conn_accept(&c, in, pd, sizeof pd), STATUS_SUCCESS);
    /* Addresses: the accepted connection uses the listener's endpoint (§1.8). */
    SOCKADDR_INET loc = conn_addr(c.conn, false), peer = conn_addr(c.conn, true);
    CHECK_EQ(cf_port(&loc), cf_port(&c.lis_addr));
    SOCKADDR_INET cli[2];
    cf_recv_bytes(fd, cli, sizeof cli);
    CHECK_MSG(cf_port(&cli[0]) == cf_port(&peer), "server sees peer port %u, client's local port is %u",
              cf_port(&peer), cf_port(&cli[0]));
    CHECK_EQ(cf_port(&cli[1]), cf_port(&loc));
    /* Traffic works. */
    cf_cq_expect(c.rcq, 0x41, STATUS_SUCCESS, NdkOperationTypeReceive);
    /* The client disconnects: one disconnect event (§3.6), no flush merely for the event. */
    CHECK_MSG(cf_conn_wait_disc(&c, 1, cf_ms(15000)), "no disconnect event after the peer's NdkDisconnect (§5.11.6)");
    cf_sleep_ms(100);
    cf_cq_expect_none(c.rcq, 50);
    CHECK_ST(cf_disconnect(c.conn), STATUS_SUCCESS);
    cf_cq_expect(c.rcq, 0x42, STATUS_CANCELLED, NdkOperationTypeReceive);
    cf_sleep_ms(300);
    CHECK_MSG(cf_conn_disc_events(&c) == 1, "%d disconnect events for one connection (§3.6: once)",
              cf_conn_disc_events(&c));
    cf_hear(fd, T_DONE);
    cf_mem_free(&rx);
    cf_conn_fini(&c);
}

static void connect_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    struct cf_qp_attr at = { .ird = 3, .ord = 5 };
    cf_conn_init(&c, &at);
    SOCKADDR_INET dst;
    cf_recv_bytes(fd, &dst, sizeof dst);
    uint8_t pd[40];
    pd_fill(pd, sizeof pd, 0x10);
    struct cf_mem m;
    cf_mem_alloc(&m, 4096, 0, 0);
    cf_mem_reg(&m, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE s = cf_sge(&m, 0, 64);
    cf_post_recv(&c, 0x51, &s, 1);   /* posted before the connection (§8.28) */
    CHECK_ST(cf_conn_connect_only(&c, &dst, pd, sizeof pd), STATUS_SUCCESS);
    check_conn_data(c.conn, 30, 0x20);
    ULONG ird = 0, ord = 0, z = 0;
    CHECK_ST(c.conn->Dispatch->NdkGetConnectionData(c.conn, &ird, &ord, NULL, &z), STATUS_SUCCESS);
    /* §5.11.3: inbound = min(own 3, peer's outbound 2), outbound = min(own 5, peer's inbound 4). */
    CHECK_MSG(ird == umin(3, 2) && ord == umin(5, 4), "effective read limits inbound %u outbound %u, expected 2 and 4 "
              "(§5.11.3)", ird, ord);
    CHECK_ST(cf_conn_complete(&c), STATUS_SUCCESS);
    SOCKADDR_INET mine[2] = { conn_addr(c.conn, false), conn_addr(c.conn, true) };
    CHECK_EQ(cf_port(&mine[1]), cf_port(&dst));
    cf_send_bytes(fd, mine, sizeof mine);
    NDK_SGE t = cf_sge(&m, 1024, 8);
    cf_post_send(&c, 0x52, &t, 1, 0);
    cf_cq_expect(c.icq, 0x52, STATUS_SUCCESS, NdkOperationTypeSend);
    /* Graceful disconnect: completes once the peer answered; the QP is flushed after (§5.11.6). */
    CHECK_ST(cf_disconnect(c.conn), STATUS_SUCCESS);
    cf_cq_expect(c.rcq, 0x51, STATUS_CANCELLED, NdkOperationTypeReceive);
    cf_sleep_ms(100);
    CHECK_MSG(cf_conn_disc_events(&c) <= 1, "%d disconnect events", cf_conn_disc_events(&c));
    /* A disconnected QP takes no more initiator requests. */
    NTSTATUS st = c.qp->Dispatch->NdkSend(c.qp, (PVOID)0x53, &t, 1, 0);
    if (st == STATUS_SUCCESS)
        cf_cq_expect_error(c.icq, 0x53, NdkOperationTypeSend);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_mem_free(&m);
    cf_conn_fini(&c);
}

void case_cm_connect(void)
{
    cf_pair(connect_server, connect_client, NULL, cf_ms(50000));
}

/* ==== reject ==== */

static void reject_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    cf_conn_listen(&c);
    cf_send_bytes(fd, &c.lis_addr, sizeof c.lis_addr);
    NDK_CONNECTOR *in = cf_conn_next_incoming(&c, cf_ms(15000));
    CHECK(in);
    check_conn_data(in, 12, 0x30);
    ULONG n = c.ad.info.MaxCalleeData;
    uint8_t *pd = malloc(n);
    pd_fill(pd, n, 0x40);
    CHECK_ST(in->Dispatch->NdkReject(in, pd, n), STATUS_SUCCESS);
    free(pd);
    cf_hear(fd, T_DONE);
    cf_close(in);   /* a rejected connector is still closed by the consumer (§8.36) */
    cf_conn_fini(&c);
}

static void reject_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    SOCKADDR_INET dst;
    cf_recv_bytes(fd, &dst, sizeof dst);
    uint8_t pd[12];
    pd_fill(pd, sizeof pd, 0x30);
    NTSTATUS st = cf_conn_connect_only(&c, &dst, pd, sizeof pd);
    CHECK_MSG(st == STATUS_CONNECTION_REFUSED, "connect rejected by the peer: %s, expected STATUS_CONNECTION_REFUSED "
              "(§2.11)", cf_status_name(st));
    /* The reject's private data is readable (§2.11 NdkGetConnectionData). */
    check_conn_data(c.conn, c.ad.info.MaxCalleeData, 0x40);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_conn_fini(&c);
}

void case_cm_reject(void)
{
    cf_pair(reject_server, reject_client, NULL, cf_ms(50000));
}

static void reject_active_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    cf_conn_listen(&c);
    cf_send_bytes(fd, &c.lis_addr, sizeof c.lis_addr);
    NDK_CONNECTOR *in = cf_conn_next_incoming(&c, cf_ms(15000));
    CHECK(in);
    uint8_t pd[8];
    pd_fill(pd, sizeof pd, 0x50);
    NTSTATUS st = cf_conn_accept(&c, in, pd, sizeof pd);
    CHECK_MSG(st == STATUS_CONNECTION_ABORTED, "NdkAccept after the initiator rejected: %s, expected "
              "STATUS_CONNECTION_ABORTED (§2.11 NdkAccept)", cf_status_name(st));
    cf_hear(fd, T_DONE);
    cf_conn_fini(&c);
}

static void reject_active_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    SOCKADDR_INET dst;
    cf_recv_bytes(fd, &dst, sizeof dst);
    CHECK_ST(cf_conn_connect_only(&c, &dst, NULL, 0), STATUS_SUCCESS);
    check_conn_data(c.conn, 8, 0x50);
    uint8_t pd[10];
    pd_fill(pd, sizeof pd, 0x60);
    CHECK_ST(c.conn->Dispatch->NdkReject(c.conn, pd, sizeof pd), STATUS_SUCCESS);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_conn_fini(&c);
}

void case_cm_reject_active(void)
{
    cf_pair(reject_active_server, reject_active_client, NULL, cf_ms(50000));
}

/* ==== refused ==== */

static void refused_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    /* A port with nothing behind it: a listener's port after it closed. */
    cf_conn_listen(&c);
    SOCKADDR_INET dead = c.lis_addr;
    cf_close(c.lis);
    c.lis = NULL;
    cf_send_bytes(fd, &dead, sizeof dead);
    cf_hear(fd, T_DONE);
    /* A paused listener behaves as if there were none (§2.12, §5.11.5). */
    cf_conn_listen(&c);
    c.lis->Dispatch->NdkControlConnectEvents(c.lis, TRUE);
    cf_send_bytes(fd, &c.lis_addr, sizeof c.lis_addr);
    cf_hear(fd, T_DONE);
    CHECK_MSG(cf_conn_next_incoming(&c, 100) == NULL, "a connect event on a paused listener (§3.5)");
    c.lis->Dispatch->NdkControlConnectEvents(c.lis, FALSE);
    cf_tell(fd, T_GO, 0, 0, 0, 0);
    NDK_CONNECTOR *in = cf_conn_next_incoming(&c, cf_ms(15000));
    CHECK_MSG(in, "no connect event after resuming the listener");
    CHECK_ST(cf_conn_accept(&c, in, NULL, 0), STATUS_SUCCESS);
    cf_hear(fd, T_DONE);
    cf_conn_fini(&c);
}

static void refused_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    SOCKADDR_INET dst;
    cf_recv_bytes(fd, &dst, sizeof dst);
    NTSTATUS st = cf_conn_connect_only(&c, &dst, NULL, 0);
    CHECK_MSG(st == STATUS_CONNECTION_REFUSED, "connect to a port without a listener: %s, expected "
              "STATUS_CONNECTION_REFUSED (§2.11)", cf_status_name(st));
    cf_close(c.conn);
    c.conn = NULL;
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_recv_bytes(fd, &dst, sizeof dst);
    st = cf_conn_connect_only(&c, &dst, NULL, 0);
    CHECK_MSG(st == STATUS_CONNECTION_REFUSED, "connect to a paused listener: %s, expected STATUS_CONNECTION_REFUSED "
              "(§2.12 NdkControlConnectEvents)", cf_status_name(st));
    cf_close(c.conn);
    c.conn = NULL;
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_GO);
    CHECK_ST(cf_conn_connect(&c, &dst, NULL, 0), STATUS_SUCCESS);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_conn_fini(&c);
}

void case_cm_refused(void)
{
    cf_pair(refused_server, refused_client, NULL, cf_ms(50000));
}

/* ==== listener close with an accepted connector ==== */

static void lclose_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    SOCKADDR_INET port = c.lis_addr;
    NTSTATUS st;
    struct cf_op *lc = cf_close_start(c.lis, &st);
    c.lis = NULL;
    CHECK_MSG(st == STATUS_PENDING, "closing a listener with an accepted connector returned %s; it must pend (§5.1, "
              "§5.11.5)", cf_status_name(st));
    /* It refuses new connections at once, and its port stays taken. */
    cf_tell(fd, T_GO, 0, 0, 0, 0);
    cf_hear(fd, T_DONE);
    CHECK_MSG(cf_conn_next_incoming(&c, 50) == NULL, "a connect event after the listener's close was requested");
    /* New listeners on the same adapter instance (the same device and endpoint table). */
    struct cf_ad *a2 = &c.ad;
    {
        /* Same port as the closing listener: STATUS_SHARING_VIOLATION while the connector lives. */
        struct cf_op *cop = cf_op_new("NdkCreateListener");
        NDK_LISTENER *l = CF_SENTINEL, *out;
        NTSTATUS cst = a2->ad->Dispatch->NdkCreateListener(a2->ad, nop_connect, NULL, cf_create_cb, cop, &l);
        CHECK_ST(cf_create_done(cop, cst, (void *const *)&l, NdkObjectTypeListener, a2->version, (void **)&out),
                 STATUS_SUCCESS);
        cst = cf_listen(out, &port);
        CHECK_MSG(cst == STATUS_SHARING_VIOLATION, "NdkListen on the port of a closing listener with an open accepted "
                  "connector: %s, expected STATUS_SHARING_VIOLATION (§5.11.5)", cf_status_name(cst));
        cf_sleep_ms(30);
        CHECK_MSG(!cf_close_finished(lc), "listener close completed while an accepted connector was open");
        /* Close the accepted connector (and its QP): the listener close completes after it. */
        struct cf_op *cc = cf_close_start_ex(((struct cf_obj *)c.conn)->Dispatch, c.conn, 20, &cst);
        c.conn = NULL;
        CHECK(cf_close_wait(cc, cf_ms(10000)));
        CHECK_MSG(cf_close_wait(lc, cf_ms(10000)), "listener close never completed after its last connector closed");
        if (cc->seq_leave)
            CHECK_MSG(lc->seq_enter > cc->seq_leave, "listener close completed while its connector's close completion "
                      "ran (§5.1)");
        /* Now the port is free. */
        cf_close(out);
        cop = cf_op_new("NdkCreateListener");
        l = CF_SENTINEL;
        cst = a2->ad->Dispatch->NdkCreateListener(a2->ad, nop_connect, NULL, cf_create_cb, cop, &l);
        CHECK_ST(cf_create_done(cop, cst, (void *const *)&l, NdkObjectTypeListener, a2->version, (void **)&out),
                 STATUS_SUCCESS);
        cst = cf_listen(out, &port);
        CHECK_MSG(cst == STATUS_SUCCESS, "the port of a fully closed listener is still taken: %s", cf_status_name(cst));
        cf_close(out);
    }
    cf_tell(fd, T_END, 0, 0, 0, 0);
    cf_conn_fini(&c);
}

static void lclose_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn a;
    SOCKADDR_INET dst;
    cf_conn_init(&a, NULL);
    cf_recv_bytes(fd, &dst, sizeof dst);
    CHECK_ST(cf_conn_connect(&a, &dst, NULL, 0), STATUS_SUCCESS);
    cf_hear(fd, T_GO);
    /* A second connection attempt on the same adapter instance. */
    NDK_QP *qp;
    CHECK_ST(cf_try_qp(&a.ad, a.pd, a.rcq, a.icq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
    NDK_CONNECTOR *cn = cf_connector(&a.ad);
    SOCKADDR_INET src = cf_addr(0);
    struct cf_op *op = cf_op_new("NdkConnect");
    NTSTATUS st = cn->Dispatch->NdkConnect(cn, qp, (PSOCKADDR)&src, cf_addr_len(&src), (PSOCKADDR)&dst,
                                           cf_addr_len(&dst), 1, 1, NULL, 0, cf_req_cb, op);
    st = cf_req_done(op, st);
    CHECK_MSG(st == STATUS_CONNECTION_REFUSED, "connect to a listener whose close was requested: %s, expected "
              "STATUS_CONNECTION_REFUSED (§5.11.5)", cf_status_name(st));
    cf_close(cn);
    cf_close(qp);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_END);
    cf_conn_fini(&a);
}

void case_cm_listener_close(void)
{
    cf_pair(lclose_server, lclose_client, NULL, cf_ms(50000));
}

/* ==== peer death ==== */

static void death_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_server_up(&c, fd, NULL);
    struct cf_mem rx;
    cf_mem_alloc(&rx, 4096, 0, 0);
    cf_mem_reg(&rx, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (int i = 0; i < 4; i++) {
        NDK_SGE s = cf_sge(&rx, (size_t)i * 64, 64);
        cf_post_recv(&c, 0x60 + (uintptr_t)i, &s, 1);
    }
    cf_hear(fd, T_GO);
    pid_t pid = cf_peer_pid;
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    cf_peer_pid = 0;
    CHECK_MSG(cf_conn_wait_disc(&c, 1, cf_ms(20000)), "no disconnect event after the peer process died (§3.6)");
    cf_sleep_ms(500);
    CHECK_MSG(cf_conn_disc_events(&c) == 1, "%d disconnect events (§3.6: exactly once)", cf_conn_disc_events(&c));
    /* NdkDisconnect on the dead connection completes (either way) and flushes what is left. */
    NTSTATUS st = cf_disconnect(c.conn);
    cf_note("NdkDisconnect after the peer died: %s", cf_status_name(st));
    int seen[4] = { 0 };
    for (int i = 0; i < 4; i++) {
        NDK_RESULT_EX r;
        CHECK_MSG(cf_cq_next(c.rcq, &r, cf_ms(10000)), "receive %d of 4 never completed after the peer died", i);
        uintptr_t k = (uintptr_t)r.RequestContext - 0x60;
        CHECK_MSG(k < 4 && ++seen[k] == 1, "bad or duplicate receive completion %#lx",
                  (unsigned long)(uintptr_t)r.RequestContext);
        CHECK_MSG(!NT_SUCCESS(r.Status), "receive completed with %s after the peer died", cf_status_name(r.Status));
    }
    cf_cq_expect_none(c.rcq, 100);
    cf_mem_free(&rx);
    cf_conn_fini(&c);
}

static void death_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_client_up(&c, fd, NULL);
    cf_tell(fd, T_GO, 0, 0, 0, 0);
    for (;;)
        cf_sleep_ms(1000);   /* killed by the server */
}

void case_cm_peer_death(void)
{
    cf_pair(death_server, death_client, NULL, cf_ms(50000));
}

/* ==== peer death in the middle of a transfer ==== */

#define MID_CHUNK (1u << 20)
#define MID_COUNT 24u

static void mid_server(int fd, void *arg)
{
    (void)arg;
    struct cf_qp_attr attr = { .iq_depth = MID_COUNT, .rq_depth = 4 };
    struct cf_conn c;
    cf_server_up(&c, fd, &attr);
    struct cf_msg where = cf_hear(fd, T_GO);             /* the client's region */
    struct cf_mem src;
    cf_mem_alloc(&src, MID_CHUNK, 0, 0);
    cf_fill(src.buf, MID_CHUNK, 7, 0);
    cf_mem_reg(&src, &c.ad, c.pd, 0);
    /* A stream of RDMA Writes, and the target process killed while they are on the wire. */
    for (uint32_t i = 0; i < MID_COUNT; i++) {
        NDK_SGE s = cf_sge(&src, 0, MID_CHUNK);
        cf_post_write(&c, 0x100 + i, &s, 1, where.addr + (uint64_t)(i % 8) * MID_CHUNK, where.token, 0);
    }
    kill(cf_peer_pid, SIGKILL);
    int status;
    waitpid(cf_peer_pid, &status, 0);
    cf_peer_pid = 0;
    /* Every Write completes exactly once (success if it left before the death, else an error),
     * the disconnect event fires once, and nothing hangs (§3.6, §5.5.2, §5.11.6). */
    bool seen[MID_COUNT] = { false };
    int failed = 0;
    for (uint32_t n = 0; n < MID_COUNT; n++) {
        NDK_RESULT_EX r;
        CHECK_MSG(cf_cq_next(c.icq, &r, cf_ms(20000)), "write %u of %u never completed after the peer died", n,
                  MID_COUNT);
        uintptr_t k = (uintptr_t)r.RequestContext - 0x100;
        CHECK_MSG(k < MID_COUNT && !seen[k], "bad or duplicate completion %#lx", (unsigned long)(uintptr_t)r.RequestContext);
        seen[k] = true;
        CHECK_EQ(r.Type, NdkOperationTypeWrite);
        if (!NT_SUCCESS(r.Status))
            failed++;
    }
    cf_cq_expect_none(c.icq, 100);
    CHECK_MSG(cf_conn_wait_disc(&c, 1, cf_ms(20000)), "no disconnect event after the peer died mid-transfer");
    cf_sleep_ms(300);
    CHECK_MSG(cf_conn_disc_events(&c) == 1, "%d disconnect events (§3.6: exactly once)", cf_conn_disc_events(&c));
    cf_note("%d of %u writes failed after the peer died", failed, MID_COUNT);
    /* Posting on the dead connection fails inline or completes with an error; never hangs. */
    NDK_SGE s = cf_sge(&src, 0, 64);
    NTSTATUS st = c.qp->Dispatch->NdkWrite(c.qp, (void *)0x999, &s, 1, where.addr, where.token, 0);
    if (NT_SUCCESS(st)) {
        NDK_RESULT_EX r;
        CHECK_MSG(cf_cq_next(c.icq, &r, cf_ms(10000)), "a write posted after the death never completed");
        CHECK_MSG(!NT_SUCCESS(r.Status), "a write to a dead peer succeeded");
    }
    cf_mem_free(&src);
    cf_conn_fini(&c);
}

static void mid_client(int fd, void *arg)
{
    (void)arg;
    struct cf_qp_attr attr = { .iq_depth = MID_COUNT, .rq_depth = 4 };
    struct cf_conn c;
    cf_client_up(&c, fd, &attr);
    struct cf_mem dst;
    cf_mem_alloc(&dst, 8 * (size_t)MID_CHUNK, 0, 0);
    cf_mem_reg(&dst, &c.ad, c.pd, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    cf_tell(fd, T_GO, (uint64_t)(uintptr_t)dst.buf, dst.rtok, dst.len, 0);
    for (;;)
        cf_sleep_ms(1000);   /* killed by the server */
}

void case_cm_peer_death_transfer(void)
{
    cf_pair(mid_server, mid_client, NULL, cf_ms(60000));
}

/* ==== private data limits ==== */

static void pdata_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    ULONG callee = c.ad.info.MaxCalleeData, caller = c.ad.info.MaxCallerData;
    cf_conn_listen(&c);
    cf_send_bytes(fd, &c.lis_addr, sizeof c.lis_addr);
    /* 1: the client connects with exactly MaxCallerData bytes; we accept with MaxCalleeData. */
    NDK_CONNECTOR *in = cf_conn_next_incoming(&c, cf_ms(15000));
    CHECK(in);
    check_conn_data(in, caller, 0x70);
    uint8_t *pd = malloc(callee + 1);
    pd_fill(pd, callee + 1, 0x71);
    CHECK_ST(cf_conn_accept(&c, in, pd, callee), STATUS_SUCCESS);
    cf_hear(fd, T_DONE);
    /* 2: the client's connect with one byte too many fails; no connect event for it. */
    cf_hear(fd, T_DONE);
    CHECK_MSG(cf_conn_next_incoming(&c, 200) == NULL, "a connect with MaxCallerData + 1 bytes reached the listener");
    /* 3: accept and reject with MaxCalleeData + 1 bytes fail; a proper reject works. */
    cf_tell(fd, T_GO, 0, 0, 0, 0);
    NDK_CONNECTOR *in3 = cf_conn_next_incoming(&c, cf_ms(15000));
    CHECK(in3);
    NDK_QP *qp3;
    CHECK_ST(cf_try_qp(&c.ad, c.pd, c.rcq, c.icq, NULL, 4, 4, 1, 1, 0, &qp3), STATUS_SUCCESS);
    struct cf_op *op = cf_op_new("NdkAccept(MaxCalleeData+1)");
    NTSTATUS st = in3->Dispatch->NdkAccept(in3, qp3, 1, 1, pd, callee + 1, NULL, NULL, cf_req_cb, op);
    st = cf_req_done(op, st);
    CHECK_MSG(!NT_SUCCESS(st), "NdkAccept with MaxCalleeData + 1 bytes of private data succeeded (§5.11.4)");
    cf_note("NdkAccept with MaxCalleeData + 1 bytes: %s", cf_status_name(st));
    st = in3->Dispatch->NdkReject(in3, pd, callee + 1);
    CHECK_MSG(!NT_SUCCESS(st), "NdkReject with MaxCalleeData + 1 bytes of private data succeeded (§5.11.4)");
    st = in3->Dispatch->NdkReject(in3, pd, 4);
    CHECK_MSG(st == STATUS_SUCCESS || st == STATUS_CONNECTION_ABORTED, "NdkReject after refused oversize calls: %s",
              cf_status_name(st));
    cf_hear(fd, T_DONE);
    cf_close(in3);
    cf_close(qp3);
    free(pd);
    cf_conn_fini(&c);
}

static void pdata_client(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    ULONG callee = c.ad.info.MaxCalleeData, caller = c.ad.info.MaxCallerData;
    SOCKADDR_INET dst;
    cf_recv_bytes(fd, &dst, sizeof dst);
    uint8_t *pd = malloc(caller + 1);
    pd_fill(pd, caller + 1, 0x70);
    CHECK_ST(cf_conn_connect_only(&c, &dst, pd, caller), STATUS_SUCCESS);
    check_conn_data(c.conn, callee, 0x71);
    CHECK_ST(cf_conn_complete(&c), STATUS_SUCCESS);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    /* One byte over. */
    NDK_CONNECTOR *cn = cf_connector(&c.ad);
    NDK_QP *qp;
    CHECK_ST(cf_try_qp(&c.ad, c.pd, c.rcq, c.icq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
    SOCKADDR_INET src = cf_addr(0);
    struct cf_op *op = cf_op_new("NdkConnect(MaxCallerData+1)");
    NTSTATUS st = cn->Dispatch->NdkConnect(cn, qp, (PSOCKADDR)&src, cf_addr_len(&src), (PSOCKADDR)&dst,
                                           cf_addr_len(&dst), 1, 1, pd, caller + 1, cf_req_cb, op);
    st = cf_req_done(op, st);
    CHECK_MSG(!NT_SUCCESS(st), "NdkConnect with MaxCallerData + 1 bytes of private data succeeded (§5.11.4)");
    cf_note("NdkConnect with MaxCallerData + 1 bytes: %s", cf_status_name(st));
    cf_close(cn);
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_hear(fd, T_GO);
    cn = cf_connector(&c.ad);
    op = cf_op_new("NdkConnect");
    st = cn->Dispatch->NdkConnect(cn, qp, (PSOCKADDR)&src, cf_addr_len(&src), (PSOCKADDR)&dst, cf_addr_len(&dst), 1, 1,
                                  pd, 4, cf_req_cb, op);
    st = cf_req_done(op, st);
    CHECK_MSG(st == STATUS_CONNECTION_REFUSED, "connect rejected by the peer: %s", cf_status_name(st));
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_close(cn);
    cf_close(qp);
    free(pd);
    cf_conn_fini(&c);
}

void case_cm_private_data(void)
{
    cf_pair(pdata_server, pdata_client, NULL, cf_ms(50000));
}

/* ==== ephemeral source ports across adapter instances ==== */

static void eph_server(int fd, void *arg)
{
    (void)arg;
    struct cf_conn c;
    cf_conn_init(&c, NULL);
    cf_conn_listen(&c);
    cf_send_bytes(fd, &c.lis_addr, sizeof c.lis_addr);
    NDK_QP *qps[2] = { c.qp, NULL };
    CHECK_ST(cf_try_qp(&c.ad, c.pd, c.rcq, c.icq, NULL, 4, 4, 1, 1, 0, &qps[1]), STATUS_SUCCESS);
    NDK_CONNECTOR *ins[2] = { NULL, NULL };
    for (int i = 0; i < 2; i++) {
        struct cf_msg m = cf_hear(fd, T_GO);
        if (m.arg) {
            ins[i] = cf_conn_next_incoming(&c, cf_ms(15000));
            CHECK_MSG(ins[i], "no connect event for connection %d", i);
            struct cf_op *op = cf_op_new("NdkAccept");
            NTSTATUS st = ins[i]->Dispatch->NdkAccept(ins[i], qps[i], 1, 1, NULL, 0, NULL, NULL, cf_req_cb, op);
            CHECK_ST(cf_req_done(op, st), STATUS_SUCCESS);
        }
    }
    cf_hear(fd, T_DONE);
    for (int i = 0; i < 2; i++)
        if (ins[i])
            cf_close(ins[i]);
    cf_close(qps[1]);
    cf_conn_fini(&c);
}

static void eph_client(int fd, void *arg)
{
    (void)arg;
    /* Two runtime instances in one process, each connecting from port 0 to the same listener:
     * each must get its own free ephemeral port (§2.11, §5.11.5). */
    struct cf_conn a, b;
    SOCKADDR_INET dst;
    cf_recv_bytes(fd, &dst, sizeof dst);
    cf_conn_init(&a, NULL);
    cf_conn_init(&b, NULL);
    cf_tell(fd, T_GO, 0, 0, 0, 1);
    CHECK_ST(cf_conn_connect(&a, &dst, NULL, 0), STATUS_SUCCESS);
    SOCKADDR_INET la = conn_addr(a.conn, false);
    cf_tell(fd, T_GO, 0, 0, 0, 1);
    NTSTATUS st = cf_conn_connect_only(&b, &dst, NULL, 0);
    if (st == STATUS_SUCCESS)
        st = cf_conn_complete(&b);
    CHECK_MSG(st == STATUS_SUCCESS, "second connection from port 0 (another adapter instance, first one on port %u): "
              "%s; the provider must pick a free ephemeral port (§5.11.5)", cf_port(&la), cf_status_name(st));
    SOCKADDR_INET lb = conn_addr(b.conn, false);
    CHECK_MSG(cf_port(&la) != cf_port(&lb), "two live connections share local port %u", cf_port(&la));
    cf_tell(fd, T_DONE, 0, 0, 0, 0);
    cf_conn_fini(&b);
    cf_conn_fini(&a);
}

void case_cm_ephemeral_ports(void)
{
    cf_pair(eph_server, eph_client, NULL, cf_ms(50000));
}

/* ==== address errors ==== */

static NDK_LISTENER *new_listener(struct cf_ad *a)
{
    struct cf_op *op = cf_op_new("NdkCreateListener");
    NDK_LISTENER *l = CF_SENTINEL, *out;
    NTSTATUS st = a->ad->Dispatch->NdkCreateListener(a->ad, nop_connect, NULL, cf_create_cb, op, &l);
    CHECK_ST(cf_create_done(op, st, (void *const *)&l, NdkObjectTypeListener, a->version, (void **)&out),
             STATUS_SUCCESS);
    return out;
}

void case_cm_address(void)
{
    struct cf_ad a;
    cf_ad_open(&a);
    /* Not an address of this adapter (§5.11.7). */
    NDK_LISTENER *l = new_listener(&a);
    SOCKADDR_INET foreign = cf_foreign_addr(0);
    NTSTATUS st = cf_listen(l, &foreign);
    CHECK_MSG(st == STATUS_INVALID_ADDRESS, "NdkListen on %s's foreign address: %s, expected STATUS_INVALID_ADDRESS",
              cf_env.family == AF_INET6 ? "2001:db8::7" : "192.0.2.7", cf_status_name(st));
    cf_close(l);
    /* The same port twice: STATUS_SHARING_VIOLATION (§2.12). */
    NDK_LISTENER *l1 = new_listener(&a), *l2 = new_listener(&a);
    SOCKADDR_INET any = cf_addr(0);
    CHECK_ST(cf_listen(l1, &any), STATUS_SUCCESS);
    SOCKADDR_INET bound = cf_listener_addr(l1);
    st = cf_listen(l2, &bound);
    CHECK_MSG(st == STATUS_SHARING_VIOLATION, "NdkListen on a port already listened on: %s", cf_status_name(st));
    cf_close(l2);
    /* Connect from a foreign source address: STATUS_INVALID_ADDRESS (§2.11). */
    NDK_PD *pd = cf_pd(&a);
    struct cf_cq *cq = cf_cq(&a, 16);
    NDK_QP *qp;
    CHECK_ST(cf_try_qp(&a, pd, cq, cq, NULL, 4, 4, 1, 1, 0, &qp), STATUS_SUCCESS);
    NDK_CONNECTOR *cn = cf_connector(&a);
    struct cf_op *op = cf_op_new("NdkConnect(foreign source)");
    st = cn->Dispatch->NdkConnect(cn, qp, (PSOCKADDR)&foreign, cf_addr_len(&foreign), (PSOCKADDR)&bound,
                                  cf_addr_len(&bound), 1, 1, NULL, 0, cf_req_cb, op);
    st = cf_req_done(op, st);
    CHECK_MSG(st == STATUS_INVALID_ADDRESS, "NdkConnect from a foreign source address: %s, expected "
              "STATUS_INVALID_ADDRESS (§2.11)", cf_status_name(st));
    cf_close(cn);
    /* Connect from the listener's own port: the local address is in use (§2.11). */
    cn = cf_connector(&a);
    op = cf_op_new("NdkConnect(source port in use)");
    SOCKADDR_INET src = bound;
    SOCKADDR_INET dst = bound;
    st = cn->Dispatch->NdkConnect(cn, qp, (PSOCKADDR)&src, cf_addr_len(&src), (PSOCKADDR)&dst, cf_addr_len(&dst), 1, 1,
                                  NULL, 0, cf_req_cb, op);
    st = cf_req_done(op, st);
    CHECK_MSG(st == STATUS_SHARING_VIOLATION, "NdkConnect from a source port a listener holds: %s, expected "
              "STATUS_SHARING_VIOLATION (§2.11, §5.11.5)", cf_status_name(st));
    cf_close(cn);
    cf_close(l1);
    cf_close(qp);
    cf_cq_close(cq);
    cf_close(pd);
    cf_ad_close(&a);
}
