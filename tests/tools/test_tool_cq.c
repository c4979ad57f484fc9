/* test_tool_cq: the hand-off of a tool's CQ to its notification callback (ndk_tool_cq_run with
 * in_callback, tools/common/ndk_tool_cq.c), whose callback enters the handler without a lock,
 * against a fake CQ and a thread playing the provider: completions arrive at random, an armed CQ
 * notifies once per arming, notifications one at a time (NDKPI §5.7). Each round ends one of two
 * ways: the handler has had enough (it returns false inside the callback), or the connection
 * goes away at a random moment (ndk_tool_cq_kick) and the run's thread takes the CQ back while
 * notifications keep coming. Checked every round: the handler never runs twice at once, never
 * after the run returned, and sees every completion once, in order; the run returns (ctest's
 * timeout catches a hang, e.g. a reclaim waiting for a callback that already left).
 * Usage: test_tool_cq */
#include "ndk_tool_cq.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

#define ROUNDS 3000

struct fake {
    NDK_CQ cq;
    NDK_CQ_DISPATCH d;
    NDK_FN_CQ_NOTIFICATION_CALLBACK notify;
    void *notify_ctx;
    atomic_ullong produced, taken;    /* completions made / handed to the tool */
    atomic_int armed;
    atomic_bool stop;
};

static struct fake fk;
static NDK_ADAPTER fake_ad;
static NDK_ADAPTER_DISPATCH fake_ad_d;

/* The run's state, checked by the handler. */
static atomic_int inside;
static atomic_bool returned;
static atomic_ullong next_seq;        /* the completion the handler must see next */
static atomic_ullong handled;
static unsigned long long stop_after; /* the handler returns false once it has seen this many */

static ULONG fake_get(NDK_CQ *cq, NDK_RESULT res[], ULONG n)
{
    (void)cq;
    unsigned long long t = atomic_load(&fk.taken), p = atomic_load(&fk.produced);
    ULONG k = p - t < n ? (ULONG)(p - t) : n;
    for (ULONG i = 0; i < k; i++) {
        memset(&res[i], 0, sizeof res[i]);
        res[i].Status = STATUS_SUCCESS;
        res[i].RequestContext = (PVOID)(uintptr_t)(t + i);
    }
    atomic_store(&fk.taken, t + k);   /* one poller at a time: the tool's ownership rule */
    return k;
}

static VOID fake_arm(NDK_CQ *cq, ULONG type)
{
    (void)cq;
    (void)type;
    atomic_store(&fk.armed, 1);
}

static NTSTATUS fake_create_cq(NDK_ADAPTER *ad, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK cb, PVOID ctx,
                               GROUP_AFFINITY *aff, NDK_FN_CREATE_COMPLETION ccb, PVOID rctx, NDK_CQ **out)
{
    (void)ad;
    (void)depth;
    (void)aff;
    (void)ccb;
    (void)rctx;
    fk.notify = cb;
    fk.notify_ctx = ctx;
    *out = &fk.cq;
    return STATUS_SUCCESS;
}

/* The provider: completions at random; an armed CQ with completions notifies (one thread, so
 * never two notifications at once). */
static void *provider(void *arg)
{
    unsigned seed = 12345;
    (void)arg;
    while (!atomic_load(&fk.stop)) {
        if (rand_r(&seed) % 4 == 0)
            atomic_fetch_add(&fk.produced, 1 + (unsigned)rand_r(&seed) % 3);
        if (atomic_load(&fk.produced) != atomic_load(&fk.taken) && atomic_exchange(&fk.armed, 0))
            fk.notify(fk.notify_ctx, STATUS_SUCCESS);
        if (rand_r(&seed) % 64 == 0)
            sched_yield();
    }
    return NULL;
}

struct kick {
    ndk_tool_cq *c;
    unsigned delay;                   /* microseconds */
};

static void *kicker(void *arg)
{
    struct kick *x = arg;
    usleep(x->delay);
    ndk_tool_cq_kick(x->c, true);
    free(x);
    return NULL;
}

static bool handler(void *ctx, NDK_RESULT *res, ULONG n)
{
    (void)ctx;
    CHECK_MSG(atomic_exchange(&inside, 1) == 0, "the handler runs twice at once");
    CHECK_MSG(!atomic_load(&returned), "the handler runs after ndk_tool_cq_run returned");
    for (ULONG i = 0; i < n; i++) {
        unsigned long long seq = (uintptr_t)res[i].RequestContext;
        CHECK_MSG(seq == atomic_load(&next_seq), "completion %llu, expected %llu", seq, atomic_load(&next_seq));
        atomic_store(&next_seq, seq + 1);
    }
    unsigned long long h = atomic_fetch_add(&handled, n) + n;
    atomic_store(&inside, 0);
    return h < stop_after;
}

int main(void)
{
    ndk_tool_cq *c;
    pthread_t prov;
    unsigned seed = 777;
    unsigned by_handler = 0, by_kick = 0;

    fk.d.NdkGetCqResults = fake_get;
    fk.d.NdkArmCq = fake_arm;
    fk.cq.Dispatch = &fk.d;
    fake_ad_d.NdkCreateCq = fake_create_cq;
    fake_ad.Dispatch = &fake_ad_d;
    CHECK_STATUS(ndk_tool_cq_create(&fake_ad, 64, false, &c), STATUS_SUCCESS);
    CHECK(pthread_create(&prov, NULL, provider, NULL) == 0);

    for (int round = 0; round < ROUNDS; round++) {
        bool kick = rand_r(&seed) % 2;
        atomic_store(&returned, false);
        atomic_store(&handled, 0);
        stop_after = kick ? ~0ull : 1 + (unsigned)rand_r(&seed) % 50;
        __atomic_store_n(&c->disconnected, 0, __ATOMIC_RELEASE);
        if (kick) {
            /* The disconnect comes from another thread while the callback may be in the handler. */
            pthread_t k;
            unsigned delay = (unsigned)rand_r(&seed) % 300;
            struct kick *ka = malloc(sizeof *ka);
            CHECK(ka != NULL);
            *ka = (struct kick){ c, delay };
            CHECK(pthread_create(&k, NULL, kicker, ka) == 0);
            NTSTATUS st = ndk_tool_cq_run(c, true, 5000, handler, NULL, NULL);
            atomic_store(&returned, true);
            CHECK_STATUS(st, STATUS_CONNECTION_DISCONNECTED);
            pthread_join(k, NULL);
            by_kick++;
        } else {
            NTSTATUS st = ndk_tool_cq_run(c, true, 5000, handler, NULL, NULL);
            atomic_store(&returned, true);
            CHECK_STATUS(st, STATUS_SUCCESS);
            CHECK(atomic_load(&handled) >= stop_after);
            by_handler++;
        }
        /* The CQ is ours again: what the provider still makes, we take here. */
        NDK_RESULT r[64];
        ULONG n;
        while ((n = ndk_tool_cq_poll(c, r, 64)) != 0) {
            for (ULONG i = 0; i < n; i++) {
                CHECK_EQ((uintptr_t)r[i].RequestContext, atomic_load(&next_seq));
                atomic_store(&next_seq, atomic_load(&next_seq) + 1);
            }
        }
    }
    atomic_store(&fk.stop, true);
    pthread_join(prov, NULL);
    printf("tool_cq: %u runs ended by the handler, %u by a disconnect; %llu completions, each once, in order\n",
           by_handler, by_kick, (unsigned long long)atomic_load(&next_seq));
    return 0;
}
