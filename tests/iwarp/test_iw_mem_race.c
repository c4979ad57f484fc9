/* Revoking remote access while the peer writes into the region as fast as it can, over
 * 127.0.0.1 and ::1 (issue 39's safety test for the memory-key lookup and the CQ).
 *
 * The target process registers 256 KiB inside writable pages that lie between two PROT_NONE
 * pages, every byte around the registration a canary. The writer process, a second
 * process with its own runtime, keeps 32 RDMA Writes of random offsets and sizes in flight into
 * it. At a random moment the target revokes access, one way per round: NdkDeregisterMr, closing
 * the MR object, NdkInvalidate of a memory window bound inside a region that grants no remote
 * access itself, or NdkInvalidate of a fast-registered MR (what SMB Direct does with every
 * buffer it lends a peer) (one mode per run: the argument). Then:
 *   - once the revocation has completed, not one byte of the pages may change (the peer's
 *     later Writes meet an invalid STag: a Terminate, and the writer sees its Writes fail);
 *   - no byte outside the live registration (or window) is ever written;
 *   - bytes did land before the revocation (the round tested something).
 * In odd rounds a thread of the target busy-polls its CQ, so the QP's socket is read and the
 * Writes placed by that thread while the main thread revokes; in even rounds the provider's
 * progress thread places them. */
#include "iwtest.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TMO 10000
#define PAGE 4096u
#define NPAGES 66u               /* writable pages, between two PROT_NONE ones */
#define ROFF 64u                 /* the registration's offset in them */
#define RLEN (256u * 1024 - 100) /* its length */
#define WOFF 4352u               /* the window's offset in the registration */
#define WLEN (128u * 1024)       /* its length */
#define BIG (64u * 1024)         /* the largest Write: placed over several reads */
#define CANARY 0xC3
#define ROUNDS 30                /* per family: a deregistration that does not wait for the
                                  * placements in flight fails 6 runs in 6, an invalidation that
                                  * does not, 6 in 8 */
#define INFLIGHT 32
#define WRITING_AFTER 64         /* the writer reports "writing" after this many completions */
#define CTX_BIND ((void *)0xB1)
#define CTX_FAST_REGISTER ((void *)0xF1)
#define CTX_INVALIDATE ((void *)0xC1)

enum mode { M_DEREG, M_CLOSE_MR, M_INVALIDATE_MW, M_INVALIDATE_FRMR, M_NMODES };
static const char *const mode_name[M_NMODES] = { "deregister", "close the MR", "invalidate the window",
                                                 "invalidate the fast-registered MR" };

/* Writer -> target over the pipe. */
enum { W_WRITING = 1, W_STOPPED_BY_ERROR = 2, W_TIMED_OUT = 3 };

struct arg {
    int family;
    struct iwt_chan ch;
};

static uint32_t rnd(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Disconnects (the connection may be gone already: any status) and closes the connector. */
static void drop_connector(NDK_CONNECTOR *c)
{
    struct iwt_req rq;

    iwt_req_init(&rq);
    iwt_req_wait(&rq, c->Dispatch->NdkDisconnect(c, iwt_req_cb, &rq), TMO);
    iwt_close_obj(c, TMO);
}

/* ---- the writer ---- */

static void writer_round(struct arg *a, struct iwt *t, uint16_t port, uint32_t seed)
{
    struct iwt_qp q;
    struct iwt_req rq;
    NDK_CONNECTOR *c;
    PMDL mdl;
    static uint8_t src[BIG];
    SOCKADDR_INET from = iwt_addr(t, 0), to = iwt_addr(t, port);

    iwt_qp_create(t, &q, 2 * INFLIGHT);
    NDK_MR *mr = iwt_mr_register(q.pd, src, sizeof src, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, &mdl);
    UINT32 ltok = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
    CHECK_STATUS(t->ad->Dispatch->NdkCreateConnector(t->ad, NULL, NULL, &c), STATUS_SUCCESS);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, c->Dispatch->NdkConnect(c, q.qp, (PSOCKADDR)&from, iwt_addr_len(&from),
                                                          (PSOCKADDR)&to, iwt_addr_len(&to), 1, 1, NULL, 0,
                                                          iwt_req_cb, &rq), TMO), STATUS_SUCCESS);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, c->Dispatch->NdkCompleteConnect(c, iwt_on_disconnect, NULL, iwt_req_cb, &rq),
                              TMO), STATUS_SUCCESS);
    uint64_t va = iwt_recv(iwt_cli_rx(&a->ch), TMO);
    va |= (uint64_t)iwt_recv(iwt_cli_rx(&a->ch), TMO) << 32;
    uint32_t len = iwt_recv(iwt_cli_rx(&a->ch), TMO);
    UINT32 token = iwt_recv(iwt_cli_rx(&a->ch), TMO);
    memset(src, (int)iwt_recv(iwt_cli_rx(&a->ch), TMO), sizeof src);

    unsigned inflight = 0, completed = 0;
    bool told = false, failed = false;
    uint64_t end = ndk_test_now_ms() + 5000;
    while (!failed && ndk_test_now_ms() < end) {
        while (!failed && inflight < INFLIGHT) {
            /* Small Writes (many headers, many lookups) and large ones (a placement that waits
             * for the rest of its segment holds the region meanwhile). */
            uint32_t n = rnd(&seed) % 2 ? 1 + rnd(&seed) % 64 : 1 + rnd(&seed) % BIG;
            if (n > len)
                n = len;
            uint32_t off = rnd(&seed) % (len - n + 1);
            NDK_SGE sge = { .VirtualAddress = src, .Length = n, .MemoryRegionToken = ltok };
            if (q.qp->Dispatch->NdkWrite(q.qp, NULL, &sge, 1, va + off, token, 0) != STATUS_SUCCESS)
                failed = true;
            else
                inflight++;
        }
        NDK_RESULT_EX r[INFLIGHT];
        ULONG got = q.cq->Dispatch->NdkGetCqResultsEx(q.cq, r, INFLIGHT);
        for (ULONG i = 0; i < got; i++) {
            inflight--;
            if (r[i].Status != STATUS_SUCCESS)
                failed = true;
            else if (++completed == WRITING_AFTER) {
                iwt_send(iwt_cli_tx(&a->ch), W_WRITING);
                told = true;
            }
        }
    }
    if (!told)
        iwt_send(iwt_cli_tx(&a->ch), W_WRITING);
    iwt_send(iwt_cli_tx(&a->ch), failed ? W_STOPPED_BY_ERROR : W_TIMED_OUT);
    drop_connector(c);
    /* The Writes still queued are flushed by the disconnect. */
    for (uint64_t until = ndk_test_now_ms() + TMO; inflight && ndk_test_now_ms() < until;) {
        NDK_RESULT_EX r[INFLIGHT];
        ULONG got = q.cq->Dispatch->NdkGetCqResultsEx(q.cq, r, INFLIGHT);
        inflight -= got;
        if (!got)
            usleep(1000);
    }
    CHECK_EQ(inflight, 0);
    iwt_mr_release(mr, mdl, TMO);
    iwt_qp_destroy(&q);
}

static int writer(void *p)
{
    struct arg *a = p;
    struct iwt t;
    uint16_t port = (uint16_t)iwt_recv(iwt_cli_rx(&a->ch), TMO);
    uint32_t round;

    iwt_open(&t, a->family);
    while ((round = iwt_recv(iwt_cli_rx(&a->ch), TMO)) != 0)
        writer_round(a, &t, port, 0x9E3779B9u * round);
    iwt_close(&t);
    return 0;
}

/* ---- the target ---- */

/* The target's CQ, polled by the main thread or, while it runs, by the poller thread, which
 * keeps what it finds for the main thread. Job of lock: found[] and nfound. */
struct target_cq {
    NDK_CQ *cq;
    atomic_bool run;
    pthread_mutex_t lock;
    NDK_RESULT_EX found[8];
    unsigned nfound;
};

static void *poller(void *p)
{
    struct target_cq *tc = p;

    while (atomic_load(&tc->run)) {
        NDK_RESULT_EX r;
        if (tc->cq->Dispatch->NdkGetCqResultsEx(tc->cq, &r, 1) == 1) {
            pthread_mutex_lock(&tc->lock);
            CHECK(tc->nfound < 8);
            tc->found[tc->nfound++] = r;
            pthread_mutex_unlock(&tc->lock);
        }
    }
    return NULL;
}

/* Waits for the completion of ctx and returns its status. */
static NTSTATUS target_wait(struct target_cq *tc, void *ctx, bool polled)
{
    uint64_t end = ndk_test_now_ms() + TMO;

    for (;;) {
        NDK_RESULT_EX r;
        bool have = false;
        if (polled) {
            pthread_mutex_lock(&tc->lock);
            if (tc->nfound) {
                r = tc->found[0];
                memmove(tc->found, tc->found + 1, --tc->nfound * sizeof r);
                have = true;
            }
            pthread_mutex_unlock(&tc->lock);
        } else {
            have = tc->cq->Dispatch->NdkGetCqResultsEx(tc->cq, &r, 1) == 1;
        }
        if (have) {
            CHECK_MSG(r.RequestContext == ctx, "an unexpected completion (context %p, status 0x%08x)",
                      r.RequestContext, (unsigned)r.Status);
            return r.Status;
        }
        CHECK_MSG(ndk_test_now_ms() < end, "no completion for context %p", ctx);
        usleep(200);
    }
}

/* Waits until a byte of the round has landed: the writer's Writes complete once sent, before
 * they are placed. The provider places them meanwhile (a kernel copy or its own, on another
 * thread): reading a region the peer writes into is what the consumer of a real RNIC does, so the
 * race is the point, not a finding. */
__attribute__((no_sanitize("thread"))) static void wait_landed(const volatile uint8_t *b, uint32_t len, uint8_t byte)
{
    for (uint64_t end = ndk_test_now_ms() + TMO; ndk_test_now_ms() < end;) {
        for (uint32_t i = 0; i < len; i++)
            if (b[i] == byte)
                return;
        sched_yield();
    }
    CHECK_MSG(0, "no Write landed in %d ms", TMO);
}

static void check_canary(const uint8_t *b, size_t from, size_t to, const char *what)
{
    for (size_t i = from; i < to; i++)
        CHECK_MSG(b[i] == CANARY, "byte %zu (%s) was written: 0x%02x", i, what, b[i]);
}

static void target_round(struct arg *a, struct iwt *t, int round, enum mode m, uint32_t *seed)
{
    struct iwt_qp q;
    struct iwt_req rq;
    PMDL mdl;
    NDK_MW *mw = NULL;
    const uint8_t byte = (uint8_t)(0x10 + round);
    bool polled = round % 2;
    struct target_cq tc = { .lock = PTHREAD_MUTEX_INITIALIZER };
    pthread_t th;
    static uint8_t snap[NPAGES * PAGE];

    uint8_t *map = mmap(NULL, (NPAGES + 2) * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    CHECK(mprotect(map, PAGE, PROT_NONE) == 0);
    CHECK(mprotect(map + (NPAGES + 1) * PAGE, PAGE, PROT_NONE) == 0);
    uint8_t *pages = map + PAGE, *r = pages + ROFF;
    memset(pages, CANARY, NPAGES * PAGE);

    iwt_qp_create(t, &q, 8);
    tc.cq = q.cq;
    NDK_MR *mr = NULL;
    NDK_LOGICAL_ADDRESS_MAPPING *lam = NULL;
    ULONG fbo = 0;
    if (m == M_INVALIDATE_FRMR) {
        ULONG lamsize = 0;
        mdl = IoAllocateMdl(r, RLEN, FALSE, FALSE, NULL);
        CHECK(mdl);
        CHECK_STATUS(t->ad->Dispatch->NdkBuildLAM(t->ad, mdl, RLEN, iwt_req_cb, &rq, NULL, &lamsize, &fbo),
                     STATUS_BUFFER_TOO_SMALL);
        CHECK((lam = calloc(1, lamsize)));
        iwt_req_init(&rq);
        CHECK_STATUS(iwt_req_wait(&rq, t->ad->Dispatch->NdkBuildLAM(t->ad, mdl, RLEN, iwt_req_cb, &rq, lam, &lamsize,
                                                                    &fbo), TMO), STATUS_SUCCESS);
        CHECK_STATUS(q.pd->Dispatch->NdkCreateMr(q.pd, TRUE, NULL, NULL, &mr), STATUS_SUCCESS);
        iwt_req_init(&rq);
        CHECK_STATUS(iwt_req_wait(&rq, mr->Dispatch->NdkInitializeFastRegisterMr(mr, lam->AdapterPageCount, TRUE,
                                                                                 iwt_req_cb, &rq), TMO),
                     STATUS_SUCCESS);
    } else {
        mr = iwt_mr_register(q.pd, r, RLEN,
                             m == M_INVALIDATE_MW ? NDK_MR_FLAG_ALLOW_LOCAL_WRITE : NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
                             &mdl);
    }
    int events = atomic_load(&iwt_connect_events);
    iwt_send(iwt_srv_tx(&a->ch), (uint32_t)round + 1);
    CHECK_MSG(iwt_wait_atomic(&iwt_connect_events, events + 1, TMO), "no connect event");
    NDK_CONNECTOR *c = atomic_load(&iwt_incoming);
    iwt_req_init(&rq);
    CHECK_STATUS(iwt_req_wait(&rq, c->Dispatch->NdkAccept(c, q.qp, 1, 1, NULL, 0, iwt_on_disconnect, NULL,
                                                         iwt_req_cb, &rq), TMO), STATUS_SUCCESS);
    uint8_t *target = r;
    uint32_t tlen = RLEN;
    UINT32 token = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
    if (m == M_INVALIDATE_MW) {
        CHECK_STATUS(q.pd->Dispatch->NdkCreateMw(q.pd, NULL, NULL, &mw), STATUS_SUCCESS);
        CHECK_STATUS(q.qp->Dispatch->NdkBind(q.qp, CTX_BIND, mr, mw, r + WOFF, WLEN, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
                     STATUS_SUCCESS);
        CHECK_STATUS(target_wait(&tc, CTX_BIND, false), STATUS_SUCCESS);
        target = r + WOFF;
        tlen = WLEN;
        token = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
    } else if (m == M_INVALIDATE_FRMR) {
        CHECK_STATUS(q.qp->Dispatch->NdkFastRegister(q.qp, CTX_FAST_REGISTER, mr, lam->AdapterPageCount,
                                                     lam->AdapterPageArray, fbo, RLEN, r,
                                                     NDK_OP_FLAG_ALLOW_LOCAL_WRITE | NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
                     STATUS_SUCCESS);
        CHECK_STATUS(target_wait(&tc, CTX_FAST_REGISTER, false), STATUS_SUCCESS);
        token = mr->Dispatch->NdkGetRemoteTokenFromMr(mr);
    }
    if (polled) {
        atomic_store(&tc.run, true);
        CHECK(pthread_create(&th, NULL, poller, &tc) == 0);
    }
    iwt_send(iwt_srv_tx(&a->ch), (uint32_t)(uintptr_t)target);
    iwt_send(iwt_srv_tx(&a->ch), (uint32_t)((uint64_t)(uintptr_t)target >> 32));
    iwt_send(iwt_srv_tx(&a->ch), tlen);
    iwt_send(iwt_srv_tx(&a->ch), token);
    iwt_send(iwt_srv_tx(&a->ch), byte);

    CHECK_EQ(iwt_recv(iwt_srv_rx(&a->ch), TMO), W_WRITING);
    wait_landed(target, tlen, byte);
    /* Mostly at once: the Writes that have just begun to land are being placed. */
    if (rnd(seed) % 4 == 0)
        usleep(rnd(seed) % 1000);
    switch (m) {
    case M_DEREG:
        iwt_req_init(&rq);
        CHECK_STATUS(iwt_req_wait(&rq, mr->Dispatch->NdkDeregisterMr(mr, iwt_req_cb, &rq), TMO), STATUS_SUCCESS);
        break;
    case M_CLOSE_MR:
        iwt_close_obj(mr, TMO);
        mr = NULL;
        break;
    case M_INVALIDATE_MW:
    case M_INVALIDATE_FRMR:
        CHECK_STATUS(q.qp->Dispatch->NdkInvalidate(q.qp, CTX_INVALIDATE, mw ? &mw->Header : &mr->Header, 0),
                     STATUS_SUCCESS);
        CHECK_STATUS(target_wait(&tc, CTX_INVALIDATE, polled), STATUS_SUCCESS);
        break;
    default:
        CHECK(0);
    }
    /* From here on nothing may change. */
    memcpy(snap, pages, sizeof snap);
    CHECK_MSG(iwt_recv(iwt_srv_rx(&a->ch), TMO) == W_STOPPED_BY_ERROR,
              "the writer's Writes kept succeeding after the %s", mode_name[m]);
    usleep(20 * 1000);
    if (polled) {
        atomic_store(&tc.run, false);
        pthread_join(th, NULL);
    }
    for (size_t i = 0; i < sizeof snap; i++)
        CHECK_MSG(pages[i] == snap[i], "%s, round %d%s: byte %zu changed after the revocation completed "
                  "(0x%02x -> 0x%02x)", mode_name[m], round, polled ? " (polled)" : "", i, snap[i], pages[i]);
    check_canary(pages, 0, ROFF, "before the registration");
    check_canary(pages, ROFF + RLEN, NPAGES * PAGE, "after the registration");
    if (m == M_INVALIDATE_MW) {
        check_canary(r, 0, WOFF, "before the window");
        check_canary(r, WOFF + WLEN, RLEN, "after the window");
    }
    size_t landed = 0;
    for (uint32_t i = 0; i < tlen; i++)
        landed += target[i] == byte;
    CHECK_MSG(landed > 0, "%s, round %d: no Write landed before the revocation", mode_name[m], round);

    drop_connector(c);
    if (mw)
        iwt_close_obj(mw, TMO);
    if (m == M_INVALIDATE_MW) {
        iwt_mr_release(mr, mdl, TMO);
    } else if (m == M_INVALIDATE_FRMR) {
        iwt_close_obj(mr, TMO);
        t->ad->Dispatch->NdkReleaseLAM(t->ad, lam);
        free(lam);
        IoFreeMdl(mdl);
    } else {
        if (mr)
            iwt_close_obj(mr, TMO);
        IoFreeMdl(mdl);
    }
    iwt_qp_destroy(&q);
    CHECK(munmap(map, (NPAGES + 2) * PAGE) == 0);
}

static enum mode g_mode;

static void body(int family)
{
    struct arg a = { .family = family };
    struct iwt t;
    NDK_LISTENER *l;
    SOCKADDR_INET la;
    ULONG len = sizeof la;
    uint32_t seed = 0x2545F491u ^ (uint32_t)family;

    atomic_store(&iwt_connect_events, 0);
    iwt_chan_init(&a.ch);
    pid_t pid = ndk_test_spawn(writer, &a);
    iwt_open(&t, family);
    la = iwt_addr(&t, 0);
    CHECK_STATUS(t.ad->Dispatch->NdkCreateListener(t.ad, iwt_on_connect, NULL, NULL, NULL, &l), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkListen(l, (PSOCKADDR)&la, iwt_addr_len(&la), iwt_req_cb, NULL), STATUS_SUCCESS);
    CHECK_STATUS(l->Dispatch->NdkGetLocalAddress(l, (PSOCKADDR)&la, &len), STATUS_SUCCESS);
    iwt_send(iwt_srv_tx(&a.ch), iwt_port(&la));
    for (int i = 0; i < ROUNDS; i++)
        target_round(&a, &t, i, g_mode, &seed);
    printf("  %s: %d rounds\n", mode_name[g_mode], ROUNDS);
    fflush(stdout);
    iwt_send(iwt_srv_tx(&a.ch), 0);
    ndk_test_wait_ok(pid, TMO, "the writer");
    iwt_close_obj(l, TMO);
    iwt_close(&t);
    iwt_chan_close(&a.ch);
}

int main(int argc, char **argv)
{
    static const char *const arg[M_NMODES] = { "deregister", "close", "invalidate", "invalidate-frmr" };

    for (g_mode = 0; g_mode < M_NMODES; g_mode++)
        if (argc == 2 && !strcmp(argv[1], arg[g_mode]))
            break;
    if (g_mode == M_NMODES) {
        fprintf(stderr, "usage: test_iw_mem_race deregister|close|invalidate|invalidate-frmr\n");
        return 2;
    }
    iwt_for_each_family(body);
    printf("PASS\n");
    return 0;
}
