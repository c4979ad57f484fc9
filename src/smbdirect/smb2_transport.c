/*
 * smb2_transport.c - the two ways SMB2 messages travel: over SMB Direct (the SMBD payload is
 * the bare SMB2 message, MS-SMB2 2.1) and over TCP with the 4-byte Direct TCP transport header
 * (a zero byte and a 24-bit big-endian length).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "smb2_client.h"
#include "smb2_wire.h"

/* ---- SMB Direct ---- */

static int smbdt_send(void *ctx, const uint8_t *msg, size_t len) { return smbd_send(ctx, msg, len); }
static int smbdt_recv(void *ctx, uint8_t **msg, size_t *len, uint32_t *inv, int timeout_ms)
{
    return smbd_recv(ctx, msg, len, inv, timeout_ms);
}
static int smbdt_reg(void *ctx, void *buf, size_t len, bool peer_writes, void **mr, smbd_buffer_desc *d, unsigned *n)
{
    return smbd_mr_register(ctx, buf, len, peer_writes, (smbd_mr **)mr, d, n);
}
static int smbdt_release(void *ctx, void *mr, uint32_t inv) { return smbd_mr_release(ctx, mr, inv); }
static void smbdt_close(void *ctx) { smbd_close(ctx); }

void smb2_transport_smbd(smbd_conn *c, smb2_transport *t)
{
    const smbd_negotiated *n = smbd_negotiated_info(c);
    memset(t, 0, sizeof *t);
    t->ctx = c;
    t->rdma = true;
    t->send = smbdt_send;
    t->recv = smbdt_recv;
    t->reg = smbdt_reg;
    t->release = smbdt_release;
    t->close = smbdt_close;
    t->max_message = n->max_fragmented_send;
    t->max_rdma = n->max_read_write_size;
    t->remote_invalidate = smbd_remote_invalidate_ok(c);
}

/* ---- TCP ---- */

typedef struct tcpt {
    int fd;
    int timeout_ms;
} tcpt;

static int tcpt_io(tcpt *t, void *buf, size_t len, bool out, int timeout_ms)
{
    uint8_t *p = buf;
    while (len) {
        struct pollfd pfd = { t->fd, out ? POLLOUT : POLLIN, 0 };
        int pr = poll(&pfd, 1, timeout_ms);
        if (pr == 0)
            return -ETIMEDOUT;
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        ssize_t n = out ? send(t->fd, p, len, MSG_NOSIGNAL) : recv(t->fd, p, len, 0);
        if (n == 0)
            return -ECONNRESET;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int tcpt_send(void *ctx, const uint8_t *msg, size_t len)
{
    tcpt *t = ctx;
    if (len > 0xFFFFFF)
        return -EMSGSIZE;
    uint8_t h[4] = { 0, (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len };
    int rc = tcpt_io(t, h, 4, true, t->timeout_ms);
    return rc ? rc : tcpt_io(t, (void *)msg, len, true, t->timeout_ms);
}

static int tcpt_recv(void *ctx, uint8_t **msg, size_t *len, uint32_t *inv, int timeout_ms)
{
    tcpt *t = ctx;
    uint8_t h[4];
    if (inv)
        *inv = 0;
    if (timeout_ms < 0)
        timeout_ms = t->timeout_ms;
    int rc = tcpt_io(t, h, 4, false, timeout_ms);
    if (rc)
        return rc;
    size_t n = (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
    if (h[0] != 0 || n < SMB2_HDR_SIZE)
        return -EPROTO;
    uint8_t *b = malloc(n);
    if (!b)
        return -ENOMEM;
    rc = tcpt_io(t, b, n, false, t->timeout_ms);
    if (rc) {
        free(b);
        return rc;
    }
    *msg = b;
    *len = n;
    return 0;
}

static void tcpt_close(void *ctx)
{
    tcpt *t = ctx;
    close(t->fd);
    free(t);
}

int smb2_transport_tcp(const SOCKADDR_INET *dst, int timeout_ms, smb2_transport *out)
{
    tcpt *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->timeout_ms = timeout_ms;
    socklen_t alen = dst->si_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    t->fd = socket(dst->si_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (t->fd < 0) {
        free(t);
        return -errno;
    }
    int one = 1;
    setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = 0;
    if (connect(t->fd, (const struct sockaddr *)dst, alen) < 0) {
        if (errno != EINPROGRESS)
            rc = -errno;
        else {
            struct pollfd pfd = { t->fd, POLLOUT, 0 };
            int pr = poll(&pfd, 1, timeout_ms);
            int err = 0;
            socklen_t el = sizeof err;
            if (pr == 0)
                rc = -ETIMEDOUT;
            else if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err)
                rc = err ? -err : -errno;
        }
    }
    if (rc) {
        close(t->fd);
        free(t);
        return rc;
    }
    memset(out, 0, sizeof *out);
    out->ctx = t;
    out->send = tcpt_send;
    out->recv = tcpt_recv;
    out->close = tcpt_close;
    out->max_message = 8u << 20;
    return 0;
}
