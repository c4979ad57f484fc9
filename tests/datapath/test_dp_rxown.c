/* test_dp_rxown: the provider's sleeping lock (lock.h), as the RX engine's owner (dp->rx_owned,
 * datapath.h) uses it; qp->lock is the same lock.
 *   sleep  this thread owns the engine while three others must take it (dp_rx_own_wait, as the
 *          progress thread's reads and the stop do). Each must go to sleep, not spin or yield:
 *          the word must say IW_LOCK_WAITED and each waiter's task state must be S (sleeping) while
 *          the owner holds on; a waiter that yielded stays runnable (R) and never marks the word.
 *          Then the owner lets go, and every waiter must get the engine in turn: a release that
 *          wakes nobody, or a woken waiter that takes the word as HELD and so hides the others
 *          still asleep, leaves a thread asleep for good (the test's join times out).
 *   storm  four threads take and give back the engine 200,000 times each, by try (as a polling
 *          consumer) and by wait, and count under it with plain stores: the count must come out
 *          exact, and under TSan an acquisition that does not order the last owner's writes is
 *          a reported race.
 * Usage: test_dp_rxown sleep|storm */
#include "dptest.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WAITERS 3
#define STORM_THREADS 4
#define STORM_ROUNDS 200000

static struct iw_dp dp;
static uint64_t count;                      /* written only by the owner */

/* ---- sleep ---- */

static atomic_int tids[WAITERS];
static atomic_int taken;

static void *waiter(void *arg)
{
    int i = (int)(intptr_t)arg;

    atomic_store(&tids[i], (int)syscall(SYS_gettid));
    dp_rx_own_wait(&dp);
    count++;
    atomic_fetch_add(&taken, 1);
    dp_rx_own_release(&dp);
    return NULL;
}

/* The state letter of thread tid in /proc (R running or runnable, S sleeping), '?' if unread. */
static char task_state(int tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');      /* the name may hold spaces and parentheses */
    return p && p[1] == ' ' ? p[2] : '?';
}

static void run_sleep(void)
{
    pthread_t t[WAITERS];

    dp_rx_own_wait(&dp);
    CHECK_EQ(atomic_load(&dp.rx_owned.w), (unsigned)IW_LOCK_HELD);
    for (int i = 0; i < WAITERS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, waiter, (void *)(intptr_t)i), 0);
    /* Every waiter asleep on the word, which says so. */
    uint64_t end = ndk_test_now_ms() + 10000;
    for (;;) {
        int asleep = 0;
        for (int i = 0; i < WAITERS; i++) {
            int tid = atomic_load(&tids[i]);
            asleep += tid && task_state(tid) == 'S';
        }
        if (asleep == WAITERS && atomic_load(&dp.rx_owned.w) == IW_LOCK_WAITED)
            break;
        CHECK_MSG(ndk_test_now_ms() < end, "after 10 s %d of %d waiters asleep, the word %u (WAITED is %u)", asleep,
                  WAITERS, atomic_load(&dp.rx_owned.w), (unsigned)IW_LOCK_WAITED);
        usleep(1000);
    }
    CHECK_EQ(atomic_load(&taken), 0);
    dp_rx_own_release(&dp);
    for (int i = 0; i < WAITERS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(atomic_load(&taken), WAITERS);
    CHECK_EQ(count, (uint64_t)WAITERS);
    CHECK_EQ(atomic_load(&dp.rx_owned.w), (unsigned)IW_LOCK_FREE);
    CHECK(dp_rx_own_try(&dp));
    dp_rx_own_release(&dp);
    printf("sleep: %d waiters slept while the engine was owned, and each took it once it was let go\n", WAITERS);
}

/* ---- storm ---- */

static atomic_ulong tries_failed;

static void *stormer(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;

    for (int i = 0; i < STORM_ROUNDS; i++) {
        if (rand_r(&seed) & 1) {
            if (!dp_rx_own_try(&dp)) {
                atomic_fetch_add_explicit(&tries_failed, 1, memory_order_relaxed);
                dp_rx_own_wait(&dp);
            }
        } else {
            dp_rx_own_wait(&dp);
        }
        count++;
        dp_rx_own_release(&dp);
    }
    return NULL;
}

static void run_storm(void)
{
    pthread_t t[STORM_THREADS];

    for (int i = 0; i < STORM_THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, stormer, (void *)(uintptr_t)(i * 7919 + 1)), 0);
    for (int i = 0; i < STORM_THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(count, (uint64_t)STORM_THREADS * STORM_ROUNDS);
    CHECK_EQ(atomic_load(&dp.rx_owned.w), (unsigned)IW_LOCK_FREE);
    printf("storm: %d x %d acquisitions counted exactly (%lu tries found it owned)\n", STORM_THREADS, STORM_ROUNDS,
           (unsigned long)atomic_load(&tries_failed));
}

int main(int argc, char **argv)
{
    CHECK_MSG(argc == 2, "usage: test_dp_rxown sleep|storm");
    iw_lock_init(&dp.rx_owned);
    if (!strcmp(argv[1], "sleep"))
        run_sleep();
    else if (!strcmp(argv[1], "storm"))
        run_storm();
    else
        CHECK_MSG(0, "unknown mode %s", argv[1]);
    return 0;
}
