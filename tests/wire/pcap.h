/* Minimal classic-pcap reader and writer for the wire tests.
 *
 * Reader: libpcap "classic" files (either byte order, micro- or nanosecond stamps) with the link
 * types captures of iWARP traffic come in (Ethernet with optional VLAN tags, Linux cooked v1/v2,
 * BSD loopback / null, raw IP), IPv4 and IPv6, TCP. It groups packets into connections and
 * rebuilds each direction's byte stream by sequence number, so retransmissions, reordering and
 * segmentation disappear and the tests see exactly what a TCP receiver would.
 *
 * Writer: Ethernet + IPv4 + TCP frames with valid checksums, enough for tshark to dissect a
 * synthetic exchange. */
#ifndef WIRE_TEST_PCAP_H
#define WIRE_TEST_PCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where one TCP segment's bytes landed in its direction's stream. */
struct wpcap_seg {
    size_t   off;               /* offset in the reassembled stream */
    size_t   len;
    size_t   pkt;               /* 1-based packet (frame) number in the file */
};

struct wpcap_stream {
    uint8_t *data;              /* reassembled bytes, after the SYN */
    size_t   len;
    size_t   holes;             /* bytes never seen (0 for a complete capture) */
    bool     syn, fin, rst;
    struct wpcap_seg *segs;     /* data-bearing segments, in file order */
    size_t   nsegs;
    /* internal */
    uint32_t base_seq;
    bool     have_base;
};

struct wpcap_conn {
    int      af;                /* 4 or 6 */
    uint8_t  addr[2][16];       /* [0] = client (sent the SYN), [1] = server */
    uint16_t port[2];
    struct wpcap_stream dir[2]; /* [0] client -> server, [1] server -> client */
    size_t   first_pkt;
};

struct wpcap_file {
    uint32_t linktype;
    size_t   packets;
    size_t   tcp_packets;
    size_t   skipped;           /* non-TCP or fragmented packets */
    struct wpcap_conn *conns;   /* in order of first appearance */
    size_t   nconns;
};

/* Reads and reassembles path. Returns 0, or -1 with a message in err. */
int wpcap_read(const char *path, struct wpcap_file *out, char *err, size_t errlen);
void wpcap_free(struct wpcap_file *f);

/* Stream offset -> packet number that carried it (0 if none). */
size_t wpcap_pkt_at(const struct wpcap_stream *s, size_t off);

/* ---- writer ---- */

#define WPCAP_FIN 0x01
#define WPCAP_SYN 0x02
#define WPCAP_RST 0x04
#define WPCAP_PSH 0x08
#define WPCAP_ACK 0x10

struct wpcap_writer {
    FILE    *f;
    uint32_t usec;              /* fake clock, advanced per frame */
};

int wpcap_writer_open(struct wpcap_writer *w, const char *path);
int wpcap_write_tcp4(struct wpcap_writer *w, const uint8_t src[4], uint16_t sport,
                     const uint8_t dst[4], uint16_t dport, uint32_t seq, uint32_t ack,
                     uint8_t flags, const void *payload, size_t len);
int wpcap_writer_close(struct wpcap_writer *w);

#endif
