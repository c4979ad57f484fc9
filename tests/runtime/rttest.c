#define _GNU_SOURCE
#include "rttest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* guards logs and events */
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static char logs[256][512];
static int nlogs;
static ndk_rt_event events[1024];
static int head, tail;

const char *rttest_provider_dir(void)
{
    static char dir[1024];
    const char *b = getenv("NDK_TEST_BINARY_DIR");
    snprintf(dir, sizeof dir, "%s/test-providers", b ? b : ".");
    return dir;
}

void rttest_log(void *ctx, int level, const char *line)
{
    (void)ctx;
    fprintf(stderr, "[log %d] %s\n", level, line);
    pthread_mutex_lock(&lock);
    if (nlogs < 256)
        snprintf(logs[nlogs++], sizeof logs[0], "%s", line);
    pthread_mutex_unlock(&lock);
}

int rttest_log_contains(const char *needle)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nlogs && !found; i++)
        found = strstr(logs[i], needle) != NULL;
    pthread_mutex_unlock(&lock);
    return found;
}

void rttest_on_event(void *ctx, const ndk_rt_event *ev)
{
    (void)ctx;
    fprintf(stderr, "[event] %s adapter %u %s %s\n", ndk_rt_event_name(ev->type), ev->adapter, ev->provider, ev->ifname);
    pthread_mutex_lock(&lock);
    if (tail - head < 1024)
        events[tail++ % 1024] = *ev;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

int rttest_wait_event(ndk_rt_event_type type, const char *ifname, int timeout_ms, ndk_rt_event *out)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&lock);
    for (;;) {
        while (head < tail) {
            ndk_rt_event ev = events[head++ % 1024];
            if (ev.type == type && (!ifname || strcmp(ifname, ev.ifname) == 0)) {
                if (out)
                    *out = ev;
                pthread_mutex_unlock(&lock);
                return 1;
            }
        }
        if (pthread_cond_timedwait(&cond, &lock, &deadline) != 0 && head == tail) {
            pthread_mutex_unlock(&lock);
            return 0;
        }
    }
}
