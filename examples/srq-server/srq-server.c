/*
 * srq-server - many clients, one pool of receive buffers: a shared receive queue (SRQ) feeds
 * every client's QP, and one CQ takes every completion. The server is driven by the CQ's
 * notification callback (NdkArmCq), not by a polling loop; its main thread sleeps until a
 * connect or disconnect event wakes it.
 *
 *   srq-server -s ADDR[:PORT] [-n COUNT]   server: serve COUNT clients (0: forever), then exit
 *   srq-server -c ADDR[:PORT]              client: send MESSAGES messages, get the count back
 *
 * Why an SRQ (Microsoft: "NDK_FN_CREATE_SRQ"; docs/ndkpi.md, "Shared receive queues"): with a
 * receive queue per QP, every idle client pins its own buffers; with an SRQ, buffers go to
 * whichever client sends next. Each completion still names its QP (NDK_RESULT.QPContext), so
 * the server knows whose message it got.
 */
#include "example.h"

#define SRQ_PORT     7404
#define MAX_CLIENTS  64
#define SRQ_DEPTH    16                      /* receive buffers shared by all clients */
#define SLOT         64
#define MESSAGES     4                       /* each client sends this many */
#define BATCH        16

struct client {
    NDK_QP        *qp;
    NDK_CONNECTOR *conn;
    unsigned       received;                 /* touched by the CQ callback only */
    int            gone;                     /* disconnect event came; guarded by server.l.lock */
};

struct server {
    NDK_CQ            *cq;
    NDK_SRQ           *srq;
    struct ex_mem      recv_mem;             /* SRQ_DEPTH slots, posted to the SRQ */
    struct ex_mem      reply_mem;            /* one reply slot per client */
    struct ex_listener l;                    /* its lock also guards `gone` and `messages` */
    struct client      clients[MAX_CLIENTS];
    unsigned           messages;
};

static NTSTATUS post_srq_slot(struct server *s, ULONG slot)   /* RequestContext: slot + 1 */
{
    NDK_SGE sge = ex_sge(&s->recv_mem, slot * SLOT, SLOT);
    return s->srq->Dispatch->NdkSrqReceive(s->srq, (PVOID)(uintptr_t)(slot + 1), &sge, 1);
}

/* One completion: a receive (RequestContext: its SRQ slot + 1) or one of our replies (NULL). */
static void handle(struct server *s, const NDK_RESULT *r)
{
    if (r->Status != STATUS_SUCCESS && r->Status != STATUS_CANCELLED)   /* flushes are normal */
        fprintf(stderr, "srq-server: a request completed with %s\n", ndk_rt_status_name(r->Status));
    if (r->Status != STATUS_SUCCESS || !r->RequestContext)
        return;
    ULONG slot = (ULONG)(uintptr_t)r->RequestContext - 1;
    struct client *c = r->QPContext;         /* the QP the message came in on */
    c->received++;
    pthread_mutex_lock(&s->l.lock);
    s->messages++;
    pthread_mutex_unlock(&s->l.lock);
    /* The buffer goes straight back to the pool; we have read what we needed (its length). */
    if (post_srq_slot(s, slot) != STATUS_SUCCESS)
        fprintf(stderr, "srq-server: reposting an SRQ buffer failed\n");
    if (c->received == MESSAGES) {
        size_t i = (size_t)(c - s->clients);
        int len = snprintf((char *)s->reply_mem.buf + i * SLOT, SLOT, "counted %u", c->received);
        NDK_SGE sge = ex_sge(&s->reply_mem, (ULONG)(i * SLOT), (ULONG)len + 1);
        if (c->qp->Dispatch->NdkSend(c->qp, NULL, &sge, 1, 0) != STATUS_SUCCESS)
            fprintf(stderr, "srq-server: posting a reply failed\n");
    }
}

/* NDK_FN_CQ_NOTIFICATION_CALLBACK: provider thread; the provider never runs two at once for one
 * CQ. Must not block. Drain the CQ, re-arm, then look once more: a completion that arrived
 * between the last empty poll and the arm would otherwise wait for the next one (Microsoft:
 * "NDK_FN_ARM_CQ"; docs/ndkpi.md, "CQ notifications"). */
static VOID cq_notify(PVOID ctx, NTSTATUS cq_status)
{
    struct server *s = ctx;
    NDK_RESULT r[BATCH];
    if (cq_status != STATUS_SUCCESS)          /* the CQ's health, not a request's status */
        fprintf(stderr, "srq-server: the CQ failed: %s\n", ndk_rt_status_name(cq_status));
    for (;;) {
        ULONG n = s->cq->Dispatch->NdkGetCqResults(s->cq, r, BATCH);
        if (n == 0) {
            s->cq->Dispatch->NdkArmCq(s->cq, NDK_CQ_NOTIFY_ANY);
            n = s->cq->Dispatch->NdkGetCqResults(s->cq, r, BATCH);
            if (n == 0)
                return;                      /* armed, and nothing slipped in */
        }
        for (ULONG i = 0; i < n; i++)
            handle(s, &r[i]);
    }
}

/* NDK_FN_DISCONNECT_EVENT_CALLBACK: wake the main thread, which closes the connection. */
static struct server *the_server;
static VOID client_disconnected(PVOID ctx)
{
    struct client *c = ctx;
    pthread_mutex_lock(&the_server->l.lock);
    c->gone = 1;
    pthread_cond_broadcast(&the_server->l.cond);
    pthread_mutex_unlock(&the_server->l.lock);
}

/* A QP on the SRQ for this request, then accept. 0, or -1 when this client is not served. */
static int serve(struct server *s, struct client *c, NDK_CONNECTOR *request, NDK_PD *pd)
{
    struct ex_wait w;
    NDK_QP *qp = NULL;
    c->conn = request;
    /* No receive queue of its own: receives come from the SRQ. Initiator depth 1: the reply. */
    NTSTATUS st = ex_finish(&w, pd->Dispatch->NdkCreateQpWithSrq(pd, s->cq, s->cq, s->srq, c, 1, 1, 0, ex_create_done,
                                                                 ex_wait_init(&w), &qp));
    if (st == STATUS_SUCCESS) {
        c->qp = qp ? qp : (NDK_QP *)w.obj;   /* inline success, or handed to the completion */
        st = ex_finish(&w, request->Dispatch->NdkAccept(request, c->qp, 0, 0, NULL, 0, client_disconnected, c,
                                                        ex_request_done, ex_wait_init(&w)));
    } else {
        request->Dispatch->NdkReject(request, NULL, 0);
    }
    if (st == STATUS_SUCCESS)
        return 0;
    fprintf(stderr, "srq-server: a client could not be served: %s\n", ndk_rt_status_name(st));
    ex_close(c->conn);
    ex_close(c->qp);
    memset(c, 0, sizeof *c);
    return -1;
}

static int srq_server(SOCKADDR_INET *addr, int count)
{
    static struct server s;
    ndk_rt *rt;
    NDK_ADAPTER_INFO info;
    NDK_PD *pd = NULL;
    NDK_CQ *cq = NULL;
    NDK_SRQ *srq = NULL;
    struct ex_wait w;
    char a[64];
    the_server = &s;
    NDK_ADAPTER *ad = ex_open_adapter(&rt, addr, &info);
    NTSTATUS st = ad->Dispatch->NdkCreatePd(ad, ex_create_done, ex_wait_init(&w), &pd);
    pd = ex_created(&w, st, pd, "NdkCreatePd");
    /* Room for every receive of the SRQ and every client's reply. */
    st = ad->Dispatch->NdkCreateCq(ad, SRQ_DEPTH + MAX_CLIENTS, cq_notify, &s, NULL, ex_create_done,
                                   ex_wait_init(&w), &cq);
    s.cq = ex_created(&w, st, cq, "NdkCreateCq");
    /* No low-water notification (threshold 0): we repost every buffer as soon as it is used. */
    st = pd->Dispatch->NdkCreateSrq(pd, SRQ_DEPTH, 1, 0, NULL, NULL, NULL, ex_create_done, ex_wait_init(&w), &srq);
    s.srq = ex_created(&w, st, srq, "NdkCreateSrq");
    ex_mem_register(pd, SRQ_DEPTH * SLOT, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &s.recv_mem);
    ex_mem_register(pd, MAX_CLIENTS * SLOT, NDK_MR_FLAG_ALLOW_LOCAL_READ, &s.reply_mem);
    for (ULONG i = 0; i < SRQ_DEPTH; i++)
        ex_check(post_srq_slot(&s, i), "NdkSrqReceive");
    s.cq->Dispatch->NdkArmCq(s.cq, NDK_CQ_NOTIFY_ANY);   /* from now on the callback serves the CQ */

    ex_listen(ad, addr, &s.l);
    printf("srq-server: listening on %s\n", ex_addr_str(addr, 1, a));
    fflush(stdout);                          /* a script waits for that line */

    int served = 0, active = 0;
    pthread_mutex_lock(&s.l.lock);
    while (count == 0 || served < count) {
        int i = 0;
        while (i < MAX_CLIENTS && !(s.clients[i].conn && s.clients[i].gone))
            i++;
        if (i < MAX_CLIENTS) {
            struct client *c = &s.clients[i];
            pthread_mutex_unlock(&s.l.lock);
            ex_disconnect(c->conn);          /* the client left first; completes at once */
            ex_close(c->conn);
            ex_close(c->qp);
            pthread_mutex_lock(&s.l.lock);
            memset(c, 0, sizeof *c);
            served++;
            active--;
            /* Look again from the start: a disconnect that came while the lock was dropped
             * set its flag and woke nobody, so waiting now could wait for ever. */
            continue;
        }
        if ((count && served + active >= count) || s.l.head == s.l.tail) {
            if (count && served >= count)
                break;
            pthread_cond_wait(&s.l.cond, &s.l.lock);   /* a request or a disconnect wakes us */
            continue;
        }
        NDK_CONNECTOR *request = s.l.queue[s.l.head++ % EX_BACKLOG];
        int slot = 0;
        while (slot < MAX_CLIENTS && s.clients[slot].conn)
            slot++;
        pthread_mutex_unlock(&s.l.lock);
        if (slot == MAX_CLIENTS)
            ex_refuse(request);              /* full: say so at once */
        else if (serve(&s, &s.clients[slot], request, pd) == 0)
            active++;
        pthread_mutex_lock(&s.l.lock);
    }
    unsigned messages = s.messages;
    pthread_mutex_unlock(&s.l.lock);

    printf("srq-server: served %d clients, %u messages through one SRQ and one CQ\n", served, messages);
    ex_listener_close(&s.l);
    ex_close(s.cq);                          /* after the QPs; waits out a running callback */
    ex_close(s.srq);                         /* after the QPs that drew on it and the callback */
    ex_mem_release(&s.recv_mem);
    ex_mem_release(&s.reply_mem);
    ex_close(pd);
    ndk_rt_close_adapter(rt, ad);
    ndk_rt_close(rt);
    return 0;
}

static int srq_client(const SOCKADDR_INET *server)
{
    struct ex_node n;
    char a[64], reply[SLOT] = "";

    ex_node_open_client(&n, server, 1, MESSAGES);
    struct ex_mem *m = &n.mem[0];             /* slot 0: the reply; slots 1..MESSAGES: ours */
    ex_mem_register(n.pd, (MESSAGES + 1) * SLOT, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, m);
    NDK_SGE sge = ex_sge(m, 0, SLOT);
    ex_check(n.qp->Dispatch->NdkReceive(n.qp, NULL, &sge, 1), "NdkReceive");
    n.conn = ex_connect(n.adapter, n.qp, server, NULL, 0, NULL, NULL, &n.cq);

    for (ULONG i = 1; i <= MESSAGES; i++) {
        int len = snprintf((char *)m->buf + i * SLOT, SLOT, "message %lu", (unsigned long)i);
        sge = ex_sge(m, i * SLOT, (ULONG)len + 1);
        ex_check(n.qp->Dispatch->NdkSend(n.qp, (PVOID)(uintptr_t)i, &sge, 1, 0), "NdkSend");
    }
    for (int done = 0; done < MESSAGES + 1; done++) {   /* our Sends and the reply, any order */
        NDK_RESULT r = ex_cq_expect(&n.cq, "Send completion or the server's reply");
        if (!r.RequestContext)
            snprintf(reply, sizeof reply, "%.*s", (int)r.BytesTransferred, (const char *)m->buf);
    }
    unsigned counted = 0;
    if (sscanf(reply, "counted %u", &counted) != 1)
        ex_die("unexpected reply '%s'", reply);

    ex_check(ex_disconnect(n.conn), "NdkDisconnect");
    printf("srq-server: sent %d messages to %s, the server counted %u\n", MESSAGES, ex_addr_str(server, 1, a), counted);
    ex_node_close(&n, NULL);
    return counted == MESSAGES ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct ex_args args = { 0 };
    ex_prog = "srq-server";
    ex_parse_args(argc, argv, SRQ_PORT, "n:", &args);
    return args.server ? srq_server(&args.addr, args.count) : srq_client(&args.addr);
}
