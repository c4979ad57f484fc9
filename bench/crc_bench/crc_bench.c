/* crc_bench: CRC-32C throughput of every implementation this CPU runs, plain and copying, beside
 * memcpy, per buffer size (GB/s = 10^9 B/s, one thread). The source buffer is reused, so sizes
 * up to the cache sizes measure the compute, larger ones the memory path as well; the copying
 * form writes a separate destination of the same size, as the receive engine would.
 *
 *   crc_bench [-t SECONDS_PER_POINT] [--default] [--op crc|copy] [--cold] [--dst-offset N] [--json] [SIZE...]
 *
 * Defaults: 0.3 s per point, sizes 4k 64k 256k 1m 4m, every implementation and memcpy, both
 * operations. --default measures only the implementation iw_crc32c_update() and
 * iw_crc32c_copy() use (what bench/run.sh reports). Each point is the median of 5 timed runs,
 * timed in the thread's CPU time, so time taken by other processes on a shared core does not
 * count (their effect on the caches does). --cold walks every call over the next slice of a
 * 256 MiB pool (8x the largest L3 we run on), so source and destination come from DRAM, as for
 * a receive into a large region or a send from one. --dst-offset N (0..63) puts the copy's
 * destination N bytes past a cache line, as payload placed at a wire offset lands. Build: cc -O2 -I src/providers/iwarp
 * bench/crc_bench/crc_bench.c src/providers/iwarp/crc32c.c (bench/run.sh does this). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"

#define TRIALS 5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* What one measured call does: kind 0 = update, 1 = copy, 2 = memcpy. */
struct job {
    const struct iw_crc32c_impl *im;
    int kind;
    uint8_t *dst;
    const uint8_t *src;
    size_t len;
    size_t pool;           /* --cold: bytes of src and dst to walk through, else 0 */
    size_t at;             /* --cold: offset of the next slice */
};

#define COLD_POOL ((size_t)256 << 20)

static volatile uint32_t sink;

static void run_once(struct job *j)
{
    uint8_t *dst = j->dst + j->at;
    const uint8_t *src = j->src + j->at;

    if (j->pool) {
        j->at += j->len;
        if (j->at + j->len > j->pool)
            j->at = 0;
    }
    switch (j->kind) {
    case 0: sink = j->im->update(sink, src, j->len); break;
    case 1: sink = j->im->copy(dst, src, j->len, sink); break;
    default:
        memcpy(dst, src, j->len);
        __asm__ volatile("" ::"r"(dst) : "memory"); /* keep the copy */
        break;
    }
}

/* Median GB/s of TRIALS runs of about secs/TRIALS each. */
static double measure(struct job *j, double secs)
{
    double t[TRIALS];
    size_t reps = 1;
    double t0 = now_s();
    run_once(j);                               /* warm-up and calibration */
    double one = now_s() - t0;
    if (one > 0)
        reps = (size_t)(secs / TRIALS / one) + 1;
    for (int k = 0; k < TRIALS; k++) {
        t0 = now_s();
        for (size_t r = 0; r < reps; r++)
            run_once(j);
        double dt = now_s() - t0;
        t[k] = (double)j->len * (double)reps / dt / 1e9;
    }
    qsort(t, TRIALS, sizeof t[0], cmp_double);
    return t[TRIALS / 2];
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'k' || *end == 'K') v <<= 10, end++;
    else if (*end == 'm' || *end == 'M') v <<= 20, end++;
    if (*end || v == 0 || v > (1ull << 30)) {
        fprintf(stderr, "crc_bench: bad size %s\n", s);
        exit(2);
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    double secs = 0.3;
    int json = 0, only_default = 0, cold = 0, ops = 3; /* bit 0: crc, bit 1: copy */
    size_t doff = 0;
    size_t sizes[32], nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc)
            secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--cold"))
            cold = 1;
        else if (!strcmp(argv[i], "--dst-offset") && i + 1 < argc && (doff = strtoul(argv[i + 1], NULL, 10)) < 64)
            i++;
        else if (!strcmp(argv[i], "--default"))
            only_default = 1;
        else if (!strcmp(argv[i], "--op") && i + 1 < argc && !strcmp(argv[i + 1], "crc"))
            ops = 1, i++;
        else if (!strcmp(argv[i], "--op") && i + 1 < argc && !strcmp(argv[i + 1], "copy"))
            ops = 2, i++;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: crc_bench [-t SECONDS_PER_POINT] [--default] [--op crc|copy] [--cold] [--dst-offset N] [--json] [SIZE...]\n");
            return 2;
        } else if (nsizes < 32)
            sizes[nsizes++] = parse_size(argv[i]);
        else {
            fprintf(stderr, "crc_bench: at most 32 sizes\n");
            return 2;
        }
    }
    if (!nsizes) {
        static const size_t def[] = { 4096, 65536, 262144, 1048576, 4194304 };
        memcpy(sizes, def, sizeof def);
        nsizes = sizeof def / sizeof def[0];
    }
    size_t max = 0;
    for (size_t i = 0; i < nsizes; i++)
        if (sizes[i] > max)
            max = sizes[i];
    if (cold && max < COLD_POOL)
        max = COLD_POOL;
    uint8_t *src = aligned_alloc(64, max + 64), *dst = aligned_alloc(64, max + 64);
    if (!src || !dst)
        return 1;
    for (size_t i = 0; i < max; i++)
        src[i] = (uint8_t)(i * 2654435761u >> 13);
    memset(dst, 0, max);

    const struct iw_crc32c_impl *impls;
    size_t n = iw_crc32c_impls(&impls);
    if (json)
        printf("{\"default\": \"%s\", \"cache\": \"%s\", \"dst_offset\": %zu, \"results\": [", iw_crc32c_impl_name(),
               cold ? "cold" : "hot", doff);
    else
        printf("CRC-32C, GB/s (10^9 B/s), one thread, cache %s, destination offset %zu; iw_crc32c_update uses %s\n"
               "%-22s %-7s", cold ? "cold (DRAM)" : "hot (buffer reused)", doff, iw_crc32c_impl_name(), "implementation", "op");
    if (!json) {
        for (size_t s = 0; s < nsizes; s++)
            printf(" %10zu", sizes[s]);
        printf("\n");
    }
    int first = 1;
    for (size_t k = only_default ? n - 1 : 0; k < n + !only_default; k++) {
        for (int kind = 0; kind < 2; kind++) {
            if ((k == n && kind == 1) || (k < n && !(ops & (1 << kind))))
                continue;
            const char *name = k < n ? impls[k].name : "memcpy";
            const char *op = k == n ? "copy" : kind ? "copy" : "crc";
            if (!json)
                printf("%-22s %-7s", name, op);
            for (size_t s = 0; s < nsizes; s++) {
                struct job j = { k < n ? &impls[k] : NULL, k < n ? kind : 2, dst + doff, src, sizes[s], cold ? max : 0, 0 };
                double g = measure(&j, secs);
                if (json)
                    printf("%s\n  {\"impl\": \"%s\", \"op\": \"%s\", \"size\": %zu, \"gbytes_per_s\": %.3f}",
                           first ? "" : ",", name, op, sizes[s], g);
                else
                    printf(" %10.2f", g);
                fflush(stdout);
                first = 0;
            }
            if (!json)
                printf("\n");
        }
    }
    if (json)
        printf("\n]}\n");
    free(src);
    free(dst);
    return 0;
}
