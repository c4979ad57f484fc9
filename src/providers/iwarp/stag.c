/* stag.c - the STag table: random indices and keys, slot reuse before growth (stag.h).
 * Talks to no other provider file: mem.c owns the table (in struct iw_device, under mem_lock)
 * and post.c rekeys through mem.c. */
#include "stag.h"

#include <errno.h>
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

/* Doubles the table (first size IW_STAG_MIN_SLOTS); new indices join the free set. */
static int iw_stag_grow(struct iw_stag_table *t)
{
    uint32_t ncap = t->cap ? t->cap * 2 : IW_STAG_MIN_SLOTS;

    if (ncap > IW_STAG_MAX_SLOTS)
        ncap = IW_STAG_MAX_SLOTS;
    if (ncap == t->cap)
        return -ENOSPC;
    struct iw_obj **obj = realloc(t->obj, ncap * sizeof *obj);
    if (!obj)
        return -ENOMEM;
    t->obj = obj;
    uint8_t *key = realloc(t->key, ncap);
    if (!key)
        return -ENOMEM;
    t->key = key;
    uint32_t *fr = realloc(t->free, ncap * sizeof *fr);
    if (!fr)
        return -ENOMEM;
    t->free = fr;
    memset(obj + t->cap, 0, (ncap - t->cap) * sizeof *obj);
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
    t->obj[idx] = o;
    *stag = idx << 8 | t->key[idx];
    return 0;
}

void iw_stag_free(struct iw_stag_table *t, uint32_t stag, struct iw_obj *o)
{
    uint32_t idx = stag >> 8;

    if (idx == 0 || idx >= t->cap || t->obj[idx] != o)
        return;
    t->obj[idx] = NULL;
    t->free[t->nfree++] = idx;
}

uint32_t iw_stag_rekey(struct iw_stag_table *t, uint32_t stag)
{
    uint32_t idx = stag >> 8;

    if (idx == 0 || idx >= t->cap || !t->obj[idx] || iw_stag_new_key(t, idx) < 0)
        return 0;
    return idx << 8 | t->key[idx];
}

struct iw_obj *iw_stag_find(const struct iw_stag_table *t, uint32_t stag)
{
    uint32_t idx = stag >> 8;

    return idx && idx < t->cap ? t->obj[idx] : NULL;
}

uint32_t iw_stag_live(const struct iw_stag_table *t)
{
    return t->cap ? t->cap - 1 - t->nfree : 0;
}

void iw_stag_table_destroy(struct iw_stag_table *t)
{
    free(t->obj);
    free(t->key);
    free(t->free);
    memset(t, 0, sizeof *t);
}
