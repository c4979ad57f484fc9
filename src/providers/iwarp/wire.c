/* wire.c - the connection's tap: where a captured or faulted connection's bytes meet its TCP
 * socket (wire.h says what a connection without a tap pays: one branch per hook).
 *
 * Sends. The tap knows the stream offset of every byte it sends and, once the data path owns
 * the socket, where each FPDU starts: an FPDU is its 2-byte MPA ULPDU length, the ULPDU, a pad
 * to 4 bytes and the 4-byte CRC field, zero without CRC (RFC 5044 §4; markers are never negotiated by this
 * provider). Before a send it looks ahead for the next fault point in the bytes it is given
 * and sends only up to it; there it resets the connection, writes a Terminate, or sends a copy
 * with one byte flipped (the consumer's memory is never written). After a send it records what
 * crossed (capture.c) and moves the FPDU tracker by the bytes the kernel took.
 *
 * Receives. A stalled receive direction reports EAGAIN (after a millisecond's sleep, so the
 * level-triggered epoll does not spin the progress thread hot); what is read is recorded. A
 * tapped connection does not lend its reads to the progress thread's io_uring (qp.c / rx.c),
 * so every byte it receives comes through here. */
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fpdu.h"

#define WIRE_COPY_MAX 65536u         /* bytes sent from a private copy around a corrupted byte */
#define WIRE_IOV_MAX 64u             /* pieces per tapped send (the rest goes with the next) */

static uint16_t wire_port(const SOCKADDR_INET *a)
{
    return ntohs(a->si_family == AF_INET6 ? a->Ipv6.sin6_port : a->Ipv4.sin_port);
}

/* Reads the kernel's next send and receive sequence numbers: TCP_REPAIR (CAP_NET_ADMIN) for
 * a moment, then off again without the window probe where the kernel knows TCP_REPAIR_OFF_NO_WP
 * (-1). -errno when not permitted. */
static int wire_kernel_seq(int fd, uint32_t *snd, uint32_t *rcv)
{
    int on = 1, off = -1, q;
    socklen_t len = sizeof *snd;
    int err = 0;

    if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &on, sizeof on) < 0)
        return -errno;
    q = TCP_SEND_QUEUE;
    if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof q) < 0 ||
        getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, snd, &len) < 0)
        err = -errno;
    q = TCP_RECV_QUEUE;
    len = sizeof *rcv;
    if (!err && (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof q) < 0 ||
                 getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, rcv, &len) < 0))
        err = -errno;
    if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &off, sizeof off) < 0) {
        off = 0;
        setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &off, sizeof off);
    }
    return err;
}

struct iw_wire *iw_wire_attach(struct iw_provider *prov, int fd, bool active)
{
    struct iw_wire_prov *wp = prov->wire;
    struct iw_wire *w;
    socklen_t len;
    bool capture;
    int mss = 0;

    if (!wp || (!wp->capture_path[0] && !wp->faults.n))
        return NULL;
    w = calloc(1, sizeof *w);
    if (!w)
        return NULL;                  /* the connection goes on untapped */
    atomic_init(&w->refs, 1);
    w->id = atomic_fetch_add(&wp->conn_seq, 1) + 1;
    w->active = active;
    len = sizeof w->local;
    getsockname(fd, (struct sockaddr *)&w->local, &len);
    len = sizeof w->peer;
    getpeername(fd, (struct sockaddr *)&w->peer, &len);
    capture = wp->capture_path[0] && (!wp->capture_port || wp->capture_port == wire_port(&w->local));
    if (wp->faults.n)
        iw_fault_bind(w, &wp->faults, wire_port(&w->local));
    if (capture) {
        pthread_mutex_lock(&wp->lock);
        if (!wp->file && !wp->file_failed) {
            wp->file = iw_pcapng_open(wp->capture_path);
            wp->file_failed = !wp->file;
        }
        w->file = wp->file;
        pthread_mutex_unlock(&wp->lock);
    }
    if (!w->file && !w->nact) {
        free(w);
        return NULL;
    }
    if (w->file) {
        uint32_t snd, rcv, isn[2];
        int inq = 0;
        len = sizeof mss;
        getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len);
        w->mss = mss > 0 ? (uint32_t)mss : 1460u;
        /* At setup nothing was sent yet; the peer's first bytes (the Request) may be queued. */
        if (wire_kernel_seq(fd, &snd, &rcv) == 0 && ioctl(fd, FIONREAD, &inq) == 0) {
            isn[0] = snd - 1;
            isn[1] = rcv - (uint32_t)inq - 1;
        } else {
            if (getrandom(isn, sizeof isn, GRND_NONBLOCK) != sizeof isn) {
                uint64_t r = iw_now_ns();
                isn[0] = (uint32_t)r;
                isn[1] = (uint32_t)(r >> 32) * 2654435761u;
            }
            iw_warn("capture: CONN#%u: the kernel's sequence numbers need CAP_NET_ADMIN (TCP_REPAIR); "
                    "random initial sequence numbers instead", w->id);
        }
        iw_capture_handshake(w, isn[0], isn[1]);
    }
    return w;
}

void iw_wire_get(struct iw_wire *w)
{
    atomic_fetch_add(&w->refs, 1);
}

void iw_wire_put(struct iw_wire *w)
{
    if (!w || atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    if (w->file)
        iw_pcapng_flush(w->file);
    free(w);
}

void iw_wire_data_start(struct iw_wire *w, bool crc)
{
    w->data = true;
    w->crc = crc;
    w->data_start = w->fpdu_next = w->tx_bytes;
}

/* ---- the FPDU tracker over the TX stream ---- */

struct wire_trk {
    uint64_t next, no;
    uint8_t hi;
    bool split;
};

static uint8_t iov_byte(const struct iovec *iov, size_t cnt, size_t rel)
{
    for (size_t i = 0; i < cnt; i++) {
        if (rel < iov[i].iov_len)
            return ((const uint8_t *)iov[i].iov_base)[rel];
        rel -= iov[i].iov_len;
    }
    return 0;
}

/* The CRC field is on the wire whether CRC was negotiated or not (zero when not, RFC 5044 §4.1). */
static uint64_t fpdu_wire_len(uint32_t ulpdu, bool crc)
{
    uint32_t n = 2 + ulpdu;
    (void)crc;
    return n + (4 - n % 4) % 4 + IW_MPA_CRC_SIZE;
}

/* Walks the tracker over bytes [base, base + n) of the stream; when FPDU number want starts in
 * them, *at gets its offset and *flen its length (0 when its length lies beyond). */
static bool trk_walk(struct wire_trk *t, bool crc, const struct iovec *iov, size_t cnt, uint64_t base, size_t n,
                     uint64_t want, uint64_t *at, uint64_t *flen)
{
    uint64_t end = base + n;
    bool found = false;

    for (;;) {
        if (t->split) {
            if (t->next + 1 >= end)
                break;
            t->next += fpdu_wire_len((uint32_t)t->hi << 8 | iov_byte(iov, cnt, t->next + 1 - base), crc);
            t->split = false;
            continue;
        }
        if (t->next >= end)
            break;
        t->no++;
        uint8_t hi = iov_byte(iov, cnt, t->next - base);
        if (t->no == want) {
            found = true;
            *at = t->next;
            *flen = 0;
        }
        if (t->next + 1 >= end) {
            t->split = true;
            t->hi = hi;
            break;
        }
        uint64_t len = fpdu_wire_len((uint32_t)hi << 8 | iov_byte(iov, cnt, t->next + 1 - base), crc);
        if (t->no == want)
            *flen = len;
        t->next += len;
    }
    return found;
}

static struct wire_trk trk_of(const struct iw_wire *w)
{
    return (struct wire_trk){ .next = w->fpdu_next, .no = w->fpdu_no, .hi = w->len_hi, .split = w->len_split };
}

static void trk_store(struct iw_wire *w, const struct wire_trk *t)
{
    w->fpdu_next = t->next;
    w->fpdu_no = t->no;
    w->len_hi = t->hi;
    w->len_split = t->split;
}

/* n bytes of v went out: recorded, and the FPDU tracker moves past them. The sender. */
static void wire_sent(struct iw_wire *w, const struct iovec *v, size_t cnt, size_t n)
{
    struct wire_trk t = trk_of(w);
    uint64_t at, fl;

    if (w->file)
        iw_capture_bytes(w, true, v, cnt, n);
    if (w->data) {
        trk_walk(&t, w->crc, v, cnt, w->tx_bytes, n, 0, &at, &fl);
        trk_store(w, &t);
    }
    w->tx_bytes += (uint64_t)n;
}

/* ---- faults at the send ---- */

static void wire_log(const struct iw_wire *w, const struct iw_fault_act *a, const char *what)
{
    char l[INET6_ADDRSTRLEN + 8] = "?", p[INET6_ADDRSTRLEN + 8] = "?";
    const SOCKADDR_INET *sa[2] = { &w->local, &w->peer };
    char *out[2] = { l, p };

    for (int i = 0; i < 2; i++) {
        char ip[INET6_ADDRSTRLEN] = "?";
        const void *addr = sa[i]->si_family == AF_INET6 ? (const void *)&sa[i]->Ipv6.sin6_addr
                                                          : (const void *)&sa[i]->Ipv4.sin_addr;
        inet_ntop(sa[i]->si_family, addr, ip, sizeof ip);
        snprintf(out[i], sizeof l, sa[i]->si_family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, wire_port(sa[i]));
    }
    iw_warn("wire fault: CONN#%u %s -> %s: %s (rule \"%s\")", w->id, l, p, what, a->rule->text);
}

/* Resets the connection now: connect(AF_UNSPEC) makes the kernel send an RST and keeps the
 * descriptor (its owner closes it as after any reset). Made as a raw system call because
 * ThreadSanitizer's connect() wrapper records a successful connect as the birth of a new
 * descriptor, a write that "races" the progress thread's epoll_ctl on the same socket, when
 * this one only changes the socket's state, as a send() on it would. Context: iw_wire_send's. */
static ssize_t wire_reset(struct iw_wire *w, int fd)
{
    struct sockaddr sa = { .sa_family = AF_UNSPEC };

    w->reset_done = true;
    if (syscall(SYS_connect, fd, &sa, sizeof sa) < 0)
        iw_dbg("wire fault: connect(AF_UNSPEC): %s", strerror(errno));
    if (w->file)
        iw_capture_reset(w);
    errno = ECONNRESET;
    return -1;
}

/* Writes a Terminate (RFC 5040 §4.8) ahead of the FPDU about to go; afterwards the data path's
 * sends are swallowed (RFC 5040 §5.3: nothing follows a Terminate). */
static void wire_terminate(struct iw_wire *w, int fd, const struct iw_fault_act *a)
{
    struct iw_fpdu_term t;
    uint8_t buf[IW_FPDU_MAX_BUFFERED + IW_MPA_CRC_SIZE + 8];
    int n;

    memset(&t, 0, sizeof t);
    t.layer = a->rule->layer;
    t.etype = a->rule->etype;
    t.ecode = a->rule->ecode;
    n = iw_fpdu_build_term(&t, w->crc, buf, sizeof buf);
    if (n > 0) {
        struct iovec v = { buf, (size_t)n };
        ssize_t k = send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k > 0)
            wire_sent(w, &v, 1, (size_t)k);
    }
}

static size_t iov_total(const struct iovec *iov, size_t cnt)
{
    size_t n = 0;
    for (size_t i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    return n;
}

/* The first cnt-limited part of iov holding lim bytes, in out (at most cnt entries). */
static size_t iov_limit(const struct iovec *iov, size_t cnt, size_t lim, struct iovec *out)
{
    size_t k = 0;
    for (; k < cnt && lim; k++) {
        out[k] = iov[k];
        if (out[k].iov_len > lim)
            out[k].iov_len = lim;
        lim -= out[k].iov_len;
    }
    return k;
}

static bool wire_sleep_until(uint64_t until_ms)
{
    if (iw_now_ms() >= until_ms)
        return false;
    usleep(1000);
    errno = EAGAIN;
    return true;
}

ssize_t iw_wire_send(struct iw_wire *w, int fd, const struct iovec *iov, size_t cnt, bool data)
{
    size_t total = iov_total(iov, cnt), lim = total;
    uint64_t base = w->tx_bytes;
    struct iw_fault_act *cut = NULL, *flip = NULL;
    uint64_t flip_pos = 0;
    uint8_t *copy = NULL;
    ssize_t n;

    if (w->reset_done) {
        errno = ECONNRESET;
        return -1;
    }
    if (w->stall_until_ms[0] && wire_sleep_until(w->stall_until_ms[0]))
        return -1;
    for (unsigned i = 0; i < w->nact; i++) {
        struct iw_fault_act *a = &w->act[i];
        const struct iw_fault_rule *r = a->rule;
        struct wire_trk t = trk_of(w);
        uint64_t at = 0, flen = 0;

        if (r->kind == IW_FAULT_STALL && r->rx)
            continue;                 /* the receiver's: its state is the receiver's alone */
        if (a->done && !(r->kind == IW_FAULT_TERMINATE || r->kind == IW_FAULT_DROP_REPLY))
            continue;
        switch (r->kind) {
        case IW_FAULT_STALL:
            if (r->rx || base < a->at)
                break;
            a->done = true;
            w->stall_until_ms[0] = iw_now_ms() + a->ms;
            wire_log(w, a, "stalling the send direction");
            errno = EAGAIN;
            return -1;
        case IW_FAULT_DROP_REPLY:
        case IW_FAULT_DELAY_REPLY:
            if (data || w->active || base)
                break;                /* only the responder's first frame: the Reply */
            if (r->kind == IW_FAULT_DROP_REPLY) {
                if (!a->done)
                    wire_log(w, a, "dropping the MPA Reply");
                a->done = true;
                return (ssize_t)total;   /* swallowed: the peer never sees it */
            }
            if (!w->reply_hold_until_ms) {
                w->reply_hold_until_ms = iw_now_ms() + a->ms;
                wire_log(w, a, "holding the MPA Reply");
            }
            if (wire_sleep_until(w->reply_hold_until_ms))
                return -1;
            a->done = true;
            break;
        case IW_FAULT_RESET:
            if (r->has_bytes) {
                if (a->at >= base && a->at - base < lim) {
                    lim = (size_t)(a->at - base);
                    cut = a;
                }
            } else if (data && trk_walk(&t, w->crc, iov, cnt, base, total, a->at, &at, &flen) && at - base < lim) {
                lim = (size_t)(at - base);
                cut = a;
            }
            break;
        case IW_FAULT_TERMINATE:
            if (a->done) {
                if (data)
                    return (ssize_t)total;   /* swallowed after our Terminate */
                break;
            }
            if (data && trk_walk(&t, w->crc, iov, cnt, base, total, a->at, &at, &flen) && at - base < lim) {
                lim = (size_t)(at - base);
                cut = a;
            }
            break;
        case IW_FAULT_CORRUPT:
            if (!data)
                break;
            if (!a->found && trk_walk(&t, w->crc, iov, cnt, base, total, a->at, &at, &flen)) {
                /* unless offset= says, a byte after the MPA length, CRC and pad included */
                uint64_t off = a->offset != UINT32_MAX ? a->offset : flen > 2 ? 2 + a->xor % (flen - 2) : 2;
                if (flen && off >= flen)
                    off = flen - 1;
                a->pos = at + off;
                a->offset = (uint32_t)off;
                a->found = true;
            }
            if (a->found && a->pos >= base && a->pos - base < lim) {
                flip = a;
                flip_pos = a->pos;
            }
            break;
        }
    }
    if (cut && lim == 0) {
        cut->done = true;
        if (cut->rule->kind == IW_FAULT_TERMINATE) {
            wire_log(w, cut, "sending a Terminate in place of the FPDU");
            wire_terminate(w, fd, cut);
            return (ssize_t)total;
        }
        wire_log(w, cut, "resetting the connection");
        return wire_reset(w, fd);
    }
    struct iovec lv[WIRE_IOV_MAX];
    size_t lcnt = iov_limit(iov, cnt < WIRE_IOV_MAX ? cnt : WIRE_IOV_MAX, lim, lv);
    if (flip) {
        size_t len = lim < WIRE_COPY_MAX ? lim : WIRE_COPY_MAX;
        if (flip_pos - base >= len) {
            lcnt = iov_limit(iov, cnt < WIRE_IOV_MAX ? cnt : WIRE_IOV_MAX, (size_t)(flip_pos - base), lv);
            flip = NULL;
        } else if ((copy = malloc(len)) != NULL) {
            size_t o = 0;
            for (size_t i = 0; i < lcnt && o < len; i++) {
                size_t k = lv[i].iov_len < len - o ? lv[i].iov_len : len - o;
                memcpy(copy + o, lv[i].iov_base, k);
                o += k;
            }
            copy[flip_pos - base] ^= flip->xor;
            lv[0].iov_base = copy;
            lv[0].iov_len = len;
            lcnt = 1;
        } else {
            flip = NULL;              /* no memory: try again at the next send */
            lcnt = iov_limit(iov, cnt, (size_t)(flip_pos - base), lv);
        }
    }
    if (!lcnt) {
        errno = EAGAIN;
        return -1;
    }
    struct msghdr m = { .msg_iov = lv, .msg_iovlen = lcnt };
    n = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
        wire_sent(w, lv, lcnt, (size_t)n);
        if (flip && flip_pos < base + (uint64_t)n) {
            char what[96];
            flip->done = true;
            snprintf(what, sizeof what, "flipped byte %u of FPDU %llu (stream offset %llu, data from %llu; xor 0x%02x)",
                     flip->offset, (unsigned long long)flip->at, (unsigned long long)flip_pos,
                     (unsigned long long)w->data_start, flip->xor);
            wire_log(w, flip, what);
        }
    }
    free(copy);
    return n;
}

ssize_t iw_wire_recv(struct iw_wire *w, int fd, const struct iovec *iov, size_t cnt)
{
    ssize_t n;

    if (w->stall_until_ms[1] && wire_sleep_until(w->stall_until_ms[1]))
        return -1;
    for (unsigned i = 0; i < w->nact; i++) {
        struct iw_fault_act *a = &w->act[i];
        if (a->rule->kind != IW_FAULT_STALL || !a->rule->rx || a->done || w->rx_bytes < a->at)
            continue;                 /* the sender's acts are never read here (no lock between them) */
        a->done = true;
        w->stall_until_ms[1] = iw_now_ms() + a->ms;
        wire_log(w, a, "stalling the receive direction");
        errno = EAGAIN;
        return -1;
    }
    struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = cnt };
    n = recvmsg(fd, &m, MSG_DONTWAIT);
    if (n > 0) {
        if (w->file)
            iw_capture_bytes(w, false, iov, cnt, (size_t)n);
        w->rx_bytes += (uint64_t)n;
    }
    return n;
}

void iw_wire_received(struct iw_wire *w, const void *buf, size_t n)
{
    struct iovec v = { (void *)buf, n };

    if (w->file && n)
        iw_capture_bytes(w, false, &v, 1, n);
    w->rx_bytes += n;
}
