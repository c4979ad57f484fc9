/* rdmacm.c - ndkping --rdma-server / --rdma-client: librdmacm's rdma_server and rdma_client
 * examples, one 16-byte Send each way. */
#define _GNU_SOURCE
#include <ctype.h>
#include <endian.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ndk_pattern.h"
#include "ndk_tool.h"
#include "ndkping.h"

/* librdmacm's examples/rdma_server.c and rdma_client.c: both sides post one 16-byte receive
 * before connecting / accepting; the client Sends 16 bytes as soon as it is connected, the
 * server Sends 16 bytes back once that arrived, then both disconnect. Their message buffers
 * are static and never written, so each side sends 16 zero bytes; that is what we send and
 * what we expect (the examples themselves compare nothing). */

#define RDMACM_MSG          16
/* Our receive buffer starts out as this pattern, so bytes a receive did not write show. */
#define RDMACM_CANARY       0xa5
/* A 16-byte exchange right after connecting: generous, the guests are emulated. */
#define RDMACM_WAIT_MS      NDK_TOOL_CONN_TIMEOUT_MS

static int rdmacm_setup(struct session *s, ndk_tool_adapter *ad)
{
    /* One receive slot; the (zeroed) area is the message we send. */
    ndk_tool_session_cfg cfg = { .iq_depth = 1, .poll = ping_opt.cli.poll, .nrecv = 1, .rbuf = RDMACM_MSG,
                                 .area_len = RDMACM_MSG };
    NTSTATUS st = ndk_tool_session_open(&s->t, ad, &cfg);
    if (st == STATUS_SUCCESS) {
        memset(ndk_tool_session_slot(&s->t, 0), RDMACM_CANARY, RDMACM_MSG);
        st = session_post_slot(s, 0);
    }
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up the queue pair on %s failed: %s", ad->ifname, ndk_tool_status(st));
        return -1;
    }
    return 0;
}

/* Checks the one receive against the example's 16 zero bytes; exits with the reason if not. */
static void rdmacm_check(struct session *s, const char *sender)
{
    ULONG got;
    const uint8_t *r = ndk_tool_session_slot(&s->t, (uint32_t)session_take(s, &got));
    if (got != RDMACM_MSG)
        session_fail(s, "%s: received %u bytes, expected %s's %u", s->t.where, got, sender, RDMACM_MSG);
    for (unsigned i = 0; i < RDMACM_MSG; i++)
        if (r[i] != 0)
            session_fail(s, "%s: received bytes differ from %s's %u zero bytes at byte %u (0x%02x)", s->t.where, sender,
                      RDMACM_MSG, i, r[i]);
}

int rdmacm_client(ndk_rt *rt)
{
    char why[256] = "", dst_s[NDK_TOOL_ADDR_STRLEN];
    SOCKADDR_INET dst, src;
    ndk_tool_adapter ad;
    struct session s;
    NTSTATUS st;

    memset(&s, 0, sizeof s);
    /* rdma_client's default server is 127.0.0.1. */
    if (ndk_tool_addr_parse_ip(ping_opt.cli.addr ? ping_opt.cli.addr : "127.0.0.1", &dst) != 0) {
        ndk_tool_err("bad server address '%s'", ping_opt.cli.addr);
        return 2;
    }
    ndk_tool_addr_set_port(&dst, ping_opt.port);
    ndk_tool_addr_str(&dst, true, dst_s, sizeof dst_s);
    snprintf(s.t.where, sizeof s.t.where, "%s", dst_s);
    if (ndk_tool_adapter_client(rt, NULL, &dst, ping_opt.cli.provider, 0, &ad, &src) != STATUS_SUCCESS)
        return 1;
    if (rdmacm_setup(&s, &ad) != 0) {
        ndk_tool_session_close(&s.t);
        ndk_tool_adapter_close(&ad);
        return 1;
    }
    /* rdma_connect(id, NULL): no private data. */
    if (session_connect(&s, &ad, &src, &dst, NULL, 0) != 0)
        return 1;
    if (ping_opt.cli.verbose)
        printf("ndkping --rdma-client: connected to %s from %s via %s (%s)\n", dst_s,
               ndk_tool_addr_str(&s.t.conn.local, true, why, sizeof why), ad.ifname, ad.provider);
    st = session_send(&s, s.t.off_area, RDMACM_MSG);
    if (st != STATUS_SUCCESS)
        session_fail(&s, "%s: posting Send failed: %s", dst_s, ndk_tool_status(st));
    session_wait(&s, TAG_SEND, 1, RDMACM_WAIT_MS, "the Send completion");
    session_wait(&s, TAG_RECV0, 1, RDMACM_WAIT_MS, "the server's 16-byte reply");
    rdmacm_check(&s, "rdma_server");
    ndk_tool_session_close(&s.t);
    ndk_tool_adapter_close(&ad);
    printf("ndkping --rdma-client: sent %u zero bytes to %s, received %u bytes back, compared byte for byte with "
           "rdma_server's %u zero bytes: ok\n", RDMACM_MSG, dst_s, RDMACM_MSG, RDMACM_MSG);
    fflush(stdout);
    return 0;
}

int rdmacm_server(ndk_rt *rt)
{
    char where[1024], peer[NDK_TOOL_ADDR_STRLEN];
    ndk_tool_server *srv = NULL;
    NDK_CONNECTOR *incoming;
    ndk_tool_adapter *ad;
    struct session s;

    memset(&s, 0, sizeof s);
    /* rdma_server binds the wildcard: listen on IPv4 and IPv6. */
    int lrc = session_listen(rt, ping_opt.cli.addr, AF_UNSPEC, &srv);
    if (lrc)
        return lrc;
    NTSTATUS st;
    printf("ndkping --rdma-server listening on %s\n", ndk_tool_server_where(srv, where, sizeof where));
    fflush(stdout);
    st = ndk_tool_server_next(srv, NDK_TOOL_INFINITE, &incoming, &ad);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("no connection request: %s", ndk_tool_status(st));
        ndk_tool_server_stop(srv);
        return 1;
    }
    if (rdmacm_setup(&s, ad) != 0) {
        ndk_tool_conn_reject(incoming, NULL, 0);
        ndk_tool_session_close(&s.t);
        ndk_tool_server_stop(srv);
        return 1;
    }
    /* rdma_accept(id, NULL): no private data. */
    if (session_accept(&s, incoming, NULL, 0) != 0) {
        ndk_tool_server_stop(srv);
        return 1;
    }
    snprintf(peer, sizeof peer, "%s", s.t.where);
    if (ping_opt.cli.verbose)
        printf("ndkping --rdma-server: connection from %s on %s\n", peer, ad->ifname);
    session_wait(&s, TAG_RECV0, 1, RDMACM_WAIT_MS, "the client's 16-byte message");
    rdmacm_check(&s, "rdma_client");
    st = session_send(&s, s.t.off_area, RDMACM_MSG);
    if (st != STATUS_SUCCESS)
        session_fail(&s, "%s: posting Send failed: %s", peer, ndk_tool_status(st));
    session_wait(&s, TAG_SEND, 1, RDMACM_WAIT_MS, "the Send completion");
    ndk_tool_session_close(&s.t);
    ndk_tool_server_stop(srv);
    printf("ndkping --rdma-server: received %u bytes from %s, compared byte for byte with rdma_client's %u zero "
           "bytes: ok; sent %u zero bytes back\n", RDMACM_MSG, peer, RDMACM_MSG, RDMACM_MSG);
    fflush(stdout);
    return 0;
}

