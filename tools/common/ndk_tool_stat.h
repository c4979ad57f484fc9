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
/* The values at fractions q[0] <= q[1] <= ... <= q[nq - 1] (each 0..1; 0 is the minimum, 1 the
 * maximum) of v's n samples, into out[]; 0 each for no samples. Reorders v. Selection, not a
 * sort: the cost per sample does not grow with n, so a tool measured over n and 2n operations
 * does not count its own statistics as per-operation cost. */
void ndk_tool_stat_percentiles(uint64_t *v, size_t n, const double *q, size_t nq, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* NDK_TOOL_STAT_H */
