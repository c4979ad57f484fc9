/* cmatose.c - ndkping --cmatose: rdma-core (u)cmatose's Send/Receive exchange over one or
 * more connections, with optional private data in connect and accept. */
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

/* (u)cmatose: both sides post message_count receives before connecting; once every connection
 * is up the server Sends message_count messages on each and then waits for as many replies;
 * the client waits for the messages, replies, and waits for the server to disconnect. */

struct cm_node {
    struct session s;
    ndk_tool_adapter *ad;
    unsigned sends, recvs;
};

/* -V: message msg of connection conn is the shared pattern of this stream. */
static uint64_t cm_seed(unsigned conn, unsigned msg) { return ((uint64_t)conn << 32) | msg; }

/* Private data as text: printable bytes up to the first NUL. */
static void cm_print_pdata(const char *who, const uint8_t *d, ULONG len)
{
    ULONG n = 0;
    while (n < len && d[n])
        n++;
    if (!n)
        return;
    printf("%s private data: \"", who);
    for (ULONG i = 0; i < n; i++)
        putchar(isprint(d[i]) ? d[i] : '.');
    printf("\" (%u bytes)\n", n);
}

static int cm_setup(struct cm_node *n, ndk_tool_adapter *ad)
{
    unsigned cnt = ping_opt.count ? (unsigned)ping_opt.count : 1;
    n->ad = ad;
    /* One receive slot per message, so every message can be checked; slot 0's tag books them
     * all. The area is the send buffer. */
    ndk_tool_session_cfg cfg = { .iq_depth = cnt, .poll = ping_opt.cli.poll, .nrecv = cnt, .rbuf = ping_opt.size,
                                 .area_len = ping_opt.size };
    NTSTATUS st = ndk_tool_session_open(&n->s.t, ad, &cfg);
    for (unsigned k = 0; st == STATUS_SUCCESS && ping_opt.count && k < cnt; k++)
    {
        st = ndk_tool_session_post_slot(&n->s.t, k, (PVOID)(uintptr_t)TAG_RECV0);
        n->s.posted[TAG_RECV0] += st == STATUS_SUCCESS;
    }
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("setting up a queue pair failed: %s", ndk_tool_status(st));
        return -1;
    }
    return 0;
}

static int cm_send_all(struct cm_node *n, unsigned idx)
{
    for (unsigned m = 0; m < ping_opt.count; m++) {
        ndk_pattern_fill(ndk_tool_session_area(&n->s.t), ping_opt.size, cm_seed(idx, m), 0);
        NTSTATUS st = session_send(&n->s, n->s.t.off_area, ping_opt.size);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("%s: posting Send %u failed: %s", n->s.t.where, m, ndk_tool_status(st));
            return -1;
        }
        /* One send buffer: wait for each before refilling it. */
        session_wait(&n->s, TAG_SEND, ++n->sends, session_wait_ms(), "Send completion");
    }
    return 0;
}

static int cm_recv_all(struct cm_node *n, unsigned idx)
{
    for (unsigned m = 0; m < ping_opt.count; m++) {
        /* Receives complete in posting order: message m is in slot m. */
        session_wait(&n->s, TAG_RECV0, ++n->recvs, session_wait_ms(), "messages");
        ULONG got;
        session_take(&n->s, &got);
        if (got != ping_opt.size)
            session_fail(&n->s, "%s: message %u has %u bytes, expected %u", n->s.t.where, m, got, ping_opt.size);
        if (ping_opt.validate &&
            ndk_pattern_check(ndk_tool_session_slot(&n->s.t, m), ping_opt.size, cm_seed(idx, m), 0) != ping_opt.size)
            session_fail(&n->s, "%s: message %u differs from the expected pattern", n->s.t.where, m);
    }
    return 0;
}

int cmatose_server(ndk_rt *rt)
{
    char where[1024];
    ndk_tool_server *srv = NULL;
    struct cm_node *nodes = calloc(ping_opt.connections, sizeof *nodes);
    int rc = 0;

    if (!nodes)
        return 1;
    printf("cmatose: starting server\n");
    int lrc = session_listen(rt, ping_opt.cli.local, AF_UNSPEC, &srv);
    if (lrc) {
        free(nodes);
        return lrc;
    }
    NTSTATUS st;
    if (ping_opt.cli.verbose)
        printf("ndkping --cmatose listening on %s\n", ndk_tool_server_where(srv, where, sizeof where));
    unsigned up = 0;
    for (; up < ping_opt.connections; up++) {
        NDK_CONNECTOR *incoming;
        ndk_tool_adapter *ad;
        st = ndk_tool_server_next(srv, NDK_TOOL_INFINITE, &incoming, &ad);
        if (st != STATUS_SUCCESS) {
            rc = 1;
            break;
        }
        uint8_t pd[256];
        ULONG ird = 0, ord = 0, len = sizeof pd;
        memset(pd, 0, sizeof pd);
        if (ndk_tool_conn_data(incoming, &ird, &ord, pd, &len) == STATUS_SUCCESS)
            cm_print_pdata("client", pd, len);
        struct cm_node *n = &nodes[up];
        if (cm_setup(n, ad) != 0) {
            ndk_tool_conn_reject(incoming, NULL, 0);
            rc = 1;
            break;
        }
        ULONG plen = ping_opt.pdata ? (ULONG)strlen(ping_opt.pdata) + 1 : 0;
        st = ndk_tool_conn_accept(&n->s.t.conn, incoming, 1, 1, ping_opt.pdata, plen, NDK_TOOL_CONN_TIMEOUT_MS);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("accept failed: %s", ndk_tool_status(st));
            rc = 1;
            break;
        }
        ndk_tool_addr_str(&n->s.t.conn.peer, true, n->s.t.where, sizeof n->s.t.where);
    }
    if (rc == 0 && ping_opt.count) {
        printf("initiating data transfers\n");
        for (unsigned i = 0; i < up && rc == 0; i++)
            rc = cm_send_all(&nodes[i], i);
        printf("completing sends\n");
        printf("receiving data transfers\n");
        for (unsigned i = 0; i < up && rc == 0; i++)
            rc = cm_recv_all(&nodes[i], i);
        if (rc == 0)
            printf("data transfers complete\n");
    }
    printf("cmatose: disconnecting\n");
    for (unsigned i = 0; i < ping_opt.connections; i++)
        ndk_tool_session_close(&nodes[i].s.t);
    printf("disconnected\n");
    ndk_tool_server_stop(srv);
    if (rc == 0)
        printf("ndkping --cmatose server: %u connection(s), %llu messages of %u bytes each way%s: ok\n", up,
               (unsigned long long)ping_opt.count, ping_opt.size, ping_opt.validate ? ", data compared" : "");
    printf("test complete\nreturn status %d\n", rc);
    free(nodes);
    return rc;
}

int cmatose_client(ndk_rt *rt)
{
    char dst_s[NDK_TOOL_ADDR_STRLEN];
    SOCKADDR_INET dst, local, src;
    ndk_tool_adapter ad;
    struct cm_node *nodes = calloc(ping_opt.connections, sizeof *nodes);
    int rc = 0;

    if (!nodes)
        return 1;
    printf("cmatose: starting client\n");
    if (ndk_tool_addr_parse_ip(ping_opt.cli.addr, &dst) != 0) {
        ndk_tool_err("bad server address '%s'", ping_opt.cli.addr);
        return 2;
    }
    ndk_tool_addr_set_port(&dst, ping_opt.port);
    if (ping_opt.cli.local && ndk_tool_addr_parse_ip(ping_opt.cli.local, &local) != 0) {
        ndk_tool_err("bad bind address '%s'", ping_opt.cli.local);
        return 2;
    }
    ndk_tool_addr_str(&dst, true, dst_s, sizeof dst_s);
    NTSTATUS st =
        ndk_tool_adapter_client(rt, ping_opt.cli.local ? &local : NULL, &dst, ping_opt.cli.provider, 0, &ad, &src);
    if (st != STATUS_SUCCESS) {
        free(nodes);
        return 1;
    }
    printf("cmatose: connecting\n");
    ULONG plen = ping_opt.pdata ? (ULONG)strlen(ping_opt.pdata) + 1 : 0;
    unsigned up = 0;
    for (; up < ping_opt.connections; up++) {
        struct cm_node *n = &nodes[up];
        snprintf(n->s.t.where, sizeof n->s.t.where, "%s", dst_s);
        if (cm_setup(n, &ad) != 0) {
            rc = 1;
            break;
        }
        st = ndk_tool_conn_connect(&n->s.t.conn, &src, &dst, 1, 1, ping_opt.pdata, plen, NDK_TOOL_CONN_TIMEOUT_MS);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("connect to %s failed: %s", dst_s, ndk_tool_status(st));
            rc = 1;
            break;
        }
        cm_print_pdata("server", n->s.t.conn.peer_data, n->s.t.conn.peer_data_len);
    }
    if (rc == 0 && ping_opt.count) {
        printf("receiving data transfers\n");
        for (unsigned i = 0; i < up && rc == 0; i++)
            rc = cm_recv_all(&nodes[i], i);
        printf("sending replies\n");
        for (unsigned i = 0; i < up && rc == 0; i++)
            rc = cm_send_all(&nodes[i], i);
        if (rc == 0)
            printf("data transfers complete\n");
    }
    /* The server disconnects first; then we do. */
    for (unsigned i = 0; i < up && rc == 0; i++) {
        NDK_RESULT r[8];
        NTSTATUS wst = STATUS_SUCCESS;
        while (!ndk_tool_conn_disconnected(&nodes[i].s.t.conn)) {
            if (!ndk_tool_cq_wait(nodes[i].s.t.conn.cq, r, 8, NDK_TOOL_CONN_TIMEOUT_MS, &wst) &&
                wst != STATUS_CONNECTION_DISCONNECTED) {
                ndk_tool_err("%s: waiting for the server to disconnect: %s", dst_s, ndk_tool_status(wst));
                rc = 1;
                break;
            }
        }
    }
    for (unsigned i = 0; i < ping_opt.connections; i++)
        ndk_tool_session_close(&nodes[i].s.t);
    ndk_tool_adapter_close(&ad);
    if (rc == 0)
        printf("ndkping --cmatose client: %u connection(s), %llu messages of %u bytes each way%s: ok\n", up,
               (unsigned long long)ping_opt.count, ping_opt.size, ping_opt.validate ? ", data compared" : "");
    printf("test complete\nreturn status %d\n", rc);
    free(nodes);
    return rc;
}

