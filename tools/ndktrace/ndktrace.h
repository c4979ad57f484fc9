/* ndktrace: reads the trace filter's records (text key=value lines or JSON lines) and
 * summarises them: calls, completions, requests still outstanding, objects never closed, slow
 * callbacks. */
#ifndef NDKTRACE_H
#define NDKTRACE_H

#include <stddef.h>
#include <stdint.h>

#define NT_MAX_FIELDS 48

/* One record: its fields point into the line it was parsed from. */
struct nt_rec {
    int         nfields;
    const char *key[NT_MAX_FIELDS];
    const char *val[NT_MAX_FIELDS];
};

/* ndktrace_parse.c: splits a line in place; 0, or -1 when it is not a trace record. */
int nt_parse(char *line, struct nt_rec *rec);
const char *nt_get(const struct nt_rec *rec, const char *key);   /* NULL when absent */
uint64_t nt_get_u64(const struct nt_rec *rec, const char *key);  /* 0 when absent */

/* Latency samples of one kind. */
struct nt_samples {
    uint64_t *v;
    size_t    n, cap;
};
void nt_samples_add(struct nt_samples *s, uint64_t v);
/* The q-quantile (0..1) of the samples (sorts them). */
uint64_t nt_samples_quantile(struct nt_samples *s, double q);
uint64_t nt_samples_max(const struct nt_samples *s);

/* A counter by name (statuses of one call), kept small and sorted by insertion. */
struct nt_counts {
    char    **name;
    uint64_t *count;
    size_t    n;
};
void nt_counts_add(struct nt_counts *c, const char *name);

/* Per call (or completion op) statistics, found by name. */
struct nt_stat {
    char             *name;
    uint64_t          count;
    uint64_t          errors;
    struct nt_counts  by_status;
    struct nt_samples dur;
};
struct nt_stat *nt_stat_get(void **tree, const char *name);
/* Walks the stats in name order. */
void nt_stat_walk(void *tree, void (*fn)(struct nt_stat *s, void *arg), void *arg);
void nt_stat_free_all(void *tree);

#endif
