/* ndktrace_stats.c - counters and latency samples by name, on glibc's search trees. */
#define _GNU_SOURCE
#include "ndktrace.h"

#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fprintf(stderr, "ndktrace: out of memory\n");
        exit(1);
    }
    return q;
}

void nt_samples_add(struct nt_samples *s, uint64_t v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = v;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t nt_samples_quantile(struct nt_samples *s, double q)
{
    if (!s->n)
        return 0;
    qsort(s->v, s->n, sizeof *s->v, cmp_u64);
    size_t i = (size_t)(q * (double)(s->n - 1) + 0.5);
    return s->v[i < s->n ? i : s->n - 1];
}

uint64_t nt_samples_max(const struct nt_samples *s)
{
    uint64_t m = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] > m)
            m = s->v[i];
    return m;
}

void nt_counts_add(struct nt_counts *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->name[i], name) == 0) {
            c->count[i]++;
            return;
        }
    }
    c->name = xrealloc(c->name, (c->n + 1) * sizeof *c->name);
    c->count = xrealloc(c->count, (c->n + 1) * sizeof *c->count);
    c->name[c->n] = strdup(name);
    c->count[c->n++] = 1;
}

static int cmp_stat(const void *a, const void *b)
{
    return strcmp(((const struct nt_stat *)a)->name, ((const struct nt_stat *)b)->name);
}

struct nt_stat *nt_stat_get(void **tree, const char *name)
{
    struct nt_stat key = { .name = (char *)name };
    struct nt_stat **found = tfind(&key, tree, cmp_stat);
    if (found)
        return *found;
    struct nt_stat *s = calloc(1, sizeof *s);
    if (!s || !(s->name = strdup(name))) {
        fprintf(stderr, "ndktrace: out of memory\n");
        exit(1);
    }
    tsearch(s, tree, cmp_stat);
    return s;
}

static void (*walk_fn)(struct nt_stat *, void *);
static void *walk_arg;

static void walker(const void *node, VISIT which, int depth)
{
    (void)depth;
    if (which == postorder || which == leaf)
        walk_fn(*(struct nt_stat *const *)node, walk_arg);
}

void nt_stat_walk(void *tree, void (*fn)(struct nt_stat *s, void *arg), void *arg)
{
    walk_fn = fn;
    walk_arg = arg;
    twalk(tree, walker);
}

static void stat_free(void *p)
{
    struct nt_stat *s = p;
    for (size_t i = 0; i < s->by_status.n; i++)
        free(s->by_status.name[i]);
    free(s->by_status.name);
    free(s->by_status.count);
    free(s->dur.v);
    free(s->name);
    free(s);
}

void nt_stat_free_all(void *tree)
{
    tdestroy(tree, stat_free);
}
