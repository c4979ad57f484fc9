/* test_dp_e2e: every data-path operation between two processes over 127.0.0.1 and ::1 through
 * the real runtime and the iwarp provider, payloads checked byte for byte: Send (sizes 0 .. 16
 * MiB, 1 .. 16 SGEs, solicited), RDMA Write and Read (sizes, several SGEs), and the measured
 * bandwidth of 16 MiB Writes and Reads. The server owns a registered region and posts receives;
 * the client drives the requests. Pipes carry tokens, addresses and "verified" acks. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dpe2e.h"

#define TMO DPE_TMO
#define BIG (16u << 20)
#define MAXSGE DPE_MAXSGE
/* Server region layout: every area is written by one phase only, so a check by the consumer
 * never races a later placement into the same bytes (TSan sees no cross-process ordering). */
#define SRV_LEN   (64u << 20)
#define SEND_AREA 0u                  /* Sends of every size, back to back (page aligned) */
#define SGE_AREA  (18u << 20)         /* multi-SGE Sends */
#define WR_AREA   (20u << 20)         /* Writes of every size, back to back */
#define RD_AREA   (40u << 20)         /* filled by the server, Read by the client */

struct arg {
    int family;
    struct iwt_chan ch;
};

static NDK_RESULT_EX expect(struct dpe_side *s, void *ctx, NDK_OPERATION_TYPE type)
{
    NDK_RESULT_EX r;
    CHECK_MSG(iwt_cq_wait(s->cq, &r, TMO), "no completion for %p", ctx);
    CHECK_STATUS(r.Status, STATUS_SUCCESS);
    CHECK(r.RequestContext == ctx);
    CHECK_EQ(r.Type, type);
    CHECK(r.QPContext == s);
    return r;
}

static const size_t sizes[] = { 0, 1, 4095, 4096, 65536, 1u << 20, 16u << 20 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

static atomic_int g_disc;
static void on_disc(void *ctx) { (void)ctx; atomic_store(&g_disc, 1); }

static int server(void *p)
{
    struct arg *a = p;
    struct dpe_side s;
    struct iwt_req rq;
    NDK_LISTENER *l;
    NDK_CONNECTOR *c;
    NTSTATUS st;

    dpe_side_open(&s, a->family, SRV_LEN, NULL, NULL);
    l = dpe_listen(&s, iwt_srv_tx(&a->ch));

    /* receives for the Send phase, posted before the connection exists (§8 item 28) */
    size_t soff[NSIZES], off = SEND_AREA;
    for (size_t i = 0; i < NSIZES; i++) {
        soff[i] = off;
        NDK_SGE r = { .VirtualAddress = s.buf + off, .Length = (ULONG)(sizes[i] + 4096), .MemoryRegionToken = s.token };
        CHECK_STATUS(s.qp->Dispatch->NdkReceive(s.qp, (void *)(uintptr_t)(100 + i), &r, 1), STATUS_SUCCESS);
        off += (sizes[i] + 8191) & ~(size_t)4095;
    }

    c = dpe_accept(&s, on_disc);

    /* Sends of every size */
    for (size_t i = 0; i < NSIZES; i++) {
        NDK_RESULT_EX res = expect(&s, (void *)(uintptr_t)(100 + i), NdkOperationTypeReceive);
        CHECK_EQ(res.BytesTransferred, sizes[i]);
        CHECK(ndk_test_check(s.buf + soff[i], sizes[i], 10 + (uint32_t)i));
        iwt_send(iwt_srv_tx(&a->ch), 1);
    }
    /* multi-SGE sends: receive scattered into 16 pieces with gaps */
    for (uint32_t n = 1; n <= MAXSGE; n++) {
        size_t total = 3000 + 1111 * n, per = total / n;
        NDK_SGE sg[MAXSGE];
        for (uint32_t k = 0; k < n; k++) {
            sg[k].VirtualAddress = s.buf + SGE_AREA + k * (per + 64);
            sg[k].Length = (ULONG)(k == n - 1 ? total - per * k : per);
            sg[k].MemoryRegionToken = s.token;
        }
        CHECK_STATUS(s.qp->Dispatch->NdkReceive(s.qp, (void *)(uintptr_t)(200 + n), sg, n), STATUS_SUCCESS);
        iwt_send(iwt_srv_tx(&a->ch), 2);
        NDK_RESULT_EX res = expect(&s, (void *)(uintptr_t)(200 + n), NdkOperationTypeReceive);
        CHECK_EQ(res.BytesTransferred, total);
        uint8_t *g = malloc(total);
        size_t o = 0;
        for (uint32_t k = 0; k < n; k++) {
            memcpy(g + o, sg[k].VirtualAddress, sg[k].Length);
            o += sg[k].Length;
        }
        CHECK(ndk_test_check(g, total, 50 + n));
        free(g);
        iwt_send(iwt_srv_tx(&a->ch), 3);
    }
    /* Writes: the client Sends a zero-length "done" after each; we check the region */
    off = WR_AREA;
    for (size_t i = 0; i < NSIZES; i++) {
        CHECK_STATUS(s.qp->Dispatch->NdkReceive(s.qp, (void *)(uintptr_t)(300 + i), NULL, 0), STATUS_SUCCESS);
        iwt_send(iwt_srv_tx(&a->ch), 4);
        expect(&s, (void *)(uintptr_t)(300 + i), NdkOperationTypeReceive);
        CHECK(ndk_test_check(s.buf + off + 7, sizes[i], 20 + (uint32_t)i));
        off += (sizes[i] + 8191) & ~(size_t)4095;
        iwt_send(iwt_srv_tx(&a->ch), 5);
    }
    /* Reads: fill the area with a pattern; the client reads and checks. The receive posted after
     * the fill orders it before the engines' reads (qp->lock), as any post would. */
    ndk_test_fill(s.buf + RD_AREA, BIG, 77);
    CHECK_STATUS(s.qp->Dispatch->NdkReceive(s.qp, (void *)0x999, NULL, 0), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a->ch), 6);
    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), 120000), 7);      /* client done */

    CHECK_MSG(iwt_wait_atomic(&g_disc, 1, TMO), "no disconnect event");
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    iwt_req_wait(&rq, st, TMO);
    iwt_close_obj(c, TMO);
    iwt_close_obj(l, TMO);
    dpe_side_close(&s);
    return 0;
}

static int client(void *p)
{
    struct arg *a = p;
    struct dpe_side s;
    struct iwt_req rq;
    struct dpe_peer peer;
    NDK_CONNECTOR *c;
    NTSTATUS st;

    dpe_recv_peer(&peer, iwt_cli_rx(&a->ch));
    uint32_t rtok = peer.token;
    uint64_t rva = peer.va;
    dpe_side_open(&s, a->family, 2 * (size_t)BIG, NULL, NULL);
    c = dpe_connect(&s, peer.port, on_disc);

    for (size_t i = 0; i < NSIZES; i++) {
        NDK_SGE sg = { .VirtualAddress = s.buf, .Length = (ULONG)sizes[i], .MemoryRegionToken = s.token };
        ndk_test_fill(s.buf, sizes[i], 10 + (uint32_t)i);
        CHECK_STATUS(s.qp->Dispatch->NdkSend(s.qp, (void *)(uintptr_t)(1 + i), &sg, 1,
                                             i & 1 ? NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT : 0),
                     STATUS_SUCCESS);
        expect(&s, (void *)(uintptr_t)(1 + i), NdkOperationTypeSend);
        CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 1);
    }
    for (uint32_t n = 1; n <= MAXSGE; n++) {
        size_t total = 3000 + 1111 * n, per = total / n;
        NDK_SGE sg[MAXSGE];
        ndk_test_fill(s.buf, total, 50 + n);
        for (uint32_t k = 0; k < n; k++) {
            sg[k].VirtualAddress = s.buf + per * k;
            sg[k].Length = (ULONG)(k == n - 1 ? total - per * k : per);
            sg[k].MemoryRegionToken = s.token;
        }
        CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 2);
        CHECK_STATUS(s.qp->Dispatch->NdkSend(s.qp, (void *)(uintptr_t)(40 + n), sg, n, 0), STATUS_SUCCESS);
        expect(&s, (void *)(uintptr_t)(40 + n), NdkOperationTypeSend);
        CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 3);
    }
    uint64_t woff = WR_AREA;
    for (size_t i = 0; i < NSIZES; i++) {
        NDK_SGE sg = { .VirtualAddress = s.buf, .Length = (ULONG)sizes[i], .MemoryRegionToken = s.token };
        ndk_test_fill(s.buf, sizes[i], 20 + (uint32_t)i);
        CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 4);
        uint64_t t0 = ndk_test_now_ms();
        CHECK_STATUS(s.qp->Dispatch->NdkWrite(s.qp, (void *)(uintptr_t)(60 + i), &sg, 1, rva + woff + 7, rtok, 0),
                     STATUS_SUCCESS);
        woff += (sizes[i] + 8191) & ~(size_t)4095;
        CHECK_STATUS(s.qp->Dispatch->NdkSend(s.qp, (void *)(uintptr_t)(70 + i), NULL, 0, 0), STATUS_SUCCESS);
        expect(&s, (void *)(uintptr_t)(60 + i), NdkOperationTypeWrite);
        expect(&s, (void *)(uintptr_t)(70 + i), NdkOperationTypeSend);
        CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 5);
        if (sizes[i] == BIG) {
            uint64_t ms = ndk_test_now_ms() - t0;
            printf("  %s: 16 MiB RDMA Write + check: %llu ms\n", iwt_family_name(a->family), (unsigned long long)ms);
        }
    }
    CHECK_EQ(iwt_recv(iwt_cli_rx(&a->ch), TMO), 6);
    /* Reads of every size, then with 1..16 SGEs, then a timed batch of 16 MiB reads */
    for (size_t i = 0; i < NSIZES; i++) {
        if (!sizes[i])
            continue;
        NDK_SGE sg = { .VirtualAddress = s.buf, .Length = (ULONG)sizes[i], .MemoryRegionToken = s.token };
        memset(s.buf, 0, sizes[i]);
        CHECK_STATUS(s.qp->Dispatch->NdkRead(s.qp, (void *)(uintptr_t)(80 + i), &sg, 1, rva + RD_AREA, rtok, 0),
                     STATUS_SUCCESS);
        expect(&s, (void *)(uintptr_t)(80 + i), NdkOperationTypeRead);
        CHECK(ndk_test_check(s.buf, sizes[i], 77));
    }
    for (uint32_t n = 1; n <= MAXSGE; n++) {
        size_t total = 70000 + 999 * n, per = total / n;
        NDK_SGE sg[MAXSGE];
        memset(s.buf, 0, total);
        for (uint32_t k = 0; k < n; k++) {
            sg[k].VirtualAddress = s.buf + per * k;
            sg[k].Length = (ULONG)(k == n - 1 ? total - per * k : per);
            sg[k].MemoryRegionToken = s.token;
        }
        CHECK_STATUS(s.qp->Dispatch->NdkRead(s.qp, (void *)(uintptr_t)(90 + n), sg, n, rva + RD_AREA, rtok, 0),
                     STATUS_SUCCESS);
        expect(&s, (void *)(uintptr_t)(90 + n), NdkOperationTypeRead);
        CHECK(ndk_test_check(s.buf, total, 77));
    }
    {
        const int reps = 8;
        uint64_t t0 = ndk_test_now_ms();
        for (int k = 0; k < reps; k++) {
            NDK_SGE sg = { .VirtualAddress = s.buf + (k & 1) * (size_t)BIG, .Length = BIG, .MemoryRegionToken = s.token };
            CHECK_STATUS(s.qp->Dispatch->NdkRead(s.qp, (void *)(uintptr_t)(500 + k), &sg, 1, rva + RD_AREA, rtok, 0),
                         STATUS_SUCCESS);
        }
        for (int k = 0; k < reps; k++)
            expect(&s, (void *)(uintptr_t)(500 + k), NdkOperationTypeRead);
        uint64_t ms = ndk_test_now_ms() - t0;
        printf("  %s: RDMA Read %d x 16 MiB: %.0f MB/s\n", iwt_family_name(a->family), reps,
               ms ? reps * 16.0 * 1048576 / 1e6 / (ms / 1000.0) : 0.0);
        CHECK(ndk_test_check(s.buf, BIG, 77) && ndk_test_check(s.buf + BIG, BIG, 77));
        t0 = ndk_test_now_ms();
        for (int k = 0; k < reps; k++) {
            NDK_SGE sg = { .VirtualAddress = s.buf, .Length = BIG, .MemoryRegionToken = s.token };
            CHECK_STATUS(s.qp->Dispatch->NdkWrite(s.qp, (void *)(uintptr_t)(600 + k), &sg, 1, rva + SEND_AREA, rtok, 0),
                         STATUS_SUCCESS);
        }
        for (int k = 0; k < reps; k++)
            expect(&s, (void *)(uintptr_t)(600 + k), NdkOperationTypeWrite);
        ms = ndk_test_now_ms() - t0;
        printf("  %s: RDMA Write %d x 16 MiB: %.0f MB/s\n", iwt_family_name(a->family), reps,
               ms ? reps * 16.0 * 1048576 / 1e6 / (ms / 1000.0) : 0.0);
    }
    iwt_send(iwt_cli_tx(&a->ch), 7);
    iwt_req_init(&rq);
    st = c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq);
    CHECK_STATUS(iwt_req_wait(&rq, st, TMO), STATUS_SUCCESS);
    iwt_close_obj(c, TMO);
    dpe_side_close(&s);
    return 0;
}

static void body(int family)
{
    struct arg a = { .family = family };
    iwt_chan_init(&a.ch);
    iwt_run_pair(server, client, &a, 170000);
    iwt_chan_close(&a.ch);
}

int main(void)
{
    iwt_for_each_family(body);
    printf("test_dp_e2e: OK\n");
    return 0;
}
