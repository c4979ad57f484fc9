/* tcp_scale: plain TCP sockets held and churned the way test_iw_scale holds NDK connections, for
 * the scale section of make bench (bench/scale.sh). Two processes over 127.0.0.1.
 *
 *   tcp_scale hold N    N connections at once (256 connects in flight), each one round trip of
 *                       4 bytes (as a handshake); prints "scale <side> <key> <value>": the connect
 *                       rate and CPU per connect of the 500 connects after 1,000, 5,000 and
 *                       19,000 were open, RSS, heap (mallinfo2) and descriptors per connection, the
 *                       idle CPU of both processes while the connections sit (NDK_SCALE_IDLE_S,
 *                       5 s, then while NDK_SCALE_HOLD_FILE exists, up to 300 s).
 *   tcp_scale churn N   N sequential connect / round trip / close cycles to one listener.
 *
 * Both processes raise RLIMIT_NOFILE to the hard limit. Exit status 0 on success. */
#define _GNU_SOURCE
#include "../scale_probe/scale_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 256

static void die(const char *what)
{
    fprintf(stderr, "tcp_scale: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void mem_report(const char *side, struct scale_probe_mem m0, struct scale_probe_mem m1, int n)
{
    printf("scale %s conn_rss_bytes %.0f\n", side, (m1.rss - m0.rss) / n);
    printf("scale %s conn_heap_bytes %.0f\n", side, (m1.heap - m0.heap) / n);
    printf("scale %s conn_fds %.2f\n", side, (m1.fds - m0.fds) / n);
    fflush(stdout);
}

static double idle_hold(void)
{
    const char *e = getenv("NDK_SCALE_IDLE_S"), *hold = getenv("NDK_SCALE_HOLD_FILE");
    uint64_t t0 = now_ns();
    struct stat st;
    usleep((useconds_t)((e ? atof(e) : 5.0) * 1e6));
    for (int i = 0; hold && *hold && i < 3000 && stat(hold, &st) == 0; i++)
        usleep(100000);
    return (double)(now_ns() - t0) / 1e9;
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static struct sockaddr_in loopback(uint16_t port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
}

static int tcp_socket(int nonblock)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0), one = 1;
    if (fd < 0)
        die("socket");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int listen_on(uint16_t *port)
{
    int fd = tcp_socket(1), one = 1;
    struct sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4096) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        die("listen");
    *port = ntohs(a.sin_port);
    return fd;
}

/* Reads exactly n bytes from a blocking socket. */
static int read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

/* ---- server: accepts, answers each connection's 4 bytes, holds it until the peer closes ---- */

static int server(int lfd[2], int n, int ctl_rd, int ctl_wr, int hold)
{
    int ep = epoll_create1(EPOLL_CLOEXEC), live = 0, answered = 0;
    struct epoll_event ev = { .events = EPOLLIN }, evs[256];
    struct scale_probe_mem m0 = scale_probe_mem();
    double c0 = 0;
    uint64_t w0 = 0;
    int reported = 0;

    for (int i = 0; i < 2; i++) {
        ev.data.fd = lfd[i];
        epoll_ctl(ep, EPOLL_CTL_ADD, lfd[i], &ev);
    }
    ev.data.fd = ctl_rd;
    epoll_ctl(ep, EPOLL_CTL_ADD, ctl_rd, &ev);
    for (;;) {
        int k = epoll_wait(ep, evs, 256, -1);
        if (k < 0 && errno == EINTR)
            continue;
        for (int i = 0; i < k; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd[0] || fd == lfd[1]) {
                for (;;) {
                    int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (c < 0)
                        break;
                    ev.events = EPOLLIN;
                    ev.data.fd = c;
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
                    live++;
                }
            } else if (fd == ctl_rd) {
                char b;
                if (read(ctl_rd, &b, 1) != 1 || b == 'q')
                    goto out;
                if (b == 'm') {             /* the client holds all: memory now */
                    mem_report("server", m0, scale_probe_mem(), n);
                    c0 = scale_probe_cpu();
                    w0 = now_ns();
                    reported = 1;
                    if (write(ctl_wr, "m", 1) != 1)
                        die("control");
                } else if (b == 'i' && reported) {
                    printf("scale server idle_cpu_pct %.2f\n", 100.0 * (scale_probe_cpu() - c0) / ((double)(now_ns() - w0) / 1e9));
                    fflush(stdout);
                }
            } else {
                uint32_t v;
                ssize_t r = read(fd, &v, sizeof v);
                if (r == (ssize_t)sizeof v) {
                    if (write(fd, &v, sizeof v) != (ssize_t)sizeof v)
                        die("answer");
                    answered++;
                } else if (r == 0 || (r < 0 && errno != EAGAIN)) {
                    close(fd);
                    live--;
                }
            }
        }
    }
out:
    (void)hold;
    (void)answered;
    (void)live;
    return 0;
}

/* ---- client ---- */

static int hold_client(uint16_t port[2], int n, int ctl_rd, int ctl_wr)
{
    static const int level[] = { 1000, 5000, 19000 };
    uint64_t lt0[3] = { 0, 0, 0 };
    double lc0[3] = { 0, 0, 0 };
    int *fd = calloc((size_t)n, sizeof *fd);
    int ep = epoll_create1(EPOLL_CLOEXEC), started = 0, done = 0;
    struct epoll_event evs[256];
    struct scale_probe_mem m0 = scale_probe_mem();

    while (done < n) {
        while (started < n && started - done < WINDOW) {
            struct sockaddr_in a = loopback(port[started & 1]);
            int s = tcp_socket(1);
            if (connect(s, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS)
                die("connect");
            struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = (uint32_t)started };
            epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
            fd[started++] = s;
        }
        int k = epoll_wait(ep, evs, 256, 10000);
        if (k <= 0)
            die("connections stalled");
        for (int i = 0; i < k; i++) {
            uint32_t idx = evs[i].data.u32;
            int s = fd[idx];
            if (evs[i].events & EPOLLOUT) {
                if (write(s, &idx, sizeof idx) != (ssize_t)sizeof idx)
                    die("request");
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = idx };
                epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev);
            } else {
                uint32_t v;
                if (read(s, &v, sizeof v) != (ssize_t)sizeof v || v != idx)
                    die("answer");
                epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
                done++;
                for (int j = 0; j < 3; j++) {
                    if (done == level[j]) {
                        lt0[j] = now_ns();
                        lc0[j] = scale_probe_cpu();
                    }
                    if (done == level[j] + 500 && lt0[j]) {
                        printf("scale client rate_at_%d %.0f\n", level[j], 500 * 1e9 / (double)(now_ns() - lt0[j]));
                        printf("scale client cpu_us_per_connect_at_%d %.1f\n", level[j], (scale_probe_cpu() - lc0[j]) * 1e6 / 500);
                        fflush(stdout);
                    }
                }
            }
        }
    }
    close(ep);
    mem_report("client", m0, scale_probe_mem(), n);
    char b;
    if (write(ctl_wr, "m", 1) != 1 || read(ctl_rd, &b, 1) != 1)
        die("control");
    double c0 = scale_probe_cpu();
    printf("scale client ready %d\n", n);
    fflush(stdout);
    double secs = idle_hold();
    printf("scale client idle_cpu_pct %.2f\n", 100.0 * (scale_probe_cpu() - c0) / secs);
    fflush(stdout);
    if (write(ctl_wr, "i", 1) != 1)
        die("control");
    for (int i = 0; i < n; i++)
        close(fd[i]);
    free(fd);
    return 0;
}

static int churn_client(uint16_t port, int n)
{
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        struct sockaddr_in a = loopback(port);
        int s = tcp_socket(0);
        uint32_t v = (uint32_t)i, w;
        if (connect(s, (struct sockaddr *)&a, sizeof a) < 0)
            die("churn connect");
        if (write(s, &v, sizeof v) != (ssize_t)sizeof v || read_full(s, &w, sizeof w) < 0 || w != v)
            die("churn round trip");
        close(s);
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    printf("scale client churn_per_s %.0f\n", n / secs);
    printf("churn %d: %.1f s\n", n, secs);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "hold") && strcmp(argv[1], "churn"))) {
        fprintf(stderr, "usage: %s hold|churn N\n", argv[0]);
        return 2;
    }
    int churn = !strcmp(argv[1], "churn"), n = atoi(argv[2]);
    int to_srv[2], to_cli[2], lfd[2];
    uint16_t port[2];

    raise_nofile();
    signal(SIGPIPE, SIG_IGN);
    lfd[0] = listen_on(&port[0]);
    lfd[1] = listen_on(&port[1]);
    if (pipe(to_srv) < 0 || pipe(to_cli) < 0)
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(to_srv[1]);
        close(to_cli[0]);
        exit(server(lfd, n, to_srv[0], to_cli[1], !churn));
    }
    close(lfd[0]);
    close(lfd[1]);
    close(to_srv[0]);
    close(to_cli[1]);
    int rc = churn ? churn_client(port[0], n) : hold_client(port, n, to_cli[0], to_srv[1]);
    if (write(to_srv[1], "q", 1) != 1)
        die("control");
    int st = 0;
    waitpid(pid, &st, 0);
    return rc || !WIFEXITED(st) || WEXITSTATUS(st);
}
