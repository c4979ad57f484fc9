/* test_dp_cq: the completion ring of cq.c, whose polls take no lock (one consumer at a time,
 * §5.4) while producers push under cq->lock.
 *   ring        order and overrun across many wrap-arounds, polls of every size;
 *   resize      a resize with the entries wrapped keeps them in order, refuses to shrink below them;
 *   rule2       §5.7 rule 2 as the provider has always kept it: completions taken before the
 *               ring was last found empty do not satisfy a later arm, ones still queued do;
 *   concurrent  two producer threads, a consumer taking random batches and a thread resizing:
 *               every completion arrives once, each producer's in order;
 *   misuse      the same with two consumers polling at once (a consumer breaking §5.4): still
 *               every completion once;
 *   mpsc        four producers pushing at the same moment (pushes take no lock), a consumer and
 *               a resizing thread: every completion once, each producer's in order;
 *   wakeup      producers pushing in bursts while the consumer drains the ring, arms it (ANY or
 *               SOLICITED) and waits for the notification: none may be lost, however an arm and
 *               a push interleave, and none comes twice (one per arming);
 *   overrun     four producers pushing into an armed ring nobody takes from: exactly depth pushes
 *               succeed (each producer's in order), every later one fails, none hangs, the arm
 *               hears STATUS_BUFFER_OVERFLOW, and a resize afterwards keeps the entries.
 * Usage: test_dp_cq ring|resize|rule2|concurrent|misuse|mpsc|wakeup|overrun */
#include "dptest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct dpt_env env;
static atomic_int notifies;
static _Atomic NTSTATUS last_status;
static atomic_int arm_calls;      /* the wakeup consumer's NdkArmCq calls, counted before each */
static atomic_bool count_arms;

static void on_notify(PVOID ctx, NTSTATUS st)
{
    (void)ctx;
    atomic_store(&last_status, st);
    int n = atomic_fetch_add(&notifies, 1) + 1;
    /* One notification per arming at most (§5.7): never more than the arms made so far. */
    if (atomic_load(&count_arms))
        CHECK_MSG(n <= atomic_load(&arm_calls), "notification %d after only %d arms", n, atomic_load(&arm_calls));
}

static NDK_CQ *cq_new(ULONG depth)
{
    NDK_CQ *c = NULL;

    CHECK_STATUS(iw_create_cq(&env.ad.base.ndk, depth, on_notify, NULL, NULL, NULL, NULL, &c), STATUS_SUCCESS);
    return c;
}

static void cq_close(NDK_CQ *c)
{
    CHECK_STATUS(c->Dispatch->NdkCloseCq(&c->Header, NULL, NULL), STATUS_SUCCESS);
}

/* Pushes one completion of status st whose context is seq (and whose byte count names the
 * producer). */
static int push_status(NDK_CQ *c, uint64_t seq, ULONG who, bool solicited, NTSTATUS st)
{
    NDK_RESULT_EX r;

    memset(&r, 0, sizeof r);
    r.Status = st;
    r.RequestContext = (PVOID)(uintptr_t)seq;
    r.BytesTransferred = who;
    r.Type = NdkOperationTypeReceive;
    return iw_cq_push(to_iw_cq(c), &r, solicited);
}

static int push(NDK_CQ *c, uint64_t seq, ULONG who, bool solicited)
{
    return push_status(c, seq, who, solicited, STATUS_SUCCESS);
}

/* A thread resizing a CQ among depths of 32 and more until stop; may_refuse: a resize below the
 * entries queued may be refused (§8.31), else every one must go through. */
struct resizer {
    NDK_CQ *c;
    atomic_bool *stop;
    bool may_refuse;
    useconds_t pause_us;
};

static void *resize_loop(void *arg)
{
    struct resizer *z = arg;
    ULONG depths[] = { 32, 64, 33, 128, 40 };
    unsigned i = 0, ok = 0;

    while (!atomic_load(z->stop)) {
        NTSTATUS st = z->c->Dispatch->NdkResizeCq(z->c, depths[i++ % 5], NULL, NULL);
        CHECK_MSG(st == STATUS_SUCCESS || (z->may_refuse && st == STATUS_INVALID_PARAMETER), "resize: 0x%08x",
                  (unsigned)st);
        ok += st == STATUS_SUCCESS;
        usleep(z->pause_us);
    }
    CHECK_MSG(ok > 10, "only %u resizes went through", ok);
    return NULL;
}

static ULONG pop(NDK_CQ *c, NDK_RESULT_EX *r, ULONG n)
{
    return c->Dispatch->NdkGetCqResultsEx(c, r, n);
}

/* Waits up to 2 s for the notification count to reach want, then 50 ms more for any extra. */
static void expect_notifies(int want, const char *why)
{
    uint64_t end = ndk_test_now_ms() + 2000;

    while (atomic_load(&notifies) < want && ndk_test_now_ms() < end)
        usleep(1000);
    usleep(50000);
    CHECK_MSG(atomic_load(&notifies) == want, "%d notifications, expected %d: %s", atomic_load(&notifies), want, why);
}

static void test_ring(void)
{
    NDK_CQ *c = cq_new(8);
    NDK_RESULT_EX r[16];
    uint64_t next_push = 1, next_pop = 1;

    srand(env.seed);
    for (int round = 0; round < 20000; round++) {
        uint64_t queued = next_push - next_pop;
        unsigned k = (unsigned)rand() % 9;
        for (unsigned i = 0; i < k && queued < 8; i++, queued++)
            CHECK_EQ(push(c, next_push++, 0, false), 0);
        ULONG want = (ULONG)(rand() % 10);
        ULONG got = pop(c, r, want);
        CHECK_EQ(got, want < queued ? want : (ULONG)queued);
        for (ULONG i = 0; i < got; i++)
            CHECK_EQ((uint64_t)(uintptr_t)r[i].RequestContext, next_pop++);
    }
    /* A full ring refuses the next completion and latches the overrun (§3.4). */
    while (pop(c, r, 16))
        ;
    for (int i = 0; i < 8; i++)
        CHECK_EQ(push(c, 100 + (uint64_t)i, 0, false), 0);
    CHECK_EQ(push(c, 200, 0, false), -EOVERFLOW);
    CHECK_EQ(pop(c, r, 16), 8);
    CHECK_EQ(push(c, 201, 0, false), -EOVERFLOW);
    CHECK_EQ(pop(c, r, 16), 0);
    cq_close(c);
}

static void test_resize(void)
{
    NDK_CQ *c = cq_new(8);
    NDK_RESULT_EX r[16];

    /* head at 5: the six entries below wrap around the end of the ring. */
    for (int i = 0; i < 5; i++)
        CHECK_EQ(push(c, 1000 + (uint64_t)i, 0, false), 0);
    CHECK_EQ(pop(c, r, 5), 5);
    for (uint64_t i = 1; i <= 6; i++)
        CHECK_EQ(push(c, i, 0, false), 0);
    CHECK_STATUS(c->Dispatch->NdkResizeCq(c, 5, NULL, NULL), STATUS_INVALID_PARAMETER);
    CHECK_STATUS(c->Dispatch->NdkResizeCq(c, 16, NULL, NULL), STATUS_SUCCESS);
    for (uint64_t i = 7; i <= 16; i++)
        CHECK_EQ(push(c, i, 0, false), 0);
    CHECK_EQ(push(c, 17, 0, false), -EOVERFLOW);
    ULONG got = pop(c, r, 16);
    CHECK_EQ(got, 16);
    for (ULONG i = 0; i < got; i++)
        CHECK_EQ((uint64_t)(uintptr_t)r[i].RequestContext, (uint64_t)i + 1);
    cq_close(c);

    /* Shrinking to exactly the entries queued leaves a full ring that keeps its order. */
    c = cq_new(8);
    for (int i = 0; i < 6; i++)
        CHECK_EQ(push(c, 1000 + (uint64_t)i, 0, false), 0);
    CHECK_EQ(pop(c, r, 6), 6);
    for (uint64_t i = 1; i <= 4; i++)
        CHECK_EQ(push(c, i, 0, false), 0);
    CHECK_STATUS(c->Dispatch->NdkResizeCq(c, 4, NULL, NULL), STATUS_SUCCESS);
    CHECK_EQ(push(c, 5, 0, false), -EOVERFLOW);
    CHECK_EQ(pop(c, r, 16), 4);
    for (ULONG i = 0; i < 4; i++)
        CHECK_EQ((uint64_t)(uintptr_t)r[i].RequestContext, (uint64_t)i + 1);
    cq_close(c);
}

static void test_rule2(void)
{
    NDK_CQ *c = cq_new(16);
    NDK_RESULT_EX r[16];
    int n = 0;

    atomic_store(&notifies, 0);
    /* A solicited completion taken, the ring found empty, then an unsolicited one: a
     * SOLICITED arm has nothing new to report. */
    CHECK_EQ(push(c, 1, 0, true), 0);
    CHECK_EQ(pop(c, r, 16), 1);
    CHECK_EQ(push(c, 2, 0, false), 0);
    c->Dispatch->NdkArmCq(c, NDK_CQ_NOTIFY_SOLICITED);
    expect_notifies(n, "SOLICITED armed after the solicited completion was taken and the ring emptied");
    CHECK_EQ(push(c, 3, 0, true), 0);
    expect_notifies(++n, "SOLICITED armed, a solicited completion arrived");
    CHECK_EQ(pop(c, r, 16), 2);

    /* Taken but the ring not emptied: the solicited completion still counts (as it always has). */
    CHECK_EQ(push(c, 4, 0, true), 0);
    CHECK_EQ(push(c, 5, 0, false), 0);
    CHECK_EQ(pop(c, r, 1), 1);
    c->Dispatch->NdkArmCq(c, NDK_CQ_NOTIFY_SOLICITED);
    expect_notifies(++n, "SOLICITED armed, a solicited completion since the last notification, ring not emptied");
    CHECK_EQ(pop(c, r, 16), 1);

    /* ANY: an empty ring never satisfies an arm; a queued completion newer than the last
     * notification does at once; one older does not. */
    c->Dispatch->NdkArmCq(c, NDK_CQ_NOTIFY_ANY);
    expect_notifies(n, "ANY armed, ring empty");
    CHECK_EQ(push(c, 6, 0, false), 0);
    expect_notifies(++n, "ANY armed, a completion arrived");
    c->Dispatch->NdkArmCq(c, NDK_CQ_NOTIFY_ANY);
    expect_notifies(n, "ANY re-armed, the queued completion is the one already notified");
    CHECK_EQ(push(c, 7, 0, false), 0);
    expect_notifies(++n, "ANY armed, a second completion arrived");
    CHECK_EQ(push(c, 8, 0, false), 0);
    c->Dispatch->NdkArmCq(c, NDK_CQ_NOTIFY_ANY);
    expect_notifies(++n, "ANY re-armed with a completion newer than the last notification");
    CHECK_EQ(pop(c, r, 16), 3);
    CHECK_EQ(atomic_load(&last_status), STATUS_SUCCESS);
    cq_close(c);
}

#define CONC_PER_PRODUCER 200000u

struct conc {
    NDK_CQ *c;
    atomic_bool stop;
    atomic_uint taken;
    uint32_t next[2];              /* per producer: the next sequence a consumer must see */
    uint8_t *seen[2];              /* per producer: a bit per sequence taken */
    pthread_mutex_t check_lock;    /* job: next[] and seen[] (two consumers in the misuse case) */
    pthread_mutex_t room_lock;     /* job: the producers' look for room and their push, together */
    bool two_consumers;
};

struct producer {
    struct conc *k;
    ULONG who;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    struct iw_cq *cq = to_iw_cq(p->k->c);

    for (uint32_t s = 0; s < CONC_PER_PRODUCER; s++) {
        /* Never overrun: the latch would end the test. Both producers count against the
         * smallest depth a resize may leave. */
        while (atomic_load(&cq->pushes) - atomic_load(&cq->pops) >= 30)
            sched_yield();
        int err;
        /* Another producer may take the last room between the look and the push. */
        pthread_mutex_lock(&p->k->room_lock);
        while (atomic_load(&cq->pushes) - atomic_load(&cq->pops) >= 30)
            sched_yield();
        err = push(p->k->c, s, p->who, false);
        pthread_mutex_unlock(&p->k->room_lock);
        CHECK_EQ(err, 0);
    }
    return NULL;
}

static void *consume(void *arg)
{
    struct conc *k = arg;
    NDK_RESULT_EX r[40];
    unsigned seed = env.seed ^ (unsigned)(uintptr_t)pthread_self();

    while (atomic_load(&k->taken) < 2 * CONC_PER_PRODUCER) {
        ULONG got = pop(k->c, r, 1 + (ULONG)rand_r(&seed) % 40);
        if (!got) {
            sched_yield();
            continue;
        }
        if (k->two_consumers)
            pthread_mutex_lock(&k->check_lock);
        for (ULONG i = 0; i < got; i++) {
            ULONG who = r[i].BytesTransferred;
            uint32_t seq = (uint32_t)(uintptr_t)r[i].RequestContext;
            CHECK_MSG(who < 2 && seq < CONC_PER_PRODUCER, "a completion from nowhere (producer %lu, %u)",
                      (unsigned long)who, seq);
            CHECK_MSG(!(k->seen[who][seq / 8] & (1u << (seq % 8))), "producer %lu: %u taken twice",
                      (unsigned long)who, seq);
            k->seen[who][seq / 8] |= (uint8_t)(1u << (seq % 8));
            /* With two consumers each batch is in order, but two batches may be checked in
             * either order: then every one once is what is checked (the bits and the count). */
            if (!k->two_consumers)
                CHECK_MSG(seq == k->next[who], "producer %lu: sequence %u, expected %u", (unsigned long)who, seq,
                          k->next[who]);
            if (seq + 1 > k->next[who])
                k->next[who] = seq + 1;
        }
        if (k->two_consumers)
            pthread_mutex_unlock(&k->check_lock);
        atomic_fetch_add(&k->taken, got);
    }
    return NULL;
}

static void test_concurrent(bool two_consumers)
{
    struct conc k;
    struct producer p[2];
    pthread_t tp[2], tc[2], tr;
    NDK_RESULT_EX r[4];

    memset(&k, 0, sizeof k);
    k.c = cq_new(64);
    k.two_consumers = two_consumers;
    pthread_mutex_init(&k.check_lock, NULL);
    pthread_mutex_init(&k.room_lock, NULL);
    for (int i = 0; i < 2; i++)
        CHECK((k.seen[i] = calloc(CONC_PER_PRODUCER / 8 + 1, 1)) != NULL);
    for (int i = 0; i < 2; i++) {
        p[i] = (struct producer){ &k, (ULONG)i };
        CHECK(pthread_create(&tp[i], NULL, produce, &p[i]) == 0);
    }
    for (int i = 0; i < (two_consumers ? 2 : 1); i++)
        CHECK(pthread_create(&tc[i], NULL, consume, &k) == 0);
    struct resizer z = { k.c, &k.stop, true, 0 };   /* two producers of up to 30 against 32 */
    CHECK(pthread_create(&tr, NULL, resize_loop, &z) == 0);
    for (int i = 0; i < 2; i++)
        pthread_join(tp[i], NULL);
    for (int i = 0; i < (two_consumers ? 2 : 1); i++)
        pthread_join(tc[i], NULL);
    atomic_store(&k.stop, true);
    pthread_join(tr, NULL);
    CHECK_EQ(atomic_load(&k.taken), 2 * CONC_PER_PRODUCER);
    CHECK_EQ(k.next[0], CONC_PER_PRODUCER);
    CHECK_EQ(k.next[1], CONC_PER_PRODUCER);
    CHECK_EQ(pop(k.c, r, 4), 0);
    pthread_mutex_destroy(&k.check_lock);
    pthread_mutex_destroy(&k.room_lock);
    free(k.seen[0]);
    free(k.seen[1]);
    cq_close(k.c);
}

/* ---- pushes at the same moment ---- */

#define MP_PRODUCERS 4
#define MP_LIMIT 8u                /* a producer's completions not yet taken, at most */

struct mp {
    NDK_CQ *c;
    uint32_t per;                  /* completions per producer */
    bool wakeup;                   /* the consumer arms and waits when the ring is empty */
    atomic_bool stop;
    atomic_uint pushed[MP_PRODUCERS];
    atomic_uint taken[MP_PRODUCERS];
    atomic_uint total;
    atomic_uint waits;             /* arms that had to wait for a push's notification */
};

struct mp_producer {
    struct mp *k;
    ULONG who;
};

static void *mp_produce(void *arg)
{
    struct mp_producer *p = arg;
    struct mp *k = p->k;
    unsigned seed = env.seed * 31u + (unsigned)p->who;

    for (uint32_t s = 0; s < k->per; s++) {
        /* Never more than MP_LIMIT of ours queued: with four producers the ring (32 at its
         * smallest) cannot overrun, and no room lock keeps the pushes apart. */
        while (s - atomic_load(&k->taken[p->who]) >= MP_LIMIT)
            sched_yield();
        /* Solicited now and then, and always when the consumer might otherwise wait on a
         * SOLICITED arm for a completion we cannot push (our limit reached, or our last). */
        bool sol = rand_r(&seed) % 3 == 0 || s + 1 - atomic_load(&k->taken[p->who]) >= MP_LIMIT || s + 1 == k->per;
        NTSTATUS st = rand_r(&seed) % 16 ? STATUS_SUCCESS : STATUS_CANCELLED;
        CHECK_EQ(push_status(k->c, s, p->who, sol, st), 0);
        atomic_store(&k->pushed[p->who], s + 1);
        if (k->wakeup && rand_r(&seed) % 64 == 0)
            usleep(rand_r(&seed) % 200);          /* bursts: the consumer finds the ring empty */
    }
    return NULL;
}

/* The consumer: takes every completion, checks each producer's order, and in the wakeup mode
 * arms the drained ring and waits for the notification that must come. */
static void mp_consume(struct mp *k)
{
    NDK_RESULT_EX r[40];
    uint32_t next[MP_PRODUCERS] = { 0 };
    unsigned seed = env.seed;
    uint32_t want = k->per * MP_PRODUCERS;

    while (atomic_load(&k->total) < want) {
        ULONG got = pop(k->c, r, 1 + (ULONG)rand_r(&seed) % 40);
        for (ULONG i = 0; i < got; i++) {
            ULONG who = r[i].BytesTransferred;
            uint32_t seq = (uint32_t)(uintptr_t)r[i].RequestContext;
            CHECK_MSG(who < MP_PRODUCERS, "a completion from nowhere (producer %lu)", (unsigned long)who);
            CHECK_MSG(seq == next[who], "producer %lu: sequence %u, expected %u", (unsigned long)who, seq, next[who]);
            next[who]++;
            atomic_store(&k->taken[who], next[who]);
        }
        atomic_fetch_add(&k->total, got);
        if (got || !k->wakeup) {
            if (!got)
                sched_yield();
            continue;
        }
        if (atomic_load(&k->total) == want)
            break;
        /* Drained: arm and wait. Every producer has something left to push, or has pushed it
         * since our poll, and each pushes a solicited completion before it stops or blocks,
         * so either arm type must be notified. */
        int before = atomic_load(&notifies);
        atomic_fetch_add(&arm_calls, 1);
        k->c->Dispatch->NdkArmCq(k->c, rand_r(&seed) % 2 ? NDK_CQ_NOTIFY_ANY : NDK_CQ_NOTIFY_SOLICITED);
        uint64_t end = ndk_test_now_ms() + 10000;
        while (atomic_load(&notifies) == before) {
            CHECK_MSG(ndk_test_now_ms() < end,
                      "lost wake-up: armed on a drained ring, no notification in 10 s (%u of %u taken, "
                      "pushed %u %u %u %u)", atomic_load(&k->total), want, atomic_load(&k->pushed[0]),
                      atomic_load(&k->pushed[1]), atomic_load(&k->pushed[2]), atomic_load(&k->pushed[3]));
            sched_yield();
        }
        atomic_fetch_add(&k->waits, 1);
        /* Now and then stay unarmed while the producers go on: the arming was used up, so no
         * notification may come (on_notify counts them against the arms) however many push. */
        if (rand_r(&seed) % 16 == 0)
            usleep(3000);
    }
    for (int i = 0; i < MP_PRODUCERS; i++)
        CHECK_EQ(next[i], k->per);
}

static void test_mpsc(bool wakeup)
{
    struct mp k;
    struct mp_producer p[MP_PRODUCERS];
    pthread_t tp[MP_PRODUCERS], tr;
    NDK_RESULT_EX r[4];

    memset(&k, 0, sizeof k);
    k.c = cq_new(64);
    k.per = wakeup ? 20000 : 100000;
    k.wakeup = wakeup;
    atomic_store(&notifies, 0);
    atomic_store(&arm_calls, 0);
    atomic_store(&count_arms, wakeup);
    for (int i = 0; i < MP_PRODUCERS; i++) {
        p[i] = (struct mp_producer){ &k, (ULONG)i };
        CHECK(pthread_create(&tp[i], NULL, mp_produce, &p[i]) == 0);
    }
    struct resizer z = { k.c, &k.stop, false, 100 };   /* at most 32 queued: never refused */
    CHECK(pthread_create(&tr, NULL, resize_loop, &z) == 0);
    mp_consume(&k);
    for (int i = 0; i < MP_PRODUCERS; i++)
        pthread_join(tp[i], NULL);
    atomic_store(&k.stop, true);
    pthread_join(tr, NULL);
    CHECK_EQ(pop(k.c, r, 4), 0);
    CHECK_EQ(to_iw_cq(k.c)->error, 0);
    if (wakeup) {
        CHECK_MSG(atomic_load(&k.waits) > 100, "only %u arms waited: the interleavings were not tried",
                  atomic_load(&k.waits));
        /* Each arm waited for its notification: a second one for the same arming would show
         * here (or in on_notify) unless it merged into the first's callback. */
        usleep(50000);
        CHECK_MSG(atomic_load(&notifies) == atomic_load(&arm_calls), "%d notifications for %d arms",
                  atomic_load(&notifies), atomic_load(&arm_calls));
    }
    printf("cq %s: %u completions, %u arms waited for a notification\n", wakeup ? "wakeup" : "mpsc",
           atomic_load(&k.total), atomic_load(&k.waits));
    cq_close(k.c);
}

/* ---- an overrun with pushes at the same moment ---- */

#define OV_DEPTH 64u
#define OV_PER 2000u

struct ov_producer {
    NDK_CQ *c;
    ULONG who;
    uint32_t ok;                   /* pushes that succeeded: the first ok of this producer's */
};

static void *ov_produce(void *arg)
{
    struct ov_producer *p = arg;
    bool failed = false;

    for (uint32_t s = 0; s < OV_PER; s++) {
        int err = push(p->c, s, p->who, false);
        CHECK_MSG(err == 0 || err == -EOVERFLOW, "push: %d", err);
        /* A push that succeeded after one that failed would be a completion past the overrun. */
        CHECK_MSG(!(failed && err == 0), "producer %lu: push %u succeeded after a failed one", (unsigned long)p->who,
                  s);
        failed |= err != 0;
        if (!err)
            p->ok++;
    }
    return NULL;
}

static void test_overrun(void)
{
    NDK_CQ *c = cq_new(OV_DEPTH);
    struct ov_producer p[MP_PRODUCERS];
    pthread_t tp[MP_PRODUCERS];
    NDK_RESULT_EX r[OV_DEPTH + 1];
    uint32_t next[MP_PRODUCERS] = { 0 }, ok = 0;

    atomic_store(&notifies, 0);
    c->Dispatch->NdkArmCq(c, NDK_CQ_NOTIFY_ERRORS);
    for (int i = 0; i < MP_PRODUCERS; i++) {
        p[i] = (struct ov_producer){ c, (ULONG)i, 0 };
        CHECK(pthread_create(&tp[i], NULL, ov_produce, &p[i]) == 0);
    }
    for (int i = 0; i < MP_PRODUCERS; i++) {
        pthread_join(tp[i], NULL);
        ok += p[i].ok;
    }
    CHECK_MSG(ok == OV_DEPTH, "%u pushes succeeded into a ring of %u nobody took from", ok, OV_DEPTH);
    expect_notifies(1, "an ERRORS arm and an overrun");
    CHECK_EQ(atomic_load(&last_status), STATUS_BUFFER_OVERFLOW);
    CHECK_EQ(push(c, 0, 0, false), -EOVERFLOW);
    CHECK_STATUS(c->Dispatch->NdkResizeCq(c, 2 * OV_DEPTH, NULL, NULL), STATUS_SUCCESS);
    CHECK_EQ(push(c, 0, 0, false), -EOVERFLOW);
    CHECK_EQ(pop(c, r, OV_DEPTH + 1), OV_DEPTH);
    for (ULONG i = 0; i < OV_DEPTH; i++) {
        ULONG who = r[i].BytesTransferred;
        CHECK(who < MP_PRODUCERS);
        CHECK_EQ((uint32_t)(uintptr_t)r[i].RequestContext, next[who]);
        next[who]++;
    }
    for (int i = 0; i < MP_PRODUCERS; i++)
        CHECK_EQ(next[i], p[i].ok);
    cq_close(c);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";

    dpt_env_init(&env);
    if (!strcmp(mode, "ring"))
        test_ring();
    else if (!strcmp(mode, "resize"))
        test_resize();
    else if (!strcmp(mode, "rule2"))
        test_rule2();
    else if (!strcmp(mode, "concurrent"))
        test_concurrent(false);
    else if (!strcmp(mode, "misuse"))
        test_concurrent(true);
    else if (!strcmp(mode, "mpsc"))
        test_mpsc(false);
    else if (!strcmp(mode, "wakeup"))
        test_mpsc(true);
    else if (!strcmp(mode, "overrun"))
        test_overrun();
    else
        CHECK_MSG(false, "usage: test_dp_cq ring|resize|rule2|concurrent|misuse|mpsc|wakeup|overrun");
    dpt_env_fini(&env);
    printf("cq %s: ok\n", mode);
    return 0;
}
