/* Shared helpers for the runtime tests: open a runtime on the test providers, collect log lines
 * and PnP events. */
#ifndef NDK_RTTEST_H
#define NDK_RTTEST_H
#include <ndk/runtime.h>

/* Directory holding ndk-test*.so, from the build tree. */
const char *rttest_provider_dir(void);

/* Log lines are kept (up to a bound) so tests can check what users are told. */
void rttest_log(void *ctx, int level, const char *line);
int rttest_log_contains(const char *needle);

/* PnP events are queued; rttest_wait_event waits up to timeout_ms for the next one of a type
 * (events of other types before it are dropped) and returns 1 with *out filled, or 0. */
void rttest_on_event(void *ctx, const ndk_rt_event *ev);
int rttest_wait_event(ndk_rt_event_type type, const char *ifname, int timeout_ms, ndk_rt_event *out);
#endif
