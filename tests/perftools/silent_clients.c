/* silent_clients HOST:PORT N SECONDS - opens N ndkperf test connections that complete the
 * connection exchange with a valid request and then send nothing, holds them for up to SECONDS
 * and reports how many the server closed ("silent: N connected, M closed by the server").
 * The abusive client of test_perftools' "silent" case. */
#define _GNU_SOURCE
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ndk_sync_time.h"
#include "ndk_tool.h"
#include "ndkperf.h"

int main(int argc, char **argv)
{
    char why[256];
    SOCKADDR_INET dst, src;
    ndk_tool_adapter ad;
    ndk_rt *rt;

    ndk_tool_set_progname("silent_clients");
    if (argc != 4 || ndk_tool_addr_parse(argv[1], 0, &dst, why, sizeof why) != 0) {
        fprintf(stderr, "usage: silent_clients HOST:PORT N SECONDS\n");
        return 2;
    }
    unsigned n = (unsigned)atoi(argv[2]);
    double hold = atof(argv[3]);
    if (ndk_tool_rt_open(&rt) != STATUS_SUCCESS ||
        ndk_tool_adapter_client(rt, NULL, &dst, NULL, 0, &ad, &src) != STATUS_SUCCESS)
        return 1;
    ndk_tool_session *s = calloc(n, sizeof *s);
    if (!s)
        return 1;
    struct perf_hello h;
    struct perf_hello_wire hw;
    memset(&h, 0, sizeof h);
    h.op = OP_WRITE;
    h.conn_count = 1;
    h.depth = 1;
    h.max_size = 4096;
    h.slots = 1;
    perf_hello_encode(&h, &hw);
    unsigned up = 0;
    for (; up < n; up++) {
        ndk_tool_session_cfg cfg = { .rq_depth = 1, .iq_depth = 1, .nrecv = 1, .rbuf = 64 };
        NTSTATUS st = ndk_tool_session_open(&s[up], &ad, &cfg);
        if (st == STATUS_SUCCESS)
            st = ndk_tool_conn_connect(&s[up].conn, &src, &dst, 1, 1, &hw, sizeof hw, NDK_TOOL_CONN_TIMEOUT_MS);
        if (st != STATUS_SUCCESS) {
            ndk_tool_err("connection %u: %s", up + 1, ndk_tool_status(st));
            ndk_tool_session_close(&s[up]);
            break;
        }
    }
    printf("silent: %u connected\n", up);
    fflush(stdout);
    unsigned closed = 0;
    uint64_t until = ndk_sync_time_now_ns() + (uint64_t)(hold * 1e9);
    while (ndk_sync_time_now_ns() < until) {
        closed = 0;
        for (unsigned i = 0; i < up; i++)
            closed += ndk_tool_conn_disconnected(&s[i].conn);
        if (closed == up)
            break;
        struct timespec ts = { 0, 50000000 };
        nanosleep(&ts, NULL);
    }
    printf("silent: %u connected, %u closed by the server\n", up, closed);
    for (unsigned i = 0; i < up; i++)
        ndk_tool_session_close(&s[i]);
    free(s);
    ndk_tool_adapter_close(&ad);
    ndk_rt_close(rt);
    return up == n ? 0 : 1;
}
