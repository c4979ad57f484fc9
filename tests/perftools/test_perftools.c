/* ndkping and ndkperf end to end: the real binaries as separate processes over 127.0.0.1 and
 * ::1 in a private network namespace (only lo), through the provider directory the test runs
 * with. One case per ctest entry (argv[1]); argv[2] and argv[3] are the ndkping and ndkperf
 * binaries.
 *
 * Timings are never asserted: only that the tools succeed, that their output and JSON are well
 * formed and sane, and that failures are one clear line with a non-zero exit. The iwarp
 * provider supports everything these cases use, so any failure (STATUS_NOT_SUPPORTED included)
 * is a failure. The case list is cases.txt (pt_cases.h is generated from it). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pt_cases.h"
#include "testlib.h"

static const char *ndkping, *ndkperf, *silent_clients;
static char tmpdir[256];

/* ---- processes ---- */

struct proc {
    pid_t pid;
    char  out[300];      /* stdout file */
    char  err[300];      /* stderr file */
    int   status;        /* exit code, or -1 when killed */
};

static void start(struct proc *p, const char *name, char *const argv[])
{
    static int seq;
    /* A fresh file per process: a reader never sees a previous run's output. */
    seq++;
    snprintf(p->out, sizeof p->out, "%s/%02d-%s.out", tmpdir, seq, name);
    snprintf(p->err, sizeof p->err, "%s/%02d-%s.err", tmpdir, seq, name);
    close(open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    close(open(p->err, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    fflush(NULL);
    p->pid = fork();
    CHECK_MSG(p->pid >= 0, "fork: %s", strerror(errno));
    if (p->pid == 0) {
        int o = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(p->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0)
            _exit(127);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], argv);
        _exit(127);
    }
}

static char *slurp(const char *path)
{
    static char bufs[4][1 << 18];
    static int next;
    char *b = bufs[next++ % 4];
    b[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return b;
    /* Long outputs: the end is what matters (summaries, errors). */
    if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > (long)sizeof bufs[0] - 1)
        fseek(f, -(long)(sizeof bufs[0] - 1), SEEK_END);
    else
        fseek(f, 0, SEEK_SET);
    size_t n = fread(b, 1, sizeof bufs[0] - 1, f);
    b[n] = '\0';
    fclose(f);
    return b;
}

/* Waits for the process; returns its exit code (-1 after a timeout kill or a signal). */
static int finish(struct proc *p, int timeout_ms)
{
    uint64_t deadline = ndk_test_now_ms() + (uint64_t)timeout_ms;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid)
            break;
        if (ndk_test_now_ms() > deadline) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &st, 0);
            fprintf(stderr, "%s timed out after %d ms\n", p->out, timeout_ms);
            p->status = -1;
            return -1;
        }
        usleep(5000);
    }
    p->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return p->status;
}

static void expect_ok(struct proc *p, int timeout_ms, const char *what)
{
    int rc = finish(p, timeout_ms);
    CHECK_MSG(rc == 0, "%s exited with %d\n--- stdout:\n%s--- stderr:\n%s", what, rc, slurp(p->out), slurp(p->err));
}

/* Waits until the server prints its "listening" line (or dies). */
static void wait_listening(struct proc *p)
{
    uint64_t deadline = ndk_test_now_ms() + 10000;
    while (!strstr(slurp(p->out), "listening")) {
        int st;
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = -1;
            ndk_test_fail(__FILE__, __LINE__, "server exited before listening (%d)\n--- stderr:\n%s",
                          WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(p->err));
        }
        CHECK_MSG(ndk_test_now_ms() < deadline, "server did not listen within 10 s\n--- stderr:\n%s", slurp(p->err));
        usleep(10000);
    }
}

#define HAS(text, s) CHECK_MSG(strstr(text, s), "output lacks '%s':\n%s", s, text)
/* An expected failure must still be a clean one (sanitizer builds report on stderr). */
#define CLEAN(text) CHECK_MSG(!strstr(text, "Sanitizer") && !strstr(text, "runtime error:"), "sanitizer report:\n%s", text)

/* ---- JSON: a strict recursive-descent checker, and a number lookup ---- */

static const char *ws(const char *s) { while (isspace((unsigned char)*s)) s++; return s; }
static const char *jvalue(const char *s);
static const char *jstring(const char *s)
{
    if (*s != '"') return NULL;
    for (s++; *s && *s != '"'; s++) {
        if ((unsigned char)*s < 0x20) return NULL;
        if (*s == '\\') { s++; if (!*s) return NULL; }
    }
    return *s == '"' ? s + 1 : NULL;
}
static const char *jvalue(const char *s)
{
    s = ws(s);
    if (*s == '{' || *s == '[') {
        char close = *s == '{' ? '}' : ']';
        s = ws(s + 1);
        if (*s == close) return s + 1;
        for (;;) {
            if (close == '}') {
                if (!(s = jstring(ws(s)))) return NULL;
                s = ws(s);
                if (*s++ != ':') return NULL;
            }
            if (!(s = jvalue(s))) return NULL;
            s = ws(s);
            if (*s == ',') { s++; continue; }
            return *s == close ? s + 1 : NULL;
        }
    }
    if (*s == '"') return jstring(s);
    if (!strncmp(s, "true", 4)) return s + 4;
    if (!strncmp(s, "false", 5)) return s + 5;
    if (!strncmp(s, "null", 4)) return s + 4;
    if (*s == '-' || isdigit((unsigned char)*s)) {
        char *end;
        strtod(s, &end);
        return end > s ? end : NULL;
    }
    return NULL;
}

static void check_json(const char *doc)
{
    const char *end = jvalue(doc);
    CHECK_MSG(end && *ws(end) == '\0', "not one valid JSON document:\n%s", doc);
}

/* The number after the n-th (0-based) occurrence of "key": at or after from. */
static double jnum(const char *doc, const char *key, int n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = doc;
    for (int i = 0; i <= n; i++) {
        p = strstr(p, pat);
        CHECK_MSG(p, "JSON lacks %s #%d:\n%s", pat, n, doc);
        p += strlen(pat);
    }
    char *end;
    double v = strtod(p, &end);
    CHECK_MSG(end > p, "JSON %s is not a number:\n%s", pat, doc);
    return v;
}

/* ---- cases ---- */

/* Every server gets a fresh port, so no run depends on a previous run's TIME_WAIT. */
static char port_s[16];
static int port_next = 7200;

static int next_port(void)
{
    int p = port_next++;
    snprintf(port_s, sizeof port_s, "%d", p);
    return p;
}

static void host_port(char *buf, size_t len, const char *host, int port)
{
    snprintf(buf, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

static void case_ping(const char *host)
{
    char addr[64];
    host_port(addr, sizeof addr, host, next_port());
    struct proc s, c;
    char *sargv[] = { (char *)ndkping, "-s", addr, "--once", NULL };
    start(&s, "ping-server", sargv);
    wait_listening(&s);
    char *cargv[] = { (char *)ndkping, "-c", addr, "-C", "5", "-i", "0.01", "-S", "1000", NULL };
    start(&c, "ping-client", cargv);
    expect_ok(&c, 30000, "ndkping client");
    expect_ok(&s, 10000, "ndkping server");
    const char *o = slurp(c.out);
    HAS(o, "seq=5 time=");
    HAS(o, "5 pings transmitted, 5 received");
    HAS(o, "rtt min/avg/max/mdev = ");
    HAS(slurp(s.out), "5 pings echoed");
    printf("ndkping over %s: 5 pings, summary ok\n", addr);
}

/* Failure is one line naming the reason, and a non-zero exit. */
static void expect_one_line_failure(char *const argv[], const char *name, const char *must_have)
{
    struct proc c;
    start(&c, name, argv);
    int rc = finish(&c, 30000);
    const char *e = slurp(c.err);
    CHECK_MSG(rc > 0, "%s: exit %d, expected a failure\n%s%s", name, rc, slurp(c.out), e);
    /* Runtime/provider warnings may precede it; the tool's own reason is one line. */
    int lines = 0;
    for (const char *l = e; *l;) {
        const char *nl = strchr(l, '\n');
        if (!strncmp(l, "ndkping:", 8) || !strncmp(l, "ndkperf:", 8))
            lines++;
        l = nl ? nl + 1 : l + strlen(l);
    }
    CHECK_MSG(lines == 1, "%s: expected one error line, got %d:\n%s", name, lines, e);
    HAS(e, must_have);
    printf("%s: exit %d, %s", name, rc, strstr(e, must_have) ? strstr(e, "ndk") : e);
}

static void case_refused(void)
{
    char *a1[] = { (char *)ndkping, "-c", "127.0.0.1:7301", "-C", "1", NULL };
    expect_one_line_failure(a1, "refused-v4", "connect to 127.0.0.1:7301 failed: STATUS_CONNECTION_REFUSED");
    char *a2[] = { (char *)ndkping, "-c", "[::1]:7301", "-C", "1", NULL };
    expect_one_line_failure(a2, "refused-v6", "connect to [::1]:7301 failed: STATUS_CONNECTION_REFUSED");
    char *a3[] = { (char *)ndkping, "-c", "127.0.0.1:7301", "-a", "192.0.2.7", NULL };
    expect_one_line_failure(a3, "no-adapter", "no NDK adapter serves local address 192.0.2.7");
    char *a4[] = { (char *)ndkperf, "-c", "127.0.0.1:7301", "-t", "write", "-n", "10", NULL };
    expect_one_line_failure(a4, "perf-refused", "connect to 127.0.0.1:7301 failed: STATUS_CONNECTION_REFUSED");
}

static void case_rping(const char *host)
{
    static const char *sizes[] = { "1", "26", "64", "4096", "65535" };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct proc s, c;
        next_port();
        char *sargv[] = { (char *)ndkping, "--rping", "-s", "-a", (char *)host, "-p", port_s, "-v", NULL };
        start(&s, "rping-server", sargv);
        wait_listening(&s);
        char *cargv[] = { (char *)ndkping, "--rping", "-c", "-a", (char *)host, "-p", port_s, "-S", (char *)sizes[i],
                          "-C", "50", "-V", NULL };
        start(&c, "rping-client", cargv);
        expect_ok(&c, 60000, "ndkping --rping client");
        expect_ok(&s, 10000, "ndkping --rping server");
        HAS(slurp(c.out), "data compared byte for byte: ok");
        HAS(slurp(s.out), "data compared byte for byte: ok");
        if (atoi(sizes[i]) >= 26)     /* rping's text fits from 26 bytes on */
            HAS(slurp(s.out), "server ping data: rdma-ping-49: ");
        printf("ndkping --rping over %s: 50 pings of %s bytes, compared on both sides\n", host, sizes[i]);
    }
}

/* The rping server is told when its client went away before completing a session: a client
 * (ndkping --cmatose -C 0, which connects and then only waits) is killed once the server has
 * accepted it. Then a complete session against a fresh server still exits 0. */
static void case_rping_incomplete(const char *host)
{
    struct proc s, c;
    next_port();
    char *sargv[] = { (char *)ndkping, "--rping", "-s", "-a", (char *)host, "-p", port_s, "-v", NULL };
    start(&s, "rping-server", sargv);
    wait_listening(&s);
    char *cargv[] = { (char *)ndkping, "--cmatose", "-s", (char *)host, "-p", port_s, "-C", "0", NULL };
    start(&c, "dying-client", cargv);
    uint64_t deadline = ndk_test_now_ms() + 20000;
    while (!strstr(slurp(s.err), "connection from")) {
        CHECK_MSG(ndk_test_now_ms() < deadline, "the rping server saw no connection within 20 s\n--- stderr:\n%s",
                  slurp(s.err));
        usleep(10000);
    }
    kill(c.pid, SIGKILL);
    finish(&c, 10000);
    int rc = finish(&s, 30000);
    const char *so = slurp(s.out), *se = slurp(s.err);
    CHECK_MSG(rc > 0, "rping server exited %d after its client was killed\n--- stdout:\n%s--- stderr:\n%s", rc, so,
              se);
    CHECK_MSG(!strstr(so, ": ok"), "rping server claims success after its client was killed:\n%s", so);
    HAS(se, "the client disconnected before completing a ping");
    CLEAN(se);
    printf("ndkping --rping server over %s: client killed after connecting -> exit %d: %s", host, rc,
           strstr(se, "the client disconnected"));
}

/* librdmacm rdma_server / rdma_client: one 16-byte Send each way; and the failures they report
 * when the peer does not follow the example's exchange. */
static void case_rdmacm(const char *host)
{
    struct proc s, c;
    next_port();
    char *sargv[] = { (char *)ndkping, "--rdma-server", "-s", (char *)host, "-p", port_s, NULL };
    start(&s, "rdma-server", sargv);
    wait_listening(&s);
    char *cargv[] = { (char *)ndkping, "--rdma-client", "-s", (char *)host, "-p", port_s, "-v", NULL };
    start(&c, "rdma-client", cargv);
    expect_ok(&c, 60000, "ndkping --rdma-client");
    expect_ok(&s, 15000, "ndkping --rdma-server");
    HAS(slurp(c.out), "received 16 bytes back, compared byte for byte with rdma_server's 16 zero bytes: ok");
    HAS(slurp(s.out), "compared byte for byte with rdma_client's 16 zero bytes: ok; sent 16 zero bytes back");
    printf("ndkping --rdma-server/--rdma-client over %s: 16 bytes each way, compared on both sides\n", host);

    /* Nobody listening: one line and a non-zero exit. */
    char want[128], addr[64];
    host_port(addr, sizeof addr, host, next_port());
    snprintf(want, sizeof want, "connect to %s failed: STATUS_CONNECTION_REFUSED", addr);
    char *rargv[] = { (char *)ndkping, "--rdma-client", "-s", (char *)host, "-p", port_s, NULL };
    expect_one_line_failure(rargv, "rdma-client-refused", want);

    /* A peer whose 16 bytes are not the example's zeros (rping's client sends its buffer
     * advertisement): the server reports the difference and fails; so does that client. */
    next_port();
    char *s2[] = { (char *)ndkping, "--rdma-server", "-s", (char *)host, "-p", port_s, NULL };
    start(&s, "rdma-server-wrong", s2);
    wait_listening(&s);
    char *c2[] = { (char *)ndkping, "--rping", "-c", "-a", (char *)host, "-p", port_s, "-C", "1", NULL };
    start(&c, "rping-client-wrong", c2);
    int src = finish(&s, 30000), crc = finish(&c, 30000);
    CHECK_MSG(src > 0, "rdma-server exited %d on a wrong message\n%s%s", src, slurp(s.out), slurp(s.err));
    HAS(slurp(s.err), "received bytes differ from rdma_client's 16 zero bytes at byte");
    CHECK_MSG(!strstr(slurp(s.out), ": ok"), "rdma-server claims success:\n%s", slurp(s.out));
    CHECK_MSG(crc > 0, "rping client exited %d against an rdma-server\n%s%s", crc, slurp(c.out), slurp(c.err));
    CLEAN(slurp(s.err));
    CLEAN(slurp(c.err));
    printf("ndkping --rdma-server over %s: wrong bytes -> exit %d, %s", host, src, strstr(slurp(s.err), "ndkping:"));

    /* A server that never replies (an rping server takes our 16 zero bytes for an advertisement
     * of 0 bytes and drops the connection): the client reports the missing reply. */
    next_port();
    char *s3[] = { (char *)ndkping, "--rping", "-s", "-a", (char *)host, "-p", port_s, "-v", NULL };
    start(&s, "rping-server-wrong", s3);
    wait_listening(&s);
    char *c3[] = { (char *)ndkping, "--rdma-client", "-s", (char *)host, "-p", port_s, NULL };
    start(&c, "rdma-client-wrong", c3);
    crc = finish(&c, 60000);
    src = finish(&s, 30000);
    CHECK_MSG(crc > 0, "rdma-client exited %d without a reply\n%s%s", crc, slurp(c.out), slurp(c.err));
    HAS(slurp(c.err), "the server's 16-byte reply");
    CHECK_MSG(!strstr(slurp(c.out), ": ok"), "rdma-client claims success:\n%s", slurp(c.out));
    CHECK_MSG(src > 0, "rping server exited %d on an rdma-client\n%s%s", src, slurp(s.out), slurp(s.err));
    CLEAN(slurp(s.err));
    CLEAN(slurp(c.err));
    printf("ndkping --rdma-client over %s: no reply -> exit %d, %s", host, crc, strstr(slurp(c.err), "ndkping:"));
}

static void case_cmatose(const char *host)
{
    char *sp = NULL;
    struct proc s, c;
    next_port();
    sp = port_s;
    char *sargv[] = { (char *)ndkping, "--cmatose", "-b", (char *)host, "-p", sp, "-c", "2", "-C", "20", "-S", "1000",
                      "--pdata", "accept-data", "-V", "-v", NULL };
    start(&s, "cmatose-server", sargv);
    wait_listening(&s);
    char *cargv[] = { (char *)ndkping, "--cmatose", "-s", (char *)host, "-p", sp, "-c", "2", "-C", "20", "-S", "1000",
                      "--pdata", "connect-data", "-V", NULL };
    start(&c, "cmatose-client", cargv);
    expect_ok(&c, 60000, "ndkping --cmatose client");
    expect_ok(&s, 15000, "ndkping --cmatose server");
    const char *co = slurp(c.out), *so = slurp(s.out);
    HAS(co, "server private data: \"accept-data\"");
    HAS(so, "client private data: \"connect-data\"");
    HAS(co, "2 connection(s), 20 messages of 1000 bytes each way, data compared: ok");
    HAS(so, "2 connection(s), 20 messages of 1000 bytes each way, data compared: ok");
    HAS(co, "return status 0");
    printf("ndkping --cmatose over %s: 2 connections x 20 messages each way, private data both ways\n", host);
}

/* One ndkperf run against a fresh --once server; returns the client's stdout. */
static const char *perf_run(const char *host, char *const client_args[], const char *what)
{
    struct proc s, c;
    char saddr[64];
    host_port(saddr, sizeof saddr, host, next_port());
    char *sargv[] = { (char *)ndkperf, "-s", saddr, "--once", NULL };
    start(&s, "perf-server", sargv);
    wait_listening(&s);
    char *argv[40];
    int n = 0;
    argv[n++] = (char *)ndkperf;
    for (int i = 0; client_args[i] && n < 39; i++)
        argv[n++] = !strcmp(client_args[i], "@") ? saddr : client_args[i];
    argv[n] = NULL;
    start(&c, "perf-client", argv);
    expect_ok(&c, 120000, what);
    expect_ok(&s, 15000, "ndkperf server");
    return slurp(c.out);
}

static void check_bw_json(const char *doc, const char *test, double bytes, double iters, double conns)
{
    char want[64];
    check_json(doc);
    snprintf(want, sizeof want, "\"test\":\"%s\"", test);
    HAS(doc, want);
    HAS(doc, "\"mode\":\"bandwidth\"");
    HAS(doc, "\"verified\":true");
    CHECK(jnum(doc, "connections", 0) == conns);
    CHECK(jnum(doc, "bytes", 0) == bytes);
    CHECK(jnum(doc, "iterations", 0) == iters);
    double avg = jnum(doc, "bw_avg_MBps", 0), peak = jnum(doc, "bw_peak_MBps", 0);
    CHECK_MSG(avg > 0 && peak >= avg * 0.999, "bandwidth not sane: avg %g peak %g", avg, peak);
    CHECK(jnum(doc, "msg_rate_Mpps", 0) > 0);
    CHECK(jnum(doc, "seconds", 0) > 0);
    CHECK(jnum(doc, "client_cpu_ns_per_byte", 0) >= 0);
    CHECK(jnum(doc, "server_cpu_ns_per_byte", 0) >= 0);
}

static void check_lat_json(const char *doc, const char *test, double iters)
{
    char want[64];
    check_json(doc);
    snprintf(want, sizeof want, "\"test\":\"%s\"", test);
    HAS(doc, want);
    HAS(doc, "\"mode\":\"latency\"");
    HAS(doc, "\"verified\":true");
    CHECK(jnum(doc, "iterations", 0) == iters);
    double mn = jnum(doc, "t_min_us", 0), typ = jnum(doc, "t_typical_us", 0), mx = jnum(doc, "t_max_us", 0);
    double avg = jnum(doc, "t_avg_us", 0), p99 = jnum(doc, "t_p99_us", 0);
    CHECK_MSG(mn > 0 && mn <= typ && typ <= mx && mn <= avg && avg <= mx && p99 <= mx && p99 >= mn,
              "latency not sane: min %g typical %g avg %g p99 %g max %g", mn, typ, avg, p99, mx);
}

static void case_perf_bw(const char *op, const char *host)
{
    const char *addr = host;
    char *a[] = { "-c", "@", "-t", (char *)op, "-z", "65536", "-n", "300", "--verify", "--json", NULL };
    const char *doc = perf_run(addr, a, "ndkperf bandwidth");
    check_bw_json(doc, op, 65536, 300, 1);
    /* small messages, deeper queue, busy polling */
    char *b[] = { "-c", "@", "-t", (char *)op, "-z", "7", "-n", "2000", "-d", "32", "--poll", "--verify", "--json", NULL };
    doc = perf_run(addr, b, "ndkperf bandwidth --poll");
    check_bw_json(doc, op, 7, 2000, 1);
    HAS(doc, "\"completions\":\"poll\"");
    if (!strcmp(op, "send")) {
        /* Unverified: the server's receives share one buffer, unless a message of the run has
         * a control message's size (64 B), which could then be read as one. */
        char *c[] = { "-c", "@", "-t", "send", "-z", "1m", "-n", "200", "--json", NULL };
        doc = perf_run(addr, c, "ndkperf -t send 1 MiB unverified");
        check_json(doc);
        CHECK(jnum(doc, "server_recv_buffers", 0) == 1);
        CHECK(jnum(doc, "iterations", 0) == 200);
        char *d[] = { "-c", "@", "-t", "send", "--sweep", "-n", "20", "--poll", "--json", NULL };
        doc = perf_run(addr, d, "ndkperf -t send --sweep unverified");
        check_json(doc);
        CHECK(jnum(doc, "server_recv_buffers", 0) == 0);
        CHECK(jnum(doc, "iterations", 23) == 20);
    }
    printf("ndkperf -t %s over %s: 64 KiB x 300 and 7 B x 2000 (--poll), verified, JSON sane%s\n", op, addr,
           strcmp(op, "send") ? "" : "; unverified 1 MiB (receives in one buffer) and a sweep (one buffer each)");
}

/* write --lat's method as the JSON states it: last-byte polling where the adapter advertises
 * IN_ORDER_DMA (or with --last-byte), Write + signal Send otherwise. */
static void check_write_lat_method(const char *doc, bool forced)
{
    bool in_order = strstr(doc, "\"in_order_dma\":true") != NULL;
    CHECK_MSG(in_order || strstr(doc, "\"in_order_dma\":false"), "no in_order_dma in %s", doc);
    if (forced || in_order) {
        HAS(doc, "\"write_lat_method\":\"last-byte\"");
        HAS(doc, "\"completions\":\"poll\"");
    } else {
        HAS(doc, "\"write_lat_method\":\"write+send\"");
    }
}

static void case_perf_lat(const char *op, const char *host)
{
    const char *addr = host;
    char *a[] = { "-c", "@", "-t", (char *)op, "--lat", "-z", "8", "-n", "200", "--verify", "--json", NULL };
    check_lat_json(perf_run(addr, a, "ndkperf --lat"), op, 200);
    char *b[] = { "-c", "@", "-t", (char *)op, "--lat", "-z", "100000", "-n", "50", "--poll", "--verify", "--json",
                  NULL };
    const char *doc = perf_run(addr, b, "ndkperf --lat --poll");
    check_lat_json(doc, op, 50);
    HAS(doc, "\"completions\":\"poll\"");
    /* Notification mode runs the data path inside the CQ callback: large messages too. */
    char *c[] = { "-c", "@", "-t", (char *)op, "--lat", "-z", "100000", "-n", "50", "--verify", "--json", NULL };
    doc = perf_run(addr, c, "ndkperf --lat (notifications)");
    check_lat_json(doc, op, 50);
    HAS(doc, "\"completions\":\"notify\"");
    if (!strcmp(op, "write"))
        check_write_lat_method(doc, false);
    printf("ndkperf -t %s --lat over %s: 8 B x 200, 100000 B x 50 (--poll and notifications), verified, JSON sane\n",
           op, addr);
}

static void case_perf_multi(void)
{
    char *a[] = { "-c", "@", "-t", "write", "-q", "2", "-z", "16384", "-n", "500", "--verify", "--json",
                  NULL };
    check_bw_json(perf_run("::1", a, "ndkperf -q 2"), "write", 16384, 1000, 2);
    char *b[] = { "-c", "@", "-t", "send", "-q", "2", "-z", "4096", "-n", "500", "--verify", "--json",
                  NULL };
    check_bw_json(perf_run("127.0.0.1", b, "ndkperf -q 2 send"), "send", 4096, 1000, 2);
    /* Two CQs whose notification callbacks share the provider's thread. */
    char *c[] = { "-c", "@", "-t", "send", "--lat", "-q", "2", "-z", "64", "-n", "300", "--verify", "--json", NULL };
    check_lat_json(perf_run("127.0.0.1", c, "ndkperf -q 2 send --lat"), "send", 600);
    printf("ndkperf -q 2: write over ::1, send and send --lat over 127.0.0.1, verified, JSON sane\n");
}

/* Waits until the client printed its table header (the test is running), then a little more. */
static void wait_running(struct proc *c, const char *header)
{
    uint64_t deadline = ndk_test_now_ms() + 20000;
    while (!strstr(slurp(c->out), header)) {
        CHECK_MSG(ndk_test_now_ms() < deadline, "the client did not start within 20 s\n--- stderr:\n%s",
                  slurp(c->err));
        usleep(10000);
    }
    usleep(300000);
}

/* Teardown in the middle of a phase whose data path runs in the CQ notification callbacks (or
 * busy-polls): the peer is killed, or a side is interrupted. Every surviving process must end
 * soon, with a failure status and one clean reason (no sanitizer report, no hang). */
static void case_perf_teardown(const char *host)
{
    static const struct {
        const char *what, *op, *mode, *header;
        int victim;        /* 0: SIGKILL the server, 1: SIGKILL the client, 2: SIGINT the client, 3: SIGINT the server */
        const char *mode2; /* a second option after mode */
    } runs[] = {
        { "send --lat, server killed", "send", "--lat", "Send Latency Test", 0, NULL },
        { "send --lat, client killed", "send", "--lat", "Send Latency Test", 1, NULL },
        { "write --lat, client interrupted", "write", "--lat", "RDMA_Write Latency Test", 2, NULL },
        { "read --lat, server interrupted", "read", "--lat", "RDMA_Read Latency Test", 3, NULL },
        /* Both ends of last-byte polling spin outside the CQ helpers: each must still see the end. */
        { "write --lat --last-byte, server killed", "write", "--lat", "RDMA_Write Latency Test", 0, "--last-byte" },
        { "write --lat --last-byte, client killed", "write", "--lat", "RDMA_Write Latency Test", 1, "--last-byte" },
        { "write --lat --last-byte, client interrupted", "write", "--lat", "RDMA_Write Latency Test", 2, "--last-byte" },
        { "write bandwidth, server killed", "write", NULL, "RDMA_Write BW Test", 0, NULL },
        { "send bandwidth, client interrupted", "send", NULL, "Send BW Test", 2, NULL },
        { "send bandwidth --poll, client interrupted", "send", "--poll", "Send BW Test", 2, NULL },
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        struct proc s, c;
        char saddr[64];
        host_port(saddr, sizeof saddr, host, next_port());
        char *sargv[] = { (char *)ndkperf, "-s", saddr, "--once", NULL };
        start(&s, "td-server", sargv);
        wait_listening(&s);
        char *cargv[] = { (char *)ndkperf, "-c", saddr, "-t", (char *)runs[i].op, "-z", "4096", "-D", "60",
                          "--verify", (char *)runs[i].mode, (char *)runs[i].mode2, NULL };
        start(&c, "td-client", cargv);
        wait_running(&c, runs[i].header);
        struct proc *victim = runs[i].victim == 0 || runs[i].victim == 3 ? &s : &c;
        struct proc *other = victim == &s ? &c : &s;
        kill(victim->pid, runs[i].victim >= 2 ? SIGINT : SIGKILL);
        int vrc = finish(victim, 30000);
        int orc = finish(other, 45000);
        const char *oe = slurp(other->err);
        CHECK_MSG(vrc != -1 || runs[i].victim < 2, "%s: the interrupted process did not exit\n%s", runs[i].what,
                  slurp(victim->err));
        if (runs[i].victim >= 2)
            CHECK_MSG(vrc > 0, "%s: the interrupted process exited %d\n%s", runs[i].what, vrc, slurp(victim->err));
        /* An interrupted client ends the phase early but may still close the session in order;
         * then its server has nothing to complain about. */
        CHECK_MSG(orc > 0 || (orc == 0 && runs[i].victim == 2),
                  "%s: the surviving process exited %d\n--- stdout:\n%s--- stderr:\n%s", runs[i].what, orc,
                  slurp(other->out), oe);
        CLEAN(oe);
        CLEAN(slurp(victim->err));
        if (orc > 0)
            CHECK_MSG(strstr(oe, "ndkperf: "), "%s: the surviving process gave no reason:\n%s", runs[i].what, oe);
        const char *why = strstr(orc > 0 ? oe : slurp(victim->err), "ndkperf: ");
        printf("ndkperf teardown over %s, %s: exits %d/%d, %s", host, runs[i].what, vrc, orc, why ? why : "\n");
    }
}

static void case_perf_table(void)
{
    char *a[] = { "-c", "@", "-t", "read", "--sweep", "-n", "8", "--verify", NULL };
    const char *o = perf_run("127.0.0.1", a, "ndkperf --sweep table");
    HAS(o, "RDMA_Read BW Test");
    HAS(o, "#bytes");
    HAS(o, "BW average[MB/sec]");
    HAS(o, "MsgRate[Mpps]");
    HAS(o, "CPU[ns/B] client/server");
    HAS(o, "\n 1 ");
    HAS(o, "\n 8388608 ");
    char *b[] = { "-c", "@", "-t", "send", "--lat", "-D", "0.5", "-z", "64", NULL };
    o = perf_run("127.0.0.1", b, "ndkperf --lat -D table");
    HAS(o, "Send Latency Test");
    HAS(o, "t_typical[usec]");
    HAS(o, "99%[usec]");
    printf("ndkperf tables: read sweep 1 B..8 MiB, send latency for 0.5 s\n");
}

static void case_ndkperfcmd(void)
{
    static const char *types[] = { "rping", "rperf" };
    for (int i = 0; i < 2; i++) {
        struct proc s, c;
        char sa[64];
        host_port(sa, sizeof sa, "127.0.0.1", next_port());
        char *sargv[] = { (char *)ndkperf, "-S", "-ServerAddr", sa, "-ServerIf", "1", "-TestType",
                          (char *)types[i], "-W", "30", NULL };
        start(&s, "cmd-server", sargv);
        wait_listening(&s);
        char *cargv[] = { (char *)ndkperf, "-C", "-ServerAddr", sa, "-ClientAddr", "127.0.0.1",
                          "-ClientIf", "1", "-TestType", (char *)types[i], NULL };
        start(&c, "cmd-client", cargv);
        expect_ok(&c, 60000, "NdkPerfCmd-style client");
        expect_ok(&s, 15000, "NdkPerfCmd-style server");
        HAS(slurp(c.out), "completes");
        HAS(slurp(s.out), "completes");
        printf("NdkPerfCmd syntax, -TestType %s: both sides print 'completes'\n", types[i]);
    }
    /* A server nobody connects to gives up after -W with a reason. */
    char *w[] = { (char *)ndkperf, "-S", "-ServerAddr", "127.0.0.1:9001", "-TestType", "rping", "-W", "1", NULL };
    expect_one_line_failure(w, "cmd-timeout", "no client connected within 1 s");
}

/* A long-running server (no --once) with extra options; stopped by stop_server. */
static void start_server(struct proc *s, char *addr, size_t len, const char *host, char *opt1, char *opt2)
{
    host_port(addr, len, host, next_port());
    char *sargv[] = { (char *)ndkperf, "-s", addr, opt1, opt2, NULL };
    start(s, "perf-server", sargv);
    wait_listening(s);
}

static void stop_server(struct proc *s)
{
    kill(s->pid, SIGTERM);
    finish(s, 20000);
}

/* One client for a running server, which must succeed. */
static void perf_client_ok(const char *saddr, const char *op, const char *what)
{
    struct proc c;
    char *argv[] = { (char *)ndkperf, "-c", (char *)saddr, "-t", (char *)op, "-z", "65536", "-n", "300", "--verify",
                     NULL };
    start(&c, "perf-client", argv);
    expect_ok(&c, 120000, what);
}

/* issue 13 item 6: one memory budget for all sessions. A test that does not fit is refused with
 * the reason on both sides; the server stays up for the next client. */
static void case_perf_budget(const char *host)
{
    struct proc s, c;
    char saddr[64];
    start_server(&s, saddr, sizeof saddr, host, "--max-mem", "64M");
    /* Send with 8 MiB messages: the server would post 12 receives of 8 MiB (96 MiB). */
    char *big[] = { (char *)ndkperf, "-c", saddr, "-t", "send", "-z", "8m", "-n", "5", NULL };
    start(&c, "perf-too-big", big);
    int rc = finish(&c, 60000);
    CHECK_MSG(rc == 1, "an over-budget client exited %d\n%s", rc, slurp(c.err));
    HAS(slurp(c.err), "the server refused the test: the test needs 96 MiB of memory");
    HAS(slurp(c.err), "--max-mem");
    HAS(slurp(s.err), "refusing ");
    HAS(slurp(s.err), "the test needs 96 MiB");
    perf_client_ok(saddr, "write", "a client within the budget after a refused one");
    perf_client_ok(saddr, "send", "a second client within the budget");
    stop_server(&s);
    printf("ndkperf -s --max-mem 64M over %s: an 8 MiB Send test refused with its reason, the next clients served\n",
           host);
}

/* issue 13 item 6: 300 clients that connect and then stay silent neither lock a legitimate
 * client out nor stay forever (--idle-timeout). */
static void case_perf_silent(const char *host)
{
    struct proc s, q;
    char saddr[64];
    start_server(&s, saddr, sizeof saddr, host, "--idle-timeout", "3");
    char *qargv[] = { (char *)silent_clients, saddr, "300", "60", NULL };
    start(&q, "silent-clients", qargv);
    uint64_t deadline = ndk_test_now_ms() + 60000;
    while (!strstr(slurp(q.out), "silent: 300 connected")) {
        int st;
        CHECK_MSG(waitpid(q.pid, &st, WNOHANG) != q.pid, "silent_clients ended early:\n%s%s", slurp(q.out),
                  slurp(q.err));
        CHECK_MSG(ndk_test_now_ms() < deadline, "300 silent clients did not connect in 60 s:\n%s", slurp(q.err));
        usleep(20000);
    }
    /* All 300 are connected and silent now: a legitimate client is still served. */
    perf_client_ok(saddr, "write", "a legitimate client beside 300 silent ones");
    expect_ok(&q, 90000, "silent_clients");
    HAS(slurp(q.out), "300 connected, 300 closed by the server");
    HAS(slurp(s.err), "the client sent nothing within 3 s (--idle-timeout)");
    perf_client_ok(saddr, "send", "a client after the silent ones were closed");
    stop_server(&s);
    printf("ndkperf -s --idle-timeout 3 over %s: 300 silent clients closed, legitimate clients served\n", host);
}

/* ---- the cases of cases.txt ---- */

/* write --lat by last-byte polling between two processes: both ends spin on the last byte of
 * their target while polling their CQs; --verify checks every payload on both sides, so a
 * Write that lands elsewhere, short or never fails the run (the spinning side times out). */
static void case_perf_lat_last_byte(const char *host)
{
    char *a[] = { "-c", "@", "-t", "write", "--lat", "--last-byte", "-z", "8", "-n", "200", "--verify", "--json", NULL };
    const char *doc = perf_run(host, a, "ndkperf write --lat --last-byte");
    check_lat_json(doc, "write", 200);
    check_write_lat_method(doc, true);
    char *b[] = { "-c", "@", "-t", "write", "--lat", "--last-byte", "-z", "100000", "-n", "50", "--verify", "--json",
                  NULL };
    doc = perf_run(host, b, "ndkperf write --lat --last-byte 100000 B");
    check_lat_json(doc, "write", 50);
    check_write_lat_method(doc, true);
    /* A sweep: the server learns each phase's size from the client's START, and messages of
     * every size end on the same byte of its buffer. */
    char *c[] = { "-c", "@", "-t", "write", "--lat", "--last-byte", "--sweep", "-n", "5", "--verify", "--json", NULL };
    doc = perf_run(host, c, "ndkperf write --lat --last-byte --sweep");
    check_json(doc);
    HAS(doc, "\"verified\":true");
    CHECK(jnum(doc, "bytes", 0) == 1);
    CHECK(jnum(doc, "bytes", 23) == 8388608);
    CHECK(jnum(doc, "iterations", 23) == 5);
    /* The table names the method. */
    char *d[] = { "-c", "@", "-t", "write", "--lat", "--last-byte", "-z", "64", "-n", "100", NULL };
    HAS(perf_run(host, d, "ndkperf write --lat --last-byte (table)"), "last-byte polling");
    printf("ndkperf -t write --lat --last-byte over %s: 8 B x 200, 100000 B x 50, a 1 B..8 MiB sweep, verified; "
           "the table names the method\n", host);
}

static void run_ping(void) { case_ping("127.0.0.1"); case_ping("::1"); }
static void run_refused(void) { case_refused(); }
static void run_rping(void) { case_rping("127.0.0.1"); case_rping("::1"); }
static void run_rping_incomplete(void) { case_rping_incomplete("127.0.0.1"); case_rping_incomplete("::1"); }
static void run_cmatose(void) { case_cmatose("127.0.0.1"); case_cmatose("::1"); }
static void run_rdmacm(void) { case_rdmacm("127.0.0.1"); case_rdmacm("::1"); }
static void run_write(void) { case_perf_bw("write", "127.0.0.1"); case_perf_bw("write", "::1"); }
static void run_read(void) { case_perf_bw("read", "127.0.0.1"); case_perf_bw("read", "::1"); }
static void run_send(void) { case_perf_bw("send", "127.0.0.1"); case_perf_bw("send", "::1"); }
static void run_lat_send(void) { case_perf_lat("send", "127.0.0.1"); case_perf_lat("send", "::1"); }
static void run_lat_write(void) { case_perf_lat("write", "127.0.0.1"); case_perf_lat("write", "::1"); }
static void run_lat_write_last_byte(void) { case_perf_lat_last_byte("127.0.0.1"); case_perf_lat_last_byte("::1"); }
static void run_lat_read(void) { case_perf_lat("read", "127.0.0.1"); case_perf_lat("read", "::1"); }
static void run_multi(void) { case_perf_multi(); }
static void run_table(void) { case_perf_table(); }
static void run_teardown(void) { case_perf_teardown("127.0.0.1"); case_perf_teardown("::1"); }
static void run_ndkperfcmd(void) { case_ndkperfcmd(); }
static void run_server_budget(void) { case_perf_budget("127.0.0.1"); case_perf_budget("::1"); }
static void run_server_silent(void) { case_perf_silent("127.0.0.1"); }

static const struct pt_case {
    const char *name;
    void (*run)(void);
    const char *what;
} pt_cases[] = {
#define PT_ENTRY(id, name, what) { name, run_##id, what },
    PT_CASE_LIST(PT_ENTRY)
#undef PT_ENTRY
};

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 5, "usage: test_perftools CASE NDKPING NDKPERF SILENT_CLIENTS");
    const char *which = argv[1];
    ndkping = argv[2];
    ndkperf = argv[3];
    silent_clients = argv[4];
    CHECK_MSG(access(ndkping, X_OK) == 0 && access(ndkperf, X_OK) == 0, "tools not built: %s %s", ndkping, ndkperf);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ndk-perftools-%s-%d", which, (int)getpid());
    CHECK(mkdir(tmpdir, 0700) == 0);
    ndk_test_enter_netns();
    setenv("NDK_CONFIG", "/nonexistent/openndk.conf", 1);
    unsetenv("NDK_PROVIDERS");
    unsetenv("NDK_INTERFACES");

    const struct pt_case *c = NULL;
    for (size_t i = 0; i < sizeof pt_cases / sizeof pt_cases[0]; i++)
        if (!strcmp(which, pt_cases[i].name))
            c = &pt_cases[i];
    CHECK_MSG(c, "unknown case %s (the cases are in tests/perftools/cases.txt)", which);
    printf("case %s: %s\n", c->name, c->what);
    c->run();
    /* Leave the logs when something failed (we only get here on success). */
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return 0;
}
