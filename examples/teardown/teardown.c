/*
 * teardown - ending a connection right, from either side: who disconnects first, what happens
 * to the requests still posted, and the order in which objects are closed.
 *
 *   teardown -s ADDR[:PORT] [-f]   server
 *   teardown -c ADDR[:PORT] [-f]   client
 *
 * -f: this side disconnects first; the other side learns it from its disconnect event. Run one
 * side with -f and the other without, in either combination. Each side posts RECEIVES receives
 * that never get a message, so the teardown has something to flush.
 *
 * The rules (docs/ndkpi.md, "Teardown"; Microsoft: "NDK_FN_DISCONNECT", "NDK_FN_FLUSH",
 * "NDKPI Object Lifetime Requirements"):
 *   - Disconnect only when your initiator requests (Send, Read, Write) have completed; otherwise
 *     the disconnect need not be graceful.
 *   - The side that calls NdkDisconnect first: the call completes once the peer has answered and
 *     all DMA on the QP has stopped; the provider then flushes the QP, so every request still
 *     posted completes with STATUS_CANCELLED.
 *   - The side that gets the disconnect event: the event says nothing about requests; the
 *     provider does not flush for it. Call NdkFlush, then drain the CQ until every posted
 *     request has come back. NdkDisconnect is still called, to finish our side; it completes at
 *     once. The event may also reach the side that disconnected first (a race): ignore it there.
 *   - Close children before parents: connector, QP, then the memory the QP used, CQ, PD, and the
 *     adapter last. The adapter close blocks until every callback has returned.
 */
#include "example.h"

#define TEARDOWN_PORT 7405
#define RECEIVES      4
#define SLOT          64

/* Takes completions until every posted receive has come back; counts the flushed ones. The
 * disconnect event, once seen, does not end the wait: completions still come after it. */
static unsigned drain_receives(struct ex_node *n, unsigned outstanding)
{
    unsigned flushed = 0;
    while (outstanding) {
        NDK_RESULT r;
        int got = ex_cq_next(&n->cq, &r, EX_TIMEOUT_S);
        if (got == EX_TIMEOUT)
            ex_die("%u receives never came back", outstanding);
        if (got == EX_PEER_GONE) {
            pthread_mutex_lock(&n->cq.lock);
            n->cq.peer_gone = 0;             /* noted; keep waiting for the receives */
            pthread_mutex_unlock(&n->cq.lock);
            continue;
        }
        outstanding--;
        if (r.Status == STATUS_CANCELLED)
            flushed++;
        else
            ex_die("a receive completed with %s, expected STATUS_CANCELLED (a flush)", ndk_rt_status_name(r.Status));
    }
    return flushed;
}

/* This side disconnects first. */
static void disconnect_first(struct ex_node *n)
{
    /* No Send, Read or Write is outstanding here, so the disconnect is graceful. */
    ex_check(ex_disconnect(n->conn), "NdkDisconnect");
    /* The provider flushed the QP after the disconnect: collect what it gave back. */
    unsigned flushed = drain_receives(n, RECEIVES);
    printf("teardown: disconnected first; %u receives came back flushed; ", flushed);
}

/* The peer disconnects first. */
static void disconnect_second(struct ex_node *n)
{
    NDK_RESULT r;
    int got = ex_cq_next(&n->cq, &r, EX_TIMEOUT_S);
    if (got == EX_TIMEOUT)
        ex_die("the peer did not disconnect within %d s", EX_TIMEOUT_S);
    if (got == EX_GOT)
        ex_die("a receive completed (%s) before the peer disconnected", ndk_rt_status_name(r.Status));
    /* The event does not flush: we do, and wait for every receive to come back. */
    n->qp->Dispatch->NdkFlush(n->qp);
    unsigned flushed = drain_receives(n, RECEIVES);
    /* Finish our side too; after the peer's disconnect it completes at once, with success or
     * a "disconnected" status depending on the race: both mean the connection is over. */
    ex_disconnect(n->conn);
    printf("teardown: the peer disconnected; flushed %u receives; ", flushed);
}

/* Closing, children before parents. Nothing is in flight any more: every posted request has
 * come back, so the buffers may go once the QP is closed. */
static void close_all(struct ex_node *n, struct ex_listener *l)
{
    ex_close(n->conn);                       /* the connector holds the QP: it goes first */
    ex_close(n->qp);
    if (l)                                   /* completes only once its connectors are closed */
        ex_listener_close(l);
    ex_mem_release(&n->mem[0]);              /* deregister, then close the MR */
    ex_cq_close(&n->cq);                     /* after every QP that reports to it */
    ex_close(n->pd);                         /* after its QPs and MRs */
    ndk_rt_close_adapter(n->rt, n->adapter); /* blocks until every callback has returned */
    ndk_rt_close(n->rt);
    printf("closed\n");
}

/* Opens the QP and posts the receives the teardown will flush. */
static void open_and_post(struct ex_node *n, const SOCKADDR_INET *local)
{
    ex_node_open(n, local, RECEIVES, 1);
    ex_mem_register(n->pd, RECEIVES * SLOT, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &n->mem[0]);
    for (ULONG i = 0; i < RECEIVES; i++) {
        NDK_SGE sge = ex_sge(&n->mem[0], i * SLOT, SLOT);
        ex_check(n->qp->Dispatch->NdkReceive(n->qp, (PVOID)(uintptr_t)(i + 1), &sge, 1), "NdkReceive");
    }
}

int main(int argc, char **argv)
{
    struct ex_args args = { 0 };
    struct ex_node n;
    struct ex_listener l;

    ex_prog = "teardown";
    ex_parse_args(argc, argv, TEARDOWN_PORT, "f", &args);
    if (args.server) {
        open_and_post(&n, &args.addr);
        ex_node_accept_one(&n, &args.addr, &l, NULL, 0);
    } else {
        SOCKADDR_INET local;
        ex_route_source(&args.addr, &local);
        open_and_post(&n, &local);
        n.conn = ex_connect(n.adapter, n.qp, &args.addr, NULL, 0, NULL, NULL, &n.cq);
    }
    if (args.first)
        disconnect_first(&n);
    else
        disconnect_second(&n);
    close_all(&n, args.server ? &l : NULL);
    return 0;
}
