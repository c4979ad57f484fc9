/* capture.c - a tapped connection's bytes as Ethernet/IP/TCP frames in the capture file
 * (pcapng.c), so that Wireshark and tshark reassemble the TCP stream and find MPA, DDP and
 * RDMAP on it (docs/diagnostics.md).
 *
 * What is real and what is made up:
 *   - addresses and ports are the socket's (getsockname / getpeername);
 *   - sequence numbers are the kernel's: wire.c reads both initial sequence numbers at setup
 *     with TCP_REPAIR + TCP_QUEUE_SEQ, which needs CAP_NET_ADMIN; without it each connection
 *     gets a random ISN per direction (logged once), consistent within the file only;
 *   - segments are cut at the connection's MSS (TCP_MAXSEG), in the order our send() and
 *     recv() calls moved the bytes: one frame is not one kernel segment, but every payload
 *     byte is where the kernel's sequence space puts it;
 *   - the handshake (SYN, SYN-ACK, ACK) is synthesized at setup, because tshark finds MPA only
 *     by its heuristic on the MPA Request and Reply and wants the stream from its start;
 *   - MAC addresses are 02:00:00:00:00:01 (local) and 02:00:00:00:00:02 (peer); ACK numbers are
 *     what we had received when the frame was recorded; the window is 65535; the IPv4 and TCP
 *     checksums are computed. */
#include "wire.h"

#include <arpa/inet.h>
#include <string.h>
#include <time.h>

#define CAP_ETH 14u
#define CAP_IP4 20u
#define CAP_IP6 40u
#define CAP_TCP 20u
#define CAP_HDR_MAX (CAP_ETH + CAP_IP6 + CAP_TCP + 4u)
#define CAP_PIECES 64u

#define TCPF_SYN 0x02u
#define TCPF_RST 0x04u
#define TCPF_PSH 0x08u
#define TCPF_ACK 0x10u

static uint64_t cap_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* One's complement sum (RFC 1071) of p[0..n) continuing *odd (an odd byte pending). */
static uint32_t cap_sum(uint32_t sum, const uint8_t *p, size_t n, bool *odd)
{
    size_t i = 0;

    if (*odd && n) {
        sum += p[0];
        i = 1;
        *odd = false;
    }
    for (; i + 1 < n; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    if (i < n) {
        sum += (uint32_t)p[i] << 8;
        *odd = true;
    }
    while (sum >> 16)
        sum = (sum & 0xffffu) + (sum >> 16);
    return sum;
}

static void put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32be(uint8_t *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v);
}

/* Writes one frame: TCP flags, seq, ack from the direction's view, payload pl (len bytes). */
static void cap_frame(struct iw_wire *w, bool tx, uint8_t flags, uint32_t seq, uint32_t ack, const struct iovec *pl,
                      size_t plcnt, size_t len)
{
    static const uint8_t mac_local[6] = { 2, 0, 0, 0, 0, 1 }, mac_peer[6] = { 2, 0, 0, 0, 0, 2 };
    const SOCKADDR_INET *src = tx ? &w->local : &w->peer, *dst = tx ? &w->peer : &w->local;
    bool v6 = w->local.si_family == AF_INET6;
    uint8_t h[CAP_HDR_MAX];
    size_t iplen = v6 ? CAP_IP6 : CAP_IP4;
    size_t tcplen = CAP_TCP + ((flags & TCPF_SYN) ? 4u : 0u);
    uint8_t *ip = h + CAP_ETH, *tcp = ip + iplen;
    uint32_t sum = 0;
    bool odd = false;
    size_t seglen = tcplen + len;

    memcpy(h, tx ? mac_peer : mac_local, 6);
    memcpy(h + 6, tx ? mac_local : mac_peer, 6);
    put16(h + 12, v6 ? 0x86ddu : 0x0800u);
    if (v6) {
        put32be(ip, 0x60000000u);
        put16(ip + 4, (uint32_t)seglen);
        ip[6] = IPPROTO_TCP;
        ip[7] = 64;
        memcpy(ip + 8, &src->Ipv6.sin6_addr, 16);
        memcpy(ip + 24, &dst->Ipv6.sin6_addr, 16);
        sum = cap_sum(sum, ip + 8, 32, &odd);
        sum += (uint32_t)(seglen >> 16) + (uint32_t)(seglen & 0xffffu) + IPPROTO_TCP;
    } else {
        memset(ip, 0, CAP_IP4);
        ip[0] = 0x45;
        put16(ip + 2, (uint32_t)(CAP_IP4 + seglen));
        put16(ip + 6, 0x4000u);       /* DF */
        ip[8] = 64;
        ip[9] = IPPROTO_TCP;
        memcpy(ip + 12, &src->Ipv4.sin_addr, 4);
        memcpy(ip + 16, &dst->Ipv4.sin_addr, 4);
        put16(ip + 10, ~cap_sum(0, ip, CAP_IP4, &odd) & 0xffffu);
        odd = false;
        sum = cap_sum(sum, ip + 12, 8, &odd);
        sum += (uint32_t)seglen + IPPROTO_TCP;
    }
    memset(tcp, 0, tcplen);
    put16(tcp, ntohs(v6 ? src->Ipv6.sin6_port : src->Ipv4.sin_port));
    put16(tcp + 2, ntohs(v6 ? dst->Ipv6.sin6_port : dst->Ipv4.sin_port));
    put32be(tcp + 4, seq);
    put32be(tcp + 8, (flags & TCPF_ACK) ? ack : 0);
    tcp[12] = (uint8_t)((tcplen / 4) << 4);
    tcp[13] = flags;
    put16(tcp + 14, 65535u);
    if (flags & TCPF_SYN) {
        tcp[20] = 2;                  /* MSS option */
        tcp[21] = 4;
        put16(tcp + 22, w->mss);
    }
    sum = cap_sum(sum, tcp, tcplen, &odd);
    for (size_t i = 0, left = len; i < plcnt && left; i++) {
        size_t n = pl[i].iov_len < left ? pl[i].iov_len : left;
        sum = cap_sum(sum, pl[i].iov_base, n, &odd);
        left -= n;
    }
    put16(tcp + 16, ~sum & 0xffffu);
    iw_pcapng_frame(w->file, cap_now_us(), h, CAP_ETH + iplen + tcplen, pl, plcnt, len);
}

void iw_capture_handshake(struct iw_wire *w, uint32_t isn_local, uint32_t isn_peer)
{
    bool first_tx = w->active;        /* who sent the SYN */
    uint32_t isn_a = first_tx ? isn_local : isn_peer, isn_b = first_tx ? isn_peer : isn_local;

    cap_frame(w, first_tx, TCPF_SYN, isn_a, 0, NULL, 0, 0);
    cap_frame(w, !first_tx, TCPF_SYN | TCPF_ACK, isn_b, isn_a + 1, NULL, 0, 0);
    cap_frame(w, first_tx, TCPF_ACK, isn_a + 1, isn_b + 1, NULL, 0, 0);
    atomic_store(&w->snd_nxt, isn_local + 1);
    atomic_store(&w->rcv_nxt, isn_peer + 1);
}

void iw_capture_bytes(struct iw_wire *w, bool tx, const struct iovec *iov, size_t cnt, size_t n)
{
    _Atomic uint32_t *mine = tx ? &w->snd_nxt : &w->rcv_nxt, *other = tx ? &w->rcv_nxt : &w->snd_nxt;
    size_t i = 0, off = 0;            /* position in iov */
    uint32_t mss = w->mss ? w->mss : 1460u;

    while (n) {
        struct iovec pl[CAP_PIECES];
        size_t np = 0, len = 0;

        while (len < mss && len < n && np < CAP_PIECES && i < cnt) {
            size_t take = iov[i].iov_len - off;
            if (take > mss - len)
                take = mss - len;
            if (take > n - len)
                take = n - len;
            pl[np].iov_base = (uint8_t *)iov[i].iov_base + off;
            pl[np++].iov_len = take;
            len += take;
            off += take;
            if (off == iov[i].iov_len) {
                i++;
                off = 0;
            }
        }
        if (!len)
            break;                    /* n beyond the iov: cannot happen */
        uint32_t seq = atomic_load_explicit(mine, memory_order_relaxed);
        cap_frame(w, tx, TCPF_PSH | TCPF_ACK, seq, atomic_load_explicit(other, memory_order_relaxed), pl, np, len);
        atomic_store_explicit(mine, seq + (uint32_t)len, memory_order_relaxed);
        n -= len;
    }
}

void iw_capture_reset(struct iw_wire *w)
{
    cap_frame(w, true, TCPF_RST | TCPF_ACK, atomic_load(&w->snd_nxt), atomic_load(&w->rcv_nxt), NULL, 0, 0);
}
