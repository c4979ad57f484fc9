/*
 * ndkping - RDMA connectivity check through a chosen NDK adapter.
 *
 *   ndkping -s [ADDR][:PORT]               serve (any address by default)
 *   ndkping -c ADDR[:PORT] [-a LOCAL]      Send/Receive ping-pong, per-ping round-trip times and a
 *                                          min/avg/max/mdev summary, like ping
 *   ndkping --rping -s|-c [-a ADDR] ...    rdma-core rping's message layout and sequence (the
 *                                          client advertises its buffer, the server RDMA-Reads it
 *                                          and RDMA-Writes it back), so it talks to Linux rping
 *   ndkping --cmatose [-s SERVER] ...      rdma-core (u)cmatose's Send/Receive exchange, with
 *                                          optional private data in connect and accept
 *   ndkping --rdma-server|--rdma-client    librdmacm's rdma_server / rdma_client examples: one
 *          [-s ADDR] [-p PORT]             16-byte Send each way
 *
 * Exits 0 on success, 1 with a one-line reason on any failure, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndk_tool.h"
#include "ndk_tool_cli.h"
#include "ndk_tool_size.h"
#include "ndkping.h"

struct ping_opts ping_opt = { .size = 64, .count = 4, .interval = 1.0, .wait_s = 5.0 };

/* ============================================================================================ */
/* server loop (ping and rping modes)                                                            */

static int run_server(ndk_rt *rt)
{
    char why[256], where[1024];
    SOCKADDR_INET addr;
    ndk_tool_server *srv = NULL;
    NTSTATUS st;

    if (ping_opt.rping) {
        /* rping's server binds INADDR_ANY unless -a says otherwise. */
        int lrc = session_listen(rt, ping_opt.cli.addr, AF_INET, &srv);
        if (lrc)
            return lrc;
    } else if (ndk_tool_addr_parse(ping_opt.cli.addr, ping_opt.port, &addr, why, sizeof why) != 0) {
        ndk_tool_err("bad address %s", why);
        return 2;
    } else if ((st = ndk_tool_server_start(rt, &addr, ping_opt.cli.provider, 0, &srv, why, sizeof why)) != STATUS_SUCCESS) {
        ndk_tool_err("%s", why);
        return 1;
    }
    if (!ping_opt.quiet && (!ping_opt.rping || ping_opt.cli.verbose)) {
        printf("%s listening on %s\n", ping_opt.rping ? "ndkping --rping" : "ndkping", ndk_tool_server_where(srv, where, sizeof where));
        fflush(stdout);
    }
    int rc = 0;
    bool once = ping_opt.once || (ping_opt.rping && !ping_opt.persistent);
    for (;;) {
        NDK_CONNECTOR *conn;
        ndk_tool_adapter *ad;
        st = ndk_tool_server_next(srv, NDK_TOOL_INFINITE, &conn, &ad);
        if (st != STATUS_SUCCESS)
            break;
        int r = ping_opt.rping ? rping_serve_one(conn, ad) : ping_serve_one(conn, ad);
        if (r)
            rc = r;
        if (once || ndk_tool_stopped())
            break;
    }
    ndk_tool_server_stop(srv);
    return rc;
}

/* ============================================================================================ */
/* command line                                                                                  */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ndkping -s [ADDR][:PORT] [--once] [options]\n"
            "       ndkping -c ADDR[:PORT] [-a LOCAL] [-S SIZE] [-C COUNT] [-i SECONDS] [-W SECONDS] [options]\n"
            "       ndkping --rping -s [-a ADDR] [-p PORT] [-S SIZE] [-P] [-v]\n"
            "       ndkping --rping -c -a ADDR [-I SOURCE] [-p PORT] [-S SIZE] [-C COUNT] [-v] [-V]\n"
            "RDMA connectivity check through the NDK adapter that serves the address.\n"
            "  -s ADDR[:PORT]   serve (default any address, port %u); IPv6 as [ADDR]:PORT\n"
            "  -c ADDR[:PORT]   Send/Receive ping-pong with a server\n"
            "  -a LOCAL         local address (picks the adapter; default: the route to ADDR)\n"
            "  -S SIZE          payload bytes (default 64)\n"
            "  -C COUNT         pings (default 4; 0 = until interrupted)\n"
            "  -i SECONDS       interval between pings (default 1)\n"
            "  -W SECONDS       time to wait for each reply (default 5)\n"
            "  --once           server: exit after the first client (a client that sends nothing\n"
            "                   within 30 s is closed)\n"
            "  --poll           busy-poll the CQ instead of waiting for notifications\n"
            "  --provider NAME  only adapters of this provider\n"
            "  -q               quiet: summary only\n"
            "rping mode (rdma-core rping's wire sequence; options as rping's):\n"
            "  -s | -c, -a ADDR (server address), -I SOURCE, -p PORT (7174), -S SIZE (64, max 65535),\n"
            "  -C COUNT (0 = forever), -v (print ping data), -V (validate; always done), -P (server:\n"
            "  keep serving), -d (debug), -q/-t accepted and ignored\n"
            "cmatose mode (rdma-core ucmatose's exchange; options as cmatose's):\n"
            "  ndkping --cmatose [-s SERVER_ADDR] [-b BIND_ADDR] [-c CONNECTIONS] [-C COUNT (10)]\n"
            "                    [-S SIZE (100)] [-p PORT (7471)] [--pdata TEXT] [-V]\n"
            "  without -s it serves; --pdata sends TEXT as connect/accept private data and the peer's\n"
            "  private data is printed; -V compares the messages (both ends must be ndkping)\n"
            "librdmacm rdma_server / rdma_client mode (one 16-byte Send each way, 16 zero bytes as the\n"
            "examples send, compared byte for byte):\n"
            "  ndkping --rdma-server [-s ADDR (any)] [-p PORT (%u)] [-v]\n"
            "  ndkping --rdma-client [-s SERVER (127.0.0.1)] [-p PORT (%u)] [-v]\n",
            PING_DEFAULT_PORT, RDMACM_DEFAULT_PORT, RDMACM_DEFAULT_PORT);
}

/* Long options of the modes (the shared ones are ndk_tool_cli's). */
enum { LO_RPING = 0x100, LO_CMATOSE, LO_PDATA, LO_RDMA_SERVER, LO_RDMA_CLIENT, LO_ONCE };

static int parse_size(const char *s, uint32_t max)
{
    uint64_t v;
    if (ndk_tool_size_parse(s, &v) != 0 || v == 0 || v > PING_MAX_SIZE) {
        ndk_tool_err("bad size '%s' (1..%u)", s, PING_MAX_SIZE);
        return -1;
    }
    if (v > max) {
        ndk_tool_err("rping sizes go up to %u bytes", max);
        return -1;
    }
    ping_opt.size = (uint32_t)v;
    return 0;
}

/* Options every mode reads the same way; 1 when c is none of them. */
static int mode_common_opt(int c, const char *arg)
{
    switch (c) {
    case 'C': return ndk_tool_cli_u64(arg, 0, UINT64_MAX, "count", &ping_opt.count);
    case 'p': return ndk_tool_cli_port(arg, &ping_opt.port);
    default: return 1;
    }
}

/* ndkping -s / -c: the shared meaning of -s and -c; -a is the local address. */
static int ping_mode_opt(void *ctx, ndk_tool_cli *o, int c, const char *arg)
{
    (void)ctx;
    switch (c) {
    case 'a': o->local = arg; return 0;
    case 'S': return parse_size(arg, PING_MAX_SIZE);
    case 'i': return ndk_tool_cli_secs(arg, 3600, true, "time", &ping_opt.interval);
    case 'W':
        if (ndk_tool_cli_secs(arg, 3600, true, "time", &ping_opt.wait_s) != 0)
            return -1;
        if (ping_opt.wait_s == 0)
            ping_opt.wait_s = 0.001;
        return 0;
    case 'q': ping_opt.quiet = true; return 0;
    case LO_ONCE: ping_opt.once = true; return 0;
    default: return mode_common_opt(c, arg);
    }
}

/* rping's own letters: -s / -c are flags, -a the server address, -I the source. */
static int rping_mode_opt(void *ctx, ndk_tool_cli *o, int c, const char *arg)
{
    (void)ctx;
    switch (c) {
    case LO_RPING: case 't': case 'q': case 'V': case 'd': return 0;
    case 's': o->server = true; return 0;
    case 'c': o->client = true; return 0;
    case 'a': o->addr = arg; return 0;
    case 'P': ping_opt.persistent = true; return 0;
    case 'S': return parse_size(arg, RPING_MAX_SIZE);
    default: return mode_common_opt(c, arg);
    }
}

/* cmatose's letters: -s is the server address (a client), -b the bind address, -c the number of
 * connections. */
static int cmatose_mode_opt(void *ctx, ndk_tool_cli *o, int c, const char *arg)
{
    uint64_t v;
    (void)ctx;
    switch (c) {
    case LO_CMATOSE: case 'f': case 'P': case 't': case 'm': return 0;
    case 's': o->addr = arg; return 0;
    case 'b': o->local = arg; return 0;
    case 'c':
        if (ndk_tool_cli_u64(arg, 1, CMATOSE_MAX_CONNS, "connection count", &v) != 0)
            return -1;
        ping_opt.connections = (unsigned)v;
        return 0;
    case 'C': return ndk_tool_cli_u64(arg, 0, 100000, "message count", &ping_opt.count);
    case 'S': return parse_size(arg, PING_MAX_SIZE);
    case LO_PDATA:
        if (strlen(arg) > 200) {
            ndk_tool_err("--pdata takes up to 200 characters");
            return -1;
        }
        ping_opt.pdata = arg;
        return 0;
    case 'V': ping_opt.validate = true; return 0;
    default: return mode_common_opt(c, arg);
    }
}

/* rdma_server / rdma_client: -s is the address. */
static int rdmacm_mode_opt(void *ctx, ndk_tool_cli *o, int c, const char *arg)
{
    (void)ctx;
    switch (c) {
    case LO_RDMA_SERVER: o->server = true; return 0;
    case LO_RDMA_CLIENT: o->client = true; return 0;
    case 's': o->addr = arg; return 0;
    case 'p': return ndk_tool_cli_port(arg, &ping_opt.port);
    default: return 1;
    }
}

static int parse_args(int argc, char **argv)
{
    static const struct option ping_longs[] = { { "once", no_argument, NULL, LO_ONCE }, { NULL, 0, NULL, 0 } };
    static const struct option rping_longs[] = { { "rping", no_argument, NULL, LO_RPING }, { NULL, 0, NULL, 0 } };
    static const struct option cmatose_longs[] = {
        { "cmatose", no_argument, NULL, LO_CMATOSE },
        { "pdata", required_argument, NULL, LO_PDATA },
        { NULL, 0, NULL, 0 },
    };
    static const struct option rdmacm_longs[] = {
        { "rdma-server", no_argument, NULL, LO_RDMA_SERVER },
        { "rdma-client", no_argument, NULL, LO_RDMA_CLIENT },
        { NULL, 0, NULL, 0 },
    };
    ndk_tool_cli_spec spec = { .usage = usage };
    if (ping_opt.rping) {
        ping_opt.count = 0;          /* rping: ping forever unless -C */
        ping_opt.port = PING_DEFAULT_PORT;
        spec = (ndk_tool_cli_spec){ "a:I:Pp:C:S:t:scvVdqh", rping_longs, NDK_TOOL_CLI_ROLE, rping_mode_opt, NULL, usage };
    } else if (ping_opt.cmatose) {
        ping_opt.count = 10;
        ping_opt.size = 100;
        ping_opt.connections = 1;
        ping_opt.port = CMATOSE_DEFAULT_PORT;
        spec = (ndk_tool_cli_spec){ "s:b:f:P:c:C:S:t:p:mVvh", cmatose_longs, 0, cmatose_mode_opt, NULL, usage };
    } else if (ping_opt.rdmacm) {
        ping_opt.port = RDMACM_DEFAULT_PORT;
        spec = (ndk_tool_cli_spec){ "s:p:vh", rdmacm_longs, NDK_TOOL_CLI_ROLE, rdmacm_mode_opt, NULL, usage };
    } else {
        ping_opt.port = PING_DEFAULT_PORT;
        spec = (ndk_tool_cli_spec){ "s::c:a:S:C:i:W:p:qvh", ping_longs, NDK_TOOL_CLI_ROLE, ping_mode_opt, NULL, usage };
    }
    if (ndk_tool_cli_parse(&spec, argc, argv, &ping_opt.cli) != 0)
        return -1;
    if (ping_opt.cmatose) {
        ping_opt.cli.client = ping_opt.cli.addr != NULL;
        ping_opt.cli.server = !ping_opt.cli.client;
    }
    return 0;
}

int main(int argc, char **argv)
{
    ndk_tool_set_progname("ndkping");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rping"))
            ping_opt.rping = true;
        if (!strcmp(argv[i], "--cmatose"))
            ping_opt.cmatose = true;
        if (!strcmp(argv[i], "--rdma-server") || !strcmp(argv[i], "--rdma-client"))
            ping_opt.rdmacm = true;
    }
    if (ping_opt.rping + ping_opt.cmatose + ping_opt.rdmacm > 1) {
        ndk_tool_err("--rping, --cmatose and --rdma-server/--rdma-client exclude each other");
        return 2;
    }
    if (parse_args(argc, argv) != 0)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    ndk_tool_install_signals();

    ndk_rt *rt = NULL;
    NTSTATUS st = ndk_tool_rt_open(&rt);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("opening the NDK runtime failed: %s", ndk_tool_status(st));
        return 1;
    }
    int rc;
    if (ping_opt.cmatose)
        rc = ping_opt.cli.server ? cmatose_server(rt) : cmatose_client(rt);
    else if (ping_opt.rdmacm)
        rc = ping_opt.cli.server ? rdmacm_server(rt) : rdmacm_client(rt);
    else if (ping_opt.cli.server)
        rc = run_server(rt);
    else
        rc = ping_opt.rping ? rping_client(rt) : ping_client(rt);
    ndk_rt_close(rt);
    return rc;
}

