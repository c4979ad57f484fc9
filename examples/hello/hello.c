/*
 * hello - the smallest complete NDK consumer: open the adapter that owns an address, connect,
 * one Send/Receive each way, and a clean teardown.
 *
 *   hello -s ADDR[:PORT]   server: waits for one client, receives 'ping', answers 'pong'
 *   hello -c ADDR[:PORT]   client: connects, sends 'ping', receives 'pong'
 *
 * Port 0 makes the server pick a free port; it prints "listening on ..." with the port it got.
 * Both print one line on success and exit 0; on any error they name it and exit 1.
 *
 * Objects (docs/ndkpi.md, "object model"; Microsoft: "NDKPI Overview"): an adapter instance
 * gives a protection domain (PD) and a completion queue (CQ); a queue pair (QP) lives in the PD
 * and reports to the CQ; memory is registered in the PD (MR); a connector joins the QP to the
 * peer's. Teardown goes the other way round.
 */
#include "example.h"

#define HELLO_PORT  7401
#define MSG_SIZE    64                       /* one slot: receive at 0, send at MSG_SIZE */

/* RequestContext tags: they come back in each NDK_RESULT and tell the completions apart. */
#define TAG_RECV ((PVOID)1)
#define TAG_SEND ((PVOID)2)

struct hello {
    ndk_rt          *rt;
    NDK_ADAPTER     *adapter;
    NDK_ADAPTER_INFO info;
    NDK_PD          *pd;
    struct ex_cq     cq;                     /* one CQ for both queues of the QP */
    NDK_QP          *qp;
    struct ex_mem    mem;
    NDK_CONNECTOR   *conn;
};

/* Everything up to a QP with a receive posted, on the adapter that owns `local`. */
static void hello_open(struct hello *h, const SOCKADDR_INET *local)
{
    struct ex_wait w;
    NDK_QP *qp = NULL;

    h->adapter = ex_open_adapter(&h->rt, local, &h->info);
    NTSTATUS st = h->adapter->Dispatch->NdkCreatePd(h->adapter, ex_create_done, ex_wait_init(&w), &h->pd);
    h->pd = ex_created(&w, st, h->pd, "NdkCreatePd");
    ex_cq_create(h->adapter, 4, &h->cq);
    /* One receive and one send outstanding at most, one SGE each, no inline data. */
    st = h->pd->Dispatch->NdkCreateQp(h->pd, h->cq.cq, h->cq.cq, h, 1, 1, 1, 1, 0, ex_create_done, ex_wait_init(&w),
                                      &qp);
    h->qp = ex_created(&w, st, qp, "NdkCreateQp");
    /* Receive buffers must be locally writable; the send slot shares the registration. */
    ex_mem_register(h->pd, 2 * MSG_SIZE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &h->mem);
    /* Post the receive before connecting: a Send that finds no receive posted breaks the
     * connection (Microsoft: "NDK_FN_RECEIVE"). */
    NDK_SGE sge = ex_sge(&h->mem, 0, MSG_SIZE);
    ex_check(h->qp->Dispatch->NdkReceive(h->qp, TAG_RECV, &sge, 1), "NdkReceive");
}

/* Sends text and waits for both the Send's completion and the peer's message. */
static void hello_exchange(struct hello *h, const char *text, char *got)
{
    memcpy(h->mem.buf + MSG_SIZE, text, strlen(text) + 1);
    NDK_SGE sge = ex_sge(&h->mem, MSG_SIZE, (ULONG)strlen(text) + 1);
    ex_check(h->qp->Dispatch->NdkSend(h->qp, TAG_SEND, &sge, 1, 0), "NdkSend");
    /* The two completions may come in either order: the queues are independent. */
    for (int done = 0; done < 2; done++) {
        NDK_RESULT r = ex_cq_expect(&h->cq, "Send or Receive completion");
        if (r.RequestContext == TAG_RECV)
            snprintf(got, MSG_SIZE, "%.*s", (int)r.BytesTransferred, (const char *)h->mem.buf);
    }
}

/* Teardown, children before parents. The QP goes before the memory it used: once it is closed
 * nothing can touch the buffers any more. The adapter close blocks until every callback has
 * returned, so it is never called from a callback (docs/ndkpi.md, "teardown"). */
static void hello_close(struct hello *h, struct ex_listener *l)
{
    ex_close(h->conn);
    if (l)                                   /* its close completes once its connectors are closed */
        ex_listener_close(l);
    ex_close(h->qp);
    ex_cq_close(&h->cq);
    ex_mem_release(&h->mem);
    ex_close(h->pd);
    ndk_rt_close_adapter(h->rt, h->adapter);
    ndk_rt_close(h->rt);
}

static int hello_server(SOCKADDR_INET *addr)
{
    struct hello h = { 0 };
    struct ex_listener l;
    char got[MSG_SIZE] = "", a[64];

    hello_open(&h, addr);
    ex_listen(h.adapter, addr, &l);
    printf("hello: listening on %s\n", ex_addr_str(addr, 1, a));
    fflush(stdout);                          /* a script waits for that line */

    pthread_mutex_lock(&l.lock);
    NDK_CONNECTOR *request = ex_next_request_locked(&l, 60);
    pthread_mutex_unlock(&l.lock);
    if (!request)
        ex_die("no client within 60 s");
    /* No private data this time; a real server would check the client's with
     * NdkGetConnectionData before accepting. */
    h.conn = request;
    ex_check(ex_accept(h.conn, h.qp, NULL, 0, &h.cq), "NdkAccept");
    hello_exchange(&h, "pong", got);

    /* The client disconnects first; wait for its disconnect event rather than cut it short. */
    NDK_RESULT r;
    if (ex_cq_next(&h.cq, &r, EX_TIMEOUT_S) != EX_PEER_GONE)
        ex_die("the client did not disconnect");
    /* Our own NdkDisconnect completes at once now; its status (success or "already
     * disconnected", depending on the race) does not matter here. */
    ex_disconnect(h.conn);
    printf("hello: received '%s' from %s, answered 'pong'\n", got, ex_peer_str(h.conn, 0, a));
    hello_close(&h, &l);
    return strcmp(got, "ping") == 0 ? 0 : 1;
}

static int hello_client(const SOCKADDR_INET *server)
{
    struct hello h = { 0 };
    SOCKADDR_INET local;
    char got[MSG_SIZE] = "", a[64];

    ex_route_source(server, &local);         /* the adapter is the one our route to the server uses */
    hello_open(&h, &local);
    h.conn = ex_connect(h.adapter, h.qp, server, NULL, 0, NULL, NULL, &h.cq);
    hello_exchange(&h, "ping", got);
    /* Both our requests have completed, so the disconnect is graceful (Microsoft:
     * "NDK_FN_DISCONNECT": disconnect only once initiator requests are done). */
    ex_check(ex_disconnect(h.conn), "NdkDisconnect");
    printf("hello: received '%s' from %s\n", got, ex_addr_str(server, 1, a));
    hello_close(&h, NULL);
    return strcmp(got, "pong") == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct ex_args args = { 0 };
    ex_prog = "hello";
    ex_parse_args(argc, argv, HELLO_PORT, NULL, &args);
    return args.server ? hello_server(&args.addr) : hello_client(&args.addr);
}
