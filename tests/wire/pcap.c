/* Classic-pcap reader with TCP stream reassembly, and a small writer. See pcap.h. */
#include "pcap.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define LT_NULL        0
#define LT_EN10MB      1
#define LT_RAW_BSD     12
#define LT_RAW_BSD2    14
#define LT_RAW         101
#define LT_LOOP        108
#define LT_LINUX_SLL   113
#define LT_IPV4        228
#define LT_IPV6        229
#define LT_LINUX_SLL2  276

#define MAX_RECORD     (1u << 18)

struct raw_seg {
    uint32_t seq;
    uint8_t *data;
    size_t   len;
    size_t   pkt;
};

struct raw_dir {
    struct raw_seg *segs;
    size_t n, cap;
};

/* Reader state beside the public file: raw segments per connection direction. */
struct reader {
    struct wpcap_file *f;
    struct raw_dir    *raw;     /* 2 per connection */
    size_t             conns_cap;
    char              *err;
    size_t             errlen;
};

static int fail(struct reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, r->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t rd32(const uint8_t *p, bool swap)
{
    uint32_t le = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return swap ? be32(p) : le;
}

static bool same_ep(const struct wpcap_conn *c, int side, int af, const uint8_t *addr, uint16_t port)
{
    return c->af == af && c->port[side] == port && memcmp(c->addr[side], addr, af == 4 ? 4 : 16) == 0;
}

/* Finds or creates the connection of a segment; sets *dir to 0 (client->server) or 1. */
static struct wpcap_conn *lookup(struct reader *r, int af, const uint8_t *src, uint16_t sport,
                                 const uint8_t *dst, uint16_t dport, size_t pkt, int *dir)
{
    struct wpcap_file *f = r->f;
    for (size_t i = 0; i < f->nconns; i++) {
        struct wpcap_conn *c = &f->conns[i];
        if (same_ep(c, 0, af, src, sport) && same_ep(c, 1, af, dst, dport)) {
            *dir = 0;
            return c;
        }
        if (same_ep(c, 1, af, src, sport) && same_ep(c, 0, af, dst, dport)) {
            *dir = 1;
            return c;
        }
    }
    if (f->nconns == r->conns_cap) {
        size_t cap = r->conns_cap ? r->conns_cap * 2 : 8;
        struct wpcap_conn *nc = realloc(f->conns, cap * sizeof *nc);
        if (!nc)
            return NULL;
        f->conns = nc;
        struct raw_dir *nr = realloc(r->raw, cap * 2 * sizeof *nr);
        if (!nr)
            return NULL;
        r->raw = nr;
        r->conns_cap = cap;
    }
    struct wpcap_conn *c = &f->conns[f->nconns];
    memset(c, 0, sizeof *c);
    memset(&r->raw[2 * f->nconns], 0, 2 * sizeof *r->raw);
    f->nconns++;
    c->af = af;
    c->first_pkt = pkt;
    /* The sender of the first packet is taken as the client: right when that packet is the
     * SYN, and the caller corrects it when it is a SYN-ACK. */
    memcpy(c->addr[0], src, af == 4 ? 4 : 16);
    memcpy(c->addr[1], dst, af == 4 ? 4 : 16);
    c->port[0] = sport;
    c->port[1] = dport;
    *dir = 0;
    return c;
}

static int add_seg(struct raw_dir *d, uint32_t seq, const uint8_t *data, size_t len, size_t pkt)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct raw_seg *ns = realloc(d->segs, cap * sizeof *ns);
        if (!ns)
            return -1;
        d->segs = ns;
        d->cap = cap;
    }
    uint8_t *copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, data, len);
    d->segs[d->n++] = (struct raw_seg){ .seq = seq, .data = copy, .len = len, .pkt = pkt };
    return 0;
}

static int handle_tcp(struct reader *r, int af, const uint8_t *src, const uint8_t *dst,
                      const uint8_t *t, size_t tlen, size_t pkt)
{
    if (tlen < 20)
        return 0;
    size_t hl = (size_t)(t[12] >> 4) * 4;
    if (hl < 20 || hl > tlen)
        return 0;
    uint16_t sport = be16(t), dport = be16(t + 2);
    uint32_t seq = be32(t + 4);
    uint8_t flags = t[13];
    bool syn = flags & WPCAP_SYN, ack = flags & WPCAP_ACK;
    int dir;

    struct wpcap_conn *c = lookup(r, af, src, sport, dst, dport, pkt, &dir);
    if (!c)
        return fail(r, "out of memory");
    if (syn && ack && c->first_pkt == pkt) {
        /* The first packet we see is a SYN-ACK: its sender is the server, so swap sides. */
        uint8_t a[16];
        memcpy(a, c->addr[0], 16);
        memcpy(c->addr[0], c->addr[1], 16);
        memcpy(c->addr[1], a, 16);
        uint16_t p = c->port[0];
        c->port[0] = c->port[1];
        c->port[1] = p;
        dir = 1;
    }
    r->f->tcp_packets++;
    struct wpcap_stream *s = &c->dir[dir];
    struct raw_dir *raw = &r->raw[2 * (size_t)(c - r->f->conns) + (size_t)dir];
    if (syn) {
        s->syn = true;
        s->base_seq = seq + 1;
        s->have_base = true;
        return 0;                       /* data on a SYN is not part of the stream we want */
    }
    if (flags & WPCAP_FIN)
        s->fin = true;
    if (flags & WPCAP_RST)
        s->rst = true;
    size_t plen = tlen - hl;
    if (!plen)
        return 0;
    if (!s->have_base) {
        s->base_seq = seq;
        s->have_base = true;
    }
    if (add_seg(raw, seq, t + hl, plen, pkt) < 0)
        return fail(r, "out of memory");
    return 0;
}

static int handle_ip(struct reader *r, const uint8_t *p, size_t len, size_t pkt)
{
    if (len < 1)
        goto skip;
    if ((p[0] >> 4) == 4) {
        if (len < 20)
            goto skip;
        size_t ihl = (size_t)(p[0] & 0xF) * 4;
        size_t tot = be16(p + 2);
        /* The total length trims link-layer padding (Ethernet pads frames to 60 bytes). */
        if (ihl < 20 || tot < ihl || tot > len)
            goto skip;
        uint16_t frag = be16(p + 6);
        if ((frag & 0x3FFF) != 0 || p[9] != 6)
            goto skip;
        return handle_tcp(r, 4, p + 12, p + 16, p + ihl, tot - ihl, pkt);
    }
    if ((p[0] >> 4) == 6) {
        if (len < 40)
            goto skip;
        size_t plen = be16(p + 4);
        if (40 + plen > len)
            goto skip;
        uint8_t nh = p[6];
        size_t off = 40, end = 40 + plen;
        /* Walk hop-by-hop, routing and destination-options headers; give up on fragments. */
        while (nh == 0 || nh == 43 || nh == 60) {
            if (off + 8 > end)
                goto skip;
            size_t ext = ((size_t)p[off + 1] + 1) * 8;
            nh = p[off];
            off += ext;
            if (off > end)
                goto skip;
        }
        if (nh != 6)
            goto skip;
        return handle_tcp(r, 6, p + 8, p + 24, p + off, end - off, pkt);
    }
skip:
    r->f->skipped++;
    return 0;
}

static int handle_frame(struct reader *r, const uint8_t *p, size_t len, size_t pkt)
{
    uint16_t proto;
    size_t off;

    switch (r->f->linktype) {
    case LT_EN10MB:
        if (len < 14)
            goto skip;
        proto = be16(p + 12);
        off = 14;
        while ((proto == 0x8100 || proto == 0x88A8) && off + 4 <= len) {
            proto = be16(p + off + 2);
            off += 4;
        }
        break;
    case LT_LINUX_SLL:
        if (len < 16)
            goto skip;
        proto = be16(p + 14);
        off = 16;
        break;
    case LT_LINUX_SLL2:
        if (len < 20)
            goto skip;
        proto = be16(p);
        off = 20;
        break;
    case LT_NULL:
    case LT_LOOP: {
        if (len < 4)
            goto skip;
        /* DLT_NULL stores the address family in the capturing host's byte order, DLT_LOOP in
         * network order; accept either reading. Linux/BSD AF_INET6 values vary (10, 24, 28, 30). */
        uint32_t le = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        uint32_t af = (le & 0xFFFF) ? le : be32(p);
        proto = af == 2 ? 0x0800 : (af == 10 || af == 24 || af == 28 || af == 30) ? 0x86DD : 0;
        off = 4;
        break;
    }
    case LT_RAW:
    case LT_RAW_BSD:
    case LT_RAW_BSD2:
    case LT_IPV4:
    case LT_IPV6:
        return handle_ip(r, p, len, pkt);
    default:
        return fail(r, "unsupported link type %u", r->f->linktype);
    }
    if (proto != 0x0800 && proto != 0x86DD)
        goto skip;
    return handle_ip(r, p + off, len - off, pkt);
skip:
    r->f->skipped++;
    return 0;
}

/* Lays every segment at its sequence offset; later copies of a byte (retransmissions) win. */
static int assemble(struct wpcap_stream *s, struct raw_dir *raw)
{
    size_t len = 0;
    for (size_t i = 0; i < raw->n; i++) {
        uint32_t rel = raw->segs[i].seq - s->base_seq;
        if (rel >= 0x80000000u)
            continue;                       /* before the stream start: old duplicate */
        if ((size_t)rel + raw->segs[i].len > len)
            len = (size_t)rel + raw->segs[i].len;
    }
    s->len = len;
    s->data = calloc(len ? len : 1, 1);
    uint8_t *seen = calloc(len ? len : 1, 1);
    s->segs = calloc(raw->n ? raw->n : 1, sizeof *s->segs);
    if (!s->data || !seen || !s->segs) {
        free(seen);
        return -1;
    }
    for (size_t i = 0; i < raw->n; i++) {
        uint32_t rel = raw->segs[i].seq - s->base_seq;
        if (rel >= 0x80000000u)
            continue;
        memcpy(s->data + rel, raw->segs[i].data, raw->segs[i].len);
        memset(seen + rel, 1, raw->segs[i].len);
        s->segs[s->nsegs++] = (struct wpcap_seg){ .off = rel, .len = raw->segs[i].len,
                                                  .pkt = raw->segs[i].pkt };
    }
    for (size_t i = 0; i < len; i++)
        s->holes += !seen[i];
    free(seen);
    return 0;
}

int wpcap_read(const char *path, struct wpcap_file *out, char *err, size_t errlen)
{
    struct reader r = { .f = out, .err = err, .errlen = errlen };
    uint8_t gh[24], rh[16];
    uint8_t *buf = NULL;
    int rc = -1;

    memset(out, 0, sizeof *out);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return fail(&r, "cannot open %s", path);
    if (fread(gh, 1, sizeof gh, fp) != sizeof gh) {
        fail(&r, "%s: short global header", path);
        goto done;
    }
    uint32_t magic = rd32(gh, false);
    bool swap;
    if (magic == 0xA1B2C3D4u || magic == 0xA1B23C4Du)
        swap = false;
    else if (magic == 0xD4C3B2A1u || magic == 0x4D3CB2A1u)
        swap = true;
    else {
        fail(&r, "%s: not a classic pcap file (magic %08x)", path, magic);
        goto done;
    }
    out->linktype = rd32(gh + 20, swap) & 0x0FFFFFFF;
    buf = malloc(MAX_RECORD);
    if (!buf) {
        fail(&r, "out of memory");
        goto done;
    }
    for (;;) {
        size_t n = fread(rh, 1, sizeof rh, fp);
        if (n == 0)
            break;
        if (n != sizeof rh) {
            fail(&r, "%s: truncated record header", path);
            goto done;
        }
        uint32_t incl = rd32(rh + 8, swap), orig = rd32(rh + 12, swap);
        if (incl > MAX_RECORD) {
            fail(&r, "%s: record of %u bytes", path, incl);
            goto done;
        }
        if (fread(buf, 1, incl, fp) != incl) {
            fail(&r, "%s: truncated record", path);
            goto done;
        }
        out->packets++;
        if (incl < orig) {
            /* Snapped: the payload is incomplete, so the stream would have a hole anyway. */
            out->skipped++;
            continue;
        }
        if (handle_frame(&r, buf, incl, out->packets) < 0)
            goto done;
    }
    for (size_t i = 0; i < out->nconns; i++)
        for (int d = 0; d < 2; d++)
            if (assemble(&out->conns[i].dir[d], &r.raw[2 * i + (size_t)d]) < 0) {
                fail(&r, "out of memory");
                goto done;
            }
    rc = 0;
done:
    for (size_t i = 0; r.raw && i < 2 * out->nconns; i++) {
        for (size_t j = 0; j < r.raw[i].n; j++)
            free(r.raw[i].segs[j].data);
        free(r.raw[i].segs);
    }
    free(r.raw);
    free(buf);
    fclose(fp);
    if (rc < 0)
        wpcap_free(out);
    return rc;
}

void wpcap_free(struct wpcap_file *f)
{
    for (size_t i = 0; i < f->nconns; i++)
        for (int d = 0; d < 2; d++) {
            free(f->conns[i].dir[d].data);
            free(f->conns[i].dir[d].segs);
        }
    free(f->conns);
    memset(f, 0, sizeof *f);
}

size_t wpcap_pkt_at(const struct wpcap_stream *s, size_t off)
{
    for (size_t i = 0; i < s->nsegs; i++)
        if (off >= s->segs[i].off && off < s->segs[i].off + s->segs[i].len)
            return s->segs[i].pkt;
    return 0;
}

/* ---- writer ---- */

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

static void put32le(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* RFC 1071 one's-complement sum. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    if (len & 1)
        sum += (uint32_t)p[len - 1] << 8;
    return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return (uint16_t)~sum;
}

int wpcap_writer_open(struct wpcap_writer *w, const char *path)
{
    uint8_t gh[24];

    w->usec = 0;
    w->f = fopen(path, "wb");
    if (!w->f)
        return -1;
    put32le(gh, 0xA1B2C3D4u);
    gh[4] = 2, gh[5] = 0, gh[6] = 4, gh[7] = 0;         /* version 2.4, little-endian */
    put32le(gh + 8, 0);
    put32le(gh + 12, 0);
    put32le(gh + 16, 65535);
    put32le(gh + 20, LT_EN10MB);
    return fwrite(gh, 1, sizeof gh, w->f) == sizeof gh ? 0 : -1;
}

int wpcap_write_tcp4(struct wpcap_writer *w, const uint8_t src[4], uint16_t sport,
                     const uint8_t dst[4], uint16_t dport, uint32_t seq, uint32_t ack,
                     uint8_t flags, const void *payload, size_t len)
{
    uint8_t hdr[14 + 20 + 20];
    uint8_t rec[16];
    size_t total = sizeof hdr + len;

    if (len > 65535 - 40)
        return -1;
    static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x01 }, mac_b[6] = { 0x02, 0, 0, 0, 0, 0x02 };
    bool from_a = memcmp(src, dst, 4) < 0 || (memcmp(src, dst, 4) == 0 && sport < dport);
    memcpy(hdr, from_a ? mac_b : mac_a, 6);
    memcpy(hdr + 6, from_a ? mac_a : mac_b, 6);
    put16(hdr + 12, 0x0800);

    uint8_t *ip = hdr + 14;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    put16(ip + 2, (uint16_t)(40 + len));
    put16(ip + 6, 0x4000);                              /* DF */
    ip[8] = 64;
    ip[9] = 6;
    memcpy(ip + 12, src, 4);
    memcpy(ip + 16, dst, 4);
    put16(ip + 10, csum_fold(csum_add(0, ip, 20)));

    uint8_t *t = ip + 20;
    memset(t, 0, 20);
    put16(t, sport);
    put16(t + 2, dport);
    put32(t + 4, seq);
    put32(t + 8, (flags & WPCAP_ACK) ? ack : 0);
    t[12] = 5 << 4;
    t[13] = flags;
    put16(t + 14, 65535);
    uint8_t pseudo[12];
    memcpy(pseudo, src, 4);
    memcpy(pseudo + 4, dst, 4);
    pseudo[8] = 0;
    pseudo[9] = 6;
    put16(pseudo + 10, (uint16_t)(20 + len));
    uint32_t sum = csum_add(0, pseudo, sizeof pseudo);
    sum = csum_add(sum, t, 20);
    sum = csum_add(sum, payload, len);
    put16(t + 16, csum_fold(sum));

    w->usec += 1000;
    put32le(rec, w->usec / 1000000);
    put32le(rec + 4, w->usec % 1000000);
    put32le(rec + 8, (uint32_t)total);
    put32le(rec + 12, (uint32_t)total);
    if (fwrite(rec, 1, sizeof rec, w->f) != sizeof rec || fwrite(hdr, 1, sizeof hdr, w->f) != sizeof hdr)
        return -1;
    if (len && fwrite(payload, 1, len, w->f) != len)
        return -1;
    return 0;
}

int wpcap_writer_close(struct wpcap_writer *w)
{
    int rc = fclose(w->f);
    w->f = NULL;
    return rc == 0 ? 0 : -1;
}
