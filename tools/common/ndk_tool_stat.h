/*
 * ndk_tool_stat.h - what the performance tools measure besides the clock (ndk_sync_time.h):
 * the process's CPU time, and percentiles of latency samples.
 */
#ifndef NDK_TOOL_STAT_H
#define NDK_TOOL_STAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CPU time (user + system) of the whole process, providers' threads included, in µs. */
uint64_t ndk_tool_stat_cpu_us(void);
/* Sorts v ascending in place. */
void ndk_tool_stat_sort_u64(uint64_t *v, size_t n);
/* The value at fraction q (0..1) of n sorted samples; 0 for none. */
uint64_t ndk_tool_stat_percentile(uint64_t *sorted, size_t n, double q);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_STAT_H */
