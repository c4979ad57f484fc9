/* hello.c - ndkperf's connect hello (struct perf_hello) to and from its packed big-endian wire
 * form (struct perf_hello_wire, ndkperf.h), small enough for every transport's connect private
 * data. Used by client.c (encode) and server.c (decode). */
#define _GNU_SOURCE
#include <endian.h>
#include <string.h>

#include "ndkperf.h"

int perf_hello_encode(const struct perf_hello *h, struct perf_hello_wire *w)
{
    if (h->op > UINT8_MAX || h->flags > UINT8_MAX || h->conn_index > UINT8_MAX || h->conn_count > UINT8_MAX ||
        h->depth > UINT16_MAX || h->slots > UINT16_MAX || h->max_size > UINT32_MAX)
        return -1;
    memset(w, 0, sizeof *w);
    memcpy(w->magic, PERF_MAGIC, sizeof PERF_MAGIC);
    w->version = htobe16(PERF_VERSION);
    w->op = (uint8_t)h->op;
    w->flags = (uint8_t)h->flags;
    w->conn_index = (uint8_t)h->conn_index;
    w->conn_count = (uint8_t)h->conn_count;
    w->depth = htobe16((uint16_t)h->depth);
    w->slots = htobe16((uint16_t)h->slots);
    w->inline_size = htobe32(h->inline_size);
    w->session = htobe32((uint32_t)h->session);
    w->max_size = htobe32((uint32_t)h->max_size);
    w->client_buf = htobe64(h->client_buf);
    w->client_token = htobe32(h->client_token);
    w->client_buf_len = htobe32(h->client_buf_len);
    return 0;
}

bool perf_hello_decode(const void *buf, size_t len, struct perf_hello *h)
{
    struct perf_hello_wire w;

    if (len < sizeof w)
        return false;
    memcpy(&w, buf, sizeof w);
    if (memcmp(w.magic, PERF_MAGIC, sizeof PERF_MAGIC) || be16toh(w.version) != PERF_VERSION)
        return false;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, w.magic, sizeof h->magic);
    h->version = PERF_VERSION;
    h->op = w.op;
    h->flags = w.flags;
    h->conn_index = w.conn_index;
    h->conn_count = w.conn_count;
    h->depth = be16toh(w.depth);
    h->slots = be16toh(w.slots);
    h->inline_size = be32toh(w.inline_size);
    h->session = be32toh(w.session);
    h->max_size = be32toh(w.max_size);
    h->client_buf = be64toh(w.client_buf);
    h->client_token = be32toh(w.client_token);
    h->client_buf_len = be32toh(w.client_buf_len);
    return true;
}
