/* Bytes captured equal bytes sent and received (iwarp.capture, issue 38 item 2): a server and a
 * client process, each capturing its one connection to its own pcapng file (NDK_IWARP_CAPTURE)
 * and each with its own runtime directory (NDK_RUNTIME_DIR), so that OID_NDK_STATISTICS counts
 * that process alone even where the runtime sums every process of the adapter. The client sends
 * Sends of 1 B to 200 KiB, the server echoes each; MPA CRC and peer-to-peer mode on (the RTR
 * counts). After the disconnect each process reads its counters, closes the adapter (which
 * closes the file), reads the file back with the reader below, and checks per direction: the
 * TCP payload bytes of the frames from its own port equal RDMAOutOctets, those to it equal
 * RDMAInOctets, and both are at least the message bytes. argv[1]: ipv4 or ipv6. */
#include "iwtest.h"

#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TMO 10000
#define NMSG 6
#define MAXMSG (200u * 1024u)

static const uint32_t sizes[NMSG] = { 1, 100, 4096, 65536, 70000, MAXMSG };

struct arg {
    int family;
    char dir[256];
    struct iwt_chan ch;
};

struct dirbytes {
    uint64_t out, in, frames;
};

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;                                   /* the section is in host order (checked) */
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Reads a pcapng file of Ethernet frames and adds up the TCP payload of the frames whose source
 * port is port (out) and whose destination port is port (in). Fails the test on a file it
 * cannot read: wrong magic, a block that runs past the end, a frame that is not IP/TCP. */
static struct dirbytes pcapng_tcp_bytes(const char *path, uint16_t port)
{
    struct dirbytes d = { 0, 0, 0 };
    FILE *fp = fopen(path, "rb");
    CHECK_MSG(fp, "no capture file %s", path);
    uint8_t *blk = malloc(MAXMSG + 4096);
    CHECK(blk);
    uint8_t h[8];
    int sections = 0;
    while (fread(h, 1, 8, fp) == 8) {
        uint32_t type = rd32(h), len = rd32(h + 4);
        CHECK_MSG(len >= 12 && len % 4 == 0 && len <= MAXMSG + 4096, "%s: block of %u bytes", path, len);
        CHECK_MSG(fread(blk, 1, len - 8, fp) == len - 8, "%s: truncated block", path);
        if (type == 0x0A0D0D0A) {               /* section header */
            CHECK_MSG(rd32(blk) == 0x1A2B3C4D, "%s: byte-order magic %08x", path, rd32(blk));
            sections++;
            continue;
        }
        if (type != 6)                          /* only enhanced packet blocks carry frames */
            continue;
        CHECK_MSG(sections == 1, "%s: a frame before the section header", path);
        uint32_t caplen = rd32(blk + 12);
        const uint8_t *f = blk + 20;
        CHECK_MSG(caplen >= 14 && caplen <= len - 32, "%s: frame of %u bytes in a block of %u", path, caplen, len);
        uint16_t et = be16(f + 12);
        const uint8_t *ip = f + 14, *tcp;
        uint32_t iplen, l3len;
        if (et == 0x0800) {
            CHECK_MSG(ip[9] == 6, "%s: IPv4 protocol %u", path, ip[9]);
            l3len = (uint32_t)(ip[0] & 15) * 4;
            iplen = be16(ip + 2);               /* header included */
        } else {
            CHECK_MSG(et == 0x86DD && ip[6] == 6, "%s: ethertype %04x", path, et);
            l3len = 40;
            iplen = 40u + be16(ip + 4);
        }
        CHECK_MSG(14 + iplen <= caplen, "%s: IP length %u past the frame (%u)", path, iplen, caplen);
        tcp = ip + l3len;
        uint32_t tcplen = (uint32_t)(tcp[12] >> 4) * 4, pay = iplen - l3len - tcplen;
        CHECK_MSG(tcplen >= 20 && l3len + tcplen <= iplen, "%s: TCP header of %u bytes", path, tcplen);
        if (be16(tcp) == port)
            d.out += pay;
        else if (be16(tcp + 2) == port)
            d.in += pay;
        else
            CHECK_MSG(0, "%s: a frame of ports %u -> %u, neither ours (%u)", path, be16(tcp), be16(tcp + 2), port);
        d.frames++;
    }
    CHECK_MSG(feof(fp), "%s: read error", path);
    free(blk);
    fclose(fp);
    return d;
}

/* This process's OID_NDK_STATISTICS RDMAOutOctets / RDMAInOctets. */
static void counters(struct iwt *t, uint64_t *out, uint64_t *in)
{
    union {
        NDIS_NDK_STATISTICS_INFO s;
        uint8_t b[4096];
    } u;
    ULONG wr = 0, need = 0;
    memset(&u, 0, sizeof u);
    CHECK_STATUS(ndk_rt_query_oid(t->rt, t->id, OID_NDK_STATISTICS, u.b, sizeof u.b, &wr, &need), STATUS_SUCCESS);
    *out = u.s.CounterSet.RDMAOutOctets;
    *in = u.s.CounterSet.RDMAInOctets;
}

/* Each side's own check: its capture against its counters. */
static void compare(const char *who, const char *file, uint16_t port, uint64_t out, uint64_t in)
{
    uint64_t msgs = 0;
    for (int m = 0; m < NMSG; m++)
        msgs += sizes[m];
    struct dirbytes d = pcapng_tcp_bytes(file, port);
    printf("%s: port %u: captured out %llu in %llu (%llu frames); counters RDMAOutOctets %llu RDMAInOctets %llu\n",
           who, port, (unsigned long long)d.out, (unsigned long long)d.in, (unsigned long long)d.frames,
           (unsigned long long)out, (unsigned long long)in);
    CHECK_MSG(d.out >= msgs && d.in >= msgs, "%s: captured %llu / %llu bytes, less than the %llu message bytes", who,
              (unsigned long long)d.out, (unsigned long long)d.in, (unsigned long long)msgs);
    CHECK_MSG(d.out == out, "%s: %llu bytes captured going out, RDMAOutOctets %llu", who, (unsigned long long)d.out,
              (unsigned long long)out);
    CHECK_MSG(d.in == in, "%s: %llu bytes captured coming in, RDMAInOctets %llu", who, (unsigned long long)d.in,
              (unsigned long long)in);
}

/* The process's own runtime directory and capture file under dir. */
static void own_env(const char *dir, const char *who, char *file, size_t cap)
{
    char rt[300];
    snprintf(rt, sizeof rt, "%s/rt-%s", dir, who);
    CHECK_MSG(mkdir(rt, 0700) == 0, "mkdir %s", rt);
    setenv("NDK_RUNTIME_DIR", rt, 1);
    snprintf(file, cap, "%s/%s.pcapng", dir, who);
    setenv("NDK_IWARP_CAPTURE", file, 1);
}

static void post_recvs(struct iwt_qp *q, uint8_t *buf)
{
    for (int m = 0; m < NMSG; m++) {
        NDK_SGE sge = { .VirtualAddress = buf + (size_t)m * MAXMSG, .Length = MAXMSG };
        CHECK_STATUS(q->qp->Dispatch->NdkReceive(q->qp, (void *)(uintptr_t)(100 + m), &sge, 1), STATUS_SUCCESS);
    }
}

/* The send and receive queues share the CQ, and nothing orders completions between two queues:
 * the echo's receive may complete before the send that caused it, when the thread that sent was
 * preempted before it completed the send. Completions of the other kind wait here (one process
 * per side). */
static NDK_RESULT_EX early[4];
static int nearly;

static NDK_RESULT_EX take(struct iwt_qp *q, uintptr_t ctx, const char *what, int m)
{
    NDK_RESULT_EX r;

    for (int i = 0; i < nearly; i++)
        if ((uintptr_t)early[i].RequestContext == ctx) {
            r = early[i];
            early[i] = early[--nearly];
            return r;
        }
    for (;;) {
        CHECK_MSG(iwt_cq_wait(q->cq, &r, TMO), "%s %d never completed", what, m);
        if ((uintptr_t)r.RequestContext == ctx)
            return r;
        CHECK_MSG(nearly < 4, "unexpected completion (context %p)", r.RequestContext);
        early[nearly++] = r;
    }
}

static void send_wait(struct iwt_qp *q, uint8_t *buf, uint32_t len, int m)
{
    NDK_SGE sge = { .VirtualAddress = buf, .Length = len };
    CHECK_STATUS(q->qp->Dispatch->NdkSend(q->qp, (void *)(uintptr_t)(1 + m), &sge, 1, 0), STATUS_SUCCESS);
    CHECK_STATUS(take(q, (uintptr_t)(1 + m), "send", m).Status, STATUS_SUCCESS);
}

static uint32_t recv_wait(struct iwt_qp *q, int m)
{
    NDK_RESULT_EX r = take(q, (uintptr_t)(100 + m), "receive", m);
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    return r.BytesTransferred;
}

static int client(void *p)
{
    struct arg *a = p;
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_CONNECTOR *c;
    char file[300];
    uint8_t *sbuf = malloc(MAXMSG), *rbuf = malloc((size_t)NMSG * MAXMSG);
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    SOCKADDR_INET src, dst, me;
    ULONG mlen = sizeof me;
    uint64_t out, in;
    NTSTATUS st;

    CHECK(sbuf && rbuf);
    own_env(a->dir, "client", file, sizeof file);
    iwt_open(&t, a->family);
    iwt_qp_create(&t, &q, NMSG * 2);
    post_recvs(&q, rbuf);
    src = iwt_addr(&t, 0);
    dst = iwt_addr(&t, port);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateConnector(t.ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&src, iwt_addr_len(&src), (PSOCKADDR)&dst, iwt_addr_len(&dst), 1, 1,
                                 NULL, 0, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkCompleteConnect(c, iwt_on_disconnect, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    CHECK_STATUS(c->Dispatch->NdkGetLocalAddress(c, (PSOCKADDR)&me, &mlen), STATUS_SUCCESS);
    for (int m = 0; m < NMSG; m++) {
        memset(sbuf, 'a' + m, sizes[m]);
        send_wait(&q, sbuf, sizes[m], m);
        CHECK_EQ(recv_wait(&q, m), sizes[m]);             /* the echo */
    }
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_close_obj(c, TMO);
    iwt_qp_destroy(&q);
    counters(&t, &out, &in);
    iwt_close(&t);
    compare("client", file, iwt_port(&me), out, in);
    free(sbuf);
    free(rbuf);
    return 0;
}

static void server(int family)
{
    struct arg a = { .family = family };
    struct iwt t;
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;
    char file[300];
    uint64_t out, in;
    NTSTATUS st;

    snprintf(a.dir, sizeof a.dir, "/tmp/ndk-capbytes-XXXXXX");
    CHECK_MSG(mkdtemp(a.dir), "mkdtemp");
    iwt_chan_init(&a.ch);
    pid_t pid = ndk_test_spawn(client, &a);
    own_env(a.dir, "server", file, sizeof file);
    uint8_t *rbuf = malloc((size_t)NMSG * MAXMSG);
    CHECK(rbuf);
    iwt_open(&t, family);
    iwt_qp_create(&t, &q, NMSG * 2);
    post_recvs(&q, rbuf);
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, iwt_on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a.ch), iwt_port(&la));
    CHECK_MSG(iwt_wait_atomic(&iwt_connect_events, 1, TMO), "no connect event");
    NDK_CONNECTOR *c = atomic_load(&iwt_incoming);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, iwt_on_disconnect, NULL, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    for (int m = 0; m < NMSG; m++) {
        uint32_t got = recv_wait(&q, m);
        CHECK_EQ(got, sizes[m]);
        send_wait(&q, rbuf + (size_t)m * MAXMSG, got, m);
    }
    CHECK_MSG(iwt_wait_atomic(&iwt_disconnect_events, 1, TMO), "no disconnect event on the server");
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    iwt_req_wait(&rq, st, TMO);
    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);
    iwt_qp_destroy(&q);
    counters(&t, &out, &in);
    iwt_close(&t);
    ndk_test_wait_ok(pid, TMO, "client");
    iwt_chan_close(&a.ch);
    compare("server", file, iwt_port(&la), out, in);
    free(rbuf);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", a.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", a.dir);
}

int main(int argc, char **argv)
{
    int family = argc > 1 && !strcmp(argv[1], "ipv6") ? AF_INET6 : AF_INET;
    if (family == AF_INET6 && !iwt_have_ipv6()) {
        printf("SKIP: ::1 is not available here\n");
        return 77;
    }
    setenv("NDK_IWARP_CRC", "1", 1);
    setenv("NDK_IWARP_P2P", "1", 1);
    unsetenv("NDK_IWARP_CAPTURE_PORT");
    unsetenv("NDK_IWARP_FAULT");
    server(family);
    printf("PASS: bytes captured equal RDMAOutOctets / RDMAInOctets on both sides (%s)\n", iwt_family_name(family));
    return 0;
}
