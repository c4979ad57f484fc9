/* ndk_tool_stat.c - CPU time and percentiles (ndk_tool_stat.h). */
#include "ndk_tool_stat.h"

#include <sys/resource.h>

uint64_t ndk_tool_stat_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
           (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}

static void tool_swap_u64(uint64_t *v, ptrdiff_t a, ptrdiff_t b)
{
    uint64_t t = v[a];
    v[a] = v[b];
    v[b] = t;
}

/* Moves the k-th smallest of v[lo..hi] to v[k], with nothing larger before it in that range and
 * nothing smaller after it (Hoare's selection). The median of three as the pivot keeps sorted and
 * reversed samples linear; the partition stops on equal values, so runs of one value stay linear. */
static void tool_select_u64(uint64_t *v, ptrdiff_t lo, ptrdiff_t hi, ptrdiff_t k)
{
    while (lo < hi) {
        ptrdiff_t mid = lo + (hi - lo) / 2;
        if (v[mid] < v[lo])
            tool_swap_u64(v, mid, lo);
        if (v[hi] < v[lo])
            tool_swap_u64(v, hi, lo);
        if (v[hi] < v[mid])
            tool_swap_u64(v, hi, mid);
        uint64_t pivot = v[mid];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j)
                tool_swap_u64(v, i++, j--);
        }
        /* Now v[lo..j] <= pivot <= v[i..hi], and anything between equals the pivot. */
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

void ndk_tool_stat_percentiles(uint64_t *v, size_t n, const double *q, size_t nq, uint64_t *out)
{
    ptrdiff_t from = 0;                      /* everything before it is at most the last answer */
    for (size_t p = 0; p < nq; p++) {
        if (!n) {
            out[p] = 0;
            continue;
        }
        double f = q[p] < 0 ? 0 : q[p] > 1 ? 1 : q[p];
        ptrdiff_t k = (ptrdiff_t)(f * (double)(n - 1) + 0.5);
        if (k >= (ptrdiff_t)n)
            k = (ptrdiff_t)n - 1;
        if (k < from)                        /* not ascending: look at all of them again */
            from = 0;
        tool_select_u64(v, from, (ptrdiff_t)n - 1, k);
        from = k;
        out[p] = v[k];
    }
}
