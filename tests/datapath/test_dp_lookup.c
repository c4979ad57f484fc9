/* test_dp_lookup: key lookups without dev->mem_lock and without object references (mem.c)
 * against the close that frees what they find. A lookup reads a slot of the STag table and then
 * looks at the object it found, under a QP's qp->lock (posts, the TX engine's picks), its
 * datapath's rx_owned (the RX engine) or tx_owned (the TX engine, which drops its uses there);
 * a closed MR waits on the device's retired list until the progress thread has seen each QP's
 * three free once (iw_qp_lookups_quiesce), and only then is freed.
 *   qp-lock, rx-owner, tx-owner: this thread plays a lookup that read the slot just before the
 *     close. It holds the lock (or the TX engine), the MR is closed (its slot emptied, its
 *     destroy queues the reclaim), and the harness thread, playing the progress thread, must
 *     stop in the walk: the MR stays on the list, readable, until the lock is let go; then it
 *     is freed. Without the walk (or, for tx-owner, without its wait for the TX engine) the MR
 *     is freed at once and the test fails (in every configuration; under ASan the read of the
 *     found object would be a use after free).
 *   close-held: a use counted by a lookup (an SGL of a request in flight) outlives the lookup's
 *     section: closing the MR must revoke its token at once but pend, the MR neither destroyed
 *     nor its completion called, until the use is dropped; then the close completes and the MR
 *     is freed. A close that does not hold the MR for its users completes at once and fails.
 *   storm: two threads look the MR's current token up as the engines do, holding qp->lock,
 *     while this thread deregisters it and registers it again as fast as it can, over two
 *     ranges in turn (a new token each time). A lookup that succeeds must see the registration
 *     of its token whole (its range's base and length), and never after that token's
 *     deregistration completed; a deregistration a lookup holds up completes when it lets go.
 *     TSan checks the sequence count's protocol.
 *   cache-storm: storm's two threads resolve SGLs over the current token as the posts and the RX
 *     engine do (iw_access_sgl_resolve), through the TX side's key cache under qp->lock and the
 *     RX side's under rx_owned, several times per token, so that most lookups take the cache.
 *     The same checks: a resolve that succeeds must never hold a token whose deregistration has
 *     completed (a cache that trusted a key whose seq moved would), and must have seen its
 *     registration whole.
 *   cache-close: resolves fill both sides' caches with an MR that is then closed; once the
 *     reclaim freed it, no cache may name it (iw_qp_lookups_quiesce empties them) and a resolve
 *     of its token fails. A cache left full would be read after the free (ASan's report; every
 *     configuration fails the look at the cache).
 *   cache-e2e: a Send from one MR into a receive in another fills both engines' caches with
 *     them; the sender's MR is deregistered; a Send of the same token must then complete with
 *     STATUS_ACCESS_VIOLATION, and nothing reach the receiver's buffer.
 * Usage: test_dp_lookup qp-lock|rx-owner|tx-owner|close-held|storm|cache-storm|cache-close|cache-e2e */
#include "dptest.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static struct dpt_env env;

static bool retired_empty(void)
{
    pthread_mutex_lock(&env.dev.mem_lock);
    bool empty = ndk_list_empty(&env.dev.mr_retired);
    pthread_mutex_unlock(&env.dev.mem_lock);
    return empty;
}

enum held { HELD_QP_LOCK, HELD_RX_OWNER, HELD_TX_OWNER };
static const char *const held_name[] = { "qp->lock", "rx_owned", "tx_owned" };

static void held_take(struct iw_qp *qp, enum held h)
{
    if (h == HELD_TX_OWNER)
        dp_tx_own_wait(qp->dp);
    else if (h == HELD_RX_OWNER)
        dp_rx_own_wait(qp->dp);
    else
        iw_lock_take(&qp->lock);
}

static void held_release(struct iw_qp *qp, enum held h)
{
    if (h == HELD_TX_OWNER)
        dp_tx_own_release(qp->dp);
    else if (h == HELD_RX_OWNER)
        dp_rx_own_release(qp->dp);
    else
        iw_lock_give(&qp->lock);
}

static void grace(enum held h)
{
    struct iw_qp *qp = env.s[0].qp;
    struct dpt_mr m;

    dpt_mr_reg(&env, &m, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    CHECK(retired_empty());

    /* The harness thread stops watching the (idle) connection: its polls take the QP's locks,
     * and one waiting for the lock held here would never reach the reclaim. */
    for (int i = 0; i < 2; i++)
        atomic_store(&env.s[i].live, false);
    held_take(qp, h);
    struct iw_obj *o = iw_stag_find(&env.dev.stags, m.token);
    CHECK_MSG(o != NULL, "the registered token's slot is empty");
    /* The close: the slot empties, the last reference goes, the destroy retires the MR. */
    NTSTATUS st = m.mr->Dispatch->NdkCloseMr(&m.mr->Header, NULL, NULL);
    CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    CHECK_MSG(iw_stag_find(&env.dev.stags, m.token) == NULL, "the closed MR's slot still gives it");

    /* The harness thread runs the close's finish and then the reclaim: the reclaim must stop in
     * the walk (holding qps_lock), waiting for the lock this lookup holds. A reclaim that does
     * not wait frees the MR without ever taking qps_lock. */
    uint64_t end = ndk_test_now_ms() + 20000;
    for (;;) {
        int r = pthread_mutex_trylock(&env.dev.qps_lock);
        if (r == EBUSY)
            break;
        CHECK_EQ(r, 0);
        pthread_mutex_unlock(&env.dev.qps_lock);
        CHECK_MSG(ndk_test_now_ms() < end, "the reclaim never waited for the lookup's %s", held_name[h]);
        usleep(1000);
    }
    usleep(100 * 1000);
    CHECK_MSG(!retired_empty(), "the MR was freed while a lookup held it (%s)", held_name[h]);
    CHECK_EQ(o->type, IW_OBJ_MR);                 /* its memory is still the MR's */
    held_release(qp, h);

    end = ndk_test_now_ms() + 5000;
    while (!retired_empty())
        CHECK_MSG(ndk_test_now_ms() < end, "the MR was never freed after the lookup let go");
    for (int i = 0; i < 2; i++)
        atomic_store(&env.s[i].live, true);
    IoFreeMdl(m.mdl);
    free(m.buf);
}

/* ---- close-held ---- */

static atomic_int closed;

static void close_cb(PVOID ctx)
{
    (void)ctx;
    atomic_fetch_add(&closed, 1);
}

static void close_held(void)
{
    struct iw_qp *qp = env.s[0].qp;
    struct iw_mem_view v;
    struct iw_obj *o;
    struct dpt_mr m;

    dpt_mr_reg(&env, &m, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    unsigned nmr = atomic_load(&env.dev.nmr);
    iw_lock_take(&qp->lock);                 /* as a post resolves its SGL */
    CHECK_EQ(iw_mem_get(&env.dev, m.token, &o, &v), 0);
    iw_lock_give(&qp->lock);               /* the use goes on, as the request's */

    NTSTATUS st = m.mr->Dispatch->NdkCloseMr(&m.mr->Header, close_cb, NULL);
    CHECK_MSG(st == STATUS_PENDING, "the close of an MR in use returned %#x", (unsigned)st);
    iw_lock_take(&qp->lock);
    struct iw_obj *o2;
    CHECK_MSG(iw_mem_get(&env.dev, m.token, &o2, NULL) == -ENOENT, "the closed MR's token still resolves");
    iw_lock_give(&qp->lock);
    usleep(200 * 1000);
    CHECK_MSG(atomic_load(&closed) == 0, "the close completed while the MR was in use");
    CHECK_MSG(atomic_load(&env.dev.nmr) == nmr && retired_empty(), "the MR was destroyed while in use");
    CHECK_EQ(o->type, IW_OBJ_MR);

    iw_lock_take(&qp->lock);
    iw_mem_put(o);
    iw_lock_give(&qp->lock);
    uint64_t end = ndk_test_now_ms() + 5000;
    while (atomic_load(&closed) == 0)
        CHECK_MSG(ndk_test_now_ms() < end, "the close never completed after the use ended");
    CHECK_EQ(atomic_load(&closed), 1);
    while (!retired_empty() || atomic_load(&env.dev.nmr) != nmr - 1)
        CHECK_MSG(ndk_test_now_ms() < end, "the closed MR was never freed");
    IoFreeMdl(m.mdl);
    free(m.buf);
}

/* ---- storm ---- */

/* Two registrations of the MR take turns, over different ranges of one buffer, so that a view
 * mixing them is seen. */
#define STORM_BUF 16384u
static const struct { size_t off, len; } storm_reg[2] = { { 0, 8192 }, { 4096, 2048 } };

static uint8_t *storm_buf;
static MDL *storm_mdl[2];
static NDK_MR *storm_mr;
static _Atomic uint64_t storm_cur;            /* the current token << 32 | its registration */
static _Atomic uint32_t storm_done;           /* the last token whose deregistration completed */
static atomic_bool storm_stop;
static atomic_ulong storm_found, storm_missed;
static atomic_int dereg_done;

static void dereg_cb(PVOID ctx, NTSTATUS st)
{
    CHECK_STATUS(st, STATUS_SUCCESS);
    atomic_store(&storm_done, (uint32_t)(uintptr_t)ctx);
    atomic_fetch_add(&dereg_done, 1);
}

static atomic_bool storm_cached;                /* cache-storm: resolve through the key caches */
static atomic_ulong storm_hits;                 /* resolves that found the token cached */

/* One resolve of [base, base + len) of tok through side i's key cache, as a post (thread 0: the
 * TX side's, qp->lock) or the RX engine (thread 1: the RX side's, rx_owned) makes it. */
static void storm_resolve(struct iw_qp *qp, int thread, uint32_t tok, int r)
{
    struct iw_mem_cache *kc = thread == 0 ? &qp->dp->tx.kc : &qp->dp->rx.kc;
    NDK_SGE sge = { .VirtualAddress = storm_buf + storm_reg[r].off,
                    .Length = (ULONG)storm_reg[r].len,
                    .MemoryRegionToken = tok };
    struct dp_sgl sgl;
    uint32_t bad;

    if (thread == 0)
        iw_lock_take(&qp->lock);
    else
        dp_rx_own_wait(qp->dp);
    bool cached = kc->obj && kc->stag == tok;
    if (iw_access_sgl_resolve(qp, kc, &sge, 1, DP_ACC_LOCAL_WRITE, &sgl, &bad) == 0) {
        CHECK_EQ(sgl.n, 1u);
        CHECK(sgl.e[0].mem && sgl.e[0].mem->type == IW_OBJ_MR);
        CHECK_MSG(kc->obj == sgl.e[0].mem && kc->stag == tok, "a resolve that succeeded left another key cached");
        CHECK_MSG(kc->v.base == (uint64_t)(uintptr_t)(storm_buf + storm_reg[r].off) && kc->v.length == storm_reg[r].len,
                  "token %#x of registration %d cached as base +%lld length %llu", tok, r,
                  (long long)(kc->v.base - (uint64_t)(uintptr_t)storm_buf), (unsigned long long)kc->v.length);
        CHECK_MSG(atomic_load(&storm_done) != tok, "a resolve holds token %#x after its deregistration completed%s", tok,
                  cached ? " (from the key cache)" : "");
        iw_access_sgl_release(&sgl);
        atomic_fetch_add(&storm_found, 1);
        if (cached)
            atomic_fetch_add(&storm_hits, 1);
    } else {
        atomic_fetch_add(&storm_missed, 1);
    }
    if (thread == 0)
        iw_lock_give(&qp->lock);
    else
        dp_rx_own_release(qp->dp);
}

static void *storm_lookups(void *arg)
{
    struct iw_qp *qp = env.s[atomic_load(&storm_cached) ? 0 : (intptr_t)arg].qp;

    while (!atomic_load(&storm_stop)) {
        if (atomic_load(&storm_cached)) {
            uint64_t cur = atomic_load(&storm_cur);
            for (int k = 0; k < 8; k++)
                storm_resolve(qp, (int)(intptr_t)arg, (uint32_t)(cur >> 32), (int)(cur & 1));
            continue;
        }
        struct iw_mem_view v;
        struct iw_obj *o;
        uint64_t cur = atomic_load(&storm_cur);
        uint32_t tok = (uint32_t)(cur >> 32);
        int r = (int)(cur & 1);
        iw_lock_take(&qp->lock);             /* as the TX engine looks keys up */
        if (iw_mem_get(&env.dev, tok, &o, &v) == 0) {
            CHECK(o->type == IW_OBJ_MR);
            CHECK_MSG(v.base == (uint64_t)(uintptr_t)(storm_buf + storm_reg[r].off) && v.length == storm_reg[r].len,
                      "token %#x of registration %d gave base +%lld length %llu", tok, r,
                      (long long)(v.base - (uint64_t)(uintptr_t)storm_buf), (unsigned long long)v.length);
            CHECK((v.rights & DP_ACC_REMOTE_WRITE) != 0);
            /* Held: the deregistration of tok cannot have completed. */
            CHECK_MSG(atomic_load(&storm_done) != tok, "a lookup holds token %#x after its deregistration completed", tok);
            iw_mem_put(o);
            atomic_fetch_add(&storm_found, 1);
        } else {
            atomic_fetch_add(&storm_missed, 1);
        }
        iw_lock_give(&qp->lock);
    }
    return NULL;
}

static void storm(void)
{
    const ULONG flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE;
    pthread_t t[2];
    int pending = 0, rounds = 0;

    CHECK(posix_memalign((void **)&storm_buf, 4096, STORM_BUF) == 0);
    for (int r = 0; r < 2; r++)
        CHECK((storm_mdl[r] = IoAllocateMdl(storm_buf + storm_reg[r].off, (ULONG)storm_reg[r].len, FALSE, FALSE, NULL)));
    CHECK_STATUS(env.pd->Dispatch->NdkCreateMr(env.pd, FALSE, NULL, NULL, &storm_mr), STATUS_SUCCESS);
    CHECK_STATUS(storm_mr->Dispatch->NdkRegisterMr(storm_mr, storm_mdl[0], storm_reg[0].len, flags, NULL, NULL),
                 STATUS_SUCCESS);
    atomic_store(&storm_cur, (uint64_t)storm_mr->Dispatch->NdkGetLocalTokenFromMr(storm_mr) << 32);
    for (intptr_t i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, storm_lookups, (void *)i) == 0);
    uint64_t end = ndk_test_now_ms() + 3000;
    while (ndk_test_now_ms() < end) {
        uint32_t tok = (uint32_t)(atomic_load(&storm_cur) >> 32);
        NTSTATUS st = storm_mr->Dispatch->NdkDeregisterMr(storm_mr, dereg_cb, (PVOID)(uintptr_t)tok);
        CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
        if (st == STATUS_PENDING) {
            /* A lookup holds the region: the deregistration ends when it lets go. */
            pending++;
            uint64_t wait_end = ndk_test_now_ms() + 5000;
            while (atomic_load(&dereg_done) < pending)
                CHECK_MSG(ndk_test_now_ms() < wait_end, "a pending deregistration never completed");
        } else {
            atomic_store(&storm_done, tok);
        }
        int r = (rounds + 1) & 1;
        CHECK_STATUS(storm_mr->Dispatch->NdkRegisterMr(storm_mr, storm_mdl[r], storm_reg[r].len, flags, NULL, NULL),
                     STATUS_SUCCESS);
        uint32_t ntok = storm_mr->Dispatch->NdkGetLocalTokenFromMr(storm_mr);
        CHECK_MSG(ntok != tok, "a registration got its last token back");
        atomic_store(&storm_cur, (uint64_t)ntok << 32 | (uint64_t)r);
        rounds++;
    }
    atomic_store(&storm_stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("storm: %d registrations, %d deregistrations pended, %lu lookups found the region (%lu from a key "
           "cache), %lu did not\n",
           rounds, pending, atomic_load(&storm_found), atomic_load(&storm_hits), atomic_load(&storm_missed));
    CHECK_MSG(atomic_load(&storm_found) > 0 && pending > 0, "the storm never overlapped");
    CHECK_MSG(!atomic_load(&storm_cached) || atomic_load(&storm_hits) > 0, "no resolve took the key cache");
    NTSTATUS st = storm_mr->Dispatch->NdkCloseMr(&storm_mr->Header, NULL, NULL);
    CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    uint64_t wait_end = ndk_test_now_ms() + 5000;
    while (!retired_empty() || atomic_load(&env.dev.nmr))
        CHECK_MSG(ndk_test_now_ms() < wait_end, "the closed MR was never freed");
    for (int r = 0; r < 2; r++)
        IoFreeMdl(storm_mdl[r]);
    free(storm_buf);
}

/* ---- cache-close, cache-e2e ---- */

static void cache_close(void)
{
    struct iw_qp *qp = env.s[0].qp;
    struct dpt_mr m;
    struct dp_sgl sgl;
    uint32_t bad;

    dpt_mr_reg(&env, &m, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    uint32_t tok = m.token;
    NDK_SGE sge = dpt_sge(&m, 0, 64);
    iw_lock_take(&qp->lock);                 /* as a post resolves its SGL */
    CHECK_EQ(iw_access_sgl_resolve(qp, &qp->dp->tx.kc, &sge, 1, 0, &sgl, &bad), 0);
    CHECK_MSG(qp->dp->tx.kc.obj == sgl.e[0].mem, "the resolve did not fill the key cache");
    iw_access_sgl_release(&sgl);
    iw_lock_give(&qp->lock);
    dp_rx_own_wait(qp->dp);         /* as the RX engine takes a receive */
    CHECK_EQ(iw_access_sgl_resolve(qp, &qp->dp->rx.kc, &sge, 1, DP_ACC_LOCAL_WRITE, &sgl, &bad), 0);
    CHECK_MSG(qp->dp->rx.kc.obj == sgl.e[0].mem, "the resolve did not fill the key cache");
    iw_access_sgl_release(&sgl);
    dp_rx_own_release(qp->dp);

    unsigned nmr = atomic_load(&env.dev.nmr);
    NTSTATUS st = m.mr->Dispatch->NdkCloseMr(&m.mr->Header, NULL, NULL);
    CHECK(st == STATUS_SUCCESS || st == STATUS_PENDING);
    uint64_t end = ndk_test_now_ms() + 5000;
    while (!retired_empty() || atomic_load(&env.dev.nmr) != nmr - 1)
        CHECK_MSG(ndk_test_now_ms() < end, "the closed MR was never freed");
    dp_rx_own_wait(qp->dp);
    CHECK_MSG(qp->dp->rx.kc.obj == NULL, "the RX side's key cache still names an MR that was freed");
    dp_rx_own_release(qp->dp);
    iw_lock_take(&qp->lock);
    CHECK_MSG(qp->dp->tx.kc.obj == NULL, "the TX side's key cache still names an MR that was freed");
    CHECK_MSG(iw_access_sgl_resolve(qp, &qp->dp->tx.kc, &sge, 1, 0, &sgl, &bad) == -EACCES,
              "token %#x of a closed MR resolved", tok);
    iw_lock_give(&qp->lock);
    IoFreeMdl(m.mdl);
    free(m.buf);
    printf("cache-close: the freed MR left no key cache naming it; its token fails\n");
}

static bool all_zero(const struct dpt_mr *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (m->p[i])
            return false;
    return true;
}

static void cache_e2e(void)
{
    struct dpt_mr a, r;
    NDK_RESULT_EX res;

    dpt_mr_reg(&env, &a, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    dpt_mr_reg(&env, &r, 4096, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE rs = dpt_sge(&r, 0, 256), ss = dpt_sge(&a, 0, 64);
    dpt_fill(a.p, 64, 7);
    CHECK_STATUS(iw_post_receive(env.s[1].ndk, (void *)0xB1, &rs, 1), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_send(env.s[0].ndk, (void *)0xA1, &ss, 1, 0), STATUS_SUCCESS);
    dpt_expect(&env, 0, NdkOperationTypeSend, (void *)0xA1, STATUS_SUCCESS, 0);
    dpt_expect(&env, 1, NdkOperationTypeReceive, (void *)0xB1, STATUS_SUCCESS, 64);
    CHECK(dpt_check(r.p, 64, 7));
    struct iw_obj *ao = iw_stag_find(&env.dev.stags, a.token), *ro = iw_stag_find(&env.dev.stags, r.token);
    iw_lock_take(&env.s[0].qp->lock);
    CHECK_MSG(env.s[0].qp->dp->tx.kc.obj == ao, "the Send's post did not fill the TX side's key cache");
    iw_lock_give(&env.s[0].qp->lock);
    dp_rx_own_wait(env.s[1].qp->dp);
    CHECK_MSG(env.s[1].qp->dp->rx.kc.obj == ro, "the receive's take did not fill the RX side's key cache");
    dp_rx_own_release(env.s[1].qp->dp);

    memset(r.p, 0, r.len);
    CHECK_STATUS(a.mr->Dispatch->NdkDeregisterMr(a.mr, NULL, NULL), STATUS_SUCCESS);
    CHECK_STATUS(iw_post_receive(env.s[1].ndk, (void *)0xB2, &rs, 1), STATUS_SUCCESS);
    NTSTATUS st = iw_post_send(env.s[0].ndk, (void *)0xA2, &ss, 1, 0);
    if (st == STATUS_SUCCESS) {
        dpt_poll(&env, 0, &res, 20000);
        CHECK(res.RequestContext == (void *)0xA2);
        CHECK_MSG(res.Status == STATUS_ACCESS_VIOLATION, "a Send from a deregistered MR completed with %#x",
                  (unsigned)res.Status);
    } else {
        CHECK_STATUS(st, STATUS_ACCESS_VIOLATION);
    }
    /* The receive is flushed with the connection (or waits): it never gets the bytes. */
    usleep(100 * 1000);
    CHECK_MSG(all_zero(&r, r.len), "bytes of a Send from a deregistered MR reached the receiver");
    CHECK(dpt_mr_guard_ok(&r));
    atomic_store(&env.s[0].failed, -ECONNRESET);
    dpt_wait_lost(&env, 0, 5000);
    dpt_disconnect(&env);
    dpt_mr_free(&env, &a);
    dpt_mr_free(&env, &r);
    printf("cache-e2e: a Send of a deregistered MR's token from a full key cache failed, nothing placed\n");
}

int main(int argc, char **argv)
{
    struct dpt_conn_opts o;

    CHECK_MSG(argc == 2, "usage: test_dp_lookup qp-lock|rx-owner|tx-owner|close-held|storm|cache-storm|cache-close|cache-e2e");
    dpt_env_init(&env);
    dpt_conn_opts_default(&o);
    dpt_connect(&env, &o);
    if (!strcmp(argv[1], "qp-lock"))
        grace(HELD_QP_LOCK);
    else if (!strcmp(argv[1], "rx-owner"))
        grace(HELD_RX_OWNER);
    else if (!strcmp(argv[1], "tx-owner"))
        grace(HELD_TX_OWNER);
    else if (!strcmp(argv[1], "close-held"))
        close_held();
    else if (!strcmp(argv[1], "storm"))
        storm();
    else if (!strcmp(argv[1], "cache-storm"))
        atomic_store(&storm_cached, true), storm();
    else if (!strcmp(argv[1], "cache-close"))
        cache_close();
    else if (!strcmp(argv[1], "cache-e2e"))
        cache_e2e();                               /* disconnects: the connection dies */
    else
        CHECK_MSG(0, "unknown mode %s", argv[1]);
    if (strcmp(argv[1], "cache-e2e"))
        dpt_disconnect(&env);
    dpt_env_fini(&env);
    printf("test_dp_lookup %s: OK\n", argv[1]);
    return 0;
}
