/* test_progress_timers: the progress engine's timer heap (progress.c) on a real progress
 * thread: thousands of timers with random deadlines fire once each, in deadline order, never
 * early; cancelled ones never fire; moved ones fire at their new deadline; arm / cancel report
 * idle and armed correctly; an arm from another thread wakes a progress thread that sleeps
 * without any deadline. */
#include "iwarp.h"
#include "testlib.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT 3000

struct tt {
    struct iw_timer t;
    uint64_t want;            /* deadline it should fire at (0: cancelled, must not fire) */
    atomic_int fired;
    uint64_t fired_at, fired_deadline;
    unsigned order;
};

static struct tt tts[NT + 1];
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned order_next;
static uint64_t last_deadline;
static atomic_int early, out_of_order;

static void fired(struct iw_timer *t, uint64_t now)
{
    struct tt *x = ndk_container_of(t, struct tt, t);

    pthread_mutex_lock(&order_lock);
    x->fired_at = now;
    x->fired_deadline = x->want;
    x->order = order_next++;
    if (x->want > now)
        atomic_fetch_add(&early, 1);
    if (x->want < last_deadline)
        atomic_fetch_add(&out_of_order, 1);
    last_deadline = x->want;
    pthread_mutex_unlock(&order_lock);
    atomic_fetch_add(&x->fired, 1);
}

int main(void)
{
    struct iw_device *dev = calloc(1, sizeof(*dev));
    unsigned seed = (unsigned)getpid();

    CHECK(dev);
    strcpy(dev->ifname, "timers");
    CHECK_EQ(iw_progress_start(dev), 0);
    for (int i = 0; i <= NT; i++)
        CHECK_EQ(iw_progress_timer_init(dev, &tts[i].t, fired), 0);
    CHECK(dev->timer_cap >= NT + 1);

    /* A progress thread with nothing to wait for sleeps without a timeout: an arm from this
     * thread must wake it. */
    usleep(50000);
    uint64_t t0 = iw_now_ms();
    tts[NT].want = t0 + 30;
    CHECK(iw_progress_timer_arm(dev, &tts[NT].t, tts[NT].want));
    while (!atomic_load(&tts[NT].fired) && iw_now_ms() < t0 + 5000)
        usleep(1000);
    CHECK_MSG(atomic_load(&tts[NT].fired) == 1, "a timer armed from another thread did not fire");
    CHECK_MSG(iw_now_ms() - t0 < 1000, "the progress thread woke %llu ms late",
              (unsigned long long)(iw_now_ms() - t0 - 30));
    pthread_mutex_lock(&order_lock);
    last_deadline = 0;
    order_next = 0;
    pthread_mutex_unlock(&order_lock);

    /* Many timers: a third cancelled, a third moved (earlier or later), all from this thread
     * while the progress thread fires the due ones. */
    uint64_t base = iw_now_ms() + 200;
    for (int i = 0; i < NT; i++) {
        tts[i].want = base + (uint64_t)(rand_r(&seed) % 600);
        CHECK(iw_progress_timer_arm(dev, &tts[i].t, tts[i].want));     /* was idle */
    }
    int cancelled = 0;
    for (int i = 0; i < NT; i++) {
        if (i % 3 == 0) {
            CHECK(iw_progress_timer_cancel(dev, &tts[i].t));          /* was armed */
            CHECK(!iw_progress_timer_cancel(dev, &tts[i].t));         /* now idle */
            tts[i].want = 0;
            cancelled++;
        } else if (i % 3 == 1) {
            uint64_t w = base + (uint64_t)(rand_r(&seed) % 600);
            pthread_mutex_lock(&order_lock);
            tts[i].want = w;
            pthread_mutex_unlock(&order_lock);
            CHECK(!iw_progress_timer_arm(dev, &tts[i].t, w));         /* moved, not new */
        }
    }
    uint64_t end = base + 600 + 5000;
    for (;;) {
        int done = 0;
        for (int i = 0; i < NT; i++)
            done += atomic_load(&tts[i].fired);
        if (done == NT - cancelled || iw_now_ms() > end)
            break;
        usleep(5000);
    }
    usleep(100000);
    pthread_mutex_lock(&order_lock);
    for (int i = 0; i < NT; i++) {
        int f = atomic_load(&tts[i].fired);
        if (i % 3 == 0)
            CHECK_MSG(f == 0, "cancelled timer %d fired", i);
        else
            CHECK_MSG(f == 1, "timer %d fired %d times", i, f);
    }
    CHECK_MSG(atomic_load(&early) == 0, "%d timers fired before their deadline", atomic_load(&early));
    CHECK_MSG(atomic_load(&out_of_order) == 0, "%d timers fired out of deadline order", atomic_load(&out_of_order));
    CHECK_EQ(order_next, NT - cancelled);
    pthread_mutex_unlock(&order_lock);
    CHECK_EQ(dev->timer_count, 0);

    for (int i = 0; i <= NT; i++)
        iw_progress_timer_fini(dev, &tts[i].t);
    CHECK_EQ(dev->timer_reserved, 0);
    iw_progress_stop(dev);
    free(dev);
    printf("test_progress_timers: OK\n");
    return 0;
}
