/* The tools' percentiles (ndk_tool_stat_percentiles) against a sort: random samples, runs of
 * one value, sorted, reversed and tiny inputs, every fraction including the minimum and maximum,
 * and fractions out of order; the samples stay a permutation of what went in. */
#include "ndk_tool_stat.h"
#include "testlib.h"

#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)                   /* xorshift64: repeatable samples */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

enum shape { RANDOM, FEW_VALUES, SORTED, REVERSED, ALL_EQUAL, SHAPES };

static void check_one(size_t n, enum shape sh, const double *q, size_t nq)
{
    uint64_t *v = malloc((n ? n : 1) * sizeof *v), *ref = malloc((n ? n : 1) * sizeof *ref), out[8];
    CHECK(v && ref && nq <= 8);
    for (size_t i = 0; i < n; i++) {
        switch (sh) {
        case RANDOM: v[i] = next() % 1000000; break;
        case FEW_VALUES: v[i] = 1000 + next() % 3; break;
        case SORTED: v[i] = i * 7; break;
        case REVERSED: v[i] = (n - i) * 7; break;
        default: v[i] = 42; break;
        }
    }
    memcpy(ref, v, n * sizeof *v);
    qsort(ref, n, sizeof *ref, cmp_u64);
    ndk_tool_stat_percentiles(v, n, q, nq, out);
    for (size_t p = 0; p < nq; p++) {
        uint64_t want = 0;
        if (n) {
            size_t k = (size_t)(q[p] * (double)(n - 1) + 0.5);
            want = ref[k < n ? k : n - 1];
        }
        CHECK_MSG(out[p] == want, "n %zu shape %d q %g: got %llu, want %llu", n, (int)sh, q[p],
                  (unsigned long long)out[p], (unsigned long long)want);
    }
    qsort(v, n, sizeof *v, cmp_u64);         /* a permutation of the samples: nothing lost */
    CHECK(n == 0 || memcmp(v, ref, n * sizeof *v) == 0);
    free(v);
    free(ref);
}

int main(void)
{
    static const double tools[] = { 0, 0.5, 0.99, 0.999, 1 };   /* what ndkperf asks */
    static const double unordered[] = { 0.99, 0.1, 1, 0, 0.5, 0.25 };
    for (int sh = 0; sh < SHAPES; sh++) {
        for (size_t n = 0; n <= 70; n++) {
            check_one(n, (enum shape)sh, tools, 5);
            check_one(n, (enum shape)sh, unordered, 6);
        }
        check_one(100000, (enum shape)sh, tools, 5);
        check_one(100001, (enum shape)sh, unordered, 6);
    }
    for (int i = 0; i < 200; i++)
        check_one(1 + next() % 5000, RANDOM, tools, 5);
    printf("percentiles match a sort for every shape and size\n");
    return 0;
}
