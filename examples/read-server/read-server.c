/*
 * read-server - one listener serving many clients at once, each of which fetches the server's
 * data with an RDMA Read: the server's CPU takes no part in the transfer.
 *
 *   read-server -s ADDR[:PORT] [-n COUNT]   server: serve COUNT clients (0: forever), then exit
 *   read-server -c ADDR[:PORT]              client: read the server's buffer, print it
 *
 * The server registers one buffer for remote read in its protection domain and gives every
 * client its address and remote token in the accept's private data; every client's QP lives in
 * that PD, so the one registration serves them all. The server's main thread sleeps until a
 * connect event or a disconnect event wakes it: no polling.
 */
#include <endian.h>
#include <stdint.h>

#include "example.h"

#define READ_PORT   7403
#define MAX_CLIENTS 64
#define SERVED_TEXT "the read-server's buffer, read with RDMA"

#define TAG_READ ((PVOID)1)

/* The accept's private data, in our own fixed byte order (see rdma-write.c). */
struct lend {
    uint64_t address_be;
    uint32_t token_be;
    uint32_t length_be;
};

struct client {
    NDK_QP              *qp;
    NDK_CONNECTOR       *conn;
    int                  gone;               /* the disconnect event came; guarded by listener.lock */
    struct ex_listener  *listener;           /* whose lock and condition the event signals */
};

/* NDK_FN_DISCONNECT_EVENT_CALLBACK: provider thread, must not block. The main thread does the
 * closing: a close from inside a callback of the same object could not wait for it. */
static VOID client_disconnected(PVOID ctx)
{
    struct client *c = ctx;
    pthread_mutex_lock(&c->listener->lock);
    c->gone = 1;
    pthread_cond_broadcast(&c->listener->cond);
    pthread_mutex_unlock(&c->listener->lock);
}

/* Accepts one request onto a fresh QP in the shared PD. Returns 0, or -1 when this client could
 * not be served (the server goes on). Blocks. */
static int serve(struct client *c, NDK_CONNECTOR *request, NDK_PD *pd, struct ex_cq *cq, const struct lend *lend)
{
    struct ex_wait w;
    NDK_QP *qp = NULL;
    /* The client only reads: no receives, no initiator requests of ours. The QP still needs
     * queues of depth 1 and CQs; all clients share one CQ, which stays empty. */
    NTSTATUS st = ex_finish(&w, pd->Dispatch->NdkCreateQp(pd, cq->cq, cq->cq, c, 1, 1, 1, 1, 0, ex_create_done,
                                                          ex_wait_init(&w), &qp));
    c->conn = request;
    if (st == STATUS_SUCCESS) {
        c->qp = qp ? qp : (NDK_QP *)w.obj;   /* inline success, or handed to the completion */
        /* InboundReadLimit 1: one Read from this client at a time is enough (the client asks
         * for an OutboundReadLimit of 1); the provider caps it by the adapter's maximum. */
        st = ex_finish(&w, request->Dispatch->NdkAccept(request, c->qp, 1, 0, (PVOID)lend, sizeof *lend,
                                                        client_disconnected, c, ex_request_done, ex_wait_init(&w)));
    } else {
        request->Dispatch->NdkReject(request, NULL, 0);
    }
    if (st != STATUS_SUCCESS) {
        fprintf(stderr, "read-server: a client could not be served: %s\n", ndk_rt_status_name(st));
        ex_close(c->conn);
        ex_close(c->qp);
        memset(c, 0, sizeof *c);
        return -1;
    }
    return 0;
}

static int read_server(SOCKADDR_INET *addr, int count)
{
    static struct client clients[MAX_CLIENTS];      /* slot i is free while clients[i].conn is NULL */
    ndk_rt *rt;
    NDK_ADAPTER_INFO info;
    NDK_PD *pd = NULL;
    struct ex_cq cq;
    struct ex_mem data;
    struct ex_listener l;
    struct ex_wait w;
    char a[64];

    NDK_ADAPTER *ad = ex_open_adapter(&rt, addr, &info);
    NTSTATUS st = ad->Dispatch->NdkCreatePd(ad, ex_create_done, ex_wait_init(&w), &pd);
    pd = ex_created(&w, st, pd, "NdkCreatePd");
    ex_cq_create(ad, 2 * MAX_CLIENTS, &cq);
    /* Remote read only: the clients can fetch this buffer but never change it. */
    ex_mem_register(pd, 4096, NDK_MR_FLAG_ALLOW_REMOTE_READ, &data);
    memcpy(data.buf, SERVED_TEXT, strlen(SERVED_TEXT));
    struct lend lend = { .address_be = htobe64((uint64_t)(uintptr_t)data.buf),
                         .token_be = htobe32(data.remote_token),
                         .length_be = htobe32((uint32_t)strlen(SERVED_TEXT)) };

    ex_listen(ad, addr, &l);
    printf("read-server: listening on %s\n", ex_addr_str(addr, 1, a));
    fflush(stdout);

    int served = 0, active = 0;
    pthread_mutex_lock(&l.lock);
    while (count == 0 || served < count || active > 0) {
        /* Closing what the clients left: they disconnect once their Read is done. */
        int i = 0;
        while (i < MAX_CLIENTS && !(clients[i].conn && clients[i].gone))
            i++;
        if (i < MAX_CLIENTS) {
            pthread_mutex_unlock(&l.lock);
            ex_disconnect(clients[i].conn);  /* finishes our side; completes at once */
            ex_close(clients[i].conn);
            ex_close(clients[i].qp);
            pthread_mutex_lock(&l.lock);
            memset(&clients[i], 0, sizeof clients[i]);
            served++;
            active--;
            /* Look again from the start: a disconnect that came while the lock was dropped
             * set its flag and woke nobody, so waiting now could wait for ever. */
            continue;
        }
        if (count && served + active >= count) {
            if (active == 0)
                break;
            struct timespec until = ex_deadline(EX_TIMEOUT_S);   /* wait for the last ones to leave */
            if (pthread_cond_timedwait(&l.cond, &l.lock, &until) == ETIMEDOUT)
                ex_die("%d clients did not disconnect within %d s", active, EX_TIMEOUT_S);
            continue;
        }
        if (l.head == l.tail) {
            pthread_cond_wait(&l.cond, &l.lock);   /* a request or a disconnect wakes us */
            continue;
        }
        NDK_CONNECTOR *request = l.queue[l.head++ % EX_BACKLOG];
        int slot = 0;
        while (slot < MAX_CLIENTS && clients[slot].conn)
            slot++;
        pthread_mutex_unlock(&l.lock);
        if (slot == MAX_CLIENTS) {
            ex_refuse(request);              /* full: say so at once */
        } else {
            clients[slot].listener = &l;
            if (serve(&clients[slot], request, pd, &cq, &lend) == 0)
                active++;
        }
        pthread_mutex_lock(&l.lock);
    }
    pthread_mutex_unlock(&l.lock);

    printf("read-server: served %d clients\n", served);
    ex_listener_close(&l);                   /* refuses what is still queued */
    ex_mem_release(&data);                   /* after the QPs that could be read through */
    ex_cq_close(&cq);
    ex_close(pd);
    ndk_rt_close_adapter(rt, ad);
    ndk_rt_close(rt);
    return 0;
}

static int read_client(const SOCKADDR_INET *server)
{
    struct ex_node n;
    struct lend lend;
    ULONG lend_len = sizeof lend;
    char a[64];

    ex_node_open_client(&n, server, 1, 1);
    /* An RDMA Read sink: on iWARP the server's adapter writes into it, so it must be registered
     * as a read sink unless the adapter says it is not needed (Microsoft: "NDK_ADAPTER_INFO",
     * NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED). Setting it always is harmless. */
    struct ex_mem *m = &n.mem[0];
    ex_mem_register(n.pd, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK, m);
    memset(&lend, 0, sizeof lend);
    n.conn = ex_connect(n.adapter, n.qp, server, NULL, 0, &lend, &lend_len, &n.cq);
    uint32_t length = be32toh(lend.length_be);
    if (lend_len < sizeof lend || length > m->len)
        ex_die("%s accepted without a usable buffer (is it a read-server?)", ex_addr_str(server, 1, a));

    NDK_SGE sge = ex_sge(m, 0, length);
    ex_check(n.qp->Dispatch->NdkRead(n.qp, TAG_READ, &sge, 1, be64toh(lend.address_be), be32toh(lend.token_be), 0),
             "NdkRead");
    ex_cq_expect(&n.cq, "RDMA Read completion");  /* the data is in our buffer now */

    ex_check(ex_disconnect(n.conn), "NdkDisconnect");
    printf("read-server: read %u bytes from %s: '%.*s'\n", length, ex_addr_str(server, 1, a), (int)length,
           (const char *)m->buf);
    ex_node_close(&n, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    struct ex_args args = { 0 };
    ex_prog = "read-server";
    ex_parse_args(argc, argv, READ_PORT, "n:", &args);
    return args.server ? read_server(&args.addr, args.count) : read_client(&args.addr);
}
