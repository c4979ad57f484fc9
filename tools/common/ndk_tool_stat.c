/* ndk_tool_stat.c - CPU time and percentiles (ndk_tool_stat.h). */
#include "ndk_tool_stat.h"

#include <stdlib.h>
#include <sys/resource.h>

uint64_t ndk_tool_stat_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
           (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}

static int tool_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void ndk_tool_stat_sort_u64(uint64_t *v, size_t n) { qsort(v, n, sizeof *v, tool_cmp_u64); }

uint64_t ndk_tool_stat_percentile(uint64_t *sorted, size_t n, double q)
{
    if (!n)
        return 0;
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}
