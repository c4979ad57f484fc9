/*
 * ndk_sync_time.h - the monotonic clock that every bounded wait of ndk_sync and its users is
 * measured on, and condition variables that wait on that clock (a wall-clock step must not
 * stretch or cut a timeout).
 */
#ifndef NDK_SYNC_TIME_H
#define NDK_SYNC_TIME_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC in ns. Any thread. */
uint64_t ndk_sync_time_now_ns(void);
/* Initialises c so that pthread_cond_timedwait takes CLOCK_MONOTONIC deadlines. */
void ndk_sync_time_cond_init(pthread_cond_t *c);
/* A deadline in ndk_sync_time_now_ns units as pthread_cond_timedwait takes it. */
struct timespec ndk_sync_time_ts(uint64_t deadline_ns);

#ifdef __cplusplus
}
#endif

#endif /* NDK_SYNC_TIME_H */
