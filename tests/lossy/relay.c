/* A lossy link between two network namespaces, for the loss/reorder/delay test (the kernel here
 * has no netem qdisc). It creates one TUN device in each namespace and forwards IP packets
 * between them, dropping, reordering and delaying them with fixed probabilities.
 *
 *   ndk_lossy_relay NETNS_A NETNS_B IFNAME [--drop PCT] [--reorder PCT] [--delay-us US]
 *                   [--hold-us US] [--seed N] [--lifetime S] [--stats FILE]
 *
 * NETNS_A / NETNS_B are namespace files (/proc/PID/ns/net). Every packet is held delay-us;
 * a reordered one is held hold-us longer, so the packets behind it overtake it. The relay prints
 * "ready" on stdout once both devices exist (the caller then configures them with ip), and
 * ends on SIGTERM / SIGINT, when its parent goes away, or after lifetime seconds, whichever
 * comes first; it then prints its counters (and writes them to FILE). Its queues are bounded:
 * when one is full, packets are dropped and counted as overflow. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PKT_MAX   2048          /* the devices run with MTU 1500 */
#define RING_MAX  1024          /* packets held at once per ring */

struct pkt {
    uint64_t due_ns;
    uint16_t len;
    uint8_t  data[PKT_MAX];
};

/* Four FIFOs: per destination, packets on time and packets held back. Release times within
 * one ring only grow (arrival time plus a constant), so the next packet due is at one of the
 * four heads. */
struct ring {
    struct pkt p[RING_MAX];
    size_t head, n;
};

static volatile sig_atomic_t stop;
static struct ring rings[2][2];         /* [destination][held] */

static struct {
    uint64_t in[2], out[2], dropped, reordered, overflow, write_err;
} st;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: reproducible from --seed, which the test prints. */
static uint64_t rng;
static unsigned rnd_permille(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (unsigned)((rng * 2685821657736338717ull) >> 33) % 1000;
}

static void die(const char *what)
{
    fprintf(stderr, "relay: %s: %s\n", what, strerror(errno));
    exit(1);
}

static ino_t ns_inode(const char *nsfile)
{
    struct stat sb;
    if (stat(nsfile, &sb) != 0)
        die(nsfile);
    return sb.st_ino;
}

/* Enters the namespace in nsfile, creates TUN device name there, returns its fd. The device
 * must never land in the namespace the relay was started in (the machine's own network). */
static int tun_in(const char *nsfile, const char *name, ino_t home)
{
    if (ns_inode(nsfile) == home) {
        fprintf(stderr, "relay: %s is the namespace the relay started in; refusing\n", nsfile);
        exit(1);
    }
    int ns = open(nsfile, O_RDONLY | O_CLOEXEC);
    if (ns < 0)
        die(nsfile);
    if (setns(ns, CLONE_NEWNET) != 0)
        die("setns");
    close(ns);
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        die("/dev/net/tun");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) != 0)
        die("TUNSETIFF");
    return fd;
}

static void enqueue(int to, bool held, const uint8_t *p, size_t len, uint64_t due)
{
    struct ring *r = &rings[to][held];
    if (r->n == RING_MAX) {
        st.overflow++;
        return;
    }
    struct pkt *q = &r->p[(r->head + r->n++) % RING_MAX];
    q->due_ns = due;
    q->len = (uint16_t)len;
    memcpy(q->data, p, len);
}

/* Writes every due packet to its device, earliest first; returns the next due time
 * (UINT64_MAX when nothing is held). */
static uint64_t release(const int fd[2], uint64_t now)
{
    for (;;) {
        struct ring *best = NULL;
        for (int to = 0; to < 2; to++)
            for (int h = 0; h < 2; h++) {
                struct ring *r = &rings[to][h];
                if (r->n && (!best || r->p[r->head].due_ns < best->p[best->head].due_ns))
                    best = r;
            }
        if (!best)
            return UINT64_MAX;
        struct pkt *q = &best->p[best->head];
        if (q->due_ns > now)
            return q->due_ns;
        int to = best == &rings[0][0] || best == &rings[0][1] ? 0 : 1;
        if (write(fd[to], q->data, q->len) == (ssize_t)q->len)
            st.out[to]++;
        else
            st.write_err++;
        best->head = (best->head + 1) % RING_MAX;
        best->n--;
    }
}

static void print_stats(FILE *f)
{
    fprintf(f, "relay: a->b in %llu out %llu, b->a in %llu out %llu, dropped %llu, reordered %llu, "
               "overflow %llu, write errors %llu\n",
            (unsigned long long)st.in[0], (unsigned long long)st.out[1], (unsigned long long)st.in[1],
            (unsigned long long)st.out[0], (unsigned long long)st.dropped, (unsigned long long)st.reordered,
            (unsigned long long)st.overflow, (unsigned long long)st.write_err);
}

int main(int argc, char **argv)
{
    unsigned drop = 10, reorder = 50;        /* per mille */
    uint64_t delay_ns = 1000000, hold_ns = 2000000;
    unsigned lifetime = 300;
    const char *stats = NULL;
    rng = 0x9E3779B97F4A7C15ull;

    if (argc < 4) {
        fprintf(stderr, "usage: %s NETNS_A NETNS_B IFNAME [--drop PCT] [--reorder PCT] [--delay-us US] "
                        "[--hold-us US] [--seed N] [--lifetime S] [--stats FILE]\n", argv[0]);
        return 2;
    }
    for (int i = 4; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "--drop"))
            drop = (unsigned)(atof(v) * 10 + 0.5);
        else if (!strcmp(o, "--reorder"))
            reorder = (unsigned)(atof(v) * 10 + 0.5);
        else if (!strcmp(o, "--delay-us"))
            delay_ns = strtoull(v, NULL, 0) * 1000;
        else if (!strcmp(o, "--hold-us"))
            hold_ns = strtoull(v, NULL, 0) * 1000;
        else if (!strcmp(o, "--seed"))
            rng = strtoull(v, NULL, 0) | 1;
        else if (!strcmp(o, "--lifetime"))
            lifetime = (unsigned)strtoul(v, NULL, 0);
        else if (!strcmp(o, "--stats"))
            stats = v;
        else {
            fprintf(stderr, "relay: unknown option %s\n", o);
            return 2;
        }
    }
    pid_t parent = getppid();
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);

    ino_t home = ns_inode("/proc/self/ns/net");
    if (ns_inode(argv[1]) == ns_inode(argv[2])) {
        fprintf(stderr, "relay: both ends are the same namespace\n");
        return 1;
    }
    int fd[2] = { tun_in(argv[1], argv[3], home), tun_in(argv[2], argv[3], home) };
    printf("ready\n");
    fflush(stdout);

    uint64_t end = now_ns() + (uint64_t)lifetime * 1000000000u, next = UINT64_MAX;
    static uint8_t buf[PKT_MAX];
    while (!stop && getppid() == parent) {
        uint64_t now = now_ns();
        if (now >= end)
            break;
        /* Wake for the next release, and at least every 100 ms to notice the end. */
        uint64_t wait = 100000000;
        if (next != UINT64_MAX)
            wait = next > now ? (next - now < wait ? next - now : wait) : 0;
        struct timespec ts = { (time_t)(wait / 1000000000u), (long)(wait % 1000000000u) };
        struct pollfd pfd[2] = { { fd[0], POLLIN, 0 }, { fd[1], POLLIN, 0 } };
        if (ppoll(pfd, 2, &ts, NULL) < 0 && errno != EINTR)
            die("ppoll");
        now = now_ns();
        for (int from = 0; from < 2; from++) {
            /* At most a queue's worth per wake-up, so release() runs between bursts. */
            for (int k = 0; k < RING_MAX; k++) {
                ssize_t n = read(fd[from], buf, sizeof buf);
                if (n <= 0)
                    break;
                st.in[from]++;
                if (rnd_permille() < drop) {
                    st.dropped++;
                    continue;
                }
                bool held = rnd_permille() < reorder;
                st.reordered += held;
                enqueue(!from, held, buf, (size_t)n, now + delay_ns + (held ? hold_ns : 0));
            }
        }
        next = release(fd, now_ns());
    }
    print_stats(stdout);
    fflush(stdout);
    if (stats) {
        FILE *f = fopen(stats, "w");
        if (f) {
            print_stats(f);
            fclose(f);
        }
    }
    return 0;
}
