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
 * The objects (adapter, PD, CQ, QP, MR, connector) are opened and closed by ex_node_open and
 * ex_node_close in common/example.h, which say why in that order.
 */
#include "example.h"

#define HELLO_PORT  7401
#define MSG_SIZE    64                       /* one slot: receive at 0, send at MSG_SIZE */

/* RequestContext tags: they come back in each NDK_RESULT and tell the completions apart. */
#define TAG_RECV ((PVOID)1)
#define TAG_SEND ((PVOID)2)

/* The QP with its receive posted, on the adapter that owns `local`. */
static void hello_open(struct ex_node *n, const SOCKADDR_INET *local)
{
    ex_node_open(n, local, 1, 1);            /* one receive and one Send outstanding at most */
    /* Receive buffers must be locally writable; the send slot shares the registration. */
    ex_mem_register(n->pd, 2 * MSG_SIZE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &n->mem[0]);
    /* Post the receive before connecting: a Send that finds no receive posted breaks the
     * connection (Microsoft: "NDK_FN_RECEIVE"). */
    NDK_SGE sge = ex_sge(&n->mem[0], 0, MSG_SIZE);
    ex_check(n->qp->Dispatch->NdkReceive(n->qp, TAG_RECV, &sge, 1), "NdkReceive");
}

/* Sends text and waits for both the Send's completion and the peer's message. */
static void hello_exchange(struct ex_node *n, const char *text, char *got)
{
    struct ex_mem *m = &n->mem[0];
    memcpy(m->buf + MSG_SIZE, text, strlen(text) + 1);
    NDK_SGE sge = ex_sge(m, MSG_SIZE, (ULONG)strlen(text) + 1);
    ex_check(n->qp->Dispatch->NdkSend(n->qp, TAG_SEND, &sge, 1, 0), "NdkSend");
    /* The two completions may come in either order: the queues are independent. */
    for (int done = 0; done < 2; done++) {
        NDK_RESULT r = ex_cq_expect(&n->cq, "Send or Receive completion");
        if (r.RequestContext == TAG_RECV)
            snprintf(got, MSG_SIZE, "%.*s", (int)r.BytesTransferred, (const char *)m->buf);
    }
}

static int hello_server(SOCKADDR_INET *addr)
{
    struct ex_node h;
    struct ex_listener l;
    char got[MSG_SIZE] = "", a[64];

    hello_open(&h, addr);
    /* No private data this time; a real server would check the client's with
     * NdkGetConnectionData before accepting. */
    ex_node_accept_one(&h, addr, &l, NULL, 0);
    hello_exchange(&h, "pong", got);

    /* The client disconnects first: wait for it rather than cut it short. */
    ex_node_wait_peer_gone(&h);
    printf("hello: received '%s' from %s, answered 'pong'\n", got, ex_peer_str(h.conn, 0, a));
    ex_node_close(&h, &l);
    return strcmp(got, "ping") == 0 ? 0 : 1;
}

static int hello_client(const SOCKADDR_INET *server)
{
    struct ex_node h;
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
    ex_node_close(&h, NULL);
    return strcmp(got, "pong") == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct ex_args args = { 0 };
    ex_prog = "hello";
    ex_parse_args(argc, argv, HELLO_PORT, NULL, &args);
    return args.server ? hello_server(&args.addr) : hello_client(&args.addr);
}
