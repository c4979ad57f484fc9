/* smbd_bridge: an SMB Direct front for an SMB2-over-TCP server, for tests. It accepts SMB Direct
 * connections (the scripted peer of smbd_peer.c on the iwarp provider), forwards each SMB2
 * message to the TCP server, and plays the server's half of the RDMA channel (MS-SMB2
 * 3.3.5.12/3.3.5.13): a READ with RDMA descriptors is sent on as an inline READ and the data
 * RDMA-written into the client's buffer, then answered with DataRemaining and, for
 * RDMA_V1_INVALIDATE, a Send-with-Invalidate of descriptor 0; a WRITE's data is RDMA-read
 * from the client and sent on inline. So the client's RDMA paths meet a real SMB2 server.
 * Usage: smbd_bridge SERVER_IP[:PORT]   prints "port N" once listening; serves until killed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndk_tool_addr.h"
#include "smb2_client.h"
#include "smb2_wire.h"
#include "smbd_peer.h"
#include "smbd_wire.h"
#include "testlib.h"

#define BRIDGE_MAX_RW (1u << 20)

static bool bridge_reassemble(peer *p, uint8_t *buf, size_t cap, size_t *len)
{
    size_t have = 0, total = 0;
    for (;;) {
        if (!peer_recv(p, 60000))
            return false;
        uint32_t dlen = smbd_get32(p->last + SMBD_DATA_LENGTH), rem = smbd_get32(p->last + SMBD_DATA_REMAINING);
        if (dlen == 0)
            continue;
        if (have == 0)
            total = dlen + rem;
        if (have + dlen + rem != total || total > cap)
            return false;
        memcpy(buf + have, p->last + smbd_get32(p->last + SMBD_DATA_OFFSET), dlen);
        have += dlen;
        if (rem == 0)
            break;
    }
    *len = have;
    return true;
}

static unsigned consumed_since_grant;
static bool bridge_verbose;
#define TRACE(...) do { if (bridge_verbose) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static bool bridge_send(peer *p, const uint8_t *msg, size_t len, uint32_t inv)
{
    size_t off = 0;
    while (off < len) {
        uint32_t n = len - off < 1340 ? (uint32_t)(len - off) : 1340, rem = (uint32_t)(len - off - n);
        if (p->client_granted == 0) {
            fprintf(stderr, "bridge: the client left us no send credit\n");
            return false;
        }
        uint16_t g = off == 0 ? (uint16_t)(consumed_since_grant > 255 ? 255 : consumed_since_grant) : 0;
        consumed_since_grant -= g;
        if (!peer_send_data(p, g, 0, rem, msg + off, n, rem == 0 ? inv : 0))
            return false;
        off += n;
    }
    return true;
}

/* The server's final response; interim STATUS_PENDING responses go to the client as they are. */
static bool bridge_final(peer *p, smb2_transport *tcp, uint8_t **r, size_t *rl)
{
    for (;;) {
        uint32_t inv;
        if (tcp->recv(tcp->ctx, r, rl, &inv, 30000))
            return false;
        bool interim = (smbd_get32(*r + SMB2_HDR_FLAGS) & SMB2_FLAGS_ASYNC_COMMAND) &&
                       smbd_get32(*r + SMB2_HDR_STATUS) == SMB2_STATUS_PENDING;
        if (!interim)
            return true;
        bool ok = bridge_send(p, *r, *rl, 0);
        free(*r);
        if (!ok)
            return false;
    }
}

typedef struct desc { uint64_t va; uint32_t tok, len; } desc;

static unsigned parse_descs(const uint8_t *m, size_t len, uint16_t off, uint16_t dl, desc *d)
{
    unsigned n = 0;
    if ((size_t)off + dl > len)
        return 0;
    for (unsigned i = 0; i + 16 <= dl && n < 16; i += 16, n++) {
        d[n].va = smbd_get64(m + off + i);
        d[n].tok = smbd_get32(m + off + i + 8);
        d[n].len = smbd_get32(m + off + i + 12);
    }
    return n;
}

static bool bridge_rdma(peer *p, bool to_client, const desc *d, unsigned n, size_t total)
{
    size_t off = 0;
    for (unsigned i = 0; i < n && off < total; i++) {
        uint32_t l = d[i].len < total - off ? d[i].len : (uint32_t)(total - off);
        if (!peer_rdma(p, to_client, off, d[i].va, d[i].tok, l))
            return false;
        off += l;
    }
    return true;
}

static void serve(peer *p, smb2_transport *tcp)
{
    static uint8_t req[BRIDGE_MAX_RW + 4096];
    consumed_since_grant = 0;
    for (;;) {
        size_t len;
        uint32_t before = p->credits_granted;
        if (!bridge_reassemble(p, req, sizeof req, &len)) {
            TRACE("bridge: connection ended");
            return;
        }
        TRACE("bridge: request of %zu bytes, command %u", len, len >= SMB2_HDR_SIZE ? smbd_get16(req + SMB2_HDR_COMMAND) : 999);
        consumed_since_grant += before > p->credits_granted ? before - p->credits_granted : 1;
        if (len < SMB2_HDR_SIZE + 49)
            goto plain;
        uint16_t cmd = smbd_get16(req + SMB2_HDR_COMMAND);
        uint8_t *b = req + SMB2_HDR_SIZE;
        desc d[16];
        unsigned nd;
        uint32_t channel = 0;
        if (cmd == SMB2_READ && (channel = smbd_get32(b + SMB2_READREQ_CHANNEL)) != 0) {
            nd = parse_descs(req, len, smbd_get16(b + SMB2_READREQ_CHINFO_OFF), smbd_get16(b + SMB2_READREQ_CHINFO_LEN), d);
            smbd_put32(b + SMB2_READREQ_CHANNEL, 0);
            smbd_put32(b + SMB2_READREQ_REMAINING, 0);
            smbd_put32(b + SMB2_READREQ_CHINFO_OFF, 0);
            len = SMB2_HDR_SIZE + 49;
            if (tcp->send(tcp->ctx, req, len))
                return;
            uint8_t *r;
            size_t rl;
            if (!bridge_final(p, tcp, &r, &rl))
                return;
            uint32_t st = smbd_get32(r + SMB2_HDR_STATUS), got = 0;
            if (st == 0 && rl >= SMB2_HDR_SIZE + 16) {
                uint8_t doff = r[SMB2_HDR_SIZE + SMB2_READRESP_DATA_OFFSET];
                got = smbd_get32(r + SMB2_HDR_SIZE + SMB2_READRESP_DATA_LENGTH);
                if ((size_t)doff + got > rl || got > p->dmem.len)
                    return;
                memcpy(p->dmem.buf, r + doff, got);
                if (!bridge_rdma(p, true, d, nd, got))
                    return;
                smbd_put32(r + SMB2_HDR_SIZE + SMB2_READRESP_DATA_LENGTH, 0);
                smbd_put32(r + SMB2_HDR_SIZE + SMB2_READRESP_REMAINING, got);
                rl = SMB2_HDR_SIZE + 16;
            }
            bool ok = bridge_send(p, r, rl, channel == SMB2_CHANNEL_RDMA_V1_INVALIDATE && nd ? d[0].tok : 0);
            free(r);
            if (!ok)
                return;
            continue;
        }
        if (cmd == SMB2_WRITE && (channel = smbd_get32(b + SMB2_WRITEREQ_CHANNEL)) != 0) {
            nd = parse_descs(req, len, smbd_get16(b + SMB2_WRITEREQ_CHINFO_OFF), smbd_get16(b + SMB2_WRITEREQ_CHINFO_LEN),
                             d);
            uint32_t n = smbd_get32(b + SMB2_WRITEREQ_REMAINING);
            if (n > BRIDGE_MAX_RW || !bridge_rdma(p, false, d, nd, n))
                return;
            memcpy(b + SMB2_WRITEREQ_FIXED, p->dmem.buf, n);
            smbd_put16(b + SMB2_WRITEREQ_DATA_OFFSET, SMB2_HDR_SIZE + SMB2_WRITEREQ_FIXED);
            smbd_put32(b + SMB2_WRITEREQ_LENGTH, n);
            smbd_put32(b + SMB2_WRITEREQ_CHANNEL, 0);
            smbd_put32(b + SMB2_WRITEREQ_REMAINING, 0);
            smbd_put32(b + SMB2_WRITEREQ_CHINFO_OFF, 0);
            len = SMB2_HDR_SIZE + SMB2_WRITEREQ_FIXED + n;
            if (tcp->send(tcp->ctx, req, len))
                return;
            uint8_t *r;
            size_t rl;
            if (!bridge_final(p, tcp, &r, &rl))
                return;
            TRACE("bridge: write of %u bytes answered", n);
            bool ok = bridge_send(p, r, rl, channel == SMB2_CHANNEL_RDMA_V1_INVALIDATE && nd ? d[0].tok : 0);
            free(r);
            if (!ok)
                return;
            continue;
        }
    plain:
        if (tcp->send(tcp->ctx, req, len))
            return;
        uint8_t *r;
        size_t rl;
        if (!bridge_final(p, tcp, &r, &rl))
            return;
        bool ok = bridge_send(p, r, rl, 0);
        free(r);
        if (!ok)
            return;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: smbd_bridge SERVER_IP[:PORT]\n");
        return 2;
    }
    SOCKADDR_INET server;
    char why[128];
    if (ndk_tool_addr_parse(argv[1], 445, &server, why, sizeof why) < 0) {
        fprintf(stderr, "smbd_bridge: %s\n", why);
        return 2;
    }
    bridge_verbose = getenv("SMBD_BRIDGE_TRACE") != NULL;
    static peer P;
    peer_start(&P);
    printf("port %u\n", ndk_tool_addr_port(&P.addr));
    fflush(stdout);
    for (;;) {
        if (!peer_accept(&P)) {
            peer_drop(&P);
            continue;
        }
        uint8_t r[32];
        peer_negresp(r, 254, 1364, 1364, 173910);
        smbd_put32(r + SMBD_NEGRESP_MAX_READ_WRITE, BRIDGE_MAX_RW);
        if (!peer_recv(&P, 10000) || P.last_len != SMBD_NEGREQ_SIZE) {
            peer_drop(&P);
            continue;
        }
        P.credits_granted = 254;
        if (!peer_send_raw(&P, r, 32, 0)) {
            peer_drop(&P);
            continue;
        }
        smb2_transport tcp;
        if (smb2_transport_tcp(&server, 10000, &tcp) == 0) {
            serve(&P, &tcp);
            tcp.close(tcp.ctx);
        }
        peer_drop(&P);
    }
}
