/*
 * ndkperf - RDMA Write / Read / Send bandwidth and latency through the OpenNDK runtime and a
 * chosen NDK adapter, perftest-style.
 *
 *   ndkperf -s [ADDR][:PORT]                  serve (IPv4 and IPv6, any address by default)
 *   ndkperf -c ADDR[:PORT] -t write|read|send [--lat] [-z SIZE | --sweep] [-n ITERS | -D SECONDS]
 *           [-q CONNECTIONS] [-d DEPTH] [--inline N] [--crc] [--poll] [--json] [--verify]
 *   ndkperf -S|-C -ServerAddr IP:PORT [-ServerIf N] [-ClientAddr IP] [-ClientIf N]
 *           -TestType rping|rperf [-W SECONDS] [-ts SIZE]   (NdkPerfCmd's command shape)
 *
 * The client states the test in its connect private data, so the server needs nothing beyond
 * -s. Control messages (phase boundaries, credits, CPU reports) travel as Sends on the same
 * connection. Without --poll, completions come through CQ notifications (NdkArmCq) and the
 * data path of a phase (on the server, the whole test up to the client's DONE) runs inside the
 * CQ notification callback, as NDK consumers do: each message costs the receiving side one
 * wake-up, not two. The connection's thread waits for the control exchanges between phases.
 * With --poll that thread busy-polls the CQ for everything.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ndk_tool.h"
#include "ndk_tool_cli.h"
#include "ndk_tool_size.h"
#include "ndkperf.h"

struct perf_opts perf_opt = { .conns = 1, .depth = 128, .size = 65536, .idle_timeout = 30 };

/* --max-mem by default: a quarter of the machine's memory, at most 1 GiB, at least 64 MiB. */
static uint64_t default_max_mem(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t quarter = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 : (1ull << 30);
    return quarter > (1ull << 30) ? (1ull << 30) : quarter < (64ull << 20) ? (64ull << 20) : quarter;
}
FILE *perf_log;

/* ================================================================================================ */
/* command line                                                                                     */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ndkperf -s [ADDR][:PORT] [--once] [--max-mem SIZE] [--idle-timeout SECONDS] [--poll]\n"
            "               [--provider NAME]\n"
            "       ndkperf -c ADDR[:PORT] -t write|read|send [--lat] [-z SIZE | --sweep] [-n ITERS | -D SECONDS]\n"
            "               [-q CONNECTIONS] [-d DEPTH] [--inline N] [--crc] [--poll] [--json] [--verify]\n"
            "               [--last-byte | --no-last-byte] [-I LOCAL] [--provider NAME]\n"
            "       ndkperf -S|-C -ServerAddr IP:PORT [-ServerIf N] [-ClientAddr IP] [-ClientIf N]\n"
            "               -TestType rping|rperf [-W SECONDS] [-ts SIZE] [-LogFilename FILE [-A]] [-V]\n"
            "RDMA Write/Read/Send bandwidth or latency through an NDK adapter (default port %u).\n"
            "  -s [ADDR][:PORT]  serve (IPv4 and IPv6, any address by default; IPv6 as [ADDR]:PORT)\n"
            "  -c ADDR[:PORT]    run a test against a server\n"
            "  -t OP             write (default), read or send\n"
            "  --lat             latency (ping-pong; read: one read at a time) instead of bandwidth\n"
            "  --last-byte       write --lat: poll the last byte even if the adapter does not advertise\n"
            "                    IN_ORDER_DMA (it is used by default where it does)\n"
            "  --no-last-byte    write --lat: an RDMA Write plus a signal Send each way\n"
            "  -z SIZE           message size (default 65536; k/m suffixes)\n"
            "  --sweep, -a       sizes 1 B .. 8 MiB in powers of two\n"
            "  -n ITERS          iterations per size (default 5000 for bandwidth, 1000 for latency)\n"
            "  -D SECONDS        run each size for a time instead\n"
            "  -q N              N connections in parallel (default 1)\n"
            "  -d DEPTH          requests in flight per connection (default 128)\n"
            "  --inline N        QP inline size; messages up to N bytes are posted inline\n"
            "  --crc             ask for MPA CRC (sets NDK_IWARP_CRC=1; the default here is off)\n"
            "  --poll            busy-poll the CQs instead of waiting for notifications\n"
            "  --json            one JSON document on stdout instead of the table\n"
            "  --verify          check every payload\n"
            "  -I LOCAL          local address (picks the adapter; default: the route to ADDR)\n"
            "  --once            server: exit after the first test session\n"
            "  --max-mem SIZE    server: memory of all sessions together (default a quarter of RAM, at\n"
            "                    most 1G); a test that does not fit is refused with the reason\n"
            "  --idle-timeout S  server: close a session whose client sent nothing for S seconds (30)\n"
            "  --report_gbits    accepted for perftest compatibility (Gb/s is always shown)\n",
            PERF_DEFAULT_PORT);
}

/* NdkPerfCmd.exe's command shape (Test-NetStack). */
static bool is_ndkperfcmd(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-S") || !strcmp(argv[i], "-C") || !strcasecmp(argv[i], "-ServerAddr") ||
            !strcasecmp(argv[i], "-TestType"))
            return true;
    return false;
}

static int parse_ndkperfcmd(int argc, char **argv)
{
    static char addrbuf[300];
    const char *server_addr = NULL;
    perf_opt.ndkperfcmd = true;
    perf_opt.testtype = "rping";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!v) { ndk_tool_err("%s needs a value", a); return -1; } i++; } while (0)
        if (!strcmp(a, "-S")) {
            perf_opt.cli.server = true;
        } else if (!strcmp(a, "-C")) {
            perf_opt.cli.client = true;
        } else if (!strcasecmp(a, "-ServerAddr")) {
            NEEDV();
            server_addr = v;
        } else if (!strcasecmp(a, "-ServerIf")) {
            NEEDV();
            perf_opt.server_if = (ULONG)strtoul(v, NULL, 10);
        } else if (!strcasecmp(a, "-ClientAddr")) {
            NEEDV();
            perf_opt.cli.local = v;
        } else if (!strcasecmp(a, "-ClientIf")) {
            NEEDV();
            perf_opt.client_if = (ULONG)strtoul(v, NULL, 10);
        } else if (!strcasecmp(a, "-TestType")) {
            NEEDV();
            if (strcasecmp(v, "rping") && strcasecmp(v, "rperf")) {
                ndk_tool_err("-TestType %s: only rping and rperf exist", v);
                return -1;
            }
            perf_opt.testtype = !strcasecmp(v, "rping") ? "rping" : "rperf";
        } else if (!strcasecmp(a, "-W")) {
            NEEDV();
            if (ndk_tool_cli_secs(v, 86400, false, "-W", &perf_opt.listen_timeout) != 0)
                return -1;
        } else if (!strcasecmp(a, "-ts")) {
            NEEDV();
            if (ndk_tool_size_parse(v, &perf_opt.size) != 0 || perf_opt.size == 0) {
                ndk_tool_err("bad -ts '%s'", v);
                return -1;
            }
            perf_opt.size_set = true;
        } else if (!strcasecmp(a, "-LogFilename")) {
            NEEDV();
            perf_opt.logfile = v;
        } else if (!strcasecmp(a, "-A")) {
            perf_opt.append = true;
        } else if (!strcasecmp(a, "-V")) {
            /* results on screen as well as in the log: they always are */
        } else if (!strcmp(a, "--provider")) {
            NEEDV();
            perf_opt.cli.provider = v;
        } else if (!strcmp(a, "--json")) {
            perf_opt.cli.json = true;
        } else if (!strcmp(a, "--poll")) {
            perf_opt.cli.poll = true;
        } else {
            ndk_tool_err("unknown NdkPerfCmd option '%s'", a);
            return -1;
        }
#undef NEEDV
    }
    if (perf_opt.cli.server == perf_opt.cli.client || !server_addr) {
        ndk_tool_err("NdkPerfCmd syntax needs -S or -C and -ServerAddr IP:PORT");
        return -1;
    }
    snprintf(addrbuf, sizeof addrbuf, "%s", server_addr);
    perf_opt.cli.addr = addrbuf;
    /* Both test types are Send/Receive: rping a ping-pong, rperf a bandwidth run. */
    perf_opt.op = OP_SEND;
    if (!strcmp(perf_opt.testtype, "rping")) {
        perf_opt.lat = true;
        if (!perf_opt.size_set)
            perf_opt.size = 64;
        perf_opt.iters = 1000;
    } else {
        if (!perf_opt.size_set)
            perf_opt.size = 65536;
        perf_opt.iters = 5000;
    }
    perf_opt.once = true;
    return 0;
}

/* Long options of ndkperf (the shared ones are ndk_tool_cli's). */
enum { LO_LAT = 0x100, LO_SWEEP, LO_INLINE, LO_VERIFY, LO_ONCE, LO_REPORT_GBITS, LO_MAX_MEM, LO_IDLE_TIMEOUT,
       LO_LAST_BYTE, LO_NO_LAST_BYTE };

static int perf_mode_opt(void *ctx, ndk_tool_cli *o, int c, const char *arg)
{
    uint64_t v;
    (void)ctx;
    (void)o;
    switch (c) {
    case 't':
        if (!strcmp(arg, "write"))
            perf_opt.op = OP_WRITE;
        else if (!strcmp(arg, "read"))
            perf_opt.op = OP_READ;
        else if (!strcmp(arg, "send"))
            perf_opt.op = OP_SEND;
        else {
            ndk_tool_err("-t %s: use write, read or send", arg);
            return -1;
        }
        return 0;
    case 'z':
        if (ndk_tool_size_parse(arg, &perf_opt.size) != 0 || perf_opt.size == 0 || perf_opt.size > (1u << 30)) {
            ndk_tool_err("bad size '%s'", arg);
            return -1;
        }
        perf_opt.size_set = true;
        return 0;
    case 'a': case LO_SWEEP: perf_opt.sweep = true; return 0;
    case 'n':
        perf_opt.iters_set = true;
        return ndk_tool_cli_u64(arg, 1, UINT64_MAX, "iteration count", &perf_opt.iters);
    case 'D':
        return ndk_tool_cli_secs(arg, 86400, false, "duration", &perf_opt.duration);
    case 'q':
        if (ndk_tool_cli_u64(arg, 1, MAX_CONNS, "connection count", &v) != 0)
            return -1;
        perf_opt.conns = (unsigned)v;
        return 0;
    case 'd':
        if (ndk_tool_cli_u64(arg, 1, 4096, "depth", &v) != 0)
            return -1;
        perf_opt.depth = (unsigned)v;
        perf_opt.depth_set = true;
        return 0;
    case LO_INLINE:
        if (ndk_tool_cli_u64(arg, 0, 65536, "inline size", &v) != 0)
            return -1;
        perf_opt.inline_size = (unsigned)v;
        return 0;
    case LO_LAT: perf_opt.lat = true; return 0;
    case LO_VERIFY: perf_opt.verify = true; return 0;
    case LO_LAST_BYTE: perf_opt.last_byte = true; return 0;
    case LO_NO_LAST_BYTE: perf_opt.no_last_byte = true; return 0;
    case LO_ONCE: perf_opt.once = true; return 0;
    case LO_REPORT_GBITS: return 0;
    case LO_MAX_MEM:
        if (ndk_tool_size_parse(arg, &perf_opt.max_mem) != 0 || perf_opt.max_mem < (1u << 20)) {
            ndk_tool_err("bad --max-mem '%s' (at least 1M)", arg);
            return -1;
        }
        return 0;
    case LO_IDLE_TIMEOUT: return ndk_tool_cli_secs(arg, 86400, false, "--idle-timeout", &perf_opt.idle_timeout);
    default: return 1;
    }
}

static int parse_args(int argc, char **argv)
{
    static const struct option longs[] = {
        { "lat", no_argument, NULL, LO_LAT },
        { "sweep", no_argument, NULL, LO_SWEEP },
        { "inline", required_argument, NULL, LO_INLINE },
        { "verify", no_argument, NULL, LO_VERIFY },
        { "once", no_argument, NULL, LO_ONCE },
        { "report_gbits", no_argument, NULL, LO_REPORT_GBITS },
        { "max-mem", required_argument, NULL, LO_MAX_MEM },
        { "idle-timeout", required_argument, NULL, LO_IDLE_TIMEOUT },
        { "last-byte", no_argument, NULL, LO_LAST_BYTE },
        { "no-last-byte", no_argument, NULL, LO_NO_LAST_BYTE },
        { NULL, 0, NULL, 0 },
    };
    const ndk_tool_cli_spec spec = { "s::c:t:z:an:D:q:d:I:vh", longs,
                                     NDK_TOOL_CLI_ROLE | NDK_TOOL_CLI_JSON | NDK_TOOL_CLI_CRC, perf_mode_opt, NULL,
                                     usage };
    perf_opt.op = OP_WRITE;
    if (ndk_tool_cli_parse(&spec, argc, argv, &perf_opt.cli) != 0)
        return -1;
    if (perf_opt.sweep && perf_opt.size_set) {
        ndk_tool_err("-z and --sweep exclude each other");
        return -1;
    }
    if (perf_opt.iters_set && perf_opt.duration > 0) {
        ndk_tool_err("-n and -D exclude each other");
        return -1;
    }
    if (perf_opt.last_byte && perf_opt.no_last_byte) {
        ndk_tool_err("--last-byte and --no-last-byte exclude each other");
        return -1;
    }
    if ((perf_opt.last_byte || perf_opt.no_last_byte) && !(perf_opt.op == OP_WRITE && perf_opt.lat)) {
        ndk_tool_err("--last-byte and --no-last-byte are for -t write --lat");
        return -1;
    }
    if (!perf_opt.iters_set)
        perf_opt.iters = perf_opt.lat ? 1000 : 5000;
    return 0;
}

int main(int argc, char **argv)
{
    ndk_tool_set_progname("ndkperf");
    perf_opt.max_mem = default_max_mem();
    int prc = is_ndkperfcmd(argc, argv) ? parse_ndkperfcmd(argc, argv) : parse_args(argc, argv);
    if (prc != 0)
        return 2;
    if (perf_opt.logfile) {
        perf_log = fopen(perf_opt.logfile, perf_opt.append ? "a" : "w");
        if (!perf_log) {
            ndk_tool_err("cannot open log file %s", perf_opt.logfile);
            return 2;
        }
    }
    /* MPA CRC: off unless asked for (the environment still wins when it says something). */
    if (perf_opt.cli.crc)
        setenv("NDK_IWARP_CRC", "1", 1);
    else
        setenv("NDK_IWARP_CRC", "0", 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    ndk_tool_install_signals();

    ndk_rt *rt = NULL;
    NTSTATUS st = ndk_tool_rt_open(&rt);
    if (st != STATUS_SUCCESS) {
        ndk_tool_err("opening the NDK runtime failed: %s", ndk_tool_status(st));
        return 1;
    }
    int rc = perf_opt.cli.server ? srv_run(rt) : cli_run(rt);
    ndk_rt_close(rt);
    if (perf_log)
        fclose(perf_log);
    return rc;
}

