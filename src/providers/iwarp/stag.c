/* stag.c - the STag table: random indices and keys, slot reuse before growth (stag.h).
 * Talks to no other provider file: mem.c owns the table (in struct iw_device: its writers under
 * mem_lock, its lookups without) and post.c rekeys through mem.c. */
#include "stag.h"

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define IW_STAG_MAX_SLOTS (1u << IW_STAG_INDEX_BITS)

int iw_stag_random(void *buf, size_t n)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* job: pool and pos below */
    static uint8_t pool[256];
    static size_t pos = sizeof pool;
    uint8_t *out = buf;
    int err = 0;

    pthread_mutex_lock(&lock);
    while (n) {
        if (pos == sizeof pool) {
            size_t got = 0;
            while (got < sizeof pool) {
                ssize_t r = getrandom(pool + got, sizeof pool - got, 0);
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0) {
                    err = r < 0 ? -errno : -EIO;
                    goto out;
                }
                got += (size_t)r;
            }
            pos = 0;
        }
        size_t k = sizeof pool - pos < n ? sizeof pool - pos : n;
        memcpy(out, pool + pos, k);
        /* Used bytes are wiped so that a later leak of the pool reveals no issued token. */
        memset(pool + pos, 0, k);
        pos += k;
        out += k;
        n -= k;
    }
out:
    pthread_mutex_unlock(&lock);
    return err;
}

_Static_assert(IW_STAG_MIN_SLOTS == 64u && (64u << (IW_STAG_NSEG - 1)) == IW_STAG_MAX_SLOTS, "segment layout");

/* The segment holding idx (stag.h's layout). */
static uint32_t iw_stag_seg_of(uint32_t idx)
{
    return idx < 64u ? 0 : (uint32_t)(31 - __builtin_clz(idx)) - 5u;
}

/* The slot of idx (idx < cap, so its segment exists). */
static struct iw_obj *_Atomic *iw_stag_slot(const struct iw_stag_table *t, uint32_t idx)
{
    uint32_t k = iw_stag_seg_of(idx);
    uint32_t first = k ? 64u << (k - 1) : 0;
    struct iw_obj *_Atomic *seg = atomic_load_explicit(&t->seg[k], memory_order_acquire);

    return seg ? &seg[idx - first] : NULL;
}

/* Doubles the table (first size IW_STAG_MIN_SLOTS); new indices join the free set. The new
 * indices are exactly the next segment. */
static int iw_stag_grow(struct iw_stag_table *t)
{
    uint32_t ncap = t->cap ? t->cap * 2 : IW_STAG_MIN_SLOTS;

    if (ncap > IW_STAG_MAX_SLOTS)
        ncap = IW_STAG_MAX_SLOTS;
    if (ncap == t->cap)
        return -ENOSPC;
    uint32_t k = iw_stag_seg_of(t->cap);         /* cap is the new segment's first index */
    if (!atomic_load_explicit(&t->seg[k], memory_order_relaxed)) {
        struct iw_obj *_Atomic *seg = calloc(ncap - t->cap, sizeof *seg);
        if (!seg)
            return -ENOMEM;
        /* Release: the zeroed slots before a lookup finds the segment. */
        atomic_store_explicit(&t->seg[k], seg, memory_order_release);
    }
    uint8_t *key = realloc(t->key, ncap);
    if (!key)
        return -ENOMEM;
    t->key = key;
    uint32_t *fr = realloc(t->free, ncap * sizeof *fr);
    if (!fr)
        return -ENOMEM;
    t->free = fr;
    /* A slot's first key is as random as every later one. */
    if (iw_stag_random(key + t->cap, ncap - t->cap) < 0)
        return -EIO;
    for (uint32_t i = t->cap ? t->cap : 1; i < ncap; i++)
        fr[t->nfree++] = i;
    t->cap = ncap;
    return 0;
}

/* A key for idx other than its current one (so no stale token of the slot becomes valid). */
static int iw_stag_new_key(struct iw_stag_table *t, uint32_t idx)
{
    uint8_t k;

    do {
        if (iw_stag_random(&k, 1) < 0)
            return -EIO;
    } while (k == t->key[idx]);
    t->key[idx] = k;
    return 0;
}

int iw_stag_alloc(struct iw_stag_table *t, struct iw_obj *o, uint32_t *stag)
{
    /* Keep at least half of the slots free, so that the next index is a random pick among
     * many (a peer that saw one token learns nothing of the next); past the 24-bit limit the
     * free set just gets smaller. */
    if (t->nfree == 0 || t->nfree * 2 < t->cap) {
        int err = iw_stag_grow(t);
        if (err < 0 && (err != -ENOSPC || t->nfree == 0))
            return err;
    }
    uint32_t r;
    if (iw_stag_random(&r, sizeof r) < 0)
        return -EIO;
    uint32_t pick = (uint32_t)(((uint64_t)r * t->nfree) >> 32);
    uint32_t idx = t->free[pick];
    if (iw_stag_new_key(t, idx) < 0)
        return -EIO;
    t->free[pick] = t->free[--t->nfree];
    /* Release: what the caller set up in o before it published the token. */
    atomic_store_explicit(iw_stag_slot(t, idx), o, memory_order_release);
    *stag = idx << 8 | t->key[idx];
    return 0;
}

void iw_stag_free(struct iw_stag_table *t, uint32_t stag, struct iw_obj *o)
{
    uint32_t idx = stag >> 8;

    if (idx == 0 || idx >= t->cap || atomic_load_explicit(iw_stag_slot(t, idx), memory_order_relaxed) != o)
        return;
    atomic_store_explicit(iw_stag_slot(t, idx), NULL, memory_order_relaxed);
    t->free[t->nfree++] = idx;
}

uint32_t iw_stag_rekey(struct iw_stag_table *t, uint32_t stag)
{
    uint32_t idx = stag >> 8;

    if (idx == 0 || idx >= t->cap || !atomic_load_explicit(iw_stag_slot(t, idx), memory_order_relaxed) ||
        iw_stag_new_key(t, idx) < 0)
        return 0;
    return idx << 8 | t->key[idx];
}

struct iw_obj *iw_stag_find(const struct iw_stag_table *t, uint32_t stag)
{
    uint32_t idx = stag >> 8;
    struct iw_obj *_Atomic *slot;

    /* cap is the writers'; the segment's presence says the same without reading it. */
    if (!idx || !(slot = iw_stag_slot(t, idx)))
        return NULL;
    return atomic_load_explicit(slot, memory_order_acquire);
}

uint32_t iw_stag_live(const struct iw_stag_table *t)
{
    return t->cap ? t->cap - 1 - t->nfree : 0;
}

void iw_stag_table_destroy(struct iw_stag_table *t)
{
    for (uint32_t k = 0; k < IW_STAG_NSEG; k++)
        free((void *)atomic_load_explicit(&t->seg[k], memory_order_relaxed));
    free(t->key);
    free(t->free);
    memset(t, 0, sizeof *t);
}
