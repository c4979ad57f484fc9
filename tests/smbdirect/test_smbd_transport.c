/* The MS-SMBD transport against a scripted peer over the iwarp provider on loopback. One
 * scenario per run (argv[1]); the peer runs on a thread of its own with its own adapter
 * instance, the client (src/smbdirect) on the main thread. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndk_tool.h"
#include "smbd.h"
#include "smbd_peer.h"
#include "smbd_wire.h"
#include "testlib.h"

static peer P;
static int (*peer_script)(peer *p);
static int peer_result = -1;

static void *peer_main(void *arg)
{
    (void)arg;
    peer_result = peer_script(&P);
    peer_drop(&P);
    return NULL;
}

#define PCHECK(cond) do { if (!(cond)) { fprintf(stderr, "peer: %s:%d: %s\n", __FILE__, __LINE__, #cond); return 1; } } while (0)

/* ---- client side helpers ---- */

static ndk_rt *C_rt;
static ndk_tool_adapter C_ad;
static SOCKADDR_INET C_src;

static void client_open(void)
{
    char why[256];
    ndk_rt_adapter_id id;
    CHECK_STATUS(ndk_tool_rt_open(&C_rt), STATUS_SUCCESS);
    CHECK_STATUS(ndk_tool_adapter_pick(C_rt, NULL, &P.addr, "iwarp", 0, &id, &C_src, why, sizeof why), STATUS_SUCCESS);
    CHECK_STATUS(ndk_tool_adapter_open(C_rt, id, &C_ad), STATUS_SUCCESS);
}

static void client_close(void)
{
    ndk_tool_adapter_close(&C_ad);
    ndk_rt_close(C_rt);
}

static smbd_params client_params(int timeout_ms)
{
    smbd_params sp;
    smbd_params_default(&sp);
    sp.timeout_ms = timeout_ms;
    sp.mr_count = 8;
    return sp;
}

static int client_connect(const smbd_params *sp, smbd_conn **c)
{
    return smbd_connect(C_ad.adapter, &C_src, &P.addr, sp, c);
}

static void run_peer(pthread_t *t, int (*script)(peer *))
{
    peer_script = script;
    peer_result = -1;
    CHECK(pthread_create(t, NULL, peer_main, NULL) == 0);
}

static void join_peer(pthread_t t)
{
    pthread_join(t, NULL);
    CHECK_MSG(peer_result == 0, "scripted peer failed");
}

/* Peer: accept, take the negotiate request, answer with resp. */
static int peer_negotiate(peer *p, const uint8_t *resp, uint32_t resp_len)
{
    PCHECK(peer_accept(p));
    PCHECK(peer_recv(p, PEER_TMO));
    PCHECK(p->last_len == SMBD_NEGREQ_SIZE);
    PCHECK(smbd_get16(p->last + SMBD_NEGREQ_CREDITS_REQUESTED) == 255);
    PCHECK(smbd_get32(p->last + SMBD_NEGREQ_MAX_FRAGMENTED) >= SMBD_MIN_FRAGMENTED_SIZE);
    PCHECK(smbd_get32(p->last + SMBD_NEGREQ_MAX_RECEIVE) > SMBD_MIN_RECEIVE_SIZE);
    if (resp_len >= 12)
        p->credits_granted += smbd_get16(resp + SMBD_NEGRESP_CREDITS_GRANTED);
    PCHECK(peer_send_raw(p, resp, resp_len, 0));
    return 0;
}

static int peer_negotiate_std(peer *p, uint16_t granted)
{
    uint8_t r[32];
    peer_negresp(r, granted, 1364, 1364, 173910);
    return peer_negotiate(p, r, 32);
}

/* Peer: reassembles one upper-layer message of the client into buf. */
static int peer_reassemble(peer *p, uint8_t *buf, size_t cap, size_t *len, uint16_t grant_each)
{
    size_t have = 0, total = 0;
    for (;;) {
        PCHECK(peer_recv(p, PEER_TMO));
        uint32_t dlen = smbd_get32(p->last + SMBD_DATA_LENGTH);
        uint32_t rem = smbd_get32(p->last + SMBD_DATA_REMAINING);
        if (dlen == 0)
            continue;                     /* a credit message */
        PCHECK(smbd_get32(p->last + SMBD_DATA_OFFSET) == SMBD_DATA_PAYLOAD_OFFSET);
        PCHECK(smbd_get32(p->last + SMBD_DATA_HEADER_SIZE) == 0);
        PCHECK(p->last_len <= 1364);
        if (have == 0)
            total = dlen + rem;
        PCHECK(have + dlen + rem == total && total <= cap);
        memcpy(buf + have, p->last + SMBD_DATA_PAYLOAD_OFFSET, dlen);
        have += dlen;
        if (grant_each)
            PCHECK(peer_send_data(p, grant_each, 0, 0, NULL, 0, 0));
        if (rem == 0)
            break;
    }
    *len = have;
    return 0;
}

/* Peer: sends msg fragmented at seg bytes, granting grant on the first fragment. */
static int peer_send_msg(peer *p, const uint8_t *msg, size_t len, uint32_t seg, uint16_t grant, uint32_t inv)
{
    size_t off = 0;
    while (off < len) {
        uint32_t n = len - off < seg ? (uint32_t)(len - off) : seg;
        uint32_t rem = (uint32_t)(len - off - n);
        PCHECK(p->client_granted > 0);
        PCHECK(peer_send_data(p, off == 0 ? grant : 0, 0, rem, msg + off, n, rem == 0 ? inv : 0));
        off += n;
    }
    return 0;
}

/* ---- basic: negotiation, a 64 KiB message each way, fragmentation and reassembly ---- */

static int peer_basic(peer *p)
{
    static uint8_t buf[1 << 20];
    size_t len;
    PCHECK(peer_negotiate_std(p, 254) == 0);
    PCHECK(peer_reassemble(p, buf, sizeof buf, &len, 0) == 0);
    PCHECK(len == 65536 && ndk_test_check(buf, len, 1));
    PCHECK(p->client_granted > 0);        /* notes §0.5: the first message grants */
    ndk_test_fill(buf, 100000, 2);
    PCHECK(peer_send_msg(p, buf, 100000, 1340, 10, 0) == 0);
    /* A message of exactly the peer's limit arrives whole. */
    PCHECK(peer_reassemble(p, buf, sizeof buf, &len, 0) == 0);
    PCHECK(len == 173910 && ndk_test_check(buf, len, 3));
    PCHECK(p->violations == 0 && p->last_credit_violations == 0);
    while (peer_recv(p, 2000))
        ;
    return 0;
}

static void test_basic(void)
{
    pthread_t t;
    run_peer(&t, peer_basic);
    smbd_params sp = client_params(10000);
    smbd_conn *c;
    CHECK_EQ(client_connect(&sp, &c), 0);
    const smbd_negotiated *n = smbd_negotiated_info(c);
    CHECK_EQ(n->max_send_size, 1364);
    CHECK_EQ(n->max_fragmented_send, 173910);
    CHECK_EQ(n->initial_send_credits, 254);
    CHECK(n->ird >= 1);
    static uint8_t big[173911];
    ndk_test_fill(big, 65536, 1);
    CHECK_EQ(smbd_send(c, big, 65536), 0);
    uint8_t *m;
    size_t len;
    uint32_t inv;
    CHECK_EQ(smbd_recv(c, &m, &len, &inv, -1), 0);
    CHECK_EQ(len, 100000);
    CHECK(ndk_test_check(m, len, 2));
    CHECK_EQ(inv, 0);
    free(m);
    /* 3.1.4.2: one byte above the peer's MaxFragmentedSize is refused locally. */
    CHECK_EQ(smbd_send(c, big, 173911), -EMSGSIZE);
    CHECK_EQ(smbd_error(c), 0);
    ndk_test_fill(big, 173910, 3);
    CHECK_EQ(smbd_send(c, big, 173910), 0);
    smbd_stats st;
    smbd_get_stats(c, &st);
    CHECK_EQ(st.frags_sent, 49 + 130);
    uint64_t t0 = ndk_test_now_ms();
    smbd_close(c);
    CHECK_MSG(ndk_test_now_ms() - t0 < 5000, "close took %llu ms", (unsigned long long)(ndk_test_now_ms() - t0));
    join_peer(t);
}

/* ---- credits: a stingy peer (one credit at a time), and a peer that grants none ---- */

static int peer_stingy(peer *p)
{
    static uint8_t buf[65536];
    size_t len;
    PCHECK(peer_negotiate_std(p, 1) == 0);
    /* One credit per fragment: the client must pause after each and resume on the grant. */
    PCHECK(peer_reassemble(p, buf, sizeof buf, &len, 1) == 0);
    PCHECK(len == 20000 && ndk_test_check(buf, len, 4));
    PCHECK(p->violations == 0);
    PCHECK(p->last_credit_violations == 0);
    /* Now grant nothing more: the client's next send must time out cleanly. */
    while (peer_recv(p, 3000))
        ;
    PCHECK(p->violations == 0);
    return 0;
}

static void test_credits(void)
{
    pthread_t t;
    run_peer(&t, peer_stingy);
    smbd_params sp = client_params(1500);
    smbd_conn *c;
    CHECK_EQ(client_connect(&sp, &c), 0);
    uint8_t buf[20000];
    ndk_test_fill(buf, sizeof buf, 4);
    CHECK_EQ(smbd_send(c, buf, sizeof buf), 0);
    smbd_stats st;
    smbd_get_stats(c, &st);
    CHECK(st.credit_waits >= 10);
    /* The last grant (1 credit) is kept for a message that grants: the client has no credit to
     * spare once its receives are all granted, so the send stalls and fails cleanly. */
    uint64_t t0 = ndk_test_now_ms();
    int rc = 0;
    for (int i = 0; i < 4 && rc == 0; i++)
        rc = smbd_send(c, buf, 5000);
    CHECK_EQ(rc, -ETIMEDOUT);
    CHECK(ndk_test_now_ms() - t0 < 8000);
    CHECK(strstr(smbd_error_text(c), "credit") != NULL);
    CHECK_EQ(smbd_send(c, buf, 10), -ETIMEDOUT);   /* the first error sticks */
    smbd_close(c);
    join_peer(t);
}

/* ---- keep-alive: an idle peer gets a RESPONSE_REQUESTED probe, then the client gives up ---- */

static int peer_keepalive(peer *p)
{
    PCHECK(peer_negotiate_std(p, 10) == 0);
    bool probed = false;
    while (peer_recv(p, 3000))
        if (smbd_get16(p->last + SMBD_DATA_FLAGS) & SMBD_FLAG_RESPONSE_REQUESTED)
            probed = true;
    PCHECK(probed);
    return 0;
}

static void test_keepalive(void)
{
    pthread_t t;
    run_peer(&t, peer_keepalive);
    smbd_params sp = client_params(5000);
    sp.keepalive_ms = 300;
    smbd_conn *c;
    CHECK_EQ(client_connect(&sp, &c), 0);
    uint8_t *m;
    size_t len;
    uint64_t t0 = ndk_test_now_ms();
    CHECK_EQ(smbd_recv(c, &m, &len, NULL, 4000), -ETIMEDOUT);
    CHECK(ndk_test_now_ms() - t0 < 2000);
    CHECK(strstr(smbd_error_text(c), "keep-alive") != NULL);
    smbd_close(c);
    join_peer(t);
}

/* ---- malformed and oversize messages, bad negotiate responses ---- */

enum { BAD_SHORT, BAD_ALIGN, BAD_BEYOND, BAD_CREQ0, BAD_CONT, BAD_OVERSIZE, BAD_EMPTY_REM, BAD_N };
static const char *const bad_names[] = { "short", "align", "beyond", "creq0", "continuation", "oversize",
                                         "empty-remaining" };
static int bad_case;

static int peer_malformed(peer *p)
{
    PCHECK(peer_negotiate_std(p, 10) == 0);
    PCHECK(peer_recv(p, PEER_TMO));        /* the client's first message, with its grant */
    uint8_t m[64] = { 0 };
    smbd_put16(m + SMBD_DATA_CREDITS_REQUESTED, 255);
    smbd_put32(m + SMBD_DATA_OFFSET, 24);
    smbd_put32(m + SMBD_DATA_LENGTH, 8);
    uint32_t len = 32;
    switch (bad_case) {
    case BAD_SHORT: len = 10; break;
    case BAD_ALIGN: smbd_put32(m + SMBD_DATA_OFFSET, 28); len = 40; break;
    case BAD_BEYOND: smbd_put32(m + SMBD_DATA_LENGTH, 100); break;
    case BAD_CREQ0: smbd_put16(m + SMBD_DATA_CREDITS_REQUESTED, 0); break;
    case BAD_OVERSIZE: smbd_put32(m + SMBD_DATA_REMAINING, 131072); break;
    case BAD_EMPTY_REM: smbd_put32(m + SMBD_DATA_LENGTH, 0); smbd_put32(m + SMBD_DATA_OFFSET, 0);
                        smbd_put32(m + SMBD_DATA_REMAINING, 5); len = 20; break;
    case BAD_CONT: {
        /* A message announcing 100 more bytes, then a fragment that claims to end it early. */
        smbd_put32(m + SMBD_DATA_REMAINING, 100);
        PCHECK(peer_send_raw(p, m, 32, 0));
        smbd_put32(m + SMBD_DATA_REMAINING, 0);
        break;
    }
    }
    peer_send_raw(p, m, len, 0);           /* may fail once the client has torn down */
    while (peer_recv(p, 2000))
        ;
    return 0;
}

static void test_malformed(void)
{
    for (bad_case = 0; bad_case < BAD_N; bad_case++) {
        pthread_t t;
        run_peer(&t, peer_malformed);
        smbd_params sp = client_params(5000);
        sp.max_fragmented_size = SMBD_MIN_FRAGMENTED_SIZE;
        smbd_conn *c;
        CHECK_EQ(client_connect(&sp, &c), 0);
        CHECK_EQ(smbd_send(c, "hello", 5), 0);
        uint8_t *m = NULL;
        size_t len;
        int rc = smbd_recv(c, &m, &len, NULL, 4000);
        CHECK_MSG(rc == (bad_case == BAD_OVERSIZE ? -EMSGSIZE : -EPROTO), "case %s: rc %d (%s)", bad_names[bad_case],
                  rc, smbd_error_text(c));
        printf("malformed %-16s -> %s\n", bad_names[bad_case], smbd_error_text(c));
        smbd_close(c);
        join_peer(t);
    }
}

enum { NEG_STATUS, NEG_NOCREDIT, NEG_SHORT, NEG_PREF, NEG_VERSION, NEG_SILENT, NEG_N };
static int neg_case;

static int peer_badneg(peer *p)
{
    uint8_t r[32];
    peer_negresp(r, 10, 1364, 1364, 173910);
    uint32_t len = 32;
    switch (neg_case) {
    case NEG_STATUS: smbd_put32(r + SMBD_NEGRESP_STATUS, 0xC00000BB); break;
    case NEG_NOCREDIT: smbd_put16(r + SMBD_NEGRESP_CREDITS_GRANTED, 0); break;
    case NEG_SHORT: len = 31; break;
    case NEG_PREF: smbd_put32(r + SMBD_NEGRESP_PREFERRED_SEND, 8192); break;
    case NEG_VERSION: smbd_put16(r + SMBD_NEGRESP_NEGOTIATED, 0x0200); break;
    case NEG_SILENT:
        PCHECK(peer_accept(p));
        PCHECK(peer_recv(p, PEER_TMO));
        while (peer_recv(p, 2500))
            ;
        return 0;
    }
    PCHECK(peer_negotiate(p, r, len) == 0);
    while (peer_recv(p, 2000))
        ;
    return 0;
}

static void test_negotiate(void)
{
    for (neg_case = 0; neg_case < NEG_N; neg_case++) {
        pthread_t t;
        run_peer(&t, peer_badneg);
        smbd_params sp = client_params(1500);
        smbd_conn *c = NULL;
        int rc = client_connect(&sp, &c);
        CHECK_MSG(rc == (neg_case == NEG_SILENT ? -ETIMEDOUT : -EPROTO), "negotiate case %d: rc %d (%s)", neg_case, rc,
                  c ? smbd_error_text(c) : "");
        printf("negotiate case %d -> %s\n", neg_case, smbd_error_text(c));
        smbd_close(c);
        join_peer(t);
    }
}

/* ---- disconnect mid-reassembly ---- */

static int peer_disconnect(peer *p)
{
    static uint8_t buf[8192];
    PCHECK(peer_negotiate_std(p, 10) == 0);
    PCHECK(peer_recv(p, PEER_TMO));
    ndk_test_fill(buf, sizeof buf, 5);
    /* Three fragments of a 100000-byte message, then the connection goes away. */
    for (int i = 0; i < 3; i++)
        PCHECK(peer_send_data(p, i == 0 ? 5 : 0, 0, 100000 - 1340 * (i + 1), buf + 1340 * i, 1340, 0));
    peer_drop(p);
    return 0;
}

static void test_disconnect(void)
{
    pthread_t t;
    run_peer(&t, peer_disconnect);
    smbd_params sp = client_params(10000);
    smbd_conn *c;
    CHECK_EQ(client_connect(&sp, &c), 0);
    CHECK_EQ(smbd_send(c, "x", 1), 0);
    uint8_t *m;
    size_t len;
    uint64_t t0 = ndk_test_now_ms();
    int rc = smbd_recv(c, &m, &len, NULL, 9000);
    CHECK_MSG(rc == -ECONNRESET, "rc %d (%s)", rc, smbd_error_text(c));
    printf("disconnect mid-reassembly after %llu ms -> %s\n", (unsigned long long)(ndk_test_now_ms() - t0),
           smbd_error_text(c));
    CHECK_EQ(smbd_send(c, "x", 1), -ECONNRESET);
    t0 = ndk_test_now_ms();
    smbd_close(c);
    CHECK_MSG(ndk_test_now_ms() - t0 < 8000, "close took %llu ms", (unsigned long long)(ndk_test_now_ms() - t0));
    join_peer(t);
}

/* ---- RDMA buffers: fast registration, remote and local invalidation ---- */

/* Client message: n descriptors (16 bytes each). */
static int peer_invalidate(peer *p)
{
    PCHECK(peer_negotiate_std(p, 100) == 0);
    for (int round = 0; round < 3; round++) {
        uint8_t msg[512];
        size_t len;
        PCHECK(peer_reassemble(p, msg, sizeof msg, &len, 0) == 0);
        PCHECK(len >= 16 && len % 16 == 0);
        unsigned n = (unsigned)(len / 16);
        size_t off = 0;
        uint32_t tok0 = smbd_get32(msg + SMBD_BUFDESC_TOKEN);
        if (round == 0)
            ndk_test_fill(p->dmem.buf, 2 << 20, 6);
        for (unsigned i = 0; i < n; i++) {
            uint64_t va = smbd_get64(msg + 16 * i + SMBD_BUFDESC_OFFSET);
            uint32_t tok = smbd_get32(msg + 16 * i + SMBD_BUFDESC_TOKEN);
            uint32_t l = smbd_get32(msg + 16 * i + SMBD_BUFDESC_LENGTH);
            PCHECK(peer_rdma(p, round != 1, off, va, tok, l));
            off += l;
        }
        if (round == 1)
            PCHECK(ndk_test_check(p->dmem.buf, off, 7));
        /* Round 0: Send-with-Invalidate of descriptor 0 (MS-SMB2 3.3.5.12); round 1: plain;
         * round 2: invalidates a token the client did not expect (it names another buffer). */
        uint32_t inv = round == 0 ? tok0 : 0;
        if (round == 2) {
            uint8_t other[16];
            size_t ol;
            PCHECK(peer_reassemble(p, other, sizeof other, &ol, 0) == 0);
            inv = smbd_get32(other + SMBD_BUFDESC_TOKEN);
        }
        PCHECK(peer_send_msg(p, (const uint8_t *)"done", 4, 1340, 20, inv) == 0);
    }
    while (peer_recv(p, 2000))
        ;
    return 0;
}

static void client_descs(smbd_conn *c, const smbd_buffer_desc *d, unsigned n)
{
    uint8_t m[SMBD_MAX_DESCS * 16];
    for (unsigned i = 0; i < n; i++) {
        smbd_put64(m + 16 * i + SMBD_BUFDESC_OFFSET, d[i].offset);
        smbd_put32(m + 16 * i + SMBD_BUFDESC_TOKEN, d[i].token);
        smbd_put32(m + 16 * i + SMBD_BUFDESC_LENGTH, d[i].length);
    }
    CHECK_EQ(smbd_send(c, m, 16 * n), 0);
}

static void test_invalidate(void)
{
    pthread_t t;
    run_peer(&t, peer_invalidate);
    smbd_params sp = client_params(10000);
    smbd_conn *c;
    CHECK_EQ(client_connect(&sp, &c), 0);
    size_t sz = (2 << 20) - 100;
    uint8_t *buf = aligned_alloc(4096, 2 << 20);
    memset(buf, 0, 2 << 20);
    uint8_t *io = buf + 100;               /* not page aligned: FBO 100 */
    smbd_mr *mr;
    smbd_buffer_desc d[SMBD_MAX_DESCS];
    unsigned n;

    /* Round 0: the peer RDMA-writes, then invalidates descriptor 0 remotely. */
    CHECK_EQ(smbd_mr_register(c, io, sz, true, &mr, d, &n), 0);
    CHECK(n >= 2);
    size_t sum = 0;
    for (unsigned i = 0; i < n; i++)
        sum += d[i].length;
    CHECK_EQ(sum, sz);
    CHECK_EQ(d[0].offset, (uint64_t)(uintptr_t)io);
    client_descs(c, d, n);
    uint8_t *m;
    size_t len;
    uint32_t inv;
    CHECK_EQ(smbd_recv(c, &m, &len, &inv, -1), 0);
    free(m);
    CHECK_EQ(inv, d[0].token);
    CHECK(ndk_test_check(io, sz, 6));
    CHECK_EQ(smbd_mr_release(c, mr, inv), 0);
    smbd_stats st;
    smbd_get_stats(c, &st);
    CHECK_EQ(st.remote_invalidations, 1);
    CHECK_EQ(st.local_invalidations, n - 1);

    /* Round 1: the peer RDMA-reads; nothing is invalidated remotely, so all locally. */
    ndk_test_fill(io, sz, 7);
    CHECK_EQ(smbd_mr_register(c, io, sz, false, &mr, d, &n), 0);
    client_descs(c, d, n);
    CHECK_EQ(smbd_recv(c, &m, &len, &inv, -1), 0);
    free(m);
    CHECK_EQ(inv, 0);
    CHECK_EQ(smbd_mr_release(c, mr, inv), 0);
    smbd_get_stats(c, &st);
    CHECK_EQ(st.local_invalidations, 2 * n - 1);

    /* Round 2: the peer invalidates the other buffer's token: a protocol error. */
    smbd_mr *mr2;
    smbd_buffer_desc d2[SMBD_MAX_DESCS];
    unsigned n2;
    CHECK_EQ(smbd_mr_register(c, io, 4096, true, &mr, d, &n), 0);
    CHECK_EQ(smbd_mr_register(c, buf + (1 << 20), 4096, true, &mr2, d2, &n2), 0);
    client_descs(c, d, n);
    client_descs(c, d2, n2);
    CHECK_EQ(smbd_recv(c, &m, &len, &inv, -1), 0);
    free(m);
    CHECK_EQ(inv, d2[0].token);
    CHECK_EQ(smbd_mr_release(c, mr, inv), -EPROTO);
    CHECK(smbd_mr_release(c, mr2, 0) != 0);
    smbd_close(c);
    free(buf);
    join_peer(t);
}

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "basic";
    peer_start(&P);
    client_open();
    if (!strcmp(which, "basic"))
        test_basic();
    else if (!strcmp(which, "credits"))
        test_credits();
    else if (!strcmp(which, "keepalive"))
        test_keepalive();
    else if (!strcmp(which, "malformed"))
        test_malformed();
    else if (!strcmp(which, "negotiate"))
        test_negotiate();
    else if (!strcmp(which, "disconnect"))
        test_disconnect();
    else if (!strcmp(which, "invalidate"))
        test_invalidate();
    else
        CHECK_MSG(false, "unknown scenario %s", which);
    client_close();
    peer_stop(&P);
    printf("smbd %s: ok\n", which);
    return 0;
}
