/* filtest: helpers for the filter-layer tests: a counting in-process filter (every call per
 * function id, every callback per type, wrappers made and ended), and a connect / Send / Write /
 * Read exchange between two QPs of one adapter with every byte checked. */
#ifndef FILTEST_H
#define FILTEST_H

#include <stdatomic.h>

#include <ndk/filter.h>
#include "iwtest.h"

struct ft_count {
    atomic_int calls[NDK_FILTER_FN_COUNT];
    atomic_int cbs[16];                       /* by ndk_filter_cb_type */
    atomic_int created[NdkObjectTypeMax];
    atomic_int destroyed[NdkObjectTypeMax];
    atomic_int opens, closes;
    atomic_int bad;                           /* a hook saw something inconsistent */
};

/* The counting filter; its context is a struct ft_count. */
extern const ndk_filter_ops ft_count_ops;

/* Sets NDK_PROVIDER_PATH to the providers plus the test filters' directory, and NDK_FILTERS. */
void ft_env(const char *filters);
/* Reopens t's adapter with in-process filters (f[0] outermost) on top of the configured ones. */
void ft_reopen(struct iwt *t, const ndk_filter_inproc *f, ULONG n);
/* ... with the counting filter alone. */
void ft_reopen_counted(struct iwt *t, struct ft_count *count);
/* The exchange (connect, Send of 2 SGEs, Write, Read, 64 KiB each), every byte checked; all
 * objects closed at the end. */
void ft_exchange(struct iwt *t);

#endif
