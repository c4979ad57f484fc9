/*
 * rdma-write - one-sided data movement: the server lends the client a buffer (address and
 * remote token, passed in the accept's private data), the client puts its data there with an
 * RDMA Write, then sends a short message that tells the server the data is there.
 *
 *   rdma-write -s ADDR[:PORT]   server: lends a buffer, waits for the notice, prints the data
 *   rdma-write -c ADDR[:PORT]   client: writes into the server's buffer, then notifies it
 *
 * Why the extra Send: an RDMA Write completes only at the writer; the target's CPU learns
 * nothing. A Send posted after the Write on the same QP is delivered only after the Write's data
 * has been placed (RDMAP ordering, RFC 5040 section 5.5; docs/ndkpi.md, "Work requests"), so
 * its receive completion is the "data is there" signal.
 */
#include <endian.h>
#include <stdint.h>

#include "example.h"

#define WRITE_PORT   7402
#define TARGET_SIZE  256                     /* the buffer the server lends */
#define MSG_SIZE     64
#define CLIENT_TEXT  "written by rdma-write with RDMA"

#define TAG_RECV  ((PVOID)1)
#define TAG_SEND  ((PVOID)2)
#define TAG_WRITE ((PVOID)3)

/* What the server puts in the accept's private data. Our own wire format, so fixed byte order:
 * the two sides need not share an architecture. The remote address is the buffer's virtual
 * address in the server: registered MRs use true virtual addresses (Microsoft:
 * "NDK_FN_REGISTER_MR"). */
struct lend {
    uint64_t address_be;
    uint32_t token_be;
    uint32_t length_be;
};

/* The notice the client sends after its Write: how many bytes it wrote. */
struct notice {
    uint32_t written_be;
};

static int write_server(SOCKADDR_INET *addr)
{
    struct ex_node n;
    struct ex_listener l;
    char a[64];

    ex_node_open(&n, addr, 1, 1);
    /* Two registrations, each with only the rights it needs: the lent buffer may be written
     * by the peer (REMOTE_WRITE includes LOCAL_WRITE); the notice slot only by our adapter. */
    struct ex_mem *target = &n.mem[0], *msg = &n.mem[1];
    ex_mem_register(n.pd, TARGET_SIZE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, target);
    ex_mem_register(n.pd, MSG_SIZE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, msg);
    NDK_SGE sge = ex_sge(msg, 0, MSG_SIZE);
    ex_check(n.qp->Dispatch->NdkReceive(n.qp, TAG_RECV, &sge, 1), "NdkReceive");

    struct lend lend = { .address_be = htobe64((uint64_t)(uintptr_t)target->buf),
                         .token_be = htobe32(target->remote_token),
                         .length_be = htobe32(TARGET_SIZE) };
    if (n.info.MaxCalleeData < sizeof lend)
        ex_die("the adapter carries only %u bytes of accept private data", n.info.MaxCalleeData);
    ex_node_accept_one(&n, addr, &l, &lend, sizeof lend);

    NDK_RESULT r = ex_cq_expect(&n.cq, "notice from the client");
    struct notice note;
    if (r.BytesTransferred != sizeof note)
        ex_die("the notice has %u bytes, expected %zu", r.BytesTransferred, sizeof note);
    memcpy(&note, msg->buf, sizeof note);
    uint32_t written = be32toh(note.written_be);
    if (written > TARGET_SIZE)
        ex_die("the client claims %u bytes in a %u-byte buffer", written, TARGET_SIZE);

    ex_node_wait_peer_gone(&n);
    printf("rdma-write: %s wrote %u bytes into our buffer: '%.*s'\n", ex_peer_str(n.conn, 0, a), written, (int)written,
           (const char *)target->buf);
    /* The peer's remote token dies with the registration: deregistering (in ex_node_close)
     * is what revokes the access we lent. */
    ex_node_close(&n, &l);
    return 0;
}

static int write_client(const SOCKADDR_INET *server)
{
    struct ex_node n;
    struct lend lend;
    ULONG lend_len = sizeof lend;
    char a[64];

    ex_node_open_client(&n, server, 1, 2);          /* a Write and a Send in flight together */
    struct ex_mem *m = &n.mem[0];
    ex_mem_register(n.pd, MSG_SIZE * 2, NDK_MR_FLAG_ALLOW_LOCAL_READ, m);   /* we only send from it */
    memset(&lend, 0, sizeof lend);
    n.conn = ex_connect(n.adapter, n.qp, server, NULL, 0, &lend, &lend_len, &n.cq);
    if (lend_len < sizeof lend)
        ex_die("%s accepted without lending a buffer (is it an rdma-write server?)", ex_addr_str(server, 1, a));
    uint64_t address = be64toh(lend.address_be);
    uint32_t token = be32toh(lend.token_be), length = be32toh(lend.length_be);
    ULONG len = (ULONG)strlen(CLIENT_TEXT);
    if (len > length)
        ex_die("the server lent %u bytes, we need %u", length, len);

    /* The Write: local SGE from our registration, remote address and token from the server. */
    memcpy(m->buf, CLIENT_TEXT, len);
    NDK_SGE data = ex_sge(m, 0, len);
    ex_check(n.qp->Dispatch->NdkWrite(n.qp, TAG_WRITE, &data, 1, address, token, 0), "NdkWrite");
    /* The notice right behind it, without waiting: QP ordering already puts it after the data. */
    struct notice note = { .written_be = htobe32(len) };
    memcpy(m->buf + MSG_SIZE, &note, sizeof note);
    NDK_SGE sge = ex_sge(m, MSG_SIZE, sizeof note);
    ex_check(n.qp->Dispatch->NdkSend(n.qp, TAG_SEND, &sge, 1, 0), "NdkSend");
    ex_cq_expect(&n.cq, "RDMA Write completion");
    ex_cq_expect(&n.cq, "Send completion");

    /* Both initiator requests are complete: a graceful disconnect, then close. */
    ex_check(ex_disconnect(n.conn), "NdkDisconnect");
    printf("rdma-write: wrote %u bytes into %s and told it so\n", len, ex_addr_str(server, 1, a));
    ex_node_close(&n, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    struct ex_args args = { 0 };
    ex_prog = "rdma-write";
    ex_parse_args(argc, argv, WRITE_PORT, NULL, &args);
    return args.server ? write_server(&args.addr) : write_client(&args.addr);
}
