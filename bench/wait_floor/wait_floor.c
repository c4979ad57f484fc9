/* wait_floor: what the way a thread waits for a TCP message costs, apart from any RDMA stack.
 * Two processes play ping-pong over loopback TCP with SIZE-byte messages; both wait for the next
 * message the same way:
 *   recv   a blocking recv() on the one socket (sockperf's blocking mode: one call that waits
 *          and reads);
 *   epoll  epoll_wait() on a set holding the socket and an eventfd, then recv() (what a progress
 *          thread serving many sockets, timers and wake-ups does: the iwarp provider's loop
 *          without io_uring, progress_ring=0);
 *   uring  one io_uring_enter() that submits a receive and waits for it, beside a poll of an
 *          eventfd (a wait that also reads, still able to wake for other work: the iwarp
 *          provider's progress thread with progress_ring=1, its default).
 * Every answer goes out with send(). The median round trip, halved, is the floor a blocking
 * provider's latency sits on for that wait: docs/performance.md.
 *
 *   wait_floor --wait recv|epoll|uring [-z SIZE] [-t SECONDS] [--cpus SERVER,CLIENT] [--json]
 *
 * The first tenth of the run is warm-up and not counted. Built by bench/run.sh, with liburing
 * when pkg-config finds it (WAIT_FLOOR_URING); without it, --wait uring exits with status 3. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef WAIT_FLOOR_URING
#include <liburing.h>
#endif

enum wf_mode { WF_RECV, WF_EPOLL, WF_URING };
static const char *const wf_mode_name[] = { "recv", "epoll", "uring" };

#define WF_MAX_SAMPLES (64u << 20)

/* One side's way of waiting; set up once per process. */
struct wf_waiter {
    enum wf_mode mode;
    int fd;
    int epfd;
    int evfd;
    const char *uring_setup;   /* flags the ring was created with */
#ifdef WAIT_FLOOR_URING
    struct io_uring ring;
#endif
};

static void wf_die(const char *what)
{
    fprintf(stderr, "wait_floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double wf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void wf_pin(int cpu)
{
    cpu_set_t set;

    if (cpu < 0)
        return;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) < 0)
        wf_die("sched_setaffinity");
}

static void wf_waiter_init(struct wf_waiter *w, enum wf_mode mode, int fd)
{
    w->mode = mode;
    w->fd = fd;
    w->epfd = w->evfd = -1;
    w->uring_setup = NULL;
    if (mode == WF_RECV)
        return;
    /* The others wait beside a wake-up descriptor, as a thread that has more than one source
     * must; it never fires here, but the kernel checks it on every wait. */
    w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->evfd < 0)
        wf_die("eventfd");
    if (mode == WF_EPOLL) {
        struct epoll_event s = { .events = EPOLLIN, .data.fd = fd };
        struct epoll_event e = { .events = EPOLLIN, .data.fd = w->evfd };
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (w->epfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &s) < 0 ||
            epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &e) < 0)
            wf_die("epoll");
        return;
    }
#ifdef WAIT_FLOOR_URING
    /* The cheapest completion path the kernel offers a single waiter: completions run when this
     * thread waits rather than by interrupting it (6.1 and later); older kernels get plain. */
    struct io_uring_params p = { .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN };
    int r = io_uring_queue_init_params(8, &w->ring, &p);
    w->uring_setup = "single_issuer,defer_taskrun";
    if (r == -EINVAL) {
        memset(&p, 0, sizeof p);
        r = io_uring_queue_init_params(8, &w->ring, &p);
        w->uring_setup = "none";
    }
    if (r < 0) {
        errno = -r;
        wf_die("io_uring_queue_init");
    }
    (void)io_uring_register_ring_fd(&w->ring);   /* saves a descriptor lookup per call when it works */
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    io_uring_prep_poll_add(sqe, w->evfd, POLLIN);
    io_uring_sqe_set_data64(sqe, 2);
#endif
}

#ifdef WAIT_FLOOR_URING
/* One io_uring_enter that submits a receive of up to len bytes and waits for it; returns the
 * count (0 at the peer's close) or -1 with errno set. The eventfd poll never completes here. */
static ssize_t wf_uring_recv(struct wf_waiter *w, uint8_t *buf, size_t len)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    int s;

    io_uring_prep_recv(sqe, w->fd, buf, len, 0);
    io_uring_sqe_set_data64(sqe, 1);
    s = io_uring_submit_and_wait(&w->ring, 1);
    if (s < 0) {
        errno = -s;
        wf_die("io_uring_submit_and_wait");
    }
    for (;;) {
        struct io_uring_cqe *cqe;
        s = io_uring_wait_cqe(&w->ring, &cqe);
        if (s < 0) {
            errno = -s;
            wf_die("io_uring_wait_cqe");
        }
        bool ours = io_uring_cqe_get_data64(cqe) == 1;
        int res = cqe->res;
        io_uring_cqe_seen(&w->ring, cqe);
        if (!ours)
            continue;
        if (res < 0) {
            errno = -res;
            return -1;
        }
        return res;
    }
}
#endif

/* Reads up to len bytes into buf the waiter's way; returns the count, 0 at the peer's close. */
static ssize_t wf_wait_read(struct wf_waiter *w, uint8_t *buf, size_t len)
{
    for (;;) {
        ssize_t r;
        if (w->mode == WF_RECV) {
            r = recv(w->fd, buf, len, 0);
#ifdef WAIT_FLOOR_URING
        } else if (w->mode == WF_URING) {
            r = wf_uring_recv(w, buf, len);
#endif
        } else {                                  /* WF_EPOLL (main refuses uring without liburing) */
            struct epoll_event ev[8];
            if (epoll_wait(w->epfd, ev, 8, -1) < 0) {
                if (errno == EINTR)
                    continue;
                wf_die("epoll_wait");
            }
            r = recv(w->fd, buf, len, MSG_DONTWAIT);
            if (r < 0 && errno == EAGAIN)
                continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            wf_die("recv");
        return r;
    }
}

/* Reads exactly len bytes; false at the peer's close. */
static bool wf_read_all(struct wf_waiter *w, uint8_t *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t r = wf_wait_read(w, buf + got, len - got);
        if (r == 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

/* Sends len bytes; the socket may be non-blocking, so a full buffer waits in poll(). */
static void wf_send_all(int fd, const uint8_t *buf, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t r = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = { .fd = fd, .events = POLLOUT };
            (void)poll(&p, 1, -1);
            continue;
        }
        if (r < 0)
            wf_die("send");
        off += (size_t)r;
    }
}

static int wf_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void wf_usage(void)
{
    fprintf(stderr, "usage: wait_floor --wait recv|epoll|uring [-z SIZE] [-t SECONDS] [--cpus SERVER,CLIENT] [--json]\n");
    exit(2);
}

static size_t wf_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);

    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    if (*end || v == 0 || v > (64u << 20))
        wf_usage();
    return (size_t)v;
}

int main(int argc, char **argv)
{
    int mode = -1, scpu = -1, ccpu = -1, json = 0, one = 1;
    size_t size = 8;
    double secs = 1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (!v)
            wf_usage();
        i++;
        if (!strcmp(a, "--wait")) {
            for (int m = 0; m < 3; m++)
                if (!strcmp(v, wf_mode_name[m]))
                    mode = m;
        } else if (!strcmp(a, "-z")) {
            size = wf_size(v);
        } else if (!strcmp(a, "-t")) {
            secs = atof(v);
        } else if (!strcmp(a, "--cpus")) {
            if (sscanf(v, "%d,%d", &scpu, &ccpu) != 2)
                wf_usage();
        } else {
            wf_usage();
        }
    }
    if (mode < 0 || !(secs > 0))
        wf_usage();
#ifndef WAIT_FLOOR_URING
    if (mode == WF_URING) {
        fprintf(stderr, "wait_floor: --wait uring: built without liburing (apt-get install liburing-dev)\n");
        return 3;
    }
#endif

    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(ls, (struct sockaddr *)&a, &alen) < 0 ||
        listen(ls, 1) < 0)
        wf_die("listen on 127.0.0.1");
    uint8_t *buf = calloc(1, size);
    if (!buf)
        wf_die("calloc");

    pid_t child = fork();
    if (child < 0)
        wf_die("fork");
    if (child == 0) {   /* the server: answers every message until the client closes */
        struct wf_waiter w;
        wf_pin(scpu);
        int s = accept4(ls, NULL, NULL, SOCK_CLOEXEC | (mode == WF_RECV ? 0 : SOCK_NONBLOCK));
        if (s < 0)
            wf_die("accept");
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        wf_waiter_init(&w, (enum wf_mode)mode, s);
        while (wf_read_all(&w, buf, size))
            wf_send_all(s, buf, size);
        _exit(0);
    }
    close(ls);
    wf_pin(ccpu);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) < 0)
        wf_die("connect");
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (mode != WF_RECV && fcntl(c, F_SETFL, O_NONBLOCK) < 0)
        wf_die("fcntl");
    struct wf_waiter w;
    wf_waiter_init(&w, (enum wf_mode)mode, c);

    size_t cap = 1u << 16, n = 0, trips = 0;
    float *rtt = malloc(cap * sizeof *rtt);
    if (!rtt)
        wf_die("malloc");
    double t0 = wf_now_ns(), warm = t0 + secs * 1e8, end = t0 + secs * 1e9, t = t0;
    while (t < end) {
        double s0 = t;
        wf_send_all(c, buf, size);
        if (!wf_read_all(&w, buf, size)) {
            fprintf(stderr, "wait_floor: the server closed the connection\n");
            return 1;
        }
        t = wf_now_ns();
        trips++;
        if (s0 < warm || n == WF_MAX_SAMPLES)
            continue;
        if (n == cap) {
            float *more = realloc(rtt, 2 * cap * sizeof *rtt);
            if (!more)
                wf_die("realloc");
            rtt = more;
            cap *= 2;
        }
        rtt[n++] = (float)(t - s0);
    }
    close(c);
    int st = 0;
    if (waitpid(child, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "wait_floor: the server failed (status %d)\n", st);
        return 1;
    }
    if (n == 0) {
        fprintf(stderr, "wait_floor: no round trip after the warm-up\n");
        return 1;
    }
    qsort(rtt, n, sizeof *rtt, wf_cmp);
    double med = rtt[n / 2] / 2000.0, p99 = rtt[n * 99 / 100] / 2000.0;
    if (json)
        printf("{\"tool\":\"wait_floor\",\"wait\":\"%s\",\"uring_setup\":%s%s%s,\"size\":%zu,\"seconds\":%g,"
               "\"round_trips\":%zu,\"counted\":%zu,\"median_us\":%.3f,\"p99_us\":%.3f}\n",
               wf_mode_name[mode], w.uring_setup ? "\"" : "", w.uring_setup ? w.uring_setup : "null",
               w.uring_setup ? "\"" : "", size, secs, trips, n, med, p99);
    else
        printf("%s, %zu B: one-way %.2f us median, %.2f us p99 (%zu round trips counted of %zu)\n",
               wf_mode_name[mode], size, med, p99, n, trips);
    free(rtt);
    free(buf);
    return 0;
}
